// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel quotas with BPF LSM: the kernel refuses an RDMA creation that would take a limited scope (a cgroup
 * and its descendants, a process, everything) past its limit, whatever made the call (interceptor or not,
 * static binaries, raw ioctl or write on /dev/infiniband/uverbsN).
 *
 *   lsm.s/file_ioctl    reads the uverbs ioctl's header (and every attribute of INVOKE_WRITE when the write
 *                       command is not first, the length of an MR) and answers -EDQUOT when the creation would
 *                       go past a limit: the clean refusal. What it lets through it reserves (kq_task).
 *   fexit/ib_uverbs_ioctl  gives back a reservation no object took (the kernel refused the request).
 *   lsm/file_ioctl_compat  32-bit programs' uverbs ioctls: refused for processes with kernel limits.
 *   lsm/file_open       contexts: one per open uverbs file; refused past the ctx limit, reserved otherwise
 *                       (fexit/ib_uverbs_open records the context with that charge once the open succeeded).
 *   lsm/file_receive    a uverbs file received (SCM_RIGHTS, pidfd_getfd) by a task whose limited scopes are
 *                       not the file's: refused (EDQUOT, the fd is not installed), so that a file does not
 *                       carry a scope's limits, or its objects, into or out of another limited scope.
 *   fentry/ib_uverbs_close  gives a context back when its file is released; only uverbs files pay for it.
 *   fexit/rdma_alloc_begin_uobject   the kernel's own copy of the type: every object of a counted kind is
 *                       recorded here, whichever path created it, with its request's reservation as its charge;
 *                       one without a reservation (a request rewritten after the check, a legacy write()) is
 *                       charged here, and answered with SIGKILL when that goes past a limit.
 *   fentry/rdma_alloc_commit_uobject MRs: their length, as mr_bytes (the same backstop).
 *   fexit/uverbs_destroy_uobject     gives the charge back (destroy, abort of a failed create, the
 *                       cleanup at the last close of the file, wherever that runs).
 *   iter/task_file, iter/task_vma  run when a scope gets its first limit: they record what its tasks
 *                       already hold, from the kernel's own lists (population: bpf/kqpop.bpf.h).
 * Only charged objects are recorded (kq_objs): a task without limits fills nothing, and its objects are
 * found by the population of a scope set later.
 * One program object from three files: this one (maps, hooks), bpf/kqcharge.bpf.h (scopes, check, reservation,
 * charges, records) and bpf/kqpop.bpf.h (population); bpf/kqdrv.bpf.h adds the drivers' own methods.
 * Every program is attached only while a kernel limit exists (lib/kq/kq.c, count_limits): without kernel limits
 * nothing on the host passes them. When the first limit comes, the programs are attached; when a scope gets
 * its first limit, the iterators record what its tasks hold (each uverbs file as its context, each object on
 * its uobjects list), so that the limit counts it (lib/kq/kq.c rescan); after the last limit they are
 * detached and kq_objs is emptied (no program would see those objects' destroys).
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
#include "kquverbs.bpf.h"

#define EFAULT 14
#define EINVAL 22
#define EDQUOT 122
#define ENOMEM 12
#define SIGKILL 9

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
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct kq_state);
} kq_state SEC(".maps");

/*
 * Keys destroyed while a new scope is counted (kq_state.populating): the population's walk drops its record of
 * them, the rescan learns whether the destroy gave back the scope's charge (KQ_GONE_*).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 14);
	__type(key, __u64);
	__type(value, __u64);
} kq_gone SEC(".maps");

/*
 * During a population for a new scope (kq_state.pop_want): the tasks whose objects it records, by tgid (a
 * process scope) or cgroup id (a cgroup scope: the cgroup and every one below it), filled by rdmactl.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KQ_WANT_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* memory for the cgroups listed, not for the most there may be */
	__type(key, __u64);
	__type(value, __u8);
} kq_want SEC(".maps");

/*
 * During a population: the uverbs files whose object lists were walked to their end in this round, so that
 * each is walked once however many fds and mappings show it (rxe maps every queue through its file: a
 * process with N QPs shows it about 2N times, and walking its N objects at each sighting was quadratic).
 * Emptied by rdmactl before each round; when full, files are walked at every sighting, as before.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 16);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u8);
} kq_walked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KQ_EVSLOTS);
	__type(key, __u32);
	__type(value, struct kq_event);
} kq_events SEC(".maps");

/*
 * What each thread last found on its path (bpf/kqcharge.bpf.h, unscoped): no scope in kq_limits, as of
 * kq_state.gen and its cgroup then. A thread without scopes (most of a host) pays one lookup here instead of
 * a walk of its scopes at each hook of a creation.
 */
