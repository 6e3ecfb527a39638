// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/ledger on a temp ledger: limits, scopes, reservations, grants, limit changes, fork and exec. */
#include "ledger_fixture.h"

static void test_basic(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ledger_scope g = scope_global(), me = scope_pid(getpid());
	char msg[512];
	uint64_t seq = 0;
	int i, err;

	CHECK(!strcmp(ledger_kind_name(LEDGER_XRCD), "xrcd") && !strcmp(ledger_kind_name(LEDGER_WQ), "wq") &&
		      !strcmp(ledger_kind_name(LEDGER_WR), "wr") && !ledger_kind_names[LEDGER_NKINDS] &&
		      !ledger_kind_name(LEDGER_NKINDS),
	      "kind names");
	fresh_ledger();
	l = open_rw();
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -ENOTCONN, "not attached");
	CHECK(ledger_attach(l, "") == 0, "attach: %s", ledger_error());
	CHECK(ledger_attach(l, "") == -EALREADY, "attach twice");
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, 5) == 0, "set global");
	for (i = 0; i < 5; i++)
		CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == 0, "qp %d", i);
	err = ledger_reserve(l, LEDGER_QP, 1, &d);
	CHECK(err == -EDQUOT, "6th qp: %d", err);
	CHECK(d.scope.type == LEDGER_SCOPE_GLOBAL && d.usage == 5 && d.limit == 5 && d.kind == LEDGER_QP &&
		      d.pid == getpid(),
	      "denial %d %lu/%lu", d.scope.type, (unsigned long)d.usage, (unsigned long)d.limit);
	ledger_format_denial(&d, msg, sizeof(msg));
	CHECK(strstr(msg, "refused qp for pid ") && strstr(msg, "5/5 in use"), "%s", msg);
	CHECK(usage_of(l, g, LEDGER_QP) == 5, "global usage");
	CHECK(usage_of(l, me, LEDGER_QP) == 5, "own usage");

	/* a pid limit below usage refuses, never takes back */
	CHECK(ledger_set_limit(l, &me, LEDGER_QP, 2) == 0, "set pid");
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, LEDGER_UNLIMITED) == 0, "unset global");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_PROCESS &&
		      d.usage == 5 && d.limit == 2,
	      "pid limit below usage");
	ledger_format_denial(&d, msg, sizeof(msg));
	CHECK(strstr(msg, "limit set by pid "), "%s", msg);
	CHECK(usage_of(l, me, LEDGER_QP) == 5, "nothing destroyed");
	for (i = 0; i < 4; i++)
		CHECK(ledger_release(l, LEDGER_QP, 1) == 0, "release");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == 0, "1 -> 2 ok");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == -EDQUOT, "2 -> 3 refused");
	CHECK(ledger_release(l, LEDGER_QP, 3) == -EINVAL, "release more than held");
	CHECK(usage_of(l, g, LEDGER_QP) == 2, "global after releases");

	/* mr_bytes and the WR cap */
	CHECK(ledger_set_limit(l, &g, LEDGER_MR_BYTES, 1 << 20) == 0, "set mr_bytes");
	CHECK(ledger_reserve(l, LEDGER_MR_BYTES, 1 << 19, NULL) == 0, "512K");
	CHECK(ledger_reserve(l, LEDGER_MR_BYTES, (1 << 19) + 1, &d) == -EDQUOT, "above 1M");
	CHECK(ledger_reserve(l, LEDGER_MR_BYTES, UINT64_MAX, &d) == -EDQUOT, "overflow refused");
	CHECK(ledger_set_limit(l, &g, LEDGER_WR, 128) == 0, "set wr");
	CHECK(ledger_reserve(l, LEDGER_WR, 128, NULL) == 0, "wr 128");
	CHECK(ledger_reserve(l, LEDGER_WR, 129, &d) == -EDQUOT && d.limit == 128, "wr 129");
	CHECK(ledger_reserve(l, LEDGER_WR, 100, NULL) == 0, "wr is not a counter");
	CHECK(usage_of(l, g, LEDGER_WR) == 0, "wr never charged");

	/* the xrcd and wq counters are kinds like the others */
	CHECK(ledger_set_limit(l, &g, LEDGER_XRCD, 1) == 0 && ledger_set_limit(l, &g, LEDGER_WQ, 0) == 0,
	      "set xrcd wq");
	CHECK(ledger_reserve(l, LEDGER_XRCD, 1, NULL) == 0 && usage_of(l, g, LEDGER_XRCD) == 1, "xrcd 1");
	CHECK(ledger_reserve(l, LEDGER_WQ, 1, &d) == -EDQUOT && d.kind == LEDGER_WQ && d.limit == 0, "wq refused");
	ledger_format_denial(&d, msg, sizeof(msg));
	CHECK(strstr(msg, "refused wq for pid ") && strstr(msg, "0/0 in use"), "%s", msg);
	CHECK(ledger_release(l, LEDGER_XRCD, 1) == 0 && usage_of(l, g, LEDGER_XRCD) == 0, "xrcd released");

	/* denials recorded */
	{
		uint64_t total = 0, per[LEDGER_NKINDS];
		struct ring_seen rs = { 0 };

		ledger_denial_counts(l, &total, per);
		CHECK(total == 7 && per[LEDGER_QP] == 3 && per[LEDGER_MR_BYTES] == 2 && per[LEDGER_WR] == 1 &&
			      per[LEDGER_WQ] == 1,
		      "counts %lu", (unsigned long)total);
		ledger_foreach_denial(l, &seq, ring_cb, &rs);
		CHECK(rs.n == 7 && seq == 7 && rs.last.d.kind == LEDGER_WQ, "ring n=%d seq=%lu", rs.n,
		      (unsigned long)seq);
		rs.n = 0;
		ledger_foreach_denial(l, &seq, ring_cb, &rs);
		CHECK(rs.n == 0, "nothing new");
	}

	CHECK(ledger_detach(l) == 0, "detach");
	CHECK(usage_of(l, g, LEDGER_QP) == 0 && usage_of(l, g, LEDGER_MR_BYTES) == 0, "detach gives back");
	ledger_close(l);
}

