// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel quotas: the pinned maps of bpf/kq.bpf.c opened and read (limits, usage, the table of records,
 * events) and whether the programs that enforce them are attached. Everything here works on what is pinned,
 * read-only included (the exporter); setting limits is lib/kq/kq.c's, loading the programs lib/kq/kqload.c's.
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
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/magic.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/cgroup.h"
#include "kq/kqdrv.h"
#include "ledger/ledger.h"

const char *const kq_map_names[M_NR] = { "kq_limits", "kq_usage", "kq_objs", "kq_state", "kq_events", "kq_gone",
					 "kq_want", "kq_walked" };
const size_t kq_map_vsize[M_NR] = { sizeof(struct kq_limit), sizeof(struct kq_usage), sizeof(struct kq_obj),
				    sizeof(struct kq_state), sizeof(struct kq_event), sizeof(__u64), sizeof(__u8),
				    sizeof(__u8) };

static __thread char kq_errbuf[512];

int kq_fail(int err, const char *fmt, ...)
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

/*
 * A pin directory rdmactl trusts: a directory (not a link to one) on a BPF file system, root's and writable by
 * root only. bpffs is mounted mode 1777 unless told otherwise: a user who made /sys/fs/bpf/rdmactl first
 * could remove the programs' links (all enforcement) or put files of its own where they go.
 */
int kq_verify_dir(const char *path)
{
	struct statfs fs;
	struct stat st;

	if (lstat(path, &st))
		return kq_fail(-errno, "cannot check %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return kq_fail(-ENOTDIR, "%s is not a directory: remove it (rm -r) and set the kernel limits again", path);
	if (statfs(path, &fs) || fs.f_type != BPF_FS_MAGIC)
		return kq_fail(-EXDEV, "%s is not on a BPF file system (mount -t bpf bpf /sys/fs/bpf)", path);
	if (st.st_uid != 0 || (st.st_mode & 077))
		return kq_fail(-EPERM, "%s belongs to uid %u with mode %04o, not to root with mode 0700: whoever can "
			    "write there can remove the kernel's enforcement; remove it (rm -r) and set the kernel "
			    "limits again", path, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
	return 0;
}

void kq_pin_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", KQ_PIN_DIR, name);
}

int kq_open_pinned(struct kq *q, bool ro)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts, .file_flags = ro ? BPF_F_RDONLY : 0);
	char path[256];
	int i;

	for (i = 0; i < M_NR; i++) {
		struct bpf_map_info info = {};
		__u32 ilen = sizeof(info);

		kq_pin_path(path, sizeof(path), kq_map_names[i]);
		q->fd[i] = bpf_obj_get_opts(path, &opts);
		if (q->fd[i] < 0) {
			int err = -errno;

			if (err == -ENOENT)
				return kq_fail(err, "the kernel quota programs are not loaded (no %s)", path);
			return kq_fail(err, "cannot open %s: %s%s", path, strerror(-err),
				    err == -EACCES || err == -EPERM ? " (root only)" : "");
		}
		if (kq_map_vsize[i] && (bpf_obj_get_info_by_fd(q->fd[i], &info, &ilen) || info.value_size != kq_map_vsize[i]))
			return kq_fail(-EPROTO,
				    "%s was pinned by another version of rdmactl (value size %u, this one uses %zu): "
				    "remove %s (rm -r) and set the kernel limits again",
				    path, info.value_size, kq_map_vsize[i], KQ_PIN_DIR);
	}
	if (ro)
		return 0; /* a read-only descriptor cannot be mapped shared: kq_state is read by lookups */
	q->st_len = (size_t)sysconf(_SC_PAGESIZE);
	q->st = mmap(NULL, q->st_len, PROT_READ | PROT_WRITE, MAP_SHARED, q->fd[M_STATE], 0);
	if (q->st == MAP_FAILED) {
		q->st = NULL;
		return kq_fail(-EPROTO, "%s/kq_state was pinned by another version of rdmactl (cannot map it: %s): remove "
			    "%s (rm -r) and set the kernel limits again", KQ_PIN_DIR, strerror(errno), KQ_PIN_DIR);
	}
	return 0;
}

