# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# What iproute2 reports per process, and the monitor's counters and pinned status: shared by tests/lab/top.bats
# and tests/lab/export.bats (counts from the monitor's counters, issue 32). The caller sets HOLDRES, and T and pids in its setup.

# Start holdres in the background, wait for "ready"; its pid goes to $hr.
start_holdres() {
	local out=$T/holdres.$RANDOM
	"$HOLDRES" "$@" >"$out" 2>&1 3>&- &
	hr=$!
	pids+=("$hr")
	wait_for 60 grep -q ready "$out" || { cat "$out" >&2; return 1; }
}

# The process (tgid) of a thread id, read the way top reads it; the id itself once /proc lacks it.
tgid_of() {
	local k v
	while read -r k v; do
		[ "$k" = Tgid: ] && { echo "$v"; return; }
	done <"/proc/$1/status" 2>/dev/null
	echo "$1"
}

# What iproute2 reports, grouped the way top groups: "p<tgid>" per process (each thread id mapped to its
# tgid with /proc/<tid>/status), "k<owner>" per kernel owner, "u" for objects without an owner.
rdma_grouped() {
	local k p map
	for k in ctx pd cq qp srq mr cm_id; do
		rdma -j res show "$k" >"$T/$k.json" || return 1
	done
	map=$(for p in $(jq -r '.[] | .pid // empty' "$T"/{ctx,pd,cq,qp,srq,mr,cm_id}.json | sort -u); do
		echo "$p $(tgid_of "$p")"
	done | jq -Rn '[inputs | split(" ") | { (.[0]): (.[1] | tonumber) }] | add // {}')
	jq -S -n --argjson map "$map" \
		--slurpfile ctx "$T/ctx.json" --slurpfile pd "$T/pd.json" --slurpfile cq "$T/cq.json" \
		--slurpfile qp "$T/qp.json" --slurpfile srq "$T/srq.json" --slurpfile mr "$T/mr.json" \
		--slurpfile cm_id "$T/cm_id.json" '
		def user: .pid == null and (.comm // "") == "";
		# a user object whose creating thread exited: the process of its context (a PD or CQ names its
		# context, a QP, MR or SRQ its PD), as iproute2 lists them (ctxn, pdn)
		($ctx[0] | map(select(.pid) | { key: "\(.ifname)/\(.ctxn)", value: .pid }) | from_entries) as $cp
		| ($pd[0] | map({ key: "\(.ifname)/\(.pdn)", value: (.pid // (if user then $cp["\(.ifname)/\(.ctxn)"] else null end)) })
			| map(select(.value)) | from_entries) as $pp
		| [ ($ctx[0][] | .k = "ctx"), ($pd[0][] | .k = "pd"), ($cq[0][] | .k = "cq"), ($qp[0][] | .k = "qp"),
		  ($srq[0][] | .k = "srq"), ($mr[0][] | .k = "mr"), ($cm_id[0][] | .k = "cm_id") ]
		| map(if user and .ctxn != null and .k != "ctx" then .pid = $cp["\(.ifname)/\(.ctxn)"]
			elif user and .pdn != null and .k != "pd" then .pid = $pp["\(.ifname)/\(.pdn)"] else . end)
		| map(.owner = (if .pid then "p\($map[.pid | tostring])"
				elif (.comm // "") != "" then "k" + (.comm | ltrimstr("[") | rtrimstr("]"))
				else "u" end))
		| group_by(.owner)
		| map({ key: .[0].owner,
			value: ({ ctx: 0, pd: 0, cq: 0, qp: 0, srq: 0, mr: 0, cm_id: 0 }
				+ (group_by(.k) | map({ key: .[0].k, value: length }) | from_entries)
				+ { mr_bytes: (map(select(.k == "mr") | .mrlen) | add // 0) }) })
		| from_entries'
}

# Start a monitor (-v tells whether its counts are complete); wait until it said either way.
start_monitor() {
	"$RDMACTL" monitor -v -j >"$T/mon" 2>"$T/mon.err" 3>&- &
	mon=$!
	pids+=("$mon")
	wait_for 60 grep -q "counts complete\|no complete counts" "$T/mon.err" || { cat "$T/mon.err" >&2; return 1; }
}

# A monitor on a host without user objects (its counts complete), then two holders (the first's pid in $a).
monitor_then_holders() {
	start_monitor || return 1
	grep -q "counts complete" "$T/mon.err" || { cat "$T/mon.err" >&2; return 1; }
	start_holdres -q 13 -m 3M -t 4 || return 1
	a=$hr
	start_holdres -q 5 -m 100K -t 2
}

# iproute2's view, processes only (the counters have no kernel owners).
rdma_procs() {
	rdma_grouped | jq -S 'with_entries(select(.key | startswith("p")))'
}

# Run "$@" (it writes $T/got, grouped as rdma_procs groups) and rdma_procs (into $T/want) until they agree, 3
# times at most: iproute2's view may move meanwhile (a peer still setting up). The caller diffs them after.
settle_procs() {
	local i
	for i in 1 2 3; do
		"$@" || return 1
		rdma_procs >"$T/want" || return 1
		cmp -s "$T/want" "$T/got" && return 0
		sleep 1
	done
}

# Byte $1 of the monitor's pinned status, as 0xNN.
status_peek() {
	bpftool -j map lookup pinned /sys/fs/bpf/rdmactl/status key 0 0 0 0 | jq -r --argjson o "$1" '.value[$o]'
}

# Write byte $2 (0xNN) at offset $1 of the monitor's pinned status (struct mon_status, bpf/restrack.h).
status_poke() {
	local v
	v=$(bpftool -j map lookup pinned /sys/fs/bpf/rdmactl/status key 0 0 0 0 |
		jq -r --argjson o "$1" --arg b "$2" '.value | .[$o] = $b | map(ltrimstr("0x")) | join(" ")')
	bpftool map update pinned /sys/fs/bpf/rdmactl/status key 0 0 0 0 value hex $v
}
