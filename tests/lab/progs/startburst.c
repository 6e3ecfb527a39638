// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab program: N processes that start together, as an MPI launcher starts a job's ranks. It forks N
 * children; each opens the device, allocates a PD and a CQ, says it is ready and waits. When all are ready
 * they are released at once and each creates one RC QP (round 1); when all are done, they are released
 * again and each creates its own k objects of QP, CQ and MR (with bytes), 1 <= k <= K, in an order of its
 * own (round 2). Then everything is held until SIGTERM, when the children end together (half of them
 * killed, the others exiting through exit()).
 *   startburst -n N [-k K] [-b MRBYTES] [-d DEV]
 * Prints, after each round, what was asked, created and refused per kind:
 *   round1 qp asked=N created=C refused=R
 *   round2 qp asked=.. created=.. refused=.. cq ... mr ... mr_bytes created=BYTES
 *   holding
 * and "errors=E" (a failure other than a refusal, of setup or of a create) when E is not 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

enum { K_QP, K_CQ, K_MR, NK };
static const char *const kname[NK] = { "qp", "cq", "mr" };

struct result {
	int round1; /* 1 created, 0 refused, -1 error */
	int asked[NK], made[NK], refused[NK];
	unsigned long long bytes;
	int err;  /* setup failed */
	int err2; /* round 2 failures that were not refusals */
	int last_errno; /* of a failure that was not a refusal */
};

static const char *dev_name = "rxe0";
static unsigned long long mr_unit = 4096;

static unsigned int round2_count(int i, int k)
{
	return 1 + (unsigned int)(i * 7 % k);
}

static int round2_kind(int i, unsigned int j)
{
	return (int)((unsigned int)(i * 13) + j) % NK;
}

static struct ibv_qp *new_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &qa);
}

/*
 * A refusal is a failure with errno EDQUOT (run the ranks with RDMACTL_ERRNO=EDQUOT): any other failure is
 * an error, counted apart with its errno.
 */
static void child(int i, int k, struct result *r, int ready, int go1, int go2)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	unsigned int j, n;
	char c;
	int d;

	for (d = 0; list && list[d] && !ctx; d++)
		if (!strcmp(ibv_get_device_name(list[d]), dev_name))
			ctx = ibv_open_device(list[d]);
	if (!ctx || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 4, NULL, NULL, 0))) {
		r->err++;
		r->last_errno = errno;
	}
	if (write(ready, "r", 1) != 1 || read(go1, &c, 1) != 0)
		_exit(1);
	r->round1 = -1;
	if (pd && cq) {
		errno = 0;
		r->round1 = new_qp(pd, cq) ? 1 : errno == EDQUOT ? 0 : -1;
		if (r->round1 < 0)
			r->last_errno = errno;
	}
	if (write(ready, "r", 1) != 1 || read(go2, &c, 1) != 0)
		_exit(1);
	n = pd && cq ? round2_count(i, k) : 0;
	for (j = 0; j < n; j++) {
		int kk = round2_kind(i, j);
		bool ok;

		r->asked[kk]++;
		if (kk == K_QP) {
			ok = new_qp(pd, cq) != NULL;
		} else if (kk == K_CQ) {
			ok = ibv_create_cq(ctx, 4, NULL, NULL, 0) != NULL;
		} else {
			size_t len = (size_t)(mr_unit * (1 + (unsigned int)(i + (int)j) % 4));
			void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			ok = buf != MAP_FAILED && ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE) != NULL;
			if (ok)
				r->bytes += len;
		}
		if (ok) {
			r->made[kk]++;
		} else if (errno == EDQUOT) {
			r->refused[kk]++;
		} else {
			r->err2++;
			r->last_errno = errno;
		}
	}
	if (write(ready, "r", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

/* A rank asked to end exits through exit(): the interceptor's exit handler detaches it. */
static void child_term(int sig)
{
	(void)sig;
	exit(0);
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

static volatile sig_atomic_t done;

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	int n = 0, k = 3, opt, i, ready[2], go1[2], go2[2], errs = 0, kk;
	int asked[NK] = { 0 }, made[NK] = { 0 }, refused[NK] = { 0 }, r1[3] = { 0 };
	unsigned long long bytes = 0;
	struct result *res;
	pid_t *pids;

	while ((opt = getopt(argc, argv, "n:k:b:d:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'k': k = atoi(optarg); break;
		case 'b': mr_unit = strtoull(optarg, NULL, 0); break;
		case 'd': dev_name = optarg; break;
		default:
			fprintf(stderr, "usage: startburst -n N [-k K] [-b MRBYTES] [-d DEV]\n");
			return 2;
		}
	}
	if (n <= 0 || n > 100000 || k <= 0 || !mr_unit) {
		fprintf(stderr, "usage: startburst -n N [-k K] [-b MRBYTES] [-d DEV]\n");
		return 2;
	}
	res = mmap(NULL, sizeof(*res) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc((size_t)n, sizeof(*pids));
	if (res == MAP_FAILED || !pids || pipe(ready) || pipe(go1) || pipe(go2)) {
		perror("startburst");
		return 1;
	}
	signal(SIGTERM, on_term);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			signal(SIGTERM, child_term);
			close(ready[0]);
			close(go1[1]);
			close(go2[1]);
			child(i, k, &res[i], ready[1], go1[0], go2[0]);
		}
		if (pids[i] < 0) {
			perror("startburst: fork");
			n = i;
			errs++;
			break;
		}
	}
	close(ready[1]);
	close(go1[0]);
	close(go2[0]);
	wait_for(ready[0], n);
	close(go1[1]); /* all at once */
	wait_for(ready[0], n);
	for (i = 0; i < n; i++) {
		r1[res[i].round1 + 1]++;
		/* a rank whose setup failed tried no QP: one error */
		errs += res[i].err ? res[i].err : res[i].round1 < 0;
	}
	printf("round1 qp asked=%d created=%d refused=%d\n", n, r1[2], r1[1]);
	fflush(stdout);
	close(go2[1]);
	wait_for(ready[0], n);
	for (i = 0; i < n; i++) {
		for (kk = 0; kk < NK; kk++) {
			asked[kk] += res[i].asked[kk];
			made[kk] += res[i].made[kk];
			refused[kk] += res[i].refused[kk];
		}
		bytes += res[i].bytes;
		errs += res[i].err2;
	}
	printf("round2");
	for (kk = 0; kk < NK; kk++)
		printf(" %s asked=%d created=%d refused=%d", kname[kk], asked[kk], made[kk], refused[kk]);
	printf(" mr_bytes created=%llu\n", bytes);
	if (errs) {
		printf("errors=%d", errs);
		for (i = 0; i < n; i++)
			if (res[i].last_errno) {
				printf(" (rank %d: %s)", i, strerror(res[i].last_errno));
				break;
			}
		printf("\n");
	}
	printf("holding\n");
	fflush(stdout);
	while (!done)
		pause();
	/* end together: even ranks killed, odd ones asked to exit */
	for (i = 0; i < n; i++)
		kill(pids[i], i % 2 ? SIGTERM : SIGKILL);
	for (i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	return 0;
}
