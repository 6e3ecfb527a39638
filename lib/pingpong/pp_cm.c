// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdma_cm check: resolve, connect/accept, exchange buffer metadata, RDMA write + read back + verify. */
#include "pingpong/pp.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The metadata and control messages both sides send over send/recv (little endian on the wire). */
struct cm_msg {
	uint32_t magic;
	uint32_t kind;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint32_t seed;
	uint32_t ok;
};

#define CM_MAGIC 0x72706d63u /* "rpmc" */
enum { CM_META = 1, CM_DONE = 2, CM_RESULT = 3 };
enum { WR_RECV = 1, WR_SEND, WR_WRITE, WR_READ };

struct cm {
	const struct pp_cm_opts *o;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr_buf, *mr_rbuf, *mr_msg;
	uint8_t *buf, *rbuf;
	struct cm_msg msg[2]; /* [0] receive, [1] send */
	bool established;
	unsigned int seen[WR_READ + 1]; /* completions polled but not yet waited for, per wr_id */
	char *err;
	size_t errlen;
};

static int cm_fail(struct cm *c, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int cm_fail(struct cm *c, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* The byte pattern the client writes; the server checks it knowing only seed and length. */
static void pattern(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed ? seed : 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static const char *rej_reason(int status)
{
	switch (status) {
	case 8:
		return "nothing listens on that port (invalid service ID)";
	case 28:
		return "the peer rejected the connection";
	default:
		return "rejected";
	}
}

/* Wait for the next CM event, expecting `want`; anything else is a failure with a precise message. */
static int cm_wait(struct cm *c, enum rdma_cm_event_type want, int timeout_ms, struct rdma_cm_id **child)
{
	struct pollfd pfd = { .fd = c->ch->fd, .events = POLLIN };
	uint64_t dl = pp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int ret, status;

	for (;;) {
		ret = poll(&pfd, 1, timeout_ms < 0 ? -1 : pp_ms_left(dl));
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return cm_fail(c, -errno, "waiting for a CM event failed: %s", strerror(errno));
		if (!ret)
			return cm_fail(c, -ETIMEDOUT, "no %s event within %d s", rdma_event_str(want),
				       (timeout_ms + 999) / 1000);
		if (!rdma_get_cm_event(c->ch, &ev))
			break;
		if (errno != EAGAIN && errno != EINTR)
			return cm_fail(c, -errno, "rdma_get_cm_event: %s", strerror(errno));
	}
	got = ev->event;
	status = ev->status;
	if (child)
		*child = ev->id;
	rdma_ack_cm_event(ev);
	if (got == want)
		return 0;
	switch (got) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		if (status == -ETIMEDOUT || status == -EHOSTUNREACH || status == -ENODATA)
			return cm_fail(c, -EHOSTUNREACH, "cannot resolve the address of %s: %s (no ARP/neighbour answer: "
				       "the host is down or not on this network)", c->o->host, strerror(-status));
		return cm_fail(c, -EADDRNOTAVAIL,
			       "cannot resolve %s to an RDMA device: %s (no RDMA device on the route to it? see "
			       "'rdmactl pingpong --check')",
			       c->o->host, strerror(status < 0 ? -status : EHOSTUNREACH));
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return cm_fail(c, -ENETUNREACH, "cannot resolve a route to %s: %s", c->o->host,
			       strerror(status < 0 ? -status : ENETUNREACH));
	case RDMA_CM_EVENT_REJECTED:
		return cm_fail(c, -ECONNREFUSED,
			       "connection to %s port %u rejected: %s (status %d) (start 'rdmactl pingpong --cm' "
			       "there first)",
			       c->o->host ? c->o->host : "the client", c->o->port, rej_reason(status), status);
	case RDMA_CM_EVENT_UNREACHABLE:
		return cm_fail(c, -EHOSTUNREACH, "%s did not answer the connection request: %s (peer down, or its GID "
			       "unreachable from here)", c->o->host ? c->o->host : "the client",
			       strerror(status < 0 ? -status : ETIMEDOUT));
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return cm_fail(c, -ECONNABORTED, "connection failed: %s", strerror(status < 0 ? -status : EIO));
	case RDMA_CM_EVENT_DISCONNECTED:
		return cm_fail(c, -ECONNRESET, "the peer disconnected");
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return cm_fail(c, -ENODEV, "the RDMA device was removed");
	default:
		return cm_fail(c, -EPROTO, "expected %s, got %s (status %d)", rdma_event_str(want),
			       rdma_event_str(got), status);
	}
}

/* Wait for one completion of the given wr_id. */
static int cm_comp(struct cm *c, uint64_t wr_id)
{
	uint64_t dl = pp_now_ns() + (uint64_t)c->o->timeout_ms * 1000000ull;
	struct ibv_wc wc;
	int n;

	for (;;) {
		/* A receive can complete while we wait for our send: keep it for the next wait. */
		if (c->seen[wr_id]) {
			c->seen[wr_id]--;
			return 0;
		}
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			return cm_fail(c, -EIO, "polling the CQ failed");
		if (!n) {
			if (pp_now_ns() > dl)
				return cm_fail(c, -ETIMEDOUT, "no completion within %d s (peer gone?)",
					       c->o->timeout_ms / 1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			return cm_fail(c, -EIO, "%s failed: %s",
				       wc.wr_id == WR_WRITE ? "RDMA write" : wc.wr_id == WR_READ ? "RDMA read" :
				       wc.wr_id == WR_SEND ? "send" : "receive", ibv_wc_status_str(wc.status));
		if (wc.wr_id <= WR_READ)
			c->seen[wc.wr_id]++;
	}
}

static int post_recv(struct cm *c)
{
	struct ibv_sge sge = { (uintptr_t)&c->msg[0], sizeof(c->msg[0]), c->mr_msg->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad) ? cm_fail(c, -EIO, "cannot post a receive") : 0;
}

static int send_msg(struct cm *c, uint32_t kind, uint64_t addr, uint32_t rkey, uint32_t len, uint32_t seed,
		    uint32_t ok)
{
	struct ibv_sge sge = { (uintptr_t)&c->msg[1], sizeof(c->msg[1]), c->mr_msg->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WR_SEND, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	c->msg[1] = (struct cm_msg){ htole32(CM_MAGIC), htole32(kind), htole64(addr), htole32(rkey), htole32(len),
				     htole32(seed), htole32(ok) };
	if (ibv_post_send(c->id->qp, &wr, &bad))
		return cm_fail(c, -EIO, "cannot post a send");
	return cm_comp(c, WR_SEND);
}

static int recv_msg(struct cm *c, uint32_t kind)
{
	int ret = cm_comp(c, WR_RECV);

	if (ret)
		return ret;
	if (le32toh(c->msg[0].magic) != CM_MAGIC || le32toh(c->msg[0].kind) != kind)
		return cm_fail(c, -EPROTO, "unexpected message from the peer (not rdmactl pingpong --cm?)");
	return 0;
}

static int rdma_op(struct cm *c, enum ibv_wr_opcode op, void *local, struct ibv_mr *mr, uint64_t raddr,
		   uint32_t rkey, uint32_t len, double *us)
{
	struct ibv_sge sge = { (uintptr_t)local, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = op == IBV_WR_RDMA_WRITE ? WR_WRITE : WR_READ, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	uint64_t t0 = pp_now_ns();
	int ret;

	if (ibv_post_send(c->id->qp, &wr, &bad))
		return cm_fail(c, -EIO, "cannot post an RDMA %s", op == IBV_WR_RDMA_WRITE ? "write" : "read");
	ret = cm_comp(c, wr.wr_id);
	*us = (double)(pp_now_ns() - t0) / 1000.0;
	return ret;
}

/* PD, CQ, QP on the connected id, buffers and their MRs. */
static int setup(struct cm *c)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	unsigned int size = c->o->size;
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd)
		return cm_fail(c, -errno, "cannot allocate a PD: %s", strerror(errno));
	c->cq = ibv_create_cq(c->id->verbs, 16, NULL, NULL, 0);
	if (!c->cq)
		return cm_fail(c, -errno, "cannot create a CQ: %s", strerror(errno));
	init.send_cq = init.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &init))
		return cm_fail(c, -errno, "cannot create the QP: %s", strerror(errno));
	c->buf = calloc(1, size);
	c->rbuf = calloc(1, size);
	if (!c->buf || !c->rbuf)
		return cm_fail(c, -ENOMEM, "out of memory");
	c->mr_buf = ibv_reg_mr(c->pd, c->buf, size, acc);
	c->mr_rbuf = ibv_reg_mr(c->pd, c->rbuf, size, IBV_ACCESS_LOCAL_WRITE);
	c->mr_msg = ibv_reg_mr(c->pd, c->msg, sizeof(c->msg), IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr_buf || !c->mr_rbuf || !c->mr_msg)
		return cm_fail(c, -errno, "cannot register memory: %s", strerror(errno));
	return 0;
}

static void teardown(struct cm *c)
{
	char scratch[256];

	if (c->id && c->established && !rdma_disconnect(c->id)) {
		/* Keep the message of the failure that brought us here. */
		c->err = scratch;
		c->errlen = sizeof(scratch);
		cm_wait(c, RDMA_CM_EVENT_DISCONNECTED, 1000, NULL);
	}
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr_msg)
		ibv_dereg_mr(c->mr_msg);
	if (c->mr_rbuf)
		ibv_dereg_mr(c->mr_rbuf);
	if (c->mr_buf)
		ibv_dereg_mr(c->mr_buf);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->listen_id)
		rdma_destroy_id(c->listen_id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	free(c->buf);
	free(c->rbuf);
}

static void describe(struct cm *c, struct pp_cm_result *res)
{
	struct rdma_addr *a = &c->id->route.addr;
	struct sockaddr *s = &a->src_addr, *d = &a->dst_addr;
	char ip[INET6_ADDRSTRLEN];

	snprintf(res->dev, sizeof(res->dev), "%s", ibv_get_device_name(c->id->verbs->device));
	res->port = c->id->port_num;
	memcpy(res->sgid, a->addr.ibaddr.sgid.raw, 16);
	memcpy(res->dgid, a->addr.ibaddr.dgid.raw, 16);
	inet_ntop(s->sa_family, s->sa_family == AF_INET ? (void *)&a->src_sin.sin_addr : (void *)&a->src_sin6.sin6_addr,
		  ip, sizeof(ip));
	snprintf(res->local, sizeof(res->local), "%s", ip);
	inet_ntop(d->sa_family, d->sa_family == AF_INET ? (void *)&a->dst_sin.sin_addr : (void *)&a->dst_sin6.sin6_addr,
		  ip, sizeof(ip));
	snprintf(res->remote, sizeof(res->remote), "%s", ip);
}

static struct rdma_conn_param conn_param(void)
{
	return (struct rdma_conn_param){ .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
					 .rnr_retry_count = 7 };
}

static int run_client(struct cm *c, struct pp_cm_result *res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_conn_param cp = conn_param();
	uint32_t seed = (uint32_t)pp_now_ns() | 1, rkey, len;
	char service[8];
	uint64_t raddr;
	int ret;

	snprintf(service, sizeof(service), "%u", c->o->port);
	ret = getaddrinfo(c->o->host, service, &hints, &ai);
	if (ret)
		return cm_fail(c, -ENOENT, "cannot resolve %s: %s", c->o->host, gai_strerror(ret));
	ret = rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP);
	if (!ret)
		ret = rdma_resolve_addr(c->id, NULL, ai->ai_addr, c->o->timeout_ms);
	freeaddrinfo(ai);
	if (ret)
		return cm_fail(c, -errno, "rdma_resolve_addr(%s): %s (no RDMA device on the route to it? see "
			       "'rdmactl pingpong --check')", c->o->host, strerror(errno));
	/* rdma_cm reports its own timeout as ADDR_ERROR: give it the chance to. */
	ret = cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, c->o->timeout_ms + 2000, NULL);
	if (ret == -ETIMEDOUT)
		return cm_fail(c, ret, "cannot resolve the address of %s within %d s (host down or not on this "
			       "network?)", c->o->host, c->o->timeout_ms / 1000);
	if (ret)
		return ret;
	if (rdma_resolve_route(c->id, c->o->timeout_ms))
		return cm_fail(c, -errno, "rdma_resolve_route(%s): %s", c->o->host, strerror(errno));
	ret = cm_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED, c->o->timeout_ms + 2000, NULL);
	if (!ret)
		ret = setup(c);
	if (ret)
		return ret;
	describe(c, res);
	if (rdma_connect(c->id, &cp))
		return cm_fail(c, -errno, "rdma_connect: %s", strerror(errno));
	ret = cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, c->o->timeout_ms, NULL);
	if (ret)
		return ret;
	c->established = true;

	/* Our buffer's metadata out, the server's in. */
	ret = post_recv(c);
	if (!ret)
		ret = send_msg(c, CM_META, (uintptr_t)c->buf, c->mr_buf->rkey, c->o->size, 0, 0);
	if (!ret)
		ret = recv_msg(c, CM_META);
	if (ret)
		return ret;
	raddr = le64toh(c->msg[0].addr);
	rkey = le32toh(c->msg[0].rkey);
	len = le32toh(c->msg[0].len);
	if (len < c->o->size)
		return cm_fail(c, -EMSGSIZE, "the server's buffer is %u bytes, smaller than -s %u (use the same -s "
			       "on both sides)", len, c->o->size);

	pattern(c->buf, c->o->size, seed);
	ret = rdma_op(c, IBV_WR_RDMA_WRITE, c->buf, c->mr_buf, raddr, rkey, c->o->size, &res->write_us);
	if (!ret)
		ret = rdma_op(c, IBV_WR_RDMA_READ, c->rbuf, c->mr_rbuf, raddr, rkey, c->o->size, &res->read_us);
	if (ret)
		return ret;
	if (memcmp(c->buf, c->rbuf, c->o->size))
		return cm_fail(c, -EBADMSG, "the data read back differs from the data written");
	ret = post_recv(c);
	if (!ret)
		ret = send_msg(c, CM_DONE, 0, 0, c->o->size, seed, 0);
	if (!ret)
		ret = recv_msg(c, CM_RESULT);
	if (ret)
		return ret;
	if (!le32toh(c->msg[0].ok))
		return cm_fail(c, -EBADMSG, "the server found different data in its buffer than was written");
	res->verified = true;
	return 0;
}

