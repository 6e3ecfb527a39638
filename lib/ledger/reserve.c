// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger's hot path: reserve and release against every scope, lock-free, no system call. */
#include "ledger/obj.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

/* ---- hot path ----------------------------------------------------------------------------------- */

/* Add a scope to a plan: always the slot (lim: its pid limit), the others only where they limit something. */
static void plan_add(struct plan_ent *p, unsigned int *n, bool always, uint64_t *ctr, uint64_t lim,
		     enum ledger_scope_type type, int idx)
{
	struct plan_ent *e = &p[*n];

	if (!always && lim == LEDGER_UNLIMITED)
		return;
	__atomic_store_n(&e->ctr, ctr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->lim, lim, __ATOMIC_RELAXED);
	e->type = type;
	e->idx = idx;
	(*n)++;
}

/* The lowest WR cap of the plans, for the interceptor's operation (build_plan(), under l->mtx). */
static COLD_FN void build_fast(struct ledger *l)
{
	uint64_t wr = LEDGER_UNLIMITED;
	unsigned int i;

	for (i = 0; i < l->plan_n[LEDGER_WR]; i++)
		if (l->plan[LEDGER_WR][i].lim < wr)
			wr = l->plan[LEDGER_WR][i].lim;
	__atomic_store_n(&l->fast_wr, wr, __ATOMIC_RELAXED);
}

/*
 * The plan of every kind (under l->mtx, from refresh_view): the scopes in the order the general path charges
 * them, each with its counter and its limit as of now (any change of them bumps the generation). cg[] are
 * valid cgroup indices (ledger_cg_matches()); the slot and job indices are this handle's own.
 */
static COLD_FN void build_plan(struct ledger *l, const int *cg, int ncg)
{
	struct usage *u = l->use;
	const struct policy *pol = l->pol;
	struct slot *s;
	int k, i;

	if (l->slot < 0 || l->slot >= (int)l->nprocs || l->job >= LEDGER_MAX_JOBS || ncg > PLAN_MAX - 3) {
		__atomic_store_n(&l->plan_ok, false, __ATOMIC_RELAXED);
		return;
	}
	s = &u->slots[l->slot];
	__atomic_store_n(&l->fast_slot, s, __ATOMIC_RELAXED);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		struct plan_ent *p = l->plan[k];
		bool wr = k == LEDGER_WR;
		unsigned int n = 0;

		plan_add(p, &n, !wr, wr ? NULL : &s->grant[k], ALOADR(&l->view_pid[k]), LEDGER_SCOPE_PROCESS, 0);
		if (l->job >= 0)
			plan_add(p, &n, false, wr ? NULL : &u->jobs[l->job].total[k], ALOADR(&u->jobs[l->job].limit[k]),
				 LEDGER_SCOPE_JOB, l->job);
		for (i = 0; i < ncg; i++)
			plan_add(p, &n, false, wr ? NULL : &u->cg_total[cg[i]][k], ALOADR(&pol->cg[cg[i]].limit[k]),
				 LEDGER_SCOPE_CGROUP, cg[i]);
		plan_add(p, &n, false, wr ? NULL : &u->global_total[k], ALOADR(&l->view_global[k]), LEDGER_SCOPE_GLOBAL,
			 0);
		__atomic_store_n(&l->plan_n[k], n, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&l->plan_ok, true, __ATOMIC_RELAXED);
	build_fast(l);
}

/*
 * Cache the limits that apply to this process (read after the generation: a change that lands meanwhile
 * moves it again, and the next operation refreshes once more).
 */
COLD_FN void ledger_refresh_view(struct ledger *l)
{
	const struct policy *pol = l->pol;
	int idx[MAX_CG_PER_PROC], n, i, k, p = -1;
	uint64_t gen;

	pthread_mutex_lock(&l->mtx);
	gen = ALOAD(&l->use->gen);
	n = ledger_cg_matches(pol, l->cgroup, idx, MAX_CG_PER_PROC);
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++)
		if (ALOAD(&pol->pid[i].state) == ENT_LIVE && pol->pid[i].pid == l->pid &&
		    pol->pid[i].start == l->start) {
			p = i;
			break;
		}
	for (k = 0; k < LEDGER_NKINDS; k++) {
		__atomic_store_n(&l->view_pid[k], p >= 0 ? ALOADR(&pol->pid[p].limit[k]) : LEDGER_UNLIMITED,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&l->view_global[k], ALOADR(&pol->global_limit[k]), __ATOMIC_RELAXED);
	}
	for (i = 0; i < n; i++)
		__atomic_store_n(&l->view_cg[i], idx[i], __ATOMIC_RELAXED);
	__atomic_store_n(&l->view_ncg, n, __ATOMIC_RELAXED);
	build_plan(l, idx, n);
	__atomic_store_n(&l->view_left, __atomic_load_n(&l->frozen_stuck, __ATOMIC_RELAXED) ? 0 : VIEW_RECHECK,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&l->view_gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&l->mtx);
}

