// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-process aggregation of RDMA netlink resource dumps: the model behind rdmactl top. */
#include "top/top.h"

#include "core/cgroup.h"
#include "core/clock.h"
#include "ledger/ledger.h"
#include "core/proc.h"
#include "kq/kq.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const top_key_names[TOP_NKEYS + 1] = {
#define X(name, NAME, led, nl, ...) KINDS_IF(nl, [TOP_KEY_##NAME] = #name, )
	KINDS(X)
#undef X
	[TOP_KEY_MR_BYTES] = "mr_bytes", [TOP_KEY_PID] = "pid", [TOP_KEY_USER] = "user", [TOP_KEY_COMM] = "comm",
	[TOP_NKEYS] = NULL,
};

struct uid_name {
	uid_t uid;
	char name[TOP_USER_LEN];
};

struct top_ctx {
	struct nl_sock *nl;
	/* uid -> user name, kept across snapshots (user names do not change under us in practice) */
	struct uid_name *users;
	size_t nusers;
};

/* --- tid -> row map ------------------------------------------------------------------------------- */

struct top_map {
	size_t cap, used;
	struct {
		pid_t key;	/* 0: empty */
		int row;
	} *slot;
};

static size_t map_hash(pid_t k, size_t cap)
{
	return ((uint32_t)k * 2654435761u) & (cap - 1);
}

static int map_get(const struct top_map *m, pid_t k)
{
	size_t i;

	if (!m->cap)
		return -1;
	for (i = map_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slot[i].key)
			return -1;
		if (m->slot[i].key == k)
			return m->slot[i].row;
	}
}

static int map_put(struct top_map *m, pid_t k, int row)
{
	size_t i, j, old_cap = m->cap;
	typeof(m->slot) old = m->slot;

	if ((m->used + 1) * 2 > m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->slot = calloc(m->cap, sizeof(*m->slot));
		if (!m->slot) {
			m->slot = old;
			m->cap = old_cap;
			return -ENOMEM;
		}
		m->used = 0;
		for (j = 0; j < old_cap; j++)
			if (old[j].key)
				map_put(m, old[j].key, old[j].row);
		free(old);
	}
	for (i = map_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->slot[i].key == k) {
			m->slot[i].row = row;
			return 0;
		}
		if (!m->slot[i].key) {
			m->slot[i].key = k;
			m->slot[i].row = row;
			m->used++;
			return 0;
		}
	}
}

static void map_free(struct top_map *m)
{
	if (m) {
		free(m->slot);
		free(m);
	}
}

/* The maps of one device's contexts and PDs (row_of_owner), freed before the next device and at the end. */
static void owners_free(struct top_snap *s)
{
	map_free(s->ctxs);
	map_free(s->pds);
	s->ctxs = s->pds = NULL;
}

/* --- /proc ---------------------------------------------------------------------------------------- */

int top_parse_status(const char *text, pid_t *tgid, uid_t *uid, char *comm, size_t commlen)
{
	const char *p;
	unsigned long v;
	char *end;
	int found = 0;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, "Name:\t", 6)) {
			size_t n = strcspn(p + 6, "\n");

			if (comm && commlen) {
				if (n >= commlen)
					n = commlen - 1;
				memcpy(comm, p + 6, n);
				comm[n] = '\0';
			}
			found |= 1;
		} else if (!strncmp(p, "Tgid:\t", 6)) {
			errno = 0;
			v = strtoul(p + 6, &end, 10);
			if (errno || end == p + 6 || v == 0 || v > 0x7fffffff)
				return -EPROTO;
			*tgid = (pid_t)v;
			found |= 2;
		} else if (!strncmp(p, "Uid:\t", 5)) {
			errno = 0;
			v = strtoul(p + 5, &end, 10);
			if (errno || end == p + 5)
				return -EPROTO;
			*uid = (uid_t)v;
			found |= 4;
		}
	}
	return found == 7 ? 0 : -EPROTO;
}

static int read_status(pid_t pid, pid_t *tgid, uid_t *uid, char *comm, size_t commlen)
{
	char buf[4096];
	ssize_t n = proc_read(pid, "status", buf, sizeof(buf));

	return n < 0 ? (int)n : top_parse_status(buf, tgid, uid, comm, commlen);
}

static void user_name(struct top_ctx *t, uid_t uid, char *out, size_t len)
{
	struct passwd pw, *res = NULL;
	struct uid_name *u;
	char buf[1024];
	size_t i;

	for (i = 0; i < t->nusers; i++)
		if (t->users[i].uid == uid) {
			snprintf(out, len, "%s", t->users[i].name);
			return;
		}
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) || !res)
		snprintf(out, len, "%u", (unsigned)uid);
	else
		snprintf(out, len, "%s", pw.pw_name);
	u = realloc(t->users, (t->nusers + 1) * sizeof(*u));
	if (!u)
		return;
	t->users = u;
	u[t->nusers].uid = uid;
	snprintf(u[t->nusers].name, sizeof(u[t->nusers].name), "%s", out);
	t->nusers++;
}

/* --- snapshot ------------------------------------------------------------------------------------- */

struct agg {
	struct top_ctx *t;
	struct top_snap *s;
	int dev;		/* index into s->devs of the device being dumped */
};

