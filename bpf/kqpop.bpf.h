/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Part of bpf/kq.bpf.c (included at its end, one program object): the population, the iterators that record
 * what already exists when the first limit attaches the programs. Not a program object of its own.
 */
#ifndef RDMACTL_KQPOP_BPF_H
#define RDMACTL_KQPOP_BPF_H

/*
 * Population: when a scope gets its first limit (the first on the host attaches the programs), what its
 * tasks already hold is recorded from the kernel's own lists, so that the limit counts it (lib/kq/kq.c
 * populate, then rescan). Only the scope's tasks (kq_state.pop_want, kq_want) are looked at: the programs
 * record only charged objects, so what a task without limits made is in no record, and a table the whole
 * host's objects could fill is never asked to hold them. Every uverbs file a task holds
 * (an fd: iter/task_file; a mapping whose fd was closed: iter/task_vma) is a context, keyed by its struct
 * ib_uverbs_file as kq_opened keys it, and each object on its ib_uverbs_file's uobjects list is recorded with its
 * kind, an MR's length (an mlx5 DEVX object: the kind of its opcode; a DEVX UMEM: its length, as mr_bytes; both
 * read from the kernel's copy as the commit reads them, kq_drv_made), and the tgid and cgroup of the task holding
 * the file. The first task that shows a file
 * wins (a file shared by several processes, through fork or fd passing, is theirs); later sightings find
 * it walked (kq_walked: once a round, however many fds and mappings show it) and walk nothing. Every insert
 * is BPF_NOEXIST: a record a program made meanwhile wins. Each record is charged to the scope being counted
 * (kq_state.pop_scope) as it is inserted, its count added to kq_state.pop_base (the new limit's base), so
 * that user space writes none of them back (lib/kq/kq.c rescan; that was two bpf() calls a record).
 *
 * Races, with the programs attached before the walk starts and kq_state.populating set before they are:
 * - an object created meanwhile: its kq_begin (or, when it began before the attach, kq_commit) records it;
 *   the walk's insert then fails, or the program's update replaces the walk's record: never twice;
 * - an object destroyed meanwhile: forget() marks its key in kq_gone before it deletes the record. The walk
 *   inserts its record first, then looks for the mark: if the destroy's delete came before the insert, its
 *   mark came before too and the walk finds it and drops its record; if the delete came after the insert,
 *   the delete removed it. Either way one of them deletes the record and gives its charge back (the walk
 *   from pop_base, the destroy to the usage), never both: a destroy deletes a population's record before it
 *   credits (bpf/kq.bpf.c forget). The hash map's bucket lock orders the delete and the insert of one key. An
 *   object's memory is freed with kfree_rcu, and an iterator program runs under rcu_read_lock: the address
 *   cannot be reused for a new object while the walk holds it. The walk also drops its record when the
 *   object is off its list already (list_del_init points it to itself);
 * - a list that changes under the walk: a deleted entry points to itself; the walk then starts again from the
 *   head (the inserts already made stay, the new ones fail) and counts a miss in kq_state.pop_miss when it
 *   cannot finish, as forget() does when kq_gone is full: lib/kq/kq.c then drops what the population made and
 *   walks again.
 * - an object created meanwhile through a wanted task's file by a thread the new scope does not name (a
 *   forked child under a --pid limit, a receiver of the fd), or through a file whose record names only
 *   lifted scopes: charged to the new scope too (bpf/kqcharge.bpf.h, charge_counted) while the count runs,
 *   population and rescan; a thread that cached the file as one without scopes looks again, since the
 *   file's context record, once inserted, moves kq_state.fgen before its objects are walked;
 * - a uverbs file whose open was under way at the attach (kq_opened does not run) and whose fd is installed
 *   after the iterator read its process's table: recorded at its GET_CONTEXT (late_ctx), which every file
 *   asks before it can create anything; its objects are created after the attach and recorded by the
 *   programs.
 * What stays (doc/kq-cost.md): a destroy already under way when the programs were attached (entered before,
 * so its fexit never runs) whose object leaves the list only after the walk looked at it is counted until
 * the last limit goes (an over-count, the safe side); such a file that never asks for a context is not
 * counted as one (it holds nothing, and RDMA netlink shows no context for it either).
 */
struct walk {
	__u64 head;    /* &ufile->uobjects */
	__u64 cur;     /* the list entry the walk is at */
	__u32 tgid;
	__u32 restarts;
	__u64 cgid;
	bool done;
};

