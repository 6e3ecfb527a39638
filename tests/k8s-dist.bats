#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The Kubernetes and containerd files of dist/ (doc/containers.md). There is no cluster here: the files are
# parsed and checked against rdmactl, not applied. Every YAML, JSON and TOML file under dist/ must parse;
# the objects must be whole; the node policy, the DaemonSet, the base runtime spec and the admission policy
# must say what the guide says they do.

load helper

K8S=$TOP/dist/kubernetes
CTRD=$TOP/dist/containerd

# The hook runs here against a state it is given: never the host's ledger or records, and never a pid that
# exists (2147483646 is above any pid_max), so that a check that goes wrong cannot limit a real cgroup.
setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	export RDMACTL_OCI_STATE_DIR=$BATS_TEST_TMPDIR/oci
}

# The files under dist/ whose names end in one of the given extensions, sorted; fails when there are none.
dist_files() {
	local e expr=()
	for e in "$@"; do
		expr+=(${expr[0]:+-o} -name "*.$e")
	done
	local out
	out=$(find "$TOP/dist" -type f \( "${expr[@]}" \) | sort)
	[ -n "$out" ] || { echo "no .$* file under dist/" >&2; return 1; }
	printf '%s\n' "$out"
}

# Parsers, one file each: exit 1 (and say why) when the file does not parse.
yaml_parse() {
	python3 -c 'import sys, yaml
with open(sys.argv[1]) as f:
    list(yaml.safe_load_all(f))' "$1"
}
json_parse() {
	jq empty "$1" || return 1
}
toml_parse() {
	python3 -c 'import sys, tomllib
with open(sys.argv[1], "rb") as f:
    tomllib.load(f)' "$1"
}

# Every file given must parse with the parser; lists each file, and how many there were.
parse_all() { # parser file...
	local p=$1 f n=0
	shift
	for f in "$@"; do
		"$p" "$f" || { echo "does not parse: ${f#"$TOP"/}" >&2; return 1; }
		echo "parses: ${f#"$TOP"/}"
		n=$((n + 1))
	done
	echo "$n files"
}

# The Kubernetes objects of a YAML file as a JSON array (documents that are empty are left out).
objects() {
	python3 -c 'import sys, yaml, json
with open(sys.argv[1]) as f:
    print(json.dumps([d for d in yaml.safe_load_all(f) if d is not None]))' "$1"
}

# The objects of a YAML file that lack a string apiVersion, kind or metadata.name, one a line.
incomplete_objects() {
	objects "$1" | jq -c '.[] | select((.apiVersion | type) != "string" or (.kind | type) != "string"
		or (.metadata.name | type) != "string" or .metadata.name == "")'
}

# The keys of a TOML file as JSON.
toml_json() {
	python3 -c 'import sys, tomllib, json
with open(sys.argv[1], "rb") as f:
    print(json.dumps(tomllib.load(f)))' "$1"
}

# The node policy of the ConfigMap, written to $BATS_TEST_TMPDIR/containers.conf.
policy_from_configmap() {
	local p=$BATS_TEST_TMPDIR/containers.conf
	objects "$K8S/rdmactl-node.yaml" |
		jq -er '.[] | select(.kind == "ConfigMap") | .data["containers.conf"]' >"$p" || return 1
	[ -s "$p" ]
}

# The DaemonSet of rdmactl-node.yaml as JSON.
daemonset() {
	objects "$K8S/rdmactl-node.yaml" | jq -ec '[.[] | select(.kind == "DaemonSet")] | if length == 1 then .[0] else error("not one DaemonSet") end'
}

@test "yaml: every .yaml and .yml under dist/ parses (yaml.safe_load_all); a broken copy does not" {
	run -0 dist_files yaml yml
	local files=("${lines[@]}")
	run -0 parse_all yaml_parse "${files[@]}"
	printf '# %s\n' "${lines[@]}" >&3
	assert_output --partial "parses: dist/kubernetes/rdmactl-node.yaml"
	assert_output --partial "parses: dist/kubernetes/rdmactl-admission-policy.yaml"
	assert_output --partial "parses: dist/kubernetes/rdmactl-pod-example.yaml"
	# the parser can fail: an unclosed flow sequence
	local bad=$BATS_TEST_TMPDIR/bad.yaml
	cp "$K8S/rdmactl-node.yaml" "$bad"
	printf 'spec:\n  tolerations: [{operator: Exists}\n' >>"$bad"
	run -1 yaml_parse "$bad"
	run -1 parse_all yaml_parse "${files[0]}" "$bad"
	assert_output --partial "does not parse: ${bad#"$TOP"/}"
}

