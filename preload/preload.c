// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* librdmactl-preload.so: interposes the libibverbs verbs that create and destroy resources and charges them. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "preload.h"
#include "util.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

PRELOAD_API const char rdmactl_preload_version[] = RDMACTL_VERSION;

/* The real verbs, looked up once. Default versions: IBVERBS_1.1 unless the verb is newer. */
static struct {
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	struct ibv_context *(*import_device)(int);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	struct ibv_mr *(*reg_mr_iova)(struct ibv_pd *, void *, size_t, uint64_t, int);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int);
	int (*rereg_mr)(struct ibv_mr *, int, struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	struct ibv_ah *(*create_ah)(struct ibv_pd *, struct ibv_ah_attr *);
	struct ibv_ah *(*create_ah_from_wc)(struct ibv_pd *, struct ibv_wc *, struct ibv_grh *, uint8_t);
	int (*destroy_ah)(struct ibv_ah *);
} real HOT_DATA;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* do_init() is done: the fast path skips pthread_once() (a call into libc on every verb). */
static bool inited HOT_DATA;
/* False in rdmactl's own processes and when libibverbs could not be found: then everything passes through. */
static bool active HOT_DATA;

/*
 * Set while this thread is inside an intercepted verb: libibverbs calls some of its own exported verbs
 * through the PLT (ibv_reg_mr -> ibv_reg_mr_iova2, create_qp@1.0 -> @@1.1, create_ah_from_wc ->
 * create_ah), and those land here again. Only the outermost call charges.
 */
static __thread int guard __attribute__((tls_model("initial-exec")));

/* ---- objects we charged, by pointer: what their destroy must give back ---------------------------- */

struct obj {
	const void *key;
	struct ibv_context *ctx;
	struct obj *next;
	uint64_t bytes;
	unsigned int gen;
	enum ledger_kind kind;
};

#define NBUCKET 4096u
static struct bucket {
	atomic_flag lock;
	struct obj *head;
} buckets[NBUCKET];
/* Bumped in a forked child: the parent's objects are not the child's to release. */
static unsigned int obj_gen HOT_DATA;

/*
 * Records of destroyed objects are kept for the next create (up to OBJ_CACHE), so that the verbs path does
 * not go through malloc/free; the first ones live next to the other hot variables, so that a program with
 * few objects at a time touches no page for them.
 */
#define OBJ_CACHE 1024u
#define OBJ_STATIC 16u
static struct obj obj_static[OBJ_STATIC] HOT_DATA;
static struct {
	atomic_flag lock;
	unsigned int n;
	struct obj *head;
} spare HOT_DATA;
/*
 * A small table in front of the buckets, also next to the hot variables: a record goes there when its
 * slot is free, else into its bucket. A program with few objects at a time then never touches the
 * buckets' pages.
 */
#define NRECENT 64u
static struct {
	atomic_flag lock;
	struct obj *slot[NRECENT];
} recent HOT_DATA;

static inline uint64_t hash_of(const void *key)
{
	uint64_t k = (uintptr_t)key;

	k ^= k >> 17;
	k *= 0x9e3779b97f4a7c15ull;
	return k >> 40;
}

static inline struct bucket *bucket_of(const void *key)
{
	return &buckets[hash_of(key) % NBUCKET];
}

static inline struct obj **recent_of(const void *key)
{
	return &recent.slot[hash_of(key) % NRECENT];
}

static inline void spin_lock(atomic_flag *f)
{
	while (atomic_flag_test_and_set_explicit(f, memory_order_acquire))
		__builtin_ia32_pause();
}

static inline void spin_unlock(atomic_flag *f)
{
	atomic_flag_clear_explicit(f, memory_order_release);
}

static inline void bucket_lock(struct bucket *b)
{
	spin_lock(&b->lock);
}

static inline void bucket_unlock(struct bucket *b)
{
	spin_unlock(&b->lock);
}

static inline ALWAYS_INLINE struct obj *obj_alloc(void)
{
	struct obj *o;

	spin_lock(&spare.lock);
	o = spare.head;
	if (o) {
		spare.head = o->next;
		spare.n--;
	}
	spin_unlock(&spare.lock);
	return o ? o : malloc(sizeof(*o));
}

static COLD_FN void obj_free_mem(struct obj *o)
{
	int saved = errno;

	free(o);
	errno = saved;
}

