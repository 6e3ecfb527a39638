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

enum { T_PD, T_CQ, T_QP, T_CM_ID, T_MR, T_CTX, T_COUNTER, T_SRQ };

/* Set by user space before load. */
const volatile bool emit_events = true;
const volatile __u64 wakeup_bytes = (1 << 20) / 4;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MON_COUNTERS_MAX);
	__type(key, __u32);
	__type(value, struct mon_counts);
} counters SEC(".maps");

/* Destroy events prepared at rdma_restrack_begin_del, sent at commit_del, dropped at abort_del. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct mon_event);
} pending SEC(".maps");

/* kprobe fallback: rdma_restrack_add's argument, from entry to return. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, __u64);
} add_args SEC(".maps");

/* Per-CPU scratch for building an event (too big for the 512-byte stack next to the rest). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mon_event);
} scratch SEC(".maps");

/* Read by user space through the skeleton's bss: never reset. */
__u64 lost_events;   /* ring buffer full: event not delivered (the counters still count it) */
__u64 lost_counters; /* counters map full: tgid not counted */
__u64 lost_pending;  /* pending map full: a destroy via begin/commit_del could not be prepared */

static __always_inline struct ib_device___rdmactl *res_device(struct rdma_restrack_entry___rdmactl *res,
							       unsigned int type, struct mon_event *e)
{
	void *base = res;

	switch (type) {
	case T_PD:
		return BPF_CORE_READ((struct ib_pd___rdmactl *)(base - bpf_core_field_offset(struct ib_pd___rdmactl, res)),
				     device);
	case T_CQ:
		return BPF_CORE_READ((struct ib_cq___rdmactl *)(base - bpf_core_field_offset(struct ib_cq___rdmactl, res)),
				     device);
	case T_QP: {
		struct ib_qp___rdmactl *qp = base - bpf_core_field_offset(struct ib_qp___rdmactl, res);

		e->id = BPF_CORE_READ(qp, qp_num);
		return BPF_CORE_READ(qp, device);
	}
	case T_CM_ID:
		if (bpf_core_type_exists(struct rdma_id_private___rdmactl)) {
			struct rdma_id_private___rdmactl *id =
				base - bpf_core_field_offset(struct rdma_id_private___rdmactl, res);

			return BPF_CORE_READ(id, id.device);
		}
		return NULL;
	case T_MR: {
		struct ib_mr___rdmactl *mr = base - bpf_core_field_offset(struct ib_mr___rdmactl, res);

		e->mr_len = BPF_CORE_READ(mr, length);
		return BPF_CORE_READ(mr, device);
	}
	case T_CTX:
		return BPF_CORE_READ(
			(struct ib_ucontext___rdmactl *)(base - bpf_core_field_offset(struct ib_ucontext___rdmactl, res)),
			device);
	case T_COUNTER:
		return BPF_CORE_READ(
			(struct rdma_counter___rdmactl *)(base - bpf_core_field_offset(struct rdma_counter___rdmactl, res)),
			device);
	case T_SRQ:
		return BPF_CORE_READ((struct ib_srq___rdmactl *)(base - bpf_core_field_offset(struct ib_srq___rdmactl, res)),
				     device);
	}
	return NULL;
}

/* The restrack entry's fields, read with one copy instead of one helper call per field. */
struct entry {
	bool valid;
	bool user;
	__u32 type;
	__u32 id;
	struct task_struct *task;
	const char *kern_name;
};

#define ENTRY_FIELD(buf, T, f) (*(T *)((buf) + bpf_core_field_offset(struct rdma_restrack_entry___rdmactl, f)))

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

/* Fill e from res; false when res is not a tracked object (add failed, already deleted, unknown type). */
static __always_inline bool fill_event(struct mon_event *e, struct rdma_restrack_entry___rdmactl *res, __u8 op,
				       __u8 hook)
{
	struct ib_device___rdmactl *dev;
	struct task_struct *task;
	struct entry f;

	if (!read_entry(res, &f) || !f.valid || f.type >= MON_NTYPES)
		return false;
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->op = op;
	e->hook = hook;
	e->type = f.type;
	e->user = f.user;
	e->id = f.id;
	e->cur_tgid = bpf_get_current_pid_tgid() >> 32;
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
	dev = res_device(res, f.type, e);
	if (dev) {
		BPF_CORE_READ_STR_INTO(&e->dev, dev, name);
		e->dev_index = BPF_CORE_READ(dev, index);
	}
	return true;
}

