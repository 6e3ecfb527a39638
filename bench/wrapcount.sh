#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The instructions the interceptor adds to a QP create+destroy, an MR reg+dereg, a PD alloc+dealloc, a
# device open+close, a CQ, an SRQ, an AH and an MW pair, counted exactly by
# callgrind around the stand-in libibverbs of bench/stub (no device, no lab: the figure bench/kinds.sh
# measures in the lab, tracked on any machine). bench/wrap -c makes PAIRS pairs through the wrappers and
# PAIRS through the stub's own entry points, each in a function of its own; the difference of their
# inclusive counts, per pair, is what the interceptor adds (user-space instructions: it makes no system call).
#   bench/wrapcount.sh [PAIRS]      (make bench first; needs valgrind)
# Ways: control (no preload: must be 0), env (LD_PRELOAD, RDMACTL_MAX_* on those kinds, no ledger), run
# (rdmactl run with limits on them: ledger and job; LD_AUDIT left out, valgrind does not load audit modules;
# the lab shows it adds nothing per call).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
pairs=${1:-1000}
command -v valgrind >/dev/null || { echo "bench/wrapcount.sh: valgrind is missing (make deps installs it)" >&2; exit 1; }
[ -x "$B/bench/wrap" ] && [ -e "$B/bench/stub/libibverbs.so.1" ] || { echo "bench/wrapcount.sh: run 'make bench' first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RDMACTL_LEDGER=$tmp/ledger
"$B/rdmactl" quota init >/dev/null
big=1000000

cg() { # cg WAY PREFIX...: bench/wrap -c under callgrind, its counts to $tmp/WAY
	local way=$1
	shift
	"$@" valgrind --tool=callgrind --callgrind-out-file="$tmp/$way.out" --trace-children=no \
		"$B/bench/wrap" -c -n "$pairs" >"$tmp/$way.log" 2>&1 || { cat "$tmp/$way.log" >&2; exit 1; }
	callgrind_annotate --inclusive=yes --threshold=100 "$tmp/$way.out" 2>/dev/null |
		awk '{ gsub(",", "", $1) } $0 ~ /count_(wrapped|direct)_(qp|mr|pd|ctx|cq|srq|ah|mw)/ { match($0, /count_[a-z]+_[a-z]+/); print substr($0, RSTART, RLENGTH), $1 }' \
			>"$tmp/$way"
}
cg control env LD_LIBRARY_PATH="$B/bench/stub"
cg env env -u RDMACTL_LEDGER LD_LIBRARY_PATH="$B/bench/stub" LD_PRELOAD="$B/librdmactl-preload.so" \
	RDMACTL_MAX_QP=$big RDMACTL_MAX_MR=$big RDMACTL_MAX_MR_BYTES=1T RDMACTL_MAX_PD=$big RDMACTL_MAX_CTX=$big \
	RDMACTL_MAX_CQ=$big RDMACTL_MAX_SRQ=$big RDMACTL_MAX_AH=$big RDMACTL_MAX_MW=$big
cg run "$B/rdmactl" run --job wc --max-qp $big --max-mr $big --max-mr-bytes 1T --max-pd $big --max-ctx $big \
	--max-cq $big --max-srq $big --max-ah $big --max-mw $big -- env -u LD_AUDIT \
	LD_LIBRARY_PATH="$B/bench/stub"

get() { awk -v k="$2" '$1 == k { print $2; exit }' "$tmp/$1"; }
echo "instructions the interceptor adds per pair (callgrind, $pairs pairs, stub verbs)"
printf '%-8s %12s %12s %12s\n' pair control env run
for k in qp mr pd ctx cq srq ah mw; do
	printf '%-8s' "$k"
	for way in control env run; do
		w=$(get "$way" "count_wrapped_$k") d=$(get "$way" "count_direct_$k")
		[ -n "$w" ] && [ -n "$d" ] || { echo " no count for $way (callgrind_annotate)" >&2; exit 1; }
		printf ' %12s' "$(awk -v w="$w" -v d="$d" -v n="$pairs" 'BEGIN { printf "%+.1f", (w - d) / n }')"
	done
	echo
done