#define KQ_WALK_MAX (1 << 20)
#define KQ_WALK_RESTARTS 8

static __always_inline void pop_miss(void)
{
	struct kq_state *st = state();

	if (st)
		__sync_fetch_and_add(&st->pop_miss, 1);
}

/* An insert that failed: a record that exists wins (EEXIST); no room (kq_objs full) is a miss of its own. */
static __always_inline void pop_failed(int err)
{
	struct kq_state *st = state();

	if (err == -17 /* EEXIST */ || !st)
		return;
	__sync_fetch_and_add(&st->pop_miss, 1);
	__sync_fetch_and_add(&st->pop_full, 1);
}

/*
 * A record the population made (d = 1) or dropped again (d = -1): what it is charged to kq_state.pop_scope, in
 * kq_state.pop_base, as a destroy would give it back (credit).
 */
static __always_inline void pop_count(const struct kq_obj *o, __s64 d)
{
	struct kq_state *st = state();

	if (!st)
		return;
	if (o->kind < KQ_NK)
		__sync_fetch_and_add(&st->pop_base[o->kind], d);
	if (o->bytes)
		__sync_fetch_and_add(&st->pop_base[KQ_MR_BYTES], d * (__s64)o->bytes);
}

/* A record the population makes: of a wanted task's object, charged to the scope being counted. */
static __always_inline void pop_record(struct kq_obj *o, __u32 tgid, __u64 cgid)
{
	struct kq_state *st = state();

	o->pad = KQ_OBJ_FOUND;
	o->tgid = tgid;
	o->cgid = cgid;
	if (!st)
		return;
	o->sc[0] = st->pop_scope;
	o->n = 1;
}

/* One object the walk found: recorded unless a program did, dropped again when it is gone already. */
static __always_inline void found_obj(struct walk *w, __u64 uobj)
{
	struct ib_uobject___kq *u = (void *)uobj;
	const struct uverbs_api_object___kq *ao = NULL;
	struct kq_obj o = {};
	__u64 next = 0, entry = uobj + bpf_core_field_offset(struct ib_uobject___kq, list);
	__u32 id = 0, kind;
	void *obj = NULL;
	int err;

	if (bpf_probe_read_kernel(&ao, sizeof(ao), &u->uapi_object) || !ao ||
	    bpf_probe_read_kernel(&id, sizeof(id), &ao->id))
		return;
	kind = kind_of_object(id);
	if (kind < KQ_NK) {
		if (kind == KQ_MR && !bpf_probe_read_kernel(&obj, sizeof(obj), &u->object) && obj)
			bpf_probe_read_kernel(&o.bytes, sizeof(o.bytes), &((struct ib_mr___kq *)obj)->length);
	} else if (!kq_drv_made((void *)uobj, id, &kind, &o.bytes) || (kind >= KQ_NK && !o.bytes)) {
		return; /* counted by no kind: neither a core object nor an mlx5 DEVX object or UMEM that is */
	}
	o.kind = kind;
	pop_record(&o, w->tgid, w->cgid);
	/* a program recorded it (EEXIST); any other failure (kq_objs full) is a miss: the count is not whole */
	err = map_err(bpf_map_update_elem(&kq_objs, &uobj, &o, BPF_NOEXIST));
	if (err) {
		pop_failed(err);
		return;
	}
	objs_add(1);
	pop_count(&o, 1);
	/*
	 * Gone meanwhile: whoever deletes the record gives its charge back, this walk (pop_base) or the
	 * destroy (forget: the usage), never both
	 */
	if ((bpf_map_lookup_elem(&kq_gone, &uobj) ||
	     (!bpf_probe_read_kernel(&next, sizeof(next), (void *)entry) && next == entry)) &&
	    !bpf_map_delete_elem(&kq_objs, &uobj)) {
		objs_add(-1);
		pop_count(&o, -1);
	}
}

static long walk_step(__u32 i, void *arg)
{
	struct walk *w = arg;
	__u64 next = 0;

	if (bpf_probe_read_kernel(&next, sizeof(next), (void *)w->cur) || !next) {
		w->restarts = KQ_WALK_RESTARTS; /* unreadable: not walked to its end */
		return 1;
	}
	if (next == w->head) {
		w->done = true;
		return 1;
	}
	if (next == w->cur) {
		/* the entry the walk is at was deleted (list_del_init): from the head again */
		if (++w->restarts >= KQ_WALK_RESTARTS)
			return 1;
		w->cur = w->head;
		return 0;
	}
	found_obj(w, next - bpf_core_field_offset(struct ib_uobject___kq, list));
	w->cur = next;
	return 0;
}

