#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The lab runner itself, from the host: output and status come back, the lab fails without rdma_rxe,
# and a run cannot outlive its timeout.

load helper

@test "tests/lab/run returns stdout, stderr and the exit status separately" {
	run --separate-stderr "$TOP/tests/lab/run" -- bash -c 'echo "out $(uname -r)"; echo "err $PWD" >&2; exit 7'
	assert_equal "$status" 7
	assert_output --regexp '^out [0-9]+\.[0-9]+\.[0-9]+-[0-9]+-amd64$'
	[[ $stderr == *"err $PWD"* ]]
	# The guest kernel is not the host's.
	[[ $output != "out $(uname -r)" ]]
}

@test "without rdma_rxe the lab tests fail (not skip)" {
	run "$TOP/tests/lab/run" --no-rxe -- tests/lab/check -f 'rxe0 is ACTIVE' tests/lab/00-lab.bats
	assert_failure
	assert_output --partial "not ok 1 rxe0 is ACTIVE on veth0"
	refute_output --regexp '# skip'
}

@test "a lab run that overstays its timeout is killed and reported" {
	SECONDS=0
	run "$TOP/tests/lab/run" --timeout 25 -- sleep 600
	assert_equal "$status" 125
	assert_output --partial "timed out after 25s"
	[ "$SECONDS" -lt 60 ]
}

@test "tests/lab/run rejects unknown options with a usage error" {
	run -2 "$TOP/tests/lab/run" --bogus true
	assert_output --partial "unknown option '--bogus'"
}

@test "lab suites fail, not skip, outside the lab" {
	run env -u LAB_GUEST bats --formatter tap "$TOP/tests/lab/00-lab.bats"
	assert_failure
	assert_output --partial "runs inside the soft-RoCE lab"
	refute_output --regexp '# skip'
}
