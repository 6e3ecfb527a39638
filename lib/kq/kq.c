// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Kernel quotas: load and pin bpf/kq.bpf.c once, then read and write its limits through the pinned maps. */
#include "kq/kq.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/cgroup.h"
#include "kq.skel.h"
#include "kq/kqdrv.h"
#include "ledger/ledger.h"

#define PIN_ROOT "/sys/fs/bpf/rdmactl"

enum { M_LIMITS, M_USAGE, M_OBJS, M_STATE, M_EVENTS, M_GONE, M_NR };
static const char *const map_names[M_NR] = { "kq_limits", "kq_usage", "kq_objs", "kq_state", "kq_events", "kq_gone" };
static const size_t map_vsize[M_NR] = { sizeof(struct kq_limit), sizeof(struct kq_usage), sizeof(struct kq_obj),
					sizeof(struct kq_state), sizeof(struct kq_event), sizeof(__u8) };

struct kq {
	int fd[M_NR];
	struct kq_state *st; /* kq_state, mapped: rdmactl's fields are stored, the programs' counters read */
	size_t st_len;
};

static __thread char kq_errbuf[512];

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kq_errbuf, sizeof(kq_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *kq_error(void)
{
	return kq_errbuf;
}

bool kq_lsm_active(char *why, size_t len)
{
	const char *path = "/sys/kernel/security/lsm";
	char buf[512] = "", *tok, *save = NULL;
	FILE *f = fopen(path, "re");

	if (!f && errno == ENOENT) {
		/* securityfs not mounted yet (a minimal system): mount it where it belongs */
		mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL);
		f = fopen(path, "re");
	}
	if (!f) {
		snprintf(why, len, "cannot read %s: %s", path, strerror(errno));
		return false;
	}
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(why, len, "%s reads '%s', without bpf", path, buf);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, "bpf"))
			return true;
	return false;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_DEBUG && getenv("RDMACTL_KQ_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/*
 * A pin directory rdmactl trusts: a directory (not a link to one) on a BPF file system, root's and writable by
 * root only. bpffs is mounted mode 1777 unless told otherwise: a user who made /sys/fs/bpf/rdmactl first
 * could remove the programs' links (all enforcement) or put files of its own where they go.
 */
static int verify_dir(const char *path)
{
	struct statfs fs;
	struct stat st;

	if (lstat(path, &st))
		return fail(-errno, "cannot check %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(-ENOTDIR, "%s is not a directory: remove it (rm -r) and set the kernel limits again", path);
	if (statfs(path, &fs) || fs.f_type != BPF_FS_MAGIC)
		return fail(-EXDEV, "%s is not on a BPF file system (mount -t bpf bpf /sys/fs/bpf)", path);
	if (st.st_uid != 0 || (st.st_mode & 077))
		return fail(-EPERM, "%s belongs to uid %u with mode %04o, not to root with mode 0700: whoever can "
			    "write there can remove the kernel's enforcement; remove it (rm -r) and set the kernel "
			    "limits again", path, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
	return 0;
}

static void pin_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", KQ_PIN_DIR, name);
}

static int open_pinned(struct kq *q, bool ro)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = ro ? BPF_F_RDONLY : 0);
	char path[256];
	int i;

	for (i = 0; i < M_NR; i++) {
		struct bpf_map_info info = {};
		__u32 ilen = sizeof(info);

		pin_path(path, sizeof(path), map_names[i]);
		q->fd[i] = bpf_obj_get_opts(path, &opts);
		if (q->fd[i] < 0) {
			int err = -errno;

			if (err == -ENOENT)
				return fail(err, "the kernel quota programs are not loaded (no %s)", path);
			return fail(err, "cannot open %s: %s%s", path, strerror(-err),
				    err == -EACCES || err == -EPERM ? " (root only)" : "");
		}
		if (map_vsize[i] && (bpf_obj_get_info_by_fd(q->fd[i], &info, &ilen) || info.value_size != map_vsize[i]))
			return fail(-EPROTO,
				    "%s was pinned by another version of rdmactl (value size %u, this one uses %zu): "
				    "remove %s (rm -r) and set the kernel limits again",
				    path, info.value_size, map_vsize[i], KQ_PIN_DIR);
	}
	if (ro)
		return 0; /* a read-only descriptor cannot be mapped shared: kq_state is read by lookups */
	q->st_len = (size_t)sysconf(_SC_PAGESIZE);
	q->st = mmap(NULL, q->st_len, PROT_READ | PROT_WRITE, MAP_SHARED, q->fd[M_STATE], 0);
	if (q->st == MAP_FAILED) {
		q->st = NULL;
		return fail(-EPROTO, "%s/kq_state was pinned by another version of rdmactl (cannot map it: %s): remove "
			    "%s (rm -r) and set the kernel limits again", KQ_PIN_DIR, strerror(errno), KQ_PIN_DIR);
	}
	return 0;
}

