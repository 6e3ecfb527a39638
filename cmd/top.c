// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl top: per-process view of RDMA resources from RDMA netlink, interactive (ncurses) or batch. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>

#include "bpfmon.h"
#include "ledger.h"
#include "out.h"
#include "rdmactl.h"
#include "top_view.h"
#include "util.h"

#define MAX_PIDS 64

static struct {
	bool batch;
	uint64_t count;		/* 0: until interrupted */
	double delay;
	enum top_key key;
	bool reverse;
	pid_t pids[MAX_PIDS];
	size_t npids;
	const char *dev;
	const char *user;
	const char *comm;
	const char *ledger;	/* --ledger PATH; NULL: ledger_default_path() */
} o = { .delay = 2.0, .key = TOP_KEY_QP };

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

enum { OPT_PID = 0x100, OPT_DEV, OPT_USER, OPT_COMM, OPT_LEDGER };

static const struct argp_option options[] = {
	{ "batch", 'b', NULL, 0, "Batch mode: print snapshots as text (or JSON with -j) instead of a screen", 0 },
	{ "iterations", 'n', "COUNT", 0, "Stop after COUNT snapshots (default: until interrupted)", 0 },
	{ "delay", 'd', "SECONDS", 0, "Time between snapshots (default 2; fractions allowed)", 0 },
	{ "sort", 's', "KEY", 0,
	  "Sort by KEY: qp, mr, mr_bytes, cq, pd, ctx, srq, cm_id (largest first), pid, user, comm", 0 },
	{ "reverse", 'r', NULL, 0, "Reverse the sort order", 0 },
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
	char *end;
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
		errno = 0;
		o.delay = strtod(arg, &end);
		if (errno || end == arg || *end || !isfinite(o.delay) || o.delay < 0 || o.delay > 86400)
			argp_error(state, "invalid SECONDS '%s': expected a number from 0 to 86400", arg);
		break;
	case 's':
		idx = match_word(arg, top_key_names, -1);
		if (idx < 0) {
			word_error("sort key", arg, top_key_names, -1, idx);
			exit(EXIT_USAGE);
		}
		o.key = idx;
		break;
	case 'r':
		o.reverse = true;
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
	"create/destroy rates.\v"
	"Interactive keys: q quit, s/S next/previous sort key, r reverse order, any other key refreshes.\n\n"
	"Examples:\n"
	"  rdmactl top                          # full screen, refresh every 2 s\n"
	"  rdmactl top -b -n 1                  # one text snapshot\n"
	"  rdmactl top -b -n 1 -j | jq .totals  # one JSON snapshot\n"
	"  rdmactl top -b -d 5 -j >> rdma.log   # a JSON line every 5 s\n"
	"  rdmactl top -s mr_bytes --user alice --dev rxe0\n"
	"  rdmactl top -b -n 2 -d 1 -j | jq '.processes[] | {pid, quota, rates}'\n",
	children, NULL, NULL,
};

/* --- text rendering (shared by batch and the screen) --------------------------------------------- */

struct lines {
	char **v;
	size_t n;
	size_t header;	/* index of the column header line */
	size_t rows;	/* index of the first process row */
	size_t nrows;
};

static void add_line(struct lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_line(struct lines *l, const char *fmt, ...)
{
	char **v;
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return;
	}
	l->v = v;
	l->v[l->n++] = s;
}

