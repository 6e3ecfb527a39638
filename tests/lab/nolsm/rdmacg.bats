#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl quota --kernel where BPF LSM is not active (this suite runs in a lab booted with an lsm= list
# without bpf): rdma.max stops a process in the cgroup on real rxe objects without any preload, and the
# command says what rdma.max cannot hold.

load ../../helper

MKOBJS=$BUILD/lab-progs/mkobjs

setup() {
	require_lab
	if grep -qw bpf /sys/kernel/security/lsm; then
		echo "this suite needs a lab booted without BPF LSM (make check-lab runs it so)" >&2
		return 1
	fi
	export RDMACTL_LEDGER=/dev/shm/rdmactl-quota-lab.$$
	run -0 "$RDMACTL" quota init
	CG=/sys/fs/cgroup/rdmactl-quota.$$
	mkdir "$CG"
	PIDS=()
}

# Start mkobjs under the preload in the background (optionally in $CG with IN_CG=1), wait for its first
# "waiting"/"holding" line; MK = its pid, MKOUT its output file.
start_mkobjs() {
	MKOUT=$BATS_TEST_TMPDIR/mk.$RANDOM
	if [ -n "${IN_CG:-}" ]; then
		LD_PRELOAD=$PRELOAD in_cg "$MKOBJS" "$@" >"$MKOUT" 2>&1 3>&- &
	else
		LD_PRELOAD=$PRELOAD "$MKOBJS" "$@" >"$MKOUT" 2>&1 3>&- &
	fi
	MK=$!
	PIDS+=("$MK")
	wait_for 60 grep -Eq '^(waiting|holding)' "$MKOUT" || { cat "$MKOUT" >&2; return 1; }
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rmdir "$CG" 2>/dev/null || true
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

# Run a command inside cgroup $CG.
in_cg() {
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$CG" "$@"
}

# Set ctx pd cq qp srq mr ah mw xrcd wq limits on $CG (relative path form) with --kernel. Until the last
# object kind has a limit, rdma.max cannot hold them (hca_object stays max) and set says so (exit 1).
set_object_limits() {
	local kind rc
	for kind in ctx pd cq qp srq mr ah mw xrcd wq; do
		rc=0
		"$RDMACTL" quota set "$kind" "$1" --cgroup "${CG##*/}" --kernel --dev rxe0 2>/dev/null || rc=$?
		case $kind:$rc in ctx:0 | wq:0 | [a-z]*:1) ;; *) echo "set $kind: exit $rc" >&2; return 1 ;; esac
		shift
	done
}

# rdma.max of $CG without the kernel's trailing blank.
rdma_max() {
	local line
	read -r line <"$CG/rdma.max"
	echo "$line"
}

@test "without BPF LSM, --kernel says so, names the fix, and says what rdma.max cannot hold" {
	run --separate-stderr -1 "$RDMACTL" quota set qp 3 --cgroup "$CG" --kernel --dev rxe0
	[[ $stderr == *"BPF LSM is not active"* && $stderr == *"lsm="* ]]
	[[ $stderr == *"rdma.max cannot hold a qp limit alone"* ]]
	run -0 rdma_max
	assert_output "rxe0 hca_handle=max hca_object=max"
	run --separate-stderr -1 "$RDMACTL" quota set mr_bytes 1G --cgroup "$CG" --kernel
	[[ $stderr == *"rdma.max cannot hold an mr_bytes limit"* ]]
	run --separate-stderr -1 "$RDMACTL" quota set qp 3 --global --kernel
	[[ $stderr == *"BPF LSM is not active"* ]]
	# the ledger limit holds all the same (the interceptor enforces it), and show says who enforces what
	run -0 "$RDMACTL" quota show --cgroup "$CG"
	assert_line --regexp '^  qp +3 +0 +3 +interceptor$'
}