@test "json: every .json under dist/ parses (jq); a broken copy does not" {
	run -0 dist_files json
	local files=("${lines[@]}")
	run -0 parse_all json_parse "${files[@]}"
	printf '# %s\n' "${lines[@]}" >&3
	assert_output --partial "parses: dist/containerd/base-runtime-spec.json"
	local bad=$BATS_TEST_TMPDIR/bad.json
	head -c -2 "$CTRD/base-runtime-spec.json" >"$bad"
	run -1 --separate-stderr json_parse "$bad"
	[[ $stderr == *"Unfinished JSON term"* ]] || { echo "$stderr"; return 1; }
	run -1 parse_all json_parse "$bad"
}

@test "toml: every .toml under dist/ parses (tomllib); a broken copy does not" {
	run -0 dist_files toml
	local files=("${lines[@]}")
	run -0 parse_all toml_parse "${files[@]}"
	printf '# %s\n' "${lines[@]}" >&3
	assert_output --partial "parses: dist/containerd/config-1.7-cdi.toml"
	assert_output --partial "parses: dist/containerd/config-1.6-hooks.toml"
	local bad=$BATS_TEST_TMPDIR/bad.toml
	cp "$CTRD/config-1.7-cdi.toml" "$bad"
	# a table header that is not closed
	printf '[plugins."io.containerd.grpc.v1.cri"\n' >>"$bad"
	run -1 toml_parse "$bad"
	# a key twice is not TOML either
	cp "$CTRD/config-1.7-cdi.toml" "$bad"
	sed -i 's/^  enable_cdi = true$/&\n  enable_cdi = false/' "$bad"
	grep -c 'enable_cdi = ' "$bad" | grep -qx 2
	run -1 toml_parse "$bad"
}

@test "kubernetes: every object of dist/kubernetes has apiVersion, kind and metadata.name" {
	local f n kinds=
	for f in "$K8S"/*.yaml; do
		run -0 objects "$f"
		local objs=$output
		n=$(jq length <<<"$objs")
		[ "$n" -ge 1 ] || { echo "no object in $f"; return 1; }
		run -0 incomplete_objects "$f"
		[ -z "$output" ] || { echo "${f#"$TOP"/}: without apiVersion, kind or metadata.name: $output"; return 1; }
		kinds+="${f##*/}: $(jq -r '[.[].kind] | join(" ")' <<<"$objs")"$'\n'
	done
	sed 's/^/# /' <<<"${kinds%$'\n'}" >&3
	[[ $kinds == *"rdmactl-node.yaml: Namespace ConfigMap DaemonSet"$'\n'* ]]
	[[ $kinds == *"rdmactl-admission-policy.yaml: ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding"$'\n'* ]]
	[[ $kinds == *"rdmactl-pod-example.yaml: Pod Pod"$'\n'* ]]
	# and the check can fail: an object without a name, one without a kind
	local bad=$BATS_TEST_TMPDIR/bad.yaml
	cp "$K8S/rdmactl-pod-example.yaml" "$bad"
	printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  labels: {a: b}\n---\napiVersion: v1\nmetadata: {name: x}\n' >>"$bad"
	run -0 incomplete_objects "$bad"
	[ "${#lines[@]}" -eq 2 ]
}

