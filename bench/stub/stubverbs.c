// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A stand-in libibverbs.so.1 for bench/wrap: QP create/destroy and MR reg/dereg that only flush this
 * process's TLB (mprotect over more pages than the kernel flushes one by one: a full flush, which under the
 * lab's TCG also empties the emulated TLB and jump cache, as the context switches and unmaps of a real verb
 * do) and hand out objects from a pool. Same exported versions as libibverbs for these verbs, and its
 * ibv_reg_mr calls ibv_reg_mr_iova2 through the PLT like libibverbs' does. Timing the interceptor around it leaves out the device's noise.
 */
#include <stdint.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#undef ibv_reg_mr

#define NPOOL 64

static struct ibv_context ctx;
static struct ibv_qp qps[NPOOL];
static struct ibv_mr mrs[NPOOL];
static unsigned int nqp, nmr;

#define FLUSH_PAGES 34 /* just above the kernel's single-page flush ceiling (33) */

static char *region;
static int prot = PROT_READ | PROT_WRITE;

static void verb_flush(void)
{
	if (!region) {
		region = mmap(NULL, FLUSH_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
			      -1, 0);
		if (region == MAP_FAILED)
			region = NULL;
	}
	/* every change of protection flushes (the same one twice would not) */
	prot ^= PROT_WRITE;
	if (region)
		mprotect(region, FLUSH_PAGES * 4096, prot);
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp = &qps[nqp++ % NPOOL];

	(void)attr;
	verb_flush();
	qp->context = pd ? pd->context : &ctx;
	qp->pd = pd;
	return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	(void)qp;
	verb_flush();
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	struct ibv_mr *mr = &mrs[nmr++ % NPOOL];

	(void)iova;
	(void)access;
	verb_flush();
	mr->context = pd ? pd->context : &ctx;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	return mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	(void)mr;
	verb_flush();
	return 0;
}
