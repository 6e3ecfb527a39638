#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Cost of rdmactl monitor: a create/destroy storm with the monitor attached vs without, alternating, medians.
#   bench/monitor.sh [ROUNDS [PROCS [ITERS]]]     (boots the lab when run outside it)
# BASE_BUILD=DIR also runs DIR/rdmactl (another build, e.g. before a change) in the same rounds, so both
# are measured under the same conditions.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-15}
procs=${2:-2}
iters=${3:-200}
build=${BUILD:-$PWD/build}
base=${BASE_BUILD:-}
if [ -z "${LAB_GUEST:-}" ]; then
	exec tests/lab/run --timeout 2400 -- env BUILD="$build" BASE_BUILD="$base" bench/monitor.sh "$rounds" "$procs" "$iters"
fi
R=$build/rdmactl
S=$build/lab-progs/storm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

storm() {
	"$S" -d rxe0 -p "$procs" -n "$iters" | jq .elapsed_s
}

# with_monitor TAG RDMACTL ARGS...: start the monitor, wait until attached, run the storm, stop the monitor.
with_monitor() {
	local tag=$1 rdmactl=$2
	shift 2
	"$rdmactl" monitor -j "$@" >"$tmp/mon" 2>&1 3>&- &
	local m=$!
	until grep -q '"event":"start"' "$tmp/mon"; do
		kill -0 $m 2>/dev/null || { cat "$tmp/mon" >&2; exit 1; }
		sleep 0.1
	done
	# CPU time of the monitor process itself during the storm (user + system ticks): the reader's cost,
	# which the storms' wall-clock times on this noisy machine cannot resolve
	local c0 c1
	c0=$(awk '{ print $14 + $15 }' /proc/$m/stat)
	storm
	c1=$(awk '{ print $14 + $15 }' /proc/$m/stat)
	[ "${MEASURE_BPF:-}" ] || echo $((c1 - c0)) >>"$tmp/cpu_${tag}_${1:---json}"
	# time spent in our BPF programs during this storm (kernel.bpf_stats_enabled, only in the extra storms
	# after the timed rounds: its clock reads would otherwise weigh on the ratios)
	[ -z "${MEASURE_BPF:-}" ] || bpftool prog show -j | jq '[.[] | select(.name | test("^(fexit|fentry|kprobe|kretprobe)_(add|del|begin_del|commit_del|abort_del)$"))
		| {t: (.run_time_ns // 0), n: (.run_cnt // 0)}] | [(map(.t) | add), (map(.n) | add)] | @tsv' -r >>"$tmp/bpfstats_$tag"
	kill -INT $m
	wait $m
	tail -n 1 "$tmp/mon" | jq -e '.lost.ring == 0' >/dev/null || echo "warning: events lost" >&2
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ci95: a distribution-free 95 % confidence interval of the median, from the order statistics: [x(k),
# x(n+1-k)] with the largest k for which 2 P(Binomial(n, 1/2) <= k-1) <= 0.05. "-" when n is too small.
ci95() {
	sort -g | awk '{ v[NR] = $1 } END {
		n = NR; k = 0; c = 0; p = 0.5 ^ n
		for (j = 0; j < n / 2; j++) {
			c += p; p = p * (n - j) / (j + 1)
			if (2 * c > 0.05) break
			k = j + 1
		}
		if (k < 1) print "-"; else printf "%.3f..%.3f\n", v[k], v[n + 1 - k] }'
}

sysctl -q -w kernel.bpf_stats_enabled=0
: >"$tmp/bpfstats_new"
: >"$tmp/bpfstats_base"
storm >/dev/null # warm up
ops=$("$S" -d rxe0 -p "$procs" -n "$iters" | jq .ops)
: >"$tmp/none"
: >"$tmp/stream"
: >"$tmp/stats"
: >"$tmp/r_stream"
: >"$tmp/r_stats"
for f in stream_base stats_base r_stream_base r_stats_base; do : >"$tmp/$f"; done
# The lab shares the host's CPUs with everything else, so its speed drifts: each round runs every
# configuration back to back (in a rotating order) and the per-round ratios are what count.
run_cfg() {
	case $1 in
	none) storm ;;
	stream) with_monitor new "$R" ;;           # every event printed as JSON (to a file)
	stats) with_monitor new "$R" --stats=60 ;; # BPF probes + counters + ring buffer, events read but not printed
	stream_base) with_monitor base "$base/rdmactl" ;;
	stats_base) with_monitor base "$base/rdmactl" --stats=60 ;;
	esac
}
cfgs=(none stream stats)
[ -z "$base" ] || cfgs+=(stream_base stats_base)
nc=${#cfgs[@]}
for ((i = 0; i < rounds; i++)); do
	declare -A t=()
	for ((j = 0; j < nc; j++)); do
		c=${cfgs[$(((i + j) % nc))]}
		t[$c]=$(run_cfg "$c")
		echo "${t[$c]}" >>"$tmp/$c"
	done
	for c in "${cfgs[@]:1}"; do
		echo "${t[$c]} / ${t[none]}" | bc -l >>"$tmp/r_$c"
	done
	unset t
done
# The probes' own run time, in three more storms per build with kernel.bpf_stats_enabled on.
sysctl -q -w kernel.bpf_stats_enabled=1
for ((i = 0; i < 3; i++)); do
	MEASURE_BPF=1 with_monitor new "$R" --stats=60 >/dev/null
	[ -z "$base" ] || MEASURE_BPF=1 with_monitor base "$base/rdmactl" --stats=60 >/dev/null
done
sysctl -q -w kernel.bpf_stats_enabled=0
n=$(median <"$tmp/none")
s=$(median <"$tmp/stream")
c=$(median <"$tmp/stats")
printf 'storm: %d processes x %d iterations = %d operations, %d rounds, median seconds\n' "$procs" "$iters" "$ops" "$rounds"
printf '  without monitor            %.4f s  (%.1f us/op)\n' "$n" "$(echo "$n * 1000000 / $ops" | bc -l)"
printf '  monitor -j (every event)   %.4f s  median of per-round ratios %.3f (95%% CI %s)\n' "$s" \
	"$(median <"$tmp/r_stream")" "$(ci95 <"$tmp/r_stream")"
printf '  monitor --stats (no print) %.4f s  median of per-round ratios %.3f (95%% CI %s)\n' "$c" \
	"$(median <"$tmp/r_stats")" "$(ci95 <"$tmp/r_stats")"
if [ -n "$base" ]; then
	printf '  BASE monitor -j            %.4f s  median of per-round ratios %.3f\n' "$(median <"$tmp/stream_base")" \
		"$(median <"$tmp/r_stream_base")"
	printf '  BASE monitor --stats       %.4f s  median of per-round ratios %.3f\n' "$(median <"$tmp/stats_base")" \
		"$(median <"$tmp/r_stats_base")"
fi
# The time inside the BPF programs themselves (kernel.bpf_stats_enabled), which host noise affects the same
# way as the operations: its share of an operation's time is the probes' cost, independent of the drift.
# Each process does its operations one after the other, all processes in parallel: one operation takes
# n * procs / ops seconds of its process's time, and the probes run inline in it.
for tag in new base; do
	[ -s "$tmp/bpfstats_$tag" ] || continue
	[ "$tag" = new ] && label="" || label="BASE "
	awk -v ops="$ops" -v n="$n" -v procs="$procs" -v label="$label" '{ t += $1; c += $2; r++ } END {
	if (!r || !c) { print "  no BPF run-time statistics"; exit }
	printf "  %sBPF programs: %.0f runs per storm (%.2f per operation), %.2f us per run, %.2f us per operation\n",
		label, c / r, c / r / ops, t / c / 1000, t / r / ops / 1000
	printf "  = %.2f%% of an operation (%.1f us per operation and process without monitor)\n",
		100 * (t / r / ops / 1e9) / (n * procs / ops), n * procs / ops * 1e6 }' "$tmp/bpfstats_$tag"
done
hz=$(getconf CLK_TCK)
for f in "$tmp"/cpu_*; do
	[ -s "$f" ] || continue
	name=${f##*/cpu_}
	awk -v ops="$ops" -v hz="$hz" -v name="${name/_/ }" '{ t += $1; r++ } END {
		printf "  monitor process CPU (%s): %.1f us per operation (%d ticks over %d storms)\n",
			name, t / hz * 1e6 / r / ops, t, r }' "$f"
done
# Show the spread so a reader can judge the noise.
for f in none "${cfgs[@]:1}"; do
	printf '  samples %-12s %s\n' "$f" "$(xargs printf '%.3f ' <"$tmp/$f")"
	[ "$f" = none ] || printf '  samples %-12s %s\n' "r_$f" "$(xargs printf '%.3f ' <"$tmp/r_$f")"
done
