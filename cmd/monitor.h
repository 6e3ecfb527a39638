/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the rooms of rdmactl monitor share (defined in monitor_state.c unless said otherwise). */
#ifndef RDMACTL_MONITOR_H
#define RDMACTL_MONITOR_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "monitor/bpfmon.h"
#include "ledger/ledger.h"

struct monitor_opts {
	pid_t pid;
	int type; /* enum restrack_type; -1: all */
	const char *dev;
	double stats;    /* seconds between rate reports; 0: off */
	bool audit;
	double interval; /* audit period */
	int enforce_sig; /* 0: report only */
	double duration; /* 0: until interrupted */
};
extern struct monitor_opts mopt;
extern volatile sig_atomic_t monitor_exiting;

/* What the summary at the end counts (monitor.c, monitor_dev.c, monitor_deny.c add to it). */
struct proc_sum {
	pid_t tgid;
	char comm[MON_COMM_LEN];
	uint64_t n[2][RESTRACK_NTYPES]; /* [0] create, [1] destroy */
};
struct monitor_sum {
	struct proc_sum *procs;
	size_t n, cap;
	uint64_t types[2][RESTRACK_NTYPES];
	uint64_t events, devices, denials;
	double start;
};
extern struct monitor_sum monitor_summary;

/* The loaded BPF monitor. */
extern struct mon *monitor_bpf;

/* monitor_base.c: try to establish the baseline of the pinned counters (now, and again later until it holds). */
void monitor_baseline(void);

/* The column header of the text stream, once (not with -j or --stats). */
void text_header(void);

/* monitor_dev.c: device names by index, device add/remove/rename events. */
const char *dev_name_of(uint32_t index, double at);
void dev_names_load(void);
int device_events_open(void);
void device_events_read(int fd);
void uevent_read(int fd, bool renames_only);
extern const char *dev_source;
extern int rename_fd;

/* monitor_deny.c: refusals from the ledger's ring. */
void poll_denials(struct ledger **l, uint64_t *since, double *next_try);
/* Kernel quota refusals and kills (kq events) since *since; opens the pinned maps when they appear. */
struct kq;
void poll_kdenials(struct kq **q, uint64_t *since, double *next_try);

/* monitor_stats.c: the summary at the end, --stats rates. */
struct proc_sum *proc_sum(pid_t tgid, const char *comm);
void print_summary(const struct mon_lost *lost);
void print_rates(double dt, bool show);
void stats_free(void);

/* monitor_audit.c: --audit. */
int run_audit(void);

#endif