/*
 * Every program is pinned as a program (prog_NAME) and attached by count_limits() at the first limit, detached
 * after the last (link_NAME while attached), so that without kernel limits nothing on the host passes them.
 * The iterators (kq_iter_*) are not attached: populate() runs them once at the first limit. A set pinned by
 * an older rdmactl (links without prog_ pins) stays attached as it is.
 */
static const char *const ondemand[] = { "kq_ioctl", "kq_ioctl_compat", "kq_open", "kq_opened", "kq_close",
					"kq_begin", "kq_commit", "kq_destroy", "kq_ioctl_done" };

/* Load and pin (programs, then maps); called with the pin root locked and nothing pinned. */
static int load_and_pin(void)
{
	struct kq_bpf *skel;
	struct bpf_program *prog;
	char path[256];
	int err, i;

	libbpf_set_print(libbpf_quiet);
	skel = kq_bpf__open_and_load();
	if (!skel)
		return fail(-errno, "cannot load the kernel quota programs: %s (is ib_uverbs loaded? "
			    "RDMACTL_KQ_DEBUG=1 shows libbpf's messages)", strerror(errno));
	if (mkdir(KQ_PIN_DIR, 0700) && errno != EEXIST) {
		err = fail(-errno, "cannot create %s: %s", KQ_PIN_DIR, strerror(errno));
		goto out;
	}
	err = verify_dir(KQ_PIN_DIR);
	if (err)
		goto out;
	/* programs first, maps last: a map set pinned means the programs behind it are in place */
	bpf_object__for_each_program(prog, skel->obj) {
		snprintf(path, sizeof(path), "%s/prog_%s", KQ_PIN_DIR, bpf_program__name(prog));
		err = bpf_program__pin(prog, path);
		if (err) {
			fail(err, "cannot pin %s: %s", path, strerror(-err));
			goto out;
		}
	}
	/* the drivers' maps (lib/kq/kqdrv.c) before the set that says the programs are in place */
	err = kq_drv_pin(skel->obj);
	if (err) {
		fail(err, "cannot pin the driver maps in %s: %s", KQ_PIN_DIR, strerror(-err));
		goto out;
	}
	for (i = 0; i < M_NR; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(skel->obj, map_names[i]);

		pin_path(path, sizeof(path), map_names[i]);
		err = map ? bpf_map__pin(map, path) : -ENOENT;
		if (err) {
			fail(err, "cannot pin %s: %s", path, strerror(-err));
			goto out;
		}
	}
	err = 0;
out:
	kq_bpf__destroy(skel); /* the pins hold what must stay */
	return err;
}

