// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab program: creates resources through the inline "_ex" verbs of verbs.h only (create_cq_ex,
 * create_qp_ex with extended attributes, create_srq_ex with a CQ, alloc_mw, open_xrcd, create_wq), which
 * call the context's op pointers and never an exported create verb. Prints "<kind> created=N refused=M
 * errno=E" per kind.
 *   exverbs [-d DEV] [-q NQP] [-c NCQ] [-s NSRQ] [-m NMW] [-x NXRCD] [-W NWQ] [-w WR] [-H SECONDS] [-F NQP]
 *           [-E -- PROG ARGS...]
 * -F: after creating (and before holding), fork a child that opens its own context and creates NQP QPs
 * through the exported ibv_create_qp ("child <pid> qp created=..."), holds as long, and exits.
 * -E: after holding, exec PROG ARGS... with everything still open (instead of destroying and exiting).
 */
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int n_qp = 1, n_cq = 1, n_srq, n_mw, n_xrcd, n_wq, wr = 16, hold, n_child = -1, do_exec;
static const char *dev_name = "rxe0";

static void report(const char *kind, int created, int refused, int err)
{
	printf("%s created=%d refused=%d errno=%s\n", kind, created, refused, err ? strerrorname_np(err) : "0");
	fflush(stdout);
}

/* In a forked child: a context of its own (the parent's is not usable here), n exported-verb QPs. */
static int child(int n)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i, made = 0, refused = 0, err = 0;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	for (i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (!ctx || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0))) {
		fprintf(stderr, "exverbs child: setup: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		if (ibv_create_qp(pd, &qa))
			made++;
		else
			refused++, err = errno;
	}
	printf("child %d qp created=%d refused=%d errno=%s\n", (int)getpid(), made, refused,
	       err ? strerrorname_np(err) : "0");
	fflush(stdout);
	if (hold)
		sleep(hold);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cqs[256], *cq0;
	struct ibv_qp *qps[256];
	struct ibv_srq *srqs[256];
	struct ibv_mw *mws[256];
	struct ibv_xrcd *xrcds[256];
	struct ibv_wq *wqs[256];
	int i, opt, nc = 0, nq = 0, ns = 0, nm = 0, nx = 0, nw = 0, err, refused;

	while ((opt = getopt(argc, argv, "d:q:c:s:m:x:W:w:H:F:E")) != -1) {
		switch (opt) {
		case 'x': n_xrcd = atoi(optarg); break;
		case 'W': n_wq = atoi(optarg); break;
		case 'E': do_exec = 1; break;
		case 'F': n_child = atoi(optarg); break;
		case 'd': dev_name = optarg; break;
		case 'q': n_qp = atoi(optarg); break;
		case 'c': n_cq = atoi(optarg); break;
		case 's': n_srq = atoi(optarg); break;
		case 'm': n_mw = atoi(optarg); break;
		case 'w': wr = atoi(optarg); break;
		case 'H': hold = atoi(optarg); break;
		default: return 2;
		}
	}
	if (n_qp > 256 || n_cq > 256 || n_srq > 256 || n_mw > 256 || n_xrcd > 256 || n_wq > 256 || n_cq < 1 ||
	    (do_exec && optind >= argc))
		return 2;
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "exverbs: cannot open %s: %s\n", dev_name, strerror(errno));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fprintf(stderr, "exverbs: alloc_pd: %s\n", strerror(errno));
		return 1;
	}

	err = refused = 0;
	for (i = 0; i < n_cq; i++) {
		struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS };

		cqs[nc] = ibv_create_cq_ex(ctx, &ca);
		if (cqs[nc])
			nc++;
		else
			refused++, err = errno;
	}
	report("cq", nc, refused, err);
	if (!nc)
		return 0;
	cq0 = cqs[0];

	err = refused = 0;
	for (i = 0; i < n_qp; i++) {
		struct ibv_qp_init_attr_ex qa = {
			.send_cq = ibv_cq_ex_to_cq(cq0), .recv_cq = ibv_cq_ex_to_cq(cq0),
			.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC, .pd = pd,
			/* More than IBV_QP_INIT_ATTR_PD: the inline verb takes the context op path. */
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND,
		};

		qps[nq] = ibv_create_qp_ex(ctx, &qa);
		if (qps[nq])
			nq++;
		else
			refused++, err = errno;
	}
	report("qp", nq, refused, err);

	err = refused = 0;
	for (i = 0; i < n_srq; i++) {
		struct ibv_srq_init_attr_ex sa = {
			.attr = { .max_wr = wr, .max_sge = 1 }, .srq_type = IBV_SRQT_BASIC, .pd = pd,
			.cq = ibv_cq_ex_to_cq(cq0),
			.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ,
		};

		srqs[ns] = ibv_create_srq_ex(ctx, &sa);
		if (srqs[ns])
			ns++;
		else
			refused++, err = errno;
	}
	if (n_srq)
		report("srq", ns, refused, err);

	err = refused = 0;
	for (i = 0; i < n_mw; i++) {
		mws[nm] = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		if (mws[nm])
			nm++;
		else
			refused++, err = errno;
	}
	if (n_mw)
		report("mw", nm, refused, err);

	err = refused = 0;
	for (i = 0; i < n_xrcd; i++) {
		struct ibv_xrcd_init_attr xa = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1, .oflags = O_CREAT,
		};

		xrcds[nx] = ibv_open_xrcd(ctx, &xa);
		if (xrcds[nx])
			nx++;
		else
			refused++, err = errno;
	}
	if (n_xrcd)
		report("xrcd", nx, refused, err);

	err = refused = 0;
	for (i = 0; i < n_wq; i++) {
		struct ibv_wq_init_attr wa = {
			.wq_type = IBV_WQT_RQ, .max_wr = wr, .max_sge = 1, .pd = pd, .cq = ibv_cq_ex_to_cq(cq0),
		};

		wqs[nw] = ibv_create_wq(ctx, &wa);
		if (wqs[nw])
			nw++;
		else
			refused++, err = errno;
	}
	if (n_wq)
		report("wq", nw, refused, err);

	if (n_child >= 0) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (!pid)
			return child(n_child);
		waitpid(pid, NULL, 0);
	}
	if (hold) {
		printf("holding\n");
		fflush(stdout);
		sleep(hold);
	}
	if (do_exec) {
		fflush(stdout);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "exverbs: exec %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	for (i = 0; i < nw; i++)
		ibv_destroy_wq(wqs[i]);
	for (i = 0; i < nx; i++)
		ibv_close_xrcd(xrcds[i]);
	for (i = 0; i < nm; i++)
		ibv_dealloc_mw(mws[i]);
	for (i = 0; i < ns; i++)
		ibv_destroy_srq(srqs[i]);
	for (i = 0; i < nq; i++)
		ibv_destroy_qp(qps[i]);
	for (i = 0; i < nc; i++)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqs[i]));
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("done\n");
	return 0;
}
