// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of lib/ledger: a budget is exact however many processes start at once. N processes (forked,
 * each attached as the interceptor attaches) are released together and create through the interceptor's
 * operation, under a job's, a cgroup's or the global limit: a creation is refused only when what is in use
 * fills the limit (allowances are invisible), a refusal names usage, and the ledger's usage is what was
 * created.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* The slot's cgroup is set by hand (the host's test runner sits in "/"), as test_ledger does. */
#include "ledger/internal.h"

#include "unit.h"

static char dir[64];
static char lpath[128];

#define MAXN 1200
#define MR_UNIT 4096ull

enum where { IN_JOB, IN_CGROUP, IN_GLOBAL };

/* What each process saw, in memory shared with the parent. */
/* Round 2 of start_together(): the QP limit as it was (full), the other kinds' limits far above the asks. */
static bool keep_qp;

struct seen {
	int first;               /* 0 created, 1 refused, -1 error */
	uint64_t deny_usage, deny_limit;
	int deny_scope;
	unsigned int made[LEDGER_NKINDS]; /* objects created in the second round (MR bytes under LEDGER_MR_BYTES) */
	unsigned int refused2, refused2_qp;
	int err;
};

static struct seen *seen;

static const char *where_name(enum where w)
{
	return w == IN_JOB ? "job" : w == IN_CGROUP ? "cgroup" : "global";
}

static struct ledger_scope scope_of(enum where w)
{
	struct ledger_scope s = { .type = w == IN_JOB ? LEDGER_SCOPE_JOB :
					   w == IN_CGROUP ? LEDGER_SCOPE_CGROUP : LEDGER_SCOPE_GLOBAL };

	if (w == IN_JOB)
		snprintf(s.name, sizeof(s.name), "start");
	else if (w == IN_CGROUP)
		snprintf(s.name, sizeof(s.name), "/tenant");
	return s;
}

/* The second round's objects of process i: k of QP, CQ and MR (with bytes), in an order of its own. */
static unsigned int round2_count(int i)
{
	return 1 + (unsigned int)(i * 7 % 5);
}

static enum ledger_kind round2_kind(int i, unsigned int j)
{
	static const enum ledger_kind k[3] = { LEDGER_QP, LEDGER_CQ, LEDGER_MR };

	return k[(unsigned int)(i * 13 + (int)j) % 3];
}

static uint64_t round2_bytes(int i, unsigned int j)
{
	return MR_UNIT * (1 + (unsigned int)(i + (int)j) % 16);
}

/*
 * Process i: attach, say it is ready, wait for the start (EOF on go), create one QP, say so, wait for the
 * second start, create its second round, say so, wait for the end; then detach (even i) or just exit, as a
 * killed process would (odd i).
 */
static void child(int i, enum where w, int ready, int go, int go2, int end)
{
	struct seen *me = &seen[i];
	struct ledger_denial d;
	struct ledger *l = NULL;
	unsigned int j, n;
	char c;
	int err;

	if (ledger_open(lpath, 0, &l) || ledger_attach(l, w == IN_JOB ? "start" : NULL)) {
		me->err = 1;
		_exit(1);
	}
	if (w == IN_CGROUP) {
		snprintf(l->cgroup, sizeof(l->cgroup), "/tenant/rank%d", i % 7);
		snprintf(l->use->slots[l->slot].cgroup, sizeof(l->use->slots[l->slot].cgroup), "%s", l->cgroup);
		__atomic_store_n(&l->view_gen, 0, __ATOMIC_RELAXED);
	}
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 0)
		_exit(1);
	err = ledger_reserve_obj(l, LEDGER_QP, 0, &d);
	me->first = err == 0 ? 0 : err == -EDQUOT ? 1 : -1;
	if (err == -EDQUOT) {
		me->deny_usage = d.usage;
		me->deny_limit = d.limit;
		me->deny_scope = d.scope.type;
	}
	if (write(ready, "r", 1) != 1 || read(go2, &c, 1) != 0)
		_exit(1);
	n = round2_count(i);
	for (j = 0; j < n; j++) {
		enum ledger_kind k = round2_kind(i, j);
		uint64_t bytes = k == LEDGER_MR ? round2_bytes(i, j) : 0;

		err = ledger_reserve_obj(l, k, bytes, &d);
		if (err == 0) {
			me->made[k]++;
			if (bytes)
				me->made[LEDGER_MR_BYTES] += (unsigned int)(bytes / MR_UNIT);
		} else if (err == -EDQUOT && k == LEDGER_QP && keep_qp) {
			me->refused2_qp++;
		} else if (err == -EDQUOT) {
			me->refused2++;
			if (getenv("BUDGET_DEBUG"))
				fprintf(stderr, "# round2 refused %s by %d: %lu/%lu (+%lu)\n", ledger_kind_name(d.kind),
					d.scope.type, (unsigned long)d.usage, (unsigned long)d.limit, (unsigned long)d.amount);
		} else {
			me->err = 2;
		}
	}
	if (write(ready, "r", 1) != 1 || read(end, &c, 1) != 0)
		_exit(1);
	if (i % 2 == 0)
		ledger_detach(l);
	_exit(0);
}

