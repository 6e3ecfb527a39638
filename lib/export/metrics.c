// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What rdmactl export publishes, gathered into structs: objects per cgroup, device and process, quotas, refusals, counters. */
#include "export/metrics.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "core/cgroup.h"
#include "core/proc.h"

const char *const metrics_source_names[METRICS_SRC_NR] = {
	[METRICS_SRC_NETLINK] = "netlink",
	[METRICS_SRC_LEDGER] = "ledger",
	[METRICS_SRC_MONITOR] = "monitor",
	[METRICS_SRC_KERNEL] = "kernel",
};

const char *const metrics_state_names[METRICS_STATE_NR] = {
	[METRICS_STATE_UP] = "up",
	[METRICS_STATE_ABSENT] = "absent",
	[METRICS_STATE_DOWN] = "down",
};

const char *const metrics_dump_why_names[METRICS_DUMP_NR] = {
#define X(name, word) [METRICS_DUMP_##name] = word,
	METRICS_DUMP_WHYS(X)
#undef X
};

enum metrics_dump_why metrics_dump_why_of(int err)
{
	switch (err) {
	case 0:
		return METRICS_DUMP_NONE;
	case -ENOENT:
	case -ESRCH: /* the monitor that pinned the counters is gone */
		return METRICS_DUMP_NO_MONITOR;
	case -EPERM:
	case -EACCES:
		return METRICS_DUMP_NO_ACCESS;
	case -ENOSPC:
		return METRICS_DUMP_LOST;
	case -ENODATA:
		return METRICS_DUMP_INCOMPLETE;
	case -EAGAIN:
	case -EINTR:
	case -ENODEV:
		return METRICS_DUMP_BUSY;
	case -ESTALE:
		return METRICS_DUMP_MISMATCH;
	default:
		return METRICS_DUMP_ERROR;
	}
}

const char *metrics_scope_name(int scope)
{
	if (scope == METRICS_SCOPE_UNATTRIBUTED)
		return "unattributed";
	return ledger_scope_type_name((enum ledger_scope_type)scope);
}

/* --- small maps: pid -> index, path -> index ------------------------------------------------------ */

struct imap {
	size_t cap, used;
	struct {
		uint64_t h;
		size_t idx;	/* SIZE_MAX: empty */
	} *s;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/*
 * Find the entry with hash h for which eq(idx) holds; if none, add idx_new under h. Returns the index found
 * or idx_new, or SIZE_MAX when memory ran out.
 */
static size_t imap_get(struct imap *m, uint64_t h, size_t idx_new, bool (*eq)(size_t idx, const void *key, const void *ctx),
		       const void *key, const void *ctx)
{
	size_t i, j;

	if ((m->used + 1) * 2 > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64, old_cap = m->cap;
		typeof(m->s) old = m->s;

		m->s = malloc(cap * sizeof(*m->s));
		if (!m->s) {
			m->s = old;
			return SIZE_MAX;
		}
		for (i = 0; i < cap; i++)
			m->s[i].idx = SIZE_MAX;
		m->cap = cap;
		for (j = 0; j < old_cap; j++) {
			if (old[j].idx == SIZE_MAX)
				continue;
			for (i = old[j].h & (cap - 1); m->s[i].idx != SIZE_MAX; i = (i + 1) & (cap - 1))
				;
			m->s[i] = old[j];
		}
		free(old);
	}
	for (i = h & (m->cap - 1); m->s[i].idx != SIZE_MAX; i = (i + 1) & (m->cap - 1))
		if (m->s[i].h == h && eq(m->s[i].idx, key, ctx))
			return m->s[i].idx;
	m->s[i].h = h;
	m->s[i].idx = idx_new;
	m->used++;
	return idx_new;
}

static void imap_free(struct imap *m)
{
	free(m->s);
	memset(m, 0, sizeof(*m));
}

/* Append one zeroed element to *v (n elements so far): its address, or NULL. */
static void *push(void *v, size_t *n, size_t *cap, size_t size)
{
	void **pv = v;
	char *p;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;

		p = realloc(*pv, c * size);
		if (!p)
			return NULL;
		*pv = p;
		*cap = c;
	}
	p = (char *)*pv + *n * size;
	memset(p, 0, size);
	(*n)++;
	return p;
}

/* --- context -------------------------------------------------------------------------------------- */