/*
 * Wait for a recount to finish; if its gc died, finish it ourselves. A ledger frozen for more than 5 s
 * (a live gc stuck, or a hostile writer of the usage file) is ignored: returns false and the operation
 * goes ahead, so that nothing can block an application forever.
 */
static COLD_FN bool wait_unfrozen(struct ledger *l)
{
	uint64_t start = 0, first = 0;
	unsigned int spins = 0;

	while (__atomic_load_n(&l->use->frozen, __ATOMIC_SEQ_CST)) {
		/* a few yields, then sleeps: hundreds of waiters must not starve the recount they wait for */
		if (++spins < 16) {
			sched_yield();
			continue;
		}
		if (!first)
			first = clock_mono_ns();
		if (clock_mono_ns() - first > 5000000000ull)
			return false;
		if (!start)
			start = clock_mono_ns();
		if (clock_mono_ns() - start > 500000000ull && !ledger_gc_lock(l, 0)) {
			/* the lock was free or stolen from a dead gc: nobody else is recounting */
			ledger_gc_dead(l, true);
			ledger_gc_unlock(l);
			start = 0;
		}
		usleep(spins < 64 ? 100 : 1000);
	}
	return true;
}

/* Ignoring a stuck freeze: every 100 ms, see whether its holder died and the recount can be finished. */
static COLD_FN void stuck_repair(struct ledger *l)
{
	uint64_t now = clock_mono_ns();

	if (now - __atomic_load_n(&l->stuck_check, __ATOMIC_RELAXED) < 100000000ull)
		return;
	__atomic_store_n(&l->stuck_check, now, __ATOMIC_RELAXED);
	if (!ledger_gc_lock(l, 0)) {
		ledger_gc_dead(l, true);
		ledger_gc_unlock(l);
	}
}

/* op_enter() when something is not as usual: a freeze, a stuck freeze that ended, limits that changed. */
static COLD_FN void op_enter_slow(struct ledger *l, struct slot *s)
{
	bool ignore_frozen = false;
	uint32_t left;

	for (;;) {
		__atomic_fetch_add(&s->inflight, 1, __ATOMIC_SEQ_CST);
		if (__builtin_expect(__atomic_load_n(&l->use->frozen, __ATOMIC_SEQ_CST), 0)) {
			if (!ignore_frozen && !__atomic_load_n(&l->frozen_stuck, __ATOMIC_RELAXED)) {
				__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
				ignore_frozen = !wait_unfrozen(l);
				if (ignore_frozen) {
					/* every operation comes here until the freeze is gone */
					__atomic_store_n(&l->frozen_stuck, true, __ATOMIC_RELAXED);
					__atomic_store_n(&l->view_left, 0, __ATOMIC_RELAXED);
				}
				continue;
			}
			if (!ignore_frozen) {
				__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
				ignore_frozen = true;
				stuck_repair(l);
				continue;
			}
		} else if (__builtin_expect(__atomic_load_n(&l->frozen_stuck, __ATOMIC_RELAXED), 0)) {
			__atomic_store_n(&l->frozen_stuck, false, __ATOMIC_RELAXED);
		}
		left = __atomic_load_n(&l->view_left, __ATOMIC_RELAXED);
		if (__builtin_expect(ALOAD(&l->use->gen) != __atomic_load_n(&l->view_gen, __ATOMIC_ACQUIRE) ||
					     (!left && !__atomic_load_n(&l->frozen_stuck, __ATOMIC_RELAXED)),
				     0)) {
			__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
			ledger_refresh_view(l);
			continue;
		}
		if (left)
			__atomic_store_n(&l->view_left, left - 1, __ATOMIC_RELAXED);
		return;
	}
}

