#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl pingpong against rdma-core's ibv_rc_pingpong and itself over rxe0: GID choice, diagnosis, rdma_cm.

load ../helper

setup() {
	require_lab
	T=$BATS_TEST_TMPDIR
}

teardown() {
	local p
	for p in ${PIDS:-}; do
		kill -9 "$p" 2>/dev/null || true
	done
	pkill -x ibv_rc_pingpong 2>/dev/null || true
}

# Wait for the server started by srv_start: it must exit 1.
srv_exit_1() {
	local rc=0
	wait "$SRV" || rc=$?
	[ $rc -eq 1 ] || { echo "server exited $rc, not 1" >&2; return 1; }
}

# Start an rdmactl server in the background: srv_start NAME ARGS...; its pid goes to $SRV.
srv_start() {
	local name=$1
	shift
	"$RDMACTL" pingpong "$@" >"$T/$name.out" 2>"$T/$name.err" 3>&- &
	SRV=$!
	PIDS="${PIDS:-} $SRV"
	wait_for 20 grep -q "waiting for a" "$T/$name.err"
}

# Start ibv_rc_pingpong as a server: ibv_srv_start NAME TCP_PORT ARGS...
ibv_srv_start() {
	local name=$1 port=$2
	shift 2
	ibv_rc_pingpong -p "$port" "$@" >"$T/$name.out" 2>&1 3>&- &
	SRV=$!
	PIDS="${PIDS:-} $SRV"
	wait_for 20 bash -c "ss -ltn | grep -q ':$port '"
}

# Has process $1 a QP in state RTS (past the exchange, pingponging)?
qp_in_rts() {
	rdma res show qp | grep "pid $1 " | grep -q "state RTS"
}

# The sysfs facts the lab is built on; the tests below compare rdmactl's answers with them.
lab_gid1() {
	[ "$(cat /sys/class/infiniband/rxe0/ports/1/gids/1)" = "0000:0000:0000:0000:0000:ffff:c000:0201" ] &&
		[ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1)" = "RoCE v2" ] &&
		[ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1)" = "veth0" ]
}

@test "rdmactl server <-> ibv_rc_pingpong -g 1 client: both finish the same 100 iterations" {
	srv_start srv -n 100 -p 18601 --timeout 20
	run timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 100 -p 18601 192.0.2.1
	assert_success
	assert_output --partial "100 iters in"
	wait $SRV
	run cat "$T/srv.out"
	assert_output --regexp "819200 bytes in [0-9.]+ seconds"
	assert_output --partial "100 iters in"
	assert_output --regexp "round trip \(usec\): min [0-9.]+ avg [0-9.]+ p50 [0-9.]+ p99 [0-9.]+ p99.9 [0-9.]+ max"
	# Without -g, the server took the GID of the address the client reached.
	run cat "$T/srv.err"
	assert_output --partial "using rxe0 port 1 GID 1"
}

@test "ibv_rc_pingpong -g 1 server <-> rdmactl client: both finish the same 100 iterations" {
	ibv_srv_start ibv 18602 -d rxe0 -g 1 -n 100
	run --separate-stderr timeout 60 "$RDMACTL" pingpong -n 100 -p 18602 --timeout 20 -j 192.0.2.1
	assert_success
	run jq -e '.iters == 100 and .bytes == 819200 and .role == "client" and .latency_us.p99 >= .latency_us.p50
		and .latency_us.max >= .latency_us.p99_9 and .latency_us.min > 0 and .bandwidth_gbps > 0' <<<"$output"
	assert_success
	wait $SRV
	run cat "$T/ibv.out"
	assert_output --partial "100 iters in"
}

@test "rdmactl <-> rdmactl without -g picks the RoCE v2 IPv4 GID (index 1, 192.0.2.1) and says why" {
	lab_gid1
	srv_start srv -n 50 -p 18603 -j --timeout 20
	run --separate-stderr timeout 60 "$RDMACTL" pingpong -n 50 -p 18603 -j --timeout 20 192.0.2.1
	assert_success
	run jq -e '.choice.device == "rxe0" and .choice.gid_index == 1 and .choice.gid_type == "RoCE v2"
		and .choice.address == "192.0.2.1" and .choice.netdev == "veth0" and .choice.gid == "::ffff:192.0.2.1"
		and .local.gid == "::ffff:192.0.2.1" and .iters == 50' <<<"$output"
	assert_success
	[[ $stderr == *"GID 1 is the RoCE v2 GID of that address"* ]]
	[[ $stderr == *"route to 192.0.2.1"* ]]
	wait $SRV
	run jq -e '.role == "server" and .choice.gid_index == 1 and .iters == 50' "$T/srv.out"
	assert_success
}

