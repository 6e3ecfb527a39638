#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The monitor's probes alone: the same create/destroy cycles timed in alternating windows with the probes
# attached and detached (bench/monprobe.c), by PROCS processes at once, inside the lab (boots it when run
# outside). Goal: <= 5 %. Also prints the programs' own time per run (30 more windows, statistics on).
#   bench/monprobe.sh [CYCLES [PAIRS [KINDS [PROCS]]]]    (build first: make bench)
# MONPROBE_QPIDS=1: the programs also keep the user QPs' numbers (monprobe -Q), as rdmactl monitor does.
# By default the lab's clock counts instructions (LAB_ICOUNT=0, one vCPU: see tests/lab/run): every "us"
# printed is then 1000 guest instructions, the same on a busy host as on an idle one. LAB_ICOUNT= (empty)
# measures emulated time instead (two vCPUs), which moves with the host's load.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
cycles=${1:-100}
pairs=${2:-41}
kinds=${3:-qp,mr,cq,pd}
procs=${4:-2}
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD LAB_ICOUNT=${LAB_ICOUNT-0} LAB_MONPROBE_QPIDS=${MONPROBE_QPIDS:-}
	exec tests/lab/run --timeout 2400 -- bench/monprobe.sh "$cycles" "$pairs" "$kinds" "$procs"
fi
[ -x "$BUILD/bench/monprobe" ] || { echo "bench/monprobe.sh: $BUILD/bench/monprobe missing (make bench)" >&2; exit 1; }
sysctl -q -w kernel.bpf_stats_enabled=0
if [ -n "${LAB_ICOUNT:-}" ]; then
	echo "clock: guest instructions (icount shift $LAB_ICOUNT: 1 us = $((1000 >> LAB_ICOUNT)) instructions), $(nproc) vCPU"
else
	echo "clock: emulated time (qemu TCG on this host's load), $(nproc) vCPUs"
fi
q=${MONPROBE_QPIDS:-${LAB_MONPROBE_QPIDS:-}} # the guest gets LAB_* only
echo "QP numbers kept: $([ -n "$q" ] && echo yes || echo no)"
"$BUILD/bench/monprobe" -d rxe0 -n "$cycles" -w "$pairs" -k "$kinds" -p "$procs" -S 30 ${q:+-Q}
