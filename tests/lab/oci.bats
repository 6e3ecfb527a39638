#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl oci-hook under real podman + runc in the lab: rdmactl.io/ annotations become limits on the
# container's cgroup at createRuntime, the kernel enforces them, poststop takes them off, a bad annotation
# stops the container, and a container without annotations is untouched.

load ../helper

KQ=$BUILD/lab-progs/kqverbs

setup_file() {
	require_lab
	export ROOTFS=/tmp/oci-rootfs HOOKS=/tmp/oci-hooks.d
	mkdir -p "$ROOTFS" "$HOOKS"
	mountpoint -q "$ROOTFS" || mount --rbind / "$ROOTFS"
	# the shipped hooks.d file, pointing at this build's rdmactl
	jq --arg p "$RDMACTL" '.hook.path = $p' "$BUILD/oci-hooks/rdmactl.json" >"$HOOKS/rdmactl.json"
	# the hook runs from podman with the default ledger: the suite removes it after, if it made it
	export OCI_LEDGER_BEFORE=
	[ ! -e /dev/shm/rdmactl.ledger ] || OCI_LEDGER_BEFORE=1
}

teardown_file() {
	umount -R "$ROOTFS" 2>/dev/null || true
	[ -n "$OCI_LEDGER_BEFORE" ] || rm -f /dev/shm/rdmactl.ledger /dev/shm/rdmactl.ledger.usage
}

setup() {
	require_lab
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# podman as the lab runs it (DESIGN: cgroupfs, file events, vfs, no network), with the hooks.d above
pod() {
	timeout 300 podman --cgroup-manager=cgroupfs --events-backend=file --storage-driver=vfs --network-backend=cni \
		--hooks-dir "$HOOKS" run --rm --network none --device /dev/infiniband/uverbs0 "$@"
}

# No cgroup scope in the ledger and nothing remembered by the hook.
assert_nothing_left() {
	run -0 "$RDMACTL" quota show -j
	[ "$(jq '[.scopes[] | select(.scope == "cgroup")] | length' <<<"$output")" = 0 ] || {
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

@test "while the container runs its cgroup holds the limits (ledger and kernel); after it exits they are gone" {
	local out=$BATS_TEST_TMPDIR/out hold=/tmp/oci-hold.$$ cg
	pod --annotation rdmactl.io/max-qp=3 --annotation rdmactl.io/max-mr-bytes=8G --rootfs "$ROOTFS" \
		"$KQ" -k qp -n 1 -H "$hold" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 120 grep -q holding "$out" || { cat "$out" >&2; return 1; }
	run -0 "$RDMACTL" quota show -j
	cg=$(jq -r '[.scopes[] | select(.scope == "cgroup")] | .[0].cgroup // empty' <<<"$output")
	[[ $cg == */libpod* ]] || { echo "$output" >&2; return 1; }
	[ "$(jq --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.qp.limit' <<<"$output")" = 3 ]
	[ "$(jq --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.mr_bytes.limit' \
		<<<"$output")" = $((8 << 30)) ]
	[ "$(jq --arg c "$cg" '.scopes[] | select(.scope == "cgroup" and .cgroup == $c) | .kinds.qp.kernel_limit' \
		<<<"$output")" = 3 ]
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
