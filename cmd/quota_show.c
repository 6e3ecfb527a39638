// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl quota show: each scope's limits and usage, the ledger's and the kernel's (BPF LSM or rdma.max). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "core/out.h"
#include "core/util.h"
#include "engines/podname.h"
#include "kq/backstop.h"
#include "kq/kq.h"
#include "kq/kqdrv.h"
#include "kq/rdmacg.h"
#include "ledger/ledger.h"
#include "quota.h"
#include "rdmactl.h"

/* A count from rdma.max or rdma.current: JSON null for "max", else the number. */
static void print_kernel_count(const char *key, const char *fmt, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	print_string(PRINT_FP, NULL, fmt, v == RDMACG_MAX ? "max" : num);
	if (v == RDMACG_MAX)
		print_null(PRINT_JSON, key, NULL);
	else
		print_uint(PRINT_JSON, key, NULL, v);
}

/* A cgroup's rdma.max or rdma.current: an object keyed by device in JSON, a line per device in text. */
static void print_kernel(const char *key, const char *file, const struct rdmacg_line *kl, int n)
{
	int i;

	out_open_object(key);
	for (i = 0; i < n; i++) {
		print_text("  %-12s %s", file, kl[i].dev);
		out_open_object(kl[i].dev);
		print_kernel_count("hca_handle", " hca_handle=%s", kl[i].hca_handle);
		print_kernel_count("hca_object", " hca_object=%s", kl[i].hca_object);
		out_close_object();
		print_nl();
	}
	out_close_object();
}

/* A limit, usage or headroom: JSON null (unlimited) or the number; text a table cell, "-" where none applies. */
static void print_amount(const char *key, enum ledger_kind k, uint64_t v, bool null, bool dash)
{
	char buf[32];

	if (null)
		print_null(PRINT_JSON, key, NULL);
	else
		print_uint(PRINT_JSON, key, NULL, v);
	print_string(PRINT_FP, NULL, " %10s", dash ? "-" : quota_fmt_value(k, v, buf, sizeof(buf)));
}

/* The kernel quota programs, opened once for show (NULL: not loaded, or not readable by this user). */
static struct kq *show_kq;
static bool show_kq_tried;

static struct kq *show_kq_open(void)
{
	if (!show_kq_tried) {
		show_kq_tried = true;
		if (kq_open(false, &show_kq) && !kq_error()[0])
			show_kq = NULL;
		if (!show_kq)
			pr_debug("kernel limits: %s", kq_error());
	}
	return show_kq;
}

/* The kernel's limits and usage of a ledger scope, if it has kernel limits. */
static bool kernel_of(const struct ledger_scope *s, uint64_t *kmax, int64_t *kuse, uint64_t *krefused,
		      uint64_t *kkilled)
{
	char root[PATH_MAX];
	struct kq_scope sc;

	if (!show_kq_open())
		return false;
	cgroup2_root(root, sizeof(root));
	if (kq_scope_of_ledger(s, root, &sc))
		return false;
	return kq_get(show_kq, &sc, kmax, kuse, krefused, kkilled) == 0;
}

/* Is a finite rdma.max line there for kind k (hca_handle for ctx, hca_object for the object kinds)? */
static bool rdmacg_limits(int k, const struct rdmacg_line *kl, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (k == LEDGER_CTX && kl[i].hca_handle != RDMACG_MAX)
			return true;
		if (kq_backstop_object_kind(k) && kl[i].hca_object != RDMACG_MAX)
			return true;
	}
	return false;
}

/* The kernel's limits and usage of a scope (kernel_of). */
struct kq_view {
	uint64_t max[KQ_NK], refused[KQ_NK], killed[KQ_NK];
	int64_t use[KQ_NK];
};

/*
 * A scope's kinds: a row each (the table leaves out what neither limits nor holds anything, -v and JSON show
 * every kind) with its limit, usage and headroom, the kernel's (kern: NULL without), and who enforces it.
 * The number of rows printed.
 */
