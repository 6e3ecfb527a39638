#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl export in the lab: Debian's Prometheus scrapes it while perftest holds QPs in a cgroup with a quota
# (objects per cgroup and process, limits, refusals that rise), the monitor's counters, rdma.max, the cost
# of a scrape against rdmactl top.

load ../helper
load counters

EXV=$BUILD/lab-progs/exverbs
HOLDRES=$BUILD/lab-progs/holdres
XPORT=19476
PPORT=19090

setup() {
	require_lab
	T=$BATS_TEST_TMPDIR
	export RDMACTL_LEDGER=$T/ledger
	"$RDMACTL" quota init >/dev/null
	CG=/sys/fs/cgroup/rdmactl-export.$$.$BATS_TEST_NUMBER
	REL=/${CG#/sys/fs/cgroup/}
	mkdir "$CG"
	pids=()
}

teardown() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	pkill -x ib_write_bw 2>/dev/null || true
	pkill -f "$BUILD/lab-progs/" 2>/dev/null || true
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	wait_for 10 rmdir "$CG" 2>/dev/null || true
}

listening() {
	ss -Hltn "sport = :$1" | grep -q .
}

# rdmactl export on 127.0.0.1:$XPORT with extra options; its pid in $XPID.
start_export() {
	"$RDMACTL" -v export --listen "127.0.0.1:$XPORT" "$@" 2>"$T/export.err" 3>&- &
	XPID=$!
	pids+=("$XPID")
	wait_for 30 listening "$XPORT" || { cat "$T/export.err" >&2; return 1; }
}

# Debian's Prometheus, scraping the exporter every second; the TSDB under the test's directory.
start_prometheus() {
	cat >"$T/prometheus.yml" <<-EOF
		global:
		  scrape_interval: 1s
		  scrape_timeout: 1s
		  evaluation_interval: 1s
		scrape_configs:
		  - job_name: rdmactl
		    static_configs:
		      - targets: ['127.0.0.1:$XPORT']
	EOF
	prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
		--web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T/prometheus.log" 2>&1 3>&- &
	pids+=($!)
	local t0=$SECONDS
	wait_for 300 curl -sf -o /dev/null "http://127.0.0.1:$PPORT/-/ready" ||
		{ echo "prometheus not ready after $((SECONDS - t0)) s:" >&2; tail -n 20 "$T/prometheus.log" >&2; return 1; }
	echo "# prometheus ready after $((SECONDS - t0)) s" >&3
}

# The value of a PromQL query with exactly one result, else "n=COUNT".
promval() {
	curl -s --max-time 10 --get --data-urlencode "query=$1" "http://127.0.0.1:$PPORT/api/v1/query" |
		jq -r 'if .data.result | length == 1 then .data.result[0].value[1] else "n=\(.data.result | length)" end'
}

# Wait (up to $3 seconds, default 60) until a query's value is $2.
wait_val() {
	local q=$1 want=$2 end=$((SECONDS + ${3:-60})) got
	while :; do
		got=$(promval "$q")
		[ "$got" = "$want" ] && return 0
		[ $SECONDS -lt $end ] || { echo "query $q: got '$got', want '$want'" >&2; return 1; }
		sleep 0.5
	done
}

# Objects of one kind the kernel lists for command name $1.
kernel_qps() {
	rdma -j res show qp | jq --arg c "$1" '[.[] | select(.comm == $c)] | length'
}

