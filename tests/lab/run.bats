#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl run and the interceptor against real rxe objects, with rdma-core and perftest programs as the apps.

load ../helper

LQ=$BUILD/lab-progs/ledgerq
EXV=$BUILD/lab-progs/exverbs
DLV=$BUILD/lab-progs/dlverbs

setup() {
	require_lab
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	"$RDMACTL" quota init >/dev/null 2>&1 || true
}

teardown() {
	pkill -x ib_write_bw 2>/dev/null || true
	pkill -x rping 2>/dev/null || true
	pkill -f '^ibv_srq_pingpong' 2>/dev/null || true
	pkill -f "$BUILD/lab-progs/" 2>/dev/null || true
	sleep 0.2
	if [ -n "${CG:-}" ]; then
		[ ! -d "$CG/leaf" ] || rmdir "$CG/leaf" || true
		wait_for 5 rmdir "$CG" 2>/dev/null || true
	fi
}

# A cgroup of its own for one test ($CG, under the guest's cgroup2 mount; removed by teardown).
make_cg() {
	CG=/sys/fs/cgroup/rdmactl-run.$$.$BATS_TEST_NUMBER
	mkdir "$CG"
}

# $status is a failure the program chose: not 0, not a timeout, not death by a signal.
failed_cleanly() {
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ] && { [ "$status" -le 128 ] || [ "$status" -gt 192 ]; }
}

# Wait until something listens on TCP port $1 (a perftest/rdma-core server ready for its client).
wait_listen() {
	wait_for 20 bash -c "ss -Hltn 'sport = :$1' | grep -q ."
}

# The newest descendant of pid $1 whose command line starts with $2 (an app under timeout + rdmactl).
app_pid() {
	pgrep -n -f "^$2" | while read -r p; do
		local q=$p
		while [ "$q" -gt 1 ]; do
			if [ "$q" = "$1" ]; then
				echo "$p"
				return
			fi
			q=$(awk '{print $4}' "/proc/$q/stat" 2>/dev/null || echo 1)
		done
	done
}

# Objects of one kind the kernel holds for process $1 (any of its threads: RES_PID is the thread id).
kernel_count() {
	local tids
	tids=$(ls "/proc/$1/task" | paste -sd, -)
	rdma -j res show "$2" | jq --argjson t "[$tids]" '[.[] | select(.pid != null and (.pid as $p | $t | index($p)))] | length'
}

kernel_mr_bytes() {
	local tids
	tids=$(ls "/proc/$1/task" | paste -sd, -)
	rdma -j res show mr | jq --argjson t "[$tids]" '[.[] | select(.pid != null and (.pid as $p | $t | index($p))) | .mrlen] | add // 0'
}

# Objects of one kind the kernel holds for user processes, whoever they are.
kernel_count_all() {
	rdma -j res show "$1" | jq '[.[] | select(.pid != null)] | length'
}

ledger_use() { # pid kind
	"$LQ" pid "$1" | awk -v k="$2" '$1 == k { print $2 }'
}

# Ledger usage of process $1 equals the kernel's, per kind. Prints the first difference.
same_as_kernel() {
	local k a b snap
	snap=$("$LQ" pid "$1") || { echo "pid $1 not in the ledger"; return 1; }
	echo "$snap" >"$BATS_TEST_TMPDIR/snap"
	for k in ctx pd cq qp srq mr; do
		a=$(kernel_count "$1" $k) b=$(awk -v k=$k '$1 == k { print $2 }' <<<"$snap")
		[ "$a" = "$b" ] || { echo "$k: kernel $a ledger $b"; return 1; }
	done
	a=$(kernel_mr_bytes "$1") b=$(awk '$1 == "mr_bytes" { print $2 }' <<<"$snap")
	[ "$a" = "$b" ] || { echo "mr_bytes: kernel $a ledger $b"; return 1; }
	[ "$(awk '$1 == "ctx" { print $2 }' <<<"$snap")" -ge 1 ] || { echo "holds nothing"; return 1; }
}

# Wait (up to ~20 tries) until process $1, quiescent, holds in the ledger exactly what the kernel shows.
# Creation in progress is not a difference; a difference that never settles is. Not vacuous: ctx >= 1.
# The process is stopped while it is compared, so it can neither change nor exit half-way through the
# comparison (which takes seconds in the emulator); between tries it runs on.
check_same_as_kernel() {
	local i last= rc
	for i in $(seq 20); do
		kill -STOP "$1" 2>/dev/null ||
			{ echo "process $1 is gone; differences seen:"; cat "$BATS_TEST_TMPDIR/diffs"; return 1; }
		last=$(same_as_kernel "$1" 2>&1) && rc=0 || rc=1
		kill -CONT "$1"
		[ $rc = 1 ] || return 0
		echo "$(date +%T.%N) $last" >>"$BATS_TEST_TMPDIR/diffs"
		sleep 0.2
	done
	cat "$BATS_TEST_TMPDIR/diffs"
	return 1
}

# Usage of job $1 is zero everywhere, or the job is gone.
job_is_empty() {
	run "$LQ" job "$1"
	if [ "$status" -eq 3 ]; then
		return 0
	fi
	assert_success
	run awk '$1 != "nprocs" && $2 != 0' <<<"$output"
	assert_output ""
}

@test "ib_write_bw -q 4 under --max-qp 2: the client is refused cleanly (one line), its peer is unaffected" {
	timeout 40 ib_write_bw -d rxe0 -x 1 -q 4 -n 50 >"$BATS_TEST_TMPDIR/srv" 2>&1 3>&- &
	local srv=$!
	wait_listen 18515
	run --separate-stderr timeout 40 "$RDMACTL" run --job wbw --max-qp 2 -- ib_write_bw -d rxe0 -x 1 -q 4 -n 50 192.0.2.1
	failed_cleanly
	grep -q "Unable to create QP" <<<"$stderr"
	run grep -E '^rdmactl: refused qp for pid [0-9]+ \(job wbw\): 2/2 in use, limit set by job wbw$' <<<"$stderr"
	assert_success
	[ "$(grep -c '^rdmactl: refused' <<<"$stderr")" -eq 1 ] # rate-limited: one line
	kill $srv 2>/dev/null || true
	wait $srv || true
	job_is_empty wbw
}

