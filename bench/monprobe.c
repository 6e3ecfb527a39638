// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The cost of rdmactl monitor's probes per operation, with the host's drift taken out: one process runs
 * the same create/destroy cycles in short windows, alternately with the probes attached and detached
 * (the maps and the ring stay), in the order on-off, off-on, ... Each pair of neighbouring windows gives
 * one ratio; the median of the ratios and its distribution-free 95 % interval are printed. The ring is
 * drained between windows, so the reader's work is outside the timed windows: this is the BPF side alone
 * (trampolines and programs), which is what the storm in bench/monitor.sh cannot resolve on a noisy host.
 *
 *   monprobe [-d DEV] [-n CYCLES] [-w PAIRS] [-k KINDS] [-s SETTLE] [-S WINDOWS] [-p PROCS] [-Q]
 * -Q: the programs also keep the user QPs' numbers, as a monitor does for top --counters (rdmactl monitor
 * always does).
 * PROCS worker processes (default 2: a storm from several processes) each run CYCLES cycles per window
 * on their own context, all at once; a window lasts until the last of them is done. This process only
 * attaches, detaches and drains the ring, like a monitor would. Two measures per pair: the wall time of
 * the windows, and the CPU time the workers used in them (each process's own cost, without the waits of
 * one worker for the slowest, which several processes sharing few CPUs add to the wall time).
 * With -S, WINDOWS more windows run attached with the kernel's run-time statistics on (after the timed
 * pairs: the statistics' clock reads would weigh on them), and the programs' own time per run is printed:
 * the part of the extra time spent inside the programs rather than in the trampolines. A cycle creates and destroys one object of each kind in KINDS (qp,mr,cq,pd; default all), on one open
 * context with one PD and CQ, like bench/monitor.sh's storm. Needs root and ib_core; run in the lab
 * (bench/monprobe.sh). SETTLE (default 50) untimed cycles follow each attach and detach.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <infiniband/verbs.h>

#include "bench.h"
#include "monitor/bpfmon.h"

enum { K_QP = 1, K_MR = 2, K_CQ = 4, K_PD = 8 };

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	unsigned int kinds;
	char buf[65536];
};

static uint64_t seen; /* events delivered by the ring */

static int on_event(const struct mon_event *e, void *arg)
{
	(void)e;
	(void)arg;
	seen++;
	return 0;
}

/* One cycle: 2 operations per kind. Returns the number of operations, or -1. */
static int cycle(struct ctx *c)
{
	int ops = 0;

	if (c->kinds & K_QP) {
		struct ibv_qp_init_attr a = { .send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
					      .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
						       .max_recv_sge = 1 } };
		struct ibv_qp *qp = ibv_create_qp(c->pd, &a);

		if (!qp || ibv_destroy_qp(qp))
			return -1;
		ops += 2;
	}
	if (c->kinds & K_MR) {
		struct ibv_mr *mr = ibv_reg_mr(c->pd, c->buf, sizeof(c->buf), IBV_ACCESS_LOCAL_WRITE);

		if (!mr || ibv_dereg_mr(mr))
			return -1;
		ops += 2;
	}
	if (c->kinds & K_CQ) {
		struct ibv_cq *cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);

		if (!cq || ibv_destroy_cq(cq))
			return -1;
		ops += 2;
	}
	if (c->kinds & K_PD) {
		struct ibv_pd *pd = ibv_alloc_pd(c->ctx);

		if (!pd || ibv_dealloc_pd(pd))
			return -1;
		ops += 2;
	}
	return ops;
}

#define MAX_PROCS 64

struct workers {
	int n;
	pid_t pid[MAX_PROCS];
	int cmd[MAX_PROCS]; /* parent -> worker: cycles to run (0: exit) */
	int res[MAX_PROCS]; /* worker -> parent: operations done, or -1 */
};

static int open_ctx(struct ctx *c, const char *devname)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	for (i = 0; list && list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (!list || !list[i] || !(c->ctx = ibv_open_device(list[i]))) {
		fprintf(stderr, "monprobe: cannot open %s\n", devname ? devname : "an RDMA device");
		return -1;
	}
	ibv_free_device_list(list);
	c->pd = ibv_alloc_pd(c->ctx);
	c->cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	if (!c->pd || !c->cq) {
		fprintf(stderr, "monprobe: cannot allocate a PD and a CQ\n");
		return -1;
	}
	return 0;
}

