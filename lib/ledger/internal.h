/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Inside the ledger: the two files' layout, the handle, and what its rooms share (not part of the API). */
#ifndef RDMACTL_LEDGER_INTERNAL_H
#define RDMACTL_LEDGER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/clock.h"
#include "core/hot.h"
#include "core/util.h"
#include "ledger/ledger.h"

/* Shared by the ledger's files only (and its unit tests): hidden in the preload, direct access. */
#pragma GCC visibility push(hidden)

/*
 * 2: denials carry the environment variable of a per-process limit; kinds xrcd and wq.
 * 3: every limit change bumps the usage file's generation (processes cache their limits by it); job and slot
 *    entries never straddle a page.
 * 4: refusals counted per scope (global, cgroup entry, job, process slot), exactly, not only in the ring.
 * 5: slots hold grants (what the scope totals carry for them, their usage plus an allowance); 1 KiB slots.
 * 6: per kind, a time until which no allowance is taken (tight_until: a shared scope refused a creation).
 * 7: per kind, when the last look for room after a refusal that has ended began (look_ns): one look serves
 *    every process refused before it.
 */
#define LEDGER_VERSION 7
#define POLICY_MAGIC "RDMAPOL1"
#define USAGE_MAGIC "RDMAUSE1"
#define USAGE_SUFFIX ".usage"
#define MAX_CG_PER_PROC 16
/*
 * Cached limits are also refreshed every this many operations, whatever the generation says: the usage file
 * is writable by every user, and a writer that puts the generation back must not hide a limit change for
 * good.
 */
#define VIEW_RECHECK 4096

#define ALOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ALOADR(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ASTORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define AADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define ASUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)
#define ACAS(p, expp, v) __atomic_compare_exchange_n((p), (expp), (v), false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)

/* Static header, identical in shape for both files; checksummed. */
struct lhdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint64_t file_size;
	uint32_t nprocs, njobs, ncgroups, npidlimits, nring, nkinds;
	uint64_t ledger_id; /* pairs a policy file with its usage file */
	uint64_t created_ns;
	uint32_t checksum; /* FNV-1a of every byte above */
	uint32_t pad;
};

enum { ENT_FREE = 0, ENT_CLAIMING = 1, ENT_LIVE = 2, ENT_RECLAIMING = 3 };

struct pol_cgroup {
	uint32_t state;
	uint32_t pad;
	char path[LEDGER_CGROUP_MAX];
	uint64_t limit[LEDGER_NKINDS];
};

struct pol_pid {
	uint32_t state;
	int32_t pid;
	uint64_t start;
	uint64_t limit[LEDGER_NKINDS];
};

struct policy {
	struct lhdr h;
	uint64_t global_limit[LEDGER_NKINDS];
	struct pol_cgroup cg[LEDGER_MAX_CGROUPS];
	struct pol_pid pid[LEDGER_MAX_PIDLIMITS];
};

struct ring_ent {
	uint64_t seq; /* 0 while being written */
	struct ledger_denial_event ev;
};

struct job {
	uint32_t state;
	int32_t owner_pid;
	uint64_t owner_start;
	uint32_t owner_active;
	uint32_t owner_uid; /* the creator's euid: it and root change the job's limits (0, root's, before it was kept) */
	char name[LEDGER_NAME_MAX];
	uint64_t limit[LEDGER_NKINDS];
	uint64_t total[LEDGER_NKINDS];
	uint64_t refused[LEDGER_NKINDS]; /* creations this job's limits refused */
} __attribute__((aligned(512))); /* limit and total on one page */

/* A grant that no total carries: the process's plan of that kind had no limit at all when it was set. */
#define GRANT_UNLIMITED UINT64_MAX

