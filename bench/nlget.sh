#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# RDMA netlink's answers for a device's QPs: one dump against one request per QP by its number (what top and
# the exporter do with --counters), side by side in each round, with the dump done again as the control
# (bench/nlget.c). Inside the lab (boots it when run outside, with LAB_MEM MiB, default 4096): PROCS holdres
# processes hold QPS QPs between them, every INIT-th QP moved to INIT (default 2: half; 1: all; the others
# stay in RESET, which the kernel answers by number with EAGAIN only). Emulated time, as bench/topscale.sh.
#   bench/nlget.sh [QPS [PROCS [INIT [ROUNDS]]]]    (build first: make bench; default 64000 8 2 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
qps=${1:-64000}
procs=${2:-8}
init=${3:-2}
rounds=${4:-3}
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD
	exec tests/lab/run --timeout 3000 --mem "${LAB_MEM:-4096}" -- bench/nlget.sh "$qps" "$procs" "$init" "$rounds"
fi
for f in "$BUILD/bench/nlget" "$BUILD/lab-progs/holdres"; do
	[ -x "$f" ] || { echo "bench/nlget.sh: $f missing (make bench)" >&2; exit 1; }
done
for v in "$qps" "$procs" "$init" "$rounds"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "bench/nlget.sh: '$v': give whole numbers >= 1" >&2; exit 2; }
done
[ "$qps" -ge "$procs" ] || { echo "bench/nlget.sh: fewer QPs than processes" >&2; exit 2; }
echo "clock: emulated time (qemu TCG, on the host's load), $(nproc) vCPU(s), kernel $(uname -r)"
ulimit -n 65536 2>/dev/null || true
. bench/bench.bash
SECONDS=0
holders "$procs" "$qps" -m 64K -i "$init" || exit 1
echo "# $procs holders of $qps QPs (every ${init}-th in INIT) ready in $SECONDS s: $(rdma res show | head -1)"
"$BUILD/bench/nlget" "$(rdma -j dev show | jq '.[0].ifindex')" "$rounds"
