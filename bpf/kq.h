/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel quotas: what the BPF LSM programs (bpf/kq.bpf.c) and their user space (lib/kq/kq.c) share. The maps
 * are pinned under KQ_PIN_DIR and outlive rdmactl: no daemon, the next rdmactl opens them again.
 */
#ifndef RDMACTL_KQ_H
#define RDMACTL_KQ_H

#include "core/kinds.h"

#define KQ_PIN_DIR "/sys/fs/bpf/rdmactl/kq"

/* The counted ledger kinds, in ledger order (ctx ... wq); the wr cap is not a count. */
enum kq_kind {
#define X(name, NAME, led, ...) KINDS_IF(led, KQ_##NAME, )
	KINDS(X)
#undef X
};
#define KQ_NK KQ_WR

enum kq_scope_type { KQ_SCOPE_GLOBAL = 1, KQ_SCOPE_PID = 2, KQ_SCOPE_CGROUP = 3 };

/* kq_state.populating during a rescan (1 during the population's walk) */
#define KQ_RESCANNING 2

/*
 * A scope: the global one (id 0), a process (KQ_PID_ID: its tgid and its start time, so that a limit never
 * passes to a later process given the same number) or a cgroup (its cgroup id, the directory's inode).
 */
struct kq_scope {
	__u32 type;
	__u32 epoch; /* 0 in kq_limits' keys; the limit's epoch in kq_usage's keys and in an object's charges */
	__u64 id;
};

/* The same scope in the same epoch? (the programs and rdmactl alike; an int, bool is the includer's) */
static __always_inline int kq_scope_eq(const struct kq_scope *a, const struct kq_scope *b)
{
	return a->type == b->type && a->id == b->id && a->epoch == b->epoch;
}

/*
 * A process scope's id: the tgid (in the initial pid namespace, below 2^22 = PID_MAX_LIMIT) in the low 22 bits,
 * the start time above them in clock ticks since boot (/proc/PID/stat field 22: the group leader's
 * start_boottime in ns / (1e9 / USER_HZ), USER_HZ 100), 42 bits: 1,390 years of uptime.
 */
#define KQ_PID_BITS 22
#define KQ_PID_NS_PER_TICK 10000000ULL
#define KQ_PID_ID(tgid, ticks) (((__u64)(ticks) << KQ_PID_BITS) | ((__u64)(tgid) & ((1u << KQ_PID_BITS) - 1)))
#define KQ_PID_TGID(id) ((__u32)((id) & ((1u << KQ_PID_BITS) - 1)))
#define KQ_PID_START(id) ((__u64)(id) >> KQ_PID_BITS)

#define KQ_UNLIMITED (~0ULL)

/*
 * What the iterator kq_iter_pid (bpf/kqpop.bpf.h) writes for each thread of the one process it is made for
 * (a task iterator given that process's pidfd: lib/kq/kqload.c kq_host_pid), so that a pid given in another
 * pid namespace becomes the host's.
 */
struct kq_pidof {
	__u32 tgid;     /* in the host's pid namespace */
	__u32 pad;
	__u64 start_ns; /* the group leader's start_boottime: /proc/PID/stat's start time, in ns */
};

/* Written by user space only (map kq_limits). base: usage found by the rescan when the limit was set. */
struct kq_limit {
	__u64 max[KQ_NK];
	__s64 base[KQ_NK];
	/*
	 * Given when the scope is made, a number no earlier scope had (kq_state.epochs): its usage is kept under
	 * the key (type, epoch, id), and an object's charges name it, so that a destroy gives back only to the
	 * scope it was charged to. A limit lifted and set again is a new scope: the rescan counts what the old one
	 * charged, and the old charges' destroys find no usage of theirs (nothing given back twice).
	 */
	__u32 epoch;
	__u32 pad;
};

/* Written by the programs only, with atomic adds (map kq_usage); one entry per limited scope. */
struct kq_usage {
	__s64 use[KQ_NK];
	__u64 refused[KQ_NK];
	__u64 killed[KQ_NK];
};

/*
 * Scopes one object can be charged to: global, its process, and up to KQ_MAXCHG - 2 cgroups (more when global
 * and process are not limited). quota set refuses a limit that would put more limited scopes than that on one
 * path, or a cgroup deeper than KQ_MAXLVL (lib/kq/kq.c fits); a creation that meets more anyway is refused.
 */
#define KQ_MAXCHG 6
/* Cgroup levels looked at above a task (level 1 is a child of the root). */
#define KQ_MAXLVL 8
/* the most cgroups below a limited one that its first count can name (kq_want) */
#define KQ_WANT_MAX (1 << 18)

/* One live charged object (map kq_objs, keyed by the kernel's uobject or, for a context, its file's struct ib_uverbs_file). */
struct kq_obj {
	__u8 kind;
	__u8 n;        /* scopes in sc[] */
	__u16 pad;
	__u32 tgid;    /* its owner: the opener of its uverbs file when that has a record, else its creator */
	__u64 cgid;    /* the owner's cgroup */
	__u64 bytes;   /* MRs: the registered length charged as mr_bytes */
	struct kq_scope sc[KQ_MAXCHG];
};

