// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/nl's reply parser (built replies and real lab captures). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "nl/nl.h"
#include "unit.h"

#define CORPUS "tests/fuzz/corpus/nl/"

static char buf[65536];

struct seen {
	int n;
	struct nl_res last;
	char kern[32];
	unsigned long long mrsum;
	struct nl_summary sum;
};

static int on_res(const struct nl_res *r, void *arg)
{
	struct seen *s = arg;

	s->n++;
	s->last = *r;
	s->last.dev_name = NULL;
	s->last.kern_name = NULL;
	snprintf(s->kern, sizeof(s->kern), "%s", r->kern_name ? r->kern_name : "");
	s->mrsum += r->mrlen;
	return 0;
}

static int on_summary(const struct nl_summary *sum, void *arg)
{
	struct seen *s = arg;

	s->n++;
	s->sum = *sum;
	return 0;
}

static struct nlmsghdr *begin(char *at, uint16_t cmd)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(at);

	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	nlh->nlmsg_flags = NLM_F_MULTI;
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, 3);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, "rxe7");
	return nlh;
}

/* One QP dump message with one user QP (pid 1234) and one kernel QP; 'skip' drops one attribute. */
static size_t qp_msg(char *at, int skip, bool junk)
{
	struct nlmsghdr *nlh = begin(at, RDMA_NLDEV_CMD_RES_QP_GET);
	struct nlattr *table, *e;

	table = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_QP);
	e = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	if (skip != RDMA_NLDEV_ATTR_RES_LQPN)
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_LQPN, 17);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_TYPE, 2);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_STATE, 3);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_PID, 1234);
	if (junk) {
		/* Attributes this parser does not know: an unknown type and one past the table. */
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_SUBTYPE + 1, 9);
		mnl_attr_put_u64(nlh, 1000, 9);
	}
	mnl_attr_nest_end(nlh, e);
	e = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_LQPN, 1);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_TYPE, 1);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_STATE, 3);
	mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core");
	mnl_attr_nest_end(nlh, e);
	mnl_attr_nest_end(nlh, table);
	return nlh->nlmsg_len;
}

static void test_qp_dump(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .res = on_res, .arg = &s };
	size_t len = qp_msg(buf, -1, true);

	CHECK(nl_parse(buf, len, &h) == 0, "a dump message without DONE means more to come");
	CHECK(s.n == 2, "%d entries", s.n);
	CHECK(s.last.type == NL_RES_QP && s.last.id == 1 && s.last.dev_index == 3, "id %u", s.last.id);
	CHECK(!strcmp(s.kern, "ib_core") && (s.last.has & NL_HAS_KERN) && !(s.last.has & NL_HAS_PID), "kern");
	CHECK(s.last.qp_type == 1 && !strcmp(nl_qp_state_name(s.last.state), "RTS"), "type and state");
	CHECK(!strcmp(nl_qp_state_name(200), "UNKNOWN"), "out of range state");
}

static void test_first_entry_fields(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .res = on_res, .arg = &s };
	struct nlmsghdr *nlh = begin(buf, RDMA_NLDEV_CMD_RES_MR_GET);
	struct nlattr *t = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_MR);
	struct nlattr *e = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_MR_ENTRY);

	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_MRN, 5);
	mnl_attr_put_u64(nlh, RDMA_NLDEV_ATTR_RES_MRLEN, 3ULL << 32);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_PID, 77);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_PDN, 2);
	mnl_attr_nest_end(nlh, e);
	mnl_attr_nest_end(nlh, t);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == 0 && s.n == 1, "n %d", s.n);
	CHECK(s.last.pid == 77 && (s.last.has & NL_HAS_PID) && s.last.mrlen == 3ULL << 32 && s.last.pdn == 2,
	      "pid %u mrlen %llu", s.last.pid, (unsigned long long)s.last.mrlen);

	/* An MR without its length is malformed. */
	nlh = begin(buf, RDMA_NLDEV_CMD_RES_MR_GET);
	t = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_MR);
	e = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_MR_ENTRY);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_MRN, 5);
	mnl_attr_nest_end(nlh, e);
	mnl_attr_nest_end(nlh, t);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -EPROTO, "missing mrlen");
}

