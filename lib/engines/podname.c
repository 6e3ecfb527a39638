// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The names of Kubernetes pods by UID under /run/rdmactl/pods: written by the OCI hook, read by export and quota show. */
#include "engines/podname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cgroup.h"

#define LOWER_DIGIT "abcdefghijklmnopqrstuvwxyz0123456789"

const char *podname_dir(void)
{
	const char *env = getenv(PODNAME_ENV_DIR);

	return env && *env ? env : PODNAME_DIR;
}

static bool only(const char *s, size_t min, size_t max, const char *set)
{
	size_t n = strlen(s);

	return n >= min && n <= max && strspn(s, set) == n;
}

bool podname_uid_ok(const char *uid)
{
	return only(uid, 1, OCISTATE_POD_UID_MAX - 1, "0123456789abcdef-");
}

/* RFC 1123: a letter or digit at both ends */
static bool alnum_ends(const char *s)
{
	size_t n = strlen(s);

	return n && strchr(LOWER_DIGIT, s[0]) && strchr(LOWER_DIGIT, s[n - 1]);
}

bool podname_ns_ok(const char *ns)
{
	return only(ns, 1, OCISTATE_POD_NS_MAX - 1, LOWER_DIGIT "-") && alnum_ends(ns);
}

bool podname_name_ok(const char *name)
{
	return only(name, 1, OCISTATE_POD_NAME_MAX - 1, LOWER_DIGIT ".-") && alnum_ends(name);
}

/* One directory, 0755 whatever the umask: the exporter, which may not be root, reads the files. */
static int mkdir_0755(const char *dir)
{
	if (!mkdir(dir, 0755))
		return chmod(dir, 0755) ? -errno : 0;
	return errno == EEXIST ? 0 : -errno;
}

