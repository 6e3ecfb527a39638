// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Floors of a BPF design of the kernel quotas (bench/kqprobe), at the hooks of bpf/kqempty.bpf.c (mode, set
 * before the load):
 *   lookup  (KQR_LOOKUP) at each hook, one look at the thread's task storage (found: a storage each thread
 *           made at its first hook) and a read of one field, nothing else: a design that tells a limited
 *           thread from a free one has to look at each hook that decides, and the thread's own storage is
 *           the cheapest place;
 *   record  (KQR_RECORD) that, and what counting an object against one scope needs at the least in a design
 *           that records objects: at its allocation, the scope's usage looked up and added to, and a record
 *           of the object (whoever destroys it, a close or another process, has only the object); at its
 *           destroy, the record looked up and deleted, and the usage taken from. No limit checked, no scope
 *           walk, no request read.
 *   least   (KQR_LEAST) the least a design pays that keeps issue 33's other promises, with no record per
 *           object (counts per uverbs file): the process limited_tgid is limited (0: nobody, the floor of a
 *           free thread while limits exist elsewhere). A limited thread's uverbs ioctl is read (the header
 *           and two attributes, one copy: a clean EDQUOT needs the request before the kernel acts on it) and
 *           classified as bpf/kq.bpf.c does (bpf/kquverbs.bpf.h); a creation is checked and reserved against
 *           its file's one scope (limit and usage in one map value, one lookup, one atomic add; the file's
 *           scope cached in the thread's storage); the reservation is taken at the allocation, or given back
 *           at the ioctl's return (one more hook, fexit/ib_uverbs_ioctl, that empty and lookup do not
 *           attach: without it a request the kernel refuses before its allocation would leave a charge that
 *           refuses others below their limit); the destroy credits the object's kind (from the kernel's
 *           uobject) to its file's scope. A context is reserved at the open, its file's scope recorded when
 *           the open succeeded and given back at the close. No scope walk, no epochs, no population, no
 *           backstop, no events: less than any design that keeps the promises can do.
 * Never loaded by rdmactl.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "kq.h"
#include "kquverbs.bpf.h"

#define EDQUOT 122

enum { KQR_LOOKUP, KQR_RECORD, KQR_LEAST };

const volatile __u32 mode;          /* set before the load: the verifier drops the branches it does not take */
const volatile __u32 limited_tgid;  /* KQR_LEAST: the limited process (0: none) */

struct kqr_scope {
	__u32 type;
	__u32 epoch;
	__u64 id;
};

struct kqr_task {
	__u64 seen;
	__u32 limited;          /* KQR_LEAST: 0 not known yet, 1 free, 2 limited */
	__u32 held;             /* a reservation: of kind rkind, in the scope of file rfile */
	__u32 rkind;
	__u32 pad;
	__u64 file;             /* the last uverbs file the thread used, and its scope */
	struct kqr_scope fsc;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kqr_task);
} kqr_task SEC(".maps");

/* the one scope's usage, as kq_usage keeps it (keyed by scope) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct kqr_scope);
	__type(value, __s64);
} kqr_usage SEC(".maps");

/* an object's record: the scope it was charged to */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__type(key, __u64);
	__type(value, struct kqr_scope);
} kqr_objs SEC(".maps");

/* KQR_LEAST: a scope's limits and usage in one value (one lookup checks both) */
struct kqr_lim {
	__s64 max[KQ_NK + 1];
	__s64 use[KQ_NK + 1];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct kqr_scope);
	__type(value, struct kqr_lim);
} kqr_lims SEC(".maps");

/* KQR_LEAST: each uverbs file's scope (keyed by its struct ib_uverbs_file), made at its open */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 12);
	__type(key, __u64);
	__type(value, struct kqr_scope);
} kqr_files SEC(".maps");

/* KQR_LEAST: reservations held (the ioctl's return looks at no storage while none is) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} kqr_nresv SEC(".maps");

static __always_inline struct kqr_task *task(void)
{
	return bpf_task_storage_get(&kqr_task, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline int look(void)
{
	struct kqr_task *t = task();
	volatile __u64 seen = t ? t->seen : 0; /* a read the compiler cannot drop */

	return seen == 1;
}

/* the usage of sc, made on the first charge */
static __always_inline void add(const struct kqr_scope *sc, __s64 d)
{
	__s64 zero = 0, *u = bpf_map_lookup_elem(&kqr_usage, sc);

	if (!u) {
		bpf_map_update_elem(&kqr_usage, sc, &zero, BPF_NOEXIST);
		u = bpf_map_lookup_elem(&kqr_usage, sc);
	}
	if (u)
		__sync_fetch_and_add(u, d);
}

/* KQR_LEAST: is the thread limited (t its storage, the answer cached there)? */
static __always_inline bool limited(struct kqr_task *t)
{
	if (!t)
		return false;
	if (!t->limited)
		t->limited = limited_tgid && bpf_get_current_pid_tgid() >> 32 == limited_tgid ? 2 : 1;
	return t->limited == 2;
}

