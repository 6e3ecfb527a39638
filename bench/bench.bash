# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Helpers of the shell benchmarks (sourced): a command's time and the median of a column of numbers.

# Run a command (its output dropped) and print its time in ms (of the clock the bench runs under). The clock
# is bash's own (EPOCHREALTIME, microseconds): a `date` run to read it would add its own start to the time
# (tens of ms in the lab, where every file it opens is the host's).
ms() {
	local t0 t1
	t0=${EPOCHREALTIME/[.,]/}
	"$@" >/dev/null
	t1=${EPOCHREALTIME/[.,]/}
	echo $((t1 - t0))e-3
}

# The median of the numbers on standard input, one a line (of an even count, the middle two's mean).
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
