#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make deb: the Debian package (debian/) builds, lintian finds no error, it holds everything make install
# puts, and it installs and runs in the lab (a Debian guest whose root is this machine's, with an overlay).
# One test: building takes about a minute.

load helper

@test "make deb builds a package lintian accepts, with every file, that installs and runs in the lab" {
	local debdir=$BUILD.deb deb
	run make -C "$TOP" --no-print-directory OUT="$BUILD" deb
	assert_success
	refute_output --regexp '^E: '
	deb=$(ls "$debdir"/rdmactl_*_*.deb)
	[ -f "$deb" ]
	run -0 dpkg-deb -f "$deb" Package Architecture Depends
	assert_line 'Package: rdmactl'
	assert_line --regexp '^Depends: .*libibverbs1'
	run -0 dpkg-deb -c "$deb"
	local f
	for f in usr/bin/rdmactl usr/lib/rdmactl/librdmactl-preload.so \
		usr/share/bash-completion/completions/rdmactl \
		lib/systemd/system/rdmactl-export.service lib/systemd/system/rdmactl-ledger.service \
		usr/share/rdmactl/prometheus/rdmactl.rules.yml usr/share/rdmactl/grafana/rdmactl.json \
		usr/share/doc/rdmactl/copyright; do
		assert_line --regexp " \./$f\$"
	done
	for f in "$TOP"/man/*.8; do
		assert_line --regexp " \./usr/share/man/man8/${f##*/}\.gz\$"
	done
	# the units name the packaged binary
	run -0 dpkg-deb --fsys-tarfile "$deb"
	run -0 bash -c "dpkg-deb --fsys-tarfile '$deb' | tar -xOf - ./lib/systemd/system/rdmactl-export.service"
	assert_line --regexp '^ExecStart=/usr/bin/rdmactl export '

	# In the lab: dpkg -i, the packaged binary sees rxe0, the ledger unit's command makes a root-owned
	# policy, the preload of the package refuses (there is no systemd in the guest: units are only enabled).
	run "$TOP/tests/lab/run" --timeout 600 -- bash -c '
		set -e
		dpkg -i "$1" >/dev/null
		dpkg-query -W -f "\${Status}\n" rdmactl
		/usr/bin/rdmactl --version
		ls /etc/systemd/system/multi-user.target.wants/rdmactl-export.service
		cmd=$(sed -n "s/^ExecStart=//p" /lib/systemd/system/rdmactl-ledger.service)
		$cmd
		stat -c "ledger %U %a" /dev/shm/rdmactl.ledger
		/usr/bin/rdmactl export --once | grep "^rdmactl_device_info{device=\"rxe0\""
		/usr/bin/rdmactl export --once | grep "^rdmactl_source_up{source=\"ledger\"}"
		LD_PRELOAD=/usr/lib/rdmactl/librdmactl-preload.so RDMACTL_MAX_QP=0 \
			timeout 20 ibv_rc_pingpong -d rxe0 -g 1 127.0.0.1 2>&1 | grep -m1 "refused qp" || true
	' lab "$deb"
	assert_success
	assert_line 'install ok installed'
	assert_line --regexp '^rdmactl '
	assert_line 'ledger root 644'
	assert_line --regexp '^rdmactl_device_info\{device="rxe0"'
	assert_line 'rdmactl_source_up{source="ledger"} 1'
	assert_line --regexp '^rdmactl: refused qp for pid [0-9]+'
}