struct kq_task {
	__u32 gen;
	__u32 unscoped;
	__u64 cgid;
	/*
	 * The last uverbs file (its struct ib_uverbs_file) the thread found without scopes (no record, or one
	 * charged to nothing), as of kq_state.fgen then: while fgen is the same, no file got scopes since.
	 */
	__u64 nofile;
	__u32 fgen;
	/* kq_state.gen and fgen when kq_begin left begun uncharged and unrecorded (free_of, brec 0) */
	__u32 bgen;
	__u32 bfgen;
	/*
	 * kq_state.agen when the ioctl hook last checked a call of this thread as a limited one (the thread or the
	 * file has scopes); 0 when it last let one through as free. Each uverbs ioctl of the thread passes the
	 * hook while it is attached, and sets it: backstop_kills reads it for the call under way.
	 */
	__u32 checked;
	/*
	 * The object the thread's allocation under way began, when its commit has nothing to do: charged to
	 * nothing (brec 0), or charged and recorded, not an MR (brec 1). Cleared at each uverbs ioctl's check, so
	 * that it never names an object of an earlier call (one that was aborted, its address used again).
	 */
	__u64 begun;
	/*
	 * The thread's reservation (held): a creation the ioctl hook (or file_open, for a context) let through
	 * has its charge made already, kept here until the kernel allocates the object (kq_begin, kq_opened take
	 * it as the object's charge) or the call returns without one (kq_ioctl_done gives it back). Only a
	 * creation that comes without one (a legacy write(), a request rewritten after the check) is charged at
	 * the allocation, and killed there past a limit. In the thread's storage: no map insert nor delete.
	 */
	__u32 held;
	__u32 brec;
	/*
	 * kq_state.agen while the thread is inside ib_uverbs_write (a legacy write command: write(2), or io_uring's
	 * worker), 0 after it: set and cleared by the programs around the kernel's own function, whatever carried
	 * the write there. backstop_kills reads it instead of the thread's saved registers, which an io-wq worker
	 * copies from whatever its creator was doing (an ioctl's, when it was born at an ioctl's exit).
	 */
	__u32 inwrite;
	/* kq_state.agen while the thread is inside the kernel's rereg handler (ib_uverbs_rereg_mr), 0 after it */
	__u32 inrereg;
	/* a driver create that passed the check (bpf/kqdrv.bpf.h kq_drv_ioctl): its object, kind and bytes */
	__u32 dheld;
	__u32 dobject;
	__u32 dkind;
	__u64 dbytes;
	struct kq_obj resv;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kq_task);
} kq_task SEC(".maps");

/* The scope types that have limits (a KQ_TYPE_* mask), 0 while no limit exists. */
static __always_inline __u32 limited_types(void)
{
	__u32 zero = 0;
	struct kq_state *st = bpf_map_lookup_elem(&kq_state, &zero);

	return st && st->nlimits ? st->types | KQ_TYPE_VALID : 0;
}

/*
 * A uverbs character device (read straight from the kernel's structures: no helper call): the first 32 on
 * 231:192-223, the others on the dynamic major ib_uverbs allocated (kq_state.dyn_major, from /proc/devices).
 */
static __always_inline bool is_uverbs_dev(dev_t rdev, umode_t mode)
{
	struct kq_state *st;
	unsigned int major, minor;
	__u32 zero = 0;

	major = rdev >> 20;
	if (!major || (mode & 00170000) != 0020000)
		return false;
	minor = rdev & 0xfffff;
	if (major == KQ_UVERBS_MAJOR)
		return minor >= KQ_UVERBS_MINOR_BASE && minor < KQ_UVERBS_MINOR_BASE + KQ_UVERBS_MINORS;
	st = bpf_map_lookup_elem(&kq_state, &zero);
	return st && st->dyn_major && major == st->dyn_major && minor < KQ_UVERBS_DYN_MINORS;
}

static __always_inline bool is_uverbs(struct file *file)
{
	struct inode *ino = file->f_inode;

	return ino && is_uverbs_dev(ino->i_rdev, ino->i_mode);
}

/* kq_state, or NULL (never: an array's one entry) */
static __always_inline struct kq_state *state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&kq_state, &zero);
}

/* A record was inserted in kq_objs (d = 1) or deleted (d = -1). */
static __always_inline void objs_add(__s64 d)
{
	struct kq_state *st = state();

	if (st)
		__sync_fetch_and_add(&st->nobjs, d);
}

/* Delete the record under key, counted. */
static __always_inline void objs_delete(__u64 *key)
{
	if (!bpf_map_delete_elem(&kq_objs, key))
		objs_add(-1);
}

/*
 * A uverbs file's struct ib_uverbs_file (its private data once ib_uverbs_open set it): the key of its
 * context's record, which every object of the file can reach (ib_uobject.ufile), and the write() path too.
 */
static __always_inline __u64 ufile_of(struct file *file)
{
	return (__u64)file->private_data; /* a BTF pointer in every hook: read directly, no helper call */
}

/* The scopes, the check, the reservation, the charges and the records: bpf/kqcharge.bpf.h. */
#include "kqcharge.bpf.h"

/* The attributes bpf/kqdrv.bpf.h looks at (the core verbs' requests are read whole: scan_attrs). */
#define KQ_MAX_ATTRS 16

/* Has the current task a scope with a limit (a process with kernel limits)? */
static __noinline bool limited_task(__u32 types) /* a call: its stack apart */
{
	struct kq_scope sc;
	int i, k;

	if (unscoped(types))
		return false;
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;

		if (!scope_limit(types, i, &sc, &lim))
			break;
		if (!lim)
			continue;
		/* a scope whose limits were all lifted stays (it keeps counting) but limits nothing */
		for (k = 0; k < KQ_NK; k++)
			if (lim->max[k] != KQ_UNLIMITED)
				return true;
	}
	return false;
}

/* The drivers' own methods (mlx5 DEVX, bnxt_re, efa): their table and check, their objects' charge. */
#include "kqdrv.bpf.h"

