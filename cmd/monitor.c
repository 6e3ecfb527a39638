// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: live RDMA resource events (BPF), device events, ledger refusals; --audit for bypass. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "monitor/bpfmon.h"
#include "core/clock.h"
#include "kq/kq.h"
#include "ledger/ledger.h"
#include "monitor/monfmt.h"
#include "monitor.h"
#include "core/out.h"
#include "rdmactl.h"
#include "core/kinds.h"
#include "core/util.h"


static void on_signal(int sig)
{
	(void)sig;
	monitor_exiting = 1;
}

enum { OPT_PID = 0x100, OPT_TYPE, OPT_DEV, OPT_STATS, OPT_AUDIT, OPT_INTERVAL, OPT_ENFORCE, OPT_DURATION };

static const struct argp_option options[] = {
	{ "pid", OPT_PID, "PID", 0, "Only objects owned by this process", 0 },
	{ "type", OPT_TYPE, "KIND", 0, "Only this kind: pd, cq, qp, cm_id, mr, ctx, counter, srq", 0 },
	{ "dev", OPT_DEV, "DEV", 0, "Only this RDMA device", 0 },
	{ "stats", OPT_STATS, "SECONDS", OPTION_ARG_OPTIONAL,
	  "Instead of one line per event, print per-process create/destroy rates every SECONDS (default 1)", 0 },
	{ "duration", OPT_DURATION, "SECONDS", 0, "Stop (with the summary) after SECONDS", 0 },
	{ "audit", OPT_AUDIT, NULL, 0,
	  "Bypass detection: report processes holding RDMA resources unknown to the ledger or over a quota", 1 },
	{ "interval", OPT_INTERVAL, "SECONDS", 0, "Audit period (default 2)", 1 },
	{ "enforce", OPT_ENFORCE, "signal=SIG", 0,
	  "With --audit: send SIG (TERM, KILL, INT, HUP or a number) to unmanaged processes over a quota", 1 },
	{ 0 },
};

static int parse_signal(const char *arg)
{
	static const struct { const char *name; int sig; } sigs[] = {
		{ "TERM", SIGTERM }, { "KILL", SIGKILL }, { "INT", SIGINT }, { "HUP", SIGHUP },
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "QUIT", SIGQUIT },
	};
	uint64_t v;
	size_t i;

	if (strncmp(arg, "signal=", 7))
		return -EINVAL;
	arg += 7;
	if (!strncasecmp(arg, "SIG", 3))
		arg += 3;
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		if (!strcasecmp(arg, sigs[i].name))
			return sigs[i].sig;
	if (!parse_u64(arg, 1, 64, &v))
		return (int)v;
	return -EINVAL;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	int idx;

	switch (key) {
	case OPT_PID:
		if (parse_pid(arg, false, &mopt.pid))
			argp_error(state, "invalid PID '%s'", arg);
		break;
	case OPT_TYPE:
		idx = kind_match_word(arg, mon_type_names, -1); /* cm_id or cm-id */
		if (idx < 0) {
			char kinds[160];
			size_t i, n = 0;

			for (i = 0; mon_type_names[i] && n < sizeof(kinds); i++)
				n += snprintf(kinds + n, sizeof(kinds) - n, "%s%s", i ? ", " : "", mon_type_names[i]);
			argp_error(state, "%s KIND '%s' (one of: %s)", idx == -2 ? "ambiguous" : "unknown", arg, kinds);
		}
		mopt.type = idx;
		break;
	case OPT_DEV:
		if (!*arg || strlen(arg) >= MON_DEV_LEN)
			argp_error(state, "invalid DEV '%s'", arg);
		mopt.dev = arg;
		break;
	case OPT_STATS:
		mopt.stats = 1.0;
		/* "--stats 2" as the examples write it: monitor takes no argument, so a number next is SECONDS */
		if (!arg && state->next < state->argc &&
		    (isdigit((unsigned char)state->argv[state->next][0]) || state->argv[state->next][0] == '.'))
			arg = state->argv[state->next++];
		if (arg && parse_seconds(arg, 0.1, 86400, &mopt.stats))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0.1 to 86400", arg);
		break;
	case OPT_DURATION:
		if (parse_seconds(arg, 0.001, 86400, &mopt.duration))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0.001 to 86400", arg);
		break;
	case OPT_AUDIT:
		mopt.audit = true;
		break;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 0.1, 86400, &mopt.interval))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0.1 to 86400", arg);
		break;
	case OPT_ENFORCE:
		mopt.enforce_sig = parse_signal(arg);
		if (mopt.enforce_sig < 0)
			argp_error(state, "invalid --enforce '%s': expected signal=TERM (or KILL, INT, HUP, a number)",
				   arg);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (mopt.enforce_sig && !mopt.audit)
			argp_error(state, "--enforce needs --audit");
		if (mopt.audit && mopt.stats)
			argp_error(state, "--stats and --audit cannot be combined");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, NULL,
	"Stream RDMA resource creations and destructions as the kernel's resource tracker sees them (BPF on "
	"ib_core), with device events and ledger refusals; or audit for processes that bypass the ledger.\n\n"
	"Needs root or CAP_BPF and CAP_PERFMON, and ib_core loaded. Ctrl-C prints a summary and exits 0.\v"
	"Examples:\n"
	"  rdmactl monitor                      # every event, one line each\n"
	"  rdmactl monitor -j --type qp         # QP events as JSON lines\n"
	"  rdmactl monitor --pid 1234 --dev rxe0\n"
	"  rdmactl monitor --stats 2            # per-process create/destroy rates every 2 s\n"
	"  rdmactl monitor --audit --enforce signal=TERM\n",
	children, NULL, NULL,
};

