// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger's reclaimer: the gc lock, freeze and recount, giving back what dead processes held. */
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

/* ---- gc lock, freeze, recount ------------------------------------------------------------------- */

/*
 * This process's start time, read from /proc once per process (a fork's child reads its own): ledger_gc_lock()
 * asks for it at every try, and a read of /proc under the lab's TCG costs what hundreds of tries cost.
 */
static pid_t owner_pid;
static uint64_t owner_start;

uint64_t ledger_self_owner(uint64_t *start)
{
	pid_t pid = getpid();
	uint64_t st = 0;

	if (__atomic_load_n(&owner_pid, __ATOMIC_ACQUIRE) == pid) {
		st = __atomic_load_n(&owner_start, __ATOMIC_RELAXED);
	} else if (!ledger_pid_start_time(pid, &st)) {
		__atomic_store_n(&owner_start, st, __ATOMIC_RELAXED);
		__atomic_store_n(&owner_pid, pid, __ATOMIC_RELEASE);
	}
	if (start)
		*start = st;
	return ledger_pack_owner(pid, st);
}

/* Take the gc lock; steal it from a dead holder. Waits up to wait_ms; -EBUSY otherwise. */
int ledger_gc_lock(struct ledger *l, int wait_ms)
{
	uint64_t me = ledger_self_owner(NULL), cur;
	uint64_t deadline = clock_mono_ns() + (uint64_t)wait_ms * 1000000ull;

	for (;;) {
		cur = 0;
		if (ACAS(&l->use->gc_owner, &cur, me))
			return 0;
		if (cur != me && !ledger_owner_alive(cur) && ACAS(&l->use->gc_owner, &cur, me))
			return 0;
		if (clock_mono_ns() >= deadline)
			return -EBUSY;
		usleep(1000);
	}
}

void ledger_gc_unlock(struct ledger *l)
{
	ASTORE(&l->use->gc_owner, 0);
}

/*
 * After any change of a limit or of the cgroup and pid tables (the writer has the usage file mapped
 * writable): the next operation of every process refreshes the limits it caches.
 */
void ledger_limits_changed(struct ledger *l)
{
	AADD(&l->use->gen, 1);
}

/* Which cgroup entries cover cgroup path cg; returns how many (up to max). */
int ledger_cg_matches(const struct policy *pol, const char *cg, int *idx, int max)
{
	char path[LEDGER_CGROUP_MAX];
	int i, n = 0;

	for (i = 0; i < LEDGER_MAX_CGROUPS && n < max; i++) {
		if (ALOAD(&pol->cg[i].state) != ENT_LIVE)
			continue;
		copy_str(path, pol->cg[i].path, sizeof(path));
		if (ledger_cg_covers(path, cg))
			idx[n++] = i;
	}
	return n;
}

int ledger_slot_job(const struct slot *s)
{
	int j = ALOADR(&s->job);

	return j >= 0 && j < LEDGER_MAX_JOBS ? j : -1;
}

void ledger_slot_scopes(struct ledger *l, const struct slot *s, struct slot_scopes *sc)
{
	char cg[LEDGER_CGROUP_MAX];

	copy_str(cg, s->cgroup, sizeof(cg));
	sc->ncg = ledger_cg_matches(l->pol, cg, sc->cg, MAX_CG_PER_PROC);
	sc->job = ledger_slot_job(s);
}

/* Take n of kind k off the global total and every scope in sc (the slot's own count is the caller's). */
void ledger_scopes_sub(struct usage *u, const struct slot_scopes *sc, int k, uint64_t n)
{
	int c;

	sub_clamp(&u->global_total[k], n);
	if (sc->job >= 0)
		sub_clamp(&u->jobs[sc->job].total[k], n);
	for (c = 0; c < sc->ncg; c++)
		sub_clamp(&u->cg_total[sc->cg[c]][k], n);
}

/*
 * A live slot's allowances taken back while operations are frozen: each grant lowered to the usage, never
 * raised. Only the slot's fast operations run (they move usage, never the grant): a create that read the
 * grant before it went to 0 is in the usage read after, so the new grant covers it; one that failed and is
 * about to take its add back may be in it too (an allowance of one left, carried by the totals).
 */
