// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The shared-memory ledger: file format, validation, attach/reserve/release, gc and recount, read side. */
#include "ledger.h"
#include "hot.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * 2: denials carry the environment variable of a per-process limit; kinds xrcd and wq.
 * 3: every limit change bumps the usage file's generation (processes cache their limits by it); job and slot
 *    entries never straddle a page.
 */
#define LEDGER_VERSION 3
#define POLICY_MAGIC "RDMAPOL1"
#define USAGE_MAGIC "RDMAUSE1"
#define USAGE_SUFFIX ".usage"
#define MAX_CG_PER_PROC 16
/*
 * Cached limits are also refreshed every this many operations, whatever the generation says: the usage file
 * is writable by every user, and a writer that puts the generation back must not hide a limit change for
 * good.
 */
#define VIEW_RECHECK 1024

#define ALOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ALOADR(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ASTORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define AADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define ASUB(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)
#define ACAS(p, expp, v) __atomic_compare_exchange_n((p), (expp), (v), false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)

/* Static header, identical in shape for both files; checksummed. */
struct lhdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size;
	uint64_t file_size;
	uint32_t nprocs, njobs, ncgroups, npidlimits, nring, nkinds;
	uint64_t ledger_id; /* pairs a policy file with its usage file */
	uint64_t created_ns;
	uint32_t checksum; /* FNV-1a of every byte above */
	uint32_t pad;
};

enum { ENT_FREE = 0, ENT_CLAIMING = 1, ENT_LIVE = 2, ENT_RECLAIMING = 3 };

struct pol_cgroup {
	uint32_t state;
	uint32_t pad;
	char path[LEDGER_CGROUP_MAX];
	uint64_t limit[LEDGER_NKINDS];
};

struct pol_pid {
	uint32_t state;
	int32_t pid;
	uint64_t start;
	uint64_t limit[LEDGER_NKINDS];
};

struct policy {
	struct lhdr h;
	uint64_t global_limit[LEDGER_NKINDS];
	struct pol_cgroup cg[LEDGER_MAX_CGROUPS];
	struct pol_pid pid[LEDGER_MAX_PIDLIMITS];
};

struct ring_ent {
	uint64_t seq; /* 0 while being written */
	struct ledger_denial_event ev;
};

struct job {
	uint32_t state;
	int32_t owner_pid;
	uint64_t owner_start;
	uint32_t owner_active;
	uint32_t pad;
	char name[LEDGER_NAME_MAX];
	uint64_t limit[LEDGER_NKINDS];
	uint64_t total[LEDGER_NKINDS];
} __attribute__((aligned(512))); /* limit and total on one page */

struct slot {
	/* hot: written by the owner on every operation */
	uint64_t inflight;
	uint64_t usage[LEDGER_NKINDS];
	/* cold */
	uint64_t owner; /* 0 free, else pid | (start & 0xffffffff) << 32: claimed by CAS */
	uint32_t state;
	int32_t pid;
	uint64_t start;
	int32_t job; /* index into jobs, -1 none */
	/*
	 * 0: usage charged through the API. Else the interceptor's slot, whose usage mirrors uverbs objects:
	 * +1 when a device open begins, +1 when it ended (odd: an open in progress). See take_back_execd().
	 */
	uint32_t vseq;
	char cgroup[LEDGER_CGROUP_MAX];
} __attribute__((aligned(512))); /* the hot part on one page */

struct usage {
	struct lhdr h;
	/* Read by every operation, written rarely: one line, on the page of the global totals. */
	uint32_t frozen __attribute__((aligned(64))); /* recount in progress: operations wait */
	uint32_t pad;
	/*
	 * Bumped by every change of a limit (any scope) and of the cgroup and pid tables: a process caches the
	 * limits that apply to it and refreshes them when this moves, so that operations never read the policy
	 * file unless a cgroup entry applies.
	 */
	uint64_t gen;
	uint32_t need_recount __attribute__((aligned(64))); /* a recount could not finish; the next gc retries */
	uint64_t gc_owner;    /* gc lock: packed pid|start32, 0 free */
	uint64_t last_gc_ns;
	uint64_t denial_total;
	uint64_t denial_kind[LEDGER_NKINDS];
	uint64_t denial_seq;
	uint64_t global_total[LEDGER_NKINDS] __attribute__((aligned(64)));
	uint64_t cg_total[LEDGER_MAX_CGROUPS][LEDGER_NKINDS] __attribute__((aligned(64)));
	struct ring_ent ring[LEDGER_DENIAL_RING];
	struct job jobs[LEDGER_MAX_JOBS];
	struct slot slots[LEDGER_MAX_PROCS];
};

struct ledger {
	struct policy *pol;
	struct usage *use;
	bool policy_rw, usage_rw;
	pthread_mutex_t mtx;

	/* this process's attachment */
	int slot; /* -1 when not attached */
	pid_t pid;
	uint64_t start;
	int job;
	char jobname[LEDGER_NAME_MAX];
	char cgroup[LEDGER_CGROUP_MAX];

	/*
	 * The limits that apply, refreshed when use->gen moves (fields read with relaxed atomics, after an
	 * acquire of view_gen): pid and global limits copied, the cgroup entries by index.
	 */
	uint64_t view_gen;
	uint32_t view_ops; /* operations since the last refresh, loosely counted (VIEW_RECHECK) */
	uint64_t view_pid[LEDGER_NKINDS];    /* LEDGER_UNLIMITED without a pid entry */
	uint64_t view_global[LEDGER_NKINDS];
	int view_ncg;
	int view_cg[MAX_CG_PER_PROC];
	bool frozen_stuck; /* a freeze outlasted 5 s: stop waiting for it until it is gone */
	uint64_t stuck_check;

	char *path;
	bool own; /* allocated by ledger_open() (not ledger_open_in()): freed by ledger_close() */
};

_Static_assert(sizeof(struct ledger) <= LEDGER_HANDLE_SIZE, "LEDGER_HANDLE_SIZE too small");

const char *const ledger_kind_names[] = {
#define X(name, NAME, led, ...) KINDS_IF(led, #name, )
	KINDS(X)
#undef X
	NULL,
};

static __thread char errbuf[512];

