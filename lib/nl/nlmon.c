// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RDMA netlink device notifications (RDMA_NL_GROUP_NOTIFY, RDMA_NLDEV_CMD_MONITOR) where the kernel has them. */
#include "nl/nlmon.h"
#include "nl/nl.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

/*
 * Newer than the Linux 6.1 uapi that rdma-core 44 ships, so defined here; values from mainline's
 * include/uapi/rdma/rdma_netlink.h (monitoring series of 2024): the notify group follows RDMA_NL_GROUP_LS,
 * RDMA_NLDEV_CMD_MONITOR follows STAT_GET_STATUS, RES_SRQ_GET_RAW, NEWDEV and DELDEV; EVENT_TYPE and
 * SYS_ATTR_MONITOR_MODE follow RES_SUBTYPE, DEV_TYPE, PARENT_NAME and NAME_ASSIGN_TYPE.
 */
#define NLMON_GROUP_NOTIFY 4		/* RDMA_NL_GROUP_NOTIFY */
#define NLMON_CMD_MONITOR 28		/* RDMA_NLDEV_CMD_MONITOR */
#define NLMON_ATTR_EVENT_TYPE 102	/* RDMA_NLDEV_ATTR_EVENT_TYPE, u8 */
#define NLMON_ATTR_MONITOR_MODE 103	/* RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, u8 */
#define NLMON_ATTR_MAX 104

_Static_assert(RDMA_NL_GROUP_LS + 1 == NLMON_GROUP_NOTIFY, "RDMA_NL_GROUP_NOTIFY follows RDMA_NL_GROUP_LS");
_Static_assert(RDMA_NLDEV_CMD_STAT_GET_STATUS + 4 == NLMON_CMD_MONITOR, "uapi command numbering");
_Static_assert(RDMA_NLDEV_ATTR_RES_SUBTYPE + 4 == NLMON_ATTR_EVENT_TYPE, "uapi attribute numbering");

const char *nlmon_type_name(unsigned int type)
{
	static const char *const names[] = { "register", "unregister", "netdev_attach",
					     "netdev_detach", "rename", "netdev_rename" };

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : NULL;
}

typedef const struct nlattr *nlmon_tb[NLMON_ATTR_MAX];

static int attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);
	enum mnl_attr_data_type t;

	switch (type) {
	case RDMA_NLDEV_ATTR_DEV_INDEX:
	case RDMA_NLDEV_ATTR_PORT_INDEX:
	case RDMA_NLDEV_ATTR_NDEV_INDEX:
		t = MNL_TYPE_U32;
		break;
	case RDMA_NLDEV_ATTR_DEV_NAME:
	case RDMA_NLDEV_ATTR_NDEV_NAME:
		t = MNL_TYPE_NUL_STRING;
		break;
	case NLMON_ATTR_EVENT_TYPE:
	case NLMON_ATTR_MONITOR_MODE:
		t = MNL_TYPE_U8;
		break;
	default:
		return MNL_CB_OK; /* not ours: skipped */
	}
	if (mnl_attr_validate(a, t) < 0)
		return MNL_CB_ERROR;
	tb[type] = a;
	return MNL_CB_OK;
}


/*
 * libmnl's message length check is signed (a huge nlmsg_len passes it, and then its aligned length wraps
 * to 0: an endless loop) and it stops silently at a message cut short: check every length first.
 */
static int check_lengths(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh;
	size_t off = 0;

	if (len > (1u << 30))
		return -E2BIG;
	while (off < len && len - off >= sizeof(*nlh)) {
		nlh = (const struct nlmsghdr *)((const char *)buf + off);
		if (nlh->nlmsg_len < sizeof(*nlh) || nlh->nlmsg_len > len - off)
			return -EPROTO;
		off += MNL_ALIGN(nlh->nlmsg_len);
	}
	return off < len ? -EPROTO : 0;
}

struct parse_ctx {
	int (*cb)(const struct nlmon_event *e, void *arg);
	void *arg;
	int n, err;
	int mode; /* nlmon_parse_sys: -1 no reply yet */
};

