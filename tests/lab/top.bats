#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl top against real rxe objects held by rdma-core, perftest and holdres, checked against iproute2 rdma.

load ../helper
load counters

HOLDRES=$BUILD/lab-progs/holdres

setup() {
	require_lab
	T=$BATS_TEST_TMPDIR
	pids=()
	# no ledger unless a test makes one: a default ledger left by another suite (the OCI hook's, Slurm's)
	# would add the quota columns to every layout checked here
	export RDMACTL_LEDGER=$T/no-ledger
}

teardown() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	tmux kill-server 2>/dev/null || true
	rdma link delete rxetop 2>/dev/null || true
	ip link del toptest0 2>/dev/null || true
}

listening() {
	ss -Hltn "sport = :$1" | grep -q .
}

# The same shape from one rdmactl top JSON snapshot on stdin.
top_grouped() {
	jq -S '.processes
		| map({ key: (if .kind == "process" then "p\(.pid)" elif .kind == "kernel" then "k\(.comm)" else "u" end),
			value: { ctx, pd, cq, qp, srq, mr, cm_id, mr_bytes } })
		| from_entries'
}

# Compare both views; retry when iproute2's own view changed while we looked (a peer still setting up).
compare_with_rdma() {
	local i
	for i in 1 2 3 4 5; do
		rdma_grouped >"$T/want1" || return 1
		"$RDMACTL" top -b -n1 -j >"$T/top.json" || return 1
		rdma_grouped >"$T/want2" || return 1
		top_grouped <"$T/top.json" >"$T/got"
		cmp -s "$T/want1" "$T/want2" && break
		sleep 1
	done
	diff -u "$T/want1" "$T/got"
}

@test "top -j equals rdma res show grouped by process: ib_write_bw, ibv_rc_pingpong, holdres threads" {
	timeout 700 ib_write_bw -d rxe0 -x 1 -q 4 -D 600 -p 18700 >"$T/bw-srv" 2>&1 3>&- &
	pids+=($!)
	timeout 700 ibv_rc_pingpong -d rxe0 -g 1 -p 18701 -n 100000000 >"$T/pp-srv" 2>&1 3>&- &
	pids+=($!)
	# Clients only once their server listens (a loaded machine can take seconds to get there).
	wait_for 60 listening 18700
	timeout 700 ib_write_bw -d rxe0 -x 1 -q 4 -D 600 -p 18700 192.0.2.1 >"$T/bw-cli" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 listening 18701
	timeout 700 ibv_rc_pingpong -d rxe0 -g 1 -p 18701 -n 100000000 192.0.2.1 >"$T/pp-cli" 2>&1 3>&- &
	pids+=($!)
	start_holdres -q 13 -m 3M -t 4
	local h1=$hr
	start_holdres -q 5 -m 100K -t 2
	local h2=$hr
	# Both perftest sides have their 4 QPs, both pingpong sides their QP.
	wait_for 60 bash -c '[ "$(rdma -j res show qp | jq "[.[] | select(.comm == \"ib_write_bw\")] | length")" = 8 ]' ||
		{ cat "$T/bw-srv" "$T/bw-cli" >&2; false; }
	wait_for 60 bash -c '[ "$(rdma -j res show qp | jq "[.[] | select(.comm == \"ibv_rc_pingpong\")] | length")" = 2 ]' ||
		{ cat "$T/pp-srv" "$T/pp-cli" >&2; false; }

	run compare_with_rdma
	assert_success
	jq -c '.processes[]' "$T/top.json" # shown when a check below fails

	# holdres: 4 threads created 13 QPs, 4 CQs and 4 MRs of 3 MiB, all charged to the process.
	run jq -e --argjson p "$h1" '.processes[] | select(.pid == $p)
		| .comm == "holdres" and .qp == 13 and .cq == 4 and .mr == 4 and .mr_bytes == 4 * 3145728
		  and .ctx == 1 and .pd == 1 and .kind == "process" and .user == "root"' "$T/top.json"
	assert_success
	run jq -e --argjson p "$h2" '.processes[] | select(.pid == $p) | .qp == 5 and .mr_bytes == 2 * 102400' "$T/top.json"
	assert_success
	# The perftest peers are two processes with 4 QPs each.
	run jq -e '[.processes[] | select(.comm == "ib_write_bw") | .qp] == [4, 4]' "$T/top.json"
	assert_success
	# Totals per device: the sum of the rows (no filter) and the kernel's own RES_GET summary.
	run jq -e '.devices[0] as $d | [.processes[].qp] | add == $d.totals.qp and $d.summary.qp == $d.totals.qp' "$T/top.json"
	assert_success
	run jq -e '.devices[0] as $d | ([.processes[].mr_bytes] | add) == $d.totals.mr_bytes and .totals == ($d.totals)' "$T/top.json"
	assert_success
}

