/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the interceptor's rooms share: the real verbs, the nesting guard, the charge/track protocol. */
#ifndef RDMACTL_PRELOAD_WRAP_H
#define RDMACTL_PRELOAD_WRAP_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "core/hot.h"
#include "objtab.h"
#include "preload.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* Internal to the preload (built -fvisibility=hidden): direct PC-relative access, no GOT. */
#pragma GCC visibility push(hidden)

/*
 * The verbs the preload exports, each as ibv_NAME with libibverbs' default version of it (IBVERBS_1.1 unless
 * the verb is newer): X(NAME, VERSION, return type, parameters). The table of real entry points, their
 * look-up and the table of wrappers (for the audit module and the dlsym interposer) come from it.
 */
#define PRELOAD_VERBS(X)                                                                                      \
	X(open_device, "IBVERBS_1.1", struct ibv_context *, (struct ibv_device *))                            \
	X(close_device, "IBVERBS_1.1", int, (struct ibv_context *))                                           \
	X(import_device, "IBVERBS_1.10", struct ibv_context *, (int))                                         \
	X(alloc_pd, "IBVERBS_1.1", struct ibv_pd *, (struct ibv_context *))                                   \
	X(dealloc_pd, "IBVERBS_1.1", int, (struct ibv_pd *))                                                  \
	X(reg_mr, "IBVERBS_1.1", struct ibv_mr *, (struct ibv_pd *, void *, size_t, int))                     \
	X(reg_mr_iova, "IBVERBS_1.7", struct ibv_mr *, (struct ibv_pd *, void *, size_t, uint64_t, int))      \
	X(reg_mr_iova2, "IBVERBS_1.8", struct ibv_mr *,                                                       \
	  (struct ibv_pd *, void *, size_t, uint64_t, unsigned int))                                          \
	X(reg_dmabuf_mr, "IBVERBS_1.12", struct ibv_mr *, (struct ibv_pd *, uint64_t, size_t, uint64_t, int, int)) \
	X(rereg_mr, "IBVERBS_1.1", int, (struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int))          \
	X(dereg_mr, "IBVERBS_1.1", int, (struct ibv_mr *))                                                    \
	X(create_cq, "IBVERBS_1.1", struct ibv_cq *, (struct ibv_context *, int, void *, struct ibv_comp_channel *, int)) \
	X(destroy_cq, "IBVERBS_1.1", int, (struct ibv_cq *))                                                  \
	X(create_srq, "IBVERBS_1.1", struct ibv_srq *, (struct ibv_pd *, struct ibv_srq_init_attr *))         \
	X(destroy_srq, "IBVERBS_1.1", int, (struct ibv_srq *))                                                \
	X(create_qp, "IBVERBS_1.1", struct ibv_qp *, (struct ibv_pd *, struct ibv_qp_init_attr *))            \
	X(destroy_qp, "IBVERBS_1.1", int, (struct ibv_qp *))                                                  \
	X(create_ah, "IBVERBS_1.1", struct ibv_ah *, (struct ibv_pd *, struct ibv_ah_attr *))                 \
	X(create_ah_from_wc, "IBVERBS_1.1", struct ibv_ah *, (struct ibv_pd *, struct ibv_wc *, struct ibv_grh *, uint8_t)) \
	X(destroy_ah, "IBVERBS_1.1", int, (struct ibv_ah *))

/* The real verbs, looked up once (init.c). */
struct real_verbs {
#define X(name, ver, ret, args) ret(*name) args;
	PRELOAD_VERBS(X)
#undef X
};
extern struct real_verbs real;


extern pthread_once_t pl_init_once;
/* Init is done: the fast path skips pthread_once() (a call into libc on every verb). */
extern bool pl_inited;
/* False in rdmactl's own processes and when libibverbs could not be found: then everything passes through. */
extern bool pl_active;
/*
 * pl_inited && pl_active: read by the context, AH and MR wrappers (REQUIRED, enter()); the other creates
 * find it in their route (ROUTE_OFF), the destroys in their record.
 */
