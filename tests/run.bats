#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdmactl run on the host: usage matrix, exit status, signals, environment, job lifetime in the ledger.

load helper

LQ=$BUILD/lab-progs/ledgerq

setup() {
	export RDMACTL_LEDGER=$BATS_TEST_TMPDIR/ledger
	# SANITIZE=1 builds: the programs here run with the preload (or another LD_PRELOAD) loaded first
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	"$RDMACTL" quota init >/dev/null
}

@test "--help: options, EXAMPLES, CMD placeholder" {
	run -0 "$RDMACTL" run --help
	assert_line --index 0 "Usage: rdmactl run [OPTION...] -- CMD [ARGS...]"
	for o in ctx pd cq qp srq mr mr-bytes ah mw xrcd wq wr; do
		assert_output --partial "--max-$o="
	done
	assert_output --partial "--job=NAME"
	assert_output --partial "--cgroup=PATH"
	assert_output --partial "--log=FILE"
	assert_output --partial "--fail-closed"
	assert_output --partial "Examples:"
}

@test "usage errors exit 2 with a message on stderr" {
	run -2 --separate-stderr "$RDMACTL" run
	assert_output ""
	assert_equal "${stderr_lines[0]}" "rdmactl run: missing CMD"
	run -2 --separate-stderr "$RDMACTL" run --max-qp -1 -- true
	[[ $stderr == *"--max-qp: invalid value '-1'"* ]]
	run -2 --separate-stderr "$RDMACTL" run --max-qp 5x -- true
	run -2 --separate-stderr "$RDMACTL" run --max-mr-bytes 1Q -- true
	[[ $stderr == *"a size like 64M"* ]]
	run -2 --separate-stderr "$RDMACTL" run --max-qp 18446744073709551616 -- true
	run -2 --separate-stderr "$RDMACTL" run --fail-open --fail-closed -- true
	[[ $stderr == *"mutually exclusive"* ]]
	run -2 --separate-stderr "$RDMACTL" run --job "" -- true
	run -2 --separate-stderr "$RDMACTL" run --job "$(printf 'x%.0s' {1..64})" -- true
	run -2 --separate-stderr "$RDMACTL" run --bogus -- true
}

@test "sizes and 'unlimited' are accepted" {
	run -0 "$RDMACTL" run --job sz --max-mr-bytes 1G --max-qp unlimited --max-wr 0 -- "$LQ" job sz
	assert_line "mr_bytes 0 1073741824"
	assert_line "qp 0 -"
	assert_line "wr 0 0"
}

@test "--max-KIND values are decimal: 010 is ten, 0x10 is refused naming the word (issue 51)" {
	run -0 "$RDMACTL" run --job dec --max-qp 010 --max-cq 09 --max-mr-bytes 010K -- "$LQ" job dec
	assert_line "qp 0 10"
	assert_line "cq 0 9"
	assert_line "mr_bytes 0 10240"
	run -2 --separate-stderr "$RDMACTL" run --max-qp 0x10 -- true
	[[ $stderr == *"--max-qp: invalid value '0x10': numbers are decimal, not hexadecimal"* ]]
	run -2 --separate-stderr "$RDMACTL" run --max-mr-bytes 0x10K -- true
	[[ $stderr == *"--max-mr-bytes: invalid value '0x10K': numbers are decimal, not hexadecimal"* ]]
}

@test "--max-mr_bytes is --max-mr-bytes: a kind with an underscore takes either spelling (issue 51)" {
	run -0 "$RDMACTL" run --job us --max-mr_bytes 1G -- "$LQ" job us
	assert_line "mr_bytes 0 1073741824"
	run -0 "$RDMACTL" run --job us --max-mr_bytes=2G -- "$LQ" job us
	assert_line "mr_bytes 0 2147483648"
	run -0 "$RDMACTL" run --help
	refute_output --partial "max-mr_bytes"
}

@test "CMD's exit status is rdmactl's; a signal gives 128+N; a missing CMD 127" {
	run -3 "$RDMACTL" run -- sh -c 'exit 3'
	run -0 "$RDMACTL" run -- true
	run -143 "$RDMACTL" run -- sh -c 'kill -TERM $$'
	run -137 "$RDMACTL" run -- sh -c 'kill -KILL $$'
	run -127 --separate-stderr "$RDMACTL" run -- /nonexistent/cmd
	[[ $stderr == "rdmactl run: cannot run /nonexistent/cmd: No such file or directory" ]]
	run -126 --separate-stderr "$RDMACTL" run -- /etc/passwd
}

@test "arguments after -- are CMD's, options included" {
	run -0 "$RDMACTL" run -- sh -c 'echo "$@"' sh --max-qp 3 -v
	assert_output "--max-qp 3 -v"
	run -0 "$RDMACTL" run --max-qp 3 printf '%s\n' a --b
	assert_output $'a\n--b'
}

