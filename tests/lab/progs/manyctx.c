// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab program: more contexts open at once than the interceptor's table of contexts has entries (256). On
 * each: a PD (exported verb) and an MW (inline verb, through the context's ops). Prints "ctx created=N",
 * "pd created=N refused=M errno=E", "mw ..." as usual, "holding" while it holds, then gives everything
 * back in order and prints "done".
 *   manyctx [-d DEV] [-n CONTEXTS] [-H SECONDS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static void report(const char *kind, int created, int refused, int err)
{
	printf("%s created=%d refused=%d errno=%s\n", kind, created, refused, err ? strerrorname_np(err) : "0");
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0";
	struct ibv_device **list, *dev = NULL;
	struct ibv_context **ctx;
	struct ibv_pd **pd;
	struct ibv_mw **mw;
	int i, n = 300, hold = 0, opt, nctx = 0, npd = 0, nmw = 0, rpd = 0, rmw = 0, epd = 0, emw = 0;

	while ((opt = getopt(argc, argv, "d:n:H:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'H': hold = atoi(optarg); break;
		default: return 2;
		}
	}
	if (n < 1)
		return 2;
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !dev; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			dev = list[i];
	ctx = calloc((size_t)n, sizeof(*ctx));
	pd = calloc((size_t)n, sizeof(*pd));
	mw = calloc((size_t)n, sizeof(*mw));
	if (!dev || !ctx || !pd || !mw) {
		fprintf(stderr, "manyctx: no device %s\n", dev_name);
		return 1;
	}
	for (i = 0; i < n; i++) {
		ctx[i] = ibv_open_device(dev);
		if (!ctx[i])
			break;
		nctx++;
		pd[i] = ibv_alloc_pd(ctx[i]);
		if (!pd[i]) {
			rpd++;
			epd = errno;
			continue;
		}
		npd++;
		mw[i] = ibv_alloc_mw(pd[i], IBV_MW_TYPE_1);
		if (mw[i]) {
			nmw++;
		} else {
			rmw++;
			emw = errno;
		}
	}
	printf("ctx created=%d\n", nctx);
	report("pd", npd, rpd, epd);
	report("mw", nmw, rmw, emw);
	printf("holding\n");
	fflush(stdout);
	sleep((unsigned int)hold);
	for (i = 0; i < nctx; i++) {
		if (mw[i] && ibv_dealloc_mw(mw[i]))
			fprintf(stderr, "manyctx: dealloc_mw %d: %s\n", i, strerror(errno));
		if (pd[i] && ibv_dealloc_pd(pd[i]))
			fprintf(stderr, "manyctx: dealloc_pd %d: %s\n", i, strerror(errno));
		if (ibv_close_device(ctx[i]))
			fprintf(stderr, "manyctx: close %d: %s\n", i, strerror(errno));
	}
	ibv_free_device_list(list);
	printf("done\n");
	return 0;
}
