#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Kernel quotas, the operator's side (issue 33): what `quota set --kernel` and `quota gc` do with pids that
# are reused, pids and cgroups seen from inside namespaces, pin directories a user made first, and a set
# killed half-way. What is tested here is rdmactl's, not the kernel's: it runs on the first kernel only
# (Makefile: LAB_SUITES_AGAIN); the attacks on the programs are in kqattack.bats, run on both.

load ../helper
load kq
load kqa

run_as_pid() {
	local want=$1 got i
	shift
	for i in 1 2 3 4 5 6 7 8; do
		got=$(OUT=$BATS_TEST_TMPDIR/reuse bash -c \
			'echo $(($1 - 1)) >/proc/sys/kernel/ns_last_pid; shift; "$@" >"$OUT" 2>&1 & echo $!; wait $! || true' _ "$want" "$@")
		[ "$got" = "$want" ] && return 0
	done
	echo "never got pid $want (last $got)" >&2
	return 1
}

@test "a --pid limit stays with its process: a later process given the same number is not limited by it, and gc drops it" {
	local hold=$BATS_TEST_TMPDIR/hold out=$BATS_TEST_TMPDIR/first p
	"$KQS" -k qp -n 1 -H "$hold" >"$out" 2>&1 3>&- &
	p=$!
	PIDS+=($p)
	wait_for 60 grep -q holding "$out" || { cat "$out" >&2; false; }
	run -0 "$RDMACTL" quota set qp 1 --pid "$p" --kernel
	touch "$hold"
	wait "$p" || true
	# the same number, another process: the limit is not its own
	run_as_pid "$p" "$KQS" -k qp -n 3
	run -0 cat "$BATS_TEST_TMPDIR/reuse"
	assert_line "qp created=3 errno=0"
	# gc knows the number is someone else's now: the kernel's limit goes (the ledger's too)
	run -0 "$RDMACTL" -j quota gc
	run -0 jq -e '.kernel_scopes_removed >= 1' <<<"$output"
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	run -0 jq -e --argjson p "$p" '[.[] | select(.formatted.key.type == 2 and .formatted.key.id % 4194304 == $p)] | length == 0' <<<"$output"
	# a process that lives keeps its limit through gc (the programs' start time is /proc's): it holds 1 PD
	steps_in s "$CG"
	run -0 "$RDMACTL" quota set pd 2 --pid "$SPID" --kernel
	run -0 "$RDMACTL" -j quota gc
	step s 1 "step 1 pd=1 errno=122"
}

# The host pid of the process whose command line holds $1 (a process in another pid namespace).
host_pid_of() {
	pgrep -f -- "$1" | head -n1
}

@test "a --pid kernel limit asked from inside a pid namespace names the process there: translated to the host's pid, it holds" {
	local t=$BATS_TEST_TMPDIR hp nsp lim
	# a tenant's process and the operator's rdmactl, both in a pid namespace of their own (a container)
	unshare -p -f --mount-proc bash -c '
		"$1" steps -S "$2/s" -c 1 >"$2/s" 2>&1 3>&- &
		p=$!
		until grep -q warm "$2/s"; do sleep 0.2; done
		"$3" quota set pd 2 --pid "$p" --kernel >"$2/set" 2>&1
		echo "rc=$? nspid=$p" >>"$2/set"
		"$3" quota set pd 2 --pid "$4" --kernel >"$2/bad" 2>&1
		echo "rc=$?" >>"$2/bad"
		wait "$p"' _ "$KQA" "$t" "$RDMACTL" "$$" 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q rc= "$t/bad" || { cat "$t/set" "$t/s" >&2; false; }
	hp=$(host_pid_of "steps -S $t/s")
	PIDS+=("$hp")
	run -0 cat "$t/set"
	assert_line --regexp '^rc=0 nspid=[0-9]+$'
	nsp=$(sed -n 's/^rc=0 nspid=//p' "$t/set")
	# the numbers differ (the namespace's are small), and the kernel's limit names the host's
	[ "$nsp" != "$hp" ]
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	lim=$output
	run -0 jq -e --argjson p "$hp" '[.[] | select(.formatted.key.type == 2 and .formatted.key.id % 4194304 == $p)] | length == 1' <<<"$lim"
	run -0 jq -e --argjson p "$nsp" '[.[] | select(.formatted.key.type == 2 and .formatted.key.id % 4194304 == $p)] | length == 0' <<<"$lim"
	# it holds: the process holds 1 PD, gets 1 more, then EDQUOT
	step s 1 "step 1 pd=1 errno=122"
	# a host's number (this shell's) names nobody there: refused as a number no process has (a usage error)
	run -0 cat "$t/bad"
	assert_line "rc=2"
	assert_output --partial "no process with pid $$"
}

