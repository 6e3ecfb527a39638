// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test helper: print one ledger scope as "KIND USAGE LIMIT" lines (limit "-" when unlimited), through
 * lib/ledger's read API, independently of the quota CLI.
 *   ledgerq job NAME | ledgerq pid PID        exit 0, or 3 when the scope has no entry / no live process
 *   ledgerq slots PID                         the number of live slots of process PID (0 or more)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger.h"

static void print(const uint64_t *usage, const uint64_t *limit)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		printf("%s %" PRIu64 " ", ledger_kind_name(k), usage[k]);
		if (limit[k] == LEDGER_UNLIMITED)
			printf("-\n");
		else
			printf("%" PRIu64 "\n", limit[k]);
	}
}

static pid_t want;

static int slot_cb(const struct ledger_proc_stat *st, void *arg)
{
	if (st->pid == want)
		(*(int *)arg)++;
	return 0;
}

static int proc_cb(const struct ledger_proc_stat *st, void *arg)
{
	(void)arg;
	if (st->pid != want)
		return 0;
	print(st->usage, st->limit);
	return 1;
}

int main(int argc, char **argv)
{
	struct ledger_scope_stat st;
	struct ledger_scope sc = { 0 };
	struct ledger *l;
	int ret;

	if (argc != 3 || (strcmp(argv[1], "job") && strcmp(argv[1], "pid") && strcmp(argv[1], "slots"))) {
		fprintf(stderr, "usage: ledgerq job NAME | ledgerq pid PID | ledgerq slots PID\n");
		return 2;
	}
	ret = ledger_open(NULL, 0, &l);
	if (ret) {
		fprintf(stderr, "ledgerq: %s\n", ledger_error());
		return 1;
	}
	if (!strcmp(argv[1], "slots")) {
		int n = 0;

		want = atoi(argv[2]);
		ret = ledger_foreach_proc(l, slot_cb, &n);
		ledger_close(l);
		printf("%d\n", n);
		return ret ? 1 : 0;
	}
	if (!strcmp(argv[1], "pid")) {
		want = atoi(argv[2]);
		ret = ledger_foreach_proc(l, proc_cb, NULL);
		ledger_close(l);
		return ret == 1 ? 0 : 3;
	}
	sc.type = LEDGER_SCOPE_JOB;
	snprintf(sc.name, sizeof(sc.name), "%s", argv[2]);
	ret = ledger_get_scope(l, &sc, &st);
	ledger_close(l);
	if (ret == -ENOENT)
		return 3;
	if (ret) {
		fprintf(stderr, "ledgerq: %s\n", strerror(-ret));
		return 1;
	}
	print(st.usage, st.limit);
	printf("nprocs %u -\n", st.nprocs);
	return 0;
}
