// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger's two files: names, errors, the header, create, map, validate, open and close. */
#include "ledger/internal.h"

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

#include "core/util.h"

const char *const ledger_kind_names[] = {
#define X(name, NAME, led, ...) KINDS_IF(led, #name, )
	KINDS(X)
#undef X
	NULL,
};

__thread char ledger_errbuf[512];

int ledger_seterr(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ledger_errbuf, sizeof(ledger_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *ledger_error(void)
{
	return ledger_errbuf[0] ? ledger_errbuf : "no error";
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

/* ---- file format -------------------------------------------------------------------------------- */

uint32_t ledger_fnv1a(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= *c++;
		h *= 16777619u;
	}
	return h;
}

/* The usage file of a ledger of nprocs process slots. */
static size_t usage_size(uint32_t nprocs)
{
	return sizeof(struct usage) + (size_t)nprocs * sizeof(struct slot);
}

static void hdr_fill(struct lhdr *h, const char *magic, size_t size, uint64_t id, uint64_t created,
		     uint32_t nprocs)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, magic, 8);
	h->version = LEDGER_VERSION;
	h->hdr_size = sizeof(*h);
	h->file_size = size;
	h->nprocs = nprocs;
	h->njobs = LEDGER_MAX_JOBS;
	h->ncgroups = LEDGER_MAX_CGROUPS;
	h->npidlimits = LEDGER_MAX_PIDLIMITS;
	h->nring = LEDGER_DENIAL_RING;
	h->nkinds = LEDGER_NKINDS;
	h->ledger_id = id;
	h->created_ns = created;
	h->checksum = ledger_fnv1a(h, offsetof(struct lhdr, checksum));
}

/* A header of this format; nprocs 0: any number of process slots within range (the policy file). */
static int hdr_check(const struct lhdr *h, const char *magic, size_t size, const char *path, uint32_t nprocs)
{
	if (memcmp(h->magic, magic, 8))
		return ledger_seterr(-EBADMSG, "%s: not an rdmactl ledger file (bad magic)", path);
	if (h->checksum != ledger_fnv1a(h, offsetof(struct lhdr, checksum)))
		return ledger_seterr(-EBADMSG, "%s: corrupted ledger header (checksum mismatch)", path);
	if (h->version != LEDGER_VERSION)
		return ledger_seterr(-EPROTO, "%s: ledger format version %u, this rdmactl reads version %u", path,
			      h->version, LEDGER_VERSION);
	if (h->hdr_size != sizeof(*h) || h->file_size != size || (nprocs ? h->nprocs != nprocs : !h->nprocs || h->nprocs > LEDGER_PROCS_MAX) ||
	    h->njobs != LEDGER_MAX_JOBS || h->ncgroups != LEDGER_MAX_CGROUPS ||
	    h->npidlimits != LEDGER_MAX_PIDLIMITS || h->nring != LEDGER_DENIAL_RING || h->nkinds != LEDGER_NKINDS)
		return ledger_seterr(-EBADMSG, "%s: ledger header describes a different layout", path);
	return 0;
}

static int map_file(const char *path, const char *magic, size_t size, bool rw, uint32_t nprocs, void **out)
{
	struct stat st;
	void *p;
	int fd, err;

	fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			return ledger_seterr(err, "%s: no ledger (create one with 'rdmactl quota init')", path);
		if (err == -EACCES || err == -EPERM)
			return ledger_seterr(-EACCES, "%s: permission denied", path);
		return ledger_seterr(err, "%s: %s", path, strerror(-err));
	}
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return ledger_seterr(err, "%s: %s", path, strerror(-err));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ledger_seterr(-EBADMSG, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size < sizeof(struct lhdr)) {
		close(fd);
		return ledger_seterr(-EBADMSG, "%s: truncated ledger (%lld bytes)", path, (long long)st.st_size);
	}
	if ((uint64_t)st.st_size != size) {
		/* read the header to tell a foreign file or another version from a truncation */
		struct lhdr h;
		bool whole = pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h);

		close(fd);
		if (whole && memcmp(h.magic, magic, 8))
			return ledger_seterr(-EBADMSG, "%s: not an rdmactl ledger file (bad magic)", path);
		if (whole && h.checksum == ledger_fnv1a(&h, offsetof(struct lhdr, checksum)) && h.version != LEDGER_VERSION)
			return ledger_seterr(-EPROTO, "%s: ledger format version %u, this rdmactl reads version %u", path,
				      h.version, LEDGER_VERSION);
		return ledger_seterr(-EBADMSG, "%s: truncated or resized ledger (%lld bytes, expected %zu)", path,
			      (long long)st.st_size, size);
	}
	p = mmap(NULL, size, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	err = -errno;
	close(fd);
	if (p == MAP_FAILED)
		return ledger_seterr(err, "%s: mmap: %s", path, strerror(-err));
	err = hdr_check(p, magic, size, path, nprocs);
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
		return ledger_seterr(-ENAMETOOLONG, "%s: path too long", path);
	return 0;
}

