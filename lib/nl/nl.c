// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* RDMA netlink (NLDEV) through libmnl: devices, ports, resource summaries and resource dumps. */
#include "nl/nl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

/* The ledger kind (= enum kind, lib/core/kinds.h) of a netlink kind, the netlink kind of a restrack type. */
const signed char kind_ledger_of_nl[NL_RES_NTYPES] = {
#define X(name, NAME, led, nl, ...) KINDS_IF(nl, [NL_RES_##NAME] = KINDS_SEL(led, KIND_##NAME, -1), )
	KINDS(X)
#undef X
};

const signed char kind_nl_of_restrack[RESTRACK_NTYPES] = {
#define X(name, NAME, led, nl, rt, ...) KINDS_IF(rt, [RESTRACK_##NAME] = KINDS_SEL(nl, NL_RES_##NAME, -1), )
	KINDS(X)
#undef X
};

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NLM_F_CAPPED
#define NLM_F_CAPPED 0x100
#endif
#ifndef NLM_F_ACK_TLVS
#define NLM_F_ACK_TLVS 0x200
#endif

/* Attributes past the table (newer kernels) are skipped, as are attributes of unknown type. */
#define NL_ATTR_MAX RDMA_NLDEV_ATTR_MAX

static const enum mnl_attr_data_type policy[NL_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_DEV_NAME] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_PORT_INDEX] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_CAP_FLAGS] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_FW_VERSION] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_NODE_GUID] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_SUBNET_PREFIX] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_LID] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_SM_LID] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_LMC] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_PORT_STATE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_PORT_PHYS_STATE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_DEV_NODE_TYPE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_RES_SUMMARY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_RES_QP] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_QP_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_LQPN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_RQPN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_RQ_PSN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_SQ_PSN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_RES_TYPE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_RES_STATE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_RES_PID] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_KERN_NAME] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_RES_CM_ID] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_PS] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_CQ] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_CQ_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_CQE] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_USECNT] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_RES_POLL_CTX] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_RES_MR] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_MR_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_RKEY] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_LKEY] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_IOVA] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_RES_MRLEN] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_RES_PD] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_PD_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_NDEV_INDEX] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_NDEV_NAME] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_DRIVER] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_DRIVER_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_DRIVER_STRING] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE] = MNL_TYPE_U8,
	[RDMA_NLDEV_ATTR_DRIVER_S32] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_DRIVER_U32] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_DRIVER_S64] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_DRIVER_U64] = MNL_TYPE_U64,
	[RDMA_NLDEV_ATTR_RES_PDN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_CQN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_MRN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_CM_IDN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_RES_CTXN] = MNL_TYPE_U32,
	[RDMA_NLDEV_ATTR_DEV_PROTOCOL] = MNL_TYPE_NUL_STRING,
	[RDMA_NLDEV_ATTR_RES_CTX] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_CTX_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_SRQ] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_SRQ_ENTRY] = MNL_TYPE_NESTED,
	[RDMA_NLDEV_ATTR_RES_SRQN] = MNL_TYPE_U32,
};

/* The attribute that carries an object's number is NAMEN, except for a QP: its local QPN. */
#define RDMA_NLDEV_ATTR_RES_QPN RDMA_NLDEV_ATTR_RES_LQPN

