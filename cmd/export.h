/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rdmactl export's rooms: options and modes (export.c), the metric families written from a collection (export_render.c). */
#ifndef RDMACTL_CMD_EXPORT_H
#define RDMACTL_CMD_EXPORT_H

#include <stdbool.h>

#include "export/http.h"
#include "export/metrics.h"
#include "export/prom.h"

/* The default --listen: port 9476 on every address (why this port: man rdmactl-export, OPTIONS). */
#define EXPORT_DEFAULT_LISTEN ":9476"
/* The file node_exporter's textfile collector reads (it takes *.prom files only). */
#define EXPORT_TEXTFILE "rdmactl.prom"

struct export_render_opts {
	bool per_process;		/* per-process families, and every process scope of the ledger */
	const struct http_stats *http;	/* the server's counters (NULL: no server, no such families) */
};

/* Write every family of a collection into b (appended). */
void export_render(const struct metrics_snap *s, const struct export_render_opts *o, struct prom_buf *b);

#endif