/* op_enter() when the usual case holds, else false with no mark left (the caller goes another way). */
static inline ALWAYS_INLINE bool op_try_enter(struct ledger *l, struct slot *s)
{
	struct usage *u = l->use;
	uint32_t left;

	__atomic_fetch_add(&s->inflight, 1, __ATOMIC_SEQ_CST);
	left = __atomic_load_n(&l->view_left, __ATOMIC_RELAXED);
	if (__builtin_expect(left && !__atomic_load_n(&u->frozen, __ATOMIC_SEQ_CST) &&
				     ALOAD(&u->gen) == __atomic_load_n(&l->view_gen, __ATOMIC_ACQUIRE),
			     1)) {
		__atomic_store_n(&l->view_left, left - 1, __ATOMIC_RELAXED);
		return true;
	}
	__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
	return false;
}

/*
 * Enter an operation: in-flight marked, not frozen, view current (frozen and gen share a line), and the
 * view not due for its periodic refresh (view_left, 0 also while a stuck freeze is ignored). The usual case
 * inline; anything else leaves the mark and starts over in op_enter_slow().
 */
static inline ALWAYS_INLINE void op_enter(struct ledger *l, struct slot *s)
{
	if (__builtin_expect(!op_try_enter(l, s), 0))
		op_enter_slow(l, s);
}

static inline void op_leave(struct slot *s)
{
	__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
}

/* The refusal by scope e of a plan. */
static COLD_FN int plan_deny(struct ledger *l, struct ledger_denial *d, enum ledger_kind k, uint64_t n,
			     const struct plan_ent *e, uint64_t cur)
{
	return ledger_refusal_deny(l, d, k, n, (enum ledger_scope_type)e->type, e->idx, cur, e->lim);
}

/* Kind k's plan and its length (in range whatever the handle's memory says). */
static inline ALWAYS_INLINE const struct plan_ent *plan_of(const struct ledger *l, enum ledger_kind k, unsigned int *ns)
{
	/* built by build_plan(), at most PLAN_MAX: process memory, not the shared file */
	*ns = __atomic_load_n(&l->plan_n[k], __ATOMIC_RELAXED);
	return l->plan[k];
}

/* ---- grants ------------------------------------------------------------------------------------ */

/*
 * A slot's grant of a kind is what the totals of its limited scopes carry for it: its usage plus an
 * allowance (lib/ledger/ledger.h, "Grants"). A create within the grant moves the slot's usage and nothing else;
 * one beyond it raises the grant through the plan, by what is missing and, while there is room, an
 * allowance: a quarter of the room left under the tightest limit, at most GRANT_BATCH (GRANT_BATCH_BYTES for
 * MR bytes). A release keeps up to twice that and gives back the rest.
 */
#define GRANT_BATCH 32
#define GRANT_BATCH_BYTES (256ull << 20)

static inline ALWAYS_INLINE uint64_t grant_batch(enum ledger_kind k)
{
	return k == LEDGER_MR_BYTES ? GRANT_BATCH_BYTES : GRANT_BATCH;
}

/* The room left under the tightest limit of a plan (p[0]: the slot's grant under its pid limit). */
static COLD_FN uint64_t plan_room(const struct plan_ent *p, unsigned int ns);

/*
 * The allowance a raise of kind k through plan p takes now (and a trim leaves): a quarter of the room left
 * under the tightest limit shared by the processes the ledger has held (slots_used(): its high-water mark,
 * one load), at most grant_batch(k); none while the kind is tight (tight_until). Shared, so that processes
 * starting together hold a quarter of the room at most between them: with a quarter each, the first 36 of
 * 1100 ranks took all but 1/(4/3)^36 of a 1 GiB budget, and every other rank's creation waited for the
 * give-back of refusal_gc(), which a busy machine could not finish in time (issue 28).
 */
static COLD_FN uint64_t grant_allowance(const struct ledger *l, const struct plan_ent *p, unsigned int ns,
					enum ledger_kind k)
{
	uint64_t more, procs = slots_used(l);

	if (clock_mono_ns() < ALOAD(&l->use->tight_until[k]))
		return 0;
	more = plan_room(p, ns) / (4 * (procs ? procs : 1));
	return more > grant_batch(k) ? grant_batch(k) : more;
}

