/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The rdma cgroup controller's files (rdma.max, rdma.current): one line per device, parsed into numbers. */
#ifndef RDMACTL_RDMACG_H
#define RDMACTL_RDMACG_H

#include <stdbool.h>
#include <stdint.h>

#define RDMACG_DEV_LEN 64
#define RDMACG_MAX_DEVS 32
#define RDMACG_MAX UINT64_MAX /* the word "max": no limit */

/* "rxe0 hca_handle=2 hca_object=max" */
struct rdmacg_line {
	char dev[RDMACG_DEV_LEN];
	uint64_t hca_handle;	/* RDMACG_MAX for "max" */
	uint64_t hca_object;
};

/*
 * Parse the text of rdma.max or rdma.current into out[0..max): the number of lines understood. Lines
 * that are not "DEV hca_handle=N|max hca_object=N|max" (in either order) are skipped.
 */
int rdmacg_parse(const char *text, struct rdmacg_line *out, int max);
/*
 * Read FILE ("rdma.max", "rdma.current") of cgroup (a path relative to the cgroup2 mount root, "/a/b")
 * and parse it. The number of lines, or -errno (-ENOENT: no such cgroup, or the controller is not enabled
 * for it; the root cgroup has neither file).
 */
int rdmacg_read(const char *root, const char *cgroup, const char *file, struct rdmacg_line *out, int max);

#endif
