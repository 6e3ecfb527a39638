/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Part of bpf/kq.bpf.c (included there, one program object): the scopes that apply to a task, the check, the
 * reservation a creation's request makes, the charges an allocation takes or makes, and the records of live
 * objects. It uses kq.bpf.c's maps and helpers above its #include; not a program of its own.
 */
#ifndef RDMACTL_KQCHARGE_BPF_H
#define RDMACTL_KQCHARGE_BPF_H

/*
 * The i-th scope that applies to the current task (i from 0): global, process, then its cgroups from level 1
 * down; false past the last. A scope of a type that has no limit anywhere stays type 0 (skipped). One scope at
 * a time, on the caller's stack.
 */
static __always_inline bool scope_at(__u32 types, int i, struct kq_scope *sc)
{
	__u64 id;

	sc->type = 0;
	sc->epoch = 0;
	sc->id = 0;
	if (i == 0) {
		if (types & KQ_TYPE_GLOBAL)
			sc->type = KQ_SCOPE_GLOBAL;
		return true;
	}
	if (i == 1) {
		if (types & KQ_TYPE_PID) {
			struct task_struct *t = bpf_get_current_task_btf();

			sc->type = KQ_SCOPE_PID;
			sc->id = KQ_PID_ID(bpf_get_current_pid_tgid() >> 32,
					   t->group_leader->start_boottime / KQ_PID_NS_PER_TICK);
		}
		return true;
	}
	if (!(types & KQ_TYPE_CGROUP) || i > 1 + KQ_MAXLVL)
		return false;
	id = bpf_get_current_ancestor_cgroup_id(i - 1);
	if (!id)
		return false;
	sc->type = KQ_SCOPE_CGROUP;
	sc->id = id;
	return true;
}

/*
 * The i-th scope of the task (scope_at) and its limit: false past the last; *lim NULL when no limit names it
 * (a scope type without limits anywhere, a scope without one).
 */
static __always_inline bool scope_limit(__u32 types, int i, struct kq_scope *sc, struct kq_limit **lim)
{
	*lim = NULL;
	if (!scope_at(types, i, sc))
		return false;
	if (sc->type)
		*lim = bpf_map_lookup_elem(&kq_limits, sc);
	return true;
}

/* Is any scope of the current task in kq_limits (a limit, or one lifted while the scope still counts)? */
static __noinline bool scoped_walk(__u32 types) /* a call: its stack apart */
{
	struct kq_limit *lim;
	struct kq_scope sc;
	int i;

	for (i = 0; i < 2 + KQ_MAXLVL && scope_limit(types, i, &sc, &lim); i++)
		if (lim)
			return true;
	return false;
}

/*
 * Does no scope apply to the current thread? Cached in its task storage (kq_task) with kq_state.gen, which
 * rdmactl bumps after each new scope's entry is in place, and the thread's cgroup: while neither changed, no
 * scope can have come onto its path (a scope that goes only makes a cached "scoped" stale, and that is
 * walked again). gen is read before the walk, so a scope made during it makes the next call walk again.
 * false when it cannot tell (no storage: the walk decides).
 */
