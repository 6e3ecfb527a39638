// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lab helper: RC QPs moved to given states (each one connected to itself through GID -g), held until killed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static const char usage[] =
	"usage: qpstates [-d DEV] [-g GIDX] STATE...\n"
	"  One RC QP per STATE (reset, init, rtr, rts, err), on DEV (default: the first device), moved\n"
	"  through RESET -> INIT -> RTR -> RTS as far as its state (RTR and RTS connected to itself through\n"
	"  GID index GIDX, default 1); err: to RTS, then ERR. Prints \"ready\" with the QP numbers, then holds\n"
	"  them until SIGINT/SIGTERM and exits 0.\n";

static const struct {
	const char *name;
	enum ibv_qp_state state;
} states[] = {
	{ "reset", IBV_QPS_RESET }, { "init", IBV_QPS_INIT }, { "rtr", IBV_QPS_RTR },
	{ "rts", IBV_QPS_RTS },	    { "err", IBV_QPS_ERR },
};

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp *qp, const union ibv_gid *gid, int gidx)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = qp->qp_num, .rq_psn = 0,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .dgid = *gid, .sgid_index = (uint8_t)gidx,
								       .hop_limit = 1 } },
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				 .sq_psn = 0, .max_rd_atomic = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp **qp;
	const char *devname = NULL;
	union ibv_gid gid;
	int gidx = 1, c, n, i, j, nq, sig, rc = 1;
	sigset_t set;

	while ((c = getopt(argc, argv, "d:g:h")) != -1) {
		switch (c) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gidx = atoi(optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	nq = argc - optind;
	for (i = 0; i < nq; i++) {
		for (j = 0; j < (int)(sizeof(states) / sizeof(states[0])); j++)
			if (!strcmp(argv[optind + i], states[j].name))
				break;
		if (j == (int)(sizeof(states) / sizeof(states[0]))) {
			fprintf(stderr, "qpstates: unknown state '%s'\n%s", argv[optind + i], usage);
			return 2;
		}
	}
	if (!nq) {
		fputs(usage, stderr);
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (!list || i == n) {
		fprintf(stderr, "qpstates: no RDMA device%s%s\n", devname ? " " : "", devname ? devname : "");
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	qp = calloc((size_t)nq, sizeof(*qp));
	if (!ctx || !qp || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)) ||
	    ibv_query_gid(ctx, 1, gidx, &gid)) {
		fprintf(stderr, "qpstates: setup: %s\n", strerror(errno));
		goto out;
	}
	for (i = 0; i < nq; i++) {
		const char *want = argv[optind + i];
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
							.max_recv_sge = 1 } };
		int err = 0;

		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i]) {
			fprintf(stderr, "qpstates: create_qp: %s\n", strerror(errno));
			goto out;
		}
		if (strcmp(want, "reset"))
			err = to_init(qp[i]);
		if (!err && strcmp(want, "reset") && strcmp(want, "init"))
			err = to_rtr(qp[i], &gid, gidx);
		if (!err && (!strcmp(want, "rts") || !strcmp(want, "err")))
			err = to_rts(qp[i]);
		if (!err && !strcmp(want, "err"))
			err = to_err(qp[i]);
		if (err) {
			fprintf(stderr, "qpstates: QP %u to %s: %s\n", qp[i]->qp_num, want, strerror(err));
			goto out;
		}
	}
	printf("ready");
	for (i = 0; i < nq; i++)
		printf(" %s=%u", argv[optind + i], qp[i]->qp_num);
	printf("\n");
	fflush(stdout);
	sigwait(&set, &sig);
	rc = 0;
out:
	for (i = 0; qp && i < nq; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	free(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	return rc;
}