/* errno is preserved. */
static inline ALWAYS_INLINE void obj_free(struct obj *o)
{
	bool fixed = o >= obj_static && o < obj_static + OBJ_STATIC;

	spin_lock(&spare.lock);
	if (spare.n < OBJ_CACHE || fixed) {
		o->next = spare.head;
		spare.head = o;
		spare.n++;
		o = NULL;
	}
	spin_unlock(&spare.lock);
	if (o)
		obj_free_mem(o);
}

static inline ALWAYS_INLINE void obj_insert(struct obj *o)
{
	struct obj **r = recent_of(o->key);
	struct bucket *b;

	o->gen = obj_gen;
	spin_lock(&recent.lock);
	if (!*r) {
		*r = o;
		o = NULL;
	}
	spin_unlock(&recent.lock);
	if (!o)
		return;
	b = bucket_of(o->key);
	bucket_lock(b);
	o->next = b->head;
	b->head = o;
	bucket_unlock(b);
}

/* Unlink a record of key from the recent table or its bucket; NULL if none. */
static inline ALWAYS_INLINE struct obj *obj_unlink(const void *key)
{
	struct obj **r = recent_of(key), **pp, *o = NULL;
	struct bucket *b;

	spin_lock(&recent.lock);
	if (*r && (*r)->key == key) {
		o = *r;
		*r = NULL;
	}
	spin_unlock(&recent.lock);
	if (o)
		return o;
	b = bucket_of(key);
	bucket_lock(b);
	for (pp = &b->head; (o = *pp); pp = &o->next) {
		if (o->key == key) {
			*pp = o->next;
			break;
		}
	}
	bucket_unlock(b);
	return o;
}

/* Unlink the record of key (called before the real destroy, so the address cannot be reused meanwhile). */
static HOT_DESTROY struct obj *obj_take(const void *key)
{
	struct obj *o;

	/* the parent's objects, seen in a forked child, are not charged here: drop them, look further */
	while ((o = obj_unlink(key)) && o->gen != obj_gen)
		obj_free(o);
	return o;
}

/* The kernel destroys whatever a closed context still holds: give back its charges too. */
static void obj_drop_ctx(struct ibv_context *ctx)
{
	struct obj *r, *dropped = NULL;
	unsigned int i;

	spin_lock(&recent.lock);
	for (i = 0; i < NRECENT; i++) {
		if ((r = recent.slot[i]) && r->ctx == ctx) {
			recent.slot[i] = NULL;
			r->next = dropped;
			dropped = r;
		}
	}
	spin_unlock(&recent.lock);
	while ((r = dropped)) {
		dropped = r->next;
		if (r->gen == obj_gen)
			acct_release(r->kind, r->bytes);
		obj_free(r);
	}
	for (i = 0; i < NBUCKET; i++) {
		struct bucket *b = &buckets[i];
		struct obj **pp, *o, *gone = NULL;

		if (!__atomic_load_n(&b->head, __ATOMIC_RELAXED))
			continue;
		bucket_lock(b);
		for (pp = &b->head; (o = *pp);) {
			if (o->ctx == ctx) {
				*pp = o->next;
				o->next = gone;
				gone = o;
			} else {
				pp = &o->next;
			}
		}
		bucket_unlock(b);
		while ((o = gone)) {
			gone = o->next;
			if (o->gen == obj_gen)
				acct_release(o->kind, o->bytes);
			obj_free(o);
		}
	}
}

/* ---- per-context wrapping of the op pointers behind the inline verbs ----------------------------- */

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
static struct ctx_ent {
	struct ibv_context *_Atomic ctx;
	bool imported;
	struct ctx_ops ops;
} ctxs[NCTX];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct ctx_ops *ctx_ops_of(struct ibv_context *ctx)
{
	unsigned int i;

	for (i = 0; i < NCTX; i++)
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_acquire) == ctx)
			return &ctxs[i].ops;
	return NULL;
}

/* verbs_get_ctx_op() without the op check: is field at offset off present in this context? */
static bool vctx_has(struct verbs_context *v, size_t off)
{
	return v && v->sz >= sizeof(*v) - off;
}

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

#define WRAP_VOP(v, e, name)                                                                   \
	do {                                                                                   \
		if (vctx_has(v, offsetof(struct verbs_context, name)) && (v)->name) {           \
			(e)->ops.name = (v)->name;                                             \
			(v)->name = w_##name;                                                  \
		}                                                                              \
	} while (0)