/* A uverbs file (its struct ib_uverbs_file, key) that a task of tgid in cgroup cgid holds: found_file. */
static __noinline void found_key(__u64 key, __u32 tgid, __u64 cgid) /* a call: its stack apart (the ring walk calls it too) */
{
	struct ib_uverbs_file___kq *uf;
	struct walk w = {};
	struct kq_obj o = {};
	int err;

	if (!key)
		return;
	o.kind = KQ_CTX;
	if (!wanted(tgid, cgid))
		return;
	pop_record(&o, tgid, cgid);
	/*
	 * Its context recorded already (seen through another task, or charged since the attach): its objects
	 * are walked all the same, since only charged ones are recorded (the inserts of those fail).
	 */
	err = map_err(bpf_map_update_elem(&kq_objs, &key, &o, BPF_NOEXIST));
	if (!err) {
		objs_add(1);
		pop_count(&o, 1);
		/*
		 * Before its objects are walked: a thread that cached this file as one without scopes (another
		 * process's, through fork or fd passing) looks again at its next creation and is charged to the
		 * new scope from now on (reservation and record: the walk's insert then fails). One that read the
		 * old fgen just before is seen at its commit (bfgen). Without it, what such a thread made after
		 * the walk passed was charged nowhere until rdmactl's bump after the rescan.
		 */
		file_scoped(&o);
	} else if (err != -17 /* EEXIST */) {
		pop_failed(err); /* not recorded (kq_objs full): the new scope cannot count what exists */
		return;
	}
	uf = (void *)key; /* the file's private data, read once */
	if (!uf || bpf_map_lookup_elem(&kq_walked, &key))
		return; /* walked to its end in this round already (another fd or mapping of the same file) */
	w.head = (__u64)uf + bpf_core_field_offset(struct ib_uverbs_file___kq, uobjects);
	w.cur = w.head;
	w.tgid = o.tgid;
	w.cgid = o.cgid;
	bpf_loop(KQ_WALK_MAX, walk_step, &w, 0);
	if (!w.done) {
		pop_miss();
		return;
	}
	{
		__u8 one = 1;

		bpf_map_update_elem(&kq_walked, &key, &one, BPF_ANY);
	}
}

/*
 * io_uring's fixed files: a ring holds a file there with no fd (IORING_REGISTER_FILES, then the fd closed), and no
 * mapping, so neither iterator below would show it; its objects stay usable through the ring. Each uverbs file
 * in the fixed files of a ring a task holds (an fd, or a mapping of its queues) is found as the task's. The
 * table's layout: Linux 6.1, an array of struct io_fixed_file; 6.12, of pointers to struct io_rsrc_node (CO-RE
 * picks the one the kernel has). Read with probe reads: the ring's table may change under the walk (a file
 * found there is counted, the safe side).
 */
extern const void io_uring_fops __ksym __weak;

struct io_fixed_file___kq61 {
	unsigned long file_ptr;
} __attribute__((preserve_access_index));
struct io_file_table___kq61 {
	struct io_fixed_file___kq61 *files;
} __attribute__((preserve_access_index));
struct io_ring_ctx___kq61 {
	struct io_file_table___kq61 file_table;
	unsigned int nr_user_files;
} __attribute__((preserve_access_index));

struct io_rsrc_node___kq612 {
	unsigned long file_ptr;
} __attribute__((preserve_access_index));
struct io_rsrc_data___kq612 {
	unsigned int nr;
	struct io_rsrc_node___kq612 **nodes;
} __attribute__((preserve_access_index));
struct io_file_table___kq612 {
	struct io_rsrc_data___kq612 data;
} __attribute__((preserve_access_index));
struct io_ring_ctx___kq612 {
	struct io_file_table___kq612 file_table;
} __attribute__((preserve_access_index));

/* the low bits of a fixed file's pointer are flags (FFS_NOWAIT, FFS_ISREG) */
#define KQ_FFS_MASK (~3UL)
/* the most fixed files a ring has (IORING_MAX_FIXED_FILES) */
#define KQ_RING_FILES_MAX (1U << 20)

