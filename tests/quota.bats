#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl quota on the host: set/unset/show/gc/init against a temp ledger, the usage-error matrix,
# corrupted ledgers, permissions, live and dead holders (lib/ledger through the ledger_hold helper).

load helper

HOLD=$BUILD/lab-progs/ledger_hold

setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	export RDMACTL_PODS_DIR=$BATS_TEST_TMPDIR/pods
	chmod 755 "$BATS_TEST_TMPDIR"
	run -0 "$RDMACTL" quota init
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	if [ -n "${SHARED:-}" ]; then
		rm -rf "$SHARED"
	fi
	if [ -n "${CG:-}" ] && [ -d "$CG" ]; then
		rmdir "$CG" 2>/dev/null || true
	fi
	if [ -n "${CGT:-}" ] && [ -d "$CGT" ]; then
		find "$CGT" -depth -type d -exec rmdir {} + 2>/dev/null || true
	fi
}

# Start a holder in the background and wait for its "ready"; sets HPID.
hold() {
	local out=$BATS_TEST_TMPDIR/hold.$RANDOM
	"$HOLD" "$@" >"$out" 2>&1 3>&- &
	HPID=$!
	PIDS+=("$HPID")
	wait_for 10 grep -q '^ready' "$out"
	HOUT=$out
}

# jq over 'quota show -j' (extra args go to show).
showq() {
	local filter=$1; shift
	"$RDMACTL" -j quota show "$@" | jq -e "$filter"
}

@test "init creates the policy file 0644 and the usage file 0666; an empty ledger shows the global scope" {
	run stat -c %a "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	assert_line --index 0 644
	assert_line --index 1 666
	run -0 "$RDMACTL" quota show
	assert_line --index 0 "global: 0 processes"
	assert_output --partial "no limits, nothing in use"
	run -0 showq '.scopes | length == 1 and .[0].scope == "global" and .[0].kinds.qp.limit == null'
}

@test "set, show (text and JSON), unset on the global scope" {
	run -0 "$RDMACTL" quota set qp 10 --global
	assert_output ""
	run -0 "$RDMACTL" quota set mr_bytes 4G --global
	run -0 "$RDMACTL" quota show
	assert_line --regexp '^  qp +10 +0 +10 +interceptor$'
	assert_line --regexp '^  mr_bytes +4G +0 +4G +interceptor$'
	run -0 showq '.scopes[0].kinds | .qp.limit == 10 and .qp.headroom == 10 and .mr_bytes.limit == 4294967296 and .cq.limit == null'
	run -0 "$RDMACTL" quota unset qp --global
	run -0 showq '.scopes[0].kinds.qp.limit == null and .scopes[0].kinds.mr_bytes.limit == 4294967296'
	run -0 "$RDMACTL" quota set mr_bytes unlimited --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == null'
}

@test "sizes and counts: K/M/G/T suffixes for mr_bytes, plain counts elsewhere, 0 is a limit" {
	run -0 "$RDMACTL" quota set mr_bytes 64K --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == 65536'
	run -0 "$RDMACTL" quota set mr_bytes 2t --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == 2199023255552'
	run -0 "$RDMACTL" quota set srq 0 --global
	run -0 showq '.scopes[0].kinds.srq.limit == 0 and .scopes[0].kinds.srq.headroom == 0'
	run -0 "$RDMACTL" quota set wr 256 --global
	run -0 showq '.scopes[0].kinds.wr.limit == 256'
}

@test "numbers are decimal: a leading 0 is decimal (010 is ten), 0x is refused naming the word (issue 51)" {
	run -0 "$RDMACTL" quota set qp 010 --global
	run -0 showq '.scopes[0].kinds.qp.limit == 10'
	run -0 "$RDMACTL" quota set cq 09 --global
	run -0 showq '.scopes[0].kinds.cq.limit == 9'
	run -0 "$RDMACTL" quota set mr_bytes 010K --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == 10240'
	run -2 --separate-stderr "$RDMACTL" quota set qp 0x10 --global
	assert_equal "$stderr" "rdmactl quota: invalid VALUE '0x10' for qp: numbers are decimal, not hexadecimal (a decimal count, or 'unlimited')
Try 'rdmactl quota --help' for more information."
	run -2 --separate-stderr "$RDMACTL" quota set mr_bytes 0x10 --global
	[[ $stderr == *"invalid VALUE '0x10' for mr_bytes: numbers are decimal, not hexadecimal"* ]]
	run -0 showq '.scopes[0].kinds.qp.limit == 10 and .scopes[0].kinds.mr_bytes.limit == 10240'
	# a pid with a leading 0 is that pid (it was read as octal: another process, or none)
	hold qp=1
	run -0 "$RDMACTL" quota set qp 5 --pid "00$HPID"
	run -0 showq "[.scopes[] | select(.scope == \"process\")] | length == 1 and .[0].pid == $HPID and .[0].kinds.qp.limit == 5"
	run -2 --separate-stderr "$RDMACTL" quota set qp 5 --pid 0x10
	[[ $stderr == *"invalid pid '0x10': numbers are decimal, not hexadecimal"* ]]
	run -0 "$RDMACTL" quota init --procs 010
	assert_output --partial "for 10 processes"
}

