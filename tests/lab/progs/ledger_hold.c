// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test helper: attach to the ledger like the preload does and charge resources without any RDMA device.
 *   ledger_hold [-J JOB] [-c] KIND=N...   reserve N of each KIND (one reserve per unit; mr_bytes at once),
 *   print "ok" or the denial message per KIND, then "ready", and hold until killed (exit 0 on SIGTERM).
 *   -J JOB: create the job first (as rdmactl run does) and attach to it; -a JOB: attach to an existing job.
 *   -c: exit right after "ready".
 * Exit 3 when any reserve was refused (after holding, if not -c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger/ledger.h"
#include "core/util.h"

static volatile sig_atomic_t done;

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	const char *job = NULL, *attach = NULL;
	struct ledger *l;
	bool once = false, refused = false;
	int opt, err, i;

	while ((opt = getopt(argc, argv, "J:a:c")) != -1) {
		if (opt == 'J')
			job = attach = optarg;
		else if (opt == 'a')
			attach = optarg;
		else if (opt == 'c')
			once = true;
		else
			return 2;
	}
	err = ledger_open(NULL, 0, &l);
	if (err) {
		fprintf(stderr, "ledger_hold: %s\n", ledger_error());
		return 1;
	}
	if (job && ledger_job_create(l, job, NULL)) {
		fprintf(stderr, "ledger_hold: job %s: %s\n", job, ledger_error());
		return 1;
	}
	err = ledger_attach(l, attach);
	if (err) {
		fprintf(stderr, "ledger_hold: attach: %s\n", ledger_error());
		return 1;
	}
	for (i = optind; i < argc; i++) {
		char kind[32], *eq = strchr(argv[i], '=');
		struct ledger_denial d;
		uint64_t n, u;
		int k;

		if (!eq || (size_t)(eq - argv[i]) >= sizeof(kind) || parse_size(eq + 1, UINT64_MAX, &n))
			return 2;
		snprintf(kind, sizeof(kind), "%.*s", (int)(eq - argv[i]), argv[i]);
		for (k = 0; k < LEDGER_NKINDS && strcmp(kind, ledger_kind_name(k)); k++)
			;
		if (k == LEDGER_NKINDS)
			return 2;
		err = 0;
		if (k == LEDGER_MR_BYTES || k == LEDGER_WR)
			err = ledger_reserve(l, k, n, &d);
		else
			for (u = 0; u < n && !err; u++)
				err = ledger_reserve(l, k, 1, &d);
		if (err) {
			char msg[512];

			ledger_format_denial(&d, msg, sizeof(msg));
			printf("%s: %s\n", kind, msg);
			refused = true;
		} else {
			printf("%s: ok\n", kind);
		}
	}
	printf("ready\n");
	fflush(stdout);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	while (!once && !done)
		pause();
	ledger_close(l); /* no detach: what is held is reclaimed like a crash's */
	return refused ? 3 : 0;
}