@test "objects of threads that exited count on the process of their context; without a live opener they are one [unknown] row" {
	# the threads that created QPs, CQs and MRs exited; the main thread holds the context and the PD
	start_holdres -q 3 -m 64K -t 3 -e
	local p1=$hr
	# here a thread that exited opened the device and allocated the PD too: nothing names a process
	start_holdres -q 2 -m 64K -t 2 -E
	local p2=$hr
	# the kernel lists the objects of the exited threads without a pid (an io_uring worker's too, once it exits)
	[ "$(rdma -j res show qp | jq '[.[] | select(.pid == null and (.comm // "") == "")] | length')" = 5 ]
	run compare_with_rdma
	assert_success
	run jq -e --argjson p "$p1" '.processes[] | select(.pid == $p)
		| .ctx == 1 and .pd == 1 and .qp == 3 and .cq == 3 and .mr == 3 and .mr_bytes == 3 * 65536' "$T/top.json"
	assert_success
	run jq -e '[.processes[] | select(.kind == "unknown")] | length == 1 and (.[0] | .comm == "[unknown]"
		and .ctx == 1 and .pd == 1 and .qp == 2 and .cq == 2 and .mr == 2)' "$T/top.json"
	assert_success
	run jq -e --argjson p "$p2" '[.processes[] | select(.pid == $p)] | length == 0' "$T/top.json"
	assert_success
}

@test "PDs an io_uring worker made count on its process, while the worker lives and after it exited" {
	local out=$T/uring
	"$BUILD/lab-progs/kquring" write -n 4 -m async -H "$T/release" >"$out" 2>&1 3>&- &
	local u=$!
	pids+=("$u")
	wait_for 60 grep -q holding "$out" || { cat "$out" >&2; false; }
	grep -qx "uring pd ok=4 refused=0 other=0 errno=0" "$out" || { cat "$out" >&2; false; }
	# RDMA netlink names the workers (iou-wrk-PID), or no pid at all for those that exited
	[ "$(rdma -j res show pd | jq --argjson u "$u" '[.[] | select(.pid != $u and ((.pid == null and (.comm // "") == "") or ((.comm // "") | startswith("iou-wrk"))))] | length')" = 4 ] ||
		{ rdma res show pd >&2; false; }
	run compare_with_rdma
	assert_success
	run jq -e --argjson p "$u" '.processes[] | select(.pid == $p) | .ctx == 1 and .pd == 4 and .comm == "kquring"' "$T/top.json"
	assert_success
	# an idle worker exits after a few seconds (all but the last): the same rows
	sleep 7
	run compare_with_rdma
	assert_success
	run jq -e --argjson p "$u" '.processes[] | select(.pid == $p) | .ctx == 1 and .pd == 4' "$T/top.json"
	assert_success
	touch "$T/release"
}

@test "SRQ and CM_ID objects are counted (ibv_srq_pingpong, rping)" {
	timeout 60 ibv_srq_pingpong -d rxe0 -g 1 -p 18702 -n 100000000 >"$T/srq-srv" 2>&1 3>&- &
	local srv=$!
	pids+=("$srv")
	timeout 60 rping -s -a 192.0.2.1 -p 18703 -C 100000000 >"$T/rping" 2>&1 3>&- &
	local rp=$!
	pids+=("$rp")
	wait_for 30 bash -c "rdma -j res show srq | jq -e 'length >= 1' >/dev/null"
	wait_for 30 bash -c "rdma -j res show cm_id | jq -e 'length >= 1' >/dev/null"
	run compare_with_rdma
	assert_success
	run jq -e '[.processes[] | select(.comm == "ibv_srq_pingpon")] | .[0].srq == 1' "$T/top.json"
	assert_success
	run jq -e '[.processes[] | select(.comm == "rping")] | .[0].cm_id >= 1' "$T/top.json"
	assert_success
}