/*
 * 32-bit programs' uverbs ioctls: this hook may not sleep, so it cannot read the request; a process with
 * kernel limits gets none of them (the creation counting behind would kill it anyway past a limit).
 */
SEC("lsm/file_ioctl_compat")
int BPF_PROG(kq_ioctl_compat, struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kq_task *t;
	__u32 types;

	if (cmd != KQ_RDMA_VERBS_IOCTL)
		return 0;
	types = limited_types();
	if (!types || !is_uverbs(file))
		return 0;
	/* nor through a limited file (a process moved out of its cgroup, a forked child under --pid) */
	if (!free_of(types, ufile_of(file), &t))
		return -EDQUOT;
	if (t)
		t->checked = 0; /* free: a creation of this call is not a rewritten request */
	return 0;
}

#define MAY_WRITE 2
#define PF_IO_WORKER 0x10

/* A write from io_uring refused: an event naming a limited scope of the file (or else of the thread). */
static __noinline void uring_refused(__u64 ufile, __u32 types) /* a call: its stack apart */
{
	struct kq_obj *f = file_scopes(ufile);
	struct kq_scope sc = {};
	int i;

	if (f && f->n > 0 && f->n <= KQ_MAXCHG) {
		sc = f->sc[0];
	} else {
		for (i = 0; i < 2 + KQ_MAXLVL; i++) {
			struct kq_limit *lim;

			if (!scope_limit(types, i, &sc, &lim))
				break;
			if (lim)
				break;
		}
	}
	emit(KQ_EV_URING, KQ_NK, &sc, 1, 0, 0);
}

/*
 * A write to a uverbs file from io_uring. uverbs has no FMODE_NOWAIT, so io_uring hands every write to it to an
 * io-wq worker (PF_IO_WORKER, a thread of whoever submitted it, born wherever that task was: its saved
 * registers say nothing), under the credentials of a registered personality when the request names one (so
 * that the kernel's own refusal of a write from other credentials, ib_safe_file_access, passes for a forked
 * child), through a file that a ring's fixed files may hold alone (no fd, so lsm/file_receive never sees it
 * cross scopes when the ring is taken with pidfd_getfd). No hook reads such a request before the kernel
 * allocates what it asks for. So where a limit applies to the file or to the thread, it is refused here,
 * before the write begins: EDQUOT, event KQ_EV_URING. The same for a write under credentials overridden for
 * the call (a personality, whatever carried it). Every other write on the host pays the test of the task's
 * flags and credentials and returns.
 */
SEC("lsm/file_permission")
int BPF_PROG(kq_permission, struct file *file, int mask)
{
	struct task_struct *task;
	struct kq_task *t;
	__u64 ufile;
	__u32 types;

	if (!(mask & MAY_WRITE))
		return 0;
	task = bpf_get_current_task_btf();
	if (!(task->flags & PF_IO_WORKER) && task->cred == task->real_cred)
		return 0;
	if (!is_uverbs(file))
		return 0;
	types = limited_types();
	ufile = ufile_of(file);
	if (!types || free_of(types, ufile, &t))
		return 0;
	uring_refused(ufile, types);
	return -EDQUOT;
}

/*
 * A legacy write command in the kernel (write(2), or an io-wq worker's write that a thread and file without
 * limits sent): the thread is marked for this call, so that a creation of it past a limit is killed
 * (backstop_kills), whoever carried it here. Cleared when the command returns.
 */
SEC("fentry/ib_uverbs_write")
int BPF_PROG(kq_write_in, struct file *filp, const char *buf, size_t count, loff_t *pos)
{
	struct kq_task *t = bpf_task_storage_get(&kq_task, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t)
		t->inwrite = agen();
	return 0;
}

SEC("fexit/ib_uverbs_write")
int BPF_PROG(kq_write_out, struct file *filp, const char *buf, size_t count, loff_t *pos, long ret)
{
	struct kq_task *t = task_of();

	if (t)
		t->inwrite = 0;
	return 0;
}

/*
 * The kernel's rereg handler (INVOKE_WRITE or write(2)), whatever the request said when the ioctl hook read it:
 * the MR object it allocates (when the driver makes a new MR for the old one) is the rereg's (kq_begin), and
 * only inside it. A reservation of another request (a REG_MR rewritten into a rereg after the check) is not
 * taken by it, and a REG_MR (a rereg rewritten into one) never passes for a rereg's MR.
 */
SEC("fentry/ib_uverbs_rereg_mr")
int BPF_PROG(kq_rereg_in, void *attrs)
{
	struct kq_task *t = bpf_task_storage_get(&kq_task, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t)
		t->inrereg = agen();
	return 0;
}

SEC("fexit/ib_uverbs_rereg_mr")
int BPF_PROG(kq_rereg_out, void *attrs, int ret)
{
	struct kq_task *t = task_of();

	if (t)
		t->inrereg = 0;
	return 0;
}

/*
 * An MR's record follows the MR's own length, not what a request said: o->bytes is what was charged (its
 * reservation, or its length when last seen). More is charged to the scopes it was charged to (SIGKILL past a
 * limit, where the backstop kills: a request rewritten after the check, or a legacy write), less is given back.
 */
