/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The interceptor's table of the objects it charged, by pointer: what each destroy must give back. */
#ifndef RDMACTL_PRELOAD_OBJTAB_H
#define RDMACTL_PRELOAD_OBJTAB_H

/*
 * The hot path (one insert per create, one take per destroy) is inline here and lock-free: an open-addressed
 * table of records kept in place (no malloc, no free list), a slot claimed and given back by compare-and-swap
 * on its key, a few slots probed from the key's hash. Only when those are all taken (a program holding
 * about a thousand objects at once) does a record go to the overflow buckets (malloc, a spin lock around a
 * few stores, out of line).
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

#include "core/hot.h"
#include "ledger/ledger.h"

/* Internal to the preload (built -fvisibility=hidden): direct PC-relative access, no GOT. */
#pragma GCC visibility push(hidden)

/*
 * The op pointers behind the inline verbs of verbs.h, saved per context where ctxops.c wrapped them.
 */
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

/*
 * An open context (ctxops.c): its saved ops, and how many records of its objects there are (records made,
 * less records given back: kept by obj_fill() and obj_free_slot() and the buckets), so that its close looks
 * for them only when there are any. ctx: the context, NULL when free, CTX_BUSY while being filled or emptied.
 */
#define CTX_BUSY ((struct ibv_context *)1)
struct ctx_ent {
	struct ibv_context *_Atomic ctx;
	_Atomic unsigned int nrec;
	bool imported;
	/* the context itself is charged (its open's charge, kept here rather than in a record of the table) */
	bool charged;
	struct ctx_ops ops;
};
/* Where the last lookup found a context: a program with one context finds it at the first look. */
extern struct ctx_ent *_Atomic ctx_last;
/* ctx's entry past ctx_last (out of line); ctx_unknown when it has none. */
struct ctx_ent *ctx_ent_find(struct ibv_context *ctx);
/*
 * The entry of the objects of a context that has none (opened before the interceptor was there, or no
 * memory for one): never looked for at a close. Its ctx is the last such context looked up (ctx_ent_find()).
 */
extern struct ctx_ent ctx_unknown;

/* ctx's entry: never NULL (ctx_unknown). */
static inline ALWAYS_INLINE struct ctx_ent *ctx_ent_of(struct ibv_context *ctx)
{
	struct ctx_ent *e = atomic_load_explicit(&ctx_last, memory_order_relaxed);

	if (__builtin_expect(atomic_load_explicit(&e->ctx, memory_order_acquire) == ctx, 1))
		return e;
	return ctx_ent_find(ctx);
}

/*
 * What a destroy gives back, and whose it is: the entry of the object's context. gen is kept in the
 * overflow buckets only: a forked child empties the table (obj_atfork_child()), so that the table's
 * records are always this process's.
 */
struct orec {
	struct ctx_ent *ce;
	uint64_t bytes;
	unsigned int gen;
	enum ledger_kind kind;
};

/* key: 0 free, OBJ_BUSY while its owner writes or reads the rest, else the object's address. */
#define OBJ_BUSY ((uintptr_t)1)
struct orec_slot {
	_Atomic uintptr_t key;
	struct orec r;
};

#define NREC 1024u
#define NPROBE 8u
extern struct orec_slot obj_tab[NREC];
/* Records in the overflow buckets: while 0, a destroy that finds nothing in the table looks no further. */
extern _Atomic unsigned int obj_nbucketed;
/* Bumped in a forked child: the parent's objects are not the child's to release. */
extern unsigned int obj_gen;

/* Fibonacci hashing: the product's high bits depend on every bit of the address (records are 16-byte aligned). */
static inline unsigned int hash_of(const void *key)
{
	return (unsigned int)(((uintptr_t)key * 0x9e3779b97f4a7c15ull) >> 40);
}

/* A key's first slot in the table: the product's top bits, as many as NREC needs (no mask on the way). */
#define NREC_BITS 10
_Static_assert(1u << NREC_BITS == NREC, "NREC is 2^NREC_BITS");
static inline unsigned int slot_of(const void *key)
{
	return (unsigned int)(((uintptr_t)key * 0x9e3779b97f4a7c15ull) >> (64 - NREC_BITS));
}

/* The overflow buckets, out of line. obj_insert_bucket: false when no memory. */
bool obj_insert_bucket(const void *key, struct ctx_ent *ce, uint64_t bytes, enum ledger_kind kind);
bool obj_take_bucket(const void *key, struct orec *out);

/* Slot j, claimed (busy): its record written and counted with its context, then key published. */
static inline ALWAYS_INLINE void obj_fill(unsigned int j, const void *key, struct ctx_ent *ce, uint64_t bytes,
					  enum ledger_kind kind)
{
	struct orec_slot *e = &obj_tab[j];

	e->r.ce = ce;
	e->r.bytes = bytes;
	e->r.kind = kind;
	atomic_fetch_add_explicit(&ce->nrec, 1, memory_order_relaxed);
	atomic_store_explicit(&e->key, (uintptr_t)key, memory_order_release);
}

