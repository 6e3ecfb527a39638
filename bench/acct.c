// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The interceptor's accounting path alone (acct.c + the ledger, no verbs): ns per QP charge+release (WR
 * check and count) and per MR charge+release (count and bytes), with the TLB warm, and right after a full
 * TLB flush (what a verb's system call does to an emulated CPU such as the lab's TCG, where every page the
 * path touches is then a refill). Run it under `rdmactl run` to charge a job as an application would
 * (bench/preload.sh does); it needs a ledger ($RDMACTL_LEDGER or the default) either way.
 *   rdmactl run --job J --max-qp 1000 --max-mr 1000 -- acct [-n ITERS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "preload.h"

#define FLUSH_PAGES 64 /* above the kernel's single-page flush ceiling (33): a full flush */

static char *region;

static void tlb_flush(void)
{
	mprotect(region, FLUSH_PAGES * 4096, PROT_READ);
	mprotect(region, FLUSH_PAGES * 4096, PROT_READ | PROT_WRITE);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = 2000, opt, path, cold, i;
	uint64_t *t;
	double ns;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n' || (n = atoi(optarg)) <= 0) {
			fprintf(stderr, "usage: acct [-n ITERS]\n");
			return 2;
		}
	}
	t = calloc(n, sizeof(*t));
	region = mmap(NULL, FLUSH_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		      -1, 0);
	if (!t || region == MAP_FAILED)
		return 1;
	acct_init();
	ns = calibrate();
	for (path = 0; path < 2; path++) {
		for (cold = 0; cold < 2; cold++) {
			for (i = 0; i < n; i++) {
				uint64_t t0;

				if (cold)
					tlb_flush();
				t0 = ticks();
				if (path == 0) {
					if (acct_charge_wr(LEDGER_QP, 16, 16))
						return 1;
					acct_release(LEDGER_QP, 0);
				} else {
					if (acct_charge(LEDGER_MR, 65536))
						return 1;
					acct_release(LEDGER_MR, 65536);
				}
				t[i] = ticks() - t0;
			}
			qsort(t, n, sizeof(*t), cmp);
			printf("%s charge+release, TLB %s: median %6.0f ns  (p10 %.0f, p90 %.0f)\n", path ? "mr" : "qp",
			       cold ? "flushed" : "warm   ", t[n / 2] * ns, t[n / 10] * ns, t[n * 9 / 10] * ns);
		}
	}
	return 0;
}
