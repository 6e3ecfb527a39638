// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel quotas: limits set and lifted (a new scope's count of what its processes hold: the population, then
 * the rescan), gc and repair. Reading what is pinned is lib/kq/kqmaps.c's; loading, attaching and the
 * population's walk lib/kq/kqload.c's.
 */
#include "kq/kq.h"
#include "kq/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/cgroup.h"
#include "core/util.h"
#include "kq/kqdrv.h"
#include "ledger/ledger.h"

int kq_open(bool create, struct kq **out)
{
	struct kq *q = calloc(1, sizeof(*q));
	int err, lock = -1, i;

	if (!q)
		return kq_fail(-ENOMEM, "out of memory");
	for (i = 0; i < M_NR; i++)
		q->fd[i] = -1;
	if (create) {
		if (mkdir(PIN_ROOT, 0700) && errno != EEXIST) {
			err = kq_fail(-errno, "cannot create %s: %s%s", PIN_ROOT, strerror(errno),
				   errno == EACCES || errno == EPERM ? " (root only)" : " (is bpffs mounted on /sys/fs/bpf?)");
			goto fail;
		}
		err = kq_verify_dir(PIN_ROOT);
		if (err)
			goto fail;
		lock = kq_lock();
		if (lock < 0) {
			err = lock;
			goto fail;
		}
	}
	/* pins in a directory others can write are not the programs': not used (to set or lift a limit) */
	err = access(PIN_ROOT, F_OK) ? 0 : kq_verify_dir(PIN_ROOT);
	if (!err && !access(KQ_PIN_DIR, F_OK))
		err = kq_verify_dir(KQ_PIN_DIR);
	if (!err)
		err = kq_open_pinned(q, false);
	if (err == -ENOENT && create) {
		for (i = 0; i < M_NR; i++)
			if (q->fd[i] >= 0)
				close(q->fd[i]), q->fd[i] = -1;
		if (q->st)
			munmap(q->st, q->st_len), q->st = NULL;
		err = kq_load_and_pin();
		if (!err)
			err = kq_open_pinned(q, false);
	}
	if (err)
		goto fail;
	if (lock >= 0)
		close(lock);
	*out = q;
	return 0;
fail:
	if (lock >= 0)
		close(lock);
	kq_close(q);
	return err;
}

/* ---- the rescan: what a scope's processes hold when its first limit is set ----------------------- */

struct idset {
	uint64_t *v;
	size_t n, cap;
	bool sorted; /* idset_sort since the last add: looked up by halves */
};

static int idset_add(struct idset *s, uint64_t id)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = id;
	s->sorted = false;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted, for a set asked about many times (the rescan: once a record, a cgroup tree's ids). */
static void idset_sort(struct idset *s)
{
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	s->sorted = true;
}

static bool idset_has(const struct idset *s, uint64_t id)
{
	size_t i;

	if (s->sorted)
		return s->n && bsearch(&id, s->v, s->n, sizeof(*s->v), cmp_u64);
	for (i = 0; i < s->n; i++)
		if (s->v[i] == id)
			return true;
	return false;
}

/*
 * The cgroup ids of the directory dfd (named name, for messages) and of every directory below it, down to
 * maxdepth levels below the first; deeper ones are an error (-ELOOP) when strict, else left out. Opened by
 * name relative to their parent (openat), so that no path length limits the walk: a first count that left a
 * cgroup out would not count what its tasks hold.
 */
static int collect_at(int dfd, struct idset *s, int depth, int maxdepth, bool strict)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (fstat(dfd, &st)) {
		close(dfd);
		return 0; /* gone meanwhile */
	}
	err = idset_add(s, st.st_ino);
	if (err) {
		close(dfd);
		return err;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	while (!err && (de = readdir(d))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (depth + 1 > maxdepth) {
			if (strict)
				err = -ELOOP;
			continue;
		}
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0) {
			if (errno == EMFILE || errno == ENFILE)
				err = -errno; /* a level it cannot open: not complete */
			continue; /* gone meanwhile */
		}
		err = collect_at(sub, s, depth + 1, maxdepth, strict);
	}
	closedir(d);
	return err;
}

