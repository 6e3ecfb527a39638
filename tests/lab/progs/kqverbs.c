// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper for kernel quotas: create objects of one kind until N exist or creation fails, without any help
 * from rdmactl (also built statically: kqverbs-static, which no preload can see).
 *   kqverbs -k KIND [-n N] [-s SIZE] [-q WR] [-d DEV] [-w] [-H FILE]
 * KIND: ctx, pd, cq, qp, srq, mr, mw, ah, xrcd, wq. SIZE: bytes per MR (default 4096). WR: a QP's send queue
 * depth (default 1; one past the device's maximum makes the driver fail the create). -w: PDs through write() on the
 * uverbs fd (the legacy command path) instead of libibverbs. xrcd and wq are sent as raw ioctls (OPEN_XRCD
 * through INVOKE_WRITE, as libibverbs would; WQ_CREATE): libibverbs answers EOPNOTSUPP itself, without asking
 * the kernel, for a provider without them (rxe). -H FILE: once done, print "holding" and keep
 * everything until FILE exists. Prints "KIND created=K errno=NAME" (NAME "0" when all N were created) and
 * "alive" after it, so that a test sees the process survived a refusal; exit 0 if all N were created, 3
 * if creation stopped early, 1 on a setup failure.
 *   kqverbs -C ROUNDS [-n N] [-d DEV]
 * Churn (the chaos test's program): ROUNDS times, open the device, allocate a PD, a CQ and an MR, create up to N
 * QPs (until one is refused), then destroy a random part of it (one round in four all of it, and close the
 * device); a SIGKILL can come at any step. Prints "churn rounds=R created=C refused=F other=O" (other: errors
 * that are not EDQUOT, the last's name after it).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

#define MAXN 4096

static const char *ename(int e)
{
	switch (e) {
	case 0: return "0";
	case EDQUOT: return "EDQUOT";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSYS: return "ENOSYS";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	default: return strerror(e);
	}
}

/* ALLOC_PD through write(): the legacy command path, as a program that bypasses libibverbs' ioctl would. */
static int write_alloc_pd(struct ibv_context *ctx)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd cmd;
	} req;
	struct ib_uverbs_alloc_pd_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_ALLOC_PD;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	if (write(ctx->cmd_fd, &req, sizeof(req)) != (ssize_t)sizeof(req))
		return errno ? errno : EIO;
	return 0;
}

struct ioreq {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[12];
};

static void attr(struct ioreq *r, __u16 id, __u16 len, __u64 data)
{
	struct ib_uverbs_attr *a = &r->attrs[r->hdr.num_attrs++];

	a->attr_id = id;
	a->len = len;
	a->data = data;
}

static int send_ioctl(struct ibv_context *ctx, struct ioreq *r)
{
	r->hdr.length = sizeof(r->hdr) + r->hdr.num_attrs * sizeof(r->attrs[0]);
	r->hdr.driver_id = RDMA_DRIVER_RXE; /* the kernel checks it against the device's driver */
	return ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, r) ? errno : 0;
}

/* OPEN_XRCD (a new domain, no inode) through INVOKE_WRITE, the write command first as libibverbs sends it. */
static int ioctl_open_xrcd(struct ibv_context *ctx)
{
	struct ib_uverbs_open_xrcd cmd = { .fd = (__u32)-1, .oflags = O_CREAT };
	struct ib_uverbs_open_xrcd_resp resp;
	struct ioreq r = { .hdr = { .object_id = UVERBS_OBJECT_DEVICE, .method_id = UVERBS_METHOD_INVOKE_WRITE } };

	attr(&r, UVERBS_ATTR_WRITE_CMD, sizeof(__u64), IB_USER_VERBS_CMD_OPEN_XRCD);
	attr(&r, UVERBS_ATTR_CORE_IN, sizeof(cmd), (uintptr_t)&cmd);
	attr(&r, UVERBS_ATTR_CORE_OUT, sizeof(resp), (uintptr_t)&resp);
	return send_ioctl(ctx, &r);
}

