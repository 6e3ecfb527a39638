#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl oci-hook under real podman + runc in the lab: rdmactl.io/ annotations become limits on the
# container's cgroup at createRuntime, the kernel enforces them, poststop takes them off, a bad annotation
# stops the container, and a container without annotations is untouched. rdmactl cdi's specs under podman's
# CDI (4.3.1): rdmactl.io/hca devices, rdmactl.io/budget devices; the node policy's default and ceiling; a
# Kubernetes pod's name from the CRI's annotations in quota show and the exporter's labels.
# podman keeps its storage here (--root, --runroot): the host's podman state cannot break the suite.

load ../helper

KQ=$BUILD/lab-progs/kqverbs

setup_file() {
	require_lab
	export ROOTFS=/tmp/oci-rootfs HOOKS=/tmp/oci-hooks.d STORE=/tmp/oci-storage RUNROOT=/run/oci-runroot
	export CDI=/var/run/cdi POLICY=/etc/rdmactl/containers.conf
	[ ! -e "$POLICY" ] || { echo "$POLICY exists in the lab: the suite makes its own" >&2; return 1; }
	mkdir -p "$ROOTFS" "$HOOKS" "$STORE" "$RUNROOT"
	mountpoint -q "$ROOTFS" || mount --rbind / "$ROOTFS"
	# the shipped hooks.d file, pointing at this build's rdmactl
	jq --arg p "$RDMACTL" '.hook.path = $p' "$BUILD/oci-hooks/rdmactl.json" >"$HOOKS/rdmactl.json"
	# the hook runs from podman with the default ledger: the suite removes it after, if it made it
	export OCI_LEDGER_BEFORE=
	[ ! -e /dev/shm/rdmactl.ledger ] || OCI_LEDGER_BEFORE=1
	# A kernel limit on a cgroup of its own keeps the programs attached for the whole suite, as on a host with
	# tenants: otherwise every container's limits attach and detach them, and live patching under the lab's
	# emulator has hung a guest (design.md, "Attaching while programs run"). The attach itself is kq.bats'.
	mkdir -p /sys/fs/cgroup/oci-keep
	"$RDMACTL" quota set pd 1000000 --cgroup oci-keep --kernel
}

teardown_file() {
	# outside the lab setup_file stopped at require_lab: nothing here is the suite's (the host's ledger is not)
	[ -n "${LAB_GUEST:-}" ] || return 0
	"$RDMACTL" quota unset pd --cgroup oci-keep --kernel || true
	rmdir /sys/fs/cgroup/oci-keep 2>/dev/null || true
	umount -R "$ROOTFS" 2>/dev/null || true
	rm -rf "$CDI" "$POLICY" "$STORE" "$RUNROOT"
	[ -n "$OCI_LEDGER_BEFORE" ] || rm -f /dev/shm/rdmactl.ledger /dev/shm/rdmactl.ledger.usage
}

setup() {
	require_lab
	PIDS=()
	KPOD=
}

teardown() {
	local p
	rm -f "$POLICY"
	[ -z "${POD:-}" ] || pod_rm "$POD" >/dev/null 2>&1 || true
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	# a Kubernetes-like pod cgroup a test made podman create (conmon's cgroup stays in it)
	if [ -n "$KPOD" ]; then
		find "$KPOD" -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir /sys/fs/cgroup/kubepods 2>/dev/null || true
	fi
}

# podman as the lab runs it (DESIGN: cgroupfs, file events, vfs, no network), its own storage, the hooks.d
# above; pod gives the container the uverbs device by path, podc leaves the devices to CDI
podc() {
	timeout 300 podman --root "$STORE" --runroot "$RUNROOT" --cgroup-manager=cgroupfs --events-backend=file \
		--storage-driver=vfs --network-backend=cni --hooks-dir "$HOOKS" run --rm --network none "$@"
}
pod() {
	podc --device /dev/infiniband/uverbs0 "$@"
}