static int seterr(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int seterr(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *ledger_error(void)
{
	return errbuf[0] ? errbuf : "no error";
}

const char *ledger_kind_name(enum ledger_kind kind)
{
	if ((unsigned int)kind >= LEDGER_NKINDS)
		return NULL;
	return ledger_kind_names[kind];
}

const char *ledger_scope_type_name(enum ledger_scope_type type)
{
	switch (type) {
	case LEDGER_SCOPE_PROCESS:
		return "process";
	case LEDGER_SCOPE_JOB:
		return "job";
	case LEDGER_SCOPE_CGROUP:
		return "cgroup";
	case LEDGER_SCOPE_GLOBAL:
		return "global";
	}
	return "?";
}

const char *ledger_default_path(void)
{
	const char *p = getenv(LEDGER_ENV_PATH);

	return p && *p ? p : LEDGER_DEFAULT_PATH;
}

const char *ledger_path(const struct ledger *l)
{
	return l->path;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- processes ---------------------------------------------------------------------------------- */

/* Start time of pid, and whether it is a live (not zombie) process. */
static int pid_stat(pid_t pid, uint64_t *start, bool *zombie)
{
	char path[64], buf[1024], *p;
	unsigned long long st;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* comm may contain spaces and parentheses: fields restart after the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EPROTO;
	p += 2;
	if (zombie)
		*zombie = *p == 'Z' || *p == 'X';
	/* p is at field 3 (state); field 22 is 19 fields further */
	for (i = 3; i < 22; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -EPROTO;
		p++;
	}
	if (sscanf(p, "%llu", &st) != 1)
		return -EPROTO;
	*start = st;
	return 0;
}

int ledger_pid_start_time(pid_t pid, uint64_t *out)
{
	bool zombie;

	if (pid <= 0)
		return -ESRCH;
	return pid_stat(pid, out, &zombie);
}

static bool pid_alive(pid_t pid, uint64_t start)
{
	uint64_t st;
	bool zombie = false;

	if (pid <= 0)
		return false;
	if (pid_stat(pid, &st, &zombie))
		return false;
	return !zombie && st == start;
}

static uint64_t pack_owner(pid_t pid, uint64_t start)
{
	return (uint64_t)(uint32_t)pid | (start & 0xffffffffull) << 32;
}

static bool owner_alive(uint64_t owner)
{
	pid_t pid = (pid_t)(uint32_t)owner;
	uint64_t st;
	bool zombie = false;

	if (pid <= 0 || pid_stat(pid, &st, &zombie))
		return false;
	return !zombie && (st & 0xffffffffull) == owner >> 32;
}

int ledger_cgroup_normalize(const char *in, char *out, size_t len)
{
	size_t o = 0;
	const char *p = in;

	if (!in || !*in || len < 2)
		return -EINVAL;
	/* collapse repeated '/', drop trailing '/', refuse "." and ".." components */
	while (*p) {
		const char *q;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		q = strchr(p, '/');
		n = q ? (size_t)(q - p) : strlen(p);
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		if (o + 1 + n + 1 > len)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	if (!o)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* Own cgroup v2 path from /proc/self/cgroup ("0::/a/b"). */
static void self_cgroup(char *out, size_t len)
{
	char line[LEDGER_CGROUP_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");

	snprintf(out, len, "/");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0::", 3)) {
			if (ledger_cgroup_normalize(line + 3, out, len))
				snprintf(out, len, "/");
			break;
		}
	}
	fclose(f);
}

/* Is cgroup path a equal to or an ancestor of b? */
static bool cg_covers(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (!strcmp(a, "/"))
		return true;
	return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/');
}

static void copy_str(char *dst, const char *src, size_t len)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---- file format -------------------------------------------------------------------------------- */

static uint32_t fnv1a(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= *c++;
		h *= 16777619u;
	}
	return h;
}

static void hdr_fill(struct lhdr *h, const char *magic, size_t size, uint64_t id, uint64_t created)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, magic, 8);
	h->version = LEDGER_VERSION;
	h->hdr_size = sizeof(*h);
	h->file_size = size;
	h->nprocs = LEDGER_MAX_PROCS;
	h->njobs = LEDGER_MAX_JOBS;
	h->ncgroups = LEDGER_MAX_CGROUPS;
	h->npidlimits = LEDGER_MAX_PIDLIMITS;
	h->nring = LEDGER_DENIAL_RING;
	h->nkinds = LEDGER_NKINDS;
	h->ledger_id = id;
	h->created_ns = created;
	h->checksum = fnv1a(h, offsetof(struct lhdr, checksum));
}

static int hdr_check(const struct lhdr *h, const char *magic, size_t size, const char *path)
{
	if (memcmp(h->magic, magic, 8))
		return seterr(-EBADMSG, "%s: not an rdmactl ledger file (bad magic)", path);
	if (h->checksum != fnv1a(h, offsetof(struct lhdr, checksum)))
		return seterr(-EBADMSG, "%s: corrupted ledger header (checksum mismatch)", path);
	if (h->version != LEDGER_VERSION)
		return seterr(-EPROTO, "%s: ledger format version %u, this rdmactl reads version %u", path,
			      h->version, LEDGER_VERSION);
	if (h->hdr_size != sizeof(*h) || h->file_size != size || h->nprocs != LEDGER_MAX_PROCS ||
	    h->njobs != LEDGER_MAX_JOBS || h->ncgroups != LEDGER_MAX_CGROUPS ||
	    h->npidlimits != LEDGER_MAX_PIDLIMITS || h->nring != LEDGER_DENIAL_RING || h->nkinds != LEDGER_NKINDS)
		return seterr(-EBADMSG, "%s: ledger header describes a different layout", path);
	return 0;
}

static int map_file(const char *path, const char *magic, size_t size, bool rw, void **out)
{
	struct stat st;
	void *p;
	int fd, err;

	fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			return seterr(err, "%s: no ledger (create one with 'rdmactl quota init')", path);
		if (err == -EACCES || err == -EPERM)
			return seterr(-EACCES, "%s: permission denied", path);
		return seterr(err, "%s: %s", path, strerror(-err));
	}
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return seterr(err, "%s: %s", path, strerror(-err));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return seterr(-EBADMSG, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size < sizeof(struct lhdr)) {
		close(fd);
		return seterr(-EBADMSG, "%s: truncated ledger (%lld bytes)", path, (long long)st.st_size);
	}
	if ((uint64_t)st.st_size != size) {
		/* read the header to tell a foreign file or another version from a truncation */
		struct lhdr h;
		bool whole = pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h);

		close(fd);
		if (whole && memcmp(h.magic, magic, 8))
			return seterr(-EBADMSG, "%s: not an rdmactl ledger file (bad magic)", path);
		if (whole && h.checksum == fnv1a(&h, offsetof(struct lhdr, checksum)) && h.version != LEDGER_VERSION)
			return seterr(-EPROTO, "%s: ledger format version %u, this rdmactl reads version %u", path,
				      h.version, LEDGER_VERSION);
		return seterr(-EBADMSG, "%s: truncated or resized ledger (%lld bytes, expected %zu)", path,
			      (long long)st.st_size, size);
	}
	p = mmap(NULL, size, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	err = -errno;
	close(fd);
	if (p == MAP_FAILED)
		return seterr(err, "%s: mmap: %s", path, strerror(-err));
	err = hdr_check(p, magic, size, path);
	if (err) {
		munmap(p, size);
		return err;
	}
	*out = p;
	return 0;
}

static int usage_path(const char *path, char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s%s", path, USAGE_SUFFIX) >= len)
		return seterr(-ENAMETOOLONG, "%s: path too long", path);
	return 0;
}

static int write_new(const char *path, const char *magic, size_t size, mode_t mode, uint64_t id, uint64_t created,
		     void (*fill)(void *))
{
	char tmp[PATH_MAX + 16];
	void *p;
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return seterr(-ENAMETOOLONG, "%s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return seterr(err, "%s: cannot create: %s", path, strerror(-err));
	}
	if (ftruncate(fd, (off_t)size) || fchmod(fd, mode)) {
		err = -errno;
		goto err_fd;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto err_fd;
	}
	fill(p);
	hdr_fill(p, magic, size, id, created);
	munmap(p, size);
	if (fsync(fd) && errno != EINVAL) {
		err = -errno;
		goto err_fd;
	}
	close(fd);
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return seterr(err, "%s: cannot create: %s", path, strerror(-err));
	}
	return 0;
err_fd:
	close(fd);
	unlink(tmp);
	return seterr(err, "%s: cannot create: %s", path, strerror(-err));
}

static void fill_policy(void *p)
{
	struct policy *pol = p;
	int i, k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		pol->global_limit[k] = LEDGER_UNLIMITED;
	for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
		for (k = 0; k < LEDGER_NKINDS; k++)
			pol->cg[i].limit[k] = LEDGER_UNLIMITED;
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++)
		for (k = 0; k < LEDGER_NKINDS; k++)
			pol->pid[i].limit[k] = LEDGER_UNLIMITED;
}

static void fill_usage(void *p)
{
	struct usage *u = p;
	int i;

	u->gen = 1; /* a fresh handle's view (0) is stale */
	for (i = 0; i < LEDGER_MAX_PROCS; i++)
		u->slots[i].job = -1;
}

int ledger_init(const char *path)
{
	char upath[PATH_MAX];
	uint64_t id, created = now_ns();
	int err;

	if (!path)
		path = ledger_default_path();
	err = usage_path(path, upath, sizeof(upath));
	if (err)
		return err;
	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
		id = created ^ ((uint64_t)getpid() << 32);
	err = write_new(upath, USAGE_MAGIC, sizeof(struct usage), 0666, id, created, fill_usage);
	if (err)
		return err;
	return write_new(path, POLICY_MAGIC, sizeof(struct policy), 0644, id, created, fill_policy);
}

static int open_at(void *mem, const char *path, unsigned int flags, struct ledger **out)
{
	char upath[PATH_MAX];
	struct ledger *l;
	void *p;
	int err;

	errbuf[0] = '\0';
	if (!path)
		path = ledger_default_path();
	if (strlen(path) >= PATH_MAX - sizeof(USAGE_SUFFIX))
		return seterr(-ENAMETOOLONG, "%s: path too long", path);
	err = usage_path(path, upath, sizeof(upath));
	if (err)
		return err;
	if ((flags & LEDGER_CREATE) && access(path, F_OK) && errno == ENOENT && access(upath, F_OK) &&
	    errno == ENOENT) {
		err = ledger_init(path);
		if (err)
			return err;
	}
	l = mem ? memset(mem, 0, sizeof(*l)) : calloc(1, sizeof(*l));
	if (!l)
		return seterr(-ENOMEM, "out of memory");
	l->own = !mem;
	l->path = strdup(path);
	if (!l->path) {
		if (l->own)
			free(l);
		return seterr(-ENOMEM, "out of memory");
	}
	pthread_mutex_init(&l->mtx, NULL);
	l->slot = -1;
	l->job = -1;
	l->policy_rw = flags & LEDGER_POLICY_RW;
	err = map_file(path, POLICY_MAGIC, sizeof(struct policy), l->policy_rw, &p);
	if (err)
		goto err_free;
	l->pol = p;
	l->usage_rw = true;
	err = map_file(upath, USAGE_MAGIC, sizeof(struct usage), true, &p);
	if (err == -EACCES) {
		l->usage_rw = false;
		err = map_file(upath, USAGE_MAGIC, sizeof(struct usage), false, &p);
	}
	if (err)
		goto err_pol;
	l->use = p;
	if (l->use->h.ledger_id != l->pol->h.ledger_id) {
		err = seterr(-EBADMSG, "%s does not belong to %s (recreate with 'rdmactl quota init')", upath, path);
		goto err_use;
	}
	*out = l;
	return 0;
err_use:
	munmap(l->use, sizeof(struct usage));
err_pol:
	munmap(l->pol, sizeof(struct policy));
err_free:
	pthread_mutex_destroy(&l->mtx);
	free(l->path);
	if (l->own)
		free(l);
	return err;
}

int ledger_open(const char *path, unsigned int flags, struct ledger **out)
{
	return open_at(NULL, path, flags, out);
}