/* The reply to a request by number (nl_qp_get): one QP, its attributes at the top of the message. */
static void test_qp_by_number(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .res = on_res, .arg = &s };
	struct nlmsghdr *nlh = begin(buf, RDMA_NLDEV_CMD_RES_QP_GET);

	nlh->nlmsg_flags = 0;
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_LQPN, 4711);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_TYPE, 2);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_STATE, 1);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_PID, 99);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == 0 && s.n == 1, "n %d", s.n);
	CHECK(s.last.id == 4711 && s.last.state == 1 && (s.last.has & NL_HAS_STATE) && s.last.port == 1 &&
	      s.last.pid == 99 && s.last.dev_index == 3, "id %u state %u", s.last.id, s.last.state);
	/* neither a table nor the QP's number: malformed, nothing reported */
	nlh = begin(buf, RDMA_NLDEV_CMD_RES_QP_GET);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_STATE, 1);
	s.n = 0;
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -EPROTO && s.n == 0, "n %d", s.n);
	/* the number with a wrong size: rejected by the attribute check */
	nlh = begin(buf, RDMA_NLDEV_CMD_RES_QP_GET);
	mnl_attr_put_u8(nlh, RDMA_NLDEV_ATTR_RES_LQPN, 1);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) < 0 && s.n == 0, "n %d", s.n);
}

static void test_malformed(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .res = on_res, .arg = &s };
	struct nlmsghdr *nlh;
	size_t len, cut;
	int bad = 0;

	len = qp_msg(buf, RDMA_NLDEV_ATTR_RES_LQPN, false);
	CHECK(nl_parse(buf, len, &h) == -EPROTO, "missing lqpn");

	/* Every truncation of a valid message is an error, never a crash or a silent success. */
	len = qp_msg(buf, -1, false);
	for (cut = 1; cut < len; cut++)
		if (nl_parse(buf, cut, &h) != -EPROTO)
			bad++;
	CHECK(bad == 0, "%d truncations not reported", bad);

	/* A u32 attribute with 2 bytes of payload. */
	nlh = begin(buf, RDMA_NLDEV_CMD_RES_QP_GET);
	mnl_attr_put_u16(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -EPROTO, "short u32");

	/* A device name that is not NUL-terminated. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET);
	mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	mnl_attr_put(nlh, RDMA_NLDEV_ATTR_DEV_NAME, 4, "rxe0");
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -EPROTO, "unterminated string");

	/* A message of another netlink family. */
	len = qp_msg(buf, -1, false);
	((struct nlmsghdr *)buf)->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_LS, 1);
	CHECK(nl_parse(buf, len, &h) == -EPROTO, "foreign client");

	/* A message length larger than the buffer (even one that is negative as an int). */
	len = qp_msg(buf, -1, false);
	((struct nlmsghdr *)buf)->nlmsg_len = 0x9e9e9e9e;
	CHECK(nl_parse(buf, len, &h) == -EPROTO, "huge nlmsg_len");
	CHECK(nl_parse(buf, 0, &h) == 0, "empty buffer");
}

static void test_seq(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .res = on_res, .arg = &s, .seq = 42 };
	size_t len = qp_msg(buf, -1, false);

	((struct nlmsghdr *)buf)->nlmsg_seq = 41;
	CHECK(nl_parse(buf, len, &h) < 0 && s.n == 0, "stale sequence number refused");
	((struct nlmsghdr *)buf)->nlmsg_seq = 42;
	CHECK(nl_parse(buf, len, &h) == 0 && s.n == 2, "matching sequence number");
}

