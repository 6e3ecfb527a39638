/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The shared-memory ledger: RDMA resource limits per scope and the usage charged by managed processes. */
#ifndef RDMACTL_LEDGER_H
#define RDMACTL_LEDGER_H

/*
 * Layout and trust model
 * ----------------------
 * The ledger is two files, mapped shared by every participant:
 *   PATH        the *policy*: global, cgroup and pid limits. Created 0644 by whoever runs `quota init`
 *               (root in production): only its owner can raise or remove limits. Everybody maps it read-only.
 *   PATH.usage  the *usage*: one slot per attached process (its charged usage), the jobs of `rdmactl run`
 *               (name, limits, totals), the running totals of the global and cgroup scopes, the denial
 *               counters and a small ring of recent denials. Mode 0666: every managed process charges itself.
 * PATH is ledger_default_path(): $RDMACTL_LEDGER, else /dev/shm/rdmactl.ledger.
 * A hostile process can write PATH.usage (forge its own counters, a job's limits, or exhaust a shared
 * budget): the ledger is a cooperative accounting layer; the hard backstop is the rdma cgroup (rdma.max).
 *
 * Scopes and kinds
 * ----------------
 * A reserve is checked against every scope that applies to the calling process: its own pid limit, its job
 * (if it was started by `rdmactl run`), every cgroup that has a ledger entry and is the process's cgroup or
 * an ancestor of it (cgroup read from /proc/self/cgroup at attach time), and the global scope.
 * Kinds are counters, except LEDGER_WR: a per-QP work-request depth cap, only checked (never charged).
 *
 * Concurrency (why it is exact)
 * -----------------------------
 * Per-slot usage is the source of truth; per-slot grants (see Grants) are what the scope totals carry.
 * Scope totals are kept by lock-free compare-and-swap that never lets a total pass its limit. Each
 * operation that moves a grant brackets itself with an in-flight counter in its own slot. A reclaimer (gc)
 * holds the gc lock; a dead slot with no operation in flight has its grants subtracted from the totals it
 * was charged to; a dead slot that died mid-operation (in-flight != 0), a new cgroup entry, or a limit set
 * or changed triggers a *recount*: the reclaimer freezes new
 * operations (one flag), waits until no live slot has an operation in flight, lowers every grant to its
 * usage, sets every total to the sum of live slot grants, and unfreezes. Totals therefore return to exactly
 * the sum of live usage. Liveness = /proc/PID exists and its start time (stat field 22) matches the slot's,
 * so a reused pid never inherits usage or pid limits.
 *
 * Grants
 * ------
 * A slot's grant of a kind is what the totals of its scopes carry for it: its usage plus an allowance.
 * Usage never passes the grant (but for a create that found it short and is taking its add back; readers
 * show the smaller of the two). A create within the grant is one atomic add on the slot's usage and one load
 * of its grant, and touches nothing shared with other processes; a destroy is one atomic subtract and one
 * load. A create beyond the grant raises it in an operation, through every scope with a limit (the totals
 * first, the grant last), by what is missing plus an allowance: a quarter of the room left under the
 * tightest limit, at most 32 objects (256 MiB of MR bytes), so none near a limit. A destroy that leaves the
 * grant more than twice its allowance above usage gives the rest back (every destroy, while a limit is
 * reached or passed). A kind no limit applies to gets a grant no total carries (unlimited).
 * Allowances are taken back (a recount lowers each grant to its usage, never raises it) on every limit set
 * or changed. A refusal by a shared scope makes the kind tight for five seconds (raises take what is missing
 * only, releases keep nothing, so hundreds of processes starting at once take no new allowances while it
 * retries), gives back what dead processes held, cuts every live slot's allowance of the kind under the gc
 * lock (no freeze: grant_cut's compare-and-swap, the owner's own), and tries again until the scope's usage
 * leaves no room (30 s at most). A create is thus refused only when what is in use, not what is granted,
 * fills the limit, and the refusal names that usage. The read side (quota show,
 * top, the exporter) shows the sum of the slots' usage; for a kind the scope limits, at most its total
 * (the slots are read one after the other: a sum read while processes come and go can pass what was in use
 * at any one time).
 *
 * Totals
 * ------
 * A job's, a cgroup entry's and the global total of a kind are kept only while that scope has a limit on
 * that kind (the slot's grant always is): an operation charges the slot and the totals next to a limit,
 * nothing else. A limit where there was none (ledger_set_limit() from unlimited, or a new cgroup entry) is
 * published while operations are frozen, and every total is recounted from the slots before anyone charges
 * against it, so a total is exact from the first operation that sees its limit (see doc/preload-cost.md).
 *
 * Hot path: within its grant, the interceptor's operation (ledger_reserve_obj(), inline in the preload by
 * lib/ledger/obj.h) touches its own slot only. Beyond it, operations are atomics on shared memory only (no
 * syscalls, no locks). The handle caches the limits that apply to the process (pid and global values,
 * cgroup entries by index) and, per kind, a plan: the counters to charge with their limits; every limit
 * change bumps a generation counter that sits on the usage file's first page, next to the freeze flag, and
 * the next operation refreshes the cache (slow path, under a process-local mutex; also every 4096
 * operations, whatever the counter says). So an operation reads no policy; it touches the usage file's first
 * page, its slot, and the pages of the totals it charges (a job's on one page). A frozen ledger (recount in
 * progress, normally microseconds) makes operations spin-yield (not the interceptor's within a grant: a
 * recount lowers grants under it safely); a freeze left by a dead gc is finished by the waiter after 0.5 s,
 * and one that lasts more than 5 s (a stuck gc, or a hostile writer) is ignored, so that nothing blocks an
 * application forever.
 *
 * All functions return 0 or -errno. Messages for open/validation failures are in ledger_error().
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/kinds.h"

#define LEDGER_DEFAULT_PATH "/dev/shm/rdmactl.ledger"
#define LEDGER_ENV_PATH "RDMACTL_LEDGER" /* ledger path override */
#define LEDGER_ENV_JOB "RDMACTL_JOB"     /* job name set by `rdmactl run` for the whole tree */
#define LEDGER_PRELOAD_NAME "librdmactl-preload.so" /* the interceptor, whose processes attach to the ledger */
/*
 * For the preload: what to do when the ledger cannot be opened or is invalid. "open" (default): allow
 * everything, warn once on stderr. "closed": refuse every creation with the error.
 */
