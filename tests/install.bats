#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make install/uninstall into a DESTDIR, and make help.

load helper

@test "make install puts binary, preload, man pages and completion under DESTDIR/PREFIX" {
	local d=$BATS_TEST_TMPDIR/root
	run make -C "$TOP" --no-print-directory OUT="$BUILD" install DESTDIR="$d" PREFIX=/usr
	assert_success
	[ -x "$d/usr/bin/rdmactl" ]
	[ -f "$d/usr/lib/rdmactl/librdmactl-preload.so" ]
	[ -f "$d/usr/share/man/man8/rdmactl.8" ]
	[ -f "$d/usr/share/bash-completion/completions/rdmactl" ]
	# the OCI hooks.d file where podman and CRI-O look, naming the installed binary
	run -0 jq -r .hook.path "$d/usr/share/containers/oci/hooks.d/rdmactl.json"
	assert_output /usr/bin/rdmactl
	if [ -f /usr/include/slurm/spank.h ]; then
		[ -f "$d/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_rdmactl.so" ]
	fi
	run "$d/usr/bin/rdmactl" --version
	assert_success
	run make -C "$TOP" --no-print-directory OUT="$BUILD" uninstall DESTDIR="$d" PREFIX=/usr
	assert_success
	[ ! -e "$d/usr/bin/rdmactl" ]
	[ ! -e "$d/usr/share/man/man8/rdmactl.8" ]
	[ ! -e "$d/usr/share/containers/oci/hooks.d/rdmactl.json" ]
	[ ! -e "$d/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_rdmactl.so" ]
}

@test "make install PREFIX=~/.local as a user: everything under PREFIX, the hooks.d file and Slurm plugin too (issue 51)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	local d
	d=$(mktemp -d /tmp/rdmactl-home.XXXXXX)
	chmod 777 "$d"
	# -o installed: install what is built, as that user could not build into root's OUT
	run setpriv --reuid=65534 --regid=65534 --clear-groups make -C "$TOP" --no-print-directory -o installed \
		OUT="$BUILD" install PREFIX="$d/.local"
	[ "$status" -eq 0 ] || { rm -rf "$d"; fail "make install as a user failed: $output"; }
	[ -x "$d/.local/bin/rdmactl" ]
	run -0 jq -r .hook.path "$d/.local/share/containers/oci/hooks.d/rdmactl.json"
	assert_output "$d/.local/bin/rdmactl"
	[ -f "$d/.local/lib/systemd/system/rdmactl-ledger.service" ]
	if [ -f /usr/include/slurm/spank.h ]; then
		[ -f "$d/.local/lib/slurm-wlm/spank_rdmactl.so" ]
	fi
	rm -rf "$d"
	# a system PREFIX keeps the engines' own directories
	run -0 make -C "$TOP" --no-print-directory -n -o installed OUT="$BUILD" install PREFIX=/usr/local
	assert_output --partial "/usr/share/containers/oci/hooks.d/rdmactl.json"
}

@test "every man page renders without warnings" {
	for m in "$TOP"/man/*.8; do
		run bash -c "LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l '$m' 2>&1 >/dev/null"
		assert_output ""
	done
}

@test "there is a man page for rdmactl and for every subcommand" {
	[ -f "$TOP/man/rdmactl.8" ]
	for c in cdi dev doctor monitor oci-hook pingpong quota run slurm top; do
		[ -f "$TOP/man/rdmactl-$c.8" ] || { echo "man/rdmactl-$c.8 missing"; return 1; }
	done
}

@test "make help lists the targets" {
	run -0 make -C "$TOP" --no-print-directory help
	for t in check demo lab install deps; do
		assert_output --partial "  $t"
	done
}

@test "the preload exports nothing but its own symbols" {
	run bash -c "nm -D --defined-only '$PRELOAD' | awk '{print \$3}'"
	assert_success
	refute_output --regexp '^(parse_|pr_err|util_|out_)'
}

@test "the Slurm plugin is built where slurm/spank.h is, and exports only what SPANK looks up" {
	if [ ! -f /usr/include/slurm/spank.h ]; then
		[ ! -e "$BUILD/spank_rdmactl.so" ]
		return
	fi
	run bash -c "nm -D --defined-only '$BUILD/spank_rdmactl.so' | awk '{print \$3}' | sort"
	assert_success
	assert_output "$(printf '%s\n' plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init \
		slurm_spank_init_post_opt slurm_spank_task_init slurm_spank_task_post_fork spank_plugin_version)"
}

@test "SPANK=1 requires slurm/spank.h and SPANK=0 leaves the plugin out; the Debian package builds it always (issue 51)" {
	# a host without Slurm's headers: /usr/include/slurm hidden in a mount namespace of our own
	run -2 unshare -rm sh -c 'mount -t tmpfs none /usr/include/slurm 2>/dev/null || true
		exec make -C "$1" --no-print-directory -n OUT="$2" SPANK=1 installed' sh "$TOP" "$BUILD"
	assert_output --partial "SPANK=1: no /usr/include/slurm/spank.h to build the Slurm plugin with (apt-get install libslurm-dev)"
	run -0 unshare -rm sh -c 'mount -t tmpfs none /usr/include/slurm 2>/dev/null || true
		exec make -C "$1" --no-print-directory -n OUT="$2" installed' sh "$TOP" "$BUILD"
	refute_output --partial spank_rdmactl
	run -0 make -C "$TOP" --no-print-directory -n OUT="$BATS_TEST_TMPDIR/out" SPANK=0 installed
	refute_output --partial spank_rdmactl
	# the package: libslurm-dev among its build dependencies, and SPANK=1 in its build
	run -0 grep -A30 '^Build-Depends:' "$TOP/debian/control"
	assert_line --regexp '^ +libslurm-dev,?$'
	run -0 grep '^MAKEFLAGS_DEB *=' "$TOP/debian/rules"
	assert_output --regexp ' SPANK=1( |$)'
}
