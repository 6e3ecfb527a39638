// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Cgroup limits for the OCI hook and the Slurm plugin, through `rdmactl quota` subprocesses: all or none. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engines/cgquota.h"

extern char **environ;

/* environ with RDMACTL_LEDGER replaced by ledger (when set); the strings are environ's, the array malloc'd */
static char **make_env(const char *ledger, char *var)
{
	size_t n = 0, i, j = 0;
	char **env;

	while (environ && environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++)
		if (!ledger || strncmp(environ[i], LEDGER_ENV_PATH "=", sizeof(LEDGER_ENV_PATH)))
			env[j++] = environ[i];
	if (ledger)
		env[j++] = var;
	return env;
}

int cgquota_run(const char *exe, const char *ledger, char *const argv[], char *out, size_t outlen)
{
	char var[4096], sink[256];
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	int p[2], ret, status;
	char **env;
	pid_t pid;
	ssize_t n;

	if (out && outlen)
		out[0] = '\0';
	if (ledger)
		snprintf(var, sizeof(var), "%s=%s", LEDGER_ENV_PATH, ledger);
	env = make_env(ledger, var);
	if (!env)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC)) {
		ret = -errno;
		free(env);
		return ret;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	ret = posix_spawn(&pid, exe, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(p[1]);
	if (ret) {
		close(p[0]);
		return -ret;
	}
	for (;;) {
		char *dst = out && len + 1 < outlen ? out + len : sink;
		size_t room = out && len + 1 < outlen ? outlen - 1 - len : sizeof(sink);

		n = read(p[0], dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (dst != sink)
			len += n;
	}
	close(p[0]);
	if (out && outlen) {
		char *nl;

		out[len] = '\0';
		while (len && out[len - 1] == '\n')
			out[--len] = '\0';
		/* one line (a log's, slurmd's): the command's lines joined with "; " where they fit, else a space */
		while ((nl = strchr(out, '\n'))) {
			if (len + 2 < outlen) {
				memmove(nl + 2, nl + 1, len - (size_t)(nl + 1 - out) + 1);
				nl[0] = ';';
				nl[1] = ' ';
				len++;
			} else {
				*nl = ' ';
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* quota set/unset of one kind; 0 or the command's status, its output in out */
static int one(const char *exe, const char *ledger, const char *dir, int k, uint64_t value, bool set, char *out,
	       size_t outlen)
{
	char v[32], *argv[10];
	int n = 0;

	snprintf(v, sizeof(v), "%" PRIu64, value);
	argv[n++] = "rdmactl";
	argv[n++] = "quota";
	argv[n++] = set ? "set" : "unset";
	argv[n++] = (char *)ledger_kind_name(k);
	if (set)
		argv[n++] = v;
	argv[n++] = "--cgroup";
	argv[n++] = (char *)dir;
	if (k != LEDGER_WR)
		argv[n++] = "--kernel";
	argv[n] = NULL;
	return cgquota_run(exe, ledger, argv, out, outlen);
}

int cgquota_apply(const char *exe, const char *ledger, const char *dir, const uint64_t limit[LEDGER_NKINDS],
		  char *err, size_t errlen)
{
	char out[1024], ignore[256];
	int k, j, ret;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (limit[k] == LEDGER_UNLIMITED)
			continue;
		ret = one(exe, ledger, dir, k, limit[k], true, out, sizeof(out));
		if (!ret)
			continue;
		if (ret < 0)
			snprintf(err, errlen, "cannot run %s: %s", exe, strerror(-ret));
		else
			snprintf(err, errlen, "'rdmactl quota set %s %" PRIu64 " --cgroup %s%s' failed (exit %d): %s",
				 ledger_kind_name(k), limit[k], dir, k != LEDGER_WR ? " --kernel" : "", ret,
				 *out ? out : "no message");
		/* all or none: the failed kind may have reached the ledger before the kernel refused it */
		for (j = 0; j <= k; j++)
			if (limit[j] != LEDGER_UNLIMITED)
				one(exe, ledger, dir, j, 0, false, ignore, sizeof(ignore));
		return -1;
	}
	return 0;
}

int cgquota_remove(const char *exe, const char *ledger, const char *dir, const uint64_t limit[LEDGER_NKINDS],
		   char *err, size_t errlen)
{
	char out[1024];
	int k, ret, failed = 0;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (limit[k] == LEDGER_UNLIMITED)
			continue;
		ret = one(exe, ledger, dir, k, 0, false, out, sizeof(out));
		if (!ret)
			continue;
		failed++;
		if (ret < 0)
			snprintf(err, errlen, "cannot run %s: %s", exe, strerror(-ret));
		else
			snprintf(err, errlen, "'rdmactl quota unset %s --cgroup %s%s' failed (exit %d): %s",
				 ledger_kind_name(k), dir, k != LEDGER_WR ? " --kernel" : "", ret, *out ? out : "no message");
	}
	return failed;
}
