/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What rdmactl export publishes, gathered into structs: objects per cgroup, device and process, quotas, refusals, counters. */
#ifndef RDMACTL_METRICS_H
#define RDMACTL_METRICS_H

/*
 * Sources, each read once per collection, each optional (a missing one leaves its part empty and its
 * error in metrics_snap.err):
 *   netlink   lib/top/top.c's snapshot of the RDMA netlink dumps. It sums a process's objects over devices, so
 *             the objects are taken one device at a time (a snapshot filtered by device name dumps only that
 *             device's objects: every object is still dumped once per collection). The device names come
 *             from the previous collection; a change in the set of devices costs one whole snapshot more.
 *             With opts.no_qp_states the counts are summed over devices and carry no QP states: they come
 *             from top_snapshot_counters() (a running monitor's counters, in time proportional to processes
 *             and devices) when it proves them complete, else from one whole snapshot; which one, and why
 *             not the counters, is in metrics_snap.source and .why_dump.
 *   ledger    scopes (limits and usage), attached processes (managed or not: top's join, top_ledger_read() and
 *             top_ledger_proc()), refusals.
 *   monitor   the BPF per-tgid counters pinned by a running `rdmactl monitor`, summed over processes.
 *   rdmacg    rdma.max and rdma.current of every cgroup seen (and of their ancestors).
 *   pods      the namespace and name of each pod UID the cgroups' paths name (PODNAME_DIR), one read per pod.
 *
 * Counters that must only grow are kept so across collections when opts.follow is set (a long-running
 * exporter, which also calls metrics_tick() between collections so nothing slips by):
 *  - refusals per scope: the ledger counts refusals per kind only; which scope refused is in its ring of
 *    the LEDGER_DENIAL_RING latest refusals. A follower attributes each one it sees to its scope; what it
 *    did not see (before it started, or more than the ring holds between two reads) stays "unattributed",
 *    so that the sum over scopes is the ledger's exact count per kind. Without follow, everything is
 *    unattributed (a one-shot reader cannot attribute monotonically).
 *  - monitor counters: the monitor drops the entries of exited processes whose creates and destroys
 *    balance; a follower keeps their last counts, so the sums never go down. A new monitor (another map)
 *    starts them again from zero, as a restarted counter does.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "monitor/bpfmon.h"
#include "kq/kq.h"
#include "core/cgroup.h"
#include "engines/podname.h"
#include "ledger/ledger.h"
#include "kq/rdmacg.h"
#include "top/top.h"

enum metrics_source {
	METRICS_SRC_NETLINK,
	METRICS_SRC_LEDGER,
	METRICS_SRC_MONITOR,
	METRICS_SRC_KERNEL,
	METRICS_SRC_NR,
};
/* "netlink", "ledger", "monitor", "kernel" (the kernel quota programs' maps, when they are loaded). */
extern const char *const metrics_source_names[METRICS_SRC_NR];

/*
 * What a collection made of a source: read; absent, nothing there to read (no ledger was ever created, a
 * kernel without RDMA, no monitor or kernel quotas pinned); down, there and it could not be read.
 */
enum metrics_source_state {
	METRICS_STATE_UP,
	METRICS_STATE_ABSENT,
	METRICS_STATE_DOWN,
	METRICS_STATE_NR,
};
/* "up", "absent", "down". */
extern const char *const metrics_state_names[METRICS_STATE_NR];

/* Refusal scopes: enum ledger_scope_type, then the unattributed rest. */
#define METRICS_SCOPE_UNATTRIBUTED (LEDGER_SCOPE_GLOBAL + 1)
#define METRICS_NSCOPES (METRICS_SCOPE_UNATTRIBUTED + 1)
/* "process", "job", "cgroup", "global", "unattributed". */
const char *metrics_scope_name(int scope);

struct metrics_opts {
	const char *ledger;	/* NULL: ledger_default_path() */
	bool follow;		/* long-running: see above */
	bool no_qp_states;	/* counts summed over devices, without QP states: see netlink above */
	bool counters;		/* counts summed over devices, with QP states asked for by number (top_snapshot_counters) */
};

/*
 * Why a collection's counts came from the dump, not the monitor's counters, as a word that labels a series
 * (stable: no pid or count in it; the sentence is in metrics_snap.source_why). The first is "they did".
 */
#define METRICS_DUMP_WHYS(X)                                                                            \
	X(NONE, "")			/* the counters were used */                                   \
	X(QP_STATES, "qp_states")	/* not asked (no --no-qp-states, no --counters): the dump */  \
	X(NO_MONITOR, "no_monitor")	/* no monitor pins its counters */                             \
	X(NO_ACCESS, "no_access")	/* the pins cannot be read (CAP_BPF, file modes) */            \
	X(LOST, "lost_counts")		/* the monitor lost counts (a counters map was full) */        \
	X(INCOMPLETE, "incomplete")	/* no complete baseline yet, or no kernel summary to check */ \
	X(BUSY, "busy")			/* objects came and went during each of the tries */           \
	X(MISMATCH, "mismatch")		/* the kernel's counts (or QP numbers) differ from the counters' */ \
	X(ERROR, "error")		/* anything else (RDMA netlink failed, ...) */

enum metrics_dump_why {
#define X(name, word) METRICS_DUMP_##name,
	METRICS_DUMP_WHYS(X)
#undef X
	METRICS_DUMP_NR,
};
extern const char *const metrics_dump_why_names[METRICS_DUMP_NR];
/* The word for top_snapshot_counters()'s error (a negative errno). */
enum metrics_dump_why metrics_dump_why_of(int err);

