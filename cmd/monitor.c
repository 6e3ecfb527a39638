// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: live RDMA resource events (BPF), device events, ledger refusals; --audit for bypass. */
#include <errno.h>
#include <inttypes.h>
#include <linux/netlink.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "bpfmon.h"
#include "ledger.h"
#include "nl.h"
#include "nlmon.h"
#include <json-c/json.h>

#include "out.h"
#include "rdmactl.h"
#include "top.h"
#include "util.h"

static struct {
	pid_t pid;
	int type; /* -1: all */
	const char *dev;
	double stats;    /* seconds between rate reports; 0: off */
	bool audit;
	double interval; /* audit period */
	int enforce_sig; /* 0: report only */
	double duration; /* 0: until interrupted */
} o = { .type = -1, .interval = 2.0 };

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
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

static int parse_seconds(const char *arg, double min, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < min || v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

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
		if (parse_pid(arg, false, &o.pid))
			argp_error(state, "invalid PID '%s'", arg);
		break;
	case OPT_TYPE:
		idx = match_word(arg, mon_type_names, -1);
		if (idx < 0)
			argp_error(state, "%s KIND '%s' (one of: pd, cq, qp, cm_id, mr, ctx, counter, srq)",
				   idx == -2 ? "ambiguous" : "unknown", arg);
		o.type = idx;
		break;
	case OPT_DEV:
		if (!*arg || strlen(arg) >= MON_DEV_LEN)
			argp_error(state, "invalid DEV '%s'", arg);
		o.dev = arg;
		break;
	case OPT_STATS:
		o.stats = 1.0;
		if (arg && parse_seconds(arg, 0.1, &o.stats))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0.1 to 86400", arg);
		break;
	case OPT_DURATION:
		if (parse_seconds(arg, 0.001, &o.duration))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0.001 to 86400", arg);
		break;
	case OPT_AUDIT:
		o.audit = true;
		break;
	case OPT_INTERVAL:
		if (parse_seconds(arg, 0.1, &o.interval))
			argp_error(state, "invalid SECONDS '%s': expected a number from 0.1 to 86400", arg);
		break;
	case OPT_ENFORCE:
		o.enforce_sig = parse_signal(arg);
		if (o.enforce_sig < 0)
			argp_error(state, "invalid --enforce '%s': expected signal=TERM (or KILL, INT, HUP, a number)",
				   arg);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (o.enforce_sig && !o.audit)
			argp_error(state, "--enforce needs --audit");
		if (o.audit && o.stats)
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
	"ib_core), with device events and ledger refusals; or audit for processes that bypass the ledger.\v"
	"Needs root or CAP_BPF and CAP_PERFMON, and ib_core loaded. Ctrl-C prints a summary and exits 0.\n\n"
	"Examples:\n"
	"  rdmactl monitor                      every event, one line each\n"
	"  rdmactl monitor -j --type qp         QP events as JSON lines\n"
	"  rdmactl monitor --pid 1234 --dev rxe0\n"
	"  rdmactl monitor --stats 2            per-process create/destroy rates every 2 s\n"
	"  rdmactl monitor --audit --enforce signal=TERM\n",
	children, NULL, NULL,
};

/* --- time -------------------------------------------------------------------------------------------- */

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t now_rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* "12:00:01.123456" (local) for text, "2026-01-02T12:00:01.123456Z" for JSON. */
static const char *fmt_time(uint64_t rt_ns, bool iso, char *buf, size_t len)
{
	time_t sec = rt_ns / 1000000000ULL;
	struct tm tm;
	size_t n;

	if (iso)
		return mon_time_iso(rt_ns, buf, len);
	localtime_r(&sec, &tm);
	n = strftime(buf, len, "%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06" PRIu64, (uint64_t)(rt_ns % 1000000000ULL / 1000));
	return buf;
}

static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* A double with a fixed number of decimals in JSON (json-c would print 6.1849999999999996). */
static struct json_object *json_fixed(double v, int decimals)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

/* --- summary ----------------------------------------------------------------------------------------- */

struct proc_sum {
	pid_t tgid;
	char comm[MON_COMM_LEN];
	uint64_t n[2][RESTRACK_NTYPES]; /* [0] create, [1] destroy */
};

static struct {
	struct proc_sum *procs;
	size_t n, cap;
	uint64_t types[2][RESTRACK_NTYPES];
	uint64_t events, devices, denials;
	double start;
} sum;

static struct proc_sum *proc_sum(pid_t tgid, const char *comm)
{
	static size_t last;
	struct proc_sum *p;
	size_t i;

	if (last < sum.n && sum.procs[last].tgid == tgid)
		return &sum.procs[last];
	for (i = 0; i < sum.n; i++)
		if (sum.procs[i].tgid == tgid)
			return &sum.procs[last = i];
	if (sum.n == sum.cap) {
		size_t cap = sum.cap ? sum.cap * 2 : 64;
		p = realloc(sum.procs, cap * sizeof(*p));
		if (!p)
			return NULL;
		sum.procs = p;
		sum.cap = cap;
	}
	p = &sum.procs[sum.n];
	memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	last = sum.n++;
	return p;
}

static struct json_object *type_counts_json(const uint64_t n[2][RESTRACK_NTYPES])
{
	struct json_object *o = json_object_new_object(), *t;
	int i;

	for (i = 0; i < RESTRACK_NTYPES; i++) {
		if (!n[0][i] && !n[1][i])
			continue;
		t = json_object_new_object();
		json_object_object_add(t, "create", json_object_new_uint64(n[0][i]));
		json_object_object_add(t, "destroy", json_object_new_uint64(n[1][i]));
		json_object_object_add(o, mon_type_name(i), t);
	}
	return o;
}

static void print_type_counts(const uint64_t n[2][RESTRACK_NTYPES])
{
	int i;

	for (i = 0; i < RESTRACK_NTYPES; i++)
		if (n[0][i] || n[1][i])
			printf(" %s +%" PRIu64 "/-%" PRIu64, mon_type_name(i), n[0][i], n[1][i]);
}