@test "Prometheus scrapes export: 4 QPs of ib_write_bw in a cgroup with a quota, per process, the limit, refusals that rise" {
	run -0 "$RDMACTL" quota set qp 5 --cgroup "$CG"
	start_export --per-process --max-age 0
	start_prometheus
	# the server side in the cgroup, under the ledger; the client outside both
	timeout 300 "$RDMACTL" run --job wbw --cgroup "$CG" -- ib_write_bw -d rxe0 -x 1 -q 4 -D 200 -p 18610 \
		>"$T/srv" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 listening 18610 || { cat "$T/srv" >&2; false; }
	timeout 300 ib_write_bw -d rxe0 -x 1 -q 4 -D 200 -p 18610 192.0.2.1 >"$T/cli" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 bash -c '[ "$(rdma -j res show qp | jq "[.[] | select(.comm == \"ib_write_bw\")] | length")" = 8 ]' ||
		{ cat "$T/srv" "$T/cli" >&2; false; }

	wait_val "sum(rdmactl_objects{cgroup=\"$REL\",device=\"rxe0\",type=\"qp\"})" 4
	wait_val "rdmactl_quota_limit{scope=\"cgroup\",owner=\"$REL\",type=\"qp\"}" 5
	wait_val "rdmactl_quota_usage{scope=\"cgroup\",owner=\"$REL\",type=\"qp\"}" 4
	wait_val "rdmactl_quota_usage{owner=\"$REL\",type=\"qp\"} / rdmactl_quota_limit{owner=\"$REL\",type=\"qp\"}" 0.8
	wait_val "rdmactl_processes{cgroup=\"$REL\",managed=\"true\"}" 1
	# per process: both perftest processes have their 4 QPs; the server is the one in the cgroup
	wait_val "count(rdmactl_process_objects{comm=\"ib_write_bw\",type=\"qp\"} == 4)" 2
	wait_val "rdmactl_process_objects{comm=\"ib_write_bw\",cgroup=\"$REL\",type=\"qp\"}" 4
	wait_val "rdmactl_process_managed{comm=\"ib_write_bw\",cgroup=\"$REL\"}" 1
	wait_val "count(rdmactl_process_managed{comm=\"ib_write_bw\"} == 0)" 1
	# device and port
	wait_val 'rdmactl_port_state{device="rxe0",port="1"}' 4
	wait_val 'rdmactl_port_info{device="rxe0",port="1",netdev="veth0",state="ACTIVE"}' 1
	wait_val 'rdmactl_source_up{source="netlink"}' 1
	wait_val 'rdmactl_source_up{source="ledger"}' 1

	# refusals rise: a second program in the cgroup gets 1 of its 2 QPs (4 + 1 = 5), then one under --max-qp 1
	wait_val "rdmactl_refusals_total{scope=\"cgroup\",type=\"qp\"}" 0
	run timeout 60 "$RDMACTL" run --job second --cgroup "$CG" -- "$EXV" -q 2
	assert_line "qp created=1 refused=1 errno=ENOMEM"
	wait_val "rdmactl_refusals_total{scope=\"cgroup\",type=\"qp\"}" 1
	# and against that cgroup by name, with the labels of its limit: the refusals per tenant
	wait_val "rdmactl_quota_refusals_total{scope=\"cgroup\",owner=\"$REL\",type=\"qp\"}" 1
	run timeout 60 "$RDMACTL" run --job third --max-qp 1 -- "$EXV" -q 2
	assert_line "qp created=1 refused=1 errno=ENOMEM"
	wait_val "rdmactl_refusals_total{scope=\"job\",type=\"qp\"}" 1
	wait_val 'sum(rdmactl_refusals_total{type="qp"})' 2
	wait_val 'rdmactl_refusals_total{scope="unattributed",type="qp"}' 0
}

