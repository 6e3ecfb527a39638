#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl doctor where BPF LSM is not active (a lab booted with an lsm= list without bpf): the policy of
# dist/kubernetes cannot be held (rdma.max holds no single object kind and no mr_bytes), and doctor says so
# before the OCI hook stops every container; a policy of contexts only is held by rdma.max, until the rdma
# controller is taken away (the root's cgroup.subtree_control without rdma).

load ../../helper
load ../doctor

setup() {
	doctor_setup inactive
	CTX=$BATS_TEST_TMPDIR/ctx.conf
	echo 'default ctx=2' >"$CTX"
	mkdir "$CG"
}

teardown() {
	grep -qw rdma /sys/fs/cgroup/cgroup.subtree_control || echo +rdma >/sys/fs/cgroup/cgroup.subtree_control
	rmdir "$CG" 2>/dev/null || true
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

@test "without BPF LSM the dist/kubernetes policy cannot be held: each of its kinds fails with why, exit 1" {
	run -1 --separate-stderr "$RDMACTL" doctor -j --policy "$POL"
	DOC=$output
	run -0 check_of lsm
	assert_output --regexp "^fail BPF LSM is not active \(/sys/kernel/security/lsm reads '[^']*', without bpf\).*lsm=\.\.\.,bpf"
	run -0 check_of programs
	assert_output --regexp '^absent '
	run -0 check_of rdma_controller
	assert_output --regexp '^ok '
	run -0 check_of rdma_max
	assert_output --regexp '^warn the only kernel limit here: it holds ctx \(hca_handle\), and pd cq qp srq mr ah mw xrcd wq only all together'
	local k
	for k in qp cq mr; do
		run -0 check_of limit "$k"
		assert_output --regexp "^fail the default \(every container, kube-system.s included\); budget small, train: without BPF LSM only rdma.max is left, which cannot hold one object kind's limit alone; the OCI hook refuses those containers"
	done
	run -0 check_of limit mr_bytes
	assert_output --regexp '^fail the default .*which cannot hold an mr_bytes limit; .*take mr_bytes out of the policy$'
	run -0 jq -e '.enforceable == false and ([.checks[] | select(.status == "fail")] | length == 5)' <<<"$DOC"
	# as the kernel side says itself (the OCI hook sets each kind so: tests/lab/nolsm/oci.bats)
	run -1 --separate-stderr "$RDMACTL" quota set mr_bytes 1G --cgroup "$CG" --kernel
	[[ $stderr == *"rdma.max cannot hold an mr_bytes limit"* ]]
	# text
	run -1 "$RDMACTL" doctor --policy "$POL"
	assert_line --regexp '^limit qp +fail +the default'
	assert_line "5 checks failed: not every limit of the node policy can be enforced here"
}

@test "without BPF LSM and without a policy: kernel limits in general cannot be set (exit 1)" {
	run -1 --separate-stderr "$RDMACTL" doctor -j
	DOC=$output
	run -0 check_of lsm
	assert_output --regexp '^fail .*\(no node policy: kernel limits in general need it\)$'
	run -0 jq -e '[.checks[] | select(.status == "fail") | .check] == ["lsm"]' <<<"$DOC"
}

@test "a policy of contexts only is held by rdma.max; without the rdma controller it is not (root's subtree_control)" {
	run -0 --separate-stderr "$RDMACTL" doctor -j --policy "$CTX"
	DOC=$output
	run -0 check_of lsm
	assert_output --regexp '^warn BPF LSM is not active'
	run -0 check_of limit ctx
	assert_output "ok the default (every container, kube-system's included): held by rdma.max (hca_handle), BPF LSM not being active"
	# which is so: the kernel limit goes into rdma.max
	run -0 "$RDMACTL" quota set ctx 2 --cgroup "$CG" --kernel --dev rxe0
	run -0 cat "$CG/rdma.max"
	assert_output --regexp '^rxe0 hca_handle=2 hca_object=max'
	run -0 "$RDMACTL" quota unset ctx --cgroup "$CG" --kernel --dev rxe0
	# the controller taken away from the root's children: no rdma.max below it
	rmdir "$CG"
	echo -rdma >/sys/fs/cgroup/cgroup.subtree_control
	mkdir "$CG"
	[ ! -e "$CG/rdma.max" ]
	run -1 --separate-stderr "$RDMACTL" doctor -j --policy "$CTX"
	DOC=$output
	run -0 check_of rdma_controller
	assert_output "fail /sys/fs/cgroup/cgroup.subtree_control lacks rdma: its child cgroups have no rdma.max (echo +rdma > /sys/fs/cgroup/cgroup.subtree_control, at every level down to where containers are)"
	run -0 check_of limit ctx
	assert_output --regexp '^fail the default .*: neither BPF LSM nor rdma.max \(/sys/fs/cgroup/cgroup.subtree_control lacks rdma'
	run -0 check_of rdma_max
	assert_output --regexp '^absent not available here'
	run -1 --separate-stderr "$RDMACTL" quota set ctx 2 --cgroup "$CG" --kernel --dev rxe0
}
