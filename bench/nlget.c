// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How the kernel answers for a device's QPs: one dump (RDMA_NLDEV_CMD_RES_QP_GET with NLM_F_DUMP), against one
 * request per QP by its number (the same command without NLM_F_DUMP), sent BATCH to a write and read back.
 * The dump walks the device's QP table from its start for each message it fills; a request by number looks
 * one QP up. Both see the same QPs (the numbers the dump gave); prints the milliseconds of each, side by side,
 * ROUNDS times, and their ratio, and a control: the dump done twice in a row, whose ratio is the noise.
 * A QP never given a port (still in RESET) is answered with EAGAIN, an error reply (counted, not retried).
 *   nlget DEV_INDEX [BATCH [ROUNDS]]     (in the lab, with holders: bench/nlget.sh)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

static char buf[64 * 1024] __attribute__((aligned(8)));
static unsigned int seq = 1;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct ids {
	uint32_t *v;
	size_t n, cap;
	size_t states;	/* replies that carried a QP state */
	size_t errors;	/* error replies (a QP gone since the dump) */
	int first_error;
};

/* One QP's attributes: nested in a dump's entry, at the top of a reply by number. */
static int qp_attr(const struct nlattr *b, struct ids *ids, bool *lqpn)
{
	if (mnl_attr_get_type(b) == RDMA_NLDEV_ATTR_RES_LQPN && !*lqpn) {
		if (ids->n == ids->cap) {
			ids->cap = ids->cap ? ids->cap * 2 : 1024;
			ids->v = realloc(ids->v, ids->cap * sizeof(*ids->v));
			if (!ids->v)
				return MNL_CB_ERROR;
		}
		ids->v[ids->n++] = mnl_attr_get_u32(b);
		*lqpn = true;
	}
	if (mnl_attr_get_type(b) == RDMA_NLDEV_ATTR_RES_STATE)
		ids->states++;
	return MNL_CB_OK;
}

static int entry_cb(const struct nlattr *a, void *data)
{
	const struct nlattr *b;
	bool lqpn = false;

	if (mnl_attr_get_type(a) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
		return MNL_CB_OK;
	mnl_attr_for_each_nested(b, a) {
		if (qp_attr(b, data, &lqpn) != MNL_CB_OK)
			return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

static int msg_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *a;
	bool lqpn = false;

	mnl_attr_for_each(a, nlh, 0) {
		if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_RES_QP)
			mnl_attr_parse_nested(a, entry_cb, data);
		else if (qp_attr(a, data, &lqpn) != MNL_CB_OK)
			return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

static struct nlmsghdr *put_req(char *at, uint32_t dev, bool dump, uint32_t qpn)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(at);

	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET);
	nlh->nlmsg_flags = NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0);
	nlh->nlmsg_seq = seq++;
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, dev);
	if (!dump) {
		/* a QP is asked for on a port: the one it was given (a QP never given one has none) */
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_LQPN, qpn);
	}
	return nlh;
}

static int dump(struct mnl_socket *nl, uint32_t dev, struct ids *ids)
{
	struct nlmsghdr *nlh = put_req(buf, dev, true, 0);
	ssize_t n;
	int ret;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		ret = mnl_cb_run(buf, (size_t)n, 0, 0, msg_cb, ids);
		if (ret <= MNL_CB_STOP)
			return ret < 0 ? -errno : 0;
	}
	return n < 0 ? -errno : -EPROTO;
}

/* One request per QP number, BATCH to a sendto; replies read until each batch's are in. */
static int gets(struct mnl_socket *nl, uint32_t dev, const struct ids *in, size_t batch, struct ids *out)
{
	static char req[1 << 20];
	size_t i = 0, k, len, got;
	ssize_t n;

	while (i < in->n) {
		len = 0;
		for (k = 0; k < batch && i + k < in->n; k++) {
			struct nlmsghdr *nlh = put_req(req + len, dev, false, in->v[i + k]);

			len += NLMSG_ALIGN(nlh->nlmsg_len);
		}
		if (mnl_socket_sendto(nl, req, len) < 0)
			return -errno;
		for (got = 0; got < k;) {
			const struct nlmsghdr *m;
			int left;

			n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
			if (n <= 0)
				return n < 0 ? -errno : -EPROTO;
			left = (int)n;
			for (m = (const struct nlmsghdr *)buf; mnl_nlmsg_ok(m, left); m = mnl_nlmsg_next(m, &left)) {
				got++;
				if (m->nlmsg_type == NLMSG_ERROR) {
					const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);

					if (!out->errors++)
						out->first_error = e->error;
					continue; /* gone since the dump */
				}
				msg_cb(m, out);
			}
		}
		i += k;
	}
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint32_t dev;
	size_t batch, rounds, r;
	struct mnl_socket *nl;
	int rcv = 32 << 20;
	double *td, *tg, *tc;

	if (argc < 2) {
		fprintf(stderr, "usage: nlget DEV_INDEX [BATCH [ROUNDS]]\n");
		return 2;
	}
	dev = (uint32_t)strtoul(argv[1], NULL, 0);
	batch = argc > 2 ? strtoul(argv[2], NULL, 0) : 256;
	rounds = argc > 3 ? strtoul(argv[3], NULL, 0) : 3;
	if (!batch || batch > 4096 || !rounds || rounds > 100) {
		fprintf(stderr, "nlget: BATCH 1-4096, ROUNDS 1-100\n");
		return 2;
	}
	nl = mnl_socket_open(NETLINK_RDMA);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		perror("nlget: netlink");
		return 1;
	}
	/* the replies of a batch wait in the socket: room for them (root may pass rmem_max) */
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)))
		setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	td = calloc(rounds, sizeof(*td));
	tg = calloc(rounds, sizeof(*tg));
	tc = calloc(rounds, sizeof(*tc));
	if (!td || !tg || !tc)
		return 1;
	for (r = 0; r < rounds; r++) {
		struct ids d = { 0 }, d2 = { 0 }, g = { 0 };
		double t0, t1, t2, t3;
		int ret;

		t0 = now_ms();
		ret = dump(nl, dev, &d);
		t1 = now_ms();
		if (!ret)
			ret = gets(nl, dev, &d, batch, &g);
		t2 = now_ms();
		if (!ret)
			ret = dump(nl, dev, &d2);
		t3 = now_ms();
		if (ret) {
			fprintf(stderr, "nlget: %s\n", strerror(-ret));
			return 1;
		}
		td[r] = t1 - t0;
		tg[r] = t2 - t1;
		tc[r] = t3 - t2;
		printf("round %zu: dump %zu QPs (%zu states) %.1f ms; gets %zu QPs (%zu states, %zu errors: %s) "
		       "%.1f ms; dump again %zu QPs %.1f ms\n", r + 1, d.n, d.states, td[r], g.n, g.states, g.errors,
		       g.errors ? strerror(-g.first_error) : "none", tg[r], d2.n, tc[r]);
		free(d.v);
		free(d2.v);
		free(g.v);
	}
	qsort(td, rounds, sizeof(*td), cmp_d);
	qsort(tg, rounds, sizeof(*tg), cmp_d);
	qsort(tc, rounds, sizeof(*tc), cmp_d);
	printf("medians: dump %.1f ms, gets (batch %zu) %.1f ms, dump again %.1f ms; gets/dump %.3f, "
	       "control (dump again/dump) %.3f\n", td[rounds / 2], batch, tg[rounds / 2], tc[rounds / 2],
	       tg[rounds / 2] / td[rounds / 2], tc[rounds / 2] / td[rounds / 2]);
	return 0;
}
