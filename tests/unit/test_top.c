// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/top: what the snapshot reads of /proc/PID/status; the join of the ledger into the rows. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "ledger/ledger.h"
#include "top/top.h"
#include "unit.h"

static void test_status(void)
{
	char comm[TOP_COMM_LEN];
	pid_t tgid = 0;
	uid_t uid = 0;

	CHECK(top_parse_status("Name:\tib_write_bw\nUmask:\t0022\nState:\tS\nTgid:\t321\nNgid:\t0\nPid:\t325\n"
			       "PPid:\t1\nUid:\t1000\t1000\t1000\t1000\n",
			       &tgid, &uid, comm, sizeof(comm)) == 0, "parse");
	CHECK(tgid == 321 && uid == 1000 && !strcmp(comm, "ib_write_bw"), "%d %u %s", tgid, uid, comm);
	CHECK(top_parse_status("Name:\tx\nUid:\t0\n", &tgid, &uid, comm, sizeof(comm)) == -EPROTO, "no Tgid");
	CHECK(top_parse_status("Name:\tx\nTgid:\tz\nUid:\t0\n", &tgid, &uid, comm, sizeof(comm)) == -EPROTO,
	      "bad Tgid");
	CHECK(top_parse_status("", &tgid, &uid, comm, sizeof(comm)) == -EPROTO, "empty");
}

static struct ledger_proc_stat proc_stat(pid_t pid, uint64_t start, const char *job, const char *cgroup)
{
	struct ledger_proc_stat p;
	int k;

	memset(&p, 0, sizeof(p));
	p.pid = pid;
	p.start_time = start;
	snprintf(p.job, sizeof(p.job), "%s", job);
	snprintf(p.cgroup, sizeof(p.cgroup), "%s", cgroup);
	for (k = 0; k < LEDGER_NKINDS; k++)
		p.limit[k] = LEDGER_UNLIMITED;
	return p;
}

static struct ledger_scope_stat scope_stat(enum ledger_scope_type type, const char *name)
{
	struct ledger_scope_stat st;
	int k;

	memset(&st, 0, sizeof(st));
	st.scope.type = type;
	snprintf(st.scope.name, sizeof(st.scope.name), "%s", name);
	for (k = 0; k < LEDGER_NKINDS; k++)
		st.limit[k] = LEDGER_UNLIMITED;
	return st;
}

/* Managed: pid and start time both; a slot of another process that had the pid is not the row's. */
static void test_managed(void)
{
	struct ledger_proc_stat procs[3];
	struct top_ledger v = { .procs = procs, .nprocs = 3 };

	procs[0] = proc_stat(100, 5000, "", "/");	/* an earlier process with pid 100 */
	procs[1] = proc_stat(100, 7000, "", "/");
	procs[2] = proc_stat(200, 7000, "", "/");
	CHECK(top_ledger_proc(&v, 100, 7000) == &procs[1], "the slot with the row's start time");
	CHECK(top_ledger_proc(&v, 100, 5000) == &procs[0], "the earlier one");
	CHECK(top_ledger_proc(&v, 100, 6000) == NULL, "reused pid: not managed");
	CHECK(top_ledger_proc(&v, 100, 0) == NULL, "start unknown: not managed");
	CHECK(top_ledger_proc(&v, 300, 7000) == NULL, "no slot: not managed");
	v.nprocs = 0;
	CHECK(top_ledger_proc(&v, 100, 7000) == NULL, "empty ledger");
}