static __always_inline void count(const struct mon_event *e)
{
	static const struct mon_counts zero;
	struct mon_counts *c;
	__u32 key = e->tgid;
	__u32 t = e->type & (MON_NTYPES - 1);

	c = bpf_map_lookup_elem(&counters, &key);
	if (!c) {
		bpf_map_update_elem(&counters, &key, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&counters, &key);
		if (!c) {
			__sync_fetch_and_add(&lost_counters, 1);
			return;
		}
	}
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

static __always_inline void emit(const struct mon_event *e)
{
	struct mon_event *out;

	count(e);
	if (!emit_events)
		return;
	out = bpf_ringbuf_reserve(&events, sizeof(*out), 0);
	if (!out) {
		__sync_fetch_and_add(&lost_events, 1);
		return;
	}
	__builtin_memcpy(out, e, sizeof(*out));
	/*
	 * A wakeup per event costs more than the probe itself (the reader is scheduled once per object): the
	 * reader polls every 100 ms anyway, so wake it only when the ring is a quarter full.
	 */
	bpf_ringbuf_submit(out, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
											   : BPF_RB_NO_WAKEUP);
}

static __always_inline struct mon_event *scratch_event(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scratch, &zero);
}

static __always_inline int on_add(struct rdma_restrack_entry___rdmactl *res)
{
	struct mon_event *e = scratch_event();

	if (e && fill_event(e, res, MON_OP_CREATE, MON_HOOK_ADD))
		emit(e);
	return 0;
}

static __always_inline int on_del(struct rdma_restrack_entry___rdmactl *res)
{
	struct mon_event *e = scratch_event();

	if (e && fill_event(e, res, MON_OP_DESTROY, MON_HOOK_DEL))
		emit(e);
	return 0;
}

/*
 * Kernels with the begin/commit split (Debian 6.1.0-5x and later stable/mainline) destroy PD, CQ and QP as
 * begin_del -> driver destroy -> commit_del (or abort_del when the driver refuses): rdma_restrack_del is
 * not called for them. The object is described at begin_del, while it is still whole, and reported when
 * the destroy commits.
 */
static __always_inline int on_begin_del(struct rdma_restrack_entry___rdmactl *res)
{
	struct mon_event *e = scratch_event();
	__u64 key = (__u64)res;

	if (e && fill_event(e, res, MON_OP_DESTROY, MON_HOOK_COMMIT_DEL))
		if (bpf_map_update_elem(&pending, &key, e, BPF_ANY))
			__sync_fetch_and_add(&lost_pending, 1);
	return 0;
}

static __always_inline int on_commit_del(struct rdma_restrack_entry___rdmactl *res)
{
	__u64 key = (__u64)res;
	struct mon_event *e = bpf_map_lookup_elem(&pending, &key);

	if (!e)
		return 0;
	e->ts_ns = bpf_ktime_get_ns();
	emit(e);
	bpf_map_delete_elem(&pending, &key);
	return 0;
}

static __always_inline int on_abort_del(struct rdma_restrack_entry___rdmactl *res)
{
	__u64 key = (__u64)res;

	bpf_map_delete_elem(&pending, &key);
	return 0;
}

SEC("fexit/rdma_restrack_add")
int BPF_PROG(fexit_add, struct rdma_restrack_entry___rdmactl *res)
{
	return on_add(res);
}

SEC("fentry/rdma_restrack_del")
int BPF_PROG(fentry_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_del(res);
}

SEC("fentry/rdma_restrack_begin_del")
int BPF_PROG(fentry_begin_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_begin_del(res);
}

SEC("fentry/rdma_restrack_commit_del")
int BPF_PROG(fentry_commit_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_commit_del(res);
}

SEC("fentry/rdma_restrack_abort_del")
int BPF_PROG(fentry_abort_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_abort_del(res);
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
	on_add((struct rdma_restrack_entry___rdmactl *)*val);
	bpf_map_delete_elem(&add_args, &key);
	return 0;
}

SEC("kprobe/rdma_restrack_del")
int BPF_KPROBE(kprobe_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_del(res);
}

SEC("kprobe/rdma_restrack_begin_del")
int BPF_KPROBE(kprobe_begin_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_begin_del(res);
}

SEC("kprobe/rdma_restrack_commit_del")
int BPF_KPROBE(kprobe_commit_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_commit_del(res);
}

SEC("kprobe/rdma_restrack_abort_del")
int BPF_KPROBE(kprobe_abort_del, struct rdma_restrack_entry___rdmactl *res)
{
	return on_abort_del(res);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
