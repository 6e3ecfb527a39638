// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong: ibv_rc_pingpong-compatible RoCE check that picks the GID itself and explains failures. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gid.h"
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

/* --- the choice of device, port and GID ------------------------------------------------------------ */

static struct pp_choose_opts choose_opts(void)
{
	return (struct pp_choose_opts){ .dev = a.dev, .ib_port = a.ib_port, .gidx = a.gid_set ? a.gidx : -1 };
}

static int choose(const struct sockaddr *local, const char *whence, struct pp_choice *ch)
{
	struct pp_choose_opts o = choose_opts();
	char err[1024];
	int ret;

	ret = pp_choose(&o, local, whence, ch, err, sizeof(err));
	if (ret)
		pr_err("%s", err);
	return ret;
}

/* On stderr: which device, port and GID, and why. */
static void tell_choice(const struct pp_choice *ch)
{
	if (ch->gidx >= 0)
		fprintf(stderr, "%s: using %s port %d GID %d: %s\n", util_prog, ch->dev, ch->port, ch->gidx, ch->why);
	else
		fprintf(stderr, "%s: using %s port %d: %s\n", util_prog, ch->dev, ch->port, ch->why);
	if (*ch->note)
		fprintf(stderr, "%s: %s\n", util_prog, ch->note);
}

/* In JSON only (the text says it on stderr): the choice as an object. */
static void print_choice(const struct pp_choice *ch)
{
	char buf[INET6_ADDRSTRLEN];

	out_open_object("choice");
	print_string(PRINT_JSON, "device", NULL, ch->dev);
	print_int(PRINT_JSON, "port", NULL, ch->port);
	print_int(PRINT_JSON, "gid_index", NULL, ch->gidx);
	if (ch->gidx >= 0) {
		print_string(PRINT_JSON, "gid", NULL, gid_str(ch->gid.raw, buf, sizeof(buf)));
		print_string(PRINT_JSON, "gid_type", NULL, gid_type_str(ch->gid.type));
		print_string(PRINT_JSON, "address", NULL, gid_ip_str(ch->gid.raw, buf, sizeof(buf)));
		print_string(PRINT_JSON, "netdev", NULL, ch->gid.ndev);
	}
	print_string(PRINT_JSON, "reason", NULL, ch->why);
	if (*ch->note)
		print_string(PRINT_JSON, "note", NULL, ch->note);
	out_close_object();
}

/* --- diagnosis ------------------------------------------------------------------------------------- */

static int report_fail(struct pp_rc *rc, const struct pp_choice *ch, const struct pp_dest *rem, int ret,
		       const char *err, bool client)
{
	char hint[600];

	pp_rc_hint(rc, ch, rem, ret, a.mtu, a.size, client, hint, sizeof(hint));
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

/* --- output ---------------------------------------------------------------------------------------- */

/* One side's address: a line of text, an object in JSON. */
static void print_dest(const char *key, const char *label, const struct pp_dest *d)
{
	char gid[INET6_ADDRSTRLEN];

	out_open_object(key);
	print_text("%s", label);
	print_uint(PRINT_ANY, "lid", "LID 0x%04" PRIx64, d->lid);
	print_uint(PRINT_ANY, "qpn", ", QPN 0x%06" PRIx64, d->qpn);
	print_uint(PRINT_ANY, "psn", ", PSN 0x%06" PRIx64, d->psn);
	print_string(PRINT_ANY, "gid", ", GID %s", gid_str(d->gid, gid, sizeof(gid)));
	print_nl();
	out_close_object();
}

static void print_result(const struct pp_choice *ch, const struct pp_dest *me, const struct pp_dest *rem,
			 const struct pp_result *r, bool client)
{
	out_open_object(NULL);
	print_string(PRINT_JSON, "mode", NULL, "rc");
	print_string(PRINT_JSON, "role", NULL, client ? "client" : "server");
	print_choice(ch);
	print_dest("local", "  local address:  ", me);
	print_dest("remote", "  remote address: ", rem);
	print_uint(PRINT_JSON, "size", NULL, a.size);
	print_uint(PRINT_JSON, "mtu", NULL, a.mtu);
	print_uint(PRINT_JSON, "iters", NULL, r->iters);
	print_uint(PRINT_ANY, "bytes", "%" PRIu64 " bytes in ", r->bytes);
	print_fixed(PRINT_ANY, "seconds", "%.2f seconds = ", r->seconds, 6);
	print_fixed(PRINT_ANY, "bandwidth_gbps", "%.3f Gb/s\n", r->gbps, 6);
	print_text("%u iters in %.2f seconds = %.2f usec/iter\n", r->iters, r->seconds,
		   r->iters ? r->seconds * 1e6 / r->iters : 0);
	out_open_object("latency_us");
	print_fixed(PRINT_ANY, "min", "round trip (usec): min %.2f", r->lat.min, 2);
	print_fixed(PRINT_ANY, "avg", " avg %.2f", r->lat.avg, 2);
	print_fixed(PRINT_ANY, "p50", " p50 %.2f", r->lat.p50, 2);
	print_fixed(PRINT_ANY, "p99", " p99 %.2f", r->lat.p99, 2);
	print_fixed(PRINT_ANY, "p99_9", " p99.9 %.2f", r->lat.p999, 2);
	print_fixed(PRINT_ANY, "max", " max %.2f\n", r->lat.max, 2);
	out_close_object();
	if (a.events)
		print_uint(PRINT_ANY, "cq_events", "%" PRIu64 " completion events\n", r->cq_events);
	out_close_object();
	fflush(stdout);
}

/* --- RC pingpong ----------------------------------------------------------------------------------- */

static int open_rc(const struct pp_choice *ch, struct pp_rc **rc)
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
		       "--check')", ch->port, ch->dev, pp_port_state_str(state), *ch->gid.ndev ? ch->gid.ndev :
		       "its network device");
		pp_rc_close(*rc);
		*rc = NULL;
		return -ENETDOWN;
	}
	return 0;
}