static __always_inline bool unscoped_t(__u32 types, struct kq_state *st, struct kq_task **tp)
{
	struct kq_task *t;
	__u64 cg;
	__u32 gen;

	*tp = NULL;
	if (!st)
		return false;
	gen = *(volatile __u32 *)&st->gen; /* before the walk (x86 keeps loads in order) */
	cg = bpf_get_current_cgroup_id();
	t = bpf_task_storage_get(&kq_task, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return false;
	*tp = t;
	if (t->gen == gen && t->cgid == cg && t->cgid)
		return t->unscoped;
	t->unscoped = !scoped_walk(types);
	t->gen = gen;
	t->cgid = cg;
	return t->unscoped;
}

static __always_inline bool unscoped(__u32 types)
{
	struct kq_task *t;

	return unscoped_t(types, state(), &t);
}

/*
 * A creation through a uverbs file counts against the file's scopes: those its context was charged to (its
 * opener's, and the ones set on the opener since: the rescan adds them), whoever sends the request, so that
 * a forked child, a thread in another cgroup, or a process that moved out of its cgroup creates under the
 * opener's limits. The file's context record (keyed by the file's struct ib_uverbs_file), or NULL: a file
 * without one was opened by a process without limits (or ufile is 0: a context's own open), and then the
 * creator's own scopes count.
 */
static __always_inline struct kq_obj *file_scopes(__u64 ufile)
{
	struct kq_obj *f;

	if (!ufile)
		return NULL;
	f = bpf_map_lookup_elem(&kq_objs, &ufile);
	return f && f->kind == KQ_CTX && f->n ? f : NULL;
}

/*
 * Has a creation by the current thread through the file (ufile) nothing to count against: no scope applies to
 * the thread (unscoped) and the file has none (file_scopes NULL)? The file's answer is kept in the thread's
 * task storage with kq_state.fgen (read before the lookup): while fgen is the same, no file got scopes, so a
 * thread without limits using a file without them (most of a host while a limit exists somewhere) pays one
 * task storage lookup a hook. A file at the same address later (the first closed, another opened) is a new
 * record, and that moved fgen. *tp: the thread's storage when it is free (NULL: none).
 */
static __always_inline bool free_of(__u32 types, __u64 ufile, struct kq_task **tp)
{
	struct kq_state *st = state();
	struct kq_task *t;
	__u32 fgen;

	if (!st || !unscoped_t(types, st, tp))
		return false;
	t = *tp;
	if (!ufile)
		return true;
	fgen = *(volatile __u32 *)&st->fgen; /* before the lookup (x86 keeps loads in order) */
	if (t && t->nofile == ufile && t->fgen == fgen)
		return true;
	if (file_scopes(ufile))
		return false;
	if (t) {
		t->nofile = ufile;
		t->fgen = fgen;
	}
	return true;
}

/*
 * The i-th scope a creation counts against: the file's (f, from file_scopes) when it has any, else the task's
 * (scope_at). *epoch: the epoch the file's scope was charged in, which its limit must still have (0: any).
 */
static __always_inline bool scope_of(const struct kq_obj *f, __u32 types, int i, struct kq_scope *sc, __u32 *epoch)
{
	*epoch = 0;
	if (!f)
		return scope_at(types, i, sc);
	if (i >= KQ_MAXCHG || i >= f->n)
		return false;
	*sc = f->sc[i];
	*epoch = sc->epoch;
	sc->epoch = 0;
	return true;
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
static __noinline int check(__u32 types, __u32 kind, __u64 amount) /* a call: its stack apart */
{
	struct kq_scope sc;
	int i;

	if (kind >= KQ_NK || unscoped(types))
		return 0;
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__s64 u;

		if (!scope_limit(types, i, &sc, &lim))
			break;
		if (!lim || lim->max[kind] == KQ_UNLIMITED)
			continue;
		sc.epoch = lim->epoch;
		use = bpf_map_lookup_elem(&kq_usage, &sc);
		if (!use)
			continue;
		u = use->use[kind] + lim->base[kind];
		if (u < 0)
			u = 0;
		/* u + amount > max, without a wrap (an MR's length can be anything up to UINT64_MAX) */
		if (amount > lim->max[kind] || (__u64)u > lim->max[kind] - amount) {
			__sync_fetch_and_add(&use->refused[kind], 1);
			emit(KQ_EV_REFUSE, kind, &sc, amount, u, lim->max[kind]);
			return -EDQUOT;
		}
	}
	return 0;
}

/* The programs' attach generation (kq_state.agen): what the ioctl hook marks a thread it checked with. */
static __always_inline __u32 agen(void)
{
	struct kq_state *st = state();

	return st ? st->agen : 0;
}

/*
 * Does a creation that went past a limit without a reservation end in SIGKILL (the backstop)? Only when it
 * can be a request rewritten after the check, or a path the check never sees: an ioctl the hook checked as
 * limited (kq_task.checked of this attach: every uverbs ioctl of a thread passes the hook and sets it), or a
 * legacy write command (kq_task.inwrite of this attach: the programs around the kernel's ib_uverbs_write mark
 * the thread, whether write(2) or an io-wq worker carried it there). Not a context (its open has no request
 * to rewrite: the open hook reserves whatever it sees a limited thread open), not the MR a rereg allocates
 * in the kernel's rereg handler (it replaces the old one, whose destroy follows at once: never a new MR; its
 * bytes are not spared), and not a creation no hook of this attach saw come in: one that was inside the
 * kernel before the programs were attached (a first limit, or programs attached again). Those honest
 * creations are counted, like objects that existed before the limit; the next is refused. No saved user
 * register is read: an io-wq worker's are a copy of its creator's (DESIGN.md 12).
 */
static __always_inline bool backstop_kills(__u32 kind)
{
	struct kq_task *t;
	__u32 ag;

	if (kind == KQ_CTX)
		return false;
	t = bpf_task_storage_get(&kq_task, bpf_get_current_task_btf(), 0, 0);
	if (!t)
		return false; /* no hook of these programs ever saw the thread: it came in before they were attached */
	ag = agen();
	if (kind == KQ_MR && t->inrereg && t->inrereg == ag)
		return false;
	return (t->inwrite && t->inwrite == ag) || (t->checked && t->checked == ag);
}

/*
 * The charges (charge, charge_more, record) are global functions: the verifier checks each once, on
 * its own, instead of again at every call site on every path that reaches it. Inlined, they made kq_begin
 * and kq_commit 502,000 and 424,000 instructions to verify (half the verifier's limit of a million), 8 s of
 * the 12 s the programs took to load in the lab (6.1, TCG); now 8,000 each, and the load 2.5 s. A global
 * function's pointer arguments may be NULL, and its scalars are unknown, to the verifier: each checks them,
 * and takes a map key or value through a copy on its own stack (the verifier's rule for helpers' arguments).
 */

/*
 * Does the count of a new scope take this task's objects (the scope being set: kq_state.pop_want, kq_want,
 * kept from its population to the end of its rescan)?
 */
static __always_inline bool wanted(__u32 tgid, __u64 cgid)
{
	struct kq_state *st = state();
	__u64 key = cgid;

	if (!st)
		return false;
	switch (st->pop_want) {
	case KQ_SCOPE_GLOBAL:
		return true;
	case KQ_SCOPE_PID:
		key = tgid;
		break;
	case KQ_SCOPE_CGROUP:
		break;
	default:
		return false;
	}
	return bpf_map_lookup_elem(&kq_want, &key) != NULL;
}

/*
 * While a new scope is counted (kq_state.pop_want: from its population to its rescan's end), a creation whose owner is
 * the scope's (the file's opener, f, or else the creating task) is charged to it as well, when the scopes
 * above did not: a thread the scope does not name (a forked child under a --pid limit, a receiver of the
 * fd) creating through such a file, or a file whose record names only lifted scopes (their epochs gone),
 * would otherwise charge nothing until the rescan gives the file's record the scope, and what it made after
 * the walk passed the file would be counted nowhere. The count's limit has no maximum yet: never refused.
 * Its record names the scope in its epoch, so that neither the walk (its insert fails) nor the rescan
 * ("mine") counts it again. n of kind (KQ_NK: none), and bytes of mr_bytes.
 */
static __always_inline void charge_counted(const struct kq_obj *f, struct kq_obj *o, __u32 kind, __u64 n,
					   __u64 bytes)
{
	struct kq_state *st = state();
	struct kq_limit *lim;
	struct kq_usage *use;
	struct kq_scope sc, key;
	__u64 cgid;
	__u32 tgid, idx;
	int j;

	if (!st || !st->pop_want)
		return;
	sc = st->pop_scope;
	if (!sc.type)
		return;
	if (f) {
		tgid = f->tgid;
		cgid = f->cgid;
	} else {
		tgid = bpf_get_current_pid_tgid() >> 32;
		cgid = bpf_get_current_cgroup_id();
	}
	if (!wanted(tgid, cgid))
		return;
	for (j = 0; j < KQ_MAXCHG && j < o->n; j++)
		if (o->sc[j].type == sc.type && o->sc[j].id == sc.id)
			return; /* charged to it already (the task is the scope's) */
	key = sc;
	key.epoch = 0;
	lim = bpf_map_lookup_elem(&kq_limits, &key);
	if (!lim || lim->epoch != sc.epoch)
		return;
	use = bpf_map_lookup_elem(&kq_usage, &sc);
	idx = o->n;
	if (!use || idx >= KQ_MAXCHG)
		return;
	barrier_var(kind); /* checked in the register used below (the verifier sees the bound) */
	if (kind < KQ_NK && n)
		__sync_fetch_and_add(&use->use[kind], n);
	if (bytes)
		__sync_fetch_and_add(&use->use[KQ_MR_BYTES], bytes);
	o->sc[idx] = sc;
	o->n = idx + 1;
}

/*
 * Charge amount of kind to every limited scope of the file (ufile: file_scopes) or else of the task,
 * recording them in o. Returns 1 when a scope went past its limit (the check did not stop it): the caller
 * decides what that costs.
 */
__noinline int charge(__u32 types, struct kq_obj *o, __u32 kind, __u64 amount, __u64 ufile)
{
	struct kq_obj *f = file_scopes(ufile);
	struct kq_scope sc;
	bool over = false;
	int kills = -1; /* backstop_kills, once it matters */
	__u32 idx, epoch;
	int i;

	if (!o || kind >= KQ_NK || (!f && unscoped(types)))
		return 0;
	if (f) { /* its record names the file's opener, as the file's scopes are charged */
		o->tgid = f->tgid;
		o->cgid = f->cgid;
	}
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__s64 u;

		if (!scope_of(f, types, i, &sc, &epoch))
			break;
		if (!sc.type)
			continue;
		lim = bpf_map_lookup_elem(&kq_limits, &sc);
		if (!lim || (epoch && lim->epoch != epoch))
			continue;
		sc.epoch = lim->epoch;
		use = bpf_map_lookup_elem(&kq_usage, &sc);
		if (!use)
			continue;
		idx = o->n;
		if (idx >= KQ_MAXCHG)
			break; /* more limited scopes than a record holds: quota set refuses that, reserve() too */
		o->sc[idx] = sc;
		o->n = idx + 1;
		barrier_var(kind); /* checked again in the register used below (the verifier sees the bound) */
		if (kind >= KQ_NK)
			break;
		u = __sync_fetch_and_add(&use->use[kind], amount) + amount + lim->base[kind];
		if (lim->max[kind] != KQ_UNLIMITED && u > 0 && (__u64)u > lim->max[kind]) {
			if (kills < 0)
				kills = backstop_kills(kind);
			if (!kills)
				continue; /* counted, past the limit, as what existed before it */
			__sync_fetch_and_add(&use->killed[kind], 1);
			emit(KQ_EV_KILL, kind, &sc, amount, u - amount, lim->max[kind]);
			over = true;
		}
	}
	barrier_var(kind);
	if (kind == KQ_MR_BYTES) /* bytes alone (a DEVX UMEM) */
		charge_counted(f, o, KQ_NK, 0, amount);
	else if (kind < KQ_NK)
		charge_counted(f, o, kind, amount, 0);
	return over;
}

