// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Readers of /proc: a process's comm and its cgroup v2 path. */
#include "proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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
		return -errno;
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
