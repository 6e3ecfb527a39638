// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The inline verbs of verbs.h (create_qp_ex, create_cq_ex, alloc_mw, ...): their op pointers wrapped per context. */
#include <stddef.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "wrap.h"

struct ctx_ops {
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *, struct ibv_qp_init_attr_ex *);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *, struct ibv_cq_init_attr_ex *);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *, struct ibv_srq_init_attr_ex *);
	struct ibv_qp *(*open_qp)(struct ibv_context *, struct ibv_qp_open_attr *);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *, struct ibv_dm *, uint64_t, size_t, unsigned int);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *, enum ibv_mw_type);
	int (*dealloc_mw)(struct ibv_mw *);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *, struct ibv_xrcd_init_attr *);
	int (*close_xrcd)(struct ibv_xrcd *);
	struct ibv_wq *(*create_wq)(struct ibv_context *, struct ibv_wq_init_attr *);
	int (*destroy_wq)(struct ibv_wq *);
};

#define NCTX 256
/* An entry being filled or emptied: not a context any op can be looked up for. */
#define CTX_BUSY ((struct ibv_context *)1)
static struct ctx_ent {
	struct ibv_context *_Atomic ctx;
	bool imported;
	struct ctx_ops ops;
} ctxs[NCTX];

/* Where ctx_ops_of() last found a context: a program with one context finds it at the first look. */
static const struct ctx_ent ctx_none = { .ctx = CTX_BUSY };
static const struct ctx_ent *_Atomic ctx_last = &ctx_none;

static COLD_FN const struct ctx_ops *ctx_ops_find(struct ibv_context *ctx)
{
	unsigned int i;

	if (!ctx)
		return NULL;
	for (i = 0; i < NCTX; i++)
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_acquire) == ctx) {
			atomic_store_explicit(&ctx_last, &ctxs[i], memory_order_relaxed);
			return &ctxs[i].ops;
		}
	return NULL;
}

/* The ops saved for ctx (a context being filled or emptied is CTX_BUSY: never found), or NULL. */
static inline const struct ctx_ops *ctx_ops_of(struct ibv_context *ctx)
{
	const struct ctx_ent *e = atomic_load_explicit(&ctx_last, memory_order_relaxed);

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

/*
 * An entry is claimed by compare-and-swap (free to CTX_BUSY), filled, and published with the context's
 * address; no lock, so that an open pays no mutex. The verbs_context's fields come newest first: a context
 * whose size reaches the newest field wrapped here (alloc_null_mr) has all of them.
 */
void ctx_wrap(struct ibv_context *ctx, bool imported)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ctx_ent *e = NULL;
	unsigned int i;

	for (i = 0; i < NCTX && !e; i++) {
		struct ibv_context *free_ = NULL;

		if (!atomic_load_explicit(&ctxs[i].ctx, memory_order_relaxed) &&
		    atomic_compare_exchange_strong_explicit(&ctxs[i].ctx, &free_, CTX_BUSY, memory_order_acquire,
							    memory_order_relaxed))
			e = &ctxs[i];
	}
	if (!e) {
		plog(1, "more than %d open contexts: inline verbs on the new one are not counted", NCTX);
		return;
	}
	e->imported = imported;
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
	if (ctx->ops.alloc_mw && ctx->ops.dealloc_mw) {
		/* MWs: the one verb pair through these ops a program makes often enough to count */
		NOTE_OP(alloc_mw, ctx->ops.alloc_mw);
		NOTE_OP(dealloc_mw, ctx->ops.dealloc_mw);
		WRAP_OP(&ctx->ops, e, alloc_mw);
		WRAP_OP(&ctx->ops, e, dealloc_mw);
	} else {
		e->ops.alloc_mw = NULL;
		e->ops.dealloc_mw = NULL;
	}
	atomic_store_explicit(&e->ctx, ctx, memory_order_release);
}

bool ctx_unwrap(struct ibv_context *ctx)
{
	unsigned int i;

	for (i = 0; i < NCTX; i++) {
		struct ibv_context *c = ctx;

		/* a close of the same context from two threads at once: one of them finds it */
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_relaxed) == ctx &&
		    atomic_compare_exchange_strong_explicit(&ctxs[i].ctx, &c, CTX_BUSY, memory_order_acquire,
							    memory_order_relaxed)) {
			bool imported = ctxs[i].imported;

			atomic_store_explicit(&ctxs[i].ctx, NULL, memory_order_release);
			return imported;
		}
	}
	return false;
}

void ctx_atfork_child(void)
{
	unsigned int i;

	/* an entry another thread was filling or emptying: that thread is not in the child */
	for (i = 0; i < NCTX; i++)
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_relaxed) == CTX_BUSY)
			atomic_store_explicit(&ctxs[i].ctx, NULL, memory_order_relaxed);
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