int ledger_open_in(void *mem, const char *path, unsigned int flags, struct ledger **out)
{
	if (!mem || (uintptr_t)mem % 16)
		return seterr(-EINVAL, "ledger handle memory missing or misaligned");
	return open_at(mem, path, flags, out);
}

void ledger_close(struct ledger *l)
{
	if (!l)
		return;
	munmap(l->use, sizeof(struct usage));
	munmap(l->pol, sizeof(struct policy));
	pthread_mutex_destroy(&l->mtx);
	free(l->path);
	if (l->own)
		free(l);
}

/* ---- gc lock, freeze, recount ------------------------------------------------------------------- */

static uint64_t self_owner(uint64_t *start)
{
	uint64_t st = 0;

	ledger_pid_start_time(getpid(), &st);
	if (start)
		*start = st;
	return pack_owner(getpid(), st);
}

/* Take the gc lock; steal it from a dead holder. Waits up to wait_ms; -EBUSY otherwise. */
static int gc_lock(struct ledger *l, int wait_ms)
{
	uint64_t me = self_owner(NULL), cur;
	uint64_t deadline = mono_ns() + (uint64_t)wait_ms * 1000000ull;

	for (;;) {
		cur = 0;
		if (ACAS(&l->use->gc_owner, &cur, me))
			return 0;
		if (cur != me && !owner_alive(cur) && ACAS(&l->use->gc_owner, &cur, me))
			return 0;
		if (mono_ns() >= deadline)
			return -EBUSY;
		usleep(1000);
	}
}

static void gc_unlock(struct ledger *l)
{
	ASTORE(&l->use->gc_owner, 0);
}

/*
 * After any change of a limit or of the cgroup and pid tables (the writer has the usage file mapped
 * writable): the next operation of every process refreshes the limits it caches.
 */
static void limits_changed(struct ledger *l)
{
	AADD(&l->use->gen, 1);
}

/* Subtract without going below zero (a total can only be short after a crash mid-recount). */
static HOT_DESTROY void sub_clamp(uint64_t *p, uint64_t n)
{
	uint64_t cur = ALOADR(p);

	do {
		if (cur < n)
			n = cur;
	} while (!ACAS(p, &cur, cur - n));
}

/* Which cgroup entries cover cgroup path cg; returns how many (up to max). */
static int cg_matches(const struct policy *pol, const char *cg, int *idx, int max)
{
	char path[LEDGER_CGROUP_MAX];
	int i, n = 0;

	for (i = 0; i < LEDGER_MAX_CGROUPS && n < max; i++) {
		if (ALOAD(&pol->cg[i].state) != ENT_LIVE)
			continue;
		copy_str(path, pol->cg[i].path, sizeof(path));
		if (cg_covers(path, cg))
			idx[n++] = i;
	}
	return n;
}

static int slot_job(const struct slot *s)
{
	int j = ALOADR(&s->job);

	return j >= 0 && j < LEDGER_MAX_JOBS ? j : -1;
}

/* The scopes a slot's usage counts in besides the global one: its job and the cgroup entries it matches. */
struct slot_scopes {
	int job; /* -1 none */
	int ncg;
	int cg[MAX_CG_PER_PROC];
};

static void slot_scopes(struct ledger *l, const struct slot *s, struct slot_scopes *sc)
{
	char cg[LEDGER_CGROUP_MAX];

	copy_str(cg, s->cgroup, sizeof(cg));
	sc->ncg = cg_matches(l->pol, cg, sc->cg, MAX_CG_PER_PROC);
	sc->job = slot_job(s);
}

/* Take n of kind k off the global total and every scope in sc (the slot's own count is the caller's). */
static void scopes_sub(struct usage *u, const struct slot_scopes *sc, int k, uint64_t n)
{
	int c;

	sub_clamp(&u->global_total[k], n);
	if (sc->job >= 0)
		sub_clamp(&u->jobs[sc->job].total[k], n);
	for (c = 0; c < sc->ncg; c++)
		sub_clamp(&u->cg_total[sc->cg[c]][k], n);
}

/*
 * Freeze operations, wait until no live slot has one in flight (slots that turn out dead are marked
 * RECLAIMING), then set every total to the sum of live slot usage. Caller holds the gc lock.
 */
static int recount(struct ledger *l)
{
	struct usage *u = l->use;
	uint64_t sums_cg[LEDGER_MAX_CGROUPS][LEDGER_NKINDS];
	uint64_t sums_g[LEDGER_NKINDS] = { 0 }, sums_j[LEDGER_MAX_JOBS][LEDGER_NKINDS];
	struct slot_scopes sc;
	uint64_t deadline;
	int i, j, k;

	memset(sums_j, 0, sizeof(sums_j));
	memset(sums_cg, 0, sizeof(sums_cg));
	ASTORE(&u->need_recount, 1);
	__atomic_store_n(&u->frozen, 1, __ATOMIC_SEQ_CST);
	deadline = mono_ns() + 2000000000ull;
	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		struct slot *s = &u->slots[i];
		unsigned int spins = 0;

		while (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST) && ALOAD(&s->state) == ENT_LIVE) {
			if (++spins % 64 == 0 && !pid_alive(s->pid, s->start)) {
				uint32_t st = ENT_LIVE;

				ACAS(&s->state, &st, ENT_RECLAIMING);
				break;
			}
			if (mono_ns() > deadline) {
				__atomic_store_n(&u->frozen, 0, __ATOMIC_SEQ_CST);
				return -EBUSY;
			}
			sched_yield();
		}
	}
	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		struct slot *s = &u->slots[i];
		uint32_t st = ALOAD(&s->state);

		if (st == ENT_RECLAIMING) {
			memset((void *)s->usage, 0, sizeof(s->usage));
			s->job = -1;
			s->inflight = 0;
			ASTORE(&s->state, ENT_FREE);
			ASTORE(&s->owner, 0);
			continue;
		}
		if (st != ENT_LIVE)
			continue;
		slot_scopes(l, s, &sc);
		for (k = 0; k < LEDGER_NKINDS; k++) {
			uint64_t v = ALOADR(&s->usage[k]);

			sums_g[k] += v;
			if (sc.job >= 0)
				sums_j[sc.job][k] += v;
			for (int c = 0; c < sc.ncg; c++)
				sums_cg[sc.cg[c]][k] += v;
		}
	}
	for (k = 0; k < LEDGER_NKINDS; k++) {
		ASTORE(&u->global_total[k], sums_g[k]);
		for (j = 0; j < LEDGER_MAX_JOBS; j++)
			ASTORE(&u->jobs[j].total[k], sums_j[j][k]);
		for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
			ASTORE(&u->cg_total[i][k], sums_cg[i][k]);
	}
	ASTORE(&u->need_recount, 0);
	__atomic_store_n(&u->frozen, 0, __ATOMIC_SEQ_CST);
	return 0;
}

/* Give a dead slot's usage back to its scopes and free it. Caller holds the gc lock; slot is RECLAIMING. */
static void reclaim_slot(struct ledger *l, struct slot *s)
{
	struct slot_scopes sc;
	int k;

	slot_scopes(l, s, &sc);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t v = ALOADR(&s->usage[k]);

		if (!v)
			continue;
		scopes_sub(l->use, &sc, k, v);
		ASTORE(&s->usage[k], 0);
	}
	s->job = -1;
	ASTORE(&s->state, ENT_FREE);
	ASTORE(&s->owner, 0);
}

/*
 * Does process pid hold an open uverbs device (/dev/infiniband/uverbsN, by its name wherever it is
 * mounted)? 1 yes, 0 no, -1 when /proc cannot tell (another user's process, hidepid): treated as yes.
 */
static int holds_uverbs(pid_t pid)
{
	char path[64], link[PATH_MAX];
	struct dirent *de;
	const char *base;
	int ret = 0;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n < 0) {
			if (errno == ENOENT)
				continue; /* closed meanwhile */
			ret = -1;
			break;
		}
		link[n] = '\0';
		base = strrchr(link, '/');
		if (base && !strncmp(base + 1, "uverbs", 6)) {
			ret = 1;
			break;
		}
	}
	closedir(d);
	return ret;
}

/*
 * A live process whose interceptor slot holds usage while the process holds no uverbs device: the image
 * that charged it exec()ed away (libibverbs opens the device O_CLOEXEC, so the kernel destroyed its objects)
 * and the new image has not attached, perhaps never will (it need not use verbs; take_over_stale() only runs
 * when it does). Give the usage back to every scope and leave the slot to the process: its next image takes
 * it over, or the gc frees it at exit.
 * The image attached to a slot cannot hold usage without a device open: it charges only through a context,
 * and a context is the open device. The exceptions are bracketed: opening (vseq odd, or changed while we
 * looked) and closing (the process's own release then finds less in its slot and changes nothing; what
 * leaves the slot leaves the totals, on either side). Caller holds the gc lock (no takeover, no recount).
 * Returns 1 if something was given back.
 */