static void print_summary(const struct mon_lost *lost)
{
	struct json_object *j, *procs, *p, *l;
	double dur = now_mono() - sum.start;
	size_t i;

	if (out_is_json()) {
		j = json_object_new_object();
		json_object_object_add(j, "event", json_object_new_string("summary"));
		json_object_object_add(j, "duration_s", json_fixed(dur, 3));
		json_object_object_add(j, "events", json_object_new_uint64(sum.events));
		json_object_object_add(j, "device_events", json_object_new_uint64(sum.devices));
		json_object_object_add(j, "denials", json_object_new_uint64(sum.denials));
		l = json_object_new_object();
		json_object_object_add(l, "ring", json_object_new_uint64(lost ? lost->ring : 0));
		json_object_object_add(l, "counters", json_object_new_uint64(lost ? lost->counters : 0));
		json_object_object_add(l, "pending", json_object_new_uint64(lost ? lost->pending : 0));
		json_object_object_add(j, "lost", l);
		json_object_object_add(j, "types", type_counts_json((const uint64_t(*)[RESTRACK_NTYPES])sum.types));
		procs = json_object_new_array();
		for (i = 0; i < sum.n; i++) {
			p = json_object_new_object();
			json_object_object_add(p, "pid", json_object_new_int(sum.procs[i].tgid));
			json_object_object_add(p, "comm", json_object_new_string(sum.procs[i].comm));
			json_object_object_add(p, "types",
					       type_counts_json((const uint64_t(*)[RESTRACK_NTYPES])sum.procs[i].n));
			json_object_array_add(procs, p);
		}
		json_object_object_add(j, "processes", procs);
		out_json(j);
		return;
	}
	printf("\nSummary: %" PRIu64 " events in %.1f s, %" PRIu64 " device events, %" PRIu64 " denials, lost %" PRIu64
	       " (ring %" PRIu64 ", counters %" PRIu64 ", pending %" PRIu64 ")\n",
	       sum.events, dur, sum.devices, sum.denials,
	       lost ? lost->ring + lost->counters + lost->pending : 0, lost ? lost->ring : 0,
	       lost ? lost->counters : 0, lost ? lost->pending : 0);
	printf("  %-22s", "all (create/destroy)");
	print_type_counts((const uint64_t(*)[RESTRACK_NTYPES])sum.types);
	printf("\n");
	for (i = 0; i < sum.n; i++) {
		printf("  %-7d %-14s", (int)sum.procs[i].tgid, sum.procs[i].comm);
		print_type_counts((const uint64_t(*)[RESTRACK_NTYPES])sum.procs[i].n);
		printf("\n");
	}
	fflush(stdout);
}

/* --- events ------------------------------------------------------------------------------------------ */

static struct mon *mon;
static bool header_done;

/*
 * Like out_json() but without the flush: object events come in bursts, and a write per event costs the
 * host more than the probe does. The main loop flushes after each burst (at least every 100 ms), always
 * at a line boundary, so a reader never sees half an object.
 */
static void stream_json(struct json_object *j)
{
	int flags = out_pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;

	fputs(json_object_to_json_string_ext(j, flags | JSON_C_TO_STRING_NOSLASHESCAPE), stdout);
	fputc('\n', stdout);
	json_object_put(j);
}

static void text_header(void)
{
	if (header_done || out_is_json() || o.stats)
		return;
	printf("%-15s %7s %-15s %-8s %-7s %-8s %8s  %s\n", "TIME", "PID", "COMM", "OP", "TYPE", "DEV", "ID",
	       "DETAIL");
	fflush(stdout);
	header_done = true;
}

/* --- device names ----------------------------------------------------------------------------------- */

/*
 * Device names by index. Object events carry only the device's index (reading its name costs the probe a
 * helper call per event), and netlink netdev events only the index too. The table starts from an RDMA
 * netlink dump and follows adds, renames and removals. A removed device keeps its entry (marked gone): the
 * destroys of its objects can still be in the ring when the removal is read. An index not in the table
 * (a device added an instant ago) makes one new dump if the last one began before the event happened (the
 * device existed then, so a dump from after it lists the device unless it is gone already), else at
 * most every 100 ms. Timing alone is not enough: a device's add notification can come, and be followed
 * by a dump, before the device is registered and listed, while its first objects follow within 100 ms.
 */
static struct {
	uint32_t index;
	bool gone;
	char name[MON_DEV_LEN];
} dev_names[256];
static size_t ndev_names;
static double dev_names_loaded = -1;

static const char *dev_name_find(uint32_t index)
{
	size_t i;

	for (i = 0; i < ndev_names; i++)
		if (dev_names[i].index == index)
			return dev_names[i].name;
	return NULL;
}

static void dev_name_set(uint32_t index, const char *name)
{
	size_t i;

	for (i = 0; i < ndev_names && dev_names[i].index != index; i++)
		;
	if (i == ndev_names) {
		if (ndev_names == ARRAY_SIZE(dev_names)) {
			/* full: forget a removed device (its objects' destroys are long read) */
			for (i = 0; i < ndev_names && !dev_names[i].gone; i++)
				;
			if (i == ndev_names)
				return;
		} else {
			ndev_names++;
		}
	}
	dev_names[i].index = index;
	dev_names[i].gone = false;
	snprintf(dev_names[i].name, sizeof(dev_names[i].name), "%s", name);
}

static void dev_name_rename(const char *old, const char *name)
{
	size_t i;

	for (i = 0; i < ndev_names; i++)
		if (!dev_names[i].gone && !strcmp(dev_names[i].name, old)) {
			snprintf(dev_names[i].name, sizeof(dev_names[i].name), "%s", name);
			return;
		}
}

/* A removed device, by index (netlink) or by name (uevent: index NULL). */
static void dev_name_gone(const uint32_t *index, const char *name)
{
	size_t i;

	for (i = 0; i < ndev_names; i++)
		if (!dev_names[i].gone && (index ? dev_names[i].index == *index : !strcmp(dev_names[i].name, name))) {
			dev_names[i].gone = true;
			return;
		}
}

static int dev_name_cb(const struct nl_dev *d, void *arg)
{
	(void)arg;
	dev_name_set(d->index, d->name);
	return 0;
}

