// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl quota: set, unset and show RDMA resource limits in the ledger (and the rdma cgroup backstop). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "kq/kq.h"
#include "kq/kqdrv.h"
#include "ledger/ledger.h"
#include "core/out.h"
#include "rdmactl.h"
#include "core/util.h"

#define MAX_ARGS 8

enum verb { V_SET, V_UNSET, V_SHOW, V_GC, V_INIT, V_KERNEL, V_NR };
static const char *const verbs[] = { "set", "unset", "show", "gc", "init", "kernel", NULL };

static struct {
	const char *ledger;
	unsigned int procs; /* init --procs: process slots of the new ledger, 0 the default */
	bool create;
	bool kernel;
	const char *dev;
	int nscopes;
	const char *scope_opt; /* the first scope option seen, for the conflict message */
	struct ledger_scope scope;
	char cgdir[PATH_MAX]; /* --cgroup: the directory in the cgroup2 mount */
	char *args[MAX_ARGS];
	int nargs;
} o;

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

/* Resolve --cgroup PATH into the directory and the ledger's name ("/a/b" relative to the mount). */
static void parse_cgroup(struct argp_state *state, const char *arg)
{
	char root[PATH_MAX], real[PATH_MAX];
	const char *rel;
	int ret;

	ret = cgroup_resolve(arg, root, sizeof(root), real, sizeof(real));
	switch (ret) {
	case 0:
		break;
	case -EINVAL:
		argp_error(state, "empty cgroup path");
		break;
	case -ENOTDIR:
		argp_error(state, "'%s' is not a cgroup v2 directory (cgroup2 is mounted at %s)", arg, root);
		break;
	case -EXDEV:
		argp_error(state, "'%s' is not under the cgroup2 mount %s", arg, root);
		break;
	default:
		argp_error(state, "cgroup '%s': %s", arg, strerror(-ret));
		break;
	}
	rel = real + strlen(root);
	if (!*rel)
		argp_error(state, "'%s' is the root cgroup: use --global", arg);
	if (ledger_cgroup_normalize(rel, o.scope.name, sizeof(o.scope.name)))
		argp_error(state, "cgroup path '%s' is too long for the ledger (max %d)", rel, LEDGER_CGROUP_MAX - 1);
	snprintf(o.cgdir, sizeof(o.cgdir), "%s", real);
}