static void test_scopes(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ledger_scope j = scope_job("train"), c = scope_cg("/tenant/a"), cp = scope_cg("/tenant");
	uint64_t lim[LEDGER_NKINDS];
	int k;

	fresh_ledger();
	l = open_rw();
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_CQ] = 3;
	CHECK(ledger_attach(l, "nosuchjob") == -ENOENT, "attach to unknown job");
	CHECK(ledger_job_create(l, "train", lim) == 0, "job create: %s", ledger_error());
	CHECK(ledger_job_create(l, "train", lim) == -EEXIST, "job twice");
	CHECK(ledger_attach(l, "train") == 0, "attach job");
	fake_cgroup(l, "/tenant/a/leaf");
	CHECK(ledger_reserve(l, LEDGER_CQ, 2, NULL) == 0, "2 cq");
	/* a cgroup limit set while usage exists starts from the exact usage (recount) */
	CHECK(ledger_set_limit(l, &c, LEDGER_CQ, 10) == 0, "cg limit: %s", ledger_error());
	CHECK(usage_of(l, c, LEDGER_CQ) == 2, "cg usage recounted: %lu", (unsigned long)usage_of(l, c, LEDGER_CQ));
	CHECK(ledger_set_limit(l, &cp, LEDGER_PD, 1) == 0, "parent cg limit");
	CHECK(ledger_reserve(l, LEDGER_PD, 1, NULL) == 0, "pd 1");
	CHECK(ledger_reserve(l, LEDGER_PD, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_CGROUP &&
		      !strcmp(d.scope.name, "/tenant"),
	      "ancestor cgroup refuses");
	CHECK(ledger_reserve(l, LEDGER_CQ, 2, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_JOB && d.usage == 2 &&
		      d.limit == 3 && !strcmp(d.job, "train"),
	      "job refuses");
	{
		char msg[256];

		ledger_format_denial(&d, msg, sizeof(msg));
		CHECK(strstr(msg, "(job train): 2/3 in use, limit set by job train"), "%s", msg);
	}
	CHECK(usage_of(l, c, LEDGER_CQ) == 2, "refused reserve left nothing in cgroup");
	/* each refusal counted against the scope that refused, exactly, and no other */
	CHECK(refused_of(l, cp, LEDGER_PD) == 1 && refused_of(l, c, LEDGER_PD) == 0 && refused_of(l, j, LEDGER_PD) == 0,
	      "pd refused: /tenant %lu", (unsigned long)refused_of(l, cp, LEDGER_PD));
	CHECK(refused_of(l, j, LEDGER_CQ) == 1 && refused_of(l, c, LEDGER_CQ) == 0 && refused_of(l, cp, LEDGER_CQ) == 0,
	      "cq refused: job %lu", (unsigned long)refused_of(l, j, LEDGER_CQ));
	CHECK(refused_of(l, (struct ledger_scope){ .type = LEDGER_SCOPE_GLOBAL }, LEDGER_CQ) == 0, "global refused none");
	CHECK(ledger_set_limit(l, &j, LEDGER_CQ, 4) == 0, "raise job limit");
	CHECK(ledger_reserve(l, LEDGER_CQ, 2, NULL) == 0, "now fits");
	CHECK(usage_of(l, j, LEDGER_CQ) == 4 && usage_of(l, c, LEDGER_CQ) == 4, "job and cgroup totals");
	/* removing the last limit on a cgroup drops its entry */
	CHECK(ledger_set_limit(l, &cp, LEDGER_PD, LEDGER_UNLIMITED) == 0, "unset");
	CHECK(ledger_reserve(l, LEDGER_PD, 1, NULL) == 0, "pd 2 after unset");
	CHECK(ledger_set_limit(l, &cp, LEDGER_PD, 5) == 0, "set again");
	CHECK(usage_of(l, cp, LEDGER_PD) == 2, "recounted again: %lu", (unsigned long)usage_of(l, cp, LEDGER_PD));
	CHECK(refused_of(l, cp, LEDGER_PD) == 0, "a new entry's refusals start from zero");
	{
		struct ledger_scope bad = scope_cg("/");

		CHECK(ledger_set_limit(l, &bad, LEDGER_PD, 1) == -EINVAL, "root cgroup refused");
		bad = scope_job("nope");
		CHECK(ledger_set_limit(l, &bad, LEDGER_PD, 1) == -ENOENT, "unknown job");
		bad = scope_pid(4194304);
		CHECK(ledger_set_limit(l, &bad, LEDGER_PD, 1) == -ESRCH, "unknown pid");
	}
	CHECK(ledger_detach(l) == 0, "detach");
	CHECK(ledger_job_release(l, "train") == 0, "job release");
	CHECK(ledger_find_job(l->use, "train") < 0, "job gone with its tree");
	ledger_close(l);
}

/*
 * A process caches the limits that apply to it, keyed by the usage file's generation: every limit change,
 * in any scope and from any process, is seen by its next reserve after the cache was filled.
 */
static uint64_t gen_of(struct ledger *l)
{
	return __atomic_load_n(&l->use->gen, __ATOMIC_SEQ_CST);
}

static void set_and_bumped(struct ledger *w, struct ledger_scope sc, enum ledger_kind k, uint64_t v, const char *what)
{
	uint64_t g = gen_of(w);

	CHECK(ledger_set_limit(w, &sc, k, v) == 0, "%s: %s", what, ledger_error());
	CHECK(gen_of(w) > g, "%s bumps the generation", what);
}

static void test_limit_cache(void)
{
	struct ledger *l, *w;
	struct ledger_denial d;
	struct ledger_scope g = scope_global(), me = scope_pid(getpid()), j = scope_job("cache"),
			    c = scope_cg("/cache");
	pid_t pid;
	int status;

	fresh_ledger();
	l = open_rw();
	w = open_rw(); /* the `quota set` of another process: its own handle, its own mapping */
	CHECK(ledger_job_create(w, "cache", NULL) == 0, "job: %s", ledger_error());
	CHECK(ledger_attach(l, "cache") == 0, "attach: %s", ledger_error());
	fake_cgroup(l, "/cache/leaf");
	CHECK(ledger_reserve(l, LEDGER_QP, 2, NULL) == 0, "fills the cache");
	CHECK(__atomic_load_n(&l->view_gen, __ATOMIC_RELAXED) == gen_of(l), "cache current");

	/* global: lowered to the usage, then removed */
	set_and_bumped(w, g, LEDGER_QP, 2, "global set");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_GLOBAL && d.limit == 2,
	      "global limit seen by the next reserve");
	set_and_bumped(w, g, LEDGER_QP, LEDGER_UNLIMITED, "global unset");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == 0, "global unset seen");

	/* pid: a new entry, a value change of that entry, the entry removed */
	set_and_bumped(w, me, LEDGER_QP, 3, "pid set");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_PROCESS && d.usage == 3,
	      "pid limit seen");
	set_and_bumped(w, me, LEDGER_QP, 4, "pid raise");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == 0, "raised pid limit seen");
	set_and_bumped(w, me, LEDGER_QP, 4, "pid same value");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_PROCESS, "still 4");
	set_and_bumped(w, me, LEDGER_QP, LEDGER_UNLIMITED, "pid unset");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == 0, "pid unset seen (5)");

	/* job and cgroup */
	set_and_bumped(w, j, LEDGER_QP, 5, "job set");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_JOB, "job limit seen");
	set_and_bumped(w, j, LEDGER_QP, LEDGER_UNLIMITED, "job unset");
	set_and_bumped(w, c, LEDGER_QP, 5, "cgroup set");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_CGROUP && d.usage == 5,
	      "new cgroup entry seen, recounted");
	set_and_bumped(w, c, LEDGER_QP, 6, "cgroup raise");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == 0, "raised cgroup limit seen (6)");
	set_and_bumped(w, c, LEDGER_QP, LEDGER_UNLIMITED, "cgroup unset");
	CHECK(ledger_reserve(l, LEDGER_QP, 1, NULL) == 0, "cgroup entry gone (7)");

	/* the WR cap is cached like the counts */
	set_and_bumped(w, me, LEDGER_WR, 8, "pid wr cap");
	CHECK(ledger_reserve(l, LEDGER_WR, 16, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_PROCESS, "pid wr cap");
	set_and_bumped(w, me, LEDGER_WR, LEDGER_UNLIMITED, "pid wr uncap");
	set_and_bumped(w, g, LEDGER_WR, 8, "global wr cap");
	CHECK(ledger_reserve(l, LEDGER_WR, 16, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_GLOBAL, "global wr cap");
	set_and_bumped(w, g, LEDGER_WR, LEDGER_UNLIMITED, "global wr uncap");
	CHECK(ledger_reserve(l, LEDGER_WR, 16, NULL) == 0, "uncapped");

	/* from another process, between two reserves of this one */
	CHECK(ledger_reserve(l, LEDGER_MR, 1, NULL) == 0, "cache current again");
	pid = fork();
	if (pid == 0) {
		struct ledger *o = NULL;

		_exit(ledger_open(lpath, LEDGER_POLICY_RW, &o) || ledger_set_limit(o, &g, LEDGER_MR, 1) ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child set the limit: %d", status);
	CHECK(ledger_reserve(l, LEDGER_MR, 1, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_GLOBAL,
	      "another process's change seen");
	/* a writer of the usage file that puts the generation back delays a change, for VIEW_RECHECK operations */
	{
		uint64_t gn = gen_of(w);
		int i, allowed = -1;

		CHECK(ledger_set_limit(w, &g, LEDGER_MR, LEDGER_UNLIMITED) == 0, "unset");
		__atomic_store_n(&w->use->gen, gn, __ATOMIC_SEQ_CST);
		for (i = 0; i < 2 * VIEW_RECHECK && allowed < 0; i++) {
			if (ledger_reserve(l, LEDGER_MR, 1, NULL) == 0) {
				allowed = i;
				ledger_release(l, LEDGER_MR, 1);
			} else {
				ledger_reserve(l, LEDGER_CQ, 1, NULL);
				ledger_release(l, LEDGER_CQ, 1);
			}
		}
		/* hidden at first (the cache is what decides), seen within VIEW_RECHECK operations */
		CHECK(allowed > 0 && allowed <= VIEW_RECHECK, "hidden change seen after %d operations", allowed);
	}
	/* the gc dropping a dead process's pid limit is a change too */
	{
		uint64_t gn = gen_of(w);

		pid = fork();
		if (pid == 0)
			_exit(0);
		CHECK(ledger_set_limit(w, &(struct ledger_scope){ .type = LEDGER_SCOPE_PROCESS, .pid = pid }, LEDGER_QP,
				       1) == 0,
		      "pid limit of a child: %s", ledger_error());
		waitpid(pid, &status, 0);
		gn = gen_of(w);
		CHECK(ledger_gc(w, NULL) == 0 && gen_of(w) > gn, "stale pid limit dropped, generation bumped");
	}
	CHECK(ledger_detach(l) == 0, "detach");
	ledger_close(l);
	ledger_close(w);
}

/* Several kinds in one operation: all or nothing, in order, every scope undone on a refusal. */
static void test_reserve_n(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ledger_scope g = scope_global(), j = scope_job("multi"), c = scope_cg("/tenant"), me;
	enum ledger_kind qp[2] = { LEDGER_WR, LEDGER_QP }, mr[2] = { LEDGER_MR, LEDGER_MR_BYTES };
	enum ledger_kind dup[2] = { LEDGER_MR, LEDGER_MR }, bad[1] = { LEDGER_NKINDS };
	enum ledger_kind all[LEDGER_NKINDS + 1];
	uint64_t n[LEDGER_NKINDS + 1], lim[LEDGER_NKINDS];
	int k;

	fresh_ledger();
	l = open_rw();
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_MR] = 3;
	CHECK(ledger_job_create(l, "multi", lim) == 0, "job: %s", ledger_error());
	n[0] = 16;
	n[1] = 1;
	CHECK(ledger_reserve_n(l, qp, n, 2, &d) == -ENOTCONN, "not attached");
	CHECK(ledger_attach(l, "multi") == 0, "attach: %s", ledger_error());
	me = scope_pid(getpid());
	fake_cgroup(l, "/tenant/x");
	CHECK(ledger_set_limit(l, &c, LEDGER_MR_BYTES, 1 << 20) == 0, "cg mr_bytes: %s", ledger_error());
	CHECK(ledger_set_limit(l, &g, LEDGER_WR, 64) == 0, "wr cap");
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, 2) == 0, "global qp");

	/* arguments */
	CHECK(ledger_reserve_n(l, qp, n, 0, NULL) == -EINVAL, "no kinds");
	CHECK(ledger_reserve_n(l, dup, n, 2, NULL) == -EINVAL, "a kind twice");
	CHECK(ledger_reserve_n(l, bad, n, 1, NULL) == -EINVAL, "unknown kind");
	for (k = 0; k <= LEDGER_NKINDS; k++) {
		all[k] = (enum ledger_kind)(k % LEDGER_NKINDS);
		n[k] = 0;
	}
	CHECK(ledger_reserve_n(l, all, n, LEDGER_NKINDS + 1, NULL) == -EINVAL, "too many");
	CHECK(ledger_reserve_n(l, all, n, LEDGER_NKINDS, NULL) == 0, "every kind once, zero amounts");
	CHECK(ledger_release_n(l, dup, n, 2) == -EINVAL, "release: a kind twice");

	/* a QP: the WR depth is checked first, then it is counted */
	n[0] = 16;
	n[1] = 1;
	CHECK(ledger_reserve_n(l, qp, n, 2, &d) == 0, "qp 1");
	CHECK(ledger_reserve_n(l, qp, n, 2, &d) == 0, "qp 2");
	CHECK(ledger_reserve_n(l, qp, n, 2, &d) == -EDQUOT && d.kind == LEDGER_QP &&
		      d.scope.type == LEDGER_SCOPE_GLOBAL && d.usage == 2 && d.limit == 2,
	      "qp 3 refused by the global limit");
	n[0] = 65;
	CHECK(ledger_reserve_n(l, qp, n, 2, &d) == -EDQUOT && d.kind == LEDGER_WR && d.amount == 65 && d.limit == 64,
	      "depth above the cap refused before counting");
	CHECK(usage_of(l, g, LEDGER_QP) == 2 && usage_of(l, me, LEDGER_QP) == 2 && usage_of(l, g, LEDGER_WR) == 0,
	      "qp usage 2, wr never charged");
	n[0] = 16;
	CHECK(ledger_release_n(l, qp, n, 2) == 0, "release qp");
	CHECK(usage_of(l, g, LEDGER_QP) == 1 && usage_of(l, j, LEDGER_QP) == 1, "qp back to 1");

	/* an MR: count and bytes together; a refusal of the bytes gives the count back in every scope */
	n[0] = 1;
	n[1] = 512 << 10;
	CHECK(ledger_reserve_n(l, mr, n, 2, &d) == 0, "mr 512K");
	n[1] = 600 << 10;
	CHECK(ledger_reserve_n(l, mr, n, 2, &d) == -EDQUOT && d.kind == LEDGER_MR_BYTES &&
		      d.scope.type == LEDGER_SCOPE_CGROUP && d.usage == 512 << 10,
	      "bytes over the cgroup limit");
	CHECK(usage_of(l, me, LEDGER_MR) == 1 && usage_of(l, j, LEDGER_MR) == 1 && usage_of(l, c, LEDGER_MR) == 1 &&
		      usage_of(l, g, LEDGER_MR) == 1,
	      "the count was given back: pid %lu job %lu cg %lu global %lu", (unsigned long)usage_of(l, me, LEDGER_MR),
	      (unsigned long)usage_of(l, j, LEDGER_MR), (unsigned long)usage_of(l, c, LEDGER_MR),
	      (unsigned long)usage_of(l, g, LEDGER_MR));
	CHECK(usage_of(l, c, LEDGER_MR_BYTES) == 512 << 10 && usage_of(l, g, LEDGER_MR_BYTES) == 512 << 10,
	      "bytes unchanged");
	n[1] = 1;
	CHECK(ledger_reserve_n(l, mr, n, 2, NULL) == 0, "mr 2");
	CHECK(ledger_reserve_n(l, mr, n, 2, NULL) == 0, "mr 3");
	CHECK(ledger_reserve_n(l, mr, n, 2, &d) == -EDQUOT && d.kind == LEDGER_MR && d.scope.type == LEDGER_SCOPE_JOB,
	      "mr 4 refused by the job");
	CHECK(usage_of(l, g, LEDGER_MR_BYTES) == (512 << 10) + 2, "bytes of the refused one not charged");

	/* release: more than held leaves that kind alone, the others go */
	n[0] = 4;
	n[1] = 2;
	CHECK(ledger_release_n(l, mr, n, 2) == -EINVAL, "release 4 mr held 3");
	CHECK(usage_of(l, me, LEDGER_MR) == 3 && usage_of(l, g, LEDGER_MR_BYTES) == 512 << 10, "bytes released");
	n[0] = 3;
	n[1] = 512 << 10;
	CHECK(ledger_release_n(l, mr, n, 2) == 0, "release the rest");
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (k != LEDGER_QP)
			CHECK(usage_of(l, g, k) == 0 && usage_of(l, j, k) == 0 && usage_of(l, c, k) == 0,
			      "kind %d zero", k);
	{
		uint64_t total = 0, per[LEDGER_NKINDS];

		ledger_denial_counts(l, &total, per);
		CHECK(total == 4 && per[LEDGER_QP] == 1 && per[LEDGER_WR] == 1 && per[LEDGER_MR_BYTES] == 1 &&
			      per[LEDGER_MR] == 1,
		      "each refusal recorded once: %lu", (unsigned long)total);
	}
	CHECK(ledger_detach(l) == 0, "detach");
	CHECK(usage_of(l, g, LEDGER_QP) == 0, "detach gives back");
	ledger_close(l);
}

/* A handle in the caller's memory works like an allocated one, and ledger_close() leaves the memory alone. */
static void test_open_in(void)
{
	static unsigned char mem[LEDGER_HANDLE_SIZE + 16] __attribute__((aligned(64)));
	struct ledger_scope g = scope_global();
	struct ledger *l = NULL, *rw;

	fresh_ledger();
	rw = open_rw();
	CHECK(ledger_open_in(NULL, lpath, 0, &l) == -EINVAL, "no memory");
	CHECK(ledger_open_in(mem + 8, lpath, 0, &l) == -EINVAL, "misaligned");
	CHECK(ledger_open_in(mem, "/nonexistent/ledger", 0, &l) == -ENOENT, "missing ledger");
	CHECK(ledger_open_in(mem, lpath, 0, &l) == 0 && l == (struct ledger *)mem, "open in place: %s",
	      ledger_error());
	CHECK(!strcmp(ledger_path(l), lpath), "path %s", ledger_path(l));
	CHECK(ledger_attach(l, "") == 0, "attach");
	CHECK(ledger_reserve(l, LEDGER_CQ, 3, NULL) == 0, "reserve");
	CHECK(usage_of(rw, g, LEDGER_CQ) == 3, "seen by another handle");
	CHECK(ledger_detach(l) == 0, "detach");
	ledger_close(l);
	CHECK(usage_of(rw, g, LEDGER_CQ) == 0, "given back");
	ledger_close(rw);
}

static void test_fork_child_zero(void)
{
	struct ledger *l;
	struct ledger_scope g = scope_global();
	int status;
	pid_t pid;

	fresh_ledger();
	l = open_rw();
	CHECK(ledger_attach(l, NULL) == 0, "attach");
	CHECK(ledger_reserve(l, LEDGER_MR, 3, NULL) == 0, "3 mr");
	pid = fork();
	if (pid == 0) {
		int bad = 0;
		struct ledger_scope me = scope_pid(getpid());

		bad |= ledger_attach_child(l) != 0;
		bad |= usage_of(l, me, LEDGER_MR) != 0;
		bad |= ledger_release(l, LEDGER_MR, 1) != -EINVAL; /* holds nothing */
		bad |= ledger_reserve(l, LEDGER_MR, 1, NULL) != 0;
		bad |= usage_of(l, g, LEDGER_MR) != 4;
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	/* the child exited holding 1: gc gives it back, the parent keeps its 3 */
	{
		unsigned int n = 0;

		CHECK(ledger_gc(l, &n) == 0 && n == 1, "gc reclaimed %u", n);
	}
	CHECK(usage_of(l, g, LEDGER_MR) == 3, "global %lu", (unsigned long)usage_of(l, g, LEDGER_MR));
	ledger_detach(l);
	ledger_close(l);
}

/* A refusal by the preload's own RDMACTL_MAX_* limit, recorded without a reserve. */
static void test_note_denial(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ring_seen rs = { 0 };
	uint64_t total = 0, per[LEDGER_NKINDS], seq = 0;
	char msg[512], want[64];

	fresh_ledger();
	l = open_rw();
	CHECK(ledger_job_create(l, "envjob", NULL) == 0, "job");
	CHECK(ledger_note_denial(l, LEDGER_QP, 1, 1, 1, "RDMACTL_MAX_QP", &d) == -ENOTCONN, "not attached");
	CHECK(ledger_attach(l, "envjob") == 0, "attach: %s", ledger_error());
	CHECK(ledger_note_denial(l, LEDGER_NKINDS, 1, 1, 1, "X", NULL) == -EINVAL, "bad kind");
	CHECK(ledger_note_denial(l, LEDGER_QP, 1, 1, 1, "RDMACTL_MAX_QP", &d) == 0, "note qp");
	CHECK(d.scope.type == LEDGER_SCOPE_PROCESS && d.pid == getpid() && d.usage == 1 && d.limit == 1 &&
		      !strcmp(d.env, "RDMACTL_MAX_QP") && !strcmp(d.job, "envjob"),
	      "denial %d %s", d.scope.type, d.env);
	ledger_format_denial(&d, msg, sizeof(msg));
	snprintf(want, sizeof(want), "refused qp for pid %d (job envjob): 1/1 in use, ", (int)getpid());
	CHECK(!strncmp(msg, want, strlen(want)) && strstr(msg, "limit set by RDMACTL_MAX_QP") &&
		      !strstr(msg, "limit set by pid"),
	      "%s", msg);
	CHECK(ledger_note_denial(l, LEDGER_WR, 4096, 0, 64, "RDMACTL_MAX_WR", &d) == 0, "note wr");
	ledger_format_denial(&d, msg, sizeof(msg));
	CHECK(strstr(msg, "refused wr depth 4096 for pid ") &&
		      strstr(msg, "above the cap of 64, set by RDMACTL_MAX_WR"),
	      "%s", msg);
	/* nothing charged anywhere, but counted and in the ring like a ledger refusal */
	CHECK(usage_of(l, scope_job("envjob"), LEDGER_QP) == 0, "job usage");
	ledger_denial_counts(l, &total, per);
	CHECK(total == 2 && per[LEDGER_QP] == 1 && per[LEDGER_WR] == 1, "counts %lu", (unsigned long)total);
	ledger_foreach_denial(l, &seq, ring_cb, &rs);
	CHECK(rs.n == 2 && rs.last.d.kind == LEDGER_WR && !strcmp(rs.last.d.env, "RDMACTL_MAX_WR"), "ring n=%d", rs.n);
	/* a ledger refusal still names its scope, not a variable */
	CHECK(ledger_set_limit(l, &(struct ledger_scope){ .type = LEDGER_SCOPE_GLOBAL }, LEDGER_PD, 0) == 0, "set");
	CHECK(ledger_reserve(l, LEDGER_PD, 1, &d) == -EDQUOT && !d.env[0], "ledger denial has no env");
	/* per scope: the process's own limits (the variables) and the global one */
	CHECK(refused_of(l, (struct ledger_scope){ .type = LEDGER_SCOPE_GLOBAL }, LEDGER_PD) == 1, "global pd refused");
	CHECK(refused_of(l, scope_pid(getpid()), LEDGER_QP) == 1 && refused_of(l, scope_pid(getpid()), LEDGER_WR) == 1 &&
		      refused_of(l, scope_pid(getpid()), LEDGER_PD) == 0,
	      "process refused qp %lu", (unsigned long)refused_of(l, scope_pid(getpid()), LEDGER_QP));
	CHECK(refused_of(l, scope_job("envjob"), LEDGER_QP) == 0, "the job refused nothing");
	ledger_detach(l);
	ledger_close(l);
}

static int count_pid_cb(const struct ledger_proc_stat *ps, void *arg)
{
	if (ps->pid == getpid())
		(*(int *)arg)++;
	return 0;
}

static int slots_of_self(struct ledger *l)
{
	int n = 0;

	ledger_foreach_proc(l, count_pid_cb, &n);
	return n;
}

/*
 * After exec() the new image attaches again with the same pid and start time: the old image's slot (its
 * objects died with its uverbs fds) is taken over and its usage leaves every total. Two handles in one
 * process stand for the two images; the second case leaves the old slot mid-operation (a thread killed by
 * the exec) after charging the job but not the slot.
 */
static void test_exec_takeover(void)
{
	struct ledger *a, *b, *c, *other;
	struct ledger_scope g = scope_global(), j = scope_job("exec");
	struct sum sm = { .jobname = "exec" };
	int status;
	pid_t pid;

	fresh_ledger();
	a = open_rw();
	CHECK(ledger_job_create(a, "exec", NULL) == 0, "job");
	CHECK(ledger_attach(a, "exec") == 0, "attach: %s", ledger_error());
	CHECK(ledger_reserve(a, LEDGER_QP, 3, NULL) == 0 && ledger_reserve(a, LEDGER_MR_BYTES, 4096, NULL) == 0,
	      "old image charges");
	/* another process of the job keeps its usage through our exec */
	pid = fork();
	if (pid == 0) {
		if (ledger_open(lpath, 0, &other) || ledger_attach(other, "exec") ||
		    ledger_reserve(other, LEDGER_QP, 2, NULL))
			_exit(3);
		pause();
		_exit(0);
	}
	for (int i = 0; i < 5000 && usage_of(a, g, LEDGER_QP) != 5; i++)
		usleep(1000);
	CHECK(usage_of(a, g, LEDGER_QP) == 5, "other process charged");
	CHECK(slots_of_self(a) == 1, "one slot before exec");

	b = open_rw();
	CHECK(ledger_attach(b, "exec") == 0, "attach after exec: %s", ledger_error());
	CHECK(slots_of_self(b) == 1, "one slot after exec: %d", slots_of_self(b));
	CHECK(b->slot >= 0 && ALOAD(&b->use->slots[b->slot].usage[LEDGER_QP]) == 0, "new image starts at zero");
	CHECK(usage_of(b, g, LEDGER_QP) == 2 && usage_of(b, j, LEDGER_QP) == 2, "old usage released: global %lu",
	      (unsigned long)usage_of(b, g, LEDGER_QP));
	CHECK(usage_of(b, g, LEDGER_MR_BYTES) == 0 && usage_of(b, j, LEDGER_MR_BYTES) == 0, "old bytes released");
	CHECK(ledger_reserve(b, LEDGER_QP, 1, NULL) == 0, "new image charges");
	CHECK(usage_of(b, g, LEDGER_QP) == 3 && usage_of(b, j, LEDGER_QP) == 3, "totals");

	/* exec while another thread was inside an operation: the takeover recounts */
	__atomic_fetch_add(&b->use->slots[b->slot].inflight, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&b->use->jobs[b->job].total[LEDGER_QP], 7, __ATOMIC_SEQ_CST);
	c = open_rw();
	CHECK(ledger_attach(c, "exec") == 0, "attach after 2nd exec: %s", ledger_error());
	CHECK(slots_of_self(c) == 1, "one slot after 2nd exec");
	CHECK(usage_of(c, g, LEDGER_QP) == 2 && usage_of(c, j, LEDGER_QP) == 2, "recounted: job %lu",
	      (unsigned long)usage_of(c, j, LEDGER_QP));
	CHECK(__atomic_load_n(&c->use->frozen, __ATOMIC_SEQ_CST) == 0, "unfrozen");
	ledger_foreach_proc(c, sum_cb, &sm);
	CHECK(sm.all[LEDGER_QP] == usage_of(c, g, LEDGER_QP) && sm.job[LEDGER_QP] == usage_of(c, j, LEDGER_QP),
	      "totals are the sum of live slots");
	/* the gc leaves the live slots alone */
	{
		unsigned int n = 9;

		CHECK(ledger_gc(c, &n) == 0 && n == 0, "gc reclaimed %u", n);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CHECK(ledger_detach(c) == 0, "detach");
	ledger_close(a); /* the old images' handles: unmapped, never detached (their slots are not theirs) */
	ledger_close(b);
	ledger_close(c);
}


static void test_tracked_totals(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ledger_scope g = scope_global(), me = scope_pid(getpid());
	uint64_t *tot;

	fresh_ledger();
	l = open_rw();
	CHECK(ledger_attach(l, NULL) == 0, "attach");
	tot = &l->use->global_total[LEDGER_QP];
	CHECK(ledger_reserve(l, LEDGER_QP, 3, NULL) == 0, "3 qp");
	CHECK(ALOAD(tot) == 0 && usage_of(l, g, LEDGER_QP) == 3, "untracked: total %lu, shown %lu",
	      (unsigned long)ALOAD(tot), (unsigned long)usage_of(l, g, LEDGER_QP));
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, 5) == 0, "global limit: %s", ledger_error());
	CHECK(ALOAD(tot) == 3 && usage_of(l, g, LEDGER_QP) == 3, "recounted when the limit came: %lu",
	      (unsigned long)ALOAD(tot));
	CHECK(__atomic_load_n(&l->use->frozen, __ATOMIC_SEQ_CST) == 0, "unfrozen");
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && ledger_reserve_obj(l, LEDGER_QP, 16, NULL) == 0,
	      "qp 4, 5");
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_GLOBAL &&
		      d.usage == 5 && d.limit == 5,
	      "qp 6 refused by the global limit");
	CHECK(ALOAD(tot) == 5, "total 5");
	CHECK(ledger_release_obj(l, LEDGER_QP, 0) == 0 && ALOAD(tot) == 4, "released into the total");
	/* lifted: no longer kept, the slots still tell */
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, LEDGER_UNLIMITED) == 0, "lift");
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && ALOAD(tot) == 4 && usage_of(l, g, LEDGER_QP) == 5,
	      "untracked again");
	/* and back: recounted again */
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, 6) == 0 && ALOAD(tot) == 5, "recounted: %lu", (unsigned long)ALOAD(tot));
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == -EDQUOT,
	      "the new limit holds");

	/* an MR and its bytes in one operation; a WR cap and the pid scope */
	CHECK(ledger_set_limit(l, &g, LEDGER_MR_BYTES, 1000) == 0, "global bytes");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 600, NULL) == 0, "mr 600");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 600, &d) == -EDQUOT && d.kind == LEDGER_MR_BYTES &&
		      d.scope.type == LEDGER_SCOPE_GLOBAL,
	      "mr 600 more refused by bytes");
	CHECK(usage_of(l, me, LEDGER_MR) == 1 && usage_of(l, g, LEDGER_MR) == 1 && usage_of(l, g, LEDGER_MR_BYTES) == 600,
	      "nothing of the refused one stays");
	CHECK(ledger_release_obj(l, LEDGER_MR, 600) == 0 && usage_of(l, g, LEDGER_MR_BYTES) == 0 &&
		      usage_of(l, me, LEDGER_MR) == 0,
	      "mr released with its bytes");
	CHECK(ledger_release_obj(l, LEDGER_MR, 600) == -EINVAL, "not held");
	CHECK(ledger_set_limit(l, &me, LEDGER_WR, 8) == 0, "pid wr cap");
	CHECK(ledger_reserve_obj(l, LEDGER_SRQ, 9, &d) == -EDQUOT && d.kind == LEDGER_WR &&
		      d.scope.type == LEDGER_SCOPE_PROCESS && d.limit == 8,
	      "srq of depth 9 refused by the pid's cap");
	CHECK(ledger_reserve_obj(l, LEDGER_SRQ, 8, NULL) == 0 && usage_of(l, me, LEDGER_SRQ) == 1, "depth 8");
	CHECK(ledger_reserve_obj(l, LEDGER_WR, 1, NULL) == -EINVAL &&
		      ledger_reserve_obj(l, LEDGER_MR_BYTES, 1, NULL) == -EINVAL &&
		      ledger_reserve_obj(l, LEDGER_NKINDS, 1, NULL) == -EINVAL,
	      "not an object kind");
	ledger_detach(l);
	ledger_close(l);
}

