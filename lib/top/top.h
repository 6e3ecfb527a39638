/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Per-process aggregation of RDMA netlink resource dumps: the model behind rdmactl top. */
#ifndef RDMACTL_TOP_H
#define RDMACTL_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "monitor/bpfmon.h"
#include "nl/nl.h"

struct ledger;

/* QP states as RES_STATE reports them (enum ib_qp_state): RESET, INIT, RTR, RTS, SQD, SQE, ERR. */
#define TOP_QP_NSTATES 7

struct top_counts {
	uint64_t n[NL_RES_NTYPES];	/* objects per kind */
	uint64_t mr_bytes;		/* sum of RES_MRLEN */
	uint64_t qp_state[TOP_QP_NSTATES]; /* QPs by state (QPs whose dump carried a known state) */
};

/* "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"; NULL past them. */
const char *top_qp_state_name(unsigned int state);

enum top_kind {
	TOP_PROC,	/* a user process (pid is its tgid) */
	TOP_KERNEL,	/* kernel-owned objects of one owner (comm is the owner's name) */
	TOP_UNKNOWN,	/* user objects whose creating thread is gone: the kernel reports no pid */
};

#define TOP_COMM_LEN 32
#define TOP_USER_LEN 32
#define TOP_MAX_DEVS 32

struct top_row {
	enum top_kind kind;
	pid_t pid;			/* tgid; 0 for kernel and unknown rows */
	bool resolved;			/* pid, comm and uid came from /proc (false: the thread was gone) */
	uint64_t start_time;		/* the process's start (/proc/PID/stat field 22) when the snapshot
					 * resolved it; 0 unknown (unresolved, or gone just then) */
	uid_t uid;
	char user[TOP_USER_LEN];	/* "" when unknown */
	char comm[TOP_COMM_LEN];
	/* the container and pod its cgroup names (core/cgroup.h's cgroup_ids; "" when none) */
	char pod_uid[72];
	char container_id[72];
	struct top_counts c;
	uint32_t devmask;		/* bit i: objects on top_snap.devs[i] */
	/*
	 * Quota use from the ledger: filled by top_join_ledger(). Index: enum nl_res_type, plus NL_RES_NTYPES
	 * for MR bytes. A process with kernel objects but no live ledger slot of its own is "unmanaged".
	 */
	struct {
		bool joined;		/* the ledger was read for this snapshot */
		bool managed;		/* the process is attached to the ledger (pid and start time: see top_join) */
		char job[64];		/* its job ("" none) */
		uint64_t used[NL_RES_NTYPES + 1];	/* the process's own charged usage (ledger accounting) */
		uint64_t limit[NL_RES_NTYPES + 1];	/* tightest applicable limit; UINT64_MAX: no limit */
		uint64_t scope_used[NL_RES_NTYPES + 1];	/* usage of the scope that sets limit[] */
		int scope[NL_RES_NTYPES + 1];		/* enum ledger_scope_type of limit[]; -1: none */
		bool has_kind[NL_RES_NTYPES + 1];	/* the ledger accounts this kind (not cm_id) */
		uint64_t denials;	/* denials of this pid in the ledger's ring of recent denials */
	} quota;
	/* Create/destroy rates per second from the BPF per-tgid counters: filled by top_join_rates(). */
	struct {
		bool joined;
		double create[NL_RES_NTYPES];
		double destroy[NL_RES_NTYPES];
		double create_total, destroy_total;	/* every kind the monitor counts */
	} rate;
};

#define TOP_MAX_PORTS 8

struct top_dev {
	struct nl_dev dev;
	struct nl_port ports[TOP_MAX_PORTS];
	unsigned int nports;
	struct nl_summary summary;	/* kernel's own counts (includes objects hidden from us) */
	bool has_summary;
	struct top_counts totals;	/* objects listed by the dumps, all owners, before row filters */
	uint32_t unsupported;		/* bit t: the kernel cannot dump kind t */
};

/* Where a snapshot's counts come from. */
enum top_source {
	TOP_SRC_DUMP,		/* RDMA netlink's per-object dumps */
	TOP_SRC_COUNTERS,	/* the monitor's per-process counters, proven complete (top_snapshot_counters) */
};

