// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The inline verbs of verbs.h (create_qp_ex, create_cq_ex, alloc_mw, ...): their op pointers wrapped per context. */
#include <stddef.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "wrap.h"

#define NCTX 256
static struct ctx_ent ctxs[NCTX];
/*
 * Entries past the table (a program with more than NCTX contexts open at once): a list that only grows,
 * its entries reused once free, never freed (a lookup may be reading one).
 */
struct ctx_more {
	struct ctx_ent e;
	struct ctx_more *next;
};
static struct ctx_more *_Atomic ctx_more;

struct ctx_ent ctx_unknown = { .ctx = CTX_BUSY };
static struct ctx_ent ctx_none = { .ctx = CTX_BUSY };
struct ctx_ent *_Atomic ctx_last = &ctx_none;

static struct ctx_ent *ctx_search(struct ibv_context *ctx)
{
	struct ctx_more *m;
	unsigned int i;

	for (i = 0; i < NCTX; i++)
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_acquire) == ctx)
			return &ctxs[i];
	for (m = atomic_load_explicit(&ctx_more, memory_order_acquire); m; m = m->next)
		if (atomic_load_explicit(&m->e.ctx, memory_order_acquire) == ctx)
			return &m->e;
	return NULL;
}

/*
 * A context without an entry (opened before the interceptor was there, or no memory for one) is kept in
 * ctx_unknown's ctx, so that the next lookup of it hits ctx_last too; ctx_search() never returns ctx_unknown.
 */
COLD_FN struct ctx_ent *ctx_ent_find(struct ibv_context *ctx)
{
	struct ctx_ent *e = ctx && ctx != CTX_BUSY ? ctx_search(ctx) : NULL;

	if (!e) {
		e = &ctx_unknown;
		atomic_store_explicit(&e->ctx, ctx && ctx != CTX_BUSY ? ctx : CTX_BUSY, memory_order_relaxed);
	}
	atomic_store_explicit(&ctx_last, e, memory_order_relaxed);
	return e;
}

static const struct ctx_ops *ctx_ops_find(struct ibv_context *ctx)
{
	struct ctx_ent *e = ctx_ent_find(ctx);

	return e == &ctx_unknown ? NULL : &e->ops; /* its ops are all NULL anyway */
}

/* The ops saved for ctx (a context being filled or emptied is CTX_BUSY: never found), or NULL. */
static inline const struct ctx_ops *ctx_ops_of(struct ibv_context *ctx)
{
	struct ctx_ent *e = atomic_load_explicit(&ctx_last, memory_order_relaxed);

	if (__builtin_expect(atomic_load_explicit(&e->ctx, memory_order_acquire) == ctx, 1))
		return &e->ops;
	return ctx_ops_find(ctx);
}

/*
 * Per op (those NOTE_OP() is given: the MW pair), the real op of every context wrapped so far when they all
 * had the same one (one provider, the usual case): a wrapper then calls it without looking its context up. NULL before the first; OP_MIXED
 * once two differed, for good. libibverbs never unloads a provider it loaded, so the op of a context closed
 * since is still the function the others have.
 */
static struct ctx_ops ops_all;
#define OP_MIXED(name) ((__typeof__(ops_all.name))1)

/* A context's op fn, noted before its wrapper is in place: no call through the wrapper sees ops_all older. */
#define NOTE_OP(name, fn)                                                                                  \
	do {                                                                                               \
		__typeof__(ops_all.name) seen_ = __atomic_load_n(&ops_all.name, __ATOMIC_RELAXED);         \
		if (__builtin_expect(seen_ == (fn), 1))                                                    \
			break;                                                                             \
		if (seen_ != OP_MIXED(name) &&                                                             \
		    (seen_ || !__atomic_compare_exchange_n(&ops_all.name, &seen_, (fn), false,             \
							   __ATOMIC_RELEASE, __ATOMIC_RELAXED)) &&         \
		    seen_ != (fn))                                                                         \
			__atomic_store_n(&ops_all.name, OP_MIXED(name), __ATOMIC_RELEASE);                 \
	} while (0)

