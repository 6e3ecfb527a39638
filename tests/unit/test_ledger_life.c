// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of lib/ledger on a temp ledger, as processes live and die: gc, concurrency with fork, SIGKILL at
 * random points and mid-operation, dead gc holders, stuck freezes, pid reuse, corrupted files, permissions.
 */
#include "ledger_fixture.h"

/*
 * A live process whose interceptor slot (ledger_open_mark) holds usage while it holds no uverbs device has
 * exec()ed into a program that never used verbs: the gc gives that usage back and leaves the slot. Not to a
 * process without the mark (an API user), nor to one in the middle of an open, nor to one that holds a
 * uverbs fd, nor to one that only maps it (a context closed with its queues still mapped: the kernel keeps
 * its objects). A file of that name stands for the device: the host has none.
 */
enum { NODEV_MARKED, NODEV_UNMARKED, NODEV_OPENING, NODEV_HOLDS_FD, NODEV_MAPS_IT, NODEV_N };

static int nodev_cb(const struct ledger_proc_stat *ps, void *arg)
{
	uint64_t (*per)[2] = arg; /* [i] = { pid, qp usage } */

	for (int i = 0; i < NODEV_N; i++)
		if ((pid_t)per[i][0] == ps->pid)
			per[i][1] = ps->usage[LEDGER_QP];
	return 0;
}

static void test_gc_no_device(void)
{
	struct ledger *a;
	struct ledger_scope g = scope_global(), j = scope_job("nodev");
	struct sum sm = { .jobname = "nodev" };
	uint64_t per[NODEV_N][2] = { { 0 } };
	unsigned int n = 9;
	char fake[sizeof(dir) + 16];
	int i, status;

	fresh_ledger();
	a = open_rw();
	CHECK(ledger_job_create(a, "nodev", NULL) == 0, "job");
	snprintf(fake, sizeof(fake), "%s/uverbs0", dir);
	for (i = 0; i < NODEV_N; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			struct ledger *l;

			if (ledger_open(lpath, 0, &l) || ledger_attach(l, "nodev"))
				_exit(3);
			if (i != NODEV_UNMARKED)
				ledger_open_mark(l); /* the open begins */
			if (ledger_reserve(l, LEDGER_CTX, 1, NULL))
				_exit(3);
			if (i == NODEV_HOLDS_FD && open(fake, O_RDONLY | O_CREAT, 0600) < 0)
				_exit(3);
			if (i == NODEV_MAPS_IT) {
				int fd = open(fake, O_RDWR | O_CREAT, 0600);

				if (fd < 0 || ftruncate(fd, 4096) ||
				    mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED || close(fd))
					_exit(3);
			}
			if (i != NODEV_UNMARKED && i != NODEV_OPENING)
				ledger_open_mark(l); /* and ended */
			if (ledger_reserve(l, LEDGER_QP, 2, NULL))
				_exit(3);
			pause();
			_exit(0);
		}
		per[i][0] = (uint64_t)pid;
	}
	for (i = 0; i < 5000 && usage_of(a, j, LEDGER_QP) != 2 * NODEV_N; i++)
		usleep(1000);
	CHECK(usage_of(a, j, LEDGER_QP) == 2 * NODEV_N, "all charged: %lu", (unsigned long)usage_of(a, j, LEDGER_QP));
	CHECK(ledger_gc(a, &n) == 0 && n == 0, "nobody is dead: %u", n);
	ledger_foreach_proc(a, nodev_cb, per);
	CHECK(per[NODEV_MARKED][1] == 0, "no device: usage given back (%lu)", (unsigned long)per[NODEV_MARKED][1]);
	CHECK(per[NODEV_UNMARKED][1] == 2, "API user keeps it (%lu)", (unsigned long)per[NODEV_UNMARKED][1]);
	CHECK(per[NODEV_OPENING][1] == 2, "opening keeps it (%lu)", (unsigned long)per[NODEV_OPENING][1]);
	CHECK(per[NODEV_HOLDS_FD][1] == 2, "uverbs fd keeps it (%lu)", (unsigned long)per[NODEV_HOLDS_FD][1]);
	CHECK(per[NODEV_MAPS_IT][1] == 2, "a uverbs mapping keeps it (%lu)", (unsigned long)per[NODEV_MAPS_IT][1]);
	CHECK(usage_of(a, j, LEDGER_QP) == 8 && usage_of(a, g, LEDGER_QP) == 8 && usage_of(a, g, LEDGER_CTX) == 4,
	      "totals: job qp %lu, global qp %lu ctx %lu", (unsigned long)usage_of(a, j, LEDGER_QP),
	      (unsigned long)usage_of(a, g, LEDGER_QP), (unsigned long)usage_of(a, g, LEDGER_CTX));
	ledger_foreach_proc(a, sum_cb, &sm);
	CHECK(sm.n == NODEV_N, "every slot stays: %u", sm.n);
	CHECK(sm.all[LEDGER_QP] == usage_of(a, g, LEDGER_QP) && sm.job[LEDGER_QP] == usage_of(a, j, LEDGER_QP),
	      "totals are the sum of live slots");
	CHECK(ledger_gc(a, &n) == 0 && usage_of(a, g, LEDGER_QP) == 8, "a second gc changes nothing");
	for (i = 0; i < NODEV_N; i++)
		kill((pid_t)per[i][0], SIGTERM);
	for (i = 0; i < NODEV_N; i++)
		waitpid((pid_t)per[i][0], &status, 0);
	CHECK(ledger_gc(a, &n) == 0 && n == NODEV_N && usage_of(a, g, LEDGER_QP) == 0, "exits reclaimed");
	unlink(fake);
	ledger_close(a);
}


