/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The interceptor's ledger operation, inline: one object within its slot's grant (lib/ledger/ledger.h, "Grants").
 * With the kind a constant, a create is one atomic add on the slot's usage and one load of its grant; a
 * destroy one atomic subtract and one load (the threshold below which it gives back). Anything else goes
 * out of line, into an operation through the plans (reserve.c), which decides, describes and records it.
 */
#ifndef RDMACTL_LEDGER_OBJ_H
#define RDMACTL_LEDGER_OBJ_H

#include "ledger/internal.h"

#pragma GCC visibility push(hidden)

/* Out of line (reserve.c): in an operation, through the plans; a release's trim of a grant left too big. */
int ledger_obj_plan(struct ledger *l, enum ledger_kind kind, uint64_t extra);
int ledger_obj_plan_release(struct ledger *l, enum ledger_kind kind, uint64_t bytes);
int ledger_obj_trim(struct ledger *l, enum ledger_kind kind);

/* A slot of zeros, for a handle without one (see ledger_take_obj()). */
extern struct slot ledger_no_slot;

/* The ledger of *lp, read only where needed (an atomic load: not hoisted into the usual path). */
#define LEDGER_OF(lp) __atomic_load_n((lp), __ATOMIC_RELAXED)

/*
 * AADD() (seq_cst, the old value back). On x86 written out: the compiler's own puts the field's address in a
 * register first, one instruction more on each side of every pair.
 */
static inline ALWAYS_INLINE uint64_t slot_xadd(uint64_t *p, uint64_t v)
{
#if defined(__x86_64__)
	__asm__ __volatile__("lock xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;
#else
	return AADD(p, v);
#endif
}

/* n more in use of a slot's kind if its grant covers them, else nothing (one atomic add, one load). */
static inline ALWAYS_INLINE bool grant_covers(struct slot *s, enum ledger_kind k, uint64_t n)
{
	uint64_t old = slot_xadd(&s->usage[k], n), g;

	/*
	 * The add and the load are ordered (seq_cst): a recount that lowers the grant sees the add, or the add's
	 * owner sees the lower grant. old + n <= g, written so that no n wraps.
	 */
	g = ALOAD(&s->grant[k]);
	if (__builtin_expect(old < g && g - old >= n, 1))
		return true;
	ASUB(&s->usage[k], n);
	return false;
}

/*
 * n out of use: one atomic subtract and one load (trim_below). false when fewer were in use (nothing
 * changed); *trim when the release leaves the grant too big. One test for both: old - n < trim_below.
 */
static inline ALWAYS_INLINE bool grant_gives(struct slot *s, enum ledger_kind k, uint64_t n, bool *trim)
{
	uint64_t old = slot_xadd(&s->usage[k], -n), tb = ALOADR(&s->trim_below[k]);

	/* trim_below is below any grant, GRANT_UNLIMITED's is 0: tb + n does not wrap */
	if (__builtin_expect(__builtin_constant_p(n) && n == 1 ? old <= tb : old < tb + n, 0)) {
		if (old < n) {
			AADD(&s->usage[k], n);
			return false;
		}
		*trim = true;
	}
	return true;
}

/*
 * ledger_reserve_obj() for a valid object kind (not LEDGER_WR, not LEDGER_MR_BYTES), in its usual case, for
 * the ledger *lp; s is its slot (fast_slot, which a caller may keep at hand), or, before an attach and once
 * detached, a slot of the caller's own that is all zeros (ledger_no_slot): nothing is ever within its grant
 * nor above its usage, so every operation goes out of line, which finds no slot. Never NULL: no test.
 */
static inline ALWAYS_INLINE int ledger_take_obj(struct ledger *const *lp, struct slot *s, enum ledger_kind kind,
						uint64_t extra)
{
	if (kind == LEDGER_MR && extra) {
		if (__builtin_expect(!grant_covers(s, LEDGER_MR, 1), 0))
			return ledger_obj_plan(LEDGER_OF(lp), kind, extra);
		if (__builtin_expect(!grant_covers(s, LEDGER_MR_BYTES, extra), 0)) {
			ASUB(&s->usage[LEDGER_MR], 1);
			return ledger_obj_plan(LEDGER_OF(lp), kind, extra);
		}
		return 0;
	}
	/* a queue's depth against the lowest WR cap (extra is a constant 0 for the other kinds) */
	if (__builtin_expect((kind != LEDGER_MR && extra && extra > ALOADR(&LEDGER_OF(lp)->fast_wr)) ||
				     !grant_covers(s, kind, 1),
			     0))
		return ledger_obj_plan(LEDGER_OF(lp), kind, extra);
	return 0;
}

/* ledger_open_mark() on the slot s (its own: ledger_own_slot(); the slot of zeros without one). */
static inline ALWAYS_INLINE void ledger_mark_open(struct slot *s)
{
	AADD(&s->vseq, 1);
}

/* The attached process's slot, whatever its plans' shape; ledger_no_slot when not attached. */
struct slot *ledger_own_slot(struct ledger *l);

/* ledger_release_obj() for a valid object kind, in its usual case; s as for ledger_take_obj(). */
static inline ALWAYS_INLINE int ledger_give_obj(struct ledger *const *lp, struct slot *s, enum ledger_kind kind,
						uint64_t bytes)
{
	bool trim = false;

	if (__builtin_expect(!grant_gives(s, kind, 1, &trim), 0))
		return ledger_obj_plan_release(LEDGER_OF(lp), kind, bytes);
	if (kind == LEDGER_MR && bytes && __builtin_expect(!grant_gives(s, LEDGER_MR_BYTES, bytes, &trim), 0)) {
		/* fewer bytes held than given back (a caller's bug): the plans' way says so */
		AADD(&s->usage[LEDGER_MR], 1);
		return ledger_obj_plan_release(LEDGER_OF(lp), kind, bytes);
	}
	if (__builtin_expect(trim, 0))
		return ledger_obj_trim(LEDGER_OF(lp), kind);
	return 0;
}

#pragma GCC visibility pop

#endif