@test "a kind with an underscore takes a hyphen too: mr-bytes is mr_bytes, as in run, annotations and the policy (issue 51)" {
	run -0 "$RDMACTL" quota set mr-bytes 4G --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == 4294967296'
	run -0 "$RDMACTL" quota set mr-b 2G --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == 2147483648'
	run -0 "$RDMACTL" quota unset mr-bytes --global
	run -0 showq '.scopes[0].kinds.mr_bytes.limit == null'
	run -2 --separate-stderr "$RDMACTL" quota set mr+bytes 1 --global
	[[ $stderr == *"unknown kind 'mr+bytes'"* ]]
}

@test "words accept unique prefixes: 'se q 5 --gl', 'sh', 'un'" {
	run -0 "$RDMACTL" quota se q 5 --gl
	run -0 "$RDMACTL" quota sh -j
	run -0 jq -e '.scopes[0].kinds.qp.limit == 5' <<<"$output"
	run -0 "$RDMACTL" quota un qp --global
	run -0 showq '.scopes[0].kinds.qp.limit == null'
}

@test "--ledger PATH overrides RDMACTL_LEDGER" {
	local other=$BATS_TEST_TMPDIR/other
	run -0 "$RDMACTL" quota --ledger "$other" init
	run -0 "$RDMACTL" quota set cq 7 --global --ledger "$other"
	run -0 "$RDMACTL" -j quota show --ledger "$other"
	run -0 jq -e '.ledger == "'"$other"'" and .scopes[0].kinds.cq.limit == 7' <<<"$output"
	run -0 showq '.scopes[0].kinds.cq.limit == null'
}