/* ---- (a) concurrency ---------------------------------------------------------------------------- */

enum { NWORKERS = 6, LIM_GLOBAL = 20, LIM_JOB = 9, LIM_CG = 11, LIM_PID = 4 };

struct ctl {
	int stop;
	int pause;
	int paused;
	int ready;
	int go;
	pid_t pids[NWORKERS];
	uint64_t ops[NWORKERS];
};

static void worker(struct ctl *ctl, int id)
{
	struct ledger *l = NULL;
	uint64_t held[LEDGER_NKINDS] = { 0 };
	unsigned int seed = (unsigned int)getpid();
	int k;

	if (ledger_open(lpath, 0, &l) || ledger_attach(l, id % 2 ? "stress" : ""))
		_exit(3);
	if (id < 4)
		fake_cgroup(l, id < 2 ? "/t/a" : "/t/b");
	__atomic_fetch_add(&ctl->ready, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&ctl->go, __ATOMIC_ACQUIRE))
		sched_yield();
	while (!__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&ctl->pause, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&ctl->paused, 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(&ctl->pause, __ATOMIC_ACQUIRE))
				sched_yield();
			__atomic_fetch_sub(&ctl->paused, 1, __ATOMIC_SEQ_CST);
		}
		k = rand_r(&seed) % 2 ? LEDGER_QP : LEDGER_MR_BYTES;
		if (rand_r(&seed) % 2) {
			uint64_t n = k == LEDGER_QP ? 1 : 4096u * (1 + rand_r(&seed) % 4);

			/* QPs: the interceptor's operation (within grants, inline) in half the workers */
			if (k == LEDGER_QP && id % 2 == 0 ? !ledger_reserve_obj(l, k, 0, NULL) : !ledger_reserve(l, k, n, NULL))
				held[k] += n;
		} else if (held[k]) {
			uint64_t n = k == LEDGER_QP ? 1 : held[k];

			if (k == LEDGER_QP && id % 2 == 0 ? ledger_release_obj(l, k, 0) : ledger_release(l, k, n))
				_exit(4);
			held[k] -= n;
		}
		ctl->ops[id]++;
	}
	_exit(0);
}

