// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl top: options, snapshots with the quota and rate sources joined, batch mode. */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "monitor/bpfmon.h"
#include "kq/kq.h"
#include "ledger/ledger.h"
#include "core/out.h"
#include "rdmactl.h"
#include "top_view.h"
#include "core/kinds.h"
#include "core/util.h"

#define MAX_PIDS 64

static struct {
	bool batch;
	uint64_t count;		/* 0: until interrupted */
	double delay;
	struct top_view view;
	pid_t pids[MAX_PIDS];
	size_t npids;
	const char *dev;
	const char *user;
	const char *comm;
	const char *ledger;	/* --ledger PATH; NULL: ledger_default_path() */
} o = { .delay = 2.0, .view = { .key = TOP_KEY_QP } };

volatile sig_atomic_t top_exiting;

static void on_signal(int sig)
{
	(void)sig;
	top_exiting = 1;
}

enum { OPT_PID = 0x100, OPT_DEV, OPT_USER, OPT_COMM, OPT_LEDGER, OPT_NO_QP_STATES, OPT_COUNTERS };

static const struct argp_option options[] = {
	{ "batch", 'b', NULL, 0, "Batch mode: print snapshots as text (or JSON with -j) instead of a screen", 0 },
	{ "iterations", 'n', "COUNT", 0, "Stop after COUNT snapshots (default: until interrupted)", 0 },
	{ "delay", 'd', "SECONDS", 0, "Time between snapshots (default 2; fractions allowed)", 0 },
	{ "sort", 's', "KEY", 0,
	  "Sort by KEY: qp, mr, mr_bytes, cq, pd, ctx, srq, cm_id (largest first), pid, user, comm", 0 },
	{ "reverse", 'r', NULL, 0, "Reverse the sort order", 0 },
	{ "no-qp-states", OPT_NO_QP_STATES, NULL, 0,
	  "Leave QP states out; counts then come from a running monitor's counters when they are provably "
	  "complete (no per-object dump; JSON \"source\"), else from the dump as always", 0 },
	{ "counters", OPT_COUNTERS, NULL, 0,
	  "Counts from a running monitor's counters and each QP's state asked for by its number, when they are "
	  "provably complete (no per-object dump; JSON \"source\"), else from the dump as always", 0 },
	{ "pid", OPT_PID, "PID", 0, "Only this process (repeatable)", 1 },
	{ "dev", OPT_DEV, "DEV", 0, "Only this RDMA device", 1 },
	{ "user", OPT_USER, "USER", 0, "Only processes of this user (name or uid)", 1 },
	{ "comm", OPT_COMM, "COMM", 0, "Only processes with this command name (or kernel owner name)", 1 },
	{ "ledger", OPT_LEDGER, "PATH", 0,
	  "Quota ledger to show use and limits from (default $RDMACTL_LEDGER, else /dev/shm/rdmactl.ledger)", 2 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	uint64_t v;
	pid_t pid;
	int idx;

	switch (key) {
	case 'b':
		o.batch = true;
		break;
	case 'n':
		if (parse_u64(arg, 1, UINT32_MAX, &v))
			argp_error(state, "invalid COUNT '%s': expected a whole number >= 1", arg);
		o.count = v;
		break;
	case 'd':
		if (parse_seconds(arg, 0, 86400, &o.delay))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0 to 86400", arg);
		break;
	case 's':
		idx = kind_match_word(arg, top_key_names, -1); /* mr_bytes or mr-bytes */
		if (idx < 0) {
			word_error("sort key", arg, top_key_names, -1, idx);
			exit(EXIT_USAGE);
		}
		o.view.key = idx;
		break;
	case 'r':
		o.view.reverse = true;
		break;
	case OPT_NO_QP_STATES:
		o.view.no_qp_states = true;
		break;
	case OPT_COUNTERS:
		o.view.counters = true;
		break;
	case OPT_PID:
		if (o.npids == MAX_PIDS)
			argp_error(state, "at most %d --pid options", MAX_PIDS);
		if (parse_pid(arg, false, &pid))
			argp_error(state, "invalid PID '%s'", arg);
		o.pids[o.npids++] = pid;
		break;
	case OPT_DEV:
		o.dev = arg;
		break;
	case OPT_USER:
		o.user = arg;
		break;
	case OPT_COMM:
		o.comm = arg;
		break;
	case OPT_LEDGER:
		if (!*arg)
			argp_error(state, "empty ledger PATH");
		o.ledger = arg;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, NULL,
	"Per-process view of RDMA resources (contexts, PDs, CQs, QPs, SRQs, MRs and their bytes, CM IDs) "
	"from RDMA netlink. Objects are charged to the process (thread group) whose thread created them; "
	"kernel-owned objects are grouped by owner name. With a quota ledger, each process shows whether it is "
	"managed and its use against the tightest applicable limit; with a running 'rdmactl monitor', "
	"create/destroy rates.\n\n"
	"Interactive keys: q quit, s/S next/previous sort key, r reverse order, any other key refreshes.\v"
	"Examples:\n"
	"  rdmactl top                          # full screen, refresh every 2 s\n"
	"  rdmactl top -b -n 1                  # one text snapshot\n"
	"  rdmactl top -b -n 1 -j | jq .totals  # one JSON snapshot\n"
	"  rdmactl top -b -d 5 -j >> rdma.log   # a JSON line every 5 s\n"
	"  rdmactl top -s mr_bytes --user alice --dev rxe0\n"
	"  rdmactl top -b -n 2 -d 1 -j | jq '.processes[] | {pid, quota, rates}'\n",
	children, NULL, NULL,
};

/* --- modes ---------------------------------------------------------------------------------------- */

void top_take_error(struct top_ctx *t, int ret)
{
	const char *ack = top_ext_ack(t);

	pr_err("RDMA netlink dump failed: %s%s%s", strerror(-ret), *ack ? ": " : "", ack);
}

/* Optional sources: the quota ledger and the BPF counters of a running monitor (absent: no columns). */
static struct {
	struct ledger *ledger;
	int ledger_err;		/* last error told with -v (told once per distinct error) */
	struct top_counters prev;
	bool have_prev;
	int rates_err;
	char source_why[192];	/* why the dump and not the counters, as last told with -v */
	bool told_counters;
} extra;

/* The ledger, opened at the first success and kept; NULL (told with -v) while it cannot be. */
static struct ledger *ledger_get(bool quiet)
{
	int ret;

	if (extra.ledger)
		return extra.ledger;
	ret = ledger_open(o.ledger, 0, &extra.ledger);
	if (ret) {
		extra.ledger = NULL;
		if (!quiet && ret != extra.ledger_err)
			pr_debug("no quota columns: %s", ledger_error());
		extra.ledger_err = ret;
	}
	return extra.ledger;
}

/* This read of the monitor's counters into *cur: 0, or -errno (told with -v; the rates start again). */
static int rates_read(struct top_counters *cur, bool quiet)
{
	int fd = -1, ret;

	/* Opened anew each time: a monitor started (or restarted) meanwhile pins a new map. */
	ret = mon_counters_open_live(&fd);
	if (!ret) {
		ret = top_counters_read(fd, cur);
		close(fd);
	}
	if (ret) {
		if (!quiet && ret != extra.rates_err)
			pr_debug("no rates: %s", ret == -ENOENT ?
				 "no BPF counters pinned at " MON_PIN_COUNTERS " (start 'rdmactl monitor')" :
				 ret == -ESRCH ? "the monitor that pinned the counters is gone (start 'rdmactl monitor' again)" :
				 strerror(-ret));
		extra.rates_err = ret;
		if (extra.have_prev)
			top_counters_free(&extra.prev);
		extra.have_prev = false;
		return ret;
	}
	extra.rates_err = 0;
	if (!extra.have_prev && !quiet)
		pr_debug("rates from the next snapshot on (they need two reads of the BPF counters)");
	return 0;
}

static void extra_free(void)
{
	if (extra.ledger)
		ledger_close(extra.ledger);
	extra.ledger = NULL;
	top_counters_free(&extra.prev);
	extra.have_prev = false;
}

/* One sorted snapshot; on failure s is released and the error is printed unless quiet. */
int top_take(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, const struct top_view *v,
	     bool quiet)
{
	struct top_sources src = { 0 };
	struct top_counters cur;
	struct kq *q = NULL;
	char why[sizeof(s->source_why)] = "";
	bool have_cur;
	int ret = -1;

	if (v->no_qp_states || v->counters) {
		/*
		 * O(processes) when the monitor's counts are provably complete (and O(QPs) for the states, by number);
		 * else the dump, as without the option
		 */
		ret = top_snapshot_counters(t, f, s, !v->no_qp_states, why, sizeof(why));
		if (!quiet && (ret ? strcmp(why, extra.source_why) : !extra.told_counters)) {
			if (ret)
				pr_debug("counts from the per-object dump: %s", why);
			else
				pr_debug("counts from the monitor's counters (no per-object dump)");
		}
		extra.told_counters = !ret;
		snprintf(extra.source_why, sizeof(extra.source_why), "%s", ret ? why : "");
	}
	if (ret)
		ret = top_snapshot(t, f, s);
	if (!ret && s->source == TOP_SRC_DUMP)
		snprintf(s->source_why, sizeof(s->source_why), "%s", why);
	if (ret) {
		if (!quiet)
			top_take_error(t, ret);
		return ret;
	}
	src.ledger = ledger_get(quiet);
	/* opened anew each time: the programs may be loaded while top runs */
	if (src.ledger && !kq_open(false, &q))
		src.kq = q;
	have_cur = !rates_read(&cur, quiet);
	if (have_cur && extra.have_prev) {
		src.prev = &extra.prev;
		src.cur = &cur;
	}
	ret = top_join(s, &src);
	if (src.ledger) {
		if (ret && !quiet && ret != extra.ledger_err)
			pr_debug("no quota columns: reading the ledger failed: %s", strerror(-ret));
		extra.ledger_err = ret;
	}
	kq_close(q);
	if (have_cur) {
		top_counters_free(&extra.prev);
		extra.prev = cur;
		extra.have_prev = true;
	}
	top_sort(s, v->key, v->reverse);
	return 0;
}

static void sleep_s(double secs)
{
	struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };

	while (!top_exiting && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Snapshots one after another: text views apart by a blank line, or a JSON object a line. */
static int batch(struct top_ctx *t, const struct top_filter *f, struct top_snap *first)
{
	struct top_snap s = *first;
	uint64_t i;

	for (i = 0;; i++) {
		if (i) {
			if (top_take(t, f, &s, &o.view, false))
				return EXIT_FAIL;
			print_nl();
		}
		top_print(&s, &o.view, NULL);
		fflush(stdout);
		top_snap_free(&s);
		if ((o.count && i + 1 >= o.count) || top_exiting)
			break;
		sleep_s(o.delay);
		if (top_exiting)
			break;
	}
	return ferror(stdout) ? EXIT_FAIL : EXIT_OK;
}

static void no_devices(void)
{
	pr_err("no RDMA devices: nothing to show (get one with Soft-RoCE: 'modprobe rdma_rxe; "
	       "rdma link add rxe0 type rxe netdev eth0')");
}

int cmd_top(int argc, char **argv)
{
	struct top_filter f = { 0 };
	struct top_snap s;
	struct top_ctx *t = NULL;
	struct passwd *pw;
	uint64_t uid;
	int idx, ret;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER | ARGP_NO_HELP, &idx, NULL))
		return EXIT_USAGE;
	f.pids = o.pids;
	f.npids = o.npids;
	f.dev = o.dev;
	f.comm = o.comm;
	if (o.user) {
		pw = getpwnam(o.user);
		if (pw) {
			f.uid = pw->pw_uid;
		} else if (!parse_u64(o.user, 0, UINT32_MAX - 1, &uid)) {
			f.uid = (uid_t)uid;
		} else {
			pr_err("unknown user '%s'", o.user);
			fprintf(stderr, "Try '%s --help' for more information.\n", util_prog);
			return EXIT_USAGE;
		}
		f.has_uid = true;
	}

	ret = top_open(&t);
	if (ret == -EPROTONOSUPPORT || ret == -EAFNOSUPPORT) {
		/* No ib_core: the RDMA netlink family does not exist, so neither can a device. */
		no_devices();
		return EXIT_FAIL;
	}
	if (ret) {
		pr_err("cannot open RDMA netlink socket: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	if (top_take(t, &f, &s, &o.view, false)) {
		top_close(t);
		extra_free();
		return EXIT_FAIL;
	}
	if (!s.ndevs_total || (o.dev && !s.ndevs)) {
		if (!s.ndevs_total)
			no_devices();
		else
			pr_err("no RDMA device '%s' (see 'rdma link show')", o.dev);
		top_snap_free(&s);
		top_close(t);
		extra_free();
		return EXIT_FAIL;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!o.batch && !out_is_json() && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
		ret = top_screen(t, &f, &s, &o.view, o.delay);
	} else {
		/* Not a terminal (or -j): batch mode; without -d, back-to-back snapshots are pointless. */
		ret = batch(t, &f, &s);
	}
	top_close(t);
	extra_free();
	return ret;
}