@test "a real scrape passes promtool; without --per-process there are no per-process series" {
	"$HOLDRES" -q 3 -m 1M -t 2 >"$T/h" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q ready "$T/h"
	start_export
	run -0 curl -sf "http://127.0.0.1:$XPORT/metrics"
	local out=$output
	run promtool check metrics <<<"$out"
	assert_success
	run grep -c '^rdmactl_process_' <<<"$out"
	assert_output 0
	run grep -E '^rdmactl_objects\{cgroup="[^"]*",device="rxe0",type="qp"\} [1-9]' <<<"$out"
	assert_success
	run -0 "$RDMACTL" export --once --per-process
	out=$output
	run promtool check metrics <<<"$out"
	assert_success
	run grep -E "^rdmactl_process_objects\\{pid=\"${pids[0]}\",comm=\"holdres\",cgroup=\"[^\"]*\",device=\"rxe0\",type=\"qp\"\\} 3$" <<<"$out"
	assert_success
	run grep -E "^rdmactl_process_mr_bytes\\{pid=\"${pids[0]}\",.*\\} 2097152$" <<<"$out"
	assert_success
	# a tenant's process name is any bytes: quotes, backslashes, bytes that are not UTF-8, spaces
	local odd
	odd=$T/$(printf 'a"b\\c\xffd e')
	cp "$HOLDRES" "$odd"
	"$odd" -q 1 -m 0 >"$T/odd" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q ready "$T/odd"
	run -0 --separate-stderr "$RDMACTL" export --once --per-process
	out=$output
	run promtool check metrics <<<"$out"
	assert_success
	grep "^rdmactl_process_objects{pid=\"${pids[-1]}\"" <<<"$out" | head -n 1 # shown when a check fails
	run grep -c "^rdmactl_process_objects{pid=\"${pids[-1]}\",comm=\"a" <<<"$out"
	[ "$output" -ge 1 ]
	# unprivileged: the netlink dumps and /proc are enough for the objects; the BPF counters are not there
	run -0 --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMACTL" export --once --per-process
	out=$output
	run grep -E "^rdmactl_process_objects\\{pid=\"${pids[0]}\",comm=\"holdres\",.*type=\"qp\"\\} 3$" <<<"$out"
	assert_success
	run grep -Fx 'rdmactl_source_up{source="netlink"} 1' <<<"$out"
	assert_success
}

@test "rdma.max and rdma.current of the cgroup are exported as rdmacg_limit and rdmacg_usage" {
	echo "rxe0 hca_handle=2 hca_object=10" >"$CG/rdma.max"
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -q 2 -m 0 -t 1' _ "$CG" "$HOLDRES" >"$T/h" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q ready "$T/h" || { cat "$T/h" >&2; false; }
	local cur
	cur=$(sed -n 's/^rxe0 hca_handle=1 hca_object=\([0-9]*\) *$/\1/p' "$CG/rdma.current")
	[ -n "$cur" ] || { cat "$CG/rdma.current" >&2; false; }
	run -0 "$RDMACTL" export --once
	local out=$output
	run grep -F "rdmactl_rdmacg_limit{cgroup=\"$REL\",device=\"rxe0\",resource=\"hca_handle\"} 2" <<<"$out"
	assert_success
	run grep -F "rdmactl_rdmacg_limit{cgroup=\"$REL\",device=\"rxe0\",resource=\"hca_object\"} 10" <<<"$out"
	assert_success
	run grep -F "rdmactl_rdmacg_usage{cgroup=\"$REL\",device=\"rxe0\",resource=\"hca_handle\"} 1" <<<"$out"
	assert_success
	run grep -F "rdmactl_rdmacg_usage{cgroup=\"$REL\",device=\"rxe0\",resource=\"hca_object\"} $cur" <<<"$out"
	assert_success
	run grep -F "rdmactl_objects{cgroup=\"$REL\",device=\"rxe0\",type=\"qp\"} 2" <<<"$out"
	assert_success
	# "max" is no limit: no series
	echo "rxe0 hca_handle=max hca_object=max" >"$CG/rdma.max"
	run -0 "$RDMACTL" export --once
	run grep -c "^rdmactl_rdmacg_limit{cgroup=\"$REL\"" <<<"$output"
	assert_output 0
}