static void dev_names_load(void)
{
	struct nl_handlers h = { .dev = dev_name_cb };
	struct nl_sock *s;
	int err;

	dev_names_loaded = now_mono(); /* before the dump: whatever happened until now is in it */
	err = nl_open(&s);
	if (!err) {
		err = nl_dev_dump(s, &h);
		nl_close(s);
	}
	if (err)
		pr_debug("device names: RDMA netlink: %s", strerror(-err));
}

/*
 * The name of an object event's device: "" for none, or for a device gone before we could learn its name.
 * at: when the event happened (CLOCK_MONOTONIC seconds), or -1 when unknown.
 */
static const char *dev_name_of(uint32_t index, double at)
{
	const char *name;

	if (index == MON_DEV_NONE)
		return "";
	name = dev_name_find(index);
	if (!name && (dev_names_loaded <= at || now_mono() - dev_names_loaded >= 0.1)) {
		dev_names_load();
		name = dev_name_find(index);
	}
	return name ? name : "";
}

static int on_event(const struct mon_event *e, void *arg)
{
	const char *op = mon_op_name(e->op), *dev;
	char tbuf[48], detail[128], sz[32];
	struct proc_sum *p;
	uint64_t rt;

	(void)arg;
	if (o.pid && (pid_t)e->tgid != o.pid)
		return 0;
	if ((o.type >= 0 && e->type != o.type) || e->type >= RESTRACK_NTYPES)
		return 0;
	dev = dev_name_of(e->dev_index, e->ts_ns / 1e9);
	if (o.dev && strcmp(dev, o.dev))
		return 0;
	sum.events++;
	sum.types[e->op == MON_OP_DESTROY][e->type]++;
	p = proc_sum(e->tgid, e->user ? e->comm : "[kernel]");
	if (p)
		p->n[e->op == MON_OP_DESTROY][e->type]++;
	if (o.stats)
		return 0;
	rt = e->ts_ns + mon_realtime_offset(mon);
	if (out_is_json()) {
		char buf[MON_JSON_LEN];
		int n;

		/* The hot path: no json-c objects, straight into stdio (-p keeps json-c's pretty printer). */
		n = out_pretty ? -ENOSPC : mon_event_json(e, dev, rt, buf, sizeof(buf));
		if (n < 0) {
			stream_json(mon_event_json_object(e, dev, rt));
		} else {
			buf[n] = '\n';
			fwrite_unlocked(buf, 1, n + 1, stdout);
		}
		return 0;
	}
	text_header();
	detail[0] = 0;
	if (!e->user)
		snprintf(detail, sizeof(detail), "kernel");
	else if (e->tid != e->tgid)
		snprintf(detail, sizeof(detail), "tid %u", e->tid);
	if (e->type == RESTRACK_MR)
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail), "%slen %s", detail[0] ? " " : "",
			 fmt_size(e->mr_len, sz, sizeof(sz)));
	if (util_verbose)
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail), "%shook %s ctx %u",
			 detail[0] ? " " : "", mon_hook_name(e->hook), e->cur_tgid);
	printf("%-15s %7u %-15.15s %-8s %-7s %-8.8s %8u  %s\n", fmt_time(rt, false, tbuf, sizeof(tbuf)), e->tgid,
	       e->comm, op, mon_type_name(e->type), dev[0] ? dev : "-", e->id, detail);
	return 0;
}

static void report_lost(const struct mon_lost *now, struct mon_lost *seen)
{
	uint64_t d = (now->ring - seen->ring) + (now->counters - seen->counters) + (now->pending - seen->pending);
	char tbuf[48];

	if (!d)
		return;
	if (out_is_json()) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "time", json_object_new_string(fmt_time(now_rt_ns(), true, tbuf, sizeof(tbuf))));
		json_object_object_add(j, "event", json_object_new_string("lost"));
		json_object_object_add(j, "count", json_object_new_uint64(now->ring - seen->ring));
		json_object_object_add(j, "lost_ring", json_object_new_uint64(now->ring));
		json_object_object_add(j, "lost_counters", json_object_new_uint64(now->counters));
		json_object_object_add(j, "lost_pending", json_object_new_uint64(now->pending));
		out_json(j);
	} else {
		text_header();
		printf("%-15s LOST %" PRIu64 " events (ring buffer full); totals: ring %" PRIu64 ", counters %" PRIu64
		       ", pending %" PRIu64 "\n",
		       fmt_time(now_rt_ns(), false, tbuf, sizeof(tbuf)), now->ring - seen->ring, now->ring,
		       now->counters, now->pending);
		fflush(stdout);
	}
	*seen = *now;
}

/* --- device events: RDMA netlink notifications, or kernel uevents of the infiniband class ------------ */

/* Where device events come from: "netlink", "uevent" or "none" (for -v and the JSON "start" event). */
static const char *dev_source = "none";
/* With the netlink source: the uevent socket that renames come from (-1 none). */
static int rename_fd = -1;

