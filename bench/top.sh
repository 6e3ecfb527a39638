#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Benchmark rdmactl top against iproute2 with 8 processes x 1000 QPs, inside the lab (boots it when
# run outside). Prints medians of alternating runs and the two ratios (goals: <= 0.25 and <= 0.1).
#   bench/top.sh [RUNS]    (build first: make bench)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
runs=${1:-9}
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD
	exec tests/lab/run --timeout 1200 -- bench/top.sh "$runs"
fi
for f in "$BUILD/rdmactl" "$BUILD/lab-progs/holdres" "$BUILD/bench/top_refresh"; do
	[ -x "$f" ] || { echo "bench/top.sh: $f missing (make bench)" >&2; exit 1; }
done

. bench/bench.bash

procs=8 qps=1000
holders $procs $((procs * qps)) -m 64K -t 2 || exit 1
total=$("$BUILD/rdmactl" top -b -n1 -j | jq '.totals.qp')
echo "# $procs holdres processes x $qps QPs ready; rdmactl top sees $total QPs in total"

: >"$dir/top" && : >"$dir/rdma"
for i in $(seq "$runs"); do
	ms "$BUILD/rdmactl" top -b -n1 -j >>"$dir/top"
	ms rdma res show qp -j >>"$dir/rdma"
done
top_ms=$(median <"$dir/top")
rdma_ms=$(median <"$dir/rdma")
read -r _ _ _ _ _ refresh_ms _ < <("$BUILD/bench/top_refresh" "$runs")

printf '%-44s %10.1f ms\n' "rdma res show qp -j (median of $runs)" "$rdma_ms"
printf '%-44s %10.1f ms\n' "rdmactl top -b -n1 -j (median of $runs)" "$top_ms"
printf '%-44s %10.1f ms\n' "in-process refresh (median of $runs)" "$refresh_ms"
awk -v t="$top_ms" -v r="$rdma_ms" -v f="$refresh_ms" 'BEGIN {
	printf "ratio top/rdma      %.3f (goal <= 0.25) %s\n", t / r, t / r <= 0.25 ? "ok" : "MISSED"
	printf "ratio refresh/rdma  %.3f (goal <= 0.1) %s\n", f / r, f / r <= 0.1 ? "ok" : "MISSED"
}'
