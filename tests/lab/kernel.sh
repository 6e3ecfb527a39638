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

# Which versioned kernel package does linux-image-amd64 point at today? Reuse any cached one when the
# archive cannot be asked (offline rebuilds).
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }') || true
if [ -z "${pkg:-}" ]; then
	cached=$(ls -d "$lab"/kernel-* 2>/dev/null | tail -n 1) || true
	[ -n "$cached" ] || die "cannot resolve linux-image-amd64 (run 'apt-get update' or 'make deps')"
	pkg=linux-image-${cached##*/kernel-}
fi
kver=${pkg#linux-image-}
kdir="$lab/kernel-$kver"

if [ ! -f "$kdir/.done" ]; then
	rm -rf "$kdir" "$lab/dl"
	mkdir -p "$lab/dl"
	echo "lab: downloading $pkg (Debian stock kernel with rdma_rxe)" >&2
	(cd "$lab/dl" && apt-get download "$pkg" >/dev/null 2>"$lab/dl/apt.log") ||
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
		fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p fs/overlayfs/overlay; do
		f="$m/$mod.ko"
		[ -f "$f" ] || f="$m/$mod.ko.xz"
		[ -f "$f" ] || die "module $mod missing from $pkg"
		case "$f" in *.xz) xz -dc "$f" >"$tmp/mod/${mod##*/}.ko" ;; *) cp "$f" "$tmp/mod/" ;; esac
		echo "${mod##*/}" >>"$tmp/mod/order"
	done
	(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
fi
echo "$kdir"
