#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl cdi on the host, against a sysfs and /dev made for the test: the specs it writes validate against
# the CDI schema podman 4.3 reads, name every uverbs device, and turn the node policy's budgets and --budget
# into hook-only devices; list tells current from stale; bad budgets are refused. A real podman using the
# specs is in tests/lab/oci.bats.

load helper

setup() {
	S=$BATS_TEST_TMPDIR/sys D=$BATS_TEST_TMPDIR/dev O=$BATS_TEST_TMPDIR/cdi
	mkdir -p "$S/class/infiniband_verbs/uverbs0" "$S/class/infiniband_verbs/uverbs1" "$D"
	echo rxe0 >"$S/class/infiniband_verbs/uverbs0/ibdev"
	echo mlx5_1 >"$S/class/infiniband_verbs/uverbs1/ibdev"
	touch "$D/rdma_cm"
	export RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/containers.conf
	printf 'default qp=3\nceiling qp=64 mr_bytes=64G\nbudget small qp=2 cq=4\n' >"$RDMACTL_CONTAINERS_CONF"
}

cdi() {
	"$RDMACTL" cdi "$@" --sysfs "$S" --dev "$D" -o "$O"
}

@test "cdi generate: an hca device per uverbs device and 'all', budget devices from the policy and --budget; both specs validate" {
	run -0 --separate-stderr cdi generate --budget qp2:qp=2,mr-bytes=1G
	assert_line "$O/rdmactl.io-hca.json: rdmactl.io/hca=all and 2 devices"
	assert_line "$O/rdmactl.io-budget.json: 2 budgets"
	run -0 "$TOP/tests/cdi-validate" "$O/rdmactl.io-hca.json" "$O/rdmactl.io-budget.json"
	run -0 jq -c '[.cdiVersion, .kind, [.devices[] | [.name, [.containerEdits.deviceNodes[].path]]]]' \
		"$O/rdmactl.io-hca.json"
	assert_output "[\"0.3.0\",\"rdmactl.io/hca\",[[\"mlx5_1\",[\"$D/uverbs1\",\"$D/rdma_cm\"]],[\"rxe0\",[\"$D/uverbs0\",\"$D/rdma_cm\"]],[\"all\",[\"$D/uverbs1\",\"$D/uverbs0\",\"$D/rdma_cm\"]]]]"
	# hooks only: the policy's budget by name (the hook reads the policy when the container starts), --budget's limits
	run -0 jq -c '[.kind, [.devices[] | [.name, [.containerEdits.hooks[] | [.hookName, .path == $exe, .args]]]]]' \
		--arg exe "$(readlink -f "$RDMACTL")" "$O/rdmactl.io-budget.json"
	assert_output "[\"rdmactl.io/budget\",[[\"small\",[[\"createRuntime\",true,[\"rdmactl\",\"oci-hook\",\"--policy\",\"$RDMACTL_CONTAINERS_CONF\",\"--budget\",\"small\",\"createRuntime\"]],[\"poststop\",true,[\"rdmactl\",\"oci-hook\",\"--policy\",\"$RDMACTL_CONTAINERS_CONF\",\"--budget\",\"small\",\"poststop\"]]]],[\"qp2\",[[\"createRuntime\",true,[\"rdmactl\",\"oci-hook\",\"--policy\",\"$RDMACTL_CONTAINERS_CONF\",\"--limit\",\"qp=2,mr_bytes=1073741824\",\"createRuntime\"]],[\"poststop\",true,[\"rdmactl\",\"oci-hook\",\"--policy\",\"$RDMACTL_CONTAINERS_CONF\",\"--limit\",\"qp=2,mr_bytes=1073741824\",\"poststop\"]]]]]]"
	[ "$(stat -c %a "$O/rdmactl.io-hca.json")" = 644 ]
}

@test "cdi list: the devices, and whether the specs on disk are current; -j" {
	run -0 cdi generate
	run -0 --separate-stderr cdi list
	assert_line --regexp '^rdmactl.io/hca=rxe0 +.*/uverbs0 \(spec current\)$'
	assert_line --regexp '^rdmactl.io/hca=all +every uverbs \(spec current\)$'
	assert_line --regexp '^rdmactl.io/budget=small +policy budget small \(spec current\)$'
	# the node changes: the policy has one more budget, a device is gone
	echo 'budget big qp=64' >>"$RDMACTL_CONTAINERS_CONF"
	rm -r "$S/class/infiniband_verbs/uverbs1"
	run -1 --separate-stderr cdi list -j
	[[ $stderr == "rdmactl cdi: the specs in $O are not current (rdmactl cdi generate --output $O writes them again)" ]]
	run -0 jq -r '.devices[] | "\(.name) \(.spec)"' <<<"$output"
	assert_output "$(printf '%s\n' 'rxe0 stale' 'all stale' 'small stale' 'big stale')"
	run -0 cdi generate
	run -0 --separate-stderr cdi list -j
	[ "$(jq '[.devices[] | select(.spec != "current")] | length' <<<"$output")" = 0 ]
	[ "$(jq -c .stale_files <<<"$output")" = '[]' ]
	# a budget spec on disk, and no budgets now
	: >"$RDMACTL_CONTAINERS_CONF"
	run -1 --separate-stderr cdi list
	assert_line "$O/rdmactl.io-budget.json: stale (no budgets now; rdmactl cdi generate removes it)"
}