#define LEDGER_ENV_FAIL "RDMACTL_FAIL"

#define LEDGER_UNLIMITED UINT64_MAX
#define LEDGER_NAME_MAX 64   /* job name, including NUL */
#define LEDGER_CGROUP_MAX 256 /* cgroup path relative to the cgroup2 root ("/a/b"), including NUL */

/*
 * Capacity of the tables. Process slots: set by `quota init --procs N` (ledger_init_procs()), 1 KiB of the
 * usage file each; the others are fixed by the file format.
 */
#define LEDGER_DEFAULT_PROCS 16384
#define LEDGER_PROCS_MAX (1u << 20)
#define LEDGER_MAX_JOBS 128
#define LEDGER_MAX_CGROUPS 64
#define LEDGER_MAX_PIDLIMITS 256
#define LEDGER_DENIAL_RING 64

/* The ledger's kinds: the rows of lib/core/kinds.h marked led, in that order (LEDGER_WR is a cap, see above). */
enum ledger_kind {
#define X(name, NAME, led, ...) KINDS_IF(led, LEDGER_##NAME, )
	KINDS(X)
#undef X
	LEDGER_NKINDS,
};

/* The kind's name in lib/core/kinds.h ("qp", "mr_bytes", "wr"...); NULL when out of range. */
const char *ledger_kind_name(enum ledger_kind kind);
/* The kind names in enum order, NULL-terminated (for match_word). */
extern const char *const ledger_kind_names[];

enum ledger_scope_type {
	LEDGER_SCOPE_PROCESS,
	LEDGER_SCOPE_JOB,
	LEDGER_SCOPE_CGROUP,
	LEDGER_SCOPE_GLOBAL,
};

/* "process", "job", "cgroup", "global". */
const char *ledger_scope_type_name(enum ledger_scope_type type);

struct ledger_scope {
	enum ledger_scope_type type;
	pid_t pid;           /* PROCESS */
	uint64_t start_time; /* PROCESS: /proc/PID/stat field 22; 0 = look it up from /proc */
	char name[LEDGER_CGROUP_MAX]; /* JOB: job name; CGROUP: path relative to the cgroup2 root, "/a/b" */
};

/* Why a reserve was refused: enough to print the message users see. */
struct ledger_denial {
	enum ledger_kind kind;
	struct ledger_scope scope; /* the scope whose limit refused */
	pid_t pid;                 /* the requesting process */
	char job[LEDGER_NAME_MAX]; /* its job, "" if none */
	uint64_t amount;           /* requested */
	uint64_t usage;            /* usage of that scope before the request */
	uint64_t limit;            /* the limit that refused */
	char env[32];              /* "" for ledger limits; else the variable that set it (RDMACTL_MAX_QP) */
};