@test "a process that exits disappears from the next snapshot; a new one appears" {
	start_holdres -q 2 -t 1
	local old=$hr
	run -0 "$RDMACTL" top -b -n1 -j
	run jq -e --argjson p "$old" '[.processes[] | select(.pid == $p)] | length == 1' <<<"$output"
	assert_success
	kill "$old"
	wait "$old" || true
	start_holdres -q 1 -t 1
	run -0 "$RDMACTL" top -b -n1 -j
	run jq -e --argjson o "$old" --argjson n "$hr" \
		'([.processes[] | select(.pid == $o)] | length == 0) and ([.processes[] | select(.pid == $n)] | length == 1)' \
		<<<"$output"
	assert_success
}

@test "filters --pid --comm --user --dev and sort keys" {
	start_holdres -q 7 -m 1M -t 2
	local a=$hr
	start_holdres -q 2 -m 8M -t 1
	local b=$hr
	run -0 "$RDMACTL" top -b -n1 -j --pid "$a"
	run jq -e --argjson a "$a" '[.processes[].pid] == [$a]' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --pid "$a" --pid "$b" -s pid
	run jq -e --argjson a "$a" --argjson b "$b" '[.processes[].pid] == ([$a, $b] | sort)' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --comm holdres -s qp
	run jq -e --argjson a "$a" --argjson b "$b" '[.processes[].pid] == [$a, $b] and .sort == "qp"' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --comm holdres -s mr_b
	run jq -e --argjson a "$a" --argjson b "$b" '[.processes[].pid] == [$b, $a] and .sort == "mr_bytes"' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --comm holdres -s qp -r
	run jq -e --argjson a "$a" --argjson b "$b" '[.processes[].pid] == [$b, $a]' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --user root --comm holdres
	run jq -e '[.processes[] | .user] | unique == ["root"]' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --user nobody
	run jq -e '.processes == [] and .devices[0].totals.qp >= 9' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --dev rxe0
	run jq -e '[.devices[].name] == ["rxe0"]' <<<"$output"
	assert_success
	run -1 --separate-stderr "$RDMACTL" top -b -n1 -j --dev mlx5_9
	assert_equal "$output" ""
	[[ $stderr == *"no RDMA device 'mlx5_9'"* ]]
	# The text view: the header, one line per process, a totals line for the device.
	run -0 "$RDMACTL" top -b -n1 --comm holdres
	assert_line --regexp "^ +PID USER +COMM +CTX +PD +CQ +QP +SRQ +MR +MR-BYTES +CM_ID +QP-STATES$"
	assert_line --regexp "^ +$a root +holdres +1 +1 +2 +7 +0 +2 +2M +0 +RESET:7$"
	assert_line --regexp "^ +$b root +holdres +1 +1 +1 +2 +0 +1 +8M +0 +RESET:2$"
	assert_line --regexp "^ +total +rxe0 "
	assert_line --regexp "^rxe0: port 1 ACTIVE \(veth0\)"
}

@test "batch mode: -n COUNT snapshots, one JSON object per line; text when stdout is not a terminal" {
	start_holdres -q 1
	run -0 --separate-stderr "$RDMACTL" top -b -n 3 -d 0.2 -j
	assert_equal "${#lines[@]}" 3
	for l in "${lines[@]}"; do jq -e '.devices and .processes and .totals and .time' <<<"$l" >/dev/null; done
	assert_equal "$stderr" ""
	# Without -b and without a terminal: batch text, not a screen.
	run -0 bash -c "'$RDMACTL' top -n 2 -d 0 </dev/null | cat"
	[ "$(grep -c '^rdmactl top - ' <<<"$output")" = 2 ]
	assert_line --regexp "^ +$hr root +holdres "
}

@test "not root: works with what netlink allows and says so" {
	start_holdres -q 3
	run -0 --separate-stderr setpriv --reuid 65534 --regid 65534 --clear-groups "$RDMACTL" top -b -n1 -j
	run jq -e --argjson p "$hr" '.privileged == false and ([.processes[] | select(.pid == $p) | .qp] == [3])' <<<"$output"
	assert_success
	run -0 setpriv --reuid 65534 --regid 65534 --clear-groups "$RDMACTL" top -b -n1
	assert_output --partial "not root: the kernel leaves out MR keys"
}

