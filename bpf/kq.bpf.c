// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel quotas with BPF LSM: the kernel refuses an RDMA creation that would take a limited scope (a cgroup
 * and its descendants, a process, everything) past its limit, whatever made the call (interceptor or not,
 * static binaries, raw ioctl or write on /dev/infiniband/uverbsN).
 *
 *   lsm.s/file_ioctl    reads the uverbs ioctl's header (and the write command of INVOKE_WRITE, the length of
 *                       an MR) and answers -EDQUOT when the creation would go past a limit: the clean refusal.
 *   lsm/file_ioctl_compat  32-bit programs' uverbs ioctls: refused for processes with kernel limits.
 *   lsm/file_open       contexts: one per open uverbs file; refused past the ctx limit (fexit/ib_uverbs_open
 *                       records and charges the context once the open succeeded).
 *   fentry/ib_uverbs_close  gives a context back when its file is released; only uverbs files pay for it.
 *   fexit/rdma_alloc_begin_uobject   the kernel's own copy of the type: every object of a counted kind is
 *                       charged here, whichever path created it; one that goes past a limit (a request
 *                       rewritten after the check, a legacy write()) is answered with SIGKILL and recorded.
 *   fentry/rdma_alloc_commit_uobject MRs: their length, as mr_bytes (the same backstop).
 *   fexit/uverbs_destroy_uobject     gives the charge back (destroy, abort of a failed create, the
 *                       cleanup at the last close of the file, wherever that runs).
 * The three LSM programs (the refusals) are attached only while a limit exists (lib/kq.c, count_limits), so
 * that without kernel limits no ioctl and no file open on the host passes them; the others record every
 * object, limits or not (a limit set later counts what its scope already holds), and charge nothing while
 * no limit exists (kq_state.nlimits == 0).
 * Costs (doc/kq-cost.md): the hooks read kernel structures directly (BTF), not through helper calls; a
 * uverbs ioctl reads its header and first attributes in one copy, so a verb that creates nothing returns
 * after it; only the scope types that have limits (kq_state.types) are looked up.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "kq.h"

#define EDQUOT 122
#define SIGKILL 9

/* ib_uverbs types are not in vmlinux BTF: local views, relocated by CO-RE against the module's BTF. */
struct uverbs_api_object___kq {
	__u32 id;
} __attribute__((preserve_access_index));

struct ib_uobject___kq {
	void *object;
	const struct uverbs_api_object___kq *uapi_object;
} __attribute__((preserve_access_index));

struct ib_mr___kq {
	__u64 length;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct kq_scope);
	__type(value, struct kq_limit);
} kq_limits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct kq_scope);
	__type(value, struct kq_usage);
} kq_usage SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 18);
	__type(key, __u64);
	__type(value, struct kq_obj);
} kq_objs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kq_state);
} kq_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KQ_EVSLOTS);
	__type(key, __u32);
	__type(value, struct kq_event);
} kq_events SEC(".maps");

/* Objects that could not be recorded (kq_objs full): never charged, so never credited. */
__u64 kq_lost;

/* The scope types that have limits (a KQ_TYPE_* mask), 0 while no limit exists. */
static __always_inline __u32 limited_types(void)
{
	__u32 zero = 0;
	struct kq_state *st = bpf_map_lookup_elem(&kq_state, &zero);

	return st && st->nlimits ? st->types | KQ_TYPE_VALID : 0;
}

/* A uverbs character device (read straight from the kernel's structures: no helper call). */
static __always_inline bool is_uverbs(struct file *file)
{
	struct inode *ino = file->f_inode;
	dev_t rdev;
	unsigned int minor;

	if (!ino)
		return false;
	rdev = ino->i_rdev;
	if ((rdev >> 20) != KQ_UVERBS_MAJOR)
		return false;
	minor = rdev & 0xfffff;
	return (ino->i_mode & 00170000) == 0020000 && minor >= KQ_UVERBS_MINOR_BASE &&
	       minor < KQ_UVERBS_MINOR_BASE + KQ_UVERBS_MINORS;
}

