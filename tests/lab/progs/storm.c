// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lab helper: a create/destroy storm of RDMA objects from several processes, counting every operation. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/*
 * storm [-d DEV] [-p PROCS] [-n ITERS] [-k KINDS]
 * Each process opens DEV (ctx), allocates a PD and a CQ, then ITERS times creates and destroys one object
 * of each kind in KINDS (comma list of qp, mr, cq, pd; default all), then frees its PD, CQ and context.
 * Prints one JSON line: per process and in total, the successful creates and destroys per kind, which is
 * exactly what the kernel's resource tracker saw from these processes.
 */

enum { K_CTX, K_PD, K_CQ, K_QP, K_MR, NK };
static const char *const kname[NK] = { "ctx", "pd", "cq", "qp", "mr" };

struct counts {
	int pid;
	uint64_t create[NK], destroy[NK];
	int failed;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	struct ibv_context *ctx = NULL;
	int i;

	if (!list)
		return NULL;
	for (i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			dev = list[i];
			break;
		}
	if (dev)
		ctx = ibv_open_device(dev);
	ibv_free_device_list(list);
	return ctx;
}

static void child(const char *devname, long iters, unsigned int kinds, struct counts *c)
{
	static char buf[65536];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	long i;

	c->pid = getpid();
	ctx = open_dev(devname);
	if (!ctx)
		goto fail;
	c->create[K_CTX]++;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		goto fail_ctx;
	c->create[K_PD]++;
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		goto fail_pd;
	c->create[K_CQ]++;
	for (i = 0; i < iters; i++) {
		if (kinds & (1u << K_QP)) {
			struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
						       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
								.max_send_sge = 1, .max_recv_sge = 1 } };
			struct ibv_qp *qp = ibv_create_qp(pd, &a);

			if (!qp)
				goto fail_cq;
			c->create[K_QP]++;
			if (ibv_destroy_qp(qp))
				goto fail_cq;
			c->destroy[K_QP]++;
		}
		if (kinds & (1u << K_MR)) {
			struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

			if (!mr)
				goto fail_cq;
			c->create[K_MR]++;
			if (ibv_dereg_mr(mr))
				goto fail_cq;
			c->destroy[K_MR]++;
		}
		if (kinds & (1u << K_CQ)) {
			struct ibv_cq *x = ibv_create_cq(ctx, 16, NULL, NULL, 0);

			if (!x)
				goto fail_cq;
			c->create[K_CQ]++;
			if (ibv_destroy_cq(x))
				goto fail_cq;
			c->destroy[K_CQ]++;
		}
		if (kinds & (1u << K_PD)) {
			struct ibv_pd *x = ibv_alloc_pd(ctx);

			if (!x)
				goto fail_cq;
			c->create[K_PD]++;
			if (ibv_dealloc_pd(x))
				goto fail_cq;
			c->destroy[K_PD]++;
		}
	}
	if (!ibv_destroy_cq(cq))
		c->destroy[K_CQ]++;
	if (!ibv_dealloc_pd(pd))
		c->destroy[K_PD]++;
	if (!ibv_close_device(ctx))
		c->destroy[K_CTX]++;
	return;
fail_cq:
	fprintf(stderr, "storm[%d]: iteration %ld: %s\n", c->pid, i, strerror(errno));
	c->failed = 1;
	if (!ibv_destroy_cq(cq))
		c->destroy[K_CQ]++;
fail_pd:
	if (!ibv_dealloc_pd(pd))
		c->destroy[K_PD]++;
fail_ctx:
	if (!ibv_close_device(ctx))
		c->destroy[K_CTX]++;
fail:
	c->failed = 1;
}

static void print_counts(const char *key, const uint64_t *v)
{
	int k;

	printf("\"%s\":{", key);
	for (k = 0; k < NK; k++)
		printf("%s\"%s\":%llu", k ? "," : "", kname[k], (unsigned long long)v[k]);
	printf("}");
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	long iters = 100, procs = 4, p;
	unsigned int kinds = (1u << K_QP) | (1u << K_MR) | (1u << K_CQ) | (1u << K_PD);
	struct counts *c, total = { 0 };
	uint64_t ops = 0;
	double t0, el;
	int opt, k, failed = 0;

	while ((opt = getopt(argc, argv, "d:p:n:k:h")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'p':
			procs = strtol(optarg, NULL, 0);
			break;
		case 'n':
			iters = strtol(optarg, NULL, 0);
			break;
		case 'k': {
			char *s = strdup(optarg), *tok, *save = NULL;

			kinds = 0;
			for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				for (k = K_PD; k < NK; k++)
					if (!strcmp(tok, kname[k]))
						break;
				if (k < NK) {
					kinds |= 1u << k;
				} else {
					fprintf(stderr, "storm: unknown kind '%s'\n", tok);
					return 2;
				}
			}
			free(s);
			break;
		}
		default:
			fprintf(stderr, "usage: storm [-d DEV] [-p PROCS] [-n ITERS] [-k qp,mr,cq,pd]\n");
			return 2;
		}
	}
	if (procs < 1 || procs > 256 || iters < 0) {
		fprintf(stderr, "storm: bad -p or -n\n");
		return 2;
	}
	c = calloc(procs, sizeof(*c));
	if (!c)
		return 1;
	t0 = now();
	for (p = 0; p < procs; p++) {
		int fd[2];
		pid_t pid;

		if (pipe(fd))
			return 1;
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			struct counts mine = { 0 };

			close(fd[0]);
			child(dev, iters, kinds, &mine);
			if (write(fd[1], &mine, sizeof(mine)) != sizeof(mine))
				_exit(1);
			_exit(mine.failed);
		}
		close(fd[1]);
		c[p].pid = fd[0]; /* read end, replaced by the child's record below */
	}
	for (p = 0; p < procs; p++) {
		int fd = c[p].pid;

		if (read(fd, &c[p], sizeof(c[p])) != sizeof(c[p])) {
			memset(&c[p], 0, sizeof(c[p]));
			c[p].failed = 1;
		}
		close(fd);
	}
	while (wait(NULL) > 0)
		;
	el = now() - t0;
	printf("{\"elapsed_s\":%.6f,\"processes\":[", el);
	for (p = 0; p < procs; p++) {
		printf("%s{\"pid\":%d,", p ? "," : "", c[p].pid);
		print_counts("create", c[p].create);
		printf(",");
		print_counts("destroy", c[p].destroy);
		printf("}");
		for (k = 0; k < NK; k++) {
			total.create[k] += c[p].create[k];
			total.destroy[k] += c[p].destroy[k];
			ops += c[p].create[k] + c[p].destroy[k];
		}
		failed |= c[p].failed;
	}
	printf("],");
	print_counts("create", total.create);
	printf(",");
	print_counts("destroy", total.destroy);
	printf(",\"ops\":%llu,\"failed\":%s}\n", (unsigned long long)ops, failed ? "true" : "false");
	free(c);
	return failed;
}