int kq_open(bool create, struct kq **out)
{
	struct kq *q = calloc(1, sizeof(*q));
	int err, lock = -1, i;

	if (!q)
		return fail(-ENOMEM, "out of memory");
	for (i = 0; i < M_NR; i++)
		q->fd[i] = -1;
	if (create) {
		if (mkdir(PIN_ROOT, 0700) && errno != EEXIST) {
			err = fail(-errno, "cannot create %s: %s%s", PIN_ROOT, strerror(errno),
				   errno == EACCES || errno == EPERM ? " (root only)" : " (is bpffs mounted on /sys/fs/bpf?)");
			goto fail;
		}
		err = verify_dir(PIN_ROOT);
		if (err)
			goto fail;
		lock = open(PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lock < 0 || flock(lock, LOCK_EX)) {
			err = fail(-errno, "cannot lock %s: %s", PIN_ROOT, strerror(errno));
			goto fail;
		}
	}
	/* pins in a directory others can write are not the programs': not used (to set or lift a limit) */
	err = access(PIN_ROOT, F_OK) ? 0 : verify_dir(PIN_ROOT);
	if (!err && !access(KQ_PIN_DIR, F_OK))
		err = verify_dir(KQ_PIN_DIR);
	if (!err)
		err = open_pinned(q, false);
	if (err == -ENOENT && create) {
		for (i = 0; i < M_NR; i++)
			if (q->fd[i] >= 0)
				close(q->fd[i]), q->fd[i] = -1;
		if (q->st)
			munmap(q->st, q->st_len), q->st = NULL;
		err = load_and_pin();
		if (!err)
			err = open_pinned(q, false);
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

int kq_open_readonly(struct kq **out)
{
	struct kq *q = calloc(1, sizeof(*q));
	int err, i;

	if (!q)
		return fail(-ENOMEM, "out of memory");
	for (i = 0; i < M_NR; i++)
		q->fd[i] = -1;
	err = open_pinned(q, true);
	if (err) {
		kq_close(q);
		return err;
	}
	*out = q;
	return 0;
}

void kq_close(struct kq *q)
{
	int i;

	if (!q)
		return;
	if (q->st)
		munmap(q->st, q->st_len);
	for (i = 0; i < M_NR; i++)
		if (q->fd[i] >= 0)
			close(q->fd[i]);
	free(q);
}

int kq_events_read(struct kq *q, uint64_t *since, int (*cb)(const struct kq_event *ev, void *arg), void *arg)
{
	struct kq_state st;
	struct kq_event ev;
	__u32 zero = 0, idx;
	uint64_t s;
	int n = 0, err;

	if (bpf_map_lookup_elem(q->fd[M_STATE], &zero, &st))
		return -errno;
	if (*since == KQ_EVENTS_NEW) {
		*since = st.evseq;
		return 0;
	}
	s = st.evseq > KQ_EVSLOTS && *since < st.evseq - KQ_EVSLOTS ? st.evseq - KQ_EVSLOTS : *since;
	for (s = s + 1; s <= st.evseq; s++) {
		idx = s % KQ_EVSLOTS;
		if (bpf_map_lookup_elem(q->fd[M_EVENTS], &idx, &ev) || ev.seq != s)
			continue; /* overwritten already, or still being written */
		err = cb(&ev, arg);
		if (err)
			return err;
		n++;
	}
	*since = st.evseq;
	return n;
}

int kq_scope_cgroup(const char *dir, struct kq_scope *out)
{
	struct stat st;

	if (stat(dir, &st))
		return fail(-errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(-ENOTDIR, "%s: not a cgroup directory", dir);
	memset(out, 0, sizeof(*out));
	out->type = KQ_SCOPE_CGROUP;
	out->id = st.st_ino;
	return 0;
}

/* ---- the rescan: what a scope's processes hold when its first limit is set ----------------------- */

struct idset {
	uint64_t *v;
	size_t n, cap;
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
	return 0;
}

static bool idset_has(const struct idset *s, uint64_t id)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == id)
			return true;
	return false;
}

/* The cgroup ids of dir and every directory below it. */
static int collect_cgroups(const char *dir, struct idset *s, int depth)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (depth > 64 || stat(dir, &st))
		return 0;
	err = idset_add(s, st.st_ino);
	if (err)
		return err;
	d = opendir(dir);
	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		char sub[4096];

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub))
			continue;
		err = collect_cgroups(sub, s, depth + 1);
	}
	closedir(d);
	return err;
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
 * Count into base what the scope's processes hold and was not charged to it, and mark those objects as
 * charged to it so that their destroy gives it back. An object destroyed meanwhile fails the BPF_EXIST
 * update and is left out, as it should be.
 */