static int take_back_execd(struct ledger *l, struct slot *s)
{
	uint64_t snap[LEDGER_NKINDS], any = 0;
	uint32_t v = __atomic_load_n(&s->vseq, __ATOMIC_SEQ_CST);
	struct slot_scopes sc;
	int k;

	if (!v || v & 1)
		return 0;
	for (k = 0; k < LEDGER_NKINDS; k++) {
		snap[k] = k == LEDGER_WR ? 0 : __atomic_load_n(&s->usage[k], __ATOMIC_SEQ_CST);
		any |= snap[k];
	}
	if (!any || holds_uverbs(s->pid) != 0)
		return 0;
	/* still the same process, and no open began or ended while we looked */
	if (!pid_alive(s->pid, s->start) || __atomic_load_n(&s->vseq, __ATOMIC_SEQ_CST) != v ||
	    ALOAD(&s->state) != ENT_LIVE)
		return 0;
	slot_scopes(l, s, &sc);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t cur = snap[k] ? ALOADR(&s->usage[k]) : 0, take;

		do {
			take = cur < snap[k] ? cur : snap[k];
		} while (take && !ACAS(&s->usage[k], &cur, cur - take));
		if (take)
			scopes_sub(l->use, &sc, k, take);
	}
	return 1;
}

static bool job_in_use(const struct usage *u, int j)
{
	int i;

	for (i = 0; i < LEDGER_MAX_PROCS; i++)
		if (ALOAD(&u->slots[i].state) != ENT_FREE && slot_job(&u->slots[i]) == j)
			return true;
	return false;
}

static int gc_locked(struct ledger *l, bool force_recount, unsigned int *reclaimed, unsigned int *given)
{
	struct usage *u = l->use;
	bool need = force_recount || ALOAD(&u->need_recount) || ALOAD(&u->frozen);
	unsigned int freed = 0, back = 0;
	int i, err = 0;

	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		struct slot *s = &u->slots[i];
		uint64_t owner = ALOAD(&s->owner);
		uint32_t st = ALOAD(&s->state);

		if (!owner)
			continue;
		if (st == ENT_LIVE) {
			if (pid_alive(s->pid, s->start)) {
				back += take_back_execd(l, s);
				continue;
			}
			if (!ACAS(&s->state, &st, ENT_RECLAIMING))
				continue;
			freed++;
			if (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST))
				need = true; /* died mid-operation: only a recount is exact */
			else
				reclaim_slot(l, s);
		} else if (st == ENT_RECLAIMING) {
			need = true; /* left by a gc that died */
		} else if (st == ENT_CLAIMING || st == ENT_FREE) {
			/* attach in progress, or died before finishing it */
			if (!owner_alive(owner) && ACAS(&s->owner, &owner, 0))
				ASTORE(&s->state, ENT_FREE);
		}
	}
	if (need)
		err = recount(l);
	/* finished jobs */
	for (i = 0; i < LEDGER_MAX_JOBS; i++) {
		struct job *jb = &u->jobs[i];

		if (ALOAD(&jb->state) != ENT_LIVE)
			continue;
		if (ALOAD(&jb->owner_active) && pid_alive(jb->owner_pid, jb->owner_start))
			continue;
		if (job_in_use(u, i))
			continue;
		ASTORE(&jb->state, ENT_FREE);
	}
	/* stale pid limits */
	if (l->policy_rw) {
		bool changed = false;

		for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++) {
			struct pol_pid *pp = &l->pol->pid[i];

			if (ALOAD(&pp->state) == ENT_LIVE && !pid_alive(pp->pid, pp->start)) {
				ASTORE(&pp->state, ENT_FREE);
				changed = true;
			}
		}
		if (changed)
			limits_changed(l);
	}
	ASTORE(&u->last_gc_ns, mono_ns());
	if (reclaimed)
		*reclaimed = freed;
	if (given)
		*given = back;
	return err;
}

int ledger_gc(struct ledger *l, unsigned int *reclaimed)
{
	int err;

	if (reclaimed)
		*reclaimed = 0;
	if (!l->usage_rw)
		return -EACCES;
	err = gc_lock(l, 3000);
	if (err)
		return err;
	err = gc_locked(l, false, reclaimed, NULL);
	gc_unlock(l);
	return err;
}

/* ---- attach ------------------------------------------------------------------------------------- */

static int find_job(const struct usage *u, const char *name)
{
	int i;

	for (i = 0; i < LEDGER_MAX_JOBS; i++)
		if (ALOAD(&u->jobs[i].state) == ENT_LIVE && !strncmp(u->jobs[i].name, name, LEDGER_NAME_MAX))
			return i;
	return -1;
}

static int claim_slot(struct ledger *l, uint64_t owner)
{
	int i;

	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		struct slot *s = &l->use->slots[i];
		uint64_t cur = 0;

		if (ALOADR(&s->owner) == 0 && ACAS(&s->owner, &cur, owner))
			return i;
	}
	return -1;
}

/*
 * Slots already owned by this pid and start time were left by the image this process exec()ed away from (an
 * image attaches once): libibverbs opens the uverbs device O_CLOEXEC, so the exec closed it and the kernel
 * destroyed everything that image held. Give their usage back to the job, cgroup and global totals like a
 * dead holder's and free them. Only this process can tell: to the gc the owner is alive. A slot left in the
 * middle of an operation (another thread killed by the exec) takes a recount, as in the gc.
 */
static void take_over_stale(struct ledger *l, uint64_t owner)
{
	struct usage *u = l->use;
	bool locked = false, need = false;
	int i;

	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		struct slot *s = &u->slots[i];
		uint64_t cur = owner;
		uint32_t st;

		if (ALOADR(&s->owner) != owner)
			continue;
		if (!locked) {
			if (gc_lock(l, 3000))
				return; /* a busy gc: the slot stays until this process exits */
			locked = true;
		}
		st = ALOAD(&s->state);
		if (st == ENT_LIVE) {
			if (!ACAS(&s->state, &st, ENT_RECLAIMING))
				continue;
			if (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST))
				need = true;
			else
				reclaim_slot(l, s);
		} else if (st == ENT_RECLAIMING) {
			need = true; /* left by a gc that died: we hold the lock */
		} else if (ACAS(&s->owner, &cur, 0)) {
			ASTORE(&s->state, ENT_FREE); /* the old image died in its attach */
		}
	}
	if (need)
		recount(l);
	if (locked)
		gc_unlock(l);
}

static int do_attach(struct ledger *l, const char *job)
{
	struct usage *u = l->use;
	struct slot *s;
	uint64_t start, owner;
	int i, j = -1, k, err;

	if (!l->usage_rw)
		return seterr(-EACCES, "%s%s: permission denied", l->path, USAGE_SUFFIX);
	if (!job)
		job = getenv(LEDGER_ENV_JOB);
	if (!job)
		job = "";
	if (strlen(job) >= LEDGER_NAME_MAX)
		return seterr(-EINVAL, "job name too long");
	if (*job) {
		j = find_job(u, job);
		if (j < 0)
			return seterr(-ENOENT, "no job '%s' in the ledger", job);
	}
	owner = self_owner(&start);
	take_over_stale(l, owner);
	i = claim_slot(l, owner);
	if (i < 0) {
		err = ledger_gc(l, NULL);
		if (err && err != -EBUSY)
			return err;
		i = claim_slot(l, owner);
		if (i < 0)
			return seterr(-ENOSPC, "no free process slot in the ledger (%d in use)", LEDGER_MAX_PROCS);
	}
	s = &u->slots[i];
	ASTORE(&s->state, ENT_CLAIMING);
	s->pid = getpid();
	s->start = start;
	s->inflight = 0;
	__atomic_store_n(&s->vseq, 0, __ATOMIC_SEQ_CST);
	for (k = 0; k < LEDGER_NKINDS; k++)
		ASTORE(&s->usage[k], 0);
	self_cgroup(l->cgroup, sizeof(l->cgroup));
	copy_str(s->cgroup, l->cgroup, sizeof(s->cgroup));
	ASTORE(&s->job, j);
	/* live only now: a recount never sees a half-written slot */
	__atomic_store_n(&s->state, ENT_LIVE, __ATOMIC_SEQ_CST);
	l->slot = i;
	l->pid = getpid();
	l->start = start;
	l->job = j;
	copy_str(l->jobname, job, sizeof(l->jobname));
	__atomic_store_n(&l->view_gen, 0, __ATOMIC_RELAXED);
	return 0;
}

int ledger_attach(struct ledger *l, const char *job)
{
	if (l->slot >= 0)
		return -EALREADY;
	return do_attach(l, job);
}

int ledger_attach_child(struct ledger *l)
{
	char job[LEDGER_NAME_MAX];

	copy_str(job, l->jobname, sizeof(job));
	l->slot = -1;
	pthread_mutex_init(&l->mtx, NULL);
	return do_attach(l, job);
}

void ledger_open_mark(struct ledger *l)
{
	if (l->slot >= 0)
		AADD(&l->use->slots[l->slot].vseq, 1);
}

bool ledger_attached(const struct ledger *l)
{
	return l->slot >= 0;
}

int ledger_detach(struct ledger *l)
{
	struct slot *s;
	int k, err = 0;

	if (l->slot < 0)
		return -ENOTCONN;
	s = &l->use->slots[l->slot];
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t v = ALOADR(&s->usage[k]);

		if (v && k != LEDGER_WR) {
			int r = ledger_release(l, k, v);

			if (r)
				err = r;
		}
	}
	s->job = -1;
	ASTORE(&s->state, ENT_FREE);
	ASTORE(&s->owner, 0);
	l->slot = -1;
	return err;
}

