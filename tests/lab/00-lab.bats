#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The lab itself: rxe0 up, rdma-core pingpong over a RoCE v2 GID, netlink resource view, rdma cgroup.

load ../helper

setup() {
	require_lab
}

teardown() {
	pkill -x ibv_rc_pingpong 2>/dev/null || true
}

@test "rxe0 is ACTIVE on veth0" {
	run rdma link show rxe0/1
	assert_success
	assert_output --partial "state ACTIVE"
	assert_output --partial "netdev veth0"
	run ibv_devinfo -d rxe0
	assert_success
	assert_output --partial "PORT_ACTIVE"
}

@test "GID 1 of rxe0 is the IPv4-mapped RoCE v2 GID of 192.0.2.1" {
	run cat /sys/class/infiniband/rxe0/ports/1/gids/1 /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1
	assert_success
	assert_line --index 0 "0000:0000:0000:0000:0000:ffff:c000:0201"
	assert_line --index 1 "RoCE v2"
}

@test "rdma-core ibv_rc_pingpong passes over rxe0 with -g 1" {
	timeout 30 ibv_rc_pingpong -d rxe0 -g 1 -n 100 >"$BATS_TEST_TMPDIR/srv" 2>&1 3>&- &
	local srv=$!
	# the server listens on TCP 18515 for the address exchange (a fixed sleep was too short under load)
	wait_for 20 bash -c 'ss -Hltn "sport = :18515" | grep -q .'
	run timeout 30 ibv_rc_pingpong -d rxe0 -g 1 -n 100 192.0.2.1
	assert_success
	assert_output --regexp "819200 bytes in [0-9.]+ seconds"
	assert_output --partial "100 iters in"
	wait $srv
	run cat "$BATS_TEST_TMPDIR/srv"
	assert_output --partial "100 iters in"
}

@test "rdma res show qp sees the QP of a running program" {
	# No timeout(1) wrapper: $! must be the program itself; teardown kills it.
	ibv_rc_pingpong -d rxe0 -g 1 -p 18600 >/dev/null 2>&1 3>&- &
	local srv=$!
	wait_for 10 bash -c "rdma res show qp | grep -q 'pid $srv '"
	run rdma -j res show qp
	assert_success
	run jq -e --argjson p "$srv" '[.[] | select(.pid == $p and .comm == "ibv_rc_pingpong" and .type == "RC")] | length == 1' <<<"$output"
	assert_success
	run rdma -j res show pd
	run jq -e --argjson p "$srv" '[.[] | select(.pid == $p)] | length >= 1' <<<"$output"
	assert_success
	kill $srv
}

@test "cgroup v2 rdma controller is present with rxe0 in rdma.max" {
	run cat /sys/fs/cgroup/cgroup.controllers
	assert_output --partial rdma
	local cg=/sys/fs/cgroup/labtest.$$
	mkdir "$cg"
	run cat "$cg/rdma.max"
	rmdir "$cg"
	assert_success
	assert_output --partial "rxe0 hca_handle=max hca_object=max"
}
