#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A real single-node Kubernetes in the lab (tests/k8s/cluster: etcd, kube-apiserver, controller-manager,
# scheduler, containerd 2.x + runc, kubelet, all of tests/k8s/build's pinned release): the node comes up, pods
# run to completion from the imported images, a pod gets rxe0 through rdmactl's CDI spec, and the scheduler
# allocates resource.k8s.io/v1 claims against consumable capacity.
# Needs tests/k8s/build's cache on the host and a guest of 4 GiB (make check-k8s):
#   tests/lab/run --mem 4096 -- tests/lab/check tests/k8s/k8s.bats

load ../helper

KQ=$BUILD/lab-progs/kqverbs

setup_file() {
	require_lab
	export K8S=$TOP/tests/k8s/cluster
	timeout 900 "$K8S" up 3>&- || return 1
	eval "$("$K8S" env)"
	export CDI=/var/run/cdi
	# the kubelet keeps device plugins at a fixed path, whatever its --root-dir (pluginapi.KubeletSocket)
	export PLUGIN_DIR=/var/lib/kubelet/device-plugins
}

teardown_file() {
	[ -z "${PLUGIN_PID:-}" ] || kill "$PLUGIN_PID" 2>/dev/null || true
	timeout 120 "$TOP/tests/k8s/cluster" down || true
	rm -rf "$CDI"
}

setup() {
	require_lab
}

teardown() {
	kc delete pod --all --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
	kc delete resourceclaim --all --wait=false >/dev/null 2>&1 || true
}

kc() { timeout 120 kubectl "$@"; }
kq() { timeout 30 kubectl "$@"; }

