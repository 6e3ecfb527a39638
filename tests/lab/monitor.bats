#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl monitor in the lab: BPF on ib_core's restrack against real rxe objects, balanced streams for
# rdma-core and perftest peers, a counted storm (events + losses = operations), devices, refusals, audit.

load ../helper

STORM=$BUILD/lab-progs/storm

setup() {
	require_lab
	MON=$BATS_TEST_TMPDIR/mon.json
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
}

teardown() {
	[ -z "${MONPID:-}" ] || kill -INT "$MONPID" 2>/dev/null || true
	pkill -x ibv_rc_pingpong 2>/dev/null || true
	pkill -x rping 2>/dev/null || true
	pkill -x ib_write_bw 2>/dev/null || true
	rdma link delete rxe9 2>/dev/null || rdma link delete rxe1 2>/dev/null || true
	return 0
}

# Start `rdmactl monitor -j ARGS` in the background; return once it says its probes are attached.
start_monitor() {
	"$RDMACTL" monitor -j "$@" >"$MON" 2>"$MON.err" 3>&- &
	MONPID=$!
	wait_for 60 grep -q '"event":"start"' "$MON" || { cat "$MON.err" >&2; return 1; }
}

# SIGINT the monitor: it must exit 0 with a summary as its last line.
stop_monitor() {
	kill -INT "$MONPID"
	local rc=0
	wait "$MONPID" || rc=$?
	MONPID=
	[ "$rc" -eq 0 ] || { echo "monitor exited $rc" >&2; cat "$MON.err" >&2; return 1; }
	tail -n 1 "$MON" | jq -e '.event == "summary"' >/dev/null
}

# Run a command under timeout, recording the pid it runs as (exec keeps it) in file $1.
pidrun() {
	local f=$1
	shift
	timeout 60 bash -c 'echo $$ >"$0"; exec "$@"' "$f" "$@"
}

# balanced PID KIND...: the stream has >= 1 create of each KIND owned by PID and, per kind, as many destroys.
balanced() {
	local pid=$1 k c d
	shift
	for k in "$@"; do
		c=$(jq -s --argjson p "$pid" --arg k "$k" '[.[] | select(.event == "create" and .pid == $p and .type == $k)] | length' "$MON")
		d=$(jq -s --argjson p "$pid" --arg k "$k" '[.[] | select(.event == "destroy" and .pid == $p and .type == $k)] | length' "$MON")
		if [ "$c" -lt 1 ] || [ "$c" -ne "$d" ]; then
			echo "pid $pid $k: $c creates, $d destroys" >&2
			return 1
		fi
	done
	# and nothing of any other kind is left over
	jq -s -e --argjson p "$pid" '[.[] | select(.pid == $p and (.event == "create" or .event == "destroy"))]
		| group_by(.type) | all(([.[] | select(.event == "create")] | length) == ([.[] | select(.event == "destroy")] | length))' "$MON" >/dev/null
}

# listening PORT: a TCP listener on PORT exists
listening() {
	ss -Hltn "sport = :$1" | grep -q .
}

# pingpong_pair PORT: an ibv_rc_pingpong server and client on PORT; sets SRV and CLI to their pids.
pingpong_pair() {
	local port=$1
	pidrun "$BATS_TEST_TMPDIR/srv.pid" ibv_rc_pingpong -d rxe0 -g 1 -n 20 -p "$port" >/dev/null 2>&1 3>&- &
	local srv=$!
	wait_for 20 listening "$port"
	pidrun "$BATS_TEST_TMPDIR/cli.pid" ibv_rc_pingpong -d rxe0 -g 1 -n 20 -p "$port" 192.0.2.1 >/dev/null
	wait $srv
	SRV=$(cat "$BATS_TEST_TMPDIR/srv.pid")
	CLI=$(cat "$BATS_TEST_TMPDIR/cli.pid")
}

