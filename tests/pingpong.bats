#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl pingpong on the host: the usage matrix, and clear failures where there is no RDMA device.

load helper

# The host has no RDMA device (RDMA behaviour is tested in the lab); say so instead of guessing.
no_rdma_host() {
	if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
		skip "this host has RDMA devices: the no-device behaviour is not observable here"
	fi
}

@test "--help: options with ibv_rc_pingpong's letters, defaults, examples, exit codes" {
	run -0 "$RDMACTL" pingpong --help
	assert_line --index 0 "Usage: rdmactl pingpong [OPTION...] [HOST]"
	for o in "-d, --ib-dev=DEV" "-i, --ib-port=PORT" "-g, --gid-idx=INDEX" "-s, --size=SIZE" "-n, --iters=N" \
		"-m, --mtu=MTU" "-p, --port=TCP_PORT" "-e, --events" "-r, --rx-depth=N" "--timeout=SECONDS" \
		"--check" "--cm" "--accept-timeout=SECONDS" "-j, --json" "--pretty"; do
		assert_output --partial -- "$o"
	done
	assert_output --partial "default 18515"
	assert_output --partial "default 4096"
	assert_output --partial "default 1000"
	assert_output --partial "default 1024"
	assert_output --partial "default 500"
	assert_output --partial "Examples:"
	assert_output --partial "Exit status: 0 ok, 1 failure"
}

@test "usage errors exit 2 and name the bad value" {
	local -a bad=(
		"-m 1000|invalid MTU '1000'"
		"-m x|invalid MTU 'x'"
		"-p 0|invalid TCP port '0'"
		"-p 65536|invalid TCP port '65536'"
		"-p -1|invalid TCP port '-1'"
		"-n 0|invalid iteration count '0'"
		"-n 1x|invalid iteration count '1x'"
		"-s 0|invalid size '0'"
		"-s 2G|invalid size '2G'"
		"-s 4Q|invalid size '4Q'"
		"-i 0|invalid port '0'"
		"-g -1|invalid GID index '-1'"
		"-g 70000|invalid GID index '70000'"
		"-r 0|invalid rx depth '0'"
		"-l 16|invalid service level '16'"
		"--timeout 0|invalid timeout '0'"
		"--accept-timeout x|invalid accept timeout 'x'"
	)
	local case args msg
	for case in "${bad[@]}"; do
		args=${case%%|*}
		msg=${case#*|}
		# shellcheck disable=SC2086
		run -2 "$RDMACTL" pingpong $args 192.0.2.1
		assert_output --partial "$msg"
	done
}

@test "one HOST only; --cm and --check exclude what does not apply" {
	run -2 "$RDMACTL" pingpong host1 host2
	assert_output --partial "extra argument 'host2'"
	run -2 "$RDMACTL" pingpong ""
	assert_output --partial "empty HOST"
	run -2 "$RDMACTL" pingpong --check --cm
	assert_output --partial "--check and --cm do not go together"
	for o in "-g 1" "-d rxe0" "-m 1024" "-e" "-n 5"; do
		# shellcheck disable=SC2086
		run -2 "$RDMACTL" pingpong --cm $o 192.0.2.1
		assert_output --partial "--cm lets rdma_cm pick device and GID"
	done
	run -2 "$RDMACTL" pingpong --no-such-option
}

@test "-p after the subcommand is the TCP port, as in ibv_rc_pingpong" {
	run -2 "$RDMACTL" pingpong -p
	run -2 "$RDMACTL" pingpong -p notaport
	assert_output --partial "invalid TCP port 'notaport'"
}

@test "no RDMA device: --check fails with the reason and the fix, stdout stays empty with -j" {
	no_rdma_host
	run --separate-stderr "$RDMACTL" pingpong --check -j
	assert_failure 1
	assert_output ""
	[[ $stderr == *"no RDMA devices"*"rdma link add rxe0 type rxe netdev"* ]]
	run -1 "$RDMACTL" pingpong --check -d nosuchdev
	assert_output --partial "device nosuchdev not found"
}

@test "no RDMA device: client and server fail at once, naming the cause" {
	no_rdma_host
	run --separate-stderr timeout 20 "$RDMACTL" pingpong -j 127.0.0.1
	assert_failure 1
	assert_output ""
	[[ $stderr == *"no RDMA device found"* ]]
	run -1 timeout 20 "$RDMACTL" pingpong -d nosuchdev 127.0.0.1
	assert_output --partial "device nosuchdev not found"
	run -1 timeout 20 "$RDMACTL" pingpong --cm 127.0.0.1
	assert_output --partial "rdmactl pingpong:"
}

@test "no RDMA device: the server fails before it listens" {
	no_rdma_host
	run --separate-stderr timeout 20 "$RDMACTL" pingpong -p 18731
	assert_failure 1
	[[ $stderr == *"no RDMA device found"* ]]
	[[ $stderr != *"waiting for a client"* ]]
	run -1 timeout 20 "$RDMACTL" pingpong -p 18731 -d nosuchdev
	assert_output --partial "device nosuchdev not found"
}

@test "completion: pingpong options, MTU values, nothing for numbers" {
	run complete_words rdmactl pingpong --c
	assert_output "$(printf '%s\n' --check --cm)"
	run complete_words rdmactl pingpong -m ""
	assert_output "$(printf '%s\n' 256 512 1024 2048 4096 | sort)"
	run complete_words rdmactl pingpong -n ""
	assert_output ""
	run complete_words rdmactl pi --gid
	assert_output "--gid-idx"
}