/* A worker's answer: operations done (-1: failed) and the CPU time it took them. */
struct answer {
	int64_t ops;
	uint64_t cpu_ns;
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A worker: open its context, say so, then run the cycles it is told to and answer with the count. */
static void worker(const char *devname, unsigned int kinds, int cmd, int res)
{
	static struct ctx c;
	struct answer a = { 0, 0 };
	int n, i, k;

	c.kinds = kinds;
	if (open_ctx(&c, devname))
		a.ops = -1;
	if (write(res, &a, sizeof(a)) != sizeof(a) || a.ops < 0)
		_exit(1);
	while (read(cmd, &n, sizeof(n)) == sizeof(n) && n > 0) {
		uint64_t c0 = cpu_ns();

		for (a.ops = 0, i = 0; i < n; i++) {
			k = cycle(&c);
			if (k < 0) {
				fprintf(stderr, "monprobe: an operation failed: %s\n", strerror(errno));
				a.ops = -1;
				break;
			}
			a.ops += k;
		}
		a.cpu_ns = cpu_ns() - c0;
		if (write(res, &a, sizeof(a)) != sizeof(a))
			_exit(1);
	}
	ibv_destroy_cq(c.cq);
	ibv_dealloc_pd(c.pd);
	ibv_close_device(c.ctx);
	_exit(0);
}

/* One answer from every worker, summed into *sum; -1 if one failed or went away. */
static int collect(struct workers *w, struct answer *sum)
{
	struct answer a;
	int i;

	sum->ops = 0;
	sum->cpu_ns = 0;
	for (i = 0; i < w->n; i++) {
		if (read(w->res[i], &a, sizeof(a)) != sizeof(a) || a.ops < 0)
			return -1;
		sum->ops += a.ops;
		sum->cpu_ns += a.cpu_ns;
	}
	return 0;
}

static int start_workers(struct workers *w, int n, const char *devname, unsigned int kinds)
{
	int i;

	w->n = 0;
	for (i = 0; i < n; i++) {
		int cp[2], rp[2];

		if (pipe(cp) || pipe(rp))
			return -1;
		w->pid[i] = fork();
		if (w->pid[i] < 0)
			return -1;
		if (!w->pid[i]) {
			int j;

			/* the earlier workers' pipes too: they would not see their end of input otherwise */
			for (j = 0; j < i; j++) {
				close(w->cmd[j]);
				close(w->res[j]);
			}
			close(cp[1]);
			close(rp[0]);
			worker(devname, kinds, cp[0], rp[1]);
		}
		close(cp[0]);
		close(rp[1]);
		w->cmd[i] = cp[1];
		w->res[i] = rp[0];
		w->n++;
	}
	return collect(w, &(struct answer){ 0, 0 });
}

static void stop_workers(struct workers *w)
{
	int i;

	for (i = 0; i < w->n; i++) {
		close(w->cmd[i]);
		close(w->res[i]);
		waitpid(w->pid[i], NULL, 0);
	}
}

/*
 * n cycles in every worker at once: the wall time until the last is done (0 on failure); the operations
 * and the workers' CPU time are added to *ops and *cpu (cpu may be NULL).
 */
static uint64_t window(struct workers *w, int n, uint64_t *ops, uint64_t *cpu)
{
	uint64_t t0 = now_ns();
	struct answer sum;
	int i;

	for (i = 0; i < w->n; i++)
		if (write(w->cmd[i], &n, sizeof(n)) != sizeof(n))
			return 0;
	if (collect(w, &sum))
		return 0;
	*ops += (uint64_t)sum.ops;
	if (cpu)
		*cpu += sum.cpu_ns;
	return now_ns() - t0;
}

static unsigned int parse_kinds(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;
	unsigned int k = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "qp"))
			k |= K_QP;
		else if (!strcmp(tok, "mr"))
			k |= K_MR;
		else if (!strcmp(tok, "cq"))
			k |= K_CQ;
		else if (!strcmp(tok, "pd"))
			k |= K_PD;
		else
			k = 0x100;
	}
	free(copy);
	return k;
}

