/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* RDMA netlink device notifications (RDMA_NL_GROUP_NOTIFY, RDMA_NLDEV_CMD_MONITOR) where the kernel has them. */
#ifndef RDMACTL_NLMON_H
#define RDMACTL_NLMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <net/if.h>

/* enum rdma_nl_notify_event_type of include/uapi/rdma/rdma_netlink.h (values are ABI). */
enum nlmon_type {
	NLMON_REGISTER = 0,
	NLMON_UNREGISTER = 1,
	NLMON_NETDEV_ATTACH = 2,
	NLMON_NETDEV_DETACH = 3,
	NLMON_RENAME = 4,	/* carries the new name only */
	NLMON_NETDEV_RENAME = 5,
};

enum {
	NLMON_HAS_DEV = 1u << 0,	/* dev_index */
	NLMON_HAS_NAME = 1u << 1,	/* dev_name */
	NLMON_HAS_PORT = 1u << 2,
	NLMON_HAS_NDEV = 1u << 3,	/* ndev_index */
	NLMON_HAS_NDEV_NAME = 1u << 4,
};

struct nlmon_event {
	unsigned int type;	/* enum nlmon_type; other values are passed through (newer kernels) */
	uint32_t dev_index;
	char dev_name[64];	/* IB_DEVICE_NAME_MAX */
	uint32_t port;
	uint32_t ndev_index;
	char ndev_name[IFNAMSIZ];
	uint32_t has;		/* NLMON_HAS_* */
};

/* "register", "unregister", "netdev_attach", "netdev_detach", "rename", "netdev_rename"; NULL if unknown. */
const char *nlmon_type_name(unsigned int type);

/*
 * Parse one received datagram of the notify group (one or more netlink messages) and call cb for each
 * RDMA_NLDEV_CMD_MONITOR message; other message types are skipped. Attributes are validated (type and
 * length); unknown ones are skipped. Returns the number of events delivered, -EPROTO for a malformed
 * or truncated message (or one without RDMA_NLDEV_ATTR_EVENT_TYPE; nothing is delivered when a message
 * length is wrong), or cb's non-zero return. Never reads outside buf[0..len).
 */
int nlmon_parse(const void *buf, size_t len, int (*cb)(const struct nlmon_event *e, void *arg), void *arg);

/*
 * Parse a reply to RDMA_NLDEV_CMD_SYS_GET: 1 when it says the kernel sends monitor events
 * (RDMA_NLDEV_SYS_ATTR_MONITOR_MODE = 1), 0 when it does not, -errno for an error reply, -EPROTO when
 * malformed.
 */
int nlmon_parse_sys(const void *buf, size_t len);

/*
 * Open a non-blocking NETLINK_RDMA socket that receives device notifications: asks the kernel whether
 * it sends them (SYS_GET), then joins RDMA_NL_GROUP_NOTIFY. -EOPNOTSUPP when the kernel has no such
 * notifications (Linux 6.1, say); other -errno on failure. nlmon_read() then delivers what is waiting.
 */
int nlmon_open(int *fd);
/* Receive and parse every datagram waiting on fd; returns events delivered or -errno (-EAGAIN: none). */
int nlmon_read(int fd, int (*cb)(const struct nlmon_event *e, void *arg), void *arg);

#endif
