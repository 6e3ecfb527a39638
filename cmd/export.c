// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl export: options; serving /metrics over HTTP, writing a textfile for node_exporter, or one exposition on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "rdmactl.h"

static struct {
	const char *listen;	/* NULL: the default, unless only --textfile was given */
	const char *textfile;	/* directory */
	double interval;
	bool interval_set;
	bool once;
	double max_age;
	bool per_process;
	bool no_qp_states;
	bool counters;
	const char *ledger;
	double timeout;
	unsigned int max_conns;
} o = { .interval = 15, .max_age = 1, .timeout = 10, .max_conns = 16 };

static volatile sig_atomic_t exiting;

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

enum { OPT_LISTEN = 0x100, OPT_TEXTFILE, OPT_INTERVAL, OPT_ONCE, OPT_MAX_AGE, OPT_PER_PROCESS, OPT_NO_QP_STATES, OPT_COUNTERS,
       OPT_LEDGER, OPT_TIMEOUT, OPT_MAX_CONNS };

static const struct argp_option options[] = {
	{ "listen", OPT_LISTEN, "ADDR:PORT", 0,
	  "Serve GET /metrics on ADDR:PORT ([V6ADDR]:PORT; :PORT every address; default " EXPORT_DEFAULT_LISTEN
	  ", or none with --textfile alone)", 0 },
	{ "textfile", OPT_TEXTFILE, "DIR", 0,
	  "Write DIR/" EXPORT_TEXTFILE " (temporary file + rename) for node_exporter's textfile collector", 0 },
	{ "interval", OPT_INTERVAL, "SECONDS", 0, "With --textfile: write it every SECONDS (default 15)", 0 },
	{ "once", OPT_ONCE, NULL, 0, "Collect once and exit: write the textfile, or print the metrics on stdout", 0 },
	{ "max-age", OPT_MAX_AGE, "SECONDS", 0,
	  "Serve a collection again to scrapes within SECONDS of it (default 1; 0: collect for every scrape)", 1 },
	{ "per-process", OPT_PER_PROCESS, NULL, 0,
	  "Also per-process families (pid, comm, cgroup labels) and every process scope of the ledger", 1 },
	{ "no-qp-states", OPT_NO_QP_STATES, NULL, 0,
	  "No QP states, and per-cgroup and per-process counts summed over devices (no device label); they then "
	  "come from a running monitor's counters when they are provably complete (no per-object dump), else "
	  "from the dump (rdmactl_counts_source says which, and why)", 1 },
	{ "counters", OPT_COUNTERS, NULL, 0,
	  "Per-cgroup and per-process counts summed over devices (no device label), with QP states: from a running "
	  "monitor's counters and each QP asked for by its number when they are provably complete (no per-object "
	  "dump), else from the dump (rdmactl_counts_source)", 1 },
	{ "ledger", OPT_LEDGER, "PATH", 0,
	  "Quota ledger to read (default $RDMACTL_LEDGER, else /dev/shm/rdmactl.ledger)", 1 },
	{ "timeout", OPT_TIMEOUT, "SECONDS", 0,
	  "A connection gets SECONDS to send its request, and as long to read the answer (default 10)", 2 },
	{ "max-connections", OPT_MAX_CONNS, "N", 0, "Open connections at most (default 16)", 2 },
	{ 0 },
};

