// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RC pingpong over verbs, message-for-message what ibv_rc_pingpong does, with deadlines and timings. */
#include "pingpong/pp.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { WRID_RECV = 1, WRID_SEND = 2 };

struct pp_rc {
	struct pp_rc_opts o;
	struct ibv_context *ctx;
	struct ibv_comp_channel *channel;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	void *buf;
	struct ibv_port_attr port;
	unsigned int send_flags;
	uint32_t psn;
	int routs;
	int pending;
	enum pp_fail fail;
	int wc_status;
	bool wc_recv;
	unsigned int done_iters;
	unsigned long events;
};

static int fail(struct pp_rc *rc, enum pp_fail f, int ret, char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int fail(struct pp_rc *rc, enum pp_fail f, int ret, char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (rc)
		rc->fail = f;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return ret;
}

static int post_recv(struct pp_rc *rc, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rc->buf, .length = rc->o.size, .lkey = rc->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WRID_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < n; i++)
		if (ibv_post_recv(rc->qp, &wr, &bad))
			break;
	return i;
}

static int post_send(struct pp_rc *rc)
{
	struct ibv_sge sge = { .addr = (uintptr_t)rc->buf, .length = rc->o.size, .lkey = rc->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WRID_SEND, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = rc->send_flags,
	}, *bad;

	return ibv_post_send(rc->qp, &wr, &bad);
}

static struct ibv_device *find_dev(struct ibv_device **list, const char *name)
{
	int i;

	if (!name)
		return list[0];
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	return NULL;
}

/* The device named in the options (else the first), opened, and its port asked. */
static int open_port(struct pp_rc *rc, char *err, size_t len)
{
	struct ibv_device **list;
	struct ibv_device *dev;
	int ret;

	list = ibv_get_device_list(NULL);
	if (!list) {
		ret = -errno;
		return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot list RDMA devices: %s", strerror(-ret));
	}
	dev = find_dev(list, rc->o.dev);
	if (!dev) {
		ret = fail(rc, PP_FAIL_SETUP, -ENODEV, err, len,
			   rc->o.dev ? "device %s not found" : "no RDMA device%s", rc->o.dev ? rc->o.dev : "");
		ibv_free_device_list(list);
		return ret;
	}
	rc->ctx = ibv_open_device(dev);
	ret = -errno;
	ibv_free_device_list(list);
	if (!rc->ctx)
		return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot open the device: %s", strerror(-ret));
	if (ibv_query_port(rc->ctx, (uint8_t)rc->o.ib_port, &rc->port))
		return fail(rc, PP_FAIL_SETUP, -ENODEV, err, len, "port %d of %s does not exist", rc->o.ib_port,
			    ibv_get_device_name(rc->ctx->device));
	return 0;
}

/* What the QP stands on: the completion channel (events mode only), the PD, the buffer's MR, the CQ. */
static int create_cq(struct pp_rc *rc, char *err, size_t len)
{
	int ret;

	if (rc->o.events) {
		rc->channel = ibv_create_comp_channel(rc->ctx);
		if (!rc->channel) {
			ret = -errno;
			return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot create a completion channel: %s",
				    strerror(-ret));
		}
		fcntl(rc->channel->fd, F_SETFL, fcntl(rc->channel->fd, F_GETFL) | O_NONBLOCK);
	}
	rc->pd = ibv_alloc_pd(rc->ctx);
	if (!rc->pd) {
		ret = -errno;
		return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot allocate a PD: %s", strerror(-ret));
	}
	rc->mr = ibv_reg_mr(rc->pd, rc->buf, rc->o.size, IBV_ACCESS_LOCAL_WRITE);
	if (!rc->mr) {
		ret = -errno;
		return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot register a %u-byte MR: %s", rc->o.size,
			    strerror(-ret));
	}
	rc->cq = ibv_create_cq(rc->ctx, (int)rc->o.rx_depth + 1, NULL, rc->channel, 0);
	if (!rc->cq) {
		ret = -errno;
		return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot create a CQ of %u entries: %s",
			    rc->o.rx_depth + 1, strerror(-ret));
	}
	return 0;
}

