#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl dev on rxe0: its maxima are ibv_devinfo -v's, its port and GID are sysfs's, and the node policy it
# shows is the file's (what the DRA driver, dra/, reads).

load ../helper

setup() {
	require_lab
	T=$BATS_TEST_TMPDIR
}

# ibv_devinfo -v's value of one attribute of rxe0 ("max_qp"), as a decimal number (max_mr_size is in hex,
# and may be 2^64-1: python's integers, not the shell's or jq's doubles).
devinfo() {
	local v
	v=$(ibv_devinfo -v -d rxe0 | awk -v k="$1:" '$1 == k { print $2; exit }')
	[ -n "$v" ] || { echo "ibv_devinfo -v has no $1" >&2; return 1; }
	python3 -c 'import sys; print(int(sys.argv[1], 0))' "$v"
}

# One value of rxe0 in rdmactl dev -j on stdin, exactly (python's json keeps 64-bit integers).
devmax() { # section kind
	python3 -c 'import sys, json
d = [d for d in json.load(sys.stdin)["devices"] if d["ibdev"] == "rxe0"][0]
print(d[sys.argv[1]][sys.argv[2]])' "$1" "$2"
}

@test "dev -j: rxe0's maxima are ibv_devinfo -v's, per kind" {
	run -0 --separate-stderr "$RDMACTL" dev -j
	local j=$output kind attr
	jq -e . <<<"$j" >/dev/null
	for kind in pd:max_pd cq:max_cq qp:max_qp srq:max_srq mr:max_mr mr_bytes:max_mr_size ah:max_ah mw:max_mw \
		wr:max_qp_wr; do
		attr=${kind#*:}
		kind=${kind%%:*}
		run -0 devmax max "$kind" <<<"$j"
		local mine=$output
		run -0 devinfo "$attr"
		[ "$mine" = "$output" ] || { echo "$kind: rdmactl dev $mine, ibv_devinfo $attr $output"; return 1; }
	done
	run -0 devmax max_per_object cqe <<<"$j"
	[ "$output" = "$(devinfo max_cqe)" ]
	run -0 jq -r '.devices[] | select(.ibdev == "rxe0") | .firmware' <<<"$j"
	[ "$output" = "$(ibv_devinfo -v -d rxe0 | awk '$1 == "fw_ver:" { print $2 }')" ]
	run -0 jq -r .version <<<"$j"
	[ "rdmactl $output" = "$("$RDMACTL" --version)" ]
}

@test "dev -j: rxe0's port, netdev, RoCE v2 IPv4 GID and uverbs node are the lab's" {
	run -0 --separate-stderr "$RDMACTL" dev show rxe0 -j
	local d
	d=$(jq -c '.devices[0]' <<<"$output")
	run -0 jq -r '.ibdev, .uverbs, (.ports[0] | .port, .link_layer, .state, .netdev,
		.roce_v2_ipv4_gid.index, .roce_v2_ipv4_gid.gid, .roce_v2_ipv4_gid.ip), .pci_address, .numa_node' <<<"$d"
	assert_output "$(printf '%s\n' rxe0 /dev/infiniband/uverbs0 1 Ethernet ACTIVE veth0 1 ::ffff:192.0.2.1 192.0.2.1 null null)"
	[ -c "$(jq -r .uverbs <<<"$d")" ]
	# the same GID as sysfs has at that index
	[ "$(cat /sys/class/infiniband/rxe0/ports/1/gids/1)" = 0000:0000:0000:0000:0000:ffff:c000:0201 ]
	# text: one line a device, a port, the maxima
	run -0 "$RDMACTL" dev show rxe0
	assert_line --regexp '^rxe0 /dev/infiniband/uverbs0 .* fw '
	assert_line --regexp '^  port 1 Ethernet ACTIVE netdev veth0 gid 1 ::ffff:192\.0\.2\.1 \(192\.0\.2\.1\)$'
	assert_line --regexp "^  max pd [0-9]+ cq [0-9]+ qp $(devinfo max_qp) "
	run -1 --separate-stderr "$RDMACTL" dev show nosuch0 -j
	[ -z "$output" ]
	[[ $stderr == *"no RDMA device 'nosuch0'"* ]]
}

@test "dev -j: the node policy's default, ceiling and budgets" {
	printf 'default qp=8 cq=16 mr=64 mr_bytes=8G\nceiling qp=256 mr_bytes=64G wr=unlimited\nbudget small qp=4\n' >"$T/p.conf"
	run -0 --separate-stderr "$RDMACTL" dev -j --policy "$T/p.conf"
	run -0 jq -c '.policy | [.found, .default, .ceiling, .budgets]' <<<"$output"
	assert_output '[true,{"cq":16,"qp":8,"mr":64,"mr_bytes":8589934592},{"qp":256,"mr_bytes":68719476736,"wr":"unlimited"},[{"name":"small","limits":{"qp":4}}]]'
	RDMACTL_CONTAINERS_CONF=$T/none run -1 --separate-stderr "$RDMACTL" dev -j
	[ -z "$output" ]
	[[ $stderr == *"cannot read the node policy"* ]]
}
