// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* cgroup v2 path resolution shared by quota --cgroup and run --cgroup. */
#include "core/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <linux/magic.h>

void cgroup2_root(char *out, size_t len)
{
	char line[4096], mnt[PATH_MAX];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	snprintf(out, len, "%s", CGROUP_ROOT_DEFAULT);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
		if (!strstr(line, " - cgroup2 "))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
			snprintf(out, len, "%s", mnt);
			break;
		}
	}
	fclose(f);
}

int cgroup_resolve(const char *arg, char *root, size_t rootlen, char *dir, size_t dirlen)
{
	char full[PATH_MAX], real[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	size_t n;

	cgroup2_root(root, rootlen);
	if (!*arg)
		return -EINVAL;
	if (arg[0] == '/') {
		if (strlen(arg) >= sizeof(full))
			return -ENAMETOOLONG;
		snprintf(full, sizeof(full), "%s", arg);
	} else if ((size_t)snprintf(full, sizeof(full), "%s/%s", root, arg) >= sizeof(full)) {
		return -ENAMETOOLONG;
	}
	if (!realpath(full, real) || stat(real, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || statfs(real, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC)
		return -ENOTDIR;
	n = strlen(root);
	if (strncmp(real, root, n) || (real[n] != '/' && real[n] != '\0'))
		return -EXDEV;
	if (strlen(real) >= dirlen)
		return -ENAMETOOLONG;
	snprintf(dir, dirlen, "%s", real);
	return 0;
}

static bool dir_by_id(const char *dir, uint64_t id, char *out, size_t len, int depth)
{
	struct dirent *de;
	struct stat st;
	bool found = false;
	DIR *d;

	if (!stat(dir, &st) && st.st_ino == id) {
		snprintf(out, len, "%s", dir);
		return true;
	}
	if (depth > 32 || !(d = opendir(dir)))
		return false;
	while (!found && (de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= sizeof(sub))
			continue;
		found = dir_by_id(sub, id, out, len, depth + 1);
	}
	closedir(d);
	return found;
}

bool cgroup_dir_by_id(const char *dir, uint64_t id, char *out, size_t len)
{
	return dir_by_id(dir, id, out, len, 0);
}

/* --- identities in cgroup paths: Slurm jobs, Kubernetes pods, containers ---------------------------- */

static bool all_of(const char *s, size_t n, const char *set)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return n > 0;
}

#define HEX "0123456789abcdefABCDEF"

/* "pod<uid>" (cgroupfs) or "kubepods[-QOS]-pod<uid_>.slice" (systemd): the uid with '-', else false. */
static bool pod_uid(const char *c, size_t n, char *out, size_t len)
{
	const char *p = NULL;
	size_t i, k;

	if (n > 3 && !strncmp(c, "pod", 3))
		p = c + 3;
	else if (n > 8 && !strncmp(c, "kubepods", 8))
		for (i = 8; i + 4 < n && !p; i++)
			if (!strncmp(c + i, "-pod", 4))
				p = c + i + 4;
	if (!p)
		return false;
	k = (size_t)(c + n - p);
	if (k > 6 && !strncmp(p + k - 6, ".slice", 6))
		k -= 6;
	/* a UUID (36), or the 32 hex digits of a static pod's hash */
	if (k < 32 || k > 36 || k >= len || !all_of(p, k, HEX "-_"))
		return false;
	for (i = 0; i < k; i++)
		out[i] = p[i] == '_' ? '-' : p[i];
	out[k] = '\0';
	return true;
}

/* "<hex>" (cgroupfs) or "RUNTIME-<hex>.scope" (systemd; cri-containerd, crio, docker): the hex id. */
static bool container_id(const char *c, size_t n, char *out, size_t len)
{
	const char *dash;
	size_t k;

	if (n > 6 && !strncmp(c + n - 6, ".scope", 6))
		n -= 6;
	if (memmem(c, n, "conmon", 6))
		return false; /* CRI-O's monitor process, not the container */
	dash = memrchr(c, '-', n);
	if (dash) {
		k = (size_t)(c + n - dash - 1);
		c = dash + 1;
	} else {
		k = n;
	}
	if (k < 12 || k > 64 || k >= len || !all_of(c, k, HEX))
		return false;
	memcpy(out, c, k);
	out[k] = '\0';
	return true;
}

/* podman: "libpod-<hex>[.scope]" (not libpod-conmon-...), a container */
static bool libpod_container(const char *c, size_t n, char *out, size_t len)
{
	if (n < 7 || strncmp(c, "libpod-", 7) || memmem(c, n, "conmon", 6))
		return false;
	return container_id(c + 7, n - 7, out, len);
}

/* podman's pod: "<64 hex>" (cgroupfs, under libpod_parent) or "machine-libpod_pod_<hex>.slice" (systemd) */
static bool libpod_pod(const char *c, size_t n, char *out, size_t len)
{
	if (n > 19 && !strncmp(c, "machine-libpod_pod_", 19)) {
		c += 19;
		n -= 19;
		if (n > 6 && !strncmp(c + n - 6, ".slice", 6))
			n -= 6;
	}
	if (n != 64 || n >= len || !all_of(c, n, HEX))
		return false;
	memcpy(out, c, n);
	out[n] = '\0';
	return true;
}

void cgroup_ids(const char *path, struct cgroup_ids *ids)
{
	const char *c = path, *prev = NULL;
	bool kube = false, pod = false, below_pod = false;
	size_t n, prevn = 0;

	memset(ids, 0, sizeof(*ids));
	while (c && *c) {
		while (*c == '/')
			c++;
		n = strcspn(c, "/");
		if (!n)
			break;
		if (!ids->slurm_job_id[0] && n > 4 && n - 4 < sizeof(ids->slurm_job_id) && !strncmp(c, "job_", 4) &&
		    all_of(c + 4, n - 4, "0123456789")) {
			memcpy(ids->slurm_job_id, c + 4, n - 4);
			ids->slurm_job_id[n - 4] = '\0';
		}
		if (n >= 8 && !strncmp(c, "kubepods", 8))
			kube = true;
		if (below_pod) {
			container_id(c, n, ids->container_id, sizeof(ids->container_id));
			below_pod = false;
		} else if (kube && !pod && pod_uid(c, n, ids->pod_uid, sizeof(ids->pod_uid))) {
			pod = below_pod = true;
		} else if (!kube && !ids->pod_uid[0] &&
			   ((prev && prevn == 13 && !strncmp(prev, "libpod_parent", 13)) ||
			    (n > 19 && !strncmp(c, "machine-libpod_pod_", 19))) &&
			   libpod_pod(c, n, ids->pod_uid, sizeof(ids->pod_uid))) {
			/* podman's pod: its cgroup alone, or above its containers */
		} else if (!kube && !ids->container_id[0]) {
			libpod_container(c, n, ids->container_id, sizeof(ids->container_id));
		}
		prev = c;
		prevn = n;
		c += n;
	}
}
