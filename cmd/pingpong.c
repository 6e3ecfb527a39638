// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong: ibv_rc_pingpong-compatible RoCE check that picks the GID itself and explains failures. */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gid.h"
#include <json-c/json.h>

#include "out.h"
#include "pp.h"
#include "rdmactl.h"
#include "util.h"

enum { OPT_CHECK = 256, OPT_CM, OPT_TIMEOUT, OPT_ACCEPT_TIMEOUT };

static struct {
	const char *dev;
	int ib_port;
	int gidx;
	bool gid_set, port_set, ib_port_set, mtu_set, iters_set, events_set;
	unsigned int size, iters, rx_depth, mtu;
	int sl;
	uint16_t port;
	bool events, check, cm;
	int timeout_s, accept_timeout_s;
	const char *host;
} a = {
	.ib_port = 1, .gidx = -1, .size = 4096, .iters = 1000, .rx_depth = 500, .mtu = 1024, .port = 18515,
	.timeout_s = 5,
};

/* Device, port and GID to use, and why. */
struct choice {
	char dev[64];
	int port;
	int gidx; /* -1: no GRH (InfiniBand without -g) */
	struct gid_entry gid;
	char why[800];
	char note[512];
	int suggest; /* with -g: the GID the route wants instead, else -1 */
	char suggest_desc[160];
};

static const struct argp_option options[] = {
	{ "ib-dev", 'd', "DEV", 0, "RDMA device (default: the one that carries the route to the peer)", 0 },
	{ "ib-port", 'i', "PORT", 0, "Port of the device (default 1)", 0 },
	{ "gid-idx", 'g', "INDEX", 0, "GID index (default: chosen from the route, RoCE v2 first)", 0 },
	{ "size", 's', "SIZE", 0, "Message size (default 4096; K/M suffixes)", 0 },
	{ "iters", 'n', "N", 0, "Number of exchanges (default 1000)", 0 },
	{ "mtu", 'm', "MTU", 0, "Path MTU, 256..4096 (default 1024)", 0 },
	{ "rx-depth", 'r', "N", 0, "Receives to keep posted (default 500)", 0 },
	{ "sl", 'l', "SL", 0, "Service level (default 0)", 0 },
	{ "port", 'p', "TCP_PORT", 0, "TCP port of the exchange, rdma_cm port with --cm (default 18515)", 0 },
	{ "events", 'e', NULL, 0, "Sleep on completion events instead of polling", 0 },
	{ "timeout", OPT_TIMEOUT, "SECONDS", 0,
	  "Give up after this long without progress: TCP connect and exchange, completions (default 5)", 0 },
	{ "accept-timeout", OPT_ACCEPT_TIMEOUT, "SECONDS", 0,
	  "Server: give up when no client came within this long (default: wait forever)", 0 },
	{ "check", OPT_CHECK, NULL, 0,
	  "Diagnose without a peer: devices, ports, GID table, which GID for which address, warnings", 1 },
	{ "cm", OPT_CM, NULL, 0, "Connect through rdma_cm; RDMA-write a buffer, read it back and verify it", 1 },
	{ 0 },
};

static int num(struct argp_state *state, const char *what, const char *arg, uint64_t min, uint64_t max,
	       uint64_t *v)
{
	int ret = parse_u64(arg, min, max, v);

	if (ret)
		argp_error(state, "invalid %s '%s': %s (%llu..%llu)", what, arg,
			   ret == -ERANGE ? "out of range" : "not a number", (unsigned long long)min,
			   (unsigned long long)max);
	return ret;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	uint64_t v;

	switch (key) {
	case 'd':
		a.dev = arg;
		break;
	case 'i':
		if (!num(state, "port", arg, 1, 255, &v))
			a.ib_port = (int)v, a.ib_port_set = true;
		break;
	case 'g':
		if (!num(state, "GID index", arg, 0, 65535, &v))
			a.gidx = (int)v, a.gid_set = true;
		break;
	case 's':
		if (parse_size(arg, 1u << 30, &v) || !v)
			argp_error(state, "invalid size '%s' (1..1G)", arg);
		a.size = (unsigned int)v;
		break;
	case 'n':
		if (!num(state, "iteration count", arg, 1, 10000000, &v))
			a.iters = (unsigned int)v, a.iters_set = true;
		break;
	case 'm':
		if (parse_u64(arg, 0, 4096, &v) || pp_mtu_to_enum((unsigned int)v) < 0)
			argp_error(state, "invalid MTU '%s' (256, 512, 1024, 2048 or 4096)", arg);
		a.mtu = (unsigned int)v;
		a.mtu_set = true;
		break;
	case 'r':
		if (!num(state, "rx depth", arg, 1, 65536, &v))
			a.rx_depth = (unsigned int)v;
		break;
	case 'l':
		if (!num(state, "service level", arg, 0, 15, &v))
			a.sl = (int)v;
		break;
	case 'p':
		if (!num(state, "TCP port", arg, 1, 65535, &v))
			a.port = (uint16_t)v, a.port_set = true;
		break;
	case 'e':
		a.events = a.events_set = true;
		break;
	case OPT_TIMEOUT:
		if (!num(state, "timeout", arg, 1, 3600, &v))
			a.timeout_s = (int)v;
		break;
	case OPT_ACCEPT_TIMEOUT:
		if (!num(state, "accept timeout", arg, 0, 86400, &v))
			a.accept_timeout_s = (int)v;
		break;
	case OPT_CHECK:
		a.check = true;
		break;
	case OPT_CM:
		a.cm = true;
		break;
	case ARGP_KEY_ARG:
		if (a.host)
			argp_error(state, "extra argument '%s': only one HOST", arg);
		if (!*arg)
			argp_error(state, "empty HOST");
		a.host = arg;
		break;
	case ARGP_KEY_END:
		if (a.check && a.cm)
			argp_error(state, "--check and --cm do not go together");
		if (a.cm && (a.dev || a.gid_set || a.mtu_set || a.events || a.iters_set))
			argp_error(state, "--cm lets rdma_cm pick device and GID from the address: -d, -g, -m, -n and -e "
				   "do not apply");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, "[HOST]",
	"RC pingpong between two hosts, wire-compatible with rdma-core's ibv_rc_pingpong (either side can be "
	"either program). Without HOST it waits for a client; with HOST it connects to that server. Without -g "
	"it chooses the GID itself: the RoCE v2 GID of the address that reaches the peer, and says why.\v"
	"Examples:\n"
	"  rdmactl pingpong                  # server: waits for a client\n"
	"  rdmactl pingpong 192.0.2.1        # client: device and GID from the route\n"
	"  rdmactl pingpong -d rxe0 -g 1 -n 100 -j 192.0.2.1\n"
	"  rdmactl pingpong --check          # ports, GIDs, warnings; no peer\n"
	"  rdmactl pingpong --cm 192.0.2.1   # rdma_cm: write, read back, verify\n"
	"\n-p is the TCP port here, as in ibv_rc_pingpong; pretty JSON is --pretty.\n"
	"Exit status: 0 ok, 1 failure (the message names the cause and the fix), 2 usage error.",
	children, NULL, NULL,
};

static const char *state_str(int s);

/* --- choosing device, port and GID ---------------------------------------------------------------- */

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *p = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr :
						   (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	struct sockaddr_in in;

	/* An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d: print the IPv4 address. */
	if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
		memset(&in, 0, sizeof(in));
		memcpy(&in.sin_addr, (const uint8_t *)p + 12, 4);
		p = &in.sin_addr;
		sa = (const struct sockaddr *)&in;
		in.sin_family = AF_INET;
	}
	if (!inet_ntop(sa->sa_family, p, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* Turn ::ffff:a.b.c.d (dual-stack accept) into a plain IPv4 sockaddr so GIDs and netdevs match. */
static void unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in in = { .sin_family = AF_INET };

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
		return;
	memcpy(&in.sin_addr, &in6->sin6_addr.s6_addr[12], 4);
	in.sin_port = in6->sin6_port;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &in, sizeof(in));
}

static bool is_ib(const char *dev, int port)
{
	char ll[32];

	return !gid_port_attr(dev, port, "link_layer", ll, sizeof(ll)) && !strcmp(ll, "InfiniBand");
}

static int first_dev(char *dev, size_t len)
{
	char **names;
	int ret;

	ret = gid_dev_names(&names);
	if (ret)
		return ret;
	if (!names[0]) {
		gid_free_names(names);
		return -ENODEV;
	}
	snprintf(dev, len, "%s", names[0]);
	gid_free_names(names);
	return 0;
}

static void gid_desc(const struct gid_entry *e, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s, %s%s%s%s", gid_type_str(e->type), gid_ip_str(e->raw, ip, sizeof(ip)),
		 gid_is_link_local(e->raw) ? " link-local" : "", *e->ndev ? " on " : "", e->ndev);
}