@test "over 127.0.0.1 (no GID has it): the best GID of rxe0 is used, with a warning saying so" {
	srv_start srv -n 20 -p 18620 --timeout 20
	run --separate-stderr timeout 60 "$RDMACTL" pingpong -n 20 -p 18620 --timeout 20 -j 127.0.0.1
	assert_success
	run jq -e '.choice.gid_index == 1 and .iters == 20 and (.choice.note | test("no GID for 127.0.0.1"))' <<<"$output"
	assert_success
	wait $SRV
	run cat "$T/srv.err"
	assert_output --partial "rxe0 port 1 has no GID for 127.0.0.1"
	run --separate-stderr "$RDMACTL" pingpong --check -j 127.0.0.1
	assert_success
	run jq -e '.route.choice.gid_index == 1 and (.route.reason | test("lo, but no GID of rxe0 port 1 has that address"))' <<<"$output"
	assert_success
}

@test "-e (completion events) interoperates with ibv_rc_pingpong -e" {
	ibv_srv_start ibv 18604 -d rxe0 -g 1 -n 50 -e
	run --separate-stderr timeout 60 "$RDMACTL" pingpong -e -n 50 -p 18604 -j --timeout 20 192.0.2.1
	assert_success
	run jq -e '.iters == 50 and .cq_events > 0' <<<"$output"
	assert_success
	wait $SRV
}

# On rxe a link-local (GID 0) vs IPv4 (GID 1) pair fails at RTR with EINVAL on the side that moves its QP
# to RTR first: the server, which then closes the TCP connection without answering.
@test "-g 0 client against an rdmactl -g 1 server: both fail and name -g 1" {
	srv_start srv -g 1 -n 50 -p 18605 --timeout 5
	run timeout 60 "$RDMACTL" pingpong -g 0 -n 50 -p 18605 --timeout 5 192.0.2.1
	assert_failure 1
	assert_output --partial "GID 0 is RoCE v2 link-local"
	assert_output --partial "use -g 1 (RoCE v2, 192.0.2.1 on veth0)"
	srv_exit_1
	run cat "$T/srv.err"
	assert_output --partial "cannot move the QP to RTR"
	assert_output --partial "link-local GID"
}

@test "-g 0 client against ibv_rc_pingpong -g 1: fails with the hint naming index 1" {
	ibv_srv_start ibv 18606 -d rxe0 -g 1 -n 50
	run timeout 60 "$RDMACTL" pingpong -g 0 -n 50 -p 18606 --timeout 5 192.0.2.1
	assert_failure 1
	assert_output --partial "use -g 1 (RoCE v2, 192.0.2.1 on veth0)"
	run cat "$T/ibv.out"
	assert_output --partial "Failed to modify QP to RTR"
}

@test "-g 0 server against ibv_rc_pingpong -g 1 client: RTR fails, hint names -g 1" {
	srv_start srv -g 0 -n 50 -p 18607 --timeout 5
	run timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 50 -p 18607 192.0.2.1
	assert_failure
	srv_exit_1
	run cat "$T/srv.err"
	assert_output --partial "cannot move the QP to RTR: Invalid argument"
	assert_output --partial "use -g 1 (RoCE v2, 192.0.2.1 on veth0)"
}

@test "ibv_rc_pingpong without -g as client: the server says the peer sent no GID" {
	srv_start srv -n 20 -p 18616 --timeout 5
	run timeout 60 ibv_rc_pingpong -d rxe0 -n 20 -p 18616 192.0.2.1
	assert_failure
	srv_exit_1
	run cat "$T/srv.err"
	assert_output --partial "the peer sent no GID"
	assert_output --partial "run ibv_rc_pingpong with -g"
}

# On rxe the sender of a too large message gets "remote operation error", the receiver "local QP operation
# error" (not "local length error").
@test "different -s on the two sides: both completion errors point at -s" {
	srv_start srv -n 20 -s 4096 -p 18621 --timeout 5
	run timeout 60 "$RDMACTL" pingpong -n 20 -s 8192 -p 18621 --timeout 5 192.0.2.1
	assert_failure 1
	assert_output --partial "send completion failed after 0 of 20 iterations: remote operation error"
	assert_output --partial "a different -s on the two sides? (ours is 8192)"
	srv_exit_1
	run cat "$T/srv.err"
	assert_output --partial "receive completion failed after 0 of 20 iterations: local QP operation error"
	assert_output --partial "a message did not fit our receive buffer: a different -s on the two sides? (ours is 4096)"
}