/* Charge more of kind to the scopes o was charged to (an MR's bytes). 1: one went past its limit. */
__noinline int charge_more(struct kq_obj *o, __u32 kind, __u64 amount)
{
	bool over = false;
	int i, kills = -1; /* backstop_kills, once it matters */

	if (!o || kind >= KQ_NK)
		return 0;
	for (i = 0; i < KQ_MAXCHG; i++) {
		struct kq_scope key;
		struct kq_limit *lim;
		struct kq_usage *use;
		__s64 u;

		if (i >= o->n)
			break;
		key = o->sc[i]; /* a copy on the stack: a map key cannot point into a global function's argument */
		use = bpf_map_lookup_elem(&kq_usage, &key);
		key.epoch = 0;
		lim = bpf_map_lookup_elem(&kq_limits, &key);
		if (!lim || !use || lim->epoch != o->sc[i].epoch)
			continue;
		barrier_var(kind); /* checked again in the register used below (the verifier sees the bound) */
		if (kind >= KQ_NK)
			break;
		u = __sync_fetch_and_add(&use->use[kind], amount) + amount + lim->base[kind];
		if (lim->max[kind] != KQ_UNLIMITED && u > 0 && (__u64)u > lim->max[kind]) {
			if (kills < 0)
				kills = backstop_kills(kind);
			if (!kills)
				continue; /* counted, past the limit, as what existed before it */
			__sync_fetch_and_add(&use->killed[kind], 1);
			emit(KQ_EV_KILL, kind, &o->sc[i], amount, u - amount, lim->max[kind]);
			over = true;
		}
	}
	return over;
}