/*
 * How deep below a limited cgroup its first count looks: deeper, the limit is refused (every level holds an fd).
 * RDMACTL_KQ_CGROUP_DEPTH sets another (1 to 65536).
 */
#define KQ_CG_COUNT_DEPTH 512

static int count_depth(void)
{
	const char *e = getenv("RDMACTL_KQ_CGROUP_DEPTH");
	uint64_t v;

	if (!e)
		return KQ_CG_COUNT_DEPTH;
	if (parse_u64(e, 1, 65536, &v))
		return kq_fail(-EINVAL, "RDMACTL_KQ_CGROUP_DEPTH='%s' is not a depth (a decimal number, 1 to 65536)", e);
	return (int)v;
}

static int collect_cgroups(const char *dir, struct idset *s, int maxdepth, bool strict)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return 0;
	return collect_at(dfd, s, 0, maxdepth, strict);
}

/*
 * Where in o's charges scope sc (of epoch epoch) goes: the index of its own charge (*mine set), of a charge to
 * an earlier scope of the same type and id (lifted and set again: replaced), or o->n (a new one); -1: no room.
 */
static int charge_slot(const struct kq_obj *o, const struct kq_scope *sc, __u32 epoch, bool *mine)
{
	int i;

	*mine = false;
	for (i = 0; i < o->n && i < KQ_MAXCHG; i++)
		if (o->sc[i].type == sc->type && o->sc[i].id == sc->id) {
			*mine = o->sc[i].epoch == epoch;
			return i;
		}
	return o->n < KQ_MAXCHG ? o->n : -1;
}

/*
 * One record of the rescan: whether scope sc (of epoch epoch) takes it (o is given the scope, to be written
 * back). The population's records are charged to the new scope already (mine): only records the programs
 * made for other scopes are taken.
 */
static bool rescan_takes(struct kq_obj *o, const struct kq_scope *sc, __u32 epoch, const struct idset *cg)
{
	bool mine;
	int at;

	if ((sc->type == KQ_SCOPE_PID && o->tgid != KQ_PID_TGID(sc->id)) ||
	    (sc->type == KQ_SCOPE_CGROUP && !idset_has(cg, o->cgid)))
		return false;
	at = charge_slot(o, sc, epoch, &mine);
	if (mine || at < 0 || (o->kind >= KQ_NK && !o->bytes))
		return false; /* counted by nothing (a DEVX UMEM is counted by its bytes alone) */
	o->sc[at] = *sc;
	o->sc[at].epoch = epoch;
	if (at == o->n)
		o->n++;
	return true;
}

/*
 * kq_gone's mark of key (0: none), once no destroy of it is under way (KQ_GONE_BUSY: a few microseconds in the
 * programs); -EAGAIN after a second of waiting.
 */
static int gone_mark(struct kq *q, __u64 key, __u64 *mark)
{
	int i;

	for (i = 0; i < 10000; i++) {
		if (bpf_map_lookup_elem(q->fd[M_GONE], &key, mark)) {
			*mark = 0;
			return 0;
		}
		if (KQ_GONE_STATE(*mark) != KQ_GONE_BUSY)
			return 0;
		usleep(100);
	}
	return kq_fail(-EAGAIN, "cannot count the RDMA objects that exist: a destroy did not finish");
}

/*
 * One record the rescan takes (key): read again, given the scope and written back (BPF_EXIST: an object
 * destroyed meanwhile is left out), and counted into base, unless a destroy read it before the write and so
 * gave back its charges without the scope (its mark, bpf/kq.bpf.c forget_counting: a new one since the mark
 * read before, saying KQ_GONE_WITHOUT, and no record left: the write was the one it deleted).
 */