/* ---- hot path ----------------------------------------------------------------------------------- */

/*
 * Cache the limits that apply to this process (read after the generation: a change that lands meanwhile
 * moves it again, and the next operation refreshes once more).
 */
static COLD_FN void refresh_view(struct ledger *l)
{
	const struct policy *pol = l->pol;
	int idx[MAX_CG_PER_PROC], n, i, k, p = -1;
	uint64_t gen;

	pthread_mutex_lock(&l->mtx);
	gen = ALOAD(&l->use->gen);
	n = cg_matches(pol, l->cgroup, idx, MAX_CG_PER_PROC);
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++)
		if (ALOAD(&pol->pid[i].state) == ENT_LIVE && pol->pid[i].pid == l->pid &&
		    pol->pid[i].start == l->start) {
			p = i;
			break;
		}
	for (k = 0; k < LEDGER_NKINDS; k++) {
		__atomic_store_n(&l->view_pid[k], p >= 0 ? ALOADR(&pol->pid[p].limit[k]) : LEDGER_UNLIMITED,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&l->view_global[k], ALOADR(&pol->global_limit[k]), __ATOMIC_RELAXED);
	}
	for (i = 0; i < n; i++)
		__atomic_store_n(&l->view_cg[i], idx[i], __ATOMIC_RELAXED);
	__atomic_store_n(&l->view_ncg, n, __ATOMIC_RELAXED);
	__atomic_store_n(&l->view_ops, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->view_gen, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&l->mtx);
}

/*
 * Wait for a recount to finish; if its gc died, finish it ourselves. A ledger frozen for more than 5 s
 * (a live gc stuck, or a hostile writer of the usage file) is ignored: returns false and the operation
 * goes ahead, so that nothing can block an application forever.
 */
static COLD_FN bool wait_unfrozen(struct ledger *l)
{
	uint64_t start = 0, first = 0;
	unsigned int spins = 0;

	while (__atomic_load_n(&l->use->frozen, __ATOMIC_SEQ_CST)) {
		if (++spins < 1000) {
			sched_yield();
			continue;
		}
		if (!first)
			first = mono_ns();
		if (mono_ns() - first > 5000000000ull)
			return false;
		if (!start)
			start = mono_ns();
		if (mono_ns() - start > 500000000ull && !gc_lock(l, 0)) {
			/* the lock was free or stolen from a dead gc: nobody else is recounting */
			gc_locked(l, true, NULL, NULL);
			gc_unlock(l);
			start = 0;
		}
		usleep(100);
	}
	return true;
}

/* Ignoring a stuck freeze: every 100 ms, see whether its holder died and the recount can be finished. */
static COLD_FN void stuck_repair(struct ledger *l)
{
	uint64_t now = mono_ns();

	if (now - __atomic_load_n(&l->stuck_check, __ATOMIC_RELAXED) < 100000000ull)
		return;
	__atomic_store_n(&l->stuck_check, now, __ATOMIC_RELAXED);
	if (!gc_lock(l, 0)) {
		gc_locked(l, true, NULL, NULL);
		gc_unlock(l);
	}
}

/* Add n to *p unless that passes lim. On refusal *cur is the value seen. */
static inline bool cas_add(uint64_t *p, uint64_t n, uint64_t lim, uint64_t *cur)
{
	uint64_t c = ALOADR(p);

	do {
		if (c + n < c || c + n > lim) {
			*cur = c;
			return false;
		}
	} while (!__atomic_compare_exchange_n(p, &c, c + n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	return true;
}

/* Enter an operation: in-flight marked, not frozen, view current (frozen and gen share a line). */
static inline void op_enter(struct ledger *l, struct slot *s)
{
	bool ignore_frozen = false;
	uint32_t ops;

	for (;;) {
		__atomic_fetch_add(&s->inflight, 1, __ATOMIC_SEQ_CST);
		if (__builtin_expect(__atomic_load_n(&l->use->frozen, __ATOMIC_SEQ_CST), 0)) {
			if (!ignore_frozen && !__atomic_load_n(&l->frozen_stuck, __ATOMIC_RELAXED)) {
				__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
				ignore_frozen = !wait_unfrozen(l);
				if (ignore_frozen)
					__atomic_store_n(&l->frozen_stuck, true, __ATOMIC_RELAXED);
				continue;
			}
			if (!ignore_frozen) {
				__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
				ignore_frozen = true;
				stuck_repair(l);
				continue;
			}
		} else if (__builtin_expect(__atomic_load_n(&l->frozen_stuck, __ATOMIC_RELAXED), 0)) {
			__atomic_store_n(&l->frozen_stuck, false, __ATOMIC_RELAXED);
		}
		ops = __atomic_load_n(&l->view_ops, __ATOMIC_RELAXED) + 1;
		__atomic_store_n(&l->view_ops, ops, __ATOMIC_RELAXED); /* a lost update only delays a recheck */
		if (__builtin_expect(ALOAD(&l->use->gen) != __atomic_load_n(&l->view_gen, __ATOMIC_ACQUIRE) ||
					     ops >= VIEW_RECHECK,
				     0)) {
			__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
			refresh_view(l);
			continue;
		}
		return;
	}
}

static inline void op_leave(struct slot *s)
{
	__atomic_fetch_sub(&s->inflight, 1, __ATOMIC_RELEASE);
}

static COLD_FN void fill_denial(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->pid = l->pid;
	copy_str(d->job, l->jobname, sizeof(d->job));
	d->amount = amount;
	d->usage = usage;
	d->limit = limit;
	d->scope.type = type;
	switch (type) {
	case LEDGER_SCOPE_PROCESS:
		d->scope.pid = l->pid;
		d->scope.start_time = l->start;
		break;
	case LEDGER_SCOPE_JOB:
		copy_str(d->scope.name, l->jobname, sizeof(l->jobname));
		break;
	case LEDGER_SCOPE_CGROUP:
		copy_str(d->scope.name, l->pol->cg[idx].path, sizeof(d->scope.name));
		break;
	case LEDGER_SCOPE_GLOBAL:
		break;
	}
}

static COLD_FN void record_denial(struct ledger *l, const struct ledger_denial *d)
{
	struct usage *u = l->use;
	struct ring_ent *e;
	uint64_t seq;

	AADD(&u->denial_total, 1);
	if ((unsigned int)d->kind < LEDGER_NKINDS)
		AADD(&u->denial_kind[d->kind], 1);
	seq = AADD(&u->denial_seq, 1) + 1;
	e = &u->ring[seq % LEDGER_DENIAL_RING];
	__atomic_store_n(&e->seq, 0, __ATOMIC_SEQ_CST);
	e->ev.seq = seq;
	e->ev.time_ns = now_ns();
	e->ev.d = *d;
	__atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
}

/* The cgroup scopes of this process, read once per operation (after op_enter(): current). */
struct view {
	int ncg;
	int cg[MAX_CG_PER_PROC];
};

static inline void view_load(const struct ledger *l, struct view *v)
{
	int i;

	v->ncg = __atomic_load_n(&l->view_ncg, __ATOMIC_RELAXED);
	if ((unsigned int)v->ncg > MAX_CG_PER_PROC)
		v->ncg = 0;
	for (i = 0; i < v->ncg; i++) {
		v->cg[i] = __atomic_load_n(&l->view_cg[i], __ATOMIC_RELAXED);
		if ((unsigned int)v->cg[i] >= LEDGER_MAX_CGROUPS)
			v->cg[i] = 0;
	}
}

static COLD_FN int deny(struct ledger *l, struct ledger_denial *d, enum ledger_kind kind, uint64_t amount,
			enum ledger_scope_type type, int idx, uint64_t usage, uint64_t limit)
{
	fill_denial(l, d, kind, amount, type, idx, usage, limit);
	return -EDQUOT;
}

/* LEDGER_WR: the requested depth against every scope's cap (checked, never charged). */
static inline ALWAYS_INLINE int check_wr(struct ledger *l, const struct view *v, uint64_t n, struct ledger_denial *d)
{
	const struct policy *pol = l->pol;
	uint64_t lim;
	int i;

	lim = ALOADR(&l->view_pid[LEDGER_WR]);
	if (n > lim)
		return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_PROCESS, 0, 0, lim);
	if (l->job >= 0) {
		lim = ALOADR(&l->use->jobs[l->job].limit[LEDGER_WR]);
		if (n > lim)
			return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_JOB, l->job, 0, lim);
	}
	for (i = 0; i < v->ncg; i++) {
		lim = ALOADR(&pol->cg[v->cg[i]].limit[LEDGER_WR]);
		if (n > lim)
			return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_CGROUP, v->cg[i], 0, lim);
	}
	lim = ALOADR(&l->view_global[LEDGER_WR]);
	if (n > lim)
		return deny(l, d, LEDGER_WR, n, LEDGER_SCOPE_GLOBAL, 0, 0, lim);
	return 0;
}

/* Charge n of kind k to the process and to every scope, or nothing: -EDQUOT with *d filled. */
static inline ALWAYS_INLINE int reserve_kind(struct ledger *l, struct slot *s, const struct view *v,
					     enum ledger_kind k, uint64_t n, struct ledger_denial *d)
{
	struct usage *u = l->use;
	const struct policy *pol = l->pol;
	uint64_t lim, cur;
	int i = 0, j = l->job, err;