static COLD_FN uint64_t plan_room(const struct plan_ent *p, unsigned int ns)
{
	uint64_t room = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < ns; i++) {
		uint64_t lim = ALOADR(&p[i].lim), cur;

		if (lim == LEDGER_UNLIMITED)
			continue;
		cur = ALOADR(ALOADR(&p[i].ctr));
		cur = cur < lim ? lim - cur : 0;
		if (cur < room)
			room = cur;
	}
	return room;
}

/*
 * A grant raised by n through its plan, or nothing: the scopes' totals first, the slot's grant (p[0], under
 * its pid limit) last, so that no create can use a grant before every total carries it. On refusal *at is
 * the scope, *cur its total (the pid limit is looked at first, so that it is the one a refusal names).
 */
static COLD_FN bool grant_raise(const struct plan_ent *p, unsigned int ns, uint64_t n, unsigned int *at, uint64_t *cur)
{
	uint64_t *g = ALOADR(&p[0].ctr), lim = ALOADR(&p[0].lim);
	unsigned int i;

	if (lim != LEDGER_UNLIMITED && (ALOAD(g) > lim || n > lim - ALOAD(g))) {
		*at = 0;
		*cur = ALOAD(g);
		return false;
	}
	for (i = 1; i < ns; i++) {
		if (!cas_add(ALOADR(&p[i].ctr), n, ALOADR(&p[i].lim), cur)) {
			*at = i;
			goto undo;
		}
	}
	if (lim == LEDGER_UNLIMITED) {
		AADD(g, n);
		return true;
	}
	if (cas_add(g, n, lim, cur))
		return true;
	*at = 0;
undo:
	while (--i >= 1)
		sub_clamp(ALOADR(&p[i].ctr), n);
	return false;
}

/* A release trims the grant of kind k once usage is more than slack below it (struct slot, trim_below). */
COLD_FN void ledger_reserve_set_trim(struct slot *s, enum ledger_kind k, uint64_t slack)
{
	uint64_t g = ALOAD(&s->grant[k]);

	ASTORE(&s->trim_below[k], g == GRANT_UNLIMITED || g < slack ? 0 : g - slack);
}

/*
 * In an operation (in-flight mark): n more of kind k in use, the grant raised through the plan p when it is
 * short. false when even what is missing is refused: *at is the refusing scope, *cur its usage (the slot's
 * usage when its pid limit refused).
 */
static COLD_FN bool grant_take(const struct ledger *l, struct slot *s, const struct plan_ent *p, unsigned int ns,
			       enum ledger_kind k, uint64_t n, unsigned int *at, uint64_t *cur)
{
	unsigned int tries;

	if (!n)
		return true;
	for (tries = 0; tries < 64; tries++) {
		uint64_t u, g, want, more;

		if (grant_covers(s, k, n))
			return true;
		if (ns == 1 && ALOADR(&p[0].lim) == LEDGER_UNLIMITED) {
			/* nothing limits the kind: a grant that no total carries, until a limit's recount */
			ASTORE(&s->grant[k], GRANT_UNLIMITED);
			ledger_reserve_set_trim(s, k, 0);
			continue;
		}
		g = ALOAD(&s->grant[k]);
		u = ALOAD(&s->usage[k]);
		if (u + n < u)
			break;
		if (u + n <= g)
			continue; /* another thread raised it meanwhile */
		want = u + n - g;
		more = grant_allowance(l, p, ns, k);
		if (more && want + more > want && grant_raise(p, ns, want + more, at, cur)) {
			ledger_reserve_set_trim(s, k, 2 * more);
			continue;
		}
		if (grant_raise(p, ns, want, at, cur)) {
			ledger_reserve_set_trim(s, k, 0);
			continue;
		}
		if (*at == 0)
			*cur = u;
		return false;
	}
	/* usage past any grant (a slot written over): refused by the process's own scope */
	*at = 0;
	*cur = ALOAD(&s->usage[k]);
	return false;
}

/* The scopes of a plan but the slot: n less on each. */
static COLD_FN void plan_release_scopes(const struct plan_ent *p, unsigned int ns, uint64_t n)
{
	unsigned int i;

	for (i = 1; i < ns; i++)
		sub_clamp(ALOADR(&p[i].ctr), n);
}

/*
 * A grant of kind k lowered to usage plus more, if it is above that (GRANT_UNLIMITED never is), and the
 * release threshold set for an allowance of more. A create that read the old grant before it went down is
 * in the usage read after: the grant goes back up for it, never above what it was. Returns how much the
 * grant went down, for the caller to take off the totals (0 also when another thread's operation moved the
 * grant meanwhile: the next release looks again).
 */