@test "ibv_rc_pingpong pair: every create has its destroy, with the right pid (fentry)" {
	start_monitor
	# destroys are taken at rdma_restrack_commit_del where the kernel has the begin/commit split (Debian's
	# 6.1), else at rdma_restrack_del (6.12)
	local split=false
	grep -q ' rdma_restrack_commit_del\b' /proc/kallsyms && split=true
	run -0 jq -e --argjson s $split '.mode == "fentry" and .commit_del == $s' <(head -n 1 "$MON")
	pingpong_pair 18600
	sleep 0.3
	stop_monitor
	[ "$SRV" != "$CLI" ]
	balanced "$SRV" ctx pd cq qp mr
	balanced "$CLI" ctx pd cq qp mr
	# QP ids are QP numbers, MRs carry their length, comm and device are right, all user objects
	run -0 jq -s -e --argjson p "$SRV" '[.[] | select(.pid == $p and .event == "create")]
		| all(.comm == "ibv_rc_pingpong" and .dev == "rxe0" and .user == true)
		and ([.[] | select(.type == "mr")] | all(.mr_len == 4096))
		and ([.[] | select(.type == "qp")] | all(.id > 0))' "$MON"
	# with the split, QP/CQ/PD destroys come from commit_del and MR/CTX from rdma_restrack_del; without it
	# every destroy comes from rdma_restrack_del
	run -0 jq -s -e --argjson s $split '[.[] | select(.event == "destroy")] | all(if $s and
		(.type == "qp" or .type == "cq" or .type == "pd") then .hook == "commit_del" else .hook == "del" end)' "$MON"
	# the summary agrees with the stream
	run -0 jq -s -e --argjson p "$SRV" '(.[-1].processes[] | select(.pid == $p) | .types.qp) == {"create": 1, "destroy": 1}' "$MON"
}

@test "kprobe fallback gives the same balanced stream" {
	RDMACTL_MON_KPROBE=1 start_monitor
	run -0 jq -e '.mode == "kprobe"' <(head -n 1 "$MON")
	pingpong_pair 18601
	sleep 0.3
	stop_monitor
	balanced "$SRV" ctx pd cq qp mr
	balanced "$CLI" ctx pd cq qp mr
}

@test "rping server and client (rdma_cm): creates and destroys balance per process, CM ids included" {
	start_monitor
	pidrun "$BATS_TEST_TMPDIR/srv.pid" rping -s -C 3 -a 192.0.2.1 -p 18602 >/dev/null 2>&1 3>&- &
	local srv=$!
	wait_for 20 bash -c "rdma res show cm_id | grep -q 'state LISTEN'"
	run -0 pidrun "$BATS_TEST_TMPDIR/cli.pid" rping -c -C 3 -a 192.0.2.1 -p 18602
	wait $srv
	sleep 0.5
	stop_monitor
	SRV=$(cat "$BATS_TEST_TMPDIR/srv.pid")
	CLI=$(cat "$BATS_TEST_TMPDIR/cli.pid")
	balanced "$SRV" cm_id ctx pd cq qp mr
	balanced "$CLI" cm_id ctx pd cq qp mr
}

@test "ib_write_bw -q 4 pair: four QPs per side, everything balanced" {
	start_monitor
	pidrun "$BATS_TEST_TMPDIR/srv.pid" ib_write_bw -d rxe0 -x 1 -q 4 -n 50 -s 4096 -p 18603 >/dev/null 2>&1 3>&- &
	local srv=$!
	wait_for 20 listening 18603
	run -0 pidrun "$BATS_TEST_TMPDIR/cli.pid" ib_write_bw -d rxe0 -x 1 -q 4 -n 50 -s 4096 -p 18603 192.0.2.1
	wait $srv
	sleep 0.5
	stop_monitor
	SRV=$(cat "$BATS_TEST_TMPDIR/srv.pid")
	CLI=$(cat "$BATS_TEST_TMPDIR/cli.pid")
	balanced "$SRV" ctx pd cq qp mr
	balanced "$CLI" ctx pd cq qp mr
	for p in "$SRV" "$CLI"; do
		run -0 jq -s --argjson p "$p" '[.[] | select(.pid == $p and .event == "create" and .type == "qp")] | length' "$MON"
		assert_output 4
	done
}

