// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab program: an address handle made from a received work completion. Two UD QPs on one device; the
 * first sends one datagram to the second through an AH made with ibv_create_ah; the receiver answers with
 * an AH made by ibv_create_ah_from_wc (which libibverbs makes by calling its exported ibv_create_ah: the
 * interceptor must charge that AH once). Prints "ah created=1 ..." for the first AH, then
 * "from_wc created=N refused=M errno=E", and exits 0 when the datagram went through (whatever the answer).
 *   udwc [-d DEV] [-g GIDX]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define QKEY 0x11111111
#define MSG 64

static char sbuf[MSG], rbuf[MSG + 40];

static int die(const char *what)
{
	fprintf(stderr, "udwc: %s: %s\n", what, strerror(errno));
	return 1;
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = QKEY };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (qp && to_rts(qp)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* Wait for one completion of the wanted opcode; 0 and *wc, or -1. */
static int wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode op, struct ibv_wc *wc)
{
	int tries;

	for (tries = 0; tries < 5000; tries++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1) {
			if (wc->status != IBV_WC_SUCCESS) {
				fprintf(stderr, "udwc: completion status %s\n", ibv_wc_status_str(wc->status));
				return -1;
			}
			if (wc->opcode == op)
				return 0;
			continue;
		}
		usleep(1000);
	}
	fprintf(stderr, "udwc: no completion\n");
	return -1;
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0";
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp *a, *b;
	struct ibv_ah *ah, *back;
	struct ibv_mr *smr, *rmr;
	struct ibv_ah_attr aa = { 0 };
	union ibv_gid gid;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int opt, gidx = 1, i;

	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		if (opt == 'd')
			dev_name = optarg;
		else if (opt == 'g')
			gidx = atoi(optarg);
		else {
			fprintf(stderr, "usage: udwc [-d DEV] [-g GIDX]\n");
			return 2;
		}
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		return die("open");
	if (!(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)))
		return die("pd/cq");
	if (!(smr = ibv_reg_mr(pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE)) ||
	    !(rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE)))
		return die("mr");
	if (!(a = ud_qp(pd, cq)) || !(b = ud_qp(pd, cq)))
		return die("ud qp");
	if (ibv_query_gid(ctx, 1, gidx, &gid))
		return die("query gid");
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	if (!(ah = ibv_create_ah(pd, &aa)))
		return die("create_ah");
	printf("ah created=1 refused=0 errno=0\n");
	fflush(stdout);
	{
		struct ibv_sge rs = { .addr = (uintptr_t)rbuf, .length = sizeof(rbuf), .lkey = rmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { .addr = (uintptr_t)sbuf, .length = sizeof(sbuf), .lkey = smr->lkey };
		struct ibv_send_wr sw = { .wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *sbad;

		sw.wr.ud.ah = ah;
		sw.wr.ud.remote_qpn = b->qp_num;
		sw.wr.ud.remote_qkey = QKEY;
		if (ibv_post_recv(b, &rw, &rbad) || ibv_post_send(a, &sw, &sbad))
			return die("post");
	}
	if (wait_wc(cq, IBV_WC_RECV, &wc))
		return 1;
	back = ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)rbuf, 1);
	printf("from_wc created=%d refused=%d errno=%s\n", back != NULL, back == NULL,
	       back ? "0" : strerrorname_np(errno));
	fflush(stdout);
	if (back)
		ibv_destroy_ah(back);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(b);
	ibv_destroy_qp(a);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
