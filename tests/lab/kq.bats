#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Kernel quotas (quota set --kernel with BPF LSM): the kernel refuses the creation past a limit for every
# process of the scope, without any preload: statically linked programs, perftest, legacy write() commands.

load ../helper
load kq

KQV=$BUILD/lab-progs/kqverbs
KQS=$BUILD/lab-progs/kqverbs-static
PIN=/sys/fs/bpf/rdmactl/kq

setup() {
	kq_setup kq
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	"$RDMACTL" quota unset qp --global --kernel 2>/dev/null || true
	sleep 0.2
	rmdir "$CG" 2>/dev/null || true
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

@test "a statically linked program gets exactly the limit of each kind, EDQUOT past it, and keeps running" {
	local kind n
	# kind:limit; each kind in a cgroup of its own, the program asks for 6
	for spec in qp:3 cq:3 pd:2 mr:3 srq:2 mw:2 ah:2 ctx:2; do
		kind=${spec%:*}
		n=${spec#*:}
		mkdir "$CG/$kind"
		run -0 "$RDMACTL" quota set "$kind" "$n" --cgroup "$CG/$kind" --kernel
		run -3 bash -c 'echo $$ >"$1/cgroup.procs" && exec timeout 60 "$2" -k "$3" -n 6' _ "$CG/$kind" "$KQS" "$kind"
		if [ "$kind" = ctx ]; then
			# the kernel refuses the open with EDQUOT; libibverbs then tries other paths and says ENOENT
			assert_line --regexp "^ctx created=$n errno="
		else
			assert_line "$kind created=$n errno=EDQUOT"
		fi
		assert_line "alive"
		# outside that cgroup, the same program is not limited
		run -0 timeout 60 "$KQS" -k "$kind" -n 6
		assert_line "$kind created=6 errno=0"
		rmdir "$CG/$kind"
	done
}

@test "xrcd and wq (rxe has neither): EDQUOT before the driver's answer; a create that fails is not counted" {
	local kind
	run -0 "$RDMACTL" quota set xrcd 0 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota set wq 0 --cgroup "$CG" --kernel
	for kind in xrcd wq; do
		run -3 in_cg timeout 60 "$KQS" -k "$kind" -n 1
		assert_line "$kind created=0 errno=EDQUOT"
		assert_line "alive"
	done
	# under a limit of 1 the requests pass the check and the kernel fails them for rxe (EOPNOTSUPP,
	# EPROTONOSUPPORT) before it allocates an object; a QP past any device's max_qp_wr is refused by the
	# driver after that: the aborted object is given back, the one QP of the limit can still be created
	run -0 "$RDMACTL" quota set xrcd 1 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota set wq 1 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota set qp 1 --cgroup "$CG" --kernel
	for kind in xrcd wq; do
		run -3 in_cg timeout 60 "$KQS" -k "$kind" -n 1
		assert_line --regexp "^$kind created=0 errno=E"
		refute_line "$kind created=0 errno=EDQUOT"
	done
	run -3 in_cg timeout 60 "$KQS" -k qp -n 1 -q $((1 << 30))
	assert_line "qp created=0 errno=EINVAL"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0].kinds | .xrcd.kernel_usage == 0 and .xrcd.kernel_refused == 1 and
		.wq.kernel_usage == 0 and .wq.kernel_refused == 1 and .qp.kernel_usage == 0 and .qp.kernel_refused == 0' <<<"$output"
	run -3 in_cg timeout 60 "$KQS" -k qp -n 2
	assert_line "qp created=1 errno=EDQUOT"
}

@test "mr_bytes: registrations stop at the byte limit; a large one is refused, small ones still pass" {
	run -0 "$RDMACTL" quota set mr_bytes 1M --cgroup "$CG" --kernel
	run -3 in_cg timeout 60 "$KQS" -k mr -s 262144 -n 8
	assert_line "mr created=4 errno=EDQUOT"
	run -3 in_cg timeout 60 "$KQS" -k mr -s 2097152 -n 1
	assert_line "mr created=0 errno=EDQUOT"
	run -0 in_cg timeout 60 "$KQS" -k mr -s 4096 -n 8
	assert_line "mr created=8 errno=0"
}

@test "ib_write_bw -q 4 without the preload fails cleanly in a cgroup with qp 3, passes with 8" {
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CG" --kernel
	timeout 120 ib_write_bw -d rxe0 -x 1 -q 4 -D 2 -p 18710 >"$BATS_TEST_TMPDIR/srv" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 20 bash -c "ss -ltn | grep -q ':18710 '"
	run in_cg timeout 120 ib_write_bw -d rxe0 -x 1 -q 4 -D 2 -p 18710 192.0.2.1
	# a clean failure: an exit status and a message, not a signal
	[ "$status" -ne 0 ] && [ "$status" -lt 128 ] || { echo "status $status" >&2; false; }
	[[ $output == *"QP"* || $output == *"Couldn't"* || $output == *"Unable"* ]]
	kill "${PIDS[0]}" 2>/dev/null || true
	wait "${PIDS[0]}" 2>/dev/null || true
	PIDS=()

	run -0 "$RDMACTL" quota set qp 8 --cgroup "$CG" --kernel
	timeout 120 ib_write_bw -d rxe0 -x 1 -q 4 -D 2 -p 18711 >"$BATS_TEST_TMPDIR/srv2" 2>&1 3>&- &
	local srv=$!
	PIDS+=($srv)
	wait_for 20 bash -c "ss -ltn | grep -q ':18711 '"
	run -0 in_cg timeout 120 ib_write_bw -d rxe0 -x 1 -q 4 -D 2 -p 18711 192.0.2.1
	assert_output --partial "BW average"
	wait "$srv"
}

@test "creating through write() past the limit is killed; ibv_rc_pingpong's sends through write() still work" {
	run -0 "$RDMACTL" quota set pd 2 --cgroup "$CG" --kernel
	run in_cg timeout 60 "$KQV" -k pd -n 6 -w
	[ "$status" = 137 ] || { echo "status $status: $output" >&2; false; }
	[[ $output != *alive* ]]
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0].kinds.pd | .kernel_killed >= 1 and .kernel_usage == 0' <<<"$output"
	# under limits that fit it, pingpong (whose rxe provider posts every send with write()) works
	run -0 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	in_cg timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -p 18712 -n 50 >"$BATS_TEST_TMPDIR/pp" 2>&1 3>&- &
	local srv=$!
	PIDS+=($srv)
	wait_for 20 bash -c "ss -ltn | grep -q ':18712 '"
	run -0 in_cg timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -p 18712 -n 50 192.0.2.1
	assert_output --partial "50 iters"
	wait "$srv"
}

