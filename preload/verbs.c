// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* librdmactl-preload.so's exported verbs: libibverbs' create and destroy entry points, charged and tracked. */
#include <string.h>

#include <infiniband/verbs.h>

#include "core/util.h"
#include "wrap.h"

PRELOAD_API const char rdmactl_preload_version[] = RDMACTL_VERSION;

PRELOAD_API struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx;
	struct ctx_ent *e;
	struct track t;

	REQUIRED(NOSYS_NULL, real.open_device, real.open_device(device));
	/* an open in progress: a charged context whose uverbs fd is not there yet (see ledger_open_mark) */
	acct_open_mark_obj();
	if (pre_create(&t, LEDGER_CTX, 0)) {
		acct_open_mark_obj();
		return NULL;
	}
	ctx = real.open_device(device);
	/* the context's charge is kept with its entry; without one (no memory), in a record of the table */
	e = ctx ? ctx_wrap(ctx, false) : NULL;
	if (__builtin_expect(e != NULL, 1))
		e->charged = true;
	else
		post_create(&t, ctx, ctx);
	acct_open_mark_obj();
	return ctx;
}

PRELOAD_API struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *ctx;

	need_real();
	NOSYS_NULL(real.import_device);
	/* An import shares the exporter's kernel context: nothing new to charge, but its ops are wrapped. */
	ctx = real.import_device(cmd_fd);
	if (ctx && __atomic_load_n(&pl_on, __ATOMIC_ACQUIRE))
		ctx_wrap(ctx, true);
	return ctx;
}

PRELOAD_API int ibv_close_device(struct ibv_context *ctx)
{
	unsigned int left;
	struct orec rec = { .kind = LEDGER_CTX };
	int had, ret;

	REQUIRED(NOSYS_INT, real.close_device, real.close_device(ctx));
	left = ctx_close(ctx, &had);
	if (__builtin_expect(had < 0, 0))
		had = obj_take(ctx, &rec);
	ret = real.close_device(ctx);
	/*
	 * Objects left in it keep the kernel's context too (rdma res show ctx still lists it): its charge stays
	 * with theirs until the process exits (see obj_drop_ctx). A failed close leaves a context we no longer
	 * wrap: safer to stop charging it than to guess.
	 */
	if (had && !left)
		post_destroy(ctx, &rec, 0);
	return ret;
}

PRELOAD_API struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	CREATE(struct ibv_pd *, LEDGER_PD, 0, real.alloc_pd, real.alloc_pd(context), r->context);
}

PRELOAD_API int ibv_dealloc_pd(struct ibv_pd *pd)
{
	DESTROY_REQUIRED(pd, LEDGER_PD, real.dealloc_pd, real.dealloc_pd(pd));
}

/* Where libibverbs has it (IBVERBS_1.8, rdma-core 29 on), every MR registration below ends up here. */
static HOT_CREATE struct ibv_mr *reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					      unsigned int access)
{
	GUARDED_CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_mr_iova2(pd, addr, length, iova, access), r->context);
}

/*
 * libibverbs' ibv_reg_mr and ibv_reg_mr_iova are ibv_reg_mr_iova2(pd, addr, length, iova (addr for
 * ibv_reg_mr), access) through its PLT, which comes back here as a nested call: where iova2 exists, call it
 * directly (same result, one library hop and one pass through a wrapper less).
 */
static COLD_FN struct ibv_mr *reg_mr_old(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	NOSYS_NULL(real.reg_mr);
	GUARDED_CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_mr(pd, addr, length, access), r->context);
}

/* The first call (init) or a libibverbs without iova2, out of line: the usual path is a tail call. */
static COLD_FN struct ibv_mr *reg_mr_first(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	need_real();
	if (!real.reg_mr_iova2)
		return reg_mr_old(pd, addr, length, access);
	return reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

PRELOAD_API HOT_CREATE struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	if (__builtin_expect(!__atomic_load_n(&pl_inited, __ATOMIC_ACQUIRE) || !real.reg_mr_iova2, 0))
		return reg_mr_first(pd, addr, length, access);
	return reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

PRELOAD_API struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					   int access)
{
	need_real();
	if (real.reg_mr_iova2)
		return reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
	NOSYS_NULL(real.reg_mr_iova);
	GUARDED_CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_mr_iova(pd, addr, length, iova, access), r->context);
}

PRELOAD_API HOT_CREATE struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
						       unsigned int access)
{
	need_real();
	NOSYS_NULL(real.reg_mr_iova2);
	return reg_mr_iova2(pd, addr, length, iova, access);
}

