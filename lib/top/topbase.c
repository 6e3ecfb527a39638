// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* When the monitor's counters are counts of what exists: the baseline (monitor) and the check (top). */
#include "top/top.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/*
 * The rule (doc/fleet-scale.md, "Counts from the counters"):
 *  - the monitor's program counts a create on return from rdma_restrack_add (after the object went into the
 *    device's table) and a destroy on entry to rdma_restrack_del/commit_del (before it leaves the table);
 *  - the baseline: after attaching, the monitor reads the counters (R1), dumps every object over RDMA netlink,
 *    reads them again (R2). With R1 == R2 no hook ran during the dump, so an object of before the attach that
 *    is still there was in the table for the whole dump and the dump lists it; one already gone had its
 *    destroy counted (its owner's count goes below zero) or not at all (no effect). So: no user object in the
 *    dump and no owner below zero means every user object that exists was counted when it was created;
 *  - from then on, per owner, live = creates - destroys, as long as no count was lost (lost_counters, which
 *    the program keeps in the pinned status) and no owner goes below zero;
 *  - a safety net on every read: per device and kind, the kernel's own count (RDMA_NLDEV_CMD_RES_GET)
 *    equals what the dump found at the baseline plus the device counters' change since. It catches what the
 *    argument above does not cover (objects a driver keeps out of the table, a destroy the driver refused
 *    while the dump ran, a count lost to a prune racing a reused pid) and the moments an operation is
 *    between the table and its hook: top then takes the dump.
 */

int64_t top_live(const struct mon_counts *c, unsigned int t)
{
	return (int64_t)(c->create[t] - c->destroy[t]);
}

static int64_t live_bytes(const struct mon_counts *c)
{
	return (int64_t)(c->mr_bytes_create - c->mr_bytes_destroy);
}

bool top_counters_equal(const struct top_counters *a, const struct top_counters *b)
{
	size_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (a->v[i].tgid != b->v[i].tgid || memcmp(&a->v[i].c, &b->v[i].c, sizeof(a->v[i].c)))
			return false;
	return true;
}

pid_t top_counters_negative(const struct top_counters *c)
{
	size_t i;
	unsigned int t;

	for (i = 0; i < c->n; i++) {
		if (c->v[i].tgid <= 0)
			continue; /* kernel objects: those of before the monitor go below zero when destroyed */
		for (t = 0; t < RESTRACK_NTYPES; t++)
			if (top_live(&c->v[i].c, t) < 0)
				return c->v[i].tgid;
		if (live_bytes(&c->v[i].c) < 0)
			return c->v[i].tgid;
	}
	return 0;
}

static const struct mon_counts *find(const struct top_counters *c, pid_t key)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->v[mid].tgid == key)
			return &c->v[mid].c;
		if (c->v[mid].tgid < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int top_base_check(const struct top_snap *dump, const struct top_counters *c1, const struct top_counters *c2,
		   const struct top_counters *dev, char *why, size_t len)
{
	size_t r;
	pid_t neg;

	if (!top_counters_equal(c1, c2)) {
		snprintf(why, len, "objects were created or destroyed during the dump");
		return -EAGAIN;
	}
	for (r = 0; r < dump->nrows; r++)
		if (dump->rows[r].kind != TOP_KERNEL) {
			snprintf(why, len, "user objects of before the monitor exist (pid %d, %s)", (int)dump->rows[r].pid,
				 dump->rows[r].comm);
			return -EEXIST;
		}
	neg = top_counters_negative(c2);
	if (neg) {
		snprintf(why, len, "pid %d destroyed objects of before the monitor", (int)neg);
		return -EEXIST;
	}
	if (dump->ndevs > MON_BASE_DEVS) {
		snprintf(why, len, "more than %d devices", MON_BASE_DEVS);
		return -E2BIG;
	}
	(void)dev;
	return 0;
}

void top_base_fill(struct mon_status *st, const struct top_snap *dump, const struct top_counters *dev)
{
	static const struct mon_counts zero;
	unsigned int i, t;

	for (i = 0; i < dump->ndevs && i < MON_BASE_DEVS; i++) {
		const struct top_dev *d = &dump->devs[i];
		const struct mon_counts *c = find(dev, (pid_t)d->dev.index);
		struct mon_devbase *b = &st->dev[i];

		if (!c)
			c = &zero;
		memset(b, 0, sizeof(*b));
		b->index = d->dev.index;
		for (t = 0; t < RESTRACK_NTYPES; t++) {
			int k = kind_nl_of_restrack[t];

			b->base[t] = (k >= 0 ? (int64_t)d->totals.n[k] : 0) - top_live(c, t);
		}
		b->base_mr_bytes = (int64_t)d->totals.mr_bytes - live_bytes(c);
	}
	st->ndevs = i;
}

static const struct mon_devbase *base_of(const struct mon_status *st, uint32_t index)
{
	unsigned int i;

	for (i = 0; i < st->ndevs && i < MON_BASE_DEVS; i++)
		if (st->dev[i].index == index)
			return &st->dev[i];
	return NULL;
}

int top_counts_check(const struct mon_status *st, struct top_snap *s, const struct top_counters *dev, char *why,
		     size_t len)
{
	static const struct mon_counts zero;
	static const struct mon_devbase none;
	unsigned int i, t;

	for (i = 0; i < s->ndevs; i++) {
		struct top_dev *d = &s->devs[i];
		const struct mon_devbase *b = base_of(st, d->dev.index);
		const struct mon_counts *c = find(dev, (pid_t)d->dev.index);

		if (!d->has_summary) {
			snprintf(why, len, "no kernel summary of %s", d->dev.name);
			return -ENODATA;
		}
		if (!b)
			b = &none; /* a device added after the baseline: every object on it was counted */
		if (!c)
			c = &zero;
		for (t = 0; t < RESTRACK_NTYPES; t++) {
			int k = kind_nl_of_restrack[t];
			int64_t want;

			if (k < 0 || !(d->summary.present & (1u << k)))
				continue;
			want = b->base[t] + top_live(c, t);
			if (want < 0 || (uint64_t)want != d->summary.curr[k]) {
				snprintf(why, len, "%s: the kernel counts %" PRIu64 " %s, the counters %" PRId64,
					 d->dev.name, d->summary.curr[k], nl_res_name(k), want);
				return -ESTALE;
			}
			d->totals.n[k] = (uint64_t)want;
		}
		d->totals.mr_bytes = (uint64_t)(b->base_mr_bytes + live_bytes(c));
	}
	return 0;
}