@test "kernel quotas (BPF LSM): a cgroup's kernel limit, usage, refusals and kills, also for a user with only CAP_BPF and CAP_DAC_READ_SEARCH" {
	grep -qw bpf /sys/kernel/security/lsm || { echo "BPF LSM is not active in this lab kernel" >&2; false; }
	# a ledger others can read, as the one in /dev/shm is
	export RDMACTL_LEDGER=/dev/shm/rdmactl-export-kq.$$
	"$RDMACTL" quota init >/dev/null
	run -0 "$RDMACTL" quota set qp 2 --cgroup "$CG" --kernel
	# a statically linked program (no preload) asks for 4 QPs: it gets 2, is refused once, holds them
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -k qp -n 4 -H "$3"' _ "$CG" "$BUILD/lab-progs/kqverbs-static" \
		"$T/release" >"$T/kqv" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q '^holding' "$T/kqv" || { cat "$T/kqv" >&2; false; }
	run grep -Fx "qp created=2 errno=EDQUOT" "$T/kqv"
	assert_success
	local l="scope=\"cgroup\",owner=\"$REL\",type=\"qp\"" who out
	for who in root capable; do
		if [ $who = root ]; then
			run -0 --separate-stderr "$RDMACTL" export --once
		else
			run -0 --separate-stderr setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps +bpf,+dac_read_search \
				--ambient-caps +bpf,+dac_read_search "$RDMACTL" export --once
		fi
		out=$output
		run promtool check metrics <<<"$out"
		assert_success
		run grep -E '^rdmactl_(source_up\{source="kernel"\}|kernel_)' <<<"$out"
		assert_line 'rdmactl_source_up{source="kernel"} 1'
		assert_line "rdmactl_kernel_quota_limit{$l} 2"
		assert_line "rdmactl_kernel_quota_usage{$l} 2"
		assert_line "rdmactl_kernel_refusals_total{$l} 1"
		assert_line "rdmactl_kernel_kills_total{$l} 0"
		# a limit series only for the kind that has one
		refute_line --regexp '^rdmactl_kernel_quota_limit\{.*type="(cq|pd|mr)"'
	done
	# without the capabilities: the kernel source is down, its families absent, the rest still answers
	run -0 --separate-stderr setpriv --reuid 65534 --regid 65534 --clear-groups "$RDMACTL" export --once
	assert_line 'rdmactl_source_up{source="kernel"} 0'
	assert_line 'rdmactl_source_up{source="ledger"} 1'
	refute_line --partial 'rdmactl_kernel_'
	# the holder exits: the kernel's usage returns to 0; unset: no limit series
	touch "$T/release"
	wait "${pids[0]}" || true
	run -0 --separate-stderr "$RDMACTL" export --once
	assert_line "rdmactl_kernel_quota_usage{$l} 0"
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG" --kernel
	run -0 --separate-stderr "$RDMACTL" export --once
	refute_line --partial "rdmactl_kernel_quota_limit{$l}"
	rm -f "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
}

@test "creates_total from the monitor's per-device counters: they rise on the device, and never go down when the monitor drops exited processes" {
	"$RDMACTL" monitor -j >"$T/mon" 2>"$T/mon.err" 3>&- &
	local mon=$!
	pids+=("$mon")
	wait_for 60 grep -q '"event":"start"' "$T/mon" || { cat "$T/mon.err" >&2; false; }
	start_export --max-age 0
	local before after
	before=$(curl -sf "http://127.0.0.1:$XPORT/metrics" | awk '$1 == "rdmactl_creates_total{device=\"rxe0\",type=\"qp\"}" { print $2 }')
	[ -n "$before" ]
	run timeout 60 "$EXV" -q 3
	assert_line "qp created=3 refused=0 errno=0"
	wait_for 10 bash -c "curl -sf http://127.0.0.1:$XPORT/metrics | grep -qx 'rdmactl_creates_total{device=\"rxe0\",type=\"qp\"} $((before + 3))'"
	# the monitor prunes exited processes whose creates and destroys balance every 10 s
	sleep 12
	after=$(curl -sf "http://127.0.0.1:$XPORT/metrics" | awk '$1 == "rdmactl_creates_total{device=\"rxe0\",type=\"qp\"}" { print $2 }')
	[ "$after" -ge $((before + 3)) ] || { echo "creates_total went from $((before + 3)) to $after" >&2; false; }
	run -0 bash -c "curl -sf http://127.0.0.1:$XPORT/metrics | grep '^rdmactl_destroys_total{device=\"rxe0\",type=\"qp\"}'"
	# the counters are pinned per device next to the per-owner ones, and go with the monitor
	[ -e /sys/fs/bpf/rdmactl/devcounters ]
	kill -INT "$mon"
	wait "$mon" || true
	[ ! -e /sys/fs/bpf/rdmactl/devcounters ]
}