static void test_concurrency(void)
{
	struct ledger *l;
	struct ctl *ctl;
	struct ledger_scope g = scope_global(), j = scope_job("stress"), ca = scope_cg("/t/a"), ct = scope_cg("/t");
	uint64_t lim[LEDGER_NKINDS];
	uint64_t deadline, samples = 0, checks = 0, over = 0, mismatch = 0, gmismatch = 0, total_ops = 0, o[5] = { 0 };
	int i, k, status, bad_exit = 0;

	fresh_ledger();
	l = open_rw();
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_QP] = LIM_JOB;
	CHECK(ledger_job_create(l, "stress", lim) == 0, "job");
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, LIM_GLOBAL) == 0, "global qp");
	CHECK(ledger_set_limit(l, &g, LEDGER_MR_BYTES, 40 * 4096) == 0, "global mr_bytes");
	CHECK(ledger_set_limit(l, &ca, LEDGER_QP, LIM_CG) == 0, "cg /t/a");
	CHECK(ledger_set_limit(l, &ct, LEDGER_MR_BYTES, 24 * 4096) == 0, "cg /t");
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(ctl, 0, sizeof(*ctl));
	for (i = 0; i < NWORKERS; i++) {
		pid_t pid = fork(); /* not straight into ctl->pids: the child would write its 0 there */

		if (pid == 0)
			worker(ctl, i);
		ctl->pids[i] = pid;
	}
	while (__atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE) < NWORKERS)
		usleep(1000);
	/* a pid limit set on a running (attached) worker applies from its next reserve */
	{
		struct ledger_scope p = scope_pid(ctl->pids[0]);
		int err = ledger_set_limit(l, &p, LEDGER_QP, LIM_PID);

		CHECK(err == 0, "pid limit on a live worker: %d %s", err, ledger_error());
	}
	__atomic_store_n(&ctl->go, 1, __ATOMIC_SEQ_CST);
	deadline = clock_mono_ns() + 3000000000ull;
	while (clock_mono_ns() < deadline) {
		struct ledger_scope_stat st;
		struct ledger_scope p0 = scope_pid(ctl->pids[0]);

		/* continuous: no limit is ever exceeded */
		ledger_get_scope(l, &g, &st);
		o[0] += st.usage[LEDGER_QP] > LIM_GLOBAL || st.usage[LEDGER_MR_BYTES] > 40 * 4096;
		ledger_get_scope(l, &j, &st);
		o[1] += st.usage[LEDGER_QP] > LIM_JOB;
		ledger_get_scope(l, &ca, &st);
		o[2] += st.usage[LEDGER_QP] > LIM_CG;
		ledger_get_scope(l, &ct, &st);
		o[3] += st.usage[LEDGER_MR_BYTES] > 24 * 4096;
		ledger_get_scope(l, &p0, &st);
		o[4] += st.usage[LEDGER_QP] > LIM_PID;
		samples++;
		/* every 16 samples: quiesce the workers and compare totals with the sum of holders */
		if (samples % 16 == 0) {
			struct sum s = { .jobname = "stress", .cgname = "/t" };
			struct sum sa = { .cgname = "/t/a" };

			__atomic_store_n(&ctl->pause, 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(&ctl->paused, __ATOMIC_ACQUIRE) < NWORKERS)
				sched_yield();
			ledger_foreach_proc(l, sum_cb, &s);
			ledger_foreach_proc(l, sum_cb, &sa);
			for (k = 0; k < LEDGER_NKINDS; k++) {
				mismatch += usage_of(l, g, k) != s.all[k];
				mismatch += usage_of(l, j, k) != s.job[k];
				mismatch += usage_of(l, ct, k) != s.cg[k];
				mismatch += usage_of(l, ca, k) != sa.cg[k];
			}
			mismatch += s.n != NWORKERS;
			/* the totals of the limited scopes carry exactly the grants of their slots */
			{
				int jx = ledger_find_job(l->use, "stress"), ci, cti;

				for (ci = 0, cti = -1; ci < LEDGER_MAX_CGROUPS; ci++)
					if (ALOAD(&l->pol->cg[ci].state) == ENT_LIVE && !strcmp(l->pol->cg[ci].path, "/t"))
						cti = ci;
				for (ci = 0; ci < LEDGER_MAX_CGROUPS; ci++)
					if (ALOAD(&l->pol->cg[ci].state) == ENT_LIVE && !strcmp(l->pol->cg[ci].path, "/t/a"))
						break;
				gmismatch += ALOAD(&l->use->global_total[LEDGER_QP]) != slots_sum(l, -1, NULL, LEDGER_QP, true);
				gmismatch += ALOAD(&l->use->global_total[LEDGER_MR_BYTES]) !=
					     slots_sum(l, -1, NULL, LEDGER_MR_BYTES, true);
				gmismatch += jx < 0 || ALOAD(&l->use->jobs[jx].total[LEDGER_QP]) !=
							       slots_sum(l, jx, NULL, LEDGER_QP, true);
				gmismatch += ci == LEDGER_MAX_CGROUPS || ALOAD(&l->use->cg_total[ci][LEDGER_QP]) !=
										 slots_sum(l, -1, "/t/a", LEDGER_QP, true);
				gmismatch += cti < 0 || ALOAD(&l->use->cg_total[cti][LEDGER_MR_BYTES]) !=
								slots_sum(l, -1, "/t", LEDGER_MR_BYTES, true);
			}
			checks++;
			__atomic_store_n(&ctl->pause, 0, __ATOMIC_SEQ_CST);
		}
	}
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < NWORKERS; i++) {
		waitpid(ctl->pids[i], &status, 0);
		bad_exit += !WIFEXITED(status) || WEXITSTATUS(status);
		total_ops += ctl->ops[i];
	}
	CHECK(bad_exit == 0, "%d workers failed", bad_exit);
	over = o[0] + o[1] + o[2] + o[3] + o[4];
	CHECK(over == 0, "a limit was exceeded %lu times (global %lu, job %lu, cgroup /t/a %lu, /t %lu, pid %lu)",
	      (unsigned long)over, (unsigned long)o[0], (unsigned long)o[1], (unsigned long)o[2],
	      (unsigned long)o[3], (unsigned long)o[4]);
	CHECK(mismatch == 0, "totals != sum of holders %lu times", (unsigned long)mismatch);
	CHECK(gmismatch == 0, "a limited scope's total != the grants of its slots %lu times", (unsigned long)gmismatch);
	CHECK(checks >= 5, "only %lu quiescent checks", (unsigned long)checks);
	{
		uint64_t denials = 0;

		ledger_denial_counts(l, &denials, NULL);
		CHECK(denials > 0, "the limits were reached (denials %lu)", (unsigned long)denials);
		printf("# concurrency: %lu ops, %lu samples, %lu exact checks, %lu denials\n",
		       (unsigned long)total_ops, (unsigned long)samples, (unsigned long)checks,
		       (unsigned long)denials);
	}
	/* the workers exited without detaching: gc gives everything back */
	CHECK(ledger_gc(l, NULL) == 0, "gc");
	for (k = 0; k < LEDGER_NKINDS; k++)
		CHECK(usage_of(l, g, k) == 0 && usage_of(l, j, k) == 0 && usage_of(l, ct, k) == 0, "kind %d", k);
	munmap(ctl, sizeof(*ctl));
	ledger_close(l);
}