struct ring_walk {
	__u64 table;   /* the array of fixed files (6.1) or of node pointers (6.12) */
	__u32 stride;  /* sizeof(struct io_fixed_file) on 6.1, of a pointer on 6.12 */
	__u32 tgid;
	__u64 cgid;
	bool nodes;    /* 6.12's layout */
};

static long ring_file(__u32 i, void *ctx)
{
	struct ring_walk *w = ctx;
	unsigned long fp = 0;
	__u64 at = w->table + (__u64)i * w->stride, node = 0, key = 0;
	struct file *f;
	struct inode *ino;
	umode_t mode = 0;
	dev_t rdev = 0;

	if (w->nodes) {
		if (bpf_probe_read_kernel(&node, sizeof(node), (void *)at) || !node)
			return 0;
		fp = BPF_CORE_READ((struct io_rsrc_node___kq612 *)node, file_ptr);
	} else if (bpf_probe_read_kernel(&fp, sizeof(fp), (void *)at)) {
		return 0;
	}
	f = (struct file *)(fp & KQ_FFS_MASK);
	if (!f)
		return 0;
	ino = BPF_CORE_READ(f, f_inode);
	if (!ino)
		return 0;
	rdev = BPF_CORE_READ(ino, i_rdev);
	mode = BPF_CORE_READ(ino, i_mode);
	if (!is_uverbs_dev(rdev, mode))
		return 0;
	key = (__u64)BPF_CORE_READ(f, private_data);
	found_key(key, w->tgid, w->cgid);
	return 0;
}

static __always_inline void found_ring(struct task_struct *task, struct file *file)
{
	struct ring_walk w = {};
	void *ctx;
	__u32 nr = 0;

	if (!(__u64)&io_uring_fops || (const void *)file->f_op != &io_uring_fops)
		return;
	ctx = file->private_data;
	if (!ctx)
		return;
	if (bpf_core_field_exists(struct io_ring_ctx___kq61, nr_user_files)) {
		struct io_ring_ctx___kq61 *c = ctx;

		nr = BPF_CORE_READ(c, nr_user_files);
		w.table = (__u64)BPF_CORE_READ(c, file_table.files);
		w.stride = bpf_core_type_size(struct io_fixed_file___kq61);
	} else if (bpf_core_field_exists(struct io_rsrc_data___kq612, nodes)) {
		struct io_ring_ctx___kq612 *c = ctx;

		nr = BPF_CORE_READ(c, file_table.data.nr);
		w.table = (__u64)BPF_CORE_READ(c, file_table.data.nodes);
		w.stride = sizeof(void *);
		w.nodes = true;
	}
	if (!nr || !w.table || !w.stride)
		return;
	if (nr > KQ_RING_FILES_MAX)
		nr = KQ_RING_FILES_MAX;
	w.tgid = BPF_CORE_READ(task, tgid);
	w.cgid = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	if (!wanted(w.tgid, w.cgid))
		return;
	bpf_loop(nr, ring_file, &w, 0);
}

static __always_inline void found_file(struct task_struct *task, struct file *file)
{
	if (!is_uverbs(file)) {
		found_ring(task, file);
		return;
	}
	found_key(ufile_of(file), BPF_CORE_READ(task, tgid), BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id));
}

SEC("iter/task_file")
int kq_iter_file(struct bpf_iter__task_file *ctx)
{
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;

	if (!task || !file)
		return 0;
	found_file(task, file);
	return 0;
}

/* A uverbs file a process still maps after it closed the fd (rxe maps its queues through it). */
SEC("iter/task_vma")
int kq_iter_vma(struct bpf_iter__task_vma *ctx)
{
	struct task_struct *task = ctx->task;
	struct vm_area_struct *vma = ctx->vma;
	struct file *file;

	if (!task || !vma)
		return 0;
	file = vma->vm_file;
	if (file)
		found_file(task, file);
	return 0;
}

/*
 * A task iterator made for one process (lib/kq/kqload.c gives it the process's pidfd): the host's pid and the
 * start time of the process, for each of its threads, so that rdmactl in another pid namespace can name the
 * process as the programs do (scope_at). User space checks that every record names one process: a kernel that
 * ignored the pidfd would walk every task.
 */
SEC("iter/task")
int kq_iter_pid(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct kq_pidof p = {};

	if (!task)
		return 0;
	p.tgid = task->tgid;
	p.start_ns = task->group_leader->start_boottime;
	bpf_seq_write(ctx->meta->seq, &p, sizeof(p));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#endif
