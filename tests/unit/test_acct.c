// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of the interceptor's accounting (preload/acct.c) on a temp ledger: what its log lines say. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The ledger's internals are needed to take every slot deterministically (as live processes would), and
 * acct.c's to reach its handle: compile both sources into the test, as test_ledger does with ledger.c.
 */
#include "ledger/internal.h"
#include "../../preload/acct.c"

#include "unit.h"

static char dir[64];
static char lpath[128], logpath[128];

static void read_log(char *buf, size_t len)
{
	int fd = open(logpath, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * RDMACTL_FAIL=closed and a ledger error that is not a quota decision: a forked child that finds no free
 * slot cannot attach, and its first queue is refused. The line names the queue (the reserve's first kind is
 * the WR-depth check, which the line used to name: "refused wr").
 */
static void test_closed_error_names_the_queue(void)
{
	struct ledger *l = NULL;
	char log[1024], want[128];
	int status, i;
	pid_t pid;

	CHECK(ledger_init(lpath) == 0, "init: %s", ledger_error());
	CHECK(ledger_open(lpath, LEDGER_POLICY_RW, &l) == 0 && ledger_job_create(l, "acct", NULL) == 0, "job");
	setenv("RDMACTL_LEDGER", lpath, 1);
	setenv("RDMACTL_JOB", "acct", 1);
	setenv("RDMACTL_FAIL", "closed", 1);
	setenv("RDMACTL_LOG_FILE", logpath, 1);
	acct_init();
	CHECK(ledger && ledger_attached(ledger), "the preload's handle is attached");
	CHECK(acct_charge_wr(LEDGER_QP, 16, 16) == 0, "a QP within limits");
	pid = fork();
	if (pid == 0) {
		struct usage *u = ledger->use;
		const struct slot *me = &u->slots[ledger->slot]; /* the parent's, still ours in memory */
		int bad = 0;

		acct_atfork_child(); /* what the preload's pthread_atfork handler does */
		/* every other slot taken by a live process (the parent): no slot for this child */
		for (i = 0; i < (int)l->nprocs; i++) {
			struct slot *s = &u->slots[i];

			if (ALOAD(&s->owner))
				continue;
			s->pid = me->pid;
			s->start = me->start;
			s->job = -1;
			ASTORE(&s->state, ENT_LIVE);
			ASTORE(&s->owner, me->owner);
		}
		bad |= acct_charge_wr(LEDGER_QP, 16, 16) != -ENOMEM;
		bad |= ledger_attached(ledger);
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: refused, not attached (status %d)", status);
	read_log(log, sizeof(log));
	CHECK(strstr(log, "process slots of the ledger are taken (a larger one: rdmactl quota init --procs N) "
			  "(refusing every creation: limits of the ledger apply to it)") != NULL,
	      "the child says why, and the fix: %s", log);
	snprintf(want, sizeof(want), "rdmactl: refused qp for pid %d: ledger error: %s (RDMACTL_FAIL=closed)\n",
		 (int)pid, strerror(ENOTCONN));
	CHECK(strstr(log, want) != NULL, "log: %s", log);
	ledger_close(l);
}

static void spin_until_nsec(long lo, long hi)
{
	struct timespec ts;

	do
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	while (ts.tv_nsec < lo || ts.tv_nsec > hi);
}

/*
 * Refusal lines: at most one a second. Two refusals a few milliseconds apart on either side of a second
 * boundary give one line (the window counts from the line shown, not by calendar second); the next
 * line after the window says how many were held back.
 */
static void test_refusal_lines_one_per_second(void)
{
	char log[4096];
	struct stat st;
	ssize_t n;
	off_t off;
	int fd;

	CHECK(stat(logpath, &st) == 0, "log file from the test before");
	off = st.st_size;
	spin_until_nsec(960000000, 999999999);
	log_refusal("refused first");
	spin_until_nsec(0, 30000000); /* the next second, a few ms later */
	log_refusal("refused second");
	usleep(1100000);
	log_refusal("refused third");
	fd = open(logpath, O_RDONLY);
	n = fd >= 0 ? pread(fd, log, sizeof(log) - 1, off) : -1;
	if (fd >= 0)
		close(fd);
	log[n > 0 ? n : 0] = '\0';
	CHECK(n > 0, "read the log");
	CHECK(strstr(log, "rdmactl: refused first\n") != NULL, "first shown: %s", log);
	CHECK(strstr(log, "refused second") == NULL, "second held back: %s", log);
	CHECK(strstr(log, "rdmactl: refused third (1 more refusals not shown)\n") != NULL, "third says so: %s", log);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/acct-test.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(lpath, sizeof(lpath), "%s/ledger", dir);
	snprintf(logpath, sizeof(logpath), "%s/log", dir);
	RUN(test_closed_error_names_the_queue);
	RUN(test_refusal_lines_one_per_second);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	return unit_done();
}