/* ---- (b) SIGKILL at random points --------------------------------------------------------------- */

/* pause: the survivors stop between operations so that the live sum is stable while it is compared */
static int *hpause;

static void hammer(int id)
{
	struct ledger *l = NULL;
	unsigned int seed = (unsigned int)getpid();

	if (ledger_open(lpath, 0, &l) || ledger_attach(l, id % 2 ? "kill" : ""))
		_exit(3);
	if (id % 3 == 0)
		fake_cgroup(l, "/k/x");
	for (;;) {
		int k = rand_r(&seed) % 3 ? LEDGER_QP : LEDGER_MR;

		if (__atomic_load_n(&hpause[0], __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&hpause[1 + id], 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(&hpause[0], __ATOMIC_ACQUIRE))
				sched_yield();
			__atomic_store_n(&hpause[1 + id], 0, __ATOMIC_SEQ_CST);
		}

		if (rand_r(&seed) % 2)
			ledger_reserve(l, k, 1, NULL);
		else
			ledger_release(l, k, 1);
	}
}

static int live_slots(struct ledger *l)
{
	int i, n = 0;

	for (i = 0; i < (int)l->nprocs; i++)
		n += ALOAD(&l->use->slots[i].owner) != 0;
	return n;
}

static void check_exact(struct ledger *l, const char *what)
{
	struct ledger_scope g = scope_global(), j = scope_job("kill"), c = scope_cg("/k");
	struct sum s = { .jobname = "kill", .cgname = "/k" };
	int k, bad = 0;

	ledger_foreach_proc(l, sum_cb, &s);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		bad += usage_of(l, g, k) != s.all[k];
		bad += usage_of(l, j, k) != s.job[k];
		bad += usage_of(l, c, k) != s.cg[k];
		if (usage_of(l, g, k) != s.all[k])
			printf("# %s: kind %d global %lu live sum %lu\n", what, k, (unsigned long)usage_of(l, g, k),
			       (unsigned long)s.all[k]);
	}
	CHECK(bad == 0, "%s: totals differ from the live sum in %d places", what, bad);
}

