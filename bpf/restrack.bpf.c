// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* BPF on ib_core's resource tracker: every create/destroy of PD, CQ, QP, CM_ID, MR, CTX, COUNTER, SRQ. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "restrack.h"

/*
 * ib_core and rdma_cm types are not in vmlinux BTF: minimal local views, relocated by CO-RE against the
 * modules' BTF (/sys/kernel/btf/ib_core, rdma_cm). The ___rdmactl suffix keeps them apart from any
 * definition a vmlinux.h of a kernel with built-in IB would carry; libbpf ignores it when matching.
 */
/* libbpf matches an enum field only with an enum: the values do not matter here, the size does. */
enum rdma_restrack_type___rdmactl { RDMACTL_RESTRACK_PD = 0 };

struct rdma_restrack_entry___rdmactl {
	bool valid;
	struct task_struct *task;
	const char *kern_name;
	enum rdma_restrack_type___rdmactl type;
	bool user;
	__u32 id;
} __attribute__((preserve_access_index));

struct ib_device___rdmactl {
	char name[MON_DEV_LEN];
	__u32 index;
} __attribute__((preserve_access_index));

#define RES_OWNER(T)                                                                                         \
	struct T##___rdmactl {                                                                               \
		struct ib_device___rdmactl *device;                                                          \
		struct rdma_restrack_entry___rdmactl res;                                                    \
	} __attribute__((preserve_access_index))
RES_OWNER(ib_pd);
RES_OWNER(ib_cq);
RES_OWNER(ib_srq);
RES_OWNER(ib_ucontext);
RES_OWNER(rdma_counter);

struct ib_qp___rdmactl {
	struct ib_device___rdmactl *device;
	__u32 qp_num;
	struct rdma_restrack_entry___rdmactl res;
} __attribute__((preserve_access_index));

struct ib_mr___rdmactl {
	struct ib_device___rdmactl *device;
	__u64 length;
	struct rdma_restrack_entry___rdmactl res;
} __attribute__((preserve_access_index));

struct rdma_cm_id___rdmactl {
	struct ib_device___rdmactl *device;
} __attribute__((preserve_access_index));

struct rdma_id_private___rdmactl {
	struct rdma_cm_id___rdmactl id;
	struct rdma_restrack_entry___rdmactl res;
} __attribute__((preserve_access_index));

/* Set by user space before load. */
const volatile bool emit_events = true;
const volatile bool track_qpids = false; /* keep qpids (a monitor that pins its counters) */
const volatile bool devcache_on = false; /* only with the ib_dealloc_device hook loaded */

/*
 * Events (bpf/restrack.h, struct mon_slot). Not a BPF ring buffer: its output takes a spinlock with
 * interrupts off and touches four pages of the ring's header and data per record, which made it the
 * largest part of the probe (about a third of its time in the lab); a slot here costs a compare-and-swap,
 * an inlined array lookup, the copy and one exchange. User space maps the array read-only.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MON_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct mon_slot);
} slots SEC(".maps");

/* Only wakes the reader (a record of 8 bytes when the slots are a quarter full): its fd is what it polls. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} doorbell SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MON_COUNTERS_MAX);
	__type(key, __u32);
	__type(value, struct mon_counts);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MON_DEVCOUNTERS_MAX);
	__type(key, __u32);
	__type(value, struct mon_counts);
} devcounters SEC(".maps");

/*
 * Device index by device pointer, per CPU: the index is read from the device once instead of once per event
 * (a probe-read helper call: about 30 of the probe's 670 instructions, as measured in the lab). An entry is
 * used only while its generation is the current one: ib_dealloc_device (hooked below) and every attach (user
 * space) start a new generation, so a pointer reused by a later device never names the earlier one's index.
 * Each CPU touches only its own entries, but programs on one CPU can still interleave when one is preempted
 * (preempt=full): an entry has a sequence count, odd while it is written. A writer takes it with a
 * compare-and-swap (a second writer then leaves the entry alone) and a reader uses the entry only if the
 * count was even and the same before and after it read the fields.
 */
#define DEVC_WAYS 4
struct devc_entry {
	__u64 seq;
	__u64 dev;
	__u64 gen;
	__u32 index;
	__u32 pad;
};

