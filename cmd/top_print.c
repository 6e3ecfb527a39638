// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl top: one snapshot as text or as JSON, from one path through the output layer. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ledger/ledger.h"
#include "core/out.h"
#include "top_view.h"
#include "core/util.h"

/* Lines of text printed so far in this snapshot (the screen's layout). */
static size_t nlines;
/* --no-qp-states (set per snapshot from the view). */
static bool no_states;

static void end_line(void)
{
	print_nl();
	nlines++;
}

static const char *kind_name(enum top_kind k)
{
	return k == TOP_PROC ? "process" : k == TOP_KERNEL ? "kernel" : "unknown";
}

/* JSON: "qp_states", the QPs by state, every state. */
static void print_qp_states(const struct top_counts *c)
{
	unsigned int k;

	if (no_states)
		return;
	out_open_object("qp_states");
	for (k = 0; k < TOP_QP_NSTATES; k++)
		print_uint(PRINT_JSON, top_qp_state_name(k), NULL, c->qp_state[k]);
	out_close_object();
}

/*
 * Text: the last column, QP-STATES, names only the states that hold QPs ("RTS:3,ERR:1"; "-" for none), so
 * a tenant whose QPs sit in ERR stands out. Last, so that it needs no width and never truncates.
 */
static void print_qp_state_col(const struct top_counts *c)
{
	const char *sep = "";
	unsigned int k;

	if (no_states)
		return;
	print_text(" ");
	for (k = 0; k < TOP_QP_NSTATES; k++)
		if (c->qp_state[k]) {
			print_text("%s%s:%" PRIu64, sep, top_qp_state_name(k), c->qp_state[k]);
			sep = ",";
		}
	if (!*sep)
		print_text("-");
}

/*
 * Counts as table columns (" %6" per kind, "-" where a device cannot dump it; MR bytes before the CM IDs,
 * which have no "-") and as JSON members (every kind, then mr_bytes). t: which of the two.
 */
static void print_counts(enum out_type t, const struct top_counts *c, uint32_t unsupported)
{
	enum out_type text = t & PRINT_FP, json = t & PRINT_JSON;
	char size[32];
	int k;

	for (k = 0; k < NL_RES_NTYPES; k++) {
		const char *key = nl_res_name(k);

		if (k == NL_RES_CM_ID) {
			print_string(text, NULL, " %9s", fmt_size(c->mr_bytes, size, sizeof(size)));
			print_uint(t, key, " %6" PRIu64, c->n[k]);
		} else if (unsupported & (1u << k)) {
			print_string(text, NULL, " %6s", "-");
			print_uint(json, key, NULL, c->n[k]);
		} else {
			print_uint(t, key, " %6" PRIu64, c->n[k]);
		}
	}
	print_uint(json, "mr_bytes", NULL, c->mr_bytes);
	if (json)
		print_qp_states(c);
}

/* "rdmactl top - <local time> - ... - sort qp - 1.2 ms"; JSON: time, elapsed_ms, sort and what is known. */
static void print_head(const struct top_snap *s, const struct top_view *v)
{
	char when[64];
	struct tm tm;
	size_t n;

	localtime_r(&s->time.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	print_string(PRINT_FP, NULL, "rdmactl top - %s", when);
	gmtime_r(&s->time.tv_sec, &tm);
	n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + n, sizeof(when) - n, ".%03ldZ", s->time.tv_nsec / 1000000);
	print_string(PRINT_JSON, "time", NULL, when);
	print_double(PRINT_JSON, "elapsed_ms", NULL, s->elapsed_ms);
	print_text(" - %u device%s, %zu row%s", s->ndevs, s->ndevs == 1 ? "" : "s", s->nrows,
		   s->nrows == 1 ? "" : "s");
	print_string(PRINT_ANY, "sort", " - sort %s", top_key_names[v->key < TOP_NKEYS ? v->key : 0]);
	print_text("%s - %.1f ms%s%s", v->reverse ? " (reversed)" : "", s->elapsed_ms,
		   s->source == TOP_SRC_COUNTERS ? " - from the monitor's counters" : "",
		   v->screen ? " - q quit, s/S sort, r reverse" : "");
	print_string(PRINT_JSON, "source", NULL, s->source == TOP_SRC_COUNTERS ? "counters" : "dump");
	if (v->no_qp_states || v->counters)
		print_string(PRINT_JSON, "source_reason", NULL, s->source_why[0] ? s->source_why : NULL);
	if (s->states_by_number) {
		/* QPs the kernel answers nothing for by number (never given a port): counted in RESET */
		print_uint(PRINT_JSON, "qp_reset_without_port", NULL, s->qp_noport);
	}
	end_line();
	print_bool(PRINT_JSON, "privileged", NULL, s->privileged);
	print_uint(PRINT_JSON, "unresolved_threads", NULL, s->unresolved);
	print_bool(PRINT_JSON, "ledger", NULL, s->ledger_joined);
	if (s->rates_joined)
		print_double(PRINT_JSON, "rate_interval_s", NULL, s->rate_interval);
	else
		print_null(PRINT_JSON, "rate_interval_s", NULL);
}

