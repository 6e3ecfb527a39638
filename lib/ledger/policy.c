// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger's policy: limits per pid, cgroup and globally; the jobs of rdmactl run. */
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

/* ---- policy ------------------------------------------------------------------------------------- */

/* A limit published while operations are frozen, the gc lock held: every total recounted, operations let go. */
static int recount_unfreeze(struct ledger *l)
{
	int err;

	ledger_limits_changed(l);
	err = ledger_gc_locked(l, true, NULL, NULL);
	ledger_gc_unlock(l);
	if (err)
		return ledger_seterr(err, "limit set, but the usage recount did not finish (will retry on next gc)");
	return 0;
}

/*
 * Set a limit of a job, a cgroup entry or the global scope. Their totals of a kind are kept only while they
 * limit that kind (lib/ledger/ledger.h, "Totals"), and processes hold allowances under them ("Grants"): a limit
 * (or a cap) set or changed is published while operations are frozen, every allowance is taken back and
 * every total recounted from the slots before anyone charges against it (invariant 1: the total is exact
 * from the first operation that sees the limit). A limit removed only needs the generation moved.
 */
static int set_scope_limit(struct ledger *l, uint64_t *lim, enum ledger_kind kind, uint64_t value)
{
	int err;

	(void)kind;
	if (value == LEDGER_UNLIMITED || ALOAD(lim) == value) {
		ASTORE(lim, value);
		ledger_limits_changed(l);
		return 0;
	}
	err = ledger_gc_lock(l, 3000);
	if (err)
		return ledger_seterr(err, "ledger busy (gc lock held)");
	__atomic_store_n(&l->use->frozen, 1, __ATOMIC_SEQ_CST);
	ASTORE(lim, value);
	return recount_unfreeze(l);
}

static int set_cgroup_limit(struct ledger *l, const char *path, enum ledger_kind kind, uint64_t value)
{
	struct policy *pol = l->pol;
	int i, k, fr = -1, err;

	for (i = 0; i < LEDGER_MAX_CGROUPS; i++) {
		if (ALOAD(&pol->cg[i].state) != ENT_LIVE) {
			if (fr < 0)
				fr = i;
			continue;
		}
		if (strncmp(pol->cg[i].path, path, LEDGER_CGROUP_MAX))
			continue;
		err = set_scope_limit(l, &pol->cg[i].limit[kind], kind, value);
		if (err)
			return err;
		for (k = 0; k < LEDGER_NKINDS; k++)
			if (ALOAD(&pol->cg[i].limit[k]) != LEDGER_UNLIMITED)
				break;
		/* no limit left: drop the entry (its total is no longer kept) */
		if (k == LEDGER_NKINDS)
			ASTORE(&pol->cg[i].state, ENT_FREE);
		ledger_limits_changed(l);
		return 0;
	}
	if (value == LEDGER_UNLIMITED)
		return 0;
	if (fr < 0)
		return ledger_seterr(-ENOSPC, "no free cgroup entry in the ledger (%d in use)", LEDGER_MAX_CGROUPS);
	/*
	 * A new entry must start from the exact usage of the processes already in that cgroup: publish it
	 * while operations are frozen and recount before anyone charges it.
	 */
	err = ledger_gc_lock(l, 3000);
	if (err)
		return ledger_seterr(err, "ledger busy (gc lock held)");
	for (k = 0; k < LEDGER_NKINDS; k++) {
		pol->cg[fr].limit[k] = LEDGER_UNLIMITED;
		ASTORE(&l->use->cg_refused[fr][k], 0); /* a new entry's refusals start from zero */
	}
	pol->cg[fr].limit[kind] = value;
	copy_str(pol->cg[fr].path, path, sizeof(pol->cg[fr].path));
	__atomic_store_n(&l->use->frozen, 1, __ATOMIC_SEQ_CST);
	ASTORE(&pol->cg[fr].state, ENT_LIVE);
	return recount_unfreeze(l);
}

