// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The uverbs ABI values bpf/kq.h repeats for the BPF programs (which cannot include the uapi headers). */
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#include "kq/kq.h"
#include "ledger/ledger.h"
#include "unit.h"

static void test_abi(void)
{
	CHECK(KQ_RDMA_VERBS_IOCTL == RDMA_VERBS_IOCTL, "RDMA_VERBS_IOCTL");
	CHECK(KQ_CMD_GET_CONTEXT == IB_USER_VERBS_CMD_GET_CONTEXT && KQ_CMD_ALLOC_PD == IB_USER_VERBS_CMD_ALLOC_PD &&
		      KQ_CMD_CREATE_AH == IB_USER_VERBS_CMD_CREATE_AH &&
		      KQ_CMD_REG_MR == IB_USER_VERBS_CMD_REG_MR && KQ_CMD_REREG_MR == IB_USER_VERBS_CMD_REREG_MR &&
		      KQ_CMD_ALLOC_MW == IB_USER_VERBS_CMD_ALLOC_MW && KQ_CMD_CREATE_CQ == IB_USER_VERBS_CMD_CREATE_CQ &&
		      KQ_CMD_CREATE_QP == IB_USER_VERBS_CMD_CREATE_QP &&
		      KQ_CMD_CREATE_SRQ == IB_USER_VERBS_CMD_CREATE_SRQ &&
		      KQ_CMD_OPEN_XRCD == IB_USER_VERBS_CMD_OPEN_XRCD &&
		      KQ_CMD_CREATE_XSRQ == IB_USER_VERBS_CMD_CREATE_XSRQ &&
		      KQ_CMD_OPEN_QP == IB_USER_VERBS_CMD_OPEN_QP && KQ_CMD_EX_CREATE_WQ == IB_USER_VERBS_EX_CMD_CREATE_WQ,
	      "write command numbers");
	CHECK(KQ_CMD_FLAG_EXTENDED == IB_USER_VERBS_CMD_FLAG_EXTENDED &&
		      KQ_CMD_MASK == IB_USER_VERBS_CMD_COMMAND_MASK,
	      "extended flag and command mask");
	CHECK(sizeof(struct ib_uverbs_ioctl_hdr) == 24 && sizeof(struct ib_uverbs_attr) == 16, "ioctl layout");
	/* the MR length the check reads from INVOKE_WRITE's CORE_IN */
	CHECK(__builtin_offsetof(struct ib_uverbs_reg_mr, length) == 16, "ib_uverbs_reg_mr.length at 16");
	/* and its start just before: an MR whose end wraps is refused to limited tasks */
	CHECK(__builtin_offsetof(struct ib_uverbs_reg_mr, start) == 8, "ib_uverbs_reg_mr.start at 8");
	/* the most attributes the kernel takes in one request: hdr.length <= PAGE_SIZE (4 KiB on x86) */
	CHECK(sizeof(struct ib_uverbs_ioctl_hdr) + KQ_UVERBS_MAX_ATTRS * sizeof(struct ib_uverbs_attr) <= 4096 &&
		      sizeof(struct ib_uverbs_ioctl_hdr) + (KQ_UVERBS_MAX_ATTRS + 1) * sizeof(struct ib_uverbs_attr) > 4096,
	      "KQ_UVERBS_MAX_ATTRS fills a page");
}

static void test_kinds(void)
{
	CHECK((int)KQ_NK == (int)LEDGER_WR && (int)KQ_CTX == (int)LEDGER_CTX && (int)KQ_QP == (int)LEDGER_QP &&
		      (int)KQ_MR_BYTES == (int)LEDGER_MR_BYTES && (int)KQ_WQ == (int)LEDGER_WQ,
	      "kernel quota kinds are the ledger's counted kinds");
	CHECK(!strcmp(kq_kind_name(KQ_QP), "qp") && !strcmp(kq_kind_name(KQ_MR_BYTES), "mr_bytes") &&
		      !strcmp(kq_kind_name(KQ_NK), "?"),
	      "kind names");
	CHECK(sizeof(struct kq_obj) == 8 + 8 + 8 + KQ_MAXCHG * 16, "struct kq_obj has no hidden padding");
}

int main(void)
{
	RUN(test_abi);
	RUN(test_kinds);
	return unit_done();
}