# No cgroup scope in the ledger and nothing remembered by the hook.
assert_nothing_left() {
	run -0 "$RDMACTL" quota show -j
	[ "$(jq '[.scopes[] | select(.scope == "cgroup" and .cgroup != "/oci-keep")] | length' <<<"$output")" = 0 ] || {
		echo "left behind: $output" >&2
		return 1
	}
	[ -z "$(ls -A /run/rdmactl/oci 2>/dev/null)" ]
}

@test "podman --annotation rdmactl.io/max-qp=2: a verbs program asking 4 QPs is refused at the third; without, it gets 4" {
	run pod --annotation rdmactl.io/max-qp=2 --rootfs "$ROOTFS" "$KQ" -k qp -n 4
	assert_output --partial 'qp created=2 errno=EDQUOT'
	assert_output --partial 'alive'
	assert_nothing_left
	run pod --rootfs "$ROOTFS" "$KQ" -k qp -n 4
	assert_success
	assert_output --partial 'qp created=4 errno=0'
	assert_nothing_left
}

@test "RLIMIT_MEMLOCK follows the mr_bytes budget: a 32 MiB MR without CAP_IPC_LOCK under max-mr-bytes=64M; 16M refuses it (EDQUOT)" {
	run pod --annotation rdmactl.io/max-mr-bytes=64M --rootfs "$ROOTFS" sh -c "ulimit -l; $KQ -k mr -n 1 -s $((32 << 20))"
	assert_line 65536
	assert_output --partial 'mr created=1 errno=0'
	assert_nothing_left
	run pod --annotation rdmactl.io/max-mr-bytes=16M --rootfs "$ROOTFS" sh -c "ulimit -l; $KQ -k mr -n 1 -s $((32 << 20))"
	assert_line 16384
	assert_output --partial 'mr created=0 errno=EDQUOT'
	assert_nothing_left
	# without a budget the runtime's own rlimit stays: below 32 MiB (the kernel's default 8 MiB), the MR fails
	run pod --rootfs "$ROOTFS" sh -c "ulimit -l; $KQ -k mr -n 1 -s $((32 << 20))"
	local own=${lines[0]}
	[ "$own" != 65536 ]
	if [ "$own" != unlimited ] && [ "$own" -lt 32768 ]; then
		assert_output --partial 'mr created=0 errno=ENOMEM'
	fi
}

@test "while the container runs its cgroup holds the limits (ledger and kernel); after it exits they are gone" {
	local out=$BATS_TEST_TMPDIR/out hold=/tmp/oci-hold.$$ cg id
	pod --annotation rdmactl.io/max-qp=3 --annotation rdmactl.io/max-mr-bytes=8G --rootfs "$ROOTFS" \
		"$KQ" -k qp -n 1 -H "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q holding "$out" || { cat "$out" >&2; return 1; }
	run -0 "$RDMACTL" quota show -j
	cg=$(jq -r '[.scopes[] | select(.scope == "cgroup" and .cgroup != "/oci-keep")] | .[0].cgroup // empty' <<<"$output")
	[[ $cg == */libpod* ]] || { echo "$output" >&2; return 1; }
	[ "$(jq --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.qp.limit' <<<"$output")" = 3 ]
	[ "$(jq --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.mr_bytes.limit' \
		<<<"$output")" = $((8 << 30)) ]
	[ "$(jq --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.qp.kernel_limit' \
		<<<"$output")" = 3 ]
	# quota show names the container: podman's own id for it
	id=$(podman --root "$STORE" --runroot "$RUNROOT" --storage-driver=vfs ps --no-trunc --format '{{.ID}}')
	[ -n "$id" ]
	[ "$(jq -r --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .container_id' \
		<<<"$output")" = "$id" ]
	run -0 "$RDMACTL" quota show
	assert_output --partial "cgroup $cg (container ${id:0:12}): "
	# and top names the container of the process that holds the QP
	run -0 "$RDMACTL" top -b -n1 -j
	[ "$(jq -r '[.processes[] | select(.comm == "kqverbs") | .container_id] | .[0]' <<<"$output")" = "$id" ]
	run -0 "$RDMACTL" top -b -n1
	assert_output --regexp 'COMM .* CONTAINER +QP-STATES'
	assert_output --regexp " kqverbs .* ${id:0:12} "
	touch "$hold"
	wait "${PIDS[-1]}"
	assert_nothing_left
	rm -f "$hold"
}

