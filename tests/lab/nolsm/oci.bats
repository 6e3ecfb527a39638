#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl oci-hook under podman + runc where BPF LSM is not active (a lab booted with an lsm= list without
# bpf): 'quota set --kernel' then writes rdma.max, which cannot hold one object kind alone, so an annotated
# container fails to start with that reason and nothing of its annotations stays applied.

load ../../helper

setup() {
	require_lab
	if grep -qw bpf /sys/kernel/security/lsm; then
		echo "this suite needs a lab booted without BPF LSM (make check-lab runs it so)" >&2
		return 1
	fi
	ROOTFS=/tmp/oci-rootfs HOOKS=/tmp/oci-hooks.d STORE=/tmp/oci-storage RUNROOT=/run/oci-runroot
	mkdir -p "$ROOTFS" "$HOOKS" "$STORE" "$RUNROOT"
	mountpoint -q "$ROOTFS" || mount --rbind / "$ROOTFS"
	jq --arg p "$RDMACTL" '.hook.path = $p' "$BUILD/oci-hooks/rdmactl.json" >"$HOOKS/rdmactl.json"
}

teardown() {
	umount -R "$ROOTFS" 2>/dev/null || true
	rm -rf "$STORE" "$RUNROOT"
}

@test "without BPF LSM rdmactl.io/max-qp alone stops the container with rdma.max's reason and applies nothing" {
	local m=/tmp/oci-ran.$$
	run timeout 300 podman --root "$STORE" --runroot "$RUNROOT" --cgroup-manager=cgroupfs --events-backend=file \
		--storage-driver=vfs --network-backend=cni --hooks-dir "$HOOKS" run --rm --network none \
		--device /dev/infiniband/uverbs0 --annotation rdmactl.io/max-qp=2 --rootfs "$ROOTFS" touch "$m"
	assert_failure
	assert_output --partial "rdma.max cannot hold a qp limit alone"
	assert_output --partial "its limits not applied (above), nothing of them stays; the container does not start"
	# the note on rdma.max once, not once for each kind set and taken back
	[ "$(grep -c 'note: BPF LSM is not active' <<<"$output")" = 1 ] || { echo "$output" >&2; false; }
	[ ! -e "$m" ]
	run -0 "$RDMACTL" quota show -j
	[ "$(jq '[.scopes[] | select(.scope == "cgroup")] | length' <<<"$output")" = 0 ]
	[ -z "$(ls -A /run/rdmactl/oci 2>/dev/null)" ]
}
