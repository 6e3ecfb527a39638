// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong, RC: the TCP exchange of ibv_rc_pingpong, the run, its result, what went wrong and why. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pingpong/gid.h"
#include "core/out.h"
#include "pingpong.h"
#include "pingpong/pp.h"
#include "rdmactl.h"
#include "core/util.h"

/* The options, as pingpong_rc() was given them. */
static const struct pingpong_opts *a;

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

/* --- diagnosis ------------------------------------------------------------------------------------- */

static int report_fail(struct pp_rc *rc, const struct pp_choice *ch, const struct pp_dest *rem, int ret,
		       const char *err, bool client)
{
	char hint[600];

	pp_rc_hint(rc, ch, rem, ret, a->mtu, a->size, client, hint, sizeof(hint));
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
	pr_err("cannot connect to %s TCP port %u: %s (%s)", host, a->port,
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
	pingpong_print_choice(ch);
	print_dest("local", "  local address:  ", me);
	print_dest("remote", "  remote address: ", rem);
	print_uint(PRINT_JSON, "size", NULL, a->size);
	print_uint(PRINT_JSON, "mtu", NULL, a->mtu);
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
	if (a->events)
		print_uint(PRINT_ANY, "cq_events", "%" PRIu64 " completion events\n", r->cq_events);
	out_close_object();
	fflush(stdout);
}

/* --- RC pingpong ----------------------------------------------------------------------------------- */

static int open_rc(const struct pp_choice *ch, struct pp_rc **rc)
{
	struct pp_rc_opts o = {
		.dev = ch->dev, .ib_port = ch->port, .gid_index = ch->gidx, .size = a->size, .iters = a->iters,
		.rx_depth = a->rx_depth, .mtu = pp_mtu_to_enum(a->mtu), .sl = a->sl, .events = a->events,
		.timeout_ms = a->timeout_s * 1000,
	};
	char err[512];
	int ret, ll, mtu, state;

	if (a->rx_depth < 2)
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
	int ret, fd = -1, tmo = a->timeout_s * 1000, rcode = EXIT_FAIL;
	ssize_t n;

	ret = gid_route_src(a->host, &dst, &src);
	if (ret == -ENOENT) {
		pr_err("cannot resolve '%s' (unknown host)", a->host);
		return EXIT_FAIL;
	}
	if (ret)
		pr_debug("no route to %s: %s", a->host, strerror(-ret));
	snprintf(why, sizeof(why), "the route to %s leaves from {}",
		 ret ? a->host : gid_sockaddr_str((struct sockaddr *)&dst, ip, sizeof(ip)));
	if (pingpong_choose(a, ret ? NULL : (struct sockaddr *)&src, why, &ch))
		return EXIT_FAIL;
	pingpong_tell_choice(&ch);
	if (open_rc(&ch, &rc))
		return EXIT_FAIL;
	pp_rc_local(rc, &me);

	ret = pp_tcp_connect(a->host, a->port, tmo, &fd);
	if (ret) {
		conn_error(ret, a->host);
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
		       "one? check -p)", a->timeout_s);
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
		       "%u? use -p)", a->port);
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
	int ret, lfd, fd = -1, tmo = a->timeout_s * 1000, rcode = EXIT_FAIL;
	ssize_t n;

	/* No device at all, or not the one asked for: say so now rather than after a client came. */
	ret = a->dev ? gid_dev_ports(a->dev, &lfd, 1) : gid_first_dev(ip, sizeof(ip));
	if (ret < 0) {
		if (a->dev)
			pr_err("device %s not found (see 'rdmactl pingpong --check' for the devices there are)", a->dev);
		else
			pr_err("no RDMA device found (load the driver; for Soft-RoCE: rdma link add rxe0 type rxe "
			       "netdev eth0)");
		return EXIT_FAIL;
	}
	ret = pp_tcp_listen(a->port, &lfd);
	if (ret) {
		pr_err("cannot listen on TCP port %u: %s (%s)", a->port, strerror(-ret),
		       ret == -EADDRINUSE ? "another server runs there: use another -p" : "check -p");
		return EXIT_FAIL;
	}
	fprintf(stderr, "%s: waiting for a client on TCP port %u\n", util_prog, a->port);
	ret = pp_tcp_accept(lfd, a->accept_timeout_s ? a->accept_timeout_s * 1000 : -1, &fd);
	close(lfd);
	if (ret) {
		pr_err("no client within %d s (--accept-timeout)", a->accept_timeout_s);
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
	if (pingpong_choose(a, (struct sockaddr *)&local, why, &ch))
		goto out;
	pingpong_tell_choice(&ch);
	if (open_rc(&ch, &rc))
		goto out;
	pp_rc_local(rc, &me);
	n = pp_read_full(fd, msg, sizeof(msg), tmo);
	if (n < 0) {
		pr_err("the client sent no address within %d s: %s", a->timeout_s, strerror((int)-n));
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

int pingpong_rc(const struct pingpong_opts *o)
{
	a = o;
	return a->host ? rc_client() : rc_server();
}