/* WQ_CREATE (a receive WQ) through its ioctl method, with the attributes libibverbs gives it. */
static int ioctl_create_wq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	__u32 max_wr, max_sge, wq_num;
	struct ioreq r = { .hdr = { .object_id = UVERBS_OBJECT_WQ, .method_id = UVERBS_METHOD_WQ_CREATE } };

	attr(&r, UVERBS_ATTR_CREATE_WQ_HANDLE, 0, 0);
	attr(&r, UVERBS_ATTR_CREATE_WQ_PD_HANDLE, sizeof(__u32), pd->handle);
	attr(&r, UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, sizeof(__u32), cq->handle);
	attr(&r, UVERBS_ATTR_CREATE_WQ_USER_HANDLE, sizeof(__u64), 1);
	attr(&r, UVERBS_ATTR_CREATE_WQ_TYPE, sizeof(__u64), IBV_WQT_RQ);
	attr(&r, UVERBS_ATTR_CREATE_WQ_MAX_WR, sizeof(__u32), 4);
	attr(&r, UVERBS_ATTR_CREATE_WQ_MAX_SGE, sizeof(__u32), 1);
	attr(&r, UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, sizeof(max_wr), (uintptr_t)&max_wr);
	attr(&r, UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, sizeof(max_sge), (uintptr_t)&max_sge);
	attr(&r, UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, sizeof(wq_num), (uintptr_t)&wq_num);
	return send_ioctl(ctx, &r);
}

/* One churn round's objects. */
struct churn {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp[MAXN];
	int nqp;
	long created, refused, other;
	int last;
};

static void churn_err(struct churn *c, int e)
{
	if (e == EDQUOT) {
		c->refused++;
	} else {
		c->other++;
		c->last = e;
	}
}