@test "the environment: preload and audit prepended, existing LD_PRELOAD kept, job and ledger set" {
	run -0 env LD_PRELOAD=libc.so.6 "$RDMACTL" run --job envj --log /tmp/x --fail-closed -- \
		sh -c 'echo "$LD_PRELOAD|$LD_AUDIT|$RDMACTL_JOB|$RDMACTL_LEDGER|$RDMACTL_LOG_FILE|$RDMACTL_FAIL"'
	assert_output "$PRELOAD:libc.so.6|$PRELOAD|envj|$RDMACTL_LEDGER|/tmp/x|closed"
}

@test "the preload is found next to the binary, or via RDMACTL_PRELOAD; missing is a clear error" {
	run -1 --separate-stderr env RDMACTL_PRELOAD=/nonexistent.so "$RDMACTL" run -- true
	[[ $stderr == *"cannot find librdmactl-preload.so"* ]]
	local d=$BATS_TEST_TMPDIR/inst
	mkdir -p "$d/bin" "$d/lib/rdmactl"
	cp "$RDMACTL" "$d/bin/"
	run -1 --separate-stderr "$d/bin/rdmactl" run -- true
	cp "$PRELOAD" "$d/lib/rdmactl/"
	run -0 "$d/bin/rdmactl" run -- sh -c 'echo $LD_PRELOAD'
	assert_output "$d/lib/rdmactl/librdmactl-preload.so"
}

@test "the job is in the ledger with its limits before CMD starts, and gone after the tree exits" {
	run -0 "$RDMACTL" run --job before --max-qp 5 --max-mr-bytes 64M --max-cq 0 -- "$LQ" job before
	assert_line "qp 0 5"
	assert_line "cq 0 0"
	assert_line "mr_bytes 0 67108864"
	assert_line "pd 0 -"
	run -3 "$LQ" job before
}

@test "default job name is CMD's name and rdmactl's pid; a running job's name cannot be reused" {
	run -0 "$RDMACTL" run -- sh -c 'echo $RDMACTL_JOB'
	assert_output --regexp '^sh-[0-9]+$'
	"$RDMACTL" run --job dup -- sleep 5 3>&- &
	local first=$!
	wait_for 5 "$LQ" job dup
	run -1 --separate-stderr "$RDMACTL" run --job dup -- true
	[[ $stderr == *"cannot create job 'dup'"*"choose another --job name"* ]]
	wait $first
	run -0 "$RDMACTL" run --job dup -- true
}

@test "SIGTERM and SIGINT sent to rdmactl are forwarded to CMD" {
	local out=$BATS_TEST_TMPDIR/out
	"$RDMACTL" run -- bash -c "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.1; done" \
		>"$out" 3>&- &
	local pid=$!
	wait_for 5 grep -q ready "$out"
	kill -TERM $pid
	local st=0
	wait $pid || st=$?
	assert_equal "$st" 7
	run cat "$out"
	assert_line "got TERM"
	# A fresh file: the first half's "ready" must not start the second signal before the trap is set.
	out=$BATS_TEST_TMPDIR/out-int
	"$RDMACTL" run -- bash -c "trap 'echo got INT; exit 9' INT; echo ready; while :; do sleep 0.1; done" \
		>"$out" 3>&- &
	pid=$!
	wait_for 5 grep -q ready "$out"
	kill -INT $pid
	st=0
	wait $pid || st=$?
	assert_equal "$st" 9
}

@test "--cgroup: a path that is not a writable cgroup fails before CMD runs" {
	run -1 --separate-stderr "$RDMACTL" run --cgroup /nonexistent-rdmactl-test -- echo ran
	assert_output ""
	[[ $stderr == *"cannot move into cgroup /nonexistent-rdmactl-test"* ]]
}

@test "a process that never touches verbs runs unchanged under the preload (lazy init)" {
	run -0 "$RDMACTL" run --max-qp 0 --max-ctx 0 --fail-closed -- sh -c 'ls / >/dev/null && echo fine'
	assert_output fine
	run -0 env LD_PRELOAD="$PRELOAD" LD_AUDIT="$PRELOAD" RDMACTL_MAX_QP=0 python3 -c 'print("py fine")'
	assert_output "py fine"
}

@test "the preload exports only the verbs wrappers with libibverbs' versions, audit hooks and its marker" {
	run -0 bash -c "objdump -T '$PRELOAD' | awk '\$2 != \"*UND*\" && / DF | DO / { print \$(NF-1), \$NF }' | sort"
	assert_line "IBVERBS_1.1 ibv_create_qp"
	assert_line "IBVERBS_1.1 ibv_reg_mr"
	assert_line "IBVERBS_1.8 ibv_reg_mr_iova2"
	assert_line "IBVERBS_1.10 ibv_import_device"
	assert_line "IBVERBS_1.12 ibv_reg_dmabuf_mr"
	assert_line "RDMACTL_0 la_symbind64"
	assert_line "RDMACTL_0 rdmactl_preload_version"
	refute_output --partial "ledger_"
	refute_output --partial "parse_u64"
}