static void ctx_wrap(struct ibv_context *ctx, bool imported)
{
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ctx_ent *e = NULL;
	unsigned int i;

	pthread_mutex_lock(&ctx_lock);
	for (i = 0; i < NCTX && !e; i++)
		if (!atomic_load_explicit(&ctxs[i].ctx, memory_order_relaxed))
			e = &ctxs[i];
	if (!e) {
		pthread_mutex_unlock(&ctx_lock);
		plog(1, "more than %d open contexts: inline verbs on the new one are not counted", NCTX);
		return;
	}
	memset(&e->ops, 0, sizeof(e->ops));
	e->imported = imported;
	WRAP_VOP(v, e, create_qp_ex);
	WRAP_VOP(v, e, create_cq_ex);
	WRAP_VOP(v, e, create_srq_ex);
	WRAP_VOP(v, e, open_qp);
	WRAP_VOP(v, e, alloc_null_mr);
	WRAP_VOP(v, e, reg_dm_mr);
	WRAP_VOP(v, e, open_xrcd);
	WRAP_VOP(v, e, close_xrcd);
	WRAP_VOP(v, e, create_wq);
	WRAP_VOP(v, e, destroy_wq);
	if (ctx->ops.alloc_mw && ctx->ops.dealloc_mw) {
		e->ops.alloc_mw = ctx->ops.alloc_mw;
		e->ops.dealloc_mw = ctx->ops.dealloc_mw;
		ctx->ops.alloc_mw = w_alloc_mw;
		ctx->ops.dealloc_mw = w_dealloc_mw;
	}
	atomic_store_explicit(&e->ctx, ctx, memory_order_release);
	pthread_mutex_unlock(&ctx_lock);
}

/* Forget a context before the real close frees it; returns whether it was an imported one. */
static bool ctx_unwrap(struct ibv_context *ctx)
{
	bool imported = false;
	unsigned int i;

	pthread_mutex_lock(&ctx_lock);
	for (i = 0; i < NCTX; i++) {
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_relaxed) == ctx) {
			imported = ctxs[i].imported;
			atomic_store_explicit(&ctxs[i].ctx, NULL, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&ctx_lock);
	return imported;
}

/* ---- init --------------------------------------------------------------------------------------- */

static bool own_process(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *base;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return !strcmp(base, "rdmactl");
}

/*
 * The child has one thread: locks another thread of the parent held at fork time would never be released.
 * The parent's object records stay (the parent's to release) but are ignored by generation.
 */
static void atfork_child(void)
{
	unsigned int i;

	for (i = 0; i < NBUCKET; i++)
		atomic_flag_clear_explicit(&buckets[i].lock, memory_order_relaxed);
	atomic_flag_clear_explicit(&spare.lock, memory_order_relaxed);
	atomic_flag_clear_explicit(&recent.lock, memory_order_relaxed);
	pthread_mutex_init(&ctx_lock, NULL);
	obj_gen++;
	acct_atfork_child();
}

static void *lookup(void *h, const char *name, const char *ver)
{
	void *p = h ? dlvsym(h, name, ver) : NULL;

	return p ? p : dlvsym(RTLD_NEXT, name, ver);
}

