#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl monitor's event stream at the highest create rate the lab sustains, with every event accounted for
# (issue 32), inside the lab (boots it when run outside). The create rate is driven up by running storm
# (tests/lab/progs/storm.c: PROCS processes creating and destroying KINDS objects) with 1, 2, 4, ... processes,
# each step OPS operations in all, until the rate without the monitor stops growing (STOP_AFTER steps, default
# 2, without a gain of 5 % over the best so far) or the list ends. In every round of a step, side by side in a
# rotating order:
#   none    the storm alone (the control: its rate, and the noise floor between rounds)
#   stats   rdmactl monitor -j --stats=3600: events read from the ring and counted, none printed
#   file    rdmactl monitor -j > FILE: every event printed as a JSON line
#   slow    rdmactl monitor -j | a reader of 64 KiB per SLOW_PAUSE seconds (default 0.1) > FILE: a consumer
#           slower than the storm, which forces the ring to fill
# and checks that every operation is accounted for, exactly, per kind and direction:
#   - the BPF per-device counters (pinned devcounters, which count an event even when the ring is full) grew
#     by storm's own counts, per kind, create and destroy;
#   - events in the monitor's summary + lost ones = storm's counts: per kind, the shortfall is >= 0 and the
#     shortfalls add up to the summary's lost.ring;
#   - the stream (file, slow) holds as many create/destroy lines as the summary counts, its "lost" lines add
#     up to lost.ring, and every line parses;
#   - no event from a process other than storm's.
# A mismatch is printed loudly and the bench exits 1 at the end. Prints per step the control's rate and each
# configuration's rate as a ratio to the control's in the same round (medians over the rounds), with the events
# received and lost (medians) and the monitor's CPU time per second of storm.
#   bench/monstream.sh [ROUNDS [OPS [KINDS [PROCS...]]]]    (build first: make bench; default 5 60000 pd,mr 1 2 4 8)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
rounds=${1:-5}
ops_goal=${2:-60000}
kinds=${3:-pd,mr}
if [ $# -gt 3 ]; then shift 3; else set --; fi
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(1 2 4 8)
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD
	echo "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
	exec tests/lab/run --timeout "${MONSTREAM_TIMEOUT:-5400}" -- bench/monstream.sh "$rounds" "$ops_goal" "$kinds" \
		"${steps[@]}"
fi
R=$BUILD/rdmactl
S=$BUILD/lab-progs/storm
for f in "$R" "$S"; do
	[ -x "$f" ] || { echo "bench/monstream.sh: $f missing (make all bench)" >&2; exit 1; }
done
stop_after=${STOP_AFTER:-2}
slow_pause=${SLOW_PAUSE:-0.1}
cfgs=(none stats file slow)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DEVC=/sys/fs/bpf/rdmactl/devcounters
# The kernel's enum rdma_restrack_type: the index of each kind in struct mon_counts' arrays.
ktypes='{"pd":0,"cq":1,"qp":2,"cm_id":3,"mr":4,"ctx":5,"counter":6,"srq":7}'
: >"$tmp/mismatches"

. bench/bench.bash # median
# The per-device counters (struct mon_counts per device index) as one JSON object keyed by device index.
devcounters() {
	bpftool -j map dump pinned "$DEVC" | jq -c 'map(.formatted // . | {key: (.key | tostring), value}) | from_entries'
}

# slow_reader FILE: standard input to FILE, at most 64 KiB per read and a pause after each.
slow_reader() {
	local n
	while :; do
		n=$(dd bs=65536 count=1 status=none | tee -a "$1" | wc -c)
		[ "$n" -gt 0 ] || break
		sleep "$slow_pause"
	done
}

cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# check CFG: storm's counts ($tmp/storm) against the BPF counters' growth ($tmp/dc0, $tmp/dc1), the monitor's
# summary and its stream ($tmp/out); prints "EVENTS LOST STREAM_EVENTS" or, on a mismatch, says so on stderr
# (and still prints the numbers).
check() {
	local cfg=$1 sum verdict
	sum=$(grep '"event":"summary"' "$tmp/out" | tail -n 1)
	if [ -z "$sum" ]; then
		echo "MISMATCH ($cfg, $procs processes): no summary from the monitor" >&2
		tail -n 3 "$tmp/err" >&2
		echo x >>"$tmp/mismatches"
		echo "0 0 0"
		return
	fi
	# The stream: the kinds of its lines (unparsable ones too) and the sum of its "lost" reports.
	jq -cR '(fromjson? // {event: "UNPARSABLE"}) | {event, count}' "$tmp/out" >"$tmp/lines"
	verdict=$(jq -rn --arg cfg "$cfg" --argjson kt "$ktypes" --slurpfile storm "$tmp/storm" \
		--slurpfile dc0 "$tmp/dc0" --slurpfile dc1 "$tmp/dc1" --argjson sum "$sum" --slurpfile lines "$tmp/lines" '
		$storm[0] as $s | ($dc0[0]["0"] // {create: [0,0,0,0,0,0,0,0], destroy: [0,0,0,0,0,0,0,0]}) as $a
		| ($dc1[0]["0"]) as $b | ([$s.processes[].pid]) as $pids
		| [$lines[] | select(.event == "create" or .event == "destroy")] | length as $stream
		| ([$lines[] | select(.event == "lost") | .count] | add // 0) as $slost
		| ([$lines[] | select(.event == "UNPARSABLE")] | length) as $bad
		| [ ("create", "destroy") as $op | ($s[$op] | keys[]) as $k
		    | { op: $op, k: $k, storm: $s[$op][$k], bpf: ($b[$op][$kt[$k]] - $a[$op][$kt[$k]]),
			ev: ($sum.types[$k][$op] // 0) } ] as $rows
		| [ ($rows[] | select(.bpf != .storm)
			| "BPF counters \(.k) \(.op): +\(.bpf), storm did \(.storm)"),
		    ($rows[] | select(.ev > .storm)
			| "\(.k) \(.op): \(.ev) events for \(.storm) operations"),
		    (($rows | map(.storm - .ev) | add) as $short | select($short != $sum.lost.ring)
			| "events \($sum.events) + lost.ring \($sum.lost.ring) != \($s.ops) operations (shortfall \($short))"),
		    (select(($rows | map(.ev) | add) != $sum.events)
			| "summary: \($sum.events) events but its kinds add up to \($rows | map(.ev) | add)"),
		    ($sum.processes[] | select(.pid as $p | $pids | index($p) | not)
			| "events from pid \(.pid) (\(.comm)), not storm"),
		    (select($cfg != "stats" and $stream != $sum.events)
			| "stream: \($stream) create/destroy lines, summary counts \($sum.events)"),
		    (select($cfg != "stats" and $slost != $sum.lost.ring)
			| "stream: lost reports add up to \($slost), summary lost.ring \($sum.lost.ring)"),
		    (select($bad > 0) | "stream: \($bad) unparsable lines"),
		    (select($sum.lost.counters != 0) | "lost.counters \($sum.lost.counters)")
		  ] as $err
		| if ($err | length) > 0 then "MISMATCH " + ($err | join("; ")) else "ok" end
		+ "\t\($sum.events) \($sum.lost.ring) \($stream)"')
	if [[ $verdict == MISMATCH* ]]; then
		echo "MISMATCH ($cfg, $procs processes, round $round): ${verdict%%$'\t'*}" >&2
		echo x >>"$tmp/mismatches"
	fi
	echo "${verdict#*$'\t'}"
}

# run_cfg CFG: one storm under CFG; appends "RATE EVENTS LOST STREAM CPU_S ELAPSED" to $tmp/rec.$procs.$cfg.
run_cfg() {
	local cfg=$1 m="" r="" c0 c1 el ops counts
	: >"$tmp/out"
	case $cfg in
	none) ;;
	stats) "$R" monitor -j --stats=3600 >"$tmp/out" 2>"$tmp/err" & m=$! ;;
	file) "$R" monitor -j >"$tmp/out" 2>"$tmp/err" & m=$! ;;
	slow)
		rm -f "$tmp/fifo"
		mkfifo "$tmp/fifo"
		slow_reader "$tmp/out" <"$tmp/fifo" &
		r=$!
		"$R" monitor -j >"$tmp/fifo" 2>"$tmp/err" &
		m=$!
		;;
	esac
	if [ -n "$m" ]; then
		until grep -q '"event":"start"' "$tmp/out"; do
			kill -0 "$m" 2>/dev/null || { cat "$tmp/err" >&2; exit 1; }
			sleep 0.1
		done
		devcounters >"$tmp/dc0"
		c0=$(cpu_ticks "$m")
	fi
	"$S" -d rxe0 -p "$procs" -n "$iters" -k "$kinds" >"$tmp/storm" || {
		echo "bench/monstream.sh: storm failed ($cfg, $procs processes)" >&2
		cat "$tmp/storm" >&2
		exit 1
	}
	el=$(jq .elapsed_s "$tmp/storm")
	ops=$(jq .ops "$tmp/storm")
	if [ -z "$m" ]; then
		echo "$(echo "$ops / $el" | bc -l) 0 0 0 0 $el" >>"$tmp/rec.$procs.$cfg"
		return
	fi
	c1=$(cpu_ticks "$m")
	devcounters >"$tmp/dc1"
	kill -INT "$m"
	wait "$m" || echo "bench/monstream.sh: monitor exited $? ($cfg)" >&2
	[ -z "$r" ] || wait "$r"
	counts=$(check "$cfg")
	echo "$(echo "$ops / $el" | bc -l) $counts $(echo "($c1 - $c0) / $hz" | bc -l) $el" >>"$tmp/rec.$procs.$cfg"
}

# col FILE N: the median of column N.
col() {
	awk -v n="$2" '{ print $n }' "$1" | median
}

hz=$(getconf CLK_TCK)
echo "lab: $(uname -r), $(nproc) vCPUs, clock: emulated time (qemu TCG, on the host's load)"
echo "storm kinds $kinds, about $ops_goal operations per storm, $rounds rounds per step; configurations in a rotating order"
"$S" -d rxe0 -p 1 -n 500 -k "$kinds" >/dev/null # warm up
best=0
top_rate=0
flat=0
results=()
for procs in "${steps[@]}"; do
	nk=$(tr , '\n' <<<"$kinds" | wc -l)
	iters=$((ops_goal / (2 * nk * procs)))
	for c in "${cfgs[@]}"; do : >"$tmp/rec.$procs.$c"; done
	: >"$tmp/ratio.$procs"
	for ((round = 0; round < rounds; round++)); do
		nc=${#cfgs[@]}
		for ((j = 0; j < nc; j++)); do
			run_cfg "${cfgs[$(((round + j) % nc))]}"
		done
		# This round's rates as ratios to the control's.
		base=$(tail -n 1 "$tmp/rec.$procs.none" | cut -d' ' -f1)
		line=""
		for c in "${cfgs[@]:1}"; do
			line+="$(echo "$(tail -n 1 "$tmp/rec.$procs.$c" | cut -d' ' -f1) / $base" | bc -l) "
		done
		echo "$line" >>"$tmp/ratio.$procs"
	done
	ops=$(jq .ops "$tmp/storm")
	rate=$(col "$tmp/rec.$procs.none" 1)
	printf '\n%d processes x %d iterations (%d operations per storm)\n' "$procs" "$iters" "$ops"
	printf '  %-6s %10s %9s %9s %9s %8s %8s %9s  %s\n' config "ops/s" "ratio" events lost "lost %" "cpu/s" "storm s" \
		"rates of the rounds"
	printf '  %-6s %10.0f %9s %9s %9s %8s %8s %9.3f  %s\n' none "$rate" 1 - - - - \
		"$(col "$tmp/rec.$procs.none" 6)" "$(awk '{ printf "%.0f ", $1 }' "$tmp/rec.$procs.none")"
	i=1
	for c in "${cfgs[@]:1}"; do
		f=$tmp/rec.$procs.$c
		lost=$(col "$f" 3)
		printf '  %-6s %10.0f %9.3f %9.0f %9.0f %7.1f%% %8.2f %9.3f  %s\n' "$c" "$(col "$f" 1)" \
			"$(col "$tmp/ratio.$procs" "$i")" "$(col "$f" 2)" "$lost" "$(echo "100 * $lost / $ops" | bc -l)" \
			"$(awk '{ print $5 / $6 }' "$f" | median)" "$(col "$f" 6)" \
			"$(awk '{ printf "%.0f/%d ", $1, $3 }' "$f")"
		results+=("$(printf '| %d | %.0f | %s | %.3f | %.0f / %.0f |' "$procs" "$rate" "$c" \
			"$(col "$tmp/ratio.$procs" "$i")" "$(col "$f" 3)" "$ops")")
		i=$((i + 1))
	done
	# the highest rate seen, and whether it grew by 5 % over the best step so far (else the steps stop)
	if [ "$(echo "$rate > $top_rate" | bc -l)" = 1 ]; then
		top_rate=$rate
		top_procs=$procs
	fi
	if [ "$(echo "$rate > $best * 1.05" | bc -l)" = 1 ]; then
		best=$rate
		best_procs=$procs
		flat=0
	else
		flat=$((flat + 1))
		[ "$flat" -lt "$stop_after" ] || { echo "  (no gain over $best_procs processes in $flat steps: stop)"; break; }
	fi
done
printf '\nhighest rate without the monitor: %.0f operations/s (%d processes); rows for doc/fleet-scale.md:\n' \
	"$top_rate" "$top_procs"
echo "| processes | ops/s without monitor | configuration | rate ratio | lost / operations (medians) |"
printf '%s\n' "${results[@]}"
mismatches=$(wc -l <"$tmp/mismatches")
if [ "$mismatches" -gt 0 ]; then
	echo "MISMATCH: $mismatches runs where events + lost did not equal the operations (above)" >&2
	exit 1
fi
echo "every run balanced: events + lost = operations, per kind and direction"
