// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Kernel quotas: load and pin bpf/kq.bpf.c once, then read and write its limits through the pinned maps. */
#include "kq.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kq.skel.h"
#include "ledger.h"

#define PIN_ROOT "/sys/fs/bpf/rdmactl"

enum { M_LIMITS, M_USAGE, M_OBJS, M_STATE, M_EVENTS, M_NR };
static const char *const map_names[M_NR] = { "kq_limits", "kq_usage", "kq_objs", "kq_state", "kq_events" };
static const size_t map_vsize[M_NR] = { sizeof(struct kq_limit), sizeof(struct kq_usage), sizeof(struct kq_obj),
					sizeof(struct kq_state), sizeof(struct kq_event) };

struct kq {
	int fd[M_NR];
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
	return 0;
}

/*
 * The LSM programs that matter only while a limit exists (the refusals): pinned as programs, attached by
 * count_limits() at the first limit and detached after the last, so that without kernel limits no ioctl
 * and no file open on the host passes them. The others (the records) are always attached.
 */
static const char *const ondemand[] = { "kq_ioctl", "kq_ioctl_compat", "kq_open" };

static bool is_ondemand(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(ondemand) / sizeof(ondemand[0]); i++)
		if (!strcmp(name, ondemand[i]))
			return true;
	return false;
}

/* Load, attach and pin; called with the pin root locked and nothing pinned. */
static int load_and_pin(void)
{
	struct kq_bpf *skel;
	struct bpf_link *links[16];
	struct bpf_program *prog;
	char path[256];
	int err, n = 0, i;

	libbpf_set_print(libbpf_quiet);
	skel = kq_bpf__open_and_load();
	if (!skel)
		return fail(-errno, "cannot load the kernel quota programs: %s (is ib_uverbs loaded? "
			    "RDMACTL_KQ_DEBUG=1 shows libbpf's messages)", strerror(errno));
	if (mkdir(KQ_PIN_DIR, 0700) && errno != EEXIST) {
		err = fail(-errno, "cannot create %s: %s", KQ_PIN_DIR, strerror(errno));
		goto out;
	}
	/* programs and links first, maps last: a map set pinned means the programs behind it are in place */
	bpf_object__for_each_program(prog, skel->obj) {
		const char *name = bpf_program__name(prog);
		struct bpf_link *link;

		if (is_ondemand(name)) {
			snprintf(path, sizeof(path), "%s/prog_%s", KQ_PIN_DIR, name);
			err = bpf_program__pin(prog, path);
			if (err) {
				fail(err, "cannot pin %s: %s", path, strerror(-err));
				goto out;
			}
			continue;
		}
		if (n == (int)(sizeof(links) / sizeof(links[0]))) {
			err = fail(-E2BIG, "too many kernel quota programs");
			goto out;
		}
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			fail(err, "cannot attach %s: %s", name, strerror(-err));
			goto out;
		}
		links[n++] = link;
		snprintf(path, sizeof(path), "%s/link_%s", KQ_PIN_DIR, name);
		err = bpf_link__pin(link, path);
		if (err) {
			fail(err, "cannot pin %s: %s", path, strerror(-err));
			goto out;
		}
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
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]); /* the pins hold what must stay */
	kq_bpf__destroy(skel);
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
		lock = open(PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lock < 0 || flock(lock, LOCK_EX)) {
			err = fail(-errno, "cannot lock %s: %s", PIN_ROOT, strerror(errno));
			goto fail;
		}
	}
	err = open_pinned(q, false);
	if (err == -ENOENT && create) {
		for (i = 0; i < M_NR; i++)
			if (q->fd[i] >= 0)
				close(q->fd[i]), q->fd[i] = -1;
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

static bool charged_to(const struct kq_obj *o, const struct kq_scope *sc)
{
	int i;

	for (i = 0; i < o->n && i < KQ_MAXCHG; i++)
		if (o->sc[i].type == sc->type && o->sc[i].id == sc->id)
			return true;
	return false;
}

/*
 * Count into base what the scope's processes hold and was not charged to it, and mark those objects as
 * charged to it so that their destroy gives it back. An object destroyed meanwhile fails the BPF_EXIST
 * update and is left out, as it should be.
 */
static int rescan(struct kq *q, const struct kq_scope *sc, const char *dir, __s64 base[KQ_NK])
{
	struct idset cg = {};
	__u64 key, next, *prev = NULL;
	struct kq_obj o;
	int err = 0;

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
		if (charged_to(&o, sc) || o.n >= KQ_MAXCHG || o.kind >= KQ_NK)
			continue;
		o.sc[o.n++] = *sc;
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

/* Attach (want) or detach the on-demand programs; a set pinned by an older rdmactl stays as it is. */
static int sync_ondemand(bool want)
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
		if (!want && have && unlink(link) && errno != ENOENT)
			return fail(-errno, "cannot detach %s: %s", link, strerror(errno));
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
	}
	return 0;
}

/*
 * Count the limited scopes and their types for the programs, and attach the refusing programs while there
 * is one (under the pin root's lock: a set and an unset at once must not leave a limit without them).
 */
