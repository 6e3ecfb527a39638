// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-process aggregation of RDMA netlink resource dumps: the model behind rdmactl top. */
#include "top.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const top_key_names[TOP_NKEYS + 1] = {
	[TOP_KEY_CTX] = "ctx", [TOP_KEY_PD] = "pd",	      [TOP_KEY_CQ] = "cq",   [TOP_KEY_QP] = "qp",
	[TOP_KEY_SRQ] = "srq", [TOP_KEY_MR] = "mr",	      [TOP_KEY_CM_ID] = "cm_id",
	[TOP_KEY_MR_BYTES] = "mr_bytes",		      [TOP_KEY_PID] = "pid", [TOP_KEY_USER] = "user",
	[TOP_KEY_COMM] = "comm",			      [TOP_NKEYS] = NULL,
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
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return top_parse_status(buf, tgid, uid, comm, commlen);
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
			r->uid = uid;
			user_name(a->t, uid, r->user, sizeof(r->user));
			snprintf(r->comm, sizeof(r->comm), "%s", comm);
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

static int on_res(const struct nl_res *res, void *arg)
{
	struct agg *a = arg;
	struct top_dev *d = &a->s->devs[a->dev];
	struct top_row *r;
	int idx;

	if (res->has & NL_HAS_PID)
		idx = row_of_tid(a, (pid_t)res->pid);
	else if (res->has & NL_HAS_KERN)
		idx = row_of_name(a->s, TOP_KERNEL, res->kern_name);
	else
		idx = row_of_name(a->s, TOP_UNKNOWN, "[unknown]");
	if (idx < 0)
		return idx;
	r = &a->s->rows[idx];
	r->c.n[res->type]++;
	r->devmask |= 1u << a->dev;
	d->totals.n[res->type]++;
	if (res->type == NL_RES_MR) {
		r->c.mr_bytes += res->mrlen;
		d->totals.mr_bytes += res->mrlen;
	}
	return 0;
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

static double ts_ms(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
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

int top_snapshot(struct top_ctx *t, const struct top_filter *f, struct top_snap *s)
{
	struct agg a = { .t = t, .s = s };
	struct nl_handlers h = { .arg = &a };
	struct timespec t0, t1;
	unsigned int i, k;
	size_t r, w;
	int ty, ret;

	memset(s, 0, sizeof(*s));
	clock_gettime(CLOCK_REALTIME, &s->time);
	s->privileged = geteuid() == 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
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
	}

	for (r = 0, w = 0; r < s->nrows; r++)
		if (row_matches(&s->rows[r], f))
			s->rows[w++] = s->rows[r];
	s->nrows = w;
out:
	map_free(s->map);
	s->map = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s->elapsed_ms = ts_ms(&t0, &t1);
	return 0;
}

void top_snap_free(struct top_snap *s)
{
	if (!s)
		return;
	map_free(s->map);
	free(s->rows);
	memset(s, 0, sizeof(*s));
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

static void add_counts(struct json_object *o, const struct top_counts *c)
{
	int t;

	for (t = 0; t < NL_RES_NTYPES; t++)
		json_object_object_add(o, nl_res_name(t), json_object_new_uint64(c->n[t]));
	json_object_object_add(o, "mr_bytes", json_object_new_uint64(c->mr_bytes));
}

static const char *kind_name(enum top_kind k)
{
	return k == TOP_PROC ? "process" : k == TOP_KERNEL ? "kernel" : "unknown";
}

struct json_object *top_snap_json(const struct top_snap *s, enum top_key key)
{
	struct json_object *o = json_object_new_object(), *devs = json_object_new_array();
	struct json_object *rows = json_object_new_array(), *tot;
	char when[64];
	struct tm tm;
	unsigned int i, p;
	size_t r;
	int t;

	gmtime_r(&s->time.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ", s->time.tv_nsec / 1000000);
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "elapsed_ms", json_object_new_double(s->elapsed_ms));
	json_object_object_add(o, "sort", json_object_new_string(top_key_names[key < TOP_NKEYS ? key : 0]));
	json_object_object_add(o, "privileged", json_object_new_boolean(s->privileged));
	json_object_object_add(o, "unresolved_threads", json_object_new_int(s->unresolved));
	for (i = 0; i < s->ndevs; i++) {
		const struct top_dev *d = &s->devs[i];
		struct json_object *dj = json_object_new_object(), *ports = json_object_new_array();
		struct json_object *unsup = json_object_new_array(), *sum;

		json_object_object_add(dj, "name", json_object_new_string(d->dev.name));
		json_object_object_add(dj, "index", json_object_new_int64(d->dev.index));
		for (p = 0; p < d->nports; p++) {
			struct json_object *pj = json_object_new_object();

			json_object_object_add(pj, "port", json_object_new_int64(d->ports[p].port));
			json_object_object_add(pj, "state",
					       json_object_new_string(nl_port_state_name(d->ports[p].state)));
			json_object_object_add(pj, "netdev", d->ports[p].netdev[0] ?
					       json_object_new_string(d->ports[p].netdev) : NULL);
			json_object_array_add(ports, pj);
		}
		json_object_object_add(dj, "ports", ports);
		tot = json_object_new_object();
		add_counts(tot, &d->totals);
		json_object_object_add(dj, "totals", tot);
		if (d->has_summary) {
			sum = json_object_new_object();
			for (t = 0; t < NL_RES_NTYPES; t++)
				if (d->summary.present & (1u << t))
					json_object_object_add(sum, nl_res_name(t),
							       json_object_new_uint64(d->summary.curr[t]));
		} else {
			sum = NULL;
		}
		json_object_object_add(dj, "summary", sum);
		for (t = 0; t < NL_RES_NTYPES; t++)
			if (d->unsupported & (1u << t))
				json_object_array_add(unsup, json_object_new_string(nl_res_name(t)));
		json_object_object_add(dj, "unsupported", unsup);
		json_object_array_add(devs, dj);
	}
	json_object_object_add(o, "devices", devs);
	for (r = 0; r < s->nrows; r++) {
		const struct top_row *row = &s->rows[r];
		struct json_object *rj = json_object_new_object(), *dl = json_object_new_array();

		json_object_object_add(rj, "pid", json_object_new_int(row->pid));
		json_object_object_add(rj, "kind", json_object_new_string(kind_name(row->kind)));
		json_object_object_add(rj, "uid", row->kind == TOP_PROC && row->resolved ?
				       json_object_new_int64(row->uid) : NULL);
		json_object_object_add(rj, "user", row->user[0] ? json_object_new_string(row->user) : NULL);
		json_object_object_add(rj, "comm", json_object_new_string(row->comm));
		add_counts(rj, &row->c);
		for (i = 0; i < s->ndevs; i++)
			if (row->devmask & (1u << i))
				json_object_array_add(dl, json_object_new_string(s->devs[i].dev.name));
		json_object_object_add(rj, "devices", dl);
		json_object_array_add(rows, rj);
	}
	json_object_object_add(o, "processes", rows);
	tot = json_object_new_object();
	add_counts(tot, &s->totals);
	json_object_object_add(o, "totals", tot);
	return o;
}