@test "storm from 4 processes: events in the stream equal the operations performed, per kind and pid" {
	start_monitor
	run -0 "$STORM" -d rxe0 -p 4 -n 100
	echo "$output" >"$BATS_TEST_TMPDIR/storm.json"
	sleep 0.5
	stop_monitor
	local ops
	ops=$(jq .ops "$BATS_TEST_TMPDIR/storm.json")
	[ "$ops" -gt 3000 ]
	# per process and kind, the stream holds exactly what storm counted
	run -0 jq -n -e --slurpfile s "$BATS_TEST_TMPDIR/storm.json" --slurpfile m "$MON" '
		$s[0].processes | all(. as $p | ["ctx", "pd", "cq", "qp", "mr"] | all(. as $k |
			([$m[] | select(.pid == $p.pid and .type == $k and .event == "create")] | length) == $p.create[$k] and
			([$m[] | select(.pid == $p.pid and .type == $k and .event == "destroy")] | length) == $p.destroy[$k]))'
	run -0 jq -e '.lost.ring == 0' <(tail -n 1 "$MON")
}

@test "storm with the reader stopped: events + reported losses = operations, losses shown as they happen" {
	start_monitor
	kill -STOP "$MONPID"
	# more events than the 1 MiB ring holds (16384 of 64 bytes)
	run -0 "$STORM" -d rxe0 -p 4 -n 700
	echo "$output" >"$BATS_TEST_TMPDIR/storm.json"
	kill -CONT "$MONPID"
	sleep 1
	stop_monitor
	local ops events lost
	ops=$(jq .ops "$BATS_TEST_TMPDIR/storm.json")
	events=$(jq -s '[.[] | select(.event == "create" or .event == "destroy")] | length' "$MON")
	lost=$(tail -n 1 "$MON" | jq .lost.ring)
	echo "ops $ops events $events lost $lost" >&2
	[ "$lost" -gt 0 ]
	[ $((events + lost)) -eq "$ops" ]
	# a "lost" line appeared in the stream before the summary, with the same total
	run -0 jq -s -e --argjson l "$lost" '[.[] | select(.event == "lost")] | length >= 1 and .[-1].lost_ring == $l' "$MON"
}

@test "Ctrl-C while the monitor waits on a slow reader: every event it counted is in the stream, whole" {
	local fifo=$BATS_TEST_TMPDIR/fifo go=$BATS_TEST_TMPDIR/go reader ops events rc=0
	mkfifo "$fifo"
	# The reader passes the start line on, then takes nothing until the monitor has been interrupted: the
	# pipe (64 KiB) fills and the monitor is waiting in write() when the signal comes.
	(IFS= read -r l && printf '%s\n' "$l" && until [ -e "$go" ]; do sleep 0.1; done && exec cat) <"$fifo" >"$MON" &
	reader=$!
	"$RDMACTL" monitor -j >"$fifo" 2>"$MON.err" 3>&- &
	MONPID=$!
	wait_for 60 grep -q '"event":"start"' "$MON"
	# about 1.8 MB of JSON lines; half the events the ring holds (16384), so none is lost there
	run -0 "$STORM" -d rxe0 -p 2 -n 1000 -k pd,mr
	echo "$output" >"$BATS_TEST_TMPDIR/storm.json"
	wait_for 30 grep -qx pipe_write "/proc/$MONPID/wchan"
	kill -INT "$MONPID"
	sleep 0.5
	touch "$go"
	wait "$MONPID" || rc=$?
	MONPID=
	wait "$reader"
	[ "$rc" -eq 0 ]
	ops=$(jq .ops "$BATS_TEST_TMPDIR/storm.json")
	events=$(grep -c '"event":"\(create\|destroy\)"' "$MON")
	echo "ops $ops, create/destroy lines $events, summary: $(tail -n 1 "$MON" | jq -c '{events, lost}')" >&2
	# every line whole, and the stream holds every event the summary counts: none was dropped unsaid
	run -0 jq -c . "$MON"
	run -0 jq -e --argjson n "$events" --argjson ops "$ops" \
		'.event == "summary" and .events == $n and .lost.ring == 0 and $n == $ops' <(tail -n 1 "$MON")
}