/*
 * An event: the last KQ_EVSLOTS refusals and kills (map kq_events, slot seq % KQ_EVSLOTS). Readers keep their
 * own position, so that several (monitors, top) read the same events; seq is 0 while a slot is written.
 */
#define KQ_EVSLOTS 256
enum kq_event_type { KQ_EV_REFUSE = 1, KQ_EV_KILL = 2 };
/* (3 is KQ_EV_DRV_UNKNOWN, bpf/kqdrv.h) a limited creation refused because kq_objs is nearly full: usage =
 * records, limit = the table's entries */
#define KQ_EV_FULL 4
/* a uverbs file received by a task whose limited scopes are not the file's (lsm/file_receive): scope = one the
 * receiver or the file has and the other lacks */
#define KQ_EV_CROSS 5
/* a write to a uverbs file from io_uring (an io-wq worker, or credentials overridden for the call) where a limit
 * applies to the file or the thread (lsm/file_permission): scope = a limited one of the file's, else the thread's */
#define KQ_EV_URING 6
struct kq_event {
	__u64 seq;
	__u64 time_ns; /* CLOCK_MONOTONIC */
	__u32 type;
	__u32 tgid;
	__u32 tid;
	__u32 kind;
	struct kq_scope scope;
	__u64 amount;
	__s64 usage;
	__u64 limit;
	char comm[16];
};

/*
 * Global state (map kq_state, one entry, mmapped by lib/kq/kq.c): each field has one writer side, the
 * programs (atomic adds: evseq, lost, pop_miss) or rdmactl (plain stores, under the pin root's lock), so
 * that neither overwrites what the other counts.
 */
struct kq_state {
	__u32 nlimits;    /* limited scopes: 0 means every hook returns at once */
	__u32 types;      /* KQ_TYPE_* of the scope types among them: the programs look up only those */
	__u64 evseq;      /* the last event's seq */
	__u32 populating; /* a count runs (the iterators: 1, the rescan: KQ_RESCANNING): destroys mark kq_gone */
	__u32 pop_miss;   /* during it: a destroy not marked (kq_gone full), a list not walked to its end */
	__u32 dyn_major;  /* the major of uverbs devices 32 and up (alloc_chrdev_region), from /proc/devices */
	__u32 epochs;     /* the last epoch given to a scope (lib/kq/kq.c; the programs never write it) */
	__u64 lost;       /* charged objects not recorded (kq_objs full): their charge stays (quota show) */
	__s32 lost_err;   /* the error of the last insert that failed (-E2BIG: kq_objs full) */
	__u32 objs_max;   /* kq_objs' entries (rdmactl, at each count of the limits) */
	__u64 full;       /* limited creations refused because kq_objs had no room left for their record */
	__u32 pop_want;   /* from a population to its rescan's end: the scope type counted (kq_want names whom) */
	__u32 pop_full;   /* during it: records it could not insert (kq_objs full): the count is not whole */
	/*
	 * Scopes made so far: rdmactl adds 1 after each new scope's entry is in kq_limits (never before), so
	 * that a task's cached "no scope applies to me" (bpf/kqcharge.bpf.h, unscoped) is looked at again.
	 */
	__u32 gen;
	/*
	 * Files whose context record was given scopes so far: the programs add 1 after each such record is in
	 * kq_objs (a limited opener's context, a late one), rdmactl after a new scope's rescan gave existing
	 * records the scope, so that a thread's cached "this file has no scopes" (kq_task.nofile) is looked at
	 * again.
	 */
	__u32 fgen;
	/*
	 * Attaches so far (never 0 while attached): rdmactl adds 1 before it attaches the programs (a first
	 * limit, or links taken away while limits stayed: lib/kq/kqload.c), before the programs look for limits. The ioctl hook marks a thread it checked
	 * as limited with it (kq_task.checked), so that the backstop kills only a creation whose very call was
	 * checked (bpf/kqcharge.bpf.h, backstop_kills): one that came in before the attach is counted, not killed.
	 */
	__u32 agen;
	/*
	 * Records in kq_objs: +1 at each insert, -1 at each delete, from both sides (atomic adds; rdmactl
	 * stores 0 where it empties the map with nothing attached). On a cache line of its own: every
	 * charged create and destroy writes it, and every hook reads the fields above.
	 */
	__s64 nobjs __attribute__((aligned(64)));
	/*
	 * Reservations held (bpf/kq.bpf.c, kq_task.held): +1 as a thread takes one, -1 as it goes (the programs
	 * only). While it is 0 no thread holds one, and the hooks that would give one back or take one (most
	 * uverbs calls' returns, every allocation of a task without limits) skip the thread's storage.
	 */
	__s64 nresv;
	/*
	 * During a population (rdmactl, before pop_want; the iterators only read it): the scope whose first count
	 * it is, with that scope's epoch. Each record the population makes is charged to it as it is inserted, so
	 * that the rescan has nothing to write for those (bpf/kqpop.bpf.h).
	 */
	struct kq_scope pop_scope;
	/* Destroys seen while a new scope was counted, each numbered in its kq_gone mark (the programs' atomic adds) */
	__u64 gone_seq;
	/*
	 * What the population's records were charged (the programs add with atomics as they insert and drop
	 * records, rdmactl subtracts what it drops and zeroes it before a population): the new scope's usage
	 * from before its limit, taken into kq_limit.base as the rescan's count is.
	 */
	__s64 pop_base[KQ_NK] __attribute__((aligned(64)));
};