struct slot {
	/* hot: written by the owner on every operation */
	uint64_t inflight;
	uint64_t usage[LEDGER_NKINDS];
	/*
	 * What the scope totals carry for this slot (lib/ledger/ledger.h, "Grants"): usage[k] <= grant[k] but for an
	 * operation in progress. The fast operation moves usage only; grants move in bracketed operations
	 * (in-flight mark), in a recount (frozen), and when a dead slot is reclaimed.
	 */
	uint64_t grant[LEDGER_NKINDS];
	/*
	 * A release that leaves usage below this gives back what its grant has above usage and an allowance:
	 * the grant less twice the allowance of its last raise; the grant itself after a raise without one
	 * and after a recount (a limit set below usage takes back each release at once); 0 with
	 * GRANT_UNLIMITED. Kept by the operations that move the grant.
	 */
	uint64_t trim_below[LEDGER_NKINDS];
	/* cold */
	uint64_t owner; /* 0 free, else pid | (start & 0xffffffff) << 32: claimed by CAS */
	uint32_t state;
	int32_t pid;
	uint64_t start;
	int32_t job; /* index into jobs, -1 none */
	/*
	 * 0: usage charged through the API. Else the interceptor's slot, whose usage mirrors uverbs objects:
	 * +1 when a device open begins, +1 when it ended (odd: an open in progress). See take_back_execd().
	 */
	uint32_t vseq;
	char cgroup[LEDGER_CGROUP_MAX];
	uint64_t refused[LEDGER_NKINDS]; /* creations this process's own (pid) limits refused */
} __attribute__((aligned(1024))); /* the hot part on one page */

struct usage {
	struct lhdr h;
	/* Read by every operation, written rarely: one line, on the page of the global totals. */
	uint32_t frozen __attribute__((aligned(64))); /* recount in progress: operations wait */
	uint32_t pad;
	/*
	 * Bumped by every change of a limit (any scope) and of the cgroup and pid tables: a process caches the
	 * limits that apply to it and refreshes them when this moves, so that operations never read the policy
	 * file unless a cgroup entry applies.
	 */
	uint64_t gen;
	uint32_t need_recount __attribute__((aligned(64))); /* a recount could not finish; the next gc retries */
	uint64_t gc_owner;    /* gc lock: packed pid|start32, 0 free */
	uint64_t last_gc_ns;
	/*
	 * Per kind, CLOCK_MONOTONIC ns until which grants are raised by what is missing only, and releases keep
	 * nothing above usage (no allowances): set by a refusal of a shared scope, which then takes every
	 * allowance back (lib/ledger/refusal.c, ledger_refusal_settle()). Cold: read by raises and trims only.
	 */
	uint64_t tight_until[LEDGER_NKINDS];
	uint64_t gc_begun_ns; /* CLOCK_MONOTONIC ns when the last gc pass began (under the gc lock) */
	/*
	 * Per kind, CLOCK_MONOTONIC ns when the last look for room after a shared scope's refusal that has ended
	 * began (under the gc lock: dead holders, then every live allowance given back; written when it ends,
	 * and the processes waiting on its low 32 bits, a futex, woken; refusal.c, refusal_gc()).
	 */
	uint64_t look_ns[LEDGER_NKINDS];
	/*
	 * One past the highest slot ever claimed (only grows): scans of the slots stop there, so that a ledger
	 * made for many processes costs what it holds (slots_used()).
	 */
	uint32_t slot_hw;
	uint32_t pad2;
	uint64_t denial_total;
	uint64_t denial_kind[LEDGER_NKINDS];
	uint64_t denial_seq;
	uint64_t global_total[LEDGER_NKINDS] __attribute__((aligned(64)));
	uint64_t cg_total[LEDGER_MAX_CGROUPS][LEDGER_NKINDS] __attribute__((aligned(64)));
	/* creations refused by each scope's limits, per kind (the refusal's cold path writes them) */
	uint64_t global_refused[LEDGER_NKINDS] __attribute__((aligned(64)));
	uint64_t cg_refused[LEDGER_MAX_CGROUPS][LEDGER_NKINDS];
	struct ring_ent ring[LEDGER_DENIAL_RING];
	struct job jobs[LEDGER_MAX_JOBS];
	struct slot slots[]; /* nprocs of them (the header's, as validated at open: struct ledger's nprocs) */
};