/* Per kind: dump command, table and entry attributes, id attribute (from the rows of lib/core/kinds.h). */
static const struct res_desc {
	const char *name;
	uint16_t cmd;
	uint16_t table;
	uint16_t entry;
	uint16_t id;
} res_desc[NL_RES_NTYPES] = {
#define X(name, NAME, led, nl, ...)                                                                        \
	KINDS_IF(nl, [NL_RES_##NAME] = { #name, RDMA_NLDEV_CMD_RES_##NAME##_GET, RDMA_NLDEV_ATTR_RES_##NAME, \
					 RDMA_NLDEV_ATTR_RES_##NAME##_ENTRY, RDMA_NLDEV_ATTR_RES_##NAME##N }, )
	KINDS(X)
#undef X
};

const char *nl_res_name(enum nl_res_type t)
{
	return (unsigned)t < NL_RES_NTYPES ? res_desc[t].name : NULL;
}

int nl_res_from_name(const char *name)
{
	int t;

	for (t = 0; t < NL_RES_NTYPES; t++)
		if (!strcmp(name, res_desc[t].name))
			return t;
	return -1;
}

const char *nl_qp_state_name(uint8_t s)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

const char *nl_port_state_name(uint8_t s)
{
	static const char *const names[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

/* --- parsing -------------------------------------------------------------------------------------- */

typedef const struct nlattr *nl_tb[NL_ATTR_MAX];

/*
 * Validate every attribute of a payload against the policy and index the known ones. Unlike
 * mnl_attr_parse(), bytes left over that do not form a whole attribute are an error (truncation).
 */
static int parse_attrs(const void *payload, size_t len, nl_tb tb)
{
	const struct nlattr *a = payload;
	size_t step;

	memset(tb, 0, sizeof(nl_tb));
	while (len >= sizeof(struct nlattr)) {
		if (a->nla_len < sizeof(struct nlattr) || a->nla_len > len)
			return -EPROTO;
		if (mnl_attr_get_type(a) < NL_ATTR_MAX) {
			if (mnl_attr_validate(a, policy[mnl_attr_get_type(a)]) < 0)
				return -EPROTO;
			tb[mnl_attr_get_type(a)] = a;
		}
		step = MNL_ALIGN(a->nla_len);
		if (step >= len)
			return 0;
		len -= step;
		a = (const struct nlattr *)((const char *)a + step);
	}
	return len ? -EPROTO : 0;
}

static int parse_nested(const struct nlattr *nest, nl_tb tb)
{
	return parse_attrs(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), tb);
}

void nl_attr_str(char *dst, size_t len, const struct nlattr *a)
{
	size_t n = 0;

	if (a) {
		n = strnlen(mnl_attr_get_str(a), mnl_attr_get_payload_len(a));
		if (n >= len)
			n = len - 1;
		memcpy(dst, mnl_attr_get_str(a), n);
	}
	dst[n] = '\0';
}

struct parse_ctx {
	struct nl_handlers *h;
	int err;
};

static int parse_dev(const nl_tb tb, struct nl_handlers *h)
{
	struct nl_dev d = { 0 };

	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return -EPROTO;
	d.index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	nl_attr_str(d.name, sizeof(d.name), tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		d.nports = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_NODE_GUID])
		d.node_guid = mnl_attr_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]);
	if (tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE])
		d.node_type = mnl_attr_get_u8(tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]);
	nl_attr_str(d.fw, sizeof(d.fw), tb[RDMA_NLDEV_ATTR_FW_VERSION]);
	nl_attr_str(d.protocol, sizeof(d.protocol), tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL]);
	return h->dev(&d, h->arg);
}

static int parse_port(const nl_tb tb, struct nl_handlers *h)
{
	struct nl_port p = { 0 };

	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		return -EPROTO;
	p.dev_index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	nl_attr_str(p.dev_name, sizeof(p.dev_name), tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	p.port = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_PORT_STATE])
		p.state = mnl_attr_get_u8(tb[RDMA_NLDEV_ATTR_PORT_STATE]);
	if (tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE])
		p.phys_state = mnl_attr_get_u8(tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE]);
	if (tb[RDMA_NLDEV_ATTR_NDEV_INDEX])
		p.netdev_index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_NDEV_INDEX]);
	nl_attr_str(p.netdev, sizeof(p.netdev), tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
	return h->port(&p, h->arg);
}

