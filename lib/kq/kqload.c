// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel quotas: the programs of bpf/kq.bpf.c loaded and pinned once (the one file that needs their
 * skeleton), attached while a kernel limit exists and detached after the last, and the population that
 * records what a scope's tasks already hold when it gets its first limit.
 */
#include "kq/internal.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kq.skel.h"
#include "kq/kqdrv.h"

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_DEBUG && getenv("RDMACTL_KQ_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/*
 * The entries of kq_objs, the table of charged objects' records (one per object a limited scope holds):
 * RDMACTL_KQ_OBJECTS when the programs are loaded, else the programs' own 2^18 (0 here). 48 bytes a
 * record plus the hash map's own, about 30 MiB at 2^18 entries.
 */
#define KQ_OBJS_MIN 256u
#define KQ_OBJS_MAX (1u << 24)
static int objs_size(__u32 *out)
{
	const char *v = getenv("RDMACTL_KQ_OBJECTS");
	uint64_t n;

	*out = 0;
	if (!v || !*v)
		return 0;
	/* decimal, as every number rdmactl reads (issue 51): "0x1000" or "010" is no other number */
	if (parse_u64(v, KQ_OBJS_MIN, KQ_OBJS_MAX, &n))
		return kq_fail(-EINVAL, "RDMACTL_KQ_OBJECTS=%s: the table of objects takes %u to %u entries (a "
			       "decimal number)", v, KQ_OBJS_MIN, KQ_OBJS_MAX);
	*out = (__u32)n;
	return 0;
}

/* Load and pin (programs, then maps); called with the pin root locked and nothing pinned. */
int kq_load_and_pin(void)
{
	struct kq_bpf *skel;
	struct bpf_program *prog;
	char path[256];
	__u32 objs;
	int err, i;

	libbpf_set_print(libbpf_quiet);
	err = objs_size(&objs);
	if (err)
		return err;
	skel = kq_bpf__open();
	if (skel && objs && bpf_map__set_max_entries(skel->maps.kq_objs, objs)) {
		kq_bpf__destroy(skel);
		return kq_fail(-EINVAL, "cannot size the kernel quota programs' table of objects to %u", objs);
	}
	if (!skel || kq_bpf__load(skel)) {
		err = -errno;
		kq_bpf__destroy(skel);
		return kq_fail(err, "cannot load the kernel quota programs: %s (is ib_uverbs loaded? "
			    "RDMACTL_KQ_DEBUG=1 shows libbpf's messages)", strerror(-err));
	}
	if (mkdir(KQ_PIN_DIR, 0700) && errno != EEXIST) {
		err = kq_fail(-errno, "cannot create %s: %s", KQ_PIN_DIR, strerror(errno));
		goto out;
	}
	err = kq_verify_dir(KQ_PIN_DIR);
	if (err)
		goto out;
	/* programs first, maps last: a map set pinned means the programs behind it are in place */
	bpf_object__for_each_program(prog, skel->obj) {
		snprintf(path, sizeof(path), "%s/prog_%s", KQ_PIN_DIR, bpf_program__name(prog));
		err = bpf_program__pin(prog, path);
		if (err) {
			kq_fail(err, "cannot pin %s: %s", path, strerror(-err));
			goto out;
		}
	}
	/* the drivers' maps (lib/kq/kqdrv.c) before the set that says the programs are in place */
	err = kq_drv_pin(skel->obj);
	if (err) {
		kq_fail(err, "cannot pin the driver maps in %s: %s", KQ_PIN_DIR, strerror(-err));
		goto out;
	}
	for (i = 0; i < M_NR; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(skel->obj, kq_map_names[i]);

		kq_pin_path(path, sizeof(path), kq_map_names[i]);
		err = map ? bpf_map__pin(map, path) : -ENOENT;
		if (err) {
			kq_fail(err, "cannot pin %s: %s", path, strerror(-err));
			goto out;
		}
	}
	err = 0;
out:
	kq_bpf__destroy(skel); /* the pins hold what must stay */
	return err;
}

/*
 * Attach (want) or detach the on-demand programs; a set pinned by an older rdmactl stays as it is. *attached:
 * set when this call attached the record keepers (kq_begin): the population is due.
 */
static int sync_ondemand(bool want, bool *attached)
{
	char prog[256], link[256];
	size_t i;

	for (i = 0; i < KQ_NONDEMAND; i++) {
		bool have;
		int pfd, lfd;

		snprintf(prog, sizeof(prog), "%s/prog_%s", KQ_PIN_DIR, kq_ondemand[i]);
		snprintf(link, sizeof(link), "%s/link_%s", KQ_PIN_DIR, kq_ondemand[i]);
		if (access(prog, F_OK))
			continue; /* always attached (an older layout) */
		have = !access(link, F_OK);
		if (!want && have) {
			/*
			 * The last reference goes with a close, not with the unlink: the kernel releases a link
			 * whose pin is removed later, from a work queue (6.12; seconds later in the lab), and the
			 * program would record objects after kq_objs was emptied. A close detaches it before it
			 * returns.
			 */
			lfd = bpf_obj_get(link);
			if (unlink(link) && errno != ENOENT) {
				int err = -errno;

				if (lfd >= 0)
					close(lfd);
				return kq_fail(err, "cannot detach %s: %s", link, strerror(-err));
			}
			if (lfd >= 0)
				close(lfd);
		}
		if (!want || have)
			continue;
		pfd = bpf_obj_get(prog);
		if (pfd < 0)
			return kq_fail(-errno, "cannot open %s: %s", prog, strerror(errno));
		lfd = bpf_raw_tracepoint_open(NULL, pfd);
		if (lfd < 0 || bpf_obj_pin(lfd, link)) {
			int err = -errno;

			if (lfd >= 0)
				close(lfd);
			close(pfd);
			return kq_fail(err, "cannot attach %s: %s", prog, strerror(-err));
		}
		close(lfd);
		close(pfd);
		if (attached && !strcmp(kq_ondemand[i], "kq_begin"))
			*attached = true;
	}
	return 0;
}

/* Whether a program attached on demand has no link (while limits exist: enforcement was taken away). */
static bool ondemand_detached(void)
{
	char prog[256], link[256];
	size_t i;

	for (i = 0; i < KQ_NONDEMAND; i++) {
		snprintf(prog, sizeof(prog), "%s/prog_%s", KQ_PIN_DIR, kq_ondemand[i]);
		snprintf(link, sizeof(link), "%s/link_%s", KQ_PIN_DIR, kq_ondemand[i]);
		if (!access(prog, F_OK) && access(link, F_OK))
			return true;
	}
	return false;
}

/* The next attach generation, never 0 (kq_task.checked's "not checked"). */
static void new_agen(struct kq *q)
{
	if (!__atomic_add_fetch(&q->st->agen, 1, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&q->st->agen, 1, __ATOMIC_SEQ_CST);
}

/* Empty a hash map keyed by __u64 (kq_objs, kq_gone). */
static void empty_map(int fd)
{
	__u64 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key) && errno != ENOENT)
			break;
}

