#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl top on the host: options, usage errors, and the no-device case (the host has no RDMA device).

load helper

no_rdma_here() {
	[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] || skip "this machine has RDMA devices"
}

@test "top --help: options, sort keys and examples" {
	run -0 "$RDMACTL" top --help
	assert_line --index 0 --regexp "^Usage: rdmactl top "
	for o in --batch --iterations=COUNT --delay=SECONDS --sort=KEY --reverse --pid=PID --dev=DEV --user=USER \
		--comm=COMM --ledger=PATH --json; do
		assert_output --partial -- "$o"
	done
	assert_output --regexp "qp, mr, mr_bytes, cq, pd, ctx, srq,[[:space:]]+cm_id"
	assert_output --partial "Examples:"
	assert_output --partial "rdmactl top -b -n 1 -j"
}

@test "top usage errors exit 2 with a message on stderr" {
	local args
	for args in "-n 0" "-n abc" "-n -1" "-d -1" "-d abc" "-d 1e9" "-d nan" "--pid 0" "--pid abc" "-s foo" \
		"extra" "--user no_such_user_hopefully" "--frob" "--ledger" "--ledger="; do
		run -2 --separate-stderr "$RDMACTL" top -b $args
		assert_equal "$output" ""
		[ -n "$stderr" ] || { echo "no message for: $args"; false; }
	done
	run -2 --separate-stderr "$RDMACTL" top -s m
	[[ $stderr == *"sort key 'm' is ambiguous: could be 'mr', 'mr_bytes'"* ]]
	run -2 --separate-stderr "$RDMACTL" top -s foo
	[[ $stderr == *"unknown sort key 'foo'"* ]]
	run -2 --separate-stderr "$RDMACTL" top -n 0
	[[ $stderr == *"invalid COUNT '0'"* ]]
}

@test "top without RDMA devices: clear message with how to get one, exit 1, stdout clean" {
	no_rdma_here
	local mode
	for mode in "-b -n1" "-b -n1 -j" "" "-j" "-s mr_bytes --pid 1 --user root --comm x --dev rxe0"; do
		run -1 --separate-stderr "$RDMACTL" top $mode
		assert_equal "$output" ""
		[[ $stderr == "rdmactl top: no RDMA devices"* ]]
		[[ $stderr == *"modprobe rdma_rxe"* && $stderr == *"rdma link add rxe0 type rxe netdev"* ]]
	done
}

@test "top accepts global options after the subcommand and unique prefixes of sort keys" {
	no_rdma_here
	# Parsing succeeds (exit 1 = no device, not 2 = usage).
	run -1 "$RDMACTL" top -j -p -v -s mr_b -r -d 0.5 -n 3 --pid 1 --pid 2 --user 0
	run -1 "$RDMACTL" -j top -b
}

@test "completion: top's options, sort keys, users" {
	run complete_words rdmactl top --s
	assert_output "--sort"
	run complete_words rdmactl top -
	for o in -b --batch -n --iterations -d --delay -s -r --reverse --pid --dev --user --comm --ledger -j --json; do
		assert_line -- "$o"
	done
	run complete_words rdmactl top -s mr
	assert_output "$(printf '%s\n' mr mr_bytes)"
	run complete_words rdmactl t -b --sort c
	assert_output "$(printf '%s\n' cm_id comm cq ctx)"
	run complete_words rdmactl top --user roo
	assert_line "root"
	run complete_words rdmactl top -n ""
	assert_output ""
	run complete_words rdmactl top --pid $$
	assert_line "$$"
}

@test "top --ledger: completes file names; a missing ledger is no error (host: no device either way)" {
	touch "$BATS_TEST_TMPDIR/ledger.x"
	run complete_words rdmactl top --ledger "$BATS_TEST_TMPDIR/ledger."
	assert_output "$BATS_TEST_TMPDIR/ledger.x"
	# without RDMA devices the failure is about devices, never about the ledger
	run -1 --separate-stderr "$RDMACTL" top -b -n1 -j --ledger "$BATS_TEST_TMPDIR/none"
	assert_equal "$output" ""
	[[ $stderr != *ledger* ]]
}