@test "a program that rewrites its ioctl after the check is killed; it never keeps a PD past the limit" {
	run -0 "$RDMACTL" quota set pd 2 --cgroup "$CG" --kernel
	run in_cg timeout 120 "$BUILD/lab-progs/kqrace" -i 1000000
	assert_line "pd held=2 errno=122"
	# killed by the kernel (SIGKILL), not surviving with a PD past the limit ("race won=..." and exit 3)
	[ "$status" = 137 ] || { echo "status $status: $output" >&2; false; }
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0].kinds.pd | .kernel_killed == 1 and .kernel_usage == 0' <<<"$output"
	# outside any limit the same request creates PDs: the rewrite does reach the kernel
	run -3 timeout 60 "$BUILD/lab-progs/kqrace" -c -i 3
	assert_line "race won=3 refused=0 failed=0 (errno 0)"
}

@test "a limit set on a running tenant counts what it already holds; kernel usage equals RDMA netlink" {
	local hold=$BATS_TEST_TMPDIR/release out=$BATS_TEST_TMPDIR/h
	in_cg "$KQV" -k qp -n 4 -H "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 60 grep -q holding "$out"
	# the tenant holds 4 QPs, a CQ, a PD and a context before any limit exists
	run -0 "$RDMACTL" quota set qp 5 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	local j=$output
	for k in qp cq pd ctx; do
		local want
		want=$(nl_count kqverbs "$k")
		run -0 jq -e --arg k "$k" --argjson w "$want" '.scopes[0].kinds[$k].kernel_usage == $w' <<<"$j"
	done
	run -0 jq -e '.scopes[0].kinds.qp | .kernel_usage == 4 and .kernel_limit == 5' <<<"$j"
	# one more fits, the second is refused
	run -3 in_cg timeout 60 "$KQS" -k qp -n 2
	assert_line "qp created=1 errno=EDQUOT"
	touch "$hold"
	wait "${PIDS[0]}"
	PIDS=()
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '[.scopes[0].kinds[] | .kernel_usage // 0] | add == 0' <<<"$output"
}