@test "a cgroup or global kernel limit asked from inside a pid namespace is refused: its count would miss the processes outside" {
	local t=$BATS_TEST_TMPDIR k h
	# a process of the cgroup, outside the namespace, holds 2 PDs (until $t/hold exists)
	in_cg "$KQS" -k pd -n 2 -H "$t/hold" >"$t/out" 2>&1 3>&- &
	h=$!
	PIDS+=($h)
	wait_for 60 grep -q holding "$t/out" || { cat "$t/out" >&2; false; }
	run -1 unshare -p -f --mount-proc "$RDMACTL" quota set pd 2 --cgroup "$CG" --kernel
	assert_output --partial "nsenter -t 1 -p"
	run -1 unshare -p -f --mount-proc "$RDMACTL" quota set pd 5 --global --kernel
	assert_output --partial "nsenter -t 1 -p"
	# nothing was set: the cgroup's processes create freely (2 more PDs for a new one)
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	k=$(stat -c %i "$CG")
	run -0 jq -e --argjson c "$k" '[.[] | select((.formatted.key.type == 3 and .formatted.key.id == $c) or .formatted.key.type == 1)] | length == 0' <<<"$output"
	# from the host's namespace the same limit counts them: a new process gets none
	run -0 "$RDMACTL" quota set pd 2 --cgroup "$CG" --kernel
	run in_cg "$KQS" -k pd -n 1
	assert_line "pd created=0 errno=EDQUOT"
	touch "$t/hold"
	wait "$h"
}

@test "quota gc from inside a pid or cgroup namespace keeps the kernel limits of processes and cgroups it cannot see" {
	local lim
	mkdir "$CG/ns" "$CG/x"
	steps_in s "$CG/x"
	run -0 "$RDMACTL" quota set pd 2 --pid "$SPID" --kernel
	run -0 "$RDMACTL" quota set pd 3 --cgroup "$CG/x" --kernel
	# gc in a pid namespace: the host's process is not in its /proc
	run -0 unshare -p -f --mount-proc "$RDMACTL" quota gc
	# gc in a cgroup namespace rooted at $CG/ns, with its own cgroup2 mount (a container's view)
	run -0 bash -c 'echo $$ >"$1/cgroup.procs" && exec unshare -C -m sh -c "umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && \"\$0\" quota gc" "$2"' \
		_ "$CG/ns" "$RDMACTL"
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	lim=$output
	run -0 jq -e --argjson p "$SPID" '[.[] | select(.formatted.key.type == 2 and .formatted.key.id % 4194304 == $p)] | length == 1' <<<"$lim"
	run -0 jq -e --argjson c "$(stat -c %i "$CG/x")" '[.[] | select(.formatted.key.type == 3 and .formatted.key.id == $c)] | length == 1' <<<"$lim"
	# and they hold: 1 more PD (it holds 1), then EDQUOT
	step s 1 "step 1 pd=1 errno=122"
}

@test "a cgroup kernel limit asked from inside a cgroup namespace is refused: the cgroup's depth and limited ancestors are hidden there" {
	mkdir "$CG/ns"
	run -1 bash -c 'echo $$ >"$1/cgroup.procs" && exec unshare -C -m sh -c "umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && mkdir /sys/fs/cgroup/in && \"\$0\" quota set pd 2 --cgroup /sys/fs/cgroup/in --kernel" "$2"' \
		_ "$CG/ns" "$RDMACTL"
	assert_output --partial "cgroup namespace"
	assert_output --partial "nsenter -t 1 -C"
	run -0 bpftool -j map dump pinned "$PIN/kq_limits"
	run -0 jq -e --argjson c "$(stat -c %i "$CG/ns/in")" '[.[] | select(.formatted.key.type == 3 and .formatted.key.id == $c)] | length == 0' <<<"$output"
}


