// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger's read side: scopes, processes and refusals for quota show, top and monitor. */
#include "ledger/internal.h"

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

#include "core/util.h"

int ledger_format_denial(const struct ledger_denial *d, char *buf, size_t len)
{
	char who[LEDGER_CGROUP_MAX + 32], used[32], lim[32];
	const char *kind = ledger_kind_name(d->kind);

	if (!kind)
		kind = "?";
	switch (d->scope.type) {
	case LEDGER_SCOPE_PROCESS:
		snprintf(who, sizeof(who), "pid %d", (int)d->scope.pid);
		break;
	case LEDGER_SCOPE_JOB:
		snprintf(who, sizeof(who), "job %.*s", LEDGER_NAME_MAX, d->scope.name);
		break;
	case LEDGER_SCOPE_CGROUP:
		snprintf(who, sizeof(who), "cgroup %.*s", LEDGER_CGROUP_MAX, d->scope.name);
		break;
	default:
		snprintf(who, sizeof(who), "global limit");
		break;
	}
	if (d->env[0])
		snprintf(who, sizeof(who), "%.*s", (int)sizeof(d->env), d->env);
	snprintf(used, sizeof(used), "%" PRIu64, d->usage);
	snprintf(lim, sizeof(lim), "%" PRIu64, d->limit);
	if (d->kind == LEDGER_WR)
		return snprintf(buf, len, "refused wr depth %" PRIu64 " for pid %d%s%.*s%s: above the cap of %s, %s%s",
				d->amount, (int)d->pid, d->job[0] ? " (job " : "", LEDGER_NAME_MAX, d->job,
				d->job[0] ? ")" : "", lim,
				d->scope.type == LEDGER_SCOPE_GLOBAL && !d->env[0] ? "" : "set by ", who);
	return snprintf(buf, len, "refused %s for pid %d%s%.*s%s: %s/%s in use, %s%s", kind, (int)d->pid,
			d->job[0] ? " (job " : "", LEDGER_NAME_MAX, d->job, d->job[0] ? ")" : "", used, lim,
			d->scope.type == LEDGER_SCOPE_GLOBAL && !d->env[0] ? "" : "limit set by ", who);
}


/* ---- read side ---------------------------------------------------------------------------------- */

/*
 * What a slot has in use, per kind. Its usage counter may be ahead of its grant by a create that found the
 * grant short and is taking its add back: what is in use never is, so the smaller of the two is shown.
 */
static uint64_t slot_in_use(const struct slot *s, int k)
{
	uint64_t g = ALOAD(&s->grant[k]), u = ALOAD(&s->usage[k]);

	return u < g ? u : g;
}

static void slot_usage_into(const struct slot *s, uint64_t *usage)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		if (k != LEDGER_WR)
			usage[k] += slot_in_use(s, k);
}

static bool slot_live(const struct slot *s)
{
	return ALOAD(&s->state) == ENT_LIVE && ledger_pid_alive(s->pid, s->start);
}

/*
 * A scope's usage is the sum of the slots in it (those not reclaimed yet included): its total, where it has
 * a limit, carries their grants, usage and allowances (lib/ledger/ledger.h, "Grants"). in(l, s, arg) says whether
 * slot s counts in the scope.
 */
static void slots_usage(struct ledger *l, struct ledger_scope_stat *st,
			bool (*in)(struct ledger *l, const struct slot *s, const void *arg), const void *arg)
{
	int i;

	for (i = 0; i < (int)slots_used(l); i++) {
		const struct slot *s = &l->use->slots[i];

		if (ALOAD(&s->state) == ENT_LIVE && in(l, s, arg))
			slot_usage_into(s, st->usage);
	}
}

/*
 * A scope with a limit on a kind keeps a total, the sum of its slots' grants: never below what is in use.
 * The slots are read one after the other, and a sum of them read while processes come and go can be above
 * what was ever in use at once (a release seen late, another's create seen early): a limited kind shows the
 * smaller of the sum and the total, which is what is in use at rest, and never above a limit that usage did
 * not pass.
 */