	lim = ALOADR(&l->view_pid[k]);
	if (!cas_add(&s->usage[k], n, lim, &cur))
		return deny(l, d, k, n, LEDGER_SCOPE_PROCESS, 0, cur, lim);
	if (j >= 0) {
		lim = ALOADR(&u->jobs[j].limit[k]);
		if (!cas_add(&u->jobs[j].total[k], n, lim, &cur)) {
			err = deny(l, d, k, n, LEDGER_SCOPE_JOB, j, cur, lim);
			goto undo_proc;
		}
	}
	for (i = 0; i < v->ncg; i++) {
		lim = ALOADR(&pol->cg[v->cg[i]].limit[k]);
		if (!cas_add(&u->cg_total[v->cg[i]][k], n, lim, &cur)) {
			err = deny(l, d, k, n, LEDGER_SCOPE_CGROUP, v->cg[i], cur, lim);
			goto undo_cg;
		}
	}
	lim = ALOADR(&l->view_global[k]);
	if (!cas_add(&u->global_total[k], n, lim, &cur)) {
		err = deny(l, d, k, n, LEDGER_SCOPE_GLOBAL, 0, cur, lim);
		goto undo_cg;
	}
	return 0;

undo_cg:
	while (i--)
		sub_clamp(&u->cg_total[v->cg[i]][k], n);
	if (j >= 0)
		sub_clamp(&u->jobs[j].total[k], n);
undo_proc:
	sub_clamp(&s->usage[k], n);
	return err;
}

/* Give n of kind k back to the process and every scope; -EINVAL if the process holds less (nothing changed). */
static inline ALWAYS_INLINE int release_kind(struct ledger *l, struct slot *s, const struct view *v,
					     enum ledger_kind k, uint64_t n)
{
	struct usage *u = l->use;
	uint64_t cur = ALOADR(&s->usage[k]);
	int i;

	do {
		if (cur < n)
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&s->usage[k], &cur, cur - n, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	if (l->job >= 0)
		sub_clamp(&u->jobs[l->job].total[k], n);
	for (i = 0; i < v->ncg; i++)
		sub_clamp(&u->cg_total[v->cg[i]][k], n);
	sub_clamp(&u->global_total[k], n);
	return 0;
}

/* release_kind() out of line, for the refusal path of a reserve. */
static COLD_FN void undo_kind(struct ledger *l, struct slot *s, const struct view *v, enum ledger_kind k, uint64_t n)
{
	release_kind(l, s, v, k, n);
}

/* One attempt at every kind, all or nothing. Returns 0, or -EDQUOT with *d filled. */
static inline ALWAYS_INLINE int try_reserve(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
					    const uint64_t *amounts, unsigned int n, struct ledger_denial *d)
{
	struct view v;
	unsigned int i;
	int err = 0;

	op_enter(l, s);
	view_load(l, &v);
	for (i = 0; i < n; i++) {
		if (kinds[i] == LEDGER_WR)
			err = check_wr(l, &v, amounts[i], d);
		else
			err = reserve_kind(l, s, &v, kinds[i], amounts[i], d);
		if (err)
			break;
	}
	/* kinds[i] was refused: give back the ones before it */
	while (err && i--)
		if (kinds[i] != LEDGER_WR)
			undo_kind(l, s, &v, kinds[i], amounts[i]);
	op_leave(s);
	return err;
}

_Static_assert(LEDGER_NKINDS <= 32, "kinds_valid() keeps a bit per kind");

static inline bool kinds_valid(const enum ledger_kind *kinds, unsigned int n)
{
	uint32_t seen = 0;
	unsigned int i;

	if (n - 1 >= LEDGER_NKINDS)
		return false;
	for (i = 0; i < n; i++) {
		if ((unsigned int)kinds[i] >= LEDGER_NKINDS || seen & 1u << kinds[i])
			return false;
		seen |= 1u << kinds[i];
	}
	return true;
}

/* Cold: a dead holder may be what blocks us. gc at most every 100 ms, never waiting for the lock. */
static COLD_FN int reserve_refused(struct ledger *l, struct slot *s, const enum ledger_kind *kinds,
				   const uint64_t *amounts, unsigned int n, struct ledger_denial *d)
{
	int err = -EDQUOT;

	/* a WR depth above a cap stays above it whoever dies */
	if (d->kind != LEDGER_WR && mono_ns() - ALOADR(&l->use->last_gc_ns) > 100000000ull && !gc_lock(l, 0)) {
		unsigned int freed = 0, given = 0;

		gc_locked(l, false, &freed, &given);
		gc_unlock(l);
		if (freed || given)
			err = try_reserve(l, s, kinds, amounts, n, d);
	}
	if (err)
		record_denial(l, d);
	return err;
}

HOT_CREATE int ledger_reserve_n(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts,
				unsigned int n, struct ledger_denial *why)
{
	struct ledger_denial local;
	struct ledger_denial *d = why ? why : &local;
	struct slot *s;
	int err;

	if (l->slot < 0)
		return -ENOTCONN;
	if (!kinds_valid(kinds, n))
		return -EINVAL;
	s = &l->use->slots[l->slot];
	err = try_reserve(l, s, kinds, amounts, n, d);
	if (__builtin_expect(!err, 1))
		return 0;
	return reserve_refused(l, s, kinds, amounts, n, d);
}

int ledger_reserve(struct ledger *l, enum ledger_kind kind, uint64_t amount, struct ledger_denial *why)
{
	return ledger_reserve_n(l, &kind, &amount, 1, why);
}

HOT_DESTROY int ledger_release_n(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts,
				 unsigned int n)
{
	struct view v;
	struct slot *s;
	unsigned int i;
	int err = 0;

	if (l->slot < 0)
		return -ENOTCONN;
	if (!kinds_valid(kinds, n))
		return -EINVAL;
	s = &l->use->slots[l->slot];
	op_enter(l, s);
	view_load(l, &v);
	for (i = 0; i < n; i++)
		if (kinds[i] != LEDGER_WR && release_kind(l, s, &v, kinds[i], amounts[i]))
			err = -EINVAL;
	op_leave(s);
	return err;
}

int ledger_note_denial(struct ledger *l, enum ledger_kind kind, uint64_t amount, uint64_t usage, uint64_t limit,
		       const char *env, struct ledger_denial *out)
{
	struct ledger_denial local;
	struct ledger_denial *d = out ? out : &local;

	if (l->slot < 0)
		return -ENOTCONN;
	if ((unsigned int)kind >= LEDGER_NKINDS)
		return -EINVAL;
	fill_denial(l, d, kind, amount, LEDGER_SCOPE_PROCESS, 0, usage, limit);
	if (env)
		copy_str(d->env, env, sizeof(d->env));
	record_denial(l, d);
	return 0;
}

int ledger_release(struct ledger *l, enum ledger_kind kind, uint64_t amount)
{
	return ledger_release_n(l, &kind, &amount, 1);
}

int ledger_format_denial(const struct ledger_denial *d, char *buf, size_t len)
{
	char who[LEDGER_CGROUP_MAX + 32], used[32], lim[32];
	const char *kind = ledger_kind_name(d->kind);

	if (!kind)
		kind = "?";
	switch (d->scope.type) {
	case LEDGER_SCOPE_PROCESS:
		snprintf(who, sizeof(who), "pid %d", (int)d->scope.pid);
		break;
	case LEDGER_SCOPE_JOB:
		snprintf(who, sizeof(who), "job %.*s", LEDGER_NAME_MAX, d->scope.name);
		break;
	case LEDGER_SCOPE_CGROUP:
		snprintf(who, sizeof(who), "cgroup %.*s", LEDGER_CGROUP_MAX, d->scope.name);
		break;
	default:
		snprintf(who, sizeof(who), "global limit");
		break;
	}
	if (d->env[0])
		snprintf(who, sizeof(who), "%.*s", (int)sizeof(d->env), d->env);
	snprintf(used, sizeof(used), "%" PRIu64, d->usage);
	snprintf(lim, sizeof(lim), "%" PRIu64, d->limit);
	if (d->kind == LEDGER_WR)
		return snprintf(buf, len, "refused wr depth %" PRIu64 " for pid %d%s%.*s%s: above the cap of %s, %s%s",
				d->amount, (int)d->pid, d->job[0] ? " (job " : "", LEDGER_NAME_MAX, d->job,
				d->job[0] ? ")" : "", lim,
				d->scope.type == LEDGER_SCOPE_GLOBAL && !d->env[0] ? "" : "set by ", who);
	return snprintf(buf, len, "refused %s for pid %d%s%.*s%s: %s/%s in use, %s%s", kind, (int)d->pid,
			d->job[0] ? " (job " : "", LEDGER_NAME_MAX, d->job, d->job[0] ? ")" : "", used, lim,
			d->scope.type == LEDGER_SCOPE_GLOBAL && !d->env[0] ? "" : "limit set by ", who);
}

/* ---- policy ------------------------------------------------------------------------------------- */

static int set_cgroup_limit(struct ledger *l, const char *path, enum ledger_kind kind, uint64_t value)
{
	struct policy *pol = l->pol;
	int i, k, fr = -1, err;

	for (i = 0; i < LEDGER_MAX_CGROUPS; i++) {
		if (ALOAD(&pol->cg[i].state) != ENT_LIVE) {
			if (fr < 0)
				fr = i;
			continue;
		}
		if (strncmp(pol->cg[i].path, path, LEDGER_CGROUP_MAX))
			continue;
		ASTORE(&pol->cg[i].limit[kind], value);
		for (k = 0; k < LEDGER_NKINDS; k++)
			if (ALOAD(&pol->cg[i].limit[k]) != LEDGER_UNLIMITED)
				break;
		/* no limit left: drop the entry (its total is no longer kept) */
		if (k == LEDGER_NKINDS)
			ASTORE(&pol->cg[i].state, ENT_FREE);
		limits_changed(l);
		return 0;
	}
	if (value == LEDGER_UNLIMITED)
		return 0;
	if (fr < 0)
		return seterr(-ENOSPC, "no free cgroup entry in the ledger (%d in use)", LEDGER_MAX_CGROUPS);
	/*
	 * A new entry must start from the exact usage of the processes already in that cgroup: publish it
	 * while operations are frozen and recount before anyone charges it.
	 */
	err = gc_lock(l, 3000);
	if (err)
		return seterr(err, "ledger busy (gc lock held)");
	for (k = 0; k < LEDGER_NKINDS; k++)
		pol->cg[fr].limit[k] = LEDGER_UNLIMITED;
	pol->cg[fr].limit[kind] = value;
	copy_str(pol->cg[fr].path, path, sizeof(pol->cg[fr].path));
	__atomic_store_n(&l->use->frozen, 1, __ATOMIC_SEQ_CST);
	ASTORE(&pol->cg[fr].state, ENT_LIVE);
	limits_changed(l);
	err = gc_locked(l, true, NULL, NULL);
	gc_unlock(l);
	if (err)
		return seterr(err, "limit set, but the usage recount did not finish (will retry on next gc)");
	return 0;
}

static int set_pid_limit(struct ledger *l, const struct ledger_scope *sc, enum ledger_kind kind, uint64_t value)
{
	struct policy *pol = l->pol;
	uint64_t start = sc->start_time;
	int i, k, fr = -1, err;

	if (!start) {
		err = ledger_pid_start_time(sc->pid, &start);
		if (err)
			return seterr(-ESRCH, "no process %d", (int)sc->pid);
	}
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++) {
		struct pol_pid *pp = &pol->pid[i];

		if (ALOAD(&pp->state) != ENT_LIVE) {
			if (fr < 0)
				fr = i;
			continue;
		}
		if (pp->pid != sc->pid || pp->start != start)
			continue;
		ASTORE(&pp->limit[kind], value);
		for (k = 0; k < LEDGER_NKINDS; k++)
			if (ALOAD(&pp->limit[k]) != LEDGER_UNLIMITED)
				break;
		if (k == LEDGER_NKINDS)
			ASTORE(&pp->state, ENT_FREE);
		limits_changed(l);
		return 0;
	}
	if (value == LEDGER_UNLIMITED)
		return 0;
	if (fr < 0) {
		/* maybe stale entries of dead processes */
		gc_locked(l, false, NULL, NULL);
		for (i = 0; i < LEDGER_MAX_PIDLIMITS && fr < 0; i++)
			if (ALOAD(&pol->pid[i].state) != ENT_LIVE)
				fr = i;
		if (fr < 0)
			return seterr(-ENOSPC, "no free pid-limit entry in the ledger (%d in use)",
				      LEDGER_MAX_PIDLIMITS);
	}
	for (k = 0; k < LEDGER_NKINDS; k++)
		pol->pid[fr].limit[k] = LEDGER_UNLIMITED;
	pol->pid[fr].limit[kind] = value;
	pol->pid[fr].pid = sc->pid;
	pol->pid[fr].start = start;
	ASTORE(&pol->pid[fr].state, ENT_LIVE);
	limits_changed(l);
	return 0;
}