# No kq program attached: no link pinned, no link of a kq program in the kernel, kq_objs empty.
assert_kq_detached() {
	run -0 bash -c 'ls "$1" | grep "^link_" || true' _ "$PIN"
	assert_output ""
	run -0 bpftool -j link show
	run -0 jq -e '[.[] | select((.prog_name // "") | startswith("kq_"))] | length == 0' <<<"$output"
	run -0 bpftool -j map dump pinned "$PIN/kq_objs"
	run -0 jq -e 'length == 0' <<<"$output"
}

@test "without any kernel limit nothing is attached; the first limit counts what exists from the kernel's lists" {
	local hold=$BATS_TEST_TMPDIR/release out=$BATS_TEST_TMPDIR/h j k want
	# a clean start (the limits of other tests' cgroups go too); one limit set and lifted: loaded, detached
	rm -rf "$PIN"
	run -0 "$RDMACTL" quota set qp 1 --global --kernel
	[ -e "$PIN/link_kq_begin" ]
	run -0 "$RDMACTL" quota unset qp --global --kernel
	assert_kq_detached
	# a tenant makes its objects while nothing is attached: 3 QPs (with a CQ and a PD) in one process,
	# 2 MRs (with a PD) in another, a context each
	in_cg "$KQV" -k qp -n 3 -H "$hold" >"$out.qp" 2>&1 3>&- &
	PIDS+=($!)
	in_cg "$KQV" -k mr -n 2 -s 65536 -H "$hold" >"$out.mr" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 60 grep -q holding "$out.qp"
	wait_for 60 grep -q holding "$out.mr"
	assert_kq_detached
	# the first limit: usage is what RDMA netlink says the tenant holds
	run -0 "$RDMACTL" quota set qp 4 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota set mr 2 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota set mr_bytes 1M --cgroup "$CG" --kernel
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	j=$output
	for k in qp cq pd mr ctx; do
		want=$(nl_count kqverbs "$k")
		run -0 jq -e --arg k "$k" --argjson w "$want" '.scopes[0].kinds[$k].kernel_usage == $w' <<<"$j" ||
			{ echo "$k: netlink $want" >&2; jq -c '.scopes[0].kinds' <<<"$j" >&2; false; }
	done
	run -0 jq -e '.scopes[0].kinds | .qp.kernel_usage == 3 and .mr.kernel_usage == 2 and
		.mr_bytes.kernel_usage == 131072 and .ctx.kernel_usage == 2' <<<"$j"
	# one more QP fits, the next is refused; no MR fits
	run -3 in_cg timeout 60 "$KQS" -k qp -n 2
	assert_line "qp created=1 errno=EDQUOT"
	run -3 in_cg timeout 60 "$KQS" -k mr -n 1
	assert_line "mr created=0 errno=EDQUOT"
	# the destroys of what existed before the limit give it back
	touch "$hold"
	wait "${PIDS[0]}"
	wait "${PIDS[1]}"
	PIDS=()
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '[.scopes[0].kinds[] | .kernel_usage // 0] | add == 0' <<<"$output"
	run -0 in_cg timeout 60 "$KQS" -k qp -n 4
	assert_line "qp created=4 errno=0"
	# the last limit lifted: nothing attached, nothing recorded
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota unset mr --cgroup "$CG" --kernel
	[ -e "$PIN/link_kq_begin" ]
	run -0 "$RDMACTL" quota unset mr_bytes --cgroup "$CG" --kernel
	assert_kq_detached
}

