# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared by every bats suite (host and lab): assertions, paths, and lab-only guards.
bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
RDMACTL=$BUILD/rdmactl
PRELOAD=$BUILD/librdmactl-preload.so
export TOP BUILD RDMACTL PRELOAD

# Lab suites must run inside the lab: outside it they fail (never skip) and say how to run them.
require_lab() {
	if [ -z "${LAB_GUEST:-}" ]; then
		echo "this suite runs inside the soft-RoCE lab: make check-lab (or tests/lab/run bats $BATS_TEST_FILENAME)" >&2
		return 1
	fi
}

# Lab: the NIC drivers whose own uverbs methods the kernel quotas know (mlx5_ib; bnxt_re where the kernel has
# it), loaded without their hardware, as on a ConnectX or Broadcom host.
load_nic_drivers() {
	modprobe mlx5_ib || return 1
	if modinfo bnxt_re >/dev/null 2>&1; then modprobe bnxt_re || return 1; fi
}

# Wait up to $1 seconds for a command to succeed.
wait_for() {
	local t=$1; shift
	local end=$((SECONDS + t))
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

# Drive the bash completion the way readline does: complete_words rdmactl WORD... (the last word is the
# one being completed); prints the candidates, sorted.
complete_words() {
	source "$TOP/completions/rdmactl"
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_rdmactl
	printf '%s\n' "${COMPREPLY[@]}" | sort
}

# Host suites' teardown: the background processes of the test ($PIDS) killed and reaped, and the cgroup tree
# it made ($CGT, deepest first).
kill_pids_and_cgroups() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -z "${CGT:-}" ] || find "$CGT" -depth -type d -exec rmdir {} + 2>/dev/null || true
}