static int rescan_one(struct kq *q, __u64 key, const struct kq_scope *sc, __u32 epoch, const struct idset *cg,
		      __s64 base[KQ_NK])
{
	struct kq_obj o;
	__u64 was, now;
	int err;

	err = gone_mark(q, key, &was);
	if (err || bpf_map_lookup_elem(q->fd[M_OBJS], &key, &o) || !rescan_takes(&o, sc, epoch, cg) ||
	    bpf_map_update_elem(q->fd[M_OBJS], &key, &o, BPF_EXIST))
		return err;
	err = gone_mark(q, key, &now);
	if (err)
		return err;
	if (now != was && KQ_GONE_STATE(now) == KQ_GONE_WITHOUT) {
		struct kq_obj left;

		if (bpf_map_lookup_elem(q->fd[M_OBJS], &key, &left))
			return 0;
	}
	if (o.kind < KQ_NK)
		base[o.kind]++;
	if (o.bytes)
		base[KQ_MR_BYTES] += (__s64)o.bytes;
	return 0;
}

struct rescan_arg {
	const struct kq_scope *sc;
	__u32 epoch;
	const struct idset *cg;
	__s64 *base;
};

/* what the scope takes, by the batch's copy; rescan_one reads it again (the copy can be old) */
static int rescan_cb(struct kq *q, __u64 key, const struct kq_obj *o, void *arg)
{
	struct rescan_arg *r = arg;
	struct kq_obj c = *o;

	return rescan_takes(&c, r->sc, r->epoch, r->cg) ? rescan_one(q, key, r->sc, r->epoch, r->cg, r->base) : 0;
}

/*
 * Count into base what the scope's processes hold and was not charged to it (cg: a cgroup scope's ids), and
 * mark those objects as charged to it so that their destroy gives it back. An object destroyed meanwhile
 * fails the BPF_EXIST update and is left out, as it should be. What the population recorded is charged to
 * the scope already (kq_populate counted it); what is taken here are records the programs made for other
 * scopes (the scope's objects charged to a limit set earlier). The table is read in batches (kq_objs_each)
 * to find what the scope takes; each of those is read again and written back alone (rescan_one; a batch
 * update has no BPF_EXIST).
 */
static int rescan(struct kq *q, const struct kq_scope *sc, __u32 epoch, const struct idset *cg, __s64 base[KQ_NK])
{
	struct rescan_arg r = { .sc = sc, .epoch = epoch, .cg = cg, .base = base };
	int err, end_err;

	err = kq_rescanning(q, true);
	if (!err)
		err = kq_objs_each(q, rescan_cb, &r);
	end_err = kq_rescanning(q, false);
	return err ? err : end_err;
}

/*
 * A new scope's first count: what its tasks hold now, recorded from the kernel's lists (kq_populate) and
 * counted (rescan) into lim->base, with the pin root locked.
 */
static int count_new_scope(struct kq *q, const struct kq_scope *sc, const char *dir, struct kq_limit *lim)
{
	struct idset cg = {};
	struct kq_scope charged = { .type = sc->type, .epoch = lim->epoch, .id = sc->id };
	uint64_t one = sc->type == KQ_SCOPE_PID ? KQ_PID_TGID(sc->id) : sc->id; /* the population knows tgids */
	int err = 0;

	if (sc->type == KQ_SCOPE_CGROUP) {
		int depth = count_depth();

		if (depth < 0)
			return depth;
		err = dir ? collect_cgroups(dir, &cg, depth, true) : idset_add(&cg, sc->id);
		if (err == -ELOOP)
			return kq_fail(err, "cannot count what the scope holds: %s has cgroups more than %d levels below it, "
				       "which the first count cannot see (limit a cgroup closer to them, or set "
				       "RDMACTL_KQ_CGROUP_DEPTH; cgroup.max.depth keeps a tenant from nesting deeper)", dir,
				       depth);
		if (err)
			return kq_fail(err, "cannot list the cgroups below %s: %s", dir ? dir : "the scope", strerror(-err));
	}
	err = kq_populate(q, &charged, sc->type == KQ_SCOPE_CGROUP ? cg.v : &one,
			  sc->type == KQ_SCOPE_CGROUP ? cg.n : sc->type == KQ_SCOPE_PID, lim->base);
	if (!err) {
		idset_sort(&cg);
		err = rescan(q, sc, lim->epoch, &cg, lim->base);
	}
	kq_pop_done(q);
	/*
	 * after the rescan gave files' records the scope, never before: a thread that cached "this file has no
	 * scopes" since looks again (bpf/kqcharge.bpf.h, free_of), before the limit goes in
	 */
	__atomic_add_fetch(&q->st->fgen, 1, __ATOMIC_SEQ_CST);
	/* not set: the records the population charged to the scope go with it */
	if (err)
		kq_drop_found(q, &charged, 1);
	free(cg.v);
	return err;
}

