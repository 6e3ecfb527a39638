/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rdmactl monitor's event formatting: names, ISO times, JSON lines (hand-written fast path + json-c). */
#ifndef RDMACTL_MONFMT_H
#define RDMACTL_MONFMT_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <linux/types.h>

#include "../bpf/restrack.h"

/* The name of a restrack type (lib/kinds.h); NULL when out of range. */
const char *mon_type_name(unsigned int type);
/* The names in type order, NULL-terminated (for match_word). */
extern const char *const mon_type_names[];
/* "create" or "destroy". */
const char *mon_op_name(unsigned int op);
/* "add", "del", "commit_del"; "?" when unknown. */
const char *mon_hook_name(unsigned int hook);

/* Room for mon_time_iso() and for any event from mon_event_json() (every string byte escaped as \u00XX). */
#define MON_TIME_LEN 48
#define MON_JSON_LEN 1024

/* CLOCK_REALTIME nanoseconds as "2026-01-02T12:00:01.123456Z" (UTC, microseconds). */
const char *mon_time_iso(uint64_t rt_ns, char *buf, size_t len);

/*
 * The JSON object of a create/destroy event (rt_ns: its CLOCK_REALTIME time), keys in this order: time,
 * time_ns, event, type, pid, tid, comm, user, dev, dev_index, id, mr_len (MRs only), context_pid, hook.
 * mon_event_json() writes it into buf without a newline, byte for byte what json-c prints for
 * mon_event_json_object() with JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, but without
 * allocating: the monitor's hot path. Returns the length, or -ENOSPC when len is too small.
 */
int mon_event_json(const struct mon_event *e, const char *dev, uint64_t rt_ns, char *buf, size_t len);
struct json_object *mon_event_json_object(const struct mon_event *e, const char *dev, uint64_t rt_ns);

#endif
