#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# How rdmactl top's one-shot and the exporter's scrape grow with the QPs of a host and the processes that
# hold them, against iproute2's `rdma res show qp -j` (issue 32), inside the lab (boots it when run outside,
# with LAB_MEM MiB, default 4096, and LAB_SMP vCPUs, default 1). The clock is the emulated time, as in
# bench/top.sh: the instruction clock (LAB_ICOUNT=0) jumps to the next timer whenever the guest waits for the
# host (its files come over 9p), by up to 30 s in a trial run, which made the starts of commands meaningless.
# For each configuration PROCS:QPS, PROCS holdres processes hold QPS QPs between them (and a PD, a CQ and a
# 64 KiB MR each); once all are ready and the QPs counted by top, the exporter and rdma, RUNS rounds of, side
# by side: `rdmactl top -b -n1 -j`, `rdmactl export --once`, `rdma res show qp -j`, and the control
# `rdmactl --version` (the same binary started, nothing read: the floor of a start and the noise around it).
# Prints each configuration's medians (min-max), the ratios top/rdma and export/rdma (goal: <= 0.1 at 64k
# QPs), and the peak RSS (/usr/bin/time %M) of one more run of each, per QP above the RSS with no QP held.
# A configuration that cannot be set up (a holder fails, or not ready in READY_TIMEOUT s) is said so and
# skipped. Ends with one line per configuration to paste into doc/fleet-scale.md.
# TOPSCALE_COUNTERS=1: an `rdmactl monitor` is started before the holders, and each round also times
# `rdmactl top -b -n1 -j --no-qp-states` and `rdmactl export --once --no-qp-states`, which then count from the
# monitor's counters (top's JSON "source" and the scrape's rdmactl_counts_source are checked once per
# configuration, their QPs too), and `rdmactl top -b -n1 -j --counters` and `rdmactl export --once --counters`, which
# count from them and ask each QP's state by the number the monitor keeps (checked the same way, and that the
# states cover every QP); a second table gives their ratios to rdma. The holders move every TOPSCALE_INIT-th QP
# to INIT (default 2: half), so that the kernel's answers by number are full ones for half the QPs, as a dump's
# are for all (a QP still in RESET is answered with an error: the cheaper path).
#   bench/topscale.sh [RUNS [PROCS:QPS...]]   (build first: make bench; default 5, the six of issue 32)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
runs=${1:-5}
[ $# -gt 0 ] && shift
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(8:8000 8:32000 8:64000 512:8000 512:32000 512:64000)
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD LAB_SMP=${LAB_SMP:-1} LAB_TOPSCALE_COUNTERS=${TOPSCALE_COUNTERS:-}
	echo "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
	exec tests/lab/run --timeout "${TOPSCALE_TIMEOUT:-10800}" --mem "${LAB_MEM:-4096}" -- \
		bench/topscale.sh "$runs" "${configs[@]}"
fi
for f in "$BUILD/rdmactl" "$BUILD/lab-progs/holdres"; do
	[ -x "$f" ] || { echo "bench/topscale.sh: $f missing (make bench)" >&2; exit 1; }
done
for c in "${configs[@]}"; do
	[[ $c =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || { echo "bench/topscale.sh: $c: give PROCS:QPS" >&2; exit 2; }
done
ready_timeout=${READY_TIMEOUT:-1800}
if [ -n "${LAB_ICOUNT:-}" ]; then
	clock="guest instructions (icount shift $LAB_ICOUNT: 1 ns each, jumps while waiting for the host)"
else
	clock="emulated time (qemu TCG, on the host's load)"
fi
echo "clock: $clock, $(nproc) vCPU(s), kernel $(uname -r), $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
echo "device: $(rdma dev show | head -1)"
ulimit -n 65536 2>/dev/null || true
# the bench itself is the last the OOM killer takes; the holders are the first
echo -1000 2>/dev/null >"/proc/$$/oom_score_adj" || true

. bench/bench.bash

rdmactl=$BUILD/rdmactl
dir=$(mktemp -d)
pids=()
teardown() {
	local wd
	[ ${#pids[@]} -gt 0 ] || return 0
	kill "${pids[@]}" 2>/dev/null || true
	# holdres destroys its objects on SIGTERM; past 600 s of that, SIGKILL (the kernel frees them)
	(sleep 600 && kill -9 "${pids[@]}" 2>/dev/null) &
	wd=$!
	{ wait "${pids[@]}" || true; } 2>/dev/null
	kill "$wd" 2>/dev/null || true
	{ wait "$wd" || true; } 2>/dev/null
	pids=()
	rm -f "$dir"/h*
}
# a holder that is gone (or a zombie: exited, not waited for yet)
gone() {
	local st=Z
	read -r _ _ st _ 2>/dev/null <"/proc/$1/stat" || true
	[ "$st" = Z ]
}
monpid=
cleanup() {
	teardown
	if [ -n "$monpid" ]; then
		kill -INT "$monpid" 2>/dev/null || true
		wait "$monpid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

mem_avail() { awk '/MemAvailable/ { print $2 }' /proc/meminfo; }
# peak RSS in KiB of one run of a command
rss() {
	echo 0 >"$dir/rss"
	/usr/bin/time -f %M -o "$dir/rss" "$@" >/dev/null 2>&1 || echo "($* failed)" >&2
	tail -1 "$dir/rss"
}
# QPs of the holders as each tool reports them
top_qps() {
	"$rdmactl" top -b -n1 -j | jq '[.processes[] | select(.comm == "holdres")] | "\(map(.qp) | add // 0) \(length)"' -r
}
export_qps() {
	"$rdmactl" export --once "$@" | awk '/^rdmactl_objects\{.*type="qp"/ { n += $NF } END { print n + 0 }'
}

# with no QP held: what a start costs in memory (the per-QP figures are above this)
base_top=$(rss "$rdmactl" top -b -n1 -j)
base_export=$(rss "$rdmactl" export --once)
base_rdma=$(rss rdma res show qp -j)
base_mem=$(mem_avail)
echo "# no QP held: peak RSS top $base_top KiB, export $base_export KiB, rdma $base_rdma KiB; MemAvailable $((base_mem / 1024)) MiB"

counters=${TOPSCALE_COUNTERS:-${LAB_TOPSCALE_COUNTERS:-}} # the guest gets LAB_* only
if [ -n "$counters" ]; then
	# rates, not one line per event: 64k creates otherwise print 64k lines
	"$rdmactl" monitor -v --stats=86400 >/dev/null 2>"$dir/mon.err" 3>&- &
	monpid=$!
	for i in $(seq 600); do grep -q "counts complete\|no complete counts" "$dir/mon.err" && break; sleep 0.1; done
	echo "# monitor: $(grep -m1 "counts complete\|no complete counts" "$dir/mon.err" || echo "no word after 60 s")"
fi
summary=() summary2=()
for c in "${configs[@]}"; do
	procs=${c%:*} qps=${c#*:}
	echo
	echo "## $procs processes, $qps QPs"
	if [ "$qps" -lt "$procs" ]; then
		echo "SKIPPED $c: fewer QPs than processes"
		summary+=("| $procs | $qps | skipped: fewer QPs than processes |")
		continue
	fi
	t0=$(date +%s)
	base=$((qps / procs)) extra=$((qps % procs))
	for i in $(seq "$procs"); do
		"$BUILD/lab-progs/holdres" -q $((base + (i <= extra))) -m 64K -t 1 -i "${TOPSCALE_INIT:-2}" >"$dir/h$i" 2>&1 3>&- &
		pids+=($!)
		echo 1000 2>/dev/null >"/proc/$!/oom_score_adj" || true
	done
	why=
	deadline=$(($(date +%s) + ready_timeout))
	while :; do
		nready=$(cat "$dir"/h* 2>/dev/null | grep -c '^ready' || true)
		[ "$nready" -eq "$procs" ] && break
		for i in "${!pids[@]}"; do
			if gone "${pids[$i]}"; then
				why="holder $((i + 1)) exited before ready: $(tail -2 "$dir/h$((i + 1))" | tr '\n' ' ' | cut -c1-240)"
				break
			fi
		done
		[ -z "$why" ] || break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			why="$nready of $procs holders ready after $ready_timeout s"
			break
		fi
		sleep 1
	done
	if [ -n "$why" ]; then
		echo "CANNOT RUN $c: $why (MemAvailable $(($(mem_avail) / 1024)) MiB); tearing down, going on"
		dmesg | grep -iE 'out of memory|oom-kill|rxe' | tail -3 || true
		teardown 2>/dev/null
		summary+=("| $procs | $qps | cannot run: $why |")
		continue
	fi
	mem=$(mem_avail)
	echo "# $procs holders ready in $(($(date +%s) - t0)) s; MemAvailable $((mem / 1024)) MiB" \
		"($(((base_mem - mem) * 1024 / qps)) bytes a QP, kernel and holders)"

	# the QPs exist, and each tool sees all of them (else the figures mean nothing)
	read -r tq tp < <(top_qps)
	eq=$(export_qps)
	rq=$(rdma res show qp -j | jq '[.[] | select(.comm == "holdres")] | length')
	echo "# QPs of the holders: top $tq (in $tp processes), export $eq, rdma $rq"
	if [ "$tq" != "$qps" ] || [ "$tp" != "$procs" ] || [ "$eq" != "$qps" ] || [ "$rq" != "$qps" ]; then
		echo "CANNOT RUN $c: the tools do not count $qps QPs in $procs processes; tearing down, going on"
		teardown 2>/dev/null
		summary+=("| $procs | $qps | cannot run: counts top $tq/$tp, export $eq, rdma $rq |")
		continue
	fi

	if [ -n "$counters" ]; then
		read -r src cq < <("$rdmactl" top -b -n1 -j --no-qp-states |
			jq -r '"\(.source) \([.processes[] | select(.comm == "holdres") | .qp] | add // 0)"')
		echo "# top --no-qp-states: source $src, QPs of the holders $cq"
		[ "$src" = counters ] && [ "$cq" = "$qps" ] || echo "COUNTERS NOT USED or wrong at $c: source $src, $cq QPs"
		xsrc=$("$rdmactl" export --once --no-qp-states |
			sed -nE 's/^rdmactl_counts_source\{source="([a-z]+)"(,reason="([a-z_]+)")?\} 1$/\1 \3/p')
		xsrc=${xsrc% }
		xq=$(export_qps --no-qp-states)
		echo "# export --no-qp-states: source $xsrc, QPs of every cgroup $xq (the holders' $qps and none else)"
		[ "$xsrc" = counters ] && [ "$xq" = "$qps" ] ||
			echo "COUNTERS NOT USED or wrong in the scrape at $c: source $xsrc, $xq QPs"
		read -r ssrc sq sst < <("$rdmactl" top -b -n1 -j --counters | jq -r '"\(.source) \([.processes[] |
			select(.comm == "holdres") | .qp] | add // 0) \([.processes[] | select(.comm == "holdres") |
			.qp_states[]] | add // 0)"')
		echo "# top --counters: source $ssrc, QPs of the holders $sq, in a state $sst"
		[ "$ssrc" = counters ] && [ "$sq" = "$qps" ] && [ "$sst" = "$qps" ] ||
			echo "COUNTERS NOT USED or wrong with states at $c: source $ssrc, $sq QPs, $sst in a state"
		xssrc=$("$rdmactl" export --once --counters |
			sed -nE 's/^rdmactl_counts_source\{source="([a-z]+)"(,reason="([a-z_]+)")?\} 1$/\1 \3/p')
		xssrc=${xssrc% }
		xsq=$("$rdmactl" export --once --counters | awk '/^rdmactl_qps\{/ { n += $NF } END { print n + 0 }')
		echo "# export --counters: source $xssrc, QPs in a state of every cgroup $xsq"
		[ "$xssrc" = counters ] && [ "$xsq" = "$qps" ] ||
			echo "COUNTERS NOT USED or wrong in the scrape with states at $c: source $xssrc, $xsq QPs"
	fi

	: >"$dir/top" && : >"$dir/export" && : >"$dir/rdma" && : >"$dir/ctl" && : >"$dir/rt" && : >"$dir/rx"
	: >"$dir/cnt" && : >"$dir/rc" && : >"$dir/xcnt" && : >"$dir/xrc"
	: >"$dir/scnt" && : >"$dir/src" && : >"$dir/sxcnt" && : >"$dir/sxrc"
	for r in $(seq "$runs"); do
		a=$(ms "$rdmactl" top -b -n1 -j) b=$(ms "$rdmactl" export --once)
		d=$(ms rdma res show qp -j) e=$(ms "$rdmactl" --version)
		if [ -n "$counters" ]; then
			f=$(ms "$rdmactl" top -b -n1 -j --no-qp-states) g=$(ms "$rdmactl" export --once --no-qp-states)
			echo "$f" >>"$dir/cnt" && echo "$g" >>"$dir/xcnt"
			awk -v f="$f" -v d="$d" 'BEGIN { print f / d }' >>"$dir/rc"
			awk -v g="$g" -v d="$d" 'BEGIN { print g / d }' >>"$dir/xrc"
			printf 'round %d: top --no-qp-states (counters) %9.1f ms  export --no-qp-states %9.1f ms\n' "$r" "$f" "$g"
			h=$(ms "$rdmactl" top -b -n1 -j --counters) k=$(ms "$rdmactl" export --once --counters)
			echo "$h" >>"$dir/scnt" && echo "$k" >>"$dir/sxcnt"
			awk -v h="$h" -v d="$d" 'BEGIN { print h / d }' >>"$dir/src"
			awk -v k="$k" -v d="$d" 'BEGIN { print k / d }' >>"$dir/sxrc"
			printf 'round %d: top --counters (states by number) %9.1f ms  export --counters %9.1f ms\n' "$r" "$h" "$k"
		fi
		echo "$a" >>"$dir/top" && echo "$b" >>"$dir/export" && echo "$d" >>"$dir/rdma" && echo "$e" >>"$dir/ctl"
		awk -v a="$a" -v d="$d" 'BEGIN { print a / d }' >>"$dir/rt"
		awk -v b="$b" -v d="$d" 'BEGIN { print b / d }' >>"$dir/rx"
		printf 'round %d: top %9.1f ms  export %9.1f ms  rdma %9.1f ms  control %7.1f ms\n' "$r" "$a" "$b" "$d" "$e"
	done
	rss_top=$(rss "$rdmactl" top -b -n1 -j)
	rss_export=$(rss "$rdmactl" export --once)
	rss_rdma=$(rss rdma res show qp -j)

	span() { sort -g "$dir/$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.1f-%.1f", lo, hi }'; }
	top_ms=$(median <"$dir/top") export_ms=$(median <"$dir/export")
	rdma_ms=$(median <"$dir/rdma") ctl_ms=$(median <"$dir/ctl")
	rt=$(median <"$dir/rt") rx=$(median <"$dir/rx")
	printf '%-34s %10.1f ms  (%s)\n' "rdma res show qp -j (median of $runs)" "$rdma_ms" "$(span rdma)"
	printf '%-34s %10.1f ms  (%s)\n' "rdmactl top -b -n1 -j" "$top_ms" "$(span top)"
	printf '%-34s %10.1f ms  (%s)\n' "rdmactl export --once" "$export_ms" "$(span export)"
	printf '%-34s %10.1f ms  (%s)\n' "control: rdmactl --version" "$ctl_ms" "$(span ctl)"
	# the ratios: medians of each round's own (the rounds' neighbours share the host's load)
	line=$(awk -v p="$procs" -v q="$qps" -v t="$top_ms" -v x="$export_ms" -v r="$rdma_ms" -v c="$ctl_ms" \
		-v rt="$rt" -v rx="$rx" -v mt="$rss_top" -v mx="$rss_export" -v mr="$rss_rdma" \
		-v bt="$base_top" -v bx="$base_export" -v br="$base_rdma" 'BEGIN {
		printf "ratio top/rdma %.3f, export/rdma %.3f (medians of the rounds; goal <= 0.1 at 64k QPs: %s, %s)\n",
			rt, rx, rt <= 0.1 ? "ok" : "MISSED", rx <= 0.1 ? "ok" : "MISSED" > "/dev/stderr"
		printf "peak RSS: top %d KiB (%.1f bytes a QP above none held), export %d KiB (%.1f), rdma %d KiB (%.1f)\n",
			mt, (mt - bt) * 1024 / q, mx, (mx - bx) * 1024 / q, mr, (mr - br) * 1024 / q > "/dev/stderr"
		printf "| %d | %d | %.1f | %.1f | %.1f | %.1f | %.3f | %.3f | %d (%.1f) | %d (%.1f) | %d (%.1f) |",
			p, q, r, t, x, c, rt, rx, mt, (mt - bt) * 1024 / q, mx, (mx - bx) * 1024 / q,
			mr, (mr - br) * 1024 / q
	}' 2>&1 >"$dir/line")
	echo "$line"
	summary+=("$(cat "$dir/line")")
	if [ -n "$counters" ]; then
		cnt_ms=$(median <"$dir/cnt") rc=$(median <"$dir/rc")
		xcnt_ms=$(median <"$dir/xcnt") xrc=$(median <"$dir/xrc")
		printf '%-34s %10.1f ms  (%s)\n' "top -b -n1 -j --no-qp-states" "$cnt_ms" "$(span cnt)"
		printf '%-34s %10.1f ms  (%s)\n' "export --once --no-qp-states" "$xcnt_ms" "$(span xcnt)"
		scnt_ms=$(median <"$dir/scnt") src_r=$(median <"$dir/src")
		sxcnt_ms=$(median <"$dir/sxcnt") sxrc=$(median <"$dir/sxrc")
		printf '%-34s %10.1f ms  (%s)\n' "top -b -n1 -j --counters" "$scnt_ms" "$(span scnt)"
		printf '%-34s %10.1f ms  (%s)\n' "export --once --counters" "$sxcnt_ms" "$(span sxcnt)"
		awk -v rc="$rc" -v xrc="$xrc" -v s="$src_r" -v x="$sxrc" 'BEGIN { printf "ratio to rdma: top --no-qp-states %.4f, " \
			"export --no-qp-states %.4f, top --counters %.4f, export --counters %.4f" \
			" (medians of the rounds; goal <= 0.1 at 64k QPs)\n", rc, xrc, s, x }'
		awk -v p="$procs" -v q="$qps" -v r="$rdma_ms" -v f="$cnt_ms" -v g="$xcnt_ms" -v c="$ctl_ms" -v rc="$rc" \
			-v xrc="$xrc" -v s="$src" -v xs="$xsrc" -v h="$scnt_ms" -v k="$sxcnt_ms" -v sr="$src_r" -v sx="$sxrc" \
			-v ss="$ssrc" -v sxs="$xssrc" \
			'BEGIN { printf "| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.4f | %.4f | %.4f | %.4f | %s, %s, %s, %s |",
				p, q, r, f, g, h, k, c, rc, xrc, sr, sx, s, xs, ss, sxs }' \
			>"$dir/line2"
		summary2+=("$(cat "$dir/line2")")
	fi
	t1=$(date +%s)
	teardown
	echo "# measured in $((t1 - t0)) s, torn down in $(($(date +%s) - t1)) s"
done

echo
echo "## summary ($clock; medians of $runs rounds, ms; ratios: medians of the rounds' own; peak RSS KiB (bytes a QP above none held))"
echo "| processes | QPs | rdma res show qp -j | top -b -n1 -j | export --once | control | top/rdma | export/rdma | RSS top | RSS export | RSS rdma |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${summary[@]}"
if [ -n "$counters" ]; then
	echo
	echo "## counters mode (monitor started before the holders; medians of $runs rounds, ms)"
	echo "| processes | QPs | rdma res show qp -j | top --no-qp-states | export --no-qp-states | top --counters | export --counters | control | top --no-qp-states/rdma | export --no-qp-states/rdma | top --counters/rdma | export --counters/rdma | source (the four) |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
	printf '%s\n' "${summary2[@]}"
fi
