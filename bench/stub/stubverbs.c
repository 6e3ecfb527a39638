// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A stand-in libibverbs.so.1 for bench/wrap: QP create/destroy, MR reg/dereg, PD alloc/dealloc and device
 * open/close that only flush this
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
static struct ibv_pd pds[NPOOL];
static unsigned int npd;
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

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = &pds[npd++ % NPOOL];

	verb_flush();
	pd->context = context ? context : &ctx;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	(void)pd;
	verb_flush();
	return 0;
}

/*
 * A device context as libibverbs makes one: extended (verbs_context), every op set (libibverbs fills the
 * ones a provider leaves out with its own that answer EOPNOTSUPP), so that the interceptor wraps what it
 * wraps around a real one. The ops are never called, but for the memory window's (bench/wrap -c counts MW pairs).
 */
static void no_op(void)
{
}

/* void (*)(void) converts to any function pointer type without a warning */
#define SET_OP(field) ((field) = (__typeof__(field))(void (*)(void))no_op)

static struct verbs_context vctxs[NPOOL];
static unsigned int nctx;
static struct ibv_mw mws[NPOOL];
static unsigned int nmw;

/* The memory-window ops (the inline ibv_alloc_mw and ibv_dealloc_mw call them): objects from a pool. */
static struct ibv_mw *stub_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = &mws[nmw++ % NPOOL];

	mw->context = pd->context;
	mw->pd = pd;
	mw->type = type;
	return mw;
}

static int stub_dealloc_mw(struct ibv_mw *mw)
{
	(void)mw;
	return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct verbs_context *v = &vctxs[nctx++ % NPOOL];

	verb_flush();
	v->sz = sizeof(*v);
	v->context.device = device;
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	SET_OP(v->create_qp_ex);
	SET_OP(v->create_cq_ex);
	SET_OP(v->create_srq_ex);
	SET_OP(v->open_qp);
	SET_OP(v->alloc_null_mr);
	SET_OP(v->reg_dm_mr);
	SET_OP(v->open_xrcd);
	SET_OP(v->close_xrcd);
	SET_OP(v->create_wq);
	SET_OP(v->destroy_wq);
	v->context.ops.alloc_mw = stub_alloc_mw;
	v->context.ops.dealloc_mw = stub_dealloc_mw;
	return &v->context;
}

int ibv_close_device(struct ibv_context *context)
{
	(void)context;
	verb_flush();
	return 0;
}

/*
 * The rest of IBVERBS_1.1's objects, which the interceptor needs to find in any libibverbs it counts for: not
 * measured here, each answers from a pool like the others.
 */
static struct ibv_cq cqs[NPOOL];
static struct ibv_srq srqs[NPOOL];
static struct ibv_ah ahs[NPOOL];
static unsigned int ncq, nsrq, nah;

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct ibv_cq *cq = &cqs[ncq++ % NPOOL];

	(void)cqe;
	(void)channel;
	(void)comp_vector;
	cq->context = context ? context : &ctx;
	cq->cq_context = cq_context;
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	(void)cq;
	return 0;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq = &srqs[nsrq++ % NPOOL];

	(void)attr;
	srq->context = pd ? pd->context : &ctx;
	srq->pd = pd;
	return srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	(void)srq;
	return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv_ah *ah = &ahs[nah++ % NPOOL];

	(void)attr;
	ah->context = pd ? pd->context : &ctx;
	ah->pd = pd;
	return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	(void)ah;
	return 0;
}