static __always_inline void mr_follow(struct kq_obj *o, struct ib_mr___kq *mr)
{
	__u64 len = BPF_CORE_READ(mr, length);

	if (len > KQ_MR_MAXLEN)
		len = KQ_MR_MAXLEN; /* an implicit ODP MR (UINT64_MAX): no wrap of the usage */
	if (len == o->bytes)
		return;
	if (len > o->bytes) {
		if (o->n && charge_more(o, KQ_MR_BYTES, len - o->bytes))
			bpf_send_signal(SIGKILL);
	} else {
		struct kq_obj less = *o;

		less.kind = KQ_NK; /* only bytes */
		less.bytes = o->bytes - len;
		credit(&less);
	}
	o->bytes = len;
}

/*
 * The end of the kernel's rereg handler when the driver changed the MR in place (it returned no new MR): the
 * handler puts the MR's uobject it locked for writing (uobj_put_write). A driver that gives an MR a new
 * translation in place (mlx5's UMR rereg; hns, irdma, mlx4) changes its length there, and no object is
 * allocated or committed: its bytes are counted here, from the MR's length. An honest rereg with a new
 * translation was refused at the ioctl under an mr_bytes limit; what comes here past one is a request rewritten
 * after the check (or a write(2) no hook read), and is killed. Other puts (every lookup of every verb ends in
 * one) pay the test of the mode and of the thread's mark.
 */
#define KQ_LOOKUP_WRITE 1 /* enum rdma_lookup_mode: READ, WRITE, DESTROY (include/rdma/uverbs_types.h) */
SEC("fentry/rdma_lookup_put_uobject")
int BPF_PROG(kq_rereg_put, struct ib_uobject___kq *uobj, int mode)
{
	struct kq_task *t;
	struct kq_obj *o;
	__u64 key = (__u64)uobj;

	if (mode != KQ_LOOKUP_WRITE)
		return 0;
	t = task_of();
	if (!t || !t->inrereg || t->inrereg != agen())
		return 0;
	o = bpf_map_lookup_elem(&kq_objs, &key);
	if (!o || o->kind != KQ_MR)
		return 0;
	mr_follow(o, BPF_CORE_READ(uobj, object));
	return 0;
}

/* What a scan of a request's attributes finds (the write command, CORE_IN, a dma-buf MR's length). */
struct scan {
	unsigned long arg;
	__u64 core_in;
	__u64 mr_len;   /* a REG_DMABUF_MR's or REG_MR's length attribute (mr_attr) */
	__u32 wcmd;
	__u16 core_in_len;
	__u16 mr_attr;  /* the length attribute's id of the MR method scanned; 0: INVOKE_WRITE */
	bool have_wcmd;
	bool have_core_in;
	bool fault;
};

static long scan_one(__u32 i, void *ctx)
{
	struct scan *s = ctx;
	struct uattr a;

	if (bpf_copy_from_user(&a, sizeof(a), (void *)(s->arg + sizeof(struct uhdr) + (__u64)i * sizeof(a)))) {
		s->fault = true;
		return 1;
	}
	if (s->mr_attr) {
		if (a.attr_id == s->mr_attr)
			s->mr_len = a.data;
	} else if (a.attr_id == UVERBS_ATTR_WRITE_CMD) {
		s->wcmd = (__u32)a.data;
		s->have_wcmd = true;
	} else if (a.attr_id == UVERBS_ATTR_CORE_IN) {
		s->core_in = a.data;
		s->core_in_len = a.len;
		s->have_core_in = true;
	}
	return 0;
}

/*
 * Every attribute of the request, as many as the kernel takes (it skips unknown optional ones, so the write
 * command can come after 250 of them): 0, -EFAULT when one cannot be read, -EINVAL for more than the kernel
 * takes. A limited task's request that cannot be read whole is refused with that errno (the kernel's own).
 */
static __always_inline int scan_attrs(struct scan *s, __u16 num_attrs)
{
	if (num_attrs > KQ_UVERBS_MAX_ATTRS)
		return -EINVAL;
	bpf_loop(num_attrs, scan_one, s, 0);
	return s->fault ? -EFAULT : 0;
}

/*
 * GET_CONTEXT on a uverbs file without a record: a file whose open was under way when the programs were
 * attached (kq_opened did not run) and whose fd was installed after the population read its process's
 * table. Every file that holds objects asks for its context first: recorded and charged here.
 */
static __noinline int late_ctx(struct file *file, __u32 types) /* a call: its stack apart */
{
	__u64 key = ufile_of(file), pidtgid = bpf_get_current_pid_tgid();
	struct kq_scope sc;
	struct kq_obj *o;
	int err;
	int i;

	if (!key || unscoped(types))
		return 0; /* nothing to charge it to */

	/*
	 * recorded first (one there already: nothing to do), then charged in place: no charge without a record;
	 * no room for it (kq_objs full): a limited task's context is refused, not left uncounted
	 */
	err = map_err(bpf_map_update_elem(&kq_objs, &key, &kq_obj_none, BPF_NOEXIST));
	if (err) {
		if (err == -17 /* EEXIST */ || !limited_task(types))
			return 0;
		lost(err);
		return -EDQUOT;
	}
	objs_add(1);
	o = bpf_map_lookup_elem(&kq_objs, &key);
	if (!o)
		return 0;
	o->kind = KQ_CTX;
	o->tgid = pidtgid >> 32;
	o->cgid = bpf_get_current_cgroup_id();
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__u32 idx = o->n;

		if (!scope_limit(types, i, &sc, &lim))
			break;
		if (!lim)
			continue;
		sc.epoch = lim->epoch;
		use = bpf_map_lookup_elem(&kq_usage, &sc);
		if (!use || idx >= KQ_MAXCHG)
			continue;
		__sync_fetch_and_add(&use->use[KQ_CTX], 1);
		o->sc[idx] = sc;
		o->n = idx + 1;
	}
	/* charged to nothing: not kept (only charged objects are recorded) */
	if (!o->n)
		objs_delete(&key);
	else
		file_scoped(o);
	return 0;
}