PRELOAD_API struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
					     int fd, int access)
{
	need_real();
	NOSYS_NULL(real.reg_dmabuf_mr);
	GUARDED_CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_dmabuf_mr(pd, offset, length, iova, fd, access),
	       r->context);
}

PRELOAD_API int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			     int access)
{
	struct orec rec;
	int64_t delta = 0;
	bool had;
	int ret;

	need_real();
	if (!real.rereg_mr) {
		errno = EOPNOTSUPP;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (!enter()) {
		ret = real.rereg_mr(mr, flags, pd, addr, length, access);
		leave();
		return ret;
	}
	had = obj_take(mr, &rec);
	if (had && (flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		delta = (int64_t)length - (int64_t)rec.bytes;
		if (delta > 0 && (ret = acct_mr_bytes(delta))) {
			/* Refused before anything changed: the MR keeps its old translation. */
			if (!obj_insert(mr, rec.ce, rec.bytes, rec.kind))
				acct_release(rec.kind, rec.bytes);
			errno = -ret;
			leave();
			return IBV_REREG_MR_ERR_INPUT;
		}
	}
	ret = real.rereg_mr(mr, flags, pd, addr, length, access);
	if (had) {
		int saved = errno;

		if (ret && delta > 0)
			acct_mr_bytes(-delta);
		else if (!ret && delta < 0)
			acct_mr_bytes(delta);
		if (!ret && delta)
			rec.bytes = length;
		/* After a failed command the MR may be gone or still there: keep the record, dereg settles it. */
		if (!obj_insert(mr, rec.ce, rec.bytes, rec.kind))
			acct_release(rec.kind, rec.bytes);
		errno = saved;
	}
	leave();
	return ret;
}

PRELOAD_API HOT_DESTROY int ibv_dereg_mr(struct ibv_mr *mr)
{
	DESTROY_REQUIRED(mr, LEDGER_MR, real.dereg_mr, real.dereg_mr(mr));
}

PRELOAD_API struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	CREATE(struct ibv_cq *, LEDGER_CQ, 0, real.create_cq,
	       real.create_cq(context, cqe, cq_context, channel, comp_vector), r->context);
}

PRELOAD_API int ibv_destroy_cq(struct ibv_cq *cq)
{
	DESTROY_REQUIRED(cq, LEDGER_CQ, real.destroy_cq, real.destroy_cq(cq));
}

PRELOAD_API struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	CREATE_QUEUE(struct ibv_srq *, LEDGER_SRQ, 0, attr ? attr->attr.max_wr : 0, real.create_srq,
		     real.create_srq(pd, attr), r->context);
}

PRELOAD_API int ibv_destroy_srq(struct ibv_srq *srq)
{
	DESTROY_REQUIRED(srq, LEDGER_SRQ, real.destroy_srq, real.destroy_srq(srq));
}

PRELOAD_API HOT_CREATE struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	CREATE_QUEUE(struct ibv_qp *, LEDGER_QP, attr ? attr->cap.max_send_wr : 0,
		     attr && !attr->srq ? attr->cap.max_recv_wr : 0, real.create_qp, real.create_qp(pd, attr), r->context);
}

PRELOAD_API HOT_DESTROY int ibv_destroy_qp(struct ibv_qp *qp)
{
	DESTROY_REQUIRED(qp, LEDGER_QP, real.destroy_qp, real.destroy_qp(qp));
}

PRELOAD_API struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	REQUIRED(NOSYS_NULL, real.create_ah, real.create_ah(pd, attr));
	/* also called by libibverbs' ibv_create_ah_from_wc, which charged the AH */
	NESTED_CREATE(struct ibv_ah *, LEDGER_AH, 0, real.create_ah(pd, attr), r->context);
}

PRELOAD_API struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						 uint8_t port_num)
{
	need_real();
	NOSYS_NULL(real.create_ah_from_wc);
	GUARDED_CREATE(struct ibv_ah *, LEDGER_AH, 0, real.create_ah_from_wc(pd, wc, grh, port_num), r->context);
}

PRELOAD_API int ibv_destroy_ah(struct ibv_ah *ah)
{
	DESTROY_REQUIRED(ah, LEDGER_AH, real.destroy_ah, real.destroy_ah(ah));
}

/* ---- the table the audit redirection uses --------------------------------------------------------- */

const struct wrap_sym wrap_syms[] = {
#define X(name, ver, ret, args) { "ibv_" #name, (void *)ibv_##name, (void *const *)&real.name },
	PRELOAD_VERBS(X)
#undef X
};
const unsigned int wrap_nsyms = ARRAY_SIZE(wrap_syms);