static void do_init(void)
{
	/*
	 * A handle on the loaded libibverbs finds it even when it was dlopen()ed with RTLD_LOCAL (then
	 * RTLD_NEXT cannot see it: that is the loader case the audit redirection brings here).
	 */
	void *h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	unsigned int i;

#define R(field, name, ver) real.field = (__typeof__(real.field))lookup(h, name, ver)
	R(open_device, "ibv_open_device", "IBVERBS_1.1");
	R(close_device, "ibv_close_device", "IBVERBS_1.1");
	R(import_device, "ibv_import_device", "IBVERBS_1.10");
	R(alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1");
	R(dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1");
	R(reg_mr, "ibv_reg_mr", "IBVERBS_1.1");
	R(reg_mr_iova, "ibv_reg_mr_iova", "IBVERBS_1.7");
	R(reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8");
	R(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
	R(rereg_mr, "ibv_rereg_mr", "IBVERBS_1.1");
	R(dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1");
	R(create_cq, "ibv_create_cq", "IBVERBS_1.1");
	R(destroy_cq, "ibv_destroy_cq", "IBVERBS_1.1");
	R(create_srq, "ibv_create_srq", "IBVERBS_1.1");
	R(destroy_srq, "ibv_destroy_srq", "IBVERBS_1.1");
	R(create_qp, "ibv_create_qp", "IBVERBS_1.1");
	R(destroy_qp, "ibv_destroy_qp", "IBVERBS_1.1");
	R(create_ah, "ibv_create_ah", "IBVERBS_1.1");
	R(create_ah_from_wc, "ibv_create_ah_from_wc", "IBVERBS_1.1");
	R(destroy_ah, "ibv_destroy_ah", "IBVERBS_1.1");
#undef R
	if (h)
		dlclose(h);
	if (own_process())
		return;
	acct_init();
	for (i = 0; i < OBJ_STATIC; i++)
		obj_free(&obj_static[OBJ_STATIC - 1 - i]);
	pthread_atfork(NULL, NULL, atfork_child);
	active = true;
}

static void init_once_fn(void)
{
	do_init();
	__atomic_store_n(&inited, true, __ATOMIC_RELEASE);
}

/* Resolve the real table (first call may come before any enter(), e.g. a nested pass-through). */
static inline void need_real(void)
{
	if (__builtin_expect(!__atomic_load_n(&inited, __ATOMIC_ACQUIRE), 0))
		pthread_once(&init_once, init_once_fn);
}

/* ---- the charge/track protocol around each create and destroy ----------------------------------- */

struct track {
	enum ledger_kind kind;
	uint64_t bytes;
	struct obj *o;
	bool counted;
};

/* Enter a wrapper. Returns false when this call is nested or rdmactl is inactive: pass through. */
static inline bool enter(void)
{
	if (guard++)
		return false;
	need_real();
	return active;
}

static inline void leave(void)
{
	guard--;
}

static COLD_FN int pre_create_failed(int ret)
{
	errno = -ret;
	return -1;
}

/* After the charge: the record the object will be tracked by. 0, or -1 with nothing charged. */
static inline ALWAYS_INLINE int pre_create_rec(struct track *t, enum ledger_kind kind, uint64_t bytes, int ret)
{
	t->kind = kind;
	t->bytes = bytes;
	t->counted = false;
	t->o = NULL;
	if (ret)
		return pre_create_failed(ret);
	t->o = obj_alloc();
	if (!t->o) {
		acct_release(kind, bytes);
		return pre_create_failed(-ENOMEM);
	}
	t->counted = true;
	return 0;
}

/* Charge before the real create. 0: go on; -1: refused, errno set, caller returns failure. */
static inline ALWAYS_INLINE int pre_create(struct track *t, enum ledger_kind kind, uint64_t bytes)
{
	return pre_create_rec(t, kind, bytes, acct_charge(kind, bytes));
}

/* Same for a queue: its depth against the WR caps, and its count, in one charge. */
static inline ALWAYS_INLINE int pre_create_wr(struct track *t, enum ledger_kind kind, uint32_t send_wr, uint32_t recv_wr)
{
	return pre_create_rec(t, kind, 0, acct_charge_wr(kind, send_wr, recv_wr));
}

static COLD_FN void create_failed(struct track *t)
{
	int saved = errno;

	acct_release(t->kind, t->bytes);
	obj_free(t->o);
	errno = saved;
}

/* After the real create: keep the charge with the object, or give it back. errno is preserved. */
static HOT_CREATE void post_create(struct track *t, const void *obj, struct ibv_context *ctx)
{
	if (!t->counted)
		return;
	if (obj) {
		t->o->key = obj;
		t->o->ctx = ctx;
		t->o->kind = t->kind;
		t->o->bytes = t->bytes;
		obj_insert(t->o);
	} else {
		create_failed(t);
	}
}

/* After the real destroy of obj whose record was taken by obj_take(): release, or put it back. */
static HOT_DESTROY void post_destroy(struct obj *o, int ret)
{
	if (!o)
		return;
	/* neither touches errno (the ledger makes no system calls, plog() and obj_free() preserve it) */
	if (ret) {
		obj_insert(o);
	} else {
		acct_release(o->kind, o->bytes);
		obj_free(o);
	}
}

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
 * One create wrapper: charge, call, track. CALL is the real call expression, CTX the owning context
 * expression (evaluated on the result r).
 */
/* A create wrapper: pass through when nested or inactive, else charge with PRE (which sees t), create, track. */
#define CREATE_WITH(type, PRE, CALL, CTX)                         \
	do {                                                      \
		struct track t;                                   \
		type r;                                           \
		if (!enter()) {                                   \
			r = (CALL);                               \
			leave();                                  \
			return r;                                 \
		}                                                 \
		if (PRE) {                                        \
			leave();                                  \
			return NULL;                              \
		}                                                 \
		r = (CALL);                                       \
		post_create(&t, r, r ? (CTX) : NULL);             \
		leave();                                          \
		return r;                                         \
	} while (0)

#define CREATE(type, kind, bytes, CALL, CTX) CREATE_WITH(type, pre_create(&t, kind, bytes), CALL, CTX)
/* A queue: its depth (the larger of s and rq) against the WR caps, and its count, in one charge. */
#define CREATE_QUEUE(type, kind, s, rq, CALL, CTX) CREATE_WITH(type, pre_create_wr(&t, kind, s, rq), CALL, CTX)

#define DESTROY(x, CALL)                                          \
	do {                                                      \
		struct obj *o;                                    \
		int ret;                                          \
		if (!(x))                                         \
			return EINVAL;                            \
		if (!enter()) {                                   \
			ret = (CALL);                             \
			leave();                                  \
			return ret;                               \
		}                                                 \
		o = obj_take(x);                                  \
		ret = (CALL);                                     \
		post_destroy(o, ret);                             \
		leave();                                          \
		return ret;                                       \
	} while (0)

/* ---- exported verbs ------------------------------------------------------------------------------ */

PRELOAD_API struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ibv_context *ctx;
	struct track t;

	need_real();
	NOSYS_NULL(real.open_device);
	if (!enter()) {
		ctx = real.open_device(device);
		leave();
		return ctx;
	}
	/* an open in progress: a charged context whose uverbs fd is not there yet (see ledger_open_mark) */
	acct_open_mark();
	if (pre_create(&t, LEDGER_CTX, 0)) {
		acct_open_mark();
		leave();
		return NULL;
	}
	ctx = real.open_device(device);
	if (ctx)
		ctx_wrap(ctx, false);
	post_create(&t, ctx, ctx);
	acct_open_mark();
	leave();
	return ctx;
}

PRELOAD_API struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *ctx;

	need_real();
	NOSYS_NULL(real.import_device);
	/* An import shares the exporter's kernel context: nothing new to charge, but its ops are wrapped. */
	if (!enter()) {
		ctx = real.import_device(cmd_fd);
		leave();
		return ctx;
	}
	ctx = real.import_device(cmd_fd);
	if (ctx)
		ctx_wrap(ctx, true);
	leave();
	return ctx;
}

PRELOAD_API int ibv_close_device(struct ibv_context *ctx)
{
	struct obj *o;
	int ret;

	need_real();
	NOSYS_INT(real.close_device);
	if (!enter()) {
		ret = real.close_device(ctx);
		leave();
		return ret;
	}
	o = obj_take(ctx);
	if (!ctx_unwrap(ctx))
		obj_drop_ctx(ctx);
	ret = real.close_device(ctx);
	/* A failed close leaves a context we no longer wrap: safer to stop charging it than to guess. */
	post_destroy(o, 0);
	leave();
	return ret;
}

PRELOAD_API struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	need_real();
	NOSYS_NULL(real.alloc_pd);
	CREATE(struct ibv_pd *, LEDGER_PD, 0, real.alloc_pd(context), r->context);
}

PRELOAD_API int ibv_dealloc_pd(struct ibv_pd *pd)
{
	need_real();
	NOSYS_INT(real.dealloc_pd);
	DESTROY(pd, real.dealloc_pd(pd));
}

/* Where libibverbs has it (IBVERBS_1.8, rdma-core 29 on), every MR registration below ends up here. */
static HOT_CREATE struct ibv_mr *reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					      unsigned int access)
{
	CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_mr_iova2(pd, addr, length, iova, access), r->context);
}