struct metrics_ctx {
	struct metrics_opts o;
	char cgroot[PATH_MAX];
	struct top_ctx *top;
	int top_err;
	char devnames[TOP_MAX_DEVS][NL_NAME_LEN];	/* the devices of the last collection */
	unsigned int ndevnames;
	unsigned int ndevs_total;	/* more than TOP_MAX_DEVS: only the first ones are exported */
	bool devnames_known;
	/* the ledger, opened while its file stays the same */
	struct ledger *ledger;
	dev_t ledger_dev;
	ino_t ledger_ino;
	struct {
		uint64_t since;
		uint64_t total;
		uint64_t scope[LEDGER_SCOPE_GLOBAL + 1][LEDGER_NKINDS];
		uint64_t unattributed[LEDGER_NKINDS];
	} ref;
	/* the kernel quota programs' maps, opened read-only while they can be read */
	struct kq *kq;
	/* the monitor's counters: the map's id, the last read, what exited processes had */
	struct {
		uint32_t map_id;
		struct top_counters prev;
		struct mon_counts retired;
	} mon;
};

int metrics_open(const struct metrics_opts *o, struct metrics_ctx **out)
{
	struct metrics_ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	if (o)
		x->o = *o;
	cgroup2_root(x->cgroot, sizeof(x->cgroot));
	*out = x;
	return 0;
}

void metrics_close(struct metrics_ctx *x)
{
	if (!x)
		return;
	top_close(x->top);
	if (x->ledger)
		ledger_close(x->ledger);
	top_counters_free(&x->mon.prev);
	kq_close(x->kq);
	free(x);
}

void metrics_snap_free(struct metrics_snap *s)
{
	free(s->cgroups);
	free(s->cg_counts);
	free(s->procs);
	free(s->proc_counts);
	free(s->scopes);
	free(s->kscopes);
	free(s->rdmacg);
	memset(s, 0, sizeof(*s));
}

/* --- netlink -------------------------------------------------------------------------------------- */

static int take(struct metrics_ctx *x, const char *dev, struct top_snap *s)
{
	struct top_filter f = { .dev = dev };

	return top_snapshot(x->top, dev ? &f : NULL, s);
}

static void snaps_free(struct top_snap *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; v && i < n; i++)
		top_snap_free(&v[i]);
	free(v);
}

/* Snapshots of one device each (or one snapshot without any device): *n of them in *out. */
static int take_per_device(struct metrics_ctx *x, struct top_snap **out, unsigned int *n)
{
	struct top_snap *v;
	unsigned int i, round;
	int ret;

	for (round = 0; round < 2; round++) {
		if (x->devnames_known && x->ndevnames) {
			v = calloc(x->ndevnames, sizeof(*v));
			if (!v)
				return -ENOMEM;
			for (i = 0; i < x->ndevnames; i++) {
				ret = take(x, x->devnames[i], &v[i]);
				if (ret) {
					snaps_free(v, i);
					return ret;
				}
				/* the set of devices changed (one gone, renamed or added): learn it again */
				if (v[i].ndevs != 1 || v[i].ndevs_total != x->ndevs_total) {
					i++;
					break;
				}
			}
			if (i == x->ndevnames && v[i - 1].ndevs == 1 && v[i - 1].ndevs_total == x->ndevs_total) {
				*out = v;
				*n = x->ndevnames;
				return 0;
			}
			snaps_free(v, i);
			if (round)
				break;
		}
		/* learn the devices from a whole snapshot; with one device (or none) it is the answer */
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
		ret = take(x, NULL, v);
		if (ret) {
			free(v);
			return ret;
		}
		x->ndevnames = v->ndevs;
		x->ndevs_total = v->ndevs_total;
		for (i = 0; i < v->ndevs; i++)
			snprintf(x->devnames[i], sizeof(x->devnames[i]), "%s", v->devs[i].dev.name);
		x->devnames_known = true;
		if (v->ndevs <= 1) {
			*out = v;
			*n = 1;
			return 0;
		}
		snaps_free(v, 1);
	}
	return -EAGAIN;
}

/*
 * One snapshot of every device, its rows summed over them (no_qp_states): from the monitor's counters when
 * top_snapshot_counters() proves them complete, else the dump. The source and why into s.
 */