/* One population iterator over every task: -ENOENT (not said) when the programs pinned have none. */
static int run_iter(const char *name)
{
	char path[256], buf[256];
	int prog, err;

	prog = kq_iter_open(name, path, sizeof(path));
	if (prog < 0)
		return prog;
	err = kq_iter_run(prog, path, NULL, buf, sizeof(buf), NULL, NULL, "count what the scope holds");
	close(prog);
	return err;
}

static int set_populating(struct kq *q, __u32 on, __u32 *miss)
{
	/* on: the misses counted from here; off: those counted until the programs stopped marking */
	if (on) {
		__atomic_store_n(&q->st->pop_miss, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&q->st->pop_full, 0, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&q->st->populating, on, __ATOMIC_SEQ_CST);
	if (!on) {
		__u32 m = __atomic_exchange_n(&q->st->pop_miss, 0, __ATOMIC_SEQ_CST);

		if (miss)
			*miss = m;
	}
	return 0;
}

int kq_rescanning(struct kq *q, bool on)
{
	__u32 miss = 0;

	empty_map(q->fd[M_GONE]);
	set_populating(q, on ? KQ_RESCANNING : 0, &miss);
	if (!on)
		empty_map(q->fd[M_GONE]);
	return miss ? kq_fail(-EAGAIN, "cannot count the RDMA objects that exist: %u destroys meanwhile were not "
			      "marked (the programs' table of them is full)", miss) : 0;
}

#define OBJS_BATCH 1024

int kq_objs_each(struct kq *q, int (*cb)(struct kq *q, __u64 key, const struct kq_obj *o, void *arg), void *arg)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 in = 0, out = 0, n, i, size = OBJS_BATCH;
	__u64 *keys = NULL;
	struct kq_obj *vals = NULL;
	bool first = true, end = false;
	int err = 0;

	while (!err && !end) {
		if (!keys) {
			keys = malloc(size * sizeof(*keys));
			vals = malloc(size * sizeof(*vals));
			if (!keys || !vals) {
				err = kq_fail(-ENOMEM, "cannot read the kernel quota programs' table of objects: %s",
					      strerror(ENOMEM));
				break;
			}
		}
		n = size;
		err = bpf_map_lookup_batch(q->fd[M_OBJS], first ? NULL : &in, &out, keys, vals, &n, &opts);
		if (err && errno == ENOSPC && size < (1u << 20)) {
			/* one bucket holds more records than a batch: read it with a larger one */
			free(keys);
			free(vals);
			keys = NULL;
			vals = NULL;
			size *= 4;
			err = 0;
			continue;
		}
		if (err && errno != ENOENT) {
			err = kq_fail(-errno, "cannot read the kernel quota programs' table of objects: %s",
				      strerror(errno));
			break;
		}
		end = err; /* ENOENT: the last buckets, n records in them */
		err = 0;
		first = false;
		in = out;
		for (i = 0; !err && i < n; i++)
			err = cb(q, keys[i], &vals[i], arg);
	}
	free(keys);
	free(vals);
	return err;
}

