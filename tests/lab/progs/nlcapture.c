// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lab helper: issue every NLDEV request lib/nl knows (and one the kernel rejects); run it with
 * RDMACTL_NL_CAPTURE=DIR to store the raw replies as fuzzer seeds (tests/fuzz/corpus/nl). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nl/nl.h"

struct dev_list {
	struct nl_dev *v;
	size_t n, cap;
};

static int dev_add(const struct nl_dev *d, void *arg)
{
	struct dev_list *l = arg;
	struct nl_dev *v;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4;
		v = realloc(l->v, l->cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
	}
	l->v[l->n++] = *d;
	return 0;
}

/* All devices into a malloc'ed array (free() it); 0 devices is not an error. */
static int list_devs(struct nl_sock *s, struct nl_dev **devs, size_t *n)
{
	struct dev_list l = { 0 };
	struct nl_handlers h = { .dev = dev_add, .arg = &l };
	int ret;

	ret = nl_dev_dump(s, &h);
	if (ret) {
		free(l.v);
		return ret;
	}
	*devs = l.v;
	*n = l.n;
	return 0;
}

static int count_res(const struct nl_res *r, void *arg)
{
	(void)r;
	(*(unsigned long *)arg)++;
	return 0;
}

int main(void)
{
	struct nl_handlers h = { 0 };
	struct nl_sock *s;
	struct nl_dev *devs;
	unsigned long n = 0;
	size_t ndev, i;
	int t, ret;

	if (nl_open(&s) || list_devs(s, &devs, &ndev)) {
		fprintf(stderr, "nlcapture: cannot list RDMA devices\n");
		return 1;
	}
	h.res = count_res;
	h.arg = &n;
	for (i = 0; i < ndev; i++) {
		nl_port_dump(s, devs[i].index, &(struct nl_handlers){ 0 });
		for (t = 0; t < NL_RES_NTYPES; t++) {
			ret = nl_res_dump(s, devs[i].index, t, &h);
			if (ret)
				printf("%s %s: %s\n", devs[i].name, nl_res_name(t), strerror(-ret));
		}
	}
	nl_summary_dump(s, &(struct nl_handlers){ 0 });
	/* An index no device has: the kernel answers with an error message. */
	ret = nl_res_dump(s, 4242, NL_RES_QP, &h);
	printf("bad index: %s (%s)\n", strerror(-ret), nl_ext_ack(s));
	printf("%lu objects\n", n);
	free(devs);
	nl_close(s);
	return 0;
}