/* The RC QP, moved to INIT, its receives posted and, in events mode, the CQ armed. */
static int create_qp(struct pp_rc *rc, char *err, size_t len)
{
	struct ibv_qp_init_attr init = {
		.send_cq = rc->cq,
		.recv_cq = rc->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = rc->o.rx_depth, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)rc->o.ib_port };
	int ret;

	rc->qp = ibv_create_qp(rc->pd, &init);
	if (!rc->qp) {
		ret = -errno;
		return fail(rc, PP_FAIL_SETUP, ret, err, len, "cannot create an RC QP (rx depth %u): %s",
			    rc->o.rx_depth, strerror(-ret));
	}
	if (init.cap.max_inline_data >= rc->o.size)
		rc->send_flags |= IBV_SEND_INLINE;
	ret = ibv_modify_qp(rc->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return fail(rc, PP_FAIL_SETUP, -ret, err, len, "cannot move the QP to INIT: %s", strerror(ret));
	rc->routs = post_recv(rc, (int)rc->o.rx_depth);
	if (rc->routs < (int)rc->o.rx_depth)
		return fail(rc, PP_FAIL_SETUP, -ENOMEM, err, len, "could post only %d of %u receives", rc->routs,
			    rc->o.rx_depth);
	if (rc->o.events && ibv_req_notify_cq(rc->cq, 0))
		return fail(rc, PP_FAIL_SETUP, -EIO, err, len, "cannot request CQ notification");
	return 0;
}

int pp_rc_open(struct pp_rc **out, const struct pp_rc_opts *o, char *err, size_t len)
{
	struct pp_rc *rc;
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return fail(NULL, PP_FAIL_SETUP, -ENOMEM, err, len, "out of memory");
	rc->o = *o;
	rc->send_flags = IBV_SEND_SIGNALED;
	if (posix_memalign(&rc->buf, page > 0 ? (size_t)page : 4096, o->size ? o->size : 1)) {
		free(rc);
		return fail(NULL, PP_FAIL_SETUP, -ENOMEM, err, len, "cannot allocate a %u-byte buffer", o->size);
	}
	memset(rc->buf, 0x7b, o->size);

	ret = open_port(rc, err, len);
	if (!ret)
		ret = create_cq(rc, err, len);
	if (!ret)
		ret = create_qp(rc, err, len);
	if (ret) {
		pp_rc_close(rc);
		return ret;
	}
	/* The PSN only needs to differ between runs. */
	rc->psn = (uint32_t)(pp_now_ns() ^ ((uint64_t)getpid() << 12)) & 0xffffff;
	*out = rc;
	return 0;
}

void pp_rc_close(struct pp_rc *rc)
{
	if (!rc)
		return;
	if (rc->qp)
		ibv_destroy_qp(rc->qp);
	if (rc->cq) {
		if (rc->events)
			ibv_ack_cq_events(rc->cq, (unsigned int)rc->events);
		ibv_destroy_cq(rc->cq);
	}
	if (rc->mr)
		ibv_dereg_mr(rc->mr);
	if (rc->pd)
		ibv_dealloc_pd(rc->pd);
	if (rc->channel)
		ibv_destroy_comp_channel(rc->channel);
	if (rc->ctx)
		ibv_close_device(rc->ctx);
	free(rc->buf);
	free(rc);
}

void pp_rc_local(struct pp_rc *rc, struct pp_dest *me)
{
	union ibv_gid gid;

	memset(me, 0, sizeof(*me));
	me->lid = rc->port.lid;
	me->qpn = rc->qp->qp_num;
	me->psn = rc->psn;
	if (rc->o.gid_index >= 0 && !ibv_query_gid(rc->ctx, (uint8_t)rc->o.ib_port, rc->o.gid_index, &gid))
		memcpy(me->gid, gid.raw, 16);
}

int pp_rc_port(struct pp_rc *rc, int *link_layer, int *active_mtu, int *state)
{
	*link_layer = rc->port.link_layer;
	*active_mtu = rc->port.active_mtu;
	*state = rc->port.state;
	return 0;
}