static double seconds_arg(const char *arg, double min, double max, struct argp_state *state, const char *what)
{
	double v = 0;

	if (parse_seconds(arg, min, max, &v))
		argp_error(state, "invalid %s '%s': expected decimal seconds from %g to %g", what, arg, min, max);
	return v;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	uint64_t v;

	switch (key) {
	case OPT_LISTEN:
		if (!*arg)
			argp_error(state, "empty --listen ADDR:PORT");
		o.listen = arg;
		break;
	case OPT_TEXTFILE:
		if (!*arg)
			argp_error(state, "empty --textfile DIR");
		o.textfile = arg;
		break;
	case OPT_INTERVAL:
		o.interval = seconds_arg(arg, 0.1, 86400, state, "--interval");
		o.interval_set = true;
		break;
	case OPT_ONCE:
		o.once = true;
		break;
	case OPT_MAX_AGE:
		o.max_age = seconds_arg(arg, 0, 3600, state, "--max-age");
		break;
	case OPT_PER_PROCESS:
		o.per_process = true;
		break;
	case OPT_NO_QP_STATES:
		o.no_qp_states = true;
		break;
	case OPT_COUNTERS:
		o.counters = true;
		break;
	case OPT_LEDGER:
		if (!*arg)
			argp_error(state, "empty ledger PATH");
		o.ledger = arg;
		break;
	case OPT_TIMEOUT:
		o.timeout = seconds_arg(arg, 0.1, 3600, state, "--timeout");
		break;
	case OPT_MAX_CONNS:
		if (parse_u64(arg, 1, HTTP_MAX_CONNS, &v))
			argp_error(state, "invalid --max-connections '%s': expected a decimal 1 to %d", arg, HTTP_MAX_CONNS);
		o.max_conns = (unsigned int)v;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (o.once && o.listen)
			argp_error(state, "--once goes with --textfile or stdout, not with --listen");
		if (o.interval_set && (!o.textfile || o.once))
			argp_error(state, "--interval goes with --textfile (without --once)");
		if (out_is_json())
			argp_error(state, "-j/--json: export writes the Prometheus text format only");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, NULL,
	"Serve RDMA resource metrics in the Prometheus text format (0.0.4): objects and registered bytes per "
	"cgroup, device and type (labels slurm_job_id, pod_uid, container_id where the cgroup path names a Slurm "
	"job or a Kubernetes pod; namespace and pod where rdmactl oci-hook named the pod), quota limits, usage and refusals per ledger scope, rdma cgroup limits, "
	"create/destroy counters of a running 'rdmactl monitor', device and port state. One netlink dump per "
	"collection, or none with --no-qp-states while a monitor's counters are provably complete. Only GET (and "
	"HEAD) of /metrics and / are answered. SIGTERM or SIGINT end it (exit 0).\v"
	"Examples:\n"
	"  rdmactl export                                   # http://HOST:9476/metrics\n"
	"  rdmactl export --listen 127.0.0.1:9476 --per-process\n"
	"  rdmactl export --no-qp-states                    # beside 'rdmactl monitor': no dump per scrape\n"
	"  rdmactl export --textfile /var/lib/prometheus/node-exporter --interval 30\n"
	"  rdmactl export --textfile /var/lib/prometheus/node-exporter --once  # cron\n"
	"  rdmactl export --once | promtool check metrics\n",
	children, NULL, NULL,
};

/* --- collections ---------------------------------------------------------------------------------- */

static struct {
	struct metrics_ctx *ctx;
	struct http_server *srv;
	struct prom_buf body;		/* the last exposition */
	double when;			/* CLOCK_MONOTONIC of its collection; < 0: none */
	int err[METRICS_SRC_NR];	/* what was told about each source (told again when it changes) */
	char source_why[192];		/* with --no-qp-states: why the dump, as last told ("" the counters) */
	bool logged;
} st = { .when = -1 };

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Tell about a source that cannot be read, once per distinct error; the netlink one always, others with -v. */
static void log_sources(const struct metrics_snap *s)
{
	int i;

	for (i = 0; i < METRICS_SRC_NR; i++) {
		if (st.logged && s->err[i] == st.err[i])
			continue;
		if (s->err[i] && i == METRICS_SRC_NETLINK)
			pr_err("%s", s->why[i]);
		else if (s->err[i])
			pr_debug("%s", s->why[i]);
		else if (st.logged)
			pr_debug("%s: read again", metrics_source_names[i]);
		st.err[i] = s->err[i];
	}
	/* with --no-qp-states: the source of the counts, told with -v when it changes */
	if ((o.no_qp_states || o.counters) && !s->err[METRICS_SRC_NETLINK] && (!st.logged || strcmp(s->source_why, st.source_why))) {
		if (s->source == TOP_SRC_COUNTERS)
			pr_debug("counts from the monitor's counters (no per-object dump)");
		else
			pr_debug("counts from the per-object dump: %s", s->source_why);
		snprintf(st.source_why, sizeof(st.source_why), "%s", s->source_why);
	}
	st.logged = true;
}

/* The exposition, collected anew unless the last one is younger than max_age. 0 or -ENOMEM. */
static int exposition(double max_age)
{
	struct export_render_opts ro = { .per_process = o.per_process };
	struct metrics_snap s;
	double now = mono_s();
	int ret;

	if (st.when >= 0 && now - st.when <= max_age && !st.body.oom)
		return 0;
	ret = metrics_collect(st.ctx, &s);
	if (ret) {
		metrics_snap_free(&s);
		return ret;
	}
	log_sources(&s);
	if (st.srv)
		ro.http = http_server_stats(st.srv);
	prom_buf_reset(&st.body);
	export_render(&s, &ro, &st.body);
	metrics_snap_free(&s);
	st.when = now;
	return st.body.oom ? -ENOMEM : 0;
}

/* --- HTTP ----------------------------------------------------------------------------------------- */

static const char index_page[] =
	"<!DOCTYPE html>\n<html><head><title>rdmactl export</title></head>\n<body><h1>rdmactl export</h1>\n"
	"<p>RDMA resources per cgroup, process and quota scope, for Prometheus: <a href=\"/metrics\">/metrics</a></p>\n"
	"</body></html>\n";

static void handle(const struct http_req *req, struct http_response *r, void *arg)
{
	bool get = http_method_is(req, "GET"), head = http_method_is(req, "HEAD");
	bool metrics = http_path_is(req, "/metrics"), index = http_path_is(req, "/");

	(void)arg;
	if (!metrics && !index) {
		r->status = 404;
		r->content_type = "text/plain; charset=utf-8";
		r->body = "404 Not Found: the metrics are at /metrics\n";
	} else if (!get && !head) {
		r->status = 405;
		r->allow = "GET, HEAD";
		r->content_type = "text/plain; charset=utf-8";
		r->body = "405 Method Not Allowed\n";
	} else if (index) {
		r->status = 200;
		r->content_type = "text/html; charset=utf-8";
		r->body = index_page;
	} else if (exposition(o.max_age)) {
		r->status = 500;
		r->content_type = "text/plain; charset=utf-8";
		r->body = "500 Internal Server Error: out of memory\n";
	} else {
		r->status = 200;
		r->content_type = PROM_CONTENT_TYPE;
		r->body = st.body.data;
		r->body_len = st.body.len;
	}
	if (r->body && !r->body_len)
		r->body_len = strlen(r->body);
	r->head_only = head;
}

/* --- textfile ------------------------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* DIR/rdmactl.prom replaced at once: node_exporter never reads half a file (nor a *.prom temporary one). */
static int write_textfile(const char *dir, char *why, size_t whylen)
{
	char tmp[4096], dst[4096];
	int fd, ret;

	snprintf(dst, sizeof(dst), "%s/%s", dir, EXPORT_TEXTFILE);
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, EXPORT_TEXTFILE) >= (int)sizeof(tmp)) {
		snprintf(why, whylen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	ret = exposition(0);
	if (ret) {
		snprintf(why, whylen, "collecting the metrics failed: %s", strerror(-ret));
		return ret;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		/* rdmactl-export.service has ProtectSystem=strict: only the paths its unit names are writable */
		snprintf(why, whylen, "cannot create a file in %s: %s%s%s%s", dir, strerror(-ret),
			 ret == -EROFS ? " (a service under systemd's ProtectSystem=strict, as rdmactl-export.service "
					 "is, writes only where its unit says: ReadWritePaths=" : "",
			 ret == -EROFS ? dir : "", ret == -EROFS ? " in 'systemctl edit rdmactl-export')" : "");
		return ret;
	}
	ret = write_all(fd, st.body.data, st.body.len);
	if (!ret && fchmod(fd, 0644))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, dst))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		snprintf(why, whylen, "cannot write %s: %s", dst, strerror(-ret));
	}
	return ret;
}

