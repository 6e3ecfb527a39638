// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper for kernel quotas: run a command (rdmactl quota set ... --kernel) and SIGKILL it in the middle of
 * the population, the walk that records what a new scope's processes already hold (lib/kq/kqload.c,
 * kq_populate). It watches the programs' global state (the pinned kq_state, mapped read-only) and kills the
 * command once kq_state.populating is set and the table of objects holds N records more than when it
 * started (the walk has recorded N of them). With -r USEC, in the rescan instead (lib/kq/kq.c: populating
 * KQ_RESCANNING: the records other scopes' limits made are given the new scope), USEC microseconds after it
 * was first seen.
 *   kqkillpop [-n N | -r USEC] -- CMD [ARGS...]      (default N 1000)
 * Prints "killed populating=P records=+R" (what it saw at the kill) and then "dead populating=P" (after the
 * command's death: 1 when it died before kq_populate cleared the flag), exit 0; or "missed status=S
 * records=+R" when the command ended first, exit 3. Exit 1: kq_state could not be mapped or CMD not run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "../../../bpf/kq.h"

#define STATE "/sys/fs/bpf/rdmactl/kq/kq_state"

int main(int argc, char **argv)
{
	volatile struct kq_state *st;
	long long want = 1000, base, rec, rescan = -1, seen = 0;
	struct timespec ts;
	int opt, fd, status;
	unsigned long spins = 0;
	pid_t pid, r;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			want = atoll(optarg);
		else if (opt == 'r')
			rescan = atoll(optarg) * 1000;
		else
			goto usage;
	}
	if (optind >= argc)
		goto usage;
	fd = bpf_obj_get(STATE);
	if (fd < 0) {
		fprintf(stderr, "kqkillpop: %s: %s\n", STATE, strerror(errno));
		return 1;
	}
	st = mmap(NULL, sizeof(struct kq_state), PROT_READ, MAP_SHARED, fd, 0);
	if (st == MAP_FAILED) {
		fprintf(stderr, "kqkillpop: mmap %s: %s\n", STATE, strerror(errno));
		return 1;
	}
	base = st->nobjs;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	for (;;) {
		if (rescan >= 0 && st->populating == KQ_RESCANNING) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			if (!seen)
				seen = ts.tv_sec * 1000000000LL + ts.tv_nsec;
			if (ts.tv_sec * 1000000000LL + ts.tv_nsec - seen >= rescan && st->populating == KQ_RESCANNING) {
				kill(pid, SIGKILL);
				printf("killed rescanning populating=%u after %lld us\n", st->populating,
				       (ts.tv_sec * 1000000000LL + ts.tv_nsec - seen) / 1000);
				break;
			}
		} else if (rescan < 0 && st->populating && st->nobjs - base >= want) {
			rec = st->nobjs - base;
			kill(pid, SIGKILL);
			printf("killed populating=%u records=+%lld\n", st->populating, rec);
			break;
		}
		/* now and then: has the command ended without the population being seen? */
		if (!(++spins & 1023)) {
			r = waitpid(pid, &status, WNOHANG);
			if (r == pid) {
				printf("missed status=%d records=+%lld\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
				       (long long)(st->nobjs - base));
				return 3;
			}
		}
	}
	waitpid(pid, &status, 0);
	printf("dead populating=%u\n", st->populating);
	return 0;
usage:
	fprintf(stderr, "usage: kqkillpop [-n N | -r USEC] -- CMD [ARGS...]\n");
	return 2;
}
