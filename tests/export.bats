#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl export on the host: options, the exposition (checked by promtool), the textfile, the ledger's families,
# and the HTTP server against bad clients (the host has no RDMA device: netlink is reported down, never fatal).

load helper

HOLD=$BUILD/lab-progs/ledger_hold

setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	export RDMACTL_PODS_DIR=$BATS_TEST_TMPDIR/pods
	run -0 "$RDMACTL" quota init
	T=$BATS_TEST_TMPDIR
	PIDS=()
	CGT=
}

teardown() {
	kill_pids_and_cgroups
}

need_promtool() {
	command -v promtool >/dev/null || skip "promtool is not installed (Debian package prometheus: make deps)"
}

# Start a server on a free port of 127.0.0.1 (extra arguments go to export); sets SRV (its pid) and PORT.
start_export() {
	SRV_ERR=$(mktemp "$T/srv.XXXXXX")
	"$RDMACTL" -v export --listen 127.0.0.1:0 "$@" 2>"$SRV_ERR" 3>&- &
	SRV=$!
	PIDS+=("$SRV")
	wait_for 10 grep -q 'listening on' "$SRV_ERR" || { cat "$SRV_ERR"; return 1; }
	PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$SRV_ERR")
	[ -n "$PORT" ]
}

# Send raw bytes (printf %b escapes) on a new connection and print the answer (up to 5 s).
raw() {
	local fd
	exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
	printf '%b' "$1" >&"$fd" 2>/dev/null || true
	timeout 5 cat <&"$fd" || true
	exec {fd}>&-
}

# The status line's code of an answer on stdin.
status_of() {
	head -n 1 | sed -n 's/^HTTP\/1\.1 \([0-9]*\) .*/\1/p'
}

# One series' value from an exposition on stdin: value_of 'name{labels}'.
value_of() {
	awk -v s="$1" '$1 == s { print $2; found = 1 } END { exit !found }'
}

@test "export --help: options, examples, and the command is listed by rdmactl --help" {
	run -0 "$RDMACTL" export --help
	assert_line --index 0 --regexp "^Usage: rdmactl export "
	for o in --listen=ADDR:PORT --textfile=DIR --interval=SECONDS --once --max-age=SECONDS --per-process \
		--no-qp-states --ledger=PATH --timeout=SECONDS --max-connections=N; do
		assert_output --partial -- "$o"
	done
	assert_output --partial "default :9476"
	assert_output --partial "Examples:"
	run -0 "$RDMACTL" --help
	assert_line --regexp "^  export +serve RDMA metrics"
	run -0 "$RDMACTL" exp --help
	assert_line --index 0 --regexp "^Usage: rdmactl export "
}

@test "export usage errors exit 2 with a message on stderr and nothing on stdout" {
	local args
	for args in "--once --listen :9476" "--interval 5" "--interval 5 --textfile $T --once" "--interval 0" \
		"--interval x --textfile $T" "--max-age -1" "--max-age nan" "--timeout 0" "--max-connections 0" \
		"--max-connections 100000" "--listen" "--listen=" "--textfile=" "--ledger=" "extra" "--frob" \
		"--listen nonsense" "--listen 127.0.0.1:99999" "--listen ::1:9476" "--listen [::1:9476"; do
		run -2 --separate-stderr "$RDMACTL" export $args
		assert_equal "$output" ""
		[[ $stderr == "rdmactl export: "* ]] || { echo "no message for: $args: $stderr"; false; }
	done
	run -2 --separate-stderr "$RDMACTL" -j export --once
	[[ $stderr == *"export writes the Prometheus text format only"* ]]
	run -2 --separate-stderr "$RDMACTL" export --once --listen 127.0.0.1:9476
	[[ $stderr == *"--once goes with --textfile or stdout, not with --listen"* ]]
}