/*
 * The interceptor's operation in its fast shape (the slot without a pid limit and one more scope: a job under
 * run) gives the books and the refusals of the general way: a refusal by the job's count or by its bytes
 * leaves nothing charged anywhere, and a plan that is not of that shape (a pid limit) goes the general way.
 */
static void test_fast_shape(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ledger_scope j = scope_job("fast"), me = scope_pid(getpid());
	uint64_t lim[LEDGER_NKINDS];
	int k;

	fresh_ledger();
	l = open_rw();
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_MR] = 2;
	lim[LEDGER_MR_BYTES] = 1000;
	lim[LEDGER_PD] = 1;
	CHECK(ledger_job_create(l, "fast", lim) == 0, "job: %s", ledger_error());
	CHECK(ledger_attach(l, "fast") == 0, "attach");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 600, NULL) == 0, "mr 600");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 600, &d) == -EDQUOT && d.kind == LEDGER_MR_BYTES &&
		      d.scope.type == LEDGER_SCOPE_JOB && d.usage == 600 && d.limit == 1000,
	      "the job's bytes refuse the second (kind %d, scope %d, usage %lu)", (int)d.kind, (int)d.scope.type,
	      (unsigned long)d.usage);
	CHECK(usage_of(l, me, LEDGER_MR) == 1 && usage_of(l, j, LEDGER_MR) == 1 && usage_of(l, me, LEDGER_MR_BYTES) == 600 &&
		      usage_of(l, j, LEDGER_MR_BYTES) == 600,
	      "nothing of the refused one stays (count and bytes, slot and job)");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 100, NULL) == 0, "mr 100");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 1, &d) == -EDQUOT && d.kind == LEDGER_MR &&
		      d.scope.type == LEDGER_SCOPE_JOB && d.usage == 2 && d.limit == 2,
	      "the job's count refuses the third");
	CHECK(usage_of(l, me, LEDGER_MR) == 2 && usage_of(l, j, LEDGER_MR) == 2 && usage_of(l, j, LEDGER_MR_BYTES) == 700,
	      "and leaves nothing either");
	CHECK(ledger_release_obj(l, LEDGER_MR, 600) == 0 && ledger_release_obj(l, LEDGER_MR, 100) == 0 &&
		      usage_of(l, me, LEDGER_MR) == 0 && usage_of(l, j, LEDGER_MR) == 0 &&
		      usage_of(l, me, LEDGER_MR_BYTES) == 0 && usage_of(l, j, LEDGER_MR_BYTES) == 0,
	      "given back on both scopes");
	CHECK(ledger_release_obj(l, LEDGER_MR, 0) == -EINVAL && usage_of(l, me, LEDGER_MR) == 0, "more than held");
	CHECK(ledger_reserve_obj(l, LEDGER_PD, 0, NULL) == 0 && ledger_reserve_obj(l, LEDGER_PD, 0, &d) == -EDQUOT &&
		      d.scope.type == LEDGER_SCOPE_JOB && usage_of(l, me, LEDGER_PD) == 1,
	      "pd: the job's limit of 1");
	CHECK(ledger_release_obj(l, LEDGER_PD, 0) == 0 && usage_of(l, j, LEDGER_PD) == 0, "pd given back");
	/* a pid limit: not the fast shape, the general way refuses by it */
	CHECK(ledger_set_limit(l, &me, LEDGER_CQ, 1) == 0, "pid limit on cq");
	CHECK(ledger_reserve_obj(l, LEDGER_CQ, 0, NULL) == 0, "cq 1, through the plan");
	CHECK(ledger_reserve_obj(l, LEDGER_CQ, 0, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_PROCESS, "cq 2 refused");
	CHECK(ledger_release_obj(l, LEDGER_CQ, 0) == 0 && usage_of(l, me, LEDGER_CQ) == 0, "cq given back");
	ledger_detach(l);
	CHECK(!l->fast_slot, "detached: no fast operation");
	CHECK(ledger_reserve_obj(l, LEDGER_CQ, 0, NULL) == -ENOTCONN, "and none after");
	ledger_close(l);
}

