// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Benchmark helper: time of one in-process rdmactl top refresh (snapshot + sort + JSON printing), socket reused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/out.h"
#include "top/top.h"
#include "top_view.h"
#include "core/util.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double now_ms(void)
{
	return clock_mono_s() * 1e3;
}

int main(int argc, char **argv)
{
	uint64_t n = 11;
	struct top_ctx *t;
	struct top_snap s;
	struct top_view v = { .key = TOP_KEY_QP };
	FILE *sink = fopen("/dev/null", "we");
	double *ms, t0, first = 0;
	uint64_t i, qps = 0;

	if (argc > 1 && parse_u64(argv[1], 1, 10000, &n)) {
		fprintf(stderr, "usage: top_refresh [COUNT]\n");
		return 2;
	}
	ms = calloc(n, sizeof(*ms));
	if (!ms || !sink || top_open(&t)) {
		fprintf(stderr, "top_refresh: cannot open RDMA netlink\n");
		return 1;
	}
	/* One warm-up refresh: the first one also pays for user name lookups. */
	for (i = 0; i <= n; i++) {
		t0 = now_ms();
		if (top_snapshot(t, NULL, &s)) {
			fprintf(stderr, "top_refresh: snapshot failed\n");
			return 1;
		}
		top_sort(&s, TOP_KEY_QP, false);
		out_init(sink, true, false);
		top_print(&s, &v, NULL);
		qps = s.totals.n[NL_RES_QP];
		top_snap_free(&s);
		if (i)
			ms[i - 1] = now_ms() - t0;
		else
			first = now_ms() - t0;
	}
	qsort(ms, n, sizeof(*ms), cmp_double);
	printf("refreshes %lu qps %lu median_ms %.3f min_ms %.3f max_ms %.3f first_ms %.3f\n", (unsigned long)n,
	       (unsigned long)qps, ms[n / 2], ms[0], ms[n - 1], first);
	free(ms);
	fclose(sink);
	top_close(t);
	return 0;
}