int kq_open_readonly(struct kq **out)
{
	struct kq *q = calloc(1, sizeof(*q));
	int err, i;

	if (!q)
		return kq_fail(-ENOMEM, "out of memory");
	for (i = 0; i < M_NR; i++)
		q->fd[i] = -1;
	err = kq_open_pinned(q, true);
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
		return kq_fail(-errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return kq_fail(-ENOTDIR, "%s: not a cgroup directory", dir);
	memset(out, 0, sizeof(*out));
	out->type = KQ_SCOPE_CGROUP;
	out->id = st.st_ino;
	return 0;
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
	/*
	 * No limit in force: a scope being counted (lib/kq/kq.c kq_set), or left so by a set that was killed
	 * there (kq_unfinished); its usage lacks what existed before. Not shown as a kernel scope.
	 */
	if (!kq_limit_in_force(&lim))
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

bool kq_limit_in_force(const struct kq_limit *lim)
{
	int i;

	for (i = 0; i < KQ_NK; i++)
		if (lim->max[i] != KQ_UNLIMITED)
			return true;
	return false;
}

int kq_lock_root(int how)
{
	int lock = open(PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (lock < 0)
		return -errno;
	if (flock(lock, how)) {
		err = -errno;
		close(lock);
		return err;
	}
	return lock;
}

int kq_unfinished(struct kq *q, struct kq_unfinished *u)
{
	struct kq_scope key, *prev = NULL;
	struct kq_state st;
	struct kq_limit lim;
	__u32 zero = 0;
	int lock, ret = 0;

	memset(u, 0, sizeof(*u));
	/*
	 * A set holds the pin root's lock from before it makes its scope until the limit is in: while it is
	 * free, a scope without one, or a population's flag, is what a killed set left. A shared lock, not
	 * waited for: a reader never delays a set, and a set that starts meanwhile waits for this one.
	 */
	lock = kq_lock_root(LOCK_SH | LOCK_NB);
	if (lock < 0)
		return lock == -EWOULDBLOCK ? 1 : lock;
	while (!bpf_map_get_next_key(q->fd[M_LIMITS], prev, &key)) {
		if (!bpf_map_lookup_elem(q->fd[M_LIMITS], &key, &lim) && !kq_limit_in_force(&lim)) {
			if (u->nscopes < KQ_UNFINISHED_MAX)
				u->scope[u->nscopes] = key;
			u->nscopes++;
		}
		prev = &key;
	}
	if (!bpf_map_lookup_elem(q->fd[M_STATE], &zero, &st))
		u->populating = st.populating || st.pop_want;
	else
		ret = -errno;
	close(lock);
	return ret;
}

int kq_table(struct kq *q, struct kq_table *t)
{
	struct kq_state st;
	__u32 zero = 0;

	memset(t, 0, sizeof(*t));
	if (bpf_map_lookup_elem(q->fd[M_STATE], &zero, &st))
		return -errno;
	t->records = st.nobjs < 0 ? 0 : st.nobjs;
	t->size = st.objs_max;
	t->full = st.full;
	t->lost = st.lost;
	t->lost_errno = -st.lost_err;
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
	return type == KQ_EV_REFUSE || type == KQ_EV_FULL || type == KQ_EV_CROSS || type == KQ_EV_URING ? "refused" : type == KQ_EV_KILL ? "killed" : "?";
}

const char *kq_scope_name(unsigned int type)
{
	return type == KQ_SCOPE_GLOBAL ? "global" : type == KQ_SCOPE_PID ? "process" : type == KQ_SCOPE_CGROUP ? "cgroup" : "?";
}

const char *kq_scope_text(const struct kq_scope *sc, char *buf, size_t len)
{
	char root[PATH_MAX], dir[PATH_MAX];
	size_t n;

	if (sc->type == KQ_SCOPE_PID) {
		snprintf(buf, len, "pid %u", KQ_PID_TGID(sc->id));
	} else if (sc->type != KQ_SCOPE_CGROUP) {
		snprintf(buf, len, "%s", kq_scope_name(sc->type));
	} else {
		cgroup2_root(root, sizeof(root));
		n = strlen(root);
		if (cgroup_dir_by_id(root, sc->id, dir, sizeof(dir)))
			snprintf(buf, len, "cgroup %s", dir[n] ? dir + n : "/");
		else
			snprintf(buf, len, "cgroup id %llu (gone)", (unsigned long long)sc->id);
	}
	return buf;
}

/*
 * The namespace of kind ns ("pid", "cgroup") rdmactl runs in, as /proc/self/ns/NS names it ("pid:[N]"), read
 * once: a process's own pid and cgroup namespaces do not change under it in rdmactl (it never calls setns),
 * and quota show, top and the exporter ask at every process scope. "" when it cannot be read.
 */
static const char *own_ns(const char *ns)
{
	static char pid[64], cgroup[64];
	static bool read_pid, read_cgroup;
	char path[64], *buf = !strcmp(ns, "pid") ? pid : cgroup;
	bool *done = buf == pid ? &read_pid : &read_cgroup;
	ssize_t n;

	if (!*done) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
		n = readlink(path, buf, sizeof(pid) - 1);
		buf[n < 0 ? 0 : n] = '\0';
		*done = true;
	}
	return buf;
}

/* The initial namespaces' inode numbers are fixed (PROC_PID_INIT_INO, PROC_CGROUP_INIT_INO). */
#define PIDNS_HOST "pid:[4026531836]"
#define CGROUPNS_HOST "cgroup:[4026531835]"

bool kq_pidns_host(void)
{
	return !strcmp(own_ns("pid"), PIDNS_HOST);
}

bool kq_cgroupns_host(void)
{
	return !strcmp(own_ns("cgroup"), CGROUPNS_HOST);
}

int kq_need_host_ns(const char *what, bool cgroup)
{
	if (!kq_pidns_host())
		return kq_fail(-EXDEV, "rdmactl runs in the pid namespace %s, not the host's (%s): %s sees only the "
			       "processes of this one, and would miss what the others hold; run it in the host's pid "
			       "namespace (nsenter -t 1 -p rdmactl ...)", *own_ns("pid") ? own_ns("pid") : "?",
			       PIDNS_HOST, what);
	if (cgroup && !kq_cgroupns_host())
		return kq_fail(-EXDEV, "rdmactl runs in the cgroup namespace %s, not the host's (%s): %s sees only "
			       "the cgroups below this one's root, not how deep a cgroup is nor the limits above it; run "
			       "it in the host's cgroup namespace (nsenter -t 1 -C -m rdmactl ...)",
			       *own_ns("cgroup") ? own_ns("cgroup") : "?", CGROUPNS_HOST, what);
	return 0;
}

/* The boottime offset of rdmactl's time namespace in ns (/proc/PID/stat's start times include it), 0 without. */
/* This process's time namespace's boottime offset in ns (0 in the host's): /proc shows start times with it. */
int64_t kq_boottime_offset(void)
{
	FILE *f = fopen("/proc/self/timens_offsets", "re");
	char line[128];
	long long s, ns;
	int64_t off = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "boottime %lld %lld", &s, &ns) == 2)
			off = (int64_t)s * 1000000000 + ns;
	fclose(f);
	return off;
}

