#!/usr/bin/env bats
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The kernel quota programs against the installed uverbs uapi headers: every method and write command that
# creates an object is classified by bpf/kq.bpf.c (a kind it reserves; write commands by kind_of_write() in
# bpf/kquverbs.bpf.h), or named here as creating no counted kind, with the reason. A new creating method in
# the headers fails this suite until it is one or the other: unclassified, it would reach the kernel's
# allocation without a reservation, where a creation past a limit is killed instead of refused.

load helper

HDR=${RDMACTL_TEST_UAPI:-/usr/include/rdma}

# The creating names of an enum's members in a header: CREATE, ALLOC, REG, OPEN in the name.
creating() { # FILE PREFIX
	grep -o "\b$2[A-Z0-9_]*" "$1" | grep -E '_(CREATE|ALLOC|REG|OPEN)(_|$)|_(CREATE|ALLOC|REG|OPEN)[A-Z_]*$' | sort -u
}

@test "every creating uverbs method of the installed headers is classified by the programs or named as counting nothing" {
	# methods whose objects are no counted kind (lib/core/kinds.h): flow actions, device memory, counters,
	# async event files; a context (GET_CONTEXT) is counted at the open of its file
	local none='UVERBS_METHOD_FLOW_ACTION_ESP_CREATE UVERBS_METHOD_DM_ALLOC UVERBS_METHOD_COUNTERS_CREATE UVERBS_METHOD_ASYNC_EVENT_ALLOC'
	local m missing=()
	[ -r "$HDR/ib_user_ioctl_cmds.h" ]
	for m in $(creating "$HDR/ib_user_ioctl_cmds.h" UVERBS_METHOD_); do
		[[ " $none " == *" $m "* ]] && continue
		grep -qw "$m" "$TOP/bpf/kq.bpf.c" || [ "$m" = UVERBS_METHOD_REG_MR ] || missing+=("$m")
	done
	[ ${#missing[@]} = 0 ] || { echo "not classified by bpf/kq.bpf.c: ${missing[*]}"; false; }
	# the test finds what it looks for: the headers' QP and CQ creates are among them
	creating "$HDR/ib_user_ioctl_cmds.h" UVERBS_METHOD_ | grep -qx UVERBS_METHOD_QP_CREATE
	creating "$HDR/ib_user_ioctl_cmds.h" UVERBS_METHOD_ | grep -qx UVERBS_METHOD_REG_DMABUF_MR
}

@test "every creating write command of the installed headers is classified or named as counting nothing" {
	# completion channels, flows and RWQ indirection tables are no counted kind; REG_SMR has no handler in
	# the kernel (the write dispatcher answers ENOSYS)
	local none='IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL IB_USER_VERBS_EX_CMD_CREATE_FLOW IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL IB_USER_VERBS_CMD_REG_SMR'
	local c k missing=()
	[ -r "$HDR/ib_user_verbs.h" ]
	for c in $(creating "$HDR/ib_user_verbs.h" IB_USER_VERBS_CMD_) $(creating "$HDR/ib_user_verbs.h" IB_USER_VERBS_EX_CMD_); do
		[[ " $none " == *" $c "* ]] && continue
		# bpf/kq.h repeats the numbers as KQ_CMD_* / KQ_CMD_EX_* (test_kq.c checks them); kind_of_write() uses them
		k=KQ_CMD_${c#IB_USER_VERBS_CMD_}
		[[ $c == IB_USER_VERBS_EX_CMD_* ]] && k=KQ_CMD_EX_${c#IB_USER_VERBS_EX_CMD_}
		[[ $c == IB_USER_VERBS_EX_CMD_CREATE_CQ || $c == IB_USER_VERBS_EX_CMD_CREATE_QP ]] && k=KQ_CMD_${c#IB_USER_VERBS_EX_CMD_}
		sed -n '/kind_of_write(__u32 cmd)/,/^}/p' "$TOP/bpf/kquverbs.bpf.h" | grep -qw "$k" || missing+=("$c")
	done
	[ ${#missing[@]} = 0 ] || { echo "not classified by kind_of_write(): ${missing[*]}"; false; }
}

@test "UVERBS_METHOD_REG_MR (6.17): the programs' method and length attribute are the uapi's" {
	local src=$BATS_TEST_TMPDIR/probe.c
	if grep -qw UVERBS_METHOD_REG_MR "$HDR/ib_user_ioctl_cmds.h"; then
		# headers that have it: the values themselves
		cat >"$src" <<-EOF
			#include <linux/types.h>
			#include <rdma/ib_user_ioctl_cmds.h>
			#include "kq.h"
			_Static_assert(KQ_METHOD_REG_MR == UVERBS_METHOD_REG_MR, "method");
			_Static_assert(KQ_ATTR_REG_MR_LENGTH == UVERBS_ATTR_REG_MR_LENGTH, "length attribute");
			int main(void) { return 0; }
		EOF
	else
		# older headers: it is the method after the last one they list on the MR object
		run -0 sed -n '/enum uverbs_methods_mr {/,/};/p' "$HDR/ib_user_ioctl_cmds.h"
		assert_equal "$(grep -c 'UVERBS_METHOD_' <<<"$output")" 5
		assert_equal "$(grep 'UVERBS_METHOD_' <<<"$output" | tail -n 1 | tr -d '\t ,')" UVERBS_METHOD_REG_DMABUF_MR
		cat >"$src" <<-EOF
			#include <linux/types.h>
			#include <rdma/ib_user_ioctl_cmds.h>
			#include "kq.h"
			_Static_assert(KQ_METHOD_REG_MR == UVERBS_METHOD_REG_DMABUF_MR + 1, "the next MR method");
			int main(void) { return 0; }
		EOF
	fi
	run cc -I"$HDR/.." -I"$TOP/bpf" -I"$TOP/lib" -fsyntax-only "$src"
	[ "$status" = 0 ] || { echo "$output"; false; }
}