static void test_sigkill(void)
{
	enum { N = 6, ROUNDS = 12 };
	struct ledger *l;
	struct ledger_scope g = scope_global(), c = scope_cg("/k");
	pid_t pids[N];
	unsigned int seed = 42, r;
	uint64_t lim[LEDGER_NKINDS];
	int i, k, round;

	hpause = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(hpause, 0, 4096);
	fresh_ledger();
	l = open_rw();
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_QP] = 15;
	CHECK(ledger_job_create(l, "kill", lim) == 0, "job");
	CHECK(ledger_set_limit(l, &g, LEDGER_QP, 30) == 0, "global");
	CHECK(ledger_set_limit(l, &c, LEDGER_MR, 10) == 0, "cgroup");
	for (i = 0; i < N; i++) {
		pids[i] = fork();
		if (!pids[i])
			hammer(i);
	}
	for (round = 0; round < ROUNDS; round++) {
		usleep(20000 + rand_r(&seed) % 50000);
		/* kill two at random points (mid-operation included), start two new ones */
		for (r = 0; r < 2; r++) {
			i = rand_r(&seed) % N;
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			hpause[1 + i] = 0;
			pids[i] = fork();
			if (!pids[i])
				hammer(i);
		}
		/*
		 * Pause the survivors between operations so the live sum is stable, then reclaim and compare.
		 * (Not SIGSTOP: a process stopped mid-operation holds a recount off until it runs again.)
		 */
		__atomic_store_n(&hpause[0], 1, __ATOMIC_SEQ_CST);
		for (i = 0; i < N; i++)
			while (!__atomic_load_n(&hpause[1 + i], __ATOMIC_ACQUIRE))
				sched_yield();
		CHECK(ledger_gc(l, &r) == 0, "gc round %d", round);
		check_exact(l, "after kill");
		CHECK(live_slots(l) == N, "round %d: %d slots in use, %d live processes", round, live_slots(l), N);
		__atomic_store_n(&hpause[0], 0, __ATOMIC_SEQ_CST);
	}
	for (i = 0; i < N; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	CHECK(ledger_gc(l, &r) == 0, "final gc");
	CHECK(live_slots(l) == 0, "%d slots still in use", live_slots(l));
	check_exact(l, "all dead");
	for (k = 0; k < LEDGER_NKINDS; k++)
		CHECK(usage_of(l, g, k) == 0, "kind %d back to 0", k);
	munmap(hpause, 4096);
	ledger_close(l);
}

/*
 * A scope's total of a kind is kept only while the scope limits it: without a limit the usage shown is the
 * sum of the slots; the limit that starts it recounts first (invariant 1 from its first operation on).
 * ledger_reserve_obj() / ledger_release_obj(), the interceptor's operation, keep the same books.
 */

static void test_death_mid_operation(void)
{
	struct ledger *l, *l2;
	struct ledger_scope g = scope_global();
	int status;
	pid_t pid;

	fresh_ledger();
	l = open_rw();
	CHECK(ledger_attach(l, NULL) == 0, "attach");
	/* a global limit: the global total of PDs is kept (without one, the global usage is the slots' sum) */
	CHECK(ledger_set_limit(l, &g, LEDGER_PD, 100) == 0, "global pd limit");
	CHECK(ledger_reserve(l, LEDGER_PD, 2, NULL) == 0, "parent holds 2");
	pid = fork();
	if (pid == 0) {
		struct slot *s;

		if (ledger_open(lpath, 0, &l2) || ledger_attach(l2, NULL))
			_exit(3);
		ledger_reserve(l2, LEDGER_PD, 3, NULL);
		/* die after charging the global total but before the own slot: what SIGKILL can do */
		s = &l2->use->slots[l2->slot];
		__atomic_fetch_add(&s->inflight, 1, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&l2->use->global_total[LEDGER_PD], 5, __ATOMIC_SEQ_CST);
		raise(SIGKILL);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFSIGNALED(status), "child killed");
	/* the total carries grants (usage and allowances): the parent's, the dead child's, and the leak */
	CHECK(ALOAD(&l->use->global_total[LEDGER_PD]) >= 10, "leaked before gc: %lu",
	      (unsigned long)ALOAD(&l->use->global_total[LEDGER_PD]));
	CHECK(ledger_gc(l, NULL) == 0, "gc");
	CHECK(usage_of(l, g, LEDGER_PD) == 2 && ALOAD(&l->use->global_total[LEDGER_PD]) == 2,
	      "after recount: usage %lu, total %lu (allowances taken back)", (unsigned long)usage_of(l, g, LEDGER_PD),
	      (unsigned long)ALOAD(&l->use->global_total[LEDGER_PD]));
	CHECK(__atomic_load_n(&l->use->frozen, __ATOMIC_SEQ_CST) == 0, "unfrozen");
	CHECK(ledger_reserve(l, LEDGER_PD, 1, NULL) == 0, "still usable");
	ledger_detach(l);
	ledger_close(l);
}

/* A recount left frozen by a gc that died is finished by the next waiter. */
static void test_dead_gc(void)
{
	struct ledger *l;
	int status;
	pid_t pid;

	fresh_ledger();
	l = open_rw();
	CHECK(ledger_attach(l, NULL) == 0, "attach");
	pid = fork();
	if (pid == 0) {
		if (ledger_gc_lock(l, 100))
			_exit(3);
		__atomic_store_n(&l->use->frozen, 1, __ATOMIC_SEQ_CST);
		raise(SIGKILL);
	}
	waitpid(pid, &status, 0);
	CHECK(ALOAD(&l->use->frozen) == 1, "frozen by the dead gc");
	CHECK(ledger_reserve(l, LEDGER_CQ, 1, NULL) == 0, "reserve completes anyway");
	CHECK(ALOAD(&l->use->frozen) == 0 && ALOAD(&l->use->gc_owner) == 0, "lock and freeze recovered");
	ledger_detach(l);
	ledger_close(l);
}