struct top_snap {
	enum top_source source;
	char source_why[192];		/* why not the counters, when they were asked for ("" otherwise) */
	struct timespec time;		/* CLOCK_REALTIME when the snapshot started */
	double elapsed_ms;		/* time the snapshot took */
	struct top_dev devs[TOP_MAX_DEVS];
	unsigned int ndevs;
	unsigned int ndevs_total;	/* before --dev filtering */
	struct top_row *rows;
	size_t nrows, cap;
	struct top_counts totals;	/* sum over devs[].totals */
	bool privileged;		/* euid 0: the kernel also gives MR keys (not shown by top) */
	unsigned int unresolved;	/* threads /proc did not know (exited between dump and lookup, or hidden) */
	bool ledger_joined;		/* top_join_ledger() ran on this snapshot */
	bool rates_joined;		/* top_join_rates() ran on this snapshot */
	double rate_interval;		/* seconds between the two counter reads */
	bool states_by_number;		/* counters source with QP states, each QP asked for by number */
	size_t qp_noport;		/* of those, QPs no port answered for (RESET inferred: nl_qp_get) */
	/* tid -> row index map, valid for this snapshot only */
	struct top_map *map;
	/* while a device is dumped: its contexts' and PDs' numbers (+ 1) -> the row of their process */
	struct top_map *ctxs, *pds;
};

struct top_filter {
	const pid_t *pids;
	size_t npids;
	const char *dev;		/* device name, NULL: all */
	bool has_uid;
	uid_t uid;
	const char *comm;		/* exact comm (or kernel owner name) */
};

/* One read of the BPF per-tgid counters map, sorted by tgid. */
struct top_counters {
	double mono;			/* CLOCK_MONOTONIC seconds of the read */
	size_t n, cap;
	struct top_counter {
		pid_t tgid;
		struct mon_counts c;
	} *v;
};

enum top_key {
#define X(name, NAME, led, nl, ...) KINDS_IF(nl, TOP_KEY_##NAME = NL_RES_##NAME, )
	KINDS(X)
#undef X
	TOP_KEY_MR_BYTES = NL_RES_NTYPES,
	TOP_KEY_PID,
	TOP_KEY_USER,
	TOP_KEY_COMM,
	TOP_NKEYS,
};

/* "qp", "mr_bytes", "pid"...; NULL-terminated list for match_word(). */
extern const char *const top_key_names[TOP_NKEYS + 1];

struct top_ctx;

/* Opens the one netlink socket of this invocation. */
int top_open(struct top_ctx **out);
void top_close(struct top_ctx *t);
/* The kernel's extended-ack message of the last failed request ("" when none). */
const char *top_ext_ack(const struct top_ctx *t);

/*
 * Take one snapshot: devices, ports, summaries, dumps of every kind, aggregated per tgid (RES_PID is
 * the creating thread: mapped through /proc/<tid>/status), kernel objects per owner name. Rows not
 * matching f are dropped (device totals still count them). A device removed, or a dump the kernel marked
 * inconsistent, while it looked: it looks again (three times in all). 0 or -errno (s released); a
 * snapshot with no device is not an error (ndevs_total == 0).
 */
int top_snapshot(struct top_ctx *t, const struct top_filter *f, struct top_snap *s);
void top_snap_free(struct top_snap *s);

/*
 * The same snapshot from the counters a running monitor pins, in time proportional to processes and devices
 * (no per-object dump): rows of user processes only, no per-row devices (devmask 0), device totals from the
 * kernel's summary. QP states: none, or with states, the states of the processes' QPs, each asked for by the
 * number the monitor keeps (nl_qp_get: O(QPs), where the dump is O(QPs^2)); kernel QPs are then in no state
 * count. Only when the counts are provably complete (topbase.c) and, with states, the monitor's QP numbers
 * are exactly its counts' QPs: else a negative errno and the reason in why (s released): -ENOENT no monitor,
 * -EAGAIN objects came and went while it read (worth a retry), others lasting.
 */
int top_snapshot_counters(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, bool states,
			  char *why, size_t len);

