// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Benchmark of the ledger hot path: ns per reserve+release pair, uncontended and with 2 processes
 * contending for the same scope totals (global + job), on a temp ledger.
 *   ledger [-n ITERS] [-r RUNS] [-p PROCS]    median of RUNS runs; -p 1 uncontended (default: both)
 *   ledger --loop ITERS                       just the loop (for callgrind: bench/ledger.sh)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ledger/ledger.h"

static char path[64];

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The measured loop: kept out of line so callgrind can count exactly it (--toggle-collect). */
__attribute__((noinline)) int bench_loop(struct ledger *l, long iters)
{
	long i;

	for (i = 0; i < iters; i++) {
		if (ledger_reserve(l, LEDGER_QP, 1, NULL) || ledger_release(l, LEDGER_QP, 1))
			return -1;
	}
	return 0;
}

static struct ledger *setup_proc(void)
{
	struct ledger *l;

	if (ledger_open(path, 0, &l) || ledger_attach(l, "bench")) {
		fprintf(stderr, "ledger: %s\n", ledger_error());
		exit(1);
	}
	return l;
}

/* One run with nproc processes started together; returns the median ns per pair over the processes. */
static double run(int nproc, long iters)
{
	double *res = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int *go = (int *)(res + 64);
	double v[64];
	int i;

	for (i = 0; i < nproc; i++) {
		if (fork() == 0) {
			struct ledger *l = setup_proc();
			uint64_t t0;

			__atomic_fetch_add(go, 1, __ATOMIC_SEQ_CST);
			while (__atomic_load_n(go, __ATOMIC_ACQUIRE) < nproc)
				;
			t0 = now();
			if (bench_loop(l, iters))
				_exit(1);
			res[i] = (double)(now() - t0) / (double)iters;
			ledger_detach(l);
			_exit(0);
		}
	}
	for (i = 0; i < nproc; i++) {
		int st;

		wait(&st);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "bench process failed\n");
			exit(1);
		}
	}
	memcpy(v, res, sizeof(double) * (size_t)nproc);
	munmap(res, 4096);
	qsort(v, (size_t)nproc, sizeof(double), cmp);
	return v[nproc / 2];
}

static void prepare(void)
{
	struct ledger_scope g = { .type = LEDGER_SCOPE_GLOBAL };
	uint64_t lim[LEDGER_NKINDS];
	struct ledger *l;
	int k;

	snprintf(path, sizeof(path), "/dev/shm/rdmactl-bench.%d", (int)getpid());
	for (k = 0; k < LEDGER_NKINDS; k++)
		lim[k] = LEDGER_UNLIMITED;
	lim[LEDGER_QP] = 1000;
	/* a realistic set of scopes: a pid-level check, a job and the global limit */
	if (ledger_init(path) || ledger_open(path, LEDGER_POLICY_RW, &l) || ledger_set_limit(l, &g, LEDGER_QP, 100000) ||
	    ledger_job_create(l, "bench", lim)) {
		fprintf(stderr, "ledger: %s\n", ledger_error());
		exit(1);
	}
	/* the job lives while its owner is alive: keep this handle open (never closed, owner = us) */
}

static void cleanup(void)
{
	char u[80];

	snprintf(u, sizeof(u), "%s.usage", path);
	unlink(path);
	unlink(u);
}

int main(int argc, char **argv)
{
	long iters = 2000000;
	int runs = 7, procs = 0, i, p;

	if (argc == 3 && !strcmp(argv[1], "--loop")) {
		struct ledger *l;

		prepare();
		l = setup_proc();
		iters = atol(argv[2]);
		i = bench_loop(l, iters);
		cleanup();
		return i ? 1 : 0;
	}
	while ((i = getopt(argc, argv, "n:r:p:")) != -1) {
		if (i == 'n')
			iters = atol(optarg);
		else if (i == 'r')
			runs = atoi(optarg);
		else if (i == 'p')
			procs = atoi(optarg);
		else
			return 2;
	}
	if (iters <= 0 || runs <= 0 || runs > 64 || procs < 0 || procs > 32)
		return 2;
	prepare();
	printf("ledger reserve+release pair (qp, scopes: pid + job + global), %ld pairs per run, median of %d runs\n",
	       iters, runs);
	for (p = 1; p <= 2; p++) {
		double v[64];

		if (procs && p != procs)
			continue;
		run(p, iters / 10); /* warm up */
		for (i = 0; i < runs; i++)
			v[i] = run(p, iters);
		qsort(v, (size_t)runs, sizeof(double), cmp);
		printf("%-28s %8.1f ns/pair  (min %.1f, max %.1f)\n",
		       p == 1 ? "uncontended, 1 process:" : "contended, 2 processes:", v[runs / 2], v[0], v[runs - 1]);
	}
	cleanup();
	return 0;
}