/* The rows: managed and job, usage, the tightest limit of the scopes that apply, refusals in the ring. */
static void test_join_view(void)
{
	struct top_row rows[3];
	struct top_snap s = { .rows = rows, .nrows = 3, .cap = 3 };
	struct ledger_scope_stat scopes[6];
	struct ledger_proc_stat procs[2];
	pid_t denied[3];
	struct top_ledger v = { .scopes = scopes, .nscopes = 6, .procs = procs, .nprocs = 2, .denied = denied,
				.ndenied = 3 };
	const uint64_t start = 4242;
	const int qp = NL_RES_QP, cq = NL_RES_CQ, mrb = NL_RES_NTYPES;

	memset(rows, 0, sizeof(rows));
	rows[0].kind = TOP_PROC;
	rows[0].pid = 100;
	rows[0].start_time = start;
	rows[1].kind = TOP_PROC;
	rows[1].pid = 200;
	rows[1].start_time = start + 1;
	rows[2].kind = TOP_KERNEL;

	scopes[0] = scope_stat(LEDGER_SCOPE_GLOBAL, "");
	scopes[0].limit[LEDGER_QP] = 10;
	scopes[0].usage[LEDGER_QP] = 3;			/* room 7 */
	scopes[0].limit[LEDGER_CQ] = 100;
	scopes[1] = scope_stat(LEDGER_SCOPE_CGROUP, "/a");
	scopes[1].limit[LEDGER_QP] = 8;			/* room 8 */
	scopes[1].limit[LEDGER_MR_BYTES] = 4096;
	scopes[1].usage[LEDGER_MR_BYTES] = 1024;
	scopes[2] = scope_stat(LEDGER_SCOPE_CGROUP, "/ab");	/* not above /a/b */
	scopes[2].limit[LEDGER_QP] = 1;
	scopes[3] = scope_stat(LEDGER_SCOPE_JOB, "train");
	scopes[3].limit[LEDGER_QP] = 5;
	scopes[3].usage[LEDGER_QP] = 4;			/* room 1: the tightest */
	scopes[4] = scope_stat(LEDGER_SCOPE_JOB, "other");
	scopes[4].limit[LEDGER_QP] = 0;
	scopes[5] = scope_stat(LEDGER_SCOPE_PROCESS, "");	/* another process's pid limit */
	scopes[5].scope.pid = 200;
	scopes[5].limit[LEDGER_QP] = 0;

	procs[0] = proc_stat(100, start, "train", "/a/b");
	procs[0].usage[LEDGER_QP] = 2;
	procs[0].limit[LEDGER_QP] = 6;				/* room 4 */
	procs[0].usage[LEDGER_CQ] = 7;
	procs[0].limit[LEDGER_CQ] = 9;				/* room 2 < the global's 100 */
	procs[1] = proc_stat(200, start + 12345, "", "/");	/* the row's pid, another start */
	denied[0] = 100;
	denied[1] = 200;
	denied[2] = 100;

	top_join_ledger_view(&s, &v);
	CHECK(s.ledger_joined, "joined");
	CHECK(rows[0].quota.joined && rows[0].quota.managed && !strcmp(rows[0].quota.job, "train"), "managed %d job %s",
	      rows[0].quota.managed, rows[0].quota.job);
	CHECK(rows[0].quota.used[qp] == 2 && rows[0].quota.limit[qp] == 5 && rows[0].quota.scope_used[qp] == 4 &&
	      rows[0].quota.scope[qp] == LEDGER_SCOPE_JOB, "qp %lu/%lu scope %d", (unsigned long)rows[0].quota.used[qp],
	      (unsigned long)rows[0].quota.limit[qp], rows[0].quota.scope[qp]);
	CHECK(rows[0].quota.limit[cq] == 9 && rows[0].quota.scope[cq] == LEDGER_SCOPE_PROCESS, "cq %lu scope %d",
	      (unsigned long)rows[0].quota.limit[cq], rows[0].quota.scope[cq]);
	CHECK(rows[0].quota.limit[mrb] == 4096 && rows[0].quota.scope_used[mrb] == 1024 &&
	      rows[0].quota.scope[mrb] == LEDGER_SCOPE_CGROUP && rows[0].quota.has_kind[mrb], "mr_bytes");
	CHECK(!rows[0].quota.has_kind[NL_RES_CM_ID] && rows[0].quota.limit[NL_RES_CM_ID] == UINT64_MAX &&
	      rows[0].quota.scope[NL_RES_CM_ID] == -1, "cm_id: not a ledger kind");
	CHECK(rows[0].quota.denials == 2, "denials %lu", (unsigned long)rows[0].quota.denials);
	/* the parent: its pid has a slot, but of another start time */
	CHECK(rows[1].quota.joined && !rows[1].quota.managed && rows[1].quota.limit[qp] == UINT64_MAX &&
	      rows[1].quota.denials == 1, "reused pid: managed %d", rows[1].quota.managed);
	CHECK(!rows[2].quota.joined, "kernel rows are not joined");
}

/* --- the completeness rule of the counters mode (topbase.c) --- */

static struct top_counter ctr(pid_t tgid, unsigned int type, uint64_t create, uint64_t destroy)
{
	struct top_counter c;

	memset(&c, 0, sizeof(c));
	c.tgid = tgid;
	c.c.create[type] = create;
	c.c.destroy[type] = destroy;
	return c;
}