static void wait_for(int fd, int n)
{
	char buf[256];
	int got = 0;

	while (got < n) {
		ssize_t r = read(fd, buf, (size_t)(n - got) < sizeof(buf) ? (size_t)(n - got) : sizeof(buf));

		if (r <= 0)
			break;
		got += (int)r;
	}
}

/*
 * n processes under a limit of qp_limit QPs on scope w (the second round's kinds limited to what all of
 * them can ask, room10 times n); refusals expected in the first round: n - qp_limit when positive, else 0,
 * and none in the second when its limits hold what is asked.
 */
static void start_together(int n, enum where w, uint64_t qp_limit, uint64_t room10)
{
	struct ledger_scope sc = scope_of(w);
	struct ledger *l = NULL;
	int ready[2], go[2], go2[2], end[2], i, k, refused = 0, made = 0, errs = 0, badmsg = 0, refused2 = 0;
	uint64_t want[LEDGER_NKINDS] = { 0 }, got[LEDGER_NKINDS] = { 0 }, expect;
	struct ledger_scope_stat st;
	pid_t pids[MAXN];
	char upath[sizeof(lpath) + 8];

	snprintf(upath, sizeof(upath), "%s.usage", lpath);
	unlink(lpath);
	unlink(upath);
	CHECK(ledger_init(lpath) == 0, "init: %s", ledger_error());
	CHECK(ledger_open(lpath, LEDGER_POLICY_RW, &l) == 0, "open: %s", ledger_error());
	if (!l)
		return;
	if (w == IN_JOB) {
		uint64_t lim[LEDGER_NKINDS];

		for (k = 0; k < LEDGER_NKINDS; k++)
			lim[k] = LEDGER_UNLIMITED;
		CHECK(ledger_job_create(l, "start", lim) == 0, "job: %s", ledger_error());
	}
	CHECK(ledger_set_limit(l, &sc, LEDGER_QP, qp_limit) == 0, "qp limit: %s", ledger_error());
	memset(seen, 0, sizeof(*seen) * MAXN);
	if (pipe(ready) || pipe(go) || pipe(go2) || pipe(end)) {
		CHECK(0, "pipes");
		return;
	}
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			close(go2[1]);
			close(end[1]);
			child(i, w, ready[1], go[0], go2[0], end[0]);
		}
		if (pids[i] < 0) {
			CHECK(0, "fork %d: %s", i, strerror(errno));
			n = i;
			break;
		}
	}
	close(ready[1]);
	close(go[0]);
	close(go2[0]);
	close(end[0]);
	wait_for(ready[0], n);
	close(go[1]); /* all at once */
	wait_for(ready[0], n);

	expect = (uint64_t)n > qp_limit ? (uint64_t)n - qp_limit : 0;
	for (i = 0; i < n; i++) {
		refused += seen[i].first == 1;
		made += seen[i].first == 0;
		errs += seen[i].first < 0 || seen[i].err;
		/* a refusal names the refusing scope's usage, which then fills the limit (never grants above it) */
		if (seen[i].first == 1 && (seen[i].deny_limit != qp_limit || seen[i].deny_usage > qp_limit ||
					   seen[i].deny_usage + 1 <= qp_limit || seen[i].deny_scope != (int)sc.type))
			badmsg++;
	}
	CHECK(errs == 0 && (uint64_t)refused == expect && made + refused == n,
	      "%s, %d processes at once under qp %lu: %d created, %d refused (exactly %lu expected), %d errors",
	      where_name(w), n, (unsigned long)qp_limit, made, refused, (unsigned long)expect, errs);
	if (getenv("BUDGET_DEBUG"))
		for (i = 0; i < n; i++)
			if (seen[i].first == 1)
				printf("# refused %d: %lu/%lu scope %d\n", i, (unsigned long)seen[i].deny_usage,
				       (unsigned long)seen[i].deny_limit, seen[i].deny_scope);
	CHECK(badmsg == 0, "%s, %d processes: %d refusals named a usage that does not fill the limit", where_name(w), n,
	      badmsg);
	CHECK(ledger_get_scope(l, &sc, &st) == 0 && st.usage[LEDGER_QP] == (uint64_t)made,
	      "%s usage %lu = the %d QPs created", where_name(w), (unsigned long)st.usage[LEDGER_QP], made);

	/* the second round: limits on every kind it uses, room10 times the processes (more than they ask) */
	for (i = 0; i < n; i++) {
		unsigned int j;

		for (j = 0; j < round2_count(i); j++) {
			enum ledger_kind kk = round2_kind(i, j);

			want[kk]++;
			if (kk == LEDGER_MR)
				want[LEDGER_MR_BYTES] += round2_bytes(i, j);
		}
	}
	CHECK(ledger_set_limit(l, &sc, LEDGER_QP, keep_qp ? qp_limit : (uint64_t)made + room10 * (uint64_t)n) == 0 &&
		      ledger_set_limit(l, &sc, LEDGER_CQ, room10 * (uint64_t)n) == 0 &&
		      ledger_set_limit(l, &sc, LEDGER_MR, room10 * (uint64_t)n) == 0 &&
		      ledger_set_limit(l, &sc, LEDGER_MR_BYTES,
				       keep_qp ? 1ull << 30 : want[LEDGER_MR_BYTES] + room10 * MR_UNIT) == 0,
	      "second round's limits: %s", ledger_error());
	close(go2[1]);
	wait_for(ready[0], n);
	{
		uint64_t left = qp_limit > (uint64_t)made ? qp_limit - (uint64_t)made : 0, rq = 0;

		for (i = 0; i < n; i++)
			rq += seen[i].refused2_qp;
		if (keep_qp)
			CHECK(rq == (want[LEDGER_QP] > left ? want[LEDGER_QP] - left : 0),
			      "%s, %d processes, second round's QPs under the full limit: %lu refused of %lu asked, %lu left",
			      where_name(w), n, (unsigned long)rq, (unsigned long)want[LEDGER_QP], (unsigned long)left);
		if (keep_qp)
			want[LEDGER_QP] -= rq;
	}
	for (i = 0; i < n; i++) {
		refused2 += (int)seen[i].refused2;
		errs += seen[i].err != 0;
		for (k = 0; k < LEDGER_NKINDS; k++)
			got[k] += seen[i].made[k];
	}
	CHECK(refused2 == 0 && errs == 0 && got[LEDGER_QP] == want[LEDGER_QP] && got[LEDGER_CQ] == want[LEDGER_CQ] &&
		      got[LEDGER_MR] == want[LEDGER_MR] && got[LEDGER_MR_BYTES] * MR_UNIT == want[LEDGER_MR_BYTES],
	      "%s, %d processes, second round under limits that hold it: %d refused, %d errors", where_name(w), n,
	      refused2, errs);
	CHECK(ledger_get_scope(l, &sc, &st) == 0 && st.usage[LEDGER_QP] == (uint64_t)made + got[LEDGER_QP] &&
		      st.usage[LEDGER_CQ] == got[LEDGER_CQ] && st.usage[LEDGER_MR] == got[LEDGER_MR] &&
		      st.usage[LEDGER_MR_BYTES] == got[LEDGER_MR_BYTES] * MR_UNIT,
	      "%s usage after the second round: qp %lu cq %lu mr %lu bytes %lu", where_name(w),
	      (unsigned long)st.usage[LEDGER_QP], (unsigned long)st.usage[LEDGER_CQ], (unsigned long)st.usage[LEDGER_MR],
	      (unsigned long)st.usage[LEDGER_MR_BYTES]);

	/* exit together: half detach, half just die; what is left is given back by the gc */
	close(end[1]);
	for (i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	close(ready[0]);
	CHECK(ledger_gc(l, NULL) == 0, "gc");
	CHECK(ledger_get_scope(l, &sc, &st) == 0 && st.usage[LEDGER_QP] == 0 && st.usage[LEDGER_MR_BYTES] == 0 &&
		      st.nprocs == 0,
	      "%s: after all exited, usage qp %lu mr_bytes %lu, %u processes", where_name(w),
	      (unsigned long)st.usage[LEDGER_QP], (unsigned long)st.usage[LEDGER_MR_BYTES], st.nprocs);
	CHECK(ALOAD(w == IN_JOB ? &l->use->jobs[0].total[LEDGER_QP] :
			    w == IN_CGROUP ? &l->use->cg_total[0][LEDGER_QP] : &l->use->global_total[LEDGER_QP]) == 0,
	      "%s: its total back to 0", where_name(w));
	ledger_close(l);
}

