#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl doctor on the host: usage errors, one JSON document on stdout with messages apart, and the node
# policy's own checks (absent, missing, unreadable, not parsing). What the kernel can enforce is tested in the
# lab (tests/lab/doctor.bats, tests/lab/nolsm/doctor.bats): the host may have BPF LSM or bpffs or not.

load helper

setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	unset RDMACTL_CONTAINERS_CONF
	CDI=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$CDI"
}

# The status of check $1 (with kind or source $2) in the JSON document $output.
status_of() {
	jq -er --arg c "$1" --arg s "${2:-}" \
		'[.checks[] | select(.check == $c and ($s == "" or .kind == $s or .source == $s))][0].status' <<<"$output"
}

@test "bad options and arguments are usage errors (exit 2)" {
	run -2 "$RDMACTL" doctor --bogus
	run -2 "$RDMACTL" doctor extra
	run --separate-stderr -2 "$RDMACTL" doctor --policy rel.conf
	[[ $stderr == *"--policy rel.conf: an absolute path"* ]]
	run -2 "$RDMACTL" doctor --exe rdmactl
	run -2 "$RDMACTL" doctor --ledger ''
	run -2 "$RDMACTL" doctor --cgroup
}

@test "doctor is in rdmactl --help; its --help says what each exit status means" {
	run -0 "$RDMACTL" --help
	assert_output --regexp $'\n  doctor +what this node can enforce'
	run -0 "$RDMACTL" doctor --help
	assert_output --partial "Exit status: 0 every limit the policy asks can be enforced here"
	assert_output --partial "1 something it needs cannot be"
	assert_output --partial "2 usage error"
	run -0 "$RDMACTL" doc --help
}

@test "-j: one JSON document on stdout, messages on stderr; enforceable agrees with the exit status" {
	run --separate-stderr "$RDMACTL" doctor -j --cdi-dir "$CDI"
	[ "$status" -le 1 ]
	run -0 jq -e --argjson rc "$status" '
		(.checks | length) > 8 and
		all(.checks[]; (.status | IN("ok", "warn", "fail", "absent")) and (.reason | length) > 0 and (.check | type) == "string") and
		.enforceable == ($rc == 0) and
		(.enforceable == ([.checks[] | select(.status == "fail")] | length == 0)) and
		([.checks[].check] | contains(["lsm", "bpffs", "programs", "rdma_controller", "rdma_max", "ledger",
			"interceptor", "policy", "cdi", "exporter"]))' <<<"$output"
	# -p: the same document, pretty
	run --separate-stderr "$RDMACTL" doctor -j -p --cdi-dir "$CDI"
	[ "${#lines[@]}" -gt 20 ]
	run -0 jq -e '.checks | length > 8' <<<"$output"
}

@test "text: one line a check, status in the second column, then what the exit status means" {
	run "$RDMACTL" doctor --cdi-dir "$CDI"
	[ "$status" -le 1 ]
	assert_line --regexp '^lsm +(ok|warn|fail) +'
	assert_line --regexp '^bpffs +(ok|warn|fail) +'
	assert_line --regexp '^exporter netlink +(ok|warn|absent) +'
	if [ "$status" = 0 ]; then
		assert_line "kernel limits can be set here (no node policy)"
	else
		assert_line --regexp '^[0-9]+ checks? failed: kernel limits cannot be set here$'
	fi
}

@test "no ledger: absent, and doctor does not create one" {
	run --separate-stderr "$RDMACTL" doctor -j --cdi-dir "$CDI"
	run -0 status_of ledger
	assert_output absent
	[ ! -e "$RDMACTL_LEDGER" ]
	run -0 "$RDMACTL" quota init
	run --separate-stderr "$RDMACTL" doctor -j --cdi-dir "$CDI"
	run -0 status_of ledger
	assert_output ok
	# on a read-only mount (a container's hostPath mounted readOnly) it cannot be opened: warn, not fail
	run --separate-stderr unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' _ \
		"$BATS_TEST_TMPDIR" "$RDMACTL" doctor -j --cdi-dir "$CDI"
	[ "$status" -le 1 ]
	run -0 jq -er '.checks[] | select(.check == "ledger") | "\(.status) \(.reason)"' <<<"$output"
	assert_output --regexp '^warn cannot open it from here: .*Read-only file system'
	# a ledger that is not one: fail, and the fix
	head -c 100 /dev/zero >"$RDMACTL_LEDGER"
	run --separate-stderr -1 "$RDMACTL" doctor -j --cdi-dir "$CDI"
	run -0 jq -er '.checks[] | select(.check == "ledger") | "\(.status) \(.reason)"' <<<"$output"
	assert_output --regexp '^fail .*rdmactl quota init --ledger '
}