/* mkdir -p */
static int mkdirs(const char *path)
{
	char buf[PATH_MAX], *s;
	int ret;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		ret = mkdir_0755(buf);
		if (ret)
			return ret;
		*s = '/';
	}
	return mkdir_0755(buf);
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int podname_write(const char *uid, const char *ns, const char *name)
{
	char tmp[PATH_MAX], file[PATH_MAX], text[OCISTATE_POD_NS_MAX + OCISTATE_POD_NAME_MAX + 2];
	const char *dir = podname_dir();
	int fd, ret;

	if (!podname_uid_ok(uid) || !podname_ns_ok(ns) || !podname_name_ok(name))
		return -EINVAL;
	if (snprintf(file, sizeof(file), "%s/%s", dir, uid) >= (int)sizeof(file) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, uid) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	ret = mkdirs(dir);
	if (ret)
		return ret;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	snprintf(text, sizeof(text), "%s/%s\n", ns, name);
	ret = write_all(fd, text, strlen(text));
	if (!ret && fchmod(fd, 0644))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, file))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int podname_read(const char *uid, struct podname *out)
{
	char file[PATH_MAX], text[OCISTATE_POD_NS_MAX + OCISTATE_POD_NAME_MAX + 2], *slash;
	ssize_t n;
	size_t len = 0;
	int fd, ret = 0;

	memset(out, 0, sizeof(*out));
	if (!podname_uid_ok(uid))
		return -EINVAL;
	if (snprintf(file, sizeof(file), "%s/%s", podname_dir(), uid) >= (int)sizeof(file))
		return -ENAMETOOLONG;
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* one more byte than the longest file: a longer one is not ours */
	while (len < sizeof(text)) {
		n = read(fd, text + len, sizeof(text) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = errno == EISDIR ? -EINVAL : -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (ret)
		return ret;
	if (!len || len == sizeof(text) || text[len - 1] != '\n' || memchr(text, '\0', len))
		return -EINVAL;
	text[len - 1] = '\0';
	slash = strchr(text, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	if (!podname_ns_ok(text) || !podname_name_ok(slash + 1))
		return -EINVAL;
	memcpy(out->ns, text, strlen(text) + 1); /* the checks bound both */
	memcpy(out->name, slash + 1, strlen(slash + 1) + 1);
	return 0;
}

int podname_remove(const char *uid)
{
	char file[PATH_MAX];

	if (!podname_uid_ok(uid))
		return -EINVAL;
	if (snprintf(file, sizeof(file), "%s/%s", podname_dir(), uid) >= (int)sizeof(file))
		return -ENAMETOOLONG;
	if (unlink(file) && errno != ENOENT)
		return -errno;
	return 0;
}

/* --- gc ---------------------------------------------------------------------------------------- */

struct uids {
	char (*v)[OCISTATE_POD_UID_MAX];
	size_t n, cap;
};

/*
 * The pod UIDs the cgroups at and below path (rel: its part below the mount) name; below a pod's cgroup
 * there is no other pod. A directory gone meanwhile is skipped; any other error stops the walk.
 */
static int walk(char *path, size_t len, size_t rel, struct uids *u, int depth)
{
	struct cgroup_ids ids;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	cgroup_ids(path + rel, &ids);
	if (ids.pod_uid[0]) {
		if (strlen(ids.pod_uid) >= sizeof(u->v[0]))
			return 0; /* a podman pod's 64 hex digits: no file of ours has such a name */
		if (u->n == u->cap) {
			size_t cap = u->cap ? 2 * u->cap : 64;
			void *v = realloc(u->v, cap * sizeof(u->v[0]));

			if (!v)
				return -ENOMEM;
			u->v = v;
			u->cap = cap;
		}
		snprintf(u->v[u->n++], sizeof(u->v[0]), "%s", ids.pod_uid);
		return 0;
	}
	if (depth > 32)
		return 0;
	d = opendir(path);
	if (!d)
		return depth && errno == ENOENT ? 0 : -errno;
	while (!ret && (errno = 0, de = readdir(d))) {
		size_t n = strlen(path);

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (n + 1 + strlen(de->d_name) >= len)
			continue; /* deeper than PATH_MAX: not a pod's */
		path[n] = '/';
		strcpy(path + n + 1, de->d_name);
		ret = walk(path, len, rel, u, depth + 1);
		path[n] = '\0';
	}
	if (!ret && errno && !de)
		ret = -errno;
	closedir(d);
	return ret;
}

static int cmp_uid(const void *a, const void *b)
{
	return strcmp(a, b);
}

int podname_gc(const char *cgroot, unsigned int *removed)
{
	char path[PATH_MAX], file[PATH_MAX], uid[OCISTATE_POD_UID_MAX];
	const char *dir = podname_dir(), *name, *dot;
	struct uids u = { 0 };
	struct dirent *de;
	DIR *d;
	size_t k;
	int ret;

	*removed = 0;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	if (snprintf(path, sizeof(path), "%s", cgroot) >= (int)sizeof(path)) {
		closedir(d);
		return -ENAMETOOLONG;
	}
	ret = walk(path, sizeof(path), strlen(path), &u, 0);
	if (ret) {
		closedir(d);
		free(u.v);
		return ret;
	}
	qsort(u.v, u.n, sizeof(u.v[0]), cmp_uid);
	while ((de = readdir(d))) {
		/* UID, or .UID.XXXXXX: a temporary file a writer killed half way left */
		name = de->d_name[0] == '.' ? de->d_name + 1 : de->d_name;
		dot = de->d_name[0] == '.' ? strchr(name, '.') : name + strlen(name);
		k = dot ? (size_t)(dot - name) : 0;
		if (!k || k >= sizeof(uid))
			continue;
		memcpy(uid, name, k);
		uid[k] = '\0';
		if (!podname_uid_ok(uid) || bsearch(uid, u.v, u.n, sizeof(u.v[0]), cmp_uid))
			continue;
		if (snprintf(file, sizeof(file), "%s/%s", dir, de->d_name) >= (int)sizeof(file))
			continue;
		if (unlink(file)) {
			if (errno == ENOENT)
				continue;
			ret = -errno;
			break;
		}
		if (de->d_name[0] != '.')
			(*removed)++;
	}
	closedir(d);
	free(u.v);
	return ret;
}
