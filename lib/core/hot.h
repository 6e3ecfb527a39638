/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Code and data layout of the hot paths (the interceptor's verbs, the ledger's reserve and release). */
#ifndef RDMACTL_HOT_H
#define RDMACTL_HOT_H

/*
 * Code layout of the interceptor's per-verb path: hot functions are grouped together by the linker
 * (.text.hot), cold ones (refusals, gc, logging) moved out of the way, so that a verb call touches few code
 * pages. Under an emulated CPU whose TLB the verb itself flushes, every page touched is a refill.
 */
#define HOT_FN __attribute__((hot))
#define COLD_FN __attribute__((cold, noinline))
/* Fewer calls on the hot path: under TCG each return after a TLB flush is a jump-cache miss. */
#define ALWAYS_INLINE __attribute__((always_inline))
/*
 * Tighter for the hottest verbs (QP create/destroy, MR reg/dereg): their wrappers and everything they call
 * on success, split in a create side and a destroy side of one code page each, so that each half of a verb
 * call (before the real verb, after it) refills one code page. The linker sorts .text.sorted.* sections by
 * name: the FIRST function of each side opens it on a page boundary.
 */
#define HOT_CREATE_FIRST __attribute__((hot, section(".text.sorted.rdmactl_1a"), aligned(4096)))
#define HOT_CREATE __attribute__((hot, section(".text.sorted.rdmactl_1b")))
#define HOT_DESTROY_FIRST __attribute__((hot, section(".text.sorted.rdmactl_2a"), aligned(4096)))
#define HOT_DESTROY __attribute__((hot, section(".text.sorted.rdmactl_2b")))
/* The same for data: the small variables every verb call reads share one page (read-only ones included). */
#define HOT_DATA __attribute__((section(".data.rdmactl_hot")))
#define HOT_CONST __attribute__((section(".data.rdmactl_hot_const")))

#endif
