// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger: a process takes a slot (attach), a forked child its own, and gives it back (detach). */
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

/* ---- attach ------------------------------------------------------------------------------------- */

int ledger_find_job(const struct usage *u, const char *name)
{
	int i;

	for (i = 0; i < LEDGER_MAX_JOBS; i++)
		if (ALOAD(&u->jobs[i].state) == ENT_LIVE && !strncmp(u->jobs[i].name, name, LEDGER_NAME_MAX))
			return i;
	return -1;
}

/* The first free slot, claimed for owner; scans see it from now on (slot_hw). -1 when all are taken. */
static int claim_slot(struct ledger *l, uint64_t owner)
{
	int i;

	for (i = 0; i < (int)l->nprocs; i++) {
		struct slot *s = &l->use->slots[i];
		uint64_t cur = 0;
		uint32_t hw;

		if (ALOADR(&s->owner) == 0 && ACAS(&s->owner, &cur, owner)) {
			hw = ALOAD(&l->use->slot_hw);
			while (hw < (uint32_t)i + 1 && !ACAS(&l->use->slot_hw, &hw, (uint32_t)i + 1))
				;
			return i;
		}
	}
	return -1;
}

/*
 * Slots already owned by this pid and start time were left by the image this process exec()ed away from (an
 * image attaches once): libibverbs opens the uverbs device O_CLOEXEC, so the exec closed it and the kernel
 * destroyed everything that image held. Give their usage back to the job, cgroup and global totals like a
 * dead holder's and free them. Only this process can tell: to the gc the owner is alive. A slot left in the
 * middle of an operation (another thread killed by the exec) takes a recount, as in the gc.
 */
void ledger_take_over_stale(struct ledger *l, uint64_t owner)
{
	struct usage *u = l->use;
	bool locked = false, need = false;
	int i;

	for (i = 0; i < (int)slots_used(l); i++) {
		struct slot *s = &u->slots[i];
		uint64_t cur = owner;
		uint32_t st;

		if (ALOADR(&s->owner) != owner)
			continue;
		if (!locked) {
			if (ledger_gc_lock(l, 3000))
				return; /* a busy gc: the slot stays until this process exits */
			locked = true;
		}
		st = ALOAD(&s->state);
		if (st == ENT_LIVE) {
			if (!ACAS(&s->state, &st, ENT_RECLAIMING))
				continue;
			if (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST))
				need = true;
			else
				ledger_reclaim_slot(l, s);
		} else if (st == ENT_RECLAIMING) {
			need = true; /* left by a gc that died: we hold the lock */
		} else if (ACAS(&s->owner, &cur, 0)) {
			ASTORE(&s->state, ENT_FREE); /* the old image died in its attach */
		}
	}
	if (need)
		ledger_recount(l);
	if (locked)
		ledger_gc_unlock(l);
}