/* A cgroup that holds RDMA objects, has a ledger entry, or has rdma cgroup files worth reporting. */
struct metrics_cgroup {
	char path[LEDGER_CGROUP_MAX];	/* "/a/b" relative to the cgroup2 root; "" when unknown */
	struct cgroup_ids ids;
	struct podname pod;		/* the namespace and name of ids.pod_uid (podname_read), "" when unknown */
	unsigned int nprocs;		/* processes holding objects in it */
	unsigned int nmanaged;		/* of these, attached to the ledger */
};

/* A process that holds objects (user objects whose owning thread /proc still knows). */
struct metrics_proc {
	pid_t pid;
	uint64_t start_time;		/* as the snapshot read it (top_row.start_time) */
	char comm[TOP_COMM_LEN];
	size_t cg;			/* index into cgroups[] */
	bool managed;			/* attached to the ledger (top_ledger_proc(): pid and start time) */
};

/* metrics_count.dev of counts summed over every device (opts.no_qp_states) */
#define METRICS_ALL_DEVS UINT_MAX

/* The objects of one owner (a cgroup or a process: the array says which) on one device. */
struct metrics_count {
	size_t owner;
	unsigned int dev;		/* index into devs[], or METRICS_ALL_DEVS */
	struct top_counts c;
};

/* One device line of a cgroup's rdma.max and rdma.current. */
struct metrics_rdmacg {
	size_t cg;			/* index into cgroups[] */
	char dev[RDMACG_DEV_LEN];
	bool has_max, has_cur;
	uint64_t max_handle, max_object;	/* RDMACG_MAX: no limit */
	uint64_t cur_handle, cur_object;
};

/* Devices the monitor's per-device counts are kept for in a snapshot (named ones, and "" for the rest). */
#define METRICS_MAX_MONDEVS (TOP_MAX_DEVS + 1)

struct metrics_snap {
	struct timespec time;		/* CLOCK_REALTIME at the start */
	double seconds;			/* how long the collection took */
	int err[METRICS_SRC_NR];		/* 0 read, else -errno */
	enum metrics_source_state state[METRICS_SRC_NR];
	char why[METRICS_SRC_NR][160];	/* what failed, for the log ("" when it was read) */
	/* netlink */
	bool no_qp_states;		/* counts summed over devices (METRICS_ALL_DEVS), no QP states */
	bool summed;			/* counts summed over devices (no_qp_states, or opts.counters) */
	enum top_source source;		/* where the counts of cgroups and processes came from */
	enum metrics_dump_why why_dump;	/* METRICS_DUMP_NONE when from the counters */
	char source_why[192];		/* the sentence, when the counters were asked for and not used */
	struct top_dev devs[TOP_MAX_DEVS];
	unsigned int ndevs;
	struct metrics_cgroup *cgroups;
	size_t ncgroups;
	struct metrics_count *cg_counts;	/* owner: cgroups[] */
	size_t ncg_counts;
	struct metrics_proc *procs;
	size_t nprocs;
	struct metrics_count *proc_counts; /* owner: procs[] */
	size_t nproc_counts;
	/* ledger: every scope (global, cgroups, jobs, processes), as ledger_foreach_scope() gives them */
	struct ledger_scope_stat *scopes;
	size_t nscopes;
	unsigned int slots_used, slots; /* the ledger's process slots: taken, and how many it has (0: no ledger) */
	uint64_t refusals[METRICS_NSCOPES][LEDGER_NKINDS];
	/* monitor: created and destroyed since it started, every process summed */
	struct mon_counts mon;
	/* the same per device, when the monitor pins its per-device counters (mon_devs_read): name is
	 * the device's as netlink named it, "" for objects without a device or of a device that is gone */
	struct metrics_mondev {
		char name[MON_DEV_LEN];
		struct mon_counts c;
	} mon_devs[METRICS_MAX_MONDEVS];
	unsigned int mon_ndevs;
	bool mon_devs_read;
	/* kernel quotas (BPF LSM): per ledger scope (parallel to scopes[]), its kernel limits, usage, refusals
	 * and kills, where the scope has kernel limits (has) */
	struct metrics_kscope {
		bool has;
		uint64_t max[KQ_NK];	/* KQ_UNLIMITED: none */
		int64_t use[KQ_NK];
		uint64_t refused[KQ_NK];
		uint64_t killed[KQ_NK];
	} *kscopes;
	int kq_enforced;	/* kq_enforcement(): 1 every kernel limit enforced (or none), -1 not, 0 not read */
	struct kq_table kq_table; /* the kernel quota programs' table of charged objects */
	unsigned int kq_unfinished; /* scopes a killed quota set --kernel left without their limit (kq_unfinished) */
	/* rdmacg */
	struct metrics_rdmacg *rdmacg;
	size_t nrdmacg;
};

struct metrics_ctx;

/* Nothing is opened yet: sources are opened by the first collection (and again whenever they fail). */
int metrics_open(const struct metrics_opts *o, struct metrics_ctx **out);
void metrics_close(struct metrics_ctx *x);
/*
 * One collection: every source once. 0 (each source's failure is in s->err), or -ENOMEM. s is always
 * initialised; release it with metrics_snap_free().
 */
int metrics_collect(struct metrics_ctx *x, struct metrics_snap *s);
void metrics_snap_free(struct metrics_snap *s);
/* With follow: read the ledger's refusals and the monitor's counters now (cheap), between collections. */
void metrics_tick(struct metrics_ctx *x);

#endif