static int take_summed(struct metrics_ctx *x, struct metrics_snap *s, struct top_snap **out, unsigned int *n)
{
	struct top_snap *v = calloc(1, sizeof(*v));
	int ret;

	if (!v)
		return -ENOMEM;
	ret = top_snapshot_counters(x->top, NULL, v, !x->o.no_qp_states, s->source_why, sizeof(s->source_why));
	s->why_dump = metrics_dump_why_of(ret);
	if (ret == -ENOMEM) {
		free(v);
		return ret;
	}
	if (ret)
		ret = take(x, NULL, v);
	if (ret) {
		free(v);
		return ret;
	}
	s->source = v->source;
	*out = v;
	*n = 1;
	return 0;
}

struct gather {
	struct metrics_snap *s;
	struct imap pids, paths;
	size_t cap_cg, cap_cgc, cap_p, cap_pc;
	/* per cgroup: where its counts of the device being added are (SIZE_MAX: not yet) */
	size_t *cg_pos;
	size_t cap_pos;
};

static bool eq_pid(size_t idx, const void *key, const void *ctx)
{
	const struct metrics_snap *s = ctx;

	return s->procs[idx].pid == *(const pid_t *)key;
}

static bool eq_path(size_t idx, const void *key, const void *ctx)
{
	const struct metrics_snap *s = ctx;

	return !strcmp(s->cgroups[idx].path, key);
}

/* Index of the cgroup with this path, added when new; SIZE_MAX when memory ran out. */
static size_t cgroup_of(struct gather *g, const char *path)
{
	struct metrics_snap *s = g->s;
	struct metrics_cgroup *c;
	size_t idx;

	idx = imap_get(&g->paths, hash_str(path), s->ncgroups, eq_path, path, s);
	if (idx != s->ncgroups)
		return idx;
	c = push(&s->cgroups, &s->ncgroups, &g->cap_cg, sizeof(*c));
	if (!c)
		return SIZE_MAX;
	snprintf(c->path, sizeof(c->path), "%s", path);
	cgroup_ids(path, &c->ids);
	if (g->cap_pos < s->ncgroups) {
		size_t cap = g->cap_pos ? 2 * g->cap_pos : 64;
		size_t *p = realloc(g->cg_pos, cap * sizeof(*p));

		if (!p)
			return SIZE_MAX;
		g->cg_pos = p;
		g->cap_pos = cap;
	}
	g->cg_pos[idx] = SIZE_MAX;
	return idx;
}

static void add_counts(struct top_counts *to, const struct top_counts *c)
{
	int t;

	for (t = 0; t < NL_RES_NTYPES; t++)
		to->n[t] += c->n[t];
	to->mr_bytes += c->mr_bytes;
	for (t = 0; t < TOP_QP_NSTATES; t++)
		to->qp_state[t] += c->qp_state[t];
}

/* The process rows of one device's snapshot into processes, cgroups and their counts on device dev. */
static int gather_dev(struct gather *g, const struct top_snap *ts, unsigned int dev)
{
	struct metrics_snap *s = g->s;
	struct metrics_count *cnt;
	struct metrics_proc *p;
	char path[LEDGER_CGROUP_MAX];
	size_t r, pi, cg;

	for (r = 0; r < s->ncgroups; r++)
		g->cg_pos[r] = SIZE_MAX;
	for (r = 0; r < ts->nrows; r++) {
		const struct top_row *row = &ts->rows[r];

		/* kernel objects, and objects of threads already gone, are in the device totals only */
		if (row->kind != TOP_PROC || !row->resolved)
			continue;
		pi = imap_get(&g->pids, (uint64_t)row->pid, s->nprocs, eq_pid, &row->pid, s);
		if (pi == SIZE_MAX)
			return -ENOMEM;
		if (pi == s->nprocs) {
			p = push(&s->procs, &s->nprocs, &g->cap_p, sizeof(*p));
			if (!p)
				return -ENOMEM;
			p->pid = row->pid;
			p->start_time = row->start_time;
			snprintf(p->comm, sizeof(p->comm), "%s", row->comm);
			if (proc_cgroup(row->pid, path, sizeof(path)))
				path[0] = '\0';
			cg = cgroup_of(g, path);
			if (cg == SIZE_MAX)
				return -ENOMEM;
			p->cg = cg;
			s->cgroups[cg].nprocs++;
		}
		cnt = push(&s->proc_counts, &s->nproc_counts, &g->cap_pc, sizeof(*cnt));
		if (!cnt)
			return -ENOMEM;
		cnt->owner = pi;
		cnt->dev = dev;
		cnt->c = row->c;
		cg = s->procs[pi].cg;
		if (g->cg_pos[cg] == SIZE_MAX) {
			cnt = push(&s->cg_counts, &s->ncg_counts, &g->cap_cgc, sizeof(*cnt));
			if (!cnt)
				return -ENOMEM;
			cnt->owner = cg;
			cnt->dev = dev;
			g->cg_pos[cg] = s->ncg_counts - 1;
		}
		add_counts(&s->cg_counts[g->cg_pos[cg]].c, &row->c);
	}
	return 0;
}