static int rescan(struct kq *q, const struct kq_scope *sc, __u32 epoch, const char *dir, __s64 base[KQ_NK])
{
	struct idset cg = {};
	__u64 key, next, *prev = NULL;
	struct kq_obj o;
	bool mine;
	int err = 0, at;

	if (sc->type == KQ_SCOPE_CGROUP && dir) {
		err = collect_cgroups(dir, &cg, 0);
		if (err)
			goto out;
	}
	while (!bpf_map_get_next_key(q->fd[M_OBJS], prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(q->fd[M_OBJS], &key, &o))
			continue;
		if (sc->type == KQ_SCOPE_PID && o.tgid != sc->id)
			continue;
		if (sc->type == KQ_SCOPE_CGROUP && !idset_has(&cg, o.cgid))
			continue;
		at = charge_slot(&o, sc, epoch, &mine);
		if (mine || at < 0 || o.kind >= KQ_NK)
			continue;
		o.sc[at] = *sc;
		o.sc[at].epoch = epoch;
		if (at == o.n)
			o.n++;
		if (bpf_map_update_elem(q->fd[M_OBJS], &key, &o, BPF_EXIST))
			continue;
		base[o.kind]++;
		if (o.bytes)
			base[KQ_MR_BYTES] += (__s64)o.bytes;
	}
out:
	free(cg.v);
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

	for (i = 0; i < sizeof(ondemand) / sizeof(ondemand[0]); i++) {
		bool have;
		int pfd, lfd;

		snprintf(prog, sizeof(prog), "%s/prog_%s", KQ_PIN_DIR, ondemand[i]);
		snprintf(link, sizeof(link), "%s/link_%s", KQ_PIN_DIR, ondemand[i]);
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
				return fail(err, "cannot detach %s: %s", link, strerror(-err));
			}
			if (lfd >= 0)
				close(lfd);
		}
		if (!want || have)
			continue;
		pfd = bpf_obj_get(prog);
		if (pfd < 0)
			return fail(-errno, "cannot open %s: %s", prog, strerror(errno));
		lfd = bpf_raw_tracepoint_open(NULL, pfd);
		if (lfd < 0 || bpf_obj_pin(lfd, link)) {
			int err = -errno;

			if (lfd >= 0)
				close(lfd);
			close(pfd);
			return fail(err, "cannot attach %s: %s", prog, strerror(-err));
		}
		close(lfd);
		close(pfd);
		if (attached && !strcmp(ondemand[i], "kq_begin"))
			*attached = true;
	}
	return 0;
}

/* The id of the program pinned at path (0: not there or not readable). */
static __u32 pinned_prog_id(const char *path)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.id = 0;
	close(fd);
	return info.id;
}