@test "pin directories an unprivileged user made first are refused, not used: the programs stay root's" {
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# bpffs as it is mounted by default: mode 1777, anybody may make a directory at its top
	rm -rf /sys/fs/bpf/rdmactl
	chmod 1777 /sys/fs/bpf
	run -0 "${nobody[@]}" mkdir -p /sys/fs/bpf/rdmactl/kq
	run --separate-stderr -1 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	[[ $stderr == *"not to root"* ]] || { echo "$stderr" >&2; false; }
	# nothing was pinned where that user can remove it
	run -0 ls -A /sys/fs/bpf/rdmactl/kq
	assert_output ""
	# root's own directory inside the user's: refused as well
	rm -rf /sys/fs/bpf/rdmactl/kq
	run -0 "${nobody[@]}" chmod 777 /sys/fs/bpf/rdmactl
	mkdir -m 0700 /sys/fs/bpf/rdmactl/kq
	run --separate-stderr -1 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	[[ $stderr == *"not to root"* ]] || { echo "$stderr" >&2; false; }
	# made by rdmactl itself (root, 0700): the limit holds, and that user cannot take it away
	rm -rf /sys/fs/bpf/rdmactl
	run -0 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	run "${nobody[@]}" rm -f "$PIN/link_kq_ioctl" "$PIN/link_kq_begin"
	[ "$status" -ne 0 ]
	run -3 in_cg timeout 60 "$KQS" -k qp -n 4
	assert_line "qp created=2 errno=EDQUOT"
}


# kq_state's field $1 (the programs' global state, lib/kq/kqload.c)
kq_state_field() {
	bpftool -j map dump pinned "$PIN/kq_state" | jq --arg f "$1" '(.[0].formatted // .[0]).value[$f]'
}

# Kill `quota set pd $1 --cgroup $CG --kernel` in the middle of its population (sets $landed to the try).
# kqkillpop watches kq_state and kills it once populating is set and the walk has recorded 500 records. It
# landed there when the dead command left kq_state.populating set (only kq_populate sets it, and clears it
# before it returns): kqkillpop's "dead populating=1", and bpftool's look at the map after it. Else (the set
# ended first) every limit is lifted (the records go with the last: a population records anew) and the set
# tried again; no landing in 4 tries fails the test.
kill_in_population() {
	local try
	landed=
	for try in 1 2 3 4; do
		run "$KQK" -n 500 -- "$RDMACTL" quota set pd "$1" --cgroup "$CG" --kernel
		echo "try $try: $output" >&2
		if [ "$status" = 0 ] && [[ $output == *"dead populating=1"* ]] && [ "$(kq_state_field populating)" = 1 ]; then
			landed=$try
			break
		fi
		[ "$status" = 3 ] || false
		run -0 "$RDMACTL" quota unset pd --cgroup "$CG" --kernel
		run -0 "$RDMACTL" quota unset qp --cgroup "$CG/other" --kernel
		run -0 "$RDMACTL" quota set qp 100 --cgroup "$CG/other" --kernel
	done
	[ -n "$landed" ] || { echo "no kill landed in the population in $try tries" >&2; false; }
	echo "# try $landed: killed in the population" >&3
}

# 2 processes in cgroup ${INCG:-$CG} hold 2,048 PDs each until $hold exists (their output in $out.1 and
# $out.2); sets pds to RDMA netlink's count of them, which must be 4,096.
hold_pds() {
	local i
	for i in 1 2; do
		in_cg "$KQS" -k pd -n 2048 -H "$hold" >"$out.$i" 2>&1 3>&- &
		PIDS+=($!)
	done
	for i in 1 2; do wait_for 120 grep -q holding "$out.$i" || { cat "$out.$i" >&2; false; }; done
	pds=$(nl_count kqverbs-static pd)
	[ "$pds" -eq 4096 ]
}