/*
 * Pick device, port and GID. local is our address towards the peer (the route's source for a client,
 * the address the client reached for a server), NULL when unknown; whence says how it was found, with
 * "{}" where the address (and its netdev) goes.
 */
static int choose(const struct sockaddr *local, const char *whence, struct choice *ch)
{
	char ip[INET6_ADDRSTRLEN] = "", ndev[IF_NAMESIZE] = "", desc[160], where[256] = "";
	const char *mark = strstr(whence, "{}");
	int ret, pre = mark ? (int)(mark - whence) : (int)strlen(whence);
	struct gid_table t = { 0 };
	const struct gid_entry *e;
	struct gid_choice gc;

	memset(ch, 0, sizeof(*ch));
	ch->port = a.ib_port;
	ch->gidx = -1;
	ch->suggest = -1;
	ret = gid_table_read(a.dev, 0, &t);
	if (ret == -ENODEV) {
		pr_err("device %s not found (see 'rdmactl pingpong --check' for the devices there are)", a.dev);
		return ret;
	}
	if (ret) {
		pr_err("cannot read the GID tables: %s", strerror(-ret));
		return ret;
	}
	if (local) {
		addr_str(local, ip, sizeof(ip));
		gid_addr_netdev(local, ndev);
		snprintf(where, sizeof(where), "%.*s%s%s%s%s", pre, whence, ip, *ndev ? " on " : "", ndev,
			 mark ? mark + 2 : "");
	}
	/* The device: as given, else the one whose GID has our address, else the first. */
	if (a.dev) {
		snprintf(ch->dev, sizeof(ch->dev), "%s", a.dev);
	} else if (local && !gid_pick_for_addr(&t, NULL, a.ib_port, local, &gc)) {
		snprintf(ch->dev, sizeof(ch->dev), "%s", gc.gid.dev);
	} else {
		ret = first_dev(ch->dev, sizeof(ch->dev));
		if (ret) {
			pr_err("no RDMA device found (load the driver; for Soft-RoCE: rdma link add rxe0 type rxe "
			       "netdev eth0)");
			goto out;
		}
	}

	if (a.gid_set) {
		e = gid_find(&t, ch->dev, ch->port, a.gidx);
		if (!e) {
			ret = -ENOENT;
			if (!gid_pick_best(&t, ch->dev, ch->port, &gc)) {
				gid_desc(&gc.gid, desc, sizeof(desc));
				pr_err("GID index %d of %s port %d is empty (use -g %d (%s), or see 'rdmactl pingpong "
				       "--check')", a.gidx, ch->dev, ch->port, gc.gid.index, desc);
			} else {
				pr_err("GID index %d of %s port %d is empty and the port has no GID (is the port up? "
				       "see 'rdmactl pingpong --check')", a.gidx, ch->dev, ch->port);
			}
			goto out;
		}
		ch->gidx = a.gidx;
		ch->gid = *e;
		gid_desc(e, desc, sizeof(desc));
		snprintf(ch->why, sizeof(ch->why), "GID %d (%s) as given by -g", a.gidx, desc);
		/* Say so when the route would want another GID: the usual cause of an RTR failure. */
		if (local && !gid_pick_for_addr(&t, ch->dev, ch->port, local, &gc) && gc.gid.index != a.gidx) {
			gid_desc(&gc.gid, desc, sizeof(desc));
			ch->suggest = gc.gid.index;
			snprintf(ch->suggest_desc, sizeof(ch->suggest_desc), "%s", desc);
			snprintf(ch->note, sizeof(ch->note), "note: %s; its GID is -g %d (%s)", where, gc.gid.index,
				 desc);
		}
		goto out;
	}
	if (local && !gid_pick_for_addr(&t, ch->dev, ch->port, local, &gc)) {
		ch->gid = gc.gid;
		ch->gidx = gc.gid.index;
		snprintf(ch->why, sizeof(ch->why), "%s; GID %d is the %s GID of that address", where, ch->gidx,
			 gid_type_str(gc.gid.type));
		goto out;
	}
	if (is_ib(ch->dev, ch->port) && (!local || gid_pick_best(&t, ch->dev, ch->port, &gc))) {
		snprintf(ch->why, sizeof(ch->why), "InfiniBand port: LID routing, no GRH (as ibv_rc_pingpong "
			 "without -g)");
		goto out;
	}
	if (!gid_pick_best(&t, ch->dev, ch->port, &gc)) {
		ch->gid = gc.gid;
		ch->gidx = gc.gid.index;
		gid_desc(&gc.gid, desc, sizeof(desc));
		if (local)
			snprintf(ch->why, sizeof(ch->why), "%s, but no GID of %s port %d has that address; using its "
				 "best GID %d (%s)", where, ch->dev, ch->port, ch->gidx, desc);
		else
			snprintf(ch->why, sizeof(ch->why), "best GID of %s port %d: %s", ch->dev, ch->port, desc);
		if (local)
			snprintf(ch->note, sizeof(ch->note), "warning: %s port %d has no GID for %s: the peer may not "
				 "reach it (is %s the device on %s?)", ch->dev, ch->port, ip, ch->dev,
				 *ndev ? ndev : "that network");
		goto out;
	}
	ret = -ENOENT;
	pr_err("%s port %d has no usable GID (port down or no IP address on its netdev? see 'rdmactl pingpong "
	       "--check')", ch->dev, ch->port);
out:
	gid_table_free(&t);
	return ret;
}

