// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ledger: who holds a slot (a process and its start time), and cgroup paths. */
#include "ledger/internal.h"
#include "core/proc.h"

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

/* ---- processes ---------------------------------------------------------------------------------- */

int ledger_pid_start_time(pid_t pid, uint64_t *out)
{
	bool zombie;

	if (pid <= 0)
		return -ESRCH;
	return proc_stat_start(pid, out, &zombie);
}

bool ledger_pid_alive(pid_t pid, uint64_t start)
{
	uint64_t st;
	bool zombie = false;

	if (pid <= 0)
		return false;
	if (proc_stat_start(pid, &st, &zombie))
		return false;
	return !zombie && st == start;
}

uint64_t ledger_pack_owner(pid_t pid, uint64_t start)
{
	return (uint64_t)(uint32_t)pid | (start & 0xffffffffull) << 32;
}

bool ledger_owner_alive(uint64_t owner)
{
	pid_t pid = (pid_t)(uint32_t)owner;
	uint64_t st;
	bool zombie = false;

	if (pid <= 0 || proc_stat_start(pid, &st, &zombie))
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
void ledger_self_cgroup(char *out, size_t len)
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
bool ledger_cg_covers(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (!strcmp(a, "/"))
		return true;
	return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/');
}