@test "cdi list: specs made with --budget and --preload are current, named as such; stale exits 1 and the hint keeps them (issue 51)" {
	run -0 cdi generate --budget qp2:qp=2,mr-bytes=1G --preload
	run -0 --separate-stderr cdi list
	assert_line --regexp '^rdmactl.io/hca=all +every uverbs \(spec current\)$'
	assert_line --regexp '^rdmactl.io/budget=small +policy budget small \(spec current\)$'
	assert_line --regexp '^rdmactl.io/budget=qp2 +--budget qp2:qp=2,mr_bytes=1073741824 \(spec current\)$'
	[ -z "$stderr" ]
	run -0 --separate-stderr cdi list -j
	run -0 jq -c '[.devices[] | select(.kind == "rdmactl.io/budget") | [.name, .limits, .from, .spec]]' <<<"$output"
	assert_output '[["small",null,null,"current"],["qp2","qp=2,mr_bytes=1073741824","spec","current"]]'
	# only --budget devices: no policy budgets is not "no budgets now"
	: >"$RDMACTL_CONTAINERS_CONF"
	run -0 cdi generate --budget qp2:qp=2
	run -0 --separate-stderr cdi list
	assert_line --regexp '^rdmactl.io/budget=qp2 +--budget qp2:qp=2 \(spec current\)$'
	refute_output --partial stale
	# stale: exit 1, and the command it suggests writes the --budget device again
	rm "$O/rdmactl.io-hca.json"
	printf 'budget big qp=64\n' >"$RDMACTL_CONTAINERS_CONF"
	run -1 --separate-stderr cdi list
	assert_line --regexp '^rdmactl.io/budget=qp2 +--budget qp2:qp=2 \(spec stale\)$'
	assert_line --regexp '^rdmactl.io/hca=all +every uverbs \(spec missing\)$'
	[[ $stderr == *"(rdmactl cdi generate --budget qp2:qp=2 --output $O writes them again)" ]]
	run -0 cdi generate --budget qp2:qp=2
	run -0 --separate-stderr cdi list
	assert_line --regexp '^rdmactl.io/budget=big +policy budget big \(spec current\)$'
	assert_line --regexp '^rdmactl.io/budget=qp2 +--budget qp2:qp=2 \(spec current\)$'
}

@test "cdi generate: no RDMA devices means no hca spec (a stale one removed); no budgets, no budget spec" {
	run -0 cdi generate
	[ -e "$O/rdmactl.io-hca.json" ]
	rm -r "$S/class/infiniband_verbs"
	: >"$RDMACTL_CONTAINERS_CONF"
	run -0 --separate-stderr cdi generate
	[[ $stderr == *"no RDMA devices here"* ]]
	[ ! -e "$O/rdmactl.io-hca.json" ]
	[ ! -e "$O/rdmactl.io-budget.json" ]
}

@test "cdi: a bad --budget, a budget above the ceiling, a name twice, a bad policy or subcommand: refused, nothing written" {
	local b
	for b in 'qp2' ':qp=2' '2qp:qp=2' 'a b:qp=2' 'x:qpp=2' 'x:qp=-1' 'x:qp=2,qp=3' 'big:qp=65' 'small:qp=1'; do
		run -2 --separate-stderr cdi generate --budget "$b"
		[[ $stderr == *"--budget '$b'"* ]] || { echo "$b: $stderr" >&2; return 1; }
	done
	[[ $stderr == *"a budget small exists already ($RDMACTL_CONTAINERS_CONF)"* ]]
	run -2 --separate-stderr cdi generate --budget 'big:qp=65'
	[[ $stderr == *"above the node's ceiling"* ]]
	echo 'budget x qp=100' >>"$RDMACTL_CONTAINERS_CONF"
	run -1 --separate-stderr cdi generate
	[[ $stderr == *"cannot read the node policy: $RDMACTL_CONTAINERS_CONF: line 4: budget x qp=100 is above the ceiling qp=64 of line 2"* ]]
	run -1 --separate-stderr "$RDMACTL" cdi generate --policy "$BATS_TEST_TMPDIR/none" -o "$O"
	[[ $stderr == *"none: No such file or directory"* ]]
	[ ! -e "$O" ]
	run -2 --separate-stderr "$RDMACTL" cdi
	[[ $stderr == *"missing command (generate or list)"* ]]
	run -2 --separate-stderr "$RDMACTL" cdi frob
	[[ $stderr == *"unknown command 'frob'"* ]]
	run -2 --separate-stderr "$RDMACTL" cdi generate list
	[[ $stderr == *"unexpected argument 'list'"* ]]
	run -2 --separate-stderr "$RDMACTL" cdi generate --exe rdmactl
	[[ $stderr == *"--exe rdmactl: an absolute path"* ]]
}