static void print_choice(const struct choice *ch)
{
	if (ch->gidx >= 0)
		fprintf(stderr, "%s: using %s port %d GID %d: %s\n", util_prog, ch->dev, ch->port, ch->gidx, ch->why);
	else
		fprintf(stderr, "%s: using %s port %d: %s\n", util_prog, ch->dev, ch->port, ch->why);
	if (*ch->note)
		fprintf(stderr, "%s: %s\n", util_prog, ch->note);
}

/* --- diagnosis ------------------------------------------------------------------------------------- */

/*
 * What to tell the user about a failure involving the peer's GID: the GID we would use to reach it,
 * when it is not the one we use; whether the peer's address is reachable at all.
 */
static void gid_hint(const struct choice *ch, const struct pp_dest *rem, char *hint, size_t len)
{
	struct sockaddr_storage dst, src;
	struct gid_table t = { 0 };
	struct gid_choice gc;
	char rip[INET6_ADDRSTRLEN], lip[INET6_ADDRSTRLEN], desc[160];
	int ret;

	*hint = '\0';
	if (gid_is_zero(rem->gid)) {
		snprintf(hint, len, "the peer sent no GID: on RoCE both sides need one; run ibv_rc_pingpong with -g "
			 "(e.g. the RoCE v2 GID of its IP address), or rdmactl pingpong without -g");
		return;
	}
	gid_ip_str(rem->gid, rip, sizeof(rip));
	gid_to_sockaddr(rem->gid, &dst);
	if (gid_is_link_local(rem->gid) && !gid_is_link_local(ch->gid.raw)) {
		snprintf(hint, len, "the peer uses its link-local GID %s while we use %s: make the peer use its "
			 "RoCE v2 IPv4 GID (rdmactl pingpong --check shows the index)", rip,
			 gid_ip_str(ch->gid.raw, lip, sizeof(lip)));
		return;
	}
	ret = gid_route_src_addr((struct sockaddr *)&dst, &src);
	if (ret) {
		snprintf(hint, len, "the peer's GID %s is unreachable from here: %s (check the IP addressing and "
			 "routes of the RoCE netdev)", gid_str(rem->gid, lip, sizeof(lip)), strerror(-ret));
		return;
	}
	if (gid_table_read(ch->dev, ch->port, &t))
		return;
	if (!gid_pick_for_addr(&t, ch->dev, ch->port, (struct sockaddr *)&src, &gc)) {
		if (gc.gid.index != ch->gidx) {
			gid_desc(&gc.gid, desc, sizeof(desc));
			snprintf(hint, len, "our GID %d is %s%s but the peer's is %s: use -g %d (%s)", ch->gidx,
				 ch->gidx >= 0 ? gid_type_str(ch->gid.type) : "none",
				 gid_is_link_local(ch->gid.raw) ? " link-local" : "", rip, gc.gid.index, desc);
		}
	} else {
		addr_str((struct sockaddr *)&src, lip, sizeof(lip));
		snprintf(hint, len, "the route to the peer's GID %s leaves from %s, which no GID of %s port %d has "
			 "(wrong device? see 'rdmactl pingpong --check')", rip, lip, ch->dev, ch->port);
	}
	gid_table_free(&t);
}

