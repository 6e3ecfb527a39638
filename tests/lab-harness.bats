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

@test "LAB_KERNEL picks the kernel: backports boots a newer one than stable; an unknown name is refused" {
	run -1 env LAB_KERNEL=bogus "$TOP/tests/lab/run" -- true
	assert_output --partial "LAB_KERNEL=bogus: use 'stable' or 'backports'"
	# One boot each (stderr has "lab: downloading ..." on a fresh clone): the kernel, its clock the TSC (not
	# the emulated HPET), and no address space randomization (norandmaps: TCG translates a library once).
	local k release=()
	for k in stable backports; do
		run --separate-stderr env LAB_KERNEL=$k "$TOP/tests/lab/run" -- bash -c \
			'uname -r; cat /sys/devices/system/clocksource/clocksource0/current_clocksource /proc/sys/kernel/randomize_va_space'
		[ "$status" -eq 0 ] || { echo "$stderr"; false; }
		assert_equal "${lines[1]}" tsc
		assert_equal "${lines[2]}" 0
		release+=("${lines[0]}")
	done
	[[ ${release[0]} == 6.1.* ]]
	[[ ${release[1]} != 6.1.* && ${release[1]} == [6-9].* ]]
}

@test "LAB_ICOUNT boots one vCPU with an instruction-counting clock; the lab works there; a bad value is refused" {
	run -2 env LAB_ICOUNT=x "$TOP/tests/lab/run" -- true
	assert_output --partial "LAB_ICOUNT=x: use a shift from 0 to 19"
	run --separate-stderr env LAB_ICOUNT=0 "$TOP/tests/lab/run" -- \
		bash -c 'nproc; rdma link show rxe0/1; cat /sys/devices/system/clocksource/clocksource0/current_clocksource'
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	assert_line --index 0 1
	assert_line --index 1 --partial "state ACTIVE"
	assert_line --index 2 tsc
}

@test "a guest that does not come up within LAB_BOOT_TIMEOUT is booted once more, then the run fails" {
	run --separate-stderr env LAB_BOOT_TIMEOUT=2 "$TOP/tests/lab/run" -- true
	[ "$status" -eq 125 ]
	[ "$(grep -c 'did not come up within 2s' <<<"$stderr")" -eq 2 ]
	grep -q 'attempt 1' <<<"$stderr"
	grep -q 'attempt 2' <<<"$stderr"
}

@test "a guest that stops before it comes up (a panic at boot) is booted once more, then the run fails" {
	# no init: the kernel panics at every boot, before the guest is up
	run --separate-stderr env LAB_KERNEL_ARGS=rdinit=/nonexistent "$TOP/tests/lab/run" -- true
	[ "$status" -eq 125 ]
	[ "$(grep -c 'stopped before it came up' <<<"$stderr")" -eq 1 ]
	grep -q 'attempt 1' <<<"$stderr"
	grep -q 'the guest stopped without a result' <<<"$stderr"
	grep -q 'Kernel panic' <<<"$stderr"
}
