#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl-dra's files (dist/kubernetes/rdmactl-dra*.yaml, the CDI spec it writes) checked against rdmactl and
# the driver's own flags. There is no cluster here: the objects are parsed, not applied (tests/k8s has the
# cluster). The driver's Go tests are make check-dra.

load helper

K8S=$TOP/dist/kubernetes
DRA=$BUILD/rdmactl-dra

setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	export RDMACTL_OCI_STATE_DIR=$BATS_TEST_TMPDIR/oci
}

objects() {
	python3 -c 'import sys, yaml, json
with open(sys.argv[1]) as f:
    print(json.dumps([d for d in yaml.safe_load_all(f) if d is not None]))' "$1"
}

# The node policy of rdmactl-node.yaml's ConfigMap, written to $BATS_TEST_TMPDIR/containers.conf.
node_policy() {
	objects "$K8S/rdmactl-node.yaml" |
		jq -er '.[] | select(.kind == "ConfigMap") | .data["containers.conf"]' >"$BATS_TEST_TMPDIR/containers.conf"
}

@test "dra: the DeviceClass selects the driver the DaemonSet runs; RBAC names only what the helper uses" {
	run -0 objects "$K8S/rdmactl-dra.yaml"
	local o=$output
	run -0 jq -r '[.[].kind] | join(" ")' <<<"$o"
	assert_output "Namespace DeviceClass ServiceAccount ClusterRole ClusterRoleBinding ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding DaemonSet"
	run -0 jq -r '.[] | select(.kind == "DeviceClass") | "\(.apiVersion) \(.metadata.name) \(.spec.selectors[0].cel.expression)"' <<<"$o"
	assert_output 'resource.k8s.io/v1 rdmactl.io device.driver == "rdmactl.io"'
	# the DaemonSet does not rename the driver (--driver-name defaults to rdmactl.io)
	run -0 jq -r '.[] | select(.kind == "DaemonSet") | .spec.template.spec.containers[0].args[]' <<<"$o"
	refute_output --partial --driver-name
	# RBAC: ResourceSlices, reading claims and nodes; no wildcard
	run -0 jq -r '.[] | select(.kind == "ClusterRole") | .rules[] | "\(.apiGroups | join(",")) \(.resources | join(",")) \(.verbs | join(","))"' <<<"$o"
	assert_output "$(printf '%s\n' 'resource.k8s.io resourceslices get,list,watch,create,update,delete' \
		'resource.k8s.io resourceclaims get' ' nodes get')"
	run -0 jq -r '.[] | select(.kind == "ClusterRoleBinding") | "\(.roleRef.name) \(.subjects[0].namespace)/\(.subjects[0].name)"' <<<"$o"
	assert_output "rdmactl-dra rdmactl-system/rdmactl-dra"
	# the admission policy holds the driver's service account to its node's slices, and its binding denies
	run -0 jq -r '.[] | select(.kind == "ValidatingAdmissionPolicy") | .spec.matchConditions[0].expression' <<<"$o"
	assert_output 'request.userInfo.username == "system:serviceaccount:rdmactl-system:rdmactl-dra"'
	run -0 jq -r '.[] | select(.kind == "ValidatingAdmissionPolicy") | [.spec.variables[].expression, .spec.validations[].expression] | join("\n")' <<<"$o"
	assert_output --partial "authentication.kubernetes.io/node-name"
	assert_output --partial "spec.nodeName"
	assert_output --partial 'variables.slice.spec.driver == "rdmactl.io"'
	run -0 jq -r '(.[] | select(.kind == "ValidatingAdmissionPolicy") | .metadata.name) as $p | .[] |
		select(.kind == "ValidatingAdmissionPolicyBinding") | "\(.spec.policyName == $p) \(.spec.validationActions | join(","))"' <<<"$o"
	assert_output "true Deny"
}