/* Save the op (NULL where the context has none) and put the wrapper in its place where there is one. */
#define WRAP_OP(holder, e, name)                             \
	do {                                                 \
		(e)->ops.name = (holder)->name;              \
		if ((e)->ops.name)                           \
			(holder)->name = w_##name;           \
	} while (0)

static struct ibv_qp *w_create_qp_ex(struct ibv_context *, struct ibv_qp_init_attr_ex *);
static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *, struct ibv_cq_init_attr_ex *);
static struct ibv_srq *w_create_srq_ex(struct ibv_context *, struct ibv_srq_init_attr_ex *);
static struct ibv_qp *w_open_qp(struct ibv_context *, struct ibv_qp_open_attr *);
static struct ibv_mr *w_alloc_null_mr(struct ibv_pd *);
static struct ibv_mr *w_reg_dm_mr(struct ibv_pd *, struct ibv_dm *, uint64_t, size_t, unsigned int);
static struct ibv_mw *w_alloc_mw(struct ibv_pd *, enum ibv_mw_type);
static int w_dealloc_mw(struct ibv_mw *);
static struct ibv_xrcd *w_open_xrcd(struct ibv_context *, struct ibv_xrcd_init_attr *);
static int w_close_xrcd(struct ibv_xrcd *);
static struct ibv_wq *w_create_wq(struct ibv_context *, struct ibv_wq_init_attr *);
static int w_destroy_wq(struct ibv_wq *);

/* Is the field at offset off in this context (verbs_get_ctx_op() without the op check)? */
static bool vctx_has(const struct verbs_context *v, size_t off)
{
	return v->sz >= sizeof(*v) - off;
}

#define WRAP_VOP(v, e, name)                                                  \
	do {                                                                  \
		if (vctx_has(v, offsetof(struct verbs_context, name)))        \
			WRAP_OP(v, e, name);                                  \
	} while (0)

/* The verbs_context ops wrapped, each with its wrapper w_NAME. */
#define VCTX_WRAPPED(X)                                                                              \
	X(create_qp_ex) X(create_cq_ex) X(create_srq_ex) X(open_qp) X(alloc_null_mr) X(reg_dm_mr) X(open_xrcd) \
	X(close_xrcd) X(create_wq) X(destroy_wq)

/* A verbs_context older than the newest field wrapped (alloc_null_mr): each field looked at on its own. */
static COLD_FN void wrap_older(struct verbs_context *v, struct ctx_ent *e)
{
#define X(name) WRAP_VOP(v, e, name);
	VCTX_WRAPPED(X)
#undef X
}

/* Claim entry e if it is free (to CTX_BUSY). */
static bool ctx_claim(struct ctx_ent *e)
{
	struct ibv_context *free_ = NULL;

	return !atomic_load_explicit(&e->ctx, memory_order_relaxed) &&
	       atomic_compare_exchange_strong_explicit(&e->ctx, &free_, CTX_BUSY, memory_order_acquire,
						       memory_order_relaxed);
}

/* More than NCTX contexts open: a free entry of the list, or a new one on it; NULL without memory. */
static COLD_FN struct ctx_ent *ctx_claim_more(void)
{
	struct ctx_more *m;
	int saved = errno;

	for (m = atomic_load_explicit(&ctx_more, memory_order_acquire); m; m = m->next)
		if (ctx_claim(&m->e))
			return &m->e;
	m = calloc(1, sizeof(*m));
	errno = saved;
	if (!m)
		return NULL;
	atomic_store_explicit(&m->e.ctx, CTX_BUSY, memory_order_relaxed);
	m->next = atomic_load_explicit(&ctx_more, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&ctx_more, &m->next, m, memory_order_release,
						      memory_order_relaxed))
		;
	return &m->e;
}

/*
 * An entry is claimed by compare-and-swap (free to CTX_BUSY), filled, and published with the context's
 * address; no lock, so that an open pays no mutex. The verbs_context's fields come newest first: a context
 * whose size reaches the newest field wrapped here (alloc_null_mr) has all of them.
 */
