#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl monitor on the host: usage matrix, privilege and ib_core errors (the host has no ib_core).

load helper

@test "monitor --help documents the options with examples" {
	run -0 "$RDMACTL" monitor --help
	assert_line --index 0 --regexp "^Usage: rdmactl monitor "
	for o in --pid --type --dev --stats --duration --audit --interval --enforce --json; do
		assert_output --partial -- "$o"
	done
	assert_output --partial "Examples:"
	assert_output --partial "CAP_BPF and CAP_PERFMON"
}

@test "monitor usage errors exit 2 with a message on stderr" {
	run -2 --separate-stderr "$RDMACTL" monitor --type frob
	assert_equal "$output" ""
	[[ $stderr == *"unknown KIND 'frob'"* ]]
	run -2 --separate-stderr "$RDMACTL" monitor --type c
	[[ $stderr == *"ambiguous KIND 'c'"* ]]
	run -2 "$RDMACTL" monitor --pid 0
	assert_output --partial "invalid PID '0'"
	run -2 "$RDMACTL" monitor --pid 12x
	run -2 "$RDMACTL" monitor --dev ""
	run -2 "$RDMACTL" monitor --stats=0
	assert_output --partial "invalid SECONDS '0'"
	run -2 "$RDMACTL" monitor --stats=abc
	run -2 "$RDMACTL" monitor --duration -1
	run -2 "$RDMACTL" monitor --interval 0.01 --audit
	run -2 "$RDMACTL" monitor --enforce signal=TERM
	assert_output --partial "--enforce needs --audit"
	run -2 "$RDMACTL" monitor --audit --enforce TERM
	assert_output --partial "expected signal=TERM"
	run -2 "$RDMACTL" monitor --audit --enforce signal=NOPE
	run -2 "$RDMACTL" monitor --audit --enforce signal=99
	run -2 "$RDMACTL" monitor --audit --stats
	assert_output --partial "cannot be combined"
	run -2 "$RDMACTL" monitor extra
	assert_output --partial "unexpected argument 'extra'"
	run -2 "$RDMACTL" monitor --frob
}

@test "--stats 2 as the examples write it: the number is SECONDS (--stats=2 too); --type cm-id is cm_id (issue 51)" {
	run -2 --separate-stderr "$RDMACTL" monitor --stats 0
	[[ $stderr == *"invalid SECONDS '0'"* ]]
	run -2 --separate-stderr "$RDMACTL" monitor --stats 2 --audit
	[[ $stderr == *"--stats and --audit cannot be combined"* ]]
	run -2 --separate-stderr "$RDMACTL" monitor --stats 2 extra
	[[ $stderr == *"unexpected argument 'extra'"* ]]
	# parsed: what fails now is the watching, not the command line (exit 1 without ib_core, or 0 in a lab)
	run --separate-stderr "$RDMACTL" monitor --stats 2 --duration 0.2 --type cm-id
	[ "$status" -ne 2 ] || fail "exit 2: $stderr"
	run -0 grep -c 'monitor \\-\\-stats 2' "$TOP/man/rdmactl-monitor.8"
}

@test "monitor accepts prefixes of kinds and the global options after the subcommand" {
	# Parsing succeeds (exit 1 below is the missing ib_core or privileges, never a usage error).
	run --separate-stderr "$RDMACTL" monitor -j -v --type q --pid 1 --dev rxe0 --stats=0.5 --duration 1
	[ "$status" -eq 1 ]
	assert_equal "$output" ""
	run --separate-stderr "$RDMACTL" mon --audit --enforce signal=SIGKILL --interval 1
	[ "$status" -eq 1 ]
}

@test "without privileges: names CAP_BPF and CAP_PERFMON, exit 1, stdout clean" {
	if [ "$(id -u)" -eq 0 ]; then
		# root with an empty capability bounding set is as unprivileged as it gets
		run --separate-stderr setpriv --bounding-set=-all --inh-caps=-all -- "$RDMACTL" monitor -j
	else
		run --separate-stderr "$RDMACTL" monitor -j
	fi
	[ "$status" -eq 1 ]
	assert_equal "$output" ""
	[[ $stderr == "rdmactl monitor: "*"needs root or CAP_BPF and CAP_PERFMON"*"missing: CAP_BPF CAP_PERFMON"* ]]
}

@test "with CAP_BPF alone: says CAP_PERFMON is missing" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to hand out a single capability"
	run --separate-stderr setpriv --bounding-set=-all,+bpf --inh-caps=-all -- "$RDMACTL" monitor
	[ "$status" -eq 1 ]
	[[ $stderr == *"missing: CAP_PERFMON)"* ]]
}

@test "without ib_core: a clear error, exit 1, stdout clean (stream and audit)" {
	[ ! -e /sys/module/ib_core ] || skip "this host has ib_core loaded"
	[ "$(id -u)" -eq 0 ] || skip "needs root to get past the privilege check"
	run --separate-stderr "$RDMACTL" monitor -j
	[ "$status" -eq 1 ]
	assert_equal "$output" ""
	[[ $stderr == "rdmactl monitor: "*"ib_core is not loaded"*"(modprobe ib_core"* ]]
	run --separate-stderr "$RDMACTL" monitor --audit -j
	[ "$status" -eq 1 ]
	assert_equal "$output" ""
	[[ $stderr == *"ib_core is not loaded"* ]]
}

@test "man page and completion cover monitor" {
	[ -f "$TOP/man/rdmactl-monitor.8" ]
	run -0 man --warnings -l "$TOP/man/rdmactl-monitor.8"
	assert_output --partial "rdma_restrack_commit_del"
	assert_output --partial "RDMA_NL_GROUP_NOTIFY"
	assert_output --partial "RDMACTL_MON_UEVENT"
	source "$TOP/completions/rdmactl"
	COMP_WORDS=(rdmactl monitor --type c)
	COMP_CWORD=3
	_rdmactl
	assert_equal "$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')" "cm_id counter cq ctx "
	COMP_WORDS=(rdmactl mon --au)
	COMP_CWORD=2
	_rdmactl
	assert_equal "${COMPREPLY[*]}" "--audit"
}