# A pod of the hostusr image (the host's /usr mounted over its empty /usr, the checkout at its own path)
# that runs CMD once; EXTRA is YAML put under the container (resources, ...).
pod_yaml() { # NAME CMD [EXTRA]
	cat <<-EOF
	apiVersion: v1
	kind: Pod
	metadata: {name: $1}
	spec:
	  restartPolicy: Never
	  terminationGracePeriodSeconds: 1
	  automountServiceAccountToken: false
	  containers:
	  - name: c
	    image: rdmactl.local/hostusr:1
	    imagePullPolicy: Never
	    command: ["/bin/sh", "-c", "$2"]
	    volumeMounts:
	    - {name: usr, mountPath: /usr, readOnly: true}
	    - {name: top, mountPath: "$TOP", readOnly: true}
	${3:+    $3}
	  volumes:
	  - {name: usr, hostPath: {path: /usr}}
	  - {name: top, hostPath: {path: "$TOP"}}
	EOF
}
# A ResourceClaim NAME with one request REQUEST of DEVICECLASS asking QP queue pairs of its capacity.
claim_yaml() { # NAME REQUEST DEVICECLASS QP
	cat <<-EOF
	apiVersion: resource.k8s.io/v1
	kind: ResourceClaim
	metadata: {name: $1}
	spec:
	  devices:
	    requests:
	    - name: $2
	      exactly:
	        deviceClassName: $3
	        capacity: {requests: {qp: "$4"}}
	EOF
}
pod_phase() { kq get pod "$1" -o jsonpath='{.status.phase}'; }
pod_ended() { case "$(pod_phase "$1")" in Succeeded | Failed) return 0 ;; esac; return 1; }
claim_allocated() { [ -n "$(kq get resourceclaim "$1" -o jsonpath='{.status.allocation}')" ]; }
unschedulable() {
	kq get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' | grep -q Unschedulable
}
allocatable() { [ "$(kq get node lab -o jsonpath="{.status.allocatable.${1//./\\.}}")" = "$2" ]; }

# Wait up to $2 seconds for pod $1 to end; fails (with its description) unless it Succeeded.
pod_succeeds() {
	wait_for "$2" pod_ended "$1" || true
	[ "$(pod_phase "$1")" = Succeeded ] || {
		kc describe pod "$1" >&2
		kc logs "$1" >&2 || true
		return 1
	}
}

@test "the node is Ready: kubelet v1.36.3 on containerd 2.x, DRA's resource.k8s.io/v1 served" {
	run -0 kc get node lab -o jsonpath='{.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}'
	assert_output --regexp '^v1\.36\.3 containerd://v?2\.'
	run -0 kc get node lab -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'
	assert_output True
	run -0 kc api-versions
	assert_line resource.k8s.io/v1
}

@test "a pod runs to completion from the imported image, without a registry" {
	pod_yaml hello 'echo hello from $(hostname); test ! -e /dev/infiniband/uverbs0 && echo no-uverbs' | kc apply -f -
	pod_succeeds hello 300
	run -0 kc logs hello
	assert_line 'hello from hello'
	# without an RDMA device asked for, the pod has none
	assert_line no-uverbs
}

@test "a pod asking lab.rdmactl.io/hca gets /dev/infiniband/uverbs0 through rdmactl's CDI spec (rdmactl.io/hca=rxe0) and reaches rxe0" {
	run -0 "$RDMACTL" cdi generate --output "$CDI"
	run -0 jq -r '.devices[].name' "$CDI/rdmactl.io-hca.json"
	assert_line rxe0
	# the lab's device plugin offers rxe0 as 8 shares and answers Allocate with the CDI id rdmactl.io/hca=rxe0
	"$K8S_BIN/lab-cdi-plugin" -dir "$PLUGIN_DIR" >"$BATS_FILE_TMPDIR/plugin.log" 2>&1 3>&- &
	export PLUGIN_PID=$!
	wait_for 120 allocatable lab.rdmactl.io/hca 8 || {
		cat "$BATS_FILE_TMPDIR/plugin.log" >&2
		return 1
	}
	pod_yaml rdma "ls -l /dev/infiniband/uverbs0 && ibv_devinfo -d rxe0 && $KQ -k qp -n 2" \
		'resources: {limits: {lab.rdmactl.io/hca: 1}}' | kc apply -f -
	pod_succeeds rdma 300
	run -0 kc logs rdma
	assert_output --regexp 'crw[^ ]+ +1 +[^ ]+ +[^ ]+ +231, +192 .*/dev/infiniband/uverbs0'
	assert_output --partial PORT_ACTIVE
	assert_output --partial 'qp created=2 errno=0'
	run -0 grep -F 'rdmactl.io/hca=rxe0' "$BATS_FILE_TMPDIR/plugin.log"
}

# Consumable capacity (KEP-5075, beta in 1.36) on the scheduler's side alone: a device published by hand
# with allowMultipleAllocations and a qp capacity of 10, claims of 6 QPs: the first pod's claim is allocated
# with its consumed capacity, the second stays Pending (no DRA driver prepares them: their pods never start).
@test "DRA consumable capacity: the scheduler gives a claim its share of a device's capacity and refuses the claim that does not fit" {
	kc apply -f - <<-EOF
	apiVersion: resource.k8s.io/v1
	kind: DeviceClass
	metadata: {name: lab-hca}
	spec:
	  selectors:
	  - cel: {expression: 'device.driver == "lab.rdmactl.io"'}
	---
	apiVersion: resource.k8s.io/v1
	kind: ResourceSlice
	metadata: {name: lab-rxe0}
	spec:
	  driver: lab.rdmactl.io
	  nodeName: lab
	  pool: {name: lab, generation: 1, resourceSliceCount: 1}
	  devices:
	  - name: rxe0
	    allowMultipleAllocations: true
	    attributes: {ibdev: {string: rxe0}}
	    capacity:
	      qp:
	        value: "10"
	        requestPolicy: {default: "1", validRange: {min: "1", max: "8"}}
	EOF
	# the API server kept the consumable-capacity fields (a server without the gate drops them)
	run -0 kc get resourceslice lab-rxe0 -o jsonpath='{.spec.devices[0].allowMultipleAllocations} {.spec.devices[0].capacity.qp.requestPolicy.validRange.max}'
	assert_output 'true 8'
	local n
	for n in 1 2; do
		claim_yaml "qp6-$n" hca lab-hca 6 | kc apply -f -
		pod_yaml "claim$n" 'true' | sed "s|^  containers:|  resourceClaims: [{name: hca, resourceClaimName: qp6-$n}]\n&|" | kc apply -f -
		if [ $n = 1 ]; then
			wait_for 120 claim_allocated qp6-1 || {
				kc describe pod claim1 >&2
				return 1
			}
		fi
	done
	run -0 kc get resourceclaim qp6-1 -o json
	run -0 jq -r '.status.allocation.devices.results[0] | "\(.device) \(.consumedCapacity.qp) \(.shareID != null)"' <<<"$output"
	assert_output 'rxe0 6 true'
	# the second claim does not fit beside the first: its pod stays Pending with the scheduler's reason
	wait_for 120 unschedulable claim2 || {
		kc describe pod claim2 >&2
		return 1
	}
	run -0 kc get resourceclaim qp6-2 -o jsonpath='{.status.allocation}'
	assert_output ''
	# once the first pod and claim are gone, the second is allocated
	kc delete pod claim1 --grace-period=0 --force
	kc delete resourceclaim qp6-1
	wait_for 180 claim_allocated qp6-2 || {
		kc describe pod claim2 >&2
		return 1
	}
	kc delete resourceslice lab-rxe0
	kc delete deviceclass lab-hca
}

# rdmactl-dra (dra/, issue 52) as the node's DRA driver: its ResourceSlice publishes rxe0 with a qp capacity of 10
# (--capacity); a pod whose claim asks 6 QPs gets the device through the claim's CDI spec and 6 QPs under the
# kernel limit its hooks put on the pod's cgroup (the 7th: EDQUOT); a second such pod is not placed beside it
# (Pending, the scheduler's reason) and runs once the first is deleted; a claim above the node policy's ceiling is
# never allocated; when all is deleted, no claim spec, kernel limit or ledger scope is left.
@test "rdmactl-dra deployed as users deploy it (image, DaemonSet, RBAC): a claim's QPs are its pod's kernel limit; two claims kept within capacity; one above the ceiling refused at admission; the pod named; nothing left" {
	local T=$BATS_FILE_TMPDIR img=rdmactl.local/rdmactl-dra:test
	printf 'default qp=2 cq=8 mr=16 mr_bytes=64M\nceiling qp=8 cq=64 mr=64 mr_bytes=1G\n' >"$T/policy.conf"
	# the image: dra/Containerfile over this build's rdmactl-dra, by podman (FROM scratch: nothing pulled),
	# imported into the cluster's containerd (no registry)
	mkdir -p "$T/ctx"
	cp "$BUILD/rdmactl-dra" "$T/ctx/"
	pm() { timeout 300 podman --root "$T/store" --runroot /run/dra-runroot --storage-driver=vfs \
		--cgroup-manager=cgroupfs --events-backend=file "$@"; }
	pm build -q -f "$TOP/dra/Containerfile" -t "$img" "$T/ctx"
	pm save -q --format docker-archive -o "$T/dra.tar" "$img"
	timeout 120 ctr -n k8s.io images import "$T/dra.tar"
	# dist/kubernetes/rdmactl-dra.yaml as an operator applies it (kubectl prints its objects one by one: a List); the lab changes the image (imported, never
	# pulled), the host paths of rdmactl and the policy, the capacity (10 QPs), and the API server's address
	# (no kube-proxy here: the kubernetes Service's address routes nowhere)
	kc label node lab rdmactl.io/rdma=true --overwrite
	kc create --dry-run=client -o json -f "$TOP/dist/kubernetes/rdmactl-dra.yaml" |
		jq -s --arg img "$img" --arg r "$RDMACTL" --arg p "$T/policy.conf" '{apiVersion: "v1", kind: "List", items: map(
			if .kind == "DaemonSet" then .spec.template.spec.containers[0] |= (
				.image = $img | .imagePullPolicy = "Never"
				| .args = [.args[] | select(startswith("--rdmactl=") | not)]
					+ ["--rdmactl=" + $r, "--policy=" + $p, "--capacity=qp=10", "--refresh=0"]
				| .env += [{name: "KUBERNETES_SERVICE_HOST", value: "192.0.2.1"},
					{name: "KUBERNETES_SERVICE_PORT", value: "6443"}])
			else . end)}' >"$T/dra.json"
	kc apply -f "$T/dra.json"
	dra_logs() { kc -n rdmactl-system describe pods >&2; kc -n rdmactl-system logs ds/rdmactl-dra >&2 || true; }
	dra_published() { kq get resourceslices -o json | jq -e '.items[] | select(.spec.driver == "rdmactl.io" and .spec.nodeName == "lab")
		| .spec.devices[] | select(.name == "rxe0" and .allowMultipleAllocations and .capacity.qp.value == "10")' >/dev/null; }
	wait_for 300 dra_published || { dra_logs; kc get resourceslices -o yaml >&2; false; }
	# the driver runs as its service account, in the image built above
	run -0 kq -n rdmactl-system get pods -l app.kubernetes.io/name=rdmactl-dra -o json
	run -0 jq -r '.items[0] | "\(.spec.serviceAccountName) \(.spec.containers[0].image) \(.status.phase)"' <<<"$output"
	assert_output "rdmactl-dra $img Running"
	# what its pod's token may do (RBAC and the admission policy of rdmactl-dra.yaml): write its own node's
	# ResourceSlices, not another node's nor another driver's; read no secret
	local pod tok
	pod=$(kq -n rdmactl-system get pods -l app.kubernetes.io/name=rdmactl-dra -o jsonpath='{.items[0].metadata.name}')
	tok=$(kq -n rdmactl-system create token rdmactl-dra --bound-object-kind Pod --bound-object-name "$pod" --duration 10m)
	as_driver() { timeout 30 kubectl --kubeconfig /dev/null --server https://192.0.2.1:6443 \
		--certificate-authority /run/rdmactl-k8s/pki/ca.crt --token "$tok" "$@"; }
	slice_yaml() { # NAME NODE DRIVER
		printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: %s}\nspec:\n  driver: %s\n  nodeName: %s\n  pool: {name: %s, generation: 1, resourceSliceCount: 1}\n  devices: []\n' "$1" "$3" "$2" "$2"
	}
	run -1 as_driver create -f - < <(slice_yaml probe-other other rdmactl.io)
	assert_output --partial "rdmactl-dra on node lab may write only its own node's ResourceSlices, not one of node other"
	run -1 as_driver create -f - < <(slice_yaml probe-gpu lab gpu.example.com)
	assert_output --partial "rdmactl-dra may write only the ResourceSlices of driver rdmactl.io, not one of driver gpu.example.com"
	# its own node's, rdmactl.io's: allowed. Server-side dry runs pass RBAC and admission and store nothing: a slice
	# really made would race with the driver's own slice controller, which deletes any rdmactl.io slice of its node
	# it did not write (CI once saw the delete below find it gone)
	run -0 as_driver create --dry-run=server -f - < <(slice_yaml probe-lab lab rdmactl.io)
	assert_output --partial "(server dry run)"
	local own
	own=$(kq get resourceslices -o json | jq -er '[.items[] | select(.spec.driver == "rdmactl.io" and .spec.nodeName == "lab")][0].metadata.name')
	run -0 as_driver delete --dry-run=server resourceslice "$own"
	assert_output --partial "(server dry run)"
	run -0 kq get resourceslice "$own"
	run -1 as_driver auth can-i get secrets --all-namespaces
	assert_output no
	local n qp
	for n in a b c; do
		qp=6
		[ $n != c ] || qp=9
		claim_yaml "rdma-$n" rdma rdmactl.io "$qp" | kc apply -f -
		pod_yaml "dra$n" "$KQ -k qp -n 8 -H /nonexistent" |
			sed "s|^  containers:|  resourceClaims: [{name: rdma, resourceClaimName: rdma-$n}]\n&|;s|^    image:|    resources: {claims: [{name: rdma}]}\n&|" |
			kc apply -f -
		if [ $n = a ]; then
			wait_for 300 bash -c "kubectl logs dra$n 2>/dev/null | grep -q holding" || {
				kc describe pod "dra$n" >&2
				dra_logs
				false
			}
		fi
	done
	run -0 kc logs draa
	assert_line 'qp created=6 errno=EDQUOT'
	# what was allocated, as kubectl shows it
	run -0 kc get resourceclaim rdma-a -o json
	run -0 jq -r '.status.allocation.devices.results[0] | "\(.driver) \(.device) \(.consumedCapacity.qp)"' <<<"$output"
	assert_output 'rdmactl.io rxe0 6'
	run -0 kc describe resourceclaim rdma-a
	assert_output --partial 'rxe0'
	# mr_bytes, which the claim did not name, is the policy's default (64M), and the container's RLIMIT_MEMLOCK
	# follows it, soft and hard: pinned memory bounded without memlock=unlimited
	run -0 kc get resourceclaim rdma-a -o jsonpath='{.status.allocation.devices.results[0].consumedCapacity.mr_bytes}'
	assert_output 64Mi
	local kpid
	kpid=$(pgrep -x kqverbs)
	run -0 grep '^Max locked memory' "/proc/$kpid/limits"
	assert_output --regexp '^Max locked memory +67108864 +67108864 +bytes'
	# the pod's kernel limit, named by its pod's uid
	local uid
	uid=$(kq get pod draa -o jsonpath='{.metadata.uid}')
	run -0 "$RDMACTL" -j quota show
	run -0 jq -e --arg u "$uid" '[.scopes[] | select(.pod_uid == $u and .pod_namespace == "default" and .pod_name == "draa")
		| .kinds.qp | select(.kernel_limit == 6 and .kernel_usage == 6)] | length >= 1' <<<"$output" ||
		{ "$RDMACTL" quota show >&2; false; }
	# the exporter names the pod on its series: its container's 6 QPs
	run -0 "$RDMACTL" export --once
	run -0 grep -cE "^rdmactl_objects\\{[^}]*pod_uid=\"$uid\",namespace=\"default\",pod=\"draa\",[^}]*type=\"qp\"\\} 6\$" <<<"$output"
	assert_output 1
	# the second claim does not fit beside the first; the one above the ceiling fits nowhere
	wait_for 120 unschedulable drab || { kc describe pod drab >&2; false; }
	wait_for 120 unschedulable drac || { kc describe pod drac >&2; false; }
	run -0 kc get resourceclaim rdma-b -o jsonpath='{.status.allocation}'
	assert_output ''
	kc delete pod draa --grace-period=0 --force
	kc delete resourceclaim rdma-a
	wait_for 300 bash -c "kubectl logs drab 2>/dev/null | grep -q holding" || { kc describe pod drab >&2; dra_logs; false; }
	run -0 kc logs drab
	assert_line 'qp created=6 errno=EDQUOT'
	run -0 kc get resourceclaim rdma-c -o jsonpath='{.status.allocation}'
	assert_output ''
	# with dist/kubernetes/rdmactl-claim-ceiling.yaml (its ConfigMap: this node policy's ceiling), such a claim
	# or template is refused when written, naming the request and the ceiling; one within it is not
	kc create --dry-run=client -o json -f "$TOP/dist/kubernetes/rdmactl-claim-ceiling.yaml" |
		jq -s '{apiVersion: "v1", kind: "List", items: map(if .kind == "ConfigMap" then .data = {qp: "8", cq: "64", mr: "64", mr_bytes: "1Gi"} else . end)}' |
		kc apply -f -
	refused_at_admission() { claim_yaml rdma-d rdma rdmactl.io 9 | kq create --dry-run=server -f - 2>&1 | grep -q 'ceiling'; }
	wait_for 120 refused_at_admission || { claim_yaml rdma-d rdma rdmactl.io 9 | kq create --dry-run=server -f - >&2; false; }
	run -1 kc create -f - < <(claim_yaml rdma-d rdma rdmactl.io 9)
	assert_output --partial 'RDMA capacity above the node policy ceiling (ConfigMap rdmactl-system/rdmactl-ceiling): rdma: qp=9 (ceiling 8)'
	run -1 kc create -f - <<-EOF
	apiVersion: resource.k8s.io/v1
	kind: ResourceClaimTemplate
	metadata: {name: rdma-big}
	spec:
	  spec:
	    devices:
	      requests:
	      - name: big
	        exactly: {deviceClassName: rdmactl.io, capacity: {requests: {qp: "4", mr_bytes: 2Gi}}}
	EOF
	assert_output --partial 'big: mr_bytes=2Gi (ceiling 1Gi)'
	run -0 kc create -f - < <(claim_yaml rdma-d rdma rdmactl.io 8)
	kc delete pod drab drac --grace-period=0 --force
	kc delete resourceclaim rdma-b rdma-c rdma-d
	# nothing left: no claim's CDI spec, no pod's kernel limit
	no_claim_spec() { ! ls "$CDI" | grep -q claim; }
	wait_for 120 no_claim_spec || { ls -l "$CDI" >&2; false; }
	no_pod_scope() { "$RDMACTL" -j quota show | jq -e '[.scopes[] | select(.pod_uid != null)] | length == 0' >/dev/null; }
	wait_for 120 no_pod_scope || { "$RDMACTL" quota show >&2; false; }
	kc delete -f "$T/dra.json" --wait=false
	kc delete validatingadmissionpolicy,validatingadmissionpolicybinding rdmactl-claim-ceiling
	# the driver's pod ends with its DaemonSet
	no_driver() { [ -z "$(kq -n rdmactl-system get pods -o name 2>/dev/null)" ]; }
	wait_for 120 no_driver || { kc -n rdmactl-system get pods >&2; false; }
}