/* A denial as recorded in the ring. */
struct ledger_denial_event {
	uint64_t seq;     /* 1, 2, ...: monotonic over the ledger's life */
	uint64_t time_ns; /* CLOCK_REALTIME */
	struct ledger_denial d;
};

/* One scope as seen by `quota show` / `top`. */
struct ledger_scope_stat {
	struct ledger_scope scope;
	uint64_t limit[LEDGER_NKINDS]; /* LEDGER_UNLIMITED when none */
	uint64_t usage[LEDGER_NKINDS]; /* LEDGER_WR: always 0 */
	uint64_t refused[LEDGER_NKINDS]; /* creations this scope's limits refused (since its entry was made) */
	unsigned int nprocs;           /* live attached processes in this scope */
};

/* One live attached process. */
struct ledger_proc_stat {
	pid_t pid;
	uint64_t start_time;
	char job[LEDGER_NAME_MAX];
	char cgroup[LEDGER_CGROUP_MAX];
	uint64_t usage[LEDGER_NKINDS];
	uint64_t limit[LEDGER_NKINDS]; /* its pid limits */
};

struct ledger; /* opaque: the mappings, plus this process's attachment */

/* ledger_open() flags */
enum {
	LEDGER_POLICY_RW = 1 << 0, /* map the policy writable (set/unset limits, init); -EACCES if not allowed */
	LEDGER_CREATE = 1 << 1,    /* create an empty ledger if none exists (never overwrites) */
};

/* $RDMACTL_LEDGER if set and non-empty, else LEDGER_DEFAULT_PATH. */
const char *ledger_default_path(void);

/*
 * Open and validate the ledger at path (NULL = ledger_default_path()). Errors, each with a message in
 * ledger_error(): -ENOENT missing (hint: rdmactl quota init), -EACCES, -EBADMSG truncated / bad magic /
 * bad checksum / inconsistent sizes, -EPROTO other format version. Never crashes on any file content.
 */
int ledger_open(const char *path, unsigned int flags, struct ledger **out);
/*
 * ledger_open() into memory the caller provides (LEDGER_HANDLE_SIZE bytes, 16-byte aligned), which
 * ledger_close() leaves alone: the preload keeps the handle in the same page as its other per-call
 * variables. -EINVAL without such memory.
 */
#define LEDGER_HANDLE_SIZE 4096
int ledger_open_in(void *mem, const char *path, unsigned int flags, struct ledger **out);
/* Unmap; does not detach (a process's slot lives until it exits and is reclaimed, or ledger_detach). */
void ledger_close(struct ledger *l);
/* Path of the policy file of an open ledger. */
const char *ledger_path(const struct ledger *l);

/*
 * (Re)create an empty ledger at path: both files, policy 0644 owned by the caller, usage 0666. Replaces
 * whatever is there (atomically, by rename) — processes that still map the old files keep the old ledger.
 */
int ledger_init(const char *path);
/* ledger_init() with nprocs process slots (1..LEDGER_PROCS_MAX; ledger_init() has LEDGER_DEFAULT_PROCS). */
int ledger_init_procs(const char *path, unsigned int nprocs);
/* The number of process slots of an open ledger; *in_use (may be NULL) gets how many are taken now. */
unsigned int ledger_capacity(const struct ledger *l, unsigned int *in_use);

/* Human-readable reason for the last failure of ledger_open/ledger_init in this thread. */
const char *ledger_error(void);

/*
 * Attach the calling process: take a fresh slot (pid, start time, job, cgroup from /proc/self). job NULL
 * means $RDMACTL_JOB if set, "" none. With a job name, the job must exist (-ENOENT otherwise). -ENOSPC when
 * no slot is free even after a gc. Attaching twice is -EALREADY. One process image attaches once: a slot
 * still owned by this pid and start time is the one of the image before an exec(), whose RDMA objects the
 * kernel destroyed at the exec; it is freed and its usage given back to every scope before the new slot
 * is taken.
 */
int ledger_attach(struct ledger *l, const char *job);
/*
 * In a forked child (pthread_atfork child handler or after detecting getpid() changed): forget the parent's
 * slot without touching it and attach anew with zero usage, same job.
 */
