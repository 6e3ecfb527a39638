// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Synthetic driver-namespace uverbs requests (mlx5 DEVX and UARs, bnxt_re pages, efa...) on a uverbs file of
 * any device, for the kernel quota programs' table (bpf/kqdrv.h). The kernel refuses a request whose
 * driver_id is not the device's with EINVAL, after the LSM hook: on rxe, EINVAL means the hook let it pass.
 *
 *   kqdrv -o OBJ -m METH [-d DRIVER] [-c OPCODE] [-l LEN] [-n N]   one request, N times
 *   kqdrv -T pass                                                  every method of the table that passes
 *   -P N: N attributes of no meaning before the real ones
 *   -M CGROUP: once the device is open, move into CGROUP (its directory) before the requests: a process that
 *       left the cgroup whose limits its file carries
 * Prints "NAME errno=ENAME" per request (ENAME of the last of N), exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/rdma_user_ioctl_cmds.h>

#include "kq/kqdrv.h"

/* pad: attributes of no meaning put first (a request that hides what the hook reads far down) */
static int pad;

static int send_req(int fd, unsigned int drv, unsigned int obj, unsigned int meth, int opcode, long long len)
{
	struct {
		struct ib_uverbs_ioctl_hdr h;
		struct ib_uverbs_attr a[64 + 4];
	} req;
	unsigned char cmd_in[64] = { 0 }, cmd_out[64], buf[4096];
	int n = 0;

	memset(&req, 0, sizeof(req));
	while (n < pad && n < 64) {
		req.a[n] = (struct ib_uverbs_attr){ .attr_id = 0x10f0 + n };
		n++;
	}
	if (opcode >= 0) {
		/* a DEVX create: the handle, then the PRM command (opcode big-endian), then its output */
		cmd_in[0] = opcode >> 8;
		cmd_in[1] = opcode & 0xff;
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = 0x1000 };
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = KQ_DEVX_ATTR_CMD_IN, .len = sizeof(cmd_in),
						      .data = (unsigned long)cmd_in };
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = 0x1002, .len = sizeof(cmd_out),
						      .data = (unsigned long)cmd_out };
	} else if (len >= 0) {
		/* a DEVX UMEM: handle, address, length (inline), access */
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = 0x1000 };
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = 0x1001, .len = 8, .data = (unsigned long)buf };
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = KQ_DEVX_ATTR_UMEM_LEN, .len = 8,
						      .data = (unsigned long long)len };
		req.a[n++] = (struct ib_uverbs_attr){ .attr_id = 0x1003, .len = 8, .data = 1 };
	}
	req.h.length = sizeof(req.h) + n * sizeof(req.a[0]);
	req.h.object_id = obj;
	req.h.method_id = meth;
	req.h.num_attrs = n;
	req.h.driver_id = drv;
	return ioctl(fd, RDMA_VERBS_IOCTL, &req) ? errno : 0;
}

static const char *ename(int err)
{
	const char *n = err ? strerrorname_np(err) : "0";

	return n ? n : "?";
}

static unsigned int parse_driver(const char *s)
{
	unsigned int i;
	char *end;

	for (i = 0; i < 64; i++)
		if (kq_drv_name(i) && !strcmp(kq_drv_name(i), s))
			return i;
	i = strtoul(s, &end, 0);
	if (*end) {
		fprintf(stderr, "kqdrv: unknown driver '%s'\n", s);
		exit(2);
	}
	return i;
}

int main(int argc, char **argv)
{
	const char *dev = "/dev/infiniband/uverbs0", *table = NULL, *moveto = NULL;
	unsigned int drv = KQ_DRIVER_MLX5, obj = 0, meth = 0;
	int c, fd, err = 0, opcode = -1, n = 1, i;
	long long len = -1;
	size_t k;

	while ((c = getopt(argc, argv, "D:d:o:m:c:l:n:T:P:M:")) != -1) {
		switch (c) {
		case 'D': dev = optarg; break;
		case 'd': drv = parse_driver(optarg); break;
		case 'o': obj = strtoul(optarg, NULL, 0); break;
		case 'm': meth = strtoul(optarg, NULL, 0); break;
		case 'c': opcode = strtol(optarg, NULL, 0); break;
		case 'l': len = strtoll(optarg, NULL, 0); break;
		case 'n': n = atoi(optarg); break;
		case 'T': table = optarg; break;
		case 'P': pad = atoi(optarg); break;
		case 'M': moveto = optarg; break;
		default:
			fprintf(stderr, "usage: kqdrv -o OBJ -m METH [-d DRIVER] [-c OPCODE] [-l LEN] [-n N] | -T pass\n");
			return 2;
		}
	}
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "kqdrv: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (moveto) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", moveto);
		f = fopen(path, "w");
		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
			fprintf(stderr, "kqdrv: cannot move into %s: %s\n", moveto, strerror(errno));
			return 1;
		}
	}
	if (table) {
		for (k = 0; k < kq_drv_nmethods; k++) {
			const struct kq_drv_method *m = &kq_drv_methods[k];

			if (strcmp(table, "pass") || m->action != KQ_DRV_PASS)
				continue;
			err = send_req(fd, m->driver, m->object, m->method, -1, -1);
			printf("%s %s %s errno=%s\n", kq_drv_name(m->driver), m->object_name, m->method_name, ename(err));
		}
		close(fd);
		return 0;
	}
	for (i = 0; i < n; i++)
		err = send_req(fd, drv, obj, meth, opcode, len);
	printf("%s 0x%x 0x%x errno=%s\n", kq_drv_name(drv) ? kq_drv_name(drv) : "?", obj, meth, ename(err));
	fflush(stdout);
	close(fd);
	return 0;
}
