/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* BPF monitor of ib_core's resource tracker: load, attach (fentry or kprobe), events, per-tgid counters. */
#ifndef RDMACTL_BPFMON_H
#define RDMACTL_BPFMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "../../bpf/restrack.h"
#include "monitor/monfmt.h" /* mon_type_name(), mon_type_names[] */

/*
 * Counters for `top`
 * ------------------
 * The BPF side keeps, per owner tgid (0 = kernel objects), monotonically increasing create and destroy
 * counts per type (struct mon_counts). Two ways to read them:
 *  - a running `rdmactl monitor` pins the map at MON_PIN_COUNTERS (bpffs must be mounted at /sys/fs/bpf);
 *    another process opens it with mon_counters_open_pinned() and reads it with mon_counters_read() or
 *    mon_counters_foreach(). The newest monitor owns the pin; it removes it on exit if it is still its own.
 *  - or load the program itself without the event stream: mon_open() with opts.events = false, then
 *    mon_counters_fd(). Rates are the difference of two reads divided by the time between them.
 * Both need the same privileges as the monitor (root, or CAP_BPF + CAP_PERFMON; reading a pinned map
 * also needs read access to the pin).
 */
#define MON_PIN_DIR "/sys/fs/bpf/rdmactl"
#define MON_PIN_COUNTERS MON_PIN_DIR "/counters"
/* The same counts per device (key: ib_device index, MON_DEV_NONE for none), every owner summed. */
#define MON_PIN_DEVCOUNTERS MON_PIN_DIR "/devcounters"
/* struct mon_status (bpf/restrack.h): lost counters and the baseline that makes the counts complete. */
#define MON_PIN_STATUS MON_PIN_DIR "/status"
/* The user QPs that exist (bpf/restrack.h MON_QPIDS_MAX): read with mon_qpids_read(). */
#define MON_PIN_QPIDS MON_PIN_DIR "/qpids"

/* Set to 1 to skip fentry/fexit and attach kprobes (tests the fallback). */
#define MON_ENV_KPROBE "RDMACTL_MON_KPROBE"

/* Lost events so far, by cause; never reset while the monitor runs. */
struct mon_lost {
	uint64_t ring;     /* event ring full: event not delivered (still counted in the counters map) */
	uint64_t counters; /* counters map full: a tgid could not be counted */
};

struct mon_opts {
	bool events;       /* deliver events through the event ring (bpf/restrack.h) to cb */
	bool pin_counters; /* pin the counters map at MON_PIN_COUNTERS */
	bool track_qpids;  /* keep the user QPs' numbers (MON_PIN_QPIDS when pinned): top/export --counters */
	/* Called for every event from mon_poll()/mon_consume(); a negative value stops the poll with that value. */
	int (*cb)(const struct mon_event *e, void *arg);
	void *arg;
};

struct mon;

/*
 * Check what loading needs before trying: privileges first (-EPERM: not root and missing CAP_BPF or
 * CAP_PERFMON), then ib_core (-ENODEV: module not loaded). The reason is in mon_error().
 */
int mon_check(void);
/*
 * mon_check(), then open, load and attach. fentry/fexit on ib_core's functions when the module's BTF
 * allows it, else kprobes; the commit_del hook only where the kernel has that function.
 * Errors: as mon_check, or -errno from libbpf (message in mon_error()).
 */
int mon_open(const struct mon_opts *opts, struct mon **out);
void mon_close(struct mon *m);
/* Human-readable reason for the last failure of mon_check/mon_open in this thread. */
const char *mon_error(void);

/* "fentry" or "kprobe". */
const char *mon_mode(const struct mon *m);
/* Whether the kernel splits destroys into rdma_restrack_begin_del/commit_del (and commit_del is hooked). */
bool mon_has_commit_del(const struct mon *m);
/*
 * Detach the probes (on = false) or attach them again, keeping the maps and the ring: what bench/monprobe
 * uses to time the same operations with and without them. Attaching again takes a while (trampolines).
 */