@test "ib_write_bw -q 4 under --max-qp 8 passes, and while it runs the ledger matches the kernel" {
	timeout 150 ib_write_bw -d rxe0 -x 1 -q 4 -n 2000 >"$BATS_TEST_TMPDIR/srv" 2>&1 3>&- &
	local srv=$!
	wait_listen 18515
	timeout 150 "$RDMACTL" run --job wbw8 --max-qp 8 -- ib_write_bw -d rxe0 -x 1 -q 4 -n 2000 192.0.2.1 \
		>"$BATS_TEST_TMPDIR/cli" 2>&1 3>&- &
	local cli=$!
	local pid=
	# timeout -> rdmactl run -> ib_write_bw
	wait_for 20 bash -c "p=\$(pgrep -P $cli) && pgrep -P \$p >'$BATS_TEST_TMPDIR/wbw.pid'"
	pid=$(cat "$BATS_TEST_TMPDIR/wbw.pid")
	# all four QPs are made (the comparison must not settle on the setup before them)
	wait_for 30 bash -c "'$LQ' pid $pid | grep -q '^qp 4 '" || { cat "$BATS_TEST_TMPDIR/cli"; false; }
	check_same_as_kernel "$pid" || { cat "$BATS_TEST_TMPDIR/cli"; false; }
	run cat "$BATS_TEST_TMPDIR/snap" # the usage that matched the kernel
	assert_line --regexp "^qp 4 "
	wait $cli
	run cat "$BATS_TEST_TMPDIR/cli"
	assert_output --partial "BW average"
	refute_output --partial "rdmactl: refused"
	wait $srv
	job_is_empty wbw8
}

@test "--max-mr-bytes below ib_write_bw -s fails at memory registration" {
	timeout 40 ib_write_bw -d rxe0 -x 1 -n 10 -s 65536 >/dev/null 2>&1 3>&- &
	wait_listen 18515
	run --separate-stderr timeout 40 "$RDMACTL" run --job mrb --max-mr-bytes 32K -- \
		ib_write_bw -d rxe0 -x 1 -n 10 -s 65536 192.0.2.1
	failed_cleanly
	grep -q "Couldn't allocate MR" <<<"$stderr" || { echo "$stderr"; false; }
	run grep -E '^rdmactl: refused mr_bytes for pid [0-9]+ \(job mrb\): 0/32768 in use, limit set by job mrb$' <<<"$stderr"
	assert_success
	job_is_empty mrb
}

@test "rping (librdmacm) under --max-qp 0 fails cleanly; the ledger matches the kernel while it listens" {
	timeout 40 "$RDMACTL" run --job rps -- rping -s -a 192.0.2.1 -C 3 >/dev/null 2>&1 3>&- &
	local srv=$!
	wait_for 10 bash -c "pgrep -x rping >/dev/null"
	check_same_as_kernel "$(pgrep -x rping)"
	run --separate-stderr timeout 40 "$RDMACTL" run --job rpc --max-qp 0 -- rping -c -a 192.0.2.1 -C 3
	failed_cleanly
	run grep -E '^rdmactl: refused qp for pid [0-9]+ \(job rpc\): 0/0 in use, limit set by job rpc$' <<<"$stderr"
	assert_success
	# the server is still fine: a client without limits gets its 3 pings through
	run timeout 40 rping -c -a 192.0.2.1 -C 3 -v
	assert_success
	assert_output --partial "ping data"
	wait $srv || true
	job_is_empty rps
	job_is_empty rpc
}

@test "ibv_srq_pingpong under limits: passes within them, the ledger matches the kernel, refused below them" {
	timeout 60 "$RDMACTL" run --job srqs --max-qp 16 --max-srq 1 -- ibv_srq_pingpong -d rxe0 -g 1 -n 20 \
		>"$BATS_TEST_TMPDIR/srv" 2>&1 3>&- &
	local srv=$!
	wait_for 10 bash -c "pgrep -f '^ibv_srq_pingpong' >/dev/null"
	local pid
	pid=$(pgrep -f '^ibv_srq_pingpong')
	check_same_as_kernel "$pid"
	[ "$(ledger_use "$pid" srq)" -eq 1 ]
	[ "$(ledger_use "$pid" qp)" -eq 16 ]
	run timeout 60 "$RDMACTL" run --job srqc --max-qp 16 -- ibv_srq_pingpong -d rxe0 -g 1 -n 20 192.0.2.1
	assert_success
	assert_output --partial "20 iters in"
	wait $srv
	job_is_empty srqs
	# 16 QPs wanted, 8 allowed
	run --separate-stderr timeout 30 "$RDMACTL" run --job srq8 --max-qp 8 -- ibv_srq_pingpong -d rxe0 -g 1 -p 18600
	failed_cleanly
	run grep -E '^rdmactl: refused qp for pid [0-9]+ \(job srq8\): 8/8 in use' <<<"$stderr"
	assert_success
	job_is_empty srq8
}

@test "ibv_xsrq_pingpong behaves the same under run as bare (rxe has no XRC: both fail to open the XRC domain)" {
	run timeout 20 ibv_xsrq_pingpong -d rxe0 -g 1 -p 18700
	local bare_status=$status bare_output=$output
	run timeout 20 "$RDMACTL" run --job xsrq --max-qp 4 --max-srq 1 -- ibv_xsrq_pingpong -d rxe0 -g 1 -p 18701
	[ "$status" -eq "$bare_status" ]
	[ "$output" = "$bare_output" ]
	job_is_empty xsrq
}

@test "a program using only the inline _ex verbs is limited (create_cq_ex, create_qp_ex, create_srq_ex, alloc_mw)" {
	run --separate-stderr timeout 30 "$RDMACTL" run --job ex --max-qp 2 --max-cq 1 --max-srq 1 --max-mw 1 -- \
		"$EXV" -q 4 -c 2 -s 2 -m 2
	assert_success
	assert_line "cq created=1 refused=1 errno=ENOMEM"
	assert_line "qp created=2 refused=2 errno=ENOMEM"
	assert_line "srq created=1 refused=1 errno=ENOMEM"
	assert_line "mw created=1 refused=1 errno=ENOMEM"
	assert_line done
	# without limits the same program gets everything: the refusals above are rdmactl's
	run timeout 30 "$RDMACTL" run --job ex2 -- "$EXV" -q 4 -c 2 -s 2 -m 2
	assert_success
	assert_line "qp created=4 refused=0 errno=0"
	assert_line "mw created=2 refused=0 errno=0"
}

