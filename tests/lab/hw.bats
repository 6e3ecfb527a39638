#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The acceptance scripts for real hardware (tests/hw/), run against rxe so that they keep working. They drive
# the same programs the kernel suites test on every kernel (kq, kqdrv): this suite runs on the first kernel only.

load ../helper

KQD=${RDMACTL_TEST_KQDRV:-$BUILD/lab-progs/kqdrv}
PIN=/sys/fs/bpf/rdmactl/kq

setup_file() {
	[ -n "${LAB_GUEST-}" ] || return 0
	load_nic_drivers
}

setup() {
	require_lab
	grep -qw bpf /sys/kernel/security/lsm || { echo "BPF LSM is not active in this lab kernel" >&2; return 1; }
}

teardown() {
	"$RDMACTL" quota gc >/dev/null 2>&1 || true
}

@test "the acceptance script for real hardware (tests/hw/kq-accept) passes against rxe and leaves nothing behind" {
	# the programs are not loaded before it (no limit anywhere): it loads them, and takes them away after
	"$RDMACTL" quota gc >/dev/null 2>&1 || true
	if ! ls "$PIN"/link_* >/dev/null 2>&1; then rm -rf "$PIN"; fi
	[ ! -e "$PIN" ]
	run -0 env RDMACTL="$RDMACTL" KQDRV="$KQD" timeout 600 "$TOP/tests/hw/kq-accept" -d rxe0 -q 4
	assert_line 'kq-accept: every step passed'
	assert_line --regexp '^   PASS: 200 iters in'
	assert_line --regexp '^   PASS: ib_write_bw -q 4 ran'
	assert_line --regexp '^   PASS: ib_write_bw -q 5 failed with exit status [0-9]+'
	# what the kernel counted while ib_write_bw -q 4 ran, and netlink's view of both sides
	assert_line --regexp '^   while it runs: kernel: .*qp 4/4 \(refused 0\)'
	assert_line --regexp '^   while it runs: netlink \(ib_write_bw, both sides\): qp=8 '
	assert_line --regexp '^   kernel after: .*qp 0/4 \(refused 1\)'
	assert_line --regexp '^   PASS: [0-9]+ driver methods that create nothing reached the driver, none refused'
	# nothing behind: no cgroup, no ledger, no programs
	[ -z "$(ls -d /sys/fs/cgroup/rdmactl-accept.* 2>/dev/null)" ]
	[ -z "$(ls /dev/shm/rdmactl-accept.* 2>/dev/null)" ]
	[ ! -e "$PIN" ]
}