/* Give back what o was charged, to the scopes (of the epochs) it was charged to. */
static __always_inline void credit(const struct kq_obj *o)
{
	int i;

	for (i = 0; i < KQ_MAXCHG; i++) {
		struct kq_usage *use;
		struct kq_scope key;

		if (i >= o->n)
			break;
		key = o->sc[i]; /* a map key on the stack */
		use = bpf_map_lookup_elem(&kq_usage, &key); /* of its epoch: a scope set again since has another */
		if (!use)
			continue;
		if (o->kind < KQ_NK)
			__sync_fetch_and_add(&use->use[o->kind], -1);
		if (o->bytes)
			__sync_fetch_and_add(&use->use[KQ_MR_BYTES], -(__s64)o->bytes);
	}
}

/* Would usage u be past limit max? */
static __always_inline bool past(__s64 u, __u64 max)
{
	return max != KQ_UNLIMITED && u > 0 && (__u64)u > max;
}

/* A thread took a reservation (d = 1) or its reservation went (d = -1): kq_state.nresv. */
static __always_inline void resv_add(__s64 d)
{
	struct kq_state *st = state();

	if (st)
		__sync_fetch_and_add(&st->nresv, d);
}

/* May a thread hold a reservation (kq_state.nresv not 0)? Only then is the thread's storage looked at. */
static __always_inline bool resv_any(void)
{
	struct kq_state *st = state();

	return !st || *(volatile __s64 *)&st->nresv;
}

