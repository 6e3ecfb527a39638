// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab program: more objects at once than the interceptor's table of records has slots (1,024), so that
 * records go to the other probes and the overflow buckets. Allocates N PDs and holds them, makes LOOPS
 * alloc/dealloc pairs meanwhile, deallocates the N, allocates N again, then tries 2 more. Prints
 *   held created=N refused=M errno=E
 *   loops ok=K refused=M errno=E
 *   again created=N refused=M errno=E
 *   extra created=N refused=M errno=E
 * Under a limit of N + 1 PDs, exact books give "extra created=1 refused=1".
 *   manyobj [-d DEV] [-n N] [-l LOOPS]      (default rxe0, 2000, 300)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static void report(const char *what, int created, int refused, int err)
{
	printf("%s created=%d refused=%d errno=%s\n", what, created, refused, err ? strerrorname_np(err) : "0");
	fflush(stdout);
}

/* Allocate n PDs into pds; how many were made (the rest refused, err the last errno). */
static int alloc_n(struct ibv_context *ctx, struct ibv_pd **pds, int n, const char *what)
{
	int i, made = 0, err = 0;

	for (i = 0; i < n; i++) {
		pds[made] = ibv_alloc_pd(ctx);
		if (pds[made])
			made++;
		else
			err = errno;
	}
	report(what, made, n - made, err);
	return made;
}

static int free_n(struct ibv_pd **pds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (ibv_dealloc_pd(pds[i])) {
			fprintf(stderr, "manyobj: dealloc_pd: %s\n", strerror(errno));
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0";
	int opt, i, n = 2000, loops = 300, held, ok = 0, refused = 0, err = 0;
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	struct ibv_pd **pds, *extra[2];

	while ((opt = getopt(argc, argv, "d:n:l:")) != -1) {
		if (opt == 'd')
			dev_name = optarg;
		else if (opt == 'n' && (n = atoi(optarg)) > 0 && n <= 100000)
			continue;
		else if (opt == 'l' && (loops = atoi(optarg)) >= 0)
			continue;
		else {
			fprintf(stderr, "usage: manyobj [-d DEV] [-n N] [-l LOOPS]\n");
			return 2;
		}
	}
	pds = calloc((size_t)n, sizeof(*pds));
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (!pds || !ctx) {
		fprintf(stderr, "manyobj: open %s: %s\n", dev_name, strerror(errno));
		return 1;
	}
	held = alloc_n(ctx, pds, n, "held");
	for (i = 0; i < loops; i++) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);

		if (!pd) {
			refused++, err = errno;
			continue;
		}
		ok++;
		if (ibv_dealloc_pd(pd)) {
			fprintf(stderr, "manyobj: dealloc_pd: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("loops ok=%d refused=%d errno=%s\n", ok, refused, err ? strerrorname_np(err) : "0");
	if (free_n(pds, held))
		return 1;
	held = alloc_n(ctx, pds, n, "again");
	i = alloc_n(ctx, extra, 2, "extra");
	if (free_n(extra, i) || free_n(pds, held))
		return 1;
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(pds);
	return 0;
}