@test "a bad annotation stops the container with a message naming it, and applies nothing" {
	local m=/tmp/oci-ran.$$
	run pod --annotation rdmactl.io/max-qp=2 --annotation rdmactl.io/max-cq=lots --rootfs "$ROOTFS" \
		touch "$m"
	assert_failure
	assert_output --partial "annotation rdmactl.io/max-cq: invalid value 'lots'"
	[ ! -e "$m" ]
	assert_nothing_left
}

@test "CDI: rdmactl.io/hca=all alone gives a working uverbs device; rdmactl.io/budget=qp2 holds 2 QPs; two budget devices, the smaller" {
	run -0 "$RDMACTL" cdi generate --output "$CDI" --budget qp2:qp=2 --budget qp3:qp=3,cq=8
	run -0 "$TOP/tests/cdi-validate" "$CDI/rdmactl.io-hca.json" "$CDI/rdmactl.io-budget.json"
	run -0 podc --device rdmactl.io/hca=all --rootfs "$ROOTFS" "$KQ" -k qp -n 4
	assert_output --partial 'qp created=4 errno=0'
	run -0 podc --device rdmactl.io/hca=rxe0 --rootfs "$ROOTFS" "$KQ" -k qp -n 1
	assert_output --partial 'qp created=1 errno=0'
	run podc --device rdmactl.io/hca=all --device rdmactl.io/budget=qp2 --rootfs "$ROOTFS" "$KQ" -k qp -n 4
	assert_output --partial 'qp created=2 errno=EDQUOT'
	assert_output --partial 'alive'
	assert_nothing_left
	# the hooks.d hook runs too (always): three requests, qp from the smaller device, cq from the other
	run podc --device rdmactl.io/hca=all --device rdmactl.io/budget=qp3 --device rdmactl.io/budget=qp2 \
		--rootfs "$ROOTFS" "$KQ" -k qp -n 4
	assert_output --partial 'qp created=2 errno=EDQUOT'
	run podc --device rdmactl.io/hca=all --device rdmactl.io/budget=qp2 --device rdmactl.io/budget=qp3 \
		--rootfs "$ROOTFS" "$KQ" -k cq -n 10
	assert_output --partial 'cq created=8 errno=EDQUOT'
	assert_nothing_left
	# --preload: the hca devices bring the interceptor, whose RDMACTL_MAX_QP holds each process of the container
	run -0 "$RDMACTL" cdi generate --output "$CDI" --preload
	run podc --device rdmactl.io/hca=all --env RDMACTL_MAX_QP=2 --rootfs "$ROOTFS" "$KQ" -k qp -n 4
	assert_output --partial 'qp created=2 errno=ENOMEM'
	assert_output --partial 'refused qp'
	run -0 podc --device rdmactl.io/hca=all --rootfs "$ROOTFS" sh -c 'echo "preload=$LD_PRELOAD"'
	assert_output "preload=$(readlink -f "$BUILD/librdmactl-preload.so")"
	# without the hca device the container has no RDMA device at all
	run podc --rootfs "$ROOTFS" "$KQ" -k qp -n 1
	assert_failure
	assert_nothing_left
}

