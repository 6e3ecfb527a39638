// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Two floors of a BPF design of the kernel quotas (bench/kqprobe), at exactly the hooks of bpf/kqempty.bpf.c:
 *   lookup  (count_objects false) at each hook, one look at the thread's task storage (found: a storage each
 *           thread made at its first hook) and a read of one field, nothing else: a design that tells a
 *           limited thread from a free one has to look at each hook that decides, and the thread's own
 *           storage is the cheapest place;
 *   record  (count_objects true) that, and what counting an object against one scope needs at the least in a
 *           design that records objects: at its allocation, the scope's usage looked up and added to, and a
 *           record of the object (whoever destroys it, a close or another process, has only the object); at
 *           its destroy, the record looked up and deleted, and the usage taken from. No limit checked, no
 *           scope walk, no request read.
 * Never loaded by rdmactl.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile bool count_objects; /* set before the load: the verifier drops the branches it does not take */

struct kqr_task {
	__u64 seen;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kqr_task);
} kqr_task SEC(".maps");

struct kqr_scope {
	__u32 type;
	__u32 epoch;
	__u64 id;
};

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

static __always_inline int look(void)
{
	struct kqr_task *t = bpf_task_storage_get(&kqr_task, bpf_get_current_task_btf(), 0,
						  BPF_LOCAL_STORAGE_GET_F_CREATE);
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

SEC("lsm.s/file_ioctl")
int BPF_PROG(kqr_ioctl)
{
	return look() ? -1 : 0;
}

SEC("lsm/file_open")
int BPF_PROG(kqr_open)
{
	return look() ? -1 : 0;
}

SEC("fexit/ib_uverbs_open")
int BPF_PROG(kqr_opened)
{
	look();
	return 0;
}

SEC("fentry/ib_uverbs_close")
int BPF_PROG(kqr_close)
{
	look();
	return 0;
}

SEC("fexit/rdma_alloc_begin_uobject")
int BPF_PROG(kqr_begin, void *obj, void *attrs, void *ret)
{
	struct kqr_scope sc = { .type = 2, .epoch = 1, .id = bpf_get_current_pid_tgid() >> 32 };
	__u64 key = (__u64)ret;

	look();
	if (!count_objects || !ret || key >= (__u64)-4095)
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
int BPF_PROG(kqr_destroy, void *uobj, int reason, void *attrs, int ret)
{
	__u64 key = (__u64)uobj;
	struct kqr_scope *o, sc;

	look();
	if (!count_objects || ret)
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