/* src is there and could not be read. */
static void set_err(struct metrics_snap *s, enum metrics_source src, int err, const char *fmt, const char *arg)
{
	s->err[src] = err;
	s->state[src] = METRICS_STATE_DOWN;
	snprintf(s->why[src], sizeof(s->why[src]), fmt, arg);
}

/* src is not there to be read (see enum metrics_source_state). */
static void set_absent(struct metrics_snap *s, enum metrics_source src, int err, const char *fmt, const char *arg)
{
	set_err(s, src, err, fmt, arg);
	s->state[src] = METRICS_STATE_ABSENT;
}

static int collect_netlink(struct metrics_ctx *x, struct gather *g)
{
	struct metrics_snap *s = g->s;
	struct top_snap *v = NULL;
	unsigned int n = 0, i;
	int ret;

	s->no_qp_states = x->o.no_qp_states;
	s->summed = x->o.no_qp_states || x->o.counters;
	s->source = TOP_SRC_DUMP;
	s->why_dump = METRICS_DUMP_QP_STATES;
	if (!x->top) {
		ret = top_open(&x->top);
		if (ret) {
			x->top = NULL;
			if (ret == -EPROTONOSUPPORT || ret == -EAFNOSUPPORT)
				set_absent(s, METRICS_SRC_NETLINK, ret, "cannot open RDMA netlink: %s",
					   "no RDMA support in the kernel (ib_core)");
			else
				set_err(s, METRICS_SRC_NETLINK, ret, "cannot open RDMA netlink: %s", strerror(-ret));
			return 0;
		}
	}
	if (s->summed)
		ret = take_summed(x, s, &v, &n);
	else
		ret = take_per_device(x, &v, &n);
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%s%s%s", strerror(-ret), *top_ext_ack(x->top) ? ": " : "",
			 top_ext_ack(x->top));
		set_err(s, METRICS_SRC_NETLINK, ret, "RDMA netlink dump failed: %s", msg);
		/* a socket in a bad state is opened anew next time */
		top_close(x->top);
		x->top = NULL;
		x->devnames_known = false;
		return 0;
	}
	if (s->summed) {
		/* one snapshot of every device, each process's objects summed over them */
		for (i = 0; i < v->ndevs && i < TOP_MAX_DEVS; i++)
			s->devs[i] = v->devs[i];
		s->ndevs = i;
		ret = gather_dev(g, v, METRICS_ALL_DEVS);
	} else {
		for (i = 0; i < n && s->ndevs < TOP_MAX_DEVS; i++) {
			if (v[i].ndevs != 1)
				continue;
			s->devs[s->ndevs] = v[i].devs[0];
			ret = gather_dev(g, &v[i], s->ndevs);
			if (ret)
				break;
			s->ndevs++;
		}
	}
	snaps_free(v, n);
	return ret;
}

/* --- ledger --------------------------------------------------------------------------------------- */

static const char *ledger_file(const struct metrics_ctx *x)
{
	return x->o.ledger ? x->o.ledger : ledger_default_path();
}

