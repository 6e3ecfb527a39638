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
	# run, not run -0: on a failure assert_success prints the script's whole report, so the reason is in the log
	run env RDMACTL="$RDMACTL" KQDRV="$KQD" timeout 600 "$TOP/tests/hw/kq-accept" -d rxe0 -q 4
	assert_success
	assert_line 'kq-accept: every step passed'
	assert_line --regexp '^   PASS: 200 iters in'
	assert_line --regexp '^   PASS: ib_write_bw -q 4 ran'
	assert_line --regexp '^   PASS: ib_write_bw -q 5 failed with exit status [0-9]+'
	# what the kernel counted while ib_write_bw -q 4 ran, and netlink's view of both sides
	assert_line --regexp '^   while it runs: kernel: .*qp 4/4 \(refused 0\)'
	assert_line --regexp '^   while it runs: netlink \(ib_write_bw, both sides\): qp=8 '
	assert_line --regexp '^   kernel after: .*qp 0/4 \(refused 1\)'
	# UCX (make deps installs Debian's ucx-utils; CI has it): tag_lat over RC with its UD wire-up, on the GID
	# rdmactl pingpong chose, under the limit: the client holds one UD and one RC QP of the 4
	if command -v ucx_perftest >/dev/null || [ "${CI-}" = true ]; then
		assert_line --regexp '^   UCX [0-9.]+ on rxe0:1, GID 1 \(as rdmactl pingpong chose it'
		# (the one refusal is step 4's, ib_write_bw -q 5)
		assert_line --regexp '^   while it runs: kernel: .*qp 2/4 \(refused 1\)'
		assert_line --regexp '^   while it runs: netlink \(the client\): qp=2 \(RC 1, UD 1\)'
		assert_line --regexp '^   PASS: ucx_perftest tag_lat ran under the limits \([0-9]+ iterations'
	else
		assert_line --regexp '^   SKIP: no ucx_perftest here'
	fi
	assert_line --regexp '^   PASS: [0-9]+ driver methods that create nothing reached the driver, none refused'
	# nothing behind: no cgroup, no ledger, no programs
	[ -z "$(ls -d /sys/fs/cgroup/rdmactl-accept.* 2>/dev/null)" ]
	[ -z "$(ls /dev/shm/rdmactl-accept.* 2>/dev/null)" ]
	[ ! -e "$PIN" ]
}

# A stand-in for ucx_perftest (python3): the server takes one connection; the client connects, then fails as
# KQ_STUB_UCX says: "broken" always (as UCX 1.13 over an IPv4 GID of rxe did), "limited" only from the
# script's scratch cgroup, else it passes.
stub_ucx() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/ucx_perftest" <<'EOF'
#!/usr/bin/python3
import os, socket, sys
a = sys.argv[1:]
port = int(a[a.index('-p') + 1])
host = a[-1] if len(a) % 2 else None
if host is None:
    s = socket.create_server(('', port))
    s.settimeout(60)
    s.accept()
    sys.exit(0)
socket.create_connection((host, port)).close()
mode = os.environ.get('KQ_STUB_UCX')
if mode == 'broken':
    print('[lab:1:0:1]  ud_ep.c:276  Fatal: UD endpoint 0x1 to <no debug data>: unhandled timeout error')
    sys.exit(134)
if mode == 'limited' and 'rdmactl-accept' in open('/proc/self/cgroup').read():
    print('[1.0] [lab:1 :0]  ib_iface.c:1 UCX  ERROR ibv_create_qp() failed: Disk quota exceeded')
    sys.exit(1)
print('Final:                  1000      1.000    10.000    10.000        0.77       0.77      100000      100000')
EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/ucx_perftest"
}

@test "kq-accept: when ucx_perftest fails without any limit too, the UCX step is a SKIP that says why" {
	stub_ucx
	run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" KQ_STUB_UCX=broken RDMACTL="$RDMACTL" timeout 300 \
		"$TOP/tests/hw/kq-accept" -d rxe0 -q 4 -s ucx
	assert_success
	assert_line --regexp '^   SKIP: ucx_perftest fails here without any limit too, so UCX cannot be tested on rxe0: .*Fatal: UD endpoint .*unhandled timeout error'
	assert_line 'kq-accept: every step passed'
	refute_line --partial 'ibv_rc_pingpong'
}

@test "kq-accept: when ucx_perftest fails under the limits only, the UCX step fails and the report says why" {
	stub_ucx
	run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" KQ_STUB_UCX=limited RDMACTL="$RDMACTL" timeout 300 \
		"$TOP/tests/hw/kq-accept" -d rxe0 -q 4 -s ucx
	assert_failure 1
	assert_line --regexp '^   FAIL: ucx_perftest under the limits \(exit status 1: .*Disk quota exceeded\), though it runs without them'
	assert_line 'kq-accept: 1 step(s) failed'
}