static int churn(struct ibv_device *dev, int n, long rounds)
{
	static struct churn c;
	static char buf[65536];
	long r;
	int i;

	srand((unsigned int)getpid());
	for (r = 0; r < rounds; r++) {
		if (!c.ctx && !(c.ctx = ibv_open_device(dev))) {
			churn_err(&c, errno == ENOENT ? EDQUOT : errno); /* libibverbs: a refused open is ENOENT */
			continue;
		}
		if (!c.pd && !(c.pd = ibv_alloc_pd(c.ctx)))
			churn_err(&c, errno);
		if (!c.cq && !(c.cq = ibv_create_cq(c.ctx, 4 * MAXN > 1024 ? 1024 : 4 * MAXN, NULL, NULL, 0)))
			churn_err(&c, errno);
		if (c.pd && !c.mr && !(c.mr = ibv_reg_mr(c.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE)))
			churn_err(&c, errno);
		while (c.pd && c.cq && c.nqp < n) {
			struct ibv_qp_init_attr qa = { .send_cq = c.cq, .recv_cq = c.cq, .qp_type = IBV_QPT_RC,
						       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
								.max_recv_sge = 1 } };
			struct ibv_qp *qp = ibv_create_qp(c.pd, &qa);

			if (!qp) {
				churn_err(&c, errno);
				break;
			}
			c.qp[c.nqp++] = qp;
			c.created++;
		}
		/*
		 * a pause of up to 10 ms a round (20 at the limit): churners that never sleep keep the lab's emulated
		 * CPUs so busy that each command of the test beside them takes seconds
		 */
		usleep((useconds_t)(rand() % (c.nqp < n ? 20000 : 10000)));
		/* give back a random part: some QPs, sometimes the MR, and one round in four the whole device */
		for (i = rand() % (c.nqp + 1); i > 0 && c.nqp > 0; i--)
			if (ibv_destroy_qp(c.qp[--c.nqp]))
				churn_err(&c, errno);
		if (c.mr && rand() % 2 == 0) {
			if (ibv_dereg_mr(c.mr))
				churn_err(&c, errno);
			c.mr = NULL;
		}
		if (rand() % 4 == 0) {
			/*
			 * all of it, then the device (a dirty release is what the test's SIGKILLs make: a close
			 * with objects left would leak the provider's mappings of their queues, round after round)
			 */
			while (c.nqp > 0)
				if (ibv_destroy_qp(c.qp[--c.nqp]))
					churn_err(&c, errno);
			if (c.mr && ibv_dereg_mr(c.mr))
				churn_err(&c, errno);
			if (c.cq && ibv_destroy_cq(c.cq))
				churn_err(&c, errno);
			if (c.pd && ibv_dealloc_pd(c.pd))
				churn_err(&c, errno);
			ibv_close_device(c.ctx);
			c.ctx = NULL;
			c.pd = NULL;
			c.cq = NULL;
			c.mr = NULL;
			c.nqp = 0;
		}
	}
	printf("churn rounds=%ld created=%ld refused=%ld other=%ld%s%s\n", rounds, c.created, c.refused, c.other,
	       c.other ? " " : "", c.other ? ename(c.last) : "");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0", *kind = NULL, *hold = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	size_t size = 4096;
	bool viawrite = false;
	int i, n = 16, opt, got = 0, err = 0, num;
	unsigned int wr = 1;
	void *buf;
	long rounds = 0;

	while ((opt = getopt(argc, argv, "k:n:s:q:d:wH:C:")) != -1) {
		switch (opt) {
		case 'k': kind = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'q': wr = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'd': dev = optarg; break;
		case 'w': viawrite = true; break;
		case 'H': hold = optarg; break;
		case 'C': rounds = atol(optarg); break;
		default:
			fprintf(stderr, "usage: kqverbs -k KIND [-n N] [-s SIZE] [-q WR] [-d DEV] [-w] [-H FILE]\n"
					"       kqverbs -C ROUNDS [-n N] [-d DEV]\n");
			return 2;
		}
	}
	if ((!kind && rounds <= 0) || n < 0 || n > MAXN || !size) {
		fprintf(stderr, "kqverbs: -k KIND and 0 <= N <= %d\n", MAXN);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list || i == num) {
		fprintf(stderr, "kqverbs: no device %s\n", dev);
		return 1;
	}
	if (rounds > 0)
		return churn(list[i], n, rounds);
	if (!strcmp(kind, "ctx")) {
		for (got = 0; got < n; got++)
			if (!ibv_open_device(list[i])) {
				err = errno;
				break;
			}
		goto done;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "kqverbs: cannot open %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (!strcmp(kind, "pd")) {
		for (got = 0; got < n; got++) {
			if (viawrite)
				err = write_alloc_pd(ctx);
			else if (!ibv_alloc_pd(ctx))
				err = errno;
			if (err)
				break;
		}
		goto done;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fprintf(stderr, "kqverbs: cannot allocate a PD: %s\n", ename(errno));
		return 1;
	}
	if (!strcmp(kind, "xrcd")) {
		for (got = 0; got < n; got++)
			if ((err = ioctl_open_xrcd(ctx)))
				break;
		goto done;
	}
	if (!strcmp(kind, "wq")) {
		cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		if (!cq) {
			fprintf(stderr, "kqverbs: cannot create a CQ: %s\n", ename(errno));
			return 1;
		}
		for (got = 0; got < n; got++)
			if ((err = ioctl_create_wq(ctx, pd, cq)))
				break;
		goto done;
	}
	if (!strcmp(kind, "cq")) {
		for (got = 0; got < n; got++)
			if (!ibv_create_cq(ctx, 4, NULL, NULL, 0)) {
				err = errno;
				break;
			}
		goto done;
	}
	if (!strcmp(kind, "mr")) {
		buf = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
		if (!buf)
			return 1;
		memset(buf, 0, size);
		for (got = 0; got < n; got++)
			if (!ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE)) {
				err = errno;
				break;
			}
		goto done;
	}
	if (!strcmp(kind, "mw")) {
		for (got = 0; got < n; got++)
			if (!ibv_alloc_mw(pd, IBV_MW_TYPE_1)) {
				err = errno;
				break;
			}
		goto done;
	}
	if (!strcmp(kind, "ah")) {
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };

		if (ibv_query_gid(ctx, 1, 1, &aa.grh.dgid))
			return 1;
		aa.grh.sgid_index = 1;
		aa.grh.hop_limit = 1;
		for (got = 0; got < n; got++)
			if (!ibv_create_ah(pd, &aa)) {
				err = errno;
				break;
			}
		goto done;
	}
	if (!strcmp(kind, "srq")) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };

		for (got = 0; got < n; got++)
			if (!ibv_create_srq(pd, &sa)) {
				err = errno;
				break;
			}
		goto done;
	}
	if (!strcmp(kind, "qp")) {
		struct ibv_qp_init_attr qa = { 0 };

		cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		if (!cq) {
			fprintf(stderr, "kqverbs: cannot create a CQ: %s\n", ename(errno));
			return 1;
		}
		qa.send_cq = qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = wr;
		qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		for (got = 0; got < n; got++)
			if (!ibv_create_qp(pd, &qa)) {
				err = errno;
				break;
			}
		goto done;
	}
	fprintf(stderr, "kqverbs: unknown kind '%s'\n", kind);
	return 2;
done:
	printf("%s created=%d errno=%s\n", kind, got, ename(err));
	printf("alive\n");
	if (hold) {
		struct stat st;

		printf("holding\n");
		while (stat(hold, &st))
			usleep(20000);
	}
	return got == n ? 0 : 3;
}