/* A cgroup directory's level below the cgroup2 mount (1: a child of the root), or -errno. */
static int cgroup_level(const char *dir)
{
	char path[PATH_MAX], *slash;
	struct stat st, up;
	int level = 0;

	if (!realpath(dir, path))
		return -errno;
	for (;;) {
		if (stat(path, &st))
			return -errno;
		slash = strrchr(path, '/');
		if (!slash || slash == path)
			return level; /* "/": not below a cgroup2 mount, or the mount is / itself */
		*slash = '\0';
		if (stat(path, &up))
			return -errno;
		if (up.st_dev != st.st_dev)
			return level; /* the mount point was the last step */
		level++;
	}
}

/* The most limited cgroups (ids in lim) on one path from dir down. */
static void limited_chain(const char *dir, const struct idset *lim, int above, int depth, int *most)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int n = above;

	if (depth > 64 || stat(dir, &st))
		return;
	if (idset_has(lim, st.st_ino))
		n++;
	if (n > *most)
		*most = n;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char sub[4096];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub))
			continue;
		limited_chain(sub, lim, n, depth + 1, most);
	}
	closedir(d);
}

/*
 * Can the programs hold a new scope's limits? They look at the cgroups of a task down to level KQ_MAXLVL, and
 * record an object's charge in at most KQ_MAXCHG scopes: global, its process, its limited cgroups. A limit
 * they could not hold is refused here, with the reason, rather than set and silently not enforced.
 */
static int fits(struct kq *q, const struct kq_scope *sc, const char *dir)
{
	struct kq_scope key, next, *prev = NULL;
	struct idset lim = {};
	char root[PATH_MAX];
	bool global = sc->type == KQ_SCOPE_GLOBAL, pid = sc->type == KQ_SCOPE_PID;
	int most = 0, level, n, err = 0;

	/*
	 * Counting what a global or cgroup scope holds walks every task, which a pid namespace hides in part; a
	 * cgroup's level and the limits above it are hidden by a cgroup namespace. A process scope needs neither
	 * (its number is the host's by now: kq_scope_pid).
	 */
	if (!pid) {
		err = kq_need_host_ns(sc->type == KQ_SCOPE_GLOBAL ? "a limit on the host counts what every process holds, and it"
								  : "a limit on a cgroup counts what its processes hold, and it",
				      sc->type == KQ_SCOPE_CGROUP);
		if (err)
			return err;
	}
	if (sc->type == KQ_SCOPE_CGROUP && dir) {
		level = cgroup_level(dir);
		if (level < 0)
			return kq_fail(level, "%s: %s", dir, strerror(-level));
		if (level > KQ_MAXLVL)
			return kq_fail(-ERANGE, "%s is %d levels below the cgroup root: the kernel's programs look at cgroups "
				    "down to level %d (limit an ancestor at level %d or above)", dir, level, KQ_MAXLVL,
				    KQ_MAXLVL);
	}
	if (sc->type == KQ_SCOPE_CGROUP && idset_add(&lim, sc->id))
		return kq_fail(-ENOMEM, "out of memory");
	while (!err && !bpf_map_get_next_key(q->fd[M_LIMITS], prev, &next)) {
		key = next;
		prev = &key;
		if (key.type == KQ_SCOPE_GLOBAL)
			global = true;
		else if (key.type == KQ_SCOPE_PID)
			pid = true;
		else if (key.type == KQ_SCOPE_CGROUP && idset_add(&lim, key.id))
			err = kq_fail(-ENOMEM, "out of memory");
	}
	if (!err) {
		cgroup2_root(root, sizeof(root));
		limited_chain(root, &lim, 0, 0, &most);
		n = most + global + pid;
		if (n > KQ_MAXCHG)
			err = kq_fail(-ERANGE, "this limit would put %d limited scopes on one path (the global scope, a process, "
				   "%d limited cgroups from the root down), more than the %d the kernel's programs record "
				   "for an object: lift a limit on that path first", n, most, KQ_MAXCHG);
	}
	free(lim.v);
	return err;
}

