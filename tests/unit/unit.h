/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Minimal TAP-style unit test harness for lib/: CHECK() records, the summary line closes the run. */
#ifndef RDMACTL_UNIT_H
#define RDMACTL_UNIT_H

#include <stdio.h>
#include <stdlib.h>

static int unit_pass, unit_fail;

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

/* Run one named test function and say how it went. */
#define RUN(fn)                                                                         \
	do {                                                                            \
		int before = unit_fail;                                                 \
		fn();                                                                   \
		printf("%s - %s\n", unit_fail == before ? "ok" : "not ok", #fn);        \
		fflush(stdout);                                                         \
	} while (0)

static inline int unit_done(void)
{
	printf("%d passed, %d failed\n", unit_pass, unit_fail);
	return unit_fail ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