/*
 * libibverbs' ibv_reg_mr and ibv_reg_mr_iova are ibv_reg_mr_iova2(pd, addr, length, iova (addr for
 * ibv_reg_mr), access) through its PLT, which comes back here as a nested call: where iova2 exists, call it
 * directly (same result, one library hop and one pass through a wrapper less).
 */
static COLD_FN struct ibv_mr *reg_mr_old(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	NOSYS_NULL(real.reg_mr);
	CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_mr(pd, addr, length, access), r->context);
}

PRELOAD_API HOT_CREATE struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	need_real();
	if (__builtin_expect(!real.reg_mr_iova2, 0))
		return reg_mr_old(pd, addr, length, access);
	return reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

PRELOAD_API struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
					   int access)
{
	need_real();
	if (real.reg_mr_iova2)
		return reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
	NOSYS_NULL(real.reg_mr_iova);
	CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_mr_iova(pd, addr, length, iova, access), r->context);
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
	CREATE(struct ibv_mr *, LEDGER_MR, length, real.reg_dmabuf_mr(pd, offset, length, iova, fd, access),
	       r->context);
}

PRELOAD_API int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
			     int access)
{
	struct obj *o;
	int64_t delta = 0;
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
	o = obj_take(mr);
	if (o && (flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		delta = (int64_t)length - (int64_t)o->bytes;
		if (delta > 0 && (ret = acct_mr_bytes(delta))) {
			/* Refused before anything changed: the MR keeps its old translation. */
			obj_insert(o);
			errno = -ret;
			leave();
			return IBV_REREG_MR_ERR_INPUT;
		}
	}
	ret = real.rereg_mr(mr, flags, pd, addr, length, access);
	if (o) {
		int saved = errno;

		if (ret && delta > 0)
			acct_mr_bytes(-delta);
		else if (!ret && delta < 0)
			acct_mr_bytes(delta);
		if (!ret)
			o->bytes = length;
		/* After a failed command the MR may be gone or still there: keep the record, dereg settles it. */
		obj_insert(o);
		errno = saved;
	}
	leave();
	return ret;
}

PRELOAD_API HOT_DESTROY int ibv_dereg_mr(struct ibv_mr *mr)
{
	need_real();
	NOSYS_INT(real.dereg_mr);
	DESTROY(mr, real.dereg_mr(mr));
}

PRELOAD_API struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	need_real();
	NOSYS_NULL(real.create_cq);
	CREATE(struct ibv_cq *, LEDGER_CQ, 0, real.create_cq(context, cqe, cq_context, channel, comp_vector),
	       r->context);
}