/* A freeze held by a live process that never finishes (stuck or hostile) delays, never blocks forever. */
static void test_stuck_freeze(void)
{
	struct ledger *l;
	uint64_t t0;
	int pipefd[2], status;
	pid_t pid;
	char c;

	fresh_ledger();
	l = open_rw();
	CHECK(ledger_attach(l, NULL) == 0, "attach");
	CHECK(pipe(pipefd) == 0, "pipe");
	pid = fork();
	if (pid == 0) {
		close(pipefd[0]);
		if (ledger_gc_lock(l, 100))
			_exit(3);
		__atomic_store_n(&l->use->frozen, 1, __ATOMIC_SEQ_CST);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(4);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	CHECK(read(pipefd[0], &c, 1) == 1, "frozen by a live process");
	close(pipefd[0]);
	t0 = clock_mono_ns();
	CHECK(ledger_reserve(l, LEDGER_CQ, 1, NULL) == 0, "reserve goes ahead");
	CHECK(clock_mono_ns() - t0 >= 4000000000ull && clock_mono_ns() - t0 < 15000000000ull, "after %.1f s",
	      (double)(clock_mono_ns() - t0) / 1e9);
	t0 = clock_mono_ns();
	CHECK(ledger_reserve(l, LEDGER_CQ, 1, NULL) == 0 && ledger_release(l, LEDGER_CQ, 1) == 0, "again");
	CHECK(clock_mono_ns() - t0 < 1000000000ull, "no second wait: %.1f s", (double)(clock_mono_ns() - t0) / 1e9);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* its holder is dead now: an operation (at most every 100 ms) finishes the recount and unfreezes */
	usleep(150000);
	CHECK(ledger_release(l, LEDGER_CQ, 1) == 0, "release");
	CHECK(ALOAD(&l->use->frozen) == 0, "unfrozen once the holder died");
	ledger_detach(l);
	ledger_close(l);
}

/* ---- (c) pid reuse ------------------------------------------------------------------------------ */

static void test_pid_reuse(void)
{
	struct ledger *l;
	struct ledger_scope g = scope_global();
	struct slot *s;
	uint64_t real_start = 0, fake;
	int pipefd[2], status, i;
	pid_t pid;
	char c;

	fresh_ledger();
	l = open_rw();
	CHECK(pipe(pipefd) == 0, "pipe");
	pid = fork();
	if (pid == 0) {
		/* the "new" process that got a recycled pid: wait until the old one's traces are planted */
		struct ledger *lc;
		struct ledger_scope me = scope_pid(getpid());
		int bad = 0;

		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(5);
		if (ledger_open(lpath, 0, &lc) || ledger_attach(lc, NULL))
			_exit(3);
		bad |= (usage_of(lc, me, LEDGER_QP) != 0) << 0;  /* no inherited usage */
		for (i = 0; i < 3; i++)                            /* the dead one's pid limit of 1 does not apply */
			bad |= (ledger_reserve(lc, LEDGER_QP, 1, NULL) != 0) << 1;
		bad |= (usage_of(lc, me, LEDGER_QP) != 3) << 2;
		_exit(bad);
	}
	close(pipefd[0]);
	CHECK(ledger_pid_start_time(pid, &real_start) == 0, "start of child");
	fake = real_start - 1;
	/* plant a dead holder with the same pid, another start time: slot with 7 QPs and a pid limit of 1 */
	s = &l->use->slots[5];
	if (ALOAD(&l->use->slot_hw) < 6)
		ASTORE(&l->use->slot_hw, 6); /* as a claim of it would */
	s->owner = ledger_pack_owner(pid, fake);
	s->pid = pid;
	s->start = fake;
	s->job = -1;
	snprintf(s->cgroup, sizeof(s->cgroup), "/");
	s->usage[LEDGER_QP] = 7;
	ASTORE(&s->state, ENT_LIVE);
	l->use->global_total[LEDGER_QP] = 7;
	{
		struct ledger_scope old = { .type = LEDGER_SCOPE_PROCESS, .pid = pid, .start_time = fake };

		CHECK(ledger_set_limit(l, &old, LEDGER_QP, 1) == 0, "limit for the old process: %s", ledger_error());
	}
	CHECK(write(pipefd[1], "x", 1) == 1, "go");
	close(pipefd[1]);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child saw inherited state: bits %d",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/* the child exited now too; gc reclaims both the fake and the real one */
	{
		unsigned int n = 0;

		CHECK(ledger_gc(l, &n) == 0 && n == 2, "gc reclaimed %u", n);
	}
	CHECK(usage_of(l, g, LEDGER_QP) == 0, "global back to 0: %lu", (unsigned long)usage_of(l, g, LEDGER_QP));
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++)
		CHECK(ALOAD(&l->pol->pid[i].state) == ENT_FREE, "stale pid limit %d dropped", i);
	ledger_close(l);
}