/* --- topbase.c: the completeness rule ---------------------------------------------------------------- */
int64_t top_live(const struct mon_counts *c, unsigned int t);
/* Two reads hold the same tgids and counts. */
bool top_counters_equal(const struct top_counters *a, const struct top_counters *b);
/* A user tgid with a count below zero (it destroyed what the counters never saw created), or 0. */
pid_t top_counters_negative(const struct top_counters *c);
/* The monitor's baseline test: c1 and c2 read before and after dump (counters), no user row in the dump, no
 * user tgid below zero. 0, or -errno with the reason in why. */
int top_base_check(const struct top_snap *dump, const struct top_counters *c1, const struct top_counters *c2,
		   const struct top_counters *dev, char *why, size_t len);
/* The per-device bases of st from the dump and the device counters read with it. */
void top_base_fill(struct mon_status *st, const struct top_snap *dump, const struct top_counters *dev);
/* Every device of s (with its summary): the kernel's count equals base + the device counters' live count;
 * fills s's device totals from them. 0, or -errno with the reason in why. */
int top_counts_check(const struct mon_status *st, struct top_snap *s, const struct top_counters *dev, char *why,
		     size_t len);

/* Sort rows: counts and sizes largest first, pid/user/comm ascending; reverse flips that. */
void top_sort(struct top_snap *s, enum top_key key, bool reverse);

/*
 * The join: the ledger, the kernel quotas' refusals and the monitor's counters put beside each process row
 * of a snapshot, the one written for top (batch and screen), `monitor --audit` and the exporter.
 *
 * "Managed" is one thing everywhere: the process has a live slot in the ledger taken by that very process,
 * pid and start time (/proc/PID/stat field 22) both, the start time the snapshot read with the row's pid.
 * A slot of another process that had (or has since taken) the pid does not make the row managed, nor
 * does any slot a row whose start time is unknown.
 */

/* The ledger's side of the join, read once: every scope (in ledger_foreach_scope()'s order: global,
 * cgroups, jobs, processes), the live attached processes, the pid of each refusal in the ring. */
struct top_ledger {
	struct ledger_scope_stat *scopes;
	size_t nscopes;
	struct ledger_proc_stat *procs;
	size_t nprocs;
	pid_t *denied;
	size_t ndenied;
};

/* Read it. 0 or -errno (-ENOMEM, -EIO; v left empty). */
int top_ledger_read(struct ledger *l, struct top_ledger *v);
void top_ledger_free(struct top_ledger *v);
/* The slot of the process pid started at start (see above), or NULL: unmanaged (always when start is 0). */
const struct ledger_proc_stat *top_ledger_proc(const struct top_ledger *v, pid_t pid, uint64_t start);
/*
 * Into every process row: managed or not, the process's usage, and per kind the tightest applicable limit
 * (pid, job, cgroups containing its cgroup, global: least headroom wins), its refusals in the ring.
 */
void top_join_ledger_view(struct top_snap *s, const struct top_ledger *v);
/* top_ledger_read() and top_join_ledger_view(): 0 or -errno (rows untouched on error). */
int top_join_ledger(struct top_snap *s, struct ledger *l);
/* One more refusal for the process pid (the kernel's, after top_join_ledger()). */
void top_count_denial(struct top_snap *s, pid_t pid);

/* Read every tgid of the counters map fd (see mon_counters_open_pinned()). 0 or -errno. */
int top_counters_read(int fd, struct top_counters *out);
void top_counters_free(struct top_counters *c);
/* Rates between two reads (prev older than cur) into the process rows; counters that went down count 0. */
void top_join_rates(struct top_snap *s, const struct top_counters *prev, const struct top_counters *cur);

struct kq;

/* The sources of one join, each optional (NULL: not joined), opened and kept by the caller. */
struct top_sources {
	struct ledger *ledger;		/* quota columns, managed */
	struct kq *kq;			/* the kernel quotas' refusals and kills, counted with the ledger's
					 * (only when the ledger was joined) */
	const struct top_counters *prev, *cur;	/* rates: two reads of the monitor's counters, prev older */
};

/* Join src into s's process rows: the ledger, then the kernel's refusals, then rates. 0, or the ledger's
 * -errno (then neither quota columns nor the kernel's refusals; rates still). */
int top_join(struct top_snap *s, const struct top_sources *src);

/* Parse a "Tgid:"/"Uid:"/"Name:" status text (/proc/PID/status); exposed for tests. */
int top_parse_status(const char *text, pid_t *tgid, uid_t *uid, char *comm, size_t commlen);

#endif