/* One device event. ne: the netlink notification (NULL for a uevent); old: the previous name of a rename. */
static void print_device(const char *action, const char *dev, const char *old, const struct nlmon_event *ne)
{
	char tbuf[48], detail[128];
	bool netdev = ne && (ne->type == NLMON_NETDEV_ATTACH || ne->type == NLMON_NETDEV_DETACH ||
			     ne->type == NLMON_NETDEV_RENAME);

	if (o.dev && strcmp(o.dev, dev) && (!old || strcmp(o.dev, old)))
		return;
	sum.devices++;
	if (o.stats)
		return;
	if (out_is_json()) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "time", json_object_new_string(fmt_time(now_rt_ns(), true, tbuf, sizeof(tbuf))));
		json_object_object_add(j, "event", json_object_new_string("device"));
		json_object_object_add(j, "action", json_object_new_string(action));
		json_object_object_add(j, "dev", json_object_new_string(dev));
		if (old)
			json_object_object_add(j, "old_name", json_object_new_string(old));
		if (ne && (ne->has & NLMON_HAS_DEV))
			json_object_object_add(j, "dev_index", json_object_new_int64(ne->dev_index));
		if (ne && (ne->has & NLMON_HAS_PORT))
			json_object_object_add(j, "port", json_object_new_int64(ne->port));
		if (ne && (ne->has & NLMON_HAS_NDEV_NAME))
			json_object_object_add(j, "netdev", json_object_new_string(ne->ndev_name));
		if (ne && (ne->has & NLMON_HAS_NDEV))
			json_object_object_add(j, "netdev_index", json_object_new_int64(ne->ndev_index));
		if (ne && !nlmon_type_name(ne->type))
			json_object_object_add(j, "event_type", json_object_new_int64(ne->type));
		json_object_object_add(j, "source", json_object_new_string(ne ? "netlink" : "uevent"));
		out_json(j);
		return;
	}
	text_header();
	detail[0] = 0;
	if (old)
		snprintf(detail, sizeof(detail), "was %s", old);
	if (netdev)
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail), "%sport %u netdev %s (%u)",
			 detail[0] ? " " : "", ne->port, ne->has & NLMON_HAS_NDEV_NAME ? ne->ndev_name : "?",
			 ne->ndev_index);
	/* "netdev_attached" -> "attached" under TYPE "netdev" keeps the columns */
	printf("%-15s %7s %-15s %-8s %-7s %-8.8s %8s  %s\n", fmt_time(now_rt_ns(), false, tbuf, sizeof(tbuf)), "-",
	       "-", netdev ? action + 7 : action, netdev ? "netdev" : "device", dev[0] ? dev : "-", "-", detail);
	fflush(stdout);
}

static int on_nlmon(const struct nlmon_event *e, void *arg)
{
	char unknown[32];
	const char *name = NULL;

	(void)arg;
	if (e->has & NLMON_HAS_NAME)
		name = e->dev_name;
	else if (e->has & NLMON_HAS_DEV)
		name = dev_name_of(e->dev_index, -1); /* netdev renames carry only the index */
	if (!name)
		name = "";
	switch (e->type) {
	case NLMON_REGISTER:
		dev_name_set(e->dev_index, name);
		print_device("added", name, NULL, e);
		break;
	case NLMON_UNREGISTER:
		print_device("removed", name, NULL, e);
		dev_name_gone(&e->dev_index, NULL);
		break;
	case NLMON_RENAME:
		/* printed from the uevent (see device_events_open); only the name table follows */
		dev_name_set(e->dev_index, name);
		break;
	case NLMON_NETDEV_ATTACH:
		print_device("netdev_attached", name, NULL, e);
		break;
	case NLMON_NETDEV_DETACH:
		print_device("netdev_detached", name, NULL, e);
		break;
	case NLMON_NETDEV_RENAME:
		print_device("netdev_renamed", name, NULL, e);
		break;
	default:
		snprintf(unknown, sizeof(unknown), "event_%u", e->type);
		print_device(unknown, name, NULL, e);
	}
	return 0;
}

/*
 * Kernels with RDMA netlink notifications (RDMA_NL_GROUP_NOTIFY; mainline since 2024) say so in SYS_GET:
 * device register/unregister/rename and netdev attach/detach/rename come from there. Linux 6.1 has none,
 * so device add/remove/rename come from the kernel's kobject uevents (SUBSYSTEM=infiniband), which every
 * kernel sends whether or not udevd runs. RDMACTL_MON_UEVENT=1 forces the uevents.
 * Renames always come from the uevents: not every kernel with the notifications sends one for a rename
 * (6.12 does not), and taking them from one place reports each rename once on every kernel.
 */
static int uevent_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int device_events_open(void)
{
	const char *force = getenv("RDMACTL_MON_UEVENT");
	int fd, err;

	if (!(force && *force && strcmp(force, "0"))) {
		err = nlmon_open(&fd);
		if (!err) {
			dev_source = "netlink";
			rename_fd = uevent_open();
			if (rename_fd < 0)
				pr_debug("no device renames: %s", strerror(-rename_fd));
			return fd;
		}
		pr_debug("no RDMA netlink device notifications (%s): using uevents",
			 err == -EOPNOTSUPP ? "kernel without them" : strerror(-err));
	}
	fd = uevent_open();
	if (fd < 0) {
		pr_debug("no device events: %s", strerror(-fd));
		return fd;
	}
	dev_source = "uevent";
	return fd;
}

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* Kernel uevents of the infiniband class; renames_only with the netlink source (which has the rest). */
static void uevent_read(int fd, bool renames_only)
{
	char buf[8192];
	struct sockaddr_nl sa;
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr msg = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	while ((n = recvmsg(fd, &msg, 0)) > 0) {
		const char *action = NULL, *devpath = NULL, *subsys = NULL, *old = NULL, *what;
		char *s;

		if (sa.nl_pid != 0) /* only the kernel, never another process */
			continue;
		buf[n] = 0;
		for (s = buf; s < buf + n; s += strlen(s) + 1) {
			if (!strncmp(s, "ACTION=", 7))
				action = s + 7;
			else if (!strncmp(s, "DEVPATH=", 8))
				devpath = s + 8;
			else if (!strncmp(s, "SUBSYSTEM=", 10))
				subsys = s + 10;
			else if (!strncmp(s, "DEVPATH_OLD=", 12))
				old = s + 12;
		}
		if (!action || !devpath || !subsys || strcmp(subsys, "infiniband"))
			continue;
		if (!strcmp(action, "add"))
			what = "added";
		else if (!strcmp(action, "remove"))
			what = "removed";
		else if (!strcmp(action, "move"))
			what = "renamed";
		else
			continue; /* change, bind...: not a lifetime event */
		if (renames_only && strcmp(what, "renamed"))
			continue;
		/* the name table (netlink adds and removes keep it by index themselves) */
		if (!strcmp(what, "renamed")) {
			if (old)
				dev_name_rename(basename_of(old), basename_of(devpath));
		} else if (!strcmp(what, "added")) {
			dev_names_load(); /* the uevent has no index */
		} else {
			dev_name_gone(NULL, basename_of(devpath));
		}
		print_device(what, basename_of(devpath), old ? basename_of(old) : NULL, NULL);
	}
}

