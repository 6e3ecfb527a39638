/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel quotas: the drivers' own uverbs methods (bpf/kqdrv.h has the table). Included by bpf/kq.bpf.c after
 * its helpers (reserve, charge, emit, scope_at); not a program of its own.
 *
 *   kq_drv_ioctl   the check in lsm.s/file_ioctl: a method that creates no counted kind passes; an mlx5 DEVX
 *                  create is reserved as the kind its PRM opcode makes, a DEVX UMEM as its length of mr_bytes,
 *                  as core creations are (reserve); past a limit, or not in the table, KQ_DRV_ERRNO
 *                  (EOPNOTSUPP, see kqdrv.h) to a limited task.
 *   kq_drv_begin   the charge in fexit/rdma_alloc_begin_uobject: the kernel's uobject of the driver's type
 *                  takes the thread's reservation (kq_task.dobject says which object type the check passed), so
 *                  that its destroy gives it back (kq_destroy, as for every object); one the kernel never
 *                  allocated goes back when the ioctl returns (kq_ioctl_done). Only a creation without a
 *                  reservation is charged here, and killed past a limit.
 * The driver id of the request is the one the kernel holds to: it refuses (EINVAL) a request whose
 * hdr.driver_id is not the device's, right after this hook.
 */
#ifndef RDMACTL_KQDRV_BPF_H
#define RDMACTL_KQDRV_BPF_H

#include "kqdrv.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct kq_drvseen);
} kq_drvunk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} kq_drvcfg SEC(".maps");

/*
 * A thread's driver create that passed the check: what its uobject is charged when the kernel makes it, kept in
 * the thread's own storage (kq_task.dheld, dobject, dkind, dbytes), where no other thread's requests can evict
 * it (an LRU table shared by the host's threads could be emptied by a tenant with thousands of them, so that
 * an honest creator's object was charged a second time at its commit).
 */

static __always_inline __u32 kq_drv_action(__u32 drv, __u32 obj, __u32 meth)
{
	switch (KQ_DRV_KEY(drv, obj, meth)) {
#define X(d, on, o, mn, m, a) case KQ_DRV_KEY(KQ_DRIVER_##d, o, m): return KQ_DRV_##a;
		KQ_DRV_METHODS(X)
#undef X
	}
	return KQ_DRV_UNKNOWN;
}

static __always_inline __u32 kq_devx_kind(__u32 opcode)
{
	switch (opcode) {
#define X(name, op, kind) case op: return kind;
		KQ_DEVX_OPCODES(X)
#undef X
	}
	return KQ_NK;
}

/*
 * The attribute id among the request's first KQ_MAX_ATTRS: 0 and *a filled, -1 (not there, or unreadable:
 * the kernel fails the request the same way, the attributes the programs read are mandatory), or 1: not
 * among the first KQ_MAX_ATTRS of a longer request (rdma-core sends 4 to 6; such a request is refused).
 */
static __always_inline int kq_drv_attr(unsigned long arg, __u16 num_attrs, __u16 id, struct uattr *a)
{
	int i;

	for (i = 0; i < KQ_MAX_ATTRS; i++) {
		if (i >= num_attrs)
			return -1;
		if (bpf_copy_from_user(a, sizeof(*a), (void *)(arg + sizeof(struct uhdr) + i * sizeof(*a))))
			return -1;
		if (a->attr_id == id)
			return 0;
	}
	return num_attrs > KQ_MAX_ATTRS ? 1 : -1;
}

/*
 * The first limited scope of the file (ufile: its context record's first scope) or else of the task (type 0:
 * none): whom an unknown method is refused for.
 */
static __always_inline void kq_drv_limited_scope(__u32 types, __u64 ufile, struct kq_scope *out)
{
	struct kq_obj *f = file_scopes(ufile);
	struct kq_scope sc;
	int i, k;

	if (f && f->n > 0 && f->n <= KQ_MAXCHG) {
		*out = f->sc[0];
		return;
	}

	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;

		if (!scope_limit(types, i, &sc, &lim))
			break;
		if (!lim)
			continue;
		for (k = 0; k < KQ_NK; k++)
			if (lim->max[k] != KQ_UNLIMITED) {
				*out = sc;
				return;
			}
	}
}