int kq_enforcement(struct kq *q, char *why, size_t len)
{
	struct kq_scope key;
	char prog[256], link[256];
	size_t i;

	if (bpf_map_get_next_key(q->fd[M_LIMITS], NULL, &key))
		return 1; /* no kernel limit: nothing to enforce */
	for (i = 0; i < sizeof(ondemand) / sizeof(ondemand[0]); i++) {
		struct bpf_link_info info = {};
		__u32 ilen = sizeof(info), want;
		struct stat st;
		int fd;

		snprintf(prog, sizeof(prog), "%s/prog_%s", KQ_PIN_DIR, ondemand[i]);
		snprintf(link, sizeof(link), "%s/link_%s", KQ_PIN_DIR, ondemand[i]);
		if (lstat(link, &st)) {
			snprintf(why, len, "%s is not attached (no %s)", ondemand[i], link);
			return 0;
		}
		if (!S_ISREG(st.st_mode) || st.st_uid != 0) {
			snprintf(why, len, "%s is not the link rdmactl pinned (uid %u, mode %04o)", link,
				 (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
			return 0;
		}
		/* the link itself: a tracing link of the pinned program (only root can open it read-write) */
		fd = bpf_obj_get(link);
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM || errno == EINVAL)
				continue; /* a reader that is not root: the pin's presence is what it can see */
			snprintf(why, len, "%s cannot be opened: %s", link, strerror(errno));
			return 0;
		}
		if (bpf_obj_get_info_by_fd(fd, &info, &ilen) || info.type != BPF_LINK_TYPE_TRACING) {
			snprintf(why, len, "%s is not a tracing link (type %u)", link, info.type);
			close(fd);
			return 0;
		}
		close(fd);
		want = access(prog, F_OK) ? info.prog_id : pinned_prog_id(prog);
		if (!want || want != info.prog_id) {
			snprintf(why, len, "%s holds program %u, not %s (%u)", link, info.prog_id, prog, want);
			return 0;
		}
	}
	return 1;
}

/* Empty a hash map keyed by __u64 (kq_objs, kq_gone). */
static void empty_map(int fd)
{
	__u64 key;

	while (!bpf_map_get_next_key(fd, NULL, &key))
		if (bpf_map_delete_elem(fd, &key) && errno != ENOENT)
			break;
}