@test "node: the ConfigMap's containers.conf is accepted by rdmactl and has a ceiling" {
	policy_from_configmap
	local p=$BATS_TEST_TMPDIR/containers.conf
	# a request above the ceiling fails the hook: the file parsed, and it has a ceiling
	run -1 --separate-stderr "$RDMACTL" oci-hook --policy "$p" --state-dir "$BATS_TEST_TMPDIR/oci" createRuntime \
		<<<'{"ociVersion":"1.0.2","id":"c1","status":"creating","pid":2147483646,"bundle":"/b","annotations":{"rdmactl.io/max-qp":"100000"}}'
	[[ $stderr == *"above the node's ceiling"* ]] || { echo "$stderr"; return 1; }
	[ ! -e "$BATS_TEST_TMPDIR/oci/c1" ]
	# its budgets become CDI devices, as the DaemonSet's init container makes them
	run -0 --separate-stderr "$RDMACTL" cdi generate --policy "$p" --output "$BATS_TEST_TMPDIR/cdi" \
		--exe /usr/local/bin/rdmactl
	run -0 jq -r '.devices[].name' "$BATS_TEST_TMPDIR/cdi/rdmactl.io-budget.json"
	assert_line small
	assert_line train
	# the same check fails on a policy without a ceiling
	grep -v '^ceiling' "$p" >"$BATS_TEST_TMPDIR/noceiling.conf"
	run --separate-stderr "$RDMACTL" oci-hook --policy "$BATS_TEST_TMPDIR/noceiling.conf" \
		--state-dir "$BATS_TEST_TMPDIR/oci" createRuntime \
		<<<'{"ociVersion":"1.0.2","id":"c2","status":"creating","pid":2147483646,"bundle":"/b","annotations":{"rdmactl.io/max-qp":"100000"}}'
	[[ $stderr != *"above the node's ceiling"* && $stderr == *"cannot read the cgroup of the container's process"* ]]
}

@test "node: the DaemonSet mounts the host's /etc/cdi and /etc/rdmactl where rdmactl looks, and runs rdmactl cdi generate" {
	run -0 daemonset
	local ds=$output
	# host path -> volume name
	vol() { jq -er --arg p "$1" '[.spec.template.spec.volumes[] | select(.hostPath.path == $p) | .name] | first' <<<"$ds"; }
	local init='.spec.template.spec.initContainers[0]'
	local p name
	# the hooks read /etc/rdmactl/containers.conf and the runtime /etc/cdi on the host: the init container
	# must see the host's directories at the same paths
	for p in /etc/cdi /etc/rdmactl /dev/infiniband; do
		run -0 vol "$p"
		name=$output
		run -0 jq -r --arg n "$name" "$init"'.volumeMounts[] | select(.name == $n) | .mountPath' <<<"$ds"
		assert_output "$p"
	done
	run -0 jq -r "$init"'.securityContext.privileged' <<<"$ds"
	assert_output true
	run -0 jq -r "$init"'.command | join(" ")' <<<"$ds"
	local script=$output
	[[ $script == *"rdmactl cdi generate --exe "* ]]
	# the policy is checked before it is installed
	[[ ${script%%containers.conf.new*} == *"rdmactl cdi generate --policy /config/containers.conf"* ]]
	# the hooks run the host's rdmactl: the one the DaemonSet requires on the host
	local exe
	exe=$(sed -n 's/.*rdmactl cdi generate --exe \([^ ]*\).*/\1/p' <<<"$script" | head -1)
	[ "$exe" = /usr/local/bin/rdmactl ]
	run -0 jq -r --arg p "$exe" '.spec.template.spec.volumes[] | select(.hostPath.path == $p) | .hostPath.type' <<<"$ds"
	assert_output File
	# the ConfigMap is what the init container installs
	run -0 jq -r '.spec.template.spec.volumes[] | select(.name == "policy") | .configMap.name' <<<"$ds"
	assert_output rdmactl-node-policy
	# the exporter serves on :9476 on the node's network, with the host's processes and ledger
	run -0 jq -r '.spec.template.spec.containers[] | select(.name == "exporter") | .command | join(" ")' <<<"$ds"
	assert_output --regexp '^rdmactl export --listen :9476 --ledger /host/dev/shm/rdmactl.ledger$'
	run -0 jq -r '.spec.template.spec | "\(.hostNetwork) \(.hostPID)"' <<<"$ds"
	assert_output "true true"
	run -0 vol /dev/shm
	run -0 vol /sys/fs/bpf
	# the pods' names the OCI hook writes, read-only where the exporter reads them (issue 52)
	run -0 vol /run/rdmactl/pods
	name=$output
	run -0 jq -r --arg n "$name" '.spec.template.spec.containers[] | select(.name == "exporter") | .volumeMounts[] |
		select(.name == $n) | "\(.mountPath) \(.readOnly)"' <<<"$ds"
	assert_output "/run/rdmactl/pods true"
	# (the exporter's default directory, without $RDMACTL_PODS_DIR)
	run -0 bash -c "strings '$RDMACTL' | grep -x /run/rdmactl/pods"
	# the exporter's options are rdmactl's
	run -0 "$RDMACTL" export --help
	assert_output --partial -- --listen
	assert_output --partial -- --ledger
	# every image is the documented placeholder
	run -0 jq -r '.spec.template.spec | (.initContainers + .containers)[].image' <<<"$ds"
	[ "$(sort -u <<<"$output")" = rdmactl:0.1.0 ]
}

