# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The kernel quota suites' helpers (kq, kqattack, kqset, kqdrv, kqchaos): their setup, a cgroup to run in,
# the kernel's own counts from RDMA netlink, and the check that the kernel quota's usage equals them.

# Run a command inside cgroup $CG (or the cgroup in $INCG).
in_cg() {
	bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "${INCG:-$CG}" "$@"
}

# The kernel's count of one kind ($2) for the processes named $1 (RDMA netlink).
nl_count() {
	rdma -j res show "$2" | jq --arg c "$1" '[.[] | select(.comm == $c)] | length'
}

# The kernel quota's usage of every kind of cgroup $1 equals what RDMA netlink lists for the commands $2...
# (SHOW_RC: the exit status quota show must have, 0 unless told: 1 while a killed set's scope is left)
assert_usage_is_netlink() {
	local cg=$1 k want j
	shift
	run --separate-stderr "-${SHOW_RC:-0}" "$RDMACTL" -j quota show --cgroup "$cg"
	j=$output
	for k in ctx pd cq qp mr; do
		want=$(rdma -j res show "$k" | jq --arg c "$*" '[.[] | select(.comm as $n | $c | split(" ") | index($n))] | length')
		jq -e --arg k "$k" --argjson w "$want" '(.scopes[0].kinds[$k].kernel_usage // 0) == $w' <<<"$j" >/dev/null ||
			{ echo "$k: netlink $want, kernel usage:" >&2; jq -c '.scopes[0].kinds' <<<"$j" >&2; return 1; }
	done
	want=$(rdma -j res show mr | jq --arg c "$*" '[.[] | select(.comm as $n | $c | split(" ") | index($n)) | .mrlen] | add // 0')
	jq -e --argjson w "$want" '(.scopes[0].kinds.mr_bytes.kernel_usage // 0) == $w' <<<"$j" >/dev/null ||
		{ echo "mr_bytes: netlink $want, kernel usage:" >&2; jq -c '.scopes[0].kinds' <<<"$j" >&2; return 1; }
}

# The kernel quota suites' setup: the lab with BPF LSM active, a ledger of the suite's own (named for $1) and
# a cgroup of each test's own ($CG).
kq_setup() {
	require_lab
	grep -qw bpf /sys/kernel/security/lsm || { echo "BPF LSM is not active in this lab kernel" >&2; return 1; }
	export RDMACTL_LEDGER=/dev/shm/rdmactl-$1-lab.$$
	run -0 "$RDMACTL" quota init
	CG=/sys/fs/cgroup/rdmactl-$1.$$.$BATS_TEST_NUMBER
	mkdir "$CG"
}
