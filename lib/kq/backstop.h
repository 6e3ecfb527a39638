/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel's backstop under a scope's ledger limits: the BPF LSM programs (lib/kq/kq.c: any kind, any scope)
 * where BPF LSM is active, else a cgroup's rdma.max (contexts, and all object kinds together). One path for
 * quota set and unset --kernel, the OCI hook (through quota_cgroup_apply) and run --kernel.
 */
#ifndef RDMACTL_KQ_BACKSTOP_H
#define RDMACTL_KQ_BACKSTOP_H

#include <stdint.h>

#include "ledger/ledger.h"

struct kq_backstop {
	const struct ledger_scope *scope; /* a process, a cgroup or the host (a job has no kernel scope) */
	const char *cgdir;                /* a cgroup scope's directory in the cgroup2 mount */
	const char *dev;                  /* rdma.max: only this RDMA device (NULL: every device it lists) */
	const char *desc;                 /* the scope as messages name it ("cgroup /a/b") */
};

/*
 * Set kind k's kernel limit on the scope to value (LEDGER_UNLIMITED lifts it). limit: the scope's ledger
 * limits after the change, from which rdma.max is written (hca_handle = ctx, hca_object = the sum of the
 * object kinds, max while one is unlimited). What went wrong, and a note when rdma.max stands in for BPF LSM,
 * is printed (pr_err). 0, or -1.
 */
int kq_backstop_set(const struct kq_backstop *b, int k, uint64_t value, const uint64_t *limit);
/*
 * kq_backstop_set's answer for an object kind's limit that rdma.max (no BPF LSM) cannot hold until every object
 * kind has one: not held by the kernel yet, but a step of the set that will be (the ledger keeps it).
 */
#define KQ_BACKSTOP_PENDING 1

/*
 * A new cgroup's kernel limits, every kind of limit[] (LEDGER_UNLIMITED: none) at once, with BPF LSM only (no
 * rdma.max: it cannot hold them per kind): run --kernel's job cgroup. A cgroup without counted limits still
 * gets its scope (a limit set later finds it). 0, or -errno with kq_error() saying why; nothing is left set
 * on a failure.
 */
int kq_backstop_cgroup(const char *cgdir, const uint64_t limit[LEDGER_NKINDS]);

/* The object kinds the rdma cgroup counts together as hca_object. */
bool kq_backstop_object_kind(int k);

#endif