static int count_limits(struct kq *q)
{
	struct kq_scope key, next, *prev = NULL;
	struct kq_state st = {};
	__u32 zero = 0, n = 0, types = 0;
	int lock, err;

	lock = open(PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		err = fail(-errno, "cannot lock %s: %s", PIN_ROOT, strerror(errno));
		goto out;
	}
	while (!bpf_map_get_next_key(q->fd[M_LIMITS], prev, &next)) {
		key = next;
		prev = &key;
		n++;
		if (key.type < 32)
			types |= KQ_TYPE(key.type);
	}
	/* attached before the programs look for limits, detached after they stopped */
	if (n) {
		err = sync_ondemand(true);
		if (err)
			goto out;
	}
	/* the programs' event counter stays (they may add to it meanwhile: an event's seq could repeat) */
	bpf_map_lookup_elem(q->fd[M_STATE], &zero, &st);
	st.nlimits = n;
	st.types = types;
	if (bpf_map_update_elem(q->fd[M_STATE], &zero, &st, BPF_ANY)) {
		err = fail(-errno, "cannot update kq_state: %s", strerror(errno));
		goto out;
	}
	err = n ? 0 : sync_ondemand(false);
out:
	if (lock >= 0)
		close(lock);
	return err;
}

int kq_set(struct kq *q, const struct kq_scope *sc, const char *dir, unsigned int kind, uint64_t max)
{
	struct kq_limit lim;
	struct kq_usage use = {};
	int i, err;

	if (kind >= KQ_NK)
		return fail(-EINVAL, "kind %u is not counted by the kernel quota programs", kind);
	if (!bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim)) {
		lim.max[kind] = max;
		if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_EXIST))
			return fail(-errno, "cannot update the kernel limit: %s", strerror(errno));
		return 0;
	}
	/*
	 * A new scope: once its entries exist, the programs charge its new objects; then the rescan counts
	 * what it held before. The limit goes in last, so nothing is refused against a usage not yet known.
	 */
	for (i = 0; i < KQ_NK; i++) {
		lim.max[i] = KQ_UNLIMITED;
		lim.base[i] = 0;
	}
	if (bpf_map_update_elem(q->fd[M_USAGE], sc, &use, BPF_NOEXIST) && errno != EEXIST)
		return fail(-errno, "cannot add the scope to the kernel's usage: %s%s", strerror(errno),
			    errno == E2BIG ? " (too many scopes: remove unused ones with 'rdmactl quota gc')" : "");
	if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_NOEXIST))
		return fail(-errno, "cannot add the kernel limit: %s", strerror(errno));
	err = count_limits(q);
	if (err)
		return err;
	err = rescan(q, sc, dir, lim.base);
	if (err)
		return fail(err, "cannot count what the scope holds: %s", strerror(-err));
	lim.max[kind] = max;
	if (bpf_map_update_elem(q->fd[M_LIMITS], sc, &lim, BPF_EXIST))
		return fail(-errno, "cannot update the kernel limit: %s", strerror(errno));
	return 0;
}

int kq_get(struct kq *q, const struct kq_scope *sc, uint64_t max[KQ_NK], int64_t use[KQ_NK],
	   uint64_t refused[KQ_NK], uint64_t killed[KQ_NK])
{
	struct kq_limit lim;
	struct kq_usage u = {};
	int i;

	if (bpf_map_lookup_elem(q->fd[M_LIMITS], sc, &lim))
		return -ENOENT;
	bpf_map_lookup_elem(q->fd[M_USAGE], sc, &u);
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
	int err = 0;

	if (bpf_map_delete_elem(q->fd[M_LIMITS], sc) && errno != ENOENT)
		err = fail(-errno, "cannot remove the kernel limit: %s", strerror(errno));
	if (bpf_map_delete_elem(q->fd[M_USAGE], sc) && errno != ENOENT && !err)
		err = fail(-errno, "cannot remove the kernel usage: %s", strerror(errno));
	if (!err)
		err = count_limits(q);
	return err;
}

struct gc_arg {
	struct idset cg;
	struct kq_scope *gone;
	size_t ngone;
	int err;
};

static int gc_scope(const struct kq_scope *sc, void *arg)
{
	struct gc_arg *g = arg;
	char path[64];
	bool dead = false;

	if (sc->type == KQ_SCOPE_PID) {
		snprintf(path, sizeof(path), "/proc/%llu", (unsigned long long)sc->id);
		dead = access(path, F_OK) && errno == ENOENT;
	} else if (sc->type == KQ_SCOPE_CGROUP) {
		dead = !idset_has(&g->cg, sc->id);
	}
	if (!dead)
		return 0;
	g->gone = realloc(g->gone, (g->ngone + 1) * sizeof(*g->gone));
	if (!g->gone)
		return g->err = -ENOMEM;
	g->gone[g->ngone++] = *sc;
	return 0;
}

int kq_gc(struct kq *q, const char *cgroot, unsigned int *removed)
{
	struct gc_arg g = {};
	size_t i;
	int err;

	*removed = 0;
	err = collect_cgroups(cgroot, &g.cg, 0);
	if (!err)
		err = kq_foreach(q, gc_scope, &g);
	if (!err)
		err = g.err;
	for (i = 0; !err && i < g.ngone; i++) {
		err = kq_remove(q, &g.gone[i]);
		if (!err)
			(*removed)++;
	}
	free(g.gone);
	free(g.cg.v);
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
