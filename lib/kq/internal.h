/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Between lib/kq/kqmaps.c (the pinned maps), kq.c (limits) and kqload.c (the programs: load, attach, populate). */
#ifndef RDMACTL_KQ_INTERNAL_H
#define RDMACTL_KQ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kq/kq.h"

#define PIN_ROOT "/sys/fs/bpf/rdmactl"

enum { M_LIMITS, M_USAGE, M_OBJS, M_STATE, M_EVENTS, M_GONE, M_WANT, M_WALKED, M_NR };
extern const char *const kq_map_names[M_NR];
extern const size_t kq_map_vsize[M_NR];

struct kq {
	int fd[M_NR];
	struct kq_state *st; /* kq_state, mapped: rdmactl's fields are stored, the programs' counters read */
	size_t st_len;
};

/* kqmaps.c: a scope with a maximum in force (not one whose count is under way, or was killed: every max unlimited). */
bool kq_limit_in_force(const struct kq_limit *lim);
/* kqmaps.c: the maps pinned, opened (read-only: no mapping of kq_state). */
int kq_open_pinned(struct kq *q, bool ro);
/* The programs attached while a limit exists (kqload.c), whose links kq_enforcement checks (kqmaps.c). */
#define KQ_NONDEMAND 16
extern const char *const kq_ondemand[KQ_NONDEMAND];

/* The error kq_error() returns, formatted; returns err. */
int kq_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A pin directory rdmactl trusts (root's, 0700, on bpffs), or an error that says what to do. */
int kq_verify_dir(const char *path);
void kq_pin_path(char *buf, size_t len, const char *name);
/* kqload.c: load and pin programs and maps (the pin root locked, nothing pinned). */
int kq_load_and_pin(void);
/* kqload.c: the programs attached while a limit exists, detached after the last (kq_objs emptied then). */
int kq_count_limits(struct kq *q);
/* The same, with the pin root locked by the caller (kq_lock). */
int kq_count_limits_locked(struct kq *q);
/* The pin root locked (an fd to close), or -errno: what is attached and the populations, one at a time. */
int kq_lock(void);
/*
 * kqmaps.c: the pin root locked with flock(2)'s HOW (kq_lock's LOCK_EX; a reader's LOCK_SH | LOCK_NB): its
 * descriptor (close it to unlock), or -errno, not said (-EWOULDBLOCK: held, not waited for).
 */
int kq_lock_root(int how);
/*
 * kqload.c: record what the tasks of a new scope already hold (sc: the scope with its epoch; ids: its tgid,
 * or the ids of its cgroup and those below; none for global), from the kernel's lists, each record charged
 * to sc; what they were charged is added to base. With the pin root locked and the programs attached.
 * kq_drop_found drops the population's records charged to nothing or to one of the n scopes sc alone (n 0: to
 * nothing), what it drops taken from kq_state.pop_base: the table read once, whatever n.
 */
int kq_populate(struct kq *q, const struct kq_scope *sc, const uint64_t *ids, size_t n, __s64 base[KQ_NK]);
/*
 * The count's end (after the rescan, or its failure): kq_state.pop_want and kq_want cleared, which kq_populate
 * leaves set so that the programs charge the scope what its owners' files make meanwhile (charge_counted).
 */
void kq_pop_done(struct kq *q);
void kq_drop_found(struct kq *q, const struct kq_scope *sc, size_t n);
/*
 * kqload.c: cb for each record of kq_objs, with a copy of it that may be old (the table read in batches, a
 * hash map's buckets whole; cb reads again what it changes). 0, cb's non-zero return, or -errno (said).
 */
int kq_objs_each(struct kq *q, int (*cb)(struct kq *q, __u64 key, const struct kq_obj *o, void *arg), void *arg);
/*
 * kqload.c: destroys marked in kq_gone (on) while the rescan gives records the new scope (kq_state.pop_scope,
 * as kq_populate left it), or no longer (off: -EAGAIN, said, when a destroy could not be marked).
 */
int kq_rescanning(struct kq *q, bool on);
/*
 * kqload.c, with the pin root locked: what a population left when its rdmactl was killed (SIGKILL, no
 * cleanup) is cleared: kq_state.populating and pop_want, kq_want, kq_gone, kq_walked, and its records
 * (charged to its scope, kq_state.pop_scope, whose limit is not in force: kq_set removes it). Under the lock
 * no population runs, so any such state is a dead one's.
 */
void kq_pop_recover(struct kq *q);
/*
 * kqload.c: the pin root's lock for a change of the maps (kq_lock), with what a killed rdmactl left cleared
 * (kq_pop_recover): the lock's descriptor (close it to unlock), or -errno (-EPERM: opened read-only).
 */
int kq_lock_writer(struct kq *q);

/*
 * kqmaps.c: does rdmactl run in the host's pid (cgroup) namespace? kq_need_host_ns: 0 when it does (the
 * cgroup one too when cgroup is set), else -EXDEV with kq_error() naming the namespace, what (the work that
 * cannot be done from there) and the fix.
 */
bool kq_pidns_host(void);
int64_t kq_boottime_offset(void);
bool kq_cgroupns_host(void);
int kq_need_host_ns(const char *what, bool cgroup);
/*
 * kqmaps.c: the host's pid and start time (clock ticks, as KQ_PID_ID keeps them) of process pid of rdmactl's
 * own pid namespace, whose start time there (/proc/PID/stat) is start; -ESRCH when it is gone or another
 * process has the number now, with kq_error() saying which.
 */
int kq_host_pid(pid_t pid, uint64_t start, pid_t *host, uint64_t *host_start);
/*
 * kqmaps.c: the pinned iterator program prog_NAME (its path written to path): its fd, or -errno (not said:
 * the caller knows what a missing pin means). kq_iter_run makes an iterator of it (for li; NULL: every
 * task), reads it to its end len bytes at a time into buf and hands each read to each (NULL: dropped; a
 * non-zero return ends the walk and is returned); a failure is said with kq_fail as "cannot WHAT".
 */
union bpf_iter_link_info;
int kq_iter_open(const char *name, char *path, size_t len);
int kq_iter_run(int prog, const char *path, union bpf_iter_link_info *li, void *buf, size_t len,
		int (*each)(const void *buf, size_t n, void *arg), void *arg, const char *what);

#endif
