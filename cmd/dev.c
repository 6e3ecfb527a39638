// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdmactl dev: the node's RDMA devices as containers and schedulers see them (maxima from ibv_query_device,
 * ports, netdev, RoCE v2 IPv4 GID, PCI address, NUMA node, firmware) and the node policy for containers:
 * what a Kubernetes DRA driver publishes, from the one place that knows.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "core/out.h"
#include "core/util.h"
#include "engines/policy.h"
#include "pingpong/gid.h"
#include "rdmactl.h"

static struct {
	const char *policy;
	const char *args[2];
	unsigned int nargs;
} dopt;

static const struct argp_option options[] = {
	{ "policy", 'P', "FILE", 0, "the node policy shown (default $" POLICY_ENV ", else " POLICY_PATH ")", 1 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'P':
		if (!*arg)
			argp_error(state, "--policy: empty path");
		dopt.policy = arg;
		break;
	case ARGP_KEY_ARG:
		if (dopt.nargs >= 2)
			argp_error(state, "unexpected argument '%s'", arg);
		dopt.args[dopt.nargs++] = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, "[show [IBDEV]]",
	"The node's RDMA devices: per device its firmware, PCI address, NUMA node, uverbs device node, ports (link "
	"layer, state, netdev, RoCE v2 IPv4 GID) and the maxima ibv_query_device reports, by the kinds of "
	"'rdmactl quota' (qp, cq, mr, pd, srq, ah, mw; mr_bytes is the largest single MR; wr the deepest QP); "
	"then the node policy for containers (" POLICY_PATH "): its default, ceiling and budgets. With -j one JSON "
	"document, which the Kubernetes DRA driver (rdmactl-dra) reads; its \"version\" is rdmactl's.\v"
	"Examples:\n"
	"  rdmactl dev\n"
	"  rdmactl dev show rxe0 -j -p\n",
	children, NULL, NULL,
};

/* Per kind, the device attribute that bounds it (absent: the device reports no maximum for that kind). */
static void print_max(const struct ibv_device_attr *a)
{
	static const struct {
		int kind;
		const char *fmt;
	} rows[] = {
		{ LEDGER_PD, " pd %" PRIu64 },	 { LEDGER_CQ, " cq %" PRIu64 },	  { LEDGER_QP, " qp %" PRIu64 },
		{ LEDGER_SRQ, " srq %" PRIu64 }, { LEDGER_MR, " mr %" PRIu64 },	  { LEDGER_MR_BYTES, " mr_bytes %" PRIu64 },
		{ LEDGER_AH, " ah %" PRIu64 },	 { LEDGER_MW, " mw %" PRIu64 },	  { LEDGER_WR, " wr %" PRIu64 },
	};
	uint64_t v;
	size_t i;

	out_open_object("max");
	print_text("  max");
	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		switch (rows[i].kind) {
		case LEDGER_PD: v = a->max_pd; break;
		case LEDGER_CQ: v = a->max_cq; break;
		case LEDGER_QP: v = a->max_qp; break;
		case LEDGER_SRQ: v = a->max_srq; break;
		case LEDGER_MR: v = a->max_mr; break;
		case LEDGER_MR_BYTES: v = a->max_mr_size; break;
		case LEDGER_AH: v = a->max_ah; break;
		case LEDGER_MW: v = a->max_mw; break;
		default: v = a->max_qp_wr; break;
		}
		print_uint(PRINT_ANY, ledger_kind_name(rows[i].kind), rows[i].fmt, v);
	}
	out_close_object();
	/* what bounds a single object, beside the counts */
	out_open_object("max_per_object");
	print_uint(PRINT_ANY, "cqe", " cqe %" PRIu64, a->max_cqe);
	print_uint(PRINT_ANY, "sge", " sge %" PRIu64, a->max_sge);
	print_uint(PRINT_ANY, "srq_wr", " srq_wr %" PRIu64, a->max_srq_wr);
	out_close_object();
	print_nl();
}

/* The PCI address of the device's parent ("0000:03:00.0"), or "" (a software device: rxe, siw). */
static void pci_address(const char *ibdev, char *buf, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX], sub[PATH_MAX];
	const char *base;
	ssize_t n;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/subsystem", gid_sysfs_root, ibdev);
	n = readlink(path, sub, sizeof(sub) - 1);
	if (n <= 0)
		return;
	sub[n] = '\0';
	base = strrchr(sub, '/');
	if (strcmp(base ? base + 1 : sub, "pci"))
		return;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", gid_sysfs_root, ibdev);
	if (!realpath(path, real))
		return;
	base = strrchr(real, '/');
	copy_str(buf, base ? base + 1 : real, len);
}

