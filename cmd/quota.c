// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl quota: set, unset and show RDMA resource limits in the ledger (and the rdma cgroup backstop). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "engines/podname.h"
#include "kq/backstop.h"
#include "kq/kq.h"
#include "kq/kqdrv.h"
#include "ledger/ledger.h"
#include "core/out.h"
#include "core/proc.h"
#include "rdmactl.h"
#include "core/kinds.h"
#include "core/util.h"
#include "quota.h"

enum verb { V_SET, V_UNSET, V_SHOW, V_GC, V_INIT, V_KERNEL, V_NR };
static const char *const verbs[] = { "set", "unset", "show", "gc", "init", "kernel", NULL };

struct quota_opts qopt;

enum { OPT_LEDGER = 0x100, OPT_PID, OPT_JOB, OPT_CGROUP, OPT_GLOBAL, OPT_KERNEL, OPT_DEV, OPT_CREATE, OPT_PROCS };

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Scope (exactly one for set and unset; show takes at most one):", 1 },
	{ "pid", OPT_PID, "PID", 0, "A running process (from its next creation on)", 1 },
	{ "job", OPT_JOB, "NAME", 0, "A job started by 'rdmactl run --job NAME'", 1 },
	{ "cgroup", OPT_CGROUP, "PATH", 0,
	  "A cgroup v2 directory, absolute (/sys/fs/cgroup/x) or relative to the cgroup2 mount (x)", 1 },
	{ "global", OPT_GLOBAL, NULL, 0, "Every managed process on the host", 1 },
	{ NULL, 0, NULL, 0, "Kernel backstop:", 2 },
	{ "kernel", OPT_KERNEL, NULL, 0,
	  "The kernel enforces the limit too, for every process of the scope, interceptor or not (BPF LSM; where "
	  "it is not active, a cgroup's rdma.max: hca_handle = ctx, hca_object = the sum of the object kinds)",
	  2 },
	{ "dev", OPT_DEV, "DEV", 0, "With --kernel through rdma.max: only this RDMA device (default: every device)", 2 },
	{ NULL, 0, NULL, 0, "Ledger:", 3 },
	{ "ledger", OPT_LEDGER, "PATH", 0, "Ledger file (default $RDMACTL_LEDGER, else " LEDGER_DEFAULT_PATH ")", 3 },
	{ "create", OPT_CREATE, NULL, 0, "Create an empty ledger if there is none", 3 },
	{ "procs", OPT_PROCS, "N", 0,
	  "With init: how many processes the ledger holds at once (default 16384; 1 KiB of the usage file each)", 3 },
	{ 0 },
};

/*
 * Resolve a cgroup path into qopt.cgdir and qopt.scope (the ledger's name, "/a/b" relative to the mount):
 * 0, or -1 with why in msg. For --cgroup and for quota_cgroup_apply (the OCI hook).
 */
static int set_cgroup_scope(const char *arg, char *msg, size_t len)
{
	char root[PATH_MAX], real[PATH_MAX];
	const char *rel;
	int ret;

	ret = cgroup_resolve(arg, root, sizeof(root), real, sizeof(real));
	switch (ret) {
	case 0:
		break;
	case -EINVAL:
		snprintf(msg, len, "empty cgroup path");
		return -1;
	case -ENOTDIR:
		snprintf(msg, len, "'%s' is not a cgroup v2 directory (cgroup2 is mounted at %s)", arg, root);
		return -1;
	case -EXDEV:
		snprintf(msg, len, "'%s' is not under the cgroup2 mount %s", arg, root);
		return -1;
	default:
		snprintf(msg, len, "cgroup '%s': %s", arg, strerror(-ret));
		return -1;
	}
	rel = real + strlen(root);
	if (!*rel) {
		snprintf(msg, len, "'%s' is the root cgroup: use --global", arg);
		return -1;
	}
	memset(&qopt.scope, 0, sizeof(qopt.scope));
	qopt.scope.type = LEDGER_SCOPE_CGROUP;
	if (ledger_cgroup_normalize(rel, qopt.scope.name, sizeof(qopt.scope.name))) {
		snprintf(msg, len, "cgroup path '%s' is too long for the ledger (max %d)", rel, LEDGER_CGROUP_MAX - 1);
		return -1;
	}
	snprintf(qopt.cgdir, sizeof(qopt.cgdir), "%s", real);
	return 0;
}

