/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What rdmactl doctor asks of the kernel quota programs' pins: are their directories trusted, is the set this binary's. */
#ifndef RDMACTL_KQ_DOCTOR_H
#define RDMACTL_KQ_DOCTOR_H

#include <stddef.h>

/*
 * The pin directories (/sys/fs/bpf/rdmactl and its kq/) as kq_open() checks them: 1 both there and trusted
 * (root's, 0700, on bpffs), 0 nothing pinned yet, -errno with kq_error() saying what is wrong and the fix.
 */
int kq_doctor_dirs(void);

/*
 * The programs this rdmactl attaches while a limit exists (kq_ondemand) that the pinned set has no prog_ pin
 * for: a set pinned by an older rdmactl (whose programs stay attached as they are, without this version's).
 * Their count, with their names (space-separated) in names.
 */
int kq_doctor_missing_programs(char *names, size_t len);

#endif