int ledger_attach_child(struct ledger *l);
/* Give back everything still charged and free the slot (clean exit). */
int ledger_detach(struct ledger *l);
/* True when this handle has a slot. */
bool ledger_attached(const struct ledger *l);
/*
 * Would a limit of the ledger apply to the calling process: it is in a job (job, or $RDMACTL_JOB when NULL),
 * its cgroup is or is below a cgroup entry, a global limit is set, or a pid limit names it. For a process
 * that could not attach (a full ledger): what has limits must fail closed.
 */
bool ledger_limits_apply(struct ledger *l, const char *job);
/*
 * For the interceptor: call before a device open is charged and again once the open returned and its charge
 * is settled. It marks the slot as one whose usage mirrors uverbs objects, so that the gc may give back the
 * usage of a live process that holds no uverbs device (see ledger_gc). No-op when not attached.
 */
void ledger_open_mark(struct ledger *l);

/*
 * Hot path. Charge amount of kind to the calling process and to every scope that applies, atomically per
 * scope, never letting any total exceed its limit. -EDQUOT: refused, nothing charged, *why filled (why may
 * be NULL) and the denial recorded (counters + ring). Before refusing, reserve runs one gc so dead holders
 * do not block. LEDGER_WR: amount is the requested depth; only checked. -ENOTCONN if not attached.
 */
int ledger_reserve(struct ledger *l, enum ledger_kind kind, uint64_t amount, struct ledger_denial *why);
/* Give amount back. -EINVAL if more than the process holds (nothing changed). LEDGER_WR: no-op. */
int ledger_release(struct ledger *l, enum ledger_kind kind, uint64_t amount);
/*
 * Several kinds in one operation (an MR's count and bytes, a QP's WR depth check and count): all charged or
 * none, checked in the order given (a refusal describes the first kind that does not fit, and nothing stays
 * charged), with one in-flight bracket and one policy check instead of one per kind. n is 1..LEDGER_NKINDS,
 * each kind at most once (-EINVAL otherwise). Same results as ledger_reserve() for each kind in turn, with
 * the earlier ones released again when a later one is refused.
 */
int ledger_reserve_n(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts, unsigned int n,
		     struct ledger_denial *why);
/* ledger_release() of each kind in one operation; -EINVAL if any was more than held (that one unchanged). */
int ledger_release_n(struct ledger *l, const enum ledger_kind *kinds, const uint64_t *amounts, unsigned int n);
/*
 * The interceptor's operation, one object of kind: its count, and extra, which is for LEDGER_MR its bytes
 * (charged to LEDGER_MR_BYTES with it) and for any other kind a work-request depth (checked against the
 * LEDGER_WR caps; 0 for an object that is not a queue). The same result as ledger_reserve_n() of those kinds
 * (which it runs, to decide, describe and record a refusal), in its usual case (within the slot's grant,
 * lib/ledger/obj.h) without the generality. kind LEDGER_WR or LEDGER_MR_BYTES is -EINVAL.
 */
int ledger_reserve_obj(struct ledger *l, enum ledger_kind kind, uint64_t extra, struct ledger_denial *why);
/*
 * For the interceptor: fn decides what a refused or failed ledger_reserve_obj() returns (it logs the refusal;
 * 0 lets the creation go on) and gets the denial (NULL when err is not -EDQUOT). With it, why may be NULL,
 * and the caller's usual path is a tail call.
 */
void ledger_on_refusal(struct ledger *l, int (*fn)(int err, enum ledger_kind kind, const struct ledger_denial *why));
/* Give back what ledger_reserve_obj() charged: one of kind, and bytes with LEDGER_MR (ignored otherwise). */
int ledger_release_obj(struct ledger *l, enum ledger_kind kind, uint64_t bytes);

/*
 * Record a refusal decided outside the ledger, by a per-process limit from the environment variable env
 * (the preload's RDMACTL_MAX_*): a process-scope denial of the attached process, counted and put in the ring
 * like those of ledger_reserve(). *out (may be NULL) gets the denial. -ENOTCONN if not attached.
 */
int ledger_note_denial(struct ledger *l, enum ledger_kind kind, uint64_t amount, uint64_t usage, uint64_t limit,
		       const char *env, struct ledger_denial *out);

/*
 * "refused qp for pid 1234 (job train): 5/5 in use, limit set by job train" (no prefix, no newline).
 * Scope words: "pid 1234", "job NAME", "cgroup /a/b", "global limit"; a denial with env set says
 * "limit set by RDMACTL_MAX_QP".
 */
