// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor --audit: holders of RDMA resources the ledger does not know, or over a quota. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include "core/clock.h"
#include "ledger/ledger.h"
#include "monitor/monfmt.h"
#include "monitor.h"
#include "nl/nl.h"
#include "core/out.h"
#include "core/proc.h"
#include "rdmactl.h"
#include "top/top.h"
#include "core/util.h"

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

/* The cgroup v2 path of pid ("/a/b"), or "" when unknown. */
static void proc_cgroup_norm(pid_t pid, char *buf, size_t len)
{
	char raw[4096];

	buf[0] = 0;
	if (proc_cgroup(pid, raw, sizeof(raw)) || ledger_cgroup_normalize(raw, buf, len))
		buf[0] = 0;
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
	proc_cgroup_norm(pid, cg, sizeof(cg));
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
	char tbuf[MON_TIME_LEN], lim[32], hb[32];
	uint64_t t;
	int i;

	t = clock_rt_ns();
	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso(t, tbuf, sizeof(tbuf)));
	print_string(PRINT_FP, NULL, "%s ", mon_time_text(t, tbuf, sizeof(tbuf)));
	print_string(PRINT_JSON, "event", NULL, signalled ? "enforce" : "audit");
	print_text("%s pid %d (%s): %s", signalled ? "ENFORCE" : "AUDIT", (int)r->pid, r->comm,
		   managed ? "managed" : have_ledger ? "unmanaged (not in the ledger)" : "unmanaged (no ledger)");
	print_int(PRINT_JSON, "pid", NULL, r->pid);
	print_string(PRINT_JSON, "comm", NULL, r->comm);
	print_bool(PRINT_JSON, "managed", NULL, managed);
	print_bool(PRINT_JSON, "ledger", NULL, have_ledger);
	print_text(", holds");
	out_open_object("held");
	for (i = 0; i < NL_RES_NTYPES; i++) {
		if (!r->c.n[i])
			continue;
		print_uint(PRINT_JSON, nl_res_name(i), NULL, r->c.n[i]);
		print_text(" %s %" PRIu64, nl_res_name(i), r->c.n[i]);
	}
	if (r->c.mr_bytes) {
		print_uint(PRINT_JSON, "mr_bytes", NULL, r->c.mr_bytes);
		print_text(" mr_bytes %s", fmt_size(r->c.mr_bytes, hb, sizeof(hb)));
	}
	out_close_object();
	out_open_array("over_quota");
	for (i = 0; i < nov; i++) {
		out_open_object(NULL);
		print_string(PRINT_JSON, "scope", NULL, ov[i].scope);
		if (ov[i].name[0])
			print_string(PRINT_JSON, "cgroup", NULL, ov[i].name);
		print_string(PRINT_JSON, "kind", NULL, ledger_kind_name(ov[i].kind));
		print_uint(PRINT_JSON, "held", NULL, ov[i].held);
		print_uint(PRINT_JSON, "usage", NULL, ov[i].usage);
		print_uint(PRINT_JSON, "limit", NULL, ov[i].limit);
		print_text("; over %s%s%s %s limit %s (holds %" PRIu64 ", ledger usage %" PRIu64 ")", ov[i].scope,
			   ov[i].name[0] ? " " : "", ov[i].name, ledger_kind_name(ov[i].kind),
			   ov[i].limit == LEDGER_UNLIMITED ? "max"
							   : (snprintf(lim, sizeof(lim), "%" PRIu64, ov[i].limit), lim),
			   ov[i].held, ov[i].usage);
		out_close_object();
	}
	out_close_array();
	if (signalled) {
		print_int(PRINT_JSON, "signal", NULL, signalled);
		print_text("; sent signal %d (%s)", signalled, strsignal(signalled));
	}
	print_nl();
	out_close_object();
	out_flush();
}

static int audit_once(struct top_ctx *t, struct ledger **l)
{
	struct top_filter f = { .pids = mopt.pid ? &mopt.pid : NULL, .npids = mopt.pid ? 1 : 0, .dev = mopt.dev };
	struct top_snap s;
	struct over ov[MAX_OVER];
	size_t i;
	int err, k;

	/* Reopen every round: `quota init` replaces the files, and a mapping of the old ones would go stale. */
	if (*l)
		ledger_close(*l);
	if (ledger_open(NULL, 0, l))
		*l = NULL;
	err = top_snapshot(t, &f, &s);
	if (err)
		return err;
	if (*l) {
		ledger_gc(*l, NULL);
		/* top's join: managed is the process's own slot (pid and start time) */
		top_join_ledger(&s, *l);
	}
	for (i = 0; i < s.nrows; i++) {
		const struct top_row *r = &s.rows[i];
		uint64_t held[NL_RES_NTYPES + 1], start = 0;
		struct audit_seen *se;
		unsigned int state;
		bool any = false, managed;
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
		if (ledger_pid_start_time(r->pid, &start) || start != r->start_time)
			continue; /* gone already (or its pid another process's now) */
		managed = r->quota.managed;
		nov = audit_over(*l, r->pid, start, managed, held, ov);
		state = (managed ? 0 : 1) | (nov ? 2 : 0);
		se = audit_seen(r->pid, start);
		if (!se || (se->state & 3) != state) {
			if (se)
				se->state = (se->state & 4) | state;
			if (state)
				audit_report(r, managed, *l != NULL, ov, nov, 0);
		}
		/* Only unmanaged holders over a quota are signalled: a managed process's objects were all granted. */
		if (mopt.enforce_sig && !managed && nov && se && !(se->state & 4) && r->pid != 1) {
			if (!kill(r->pid, mopt.enforce_sig)) {
				sig = mopt.enforce_sig;
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

int run_audit(void)
{
	struct ledger *l = NULL;
	struct top_ctx *t;
	double next = 0, end = mopt.duration ? clock_mono_s() + mopt.duration : 0;
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
	if (mopt.enforce_sig)
		openlog("rdmactl", LOG_PID, LOG_DAEMON);
	while (!monitor_exiting && (!end || clock_mono_s() < end)) {
		if (clock_mono_s() >= next) {
			next = clock_mono_s() + mopt.interval;
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

