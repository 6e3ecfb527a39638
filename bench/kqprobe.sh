#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What the kernel quota programs (rdmactl quota set --kernel) add to each create/destroy pair and to verbs
# that create nothing, attached and detached in alternating windows in one process (bench/kqprobe.c), inside
# the lab (boots it when run outside). Goal (issue 15): at most 2 % of a create+destroy pair; the figures, what
# each cost buys and where the goal is not met: doc/kq-cost.md.
#   bench/kqprobe.sh [PAIRS [ROUNDS [KINDS [PROGRAM [SCOPES]]]]]    (build first: make bench)
# PROGRAM: attach only the programs whose name contains it (one program's share, e.g. kq_ioctl; "" for all).
# SCOPES (default 1): with more, self and other are measured again with SCOPES - 1 more limited cgroups.
# Configurations: control (nothing attached on either side), empty (programs that return at once at the hooks
# a pair passes while a limit exists: the trampolines alone), lookup (the same hooks, one look at the thread's
# task storage each: the floor of a design that tells limited threads from free ones), record (lookup's, and
# a record and one scope's usage per object: the floor of a limited thread's pair), least-other and least-self
# (the least a design keeping issue 33's promises pays, for a free and a limited thread), none (no kernel
# limit: nothing is attached),
# other (a limit on another process), self (a limit on every kind of the benchmark's own process).
# The lab's clock counts instructions (LAB_ICOUNT=0, one vCPU: see tests/lab/run), the kernel's included:
# every figure is guest instructions, the same on a busy host as on an idle one.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
pairs=${1:-30}
rounds=${2:-10}
kinds=${3:-ctx,pd,cq,qp,srq,mr,ah,mw,query_port,modify_qp,query_device,open_close,other_ioctl,other_write,uverbs_write}
prog=${4:-}
scopes=${5:-1}
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD LAB_ICOUNT=${LAB_ICOUNT-0}
	exec tests/lab/run --timeout 3000 -- bench/kqprobe.sh "$pairs" "$rounds" "$kinds" "$prog" "$scopes"
fi
[ -x "$BUILD/bench/kqprobe" ] || { echo "bench/kqprobe.sh: $BUILD/bench/kqprobe missing (make bench)" >&2; exit 1; }
grep -qw bpf /sys/kernel/security/lsm || { echo "bench/kqprobe.sh: BPF LSM is not active in the lab" >&2; exit 1; }
sysctl -q -w kernel.bpf_stats_enabled=0
if [ -n "${LAB_ICOUNT:-}" ]; then
	echo "clock: guest instructions (icount shift $LAB_ICOUNT), $(nproc) vCPU, kernel $(uname -r)"
else
	echo "clock: emulated time (qemu TCG on this host's load), $(nproc) vCPUs, kernel $(uname -r)"
fi
"$BUILD/bench/kqprobe" -d rxe0 -n "$pairs" -r "$rounds" -k "$kinds" ${prog:+-p "$prog"} -s "$scopes"