/* ---- (d) corrupted files ------------------------------------------------------------------------ */

static int try_open(const char *what, int expect)
{
	struct ledger *l = NULL;
	int err = ledger_open(lpath, 0, &l);

	CHECK(err == expect, "%s: got %d (%s), expected %d", what, err, ledger_error(), expect);
	CHECK(err == 0 || strlen(ledger_error()) > 10, "%s: message", what);
	if (!err)
		ledger_close(l);
	else
		printf("# %s: %s\n", what, ledger_error());
	return err;
}

static void patch(const char *path, off_t off, const void *buf, size_t n)
{
	int fd = open(path, O_WRONLY);

	CHECK(fd >= 0 && pwrite(fd, buf, n, off) == (ssize_t)n, "patch %s", path);
	close(fd);
}

static void test_corruption(void)
{
	char upath[sizeof(lpath) + 8], cmd[2 * sizeof(lpath) + 16];
	struct lhdr h;
	int fd, i;
	unsigned char junk[4096];
	unsigned int seed = 7;

	snprintf(upath, sizeof(upath), "%s.usage", lpath);

	fresh_ledger();
	try_open("valid", 0);
	unlink(lpath);
	try_open("missing policy", -ENOENT);
	CHECK(strstr(ledger_error(), "quota init") != NULL, "hint: %s", ledger_error());

	fresh_ledger();
	unlink(upath);
	try_open("missing usage", -ENOENT);

	fresh_ledger();
	CHECK(truncate(lpath, 100) == 0, "truncate");
	try_open("truncated to 100 bytes", -EBADMSG);
	fresh_ledger();
	CHECK(truncate(lpath, sizeof(struct policy) - 1) == 0, "truncate");
	try_open("one byte short", -EBADMSG);
	fresh_ledger();
	CHECK(truncate(upath, 0) == 0, "truncate");
	try_open("empty usage file", -EBADMSG);
	fresh_ledger();
	CHECK(truncate(lpath, sizeof(struct policy) + 4096) == 0, "extend");
	try_open("grown", -EBADMSG);

	fresh_ledger();
	patch(lpath, 0, "NOTLEDGR", 8);
	try_open("wrong magic", -EBADMSG);

	fresh_ledger();
	fd = open(lpath, O_RDONLY);
	CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h), "read hdr");
	close(fd);
	h.version = 99;
	h.checksum = ledger_fnv1a(&h, offsetof(struct lhdr, checksum));
	patch(lpath, 0, &h, sizeof(h));
	try_open("foreign version", -EPROTO);
	CHECK(strstr(ledger_error(), "version 99") != NULL, "says which version");
	/* another version with another layout (size) is still reported as a version problem */
	CHECK(truncate(lpath, 12345) == 0, "resize");
	try_open("foreign version, other size", -EPROTO);

	fresh_ledger();
	patch(lpath, offsetof(struct lhdr, nprocs), "\x07", 1);
	try_open("bad checksum", -EBADMSG);
	CHECK(strstr(ledger_error(), "checksum") != NULL, "says checksum");

	fresh_ledger();
	fd = open(upath, O_RDONLY);
	CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h), "read hdr");
	close(fd);
	h.ledger_id ^= 1;
	h.checksum = ledger_fnv1a(&h, offsetof(struct lhdr, checksum));
	patch(upath, 0, &h, sizeof(h));
	try_open("usage file of another ledger", -EBADMSG);

	/* random garbage, of the right size and of random sizes */
	for (i = 0; i < 8; i++) {
		size_t n = i < 4 ? sizeof(struct policy) : (size_t)(rand_r(&seed) % 100000);
		size_t o;

		fresh_ledger();
		fd = open(lpath, O_WRONLY | O_TRUNC);
		for (o = 0; o < n; o += sizeof(junk)) {
			size_t m = n - o < sizeof(junk) ? n - o : sizeof(junk);

			for (size_t b = 0; b < m; b++)
				junk[b] = (unsigned char)rand_r(&seed);
			CHECK(write(fd, junk, m) == (ssize_t)m, "write junk");
		}
		close(fd);
		try_open("random garbage", -EBADMSG);
	}

	fresh_ledger();
	unlink(lpath);
	CHECK(mkdir(lpath, 0700) == 0, "mkdir");
	try_open("a directory", -EBADMSG);
	rmdir(lpath);

	/* garbage in the body behind a valid header (job indexes, strings, counters) never crashes readers */
	fresh_ledger();
	{
		struct ledger *l = open_rw();
		unsigned char *p = (unsigned char *)l->use;
		struct ledger_scope_stat st;
		int n = 0;

		for (size_t b = sizeof(struct lhdr); b < sizeof(struct usage); b++)
			p[b] = (unsigned char)rand_r(&seed);
		p = (unsigned char *)l->pol;
		for (size_t b = sizeof(struct lhdr); b < sizeof(struct policy); b++)
			p[b] = (unsigned char)rand_r(&seed);
		/* the freeze flag and gc lock are garbage too: readers must not wait on them */
		ledger_foreach_scope(l, count_cb, &n);
		CHECK(n >= 1, "iterated %d scopes", n);
		{
			struct ledger_scope g = scope_global();
			uint64_t since = 0;

			CHECK(ledger_get_scope(l, &g, &st) == 0, "get global");
			ledger_foreach_proc(l, sum_cb, &(struct sum){ 0 });
			ledger_foreach_denial(l, &since, ring_cb, &(struct ring_seen){ 0 });
			/* writers cope too: gc (bounded), attach, reserve, release, detach return, whatever they say */
			ledger_gc(l, NULL);
			if (!ledger_attach(l, NULL)) {
				struct ledger_denial d;

				if (!ledger_reserve(l, LEDGER_QP, 1, &d))
					ledger_release(l, LEDGER_QP, 1);
				ledger_detach(l);
			}
			CHECK(ALOAD(&l->use->frozen) == 0, "not left frozen");
		}
		ledger_close(l);
	}
	snprintf(cmd, sizeof(cmd), "rm -f %s %s", lpath, upath);
	CHECK(system(cmd) == 0, "cleanup");

	/* init recreates an empty, valid ledger over a corrupted one */
	fresh_ledger();
	patch(lpath, 0, "XXXXXXXX", 8);
	CHECK(ledger_init(lpath) == 0, "init over garbage");
	try_open("after init", 0);
	/* LEDGER_CREATE creates a missing ledger but never overwrites */
	unlink(lpath);
	unlink(upath);
	{
		struct ledger *l = NULL;

		CHECK(ledger_open(lpath, LEDGER_CREATE, &l) == 0, "create when missing");
		ledger_close(l);
		patch(lpath, 0, "XXXXXXXX", 8);
		CHECK(ledger_open(lpath, LEDGER_CREATE, &l) == -EBADMSG, "create does not overwrite");
	}
}