static int report_fail(struct pp_rc *rc, const struct choice *ch, const struct pp_dest *rem, int ret,
		       const char *err, bool client)
{
	char hint[600] = "", rip[INET6_ADDRSTRLEN], rgid[INET6_ADDRSTRLEN];
	int ll, mtu, state;

	pp_rc_port(rc, &ll, &mtu, &state);
	switch (pp_rc_fail(rc)) {
	case PP_FAIL_RTR:
	case PP_FAIL_RTS:
		if (pp_mtu_from_enum(mtu) < a.mtu)
			snprintf(hint, sizeof(hint), "-m %u is larger than the port's active MTU %u: use -m %u", a.mtu,
				 pp_mtu_from_enum(mtu), pp_mtu_from_enum(mtu));
		else if (ll == IBV_LINK_LAYER_ETHERNET)
			gid_hint(ch, rem, hint, sizeof(hint));
		if (!*hint && state != IBV_PORT_ACTIVE)
			snprintf(hint, sizeof(hint), "port %d of %s is not active", ch->port, ch->dev);
		/* The kernel resolves the peer's MAC address at RTR: no neighbour answer ends here. */
		if (!*hint && (ret == -ETIMEDOUT || ret == -EHOSTUNREACH || ret == -ENETUNREACH || ret == -ENODATA))
			snprintf(hint, sizeof(hint), "the peer's GID %s is unreachable: nothing answers for %s on the "
				 "network (peer down, or not at that address?)", gid_str(rem->gid, rgid, sizeof(rgid)),
				 gid_ip_str(rem->gid, rip, sizeof(rip)));
		break;
	case PP_FAIL_STALL:
	case PP_FAIL_WC:
		/* Some completion errors say exactly what is wrong, whatever the GIDs. */
		if (pp_rc_fail(rc) == PP_FAIL_WC) {
			switch (pp_rc_wc_status(rc)) {
			case IBV_WC_LOC_LEN_ERR:
			case IBV_WC_REM_INV_REQ_ERR:
				snprintf(hint, sizeof(hint), "the peer's messages and ours differ in size: use the same -s "
					 "on both sides (ours is %u)", a.size);
				break;
			case IBV_WC_REM_OP_ERR:
				/* What rxe reports for a message larger than the peer's receive buffer. */
				snprintf(hint, sizeof(hint), "the peer's QP failed on our message: a different -s on the "
					 "two sides? (ours is %u)", a.size);
				break;
			case IBV_WC_LOC_QP_OP_ERR:
				/* And what its receiver reports for that message. */
				if (pp_rc_wc_recv(rc))
					snprintf(hint, sizeof(hint), "a message did not fit our receive buffer: a different "
						 "-s on the two sides? (ours is %u)", a.size);
				break;
			case IBV_WC_RETRY_EXC_ERR:
				gid_hint(ch, rem, hint, sizeof(hint));
				if (!*hint)
					snprintf(hint, sizeof(hint), "the peer does not acknowledge: it is gone, or its "
						 "address is unreachable");
				break;
			case IBV_WC_RNR_RETRY_EXC_ERR:
				snprintf(hint, sizeof(hint), "the peer posted no receive buffers: it is stuck or not a "
					 "pingpong");
				break;
			default:
				break;
			}
		}
		if (!*hint && ll == IBV_LINK_LAYER_ETHERNET)
			gid_hint(ch, rem, hint, sizeof(hint));
		if (!*hint && pp_rc_done_iters(rc) == 0 && pp_rc_fail(rc) == PP_FAIL_STALL)
			snprintf(hint, sizeof(hint), "nothing arrived from the peer: its QP failed or it is gone (see its "
				 "output)%s", client ? "" : "; a client on a link-local or RoCE v1 GID looks like this too");
		if (!*hint)
			snprintf(hint, sizeof(hint), "the peer stopped answering: killed, or the link went down");
		break;
	default:
		break;
	}
	if (*hint)
		pr_err("%s (%s)", err, hint);
	else
		pr_err("%s", err);
	return EXIT_FAIL;
}

static void conn_error(int ret, const char *host)
{
	const char *hint;

	switch (ret) {
	case -ECONNREFUSED:
		hint = "nothing listens there: start 'rdmactl pingpong' or 'ibv_rc_pingpong' on that host first, "
		       "with the same -p";
		break;
	case -ETIMEDOUT:
		hint = "the host does not answer: down, or a firewall drops the port";
		break;
	case -ENOENT:
		hint = "the name does not resolve";
		break;
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		hint = "no route to that address";
		break;
	default:
		hint = "check the address and -p";
	}
	pr_err("cannot connect to %s TCP port %u: %s (%s)", host, a.port,
	       ret == -ENOENT ? "unknown host" : strerror(-ret), hint);
}

/* A double printed with a fixed number of decimals (no 1021.5297999999999 in the JSON). */
static struct json_object *jdouble(double v, int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

/* --- output ---------------------------------------------------------------------------------------- */

static void put_dest(struct json_object *o, const char *key, const struct pp_dest *d)
{
	struct json_object *j = json_object_new_object();
	char gid[INET6_ADDRSTRLEN];

	json_object_object_add(j, "lid", json_object_new_int((int)d->lid));
	json_object_object_add(j, "qpn", json_object_new_int((int)d->qpn));
	json_object_object_add(j, "psn", json_object_new_int((int)d->psn));
	json_object_object_add(j, "gid", json_object_new_string(gid_str(d->gid, gid, sizeof(gid))));
	json_object_object_add(o, key, j);
}

static struct json_object *choice_json(const struct choice *ch)
{
	struct json_object *j = json_object_new_object();
	char ip[INET6_ADDRSTRLEN];

	json_object_object_add(j, "device", json_object_new_string(ch->dev));
	json_object_object_add(j, "port", json_object_new_int(ch->port));
	json_object_object_add(j, "gid_index", json_object_new_int(ch->gidx));
	if (ch->gidx >= 0) {
		json_object_object_add(j, "gid", json_object_new_string(gid_str(ch->gid.raw, ip, sizeof(ip))));
		json_object_object_add(j, "gid_type", json_object_new_string(gid_type_str(ch->gid.type)));
		json_object_object_add(j, "address", json_object_new_string(gid_ip_str(ch->gid.raw, ip, sizeof(ip))));
		json_object_object_add(j, "netdev", json_object_new_string(ch->gid.ndev));
	}
	json_object_object_add(j, "reason", json_object_new_string(ch->why));
	if (*ch->note)
		json_object_object_add(j, "note", json_object_new_string(ch->note));
	return j;
}

static void print_result(const struct choice *ch, const struct pp_dest *me, const struct pp_dest *rem,
			 const struct pp_result *r, bool client)
{
	char gid[INET6_ADDRSTRLEN];

	if (out_is_json()) {
		struct json_object *o = json_object_new_object(), *l = json_object_new_object();

		json_object_object_add(o, "mode", json_object_new_string("rc"));
		json_object_object_add(o, "role", json_object_new_string(client ? "client" : "server"));
		json_object_object_add(o, "choice", choice_json(ch));
		put_dest(o, "local", me);
		put_dest(o, "remote", rem);
		json_object_object_add(o, "size", json_object_new_int64(a.size));
		json_object_object_add(o, "mtu", json_object_new_int64(a.mtu));
		json_object_object_add(o, "iters", json_object_new_int64(r->iters));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)r->bytes));
		json_object_object_add(o, "seconds", jdouble(r->seconds, 6));
		json_object_object_add(o, "bandwidth_gbps", jdouble(r->gbps, 6));
		json_object_object_add(l, "min", jdouble(r->lat.min, 2));
		json_object_object_add(l, "avg", jdouble(r->lat.avg, 2));
		json_object_object_add(l, "p50", jdouble(r->lat.p50, 2));
		json_object_object_add(l, "p99", jdouble(r->lat.p99, 2));
		json_object_object_add(l, "p99_9", jdouble(r->lat.p999, 2));
		json_object_object_add(l, "max", jdouble(r->lat.max, 2));
		json_object_object_add(o, "latency_us", l);
		if (a.events)
			json_object_object_add(o, "cq_events", json_object_new_int64((int64_t)r->cq_events));
		out_json(o);
		return;
	}
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", me->lid, me->qpn, me->psn,
	       gid_str(me->gid, gid, sizeof(gid)));
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", rem->lid, rem->qpn, rem->psn,
	       gid_str(rem->gid, gid, sizeof(gid)));
	printf("%llu bytes in %.2f seconds = %.3f Gb/s\n", (unsigned long long)r->bytes, r->seconds, r->gbps);
	printf("%u iters in %.2f seconds = %.2f usec/iter\n", r->iters, r->seconds,
	       r->iters ? r->seconds * 1e6 / r->iters : 0);
	printf("round trip (usec): min %.2f avg %.2f p50 %.2f p99 %.2f p99.9 %.2f max %.2f\n", r->lat.min,
	       r->lat.avg, r->lat.p50, r->lat.p99, r->lat.p999, r->lat.max);
	if (a.events)
		printf("%lu completion events\n", r->cq_events);
	fflush(stdout);
}