COLD_FN uint64_t ledger_reserve_grant_cut(struct slot *s, enum ledger_kind k, uint64_t more)
{
	uint64_t g = ALOAD(&s->grant[k]), u = ALOAD(&s->usage[k]), keep = u + more, seen;

	if (g != GRANT_UNLIMITED && u < g && g - u > more && ACAS(&s->grant[k], &g, keep)) {
		seen = ALOAD(&s->usage[k]);
		if (seen > keep) {
			uint64_t up = (seen < g ? seen : g) - keep;

			AADD(&s->grant[k], up);
			keep += up;
		}
	} else {
		keep = g;
	}
	ledger_reserve_set_trim(s, k, 2 * more);
	return g - keep;
}

/*
 * In an operation: a grant of kind k that a release left too far above usage (trim_below), lowered to usage
 * plus an allowance (what a raise would take now: none while a limit is reached or passed), the rest given
 * back to the scopes of the plan.
 */
static COLD_FN void grant_trim(const struct ledger *l, struct slot *s, const struct plan_ent *p, unsigned int ns,
			       enum ledger_kind k)
{
	uint64_t back = ledger_reserve_grant_cut(s, k, grant_allowance(l, p, ns, k));

	if (back)
		plan_release_scopes(p, ns, back);
}

/* n of kind k out of use; false (nothing changed) when fewer are. An allowance grown too big is trimmed. */
static inline ALWAYS_INLINE bool grant_put(const struct ledger *l, struct slot *s, const struct plan_ent *p,
					   unsigned int ns, enum ledger_kind k, uint64_t n)
{
	bool trim = false;

	if (!grant_gives(s, k, n, &trim))
		return false;
	if (__builtin_expect(trim, 0))
		grant_trim(l, s, p, ns, k);
	return true;
}

/* A requested WR depth above a cap of the plan (only the caps that are set): the scope's index, else -1. */
static inline ALWAYS_INLINE int plan_wr_over(const struct plan_ent *p, unsigned int ns, uint64_t n)
{
	unsigned int i;

	for (i = 0; i < ns; i++)
		if (__builtin_expect(n > ALOADR(&p[i].lim), 0))
			return (int)i;
	return -1;
}

/* The earlier kinds of a refused operation, given back. */
static COLD_FN void plan_undo(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			      unsigned int i)
{
	const struct plan_ent *p;
	unsigned int ns;

	while (i--) {
		if (kinds[i] == LEDGER_WR)
			continue;
		p = plan_of(l, kinds[i], &ns);
		grant_put(l, s, p, ns, kinds[i], amounts[i]);
	}
}

/* One attempt at every kind, all or nothing. Returns 0, or -EDQUOT with *d filled. */
static inline ALWAYS_INLINE int try_reserve(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
					    const uint64_t *amounts, unsigned int n, struct ledger_denial *d)
{
	unsigned int i, ns, at;
	uint64_t cur;
	int err = 0, w;

	op_enter(l, s);
	if (__builtin_expect(!__atomic_load_n(&l->plan_ok, __ATOMIC_RELAXED), 0)) {
		err = ledger_view_reserve(l, s, kinds, amounts, n, d);
		op_leave(s);
		return err;
	}
	for (i = 0; i < n; i++) {
		const struct plan_ent *p = plan_of(l, kinds[i], &ns);

		if (kinds[i] == LEDGER_WR) {
			if (__builtin_expect((w = plan_wr_over(p, ns, amounts[i])) >= 0, 0)) {
				err = plan_deny(l, d, LEDGER_WR, amounts[i], &p[w], 0);
				break;
			}
		} else if (__builtin_expect(!grant_take(l, s, p, ns, kinds[i], amounts[i], &at, &cur), 0)) {
			err = plan_deny(l, d, kinds[i], amounts[i], &p[at], cur);
			break;
		}
	}
	if (__builtin_expect(err, 0))
		plan_undo(l, s, kinds, amounts, i);
	op_leave(s);
	return err;
}

/* try_reserve() for the refusal path (refusal.c), which tries again once room was looked for. */
COLD_FN int ledger_reserve_try(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			unsigned int n, struct ledger_denial *d)
{
	return try_reserve(l, s, kinds, amounts, n, d);
}

