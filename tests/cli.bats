#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The command skeleton: help from the command table, prefixes, usage errors, global options, exit codes.

load helper

@test "--help lists every command with its summary, from the table" {
	run -0 "$RDMACTL" --help
	for c in monitor pingpong quota run top; do
		assert_line --regexp "^  $c +[a-zA-Z]"
	done
	assert_output --partial "-j, --json"
	assert_output --partial "-p, --pretty"
	assert_output --partial "-v, --verbose"
	assert_output --partial "Exit status: 0 ok, 1 failure, 2 usage error."
}

@test "--version prints the version" {
	run -0 "$RDMACTL" --version
	assert_output --regexp '^rdmactl [0-9]+\.[0-9]+\.[0-9]+$'
	run -0 "$RDMACTL" -V
}

@test "every command has its own --help" {
	for c in monitor pingpong quota run top; do
		run -0 "$RDMACTL" "$c" --help
		assert_line --index 0 --regexp "^Usage: rdmactl $c "
		assert_output --partial "--json"
	done
}

@test "unique prefixes select the command" {
	run -0 "$RDMACTL" mon --help
	assert_line --index 0 --regexp "^Usage: rdmactl monitor "
	run -0 "$RDMACTL" t --help
	assert_line --index 0 --regexp "^Usage: rdmactl top "
	run -0 "$RDMACTL" pi --help
	assert_line --index 0 --regexp "^Usage: rdmactl pingpong "
}

@test "an unknown command is a usage error naming the candidates" {
	run -2 --separate-stderr "$RDMACTL" frobnicate
	assert_equal "$output" ""
	[[ $stderr == *"unknown command 'frobnicate'"* ]]
	[[ $stderr == *"'cdi', 'dev', 'export', 'monitor', 'oci-hook', 'pingpong', 'quota', 'run', 'top'"* ]]
	run -2 "$RDMACTL" topp
	assert_output --partial "unknown command 'topp'"
}

@test "a missing command is a usage error" {
	run -2 "$RDMACTL"
	assert_output --partial "missing COMMAND"
	run -2 "$RDMACTL" -j
}

@test "an unknown global option is a usage error" {
	run -2 "$RDMACTL" --frob top
	assert_output --partial "unrecognized option"
	run -2 "$RDMACTL" top --frob
	assert_output --partial "unrecognized option"
}

@test "global options parse before and after the command" {
	run -0 "$RDMACTL" -j -p -v top --help
	run -0 "$RDMACTL" top -j -p -v --help
	run -0 "$RDMACTL" --json --pretty --verbose top --help
}
