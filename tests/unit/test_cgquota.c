// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/engines/cgquota: a command's output comes back as one line (slurmd logs it as one). */
#include <string.h>

#include "engines/cgquota.h"
#include "unit.h"

static void test_run_one_line(void)
{
	char *const argv[] = { "sh", "-c", "printf 'first\\nsecond\\nthird\\n\\n'; exit 3", NULL };
	char out[64], small[12];
	int ret;

	ret = cgquota_run("/bin/sh", NULL, argv, out, sizeof(out));
	CHECK(ret == 3 && !strcmp(out, "first; second; third"), "%d '%s'", ret, out);
	/* where "; " does not fit, a space: never a newline, never past the buffer */
	ret = cgquota_run("/bin/sh", NULL, argv, small, sizeof(small));
	CHECK(ret == 3 && !strchr(small, '\n') && strlen(small) < sizeof(small), "%d '%s'", ret, small);
	CHECK(!strcmp(small, "first secon"), "'%s'", small);
}

int main(void)
{
	RUN(test_run_one_line);
	return unit_done();
}
