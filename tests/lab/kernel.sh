#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetch Debian's stock kernel into a cache under the build tree (never installed on the host) and build
# the lab's initramfs. Prints the cache directory. Usage: kernel.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: kernel.sh BUILD_DIR}
lab="$build/lab"
mkdir -p "$lab"
lab=$(cd "$lab" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "lab: $*" >&2; exit 1; }

# Which kernel: LAB_KERNEL=stable (the default) is what linux-image-amd64 points at in this machine's apt
# sources; LAB_KERNEL=backports is the newest linux-image-6.*-amd64 in Debian bookworm-backports (a newer
# kernel, for what only newer kernels do), fetched through a private apt configuration that verifies the
# archive's signature against the system keyring. A cached kernel is reused when the archive cannot be asked.
which=${LAB_KERNEL:-stable}
apt_opts=()
case "$which" in
stable)
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }') || true
	cache_glob="kernel-6.1.*"
	;;
backports)
	suite=bookworm-backports
	apt_dir="$lab/apt-$suite"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
	echo "deb http://deb.debian.org/debian $suite main" >"$apt_dir/sources.list"
	apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::State::status=/dev/null"
		-o APT::Sandbox::User=root -o Debug::NoLocking=1)
	if [ ! -f "$apt_dir/updated" ] || [ -n "$(find "$apt_dir/updated" -mmin +1440)" ]; then
		apt-get "${apt_opts[@]}" -qq update >"$apt_dir/update.log" 2>&1 && touch "$apt_dir/updated" ||
			echo "lab: apt-get update for $suite failed: $(tail -n 1 "$apt_dir/update.log")" >&2
	fi
	pkg=$(apt-cache "${apt_opts[@]}" pkgnames linux-image-6. 2>/dev/null |
		grep -E '^linux-image-[0-9.]+\+deb[0-9]+-amd64$' | sort -V | tail -n 1) || true
	cache_glob="kernel-6.*+deb*-amd64"
	;;
*) die "LAB_KERNEL=$which: use 'stable' or 'backports'" ;;
esac
if [ -z "${pkg:-}" ]; then
	cached=$(ls -d "$lab"/$cache_glob 2>/dev/null | sort -V | tail -n 1) || true
	[ -n "$cached" ] || die "cannot resolve the $which kernel package (run 'apt-get update' or 'make deps')"
	pkg=linux-image-${cached##*/kernel-}
fi
kver=${pkg#linux-image-}
kdir="$lab/kernel-$kver"

if [ ! -f "$kdir/.done" ]; then
	rm -rf "$kdir" "$lab/dl"
	mkdir -p "$lab/dl"
	echo "lab: downloading $pkg (Debian stock kernel with rdma_rxe)" >&2
	(cd "$lab/dl" && apt-get "${apt_opts[@]}" download "$pkg" >/dev/null 2>"$lab/dl/apt.log") ||
		die "apt-get download $pkg failed: $(tail -n 1 "$lab/dl/apt.log")"
	dpkg -x "$lab"/dl/*.deb "$kdir"
	[ -f "$kdir/boot/vmlinuz-$kver" ] || die "$pkg has no vmlinuz"
	depmod -b "$kdir" "$kver"
	rm -rf "$lab/dl"
	touch "$kdir/.done"
fi

# The initramfs only needs what it takes to mount the shared root: virtio, 9p and overlay.
initrd="$kdir/initramfs.cpio.gz"
if [ ! -f "$initrd" ] || [ "$here/init" -nt "$initrd" ] || [ "$0" -nt "$initrd" ]; then
	busybox=$(command -v busybox || true)
	[ -n "$busybox" ] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
		busybox=/bin/busybox
	[ -x "$busybox" ] || die "busybox-static is missing (make deps)"
	tmp=$(mktemp -d "$lab/initrd.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp"/{bin,dev,proc,sys,mod,lower,upper,newroot}
	cp "$busybox" "$tmp/bin/busybox"
	cp "$here/init" "$tmp/init"
	chmod 755 "$tmp/init"
	m="$kdir/lib/modules/$kver/kernel"
	for mod in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev \
		drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci fs/netfs/netfs \
		"fs/fscache/fscache?" net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p fs/overlayfs/overlay; do
		opt=${mod%\?} # NAME? : only in some kernels (fscache went into netfs in 6.8)
		[ "$opt" = "$mod" ] && opt= || mod=$opt
		f="$m/$mod.ko"
		[ -f "$f" ] || f="$m/$mod.ko.xz"
		if [ ! -f "$f" ]; then
			# built into this kernel, or (NAME?) absent from it
			grep -qx "kernel/$mod.ko" "$kdir/lib/modules/$kver/modules.builtin" 2>/dev/null && continue
			[ -n "$opt" ] && continue
			die "module $mod missing from $pkg"
		fi
		case "$f" in *.xz) xz -dc "$f" >"$tmp/mod/${mod##*/}.ko" ;; *) cp "$f" "$tmp/mod/" ;; esac
		echo "${mod##*/}" >>"$tmp/mod/order"
	done
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
fi
echo "$kdir"