static int show_kinds(const struct ledger_scope_stat *st, const struct kq_view *kern, const struct rdmacg_line *kmax,
		      int nmax)
{
	/* a process scope binds through the interceptor only while it holds that process (a slot of it) */
	bool held = st->scope.type != LEDGER_SCOPE_PROCESS || st->nprocs;
	int k, rows = 0;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t limit = st->limit[k], usage = st->usage[k];
		bool unlimited = limit == LEDGER_UNLIMITED;

		/* the table leaves out what neither limits nor holds anything (-v shows every kind); JSON has all */
		bool kl = kern && k < KQ_NK && kern->max[k] != KQ_UNLIMITED;
		bool cg = st->scope.type == LEDGER_SCOPE_CGROUP && rdmacg_limits(k, kmax, nmax);

		if (!out_is_json() && !util_verbose && unlimited && !usage && !kl)
			continue;
		if (!rows++)
			print_text("  %-9s %10s %10s %10s%s\n", "kind", "limit", "usage", "headroom",
				   kern ? "     kernel    k-usage  enforced by" : "  enforced by");
		print_string(PRINT_FP, NULL, "  %-9s", ledger_kind_names[k]);
		out_open_object(ledger_kind_names[k]);
		print_amount("limit", k, limit, unlimited, false);
		print_amount("usage", k, usage, false, k == LEDGER_WR);
		print_amount("headroom", k, usage >= limit ? 0 : limit - usage, unlimited, unlimited || k == LEDGER_WR);
		print_uint(PRINT_JSON, "refused", NULL, st->refused[k]);
		if (kern && k < KQ_NK) {
			print_amount("kernel_limit", k, kern->max[k], kern->max[k] == KQ_UNLIMITED, false);
			print_amount("kernel_usage", k, (uint64_t)kern->use[k], false, false);
			print_uint(PRINT_JSON, "kernel_refused", NULL, kern->refused[k]);
			print_uint(PRINT_JSON, "kernel_killed", NULL, kern->killed[k]);
		} else if (kern) {
			print_text(" %10s %10s", "-", "-");
		}
		/* who stops a creation past the limit: the interceptor (ledger), the BPF LSM programs, rdma.max */
		out_open_array("enforced_by");
		print_text("  ");
		if (!unlimited && held)
			print_string(PRINT_ANY, NULL, "%s", "interceptor");
		if (kl)
			print_string(PRINT_ANY, NULL, !unlimited && held ? ",%s" : "%s", "kernel");
		if (cg)
			print_string(PRINT_ANY, NULL, (!unlimited && held) || kl ? ",%s" : "%s", "rdma.max");
		if (!(!unlimited && held) && !kl && !cg)
			print_text(unlimited ? "-" : "none");
		out_close_array();
		out_close_object();
		print_nl();
	}
	return rows;
}