static int do_attach(struct ledger *l, const char *job)
{
	struct usage *u = l->use;
	struct slot *s;
	uint64_t start, owner;
	int i, j = -1, k, err;

	if (!l->usage_rw)
		return ledger_seterr(-EACCES, "%s%s: permission denied", l->path, USAGE_SUFFIX);
	if (!job)
		job = getenv(LEDGER_ENV_JOB);
	if (!job)
		job = "";
	if (strlen(job) >= LEDGER_NAME_MAX)
		return ledger_seterr(-EINVAL, "job name too long");
	if (*job) {
		j = ledger_find_job(u, job);
		if (j < 0)
			return ledger_seterr(-ENOENT, "no job '%s' in the ledger", job);
	}
	owner = ledger_self_owner(&start);
	ledger_take_over_stale(l, owner);
	i = claim_slot(l, owner);
	if (i < 0) {
		err = ledger_gc(l, NULL);
		if (err && err != -EBUSY)
			return err;
		i = claim_slot(l, owner);
		if (i < 0)
			return ledger_seterr(-ENOSPC, "all %u process slots of the ledger are taken (a larger one: rdmactl quota init --procs N)",
				      l->nprocs);
	}
	s = &u->slots[i];
	ASTORE(&s->state, ENT_CLAIMING);
	s->pid = getpid();
	s->start = start;
	s->inflight = 0;
	__atomic_store_n(&s->vseq, 0, __ATOMIC_SEQ_CST);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		ASTORE(&s->usage[k], 0);
		ASTORE(&s->grant[k], 0);
		ASTORE(&s->trim_below[k], 0);
		ASTORE(&s->refused[k], 0);
	}
	ledger_self_cgroup(l->cgroup, sizeof(l->cgroup));
	copy_str(s->cgroup, l->cgroup, sizeof(s->cgroup));
	ASTORE(&s->job, j);
	/* live only now: a recount never sees a half-written slot */
	__atomic_store_n(&s->state, ENT_LIVE, __ATOMIC_SEQ_CST);
	l->slot = i;
	l->pid = getpid();
	l->start = start;
	l->job = j;
	copy_str(l->jobname, job, sizeof(l->jobname));
	/* the plan points at this slot from the first operation on, whatever the generation says */
	ledger_refresh_view(l);
	return 0;
}

int ledger_attach(struct ledger *l, const char *job)
{
	if (l->slot >= 0)
		return -EALREADY;
	return do_attach(l, job);
}

int ledger_attach_child(struct ledger *l)
{
	char job[LEDGER_NAME_MAX];

	copy_str(job, l->jobname, sizeof(job));
	l->slot = -1;
	__atomic_store_n(&l->fast_slot, NULL, __ATOMIC_RELAXED); /* the parent's slot is not ours */
	pthread_mutex_init(&l->mtx, NULL);
	return do_attach(l, job);
}

void ledger_open_mark(struct ledger *l)
{
	struct slot *s = __atomic_load_n(&l->fast_slot, __ATOMIC_RELAXED);

	/* fast_slot: this process's slot since its plan was built (NULL before, and once detached) */
	if (__builtin_expect(!s, 0))
		s = l->slot >= 0 ? &l->use->slots[l->slot] : NULL;
	if (s)
		AADD(&s->vseq, 1);
}

bool ledger_limits_apply(struct ledger *l, const char *job)
{
	int idx[MAX_CG_PER_PROC], i, k;
	char cg[LEDGER_CGROUP_MAX];
	uint64_t start = 0;

	if (!job)
		job = getenv(LEDGER_ENV_JOB);
	if (job && *job)
		return true;
	ledger_self_cgroup(cg, sizeof(cg));
	if (ledger_cg_matches(l->pol, cg, idx, MAX_CG_PER_PROC) > 0)
		return true;
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (ALOADR(&l->pol->global_limit[k]) != LEDGER_UNLIMITED)
			return true;
	ledger_pid_start_time(getpid(), &start);
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++)
		if (ALOAD(&l->pol->pid[i].state) == ENT_LIVE && l->pol->pid[i].pid == getpid() &&
		    l->pol->pid[i].start == start)
			return true;
	return false;
}

bool ledger_attached(const struct ledger *l)
{
	return l->slot >= 0;
}

int ledger_detach(struct ledger *l)
{
	struct slot *s;
	int k, err = 0;

	if (l->slot < 0)
		return -ENOTCONN;
	s = &l->use->slots[l->slot];
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t v = ALOADR(&s->usage[k]);

		if (v && k != LEDGER_WR) {
			int r = ledger_release(l, k, v);

			if (r)
				err = r;
		}
	}
	ledger_grants_return(l);
	s->job = -1;
	ASTORE(&s->state, ENT_FREE);
	ASTORE(&s->owner, 0);
	l->slot = -1;
	__atomic_store_n(&l->fast_slot, NULL, __ATOMIC_RELAXED);
	return err;
}