static void device_events_read(int fd)
{
	int err;

	if (strcmp(dev_source, "netlink")) {
		uevent_read(fd, false);
		return;
	}
	err = nlmon_read(fd, on_nlmon, NULL);
	if (err == -ENOBUFS)
		pr_err("device notifications overran the socket buffer: some were lost");
	else if (err < 0 && err != -EAGAIN)
		pr_debug("device notifications: %s", strerror(-err));
}

/* --- ledger refusals --------------------------------------------------------------------------------- */

static int skip_denial(const struct ledger_denial_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
	return 0;
}

static int on_denial(const struct ledger_denial_event *ev, void *arg)
{
	const char *kind = ledger_kind_name(ev->d.kind);
	char comm[64], text[256], tbuf[48];

	(void)arg;
	if (o.pid && ev->d.pid != o.pid)
		return 0;
	if (o.type >= 0 && (!kind || strcmp(kind, mon_type_name(o.type))))
		return 0;
	sum.denials++;
	if (o.stats)
		return 0;
	read_comm(ev->d.pid, comm, sizeof(comm));
	ledger_format_denial(&ev->d, text, sizeof(text));
	if (out_is_json()) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "time", json_object_new_string(fmt_time(ev->time_ns, true, tbuf, sizeof(tbuf))));
		json_object_object_add(j, "time_ns", json_object_new_uint64(ev->time_ns));
		json_object_object_add(j, "event", json_object_new_string("denied"));
		json_object_object_add(j, "type", json_object_new_string(kind ? kind : "?"));
		json_object_object_add(j, "pid", json_object_new_int(ev->d.pid));
		json_object_object_add(j, "comm", json_object_new_string(comm));
		json_object_object_add(j, "scope", json_object_new_string(ledger_scope_type_name(ev->d.scope.type)));
		if (ev->d.job[0])
			json_object_object_add(j, "job", json_object_new_string(ev->d.job));
		json_object_object_add(j, "amount", json_object_new_uint64(ev->d.amount));
		json_object_object_add(j, "usage", json_object_new_uint64(ev->d.usage));
		json_object_object_add(j, "limit", json_object_new_uint64(ev->d.limit));
		if (ev->d.env[0])
			json_object_object_add(j, "limit_env", json_object_new_string(ev->d.env));
		json_object_object_add(j, "seq", json_object_new_uint64(ev->seq));
		json_object_object_add(j, "message", json_object_new_string(text));
		out_json(j);
	} else {
		text_header();
		printf("%-15s %7d %-15.15s %-8s %-7s %-8s %8s  %s\n", fmt_time(ev->time_ns, false, tbuf, sizeof(tbuf)),
		       (int)ev->d.pid, comm, "denied", kind ? kind : "?", "-", "-", text);
		fflush(stdout);
	}
	return 0;
}

/* The ledger may appear (quota init) or be replaced (init renames new files in) while we run. */
static void poll_denials(struct ledger **l, uint64_t *since, double *next_try)
{
	static ino_t ino;
	struct stat st;

	if (now_mono() >= *next_try) {
		*next_try = now_mono() + 2;
		if (*l && (stat(ledger_path(*l), &st) || st.st_ino != ino)) {
			pr_debug("ledger %s was replaced: reopening", ledger_path(*l));
			ledger_foreach_denial(*l, since, on_denial, NULL);
			ledger_close(*l);
			*l = NULL;
		}
		if (!*l) {
			if (ledger_open(NULL, 0, l)) {
				*l = NULL;
				return;
			}
			ino = stat(ledger_path(*l), &st) ? 0 : st.st_ino;
			*since = 0;
			ledger_foreach_denial(*l, since, skip_denial, NULL); /* only new refusals */
			pr_debug("reading refusals from %s", ledger_path(*l));
		}
	}
	if (!*l)
		return;
	if (ledger_foreach_denial(*l, since, on_denial, NULL) < 0) {
		ledger_close(*l);
		*l = NULL;
	}
}

/* --- --stats ------------------------------------------------------------------------------------------- */

struct rate_prev {
	pid_t tgid;
	struct mon_counts c;
};

static struct {
	struct rate_prev *v;
	size_t n, cap;
	struct rate_prev *nv;
	size_t nn, ncap;
	double dt;
	struct json_object *arr;
} rates;

static const struct mon_counts *prev_counts(pid_t tgid)
{
	size_t i;

	for (i = 0; i < rates.n; i++)
		if (rates.v[i].tgid == tgid)
			return &rates.v[i].c;
	return NULL;
}