static int write_new(const char *path, const char *magic, size_t size, mode_t mode, uint64_t id, uint64_t created,
		     uint32_t nprocs, void (*fill)(void *, uint32_t))
{
	char tmp[PATH_MAX + 16];
	void *p;
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return ledger_seterr(-ENAMETOOLONG, "%s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		return ledger_seterr(err, "%s: cannot create: %s", path, strerror(-err));
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
	fill(p, nprocs);
	hdr_fill(p, magic, size, id, created, nprocs);
	munmap(p, size);
	if (fsync(fd) && errno != EINVAL) {
		err = -errno;
		goto err_fd;
	}
	close(fd);
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return ledger_seterr(err, "%s: cannot create: %s", path, strerror(-err));
	}
	return 0;
err_fd:
	close(fd);
	unlink(tmp);
	return ledger_seterr(err, "%s: cannot create: %s", path, strerror(-err));
}

static void fill_policy(void *p, uint32_t nprocs)
{
	struct policy *pol = p;
	int i, k;

	(void)nprocs;
	for (k = 0; k < LEDGER_NKINDS; k++)
		pol->global_limit[k] = LEDGER_UNLIMITED;
	for (i = 0; i < LEDGER_MAX_CGROUPS; i++)
		for (k = 0; k < LEDGER_NKINDS; k++)
			pol->cg[i].limit[k] = LEDGER_UNLIMITED;
	for (i = 0; i < LEDGER_MAX_PIDLIMITS; i++)
		for (k = 0; k < LEDGER_NKINDS; k++)
			pol->pid[i].limit[k] = LEDGER_UNLIMITED;
}

static void fill_usage(void *p, uint32_t nprocs)
{
	struct usage *u = p;
	uint32_t i;

	u->gen = 1; /* a fresh handle's view (0) is stale */
	for (i = 0; i < nprocs; i++)
		u->slots[i].job = -1;
}

int ledger_init(const char *path)
{
	return ledger_init_procs(path, LEDGER_DEFAULT_PROCS);
}

int ledger_init_procs(const char *path, unsigned int nprocs)
{
	char upath[PATH_MAX];
	uint64_t id, created = clock_rt_ns();
	int err;

	if (!path)
		path = ledger_default_path();
	err = usage_path(path, upath, sizeof(upath));
	if (err)
		return err;
	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
		id = created ^ ((uint64_t)getpid() << 32);
	if (!nprocs || nprocs > LEDGER_PROCS_MAX)
		return ledger_seterr(-EINVAL, "%u process slots: the ledger holds 1 to %u", nprocs, LEDGER_PROCS_MAX);
	err = write_new(upath, USAGE_MAGIC, usage_size(nprocs), 0666, id, created, nprocs, fill_usage);
	if (err)
		return err;
	return write_new(path, POLICY_MAGIC, sizeof(struct policy), 0644, id, created, nprocs, fill_policy);
}

static int open_at(void *mem, const char *path, unsigned int flags, struct ledger **out)
{
	char upath[PATH_MAX];
	struct ledger *l;
	void *p;
	int err;

	ledger_errbuf[0] = '\0';
	if (!path)
		path = ledger_default_path();
	if (strlen(path) >= PATH_MAX - sizeof(USAGE_SUFFIX))
		return ledger_seterr(-ENAMETOOLONG, "%s: path too long", path);
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
		return ledger_seterr(-ENOMEM, "out of memory");
	l->own = !mem;
	l->path = strdup(path);
	if (!l->path) {
		if (l->own)
			free(l);
		return ledger_seterr(-ENOMEM, "out of memory");
	}
	pthread_mutex_init(&l->mtx, NULL);
	l->slot = -1;
	l->fast_slot = NULL;
	l->job = -1;
	l->policy_rw = flags & LEDGER_POLICY_RW;
	err = map_file(path, POLICY_MAGIC, sizeof(struct policy), l->policy_rw, 0, &p);
	if (err)
		goto err_free;
	l->pol = p;
	/* the number of slots: the policy's header (checked, read-only to most), the usage file's must agree */
	l->nprocs = l->pol->h.nprocs;
	l->usage_rw = true;
	err = map_file(upath, USAGE_MAGIC, usage_size(l->nprocs), true, l->nprocs, &p);
	if (err == -EACCES) {
		l->usage_rw = false;
		err = map_file(upath, USAGE_MAGIC, usage_size(l->nprocs), false, l->nprocs, &p);
	}
	if (err)
		goto err_pol;
	l->use = p;
	if (l->use->h.ledger_id != l->pol->h.ledger_id) {
		err = ledger_seterr(-EBADMSG, "%s does not belong to %s (recreate with 'rdmactl quota init')", upath, path);
		goto err_use;
	}
	*out = l;
	return 0;
err_use:
	munmap(l->use, usage_size(l->nprocs));
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
		return ledger_seterr(-EINVAL, "ledger handle memory missing or misaligned");
	return open_at(mem, path, flags, out);
}

void ledger_close(struct ledger *l)
{
	if (!l)
		return;
	munmap(l->use, usage_size(l->nprocs));
	munmap(l->pol, sizeof(struct policy));
	pthread_mutex_destroy(&l->mtx);
	free(l->path);
	if (l->own)
		free(l);
}

/* A ledger kind is the kind of the same row of lib/core/kinds.h (the rows marked led come first). */
#define X(name, NAME, led, ...) KINDS_IF(led, _Static_assert((int)LEDGER_##NAME == (int)KIND_##NAME, #name);)
KINDS(X)
#undef X