@test "usage errors exit 2 with a clear message on stderr and nothing on stdout" {
	local -a cases=(
		"quota|missing COMMAND"
		"quota frob|unknown quota command 'frob'"
		"quota s|ambiguous: could be 'set', 'show'"
		"quota set foo 1 --global|unknown kind 'foo'"
		"quota set m 1 --global|kind 'm' is ambiguous: could be 'mr', 'mr_bytes', 'mw'"
		"quota set qp -1 --global|invalid VALUE '-1'"
		"quota set qp 18446744073709551616 --global|out of range"
		"quota set qp 4K --global|not a decimal whole number"
		"quota set mr_bytes 4Q --global|not a size"
		"quota set mr_bytes 99999999T --global|out of range"
		"quota set qp abc --global|invalid VALUE 'abc'"
		"quota set qp 1 --pid 4194304|no process with pid 4194304"
		"quota set qp 1 --pid abc|invalid pid 'abc'"
		"quota set qp 1 --cgroup /tmp|not a cgroup v2 directory"
		"quota set qp 1 --cgroup no/such/cgroup|cgroup 'no/such/cgroup'"
		"quota set qp 1 --global --job x|conflicting scopes: --global and --job"
		"quota set qp 1 --pid 1 --global|conflicting scopes: --pid and --global"
		"quota set qp 1|missing scope"
		"quota set qp --global|missing VALUE"
		"quota set --global|missing KIND"
		"quota unset qp|missing scope"
		"quota unset qp 5 --global|unexpected argument '5'"
		"quota set qp 1 --job train --kernel|--kernel takes --cgroup, --pid or --global"
		"quota set wr 4 --global --kernel|wr is a work-request depth cap that the kernel does not count"
		"quota show --dev rxe0|--dev goes with --kernel"
		"quota show extra|unexpected argument 'extra'"
		"quota gc --global|gc takes no argument"
		"quota set qp 1 --job|requires an argument"
	)
	local c args msg
	for c in "${cases[@]}"; do
		args=${c%%|*}
		msg=${c#*|}
		# shellcheck disable=SC2086
		run --separate-stderr "$RDMACTL" $args
		[ "$status" -eq 2 ] || fail "'$args' exited $status, not 2: $stderr"
		[ -z "$output" ] || fail "'$args' printed on stdout: $output"
		[[ $stderr == *"$msg"* ]] || fail "'$args': expected '$msg' in: $stderr"
	done
	# nothing changed by any of them
	run -0 showq '[.scopes[0].kinds[] | .limit] | all(. == null)'
}

@test "a job that does not exist is an error (exit 2), show of it exits 1 with JSON-clean stdout" {
	run --separate-stderr -2 "$RDMACTL" quota set qp 1 --job nosuch
	assert_equal "$stderr" "rdmactl quota: cannot set qp on job nosuch: no job 'nosuch' in the ledger"
	run --separate-stderr -1 "$RDMACTL" -j quota show --job nosuch
	assert_output ""
	[[ $stderr == *"no ledger entry for job nosuch"* ]]
}

@test "a missing, truncated, foreign or garbage ledger: exit 1 with a clear message; init recreates it" {
	rm "$RDMACTL_LEDGER"
	run --separate-stderr -1 "$RDMACTL" -j quota gc
	assert_output ""
	[[ $stderr == *"no ledger (create one with 'rdmactl quota init')"* ]]

	run -0 "$RDMACTL" quota init
	truncate -s 100 "$RDMACTL_LEDGER"
	run --separate-stderr -1 "$RDMACTL" quota show
	[[ $stderr == *"truncated"* ]]
	run --separate-stderr -1 "$RDMACTL" quota set qp 1 --global
	[[ $stderr == *"truncated"* ]]

	run -0 "$RDMACTL" quota init
	printf 'NOTMINE!' | dd of="$RDMACTL_LEDGER" conv=notrunc status=none
	run --separate-stderr -1 "$RDMACTL" -j quota show
	assert_output ""
	[[ $stderr == *"not an rdmactl ledger file (bad magic)"* && $stderr == *"quota init"* ]]

	run -0 "$RDMACTL" quota init
	printf '\x07' | dd of="$RDMACTL_LEDGER" bs=1 seek=16 conv=notrunc status=none
	run --separate-stderr -1 "$RDMACTL" quota show
	[[ $stderr == *"checksum"* ]]

	run -0 "$RDMACTL" quota init
	head -c 457152 /dev/urandom >"$RDMACTL_LEDGER.usage"
	run --separate-stderr -1 "$RDMACTL" quota show
	[[ $stderr == *"ledger.usage"* ]]

	head -c 5000 /dev/urandom >"$RDMACTL_LEDGER"
	run --separate-stderr -1 "$RDMACTL" quota gc
	[[ $stderr == *"cannot open the ledger"* ]]

	run -0 "$RDMACTL" quota init
	assert_output "created an empty ledger at $RDMACTL_LEDGER for 16384 processes"
	run -0 "$RDMACTL" quota show
	run -0 "$RDMACTL" quota set qp 3 --global
}

@test "--create creates a missing ledger, never overwrites a broken one" {
	rm "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	run -0 "$RDMACTL" quota show --create
	assert_line --index 0 "global: 0 processes"
	printf 'NOTMINE!' | dd of="$RDMACTL_LEDGER" conv=notrunc status=none
	run -1 "$RDMACTL" quota show --create
}

@test "a fresh host: show says 'no limits set' (JSON: an empty ledger's document) and creates nothing" {
	rm "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	run --separate-stderr -0 "$RDMACTL" quota show
	assert_output "no limits set"
	assert_equal "$stderr" ""
	run -0 "$RDMACTL" quota show --global
	assert_output "no limits set"
	run --separate-stderr -0 "$RDMACTL" -j quota show
	local doc=$output
	run -0 "$RDMACTL" -j -p quota show --pid $$
	local pdoc=$output
	# a job or a cgroup has no entry in an empty ledger either
	run --separate-stderr -1 "$RDMACTL" -j quota show --job train
	assert_output ""
	assert_equal "$stderr" "rdmactl quota: no ledger entry for job train (no limits, no managed process)"
	[ ! -e "$RDMACTL_LEDGER" ]
	[ ! -e "$RDMACTL_LEDGER.usage" ]
	run -0 "$RDMACTL" quota init
	assert_equal "$("$RDMACTL" -j quota show)" "$doc"
	assert_equal "$("$RDMACTL" -j -p quota show --pid $$)" "$pdoc"
}

@test "a fresh host: root's first set creates the ledger as 'quota init' does, then sets the limit" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (the ledger is created only for root)"
	rm "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	run --separate-stderr -0 "$RDMACTL" quota set qp 10 --pid $$
	assert_output ""
	# only the warning that bats' shell is not under the interceptor
	[[ $stderr == "rdmactl quota: warning: the interceptor does not hold pid $$ "* && $stderr != *$'\n'* ]]
	run -0 stat -c '%a %u' "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	assert_line --index 0 "644 0"
	assert_line --index 1 "666 0"
	run -0 showq '.scopes | length == 2 and .[1].pid == '$$' and .[1].kinds.qp.limit == 10'
	# unset, too
	rm "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	run -0 "$RDMACTL" quota unset qp --global
	[ -e "$RDMACTL_LEDGER" ]
	# a broken ledger is never replaced
	rm "$RDMACTL_LEDGER"
	run --separate-stderr -1 "$RDMACTL" quota set qp 10 --global
	[[ $stderr == *"no ledger (create one with 'rdmactl quota init')"* ]]
	[ ! -e "$RDMACTL_LEDGER" ]
}