/* The process a thread id belongs to (the pid itself for a process, or when /proc cannot tell). */
static pid_t tgid_of(pid_t pid)
{
	char path[64], line[128];
	pid_t tgid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static void add_scope(struct argp_state *state, const char *name)
{
	if (o.nscopes++)
		argp_error(state, "conflicting scopes: %s and %s (give exactly one)", o.scope_opt, name);
	o.scope_opt = name;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	pid_t pid;
	int err;

	switch (key) {
	case OPT_LEDGER:
		if (!*arg)
			argp_error(state, "empty ledger path");
		o.ledger = arg;
		break;
	case OPT_CREATE:
		o.create = true;
		break;
	case OPT_PROCS: {
		uint64_t v;

		if (parse_u64(arg, 1, LEDGER_PROCS_MAX, &v))
			argp_error(state, "--procs '%s': a number of processes from 1 to %u", arg, LEDGER_PROCS_MAX);
		o.procs = (unsigned int)v;
		break;
	}
	case OPT_KERNEL:
		o.kernel = true;
		break;
	case OPT_DEV:
		o.dev = arg;
		break;
	case OPT_PID:
		add_scope(state, "--pid");
		err = parse_pid(arg, true, &pid);
		if (err == -ESRCH)
			argp_error(state, "no process with pid %s", arg);
		if (err)
			argp_error(state, "invalid pid '%s'", arg);
		if (tgid_of(pid) != pid)
			argp_error(state, "%s is a thread of process %d: limits are per process (--pid %d)", arg,
				   (int)tgid_of(pid), (int)tgid_of(pid));
		o.scope.type = LEDGER_SCOPE_PROCESS;
		o.scope.pid = pid;
		break;
	case OPT_JOB:
		add_scope(state, "--job");
		if (!*arg || strlen(arg) >= LEDGER_NAME_MAX)
			argp_error(state, "invalid job name '%s' (1 to %d characters)", arg, LEDGER_NAME_MAX - 1);
		o.scope.type = LEDGER_SCOPE_JOB;
		snprintf(o.scope.name, sizeof(o.scope.name), "%s", arg);
		break;
	case OPT_CGROUP:
		add_scope(state, "--cgroup");
		o.scope.type = LEDGER_SCOPE_CGROUP;
		parse_cgroup(state, arg);
		break;
	case OPT_GLOBAL:
		add_scope(state, "--global");
		o.scope.type = LEDGER_SCOPE_GLOBAL;
		break;
	case ARGP_KEY_ARG:
		if (o.nargs == MAX_ARGS)
			argp_error(state, "too many arguments");
		o.args[o.nargs++] = arg;
		break;
	case ARGP_KEY_END:
		if (!o.nargs)
			argp_error(state, "missing COMMAND (set, unset, show, gc, init, kernel)");
		if (o.dev && !o.kernel)
			argp_error(state, "--dev goes with --kernel");
		if (o.kernel && o.nscopes && o.scope.type == LEDGER_SCOPE_JOB)
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
	"Commands and kinds may be abbreviated to a unique prefix. "
	"Changing limits needs write access to the ledger's policy file (root). Where there is no ledger yet, "
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

static const char *ledger_file(void)
{
	return o.ledger ? o.ledger : ledger_default_path();
}

/* No policy file at all (a fresh host), as opposed to one that cannot be read or is broken. */
static bool ledger_missing(void)
{
	return access(ledger_file(), F_OK) && errno == ENOENT;
}

static int open_error(int err, unsigned int flags)
{
	if (err == -EACCES && (flags & LEDGER_POLICY_RW))
		pr_err("cannot change limits: %s (only the owner of the ledger's policy file may)", ledger_error());
	else if (err == -ENOENT || err == -EACCES)
		pr_err("cannot open the ledger: %s", ledger_error());
	else
		pr_err("cannot open the ledger: %s (recreate an empty one with 'rdmactl quota init')", ledger_error());
	return EXIT_FAIL;
}

static int open_ledger(unsigned int flags, struct ledger **l)
{
	int err = ledger_open(o.ledger, flags | (o.create ? LEDGER_CREATE : 0), l);

	return err ? open_error(err, flags) : 0;
}

/* Root changing a policy that someone else owns: that someone can change it too. */
static void warn_owner(const struct ledger *l)
{
	struct stat st;

	if (geteuid() == 0 && !stat(ledger_path(l), &st) && st.st_uid != 0)
		pr_err("warning: %s is owned by uid %u, who can change these limits too (recreate it as root "
		       "with 'rdmactl quota init')",
		       ledger_path(l), (unsigned int)st.st_uid);
}

static const char *scope_desc(const struct ledger_scope *s, char *buf, size_t len)
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

static const char *fmt_value(enum ledger_kind k, uint64_t v, char *buf, size_t len)
{
	if (v == LEDGER_UNLIMITED)
		snprintf(buf, len, "unlimited");
	else if (k == LEDGER_MR_BYTES)
		fmt_size(v, buf, len);
	else
		snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* The object kinds the kernel counts together as hca_object. */
static bool is_object_kind(int k)
{
	return kind_rdmacg[k] == KIND_CG_O;
}

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

/*
 * Write the cgroup's rdma.max from its ledger limits: hca_handle = ctx, hca_object = sum of the object
 * kinds (max as soon as one is unlimited, so the kernel is never stricter than the ledger).
 */
static int write_kernel(const uint64_t *limit)
{
	char path[PATH_MAX + 16], cur[4096], line[256], handle[32], object[32], *save = NULL, *tok;
	uint64_t sum = 0;
	bool unl = false;
	int k, n = 0;
	FILE *f;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (!is_object_kind(k))
			continue;
		if (limit[k] == LEDGER_UNLIMITED || sum + limit[k] < sum || sum + limit[k] > INT32_MAX)
			unl = true;
		else
			sum += limit[k];
	}
	if (limit[LEDGER_CTX] == LEDGER_UNLIMITED || limit[LEDGER_CTX] > INT32_MAX)
		snprintf(handle, sizeof(handle), "max");
	else
		snprintf(handle, sizeof(handle), "%" PRIu64, limit[LEDGER_CTX]);
	if (unl)
		snprintf(object, sizeof(object), "max");
	else
		snprintf(object, sizeof(object), "%" PRIu64, sum);

	snprintf(path, sizeof(path), "%s/rdma.max", o.cgdir);
	if (read_file(path, cur, sizeof(cur))) {
		pr_err("cannot set the kernel limit: %s: %s (enable the rdma controller: echo +rdma > "
		       "PARENT/cgroup.subtree_control)",
		       path, strerror(errno));
		return EXIT_FAIL;
	}
	for (tok = strtok_r(cur, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		char dev[64];

		if (sscanf(tok, "%63s", dev) != 1 || (o.dev && strcmp(dev, o.dev)))
			continue;
		f = fopen(path, "we");
		if (!f) {
			pr_err("cannot set the kernel limit: %s: %s", path, strerror(errno));
			return EXIT_FAIL;
		}
		snprintf(line, sizeof(line), "%s hca_handle=%s hca_object=%s\n", dev, handle, object);
		if (fputs(line, f) == EOF || fclose(f) == EOF) {
			pr_err("cannot set the kernel limit: writing '%.*s' to %s: %s", (int)strlen(line) - 1, line,
			       path, strerror(errno));
			return EXIT_FAIL;
		}
		pr_debug("%s: %.*s", path, (int)strlen(line) - 1, line);
		n++;
	}
	if (!n) {
		pr_err("cannot set the kernel limit: %s %s in %s (see 'rdma dev')", o.dev ? "no device" : "no RDMA devices",
		       o.dev ? o.dev : "listed", path);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The kernel's scope of the command's scope (not for jobs). */
static int kq_scope_of(struct kq_scope *sc)
{
	memset(sc, 0, sizeof(*sc));
	switch (o.scope.type) {
	case LEDGER_SCOPE_CGROUP:
		return kq_scope_cgroup(o.cgdir, sc);
	case LEDGER_SCOPE_PROCESS:
		sc->type = KQ_SCOPE_PID;
		sc->id = (uint64_t)o.scope.pid;
		return 0;
	case LEDGER_SCOPE_GLOBAL:
		sc->type = KQ_SCOPE_GLOBAL;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * --kernel: the BPF LSM programs enforce value (LEDGER_UNLIMITED lifts the limit); without BPF LSM, a
 * cgroup's rdma.max as far as it can hold the ledger's limits (limit: the scope's ledger limits).
 */
static int set_kernel(int k, uint64_t value, const uint64_t *limit)
{
	char why[600], desc[LEDGER_CGROUP_MAX + 16];
	struct kq_scope sc;
	struct kq *q;
	int err, i;

	if (kq_lsm_active(why, sizeof(why))) {
		err = kq_scope_of(&sc);
		if (err) {
			pr_err("cannot set the kernel limit: %s", kq_error());
			return EXIT_FAIL;
		}
		/* an unset on a host where nothing was ever loaded has nothing to lift */
		err = kq_open(value != LEDGER_UNLIMITED, &q);
		if (err == -ENOENT && value == LEDGER_UNLIMITED)
			return EXIT_OK;
		if (err) {
			pr_err("cannot set the kernel limit: %s", kq_error());
			return EXIT_FAIL;
		}
		err = kq_set(q, &sc, o.scope.type == LEDGER_SCOPE_CGROUP ? o.cgdir : NULL, k,
			     value == LEDGER_UNLIMITED ? KQ_UNLIMITED : value);
		kq_close(q);
		if (err) {
			pr_err("cannot set the kernel limit on %s: %s", scope_desc(&o.scope, desc, sizeof(desc)),
			       kq_error());
			return EXIT_FAIL;
		}
		return EXIT_OK;
	}
	if (o.scope.type != LEDGER_SCOPE_CGROUP) {
		pr_err("the kernel cannot enforce limits on %s: BPF LSM is not active (%s); add bpf to the "
		       "kernel's lsm= parameter (lsm=...,bpf) and reboot, or limit a cgroup (rdma.max)",
		       scope_desc(&o.scope, desc, sizeof(desc)), why);
		return EXIT_FAIL;
	}
	pr_err("note: BPF LSM is not active (%s): writing the cgroup's rdma.max instead, which counts only "
	       "contexts and all objects together (add bpf to the kernel's lsm= parameter for per-kind limits)", why);
	err = write_kernel(limit);
	if (err || value == LEDGER_UNLIMITED)
		return err;
	if (k == LEDGER_MR_BYTES) {
		pr_err("rdma.max cannot hold an mr_bytes limit: the kernel does not enforce it (the interceptor does)");
		return EXIT_FAIL;
	}
	if (is_object_kind(k))
		for (i = 0; i < LEDGER_NKINDS; i++)
			if (is_object_kind(i) && limit[i] == LEDGER_UNLIMITED) {
				pr_err("rdma.max cannot hold a %s limit alone: it counts pd, cq, qp, srq, mr, ah, mw, xrcd "
				       "and wq together, and stays at max until each of them has a limit (%s has none)",
				       ledger_kind_names[k], ledger_kind_names[i]);
				return EXIT_FAIL;
			}
	return EXIT_OK;
}

/* ---- set / unset -------------------------------------------------------------------------------- */

static int do_set(bool set)
{
	struct ledger_scope_stat st;
	struct ledger *l;
	char desc[LEDGER_CGROUP_MAX + 16], vbuf[32];
	uint64_t value = LEDGER_UNLIMITED;
	int k, err, want = set ? 3 : 2;
	const char *verb = set ? "set" : "unset";
	bool created;

	if (o.nargs < want) {
		fprintf(stderr, "%s: %s: missing %s\nTry '%s --help' for more information.\n", util_prog, verb,
			o.nargs < 2 ? "KIND" : "VALUE", util_prog);
		return EXIT_USAGE;
	}
	if (o.nargs > want) {
		fprintf(stderr, "%s: %s: unexpected argument '%s'\nTry '%s --help' for more information.\n",
			util_prog, verb, o.args[want], util_prog);
		return EXIT_USAGE;
	}
	k = match_word(o.args[1], ledger_kind_names, LEDGER_NKINDS);
	if (k < 0)
		return word_error("kind", o.args[1], ledger_kind_names, LEDGER_NKINDS, k);
	if (o.kernel && k == LEDGER_WR) {
		fprintf(stderr, "%s: --kernel: wr is a work-request depth cap that the kernel does not count; the "
			"interceptor enforces it (leave out --kernel)\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	if (set && strcmp(o.args[2], "unlimited") && strcmp(o.args[2], "max")) {
		if (k == LEDGER_MR_BYTES)
			err = parse_size(o.args[2], LEDGER_UNLIMITED - 1, &value);
		else
			err = parse_u64(o.args[2], 0, LEDGER_UNLIMITED - 1, &value);
		if (err) {
			fprintf(stderr, "%s: invalid VALUE '%s' for %s: %s (%s)\nTry '%s --help' for more information.\n",
				util_prog, o.args[2], ledger_kind_names[k],
				err == -ERANGE	       ? "out of range"
				: k == LEDGER_MR_BYTES ? "not a size (suffixes: K, M, G, T)"
						       : "not a whole number",
				k == LEDGER_MR_BYTES ? "a size like 4096, 64K, 2G, or 'unlimited'"
						     : "a count, or 'unlimited'",
				util_prog);
			return EXIT_USAGE;
		}
	}
	if (!o.nscopes) {
		fprintf(stderr, "%s: %s: missing scope (--pid PID, --job NAME, --cgroup PATH or --global)\n"
			"Try '%s --help' for more information.\n", util_prog, verb, util_prog);
		return EXIT_USAGE;
	}
	/* root on a fresh host: the first limit creates the ledger, as 'quota init' would (root owns the policy) */
	created = geteuid() == 0 && ledger_missing();
	if (open_ledger(LEDGER_POLICY_RW | (created ? LEDGER_CREATE : 0), &l))
		return EXIT_FAIL;
	if (created)
		pr_debug("no ledger at %s: created an empty one", ledger_path(l));
	warn_owner(l);
	err = ledger_set_limit(l, &o.scope, k, value);
	if (err) {
		if (err == -EACCES)
			pr_err("cannot change limits: %s", ledger_error());
		else
			pr_err("cannot %s %s on %s: %s", verb, ledger_kind_names[k],
			       scope_desc(&o.scope, desc, sizeof(desc)), ledger_error());
		ledger_close(l);
		return err == -ENOENT || err == -ESRCH ? EXIT_USAGE : EXIT_FAIL;
	}
	pr_debug("%s limit on %s: %s", ledger_kind_names[k], scope_desc(&o.scope, desc, sizeof(desc)),
		 fmt_value(k, value, vbuf, sizeof(vbuf)));
	err = EXIT_OK;
	if (o.kernel) {
		uint64_t none[LEDGER_NKINDS];
		int i;

		for (i = 0; i < LEDGER_NKINDS; i++)
			none[i] = LEDGER_UNLIMITED;
		err = set_kernel(k, value, ledger_get_scope(l, &o.scope, &st) == 0 ? st.limit : none);
	}
	ledger_close(l);
	return err;
}

/* ---- show --------------------------------------------------------------------------------------- */

struct kernel_line {
	char dev[64];
	char handle[24];
	char object[24];
};

/* Parse rdma.max / rdma.current of a cgroup ("rxe0 hca_handle=1 hca_object=max"). */
static int read_kernel(const char *cgname, const char *file, struct kernel_line *out, int max)
{
	char root[PATH_MAX], path[PATH_MAX * 2], buf[4096], *save = NULL, *tok;
	int n = 0;

	cgroup2_root(root, sizeof(root));
	snprintf(path, sizeof(path), "%s%s/%s", root, cgname, file);
	if (read_file(path, buf, sizeof(buf)))
		return 0;
	for (tok = strtok_r(buf, "\n", &save); tok && n < max; tok = strtok_r(NULL, "\n", &save)) {
		if (sscanf(tok, "%63s hca_handle=%23s hca_object=%23s", out[n].dev, out[n].handle, out[n].object) == 3)
			n++;
	}
	return n;
}

/* A count from rdma.max or rdma.current: JSON null for "max", a number when it is one, else the word as is. */
static void print_kernel_count(const char *key, const char *fmt, const char *s)
{
	char *end;
	unsigned long long v;

	print_string(PRINT_FP, NULL, fmt, s);
	if (!strcmp(s, "max")) {
		print_null(PRINT_JSON, key, NULL);
		return;
	}
	v = strtoull(s, &end, 10);
	if (*end)
		print_string(PRINT_JSON, key, NULL, s);
	else
		print_int(PRINT_JSON, key, NULL, (int64_t)v);
}

/* A cgroup's rdma.max or rdma.current: an object keyed by device in JSON, a line per device in text. */
static void print_kernel(const char *key, const char *file, const struct kernel_line *kl, int n)
{
	int i;

	out_open_object(key);
	for (i = 0; i < n; i++) {
		print_text("  %-12s %s", file, kl[i].dev);
		out_open_object(kl[i].dev);
		print_kernel_count("hca_handle", " hca_handle=%s", kl[i].handle);
		print_kernel_count("hca_object", " hca_object=%s", kl[i].object);
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
	print_string(PRINT_FP, NULL, " %10s", dash ? "-" : fmt_value(k, v, buf, sizeof(buf)));
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
static bool rdmacg_limits(int k, const struct kernel_line *kl, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (k == LEDGER_CTX && strcmp(kl[i].handle, "max"))
			return true;
		if (is_object_kind(k) && strcmp(kl[i].object, "max"))
			return true;
	}
	return false;
}

static int show_scope(const struct ledger_scope_stat *st, void *arg)
{
	struct kernel_line kmax[16], kcur[16];
	uint64_t kq_max[KQ_NK], kq_refused[KQ_NK], kq_killed[KQ_NK];
	int64_t kq_use[KQ_NK];
	int nmax = 0, ncur = 0, k, rows = 0;
	bool kern;

	(void)arg;
	if (st->scope.type == LEDGER_SCOPE_CGROUP) {
		nmax = read_kernel(st->scope.name, "rdma.max", kmax, 16);
		ncur = read_kernel(st->scope.name, "rdma.current", kcur, 16);
	}
	kern = kernel_of(&st->scope, kq_max, kq_use, kq_refused, kq_killed);
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
	case LEDGER_SCOPE_CGROUP:
		print_string(PRINT_ANY, "cgroup", "cgroup %s", st->scope.name);
		break;
	default:
		print_text("global");
		break;
	}
	/* a process scope counts one process: the text says whether it is attached */
	if (st->scope.type == LEDGER_SCOPE_PROCESS) {
		print_uint(PRINT_JSON, "nprocs", NULL, st->nprocs);
		print_text(":%s\n", st->nprocs ? "" : " (not attached to the ledger)");
	} else {
		print_uint(PRINT_ANY, "nprocs", ": %" PRIu64 " process", st->nprocs);
		print_text("%s\n", st->nprocs == 1 ? "" : "es");
	}
	out_open_object("kinds");
	for (k = 0; k < LEDGER_NKINDS; k++) {
		uint64_t limit = st->limit[k], usage = st->usage[k];
		bool unlimited = limit == LEDGER_UNLIMITED;

		/* the table leaves out what neither limits nor holds anything (-v shows every kind); JSON has all */
		bool kl = kern && k < KQ_NK && kq_max[k] != KQ_UNLIMITED;
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
			print_amount("kernel_limit", k, kq_max[k], kq_max[k] == KQ_UNLIMITED, false);
			print_amount("kernel_usage", k, (uint64_t)kq_use[k], false, false);
			print_uint(PRINT_JSON, "kernel_refused", NULL, kq_refused[k]);
			print_uint(PRINT_JSON, "kernel_killed", NULL, kq_killed[k]);
		} else if (kern) {
			print_text(" %10s %10s", "-", "-");
		}
		/* who stops a creation past the limit: the interceptor (ledger), the BPF LSM programs, rdma.max */
		out_open_array("enforced_by");
		print_text("  ");
		if (!unlimited)
			print_string(PRINT_ANY, NULL, "%s", "interceptor");
		if (kl)
			print_string(PRINT_ANY, NULL, unlimited ? "%s" : ",%s", "kernel");
		if (cg)
			print_string(PRINT_ANY, NULL, unlimited && !kl ? "%s" : ",%s", "rdma.max");
		if (unlimited && !kl && !cg)
			print_text("-");
		out_close_array();
		out_close_object();
		print_nl();
	}
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

/* EXIT_FAIL when kernel limits exist that nothing enforces (said on stderr, and in JSON). */
static int show_end(void)
{
	uint64_t lost;
	char why[512];
	int err, up = 1;

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
	/* objects the kernel's programs could not record: no kernel limit counts them */
	if (show_kq_open() && !kq_lost(show_kq, &lost, &err)) {
		print_uint(PRINT_JSON, "kernel_lost", NULL, lost);
		if (lost) {
			print_int(PRINT_JSON, "kernel_lost_errno", NULL, err);
			print_uint(PRINT_FP, NULL, "kernel: %" PRIu64 " objects not recorded ", lost);
			print_string(PRINT_FP, NULL, "(the last: %s): no kernel limit counts them\n",
				     err == E2BIG ? "the kernel quota programs' table is full" : strerror(err));
		}
	}
	out_open_array("unknown_driver_methods");
	kq_drv_unknown_foreach(show_drv_one, NULL);
	out_close_array();
	out_close_object();
	return up == 1 ? EXIT_OK : EXIT_FAIL;
}

static void no_entry(void)
{
	char desc[LEDGER_CGROUP_MAX + 16];

	pr_err("no ledger entry for %s (no limits, no managed process)", scope_desc(&o.scope, desc, sizeof(desc)));
}

/*
 * No ledger yet: nothing is limited, nobody is managed. JSON is the document an empty ledger gives (its
 * global scope, or the process asked for); a job or cgroup has no entry there either. Text says so in words.
 */
static int show_missing(void)
{
	struct ledger_scope_stat st = { .scope.type = LEDGER_SCOPE_GLOBAL };
	int k;

	pr_debug("no ledger at %s", ledger_file());
	if (o.nscopes) {
		st.scope = o.scope;
		if (o.scope.type == LEDGER_SCOPE_JOB || o.scope.type == LEDGER_SCOPE_CGROUP ||
		    (o.scope.type == LEDGER_SCOPE_PROCESS && !o.scope.start_time &&
		     ledger_pid_start_time(o.scope.pid, &st.scope.start_time))) {
			no_entry();
			return EXIT_FAIL;
		}
	}
	print_text("no limits set\n");
	if (!out_is_json())
		return EXIT_OK;
	for (k = 0; k < LEDGER_NKINDS; k++)
		st.limit[k] = LEDGER_UNLIMITED;
	show_begin(ledger_file(), 0, 0, LEDGER_DEFAULT_PROCS); /* as the ledger quota init makes */
	show_scope(&st, NULL);
	return show_end();
}

static int do_show(void)
{
	struct ledger_scope_stat st;
	unsigned int in_use = 0, capacity;
	struct ledger *l;
	uint64_t denials = 0;
	int err, rc;

	if (o.nargs > 1) {
		fprintf(stderr, "%s: show: unexpected argument '%s'\nTry '%s --help' for more information.\n", util_prog,
			o.args[1], util_prog);
		return EXIT_USAGE;
	}
	if (o.kernel) {
		fprintf(stderr, "%s: show: --kernel goes with set and unset (show prints rdma.max and rdma.current "
			"of cgroups anyway)\nTry '%s --help' for more information.\n", util_prog, util_prog);
		return EXIT_USAGE;
	}
	err = ledger_open(o.ledger, o.create ? LEDGER_CREATE : 0, &l);
	if (err == -ENOENT && ledger_missing())
		return show_missing();
	if (err)
		return open_error(err, 0);
	/* reclaim dead holders first, so that they are not counted (needs write access to the usage file) */
	err = ledger_gc(l, NULL);
	if (err && err != -EACCES)
		pr_debug("gc: %s", strerror(-err));
	if (o.nscopes && ledger_get_scope(l, &o.scope, &st)) {
		no_entry();
		ledger_close(l);
		return EXIT_FAIL;
	}
	ledger_denial_counts(l, &denials, NULL);
	capacity = ledger_capacity(l, &in_use);
	show_begin(ledger_path(l), denials, in_use, capacity);
	if (o.nscopes)
		show_scope(&st, NULL);
	else
		ledger_foreach_scope(l, show_scope, NULL);
	rc = show_end();
	if (!o.nscopes) {
		print_uint(PRINT_FP, NULL, "denials: %" PRIu64 "\n", denials);
		print_uint(PRINT_FP, NULL, "process slots: %" PRIu64, in_use);
		print_uint(PRINT_FP, NULL, " of %" PRIu64 " in use\n", capacity);
	}
	ledger_close(l);
	return rc;
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
	unsigned int n = 0, kn = 0, cgn = 0;
	bool kernel = false, policy;
	int err;

	if (o.nargs > 1 || o.nscopes) {
		fprintf(stderr, "%s: gc takes no argument and no scope\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	/* the owner of the policy also drops stale pid limits; others only reclaim usage */
	err = ledger_open(o.ledger, LEDGER_POLICY_RW | (o.create ? LEDGER_CREATE : 0), &l);
	policy = !err;
	if (err == -EACCES)
		err = ledger_open(o.ledger, 0, &l);
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
	/* the kernel's limits of processes and cgroups that are gone (root only: the maps are root's) */
	if (!kq_open(false, &q)) {
		char root[PATH_MAX];

		cgroup2_root(root, sizeof(root));
		err = kq_gc(q, root, &kn);
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
	if (kernel) {
		print_uint(PRINT_ANY, "kernel_scopes_removed", "removed the kernel limits of %" PRIu64, kn);
		print_text(" process%s and cgroup%s that are gone\n", kn == 1 ? "" : "es", kn == 1 ? "" : "s");
	}
	out_close_object();
	return EXIT_OK;
}

static int do_init(void)
{
	const char *path = o.ledger ? o.ledger : ledger_default_path();
	int err;

	if (o.nargs > 1 || o.nscopes) {
		fprintf(stderr, "%s: init takes no argument and no scope\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	/* replacing a ledger is changing its policy: only its owner may */
	if (!access(path, F_OK) && access(path, W_OK)) {
		pr_err("cannot recreate the ledger: %s: permission denied (only the owner of the policy file may)", path);
		return EXIT_FAIL;
	}
	err = ledger_init_procs(path, o.procs ? o.procs : LEDGER_DEFAULT_PROCS);
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
	print_uint(PRINT_ANY, "procs", " for %" PRIu64 " processes\n", o.procs ? o.procs : LEDGER_DEFAULT_PROCS);
	out_close_object();
	return EXIT_OK;
}

/* quota kernel repair: enforce again kernel limits that nothing enforces (their programs detached). */
static int do_kernel_repair(void)
{
	char why[512], root[PATH_MAX];
	struct kq *q;
	int up, err;

	if (o.nargs != 2) {
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

/* quota kernel unknown-driver-methods [pass|refuse]: the host's choice for driver methods not in the table. */
static int do_kernel(void)
{
	static const char *const opts[] = { "unknown-driver-methods", "repair", NULL };
	static const char *const vals[] = { "pass", "refuse", NULL };
	char why[512];
	struct kq *q;
	bool pass = false;
	int v, err;

	if (o.nargs < 2 || o.nargs > 3 || o.nscopes) {
		fprintf(stderr, "%s: kernel takes repair, or a setting (unknown-driver-methods) and optionally its "
			"value (pass, refuse); no scope\nTry '%s --help' for more information.\n", util_prog, util_prog);
		return EXIT_USAGE;
	}
	v = match_word(o.args[1], opts, 2);
	if (v < 0)
		return word_error("kernel setting", o.args[1], opts, 2, v);
	if (v == 1)
		return do_kernel_repair();
	if (o.nargs == 2) {
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
	v = match_word(o.args[2], vals, 2);
	if (v < 0)
		return word_error("value", o.args[2], vals, 2, v);
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
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_USAGE;
	v = match_word(o.args[0], verbs, V_NR);
	if (v < 0)
		return word_error("quota command", o.args[0], verbs, V_NR, v);
	if ((v == V_SET || v == V_UNSET) == false && o.kernel) {
		fprintf(stderr, "%s: --kernel goes with set and unset\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	if (v != V_INIT && o.procs) {
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
		return do_show();
	case V_GC:
		return do_gc();
	case V_KERNEL:
		return do_kernel();
	default:
		return do_init();
	}
}