/* The device's NUMA node, or -1 (none, or not a PCI device). */
static int numa_node(const char *ibdev)
{
	char path[PATH_MAX], buf[32];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/numa_node", gid_sysfs_root, ibdev);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = atoi(buf);
	fclose(f);
	return v < 0 ? -1 : v;
}

static void print_port(const char *ibdev, int port, const struct gid_table *t)
{
	char ll[32] = "", state[32] = "", ip[64], gid[64];
	const struct gid_entry *v4 = NULL, *any = NULL;
	size_t i;

	gid_port_attr(ibdev, port, "link_layer", ll, sizeof(ll));
	gid_port_attr(ibdev, port, "state", state, sizeof(state));
	for (i = 0; i < t->n; i++) {
		const struct gid_entry *e = &t->v[i];

		if (strcmp(e->dev, ibdev) || e->port != port)
			continue;
		if (!any && e->ndev[0])
			any = e;
		if (!v4 && e->type == GID_TYPE_ROCE_V2 && gid_is_v4mapped(e->raw))
			v4 = e;
	}
	out_open_object(NULL);
	print_int(PRINT_ANY, "port", "  port %" PRId64, port);
	print_string(PRINT_ANY, "link_layer", " %s", ll[0] ? ll : NULL);
	/* sysfs says "4: ACTIVE" */
	print_string(PRINT_ANY, "state", " %s", state[0] ? (strchr(state, ' ') ? strchr(state, ' ') + 1 : state) : NULL);
	if (v4)
		any = v4;
	print_string(PRINT_ANY, "netdev", " netdev %s", any ? any->ndev : NULL);
	if (v4) {
		out_open_object("roce_v2_ipv4_gid");
		print_int(PRINT_ANY, "index", " gid %" PRId64, v4->index);
		print_string(PRINT_ANY, "gid", " %s", gid_str(v4->raw, gid, sizeof(gid)));
		print_string(PRINT_ANY, "ip", " (%s)", gid_ip_str(v4->raw, ip, sizeof(ip)));
		out_close_object();
	} else {
		print_null(PRINT_JSON, "roce_v2_ipv4_gid", NULL);
	}
	print_nl();
	out_close_object();
}

static int print_dev(struct ibv_device *dev, const struct gid_table *t)
{
	const char *name = ibv_get_device_name(dev);
	char pci[64], node[PATH_MAX];
	struct ibv_device_attr a;
	struct ibv_context *ctx;
	int p, numa, ret;

	ctx = ibv_open_device(dev);
	if (!ctx) {
		ret = -errno;
		pr_err("%s: cannot open the device: %s", name, strerror(-ret));
		return ret;
	}
	if (ibv_query_device(ctx, &a)) {
		ret = errno ? -errno : -EIO;
		pr_err("%s: ibv_query_device: %s", name, strerror(-ret));
		ibv_close_device(ctx);
		return ret;
	}
	pci_address(name, pci, sizeof(pci));
	numa = numa_node(name);
	snprintf(node, sizeof(node), "/dev/infiniband/%s", dev->dev_name);
	out_open_object(NULL);
	print_string(PRINT_ANY, "ibdev", "%s", name);
	print_string(PRINT_ANY, "uverbs", " %s", node);
	print_string(PRINT_ANY, "node_type", " %s", ibv_node_type_str(dev->node_type));
	print_string(PRINT_ANY, "firmware", " fw %s", a.fw_ver[0] ? a.fw_ver : NULL);
	print_string(PRINT_ANY, "pci_address", " pci %s", pci[0] ? pci : NULL);
	if (numa >= 0)
		print_int(PRINT_ANY, "numa_node", " numa %" PRId64, numa);
	else
		print_null(PRINT_JSON, "numa_node", NULL);
	print_uint(PRINT_JSON, "node_guid", NULL, be64toh(ibv_get_device_guid(dev)));
	print_uint(PRINT_JSON, "vendor_id", NULL, a.vendor_id);
	print_uint(PRINT_JSON, "vendor_part_id", NULL, a.vendor_part_id);
	print_nl();
	out_open_array("ports");
	for (p = 1; p <= a.phys_port_cnt; p++)
		print_port(name, p, t);
	out_close_array();
	print_max(&a);
	out_close_object();
	ibv_close_device(ctx);
	return 0;
}

