// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How the kernel answers for a device's QPs: one dump (lib/nl nl_res_dump: RDMA_NLDEV_CMD_RES_QP_GET with
 * NLM_F_DUMP), against one request per user QP by its number (nl_qp_get, as top --counters asks: 32 to a
 * write). The dump walks the device's QP table from its start for each message it fills; a request by number
 * looks one QP up. Both see the same QPs (the numbers the dump gave); prints the milliseconds of each, side by
 * side, ROUNDS times, and their ratio, and a control: the dump done twice in a row, whose ratio is the noise.
 * A QP never given a port (still in RESET) is answered with EAGAIN only (nl_qp_get counts it in RESET).
 *   nlget DEV_INDEX [ROUNDS]     (in the lab, with holders: bench/nlget.sh)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "nl/nl.h"

struct ids {
	uint32_t *v;
	size_t n, cap;
	size_t all;	/* every QP reported (kernel QPs, and QPs by number without a pid, too) */
	size_t states;	/* QPs that came with a state */
	size_t noport;	/* of those, QPs no port answers for by number (RESET: nl_qp_get) */
};

static int on_qp(const struct nl_res *r, void *arg)
{
	struct ids *ids = arg;

	if (ids->n == ids->cap) {
		uint32_t *v = realloc(ids->v, (ids->cap ? ids->cap * 2 : 1024) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ids->v = v;
		ids->cap = ids->cap ? ids->cap * 2 : 1024;
	}
	/* user QPs only, as top asks for: a kernel QP's table id carries its port (the GSI QP) */
	if (r->has & NL_HAS_PID)
		ids->v[ids->n++] = r->id;
	ids->all++;
	ids->states += !!(r->has & NL_HAS_STATE);
	ids->noport += !!(r->has & NL_NO_PORT);
	return 0;
}

static double now_ms(void)
{
	return (double)clock_mono_ns() / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint32_t dev;
	size_t rounds, r;
	struct nl_sock *nl;
	double *td, *tg, *tc;
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: nlget DEV_INDEX [ROUNDS]\n");
		return 2;
	}
	dev = (uint32_t)strtoul(argv[1], NULL, 0);
	rounds = argc > 2 ? strtoul(argv[2], NULL, 0) : 3;
	if (!rounds || rounds > 100) {
		fprintf(stderr, "nlget: ROUNDS 1-100\n");
		return 2;
	}
	ret = nl_open(&nl);
	if (ret) {
		fprintf(stderr, "nlget: RDMA netlink: %s\n", strerror(-ret));
		return 1;
	}
	td = calloc(rounds, sizeof(*td));
	tg = calloc(rounds, sizeof(*tg));
	tc = calloc(rounds, sizeof(*tc));
	if (!td || !tg || !tc)
		return 1;
	for (r = 0; r < rounds; r++) {
		struct ids d = { 0 }, d2 = { 0 }, g = { 0 };
		struct nl_handlers hd = { .res = on_qp, .arg = &d }, hg = { .res = on_qp, .arg = &g },
				   hc = { .res = on_qp, .arg = &d2 };
		double t0, t1, t2, t3;

		t0 = now_ms();
		ret = nl_res_dump(nl, dev, NL_RES_QP, &hd);
		t1 = now_ms();
		if (!ret)
			ret = nl_qp_get(nl, dev, 1, d.v, d.n, &hg); /* what top --counters does (one port: rxe) */
		t2 = now_ms();
		if (!ret)
			ret = nl_res_dump(nl, dev, NL_RES_QP, &hc);
		t3 = now_ms();
		if (ret) {
			fprintf(stderr, "nlget: %s\n", strerror(-ret));
			return 1;
		}
		td[r] = t1 - t0;
		tg[r] = t2 - t1;
		tc[r] = t3 - t2;
		printf("round %zu: dump %zu user QPs (%zu with a state) %.1f ms; by number %zu QPs (%zu never given a "
		       "port: RESET) %.1f ms; dump again %zu user QPs %.1f ms\n", r + 1, d.n, d.states, td[r], g.all,
		       g.noport, tg[r], d2.n, tc[r]);
		free(d.v);
		free(d2.v);
		free(g.v);
	}
	qsort(td, rounds, sizeof(*td), cmp_d);
	qsort(tg, rounds, sizeof(*tg), cmp_d);
	qsort(tc, rounds, sizeof(*tc), cmp_d);
	printf("medians: dump %.1f ms, by number %.1f ms, dump again %.1f ms; by number/dump %.3f, "
	       "control (dump again/dump) %.3f\n", td[rounds / 2], tg[rounds / 2], tc[rounds / 2],
	       tg[rounds / 2] / td[rounds / 2], tc[rounds / 2] / td[rounds / 2]);
	nl_close(nl);
	return 0;
}