@test "CDI: a claim's spec as rdmactl-dra writes it gives the allocated device and holds the claim's budget (qp=16)" {
	# the driver's own output for a claim of rxe0 (dra/internal/cdi/testdata/claim.json, checked by its Go
	# tests), with the hooks pointed at this build's rdmactl
	local spec=$TOP/dra/internal/cdi/testdata/claim.json uid=0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11
	mkdir -p "$CDI"
	jq --arg p "$RDMACTL" '.devices[].containerEdits.hooks[].path = $p' "$spec" >"$CDI/rdmactl.io-claim_$uid.json"
	run -0 "$TOP/tests/cdi-validate" "$CDI/rdmactl.io-claim_$uid.json"
	run podc --device "rdmactl.io/claim=rxe0-$uid" --rootfs "$ROOTFS" "$KQ" -k qp -n 20
	assert_output --partial 'qp created=16 errno=EDQUOT'
	assert_output --partial 'alive'
	run podc --device "rdmactl.io/claim=rxe0-$uid" --rootfs "$ROOTFS" "$KQ" -k cq -n 40
	assert_output --partial 'cq created=32 errno=EDQUOT'
	run -0 podc --device "rdmactl.io/claim=rxe0-$uid" --rootfs "$ROOTFS" sh -c 'echo "$RDMACTL_DRA_IBDEV_RXE0"; ls /dev/infiniband'
	assert_output "$(printf '%s\n' rxe0 rdma_cm uverbs0)"
	assert_nothing_left
	rm -f "$CDI/rdmactl.io-claim_$uid.json"
}

@test "node policy: an unannotated container gets the default; an annotation or budget chooses up to the ceiling; above it the container does not start" {
	local m=/tmp/oci-ran.$$
	mkdir -p "${POLICY%/*}"
	printf '# lab\ndefault qp=3\nceiling qp=5 cq=6\nbudget four qp=4\n' >"$POLICY"
	run -0 "$RDMACTL" cdi generate --output "$CDI"
	run -0 "$TOP/tests/cdi-validate" "$CDI/rdmactl.io-budget.json"
	run pod --rootfs "$ROOTFS" "$KQ" -k qp -n 6
	assert_output --partial 'qp created=3 errno=EDQUOT'
	assert_nothing_left
	# kinds without a default are held at their ceiling
	run pod --rootfs "$ROOTFS" "$KQ" -k cq -n 8
	assert_output --partial 'cq created=6 errno=EDQUOT'
	run pod --annotation rdmactl.io/max-qp=5 --rootfs "$ROOTFS" "$KQ" -k qp -n 6
	assert_output --partial 'qp created=5 errno=EDQUOT'
	run pod --annotation rdmactl.io/budget=four --rootfs "$ROOTFS" "$KQ" -k qp -n 6
	assert_output --partial 'qp created=4 errno=EDQUOT'
	# the policy's budget as a CDI device: its hook reads the policy when the container starts
	run podc --device rdmactl.io/hca=all --device rdmactl.io/budget=four --rootfs "$ROOTFS" "$KQ" -k qp -n 6
	assert_output --partial 'qp created=4 errno=EDQUOT'
	assert_nothing_left
	run pod --annotation rdmactl.io/max-qp=6 --rootfs "$ROOTFS" touch "$m"
	assert_failure
	assert_output --partial "annotation rdmactl.io/max-qp=6 asks qp=6, above the node's ceiling qp=5 ($POLICY); the container does not start"
	[ ! -e "$m" ]
	run pod --annotation rdmactl.io/max-cq=unlimited --rootfs "$ROOTFS" touch "$m"
	assert_failure
	assert_output --partial "above the node's ceiling cq=6"
	[ ! -e "$m" ]
	assert_nothing_left
}