@test "the _ex program holds what the kernel shows; after SIGKILL the usage returns to zero" {
	timeout 60 "$RDMACTL" run --job exk --max-qp 3 -- bash -c "$EXV -q 3 -c 2 -s 2 -H 60 & sleep 50" \
		>"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	wait_for 15 grep -q holding "$BATS_TEST_TMPDIR/out"
	local pid
	pid=$(pgrep -f "^$EXV")
	check_same_as_kernel "$pid"
	run "$LQ" job exk
	assert_line "qp 3 3"
	assert_line "cq 2 -"
	kill -9 "$pid"
	# the job lives on (bash is still there): the dead holder's charges are reclaimed, nothing restarted
	wait_for 10 bash -c "! [ -d /proc/$pid ]"
	"$RDMACTL" quota gc >/dev/null
	run "$LQ" job exk
	assert_line "qp 0 3"
	assert_line "cq 0 -"
	assert_line "mr_bytes 0 -"
	# and the full budget is usable again by a new process of the job
	run timeout 30 env RDMACTL_JOB=exk LD_PRELOAD="$PRELOAD" "$EXV" -q 3
	assert_line "qp created=3 refused=0 errno=0"
	pkill -f "^bash -c $EXV" || true
	pkill -x sleep || true
}

@test "dlopen + dlvsym(handle) (as NCCL loads libibverbs) is limited under run and with LD_PRELOAD alone" {
	run --separate-stderr timeout 30 "$RDMACTL" run --job dl --max-qp 2 --max-mr 1 -- "$DLV" -q 4 -r 2
	assert_success
	assert_line "qp created=2 refused=2 errno=ENOMEM"
	assert_line "mr created=1 refused=1 errno=ENOMEM"
	run grep -c '^rdmactl: refused' <<<"$stderr"
	assert_output 1
	# without the audit module: the preload's own dlsym and dlvsym hand the loader the wrappers
	run timeout 30 env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_QP=2 RDMACTL_MAX_MR=1 "$DLV" -q 4 -r 2
	assert_line "qp created=2 refused=2 errno=ENOMEM"
	assert_line "mr created=1 refused=1 errno=ENOMEM"
	# the control: without the preload nothing is limited
	run timeout 30 "$DLV" -q 4
	assert_line "qp created=4 refused=0 errno=0"
	job_is_empty dl
}

# Per kind, the "charged KIND" and "released KIND" debug lines of log $1: "KIND charged released".
charges() {
	grep -oE '^rdmactl: (charged|released) [a-z_]+' "$1" | awk '{ n[$3] = n[$3] + 0; if ($2 == "charged") c[$3]++; else r[$3]++ }
		END { for (k in n) printf "%s %d %d\n", k, c[k], r[k] }' | sort
}

@test "LD_PRELOAD alone: a dlvsym loader's 10000 create/destroy and reg/dereg pairs under limits of 10 are charged and credited exactly" {
	local out=$BATS_TEST_TMPDIR/out log=$BATS_TEST_TMPDIR/log pid
	# 9 held: each pair is the 10th object, so one create that was not credited refuses every later one
	RDMACTL_LOG_LEVEL=2 RDMACTL_LOG_FILE=$log LD_PRELOAD="$PRELOAD" RDMACTL_MAX_QP=10 RDMACTL_MAX_MR=10 \
		timeout 600 "$DLV" -q 9 -r 9 -l 10000 -H 60 >"$out" 2>&1 3>&- &
	wait_for 500 grep -q holding "$out" || { cat "$out"; false; }
	run cat "$out"
	assert_line "qp created=9 refused=0 errno=0"
	assert_line "mr created=9 refused=0 errno=0"
	assert_line "loops qp ok=10000 refused=0 errno=0"
	assert_line "loops mr ok=10000 refused=0 errno=0"
	pid=$(pgrep -n -f "^$DLV -q 9")
	[ -n "$pid" ]
	check_same_as_kernel "$pid"
	run ledger_use "$pid" qp
	assert_output 9
	# which verbs such a loader is charged for: every create and destroy it made, through the wrappers
	run charges "$log"
	assert_line "ctx 1 0"
	assert_line "pd 1 0"
	assert_line "cq 1 0"
	assert_line "qp 10009 10000"
	assert_line "mr 10009 10000"
	kill "$pid"
	wait_for 30 bash -c "! kill -0 $pid 2>/dev/null"
	"$RDMACTL" quota gc >/dev/null
	run "$LQ" pid "$pid"
	[ "$status" -ne 0 ] || { echo "$output"; false; }
	[ "$(kernel_count_all qp)" = 0 ]
}

@test "LD_PRELOAD alone: a process that forks after creating objects, and its child, each hold in the ledger what the kernel shows" {
	local out=$BATS_TEST_TMPDIR/out pid child
	LD_PRELOAD="$PRELOAD" RDMACTL_MAX_QP=10 timeout 300 "$DLV" -q 3 -r 2 -F -H 240 >"$out" 2>&1 3>&- &
	wait_for 60 grep -q "child holding" "$out" || { cat "$out"; false; }
	wait_for 60 grep -q "^holding" "$out" || { cat "$out"; false; }
	child=$(sed -n 's/^child pid=\([0-9]*\) .*/\1/p' "$out")
	pid=$(awk '{ print $4 }' "/proc/$child/stat")
	[ -n "$pid" ]
	[ -n "$child" ]
	[ "$pid" != "$child" ]
	grep -qx "child pid=$child qp created=3" "$out"
	check_same_as_kernel "$pid"
	check_same_as_kernel "$child"
	run ledger_use "$pid" qp
	assert_output 3
	run ledger_use "$child" qp
	assert_output 3
	kill "$child" "$pid"
}