@test "node: the init container runs rdmactl doctor on the new policy before it installs it, with what doctor reads" {
	run -0 daemonset
	local ds=$output init='.spec.template.spec.initContainers[0]'
	run -0 jq -r "$init"'.command | join(" ")' <<<"$ds"
	local script=$output before
	before=${script%%containers.conf.new*}
	# doctor, on the ConfigMap's policy, before the policy is installed (sh -e: its exit 1 stops the rest)
	[[ $before == *"rdmactl doctor --policy /config/containers.conf --exe /usr/local/bin/rdmactl"* ]]
	[[ $(jq -r "$init"'.command[1]' <<<"$ds") == -ec ]]
	# the options it is given are doctor's
	run -0 "$RDMACTL" doctor --help
	assert_output --partial -- --policy
	assert_output --partial -- --exe
	assert_output --partial -- --ledger
	# the host's bpffs (the pinned programs) and /dev/shm (the ledger) are mounted where it looks
	run -0 jq -r "$init"'.volumeMounts[] | select(.name == "bpffs") | "\(.mountPath) \(.mountPropagation)"' <<<"$ds"
	assert_output "/sys/fs/bpf HostToContainer"
	run -0 jq -r "$init"'.volumeMounts[] | select(.name == "dev-shm") | .mountPath' <<<"$ds"
	assert_output /host/dev/shm
	[[ $before == *"--ledger /host/dev/shm/rdmactl.ledger"* ]]
	# on this host, with the ConfigMap's policy: a verdict, not a usage error
	policy_from_configmap
	run "$RDMACTL" doctor --policy "$BATS_TEST_TMPDIR/containers.conf" --cdi-dir "$BATS_TEST_TMPDIR/cdi"
	[ "$status" -le 1 ]
	assert_line --regexp '^limit qp +(ok|fail) +the default \(every container'
}

@test "containerd: base-runtime-spec.json runs rdmactl oci-hook at createRuntime and poststop, in a whole spec" {
	local s=$CTRD/base-runtime-spec.json
	run -0 jq -c '.hooks.createRuntime' "$s"
	assert_output '[{"path":"/usr/local/bin/rdmactl","args":["rdmactl","oci-hook","createRuntime"]}]'
	run -0 jq -c '.hooks.poststop' "$s"
	assert_output '[{"path":"/usr/local/bin/rdmactl","args":["rdmactl","oci-hook","poststop"]}]'
	run -0 jq -r '.hooks | keys | join(" ")' "$s"
	assert_output "createRuntime poststop"
	# a base spec replaces containerd's default: it must have the mounts and namespaces of one
	run -0 jq -r '[.mounts[].destination] | join(" ")' "$s"
	assert_output --partial "/proc /dev /dev/pts /dev/shm"
	run -0 jq -r '[.linux.namespaces[].type] | join(" ")' "$s"
	assert_output "pid ipc uts mount network"
	# the hooks' arguments are ones rdmactl takes: with a policy that has a ceiling, the createRuntime
	# hook refuses a request above it; the poststop hook of a container it never saw does nothing
	printf 'ceiling qp=4\n' >"$BATS_TEST_TMPDIR/p.conf"
	local args
	args=$(jq -r '.hooks.createRuntime[0].args[1:] | join(" ")' "$s")
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/p.conf run -1 --separate-stderr "$RDMACTL" $args \
		<<<'{"ociVersion":"1.0.2","id":"c1","status":"creating","pid":2147483646,"bundle":"/b","annotations":{"rdmactl.io/max-qp":"5"}}'
	[[ $stderr == *"above the node's ceiling qp=4"* ]] || { echo "$stderr"; return 1; }
	args=$(jq -r '.hooks.poststop[0].args[1:] | join(" ")' "$s")
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/p.conf run -0 "$RDMACTL" $args \
		<<<'{"ociVersion":"1.0.2","id":"c9","status":"stopped","bundle":"/b"}'
}