/* The current thread's storage, if it has one (none: it never reserved, nor cached anything). */
static __always_inline struct kq_task *task_of(void)
{
	return bpf_task_storage_get(&kq_task, bpf_get_current_task_btf(), 0, 0);
}

/* Give back the reservation this thread holds, if any. */
static __always_inline void unreserve_t(struct kq_task *t)
{
	if (!t || !t->held)
		return;
	credit(&t->resv);
	t->held = 0;
	resv_add(-1);
}

static __always_inline void unreserve(void)
{
	if (resv_any())
		unreserve_t(task_of());
}

/* An empty record: what a reservation starts from (a map value, so that no call's stack holds one). */
static const struct kq_obj kq_obj_none = {};
/* rereg's reservation: an MR charged to nobody yet (kq_commit charges it if the kernel keeps it) */
static const struct kq_obj kq_obj_rereg = { .kind = KQ_MR, .pad = KQ_OBJ_REREG };

/*
 * The check, as a reservation: one of kind (and bytes of mr_bytes) added at once to every limited scope of the
 * task, and taken off again when one of them would go past its limit: -EDQUOT, counted. Two creators at
 * limit - 1 can therefore not both pass (each add is atomic, the second sees the first's). What passed stays
 * charged, as this thread's reservation (its kq_task, filled in place), for the allocation to take (kq_begin,
 * kq_opened).
 */
