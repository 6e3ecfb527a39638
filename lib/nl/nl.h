/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* RDMA netlink (NLDEV) through libmnl: devices, ports, resource summaries and resource dumps. */
#ifndef RDMACTL_NL_H
#define RDMACTL_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/kinds.h"

/* Resource kinds RDMA netlink dumps: the rows of lib/core/kinds.h marked nl, in the order top shows them. */
enum nl_res_type {
#define X(name, NAME, led, nl, ...) KINDS_IF(nl, NL_RES_##NAME, )
	KINDS(X)
#undef X
	NL_RES_NTYPES,
};

/*
 * Across layers (lib/nl/nl.c): the ledger kind (enum ledger_kind, the value of enum kind) of a netlink kind,
 * and the netlink kind of a restrack type; -1 where the other layer has no such kind.
 */
extern const signed char kind_ledger_of_nl[NL_RES_NTYPES];
extern const signed char kind_nl_of_restrack[RESTRACK_NTYPES];

/* The kind's name in lib/core/kinds.h (also the name RES_GET summaries use); NULL when out of range. */
const char *nl_res_name(enum nl_res_type t);
/* Inverse of nl_res_name; -1 when unknown. */
int nl_res_from_name(const char *name);

#define NL_NAME_LEN 64

struct nl_dev {
	uint32_t index;
	char name[NL_NAME_LEN];
	uint32_t nports;	/* RDMA_NLDEV_ATTR_PORT_INDEX in a device reply: number of ports */
	uint64_t node_guid;
	char fw[NL_NAME_LEN];
	uint8_t node_type;
	char protocol[16];	/* "roce", "ib", "iw" (newer kernels) */
};

struct nl_port {
	uint32_t dev_index;
	char dev_name[NL_NAME_LEN];
	uint32_t port;
	uint8_t state;		/* enum ib_port_state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE */
	uint8_t phys_state;
	uint32_t netdev_index;
	char netdev[NL_NAME_LEN];
};

struct nl_summary {
	uint32_t dev_index;
	char dev_name[NL_NAME_LEN];
	uint64_t curr[NL_RES_NTYPES];
	uint32_t present;	/* bit t set when the kernel reported kind t (it tracks that kind) */
};

/* Fields of struct nl_res that a reply carried. */
enum {
	NL_HAS_PID = 1u << 0,
	NL_HAS_KERN = 1u << 1,
	NL_HAS_MRLEN = 1u << 2,
	NL_HAS_QP_TYPE = 1u << 3,
	NL_HAS_STATE = 1u << 4,
	NL_HAS_PORT = 1u << 5,
	NL_HAS_PDN = 1u << 6,
	/* nl_qp_get: no port answers for the QP (never given a port); state RESET is inferred, not reported */
	NL_NO_PORT = 1u << 7,
	NL_HAS_CTXN = 1u << 8,
};

/* One restrack object. Owner: pid (the creating *thread*'s id) or kern_name, or neither (dying task). */
struct nl_res {
	enum nl_res_type type;
	uint32_t dev_index;
	const char *dev_name;	/* valid during the callback only */
	uint32_t id;		/* lqpn, cqn, mrn, pdn, ctxn, srqn or cm_idn */
	uint32_t pid;
	const char *kern_name;	/* valid during the callback only; NULL for user objects */
	uint64_t mrlen;
	uint8_t qp_type;	/* RES_TYPE: QP type (QP, CM_ID) or SRQ type */
	uint8_t state;		/* RES_STATE: QP or CM state */
	uint32_t port;
	uint32_t pdn;		/* the PD of a user QP, MR, SRQ or MW */
	uint32_t ctxn;		/* the context of a user PD or CQ */
	uint32_t has;		/* NL_HAS_* */
};

/* Callbacks of nl_parse(); each returns 0 to go on or -errno to stop the parse with that error. */
struct nl_handlers {
	int (*dev)(const struct nl_dev *d, void *arg);
	int (*port)(const struct nl_port *p, void *arg);
	int (*summary)(const struct nl_summary *s, void *arg);
	int (*res)(const struct nl_res *r, void *arg);
	void *arg;
	/* Filled with the kernel's extended-ack message when a reply is an error carrying one. */
	char ext_ack[256];
	/* Request sequence number and port id to match (0: accept any, as for a fuzzer or a capture). */
	unsigned int seq;
	unsigned int portid;
	/* Set by nl_parse when the reply stream ended (NLMSG_DONE or NLMSG_ERROR seen). */
	bool done;
};

/*
 * Parse one received buffer (one or more netlink messages of the NLDEV family, as one recv returns
 * them) and call the handler matching each message type; a NULL handler skips those messages.
 * Returns 0 when more messages are expected, 1 when the dump is complete (NLMSG_DONE or a plain ack),
 * -errno for a kernel error (with ext_ack filled when the kernel said why), -EPROTO for a malformed,
 * truncated or incomplete reply (attributes are validated against a policy table, unknown attributes
 * are skipped). Never reads outside buf[0..len).
 */
int nl_parse(const void *buf, size_t len, struct nl_handlers *h);

/* One netlink socket for the whole invocation. */
struct nl_sock;

int nl_open(struct nl_sock **out);
void nl_close(struct nl_sock *s);
/* The kernel's extended-ack message for the last failed request, or "" (never NULL). */
const char *nl_ext_ack(const struct nl_sock *s);

/* Dumps; each calls the matching handler of h (h->seq/portid/ext_ack are managed here). */
int nl_dev_dump(struct nl_sock *s, struct nl_handlers *h);
int nl_port_dump(struct nl_sock *s, uint32_t dev_index, struct nl_handlers *h);
int nl_summary_dump(struct nl_sock *s, struct nl_handlers *h);
/* Objects of one kind on one device. -EOPNOTSUPP when the kernel does not track/dump that kind. */
int nl_res_dump(struct nl_sock *s, uint32_t dev_index, enum nl_res_type t, struct nl_handlers *h);
/*
 * The QPs qpns[0..n) of device dev_index (ports 1..nports), asked one by one by number: h->res is called once
 * for each QP that exists. O(n), where a dump walks the device's QPs again for each message it sends (O(QPs^2)).
 * The kernel answers by number only for a QP on a port: a QP never given one (still in RESET, as only the
 * move to INIT gives a port) is reported with state RESET and NL_NO_PORT (the one QP this misreports: moved
 * from RESET straight to ERR, which a dump shows as ERR). A number that is no QP fails with -ENOENT.
 */
int nl_qp_get(struct nl_sock *s, uint32_t dev_index, uint32_t nports, const uint32_t *qpns, size_t n,
	      struct nl_handlers *h);

/* Names for the numbers in replies ("RTS", "ACTIVE"); "UNKNOWN" past the table, never NULL. */
const char *nl_qp_state_name(uint8_t s);
const char *nl_port_state_name(uint8_t s);

/* Copy a string attribute (NULL: none) into dst of len bytes: cut to fit and to the attribute's payload. */
struct nlattr;
void nl_attr_str(char *dst, size_t len, const struct nlattr *a);

#endif
