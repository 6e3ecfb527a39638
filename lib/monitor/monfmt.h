/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rdmactl monitor's event formatting: names, times, an event as text or JSON through the output layer. */
#ifndef RDMACTL_MONFMT_H
#define RDMACTL_MONFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "../../bpf/restrack.h"

/* The name of a restrack type (lib/core/kinds.h); NULL when out of range. */
const char *mon_type_name(unsigned int type);
/* The names in type order, NULL-terminated (for match_word). */
extern const char *const mon_type_names[];
/* "create" or "destroy". */
const char *mon_op_name(unsigned int op);
/* "add", "del", "commit_del"; "?" when unknown. */
const char *mon_hook_name(unsigned int hook);

/* Room for mon_time_iso() and mon_time_text(). */
#define MON_TIME_LEN 48

/* CLOCK_REALTIME nanoseconds as "2026-01-02T12:00:01.123456Z" (UTC, microseconds). */
const char *mon_time_iso(uint64_t rt_ns, char *buf, size_t len);
/* The same as local time of day for text: "12:00:01.123456". */
const char *mon_time_text(uint64_t rt_ns, char *buf, size_t len);

/*
 * A create/destroy event (rt_ns: its CLOCK_REALTIME time) through the output layer. JSON keys in this order:
 * time, time_ns, event, type, pid, tid, comm, user, dev, dev_index, id, mr_len (MRs only), context_pid,
 * hook. Text: one line under the monitor's header (TIME PID COMM OP TYPE DEV ID DETAIL); verbose adds the
 * hook and the context's pid to DETAIL.
 */
void mon_event_print(const struct mon_event *e, const char *dev, uint64_t rt_ns, bool verbose);

#endif