# A hand-made client (bash /dev/tcp) sends the address message with a GID nobody here can reach.
fake_client() {
	exec 5<>/dev/tcp/192.0.2.1/"$1"
	printf '0000:000011:000001:%s\0' "$2" >&5
}

@test "the peer's GID has no route: RTR fails and the server says the GID is unreachable" {
	srv_start srv -n 20 -p 18618 --timeout 5
	fake_client 18618 00000000000000000000ffff0a090909
	local rc=0
	wait $SRV || rc=$?
	exec 5>&-
	[ $rc -eq 1 ]
	run cat "$T/srv.err"
	assert_output --partial "cannot move the QP to RTR"
	assert_output --partial "the peer's GID ::ffff:10.9.9.9 is unreachable from here: Network is unreachable"
}

@test "the peer's GID is on the network but nobody answers: RTR fails, the GID is named unreachable" {
	srv_start srv -n 20 -p 18619 --timeout 5
	fake_client 18619 00000000000000000000ffffc000024d
	local rc=0
	wait $SRV || rc=$?
	exec 5>&-
	[ $rc -eq 1 ]
	run cat "$T/srv.err"
	assert_output --partial "cannot move the QP to RTR"
	assert_output --partial "the peer's GID ::ffff:192.0.2.77 is unreachable: nothing answers for 192.0.2.77"
}

# kill_mid_run RTS_PID VICTIM SURVIVOR: once RTS_PID's QP is in RTS (the exchange is over and the run under
# way), SIGKILL VICTIM; SURVIVOR (started with --timeout 3) must exit 1 within that timeout plus slack for
# the slow emulated machine.
kill_mid_run() {
	wait_for 60 qp_in_rts "$1"
	sleep 1
	kill -9 "$2"
	local t0=$SECONDS rc=0
	wait "$3" || rc=$?
	[ $rc -eq 1 ]
	[ $((SECONDS - t0)) -le 8 ]
}

@test "a peer killed mid-run: the client exits 1 within its --timeout" {
	srv_start srv -n 1000000 -p 18608 --timeout 30
	"$RDMACTL" pingpong -n 1000000 -p 18608 --timeout 3 192.0.2.1 >"$T/cl.out" 2>"$T/cl.err" 3>&- &
	local cl=$!
	PIDS="$PIDS $cl"
	# Kill the server once the run is under way: the client's QP is in RTS, so the exchange is over.
	kill_mid_run $cl $SRV $cl
	run cat "$T/cl.err"
	assert_output --regexp "no completion for 3 s after [0-9]+ of 1000000 iterations|completion failed after"
	assert_output --partial "the peer stopped answering"
}

@test "a peer killed mid-run: the server exits 1 within its --timeout" {
	srv_start srv -n 1000000 -p 18609 --timeout 3
	ibv_rc_pingpong -d rxe0 -g 1 -n 1000000 -p 18609 192.0.2.1 >"$T/ibv.out" 2>&1 3>&- &
	local cl=$!
	PIDS="$PIDS $cl"
	kill_mid_run $cl $cl $SRV
	run cat "$T/srv.err"
	assert_output --partial "the peer stopped answering"
}

@test "nothing listening: the client says connection refused and what to start" {
	run timeout 60 "$RDMACTL" pingpong -p 18610 192.0.2.1
	assert_failure 1
	assert_output --partial "cannot connect to 192.0.2.1 TCP port 18610: Connection refused"
	assert_output --partial "start 'rdmactl pingpong' or 'ibv_rc_pingpong'"
}

@test "--cm client <-> --cm server: RDMA write, read back, both verify" {
	srv_start srv --cm -p 18611 -j -s 64K --timeout 20
	run --separate-stderr timeout 60 "$RDMACTL" pingpong --cm -p 18611 -j -s 64K --timeout 20 192.0.2.1
	assert_success
	run jq -e '.mode == "cm" and .role == "client" and .verified == true and .device == "rxe0"
		and .size == 65536 and .sgid == "::ffff:192.0.2.1" and .write_us > 0 and .read_us > 0' <<<"$output"
	assert_success
	wait $SRV
	run jq -e '.role == "server" and .verified == true and .size == 65536' "$T/srv.out"
	assert_success
}

@test "--cm to a port nobody listens on: rejected, with what to start" {
	run timeout 60 "$RDMACTL" pingpong --cm -p 18612 192.0.2.1
	assert_failure 1
	assert_output --partial "rejected"
	assert_output --partial "start 'rdmactl pingpong --cm' there first"
}