/* "rxe0: port 1 ACTIVE (eth0); ctx 1 pd 1 ... mr 2 (8K) cm_id 0[; N more counted by the kernel ...]" */
static void print_dev(const struct top_dev *d)
{
	uint64_t hidden = 0;
	unsigned int p;
	char size[32];
	int k;

	out_open_object(NULL);
	print_string(PRINT_ANY, "name", "%s: ", d->dev.name);
	print_uint(PRINT_JSON, "index", NULL, d->dev.index);
	out_open_array("ports");
	for (p = 0; p < d->nports; p++) {
		const struct nl_port *port = &d->ports[p];

		print_text("%s", p ? ", " : "");
		out_open_object(NULL);
		print_uint(PRINT_ANY, "port", "port %" PRIu64, port->port);
		print_string(PRINT_ANY, "state", " %s", nl_port_state_name(port->state));
		print_string(port->netdev[0] ? PRINT_ANY : PRINT_JSON, "netdev", " (%s)",
			     port->netdev[0] ? port->netdev : NULL);
		out_close_object();
	}
	out_close_array();
	print_text("; ");
	out_open_object("totals");
	for (k = 0; k < NL_RES_NTYPES; k++) {
		print_text("%s%s ", k ? " " : "", nl_res_name(k));
		if (d->unsupported & (1u << k)) {
			print_text("-");
			print_uint(PRINT_JSON, nl_res_name(k), NULL, d->totals.n[k]);
		} else {
			print_uint(PRINT_ANY, nl_res_name(k), "%" PRIu64, d->totals.n[k]);
		}
		if (k == NL_RES_MR)
			print_text(" (%s)", fmt_size(d->totals.mr_bytes, size, sizeof(size)));
	}
	print_uint(PRINT_JSON, "mr_bytes", NULL, d->totals.mr_bytes);
	print_qp_states(&d->totals);
	out_close_object();
	if (d->has_summary) {
		out_open_object("summary");
		for (k = 0; k < NL_RES_NTYPES; k++) {
			if (d->summary.present & (1u << k))
				print_uint(PRINT_JSON, nl_res_name(k), NULL, d->summary.curr[k]);
			if (d->summary.curr[k] > d->totals.n[k])
				hidden += d->summary.curr[k] - d->totals.n[k];
		}
		out_close_object();
	} else {
		print_null(PRINT_JSON, "summary", NULL);
	}
	if (hidden)
		print_uint(PRINT_FP, NULL, "; %" PRIu64 " more counted by the kernel but not listed (other PID "
			   "namespace, or created/destroyed meanwhile)", hidden);
	out_open_array("unsupported");
	for (k = 0; k < NL_RES_NTYPES; k++)
		if (d->unsupported & (1u << k))
			print_string(PRINT_JSON, NULL, NULL, nl_res_name(k));
	out_close_array();
	end_line();
	out_close_object();
}

/* A CONTAINER column only when some process of the snapshot is in a container's cgroup (set per snapshot). */
static bool show_container;

static bool has_containers(const struct top_snap *s)
{
	size_t r;

	for (r = 0; r < s->nrows; r++)
		if (s->rows[r].container_id[0])
			return true;
	return false;
}