@test "a scrape of 8 processes x 1000 QPs holds every QP (its time beside top -b -n1's is printed)" {
	local i
	for i in 1 2 3 4 5 6 7 8; do
		"$HOLDRES" -q 1000 -m 0 -t 1 >"$T/h$i" 2>&1 3>&- &
		pids+=($!)
	done
	for i in 1 2 3 4 5 6 7 8; do
		wait_for 300 grep -q ready "$T/h$i" || { cat "$T/h$i" >&2; false; }
	done
	start_export --max-age 0
	# Alternate, and take the best of five of each (the lab's clock is noisy). top is timed as users run
	# it (a process: its start, one snapshot, its output); a scrape as Prometheus sees it (connect, request,
	# the whole answer), through bash's own /dev/tcp, so that no program's start (curl's libraries come
	# over 9p in the lab) is counted in it.
	local t0 top=999999 exp=999999 ms fd snap=999999 body
	for i in 1 2 3 4 5; do
		t0=${EPOCHREALTIME/./}
		"$RDMACTL" top -b -n1 -j >"$T/top.json"
		ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
		[ "$ms" -lt "$top" ] && top=$ms
		ms=$(jq '.elapsed_ms | floor' "$T/top.json")
		[ "$ms" -lt "$snap" ] && snap=$ms
		t0=${EPOCHREALTIME/./}
		exec {fd}<>"/dev/tcp/127.0.0.1/$XPORT"
		printf 'GET /metrics HTTP/1.0\r\n\r\n' >&"$fd"
		IFS= read -r -d '' -u "$fd" body || true
		exec {fd}>&-
		ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
		[ "$ms" -lt "$exp" ] && exp=$ms
		printf '%s' "$body" >"$T/scrape"
	done
	echo "# 8 x 1000 QPs: rdmactl top -b -n1 ${top} ms (its snapshot ${snap} ms), a scrape ${exp} ms" \
		"(collection $(awk '$1 == "rdmactl_collect_duration_seconds" { print $2 }' "$T/scrape") s)" >&3
	run head -n 1 "$T/scrape"
	assert_output $'HTTP/1.1 200 OK\r'
	# every QP is in the scrape (the eight holders share the test's cgroup)
	run awk '$1 ~ /^rdmactl_objects\{.*type="qp"\}$/ { n += $2 } END { print n }' "$T/scrape"
	[ "$output" -ge 8000 ]
	# (the two times are printed above, not asserted: a test never asserts a timing, and this one failed a
	# clean clone's CI with the machine busy beside it, 294 ms against 258; what a scrape costs against top
	# belongs in a bench/ program, issue 32)
}