@test "interactive: screen with header and rows, sort keys, resize, q quits (tmux)" {
	start_holdres -q 4 -m 2M -t 2
	tmux new-session -d -s top -x 120 -y 30 "$RDMACTL top -d 0.5"
	wait_for 20 bash -c "tmux capture-pane -p -t top | grep -q ' holdres '"
	run tmux capture-pane -p -t top
	assert_line --regexp "^rdmactl top - .* sort qp"
	assert_line --regexp "^ +PID USER +COMM +CTX"
	assert_line --regexp "^ +$hr root +holdres +1 +1 +2 +4 +0 +2 +4M +0"
	assert_line --regexp "^ +total +rxe0"
	tmux send-keys -t top s
	wait_for 10 bash -c "tmux capture-pane -p -t top | grep -q 'sort srq'"
	tmux send-keys -t top S S
	wait_for 10 bash -c "tmux capture-pane -p -t top | grep -q 'sort cq'"
	tmux resize-window -t top -x 70 -y 12
	wait_for 10 bash -c "[ \"\$(tmux capture-pane -p -t top | head -1 | wc -L)\" -le 70 ]"
	run tmux capture-pane -p -t top
	assert_line --regexp "^ +PID USER +COMM"
	kill "$hr"
	wait "$hr" || true
	wait_for 10 bash -c "! tmux capture-pane -p -t top | grep -q ' holdres '"
	tmux send-keys -t top q
	wait_for 10 bash -c "! tmux has-session -t top 2>/dev/null"
}

@test "a second device: listed, filtered with --dev, and its removal during batch mode is not an error" {
	ip link add toptest0 type veth peer name toptest1
	ip link set toptest0 up
	ip link set toptest1 up
	rdma link add rxetop type rxe netdev toptest0
	start_holdres -d rxetop -q 3 -m 128K
	# Every new RoCE device also gets the kernel's GSI QP (QP1): 3 + 1 QPs on rxetop.
	"$RDMACTL" top -b -n1 -j >"$T/two"
	jq -e --argjson p "$hr" '([.devices[].name] | sort) == ["rxe0", "rxetop"]
		and (.processes[] | select(.pid == $p) | .devices == ["rxetop"] and .qp == 3)
		and (.devices[] | select(.name == "rxetop") | .totals.qp == .summary.qp and .totals.qp == 3 + 1
			and .ports[0].netdev == "toptest0")' "$T/two" ||
		{ jq . "$T/two"; rdma link show; false; }
	run -0 "$RDMACTL" top -b -n1 -j --dev rxetop
	run jq -e --argjson p "$hr" '[.devices[].name] == ["rxetop"] and .totals.qp == 4
		and [.processes[] | select(.kind == "process") | .pid] == [$p]' <<<"$output"
	assert_success
	run -0 "$RDMACTL" top -b -n1 -j --dev rxe0
	run jq -e --argjson p "$hr" '[.processes[] | select(.pid == $p)] == []' <<<"$output"
	assert_success

	"$RDMACTL" top -b -d 0 -n 100000 -j >"$T/stream" 2>"$T/stream.err" 3>&- &
	local top=$!
	pids+=("$top")
	wait_for 20 grep -q rxetop "$T/stream"
	kill "$hr"
	wait "$hr" || true
	rdma link delete rxetop
	# More devices coming and going while top dumps back to back, to catch one in the middle.
	local i
	for i in 1 2 3 4 5 6; do
		rdma link add rxetop type rxe netdev toptest0
		sleep 0.$((RANDOM % 5))
		rdma link delete rxetop
	done
	ip link del toptest0
	# Snapshots go on with rxe0 only.
	wait_for 30 bash -c "tail -n 1 '$T/stream' | jq -e '[.devices[].name] == [\"rxe0\"]' >/dev/null"
	kill "$top"
	wait "$top" || true
	run cat "$T/stream.err"
	assert_output ""
	run jq -e -s 'all(.devices | length >= 1)' "$T/stream"
	assert_success
}