@test "--check shows rxe0: ACTIVE, Ethernet, GID 1 = RoCE v2 192.0.2.1 on veth0, use -g 1 for it" {
	lab_gid1
	run "$RDMACTL" pingpong --check
	assert_success
	assert_output --regexp "port 1: ACTIVE, link layer Ethernet, active MTU [0-9]+ \(max [0-9]+\), netdev veth0"
	assert_output --regexp "1 +192\.0\.2\.1 +RoCE v2 +veth0 +::ffff:192\.0\.2\.1"
	assert_output --partial "to use 192.0.2.1: -g 1 (RoCE v2)"
	assert_output --partial "no problems found"
	run --separate-stderr "$RDMACTL" pingpong --check -j
	assert_success
	local mtu
	mtu=$(cat /sys/class/net/veth0/mtu)
	run jq -e --argjson mtu "$mtu" '.warnings == [] and (.devices | length) == 1 and .devices[0].name == "rxe0"
		and (.devices[0].ports[0] | .state == "ACTIVE" and .link_layer == "Ethernet" and .netdev == "veth0"
		and .netdev_mtu == $mtu and .active_mtu <= .max_mtu
		and (.gids[] | select(.index == 1) | .type == "RoCE v2" and .address == "192.0.2.1" and .netdev == "veth0")
		and (.gids[] | select(.index == 0) | .link_local == true)
		and (.use[] | select(.address == "192.0.2.1") | .gid_index == 1))' <<<"$output"
	assert_success
	# -p is the TCP port after the subcommand; --pretty spreads the same document over lines.
	run --separate-stderr "$RDMACTL" pingpong --check -j --pretty
	assert_success
	[ "${#lines[@]}" -gt 20 ]
	run jq -e '.devices[0].name == "rxe0"' <<<"$output"
	assert_success
}

@test "--accept-timeout: a server nobody calls gives up" {
	run timeout 30 "$RDMACTL" pingpong -p 18613 --accept-timeout 1
	assert_failure 1
	assert_output --partial "no client within 1 s"
}

@test "a busy TCP port: the second server says so" {
	srv_start srv -p 18614 --accept-timeout 30
	run timeout 30 "$RDMACTL" pingpong -p 18614 --accept-timeout 1
	assert_failure 1
	assert_output --partial "cannot listen on TCP port 18614: Address already in use"
}

@test "a client that is not a pingpong: the server gives up after --timeout" {
	srv_start srv -p 18615 --timeout 2
	exec 5<>/dev/tcp/192.0.2.1/18615
	local rc=0 t0=$SECONDS
	wait $SRV || rc=$?
	exec 5>&-
	[ $rc -eq 1 ]
	[ $((SECONDS - t0)) -le 8 ]
	run cat "$T/srv.err"
	assert_output --partial "the client sent no address within 2 s"
}

@test "--check HOST says which GID reaches it; -d of a missing device fails" {
	run "$RDMACTL" pingpong --check -j 192.0.2.1
	assert_success
	run jq -e '.route.choice.gid_index == 1 and .route.choice.device == "rxe0"' <<<"$output"
	assert_success
	run "$RDMACTL" pingpong --check -d nosuchdev
	assert_failure 1
	assert_output --partial "device nosuchdev not found"
	run "$RDMACTL" pingpong --check -i 2
	assert_success
	assert_output --partial "warning: rxe0: no port 2 (the device has 1)"
}

@test "--check warns when the port is down, and the pingpong says so" {
	ip link set veth0 down
	wait_for 10 bash -c "rdma link show rxe0/1 | grep -q 'state DOWN'"
	run --separate-stderr "$RDMACTL" pingpong --check -j
	local check=$output
	run timeout 60 "$RDMACTL" pingpong -p 18617 --timeout 3 192.0.2.1
	ip link set veth0 up
	assert_failure 1
	assert_output --partial "port 1 of rxe0 is DOWN: nothing can connect through it (is veth0 up?"
	run jq -e '[.warnings[] | select(test("rxe0/1: port is DOWN"))] | length == 1' <<<"$check"
	assert_success
	wait_for 20 bash -c "rdma link show rxe0/1 | grep -q ACTIVE"
	wait_for 20 lab_gid1
}

@test "completion: -d offers rxe0 from sysfs, -g its used GID indexes" {
	run complete_words rdmactl pingpong -d ""
	assert_output "rxe0"
	run complete_words rdmactl pingpong -d rxe0 -g ""
	assert_line "0"
	assert_line "1"
	run complete_words rdmactl pingpong -d rxe0 -i ""
	assert_output "1"
}