struct ctx_ent *ctx_wrap(struct ibv_context *ctx, bool imported)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_mw *(*am)(struct ibv_pd *, enum ibv_mw_type);
	int (*dm)(struct ibv_mw *);
	struct ctx_ent *e = NULL;
	unsigned int i;

	for (i = 0; i < NCTX && !e; i++)
		if (ctx_claim(&ctxs[i]))
			e = &ctxs[i];
	if (!e && !(e = ctx_claim_more())) {
		plog(1, "no memory for a context's entry: inline verbs on it are not counted, nor its objects' records "
			"forgotten at its close");
		return NULL;
	}
	e->imported = imported;
	e->charged = false;
	atomic_store_explicit(&e->nrec, 0, memory_order_relaxed);
	/* a context address seen without an entry before (a closed one's, reused) is one no longer */
	if (atomic_load_explicit(&ctx_unknown.ctx, memory_order_relaxed) == ctx)
		atomic_store_explicit(&ctx_unknown.ctx, CTX_BUSY, memory_order_relaxed);
#define NEWER(a, b) (offsetof(struct verbs_context, a) <= offsetof(struct verbs_context, b))
#define X(name) &&NEWER(alloc_null_mr, name)
	_Static_assert(1 VCTX_WRAPPED(X), "alloc_null_mr is the newest of the fields wrapped");
#undef X
#undef NEWER
	if (v && __builtin_expect(vctx_has(v, offsetof(struct verbs_context, alloc_null_mr)), 1)) {
#define X(name) WRAP_OP(v, e, name);
		VCTX_WRAPPED(X)
#undef X
	} else {
		memset(&e->ops, 0, sizeof(e->ops));
		if (v)
			wrap_older(v, e);
	}
	am = ctx->ops.alloc_mw;
	dm = ctx->ops.dealloc_mw;
	if (am && dm) {
		/* MWs: the one verb pair through these ops a program makes often enough to count */
		NOTE_OP(alloc_mw, am);
		NOTE_OP(dealloc_mw, dm);
		e->ops.alloc_mw = am;
		e->ops.dealloc_mw = dm;
		ctx->ops.alloc_mw = w_alloc_mw;
		ctx->ops.dealloc_mw = w_dealloc_mw;
	} else {
		e->ops.alloc_mw = NULL;
		e->ops.dealloc_mw = NULL;
	}
	atomic_store_explicit(&e->ctx, ctx, memory_order_release);
	/* the open's objects come next: found at the first look */
	atomic_store_explicit(&ctx_last, e, memory_order_relaxed);
	return e;
}

unsigned int ctx_close(struct ibv_context *ctx, int *charged)
{
	struct ibv_context *c = ctx;
	struct ctx_ent *e = atomic_load_explicit(&ctx_last, memory_order_relaxed);
	unsigned int left = 0;

	if (atomic_load_explicit(&e->ctx, memory_order_relaxed) != ctx || e == &ctx_unknown)
		e = ctx_search(ctx);

	*charged = -1;
	if (!e)
		return 0;
	/* a close of the same context from two threads at once: one of them claims it */
	*charged = 0;
	if (!atomic_compare_exchange_strong_explicit(&e->ctx, &c, CTX_BUSY, memory_order_acquire, memory_order_relaxed))
		return 0;
	*charged = e->charged;
	e->charged = false;
	if (__builtin_expect(atomic_load_explicit(&e->nrec, memory_order_relaxed) != 0, 0))
		left = obj_drop_ctx(e, e->imported);
	if (e->imported)
		left = 0;
	atomic_store_explicit(&e->ctx, NULL, memory_order_release);
	return left;
}

/* In a forked child: an entry another thread was filling or emptying is free (that thread is not here). */
static void ctx_ent_atfork(struct ctx_ent *e)
{
	if (atomic_load_explicit(&e->ctx, memory_order_relaxed) == CTX_BUSY)
		atomic_store_explicit(&e->ctx, NULL, memory_order_relaxed);
	/* the table was emptied (obj_atfork_child): no record is the child's, nor the parent's contexts' charge */
	atomic_store_explicit(&e->nrec, 0, memory_order_relaxed);
	e->charged = false;
}

void ctx_atfork_child(void)
{
	struct ctx_more *m;
	unsigned int i;

	for (i = 0; i < NCTX; i++)
		ctx_ent_atfork(&ctxs[i]);
	for (m = atomic_load_explicit(&ctx_more, memory_order_relaxed); m; m = m->next)
		ctx_ent_atfork(&m->e);
	atomic_store_explicit(&ctx_unknown.nrec, 0, memory_order_relaxed);
}

