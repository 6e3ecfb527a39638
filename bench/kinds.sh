#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What the interceptor adds to a create/destroy pair of every kind, in instructions, inside the lab with the
# guest clock counting them (LAB_ICOUNT=0; the figures are then instructions, not ns):
#   LAB_ICOUNT=0 tests/lab/run --timeout 1500 -- bench/kinds.sh [ROUNDS] [PAIRS]
# Each round runs bench/kinds (one process, interleaved pairs: the verbs as a program calls them against
# libibverbs' own entry points, 10th percentiles) four ways, in a rotating order:
#   control   no preload: both sides are libibverbs' own; what it shows is the noise floor
#   env       LD_PRELOAD with an RDMACTL_MAX_* limit on every kind (no ledger: the env-variable mode)
#   run       rdmactl run with a limit on every kind (ledger, job, LD_PRELOAD and LD_AUDIT)
#   noaudit   the same without LD_AUDIT: run minus noaudit is what the audit module adds per call
# and prints, per kind, the median over the rounds of the pair's own cost and of each way's addition, with
# the share of the pair. xrcd and wq: rxe has neither, its create fails (EOPNOTSUPP) on both sides, so their
# "pair" is that failed create. query: ibv_query_device, which is not intercepted (it must add nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${LAB_GUEST:-}" ] || { echo "bench/kinds.sh runs inside the lab: LAB_ICOUNT=0 tests/lab/run -- bench/kinds.sh" >&2; exit 1; }
B=${BUILD:-build}
R=$B/rdmactl
K=$B/bench/kinds
[ -x "$K" ] || { echo "bench/kinds.sh: run 'make bench' first" >&2; exit 1; }
rounds=${1:-3}
pairs=${2:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RDMACTL_LEDGER=$tmp/ledger
"$R" quota init >/dev/null
big=1000000
lim=(--max-qp $big --max-cq $big --max-pd $big --max-mr $big --max-mr-bytes 1T --max-srq $big --max-ah $big
	--max-mw $big --max-xrcd $big --max-wq $big --max-ctx $big)
envlim=()
for k in QP CQ PD MR SRQ AH MW XRCD WQ CTX; do envlim+=("RDMACTL_MAX_$k=$big"); done
envlim+=(RDMACTL_MAX_MR_BYTES=1T)

one() { # one MODE ROUND: bench/kinds under MODE, its lines to $tmp/MODE.ROUND
	case $1 in
	control) "$K" -n "$pairs" ;;
	env) env -u RDMACTL_LEDGER LD_PRELOAD="$B/librdmactl-preload.so" "${envlim[@]}" "$K" -n "$pairs" ;;
	run) "$R" run --job "k$2" "${lim[@]}" -- "$K" -n "$pairs" ;;
	noaudit) "$R" run --job "n$2" "${lim[@]}" -- env -u LD_AUDIT "$K" -n "$pairs" ;;
	esac >"$tmp/$1.$2" 2>"$tmp/$1.$2.err" || { echo "bench/kinds.sh: $1 failed:" >&2; cat "$tmp/$1.$2.err" >&2; exit 1; }
}

modes=(control env run noaudit)
for ((r = 1; r <= rounds; r++)); do
	for ((m = 0; m < ${#modes[@]}; m++)); do
		one "${modes[(m + r - 1) % ${#modes[@]}]}" "$r"
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { # col MODE KIND FIELD: median over the rounds
	cat "$tmp/$1".[0-9]* | awk -v k="$2" -v f="$3" '$1 == k { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' | median
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f %%", 100 * a / b; else print "-" }'; }

echo "instructions per pair, 10th percentiles, median of $rounds rounds x $pairs pairs (ctx: $((pairs / 3))); added = wrapped - direct"
printf '| %-5s | %9s | %8s | %8s | %8s | %8s | %9s | %9s |\n' kind pair control env run noaudit "env share" "run share"
printf '| %-5s | %9s | %8s | %8s | %8s | %8s | %9s | %9s |\n' --- ---: ---: ---: ---: ---: ---: ---:
for k in qp cq pd mr srq ah mw xrcd wq ctx query; do
	p=$(col control "$k" direct)
	[ -n "$p" ] || { printf '| %-5s | failed (see bench/kinds stderr) |\n' "$k"; continue; }
	e=$(cat "$tmp"/control.[0-9]* | awk -v k="$k" '$1 == k { print $NF; exit }')
	c=$(col control "$k" added) v=$(col env "$k" added) u=$(col run "$k" added) n=$(col noaudit "$k" added)
	name=$k
	[ "$e" = 0 ] || name="$k ($e)"
	printf '| %-5s | %9s | %+8.0f | %+8.0f | %+8.0f | %+8.0f | %9s | %9s |\n' "$name" "$p" "$c" "$v" "$u" "$n" \
		"$(pct "$v" "$p")" "$(pct "$u" "$p")"
done
echo "raw:" >&2
for f in "$tmp"/*.[0-9]*; do case $f in *.err) ;; *) sed "s|^|$(basename "$f") |" "$f" >&2 ;; esac; done