static int run_server(struct cm *c, struct pp_cm_result *res)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(c->o->port) };
	struct rdma_conn_param cp = conn_param();
	uint32_t len, seed;
	int ret;

	if (rdma_create_id(c->ch, &c->listen_id, NULL, RDMA_PS_TCP))
		return cm_fail(c, -errno, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(c->listen_id, (struct sockaddr *)&any))
		return cm_fail(c, -errno, "cannot bind rdma_cm port %u: %s", c->o->port, strerror(errno));
	if (rdma_listen(c->listen_id, 1))
		return cm_fail(c, -errno, "rdma_listen: %s", strerror(errno));
	if (c->o->waiting)
		c->o->waiting(c->o->port);
	ret = cm_wait(c, RDMA_CM_EVENT_CONNECT_REQUEST, c->o->accept_timeout_ms, &c->id);
	if (ret)
		return ret;
	ret = setup(c);
	if (!ret)
		ret = post_recv(c);
	if (ret) {
		rdma_reject(c->id, NULL, 0);
		return ret;
	}
	describe(c, res);
	if (rdma_accept(c->id, &cp))
		return cm_fail(c, -errno, "rdma_accept: %s", strerror(errno));
	ret = cm_wait(c, RDMA_CM_EVENT_ESTABLISHED, c->o->timeout_ms, NULL);
	if (ret)
		return ret;
	c->established = true;

	ret = recv_msg(c, CM_META);
	if (!ret)
		ret = post_recv(c);
	if (!ret)
		ret = send_msg(c, CM_META, (uintptr_t)c->buf, c->mr_buf->rkey, c->o->size, 0, 0);
	if (!ret)
		ret = recv_msg(c, CM_DONE);
	if (ret)
		return ret;
	len = le32toh(c->msg[0].len);
	seed = le32toh(c->msg[0].seed);
	if (len > c->o->size)
		len = c->o->size;
	pattern(c->rbuf, len, seed);
	res->verified = len == c->o->size && !memcmp(c->buf, c->rbuf, len);
	ret = send_msg(c, CM_RESULT, 0, 0, len, seed, res->verified);
	if (ret)
		return ret;
	if (!res->verified)
		return cm_fail(c, -EBADMSG, "the data in our buffer is not what the client wrote (%u bytes)", len);
	/* Let the client disconnect first so that its last receive is not flushed. */
	if (!cm_wait(c, RDMA_CM_EVENT_DISCONNECTED, c->o->timeout_ms, NULL))
		c->established = false;
	return 0;
}

int pp_cm_run(const struct pp_cm_opts *o, struct pp_cm_result *res, char *err, size_t errlen)
{
	struct cm c = { .o = o, .err = err, .errlen = errlen };
	int ret;

	memset(res, 0, sizeof(*res));
	res->size = o->size;
	c.ch = rdma_create_event_channel();
	if (!c.ch)
		return cm_fail(&c, -errno, "cannot open the rdma_cm event channel: %s (is rdma_ucm loaded?)",
			       strerror(errno));
	fcntl(c.ch->fd, F_SETFL, fcntl(c.ch->fd, F_GETFL) | O_NONBLOCK);
	ret = o->host ? run_client(&c, res) : run_server(&c, res);
	teardown(&c);
	return ret;
}
