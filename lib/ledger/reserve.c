// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger's hot path: reserve and release against every scope, lock-free, no system call. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

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

/*
 * The fast shape of the plans (build_plan(), under l->mtx): a kind whose plan is the slot without a pid limit
 * and at most one more scope. The counters go in last, so that an operation that sees one sees its scope.
 */
static COLD_FN void build_fast(struct ledger *l)
{
	uint64_t wr = LEDGER_UNLIMITED;
	unsigned int i, k;

	for (i = 0; i < l->plan_n[LEDGER_WR]; i++)
		if (l->plan[LEDGER_WR][i].lim < wr)
			wr = l->plan[LEDGER_WR][i].lim;
	__atomic_store_n(&l->fast_wr, wr, __ATOMIC_RELAXED);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		const struct plan_ent *p = l->plan[k];
		struct fast_ent *f = k == LEDGER_MR_BYTES ? &l->fast_bytes : &l->fast[k];
		unsigned int n = l->plan_n[k];

		if (k == LEDGER_WR || n < 1 || n > 2 || p[0].lim != LEDGER_UNLIMITED)
			continue;
		__atomic_store_n(&f->c1, n == 2 ? p[1].ctr : NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&f->l1, n == 2 ? p[1].lim : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&f->c0, p[0].ctr, __ATOMIC_RELEASE);
	}
}

/*
 * The plan of every kind (under l->mtx, from refresh_view): the scopes in the order the general path charges
 * them, each with its counter and its limit as of now (any change of them bumps the generation). cg[] are
 * valid cgroup indices (cg_matches()); the slot and job indices are this handle's own.
 */
