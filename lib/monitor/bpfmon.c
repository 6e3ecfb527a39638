// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* BPF monitor of ib_core's resource tracker: load, attach (fentry or kprobe), events, per-tgid counters. */
#include "monitor/bpfmon.h"

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/clock.h"
#include "core/proc.h"
#include "monitor/monring.h"
#include "restrack.skel.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

struct mon {
	struct restrack_bpf *skel;
	struct ring_buffer *rb;          /* the doorbell: wakes the reader early */
	const struct mon_slot *slots;    /* the event slots, mapped read-only */
	size_t slots_len;
	struct mon_opts opts;
	bool kprobe;
	bool commit_del;
	bool dealloc_hook; /* ib_dealloc_device can be hooked: the device index cache is on */
	bool pinned;
	bool attached;
	struct mon_status *status;       /* the status map, mapped read-write (the baseline is written here) */
	int64_t rt_offset;
};

static __thread char mon_errbuf[256];

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(mon_errbuf, sizeof(mon_errbuf), fmt, ap);
	va_end(ap);
	return err;
}

const char *mon_error(void)
{
	return mon_errbuf;
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

int mon_check(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	struct stat st;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return fail(-errno, "cannot read capabilities: %s", strerror(errno));
	/* CAP_SYS_ADMIN covers both on every kernel; before 5.8 it is the only way. */
	if (!has_cap(data, CAP_SYS_ADMIN) && !(has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON)))
		return fail(-EPERM, "needs root or CAP_BPF and CAP_PERFMON (missing:%s%s)",
			    has_cap(data, CAP_BPF) ? "" : " CAP_BPF", has_cap(data, CAP_PERFMON) ? "" : " CAP_PERFMON");
	if (stat("/sys/module/ib_core", &st))
		return fail(-ENODEV, "ib_core is not loaded: no RDMA resource tracker to watch (modprobe ib_core, or "
				     "load an RDMA driver such as rdma_rxe)");
	return 0;
}

/* The kernel functions the programs hook, by what each is for. */
enum { FN_ADD, FN_COMMIT_DEL, FN_DEALLOC_DEVICE, NHOOK_FNS };
static const char *const hook_fns[NHOOK_FNS] = {
	[FN_ADD] = "rdma_restrack_add",
	[FN_COMMIT_DEL] = "rdma_restrack_commit_del",
	[FN_DEALLOC_DEVICE] = "ib_dealloc_device",
};

/* Which of hook_fns does the module's BTF describe? (fentry/fexit need it.) false: no usable BTF. */
static bool module_btf_funcs(const char *module, bool found[NHOOK_FNS])
{
	struct btf *vmlinux, *mod;
	char path[128];
	size_t i;

	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", module);
	if (access(path, R_OK))
		return false;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return false;
	mod = btf__parse_split(path, vmlinux);
	if (mod)
		for (i = 0; i < NHOOK_FNS; i++)
			found[i] = btf__find_by_name_kind(mod, hook_fns[i], BTF_KIND_FUNC) > 0;
	btf__free(mod);
	btf__free(vmlinux);
	return mod != NULL;
}

/* Without module BTF: which of hook_fns are kernel text symbols (one pass over kallsyms)? */
static void kallsyms_funcs(bool found[NHOOK_FNS])
{
	char line[512], name[256];
	size_t i;
	FILE *f;

	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char type;

		if ((!strstr(line, "rdma_restrack_") && !strstr(line, "ib_dealloc_device")) ||
		    sscanf(line, "%*s %c %255s", &type, name) != 2)
			continue;
		for (i = 0; i < NHOOK_FNS; i++)
			if ((type == 't' || type == 'T') && !strcmp(name, hook_fns[i]))
				found[i] = true;
	}
	fclose(f);
}

