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
	# the description is today's: kernel limits, the OCI hook, CDI, Slurm, and the exporter it starts
	run -0 dpkg-deb -f "$deb" Description
	local d=${output//$'\n '/ }
	for f in 'BPF LSM' 'rdmactl oci-hook' 'rdmactl cdi' 'SPANK plugin' 'rdmactl doctor' \
		'enabled and started on installation' 'rdmactl-export(8) says how to bind it to one'; do
		[[ $d == *"$f"* ]] || { echo "Description: no '$f'" >&2; return 1; }
	done
	run -0 dpkg-deb -c "$deb"
	local f
	for f in usr/bin/rdmactl usr/lib/rdmactl/librdmactl-preload.so \
		usr/share/bash-completion/completions/rdmactl \
		lib/systemd/system/rdmactl-export.service lib/systemd/system/rdmactl-ledger.service \
		usr/share/rdmactl/prometheus/rdmactl.rules.yml usr/share/rdmactl/grafana/rdmactl.json \
		usr/share/doc/rdmactl/copyright usr/share/containers/oci/hooks.d/rdmactl.json \
		usr/lib/x86_64-linux-gnu/slurm-wlm/spank_rdmactl.so; do
		assert_line --regexp " \./$f\$"
	done
	for f in "$TOP"/man/*.8; do
		assert_line --regexp " \./usr/share/man/man8/${f##*/}\.gz\$"
	done
	# the units name the packaged binary
	run -0 dpkg-deb --fsys-tarfile "$deb"
	run -0 bash -c "dpkg-deb --fsys-tarfile '$deb' | tar -xOf - ./lib/systemd/system/rdmactl-export.service"
	assert_line --regexp '^ExecStart=/usr/bin/rdmactl export '

	# In the lab: dpkg -i; the units run under a real systemd (PID 1 of a namespace of its own, see
	# tests/lab/systemd-ns): the ledger unit makes a root-owned policy, the export service starts as a user of
	# its own with only CAP_BPF and CAP_DAC_READ_SEARCH, reads netlink, the ledger, the monitor's pinned
	# counters and the kernel quotas' maps through its sandbox, and stops cleanly; the preload of the package
	# refuses.
	run "$TOP/tests/lab/run" --timeout 600 -- bash -c '
		set -e
		ns=$2/tests/lab/systemd-ns
		dpkg -i "$1" >/tmp/dpkg.out
		grep "^rdmactl: node check" /tmp/dpkg.out || true
		dpkg-query -W -f "\${Status}\n" rdmactl
		/usr/bin/rdmactl --version
		echo "asan $(ldd /usr/bin/rdmactl | grep -c libasan)"
		"$ns" start
		echo "export $("$ns" systemctl is-enabled rdmactl-export.service)"
		"$ns" systemctl list-dependencies --plain --no-pager sysinit.target | grep -o "rdmactl-ledger.service"
		rdmactl monitor -j >/tmp/mon 2>&1 3>&- &
		for i in $(seq 120); do grep -q "\"event\":\"start\"" /tmp/mon && break; sleep 0.5; done
		"$ns" systemctl start rdmactl-ledger.service
		stat -c "ledger %U %a" /dev/shm/rdmactl.ledger
		/usr/bin/rdmactl quota set qp 500 --global --kernel
		"$ns" systemctl start rdmactl-export.service
		for i in $(seq 120); do curl -sf -o /tmp/scrape http://127.0.0.1:9476/metrics && break; sleep 0.5; done
		grep -E "^rdmactl_(source_up|device_info|kernel_quota_limit)" /tmp/scrape
		/usr/bin/rdmactl quota unset qp --global --kernel
		grep -c "^rdmactl_creates_total{device=\"rxe0\"" /tmp/scrape
		p=$(pgrep -f "^/usr/bin/rdmactl export")
		echo "export uid $(stat -c %u "/proc/$p")"
		grep -E "^Cap(Eff|Bnd):" "/proc/$p/status"
		"$ns" systemctl stop rdmactl-export.service
		"$ns" systemctl show -p Result -p ExecMainStatus rdmactl-export.service
		"$ns" stop
		LD_PRELOAD=/usr/lib/rdmactl/librdmactl-preload.so RDMACTL_MAX_QP=0 \
			timeout 20 ibv_rc_pingpong -d rxe0 -g 1 127.0.0.1 2>&1 | grep -m1 "refused qp" || true
	' lab "$deb" "$TOP"
	assert_success
	assert_line 'install ok installed'
	# the postinst says what the node can enforce (rdmactl doctor): BPF LSM and bpffs here, no node policy
	assert_line 'rdmactl: node check (rdmactl doctor): kernel limits can be set here (no node policy)'
	assert_line --regexp '^rdmactl '
	# never a sanitized build, even from make check SANITIZE=1
	assert_line 'asan 0'
	assert_line 'export enabled'
	assert_line 'rdmactl-ledger.service'
	assert_line 'ledger root 644'
	assert_line --regexp '^rdmactl_device_info\{device="rxe0"'
	assert_line 'rdmactl_source_up{source="netlink"} 1'
	assert_line 'rdmactl_source_up{source="ledger"} 1'
	assert_line 'rdmactl_source_up{source="monitor"} 1'
	assert_line 'rdmactl_source_up{source="kernel"} 1'
	assert_line 'rdmactl_kernel_quota_limit{scope="global",type="qp"} 500'
	# one series per kind the monitor counts, on rxe0
	assert_line --regexp '^[1-9][0-9]*$'
	# a user of its own (DynamicUser), not root
	assert_line --regexp '^export uid [1-9][0-9]*$'
	# CAP_DAC_READ_SEARCH (bit 2) and CAP_BPF (bit 39), nothing else
	assert_line $'CapEff:\t0000008000000004'
	assert_line $'CapBnd:\t0000008000000004'
	assert_line 'Result=success'
	assert_line 'ExecMainStatus=0'
	assert_line --regexp '^rdmactl: refused qp for pid [0-9]+'
}