struct devc {
	struct devc_entry e[DEVC_WAYS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct devc);
} devcache SEC(".maps");

/* Pinned for readers of the counters (bpf/restrack.h): the program only adds to lost_counters. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct mon_status);
} status SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MON_QPIDS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct mon_qpid);
	__type(value, __u32);
} qpids SEC(".maps");

/* kprobe fallback: rdma_restrack_add's argument, from entry to return. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, __u64);
} add_args SEC(".maps");

/* Read by user space through the skeleton's bss: never reset. */
__u64 lost_events;   /* slots full: event not delivered (the counters still count it) */
__u64 lost_counters; /* a counters map full: an owner (or a device) not counted */
/* The ring's positions; user space advances cons. */
struct mon_ring_pos ring;
/* The device cache's generation (see devcache): the dealloc hook and user space (on attach) advance it. */
__u64 devgen;

/*
 * Where the object that contains res starts, and the offset of its device pointer (all ib_core objects
 * lead with it; the CM id and the counter do not). NULL: no container view for this type.
 */
#define OBJ_OF(T, doff_field)                                                                                \
	({                                                                                                   \
		*doff = bpf_core_field_offset(struct T, doff_field);                                         \
		base - bpf_core_field_offset(struct T, res);                                                 \
	})

static __always_inline void *res_object(struct rdma_restrack_entry___rdmactl *res, unsigned int type, __u32 *doff)
{
	void *base = res;

	switch (type) {
	case RESTRACK_PD:
		return OBJ_OF(ib_pd___rdmactl, device);
	case RESTRACK_CQ:
		return OBJ_OF(ib_cq___rdmactl, device);
	case RESTRACK_QP:
		return OBJ_OF(ib_qp___rdmactl, device);
	case RESTRACK_CM_ID:
		/* rdma_cm's BTF is there only while the module is loaded */
		if (bpf_core_type_exists(struct rdma_id_private___rdmactl))
			return OBJ_OF(rdma_id_private___rdmactl, id.device);
		return NULL;
	case RESTRACK_MR:
		return OBJ_OF(ib_mr___rdmactl, device);
	case RESTRACK_CTX:
		return OBJ_OF(ib_ucontext___rdmactl, device);
	case RESTRACK_COUNTER:
		return OBJ_OF(rdma_counter___rdmactl, device);
	case RESTRACK_SRQ:
		return OBJ_OF(ib_srq___rdmactl, device);
	}
	return NULL;
}

#define ONCE(x) (*(volatile typeof(x) *)&(x))

/* The device's index: from this CPU's cache, else read from the device (and cached). */
static __always_inline __u32 dev_index(struct ib_device___rdmactl *dev)
{
	__u64 d = (__u64)dev, gen = ONCE(devgen), seq = 1;
	struct devc_entry *e = NULL;
	struct devc *c;
	__u32 zero = 0, index;

	if (devcache_on) {
		c = bpf_map_lookup_elem(&devcache, &zero);
		if (c) {
			/* Multiplicative hash: its top bits depend on all of the pointer's (a device's low bits are mostly 0). */
			e = &c->e[(d * 0x9e3779b97f4a7c15ULL) >> 62];
			seq = ONCE(e->seq);
			if (!(seq & 1) && ONCE(e->dev) == d) {
				index = ONCE(e->index);
				if (ONCE(e->gen) == gen && ONCE(e->seq) == seq)
					return index;
			}
		}
	}
	if (bpf_core_read(&index, sizeof(index), &dev->index))
		return MON_DEV_NONE;
	if (e && !(seq & 1) && __sync_val_compare_and_swap(&e->seq, seq, seq + 1) == seq) {
		ONCE(e->dev) = d;
		ONCE(e->index) = index;
		ONCE(e->gen) = gen;
		ONCE(e->seq) = seq + 2;
	}
	return index;
}

/*
 * The device index (and an MR's length) from the object that contains res: one read for the device pointer
 * (for an MR the same read brings the length, a few words further on); the index is cached by pointer
 * (dev_index). The name is left to user space, which knows every device's name by index from RDMA netlink.
 */
static __always_inline void res_device(struct rdma_restrack_entry___rdmactl *res, unsigned int type,
				       struct mon_event *e)
{
	struct ib_device___rdmactl *dev = NULL;
	__u32 doff = 0;
	void *obj = res_object(res, type, &doff);

