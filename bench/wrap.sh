#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The interceptor's own cost per QP create+destroy and MR reg+dereg pair, around a stand-in libibverbs whose
# verbs only flush the TLB (bench/stub): needs no RDMA device, so it also runs on the host, without the
# lab's emulator, for the figure a real machine pays. Alternates, per round: under `rdmactl run` (every
# verb charged to a ledger) and the preload with no ledger (RDMACTL_FAIL=open: wrappers pass through).
#   bench/wrap.sh [ROUNDS [PAIRS]]      (make bench first)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
rounds=${1:-7}
pairs=${2:-3000}
[ -x "$B/bench/wrap" ] && [ -e "$B/bench/stub/libibverbs.so.1" ] || { echo "bench/wrap.sh: run 'make bench' first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RDMACTL_LEDGER=$tmp/ledger
"$B/rdmactl" quota init >/dev/null
lim=(--max-qp 100000 --max-mr 100000 --max-mr-bytes 1T)
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for ((r = 1; r <= rounds; r++)); do
	"$B/rdmactl" run --job "w$r" "${lim[@]}" -- env -u LD_AUDIT LD_LIBRARY_PATH="$B/bench/stub" "$B/bench/wrap" -n "$pairs" \
		>"$tmp/run" 2>/dev/null
	env LD_LIBRARY_PATH="$B/bench/stub" LD_PRELOAD="$B/librdmactl-preload.so" RDMACTL_LEDGER="$tmp/none" \
		RDMACTL_FAIL=open "$B/bench/wrap" -n "$pairs" >"$tmp/pass" 2>/dev/null
	for m in run pass; do
		awk -v m="$m" -v d="$tmp" '{ print $2 >> (d "/" m "." $1) }' "$tmp/$m"
	done
done
where=host
[ -z "${LAB_GUEST:-}" ] || where="lab guest (TCG)"
printf 'stub verbs on the %s, %d rounds x %d pairs, medians (ns per pair)\n' "$where" "$rounds" "$pairs"
for k in qp mr; do
	printf '  %s: verbs alone %6.0f   + charged under run %5.0f   + preload passing through %5.0f\n' "$k" \
		"$(median <"$tmp/run.${k}_direct_ns")" "$(median <"$tmp/run.${k}_extra_ns")" \
		"$(median <"$tmp/pass.${k}_extra_ns")"
done
