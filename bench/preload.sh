#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Interceptor overhead, inside the lab: QP create+destroy and MR reg+dereg loops, and ib_send_lat, bare and
# under `rdmactl run` in alternation; prints the medians and the ratios (run / bare). Then the same verbs
# interleaved in one process (wrapped vs direct, alternating per call), which cancels most of TCG's noise:
# their ratio is the median over the rounds of each round's ratio (and the extra ns per pair likewise).
#   tests/lab/run -- bench/preload.sh [ROUNDS] [ITERS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${LAB_GUEST:-}" ] || { echo "bench/preload.sh runs inside the lab: tests/lab/run -- bench/preload.sh" >&2; exit 1; }
B=${BUILD:-build}
R=$B/rdmactl
P=$B/bench/preload
rounds=${1:-7}
iters=${2:-200}
export RDMACTL_LEDGER=/dev/shm/bench.ledger
"$R" quota init >/dev/null
# generous limits, so every call goes through the full reserve path of the job
lim=(--max-qp 1000 --max-mr 1000 --max-mr-bytes 1G --max-cq 100 --max-pd 100 --max-ctx 100)

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A out
for ((r = 1; r <= rounds; r++)); do
	# alternate which one goes first, so drift does not favour either
	if ((r % 2)); then order="bare run"; else order="run bare"; fi
	for m in $order; do
		if [ "$m" = bare ]; then res=$("$P" -n "$iters"); else res=$("$R" run --job "bench$r" "${lim[@]}" -- "$P" -n "$iters"); fi
		out[$m.qp]+="$(awk '$1 == "qp_ns" { print $2 }' <<<"$res") "
		out[$m.mr]+="$(awk '$1 == "mr_ns" { print $2 }' <<<"$res") "
	done
done

# Same process, same moment: intercepted verbs vs libibverbs' own entry points, alternating per iteration
# (LD_AUDIT is dropped for this one: it would send the dlvsym'd "direct" pointers to the wrappers too).
# Interleaved in one process, each round twice: under run (every verb charged to the ledger), and with the
# preload but no ledger (RDMACTL_FAIL=open and a ledger that cannot be opened: the wrappers pass every call
# through), which is the floor any interposition pays here.
for ((r = 1; r <= rounds; r++)); do
	res=$("$R" run --job "int$r" "${lim[@]}" -- env -u LD_AUDIT "$P" -i -n "$iters")
	for k in qp_wrapped qp_direct mr_wrapped mr_direct; do
		out[i.$k]+="$(awk -v k="${k}_ns" '$1 == k { print $2 }' <<<"$res") "
	done
	res=$(env LD_PRELOAD="$B/librdmactl-preload.so" RDMACTL_LEDGER=/nonexistent/ledger RDMACTL_FAIL=open \
		"$P" -i -n "$iters" 2>/dev/null)
	for k in qp_wrapped qp_direct mr_wrapped mr_direct; do
		out[p.$k]+="$(awk -v k="${k}_ns" '$1 == k { print $2 }' <<<"$res") "
	done
done

lat() { # lat PREFIX...: one ib_send_lat run (client under PREFIX), prints t_typical in usec
	timeout 60 ib_send_lat -d rxe0 -x 1 -n 2000 -p 18600 >/dev/null 2>&1 &
	local srv=$!
	local i
	for i in $(seq 100); do ss -Hltn 'sport = :18600' | grep -q . && break; sleep 0.1; done
	timeout 60 "$@" ib_send_lat -d rxe0 -x 1 -n 2000 -p 18600 192.0.2.1 2>/dev/null | awk '$1 == 2 { print $5 }'
	wait $srv || true
}
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then order="bare run"; else order="run bare"; fi
	for m in $order; do
		if [ "$m" = bare ]; then v=$(lat env); else v=$(lat "$R" run --job "lat$r" "${lim[@]}" --); fi
		out[$m.lat]+="$v "
	done
done

printf '%-28s %12s %12s %8s\n' "median over $rounds rounds" bare "under run" ratio
for k in qp mr lat; do
	b=$(tr ' ' '\n' <<<"${out[bare.$k]}" | grep . | median)
	u=$(tr ' ' '\n' <<<"${out[run.$k]}" | grep . | median)
	case $k in
	qp) name="QP create+destroy (ns)" ;;
	mr) name="MR reg+dereg 64K (ns)" ;;
	lat) name="ib_send_lat typical (usec)" ;;
	esac
	printf '%-28s %12s %12s %8s\n' "$name" "$b" "$u" "$(awk -v b="$b" -v u="$u" 'BEGIN { printf "%.4f", u / b }')"
done
for t in i p; do
	for k in qp mr; do
		b=$(tr ' ' '\n' <<<"${out[$t.${k}_direct]}" | grep . | median)
		u=$(tr ' ' '\n' <<<"${out[$t.${k}_wrapped]}" | grep . | median)
		# per round: wrapped / direct and wrapped - direct, then their medians
		r=$(paste <(tr ' ' '\n' <<<"${out[$t.${k}_wrapped]}" | grep .) <(tr ' ' '\n' <<<"${out[$t.${k}_direct]}" | grep .) |
			awk '{ printf "%.6f\n", $1 / $2 }' | median)
		d=$(paste <(tr ' ' '\n' <<<"${out[$t.${k}_wrapped]}" | grep .) <(tr ' ' '\n' <<<"${out[$t.${k}_direct]}" | grep .) |
			awk '{ print $1 - $2 }' | median)
		[ $t = i ] && name="interleaved $k (ns)" || name="  pass-through $k (ns)"
		printf '%-28s %12s %12s %8.4f  (+%.0f ns per pair)\n' "$name" "$b" "$u" "$r" "$d"
	done
done
# The accounting path alone (no verb), TLB warm and flushed: under TCG the verb's system call flushes the
# emulated TLB, and the interleaved difference above is mostly the refills of the pages the path touches.
"$R" run --job acct "${lim[@]}" -- "$B/bench/acct" -n 2000
# The wrappers alone around a stand-in libibverbs whose verbs only flush the TLB (no device, hence little noise):
# the interceptor's own cost per pair, the same in every round.
if [ -e "$B/bench/stub/libibverbs.so.1" ]; then
	"$R" run --job wrap "${lim[@]}" -- env -u LD_AUDIT LD_LIBRARY_PATH="$B/bench/stub" "$B/bench/wrap" -n 3000 |
		awk '{ v[$1] = $2 } END { printf "stub verbs, wrappers alone: qp +%d ns per pair (of %d), mr +%d ns (of %d)\n",
			v["qp_extra_ns"], v["qp_direct_ns"], v["mr_extra_ns"], v["mr_direct_ns"] }'
fi
echo "raw: ${out[*]@K}" | tr -s ' ' | fold -w 200 >&2