int ledger_set_limit(struct ledger *l, const struct ledger_scope *sc, enum ledger_kind kind, uint64_t value)
{
	char path[LEDGER_CGROUP_MAX];
	int j, err;

	errbuf[0] = '\0';
	if ((unsigned int)kind >= LEDGER_NKINDS)
		return seterr(-EINVAL, "unknown resource kind");
	/* every change bumps the usage file's generation (limits_changed()) */
	if (!l->usage_rw)
		return seterr(-EACCES, "%s%s: permission denied", l->path, USAGE_SUFFIX);
	if (sc->type == LEDGER_SCOPE_JOB) {
		j = find_job(l->use, sc->name);
		if (j < 0)
			return seterr(-ENOENT, "no job '%.*s' in the ledger", LEDGER_NAME_MAX, sc->name);
		ASTORE(&l->use->jobs[j].limit[kind], value);
		limits_changed(l);
		return 0;
	}
	if (!l->policy_rw)
		return seterr(-EACCES, "%s: permission denied (limits are changed by the ledger's owner)", l->path);
	switch (sc->type) {
	case LEDGER_SCOPE_GLOBAL:
		ASTORE(&l->pol->global_limit[kind], value);
		limits_changed(l);
		return 0;
	case LEDGER_SCOPE_CGROUP:
		err = ledger_cgroup_normalize(sc->name, path, sizeof(path));
		if (err || !strcmp(path, "/"))
			return seterr(-EINVAL, "invalid cgroup path '%.*s'", LEDGER_CGROUP_MAX, sc->name);
		return set_cgroup_limit(l, path, kind, value);
	case LEDGER_SCOPE_PROCESS:
		if (sc->pid <= 0)
			return seterr(-ESRCH, "no process %d", (int)sc->pid);
		err = gc_lock(l, 3000);
		if (err)
			return seterr(err, "ledger busy (gc lock held)");
		err = set_pid_limit(l, sc, kind, value);
		gc_unlock(l);
		return err;
	default:
		return seterr(-EINVAL, "unknown scope");
	}
}

/* ---- jobs --------------------------------------------------------------------------------------- */

int ledger_job_create(struct ledger *l, const char *name, const uint64_t limit[LEDGER_NKINDS])
{
	struct usage *u = l->use;
	uint64_t start;
	int i, k, err;

	errbuf[0] = '\0';
	if (!name || !*name || strlen(name) >= LEDGER_NAME_MAX)
		return seterr(-EINVAL, "invalid job name");
	if (!l->usage_rw)
		return seterr(-EACCES, "%s%s: permission denied", l->path, USAGE_SUFFIX);
	err = gc_lock(l, 3000);
	if (err)
		return seterr(err, "ledger busy (gc lock held)");
	gc_locked(l, false, NULL, NULL);
	if (find_job(u, name) >= 0) {
		gc_unlock(l);
		return seterr(-EEXIST, "a job named '%s' is running", name);
	}
	for (i = 0; i < LEDGER_MAX_JOBS; i++)
		if (ALOAD(&u->jobs[i].state) == ENT_FREE)
			break;
	if (i == LEDGER_MAX_JOBS) {
		gc_unlock(l);
		return seterr(-ENOSPC, "no free job entry in the ledger (%d in use)", LEDGER_MAX_JOBS);
	}
	self_owner(&start);
	memset(u->jobs[i].name, 0, sizeof(u->jobs[i].name));
	copy_str(u->jobs[i].name, name, sizeof(u->jobs[i].name));
	for (k = 0; k < LEDGER_NKINDS; k++) {
		ASTORE(&u->jobs[i].limit[k], limit ? limit[k] : LEDGER_UNLIMITED);
		ASTORE(&u->jobs[i].total[k], 0);
	}
	u->jobs[i].owner_pid = getpid();
	u->jobs[i].owner_start = start;
	ASTORE(&u->jobs[i].owner_active, 1);
	ASTORE(&u->jobs[i].state, ENT_LIVE);
	gc_unlock(l);
	return 0;
}

int ledger_job_release(struct ledger *l, const char *name)
{
	int j, err;

	if (!l->usage_rw)
		return -EACCES;
	j = find_job(l->use, name);
	if (j < 0)
		return -ENOENT;
	ASTORE(&l->use->jobs[j].owner_active, 0);
	err = gc_lock(l, 1000);
	if (err)
		return 0; /* the next gc frees it */
	gc_locked(l, false, NULL, NULL);
	gc_unlock(l);
	return 0;
}

/* ---- read side ---------------------------------------------------------------------------------- */

static void slot_usage_into(const struct slot *s, uint64_t *usage)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		if (k != LEDGER_WR)
			usage[k] += ALOADR(&s->usage[k]);
}

static bool slot_live(const struct slot *s)
{
	return ALOAD(&s->state) == ENT_LIVE && pid_alive(s->pid, s->start);
}

static void stat_init(struct ledger_scope_stat *st, enum ledger_scope_type type)
{
	int k;

	memset(st, 0, sizeof(*st));
	st->scope.type = type;
	for (k = 0; k < LEDGER_NKINDS; k++)
		st->limit[k] = LEDGER_UNLIMITED;
}

