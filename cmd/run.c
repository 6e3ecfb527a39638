// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl run: not built yet (issue #5). */
#include "rdmactl.h"
#include "util.h"

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = { NULL, NULL, "[ARGS...]", "Not built yet (issue #5).", children, NULL, NULL };

int cmd_run(int argc, char **argv)
{
	int idx;

	if (argp_parse(&argp, argc, argv, ARGP_NO_ARGS | ARGP_IN_ORDER, &idx, NULL))
		return EXIT_USAGE;
	pr_err("not implemented yet (issue #5)");
	return EXIT_FAIL;
}