@test "a fresh host: an unprivileged user's set or unset names 'quota init' (exit 1) and creates nothing" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	# root's directory, which the unprivileged user can search but not write (bats' own are 0700)
	SHARED=$(mktemp -d /tmp/rdmactl-quota.XXXXXX)
	chmod 755 "$SHARED"
	export RDMACTL_LEDGER=$SHARED/ledger
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	local msg="rdmactl quota: cannot open the ledger: $RDMACTL_LEDGER: no ledger (create one with 'rdmactl quota init')"
	local root="limits are root's (an unprivileged user limits its own jobs: --job NAME, or rdmactl run --max-KIND)"
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 10 --pid $$
	assert_output ""
	assert_equal "$stderr" "rdmactl quota: cannot set qp on pid $$: the global, cgroup and process $root"
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota unset qp --global
	assert_equal "$stderr" "rdmactl quota: cannot unset qp on global: the global, cgroup and process $root"
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 10 --job j
	assert_equal "$stderr" "$msg"
	run -0 "${nobody[@]}" "$RDMACTL" quota show
	assert_output "no limits set"
	# even where it could create the ledger, it does not: the policy would be its own
	chmod 1777 "$SHARED"
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 10 --global
	[[ $stderr == *"$root" ]]
	run -0 ls -A "$SHARED"
	assert_output ""
}

@test "quota kernel unknown-driver-methods pass as an unprivileged user says root is needed, not bpffs (issue 51)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	local v
	for v in pass refuse; do
		run -1 --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
			"$RDMACTL" quota kernel unknown-driver-methods "$v"
		assert_equal "$stderr" "rdmactl quota: cannot set unknown-driver-methods to $v: it loads and pins the kernel quota programs, which needs root (CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON; missing: CAP_SYS_ADMIN CAP_BPF CAP_PERFMON)"
	done
	# reading it needs nothing
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups "$RDMACTL" quota kernel unknown-driver-methods
}