/*
 * Only charged objects are recorded (an object charged to no limited scope has nothing to give back): a
 * user without limits cannot fill kq_objs. Limited creations are refused (EDQUOT, event KQ_EV_FULL) while
 * fewer than KQ_OBJS_ROOM(max) entries are left, so that a creation that got through (a reservation in
 * flight) or one without a reservation (a write(), charged at the allocation) still finds room.
 */
#define KQ_OBJS_ROOM(max) ((max) / 16)

/*
 * kq_obj.pad of a record the population made (not a program), charged to kq_state.pop_scope at its insert. A
 * destroy deletes such a record before it gives back its charges (from a copy), so that the population, which
 * deletes a record it made of an object gone meanwhile, and the destroy never both give it back.
 */
#define KQ_OBJ_FOUND 1
/*
 * kq_gone's value: what a destroy did with its key's record while a new scope is counted (kq_state.populating:
 * the population's walk, then the rescan). (seq << 2) | state, seq from kq_state.gone_seq; the state is final
 * only after the destroy's delete. The rescan replaces a record to give it the new scope; a destroy that read
 * the record before the replacement deletes the new one and gives back the old charges (KQ_GONE_WITHOUT): the
 * rescan must then not count it (lib/kq/kq.c rescan_one).
 */
#define KQ_GONE_BUSY 1    /* the destroy is under way */
#define KQ_GONE_WITHOUT 2 /* done: what it gave back did not name kq_state.pop_scope (or it deleted nothing) */
#define KQ_GONE_WITH 3    /* done: it gave back a charge to kq_state.pop_scope */
#define KQ_GONE_STATE(v) ((v) & 3)
#define KQ_OBJ_REREG 2 /* rereg's second MR object: charged at its commit, if the kernel keeps it */
#define KQ_TYPE_VALID 1u
#define KQ_TYPE(scope_type) (1u << (scope_type))
#define KQ_TYPE_GLOBAL KQ_TYPE(KQ_SCOPE_GLOBAL)
#define KQ_TYPE_PID KQ_TYPE(KQ_SCOPE_PID)
#define KQ_TYPE_CGROUP KQ_TYPE(KQ_SCOPE_CGROUP)

/* uverbs ABI facts (rdma/rdma_user_ioctl_cmds.h, rdma/ib_user_verbs.h; checked in tests/unit/test_kq.c). */
#define KQ_RDMA_VERBS_IOCTL 0xc0181b01u
#define KQ_UVERBS_MAJOR 231
#define KQ_UVERBS_MINOR_BASE 192
#define KQ_UVERBS_MINORS 32
/* devices 32 and up: a major of their own, minors from 0 (IB_UVERBS_NUM_DYNAMIC_MINOR = RDMA_MAX_PORTS - 32) */
#define KQ_UVERBS_DYN_MINORS (1024 - 32)
/* the most attributes a uverbs ioctl carries: (PAGE_SIZE - header) / attribute, 4 KiB pages */
#define KQ_UVERBS_MAX_ATTRS ((4096 - 24) / 16)
/*
 * No device pins an MR longer than this (57-bit virtual addresses, 5-level paging): a longer length (an implicit
 * ODP MR asks for UINT64_MAX) is refused to limited tasks, and charged as this much where it gets through.
 */
#define KQ_MR_MAXLEN (1ULL << 57)
/*
 * UVERBS_METHOD_REG_MR (kernel 6.17: ibv_reg_mr through the ioctl interface, an address or a dma-buf fd), the
 * method after UVERBS_METHOD_REG_DMABUF_MR on the MR object, and its length attribute; newer than the uapi
 * headers this is built with (tests/unit/test_kq.c checks them against the headers that have them).
 */
#define KQ_METHOD_REG_MR 5
#define KQ_ATTR_REG_MR_LENGTH 5
#define KQ_CMD_GET_CONTEXT 0
#define KQ_CMD_ALLOC_PD 3
#define KQ_CMD_CREATE_AH 5
#define KQ_CMD_REG_MR 9
#define KQ_CMD_REREG_MR 11
/* struct ib_uverbs_rereg_mr's flags: a new translation (start, length) */
#define KQ_MR_REREG_TRANS 1
#define KQ_CMD_ALLOC_MW 14
#define KQ_CMD_CREATE_CQ 18
#define KQ_CMD_CREATE_QP 24
#define KQ_CMD_CREATE_SRQ 32
#define KQ_CMD_OPEN_XRCD 37
#define KQ_CMD_CREATE_XSRQ 39
#define KQ_CMD_OPEN_QP 40
#define KQ_CMD_EX_CREATE_WQ 52
#define KQ_CMD_FLAG_EXTENDED 0x80000000u
#define KQ_CMD_MASK 0xffu

#endif