int kq_iter_open(const char *name, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/prog_%s", KQ_PIN_DIR, name);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int kq_iter_run(int prog, const char *path, union bpf_iter_link_info *li, void *buf, size_t len,
		int (*each)(const void *buf, size_t n, void *arg), void *arg, const char *what)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .iter_info = li, .iter_info_len = li ? sizeof(*li) : 0);
	int lfd, ifd, err = 0;
	ssize_t r;

	lfd = bpf_link_create(prog, 0, BPF_TRACE_ITER, li ? &lo : NULL);
	if (lfd < 0)
		return kq_fail(-errno, "cannot %s: %s (attaching %s)", what, strerror(errno), path);
	ifd = bpf_iter_create(lfd);
	if (ifd < 0) {
		err = kq_fail(-errno, "cannot %s: %s (running %s)", what, strerror(errno), path);
		close(lfd);
		return err;
	}
	while ((r = read(ifd, buf, len)) != 0) {
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err = kq_fail(-errno, "cannot %s: %s (reading %s)", what, strerror(errno), path);
			break;
		}
		if (each && (err = each(buf, (size_t)r, arg)))
			break;
	}
	close(ifd);
	close(lfd);
	return err;
}

struct pidof {
	pid_t pid;
	size_t n;
	struct kq_pidof first;
};

/* kq_iter_pid's records name one process, every thread the same (a kernel that ignored the pidfd walks every task) */
static int pidof_each(const void *buf, size_t n, void *arg)
{
	const struct kq_pidof *rec = buf;
	struct pidof *p = arg;
	size_t i;

	for (i = 0; i < n / sizeof(*rec); i++, p->n++) {
		if (!p->n)
			p->first = rec[i];
		if (rec[i].tgid != p->first.tgid || rec[i].start_ns != p->first.start_ns)
			return kq_fail(-ENOTSUP, "cannot ask the kernel for pid %d's host pid: this kernel walks every "
				       "task (task iterators for one process need Linux 6.1); set the limit from "
				       "the host's pid namespace (nsenter -t 1 -p rdmactl ...)", (int)p->pid);
	}
	return 0;
}

/*
 * The kernel names the process: a task iterator made for its pidfd (kq_iter_pid) writes the host's pid and
 * the start time of each of its threads. The pidfd is taken before the start time is compared and asked
 * after the walk whether the process still runs: a process that lives keeps its number, so the walk saw the
 * process whose start time was compared, not a later one given the same number.
 */