@test "an unprivileged user cannot set, unset or recreate; nothing changes; reading works" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	# a directory the unprivileged user can reach (bats' own temp directories are 0700)
	SHARED=$(mktemp -d /tmp/rdmactl-quota.XXXXXX)
	chmod 755 "$SHARED"
	export RDMACTL_LEDGER=$SHARED/ledger
	run -0 "$RDMACTL" quota init
	run -0 "$RDMACTL" quota set qp 5 --global
	local before
	before=$("$RDMACTL" -j quota show)
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 100 --global
	[[ $stderr == *"limits are root's"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota unset qp --global
	[[ $stderr == *"limits are root's"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 1 --pid $$
	[[ $stderr == *"limits are root's"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota init
	[[ $stderr == *"permission denied"* ]]
	run -0 "${nobody[@]}" "$RDMACTL" -j quota show
	run -0 jq -e '.scopes[0].kinds.qp.limit == 5' <<<"$output"
	assert_equal "$("$RDMACTL" -j quota show)" "$before"
	# but it can charge its own usage, as an application under the preload does
	run -0 "${nobody[@]}" "$HOLD" -c qp=1
	assert_line --index 0 "qp: ok"
}

@test "live holders are shown with their usage; a SIGKILLed one is reclaimed and no longer shown" {
	run -0 "$RDMACTL" quota set qp 10 --global
	hold qp=3 mr_bytes=1M
	local a=$HPID
	hold qp=2
	local b=$HPID
	run -0 showq '.scopes[0].kinds.qp.usage == 5 and .scopes[0].kinds.mr_bytes.usage == 1048576 and .scopes[0].nprocs == 2'
	run -0 showq "[.scopes[] | select(.scope == \"process\" and .pid == $a)] | length == 1 and .[0].kinds.qp.usage == 3"
	run -0 "$RDMACTL" quota show --pid "$a"
	assert_line --regexp '^  qp +unlimited +3 +- +-$'
	kill -9 "$a"
	wait "$a" 2>/dev/null || true
	run -0 showq "([.scopes[] | select(.scope == \"process\" and .pid == $a)] | length == 0) and .scopes[0].kinds.qp.usage == 2 and .scopes[0].kinds.mr_bytes.usage == 0"
	kill -9 "$b"
	wait "$b" 2>/dev/null || true
	run -0 "$RDMACTL" quota gc
	assert_output "reclaimed 1 dead process"
	run -0 showq '.scopes[0].kinds.qp.usage == 0 and .scopes[0].nprocs == 0'
}

@test "job limits: a new creation sees a changed limit; lowering below usage refuses but destroys nothing" {
	hold -J train qp=2
	local a=$HPID
	run -0 "$RDMACTL" quota set qp 3 --job train
	run -3 "$HOLD" -a train -c qp=2
	assert_line --index 0 --regexp "^qp: refused qp for pid [0-9]+ \(job train\): 3/3 in use, limit set by job train$"
	run -0 "$RDMACTL" quota set qp 1 --job train
	run -0 showq '.scopes[] | select(.scope == "job" and .job == "train") | .kinds.qp | .limit == 1 and .usage == 2 and .headroom == 0' --job train
	kill -0 "$a"
	run -0 "$RDMACTL" quota show --job train
	assert_line --index 0 "job train: 1 process"
	assert_line --regexp '^  qp +1 +2 +0 +interceptor$'
	kill "$a"
	wait "$a" || true
	# the job entry goes with its last process
	run -1 "$RDMACTL" quota show --job train
}

@test "pid limits apply to the next creation of that process only, and die with it" {
	run -0 "$RDMACTL" quota set cq 1 --pid $$
	run -0 showq ".scopes[] | select(.scope == \"process\" and .pid == $$) | .kinds.cq.limit == 1"
	# another process is not limited by $$'s limit
	run -0 "$HOLD" -c cq=2
	run -0 "$RDMACTL" quota unset cq --pid $$
	run -0 showq "[.scopes[] | select(.scope == \"process\")] | length == 0"
}

@test "--pid on a process the interceptor does not hold: recorded, warned with --kernel, never shown as the interceptor's (issue 51)" {
	sleep 60 3>&- &
	local p=$!
	PIDS+=("$p")
	run -0 --separate-stderr "$RDMACTL" quota set qp 10 --pid "$p"
	assert_output ""
	assert_equal "$stderr" "rdmactl quota: warning: the interceptor does not hold pid $p (not attached to the ledger, librdmactl-preload.so not loaded): its qp limit is recorded but binds nothing until it runs under the interceptor (a limit the kernel enforces now: rdmactl quota set qp 10 --pid $p --kernel)"
	run -0 --separate-stderr "$RDMACTL" quota show --pid "$p"
	assert_line --index 0 "pid $p: (not attached to the ledger: the interceptor does not hold it, its limits bind nothing until it does)"
	assert_line --regexp '^  qp +10 +0 +10 +none$'
	refute_output --partial interceptor$'\n'
	run -0 showq ".scopes[] | select(.scope == \"process\" and .pid == $p) | .nprocs == 0 and .kinds.qp.limit == 10 and .kinds.qp.enforced_by == []"
	# unset and an unlimited value say nothing
	run -0 --separate-stderr "$RDMACTL" quota unset qp --pid "$p"
	[ -z "$stderr" ]
	# with the preload loaded (not attached until its first verbs call): no warning
	LD_PRELOAD=$PRELOAD sleep 60 3>&- &
	local q=$!
	PIDS+=("$q")
	wait_for 5 grep -q librdmactl-preload "/proc/$q/maps"
	run -0 --separate-stderr "$RDMACTL" quota set qp 10 --pid "$q"
	[ -z "$stderr" ]
	# held by the interceptor: no warning, and the interceptor enforces it
	hold qp=1
	run -0 --separate-stderr "$RDMACTL" quota set qp 10 --pid "$HPID"
	[ -z "$stderr" ]
	run -0 "$RDMACTL" quota show --pid "$HPID"
	assert_line --index 0 "pid $HPID:"
	assert_line --regexp '^  qp +10 +1 +9 +interceptor$'
	run -0 showq ".scopes[] | select(.scope == \"process\" and .pid == $HPID) | .kinds.qp.enforced_by == [\"interceptor\"]"
}

# Run rdmactl with /sys/fs/bpf not a BPF file system (a tmpfs there, in a mount namespace of its own): every
# kernel limit fails, as on a host without bpffs.
no_bpffs() {
	unshare -m sh -c 'mount -t tmpfs rdmactl-no-bpffs /sys/fs/bpf && exec "$@"' sh "$@"
}

@test "a failed --kernel set changes nothing in the ledger: --global, --pid, --cgroup, and no ledger created (issue 51)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (a kernel limit, a mount namespace)"
	run -0 "$RDMACTL" quota set cq 5 --global
	run -1 --separate-stderr no_bpffs "$RDMACTL" quota set cq 77 --global --kernel
	[[ $stderr == *"cannot set the kernel limit"*"rdmactl quota: cannot set cq on global: nothing changed (the ledger's limit stays 5)"* ]]
	run -1 --separate-stderr no_bpffs "$RDMACTL" quota set pd 3 --global --kernel
	[[ $stderr == *"nothing changed (the ledger's limit stays unlimited)"* ]]
	run -0 showq '.scopes[0].kinds.cq.limit == 5 and .scopes[0].kinds.pd.limit == null'
	sleep 60 3>&- &
	local p=$!
	PIDS+=("$p")
	run -1 no_bpffs "$RDMACTL" quota set cq 7 --pid "$p" --kernel
	run -0 showq '[.scopes[] | select(.scope == "process")] | length == 0'
	run -0 "$RDMACTL" quota set qp 2 --pid "$p"
	run -1 no_bpffs "$RDMACTL" quota set qp 9 --pid "$p" --kernel
	run -0 showq "[.scopes[] | select(.scope == \"process\")] | length == 1 and .[0].kinds.qp.limit == 2"
	local root
	root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	if [ -n "$root" ] && mkdir "$root/rdmactl-kfail.$$"; then
		CG=$root/rdmactl-kfail.$$
		run -1 no_bpffs "$RDMACTL" quota set qp 9 --cgroup "$CG" --kernel
		run -0 showq '[.scopes[] | select(.scope == "cgroup")] | length == 0'
		run -0 "$RDMACTL" quota set qp 4 --cgroup "$CG"
		run -1 no_bpffs "$RDMACTL" quota set qp 9 --cgroup "$CG" --kernel
		run -0 showq '[.scopes[] | select(.scope == "cgroup")] | length == 1 and .[0].kinds.qp.limit == 4'
	fi
	# root's first set on a fresh host creates the ledger: not when it fails
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/fresh
	run -1 no_bpffs "$RDMACTL" quota set cq 77 --global --kernel
	[ ! -e "$RDMACTL_LEDGER" ] && [ ! -e "$RDMACTL_LEDGER.usage" ]
}

@test "--cgroup: relative and absolute paths name the same cgroup; its processes share one budget" {
	local root
	root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	[ -n "$root" ] || skip "no cgroup2 mount on this host"
	CG=$root/rdmactl-quota-test.$$
	mkdir "$CG" || skip "cannot create a cgroup under $root"
	run -0 "$RDMACTL" quota set qp 4 --cgroup "rdmactl-quota-test.$$"
	run -0 showq ".scopes[] | select(.scope == \"cgroup\") | .cgroup == \"/rdmactl-quota-test.$$\" and .kinds.qp.limit == 4" --cgroup "$CG"
	hold qp=0
	local outside=$HPID
	local out=$BATS_TEST_TMPDIR/in1
	bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" qp=3' _ "$CG" "$HOLD" >"$out" 2>&1 3>&- &
	PIDS+=($!)
	wait_for 10 grep -q '^ready' "$out"
	run -0 cat "$out"
	assert_line --index 0 "qp: ok"
	run -3 bash -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -c qp=2' _ "$CG" "$HOLD"
	assert_line --index 0 --regexp "^qp: refused qp for pid [0-9]+: 4/4 in use, limit set by cgroup /rdmactl-quota-test.$$\$"
	run -0 showq '.scopes[] | select(.scope == "cgroup") | .kinds.qp.usage == 3 and .nprocs == 1' --cgroup "$CG"
	kill "$outside" "${PIDS[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	run -0 "$RDMACTL" quota unset qp --cgroup "$CG/"
	run -0 showq '[.scopes[] | select(.scope == "cgroup")] | length == 0'
	run -2 "$RDMACTL" quota set qp 1 --cgroup "$root"
	assert_output --partial "root cgroup: use --global"
}

@test "quota --help describes kinds, scopes and has examples" {
	run -0 "$RDMACTL" quota --help
	assert_output --partial "KIND: ctx, pd, cq, qp, srq, mr, mr_bytes, ah, mw, xrcd, wq, wr"
	assert_output --partial "--cgroup=PATH"
	assert_output --partial "--kernel"
	assert_output --partial "Examples:"
	assert_output --partial "rdmactl quota set qp 10 --pid 1234"
}

@test "completion: verbs, kinds, values, scopes and pids" {
	source "$TOP/completions/rdmactl"
	cw() {
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMPREPLY=()
		_rdmactl
		printf '%s\n' "${COMPREPLY[@]}" | sort | xargs
	}
	run cw rdmactl quota ""
	assert_output "gc init kernel set show unset"
	run cw rdmactl quota s
	assert_output "set show"
	run cw rdmactl quota se m
	assert_output "mr mr_bytes mw"
	run cw rdmactl quota se w
	assert_output "wq wr"
	run cw rdmactl quota set qp ""
	assert_output "unlimited"
	run cw rdmactl quota set qp 5 ""
	assert_output "--cgroup --global --job --pid"
	run cw rdmactl quota unset ""
	assert_output "ah cq ctx mr mr_bytes mw pd qp srq wq wr xrcd"
	run cw rdmactl quota set qp 5 --pid "$$"
	[[ " $output " == *" $$ "* ]] || fail "pid $$ not offered: $output"
	run cw rdmactl quota show --ker
	assert_output "--kernel"
	# issue 51: bash-completion's words/cword are not set here ("words: bad array subscript")
	run cw rdmactl quota kernel repair ""
	assert_output ""
	run cw rdmactl quota kernel unknown-driver-methods ""
	assert_output "pass refuse"
}

@test "an unprivileged first run does not own the limits: its user limits its own jobs only; root's first set takes the ledger over (issue 51)" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to switch to an unprivileged user"
	SHARED=$(mktemp -d /tmp/rdmactl-quota.XXXXXX)
	chmod 1777 "$SHARED"
	export RDMACTL_LEDGER=$SHARED/ledger
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	# the first rdmactl on the host is an unprivileged run: it creates the ledger, owned by its user
	"${nobody[@]}" "$RDMACTL" run --job mine -- sleep 60 3>&- &
	PIDS+=($!)
	wait_for 5 "$BUILD/lab-progs/ledgerq" job mine
	[ "$(stat -c %u "$RDMACTL_LEDGER")" = 65534 ]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 1 --global
	[[ $stderr == *"cannot set qp on global: the global, cgroup and process limits are root's"* ]]
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 1 --pid $$
	[[ $stderr == *"limits are root's"* ]]
	run -0 showq '[.scopes[] | select(.scope != "job") | .kinds[] | .limit] | all(. == null)'
	# its own job: yes; root's job: no
	run -0 "${nobody[@]}" "$RDMACTL" quota set qp 3 --job mine
	run -0 showq '.scopes[] | select(.scope == "job") | .kinds.qp.limit == 3'
	"$RDMACTL" run --job roots -- sleep 60 3>&- &
	PIDS+=($!)
	wait_for 5 "$BUILD/lab-progs/ledgerq" job roots
	run --separate-stderr -1 "${nobody[@]}" "$RDMACTL" quota set qp 100 --job roots
	assert_equal "$stderr" "rdmactl quota: cannot change limits: job roots belongs to uid 0: only that user and root change its limits"
	# root's first change takes the ledger over: both files root's, the policy no longer writable by its maker
	run --separate-stderr -0 "$RDMACTL" quota set qp 4 --job mine
	assert_equal "$stderr" "rdmactl quota: note: $RDMACTL_LEDGER belonged to uid 65534, who could change its limits: it is root's now (check the limits it holds: rdmactl quota show)"
	run -0 stat -c '%u %g %a' "$RDMACTL_LEDGER" "$RDMACTL_LEDGER.usage"
	assert_output $'0 0 644\n0 0 666'
	run -1 "${nobody[@]}" test -w "$RDMACTL_LEDGER"
	run -0 showq '.scopes[] | select(.scope == "job" and .job == "mine") | .kinds.qp.limit == 4'
	run --separate-stderr -0 "$RDMACTL" quota set qp 10 --global
	[ -z "$stderr" ]
	run -0 showq '.scopes[0].kinds.qp.limit == 10'
	# a ledger an unprivileged user made with quota init is no different
	export RDMACTL_LEDGER=$SHARED/other
	run -0 "${nobody[@]}" "$RDMACTL" quota init
	run -1 "${nobody[@]}" "$RDMACTL" quota set qp 9 --global
}

@test "gc drops the limits of cgroups that no longer exist (a job step's cgroup after a node failure)" {
	local root
	root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	[ -n "$root" ] || skip "no cgroup2 mount on this host"
	mkdir "$root/rdmactl-gc-test.$$" || skip "cannot create a cgroup under $root"
	mkdir "$root/rdmactl-gc-live.$$"
	run -0 "$RDMACTL" quota set qp 4 --cgroup "rdmactl-gc-test.$$"
	run -0 "$RDMACTL" quota set qp 5 --cgroup "rdmactl-gc-live.$$"
	rmdir "$root/rdmactl-gc-test.$$"
	run -0 "$RDMACTL" -j quota gc
	rmdir "$root/rdmactl-gc-live.$$"
	run -0 jq -e '.cgroups_removed == 1' <<<"$output"
	run -0 "$RDMACTL" -j quota show
	run -0 jq -e "[.scopes[] | select(.scope == \"cgroup\") | .cgroup] == [\"/rdmactl-gc-live.$$\"]" <<<"$output"
}

@test "show names a cgroup's Kubernetes pod from \$RDMACTL_PODS_DIR/UID; gc removes the names of pods whose cgroups are gone (issue 52)" {
	local root u=0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11 v=1c6b5d2f-8a4e-4e3b-8b72-4d3a1e0f9b22 c pods=$RDMACTL_PODS_DIR
	root=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	[ -n "$root" ] || skip "no cgroup2 mount on this host"
	mkdir "$root/rdmactl-podname.$$" || skip "cannot create a cgroup under $root"
	CGT=$root/rdmactl-podname.$$
	c=$CGT/kubepods/besteffort/pod$u/0123456789abcdef
	mkdir -p "$c"
	run -0 "$RDMACTL" quota set qp 4 --cgroup "$c"
	# no name known: the uid alone
	run -0 "$RDMACTL" quota show
	assert_output --partial "(pod $u, container 0123456789ab): "
	run -0 showq '.scopes[] | select(.scope == "cgroup") | has("pod_namespace") or has("pod_name") | not'
	mkdir "$pods"
	printf 'team-a/web-0\n' >"$pods/$u"
	run -0 "$RDMACTL" quota show
	assert_output --partial "cgroup ${c#"$root"} (pod $u team-a/web-0, container 0123456789ab): "
	run -0 showq ".scopes[] | select(.scope == \"cgroup\") | .pod_uid == \"$u\" and .pod_namespace == \"team-a\" and
		.pod_name == \"web-0\" and .container_id == \"0123456789abcdef\""
	# a file not of the OCI hook's form names nothing
	printf 'team-a/web-0' >"$pods/$u"
	run -0 showq '.scopes[] | select(.scope == "cgroup") | has("pod_name") | not'
	printf 'team-a/web-0\n' >"$pods/$u"
	# gc: the name of a pod no cgroup names goes, u's stays while its cgroup is there
	printf 'team-b/db-0\n' >"$pods/$v"
	run -0 "$RDMACTL" -j quota gc
	run -0 jq -e '.pod_names_removed == 1 and .cgroups_removed == 0' <<<"$output"
	[ -e "$pods/$u" ] && [ ! -e "$pods/$v" ]
	run -0 "$RDMACTL" quota gc
	refute_output --partial "names of"
	find "$CGT" -depth -type d -exec rmdir {} +
	run -0 "$RDMACTL" quota gc
	assert_output --partial "removed the limits of 1 cgroup that is gone"
	assert_output --partial "removed the names of 1 pod whose cgroup is gone"
	[ -z "$(ls -A "$pods")" ]
}

@test "init --procs: the ledger holds that many processes, show says how many slots are in use; the next is refused with the fix" {
	run -0 "$RDMACTL" quota init --procs 2
	assert_output "created an empty ledger at $RDMACTL_LEDGER for 2 processes"
	run -0 "$RDMACTL" quota show
	assert_line "process slots: 0 of 2 in use"
	run -0 "$RDMACTL" quota show -j
	assert_equal "$(jq -c .procs <<<"$output")" '{"in_use":0,"capacity":2}'
	run -2 "$RDMACTL" quota init --procs 0
	assert_output --partial "--procs '0': a decimal number of processes from 1 to 1048576"
	run -2 "$RDMACTL" quota init --procs 2x
	run -2 "$RDMACTL" quota show --procs 2
	assert_output --partial "--procs goes with init"
}