struct drop_arg {
	const struct kq_scope *sc;
	size_t n;
};

/* A record of the population's, charged to nothing or to one of the scopes alone? */
static bool found_dropped(const struct kq_obj *o, const struct drop_arg *d)
{
	size_t i;

	if (o->pad != KQ_OBJ_FOUND || o->n > 1)
		return false;
	for (i = 0; o->n && i < d->n; i++)
		if (kq_scope_eq(&o->sc[0], &d->sc[i]))
			return true;
	return !o->n;
}

static int drop_one(struct kq *q, __u64 key, const struct kq_obj *copy, void *arg)
{
	struct kq_obj o;

	/* read again before the delete: the copy can be old (its object destroyed, the address used again) */
	if (!found_dropped(copy, arg) || bpf_map_lookup_elem(q->fd[M_OBJS], &key, &o) || !found_dropped(&o, arg) ||
	    bpf_map_delete_elem(q->fd[M_OBJS], &key))
		return 0;
	/* deleted here: its destroy finds no record, and gives nothing back (bpf/kq.bpf.c forget) */
	__atomic_fetch_sub(&q->st->nobjs, 1, __ATOMIC_SEQ_CST);
	if (o.n && o.kind < KQ_NK)
		__atomic_fetch_sub(&q->st->pop_base[o.kind], 1, __ATOMIC_SEQ_CST);
	if (o.n && o.bytes)
		__atomic_fetch_sub(&q->st->pop_base[KQ_MR_BYTES], (__s64)o.bytes, __ATOMIC_SEQ_CST);
	return 0;
}

void kq_drop_found(struct kq *q, const struct kq_scope *sc, size_t n)
{
	struct drop_arg d = { .sc = sc, .n = n };

	kq_objs_each(q, drop_one, &d);
}

void kq_pop_recover(struct kq *q)
{
	struct kq_scope sc;

	if (!q->st || (!__atomic_load_n(&q->st->populating, __ATOMIC_SEQ_CST) &&
		       !__atomic_load_n(&q->st->pop_want, __ATOMIC_SEQ_CST)))
		return;
	set_populating(q, false, NULL);
	__atomic_store_n(&q->st->pop_want, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&q->st->pop_full, 0, __ATOMIC_SEQ_CST);
	empty_map(q->fd[M_WANT]);
	empty_map(q->fd[M_GONE]);
	empty_map(q->fd[M_WALKED]);
	sc = q->st->pop_scope;
	kq_drop_found(q, &sc, 1);
}