# After the last limits are lifted: no kernel limit, no record, no population marked, no limit counted.
assert_nothing_left() {
	run -0 "$RDMACTL" -j quota show
	run -0 jq -e '([.scopes[].kinds[] | .kernel_limit // empty] | length == 0) and .kernel_records == 0' <<<"$output" ||
		{ echo "$output" >&2; false; }
	[ "$(kq_state_field populating)" = 0 ] && [ "$(kq_state_field nlimits)" = 0 ]
}

# After such a kill: show names the scope whose limit never went in ($2, default $CG), exits 1, and claims no
# kernel limit there (no kernel pd limit, and no kernel usage that misses what the cgroup holds, $1).
show_says_unfinished() {
	local rc=0 j cg=${2:-$CG}
	j=$("$RDMACTL" -j quota show --cgroup "$cg" 2>/dev/null) || rc=$?
	[ "$rc" = 1 ] || { echo "show exited $rc: $j" >&2; false; }
	jq -e --argjson w "$1" --arg cg "cgroup ${cg#/sys/fs/cgroup}" '.kernel_enforced == true and .kernel_count_unfinished == true and
		(.kernel_unfinished | index($cg)) and (.scopes[0].kinds.pd |
		.kernel_limit == null and (.enforced_by | index("kernel") | not) and
		(.kernel_usage == null or .kernel_usage == $w))' <<<"$j" >/dev/null || { echo "$j" >&2; false; }
	run -1 "$RDMACTL" quota show --cgroup "$cg"
	assert_output --partial "a 'quota set --kernel' was killed before its limit went in (cgroup ${cg#/sys/fs/cgroup}): no kernel limit is in force there"
	run -0 "$RDMACTL" export --once
	assert_line "rdmactl_kernel_unfinished_scopes 1"
}

@test "quota set --kernel SIGKILLed while it counts what exists: show says so and claims no limit, the next set counts exactly, gc clears it, nothing is left" {
	local hold=$BATS_TEST_TMPDIR/release out=$BATS_TEST_TMPDIR/h i landed pds objs lim j
	# another limit keeps the programs attached: a first limit on $CG is then its count (population, rescan)
	mkdir "$CG/other"
	run -0 "$RDMACTL" quota set qp 100 --cgroup "$CG/other" --kernel
	# 2 processes hold 2,048 PDs each: the population has 4,098 records to make
	hold_pds
	lim=$((pds + 2))
	kill_in_population "$lim"
	show_says_unfinished "$pds"
	# the same limit set again: counted exactly, enforced (2 more PDs of the 4 asked), the population's state cleared
	run -0 "$RDMACTL" quota set pd "$lim" --cgroup "$CG" --kernel
	assert_usage_is_netlink "$CG" kqverbs-static
	run -3 in_cg timeout 60 "$KQS" -k pd -n 4
	assert_line "pd created=2 errno=EDQUOT"
	[ "$(kq_state_field populating)" = 0 ] && [ "$(kq_state_field pop_want)" = 0 ]
	# every record is a charged object's: the 4,096 PDs and the 2 holders' contexts, no population's leftover
	objs=$((pds + $(nl_count kqverbs-static ctx)))
	run -0 "$RDMACTL" -j quota show
	run -0 jq -e --argjson n "$objs" '.kernel_records == $n and .kernel_lost == 0 and .kernel_unfinished == [] and
		.kernel_count_unfinished == false' <<<"$output" || { echo "$output" >&2; false; }
	# killed again, and this time gc clears what it left (show exits 0 again, nothing of it in kq_state);
	# the limit then set again counts exactly (every limit lifted first: a population then records anew)
	run -0 "$RDMACTL" quota unset pd --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG/other" --kernel
	run -0 "$RDMACTL" quota set qp 100 --cgroup "$CG/other" --kernel
	kill_in_population "$lim"
	show_says_unfinished "$pds"
	run -0 "$RDMACTL" quota gc
	assert_output --partial "removed 1 kernel scope that a killed 'quota set --kernel' left without its limit"
	run -0 "$RDMACTL" -j quota show --cgroup "$CG"
	run -0 jq -e '.kernel_unfinished == [] and .kernel_count_unfinished == false and
		.scopes[0].kinds.pd.kernel_limit == null' <<<"$output" || { echo "$output" >&2; false; }
	run -0 "$RDMACTL" export --once
	assert_line "rdmactl_kernel_unfinished_scopes 0"
	[ "$(kq_state_field populating)" = 0 ] && [ "$(kq_state_field pop_want)" = 0 ]
	run -0 "$RDMACTL" quota set pd "$lim" --cgroup "$CG" --kernel
	assert_usage_is_netlink "$CG" kqverbs-static
	# released: given back exactly; the last limits lifted: no record, no scope, no population marked
	touch "$hold"
	wait "${PIDS[@]}"
	PIDS=()
	assert_usage_is_netlink "$CG" kqverbs-static
	run -0 "$RDMACTL" quota unset pd --cgroup "$CG" --kernel
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG/other" --kernel
	assert_nothing_left
}

