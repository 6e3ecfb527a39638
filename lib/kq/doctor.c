// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What rdmactl doctor asks of the kernel quota programs' pins, from the checks and names lib/kq uses itself. */
#include "kq/doctor.h"
#include "kq/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int kq_doctor_dirs(void)
{
	int err;

	if (access(PIN_ROOT, F_OK))
		return errno == ENOENT ? 0 : kq_fail(-errno, "cannot check %s: %s", PIN_ROOT, strerror(errno));
	err = kq_verify_dir(PIN_ROOT);
	if (err)
		return err;
	if (access(KQ_PIN_DIR, F_OK))
		return errno == ENOENT ? 0 : kq_fail(-errno, "cannot check %s: %s", KQ_PIN_DIR, strerror(errno));
	err = kq_verify_dir(KQ_PIN_DIR);
	return err ? err : 1;
}

int kq_doctor_missing_programs(char *names, size_t len)
{
	char prog[256];
	size_t i, off = 0;
	int n = 0;

	if (len)
		names[0] = '\0';
	for (i = 0; i < KQ_NONDEMAND; i++) {
		snprintf(prog, sizeof(prog), "%s/prog_%s", KQ_PIN_DIR, kq_ondemand[i]);
		if (!access(prog, F_OK))
			continue;
		n++;
		if (off < len)
			off += (size_t)snprintf(names + off, len - off, "%s%s", off ? " " : "", kq_ondemand[i]);
	}
	return n;
}
