# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Helpers of the shell benchmarks (sourced): a command's time and the median of a column of numbers.

# Run a command (its output dropped) and print its time in ms (of the clock the bench runs under).
ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))e-3
}

# The median of the numbers on standard input, one a line (of an even count, the middle two's mean).
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