static void clamp_to_totals(struct ledger_scope_stat *st, const uint64_t *total)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t t;

		if (k == LEDGER_WR || st->limit[k] == LEDGER_UNLIMITED)
			continue;
		t = ALOADR(&total[k]);
		if (st->usage[k] > t)
			st->usage[k] = t;
	}
}

static bool in_global(struct ledger *l, const struct slot *s, const void *arg)
{
	(void)l;
	(void)s;
	(void)arg;
	return true;
}

static bool in_job(struct ledger *l, const struct slot *s, const void *arg)
{
	(void)l;
	return ledger_slot_job(s) == *(const int *)arg;
}

static bool in_cgroup(struct ledger *l, const struct slot *s, const void *arg)
{
	char cg[LEDGER_CGROUP_MAX];

	(void)l;
	copy_str(cg, s->cgroup, sizeof(cg));
	return ledger_cg_covers(arg, cg);
}

static void stat_init(struct ledger_scope_stat *st, enum ledger_scope_type type)
{
	int k;

	memset(st, 0, sizeof(*st));
	st->scope.type = type;
	for (k = 0; k < LEDGER_NKINDS; k++)
		st->limit[k] = LEDGER_UNLIMITED;
}

static void fill_pid_scope(struct ledger *l, pid_t pid, uint64_t start, struct ledger_scope_stat *st)
{
	int i, k;

	stat_init(st, LEDGER_SCOPE_PROCESS);
	st->scope.pid = pid;
	st->scope.start_time = start;
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++) {
		const struct pol_pid *pp = &l->pol->pid[i];

		if (ALOAD(&pp->state) == ENT_LIVE && pp->pid == pid && pp->start == start)
			for (k = 0; k < LEDGER_NKINDS; k++)
				st->limit[k] = ALOADR(&pp->limit[k]);
	}
	for (i = 0; i < (int)slots_used(l); i++) {
		const struct slot *s = &l->use->slots[i];

		if (ALOAD(&s->state) == ENT_LIVE && s->pid == pid && s->start == start) {
			slot_usage_into(s, st->usage);
			for (k = 0; k < LEDGER_NKINDS; k++)
				st->refused[k] += ALOADR(&s->refused[k]);
			st->nprocs++;
		}
	}
}

static void fill_cgroup_scope(struct ledger *l, const char *path, struct ledger_scope_stat *st, bool *found)
{
	int i, k, e = -1;
	char cg[LEDGER_CGROUP_MAX];

	stat_init(st, LEDGER_SCOPE_CGROUP);
	copy_str(st->scope.name, path, sizeof(st->scope.name));
	for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
		if (ALOAD(&l->pol->cg[i].state) == ENT_LIVE && !strncmp(l->pol->cg[i].path, path, LEDGER_CGROUP_MAX))
			e = i;
	for (i = 0; i < (int)slots_used(l); i++) {
		const struct slot *s = &l->use->slots[i];

		if (!slot_live(s))
			continue;
		copy_str(cg, s->cgroup, sizeof(cg));
		if (!ledger_cg_covers(path, cg))
			continue;
		st->nprocs++;
		if (e < 0)
			slot_usage_into(s, st->usage);
	}
	if (e >= 0) {
		for (k = 0; k < LEDGER_NKINDS; k++) {
			st->limit[k] = ALOADR(&l->pol->cg[e].limit[k]);
			st->refused[k] = ALOADR(&l->use->cg_refused[e][k]);
		}
		slots_usage(l, st, in_cgroup, path);
		clamp_to_totals(st, l->use->cg_total[e]);
	}
	*found = e >= 0 || st->nprocs;
}