@test "quota unset --kernel lifts the limit; quota show says who enforces each limit" {
	run -0 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota show --cgroup "$CG"
	assert_line --regexp '^  qp +2 +0 +2 +2 +0 +interceptor,kernel$'
	run -3 in_cg timeout 60 "$KQS" -k qp -n 4
	assert_line "qp created=2 errno=EDQUOT"
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
	run -0 in_cg timeout 60 "$KQS" -k qp -n 4
	assert_line "qp created=4 errno=0"
}

@test "descendant cgroups share their ancestor's kernel limit" {
	mkdir "$CG/a" "$CG/b"
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CG" --kernel
	local hold=$BATS_TEST_TMPDIR/release out=$BATS_TEST_TMPDIR/h
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -k qp -n 2 -H "$3"' _ "$CG/a" "$KQV" "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 60 grep -q holding "$out"
	run -3 bash -c 'echo $$ >"$1/cgroup.procs" && exec timeout 60 "$2" -k qp -n 3' _ "$CG/b" "$KQS"
	assert_line "qp created=1 errno=EDQUOT"
	touch "$hold"
	wait "${PIDS[0]}"
	PIDS=()
	rmdir "$CG/a" "$CG/b"
}

@test "--pid and --global --kernel" {
	# the limit is on the shell's pid, which then becomes the program
	run -3 timeout 60 bash -c '"$1" quota set qp 2 --pid $$ --kernel && exec "$2" -k qp -n 5' _ "$RDMACTL" "$KQS"
	assert_line "qp created=2 errno=EDQUOT"
	run -0 "$RDMACTL" quota set qp 4 --global --kernel
	run -3 timeout 60 "$KQS" -k qp -n 6
	assert_line "qp created=4 errno=EDQUOT"
	run -0 "$RDMACTL" quota unset qp --global --kernel
	run -0 timeout 60 "$KQS" -k qp -n 6
}

@test "the programs stay pinned without a daemon; an unprivileged user can neither change limits nor remove them" {
	run -0 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	[ -e "$PIN/link_kq_ioctl" ]
	[ -e "$PIN/kq_limits" ]
	run -0 bpftool -j link show
	run -0 jq -e '[.[] | select(.prog_type == "lsm")] | length >= 3' <<<"$output"
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 100 --cgroup "$CG" --kernel
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
	run "${nobody[@]}" rm -f "$PIN/link_kq_ioctl"
	[ "$status" -ne 0 ]
	run "${nobody[@]}" bpftool map dump pinned "$PIN/kq_limits"
	[ "$status" -ne 0 ]
	[ -e "$PIN/link_kq_ioctl" ]
	run -3 in_cg timeout 60 "$KQS" -k qp -n 4
	assert_line "qp created=2 errno=EDQUOT"
}