/* A method not in the table: refused to a limited task (unless the host lets them pass), and recorded. */
static __always_inline int kq_drv_unknown(const struct uhdr *h, __u32 types, __u64 ufile)
{
	__u64 key = KQ_DRV_KEY(h->driver_id, h->object_id, h->method_id);
	struct kq_scope sc = {};
	struct kq_drvseen *s, n = {};
	__u32 zero = 0, *cfg;
	bool pass;

	kq_drv_limited_scope(types, ufile, &sc);
	if (!sc.type)
		return 0;
	cfg = bpf_map_lookup_elem(&kq_drvcfg, &zero);
	pass = cfg && (*cfg & KQ_DRVCFG_PASS_UNKNOWN);
	s = bpf_map_lookup_elem(&kq_drvunk, &key);
	if (!s) {
		bpf_map_update_elem(&kq_drvunk, &key, &n, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&kq_drvunk, &key);
	}
	if (s) {
		__sync_fetch_and_add(pass ? &s->passed : &s->refused, 1);
		s->tgid = bpf_get_current_pid_tgid() >> 32;
		bpf_get_current_comm(s->comm, sizeof(s->comm));
	}
	if (pass)
		return 0;
	emit(KQ_EV_DRV_UNKNOWN, KQ_NK, &sc, key, 0, 0);
	return -KQ_DRV_ERRNO;
}

/*
 * The check of a driver-namespace request (its object or its method is the driver's), for a thread or a file
 * with scopes (kq_ioctl returned before for the others): against the file's scopes, or else the thread's, as a
 * core creation is. t: the thread's storage.
 */
static __always_inline int kq_drv_ioctl(unsigned long arg, const struct uhdr *h, __u32 types, __u64 ufile,
					struct kq_task *t)
{
	__u32 kind = KQ_NK, act;
	__u64 bytes = 0;
	struct uattr a;
	__u8 op[2];
	int err;

	/* a pending charge this thread's earlier request left (the kernel failed it first) is stale now */
	t->dheld = 0;
	act = kq_drv_action(h->driver_id, h->object_id, h->method_id);
	switch (act) {
	case KQ_DRV_PASS:
		return 0;
	case KQ_DRV_DEVX_CREATE:
		/* no command, or unreadable: the kernel refuses it the same way (a mandatory attribute) */
		err = kq_drv_attr(arg, h->num_attrs, KQ_DEVX_ATTR_CMD_IN, &a);
		if (err > 0)
			return -KQ_DRV_ERRNO; /* past the attributes the programs read: refused where a scope applies */
		if (err || a.len < sizeof(op) || bpf_copy_from_user(op, sizeof(op), (void *)a.data))
			return 0;
		kind = kq_devx_kind((__u32)op[0] << 8 | op[1]);
		if (kind >= KQ_NK)
			return 0; /* a create of no counted kind */
		/* reserved as a core creation is: two creators at the limit cannot both pass and one be killed */
		if (reserve(types, kind, 0, ufile, t))
			return -KQ_DRV_ERRNO;
		break;
	case KQ_DRV_UMEM_REG:
		err = kq_drv_attr(arg, h->num_attrs, KQ_DEVX_ATTR_UMEM_LEN, &a);
		if (err > 0)
			return -KQ_DRV_ERRNO;
		if (err || a.len != sizeof(__u64))
			return 0; /* the kernel takes exactly a u64 */
		bytes = a.data;
		if (bytes && reserve(types, KQ_NK, bytes, ufile, t))
			return -KQ_DRV_ERRNO;
		break;
	default:
		return kq_drv_unknown(h, types, ufile);
	}
	t->dobject = h->object_id;
	t->dkind = kind;
	t->dbytes = bytes;
	t->dheld = 1;
	return 0;
}

/* The kernel allocated a driver's uobject (key) of the file ufile: charged what its request passed the check with. */
static __always_inline void kq_drv_begin(__u32 object, __u64 key, __u64 ufile)
{
	struct kq_task *t = task_of();
	struct kq_obj o = {};
	bool over = false;
	__u32 kind, types;
	__u64 bytes;

	if (!t || !t->dheld)
		return;
	t->dheld = 0;
	if (t->dobject != object)
		return;
	/* a bound the verifier keeps through the spills of charge() (kinds are below 16; KQ_NK is none) */
	kind = t->dkind & 0xf;
	bytes = t->dbytes;
	o.kind = kind;
	o.bytes = bytes;
	types = limited_types();
	/* the reservation its request made is its charge (kind KQ_NK: a UMEM's bytes alone) */
	if (types && !take_reservation_t(t, kind < KQ_NK ? kind : KQ_NK, &o)) {
		/* none: the programs were attached between its check and now */
		if (kind < KQ_NK) {
			over = charge(types, &o, kind, 1, ufile);
			if (bytes)
				over |= charge_more(&o, KQ_MR_BYTES, bytes);
		} else if (bytes) {
			over = charge(types, &o, KQ_MR_BYTES, bytes, ufile);
		}
	}
	if (over)
		bpf_send_signal(SIGKILL); /* past a limit without a reservation */
	record(&key, &o);
}

