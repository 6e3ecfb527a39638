/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The reader's side of the monitor's event ring (bpf/restrack.h: struct mon_slot, struct mon_ring_pos). */
#ifndef RDMACTL_MONRING_H
#define RDMACTL_MONRING_H

#include <stdint.h>

#include <linux/types.h>

#include "../../bpf/restrack.h"

/*
 * Deliver the published slots in sequence order, starting at *cons (shared with the producer): stop at
 * the first slot that does not carry the expected number + 1 (empty, still being filled, or an older
 * lap's event). Each event is copied out and its slot handed back (*cons advanced, release) before cb
 * runs. Returns the number of events delivered, or cb's negative value (that event counts as read).
 */
int mon_ring_drain(const struct mon_slot *slots, __u64 *cons, int (*cb)(const struct mon_event *e, void *arg),
		   void *arg);

#endif