static int parse_summary(const nl_tb tb, struct nl_handlers *h)
{
	const struct nlattr *e;
	struct nl_summary s = { 0 };
	nl_tb etb;
	int t, ret;

	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME] || !tb[RDMA_NLDEV_ATTR_RES_SUMMARY])
		return -EPROTO;
	s.dev_index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	nl_attr_str(s.dev_name, sizeof(s.dev_name), tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	/* The nest was validated as a whole by parse_attrs; its members are checked one by one here. */
	ret = parse_nested(tb[RDMA_NLDEV_ATTR_RES_SUMMARY], etb);
	if (ret)
		return ret;
	mnl_attr_for_each_nested(e, tb[RDMA_NLDEV_ATTR_RES_SUMMARY]) {
		if (mnl_attr_get_type(e) != RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)
			continue;
		ret = parse_nested(e, etb);
		if (ret)
			return ret;
		if (!etb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME] || !etb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR])
			return -EPROTO;
		t = nl_res_from_name(mnl_attr_get_str(etb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME]));
		if (t < 0)
			continue;
		s.curr[t] = mnl_attr_get_u64(etb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR]);
		s.present |= 1u << t;
	}
	return h->summary(&s, h->arg);
}

/* One object's attributes (etb: a dump's entry, or the reply to a request by number) into r. */
static int fill_res(const nl_tb tb, const nl_tb etb, enum nl_res_type t, struct nl_res *r)
{
	if (!etb[res_desc[t].id])
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->type = t;
	r->dev_index = mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	r->dev_name = mnl_attr_get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	r->id = mnl_attr_get_u32(etb[res_desc[t].id]);
	if (etb[RDMA_NLDEV_ATTR_RES_PID]) {
		r->pid = mnl_attr_get_u32(etb[RDMA_NLDEV_ATTR_RES_PID]);
		r->has |= NL_HAS_PID;
	} else if (etb[RDMA_NLDEV_ATTR_RES_KERN_NAME]) {
		r->kern_name = mnl_attr_get_str(etb[RDMA_NLDEV_ATTR_RES_KERN_NAME]);
		r->has |= NL_HAS_KERN;
	}
	if (t == NL_RES_MR) {
		if (!etb[RDMA_NLDEV_ATTR_RES_MRLEN])
			return -EPROTO;
		r->mrlen = mnl_attr_get_u64(etb[RDMA_NLDEV_ATTR_RES_MRLEN]);
		r->has |= NL_HAS_MRLEN;
	}
	if (etb[RDMA_NLDEV_ATTR_RES_TYPE]) {
		r->qp_type = mnl_attr_get_u8(etb[RDMA_NLDEV_ATTR_RES_TYPE]);
		r->has |= NL_HAS_QP_TYPE;
	}
	if (etb[RDMA_NLDEV_ATTR_RES_STATE]) {
		r->state = mnl_attr_get_u8(etb[RDMA_NLDEV_ATTR_RES_STATE]);
		r->has |= NL_HAS_STATE;
	}
	if (etb[RDMA_NLDEV_ATTR_PORT_INDEX]) {
		r->port = mnl_attr_get_u32(etb[RDMA_NLDEV_ATTR_PORT_INDEX]);
		r->has |= NL_HAS_PORT;
	}
	if (etb[RDMA_NLDEV_ATTR_RES_PDN] && t != NL_RES_PD) {
		r->pdn = mnl_attr_get_u32(etb[RDMA_NLDEV_ATTR_RES_PDN]);
		r->has |= NL_HAS_PDN;
	}
	if (etb[RDMA_NLDEV_ATTR_RES_CTXN] && t != NL_RES_CTX) {
		r->ctxn = mnl_attr_get_u32(etb[RDMA_NLDEV_ATTR_RES_CTXN]);
		r->has |= NL_HAS_CTXN;
	}
	return 0;
}

