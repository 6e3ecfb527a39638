/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Lab helpers' shared part: open one RDMA device by name. */
#ifndef RDMACTL_LAB_LABDEV_H
#define RDMACTL_LAB_LABDEV_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

/* A context on device dev, or NULL with a line naming prog and the error. */
static inline struct ibv_context *lab_open_dev(const char *dev, const char *prog)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, num;

	list = ibv_get_device_list(&num);
	for (i = 0; list && i < num; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, dev, strerror(errno));
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

#endif