static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	struct parse_ctx *c = data;
	struct nlmon_event e;
	nlmon_tb tb = { NULL };
	int ret;

	if (nlh->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, NLMON_CMD_MONITOR))
		return MNL_CB_OK;
	if (mnl_attr_parse(nlh, 0, attr_cb, tb) < 0 || !tb[NLMON_ATTR_EVENT_TYPE]) {
		c->err = -EPROTO;
		return MNL_CB_ERROR;
	}
	memset(&e, 0, sizeof(e));
	e.type = mnl_attr_get_u8(tb[NLMON_ATTR_EVENT_TYPE]);
	if (tb[RDMA_NLDEV_ATTR_DEV_INDEX]) {
		e.dev_index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
		e.has |= NLMON_HAS_DEV;
	}
	if (tb[RDMA_NLDEV_ATTR_DEV_NAME]) {
		nl_attr_str(e.dev_name, sizeof(e.dev_name), tb[RDMA_NLDEV_ATTR_DEV_NAME]);
		e.has |= NLMON_HAS_NAME;
	}
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX]) {
		e.port = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
		e.has |= NLMON_HAS_PORT;
	}
	if (tb[RDMA_NLDEV_ATTR_NDEV_INDEX]) {
		e.ndev_index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_NDEV_INDEX]);
		e.has |= NLMON_HAS_NDEV;
	}
	if (tb[RDMA_NLDEV_ATTR_NDEV_NAME]) {
		nl_attr_str(e.ndev_name, sizeof(e.ndev_name), tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
		e.has |= NLMON_HAS_NDEV_NAME;
	}
	c->n++;
	ret = c->cb ? c->cb(&e, c->arg) : 0;
	if (ret) {
		c->err = ret;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int nlmon_parse(const void *buf, size_t len, int (*cb)(const struct nlmon_event *e, void *arg), void *arg)
{
	struct parse_ctx c = { cb, arg, 0, 0, -1 };
	int ret = check_lengths(buf, len);

	if (ret)
		return ret;
	if (mnl_cb_run(buf, len, 0, 0, event_cb, &c) < 0)
		return c.err ? c.err : -EPROTO;
	return c.n;
}

static int sys_cb(const struct nlmsghdr *nlh, void *data)
{
	struct parse_ctx *c = data;
	nlmon_tb tb = { NULL };

	if (nlh->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET))
		return MNL_CB_OK;
	if (mnl_attr_parse(nlh, 0, attr_cb, tb) < 0) {
		c->err = -EPROTO;
		return MNL_CB_ERROR;
	}
	c->mode = tb[NLMON_ATTR_MONITOR_MODE] && mnl_attr_get_u8(tb[NLMON_ATTR_MONITOR_MODE]) == 1;
	return MNL_CB_STOP;
}

int nlmon_parse_sys(const void *buf, size_t len)
{
	struct parse_ctx c = { NULL, NULL, 0, 0, -1 };
	int ret = check_lengths(buf, len);

	if (ret)
		return ret;
	errno = 0;
	if (mnl_cb_run(buf, len, 0, 0, sys_cb, &c) < 0)
		/* an error reply: its code, if it is one (the kernel's are -1..-4095) */
		return c.err ? c.err : errno > 0 && errno < 4096 ? -errno : -EPROTO;
	return c.mode < 0 ? -EPROTO : c.mode;
}

/* Ask the kernel (SYS_GET) whether it sends monitor events: 1, 0, or -errno. */
static int query_monitor_mode(int fd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct timeval tv = { 2, 0 };
	struct nlmsghdr *nlh;
	unsigned int seq = 1;
	ssize_t n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = seq;
	if (send(fd, nlh, nlh->nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		nlh = (struct nlmsghdr *)buf;
		if ((size_t)n >= sizeof(*nlh) && nlh->nlmsg_seq != seq)
			continue; /* not the reply */
		return nlmon_parse_sys(buf, n);
	}
}

int nlmon_open(int *out)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd, one = 1, group = NLMON_GROUP_NOTIFY, ret;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		goto err;
	}
	ret = query_monitor_mode(fd);
	if (ret <= 0) {
		/* No MONITOR_MODE (6.1), or SYS_GET unknown: every kernel accepts the join, but nothing would come. */
		ret = ret == 0 || ret == -EOPNOTSUPP || ret == -EINVAL ? -EOPNOTSUPP : ret;
		goto err;
	}
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group))) {
		ret = -errno;
		goto err;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		ret = -errno;
		goto err;
	}
	*out = fd;
	return 0;
err:
	close(fd);
	return ret;
}

int nlmon_read(int fd, int (*cb)(const struct nlmon_event *e, void *arg), void *arg)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct sockaddr_nl sa;
	socklen_t sl;
	int total = 0, ret;
	ssize_t n;

	for (;;) {
		sl = sizeof(sa);
		n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&sa, &sl);
		if (n < 0)
			return errno == EAGAIN && total ? total : -errno;
		if (sa.nl_pid != 0) /* only the kernel, never another process */
			continue;
		ret = nlmon_parse(buf, n, cb, arg);
		if (ret < 0)
			return ret;
		total += ret;
	}
}