# The scrape $1 has qpstates $2's QPs by state (reset init init rtr rts rts rts err) per cgroup and per process,
# with the device label $3 (',device="rxe0"', or "" summed over devices).
qps_by_state() {
	local st n
	for st in RESET:1 INIT:2 RTR:1 RTS:3 SQD:0 SQE:0 ERR:1; do
		n=${st#*:} st=${st%:*}
		grep -Fxq "rdmactl_qps{cgroup=\"$REL\"$3,state=\"$st\"} $n" <<<"$1" ||
			{ echo "no rdmactl_qps $st $n" >&2; return 1; }
		grep -Fxq "rdmactl_process_qps{pid=\"$2\",comm=\"qpstates\",cgroup=\"$REL\"$3,state=\"$st\"} $n" <<<"$1" ||
			{ echo "no rdmactl_process_qps $st $n" >&2; return 1; }
	done
}

@test "QP states: top -j and the metrics break a process's and a cgroup's QPs down by state, as rdma res show qp" {
	local states="reset init init rtr rts rts rts err"
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -d rxe0 -g 1 $3' qp "$CG" "$BUILD/lab-progs/qpstates" "$states" \
		>"$T/qps" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q '^ready' "$T/qps" || { cat "$T/qps" >&2; false; }
	local pid=${pids[0]}
	# the oracle: iproute2's view of that process's QPs, by state
	run -0 bash -c "rdma -j res show qp | jq -c --argjson p $pid '[.[] | select(.pid == \$p) | .state] | group_by(.) | map({(.[0]): length}) | add'"
	assert_output '{"ERR":1,"INIT":2,"RESET":1,"RTR":1,"RTS":3}'
	local want=$output
	# top -j: the row's qp_states (zeros for the states it has none in)
	run -0 --separate-stderr "$RDMACTL" top -b -n1 -j
	run -0 jq -c --argjson p "$pid" '.. | objects | select(.pid? == $p and .kind? == "process") | .qp_states' <<<"$output"
	assert_output '{"RESET":1,"INIT":2,"RTR":1,"RTS":3,"SQD":0,"SQE":0,"ERR":1}'
	run -0 jq -c 'with_entries(select(.value > 0))' <<<"$output"
	assert_equal "$(jq -cS . <<<"$output")" "$(jq -cS . <<<"$want")"
	# the device's and the snapshot's totals: every QP in one state, the same in both
	run -0 --separate-stderr "$RDMACTL" top -b -n1 -j
	run -0 jq -e '.devices[0].totals as $d | ($d.qp_states | add) == $d.qp and .totals.qp_states == $d.qp_states and $d.qp_states.ERR >= 1' <<<"$output"
	# the text view: the last column names the states that hold QPs, for the row and the device's total
	run -0 "$RDMACTL" top -b -n1 --pid "$pid"
	assert_line --regexp "^ +PID USER +COMM .* CM_ID .*QP-STATES$"
	assert_line --regexp "^ +$pid root +qpstates .* RESET:1,INIT:2,RTR:1,RTS:3,ERR:1$"
	assert_line --regexp "^ +total +rxe0 .* ([A-Z]+:[0-9]+,)*ERR:[0-9]+$"
	# the metrics: per cgroup, and per process with --per-process
	run -0 --separate-stderr "$RDMACTL" export --once --per-process
	local out=$output
	run promtool check metrics <<<"$out"
	assert_success
	qps_by_state "$out" "$pid" ',device="rxe0"'
	# the states add up to the QPs
	run grep -Fx "rdmactl_objects{cgroup=\"$REL\",device=\"rxe0\",type=\"qp\"} 8" <<<"$out"
	assert_success
}

@test "QP states with --counters: beside a monitor started with no user object, the scrape's QPs by state come from each QP asked for by number, summed over devices, equal to the dump's" {
	start_monitor || return 1
	grep -q "counts complete" "$T/mon.err" || { cat "$T/mon.err" >&2; return 1; }
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -d rxe0 -g 1 reset init init rtr rts rts rts err' qp "$CG" \
		"$BUILD/lab-progs/qpstates" >"$T/qps" 2>&1 3>&- &
	pids+=($!)
	wait_for 60 grep -q '^ready' "$T/qps" || { cat "$T/qps" >&2; false; }
	local pid=$! out
	run -0 --separate-stderr "$RDMACTL" export --once --per-process --counters
	out=$output
	run promtool check metrics <<<"$out"
	assert_success
	grep -Fx 'rdmactl_counts_source{source="counters"} 1' <<<"$out"
	qps_by_state "$out" "$pid" ""
	# the QP numbers no longer match the counts (one deleted from the monitor's map): the dump, and why
	local key
	key=$(bpftool -j map dump pinned /sys/fs/bpf/rdmactl/qpids | jq -r '.[0].key | map(ltrimstr("0x")) | join(" ")')
	bpftool map delete pinned /sys/fs/bpf/rdmactl/qpids key hex $key
	run -0 --separate-stderr "$RDMACTL" export --once --per-process --counters -v
	out=$output
	[[ $stderr == *"counts from the per-object dump: "*"by the counts"* ]]
	grep -Fx 'rdmactl_counts_source{source="dump",reason="mismatch"} 1' <<<"$out"
	run grep -Fx "rdmactl_process_qps{pid=\"$pid\",comm=\"qpstates\",cgroup=\"$REL\",state=\"RTS\"} 3" <<<"$out"
	assert_success
}

# --- counts from the monitor's counters (--no-qp-states; issue 32) ---------------------------------------

# A scrape's per-process counts (--per-process --no-qp-states: summed over devices) on stdin, grouped as
# rdma_procs groups iproute2's.
export_procs() {
	jq -RnS '[inputs | capture("^rdmactl_process_(?<m>objects|mr_bytes)\\{(?<l>[^}]*)\\} (?<v>[0-9]+)$")
		| { p: ("p" + (.l | capture("pid=\"(?<x>[0-9]+)\"").x)), v: (.v | tonumber),
		    k: (if .m == "mr_bytes" then "mr_bytes" else (.l | capture("type=\"(?<x>[a-z_]+)\"").x) end) }]
		| group_by(.p)
		| map({ key: .[0].p, value: ({ ctx: 0, pd: 0, cq: 0, qp: 0, srq: 0, mr: 0, cm_id: 0 }
			+ (map({ key: .k, value: .v }) | from_entries)) })
		| from_entries'
}

