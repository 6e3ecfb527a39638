// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lab helper: hold RDMA objects created from several threads (QPs, CQs, MRs) until killed. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "core/util.h"

static const char usage[] =
	"usage: holdres [-d DEV] [-q NQP] [-m MRBYTES] [-t THREADS] [-i N] [-e | -E]\n"
	"  Open DEV (default: the first device) and one PD in the main thread; then THREADS threads each\n"
	"  create one CQ, their share of NQP RC QPs (left in RESET) and one MR of MRBYTES (K/M/G suffixes;\n"
	"  0: no MR). Prints \"ready\" once everything exists, then holds it until SIGINT/SIGTERM and exits 0.\n"
	"  -i N: every Nth QP (the first, the N+1st, ...) is moved to INIT on port 1; the others stay in RESET.\n"
	"  -e: the creating threads exit once done (their objects stay, the kernel no longer knows a pid).\n"
	"  -E: as -e, and a thread that exits opens DEV and allocates the PD instead of main.\n"
	"  Defaults: -q 1 -m 64K -t 1.\n";

struct worker {
	pthread_t th;
	unsigned int nqp;
	struct ibv_cq *cq;
	struct ibv_qp **qp;
	struct ibv_mr *mr;
	void *buf;
	int err;
	pid_t tid;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint64_t mr_bytes = 65536;
static bool threads_exit, opener_exits;
static struct ibv_device *dev;
static uint64_t init_every;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static unsigned int ndone;
static bool release;

static void *work(void *arg)
{
	struct worker *w = arg;
	struct ibv_qp_init_attr qa = { 0 };
	unsigned int i;

	w->tid = gettid();
	w->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!w->cq) {
		w->err = errno ? errno : EIO;
		goto done;
	}
	qa.send_cq = qa.recv_cq = w->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (i = 0; i < w->nqp; i++) {
		w->qp[i] = ibv_create_qp(pd, &qa);
		if (!w->qp[i]) {
			w->err = errno ? errno : EIO;
			goto done;
		}
		if (init_every && i % init_every == 0) {
			struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

			w->err = ibv_modify_qp(w->qp[i], &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS);
			if (w->err)
				goto done;
		}
	}
	if (mr_bytes) {
		w->buf = mmap(NULL, mr_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (w->buf == MAP_FAILED) {
			w->buf = NULL;
			w->err = errno;
			goto done;
		}
		w->mr = ibv_reg_mr(pd, w->buf, mr_bytes, IBV_ACCESS_LOCAL_WRITE);
		if (!w->mr) {
			w->err = errno ? errno : EIO;
			goto done;
		}
	}
done:
	pthread_mutex_lock(&lock);
	ndone++;
	pthread_cond_broadcast(&cond);
	/* Stay alive (so the kernel keeps reporting this thread's id) until main releases us. */
	while (!release && !threads_exit)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* Open the device and allocate the PD (in main, or in a thread of its own that then exits: -E). */
static void *open_dev(void *arg)
{
	(void)arg;
	ctx = ibv_open_device(dev);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	return NULL;
}

static void cleanup(struct worker *w, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
		if (w[i].mr)
			ibv_dereg_mr(w[i].mr);
		if (w[i].buf)
			munmap(w[i].buf, mr_bytes);
		for (j = 0; j < w[i].nqp && w[i].qp; j++)
			if (w[i].qp[j])
				ibv_destroy_qp(w[i].qp[j]);
		if (w[i].cq)
			ibv_destroy_cq(w[i].cq);
		free(w[i].qp);
	}
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	struct ibv_device **list;
	uint64_t nqp = 1, nthreads = 1;
	struct worker *w;
	sigset_t set;
	bool joined = false;
	unsigned int i;
	int c, sig, n, rc = 1;

	while ((c = getopt(argc, argv, "d:q:m:t:i:eEh")) != -1) {
		switch (c) {
		case 'd':
			devname = optarg;
			break;
		case 'q':
			if (parse_u64(optarg, 0, 1000000, &nqp))
				goto bad;
			break;
		case 'm':
			if (parse_size(optarg, 1ULL << 40, &mr_bytes))
				goto bad;
			break;
		case 't':
			if (parse_u64(optarg, 1, 1024, &nthreads))
				goto bad;
			break;
		case 'i':
			if (parse_u64(optarg, 1, 1000000, &init_every))
				goto bad;
			break;
		case 'E':
			opener_exits = true;
			/* fall through */
		case 'e':
			threads_exit = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;

	/* Signals are taken synchronously by main only; workers inherit the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, "holdres: no RDMA device\n");
		return 1;
	}
	for (i = 0; i < (unsigned int)n; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (i == (unsigned int)n) {
		fprintf(stderr, "holdres: no RDMA device '%s'\n", devname);
		ibv_free_device_list(list);
		return 1;
	}
	dev = list[i];
	if (opener_exits) {
		pthread_t th;

		if (pthread_create(&th, NULL, open_dev, NULL) || pthread_join(th, NULL)) {
			fprintf(stderr, "holdres: cannot start the opener thread\n");
			return 1;
		}
	} else {
		open_dev(NULL);
	}
	ibv_free_device_list(list);
	if (!ctx || !pd) {
		fprintf(stderr, "holdres: open/alloc_pd: %s\n", strerror(errno));
		cleanup(NULL, 0);
		return 1;
	}
	w = calloc(nthreads, sizeof(*w));
	if (!w)
		return 1;
	for (i = 0; i < nthreads; i++) {
		/* Spread the QPs: the first threads take one more when NQP does not divide evenly. */
		w[i].nqp = (unsigned int)(nqp / nthreads + (i < nqp % nthreads));
		w[i].qp = calloc(w[i].nqp ? w[i].nqp : 1, sizeof(*w[i].qp));
		if (!w[i].qp || pthread_create(&w[i].th, NULL, work, &w[i])) {
			fprintf(stderr, "holdres: cannot start thread %u\n", i);
			nthreads = i;
			goto out;
		}
	}
	pthread_mutex_lock(&lock);
	while (ndone < nthreads)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < nthreads; i++)
		if (w[i].err) {
			fprintf(stderr, "holdres: thread %u: %s\n", i, strerror(w[i].err));
			goto out;
		}
	if (threads_exit) {
		for (i = 0; i < nthreads; i++)
			pthread_join(w[i].th, NULL);
		joined = true;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	rc = 0;
out:
	pthread_mutex_lock(&lock);
	release = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (!joined)
		for (i = 0; i < nthreads; i++)
			pthread_join(w[i].th, NULL);
	cleanup(w, nthreads);
	free(w);
	return rc;
bad:
	fputs(usage, stderr);
	return 2;
}