_Static_assert(LEDGER_NKINDS <= 32, "kinds_valid() keeps a bit per kind");

static inline ALWAYS_INLINE bool kinds_valid(const enum ledger_kind *kinds, unsigned int n)
{
	uint32_t seen = 0;
	unsigned int i;

	if (n - 1 >= LEDGER_NKINDS)
		return false;
	/* what the interceptor passes (one kind, or a kind and MR bytes or WR depth), without the loop */
	if (n == 1)
		return (unsigned int)kinds[0] < LEDGER_NKINDS;
	if (n == 2)
		return (unsigned int)kinds[0] < LEDGER_NKINDS && (unsigned int)kinds[1] < LEDGER_NKINDS &&
		       kinds[0] != kinds[1];
	for (i = 0; i < n; i++) {
		if ((unsigned int)kinds[i] >= LEDGER_NKINDS || seen & 1u << kinds[i])
			return false;
		seen |= 1u << kinds[i];
	}
	return true;
}

int ledger_reserve_n(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts,
				unsigned int n, struct ledger_denial *why)
{
	struct ledger_denial local;
	struct ledger_denial *d = why ? why : &local;
	struct slot *s;
	int err;

	if (l->slot < 0)
		return -ENOTCONN;
	if (!kinds_valid(kinds, n))
		return -EINVAL;
	s = &l->use->slots[l->slot];
	err = try_reserve(l, s, kinds, amounts, n, d);
	if (__builtin_expect(!err, 1))
		return 0;
	return ledger_refusal_settle(l, s, kinds, amounts, n, d);
}

int ledger_reserve(struct ledger *l, enum ledger_kind kind, uint64_t amount, struct ledger_denial *why)
{
	return ledger_reserve_n(l, &kind, &amount, 1, why);
}

int ledger_release_n(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts,
				 unsigned int n)
{
	struct slot *s;
	unsigned int i, ns;
	int err = 0;

	if (l->slot < 0)
		return -ENOTCONN;
	if (!kinds_valid(kinds, n))
		return -EINVAL;
	s = &l->use->slots[l->slot];
	op_enter(l, s);
	if (__builtin_expect(!__atomic_load_n(&l->plan_ok, __ATOMIC_RELAXED), 0)) {
		err = ledger_view_release(l, s, kinds, amounts, n);
	} else {
		for (i = 0; i < n; i++) {
			const struct plan_ent *p;

			if (kinds[i] == LEDGER_WR)
				continue;
			p = plan_of(l, kinds[i], &ns);
			if (__builtin_expect(!grant_put(l, s, p, ns, kinds[i], amounts[i]), 0))
				err = -EINVAL;
		}
	}
	op_leave(s);
	return err;
}

/* The general path of ledger_reserve_obj(): the same operation as ledger_reserve_n(). */
static COLD_FN int reserve_obj_n(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why)
{
	enum ledger_kind k[2] = { LEDGER_WR, kind };
	uint64_t n[2] = { extra, 1 };

	if (kind == LEDGER_MR) {
		k[0] = LEDGER_MR;
		k[1] = LEDGER_MR_BYTES;
		n[0] = 1;
		n[1] = extra;
		return ledger_reserve_n(l, k, n, extra ? 2 : 1, why);
	}
	return extra ? ledger_reserve_n(l, k, n, 2, why) : ledger_reserve_n(l, &kind, &n[1], 1, why);
}

/* The general path of ledger_reserve_obj() (err 0) and its errors, through the refusal hook if there is one. */
static COLD_FN int reserve_obj_slow(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why,
				    int err)
{
	struct ledger_denial local;
	struct ledger_denial *d = why ? why : &local;

	if (!err)
		err = reserve_obj_n(l, kind, extra, d);
	if (err && l->on_refusal)
		err = l->on_refusal(err, kind, err == -EDQUOT ? d : NULL);
	return err;
}

void ledger_on_refusal(struct ledger *l, int (*fn)(int err, enum ledger_kind kind, const struct ledger_denial *why))
{
	l->on_refusal = fn;
}

