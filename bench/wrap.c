// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The interceptor's own cost per verb, without a device: QP create+destroy and MR reg+dereg through the
 * preload's wrappers and directly, alternating per iteration, against the stand-in libibverbs of
 * bench/stub (one system call per verb, as a real verb makes at least one: under the lab's TCG that call
 * flushes the emulated TLB, so the wrapper runs cold like around a real verb). Timed with the TSC, which
 * touches no page. Prints the medians and the median of the per-iteration differences (ns per pair).
 * Run it under `rdmactl run`, without LD_AUDIT, with the stub first in the library path:
 *   rdmactl run --job J -- env -u LD_AUDIT LD_LIBRARY_PATH=BUILD/bench/stub wrap [-n ITERS]
 * -c: count instead of time, for callgrind (bench/wrapcount.sh): after one untimed pair of each, N pairs
 * through each of the functions count_{wrapped,direct}_{qp,mr,pd,ctx,cq,srq,ah,mw}, whose inclusive
 * instruction counts, less one another, are what the interceptor adds to N pairs. The CQ, SRQ, AH and MW
 * pairs are made on a context and a PD opened after the context pairs: the wrapped side's through the
 * wrappers, the direct side's through libibverbs' own entry points (whose context's ops no wrapper replaced:
 * the inline ibv_alloc_mw and ibv_dealloc_mw call them).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "bench.h"

#undef ibv_reg_mr

static void report(const char *what, double *w, double *d, double *x, int n)
{
	double mx = median(x, n);

	printf("%s_wrapped_ns %.0f\n%s_direct_ns %.0f\n%s_extra_ns %.0f\n", what, median(w, n), what, median(d, n),
	       what, mx);
}

static struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *), *(*w_create_qp)(struct ibv_pd *,
									    struct ibv_qp_init_attr *);