/*
 * The kernel's own copy, at fentry/rdma_alloc_commit_uobject (the backstop): an mlx5 DEVX object's kind from
 * the obj_id the kernel keeps in its devx_obj (opcode | obj_type << 16 in the top half), a DEVX UMEM's bytes
 * from the ib_umem it pinned. mlx5_ib's types are resolved (CO-RE) against its BTF when the programs are
 * loaded; without the module loaded then, there is no mlx5 device either, and these reads are left out.
 */
enum rdma_driver_id___kqd { KQD_DRIVER_MLX5 = 1 };

struct ib_device_ops___kqd {
	enum rdma_driver_id___kqd driver_id;
} __attribute__((preserve_access_index));

struct ib_device___kqd {
	struct ib_device_ops___kqd ops;
} __attribute__((preserve_access_index));

struct ib_ucontext___kqd {
	struct ib_device___kqd *device;
} __attribute__((preserve_access_index));

struct ib_uobject___kqd {
	void *object;
	struct ib_ucontext___kqd *context;
} __attribute__((preserve_access_index));

struct devx_obj___kqd {
	__u64 obj_id;
} __attribute__((preserve_access_index));

struct ib_umem___kqd {
	unsigned long length;
} __attribute__((preserve_access_index));

struct devx_umem___kqd {
	struct ib_umem___kqd *umem;
} __attribute__((preserve_access_index));

#define KQD_MLX5_DEVX_OBJ 0x1001
#define KQD_MLX5_DEVX_UMEM 0x1002

/*
 * What the kernel made, for a uobject of type id: when it is mlx5's DEVX object or UMEM, true with its kind
 * (KQ_NK: no counted kind) and its bytes (a UMEM's, for mr_bytes); false for anything else. Read by the
 * commit (below) and by the population (bpf/kqpop.bpf.h), which counts what exists at the first limit.
 */
static __always_inline bool kq_drv_made(void *uobjp, __u32 id, __u32 *kind, __u64 *bytes)
{
	struct ib_uobject___kqd *u = uobjp;
	__u64 oid;
	void *obj;

	*kind = KQ_NK;
	*bytes = 0;
	if (id != KQD_MLX5_DEVX_OBJ && id != KQD_MLX5_DEVX_UMEM)
		return false;
	if (!bpf_core_type_exists(struct devx_obj___kqd) || !bpf_core_type_exists(struct devx_umem___kqd))
		return false; /* mlx5_ib was not loaded when the programs were: no mlx5 device either */
	if (BPF_CORE_READ(u, context, device, ops.driver_id) != KQD_DRIVER_MLX5)
		return false;
	obj = BPF_CORE_READ(u, object);
	if (!obj)
		return false;
	if (id == KQD_MLX5_DEVX_OBJ) {
		oid = BPF_CORE_READ((struct devx_obj___kqd *)obj, obj_id);
		*kind = kq_devx_kind((oid >> 32) & 0xffff) & 0xf;
	} else {
		*bytes = BPF_CORE_READ((struct devx_umem___kqd *)obj, umem, length);
	}
	return true;
}

/*
 * A driver's uobject is committed: when it is mlx5's DEVX object or UMEM, its record is made to say what the
 * kernel made (a request rewritten after the check, or one that began before the programs were attached).
 */
static __always_inline void kq_drv_commit(void *uobjp, __u32 id)
{
	struct kq_obj *o, n = {};
	__u64 key = (__u64)uobjp, bytes;
	__u32 kind, types;
	bool over = false;

	if (!kq_drv_made(uobjp, id, &kind, &bytes))
		return;
	o = bpf_map_lookup_elem(&kq_objs, &key);
	if (o && o->kind == kind && o->bytes == bytes)
		return; /* what the check charged is what the kernel made */
	if (!o && kind >= KQ_NK && !bytes)
		return; /* nothing to count */
	/* otherwise: the charge goes by the kernel's copy */
	if (o)
		credit(o);
	n.kind = kind;
	n.bytes = bytes;
	types = limited_types();
	if (types) {
		__u64 ufile = (__u64)BPF_CORE_READ((struct ib_uobject___kq *)uobjp, ufile);

		if (kind < KQ_NK)
			over = charge(types, &n, kind, 1, ufile);
		else if (bytes)
			over = charge(types, &n, KQ_MR_BYTES, bytes, ufile);
	}
	if (over)
		bpf_send_signal(SIGKILL); /* a request rewritten after the check, past a limit */
	if (o && !n.n)
		objs_delete(&key); /* its old charge given back, and nothing charged now: no record kept */
	else
		record(&key, &n);
}

#endif
