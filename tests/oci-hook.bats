#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl oci-hook on the host: the OCI state it reads is outside input (malformed JSON, bad annotations, odd
# ids) and every refusal names what is wrong; containers without rdmactl.io/ annotations are left alone.
# Applying limits to a real container's cgroup is in tests/lab/oci.bats.

load helper

setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	export RDMACTL_OCI_STATE_DIR=$BATS_TEST_TMPDIR/oci
	export RDMACTL_PODS_DIR=$BATS_TEST_TMPDIR/pods
	PIDS=()
	CGT=
}

teardown() {
	kill_pids_and_cgroups
}

# A cgroup tree of the test's own in the cgroup2 mount (CGT), or skip.
need_cgroups() {
	local root
	root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	[ -n "$root" ] || skip "no cgroup2 mount on this host"
	mkdir "$root/rdmactl-oci-test.$$" || skip "cannot create a cgroup under $root"
	CGT=$root/rdmactl-oci-test.$$
}

# A process in CGT/kubepods/pod<UID>/NAME, where a Kubernetes container's cgroup is (cgroupfs): its pid in P.
in_pod() { # UID NAME
	mkdir -p "$CGT/kubepods/pod$1/$2"
	sleep 600 3>&- &
	P=$!
	PIDS+=("$P")
	echo "$P" >"$CGT/kubepods/pod$1/$2/cgroup.procs"
}

# containerd's CRI annotations of a pod: UID NAMESPACE NAME (a JSON object's members)
cri() {
	printf '"io.kubernetes.cri.sandbox-uid":"%s","io.kubernetes.cri.sandbox-namespace":"%s","io.kubernetes.cri.sandbox-name":"%s"' "$@"
}

hook() {
	run "$@" --separate-stderr "$RDMACTL" oci-hook
}

state() { # id status pid annotations-json
	printf '{"ociVersion":"1.0.2","id":"%s","status":"%s",%s"bundle":"/b","annotations":%s}' "$1" "$2" \
		"${3:+\"pid\":$3,}" "$4"
}

@test "oci-hook: a container without rdmactl.io/ annotations is left alone (nothing written, no ledger)" {
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c1 creating $$ '{"io.podman.x":"1"}')"
	assert_output ""
	[ ! -e "$RDMACTL_OCI_STATE_DIR" ]
	[ ! -e "$RDMACTL_LEDGER" ]
	run -0 "$RDMACTL" oci-hook poststop <<<"$(state c1 stopped '' '{}')"
}