/* The doorbell's records only wake the reader: drain_slots() does the reading. */
static int doorbell_cb(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

static int drain_slots(struct mon *m)
{
	return mon_ring_drain(m->slots, &m->skel->bss->ring.cons, m->opts.cb, m->opts.arg);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("RDMACTL_MON_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG && getenv("RDMACTL_MON_DEBUG") && !strcmp(getenv("RDMACTL_MON_DEBUG"), "2"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static void set_autoload(struct restrack_bpf *s, bool fentry, bool commit_del, bool dealloc)
{
	bpf_program__set_autoload(s->progs.fexit_add, fentry);
	bpf_program__set_autoload(s->progs.fentry_del, fentry);
	bpf_program__set_autoload(s->progs.fentry_commit_del, fentry && commit_del);
	bpf_program__set_autoload(s->progs.fentry_dealloc_device, fentry && dealloc);
	bpf_program__set_autoload(s->progs.kprobe_add, !fentry);
	bpf_program__set_autoload(s->progs.kretprobe_add, !fentry);
	bpf_program__set_autoload(s->progs.kprobe_del, !fentry);
	bpf_program__set_autoload(s->progs.kprobe_commit_del, !fentry && commit_del);
	bpf_program__set_autoload(s->progs.kprobe_dealloc_device, !fentry && dealloc);
}

static int load_attach(struct mon *m, bool fentry)
{
	int err;

	m->skel = restrack_bpf__open();
	if (!m->skel)
		return fail(-errno ? -errno : -EINVAL, "cannot open the BPF object: %s", strerror(errno));
	m->skel->rodata->emit_events = m->opts.events;
	m->skel->rodata->track_qpids = m->opts.track_qpids;
	/* The device index cache is safe only if a device's release invalidates it. */
	m->skel->rodata->devcache_on = m->dealloc_hook;
	set_autoload(m->skel, fentry, m->commit_del, m->dealloc_hook);
	if (!m->opts.events)
		bpf_map__set_max_entries(m->skel->maps.slots, 1); /* never written: the program only counts */
	err = restrack_bpf__load(m->skel);
	if (err)
		return fail(err, "cannot load the BPF program (%s): %s", fentry ? "fentry" : "kprobe", strerror(-err));
	err = restrack_bpf__attach(m->skel);
	if (err)
		return fail(err, "cannot attach to ib_core (%s): %s", fentry ? "fentry" : "kprobe", strerror(-err));
	m->kprobe = !fentry;
	m->attached = true;
	return 0;
}

int mon_set_attached(struct mon *m, bool on)
{
	int err = 0;

	if (on == m->attached)
		return 0;
	if (on) {
		/* A device may have been released while detached: cached device indexes are void from here. */
		__atomic_fetch_add(&m->skel->bss->devgen, 1, __ATOMIC_SEQ_CST);
		err = restrack_bpf__attach(m->skel);
	} else {
		restrack_bpf__detach(m->skel);
	}
	if (err)
		return fail(err, "cannot attach to ib_core again: %s", strerror(-err));
	m->attached = on;
	return 0;
}

int mon_prog_stats(const struct mon *m, uint64_t *run_ns, uint64_t *runs)
{
	struct bpf_program *prog;

	*run_ns = *runs = 0;
	bpf_object__for_each_program(prog, m->skel->obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0)
			continue; /* not loaded (the other attach mode) */
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			return -errno;
		*run_ns += info.run_time_ns;
		*runs += info.run_cnt;
	}
	return 0;
}

/* The counters maps a monitor pins (the per-owner ones first: top's rates need them), owned by the newest. */
static const char *const pins[] = { MON_PIN_COUNTERS, MON_PIN_DEVCOUNTERS, MON_PIN_STATUS, MON_PIN_QPIDS };

static struct bpf_map *pin_map(struct mon *m, size_t i)
{
	struct bpf_map *maps[] = { m->skel->maps.counters, m->skel->maps.devcounters, m->skel->maps.status,
				   m->skel->maps.qpids };

	return maps[i];
}

static void pin_counters(struct mon *m)
{
	struct mon_status *st = mon_status_of(m);
	struct stat ns;
	uint64_t start;
	size_t i;

	/* root's alone, as the kernel quotas' pins below it require (lib/kq/kq.c verify_dir) */
	if (mkdir(MON_PIN_DIR, 0700) && errno != EEXIST)
		return;
	/* who keeps the counters counting, before they are pinned: readers check that it runs (mon_status_alive) */
	if (st && !proc_stat_start(getpid(), &start, NULL) && !stat("/proc/self/ns/pid", &ns)) {
		mon_status_start(st) = (__u32)start;
		mon_status_pidns(st) = (__u32)ns.st_ino;
		__atomic_store_n(&mon_status_pid(st), (__u32)getpid(), __ATOMIC_RELEASE);
	}
	for (i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
		unlink(pins[i]); /* the newest monitor owns the pin */
		if (!bpf_map__pin(pin_map(m, i), pins[i]))
			m->pinned = true; /* unpin_counters() removes what is ours */
	}
}

/* Remove the pins only if they still refer to our maps (a newer monitor may have replaced them). */
static void unpin_counters(struct mon *m)
{
	struct bpf_map_info a, b;
	__u32 la, lb;
	size_t i;
	int fd;

	if (!m->pinned)
		return;
	for (i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
		fd = bpf_obj_get(pins[i]);
		if (fd < 0)
			continue;
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		la = sizeof(a);
		lb = sizeof(b);
		if (!bpf_obj_get_info_by_fd(fd, &a, &la) &&
		    !bpf_obj_get_info_by_fd(bpf_map__fd(pin_map(m, i)), &b, &lb) && a.id == b.id)
			unlink(pins[i]);
		close(fd);
	}
	rmdir(MON_PIN_DIR); /* fails harmlessly when not empty */
}

int mon_open(const struct mon_opts *opts, struct mon **out)
{
	const char *force;
	bool fentry, btf, found[NHOOK_FNS] = { false };
	struct mon *m;
	int err;

	err = mon_check();
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return fail(-ENOMEM, "out of memory");
	m->opts = *opts;
	libbpf_set_print(libbpf_quiet);
	btf = module_btf_funcs("ib_core", found);
	if (!btf)
		kallsyms_funcs(found);
	/* Kernels with the begin/commit split destroy PD, CQ, QP and SRQ without rdma_restrack_del. */
	m->commit_del = found[FN_COMMIT_DEL];
	m->dealloc_hook = found[FN_DEALLOC_DEVICE];
	force = getenv(MON_ENV_KPROBE);
	fentry = !(force && *force && strcmp(force, "0")) && btf && found[FN_ADD];
	err = load_attach(m, fentry);
	if (err && fentry) {
		/* fentry needs trampolines and module BTF that match: fall back to kprobes on any failure. */
		restrack_bpf__destroy(m->skel);
		m->skel = NULL;
		err = load_attach(m, false);
	}
	if (err)
		goto err;
	if (opts->events) {
		void *p;

		m->rb = ring_buffer__new(bpf_map__fd(m->skel->maps.doorbell), doorbell_cb, m, NULL);
		if (!m->rb) {
			err = fail(-errno ? -errno : -ENOMEM, "cannot open the ring buffer: %s", strerror(errno));
			goto err;
		}
		m->slots_len = (size_t)MON_SLOTS * sizeof(struct mon_slot);
		p = mmap(NULL, m->slots_len, PROT_READ, MAP_SHARED, bpf_map__fd(m->skel->maps.slots), 0);
		if (p == MAP_FAILED) {
			err = fail(-errno, "cannot map the event slots: %s", strerror(errno));
			ring_buffer__free(m->rb);
			goto err;
		}
		m->slots = p;
	}
	{
		void *p = mmap(NULL, sizeof(struct mon_status), PROT_READ | PROT_WRITE, MAP_SHARED,
			       bpf_map__fd(m->skel->maps.status), 0);

		if (p == MAP_FAILED) {
			err = fail(-errno, "cannot map the status: %s", strerror(errno));
			if (m->slots)
				munmap((void *)m->slots, m->slots_len);
			ring_buffer__free(m->rb);
			goto err;
		}
		m->status = p;
	}
	if (opts->pin_counters)
		pin_counters(m);
	m->rt_offset = (int64_t)(clock_rt_ns() - clock_mono_ns());
	*out = m;
	return 0;
err:
	restrack_bpf__destroy(m->skel);
	free(m);
	return err;
}

void mon_close(struct mon *m)
{
	if (!m)
		return;
	unpin_counters(m);
	if (m->status)
		munmap(m->status, sizeof(struct mon_status));
	if (m->slots)
		munmap((void *)m->slots, m->slots_len);
	ring_buffer__free(m->rb);
	restrack_bpf__destroy(m->skel);
	free(m);
}

const char *mon_mode(const struct mon *m)
{
	return m->kprobe ? "kprobe" : "fentry";
}

bool mon_has_commit_del(const struct mon *m)
{
	return m->commit_del;
}

int mon_poll(struct mon *m, int timeout_ms)
{
	int err;

	if (!m->rb)
		return -EINVAL;
	err = ring_buffer__poll(m->rb, timeout_ms);
	return err < 0 ? err : drain_slots(m);
}

int mon_consume(struct mon *m)
{
	int err;

	if (!m->rb)
		return -EINVAL;
	err = ring_buffer__consume(m->rb);
	return err < 0 ? err : drain_slots(m);
}

int mon_fd(const struct mon *m)
{
	return m->rb ? ring_buffer__epoll_fd(m->rb) : -EINVAL;
}

void mon_lost(const struct mon *m, struct mon_lost *out)
{
	out->ring = __atomic_load_n(&m->skel->bss->lost_events, __ATOMIC_RELAXED);
	out->counters = __atomic_load_n(&m->skel->bss->lost_counters, __ATOMIC_RELAXED);
}

int64_t mon_realtime_offset(const struct mon *m)
{
	return m->rt_offset;
}

struct mon_status *mon_status_of(const struct mon *m)
{
	return m->status;
}

int mon_devcounters_fd(const struct mon *m)
{
	return bpf_map__fd(m->skel->maps.devcounters);
}

int mon_qpids_fd(const struct mon *m)
{
	return bpf_map__fd(m->skel->maps.qpids);
}

int mon_counters_fd(const struct mon *m)
{
	return bpf_map__fd(m->skel->maps.counters);
}