/* Claim slot j for a new record if it is free. */
static inline ALWAYS_INLINE bool obj_try_slot(unsigned int j)
{
	uintptr_t z = 0;

	return !atomic_load_explicit(&obj_tab[j].key, memory_order_relaxed) &&
	       atomic_compare_exchange_strong_explicit(&obj_tab[j].key, &z, OBJ_BUSY, memory_order_acquire,
						       memory_order_relaxed);
}

/* obj_try_slot() without the look first: for the first probe, nearly always free (one instruction less). */
static inline ALWAYS_INLINE bool obj_try_slot_cas(unsigned int j)
{
	uintptr_t z = 0;

	return atomic_compare_exchange_strong_explicit(&obj_tab[j].key, &z, OBJ_BUSY, memory_order_acquire,
						       memory_order_relaxed);
}

/* obj_insert() past the first probe: the other probes, then the buckets (out of line). */
bool obj_insert_more(const void *key, struct ctx_ent *ce, uint64_t bytes, enum ledger_kind kind);

/*
 * Record key (the object): its context's entry, bytes and kind. False only without memory. The first probe
 * inline: while the table holds a small share of its 1,024 slots, it is nearly always free.
 */
static inline ALWAYS_INLINE bool obj_insert(const void *key, struct ctx_ent *ce, uint64_t bytes,
					    enum ledger_kind kind)
{
	unsigned int j = slot_of(key);

	if (__builtin_expect(!obj_try_slot_cas(j), 0))
		return obj_insert_more(key, ce, bytes, kind);
	obj_fill(j, key, ce, bytes, kind);
	return true;
}

/* Give table slot j back (its record read or dropped): uncounted from its context, then the key. */
static inline ALWAYS_INLINE void obj_free_slot(unsigned int j)
{
	atomic_fetch_sub_explicit(&obj_tab[j].r.ce->nrec, 1, memory_order_relaxed);
	atomic_store_explicit(&obj_tab[j].key, 0, memory_order_release);
}

/* obj_claim()'s answers other than a slot: no record of this process's; a record taken from the buckets. */
#define OBJ_NONE (-1)
#define OBJ_BUCKET (-2)
/* Claim slot j if it holds key's record (busy across the destroy). */
static inline ALWAYS_INLINE bool obj_claim_slot(unsigned int j, const void *key)
{
	uintptr_t k = (uintptr_t)key;

	return atomic_load_explicit(&obj_tab[j].key, memory_order_relaxed) == k &&
	       atomic_compare_exchange_strong_explicit(&obj_tab[j].key, &k, OBJ_BUSY, memory_order_acquire,
						       memory_order_relaxed);
}

/* obj_claim_slot() without the look first: for the first probe, where the record nearly always is. */
static inline ALWAYS_INLINE bool obj_claim_slot_cas(unsigned int j, const void *key)
{
	uintptr_t k = (uintptr_t)key;

	return atomic_compare_exchange_strong_explicit(&obj_tab[j].key, &k, OBJ_BUSY, memory_order_acquire,
						       memory_order_relaxed);
}

/* obj_claim() past the first probe: the other probes, then the buckets (out of line). */
int obj_claim_more(const void *key, struct orec *out);

/*
 * A destroy's record: the table slot of key claimed in place (its key set to OBJ_BUSY: the address cannot
 * be reused meanwhile, and a context's close passes it by) and its index returned, for destroy_done(). A
 * record in the overflow buckets is taken out into *out (OBJ_BUCKET; the parent's, seen in a forked child,
 * are dropped on the way); OBJ_NONE when this process charged no such object. The first probe inline.
 */
static inline ALWAYS_INLINE int obj_claim(const void *key, struct orec *out)
{
	unsigned int j = slot_of(key);

	if (__builtin_expect(obj_claim_slot_cas(j, key), 1))
		return (int)j;
	return obj_claim_more(key, out);
}

/*
 * Take the record of key out (a context's close, a re-registration): obj_claim(), then the slot's record
 * copied to *out and the slot given back. True and *out when this process charged the object.
 */
static inline bool obj_take(const void *key, struct orec *out)
{
	int j = obj_claim(key, out);

	if (j == OBJ_NONE)
		return false;
	if (j >= 0) {
		*out = obj_tab[j].r;
		out->gen = obj_gen; /* the table holds this process's records only (obj_atfork_child) */
		obj_free_slot((unsigned int)j);
	}
	return true;
}

/*
 * A context closes: forget the records of what it still holds, keep their charges; how many there were.
 * keep: leave the records, with ctx_unknown's (an imported context: its objects are the exporter's too).
 */
unsigned int obj_drop_ctx(struct ctx_ent *ce, bool keep);
/*
 * In a forked child: the table emptied, the buckets' locks released, the buckets' records of the parent
 * ignored by generation.
 */
void obj_atfork_child(void);

#pragma GCC visibility pop

#endif