	e->dev_index = MON_DEV_NONE;
	if (!obj)
		return;
	if (type == RESTRACK_MR) {
		__u32 loff = bpf_core_field_offset(struct ib_mr___rdmactl, length);
		__u64 head[8];

		if (doff <= sizeof(head) - 8 && loff <= sizeof(head) - 8) {
			__u32 n = (doff > loff ? doff : loff) + 8;

			if (bpf_probe_read_kernel(head, n, obj))
				return;
			dev = *(struct ib_device___rdmactl **)((void *)head + doff);
			e->mr_len = *(__u64 *)((void *)head + loff);
		} else {
			e->mr_len = BPF_CORE_READ((struct ib_mr___rdmactl *)obj, length);
			bpf_probe_read_kernel(&dev, sizeof(dev), obj + doff);
		}
	} else {
		bpf_probe_read_kernel(&dev, sizeof(dev), obj + doff);
	}
	if (dev)
		e->dev_index = dev_index(dev);
}

/* The restrack entry's fields, read with one copy instead of one helper call per field (kprobes). */
struct entry {
	bool valid;
	bool user;
	__u32 type;
	__u32 id;
	struct task_struct *task;
	const char *kern_name;
};

#define ENTRY_FIELD(buf, T, f) (*(T *)((buf) + bpf_core_field_offset(struct rdma_restrack_entry___rdmactl, f)))

/* kprobes only have an address: one probe-read copies the entry. */
static __always_inline bool read_entry(struct rdma_restrack_entry___rdmactl *res, struct entry *f)
{
	char buf[128];
	__u32 sz = bpf_core_type_size(struct rdma_restrack_entry___rdmactl);

	if (sz <= sizeof(buf)) {
		if (bpf_probe_read_kernel(buf, sz, res))
			return false;
		f->valid = ENTRY_FIELD(buf, bool, valid);
		f->user = ENTRY_FIELD(buf, bool, user);
		f->type = ENTRY_FIELD(buf, __u32, type);
		f->id = ENTRY_FIELD(buf, __u32, id);
		f->task = ENTRY_FIELD(buf, struct task_struct *, task);
		f->kern_name = ENTRY_FIELD(buf, const char *, kern_name);
	} else {
		f->valid = BPF_CORE_READ(res, valid);
		f->user = BPF_CORE_READ(res, user);
		f->type = BPF_CORE_READ(res, type);
		f->id = BPF_CORE_READ(res, id);
		f->task = BPF_CORE_READ(res, task);
		f->kern_name = BPF_CORE_READ(res, kern_name);
	}
	return true;
}

/* What every event has, whichever way the entry was read. */
static __always_inline void fill_common(struct mon_event *e, __u8 op, __u8 hook, __u32 type, bool user, __u32 id)
{
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->op = op;
	e->hook = hook;
	e->type = type;
	e->user = user;
	/* A QP's id is its QPN; QP0/QP1 also carry their port in the top byte. */
	e->id = type == RESTRACK_QP ? id & 0xffffff : id;
	e->cur_tgid = bpf_get_current_pid_tgid() >> 32;
}

/*
 * fentry/fexit: res is the program's BTF-typed argument, and so is res->task. The verifier lets the program
 * load from both like ordinary memory (faults are caught), so the entry and the owner's pid, thread and comm
 * take no helper call at all.
 */
static __always_inline bool fill_direct(struct mon_event *e, struct rdma_restrack_entry___rdmactl *res, __u8 op,
					__u8 hook)
{
	struct task_struct *task;
	__u32 type = res->type;

	if (!res->valid || type >= RESTRACK_NTYPES)
		return false;
	fill_common(e, op, hook, type, res->user, res->id);
	task = res->task;
	if (task && e->user) {
		e->tgid = task->tgid;
		e->tid = task->pid;
		__builtin_memcpy(e->comm, task->comm, sizeof(e->comm));
	} else if (res->kern_name) {
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), res->kern_name);
	} else if (task) {
		__builtin_memcpy(e->comm, task->comm, sizeof(e->comm));
	}
	res_device(res, type, e);
	return true;
}