PRELOAD_API int ibv_destroy_cq(struct ibv_cq *cq)
{
	need_real();
	NOSYS_INT(real.destroy_cq);
	DESTROY(cq, real.destroy_cq(cq));
}

PRELOAD_API struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	need_real();
	NOSYS_NULL(real.create_srq);
	CREATE_QUEUE(struct ibv_srq *, LEDGER_SRQ, 0, attr ? attr->attr.max_wr : 0, real.create_srq(pd, attr), r->context);
}

PRELOAD_API int ibv_destroy_srq(struct ibv_srq *srq)
{
	need_real();
	NOSYS_INT(real.destroy_srq);
	DESTROY(srq, real.destroy_srq(srq));
}

PRELOAD_API HOT_CREATE struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	need_real();
	NOSYS_NULL(real.create_qp);
	CREATE_QUEUE(struct ibv_qp *, LEDGER_QP, attr ? attr->cap.max_send_wr : 0,
		     attr && !attr->srq ? attr->cap.max_recv_wr : 0, real.create_qp(pd, attr), r->context);
}

PRELOAD_API HOT_DESTROY int ibv_destroy_qp(struct ibv_qp *qp)
{
	need_real();
	NOSYS_INT(real.destroy_qp);
	DESTROY(qp, real.destroy_qp(qp));
}

PRELOAD_API struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	need_real();
	NOSYS_NULL(real.create_ah);
	CREATE(struct ibv_ah *, LEDGER_AH, 0, real.create_ah(pd, attr), r->context);
}

PRELOAD_API struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
						 uint8_t port_num)
{
	need_real();
	NOSYS_NULL(real.create_ah_from_wc);
	CREATE(struct ibv_ah *, LEDGER_AH, 0, real.create_ah_from_wc(pd, wc, grh, port_num), r->context);
}

PRELOAD_API int ibv_destroy_ah(struct ibv_ah *ah)
{
	need_real();
	NOSYS_INT(real.destroy_ah);
	DESTROY(ah, real.destroy_ah(ah));
}

/* ---- wrapped context ops (the inline verbs of verbs.h) ------------------------------------------ */

#define OPS_OR_FAIL(ops, ctx, name)                          \
	const struct ctx_ops *ops = ctx_ops_of(ctx);         \
	if (!ops || !ops->name) {                            \
		errno = EOPNOTSUPP;                          \
		return NULL;                                 \
	}