/* --- events ------------------------------------------------------------------------------------------ */


static int on_event(const struct mon_event *e, void *arg)
{
	const char *dev;
	struct proc_sum *p;

	(void)arg;
	if (mopt.pid && (pid_t)e->tgid != mopt.pid)
		return 0;
	if ((mopt.type >= 0 && e->type != mopt.type) || e->type >= RESTRACK_NTYPES)
		return 0;
	dev = dev_name_of(e->dev_index, e->ts_ns / 1e9);
	if (mopt.dev && strcmp(dev, mopt.dev))
		return 0;
	monitor_summary.events++;
	monitor_summary.types[e->op == MON_OP_DESTROY][e->type]++;
	p = proc_sum(e->tgid, e->user ? e->comm : "[kernel]");
	if (p)
		p->n[e->op == MON_OP_DESTROY][e->type]++;
	if (mopt.stats)
		return 0;
	text_header();
	mon_event_print(e, dev, e->ts_ns + mon_realtime_offset(monitor_bpf), util_verbose);
	return 0;
}

static void report_lost(const struct mon_lost *now, struct mon_lost *seen)
{
	uint64_t d = (now->ring - seen->ring) + (now->counters - seen->counters);
	char tbuf[MON_TIME_LEN];
	uint64_t t;

	if (!d)
		return;
	t = clock_rt_ns();
	text_header();
	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso(t, tbuf, sizeof(tbuf)));
	print_string(PRINT_FP, NULL, "%-15s ", mon_time_text(t, tbuf, sizeof(tbuf)));
	print_string(PRINT_JSON, "event", NULL, "lost");
	print_uint(PRINT_ANY, "count", "LOST %" PRIu64 " events (ring buffer full); totals:", now->ring - seen->ring);
	print_uint(PRINT_ANY, "lost_ring", " ring %" PRIu64, now->ring);
	print_uint(PRINT_ANY, "lost_counters", ", counters %" PRIu64, now->counters);
	/* "pending" (destroys prepared ahead, which the programs no longer do): 0, kept for readers of the output */
	print_uint(PRINT_ANY, "lost_pending", ", pending %" PRIu64 "\n", (uint64_t)0);
	out_close_object();
	out_flush();
	*seen = *now;
}

/* --- main loop --------------------------------------------------------------------------------------- */

/* Why the monitor could not start, with what to do about it. */
static void open_error(int err)
{
	if (err == -EPERM)
		pr_err("cannot load the BPF monitor: %s (run as root, or grant them: setcap "
		       "cap_bpf,cap_perfmon+ep)",
		       mon_error());
	else if (err == -ENODEV)
		pr_err("cannot watch RDMA resources: %s", mon_error());
	else
		pr_err("cannot start the BPF monitor: %s (kernel with BTF and ib_core needed; "
		       "RDMACTL_MON_DEBUG=1 shows libbpf's log)",
		       mon_error());
}

/* JSON: the "start" record, which tells a reader that everything from now on is seen (loading takes a while). */
static void print_start(void)
{
	char tbuf[MON_TIME_LEN];

	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso(clock_rt_ns(), tbuf, sizeof(tbuf)));
	print_string(PRINT_JSON, "event", NULL, "start");
	print_string(PRINT_JSON, "mode", NULL, mon_mode(monitor_bpf));
	print_bool(PRINT_JSON, "commit_del", NULL, mon_has_commit_del(monitor_bpf));
	print_int(PRINT_JSON, "pid", NULL, getpid());
	print_string(PRINT_JSON, "device_events", NULL, dev_source);
	out_close_object();
}