static COLD_FN void build_plan(struct ledger *l, const int *cg, int ncg)
{
	struct usage *u = l->use;
	const struct policy *pol = l->pol;
	struct slot *s;
	int k, i;

	/* no fast operation while the plans change: the general path rereads them */
	for (k = 0; k < LEDGER_NKINDS; k++)
		__atomic_store_n(&l->fast[k].c0, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&l->fast_bytes.c0, NULL, __ATOMIC_RELAXED);
	if (l->slot < 0 || l->slot >= LEDGER_MAX_PROCS || l->job >= LEDGER_MAX_JOBS || ncg > PLAN_MAX - 3) {
		__atomic_store_n(&l->plan_ok, false, __ATOMIC_RELAXED);
		return;
	}
	s = &u->slots[l->slot];
	__atomic_store_n(&l->fast_slot, s, __ATOMIC_RELAXED);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		struct plan_ent *p = l->plan[k];
		bool wr = k == LEDGER_WR;
		unsigned int n = 0;

		plan_add(p, &n, !wr, wr ? NULL : &s->usage[k], ALOADR(&l->view_pid[k]), LEDGER_SCOPE_PROCESS, 0);
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
COLD_FN void refresh_view(struct ledger *l)
{
	const struct policy *pol = l->pol;
	int idx[MAX_CG_PER_PROC], n, i, k, p = -1;
	uint64_t gen;

	pthread_mutex_lock(&l->mtx);
	gen = ALOAD(&l->use->gen);
	n = cg_matches(pol, l->cgroup, idx, MAX_CG_PER_PROC);
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
		if (++spins < 1000) {
			sched_yield();
			continue;
		}
		if (!first)
			first = clock_mono_ns();
		if (clock_mono_ns() - first > 5000000000ull)
			return false;
		if (!start)
			start = clock_mono_ns();
		if (clock_mono_ns() - start > 500000000ull && !gc_lock(l, 0)) {
			/* the lock was free or stolen from a dead gc: nobody else is recounting */
			gc_locked(l, true, NULL, NULL);
			gc_unlock(l);
			start = 0;
		}
		usleep(100);
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
	if (!gc_lock(l, 0)) {
		gc_locked(l, true, NULL, NULL);
		gc_unlock(l);
	}
}

/* One more on *p unless that passes lim. */
static inline ALWAYS_INLINE bool cas_inc(uint64_t *p, uint64_t lim)
{
	uint64_t c = ALOADR(p);

	do {
		if (c >= lim)
			return false;
	} while (!__atomic_compare_exchange_n(p, &c, c + 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
}

/* Add n to *p unless that passes lim (cas_add() without the value seen). */
static inline ALWAYS_INLINE bool cas_add1(uint64_t *p, uint64_t n, uint64_t lim)
{
	uint64_t c = ALOADR(p);

	do {
		if (c > lim - n || n > lim)
			return false;
	} while (!__atomic_compare_exchange_n(p, &c, c + n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
}

/* Add n to *p unless that passes lim. On refusal *cur is the value seen. */
static inline bool cas_add(uint64_t *p, uint64_t n, uint64_t lim, uint64_t *cur)
{
	uint64_t c = ALOADR(p);

	do {
		if (c + n < c || c + n > lim) {
			*cur = c;
			return false;
		}
	} while (!__atomic_compare_exchange_n(p, &c, c + n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
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
			refresh_view(l);
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

static COLD_FN void fill_denial(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->pid = l->pid;
	copy_str(d->job, l->jobname, sizeof(d->job));
	d->amount = amount;
	d->usage = usage;
	d->limit = limit;
	d->scope.type = type;
	switch (type) {
	case LEDGER_SCOPE_PROCESS:
		d->scope.pid = l->pid;
		d->scope.start_time = l->start;
		break;
	case LEDGER_SCOPE_JOB:
		copy_str(d->scope.name, l->jobname, sizeof(l->jobname));
		break;
	case LEDGER_SCOPE_CGROUP:
		copy_str(d->scope.name, l->pol->cg[idx].path, sizeof(d->scope.name));
		break;
	case LEDGER_SCOPE_GLOBAL:
		break;
	}
}

/* The refusing scope's own count: the global one, the cgroup entry of that path, this job, this slot. */
static COLD_FN void count_scope_denial(struct ledger *l, const struct ledger_denial *d)
{
	struct usage *u = l->use;
	int i;

	switch (d->scope.type) {
	case LEDGER_SCOPE_GLOBAL:
		AADD(&u->global_refused[d->kind], 1);
		break;
	case LEDGER_SCOPE_CGROUP:
		for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
			if (ALOAD(&l->pol->cg[i].state) == ENT_LIVE &&
			    !strncmp(l->pol->cg[i].path, d->scope.name, LEDGER_CGROUP_MAX)) {
				AADD(&u->cg_refused[i][d->kind], 1);
				break;
			}
		break;
	case LEDGER_SCOPE_JOB:
		if (l->job >= 0 && l->job < LEDGER_MAX_JOBS)
			AADD(&u->jobs[l->job].refused[d->kind], 1);
		break;
	case LEDGER_SCOPE_PROCESS:
		if (l->slot >= 0 && l->slot < LEDGER_MAX_PROCS)
			AADD(&u->slots[l->slot].refused[d->kind], 1);
		break;
	}
}

static COLD_FN void record_denial(struct ledger *l, const struct ledger_denial *d)
{
	struct usage *u = l->use;
	struct ring_ent *e;
	uint64_t seq;

	AADD(&u->denial_total, 1);
	if ((unsigned int)d->kind < LEDGER_NKINDS) {
		AADD(&u->denial_kind[d->kind], 1);
		count_scope_denial(l, d);
	}
	seq = AADD(&u->denial_seq, 1) + 1;
	e = &u->ring[seq % LEDGER_DENIAL_RING];
	__atomic_store_n(&e->seq, 0, __ATOMIC_SEQ_CST);
	e->ev.seq = seq;
	e->ev.time_ns = clock_rt_ns();
	e->ev.d = *d;
	__atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
}

/* The cgroup scopes of this process, read once per operation (after op_enter(): current). */
struct view {
	int ncg;
	int cg[MAX_CG_PER_PROC];
};

static inline void view_load(const struct ledger *l, struct view *v)
{
	int i;

	v->ncg = __atomic_load_n(&l->view_ncg, __ATOMIC_RELAXED);
	if ((unsigned int)v->ncg > MAX_CG_PER_PROC)
		v->ncg = 0;
	for (i = 0; i < v->ncg; i++) {
		v->cg[i] = __atomic_load_n(&l->view_cg[i], __ATOMIC_RELAXED);
		if ((unsigned int)v->cg[i] >= LEDGER_MAX_CGROUPS)
			v->cg[i] = 0;
	}
}

static COLD_FN int deny(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit)
{
	fill_denial(l, d, kind, amount, type, idx, usage, limit);
	return -EDQUOT;
}

/* LEDGER_WR: the requested depth against every scope's cap (checked, never charged). */
static inline ALWAYS_INLINE int check_wr(struct ledger *l, const struct view *v, uint64_t n, struct ledger_denial *d)
{
	const struct policy *pol = l->pol;
	uint64_t lim;
	int i;

	lim = ALOADR(&l->view_pid[LEDGER_WR]);
	if (n > lim)
		return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_PROCESS, 0, 0, lim);
	if (l->job >= 0) {
		lim = ALOADR(&l->use->jobs[l->job].limit[LEDGER_WR]);
		if (n > lim)
			return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_JOB, l->job, 0, lim);
	}
	for (i = 0; i < v->ncg; i++) {
		lim = ALOADR(&pol->cg[v->cg[i]].limit[LEDGER_WR]);
		if (n > lim)
			return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_CGROUP, v->cg[i], 0, lim);
	}
	lim = ALOADR(&l->view_global[LEDGER_WR]);
	if (n > lim)
		return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_GLOBAL, 0, 0, lim);
	return 0;
}

/* Charge n of kind k to the process and to every scope, or nothing: -EDQUOT with *d filled. */
static inline ALWAYS_INLINE int reserve_kind(struct ledger *l, struct slot *s, const struct view *v,
					     enum ledger_kind k, uint64_t n, struct ledger_denial *d)
{
	struct usage *u = l->use;
	const struct policy *pol = l->pol;
	uint64_t lim, cur;
	int i = 0, j = l->job, err;

	lim = ALOADR(&l->view_pid[k]);
	if (!cas_add(&s->usage[k], n, lim, &cur))
		return deny(l, d, k, n, LEDGER_SCOPE_PROCESS, 0, cur, lim);
	if (j >= 0) {
		lim = ALOADR(&u->jobs[j].limit[k]);
		if (!cas_add(&u->jobs[j].total[k], n, lim, &cur)) {
			err = deny(l, d, k, n, LEDGER_SCOPE_JOB, j, cur, lim);
			goto undo_proc;
		}
	}
	for (i = 0; i < v->ncg; i++) {
		lim = ALOADR(&pol->cg[v->cg[i]].limit[k]);
		if (!cas_add(&u->cg_total[v->cg[i]][k], n, lim, &cur)) {
			err = deny(l, d, k, n, LEDGER_SCOPE_CGROUP, v->cg[i], cur, lim);
			goto undo_cg;
		}
	}
	lim = ALOADR(&l->view_global[k]);
	if (!cas_add(&u->global_total[k], n, lim, &cur)) {
		err = deny(l, d, k, n, LEDGER_SCOPE_GLOBAL, 0, cur, lim);
		goto undo_cg;
	}
	return 0;

undo_cg:
	while (i--)
		sub_clamp(&u->cg_total[v->cg[i]][k], n);
	if (j >= 0)
		sub_clamp(&u->jobs[j].total[k], n);
undo_proc:
	sub_clamp(&s->usage[k], n);
	return err;
}

/* Give n of kind k back to the process and every scope; -EINVAL if the process holds less (nothing changed). */
static inline ALWAYS_INLINE int release_kind(struct ledger *l, struct slot *s, const struct view *v,
					     enum ledger_kind k, uint64_t n)
{
	struct usage *u = l->use;
	uint64_t cur = ALOADR(&s->usage[k]);
	int i;

	do {
		if (cur < n)
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&s->usage[k], &cur, cur - n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	if (l->job >= 0)
		sub_clamp(&u->jobs[l->job].total[k], n);
	for (i = 0; i < v->ncg; i++)
		sub_clamp(&u->cg_total[v->cg[i]][k], n);
	sub_clamp(&u->global_total[k], n);
	return 0;
}

/* release_kind() out of line, for the refusal path of a reserve. */
static COLD_FN void undo_kind(struct ledger *l, struct slot *s, const struct view *v, enum ledger_kind k, uint64_t n)
{
	release_kind(l, s, v, k, n);
}

/* One attempt at every kind through the view (more cgroup scopes than a plan holds). */
static COLD_FN int try_reserve_view(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
				    const uint64_t *amounts, unsigned int n, struct ledger_denial *d)
{
	struct view v;
	unsigned int i;
	int err = 0;

	view_load(l, &v);
	for (i = 0; i < n; i++) {
		if (kinds[i] == LEDGER_WR)
			err = check_wr(l, &v, amounts[i], d);
		else
			err = reserve_kind(l, s, &v, kinds[i], amounts[i], d);
		if (err)
			break;
	}
	/* kinds[i] was refused: give back the ones before it */
	while (err && i--)
		if (kinds[i] != LEDGER_WR)
			undo_kind(l, s, &v, kinds[i], amounts[i]);
	return err;
}

static COLD_FN int release_view(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
				const uint64_t *amounts, unsigned int n)
{
	struct view v;
	unsigned int i;
	int err = 0;

	view_load(l, &v);
	for (i = 0; i < n; i++)
		if (kinds[i] != LEDGER_WR && release_kind(l, s, &v, kinds[i], amounts[i]))
			err = -EINVAL;
	return err;
}

/* The refusal by scope e of a plan. */
static COLD_FN int plan_deny(struct ledger *l, struct ledger_denial *d, enum ledger_kind k, uint64_t n,
			     const struct plan_ent *e, uint64_t cur)
{
	return deny(l, d, k, n, (enum ledger_scope_type)e->type, e->idx, cur, e->lim);
}

/* Kind k's plan and its length (in range whatever the handle's memory says). */
static inline ALWAYS_INLINE const struct plan_ent *plan_of(const struct ledger *l, enum ledger_kind k, unsigned int *ns)
{
	/* built by build_plan(), at most PLAN_MAX: process memory, not the shared file */
	*ns = __atomic_load_n(&l->plan_n[k], __ATOMIC_RELAXED);
	return l->plan[k];
}

/* The scopes of a plan after the first two (cgroups): n more on each, or nothing (the first two undone too). */
static COLD_FN bool plan_reserve_more(const struct plan_ent *p, unsigned int ns, uint64_t n, unsigned int *at,
				      uint64_t *cur)
{
	unsigned int i;

	for (i = 2; i < ns; i++) {
		if (!cas_add(ALOADR(&p[i].ctr), n, ALOADR(&p[i].lim), cur)) {
			*at = i;
			while (i--)
				sub_clamp(ALOADR(&p[i].ctr), n);
			return false;
		}
	}
	return true;
}

static COLD_FN void plan_release_more(const struct plan_ent *p, unsigned int ns, uint64_t n)
{
	unsigned int i;

	for (i = 2; i < ns; i++)
		sub_clamp(ALOADR(&p[i].ctr), n);
}

/* A refusal by the second scope of a plan: the slot's charge undone. */
static COLD_FN bool plan_refused_1(const struct plan_ent *p, uint64_t n, unsigned int *at)
{
	sub_clamp(ALOADR(&p[0].ctr), n);
	*at = 1;
	return false;
}

/*
 * n more on every scope of a plan, or nothing; on refusal *at is the scope that refused, *cur its usage.
 * The usual plans (the slot, and the job or one other scope with a limit) inline, longer ones out of line.
 */
static inline ALWAYS_INLINE bool plan_reserve(const struct plan_ent *p, unsigned int ns, uint64_t n,
					      unsigned int *at, uint64_t *cur)
{
	/* p[0] is the slot: without a pid limit one atomic add (the other scopes check for overflow) */
	if (__builtin_expect(ALOADR(&p[0].lim) == LEDGER_UNLIMITED, 1)) {
		__atomic_fetch_add(ALOADR(&p[0].ctr), n, __ATOMIC_SEQ_CST);
	} else if (!cas_add(ALOADR(&p[0].ctr), n, ALOADR(&p[0].lim), cur)) {
		*at = 0;
		return false;
	}
	if (ns < 2)
		return true;
	if (__builtin_expect(!cas_add(ALOADR(&p[1].ctr), n, ALOADR(&p[1].lim), cur), 0))
		return plan_refused_1(p, n, at);
	if (__builtin_expect(ns > 2, 0))
		return plan_reserve_more(p, ns, n, at, cur);
	return true;
}

/* n back to every scope of a plan (p[0] is the slot); false (nothing changed) when the process holds less. */
static inline ALWAYS_INLINE bool plan_release(const struct plan_ent *p, unsigned int ns, uint64_t n)
{
	uint64_t *c = ALOADR(&p[0].ctr);

	/*
	 * One atomic subtract; more than held (a caller's bug, or a slot that was written over) is put back at
	 * once. In between, only this process's own concurrent reserves against a pid limit can see it (they
	 * refuse), never a recount (it waits for operations in flight).
	 */
	if (__builtin_expect(__atomic_fetch_sub(c, n, __ATOMIC_SEQ_CST) < n, 0)) {
		__atomic_fetch_add(c, n, __ATOMIC_SEQ_CST);
		return false;
	}
	if (ns < 2)
		return true;
	sub_clamp(ALOADR(&p[1].ctr), n);
	if (__builtin_expect(ns > 2, 0))
		plan_release_more(p, ns, n);
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
static COLD_FN void plan_undo(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts, unsigned int i)
{
	const struct plan_ent *p;
	unsigned int ns;

	while (i--) {
		if (kinds[i] == LEDGER_WR)
			continue;
		p = plan_of(l, kinds[i], &ns);
		plan_release(p, ns, amounts[i]);
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
		err = try_reserve_view(l, s, kinds, amounts, n, d);
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
		} else if (__builtin_expect(!plan_reserve(p, ns, amounts[i], &at, &cur), 0)) {
			err = plan_deny(l, d, kinds[i], amounts[i], &p[at], cur);
			break;
		}
	}
	if (__builtin_expect(err, 0))
		plan_undo(l, kinds, amounts, i);
	op_leave(s);
	return err;
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

/* Cold: a dead holder may be what blocks us. gc at most every 100 ms, never waiting for the lock. */
static COLD_FN int reserve_refused(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
				   const uint64_t *amounts, unsigned int n, struct ledger_denial *d)
{
	int err = -EDQUOT;

	/* a WR depth above a cap stays above it whoever dies */
	if (d->kind != LEDGER_WR && clock_mono_ns() - ALOADR(&l->use->last_gc_ns) > 100000000ull && !gc_lock(l, 0)) {
		unsigned int freed = 0, given = 0;

		gc_locked(l, false, &freed, &given);
		gc_unlock(l);
		if (freed || given)
			err = try_reserve(l, s, kinds, amounts, n, d);
	}
	if (err)
		record_denial(l, d);
	return err;
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
	return reserve_refused(l, s, kinds, amounts, n, d);
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
		err = release_view(l, s, kinds, amounts, n);
	} else {
		for (i = 0; i < n; i++) {
			const struct plan_ent *p;

			if (kinds[i] == LEDGER_WR)
				continue;
			p = plan_of(l, kinds[i], &ns);
			if (__builtin_expect(!plan_release(p, ns, amounts[i]), 0))
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

/* ledger_reserve_obj() through the plans (any plan but a longer one, which goes the general way). */
static __attribute__((noinline)) HOT_CREATE int reserve_obj_plan(struct ledger *l, enum ledger_kind kind,
								   uint64_t extra, struct ledger_denial *why)
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
	if (__builtin_expect(!plan_reserve(p, ns, 1, &at, &cur), 0))
		goto general;
	if (kind == LEDGER_MR && extra) {
		pb = plan_of(l, LEDGER_MR_BYTES, &nb);
		if (__builtin_expect(!plan_reserve(pb, nb, extra, &at, &cur), 0)) {
			plan_release(p, ns, 1);
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

static __attribute__((noinline)) HOT_DESTROY int release_obj_plan(struct ledger *l, enum ledger_kind kind,
								    uint64_t bytes)
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

		err = release_view(l, s, k, n, bytes ? 2 : 1);
	} else {
		p = plan_of(l, kind, &ns);
		if (__builtin_expect(!plan_release(p, ns, 1), 0))
			err = -EINVAL;
		if (bytes) {
			p = plan_of(l, LEDGER_MR_BYTES, &ns);
			if (__builtin_expect(!plan_release(p, ns, bytes), 0))
				err = -EINVAL;
		}
	}
	op_leave(s);
	return err;
}

/*
 * The interceptor's usual operation, in the fewest instructions (one page per side with the wrappers): the
 * kind's plan is the slot without a pid limit and at most one scope with a limit (the job's total under
 * run, or one cgroup entry), and an MR's bytes the same. One atomic add on the slot, one compare-and-swap
 * on the other scope, the in-flight mark around them, the checks of op_enter(). Anything else (a refusal,
 * a WR depth over a cap, a freeze, limits that changed, another plan) leaves nothing charged and goes the
 * plans' way, which decides, describes and records it.
 */
static COLD_FN int reserve_fast_undo(struct ledger *l, enum ledger_kind kind, uint64_t extra,
				     struct ledger_denial *why, uint64_t *c1, bool bytes)
{
	struct slot *s = __atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED);

	if (bytes) {
		/* the bytes' other scope refused: the bytes on the slot, and the count, given back */
		__atomic_fetch_sub(&s->usage[LEDGER_MR_BYTES], extra, __ATOMIC_SEQ_CST);
		if (c1)
			sub_clamp(c1, 1);
	}
	__atomic_fetch_sub(&s->usage[kind], 1, __ATOMIC_SEQ_CST);
	op_leave(s);
	return reserve_obj_plan(l, kind, extra, why);
}

static COLD_FN int fast_leave(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why)
{
	op_leave(__atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED));
	return reserve_obj_plan(l, kind, extra, why);
}

/*
 * The start of a fast operation on a valid kind: FAST_GO with the slot entered (op_try_enter()) and the
 * kind's slot counter (&s->usage[kind]: the cold paths find it there again); FAST_PLAN when it could not
 * enter (nothing to undo), FAST_LEAVE when the kind has no fast shape (the mark to take back first).
 */
enum fast_start { FAST_GO, FAST_PLAN, FAST_LEAVE };

static inline ALWAYS_INLINE enum fast_start fast_start(struct ledger *l, enum ledger_kind kind, struct slot **s,
							uint64_t **c0)
{
	*s = __atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED);
	if (__builtin_expect(!*s || !op_try_enter(l, *s), 0))
		return FAST_PLAN;
	*c0 = __atomic_load_n(&l->fast[kind].c0, __ATOMIC_ACQUIRE);
	return __builtin_expect(!*c0, 0) ? FAST_LEAVE : FAST_GO;
}

HOT_CREATE int ledger_reserve_obj(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why)
{
	const struct fast_ent *f;
	uint64_t *c0 = NULL, *c1, *b0, *b1;
	struct slot *s;
	enum fast_start st;

	if (__builtin_expect((unsigned int)kind >= LEDGER_NKINDS, 0))
		return -EINVAL;
	f = &l->fast[kind];
	st = fast_start(l, kind, &s, &c0);
	if (__builtin_expect(st != FAST_GO, 0))
		return st == FAST_PLAN ? reserve_obj_plan(l, kind, extra, why) : fast_leave(l, kind, extra, why);
	if (kind == LEDGER_MR && extra) {
		b0 = __atomic_load_n(&l->fast_bytes.c0, __ATOMIC_ACQUIRE);
		if (__builtin_expect(!b0, 0))
			return fast_leave(l, kind, extra, why);
		c1 = ALOADR(&f->c1);
		__atomic_fetch_add(c0, 1, __ATOMIC_SEQ_CST);
		if (c1 && __builtin_expect(!cas_inc(c1, ALOADR(&f->l1)), 0))
			return reserve_fast_undo(l, kind, extra, why, NULL, false);
		b1 = ALOADR(&l->fast_bytes.c1);
		__atomic_fetch_add(b0, extra, __ATOMIC_SEQ_CST);
		if (b1 && __builtin_expect(!cas_add1(b1, extra, ALOADR(&l->fast_bytes.l1)), 0))
			return reserve_fast_undo(l, kind, extra, why, c1, true);
	} else {
		if (__builtin_expect(extra > ALOADR(&l->fast_wr), 0))
			return fast_leave(l, kind, extra, why);
		c1 = ALOADR(&f->c1);
		__atomic_fetch_add(c0, 1, __ATOMIC_SEQ_CST);
		if (c1 && __builtin_expect(!cas_inc(c1, ALOADR(&f->l1)), 0))
			return reserve_fast_undo(l, kind, extra, why, NULL, false);
	}
	op_leave(s);
	return 0;
}

/*
 * A fast release that found less held than it gives back (a caller's bug): put back. When the count was odd,
 * the plans' way decides (it gives back the bytes and says -EINVAL); when only the bytes were, -EINVAL.
 */
static COLD_FN int release_fast_odd(struct ledger *l, enum ledger_kind kind, uint64_t bytes, bool counted)
{
	struct slot *s = __atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED);

	if (counted) {
		__atomic_fetch_add(&s->usage[LEDGER_MR_BYTES], bytes, __ATOMIC_SEQ_CST);
		op_leave(s);
		return -EINVAL;
	}
	__atomic_fetch_add(&s->usage[kind], 1, __ATOMIC_SEQ_CST);
	op_leave(s);
	return release_obj_plan(l, kind, bytes);
}

static COLD_FN int release_leave(struct ledger *l, enum ledger_kind kind, uint64_t bytes)
{
	op_leave(__atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED));
	return release_obj_plan(l, kind, bytes);
}

HOT_DESTROY int ledger_release_obj(struct ledger *l, enum ledger_kind kind, uint64_t bytes)
{
	const struct fast_ent *f;
	uint64_t *c0 = NULL, *c1, *b0, *b1;
	struct slot *s;
	enum fast_start st;

	if (__builtin_expect((unsigned int)kind >= LEDGER_NKINDS, 0))
		return -EINVAL;
	f = &l->fast[kind];
	st = fast_start(l, kind, &s, &c0);
	if (__builtin_expect(st != FAST_GO, 0))
		return st == FAST_PLAN ? release_obj_plan(l, kind, bytes) : release_leave(l, kind, bytes);
	c1 = ALOADR(&f->c1);
	if (kind == LEDGER_MR && bytes) {
		b0 = __atomic_load_n(&l->fast_bytes.c0, __ATOMIC_ACQUIRE);
		if (__builtin_expect(!b0, 0))
			return release_leave(l, kind, bytes);
		if (__builtin_expect(__atomic_fetch_sub(c0, 1, __ATOMIC_SEQ_CST) < 1, 0))
			return release_fast_odd(l, kind, bytes, false);
		if (c1)
			sub_clamp(c1, 1);
		b1 = ALOADR(&l->fast_bytes.c1);
		if (__builtin_expect(__atomic_fetch_sub(b0, bytes, __ATOMIC_SEQ_CST) < bytes, 0))
			return release_fast_odd(l, kind, bytes, true);
		if (b1)
			sub_clamp(b1, bytes);
	} else {
		if (__builtin_expect(__atomic_fetch_sub(c0, 1, __ATOMIC_SEQ_CST) < 1, 0))
			return release_fast_odd(l, kind, bytes, false);
		if (c1)
			sub_clamp(c1, 1);
	}
	op_leave(s);
	return 0;
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
	fill_denial(l, d, kind, amount, LEDGER_SCOPE_PROCESS, 0, usage, limit);
	if (env)
		copy_str(d->env, env, sizeof(d->env));
	record_denial(l, d);
	return 0;
}

int ledger_release(struct ledger *l, enum ledger_kind kind, uint64_t amount)
{
	return ledger_release_n(l, &kind, &amount, 1);
}
