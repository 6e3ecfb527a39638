#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Install the Debian packages that building, testing and the soft-RoCE lab need (make deps).
set -euo pipefail

pkgs=(
	# build
	gcc make pkg-config clang llvm libclang-rt-14-dev
	libibverbs-dev librdmacm-dev libmnl-dev libbpf-dev bpftool libelf-dev zlib1g-dev
	libjson-c-dev libncurses-dev
	# tests and lab peers
	bats bats-support bats-assert jq valgrind tmux curl prometheus
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2 util-linux
	# UCX's ucx_perftest, which tests/hw/kq-accept runs under a kernel QP limit (tests/lab/hw.bats)
	ucx-utils
	# make deb (tests/deb.bats), the units and rules (tests/dist.bats: systemd-analyze, promtool from prometheus)
	debhelper dpkg-dev fakeroot lintian systemd python3
	# the engines of the Slurm plugin and the OCI hook (slurm.bats, oci.bats)
	slurm-wlm libslurm-dev podman runc catatonit
	# the CDI spec's JSON schema (the version podman 4.3 reads) and a validator for it (tests/cdi.bats); YAML for
	# the Kubernetes files of dist/ (tests/k8s-dist.bats)
	golang-github-container-orchestrated-devices-container-device-interface-dev python3-jsonschema python3-yaml
	# the lab's Kubernetes (tests/k8s: the pods' network, the cluster's certificates; Go is the machine's own)
	containernetworking-plugins openssl
	# the lab
	qemu-system-x86 busybox-static cpio kmod file xz-utils
)

missing=()
for p in "${pkgs[@]}"; do
	[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "make deps: missing packages: ${missing[*]}" >&2
	echo "make deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "make deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}"
}