static void fill_pid_scope(struct ledger *l, pid_t pid, uint64_t start, struct ledger_scope_stat *st)
{
	int i, k;

	stat_init(st, LEDGER_SCOPE_PROCESS);
	st->scope.pid = pid;
	st->scope.start_time = start;
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++) {
		const struct pol_pid *pp = &l->pol->pid[i];

		if (ALOAD(&pp->state) == ENT_LIVE && pp->pid == pid && pp->start == start)
			for (k = 0; k < LEDGER_NKINDS; k++)
				st->limit[k] = ALOADR(&pp->limit[k]);
	}
	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		const struct slot *s = &l->use->slots[i];

		if (ALOAD(&s->state) == ENT_LIVE && s->pid == pid && s->start == start) {
			slot_usage_into(s, st->usage);
			st->nprocs++;
		}
	}
}

static void fill_cgroup_scope(struct ledger *l, const char *path, struct ledger_scope_stat *st, bool *found)
{
	int i, k, e = -1;
	char cg[LEDGER_CGROUP_MAX];

	stat_init(st, LEDGER_SCOPE_CGROUP);
	copy_str(st->scope.name, path, sizeof(st->scope.name));
	for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
		if (ALOAD(&l->pol->cg[i].state) == ENT_LIVE && !strncmp(l->pol->cg[i].path, path, LEDGER_CGROUP_MAX))
			e = i;
	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		const struct slot *s = &l->use->slots[i];

		if (!slot_live(s))
			continue;
		copy_str(cg, s->cgroup, sizeof(cg));
		if (!cg_covers(path, cg))
			continue;
		st->nprocs++;
		if (e < 0)
			slot_usage_into(s, st->usage);
	}
	if (e >= 0)
		for (k = 0; k < LEDGER_NKINDS; k++) {
			st->limit[k] = ALOADR(&l->pol->cg[e].limit[k]);
			st->usage[k] = k == LEDGER_WR ? 0 : ALOADR(&l->use->cg_total[e][k]);
		}
	*found = e >= 0 || st->nprocs;
}

static void fill_job_scope(struct ledger *l, int j, struct ledger_scope_stat *st)
{
	const struct job *jb = &l->use->jobs[j];
	int i, k;

	stat_init(st, LEDGER_SCOPE_JOB);
	copy_str(st->scope.name, jb->name, LEDGER_NAME_MAX);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		st->limit[k] = ALOADR(&jb->limit[k]);
		st->usage[k] = k == LEDGER_WR ? 0 : ALOADR(&jb->total[k]);
	}
	for (i = 0; i < LEDGER_MAX_PROCS; i++)
		if (slot_job(&l->use->slots[i]) == j && slot_live(&l->use->slots[i]))
			st->nprocs++;
}

static void fill_global_scope(struct ledger *l, struct ledger_scope_stat *st)
{
	int i, k;

	stat_init(st, LEDGER_SCOPE_GLOBAL);
	for (k = 0; k < LEDGER_NKINDS; k++) {
		st->limit[k] = ALOADR(&l->pol->global_limit[k]);
		st->usage[k] = k == LEDGER_WR ? 0 : ALOADR(&l->use->global_total[k]);
	}
	for (i = 0; i < LEDGER_MAX_PROCS; i++)
		if (slot_live(&l->use->slots[i]))
			st->nprocs++;
}

int ledger_get_scope(struct ledger *l, const struct ledger_scope *sc, struct ledger_scope_stat *out)
{
	char path[LEDGER_CGROUP_MAX];
	uint64_t start = sc->start_time;
	bool found;
	int j;

	switch (sc->type) {
	case LEDGER_SCOPE_GLOBAL:
		fill_global_scope(l, out);
		return 0;
	case LEDGER_SCOPE_JOB:
		j = find_job(l->use, sc->name);
		if (j < 0)
			return -ENOENT;
		fill_job_scope(l, j, out);
		return 0;
	case LEDGER_SCOPE_CGROUP:
		if (ledger_cgroup_normalize(sc->name, path, sizeof(path)))
			return -EINVAL;
		fill_cgroup_scope(l, path, out, &found);
		return found ? 0 : -ENOENT;
	case LEDGER_SCOPE_PROCESS:
		if (!start && ledger_pid_start_time(sc->pid, &start))
			return -ESRCH;
		fill_pid_scope(l, sc->pid, start, out);
		return 0;
	}
	return -EINVAL;
}

int ledger_foreach_scope(struct ledger *l, int (*cb)(const struct ledger_scope_stat *st, void *arg), void *arg)
{
	struct ledger_scope_stat st;
	int i, j, ret;
	bool found;

	fill_global_scope(l, &st);
	ret = cb(&st, arg);
	if (ret)
		return ret;
	for (i = 0; i < LEDGER_MAX_CGROUPS; i++) {
		char path[LEDGER_CGROUP_MAX];

		if (ALOAD(&l->pol->cg[i].state) != ENT_LIVE)
			continue;
		copy_str(path, l->pol->cg[i].path, sizeof(path));
		fill_cgroup_scope(l, path, &st, &found);
		ret = cb(&st, arg);
		if (ret)
			return ret;
	}
	for (j = 0; j < LEDGER_MAX_JOBS; j++) {
		if (ALOAD(&l->use->jobs[j].state) != ENT_LIVE)
			continue;
		fill_job_scope(l, j, &st);
		ret = cb(&st, arg);
		if (ret)
			return ret;
	}
	/* processes: each live (pid, start) once, whether it has a limit, a slot, or both */
	for (i = 0; i < LEDGER_MAX_PIDLIMITS + LEDGER_MAX_PROCS; i++) {
		pid_t pid;
		uint64_t start;
		int d;

		if (i < LEDGER_MAX_PIDLIMITS) {
			const struct pol_pid *pp = &l->pol->pid[i];

			if (ALOAD(&pp->state) != ENT_LIVE)
				continue;
			pid = pp->pid;
			start = pp->start;
		} else {
			const struct slot *s = &l->use->slots[i - LEDGER_MAX_PIDLIMITS];

			if (ALOAD(&s->state) != ENT_LIVE)
				continue;
			pid = s->pid;
			start = s->start;
		}
		if (!pid_alive(pid, start))
			continue;
		/* seen before? */
		for (d = 0; d < i; d++) {
			if (d < LEDGER_MAX_PIDLIMITS) {
				const struct pol_pid *pp = &l->pol->pid[d];

				if (ALOAD(&pp->state) == ENT_LIVE && pp->pid == pid && pp->start == start)
					break;
			} else {
				const struct slot *s = &l->use->slots[d - LEDGER_MAX_PIDLIMITS];

				if (ALOAD(&s->state) == ENT_LIVE && s->pid == pid && s->start == start)
					break;
			}
		}
		if (d < i)
			continue;
		fill_pid_scope(l, pid, start, &st);
		ret = cb(&st, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int ledger_foreach_proc(struct ledger *l, int (*cb)(const struct ledger_proc_stat *st, void *arg), void *arg)
{
	struct ledger_proc_stat ps;
	int i, k, ret;

	for (i = 0; i < LEDGER_MAX_PROCS; i++) {
		const struct slot *s = &l->use->slots[i];
		struct ledger_scope_stat sc;
		int j;

		if (!slot_live(s))
			continue;
		memset(&ps, 0, sizeof(ps));
		ps.pid = s->pid;
		ps.start_time = s->start;
		j = slot_job(s);
		if (j >= 0)
			copy_str(ps.job, l->use->jobs[j].name, sizeof(ps.job));
		copy_str(ps.cgroup, s->cgroup, sizeof(ps.cgroup));
		for (k = 0; k < LEDGER_NKINDS; k++)
			ps.usage[k] = k == LEDGER_WR ? 0 : ALOADR(&s->usage[k]);
		fill_pid_scope(l, s->pid, s->start, &sc);
		memcpy(ps.limit, sc.limit, sizeof(ps.limit));
		ret = cb(&ps, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int ledger_denial_counts(struct ledger *l, uint64_t *total, uint64_t per_kind[LEDGER_NKINDS])
{
	int k;

	if (total)
		*total = ALOADR(&l->use->denial_total);
	if (per_kind)
		for (k = 0; k < LEDGER_NKINDS; k++)
			per_kind[k] = ALOADR(&l->use->denial_kind[k]);
	return 0;
}

int ledger_foreach_denial(struct ledger *l, uint64_t *since,
			  int (*cb)(const struct ledger_denial_event *ev, void *arg), void *arg)
{
	uint64_t last = ALOAD(&l->use->denial_seq), seq;
	int ret;

	seq = *since + 1;
	if (last >= LEDGER_DENIAL_RING && seq < last - LEDGER_DENIAL_RING + 1)
		seq = last - LEDGER_DENIAL_RING + 1;
	for (; seq <= last; seq++) {
		const struct ring_ent *e = &l->use->ring[seq % LEDGER_DENIAL_RING];
		struct ledger_denial_event ev;

		if (ALOAD(&e->seq) != seq)
			continue;
		memcpy(&ev, (const void *)&e->ev, sizeof(ev));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (ALOAD(&e->seq) != seq || ev.seq != seq)
			continue;
		ev.d.job[sizeof(ev.d.job) - 1] = '\0';
		ev.d.scope.name[sizeof(ev.d.scope.name) - 1] = '\0';
		*since = seq;
		ret = cb(&ev, arg);
		if (ret)
			return ret;
	}
	*since = last > *since ? last : *since;
	return 0;
}