/*
 * The scopes that apply to the current task, in order: global, process, cgroups from the root down; only
 * those of the types that have limits (types), the others stay type 0 and are skipped.
 */
struct cand {
	struct kq_scope sc[2 + KQ_MAXLVL];
	int n;
};

static __always_inline void candidates(struct cand *c, __u32 types)
{
	int i;

	c->n = 2;
	if (types & KQ_TYPE_GLOBAL)
		c->sc[0].type = KQ_SCOPE_GLOBAL; /* id 0 */
	if (types & KQ_TYPE_PID) {
		c->sc[1].type = KQ_SCOPE_PID;
		c->sc[1].id = bpf_get_current_pid_tgid() >> 32;
	}
	if (!(types & KQ_TYPE_CGROUP))
		return;
	for (i = 1; i <= KQ_MAXLVL; i++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(i);

		if (!id)
			break;
		c->sc[1 + i].type = KQ_SCOPE_CGROUP;
		c->sc[1 + i].pad = 0;
		c->sc[1 + i].id = id;
		c->n = 2 + i;
	}
}

static __always_inline void emit(__u32 type, __u32 kind, const struct kq_scope *sc, __u64 amount, __s64 usage,
				 __u64 limit)
{
	__u64 pidtgid = bpf_get_current_pid_tgid(), seq;
	struct kq_state *st;
	struct kq_event *e;
	__u32 zero = 0, idx;

	st = bpf_map_lookup_elem(&kq_state, &zero);
	if (!st)
		return;
	seq = __sync_fetch_and_add(&st->evseq, 1) + 1;
	idx = seq % KQ_EVSLOTS;
	e = bpf_map_lookup_elem(&kq_events, &idx);
	if (!e)
		return;
	e->seq = 0;
	e->time_ns = bpf_ktime_get_ns();
	e->type = type;
	e->tgid = pidtgid >> 32;
	e->tid = (__u32)pidtgid;
	e->kind = kind;
	e->scope = *sc;
	e->amount = amount;
	e->usage = usage;
	e->limit = limit;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	asm volatile("" ::: "memory"); /* seq last (x86 keeps stores in order) */
	e->seq = seq;
}

/* Would amount more of kind take one of the task's limited scopes past its limit? -EDQUOT, counted. */
static __always_inline int check(__u32 types, __u32 kind, __u64 amount)
{
	struct cand c = {};
	int i;

	if (kind >= KQ_NK)
		return 0;
	candidates(&c, types);
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__s64 u;

		if (i >= c.n)
			break;
		if (!c.sc[i].type)
			continue;
		lim = bpf_map_lookup_elem(&kq_limits, &c.sc[i]);
		if (!lim || lim->max[kind] == KQ_UNLIMITED)
			continue;
		use = bpf_map_lookup_elem(&kq_usage, &c.sc[i]);
		if (!use)
			continue;
		u = use->use[kind] + lim->base[kind];
		if (u < 0)
			u = 0;
		if ((__u64)u + amount > lim->max[kind]) {
			__sync_fetch_and_add(&use->refused[kind], 1);
			emit(KQ_EV_REFUSE, kind, &c.sc[i], amount, u, lim->max[kind]);
			return -EDQUOT;
		}
	}
	return 0;
}

/*
 * Charge amount of kind to every limited scope of the task, recording them in o. over: a scope went past
 * its limit (the check did not stop it): the caller decides what that costs.
 */