/*
 * 122 lines, on purpose: every uverbs ioctl on the host passes here while a kernel limit exists, and most
 * return at the switch's early exit; the switch is the one place that tells a creation from the rest, and
 * pieces of it as global functions would add a call (and a verification of their own) to every ioctl.
 */
SEC("lsm.s/file_ioctl")
int BPF_PROG(kq_ioctl, struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ureq r;
	struct scan sc = { .arg = arg };
	struct kq_task *t = NULL;
	__u32 types, kind = KQ_NK;
	__u64 mr[2] = {}; /* struct ib_uverbs_reg_mr's start and length */
	__u64 ufile;
	int nattr = KQ_FIRST_ATTRS, err;
	bool scanned = false;

	if (cmd != KQ_RDMA_VERBS_IOCTL)
		return 0;
	types = limited_types();
	if (!types || !is_uverbs(file))
		return 0;
	/*
	 * A thread without scopes, through a file without them: nothing it asks can be refused or reserved (each
	 * branch below lets such a request pass), so it is not read at all.
	 */
	ufile = ufile_of(file);
	if (free_of(types, ufile, &t)) {
		if (t) {
			t->checked = 0; /* not checked: a creation of this call that comes without a reservation is not killed */
			t->begun = 0;
			t->inwrite = 0; /* marks an earlier call of the thread may have left (programs attached meanwhile) */
			t->inrereg = 0;
			t->dheld = 0;
		}
		return 0;
	}
	/*
	 * Checked as limited, from here on: a creation of this call without a reservation was rewritten after the
	 * check, and the backstop kills it (backstop_kills). No storage to say so in: refused, cleanly.
	 */
	if (!t)
		return -ENOMEM;
	t->checked = agen();
	t->begun = 0;
	t->inwrite = 0;
	t->inrereg = 0;
	if (bpf_copy_from_user(&r, sizeof(r), (void *)arg)) {
		/* shorter than that (the copy stops at a page nobody mapped): the header alone */
		if (bpf_copy_from_user(&r.h, sizeof(r.h), (void *)arg))
			return limited_task(types) ? -EFAULT : 0; /* the kernel's own copy fails the same way */
		nattr = 0;
	}
	if (r.h.num_attrs < nattr)
		nattr = r.h.num_attrs;
	/* A driver's own object or method (mlx5 DEVX, UARs...): by the driver's table (bpf/kqdrv.bpf.h). */
	if ((r.h.object_id | r.h.method_id) & UVERBS_ID_NS_MASK)
		return kq_drv_ioctl(arg, &r.h, types, ufile, t);
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
		if (r.h.method_id == UVERBS_METHOD_REG_DMABUF_MR || r.h.method_id == KQ_METHOD_REG_MR ||
		    r.h.method_id == UVERBS_METHOD_DM_MR_REG) {
			/* the length, an inline u64, checked as mr_bytes (a dma-buf's, a user address's, device memory's) */
			sc.mr_attr = r.h.method_id == KQ_METHOD_REG_MR	      ? KQ_ATTR_REG_MR_LENGTH :
				     r.h.method_id == UVERBS_METHOD_DM_MR_REG ? UVERBS_ATTR_REG_DM_MR_LENGTH :
										UVERBS_ATTR_REG_DMABUF_MR_LENGTH;
			err = scan_attrs(&sc, r.h.num_attrs);
			if (err)
				return limited_task(types) ? err : 0;
			kind = KQ_MR;
			mr[1] = sc.mr_len;
		}
		break;
	case UVERBS_OBJECT_DEVICE:
		if (r.h.method_id == UVERBS_METHOD_GET_CONTEXT)
			return late_ctx(file, types);
		if (r.h.method_id != UVERBS_METHOD_INVOKE_WRITE)
			return 0;
		/* the write command: first among the attributes as libibverbs sends it, else anywhere (all of them) */
		if (nattr >= 1 && r.a[0].attr_id == UVERBS_ATTR_WRITE_CMD) {
			sc.wcmd = (__u32)r.a[0].data;
			sc.have_wcmd = true;
			if (nattr >= 2 && r.a[1].attr_id == UVERBS_ATTR_CORE_IN) {
				sc.core_in = r.a[1].data;
				sc.core_in_len = r.a[1].len;
				sc.have_core_in = true;
			}
		} else {
			err = scan_attrs(&sc, r.h.num_attrs);
			if (err)
				return limited_task(types) ? err : 0;
			scanned = true;
		}
		/* no write command: the kernel refuses it too (a mandatory attribute); never read as a context */
		if (!sc.have_wcmd)
			return limited_task(types) ? -EINVAL : 0;
		if (sc.wcmd == KQ_CMD_GET_CONTEXT)
			return late_ctx(file, types);
		if (sc.wcmd == KQ_CMD_REREG_MR) {
			__u32 flags = 0;

			/*
			 * Only a new translation (IB_MR_REREG_TRANS) changes an MR's length, past what was charged: not
			 * under an mr_bytes limit. A change of access or PD passes under any limit (struct
			 * ib_uverbs_rereg_mr: response, mr_handle, flags at 12; shorter: the kernel reads zeros).
			 */
			if (!sc.have_core_in && !scanned) {
				err = scan_attrs(&sc, r.h.num_attrs);
				if (err)
					return limited_task(types) ? err : 0;
			}
			if (sc.have_core_in && sc.core_in_len >= 16 &&
			    bpf_copy_from_user(&flags, sizeof(flags), (void *)(sc.core_in + 12)))
				return limited_task(types) ? -EFAULT : 0;
			if ((flags & KQ_MR_REREG_TRANS) && check(types, KQ_MR_BYTES, KQ_UNLIMITED >> 1))
				return -EDQUOT;
			/*
			 * No reservation: the MR object the kernel may allocate for the call is known as the rereg's
			 * inside the kernel's rereg handler (kq_rereg_in), not by what this request said.
			 */
			return 0;
		}
		kind = kind_of_write(sc.wcmd);
		if (kind == KQ_MR) {
			/* CORE_IN not second: look for it */
			if (!sc.have_core_in && !scanned) {
				err = scan_attrs(&sc, r.h.num_attrs);
				if (err)
					return limited_task(types) ? err : 0;
			}
			/* struct ib_uverbs_reg_mr: response, start, length, ... (shorter: the kernel reads zeros) */
			if (sc.have_core_in && sc.core_in_len >= 24 &&
			    bpf_copy_from_user(mr, sizeof(mr), (void *)(sc.core_in + 8)))
				return limited_task(types) ? -EFAULT : 0;
		}
		break;
	}
	if (kind == KQ_NK)
		return 0; /* not a creation: the early return */
	/* an MR whose end wraps: not for limited tasks (the kernel refuses it too) */
	if (kind == KQ_MR && mr[0] + mr[1] < mr[0])
		return limited_task(types) ? -EDQUOT : 0;
	/*
	 * A length no device can pin (an implicit ODP MR's UINT64_MAX, pinned as it is used): reserved as
	 * KQ_MR_MAXLEN bytes, so refused where mr_bytes is limited, and passed under limits of other kinds only.
	 */
	if (kind == KQ_MR && mr[1] > KQ_MR_MAXLEN)
		mr[1] = KQ_MR_MAXLEN;
	return reserve(types, kind, kind == KQ_MR ? mr[1] : 0, ufile, t);
}