static void free_lines(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void fmt_counts(char *buf, size_t len, const struct top_counts *c, uint32_t unsupported)
{
	static const int order[] = { NL_RES_CTX, NL_RES_PD, NL_RES_CQ, NL_RES_QP, NL_RES_SRQ, NL_RES_MR };
	char size[32];
	size_t off = 0, i;

	for (i = 0; i < ARRAY_SIZE(order); i++) {
		if (unsupported & (1u << order[i]))
			off += snprintf(buf + off, len - off, " %6s", "-");
		else
			off += snprintf(buf + off, len - off, " %6" PRIu64, c->n[order[i]]);
		if (off >= len)
			return;
	}
	snprintf(buf + off, len - off, " %9s %6" PRIu64, fmt_size(c->mr_bytes, size, sizeof(size)),
		 c->n[NL_RES_CM_ID]);
}

/* "ctx 2 pd 3 ... mr 5 (3.1M) cm_id 0" for a device's header line. */
static void fmt_totals(char *buf, size_t len, const struct top_counts *c, uint32_t unsupported)
{
	char size[32];
	size_t off = 0;
	int t;

	buf[0] = '\0';
	for (t = 0; t < NL_RES_NTYPES && off < len; t++) {
		if (unsupported & (1u << t))
			off += snprintf(buf + off, len - off, "%s%s -", t ? " " : "", nl_res_name(t));
		else
			off += snprintf(buf + off, len - off, "%s%s %" PRIu64, t ? " " : "", nl_res_name(t), c->n[t]);
		if (t == NL_RES_MR && off < len)
			off += snprintf(buf + off, len - off, " (%s)", fmt_size(c->mr_bytes, size, sizeof(size)));
	}
}

/* Quota and rate column titles, present only when the snapshot has that data. */
static void extra_header(const struct top_snap *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (s->ledger_joined)
		off += snprintf(buf + off, len - off, " %-11s %-15s %4s", "QP-QUOTA", "MRB-QUOTA", "DENY");
	if (s->rates_joined && off < len)
		snprintf(buf + off, len - off, " %7s %7s %7s", "QP+/s", "QP-/s", "ALL+/s");
}

/* "used/limit" against the tightest limit (used: that scope's use), "used/-" without one. */
static void fmt_quota(const struct top_row *r, int col, bool bytes, char *buf, size_t len)
{
	char a[32], b[32];
	uint64_t used = r->quota.scope[col] >= 0 ? r->quota.scope_used[col] : r->quota.used[col];

	if (bytes) {
		fmt_size(used, a, sizeof(a));
		if (r->quota.scope[col] >= 0)
			fmt_size(r->quota.limit[col], b, sizeof(b));
		else
			snprintf(b, sizeof(b), "-");
	} else {
		snprintf(a, sizeof(a), "%" PRIu64, used);
		if (r->quota.scope[col] >= 0)
			snprintf(b, sizeof(b), "%" PRIu64, r->quota.limit[col]);
		else
			snprintf(b, sizeof(b), "-");
	}
	snprintf(buf, len, "%s/%s", a, b);
}

static void extra_cols(const struct top_snap *s, const struct top_row *r, char *buf, size_t len)
{
	char qp[48], mrb[72], den[24];
	size_t off = 0;

	buf[0] = '\0';
	if (s->ledger_joined) {
		if (r->kind != TOP_PROC || !r->quota.joined) {
			qp[0] = mrb[0] = den[0] = '\0';
		} else if (!r->quota.managed) {
			snprintf(qp, sizeof(qp), "unmanaged");
			snprintf(mrb, sizeof(mrb), "-");
			snprintf(den, sizeof(den), "%" PRIu64, r->quota.denials);
		} else {
			fmt_quota(r, NL_RES_QP, false, qp, sizeof(qp));
			fmt_quota(r, NL_RES_NTYPES, true, mrb, sizeof(mrb));
			snprintf(den, sizeof(den), "%" PRIu64, r->quota.denials);
		}
		off += snprintf(buf + off, len - off, " %-11s %-15s %4s", qp, mrb, den);
	}
	if (s->rates_joined && off < len) {
		if (r->kind == TOP_PROC && r->rate.joined)
			snprintf(buf + off, len - off, " %7.1f %7.1f %7.1f", r->rate.create[NL_RES_QP],
				 r->rate.destroy[NL_RES_QP], r->rate.create_total);
		else
			snprintf(buf + off, len - off, " %7s %7s %7s", "", "", "");
	}
}

static void render(const struct top_snap *s, struct lines *l, bool screen)
{
	char when[32], counts[160], ports[256], extra[128];
	struct tm tm;
	unsigned int i, p;
	uint32_t unsup = 0;
	size_t r;
	int t;

	localtime_r(&s->time.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	add_line(l, "rdmactl top - %s - %u device%s, %zu row%s - sort %s%s - %.1f ms%s", when, s->ndevs,
		 s->ndevs == 1 ? "" : "s", s->nrows, s->nrows == 1 ? "" : "s", top_key_names[o.key],
		 o.reverse ? " (reversed)" : "", s->elapsed_ms, screen ? " - q quit, s/S sort, r reverse" : "");
	for (i = 0; i < s->ndevs; i++) {
		const struct top_dev *d = &s->devs[i];
		size_t off = 0;
		uint64_t hidden = 0;

		ports[0] = '\0';
		for (p = 0; p < d->nports && off < sizeof(ports); p++)
			off += snprintf(ports + off, sizeof(ports) - off, "%sport %u %s%s%s%s", p ? ", " : "",
					d->ports[p].port, nl_port_state_name(d->ports[p].state),
					d->ports[p].netdev[0] ? " (" : "", d->ports[p].netdev,
					d->ports[p].netdev[0] ? ")" : "");
		if (d->has_summary)
			for (t = 0; t < NL_RES_NTYPES; t++)
				if (d->summary.curr[t] > d->totals.n[t])
					hidden += d->summary.curr[t] - d->totals.n[t];
		fmt_totals(counts, sizeof(counts), &d->totals, d->unsupported);
		if (hidden)
			add_line(l, "%s: %s; %s; %" PRIu64 " more counted by the kernel but not listed (other PID "
				    "namespace, or created/destroyed meanwhile)", d->dev.name, ports, counts, hidden);
		else
			add_line(l, "%s: %s; %s", d->dev.name, ports, counts);
		unsup |= d->unsupported;
	}
	if (!s->privileged)
		add_line(l, "not root: the kernel leaves out MR keys (not shown here); as for root, objects of other "
			    "PID namespaces are not listed, and /proc may hide other users' processes");
	if (s->unresolved)
		add_line(l, "%u creating thread%s not found in /proc (exited, or hidden): shown under its own id",
			 s->unresolved, s->unresolved == 1 ? "" : "s");
	add_line(l, "%s", "");
	l->header = l->n;
	extra_header(s, counts, sizeof(counts));
	add_line(l, "%8s %-10s %-16s %6s %6s %6s %6s %6s %6s %9s %6s%s", "PID", "USER", "COMM", "CTX", "PD", "CQ",
		 "QP", "SRQ", "MR", "MR-BYTES", "CM_ID", counts);
	l->rows = l->n;
	for (r = 0; r < s->nrows; r++) {
		const struct top_row *row = &s->rows[r];
		char pid[16];

		if (row->kind == TOP_PROC)
			snprintf(pid, sizeof(pid), "%d", (int)row->pid);
		else
			snprintf(pid, sizeof(pid), "%s", row->kind == TOP_KERNEL ? "[kernel]" : "?");
		fmt_counts(counts, sizeof(counts), &row->c, unsup);
		extra_cols(s, row, extra, sizeof(extra));
		add_line(l, "%8s %-10.10s %-16.16s%s%s", pid, row->user[0] ? row->user : "-", row->comm, counts, extra);
	}
	l->nrows = s->nrows;
	for (i = 0; i < s->ndevs; i++) {
		fmt_counts(counts, sizeof(counts), &s->devs[i].totals, s->devs[i].unsupported);
		add_line(l, "%8s %-10.10s %-16.16s%s", "total", "", s->devs[i].dev.name, counts);
	}
}

/* --- modes ---------------------------------------------------------------------------------------- */

static void snapshot_error(struct top_ctx *t, int ret)
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
} extra;

static void join_ledger(struct top_snap *s, bool quiet)
{
	int ret = 0;

	if (!extra.ledger)
		ret = ledger_open(o.ledger, 0, &extra.ledger);
	if (!ret) {
		ret = top_join_ledger(s, extra.ledger);
		if (ret && !quiet && ret != extra.ledger_err)
			pr_debug("no quota columns: reading the ledger failed: %s", strerror(-ret));
	} else if (!quiet && ret != extra.ledger_err) {
		pr_debug("no quota columns: %s", ledger_error());
	}
	extra.ledger_err = ret;
}

static void join_rates(struct top_snap *s, bool quiet)
{
	struct top_counters cur;
	int fd = -1, ret;

	/* Opened anew each time: a monitor started (or restarted) meanwhile pins a new map. */
	ret = mon_counters_open_pinned(&fd);
	if (!ret) {
		ret = top_counters_read(fd, &cur);
		close(fd);
	}
	if (ret) {
		if (!quiet && ret != extra.rates_err)
			pr_debug("no rates: %s", ret == -ENOENT ?
				 "no BPF counters pinned at " MON_PIN_COUNTERS " (start 'rdmactl monitor')" : strerror(-ret));
		extra.rates_err = ret;
		if (extra.have_prev)
			top_counters_free(&extra.prev);
		extra.have_prev = false;
		return;
	}
	extra.rates_err = 0;
	if (extra.have_prev) {
		top_join_rates(s, &extra.prev, &cur);
		top_counters_free(&extra.prev);
	} else if (!quiet) {
		pr_debug("rates from the next snapshot on (they need two reads of the BPF counters)");
	}
	extra.prev = cur;
	extra.have_prev = true;
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
static int snapshot(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, bool quiet)
{
	int ret, tries = 0;

	/* A device removed, or a dump the kernel marked inconsistent, while we looked: look again. */
	while ((ret = top_snapshot(t, f, s)) == -ENODEV || ret == -EINTR) {
		top_snap_free(s);
		if (++tries == 3)
			break;
	}
	if (ret) {
		if (!quiet)
			snapshot_error(t, ret);
		top_snap_free(s);
		return ret;
	}
	join_ledger(s, quiet);
	join_rates(s, quiet);
	top_sort(s, o.key, o.reverse);
	return 0;
}

static void sleep_s(double secs)
{
	struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };

	while (!exiting && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Snapshots one after another: text views apart by a blank line, or a JSON object a line. */
static int batch(struct top_ctx *t, const struct top_filter *f, struct top_snap *first)
{
	struct top_view v = { .key = o.key, .reverse = o.reverse };
	struct top_snap s = *first;
	uint64_t i;

	for (i = 0;; i++) {
		if (i) {
			if (snapshot(t, f, &s, false))
				return EXIT_FAIL;
			print_nl();
		}
		top_print(&s, &v, NULL);
		fflush(stdout);
		top_snap_free(&s);
		if ((o.count && i + 1 >= o.count) || exiting)
			break;
		sleep_s(o.delay);
		if (exiting)
			break;
	}
	return ferror(stdout) ? EXIT_FAIL : EXIT_OK;
}

static void draw(const struct top_snap *s)
{
	struct lines l = { 0 };
	int y = 0, maxy = LINES, maxx = COLS;
	size_t k, ndev_tot = s->ndevs;
	size_t room;

	erase();
	render(s, &l, true);
	/* Header, then as many rows as fit above the per-device totals at the bottom. */
	for (k = 0; k < l.rows && y < maxy; k++, y++) {
		if (k == l.header)
			attron(A_REVERSE);
		mvaddnstr(y, 0, l.v[k], maxx);
		if (k == l.header) {
			for (int x = (int)strlen(l.v[k]); x < maxx; x++)
				addch(' ');
			attroff(A_REVERSE);
		}
	}
	room = maxy > y + (int)ndev_tot ? (size_t)(maxy - y) - ndev_tot : 0;
	for (k = 0; k < l.nrows && k < room; k++, y++)
		mvaddnstr(y, 0, l.v[l.rows + k], maxx);
	attron(A_BOLD);
	for (k = l.rows + l.nrows; k < l.n && y < maxy; k++, y++)
		mvaddnstr(y, 0, l.v[k], maxx);
	attroff(A_BOLD);
	refresh();
	free_lines(&l);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int interactive(struct top_ctx *t, const struct top_filter *f, struct top_snap *first)
{
	struct top_snap s = *first;
	double delay = o.delay < 0.1 ? 0.1 : o.delay, next;
	SCREEN *scr;
	int ch, err = 0;

	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		pr_err("cannot start the screen: unknown terminal '%s' (use -b for batch mode)",
		       getenv("TERM") ? getenv("TERM") : "");
		top_snap_free(&s);
		return EXIT_FAIL;
	}
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	draw(&s);
	next = now_s() + delay;
	while (!exiting) {
		double left = next - now_s();

		timeout(left > 0 ? (int)(left * 1000) + 1 : 0);
		ch = getch();
		if (ch == 'q' || ch == 'Q')
			break;
		if (ch == 's' || ch == '>' || ch == 'S' || ch == '<') {
			o.key = (o.key + (ch == 's' || ch == '>' ? 1 : TOP_NKEYS - 1)) % TOP_NKEYS;
			top_sort(&s, o.key, o.reverse);
			draw(&s);
			continue;
		}
		if (ch == 'r') {
			o.reverse = !o.reverse;
			top_sort(&s, o.key, o.reverse);
			draw(&s);
			continue;
		}
		if (ch == KEY_RESIZE) {
			draw(&s);
			continue;
		}
		if (ch == ERR && now_s() < next)
			continue;
		top_snap_free(&s);
		err = snapshot(t, f, &s, true);
		if (err)
			break;
		draw(&s);
		next = now_s() + delay;
	}
	top_snap_free(&s);
	endwin();
	delscreen(scr);
	if (err) {
		/* Only now: while the screen is up, stderr would be painted over. */
		snapshot_error(t, err);
		return EXIT_FAIL;
	}
	return EXIT_OK;
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

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &idx, NULL))
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
	if (snapshot(t, &f, &s, false)) {
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
		ret = interactive(t, &f, &s);
	} else {
		/* Not a terminal (or -j): batch mode; without -d, back-to-back snapshots are pointless. */
		ret = batch(t, &f, &s);
	}
	top_close(t);
	extra_free();
	return ret;
}