int kq_host_pid(pid_t pid, uint64_t start, pid_t *host, uint64_t *host_start)
{
	union bpf_iter_link_info li = {};
	struct kq_pidof rec[64];
	struct pidof p = { .pid = pid };
	char what[64], path[256];
	uint64_t now = 0;
	int pidfd, prog, err;

	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return kq_fail(errno == EINVAL ? -EINVAL : -errno, "pid %d: %s", (int)pid,
			       errno == ESRCH ? "no such process" : errno == EINVAL ? "a thread, not a process" :
			       strerror(errno));
	if (proc_stat_start(pid, &now, NULL) || now != start) {
		err = kq_fail(-ESRCH, "pid %d: no such process (the number is another process's now)", (int)pid);
		goto out;
	}
	prog = kq_iter_open("kq_iter_pid", path, sizeof(path));
	if (prog < 0) {
		err = kq_fail(prog, "pid %d is a number of this pid namespace, and the host's cannot be asked: %s: %s "
			      "(programs pinned by an older rdmactl, or none: set the limit from the host's pid namespace, "
			      "nsenter -t 1 -p rdmactl ...)", (int)pid, path, strerror(-prog));
		goto out;
	}
	li.task.pid_fd = (__u32)pidfd;
	snprintf(what, sizeof(what), "ask the kernel for pid %d's host pid", (int)pid);
	err = kq_iter_run(prog, path, &li, rec, sizeof(rec), pidof_each, &p, what);
	close(prog);
	if (err)
		goto out;
	/* the same process: still there, and /proc's start time here is the kernel's (plus a time namespace's offset) */
	if (!p.n || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) ||
	    ((int64_t)p.first.start_ns + kq_boottime_offset()) / (int64_t)KQ_PID_NS_PER_TICK != (int64_t)start) {
		err = kq_fail(-ESRCH, "pid %d: no such process (it ended while its host pid was asked)", (int)pid);
		goto out;
	}
	*host = (pid_t)p.first.tgid;
	*host_start = p.first.start_ns / KQ_PID_NS_PER_TICK;
out:
	close(pidfd);
	return err;
}

int kq_scope_pid(pid_t pid, uint64_t start, struct kq_scope *out)
{
	pid_t host = pid;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (pid <= 0 || (uint64_t)pid >= 1u << KQ_PID_BITS)
		return kq_fail(-EINVAL, "pid %d is not one the kernel gives", (int)pid);
	if (!start)
		err = proc_stat_start(pid, &start, NULL);
	if (err)
		return kq_fail(err, "pid %d: %s", (int)pid, err == -ESRCH ? "no such process" : strerror(-err));
	/*
	 * a number of another pid namespace: the programs know the host's (kq_host_pid asks the kernel); a start
	 * time read in a time namespace of its own has its boottime offset added, which the kernel's does not
	 */
	if (!kq_pidns_host() || kq_boottime_offset()) {
		err = kq_host_pid(pid, start, &host, &start);
		if (err)
			return err;
	}
	out->type = KQ_SCOPE_PID;
	out->id = KQ_PID_ID(host, start);
	return 0;
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
		return kq_scope_pid(ls->pid, ls->start_time, out);
	case LEDGER_SCOPE_GLOBAL:
		out->type = KQ_SCOPE_GLOBAL;
		return 0;
	default:
		return -ENOENT; /* a job has no kernel scope of its own (run --kernel gives it a cgroup) */
	}
}

/*
 * Every program is pinned as a program (prog_NAME) and attached by kq_count_limits() (lib/kq/kqload.c) at the first limit,
 * detached
 * after the last (link_NAME while attached), so that without kernel limits nothing on the host passes them.
 * The iterators (kq_iter_*) are not attached: kq_populate() runs them when a scope gets its first limit. A set
 * pinned by an older rdmactl (links without prog_ pins) stays attached as it is.
 */

const char *const kq_ondemand[KQ_NONDEMAND] = { "kq_ioctl", "kq_ioctl_compat", "kq_open", "kq_opened", "kq_close",
					"kq_begin", "kq_commit", "kq_destroy", "kq_ioctl_done", "kq_receive",
					"kq_permission", "kq_write_in", "kq_write_out", "kq_rereg_in",
					"kq_rereg_out", "kq_rereg_put" };

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
	for (i = 0; i < KQ_NONDEMAND; i++) {
		struct bpf_link_info info = {};
		__u32 ilen = sizeof(info), want;
		struct stat st;
		int fd;

		snprintf(prog, sizeof(prog), "%s/prog_%s", KQ_PIN_DIR, kq_ondemand[i]);
		snprintf(link, sizeof(link), "%s/link_%s", KQ_PIN_DIR, kq_ondemand[i]);
		if (lstat(link, &st)) {
			snprintf(why, len, "%s is not attached (no %s)", kq_ondemand[i], link);
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