@test "a context closed with objects in it: the ledger holds what the kernel holds after the close and after exit; close and reopen cannot pass the limit" {
	local out=$BATS_TEST_TMPDIR/out pid
	# each hold lasts until the test's SIGUSR1 (240 s at most): the program moves on when the checks are done
	LD_PRELOAD="$PRELOAD" RDMACTL_MAX_QP=4 timeout 900 "$DLV" -q 3 -r 2 -K -R -H 240 >"$out" 2>&1 3>&- &
	wait_for 60 grep -q "^holding" "$out" || { cat "$out"; false; }
	pid=$(pgrep -n -f "^$DLV -q 3")
	[ -n "$pid" ]
	kill -USR1 "$pid"
	wait_for 60 grep -q "closed with everything" "$out" || { cat "$out"; false; }
	# rxe keeps a closed context's objects while their queues stay mapped: so does the ledger
	[ "$(kernel_count "$pid" qp)" = 3 ]
	[ "$(kernel_count "$pid" ctx)" = 1 ]
	run ls -l "/proc/$pid/fd"
	refute_output --partial uverbs
	check_same_as_kernel "$pid"
	# a gc while the device is only mapped (no open fd) gives nothing back
	"$RDMACTL" quota gc >/dev/null
	check_same_as_kernel "$pid"
	run ledger_use "$pid" qp
	assert_output 3
	# open again and create 3 more: the fourth QP is the last the limit allows
	kill -USR1 "$pid"
	wait_for 60 grep -q "reopened holding" "$out" || { cat "$out"; false; }
	run cat "$out"
	assert_line "reopened qp created=1 refused=2 errno=ENOMEM"
	[ "$(kernel_count "$pid" qp)" = 4 ]
	check_same_as_kernel "$pid"
	run ledger_use "$pid" ctx
	assert_output 2
	# at exit the kernel destroys them all, and the ledger gives them back
	kill -USR1 "$pid"
	wait_for 60 bash -c "! kill -0 $pid 2>/dev/null"
	run cat "$out"
	assert_line done
	run "$LQ" pid "$pid"
	[ "$status" -eq 3 ] || { echo "$output"; false; }
	[ "$(kernel_count_all qp)" = 0 ]
	[ "$(kernel_count_all ctx)" = 0 ]
	# the same trick under run, with the audit module: refused at the job's limit, nothing left after it
	run --separate-stderr timeout 120 "$RDMACTL" run --job closed --max-qp 4 -- "$DLV" -q 3 -K -R
	assert_success
	assert_line "qp created=3 refused=0 errno=0"
	assert_line "reopened qp created=1 refused=2 errno=ENOMEM"
	job_is_empty closed
	[ "$(kernel_count_all qp)" = 0 ]
}

@test "--max-wr refuses a QP or SRQ deeper than the cap; --log sends the line to a file" {
	run --separate-stderr timeout 30 "$RDMACTL" run --job wr --max-wr 8 --log "$BATS_TEST_TMPDIR/log" -- \
		"$EXV" -q 2 -s 1 -w 16
	assert_success
	assert_line "qp created=0 refused=2 errno=ENOMEM"
	assert_line "srq created=0 refused=1 errno=ENOMEM"
	[ -z "$stderr" ]
	run cat "$BATS_TEST_TMPDIR/log"
	assert_line --regexp '^rdmactl: refused wr depth 16 for pid [0-9]+ \(job wr\): above the cap of 8, set by job wr$'
	run timeout 30 "$RDMACTL" run --job wr2 --max-wr 16 -- "$EXV" -q 2 -s 1 -w 16
	assert_line "qp created=2 refused=0 errno=0"
	assert_line "srq created=1 refused=0 errno=0"
}

@test "quota set --job changes the limit of a running job for its next creation" {
	timeout 60 "$RDMACTL" run --job live --max-qp 1 -- bash -c \
		"$EXV -q 2 -H 1; while [ ! -e $BATS_TEST_TMPDIR/go ]; do sleep 0.2; done; $EXV -q 2" \
		>"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	local job=$!
	wait_for 15 grep -q done "$BATS_TEST_TMPDIR/out"
	run "$RDMACTL" quota set qp 2 --job live
	assert_success
	touch "$BATS_TEST_TMPDIR/go"
	wait $job
	run grep '^qp created' "$BATS_TEST_TMPDIR/out"
	assert_line --index 0 "qp created=1 refused=1 errno=ENOMEM"
	assert_line --index 1 "qp created=2 refused=0 errno=0"
}

@test "every process of the job shares one budget; RDMACTL_MAX_QP limits a process without run" {
	local o=$BATS_TEST_TMPDIR/first
	run timeout 60 "$RDMACTL" run --job share --max-qp 3 -- bash -c \
		"$EXV -q 2 -H 30 >$o & until grep -q holding $o; do sleep 0.1; done; $EXV -q 2; kill %1; cat $o"
	assert_success
	assert_line "qp created=2 refused=0 errno=0"
	assert_line "qp created=1 refused=1 errno=ENOMEM"
	run --separate-stderr timeout 30 env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_QP=1 "$EXV" -q 2
	assert_success
	assert_line "qp created=1 refused=1 errno=ENOMEM"
	run grep -E '^rdmactl: refused qp for pid [0-9]+: 1/1 in use, limit set by RDMACTL_MAX_QP$' <<<"$stderr"
	assert_success
}

@test "a job's budget is what is in use: the allowance another process was granted is taken back before a refusal" {
	# the first process's QP takes an allowance from the job's 40 with it (a quarter of the room: 10); the
	# second still gets all 39 others, and the 40th is refused; the job shows what is in use, 40 of 40
	local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
	run timeout 120 "$RDMACTL" run --job grant --max-qp 40 -- bash -c \
		"$EXV -q 1 -H 60 >$a & until grep -q holding $a; do sleep 0.1; done
		 $EXV -q 40 -H 60 >$b & until grep -q holding $b; do sleep 0.1; done
		 $LQ job grant; kill %1 %2; wait; cat $a $b"
	assert_success
	assert_line "qp 40 40"
	assert_line "qp created=1 refused=0 errno=0"
	assert_line "qp created=39 refused=1 errno=ENOMEM"
	job_is_empty grant
}

@test "a forked child starts from zero: its own slot, the job's budget still shared" {
	# RDMACTL_MAX_QP=2 is per process: the parent holds 2, its child may still create 2 of its own,
	# and the job (max 5) sees 4. The child holds its QPs while the ledger is read.
	timeout 60 "$RDMACTL" run --job fork --max-qp 5 -- env RDMACTL_MAX_QP=2 "$EXV" -q 2 -F 3 -H 8 \
		>"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	local job=$!
	wait_for 20 grep -q '^child' "$BATS_TEST_TMPDIR/out"
	run grep '^child' "$BATS_TEST_TMPDIR/out"
	assert_output --regexp '^child [0-9]+ qp created=2 refused=1 errno=ENOMEM$'
	local child parent
	child=$(awk '/^child/ { print $2 }' "$BATS_TEST_TMPDIR/out")
	parent=$(pgrep -f "^$EXV" | grep -vx "$child")
	run "$LQ" pid "$child"
	assert_line --regexp '^qp 2 '
	assert_line --regexp '^ctx 1 '
	run "$LQ" pid "$parent"
	assert_line --regexp '^qp 2 '
	run "$LQ" job fork
	assert_line "qp 4 5"
	wait $job
	job_is_empty fork
}