@test "quota: a process that got the pid of a killed managed one is not managed (top, export, monitor --audit)" {
	export RDMACTL_LEDGER=$T/ledger
	"$RDMACTL" quota init >/dev/null
	local out=$T/preloaded m
	LD_PRELOAD=$PRELOAD "$HOLDRES" -q 1 >"$out" 2>&1 3>&- &
	m=$!
	pids+=("$m")
	wait_for 60 grep -q ready "$out" || { cat "$out" >&2; return 1; }
	run -0 "$RDMACTL" top -b -n1 -j --pid "$m"
	jq -e '.processes[0].quota.managed == true' <<<"$output"
	# killed: its slot stays in the ledger until a gc; the next process started takes its pid
	kill -9 "$m"
	wait "$m" || true
	echo $((m - 1)) >/proc/sys/kernel/ns_last_pid
	start_holdres -q 2
	[ "$hr" = "$m" ] || { echo "pid $m not reused (got $hr)" >&2; return 1; }
	run -0 "$RDMACTL" top -b -n1 -j --pid "$hr"
	jq -e '.processes[0] | .qp == 2 and .quota.managed == false' <<<"$output"
	run -0 "$RDMACTL" export --once --per-process
	assert_line --regexp "^rdmactl_process_managed\\{pid=\"$hr\",.*\\} 0$"
	# the audit's gc reclaims the slot first: unmanaged there too
	run -0 "$RDMACTL" monitor --audit -j --interval 30 --duration 1
	jq -s -e --argjson p "$hr" '[.[] | select(.pid == $p)] | length == 1 and .[0].managed == false' <<<"$output"
}

@test "quota: a process under rdmactl run shows its job limit and ledger use; one started without run is unmanaged" {
	export RDMACTL_LEDGER=$T/ledger
	"$RDMACTL" quota init >/dev/null
	local out=$T/managed m a
	"$RDMACTL" run --job topq --max-qp 3 -- "$HOLDRES" -q 2 -m 64K >"$out" 2>&1 3>&- &
	pids+=("$!")
	wait_for 60 grep -q ready "$out" || { cat "$out" >&2; return 1; }
	m=$(pgrep -P "${pids[0]}" -x holdres)
	[ -n "$m" ]
	start_holdres -q 1
	a=$hr
	run -0 --separate-stderr "$RDMACTL" top -b -n1 -j --comm holdres
	assert_equal "$stderr" ""
	echo "$output" >"$T/top.json"
	jq -e '.ledger == true' "$T/top.json"
	# managed: limit 3 from its job, its ledger use equals what the kernel lists for it
	jq -e --argjson p "$m" '.processes[] | select(.pid == $p)
		| .qp == 2 and .quota.managed == true and .quota.job == "topq"
		  and .quota.limits.qp == 3 and .quota.limit_scopes.qp == "job" and .quota.scope_usage.qp == 2
		  and .quota.limits.mr == null
		  and ([.ctx, .pd, .cq, .qp, .srq, .mr, .mr_bytes]
		       == [.quota.ledger_usage | .ctx, .pd, .cq, .qp, .srq, .mr, .mr_bytes])
		  and .quota.ledger_usage.mr_bytes > 0' "$T/top.json"
	jq -e --argjson p "$a" '.processes[] | select(.pid == $p)
		| .qp == 1 and .quota.managed == false and (.quota | has("limits") | not)' "$T/top.json"
	# a pid limit tighter than the job's wins
	"$RDMACTL" quota set qp 2 --pid "$m" >/dev/null
	run -0 "$RDMACTL" top -b -n1 -j --pid "$m"
	jq -e '.processes[0].quota | .limits.qp == 2 and .limit_scopes.qp == "process"' <<<"$output"
	# text: a quota column, used/limit for the managed one, "unmanaged" for the other
	run -0 "$RDMACTL" top -b -n1 --comm holdres
	assert_line --regexp "^ +PID USER +COMM .* CM_ID +QP-QUOTA +MRB-QUOTA +DENY +QP-STATES$"
	assert_line --regexp "^ +$m root +holdres .* 2/2 +64K/- +0 +RESET:2$"
	assert_line --regexp "^ +$a root +holdres .* unmanaged +- +0 +RESET:1$"
	# --ledger PATH wins over the environment; no ledger there: no quota, no error, -v says why
	run -0 --separate-stderr "$RDMACTL" top -b -n1 -j --ledger "$T/none"
	assert_equal "$stderr" ""
	jq -e '.ledger == false and all(.processes[]; .quota == null)' <<<"$output"
	run -0 --separate-stderr "$RDMACTL" top -b -n1 -j -v --ledger "$T/none"
	[[ $stderr == *"no quota columns"* ]]
	run -0 "$RDMACTL" top -b -n1 --ledger "$T/none"
	refute_output --partial QP-QUOTA
}

