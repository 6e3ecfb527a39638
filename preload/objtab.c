// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The interceptor's table of the objects it charged, by pointer: what each destroy must give back. */
#include "objtab.h"

#include <unistd.h>

#include "preload.h"

struct orec_slot obj_tab[NREC];
_Atomic unsigned int obj_nbucketed HOT_DATA;
unsigned int obj_gen HOT_DATA;

/* The overflow: records that found no free slot among their probes, in lists by hash. */
#define NBUCKET 4096u
struct obj {
	const void *key;
	struct obj *next;
	struct orec r;
};
static struct bucket {
	atomic_flag lock;
	struct obj *head;
} obj_buckets[NBUCKET];
/* A bit per bucket that holds records (changed under its lock): a context's close visits only those. */
static _Atomic uint64_t obj_bucket_map[NBUCKET / 64];

static void spin_lock(atomic_flag *f)
{
	while (atomic_flag_test_and_set_explicit(f, memory_order_acquire))
		__builtin_ia32_pause();
}

static void spin_unlock(atomic_flag *f)
{
	atomic_flag_clear_explicit(f, memory_order_release);
}

static void bucket_mark(struct bucket *b, bool used)
{
	unsigned int i = (unsigned int)(b - obj_buckets);

	if (used)
		atomic_fetch_or_explicit(&obj_bucket_map[i / 64], 1ull << (i % 64), memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&obj_bucket_map[i / 64], ~(1ull << (i % 64)), memory_order_relaxed);
}

COLD_FN bool obj_insert_bucket(const void *key, struct ctx_ent *ce, uint64_t bytes, enum ledger_kind kind)
{
	struct bucket *b = &obj_buckets[hash_of(key) % NBUCKET];
	int saved = errno;
	struct obj *o = malloc(sizeof(*o));

	errno = saved;
	if (!o)
		return false;
	o->key = key;
	o->r.ce = ce;
	o->r.bytes = bytes;
	o->r.kind = kind;
	o->r.gen = obj_gen;
	spin_lock(&b->lock);
	o->next = b->head;
	b->head = o;
	atomic_fetch_add_explicit(&obj_nbucketed, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ce->nrec, 1, memory_order_relaxed);
	if (!o->next)
		bucket_mark(b, true);
	spin_unlock(&b->lock);
	return true;
}

COLD_FN bool obj_take_bucket(const void *key, struct orec *out)
{
	struct bucket *b = &obj_buckets[hash_of(key) % NBUCKET];
	struct obj **pp, *o;
	int saved = errno;

	spin_lock(&b->lock);
	for (pp = &b->head; (o = *pp); pp = &o->next) {
		if (o->key == key) {
			*pp = o->next;
			atomic_fetch_sub_explicit(&obj_nbucketed, 1, memory_order_relaxed);
			if (!b->head)
				bucket_mark(b, false);
			break;
		}
	}
	spin_unlock(&b->lock);
	if (!o)
		return false;
	/* a record of this process's leaves: uncounted from its context (the parent's never were, in a child) */
	if (o->r.gen == obj_gen)
		atomic_fetch_sub_explicit(&o->r.ce->nrec, 1, memory_order_relaxed);
	*out = o->r;
	free(o);
	errno = saved;
	return true;
}

COLD_FN bool obj_insert_more(const void *key, struct ctx_ent *ce, uint64_t bytes, enum ledger_kind kind)
{
	unsigned int h = slot_of(key), i;

	for (i = 1; i < NPROBE; i++) {
		unsigned int j = (h + i) % NREC;

		if (obj_try_slot(j)) {
			obj_fill(j, key, ce, bytes, kind);
			return true;
		}
	}
	return obj_insert_bucket(key, ce, bytes, kind);
}

COLD_FN int obj_claim_more(const void *key, struct orec *out)
{
	unsigned int h = slot_of(key), i;

	for (i = 1; i < NPROBE; i++) {
		unsigned int j = (h + i) % NREC;

		if (obj_claim_slot(j, key))
			return (int)j;
	}
	if (!atomic_load_explicit(&obj_nbucketed, memory_order_relaxed))
		return OBJ_NONE;
	while (obj_take_bucket(key, out))
		if (out->gen == obj_gen)
			return OBJ_BUCKET;
	return OBJ_NONE;
}

/*
 * A context closes with objects still in it: forget their records (their addresses may be reused once the
 * application frees what libibverbs leaves), but keep their charges. The kernel does not destroy them at the
 * close while their queues stay mapped in the process (rxe maps every QP, CQ and SRQ queue, and the mapping
 * keeps the whole context): they go when the process exits, and so do their charges (the slot is given back
 * at exit, or reclaimed by the gc, which also gives them back once the process holds no uverbs device, open
 * or mapped). Returns how many of them this process had charged.
 */
