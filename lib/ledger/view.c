// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ledger's way without a plan: while a process's plan is not built (limits changed since, l->plan_ok
 * false), each operation reads its scopes through its view (job, cgroup entries, pid limits) and adds to or
 * takes from every scope's total, the process's grant last. Cold: the plans of reserve.c are the usual way.
 */
#include "ledger/obj.h"

#include <errno.h>
#include <stdint.h>

/* LEDGER_WR: the requested depth against every scope's cap (checked, never charged). */
static inline ALWAYS_INLINE int check_wr(struct ledger *l, const struct view *v, uint64_t n, struct ledger_denial *d)
{
	const struct policy *pol = l->pol;
	uint64_t lim;
	int i;

	lim = ALOADR(&l->view_pid[LEDGER_WR]);
	if (n > lim)
		return ledger_refusal_deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_PROCESS, 0, 0, lim);
	if (l->job >= 0) {
		lim = ALOADR(&l->use->jobs[l->job].limit[LEDGER_WR]);
		if (n > lim)
			return ledger_refusal_deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_JOB, l->job, 0, lim);
	}
	for (i = 0; i < v->ncg; i++) {
		lim = ALOADR(&pol->cg[v->cg[i]].limit[LEDGER_WR]);
		if (n > lim)
			return ledger_refusal_deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_CGROUP, v->cg[i], 0, lim);
	}
	lim = ALOADR(&l->view_global[LEDGER_WR]);
	if (n > lim)
		return ledger_refusal_deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_GLOBAL, 0, 0, lim);
	return 0;
}

/*
 * n more of kind k in use, its grant raised by n on the process and on every scope (no allowance: the
 * view's way is the rare one), or nothing: -EDQUOT with *d filled.
 */
static inline ALWAYS_INLINE int reserve_kind(struct ledger *l, struct slot *s, const struct view *v,
					     enum ledger_kind k, uint64_t n, struct ledger_denial *d)
{
	struct usage *u = l->use;
	const struct policy *pol = l->pol;
	uint64_t lim, cur;
	int i = 0, j = l->job, err;

	/* the pid limit first for the refusal's name, its grant last: no create uses it before the totals */
	lim = ALOADR(&l->view_pid[k]);
	cur = ALOAD(&s->grant[k]);
	if (cur > lim || n > lim - cur)
		return ledger_refusal_deny(l, d, k, n, LEDGER_SCOPE_PROCESS, 0, ALOADR(&s->usage[k]), lim);
	if (j >= 0) {
		lim = ALOADR(&u->jobs[j].limit[k]);
		if (!cas_add(&u->jobs[j].total[k], n, lim, &cur))
			return ledger_refusal_deny(l, d, k, n, LEDGER_SCOPE_JOB, j, cur, lim);
	}
	for (i = 0; i < v->ncg; i++) {
		lim = ALOADR(&pol->cg[v->cg[i]].limit[k]);
		if (!cas_add(&u->cg_total[v->cg[i]][k], n, lim, &cur)) {
			err = ledger_refusal_deny(l, d, k, n, LEDGER_SCOPE_CGROUP, v->cg[i], cur, lim);
			goto undo_cg;
		}
	}
	lim = ALOADR(&l->view_global[k]);
	if (!cas_add(&u->global_total[k], n, lim, &cur)) {
		err = ledger_refusal_deny(l, d, k, n, LEDGER_SCOPE_GLOBAL, 0, cur, lim);
		goto undo_cg;
	}
	lim = ALOADR(&l->view_pid[k]);
	if (!cas_add(&s->grant[k], n, lim, &cur)) {
		err = ledger_refusal_deny(l, d, k, n, LEDGER_SCOPE_PROCESS, 0, ALOADR(&s->usage[k]), lim);
		sub_clamp(&u->global_total[k], n);
		goto undo_cg;
	}
	AADD(&s->usage[k], n);
	ledger_reserve_set_trim(s, k, 0); /* no allowance the view's way: every release gives back */
	return 0;

undo_cg:
	while (i--)
		sub_clamp(&u->cg_total[v->cg[i]][k], n);
	if (j >= 0)
		sub_clamp(&u->jobs[j].total[k], n);
	return err;
}

/*
 * n of kind k out of use, and its grant lowered by n on the process and every scope; -EINVAL if the process
 * holds less (nothing changed).
 */
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
	if (ALOAD(&s->grant[k]) == GRANT_UNLIMITED)
		return 0;
	sub_clamp(&s->grant[k], n);
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
COLD_FN int ledger_view_reserve(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
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

COLD_FN int ledger_view_release(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
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