/*
 * A pid limit set (gc lock held): the process's grant may hold an allowance above it. Take every allowance
 * back (a recount); the process's next operation beyond its grant sees the limit.
 */
static int take_back_allowances(struct ledger *l)
{
	int err = ledger_recount(l);

	if (err)
		return ledger_seterr(err, "limit set, but the usage recount did not finish (will retry on next gc)");
	return 0;
}

static int set_pid_limit(struct ledger *l, const struct ledger_scope *sc, enum ledger_kind kind, uint64_t value)
{
	struct policy *pol = l->pol;
	uint64_t start = sc->start_time;
	int i, k, fr = -1, err;

	if (!start) {
		err = ledger_pid_start_time(sc->pid, &start);
		if (err)
			return ledger_seterr(-ESRCH, "no process %d", (int)sc->pid);
	}
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++) {
		struct pol_pid *pp = &pol->pid[i];

		if (ALOAD(&pp->state) != ENT_LIVE) {
			if (fr < 0)
				fr = i;
			continue;
		}
		if (pp->pid != sc->pid || pp->start != start)
			continue;
		ASTORE(&pp->limit[kind], value);
		for (k = 0; k < LEDGER_NKINDS; k++)
			if (ALOAD(&pp->limit[k]) != LEDGER_UNLIMITED)
				break;
		if (k == LEDGER_NKINDS)
			ASTORE(&pp->state, ENT_FREE);
		ledger_limits_changed(l);
		return value == LEDGER_UNLIMITED ? 0 : take_back_allowances(l);
	}
	if (value == LEDGER_UNLIMITED)
		return 0;
	if (fr < 0) {
		/* maybe stale entries of dead processes */
		ledger_gc_locked(l, false, NULL, NULL);
		for (i = 0; i < LEDGER_MAX_PIDLIMITS && fr < 0; i++)
			if (ALOAD(&pol->pid[i].state) != ENT_LIVE)
				fr = i;
		if (fr < 0)
			return ledger_seterr(-ENOSPC, "no free pid-limit entry in the ledger (%d in use)",
				      LEDGER_MAX_PIDLIMITS);
	}
	for (k = 0; k < LEDGER_NKINDS; k++)
		pol->pid[fr].limit[k] = LEDGER_UNLIMITED;
	pol->pid[fr].limit[kind] = value;
	pol->pid[fr].pid = sc->pid;
	pol->pid[fr].start = start;
	ASTORE(&pol->pid[fr].state, ENT_LIVE);
	ledger_limits_changed(l);
	return take_back_allowances(l);
}

int ledger_set_limit(struct ledger *l, const struct ledger_scope *sc, enum ledger_kind kind, uint64_t value)
{
	char path[LEDGER_CGROUP_MAX];
	int j, err;

	ledger_errbuf[0] = '\0';
	if ((unsigned int)kind >= LEDGER_NKINDS)
		return ledger_seterr(-EINVAL, "unknown resource kind");
	/* every change bumps the usage file's generation (ledger_limits_changed()) */
	if (!l->usage_rw)
		return ledger_seterr(-EACCES, "%s%s: permission denied", l->path, USAGE_SUFFIX);
	if (sc->type == LEDGER_SCOPE_JOB) {
		j = ledger_find_job(l->use, sc->name);
		if (j < 0)
			return ledger_seterr(-ENOENT, "no job '%.*s' in the ledger", LEDGER_NAME_MAX, sc->name);
		/* a user limits its own jobs only (the usage file is everybody's: this is the cooperative rule) */
		if (geteuid() && l->use->jobs[j].owner_uid != geteuid())
			return ledger_seterr(-EPERM, "job %.*s belongs to uid %u: only that user and root change its limits",
					     LEDGER_NAME_MAX, sc->name, (unsigned int)l->use->jobs[j].owner_uid);
		return set_scope_limit(l, &l->use->jobs[j].limit[kind], kind, value);
	}
	if (!l->policy_rw)
		return ledger_seterr(-EACCES, "%s: permission denied (limits are changed by the ledger's owner)", l->path);
	switch (sc->type) {
	case LEDGER_SCOPE_GLOBAL:
		return set_scope_limit(l, &l->pol->global_limit[kind], kind, value);
	case LEDGER_SCOPE_CGROUP:
		err = ledger_cgroup_normalize(sc->name, path, sizeof(path));
		if (err || !strcmp(path, "/"))
			return ledger_seterr(-EINVAL, "invalid cgroup path '%.*s'", LEDGER_CGROUP_MAX, sc->name);
		return set_cgroup_limit(l, path, kind, value);
	case LEDGER_SCOPE_PROCESS:
		if (sc->pid <= 0)
			return ledger_seterr(-ESRCH, "no process %d", (int)sc->pid);
		err = ledger_gc_lock(l, 3000);
		if (err)
			return ledger_seterr(err, "ledger busy (gc lock held)");
		err = set_pid_limit(l, sc, kind, value);
		ledger_gc_unlock(l);
		return err;
	default:
		return ledger_seterr(-EINVAL, "unknown scope");
	}
}

