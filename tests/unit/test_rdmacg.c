// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/kq/rdmacg: the rdma cgroup's files (rdma.max, rdma.current) as the kernel writes them. */
#include <string.h>

#include "kq/rdmacg.h"
#include "unit.h"

static void test_rdmacg_parse(void)
{
	struct rdmacg_line l[4];
	int n;

	n = rdmacg_parse("rxe0 hca_handle=2 hca_object=max\nmlx5_0 hca_object=10 hca_handle=max\n", l, 4);
	CHECK(n == 2, "n %d", n);
	CHECK(!strcmp(l[0].dev, "rxe0") && l[0].hca_handle == 2 && l[0].hca_object == RDMACG_MAX, "line 0");
	CHECK(!strcmp(l[1].dev, "mlx5_0") && l[1].hca_handle == RDMACG_MAX && l[1].hca_object == 10, "line 1");
	n = rdmacg_parse("rxe0 hca_handle=x hca_object=1\nrxe1 hca_handle=1\n\nrxe2\nrxe3 hca_handle=1 hca_object=-1\n"
			 "rxe4  hca_handle=3   hca_object=4", l, 4);
	CHECK(n == 1 && !strcmp(l[0].dev, "rxe4") && l[0].hca_handle == 3 && l[0].hca_object == 4, "n %d", n);
	n = rdmacg_parse("a hca_handle=1 hca_object=1\nb hca_handle=1 hca_object=1\n", l, 1);
	CHECK(n == 1, "capped at max: %d", n);
	CHECK(rdmacg_parse("", l, 4) == 0, "empty");
}

int main(void)
{
	RUN(test_rdmacg_parse);
	return unit_done();
}