extern bool pl_on;
/*
 * Set while this thread is inside a guarded verb: libibverbs calls some of its own exported verbs through
 * the PLT (ibv_reg_mr and ibv_reg_mr_iova -> ibv_reg_mr_iova2, create_ah_from_wc -> create_ah), and those
 * land here again. Only the outermost call charges (GUARDED_CREATE, NESTED_CREATE). Its compat versions
 * (create_qp@1.0 -> @@1.1) are not wrapped: the inner call is the only one seen.
 */
extern __thread int pl_guard __attribute__((tls_model("initial-exec")));

/* glibc's own dlvsym (dlsym.c): the preload's dlsym and dlvsym interpose the program's. */
void *pl_real_dlvsym(void *handle, const char *name, const char *ver);

/* Look the real verbs up, read the settings, attach to the ledger (init.c). */
void pl_init_once_fn(void);

/* Resolve the real table (first call may come before any enter(), e.g. a nested pass-through). */
static inline void need_real(void)
{
	if (__builtin_expect(!__atomic_load_n(&pl_inited, __ATOMIC_ACQUIRE), 0))
		pthread_once(&pl_init_once, pl_init_once_fn);
}

/* ctxops.c: the op pointers behind the inline verbs of verbs.h, wrapped per context. */
/* Its entry (NULL when there is no memory for one: its objects' records go to ctx_unknown). */
struct ctx_ent *ctx_wrap(struct ibv_context *ctx, bool imported);
/*
 * Forget a context before the real close frees it, and the records of the objects it still holds (their
 * charges kept: see obj_drop_ctx()); returns how many there were (0 for an imported context, whose records
 * stay). *charged: 1 when the context itself was charged (its entry says so), 0 when not, -1 when it has no
 * entry (its charge, if any, is a record of the table's).
 */
unsigned int ctx_close(struct ibv_context *ctx, int *charged);
void ctx_atfork_child(void);

/* What a create charged, kept until the object is tracked (or the charge given back). */
struct track {
	enum ledger_kind kind;
	uint64_t bytes;
};

/* Enter a wrapper. Returns false when this call is nested or rdmactl is inactive: pass through. */
static inline bool enter(void)
{
	if (pl_guard++)
		return false;
	if (__builtin_expect(__atomic_load_n(&pl_on, __ATOMIC_ACQUIRE), 1))
		return true;
	need_real();
	return pl_active;
}

static inline void leave(void)
{
	pl_guard--;
}

/* errno = -ret; -1. */
COLD_FN int pre_create_failed(int ret);

/*
 * Charge before the real create. 0: go on; -1: refused, errno set, caller returns failure; ACCT_PASS:
 * rdmactl inactive, the caller passes the call through.
 */
static inline ALWAYS_INLINE int pre_create(struct track *t, enum ledger_kind kind, uint64_t bytes)
{
	int ret = acct_charge_obj(kind, bytes);

	t->kind = kind;
	t->bytes = bytes;
	if (__builtin_expect(ret, 0))
		return ret > 0 ? ACCT_PASS : pre_create_failed(ret);
	return 0;
}

/* Same for a queue: its depth against the WR caps, and its count, in one charge. */
static inline ALWAYS_INLINE int pre_create_wr(struct track *t, enum ledger_kind kind, uint32_t send_wr, uint32_t recv_wr)
{
	unsigned char route = __atomic_load_n(&acct_route_wr[kind], __ATOMIC_RELAXED);
	int ret;

	if (__builtin_expect(route == ROUTE_LEDGER, 1))
		ret = ledger_take_obj(&acct_ledger, acct_slot, kind, send_wr > recv_wr ? send_wr : recv_wr);
	else if (route == ROUTE_LOCAL)
		ret = acct_charge_local(kind, 0);
	else if (route == ROUTE_NONE)
		ret = 0;
	else
		ret = acct_charge_wr_other(kind, send_wr, recv_wr);

	t->kind = kind;
	t->bytes = 0;
	if (__builtin_expect(ret, 0))
		return ret > 0 ? ACCT_PASS : pre_create_failed(ret);
	return 0;
}

/* The unusual ends of a create and a destroy (track.c): errno is preserved. */
/* A destroy whose record (table slot j, claimed) is of another kind than its wrapper's: given back as it says. */
COLD_FN void destroy_done_other(unsigned int j);
COLD_FN void create_failed(enum ledger_kind kind, uint64_t bytes);
COLD_FN void untracked(enum ledger_kind kind, uint64_t bytes);
COLD_FN void destroy_failed(const void *obj, const struct orec *r);