/* A dump's message: the kind's table of entries. A reply to a request by number: the object's attributes. */
static int parse_res(const nl_tb tb, enum nl_res_type t, struct nl_handlers *h)
{
	const struct res_desc *rd = &res_desc[t];
	const struct nlattr *e;
	struct nl_res r;
	nl_tb etb;
	int ret;

	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return -EPROTO;
	if (!tb[rd->table]) {
		if (!tb[rd->id])
			return -EPROTO;
		ret = fill_res(tb, tb, t, &r);
		return ret ? ret : h->res(&r, h->arg);
	}
	/* Validates the table's members (entries) before walking it. */
	ret = parse_nested(tb[rd->table], etb);
	if (ret)
		return ret;
	mnl_attr_for_each_nested(e, tb[rd->table]) {
		if (mnl_attr_get_type(e) != rd->entry)
			continue;
		ret = parse_nested(e, etb);
		if (!ret)
			ret = fill_res(tb, etb, t, &r);
		if (!ret)
			ret = h->res(&r, h->arg);
		if (ret)
			return ret;
	}
	return 0;
}

static int data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct parse_ctx *c = data;
	struct nl_handlers *h = c->h;
	unsigned int op = RDMA_NL_GET_OP(nlh->nlmsg_type);
	nl_tb tb;
	int t, ret = 0;

	if (RDMA_NL_GET_CLIENT(nlh->nlmsg_type) != RDMA_NL_NLDEV) {
		c->err = -EPROTO;
		return MNL_CB_ERROR;
	}
	for (t = 0; t < NL_RES_NTYPES; t++)
		if (res_desc[t].cmd == op)
			break;
	if (!(op == RDMA_NLDEV_CMD_GET && h->dev) && !(op == RDMA_NLDEV_CMD_PORT_GET && h->port) &&
	    !(op == RDMA_NLDEV_CMD_RES_GET && h->summary) && !(t < NL_RES_NTYPES && h->res))
		return MNL_CB_OK;
	ret = parse_attrs(mnl_nlmsg_get_payload(nlh), mnl_nlmsg_get_payload_len(nlh), tb);
	if (!ret) {
		if (op == RDMA_NLDEV_CMD_GET)
			ret = parse_dev(tb, h);
		else if (op == RDMA_NLDEV_CMD_PORT_GET)
			ret = parse_port(tb, h);
		else if (op == RDMA_NLDEV_CMD_RES_GET)
			ret = parse_summary(tb, h);
		else
			ret = parse_res(tb, t, h);
	}
	if (ret) {
		c->err = ret;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

/* The extended ack TLVs start at off in the payload of an NLMSG_ERROR or NLMSG_DONE. */
static void parse_ext_ack(const struct nlmsghdr *nlh, size_t off, struct nl_handlers *h)
{
	size_t len = mnl_nlmsg_get_payload_len(nlh);
	const struct nlattr *a;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || off >= len)
		return;
	len -= off;
	a = (const struct nlattr *)((const char *)mnl_nlmsg_get_payload(nlh) + off);
	while (len >= sizeof(*a) && a->nla_len >= sizeof(*a) && a->nla_len <= len) {
		if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
			snprintf(h->ext_ack, sizeof(h->ext_ack), "%s", mnl_attr_get_str(a));
			return;
		}
		if ((size_t)MNL_ALIGN(a->nla_len) >= len)
			return;
		len -= MNL_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const char *)a + MNL_ALIGN(a->nla_len));
	}
}

static int error_cb(const struct nlmsghdr *nlh, void *data)
{
	struct parse_ctx *c = data;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	size_t off = sizeof(*e);

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e)) {
		c->err = -EPROTO;
		return MNL_CB_ERROR;
	}
	c->h->done = true;
	if (!e->error)
		return MNL_CB_STOP;
	/* Without NETLINK_CAP_ACK honoured, the whole request follows the error code. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len > NLMSG_HDRLEN)
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	parse_ext_ack(nlh, off, c->h);
	c->err = e->error < 0 && e->error > -4096 ? e->error : -EPROTO;
	return MNL_CB_ERROR;
}

static int done_cb(const struct nlmsghdr *nlh, void *data)
{
	struct parse_ctx *c = data;
	int err;

	c->h->done = true;
	/* A dump that failed after it started ends with NLMSG_DONE carrying the negative errno. */
	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int)) {
		memcpy(&err, mnl_nlmsg_get_payload(nlh), sizeof(err));
		if (err < 0) {
			parse_ext_ack(nlh, sizeof(int), c->h);
			c->err = err > -4096 ? err : -EPROTO;
			return MNL_CB_ERROR;
		}
	}
	return MNL_CB_STOP;
}