/* ledger_reserve_obj() beyond the slot's grants: in an operation, through the plans (or the general way). */
static COLD_FN int obj_plan(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why)
{
	const struct plan_ent *p, *pb;
	unsigned int ns, nb, at;
	uint64_t cur;
	struct slot *s;

	if ((unsigned int)kind >= LEDGER_NKINDS || kind == LEDGER_WR || kind == LEDGER_MR_BYTES)
		return -EINVAL;
	if (__builtin_expect(l->slot < 0, 0))
		return reserve_obj_slow(l, kind, extra, why, -ENOTCONN);
	s = &l->use->slots[l->slot];
	op_enter(l, s);
	if (__builtin_expect(!__atomic_load_n(&l->plan_ok, __ATOMIC_RELAXED), 0))
		goto general;
	if (kind != LEDGER_MR && extra) {
		pb = plan_of(l, LEDGER_WR, &nb);
		if (__builtin_expect(plan_wr_over(pb, nb, extra) >= 0, 0))
			goto general;
	}
	p = plan_of(l, kind, &ns);
	if (__builtin_expect(!grant_take(l, s, p, ns, kind, 1, &at, &cur), 0))
		goto general;
	if (kind == LEDGER_MR && extra) {
		pb = plan_of(l, LEDGER_MR_BYTES, &nb);
		if (__builtin_expect(!grant_take(l, s, pb, nb, LEDGER_MR_BYTES, extra, &at, &cur), 0)) {
			grant_put(l, s, p, ns, kind, 1);
			goto general;
		}
	}
	op_leave(s);
	return 0;

general:
	/* a refusal (or more cgroups than a plan holds): the general path decides, describes and records it */
	op_leave(s);
	return reserve_obj_slow(l, kind, extra, why, 0);
}

COLD_FN int ledger_obj_plan(struct ledger *l, enum ledger_kind kind, uint64_t extra)
{
	return obj_plan(l, kind, extra, NULL);
}

COLD_FN int ledger_obj_plan_release(struct ledger *l, enum ledger_kind kind, uint64_t bytes)
{
	const struct plan_ent *p;
	unsigned int ns;
	struct slot *s;
	int err = 0;

	if ((unsigned int)kind >= LEDGER_NKINDS || kind == LEDGER_WR || kind == LEDGER_MR_BYTES)
		return -EINVAL;
	if (l->slot < 0)
		return -ENOTCONN;
	if (kind != LEDGER_MR)
		bytes = 0;
	s = &l->use->slots[l->slot];
	op_enter(l, s);
	if (__builtin_expect(!__atomic_load_n(&l->plan_ok, __ATOMIC_RELAXED), 0)) {
		enum ledger_kind k[2] = { kind, LEDGER_MR_BYTES };
		uint64_t n[2] = { 1, bytes };

		err = ledger_view_release(l, s, k, n, bytes ? 2 : 1);
	} else {
		p = plan_of(l, kind, &ns);
		if (__builtin_expect(!grant_put(l, s, p, ns, kind, 1), 0))
			err = -EINVAL;
		if (bytes) {
			p = plan_of(l, LEDGER_MR_BYTES, &ns);
			if (__builtin_expect(!grant_put(l, s, p, ns, LEDGER_MR_BYTES, bytes), 0))
				err = -EINVAL;
		}
	}
	op_leave(s);
	return err;
}

/* n of kind k off every total the view's way charges (the job, the cgroup entries, the global scope). */
static COLD_FN void view_scopes_sub(struct ledger *l, enum ledger_kind k, uint64_t n)
{
	struct view v;
	int i;

	view_load(l, &v);
	if (l->job >= 0)
		sub_clamp(&l->use->jobs[l->job].total[k], n);
	for (i = 0; i < v.ncg; i++)
		sub_clamp(&l->use->cg_total[v.cg[i]][k], n);
	sub_clamp(&l->use->global_total[k], n);
}

/* grant_trim() the view's way: down to usage, no allowance kept. */
static COLD_FN void view_trim(struct ledger *l, struct slot *s, enum ledger_kind k)
{
	uint64_t back = ledger_reserve_grant_cut(s, k, 0);

	if (back)
		view_scopes_sub(l, k, back);
}

