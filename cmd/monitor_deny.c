// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: refusals read from the ledger's ring as they happen. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>

#include "core/cgroup.h"
#include "core/clock.h"
#include "kq/kq.h"
#include "kq/kqdrv.h"
#include "ledger/ledger.h"
#include "monitor/monfmt.h"
#include "monitor.h"
#include "core/out.h"
#include "core/proc.h"
#include "core/util.h"

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
	monitor_summary.denials++;
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


/* --- kernel refusals and kills (BPF LSM quotas) ----------------------------------------------------- */

static int on_kevent(const struct kq_event *ev, void *arg)
{
	const char *kind = kq_kind_name(ev->kind), *what = kq_event_name(ev->type);
	char scope[PATH_MAX + 32], text[PATH_MAX + 384], tbuf[48];
	char amount[32];
	char drvdesc[128];
	int64_t t = (int64_t)ev->time_ns + ((int64_t)clock_rt_ns() - (int64_t)clock_mono_ns());

	(void)arg;
	if (ev->type == KQ_EV_DRV_UNKNOWN) {
		/* a driver method the programs' table does not know (bpf/kqdrv.h), refused */
		kind = "driver_method";
		what = "refused";
	}
	if (ev->type == KQ_EV_URING)
		kind = "io_uring";
	if (mopt.pid && (pid_t)ev->tgid != mopt.pid)
		return 0;
	if (mopt.type >= 0 && strcmp(kind, mon_type_name(mopt.type)))
		return 0;
	monitor_summary.denials++;
	if (mopt.stats)
		return 0;
	kq_scope_text(&ev->scope, scope, sizeof(scope));
	if (ev->kind == KQ_MR_BYTES)
		fmt_size(ev->amount, amount, sizeof(amount));
	else
		snprintf(amount, sizeof(amount), "%llu", (unsigned long long)ev->amount);
	snprintf(text, sizeof(text), "kernel %s %s %s of pid %u: %s at %lld of its limit %llu%s", what, amount, kind,
		 ev->tgid, scope, (long long)ev->usage, (unsigned long long)ev->limit,
		 ev->type == KQ_EV_KILL ? " (a creation past the check: killed)" : "");
	if (ev->type == KQ_EV_FULL)
		snprintf(text, sizeof(text), "kernel refused 1 %s of pid %u (%s has limits): the kernel quota programs' "
			 "table of objects is nearly full (%lld of %llu records): load them with a larger one "
			 "(RDMACTL_KQ_OBJECTS, rdmactl-quota(8))", kind, ev->tgid, scope, (long long)ev->usage,
			 (unsigned long long)ev->limit);
	if (ev->type == KQ_EV_CROSS)
		snprintf(text, sizeof(text), "kernel refused a uverbs file to pid %u: its limited scopes are not the "
			 "file's (%s is limited on one side only); a file passes only between processes under the "
			 "same kernel limits (rdmactl-quota(8), FILE DESCRIPTORS)", ev->tgid, scope);
	if (ev->type == KQ_EV_URING)
		snprintf(text, sizeof(text), "kernel refused a write to a uverbs file from io_uring to pid %u (%s has "
			 "limits): verbs commands through io_uring are not counted, so they are refused where a limit "
			 "applies (rdmactl-quota(8), IO_URING)", ev->tgid, scope);
	if (ev->type == KQ_EV_DRV_UNKNOWN) {
		kq_drv_describe(ev->amount, drvdesc, sizeof(drvdesc));
		snprintf(text, sizeof(text), "kernel refused %s to pid %u (%s has limits): a driver method rdmactl's "
			 "table does not know (please report it; 'rdmactl quota kernel unknown-driver-methods pass' lets "
			 "them pass uncounted)", drvdesc, ev->tgid, scope);
	}
	text_header();
	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso((uint64_t)t, tbuf, sizeof(tbuf)));
	print_string(PRINT_FP, NULL, "%-15s ", mon_time_text((uint64_t)t, tbuf, sizeof(tbuf)));
	print_uint(PRINT_JSON, "time_ns", NULL, (uint64_t)t);
	print_string(PRINT_JSON, "event", NULL, what);
	print_string(PRINT_JSON, "type", NULL, kind);
	print_int(PRINT_ANY, "pid", "%7" PRId64 " ", ev->tgid);
	print_uint(PRINT_JSON, "tid", NULL, ev->tid);
	print_strn(PRINT_ANY, "comm", "%-15.*s ", ev->comm, sizeof(ev->comm));
	print_text("%-8s %-7s %-8s %8s  ", what, kind, "-", "-");
	print_string(PRINT_JSON, "scope", NULL, kq_scope_name(ev->scope.type));
	if (ev->scope.type == KQ_SCOPE_CGROUP)
		print_string(PRINT_JSON, "cgroup", NULL, scope + strlen("cgroup "));
	print_string(PRINT_JSON, "enforced_by", NULL, "kernel");
	if (ev->type == KQ_EV_DRV_UNKNOWN) {
		const char *dn = kq_drv_name(ev->amount >> 32);

		if (dn)
			print_string(PRINT_JSON, "driver", NULL, dn);
		else
			print_uint(PRINT_JSON, "driver", NULL, ev->amount >> 32);
		print_uint(PRINT_JSON, "object", NULL, (ev->amount >> 16) & 0xffff);
		print_uint(PRINT_JSON, "method", NULL, ev->amount & 0xffff);
		print_string(PRINT_JSON, "errno", NULL, "EOPNOTSUPP");
	} else {
		print_uint(PRINT_JSON, "amount", NULL, ev->amount);
	}
	if (ev->type == KQ_EV_FULL)
		print_string(PRINT_JSON, "reason", NULL, "table_full");
	if (ev->type == KQ_EV_CROSS)
		print_string(PRINT_JSON, "reason", NULL, "file_crossing");
	if (ev->type == KQ_EV_URING)
		print_string(PRINT_JSON, "reason", NULL, "io_uring");
	print_int(PRINT_JSON, "usage", NULL, ev->usage);
	print_uint(PRINT_JSON, "limit", NULL, ev->limit);
	print_uint(PRINT_JSON, "seq", NULL, ev->seq);
	print_string(PRINT_ANY, "message", "%s\n", text);
	out_close_object();
	out_flush();
	return 0;
}