static int remove_locked(struct kq *q, const struct kq_scope *sc);

int kq_set(struct kq *q, const struct kq_scope *sc, const char *dir, unsigned int kind, uint64_t max)
{
	struct kq_limit lim;
	struct kq_usage use = {};
	struct kq_scope ukey = *sc;
	int i, err = 0, lock;

	if (kind >= KQ_NK)
		return kq_fail(-EINVAL, "kind %u is not counted by the kernel quota programs", kind);
	/*
	 * Locked before the scope is looked at: a scope whose count is under way (every max unlimited, below) is
	 * then never taken for a set one, and a change is not lost under a new scope's last update.
	 */
	lock = kq_lock_writer(q);
	if (lock < 0)
		return lock;
	if (!bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim)) {
		if (!kq_limit_in_force(&lim)) {
			/*
			 * No limit in force: the entry of a set killed before its count ended (only kq_set makes
			 * such an entry, and gives it its limit before it unlocks). Its usage misses what was there
			 * before: removed, with the records its population or rescan left uncharged, and set anew.
			 */
			struct kq_scope dead = { .type = sc->type, .epoch = lim.epoch, .id = sc->id };

			err = remove_locked(q, sc);
			kq_drop_found(q, &dead, 1);
			if (err)
				goto out;
		} else {
			lim.max[kind] = max;
			/* its last limit lifted: the scope goes (the last scope takes the programs with it) */
			if (!kq_limit_in_force(&lim))
				err = remove_locked(q, sc);
			else if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_EXIST))
				err = kq_fail(-errno, "cannot update the kernel limit: %s", strerror(errno));
			goto out;
		}
	}
	/* a scope without any limit is not made: a limit set later counts what it holds then (populate, rescan) */
	if (max == KQ_UNLIMITED)
		goto out;
	err = fits(q, sc, dir);
	if (err)
		goto out;
	/*
	 * A new scope: once its entries exist, the programs charge its new objects; then the rescan counts
	 * what it held before. The limit goes in last, so nothing is refused against a usage not yet known.
	 */
	memset(&lim, 0, sizeof(lim));
	for (i = 0; i < KQ_NK; i++)
		lim.max[i] = KQ_UNLIMITED;
	/* an epoch no scope had: the charges of the scope this one replaces (lifted, set again) are not its own */
	do
		lim.epoch = __atomic_add_fetch(&q->st->epochs, 1, __ATOMIC_SEQ_CST);
	while (!lim.epoch);
	ukey.epoch = lim.epoch;
	if (bpf_map_update_elem(q->fd[M_USAGE], &ukey, &use, BPF_NOEXIST) && errno != EEXIST) {
		err = kq_fail(-errno, "cannot add the scope to the kernel's usage: %s%s", strerror(errno),
			      errno == E2BIG ? " (too many scopes: remove unused ones with 'rdmactl quota gc')" : "");
		goto out;
	}
	if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_NOEXIST)) {
		err = kq_fail(-errno, "cannot add the kernel limit: %s", strerror(errno));
		bpf_map_delete_elem(q->fd[M_USAGE], &ukey);
		goto out;
	}
	/* after the entry, never before: a task that cached "no scope" since looks again, and finds it */
	__atomic_add_fetch(&q->st->gen, 1, __ATOMIC_SEQ_CST);
	err = kq_count_limits_locked(q);
	if (!err)
		err = count_new_scope(q, sc, dir, &lim);
	if (err) {
		/* not set: the scope goes again (with the programs, when it was the only one) */
		bpf_map_delete_elem(q->fd[M_LIMITS], sc);
		bpf_map_delete_elem(q->fd[M_USAGE], &ukey);
		kq_count_limits_locked(q);
		goto out;
	}
	lim.max[kind] = max;
	if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_EXIST))
		err = kq_fail(-errno, "cannot update the kernel limit: %s", strerror(errno));