static void fill_job_scope(struct ledger *l, int j, struct ledger_scope_stat *st)
{
	const struct job *jb = &l->use->jobs[j];
	int i, k;

	stat_init(st, LEDGER_SCOPE_JOB);
	copy_str(st->scope.name, jb->name, LEDGER_NAME_MAX);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		st->limit[k] = ALOADR(&jb->limit[k]);
		st->refused[k] = ALOADR(&jb->refused[k]);
	}
	slots_usage(l, st, in_job, &j);
	clamp_to_totals(st, jb->total);
	for (i = 0; i < (int)slots_used(l); i++)
		if (ledger_slot_job(&l->use->slots[i]) == j && slot_live(&l->use->slots[i]))
			st->nprocs++;
}

static void fill_global_scope(struct ledger *l, struct ledger_scope_stat *st)
{
	int i, k;

	stat_init(st, LEDGER_SCOPE_GLOBAL);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		st->limit[k] = ALOADR(&l->pol->global_limit[k]);
		st->refused[k] = ALOADR(&l->use->global_refused[k]);
	}
	slots_usage(l, st, in_global, NULL);
	clamp_to_totals(st, l->use->global_total);
	for (i = 0; i < (int)slots_used(l); i++)
		if (slot_live(&l->use->slots[i]))
			st->nprocs++;
}

int ledger_get_scope(struct ledger *l, const struct ledger_scope *sc, struct ledger_scope_stat *out)
{
	char path[LEDGER_CGROUP_MAX];
	uint64_t start = sc->start_time;
	bool found;
	int j;

	switch (sc->type) {
	case LEDGER_SCOPE_GLOBAL:
		fill_global_scope(l, out);
		return 0;
	case LEDGER_SCOPE_JOB:
		j = ledger_find_job(l->use, sc->name);
		if (j < 0)
			return -ENOENT;
		fill_job_scope(l, j, out);
		return 0;
	case LEDGER_SCOPE_CGROUP:
		if (ledger_cgroup_normalize(sc->name, path, sizeof(path)))
			return -EINVAL;
		fill_cgroup_scope(l, path, out, &found);
		return found ? 0 : -ENOENT;
	case LEDGER_SCOPE_PROCESS:
		if (!start && ledger_pid_start_time(sc->pid, &start))
			return -ESRCH;
		fill_pid_scope(l, sc->pid, start, out);
		return 0;
	}
	return -EINVAL;
}