# A podman pod with its infra container (catatonit builds podman's local pause image). podman 4.3.1 with
# cgroupfs on cgroup v2 puts a device program on the pod's cgroup that denies every device, /dev/null
# included, so no container of the pod can start ("error reopening /dev/null"): the lab takes that program
# off the pod's cgroup (each container's own device program stays). A podman bug, not rdmactl's.
make_pod() { # NAME: prints the pod's cgroup directory
	local id cg p
	id=$(podman --root "$STORE" --runroot "$RUNROOT" --cgroup-manager=cgroupfs --events-backend=file \
		--storage-driver=vfs --network-backend=cni pod create --name "$1" --network none) || return 1
	cg=/sys/fs/cgroup/libpod_parent/$id
	[ -d "$cg" ] || { echo "pod $1: no cgroup $cg" >&2; return 1; }
	for p in $(bpftool -j cgroup show "$cg" | jq -r '.[] | select(.attach_type == "cgroup_device") | .id'); do
		bpftool cgroup detach "$cg" device id "$p" || return 1
	done
	echo "$cg"
}

pod_rm() {
	timeout 120 podman --root "$STORE" --runroot "$RUNROOT" --cgroup-manager=cgroupfs --events-backend=file \
		--storage-driver=vfs --network-backend=cni --hooks-dir "$HOOKS" pod rm -f -t 0 "$1"
}