@test "dra: the DaemonSet mounts every directory it names at the same path, and runs the host's rdmactl" {
	run -0 objects "$K8S/rdmactl-dra.yaml"
	local ds
	ds=$(jq -c '.[] | select(.kind == "DaemonSet")' <<<"$output")
	local c='.spec.template.spec.containers[0]'
	arg() { jq -r --arg f "--$1=" "$c"'.args[] | select(startswith($f)) | ltrimstr($f)' <<<"$ds"; }
	mounted_at() { # host path -> the container's mount path of it
		jq -r --arg p "$1" '(.spec.template.spec.volumes[] | select(.hostPath.path == $p) | .name) as $n |
			'"$c"'.volumeMounts[] | select(.name == $n) | .mountPath' <<<"$ds"
	}
	local f p
	for f in cdi-dir kubelet-registrar-dir kubelet-plugin-dir; do
		p=$(arg "$f")
		[ -n "$p" ] || { echo "no --$f"; return 1; }
		run -0 mounted_at "$p"
		assert_output "$p"
	done
	# the host's root at --host-root, where the rdmactl of rdmactl-node.yaml's nodes is
	run -0 mounted_at /
	assert_output "$(arg host-root)"
	[ "$(arg rdmactl)" = /usr/local/bin/rdmactl ]
	run -0 jq -r "$c"'.env[] | select(.name == "NODE_NAME") | .valueFrom.fieldRef.fieldPath' <<<"$ds"
	assert_output spec.nodeName
	run -0 jq -r "$c"'.securityContext.privileged' <<<"$ds"
	assert_output true
	# the driver knows every flag (when it was built: make dra)
	[ -x "$DRA" ] || skip "no $DRA (make dra)"
	run -0 "$DRA" --help
	local help=$output
	# Go's flag package lists each as "  -name TYPE" (and takes one dash or two)
	for f in $(jq -r "$c"'.args[] | sub("=.*"; "") | ltrimstr("-") | ltrimstr("-")' <<<"$ds"); do
		[[ $help == *"  -$f "* || $help == *"  -$f"$'\n'* ]] || { echo "rdmactl-dra has no flag -$f"; return 1; }
	done
}

