# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What kqattack.bats and kqset.bats share: the programs they run, a ledger and a cgroup per test, and a
# teardown that leaves no kernel limit, device or pin of theirs behind.

KQS=$BUILD/lab-progs/kqverbs-static
KQA=$BUILD/lab-progs/kqattack
KQU=$BUILD/lab-progs/kquring
KQK=$BUILD/lab-progs/kqkillpop
PIN=/sys/fs/bpf/rdmactl/kq

setup() {
	kq_setup kqa
	# the kernel limits other suites left on processes and cgroups that are gone (a process limit anywhere
	# counts on every path)
	"$RDMACTL" quota gc >/dev/null 2>&1 || true
	PIDS=()
	DEVS=()
}

teardown() {
	local p d
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for k in qp pd; do "$RDMACTL" quota unset "$k" --global --kernel 2>/dev/null || true; done
	for d in "${DEVS[@]}"; do
		rdma link delete "kqrxe$d" 2>/dev/null || true
		ip link del "kqv$d" 2>/dev/null || true
	done
	sleep 0.2
	# the cgroups, deepest first; then the kernel's limits of those that are gone
	find "$CG" "$CG".* -depth -type d -exec rmdir {} \; 2>/dev/null || true
	"$RDMACTL" quota gc >/dev/null 2>&1 || true
	# programs a test loaded with a table of its own size: the next test loads them as they come
	if [ -n "${KQ_RELOAD:-}" ]; then rm -rf "$PIN"; fi
	rm -rf "/tmp/kqa-free.$$"
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

steps_in() {
	INCG=$2 in_cg "$KQA" steps -S "$BATS_TEST_TMPDIR/$1" -c 2 >"$BATS_TEST_TMPDIR/$1" 2>&1 3>&- &
	wait_for 60 grep -q warm "$BATS_TEST_TMPDIR/$1" || { cat "$BATS_TEST_TMPDIR/$1" >&2; false; }
	SPID=$(sed -n 's/^warm pid=//p' "$BATS_TEST_TMPDIR/$1")
	PIDS+=("$SPID")
}

# Let steps program $1 take step $2; its line for that step must be $3.
step() {
	touch "$BATS_TEST_TMPDIR/$1.$2"
	wait_for 60 grep -q "^step $2 " "$BATS_TEST_TMPDIR/$1" || { cat "$BATS_TEST_TMPDIR/$1" >&2; false; }
	grep -qx "$3" "$BATS_TEST_TMPDIR/$1" || { cat "$BATS_TEST_TMPDIR/$1" >&2; echo "expected: $3" >&2; false; }
}

# Run "$@" in the background as pid $1 (the kernel's next pid set through ns_last_pid; tried a few times, as
# another process may fork in between); its output in $BATS_TEST_TMPDIR/reuse. Fails when it never got $1.