/* Attached only while a limit exists (lib/kq/kq.c): the clean refusal of a context past its limit. */
SEC("lsm/file_open")
int BPF_PROG(kq_open, struct file *file)
{
	__u32 types;

	if (!is_uverbs(file))
		return 0;
	types = limited_types();
	return types ? reserve(types, KQ_CTX, 0, 0, NULL) : 0;
}

/* Is s one of the scopes record f (a file's context, or any object's) was charged to, in the same epoch? */
static __always_inline bool file_has(const struct kq_obj *f, const struct kq_scope *s)
{
	int j;

	for (j = 0; f && j < KQ_MAXCHG && j < f->n; j++)
		if (kq_scope_eq(&f->sc[j], s))
			return true;
	return false;
}

/*
 * A uverbs file arrives in the current task (SCM_RIGHTS, pidfd_getfd): 0 when the task's limited scopes (every
 * scope on its path with a limit, in their epochs) are the file's (those its context was charged to whose
 * limits are still the same), else -EDQUOT and an event naming a scope one side has and the other lacks.
 * What a file creates counts against the file's scopes, so a file from a generous or unlimited scope would
 * let a strict one create under other limits (and bring the objects it holds); one leaving a limited scope
 * would let others spend that scope's allowance. A file without a record was opened with no limits: it
 * passes only to tasks without limits.
 */
static __noinline int crossing(__u64 ufile, __u32 types) /* a call: its stack apart */
{
	struct kq_scope rs[KQ_MAXCHG], sc, miss = {};
	struct kq_obj *f = file_scopes(ufile);
	int i, j, n = 0;

	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;

		if (!scope_limit(types, i, &sc, &lim))
			break;
		if (!lim)
			continue;
		sc.epoch = lim->epoch;
		if (n >= KQ_MAXCHG || !file_has(f, &sc)) {
			miss = sc;
			break;
		}
		rs[n++] = sc;
	}
	for (j = 0; !miss.type && f && j < KQ_MAXCHG && j < f->n; j++) {
		struct kq_limit *lim;
		bool mine = false;

		sc = f->sc[j];
		sc.epoch = 0;
		lim = bpf_map_lookup_elem(&kq_limits, &sc);
		if (!lim || lim->epoch != f->sc[j].epoch)
			continue; /* lifted since: limits nothing */
		sc.epoch = lim->epoch;
		for (i = 0; i < KQ_MAXCHG && i < n; i++)
			if (kq_scope_eq(&rs[i], &sc))
				mine = true;
		if (!mine)
			miss = sc;
	}
	if (!miss.type)
		return 0;
	emit(KQ_EV_CROSS, KQ_CTX, &miss, 1, 0, 0);
	return -EDQUOT;
}