/*
 * Slot j holds a record of ce (key k when looked at): take it, forget it, keep its charge; or, keep, leave it
 * with ctx_unknown's (an imported context's close: its objects are the exporter's too).
 */
static COLD_FN void drop_slot(struct ctx_ent *ce, unsigned int j, uintptr_t k, unsigned int *n, bool keep)
{
	struct orec_slot *e = &obj_tab[j];

	if (!atomic_compare_exchange_strong_explicit(&e->key, &k, OBJ_BUSY, memory_order_acquire, memory_order_relaxed))
		return;
	if (e->r.ce != ce) { /* taken and reused meanwhile: not ours */
		atomic_store_explicit(&e->key, k, memory_order_release);
		return;
	}
	(*n)++;
	if (keep) {
		atomic_fetch_sub_explicit(&ce->nrec, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&ctx_unknown.nrec, 1, memory_order_relaxed);
		e->r.ce = &ctx_unknown;
		atomic_store_explicit(&e->key, k, memory_order_release);
		return;
	}
	plog(2, "kept %s of a closed context for pid %d", ledger_kind_names[e->r.kind], (int)getpid());
	obj_free_slot(j);
}

/* The overflow buckets' records of ce (only while there are any); keep as for drop_slot(). */
static COLD_FN void drop_buckets(struct ctx_ent *ce, unsigned int *n, bool keep)
{
	struct obj *gone = NULL, *o;
	unsigned int w;
	int saved = errno;

	for (w = 0; w < NBUCKET / 64; w++) {
		uint64_t m = atomic_load_explicit(&obj_bucket_map[w], memory_order_relaxed);

		for (; m; m &= m - 1) {
			struct bucket *b = &obj_buckets[w * 64 + (unsigned int)__builtin_ctzll(m)];
			struct obj **pp;

			spin_lock(&b->lock);
			for (pp = &b->head; (o = *pp);) {
				if (o->r.ce == ce && keep) {
					o->r.ce = &ctx_unknown;
					if (o->r.gen == obj_gen) {
						atomic_fetch_sub_explicit(&ce->nrec, 1, memory_order_relaxed);
						atomic_fetch_add_explicit(&ctx_unknown.nrec, 1, memory_order_relaxed);
						(*n)++;
					}
					pp = &o->next;
				} else if (o->r.ce == ce) {
					*pp = o->next;
					o->next = gone;
					gone = o;
					atomic_fetch_sub_explicit(&obj_nbucketed, 1, memory_order_relaxed);
				} else {
					pp = &o->next;
				}
			}
			if (!b->head)
				bucket_mark(b, false);
			spin_unlock(&b->lock);
		}
	}
	while ((o = gone)) {
		gone = o->next;
		if (o->r.gen == obj_gen) { /* this process's: counted, and charged */
			atomic_fetch_sub_explicit(&ce->nrec, 1, memory_order_relaxed);
			(*n)++;
			plog(2, "kept %s of a closed context for pid %d", ledger_kind_names[o->r.kind], (int)getpid());
		}
		free(o);
	}
	errno = saved;
}

/*
 * Only a context that still holds records comes here (its entry's count): every slot of the table is looked
 * at, until the count says there are no more, then the buckets if there are any.
 */
COLD_FN unsigned int obj_drop_ctx(struct ctx_ent *ce, bool keep)
{
	unsigned int j, n = 0;

	for (j = 0; j < NREC && atomic_load_explicit(&ce->nrec, memory_order_relaxed); j++) {
		const struct orec_slot *e = &obj_tab[j];
		uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);

		if (k > OBJ_BUSY && e->r.ce == ce)
			drop_slot(ce, j, k, &n, keep);
	}
	if (atomic_load_explicit(&obj_nbucketed, memory_order_relaxed))
		drop_buckets(ce, &n, keep);
	return n;
}

void obj_atfork_child(void)
{
	unsigned int i;

	/*
	 * The parent's records are not the child's to release: the table is emptied (a slot another thread was
	 * writing or reading included), the buckets' records ignored by generation.
	 */
	for (i = 0; i < NREC; i++)
		atomic_store_explicit(&obj_tab[i].key, 0, memory_order_relaxed);
	for (i = 0; i < NBUCKET; i++)
		atomic_flag_clear_explicit(&obj_buckets[i].lock, memory_order_relaxed);
	obj_gen++;
}