@test "quota set --kernel SIGKILLed while it gives what exists the new scope (the rescan): the parent's usage stays exact, show says so, the next set counts exactly" {
	local hold=$BATS_TEST_TMPDIR/release out=$BATS_TEST_TMPDIR/h i try delay landed= pds lim
	# PDs made in $CG/sub under a limit on $CG are recorded, charged to $CG: a first limit on $CG/sub finds
	# them recorded (the population makes no record) and the rescan gives each of them the new scope
	mkdir "$CG/sub"
	run -0 "$RDMACTL" quota set pd 100000 --cgroup "$CG" --kernel
	INCG=$CG/sub hold_pds
	lim=$((pds + 2))
	# killed some milliseconds into the rescan (kqkillpop -r): landed when the dead command left
	# kq_state.populating at KQ_RESCANNING (the rescan clears it before it returns); else lifted, tried again
	try=0
	for delay in 40000 10000 2000 0; do
		try=$((try + 1))
		run "$KQK" -r "$delay" -- "$RDMACTL" quota set pd "$lim" --cgroup "$CG/sub" --kernel
		echo "try $try: $output" >&2
		if [ "$status" = 0 ] && [[ $output == *"dead populating=2"* ]]; then
			landed=$try
			break
		fi
		# the set ended first (3), or the kill came just after the rescan (0): lifted, tried again
		[ "$status" = 3 ] || [ "$status" = 0 ] || false
		run -0 "$RDMACTL" quota unset pd --cgroup "$CG/sub" --kernel
	done
	[ -n "$landed" ] || { echo "no kill landed in the rescan in $try tries" >&2; false; }
	echo "# try $landed: killed in the rescan" >&3
	show_says_unfinished "$pds" "$CG/sub"
	# the records the dead rescan gave its scope keep their charge to $CG: its usage is still RDMA netlink's
	# (show exits 1 while the dead set's scope is left)
	SHOW_RC=1 assert_usage_is_netlink "$CG" kqverbs-static
	# set again: counted exactly, enforced (2 more PDs of the 4 asked), in both scopes
	run -0 "$RDMACTL" quota set pd "$lim" --cgroup "$CG/sub" --kernel
	[ "$(kq_state_field populating)" = 0 ]
	assert_usage_is_netlink "$CG/sub" kqverbs-static
	INCG=$CG/sub run -3 in_cg timeout 60 "$KQS" -k pd -n 4
	assert_line "pd created=2 errno=EDQUOT"
	assert_usage_is_netlink "$CG/sub" kqverbs-static
	assert_usage_is_netlink "$CG" kqverbs-static
	# released: given back exactly to both; the last limits lifted: no record, no scope
	touch "$hold"
	wait "${PIDS[@]}"
	PIDS=()
	assert_usage_is_netlink "$CG/sub" kqverbs-static
	assert_usage_is_netlink "$CG" kqverbs-static
	run -0 "$RDMACTL" quota unset pd --cgroup "$CG/sub" --kernel
	run -0 "$RDMACTL" quota unset pd --cgroup "$CG" --kernel
	assert_nothing_left
}