/* Attached only while a limit exists: a uverbs file received across limited scopes is refused (crossing). */
SEC("lsm/file_receive")
int BPF_PROG(kq_receive, struct file *file)
{
	__u32 types;

	if (!is_uverbs(file))
		return 0;
	types = limited_types();
	return types ? crossing(ufile_of(file), types) : 0;
}

/*
 * Delete key's record o and give back what it held, from a copy made before the delete (into *v), if the
 * delete was this one's: of a record another side may delete too (the population's walk, rdmactl's drop),
 * exactly one gives it back.
 */
static __always_inline bool delete_credit(struct kq_state *st, __u64 key, const struct kq_obj *o, struct kq_obj *v)
{
	*v = *o;
	if (bpf_map_delete_elem(&kq_objs, &key))
		return false;
	__sync_fetch_and_add(&st->nobjs, -1);
	if (st->nlimits)
		credit(v);
	return true;
}

/*
 * A destroy while a new scope is counted (kq_state.populating): the key is marked in kq_gone first (the
 * population's walk drops its record of a marked key: bpf/kqpop.bpf.h), numbered; the record is deleted,
 * then what it held given back from a copy, and the mark says last whether that named the scope counted
 * (KQ_GONE_*). The rescan replaces records to give them the scope: a destroy that read one before its
 * replacement deletes the new one and gives back the old charges, and the rescan, seeing KQ_GONE_WITHOUT
 * and no record, does not count it (lib/kq/kq.c rescan_one). Without a limit nothing was charged.
 */
static __always_inline void forget_counting(struct kq_state *st, __u64 key)
{
	__u64 seq = __sync_fetch_and_add(&st->gone_seq, 1) + 1, mark = (seq << 2) | KQ_GONE_BUSY, *g;
	struct kq_obj *o, v;

	if (bpf_map_update_elem(&kq_gone, &key, &mark, BPF_ANY))
		__sync_fetch_and_add(&st->pop_miss, 1); /* not marked: the count cannot be proven (retried, or refused) */
	mark = (seq << 2) | KQ_GONE_WITHOUT;
	o = bpf_map_lookup_elem(&kq_objs, &key);
	if (o && delete_credit(st, key, o, &v) && file_has(&v, &st->pop_scope))
		mark = (seq << 2) | KQ_GONE_WITH;
	g = bpf_map_lookup_elem(&kq_gone, &key);
	if (g)
		*(volatile __u64 *)g = mark; /* last: the rescan waits while it says KQ_GONE_BUSY */
}

/*
 * An object is gone: give back what it was charged (while no limit exists, nothing was: only forget it).
 * While a new scope is counted: forget_counting.
 */
static __always_inline void forget(__u64 key)
{
	struct kq_state *st = state();
	struct kq_obj *o;

	if (!st)
		return;
	if (st->populating) {
		forget_counting(st, key);
		return;
	}
	if (st->nlimits) {
		o = bpf_map_lookup_elem(&kq_objs, &key);
		if (!o)
			return; /* charged to nothing (not recorded) */
		if (o->pad == KQ_OBJ_FOUND) {
			/*
			 * The population's: given back only by whoever deletes it (rdmactl drops such records of a
			 * scope that goes, and takes back their count then: lib/kq/kqload.c kq_drop_found)
			 */
			struct kq_obj v;

			delete_credit(st, key, o, &v);
			return;
		}
		credit(o);
	}
	if (!bpf_map_delete_elem(&kq_objs, &key))
		__sync_fetch_and_add(&st->nobjs, -1);
}

/* A uverbs file's release gives its context back (no other file on the host pays for this hook). */
SEC("fentry/ib_uverbs_close")
int BPF_PROG(kq_close, struct inode *inode, struct file *filp)
{
	__u64 key = ufile_of(filp);

	if (key)
		forget(key);
	return 0;
}

/* A context: one per opened uverbs file, recorded (and charged) once the open succeeded. */
SEC("fexit/ib_uverbs_open")
int BPF_PROG(kq_opened, struct inode *inode, struct file *filp, int ret)
{
	struct kq_obj o = {};
	__u64 key;
	__u32 types;

	if (ret) {
		unreserve();
		return 0;
	}
	o.kind = KQ_CTX;
	types = limited_types();
	/* the reservation kq_open made is its charge; without one (attached meanwhile) charged here */
	if (types && !take_reservation(KQ_CTX, &o) && charge(types, &o, KQ_CTX, 1, 0))
		bpf_send_signal(SIGKILL);
	key = ufile_of(filp);
	if (key)
		record(&key, &o);
	return 0;
}

/* The thread's allocation under way is one with a charge (or a driver's): kq_commit looks at it. */
static __always_inline void begun_clear(void)
{
	struct kq_task *t = task_of();

	if (t)
		t->begun = 0;
}

/*
 * Has uobj's commit nothing to do? Its kq_begin (this thread's, in this call) charged and recorded it and it is
 * not an MR (brec: the commit would find the record, and only an MR's has anything to take from the commit);
 * or left it uncharged (free_of) and no scope came since onto the thread's path or the file's (gen, fgen, its
 * cgroup): a commit would find no record and charge nothing. Then the commit returns at once.
 */