static int show_scope(const struct ledger_scope_stat *st, void *arg)
{
	struct rdmacg_line kmax[RDMACG_MAX_DEVS], kcur[RDMACG_MAX_DEVS];
	struct kq_view kq;
	int nmax = 0, ncur = 0, rows;
	bool kern;

	(void)arg;
	if (st->scope.type == LEDGER_SCOPE_CGROUP) {
		char root[PATH_MAX];

		cgroup2_root(root, sizeof(root));
		/* a cgroup without the controller (or gone) has neither file: nothing shown */
		nmax = rdmacg_read(root, st->scope.name, "rdma.max", kmax, RDMACG_MAX_DEVS);
		ncur = rdmacg_read(root, st->scope.name, "rdma.current", kcur, RDMACG_MAX_DEVS);
		nmax = nmax < 0 ? 0 : nmax;
		ncur = ncur < 0 ? 0 : ncur;
	}
	kern = kernel_of(&st->scope, kq.max, kq.use, kq.refused, kq.killed);
	out_open_object(NULL);
	print_string(PRINT_JSON, "scope", NULL, ledger_scope_type_name(st->scope.type));
	switch (st->scope.type) {
	case LEDGER_SCOPE_PROCESS:
		print_int(PRINT_ANY, "pid", "pid %" PRId64, st->scope.pid);
		print_uint(PRINT_JSON, "start_time", NULL, st->scope.start_time);
		break;
	case LEDGER_SCOPE_JOB:
		print_string(PRINT_ANY, "job", "job %s", st->scope.name);
		break;
	case LEDGER_SCOPE_CGROUP: {
		struct cgroup_ids ids;
		struct podname pn;

		print_string(PRINT_ANY, "cgroup", "cgroup %s", st->scope.name);
		/* a container's or a pod's cgroup: which (the runtimes' cgroupfs and systemd layouts) */
		cgroup_ids(st->scope.name, &ids);
		if (ids.pod_uid[0])
			print_string(PRINT_ANY, "pod_uid", " (pod %s", ids.pod_uid);
		/* and the pod's name, where the OCI hook wrote it */
		if (ids.pod_uid[0] && !podname_read(ids.pod_uid, &pn)) {
			print_string(PRINT_ANY, "pod_namespace", " %s", pn.ns);
			print_string(PRINT_ANY, "pod_name", "/%s", pn.name);
		}
		if (ids.container_id[0]) {
			print_string(PRINT_JSON, "container_id", NULL, ids.container_id);
			print_text("%scontainer %.12s", ids.pod_uid[0] ? ", " : " (", ids.container_id);
		}
		if (ids.pod_uid[0] || ids.container_id[0])
			print_text(")");
		break;
	}
	default:
		print_text("global");
		break;
	}
	/* a process scope counts one process: the text says whether it is attached */
	if (st->scope.type == LEDGER_SCOPE_PROCESS) {
		print_uint(PRINT_JSON, "nprocs", NULL, st->nprocs);
		print_text(":%s\n", st->nprocs ? ""
					       : " (not attached to the ledger: the interceptor does not hold it, its "
						 "limits bind nothing until it does)");
	} else {
		print_uint(PRINT_ANY, "nprocs", ": %" PRIu64 " process", st->nprocs);
		print_text("%s\n", st->nprocs == 1 ? "" : "es");
	}
	out_open_object("kinds");
	rows = show_kinds(st, kern ? &kq : NULL, kmax, nmax);
	out_close_object();
	if (!rows)
		print_text("  no limits, nothing in use\n");
	if (st->scope.type == LEDGER_SCOPE_CGROUP) {
		print_kernel("rdma_max", "rdma.max", kmax, nmax);
		print_kernel("rdma_current", "rdma.current", kcur, ncur);
	}
	out_close_object();
	return 0;
}

/*
 * The show document: {"ledger", "denials", "procs": {"in_use", "capacity"}, "scopes": [...]}; its text is
 * the scopes (and, for the whole ledger, denials and slots after them).
 */
static void show_begin(const char *path, uint64_t denials, unsigned int in_use, unsigned int capacity)
{
	out_open_object(NULL);
	print_string(PRINT_JSON, "ledger", NULL, path);
	print_uint(PRINT_JSON, "denials", NULL, denials);
	out_open_object("procs");
	print_uint(PRINT_JSON, "in_use", NULL, in_use);
	print_uint(PRINT_JSON, "capacity", NULL, capacity);
	out_close_object();
	out_open_array("scopes");
}

/* The driver methods the kernel quota programs refused (or passed) without knowing them (bpf/kqdrv.h). */
static int show_drv_one(const struct kq_drv_unknown *u, void *arg)
{
	const char *dn = kq_drv_name(u->driver);
	char desc[128];

	(void)arg;
	kq_drv_describe(u->key, desc, sizeof(desc));
	out_open_object(NULL);
	if (dn)
		print_string(PRINT_JSON, "driver", NULL, dn);
	else
		print_uint(PRINT_JSON, "driver", NULL, u->driver);
	print_uint(PRINT_JSON, "object", NULL, u->object);
	print_uint(PRINT_JSON, "method", NULL, u->method);
	print_string(PRINT_FP, NULL, "kernel: unknown driver method %s: ", desc);
	print_uint(PRINT_ANY, "refused", "refused %" PRIu64 ", ", u->seen.refused);
	print_uint(PRINT_ANY, "passed", "passed %" PRIu64 ", ", u->seen.passed);
	print_uint(PRINT_ANY, "last_pid", "last pid %" PRIu64 " ", u->seen.tgid);
	print_strn(PRINT_ANY, "last_comm", "(%.*s)\n", u->seen.comm, sizeof(u->seen.comm));
	out_close_object();
	return 0;
}