int nl_parse(const void *buf, size_t len, struct nl_handlers *h)
{
	static mnl_cb_t ctl[NLMSG_MIN_TYPE] = { [NLMSG_ERROR] = error_cb, [NLMSG_DONE] = done_cb };
	struct parse_ctx c = { .h = h, .err = 0 };
	const struct nlmsghdr *nlh;
	size_t off = 0;
	int ret;

	h->ext_ack[0] = '\0';
	h->done = false;
	if (len > (1u << 30))
		return -E2BIG;
	/*
	 * libmnl silently stops at a message cut short, and its length check is signed (a huge
	 * nlmsg_len passes it): check every message length here, before mnl_cb_run2() sees the buffer.
	 */
	while (off < len && len - off >= sizeof(*nlh)) {
		nlh = (const struct nlmsghdr *)((const char *)buf + off);
		if (nlh->nlmsg_len < sizeof(*nlh) || nlh->nlmsg_len > len - off)
			return -EPROTO;
		off += MNL_ALIGN(nlh->nlmsg_len);
	}
	if (off < len)
		return -EPROTO;
	ret = mnl_cb_run2(buf, len, h->seq, h->portid, data_cb, &c, ctl, NLMSG_MIN_TYPE);
	if (ret == MNL_CB_ERROR)
		return c.err ? c.err : (errno ? -errno : -EPROTO);
	return ret == MNL_CB_STOP ? 1 : 0;
}

/* --- socket --------------------------------------------------------------------------------------- */

#define NL_BUF_SIZE (64 * 1024)

struct nl_sock {
	struct mnl_socket *nl;
	unsigned int portid;
	unsigned int seq;
	char ext_ack[256];
	const char *capture;	/* RDMACTL_NL_CAPTURE: directory for every received buffer */
	unsigned int ncapture;
	char buf[NL_BUF_SIZE] __attribute__((aligned(8)));
};

