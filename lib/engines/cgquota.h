/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Limits on a cgroup for the Slurm plugin (the OCI hook, rdmactl itself, calls quota's code directly): each
 * kind through `rdmactl quota set KIND N --cgroup DIR --kernel`, run as a subprocess, so that what the
 * kernel enforces stays the quota command's business and slurmstepd never loads libbpf. All the kinds asked
 * for or none: a failure takes back what was applied.
 */
#ifndef RDMACTL_CGQUOTA_H
#define RDMACTL_CGQUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "ledger/ledger.h"

/*
 * Apply limit[k] for every kind that is not LEDGER_UNLIMITED to the cgroup directory dir (absolute path
 * under the cgroup2 mount), with the rdmactl binary exe; ledger (NULL: inherited environment) becomes
 * RDMACTL_LEDGER of the subprocesses. wr, a cap the kernel does not count, is set without --kernel.
 * Returns 0, or -1 with err saying which kind failed and what rdmactl said; then every kind it had set
 * (the failed one included) was unset again.
 */
int cgquota_apply(const char *exe, const char *ledger, const char *dir, const uint64_t limit[LEDGER_NKINDS],
		  char *err, size_t errlen);

/* Unset every kind of limit[] that is not LEDGER_UNLIMITED; returns how many unsets failed (err: the last). */
int cgquota_remove(const char *exe, const char *ledger, const char *dir, const uint64_t limit[LEDGER_NKINDS],
		   char *err, size_t errlen);

/* Run exe with argv (argv[0] included, NULL-terminated), output captured into out (may be NULL) as one line
 * (its lines joined with "; "): exit status, 128+N for signal N, or -errno when it could not run. */
int cgquota_run(const char *exe, const char *ledger, char *const argv[], char *out, size_t outlen);

#endif