@test "containerd: the 1.6 config names the base spec and passes rdmactl.io/* pod annotations; the 1.7 config turns CDI on" {
	run -0 toml_json "$CTRD/config-1.6-hooks.toml"
	local c=$output rt='.plugins["io.containerd.grpc.v1.cri"].containerd.runtimes.runc'
	run -0 jq -r "$rt.base_runtime_spec" <<<"$c"
	assert_output /etc/containerd/rdmactl-base-runtime-spec.json
	run -0 jq -c "$rt.pod_annotations" <<<"$c"
	assert_output '["rdmactl.io/*"]'
	run -0 jq -r "$rt.runtime_type" <<<"$c"
	assert_output io.containerd.runc.v2
	# the pattern matches the annotations the hook reads (Go's path.Match: * stops at /)
	[[ rdmactl.io/max-qp == rdmactl.io/* ]]
	# the guide's jq line puts the shipped hooks on a spec
	run -0 jq -c --slurpfile r "$CTRD/base-runtime-spec.json" '.hooks = $r[0].hooks | .hooks | keys' <<<'{"ociVersion":"1.0.2"}'
	assert_output '["createRuntime","poststop"]'
	grep -qF "jq --slurpfile r dist/containerd/base-runtime-spec.json '.hooks = \$r[0].hooks'" "$TOP/doc/containers.md"
	run -0 toml_json "$CTRD/config-1.7-cdi.toml"
	c=$output
	run -0 jq -r '.version, .plugins["io.containerd.grpc.v1.cri"].enable_cdi' <<<"$c"
	assert_output $'2\ntrue'
	run -0 jq -r '.plugins["io.containerd.grpc.v1.cri"].cdi_spec_dirs[]' <<<"$c"
	assert_line /etc/cdi
}

@test "admission: the policy checks rdmactl.io/ annotations against request.userInfo.groups, and its binding denies" {
	run -0 objects "$K8S/rdmactl-admission-policy.yaml"
	local o=$output
	run -0 jq -r '[.[] | "\(.apiVersion) \(.kind)"] | join(",")' <<<"$o"
	assert_output "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy,admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding"
	local vap='.[] | select(.kind == "ValidatingAdmissionPolicy")'
	# the CEL: variables and validations together
	run -0 jq -r "$vap"' | [.spec.variables[].expression, .spec.validations[].expression] | join("\n")' <<<"$o"
	assert_output --partial "startsWith('rdmactl.io/')"
	assert_output --partial ".metadata.annotations"
	assert_output --partial "request.userInfo.groups"
	assert_output --partial "oldObject"
	# every variable a validation or another variable uses is defined
	local used
	for used in $(grep -o 'variables\.[a-zA-Z]*' <<<"$output" | sort -u); do
		jq -e --arg n "${used#variables.}" "$vap"' | .spec.variables | any(.name == $n)' <<<"$o" >/dev/null ||
			{ echo "undefined: $used"; return 1; }
	done
	run -0 jq -r "$vap"' | .spec.failurePolicy' <<<"$o"
	assert_output Fail
	# pods and the workloads that template them, on CREATE and UPDATE
	run -0 jq -r "$vap"' | .spec.matchConstraints.resourceRules[] | .resources[] as $r | "\($r) \(.operations | join(","))"' <<<"$o"
	for r in pods deployments replicasets statefulsets daemonsets jobs cronjobs; do
		assert_line "$r CREATE,UPDATE"
	done
	# the binding names the policy and denies
	run -0 jq -r '(.[] | select(.kind == "ValidatingAdmissionPolicy") | .metadata.name) as $p |
		.[] | select(.kind == "ValidatingAdmissionPolicyBinding") | "\(.spec.policyName == $p) \(.spec.validationActions | join(","))"' <<<"$o"
	assert_output "true Deny"
}

@test "admission: the claim ceiling's ConfigMap is the node policy's ceiling (G is Gi), its policy checks claims and templates, its binding denies" {
	policy_from_configmap
	local want k v
	# the node ConfigMap's ceiling line, as Kubernetes quantities: rdmactl's K, M, G, T are binary
	want=$(sed -n 's/^ceiling //p' "$BATS_TEST_TMPDIR/containers.conf" | tr ' ' '\n' |
		sed -E 's/=([0-9]+)([KMGT])$/=\1\2i/' | sort)
	[ -n "$want" ]
	run -0 objects "$K8S/rdmactl-claim-ceiling.yaml"
	local o=$output
	run -0 jq -r '.[] | select(.kind == "ConfigMap") | .data | to_entries[] | "\(.key)=\(.value)"' <<<"$o"
	assert_equal "$(sort <<<"$output")" "$want"
	run -0 jq -r '.[] | select(.kind == "ValidatingAdmissionPolicy") | .spec.matchConstraints.resourceRules[] |
		"\(.apiGroups | join(",")) \(.resources | join(",")) \(.operations | join(","))"' <<<"$o"
	assert_output "resource.k8s.io resourceclaims,resourceclaimtemplates CREATE,UPDATE"
	run -0 jq -r '(.[] | select(.kind == "ConfigMap") | .metadata | "\(.namespace)/\(.name)") as $cm |
		.[] | select(.kind == "ValidatingAdmissionPolicyBinding") |
		"\(.spec.policyName) \(.spec.validationActions | join(",")) \(.spec.paramRef.namespace + "/" + .spec.paramRef.name == $cm)"' <<<"$o"
	assert_output "rdmactl-claim-ceiling Deny true"
	# every variable used is defined
	local vap='.[] | select(.kind == "ValidatingAdmissionPolicy")' used
	run -0 jq -r "$vap"' | [.spec.variables[].expression, .spec.validations[].expression, .spec.validations[].messageExpression] | join("\n")' <<<"$o"
	for used in $(grep -o 'variables\.[a-zA-Z]*' <<<"$output" | sort -u); do
		jq -e --arg n "${used#variables.}" "$vap"' | .spec.variables | any(.name == $n)' <<<"$o" >/dev/null ||
			{ echo "undefined: $used"; return 1; }
	done
}

@test "pods: the examples ask for a budget the ConfigMap's policy has, by annotation and by device resource" {
	policy_from_configmap
	run -0 objects "$K8S/rdmactl-pod-example.yaml"
	local o=$output b
	run -0 jq -r '.[] | .metadata.annotations["rdmactl.io/budget"] // empty' <<<"$o"
	b=$output
	[ -n "$b" ]
	grep -q "^budget $b " "$BATS_TEST_TMPDIR/containers.conf"
	run -0 jq -r '.[] | .spec.containers[].resources.limits | keys[] | select(startswith("rdmactl.io/budget-"))' <<<"$o"
	assert_output "rdmactl.io/budget-$b"
	# the annotated pod's rdmactl.io/ annotations pass every check of the hook under that policy: it gets as
	# far as looking for the container's cgroup (of a pid that cannot exist: nothing is applied)
	local ann
	ann=$(jq -c '[.[] | .metadata.annotations // {} | with_entries(select(.key | startswith("rdmactl.io/")))
		| select(length > 0)] | if length == 1 then .[0] else error("not one annotated pod") end' <<<"$o")
	[ "$(jq length <<<"$ann")" -ge 2 ]
	run -1 --separate-stderr "$RDMACTL" oci-hook \
		--policy "$BATS_TEST_TMPDIR/containers.conf" --state-dir "$BATS_TEST_TMPDIR/oci" createRuntime \
		<<<"$(jq -nc --argjson a "$ann" '{ociVersion: "1.0.2", id: "c1", status: "creating", pid: 2147483646,
			bundle: "/b", annotations: $a}')"
	[[ $stderr == *"cannot read the cgroup of the container's process 2147483646"* ]] || { echo "$stderr"; return 1; }
	[ ! -e "$BATS_TEST_TMPDIR/ledger" ]
	# and a budget the policy lacks fails there
	run -1 --separate-stderr "$RDMACTL" oci-hook \
		--policy "$BATS_TEST_TMPDIR/containers.conf" --state-dir "$BATS_TEST_TMPDIR/oci" createRuntime \
		<<<'{"ociVersion":"1.0.2","id":"c1","status":"creating","pid":2147483646,"bundle":"/b","annotations":{"rdmactl.io/budget":"nope"}}'
	[[ $stderr == *"no budget 'nope'"* ]]
}