static void test_base(void)
{
	struct top_counter a[2] = { ctr(0, RESTRACK_QP, 1, 0), ctr(100, RESTRACK_QP, 3, 3) };
	struct top_counter b[2] = { ctr(0, RESTRACK_QP, 1, 0), ctr(100, RESTRACK_QP, 4, 3) };
	struct top_counter neg[2] = { ctr(0, RESTRACK_QP, 0, 5), ctr(100, RESTRACK_QP, 3, 4) };
	struct top_counter dev[1] = { ctr(7, RESTRACK_QP, 4, 3) };
	struct top_counters ca = { .n = 2, .v = a }, cb = { .n = 2, .v = b }, cn = { .n = 2, .v = neg };
	struct top_counters cd = { .n = 1, .v = dev };
	struct top_row kern = { .kind = TOP_KERNEL }, user = { .kind = TOP_PROC, .pid = 100 };
	struct top_snap s;
	struct mon_status st;
	char why[192];
	int qp = kind_nl_of_restrack[RESTRACK_QP];

	CHECK(top_counters_equal(&ca, &ca) && !top_counters_equal(&ca, &cb), "equal");
	cb.n = 1;
	CHECK(!top_counters_equal(&ca, &cb), "fewer keys");
	CHECK(top_counters_negative(&ca) == 0, "balanced is not negative");
	/* the kernel's own go below zero when objects of before the monitor are destroyed: allowed */
	CHECK(top_counters_negative(&cn) == 100, "negative user tgid: %d", top_counters_negative(&cn));

	memset(&s, 0, sizeof(s));
	s.ndevs = 1;
	s.devs[0].dev.index = 7;
	s.devs[0].totals.n[qp] = 2; /* a GSI QP of the kernel and a QP of pid 100 */
	s.devs[0].totals.mr_bytes = 4096;
	s.rows = &kern;
	s.nrows = 1;
	CHECK(top_base_check(&s, &ca, &ca, &cd, why, sizeof(why)) == 0, "baseline: %s", why);
	CHECK(top_base_check(&s, &ca, &cb, &cd, why, sizeof(why)) == -EAGAIN, "changed during the dump");
	CHECK(top_base_check(&s, &cn, &cn, &cd, why, sizeof(why)) == -EEXIST && strstr(why, "pid 100"), "%s", why);
	s.rows = &user;
	CHECK(top_base_check(&s, &ca, &ca, &cd, why, sizeof(why)) == -EEXIST && strstr(why, "before the monitor"),
	      "a user object in the dump: %s", why);

	/* base = what the dump found - what the device counters hold live */
	memset(&st, 0, sizeof(st));
	top_base_fill(&st, &s, &cd);
	CHECK(st.ndevs == 1 && st.dev[0].index == 7 && st.dev[0].base[RESTRACK_QP] == 1 &&
	      st.dev[0].base_mr_bytes == 4096, "base %lld", (long long)st.dev[0].base[RESTRACK_QP]);

	/* later: 2 more QPs created on the device; the kernel's summary agrees, then one it does not count */
	dev[0] = ctr(7, RESTRACK_QP, 6, 3);
	memset(&s, 0, sizeof(s));
	s.ndevs = 1;
	s.devs[0].dev.index = 7;
	s.devs[0].has_summary = true;
	s.devs[0].summary.present = 1u << qp;
	s.devs[0].summary.curr[qp] = 4;
	CHECK(top_counts_check(&st, &s, &cd, why, sizeof(why)) == 0 && s.devs[0].totals.n[qp] == 4, "%s", why);
	s.devs[0].summary.curr[qp] = 5;
	CHECK(top_counts_check(&st, &s, &cd, why, sizeof(why)) == -ESTALE && strstr(why, "the kernel counts 5 qp"),
	      "%s", why);
	/* a device the baseline never saw: everything on it was counted */
	s.devs[0].dev.index = 8;
	s.devs[0].summary.curr[qp] = 0;
	CHECK(top_counts_check(&st, &s, &cd, why, sizeof(why)) == 0, "%s", why);
	s.devs[0].has_summary = false;
	CHECK(top_counts_check(&st, &s, &cd, why, sizeof(why)) == -ENODATA, "no summary");
}

int main(void)
{
	RUN(test_base);
	RUN(test_status);
	RUN(test_managed);
	RUN(test_join_view);
	return unit_done();
}
