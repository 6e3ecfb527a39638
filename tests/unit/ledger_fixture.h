/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the ledger's unit tests share (test_ledger.c, test_ledger_life.c): a temp ledger, scopes, sums. */
#ifndef RDMACTL_TEST_LEDGER_FIXTURE_H
#define RDMACTL_TEST_LEDGER_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * The ledger's internals (slot layout, in-flight counter) are needed to fake a reused pid and a death
 * mid-operation deterministically: compile the library source into the test. The archive's ledger.o is then
 * never pulled in (every symbol it would provide is already defined here).
 */
#include "ledger/internal.h"

#include "unit.h"

static char dir[64];
static char lpath[128];

static inline void fresh_ledger(void)
{
	char upath[sizeof(lpath) + 8];

	snprintf(upath, sizeof(upath), "%s.usage", lpath);
	unlink(lpath);
	unlink(upath);
	CHECK(ledger_init(lpath) == 0, "init: %s", ledger_error());
}

static inline struct ledger *open_rw(void)
{
	struct ledger *l = NULL;
	int err = ledger_open(lpath, LEDGER_POLICY_RW, &l);

	CHECK(err == 0, "open: %d %s", err, ledger_error());
	if (err) {
		printf("Bail out! cannot open %s\n", lpath);
		exit(1);
	}
	return l;
}

static inline struct ledger_scope scope_global(void)
{
	struct ledger_scope s = { .type = LEDGER_SCOPE_GLOBAL };

	return s;
}

static inline struct ledger_scope scope_job(const char *name)
{
	struct ledger_scope s = { .type = LEDGER_SCOPE_JOB };

	snprintf(s.name, sizeof(s.name), "%s", name);
	return s;
}

static inline struct ledger_scope scope_cg(const char *name)
{
	struct ledger_scope s = { .type = LEDGER_SCOPE_CGROUP };

	snprintf(s.name, sizeof(s.name), "%s", name);
	return s;
}

static inline struct ledger_scope scope_pid(pid_t pid)
{
	struct ledger_scope s = { .type = LEDGER_SCOPE_PROCESS, .pid = pid };

	return s;
}

/* Pretend the calling process lives in cgroup cg (the host test runner usually sits in "/"). */
static inline void fake_cgroup(struct ledger *l, const char *cg)
{
	snprintf(l->cgroup, sizeof(l->cgroup), "%s", cg);
	snprintf(l->use->slots[l->slot].cgroup, sizeof(l->use->slots[l->slot].cgroup), "%s", cg);
	__atomic_store_n(&l->view_gen, 0, __ATOMIC_RELAXED);
}

static inline uint64_t usage_of(struct ledger *l, struct ledger_scope s, enum ledger_kind k)
{
	struct ledger_scope_stat st;

	if (ledger_get_scope(l, &s, &st))
		return UINT64_MAX;
	return st.usage[k];
}

/* The refusals a scope's own limits made, per kind (UINT64_MAX: no such scope). */
static inline uint64_t refused_of(struct ledger *l, struct ledger_scope s, enum ledger_kind k)
{
	struct ledger_scope_stat st;

	if (ledger_get_scope(l, &s, &st))
		return UINT64_MAX;
	return st.refused[k];
}

struct sum {
	uint64_t all[LEDGER_NKINDS];
	uint64_t job[LEDGER_NKINDS];
	uint64_t cg[LEDGER_NKINDS];
	const char *jobname, *cgname;
	unsigned int n;
};

static inline int sum_cb(const struct ledger_proc_stat *ps, void *arg)
{
	struct sum *s = arg;
	int k;

	s->n++;
	for (k = 0; k < LEDGER_NKINDS; k++) {
		s->all[k] += ps->usage[k];
		if (s->jobname && !strcmp(ps->job, s->jobname))
			s->job[k] += ps->usage[k];
		if (s->cgname && ledger_cg_covers(s->cgname, ps->cgroup))
			s->cg[k] += ps->usage[k];
	}
	return 0;
}

/* ---- basics ----------------------------------------------------------------------------------- */

struct ring_seen {
	struct ledger_denial_event last;
	int n;
};

static inline int ring_cb(const struct ledger_denial_event *ev, void *arg)
{
	struct ring_seen *rs = arg;

	rs->last = *ev;
	rs->n++;
	return 0;
}

static inline int count_cb(const struct ledger_scope_stat *st, void *arg)
{
	(void)st;
	(*(int *)arg)++;
	return 0;
}


/* The sum of the grants (or usage) of kind k of the live slots in job j (-1: any) and under cgroup cg (NULL: any). */
static inline uint64_t slots_sum(struct ledger *l, int j, const char *cg, enum ledger_kind k, bool grants)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < (int)l->nprocs; i++) {
		struct slot *s = &l->use->slots[i];

		if (ALOAD(&s->state) != ENT_LIVE || (j >= 0 && ledger_slot_job(s) != j) || (cg && !ledger_cg_covers(cg, s->cgroup)))
			continue;
		sum += grants ? ALOAD(&s->grant[k]) : ALOAD(&s->usage[k]);
	}
	return sum;
}

/* A temp directory for the test's ledger (lpath); 0, or 1 when it cannot be made. */
static inline int fixture_begin(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ledger-test.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(dir, 0755);
	snprintf(lpath, sizeof(lpath), "%s/ledger", dir);
	return 0;
}

static inline int fixture_end(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? 1 : 0;
}

#endif