/* kprobes: the entry by one copy, the owner through helpers. */
static __always_inline bool fill_probe(struct mon_event *e, struct rdma_restrack_entry___rdmactl *res, __u8 op,
				       __u8 hook)
{
	struct task_struct *task;
	struct entry f;

	if (!read_entry(res, &f) || !f.valid || f.type >= RESTRACK_NTYPES)
		return false;
	fill_common(e, op, hook, f.type, f.user, f.id);
	/* A plain local: BPF_CORE_READ(f.task, ...) would try to relocate struct entry itself. */
	task = f.task;
	if (task && f.user) {
		e->tgid = BPF_CORE_READ(task, tgid);
		e->tid = BPF_CORE_READ(task, pid);
		BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	} else if (f.kern_name) {
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), f.kern_name);
	} else if (task) {
		BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	}
	res_device(res, f.type, e);
	return true;
}

/* The counts of key in map, made on first use; NULL (and a loss counted) when the map is full. */
static __always_inline struct mon_counts *counts_of(void *map, __u32 key)
{
	static const struct mon_counts zero;
	struct mon_counts *c;

	c = bpf_map_lookup_elem(map, &key);
	if (!c) {
		bpf_map_update_elem(map, &key, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(map, &key);
		if (!c) {
			__u32 zero = 0;
			struct mon_status *st = bpf_map_lookup_elem(&status, &zero);

			__sync_fetch_and_add(&lost_counters, 1);
			if (st) /* what a reader of the pins sees: the counts are no longer complete */
				__sync_fetch_and_add(&st->lost_counters, 1);
		}
	}
	return c;
}

static __always_inline void count_in(struct mon_counts *c, const struct mon_event *e)
{
	__u32 t = e->type & (RESTRACK_NTYPES - 1);

	if (e->op == MON_OP_CREATE) {
		__sync_fetch_and_add(&c->create[t], 1);
		if (e->mr_len)
			__sync_fetch_and_add(&c->mr_bytes_create, e->mr_len);
	} else {
		__sync_fetch_and_add(&c->destroy[t], 1);
		if (e->mr_len)
			__sync_fetch_and_add(&c->mr_bytes_destroy, e->mr_len);
	}
}

/* A user QP's number, kept while it exists (see MON_QPIDS_MAX); one that cannot be kept is a lost count. */
static __always_inline void track_qp(const struct mon_event *e)
{
	struct mon_qpid k = { .dev_index = e->dev_index, .qpn = e->id };
	__u32 zero = 0;
	struct mon_status *st;

	if (e->op == MON_OP_DESTROY) {
		bpf_map_delete_elem(&qpids, &k);
		return;
	}
	if (!bpf_map_update_elem(&qpids, &k, &e->tgid, BPF_ANY))
		return;
	__sync_fetch_and_add(&lost_counters, 1);
	st = bpf_map_lookup_elem(&status, &zero);
	if (st)
		__sync_fetch_and_add(&st->lost_counters, 1);
}

/* Per owner (top's rates) and per device (export's rdmactl_creates_total{device}). */
static __always_inline void count(const struct mon_event *e)
{
	struct mon_counts *c;

	if (track_qpids && e->type == RESTRACK_QP && e->user)
		track_qp(e);
	c = counts_of(&counters, e->tgid);
	if (c)
		count_in(c, e);
	c = counts_of(&devcounters, e->dev_index);
	if (c)
		count_in(c, e);
}

/*
 * One slot: reserve the next sequence number unless the slots are full (the reader is MON_SLOTS behind),
 * copy the event in, publish it. A few tries when other CPUs reserve at the same moment; giving up counts
 * as a loss like a full ring, and nothing was reserved then, so the reader never waits for it.
 */
static __always_inline bool ring_put(const struct mon_event *e)
{
	struct mon_slot *s;
	__u64 p = 0, c;
	__u32 idx;
	int i;
	bool got = false;

	for (i = 0; i < 8 && !got; i++) {
		p = *(volatile __u64 *)&ring.prod;
		c = *(volatile __u64 *)&ring.cons;
		if (p - c >= MON_SLOTS)
			return false;
		got = __sync_val_compare_and_swap(&ring.prod, p, p + 1) == p;
	}
	if (!got)
		return false;
	idx = p & (MON_SLOTS - 1);
	s = bpf_map_lookup_elem(&slots, &idx);
	if (!s) /* cannot happen (idx < MON_SLOTS), but the verifier asks */
		return false;
	__builtin_memcpy(&s->e, e, sizeof(*e));
	__sync_lock_test_and_set(&s->seq, p + 1); /* after the copy: the reader's cue */
	/*
	 * The reader drains every 100 ms on its own; wake it early when the slots are a quarter full, asked
	 * every 32nd event (a quarter holds thousands).
	 */
	if (!(p & 31) && p + 1 - c >= MON_SLOTS / 4)
		bpf_ringbuf_output(&doorbell, &p, sizeof(p), BPF_RB_FORCE_WAKEUP);
	return true;
}

static __always_inline void emit(const struct mon_event *e)
{
	count(e);
	if (emit_events && !ring_put(e))
		__sync_fetch_and_add(&lost_events, 1);
}

/* The event lives on the stack (56 bytes): a per-CPU scratch map would cost a lookup per event. */
static __always_inline int on_res(struct rdma_restrack_entry___rdmactl *res, __u8 op, __u8 hook, bool direct)
{
	struct mon_event e;

	if (direct ? fill_direct(&e, res, op, hook) : fill_probe(&e, res, op, hook))
		emit(&e);
	return 0;
}

/*
 * Kernels with the begin/commit split (Debian's 6.1.0-5x; not its 6.12.95) destroy PD, CQ, QP and
 * SRQ as rdma_restrack_begin_del -> driver destroy -> rdma_restrack_commit_del (or abort_del when the driver
 * refuses): rdma_restrack_del is not called for them. begin_del only parks the object's slot and waits for
 * readers; commit_del erases the slot and only at its very end clears res->valid and drops res->task, and
 * the caller frees the object after it returns. So on entry to commit_del the entry and its object are
 * still whole: the destroy is described and reported right there, in one program run, and an aborted
 * destroy never reaches it.
 */
SEC("fexit/rdma_restrack_add")
int BPF_PROG(fexit_add, struct rdma_restrack_entry___rdmactl *res)
{
	return on_res(res, MON_OP_CREATE, MON_HOOK_ADD, true);
}

SEC("fentry/rdma_restrack_del")
int BPF_PROG(fentry_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_res(res, MON_OP_DESTROY, MON_HOOK_DEL, true);
}

SEC("fentry/rdma_restrack_commit_del")
int BPF_PROG(fentry_commit_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_res(res, MON_OP_DESTROY, MON_HOOK_COMMIT_DEL, true);
}

/* A device is going away: its pointer may come back as another device's, so no cached index is valid. */
SEC("fentry/ib_dealloc_device")
int BPF_PROG(fentry_dealloc_device)
{
	__sync_fetch_and_add(&devgen, 1);
	return 0;
}

SEC("kprobe/ib_dealloc_device")
int BPF_KPROBE(kprobe_dealloc_device)
{
	__sync_fetch_and_add(&devgen, 1);
	return 0;
}

SEC("kprobe/rdma_restrack_add")
int BPF_KPROBE(kprobe_add, struct rdma_restrack_entry___rdmactl *res)
{
	__u64 key = bpf_get_current_pid_tgid(), val = (__u64)res;

	bpf_map_update_elem(&add_args, &key, &val, BPF_ANY);
	return 0;
}

SEC("kretprobe/rdma_restrack_add")
int BPF_KRETPROBE(kretprobe_add)
{
	__u64 key = bpf_get_current_pid_tgid();
	__u64 *val = bpf_map_lookup_elem(&add_args, &key);

	if (!val)
		return 0;
	on_res((struct rdma_restrack_entry___rdmactl *)*val, MON_OP_CREATE, MON_HOOK_ADD, false);
	bpf_map_delete_elem(&add_args, &key);
	return 0;
}

SEC("kprobe/rdma_restrack_del")
int BPF_KPROBE(kprobe_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_res(res, MON_OP_DESTROY, MON_HOOK_DEL, false);
}

SEC("kprobe/rdma_restrack_commit_del")
int BPF_KPROBE(kprobe_commit_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_res(res, MON_OP_DESTROY, MON_HOOK_COMMIT_DEL, false);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