@test "the policy: absent is no failure of its own; missing, unreadable or not parsing is a failure (exit 1)" {
	# a named file that does not exist
	run --separate-stderr -1 "$RDMACTL" doctor -j --policy "$BATS_TEST_TMPDIR/none.conf" --cdi-dir "$CDI"
	run -0 jq -er '.checks[] | select(.check == "policy") | "\(.status) \(.reason)"' <<<"$output"
	assert_output --partial "fail $BATS_TEST_TMPDIR/none.conf: no such file"
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/none.conf run --separate-stderr -1 "$RDMACTL" doctor -j --cdi-dir "$CDI"
	run -0 status_of policy
	assert_output fail
	# a line that does not parse: the hook would fail every container closed
	printf 'default qp=8\nceiling qp=x\n' >"$BATS_TEST_TMPDIR/bad.conf"
	run --separate-stderr -1 "$RDMACTL" doctor --policy "$BATS_TEST_TMPDIR/bad.conf" --cdi-dir "$CDI"
	assert_line --regexp '^policy +fail +.*bad\.conf: line 2: .*every container of the node fails to start'
	# unreadable (another user's 0600 file)
	printf 'default qp=8\n' >"$BATS_TEST_TMPDIR/secret.conf"
	chmod 600 "$BATS_TEST_TMPDIR/secret.conf"
	chmod 755 "$BATS_TEST_TMPDIR"
	run --separate-stderr -1 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$RDMACTL" doctor -j --policy "$BATS_TEST_TMPDIR/secret.conf" --cdi-dir "$CDI"
	run -0 jq -er '.checks[] | select(.check == "policy") | "\(.status) \(.reason)"' <<<"$output"
	assert_output --regexp '^fail .*secret\.conf: .*(Permission denied|permission)'
	# the default path, when it is not there: absent (the hook leaves containers alone)
	if [ ! -e /etc/rdmactl/containers.conf ]; then
		run --separate-stderr "$RDMACTL" doctor -j --cdi-dir "$CDI"
		local doc=$output
		run -0 jq -e '[.checks[] | select(.check == "limit")] | length == 0' <<<"$doc"
		output=$doc
		run -0 status_of policy
		assert_output absent
	fi
}

@test "a policy's limits: one check per kind it limits, naming who gets it; wr is the interceptor's only" {
	printf 'default qp=8 mr_bytes=1G\nceiling cq=64\nbudget small qp=2 wr=16\nbudget big qp=unlimited\n' >"$BATS_TEST_TMPDIR/p.conf"
	run --separate-stderr "$RDMACTL" doctor -j --policy "$BATS_TEST_TMPDIR/p.conf" --cdi-dir "$CDI"
	[ "$status" -le 1 ]
	local doc=$output
	run -0 jq -r '[.checks[] | select(.check == "limit") | .kind] | join(" ")' <<<"$doc"
	assert_output "cq qp mr_bytes wr"
	run -0 jq -r '.checks[] | select(.check == "limit" and .kind == "qp") | .reason' <<<"$doc"
	assert_output --regexp '^the default \(every container, kube-system.s included\); budget small: '
	run -0 jq -r '.checks[] | select(.check == "limit" and .kind == "cq") | .reason' <<<"$doc"
	assert_output --regexp '^the ceiling \(every container'
	run -0 jq -r '.checks[] | select(.check == "limit" and .kind == "wr") | "\(.status) \(.reason)"' <<<"$doc"
	assert_output --regexp '^warn budget small: a cap the interceptor checks'
}

@test "CDI: no specs is absent; specs of another binary or policy are stale (warn), current ones ok" {
	printf 'budget small qp=2\n' >"$BATS_TEST_TMPDIR/p.conf"
	run --separate-stderr "$RDMACTL" doctor -j --policy "$BATS_TEST_TMPDIR/p.conf" --cdi-dir "$CDI" --exe /usr/bin/rdmactl
	run -0 status_of cdi
	assert_output absent
	run -0 "$RDMACTL" cdi generate --policy "$BATS_TEST_TMPDIR/p.conf" --output "$CDI" --exe /usr/bin/rdmactl
	run --separate-stderr "$RDMACTL" doctor -j --policy "$BATS_TEST_TMPDIR/p.conf" --cdi-dir "$CDI" --exe /usr/bin/rdmactl
	run -0 status_of cdi
	assert_output ok
	# the hooks run another binary than the one named
	run --separate-stderr "$RDMACTL" doctor -j --policy "$BATS_TEST_TMPDIR/p.conf" --cdi-dir "$CDI" --exe /usr/local/bin/rdmactl
	run -0 jq -er '.checks[] | select(.check == "cdi") | "\(.status) \(.reason)"' <<<"$output"
	assert_output --regexp '^warn specs in .*: 0 devices current, 1 stale, 0 missing .*cdi generate --exe /usr/local/bin/rdmactl'
}