static __always_inline bool begun_done(__u64 uobj)
{
	struct kq_task *t = task_of();
	struct kq_state *st;

	if (!t || t->begun != uobj)
		return false;
	t->begun = 0;
	if (t->brec)
		return true;
	st = state();
	return st && t->bgen == *(volatile __u32 *)&st->gen && t->bfgen == *(volatile __u32 *)&st->fgen &&
	       t->cgid == bpf_get_current_cgroup_id();
}

SEC("fexit/rdma_alloc_begin_uobject")
int BPF_PROG(kq_begin, const struct uverbs_api_object___kq *obj, void *attrs, struct ib_uobject___kq *ret)
{
	struct kq_obj o = {};
	__u32 kind, types;
	__u64 key;

	if ((unsigned long)ret >= (unsigned long)-4095 || !ret)
		return 0;
	if (obj->id & UVERBS_ID_NS_MASK) {
		begun_clear();
		kq_drv_begin(obj->id, (__u64)ret, (__u64)ret->ufile);
		return 0;
	}
	kind = kind_of_object(obj->id);
	if (kind >= KQ_NK)
		return 0;
	o.kind = kind;
	types = limited_types();
	if (types && kind == KQ_MR) {
		struct kq_task *rt = task_of();

		if (rt && rt->inrereg && rt->inrereg == agen()) {
			/* the rereg's MR (kq_rereg_in): charged at its commit if the kernel keeps it, never killed for its count */
			rt->begun = 0;
			o = kq_obj_rereg;
			key = (__u64)ret;
			record(&key, &o);
			return 0;
		}
	}
	if (types) {
		struct kq_task *t = resv_any() ? task_of() : NULL;
		__u64 ufile = (__u64)ret->ufile;

		/* the reservation its request made is its charge; only a creation without one can go past a limit */
		if (!take_reservation_t(t, kind, &o)) {
			/* nothing to charge it to: not recorded, and its commit has nothing to do (kq_commit) */
			if (free_of(types, ufile, &t)) {
				if (t) {
					t->begun = (__u64)ret;
					t->brec = 0;
					t->bgen = t->gen;
					t->bfgen = t->fgen;
				}
				return 0;
			}
			if (charge(types, &o, kind, 1, ufile))
				bpf_send_signal(SIGKILL);
		}
		key = (__u64)ret;
		/* charged and recorded, not an MR: its commit has nothing to do (begun_done); else it looks */
		if (record(&key, &o) && kind != KQ_MR && t) {
			t->begun = key;
			t->brec = 1;
		} else if (t) {
			t->begun = 0;
		} else {
			begun_clear();
		}
		return 0;
	}
	begun_clear();
	key = (__u64)ret;
	record(&key, &o);
	return 0;
}

/* A uverbs ioctl returns: a reservation no object took (the kernel refused the request) is given back. */
SEC("fexit/ib_uverbs_ioctl")
int BPF_PROG(kq_ioctl_done, struct file *filp, unsigned int cmd, unsigned long arg, long ret)
{
	unreserve(); /* no lookup while nobody holds one (kq_state.nresv) */
	return 0;
}

/*
 * Before the commit (nothing there changes the MR; fentry costs less than fexit). An object without a record
 * began before the programs were attached and is committed after: the population cannot see it (it goes on
 * its file's list only now), so it is recorded (and charged) here, as kq_begin would have.
 */
SEC("fentry/rdma_alloc_commit_uobject")
int BPF_PROG(kq_commit, struct ib_uobject___kq *uobj, void *attrs)
{
	__u64 key = (__u64)uobj;
	struct kq_obj *o;
	const struct uverbs_api_object___kq *ao = uobj->uapi_object; /* read directly, but a pointer BTF lacks */
	__u32 id = 0, kind;

	if (begun_done(key))
		return 0;
	if (bpf_core_read(&id, sizeof(id), &ao->id))
		return 0;
	if (id & UVERBS_ID_NS_MASK) {
		kq_drv_commit(uobj, id); /* a driver's object: counted from the kernel's copy (bpf/kqdrv.bpf.h) */
		return 0;
	}
	o = bpf_map_lookup_elem(&kq_objs, &key);
	if (!o) {
		struct kq_obj n = {};
		__u32 types;

		kind = kind_of_object(id);
		if (kind >= KQ_NK)
			return 0;
		n.kind = kind;
		types = limited_types();
		if (types && charge(types, &n, kind, 1, (__u64)BPF_CORE_READ(uobj, ufile)))
			bpf_send_signal(SIGKILL);
		record(&key, &n);
		o = bpf_map_lookup_elem(&kq_objs, &key);
	}
	if (id != UVERBS_OBJECT_MR || !o || o->kind != KQ_MR)
		return 0;
	if (o->pad == KQ_OBJ_REREG) {
		__u32 types = limited_types();

		/* rereg's new MR, kept: counted now, and the old one's destroy follows at once (never a kill) */
		o->pad = 0;
		if (types)
			charge(types, o, KQ_MR, 1, (__u64)BPF_CORE_READ(uobj, ufile));
		if (!o->n) {
			objs_delete(&key); /* charged to nothing: not kept */
			return 0;
		}
	}
	mr_follow(o, BPF_CORE_READ(uobj, object)); /* a void * the verifier cannot follow */
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

/* What exists when the first limit attaches the programs is recorded from the kernel's lists: bpf/kqpop.bpf.h. */
#include "kqpop.bpf.h"
