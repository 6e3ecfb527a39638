// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ledger's refusals: what a refused creation records (the denial ring, the refusing scope's count), and
 * the look for room before a shared scope's refusal stands (grants are not usage: allowances taken back, dead
 * holders given back, then the creation tried again). Cold: reserve.c comes here only when a scope refused.
 */
#include "ledger/obj.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "core/util.h"

/*
 * How long allowances of a kind stay off after a shared scope refused one of its creations: the refusal
 * took every allowance back, and creations that come meanwhile must not take new ones before it retried.
 */
#ifndef TIGHT_NS
#define TIGHT_NS 5000000000ull
#endif
/*
 * How long a refusal by a shared scope may look for room that grants, not usage, fill (refusal_gc()), once
 * two looks served it; and at most, whatever happened (ledger_refusal_settle()).
 */
#define REFUSAL_WAIT_NS 30000000000ull
#define REFUSAL_MAX_NS 120000000000ull

COLD_FN void ledger_refusal_fill(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
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

COLD_FN int ledger_refusal_deny(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			 enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit)
{
	ledger_refusal_fill(l, d, kind, amount, type, idx, usage, limit);
	return -EDQUOT;
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
		if (l->slot >= 0 && l->slot < (int)l->nprocs)
			AADD(&u->slots[l->slot].refused[d->kind], 1);
		break;
	}
}

COLD_FN void ledger_refusal_record(struct ledger *l, const struct ledger_denial *d)
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

/*
 * What a refusing scope has in use of kind k (the read side's sum of its live slots' usage, as quota show
 * says it), in place of its total, which also carries grants: a refusal names usage, never grants.
 */
static COLD_FN void denial_usage(struct ledger *l, struct ledger_denial *d)
{
	struct ledger_scope_stat st;

	if (d->scope.type != LEDGER_SCOPE_PROCESS && (unsigned int)d->kind < LEDGER_NKINDS &&
	    !ledger_get_scope(l, &d->scope, &st))
		d->usage = st.usage[d->kind];
}

/* Does what is in use (denial_usage()) of the refusing scope leave no room for the request? */
static COLD_FN bool denial_full_now(struct ledger *l, struct ledger_denial *d)
{
	denial_usage(l, d);
	return d->usage > d->limit || d->amount > d->limit - d->usage;
}

/*
 * denial_full_now(), twice a millisecond apart: a create that finds its grant short adds to its usage and
 * takes the add back, so a sum read at that moment can show more than is in use; such moments pass.
 */
static COLD_FN bool denial_full(struct ledger *l, struct ledger_denial *d)
{
	if (!denial_full_now(l, d))
		return false;
	usleep(1000);
	return denial_full_now(l, d);
}

/* A refusal of kind k by a shared scope at time now: the kind is tight for TIGHT_NS (no new allowances). */
static COLD_FN void tighten(struct ledger *l, enum ledger_kind k, uint64_t now)
{
	__atomic_store_n(&l->use->tight_until[k], now + TIGHT_NS, __ATOMIC_SEQ_CST);
}

/*
 * Every live process's allowance of kind k given back (gc lock held), without a freeze: its grant cut to its
 * usage by ledger_reserve_grant_cut() (a create of its owner that raced is kept), what was cut taken off the totals of its
 * scopes. The owner's own operations on the grant are compare-and-swaps, so each side takes off what it
 * cut. A raise in flight that took an allowance before the kind went tight adds it after: the refused
 * process looks again (ledger_refusal_settle()).
 */
static COLD_FN void revoke_allowances(struct ledger *l, enum ledger_kind k)
{
	struct usage *u = l->use;
	struct slot_scopes sc;
	unsigned int i, n = slots_used(l);

	for (i = 0; i < n; i++) {
		struct slot *s = &u->slots[i];
		uint64_t g, back;

		/*
		 * Not while its owner is in an operation: a grant just raised for a create whose usage is not
		 * added yet looks like an allowance, and cutting it would send the create round again (without
		 * end, with many refused processes cutting). What such an operation takes, the next look gets.
		 */
		if (ALOAD(&s->state) != ENT_LIVE || __atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST))
			continue;
		g = ALOAD(&s->grant[k]);
		if (g == GRANT_UNLIMITED || g <= ALOAD(&s->usage[k]))
			continue;
		back = ledger_reserve_grant_cut(s, k, 0);
		if (back) {
			ledger_slot_scopes(l, s, &sc);
			ledger_scopes_sub(u, &sc, k, back);
		}
	}
}

/*
 * Does a slot that holds kind k belong to a process that is gone? One kill(pid, 0) per slot, no /proc read:
 * what a refusal asks before it pays for a gc pass (a zombie not reaped yet still counts as alive here).
 */
static COLD_FN bool holders_gone(const struct ledger *l, enum ledger_kind k)
{
	unsigned int i, n = slots_used(l);

	for (i = 0; i < n; i++) {
		const struct slot *s = &l->use->slots[i];
		uint64_t g;

		if (ALOAD(&s->state) != ENT_LIVE)
			continue;
		g = ALOADR(&s->grant[k]);
		if (!ALOADR(&s->usage[k]) && (!g || g == GRANT_UNLIMITED))
			continue;
		if (s->pid > 0 && kill(s->pid, 0) && errno == ESRCH)
			return true;
	}
	return false;
}

/* The low 32 bits of look_ns[k]: they change with every look, a futex to wait on. */
static inline uint32_t *look_word(struct usage *u, enum ledger_kind k)
{
	return (uint32_t *)&u->look_ns[k] + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
}

/*
 * Wait until look_ns[k] moves from what it was (seen: its low word) or ms milliseconds pass. A futex on the
 * shared mapping: hundreds of refused processes sleep in the kernel instead of waking each other and the
 * look they wait for (with naps of a few milliseconds each, 331 processes kept the lab's guest so busy
 * that a look under the gc lock took seconds and a refusal's 30 s passed in two tries).
 */