@test "rates: with rdmactl monitor running, a QP create/destroy storm shows a QP create rate from the second snapshot" {
	local mon=$T/mon st
	"$RDMACTL" monitor -j --stats=60 >"$mon" 2>"$mon.err" 3>&- &
	pids+=("$!")
	wait_for 60 grep -q '"event":"start"' "$mon" || { cat "$mon.err" >&2; return 1; }
	[ -e /sys/fs/bpf/rdmactl/counters ]
	"$BUILD/lab-progs/storm" -d rxe0 -p 1 -n 100000000 -k qp >"$T/storm" 2>&1 3>&- &
	st=$!
	pids+=("$st")
	# its worker holds a context while it creates and destroys QPs: a row of its own
	wait_for 30 bash -c "'$RDMACTL' top -b -n1 -j --comm storm | jq -e '.processes | length == 1' >/dev/null"
	run -0 --separate-stderr "$RDMACTL" top -b -n2 -d1 -j --comm storm
	assert_equal "${#lines[@]}" 2
	# first snapshot: no previous read of the counters, so no rates
	jq -e '.rate_interval_s == null and all(.processes[]; .rates == null)' <<<"${lines[0]}"
	jq -e '.rate_interval_s > 0.5 and (.processes | length == 1)
		and (.processes[0].rates | .qp.create > 0 and .qp.destroy > 0 and .total.create >= .qp.create)' <<<"${lines[1]}"
	jq -e '.processes[0].pid != '"$st" <<<"${lines[1]}"
	# the text view gets rate columns too
	run -0 "$RDMACTL" top -b -n2 -d0.5 --comm storm
	assert_line --regexp "^ +PID USER +COMM .* CM_ID +QP\\+/s +QP-/s +ALL\\+/s +QP-STATES$"
	pkill -P "$st" || true
	kill -INT "${pids[0]}"
	wait "${pids[0]}"
	# no monitor, no pinned counters: no rates, no error
	run -0 --separate-stderr "$RDMACTL" top -b -n2 -d0.2 -j
	assert_equal "$stderr" ""
	jq -e '.rate_interval_s == null' <<<"${lines[1]}"
}

# --- counts from the monitor's counters (--no-qp-states; issue 32) ---------------------------------------

# One top --no-qp-states snapshot into $T/top.json, its processes into $T/got.
top_procs() {
	"$RDMACTL" top -b -n1 -j --no-qp-states >"$T/top.json" || return 1
	top_grouped <"$T/top.json" | jq -S 'with_entries(select(.key | startswith("p")))' >"$T/got"
}

# top --no-qp-states against iproute2's processes; the source must be $1.
compare_counters() {
	settle_procs top_procs || return 1
	jq -e --arg s "$1" '.source == $s' "$T/top.json" || { jq -c '{source, source_reason}' "$T/top.json" >&2; return 1; }
	diff -u "$T/want" "$T/got"
}

@test "counters: a monitor started with no user object: top --no-qp-states counts from it, equal to rdma res show; lost counts or a base the kernel disagrees with: the dump" {
	local a
	monitor_then_holders
	run compare_counters counters
	assert_success
	jq -e '.source_reason == null and all(.processes[]; .devices == null and .kind == "process" and (has("qp_states") | not))
		and (.devices[0] | .totals.qp == .summary.qp and (has("qp_states") | not))' "$T/top.json"
	# the text view says so and has no QP-STATES column
	run -0 "$RDMACTL" top -b -n1 --no-qp-states
	assert_line --partial "from the monitor's counters"
	refute_output --partial QP-STATES
	# without the option: the dump, as always
	run -0 "$RDMACTL" top -b -n1 -j
	jq -e '.source == "dump" and (has("source_reason") | not) and (.processes[0] | has("qp_states"))' <<<"$output"
	# objects destroyed (a holder exits), others created: still equal
	kill "$a"
	wait "$a" || true
	start_holdres -q 3 -m 1M -t 1
	run compare_counters counters
	assert_success
	# lost_counters (offset 0): the counts are never trusted again
	status_poke 0 0x01
	run -0 "$RDMACTL" top -b -n1 -j --no-qp-states
	jq -e '.source == "dump" and (.source_reason | test("lost 1 counts"))' <<<"$output"
	status_poke 0 0x00
	run -0 "$RDMACTL" top -b -n1 -j --no-qp-states
	jq -e '.source == "counters"' <<<"$output"
	# the first device's QP base (offset 64): a QP the counters would not know of; the summary check sees it,
	# and the counts (from the dump) are still right
	local was
	was=$(status_peek 64)
	status_poke 64 0x7f
	run compare_counters dump
	assert_success
	jq -e '.source_reason | test("the kernel counts [0-9]+ qp")' "$T/top.json"
	status_poke 64 "$was"
	# a create/destroy storm beside them: whichever the source of each snapshot (the counters, or the dump
	# when an operation was in flight three times), the holders' rows are exact
	"$BUILD/lab-progs/storm" -d rxe0 -p 1 -n 100000000 -k qp >"$T/storm" 2>&1 3>&- &
	local st=$!
	pids+=("$st")
	rdma_procs >"$T/before"
	local i
	for i in 1 2 3; do
		"$RDMACTL" top -b -n1 -j --no-qp-states --comm holdres >"$T/top.json"
		echo "# storm snapshot $i: $(jq -c '{source, source_reason}' "$T/top.json")" >&3
		top_grouped <"$T/top.json" >"$T/got"
		jq -S --slurpfile t "$T/got" 'with_entries(select(.key as $k | $t[0] | has($k)))' "$T/before" >"$T/want"
		diff -u "$T/want" "$T/got"
		[ "$(jq length "$T/got")" = 2 ]
	done
	pkill -P "$st" || true
}

