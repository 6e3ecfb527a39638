/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The interceptor's table of the objects it charged, by pointer: what each destroy must give back. */
#ifndef RDMACTL_PRELOAD_OBJTAB_H
#define RDMACTL_PRELOAD_OBJTAB_H

/*
 * The hot path (one insert per create, one take per destroy) is inline here: no malloc (records are
 * recycled), no lock held across a verb (a spin lock around a few stores), no system call.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/verbs.h>

#include "hot.h"
#include "ledger.h"

/* Internal to the preload (built -fvisibility=hidden): direct PC-relative access, no GOT. */
#pragma GCC visibility push(hidden)

struct obj {
	const void *key;
	struct ibv_context *ctx;
	struct obj *next;
	uint64_t bytes;
	unsigned int gen;
	enum ledger_kind kind;
};

#define NBUCKET 4096u
struct bucket {
	atomic_flag lock;
	struct obj *head;
};
extern struct bucket obj_buckets[NBUCKET];
/* Records in the buckets (not in obj_recent): while 0, neither a lookup nor a context's close walks them. */
extern _Atomic unsigned int obj_nbucketed;
/* A bit per bucket that holds records (changed under its lock): a context's close visits only those. */
extern _Atomic uint64_t obj_bucket_map[NBUCKET / 64];

static inline void bucket_mark(struct bucket *b, bool used)
{
	unsigned int i = (unsigned int)(b - obj_buckets);

	if (used)
		atomic_fetch_or_explicit(&obj_bucket_map[i / 64], 1ull << (i % 64), memory_order_relaxed);
	else
		atomic_fetch_and_explicit(&obj_bucket_map[i / 64], ~(1ull << (i % 64)), memory_order_relaxed);
}
/* Bumped in a forked child: the parent's objects are not the child's to release. */
extern unsigned int obj_gen;

/*
 * Records of destroyed objects are kept for the next create (up to OBJ_CACHE), so that the verbs path does
 * not go through malloc/free; the first ones live next to the other hot variables, so that a program with
 * few objects at a time touches no page for them.
 */
#define OBJ_CACHE 1024u
#define OBJ_STATIC 16u
extern struct obj obj_static[OBJ_STATIC];
struct obj_spare {
	atomic_flag lock;
	unsigned int n;
	struct obj *head;
};
extern struct obj_spare obj_spare;
/*
 * A small table in front of the buckets, also next to the hot variables: a record goes there when its
 * slot is free, else into its bucket. A program with few objects at a time then never touches the
 * buckets' pages.
 */
#define NRECENT 64u
struct obj_recent {
	atomic_flag lock;
	struct obj *slot[NRECENT];
};
extern struct obj_recent obj_recent;

/* free() that keeps errno (out of the hot path). */
COLD_FN void obj_free_mem(struct obj *o);

static inline uint64_t hash_of(const void *key)
{
	uint64_t k = (uintptr_t)key;

	k ^= k >> 17;
	k *= 0x9e3779b97f4a7c15ull;
	return k >> 40;
}

static inline struct bucket *bucket_of(const void *key)
{
	return &obj_buckets[hash_of(key) % NBUCKET];
}

static inline struct obj **recent_of(const void *key)
{
	return &obj_recent.slot[hash_of(key) % NRECENT];
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

	spin_lock(&obj_spare.lock);
	o = obj_spare.head;
	if (o) {
		obj_spare.head = o->next;
		obj_spare.n--;
	}
	spin_unlock(&obj_spare.lock);
	return o ? o : malloc(sizeof(*o));
}

/* errno is preserved. */
static inline ALWAYS_INLINE void obj_free(struct obj *o)
{
	bool fixed = o >= obj_static && o < obj_static + OBJ_STATIC;

	spin_lock(&obj_spare.lock);
	if (obj_spare.n < OBJ_CACHE || fixed) {
		o->next = obj_spare.head;
		obj_spare.head = o;
		obj_spare.n++;
		o = NULL;
	}
	spin_unlock(&obj_spare.lock);
	if (o)
		obj_free_mem(o);
}

/*
 * The buckets, out of line: a program with few objects at a time never reaches them, and the hot code of
 * each side of a verb stays on one page.
 */
void obj_insert_bucket(struct obj *o);
struct obj *obj_unlink_bucket(const void *key);

static inline ALWAYS_INLINE void obj_insert(struct obj *o)
{
	struct obj **r = recent_of(o->key);

	o->gen = obj_gen;
	spin_lock(&obj_recent.lock);
	if (!*r) {
		*r = o;
		o = NULL;
	}
	spin_unlock(&obj_recent.lock);
	if (o)
		obj_insert_bucket(o);
}

/* Unlink a record of key from the obj_recent table or its bucket; NULL if none. */
static inline ALWAYS_INLINE struct obj *obj_unlink(const void *key)
{
	struct obj **r = recent_of(key), *o = NULL;

	spin_lock(&obj_recent.lock);
	if (*r && (*r)->key == key) {
		o = *r;
		*r = NULL;
	}
	spin_unlock(&obj_recent.lock);
	if (o || !atomic_load_explicit(&obj_nbucketed, memory_order_relaxed))
		return o;
	return obj_unlink_bucket(key);
}

/* Unlink the record of key before the real destroy; NULL when this process did not charge it. */
HOT_DESTROY struct obj *obj_take(const void *key);
/* A context closes: forget the records of what it still holds, keep their charges; how many there were. */
unsigned int obj_drop_ctx(struct ibv_context *ctx);
/* Put the static records in the spare list (once, at init). */
void obj_init(void);
/* In a forked child: locks another thread held are released, the parent's records ignored by generation. */
void obj_atfork_child(void);

#pragma GCC visibility pop

#endif