/* --- the wrapped ops -------------------------------------------------------------------------------- */

/* The real op name for ctx: the one every context has (ops_all), else its own saved one; NULL if none. */
#define OP_OF(ctx, name)                                                                        \
	({                                                                                      \
		__typeof__(ops_all.name) f_ = __atomic_load_n(&ops_all.name, __ATOMIC_ACQUIRE); \
		if (__builtin_expect((uintptr_t)f_ <= (uintptr_t)OP_MIXED(name), 0)) {          \
			const struct ctx_ops *o_ = ctx_ops_of(ctx);                             \
			f_ = o_ ? o_->name : NULL;                                              \
		}                                                                               \
		f_;                                                                             \
	})

#define OPS_OR_FAIL(op, ctx, name)                      \
	__typeof__(ops_all.name) op = OP_OF(ctx, name); \
	if (!op) {                                      \
		errno = EOPNOTSUPP;                     \
		return NULL;                            \
	}

/* A destroy through the op saved for x's context. */
#define DESTROY_OP(x, kind, name)                                                      \
	do {                                                                           \
		__typeof__(ops_all.name) op_ = (x) ? OP_OF((x)->context, name) : NULL; \
		if (!op_)                                                              \
			return EOPNOTSUPP;                                             \
		DESTROY(x, kind, op_(x));                                              \
	} while (0)

static struct ibv_qp *w_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	OPS_OR_FAIL(op, ctx, create_qp_ex);
	CREATE_QUEUE(struct ibv_qp *, LEDGER_QP, attr ? attr->cap.max_send_wr : 0,
		     attr && !attr->srq ? attr->cap.max_recv_wr : 0, op, op(ctx, attr),
		     r->context);
}

static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	OPS_OR_FAIL(op, ctx, create_cq_ex);
	CREATE(struct ibv_cq_ex *, LEDGER_CQ, 0, op, op(ctx, attr), r->context);
}

static struct ibv_srq *w_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	OPS_OR_FAIL(op, ctx, create_srq_ex);
	CREATE_QUEUE(struct ibv_srq *, LEDGER_SRQ, 0, attr ? attr->attr.max_wr : 0, op,
		     op(ctx, attr), r->context);
}

static struct ibv_qp *w_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	OPS_OR_FAIL(op, ctx, open_qp);
	CREATE(struct ibv_qp *, LEDGER_QP, 0, op, op(ctx, attr), r->context);
}

static struct ibv_mr *w_alloc_null_mr(struct ibv_pd *pd)
{
	OPS_OR_FAIL(op, pd->context, alloc_null_mr);
	CREATE(struct ibv_mr *, LEDGER_MR, 0, op, op(pd), r->context);
}

static struct ibv_mr *w_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t len,
				  unsigned int access)
{
	OPS_OR_FAIL(op, pd->context, reg_dm_mr);
	CREATE(struct ibv_mr *, LEDGER_MR, len, op, op(pd, dm, off, len, access), r->context);
}

static struct ibv_mw *w_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	OPS_OR_FAIL(op, pd->context, alloc_mw);
	CREATE(struct ibv_mw *, LEDGER_MW, 0, op, op(pd, type), r->context);
}

static int w_dealloc_mw(struct ibv_mw *mw)
{
	DESTROY_OP(mw, LEDGER_MW, dealloc_mw);
}

static struct ibv_xrcd *w_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	OPS_OR_FAIL(op, ctx, open_xrcd);
	CREATE(struct ibv_xrcd *, LEDGER_XRCD, 0, op, op(ctx, attr), r->context);
}

static int w_close_xrcd(struct ibv_xrcd *xrcd)
{
	DESTROY_OP(xrcd, LEDGER_XRCD, close_xrcd);
}

static struct ibv_wq *w_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *attr)
{
	OPS_OR_FAIL(op, ctx, create_wq);
	CREATE_QUEUE(struct ibv_wq *, LEDGER_WQ, 0, attr ? attr->max_wr : 0, op,
		     op(ctx, attr), r->context);
}

static int w_destroy_wq(struct ibv_wq *wq)
{
	DESTROY_OP(wq, LEDGER_WQ, destroy_wq);
}
