// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The interceptor's table of the objects it charged, by pointer: what each destroy must give back. */
#include "objtab.h"

#include <unistd.h>

#include "preload.h"

struct bucket obj_buckets[NBUCKET];
_Atomic unsigned int obj_nbucketed HOT_DATA;
_Atomic uint64_t obj_bucket_map[NBUCKET / 64];
unsigned int obj_gen HOT_DATA;
struct obj obj_static[OBJ_STATIC] HOT_DATA;
struct obj_spare obj_spare HOT_DATA;
struct obj_recent obj_recent HOT_DATA;

COLD_FN void obj_free_mem(struct obj *o)
{
	int saved = errno;

	free(o);
	errno = saved;
}

void obj_insert_bucket(struct obj *o)
{
	struct bucket *b = bucket_of(o->key);

	bucket_lock(b);
	o->next = b->head;
	b->head = o;
	atomic_fetch_add_explicit(&obj_nbucketed, 1, memory_order_relaxed);
	if (!o->next)
		bucket_mark(b, true);
	bucket_unlock(b);
}

struct obj *obj_unlink_bucket(const void *key)
{
	struct bucket *b = bucket_of(key);
	struct obj **pp, *o;

	bucket_lock(b);
	for (pp = &b->head; (o = *pp); pp = &o->next) {
		if (o->key == key) {
			*pp = o->next;
			atomic_fetch_sub_explicit(&obj_nbucketed, 1, memory_order_relaxed);
			if (!b->head)
				bucket_mark(b, false);
			break;
		}
	}
	bucket_unlock(b);
	return o;
}

/* Unlink the record of key (called before the real destroy, so the address cannot be reused meanwhile). */
HOT_DESTROY struct obj *obj_take(const void *key)
{
	struct obj *o;

	/* the parent's objects, seen in a forked child, are not charged here: drop them, look further */
	while ((o = obj_unlink(key)) && o->gen != obj_gen)
		obj_free(o);
	return o;
}

/*
 * A context closes with objects still in it: forget their records (their addresses may be reused once the
 * application frees what libibverbs leaves), but keep their charges. The kernel does not destroy them at the
 * close while their queues stay mapped in the process (rxe maps every QP, CQ and SRQ queue, and the mapping
 * keeps the whole context): they go when the process exits, and so do their charges (the slot is given back
 * at exit, or reclaimed by the gc, which also gives them back once the process holds no uverbs device, open
 * or mapped). Returns how many of them this process had charged.
 */
unsigned int obj_drop_ctx(struct ibv_context *ctx)
{
	struct obj *r, *dropped = NULL;
	unsigned int i, w, n = 0;

	spin_lock(&obj_recent.lock);
	for (i = 0; i < NRECENT; i++) {
		if ((r = obj_recent.slot[i]) && r->ctx == ctx) {
			obj_recent.slot[i] = NULL;
			r->next = dropped;
			dropped = r;
		}
	}
	spin_unlock(&obj_recent.lock);
	for (w = 0; w < NBUCKET / 64 && atomic_load_explicit(&obj_nbucketed, memory_order_relaxed); w++) {
		uint64_t m = atomic_load_explicit(&obj_bucket_map[w], memory_order_relaxed);

		for (; m; m &= m - 1) {
			struct bucket *b = &obj_buckets[w * 64 + (unsigned int)__builtin_ctzll(m)];
			struct obj **pp, *o;

			bucket_lock(b);
			for (pp = &b->head; (o = *pp);) {
				if (o->ctx == ctx) {
					*pp = o->next;
					o->next = dropped;
					dropped = o;
					atomic_fetch_sub_explicit(&obj_nbucketed, 1, memory_order_relaxed);
				} else {
					pp = &o->next;
				}
			}
			if (!b->head)
				bucket_mark(b, false);
			bucket_unlock(b);
		}
	}
	while ((r = dropped)) {
		dropped = r->next;
		if (r->gen == obj_gen) {
			n++;
			plog(2, "kept %s of a closed context for pid %d", ledger_kind_names[r->kind], (int)getpid());
		}
		obj_free(r);
	}
	return n;
}


void obj_init(void)
{
	unsigned int i;

	for (i = 0; i < OBJ_STATIC; i++)
		obj_free(&obj_static[OBJ_STATIC - 1 - i]);
}

void obj_atfork_child(void)
{
	unsigned int i;

	for (i = 0; i < NBUCKET; i++)
		atomic_flag_clear_explicit(&obj_buckets[i].lock, memory_order_relaxed);
	atomic_flag_clear_explicit(&obj_spare.lock, memory_order_relaxed);
	atomic_flag_clear_explicit(&obj_recent.lock, memory_order_relaxed);
	obj_gen++;
}