/* One scope of an operation's plan: its counter and its limit (LEDGER_WR: no counter, only the cap). */
struct plan_ent {
	uint64_t *ctr;
	uint64_t lim;
	int32_t type; /* enum ledger_scope_type, for a refusal's message */
	int32_t idx;  /* the job or cgroup entry */
};
/* The process, its job, up to five cgroups, the global scope. */
#define PLAN_MAX 8

struct ledger {
	struct policy *pol;
	struct usage *use;
	uint32_t nprocs; /* slots in use->slots[], from the policy header, checked against the usage file's */
	bool policy_rw, usage_rw;
	pthread_mutex_t mtx;

	/* this process's attachment */
	int slot; /* -1 when not attached */
	pid_t pid;
	uint64_t start;
	int job;
	char jobname[LEDGER_NAME_MAX];
	char cgroup[LEDGER_CGROUP_MAX];

	/*
	 * The limits that apply, refreshed when use->gen moves (fields read with relaxed atomics, after an
	 * acquire of view_gen): pid and global limits copied, the cgroup entries by index.
	 */
	uint64_t view_gen;
	uint32_t view_left; /* operations before the next refresh (VIEW_RECHECK), loosely counted; 0 while stuck */
	uint64_t view_pid[LEDGER_NKINDS];    /* LEDGER_UNLIMITED without a pid entry */
	uint64_t view_global[LEDGER_NKINDS];
	int view_ncg;
	int view_cg[MAX_CG_PER_PROC];
	/*
	 * The operation's plan, built with the view: per kind, the counter of each scope a grant charges in
	 * order (the slot's grant, then the job, the cgroups and the global total that have a limit on that kind:
	 * see "Totals" in lib/ledger/ledger.h) with that scope's limit, so that a grant is one compare-and-swap per scope
	 * and nothing else; for LEDGER_WR, the caps that are set. Pointers into this process's own mapping, indices
	 * checked when built: a writer of the usage file cannot redirect them. plan_ok is false when the process
	 * has more cgroup scopes than a plan holds (the general path then runs).
	 */
	bool plan_ok;
	uint8_t plan_n[LEDGER_NKINDS];
	struct plan_ent plan[LEDGER_NKINDS][PLAN_MAX];
	/*
	 * For the interceptor's operation (ledger_reserve_obj's first lines): the slot (NULL before the first plan
	 * and once detached) and the lowest WR cap of the plan (LEDGER_UNLIMITED: none). Built with the plan.
	 */
	uint64_t fast_wr;
	struct slot *fast_slot;
	bool frozen_stuck; /* a freeze outlasted 5 s: stop waiting for it until it is gone */
	uint64_t stuck_check;

	char *path;
	bool own; /* allocated by ledger_open() (not ledger_open_in()): freed by ledger_close() */
	/* ledger_on_refusal(): what a refused or failed ledger_reserve_obj() returns */
	int (*on_refusal)(int err, enum ledger_kind kind, const struct ledger_denial *why);
};

_Static_assert(sizeof(struct ledger) <= LEDGER_HANDLE_SIZE, "LEDGER_HANDLE_SIZE too small");
_Static_assert(sizeof(struct slot) == 1024 && sizeof(struct job) == 512, "a slot or a job straddles a page");