static int (*destroy_qp)(struct ibv_qp *), (*w_destroy_qp)(struct ibv_qp *);
static struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int);
static struct ibv_mr *(*w_reg_mr)(struct ibv_pd *, void *, size_t, int);
static int (*dereg_mr)(struct ibv_mr *), (*w_dereg_mr)(struct ibv_mr *);
static struct ibv_pd *(*alloc_pd)(struct ibv_context *), *(*w_alloc_pd)(struct ibv_context *);
static int (*dealloc_pd)(struct ibv_pd *), (*w_dealloc_pd)(struct ibv_pd *);
static struct ibv_context *(*open_device)(struct ibv_device *), *(*w_open_device)(struct ibv_device *);
static int (*close_device)(struct ibv_context *), (*w_close_device)(struct ibv_context *);
static struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int),
	*(*w_create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
static int (*destroy_cq)(struct ibv_cq *), (*w_destroy_cq)(struct ibv_cq *);
static struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *),
	*(*w_create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
static int (*destroy_srq)(struct ibv_srq *), (*w_destroy_srq)(struct ibv_srq *);
static struct ibv_ah *(*create_ah)(struct ibv_pd *, struct ibv_ah_attr *), *(*w_create_ah)(struct ibv_pd *,
											 struct ibv_ah_attr *);
static int (*destroy_ah)(struct ibv_ah *), (*w_destroy_ah)(struct ibv_ah *);
/* The context and PD of each side's CQ, SRQ, AH and MW pairs. */
static struct ibv_context *wctx, *dctx;
static struct ibv_pd *wpd, *dpd;
static char buf[65536];

/* The counted loops (-c): the same calls as the timed ones, through the same pointers. */
static __attribute__((noinline)) int count_wrapped_qp(int n)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 16 } };

	while (n--) {
		struct ibv_qp *q = w_create_qp(NULL, &qa);

		if (!q || w_destroy_qp(q))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) int count_direct_qp(int n)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 16, .max_recv_wr = 16 } };

	while (n--) {
		struct ibv_qp *q = create_qp(NULL, &qa);

		if (!q || destroy_qp(q))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) int count_wrapped_mr(int n)
{
	while (n--) {
		struct ibv_mr *m = w_reg_mr(NULL, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

		if (!m || w_dereg_mr(m))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) int count_direct_mr(int n)
{
	while (n--) {
		struct ibv_mr *m = reg_mr_iova2(NULL, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);

		if (!m || dereg_mr(m))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) int count_wrapped_pd(int n)
{
	while (n--) {
		struct ibv_pd *p = w_alloc_pd(NULL);

		if (!p || w_dealloc_pd(p))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) int count_direct_pd(int n)
{
	while (n--) {
		struct ibv_pd *p = alloc_pd(NULL);

		if (!p || dealloc_pd(p))
			return 1;
	}
	return 0;
}

/* A context: the direct side's are libibverbs' own (the stub's ops, not wrapped). */
static __attribute__((noinline)) int count_wrapped_ctx(int n)
{
	while (n--) {
		struct ibv_context *c = w_open_device(NULL);

		if (!c || w_close_device(c))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) int count_direct_ctx(int n)
{
	while (n--) {
		struct ibv_context *c = open_device(NULL);

		if (!c || close_device(c))
			return 1;
	}
	return 0;
}

/* One counted loop of a kind whose pair is create (on a PD or the context) and destroy; w: the wrapped side. */
#define COUNT_LOOP(side, wside, kind, type, CREATE, DESTROY)                           \
	static __attribute__((noinline)) int count_##side##_##kind(int n)              \
	{                                                                              \
		const bool w = wside;                                                  \
		while (n--) {                                                          \
			type *o = CREATE;                                              \
			if (!o || (DESTROY))                                           \
				return 1;                                              \
		}                                                                      \
		return 0;                                                              \
	}
/* Its wrapped and its direct loop. */
#define COUNT_PAIR(kind, type, CREATE, DESTROY)                        \
	COUNT_LOOP(wrapped, true, kind, type, CREATE, DESTROY)         \
	COUNT_LOOP(direct, false, kind, type, CREATE, DESTROY)

static struct ibv_srq_init_attr srq_attr = { .attr = { .max_wr = 16, .max_sge = 1 } };
static struct ibv_ah_attr ah_attr = { .port_num = 1 };

COUNT_PAIR(cq, struct ibv_cq, w ? w_create_cq(wctx, 16, NULL, NULL, 0) : create_cq(dctx, 16, NULL, NULL, 0),
	   w ? w_destroy_cq(o) : destroy_cq(o))
COUNT_PAIR(srq, struct ibv_srq, w ? w_create_srq(wpd, &srq_attr) : create_srq(dpd, &srq_attr),
	   w ? w_destroy_srq(o) : destroy_srq(o))
COUNT_PAIR(ah, struct ibv_ah, w ? w_create_ah(wpd, &ah_attr) : create_ah(dpd, &ah_attr),
	   w ? w_destroy_ah(o) : destroy_ah(o))
/* the inline verbs: each side's context ops */
COUNT_PAIR(mw, struct ibv_mw, ibv_alloc_mw(w ? wpd : dpd, IBV_MW_TYPE_1), ibv_dealloc_mw(o))

static int count_more(int n)
{
	return count_wrapped_cq(n) || count_direct_cq(n) || count_wrapped_srq(n) || count_direct_srq(n) ||
	       count_wrapped_ah(n) || count_direct_ah(n) || count_wrapped_mw(n) || count_direct_mw(n);
}

static int count(int n)
{
	/* one of each first: the interceptor's start, lazy binding and first touches are not counted */
	if (count_wrapped_qp(1) || count_direct_qp(1) || count_wrapped_mr(1) || count_direct_mr(1) ||
	    count_wrapped_pd(1) || count_direct_pd(1) || count_wrapped_ctx(1) || count_direct_ctx(1))
		return 1;
	if (count_wrapped_qp(n) || count_direct_qp(n) || count_wrapped_mr(n) || count_direct_mr(n) ||
	    count_wrapped_pd(n) || count_direct_pd(n) || count_wrapped_ctx(n) || count_direct_ctx(n))
		return 1;
	/* opened after the context pairs, whose closes then look at no record */
	wctx = w_open_device(NULL);
	dctx = open_device(NULL);
	wpd = wctx ? w_alloc_pd(wctx) : NULL;
	dpd = dctx ? alloc_pd(dctx) : NULL;
	if (!wpd || !dpd || count_more(1) || count_more(n))
		return 1;
	printf("counted %d pairs\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	void *(*own_dlvsym)(void *, const char *, const char *);
	int n = 20000, opt, i, counting = 0;
	double *w, *d, *x, ns;
	Dl_info info;
	void *h, *libc;

	while ((opt = getopt(argc, argv, "cn:")) != -1) {
		if (opt == 'c') {
			counting = 1;
			continue;
		}
		if (opt != 'n' || (n = atoi(optarg)) <= 0) {
			fprintf(stderr, "usage: wrap [-c] [-n ITERS]\n");
			return 2;
		}
	}
	h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
	w = calloc(n, sizeof(*w));
	d = calloc(n, sizeof(*d));
	x = calloc(n, sizeof(*x));
	if (!h || !w || !d || !x)
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
	*(void **)&alloc_pd = own_dlvsym(h, "ibv_alloc_pd", "IBVERBS_1.1");
	*(void **)&dealloc_pd = own_dlvsym(h, "ibv_dealloc_pd", "IBVERBS_1.1");
	*(void **)&open_device = own_dlvsym(h, "ibv_open_device", "IBVERBS_1.1");
	*(void **)&close_device = own_dlvsym(h, "ibv_close_device", "IBVERBS_1.1");
	*(void **)&w_alloc_pd = dlvsym(RTLD_DEFAULT, "ibv_alloc_pd", "IBVERBS_1.1");
	*(void **)&w_dealloc_pd = dlvsym(RTLD_DEFAULT, "ibv_dealloc_pd", "IBVERBS_1.1");
	*(void **)&w_open_device = dlvsym(RTLD_DEFAULT, "ibv_open_device", "IBVERBS_1.1");
	*(void **)&w_close_device = dlvsym(RTLD_DEFAULT, "ibv_close_device", "IBVERBS_1.1");
#define BOTH(name)                                                                       \
	do {                                                                             \
		*(void **)&name = own_dlvsym(h, "ibv_" #name, "IBVERBS_1.1");            \
		*(void **)&w_##name = dlvsym(RTLD_DEFAULT, "ibv_" #name, "IBVERBS_1.1"); \
	} while (0)
	BOTH(create_cq);
	BOTH(destroy_cq);
	BOTH(create_srq);
	BOTH(destroy_srq);
	BOTH(create_ah);
	BOTH(destroy_ah);
#undef BOTH
	if (!create_qp || !destroy_qp || !reg_mr_iova2 || !dereg_mr || !w_create_qp || !w_destroy_qp || !w_reg_mr ||
	    !w_dereg_mr)
		return 1;
	if (counting && (!alloc_pd || !dealloc_pd || !open_device || !close_device || !w_alloc_pd || !w_dealloc_pd ||
			 !w_open_device || !w_close_device || !create_cq || !w_create_cq || !destroy_cq || !w_destroy_cq ||
			 !create_srq || !w_create_srq || !destroy_srq || !w_destroy_srq || !create_ah || !w_create_ah ||
			 !destroy_ah || !w_destroy_ah)) {
		fprintf(stderr, "wrap: -c needs the stub's PD, device, CQ, SRQ and AH verbs (make bench)\n");
		return 1;
	}
	if (!dladdr((void *)create_qp, &info) || !strstr(info.dli_fname, "stub"))
		fprintf(stderr, "wrap: libibverbs.so.1 is %s, not the stub: put BUILD/bench/stub in LD_LIBRARY_PATH\n",
			info.dli_fname ? info.dli_fname : "?");
	if ((void *)create_qp == (void *)w_create_qp)
		fprintf(stderr, "wrap: ibv_create_qp is not intercepted here: both columns measure the same\n");
	if (counting)
		return count(n);
	ns = calibrate();
	for (i = 0; i < n * 2; i++) {
		struct ibv_qp_init_attr qa = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		bool wrapped = (i % 2) ^ ((i / 2) % 2);
		struct ibv_qp *q;
		uint64_t t0, t1;

		t0 = ticks();
		q = wrapped ? w_create_qp(NULL, &qa) : create_qp(NULL, &qa);
		if (!q || (wrapped ? w_destroy_qp(q) : destroy_qp(q)))
			return 1;
		t1 = ticks();
		(wrapped ? w : d)[i / 2] = (t1 - t0) * ns;
	}
	for (i = 0; i < n; i++)
		x[i] = w[i] - d[i];
	report("qp", w, d, x, n);
	for (i = 0; i < n * 2; i++) {
		bool wrapped = (i % 2) ^ ((i / 2) % 2);
		struct ibv_mr *m;
		uint64_t t0, t1;

		t0 = ticks();
		m = wrapped ? w_reg_mr(NULL, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)
			    : reg_mr_iova2(NULL, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
		if (!m || (wrapped ? w_dereg_mr(m) : dereg_mr(m)))
			return 1;
		t1 = ticks();
		(wrapped ? w : d)[i / 2] = (t1 - t0) * ns;
	}
	for (i = 0; i < n; i++)
		x[i] = w[i] - d[i];
	report("mr", w, d, x, n);
	return 0;
}