static int rate_cb(pid_t tgid, const struct mon_counts *c, void *arg)
{
	static const struct mon_counts zero;
	const struct mon_counts *p = prev_counts(tgid);
	bool any = false, show = *(bool *)arg;
	char comm[64];
	int t;

	if (rates.nn == rates.ncap) {
		size_t cap = rates.ncap ? rates.ncap * 2 : 64;
		struct rate_prev *nv = realloc(rates.nv, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		rates.nv = nv;
		rates.ncap = cap;
	}
	rates.nv[rates.nn].tgid = tgid;
	rates.nv[rates.nn++].c = *c;
	if (!show)
		return 0;
	if (!p)
		p = &zero;
	for (t = 0; t < RESTRACK_NTYPES; t++)
		any |= c->create[t] != p->create[t] || c->destroy[t] != p->destroy[t];
	if (!any || (o.pid && tgid != o.pid))
		return 0;
	if (tgid)
		read_comm(tgid, comm, sizeof(comm));
	else
		snprintf(comm, sizeof(comm), "[kernel]");
	if (out_is_json()) {
		struct json_object *j = json_object_new_object(), *cr = json_object_new_object(),
				   *de = json_object_new_object();

		for (t = 0; t < RESTRACK_NTYPES; t++) {
			if (o.type >= 0 && t != o.type)
				continue;
			if (c->create[t] != p->create[t])
				json_object_object_add(cr, mon_type_name(t),
						       json_fixed((c->create[t] - p->create[t]) / rates.dt, 2));
			if (c->destroy[t] != p->destroy[t])
				json_object_object_add(de, mon_type_name(t),
						       json_fixed((c->destroy[t] - p->destroy[t]) / rates.dt, 2));
		}
		json_object_object_add(j, "pid", json_object_new_int(tgid));
		json_object_object_add(j, "comm", json_object_new_string(comm));
		json_object_object_add(j, "create_per_s", cr);
		json_object_object_add(j, "destroy_per_s", de);
		json_object_array_add(rates.arr, j);
	} else {
		printf("  %-7d %-15.15s", (int)tgid, comm);
		for (t = 0; t < RESTRACK_NTYPES; t++) {
			if (o.type >= 0 && t != o.type)
				continue;
			if (c->create[t] != p->create[t] || c->destroy[t] != p->destroy[t])
				printf(" %s +%.1f/-%.1f", mon_type_name(t), (c->create[t] - p->create[t]) / rates.dt,
				       (c->destroy[t] - p->destroy[t]) / rates.dt);
		}
		printf("\n");
	}
	return 0;
}

static void print_rates(double dt, bool show)
{
	struct rate_prev *tmp;
	char tbuf[48];
	size_t tcap;

	rates.dt = dt > 0 ? dt : 1;
	rates.nn = 0;
	if (show && out_is_json())
		rates.arr = json_object_new_array();
	else if (show)
		printf("%s rates per second (create/destroy):\n", fmt_time(now_rt_ns(), false, tbuf, sizeof(tbuf)));
	mon_counters_foreach(mon_counters_fd(mon), rate_cb, &show);
	if (show && out_is_json()) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "time", json_object_new_string(fmt_time(now_rt_ns(), true, tbuf, sizeof(tbuf))));
		json_object_object_add(j, "event", json_object_new_string("stats"));
		json_object_object_add(j, "interval_s", json_fixed(dt, 3));
		json_object_object_add(j, "processes", rates.arr);
		out_json(j);
	} else if (show) {
		fflush(stdout);
	}
	tmp = rates.v;
	tcap = rates.cap;
	rates.v = rates.nv;
	rates.n = rates.nn;
	rates.cap = rates.ncap;
	rates.nv = tmp;
	rates.ncap = tcap;
}

/* --- --audit ------------------------------------------------------------------------------------------- */

/* Ledger kind for each top/netlink kind (+ mr_bytes last); LEDGER_NKINDS where the ledger has none. */
static enum ledger_kind audit_kind(size_t i)
{
	if (i == NL_RES_NTYPES)
		return LEDGER_MR_BYTES;
	return kind_ledger_of_nl[i] < 0 ? LEDGER_NKINDS : (enum ledger_kind)kind_ledger_of_nl[i];
}

struct audit_seen {
	pid_t pid;
	uint64_t start;
	unsigned int state; /* bit 0 unmanaged, bit 1 over quota, bit 2 signalled */
};

static struct {
	struct audit_seen *v;
	size_t n, cap;
} seen;

static struct audit_seen *audit_seen(pid_t pid, uint64_t start)
{
	struct audit_seen *s;
	size_t i;

	for (i = 0; i < seen.n; i++)
		if (seen.v[i].pid == pid && seen.v[i].start == start)
			return &seen.v[i];
	if (seen.n == seen.cap) {
		size_t cap = seen.cap ? seen.cap * 2 : 64;

		s = realloc(seen.v, cap * sizeof(*s));
		if (!s)
			return NULL;
		seen.v = s;
		seen.cap = cap;
	}
	s = &seen.v[seen.n++];
	s->pid = pid;
	s->start = start;
	s->state = 0;
	return s;
}

struct managed_ctx {
	pid_t pid;
	uint64_t start;
	bool found;
};

static int managed_cb(const struct ledger_proc_stat *st, void *arg)
{
	struct managed_ctx *m = arg;

	if (st->pid == m->pid && (!m->start || st->start_time == m->start)) {
		m->found = true;
		return 1;
	}
	return 0;
}

/* The cgroup v2 path of pid ("/a/b"), or "" when unknown. */
static void proc_cgroup(pid_t pid, char *buf, size_t len)
{
	char path[64], line[512];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		if (ledger_cgroup_normalize(line + 3, buf, len))
			buf[0] = 0;
		break;
	}
	fclose(f);
}

struct over {
	const char *scope;
	char name[LEDGER_CGROUP_MAX];
	enum ledger_kind kind;
	uint64_t held, usage, limit;
};

#define MAX_OVER 16

/* Check held against one scope: an unmanaged holder's objects are not in the scope's usage, so add them. */
static void check_scope(const struct ledger_scope_stat *st, const uint64_t held[NL_RES_NTYPES + 1], bool managed,
			struct over *ov, int *nov)
{
	int i;

	for (i = 0; i <= NL_RES_NTYPES; i++) {
		enum ledger_kind k = audit_kind(i);
		uint64_t total;

		if (k == LEDGER_NKINDS || !held[i] || st->limit[k] == LEDGER_UNLIMITED || *nov >= MAX_OVER)
			continue;
		total = managed ? held[i] : st->usage[k] + held[i];
		if (total <= st->limit[k] && held[i] <= st->limit[k])
			continue;
		ov[*nov].scope = ledger_scope_type_name(st->scope.type);
		snprintf(ov[*nov].name, sizeof(ov[*nov].name), "%s",
			 st->scope.type == LEDGER_SCOPE_CGROUP ? st->scope.name : "");
		ov[*nov].kind = k;
		ov[*nov].held = held[i];
		ov[*nov].usage = st->usage[k];
		ov[*nov].limit = st->limit[k];
		(*nov)++;
	}
}