bool ledger_pid_alive(pid_t pid, uint64_t start);
uint64_t ledger_pack_owner(pid_t pid, uint64_t start);
bool ledger_owner_alive(uint64_t owner);
void ledger_self_cgroup(char *out, size_t len);
bool ledger_cg_covers(const char *a, const char *b);
/* The headers' checksum (FNV-1a). */
uint32_t ledger_fnv1a(const void *p, size_t n);
/* The message of the last failure (ledger_error()); ledger_seterr() writes it and returns err. */
extern __thread char ledger_errbuf[512];
int ledger_seterr(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t ledger_self_owner(uint64_t *start);
int ledger_gc_lock(struct ledger *l, int wait_ms);
void ledger_gc_unlock(struct ledger *l);
void ledger_limits_changed(struct ledger *l);
/* Cache the limits that apply to this process and build its plan (attach, and when the generation moves). */
void ledger_refresh_view(struct ledger *l);
/* A detaching process's grants given back to its scopes (its usage already released). */
void ledger_grants_return(struct ledger *l);
int ledger_cg_matches(const struct policy *pol, const char *cg, int *idx, int max);
int ledger_slot_job(const struct slot *s);
int ledger_recount(struct ledger *l);
void ledger_reclaim_slot(struct ledger *l, struct slot *s);
int ledger_gc_locked(struct ledger *l, bool force_recount, unsigned int *reclaimed, unsigned int *given);
/* The scopes a slot's usage counts in besides the global one: its job and the cgroup entries it matches. */
struct slot_scopes {
	int job; /* -1 none */
	int ncg;
	int cg[MAX_CG_PER_PROC];
};
void ledger_slot_scopes(struct ledger *l, const struct slot *s, struct slot_scopes *sc);
/* Take n of kind k off the global total and every scope in sc (the slot's own count is the caller's). */
void ledger_scopes_sub(struct usage *u, const struct slot_scopes *sc, int k, uint64_t n);
/* How many slots a scan looks at: up to the highest ever claimed (slot_hw), never past the ledger's. */
static inline unsigned int slots_used(const struct ledger *l)
{
	uint32_t hw = __atomic_load_n(&l->use->slot_hw, __ATOMIC_ACQUIRE);

	return hw < l->nprocs ? hw : l->nprocs;
}
/*
 * ledger_gc_locked() without the look at live processes' open files: dead holders given back, and a recount when
 * force_recount (or when one is needed). What a refusal by a shared scope runs when a holder is gone.
 */
int ledger_gc_dead(struct ledger *l, bool force_recount);

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

/* view.c: reserve and release through the view, in an operation (op_enter()), while there is no plan. */
COLD_FN int ledger_view_reserve(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			 unsigned int n, struct ledger_denial *d);
COLD_FN int ledger_view_release(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			 unsigned int n);

/* refusal.c: a refusal's record, and the look for room before a shared scope's refusal stands. */
COLD_FN void ledger_refusal_fill(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			  enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit);
COLD_FN void ledger_refusal_record(struct ledger *l, const struct ledger_denial *d);
/* ledger_refusal_fill(), and -EDQUOT: the refusal by a scope, as the reserving paths return it. */
COLD_FN int ledger_refusal_deny(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			 enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit);
/* After try_reserve() refused: its result once room was looked for (0 or -EDQUOT), the refusal recorded. */
COLD_FN int ledger_refusal_settle(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			   unsigned int n, struct ledger_denial *d);
/* reserve.c, for refusal.c: the reservation tried again; a grant lowered to usage plus more (what it cut). */
COLD_FN int ledger_reserve_try(struct ledger *l, struct slot *s, const enum ledger_kind *kinds, const uint64_t *amounts,
			unsigned int n, struct ledger_denial *d);
COLD_FN uint64_t ledger_reserve_grant_cut(struct slot *s, enum ledger_kind k, uint64_t more);
/* The release threshold of kind k: a release that leaves the grant above it trims (slack: what may stay). */
COLD_FN void ledger_reserve_set_trim(struct slot *s, enum ledger_kind k, uint64_t slack);
int ledger_find_job(const struct usage *u, const char *name);
void ledger_take_over_stale(struct ledger *l, uint64_t owner);

/* Subtract without going below zero (a total can only be short after a crash mid-recount). */
static inline HOT_DESTROY void sub_clamp(uint64_t *p, uint64_t n)
{
	uint64_t cur = ALOADR(p);

	do {
		if (cur < n)
			n = cur;
	} while (!ACAS(p, &cur, cur - n));
}

#pragma GCC visibility pop

#endif
