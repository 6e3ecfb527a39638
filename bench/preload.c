// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Interceptor overhead: time N QP create+destroy and N MR reg+dereg pairs on one device; run it bare and
 * under `rdmactl run` (bench/preload.sh does both, alternating). Prints "qp_ns <ns per pair>" and "mr_ns ...".
 *   preload [-d DEV] [-n ITERS] [-s MR_BYTES]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0";
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	size_t size = 65536;
	int n = 200, opt, i;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	double t0, t1;
	void *buf;

	while ((opt = getopt(argc, argv, "d:n:s:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: preload [-d DEV] [-n ITERS] [-s MR_BYTES]\n");
			return 2;
		}
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 64, NULL, NULL, 0)) ||
	    !(buf = aligned_alloc(4096, size))) {
		fprintf(stderr, "preload: setup on %s: %s\n", dev, strerror(errno));
		return 1;
	}
	memset(buf, 0, size);

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *qp = ibv_create_qp(pd, &qa);

		if (!qp || ibv_destroy_qp(qp)) {
			fprintf(stderr, "preload: qp %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	t1 = now_ns();
	printf("qp_ns %.0f\n", (t1 - t0) / n);

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE);

		if (!mr || ibv_dereg_mr(mr)) {
			fprintf(stderr, "preload: mr %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	t1 = now_ns();
	printf("mr_ns %.0f\n", (t1 - t0) / n);

	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(buf);
	return 0;
}