@test "--pid and --type filter the stream; text mode prints one line per event" {
	start_monitor --type qp
	pingpong_pair 18604
	sleep 0.3
	stop_monitor
	run -0 jq -s -e '[.[] | select(.event == "create" or .event == "destroy")] | length == 4 and all(.type == "qp")' "$MON"

	"$RDMACTL" monitor --pid 1 --duration 1000 >"$BATS_TEST_TMPDIR/text" 2>&1 3>&- &
	MONPID=$!
	wait_for 60 grep -q '^TIME' "$BATS_TEST_TMPDIR/text"
	"$RDMACTL" monitor >"$BATS_TEST_TMPDIR/all" 2>&1 3>&- &
	local all=$!
	wait_for 60 grep -q '^TIME' "$BATS_TEST_TMPDIR/all"
	pingpong_pair 18605
	sleep 0.5
	kill -INT "$all" "$MONPID"
	wait "$all"
	wait "$MONPID"
	MONPID=
	# pid 1 never touches RDMA: nothing but the header and the summary
	run grep -c ' create \| destroy ' "$BATS_TEST_TMPDIR/text"
	assert_output 0
	run -0 grep -E "^[0-9:.]+ +$SRV ibv_rc_pingpong +create +qp +rxe0 +[0-9]+ " "$BATS_TEST_TMPDIR/all"
	run -0 grep -E "^[0-9:.]+ +$CLI ibv_rc_pingpong +destroy +mr +rxe0 +[0-9]+  len 4K" "$BATS_TEST_TMPDIR/all"
	run -0 grep -E "^Summary: [0-9]+ events" "$BATS_TEST_TMPDIR/all"
}

@test "device events: an rxe device added, renamed and removed" {
	ip link show veth1 >/dev/null 2>&1 || skip "no veth1 in this lab"
	start_monitor
	rdma link add rxe1 type rxe netdev veth1
	rdma dev set rxe1 name rxe9
	rdma link delete rxe9
	sleep 0.5
	stop_monitor
	run -0 jq -s -c '[.[] | select(.event == "device" and (.action | test("^(added|renamed|removed)$")))
		| [.action, .dev, .old_name]]' "$MON"
	assert_output '[["added","rxe1",null],["renamed","rxe9","rxe1"],["removed","rxe9",null]]'
	# the start event says where device events come from, and each device event agrees: netlink
	# notifications where the kernel has them (it says so in SYS_GET; 6.12 does, 6.1 does not), else
	# uevents. Renames come from the uevents in both cases (6.12 sends no netlink notification for them).
	local src v
	src=$(head -n 1 "$MON" | jq -r .device_events)
	v=$(uname -r | awk -F. '{ print $1 * 1000 + $2 }')
	if [ "$v" -ge 6012 ]; then
		[ "$src" = netlink ]
	else
		[ "$src" = uevent ]
	fi
	run -0 jq -s -e --arg s "$src" '[.[] | select(.event == "device")] | length >= 3 and
		all(if .action == "renamed" then .source == "uevent" else .source == $s end)' "$MON"
	if [ "$src" = netlink ]; then
		# netlink events carry the device index; it is the same device throughout
		run -0 jq -s -e '[.[] | select(.event == "device" and .source == "netlink") | .dev_index] | length >= 2 and
			(unique | length) == 1' "$MON"
		# and the kernel says which netdev the new device's port was attached to
		run -0 jq -s -e '[.[] | select(.event == "device" and .action == "netdev_attached")]
			| any(.dev == "rxe1" and .netdev == "veth1" and .port == 1)' "$MON"
	fi
	# -v says it too
	run -0 --separate-stderr "$RDMACTL" monitor -v --duration 0.5
	[[ $stderr == *"device events from $src"* ]]
}