/* --- RC pingpong ----------------------------------------------------------------------------------- */

static int open_rc(const struct choice *ch, struct pp_rc **rc)
{
	struct pp_rc_opts o = {
		.dev = ch->dev, .ib_port = ch->port, .gid_index = ch->gidx, .size = a.size, .iters = a.iters,
		.rx_depth = a.rx_depth, .mtu = pp_mtu_to_enum(a.mtu), .sl = a.sl, .events = a.events,
		.timeout_ms = a.timeout_s * 1000,
	};
	char err[512];
	int ret, ll, mtu, state;

	if (a.rx_depth < 2)
		o.rx_depth = 2;
	ret = pp_rc_open(rc, &o, err, sizeof(err));
	if (ret) {
		pr_err("%s on %s port %d: %s", "setting up the QP failed", ch->dev, ch->port, err);
		return ret;
	}
	/* A port that is not active fails every connection at RTR: say so before trying. */
	pp_rc_port(*rc, &ll, &mtu, &state);
	if (state != IBV_PORT_ACTIVE) {
		pr_err("port %d of %s is %s: nothing can connect through it (is %s up? see 'rdmactl pingpong "
		       "--check')", ch->port, ch->dev, state_str(state), *ch->gid.ndev ? ch->gid.ndev :
		       "its network device");
		pp_rc_close(*rc);
		*rc = NULL;
		return -ENETDOWN;
	}
	return 0;
}

/* Both sides, once connected: the ping-pong itself, then its result or the diagnosis. */
static int run_and_report(struct pp_rc *rc, const struct choice *ch, const struct pp_dest *me,
			  const struct pp_dest *rem, bool client)
{
	struct pp_result res;
	char err[512];
	int ret;

	ret = pp_rc_run(rc, client, &res, err, sizeof(err));
	if (ret) {
		report_fail(rc, ch, rem, ret, err, client);
		return EXIT_FAIL;
	}
	print_result(ch, me, rem, &res, client);
	return EXIT_OK;
}

static int rc_client(void)
{
	struct sockaddr_storage dst, src;
	char msg[PP_MSG_LEN], err[512], ip[INET6_ADDRSTRLEN], why[128];
	struct pp_dest me, rem;
	struct choice ch;
	struct pp_rc *rc = NULL;
	int ret, fd = -1, tmo = a.timeout_s * 1000, rcode = EXIT_FAIL;
	ssize_t n;

	ret = gid_route_src(a.host, &dst, &src);
	if (ret == -ENOENT) {
		pr_err("cannot resolve '%s' (unknown host)", a.host);
		return EXIT_FAIL;
	}
	if (ret)
		pr_debug("no route to %s: %s", a.host, strerror(-ret));
	snprintf(why, sizeof(why), "the route to %s leaves from {}",
		 ret ? a.host : addr_str((struct sockaddr *)&dst, ip, sizeof(ip)));
	if (choose(ret ? NULL : (struct sockaddr *)&src, why, &ch))
		return EXIT_FAIL;
	print_choice(&ch);
	if (open_rc(&ch, &rc))
		return EXIT_FAIL;
	pp_rc_local(rc, &me);

	ret = pp_tcp_connect(a.host, a.port, tmo, &fd);
	if (ret) {
		conn_error(ret, a.host);
		goto out;
	}
	pp_wire_format(&me, msg);
	ret = pp_write_full(fd, msg, sizeof(msg), tmo);
	if (ret) {
		pr_err("sending our address to the server failed: %s (the server went away?)", strerror(-ret));
		goto out;
	}
	n = pp_read_full(fd, msg, sizeof(msg), tmo);
	if (n == -ETIMEDOUT) {
		pr_err("the server did not answer within %d s (is it an ibv_rc_pingpong-compatible server? a busy "
		       "one? check -p)", a.timeout_s);
		goto out;
	}
	if (n < (ssize_t)sizeof(msg)) {
		/* ibv_rc_pingpong and rdmactl servers close without answering when their RTR fails. */
		if (ch.suggest >= 0)
			pr_err("the server closed the connection without answering: its QP could not connect to ours, "
			       "whose GID %d is %s%s %s (use -g %d (%s))", ch.gidx, gid_type_str(ch.gid.type),
			       gid_is_link_local(ch.gid.raw) ? " link-local" : "", gid_ip_str(ch.gid.raw, ip, sizeof(ip)),
			       ch.suggest, ch.suggest_desc);
		else
			pr_err("the server closed the connection without answering: its QP could not connect to ours "
			       "(its output says why; our GID %d is %s %s: the server must use a GID of the same type "
			       "and IP family)", ch.gidx, ch.gidx >= 0 ? gid_type_str(ch.gid.type) : "-",
			       ch.gidx >= 0 ? gid_ip_str(ch.gid.raw, ip, sizeof(ip)) : "none");
		goto out;
	}
	if (pp_wire_parse(msg, sizeof(msg), &rem)) {
		pr_err("the server's answer is not an ibv_rc_pingpong address message (another service on TCP port "
		       "%u? use -p)", a.port);
		goto out;
	}
	ret = pp_write_full(fd, "done", PP_DONE_LEN, tmo);
	close(fd);
	fd = -1;
	if (ret) {
		pr_err("sending 'done' failed: %s", strerror(-ret));
		goto out;
	}
	ret = pp_rc_connect(rc, &rem, err, sizeof(err));
	if (ret) {
		report_fail(rc, &ch, &rem, ret, err, true);
		goto out;
	}
	rcode = run_and_report(rc, &ch, &me, &rem, true);
out:
	if (fd >= 0)
		close(fd);
	pp_rc_close(rc);
	return rcode;
}