int nl_open(struct nl_sock **out)
{
	struct nl_sock *s;
	int one = 1, ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->nl = mnl_socket_open2(NETLINK_RDMA, SOCK_CLOEXEC);
	if (!s->nl) {
		ret = -errno;
		free(s);
		return ret;
	}
	/* Best effort: older kernels lack them, and errors are still reported without. */
	mnl_socket_setsockopt(s->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(s->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	if (mnl_socket_bind(s->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		mnl_socket_close(s->nl);
		free(s);
		return ret;
	}
	s->portid = mnl_socket_get_portid(s->nl);
	s->seq = (unsigned int)time(NULL);
	s->capture = getenv("RDMACTL_NL_CAPTURE");
	if (s->capture && !*s->capture)
		s->capture = NULL;
	*out = s;
	return 0;
}

void nl_close(struct nl_sock *s)
{
	if (!s)
		return;
	mnl_socket_close(s->nl);
	free(s);
}

const char *nl_ext_ack(const struct nl_sock *s)
{
	return s ? s->ext_ack : "";
}

static void capture(struct nl_sock *s, uint16_t cmd, size_t len)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/nldev-cmd%u-%d-%04u.bin", s->capture, cmd, (int)getpid(), s->ncapture++);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, s->buf, len) != (ssize_t)len)
		unlink(path);
	close(fd);
}

/* Send one dump request (with DEV_INDEX unless dev is UINT32_MAX) and parse replies until done. */
static int dump(struct nl_sock *s, uint16_t cmd, uint32_t dev, struct nl_handlers *h)
{
	char req[MNL_NLMSG_HDRLEN + MNL_ATTR_HDRLEN + 8] __attribute__((aligned(8)));
	struct nl_handlers drain = { 0 };
	struct nlmsghdr *nlh;
	ssize_t n;
	int ret;

	s->ext_ack[0] = '\0';
	nlh = mnl_nlmsg_put_header(req);
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++s->seq;
	if (dev != UINT32_MAX)
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, dev);
	if (mnl_socket_sendto(s->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	h->seq = s->seq;
	h->portid = s->portid;
	do {
		n = mnl_socket_recvfrom(s->nl, s->buf, sizeof(s->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (s->capture)
			capture(s, cmd, n);
		ret = nl_parse(s->buf, n, h);
	} while (!ret);
	if (ret < 0 && h->ext_ack[0])
		snprintf(s->ext_ack, sizeof(s->ext_ack), "%s", h->ext_ack);
	if (ret < 0 && !h->done) {
		/* We stopped in the middle of a dump: read the rest so the next request starts clean. */
		drain.seq = s->seq;
		drain.portid = s->portid;
		for (;;) {
			n = mnl_socket_recvfrom(s->nl, s->buf, sizeof(s->buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || nl_parse(s->buf, n, &drain))
				break;
		}
	}
	return ret < 0 ? ret : 0;
}

int nl_dev_dump(struct nl_sock *s, struct nl_handlers *h)
{
	return dump(s, RDMA_NLDEV_CMD_GET, UINT32_MAX, h);
}

int nl_port_dump(struct nl_sock *s, uint32_t dev_index, struct nl_handlers *h)
{
	return dump(s, RDMA_NLDEV_CMD_PORT_GET, dev_index, h);
}

int nl_summary_dump(struct nl_sock *s, struct nl_handlers *h)
{
	return dump(s, RDMA_NLDEV_CMD_RES_GET, UINT32_MAX, h);
}

/*
 * QPs by number: one request each (RES_QP_GET without NLM_F_DUMP: the kernel looks the number up), NL_GET_BATCH
 * to a write, their replies read before the next batch (the socket's receive buffer holds a batch's replies;
 * one that did not fit fails the read with ENOBUFS, never silently). The kernel answers only on the QP's port:
 * a QP it answers EAGAIN for is asked again on the next port; one no port answers for was never given a port
 * (only a move to INIT gives one), so it is still in RESET (see nl.h).
 */
#define NL_GET_BATCH 32

struct get_ctx {
	struct nl_handlers *h;
	const uint32_t *qpns;
	unsigned char *again;	/* per QP of the batch: the kernel answered EAGAIN (another port) */
	uint32_t dev;
	uint32_t port;
	int err;		/* the first error other than EAGAIN */
};

static int get_batch(struct nl_sock *s, struct get_ctx *c, const size_t *idx, size_t n)
{
	char req[NL_GET_BATCH * NLMSG_ALIGN(MNL_NLMSG_HDRLEN + 3 * (MNL_ATTR_HDRLEN + 4))] __attribute__((aligned(8)));
	uint32_t first = s->seq + 1, k;
	size_t len = 0, got = 0;
	ssize_t rn;
	int ret;

	for (k = 0; k < n; k++) {
		struct nlmsghdr *nlh = mnl_nlmsg_put_header(req + len);

		nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET);
		nlh->nlmsg_flags = NLM_F_REQUEST;
		nlh->nlmsg_seq = ++s->seq;
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, c->dev);
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, c->port);
		mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_RES_LQPN, c->qpns[idx[k]]);
		len += NLMSG_ALIGN(nlh->nlmsg_len);
	}
	if (mnl_socket_sendto(s->nl, req, len) < 0)
		return -errno;
	while (got < n) {
		const struct nlmsghdr *m;
		int left;

		rn = mnl_socket_recvfrom(s->nl, s->buf, sizeof(s->buf));
		if (rn < 0 && errno == EINTR)
			continue;
		if (rn < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (s->capture)
			capture(s, RDMA_NLDEV_CMD_RES_QP_GET, rn);
		left = (int)rn;
		for (m = (const struct nlmsghdr *)s->buf; mnl_nlmsg_ok(m, left); m = mnl_nlmsg_next(m, &left)) {
			k = m->nlmsg_seq - first; /* modulo 2^32: the numbers wrap in a long-running exporter */
			if (m->nlmsg_pid != s->portid || k >= n)
				return -EPROTO;
			got++;
			c->h->seq = m->nlmsg_seq;
			c->h->portid = s->portid;
			ret = nl_parse(m, m->nlmsg_len, c->h);
			if (ret == -EAGAIN)
				c->again[k] = 1;
			else if (ret < 0 && !c->err)
				c->err = ret;
		}
		if (left)
			return -EPROTO;
	}
	return 0;
}

static int qp_get_all(struct nl_sock *s, uint32_t dev_index, uint32_t nports, const uint32_t *qpns, size_t n,
		      struct nl_handlers *h)
{
	unsigned char again[NL_GET_BATCH];
	struct get_ctx c = { .h = h, .qpns = qpns, .again = again, .dev = dev_index };
	size_t idx[NL_GET_BATCH], next[NL_GET_BATCH], i, k, nk, nn;
	struct nl_res r;
	int ret;

	for (i = 0; i < n; i += nk) {
		nk = n - i < NL_GET_BATCH ? n - i : NL_GET_BATCH;
		for (k = 0; k < nk; k++)
			idx[k] = i + k;
		nn = nk;
		for (c.port = 1; nn && c.port <= nports; c.port++) {
			memset(again, 0, sizeof(again));
			ret = get_batch(s, &c, idx, nn);
			if (!ret && c.err)
				ret = c.err;
			if (ret) {
				if (h->ext_ack[0])
					snprintf(s->ext_ack, sizeof(s->ext_ack), "%s", h->ext_ack);
				return ret;
			}
			for (k = 0, ret = 0; k < nn; k++)
				if (again[k])
					next[ret++] = idx[k];
			nn = (size_t)ret;
			memcpy(idx, next, nn * sizeof(*idx));
		}
		/* no port answers for these: never given one, so never moved out of RESET */
		for (k = 0; k < nn; k++) {
			memset(&r, 0, sizeof(r));
			r.type = NL_RES_QP;
			r.dev_index = dev_index;
			r.id = qpns[idx[k]];
			r.state = 0; /* IB_QPS_RESET */
			r.has = NL_HAS_STATE | NL_NO_PORT;
			ret = h->res(&r, h->arg);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int nl_qp_get(struct nl_sock *s, uint32_t dev_index, uint32_t nports, const uint32_t *qpns, size_t n,
	      struct nl_handlers *h)
{
	struct timeval tv = { .tv_sec = 10 }, none = { 0 };
	int fd = mnl_socket_get_fd(s->nl), rcv = 1 << 20, ret;

	if (!h->res || !nports || nports > 255)
		return -EINVAL;
	/* room for a batch's replies (root may go past rmem_max); a lost reply times out instead of hanging */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	s->ext_ack[0] = '\0';
	ret = qp_get_all(s, dev_index, nports, qpns, n, h);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	if (ret) {
		/*
		 * The kernel answers a write's requests before the write returns: whatever of the failed batch is
		 * left is queued now. Read it away, so that the next request (the dump top falls back to) starts
		 * clean.
		 */
		ssize_t rn;
		int i;

		for (i = 0; i < 4 * NL_GET_BATCH; i++) {
			rn = recv(fd, s->buf, sizeof(s->buf), MSG_DONTWAIT);
			if (rn <= 0 && !(rn < 0 && (errno == EINTR || errno == ENOBUFS)))
				break;
		}
	}
	return ret;
}

int nl_res_dump(struct nl_sock *s, uint32_t dev_index, enum nl_res_type t, struct nl_handlers *h)
{
	int ret;

	if ((unsigned)t >= NL_RES_NTYPES)
		return -EINVAL;
	ret = dump(s, res_desc[t].cmd, dev_index, h);
	/* A kernel that predates a command rejects it as an invalid message type. */
	if (ret == -EINVAL && t == NL_RES_SRQ)
		ret = -EOPNOTSUPP;
	return ret;
}