@test "an RDMACTL_MAX_QP refusal under run is a ledger denial: monitor streams it, quota show counts it" {
	local mon=$BATS_TEST_TMPDIR/mon
	"$RDMACTL" monitor -j --type qp >"$mon" 2>"$mon.err" 3>&- &
	local m=$!
	wait_for 60 grep -q '"event":"start"' "$mon" || { cat "$mon.err"; kill $m; false; }
	run --separate-stderr timeout 30 "$RDMACTL" run --job envq -- env RDMACTL_MAX_QP=1 "$EXV" -q 2
	assert_success
	assert_line "qp created=1 refused=1 errno=ENOMEM"
	run grep -E '^rdmactl: refused qp for pid [0-9]+ \(job envq\): 1/1 in use, limit set by RDMACTL_MAX_QP$' <<<"$stderr"
	assert_success
	sleep 0.5
	kill -INT $m
	wait $m
	run -0 jq -s -e '[.[] | select(.event == "denied" and .type == "qp" and .scope == "process" and .job == "envq"
		and .limit_env == "RDMACTL_MAX_QP" and .usage == 1 and .limit == 1
		and (.message | endswith("1/1 in use, limit set by RDMACTL_MAX_QP")))] | length == 1' "$mon"
	run -0 "$RDMACTL" -j quota show
	run -0 jq -e '.denials == 1' <<<"$output"
}

@test "exec: the new program takes over the slot of the old one; the ledger holds what the kernel holds" {
	local out=$BATS_TEST_TMPDIR/out
	# 3 QPs, then exec (with everything still open) a program that creates 1 and holds it
	timeout 60 "$RDMACTL" run --job exec -- "$EXV" -q 3 -E -- "$EXV" -q 1 -H 30 >"$out" 2>&1 3>&- &
	local job=$!
	wait_for 30 grep -q '^holding' "$out" || { cat "$out"; false; }
	run grep '^qp created' "$out"
	assert_line --index 0 "qp created=3 refused=0 errno=0"
	assert_line --index 1 "qp created=1 refused=0 errno=0"
	local pid
	pid=$(pgrep -f "^$EXV -q 1 -H 30")
	run -0 "$LQ" slots "$pid"
	assert_output 1
	check_same_as_kernel "$pid"
	[ "$(kernel_count "$pid" qp)" -eq 1 ]
	run "$LQ" job exec
	assert_line "qp 1 -"
	assert_line "cq 1 -"
	assert_line "ctx 1 -"
	kill "$pid"
	wait $job || true
	job_is_empty exec
}

@test "xrcd and wq: limit 0 refuses before the provider; above 0 rxe's EOPNOTSUPP gives the charge back" {
	# bare: rxe has neither XRC domains nor WQs
	run -0 timeout 30 "$EXV" -x 1 -W 1
	assert_line "xrcd created=0 refused=1 errno=EOPNOTSUPP"
	assert_line "wq created=0 refused=1 errno=EOPNOTSUPP"
	# limit 0: refused by the ledger (ENOMEM, one line), rxe is never asked
	run --separate-stderr -0 timeout 30 "$RDMACTL" run --job xr0 --max-xrcd 0 -- "$EXV" -x 1
	assert_line "xrcd created=0 refused=1 errno=ENOMEM"
	run grep -E '^rdmactl: refused xrcd for pid [0-9]+ \(job xr0\): 0/0 in use, limit set by job xr0$' <<<"$stderr"
	assert_success
	run --separate-stderr -0 timeout 30 "$RDMACTL" run --job wq0 --max-wq 0 -- "$EXV" -W 1
	assert_line "wq created=0 refused=1 errno=ENOMEM"
	run grep -E '^rdmactl: refused wq for pid [0-9]+ \(job wq0\): 0/0 in use, limit set by job wq0$' <<<"$stderr"
	assert_success
	run --separate-stderr -0 timeout 30 env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_WQ=0 "$EXV" -W 1
	assert_line "wq created=0 refused=1 errno=ENOMEM"
	run grep -E '^rdmactl: refused wq for pid [0-9]+: 0/0 in use, limit set by RDMACTL_MAX_WQ$' <<<"$stderr"
	assert_success
	# limit 1: charged, passed to rxe, which fails; the charge is given back while the process lives on
	local out=$BATS_TEST_TMPDIR/out
	timeout 60 "$RDMACTL" run --job xw1 --max-xrcd 1 --max-wq 1 -- env RDMACTL_LOG_LEVEL=2 "$EXV" -x 1 -W 1 -H 30 \
		>"$out" 2>&1 3>&- &
	local job=$!
	wait_for 30 grep -q '^holding' "$out" || { cat "$out"; false; }
	grep -q "^xrcd created=0 refused=1 errno=EOPNOTSUPP$" "$out"
	grep -q "^wq created=0 refused=1 errno=EOPNOTSUPP$" "$out"
	grep -Eq "^rdmactl: charged xrcd 1 for pid [0-9]+$" "$out"
	grep -Eq "^rdmactl: released xrcd for pid [0-9]+$" "$out"
	grep -Eq "^rdmactl: charged wq 1 \(depth 16\) for pid [0-9]+$" "$out"
	grep -Eq "^rdmactl: released wq for pid [0-9]+$" "$out"
	# the other kinds say the same: "charged KIND 1 ..." (an MR with its bytes)
	grep -Eq "^rdmactl: charged (ctx|pd|cq) 1 for pid [0-9]+$" "$out"
	grep -Eq "^rdmactl: charged qp 1 \(depth [0-9]+\) for pid [0-9]+$" "$out"
	! grep -q "^rdmactl: refused" "$out"
	run "$LQ" job xw1
	assert_line "xrcd 0 1"
	assert_line "wq 0 1"
	assert_line "qp 1 -"
	pkill -f "^$EXV -x 1 -W 1 -H 30"
	wait $job || true
	job_is_empty xw1
}