static int rc_server(void)
{
	struct sockaddr_storage local, peer;
	socklen_t len = sizeof(local);
	char msg[PP_MSG_LEN], err[512], ip[INET6_ADDRSTRLEN], pip[INET6_ADDRSTRLEN], why[160];
	struct pp_dest me, rem;
	struct choice ch;
	struct pp_rc *rc = NULL;
	int ret, lfd, fd = -1, tmo = a.timeout_s * 1000, rcode = EXIT_FAIL;
	ssize_t n;

	/* No device at all, or not the one asked for: say so now rather than after a client came. */
	ret = a.dev ? gid_dev_ports(a.dev, &lfd, 1) : first_dev(ip, sizeof(ip));
	if (ret < 0) {
		if (a.dev)
			pr_err("device %s not found (see 'rdmactl pingpong --check' for the devices there are)", a.dev);
		else
			pr_err("no RDMA device found (load the driver; for Soft-RoCE: rdma link add rxe0 type rxe "
			       "netdev eth0)");
		return EXIT_FAIL;
	}
	ret = pp_tcp_listen(a.port, &lfd);
	if (ret) {
		pr_err("cannot listen on TCP port %u: %s (%s)", a.port, strerror(-ret),
		       ret == -EADDRINUSE ? "another server runs there: use another -p" : "check -p");
		return EXIT_FAIL;
	}
	fprintf(stderr, "%s: waiting for a client on TCP port %u\n", util_prog, a.port);
	ret = pp_tcp_accept(lfd, a.accept_timeout_s ? a.accept_timeout_s * 1000 : -1, &fd);
	close(lfd);
	if (ret) {
		pr_err("no client within %d s (--accept-timeout)", a.accept_timeout_s);
		return EXIT_FAIL;
	}
	/* The address the client reached is the one whose GID the client can reach. */
	if (getsockname(fd, (struct sockaddr *)&local, &len)) {
		pr_err("getsockname: %s", strerror(errno));
		goto out;
	}
	len = sizeof(peer);
	if (getpeername(fd, (struct sockaddr *)&peer, &len))
		memset(&peer, 0, sizeof(peer));
	unmap(&local);
	unmap(&peer);
	snprintf(why, sizeof(why), "client %s connected to {}",
		 peer.ss_family ? addr_str((struct sockaddr *)&peer, pip, sizeof(pip)) : "?");
	if (choose((struct sockaddr *)&local, why, &ch))
		goto out;
	print_choice(&ch);
	if (open_rc(&ch, &rc))
		goto out;
	pp_rc_local(rc, &me);
	n = pp_read_full(fd, msg, sizeof(msg), tmo);
	if (n < 0) {
		pr_err("the client sent no address within %d s: %s", a.timeout_s, strerror((int)-n));
		goto out;
	}
	if (pp_wire_parse(msg, (size_t)n, &rem)) {
		pr_err("the client's message is not an ibv_rc_pingpong address (%zd bytes)", n);
		goto out;
	}
	ret = pp_rc_connect(rc, &rem, err, sizeof(err));
	if (ret) {
		/* Closing without answering is how ibv_rc_pingpong tells its client; it fails on the read. */
		report_fail(rc, &ch, &rem, ret, err, false);
		goto out;
	}
	pp_wire_format(&me, msg);
	ret = pp_write_full(fd, msg, sizeof(msg), tmo);
	if (!ret) {
		n = pp_read_full(fd, msg, PP_DONE_LEN, tmo);
		ret = n < 0 ? (int)n : n == 0 ? -ECONNRESET : 0;
	}
	close(fd);
	fd = -1;
	if (ret) {
		pr_err("the client did not complete the exchange: %s", strerror(-ret));
		goto out;
	}
	rcode = run_and_report(rc, &ch, &me, &rem, false);
out:
	if (fd >= 0)
		close(fd);
	pp_rc_close(rc);
	return rcode;
}

/* --- rdma_cm --------------------------------------------------------------------------------------- */

static void cm_waiting(uint16_t port)
{
	fprintf(stderr, "%s: waiting for an rdma_cm client on port %u\n", util_prog, port);
}

static int run_cm(void)
{
	struct pp_cm_opts o = {
		.host = a.host, .port = a.port, .size = a.size, .timeout_ms = a.timeout_s * 1000,
		.accept_timeout_ms = a.accept_timeout_s ? a.accept_timeout_s * 1000 : -1, .waiting = cm_waiting,
	};
	struct pp_cm_result r;
	char err[512], sgid[INET6_ADDRSTRLEN], dgid[INET6_ADDRSTRLEN];

	if (pp_cm_run(&o, &r, err, sizeof(err))) {
		pr_err("%s", err);
		return EXIT_FAIL;
	}
	gid_str(r.sgid, sgid, sizeof(sgid));
	gid_str(r.dgid, dgid, sizeof(dgid));
	if (out_is_json()) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "mode", json_object_new_string("cm"));
		json_object_object_add(j, "role", json_object_new_string(a.host ? "client" : "server"));
		json_object_object_add(j, "device", json_object_new_string(r.dev));
		json_object_object_add(j, "port", json_object_new_int(r.port));
		json_object_object_add(j, "local_address", json_object_new_string(r.local));
		json_object_object_add(j, "remote_address", json_object_new_string(r.remote));
		json_object_object_add(j, "sgid", json_object_new_string(sgid));
		json_object_object_add(j, "dgid", json_object_new_string(dgid));
		json_object_object_add(j, "size", json_object_new_int64(r.size));
		if (a.host) {
			json_object_object_add(j, "write_us", jdouble(r.write_us, 2));
			json_object_object_add(j, "read_us", jdouble(r.read_us, 2));
		}
		json_object_object_add(j, "verified", json_object_new_boolean(r.verified));
		out_json(j);
		return EXIT_OK;
	}
	printf("rdma_cm: %s port %d, %s -> %s, GID %s -> %s\n", r.dev, r.port, r.local, r.remote, sgid, dgid);
	if (a.host)
		printf("RDMA write of %u bytes: %.1f usec, read back: %.1f usec, data verified\n", r.size, r.write_us,
		       r.read_us);
	else
		printf("the client's RDMA write of %u bytes arrived intact, data verified\n", r.size);
	return EXIT_OK;
}