/*
 * Kernel limits that nothing enforces (their programs detached: a pin removed, bpffs unmounted): an event when
 * that begins and when it ends, checked once a second.
 */
static void poll_enforcement(struct kq *q)
{
	static double next;
	static int last = 1;
	char why[512], tbuf[48], text[640];
	uint64_t t;
	int up;

	if (clock_mono_s() < next)
		return;
	next = clock_mono_s() + 1;
	up = kq_enforcement(q, why, sizeof(why));
	if (up < 0 || up == last)
		return;
	last = up;
	if (mopt.stats || mopt.pid || mopt.type >= 0)
		return;
	if (up)
		snprintf(text, sizeof(text), "kernel limits are enforced again");
	else
		snprintf(text, sizeof(text), "kernel limits are set but not enforced: %s (rdmactl quota kernel repair "
			 "enforces them again)", why);
	t = clock_rt_ns();
	text_header();
	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso(t, tbuf, sizeof(tbuf)));
	print_string(PRINT_FP, NULL, "%-15s ", mon_time_text(t, tbuf, sizeof(tbuf)));
	print_uint(PRINT_JSON, "time_ns", NULL, t);
	print_string(PRINT_JSON, "event", NULL, "kernel_enforcement");
	print_bool(PRINT_JSON, "up", NULL, up);
	print_text("%7s %-15s %-8s %-7s %-8s %8s  ", "-", "-", up ? "up" : "down", "kernel", "-", "-");
	print_string(PRINT_ANY, "message", "%s\n", text);
	out_close_object();
	out_flush();
}

/* The kernel quota programs may be loaded (the first quota set --kernel) while we run. */
void poll_kdenials(struct kq **q, uint64_t *since, double *next_try)
{
	if (!*q) {
		if (clock_mono_s() < *next_try)
			return;
		*next_try = clock_mono_s() + 2;
		if (kq_open(false, q)) {
			*q = NULL;
			return;
		}
		/* events before the programs were found by this monitor are old news, unless they were just loaded */
		if (!*since)
			*since = KQ_EVENTS_NEW;
		pr_debug("reading kernel refusals from " KQ_PIN_DIR);
	}
	if (kq_events_read(*q, since, on_kevent, NULL) < 0) {
		kq_close(*q);
		*q = NULL;
		return;
	}
	poll_enforcement(*q);
}
