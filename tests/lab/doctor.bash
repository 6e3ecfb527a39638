# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl doctor's lab suites (doctor.bats with BPF LSM, nolsm/doctor.bats without): a ledger of their own,
# the node policy of dist/kubernetes as $POL, a cgroup path $CG, and check_of.

# Setup of both suites: $1 is "active" or "inactive", what BPF LSM must be in this boot.
doctor_setup() {
	require_lab
	if [ "$1" = active ] && ! grep -qw bpf /sys/kernel/security/lsm; then
		echo "this suite needs BPF LSM active (the lab's default boot)" >&2
		return 1
	fi
	if [ "$1" = inactive ] && grep -qw bpf /sys/kernel/security/lsm; then
		echo "this suite needs a lab booted without BPF LSM (make check-lab runs it so)" >&2
		return 1
	fi
	export RDMACTL_LEDGER=/dev/shm/rdmactl-doctor-lab.$$
	unset RDMACTL_CONTAINERS_CONF
	POL=$BATS_TEST_TMPDIR/containers.conf
	python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "ConfigMap":
        sys.stdout.write(d["data"]["containers.conf"])' "$TOP/dist/kubernetes/rdmactl-node.yaml" >"$POL"
	grep -q '^default ' "$POL"
	CG=/sys/fs/cgroup/rdmactl-doctor.$$
}

# The status and reason of check $1 (kind or source $2) in the JSON document $DOC.
check_of() {
	jq -er --arg c "$1" --arg s "${2:-}" \
		'[.checks[] | select(.check == $c and ($s == "" or .kind == $s or .source == $s))][0] | "\(.status) \(.reason)"' <<<"$DOC"
}