static void print_limits(const char *key, const struct policy_limits *l)
{
	char v[32];
	int k;

	out_open_object(key);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (!policy_has(l, k))
			continue;
		if (l->v[k] == LEDGER_UNLIMITED) {
			snprintf(v, sizeof(v), " %s=%%s", ledger_kind_name(k));
			print_string(PRINT_ANY, ledger_kind_name(k), v, "unlimited");
			continue;
		}
		snprintf(v, sizeof(v), " %s=%%" PRIu64, ledger_kind_name(k));
		print_uint(PRINT_ANY, ledger_kind_name(k), v, l->v[k]);
	}
	out_close_object();
}

/* The node policy (NULL: the default path), or a message and -errno; no file where none was named: empty. */
static int load_policy(struct policy *pol, bool *found)
{
	char err[768];
	int ret;

	ret = policy_load(dopt.policy, pol, err, sizeof(err));
	*found = !ret;
	if (ret == -ENOENT && !dopt.policy && !getenv(POLICY_ENV)) {
		memset(pol, 0, sizeof(*pol));
		return 0;
	}
	if (ret)
		pr_err("cannot read the node policy: %s", err);
	return ret;
}

/* {"path", "found", "default", "ceiling", "budgets": [{"name", "limits"}]}; default and ceiling null if none. */
static void print_policy(const struct policy *pol, bool found)
{
	unsigned int i;

	out_open_object("policy");
	print_string(PRINT_ANY, "path", "policy %s", policy_path(dopt.policy));
	print_bool(PRINT_JSON, "found", NULL, found);
	if (!found)
		print_text(" (none: no default, no ceiling)");
	print_nl();
	if (pol->has_default) {
		print_text("  default");
		print_limits("default", &pol->dflt);
		print_nl();
	} else {
		print_null(PRINT_JSON, "default", NULL);
	}
	if (pol->ceiling.set) {
		print_text("  ceiling");
		print_limits("ceiling", &pol->ceiling);
		print_nl();
	} else {
		print_null(PRINT_JSON, "ceiling", NULL);
	}
	out_open_array("budgets");
	for (i = 0; i < pol->nbudgets; i++) {
		out_open_object(NULL);
		print_string(PRINT_ANY, "name", "  budget %s", pol->budget[i].name);
		print_limits("limits", &pol->budget[i].lim);
		print_nl();
		out_close_object();
	}
	out_close_array();
	out_close_object();
}

int cmd_dev(int argc, char **argv)
{
	static const char *const subs[] = { "show" };
	struct ibv_device **list;
	struct gid_table t = { 0 };
	const char *only = NULL;
	int i, n, ret = EXIT_OK, found = 0;
	bool owned = true, found_pol;
	static struct policy pol;

	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return EXIT_USAGE;
	if (dopt.nargs) {
		int sub = match_word(dopt.args[0], subs, 1);

		if (sub < 0)
			return word_error("command", dopt.args[0], subs, 1, sub);
		only = dopt.nargs > 1 ? dopt.args[1] : NULL;
	}
	if (load_policy(&pol, &found_pol))
		return EXIT_FAIL;
	list = ibv_get_device_list(&n);
	if (!list && errno == ENOSYS) {
		/* libibverbs without the uverbs class in sysfs (no ib_uverbs): a node without RDMA devices */
		static struct ibv_device *none[1];

		list = none, n = 0, owned = false;
	}
	if (!list) {
		pr_err("cannot list the RDMA devices: %s", strerror(errno));
		return EXIT_FAIL;
	}
	for (i = 0; i < n && only; i++)
		found += !strcmp(only, ibv_get_device_name(list[i]));
	if (only && !found) {
		pr_err("no RDMA device '%s' (rdmactl dev lists them)", only);
		if (owned)
			ibv_free_device_list(list);
		return EXIT_FAIL;
	}
	/* a port without GIDs (or a device gone meanwhile) only leaves the GID out */
	gid_table_read(NULL, 0, &t);
	out_open_object(NULL);
	print_string(PRINT_JSON, "version", NULL, RDMACTL_VERSION);
	out_open_array("devices");
	for (i = 0; i < n; i++) {
		if (only && strcmp(only, ibv_get_device_name(list[i])))
			continue;
		if (print_dev(list[i], &t))
			ret = EXIT_FAIL;
	}
	out_close_array();
	if (!n && !only)
		print_text("no RDMA devices\n");
	print_policy(&pol, found_pol);
	out_close_object();
	gid_table_free(&t);
	if (owned)
		ibv_free_device_list(list);
	return ret;
}
