// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor's shared state: its options, the running summary, the loaded monitor, the text header. */
#include "monitor.h"
#include "core/out.h"

struct monitor_opts mopt = { .type = -1, .interval = 2.0 };
volatile sig_atomic_t monitor_exiting;
struct monitor_sum monitor_summary;
struct mon *monitor_bpf;

static bool header_done;

void text_header(void)
{
	if (header_done || out_is_json() || mopt.stats)
		return;
	print_text("%-15s %7s %-15s %-8s %-7s %-8s %8s  %s\n", "TIME", "PID", "COMM", "OP", "TYPE", "DEV", "ID",
		   "DETAIL");
	out_flush();
	header_done = true;
}