/*
 * kq_state.populating is set before the iterators run, so that every destroy the programs see while they walk
 * is marked in kq_gone (the argument: bpf/kqpop.bpf.h). A walk that missed something (kq_gone full, a list
 * that kept changing) is done again, at most three times; one that found no room in kq_objs is not.
 */
int kq_populate(struct kq *q, const struct kq_scope *sc, const uint64_t *ids, size_t n, __s64 base[KQ_NK])
{
	__u32 miss = 0, full;
	__u8 one = 1;
	size_t i;
	int err = 0, round;
	unsigned int k;

	empty_map(q->fd[M_WANT]);
	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(q->fd[M_WANT], &ids[i], &one, BPF_ANY))
			return kq_fail(-errno, "cannot count what the scope holds: %zu cgroups below it (at most %u): %s", n,
				       KQ_WANT_MAX, strerror(errno));
	/* the scope the records are charged to, and their count from 0, before the iterators look */
	q->st->pop_scope = *sc;
	for (k = 0; k < KQ_NK; k++)
		__atomic_store_n(&q->st->pop_base[k], 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&q->st->pop_want, sc->type, __ATOMIC_SEQ_CST);
	for (round = 0;; round++) {
		empty_map(q->fd[M_GONE]);
		empty_map(q->fd[M_WALKED]);
		set_populating(q, true, NULL);
		err = run_iter("kq_iter_file");
		if (!err)
			err = run_iter("kq_iter_vma");
		if (err == -ENOENT)
			err = 0; /* an older layout without iterators */
		set_populating(q, false, &miss);
		full = __atomic_exchange_n(&q->st->pop_full, 0, __ATOMIC_SEQ_CST);
		if (!err && full)
			err = kq_fail(-ENOSPC, "cannot count what the scope holds: the kernel quota programs' table of objects "
				      "is full (%u entries, %lld in use); load the programs with a larger one "
				      "(RDMACTL_KQ_OBJECTS, see rdmactl-quota(8))", q->st->objs_max,
				      (long long)__atomic_load_n(&q->st->nobjs, __ATOMIC_SEQ_CST));
		if (err || !miss)
			break;
		if (round == 2) {
			err = kq_fail(-EAGAIN, "cannot count the RDMA objects that exist: they kept changing (%u misses)", miss);
			break;
		}
		kq_drop_found(q, sc, sc ? 1 : 0);
	}
	/* what the records left are charged (a destroy since gave its part back to the usage) */
	for (k = 0; !err && k < KQ_NK; k++)
		base[k] += __atomic_load_n(&q->st->pop_base[k], __ATOMIC_SEQ_CST);
	empty_map(q->fd[M_GONE]);
	empty_map(q->fd[M_WALKED]);
	return err;
}

void kq_pop_done(struct kq *q)
{
	__atomic_store_n(&q->st->pop_want, 0, __ATOMIC_SEQ_CST);
	empty_map(q->fd[M_WANT]);
}

/*
 * The major of uverbs devices 32 and up: ib_uverbs registers "infiniband_verbs" twice in /proc/devices, the
 * fixed 231 (devices 0-31) and a major alloc_chrdev_region gave it (devices 32-1023). 0: none (not loaded).
 */
static __u32 uverbs_dyn_major(void)
{
	FILE *f = fopen("/proc/devices", "re");
	char line[128], name[64];
	unsigned int major;
	__u32 dyn = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Block devices:", 14))
			break;
		if (sscanf(line, "%u %63s", &major, name) == 2 && !strcmp(name, "infiniband_verbs") &&
		    major != KQ_UVERBS_MAJOR)
			dyn = major;
	}
	fclose(f);
	return dyn;
}

/* Tell the programs the dynamic major (before they run: the population looks at every uverbs file). */
static int set_dyn_major(struct kq *q)
{
	__atomic_store_n(&q->st->dyn_major, uverbs_dyn_major(), __ATOMIC_SEQ_CST);
	return 0;
}

int kq_lock(void)
{
	int lock = kq_lock_root(LOCK_EX);

	return lock < 0 ? kq_fail(lock, "cannot lock %s: %s", PIN_ROOT, strerror(-lock)) : lock;
}