/* Run one pinned iterator to its end; -ENOENT when it is not pinned (an older layout). */
static int run_iter(const char *name)
{
	char path[256], buf[256];
	int pfd, lfd, ifd, err = 0;
	ssize_t r;

	snprintf(path, sizeof(path), "%s/prog_%s", KQ_PIN_DIR, name);
	pfd = bpf_obj_get(path);
	if (pfd < 0)
		return -errno;
	lfd = bpf_link_create(pfd, 0, BPF_TRACE_ITER, NULL);
	if (lfd < 0) {
		err = fail(-errno, "cannot attach %s: %s", path, strerror(errno));
		close(pfd);
		return err;
	}
	ifd = bpf_iter_create(lfd);
	if (ifd < 0)
		err = fail(-errno, "cannot run %s: %s", path, strerror(errno));
	while (ifd >= 0 && (r = read(ifd, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno != EINTR && errno != EAGAIN) {
			err = fail(-errno, "cannot run %s: %s", path, strerror(errno));
			break;
		}
	}
	if (ifd >= 0)
		close(ifd);
	close(lfd);
	close(pfd);
	return err;
}

static int set_populating(struct kq *q, bool on, __u32 *miss)
{
	/* on: the misses counted from here; off: those counted until the programs stopped marking */
	if (on)
		__atomic_store_n(&q->st->pop_miss, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&q->st->populating, on, __ATOMIC_SEQ_CST);
	if (!on) {
		__u32 m = __atomic_exchange_n(&q->st->pop_miss, 0, __ATOMIC_SEQ_CST);

		if (miss)
			*miss = m;
	}
	return 0;
}

/* Drop the records the population made (a walk to be done again). */
static void drop_found(struct kq *q)
{
	__u64 key, next, *prev = NULL;
	struct kq_obj o;

	while (!bpf_map_get_next_key(q->fd[M_OBJS], prev, &next)) {
		key = next;
		if (!bpf_map_lookup_elem(q->fd[M_OBJS], &key, &o) && o.pad == KQ_OBJ_FOUND && !o.n &&
		    !bpf_map_delete_elem(q->fd[M_OBJS], &key))
			continue; /* from the same prev again */
		prev = &key;
	}
}

/*
 * The first limit: the programs are about to be attached (attach), no limit is in kq_state yet. Records
 * left from before are stale (kq_objs is emptied at the detach too: this is for a program that was still
 * running then); kq_state.populating is set before the programs run, so that every destroy they see while
 * the iterators walk is marked in kq_gone (the argument: bpf/kq.bpf.c, "Population"). A walk that missed
 * something (kq_gone full, a list that kept changing) is done again, at most three times.
 */
static int populate(struct kq *q, int (*attach)(void *), void *arg)
{
	__u32 miss = 0;
	int err, round;

	empty_map(q->fd[M_OBJS]);
	for (round = 0;; round++) {
		empty_map(q->fd[M_GONE]);
		err = set_populating(q, true, NULL);
		if (!err && round == 0)
			err = attach(arg);
		if (!err)
			err = run_iter("kq_iter_file");
		if (!err)
			err = run_iter("kq_iter_vma");
		if (err == -ENOENT)
			err = 0; /* an older layout without iterators */
		if (!err)
			err = set_populating(q, false, &miss);
		if (err || !miss)
			break;
		if (round == 2) {
			err = fail(-EAGAIN, "cannot count the RDMA objects that exist: they kept changing (%u misses)", miss);
			break;
		}
		drop_found(q);
	}
	empty_map(q->fd[M_GONE]);
	return err;
}

static int attach_all(void *arg)
{
	return sync_ondemand(true, arg);
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

/*
 * Count the limited scopes and their types for the programs, and attach every program while there is one
 * (under the pin root's lock: a set and an unset at once must not leave a limit without them); the first
 * limit records what already exists (populate), after the last kq_objs is emptied.
 */
static int count_limits(struct kq *q)
{
	struct kq_scope key, next, *prev = NULL;
	__u32 n = 0, types = 0;
	int lock, err;

	if (!q->st)
		return fail(-EPERM, "the kernel quota programs were opened read-only");
	lock = open(PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		err = fail(-errno, "cannot lock %s: %s", PIN_ROOT, strerror(errno));
		goto out;
	}
	err = set_dyn_major(q);
	if (err)
		goto out;
	while (!bpf_map_get_next_key(q->fd[M_LIMITS], prev, &next)) {
		key = next;
		prev = &key;
		n++;
		if (key.type < 32)
			types |= KQ_TYPE(key.type);
	}
	/*
	 * attached before the programs look for limits, detached after they stopped; when this attaches them
	 * (the first limit), the objects that exist are recorded before any limit is in kq_state
	 */
	if (n) {
		bool attached = false;
		char begin[256], prog[256];

		snprintf(begin, sizeof(begin), "%s/link_kq_begin", KQ_PIN_DIR);
		snprintf(prog, sizeof(prog), "%s/prog_kq_begin", KQ_PIN_DIR);
		/* (links taken away while limits exist, as bench/kqprobe does: attached again, nothing emptied) */
		if (!__atomic_load_n(&q->st->nlimits, __ATOMIC_SEQ_CST) && access(begin, F_OK) && !access(prog, F_OK)) {
			err = populate(q, attach_all, &attached);
			if (err) {
				/* no limit was in force: back to nothing attached, nothing recorded */
				sync_ondemand(false, NULL);
				empty_map(q->fd[M_OBJS]);
			}
		} else {
			err = sync_ondemand(true, NULL);
		}
		if (err)
			goto out;
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
			empty_map(q->fd[M_OBJS]);
	}
out:
	if (lock >= 0)
		close(lock);
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

	if (sc->type == KQ_SCOPE_CGROUP && dir) {
		level = cgroup_level(dir);
		if (level < 0)
			return fail(level, "%s: %s", dir, strerror(-level));
		if (level > KQ_MAXLVL)
			return fail(-ERANGE, "%s is %d levels below the cgroup root: the kernel's programs look at cgroups "
				    "down to level %d (limit an ancestor at level %d or above)", dir, level, KQ_MAXLVL,
				    KQ_MAXLVL);
	}
	if (sc->type == KQ_SCOPE_CGROUP && idset_add(&lim, sc->id))
		return fail(-ENOMEM, "out of memory");
	while (!err && !bpf_map_get_next_key(q->fd[M_LIMITS], prev, &next)) {
		key = next;
		prev = &key;
		if (key.type == KQ_SCOPE_GLOBAL)
			global = true;
		else if (key.type == KQ_SCOPE_PID)
			pid = true;
		else if (key.type == KQ_SCOPE_CGROUP && idset_add(&lim, key.id))
			err = fail(-ENOMEM, "out of memory");
	}
	if (!err) {
		cgroup2_root(root, sizeof(root));
		limited_chain(root, &lim, 0, 0, &most);
		n = most + global + pid;
		if (n > KQ_MAXCHG)
			err = fail(-ERANGE, "this limit would put %d limited scopes on one path (the global scope, a process, "
				   "%d limited cgroups from the root down), more than the %d the kernel's programs record "
				   "for an object: lift a limit on that path first", n, most, KQ_MAXCHG);
	}
	free(lim.v);
	return err;
}

int kq_set(struct kq *q, const struct kq_scope *sc, const char *dir, unsigned int kind, uint64_t max)
{
	struct kq_limit lim;
	struct kq_usage use = {};
	struct kq_scope ukey = *sc;
	int i, err;

	if (kind >= KQ_NK)
		return fail(-EINVAL, "kind %u is not counted by the kernel quota programs", kind);
	if (!q->st)
		return fail(-EPERM, "the kernel quota programs were opened read-only");
	if (!bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim)) {
		lim.max[kind] = max;
		for (i = 0; i < KQ_NK && lim.max[i] == KQ_UNLIMITED; i++)
			;
		/* its last limit lifted: the scope goes (the last scope takes the programs with it) */
		if (i == KQ_NK)
			return kq_remove(q, sc);
		if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_EXIST))
			return fail(-errno, "cannot update the kernel limit: %s", strerror(errno));
		return 0;
	}
	/* a scope without any limit is not made: a limit set later counts what it holds then (populate, rescan) */
	if (max == KQ_UNLIMITED)
		return 0;
	err = fits(q, sc, dir);
	if (err)
		return err;
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
	if (bpf_map_update_elem(q->fd[M_USAGE], &ukey, &use, BPF_NOEXIST) && errno != EEXIST)
		return fail(-errno, "cannot add the scope to the kernel's usage: %s%s", strerror(errno),
			    errno == E2BIG ? " (too many scopes: remove unused ones with 'rdmactl quota gc')" : "");
	if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_NOEXIST))
		return fail(-errno, "cannot add the kernel limit: %s", strerror(errno));
	err = count_limits(q);
	if (err) {
		/* not set: the scope goes again */
		bpf_map_delete_elem(q->fd[M_LIMITS], sc);
		bpf_map_delete_elem(q->fd[M_USAGE], &ukey);
		return err;
	}
	err = rescan(q, sc, lim.epoch, dir, lim.base);
	if (err)
		return fail(err, "cannot count what the scope holds: %s", strerror(-err));
	lim.max[kind] = max;
	if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_EXIST))
		return fail(-errno, "cannot update the kernel limit: %s", strerror(errno));
	return 0;
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