/* After the real create: keep the charge with the object, or give it back. errno is preserved. */
static inline ALWAYS_INLINE void post_create(const struct track *t, const void *obj, struct ibv_context *ctx)
{
	if (__builtin_expect(!obj, 0)) {
		create_failed(t->kind, t->bytes);
		return;
	}
	if (__builtin_expect(!obj_insert(obj, ctx_ent_of(ctx), t->bytes, t->kind), 0))
		untracked(t->kind, t->bytes);
}

/*
 * After the real destroy of obj, whose record r obj_take() took: release (neither touches errno: the
 * ledger makes no system calls), or keep the charge with the record put back.
 */
static inline ALWAYS_INLINE void post_destroy(const void *obj, const struct orec *r, int ret)
{
	if (__builtin_expect(!ret, 1))
		acct_release_obj(r->kind, r->bytes);
	else
		destroy_failed(obj, r);
}

/*
 * After the real destroy of obj, whose table slot j obj_claim() holds: on success the slot and the charge
 * are given back; on failure the record is put back as it was (the object may still be there).
 */
static inline ALWAYS_INLINE void destroy_done(const void *obj, int j, int ret, enum ledger_kind kind)
{
	struct orec_slot *e = &obj_tab[j];

	if (__builtin_expect(!ret, 1)) {
		/* kind: the wrapper's, a constant; a record of another (a caller's mix-up) goes out of line */
		if (__builtin_expect(e->r.kind == kind, 1)) {
			uint64_t bytes = kind == LEDGER_MR ? e->r.bytes : 0;

			obj_free_slot((unsigned int)j);
			acct_release_obj(kind, bytes);
		} else {
			destroy_done_other((unsigned int)j);
		}
	} else {
		atomic_store_explicit(&e->key, (uintptr_t)obj, memory_order_release);
	}
}

/*
 * The verbs every libibverbs since IBVERBS_1.1 has: the interceptor is active (pl_on) only where all of them
 * were found (init.c), so that their wrappers need no check of the real pointer on the usual path.
 */
#define PRELOAD_REQUIRED(X)                                                                                   \
	X(open_device) X(close_device) X(alloc_pd) X(dealloc_pd) X(dereg_mr) X(create_cq) X(destroy_cq)       \
	X(create_srq) X(destroy_srq) X(create_qp) X(destroy_qp) X(create_ah) X(destroy_ah)

/*
 * The start of a wrapper of a required verb: the active flag, read once. Only while it is off: init, the real
 * pointer's check (NOSYS: NOSYS_NULL or NOSYS_INT), and PASS (the real call) when rdmactl is inactive.
 */
#define REQUIRED(NOSYS, fn, PASS)                                                           \
	do {                                                                                \
		if (__builtin_expect(!__atomic_load_n(&pl_on, __ATOMIC_ACQUIRE), 0)) {      \
			need_real();                                                        \
			NOSYS(fn);                                                          \
			if (!__atomic_load_n(&pl_on, __ATOMIC_ACQUIRE))                     \
				return (PASS);                                              \
		}                                                                           \
	} while (0)

#define NOSYS_NULL(fn)                    \
	do {                              \
		if (!(fn)) {              \
			errno = EOPNOTSUPP; \
			return NULL;      \
		}                         \
	} while (0)

#define NOSYS_INT(fn)                     \
	do {                              \
		if (!(fn))                \
			return EOPNOTSUPP; \
	} while (0)

/*
 * A create wrapper: charge with PRE (which sees t), create with CALL, track with CTX, the owning context
 * (evaluated on the result r). Whether rdmactl is active is in the kind's route: while it is not (ROUTE_OFF),
 * PRE says ACCT_PASS and the call passes through, FN (the real entry point) checked. No nesting guard: libibverbs
 * calls none of these verbs from within another wrapped verb (its compat versions keep their own entry points,
 * which call the default version as a program would). The verbs it does call nested (ibv_create_ah from
 * ibv_create_ah_from_wc, ibv_reg_mr_iova2 from ibv_reg_mr and ibv_reg_mr_iova) use GUARDED_CREATE.
 */