/*
 * What a killed `quota set --kernel` left (kq_unfinished): scopes whose limit never went in. Nothing false is
 * shown for them (no kernel columns), but the set that was asked for is not enforced: said, exit 1.
 */
static bool show_unfinished(void)
{
	struct kq_unfinished u;
	char desc[PATH_MAX + 32];
	unsigned int i;

	int err = kq_unfinished(show_kq, &u);

	if (err) {
		/* a set runs now (1): what it has not finished yet is its own */
		if (err < 0)
			pr_debug("cannot look for unfinished kernel limits: %s", strerror(-err));
		return false;
	}
	out_open_array("kernel_unfinished");
	for (i = 0; i < u.nscopes && i < KQ_UNFINISHED_MAX; i++)
		print_string(PRINT_JSON, NULL, NULL, kq_scope_text(&u.scope[i], desc, sizeof(desc)));
	out_close_array();
	print_bool(PRINT_JSON, "kernel_count_unfinished", NULL, u.populating);
	if (!u.nscopes && !u.populating)
		return false;
	if (u.nscopes)
		pr_err("a 'quota set --kernel' was killed before its limit went in (%s%s): no kernel limit is in force "
		       "there; set it again, or remove what it left with 'rdmactl quota gc'",
		       kq_scope_text(&u.scope[0], desc, sizeof(desc)), u.nscopes > 1 ? " and others" : "");
	else
		pr_err("a 'quota set --kernel' was killed while it counted what exists; the next set, unset or "
		       "'rdmactl quota gc' clears what it left");
	return true;
}

/* EXIT_FAIL when kernel limits exist that nothing enforces (said on stderr, and in JSON). */
static int show_end(void)
{
	struct kq_table t;
	char why[512];
	int up = 1;
	bool unfinished = false;

	out_close_array();
	if (show_kq_open()) {
		up = kq_enforcement(show_kq, why, sizeof(why));
		if (up < 0)
			snprintf(why, sizeof(why), "cannot check the kernel quota programs: %s", strerror(-up));
		print_bool(PRINT_JSON, "kernel_enforced", NULL, up == 1);
		if (up != 1) {
			print_string(PRINT_JSON, "kernel_not_enforced", NULL, why);
			pr_err("kernel limits are set but not enforced: %s (rdmactl quota kernel repair enforces them "
			       "again)", why);
		}
	}
	/* the programs' table of charged objects: its use; what it refused and could not record */
	if (show_kq_open() && !kq_table(show_kq, &t)) {
		print_int(PRINT_JSON, "kernel_records", NULL, t.records);
		print_uint(PRINT_JSON, "kernel_records_max", NULL, t.size);
		print_uint(PRINT_JSON, "kernel_table_full", NULL, t.full);
		print_uint(PRINT_JSON, "kernel_lost", NULL, t.lost);
		if (t.full)
			print_text("kernel: %" PRIu64 " creations refused: the kernel quota programs' table was nearly full "
				   "(%" PRId64 " of %u records now; load the programs with a larger one: RDMACTL_KQ_OBJECTS)\n",
				   t.full, t.records, t.size);
		if (t.lost) {
			print_int(PRINT_JSON, "kernel_lost_errno", NULL, t.lost_errno);
			print_text("kernel: %" PRIu64 " charged objects not recorded (the last: %s): their charge stays until "
				   "the limit is set again\n", t.lost,
				   t.lost_errno == E2BIG ? "the kernel quota programs' table is full" : strerror(t.lost_errno));
		}
	}
	if (show_kq_open())
		unfinished = show_unfinished();
	out_open_array("unknown_driver_methods");
	kq_drv_unknown_foreach(show_drv_one, NULL);
	out_close_array();
	out_close_object();
	return up == 1 && !unfinished ? EXIT_OK : EXIT_FAIL;
}