static void revoke_slot(struct slot *s)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t g, u;

		if (k == LEDGER_WR)
			continue;
		g = __atomic_exchange_n(&s->grant[k], 0, __ATOMIC_SEQ_CST);
		u = __atomic_load_n(&s->usage[k], __ATOMIC_SEQ_CST);
		__atomic_store_n(&s->grant[k], u < g ? u : g, __ATOMIC_SEQ_CST);
		ASTORE(&s->trim_below[k], u < g ? u : g);
	}
}

/*
 * Freeze operations, wait until no live slot has one in flight (slots that turn out dead are marked
 * RECLAIMING), take back every allowance, then set every total to the sum of live slot grants. Caller holds
 * the gc lock.
 */
int ledger_recount(struct ledger *l)
{
	struct usage *u = l->use;
	uint64_t sums_cg[LEDGER_MAX_CGROUPS][LEDGER_NKINDS];
	uint64_t sums_g[LEDGER_NKINDS] = { 0 }, sums_j[LEDGER_MAX_JOBS][LEDGER_NKINDS];
	struct slot_scopes sc;
	uint64_t deadline;
	int i, j, k;

	memset(sums_j, 0, sizeof(sums_j));
	memset(sums_cg, 0, sizeof(sums_cg));
	ASTORE(&u->need_recount, 1);
	__atomic_store_n(&u->frozen, 1, __ATOMIC_SEQ_CST);
	deadline = clock_mono_ns() + 2000000000ull;
	for (i = 0; i < (int)slots_used(l); i++) {
		struct slot *s = &u->slots[i];
		unsigned int spins = 0;

		while (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST) && ALOAD(&s->state) == ENT_LIVE) {
			if (++spins % 64 == 0 && !ledger_pid_alive(s->pid, s->start)) {
				uint32_t st = ENT_LIVE;

				ACAS(&s->state, &st, ENT_RECLAIMING);
				break;
			}
			if (clock_mono_ns() > deadline) {
				__atomic_store_n(&u->frozen, 0, __ATOMIC_SEQ_CST);
				return -EBUSY;
			}
			sched_yield();
		}
	}
	for (i = 0; i < (int)slots_used(l); i++) {
		struct slot *s = &u->slots[i];
		uint32_t st = ALOAD(&s->state);

		if (st == ENT_RECLAIMING) {
			memset((void *)s->usage, 0, sizeof(s->usage));
			memset((void *)s->grant, 0, sizeof(s->grant));
			memset((void *)s->trim_below, 0, sizeof(s->trim_below));
			s->job = -1;
			s->inflight = 0;
			ASTORE(&s->state, ENT_FREE);
			ASTORE(&s->owner, 0);
			continue;
		}
		if (st != ENT_LIVE)
			continue;
		revoke_slot(s);
		ledger_slot_scopes(l, s, &sc);
		for (k = 0; k < LEDGER_NKINDS; k++) {
			uint64_t v = k == LEDGER_WR ? 0 : ALOADR(&s->grant[k]);

			sums_g[k] += v;
			if (sc.job >= 0)
				sums_j[sc.job][k] += v;
			for (int c = 0; c < sc.ncg; c++)
				sums_cg[sc.cg[c]][k] += v;
		}
	}
	for (k = 0; k < LEDGER_NKINDS; k++) {
		ASTORE(&u->global_total[k], sums_g[k]);
		for (j = 0; j < LEDGER_MAX_JOBS; j++)
			ASTORE(&u->jobs[j].total[k], sums_j[j][k]);
		for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
			ASTORE(&u->cg_total[i][k], sums_cg[i][k]);
	}
	ASTORE(&u->need_recount, 0);
	__atomic_store_n(&u->frozen, 0, __ATOMIC_SEQ_CST);
	return 0;
}

/* Give a dead slot's grants back to its scopes and free it. Caller holds the gc lock; slot is RECLAIMING. */
void ledger_reclaim_slot(struct ledger *l, struct slot *s)
{
	struct slot_scopes sc;
	int k;

	ledger_slot_scopes(l, s, &sc);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t v = ALOADR(&s->grant[k]);

		if (v && v != GRANT_UNLIMITED && k != LEDGER_WR)
			ledger_scopes_sub(l->use, &sc, k, v);
		ASTORE(&s->grant[k], 0);
		ASTORE(&s->usage[k], 0);
	}
	s->job = -1;
	ASTORE(&s->state, ENT_FREE);
	ASTORE(&s->owner, 0);
}