@test "object events name their device: one added after the start, and renamed while its objects live" {
	ip link show veth1 >/dev/null 2>&1 || skip "no veth1 in this lab"
	start_monitor
	rdma link add rxe1 type rxe netdev veth1
	local idx
	idx=$(rdma -j dev show rxe1 | jq '.[0].ifindex')
	# objects on the new device right away: the monitor learns its name by index
	"$STORM" -d rxe1 -p 1 -n 2 >/dev/null
	# a holder on rxe1 while rxe1 becomes rxe9: its destroys name the device as it is called by then
	"$BUILD/lab-progs/holdres" -d rxe1 -q 1 >"$BATS_TEST_TMPDIR/hold" &
	local h=$!
	wait_for 20 grep -q ready "$BATS_TEST_TMPDIR/hold"
	wait_for 20 grep -q '"comm":"holdres"' "$MON" # its creates are printed before the rename
	rdma dev set rxe1 name rxe9
	wait_for 20 grep -q '"action":"renamed"' "$MON" # and the rename before its destroys
	kill -INT $h
	wait $h
	"$STORM" -d rxe0 -p 1 -n 1 >/dev/null
	sleep 0.3
	stop_monitor
	rdma link delete rxe9
	# every object event names a device, by the index the kernel reports for it (the output lists those
	# that do not)
	run -0 jq -s -e --argjson i "$idx" '[.[] | select(.event == "create" or .event == "destroy")] | length > 0' "$MON"
	run -0 jq -s -c --argjson i "$idx" '[.[] | select(.event == "create" or .event == "destroy")
		| select(if .dev_index == $i then .dev != "rxe1" and .dev != "rxe9" else .dev != "rxe0" end)]' "$MON"
	assert_output '[]'
	# the storm on the new device: its name from the moment it exists
	run -0 jq -s -e --argjson i "$idx" '[.[] | select(.comm == "storm" and .dev_index == $i)]
		| length >= 10 and all(.dev == "rxe1")' "$MON"
	# the holder's creates before the rename, its destroys after it
	run -0 jq -s -c '[.[] | select(.comm == "holdres") | [.event, .dev]] | unique' "$MON"
	assert_output '[["create","rxe1"],["destroy","rxe9"]]'
}

# devcache_poison INDEX: every CPU's cached device entries get index INDEX (keeping pointer, generation and
# sequence count), as if a cached pointer now belonged to another device. Prints how many entries were
# set. Entry layout (bpf/restrack.bpf.c, struct devc_entry, 32 bytes): seq, dev, gen (u64), index (u32), pad.
devcache_poison() {
	local raw
	# the value of the CPU with the most entries in use (the dump lists every CPU's copy as bytes)
	raw=$(bpftool map dump name devcache -j | jq -c '[.[0].values[].value]
		| max_by([range(4) as $e | .[32*$e+8:32*$e+16] | select(any(. != "0x00"))] | length)')
	jq -r --argjson i "$1" '. as $v | [range(4) as $e | $v[32*$e:32*$e+32] as $x
		| if ($x[8:16] | any(. != "0x00")) then
			$x[0:24] + ([$i % 256, ($i / 256 | floor) % 256, 0, 0]
				| map("0x" + ([(. / 16 | floor), . % 16] | map("0123456789abcdef"[.:.+1]) | join("")))) + $x[28:32]
		  else $x end] | add | map(.[2:]) | join(" ")' <<<"$raw" >"$BATS_TEST_TMPDIR/devc"
	# shellcheck disable=SC2046
	bpftool map update name devcache key hex 00 00 00 00 value hex $(cat "$BATS_TEST_TMPDIR/devc")
	jq '. as $v | [range(4) as $e | $v[32*$e+8:32*$e+16] | select(any(. != "0x00"))] | length' <<<"$raw"
}

@test "the device index cache: used while valid, dropped when a device is released (fentry and kprobe)" {
	ip link show veth1 >/dev/null 2>&1 || skip "no veth1 in this lab"
	local mode idx0 n
	idx0=$(rdma -j dev show rxe0 | jq '.[0].ifindex')
	for mode in 0 1; do
		: >"$MON"
		RDMACTL_MON_KPROBE=$mode start_monitor
		"$STORM" -d rxe0 -p 1 -n 1 >/dev/null
		# a wrong index in the cache (what a reused pointer would find without invalidation) is what the
		# events report: the cache is read, not the device
		n=$(devcache_poison 77)
		[ "$n" -ge 1 ]
		"$STORM" -d rxe0 -p 1 -n 2 | jq '.processes[0].pid' >"$BATS_TEST_TMPDIR/p1"
		# a device released (rdma link delete): no cached index is trusted any more
		rdma link add rxe1 type rxe netdev veth1
		rdma link delete rxe1
		"$STORM" -d rxe0 -p 1 -n 2 | jq '.processes[0].pid' >"$BATS_TEST_TMPDIR/p2"
		sleep 0.3
		stop_monitor
		run -0 jq -e --argjson m "$mode" '.mode == (if $m == 1 then "kprobe" else "fentry" end)' <(head -n 1 "$MON")
		run -0 jq -s -e --argjson p "$(cat "$BATS_TEST_TMPDIR/p1")" \
			'[.[] | select(.pid == $p and (.event == "create" or .event == "destroy"))] | length >= 10 and all(.dev_index == 77)' "$MON"
		run -0 jq -s -e --argjson p "$(cat "$BATS_TEST_TMPDIR/p2")" --argjson i "$idx0" \
			'[.[] | select(.pid == $p and (.event == "create" or .event == "destroy"))] | length >= 10 and all(.dev_index == $i and .dev == "rxe0")' "$MON"
	done
}