/* What the loop does from time to time: --stats' rates, and the prune of the per-process counters. */
static void periodic(double *next_stats, double *last_stats, double *next_prune)
{
	if (mopt.stats && clock_mono_s() >= *next_stats) {
		double t = clock_mono_s();

		print_rates(t - *last_stats, true);
		*last_stats = t;
		*next_stats = t + mopt.stats;
		mon_counters_prune(mon_counters_fd(monitor_bpf));
	}
	if (clock_mono_s() >= *next_prune) {
		/* Exited processes whose counts balance: keeps the map from filling up on a long run. */
		mon_counters_prune(mon_counters_fd(monitor_bpf));
		*next_prune = clock_mono_s() + 10;
	}
}

int cmd_monitor(int argc, char **argv)
{
	struct mon_opts mo = { .events = true, .pin_counters = true, .track_qpids = true, .cb = on_event };
	struct mon_lost lost = { 0 }, seen_lost = { 0 };
	/*
	 * SA_RESTART: a signal must not cut a write() to a slow reader short (stdio drops the rest of its buffer
	 * on EINTR, events counted but never printed); poll() still returns on it, and the loop sees the flag.
	 */
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	struct ledger *l = NULL;
	uint64_t since = 0, ksince = 0;
	struct kq *kq = NULL;
	double next_ledger = 0, next_kq = 0, next_stats, last_stats, end, next_prune;
	int err, idx, ufd;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER | ARGP_NO_HELP, &idx, NULL))
		return EXIT_USAGE;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (mopt.audit)
		return run_audit();

	err = mon_open(&mo, &monitor_bpf);
	if (err) {
		open_error(err);
		return EXIT_FAIL;
	}
	pr_debug("attached with %s%s", mon_mode(monitor_bpf), mon_has_commit_del(monitor_bpf) ? " (+ commit_del)" : "");
	ufd = device_events_open();
	pr_debug("device events from %s", dev_source);
	dev_names_load(); /* after: a device added from now on is in the dump or in the device events */
	if (out_is_json())
		print_start();
	monitor_summary.start = last_stats = clock_mono_s();
	next_prune = monitor_summary.start + 10;
	next_stats = mopt.stats ? monitor_summary.start + mopt.stats : 0;
	end = mopt.duration ? monitor_summary.start + mopt.duration : 0;
	if (mopt.stats)
		print_rates(0, false); /* baseline */
	text_header();

	while (!monitor_exiting) {
		struct pollfd pfd[3] = { { mon_fd(monitor_bpf), POLLIN, 0 }, { ufd, POLLIN, 0 },
					 { rename_fd, POLLIN, 0 } };
		int n = poll(pfd, 3, 100); /* negative fds are ignored */

		if (n < 0 && errno != EINTR) {
			pr_err("poll: %s", strerror(errno));
			break;
		}
		/*
		 * Object events come in bursts, and a write per event costs the host more than the probe does: they
		 * are flushed after each burst (at least every 100 ms), always at a line boundary.
		 */
		out_set_batched(true);
		err = mon_consume(monitor_bpf);
		out_set_batched(false);
		if (err < 0 && err != -EINTR) {
			pr_err("reading events: %s", strerror(-err));
			break;
		}
		if (err > 0)
			out_flush();
		if (ufd >= 0 && (pfd[1].revents & POLLIN))
			device_events_read(ufd);
		if (rename_fd >= 0 && (pfd[2].revents & POLLIN))
			uevent_read(rename_fd, true);
		poll_denials(&l, &since, &next_ledger);
		poll_kdenials(&kq, &ksince, &next_kq);
		mon_lost(monitor_bpf, &lost);
		report_lost(&lost, &seen_lost);
		periodic(&next_stats, &last_stats, &next_prune);
		monitor_baseline();
		if (end && clock_mono_s() >= end)
			break;
	}
	/* Drain what is already in the ring so the summary matches the stream. */
	mon_consume(monitor_bpf);
	out_flush();
	if (l)
		poll_denials(&l, &since, &next_ledger);
	if (kq)
		poll_kdenials(&kq, &ksince, &next_kq);
	mon_lost(monitor_bpf, &lost);
	report_lost(&lost, &seen_lost);
	print_summary(&lost);
	if (l)
		ledger_close(l);
	kq_close(kq);
	if (ufd >= 0)
		close(ufd);
	if (rename_fd >= 0)
		close(rename_fd);
	mon_close(monitor_bpf);
	stats_free();
	return EXIT_OK;
}