#define CREATE_WITH(type, PRE, FN, CALL, CTX)                     \
	do {                                                      \
		struct track t;                                   \
		type r;                                           \
		int c_ = (PRE);                                   \
		if (__builtin_expect(c_ != 0, 0)) {               \
			if (c_ < 0)                               \
				return NULL;                      \
			NOSYS_NULL(FN);                           \
			return (CALL);                            \
		}                                                 \
		r = (CALL);                                       \
		post_create(&t, r, r ? (CTX) : NULL);             \
		return r;                                         \
	} while (0)

/*
 * FN, the real entry point CALL calls, is checked only when rdmactl is inactive (ACCT_PASS): the active
 * flag is then in the kind's route (ROUTE_OFF), read with it.
 */
#define CREATE(type, kind, bytes, FN, CALL, CTX) CREATE_WITH(type, pre_create(&t, kind, bytes), FN, CALL, CTX)
/* A queue: its depth (the larger of s and rq) against the WR caps, and its count, in one charge. */
#define CREATE_QUEUE(type, kind, s, rq, FN, CALL, CTX) \
	CREATE_WITH(type, pre_create_wr(&t, kind, s, rq), FN, CALL, CTX)

/*
 * A create that libibverbs also calls nested, or that calls such a verb: only the outermost call charges
 * (enter() also reads the active flag; NESTED_CREATE, after REQUIRED, the guard alone).
 */
#define GUARDED_CREATE(type, kind, bytes, CALL, CTX) GUARDED_CREATE_AT(enter(), type, kind, bytes, CALL, CTX)
#define NESTED_CREATE(type, kind, bytes, CALL, CTX) GUARDED_CREATE_AT(!pl_guard++, type, kind, bytes, CALL, CTX)
#define GUARDED_CREATE_AT(ENTER, type, kind, bytes, CALL, CTX)    \
	do {                                                      \
		struct track t;                                   \
		type r;                                           \
		int c_;                                           \
		if (!(ENTER)) {                                   \
			r = (CALL);                               \
			leave();                                  \
			return r;                                 \
		}                                                 \
		c_ = pre_create(&t, kind, bytes);                 \
		if (c_) {                                         \
			r = c_ > 0 ? (CALL) : NULL;               \
			leave();                                  \
			return r;                                 \
		}                                                 \
		r = (CALL);                                       \
		post_create(&t, r, r ? (CTX) : NULL);             \
		leave();                                          \
		return r;                                         \
	} while (0)

/*
 * A destroy wrapper once active: the record of x is claimed in place (obj_claim()) across the real destroy,
 * which CALL makes; then given back with its charge, or, when the destroy failed, put back as it was. An
 * object with no record of this process's (not charged, the parent's after fork()) passes through.
 */
#define DESTROY_CLAIMED(x, kind, ON_NONE, CALL)                   \
	do {                                                      \
		struct orec rec;                                  \
		int j, ret;                                       \
		j = obj_claim(x, &rec);                           \
		if (j == OBJ_NONE) {                              \
			ON_NONE;                                  \
			return (CALL);                            \
		}                                                 \
		ret = (CALL);                                     \
		if (__builtin_expect(j >= 0, 1))                  \
			destroy_done(x, j, ret, kind);            \
		else                                              \
			post_destroy(x, &rec, ret);               \
		return ret;                                       \
	} while (0)

#define DESTROY(x, kind, CALL)                                    \
	do {                                                      \
		if (!(x))                                         \
			return EINVAL;                            \
		DESTROY_CLAIMED(x, kind, (void)0, CALL);          \
	} while (0)

/*
 * The destroy wrapper of a required verb fn (NULL refused before anything else, as always). No flag read
 * before the record: an object with one was charged, so rdmactl is active; one without passes through,
 * init and the real pointer's check first.
 */
#define DESTROY_REQUIRED(x, kind, fn, CALL)                             \
	do {                                                            \
		if (!(x))                                               \
			return EINVAL;                                  \
		DESTROY_CLAIMED(x, kind, need_real(); NOSYS_INT(fn), CALL); \
	} while (0)

#pragma GCC visibility pop

#endif