static __always_inline bool charge(__u32 types, struct kq_obj *o, __u32 kind, __u64 amount)
{
	struct cand c = {};
	bool over = false;
	__u32 idx;
	int i;

	if (kind >= KQ_NK)
		return false;
	candidates(&c, types);
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__s64 u;

		if (i >= c.n)
			break;
		if (!c.sc[i].type)
			continue;
		lim = bpf_map_lookup_elem(&kq_limits, &c.sc[i]);
		if (!lim)
			continue;
		use = bpf_map_lookup_elem(&kq_usage, &c.sc[i]);
		if (!use)
			continue;
		idx = o->n;
		if (idx >= KQ_MAXCHG)
			break;
		o->sc[idx] = c.sc[i];
		o->n = idx + 1;
		u = __sync_fetch_and_add(&use->use[kind], amount) + amount + lim->base[kind];
		if (lim->max[kind] != KQ_UNLIMITED && u > 0 && (__u64)u > lim->max[kind]) {
			__sync_fetch_and_add(&use->killed[kind], 1);
			emit(KQ_EV_KILL, kind, &c.sc[i], amount, u - amount, lim->max[kind]);
			over = true;
		}
	}
	return over;
}

/* Charge more of kind to the scopes o was charged to (an MR's bytes). */
static __always_inline bool charge_more(struct kq_obj *o, __u32 kind, __u64 amount)
{
	bool over = false;
	int i;

	for (i = 0; i < KQ_MAXCHG; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__s64 u;

		if (i >= o->n)
			break;
		lim = bpf_map_lookup_elem(&kq_limits, &o->sc[i]);
		use = bpf_map_lookup_elem(&kq_usage, &o->sc[i]);
		if (!lim || !use)
			continue;
		u = __sync_fetch_and_add(&use->use[kind], amount) + amount + lim->base[kind];
		if (lim->max[kind] != KQ_UNLIMITED && u > 0 && (__u64)u > lim->max[kind]) {
			__sync_fetch_and_add(&use->killed[kind], 1);
			emit(KQ_EV_KILL, kind, &o->sc[i], amount, u - amount, lim->max[kind]);
			over = true;
		}
	}
	return over;
}

static __always_inline void credit(const struct kq_obj *o)
{
	int i;

	for (i = 0; i < KQ_MAXCHG; i++) {
		struct kq_usage *use;

		if (i >= o->n)
			break;
		use = bpf_map_lookup_elem(&kq_usage, &o->sc[i]);
		if (!use)
			continue;
		if (o->kind < KQ_NK)
			__sync_fetch_and_add(&use->use[o->kind], -1);
		if (o->bytes)
			__sync_fetch_and_add(&use->use[KQ_MR_BYTES], -(__s64)o->bytes);
	}
}

static __always_inline void record(__u64 key, struct kq_obj *o)
{
	__u64 pidtgid = bpf_get_current_pid_tgid();

	o->tgid = pidtgid >> 32;
	o->cgid = bpf_get_current_cgroup_id();
	if (bpf_map_update_elem(&kq_objs, &key, o, BPF_ANY))
		__sync_fetch_and_add(&kq_lost, 1);
}

/* The kind a uverbs object type is counted as, or KQ_NK. */
static __always_inline __u32 kind_of_object(__u32 id)
{
	switch (id) {
	case UVERBS_OBJECT_PD: return KQ_PD;
	case UVERBS_OBJECT_CQ: return KQ_CQ;
	case UVERBS_OBJECT_QP: return KQ_QP;
	case UVERBS_OBJECT_SRQ: return KQ_SRQ;
	case UVERBS_OBJECT_AH: return KQ_AH;
	case UVERBS_OBJECT_MR: return KQ_MR;
	case UVERBS_OBJECT_MW: return KQ_MW;
	case UVERBS_OBJECT_XRCD: return KQ_XRCD;
	case UVERBS_OBJECT_WQ: return KQ_WQ;
	}
	return KQ_NK;
}