/* Largest k with 2 P(Binomial(n, 1/2) <= k - 1) <= 0.05: [v(k), v(n+1-k)] (1-based, sorted) is the 95 % CI. */
static int ci_rank(int n)
{
	double p = 1, c = 0;
	int j, k = 0;

	for (j = 0; j < n; j++)
		p /= 2;
	for (j = 0; j < n / 2; j++) {
		c += p;
		p = p * (n - j) / (j + 1);
		if (2 * c > 0.05)
			break;
		k = j + 1;
	}
	return k;
}

/* The median extra time per operation and ratio over the pairs, with their 95 % intervals (sorts both). */
static void print_stats(const char *what, double *extra, double *ratio, int pairs)
{
	int k = ci_rank(pairs);

	printf("  extra %s per operation: median %.2f us", what, median(extra, pairs) / 1e3);
	if (k)
		printf(" (95%% CI %.2f..%.2f)", extra[k - 1] / 1e3, extra[pairs - k] / 1e3);
	printf("\n  with/without ratio of %s: median %.4f", what, median(ratio, pairs));
	if (k)
		printf(" (95%% CI %.4f..%.4f)", ratio[k - 1], ratio[pairs - k]);
	printf("\n");
}

/* -S: WINDOWS attached windows with run-time statistics on; the programs' time per run. */
static int prog_time(struct mon *m, struct workers *w, int cycles, int windows)
{
	uint64_t ns0, n0, ns1, n1, ops = 0, cpu = 0;
	int fd, i, err;

	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0 || mon_set_attached(m, true)) {
		fprintf(stderr, "monprobe: cannot turn on BPF run-time statistics: %s\n", strerror(errno));
		return -1;
	}
	err = mon_prog_stats(m, &ns0, &n0);
	for (i = 0; !err && i < windows; i++) {
		if (!window(w, cycles, &ops, &cpu))
			err = -errno;
		mon_consume(m);
	}
	if (!err)
		err = mon_prog_stats(m, &ns1, &n1);
	close(fd);
	if (err) {
		fprintf(stderr, "monprobe: %s\n", strerror(-err));
		return -1;
	}
	/* the programs run in the workers' context: their time is part of the workers' CPU time */
	printf("  programs (run-time statistics on, %d windows): %" PRIu64 " runs for %" PRIu64
	       " operations, %.2f us per run = %.2f%% of an operation's %.1f us of CPU time\n",
	       windows, n1 - n0, ops, (ns1 - ns0) / 1e3 / (double)(n1 - n0 ? n1 - n0 : 1),
	       100.0 * (double)(ns1 - ns0) / (double)(cpu ? cpu : 1), cpu / 1e3 / (double)(ops ? ops : 1));
	return 0;
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	int cycles = 100, pairs = 41, opt, i, p, k;
	struct mon_opts mo = { .events = true, .cb = on_event };
	struct mon_lost lost;
	struct workers c;
	unsigned int kinds = K_QP | K_MR | K_CQ | K_PD;
	struct mon *m;
	double *ratio, *extra, *cratio, *cextra;
	uint64_t ops_on = 0, ops_off = 0, ops_settle = 0, seen_on = 0, seen_off = 0, t_on = 0, t_off = 0, c_on = 0,
		 c_off = 0;
	int settle = 50, stat_windows = 0, procs = 2;

	while ((opt = getopt(argc, argv, "d:n:w:k:s:S:p:Q")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'n':
			cycles = atoi(optarg);
			break;
		case 'w':
			pairs = atoi(optarg);
			break;
		case 'k':
			kinds = parse_kinds(optarg);
			break;
		case 's':
			settle = atoi(optarg);
			break;
		case 'S':
			stat_windows = atoi(optarg);
			break;
		case 'p':
			procs = atoi(optarg);
			break;
		case 'Q':
			mo.track_qpids = true;
			break;
		default:
			fprintf(stderr, "usage: monprobe [-d DEV] [-n CYCLES] [-w PAIRS] [-k qp,mr,cq,pd] [-s SETTLE] "
					"[-S WINDOWS] [-p PROCS] [-Q]\n");
			return 2;
		}
	}
	if (cycles < 1 || pairs < 1 || settle < 0 || stat_windows < 0 || !kinds || kinds > 0xf || procs < 1 ||
	    procs > MAX_PROCS) {
		fprintf(stderr, "monprobe: CYCLES and PAIRS must be positive, SETTLE and WINDOWS not negative, KINDS a "
				"list of qp, mr, cq, pd, PROCS 1 to %d\n", MAX_PROCS);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (start_workers(&c, procs, devname, kinds)) {
		fprintf(stderr, "monprobe: cannot start %d workers\n", procs);
		stop_workers(&c);
		return 1;
	}
	if (mon_open(&mo, &m)) {
		fprintf(stderr, "monprobe: %s\n", mon_error());
		return 1;
	}
	ratio = calloc(pairs, sizeof(*ratio));
	extra = calloc(pairs, sizeof(*extra));
	cratio = calloc(pairs, sizeof(*cratio));
	cextra = calloc(pairs, sizeof(*cextra));
	if (!ratio || !extra || !cratio || !cextra)
		return 1;
	/* warm-up, both ways */
	for (i = 0; i < 2; i++) {
		uint64_t ops = 0;

		if (mon_set_attached(m, i == 0) || !window(&c, cycles, &ops, NULL)) {
			fprintf(stderr, "monprobe: %s\n", i ? "an operation failed" : mon_error());
			return 1;
		}
	}
	mon_consume(m);
	for (p = 0; p < pairs; p++) {
		uint64_t t[2] = { 0, 0 }, ops[2] = { 0, 0 }, cpu[2] = { 0, 0 };

		for (k = 0; k < 2; k++) {
			int on = (p % 2) ^ k; /* on-off, off-on, ... */
			uint64_t before;

			if (mon_set_attached(m, on)) {
				fprintf(stderr, "monprobe: %s\n", mon_error());
				return 1;
			}
			/*
			 * Untimed cycles first: attaching and detaching rewrite kernel text (the call site, the
			 * trampoline), and an emulator translates the new code once; that is not the probes' cost.
			 */
			if (!window(&c, settle, &ops_settle, NULL)) {
				fprintf(stderr, "monprobe: a worker failed\n");
				return 1;
			}
			mon_consume(m);
			before = seen;
			t[on] = window(&c, cycles, &ops[on], &cpu[on]);
			if (!t[on]) {
				fprintf(stderr, "monprobe: a worker failed\n");
				return 1;
			}
			mon_consume(m);
			if (on)
				seen_on += seen - before;
			else
				seen_off += seen - before;
		}
		ratio[p] = (double)t[1] / (double)t[0];
		cratio[p] = (double)cpu[1] / (double)(cpu[0] ? cpu[0] : 1);
		cextra[p] = ((double)cpu[1] - (double)cpu[0]) / (double)ops[1];
		c_on += cpu[1];
		c_off += cpu[0];
		extra[p] = ((double)t[1] - (double)t[0]) / (double)ops[1];
		t_on += t[1];
		t_off += t[0];
		ops_on += ops[1];
		ops_off += ops[0];
	}
	if (stat_windows && prog_time(m, &c, cycles, stat_windows))
		return 1;
	mon_lost(m, &lost);
	printf("monprobe: %s probes, %d pairs of windows of %d cycles in each of %d processes (%" PRIu64
	       " operations each way)\n",
	       mon_mode(m), pairs, cycles, procs, ops_on);
	printf("  wall time per operation (all processes together) without probes %.2f us, with %.2f us (totals)\n",
	       t_off / 1e3 / ops_off, t_on / 1e3 / ops_on);
	print_stats("wall time", extra, ratio, pairs);
	printf("  CPU time per operation in its process without probes %.2f us, with %.2f us (totals)\n",
	       c_off / 1e3 / ops_off, c_on / 1e3 / ops_on);
	print_stats("CPU time", cextra, cratio, pairs);
	printf("  events seen with probes %" PRIu64 " of %" PRIu64 " operations (ring lost %" PRIu64
	       "), without probes %" PRIu64 "\n",
	       seen_on, ops_on, lost.ring, seen_off);
	mon_close(m);
	stop_workers(&c);
	/* the measurement only counts if the probes saw every operation and nothing while detached */
	return seen_on == ops_on && !seen_off ? 0 : 1;
}
