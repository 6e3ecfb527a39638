// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Readers of /proc: a process's comm, its cgroup v2 path, its start time. */
#include "core/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

void proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

int proc_maps_file(pid_t pid, const char *base)
{
	char path[64], line[PATH_MAX + 128];
	size_t n = strlen(base);
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strrchr(line, '/');
		size_t len;

		line[strcspn(line, "\n")] = '\0';
		len = p ? strlen(p + 1) : 0;
		if (len == n && !memcmp(p + 1, base, n)) {
			ret = 1;
			break;
		}
	}
	if (ferror(f))
		ret = -1;
	fclose(f);
	return ret;
}

int proc_cgroup(pid_t pid, char *buf, size_t len)
{
	char path[64], line[4096 + 8];
	int ret = -ENOENT;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno; /* no /proc/PID: the process is gone */
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		if (strlen(line + 3) >= len) {
			ret = -ENAMETOOLONG;
		} else {
			snprintf(buf, len, "%s", line + 3);
			ret = 0;
		}
		break;
	}
	fclose(f);
	return ret;
}

int proc_stat_start(pid_t pid, uint64_t *start, bool *zombie)
{
	char buf[1024], *p;
	unsigned long long st;
	int i;

	if (proc_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return -ESRCH;
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

ssize_t path_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}

ssize_t proc_read(pid_t pid, const char *file, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	return path_read(path, buf, len);
}

bool lsm_active(const char *lsm, char *why, size_t len)
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
	snprintf(why, len, "%s reads '%s', without %s", path, buf, lsm);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, lsm))
			return true;
	return false;
}

pid_t proc_tgid(pid_t pid)
{
	char buf[2048], *line;
	int tgid;

	if (proc_read(pid, "status", buf, sizeof(buf)) < 0)
		return pid;
	line = strstr(buf, "\nTgid:");
	if (!line || sscanf(line + 1, "Tgid: %d", &tgid) != 1 || tgid <= 0)
		return pid;
	return (pid_t)tgid;
}