int ledger_foreach_scope(struct ledger *l, int (*cb)(const struct ledger_scope_stat *st, void *arg), void *arg)
{
	struct ledger_scope_stat st;
	int i, j, ret;
	bool found;

	fill_global_scope(l, &st);
	ret = cb(&st, arg);
	if (ret)
		return ret;
	for (i = 0; i < LEDGER_MAX_CGROUPS; i++) {
		char path[LEDGER_CGROUP_MAX];

		if (ALOAD(&l->pol->cg[i].state) != ENT_LIVE)
			continue;
		copy_str(path, l->pol->cg[i].path, sizeof(path));
		fill_cgroup_scope(l, path, &st, &found);
		ret = cb(&st, arg);
		if (ret)
			return ret;
	}
	for (j = 0; j < LEDGER_MAX_JOBS; j++) {
		if (ALOAD(&l->use->jobs[j].state) != ENT_LIVE)
			continue;
		fill_job_scope(l, j, &st);
		ret = cb(&st, arg);
		if (ret)
			return ret;
	}
	/* processes: each live (pid, start) once, whether it has a limit, a slot, or both */
	for (i = 0; i < LEDGER_MAX_PIDLIMITS + (int)slots_used(l); i++) {
		pid_t pid;
		uint64_t start;
		int d;

		if (i < LEDGER_MAX_PIDLIMITS) {
			const struct pol_pid *pp = &l->pol->pid[i];

			if (ALOAD(&pp->state) != ENT_LIVE)
				continue;
			pid = pp->pid;
			start = pp->start;
		} else {
			const struct slot *s = &l->use->slots[i - LEDGER_MAX_PIDLIMITS];

			if (ALOAD(&s->state) != ENT_LIVE)
				continue;
			pid = s->pid;
			start = s->start;
		}
		if (!ledger_pid_alive(pid, start))
			continue;
		/* seen before? */
		for (d = 0; d < i; d++) {
			if (d < LEDGER_MAX_PIDLIMITS) {
				const struct pol_pid *pp = &l->pol->pid[d];

				if (ALOAD(&pp->state) == ENT_LIVE && pp->pid == pid && pp->start == start)
					break;
			} else {
				const struct slot *s = &l->use->slots[d - LEDGER_MAX_PIDLIMITS];

				if (ALOAD(&s->state) == ENT_LIVE && s->pid == pid && s->start == start)
					break;
			}
		}
		if (d < i)
			continue;
		fill_pid_scope(l, pid, start, &st);
		ret = cb(&st, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int ledger_foreach_proc(struct ledger *l, int (*cb)(const struct ledger_proc_stat *st, void *arg), void *arg)
{
	struct ledger_proc_stat ps;
	int i, k, ret;

	for (i = 0; i < (int)slots_used(l); i++) {
		const struct slot *s = &l->use->slots[i];
		struct ledger_scope_stat sc;
		int j;

		if (!slot_live(s))
			continue;
		memset(&ps, 0, sizeof(ps));
		ps.pid = s->pid;
		ps.start_time = s->start;
		j = ledger_slot_job(s);
		if (j >= 0)
			copy_str(ps.job, l->use->jobs[j].name, sizeof(ps.job));
		copy_str(ps.cgroup, s->cgroup, sizeof(ps.cgroup));
		for (k = 0; k < LEDGER_NKINDS; k++)
			ps.usage[k] = k == LEDGER_WR ? 0 : slot_in_use(s, k);
		fill_pid_scope(l, s->pid, s->start, &sc);
		memcpy(ps.limit, sc.limit, sizeof(ps.limit));
		ret = cb(&ps, arg);
		if (ret)
			return ret;
	}
	return 0;
}

unsigned int ledger_capacity(const struct ledger *l, unsigned int *in_use)
{
	unsigned int i, n = 0;

	if (in_use) {
		for (i = 0; i < slots_used(l); i++)
			n += ALOAD(&l->use->slots[i].state) != ENT_FREE;
		*in_use = n;
	}
	return l->nprocs;
}

int ledger_denial_counts(struct ledger *l, uint64_t *total, uint64_t per_kind[LEDGER_NKINDS])
{
	int k;

	if (total)
		*total = ALOADR(&l->use->denial_total);
	if (per_kind)
		for (k = 0; k < LEDGER_NKINDS; k++)
			per_kind[k] = ALOADR(&l->use->denial_kind[k]);
	return 0;
}

int ledger_foreach_denial(struct ledger *l, uint64_t *since,
			  int (*cb)(const struct ledger_denial_event *ev, void *arg), void *arg)
{
	uint64_t last = ALOAD(&l->use->denial_seq), seq;
	int ret;

	seq = *since + 1;
	if (last >= LEDGER_DENIAL_RING && seq < last - LEDGER_DENIAL_RING + 1)
		seq = last - LEDGER_DENIAL_RING + 1;
	for (; seq <= last; seq++) {
		const struct ring_ent *e = &l->use->ring[seq % LEDGER_DENIAL_RING];
		struct ledger_denial_event ev;

		if (ALOAD(&e->seq) != seq)
			continue;
		memcpy(&ev, (const void *)&e->ev, sizeof(ev));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (ALOAD(&e->seq) != seq || ev.seq != seq)
			continue;
		ev.d.job[sizeof(ev.d.job) - 1] = '\0';
		ev.d.scope.name[sizeof(ev.d.scope.name) - 1] = '\0';
		*since = seq;
		ret = cb(&ev, arg);
		if (ret)
			return ret;
	}
	*since = last > *since ? last : *since;
	return 0;
}