@test "rdmactl's own processes are never intercepted: pingpong passes under the preload with zero limits" {
	# (an ASan build of rdmactl, SANITIZE=1, insists on its runtime coming first: let it accept the preload)
	local env=(env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_QP=0 RDMACTL_MAX_CTX=0
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
	local srv=$BATS_TEST_TMPDIR/srv
	timeout 60 "${env[@]}" "$RDMACTL" pingpong -n 20 -p 18640 --timeout 20 >"$srv" 2>&1 3>&- &
	local s=$!
	wait_for 20 grep -q "waiting for a" "$srv" || { cat "$srv"; false; }
	run timeout 60 "${env[@]}" "$RDMACTL" pingpong -n 20 -p 18640 --timeout 20 192.0.2.1
	assert_success
	refute_output --partial "rdmactl: refused"
	wait $s
	! grep -q "refused" "$srv"
	# the same environment refuses a verbs program its first context, cleanly
	run --separate-stderr timeout 30 "${env[@]}" ibv_rc_pingpong -d rxe0 -g 1 -p 18641 192.0.2.1
	failed_cleanly
	run grep -E '^rdmactl: refused ctx for pid [0-9]+: 0/0 in use, limit set by RDMACTL_MAX_CTX$' <<<"$stderr"
	assert_success
}

@test "--max-ctx, --max-pd and --max-ah refuse their verb cleanly; RDMACTL_ERRNO picks the errno of a refusal" {
	local k
	for k in ctx pd; do
		run --separate-stderr timeout 30 "$RDMACTL" run --job "z$k" "--max-$k" 0 -- \
			ibv_rc_pingpong -d rxe0 -g 1 -p 18650 192.0.2.1
		failed_cleanly
		run grep -E "^rdmactl: refused $k for pid [0-9]+ \\(job z$k\\): 0/0 in use, limit set by job z$k\$" <<<"$stderr"
		assert_success
	done
	# a UD pair: the client creates its address handle once it knows the server's address
	timeout 60 ibv_ud_pingpong -d rxe0 -g 1 -p 18651 -n 5 >/dev/null 2>&1 3>&- &
	local srv=$!
	wait_listen 18651
	run --separate-stderr timeout 30 "$RDMACTL" run --job zah --max-ah 0 -- \
		ibv_ud_pingpong -d rxe0 -g 1 -p 18651 -n 5 192.0.2.1
	failed_cleanly
	run grep -E '^rdmactl: refused ah for pid [0-9]+ \(job zah\): 0/0 in use, limit set by job zah$' <<<"$stderr"
	assert_success
	kill "$srv" 2>/dev/null || true
	wait "$srv" || true
	# the same refusal with another errno
	run -0 timeout 30 "$RDMACTL" run --job zerr --max-qp 0 -- env RDMACTL_ERRNO=EDQUOT "$EXV" -q 1
	assert_line "qp created=0 refused=1 errno=EDQUOT"
	run -0 timeout 30 "$RDMACTL" run --job zerr2 --max-qp 0 -- "$EXV" -q 1
	assert_line "qp created=0 refused=1 errno=ENOMEM"
}

@test "an AH made by ibv_create_ah_from_wc (libibverbs makes it through its exported ibv_create_ah) is charged once" {
	local udwc=$BUILD/lab-progs/udwc
	# under a limit of 2 the AH from the completion is the second: charged twice, it would be refused
	run -0 timeout 60 "$RDMACTL" run --job zwc --max-ah 2 -- "$udwc" -g 1
	assert_line "ah created=1 refused=0 errno=0"
	assert_line "from_wc created=1 refused=0 errno=0"
	run --separate-stderr -0 timeout 60 "$RDMACTL" run --job zwc1 --max-ah 1 -- "$udwc" -g 1
	assert_line "from_wc created=0 refused=1 errno=ENOMEM"
	run grep -E '^rdmactl: refused ah for pid [0-9]+ \(job zwc1\): 1/1 in use, limit set by job zwc1$' <<<"$stderr"
	assert_success
	# the same with LD_PRELOAD alone
	run -0 timeout 60 env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_AH=2 "$udwc" -g 1
	assert_line "from_wc created=1 refused=0 errno=0"
	run -0 timeout 60 env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_AH=1 "$udwc" -g 1
	assert_line "from_wc created=0 refused=1 errno=ENOMEM"
	# and without the interceptor the program makes both (the control: the datagram goes through)
	run -0 timeout 60 "$udwc" -g 1
	assert_line "from_wc created=1 refused=0 errno=0"
}

@test "more objects than the table of records has slots: every create charged, every destroy credited, exactly" {
	local many=$BUILD/lab-progs/manyobj
	# 2000 PDs held (records past the table's first probes and in the overflow buckets), 300 pairs meanwhile,
	# all given back and taken again: under a limit of 2001 exactly one more fits
	run -0 timeout 120 "$RDMACTL" run --job zmany --max-pd 2001 -- "$many" -n 2000 -l 300
	assert_line "held created=2000 refused=0 errno=0"
	assert_line "loops ok=300 refused=0 errno=0"
	assert_line "again created=2000 refused=0 errno=0"
	assert_line "extra created=1 refused=1 errno=ENOMEM"
	run -0 timeout 120 env LD_PRELOAD="$PRELOAD" RDMACTL_MAX_PD=2001 "$many" -n 2000 -l 300
	assert_line "loops ok=300 refused=0 errno=0"
	assert_line "again created=2000 refused=0 errno=0"
	assert_line "extra created=1 refused=1 errno=ENOMEM"
	# the control: without the interceptor both extra PDs are made
	run -0 timeout 120 "$many" -n 2000 -l 300
	assert_line "extra created=2 refused=0 errno=0"
}

@test "more contexts open at once than the table of contexts has entries: each one's objects and inline verbs counted" {
	local many=$BUILD/lab-progs/manyctx o=$BATS_TEST_TMPDIR/out
	# 300 contexts (the table has 256 entries, the rest come from a list), a PD and an MW (inline verb,
	# through the context's ops) on each: the MW limit of 299 refuses the last one, on a context of the list
	timeout 120 "$RDMACTL" run --job zctx --max-mw 299 --max-ctx 1000 -- "$many" -n 300 -H 60 >"$o" 2>&1 3>&- &
	local job=$!
	wait_for 60 grep -q holding "$o" || { cat "$o"; false; }
	run cat "$o"
	assert_line "ctx created=300"
	assert_line "pd created=300 refused=0 errno=0"
	assert_line "mw created=299 refused=1 errno=ENOMEM"
	local pid
	pid=$(pgrep -f "^$many")
	check_same_as_kernel "$pid"
	run "$LQ" job zctx
	assert_line "mw 299 299"
	kill "$pid"
	wait $job || true
	job_is_empty zctx
}

@test "an unusable ledger: RDMACTL_FAIL=closed refuses every creation, open lets them through" {
	local env=(env LD_PRELOAD="$PRELOAD" RDMACTL_LEDGER="$BATS_TEST_TMPDIR/no/such/ledger" RDMACTL_JOB=gone)
	# closed: already the context is refused, with the verbs' usual errno
	run --separate-stderr timeout 30 "${env[@]}" RDMACTL_FAIL=closed "$EXV" -q 1
	failed_cleanly
	run grep -E '^rdmactl: refused ctx for pid [0-9]+: ledger unusable and RDMACTL_FAIL=closed$' <<<"$stderr"
	assert_success
	run grep -F "cannot open rxe0: Cannot allocate memory" <<<"$stderr"
	assert_success
	run --separate-stderr -0 timeout 30 "${env[@]}" RDMACTL_FAIL=open "$EXV" -q 1
	assert_line "qp created=1 refused=0 errno=0"
	run grep -E 'not enforcing its limits' <<<"$stderr"
	assert_success
}

@test "--max-cq: an unmodified program (exported ibv_create_cq) is refused at 0 and passes within the limit" {
	run --separate-stderr timeout 30 "$RDMACTL" run --job zcq --max-cq 0 -- ibv_rc_pingpong -d rxe0 -g 1 -p 18660 192.0.2.1
	failed_cleanly
	grep -q "Couldn't create CQ" <<<"$stderr" || { echo "$stderr"; false; }
	run grep -E '^rdmactl: refused cq for pid [0-9]+ \(job zcq\): 0/0 in use, limit set by job zcq$' <<<"$stderr"
	assert_success
	job_is_empty zcq
	# one CQ is all it needs: a full exchange with a peer without limits
	timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -p 18661 -n 20 >"$BATS_TEST_TMPDIR/srv" 2>&1 3>&- &
	local srv=$!
	wait_listen 18661
	run --separate-stderr timeout 60 "$RDMACTL" run --job cq1 --max-cq 1 -- env RDMACTL_LOG_LEVEL=2 \
		ibv_rc_pingpong -d rxe0 -g 1 -p 18661 -n 20 192.0.2.1
	assert_success
	assert_output --partial "20 iters in"
	run grep -E '^rdmactl: charged cq 1 for pid [0-9]+$' <<<"$stderr"
	assert_success
	run grep -E '^rdmactl: charged mr 1 \(4096 bytes\) for pid [0-9]+$' <<<"$stderr"
	assert_success
	refute_output --partial "refused"
	wait $srv
	job_is_empty cq1
}

@test "--cgroup: CMD and its forks run in the cgroup, a cgroup quota limits the tree, the job goes when it exits" {
	make_cg
	local rel=/${CG#/sys/fs/cgroup/} o=$BATS_TEST_TMPDIR/first out=$BATS_TEST_TMPDIR/out
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CG"
	# (relative to the cgroup2 mount, as quota takes it too) CMD is bash; its background child holds 2 QPs
	timeout 90 "$RDMACTL" run --job cgj --cgroup "${rel#/}" -- bash -c "$EXV -q 2 -H 60 >$o & \
		until grep -qs holding $o; do sleep 0.1; done; \
		until [ -e $BATS_TEST_TMPDIR/go ]; do sleep 0.1; done; $EXV -q 2; kill %1; wait; cat $o" \
		>"$out" 2>&1 3>&- &
	local job=$!
	wait_for 30 grep -q holding "$o" || { cat "$out" "$o"; false; }
	local rd cmd holder
	rd=$(pgrep -P "$job")
	cmd=$(pgrep -P "$rd" -x bash)
	holder=$(pgrep -f "^$EXV -q 2 -H 60")
	[ "$(pgrep -P "$cmd" -f "^$EXV")" = "$holder" ] # the holder is a child CMD forked
	run -0 cat "/proc/$cmd/cgroup" "/proc/$holder/cgroup"
	assert_output "0::$rel"$'\n'"0::$rel"
	# rdmactl itself stays where it was; the kernel charges the tree's objects to the cgroup as well
	run -0 cat "/proc/$rd/cgroup"
	refute_output "0::$rel"
	local line
	read -r line <"$CG/rdma.current"
	[[ $line =~ ^rxe0\ hca_handle=1\ hca_object=[1-9][0-9]*$ ]] || { echo "rdma.current: $line"; false; }
	run -0 "$LQ" job cgj
	assert_line "qp 2 -"
	# the cgroup's limit (3) is the tree's: a second process gets 1 of its 2 QPs, and the line names the cgroup
	touch "$BATS_TEST_TMPDIR/go"
	wait $job
	run cat "$out"
	assert_line "qp created=2 refused=0 errno=0"
	assert_line "qp created=1 refused=1 errno=ENOMEM"
	assert_line --regexp "^rdmactl: refused qp for pid [0-9]+ \\(job cgj\\): 3/3 in use, limit set by cgroup $rel\$"
	# the tree is gone: so are the job entry and the cgroup's usage
	run -3 "$LQ" job cgj
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.scopes[0] | .kinds.qp.usage == 0 and .kinds.qp.limit == 3' <<<"$output"
}

@test "--cgroup that is missing, not a cgroup, not a leaf or not writable: a clear error, exit 1, CMD never runs" {
	local ran=$BATS_TEST_TMPDIR/ran
	run -1 --separate-stderr "$RDMACTL" run --job cge --cgroup "no-such.$$" -- touch "$ran"
	assert_output ""
	assert_equal "$stderr" "rdmactl run: cannot move into cgroup no-such.$$: No such file or directory (a cgroup v2 directory, absolute or relative to /sys/fs/cgroup)"
	run -1 --separate-stderr "$RDMACTL" run --job cge --cgroup /tmp -- touch "$ran"
	assert_equal "$stderr" "rdmactl run: cannot move into cgroup /tmp: not a cgroup v2 directory (cgroup2 is mounted at /sys/fs/cgroup)"
	# the kernel refuses the move itself: a cgroup with controllers enabled for children takes no processes
	make_cg
	mkdir "$CG/leaf"
	echo +rdma >"$CG/cgroup.subtree_control" # (not a threaded controller: $CG can no longer hold processes)
	run -1 --separate-stderr "$RDMACTL" run --job cge --cgroup "$CG" -- touch "$ran"
	assert_equal "$stderr" "rdmactl run: cannot move into cgroup $CG: Device or resource busy (it has controllers enabled in cgroup.subtree_control: only a leaf cgroup takes processes)"
	# a user who may not write its cgroup.procs (with a copy of the preload that user can read: the
	# checkout need not be readable by others)
	local pub
	pub=$(mktemp -d /tmp/rdmactl-pub.XXXXXX)
	chmod 755 "$pub"
	install -m 644 "$BUILD/librdmactl-preload.so" "$pub/"
	run -1 --separate-stderr env RDMACTL_PRELOAD="$pub/librdmactl-preload.so" \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMACTL" run --job cge --cgroup "$CG/leaf" -- true
	rm -rf "$pub"
	assert_equal "$stderr" "rdmactl run: cannot move into cgroup $CG/leaf: $CG/leaf/cgroup.procs: Permission denied (a cgroup delegated to you, or run as root)"
	[ ! -e "$ran" ]
	run -3 "$LQ" job cge # no job left behind
	[ -z "$(cat "$CG/cgroup.procs" "$CG/leaf/cgroup.procs")" ]
	# the leaf below takes it
	run -0 "$RDMACTL" run --job cge --cgroup "$CG/leaf" -- cat /proc/self/cgroup
	assert_output "0::/${CG#/sys/fs/cgroup/}/leaf"
}

@test "exec into a program that never uses verbs: the gc gives the old image's charge back while it runs" {
	local out=$BATS_TEST_TMPDIR/out
	# a holder of the job keeps 1 QP; the other process creates 3, then execs (all still open) a plain sleep
	timeout 90 "$RDMACTL" run --job execnv -- bash -c \
		"$EXV -q 1 -H 60 >$BATS_TEST_TMPDIR/h 2>&1 & until grep -qs holding $BATS_TEST_TMPDIR/h; do sleep 0.1; done; \
		$EXV -q 3 -E -- sleep 37" >"$out" 2>&1 3>&- &
	local job=$!
	wait_for 30 pgrep -f '^sleep 37$' || { cat "$out"; false; }
	local pid holder
	pid=$(pgrep -f '^sleep 37$')
	holder=$(pgrep -f "^$EXV -q 1 -H 60")
	[ "$(kernel_count "$pid" qp)" -eq 0 ] # the exec closed the device: its objects are gone
	run "$LQ" job execnv # ... but nothing told the ledger yet
	assert_line "qp 4 -"
	run -0 "$RDMACTL" quota gc
	run "$LQ" job execnv
	assert_line "qp 1 -"
	assert_line "ctx 1 -"
	assert_line "mr_bytes 0 -"
	run -0 "$LQ" pid "$pid" # the process keeps its (empty) slot
	refute_output --regexp '^(ctx|pd|cq|qp|mr) [1-9]'
	check_same_as_kernel "$holder" # a process holding its device keeps what it holds
	[ "$(ledger_use "$holder" qp)" -eq 1 ]
	kill "$pid" "$holder"
	wait $job || true
	# the holder may outlive CMD by a moment (its device is torn down as it exits): once it is gone, the
	# next gc gives its charge back
	wait_for 20 bash -c "! [ -d /proc/$holder ]"
	"$RDMACTL" quota gc >/dev/null
	job_is_empty execnv
}

# Issue 51 item 8: a create the interceptor let through and the kernel refused says which limit refused it.
@test "a verb the kernel refused says which limit: the kernel limit, the cgroup's rdma.max, RLIMIT_MEMLOCK, the device's maximum" {
	local KQV=$BUILD/lab-progs/kqverbs mon=$BATS_TEST_TMPDIR/mon
	make_cg
	grep -qw rdma /sys/fs/cgroup/cgroup.subtree_control || echo +rdma >/sys/fs/cgroup/cgroup.subtree_control
	"$RDMACTL" monitor -j --type qp >"$mon" 2>"$mon.err" 3>&- &
	local m=$!
	wait_for 60 grep -q '"event":"start"' "$mon" || { cat "$mon.err"; kill $m; false; }
	# rdma.max: a context, a PD and a CQ leave 1 object for QPs; the kernel says EAGAIN
	echo "rxe0 hca_object=3" >"$CG/rdma.max"
	run --separate-stderr timeout 60 "$RDMACTL" run --job rmax --cgroup "$CG" -- "$KQV" -k qp -n 2
	assert_line "qp created=1 errno=EAGAIN"
	[[ $stderr == *"refused qp for pid "*": the rdma.max of cgroup /${CG##*/}: \"rxe0 hca_handle=max hca_object=3\", 3 in use (rdma.current)"* ]] ||
		{ echo "$stderr" >&2; false; }
	echo "rxe0 hca_handle=max hca_object=max" >"$CG/rdma.max"
	sleep 0.5
	kill -INT $m
	wait $m
	# recorded as a denial: monitor names rdma.max
	run -0 jq -s -e '[.[] | select(.event == "denied" and .type == "qp" and .limit_env == "rdma.max"
		and .limit == 3 and .usage == 3)] | length == 1' "$mon"
	# the kernel limit (BPF LSM): EDQUOT (the run's ledger is another, without the cgroup's limit: the
	# interceptor lets the second QP through)
	run -0 "$RDMACTL" quota set qp 1 --cgroup "$CG" --kernel
	run --separate-stderr timeout 60 env RDMACTL_LEDGER="$BATS_TEST_TMPDIR/kqled" \
		"$RDMACTL" run --job kq --cgroup "$CG" -- "$KQV" -k qp -n 2
	assert_line "qp created=1 errno=EDQUOT"
	[[ $stderr == *"refused qp for pid "*": a kernel limit (BPF LSM) of its cgroup, its pid or the host"* ]] ||
		{ echo "$stderr" >&2; false; }
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
	# RLIMIT_MEMLOCK of 64 KiB for a user without CAP_IPC_LOCK: a 1 MiB MR gets ENOMEM
	local udir
	udir=$(mktemp -d)
	chmod 0777 "$udir"
	run --separate-stderr timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
		env RDMACTL_LEDGER="$udir/ledger" prlimit --memlock=65536:65536 "$RDMACTL" run -- "$KQV" -k mr -n 1 -s 1048576
	rm -rf "$udir"
	[[ $output == *"mr created=0 errno=ENOMEM"* ]] || { echo "status $status: $output $stderr" >&2; false; }
	[[ $stderr == *"refused mr of 1048576 bytes for pid "*": RLIMIT_MEMLOCK is 65536 bytes and 0 are pinned already"* ]] ||
		{ echo "$stderr" >&2; false; }
	# the device's own maximum: a QP deeper than rxe's max_qp_wr
	local maxwr
	maxwr=$(ibv_devinfo -v -d rxe0 | awk '$1 == "max_qp_wr:" { print $2 }')
	run --separate-stderr timeout 60 "$RDMACTL" run -- "$KQV" -k qp -n 1 -q $((maxwr + 1))
	assert_line "qp created=0 errno=EINVAL"
	[[ $stderr == *"qp for pid "*" failed: Invalid argument from the device, no limit refused it (the device's max_qp "*", max_qp_wr $maxwr, "* ]] ||
		{ echo "$stderr" >&2; false; }
}