/*
 * Under a job's budget, as `rdmactl run` starts an MPI job: limits N+1, 10N, and N-10 (exactly 10 refused);
 * 1100 processes: more than the 1024 slots ledgers had before their capacity was set at init.
 */
static void test_job_start(void)
{
	start_together(1100, IN_JOB, 1101, 10);
	start_together(1100, IN_JOB, 1090, 10);
	start_together(100, IN_JOB, 101, 10);
	start_together(100, IN_JOB, 1000, 10);
	start_together(100, IN_JOB, 90, 10);
	start_together(300, IN_JOB, 301, 10);
	start_together(300, IN_JOB, 3000, 10);
	start_together(300, IN_JOB, 290, 10);
}

/* The same under a cgroup's limit (processes in seven cgroups below it) and under the global limit. */
/* As the lab runs a job: round 2 under the QP limit left full, MRs with bytes and CQs far below theirs. */
static void test_job_full_qp(void)
{
	keep_qp = true;
	start_together(300, IN_JOB, 301, 20);
	start_together(100, IN_JOB, 101, 20);
	keep_qp = false;
}

static void test_cgroup_start(void)
{
	start_together(100, IN_CGROUP, 101, 10);
	start_together(300, IN_CGROUP, 3000, 10);
	start_together(300, IN_CGROUP, 290, 10);
}

