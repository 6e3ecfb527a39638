// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Interceptor overhead: time N QP create+destroy and N MR reg+dereg pairs on one device; run it bare and
 * under `rdmactl run` (bench/preload.sh does both, alternating). Prints "qp_ns <ns per pair>" and "mr_ns ...".
 * With -i (interleaved; run with the preload but without LD_AUDIT): each iteration times one pair through
 * the intercepted verbs and one through libibverbs' own entry points (dlvsym on its handle), back to back,
 * so both see the same machine noise; prints the medians: "qp_wrapped_ns", "qp_direct_ns", "mr_...".
 * Both sides call through function pointers (the wrapped ones are the preload's, found by dlvsym in the
 * global scope), so neither pays for this program's PLT and GOT, which a bare program pays as well.
 * libibverbs' ibv_reg_mr is a tail call of ibv_reg_mr_iova2 through its PLT, which the preload interposes:
 * the direct side calls libibverbs' ibv_reg_mr_iova2 itself (what a bare ibv_reg_mr amounts to), else it
 * would be charged by the preload's ibv_reg_mr_iova2 (and never released by the direct dereg).
 *   preload [-i] [-d DEV] [-n ITERS] [-s MR_BYTES]
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "bench.h"

static struct ibv_qp_init_attr qattr(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return qa;
}

static int interleaved(struct ibv_pd *pd, struct ibv_cq *cq, void *buf, size_t size, int n)
{
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *), *(*w_create_qp)(struct ibv_pd *,
										    struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *), (*w_destroy_qp)(struct ibv_qp *);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int);
	struct ibv_mr *(*w_reg_mr)(struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *), (*w_dereg_mr)(struct ibv_mr *);
	double *w = calloc(n, sizeof(*w)), *d = calloc(n, sizeof(*d)), t0, t1;
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD), *libc;
	void *(*own_dlvsym)(void *, const char *, const char *);
	int i;

	if (!h || !w || !d)
		return 1;
	/* glibc's own dlvsym: the preload's (it interposes dlvsym) would hand out its wrappers in h too */
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	*(void **)&own_dlvsym = libc ? dlvsym(libc, "dlvsym", "GLIBC_2.34") : NULL;
	if (!own_dlvsym)
		own_dlvsym = dlvsym;
	*(void **)&create_qp = own_dlvsym(h, "ibv_create_qp", "IBVERBS_1.1");
	*(void **)&destroy_qp = own_dlvsym(h, "ibv_destroy_qp", "IBVERBS_1.1");
	*(void **)&reg_mr_iova2 = own_dlvsym(h, "ibv_reg_mr_iova2", "IBVERBS_1.8");
	*(void **)&dereg_mr = own_dlvsym(h, "ibv_dereg_mr", "IBVERBS_1.1");
	*(void **)&w_create_qp = dlvsym(RTLD_DEFAULT, "ibv_create_qp", "IBVERBS_1.1");
	*(void **)&w_destroy_qp = dlvsym(RTLD_DEFAULT, "ibv_destroy_qp", "IBVERBS_1.1");
	*(void **)&w_reg_mr = dlvsym(RTLD_DEFAULT, "ibv_reg_mr", "IBVERBS_1.1");
	*(void **)&w_dereg_mr = dlvsym(RTLD_DEFAULT, "ibv_dereg_mr", "IBVERBS_1.1");
	if (!create_qp || !destroy_qp || !reg_mr_iova2 || !dereg_mr || !w_create_qp || !w_destroy_qp || !w_reg_mr ||
	    !w_dereg_mr)
		return 1;
	if ((void *)create_qp == (void *)w_create_qp)
		fprintf(stderr, "preload: ibv_create_qp is not intercepted here: both columns measure the same\n");
	/* the order alternates every iteration, so neither side always runs second */
	for (i = 0; i < n * 2; i++) {
		struct ibv_qp_init_attr qa = qattr(cq);
		bool wrapped = (i % 2) ^ ((i / 2) % 2);
		struct ibv_qp *q;

		t0 = now_ns();
		q = wrapped ? w_create_qp(pd, &qa) : create_qp(pd, &qa);
		if (!q || (wrapped ? w_destroy_qp(q) : destroy_qp(q)))
			return 1;
		t1 = now_ns();
		(wrapped ? w : d)[i / 2] = t1 - t0;
	}
	printf("qp_wrapped_ns %.0f\nqp_direct_ns %.0f\n", median(w, n), median(d, n));
	for (i = 0; i < n * 2; i++) {
		bool wrapped = (i % 2) ^ ((i / 2) % 2);
		struct ibv_mr *m;

		t0 = now_ns();
		m = wrapped ? w_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE)
			    : reg_mr_iova2(pd, buf, size, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
		if (!m || (wrapped ? w_dereg_mr(m) : dereg_mr(m)))
			return 1;
		t1 = now_ns();
		(wrapped ? w : d)[i / 2] = t1 - t0;
	}
	printf("mr_wrapped_ns %.0f\nmr_direct_ns %.0f\n", median(w, n), median(d, n));
	free(w);
	free(d);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0";
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	size_t size = 65536;
	int n = 200, opt, i, inter = 0;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	double t0, t1;
	void *buf;

	while ((opt = getopt(argc, argv, "id:n:s:")) != -1) {
		switch (opt) {
		case 'i': inter = 1; break;
		case 'd': dev = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: preload [-i] [-d DEV] [-n ITERS] [-s MR_BYTES]\n");
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
	if (inter)
		return interleaved(pd, cq, buf, size, n);

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