/* KQR_LEAST: the scope's limits and usage (made at the first use: every limit far away) */
static __always_inline struct kqr_lim *lim_of(const struct kqr_scope *sc)
{
	struct kqr_lim *l = bpf_map_lookup_elem(&kqr_lims, sc), n = {};
	int k;

	if (l)
		return l;
	for (k = 0; k < KQ_NK + 1; k++)
		n.max[k] = 1LL << 50;
	bpf_map_update_elem(&kqr_lims, sc, &n, BPF_NOEXIST);
	return bpf_map_lookup_elem(&kqr_lims, sc);
}

/* KQR_LEAST: the scope of uverbs file ufile, through the thread's cache (NULL: the file has none) */
static __always_inline const struct kqr_scope *file_scope(struct kqr_task *t, __u64 ufile)
{
	struct kqr_scope *f;

	if (t->file == ufile)
		return &t->fsc;
	f = bpf_map_lookup_elem(&kqr_files, &ufile);
	if (!f)
		return NULL;
	t->file = ufile;
	t->fsc = *f;
	return &t->fsc;
}

static __always_inline void nresv_add(__s64 d)
{
	__u32 zero = 0;
	__s64 *n = bpf_map_lookup_elem(&kqr_nresv, &zero);

	if (n)
		__sync_fetch_and_add(n, d);
}

/* KQR_LEAST: reserve one of kind in sc: -EDQUOT past its limit */
static __always_inline int reserve(struct kqr_task *t, const struct kqr_scope *sc, __u32 kind)
{
	struct kqr_lim *l = lim_of(sc);
	__s64 u;

	if (!l || kind >= KQ_NK + 1)
		return 0;
	u = __sync_fetch_and_add(&l->use[kind], 1) + 1;
	if (u > l->max[kind]) {
		__sync_fetch_and_add(&l->use[kind], -1);
		return -EDQUOT;
	}
	t->held = 1;
	t->rkind = kind;
	nresv_add(1);
	return 0;
}

/* KQR_LEAST: take back d of kind from the scope of uverbs file ufile */
static __always_inline void credit(struct kqr_task *t, __u64 ufile, __u32 kind)
{
	const struct kqr_scope *sc = file_scope(t, ufile);
	struct kqr_lim *l = sc ? bpf_map_lookup_elem(&kqr_lims, sc) : NULL;

	if (l && kind < KQ_NK)
		__sync_fetch_and_add(&l->use[kind], -1);
}

SEC("lsm.s/file_ioctl")
int BPF_PROG(kqr_ioctl, struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kqr_task *t = task();
	const struct kqr_scope *sc;
	struct inode *ino = file->f_inode;
	struct ureq r;
	__u32 kind = KQ_NK;

	if (mode != KQR_LEAST) {
		volatile __u64 seen = t ? t->seen : 0;

		return seen == 1 ? -1 : 0;
	}
	if (!limited(t) || cmd != KQ_RDMA_VERBS_IOCTL || !ino || ino->i_rdev >> 20 != KQ_UVERBS_MAJOR)
		return 0;
	if (bpf_copy_from_user(&r, sizeof(r), (void *)arg))
		return 0;
	if (r.h.object_id == UVERBS_OBJECT_DEVICE && r.h.method_id == UVERBS_METHOD_INVOKE_WRITE &&
	    r.a[0].attr_id == UVERBS_ATTR_WRITE_CMD)
		kind = kind_of_write((__u32)r.a[0].data);
	else if (r.h.object_id == UVERBS_OBJECT_CQ && r.h.method_id == UVERBS_METHOD_CQ_CREATE)
		kind = KQ_CQ;
	else if (r.h.object_id == UVERBS_OBJECT_QP && r.h.method_id == UVERBS_METHOD_QP_CREATE)
		kind = KQ_QP;
	else if (r.h.object_id == UVERBS_OBJECT_SRQ && r.h.method_id == UVERBS_METHOD_SRQ_CREATE)
		kind = KQ_SRQ;
	if (kind >= KQ_NK || !t)
		return 0;
	sc = file_scope(t, (__u64)file->private_data);
	if (!sc) { /* a file opened before the floor was attached: its scope made once, at its first creation */
		struct kqr_scope n = { .type = KQ_SCOPE_PID, .epoch = 1, .id = limited_tgid };
		__u64 ufile = (__u64)file->private_data;

		bpf_map_update_elem(&kqr_files, &ufile, &n, BPF_NOEXIST);
		sc = file_scope(t, ufile);
		if (!sc)
			return 0;
	}
	return reserve(t, sc, kind);
}