@test "cdi generate --budget: numbers are decimal (qp=010 is ten), 0x10 is refused naming the word (issue 51)" {
	run -2 --separate-stderr cdi generate --budget 'x:qp=010,mr_bytes=0x10'
	[[ $stderr == *"--budget 'x:qp=010,mr_bytes=0x10': mr_bytes: invalid value '0x10' (numbers are decimal, not hexadecimal"* ]]
	[ ! -e "$O" ]
	run -0 --separate-stderr cdi generate --budget 'x:qp=010,mr_bytes=010K'
	run -0 jq -r '.devices[] | select(.name == "x") | .containerEdits.hooks[0].args | join(" ")' "$O/rdmactl.io-budget.json"
	assert_output --partial -- "--limit qp=10,mr_bytes=10240 createRuntime"
}

@test "cdi: a relative --policy or RDMACTL_CONTAINERS_CONF is refused: the hooks run from the bundle directory (issue 51)" {
	cd "$BATS_TEST_TMPDIR"
	run -2 --separate-stderr "$RDMACTL" cdi generate --policy containers.conf --sysfs "$S" --dev "$D" -o "$O"
	[[ $stderr == "rdmactl cdi: --policy containers.conf: an absolute path (runtimes run hooks from the container's bundle directory)"* ]]
	run -2 --separate-stderr env RDMACTL_CONTAINERS_CONF=containers.conf "$RDMACTL" cdi generate --sysfs "$S" --dev "$D" -o "$O"
	assert_equal "${stderr_lines[0]}" "rdmactl cdi: RDMACTL_CONTAINERS_CONF=containers.conf: an absolute path (runtimes run hooks from the container's bundle directory)"
	run -2 --separate-stderr env RDMACTL_CONTAINERS_CONF=./containers.conf "$RDMACTL" cdi list --sysfs "$S" --dev "$D" -o "$O"
	[ ! -e "$O" ]
	# the oci-hook too (it runs in the bundle directory: a relative file is not the operator's)
	run -2 --separate-stderr "$RDMACTL" oci-hook --policy containers.conf </dev/null
	[[ $stderr == "rdmactl oci-hook: --policy containers.conf: an absolute path"* ]]
	run -0 --separate-stderr cdi generate --policy "$BATS_TEST_TMPDIR/containers.conf"
}

@test "cdi-validate itself refuses what the CDI schema and the spec's rules refuse" {
	local f=$BATS_TEST_TMPDIR/bad.json
	echo '{"cdiVersion":"0.3.0","kind":"rdmactl.io/budget","devices":[{"name":"a"}]}' >"$f"
	run -1 "$TOP/tests/cdi-validate" "$f"
	assert_output --partial "'containerEdits' is a required property"
	echo '{"cdiVersion":"0.6.0","kind":"rdmactl.io/budget","devices":[{"name":"a","containerEdits":{"env":["A=1"]}}]}' >"$f"
	run -1 "$TOP/tests/cdi-validate" "$f"
	assert_output --partial "cdiVersion '0.6.0': not one podman 4.3 reads"
	echo '{"cdiVersion":"0.3.0","kind":"x","devices":[{"name":"9a","containerEdits":{"hooks":[{"hookName":"boot","path":"rdmactl"}]}}]}' >"$f"
	run -1 "$TOP/tests/cdi-validate" "$f"
	assert_output --partial "kind 'x'"
	assert_output --partial "device name '9a'"
	assert_output --partial "hookName 'boot'"
	assert_output --partial "hook path 'rdmactl' is not absolute"
}

@test "cdi generate --preload: hca devices mount the interceptor read-only at its path and set LD_PRELOAD; the spec validates" {
	local p
	p=$(readlink -f "$BUILD/librdmactl-preload.so")
	run -0 cdi generate --preload
	run -0 "$TOP/tests/cdi-validate" "$O/rdmactl.io-hca.json"
	run -0 jq -c --arg p "$p" '[.devices[] | .containerEdits | [.env == ["LD_PRELOAD=" + $p],
		.mounts == [{hostPath: $p, containerPath: $p, options: ["ro", "nosuid", "nodev", "bind"]}]]] | unique' \
		"$O/rdmactl.io-hca.json"
	assert_output '[[true,true]]'
	# without it, no env and no mounts
	run -0 cdi generate
	run -0 jq -c '[.devices[] | .containerEdits | has("env") or has("mounts")] | unique' "$O/rdmactl.io-hca.json"
	assert_output '[false]'
	RDMACTL_PRELOAD=$BATS_TEST_TMPDIR/none run -1 --separate-stderr cdi generate --preload
	[[ $stderr == *"--preload: cannot find librdmactl-preload.so"*"RDMACTL_PRELOAD=PATH"* ]]
}
