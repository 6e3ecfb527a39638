// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/nlmon: RDMA netlink device notifications and SYS_GET replies, built here. */
#include <errno.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "nl/nlmon.h"
#include "unit.h"

/* The mainline values lib/nl/nlmon.c relies on, spelled out independently. */
#define CMD_MONITOR 28
#define ATTR_EVENT_TYPE 102
#define ATTR_MONITOR_MODE 103

static char buf[16384];

struct seen {
	int n;
	struct nlmon_event ev[8];
	int stop_at; /* return -ECANCELED at this event (1-based); 0: never */
};

static int on_event(const struct nlmon_event *e, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8)
		s->ev[s->n] = *e;
	s->n++;
	return s->stop_at && s->n == s->stop_at ? -ECANCELED : 0;
}

static struct nlmsghdr *msg(char *at, uint16_t cmd, int type)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(at);

	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	if (type >= 0)
		mnl_attr_put_u8(nlh, ATTR_EVENT_TYPE, (uint8_t)type);
	return nlh;
}

static void put_dev(struct nlmsghdr *nlh, uint32_t index, const char *name)
{
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name);
}

static void test_register_and_netdev(void)
{
	struct seen s = { 0 };
	struct nlmsghdr *a, *b;
	size_t len;
	int ret;

	/* what the kernel sends when rxe0 is created on veth0: register, then netdev attach, in one buffer */
	a = msg(buf, CMD_MONITOR, NLMON_REGISTER);
	put_dev(a, 3, "rxe0");
	b = msg(buf + a->nlmsg_len, CMD_MONITOR, NLMON_NETDEV_ATTACH);
	put_dev(b, 3, "rxe0");
	mnl_attr_put_u32(b, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	mnl_attr_put_u32(b, RDMA_NLDEV_ATTR_NDEV_INDEX, 7);
	mnl_attr_put_strz(b, RDMA_NLDEV_ATTR_NDEV_NAME, "veth0");
	len = a->nlmsg_len + b->nlmsg_len;
	ret = nlmon_parse(buf, len, on_event, &s);
	CHECK(ret == 2 && s.n == 2, "ret %d n %d", ret, s.n);
	CHECK(s.ev[0].type == NLMON_REGISTER && s.ev[0].dev_index == 3 && !strcmp(s.ev[0].dev_name, "rxe0") &&
		      s.ev[0].has == (NLMON_HAS_DEV | NLMON_HAS_NAME),
	      "register: type %u index %u name %s has %#x", s.ev[0].type, s.ev[0].dev_index, s.ev[0].dev_name,
	      s.ev[0].has);
	CHECK(s.ev[1].type == NLMON_NETDEV_ATTACH && s.ev[1].port == 1 && s.ev[1].ndev_index == 7 &&
		      !strcmp(s.ev[1].ndev_name, "veth0") && s.ev[1].has == 0x1f,
	      "attach: port %u ndev %u %s has %#x", s.ev[1].port, s.ev[1].ndev_index, s.ev[1].ndev_name, s.ev[1].has);
	CHECK(!strcmp(nlmon_type_name(NLMON_NETDEV_ATTACH), "netdev_attach") && !nlmon_type_name(6), "names");
}

static void test_rename_unregister_unknown(void)
{
	struct seen s = { 0 };
	struct nlmsghdr *a, *b, *c, *d;
	size_t off;
	int ret;

	a = msg(buf, CMD_MONITOR, NLMON_RENAME);
	put_dev(a, 3, "roce0");
	off = a->nlmsg_len;
	/* a message of another command in the same group is skipped */
	b = msg(buf + off, RDMA_NLDEV_CMD_GET, -1);
	put_dev(b, 9, "other");
	off += b->nlmsg_len;
	/* an event type this rdmactl does not know, with an attribute it does not know: passed through */
	c = msg(buf + off, CMD_MONITOR, 42);
	mnl_attr_put_u64(c, 200, 1);
	off += c->nlmsg_len;
	d = msg(buf + off, CMD_MONITOR, NLMON_UNREGISTER);
	put_dev(d, 3, "roce0");
	off += d->nlmsg_len;
	ret = nlmon_parse(buf, off, on_event, &s);
	CHECK(ret == 3, "ret %d", ret);
	CHECK(s.ev[0].type == NLMON_RENAME && !strcmp(s.ev[0].dev_name, "roce0"), "rename");
	CHECK(s.ev[1].type == 42 && s.ev[1].has == 0, "unknown type %u has %#x", s.ev[1].type, s.ev[1].has);
	CHECK(s.ev[2].type == NLMON_UNREGISTER && s.ev[2].dev_index == 3, "unregister");
	/* the callback can stop the parse */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	ret = nlmon_parse(buf, off, on_event, &s);
	CHECK(ret == -ECANCELED && s.n == 2, "stop: ret %d n %d", ret, s.n);
}

static void test_malformed(void)
{
	struct seen s = { 0 };
	struct nlmsghdr *a;
	struct nlattr *at;
	size_t i;
	int ret;

	/* no event type */
	a = msg(buf, CMD_MONITOR, -1);
	put_dev(a, 1, "x");
	ret = nlmon_parse(buf, a->nlmsg_len, on_event, &s);
	CHECK(ret == -EPROTO && s.n == 0, "no type: ret %d", ret);
	/* a u32 attribute of the wrong size */
	a = msg(buf, CMD_MONITOR, NLMON_REGISTER);
	mnl_attr_put_u16(a, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	ret = nlmon_parse(buf, a->nlmsg_len, on_event, &s);
	CHECK(ret == -EPROTO && s.n == 0, "short u32: ret %d", ret);
	/* a name without its terminating NUL */
	a = msg(buf, CMD_MONITOR, NLMON_REGISTER);
	mnl_attr_put(a, RDMA_NLDEV_ATTR_DEV_NAME, 4, "rxe0");
	ret = nlmon_parse(buf, a->nlmsg_len, on_event, &s);
	CHECK(ret == -EPROTO && s.n == 0, "unterminated: ret %d", ret);
	/* a name longer than the field is cut, terminated */
	a = msg(buf, CMD_MONITOR, NLMON_NETDEV_RENAME);
	mnl_attr_put_strz(a, RDMA_NLDEV_ATTR_NDEV_NAME, "a-very-long-netdev-name-beyond-ifnamsiz");
	ret = nlmon_parse(buf, a->nlmsg_len, on_event, &s);
	CHECK(ret == 1 && strlen(s.ev[0].ndev_name) == IFNAMSIZ - 1, "long: ret %d %s", ret, s.ev[0].ndev_name);
	/* every truncation of a valid message: never a crash, never an event from a partial message */
	a = msg(buf, CMD_MONITOR, NLMON_REGISTER);
	put_dev(a, 3, "rxe0");
	for (i = 0; i < a->nlmsg_len; i++) {
		memset(&s, 0, sizeof(s));
		ret = nlmon_parse(buf, i, on_event, &s);
		CHECK(ret <= 0 && s.n == 0, "truncated at %zu: ret %d n %d", i, ret, s.n);
	}
	/* a message length past the buffer, or so large that its aligned length wraps (libmnl would loop) */
	a->nlmsg_len = 0xfffffffe;
	ret = nlmon_parse(buf, 64, on_event, &s);
	CHECK(ret == -EPROTO, "huge nlmsg_len: ret %d", ret);
	ret = nlmon_parse_sys(buf, 64);
	CHECK(ret == -EPROTO, "huge nlmsg_len (sys): ret %d", ret);
	a = msg(buf, CMD_MONITOR, NLMON_REGISTER);
	put_dev(a, 3, "rxe0");
	/* an attribute whose length runs past the message */
	at = (struct nlattr *)((char *)a + NLMSG_HDRLEN);
	at->nla_len = 200;
	memset(&s, 0, sizeof(s));
	ret = nlmon_parse(buf, a->nlmsg_len, on_event, &s);
	CHECK(ret <= 0 && s.n == 0, "overlong attribute: ret %d n %d", ret, s.n);
}

static void test_sys_reply(void)
{
	struct nlmsghdr *a;
	struct nlmsgerr *err;
	int ret;

	/* Linux 6.1: NETNS_MODE and COPY_ON_FORK, no MONITOR_MODE */
	a = msg(buf, RDMA_NLDEV_CMD_SYS_GET, -1);
	mnl_attr_put_u8(a, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1);
	mnl_attr_put_u8(a, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
	ret = nlmon_parse_sys(buf, a->nlmsg_len);
	CHECK(ret == 0, "6.1 reply: %d", ret);
	/* a kernel with monitoring */
	mnl_attr_put_u8(a, ATTR_MONITOR_MODE, 1);
	ret = nlmon_parse_sys(buf, a->nlmsg_len);
	CHECK(ret == 1, "monitor reply: %d", ret);
	/* an error reply */
	a = mnl_nlmsg_put_header(buf);
	a->nlmsg_type = NLMSG_ERROR;
	err = mnl_nlmsg_put_extra_header(a, sizeof(*err));
	err->error = -EOPNOTSUPP;
	ret = nlmon_parse_sys(buf, a->nlmsg_len);
	CHECK(ret == -EOPNOTSUPP, "error reply: %d", ret);
	/* nothing */
	ret = nlmon_parse_sys(buf, 0);
	CHECK(ret < 0, "empty: %d", ret);
}

int main(void)
{
	RUN(test_register_and_netdev);
	RUN(test_rename_unregister_unknown);
	RUN(test_malformed);
	RUN(test_sys_reply);
	return unit_done();
}