/* A destroy through the op saved for x's context. */
#define DESTROY_OP(x, name)                                                         \
	do {                                                                        \
		const struct ctx_ops *ops_ = (x) ? ctx_ops_of((x)->context) : NULL; \
		if (!ops_ || !ops_->name)                                           \
			return EOPNOTSUPP;                                          \
		DESTROY(x, ops_->name(x));                                          \
	} while (0)

static struct ibv_qp *w_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	OPS_OR_FAIL(ops, ctx, create_qp_ex);
	CREATE_QUEUE(struct ibv_qp *, LEDGER_QP, attr ? attr->cap.max_send_wr : 0,
		     attr && !attr->srq ? attr->cap.max_recv_wr : 0, ops->create_qp_ex(ctx, attr), r->context);
}

static struct ibv_cq_ex *w_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	OPS_OR_FAIL(ops, ctx, create_cq_ex);
	CREATE(struct ibv_cq_ex *, LEDGER_CQ, 0, ops->create_cq_ex(ctx, attr), r->context);
}

static struct ibv_srq *w_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	OPS_OR_FAIL(ops, ctx, create_srq_ex);
	CREATE_QUEUE(struct ibv_srq *, LEDGER_SRQ, 0, attr ? attr->attr.max_wr : 0, ops->create_srq_ex(ctx, attr),
		     r->context);
}

static struct ibv_qp *w_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	OPS_OR_FAIL(ops, ctx, open_qp);
	CREATE(struct ibv_qp *, LEDGER_QP, 0, ops->open_qp(ctx, attr), r->context);
}

static struct ibv_mr *w_alloc_null_mr(struct ibv_pd *pd)
{
	OPS_OR_FAIL(ops, pd->context, alloc_null_mr);
	CREATE(struct ibv_mr *, LEDGER_MR, 0, ops->alloc_null_mr(pd), r->context);
}

static struct ibv_mr *w_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t len,
				  unsigned int access)
{
	OPS_OR_FAIL(ops, pd->context, reg_dm_mr);
	CREATE(struct ibv_mr *, LEDGER_MR, len, ops->reg_dm_mr(pd, dm, off, len, access), r->context);
}

static struct ibv_mw *w_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	OPS_OR_FAIL(ops, pd->context, alloc_mw);
	CREATE(struct ibv_mw *, LEDGER_MW, 0, ops->alloc_mw(pd, type), r->context);
}

static int w_dealloc_mw(struct ibv_mw *mw)
{
	DESTROY_OP(mw, dealloc_mw);
}

static struct ibv_xrcd *w_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	OPS_OR_FAIL(ops, ctx, open_xrcd);
	CREATE(struct ibv_xrcd *, LEDGER_XRCD, 0, ops->open_xrcd(ctx, attr), r->context);
}

static int w_close_xrcd(struct ibv_xrcd *xrcd)
{
	DESTROY_OP(xrcd, close_xrcd);
}

static struct ibv_wq *w_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *attr)
{
	OPS_OR_FAIL(ops, ctx, create_wq);
	CREATE_QUEUE(struct ibv_wq *, LEDGER_WQ, 0, attr ? attr->max_wr : 0, ops->create_wq(ctx, attr), r->context);
}

static int w_destroy_wq(struct ibv_wq *wq)
{
	DESTROY_OP(wq, destroy_wq);
}

/* ---- the table the audit redirection uses --------------------------------------------------------- */

#define W(n) { #n, (void *)n }
const struct wrap_sym wrap_syms[] = {
	W(ibv_open_device), W(ibv_close_device), W(ibv_import_device), W(ibv_alloc_pd),
	W(ibv_dealloc_pd), W(ibv_reg_mr), W(ibv_reg_mr_iova), W(ibv_reg_mr_iova2),
	W(ibv_reg_dmabuf_mr), W(ibv_rereg_mr), W(ibv_dereg_mr), W(ibv_create_cq),
	W(ibv_destroy_cq), W(ibv_create_srq), W(ibv_destroy_srq), W(ibv_create_qp),
	W(ibv_destroy_qp), W(ibv_create_ah), W(ibv_create_ah_from_wc), W(ibv_destroy_ah),
};
#undef W
const unsigned int wrap_nsyms = ARRAY_SIZE(wrap_syms);