int mon_set_attached(struct mon *m, bool on);
/*
 * Time spent in the loaded programs and how often they ran, summed over the programs (what bench/monprobe
 * reports per run). The kernel only counts while run-time statistics are on (bpf_enable_stats() or
 * kernel.bpf_stats_enabled); 0 on success, -errno.
 */
int mon_prog_stats(const struct mon *m, uint64_t *run_ns, uint64_t *runs);
/*
 * Wait up to timeout_ms (less when the ring fills up: the program does not wake the reader for every event),
 * then deliver what is there: number of events, or -errno (-EINTR on a signal).
 */
int mon_poll(struct mon *m, int timeout_ms);
/* Deliver what is in the ring now, without waiting. */
int mon_consume(struct mon *m);
/* A file descriptor that becomes readable when events are waiting (for poll()/epoll with other sources). */
int mon_fd(const struct mon *m);
void mon_lost(const struct mon *m, struct mon_lost *out);
/* Offset to add to mon_event.ts_ns (CLOCK_MONOTONIC) to get CLOCK_REALTIME nanoseconds. */
int64_t mon_realtime_offset(const struct mon *m);

/* The counters maps of an open monitor (owned by m: do not close). */
int mon_counters_fd(const struct mon *m);
int mon_devcounters_fd(const struct mon *m);
int mon_qpids_fd(const struct mon *m);
/* Its status map, mapped read-write (owned by m): the baseline is written there (monbase.c). */
struct mon_status *mon_status_of(const struct mon *m);
/* Open the status a running monitor pins (read-only); -ENOENT when none. */
int mon_status_open_pinned(int *fd);
/* One read of it (a copy); 0 or -errno. */
int mon_status_read(int fd, struct mon_status *out);
/*
 * Does the monitor that wrote st still run (its pid and start time, in the status)? 0 yes, or it names nobody
 * (an older monitor), or the caller is in another pid namespace and cannot tell: trusted as before; -ESRCH
 * gone (killed with SIGKILL, its pins left behind: its counters count nothing since).
 */
int mon_status_alive(const struct mon_status *st);
/* The same for the pinned status: 0, -ESRCH, or -errno of opening or reading it (-ENOENT: none pinned). */
int mon_pinned_alive(void);
/* The kernel's id of the map behind fd (to tell whether pins belong to one monitor); 0 on failure. */
uint32_t mon_map_id(int fd);
/* Open the map pinned by a running monitor; caller closes the fd. -ENOENT when none is pinned. */
int mon_counters_open_pinned(int *fd);
/* The same, and -ESRCH when the monitor that pinned it is gone (mon_pinned_alive): counters that count. */
int mon_counters_open_live(int *fd);
/* The per-device counters a monitor pins (MON_PIN_DEVCOUNTERS), read-only; mon_counters_foreach() reads them
 * with the device index as key. -ENOENT: no monitor, or one that pins only the per-owner counters. */
int mon_devcounters_open_pinned(int *fd);
/* The user QPs a monitor pins (MON_PIN_QPIDS), read-only; -ENOENT: no monitor, or an older one. */
int mon_qpids_open_pinned(int *fd);
/* One QP of the map: where it is, and its owner. */
struct mon_qp {
	struct mon_qpid id;
	uint32_t tgid;
};
/* Every entry of the map, in batches (*out malloc'ed, *n entries; the caller frees): 0 or -errno. */
int mon_qpids_read(int fd, struct mon_qp **out, size_t *n);
/* Counts of one tgid (0 = kernel objects); -ENOENT when it never created or destroyed anything. */
int mon_counters_read(int fd, pid_t tgid, struct mon_counts *out);
/* Every tgid in the map; cb returns non-zero to stop (returned). */
int mon_counters_foreach(int fd, int (*cb)(pid_t tgid, const struct mon_counts *c, void *arg), void *arg);
/* Drop entries of exited processes that hold nothing by the counts (creates balance destroys, or fall short of
 * them: objects of before the monitor destroyed); returns how many were dropped. */
int mon_counters_prune(int fd);

#endif
