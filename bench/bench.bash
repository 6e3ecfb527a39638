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

# PROCS holdres processes holding QPS QPs between them (more holdres options after), each ready within 300 s,
# killed when the bench exits; their output in $dir (made here), their pids in pids. Fails (1) when one
# does not get ready.
holders() {
	local procs=$1 qps=$2 base extra i
	shift 2
	dir=$(mktemp -d)
	pids=()
	trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
	base=$((qps / procs)) extra=$((qps % procs))
	for i in $(seq "$procs"); do
		"$BUILD/lab-progs/holdres" -q $((base + (i <= extra))) "$@" >"$dir/h$i" 2>&1 3>&- &
		pids+=($!)
	done
	for i in $(seq "$procs"); do
		timeout 300 bash -c "until grep -q ready '$dir/h$i'; do sleep 0.5; done" ||
			{ echo "holdres $i did not get ready:" >&2; cat "$dir/h$i" >&2; return 1; }
	done
}

# The median of the numbers on standard input, one a line (of an even count, the middle two's mean).
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
