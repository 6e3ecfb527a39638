// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: the summary at the end, and --stats (create/destroy rates per process). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "monitor/monfmt.h"
#include "monitor.h"
#include "core/out.h"
#include "core/proc.h"
#include "core/util.h"

/* --- summary ----------------------------------------------------------------------------------------- */

struct proc_sum *proc_sum(pid_t tgid, const char *comm)
{
	static size_t last;
	struct proc_sum *p;
	size_t i;

	if (last < monitor_summary.n && monitor_summary.procs[last].tgid == tgid)
		return &monitor_summary.procs[last];
	for (i = 0; i < monitor_summary.n; i++)
		if (monitor_summary.procs[i].tgid == tgid)
			return &monitor_summary.procs[last = i];
	if (monitor_summary.n == monitor_summary.cap) {
		size_t cap = monitor_summary.cap ? monitor_summary.cap * 2 : 64;
		p = realloc(monitor_summary.procs, cap * sizeof(*p));
		if (!p)
			return NULL;
		monitor_summary.procs = p;
		monitor_summary.cap = cap;
	}
	p = &monitor_summary.procs[monitor_summary.n];
	memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	last = monitor_summary.n++;
	return p;
}

/* Per kind with any event: {"qp": {"create": 2, "destroy": 1}} in JSON, " qp +2/-1" in text. */
static void print_type_counts(const char *key, const uint64_t n[2][RESTRACK_NTYPES])
{
	int i;

	out_open_object(key);
	for (i = 0; i < RESTRACK_NTYPES; i++) {
		if (!n[0][i] && !n[1][i])
			continue;
		out_open_object(mon_type_name(i));
		print_string(PRINT_FP, NULL, " %s", mon_type_name(i));
		print_uint(PRINT_ANY, "create", " +%" PRIu64, n[0][i]);
		print_uint(PRINT_ANY, "destroy", "/-%" PRIu64, n[1][i]);
		out_close_object();
	}
	out_close_object();
}

void print_summary(const struct mon_lost *lost)
{
	double dur = clock_mono_s() - monitor_summary.start;
	/* pending: destroys prepared ahead, which the programs no longer do: 0, kept for readers of the output */
	uint64_t ring = lost ? lost->ring : 0, counters = lost ? lost->counters : 0, pending = 0;
	size_t i;

	out_open_object(NULL);
	print_string(PRINT_JSON, "event", NULL, "summary");
	print_text("\nSummary: %" PRIu64 " events in %.1f s, %" PRIu64 " device events, %" PRIu64 " denials, lost %" PRIu64
		   " (ring %" PRIu64 ", counters %" PRIu64 ", pending %" PRIu64 ")\n",
		   monitor_summary.events, dur, monitor_summary.devices, monitor_summary.denials, ring + counters + pending,
		   ring, counters, pending);
	print_fixed(PRINT_JSON, "duration_s", NULL, dur, 3);
	print_uint(PRINT_JSON, "events", NULL, monitor_summary.events);
	print_uint(PRINT_JSON, "device_events", NULL, monitor_summary.devices);
	print_uint(PRINT_JSON, "denials", NULL, monitor_summary.denials);
	out_open_object("lost");
	print_uint(PRINT_JSON, "ring", NULL, ring);
	print_uint(PRINT_JSON, "counters", NULL, counters);
	print_uint(PRINT_JSON, "pending", NULL, pending);
	out_close_object();
	print_text("  %-22s", "all (create/destroy)");
	print_type_counts("types", (const uint64_t(*)[RESTRACK_NTYPES])monitor_summary.types);
	print_nl();
	out_open_array("processes");
	for (i = 0; i < monitor_summary.n; i++) {
		out_open_object(NULL);
		print_int(PRINT_ANY, "pid", "  %-7" PRId64, monitor_summary.procs[i].tgid);
		print_string(PRINT_ANY, "comm", " %-14s", monitor_summary.procs[i].comm);
		print_type_counts("types", (const uint64_t(*)[RESTRACK_NTYPES])monitor_summary.procs[i].n);
		print_nl();
		out_close_object();
	}
	out_close_array();
	out_close_object();
	out_flush();
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
	if (!any || (mopt.pid && tgid != mopt.pid))
		return 0;
	if (tgid)
		proc_comm(tgid, comm, sizeof(comm));
	else
		snprintf(comm, sizeof(comm), "[kernel]");
	out_open_object(NULL);
	print_int(PRINT_ANY, "pid", "  %-7" PRId64, tgid);
	print_string(PRINT_ANY, "comm", " %-15.15s", comm);
	if (out_is_json()) {
		out_open_object("create_per_s");
		for (t = 0; t < RESTRACK_NTYPES; t++)
			if ((mopt.type < 0 || t == mopt.type) && c->create[t] != p->create[t])
				print_fixed(PRINT_JSON, mon_type_name(t), NULL, (c->create[t] - p->create[t]) / rates.dt, 2);
		out_close_object();
		out_open_object("destroy_per_s");
		for (t = 0; t < RESTRACK_NTYPES; t++)
			if ((mopt.type < 0 || t == mopt.type) && c->destroy[t] != p->destroy[t])
				print_fixed(PRINT_JSON, mon_type_name(t), NULL, (c->destroy[t] - p->destroy[t]) / rates.dt, 2);
		out_close_object();
	}
	for (t = 0; t < RESTRACK_NTYPES; t++) {
		if (mopt.type >= 0 && t != mopt.type)
			continue;
		if (c->create[t] != p->create[t] || c->destroy[t] != p->destroy[t])
			print_text(" %s +%.1f/-%.1f", mon_type_name(t), (c->create[t] - p->create[t]) / rates.dt,
				   (c->destroy[t] - p->destroy[t]) / rates.dt);
	}
	print_nl();
	out_close_object();
	return 0;
}

void print_rates(double dt, bool show)
{
	struct rate_prev *tmp;
	char tbuf[MON_TIME_LEN];
	size_t tcap;

	rates.dt = dt > 0 ? dt : 1;
	rates.nn = 0;
	if (show) {
		uint64_t now = clock_rt_ns();

		out_open_object(NULL);
		print_string(PRINT_JSON, "time", NULL, mon_time_iso(now, tbuf, sizeof(tbuf)));
		print_string(PRINT_FP, NULL, "%s rates per second (create/destroy):\n",
			     mon_time_text(now, tbuf, sizeof(tbuf)));
		print_string(PRINT_JSON, "event", NULL, "stats");
		print_fixed(PRINT_JSON, "interval_s", NULL, dt, 3);
		out_open_array("processes");
	}
	mon_counters_foreach(mon_counters_fd(monitor_bpf), rate_cb, &show);
	if (show) {
		out_close_array();
		out_close_object();
		out_flush();
	}
	tmp = rates.v;
	tcap = rates.cap;
	rates.v = rates.nv;
	rates.n = rates.nn;
	rates.cap = rates.ncap;
	rates.nv = tmp;
	rates.ncap = tcap;
}


void stats_free(void)
{
	free(monitor_summary.procs);
	free(rates.v);
	free(rates.nv);
}