/* The kind a write command (direct or through INVOKE_WRITE) creates, or KQ_NK. */
static __always_inline __u32 kind_of_write(__u32 cmd)
{
	__u32 c = cmd & KQ_CMD_MASK;

	if (cmd & KQ_CMD_FLAG_EXTENDED) {
		switch (c) {
		case KQ_CMD_CREATE_CQ: return KQ_CQ;
		case KQ_CMD_CREATE_QP: return KQ_QP;
		case KQ_CMD_EX_CREATE_WQ: return KQ_WQ;
		}
		return KQ_NK;
	}
	switch (c) {
	case KQ_CMD_ALLOC_PD: return KQ_PD;
	case KQ_CMD_CREATE_AH: return KQ_AH;
	case KQ_CMD_REG_MR: return KQ_MR;
	case KQ_CMD_ALLOC_MW: return KQ_MW;
	case KQ_CMD_CREATE_CQ: return KQ_CQ;
	case KQ_CMD_CREATE_QP: return KQ_QP;
	case KQ_CMD_OPEN_QP: return KQ_QP;
	case KQ_CMD_CREATE_SRQ: return KQ_SRQ;
	case KQ_CMD_CREATE_XSRQ: return KQ_SRQ;
	case KQ_CMD_OPEN_XRCD: return KQ_XRCD;
	}
	return KQ_NK;
}

struct uattr {
	__u16 attr_id;
	__u16 len;
	__u16 flags;
	__u16 reserved;
	__u64 data;
};

struct uhdr {
	__u16 length;
	__u16 object_id;
	__u16 method_id;
	__u16 num_attrs;
	__u64 reserved1;
	__u32 driver_id;
	__u32 reserved2;
};

/* The header and the first attributes, read with one copy (libibverbs puts WRITE_CMD first, CORE_IN next). */
#define KQ_FIRST_ATTRS 2
struct ureq {
	struct uhdr h;
	struct uattr a[KQ_FIRST_ATTRS];
};

#define KQ_MAX_ATTRS 16

/* Has the current task a scope with a limit (a process with kernel limits)? */
static __always_inline bool limited_task(__u32 types)
{
	struct cand c = {};
	int i, k;

	candidates(&c, types);
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;

		if (i >= c.n)
			break;
		if (!c.sc[i].type)
			continue;
		lim = bpf_map_lookup_elem(&kq_limits, &c.sc[i]);
		if (!lim)
			continue;
		/* a scope whose limits were all lifted stays (it keeps counting) but limits nothing */
		for (k = 0; k < KQ_NK; k++)
			if (lim->max[k] != KQ_UNLIMITED)
				return true;
	}
	return false;
}

/*
 * 32-bit programs' uverbs ioctls: this hook may not sleep, so it cannot read the request; a process with
 * kernel limits gets none of them (the creation counting behind would kill it anyway past a limit).
 */
SEC("lsm/file_ioctl_compat")
int BPF_PROG(kq_ioctl_compat, struct file *file, unsigned int cmd, unsigned long arg)
{
	__u32 types;

	if (cmd != KQ_RDMA_VERBS_IOCTL)
		return 0;
	types = limited_types();
	if (!types || !is_uverbs(file))
		return 0;
	return limited_task(types) ? -EDQUOT : 0;
}

/* The write command, CORE_IN and a dma-buf MR's length, wherever they are among the attributes. */
static __always_inline int scan_attrs(unsigned long arg, __u16 num_attrs, bool dmabuf, __u32 *wcmd, __u64 *core_in,
				      __u64 *dmabuf_len)
{
	int i;

	for (i = 0; i < KQ_MAX_ATTRS; i++) {
		struct uattr a;

		if (i >= num_attrs)
			break;
		if (bpf_copy_from_user(&a, sizeof(a), (void *)(arg + sizeof(struct uhdr) + i * sizeof(a))))
			return -1;
		if (dmabuf) {
			if (a.attr_id == UVERBS_ATTR_REG_DMABUF_MR_LENGTH)
				*dmabuf_len = a.data;
		} else if (a.attr_id == UVERBS_ATTR_WRITE_CMD) {
			*wcmd = (__u32)a.data;
		} else if (a.attr_id == UVERBS_ATTR_CORE_IN) {
			*core_in = a.data;
		}
	}
	return 0;
}