/* ---- grants ------------------------------------------------------------------------------------ */

static uint64_t grant_of(struct ledger *l, enum ledger_kind k)
{
	return ALOAD(&l->use->slots[l->slot].grant[k]);
}

/* A child of the test that holds n QPs of job "g" until told to go (a byte on its pipe), then exits. */
static pid_t holder(int n, int *release_fd)
{
	int go[2], ready[2];
	char c;
	pid_t pid;

	if (pipe(go) || pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct ledger *l;
		int i, ok = 1;

		close(go[1]);
		close(ready[0]);
		if (ledger_open(lpath, 0, &l) || ledger_attach(l, "g"))
			_exit(3);
		for (i = 0; i < n; i++)
			ok &= ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0;
		c = ok ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		for (i = 0; i < n; i++)
			ledger_release_obj(l, LEDGER_QP, 0);
		ledger_detach(l);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1 || c != 'y')
		pid = -1;
	close(ready[0]);
	*release_fd = go[1];
	return pid;
}

/*
 * Allowances: a create within a grant moves only the slot's usage; the totals carry grants (usage plus
 * allowance); another process is refused only once the allowances are taken back; every limit set takes
 * them back; a limit set below usage gives back each release at once; a recount and a detach leave totals
 * equal to what is in use.
 */