@test "oci-hook: a bad annotation value names the annotation and applies nothing" {
	run -1 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c2 creating $$ \
		'{"rdmactl.io/max-qp":"2","rdmactl.io/max-mr-bytes":"8Q"}')"
	[[ $stderr == *"annotation rdmactl.io/max-mr-bytes: invalid value '8Q'"*"the container does not start"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c2 creating $$ '{"rdmactl.io/max-qp":"-1"}')"
	[[ $stderr == *"annotation rdmactl.io/max-qp: invalid value '-1'"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c2 creating $$ '{"rdmactl.io/max-qps":"4"}')"
	[[ $stderr == *"annotation rdmactl.io/max-qps: unknown"*"qp"*"mr-bytes"* ]]
	[ ! -e "$RDMACTL_OCI_STATE_DIR/c2" ]
	[ ! -e "$RDMACTL_LEDGER" ]
}

@test "oci-hook: malformed state JSON is refused with the byte and the reason" {
	local bad
	for bad in '' '[]' '{"id":"x"' '{"id":"x"} {}' '{"id":"x",}' '{"id":x}' '{"pid":"12"}' '{"pid":1.5}' \
		'{"pid":0}' '{"pid":99999999999}' '{"id":"a\u0000b"}' '{"id":"\ud800"}' '{"annotations":[]}' \
		'{"annotations":{"rdmactl.io/max-qp":2}}' '{"id":"x","id":"y"}' \
		'{"annotations":{"rdmactl.io/max-qp":"1","rdmactl.io/max-qp":"2"}}' "{\"id\":\"$(printf '\xff')\"}" \
		"$(printf '{"x":%s1%s}' "$(printf '[%.0s' {1..40})" "$(printf ']%.0s' {1..40})")"; do
		run -1 --separate-stderr "$RDMACTL" oci-hook <<<"$bad"
		[[ $stderr == *"cannot read the OCI state on stdin: at byte "* ]] || {
			echo "input: $bad -> $stderr" >&2
			return 1
		}
	done
	run -1 --separate-stderr "$RDMACTL" oci-hook < <(head -c 1100000 /dev/zero | tr '\0' ' ')
	[[ $stderr == *"more than 1048576 bytes"* ]]
}

@test "oci-hook: a container id that cannot be a file name, a missing pid, an unknown status or STAGE" {
	run -1 --separate-stderr "$RDMACTL" oci-hook <<<"$(state ../x creating $$ '{"rdmactl.io/max-qp":"2"}')"
	[[ $stderr == *"container id '../x'"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook createRuntime <<<"$(state c3 creating '' '{"rdmactl.io/max-qp":"2"}')"
	[[ $stderr == *"the state has no pid"* ]]
	run -2 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c3 running $$ '{"rdmactl.io/max-qp":"2"}')"
	[[ $stderr == *"status 'running': give the STAGE"* ]]
	run -2 "$RDMACTL" oci-hook poststart
	assert_output --partial "unknown STAGE 'poststart'"
	run -2 "$RDMACTL" oci-hook poststop extra
	assert_output --partial "unexpected argument 'extra'"
}

@test "oci-hook: a container process that is gone is named as such, not as a host without cgroup v2 (issue 51)" {
	local dead
	sleep 0 & dead=$!
	wait "$dead"
	run -1 --separate-stderr "$RDMACTL" oci-hook createRuntime <<<"$(state c5 creating "$dead" '{"rdmactl.io/max-qp":"2"}')"
	assert_equal "$stderr" "rdmactl oci-hook: cannot read the cgroup of the container's process $dead: the process is gone (it exited before the hook ran)"
	[ ! -e "$RDMACTL_OCI_STATE_DIR/c5" ]
}

@test "oci-hook: poststop of a container createRuntime applied nothing to is a no-op" {
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c4 stopped '' '{"rdmactl.io/max-qp":"2"}')"
	assert_output ""
	[ -z "$stderr" ]
}

@test "the hooks.d file runs the hook at createRuntime and poststop of every container (a node default needs it)" {
	local j=$BUILD/oci-hooks/rdmactl.json
	run -0 jq -e '.version == "1.0.0" and .hook.args == ["rdmactl", "oci-hook"] and
		(.stages | sort) == ["createRuntime", "poststop"] and .when == {"always": true}' "$j"
	run -0 jq -r .hook.path "$j"
	assert_output --regexp '^/.*/rdmactl$'
}

@test "oci-hook: a request above the node's ceiling stops the container, naming the request, the value and the ceiling" {
	local p=$BATS_TEST_TMPDIR/containers.conf
	printf 'default qp=3\nceiling qp=64 mr_bytes=8G\nbudget small qp=2\n' >"$p"
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state c5 creating $$ '{"rdmactl.io/max-qp":"65"}')"
	[[ $stderr == *"annotation rdmactl.io/max-qp=65 asks qp=65, above the node's ceiling qp=64 ($p); the container does not start"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state c5 creating $$ '{"rdmactl.io/max-mr-bytes":"unlimited"}')"
	[[ $stderr == *"annotation rdmactl.io/max-mr-bytes=unlimited asks mr_bytes=unlimited, above the node's ceiling mr_bytes=8589934592"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" --limit qp=100 <<<"$(state c5 creating $$ '{}')"
	[[ $stderr == *"--limit qp=100 asks qp=100, above the node's ceiling qp=64"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state c5 creating $$ '{"rdmactl.io/budget":"huge"}')"
	[[ $stderr == *"annotation rdmactl.io/budget=huge: no budget 'huge' in $p (its budgets: small)"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" --budget nope createRuntime <<<"$(state c5 creating $$ '{}')"
	[[ $stderr == *"--budget nope: no budget 'nope'"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --limit 'qp=2,qp=3' <<<"$(state c5 creating $$ '{}')"
	[[ $stderr == *"--limit qp=2,qp=3: qp given twice; the container does not start"* ]]
	[ ! -e "$RDMACTL_OCI_STATE_DIR/c5" ]
	[ ! -e "$RDMACTL_LEDGER" ]
}

@test "oci-hook: annotation and policy numbers are decimal: \"010\" is ten, \"09\" nine, \"0x10\" refused (issue 51)" {
	local p=$BATS_TEST_TMPDIR/containers.conf
	printf 'ceiling qp=09 cq=010\n' >"$p"
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state d1 creating $$ '{"rdmactl.io/max-qp":"010"}')"
	[[ $stderr == *"annotation rdmactl.io/max-qp=010 asks qp=10, above the node's ceiling qp=9"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state d1 creating $$ '{"rdmactl.io/max-cq":"011"}')"
	[[ $stderr == *"annotation rdmactl.io/max-cq=011 asks cq=11, above the node's ceiling cq=10"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state d1 creating $$ '{"rdmactl.io/max-qp":"0x10"}')"
	[[ $stderr == *"annotation rdmactl.io/max-qp: invalid value '0x10' (numbers are decimal, not hexadecimal"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" --limit qp=010 <<<"$(state d1 creating $$ '{}')"
	[[ $stderr == *"--limit qp=010 asks qp=10, above the node's ceiling qp=9"* ]]
	[ ! -e "$RDMACTL_OCI_STATE_DIR/d1" ]
	[ ! -e "$RDMACTL_LEDGER" ]
}

@test "oci-hook: rdmactl.io/max-mr_bytes is rdmactl.io/max-mr-bytes, in annotations, --limit and the policy (issue 51)" {
	local p=$BATS_TEST_TMPDIR/containers.conf
	printf 'ceiling mr-bytes=1G\n' >"$p"
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state u1 creating $$ '{"rdmactl.io/max-mr_bytes":"2G"}')"
	[[ $stderr == *"annotation rdmactl.io/max-mr_bytes=2G asks mr_bytes=2147483648, above the node's ceiling mr_bytes=1073741824"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state u1 creating $$ '{"rdmactl.io/max-mr-bytes":"2G"}')"
	[[ $stderr == *"annotation rdmactl.io/max-mr-bytes=2G asks mr_bytes=2147483648, above the node's ceiling"* ]]
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" --limit mr-bytes=2G <<<"$(state u1 creating $$ '{}')"
	[[ $stderr == *"--limit mr-bytes=2G asks mr_bytes=2147483648, above the node's ceiling"* ]]
	[ ! -e "$RDMACTL_OCI_STATE_DIR/u1" ]
}

@test "oci-hook --help names the hooks.d file make install writes; its man page keeps the JSON args' quotes (issue 51)" {
	run -0 "$RDMACTL" oci-hook --help
	assert_output --partial "/usr/share/containers/oci/hooks.d/rdmactl.json"
	refute_output --partial "/usr/local/share/containers"
	run -0 sh -c 'LC_ALL=C MANWIDTH=2000 man -l "$1" | tr -s " "' sh "$TOP/man/rdmactl-oci-hook.8"
	assert_output --partial '["rdmactl", "oci-hook", "createRuntime"] under createRuntime and ["rdmactl", "oci-hook", "poststop"]'
}

@test "oci-hook: a node policy that cannot be read stops every container (fails closed); none at the default path is no policy" {
	local p=$BATS_TEST_TMPDIR/containers.conf
	printf 'default qp=3\nbudget 2x qp=1\n' >"$p"
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" <<<"$(state c6 creating $$ '{}')"
	[[ $stderr == *"cannot read the node policy: $p: line 2: budget name '2x'"*"the container does not start"* ]]
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/missing run -1 --separate-stderr "$RDMACTL" oci-hook \
		<<<"$(state c6 creating $$ '{}')"
	[[ $stderr == *"cannot read the node policy: $BATS_TEST_TMPDIR/missing: No such file or directory"* ]]
	# poststop needs no policy: it takes off what the record says
	run -0 "$RDMACTL" oci-hook --policy "$BATS_TEST_TMPDIR/missing" poststop <<<"$(state c6 stopped '' '{}')"
	[ ! -e "$RDMACTL_OCI_STATE_DIR" ]
	[ ! -e "$RDMACTL_LEDGER" ]
}

# The limit these tests ask is wr: the ledger's alone (the kernel does not count it), so the hook applies it on a
# host without kernel quotas too; a real container's is in tests/lab/oci.bats.
@test "oci-hook: a container it limits names its Kubernetes pod in \$RDMACTL_PODS_DIR/UID; the pod's last container's poststop removes it (issue 52)" {
	need_cgroups
	local u=0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11 pods=$RDMACTL_PODS_DIR
	# a container left alone names nothing
	in_pod $u c0
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c0 creating $P "{$(cri $u team-a web-0)}")"
	[ ! -e "$pods" ]
	in_pod $u c1
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c1 creating $P "{\"rdmactl.io/max-wr\":\"64\",$(cri $u team-a web-0)}")"
	[ -z "$stderr" ]
	run -0 cat "$pods/$u"
	assert_output "team-a/web-0"
	[ "$(stat -c %a "$pods/$u")" = 644 ]
	[ "$(ls -A "$pods")" = "$u" ]
	# the pod's second container, under CRI-O's keys; a third without them (its cgroup's path names the pod)
	in_pod $u c2
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c2 creating $P \
		"{\"io.kubernetes.pod.name\":\"web-0\",\"io.kubernetes.pod.namespace\":\"team-a\",\"io.kubernetes.pod.uid\":\"$u\",\"rdmactl.io/max-wr\":\"32\"}")"
	in_pod $u c3
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c3 creating $P '{"rdmactl.io/max-wr":"16"}')"
	run -0 cat "$pods/$u"
	assert_output "team-a/web-0"
	# leaving one by one: the name stays while a container of the pod has limits
	run -0 --separate-stderr "$RDMACTL" oci-hook poststop <<<"$(state c1 stopped '' '{}')"
	[ -e "$pods/$u" ]
	run -0 --separate-stderr "$RDMACTL" oci-hook poststop <<<"$(state c2 stopped '' '{}')"
	[ -e "$pods/$u" ]
	run -0 --separate-stderr "$RDMACTL" oci-hook poststop <<<"$(state c3 stopped '' '{}')"
	[ -z "$stderr" ]
	[ ! -e "$pods/$u" ]
	[ -z "$(ls -A "$RDMACTL_OCI_STATE_DIR")" ]
	# the left-alone container's poststop has nothing to do
	run -0 --separate-stderr "$RDMACTL" oci-hook poststop <<<"$(state c0 stopped '' '{}')"
	[ -z "$(ls -A "$pods")" ]
}

@test "oci-hook: a pod's identity Kubernetes would not give is said and not written; one too long or two that disagree are said, and the container starts (issue 52)" {
	need_cgroups
	local u=0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11 pods=$RDMACTL_PODS_DIR long
	in_pod $u c1
	# a UID that would leave the directory, a namespace or name Kubernetes refuses, a pod named in part
	for a in "$(cri ../../../../../tmp/x team-a web-0)" "$(cri $u Team-A web-0)" "$(cri $u team-a web_0)" \
		"$(cri $u team-a '')" "\"io.kubernetes.pod.uid\":\"$u\""; do
		run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c1 creating $P "{\"rdmactl.io/max-wr\":\"64\",$a}")"
		[[ $stderr == *"container c1: warning: its pod ("*") is not named as Kubernetes names pods: the exporter and quota show will not name it"* ]] ||
			{ echo "$a: $stderr" >&2; return 1; }
		[ ! -e "$pods" ] && [ ! -e /tmp/x ]
		run -0 "$RDMACTL" oci-hook poststop <<<"$(state c1 stopped '' '{}')"
	done
	# one too long, or the two runtimes' keys disagreeing: the pod is not named (a warning), the container starts
	# with its limits
	long=$(printf 'a%.0s' {1..64})
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c1 creating $P "{\"rdmactl.io/max-wr\":\"64\",$(cri $u "$long" web-0)}")"
	[[ $stderr == *"container c1: warning: its pod is not named: annotation io.kubernetes.cri.sandbox-namespace is too long"* ]] ||
		{ echo "$stderr" >&2; false; }
	[ ! -e "$pods" ]
	[ -e "$RDMACTL_OCI_STATE_DIR/c1" ]
	run -0 "$RDMACTL" oci-hook poststop <<<"$(state c1 stopped '' '{}')"
	run -0 --separate-stderr "$RDMACTL" oci-hook <<<"$(state c1 creating $P \
		"{\"rdmactl.io/max-wr\":\"64\",$(cri $u team-a web-0),\"io.kubernetes.pod.name\":\"web-1\"}")"
	[[ $stderr == *"its pod is not named: annotation io.kubernetes.pod.name=web-1 disagrees with io.kubernetes.cri.sandbox-name"* ]] ||
		{ echo "$stderr" >&2; false; }
	[ ! -e "$pods" ]
	run -0 "$RDMACTL" oci-hook poststop <<<"$(state c1 stopped '' '{}')"
	[ ! -e "$RDMACTL_OCI_STATE_DIR/c1" ]
}
