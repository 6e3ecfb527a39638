// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong: ibv_rc_pingpong-compatible RoCE check that picks the GID itself and explains failures. */
#include <errno.h>
#include <stdint.h>

#include "pingpong.h"
#include "pingpong/pp.h"
#include "rdmactl.h"
#include "core/util.h"

enum { OPT_CHECK = 256, OPT_CM, OPT_TIMEOUT, OPT_ACCEPT_TIMEOUT };

static struct pingpong_opts a = {
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
			   parse_why(arg, ret, false), (unsigned long long)min,
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
	"it chooses the GID itself: the RoCE v2 GID of the address that reaches the peer, and says why.\n\n"
	"-p is the TCP port here, as in ibv_rc_pingpong; pretty JSON is --pretty.\n"
	"Exit status: 0 ok, 1 failure (the message names the cause and the fix), 2 usage error.\v"
	"Examples:\n"
	"  rdmactl pingpong                  # server: waits for a client\n"
	"  rdmactl pingpong 192.0.2.1        # client: device and GID from the route\n"
	"  rdmactl pingpong -d rxe0 -g 1 -n 100 -j 192.0.2.1\n"
	"  rdmactl pingpong --check          # ports, GIDs, warnings; no peer\n"
	"  rdmactl pingpong --cm 192.0.2.1   # rdma_cm: write, read back, verify\n",
	children, NULL, NULL,
};

int cmd_pingpong(int argc, char **argv)
{
	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return EXIT_USAGE;
	if (a.check)
		return pingpong_check(&a);
	if (a.cm)
		return pingpong_cm(&a);
	return pingpong_rc(&a);
}
