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
	[[ $stderr == *"'cdi', 'dev', 'doctor', 'export', 'monitor', 'oci-hook', 'pingpong', 'quota', 'run', 'top'"* ]]
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

@test "rdmactl help, rdmactl help quota, rdmactl quota help: --help, as in iproute2; messages say rdmactl, not the path it ran by (issue 51)" {
	run -0 --separate-stderr "$RDMACTL" help
	assert_line --index 0 "Usage: rdmactl [OPTION...] COMMAND [ARGS...]"
	assert_output --partial "Commands:"
	run -0 "$RDMACTL" help quota
	assert_line --index 0 --partial "Usage: rdmactl quota [OPTION...] set KIND VALUE SCOPE"
	run -0 "$RDMACTL" quota help
	assert_line --index 0 --partial "Usage: rdmactl quota [OPTION...] set KIND VALUE SCOPE"
	run -0 "$RDMACTL" -j top help
	assert_line --index 0 "Usage: rdmactl top [OPTION...]"
	run -2 "$RDMACTL" help frob
	assert_output --partial "unknown command 'frob'"
	# run's words after it are CMD's
	run -127 "$RDMACTL" run help
	# the path it was run by is not its name
	run -2 --separate-stderr "$BUILD/../$(basename "$BUILD")/rdmactl" --frob
	assert_equal "${stderr_lines[0]}" "rdmactl: unrecognized option '--frob'"
}

@test "usage errors quote one way: argp's own 'Try' line as the rest ('...', not \`...') (issue 51)" {
	run -2 --separate-stderr "$RDMACTL" --frob
	assert_equal "${stderr_lines[1]}" "Try 'rdmactl --help' or 'rdmactl --usage' for more information."
	run -2 --separate-stderr "$RDMACTL" cdi --frob
	assert_equal "$stderr" "rdmactl cdi: unrecognized option '--frob'
Try 'rdmactl cdi --help' or 'rdmactl cdi --usage' for more information."
	run -2 --separate-stderr "$RDMACTL" top -x
	assert_equal "${stderr_lines[1]}" "Try 'rdmactl top --help' or 'rdmactl top --usage' for more information."
	# argp_error's own messages too
	run -2 --separate-stderr "$RDMACTL" export --once --listen :1
	assert_equal "$stderr" "rdmactl export: --once goes with --textfile or stdout, not with --listen
Try 'rdmactl export --help' or 'rdmactl export --usage' for more information."
	run -2 --separate-stderr "$RDMACTL"
	[[ $stderr != *'`'* ]]
}

@test "oci-hook on a terminal says what it waits for on stdin (issue 51)" {
	command -v script >/dev/null || skip "no script(1)"
	run script -qec "$RDMACTL oci-hook </dev/tty & sleep 1; kill \$!" /dev/null
	assert_output --partial "rdmactl oci-hook: reading the container's OCI state (JSON) on stdin, as a runtime gives it to a hook; end with Ctrl-D"
}

@test "global options parse before and after the command" {
	run -0 "$RDMACTL" -j -p -v top --help
	run -0 "$RDMACTL" top -j -p -v --help
	run -0 "$RDMACTL" --json --pretty --verbose top --help
}