/* The ledger, (re)opened when its file was replaced (quota init) or is gone. */
static int ledger_get(struct metrics_ctx *x, struct metrics_snap *s)
{
	struct stat st;
	int ret;

	if (stat(ledger_file(x), &st)) {
		ret = -errno;
		if (x->ledger)
			ledger_close(x->ledger);
		x->ledger = NULL;
		/* no ledger where no limit was ever set: nothing to read, nothing wrong */
		if (s && ret == -ENOENT)
			set_absent(s, METRICS_SRC_LEDGER, ret, "no quota ledger: %s", "not created (rdmactl quota init)");
		else if (s)
			set_err(s, METRICS_SRC_LEDGER, ret, "no quota ledger: %s", strerror(-ret));
		return ret;
	}
	if (x->ledger && st.st_dev == x->ledger_dev && st.st_ino == x->ledger_ino)
		return 0;
	if (x->ledger)
		ledger_close(x->ledger);
	x->ledger = NULL;
	ret = ledger_open(x->o.ledger, 0, &x->ledger);
	if (ret) {
		x->ledger = NULL;
		if (s)
			set_err(s, METRICS_SRC_LEDGER, ret, "cannot open the quota ledger: %s", ledger_error());
		return ret;
	}
	x->ledger_dev = st.st_dev;
	x->ledger_ino = st.st_ino;
	/* another ledger: its refusals are counted from its start */
	memset(&x->ref, 0, sizeof(x->ref));
	return 0;
}

static int on_denial(const struct ledger_denial_event *ev, void *arg)
{
	struct metrics_ctx *x = arg;

	if ((unsigned int)ev->d.scope.type <= LEDGER_SCOPE_GLOBAL && (unsigned int)ev->d.kind < LEDGER_NKINDS)
		x->ref.scope[ev->d.scope.type][ev->d.kind]++;
	return 0;
}

/* Fold new refusals into the per-scope counts (see metrics.h). */
static int refusals_fold(struct metrics_ctx *x)
{
	uint64_t total, per_kind[LEDGER_NKINDS], sum, rest;
	int k, sc, ret;

	ret = ledger_denial_counts(x->ledger, &total, per_kind);
	if (ret)
		return ret;
	if (total < x->ref.total)
		memset(&x->ref, 0, sizeof(x->ref)); /* the counts went back: a new ledger in the same file */
	if (x->o.follow) {
		ret = ledger_foreach_denial(x->ledger, &x->ref.since, on_denial, x);
		if (ret)
			return ret < 0 ? ret : -EIO;
	}
	x->ref.total = total;
	for (k = 0; k < LEDGER_NKINDS; k++) {
		for (sum = 0, sc = 0; sc <= LEDGER_SCOPE_GLOBAL; sc++)
			sum += x->ref.scope[sc][k];
		rest = per_kind[k] > sum ? per_kind[k] - sum : 0;
		/* an event can be seen in the ring just before its kind's count moves: never go down */
		if (rest > x->ref.unattributed[k])
			x->ref.unattributed[k] = rest;
	}
	return 0;
}

static int collect_ledger(struct metrics_ctx *x, struct gather *g)
{
	struct metrics_snap *s = g->s;
	struct top_ledger v;
	size_t i;
	int ret, sc, k;

	if (ledger_get(x, s))
		return 0;
	s->slots = ledger_capacity(x->ledger, &s->slots_used);
	/* top's join: the same read of the ledger, the same "managed" */
	ret = top_ledger_read(x->ledger, &v);
	if (!ret)
		ret = refusals_fold(x);
	if (ret == -ENOMEM) {
		top_ledger_free(&v);
		return -ENOMEM;
	}
	if (ret) {
		top_ledger_free(&v);
		set_err(s, METRICS_SRC_LEDGER, ret < 0 ? ret : -EIO, "reading the quota ledger failed: %s",
			strerror(ret < 0 ? -ret : EIO));
		/* a ledger that fails to read is opened anew next time */
		ledger_close(x->ledger);
		x->ledger = NULL;
		return 0;
	}
	for (i = 0; i < s->nprocs; i++) {
		s->procs[i].managed = top_ledger_proc(&v, s->procs[i].pid, s->procs[i].start_time) != NULL;
		if (s->procs[i].managed)
			s->cgroups[s->procs[i].cg].nmanaged++;
	}
	s->scopes = v.scopes;
	s->nscopes = v.nscopes;
	v.scopes = NULL;
	top_ledger_free(&v);
	/* cgroups with a ledger entry get their identities (and rdma cgroup files) too */
	for (i = 0; i < s->nscopes; i++)
		if (s->scopes[i].scope.type == LEDGER_SCOPE_CGROUP && cgroup_of(g, s->scopes[i].scope.name) == SIZE_MAX)
			return -ENOMEM;
	for (sc = 0; sc <= LEDGER_SCOPE_GLOBAL; sc++)
		for (k = 0; k < LEDGER_NKINDS; k++)
			s->refusals[sc][k] = x->ref.scope[sc][k];
	memcpy(s->refusals[METRICS_SCOPE_UNATTRIBUTED], x->ref.unattributed, sizeof(x->ref.unattributed));
	return 0;
}