/* Both sides, once connected: the ping-pong itself, then its result or the diagnosis. */
static int run_and_report(struct pp_rc *rc, const struct pp_choice *ch, const struct pp_dest *me,
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
	struct pp_choice ch;
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
		 ret ? a.host : gid_sockaddr_str((struct sockaddr *)&dst, ip, sizeof(ip)));
	if (choose(ret ? NULL : (struct sockaddr *)&src, why, &ch))
		return EXIT_FAIL;
	tell_choice(&ch);
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
	struct pp_choice ch;
	struct pp_rc *rc = NULL;
	int ret, lfd, fd = -1, tmo = a.timeout_s * 1000, rcode = EXIT_FAIL;
	ssize_t n;

	/* No device at all, or not the one asked for: say so now rather than after a client came. */
	ret = a.dev ? gid_dev_ports(a.dev, &lfd, 1) : gid_first_dev(ip, sizeof(ip));
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
		 peer.ss_family ? gid_sockaddr_str((struct sockaddr *)&peer, pip, sizeof(pip)) : "?");
	if (choose((struct sockaddr *)&local, why, &ch))
		goto out;
	tell_choice(&ch);
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
	char err[512], gid[INET6_ADDRSTRLEN];

	if (pp_cm_run(&o, &r, err, sizeof(err))) {
		pr_err("%s", err);
		return EXIT_FAIL;
	}
	out_open_object(NULL);
	print_string(PRINT_JSON, "mode", NULL, "cm");
	print_string(PRINT_JSON, "role", NULL, a.host ? "client" : "server");
	print_string(PRINT_ANY, "device", "rdma_cm: %s", r.dev);
	print_int(PRINT_ANY, "port", " port %" PRId64, r.port);
	print_string(PRINT_ANY, "local_address", ", %s", r.local);
	print_string(PRINT_ANY, "remote_address", " -> %s", r.remote);
	print_string(PRINT_ANY, "sgid", ", GID %s", gid_str(r.sgid, gid, sizeof(gid)));
	print_string(PRINT_ANY, "dgid", " -> %s\n", gid_str(r.dgid, gid, sizeof(gid)));
	if (a.host) {
		print_uint(PRINT_ANY, "size", "RDMA write of %" PRIu64 " bytes: ", r.size);
		print_fixed(PRINT_ANY, "write_us", "%.1f usec, ", r.write_us, 2);
		print_fixed(PRINT_ANY, "read_us", "read back: %.1f usec, data verified\n", r.read_us, 2);
	} else {
		print_uint(PRINT_ANY, "size",
			   "the client's RDMA write of %" PRIu64 " bytes arrived intact, data verified\n", r.size);
	}
	print_bool(PRINT_JSON, "verified", NULL, r.verified);
	out_close_object();
	return EXIT_OK;
}

/* --- --check --------------------------------------------------------------------------------------- */