# Each process's QPs by state in one top JSON snapshot on stdin: {"p<pid>": {"RESET": n, ...}}, processes only.
qp_states_of() {
	jq -S '.processes | map(select(.kind == "process") | { key: "p\(.pid)", value: (.qp_states | with_entries(select(.value > 0))) }) | from_entries'
}

@test "counters: top --counters asks each QP's state by the number the monitor keeps: equal to the dump's, QPs never given a port in RESET; numbers that do not match the counts: the dump" {
	start_monitor
	grep -q "counts complete" "$T/mon.err" || { cat "$T/mon.err" >&2; false; }
	"$BUILD/lab-progs/qpstates" -d rxe0 -g 1 reset init rtr rts rts err >"$T/qps" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q '^ready' "$T/qps" || { cat "$T/qps" >&2; false; }
	# 2 threads of 10 QPs each: every third of a thread's (0, 3, 6, 9) in INIT, the rest never given a port
	start_holdres -q 20 -i 3 -m 64K -t 2
	run -0 "$RDMACTL" top -b -n1 -j
	jq -e '.source == "dump"' <<<"$output"
	qp_states_of <<<"$output" >"$T/want"
	jq -e '[.[]] | length == 2 and (map(.RESET // 0) | add) == 13' "$T/want"
	run -0 "$RDMACTL" top -b -n1 -j --counters
	jq -e '.source == "counters" and .source_reason == null and .qp_reset_without_port == 13' <<<"$output"
	qp_states_of <<<"$output" >"$T/got"
	diff -u "$T/want" "$T/got"
	# the device's totals are the processes' QPs by state
	jq -e '.devices[0].totals.qp_states | .INIT == 9 and .RTR == 1 and .RTS == 2 and .ERR == 1 and .RESET == 13' <<<"$output"
	# the text view has the QP-STATES column
	run -0 "$RDMACTL" top -b -n1 --counters --comm qpstates
	assert_line --partial "from the monitor's counters"
	assert_line --regexp "qpstates .* RESET:1,INIT:1,RTR:1,RTS:2,ERR:1$"
	# a QP create/destroy storm beside them: numbers read that are gone when asked for (retried, then the
	# dump), counts that move between the reads; whichever the source of each snapshot, the processes that
	# hold still have their QPs in their states
	"$BUILD/lab-progs/storm" -d rxe0 -p 1 -n 100000000 -k qp >"$T/storm" 2>&1 3>&- &
	local st=$! snap
	pids+=("$st")
	wait_for 30 bash -c "'$RDMACTL' top -b -n1 -j --comm storm | jq -e '.processes | length == 1' >/dev/null"
	for snap in 1 2 3 4 5; do # (not i: bats's run sets it)
		run -0 --separate-stderr "$RDMACTL" top -b -n1 -j --counters
		echo "# storm snapshot $snap: $(jq -c '{source, source_reason}' <<<"$output")" >&3
		qp_states_of <<<"$output" | jq -S --slurpfile w "$T/want" 'with_entries(select(.key as $k | $w[0] | has($k)))' >"$T/got"
		diff -u "$T/want" "$T/got"
	done
	pkill -P "$st" || true
	kill "$st" 2>/dev/null || true
	wait "$st" 2>/dev/null || true
	wait_for 30 bash -c '! pgrep -x storm >/dev/null'
	# the status names another map of QP numbers (dev[0].aux, offset 44: its map id): pins of two monitors
	local was
	was=$(status_peek 47)
	status_poke 47 0x7f
	run -0 "$RDMACTL" top -b -n1 -j --counters
	jq -e '.source == "dump" and (.source_reason | test("different monitors"))' <<<"$output"
	status_poke 47 "$was"
	run -0 "$RDMACTL" top -b -n1 -j --counters
	jq -e '.source == "counters"' <<<"$output"
	# a QP number the monitor lost: the numbers no longer match the counts, and top says so and dumps
	local key
	key=$(bpftool -j map dump pinned /sys/fs/bpf/rdmactl/qpids | jq -r '.[0].key | map(ltrimstr("0x")) | join(" ")')
	bpftool map delete pinned /sys/fs/bpf/rdmactl/qpids key hex $key
	run -0 "$RDMACTL" top -b -n1 -j --counters
	jq -e '.source == "dump" and (.source_reason | test("QPs by number, [0-9]+ by the counts"))' <<<"$output"
	qp_states_of <<<"$output" >"$T/got"
	diff -u "$T/want" "$T/got"
	# --no-qp-states does not need the numbers: still the counters
	run -0 "$RDMACTL" top -b -n1 -j --no-qp-states
	jq -e '.source == "counters"' <<<"$output"
}