@test "pod budget: two containers of a podman pod with rdmactl.io/scope=pod hold max-qp=4 together; a container budget inside it holds too; pod rm leaves nothing" {
	local cg hold=/tmp/oci-podhold.$$ a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
	POD=P1
	cg=$(make_pod P1)
	run -0 "$RDMACTL" cdi generate --output "$CDI" --budget qp1:qp=1
	podc --pod P1 --annotation rdmactl.io/scope=pod --annotation rdmactl.io/max-qp=4 \
		--device /dev/infiniband/uverbs0 --rootfs "$ROOTFS" "$KQ" -k qp -n 3 -H "$hold" >"$a" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q holding "$a" || { cat "$a" >&2; return 1; }
	grep -q 'qp created=3 errno=0' "$a"
	run -0 "$RDMACTL" quota show -j
	[ "$(jq --arg c "${cg#/sys/fs/cgroup}" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.qp.kernel_limit' <<<"$output")" = 4 ]
	[ "$(jq --arg c "${cg#/sys/fs/cgroup}" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .pod_uid' <<<"$output")" = "\"${cg##*/}\"" ]
	# the second container: 1 left of the pod's 4
	run podc --pod P1 --annotation rdmactl.io/scope=pod --annotation rdmactl.io/max-qp=4 \
		--device /dev/infiniband/uverbs0 --rootfs "$ROOTFS" "$KQ" -k qp -n 3
	assert_output --partial 'qp created=1 errno=EDQUOT'
	touch "$hold"
	wait "${PIDS[-1]}"
	# a container budget (CDI, qp 1) inside the pod's (4, all free now): the smaller holds
	run podc --pod P1 --annotation rdmactl.io/scope=pod --annotation rdmactl.io/max-qp=4 \
		--device rdmactl.io/hca=all --device rdmactl.io/budget=qp1 --rootfs "$ROOTFS" "$KQ" -k qp -n 3
	assert_output --partial 'qp created=1 errno=EDQUOT'
	# every member gone: the pod's budget went with the last, before the pod is removed
	run -0 "$RDMACTL" quota show -j
	[ "$(jq '[.scopes[] | select(.scope == "cgroup" and .cgroup != "/oci-keep")] | length' <<<"$output")" = 0 ] ||
		{ echo "$output" >&2; return 1; }
	run -0 pod_rm P1
	POD=
	assert_nothing_left
	rm -f "$hold"
}

@test "pod budget: scope=pod outside a pod's cgroup, or without a budget, stops the container" {
	local m=/tmp/oci-ran.$$
	run pod --annotation rdmactl.io/scope=pod --annotation rdmactl.io/max-qp=4 --rootfs "$ROOTFS" touch "$m"
	assert_failure
	assert_output --partial "rdmactl.io/scope=pod, but its cgroup /libpod_parent/libpod-"
	assert_output --partial "is not inside a pod's cgroup"
	run pod --annotation rdmactl.io/scope=pod --rootfs "$ROOTFS" touch "$m"
	assert_failure
	assert_output --partial "rdmactl.io/scope=pod without a budget for the pod"
	run pod --annotation rdmactl.io/scope=node --rootfs "$ROOTFS" touch "$m"
	assert_failure
	assert_output --partial "annotation rdmactl.io/scope=node: the scope is 'pod'"
	[ ! -e "$m" ]
	assert_nothing_left
}

# podman's cgroup paths name no Kubernetes pod: --cgroup-parent /kubepods/pod<UID> puts the container where
# containerd's cgroupfs driver would (/kubepods/pod<UID>/libpod-<ID>), so the path gives pod_uid and the
# container id as on a node, and the CRI's annotations (given by hand, as containerd would give them) name
# the pod. What this does not cover: containerd or CRI-O themselves (tests/k8s), the systemd layout.
@test "the pod's name: containerd's CRI annotations name the pod in /run/rdmactl/pods, quota show and the exporter's namespace and pod labels while it runs; its poststop removes the name (issue 52)" {
	local u=3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d out=$BATS_TEST_TMPDIR/out hold=/tmp/oci-podname.$$ cg id
	KPOD=/sys/fs/cgroup/kubepods/pod$u
	pod --cgroup-parent "/kubepods/pod$u" --annotation io.kubernetes.cri.sandbox-name=web-0 \
		--annotation io.kubernetes.cri.sandbox-namespace=team-a --annotation "io.kubernetes.cri.sandbox-uid=$u" \
		--annotation rdmactl.io/max-qp=2 --rootfs "$ROOTFS" "$KQ" -k qp -n 1 -H "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q holding "$out" || { cat "$out" >&2; return 1; }
	run -0 cat "/run/rdmactl/pods/$u"
	assert_output team-a/web-0
	[ "$(stat -c %a "/run/rdmactl/pods/$u")" = 644 ]
	id=$(podman --root "$STORE" --runroot "$RUNROOT" --storage-driver=vfs ps --no-trunc --format '{{.ID}}')
	[ -n "$id" ]
	# quota show: the container's cgroup, its pod by UID and by name
	run -0 "$RDMACTL" quota show -j
	cg=$(jq -r --arg u "$u" '[.scopes[] | select(.scope == "cgroup" and .pod_uid == $u)] | .[0].cgroup // empty' <<<"$output")
	[ "$cg" = "/kubepods/pod$u/libpod-$id" ] || { echo "$output" >&2; return 1; }
	[ "$(jq -r --arg c "$cg" '.scopes[] | select(.cgroup == $c) | "\(.pod_namespace)/\(.pod_name) \(.container_id) \(.kinds.qp.kernel_limit)"' \
		<<<"$output")" = "team-a/web-0 $id 2" ]
	run -0 "$RDMACTL" quota show
	assert_output --partial "cgroup $cg (pod $u team-a/web-0, container ${id:0:12}): "
	# the exporter: the ledger scope's series and the container's objects carry namespace and pod
	run -0 --separate-stderr "$RDMACTL" export --once
	assert_line "rdmactl_quota_limit{scope=\"cgroup\",owner=\"$cg\",type=\"qp\",pod_uid=\"$u\",namespace=\"team-a\",pod=\"web-0\",container_id=\"$id\"} 2"
	assert_line "rdmactl_objects{cgroup=\"$cg\",pod_uid=\"$u\",namespace=\"team-a\",pod=\"web-0\",container_id=\"$id\",device=\"rxe0\",type=\"qp\"} 1"
	# no series of the pod without its name
	run awk -v u="$u" '/^rdmactl_/ && index($0, "pod_uid=\"" u "\"") && !/namespace="team-a",pod="web-0"/' <<<"$output"
	assert_output ""
	touch "$hold"
	wait "${PIDS[-1]}"
	# the pod's last (only) container is gone: so is its name
	[ ! -e "/run/rdmactl/pods/$u" ]
	assert_nothing_left
	rm -f "$hold"
}