SEC("fexit/ib_uverbs_ioctl")
int BPF_PROG(kqr_ioctl_done)
{
	__u32 zero = 0;
	__s64 *n = bpf_map_lookup_elem(&kqr_nresv, &zero);
	struct kqr_task *t;

	if (!n || !*(volatile __s64 *)n)
		return 0;
	t = bpf_task_storage_get(&kqr_task, bpf_get_current_task_btf(), 0, 0);
	if (!t || !t->held)
		return 0;
	t->held = 0;
	nresv_add(-1);
	{
		struct kqr_lim *l = lim_of(&t->fsc);

		if (l && t->rkind < KQ_NK + 1)
			__sync_fetch_and_add(&l->use[t->rkind], -1);
	}
	return 0;
}

SEC("lsm/file_open")
int BPF_PROG(kqr_open, struct file *file)
{
	struct kqr_task *t = task();
	struct inode *ino = file->f_inode;
	struct kqr_scope sc = { .type = KQ_SCOPE_PID, .epoch = 1 };

	if (mode != KQR_LEAST) {
		volatile __u64 seen = t ? t->seen : 0;

		return seen == 1 ? -1 : 0;
	}
	if (!limited(t) || !ino || ino->i_rdev >> 20 != KQ_UVERBS_MAJOR || !t)
		return 0;
	sc.id = limited_tgid;
	t->fsc = sc; /* the opener's scope: the new file's, once it is open */
	t->file = 0;
	return reserve(t, &sc, KQ_CTX);
}

SEC("fexit/ib_uverbs_open")
int BPF_PROG(kqr_opened, struct inode *inode, struct file *file, int ret)
{
	struct kqr_task *t = task();
	__u64 ufile;

	if (mode != KQR_LEAST) {
		look();
		return 0;
	}
	if (!limited(t) || !t || !t->held)
		return 0;
	t->held = 0;
	nresv_add(-1);
	ufile = (__u64)file->private_data;
	if (ret || !ufile)
		return 0; /* (the floor leaves a failed open's charge: a design gives it back) */
	bpf_map_update_elem(&kqr_files, &ufile, &t->fsc, BPF_ANY);
	t->file = ufile;
	return 0;
}

SEC("fentry/ib_uverbs_close")
int BPF_PROG(kqr_close, struct inode *inode, struct file *file)
{
	struct kqr_task *t = task();
	__u64 ufile;

	if (mode != KQR_LEAST) {
		look();
		return 0;
	}
	if (!t)
		return 0;
	ufile = (__u64)file->private_data;
	if (t->file != ufile && !bpf_map_lookup_elem(&kqr_files, &ufile))
		return 0; /* a file without a scope */
	credit(t, ufile, KQ_CTX);
	bpf_map_delete_elem(&kqr_files, &ufile);
	t->file = 0;
	return 0;
}

SEC("fexit/rdma_alloc_begin_uobject")
int BPF_PROG(kqr_begin, void *obj, void *attrs, void *ret)
{
	struct kqr_scope sc = { .type = 2, .epoch = 1, .id = bpf_get_current_pid_tgid() >> 32 };
	__u64 key = (__u64)ret;
	struct kqr_task *t;

	if (mode == KQR_LEAST) {
		t = task();
		/* the reservation its request made is its charge */
		if (limited(t) && t && t->held) {
			t->held = 0;
			nresv_add(-1);
		}
		return 0;
	}
	look();
	if (mode != KQR_RECORD || !ret || key >= (__u64)-4095)
		return 0;
	add(&sc, 1);
	bpf_map_update_elem(&kqr_objs, &key, &sc, BPF_NOEXIST);
	return 0;
}

SEC("fentry/rdma_alloc_commit_uobject")
int BPF_PROG(kqr_commit)
{
	look();
	return 0;
}

SEC("fexit/uverbs_destroy_uobject")
int BPF_PROG(kqr_destroy, struct ib_uobject___kq *uobj, int reason, void *attrs, int ret)
{
	__u64 key = (__u64)uobj;
	struct kqr_scope *o, sc;

	if (mode == KQR_LEAST) {
		struct kqr_task *t = task();
		const struct uverbs_api_object___kq *ao;
		__u64 ufile;
		__u32 id = 0;

		if (!t || ret)
			return 0;
		ufile = (__u64)uobj->ufile;
		/* a free thread through the file it uses: known without a lookup (its cache) */
		if (!limited(t) && t->file != ufile)
			return 0;
		ao = uobj->uapi_object;
		if (bpf_core_read(&id, sizeof(id), &ao->id))
			return 0;
		credit(t, ufile, kind_of_object(id)); /* (an MR's bytes: its length read here; the floor leaves them) */
		return 0;
	}
	look();
	if (mode != KQR_RECORD || ret)
		return 0;
	o = bpf_map_lookup_elem(&kqr_objs, &key);
	if (!o)
		return 0;
	sc = *o;
	if (!bpf_map_delete_elem(&kqr_objs, &key))
		add(&sc, -1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