/* Is a file of this path a uverbs device (/dev/infiniband/uverbsN, by its name wherever it is mounted)? */
static bool uverbs_path(const char *p)
{
	const char *base = strrchr(p, '/');

	return base && !strncmp(base + 1, "uverbs", 6);
}

/*
 * Does process pid map a uverbs device? A context closed with objects still in it leaves them in the kernel
 * while their queues stay mapped (rxe maps every QP, CQ and SRQ queue): the mapping keeps the device file,
 * and with it every object of that context, until it goes (at exit). 1 yes, 0 no, -1 cannot tell.
 */
static int maps_uverbs(pid_t pid)
{
	char path[64], line[PATH_MAX + 128];
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		line[strcspn(line, "\n")] = '\0';
		if (p && uverbs_path(p)) {
			ret = 1;
			break;
		}
	}
	if (ferror(f))
		ret = -1;
	fclose(f);
	return ret;
}

/*
 * Does process pid hold a uverbs device, open or mapped? 1 yes, 0 no, -1 when /proc cannot tell (another
 * user's process, hidepid): treated as yes.
 */
static int holds_uverbs(pid_t pid)
{
	char path[64], link[PATH_MAX];
	struct dirent *de;
	int ret = 0;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n < 0) {
			if (errno == ENOENT)
				continue; /* closed meanwhile */
			ret = -1;
			break;
		}
		link[n] = '\0';
		if (uverbs_path(link)) {
			ret = 1;
			break;
		}
	}
	closedir(d);
	return ret ? ret : maps_uverbs(pid);
}

/*
 * A live process whose interceptor slot holds usage while the process holds no uverbs device: the image
 * that charged it exec()ed away (libibverbs opens the device O_CLOEXEC, so the kernel destroyed its objects)
 * and the new image has not attached, perhaps never will (it need not use verbs; ledger_take_over_stale() only runs
 * when it does). Give the usage back to every scope and leave the slot to the process: its next image takes
 * it over, or the gc frees it at exit.
 * The image attached to a slot cannot hold usage without a device open or mapped: it charges only through a
 * context, a context is the open device, and what a closed context leaves behind stays charged while the
 * kernel keeps it, which is while the device stays mapped (holds_uverbs() looks at both). The exceptions are bracketed: opening (vseq odd, or changed while we
 * looked) and closing (the process's own release then finds less in its slot and changes nothing; what
 * leaves the slot leaves the totals, on either side). Caller holds the gc lock (no takeover, no recount).
 * Returns 1 if something was given back.
 */
static int take_back_execd(struct ledger *l, struct slot *s)
{
	uint64_t snap[LEDGER_NKINDS], any = 0;
	uint32_t v = __atomic_load_n(&s->vseq, __ATOMIC_SEQ_CST);
	struct slot_scopes sc;
	int k;

	if (!v || v & 1)
		return 0;
	for (k = 0; k < LEDGER_NKINDS; k++) {
		snap[k] = k == LEDGER_WR ? 0 : __atomic_load_n(&s->usage[k], __ATOMIC_SEQ_CST);
		any |= snap[k];
	}
	if (!any || holds_uverbs(s->pid) != 0)
		return 0;
	/* still the same process, and no open began or ended while we looked */
	if (!ledger_pid_alive(s->pid, s->start) || __atomic_load_n(&s->vseq, __ATOMIC_SEQ_CST) != v ||
	    ALOAD(&s->state) != ENT_LIVE)
		return 0;
	ledger_slot_scopes(l, s, &sc);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t cur = snap[k] ? ALOADR(&s->usage[k]) : 0, take, g, left;

		do {
			take = cur < snap[k] ? cur : snap[k];
		} while (take && !ACAS(&s->usage[k], &cur, cur - take));
		if (!take)
			continue;
		/* and the grant down to what is left in use: the totals carry grants */
		g = ALOADR(&s->grant[k]);
		do {
			left = ALOAD(&s->usage[k]);
			if (g == GRANT_UNLIMITED || g <= left)
				break;
		} while (!ACAS(&s->grant[k], &g, left));
		if (g != GRANT_UNLIMITED && g > left)
			ledger_scopes_sub(l->use, &sc, k, g - left);
	}
	return 1;
}

