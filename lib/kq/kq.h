/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel quotas: the BPF LSM programs of bpf/kq.bpf.c, loaded once and pinned under KQ_PIN_DIR (they outlive
 * rdmactl; no daemon), and their limits and usage per scope.
 */
#ifndef RDMACTL_LIBKQ_H
#define RDMACTL_LIBKQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include <sys/types.h>

#include "../../bpf/kq.h"
#include "core/proc.h"

struct kq;

/* Is BPF LSM active (bpf in /sys/kernel/security/lsm)? If not, why says what was found. */
static inline bool kq_lsm_active(char *why, size_t len)
{
	return lsm_active("bpf", why, len);
}

/*
 * Open the pinned programs' maps. create: load, attach and pin them first when they are not there.
 * -ENOENT: not loaded (and !create). Other errors: kq_error() says what failed.
 */
int kq_open(bool create, struct kq **out);
/* Open them read-only (kq_get, kq_foreach, kq_events_read): read access to the pins is enough, which
 * CAP_DAC_READ_SEARCH gives a service that is not root (with CAP_BPF for the bpf() calls). */
int kq_open_readonly(struct kq **out);
void kq_close(struct kq *q);
const char *kq_error(void);

/* A cgroup directory's scope (its cgroup id is the directory's inode number). */
int kq_scope_cgroup(const char *dir, struct kq_scope *out);

/*
 * A process's scope: its pid and start time (/proc/PID/stat field 22; 0: read it now). -ESRCH when it is
 * gone, -EINVAL for a pid no kernel gives, -EXDEV when rdmactl is not in the initial pid namespace (where the
 * programs take their pids); kq_error() says which.
 */
int kq_scope_pid(pid_t pid, uint64_t start, struct kq_scope *out);
/* The kernel scope of a ledger scope (cgroot: the cgroup2 mount, which ledger cgroup names are under).
 * -ENOENT: a job (no kernel scope of its own), or a cgroup that is gone. */
struct ledger_scope;
int kq_scope_of_ledger(const struct ledger_scope *ls, const char *cgroot, struct kq_scope *out);

/*
 * Set (max = KQ_UNLIMITED: lift) one kind's limit of a scope. The first limit of a scope counts what its
 * processes already hold (dir: the cgroup's directory, for its descendants; NULL for other scopes).
 */
int kq_set(struct kq *q, const struct kq_scope *sc, const char *dir, unsigned int kind, uint64_t max);

/* Forget a scope (its cgroup or process is gone): its limits and usage. */
int kq_remove(struct kq *q, const struct kq_scope *sc);

/*
 * Forget the scopes of processes and cgroups that are gone (cgroot: the cgroup2 mount), and those a killed
 * `quota set --kernel` left without a limit in force (unfinished; may be NULL).
 */
int kq_gc(struct kq *q, const char *cgroot, unsigned int *removed, unsigned int *unfinished);

/*
 * What a `quota set --kernel` killed before it finished left (read while no set runs): scopes whose limit
 * never went in (no maximum in force; kq_get does not show them), and a population's flags. The next set or
 * unset of such a scope, kq_gc and kq_repair clear them. 0, 1 when a set is running (nothing read), -errno.
 */
#define KQ_UNFINISHED_MAX 8
struct kq_unfinished {
	unsigned int nscopes;                       /* scopes with no maximum in force */
	struct kq_scope scope[KQ_UNFINISHED_MAX];   /* the first of them */
	bool populating;                            /* a population's flags left set */
};
int kq_unfinished(struct kq *q, struct kq_unfinished *u);

/* A scope's limits and the kernel's usage (base included). -ENOENT: no kernel limit on it. */
int kq_get(struct kq *q, const struct kq_scope *sc, uint64_t max[KQ_NK], int64_t use[KQ_NK],
	   uint64_t refused[KQ_NK], uint64_t killed[KQ_NK]);

/* The programs' table of charged objects (kq_objs): its use, and what it could not take. */
struct kq_table {
	int64_t records;  /* records in it now */
	uint32_t size;    /* its entries */
	uint64_t full;    /* limited creations refused because it was nearly full (EDQUOT) */
	uint64_t lost;    /* charged objects it could not record: their charge stays (never given back) */
	int lost_errno;   /* the last of those inserts' error (E2BIG: full) */
};
int kq_table(struct kq *q, struct kq_table *t);

/*
 * Are the kernel limits enforced? 1: no limit, or every program that enforces them is attached (its link
 * pinned, root's, a tracing link of the pinned program; a reader that is not root sees only the pins); 0: a
 * limit exists and what why says is missing (nothing, or not everything, enforces it); -errno on an error.
 */
int kq_enforcement(struct kq *q, char *why, size_t len);
/*
 * Enforce again what kq_enforcement finds down (root): every limit is lifted and set again as a first limit is,
 * counting what exists from the kernel's lists (cgroot: the cgroup2 mount, to find the limited cgroups).
 */
int kq_repair(struct kq *q, const char *cgroot);

/* Every scope with kernel limits. */
int kq_foreach(struct kq *q, int (*cb)(const struct kq_scope *sc, void *arg), void *arg);

/*
 * The refusals and kills after *since (0: every one still kept, the last KQ_EVSLOTS; KQ_EVENTS_NEW: none, only
 * set *since to now), oldest first; *since becomes the newest. Returns how many, or cb's non-zero return.
 */
#define KQ_EVENTS_NEW UINT64_MAX
int kq_events_read(struct kq *q, uint64_t *since, int (*cb)(const struct kq_event *ev, void *arg), void *arg);

/* The name of an event's kind ("qp"...), its type ("refused", "killed") and its scope type. */
const char *kq_kind_name(unsigned int kind);
const char *kq_event_name(unsigned int type);
const char *kq_scope_name(unsigned int type);
/*
 * A scope in words, as messages name it: "global", "pid N", "cgroup /PATH" (under the cgroup2 mount, as
 * /proc/PID/cgroup says it), or "cgroup id N (gone)". Returns buf (PATH_MAX + 32 bytes hold any).
 */
const char *kq_scope_text(const struct kq_scope *sc, char *buf, size_t len);

#endif