static int audit_over(struct ledger *l, pid_t pid, uint64_t start, bool managed,
		      const uint64_t held[NL_RES_NTYPES + 1], struct over *ov)
{
	struct ledger_scope_stat st;
	struct ledger_scope sc;
	char cg[LEDGER_CGROUP_MAX], *slash;
	int nov = 0;

	if (!l)
		return 0;
	memset(&sc, 0, sizeof(sc));
	sc.type = LEDGER_SCOPE_GLOBAL;
	if (!ledger_get_scope(l, &sc, &st))
		check_scope(&st, held, managed, ov, &nov);
	sc.type = LEDGER_SCOPE_PROCESS;
	sc.pid = pid;
	sc.start_time = start;
	if (!ledger_get_scope(l, &sc, &st))
		check_scope(&st, held, managed, ov, &nov);
	proc_cgroup(pid, cg, sizeof(cg));
	sc.type = LEDGER_SCOPE_CGROUP;
	while (cg[0] && strcmp(cg, "/")) {
		snprintf(sc.name, sizeof(sc.name), "%s", cg);
		if (!ledger_get_scope(l, &sc, &st))
			check_scope(&st, held, managed, ov, &nov);
		slash = strrchr(cg, '/');
		if (!slash || slash == cg)
			break;
		*slash = 0;
	}
	return nov;
}

static void audit_report(const struct top_row *r, bool managed, bool have_ledger, const struct over *ov, int nov,
			 int signalled)
{
	char tbuf[48], lim[32], hb[32];
	int i;

	if (out_is_json()) {
		struct json_object *j = json_object_new_object(), *h = json_object_new_object(),
				   *arr = json_object_new_array();

		json_object_object_add(j, "time", json_object_new_string(fmt_time(now_rt_ns(), true, tbuf, sizeof(tbuf))));
		json_object_object_add(j, "event", json_object_new_string(signalled ? "enforce" : "audit"));
		json_object_object_add(j, "pid", json_object_new_int(r->pid));
		json_object_object_add(j, "comm", json_object_new_string(r->comm));
		json_object_object_add(j, "managed", json_object_new_boolean(managed));
		json_object_object_add(j, "ledger", json_object_new_boolean(have_ledger));
		for (i = 0; i < NL_RES_NTYPES; i++)
			if (r->c.n[i])
				json_object_object_add(h, nl_res_name(i), json_object_new_uint64(r->c.n[i]));
		if (r->c.mr_bytes)
			json_object_object_add(h, "mr_bytes", json_object_new_uint64(r->c.mr_bytes));
		json_object_object_add(j, "held", h);
		for (i = 0; i < nov; i++) {
			struct json_object *x = json_object_new_object();

			json_object_object_add(x, "scope", json_object_new_string(ov[i].scope));
			if (ov[i].name[0])
				json_object_object_add(x, "cgroup", json_object_new_string(ov[i].name));
			json_object_object_add(x, "kind", json_object_new_string(ledger_kind_name(ov[i].kind)));
			json_object_object_add(x, "held", json_object_new_uint64(ov[i].held));
			json_object_object_add(x, "usage", json_object_new_uint64(ov[i].usage));
			json_object_object_add(x, "limit", json_object_new_uint64(ov[i].limit));
			json_object_array_add(arr, x);
		}
		json_object_object_add(j, "over_quota", arr);
		if (signalled)
			json_object_object_add(j, "signal", json_object_new_int(signalled));
		out_json(j);
		return;
	}
	printf("%s %s pid %d (%s): %s", fmt_time(now_rt_ns(), false, tbuf, sizeof(tbuf)),
	       signalled ? "ENFORCE" : "AUDIT", (int)r->pid, r->comm,
	       managed ? "managed" : have_ledger ? "unmanaged (not in the ledger)" : "unmanaged (no ledger)");
	printf(", holds");
	for (i = 0; i < NL_RES_NTYPES; i++)
		if (r->c.n[i])
			printf(" %s %" PRIu64, nl_res_name(i), r->c.n[i]);
	if (r->c.mr_bytes)
		printf(" mr_bytes %s", fmt_size(r->c.mr_bytes, hb, sizeof(hb)));
	for (i = 0; i < nov; i++)
		printf("; over %s%s%s %s limit %s (holds %" PRIu64 ", ledger usage %" PRIu64 ")", ov[i].scope,
		       ov[i].name[0] ? " " : "", ov[i].name, ledger_kind_name(ov[i].kind),
		       ov[i].limit == LEDGER_UNLIMITED ? "max" : (snprintf(lim, sizeof(lim), "%" PRIu64, ov[i].limit), lim),
		       ov[i].held, ov[i].usage);
	if (signalled)
		printf("; sent signal %d (%s)", signalled, strsignal(signalled));
	printf("\n");
	fflush(stdout);
}

static int audit_once(struct top_ctx *t, struct ledger **l)
{
	struct top_filter f = { .pids = o.pid ? &o.pid : NULL, .npids = o.pid ? 1 : 0, .dev = o.dev };
	struct top_snap s;
	struct over ov[MAX_OVER];
	size_t i;
	int err, k;

	/* Reopen every round: `quota init` replaces the files, and a mapping of the old ones would go stale. */
	if (*l)
		ledger_close(*l);
	if (ledger_open(NULL, 0, l))
		*l = NULL;
	memset(&s, 0, sizeof(s));
	err = top_snapshot(t, &f, &s);
	if (err)
		return err;
	if (*l)
		ledger_gc(*l, NULL);
	for (i = 0; i < s.nrows; i++) {
		const struct top_row *r = &s.rows[i];
		uint64_t held[NL_RES_NTYPES + 1], start = 0;
		struct managed_ctx mc;
		struct audit_seen *se;
		unsigned int state;
		bool any = false;
		int nov, sig = 0;

		if (r->kind != TOP_PROC || r->pid <= 0 || r->pid == getpid())
			continue;
		for (k = 0; k < NL_RES_NTYPES; k++) {
			held[k] = r->c.n[k];
			any |= held[k] != 0;
		}
		held[NL_RES_NTYPES] = r->c.mr_bytes;
		if (!any)
			continue;
		if (ledger_pid_start_time(r->pid, &start))
			continue; /* gone already */
		mc = (struct managed_ctx){ r->pid, start, false };
		if (*l)
			ledger_foreach_proc(*l, managed_cb, &mc);
		nov = audit_over(*l, r->pid, start, mc.found, held, ov);
		state = (mc.found ? 0 : 1) | (nov ? 2 : 0);
		se = audit_seen(r->pid, start);
		if (!se || (se->state & 3) != state) {
			if (se)
				se->state = (se->state & 4) | state;
			if (state)
				audit_report(r, mc.found, *l != NULL, ov, nov, 0);
		}
		/* Only unmanaged holders over a quota are signalled: a managed process's objects were all granted. */
		if (o.enforce_sig && !mc.found && nov && se && !(se->state & 4) && r->pid != 1) {
			if (!kill(r->pid, o.enforce_sig)) {
				sig = o.enforce_sig;
				se->state |= 4;
				syslog(LOG_WARNING, "rdmactl monitor --audit: sent signal %d to pid %d (%s): unmanaged and "
						    "over an RDMA quota",
				       sig, (int)r->pid, r->comm);
				audit_report(r, false, *l != NULL, ov, nov, sig);
			} else {
				pr_err("cannot signal pid %d: %s", (int)r->pid, strerror(errno));
			}
		}
	}
	top_snap_free(&s);
	return 0;
}