/* A release that left a grant too far above usage (trim_below): trimmed in an operation. */
COLD_FN int ledger_obj_trim(struct ledger *l, enum ledger_kind kind)
{
	const struct plan_ent *p;
	unsigned int ns;
	struct slot *s;

	if (l->slot < 0)
		return 0;
	s = &l->use->slots[l->slot];
	op_enter(l, s);
	if (__atomic_load_n(&l->plan_ok, __ATOMIC_RELAXED)) {
		p = plan_of(l, kind, &ns);
		grant_trim(l, s, p, ns, kind);
		if (kind == LEDGER_MR) {
			p = plan_of(l, LEDGER_MR_BYTES, &ns);
			grant_trim(l, s, p, ns, LEDGER_MR_BYTES);
		}
	} else {
		view_trim(l, s, kind);
		if (kind == LEDGER_MR)
			view_trim(l, s, LEDGER_MR_BYTES);
	}
	op_leave(s);
	return 0;
}

/*
 * Its usage, grants and thresholds are zeros, always: an operation on it adds and takes back its add (an
 * open's mark on it counts nothing anyone reads). Shared by every handle without a slot and by the
 * preload's copies of the slot pointer (acct_slot, acct_mark_slot) before the attach and from the exit's
 * detach.
 */
struct slot ledger_no_slot;

struct slot *ledger_own_slot(struct ledger *l)
{
	return l->slot >= 0 && l->slot < (int)l->nprocs ? &l->use->slots[l->slot] : &ledger_no_slot;
}

static inline ALWAYS_INLINE struct slot *fast_slot_of(struct ledger *l)
{
	struct slot *s = __atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED);

	return s ? s : &ledger_no_slot;
}

/* The bits of the kinds ledger_reserve_obj() and ledger_release_obj() take: all but the WR cap and MR bytes. */
#define OBJ_KINDS ((1u << LEDGER_NKINDS) - 1 - (1u << LEDGER_WR) - (1u << LEDGER_MR_BYTES))

/*
 * The interceptor's operation: the object within the slot's grant (lib/ledger/obj.h, which the interceptor
 * inlines), else the plans' way, in an operation (a grant to raise, a refusal, a WR depth over a cap, not
 * attached), which leaves nothing charged unless it succeeds, and decides, describes and records a refusal.
 */
HOT_CREATE int ledger_reserve_obj(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why)
{
	if (__builtin_expect(why || (unsigned int)kind >= LEDGER_NKINDS || !(OBJ_KINDS >> kind & 1), 0))
		return obj_plan(l, kind, extra, why); /* a caller that wants the refusal described, or not an object */
	return ledger_take_obj(&l, fast_slot_of(l), kind, extra);
}

HOT_DESTROY int ledger_release_obj(struct ledger *l, enum ledger_kind kind, uint64_t bytes)
{
	if (__builtin_expect((unsigned int)kind >= LEDGER_NKINDS || !(OBJ_KINDS >> kind & 1), 0))
		return -EINVAL;
	return ledger_give_obj(&l, fast_slot_of(l), kind, bytes);
}

/*
 * A detaching process: every grant given back to the scopes of its plan, after its usage (ledger_detach()).
 * A grant no total carries (GRANT_UNLIMITED) is just dropped.
 */
void ledger_grants_return(struct ledger *l)
{
	const struct plan_ent *p;
	unsigned int ns;
	struct slot *s;
	int k;

	if (l->slot < 0)
		return;
	s = &l->use->slots[l->slot];
	op_enter(l, s);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t g = __atomic_exchange_n(&s->grant[k], 0, __ATOMIC_SEQ_CST);

		if (k == LEDGER_WR || !g || g == GRANT_UNLIMITED)
			continue;
		if (__atomic_load_n(&l->plan_ok, __ATOMIC_RELAXED)) {
			p = plan_of(l, k, &ns);
			plan_release_scopes(p, ns, g);
		} else {
			view_scopes_sub(l, k, g);
		}
	}
	op_leave(s);
}

int ledger_note_denial(struct ledger *l, enum ledger_kind kind, uint64_t amount, uint64_t usage, uint64_t limit,
		       const char *env, struct ledger_denial *out)
{
	struct ledger_denial local;
	struct ledger_denial *d = out ? out : &local;

	if (l->slot < 0)
		return -ENOTCONN;
	if ((unsigned int)kind >= LEDGER_NKINDS)
		return -EINVAL;
	ledger_refusal_fill(l, d, kind, amount, LEDGER_SCOPE_PROCESS, 0, usage, limit);
	if (env)
		copy_str(d->env, env, sizeof(d->env));
	ledger_refusal_record(l, d);
	return 0;
}

int ledger_release(struct ledger *l, enum ledger_kind kind, uint64_t amount)
{
	return ledger_release_n(l, &kind, &amount, 1);
}