@test "--kernel writes rdma.max: hca_handle = ctx, hca_object = sum of object limits, max while one is unlimited" {
	run -0 set_object_limits 1 1 1 3 0 0 0 0 0 0
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=5"
	run -0 "$RDMACTL" quota show --cgroup "$CG"
	assert_line --regexp '^  qp +3 +0 +3 +interceptor,rdma.max$'
	assert_line "  rdma.max     rxe0 hca_handle=1 hca_object=5"
	assert_line "  rdma.current rxe0 hca_handle=0 hca_object=0"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0] | .rdma_max.rxe0 == {"hca_handle": 1, "hca_object": 5} and .rdma_current.rxe0.hca_object == 0 and .kinds.qp.limit == 3' <<<"$output"
	# XRC domains and WQs are kernel objects too: one of them unlimited -> max; its limit counts in the sum
	run -0 "$RDMACTL" quota unset wq --cgroup "$CG" --kernel --dev rxe0 2>/dev/null
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=max"
	run -0 "$RDMACTL" quota set wq 2 --cgroup "$CG" --kernel --dev rxe0
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=7"
	# without --dev: every device listed in rdma.max
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel 2>/dev/null
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=max"
}

@test "a process in the cgroup fails at the kernel limit without the preload; outside it does not" {
	run -0 set_object_limits 1 1 1 3 0 0 0 0 0 0
	# PD + CQ + 3 QPs = 5 objects: the 4th QP is refused by the kernel
	run -3 in_cg timeout 60 "$MKOBJS" -d rxe0 -n 10
	assert_line "pd ok"
	assert_line "cq ok"
	assert_line "qp created=3 errno=EAGAIN"
	# the same program outside the cgroup is not limited
	run -0 timeout 60 "$MKOBJS" -d rxe0 -n 10
	assert_line "qp created=10 errno=0"
	# raising the ledger limit raises the kernel's
	run -0 "$RDMACTL" quota set qp 6 --cgroup "$CG" --kernel --dev rxe0 2>/dev/null
	run -3 in_cg timeout 60 "$MKOBJS" -d rxe0 -n 10
	assert_line "qp created=6 errno=EAGAIN"
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=8"
}

@test "rdma.current shows what a process in the cgroup holds" {
	run -0 set_object_limits 1 1 1 3 0 0 0 0 0 0
	local out=$BATS_TEST_TMPDIR/pp
	in_cg timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -p 18650 -n 10 >"$out" 2>&1 3>&- &
	local srv=$!
	wait_for 20 grep -q 'hca_object=[1-9]' "$CG/rdma.current"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0].rdma_current.rxe0 | .hca_handle == 1 and .hca_object >= 3' <<<"$output"
	run -0 timeout 30 ibv_rc_pingpong -d rxe0 -g 1 -p 18650 -n 10 192.0.2.1
	wait "$srv"
}

@test "an unprivileged user cannot change limits, with or without --kernel" {
	run -0 set_object_limits 1 1 1 3 0 0 0 0 0 0
	local before
	before=$("$RDMACTL" -j quota show)
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 100 --cgroup "$CG" --kernel --dev rxe0
	[[ $stderr == *"limits are root's"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota unset qp --cgroup "$CG"
	[[ $stderr == *"limits are root's"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 100 --global
	[[ $stderr == *"limits are root's"* ]]
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=5"
	assert_equal "$("$RDMACTL" -j quota show)" "$before"
	# reading is allowed
	run -0 "${nobody[@]}" "$RDMACTL" quota show --cgroup "$CG"
	assert_line --regexp '^  qp +3 +0 +3 +interceptor,rdma.max$'
}

@test "--kernel on a cgroup without the rdma controller is a clear error" {
	mkdir "$CG/child"
	run --separate-stderr -1 "$RDMACTL" quota set qp 1 --cgroup "$CG/child" --kernel
	rmdir "$CG/child"
	[[ $stderr == *"rdma.max"* && $stderr == *"cgroup.subtree_control"* ]]
}