@test "device events: RDMACTL_MON_UEVENT=1 forces the uevent source" {
	ip link show veth1 >/dev/null 2>&1 || skip "no veth1 in this lab"
	RDMACTL_MON_UEVENT=1 start_monitor
	rdma link add rxe1 type rxe netdev veth1
	rdma link delete rxe1
	sleep 0.5
	stop_monitor
	run -0 jq -e '.device_events == "uevent"' <(head -n 1 "$MON")
	run -0 jq -s -c '[.[] | select(.event == "device") | [.action, .dev, .source]]' "$MON"
	assert_output '[["added","rxe1","uevent"],["removed","rxe1","uevent"]]'
}

@test "--stats prints per-process rates from the BPF counters, pinned for other readers" {
	start_monitor --stats=0.5
	[ -e /sys/fs/bpf/rdmactl/counters ]
	run -0 "$STORM" -d rxe0 -p 1 -n 200
	local pid
	pid=$(jq '.processes[0].pid' <<<"$output")
	# the next stats line shows it (within 0.5 s; longer on a loaded machine or with a sanitizer build)
	local has="[inputs | select(.event == \"stats\") | .processes[] | select(.pid == $pid)] | length >= 1"
	wait_for 30 jq -n -e "$has" "$MON" >/dev/null
	stop_monitor
	[ ! -e /sys/fs/bpf/rdmactl/counters ]
	run -0 jq -s -e --argjson p "$pid" '[.[] | select(.event == "stats") | .processes[] | select(.pid == $p)]
		| length >= 1 and all(.create_per_s.qp > 0)' "$MON"
	# no per-event lines in this mode
	run -0 jq -s -e '[.[] | select(.event == "create")] | length == 0' "$MON"
}

@test "ledger refusals appear in the stream, also after the ledger is replaced" {
	"$RDMACTL" quota init
	start_monitor
	run pidrun "$BATS_TEST_TMPDIR/cli.pid" "$RDMACTL" run --max-qp 0 -- ibv_rc_pingpong -d rxe0 -g 1 -p 18606 192.0.2.9
	[ "$status" -ne 0 ]
	# quota init renames new files in: the monitor must notice and follow (checked every 2 s)
	"$RDMACTL" quota init
	sleep 3
	run "$RDMACTL" run --max-pd 0 -- ibv_rc_pingpong -d rxe0 -g 1 -p 18606 192.0.2.9
	[ "$status" -ne 0 ]
	sleep 0.5
	stop_monitor
	# (comm is best effort: the refused process has often exited by the time the refusal is read)
	run -0 jq -s -e '[.[] | select(.event == "denied" and .type == "qp" and .limit == 0 and .scope == "job" and .pid > 0)] | length == 1' "$MON"
	run -0 jq -s -e '[.[] | select(.event == "denied" and .type == "pd" and .limit == 0)] | length == 1' "$MON"
	run -0 jq -e '.denials == 2' <(tail -n 1 "$MON")
}