SEC("lsm.s/file_ioctl")
int BPF_PROG(kq_ioctl, struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ureq r;
	__u32 types, kind = KQ_NK, wcmd = 0;
	__u64 bytes = 0, core_in = 0, dmabuf_len = 0;
	int nattr = KQ_FIRST_ATTRS, err;

	if (cmd != KQ_RDMA_VERBS_IOCTL)
		return 0;
	types = limited_types();
	if (!types || !is_uverbs(file))
		return 0;
	if (bpf_copy_from_user(&r, sizeof(r), (void *)arg)) {
		/* shorter than that (the copy stops at a page nobody mapped): the header alone */
		if (bpf_copy_from_user(&r.h, sizeof(r.h), (void *)arg))
			return 0; /* the kernel's own copy fails the same way */
		nattr = 0;
	}
	if (r.h.num_attrs < nattr)
		nattr = r.h.num_attrs;
	/* A driver's own objects (mlx5 DEVX...) create what nothing here counts: not for limited tasks. */
	if (r.h.object_id & UVERBS_ID_NS_MASK)
		return limited_task(types) ? -EDQUOT : 0;
	switch (r.h.object_id) {
	case UVERBS_OBJECT_CQ:
		if (r.h.method_id == UVERBS_METHOD_CQ_CREATE)
			kind = KQ_CQ;
		break;
	case UVERBS_OBJECT_QP:
		if (r.h.method_id == UVERBS_METHOD_QP_CREATE)
			kind = KQ_QP;
		break;
	case UVERBS_OBJECT_SRQ:
		if (r.h.method_id == UVERBS_METHOD_SRQ_CREATE)
			kind = KQ_SRQ;
		break;
	case UVERBS_OBJECT_WQ:
		if (r.h.method_id == UVERBS_METHOD_WQ_CREATE)
			kind = KQ_WQ;
		break;
	case UVERBS_OBJECT_MR:
		if (r.h.method_id == UVERBS_METHOD_DM_MR_REG)
			kind = KQ_MR;
		else if (r.h.method_id == UVERBS_METHOD_REG_DMABUF_MR) {
			if (scan_attrs(arg, r.h.num_attrs, true, &wcmd, &core_in, &dmabuf_len))
				return 0;
			kind = KQ_MR;
			bytes = dmabuf_len;
		}
		break;
	case UVERBS_OBJECT_DEVICE:
		if (r.h.method_id != UVERBS_METHOD_INVOKE_WRITE)
			return 0;
		/* the write command: first among the attributes as libibverbs sends it, else anywhere */
		if (nattr >= 1 && r.a[0].attr_id == UVERBS_ATTR_WRITE_CMD) {
			wcmd = (__u32)r.a[0].data;
			if (nattr >= 2 && r.a[1].attr_id == UVERBS_ATTR_CORE_IN)
				core_in = r.a[1].data;
		} else if (scan_attrs(arg, r.h.num_attrs, false, &wcmd, &core_in, &dmabuf_len)) {
			return 0;
		}
		if (wcmd == KQ_CMD_REREG_MR) {
			/* rereg changes an MR's length in place, past what was charged: not under an mr_bytes limit */
			if (check(types, KQ_MR_BYTES, KQ_UNLIMITED >> 1))
				return -EDQUOT;
			return 0;
		}
		kind = kind_of_write(wcmd);
		if (kind == KQ_MR) {
			/* CORE_IN not second: look for it */
			if (!core_in && scan_attrs(arg, r.h.num_attrs, false, &wcmd, &core_in, &dmabuf_len))
				return 0;
			/* struct ib_uverbs_reg_mr: response, start, length, ... */
			if (core_in && bpf_copy_from_user(&bytes, sizeof(bytes), (void *)(core_in + 16)))
				bytes = 0;
		}
		break;
	}
	if (kind == KQ_NK)
		return 0; /* not a creation: the early return */
	err = check(types, kind, 1);
	if (!err && kind == KQ_MR && bytes)
		err = check(types, KQ_MR_BYTES, bytes);
	return err;
}