/* --- --check --------------------------------------------------------------------------------------- */

struct warnings {
	struct json_object *arr;
	int n;
};

static void warn(struct warnings *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct warnings *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w->n++;
	json_object_array_add(w->arr, json_object_new_string(buf));
}

static int netdev_mtu(const char *ndev)
{
	char path[128], buf[32];
	FILE *f;
	int v = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ndev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		v = atoi(buf);
	fclose(f);
	return v;
}

static const char *state_str(int s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	default:
		return "NOP";
	}
}

/* One port: attributes, GIDs, which GID for which address; warnings go to w. */
static struct json_object *check_port(struct ibv_context *ctx, const char *dev, int port, const struct gid_table *t,
				      struct warnings *w)
{
	struct json_object *p = json_object_new_object(), *gids = json_object_new_array(),
			   *use = json_object_new_array();
	struct ibv_port_attr pa;
	const char *ndev = NULL;
	char ip[INET6_ADDRSTRLEN], gid[INET6_ADDRSTRLEN];
	bool v2 = false, eth;
	size_t i, j;
	int nmtu = 0;

	json_object_object_add(p, "port", json_object_new_int(port));
	if (ibv_query_port(ctx, (uint8_t)port, &pa)) {
		warn(w, "%s/%d: cannot query the port: %s", dev, port, strerror(errno));
		json_object_object_add(p, "error", json_object_new_string(strerror(errno)));
		json_object_put(gids);
		json_object_put(use);
		return p;
	}
	eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	json_object_object_add(p, "state", json_object_new_string(state_str(pa.state)));
	json_object_object_add(p, "link_layer", json_object_new_string(eth ? "Ethernet" : "InfiniBand"));
	json_object_object_add(p, "active_mtu", json_object_new_int((int)pp_mtu_from_enum(pa.active_mtu)));
	json_object_object_add(p, "max_mtu", json_object_new_int((int)pp_mtu_from_enum(pa.max_mtu)));
	if (!eth)
		json_object_object_add(p, "lid", json_object_new_int(pa.lid));
	for (i = 0; i < t->n; i++) {
		const struct gid_entry *e = &t->v[i];
		struct json_object *g;

		if (strcmp(e->dev, dev) || e->port != port)
			continue;
		if (*e->ndev && !ndev)
			ndev = e->ndev;
		v2 |= e->type == GID_TYPE_ROCE_V2;
		g = json_object_new_object();
		json_object_object_add(g, "index", json_object_new_int(e->index));
		json_object_object_add(g, "gid", json_object_new_string(gid_str(e->raw, gid, sizeof(gid))));
		json_object_object_add(g, "type", json_object_new_string(gid_type_str(e->type)));
		json_object_object_add(g, "address", json_object_new_string(gid_ip_str(e->raw, ip, sizeof(ip))));
		json_object_object_add(g, "link_local", json_object_new_boolean(gid_is_link_local(e->raw)));
		json_object_object_add(g, "netdev", json_object_new_string(e->ndev));
		json_object_array_add(gids, g);

		/* One "use" line per address: the first GID of the best type for it. */
		for (j = 0; j < i; j++)
			if (!strcmp(t->v[j].dev, dev) && t->v[j].port == port && !memcmp(t->v[j].raw, e->raw, 16))
				break;
		if (j == i) {
			struct sockaddr_storage ss;
			struct gid_choice gc;

			gid_to_sockaddr(e->raw, &ss);
			if (!gid_pick_for_addr(t, dev, port, (struct sockaddr *)&ss, &gc)) {
				struct json_object *u = json_object_new_object();

				json_object_object_add(u, "address", json_object_new_string(ip));
				json_object_object_add(u, "gid_index", json_object_new_int(gc.gid.index));
				json_object_object_add(u, "type", json_object_new_string(gid_type_str(gc.gid.type)));
				json_object_object_add(u, "netdev", json_object_new_string(gc.gid.ndev));
				json_object_object_add(u, "link_local", json_object_new_boolean(gid_is_link_local(e->raw)));
				json_object_array_add(use, u);
			}
		}
	}
	if (ndev) {
		nmtu = netdev_mtu(ndev);
		json_object_object_add(p, "netdev", json_object_new_string(ndev));
		if (nmtu)
			json_object_object_add(p, "netdev_mtu", json_object_new_int(nmtu));
	}
	json_object_object_add(p, "gids", gids);
	json_object_object_add(p, "use", use);
	if (pa.state != IBV_PORT_ACTIVE)
		warn(w, "%s/%d: port is %s: nothing can connect through it (is %s up? ip link set %s up)", dev, port,
		     state_str(pa.state), ndev ? ndev : "its netdev", ndev ? ndev : "DEV");
	if (eth && !v2)
		warn(w, "%s/%d: no RoCE v2 GID: RoCE v2 peers cannot reach this port (give %s an IP address)", dev,
		     port, ndev ? ndev : "its netdev");
	/* RoCE v2 over IPv4 adds IP, UDP, BTH, RETH and ICRC headers (60 bytes) to a path-MTU payload. */
	if (eth && nmtu && (int)pp_mtu_from_enum(pa.active_mtu) + 60 > nmtu)
		warn(w, "%s/%d: active MTU %u is larger than %s's MTU %d allows: full-size packets will be dropped "
		     "(use -m %u or raise the netdev MTU)", dev, port, pp_mtu_from_enum(pa.active_mtu), ndev, nmtu,
		     nmtu >= 4096 + 60 ? 4096 : nmtu >= 2048 + 60 ? 2048 : nmtu >= 1024 + 60 ? 1024 : 512);
	return p;
}