int ledger_format_denial(const struct ledger_denial *d, char *buf, size_t len);

/*
 * Policy (needs LEDGER_POLICY_RW for pid, cgroup and global scopes; jobs live in the usage file: a job's
 * limits are changed by its creator's euid and root only, else -EPERM). value LEDGER_UNLIMITED removes the limit. Applies to the next
 * reserve; a limit below current usage refuses new reserves and never takes anything back.
 * PROCESS: the pid must exist (-ESRCH); start_time 0 is looked up. JOB: -ENOENT if no such job.
 * CGROUP: name is the path relative to the cgroup2 root, normalised ("/a/b", no trailing '/'; "/" is
 * -EINVAL: use the global scope). -ENOSPC when the table is full.
 */
int ledger_set_limit(struct ledger *l, const struct ledger_scope *scope, enum ledger_kind kind, uint64_t value);

/*
 * Root only: make both files of the ledger root's where they are not (owner and group 0, the policy 0644, the
 * usage 0666), as 'quota init' run by root makes them. A ledger that an unprivileged 'rdmactl run' created first (owned by
 * that user, who could write its policy file) becomes root's on root's first change of a limit; *was is the
 * uid it belonged to (0 when it was root's already). Mappings made before stay as they were.
 */
int ledger_take_over(struct ledger *l, uid_t *was);

/*
 * Jobs (`rdmactl run`): create the job before starting the command, with the given limits (NULL = all
 * unlimited). The creating process is the job's owner; the entry lives while its owner or any attached
 * process of the job is alive. -EEXIST if a live job has that name, -EINVAL for an empty/too long name.
 */
int ledger_job_create(struct ledger *l, const char *name, const uint64_t limit[LEDGER_NKINDS]);
/* The owner is done (the command exited): the entry goes as soon as no attached process uses it. */
int ledger_job_release(struct ledger *l, const char *name);

/*
 * Reclaim dead holders (processes whose pid is gone or whose start time changed), stale pid limits (only
 * with LEDGER_POLICY_RW), and finished jobs. Safe against concurrent reserves from live processes. Runs
 * automatically when attach finds no free slot and before a reserve is refused; `rdmactl quota gc` and
 * `quota show` run it on demand. *reclaimed (may be NULL) = number of dead process slots freed.
 * Also gives back the usage of a live process marked by ledger_open_mark() that holds no uverbs device
 * (its charging image exec()ed away and the new one never used verbs), when /proc lets us see its open
 * files; its slot stays.
 */
int ledger_gc(struct ledger *l, unsigned int *reclaimed);

/*
 * Read side (for `quota show`, `top`, `monitor`). Callbacks return 0 to continue, non-zero to stop (that
 * value is returned). Scopes: global first, then cgroups, jobs, then processes that have a pid limit or an
 * attached slot. Values are a snapshot per field (exact at rest).
 */
int ledger_foreach_scope(struct ledger *l, int (*cb)(const struct ledger_scope_stat *st, void *arg), void *arg);
/*
 * One scope. JOB: -ENOENT if no such job. CGROUP: its entry, or (no limits) the sum of its live attached
 * processes; -ENOENT when it has neither. PROCESS: -ESRCH if no such process (limits and usage may be none).
 */
int ledger_get_scope(struct ledger *l, const struct ledger_scope *scope, struct ledger_scope_stat *out);
/* Live attached processes. */
int ledger_foreach_proc(struct ledger *l, int (*cb)(const struct ledger_proc_stat *st, void *arg), void *arg);

/* Denials: total and per kind, since the ledger was created. */
int ledger_denial_counts(struct ledger *l, uint64_t *total, uint64_t per_kind[LEDGER_NKINDS]);
/*
 * Ring of recent denials with seq > *since, oldest first; *since is advanced to the last one seen
 * (start with 0). Older ones than the ring holds are lost (the seq gap shows how many).
 */
int ledger_foreach_denial(struct ledger *l, uint64_t *since,
			  int (*cb)(const struct ledger_denial_event *ev, void *arg), void *arg);

/* Helpers shared with the CLI. */
/* Start time of pid (stat field 22, clock ticks since boot); -ESRCH if no such process. */
int ledger_pid_start_time(pid_t pid, uint64_t *out);
/* Normalise a cgroup path into "/a/b" (relative to the cgroup2 root); -EINVAL if not representable. */
int ledger_cgroup_normalize(const char *in, char *out, size_t len);

#endif