static void no_entry(void)
{
	char desc[LEDGER_CGROUP_MAX + 16];

	pr_err("no ledger entry for %s (no limits, no managed process)", quota_scope_desc(&qopt.scope, desc, sizeof(desc)));
}

/*
 * No ledger yet: nothing is limited, nobody is managed. JSON is the document an empty ledger gives (its
 * global scope, or the process asked for); a job or cgroup has no entry there either. Text says so in words.
 */
static int show_missing(void)
{
	struct ledger_scope_stat st = { .scope.type = LEDGER_SCOPE_GLOBAL };
	int k;

	pr_debug("no ledger at %s", quota_ledger_file());
	if (qopt.nscopes) {
		st.scope = qopt.scope;
		if (qopt.scope.type == LEDGER_SCOPE_JOB || qopt.scope.type == LEDGER_SCOPE_CGROUP ||
		    (qopt.scope.type == LEDGER_SCOPE_PROCESS && !qopt.scope.start_time &&
		     ledger_pid_start_time(qopt.scope.pid, &st.scope.start_time))) {
			no_entry();
			return EXIT_FAIL;
		}
	}
	print_text("no limits set\n");
	if (!out_is_json())
		return EXIT_OK;
	for (k = 0; k < LEDGER_NKINDS; k++)
		st.limit[k] = LEDGER_UNLIMITED;
	show_begin(quota_ledger_file(), 0, 0, LEDGER_DEFAULT_PROCS); /* as the ledger quota init makes */
	show_scope(&st, NULL);
	return show_end();
}

int quota_show(void)
{
	struct ledger_scope_stat st;
	unsigned int in_use = 0, capacity;
	struct ledger *l;
	uint64_t denials = 0;
	int err, rc;

	if (qopt.nargs > 1) {
		fprintf(stderr, "%s: show: unexpected argument '%s'\nTry '%s --help' for more information.\n", util_prog,
			qopt.args[1], util_prog);
		return EXIT_USAGE;
	}
	if (qopt.kernel) {
		fprintf(stderr, "%s: show: --kernel goes with set and unset (show prints rdma.max and rdma.current "
			"of cgroups anyway)\nTry '%s --help' for more information.\n", util_prog, util_prog);
		return EXIT_USAGE;
	}
	err = ledger_open(qopt.ledger, qopt.create ? LEDGER_CREATE : 0, &l);
	if (err == -ENOENT && quota_ledger_missing())
		return show_missing();
	if (err)
		return quota_open_error(err, 0);
	/* reclaim dead holders first, so that they are not counted (needs write access to the usage file) */
	err = ledger_gc(l, NULL);
	if (err && err != -EACCES)
		pr_debug("gc: %s", strerror(-err));
	if (qopt.nscopes && ledger_get_scope(l, &qopt.scope, &st)) {
		no_entry();
		ledger_close(l);
		return EXIT_FAIL;
	}
	ledger_denial_counts(l, &denials, NULL);
	capacity = ledger_capacity(l, &in_use);
	show_begin(ledger_path(l), denials, in_use, capacity);
	if (qopt.nscopes)
		show_scope(&st, NULL);
	else
		ledger_foreach_scope(l, show_scope, NULL);
	rc = show_end();
	if (!qopt.nscopes) {
		print_uint(PRINT_FP, NULL, "denials: %" PRIu64 "\n", denials);
		print_uint(PRINT_FP, NULL, "process slots: %" PRIu64, in_use);
		print_uint(PRINT_FP, NULL, " of %" PRIu64 " in use\n", capacity);
	}
	ledger_close(l);
	return rc;
}
