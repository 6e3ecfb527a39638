#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What the first kernel limit costs on a host that already holds many objects (issue 32): `rdmactl quota set
# qp L --cgroup CG --kernel` attaches the programs and counts what the cgroup's processes hold from the
# kernel's lists (the population walk, then the rescan), so its time grows with the objects. Inside the lab
# (boots it when run outside) with the instruction clock (LAB_ICOUNT=0: the guest's time is its instructions,
# 1 ns each, whatever the host's load). Side by side in each round, each the only limit on the host (set, then
# lifted: the programs attach with it and detach after): the first limit on an empty cgroup (the control:
# attach, nothing to count) and on the cgroup whose PROCS processes hold QPS QPs (and a PD, a CQ and an MR
# each). Prints each round and the medians; goal: under 1 s of the
# lab's time at 64k QPs. The programs' load (the first limit after boot) is printed apart, once.
#   bench/kqfirst.sh [QPS [PROCS [ROUNDS]]]    (build first: make bench; default 64000 16 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
qps=${1:-64000}
procs=${2:-16}
rounds=${3:-3}
if [ -z "${LAB_GUEST:-}" ]; then
	export BUILD LAB_ICOUNT=${LAB_ICOUNT-0}
	exec tests/lab/run --timeout 3000 -- bench/kqfirst.sh "$qps" "$procs" "$rounds"
fi
for f in "$BUILD/rdmactl" "$BUILD/lab-progs/holdres"; do
	[ -x "$f" ] || { echo "bench/kqfirst.sh: $f missing (make bench)" >&2; exit 1; }
done
grep -qw bpf /sys/kernel/security/lsm || { echo "bench/kqfirst.sh: BPF LSM is not active in the lab" >&2; exit 1; }
if [ -n "${LAB_ICOUNT:-}" ]; then
	echo "clock: guest instructions (icount shift $LAB_ICOUNT: 1 ns each), $(nproc) vCPU, kernel $(uname -r)"
else
	echo "clock: emulated time (qemu TCG on this host's load), $(nproc) vCPUs, kernel $(uname -r)"
fi

export RDMACTL_LEDGER=/dev/shm/rdmactl-kqfirst
"$BUILD/rdmactl" quota init >/dev/null
held=/sys/fs/cgroup/kqfirst-held empty=/sys/fs/cgroup/kqfirst-empty dir=$(mktemp -d)
mkdir -p "$held" "$empty"
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	"$BUILD/rdmactl" quota unset qp --cgroup "$held" --kernel 2>/dev/null || true
	"$BUILD/rdmactl" quota unset qp --cgroup "$empty" --kernel 2>/dev/null || true
	rmdir "$held" "$empty" 2>/dev/null || true
	rm -rf "$dir" "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}
trap cleanup EXIT

. bench/bench.bash

# the programs loaded (and pinned) once, as the first limit after boot does; lifted again: detached
printf '%-52s %10.1f ms\n' "load: first limit after boot, empty cgroup" \
	"$(ms "$BUILD/rdmactl" quota set qp 1 --cgroup "$empty" --kernel)"
"$BUILD/rdmactl" quota unset qp --cgroup "$empty" --kernel

per=$(((qps + procs - 1) / procs))
for i in $(seq "$procs"); do
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$held" \
		"$BUILD/lab-progs/holdres" -q "$per" -m 64K -t 1 >"$dir/h$i" 2>&1 3>&- &
	pids+=($!)
done
for i in $(seq "$procs"); do
	timeout 1200 bash -c "until grep -q ready '$dir/h$i'; do sleep 0.5; done" ||
		{ echo "holdres $i did not get ready:" >&2; cat "$dir/h$i" >&2; exit 1; }
done
total=$(rdma -j res show qp | jq length)
echo "# $procs processes x $per QPs ready in $held; RDMA netlink lists $total QPs on the host"

: >"$dir/ctl" && : >"$dir/first"
for r in $(seq "$rounds"); do
	# each the only limit on the host: the programs attach with it and detach when it is lifted
	# (the detach's deferred work, RCU grace periods and link releases, settles before each measure)
	sleep 2
	c=$(ms "$BUILD/rdmactl" quota set qp 1 --cgroup "$empty" --kernel)
	"$BUILD/rdmactl" quota unset qp --cgroup "$empty" --kernel
	sleep 2
	f=$(ms "$BUILD/rdmactl" quota set qp $((total * 2)) --cgroup "$held" --kernel)
	# what it counted: every QP of the cgroup (checked, or the figure means nothing)
	got=$("$BUILD/rdmactl" -j quota show --cgroup "$held" | jq '.scopes[0].kinds.qp.kernel_usage')
	[ "$got" = "$((per * procs))" ] || { echo "round $r: the first limit counted $got QPs of $((per * procs))" >&2; exit 1; }
	"$BUILD/rdmactl" quota unset qp --cgroup "$held" --kernel
	echo "$c" >>"$dir/ctl" && echo "$f" >>"$dir/first"
	printf 'round %d: first limit, empty cgroup %9.1f ms; with %d QPs %9.1f ms\n' "$r" "$c" "$got" "$f"
done
ctl=$(median <"$dir/ctl")
first=$(median <"$dir/first")
printf '%-52s %10.1f ms\n' "first limit, empty cgroup (control, median)" "$ctl"
printf '%-52s %10.1f ms\n' "first limit, $((per * procs)) QPs held (median)" "$first"
awk -v f="$first" -v c="$ctl" -v n="$((per * procs))" 'BEGIN {
	printf "counting them: %.1f ms more, %.2f us per QP; the first limit %s the goal of 1 s\n",
		f - c, (f - c) * 1000 / n, f <= 1000 ? "meets" : "MISSES"
}'