@test "every kernel refusal and kill appears in monitor (pid, scope, kind) and in top's DENY column" {
	run -0 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota set pd 1 --cgroup "$CG" --kernel
	local mon=$BATS_TEST_TMPDIR/mon
	"$RDMACTL" monitor -j >"$mon" 2>"$mon.err" 3>&- &
	local monpid=$!
	PIDS+=($monpid)
	wait_for 60 grep -q '"event":"start"' "$mon" || { cat "$mon.err" >&2; false; }
	sleep 2.5 # the monitor looks for the kernel's maps every 2 s
	local hold=$BATS_TEST_TMPDIR/release out=$BATS_TEST_TMPDIR/h
	# (bash -c, not the in_cg function: $! must be the program's own pid)
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -k qp -n 5 -H "$3"' _ "$CG" "$KQV" "$hold" >"$out" 2>&1 3>&- &
	local qpid=$!
	PIDS+=($qpid)
	wait_for 60 grep -q holding "$out"
	run -0 cat "$out"
	assert_line "qp created=2 errno=EDQUOT"
	# a legacy write() past the PD limit (one is held by kqverbs -k pd itself): killed
	run in_cg timeout 60 "$KQV" -k pd -n 3 -w
	[ "$status" = 137 ]
	wait_for 20 grep -q '"event":"killed"' "$mon"
	# (the monitor is still writing: a line it has not finished is skipped, not an error)
	jq -neR --argjson p "$qpid" --arg cg "${CG#/sys/fs/cgroup}" '[inputs | fromjson? | select(.event == "refused" and
		.pid == $p and .type == "qp" and .scope == "cgroup" and .cgroup == $cg and .limit == 2)] | length == 1' \
		"$mon" || { grep -v '"create"\|"destroy"' "$mon" >&2; echo "pid $qpid" >&2; false; }
	jq -neR --arg cg "${CG#/sys/fs/cgroup}" '[inputs | fromjson? | select(.event == "killed" and .type == "pd" and
		.cgroup == $cg and .limit == 1)] | length == 1' "$mon" || { grep -v '"create"\|"destroy"' "$mon" >&2; false; }
	# top: the holder's row counts its refusal
	run -0 "$RDMACTL" top -b -n1 -j --pid "$qpid"
	run -0 jq -e '.processes[0].quota.recent_denials >= 1' <<<"$output"
	touch "$hold"
	wait "$qpid" || true # exit 3: it got 2 of the 5 QPs it asked for
	kill -INT "$monpid"
	wait "$monpid"
	PIDS=()
	tail -n 1 "$mon" | jq -e '.event == "summary" and .denials >= 2'
}

@test "run --kernel: the job's own cgroup carries its limits for programs the interceptor cannot see, and goes after" {
	run -3 "$RDMACTL" run --kernel --job kqjob.$$ --max-qp 3 --max-mr-bytes 64K -- "$KQS" -k qp -n 6
	assert_line "qp created=3 errno=EDQUOT"
	run -3 "$RDMACTL" run --kernel --job kqjob.$$ --max-mr-bytes 64K -- "$KQS" -k mr -s 16384 -n 6
	assert_line "mr created=4 errno=EDQUOT"
	# below --cgroup: the job's cgroup is a child of it, removed when the job is done
	run -3 "$RDMACTL" run --kernel --cgroup "$CG" --job kqjob.$$ --max-cq 2 -- "$KQS" -k cq -n 4
	assert_line "cq created=2 errno=EDQUOT"
	[ ! -e "$CG/rdmactl-job-kqjob.$$" ]
	[ ! -e "/sys/fs/cgroup/rdmactl-job-kqjob.$$" ]
	# and nothing stays in the kernel's limits for the removed cgroups
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	local before=$output
	run -3 "$RDMACTL" run --kernel --job kqjob.$$ --max-pd 1 -- "$KQS" -k pd -n 2
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	assert_equal "$(jq length <<<"$output")" "$(jq length <<<"$before")"
}

@test "quota gc removes the kernel limits of processes and cgroups that are gone" {
	mkdir "$CG/gone"
	run -0 "$RDMACTL" quota set qp 5 --cgroup "$CG/gone" --kernel
	run -0 "$RDMACTL" quota set qp 7 --cgroup "$CG" --kernel
	sleep 30 &
	local p=$!
	run -0 "$RDMACTL" quota set qp 5 --pid "$p" --kernel
	kill "$p"; wait "$p" 2>/dev/null || true
	rmdir "$CG/gone"
	run -0 "$RDMACTL" -j quota gc
	run -0 jq -e '.kernel_scopes_removed >= 2' <<<"$output"
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	run -0 jq -e --argjson p "$p" '[.[] | select(.formatted.key.type == 2 and .formatted.key.id % 4194304 == $p)] | length == 0' <<<"$output"
	# the live cgroup keeps its limit
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0].kinds.qp.kernel_limit == 7' <<<"$output"
}

@test "a 32-bit program's uverbs ioctls (the compat path) are refused to a process with kernel limits" {
	run "$BUILD/lab-progs/kqcompat32"
	[ "$status" = 22 ] || { echo "outside: status $status" >&2; false; } # the kernel's own EINVAL
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CG" --kernel
	run in_cg "$BUILD/lab-progs/kqcompat32"
	[ "$status" = 122 ] || { echo "inside: status $status" >&2; false; } # EDQUOT
}
