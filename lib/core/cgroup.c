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
