# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The chaos suites' setup and rounds (kqchaos.bats, stress/kqchaos-attach.bats): statically linked churners create and
# destroy QPs, MRs, CQs, PDs and contexts in a limited cgroup and are SIGKILLed at random, while the cgroup's
# limits are lifted and set again. Afterwards the kernel's usage must equal what RDMA netlink lists (nothing),
# and a fresh program must get its whole limit: a charge left behind would refuse it below its limit, one
# given back twice would let it past.

KQS=$BUILD/lab-progs/kqverbs-static
KQU=$BUILD/lab-progs/kquring
NCHURN=${KQCHAOS_CHURNERS:-6}
ITER=${KQCHAOS_ITER:-2}

setup() {
	kq_setup kqc
	"$RDMACTL" quota gc >/dev/null 2>&1 || true
	CHURN=()
}

teardown() {
	local p
	[ -z "${MON:-}" ] || kill "$MON" 2>/dev/null || true
	stop_ring
	for p in "${CHURN[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${CHURN[@]}"; do wait "$p" 2>/dev/null || true; done
	"$RDMACTL" quota unset qp --global --kernel 2>/dev/null || true
	sleep 0.2
	rmdir "$CG" 2>/dev/null || true
	"$RDMACTL" quota gc >/dev/null 2>&1 || true
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

# Start churner $1 (slot) in $CG: $! is the program itself (the shell execs it), what a SIGKILL must hit.
churner() {
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$CG" "$KQS" -C 1000000 -n 6 \
		>"$BATS_TEST_TMPDIR/churn.$1" 2>&1 3>&- &
	CHURN[$1]=$!
}

# The ring churner in $CG: kquring's io_uring paths in a loop (writes from workers born in io_uring_enter and
# at an ioctl's exit, forked children with the opener's personality), each run killed at random; while a limit
# applies to the cgroup every write is refused (EDQUOT), never killed; while none does, its PDs are made.
ring_churner() {
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && while :; do
		"$1" write -n 8 -m async; "$1" write -n 4 -m ioctl; "$1" persona -c 2; done' _ "$CG" "$KQU" \
		>"$BATS_TEST_TMPDIR/ring" 2>&1 3>&- &
	RING=$!
}

stop_ring() {
	[ -n "${RING:-}" ] || return 0
	kill -9 "$RING" 2>/dev/null || true
	wait "$RING" 2>/dev/null || true
	RING=
	pkill -9 -x kquring 2>/dev/null || true
	wait_for 20 bash -c '! pgrep -x kquring >/dev/null'
}

# SIGKILL churner $1; one that ended by itself has failed (its output and the kernel's kills say why).
kill_churner() {
	kill -9 "${CHURN[$1]}" 2>/dev/null || {
		local st=0
		wait "${CHURN[$1]}" || st=$?
		echo "churner $1 ended by itself, status $st:" >&2
		cat "$BATS_TEST_TMPDIR/churn.$1" >&2
		grep -v '"create"\|"destroy"' "$BATS_TEST_TMPDIR/mon" | tail -5 >&2
		dmesg | tail -20 >&2
		false
	}
	wait "${CHURN[$1]}" 2>/dev/null || true
}

# The cgroup's kernel counters of qp so far: no honest churner was ever killed; add its refusals to REFUSED.
counters() {
	local j
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	j=$output
	run -0 jq -e '.scopes[0].kinds.qp | (.kernel_killed // 0) == 0' <<<"$j" || { echo "$j" >&2; false; }
	REFUSED=$((REFUSED + $(jq '.scopes[0].kinds.qp.kernel_refused // 0' <<<"$j")))
}

# The limits of round $1: qp 20 on the cgroup; round 2 keeps a pd limit on it (the scope stays when qp is
# lifted), round 3 a global limit (the programs stay attached when the cgroup's scope goes).
limits() {
	run -0 "$RDMACTL" quota set qp 20 --cgroup "$CG" --kernel
	[ "$1" != 2 ] || run -0 "$RDMACTL" quota set pd 1000 --cgroup "$CG" --kernel
	[ "$1" != 3 ] || run -0 "$RDMACTL" quota set qp 100000 --global --kernel
}

# The chaos, in the rounds given (see limits; KQCHAOS_ROUNDS="2 3 1 ..." instead, to run it many times by
# hand): ITER times a churner SIGKILLed and started again, every second time the cgroup's qp limit lifted
# and set again, while NCHURN churners run. Beside them every command of the test takes 1.5-2 s under the
# emulator (0.2 s alone), so CI runs few short rounds (about two minutes each). Then nothing may be left:
# kernel usage = RDMA netlink = 0, a fresh program gets exactly 20, and the kernel never killed a churner.
chaos() {
	local round i s kills=0 sets=0
	REFUSED=0
	"$RDMACTL" monitor -j >"$BATS_TEST_TMPDIR/mon" 2>&1 3>&- &
	MON=$!
	for round in ${KQCHAOS_ROUNDS:-$@}; do
		limits "$round"
		for s in $(seq 0 $((NCHURN - 1))); do churner "$s"; done
		ring_churner
		for i in $(seq 1 "$ITER"); do
			sleep "0.$((RANDOM % 6 + 1))"
			# a SIGKILL at whatever step the churner is in, and a fresh one in its place
			s=$((RANDOM % NCHURN))
			kill_churner "$s"
			churner "$s"
			kills=$((kills + 1))
			# and the ring's current run, at whatever step it is in
			pkill -9 -x kquring 2>/dev/null || true
			# the qp limit lifted and set again while they churn (every set counts what they hold)
			if ((i % 2 == 0)); then
				counters
				run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
				sleep "0.$((RANDOM % 4 + 1))"
				run -0 "$RDMACTL" quota set qp 20 --cgroup "$CG" --kernel
				sets=$((sets + 1))
			fi
		done
		counters
		for s in $(seq 0 $((NCHURN - 1))); do kill_churner "$s"; done
		CHURN=()
		stop_ring
		# nothing is left: the kernel's usage is RDMA netlink's count, zero (the ring's PDs too: none has a
		# pid or an io_uring worker's name)
		[ "$(nl_count kqverbs-static qp)" = 0 ]
		wait_for 20 bash -c '[ "$(rdma -j res show pd | jq "[.[] | select(.pid == null and (.comm // \"\") == \"\" or ((.comm // \"\") | test(\"^(kquring|iou-wrk)\")))] | length")" = 0 ]' ||
			{ rdma res show pd >&2; false; }
		assert_usage_is_netlink "$CG" kqverbs-static kquring
		# and a fresh program gets exactly 20 QPs
		run -3 in_cg timeout 60 "$KQS" -k qp -n 21
		assert_line "qp created=20 errno=EDQUOT"
		assert_usage_is_netlink "$CG" kqverbs-static
		counters
		run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
		[ "$round" != 2 ] || run -0 "$RDMACTL" quota unset pd --cgroup "$CG" --kernel
		[ "$round" != 3 ] || run -0 "$RDMACTL" quota unset qp --global --kernel
	done
	# the kernel never killed one (monitor: no kill event)
	kill "$MON"
	! grep '"killed"' "$BATS_TEST_TMPDIR/mon" || false
	# the churners worked, and met the limit: refused (EDQUOT), never killed
	echo "# $kills kills, $sets limits lifted and set again, $REFUSED refusals" >&3
	((REFUSED > 0))
	# the ring churner ran, and was refused (EDQUOT) where a limit applied
	grep -Eq '^(uring pd|persona) ok=[0-9]+ refused=[1-9]' "$BATS_TEST_TMPDIR/ring" || { tail -20 "$BATS_TEST_TMPDIR/ring" >&2; false; }
	grep -E '^(uring pd|persona) ' "$BATS_TEST_TMPDIR/ring" | sort | uniq -c | sort -rn | head -5 | sed 's/^/# ring: /' >&3
}