@test "dra: the example claims ask for capacities the driver publishes, within the node policy's ceiling" {
	node_policy
	run -0 --separate-stderr "$RDMACTL" dev -j --policy "$BATS_TEST_TMPDIR/containers.conf"
	local ceiling
	ceiling=$(jq -c '.policy.ceiling' <<<"$output")
	[ "$ceiling" != null ]
	run -0 objects "$K8S/rdmactl-dra-example.yaml"
	local o=$output
	run -0 jq -r '[.[] | select(.kind == "ResourceClaimTemplate") | .spec.spec.devices.requests[].exactly.deviceClassName] | unique | join(" ")' <<<"$o"
	assert_output rdmactl.io
	local reqs
	reqs=$(jq -r '.[] | select(.kind == "ResourceClaimTemplate") | .metadata.name as $n |
		.spec.spec.devices.requests[].exactly.capacity.requests | to_entries[] | "\($n) \(.key) \(.value)"' <<<"$o")
	[ -n "$reqs" ]
	local name kind value n c
	while read -r name kind value; do
		[[ $kind =~ ^(qp|cq|mr|mr_bytes|pd|srq|ah|mw)$ ]] || { echo "$name: $kind is not a capacity of the driver"; return 1; }
		n=$(python3 -c 'import sys
v = sys.argv[1]
m = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
print(int(v[:-2]) * m[v[-2:]] if v[-2:] in m else int(v))' "$value")
		c=$(jq -r --arg k "$kind" '.[$k] // empty' <<<"$ceiling")
		[ -z "$c" ] || [ "$c" = unlimited ] || [ "$n" -le "$c" ] ||
			{ echo "$name: $kind=$value is above the ceiling $c: no device could be allocated"; return 1; }
		echo "# $name $kind=$value (ceiling ${c:-none})" >&3
	done <<<"$reqs"
	# the pod uses a template of the file
	run -0 jq -r '(.[] | select(.kind == "ResourceClaimTemplate") | .metadata.name) as $t | .[] | select(.kind == "Pod") |
		.spec.resourceClaims[] | select(.resourceClaimTemplateName == $t) | .name' <<<"$o"
	assert_output rdma
}

@test "dra: the hooks of a claim's CDI spec are arguments rdmactl oci-hook takes" {
	local spec=$TOP/dra/internal/cdi/testdata/claim.json
	# valid for the CDI schema and for podman 4.3's reader (cdiVersion 0.3.0: a device name starts with a letter)
	run -0 "$TOP/tests/cdi-validate" "$spec"
	run -0 jq -r '"\(.cdiVersion) \(.kind) \(.devices[0].name)"' "$spec"
	assert_output "0.3.0 rdmactl.io/claim rxe0-0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11"
	run -0 jq -r '.devices[0].containerEdits.deviceNodes[].path' "$spec"
	assert_output "$(printf '%s\n' /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm)"
	run -0 jq -r '[.devices[0].containerEdits.hooks[] | "\(.hookName) \(.path)"] | join(",")' "$spec"
	assert_output "createRuntime /usr/local/bin/rdmactl,poststop /usr/local/bin/rdmactl"
	node_policy
	local args
	# createRuntime: the budget parses and is within the ceiling; the hook gets as far as the container's
	# cgroup (a pid that cannot exist: nothing is applied)
	args=$(jq -r '.devices[0].containerEdits.hooks[0].args[1:] | join(" ")' "$spec")
	[[ $args == "oci-hook --limit cq=32,mr=64,mr_bytes=1073741824,qp=16 createRuntime" ]]
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/containers.conf run -1 --separate-stderr "$RDMACTL" $args \
		<<<'{"ociVersion":"1.0.2","id":"c1","status":"creating","pid":2147483646,"bundle":"/b"}'
	[[ $stderr == *"cannot read the cgroup of the container's process 2147483646"* ]] || { echo "$stderr"; return 1; }
	# a budget above the ceiling is refused by the same hook (the scheduler's validRange keeps claims below it)
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/containers.conf run -1 --separate-stderr "$RDMACTL" oci-hook \
		--limit qp=100000 createRuntime <<<'{"ociVersion":"1.0.2","id":"c1","status":"creating","pid":2147483646,"bundle":"/b"}'
	[[ $stderr == *"above the node's ceiling"* ]]
	# poststop of a container it never limited: nothing to do
	args=$(jq -r '.devices[0].containerEdits.hooks[1].args[1:] | join(" ")' "$spec")
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/containers.conf run -0 "$RDMACTL" $args \
		<<<'{"ociVersion":"1.0.2","id":"c9","status":"stopped","bundle":"/b"}'
	[ ! -e "$RDMACTL_LEDGER" ]
}

@test "dra: rdmactl-dra refuses an rdmactl of another minor version, and one without dev, before it talks to Kubernetes" {
	[ -x "$DRA" ] || skip "no $DRA (make dra)"
	local fake=$BATS_TEST_TMPDIR/rdmactl
	printf '#!/bin/sh\ncase "$1" in --version) echo "rdmactl 9.9.0";; dev) "%s" "$@" | sed "s/\\"version\\":\\"[^\\"]*\\"/\\"version\\":\\"9.9.0\\"/";; *) exec "%s" "$@";; esac\n' \
		"$RDMACTL" "$RDMACTL" >"$fake"
	chmod +x "$fake"
	run -1 "$DRA" --node-name n1 --rdmactl "$fake" --kubeconfig /nonexistent
	assert_output --partial "version skew"
	assert_output --partial "the node's rdmactl 9.9.0"
	# with --allow-version-skew it goes on, to the kubeconfig
	run -1 "$DRA" --node-name n1 --rdmactl "$fake" --allow-version-skew --kubeconfig /nonexistent
	assert_output --partial "kubeconfig"
	printf '#!/bin/sh\ncase "$1" in --version) echo "rdmactl 0.0.1";; *) echo "rdmactl: unknown command '"'"'$1'"'"'" >&2; exit 2;; esac\n' >"$fake"
	run -1 "$DRA" --node-name n1 --rdmactl "$fake" --kubeconfig /nonexistent
	assert_output --partial "has no 'dev' command"
	# the same version as this tree's rdmactl: on to the kubeconfig
	run -1 "$DRA" --node-name n1 --rdmactl "$RDMACTL" --kubeconfig /nonexistent
	assert_output --partial "kubeconfig"
	refute_output --partial "version skew"
}
