#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Picking tests through make: check-unit T=SUITE[:CASE], check-bats S=SUITE F=REGEX, check-lab F=REGEX.

load helper

# make in the source tree on this build, untouched by the make (and its selection) and the bats this suite
# runs under: a bats started with this one's variables, or with its libexec first in PATH, does not find
# its own parts.
mk() {
	local -a unset=()
	local v path=:$PATH:

	for v in $(compgen -e); do
		case $v in
		BATS_* | MAKEFLAGS | MFLAGS | MAKELEVEL | T | F | S | LAB_SUITES | LAB_FILTER) unset+=(-u "$v") ;;
		esac
	done
	path=${path//:$BATS_LIBEXEC:/:}
	path=${path#:}
	env "${unset[@]}" PATH="${path%:}" make -s --no-print-directory -C "$TOP" OUT="$BUILD" "$@"
}

@test "check-unit T=util runs test_util only; T=util:CASE the tests of it that CASE names" {
	run --separate-stderr -0 mk check-unit T=util
	# tests/run-unit names each binary it runs (after a LINK line when it had to be built)
	assert_equal "$(grep "^# $BUILD/" <<<"$output")" "# $BUILD/tests/test_util"
	assert_line "ok - test_parse_size"
	assert_line "ok - test_match_word"
	run --separate-stderr -0 mk check-unit T=util:parse_size
	assert_equal "$(grep '^ok - ' <<<"$output")" "ok - test_parse_size"
	run --separate-stderr -0 mk check-unit T='util:test_parse_*'
	# as many as test_util.c runs (test_parse_u64, _seconds, _size, _pid)
	[ "$(grep -c '^ok - test_parse_' <<<"$output")" = "$(grep -c '^	RUN(test_parse_' tests/unit/test_util.c)" ]
	[ "$(grep -c '^ok - test_parse_' <<<"$output")" -ge 2 ]
	[ "$(grep -c '^ok - ' <<<"$output")" = "$(grep -c '^ok - test_parse_' <<<"$output")" ]
}

@test "check-unit: an unknown suite or test is an error that names the known ones" {
	run --separate-stderr mk check-unit T=nosuch
	assert_failure
	assert_output ""
	[[ $stderr == *"make check-unit: T=nosuch: no unit test tests/unit/test_nosuch.c"* ]]
	[[ $stderr == *"(T=SUITE[:CASE], SUITE one of: "*" ledger "*" util)"* ]]
	run --separate-stderr mk check-unit T=util:nosuch
	assert_failure
	[[ $stderr == *"test_util: no test matches UNIT_TEST=nosuch (tests: test_parse_u64 "* ]]
	[[ $stderr == *"FAILED: $BUILD/tests/test_util"* ]]
}

@test "check-bats S=cli F=NAME runs that one test" {
	run -0 mk check-bats S=cli F='^an unknown command is a usage error'
	assert_line "1..1"
	assert_line --regexp "^ok 1 an unknown command is a usage error naming the candidates in [0-9]+ms$"
	assert_line "host: 1 passed, 0 failed, 0 skipped"
}

@test "check-bats: an unknown suite is an error, a filter that matches nothing fails" {
	run --separate-stderr mk check-bats S=nosuch
	assert_failure
	[[ $stderr == "make check-bats: S=nosuch: no host suite tests/nosuch.bats (S=SUITE..., one of: cdi cli "* ]]
	run --separate-stderr mk check-bats S=cli F='no test has this name'
	assert_failure
	[[ $stderr == *"host: no test ran"* ]]
}

@test "check-lab F=REGEX picks lab suites by file name; one that matches none fails before booting" {
	run -0 env LAB_SUITES=run "$TOP/tests/lab/check" --list
	assert_output "tests/lab/run.bats"
	run -0 env LAB_SUITES='^(quota|top)$' "$TOP/tests/lab/check" --list
	assert_equal "${lines[*]}" "tests/lab/quota.bats tests/lab/top.bats"
	SECONDS=0
	run --separate-stderr mk check-lab F=nosuch
	assert_failure
	[[ $stderr == "tests/lab/check: LAB_SUITES=nosuch: no lab suite's file name matches (suites: "*" run "* ]]
	[ "$SECONDS" -lt 30 ]
}

@test "check-lab runs each kernel's suites in groups with LAB_JOBS=2, every suite once per kernel, nolsm last; the Kubernetes run first" {
	local groups='run|quota kq|kqdrv' again='^(00-lab|monitor|top|kq|kqattack|kqdrv)$' all want
	# make check-lab exports LAB_K8S=1 (these host tests may run beside it): 0 here, 1 below
	export LAB_K8S=0
	run -0 env LAB_JOBS=2 LAB_GROUPS="$groups" LAB_SUITES_AGAIN="$again" "$TOP/tests/lab/check-all" --list
	assert_equal "${lines[0]}" "run 1: stable ^(00-lab|quota|run)\$"
	assert_equal "${lines[1]}" "run 2: stable ^(kq|kqdrv)\$"
	assert_equal "${lines[2]}" "run 3: backports ^(00-lab|kq|kqdrv)\$"
	# "kq" names kq alone: kqattack goes with the suites no group names, on both kernels
	assert_equal "${lines[4]}" "run 5: backports ^(kqattack|monitor|top)\$"
	assert_equal "${lines[5]}" "run 6: stable nolsm"
	assert_equal "${#lines[@]}" 6
	# the first kernel's runs hold every suite, each once (00-lab, the lab's own checks, in the first of each kernel)
	all=$(printf '%s\n' "${lines[@]}" | sed -n 's/^run [0-9]*: stable ^(\(.*\))\$$/\1/p' | tr '|' '\n' |
		grep -vx 00-lab | sort | tr '\n' ' ')
	want=$(ls "$TOP"/tests/lab/*.bats | xargs -n1 basename | sed 's/\.bats$//' | grep -vx 00-lab | sort | tr '\n' ' ')
	assert_equal "$all" "$want"
	# one lane: every suite in one run, the second kernel's in one, as before
	run -0 env LAB_JOBS=1 LAB_GROUPS="$groups" LAB_SUITES_AGAIN="$again" "$TOP/tests/lab/check-all" --list
	assert_equal "${lines[0]}" "run 1: stable all"
	assert_equal "${lines[1]}" "run 2: backports $again"
	# F=REGEX: that, on every kernel
	run -0 env LAB_JOBS=2 LAB_SUITES=top "$TOP/tests/lab/check-all" --list
	assert_equal "${lines[*]}" "run 1: stable top run 2: backports top"
	run -2 env LAB_JOBS=x "$TOP/tests/lab/check-all" --list
	# LAB_K8S=1: the Kubernetes run (build and k8s.bats) is the first to start, then the same runs; with F, only
	# when it names k8s
	run -0 env LAB_K8S=1 LAB_JOBS=2 LAB_GROUPS="$groups" LAB_SUITES_AGAIN="$again" "$TOP/tests/lab/check-all" --list
	assert_equal "${lines[0]}" "run 1: stable k8s"
	assert_equal "${lines[1]}" "run 2: stable ^(00-lab|quota|run)\$"
	assert_equal "${#lines[@]}" 7
	run -0 env LAB_K8S=1 LAB_SUITES=k8s "$TOP/tests/lab/check-all" --list
	assert_output "run 1: stable k8s"
	run -0 env LAB_K8S=1 LAB_JOBS=2 LAB_SUITES=top "$TOP/tests/lab/check-all" --list
	assert_equal "${lines[*]}" "run 1: stable top run 2: backports top"
}