static __noinline int reserve(__u32 types, __u32 kind, __u64 bytes, __u64 ufile,
			      struct kq_task *tt) /* a call: its stack apart; tt the thread's storage, if known */
{
	struct kq_obj *r, *f = NULL;
	struct kq_task *t;
	struct kq_scope sc;
	int i, err = 0;

	/* kind KQ_NK with bytes: a reservation of mr_bytes alone (a DEVX UMEM) */
	if (kind > KQ_NK || (kind == KQ_NK && !bytes))
		return 0;
	f = file_scopes(ufile);
	/* nothing to reserve in: no reservation (most creations on a host with limits somewhere) */
	if (!f && unscoped_t(types, state(), &t)) {
		unreserve_t(t); /* one the thread's last call left (an open that never reached ib_uverbs_open) */
		return 0;
	}
	t = tt ? tt : bpf_task_storage_get(&kq_task, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return -EDQUOT; /* no room to keep it: refused, cleanly */
	unreserve_t(t);
	r = &t->resv;
	__builtin_memset(r, 0, sizeof(*r));
	t->held = 1;
	resv_add(1);
	r->kind = kind;
	if (f) { /* its record names the file's opener, as the file's scopes are charged */
		r->tgid = f->tgid;
		r->cgid = f->cgid;
	}
	for (i = 0; i < 2 + KQ_MAXLVL; i++) {
		struct kq_limit *lim;
		struct kq_usage *use;
		__u32 idx = r->n, epoch = 0;
		__s64 u;

		if (!scope_of(f, types, i, &sc, &epoch))
			break;
		if (!sc.type)
			continue;
		lim = bpf_map_lookup_elem(&kq_limits, &sc);
		if (!lim || (epoch && lim->epoch != epoch))
			continue;
		sc.epoch = lim->epoch;
		use = bpf_map_lookup_elem(&kq_usage, &sc);
		if (!use)
			continue;
		if (idx >= KQ_MAXCHG) {
			err = -EDQUOT; /* more limited scopes than a record holds (quota set refuses that) */
			break;
		}
		barrier_var(kind); /* checked again in the register used below (the verifier sees the bound) */
		if (kind < KQ_NK) {
			u = __sync_fetch_and_add(&use->use[kind], 1) + 1 + lim->base[kind];
			if (past(u, lim->max[kind])) {
				__sync_fetch_and_add(&use->use[kind], -1);
				__sync_fetch_and_add(&use->refused[kind], 1);
				emit(KQ_EV_REFUSE, kind, &sc, 1, u - 1, lim->max[kind]);
				err = -EDQUOT;
				break;
			}
		}
		if (bytes) {
			u = __sync_fetch_and_add(&use->use[KQ_MR_BYTES], bytes) + bytes + lim->base[KQ_MR_BYTES];
			if (past(u, lim->max[KQ_MR_BYTES])) {
				__sync_fetch_and_add(&use->use[KQ_MR_BYTES], -(__s64)bytes);
				barrier_var(kind);
				if (kind < KQ_NK)
					__sync_fetch_and_add(&use->use[kind], -1);
				__sync_fetch_and_add(&use->refused[KQ_MR_BYTES], 1);
				emit(KQ_EV_REFUSE, KQ_MR_BYTES, &sc, bytes, u - bytes, lim->max[KQ_MR_BYTES]);
				err = -EDQUOT;
				break;
			}
		}
		barrier_var(idx); /* checked again in the register used below (6.1's verifier lost the bound) */
		if (idx >= KQ_MAXCHG)
			break;
		r->sc[idx] = sc;
		r->n = idx + 1;
		r->bytes = bytes;
	}
	if (!err) {
		charge_counted(f, r, kind, 1, bytes);
		r->bytes = bytes;
	}
	/*
	 * Its record must find room in kq_objs when the object is allocated: a limited creation is refused while
	 * fewer than KQ_OBJS_ROOM entries are left (they are for the reservations in flight and the creations
	 * charged without one). Only charged objects are recorded, so only limited tenants fill it.
	 */
	if (!err && r->n) {
		struct kq_state *st = state();

		if (st && st->objs_max && st->nobjs >= (__s64)(st->objs_max - KQ_OBJS_ROOM(st->objs_max))) {
			__sync_fetch_and_add(&st->full, 1);
			emit(KQ_EV_FULL, kind, &r->sc[0], 1, st->nobjs, st->objs_max);
			err = -EDQUOT;
		}
	}
	/* refused: what the scopes before the one that refused got is taken off again; nothing limited: no reservation */
	if (err || !r->n)
		unreserve_t(t);
	return err;
}

/* Take the reservation of the thread (t: its storage, or NULL) for an object of kind being allocated. */
static __always_inline bool take_reservation_t(struct kq_task *t, __u32 kind, struct kq_obj *o)
{
	if (!t || !t->held || t->resv.kind != kind)
		return false;
	*o = t->resv;
	t->held = 0;
	resv_add(-1);
	return true;
}

/* Take the thread's reservation for an object of kind being allocated: o becomes its charge. */
static __always_inline bool take_reservation(__u32 kind, struct kq_obj *o)
{
	return resv_any() && take_reservation_t(task_of(), kind, o);
}

/*
 * A map update's error as the kernel meant it. On 6.1 the map operations return int and the verifier calls them
 * directly: the upper half of the register stays zero, so -EEXIST reads as 4294967279 there (later kernels
 * return long). Every error compared with a constant goes through this.
 */
static __always_inline int map_err(long ret)
{
	return (int)ret;
}

/* A charged object not recorded (kq_objs full): its charge stays, never given back; quota show says how many. */
static __always_inline void lost(long err)
{
	struct kq_state *st = state();

	if (!st)
		return;
	__sync_fetch_and_add(&st->lost, 1);
	st->lost_err = (__s32)err;
}

/* A file's context record with scopes is in kq_objs: the threads' cached "no scopes" are looked at again. */
static __always_inline void file_scoped(const struct kq_obj *o)
{
	struct kq_state *st;

	if (o->kind != KQ_CTX || !o->n)
		return;
	st = state();
	if (st)
		__sync_fetch_and_add(&st->fgen, 1);
}

/*
 * Record o under *keyp (a kernel address: passed through memory, as a global function takes no pointer as a
 * number), with its owner: the opener of the file it was created through when that file has a record (the
 * charge copied it), else its creator; a new scope's rescan counts records by owner (lib/kq/kq.c). Only what
 * was charged is recorded (and rereg's second MR, charged at its commit): an object of a task without limits
 * has nothing to give back at its destroy, and a scope set later counts it from the kernel's lists
 * (lib/kq/kq.c). So nobody without limits can fill kq_objs. 1: recorded; 0: nothing to record, or no room.
 */
__noinline int record(const __u64 *keyp, struct kq_obj *o)
{
	__u64 pidtgid = bpf_get_current_pid_tgid(), key;
	struct kq_obj v;
	int err;

	if (!keyp || !o || (!o->n && o->pad != KQ_OBJ_REREG))
		return 0;
	key = *keyp;
	/* the creator, unless the charge named its file's opener (a scope set later on the opener counts it) */
	if (!o->tgid) {
		o->tgid = pidtgid >> 32;
		o->cgid = bpf_get_current_cgroup_id();
	}
	v = *o; /* a map value on the stack */
	err = map_err(bpf_map_update_elem(&kq_objs, &key, &v, BPF_NOEXIST));
	if (!err) {
		objs_add(1);
		file_scoped(&v);
		return 1;
	}
	/* a record under its key already (a destroy no program saw, before the attach): replaced */
	if (err == -17 /* EEXIST */ && !map_err(bpf_map_update_elem(&kq_objs, &key, &v, BPF_EXIST))) {
		file_scoped(&v);
		return 1;
	}
	/*
	 * Not recorded (kq_objs full, past the room the check keeps for this): its destroy will find nothing to
	 * give back. Its charge stays (the safe side: the scope counts it until its limit is set again), and it
	 * is counted where quota show, monitor and the exporter read it (kq_state.lost).
	 */
	lost(err);
	return 0;
}

#endif