static void print_check_text(struct json_object *root)
{
	struct json_object *devs = json_object_object_get(root, "devices"), *w;
	size_t i, j, k;

	for (i = 0; i < json_object_array_length(devs); i++) {
		struct json_object *d = json_object_array_get_idx(devs, i), *ports;

		printf("%s\n", json_object_get_string(json_object_object_get(d, "name")));
		ports = json_object_object_get(d, "ports");
		for (j = 0; ports && j < json_object_array_length(ports); j++) {
			struct json_object *p = json_object_array_get_idx(ports, j), *g, *u, *x;

			printf("  port %d: %s, link layer %s, active MTU %d (max %d)",
			       json_object_get_int(json_object_object_get(p, "port")),
			       json_object_get_string(json_object_object_get(p, "state")),
			       json_object_get_string(json_object_object_get(p, "link_layer")),
			       json_object_get_int(json_object_object_get(p, "active_mtu")),
			       json_object_get_int(json_object_object_get(p, "max_mtu")));
			if ((x = json_object_object_get(p, "netdev")))
				printf(", netdev %s (MTU %d)", json_object_get_string(x),
				       json_object_get_int(json_object_object_get(p, "netdev_mtu")));
			printf("\n");
			g = json_object_object_get(p, "gids");
			if (g && json_object_array_length(g))
				printf("    %-5s %-40s %-8s %-6s %s\n", "GID", "address", "type", "netdev", "gid");
			for (k = 0; g && k < json_object_array_length(g); k++) {
				struct json_object *e = json_object_array_get_idx(g, k);

				printf("    %-5d %-40s %-8s %-6s %s\n", json_object_get_int(json_object_object_get(e, "index")),
				       json_object_get_string(json_object_object_get(e, "address")),
				       json_object_get_string(json_object_object_get(e, "type")),
				       json_object_get_string(json_object_object_get(e, "netdev")),
				       json_object_get_string(json_object_object_get(e, "gid")));
			}
			u = json_object_object_get(p, "use");
			for (k = 0; u && k < json_object_array_length(u); k++) {
				struct json_object *e = json_object_array_get_idx(u, k);

				printf("    to use %s: -g %d (%s%s)\n", json_object_get_string(json_object_object_get(e, "address")),
				       json_object_get_int(json_object_object_get(e, "gid_index")),
				       json_object_get_string(json_object_object_get(e, "type")),
				       json_object_get_boolean(json_object_object_get(e, "link_local")) ?
					       ", link-local: same link only" : "");
			}
		}
	}
	if ((w = json_object_object_get(root, "route"))) {
		printf("to reach %s: %s\n", json_object_get_string(json_object_object_get(w, "host")),
		       json_object_get_string(json_object_object_get(w, "reason")));
	}
	w = json_object_object_get(root, "warnings");
	for (i = 0; i < json_object_array_length(w); i++)
		printf("warning: %s\n", json_object_get_string(json_object_array_get_idx(w, i)));
	if (!json_object_array_length(w))
		printf("no problems found\n");
}

static int run_check(void)
{
	struct json_object *root = json_object_new_object(), *devs = json_object_new_array();
	struct warnings w = { json_object_new_array(), 0 };
	struct ibv_device **list;
	struct gid_table t = { 0 };
	int i, n, p, ret, found = 0;
	char name0[64];

	json_object_object_add(root, "devices", devs);
	json_object_object_add(root, "warnings", w.arr);
	ret = gid_table_read(a.dev, 0, &t);
	if (ret && ret != -ENODEV) {
		pr_err("cannot read the GID tables from sysfs: %s", strerror(-ret));
		goto fail;
	}
	if (a.dev && gid_dev_ports(a.dev, &i, 1) < 0) {
		pr_err("device %s not found (run 'rdmactl pingpong --check' without -d to list the devices)", a.dev);
		goto fail;
	}
	if (!a.dev && first_dev(name0, sizeof(name0)) == -ENODEV) {
		pr_err("no RDMA devices (load the driver and ib_uverbs; for Soft-RoCE: rdma link add rxe0 type rxe "
		       "netdev eth0)");
		goto fail;
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		pr_err("cannot list RDMA devices: %s (is ib_uverbs loaded?)", strerror(errno));
		goto fail;
	}
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct json_object *d, *ports;
		struct ibv_device_attr da;
		struct ibv_context *ctx;

		if (a.dev && strcmp(name, a.dev))
			continue;
		found++;
		d = json_object_new_object();
		ports = json_object_new_array();
		json_object_object_add(d, "name", json_object_new_string(name));
		json_object_array_add(devs, d);
		ctx = ibv_open_device(list[i]);
		if (!ctx || ibv_query_device(ctx, &da)) {
			warn(&w, "%s: cannot open or query the device: %s", name, strerror(errno));
			json_object_put(ports);
			if (ctx)
				ibv_close_device(ctx);
			continue;
		}
		for (p = 1; p <= da.phys_port_cnt; p++)
			if (!a.ib_port_set || p == a.ib_port)
				json_object_array_add(ports, check_port(ctx, name, p, &t, &w));
		if (a.ib_port_set && a.ib_port > da.phys_port_cnt)
			warn(&w, "%s: no port %d (the device has %d)", name, a.ib_port, da.phys_port_cnt);
		json_object_object_add(d, "ports", ports);
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!found) {
		if (a.dev)
			pr_err("device %s not found (devices: see 'rdmactl pingpong --check')", a.dev);
		else
			pr_err("no RDMA devices (load the driver or ib_uverbs; for Soft-RoCE: rdma link add rxe0 type "
			       "rxe netdev eth0)");
		goto fail;
	}
	if (a.host) {
		struct sockaddr_storage dst, src;
		struct json_object *r = json_object_new_object();
		struct choice ch;
		char why[160], ip[INET6_ADDRSTRLEN];

		json_object_object_add(r, "host", json_object_new_string(a.host));
		ret = gid_route_src(a.host, &dst, &src);
		if (ret) {
			warn(&w, "%s: %s", a.host, ret == -ENOENT ? "unknown host" : strerror(-ret));
		} else {
			snprintf(why, sizeof(why), "the route to %s leaves from {}",
				 addr_str((struct sockaddr *)&dst, ip, sizeof(ip)));
			if (!choose((struct sockaddr *)&src, why, &ch)) {
				char line[1024];

				snprintf(line, sizeof(line), "%s port %d GID %d: %s", ch.dev, ch.port, ch.gidx, ch.why);
				json_object_object_add(r, "reason", json_object_new_string(line));
				json_object_object_add(r, "choice", choice_json(&ch));
			}
		}
		json_object_object_add(root, "route", r);
	}
	gid_table_free(&t);
	if (out_is_json()) {
		out_json(root);
	} else {
		print_check_text(root);
		json_object_put(root);
	}
	return EXIT_OK;
fail:
	gid_table_free(&t);
	json_object_put(root);
	return EXIT_FAIL;
}

int cmd_pingpong(int argc, char **argv)
{
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_USAGE;
	if (a.check)
		return run_check();
	if (a.cm)
		return run_cm();
	return a.host ? rc_client() : rc_server();
}