@test "counters: a monitor killed with SIGKILL leaves its pins behind, stopped: top says it is gone and takes the dump" {
	local opt
	monitor_then_holders
	run compare_counters counters
	assert_success
	kill -KILL "$mon"
	wait "$mon" 2>/dev/null || true
	# nobody removed its pins: its counters stay readable, and count nothing any more
	[ -e /sys/fs/bpf/rdmactl/counters ] && [ -e /sys/fs/bpf/rdmactl/status ]
	# what they cannot see: a holder gone and another with as much (every total the same as the counters')
	kill "$a"
	wait "$a" || true
	start_holdres -q 13 -m 3M -t 4
	for opt in --no-qp-states --counters; do
		run -0 "$RDMACTL" top -b -n1 -j $opt
		jq -e '.source == "dump" and (.source_reason | test("the monitor that pinned the counters .* is gone"))' <<<"$output" ||
			{ jq -c '{source, source_reason}' <<<"$output" >&2; false; }
	done
	run compare_counters dump
	assert_success
	# no rates from counters that stopped, and the scrape says the monitor is down (its counts from the dump)
	run -0 --separate-stderr "$RDMACTL" top -b -n2 -d0.2 -j -v
	jq -e '.rate_interval_s == null' <<<"${lines[1]}"
	grep -q "the monitor that pinned the counters is gone" <<<"$stderr"
	run -0 --separate-stderr "$RDMACTL" export --once --per-process --no-qp-states
	assert_line 'rdmactl_source_up{source="monitor"} 0'
	assert_line 'rdmactl_counts_source{source="dump",reason="no_monitor"} 1'
	# the dead monitor's pins removed, as rdmactl-monitor(8) tells (the tests after this one start their own)
	rm -f /sys/fs/bpf/rdmactl/{counters,devcounters,status,qpids}
}

@test "counters: a monitor started while user objects exist is not used (the dump, and why) until they are gone" {
	start_holdres -q 4 -m 64K -t 2
	local a=$hr
	start_monitor
	grep -q "no complete counts yet: user objects of before the monitor exist" "$T/mon.err"
	run compare_counters dump
	assert_success
	jq -e '.source_reason | test("no complete baseline")' "$T/top.json"
	run -0 --separate-stderr "$RDMACTL" top -b -n1 -j -v --no-qp-states
	[[ $stderr == *"counts from the per-object dump: the monitor has no complete baseline"* ]]
	# the holder exits: its destroys go below zero, the monitor drops it and tries again
	kill "$a"
	wait "$a" || true
	wait_for 30 grep -q "counts complete" "$T/mon.err" || { cat "$T/mon.err" >&2; false; }
	start_holdres -q 6 -m 64K -t 3
	run compare_counters counters
	assert_success
}