out:
	close(lock);
	return err;
}

struct repair_arg {
	struct kq_scope *sc;
	struct kq_limit *lim;
	size_t n;
	int fd;
};

static int repair_list(const struct kq_scope *sc, void *arg)
{
	struct repair_arg *r = arg;
	struct kq_scope *v = realloc(r->sc, (r->n + 1) * sizeof(*v));
	struct kq_limit *l;

	if (!v)
		return -ENOMEM;
	r->sc = v;
	l = realloc(r->lim, (r->n + 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	r->lim = l;
	if (bpf_map_lookup_elem(r->fd, sc, &r->lim[r->n]))
		return 0; /* gone meanwhile */
	r->sc[r->n++] = *sc;
	return 0;
}

/*
 * Enforcement found down (kq_enforcement): every limit is lifted and set again, as a first limit is set, so
 * that what was created while nothing was attached is counted from the kernel's lists (populate, rescan).
 */
int kq_repair(struct kq *q, const char *cgroot)
{
	struct repair_arg r = { .fd = q->fd[M_LIMITS] };
	char dir[PATH_MAX];
	size_t i;
	unsigned int k;
	int err;

	err = kq_foreach(q, repair_list, &r);
	for (i = 0; !err && i < r.n; i++)
		err = kq_remove(q, &r.sc[i]);
	for (i = 0; !err && i < r.n; i++) {
		bool cg = r.sc[i].type == KQ_SCOPE_CGROUP;

		if (cg && !cgroup_dir_by_id(cgroot, r.sc[i].id, dir, sizeof(dir)))
			continue; /* the cgroup is gone: so are its limits */
		for (k = 0; !err && k < KQ_NK; k++)
			if (r.lim[i].max[k] != KQ_UNLIMITED)
				err = kq_set(q, &r.sc[i], cg ? dir : NULL, k, r.lim[i].max[k]);
	}
	free(r.sc);
	free(r.lim);
	return err;
}

/* kq_remove with the pin root locked */
static int remove_locked(struct kq *q, const struct kq_scope *sc)
{
	struct kq_scope ukey = *sc;
	struct kq_limit lim;
	int err = 0;

	/* the limit first: the programs look for its usage only through it */
	if (!bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim))
		ukey.epoch = lim.epoch;
	if (bpf_map_delete_elem(q->fd[M_LIMITS], sc) && errno != ENOENT)
		err = kq_fail(-errno, "cannot remove the kernel limit: %s", strerror(errno));
	if (bpf_map_delete_elem(q->fd[M_USAGE], &ukey) && errno != ENOENT && !err)
		err = kq_fail(-errno, "cannot remove the kernel usage: %s", strerror(errno));
	if (!err)
		err = kq_count_limits_locked(q);
	return err;
}

int kq_remove(struct kq *q, const struct kq_scope *sc)
{
	int lock, err;

	lock = kq_lock_writer(q);
	if (lock < 0)
		return lock;
	err = remove_locked(q, sc);
	close(lock);
	return err;
}

struct gc_arg {
	struct kq_scope *sc;
	size_t n;
};

static int gc_list(const struct kq_scope *sc, void *arg)
{
	struct gc_arg *g = arg;
	struct kq_scope *v = realloc(g->sc, (g->n + 1) * sizeof(*g->sc));

	if (!v)
		return -ENOMEM;
	g->sc = v;
	g->sc[g->n++] = *sc;
	return 0;
}

/* The scopes a killed set left without a limit in force (under the lock no set runs: none is under way). */
static int gc_unfinished(struct kq *q, unsigned int *removed)
{
	struct gc_arg g = {};
	struct kq_limit lim;
	size_t i, ndead = 0;
	int lock, err;

	lock = kq_lock_writer(q);
	if (lock < 0)
		return lock;
	err = kq_foreach(q, gc_list, &g);
	for (i = 0; !err && i < g.n; i++) {
		if (bpf_map_lookup_elem(q->fd[M_LIMITS], &g.sc[i], &lim) || kq_limit_in_force(&lim))
			continue;
		err = remove_locked(q, &g.sc[i]);
		if (!err) {
			/* a set killed before its limit went in: the records its population charged to it go too */
			g.sc[ndead] = g.sc[i];
			g.sc[ndead++].epoch = lim.epoch;
			(*removed)++;
		}
	}
	if (ndead)
		kq_drop_found(q, g.sc, ndead); /* the table read once for them all */
	close(lock);
	free(g.sc);
	return err;
}

/*
 * The scopes whose process or cgroup is gone. They are listed before the cgroups are: a limit set meanwhile
 * is not on the list, and a cgroup on it that exists is in the cgroups read after (never taken for gone).
 */
int kq_gc(struct kq *q, const char *cgroot, unsigned int *removed, unsigned int *unfinished)
{
	/*
	 * Only what can be seen from here is taken for gone: a process of another pid namespace is not in this
	 * /proc, a cgroup outside this cgroup namespace's root is not under its mount (their limits are kept).
	 */
	bool pids = kq_pidns_host(), cgroups = kq_cgroupns_host();
	struct gc_arg g = {};
	struct idset cg = {};
	unsigned int left = 0;
	size_t i;
	int err;

	*removed = 0;
	err = gc_unfinished(q, &left);
	if (unfinished)
		*unfinished = left;
	if (!err)
		err = kq_foreach(q, gc_list, &g);
	if (!err)
		err = collect_cgroups(cgroot, &cg, KQ_MAXLVL + 1, false); /* limits are set no deeper than that */
	idset_sort(&cg);
	for (i = 0; !err && i < g.n; i++) {
		const struct kq_scope *sc = &g.sc[i];
		bool dead = false;

		if (sc->type == KQ_SCOPE_PID && pids) {
			uint64_t start = 0;
			int r = proc_stat_start((pid_t)KQ_PID_TGID(sc->id), &start, NULL);

			int64_t off = kq_boottime_offset() / (int64_t)KQ_PID_NS_PER_TICK, d;

			/*
			 * gone, or its number now another process's (a zombie still holds both); /proc's start time
			 * in a time namespace has its boottime offset (whole ticks here: within one of the kernel's)
			 */
			d = (int64_t)start - off - (int64_t)KQ_PID_START(sc->id);
			dead = r == -ESRCH || (!r && (off ? d < -1 || d > 1 : d != 0));
		} else if (sc->type == KQ_SCOPE_CGROUP && cgroups) {
			dead = !idset_has(&cg, sc->id);
		}
		if (!dead)
			continue;
		err = kq_remove(q, sc);
		if (!err)
			(*removed)++;
	}
	free(g.sc);
	free(cg.v);
	return err;
}
