/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the rooms of rdmactl top share: how a snapshot is shown, its printer, the interactive screen. */
#ifndef RDMACTL_TOP_VIEW_H
#define RDMACTL_TOP_VIEW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "top/top.h"

/* How snapshots are shown: sort key and order (the screen changes them), batch text or the screen. */
struct top_view {
	enum top_key key;
	bool reverse;
	bool screen;		/* the header line also names the screen's keys */
	bool no_qp_states;	/* --no-qp-states: no QP states (JSON qp_states, text QP-STATES); the counts
				 * may then come from the monitor's counters (top_snapshot_counters) */
	bool counters;		/* --counters: counts from the monitor's counters, QP states asked for QP by QP
				 * by number (top_snapshot_counters with states); else the dump */
};

/* Lines of one text snapshot, for the screen: the column header, the process rows after it. */
struct top_layout {
	size_t header;		/* line index of the column header */
	size_t rows;		/* line index of the first process row */
	size_t nrows;
	size_t lines;		/* all lines, the per-device totals last */
};

/*
 * top_print.c: one snapshot through the output layer: the text view, or with -j the JSON object of
 * rdmactl-top(8). lay (may be NULL) gets the text's line layout.
 */
void top_print(const struct top_snap *s, const struct top_view *v, struct top_layout *lay);

/* top.c: a sorted snapshot with the ledger and rate columns joined; on failure s is released (0 or -errno). */
int top_take(struct top_ctx *t, const struct top_filter *f, struct top_snap *s, const struct top_view *v,
	     bool quiet);
void top_take_error(struct top_ctx *t, int err);
extern volatile sig_atomic_t top_exiting;

/* top_tui.c: the ncurses screen, refreshed every delay seconds from first on; an exit code. */
int top_screen(struct top_ctx *t, const struct top_filter *f, struct top_snap *first, struct top_view *v,
	       double delay);

#endif