# One scrape (--once --per-process --no-qp-states) into $T/scrape, its processes into $T/got.
export_scrape() {
	"$RDMACTL" export --once --per-process --no-qp-states >"$T/scrape" || return 1
	export_procs <"$T/scrape" >"$T/got"
}

# A scrape against iproute2's processes; its counts must come from source $1 (the dump: with reason $2).
compare_export() {
	settle_procs export_scrape || return 1
	grep -qx "rdmactl_counts_source{source=\"$1\"${2:+,reason=\"$2\"}} 1" "$T/scrape" ||
		{ grep '^rdmactl_counts_source' "$T/scrape" >&2; return 1; }
	diff -u "$T/want" "$T/got"
}

@test "counters: --no-qp-states beside a monitor started with no user object: per-process counts from its counters equal rdma res show, over HTTP too; lost counts or a base the kernel disagrees with: the dump, still equal" {
	local a
	monitor_then_holders
	run compare_export counters
	assert_success
	# no QP states, and no device label on the counts of cgroups and processes
	run grep -E '^rdmactl_(process_)?qps\{|^rdmactl_(process_)?(objects|mr_bytes)\{.*device=' "$T/scrape"
	assert_failure
	run promtool check metrics <"$T/scrape"
	assert_success
	# without the option: the dump, by device, with the QP states, and it says why
	run -0 --separate-stderr "$RDMACTL" export --once
	assert_line 'rdmactl_counts_source{source="dump",reason="qp_states"} 1'
	assert_line 'rdmactl_counts_source{source="counters"} 0'
	assert_line --regexp '^rdmactl_qps\{.*device="rxe0",state="RESET"\} [1-9]'
	# a holder exits, another starts: still equal; and so are the scrapes of a server (-v tells the source)
	kill "$a"
	wait "$a" || true
	start_holdres -q 3 -m 1M -t 1
	run compare_export counters
	assert_success
	start_export --no-qp-states --per-process --max-age 0
	curl -sf "http://127.0.0.1:$XPORT/metrics" >"$T/http"
	grep -qx 'rdmactl_counts_source{source="counters"} 1' "$T/http"
	export_procs <"$T/http" | diff -u "$T/want" -
	grep -q "counts from the monitor's counters" "$T/export.err"
	# lost counts (status offset 0): never trusted again; the dump, and the counts still right
	status_poke 0 0x01
	run compare_export dump lost_counts
	assert_success
	curl -sf "http://127.0.0.1:$XPORT/metrics" >"$T/http"
	grep -qx 'rdmactl_counts_source{source="dump",reason="lost_counts"} 1' "$T/http"
	export_procs <"$T/http" | diff -u "$T/want" -
	grep -q "counts from the per-object dump: the monitor lost 1 counts" "$T/export.err"
	status_poke 0 0x00
	# the first device's QP base (offset 64): a QP the counters would not know of; the kernel's summary
	# disagrees, and the counts come from the dump
	local was
	was=$(status_peek 64)
	status_poke 64 0x7f
	run compare_export dump mismatch
	assert_success
	status_poke 64 "$was"
	run compare_export counters
	assert_success
}