/* Attached only while a limit exists (lib/kq.c): the clean refusal of a context past its limit. */
SEC("lsm/file_open")
int BPF_PROG(kq_open, struct file *file)
{
	__u32 types;

	if (!is_uverbs(file))
		return 0;
	types = limited_types();
	if (types && check(types, KQ_CTX, 1))
		return -EDQUOT;
	return 0;
}

/* An object is gone: give back what it was charged (while no limit exists, nothing was: only forget it). */
static __always_inline void forget(__u64 key)
{
	struct kq_obj *o;

	if (limited_types()) {
		o = bpf_map_lookup_elem(&kq_objs, &key);
		if (!o)
			return;
		credit(o);
	}
	bpf_map_delete_elem(&kq_objs, &key);
}

/* A uverbs file's release gives its context back (no other file on the host pays for this hook). */
SEC("fentry/ib_uverbs_close")
int BPF_PROG(kq_close, struct inode *inode, struct file *filp)
{
	forget((__u64)filp);
	return 0;
}

/* A context: one per opened uverbs file, recorded (and charged) once the open succeeded. */
SEC("fexit/ib_uverbs_open")
int BPF_PROG(kq_opened, struct inode *inode, struct file *filp, int ret)
{
	struct kq_obj o = {};
	__u32 types;

	if (ret)
		return 0;
	o.kind = KQ_CTX;
	types = limited_types();
	if (types && charge(types, &o, KQ_CTX, 1))
		bpf_send_signal(SIGKILL); /* a race with another open of the same scope past the limit */
	record((__u64)filp, &o);
	return 0;
}

SEC("fexit/rdma_alloc_begin_uobject")
int BPF_PROG(kq_begin, const struct uverbs_api_object___kq *obj, void *attrs, struct ib_uobject___kq *ret)
{
	struct kq_obj o = {};
	__u32 kind, types;

	if ((unsigned long)ret >= (unsigned long)-4095 || !ret)
		return 0;
	kind = kind_of_object(obj->id);
	if (kind >= KQ_NK)
		return 0;
	o.kind = kind;
	types = limited_types();
	if (types && charge(types, &o, kind, 1))
		bpf_send_signal(SIGKILL);
	record((__u64)ret, &o);
	return 0;
}

/* Before the commit (nothing there changes the MR; fentry costs less than fexit). */
SEC("fentry/rdma_alloc_commit_uobject")
int BPF_PROG(kq_commit, struct ib_uobject___kq *uobj, void *attrs)
{
	__u64 key = (__u64)uobj, len;
	struct kq_obj *o;
	struct ib_mr___kq *mr;
	const struct uverbs_api_object___kq *ao = uobj->uapi_object; /* read directly, but a pointer BTF lacks */
	__u32 id = 0;

	if (bpf_core_read(&id, sizeof(id), &ao->id) || id != UVERBS_OBJECT_MR)
		return 0;
	o = bpf_map_lookup_elem(&kq_objs, &key);
	if (!o || o->kind != KQ_MR)
		return 0;
	mr = BPF_CORE_READ(uobj, object); /* a void * the verifier cannot follow */
	len = BPF_CORE_READ(mr, length);
	if (!len)
		return 0;
	o->bytes = len;
	if (o->n && charge_more(o, KQ_MR_BYTES, len))
		bpf_send_signal(SIGKILL);
	return 0;
}

SEC("fexit/uverbs_destroy_uobject")
int BPF_PROG(kq_destroy, struct ib_uobject___kq *uobj, int reason, void *attrs, int ret)
{
	if (ret)
		return 0; /* the object is still there */
	forget((__u64)uobj);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
