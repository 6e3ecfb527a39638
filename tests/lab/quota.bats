#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl quota in the lab through the preload: pid and cgroup limits on running processes (the kernel's
# own enforcement is in kq.bats, and rdma.max where BPF LSM is not active in nolsm/rdmacg.bats).

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