/* ---- jobs --------------------------------------------------------------------------------------- */

int ledger_job_create(struct ledger *l, const char *name, const uint64_t limit[LEDGER_NKINDS])
{
	struct usage *u = l->use;
	uint64_t start;
	int i, k, err;

	ledger_errbuf[0] = '\0';
	if (!name || !*name || strlen(name) >= LEDGER_NAME_MAX)
		return ledger_seterr(-EINVAL, "invalid job name");
	if (!l->usage_rw)
		return ledger_seterr(-EACCES, "%s%s: permission denied", l->path, USAGE_SUFFIX);
	err = ledger_gc_lock(l, 3000);
	if (err)
		return ledger_seterr(err, "ledger busy (gc lock held)");
	ledger_gc_locked(l, false, NULL, NULL);
	if (ledger_find_job(u, name) >= 0) {
		ledger_gc_unlock(l);
		return ledger_seterr(-EEXIST, "a job named '%s' is running", name);
	}
	for (i = 0; i < LEDGER_MAX_JOBS; i++)
		if (ALOAD(&u->jobs[i].state) == ENT_FREE)
			break;
	if (i == LEDGER_MAX_JOBS) {
		ledger_gc_unlock(l);
		return ledger_seterr(-ENOSPC, "no free job entry in the ledger (%d in use)", LEDGER_MAX_JOBS);
	}
	ledger_self_owner(&start);
	memset(u->jobs[i].name, 0, sizeof(u->jobs[i].name));
	copy_str(u->jobs[i].name, name, sizeof(u->jobs[i].name));
	for (k = 0; k < LEDGER_NKINDS; k++) {
		ASTORE(&u->jobs[i].limit[k], limit ? limit[k] : LEDGER_UNLIMITED);
		ASTORE(&u->jobs[i].total[k], 0);
		ASTORE(&u->jobs[i].refused[k], 0);
	}
	u->jobs[i].owner_pid = getpid();
	u->jobs[i].owner_uid = geteuid();
	u->jobs[i].owner_start = start;
	ASTORE(&u->jobs[i].owner_active, 1);
	ASTORE(&u->jobs[i].state, ENT_LIVE);
	ledger_gc_unlock(l);
	return 0;
}

int ledger_job_release(struct ledger *l, const char *name)
{
	int j, err;

	if (!l->usage_rw)
		return -EACCES;
	j = ledger_find_job(l->use, name);
	if (j < 0)
		return -ENOENT;
	ASTORE(&l->use->jobs[j].owner_active, 0);
	err = ledger_gc_lock(l, 1000);
	if (err)
		return 0; /* the next gc frees it */
	ledger_gc_locked(l, false, NULL, NULL);
	ledger_gc_unlock(l);
	return 0;
}