static int run_audit(void)
{
	struct ledger *l = NULL;
	struct top_ctx *t;
	double next = 0, end = o.duration ? now_mono() + o.duration : 0;
	int err;

	if (access("/sys/module/ib_core", F_OK)) {
		pr_err("cannot audit RDMA resources: ib_core is not loaded (modprobe ib_core, or load an RDMA driver)");
		return EXIT_FAIL;
	}
	err = top_open(&t);
	if (err) {
		pr_err("cannot open RDMA netlink: %s", strerror(-err));
		return EXIT_FAIL;
	}
	if (o.enforce_sig)
		openlog("rdmactl", LOG_PID, LOG_DAEMON);
	while (!exiting && (!end || now_mono() < end)) {
		if (now_mono() >= next) {
			next = now_mono() + o.interval;
			err = audit_once(t, &l);
			if (err) {
				pr_err("resource dump failed: %s%s%s", strerror(-err), top_ext_ack(t)[0] ? ": " : "",
				       top_ext_ack(t));
				break;
			}
		}
		usleep(50000);
	}
	if (l)
		ledger_close(l);
	top_close(t);
	free(seen.v);
	return err ? EXIT_FAIL : EXIT_OK;
}

/* --- main loop --------------------------------------------------------------------------------------- */

int cmd_monitor(int argc, char **argv)
{
	struct mon_opts mo = { .events = true, .pin_counters = true, .cb = on_event };
	struct mon_lost lost = { 0 }, seen_lost = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct ledger *l = NULL;
	uint64_t since = 0;
	double next_ledger = 0, next_stats, last_stats, end, next_prune;
	int err, idx, ufd;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &idx, NULL))
		return EXIT_USAGE;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.audit)
		return run_audit();

	err = mon_open(&mo, &mon);
	if (err) {
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
		return EXIT_FAIL;
	}
	pr_debug("attached with %s%s", mon_mode(mon), mon_has_commit_del(mon) ? " (+ commit_del)" : "");
	ufd = device_events_open();
	pr_debug("device events from %s", dev_source);
	dev_names_load(); /* after: a device added from now on is in the dump or in the device events */
	if (out_is_json()) {
		/* Tells a reader that everything from now on is seen (loading takes a while on slow machines). */
		struct json_object *j = json_object_new_object();
		char tbuf[48];

		json_object_object_add(j, "time", json_object_new_string(fmt_time(now_rt_ns(), true, tbuf, sizeof(tbuf))));
		json_object_object_add(j, "event", json_object_new_string("start"));
		json_object_object_add(j, "mode", json_object_new_string(mon_mode(mon)));
		json_object_object_add(j, "commit_del", json_object_new_boolean(mon_has_commit_del(mon)));
		json_object_object_add(j, "pid", json_object_new_int(getpid()));
		json_object_object_add(j, "device_events", json_object_new_string(dev_source));
		out_json(j);
	}
	sum.start = last_stats = now_mono();
	next_prune = sum.start + 10;
	next_stats = o.stats ? sum.start + o.stats : 0;
	end = o.duration ? sum.start + o.duration : 0;
	if (o.stats)
		print_rates(0, false); /* baseline */
	text_header();

	while (!exiting) {
		struct pollfd pfd[3] = { { mon_fd(mon), POLLIN, 0 }, { ufd, POLLIN, 0 }, { rename_fd, POLLIN, 0 } };
		int n = poll(pfd, 3, 100); /* negative fds are ignored */

		if (n < 0 && errno != EINTR) {
			pr_err("poll: %s", strerror(errno));
			break;
		}
		err = mon_consume(mon);
		if (err < 0 && err != -EINTR) {
			pr_err("reading events: %s", strerror(-err));
			break;
		}
		if (err > 0)
			fflush(stdout);
		if (ufd >= 0 && (pfd[1].revents & POLLIN))
			device_events_read(ufd);
		if (rename_fd >= 0 && (pfd[2].revents & POLLIN))
			uevent_read(rename_fd, true);
		poll_denials(&l, &since, &next_ledger);
		mon_lost(mon, &lost);
		report_lost(&lost, &seen_lost);
		if (o.stats && now_mono() >= next_stats) {
			double t = now_mono();

			print_rates(t - last_stats, true);
			last_stats = t;
			next_stats = t + o.stats;
			mon_counters_prune(mon_counters_fd(mon));
		}
		if (now_mono() >= next_prune) {
			/* Exited processes whose counts balance: keeps the map from filling up on a long run. */
			mon_counters_prune(mon_counters_fd(mon));
			next_prune = now_mono() + 10;
		}
		if (end && now_mono() >= end)
			break;
	}
	/* Drain what is already in the ring so the summary matches the stream. */
	mon_consume(mon);
	fflush(stdout);
	if (l)
		poll_denials(&l, &since, &next_ledger);
	mon_lost(mon, &lost);
	report_lost(&lost, &seen_lost);
	print_summary(&lost);
	if (l)
		ledger_close(l);
	if (ufd >= 0)
		close(ufd);
	if (rename_fd >= 0)
		close(rename_fd);
	mon_close(mon);
	free(sum.procs);
	free(rates.v);
	free(rates.nv);
	return EXIT_OK;
}
