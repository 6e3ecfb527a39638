#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Drive the bash completion function the way readline does and check what it offers.

load helper

setup() {
	source "$TOP/completions/rdmactl"
}

@test "completion is registered for rdmactl" {
	run complete -p rdmactl
	assert_output "complete -F _rdmactl rdmactl"
}

@test "first word completes to the subcommands" {
	run complete_words rdmactl ""
	assert_output "$(printf '%s\n' cdi dev doctor export monitor oci-hook pingpong quota run top)"
	run complete_words rdmactl p
	assert_output "pingpong"
	run complete_words rdmactl mo
	assert_output "monitor"
}

@test "doctor completes its options" {
	run complete_words rdmactl doctor --p
	assert_output "$(printf '%s\n' --policy --pretty)"
	run complete_words rdmactl doc --cd
	assert_output "--cdi-dir"
}

@test "every subcommand in the binary's table is offered by the completion" {
	for c in $("$RDMACTL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }'); do
		run complete_words rdmactl "$c"
		assert_output "$c"
	done
}

@test "oci-hook completes its stages and options" {
	run complete_words rdmactl oci-hook ""
	assert_output "$(printf '%s\n' createRuntime poststop prestart)"
	run complete_words rdmactl oci --st
	assert_output "--state-dir"
	run complete_words rdmactl oci-hook --b
	assert_output "--budget"
	printf 'budget small qp=2\nbudget big qp=9\n' >"$BATS_TEST_TMPDIR/p"
	RDMACTL_CONTAINERS_CONF=$BATS_TEST_TMPDIR/p run complete_words rdmactl oci-hook --budget ""
	assert_output "$(printf '%s\n' big small)"
}

@test "cdi completes generate and list, then its options" {
	run complete_words rdmactl cdi ""
	assert_output "$(printf '%s\n' generate list)"
	run complete_words rdmactl cdi generate ""
	assert_output ""
	run complete_words rdmactl cdi generate --o
	assert_output "--output"
}

@test "dev completes show, then its options" {
	run complete_words rdmactl dev ""
	assert_output "show"
	run complete_words rdmactl dev --p
	assert_line -- "--policy"
	assert_line -- "--pretty"
}

@test "global options complete before the subcommand" {
	run complete_words rdmactl --j
	assert_output "--json"
	run complete_words rdmactl -
	assert_line -- "-j"
	assert_line -- "--pretty"
	assert_line -- "--verbose"
	assert_line -- "--version"
}

@test "after a global option the subcommand still completes" {
	run complete_words rdmactl -j t
	assert_output "top"
}

@test "an abbreviated subcommand gets its own completion" {
	run complete_words rdmactl mon --j
	assert_output "--json"
}

@test "after an unknown word nothing is offered" {
	run complete_words rdmactl bogus ""
	assert_output ""
}

@test "--cgroup completes cgroup directories below the cgroup v2 mount, wherever it is mounted" {
	local root
	root=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$root" ] || skip "no cgroup v2 hierarchy on this machine"
	[ -w "$root" ] || skip "cannot create a cgroup here"
	local cg=rdmactl-comp-$$
	mkdir "$root/$cg"
	run complete_words rdmactl run --cgroup rdmactl-comp-
	rmdir "$root/$cg"
	assert_output "$cg"
	run complete_words rdmactl quota show --cgroup "$root/$cg"
	assert_output ""
	run complete_words rdmactl quota show --cgroup "${root%/*}/"
	assert_line "$root"
}

@test "quota kinds and run's --max options are the binary's (one table of kinds)" {
	local kinds
	kinds=$("$RDMACTL" quota set nosuch 1 2>&1 | sed -n "s/.*(one of: \(.*\))$/\1/p" | tr -d "',")
	[ -n "$kinds" ]
	run complete_words rdmactl quota set ""
	assert_output "$(printf '%s\n' $kinds | sort)"
	run complete_words rdmactl run --max-
	assert_output "$("$RDMACTL" run --help | grep -o -- '--max-[a-z-]*' | sort -u)"
}