/* --- modes ---------------------------------------------------------------------------------------- */

static int once(void)
{
	char why[4200];
	int ret;

	if (o.textfile) {
		ret = write_textfile(o.textfile, why, sizeof(why));
		if (ret)
			pr_err("%s", why);
		return ret ? EXIT_FAIL : EXIT_OK;
	}
	ret = exposition(0);
	if (ret) {
		pr_err("collecting the metrics failed: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	if (write_all(STDOUT_FILENO, st.body.data, st.body.len)) {
		pr_err("cannot write the metrics to stdout: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Serve and/or write the textfile until SIGTERM or SIGINT. */
static int serve(void)
{
	double now, next_write, next_tick, until;
	char why[4200];
	int last_err = 0, ret;

	next_write = next_tick = mono_s();
	while (!exiting) {
		now = mono_s();
		if (o.textfile && now >= next_write) {
			ret = write_textfile(o.textfile, why, sizeof(why));
			if (ret && ret != last_err)
				pr_err("%s", why);
			else if (!ret && last_err)
				pr_debug("%s/%s written again", o.textfile, EXPORT_TEXTFILE);
			last_err = ret;
			next_write += o.interval;
			if (next_write < now)
				next_write = now + o.interval; /* a collection longer than the interval: no catching up */
		}
		if (now >= next_tick) {
			metrics_tick(st.ctx);
			next_tick = now + 1;
		}
		until = next_tick;
		if (o.textfile && next_write < until)
			until = next_write;
		now = mono_s();
		ret = until > now ? (int)((until - now) * 1e3) + 1 : 0;
		if (st.srv)
			ret = http_server_poll(st.srv, ret);
		else
			ret = poll(NULL, 0, ret) < 0 ? -errno : 0;
		if (ret && ret != -EINTR) {
			pr_err("waiting for connections failed: %s", strerror(-ret));
			return EXIT_FAIL;
		}
	}
	if (st.srv)
		pr_debug("stopping: %u connection(s) closed", http_server_conns(st.srv));
	return EXIT_OK;
}

int cmd_export(int argc, char **argv)
{
	struct metrics_opts mo = { 0 };
	struct http_opts ho;
	struct sigaction sa;
	struct stat sb;
	char err[256], addr[128];
	int idx, fd, ret;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER | ARGP_NO_HELP, &idx, NULL))
		return EXIT_USAGE;
	if (!o.textfile && !o.once && !o.listen)
		o.listen = EXPORT_DEFAULT_LISTEN;
	errno = 0;
	if (o.textfile && (stat(o.textfile, &sb) || !S_ISDIR(sb.st_mode))) {
		pr_err("--textfile %s: %s (a directory: node_exporter's --collector.textfile.directory)", o.textfile,
		       errno ? strerror(errno) : "not a directory");
		return EXIT_FAIL;
	}
	mo.ledger = o.ledger;
	mo.follow = !o.once;
	mo.no_qp_states = o.no_qp_states;
	mo.counters = o.counters;
	if (metrics_open(&mo, &st.ctx)) {
		pr_err("out of memory");
		return EXIT_FAIL;
	}
	if (o.once) {
		ret = once();
		goto out;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll returns at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.listen) {
		ret = http_listen(o.listen, &fd, err, sizeof(err));
		if (ret) {
			pr_err("cannot listen on %s: %s (%s)", o.listen, err,
			       ret == -EADDRINUSE	 ? "another program has that port: pick another with --listen ADDR:PORT"
			       : ret == -EACCES		 ? "ports below 1024 need CAP_NET_BIND_SERVICE"
			       : ret == -EADDRNOTAVAIL ? "ADDR must be an address of this host, or empty for all of them"
			       : ret == -EINVAL		 ? "see 'rdmactl export --help'"
						 : "check --listen ADDR:PORT");
			ret = ret == -EINVAL ? EXIT_USAGE : EXIT_FAIL;
			goto out;
		}
		ho.max_conns = o.max_conns;
		ho.timeout = o.timeout;
		ret = http_server_new(fd, &ho, handle, NULL, &st.srv);
		if (ret) {
			close(fd);
			pr_err("cannot serve: %s", strerror(-ret));
			ret = EXIT_FAIL;
			goto out;
		}
		/* always: with port 0 (or an address the host chose) this line is the only way to know it */
		http_local_addr(fd, addr, sizeof(addr));
		pr_err("listening on %s", addr);
	}
	ret = serve();
out:
	http_server_free(st.srv);
	st.srv = NULL;
	metrics_close(st.ctx);
	prom_buf_free(&st.body);
	return ret;
}