@test "--audit reports an unmanaged QP holder over a global quota; --enforce terminates it" {
	"$RDMACTL" quota init
	# control: no limits yet -> reported as unmanaged, not over anything, not signalled
	ibv_rc_pingpong -d rxe0 -g 1 -p 18607 >/dev/null 2>&1 3>&- &
	local holder=$!
	wait_for 10 bash -c "rdma res show qp | grep -q 'pid $holder '"
	run -0 "$RDMACTL" monitor --audit -j --interval 0.5 --duration 2 --enforce signal=TERM
	echo "$output" >"$BATS_TEST_TMPDIR/audit0"
	run -0 jq -s -e --argjson p "$holder" '[.[] | select(.pid == $p)] | length == 1 and .[0].event == "audit"
		and .[0].managed == false and .[0].held.qp == 1 and .[0].over_quota == []' "$BATS_TEST_TMPDIR/audit0"
	kill -0 "$holder"

	"$RDMACTL" quota set qp 0 --global
	run -0 "$RDMACTL" monitor --audit -j --interval 0.5 --duration 2
	echo "$output" >"$BATS_TEST_TMPDIR/audit1"
	run -0 jq -s -e --argjson p "$holder" '[.[] | select(.pid == $p)] | .[0].over_quota
		| any(.scope == "global" and .kind == "qp" and .limit == 0 and .held == 1)' "$BATS_TEST_TMPDIR/audit1"
	kill -0 "$holder"

	run -0 "$RDMACTL" monitor --audit -j --interval 0.5 --duration 2 --enforce signal=TERM
	echo "$output" >"$BATS_TEST_TMPDIR/audit2"
	run -0 jq -s -e --argjson p "$holder" '[.[] | select(.pid == $p and .event == "enforce")] | length == 1 and .[0].signal == 15' "$BATS_TEST_TMPDIR/audit2"
	local rc=0
	wait "$holder" || rc=$?
	[ "$rc" -eq 143 ]
}

@test "--audit reports an unmanaged QP holder over its cgroup's quota (not one outside it); --enforce terminates it" {
	"$RDMACTL" quota init
	local cg=/sys/fs/cgroup/rdmactl-audit
	mkdir -p "$cg"
	# the holder joins the cgroup before it creates anything; a second holder stays outside
	bash -c "echo \$\$ >$cg/cgroup.procs; exec ibv_rc_pingpong -d rxe0 -g 1 -p 18611" >/dev/null 2>&1 3>&- &
	local inside=$!
	ibv_rc_pingpong -d rxe0 -g 1 -p 18612 >/dev/null 2>&1 3>&- &
	local outside=$!
	wait_for 10 bash -c "rdma res show qp | grep -q 'pid $inside ' && rdma res show qp | grep -q 'pid $outside '"
	grep -qx "0::/rdmactl-audit" "/proc/$inside/cgroup"

	"$RDMACTL" quota set qp 0 --cgroup "$cg"
	run -0 "$RDMACTL" monitor --audit -j --interval 0.5 --duration 2
	echo "$output" >"$BATS_TEST_TMPDIR/audit"
	run -0 jq -s -e --argjson p "$inside" '[.[] | select(.pid == $p)] | .[0].managed == false and (.[0].over_quota
		| any(.scope == "cgroup" and .cgroup == "/rdmactl-audit" and .kind == "qp" and .limit == 0 and .held == 1))' \
		"$BATS_TEST_TMPDIR/audit"
	run -0 jq -s -e --argjson p "$outside" '[.[] | select(.pid == $p)] | length == 1 and .[0].over_quota == []' \
		"$BATS_TEST_TMPDIR/audit"

	run -0 "$RDMACTL" monitor --audit -j --interval 0.5 --duration 2 --enforce signal=TERM
	echo "$output" >"$BATS_TEST_TMPDIR/enforce"
	run -0 jq -s -e --argjson p "$inside" '[.[] | select(.pid == $p and .event == "enforce")] | length == 1' \
		"$BATS_TEST_TMPDIR/enforce"
	run -0 jq -s -e --argjson p "$outside" '[.[] | select(.pid == $p and .event == "enforce")] | length == 0' \
		"$BATS_TEST_TMPDIR/enforce"
	local rc=0
	wait "$inside" || rc=$?
	[ "$rc" -eq 143 ]
	kill -0 "$outside"
	kill "$outside"
	wait "$outside" || true
	rmdir "$cg" || true
}

@test "--dev keeps only the events of that device" {
	start_monitor --dev nosuchdev
	"$STORM" -d rxe0 -p 1 -n 3 >/dev/null
	sleep 0.3
	stop_monitor
	run -0 jq -s -e '[.[] | select(.event == "create" or .event == "destroy")] | length == 0' "$MON"

	start_monitor --dev rxe0
	"$STORM" -d rxe0 -p 1 -n 3 >/dev/null
	sleep 0.3
	stop_monitor
	run -0 jq -s -e '[.[] | select(.event == "create" or .event == "destroy")] | length > 0 and all(.dev == "rxe0")' \
		"$MON"
}