/* --- monitor -------------------------------------------------------------------------------------- */

static void counts_add(struct mon_counts *to, const struct mon_counts *c)
{
	int t;

	for (t = 0; t < RESTRACK_NTYPES; t++) {
		to->create[t] += c->create[t];
		to->destroy[t] += c->destroy[t];
	}
	to->mr_bytes_create += c->mr_bytes_create;
	to->mr_bytes_destroy += c->mr_bytes_destroy;
}

/* b went on from a: no count of b is below a's (else the pid is another process's now). */
static bool counts_follow(const struct mon_counts *a, const struct mon_counts *b)
{
	int t;

	for (t = 0; t < RESTRACK_NTYPES; t++)
		if (b->create[t] < a->create[t] || b->destroy[t] < a->destroy[t])
			return false;
	return b->mr_bytes_create >= a->mr_bytes_create && b->mr_bytes_destroy >= a->mr_bytes_destroy;
}

static int cmp_tgid(const void *a, const void *b)
{
	pid_t x = ((const struct top_counter *)a)->tgid, y = ((const struct top_counter *)b)->tgid;

	return (x > y) - (x < y);
}

/* Read the counters; with follow, keep what entries that went away had. *total (may be NULL) gets the sums. */
static int mon_fold(struct metrics_ctx *x, struct mon_counts *total, char *why, size_t whylen)
{
	struct bpf_map_info info;
	struct top_counters cur;
	__u32 len = sizeof(info);
	size_t i;
	int fd, ret;

	ret = mon_counters_open_live(&fd);
	if (ret) {
		snprintf(why, whylen, "no monitor counters: %s", ret == -ENOENT ? "none pinned at " MON_PIN_COUNTERS
			 " (start 'rdmactl monitor')" : ret == -ESRCH ? "the monitor that pinned them is gone "
			 "(start 'rdmactl monitor' again)" : strerror(-ret));
		return ret;
	}
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.id = 0;
	ret = top_counters_read(fd, &cur);
	close(fd);
	if (ret) {
		snprintf(why, whylen, "reading the monitor counters failed: %s", strerror(-ret));
		return ret;
	}
	if (info.id != x->mon.map_id) {
		/* another monitor: its counters start from zero */
		top_counters_free(&x->mon.prev);
		memset(&x->mon.retired, 0, sizeof(x->mon.retired));
		x->mon.map_id = info.id;
	}
	if (x->o.follow) {
		for (i = 0; i < x->mon.prev.n; i++) {
			const struct top_counter *p = &x->mon.prev.v[i], *c;

			c = cur.n ? bsearch(p, cur.v, cur.n, sizeof(*cur.v), cmp_tgid) : NULL;
			if (!c || !counts_follow(&p->c, &c->c))
				counts_add(&x->mon.retired, &p->c);
		}
	}
	if (total) {
		*total = x->mon.retired;
		for (i = 0; i < cur.n; i++)
			counts_add(total, &cur.v[i].c);
	}
	top_counters_free(&x->mon.prev);
	if (x->o.follow)
		x->mon.prev = cur;
	else
		top_counters_free(&cur);
	return 0;
}

/* The monitor's per-device counts, merged by device name (objects without a device, or whose device netlink
 * no longer lists, under ""). Nothing when no per-device counters are pinned. */
static int mondev_cb(pid_t key, const struct mon_counts *c, void *arg)
{
	struct metrics_snap *s = arg;
	const char *name = "";
	unsigned int i;

	for (i = 0; i < s->ndevs; i++)
		if ((__u32)key != MON_DEV_NONE && s->devs[i].dev.index == (__u32)key) {
			name = s->devs[i].dev.name;
			break;
		}
	for (i = 0; i < s->mon_ndevs; i++)
		if (!strcmp(s->mon_devs[i].name, name))
			break;
	if (i == s->mon_ndevs) {
		if (i == METRICS_MAX_MONDEVS)
			return 0; /* cannot happen: at most TOP_MAX_DEVS names and "" */
		snprintf(s->mon_devs[i].name, sizeof(s->mon_devs[i].name), "%s", name);
		memset(&s->mon_devs[i].c, 0, sizeof(s->mon_devs[i].c));
		s->mon_ndevs++;
	}
	counts_add(&s->mon_devs[i].c, c);
	return 0;
}