/*
 * A ledger made for 8 processes: 8 attach, the 9th is refused a slot with a message that names the fix,
 * and the capacity says so; a slot given back is taken again.
 */
static void test_capacity(void)
{
	struct ledger *ls[9] = { 0 }, *l = NULL;
	unsigned int used = 0;
	pid_t pid;
	int i, status, fd[2];

	unlink(lpath);
	CHECK(ledger_init_procs(lpath, 0) == -EINVAL && ledger_init_procs(lpath, LEDGER_PROCS_MAX + 1) == -EINVAL,
	      "0 and too many slots refused: %s", ledger_error());
	CHECK(ledger_init_procs(lpath, 8) == 0, "init 8: %s", ledger_error());
	CHECK(ledger_open(lpath, 0, &l) == 0 && ledger_capacity(l, &used) == 8 && used == 0, "8 slots, none used");
	/* one process attaches once: eight children hold a slot each, this process is the ninth */
	if (pipe(fd))
		return;
	for (i = 0; i < 8; i++) {
		pid = fork();
		if (pid == 0) {
			char c;

			close(fd[1]);
			if (ledger_open(lpath, 0, &ls[0]) || ledger_attach(ls[0], NULL))
				_exit(1);
			if (read(fd[0], &c, 1) != 0)
				_exit(2);
			_exit(0);
		}
	}
	close(fd[0]);
	for (i = 0; i < 200 && ledger_capacity(l, &used) && used < 8; i++)
		usleep(10000);
	CHECK(used == 8, "8 of 8 in use: %u", used);
	CHECK(ledger_attach(l, NULL) == -ENOSPC && strstr(ledger_error(), "all 8 process slots") &&
		      strstr(ledger_error(), "quota init --procs"),
	      "the ninth: %s", ledger_error());
	/* what the interceptor then asks: do limits apply to it (then it refuses every creation) */
	CHECK(!ledger_limits_apply(l, NULL) && ledger_limits_apply(l, "somejob"), "no limit applies; a job's would");
	{
		struct ledger *lw = NULL;
		struct ledger_scope g = { .type = LEDGER_SCOPE_GLOBAL };

		CHECK(ledger_open(lpath, LEDGER_POLICY_RW, &lw) == 0 && ledger_set_limit(lw, &g, LEDGER_MR, 5) == 0,
		      "a global limit: %s", ledger_error());
		CHECK(ledger_limits_apply(l, NULL), "a global limit applies");
		ledger_close(lw);
	}
	close(fd[1]);
	while (wait(&status) > 0)
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a holder");
	CHECK(ledger_attach(l, NULL) == 0, "after they exited, a slot again: %s", ledger_error());
	ledger_close(l);
}

static void test_global_start(void)
{
	start_together(100, IN_GLOBAL, 1000, 10);
	start_together(300, IN_GLOBAL, 301, 10);
	start_together(300, IN_GLOBAL, 290, 10);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rdmactl-budget-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	snprintf(lpath, sizeof(lpath), "%s/ledger", dir);
	seen = mmap(NULL, sizeof(*seen) * MAXN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (seen == MAP_FAILED) {
		printf("Bail out! mmap\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	RUN(test_job_start);
	RUN(test_job_full_qp);
	RUN(test_cgroup_start);
	RUN(test_global_start);
	RUN(test_capacity);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	return unit_done();
}
