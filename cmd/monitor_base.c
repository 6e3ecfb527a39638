// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: the baseline that makes its pinned counters counts of what exists (lib/top/topbase.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "monitor.h"
#include "rdmactl.h"
#include "top/top.h"
#include "core/util.h"

static struct {
	bool done;
	double next;
	double wait;	/* seconds to the next attempt: 2, doubling to 60 (each attempt dumps every object) */
	uint64_t attempts;
	double next_look;	/* next look at the counters (every second) */
	double not_before;	/* no attempt before: 10 times the last attempt's duration after it (a dump of
				 * many objects costs the kernel seconds; at most a tenth of the time goes to them) */
	struct top_counters last; /* the counters as the last failed attempt left them */
	char why[192];	/* the last reason told with -v */
} base = { .wait = 2 };

/* One attempt: counters, device counters, the dump, both again; 0 when the baseline is written. */
static int attempt(char *why, size_t len)
{
	struct top_counters c1 = { 0 }, c2 = { 0 }, d1 = { 0 }, d2 = { 0 };
	int cfd = mon_counters_fd(monitor_bpf), dfd = mon_devcounters_fd(monitor_bpf);
	struct mon_status *st = mon_status_of(monitor_bpf), nb;
	struct top_ctx *t = NULL;
	struct top_snap s = { 0 };
	int ret;

	/* exited processes with nothing live: those that destroyed objects of before the monitor go */
	mon_counters_prune(cfd);
	ret = top_open(&t);
	if (!ret)
		ret = top_counters_read(cfd, &c1);
	if (!ret)
		ret = top_counters_read(dfd, &d1);
	if (!ret)
		ret = top_snapshot(t, NULL, &s);
	if (!ret)
		ret = top_counters_read(dfd, &d2);
	if (!ret)
		ret = top_counters_read(cfd, &c2);
	if (ret) {
		snprintf(why, len, "%s", strerror(-ret));
		goto out;
	}
	if (!top_counters_equal(&d1, &d2)) {
		snprintf(why, len, "objects were created or destroyed during the dump");
		ret = -EAGAIN;
		goto out;
	}
	ret = top_base_check(&s, &c1, &c2, &d2, why, len);
	if (ret)
		goto out;
	memset(&nb, 0, sizeof(nb));
	top_base_fill(&nb, &s, &d2);
	/* Field by field into the mapping: lost_counters is the program's. seq last, for readers. */
	nb.dev[0].aux = mon_map_id(mon_qpids_fd(monitor_bpf));
	/* who keeps these counters counting, as the pins named it (lib/monitor/bpfmon.c): kept */
	mon_status_pid(&nb) = mon_status_pid(st);
	mon_status_start(&nb) = mon_status_start(st);
	mon_status_pidns(&nb) = mon_status_pidns(st);
	memcpy(st->dev, nb.dev, sizeof(st->dev));
	st->ndevs = nb.ndevs;
	st->counters_id = mon_map_id(cfd);
	st->devcounters_id = mon_map_id(dfd);
	st->established_ns = clock_mono_ns();
	st->complete = 1;
	__atomic_store_n(&st->seq, base.attempts, __ATOMIC_RELEASE);
out:
	top_snap_free(&s);
	top_close(t);
	top_counters_free(&c1);
	top_counters_free(&base.last);
	base.last = c2; /* what to compare with before trying again */
	top_counters_free(&d1);
	top_counters_free(&d2);
	return ret;
}

/*
 * At start, then whenever the counters changed since the last failed attempt (looked at every second: the
 * objects in the way may be gone), else after a wait that doubles from 2 s to 60 s; never sooner than 10
 * times the last attempt's duration after it.
 */
void monitor_baseline(void)
{
	char why[sizeof(base.why)] = "";
	double now = clock_mono_s();
	struct top_counters cur;

	if (base.done || !mon_status_of(monitor_bpf))
		return;
	if (base.attempts && now < base.next) {
		if (now < base.next_look || now < base.not_before)
			return;
		base.next_look = now + 1;
		mon_counters_prune(mon_counters_fd(monitor_bpf)); /* a process in the way may have exited */
		if (top_counters_read(mon_counters_fd(monitor_bpf), &cur))
			return;
		bool same = top_counters_equal(&cur, &base.last);

		top_counters_free(&cur);
		if (same)
			return;
	}
	base.attempts++;
	now = clock_mono_s();
	if (!attempt(why, sizeof(why))) {
		base.done = true;
		top_counters_free(&base.last);
		pr_debug("counts complete from now on: top can take them from the counters (attempt %" PRIu64 ")",
			 base.attempts);
		return;
	}
	if (strcmp(why, base.why))
		pr_debug("no complete counts yet: %s (trying again when they change, or in %.0f s)", why, base.wait);
	snprintf(base.why, sizeof(base.why), "%s", why);
	base.not_before = clock_mono_s() + 10 * (clock_mono_s() - now);
	base.next = clock_mono_s() + base.wait;
	if (base.next < base.not_before)
		base.next = base.not_before;
	base.next_look = clock_mono_s() + 1;
	base.wait = base.wait * 2 > 60 ? 60 : base.wait * 2;
}