@test "export --once prints an exposition that promtool accepts: HELP and TYPE per family, prefix rdmactl_, no job or instance label" {
	run -0 --separate-stderr "$RDMACTL" export --once
	local out=$output
	# every family is announced once, HELP then TYPE, before its samples
	run awk '
		/^# HELP / { help[$3]++; next }
		/^# TYPE / { if (!help[$3]) { print "TYPE before HELP: " $3; bad = 1 } type[$3]++; next }
		/^#/ { print "stray comment: " $0; bad = 1; next }
		{ n = $1; sub(/\{.*/, "", n); if (!type[n]) { print "no TYPE for " n; bad = 1 }
		  if (n !~ /^rdmactl_/) { print "prefix: " n; bad = 1 } }
		END { for (f in type) if (type[f] != 1 || help[f] != 1) { print "twice: " f; bad = 1 } exit bad }' <<<"$out"
	assert_success
	run grep -E '[{,](job|instance)="' <<<"$out"
	assert_failure
	run value_of 'rdmactl_build_info{version="'"$(sed -n 's/^VERSION *?= *//p' "$TOP/Makefile")"'"}' <<<"$out"
	assert_output 1
	run value_of 'rdmactl_source_up{source="ledger"}' <<<"$out"
	assert_output 1
	# counters end in _total, and only counters do
	run awk '/^# TYPE / && (($4 == "counter") != ($3 ~ /_total$/)) { print; bad = 1 } END { exit bad }' <<<"$out"
	assert_success
	need_promtool
	run promtool check metrics <<<"$out"
	assert_success
	assert_output ""
}

@test "without RDMA netlink the exporter still answers: netlink reported absent (not down), the message once on stderr" {
	[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] || skip "this machine has RDMA devices"
	run -0 --separate-stderr "$RDMACTL" export --once
	local out=$output
	run value_of 'rdmactl_source_up{source="netlink"}' <<<"$out"
	assert_output 0
	run -0 grep '^rdmactl_source_state{source="netlink"' <<<"$out"
	assert_output "$(printf 'rdmactl_source_state{source="netlink",state="%s"} %s\n' up 0 absent 1 down 0)"
	[[ $stderr == "rdmactl export: cannot open RDMA netlink: "* ]]
	# nor, then, where counts came from (there are none)
	run -0 --separate-stderr "$RDMACTL" export --once --no-qp-states
	local out=$output
	run value_of 'rdmactl_source_up{source="netlink"}' <<<"$out"
	assert_output 0
	run grep -c '^rdmactl_counts_source' <<<"$out"
	assert_output 0
}

@test "--textfile --once writes DIR/rdmactl.prom 0644 by rename, nothing else left behind; promtool accepts it" {
	mkdir "$T/tf"
	run -0 "$RDMACTL" export --textfile "$T/tf" --once
	run ls -A "$T/tf"
	assert_output "rdmactl.prom"
	run stat -c %a "$T/tf/rdmactl.prom"
	assert_output 644
	run grep -c '^rdmactl_build_info{' "$T/tf/rdmactl.prom"
	assert_output 1
	# replaced, not rewritten in place: another inode each time
	local ino
	ino=$(stat -c %i "$T/tf/rdmactl.prom")
	run -0 "$RDMACTL" export --textfile "$T/tf" --once
	[ "$(stat -c %i "$T/tf/rdmactl.prom")" != "$ino" ]
	need_promtool
	run promtool check metrics <"$T/tf/rdmactl.prom"
	assert_success
}

@test "--textfile: a directory that is missing, not a directory or not writable is an error (exit 1)" {
	run -1 --separate-stderr "$RDMACTL" export --textfile "$T/none" --once
	assert_equal "$stderr" "rdmactl export: --textfile $T/none: No such file or directory (a directory: node_exporter's --collector.textfile.directory)"
	touch "$T/file"
	run -1 --separate-stderr "$RDMACTL" export --textfile "$T/file" --once
	[[ $stderr == *"--textfile $T/file: not a directory"* ]]
	# (a directory another user can reach: the test's own is private)
	RO=$(mktemp -d /tmp/rdmactl-export.XXXXXX)
	chmod 555 "$RO"
	run -1 --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMACTL" export --textfile "$RO" --once
	rmdir "$RO"
	[[ $stderr == *"rdmactl export: cannot create a file in $RO: Permission denied" ]]
}

@test "--listen 127.0.0.1:0 says on stderr which port it got, without -v; a scrape there answers (issue 51)" {
	local err=$T/listen.err port
	"$RDMACTL" export --listen 127.0.0.1:0 2>"$err" 3>&- &
	PIDS+=("$!")
	wait_for 10 grep -q 'listening on' "$err" || { cat "$err"; return 1; }
	port=$(sed -n 's/^rdmactl export: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$err")
	[ -n "$port" ] && [ "$port" -gt 0 ] || { cat "$err"; return 1; }
	PORT=$port
	run -0 bash -c "$(declare -f raw); PORT=$port raw 'GET /metrics HTTP/1.0\r\n\r\n'"
	assert_line --index 0 --regexp '^HTTP/1\.1 200 '
}

@test "--textfile on a read-only file system (the service's ProtectSystem=strict) names ReadWritePaths=DIR (issue 51)" {
	mkdir "$T/tf"
	# a read-only bind mount of DIR in a mount namespace of our own, as systemd makes one for the service
	run -1 --separate-stderr unshare -rm sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" &&
		exec "$2" export --textfile "$1" --once' sh "$T/tf" "$RDMACTL"
	[[ $stderr == *"rdmactl export: cannot create a file in $T/tf: Read-only file system ("*"ProtectSystem=strict"*"ReadWritePaths=$T/tf in 'systemctl edit rdmactl-export')" ]]
	[ ! -e "$T/tf/rdmactl.prom" ]
}

@test "--textfile --interval rewrites the file; SIGTERM ends it with exit 0 and no temporary file" {
	mkdir "$T/tf"
	"$RDMACTL" export --textfile "$T/tf" --interval 0.2 3>&- &
	local p=$!
	PIDS+=("$p")
	wait_for 10 test -s "$T/tf/rdmactl.prom"
	local ino
	ino=$(stat -c %i "$T/tf/rdmactl.prom")
	wait_for 10 bash -c "[ \"\$(stat -c %i '$T/tf/rdmactl.prom')\" != $ino ]"
	kill -TERM "$p"
	local rc=0
	wait "$p" || rc=$?
	assert_equal "$rc" 0
	run ls -A "$T/tf"
	assert_output "rdmactl.prom"
}

@test "quota families: limits only where set, usage of every counted kind, identical label sets; Slurm job id from a cgroup path" {
	run -0 "$RDMACTL" quota set qp 10 --global
	run -0 "$RDMACTL" quota set mr_bytes 1G --global
	run -0 "$RDMACTL" quota set cq 3 --pid $$
	run -0 --separate-stderr "$RDMACTL" export --once
	local out=$output
	run value_of 'rdmactl_quota_limit{scope="global",type="qp"}' <<<"$out"
	assert_output 10
	run value_of 'rdmactl_quota_limit{scope="global",type="mr_bytes"}' <<<"$out"
	assert_output 1073741824
	run value_of 'rdmactl_quota_usage{scope="global",type="qp"}' <<<"$out"
	assert_output 0
	run value_of 'rdmactl_quota_limit{scope="process",owner="'$$'",type="cq"}' <<<"$out"
	assert_output 3
	run grep -c '^rdmactl_quota_limit{scope="global",type="cq"}' <<<"$out"
	assert_output 0
	# every limit has a usage with exactly the same labels (wr is a cap: it has no usage)
	run awk '/^rdmactl_quota_limit\{/ && !/type="wr"/ { l = $1; sub(/^rdmactl_quota_limit/, "", l); want[l] = 1 }
		/^rdmactl_quota_usage\{/ { u = $1; sub(/^rdmactl_quota_usage/, "", u); have[u] = 1 }
		END { for (l in want) if (!have[l]) { print "no usage for " l; bad = 1 } exit bad }' <<<"$out"
	assert_success
	# a process scope without a limit (a holder) is exported with --per-process only
	"$HOLD" qp=2 >"$T/hold" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 10 grep -q '^ready' "$T/hold"
	run -0 --separate-stderr "$RDMACTL" export --once
	run value_of 'rdmactl_quota_usage{scope="global",type="qp"}' <<<"$output"
	assert_output 2
	run grep -c "owner=\"${PIDS[0]}\"" <<<"$output"
	assert_output 0
	run -0 --separate-stderr "$RDMACTL" export --once --per-process
	run value_of 'rdmactl_quota_usage{scope="process",owner="'"${PIDS[0]}"'",type="qp"}' <<<"$output"
	assert_output 2
	# a cgroup scope carries the labels its path implies
	local root cg
	root=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$root" ] && [ -w "$root" ] || skip "no writable cgroup2 mount"
	cg=$root/rdmactl-export.$$/job_4242/step_0
	mkdir -p "$cg" || skip "cannot create cgroups here"
	run -0 "$RDMACTL" quota set qp 5 --cgroup "$cg"
	run -0 --separate-stderr "$RDMACTL" export --once
	rmdir "$cg" "${cg%/step_0}" "$root/rdmactl-export.$$"
	run value_of "rdmactl_quota_limit{scope=\"cgroup\",owner=\"/rdmactl-export.$$/job_4242/step_0\",type=\"qp\",slurm_job_id=\"4242\"}" \
		<<<"$output"
	assert_output 5
}

@test "a pod's series get namespace and pod labels from \$RDMACTL_PODS_DIR/UID, its file read once per collection; none where unknown (issue 52)" {
	local root u=0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11 v=1c6b5d2f-8a4e-4e3b-8b72-4d3a1e0f9b22 out rel n
	root=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$root" ] && [ -w "$root" ] || skip "no writable cgroup2 mount"
	mkdir "$root/rdmactl-export-pod.$$" || skip "cannot create cgroups here"
	CGT=$root/rdmactl-export-pod.$$
	rel=/rdmactl-export-pod.$$/kubepods
	mkdir -p "$CGT/kubepods/pod$u/0123456789abcdef" "$CGT/kubepods/pod$v"
	# two cgroups of pod u (the pod's and its container's), one of pod v, which has no name
	run -0 "$RDMACTL" quota set qp 5 --cgroup "$CGT/kubepods/pod$u/0123456789abcdef"
	run -0 "$RDMACTL" quota set qp 9 --cgroup "$CGT/kubepods/pod$u"
	run -0 "$RDMACTL" quota set qp 3 --cgroup "$CGT/kubepods/pod$v"
	mkdir "$RDMACTL_PODS_DIR"
	printf 'team-a/web-0\n' >"$RDMACTL_PODS_DIR/$u"
	run -0 --separate-stderr "$RDMACTL" export --once
	out=$output
	run value_of "rdmactl_quota_limit{scope=\"cgroup\",owner=\"$rel/pod$u/0123456789abcdef\",type=\"qp\",pod_uid=\"$u\",namespace=\"team-a\",pod=\"web-0\",container_id=\"0123456789abcdef\"}" <<<"$out"
	assert_output 5
	run value_of "rdmactl_quota_usage{scope=\"cgroup\",owner=\"$rel/pod$u\",type=\"qp\",pod_uid=\"$u\",namespace=\"team-a\",pod=\"web-0\"}" <<<"$out"
	assert_output 0
	run value_of "rdmactl_quota_processes{scope=\"cgroup\",owner=\"$rel/pod$u\",pod_uid=\"$u\",namespace=\"team-a\",pod=\"web-0\"}" <<<"$out"
	assert_output 0
	# unknown: no namespace or pod label (as every empty label)
	run value_of "rdmactl_quota_limit{scope=\"cgroup\",owner=\"$rel/pod$v\",type=\"qp\",pod_uid=\"$v\"}" <<<"$out"
	assert_output 3
	# every series with pod_uid u has both labels; none without pod_uid has them
	run awk -v u="$u" '/^rdmactl_/ && index($0, "pod_uid=\"" u "\"") && !/namespace="team-a",pod="web-0"/ { print; bad = 1 }
		/^rdmactl_/ && !/pod_uid=/ && /(namespace|pod)="/ { print; bad = 1 } END { exit bad }' <<<"$out"
	assert_success
	if command -v promtool >/dev/null; then
		run -0 promtool check metrics <<<"$out"
	fi
	# one read of the pod's file per collection, however many cgroups the pod has
	command -v strace >/dev/null || skip "strace is not installed"
	run -0 strace -f -e trace=open,openat -o "$T/trace" "$RDMACTL" export --once
	n=$(grep -c "$RDMACTL_PODS_DIR/$u\"" "$T/trace")
	[ "$n" = 1 ] || { grep "$RDMACTL_PODS_DIR" "$T/trace" >&2; return 1; }
}

@test "refusals_total: a running exporter attributes a refusal to the scope that refused; --once counts it unattributed" {
	run -0 "$RDMACTL" quota set qp 2 --global
	start_export --max-age 0
	run -3 "$HOLD" -c qp=3
	# the exporter reads the ledger's ring of refusals every second
	sleep 1.5
	run -0 curl -sf "http://127.0.0.1:$PORT/metrics"
	local out=$output
	run value_of 'rdmactl_refusals_total{scope="global",type="qp"}' <<<"$out"
	assert_output 1
	run value_of 'rdmactl_refusals_total{scope="unattributed",type="qp"}' <<<"$out"
	assert_output 0
	run -0 --separate-stderr "$RDMACTL" export --once
	out=$output
	run value_of 'rdmactl_refusals_total{scope="unattributed",type="qp"}' <<<"$out"
	assert_output 1
	run value_of 'rdmactl_refusals_total{scope="global",type="qp"}' <<<"$out"
	assert_output 0
	# the scope's own count is exact, --once or not; other kinds and scopes refused nothing
	run value_of 'rdmactl_quota_refusals_total{scope="global",type="qp"}' <<<"$out"
	assert_output 1
	run value_of 'rdmactl_quota_refusals_total{scope="global",type="pd"}' <<<"$out"
	assert_output 0
	# the next one adds to the same series
	run -3 "$HOLD" -c qp=3
	sleep 1.5
	run -0 curl -sf "http://127.0.0.1:$PORT/metrics"
	out=$output
	run value_of 'rdmactl_refusals_total{scope="global",type="qp"}' <<<"$out"
	assert_output 2
	run value_of 'rdmactl_quota_refusals_total{scope="global",type="qp"}' <<<"$out"
	assert_output 2
}

@test "HTTP: GET and HEAD of /metrics and /, 404 elsewhere, 405 for other methods with Allow" {
	start_export
	run -0 curl -s -D "$T/h" -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/metrics"
	assert_output 200
	run grep -i '^Content-Type:' "$T/h"
	assert_output $'Content-Type: text/plain; version=0.0.4; charset=utf-8\r'
	run grep -c '^rdmactl_build_info{' "$T/body"
	assert_output 1
	run -0 curl -s -I -w '%{http_code}' -o /dev/null "http://127.0.0.1:$PORT/metrics"
	assert_output 200
	run -0 curl -s "http://127.0.0.1:$PORT/"
	assert_output --partial '<a href="/metrics">'
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics?x=1"
	assert_output 200
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope"
	assert_output 404
	run -0 curl -s -D "$T/h" -o /dev/null -w '%{http_code}' -X POST -d 'x=1' "http://127.0.0.1:$PORT/metrics"
	assert_output 405
	run grep -i '^Allow:' "$T/h"
	assert_output $'Allow: GET, HEAD\r'
	local m
	for m in PUT DELETE OPTIONS PATCH BREW; do
		run -0 curl -s -o /dev/null -w '%{http_code}' -X "$m" "http://127.0.0.1:$PORT/metrics"
		assert_output 405
	done
}

@test "HTTP: bad requests get 400, 431, 505 (and the next scrape still works)" {
	start_export
	run raw 'garbage\r\n\r\n'
	assert_equal "$(status_of <<<"$output")" 400
	run raw '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03'
	assert_equal "$(status_of <<<"$output")" 400
	run raw 'GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n'
	assert_equal "$(status_of <<<"$output")" 400
	run raw 'GET /metrics HTTP/2.0\r\n\r\n'
	assert_equal "$(status_of <<<"$output")" 505
	run -0 curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" \
		"http://127.0.0.1:$PORT/metrics"
	assert_output 431
	local h=() i
	for i in $(seq 70); do h+=(-H "X-H$i: v"); done
	run -0 curl -s -o /dev/null -w '%{http_code}' "${h[@]}" "http://127.0.0.1:$PORT/metrics"
	assert_output 431
	run raw "GET /$(head -c 9000 /dev/zero | tr '\0' a) HTTP/1.1\r\n\r\n"
	assert_equal "$(status_of <<<"$output")" 414
	# random bytes on many connections: the server stays up and answers
	for i in $(seq 20); do
		raw "$(head -c 300 /dev/urandom | od -An -v -tx1 | tr -d ' \n' | sed 's/../\\x&/g')" >/dev/null
	done
	run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/metrics"
	assert_output 200
	kill -0 "$SRV"
}

@test "HTTP: a slow client is closed after --timeout with 408 while others are served; a flood evicts the idle ones" {
	start_export --timeout 1 --max-connections 4 --max-age 0
	local fd t0
	exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
	printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n' >&"$fd" # never finished
	run -0 curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/metrics"
	assert_output 200
	t0=$SECONDS
	run timeout 5 cat <&"$fd"
	exec {fd}>&-
	assert_equal "$(status_of <<<"$output")" 408
	[ $((SECONDS - t0)) -le 3 ]
	# ten idle connections against a limit of four: the oldest idle ones make room, scrapes are answered
	local fds=() i
	for i in $(seq 10); do
		exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
		fds+=("$fd")
	done
	run -0 curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics"
	local out=$output
	run value_of 'rdmactl_http_connections_closed_total{reason="timeout"}' <<<"$out"
	assert_output 1
	run value_of 'rdmactl_http_connections_closed_total{reason="evicted"}' <<<"$out"
	[ "$output" -ge 7 ]
	for fd in "${fds[@]}"; do exec {fd}>&-; done
}

@test "SIGTERM and SIGINT end the server with exit 0; a port in use is an error (exit 1)" {
	local rc=0 sig
	for sig in TERM INT; do
		start_export
		kill -"$sig" "$SRV"
		wait "$SRV" || rc=$?
		assert_equal "$sig $rc" "$sig 0"
	done
	start_export
	run -1 --separate-stderr timeout 10 "$RDMACTL" export --listen "127.0.0.1:$PORT"
	[[ $stderr == "rdmactl export: cannot listen on 127.0.0.1:$PORT: Address already in use (another program has that port: pick another with --listen ADDR:PORT)" ]]
}

@test "completion: export's options and option values" {
	run complete_words rdmactl export --per
	assert_output "--per-process"
	run complete_words rdmactl export -
	for o in --listen --textfile --interval --once --max-age --per-process --no-qp-states --ledger --timeout \
		--max-connections; do
		assert_line -- "$o"
	done
	refute_line -- "--json"
	run complete_words rdmactl exp --listen ""
	assert_line ":9476"
	mkdir "$T/promdir"
	run complete_words rdmactl export --textfile "$T/promd"
	assert_output "$T/promdir"
}
