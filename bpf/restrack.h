/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Event and counter layouts shared by bpf/restrack.bpf.c and lib/monitor/bpfmon.c (rdmactl monitor). */
#ifndef RDMACTL_RESTRACK_H
#define RDMACTL_RESTRACK_H

#include "core/kinds.h" /* enum restrack_type: mon_event.type */

#define MON_COMM_LEN 16
#define MON_DEV_LEN 64 /* IB_DEVICE_NAME_MAX */
#define MON_DEV_NONE 0xffffffffu /* mon_event.dev_index of an object without a device (a CM id not bound yet) */

enum mon_op {
	MON_OP_CREATE = 1,
	MON_OP_DESTROY = 2,
};

/* Which kernel function produced an event (for diagnostics: -v and the JSON "hook" key). */
enum mon_hook {
	MON_HOOK_ADD = 1,        /* rdma_restrack_add, on return */
	MON_HOOK_DEL = 2,        /* rdma_restrack_del */
	MON_HOOK_COMMIT_DEL = 3, /* rdma_restrack_commit_del (after begin_del and the driver destroy) */
};

struct mon_event {
	__u64 ts_ns;  /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 mr_len; /* MR length in bytes (ib_mr->length); 0 for other types */
	__u32 tgid;   /* owner process (res->task); 0 for kernel objects */
	__u32 tid;    /* owner thread: the id RDMA netlink reports as RES_PID */
	__u32 cur_tgid; /* process in whose context the operation ran */
	__u32 id;     /* res->id: QPN for QPs, else the restrack id netlink shows (cqn, mrn, pdn...) */
	__u32 dev_index; /* ib_device.index as RDMA netlink reports it; MON_DEV_NONE: no device */
	__u8 op;      /* enum mon_op */
	__u8 type;    /* enum restrack_type (the kernel's enum rdma_restrack_type) */
	__u8 user;    /* 1: user object (uverbs), 0: kernel object */
	__u8 hook;    /* enum mon_hook */
	char comm[MON_COMM_LEN]; /* owner's comm, or the kernel owner's name (res->kern_name) */
	/* No device name: user space names dev_index (one read fewer per event, and half the bytes). */
};

/*
 * The event ring: MON_SLOTS slots of 64 bytes in an mmapable array map (1 MiB), filled in order of a
 * sequence number the program reserves with a compare-and-swap. A slot is published by storing seq + 1
 * into it last; the reader takes slots in sequence order while they carry the number it expects, so order
 * is the order of reservation (as with a BPF ring buffer) and a slot still being filled holds the reader
 * back instead of being skipped. The reader hands slots back by advancing mon_ring_pos.cons.
 */
#define MON_SLOTS 16384 /* a power of two */
struct mon_slot {
	struct mon_event e;
	__u64 seq; /* sequence number + 1 once e is complete */
};

/* Producer and consumer positions (sequence numbers), each on its own cache line. */
struct mon_ring_pos {
	__u64 prod; /* next sequence number to reserve (the program) */
	__u64 pad1[7];
	__u64 cons; /* next sequence number to read (user space) */
	__u64 pad2[7];
};

/* Value of the per-tgid counters map (key: __u32 tgid, 0 = kernel objects). Only ever increases. */
struct mon_counts {
	__u64 create[RESTRACK_NTYPES];
	__u64 destroy[RESTRACK_NTYPES];
	__u64 mr_bytes_create;
	__u64 mr_bytes_destroy;
};

#define MON_COUNTERS_MAX 16384

/*
 * The user QPs that exist, by device and number (key struct mon_qpid, value: the owner's tgid), kept while a
 * monitor pins its counters: rdmactl top and the exporter ask the kernel for each one's state by its number
 * (RDMA netlink by id, O(QPs)) instead of a dump (which walks the device's QP table again for each message:
 * O(QPs^2)). Allocated as used; a QP that does not fit is counted in mon_status.lost_counters like a full
 * counters map (the counts are then not trusted as complete).
 */
#define MON_QPIDS_MAX (1u << 20)
struct mon_qpid {
	__u32 dev_index;
	__u32 qpn;
};
/*
 * The per-device counters map (key: __u32 mon_event.dev_index, MON_DEV_NONE for objects without a device; value:
 * struct mon_counts, every owner summed). Entries are never removed: a device's counts only ever increase.
 */
#define MON_DEVCOUNTERS_MAX 256

/*
 * The status map (one entry, mmapable): what a reader of the pinned counters needs to know to trust them
 * as counts of what exists (rdmactl top's counters mode, lib/monitor/monbase.c). lost_counters is the
 * program's (it only ever adds); the baseline is user space's, written through the mapping field by field
 * (never with a map update, which would copy over lost_counters), seq last.
 */
#define MON_BASE_DEVS 32
struct mon_devbase {
	__u32 index;       /* ib_device index; unused slots past mon_status.ndevs */
	__u32 aux;         /* words the layout had spare (the status's size stays what older readers copy into):
			    * dev[0].aux the map id of the QP numbers of this baseline's monitor (0: none);
			    * dev[1].aux its pid, dev[2].aux its start time (/proc/PID/stat's, low 32 bits) and
			    * dev[3].aux its pid namespace (the inode of /proc/self/ns/pid): a reader in the same
			    * namespace tells a monitor that died without removing its pins (0: an older one) */
	/* Objects per restrack type on the device, every owner, minus the device counters' live count
	 * (create - destroy) at the baseline: kernel truth now = base + live now. */
	__s64 base[RESTRACK_NTYPES];
	__s64 base_mr_bytes;
};

struct mon_status {
	__u64 lost_counters; /* the program: an owner or a device not counted (a counters map full) */
	__u64 seq;           /* user space: 0 until a baseline is established, then its attempt number */
	__u32 complete;      /* 1: no user object the counters did not see (see monbase.c) */
	__u32 ndevs;
	__u32 counters_id;   /* user space: map ids of the counters this baseline belongs to (a reader that */
	__u32 devcounters_id; /* opened the pins of two different monitors tells by them) */
	__u64 established_ns; /* CLOCK_MONOTONIC of the baseline */
	struct mon_devbase dev[MON_BASE_DEVS];
};
#define mon_status_qpids_id(st) ((st)->dev[0].aux)
#define mon_status_pid(st) ((st)->dev[1].aux)
#define mon_status_start(st) ((st)->dev[2].aux)
#define mon_status_pidns(st) ((st)->dev[3].aux)

#endif
