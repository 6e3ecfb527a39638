#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl doctor where BPF LSM is active, with the node policy of dist/kubernetes: every limit held (exit 0);
# the programs pinned by this rdmactl, and by an "older" one (a program pin missing); without bpffs (a mount
# namespace where /sys/fs/bpf is unmounted) every limit fails (exit 1), which is what the OCI hook then does;
# and a cgroup whose subtree_control lacks rdma is named, with BPF LSM not needing it. The boot without BPF
# LSM is tests/lab/nolsm/doctor.bats.

load ../helper
load doctor

PIN=/sys/fs/bpf/rdmactl/kq

setup() {
	doctor_setup active
}

teardown() {
	"$RDMACTL" quota unset qp --cgroup "$CG" --kernel >/dev/null 2>&1 || true
	rmdir "$CG/c" "$CG" 2>/dev/null || true
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

@test "BPF LSM, bpffs, the dist/kubernetes policy: every limit is held, exit 0" {
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of lsm
	assert_output --regexp '^ok BPF LSM is active'
	run -0 check_of bpffs
	assert_output --regexp '^ok mounted on /sys/fs/bpf'
	run -0 check_of policy
	assert_output --regexp "^ok $POL parses: default cq=16,qp=8,mr=64,mr_bytes=8589934592"
	local k
	for k in qp cq mr mr_bytes; do
		run -0 check_of limit "$k"
		assert_output --regexp '^ok the default \(every container, kube-system.s included\); budget small, train: held by BPF LSM$'
	done
	run -0 jq -e '.enforceable and ([.checks[] | select(.status == "fail")] | length == 0)' <<<"$DOC"
	run -0 check_of exporter netlink
	assert_output --regexp '^ok '
	# text: the same checks, and the closing line
	run -0 "$RDMACTL" doctor --policy "$POL"
	assert_line --regexp '^limit mr_bytes +ok +the default'
	assert_line "every limit of the node policy can be enforced here"
}

@test "the pinned programs: this rdmactl's layout is ok; a set without one of this version's programs is older (warn)" {
	mkdir "$CG"
	run -0 "$RDMACTL" quota set qp 5 --cgroup "$CG" --kernel
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of programs
	assert_output --regexp "^ok pinned in $PIN with this rdmactl's layout \(maps and programs\), every limit enforced$"
	run -0 check_of exporter kernel
	assert_output --regexp '^ok '
	# links taken away while a limit stays: not enforced, and the fix
	local link
	link=$(ls "$PIN" | grep '^link_' | head -1)
	[ -n "$link" ]
	rm "$PIN/$link"
	run -1 --separate-stderr "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of programs
	assert_output --regexp '^fail kernel limits are set but not enforced: .* is not attached .*rdmactl quota kernel repair'
	run -0 "$RDMACTL" quota kernel repair
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
	# an older rdmactl pinned no prog_ pin for a program this one attaches on demand (nothing attached now)
	rm "$PIN/prog_kq_ioctl"
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of programs
	assert_output --regexp "^warn pinned by an older rdmactl: 1 of this version's programs are missing \(kq_ioctl\).*rm -r $PIN"
	# as the fix says: the next limit loads this version's
	rm -r "$PIN"
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of programs
	assert_output --regexp '^absent not loaded'
}

@test "without bpffs (unmounted in a mount namespace): bpffs, the programs and every limit fail, exit 1" {
	run -1 --separate-stderr unshare -m sh -c 'umount /sys/fs/bpf && exec "$@"' _ "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of bpffs
	assert_output --regexp '^fail /sys/fs/bpf is not a BPF file system: .*mount -t bpf bpf /sys/fs/bpf'
	run -0 check_of programs
	assert_output --regexp '^fail cannot be pinned'
	run -0 check_of limit qp
	assert_output --regexp '^fail the default .*the OCI hook cannot set it \(bpffs is not mounted on /sys/fs/bpf\), so those containers fail to start$'
	run -0 jq -e '.enforceable == false' <<<"$DOC"
	# what doctor says is what the hook meets: a kernel limit cannot be set there
	mkdir "$CG"
	run -1 --separate-stderr unshare -m sh -c 'umount /sys/fs/bpf && exec "$@"' _ "$RDMACTL" quota set qp 5 --cgroup "$CG" --kernel
	[[ $stderr == *"cannot set the kernel limit"* ]]
}

@test "a cgroup whose subtree_control lacks rdma: named (warn), and with BPF LSM the policy holds all the same (exit 0)" {
	mkdir "$CG"
	grep -qw rdma /sys/fs/cgroup/cgroup.subtree_control
	! grep -qw rdma "$CG/cgroup.subtree_control"
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$POL" --cgroup "$CG"
	DOC=$output
	run -0 check_of rdma_controller
	assert_output "warn $CG/cgroup.subtree_control lacks rdma: its child cgroups have no rdma.max (echo +rdma > $CG/cgroup.subtree_control, at every level down to where containers are)"
	# which is so
	mkdir "$CG/c"
	[ ! -e "$CG/c/rdma.max" ]
	rmdir "$CG/c"
	echo +rdma >"$CG/cgroup.subtree_control"
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$POL" --cgroup "${CG#/sys/fs/cgroup/}"
	DOC=$output
	run -0 check_of rdma_controller
	assert_output --regexp "^ok rdma in cgroup.controllers and in cgroup.subtree_control of $CG and of each cgroup above it$"
	run -0 check_of rdma_max
	assert_output --regexp '^ok the fallback, unused while BPF LSM is active: it holds ctx \(hca_handle\)'
}