int kq_get(struct kq *q, const struct kq_scope *sc, uint64_t max[KQ_NK], int64_t use[KQ_NK],
	   uint64_t refused[KQ_NK], uint64_t killed[KQ_NK])
{
	struct kq_limit lim;
	struct kq_usage u = {};
	struct kq_scope ukey = *sc;
	int i;

	if (bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim))
		return -ENOENT;
	ukey.epoch = lim.epoch;
	bpf_map_lookup_elem(q->fd[M_USAGE], &ukey, &u);
	for (i = 0; i < KQ_NK; i++) {
		int64_t v = u.use[i] + lim.base[i];

		if (max)
			max[i] = lim.max[i];
		if (use)
			use[i] = v < 0 ? 0 : v;
		if (refused)
			refused[i] = u.refused[i];
		if (killed)
			killed[i] = u.killed[i];
	}
	return 0;
}

int kq_lost(struct kq *q, uint64_t *lost, int *last_err)
{
	struct kq_state st;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(q->fd[M_STATE], &zero, &st))
		return -errno;
	*lost = st.lost;
	if (last_err)
		*last_err = -st.lost_err;
	return 0;
}

int kq_foreach(struct kq *q, int (*cb)(const struct kq_scope *sc, void *arg), void *arg)
{
	struct kq_scope key, next, *prev = NULL;
	int err;

	while (!bpf_map_get_next_key(q->fd[M_LIMITS], prev, &next)) {
		key = next;
		prev = &key;
		err = cb(&key, arg);
		if (err)
			return err;
	}
	return 0;
}