static COLD_FN void look_wait(struct usage *u, enum ledger_kind k, uint32_t seen, unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	syscall(SYS_futex, look_word(u, k), FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* The end of a look begun at start: look_ns[k] says so, and every process waiting for it wakes. */
static COLD_FN void look_done(struct usage *u, enum ledger_kind k, uint64_t start)
{
	uint64_t cur = ALOAD(&u->look_ns[k]);

	/* never back: a look stolen from a holder that seemed dead may end after a later one */
	while (cur < start && !ACAS(&u->look_ns[k], &cur, start))
		;
	syscall(SYS_futex, look_word(u, k), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Before the retry of a refusal of kind k first made at time first, whose try began at since (the kind tight
 * from then on), a look for room that began after since and has ended: true when there was one, false after
 * 5 s without (a gc stuck in a live process; the caller looks again). The look, under the gc lock: dead
 * holders given back by a gc pass begun after first when one is gone (one pass serves every process refused
 * before it began), and every live allowance of k given back (revoke_allowances(): no freeze, so processes
 * refused by the thousand and the others creating meanwhile never wait for each other's operations). One
 * look serves every process whose try began before it: the others sleep on look_ns (look_wait()) while the
 * lock is held, and only try it when it is free or has had the same holder for a second (then ledger_gc_lock()
 * looks whether that holder is alive), so that the waiting costs neither the holder's processor nor a read
 * of /proc each.
 */
static COLD_FN bool refusal_gc(struct ledger *l, enum ledger_kind k, uint64_t first, uint64_t since)
{
	struct usage *u = l->use;
	uint64_t deadline = clock_mono_ns() + 5000000000ull, held = 0, held_since = 0, now;

	for (;;) {
		uint64_t look = ALOAD(&u->look_ns[k]), owner;

		if (look > since)
			return true; /* a look begun after this try began has ended */
		owner = ALOAD(&u->gc_owner);
		now = clock_mono_ns();
		if (owner != held) {
			held = owner;
			held_since = now;
		}
		if ((!owner || now - held_since > 1000000000ull) && !ledger_gc_lock(l, 0)) {
			now = clock_mono_ns();
			/* tight again now: the wait for the lock can outlast a tight period that others let lapse */
			tighten(l, k, now);
			if (ALOAD(&u->gc_begun_ns) <= first && holders_gone(l, k))
				ledger_gc_dead(l, false);
			revoke_allowances(l, k);
			look_done(u, k, now);
			ledger_gc_unlock(l);
			return true;
		}
		if (now >= deadline)
			return false;
		look_wait(u, k, (uint32_t)look, 50);
	}
}

/*
 * Cold: a refusal stands only when what is in use fills the limit. A process's own (pid) limit counts its
 * own grant, which is its usage but for what it creates now: its refusal is exact. A shared scope's total
 * also carries the allowances of live processes and what dead ones held: the kind goes tight (no new
 * allowances, tight_until), and under the gc lock dead holders are given back (when one is gone) and every
 * live allowance of the kind is cut (refusal_gc()); then the creation is tried again, until the scope's
 * usage leaves no room for it (denial_full()) or it has taken too long (REFUSAL_WAIT_NS, REFUSAL_MAX_NS).
 */
COLD_FN int ledger_refusal_settle(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			   unsigned int n, struct ledger_denial *d)
{
	int err = -EDQUOT;

	/* a WR depth above a cap stays above it whoever dies */
	if (d->kind == LEDGER_WR || (unsigned int)d->kind >= LEDGER_NKINDS)
		goto out;
	if (d->scope.type != LEDGER_SCOPE_PROCESS) {
		uint64_t first = clock_mono_ns(), now;
		unsigned int nap = 500, served = 0;

		/*
		 * Until what is in use fills the refusing scope (creations of others still in flight fill it, or
		 * finish), another shared scope refuses another kind (an MR's count, then its bytes: that kind's
		 * turn), or it has taken too long: REFUSAL_WAIT_NS once two looks served it (what is left is held by
		 * operations in flight: a process stopped in one), REFUSAL_MAX_NS whatever happened (no look could
		 * be made: a gc lock held by a live process that does not go on). Then that refusal stands. Time
		 * alone is not enough: on a machine as busy as the lab's guest with 1100 processes, 30 s passed
		 * before a second try.
		 */
		for (;;) {
			enum ledger_kind k = d->kind;
			uint64_t since = clock_mono_ns();

			/* one gc pass since the first refusal is enough: the dead stay dead */
			tighten(l, k, since);
			served += refusal_gc(l, k, first, since);
			err = ledger_reserve_try(l, s, kinds, amounts, n, d);
			if (!err || d->scope.type == LEDGER_SCOPE_PROCESS || d->kind == LEDGER_WR ||
			    (unsigned int)d->kind >= LEDGER_NKINDS || denial_full(l, d))
				break;
			now = clock_mono_ns();
			if ((now - first > REFUSAL_WAIT_NS && served >= 2) || now - first > REFUSAL_MAX_NS)
				break;
			usleep(nap);
			if (nap < 16000)
				nap *= 2;
		}
	} else if (clock_mono_ns() - ALOADR(&l->use->last_gc_ns) > 100000000ull && !ledger_gc_lock(l, 0)) {
		unsigned int freed = 0, given = 0;

		ledger_gc_locked(l, false, &freed, &given);
		ledger_gc_unlock(l);
		if (freed || given)
			err = ledger_reserve_try(l, s, kinds, amounts, n, d);
	}
out:
	if (err) {
		denial_usage(l, d);
		ledger_refusal_record(l, d);
	}
	return err;
}
