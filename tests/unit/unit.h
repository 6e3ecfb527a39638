/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Minimal TAP-style unit test harness for lib/: RUN() a named test, CHECK() records, the summary line closes it. */
#ifndef RDMACTL_UNIT_H
#define RDMACTL_UNIT_H

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_pass, unit_fail;

/*
 * UNIT_TEST=PATTERN runs only the RUN() tests whose name matches (fnmatch(3) pattern; the "test_" prefix
 * may be left out): `make check-unit T=ledger:basic` runs test_basic of test_ledger.
 */
static const char *unit_filter;
static int unit_ran;
static char unit_names[4096];

static inline bool unit_selected(const char *name)
{
	static bool init;
	size_t n = strlen(unit_names);

	if (!init) {
		unit_filter = getenv("UNIT_TEST");
		if (unit_filter && !*unit_filter)
			unit_filter = NULL;
		init = true;
	}
	snprintf(unit_names + n, sizeof(unit_names) - n, " %s", name);
	if (unit_filter && fnmatch(unit_filter, name, 0) &&
	    (strncmp(name, "test_", 5) || fnmatch(unit_filter, name + 5, 0)))
		return false;
	unit_ran++;
	return true;
}

#define CHECK(cond, ...)                                                                \
	do {                                                                            \
		if (cond) {                                                             \
			unit_pass++;                                                    \
		} else {                                                                \
			unit_fail++;                                                    \
			printf("not ok - %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
			printf(__VA_ARGS__);                                            \
			printf("\n");                                                   \
		}                                                                       \
	} while (0)

/* Run one named test function (unless UNIT_TEST leaves it out) and say how it went. */
#define RUN(fn)                                                                         \
	do {                                                                            \
		int before = unit_fail;                                                 \
		if (!unit_selected(#fn))                                                \
			break;                                                          \
		fn();                                                                   \
		printf("%s - %s\n", unit_fail == before ? "ok" : "not ok", #fn);        \
		fflush(stdout);                                                         \
	} while (0)

static inline int unit_done(void)
{
	if (unit_filter && !unit_ran) {
		fprintf(stderr, "%s: no test matches UNIT_TEST=%s (tests:%s)\n", program_invocation_short_name,
			unit_filter, unit_names);
		return EXIT_FAILURE;
	}
	printf("%d passed, %d failed\n", unit_pass, unit_fail);
	return unit_fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