int pp_rc_connect(struct pp_rc *rc, const struct pp_dest *rem, char *err, size_t len)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)rc->o.mtu,
		.dest_qp_num = rem->qpn,
		.rq_psn = rem->psn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = { .dlid = (uint16_t)rem->lid, .sl = (uint8_t)rc->o.sl, .port_num = (uint8_t)rc->o.ib_port },
	};
	int ret;

	/* Same rule as ibv_rc_pingpong: a GRH only when the peer's GID has an interface id. */
	if (memcmp(rem->gid + 8, "\0\0\0\0\0\0\0\0", 8) && rc->o.gid_index >= 0) {
		attr.ah_attr.is_global = 1;
		attr.ah_attr.grh.hop_limit = 1;
		memcpy(attr.ah_attr.grh.dgid.raw, rem->gid, 16);
		attr.ah_attr.grh.sgid_index = (uint8_t)rc->o.gid_index;
	}
	ret = ibv_modify_qp(rc->qp, &attr,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return fail(rc, PP_FAIL_RTR, -ret, err, len, "cannot move the QP to RTR: %s", strerror(ret));

	/*
	 * timeout 14 (67 ms) with 7 retries: a vanished peer turns into a retry-exceeded completion in
	 * about half a second instead of a silent stall (rxe honours these).
	 */
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = rc->psn;
	attr.max_rd_atomic = 1;
	ret = ibv_modify_qp(rc->qp, &attr,
			    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				    IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		return fail(rc, PP_FAIL_RTS, -ret, err, len, "cannot move the QP to RTS: %s", strerror(ret));
	return 0;
}

/* Wait for the next batch of completions (events mode) until the deadline. */
static int wait_event(struct pp_rc *rc, uint64_t dl)
{
	struct pollfd pfd = { .fd = rc->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;
	int ret;

	for (;;) {
		ret = poll(&pfd, 1, pp_ms_left(dl));
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (!ret)
			return -ETIMEDOUT;
		if (ibv_get_cq_event(rc->channel, &cq, &cq_ctx)) {
			if (errno == EAGAIN)
				continue;
			return -EIO;
		}
		rc->events++;
		if (ibv_req_notify_cq(rc->cq, 0))
			return -EIO;
		return 0;
	}
}

/*
 * The next completions into wc (room for two): how many, or -ETIMEDOUT when none came before the
 * deadline; another failure is said in err. Events mode may return 0 (an event with nothing to poll).
 */
static int next_completions(struct pp_rc *rc, struct ibv_wc *wc, uint64_t dl, char *err, size_t len)
{
	int ne, ret, k;

	if (rc->channel) {
		ret = wait_event(rc, dl);
		if (ret == -ETIMEDOUT)
			return ret;
		if (ret)
			return fail(rc, PP_FAIL_POST, ret, err, len, "waiting for a completion event failed");
		ne = ibv_poll_cq(rc->cq, 2, wc);
	} else {
		/* Busy poll like ibv_rc_pingpong; look at the clock only now and then. */
		for (k = 0;; k++) {
			ne = ibv_poll_cq(rc->cq, 2, wc);
			if (ne)
				break;
			if ((k & 1023) == 1023 && pp_now_ns() > dl)
				return -ETIMEDOUT;
		}
	}
	if (ne < 0)
		return fail(rc, PP_FAIL_POST, -EIO, err, len, "polling the CQ failed");
	return ne;
}

/* A run's progress: its iterations, the sends and receives completed, when each send was posted. */
struct rc_progress {
	unsigned int iters;
	unsigned int scnt;
	unsigned int rcnt;
	uint64_t *t_post;
};

/* One completion counted, receives reposted when few are left, and the next send posted when due. */
static int on_completion(struct pp_rc *rc, struct rc_progress *p, const struct ibv_wc *wc, char *err, size_t len)
{
	if (wc->status != IBV_WC_SUCCESS) {
		rc->wc_status = wc->status;
		rc->wc_recv = wc->wr_id == WRID_RECV;
		rc->done_iters = p->rcnt < p->scnt ? p->rcnt : p->scnt;
		return fail(rc, PP_FAIL_WC, -EIO, err, len, "%s completion failed after %u of %u iterations: %s",
			    wc->wr_id == WRID_SEND ? "send" : "receive", rc->done_iters, p->iters,
			    ibv_wc_status_str(wc->status));
	}
	if (wc->wr_id == WRID_SEND) {
		p->scnt++;
	} else if (wc->wr_id == WRID_RECV) {
		if (--rc->routs <= 1) {
			rc->routs += post_recv(rc, (int)rc->o.rx_depth - rc->routs);
			if (rc->routs < (int)rc->o.rx_depth)
				return fail(rc, PP_FAIL_POST, -ENOMEM, err, len, "cannot repost receives");
		}
		p->rcnt++;
	} else {
		return fail(rc, PP_FAIL_POST, -EPROTO, err, len, "completion for unknown wr_id %llu",
			    (unsigned long long)wc->wr_id);
	}
	rc->pending &= ~(int)wc->wr_id;
	if (p->scnt < p->iters && !rc->pending) {
		p->t_post[p->scnt] = pp_now_ns();
		if (post_send(rc))
			return fail(rc, PP_FAIL_POST, -EIO, err, len, "cannot post a send");
		rc->pending = WRID_RECV | WRID_SEND;
	}
	return 0;
}

/* A finished run's result; lat has room for one sample per iteration. */
static void rc_result(const struct pp_rc *rc, const struct rc_progress *p, uint64_t start, uint64_t end,
		      double *lat, struct pp_result *res)
{
	unsigned int iters = p->iters, i;

	/* One sample per iteration: from one send to the next (a full round trip), the last to the end. */
	for (i = 0; i < iters; i++)
		lat[i] = (double)((i + 1 < iters ? p->t_post[i + 1] : end) - p->t_post[i]) / 1000.0;
	res->iters = iters;
	res->seconds = (double)(end - start) / 1e9;
	res->bytes = (uint64_t)rc->o.size * iters * 2;
	res->gbps = res->seconds > 0 ? (double)res->bytes * 8 / res->seconds / 1e9 : 0;
	res->cq_events = rc->events;
	pp_stats_compute(lat, iters, &res->lat);
}

int pp_rc_run(struct pp_rc *rc, bool client, struct pp_result *res, char *err, size_t len)
{
	struct rc_progress p = { .iters = rc->o.iters };
	uint64_t start, end, dl, tmo = (uint64_t)rc->o.timeout_ms * 1000000ull;
	struct ibv_wc wc[2];
	double *lat;
	int ne, ret = 0, k;

	memset(res, 0, sizeof(*res));
	p.t_post = calloc(p.iters + 1, sizeof(*p.t_post));
	lat = calloc(p.iters + 1, sizeof(*lat));
	if (!p.t_post || !lat) {
		ret = fail(rc, PP_FAIL_SETUP, -ENOMEM, err, len, "out of memory for %u samples", p.iters);
		goto out;
	}
	rc->pending = WRID_RECV;
	start = pp_now_ns();
	if (client && p.iters) {
		p.t_post[0] = start;
		if (post_send(rc)) {
			ret = fail(rc, PP_FAIL_POST, -EIO, err, len, "cannot post a send");
			goto out;
		}
		rc->pending |= WRID_SEND;
	}
	dl = start + tmo;
	while (p.rcnt < p.iters || p.scnt < p.iters) {
		ne = next_completions(rc, wc, dl, err, len);
		if (ne == -ETIMEDOUT)
			goto stall;
		if (ne < 0) {
			ret = ne;
			goto out;
		}
		if (ne)
			dl = pp_now_ns() + tmo;
		for (k = 0; k < ne; k++) {
			ret = on_completion(rc, &p, &wc[k], err, len);
			if (ret)
				goto out;
		}
	}
	end = pp_now_ns();
	rc->done_iters = p.iters;
	rc_result(rc, &p, start, end, lat, res);
	goto out;
stall:
	rc->done_iters = p.rcnt < p.scnt ? p.rcnt : p.scnt;
	ret = fail(rc, PP_FAIL_STALL, -ETIMEDOUT, err, len,
		   "no completion for %d s after %u of %u iterations (sent %u, received %u)", rc->o.timeout_ms / 1000,
		   rc->done_iters, p.iters, p.scnt, p.rcnt);
out:
	free(p.t_post);
	free(lat);
	return ret;
}

enum pp_fail pp_rc_fail(const struct pp_rc *rc)
{
	return rc->fail;
}

int pp_rc_wc_status(const struct pp_rc *rc)
{
	return rc->wc_status;
}

bool pp_rc_wc_recv(const struct pp_rc *rc)
{
	return rc->wc_recv;
}

unsigned int pp_rc_done_iters(const struct pp_rc *rc)
{
	return rc->done_iters;
}