static void test_grants(void)
{
	struct ledger *l;
	struct ledger_denial d;
	struct ledger_scope j = scope_job("g");
	uint64_t lim[LEDGER_NKINDS], *tot;
	int k, i, fd = -1, status, jx;
	pid_t pid;

	fresh_ledger();
	l = open_rw();
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_QP] = 200;
	CHECK(ledger_job_create(l, "g", lim) == 0, "job: %s", ledger_error());
	CHECK(ledger_attach(l, "g") == 0, "attach");
	jx = l->job;
	tot = &l->use->jobs[jx].total[LEDGER_QP];
	/* the first create raises the grant by one and an allowance: a quarter of the room, at most 32 */
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0, "qp 1");
	CHECK(grant_of(l, LEDGER_QP) == 33 && ALOAD(tot) == 33 && usage_of(l, j, LEDGER_QP) == 1,
	      "grant %lu, total %lu, usage %lu", (unsigned long)grant_of(l, LEDGER_QP), (unsigned long)ALOAD(tot),
	      (unsigned long)usage_of(l, j, LEDGER_QP));
	for (i = 1; i < 33; i++)
		CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0, "qp %d", i + 1);
	CHECK(grant_of(l, LEDGER_QP) == 33 && ALOAD(tot) == 33, "32 more within the grant: the total did not move");
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && grant_of(l, LEDGER_QP) == 34 + 32 &&
		      ALOAD(tot) == 66,
	      "the 34th raises it again: grant %lu", (unsigned long)grant_of(l, LEDGER_QP));
	/* releases keep up to twice the allowance, then give back down to one */
	for (i = 0; i < 34; i++)
		CHECK(ledger_release_obj(l, LEDGER_QP, 0) == 0, "release %d", i);
	CHECK(usage_of(l, j, LEDGER_QP) == 0 && grant_of(l, LEDGER_QP) <= 64 && ALOAD(tot) == grant_of(l, LEDGER_QP),
	      "after 34 releases: usage 0, grant %lu, total %lu", (unsigned long)grant_of(l, LEDGER_QP),
	      (unsigned long)ALOAD(tot));

	/* another process of the job is refused only once this one's allowance is taken back */
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && grant_of(l, LEDGER_QP) > 1, "1 held, with an allowance");
	pid = holder(199, &fd);
	CHECK(pid > 0, "a second process of the job holds the 199 others (allowances taken back for it)");
	CHECK(grant_of(l, LEDGER_QP) == 1 && ALOAD(tot) == 200, "our grant: %lu, total %lu",
	      (unsigned long)grant_of(l, LEDGER_QP), (unsigned long)ALOAD(tot));
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, &d) == -EDQUOT && d.scope.type == LEDGER_SCOPE_JOB &&
		      d.usage == 200 && d.limit == 200,
	      "the 201st refused: %lu/%lu", (unsigned long)d.usage, (unsigned long)d.limit);
	CHECK(usage_of(l, j, LEDGER_QP) == 200 && slots_sum(l, jx, NULL, LEDGER_QP, true) == ALOAD(tot),
	      "total = the grants");

	/* a limit set below usage: each release is given back at once, the limit holds */
	CHECK(ledger_set_limit(l, &j, LEDGER_QP, 150) == 0, "job limit 150: %s", ledger_error());
	CHECK(ALOAD(tot) == 200 && slots_sum(l, jx, NULL, LEDGER_QP, true) == 200, "recounted: %lu",
	      (unsigned long)ALOAD(tot));
	if (write(fd, "x", 1) != 1)
		CHECK(0, "tell the holder to go");
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "holder gave back and detached");
	close(fd);
	CHECK(ALOAD(tot) == 1 && usage_of(l, j, LEDGER_QP) == 1, "its releases and detach gave it all back: %lu",
	      (unsigned long)ALOAD(tot));
	for (i = 1; i < 150; i++)
		CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0, "qp %d under 150", i + 1);
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, &d) == -EDQUOT && d.usage == 150 && d.limit == 150,
	      "the 151st refused: %lu", (unsigned long)d.usage);
	/* every limit set takes the allowances back (a raise too: the next create raises the grant again) */
	CHECK(ledger_set_limit(l, &j, LEDGER_QP, 1000) == 0 && grant_of(l, LEDGER_QP) == 150 && ALOAD(tot) == 150,
	      "limit raised: grant %lu", (unsigned long)grant_of(l, LEDGER_QP));
	/* for a second after a shared scope's refusal the kind is tight: raises take what is missing only */
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && grant_of(l, LEDGER_QP) == 151, "tight: no allowance");
	CHECK(ledger_release_obj(l, LEDGER_QP, 0) == 0 && grant_of(l, LEDGER_QP) == 150, "tight: a release keeps none");
	ASTORE(&l->use->tight_until[LEDGER_QP], 0); /* the second has passed */
	CHECK(ledger_reserve_obj(l, LEDGER_QP, 0, NULL) == 0 && grant_of(l, LEDGER_QP) > 151, "an allowance again");
	/* a gc's recount: totals back to what is in use */
	CHECK(ledger_gc(l, NULL) == 0 && ALOAD(tot) > 151, "a gc without a recount leaves allowances");
	{
		int e = ledger_gc_lock(l, 1000);

		CHECK(e == 0 && ledger_recount(l) == 0, "recount");
		ledger_gc_unlock(l);
	}
	CHECK(ALOAD(tot) == 151 && grant_of(l, LEDGER_QP) == 151, "recounted: total %lu", (unsigned long)ALOAD(tot));
	/* no limit on a kind: a grant no total carries, kept by no total */
	CHECK(ledger_reserve_obj(l, LEDGER_CQ, 0, NULL) == 0 && grant_of(l, LEDGER_CQ) == GRANT_UNLIMITED &&
		      ALOAD(&l->use->jobs[jx].total[LEDGER_CQ]) == 0 && usage_of(l, j, LEDGER_CQ) == 1,
	      "cq without a limit");
	CHECK(ledger_release_obj(l, LEDGER_CQ, 0) == 0 && ledger_release_obj(l, LEDGER_CQ, 0) == -EINVAL &&
		      usage_of(l, j, LEDGER_CQ) == 0,
	      "cq given back, and not twice");
	/* MR bytes: the same, in bytes */
	CHECK(ledger_set_limit(l, &j, LEDGER_MR_BYTES, 1 << 20) == 0, "bytes limit");
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 4096, NULL) == 0 && grant_of(l, LEDGER_MR_BYTES) > 4096 &&
		      grant_of(l, LEDGER_MR_BYTES) <= (1 << 20) &&
		      ALOAD(&l->use->jobs[jx].total[LEDGER_MR_BYTES]) == grant_of(l, LEDGER_MR_BYTES),
	      "bytes grant %lu", (unsigned long)grant_of(l, LEDGER_MR_BYTES));
	CHECK(ledger_reserve_obj(l, LEDGER_MR, 1 << 20, &d) == -EDQUOT && d.kind == LEDGER_MR_BYTES &&
		      d.usage == 4096 && usage_of(l, j, LEDGER_MR) == 1,
	      "1 MiB more refused, described with the usage (%lu), nothing left charged", (unsigned long)d.usage);
	CHECK(ledger_release_obj(l, LEDGER_MR, 4096) == 0 && usage_of(l, j, LEDGER_MR_BYTES) == 0, "mr given back");
	/* detach: every grant given back */
	CHECK(ledger_detach(l) == 0, "detach");
	CHECK(ALOAD(tot) == 0 && ALOAD(&l->use->jobs[jx].total[LEDGER_MR_BYTES]) == 0, "detached: totals %lu, %lu",
	      (unsigned long)ALOAD(tot), (unsigned long)ALOAD(&l->use->jobs[jx].total[LEDGER_MR_BYTES]));
	ledger_close(l);
}

/* A death in the middle of an operation (in-flight counter left at 1) is repaired by a recount. */

int main(void)
{
	if (fixture_begin())
		return 1;
	RUN(test_basic);
	RUN(test_scopes);
	RUN(test_reserve_n);
	RUN(test_tracked_totals);
	RUN(test_fast_shape);
	RUN(test_grants);
	RUN(test_limit_cache);
	RUN(test_open_in);
	RUN(test_fork_child_zero);
	RUN(test_note_denial);
	RUN(test_exec_takeover);
	if (fixture_end())
		return 1;
	return unit_done();
}