static void test_permissions(void)
{
	struct ledger *l = NULL;
	struct stat st;
	char upath[sizeof(lpath) + 8];

	snprintf(upath, sizeof(upath), "%s.usage", lpath);
	fresh_ledger();
	CHECK(stat(lpath, &st) == 0 && (st.st_mode & 0777) == 0644, "policy mode %o", st.st_mode & 0777);
	CHECK(stat(upath, &st) == 0 && (st.st_mode & 0777) == 0666, "usage mode %o", st.st_mode & 0777);
	CHECK(ledger_open(lpath, 0, &l) == 0, "read-only policy");
	{
		struct ledger_scope g = scope_global();

		CHECK(ledger_set_limit(l, &g, LEDGER_QP, 1) == -EACCES, "no limit change without POLICY_RW");
		CHECK(strstr(ledger_error(), "permission denied") != NULL, "%s", ledger_error());
	}
	ledger_close(l);
	if (geteuid() == 0) {
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			int bad = 0;

			if (setgid(65534) || setuid(65534))
				_exit(9);
			bad |= ledger_open(lpath, LEDGER_POLICY_RW, &l) != -EACCES;
			bad |= (ledger_open(lpath, 0, &l) != 0) << 1;
			bad |= (ledger_attach(l, NULL) != 0) << 2; /* apps still charge themselves */
			bad |= (ledger_reserve(l, LEDGER_QP, 1, NULL) != 0) << 3;
			_exit(bad);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "unprivileged: status %d", status);
	}
}

int main(void)
{
	if (fixture_begin())
		return 1;
	RUN(test_gc_no_device);
	RUN(test_concurrency);
	RUN(test_sigkill);
	RUN(test_death_mid_operation);
	RUN(test_dead_gc);
	RUN(test_stuck_freeze);
	RUN(test_pid_reuse);
	RUN(test_corruption);
	RUN(test_permissions);
	if (fixture_end())
		return 1;
	return unit_done();
}