/* --cgroup PATH */
static void parse_cgroup(struct argp_state *state, const char *arg)
{
	char msg[PATH_MAX * 2 + 128];

	if (set_cgroup_scope(arg, msg, sizeof(msg)))
		argp_error(state, "%s", msg);
}

static void add_scope(struct argp_state *state, const char *name)
{
	if (qopt.nscopes++)
		argp_error(state, "conflicting scopes: %s and %s (give exactly one)", qopt.scope_opt, name);
	qopt.scope_opt = name;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	pid_t pid;
	int err;

	switch (key) {
	case OPT_LEDGER:
		if (!*arg)
			argp_error(state, "empty ledger path");
		qopt.ledger = arg;
		break;
	case OPT_CREATE:
		qopt.create = true;
		break;
	case OPT_PROCS: {
		uint64_t v;

		if (parse_u64(arg, 1, LEDGER_PROCS_MAX, &v))
			argp_error(state, "--procs '%s': a decimal number of processes from 1 to %u", arg, LEDGER_PROCS_MAX);
		qopt.procs = (unsigned int)v;
		break;
	}
	case OPT_KERNEL:
		qopt.kernel = true;
		break;
	case OPT_DEV:
		qopt.dev = arg;
		break;
	case OPT_PID:
		add_scope(state, "--pid");
		err = parse_pid(arg, true, &pid);
		if (err == -ESRCH)
			argp_error(state, "no process with pid %s", arg);
		if (err)
			argp_error(state, "invalid pid '%s': %s", arg, parse_why(arg, err, false));
		if (proc_tgid(pid) != pid)
			argp_error(state, "%s is a thread of process %d: limits are per process (--pid %d)", arg,
				   (int)proc_tgid(pid), (int)proc_tgid(pid));
		qopt.scope.type = LEDGER_SCOPE_PROCESS;
		qopt.scope.pid = pid;
		break;
	case OPT_JOB:
		add_scope(state, "--job");
		if (!*arg || strlen(arg) >= LEDGER_NAME_MAX)
			argp_error(state, "invalid job name '%s' (1 to %d characters)", arg, LEDGER_NAME_MAX - 1);
		qopt.scope.type = LEDGER_SCOPE_JOB;
		snprintf(qopt.scope.name, sizeof(qopt.scope.name), "%s", arg);
		break;
	case OPT_CGROUP:
		add_scope(state, "--cgroup");
		qopt.scope.type = LEDGER_SCOPE_CGROUP;
		parse_cgroup(state, arg);
		break;
	case OPT_GLOBAL:
		add_scope(state, "--global");
		qopt.scope.type = LEDGER_SCOPE_GLOBAL;
		break;
	case ARGP_KEY_ARG:
		if (qopt.nargs == MAX_ARGS)
			argp_error(state, "too many arguments");
		qopt.args[qopt.nargs++] = arg;
		break;
	case ARGP_KEY_END:
		if (!qopt.nargs)
			argp_error(state, "missing COMMAND (set, unset, show, gc, init, kernel)");
		if (qopt.dev && !qopt.kernel)
			argp_error(state, "--dev goes with --kernel");
		if (qopt.kernel && qopt.nscopes && qopt.scope.type == LEDGER_SCOPE_JOB)
			argp_error(state, "--kernel takes --cgroup, --pid or --global (a job's processes share a cgroup "
				   "under 'rdmactl run --kernel')");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };

static const struct argp argp = {
	options, parse_opt,
	"set KIND VALUE SCOPE [--kernel [--dev DEV]]\n"
	"unset KIND SCOPE [--kernel [--dev DEV]]\n"
	"show [SCOPE]\n"
	"gc\n"
	"init [--procs N]\n"
	"kernel unknown-driver-methods [pass|refuse]\n"
	"kernel repair",
	"Set, unset and show RDMA resource quotas in the rdmactl ledger.\n\n"
	"KIND: ctx, pd, cq, qp, srq, mr, mr_bytes, ah, mw, xrcd, wq, wr (per-queue work-request depth cap). "
	"VALUE: a count, 'unlimited', or for mr_bytes a size with K, M, G, T suffixes. "
	"Commands and kinds may be abbreviated to a unique prefix; mr-bytes is mr_bytes. "
	"Global, cgroup and process limits are root's, whoever created the ledger; an unprivileged user limits "
	"its own jobs (--job). Where there is no ledger yet, "
	"root's set or unset creates one first, as init does; show says no limits are set.\v"
	"Examples:\n"
	"  rdmactl quota set qp 10 --pid 1234\n"
	"  rdmactl quota set mr_bytes 4G --job train\n"
	"  for k in ctx pd cq qp srq mr ah mw; do\n"
	"    rdmactl quota set $k 64 --cgroup tenant-a --kernel --dev rxe0; done\n"
	"  rdmactl quota unset qp --global\n"
	"  rdmactl quota show --cgroup /sys/fs/cgroup/tenant-a -j\n"
	"  rdmactl quota gc\n"
	"  RDMACTL_LEDGER=/tmp/l rdmactl quota init\n"
	"  rdmactl quota init --procs 65536\n",
	children, NULL, NULL,
};

/* ---- helpers ------------------------------------------------------------------------------------ */

const char *quota_ledger_file(void)
{
	return qopt.ledger ? qopt.ledger : ledger_default_path();
}

/* No policy file at all (a fresh host), as opposed to one that cannot be read or is broken. */
bool quota_ledger_missing(void)
{
	return access(quota_ledger_file(), F_OK) && errno == ENOENT;
}

int quota_open_error(int err, unsigned int flags)
{
	if (err == -EACCES && (flags & LEDGER_POLICY_RW))
		pr_err("cannot change limits: %s (only the owner of the ledger's policy file may)", ledger_error());
	else if (err == -ENOENT || err == -EACCES)
		pr_err("cannot open the ledger: %s", ledger_error());
	else
		pr_err("cannot open the ledger: %s (recreate an empty one with 'rdmactl quota init')", ledger_error());
	return EXIT_FAIL;
}

int quota_open_ledger(unsigned int flags, struct ledger **l)
{
	int err = ledger_open(qopt.ledger, flags | (qopt.create ? LEDGER_CREATE : 0), l);

	return err ? quota_open_error(err, flags) : 0;
}

/*
 * Root changing a limit of a ledger that someone else owns (an unprivileged 'rdmactl run' made it first, or
 * 'quota init'): its files become root's, so that its owner can no longer write the policy. Said on stderr.
 */
void quota_take_over(struct ledger *l)
{
	uid_t was;

	if (geteuid())
		return;
	if (ledger_take_over(l, &was))
		pr_err("warning: %s (its owner can still change these limits)", ledger_error());
	else if (was)
		pr_err("note: %s belonged to uid %u, who could change its limits: it is root's now (check the limits "
		       "it holds: rdmactl quota show)",
		       ledger_path(l), (unsigned int)was);
}

const char *quota_scope_desc(const struct ledger_scope *s, char *buf, size_t len)
{
	switch (s->type) {
	case LEDGER_SCOPE_PROCESS:
		snprintf(buf, len, "pid %d", (int)s->pid);
		break;
	case LEDGER_SCOPE_JOB:
		snprintf(buf, len, "job %s", s->name);
		break;
	case LEDGER_SCOPE_CGROUP:
		snprintf(buf, len, "cgroup %s", s->name);
		break;
	default:
		snprintf(buf, len, "global");
	}
	return buf;
}

const char *quota_fmt_value(enum ledger_kind k, uint64_t v, char *buf, size_t len)
{
	if (v == LEDGER_UNLIMITED)
		snprintf(buf, len, "unlimited");
	else if (k == LEDGER_MR_BYTES)
		fmt_size(v, buf, len);
	else
		snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* --kernel: the scope's kernel backstop (lib/kq/backstop.c), with the scope's ledger limits after the change. */
/* set_kernel's answer for a limit rdma.max holds only once every object kind has one (the ledger keeps it) */
#define SET_KERNEL_PENDING 100

static int set_kernel(int k, uint64_t value, const uint64_t *limit)
{
	char desc[LEDGER_CGROUP_MAX + 16];
	struct kq_backstop b = {
		.scope = &qopt.scope,
		.cgdir = qopt.cgdir,
		.dev = qopt.dev,
		.desc = quota_scope_desc(&qopt.scope, desc, sizeof(desc)),
	};

	int r = kq_backstop_set(&b, k, value, limit);

	return r == KQ_BACKSTOP_PENDING ? SET_KERNEL_PENDING : r ? EXIT_FAIL : EXIT_OK;
}

/* ---- set / unset -------------------------------------------------------------------------------- */

static int set_one(int k, uint64_t value, bool set);

static int do_set(bool set)
{
	uint64_t value = LEDGER_UNLIMITED;
	int k, err, want = set ? 3 : 2;
	const char *verb = set ? "set" : "unset";

	if (qopt.nargs < want) {
		fprintf(stderr, "%s: %s: missing %s\nTry '%s --help' for more information.\n", util_prog, verb,
			qopt.nargs < 2 ? "KIND" : "VALUE", util_prog);
		return EXIT_USAGE;
	}
	if (qopt.nargs > want) {
		fprintf(stderr, "%s: %s: unexpected argument '%s'\nTry '%s --help' for more information.\n",
			util_prog, verb, qopt.args[want], util_prog);
		return EXIT_USAGE;
	}
	k = kind_match_word(qopt.args[1], ledger_kind_names, LEDGER_NKINDS); /* mr_bytes or mr-bytes */
	if (k < 0)
		return word_error("kind", qopt.args[1], ledger_kind_names, LEDGER_NKINDS, k);
	if (qopt.kernel && k == LEDGER_WR) {
		fprintf(stderr, "%s: --kernel: wr is a work-request depth cap that the kernel does not count; the "
			"interceptor enforces it (leave out --kernel)\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	if (set && strcmp(qopt.args[2], "unlimited") && strcmp(qopt.args[2], "max")) {
		if (k == LEDGER_MR_BYTES)
			err = parse_size(qopt.args[2], LEDGER_UNLIMITED - 1, &value);
		else
			err = parse_u64(qopt.args[2], 0, LEDGER_UNLIMITED - 1, &value);
		if (err) {
			fprintf(stderr, "%s: invalid VALUE '%s' for %s: %s (%s)\nTry '%s --help' for more information.\n",
				util_prog, qopt.args[2], ledger_kind_names[k],
				parse_why(qopt.args[2], err, k == LEDGER_MR_BYTES),
				k == LEDGER_MR_BYTES ? "a size like 4096, 64K, 2G, or 'unlimited'"
						     : "a decimal count, or 'unlimited'",
				util_prog);
			return EXIT_USAGE;
		}
	}
	if (!qopt.nscopes) {
		fprintf(stderr, "%s: %s: missing scope (--pid PID, --job NAME, --cgroup PATH or --global)\n"
			"Try '%s --help' for more information.\n", util_prog, verb, util_prog);
		return EXIT_USAGE;
	}
	return set_one(k, value, set);
}

/*
 * A limit set on a process that the interceptor does not hold (no slot of it in the ledger, the preload not
 * loaded) binds nothing until it does: said on stderr, with the kernel's limit that binds now. The set stays
 * (exit 0: the status says whether the ledger changed): the process may still exec a program under the
 * interceptor, and its limit is keyed to its pid and start time, which an exec keeps.
 */
static void warn_unheld(struct ledger *l, int k, uint64_t value)
{
	struct ledger_scope_stat st;
	char vbuf[32];
	pid_t pid = qopt.scope.pid;
	int m;

	if (ledger_get_scope(l, &qopt.scope, &st) || st.nprocs)
		return;
	m = proc_maps_file(pid, LEDGER_PRELOAD_NAME);
	if (m == 1) {
		pr_debug("pid %d has %s loaded: it attaches to the ledger at its first verbs call", (int)pid,
			 LEDGER_PRELOAD_NAME);
		return;
	}
	/* the value as given back (fmt_size's "1.5G" would not parse) */
	snprintf(vbuf, sizeof(vbuf), "%" PRIu64, value);
	pr_err("warning: the interceptor does not hold pid %d (not attached to the ledger%s): its %s limit is "
	       "recorded but binds nothing until it runs under the interceptor (a limit the kernel enforces now: "
	       "rdmactl quota set %s %s --pid %d --kernel)",
	       (int)pid, m == 0 ? ", " LEDGER_PRELOAD_NAME " not loaded" : "", ledger_kind_names[k],
	       ledger_kind_names[k], vbuf, (int)pid);
}

/* Close l; remove its files when this set created them and then failed (a failed set leaves no ledger). */
static void close_ledger(struct ledger *l, bool remove)
{
	char path[PATH_MAX];

	copy_str(path, ledger_path(l), sizeof(path) - sizeof(".usage"));
	ledger_close(l);
	if (!remove)
		return;
	unlink(path);
	strcat(path, ".usage");
	unlink(path);
}

/*
 * The part of set and unset after the command line: the ledger's limit on qopt.scope, then, with
 * qopt.kernel, the kernel's. All or nothing: when the kernel's fails, the ledger's limit goes back to what it
 * was (a failed set exits 1 and changes nothing). One code path for 'rdmactl quota set' and the OCI hook
 * (quota_cgroup_apply).
 */
static int set_one(int k, uint64_t value, bool set)
{
	struct ledger_scope_stat st;
	struct ledger *l;
	char desc[LEDGER_CGROUP_MAX + 16], vbuf[32];
	const char *verb = set ? "set" : "unset";
	uint64_t old = LEDGER_UNLIMITED;
	bool created, job = qopt.scope.type == LEDGER_SCOPE_JOB;
	int err;

	/*
	 * Whoever made the ledger (an unprivileged 'rdmactl run' may have, and owns its files then): the global,
	 * cgroup and process limits are root's, a job's are its user's and root's (ledger_set_limit).
	 */
	if (!job && geteuid()) {
		pr_err("cannot %s %s on %s: the global, cgroup and process limits are root's (an unprivileged user "
		       "limits its own jobs: --job NAME, or rdmactl run --max-KIND)",
		       verb, ledger_kind_names[k], quota_scope_desc(&qopt.scope, desc, sizeof(desc)));
		return EXIT_FAIL;
	}
	/* root on a fresh host: the first limit creates the ledger, as 'quota init' would (root owns the policy) */
	created = geteuid() == 0 && quota_ledger_missing();
	if (quota_open_ledger((job ? 0 : LEDGER_POLICY_RW) | (created ? LEDGER_CREATE : 0), &l))
		return EXIT_FAIL;
	if (created)
		pr_debug("no ledger at %s: created an empty one", ledger_path(l));
	quota_take_over(l);
	if (!ledger_get_scope(l, &qopt.scope, &st))
		old = st.limit[k];
	err = ledger_set_limit(l, &qopt.scope, k, value);
	if (err) {
		if (err == -EACCES || err == -EPERM)
			pr_err("cannot change limits: %s", ledger_error());
		else
			pr_err("cannot %s %s on %s: %s", verb, ledger_kind_names[k],
			       quota_scope_desc(&qopt.scope, desc, sizeof(desc)), ledger_error());
		close_ledger(l, created);
		return err == -ENOENT || err == -ESRCH ? EXIT_USAGE : EXIT_FAIL;
	}
	pr_debug("%s limit on %s: %s", ledger_kind_names[k], quota_scope_desc(&qopt.scope, desc, sizeof(desc)),
		 quota_fmt_value(k, value, vbuf, sizeof(vbuf)));
	if (set && !qopt.kernel && qopt.scope.type == LEDGER_SCOPE_PROCESS && value != LEDGER_UNLIMITED)
		warn_unheld(l, k, value);
	err = EXIT_OK;
	if (qopt.kernel) {
		uint64_t none[LEDGER_NKINDS];
		int i;

		for (i = 0; i < LEDGER_NKINDS; i++)
			none[i] = LEDGER_UNLIMITED;
		err = set_kernel(k, value, ledger_get_scope(l, &qopt.scope, &st) == 0 ? st.limit : none);
		if (err == SET_KERNEL_PENDING) {
			/*
			 * without BPF LSM, rdma.max holds object kinds only all together: each kind's limit is a step
			 * toward that, kept in the ledger (the interceptor holds it meanwhile); exit 1 says the kernel
			 * does not hold it yet
			 */
			err = EXIT_FAIL;
		} else if (err && old != value) {
			quota_scope_desc(&qopt.scope, desc, sizeof(desc));
			if (ledger_set_limit(l, &qopt.scope, k, old))
				pr_err("cannot put back the ledger's %s limit on %s (%s): %s", ledger_kind_names[k], desc,
				       quota_fmt_value(k, old, vbuf, sizeof(vbuf)), ledger_error());
			else if (!qopt.hook) /* the hook says itself that nothing of the container's applies */
				pr_err("cannot %s %s on %s: nothing changed (the ledger's limit stays %s)", verb,
				       ledger_kind_names[k], desc, quota_fmt_value(k, old, vbuf, sizeof(vbuf)));
		}
	}
	close_ledger(l, created && err);
	return err;
}

int quota_cgroup_apply(const char *dir, const uint64_t limit[LEDGER_NKINDS], bool set)
{
	char msg[PATH_MAX * 2 + 128];
	int k, j, ret, failed = 0;

	if (set_cgroup_scope(dir, msg, sizeof(msg))) {
		pr_err("%s", msg);
		return EXIT_FAIL;
	}
	qopt.nscopes = 1;
	qopt.hook = true;
	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (limit[k] == LEDGER_UNLIMITED)
			continue;
		qopt.kernel = k != LEDGER_WR; /* the kernel does not count wr: the interceptor's cap */
		ret = set_one(k, set ? limit[k] : LEDGER_UNLIMITED, set);
		if (!ret)
			continue;
		if (!set) {
			failed++;
			continue;
		}
		/* all or none: the kinds before the failed one (set_one put the failed one back itself) */
		for (j = 0; j < k; j++)
			if (limit[j] != LEDGER_UNLIMITED) {
				qopt.kernel = j != LEDGER_WR;
				set_one(j, LEDGER_UNLIMITED, false);
			}
		return EXIT_FAIL;
	}
	return failed ? EXIT_FAIL : EXIT_OK;
}

/* ---- gc, init ----------------------------------------------------------------------------------- */

struct gone_cg {
	struct ledger_scope sc[LEDGER_MAX_CGROUPS];
	unsigned int n;
};

static int find_gone_cgroup(const struct ledger_scope_stat *st, void *arg)
{
	struct gone_cg *g = arg;
	char root[PATH_MAX], dir[PATH_MAX + LEDGER_CGROUP_MAX];

	if (st->scope.type != LEDGER_SCOPE_CGROUP || g->n == LEDGER_MAX_CGROUPS)
		return 0;
	cgroup2_root(root, sizeof(root));
	snprintf(dir, sizeof(dir), "%s%s", root, st->scope.name);
	if (access(dir, F_OK) && errno == ENOENT)
		g->sc[g->n++] = st->scope;
	return 0;
}

/* The limits of cgroups that no longer exist (a job step's cgroup after a node failure): dropped. */
static int gc_cgroups(struct ledger *l, unsigned int *removed)
{
	struct gone_cg *g = calloc(1, sizeof(*g));
	unsigned int i;
	int k, err = 0;

	if (!g)
		return -ENOMEM;
	ledger_foreach_scope(l, find_gone_cgroup, g);
	for (i = 0; i < g->n && !err; i++) {
		for (k = 0; k < LEDGER_NKINDS && !err; k++)
			err = ledger_set_limit(l, &g->sc[i], k, LEDGER_UNLIMITED);
		if (!err)
			(*removed)++;
	}
	free(g);
	return err;
}

static int do_gc(void)
{
	struct ledger *l;
	struct kq *q;
	unsigned int n = 0, kn = 0, kleft = 0, cgn = 0, pods = 0;
	bool kernel = false, policy, pods_gc;
	char root[PATH_MAX];
	int err;

	if (qopt.nargs > 1 || qopt.nscopes) {
		fprintf(stderr, "%s: gc takes no argument and no scope\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	/* the owner of the policy also drops stale pid limits; others only reclaim usage */
	err = ledger_open(qopt.ledger, LEDGER_POLICY_RW | (qopt.create ? LEDGER_CREATE : 0), &l);
	policy = !err;
	if (err == -EACCES)
		err = ledger_open(qopt.ledger, 0, &l);
	if (err) {
		pr_err("cannot open the ledger: %s", ledger_error());
		return EXIT_FAIL;
	}
	err = ledger_gc(l, &n);
	if (!err && policy)
		err = gc_cgroups(l, &cgn);
	ledger_close(l);
	if (err) {
		pr_err("gc failed: %s%s", strerror(-err),
		       err == -EBUSY ? " (a process is stopped in the middle of an operation; try again)" : "");
		return EXIT_FAIL;
	}
	cgroup2_root(root, sizeof(root));
	/* the names of pods whose cgroups are gone (the OCI hook's files; only root may remove them) */
	err = podname_gc(root, &pods);
	pods_gc = !err;
	if (err && err != -EACCES && err != -EPERM && err != -EROFS) {
		pr_err("gc of the pods' names in %s failed: %s", podname_dir(), strerror(-err));
		return EXIT_FAIL;
	}
	/* the kernel's limits of processes and cgroups that are gone (root only: the maps are root's) */
	if (!kq_open(false, &q)) {
		err = kq_gc(q, root, &kn, &kleft);
		kq_close(q);
		if (err) {
			pr_err("gc of the kernel's limits failed: %s", strerror(-err));
			return EXIT_FAIL;
		}
		kernel = true;
	}
	out_open_object(NULL);
	print_uint(PRINT_ANY, "reclaimed", "reclaimed %" PRIu64 " dead process", n);
	print_text("%s\n", n == 1 ? "" : "es");
	print_uint(PRINT_JSON, "cgroups_removed", NULL, cgn);
	if (cgn)
		print_text("removed the limits of %u cgroup%s that %s gone\n", cgn, cgn == 1 ? "" : "s",
			   cgn == 1 ? "is" : "are");
	if (pods_gc)
		print_uint(PRINT_JSON, "pod_names_removed", NULL, pods);
	if (pods)
		print_text("removed the names of %u pod%s whose cgroup%s gone\n", pods, pods == 1 ? "" : "s",
			   pods == 1 ? " is" : "s are");
	if (kernel) {
		print_uint(PRINT_ANY, "kernel_scopes_removed", "removed the kernel limits of %" PRIu64, kn);
		print_text(" process%s and cgroup%s that are gone\n", kn == 1 ? "" : "es", kn == 1 ? "" : "s");
		print_uint(PRINT_JSON, "kernel_unfinished_removed", NULL, kleft);
		if (kleft)
			print_text("removed %u kernel scope%s that a killed 'quota set --kernel' left without its limit "
				   "(set %s again to enforce %s)\n", kleft, kleft == 1 ? "" : "s", kleft == 1 ? "it" : "them",
				   kleft == 1 ? "it" : "them");
	}
	out_close_object();
	return EXIT_OK;
}

static int do_init(void)
{
	const char *path = qopt.ledger ? qopt.ledger : ledger_default_path();
	int err;

	if (qopt.nargs > 1 || qopt.nscopes) {
		fprintf(stderr, "%s: init takes no argument and no scope\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	/* replacing a ledger is changing its policy: only its owner may */
	if (!access(path, F_OK) && access(path, W_OK)) {
		pr_err("cannot recreate the ledger: %s: permission denied (only the owner of the policy file may)", path);
		return EXIT_FAIL;
	}
	err = ledger_init_procs(path, qopt.procs ? qopt.procs : LEDGER_DEFAULT_PROCS);
	if (err == -EACCES || err == -EPERM) {
		pr_err("cannot create the ledger: %s: permission denied", path);
		return EXIT_FAIL;
	}
	if (err) {
		pr_err("cannot create the ledger: %s", ledger_error());
		return EXIT_FAIL;
	}
	out_open_object(NULL);
	print_string(PRINT_ANY, "ledger", "created an empty ledger at %s", path);
	print_uint(PRINT_ANY, "procs", " for %" PRIu64 " processes\n", qopt.procs ? qopt.procs : LEDGER_DEFAULT_PROCS);
	out_close_object();
	return EXIT_OK;
}

/* quota kernel repair: enforce again kernel limits that nothing enforces (their programs detached). */
static int do_kernel_repair(void)
{
	char why[512], root[PATH_MAX];
	struct kq *q;
	int up, err;

	if (qopt.nargs != 2) {
		fprintf(stderr, "%s: kernel repair takes no value\nTry '%s --help' for more information.\n", util_prog,
			util_prog);
		return EXIT_USAGE;
	}
	err = kq_open(false, &q);
	if (err == -ENOENT) {
		out_open_object(NULL);
		print_bool(PRINT_JSON, "kernel_enforced", NULL, true);
		print_text("no kernel limits (the kernel quota programs are not loaded): nothing to repair\n");
		out_close_object();
		return EXIT_OK;
	}
	if (err) {
		pr_err("cannot open the kernel quota programs: %s", kq_error());
		return EXIT_FAIL;
	}
	up = kq_enforcement(q, why, sizeof(why));
	if (up == 0) {
		print_string(PRINT_FP, NULL, "kernel limits were not enforced: %s; setting every one again\n", why);
		cgroup2_root(root, sizeof(root));
		err = kq_repair(q, root);
		if (err) {
			pr_err("cannot enforce the kernel limits again: %s", kq_error());
			kq_close(q);
			return EXIT_FAIL;
		}
		up = kq_enforcement(q, why, sizeof(why));
	}
	kq_close(q);
	if (up != 1) {
		pr_err("kernel limits are still not enforced: %s", up < 0 ? strerror(-up) : why);
		return EXIT_FAIL;
	}
	out_open_object(NULL);
	print_bool(PRINT_JSON, "kernel_enforced", NULL, true);
	print_text("kernel limits: enforced\n");
	out_close_object();
	return EXIT_OK;
}

/*
 * Whether this process may load and pin the kernel quota programs: CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON
 * (BPF LSM programs are perfmon programs), and root's bpffs; why not into why.
 */
static bool may_load_kq(char *why, size_t len)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
#define HAS(c) (d[(c) / 32].effective & (1u << ((c) % 32)))

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &hdr, d)) {
		snprintf(why, len, "cannot read this process's capabilities: %s", strerror(errno));
		return false;
	}
	if (!HAS(CAP_SYS_ADMIN) && !(HAS(CAP_BPF) && HAS(CAP_PERFMON))) {
		snprintf(why, len, "it loads and pins the kernel quota programs, which needs root (CAP_SYS_ADMIN, or "
			 "CAP_BPF with CAP_PERFMON; missing:%s%s%s)", HAS(CAP_SYS_ADMIN) ? "" : " CAP_SYS_ADMIN",
			 HAS(CAP_BPF) ? "" : " CAP_BPF", HAS(CAP_PERFMON) ? "" : " CAP_PERFMON");
		return false;
	}
	return true;
#undef HAS
}

/* quota kernel unknown-driver-methods [pass|refuse]: the host's choice for driver methods not in the table. */
static int do_kernel(void)
{
	static const char *const opts[] = { "unknown-driver-methods", "repair", NULL };
	static const char *const vals[] = { "pass", "refuse", NULL };
	char why[512];
	struct kq *q;
	bool pass = false;
	int v, err;

	if (qopt.nargs < 2 || qopt.nargs > 3 || qopt.nscopes) {
		fprintf(stderr, "%s: kernel takes repair, or a setting (unknown-driver-methods) and optionally its "
			"value (pass, refuse); no scope\nTry '%s --help' for more information.\n", util_prog, util_prog);
		return EXIT_USAGE;
	}
	v = match_word(qopt.args[1], opts, 2);
	if (v < 0)
		return word_error("kernel setting", qopt.args[1], opts, 2, v);
	if (v == 1)
		return do_kernel_repair();
	if (qopt.nargs == 2) {
		err = kq_drv_get_pass_unknown(&pass);
		if (err && err != -ENOENT) {
			pr_err("cannot read the kernel quota setting: %s", strerror(-err));
			return EXIT_FAIL;
		}
		out_open_object(NULL);
		print_string(PRINT_ANY, "unknown_driver_methods", "unknown-driver-methods %s\n", pass ? "pass" : "refuse");
		out_close_object();
		return EXIT_OK;
	}
	v = match_word(qopt.args[2], vals, 2);
	if (v < 0)
		return word_error("value", qopt.args[2], vals, 2, v);
	if (!may_load_kq(why, sizeof(why))) {
		pr_err("cannot set unknown-driver-methods to %s: %s", vals[v], why);
		return EXIT_FAIL;
	}
	if (!kq_lsm_active(why, sizeof(why))) {
		pr_err("the kernel quota programs need BPF LSM: %s", why);
		return EXIT_FAIL;
	}
	/* loaded (and pinned) if they are not yet: the setting lives in their map */
	err = kq_open(true, &q);
	if (err) {
		pr_err("cannot load the kernel quota programs: %s", kq_error());
		return EXIT_FAIL;
	}
	kq_close(q);
	err = kq_drv_set_pass_unknown(v == 0);
	if (err) {
		pr_err("cannot change the kernel quota setting: %s%s", strerror(-err),
		       err == -ENOENT ? " (programs pinned by an older rdmactl: remove " KQ_PIN_DIR " and set the "
					"kernel limits again)" : "");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cmd_quota(int argc, char **argv)
{
	int i, v;

	/* "-1" would otherwise be taken for an option: say what is wrong with it */
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (argv[i][0] == '-' && argv[i][1] >= '0' && argv[i][1] <= '9') {
			fprintf(stderr, "%s: invalid VALUE '%s': negative numbers are not limits (a count, or "
				"'unlimited')\nTry '%s --help' for more information.\n", util_prog, argv[i], util_prog);
			return EXIT_USAGE;
		}
	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return EXIT_USAGE;
	v = match_word(qopt.args[0], verbs, V_NR);
	if (v < 0)
		return word_error("quota command", qopt.args[0], verbs, V_NR, v);
	if ((v == V_SET || v == V_UNSET) == false && qopt.kernel) {
		fprintf(stderr, "%s: --kernel goes with set and unset\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	if (v != V_INIT && qopt.procs) {
		fprintf(stderr, "%s: --procs goes with init (the number of processes a new ledger holds)\nTry '%s --help' "
			"for more information.\n", util_prog, util_prog);
		return EXIT_USAGE;
	}
	switch (v) {
	case V_SET:
		return do_set(true);
	case V_UNSET:
		return do_set(false);
	case V_SHOW:
		return quota_show();
	case V_GC:
		return do_gc();
	case V_KERNEL:
		return do_kernel();
	default:
		return do_init();
	}
}