static bool job_in_use(const struct ledger *l, int j)
{
	const struct usage *u = l->use;
	int i;

	for (i = 0; i < (int)slots_used(l); i++)
		if (ALOAD(&u->slots[i].state) != ENT_FREE && ledger_slot_job(&u->slots[i]) == j)
			return true;
	return false;
}

/*
 * One pass: dead slots reclaimed, a recount when needed (or forced), finished jobs and stale pid limits
 * gone; with execd, also the usage of live processes whose charging image exec()ed away (a look at each
 * one's open files and mappings in /proc: the costly part).
 */
static int gc_pass(struct ledger *l, bool force_recount, bool execd, unsigned int *reclaimed, unsigned int *given)
{
	struct usage *u = l->use;
	bool need = force_recount || ALOAD(&u->need_recount) || ALOAD(&u->frozen);
	unsigned int freed = 0, back = 0;
	int i, err = 0;

	ASTORE(&u->gc_begun_ns, clock_mono_ns());
	for (i = 0; i < (int)slots_used(l); i++) {
		struct slot *s = &u->slots[i];
		uint64_t owner = ALOAD(&s->owner);
		uint32_t st = ALOAD(&s->state);

		if (!owner)
			continue;
		if (st == ENT_LIVE) {
			if (ledger_pid_alive(s->pid, s->start)) {
				if (execd)
					back += take_back_execd(l, s);
				continue;
			}
			if (!ACAS(&s->state, &st, ENT_RECLAIMING))
				continue;
			freed++;
			if (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST))
				need = true; /* died mid-operation: only a recount is exact */
			else
				ledger_reclaim_slot(l, s);
		} else if (st == ENT_RECLAIMING) {
			need = true; /* left by a gc that died */
		} else if (st == ENT_CLAIMING || st == ENT_FREE) {
			/* attach in progress, or died before finishing it */
			if (!ledger_owner_alive(owner) && ACAS(&s->owner, &owner, 0))
				ASTORE(&s->state, ENT_FREE);
		}
	}
	if (need)
		err = ledger_recount(l);
	/* finished jobs */
	for (i = 0; i < LEDGER_MAX_JOBS; i++) {
		struct job *jb = &u->jobs[i];

		if (ALOAD(&jb->state) != ENT_LIVE)
			continue;
		if (ALOAD(&jb->owner_active) && ledger_pid_alive(jb->owner_pid, jb->owner_start))
			continue;
		if (job_in_use(l, i))
			continue;
		ASTORE(&jb->state, ENT_FREE);
	}
	/* stale pid limits */
	if (l->policy_rw) {
		bool changed = false;

		for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++) {
			struct pol_pid *pp = &l->pol->pid[i];

			if (ALOAD(&pp->state) == ENT_LIVE && !ledger_pid_alive(pp->pid, pp->start)) {
				ASTORE(&pp->state, ENT_FREE);
				changed = true;
			}
		}
		if (changed)
			ledger_limits_changed(l);
	}
	ASTORE(&u->last_gc_ns, clock_mono_ns());
	if (reclaimed)
		*reclaimed = freed;
	if (given)
		*given = back;
	return err;
}

int ledger_gc_locked(struct ledger *l, bool force_recount, unsigned int *reclaimed, unsigned int *given)
{
	return gc_pass(l, force_recount, true, reclaimed, given);
}

int ledger_gc_dead(struct ledger *l, bool force_recount)
{
	return gc_pass(l, force_recount, false, NULL, NULL);
}

int ledger_gc(struct ledger *l, unsigned int *reclaimed)
{
	int err;

	if (reclaimed)
		*reclaimed = 0;
	if (!l->usage_rw)
		return -EACCES;
	err = ledger_gc_lock(l, 3000);
	if (err)
		return err;
	err = ledger_gc_locked(l, false, reclaimed, NULL);
	ledger_gc_unlock(l);
	return err;
}