# Under an emulated CPU whose TLB a verb flushes, each code page the wrapper touches after the verb is a refill:
# the create side and the destroy side of the QP and MR wrappers each sit in one page (lib/core/util.h HOT_CREATE).
@test "the create and the destroy side of the QP and MR wrappers each fill one code page" {
	nm -S "$BUILD/librdmactl-preload.so" >"$BATS_TEST_TMPDIR/syms"
	pages() { # pages FUNCTION...: the distinct pages their code covers
		local f
		for f; do
			awk -v f="$f" '$4 == f && ($3 == "t" || $3 == "T") { print $1, $2 }' "$BATS_TEST_TMPDIR/syms" | {
				read -r a s || { echo "missing $f" >&2; echo missing; return; }
				echo $((0x$a / 4096)) $(((0x$a + 0x$s - 1) / 4096))
			}
		done | tr ' ' '\n' | sort -u
	}
	# each side opens a page
	for f in acct_charge acct_release; do
		a=$(awk -v f="$f" '$4 == f { print $1 }' "$BATS_TEST_TMPDIR/syms")
		[ -n "$a" ] && (((0x$a % 4096) == 0))
	done
	# UBSan's checks in a SANITIZE=1 build make the code too large for that: only the optimised build fits
	[ "${SANITIZE:-}" != 1 ] || return 0
	run -0 pages ibv_create_qp ibv_reg_mr ibv_reg_mr_iova2 reg_mr_iova2 acct_charge acct_charge_wr ledger_reserve_obj
	assert_equal "${#lines[@]}" 1
	create=$output
	run -0 pages ibv_destroy_qp ibv_dereg_mr acct_release ledger_release_obj
	assert_equal "${#lines[@]}" 1
	[ "$output" != "$create" ]
}

@test "completion: options, values, then CMD like a command line of its own" {
	run complete_words rdmactl run --max-q
	assert_output "--max-qp"
	run complete_words rdmactl run --max-mr
	assert_output "$(printf '%s\n' --max-mr --max-mr-bytes)"
	run complete_words rdmactl run --max-qp un
	assert_output unlimited
	run complete_words rdmactl run --fail-
	assert_output "$(printf '%s\n' --fail-closed --fail-open)"
	run complete_words rdmactl run --max-qp 2 -- ibv_devinf
	assert_output ibv_devinfo
	run complete_words rdmactl r --job x -- bas
	assert_line bash
	run complete_words rdmactl run --log "$BATS_TEST_TMPDIR/"
	[ -z "$output" ] || [[ $output == "$BATS_TEST_TMPDIR/"* ]]
}

@test "the preload's dlsym and dlvsym: a dlopen loader gets the wrappers of default versions only; RTLD_NEXT stays the caller's" {
	local DLF=$BUILD/lab-progs/dlfind
	# the control: without the preload every lookup is libibverbs' (or none)
	run -0 "$DLF"
	assert_line "dlvsym(h,ibv_create_qp,IBVERBS_1.1) libibverbs.so.1"
	assert_line "dlsym(h,ibv_dereg_mr) libibverbs.so.1"
	run -0 env LD_PRELOAD="$PRELOAD" "$DLF"
	assert_line "dlvsym(h,ibv_create_qp,IBVERBS_1.1) librdmactl-preload.so"
	assert_line "dlvsym(h,ibv_reg_mr_iova2,IBVERBS_1.8) librdmactl-preload.so"
	assert_line "dlsym(h,ibv_dereg_mr) librdmactl-preload.so"
	# a compat version keeps its own entry point; a verb the preload does not wrap is libibverbs'
	assert_line "dlvsym(h,ibv_create_qp,IBVERBS_1.0) libibverbs.so.1"
	assert_line "dlsym(h,ibv_get_device_list) libibverbs.so.1"
	assert_line "dlsym(h,ibv_nosuch) none"
	assert_line "dlerror set"
	# RTLD_NEXT from the program is the next after the program (the preload), not after the preload
	assert_line "dlsym(RTLD_NEXT,ibv_create_qp) librdmactl-preload.so"
	assert_line "dlvsym(RTLD_NEXT,getpid,GLIBC_2.2.5) libc.so.6"
	# under run (the audit module as well) the answers are the same
	run -0 "$RDMACTL" run -- "$DLF"
	assert_line "dlvsym(h,ibv_create_qp,IBVERBS_1.1) librdmactl-preload.so"
	assert_line "dlvsym(h,ibv_create_qp,IBVERBS_1.0) libibverbs.so.1"
	assert_line "dlsym(RTLD_NEXT,ibv_create_qp) librdmactl-preload.so"
}