static void test_errors(void)
{
	struct nl_handlers h = { 0 };
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;
	int v;

	/* NLMSG_ERROR, capped, with an extended-ack message. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_CAPPED | NLM_F_ACK_TLVS;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = -EOPNOTSUPP;
	e->msg.nlmsg_len = NLMSG_HDRLEN + 8;
	mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, "no such thing here");
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -EOPNOTSUPP, "error code");
	CHECK(!strcmp(h.ext_ack, "no such thing here") && h.done, "ext ack '%s'", h.ext_ack);

	/* An ack (error 0) ends a request. */
	e->error = 0;
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == 1, "ack");

	/* NLMSG_ERROR too short to hold struct nlmsgerr. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = NLMSG_ERROR;
	mnl_attr_put_u32(nlh, 1, 1);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -EPROTO, "short error");

	/* NLMSG_DONE carrying a dump's error. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = NLMSG_DONE;
	v = -ENODEV;
	memcpy(mnl_nlmsg_put_extra_header(nlh, sizeof(v)), &v, sizeof(v));
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == -ENODEV, "done with error");
}

static void test_summary(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .summary = on_summary, .arg = &s };
	struct nlmsghdr *nlh = begin(buf, RDMA_NLDEV_CMD_RES_GET);
	struct nlattr *t = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_SUMMARY), *e;
	static const char *const names[] = { "qp", "mr", "widget" };
	size_t i;

	for (i = 0; i < 3; i++) {
		e = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY);
		mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, names[i]);
		mnl_attr_put_u64(nlh, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, 10 + i);
		mnl_attr_nest_end(nlh, e);
	}
	mnl_attr_nest_end(nlh, t);
	CHECK(nl_parse(buf, nlh->nlmsg_len, &h) == 0 && s.n == 1, "parsed");
	CHECK(s.sum.curr[NL_RES_QP] == 10 && s.sum.curr[NL_RES_MR] == 11, "counts");
	CHECK(s.sum.present == ((1u << NL_RES_QP) | (1u << NL_RES_MR)), "present %#x", s.sum.present);
	CHECK(nl_res_from_name("cm_id") == NL_RES_CM_ID && nl_res_from_name("widget") < 0, "names");
}

/* A corpus file, from the source tree's top (make check-unit) or relative to OUT/tests/test_nl. */
static size_t load(const char *name)
{
	char exe[4096], path[8192];
	ssize_t len;
	size_t n;
	FILE *f;

	f = fopen(name, "rb");
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (!f && len > 0) {
		exe[len] = '\0';
		snprintf(path, sizeof(path), "%s/../../%s", dirname(exe), name);
		f = fopen(path, "rb");
	}

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n;
}

/* Real replies captured in the lab (rxe, Linux 6.1) with RDMACTL_NL_CAPTURE. */
static void test_captures(void)
{
	struct seen s = { 0 };
	struct nl_handlers h = { .res = on_res, .summary = on_summary, .arg = &s };
	size_t len;

	len = load(CORPUS "res-qp-0010.bin");
	CHECK(len > 1000 && nl_parse(buf, len, &h) == 0 && s.n > 100, "qp capture: %d entries", s.n);
	s.n = 0;
	s.mrsum = 0;
	len = load(CORPUS "res-mr-0016.bin");
	CHECK(len && nl_parse(buf, len, &h) == 0 && s.n > 0 && s.mrsum > 0, "mr capture: %d", s.n);
	s.n = 0;
	len = load(CORPUS "res-summary-0020.bin");
	CHECK(len && nl_parse(buf, len, &h) == 0 && s.n == 1 && (s.sum.present & (1u << NL_RES_SRQ)),
	      "summary capture");
	len = load(CORPUS "done-ok.bin");
	CHECK(len && nl_parse(buf, len, &h) == 1, "done");
	len = load(CORPUS "done-einval-bad-dev-index.bin");
	CHECK(len && nl_parse(buf, len, &h) == -EINVAL, "dump error in DONE");
}

int main(void)
{
	RUN(test_qp_dump);
	RUN(test_first_entry_fields);
	RUN(test_qp_by_number);
	RUN(test_malformed);
	RUN(test_seq);
	RUN(test_errors);
	RUN(test_summary);
	RUN(test_captures);
	return unit_done();
}