static int row_new(struct top_snap *s)
{
	struct top_row *r;

	if (s->nrows == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;

		r = realloc(s->rows, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		s->rows = r;
		s->cap = cap;
	}
	memset(&s->rows[s->nrows], 0, sizeof(s->rows[0]));
	return (int)s->nrows++;
}

/* Row of a thread id: the process (tgid) that thread belongs to. */
static int row_of_tid(struct agg *a, pid_t tid)
{
	struct top_snap *s = a->s;
	struct top_row *r;
	char comm[TOP_COMM_LEN] = "";
	pid_t tgid = 0;
	uid_t uid = 0;
	int idx, ret;

	idx = map_get(s->map, tid);
	if (idx >= 0)
		return idx;
	ret = read_status(tid, &tgid, &uid, comm, sizeof(comm));
	if (ret) {
		/* Gone (or hidden by hidepid): keep the kernel's number as the pid, unresolved. */
		tgid = tid;
		s->unresolved++;
	}
	idx = tgid != tid ? map_get(s->map, tgid) : -1;
	if (idx < 0) {
		if (tgid != tid && !ret) {
			/* The process's own name and owner, not the thread's. */
			pid_t dummy;

			if (read_status(tgid, &dummy, &uid, comm, sizeof(comm)))
				ret = -ENOENT;
		}
		idx = row_new(s);
		if (idx < 0)
			return idx;
		r = &s->rows[idx];
		r->kind = TOP_PROC;
		r->pid = tgid;
		r->resolved = !ret;
		if (!ret) {
			char cg[PATH_MAX];
			bool zombie;

			/* its start time: with the pid, what names a process in the ledger (see top_join) */
			if (proc_stat_start(tgid, &r->start_time, &zombie))
				r->start_time = 0;
			r->uid = uid;
			user_name(a->t, uid, r->user, sizeof(r->user));
			snprintf(r->comm, sizeof(r->comm), "%s", comm);
			if (!proc_cgroup(tgid, cg, sizeof(cg))) {
				struct cgroup_ids ids;

				cgroup_ids(cg, &ids);
				memcpy(r->pod_uid, ids.pod_uid, sizeof(r->pod_uid));
				memcpy(r->container_id, ids.container_id, sizeof(r->container_id));
			}
		} else {
			r->uid = (uid_t)-1;
			snprintf(r->comm, sizeof(r->comm), "[exited]");
		}
		if (map_put(s->map, tgid, idx))
			return -ENOMEM;
	}
	if (tgid != tid && map_put(s->map, tid, idx))
		return -ENOMEM;
	return idx;
}

static int row_of_name(struct top_snap *s, enum top_kind kind, const char *name)
{
	size_t i;
	int idx;

	for (i = 0; i < s->nrows; i++)
		if (s->rows[i].kind == kind && !strncmp(s->rows[i].comm, name, sizeof(s->rows[i].comm) - 1))
			return (int)i;
	idx = row_new(s);
	if (idx < 0)
		return idx;
	s->rows[idx].kind = kind;
	s->rows[idx].uid = kind == TOP_KERNEL ? 0 : (uid_t)-1;
	snprintf(s->rows[idx].comm, sizeof(s->rows[idx].comm), "%s", name);
	return idx;
}

/* A context's or PD's number as a key of a top_map (0 is a valid number, never a key); 0: none. */
static pid_t owner_key(uint32_t n)
{
	return n == UINT32_MAX ? 0 : (pid_t)(n + 1);
}

/*
 * The row of the process a user object without a pid belongs to: its creating thread has exited (a worker
 * thread, an io_uring worker), but its context lives in a file that a process holds. The kernel names the
 * context of a PD or CQ (ctxn) and the PD of a QP, MR, SRQ or MW (pdn); contexts and PDs are dumped first, so
 * the device's maps know them (a context's process from its pid, a PD's from its pid or its context). -1:
 * none known (the context's opener is gone too).
 */
static int row_of_owner(const struct agg *a, const struct nl_res *res)
{
	const struct top_snap *s = a->s;
	pid_t k;

	if ((res->has & NL_HAS_CTXN) && (k = owner_key(res->ctxn)) && s->ctxs)
		return map_get(s->ctxs, k);
	if ((res->has & NL_HAS_PDN) && (k = owner_key(res->pdn)) && s->pds)
		return map_get(s->pds, k);
	return -1;
}

/* Remember a context's or PD's process row (contexts and PDs only; rows of processes only). */
static int owner_put(struct agg *a, const struct nl_res *res, int idx)
{
	struct top_snap *s = a->s;
	struct top_map **m = res->type == NL_RES_CTX ? &s->ctxs : res->type == NL_RES_PD ? &s->pds : NULL;
	pid_t k = owner_key(res->id);

	if (!m || !k || s->rows[idx].kind != TOP_PROC)
		return 0;
	if (!*m && !(*m = calloc(1, sizeof(**m))))
		return -ENOMEM;
	return map_put(*m, k, idx);
}

static int on_res(const struct nl_res *res, void *arg)
{
	struct agg *a = arg;
	struct top_dev *d = &a->s->devs[a->dev];
	struct top_row *r;
	int idx, ret;

	if (res->has & NL_HAS_PID)
		idx = row_of_tid(a, (pid_t)res->pid);
	else if (res->has & NL_HAS_KERN)
		idx = row_of_name(a->s, TOP_KERNEL, res->kern_name);
	else if ((idx = row_of_owner(a, res)) < 0)
		idx = row_of_name(a->s, TOP_UNKNOWN, "[unknown]");
	if (idx < 0)
		return idx;
	ret = owner_put(a, res, idx);
	if (ret)
		return ret;
	r = &a->s->rows[idx];
	r->c.n[res->type]++;
	r->devmask |= 1u << a->dev;
	d->totals.n[res->type]++;
	if (res->type == NL_RES_MR) {
		r->c.mr_bytes += res->mrlen;
		d->totals.mr_bytes += res->mrlen;
	}
	if (res->type == NL_RES_QP && (res->has & NL_HAS_STATE) && res->state < TOP_QP_NSTATES) {
		r->c.qp_state[res->state]++;
		d->totals.qp_state[res->state]++;
	}
	return 0;
}

/* The kernel's QP states (one table: lib/nl's), NULL past the ones top counts. */
const char *top_qp_state_name(unsigned int state)
{
	return state < TOP_QP_NSTATES ? nl_qp_state_name((uint8_t)state) : NULL;
}

static int on_dev(const struct nl_dev *dev, void *arg)
{
	struct agg *a = arg;
	struct top_snap *s = a->s;

	if (s->ndevs_total++ >= TOP_MAX_DEVS)
		return 0;
	memset(&s->devs[s->ndevs], 0, sizeof(s->devs[0]));
	s->devs[s->ndevs++].dev = *dev;
	return 0;
}

static int on_port(const struct nl_port *p, void *arg)
{
	struct agg *a = arg;
	struct top_dev *d = &a->s->devs[a->dev];

	if (d->nports < TOP_MAX_PORTS)
		d->ports[d->nports++] = *p;
	return 0;
}

static int on_summary(const struct nl_summary *sum, void *arg)
{
	struct agg *a = arg;
	unsigned int i;

	for (i = 0; i < a->s->ndevs; i++)
		if (a->s->devs[i].dev.index == sum->dev_index) {
			a->s->devs[i].summary = *sum;
			a->s->devs[i].has_summary = true;
		}
	return 0;
}

int top_open(struct top_ctx **out)
{
	struct top_ctx *t;
	int ret;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ret = nl_open(&t->nl);
	if (ret) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

void top_close(struct top_ctx *t)
{
	if (!t)
		return;
	nl_close(t->nl);
	free(t->users);
	free(t);
}

const char *top_ext_ack(const struct top_ctx *t)
{
	return t ? nl_ext_ack(t->nl) : "";
}

static bool row_matches(const struct top_row *r, const struct top_filter *f)
{
	size_t i;

	if (!f)
		return true;
	if (f->npids) {
		for (i = 0; i < f->npids; i++)
			if (r->kind == TOP_PROC && r->pid == f->pids[i])
				break;
		if (i == f->npids)
			return false;
	}
	if (f->has_uid && (r->kind != TOP_PROC || !r->resolved || r->uid != f->uid))
		return false;
	if (f->comm && strcmp(r->comm, f->comm))
		return false;
	return true;
}

static int dev_seen(const struct nl_dev *dev, void *arg)
{
	uint32_t *index = arg;

	if (dev->index == *index)
		*index = UINT32_MAX;
	return 0;
}

/*
 * A per-device dump failed: if the device is gone (the kernel says -EINVAL for an unknown index), make
 * that -ENODEV so the caller can take the snapshot again; otherwise keep the error.
 */
static int dev_gone(struct top_ctx *t, uint32_t index, int err)
{
	struct nl_handlers h = { .dev = dev_seen, .arg = &index };

	if (err != -EINVAL && err != -ENODEV)
		return err;
	if (nl_dev_dump(t->nl, &h))
		return err;
	return index == UINT32_MAX ? err : -ENODEV;
}

/* Devices, ports, summaries and, when objects, every per-object dump aggregated into rows. */
static int snapshot_once(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, bool objects)
{
	struct agg a = { .t = t, .s = s };
	struct nl_handlers h = { .arg = &a };
	uint64_t t0;
	unsigned int i, k;
	size_t r, w;
	int ty, ret;

	memset(s, 0, sizeof(*s));
	clock_gettime(CLOCK_REALTIME, &s->time);
	s->privileged = geteuid() == 0;
	t0 = clock_mono_ns();
	s->map = calloc(1, sizeof(*s->map));
	if (!s->map)
		return -ENOMEM;

	h.dev = on_dev;
	ret = nl_dev_dump(t->nl, &h);
	if (ret)
		return ret;
	h.dev = NULL;
	/* --dev: keep only that device (a name that matches none leaves an empty snapshot). */
	if (f && f->dev) {
		for (i = 0, k = 0; i < s->ndevs; i++)
			if (!strcmp(s->devs[i].dev.name, f->dev))
				s->devs[k++] = s->devs[i];
		s->ndevs = k;
	}
	if (!s->ndevs)
		goto out;

	h.summary = on_summary;
	ret = nl_summary_dump(t->nl, &h);
	if (ret)
		return ret;
	h.summary = NULL;

	for (i = 0; i < s->ndevs; i++) {
		struct top_dev *d = &s->devs[i];

		a.dev = (int)i;
		owners_free(s);
		h.port = on_port;
		ret = nl_port_dump(t->nl, d->dev.index, &h);
		h.port = NULL;
		if (ret)
			return dev_gone(t, d->dev.index, ret);
		h.res = on_res;
		for (ty = 0; ty < NL_RES_NTYPES; ty++) {
			if (d->has_summary && !(d->summary.present & (1u << ty))) {
				d->unsupported |= 1u << ty;
				continue;
			}
			if (!objects)
				continue;
			ret = nl_res_dump(t->nl, d->dev.index, ty, &h);
			if (ret == -EOPNOTSUPP) {
				d->unsupported |= 1u << ty;
				continue;
			}
			if (ret)
				return dev_gone(t, d->dev.index, ret);
		}
		h.res = NULL;
		for (ty = 0; ty < NL_RES_NTYPES; ty++)
			s->totals.n[ty] += d->totals.n[ty];
		s->totals.mr_bytes += d->totals.mr_bytes;
		for (ty = 0; ty < TOP_QP_NSTATES; ty++)
			s->totals.qp_state[ty] += d->totals.qp_state[ty];
	}

	for (r = 0, w = 0; r < s->nrows; r++)
		if (row_matches(&s->rows[r], f))
			s->rows[w++] = s->rows[r];
	s->nrows = w;
out:
	map_free(s->map);
	s->map = NULL;
	owners_free(s);
	s->elapsed_ms = (double)(clock_mono_ns() - t0) / 1e6;
	return 0;
}

int top_snapshot(struct top_ctx *t, const struct top_filter *f, struct top_snap *s)
{
	int ret, tries = 0;

	/* A device removed, or a dump the kernel marked inconsistent, while we looked: look again. */
	while ((ret = snapshot_once(t, f, s, true)) == -ENODEV || ret == -EINTR) {
		top_snap_free(s);
		if (++tries == 3)
			break;
	}
	if (ret)
		top_snap_free(s);
	return ret;
}

void top_snap_free(struct top_snap *s)
{
	if (!s)
		return;
	map_free(s->map);
	owners_free(s);
	free(s->rows);
	memset(s, 0, sizeof(*s));
}

/* --- counters mode --------------------------------------------------------------------------------- */

struct pins {
	int status, counters, devcounters, qpids;
};

static void pins_close(struct pins *p)
{
	if (p->qpids >= 0)
		close(p->qpids);
	if (p->status >= 0)
		close(p->status);
	if (p->counters >= 0)
		close(p->counters);
	if (p->devcounters >= 0)
		close(p->devcounters);
}

/* The pins of one monitor (its QP numbers too with states), and its status as it stands: complete, nothing lost. */
static int pins_open(struct pins *p, bool states, struct mon_status *st, char *why, size_t len)
{
	int ret;

	p->status = p->counters = p->devcounters = p->qpids = -1;
	ret = mon_status_open_pinned(&p->status);
	if (!ret)
		ret = mon_counters_open_pinned(&p->counters);
	if (!ret)
		ret = mon_devcounters_open_pinned(&p->devcounters);
	if (!ret && states) {
		ret = mon_qpids_open_pinned(&p->qpids);
		if (ret == -ENOENT) {
			snprintf(why, len, "the monitor keeps no QP numbers (an older rdmactl monitor: restart it)");
			return ret;
		}
	}
	if (!ret)
		ret = mon_status_read(p->status, st);
	if (ret) {
		snprintf(why, len, "%s", ret == -ENOENT ? "no monitor pins its counters at " MON_PIN_DIR
				 " (start 'rdmactl monitor')" : strerror(-ret));
		return ret;
	}
	if (st->lost_counters) {
		snprintf(why, len, "the monitor lost %llu counts (a counters map was full)",
			 (unsigned long long)st->lost_counters);
		return -ENOSPC;
	}
	if (!st->seq || !st->complete) {
		snprintf(why, len, "the monitor has no complete baseline (user objects of before it exist, or it "
			 "is still trying)");
		return -ENODATA;
	}
	/* a monitor killed (SIGKILL, a crash) leaves its pins: its programs went with it */
	if (mon_status_alive(st)) {
		snprintf(why, len, "the monitor that pinned the counters (pid %u) is gone: they count nothing since "
			 "(start 'rdmactl monitor' again)", mon_status_pid(st));
		return -ESRCH;
	}
	if (st->counters_id != mon_map_id(p->counters) || st->devcounters_id != mon_map_id(p->devcounters) ||
	    (states && mon_status_qpids_id(st) != mon_map_id(p->qpids))) {
		snprintf(why, len, "the pins belong to different monitors (one restarted)");
		return -EAGAIN;
	}
	return 0;
}

static int counters_rows(struct top_ctx *t, struct top_snap *s, const struct top_counters *c)
{
	struct agg a = { .t = t, .s = s };
	uint32_t present = 0;
	unsigned int i, ty;
	size_t k;
	int idx;

	for (i = 0; i < s->ndevs; i++)
		present |= s->devs[i].summary.present;
	s->map = calloc(1, sizeof(*s->map));
	if (!s->map)
		return -ENOMEM;
	for (k = 0; k < c->n; k++) {
		const struct mon_counts *m = &c->v[k].c;
		struct top_row *r;
		bool any = false;

		if (c->v[k].tgid <= 0)
			continue; /* kernel objects: no owner names in the counters */
		for (ty = 0; ty < RESTRACK_NTYPES; ty++)
			if (kind_nl_of_restrack[ty] >= 0 && (present & (1u << kind_nl_of_restrack[ty])) &&
			    top_live(m, ty) > 0)
				any = true;
		if (!any)
			continue;
		idx = row_of_tid(&a, c->v[k].tgid);
		if (idx < 0)
			return idx;
		r = &s->rows[idx];
		for (ty = 0; ty < RESTRACK_NTYPES; ty++) {
			int n = kind_nl_of_restrack[ty];

			if (n >= 0 && (present & (1u << n)))
				r->c.n[n] += (uint64_t)top_live(m, ty);
		}
		if (present & (1u << NL_RES_MR))
			r->c.mr_bytes += m->mr_bytes_create - m->mr_bytes_destroy;
	}
	return 0;
}

/* The QPs the monitor keeps by number, each with its state as the kernel answers for it by number. */
struct qp_states {
	struct mon_qp *v;
	unsigned char *state;	/* per entry of v */
	size_t n;
	size_t cur, end;	/* the device's entries being asked for (nl_qp_get's callback) */
	size_t noport;		/* QPs no port answered for (RESET inferred: nl.h) */
};

static int cmp_qp(const void *a, const void *b)
{
	const struct mon_qp *x = a, *y = b;

	if (x->id.dev_index != y->id.dev_index)
		return x->id.dev_index < y->id.dev_index ? -1 : 1;
	return x->id.qpn < y->id.qpn ? -1 : x->id.qpn > y->id.qpn;
}

static int on_qp_state(const struct nl_res *r, void *arg)
{
	struct qp_states *q = arg;
	size_t lo = q->cur, hi = q->end, mid;

	/* the device's entries are sorted by number */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (q->v[mid].id.qpn < r->id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == q->end || q->v[lo].id.qpn != r->id || !(r->has & NL_HAS_STATE) || r->state >= TOP_QP_NSTATES)
		return -EPROTO; /* a reply for a number not asked, or without a state */
	q->state[lo] = r->state;
	q->noport += !!(r->has & NL_NO_PORT);
	return 0;
}

/* Every QP of q asked for by number, device by device (each device of s, with its ports). */
static int qp_states_get(struct top_ctx *t, const struct top_snap *s, struct qp_states *q, char *why, size_t len)
{
	struct nl_handlers h = { .res = on_qp_state, .arg = q };
	uint32_t *qpns;
	size_t i, j;
	unsigned int d;
	int ret = 0;

	qsort(q->v, q->n, sizeof(*q->v), cmp_qp);
	q->state = malloc(q->n ? q->n : 1);
	qpns = malloc((q->n ? q->n : 1) * sizeof(*qpns));
	if (!q->state || !qpns) {
		free(qpns);
		return -ENOMEM;
	}
	memset(q->state, 0xff, q->n);
	for (i = 0; i < q->n && !ret; i = j) {
		for (j = i; j < q->n && q->v[j].id.dev_index == q->v[i].id.dev_index; j++)
			qpns[j - i] = q->v[j].id.qpn;
		for (d = 0; d < s->ndevs && s->devs[d].dev.index != q->v[i].id.dev_index; d++)
			;
		if (d == s->ndevs) {
			snprintf(why, len, "the monitor keeps QPs of device %u, which RDMA netlink does not list",
				 q->v[i].id.dev_index);
			ret = -ESTALE;
			break;
		}
		q->cur = i;
		q->end = j;
		ret = nl_qp_get(t->nl, q->v[i].id.dev_index, s->devs[d].dev.nports ? s->devs[d].dev.nports : 1,
				qpns, j - i, &h);
		if (ret)
			snprintf(why, len, "asking %s for its QPs by number: %s", s->devs[d].dev.name,
				 ret == -ENOENT ? "a QP the monitor keeps is gone" : strerror(-ret));
		if (ret == -ENOENT)
			ret = -EAGAIN; /* destroyed since the read of the numbers: look again */
	}
	free(qpns);
	return ret;
}

/* The states into the rows (by the monitor's owner of each QP) and the device totals; each row's QPs are its
 * count's, or the QP numbers do not match the counts. */
static int qp_states_apply(struct top_snap *s, const struct qp_states *q, char *why, size_t len)
{
	uint64_t sum;
	unsigned int d, k;
	size_t i, r;
	int idx;

	for (i = 0; i < q->n; i++) {
		if (q->state[i] >= TOP_QP_NSTATES) {
			snprintf(why, len, "no state for QP %u of device %u", q->v[i].id.qpn, q->v[i].id.dev_index);
			return -ESTALE;
		}
		idx = s->map ? map_get(s->map, (pid_t)q->v[i].tgid) : -1;
		if (idx < 0) {
			snprintf(why, len, "QP %u's owner %u has no QP by the counts", q->v[i].id.qpn, q->v[i].tgid);
			return -ESTALE;
		}
		s->rows[idx].c.qp_state[q->state[i]]++;
		for (d = 0; d < s->ndevs; d++)
			if (s->devs[d].dev.index == q->v[i].id.dev_index)
				s->devs[d].totals.qp_state[q->state[i]]++;
		s->totals.qp_state[q->state[i]]++;
	}
	for (r = 0; r < s->nrows; r++) {
		for (k = 0, sum = 0; k < TOP_QP_NSTATES; k++)
			sum += s->rows[r].c.qp_state[k];
		if (sum != s->rows[r].c.n[NL_RES_QP]) {
			snprintf(why, len, "pid %d: %llu QPs by number, %llu by the counts", (int)s->rows[r].pid,
				 (unsigned long long)sum, (unsigned long long)s->rows[r].c.n[NL_RES_QP]);
			return -ESTALE;
		}
	}
	return 0;
}

static int counters_once(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, bool states, char *why,
			 size_t len)
{
	struct qp_states q = { 0 };
	struct top_counters c1 = { 0 }, c2 = { 0 }, d1 = { 0 }, d2 = { 0 };
	struct mon_status st, st2;
	struct pins p;
	uint64_t t0 = clock_mono_ns();
	unsigned int i, ty;
	size_t r, w;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = pins_open(&p, states, &st, why, len);
	if (ret)
		goto out;
	/* counters, device counters, the kernel's summary, the same two reads again in reverse */
	ret = top_counters_read(p.counters, &c1);
	if (!ret)
		ret = top_counters_read(p.devcounters, &d1);
	if (!ret) {
		ret = snapshot_once(t, NULL, s, false);
		if (ret)
			snprintf(why, len, "RDMA netlink: %s", strerror(-ret));
	}
	/* the QPs by number, between the two reads of the counts: a change while asking is seen there */
	if (!ret && states) {
		ret = mon_qpids_read(p.qpids, &q.v, &q.n);
		if (ret)
			snprintf(why, len, "reading the monitor's QP numbers: %s", strerror(-ret));
		else
			ret = qp_states_get(t, s, &q, why, len);
	}
	if (!ret)
		ret = top_counters_read(p.devcounters, &d2);
	if (!ret)
		ret = top_counters_read(p.counters, &c2);
	if (!ret)
		ret = mon_status_read(p.status, &st2);
	if (ret) {
		if (!*why)
			snprintf(why, len, "reading the counters: %s", strerror(-ret));
		goto out;
	}
	if (!top_counters_equal(&c1, &c2) || !top_counters_equal(&d1, &d2) || st2.seq != st.seq ||
	    st2.lost_counters) {
		snprintf(why, len, "objects were created or destroyed while top read");
		ret = -EAGAIN;
		goto out;
	}
	if (top_counters_negative(&c2)) {
		snprintf(why, len, "pid %d has destroyed more than the counters saw created",
			 (int)top_counters_negative(&c2));
		ret = -ESTALE;
		goto out;
	}
	ret = top_counts_check(&st, s, &d2, why, len);
	if (ret)
		goto out;
	for (i = 0; i < s->ndevs; i++) {
		for (ty = 0; ty < NL_RES_NTYPES; ty++)
			s->totals.n[ty] += s->devs[i].totals.n[ty];
		s->totals.mr_bytes += s->devs[i].totals.mr_bytes;
	}
	ret = counters_rows(t, s, &c2);
	if (ret) {
		snprintf(why, len, "%s", strerror(-ret));
		goto out;
	}
	if (states) {
		ret = qp_states_apply(s, &q, why, len);
		if (ret)
			goto out;
		s->states_by_number = true;
		s->qp_noport = q.noport;
	}
	for (r = 0, w = 0; r < s->nrows; r++)
		if (row_matches(&s->rows[r], f))
			s->rows[w++] = s->rows[r];
	s->nrows = w;
	s->source = TOP_SRC_COUNTERS;
	s->elapsed_ms = (double)(clock_mono_ns() - t0) / 1e6;
out:
	map_free(s->map);
	s->map = NULL;
	owners_free(s);
	pins_close(&p);
	free(q.v);
	free(q.state);
	top_counters_free(&c1);
	top_counters_free(&c2);
	top_counters_free(&d1);
	top_counters_free(&d2);
	return ret;
}

int top_snapshot_counters(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, bool states,
			  char *why, size_t len)
{
	int ret, tries = 0;

	*why = '\0';
	if (f && f->dev) {
		snprintf(why, len, "--dev needs each object's device (the per-object dump)");
		memset(s, 0, sizeof(*s));
		return -EINVAL;
	}
	/* An operation between the table and its hook, or a read torn by one: look again. */
	while ((ret = counters_once(t, f, s, states, why, len)) == -EAGAIN || ret == -ESTALE || ret == -ENODEV ||
	       ret == -EINTR) {
		top_snap_free(s);
		if (++tries == 3)
			break;
		*why = '\0';
	}
	if (ret)
		top_snap_free(s);
	return ret;
}

/* --- ledger join -------------------------------------------------------------------------------- */

/* Ledger kind of each row column (NL_RES_NTYPES: MR bytes); -1 where the ledger has none. */
static int ledger_of(size_t col)
{
	return col == NL_RES_NTYPES ? LEDGER_MR_BYTES : kind_ledger_of_nl[col];
}

static int grow(void **v, size_t n, size_t size)
{
	void *p;

	if (n && (n < 16 || (n & (n - 1))))
		return 0;	/* capacity: 16, then doubling at each power of two */
	p = realloc(*v, (n < 16 ? 16 : 2 * n) * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

struct lread {
	struct top_ledger *v;
	int err;
};

static int on_scope(const struct ledger_scope_stat *st, void *arg)
{
	struct lread *r = arg;
	struct top_ledger *v = r->v;

	if ((r->err = grow((void **)&v->scopes, v->nscopes, sizeof(*v->scopes))))
		return 1;
	v->scopes[v->nscopes++] = *st;
	return 0;
}

static int on_proc(const struct ledger_proc_stat *st, void *arg)
{
	struct lread *r = arg;
	struct top_ledger *v = r->v;

	if ((r->err = grow((void **)&v->procs, v->nprocs, sizeof(*v->procs))))
		return 1;
	v->procs[v->nprocs++] = *st;
	return 0;
}

static int on_denial(const struct ledger_denial_event *ev, void *arg)
{
	struct lread *r = arg;
	struct top_ledger *v = r->v;

	if ((r->err = grow((void **)&v->denied, v->ndenied, sizeof(*v->denied))))
		return 1;
	v->denied[v->ndenied++] = ev->d.pid;
	return 0;
}

int top_ledger_read(struct ledger *l, struct top_ledger *v)
{
	struct lread r = { .v = v };
	uint64_t since = 0;
	int ret;

	memset(v, 0, sizeof(*v));
	ret = ledger_foreach_scope(l, on_scope, &r);
	if (!ret)
		ret = ledger_foreach_proc(l, on_proc, &r);
	if (!ret)
		ret = ledger_foreach_denial(l, &since, on_denial, &r);
	if (r.err)
		ret = r.err;
	if (ret > 0)
		ret = -EIO;
	if (ret)
		top_ledger_free(v);
	return ret;
}

void top_ledger_free(struct top_ledger *v)
{
	free(v->scopes);
	free(v->procs);
	free(v->denied);
	memset(v, 0, sizeof(*v));
}

const struct ledger_proc_stat *top_ledger_proc(const struct top_ledger *v, pid_t pid, uint64_t start)
{
	size_t i;

	if (!start)
		return NULL;
	for (i = 0; i < v->nprocs; i++)
		if (v->procs[i].pid == pid && v->procs[i].start_time == start)
			return &v->procs[i];
	return NULL;
}

/* cgroup path c is anc or below it ("/a" contains "/a" and "/a/b", not "/ab"). */
static bool cgroup_within(const char *c, const char *anc)
{
	size_t n = strlen(anc);

	return !strncmp(c, anc, n) && (c[n] == '\0' || c[n] == '/');
}

/* Candidate limit: keep it when it leaves less headroom than the best so far. */
static void consider(struct top_row *r, int col, enum ledger_scope_type type, uint64_t limit, uint64_t usage)
{
	uint64_t room, best;

	if (limit == LEDGER_UNLIMITED)
		return;
	room = limit > usage ? limit - usage : 0;
	if (r->quota.scope[col] >= 0) {
		best = r->quota.limit[col] > r->quota.scope_used[col] ? r->quota.limit[col] - r->quota.scope_used[col]
								       : 0;
		if (room >= best)
			return;
	}
	r->quota.limit[col] = limit;
	r->quota.scope_used[col] = usage;
	r->quota.scope[col] = (int)type;
}

static void join_row(struct top_row *r, const struct top_ledger *j)
{
	const struct ledger_proc_stat *p = NULL;
	size_t i;
	int col, k;

	memset(&r->quota, 0, sizeof(r->quota));
	r->quota.joined = true;
	for (col = 0; col <= NL_RES_NTYPES; col++) {
		r->quota.limit[col] = UINT64_MAX;
		r->quota.scope[col] = -1;
		r->quota.has_kind[col] = ledger_of(col) >= 0;
	}
	for (i = 0; i < j->ndenied; i++)
		if (j->denied[i] == r->pid)
			r->quota.denials++;
	p = top_ledger_proc(j, r->pid, r->start_time);
	if (!p)
		return;
	r->quota.managed = true;
	snprintf(r->quota.job, sizeof(r->quota.job), "%s", p->job);
	for (col = 0; col <= NL_RES_NTYPES; col++) {
		k = ledger_of(col);
		if (k < 0)
			continue;
		r->quota.used[col] = p->usage[k];
		consider(r, col, LEDGER_SCOPE_PROCESS, p->limit[k], p->usage[k]);
		for (i = 0; i < j->nscopes; i++) {
			const struct ledger_scope_stat *st = &j->scopes[i];

			/* its own pid limits are p->limit[]; another process's are not its */
			if (st->scope.type == LEDGER_SCOPE_PROCESS ||
			    (st->scope.type == LEDGER_SCOPE_JOB && (!p->job[0] || strcmp(st->scope.name, p->job))) ||
			    (st->scope.type == LEDGER_SCOPE_CGROUP && !cgroup_within(p->cgroup, st->scope.name)))
				continue;
			consider(r, col, st->scope.type, st->limit[k], st->usage[k]);
		}
	}
}

void top_count_denial(struct top_snap *s, pid_t pid)
{
	size_t r;

	for (r = 0; r < s->nrows; r++)
		if (s->rows[r].kind == TOP_PROC && s->rows[r].pid == pid)
			s->rows[r].quota.denials++;
}

void top_join_ledger_view(struct top_snap *s, const struct top_ledger *v)
{
	size_t r;

	for (r = 0; r < s->nrows; r++)
		if (s->rows[r].kind == TOP_PROC)
			join_row(&s->rows[r], v);
	s->ledger_joined = true;
}

int top_join_ledger(struct top_snap *s, struct ledger *l)
{
	struct top_ledger v;
	int ret;

	ret = top_ledger_read(l, &v);
	if (ret)
		return ret;
	top_join_ledger_view(s, &v);
	top_ledger_free(&v);
	return 0;
}

/* --- BPF counters and rates ----------------------------------------------------------------------- */

static int on_counter(pid_t tgid, const struct mon_counts *c, void *arg)
{
	struct top_counters *tc = arg;
	struct top_counter *v;

	if (tc->n == tc->cap) {
		v = realloc(tc->v, (tc->cap ? 2 * tc->cap : 64) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tc->v = v;
		tc->cap = tc->cap ? 2 * tc->cap : 64;
	}
	tc->v[tc->n].tgid = tgid;
	tc->v[tc->n++].c = *c;
	return 0;
}

static int counter_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct top_counter *)a)->tgid, y = ((const struct top_counter *)b)->tgid;

	return (x > y) - (x < y);
}

static uint64_t ops(const struct mon_counts *c)
{
	uint64_t n = 0;
	int t;

	for (t = 0; t < RESTRACK_NTYPES; t++)
		n += c->create[t] + c->destroy[t];
	return n;
}

/*
 * A key deleted under the walk (the monitor's prune) makes the kernel start the walk over: keys seen twice.
 * Keep the later of the two reads (counts only grow).
 */
static void dedup(struct top_counters *tc)
{
	size_t r, w;

	for (r = 0, w = 0; r < tc->n; r++) {
		if (w && tc->v[w - 1].tgid == tc->v[r].tgid) {
			if (ops(&tc->v[r].c) > ops(&tc->v[w - 1].c))
				tc->v[w - 1] = tc->v[r];
			continue;
		}
		tc->v[w++] = tc->v[r];
	}
	tc->n = w;
}

int top_counters_read(int fd, struct top_counters *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = mon_counters_foreach(fd, on_counter, out);
	if (ret) {
		top_counters_free(out);
		return ret < 0 ? ret : -EIO;
	}
	out->mono = clock_mono_s();
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), counter_cmp);
	dedup(out);
	return 0;
}