static void mondev_read(struct metrics_snap *s)
{
	int fd;

	unsigned int i;

	if (mon_devcounters_open_pinned(&fd))
		return;
	/* every device netlink lists has its series, 0 until it has an object */
	for (i = 0; i < s->ndevs; i++)
		mondev_cb((pid_t)s->devs[i].dev.index, &(const struct mon_counts){ 0 }, s);
	s->mon_devs_read = !mon_counters_foreach(fd, mondev_cb, s);
	close(fd);
}

/* --- kernel quotas -------------------------------------------------------------------------------- */

/* The kernel's side of every ledger scope that has kernel limits (as rdmactl quota show pairs them). */
static int collect_kernel(struct metrics_ctx *x, struct metrics_snap *s)
{
	char why[512];
	size_t i;
	int ret;

	if (!x->kq && (ret = kq_open_readonly(&x->kq))) {
		x->kq = NULL;
		(ret == -ENOENT ? set_absent : set_err)(s, METRICS_SRC_KERNEL, ret, "no kernel quotas: %s", kq_error());
		return 0;
	}
	ret = kq_enforcement(x->kq, why, sizeof(why));
	s->kq_enforced = ret < 0 ? 0 : ret ? 1 : -1;
	kq_table(x->kq, &s->kq_table);
	{
		struct kq_unfinished u;

		/* while a set runs (1), what it has not finished is its own: none counted */
		if (!kq_unfinished(x->kq, &u))
			s->kq_unfinished = u.nscopes;
	}
	if (!s->nscopes)
		return 0;
	s->kscopes = calloc(s->nscopes, sizeof(*s->kscopes));
	if (!s->kscopes)
		return -ENOMEM;
	for (i = 0; i < s->nscopes; i++) {
		struct metrics_kscope *k = &s->kscopes[i];
		struct kq_scope sc;

		if (kq_scope_of_ledger(&s->scopes[i].scope, x->cgroot, &sc))
			continue; /* a job, or a cgroup that is gone */
		ret = kq_get(x->kq, &sc, k->max, k->use, k->refused, k->killed);
		if (!ret) {
			k->has = true;
		} else if (ret != -ENOENT) {
			/* pins replaced or removed: open them again next time */
			set_err(s, METRICS_SRC_KERNEL, ret, "reading the kernel quotas failed: %s", kq_error());
			kq_close(x->kq);
			x->kq = NULL;
			free(s->kscopes);
			s->kscopes = NULL;
			return 0;
		}
	}
	return 0;
}

/* --- rdma cgroup ---------------------------------------------------------------------------------- */

static int collect_rdmacg(struct metrics_ctx *x, struct gather *g)
{
	struct metrics_snap *s = g->s;
	struct rdmacg_line max[RDMACG_MAX_DEVS], cur[RDMACG_MAX_DEVS];
	char path[LEDGER_CGROUP_MAX], *slash;
	size_t i, n0 = s->ncgroups, cap = 0;
	int nmax, ncur, a, b;

	/* the ancestors of every cgroup seen: a job's or a pod's limit often sits above its processes */
	for (i = 0; i < n0; i++) {
		snprintf(path, sizeof(path), "%s", s->cgroups[i].path);
		while ((slash = strrchr(path, '/')) && slash != path) {
			*slash = '\0';
			if (cgroup_of(g, path) == SIZE_MAX)
				return -ENOMEM;
		}
	}
	for (i = 0; i < s->ncgroups; i++) {
		const char *cg = s->cgroups[i].path;

		if (!cg[0] || !strcmp(cg, "/"))
			continue; /* the root has no rdma.max */
		nmax = rdmacg_read(x->cgroot, cg, "rdma.max", max, RDMACG_MAX_DEVS);
		ncur = rdmacg_read(x->cgroot, cg, "rdma.current", cur, RDMACG_MAX_DEVS);
		if (nmax < 0)
			nmax = 0;
		if (ncur < 0)
			ncur = 0;
		/* one entry per device named in either file */
		for (a = 0; a < nmax + ncur; a++) {
			const struct rdmacg_line *l = a < nmax ? &max[a] : &cur[a - nmax];
			struct metrics_rdmacg *e;

			for (b = 0; b < nmax && a >= nmax; b++)
				if (!strcmp(max[b].dev, l->dev))
					break;
			if (a >= nmax && b < nmax)
				continue; /* already there with its rdma.max line */
			e = push(&s->rdmacg, &s->nrdmacg, &cap, sizeof(*e));
			if (!e)
				return -ENOMEM;
			e->cg = i;
			snprintf(e->dev, sizeof(e->dev), "%s", l->dev);
			if (a < nmax) {
				e->has_max = true;
				e->max_handle = l->hca_handle;
				e->max_object = l->hca_object;
			}
			for (b = 0; b < ncur; b++) {
				if (strcmp(cur[b].dev, l->dev))
					continue;
				e->has_cur = true;
				e->cur_handle = cur[b].hca_handle;
				e->cur_object = cur[b].hca_object;
				break;
			}
		}
	}
	return 0;
}

