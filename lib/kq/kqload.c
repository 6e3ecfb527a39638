// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel quotas: the programs of bpf/kq.bpf.c loaded and pinned once (the one file that needs their
 * skeleton), attached while a kernel limit exists and detached after the last, and the population that
 * records what already exists when the first limit attaches them.
 */
#include "kq/internal.h"

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
 * Every program is pinned as a program (prog_NAME) and attached by kq_count_limits() at the first limit, detached
 * after the last (link_NAME while attached), so that without kernel limits nothing on the host passes them.
 * The iterators (kq_iter_*) are not attached: populate() runs them once at the first limit. A set pinned by
 * an older rdmactl (links without prog_ pins) stays attached as it is.
 */
static const char *const ondemand[] = { "kq_ioctl", "kq_ioctl_compat", "kq_open", "kq_opened", "kq_close",
					"kq_begin", "kq_commit", "kq_destroy", "kq_ioctl_done" };

/* Load and pin (programs, then maps); called with the pin root locked and nothing pinned. */
int kq_load_and_pin(void)
{
	struct kq_bpf *skel;
	struct bpf_program *prog;
	char path[256];
	int err, i;

	libbpf_set_print(libbpf_quiet);
	skel = kq_bpf__open_and_load();
	if (!skel)
		return kq_fail(-errno, "cannot load the kernel quota programs: %s (is ib_uverbs loaded? "
			    "RDMACTL_KQ_DEBUG=1 shows libbpf's messages)", strerror(errno));
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
		err = kq_fail(-errno, "cannot attach %s: %s", path, strerror(errno));
		close(pfd);
		return err;
	}
	ifd = bpf_iter_create(lfd);
	if (ifd < 0)
		err = kq_fail(-errno, "cannot run %s: %s", path, strerror(errno));
	while (ifd >= 0 && (r = read(ifd, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno != EINTR && errno != EAGAIN) {
			err = kq_fail(-errno, "cannot run %s: %s", path, strerror(errno));
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
			err = kq_fail(-EAGAIN, "cannot count the RDMA objects that exist: they kept changing (%u misses)", miss);
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
int kq_count_limits(struct kq *q)
{
	struct kq_scope key, next, *prev = NULL;
	__u32 n = 0, types = 0;
	int lock, err;

	if (!q->st)
		return kq_fail(-EPERM, "the kernel quota programs were opened read-only");
	lock = open(PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		err = kq_fail(-errno, "cannot lock %s: %s", PIN_ROOT, strerror(errno));
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
