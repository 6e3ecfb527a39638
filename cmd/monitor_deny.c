// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: refusals read from the ledger's ring as they happen. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "ledger.h"
#include "monfmt.h"
#include "monitor.h"
#include "out.h"
#include "proc.h"
#include "util.h"

/* --- ledger refusals --------------------------------------------------------------------------------- */

static int skip_denial(const struct ledger_denial_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
	return 0;
}

static int on_denial(const struct ledger_denial_event *ev, void *arg)
{
	const char *kind = ledger_kind_name(ev->d.kind);
	char comm[64], text[256], tbuf[48];

	(void)arg;
	if (mopt.pid && ev->d.pid != mopt.pid)
		return 0;
	if (mopt.type >= 0 && (!kind || strcmp(kind, mon_type_name(mopt.type))))
		return 0;
	msum.denials++;
	if (mopt.stats)
		return 0;
	proc_comm(ev->d.pid, comm, sizeof(comm));
	ledger_format_denial(&ev->d, text, sizeof(text));
	text_header();
	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso(ev->time_ns, tbuf, sizeof(tbuf)));
	print_string(PRINT_FP, NULL, "%-15s ", mon_time_text(ev->time_ns, tbuf, sizeof(tbuf)));
	print_uint(PRINT_JSON, "time_ns", NULL, ev->time_ns);
	print_string(PRINT_JSON, "event", NULL, "denied");
	print_string(PRINT_JSON, "type", NULL, kind ? kind : "?");
	print_int(PRINT_ANY, "pid", "%7" PRId64 " ", ev->d.pid);
	print_string(PRINT_ANY, "comm", "%-15.15s ", comm);
	print_text("%-8s %-7s %-8s %8s  ", "denied", kind ? kind : "?", "-", "-");
	print_string(PRINT_JSON, "scope", NULL, ledger_scope_type_name(ev->d.scope.type));
	if (ev->d.job[0])
		print_string(PRINT_JSON, "job", NULL, ev->d.job);
	print_uint(PRINT_JSON, "amount", NULL, ev->d.amount);
	print_uint(PRINT_JSON, "usage", NULL, ev->d.usage);
	print_uint(PRINT_JSON, "limit", NULL, ev->d.limit);
	if (ev->d.env[0])
		print_string(PRINT_JSON, "limit_env", NULL, ev->d.env);
	print_uint(PRINT_JSON, "seq", NULL, ev->seq);
	print_string(PRINT_ANY, "message", "%s\n", text);
	out_close_object();
	out_flush();
	return 0;
}

/* The ledger may appear (quota init) or be replaced (init renames new files in) while we run. */
void poll_denials(struct ledger **l, uint64_t *since, double *next_try)
{
	static ino_t ino;
	struct stat st;

	if (clock_mono_s() >= *next_try) {
		*next_try = clock_mono_s() + 2;
		if (*l && (stat(ledger_path(*l), &st) || st.st_ino != ino)) {
			pr_debug("ledger %s was replaced: reopening", ledger_path(*l));
			ledger_foreach_denial(*l, since, on_denial, NULL);
			ledger_close(*l);
			*l = NULL;
		}
		if (!*l) {
			if (ledger_open(NULL, 0, l)) {
				*l = NULL;
				return;
			}
			ino = stat(ledger_path(*l), &st) ? 0 : st.st_ino;
			*since = 0;
			ledger_foreach_denial(*l, since, skip_denial, NULL); /* only new refusals */
			pr_debug("reading refusals from %s", ledger_path(*l));
		}
	}
	if (!*l)
		return;
	if (ledger_foreach_denial(*l, since, on_denial, NULL) < 0) {
		ledger_close(*l);
		*l = NULL;
	}
}