/* --- pods' names --------------------------------------------------------------------------------- */

static bool eq_pod(size_t idx, const void *key, const void *ctx)
{
	const struct metrics_snap *s = ctx;

	return !strcmp(s->cgroups[idx].ids.pod_uid, key);
}

/* Every cgroup of a pod gets its namespace and name; the pod's file is read once, for its first cgroup. */
static int pod_names(struct gather *g)
{
	struct metrics_snap *s = g->s;
	struct imap pods = { 0 };
	size_t i, first;

	for (i = 0; i < s->ncgroups; i++) {
		struct metrics_cgroup *c = &s->cgroups[i];

		if (!c->ids.pod_uid[0])
			continue;
		first = imap_get(&pods, hash_str(c->ids.pod_uid), i, eq_pod, c->ids.pod_uid, s);
		if (first == SIZE_MAX) {
			imap_free(&pods);
			return -ENOMEM;
		}
		if (first == i)
			podname_read(c->ids.pod_uid, &c->pod); /* unknown ("") when it has no file */
		else
			c->pod = s->cgroups[first].pod;
	}
	imap_free(&pods);
	return 0;
}

/* --- collection ----------------------------------------------------------------------------------- */

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int metrics_collect(struct metrics_ctx *x, struct metrics_snap *s)
{
	struct gather g = { .s = s };
	double t0 = mono_s();
	int ret;

	memset(s, 0, sizeof(*s));
	clock_gettime(CLOCK_REALTIME, &s->time);
	ret = collect_netlink(x, &g);
	if (!ret)
		ret = collect_ledger(x, &g);
	if (!ret) {
		s->err[METRICS_SRC_MONITOR] =
			mon_fold(x, &s->mon, s->why[METRICS_SRC_MONITOR], sizeof(s->why[METRICS_SRC_MONITOR]));
		if (!s->err[METRICS_SRC_MONITOR])
			mondev_read(s);
		else /* none pinned: no monitor runs; one that died left its pin (-ESRCH) */
			s->state[METRICS_SRC_MONITOR] = s->err[METRICS_SRC_MONITOR] == -ENOENT ? METRICS_STATE_ABSENT
											: METRICS_STATE_DOWN;
		if (!s->err[METRICS_SRC_LEDGER])
			ret = collect_kernel(x, s);
		else if (s->state[METRICS_SRC_LEDGER] == METRICS_STATE_ABSENT)
			set_absent(s, METRICS_SRC_KERNEL, -ENOENT, "no kernel quotas: %s", "no ledger names their scopes");
		else
			set_err(s, METRICS_SRC_KERNEL, -ENOENT, "no kernel quotas: %s", "no ledger names their scopes");
	}
	if (!ret)
		ret = collect_rdmacg(x, &g);
	if (!ret)
		ret = pod_names(&g);
	imap_free(&g.pids);
	imap_free(&g.paths);
	free(g.cg_pos);
	s->seconds = mono_s() - t0;
	return ret;
}

void metrics_tick(struct metrics_ctx *x)
{
	char why[160];

	if (!x->o.follow)
		return;
	if (!ledger_get(x, NULL) && refusals_fold(x)) {
		ledger_close(x->ledger);
		x->ledger = NULL;
	}
	mon_fold(x, NULL, why, sizeof(why));
}
