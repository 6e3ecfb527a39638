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

/*
 * One file of the ledger that is not root's made root's, with its mode; the owner it had into *was. A file
 * that is root's already is left as it is (a site may have given the usage file a group of its own).
 */
static int own_file(const char *path, mode_t mode, uid_t *was)
{
	struct stat st;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return ledger_seterr(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st))
		err = -errno;
	else if (st.st_uid) {
		*was = st.st_uid;
		if (fchown(fd, 0, 0) || fchmod(fd, mode))
			err = -errno;
	}
	close(fd);
	return err ? ledger_seterr(err, "%s: cannot make it root's: %s", path, strerror(-err)) : 0;
}

int ledger_take_over(struct ledger *l, uid_t *was)
{
	char upath[PATH_MAX];
	int err;

	*was = 0;
	if (geteuid())
		return ledger_seterr(-EPERM, "%s: only root takes a ledger over", l->path);
	if ((size_t)snprintf(upath, sizeof(upath), "%s%s", l->path, USAGE_SUFFIX) >= sizeof(upath))
		return ledger_seterr(-ENAMETOOLONG, "%s: path too long", l->path);
	err = own_file(l->path, 0644, was);
	if (!err)
		err = own_file(upath, 0666, was);
	return err;
}

/* Is cgroup path a equal to or an ancestor of b? */
bool ledger_cg_covers(const char *a, const char *b)
{
	size_t n = strlen(a);

	if (!strcmp(a, "/"))
		return true;
	return !strncmp(a, b, n) && (b[n] == '\0' || b[n] == '/');
}

