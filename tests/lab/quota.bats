#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl quota in the lab: the --kernel backstop (rdma.max) stops a process in the cgroup on real rxe
# objects without any preload; unprivileged users cannot change limits.

load ../helper

MKOBJS=$BUILD/lab-progs/mkobjs

setup() {
	require_lab
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

# Set ctx pd cq qp srq mr ah mw xrcd wq limits on $CG (relative path form) with --kernel.
set_object_limits() {
	local kind
	for kind in ctx pd cq qp srq mr ah mw xrcd wq; do
		"$RDMACTL" quota set "$kind" "$1" --cgroup "${CG##*/}" --kernel --dev rxe0 || return 1
		shift
	done
}

# rdma.max of $CG without the kernel's trailing blank.
rdma_max() {
	local line
	read -r line <"$CG/rdma.max"
	echo "$line"
}

@test "--kernel writes rdma.max: hca_handle = ctx, hca_object = sum of object limits, max while one is unlimited" {
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CG" --kernel --dev rxe0
	run -0 rdma_max
	assert_output "rxe0 hca_handle=max hca_object=max"
	run -0 set_object_limits 1 1 1 3 0 0 0 0 0 0
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=5"
	run -0 "$RDMACTL" quota show --cgroup "$CG"
	assert_line "  rdma.max     rxe0 hca_handle=1 hca_object=5"
	assert_line "  rdma.current rxe0 hca_handle=0 hca_object=0"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0] | .rdma_max.rxe0 == {"hca_handle": 1, "hca_object": 5} and .rdma_current.rxe0.hca_object == 0 and .kinds.qp.limit == 3' <<<"$output"
	# XRC domains and WQs are kernel objects too: one of them unlimited -> max; its limit counts in the sum
	run -0 "$RDMACTL" quota unset wq --cgroup "$CG" --kernel --dev rxe0
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=max"
	run -0 "$RDMACTL" quota set wq 2 --cgroup "$CG" --kernel --dev rxe0
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=7"
	# without --dev: every device listed in rdma.max
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
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
	run -0 "$RDMACTL" quota set qp 6 --cgroup "$CG" --kernel --dev rxe0
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
	[[ $stderr == *"permission denied"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota unset qp --cgroup "$CG"
	[[ $stderr == *"permission denied"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 100 --global
	[[ $stderr == *"permission denied"* ]]
	run -0 rdma_max
	assert_output "rxe0 hca_handle=1 hca_object=5"
	assert_equal "$("$RDMACTL" -j quota show)" "$before"
	# reading is allowed
	run -0 "${nobody[@]}" "$RDMACTL" quota show --cgroup "$CG"
	assert_line --regexp '^  qp +3 +0 +3$'
}

@test "--kernel on a cgroup without the rdma controller is a clear error" {
	mkdir "$CG/child"
	run --separate-stderr -1 "$RDMACTL" quota set qp 1 --cgroup "$CG/child" --kernel
	rmdir "$CG/child"
	[[ $stderr == *"rdma.max"* && $stderr == *"cgroup.subtree_control"* ]]
}

@test "through the preload: a --pid limit set on a running process applies to its next creation" {
	start_mkobjs -d rxe0 -n 5 -w "$BATS_TEST_TMPDIR/go"
	# what it holds so far is in the ledger
	run -0 "$RDMACTL" -j quota show --pid "$MK"
	run -0 jq -e '.scopes[0].kinds | .ctx.usage == 1 and .pd.usage == 1 and .cq.usage == 1 and .qp.usage == 0' <<<"$output"
	run -0 "$RDMACTL" quota set qp 2 --pid "$MK"
	touch "$BATS_TEST_TMPDIR/go"
	wait "$MK" || true
	run -0 cat "$MKOUT"
	assert_line --regexp "^qp created=2 errno=E"
	assert_output --regexp "refused qp for pid $MK: 2/2 in use, limit set by pid $MK"
	# it exited: nothing is left charged, and its limit is gone with it
	run -0 "$RDMACTL" -j quota show
	run -0 jq -e --argjson p "$MK" '([.scopes[] | select(.scope == "process" and .pid == $p)] | length == 0) and .scopes[0].kinds.qp.usage == 0 and .scopes[0].kinds.pd.usage == 0' <<<"$output"
}

@test "through the preload: a --cgroup ledger limit is one budget for the processes in the cgroup" {
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CG"
	IN_CG=1 start_mkobjs -d rxe0 -n 2 -h "$BATS_TEST_TMPDIR/done"
	local first=$MK
	run -0 grep -x "qp created=2 errno=0" "$MKOUT"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0] | .kinds.qp.usage == 2 and .kinds.qp.headroom == 1 and .nprocs == 1' <<<"$output"
	# a second process in the same cgroup gets what is left
	run -3 env LD_PRELOAD="$PRELOAD" bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -d rxe0 -n 2' _ "$CG" "$MKOBJS"
	assert_line --regexp "^qp created=1 errno=E"
	assert_output --regexp "refused qp for pid [0-9]+: 3/3 in use, limit set by cgroup /${CG##*/}"
	# outside the cgroup: not limited by it
	run -0 env LD_PRELOAD="$PRELOAD" timeout 60 "$MKOBJS" -d rxe0 -n 4
	touch "$BATS_TEST_TMPDIR/done"
	wait "$first"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0].kinds.qp.usage == 0' <<<"$output"
}