/* Column titles: the quota, rate and container ones only when the snapshot has that data. */
static void print_columns(const struct top_snap *s)
{
	char title[16];
	size_t i;
	int k;

	print_text("%8s %-10s %-16s", "PID", "USER", "COMM");
	for (k = 0; k < NL_RES_NTYPES; k++) {
		if (k == NL_RES_CM_ID)
			print_text(" %9s", "MR-BYTES");
		for (i = 0; i + 1 < sizeof(title) && nl_res_name(k)[i]; i++)
			title[i] = (char)toupper((unsigned char)nl_res_name(k)[i]);
		title[i] = '\0';
		print_text(" %6s", title);
	}
	if (s->ledger_joined)
		print_text(" %-11s %-15s %4s", "QP-QUOTA", "MRB-QUOTA", "DENY");
	if (s->rates_joined)
		print_text(" %7s %7s %7s", "QP+/s", "QP-/s", "ALL+/s");
	show_container = has_containers(s);
	if (show_container)
		print_text(" %-12s", "CONTAINER");
	if (!no_states)
		print_text(" QP-STATES");
	end_line();
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

enum quota_part { Q_LIMITS, Q_LIMIT_SCOPES, Q_SCOPE_USAGE, Q_LEDGER_USAGE };

/* One of the per-kind objects of a managed process's quota (JSON only): kinds the ledger accounts. */
static void print_quota_part(const struct top_row *r, const char *key, enum quota_part part)
{
	int col;

	out_open_object(key);
	for (col = 0; col <= NL_RES_NTYPES; col++) {
		const char *kind = top_key_names[col]; /* the kinds, then mr_bytes */

		if (!r->quota.has_kind[col])
			continue;
		if (part == Q_LEDGER_USAGE)
			print_uint(PRINT_JSON, kind, NULL, r->quota.used[col]);
		else if (r->quota.scope[col] < 0)
			print_null(PRINT_JSON, kind, NULL);
		else if (part == Q_LIMITS)
			print_uint(PRINT_JSON, kind, NULL, r->quota.limit[col]);
		else if (part == Q_LIMIT_SCOPES)
			print_string(PRINT_JSON, kind, NULL,
				     ledger_scope_type_name((enum ledger_scope_type)r->quota.scope[col]));
		else
			print_uint(PRINT_JSON, kind, NULL, r->quota.scope_used[col]);
	}
	out_close_object();
}

/* Columns QP-QUOTA MRB-QUOTA DENY when the ledger was read; JSON: the row's quota, null when none. */
static void print_quota(const struct top_snap *s, const struct top_row *r)
{
	char qp[48], mrb[72];

	if (r->kind != TOP_PROC || !r->quota.joined) {
		if (s->ledger_joined)
			print_text(" %-11s %-15s %4s", "", "", "");
		print_null(PRINT_JSON, "quota", NULL);
		return;
	}
	out_open_object("quota");
	print_bool(PRINT_JSON, "managed", NULL, r->quota.managed);
	if (r->quota.managed) {
		fmt_quota(r, NL_RES_QP, false, qp, sizeof(qp));
		fmt_quota(r, NL_RES_NTYPES, true, mrb, sizeof(mrb));
	} else {
		snprintf(qp, sizeof(qp), "unmanaged");
		snprintf(mrb, sizeof(mrb), "-");
	}
	print_text(" %-11s %-15s", qp, mrb);
	print_uint(PRINT_ANY, "recent_denials", " %4" PRIu64, r->quota.denials);
	if (r->quota.managed) {
		print_string(PRINT_JSON, "job", NULL, r->quota.job[0] ? r->quota.job : NULL);
		print_quota_part(r, "limits", Q_LIMITS);
		print_quota_part(r, "limit_scopes", Q_LIMIT_SCOPES);
		print_quota_part(r, "scope_usage", Q_SCOPE_USAGE);
		print_quota_part(r, "ledger_usage", Q_LEDGER_USAGE);
	}
	out_close_object();
}

/* Columns QP+/s QP-/s ALL+/s when the BPF counters were read twice; JSON: per kind and in total. */
static void print_rates(const struct top_snap *s, const struct top_row *r)
{
	int k;

	if (r->kind != TOP_PROC || !r->rate.joined) {
		if (s->rates_joined)
			print_text(" %7s %7s %7s", "", "", "");
		print_null(PRINT_JSON, "rates", NULL);
		return;
	}
	out_open_object("rates");
	for (k = 0; k < NL_RES_NTYPES; k++) {
		enum out_type t = k == NL_RES_QP ? PRINT_ANY : PRINT_JSON;

		out_open_object(nl_res_name(k));
		print_double(t, "create", " %7.1f", r->rate.create[k]);
		print_double(t, "destroy", " %7.1f", r->rate.destroy[k]);
		out_close_object();
	}
	out_open_object("total");
	print_double(PRINT_ANY, "create", " %7.1f", r->rate.create_total);
	print_double(PRINT_JSON, "destroy", NULL, r->rate.destroy_total);
	out_close_object();
	out_close_object();
}

static void print_row(const struct top_snap *s, const struct top_row *r, uint32_t unsupported)
{
	unsigned int i;

	out_open_object(NULL);
	if (r->kind == TOP_PROC) {
		print_int(PRINT_ANY, "pid", "%8" PRId64, r->pid);
	} else {
		print_string(PRINT_FP, NULL, "%8s", r->kind == TOP_KERNEL ? "[kernel]" : "?");
		print_int(PRINT_JSON, "pid", NULL, r->pid);
	}
	print_string(PRINT_JSON, "kind", NULL, kind_name(r->kind));
	if (r->kind == TOP_PROC && r->resolved)
		print_uint(PRINT_JSON, "uid", NULL, r->uid);
	else
		print_null(PRINT_JSON, "uid", NULL);
	print_string(PRINT_FP, NULL, " %-10.10s", r->user[0] ? r->user : "-");
	print_string(PRINT_JSON, "user", NULL, r->user[0] ? r->user : NULL);
	print_string(PRINT_ANY, "comm", " %-16.16s", r->comm);
	print_string(PRINT_JSON, "pod_uid", NULL, r->pod_uid[0] ? r->pod_uid : NULL);
	print_string(PRINT_JSON, "container_id", NULL, r->container_id[0] ? r->container_id : NULL);
	print_counts(PRINT_ANY, &r->c, unsupported);
	if (s->source == TOP_SRC_COUNTERS) {
		print_null(PRINT_JSON, "devices", NULL); /* the per-process counters know no devices */
	} else {
		out_open_array("devices");
		for (i = 0; i < s->ndevs; i++)
			if (r->devmask & (1u << i))
				print_string(PRINT_JSON, NULL, NULL, s->devs[i].dev.name);
		out_close_array();
	}
	print_quota(s, r);
	print_rates(s, r);
	if (show_container)
		print_text(" %-12.12s", r->container_id[0] ? r->container_id : "-");
	print_qp_state_col(&r->c);
	end_line();
	out_close_object();
}

void top_print(const struct top_snap *s, const struct top_view *v, struct top_layout *lay)
{
	struct top_layout l = { 0 };
	uint32_t unsupported = 0;
	unsigned int i;
	size_t r;

	nlines = 0;
	no_states = v->no_qp_states;
	out_open_object(NULL);
	print_head(s, v);
	out_open_array("devices");
	for (i = 0; i < s->ndevs; i++) {
		print_dev(&s->devs[i]);
		unsupported |= s->devs[i].unsupported;
	}
	out_close_array();
	if (!s->privileged) {
		print_text("not root: the kernel leaves out MR keys (not shown here); as for root, objects of other "
			   "PID namespaces are not listed, and /proc may hide other users' processes");
		end_line();
	}
	if (s->unresolved) {
		print_text("%u creating thread%s not found in /proc (exited, or hidden): shown under its own id",
			   s->unresolved, s->unresolved == 1 ? "" : "s");
		end_line();
	}
	end_line();
	l.header = nlines;
	print_columns(s);
	l.rows = nlines;
	out_open_array("processes");
	for (r = 0; r < s->nrows; r++)
		print_row(s, &s->rows[r], unsupported);
	out_close_array();
	l.nrows = s->nrows;
	for (i = 0; i < s->ndevs; i++) {
		print_text("%8s %-10.10s %-16.16s", "total", "", s->devs[i].dev.name);
		print_counts(PRINT_FP, &s->devs[i].totals, s->devs[i].unsupported);
		if (s->ledger_joined)
			print_text(" %-11s %-15s %4s", "", "", "");
		if (s->rates_joined)
			print_text(" %7s %7s %7s", "", "", "");
		if (show_container)
			print_text(" %-12s", "");
		print_qp_state_col(&s->devs[i].totals);
		end_line();
	}
	out_open_object("totals");
	print_counts(PRINT_JSON, &s->totals, 0);
	out_close_object();
	out_close_object();
	l.lines = nlines;
	if (lay)
		*lay = l;
}
