// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper: open DEV, allocate one PD and one CQ, then create RC QPs until N exist or creation fails.
 * Prints "pd ok", "cq ok" (or the failure with errno name) and "qp created=K errno=NAME"; exit 0 if all N
 * were created, 3 if creation stopped early, 1 if the device could not be opened or the PD/CQ failed.
 *   mkobjs [-d DEV] [-n N] [-w FILE] [-h FILE]     (default rxe0, 16)
 *   -w FILE: after the PD and CQ, print "waiting" and wait until FILE exists before creating QPs.
 *   -h FILE: once the QPs exist, print "holding" and keep them until FILE exists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static void wait_file(const char *what, const char *path)
{
	struct stat st;

	printf("%s\n", what);
	fflush(stdout);
	while (stat(path, &st))
		usleep(20000);
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0", *wfile = NULL, *hfile = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp *qps[1024];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int i, n = 16, opt, got = 0, err = 0, num;

	while ((opt = getopt(argc, argv, "d:n:w:h:")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'w')
			wfile = optarg;
		else if (opt == 'h')
			hfile = optarg;
		else if (opt == 'n')
			n = atoi(optarg);
		else
			return 2;
	}
	if (n < 0 || n > 1024)
		return 2;
	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		printf("ctx failed errno=%s\n", strerrorname_np(errno ? errno : ENODEV));
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		printf("pd failed errno=%s\n", strerrorname_np(errno));
		return 1;
	}
	printf("pd ok\n");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		printf("cq failed errno=%s\n", strerrorname_np(errno));
		return 1;
	}
	printf("cq ok\n");
	if (wfile)
		wait_file("waiting", wfile);
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	for (got = 0; got < n; got++) {
		qps[got] = ibv_create_qp(pd, &qa);
		if (!qps[got]) {
			err = errno;
			break;
		}
	}
	printf("qp created=%d errno=%s\n", got, err ? strerrorname_np(err) : "0");
	fflush(stdout);
	if (hfile)
		wait_file("holding", hfile);
	for (i = 0; i < got; i++)
		ibv_destroy_qp(qps[i]);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return got == n ? 0 : 3;
}