/* kq_objs emptied with nothing attached (no program inserts or deletes meanwhile): its count is 0. */
static void empty_objs(struct kq *q)
{
	empty_map(q->fd[M_OBJS]);
	__atomic_store_n(&q->st->nobjs, 0, __ATOMIC_SEQ_CST);
}

/*
 * Count the limited scopes and their types for the programs, and attach every program while there is one
 * (under the pin root's lock: a set and an unset at once must not leave a limit without them); after the
 * last kq_objs is emptied. What a new scope holds already is counted by kq_set (kq_populate, rescan).
 */
int kq_count_limits_locked(struct kq *q)
{
	struct kq_scope key, next, *prev = NULL;
	struct bpf_map_info info = {};
	__u32 n = 0, types = 0, ilen = sizeof(info);
	int err;

	if (!q->st)
		return kq_fail(-EPERM, "the kernel quota programs were opened read-only");
	err = set_dyn_major(q);
	if (err)
		return err;
	/* the table's size, for the room the programs keep in it (an older layout: theirs) */
	if (!bpf_obj_get_info_by_fd(q->fd[M_OBJS], &info, &ilen))
		__atomic_store_n(&q->st->objs_max, info.max_entries, __ATOMIC_SEQ_CST);
	while (!bpf_map_get_next_key(q->fd[M_LIMITS], prev, &next)) {
		key = next;
		prev = &key;
		n++;
		if (key.type < 32)
			types |= KQ_TYPE(key.type);
	}
	/* attached before the programs look for limits, detached after they stopped */
	if (n) {
		char begin[256], prog[256];

		snprintf(begin, sizeof(begin), "%s/link_kq_begin", KQ_PIN_DIR);
		snprintf(prog, sizeof(prog), "%s/prog_kq_begin", KQ_PIN_DIR);
		/*
		 * The first limit: records left from a program still running at the last detach are stale. (Links
		 * taken away while limits exist, as bench/kqprobe does: attached again, nothing emptied.)
		 */
		if (!__atomic_load_n(&q->st->nlimits, __ATOMIC_SEQ_CST) && access(begin, F_OK) && !access(prog, F_OK))
			empty_objs(q);
		/*
		 * A first limit, or programs attached again while limits stayed (their links were taken away): a
		 * new attach generation (never 0) before the programs look, so that no thread's mark from an
		 * earlier attach (kq_task.checked) makes the backstop kill a creation that came in unseen
		 */
		if (!__atomic_load_n(&q->st->nlimits, __ATOMIC_SEQ_CST) || ondemand_detached() ||
		    !__atomic_load_n(&q->st->agen, __ATOMIC_SEQ_CST))
			new_agen(q);
		err = sync_ondemand(true, NULL);
		if (err) {
			sync_ondemand(false, NULL);
			return err;
		}
	}
	/* the types a limit is looked up by before the count that makes the programs look (when none: no look) */
	if (n)
		__atomic_store_n(&q->st->types, types, __ATOMIC_SEQ_CST);
	__atomic_store_n(&q->st->nlimits, n, __ATOMIC_SEQ_CST);
	if (!n)
		__atomic_store_n(&q->st->types, 0, __ATOMIC_SEQ_CST);
	err = n ? 0 : sync_ondemand(false, NULL);
	/* no program sees a destroy any more: the records would be stale when the next limit comes */
	if (!err && !n) {
		char begin[256];

		snprintf(begin, sizeof(begin), "%s/prog_kq_begin", KQ_PIN_DIR);
		if (!access(begin, F_OK))
			empty_objs(q);
	}
	return err;
}

int kq_lock_writer(struct kq *q)
{
	int lock;

	if (!q->st)
		return kq_fail(-EPERM, "the kernel quota programs were opened read-only");
	lock = kq_lock();
	if (lock >= 0)
		kq_pop_recover(q);
	return lock;
}

int kq_count_limits(struct kq *q)
{
	int lock, err;

	lock = kq_lock_writer(q);
	if (lock < 0)
		return lock;
	err = kq_count_limits_locked(q);
	close(lock);
	return err;
}
