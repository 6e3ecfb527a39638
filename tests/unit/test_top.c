// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/top: what the snapshot reads of /proc/PID/status. */
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#include "top/top.h"
#include "unit.h"

static void test_status(void)
{
	char comm[TOP_COMM_LEN];
	pid_t tgid = 0;
	uid_t uid = 0;

	CHECK(top_parse_status("Name:\tib_write_bw\nUmask:\t0022\nState:\tS\nTgid:\t321\nNgid:\t0\nPid:\t325\n"
			       "PPid:\t1\nUid:\t1000\t1000\t1000\t1000\n",
			       &tgid, &uid, comm, sizeof(comm)) == 0, "parse");
	CHECK(tgid == 321 && uid == 1000 && !strcmp(comm, "ib_write_bw"), "%d %u %s", tgid, uid, comm);
	CHECK(top_parse_status("Name:\tx\nUid:\t0\n", &tgid, &uid, comm, sizeof(comm)) == -EPROTO, "no Tgid");
	CHECK(top_parse_status("Name:\tx\nTgid:\tz\nUid:\t0\n", &tgid, &uid, comm, sizeof(comm)) == -EPROTO,
	      "bad Tgid");
	CHECK(top_parse_status("", &tgid, &uid, comm, sizeof(comm)) == -EPROTO, "empty");
}

int main(void)
{
	RUN(test_status);
	return unit_done();
}