void top_counters_free(struct top_counters *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

static const struct mon_counts *counter_find(const struct top_counters *tc, pid_t tgid)
{
	struct top_counter key = { .tgid = tgid }, *hit;

	if (!tc->n)
		return NULL;
	hit = bsearch(&key, tc->v, tc->n, sizeof(*tc->v), counter_cmp);
	return hit ? &hit->c : NULL;
}

static double per_s(uint64_t now, uint64_t before, double dt)
{
	return now > before ? (double)(now - before) / dt : 0.0;
}

void top_join_rates(struct top_snap *s, const struct top_counters *prev, const struct top_counters *cur)
{
	static const struct mon_counts zero;
	double dt = cur->mono - prev->mono;
	size_t r;
	int t;

	if (!(dt > 0))
		return;
	for (r = 0; r < s->nrows; r++) {
		struct top_row *row = &s->rows[r];
		const struct mon_counts *a, *b;

		if (row->kind != TOP_PROC)
			continue;
		memset(&row->rate, 0, sizeof(row->rate));
		row->rate.joined = true;
		b = counter_find(cur, row->pid);
		if (!b)
			continue;
		a = counter_find(prev, row->pid);
		if (!a)
			a = &zero;
		for (t = 0; t < RESTRACK_NTYPES; t++) {
			double c = per_s(b->create[t], a->create[t], dt), d = per_s(b->destroy[t], a->destroy[t], dt);

			row->rate.create_total += c;
			row->rate.destroy_total += d;
			if (kind_nl_of_restrack[t] >= 0) {
				row->rate.create[kind_nl_of_restrack[t]] = c;
				row->rate.destroy[kind_nl_of_restrack[t]] = d;
			}
		}
	}
	s->rates_joined = true;
	s->rate_interval = dt;
}

/* --- the join of every source ---------------------------------------------------------------------- */

static int count_kdenial(const struct kq_event *ev, void *arg)
{
	top_count_denial(arg, (pid_t)ev->tgid);
	return 0;
}

int top_join(struct top_snap *s, const struct top_sources *src)
{
	uint64_t since = 0;
	int ret = 0;

	if (src->ledger) {
		ret = top_join_ledger(s, src->ledger);
		/* The kernel's refusals and kills (BPF LSM quotas) count in DENY too, as the ledger's refusals do. */
		if (!ret && src->kq)
			kq_events_read(src->kq, &since, count_kdenial, s);
	}
	if (src->prev && src->cur)
		top_join_rates(s, src->prev, src->cur);
	return ret;
}

static enum top_key sort_key;
static bool sort_reverse;

static uint64_t row_val(const struct top_row *r, enum top_key k)
{
	if (k < TOP_KEY_MR_BYTES)
		return r->c.n[k];
	return r->c.mr_bytes;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct top_row *a = pa, *b = pb;
	uint64_t va, vb;
	int c = 0;

	switch (sort_key) {
	case TOP_KEY_PID:
		c = (a->pid > b->pid) - (a->pid < b->pid);
		break;
	case TOP_KEY_USER:
		c = strcmp(a->user, b->user);
		break;
	case TOP_KEY_COMM:
		c = strcmp(a->comm, b->comm);
		break;
	default:
		va = row_val(a, sort_key);
		vb = row_val(b, sort_key);
		c = (va < vb) - (va > vb);
		break;
	}
	if (sort_reverse)
		c = -c;
	if (!c)
		c = (a->kind > b->kind) - (a->kind < b->kind);
	if (!c)
		c = (a->pid > b->pid) - (a->pid < b->pid);
	if (!c)
		c = strcmp(a->comm, b->comm);
	return c;
}

void top_sort(struct top_snap *s, enum top_key key, bool reverse)
{
	/* qsort has no context argument in C; the single-threaded tool sorts one snapshot at a time. */
	sort_key = key < TOP_NKEYS ? key : TOP_KEY_QP;
	sort_reverse = reverse;
	if (s->nrows > 1)
		qsort(s->rows, s->nrows, sizeof(s->rows[0]), row_cmp);
}