/* A port: a line of text then its GID table and which GID for which address; an object in JSON. */
static void print_check_port(const struct pp_check_port *p)
{
	char gid[INET6_ADDRSTRLEN], ip[INET6_ADDRSTRLEN];
	size_t i;

	out_open_object(NULL);
	print_int(PRINT_ANY, "port", "  port %" PRId64 ": ", p->port);
	if (p->error) {
		print_string(PRINT_JSON, "error", NULL, strerror(p->error));
		/* The text has always shown a port that cannot be queried so (the error is among the warnings). */
		print_text("(null), link layer (null), active MTU 0 (max 0)\n");
		out_close_object();
		return;
	}
	print_string(PRINT_ANY, "state", "%s", pp_port_state_str(p->state));
	print_string(PRINT_ANY, "link_layer", ", link layer %s", p->eth ? "Ethernet" : "InfiniBand");
	print_uint(PRINT_ANY, "active_mtu", ", active MTU %" PRIu64, p->active_mtu);
	print_uint(PRINT_ANY, "max_mtu", " (max %" PRIu64 ")", p->max_mtu);
	if (!p->eth)
		print_uint(PRINT_JSON, "lid", NULL, p->lid);
	if (*p->ndev) {
		print_string(PRINT_ANY, "netdev", ", netdev %s", p->ndev);
		/* An unknown netdev MTU: no key in JSON, "MTU 0" in text. */
		print_int(p->ndev_mtu ? PRINT_ANY : PRINT_FP, "netdev_mtu", " (MTU %" PRId64 ")", p->ndev_mtu);
	}
	print_nl();

	out_open_array("gids");
	if (p->n_gids)
		print_text("    %-5s %-40s %-8s %-6s %s\n", "GID", "address", "type", "netdev", "gid");
	for (i = 0; i < p->n_gids; i++) {
		const struct gid_entry *e = &p->gids[i];

		out_open_object(NULL);
		print_int(PRINT_ANY, "index", "    %-5" PRId64 " ", e->index);
		print_string(PRINT_JSON, "gid", NULL, gid_str(e->raw, gid, sizeof(gid)));
		print_string(PRINT_JSON, "type", NULL, gid_type_str(e->type));
		print_string(PRINT_ANY, "address", "%-40s ", gid_ip_str(e->raw, ip, sizeof(ip)));
		print_string(PRINT_FP, NULL, "%-8s ", gid_type_str(e->type));
		print_bool(PRINT_JSON, "link_local", NULL, gid_is_link_local(e->raw));
		print_string(PRINT_ANY, "netdev", "%-6s ", e->ndev);
		print_string(PRINT_FP, NULL, "%s\n", gid);
		out_close_object();
	}
	out_close_array();

	out_open_array("use");
	for (i = 0; i < p->n_use; i++) {
		const struct pp_check_use *u = &p->use[i];

		out_open_object(NULL);
		print_string(PRINT_ANY, "address", "    to use %s: ", u->address);
		print_int(PRINT_ANY, "gid_index", "-g %" PRId64 " (", u->gid.index);
		print_string(PRINT_ANY, "type", "%s", gid_type_str(u->gid.type));
		print_string(PRINT_JSON, "netdev", NULL, u->gid.ndev);
		print_bool(PRINT_JSON, "link_local", NULL, u->link_local);
		print_text("%s)\n", u->link_local ? ", link-local: same link only" : "");
		out_close_object();
	}
	out_close_array();
	out_close_object();
}

/* Devices and ports, the route to HOST, the warnings (in JSON before the route). */
static void print_check(const struct pp_check *c)
{
	char line[1024];
	size_t i, j;

	out_open_object(NULL);
	out_open_array("devices");
	for (i = 0; i < c->n_devs; i++) {
		const struct pp_check_dev *d = &c->devs[i];

		out_open_object(NULL);
		print_string(PRINT_ANY, "name", "%s\n", d->name);
		if (d->opened) {
			out_open_array("ports");
			for (j = 0; j < d->n_ports; j++)
				print_check_port(&d->ports[j]);
			out_close_array();
		}
		out_close_object();
	}
	out_close_array();
	out_open_array("warnings");
	for (i = 0; i < c->n_warnings; i++)
		print_string(PRINT_JSON, NULL, NULL, c->warnings[i]);
	out_close_array();
	if (c->route.host) {
		const struct pp_choice *ch = &c->route.choice;

		out_open_object("route");
		print_string(PRINT_ANY, "host", "to reach %s: ", c->route.host);
		if (c->route.chosen) {
			snprintf(line, sizeof(line), "%s port %d GID %d: %s", ch->dev, ch->port, ch->gidx, ch->why);
			print_string(PRINT_ANY, "reason", "%s\n", line);
			print_choice(ch);
		} else {
			/* No route or no choice: the text has always said so; the reason is on stderr or a warning. */
			print_text("(null)\n");
		}
		out_close_object();
	}
	for (i = 0; i < c->n_warnings; i++)
		print_string(PRINT_FP, NULL, "warning: %s\n", c->warnings[i]);
	if (!c->n_warnings)
		print_text("no problems found\n");
	out_close_object();
}

static int run_check(void)
{
	struct pp_check_opts o = {
		.dev = a.dev, .ib_port = a.ib_port_set ? a.ib_port : 0, .host = a.host, .choose = choose_opts(),
	};
	struct pp_check c;
	char err[1024];

	if (pp_check_read(&o, &c, err, sizeof(err))) {
		pr_err("%s", err);
		pp_check_free(&c);
		return EXIT_FAIL;
	}
	if (*c.route.err)
		pr_err("%s", c.route.err);
	print_check(&c);
	pp_check_free(&c);
	return EXIT_OK;
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