const char *kq_kind_name(unsigned int kind)
{
	static const char *const names[] = {
#define X(name, NAME, led, ...) KINDS_IF(led, #name, )
		KINDS(X)
#undef X
	};

	return kind < KQ_NK ? names[kind] : "?";
}

const char *kq_event_name(unsigned int type)
{
	return type == KQ_EV_REFUSE ? "refused" : type == KQ_EV_KILL ? "killed" : "?";
}

const char *kq_scope_name(unsigned int type)
{
	return type == KQ_SCOPE_GLOBAL ? "global" : type == KQ_SCOPE_PID ? "process" : type == KQ_SCOPE_CGROUP ? "cgroup" : "?";
}

int kq_remove(struct kq *q, const struct kq_scope *sc)
{
	struct kq_scope ukey = *sc;
	struct kq_limit lim;
	int err = 0;

	/* the limit first: the programs look for its usage only through it */
	if (!bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim))
		ukey.epoch = lim.epoch;
	if (bpf_map_delete_elem(q->fd[M_LIMITS], sc) && errno != ENOENT)
		err = fail(-errno, "cannot remove the kernel limit: %s", strerror(errno));
	if (bpf_map_delete_elem(q->fd[M_USAGE], &ukey) && errno != ENOENT && !err)
		err = fail(-errno, "cannot remove the kernel usage: %s", strerror(errno));
	if (!err)
		err = count_limits(q);
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

/*
 * The scopes whose process or cgroup is gone. They are listed before the cgroups are: a limit set meanwhile
 * is not on the list, and a cgroup on it that exists is in the cgroups read after (never taken for gone).
 */
int kq_gc(struct kq *q, const char *cgroot, unsigned int *removed)
{
	struct gc_arg g = {};
	struct idset cg = {};
	char path[64];
	size_t i;
	int err;

	*removed = 0;
	err = kq_foreach(q, gc_list, &g);
	if (!err)
		err = collect_cgroups(cgroot, &cg, 0);
	for (i = 0; !err && i < g.n; i++) {
		const struct kq_scope *sc = &g.sc[i];
		bool dead = false;

		if (sc->type == KQ_SCOPE_PID) {
			snprintf(path, sizeof(path), "/proc/%llu", (unsigned long long)sc->id);
			dead = access(path, F_OK) && errno == ENOENT;
		} else if (sc->type == KQ_SCOPE_CGROUP) {
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

int kq_scope_of_ledger(const struct ledger_scope *ls, const char *cgroot, struct kq_scope *out)
{
	char dir[PATH_MAX * 2];

	memset(out, 0, sizeof(*out));
	switch (ls->type) {
	case LEDGER_SCOPE_CGROUP:
		snprintf(dir, sizeof(dir), "%s%s", cgroot, ls->name);
		return kq_scope_cgroup(dir, out);
	case LEDGER_SCOPE_PROCESS:
		out->type = KQ_SCOPE_PID;
		out->id = (uint64_t)ls->pid;
		return 0;
	case LEDGER_SCOPE_GLOBAL:
		out->type = KQ_SCOPE_GLOBAL;
		return 0;
	default:
		return -ENOENT; /* a job has no kernel scope of its own (run --kernel gives it a cgroup) */
	}
}
