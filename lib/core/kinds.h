/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one table of RDMA resource kinds: every enum, name list and mapping of the other layers comes from it. */
#ifndef RDMACTL_KINDS_H
#define RDMACTL_KINDS_H

/*
 * KINDS(X) calls X once per kind:
 *   X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help)
 * name    the word users type (`quota set qp`), the JSON key, the name in RDMA netlink summaries
 * NAME    the same in capitals: LEDGER_NAME, NL_RES_NAME, RESTRACK_NAME, RDMACTL_MAX_NAME, --max-name
 * led     Y: a ledger kind (a counter, or the wr cap), in ledger order: the ledger file keeps its counters in
 *         this order, so rows with Y are only ever appended after the last of them, with a format bump. The
 *         interceptor counts in ledger kinds too (its RDMACTL_MAX_NAME variables, its local counters).
 * nl      Y: RDMA netlink dumps its objects (RDMA_NLDEV_CMD_RES_NAME_GET), in the order top shows them
 * rt,rtv  Y and the kernel's enum rdma_restrack_type value (include/rdma/restrack.h), or N and 0
 * cg      what the rdma cgroup counts it as: H hca_handle, O hca_object, N nothing
 * unit    N a count; B bytes (sizes take K, M, G, T suffixes); C a depth cap, checked, never charged
 * uverbs  the uverbs object (UVERBS_OBJECT_uverbs of rdma/ib_user_ioctl_cmds.h), or NONE
 * opt     the name in options and in words with hyphens (--max-opt)
 * help    what one of them is, for --help
 */
#define KINDS(X)                                                                                          \
	X(ctx, CTX, Y, Y, Y, 5, H, N, NONE, "ctx", "device contexts")                                   \
	X(pd, PD, Y, Y, Y, 0, O, N, PD, "pd", "protection domains")                                      \
	X(cq, CQ, Y, Y, Y, 1, O, N, CQ, "cq", "completion queues")                                       \
	X(qp, QP, Y, Y, Y, 2, O, N, QP, "qp", "queue pairs")                                             \
	X(srq, SRQ, Y, Y, Y, 7, O, N, SRQ, "srq", "shared receive queues")                               \
	X(mr, MR, Y, Y, Y, 4, O, N, MR, "mr", "memory regions")                                          \
	X(mr_bytes, MR_BYTES, Y, N, N, 0, N, B, NONE, "mr-bytes", "registered bytes (K, M, G, T suffixes)") \
	X(ah, AH, Y, N, N, 0, O, N, AH, "ah", "address handles")                                         \
	X(mw, MW, Y, N, N, 0, O, N, MW, "mw", "memory windows")                                          \
	X(xrcd, XRCD, Y, N, N, 0, O, N, XRCD, "xrcd", "XRC domains")                                     \
	X(wq, WQ, Y, N, N, 0, O, N, WQ, "wq", "work queues (ibv_create_wq)")                             \
	X(wr, WR, Y, N, N, 0, N, C, NONE, "wr", "work-request depth per QP or SRQ (a cap, not a count)") \
	X(cm_id, CM_ID, N, Y, Y, 3, N, N, NONE, "cm-id", "RDMA CM identifiers")                          \
	X(counter, COUNTER, N, N, Y, 6, N, N, NONE, "counter", "statistic counters")

/* KINDS_IF(col, ...): the arguments where a row's Y/N column is Y, nothing where it is N. */
#define KINDS_IF_Y(...) __VA_ARGS__
#define KINDS_IF_N(...)
#define KINDS_IF(col, ...) KINDS_IF_##col(__VA_ARGS__)
/* KINDS_SEL(col, yes, no): yes where a row's Y/N column is Y, else no. */
#define KINDS_SEL_Y(yes, no) yes
#define KINDS_SEL_N(yes, no) no
#define KINDS_SEL(col, yes, no) KINDS_SEL_##col(yes, no)

/* Every kind rdmactl knows, in table order. */
enum kind {
#define X(name, NAME, ...) KIND_##NAME,
	KINDS(X)
#undef X
	KIND_NR,
};

/* The kernel's enum rdma_restrack_type, as far as rdmactl looks at it (one-byte values in monitor events). */
enum restrack_type {
#define X(name, NAME, led, nl, rt, rtv, ...) KINDS_IF(rt, RESTRACK_##NAME = rtv, )
	KINDS(X)
#undef X
};
#define RESTRACK_NTYPES 8 /* one past the largest value above (checked where the names are built) */

/* Per kind (lib/core/kinds.c): its name; what the rdma cgroup counts it as; --max-OPT; the --help text. */
enum kind_rdmacg { KIND_CG_N, KIND_CG_H /* hca_handle */, KIND_CG_O /* hca_object */ };
extern const char *const kind_names[KIND_NR];
extern const unsigned char kind_rdmacg[KIND_NR];
extern const char *const kind_opt[KIND_NR];
extern const char *const kind_help[KIND_NR];

/*
 * The one spelling rule of a kind's word, in every interface (quota, run --max-*, annotations, the policy,
 * cdi --budget, monitor --type, top --sort): '_' and '-' are the same character, so "mr_bytes" and
 * "mr-bytes", "cm_id" and "cm-id" name one kind.
 */
#ifndef __bpf__ /* the BPF programs read this file for the table only (vmlinux.h has its own size_t) */
#include <stddef.h>
/* The kind whose name is word[0..len) under that rule, among the first n rows of the table, or -1. */
int kind_lookup(const char *word, size_t len, int n);
/* match_word() (exact, else unique prefix) of word under that rule against names spelt as the table does. */
int kind_match_word(const char *word, const char *const *names, int n);
#endif


#endif
