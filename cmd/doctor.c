// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdmactl doctor: what this node can enforce, and why not. One line a check (ok, warn, fail, absent) with a
 * reason that names the fix: BPF LSM, bpffs and the pins, the pinned programs against this binary, the rdma
 * cgroup controller and what rdma.max can hold, the ledger, the interceptor, the node policy and each of its
 * limits, the CDI specs and the exporter's sources. Exit 1 when something the policy (or, without one,
 * kernel limits at all) needs cannot be done here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>

#include "core/cgroup.h"
#include "core/kinds.h"
#include "core/out.h"
#include "core/proc.h"
#include "core/util.h"
#include "engines/policy.h"
#include "export/metrics.h"
#include "kq/backstop.h"
#include "kq/doctor.h"
#include "kq/kq.h"
#include "ledger/ledger.h"
#include "rdmactl.h"

#define BPFFS "/sys/fs/bpf"

enum { OPT_LEDGER = 0x100, OPT_CGROUP, OPT_CDI_DIR, OPT_EXE };

static struct {
	const char *policy, *ledger, *cgroup, *cdi_dir, *exe;
} dopt;

static const struct argp_option options[] = {
	{ "policy", 'P', "FILE", 0, "the node policy to check (default $" POLICY_ENV ", else " POLICY_PATH ")", 1 },
	{ "ledger", OPT_LEDGER, "PATH", 0, "the quota ledger (default $RDMACTL_LEDGER, else /dev/shm/rdmactl.ledger)", 1 },
	{ "cgroup", OPT_CGROUP, "DIR", 0, "also check that cgroups below DIR (where the runtime puts containers: "
					  "kubepods.slice, machine.slice) get rdma.max", 1 },
	{ "cdi-dir", OPT_CDI_DIR, "DIR", 0, "where the CDI specs are (default /etc/cdi)", 1 },
	{ "exe", OPT_EXE, "PATH", 0, "the rdmactl the CDI specs' hooks run (default: this one), as given to 'rdmactl "
				     "cdi generate --exe'", 1 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'P':
		if (arg[0] != '/')
			argp_error(state, "--policy %s: " POLICY_ABS_WHY, arg);
		dopt.policy = arg;
		break;
	case OPT_LEDGER:
	case OPT_CGROUP:
	case OPT_CDI_DIR:
		if (!*arg)
			argp_error(state, "empty path");
		*(key == OPT_LEDGER ? &dopt.ledger : key == OPT_CGROUP ? &dopt.cgroup : &dopt.cdi_dir) = arg;
		break;
	case OPT_EXE:
		if (arg[0] != '/')
			argp_error(state, "--exe %s: an absolute path (CDI hooks need one)", arg);
		dopt.exe = arg;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, NULL,
	"What this node can enforce, and why not: one check a line, each ok, warn, fail or absent with a reason "
	"that names the fix. BPF LSM, bpffs and the pin directories, the pinned kernel quota programs against this "
	"rdmactl, the rdma cgroup controller and what rdma.max can hold, the ledger and its owner, the interceptor, "
	"the node policy (" POLICY_PATH ") and each of its limits, the CDI specs, the exporter's sources.\n"
	"Exit status: 0 every limit the policy asks can be enforced here (without a policy: kernel limits can be "
	"set, per kind); 1 something it needs cannot be (a check says fail); 2 usage error.\v"
	"Examples:\n"
	"  rdmactl doctor\n"
	"  rdmactl doctor --policy /config/containers.conf -j\n"
	"  rdmactl doctor || echo 'the node policy would stop containers here'\n",
	children, NULL, NULL,
};

enum status { ST_OK, ST_WARN, ST_FAIL, ST_ABSENT };
static const char *const status_names[] = { "ok", "warn", "fail", "absent" };
static unsigned int nfail;

/* One check: {"check", [sub_key: sub], "status", "reason"}; text "check [sub]  status  reason". */
static void check(const char *name, const char *sub_key, const char *sub, enum status st, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void check(const char *name, const char *sub_key, const char *sub, enum status st, const char *fmt, ...)
{
	char reason[2048], title[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	if (st == ST_FAIL)
		nfail++;
	snprintf(title, sizeof(title), "%s%s%s", name, sub ? " " : "", sub ? sub : "");
	out_open_object(NULL);
	print_string(PRINT_JSON, "check", NULL, name);
	if (sub_key)
		print_string(PRINT_JSON, sub_key, NULL, sub);
	print_text("%-18s ", title);
	print_string(PRINT_ANY, "status", "%-6s ", status_names[st]);
	print_string(PRINT_ANY, "reason", "%s\n", reason);
	out_close_object();
}

/* ---- what the node has -------------------------------------------------------------------------- */

static struct node {
	bool lsm;		/* BPF LSM active */
	char lsm_why[600];
	bool bpffs;		/* bpffs on /sys/fs/bpf */
	int dirs;		/* kq_doctor_dirs() */
	char dirs_why[600];
	bool kq_usable;		/* the kernel limits can be set: BPF LSM, bpffs, pins absent or trusted and this layout */
	char kq_why[700];	/* why not */
	bool rdmacg;		/* rdma.max exists for the containers' cgroups */
	char rdmacg_why[PATH_MAX * 2 + 300];
	/* the policy */
	int pol_err;		/* 0 read, -ENOENT none, else unreadable */
	bool pol_missing;	/* -ENOENT of a file named (--policy, $RDMACTL_CONTAINERS_CONF) */
	bool pol_found;
	char pol_why[768];
	struct policy pol;
} node;

static bool has_word(const char *text, const char *word)
{
	char buf[1024], *tok, *save = NULL;

	copy_str(buf, text, sizeof(buf));
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, word))
			return true;
	return false;
}

/* Limits a policy sets (not 'unlimited'), over its default, ceiling and budgets; wr apart. */
static bool policy_limits_kind(const struct policy *p, int k)
{
	unsigned int i;

	if (policy_has(&p->dflt, k) && p->has_default && p->dflt.v[k] != LEDGER_UNLIMITED)
		return true;
	if (policy_has(&p->ceiling, k) && p->ceiling.v[k] != LEDGER_UNLIMITED)
		return true;
	for (i = 0; i < p->nbudgets; i++)
		if (policy_has(&p->budget[i].lim, k) && p->budget[i].lim.v[k] != LEDGER_UNLIMITED)
			return true;
	return false;
}

/* Does what is asked of the kernel need BPF LSM: a policy limit on any kind but ctx and wr, or, without a
 * policy, kernel limits at all (rdma.max holds contexts only, and the objects all together). */
static bool need_lsm(void)
{
	int k;

	if (!node.pol_found)
		return true;
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (k != LEDGER_CTX && k != LEDGER_WR && policy_limits_kind(&node.pol, k))
			return true;
	return false;
}

static void load_policy(void)
{
	node.pol_err = policy_load(dopt.policy, &node.pol, node.pol_why, sizeof(node.pol_why));
	node.pol_found = !node.pol_err;
	if (node.pol_err == -ENOENT && !dopt.policy && !getenv(POLICY_ENV))
		memset(&node.pol, 0, sizeof(node.pol));
	else if (node.pol_err == -ENOENT)
		node.pol_missing = true; /* named and missing: a failure, not an absence */
}

/* ---- the checks ------------------------------------------------------------------------------------ */

static void check_lsm(void)
{
	node.lsm = kq_lsm_active(node.lsm_why, sizeof(node.lsm_why));
	if (node.lsm) {
		check("lsm", NULL, NULL, ST_OK, "BPF LSM is active: kernel limits per kind, on any scope");
		return;
	}
	check("lsm", NULL, NULL, need_lsm() ? ST_FAIL : ST_WARN,
	      "BPF LSM is not active (%s): the kernel holds no limit per kind here, only rdma.max's contexts and "
	      "objects all together; add bpf to the kernel's lsm= parameter (lsm=...,bpf, e.g. in "
	      "GRUB_CMDLINE_LINUX) and reboot%s",
	      node.lsm_why, node.pol_found ? "" : " (no node policy: kernel limits in general need it)");
}

static void check_bpffs(void)
{
	struct statfs fs;

	node.bpffs = !statfs(BPFFS, &fs) && fs.f_type == BPF_FS_MAGIC;
	if (!node.bpffs) {
		check("bpffs", NULL, NULL, node.lsm || need_lsm() ? ST_FAIL : ST_WARN,
		      "%s is not a BPF file system: the kernel quota programs cannot be pinned; mount -t bpf bpf %s "
		      "(systemd mounts it at boot; a container needs the host's, mounted with HostToContainer)",
		      BPFFS, BPFFS);
		return;
	}
	node.dirs = kq_doctor_dirs();
	if (node.dirs < 0) {
		copy_str(node.dirs_why, kq_error(), sizeof(node.dirs_why));
		check("bpffs", NULL, NULL, ST_FAIL, "mounted, but the pin directories are not rdmactl's: %s",
		      node.dirs_why);
		return;
	}
	check("bpffs", NULL, NULL, ST_OK, "mounted on %s; %s", BPFFS,
	      node.dirs ? "the pin directories " KQ_PIN_DIR " and its parent are root's, 0700" :
			  "nothing pinned yet (the first kernel limit makes " KQ_PIN_DIR ", root's, 0700)");
}

static void check_programs(void)
{
	char why[600], missing[512];
	struct kq *q;
	int err, n;

	node.kq_usable = false;
	if (!node.lsm) {
		snprintf(node.kq_why, sizeof(node.kq_why), "BPF LSM is not active");
		check("programs", NULL, NULL, ST_ABSENT, "not loadable: BPF LSM is not active");
		return;
	}
	if (!node.bpffs || node.dirs < 0) {
		snprintf(node.kq_why, sizeof(node.kq_why), "%s", node.bpffs ? node.dirs_why : "bpffs is not mounted on " BPFFS);
		check("programs", NULL, NULL, ST_FAIL, "cannot be pinned: %s", node.kq_why);
		return;
	}
	if (!node.dirs) {
		node.kq_usable = true;
		check("programs", NULL, NULL, ST_ABSENT, "not loaded: the first kernel limit (quota set --kernel, the OCI "
			      "hook) loads this rdmactl's (" RDMACTL_VERSION ")");
		return;
	}
	err = kq_open_readonly(&q);
	if (err == -ENOENT) {
		node.kq_usable = true;
		check("programs", NULL, NULL, ST_ABSENT, "not loaded (%s): the first kernel limit loads this rdmactl's",
		      kq_error());
		return;
	}
	if (err == -EPROTO) {
		snprintf(node.kq_why, sizeof(node.kq_why), "%s", kq_error());
		check("programs", NULL, NULL, ST_FAIL, "%s", node.kq_why);
		return;
	}
	if (err) {
		/* not root: the pins cannot be read, which says nothing about them */
		node.kq_usable = true;
		check("programs", NULL, NULL, ST_WARN, "cannot read them: %s (run rdmactl doctor as root)", kq_error());
		return;
	}
	node.kq_usable = true;
	n = kq_doctor_missing_programs(missing, sizeof(missing));
	err = kq_enforcement(q, why, sizeof(why));
	kq_close(q);
	if (err == 0) {
		snprintf(node.kq_why, sizeof(node.kq_why), "kernel limits are set but not enforced: %s", why);
		check("programs", NULL, NULL, ST_FAIL, "%s: rdmactl quota kernel repair attaches them again", node.kq_why);
		return;
	}
	if (n) {
		check("programs", NULL, NULL, ST_WARN,
		      "pinned by an older rdmactl: %d of this version's programs are missing (%s), so what they hold is "
		      "not held; with no kernel limit set, rm -r " KQ_PIN_DIR " and the next limit loads this rdmactl's "
		      "(" RDMACTL_VERSION "), or reboot", n, missing);
		return;
	}
	check("programs", NULL, NULL, ST_OK, "pinned in " KQ_PIN_DIR " with this rdmactl's layout (maps and programs)%s",
	      err == 1 ? ", every limit enforced" : "");
}

/* The controllers of a cgroup file ("cgroup.controllers"...) of dir into buf; false when unreadable. */
static bool read_controllers(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return path_read(path, buf, len) >= 0;
}

static void check_rdmacg(void)
{
	char root[PATH_MAX], dir[PATH_MAX], rootdir[PATH_MAX], cur[PATH_MAX], buf[1024];
	char *p;
	int err;

	cgroup2_root(root, sizeof(root));
	node.rdmacg = false;
	if (!read_controllers(root, "cgroup.controllers", buf, sizeof(buf))) {
		snprintf(node.rdmacg_why, sizeof(node.rdmacg_why), "no cgroup v2 hierarchy at %s", root);
		check("rdma_controller", NULL, NULL, ST_ABSENT, "%s (rdma.max is a cgroup v2 file)", node.rdmacg_why);
		return;
	}
	if (!has_word(buf, "rdma")) {
		snprintf(node.rdmacg_why, sizeof(node.rdmacg_why), "%s/cgroup.controllers has no rdma (a kernel "
			 "without CONFIG_CGROUP_RDMA, or the controller is bound to a cgroup v1 hierarchy)", root);
		check("rdma_controller", NULL, NULL, node.lsm ? ST_ABSENT : ST_WARN, "%s", node.rdmacg_why);
		return;
	}
	/* rdma.max exists in a cgroup whose parent has rdma in cgroup.subtree_control, all the way up */
	copy_str(dir, root, sizeof(dir));
	if (dopt.cgroup) {
		err = cgroup_resolve(dopt.cgroup, rootdir, sizeof(rootdir), dir, sizeof(dir));
		if (err) {
			snprintf(node.rdmacg_why, sizeof(node.rdmacg_why), "--cgroup %s: %s", dopt.cgroup, strerror(-err));
			check("rdma_controller", NULL, NULL, ST_FAIL, "%s", node.rdmacg_why);
			return;
		}
	}
	copy_str(cur, root, sizeof(cur));
	p = dir + strlen(root);
	for (;;) {
		if (!read_controllers(cur, "cgroup.subtree_control", buf, sizeof(buf)) || !has_word(buf, "rdma")) {
			snprintf(node.rdmacg_why, sizeof(node.rdmacg_why), "%s/cgroup.subtree_control lacks rdma: its "
				 "child cgroups have no rdma.max (echo +rdma > %s/cgroup.subtree_control, at every level "
				 "down to where containers are)", cur, cur);
			check("rdma_controller", NULL, NULL, node.lsm ? ST_WARN : ST_FAIL, "%s", node.rdmacg_why);
			return;
		}
		if (!*p)
			break;
		p += strcspn(p + 1, "/") + 1;
		snprintf(cur, sizeof(cur), "%.*s", (int)(p - dir), dir);
	}
	node.rdmacg = true;
	check("rdma_controller", NULL, NULL, ST_OK, "rdma in cgroup.controllers and in cgroup.subtree_control of %s%s",
	      dopt.cgroup ? dir : root, dopt.cgroup ? " and of each cgroup above it" : " (--cgroup DIR checks the "
	      "levels down to where the runtime puts containers)");
}

static void check_rdma_max(void)
{
	char objs[256] = "";
	size_t off = 0;
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		if (kq_backstop_object_kind(k))
			off += (size_t)snprintf(objs + off, sizeof(objs) - off, "%s%s", off ? " " : "", ledger_kind_names[k]);
	check("rdma_max", NULL, NULL, node.rdmacg ? (node.lsm ? ST_OK : ST_WARN) : ST_ABSENT,
	      "%s: it holds ctx (hca_handle), and %s only all together (hca_object, once each of them has a limit); "
	      "never mr_bytes, wr, or one object kind alone%s",
	      node.rdmacg ? (node.lsm ? "the fallback, unused while BPF LSM is active" : "the only kernel limit here")
			  : "not available here",
	      objs, node.lsm ? "" : " (quota set --kernel and the OCI hook refuse such a limit)");
}

static void check_ledger(void)
{
	const char *path = dopt.ledger ? dopt.ledger : ledger_default_path();
	char usage[PATH_MAX + 8];
	struct ledger *l;
	struct stat st, su;
	unsigned int cap, used = 0;
	int err;

	if (stat(path, &st)) {
		if (errno == ENOENT)
			check("ledger", NULL, NULL, ST_ABSENT, "no ledger at %s yet: root's first limit (quota set, the OCI "
			      "hook) creates it, and rdmactl-ledger.service at boot", path);
		else
			check("ledger", NULL, NULL, ST_FAIL, "cannot check %s: %s", path, strerror(errno));
		return;
	}
	err = ledger_open(path, 0, &l);
	if (err == -EBADMSG || err == -EPROTO) {
		/* not a ledger this rdmactl reads: every limit set through it fails */
		check("ledger", NULL, NULL, ST_FAIL, "%s: %s (rdmactl quota init --ledger %s makes a new one, empty)", path,
		      ledger_error(), path);
		return;
	}
	if (err) {
		/* the ledger may be fine: this process cannot open it (a read-only mount, another user's files) */
		check("ledger", NULL, NULL, ST_WARN, "cannot open it from here: %s", ledger_error());
		return;
	}
	cap = ledger_capacity(l, &used);
	ledger_close(l);
	snprintf(usage, sizeof(usage), "%s.usage", path);
	if (stat(usage, &su))
		memset(&su, 0, sizeof(su));
	if (st.st_uid != 0) {
		check("ledger", NULL, NULL, ST_WARN, "%s belongs to uid %u, not root: limits are root's all the same, and "
		      "root's next quota set takes the files over (rdmactl-ledger.service makes them root's at boot)",
		      path, (unsigned int)st.st_uid);
		return;
	}
	if (st.st_mode & 022) {
		check("ledger", NULL, NULL, ST_FAIL, "%s is root's with mode %04o: others can write its limits; "
		      "chmod 0644 %s", path, (unsigned int)(st.st_mode & 07777), path);
		return;
	}
	check("ledger", NULL, NULL, ST_OK, "%s: root's, mode %04o (usage %04o); %u of %u process slots in use", path,
	      (unsigned int)(st.st_mode & 07777), (unsigned int)(su.st_mode & 07777), used, cap);
}

static void check_interceptor(void)
{
	char path[PATH_MAX];
	int err = run_find_preload(path, sizeof(path));

	if (err)
		check("interceptor", NULL, NULL, ST_WARN, "librdmactl-preload.so not found next to rdmactl nor in "
		      "../lib/rdmactl/ (%s): rdmactl run and cdi generate --preload cannot use it; make install puts it "
		      "there, RDMACTL_PRELOAD=PATH names another", strerror(-err));
	else
		check("interceptor", NULL, NULL, ST_OK, "%s: what rdmactl run preloads (mr_bytes and wr are held in "
		      "processes under it even where the kernel cannot)", path);
}

static void check_policy(void)
{
	char lim[512], ceil[512];
	const char *path = policy_path(dopt.policy);

	if (node.pol_err == -ENOENT && !node.pol_missing) {
		check("policy", NULL, NULL, ST_ABSENT, "no node policy at %s: the OCI hook leaves containers that ask "
		      "nothing alone", path);
		return;
	}
	if (node.pol_err) {
		check("policy", NULL, NULL, ST_FAIL, "%s: %s (the OCI hook fails closed: every container of the node "
		      "fails to start while it does not parse)", path,
		      node.pol_missing ? "no such file" : node.pol_why);
		return;
	}
	policy_limits_format(&node.pol.dflt, lim, sizeof(lim));
	policy_limits_format(&node.pol.ceiling, ceil, sizeof(ceil));
	check("policy", NULL, NULL, ST_OK, "%s parses: default %s, ceiling %s, %u budget%s", path,
	      node.pol.has_default && lim[0] ? lim : "none", ceil[0] ? ceil : "none", node.pol.nbudgets,
	      node.pol.nbudgets == 1 ? "" : "s");
}

/* Who a kind's limit applies to, in words: "the default (every container)", budgets... */
static void limit_where(int k, char *buf, size_t len)
{
	const struct policy *p = &node.pol;
	size_t off = 0;
	unsigned int i, nb = 0;

	buf[0] = '\0';
	if (p->has_default && policy_has(&p->dflt, k) && p->dflt.v[k] != LEDGER_UNLIMITED)
		off += (size_t)snprintf(buf + off, len - off, "the default (every container, kube-system's included)");
	else if (policy_has(&p->ceiling, k) && p->ceiling.v[k] != LEDGER_UNLIMITED)
		off += (size_t)snprintf(buf + off, len - off, "the ceiling (every container: it is their limit "
					"without a default)");
	for (i = 0; i < p->nbudgets && off < len; i++) {
		if (!policy_has(&p->budget[i].lim, k) || p->budget[i].lim.v[k] == LEDGER_UNLIMITED)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? (nb ? ", " : "; budget ") : "budget ",
					p->budget[i].name);
		nb++;
	}
}

static void check_limits(void)
{
	char where[1024];
	int k;

	if (!node.pol_found)
		return;
	for (k = 0; k < LEDGER_NKINDS; k++) {
		const char *kind = ledger_kind_names[k];

		if (!policy_limits_kind(&node.pol, k))
			continue;
		limit_where(k, where, sizeof(where));
		if (k == LEDGER_WR) {
			check("limit", "kind", kind, ST_WARN, "%s: a cap the interceptor checks in processes under it; no "
			      "kernel holds it", where);
		} else if (node.lsm && node.kq_usable) {
			check("limit", "kind", kind, ST_OK, "%s: held by BPF LSM", where);
		} else if (node.lsm) {
			check("limit", "kind", kind, ST_FAIL, "%s: the OCI hook cannot set it (%s), so those containers "
			      "fail to start", where, node.kq_why);
		} else if (k == LEDGER_CTX && node.rdmacg) {
			check("limit", "kind", kind, ST_OK, "%s: held by rdma.max (hca_handle), BPF LSM not being active",
			      where);
		} else if (k == LEDGER_CTX) {
			check("limit", "kind", kind, ST_FAIL, "%s: neither BPF LSM nor rdma.max (%s): those containers "
			      "fail to start", where, node.rdmacg_why);
		} else {
			check("limit", "kind", kind, ST_FAIL, "%s: without BPF LSM only rdma.max is left, which cannot "
			      "hold %s; the OCI hook refuses those containers (they fail to start); add bpf to lsm=, "
			      "or take %s out of the policy", where,
			      k == LEDGER_MR_BYTES ? "an mr_bytes limit" : "one object kind's limit alone", kind);
		}
	}
}

/*
 * The CDI specs as 'rdmactl cdi list -j' finds them (the logic of cmd/cdi.c, run as it is): its document on
 * stdout into out, its messages into err. Returns its exit status, or -errno.
 */
static int run_cdi_list(char *out, size_t olen, char *err, size_t elen)
{
	const char *argv[12];
	int pfd[2], efd, n = 0, status;
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	argv[n++] = "rdmactl";
	argv[n++] = "cdi";
	argv[n++] = "list";
	argv[n++] = "-j";
	if (dopt.policy)
		argv[n++] = "--policy", argv[n++] = dopt.policy;
	if (dopt.exe)
		argv[n++] = "--exe", argv[n++] = dopt.exe;
	if (dopt.cdi_dir)
		argv[n++] = "--output", argv[n++] = dopt.cdi_dir;
	argv[n] = NULL;
	efd = memfd_create("rdmactl-doctor-err", MFD_CLOEXEC);
	if (efd < 0)
		return -errno;
	if (pipe2(pfd, O_CLOEXEC)) {
		close(efd);
		return -errno;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(efd), close(pfd[0]), close(pfd[1]);
		return -errno;
	}
	if (!pid) {
		dup2(pfd[1], 1);
		dup2(efd, 2);
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	while (got + 1 < olen && (r = read(pfd[0], out + got, olen - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	r = pread(efd, err, elen - 1, 0);
	err[r > 0 ? r : 0] = '\0';
	err[strcspn(err, "\n")] = '\0';
	close(efd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static unsigned int count(const char *s, const char *what)
{
	unsigned int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

static void check_cdi(void)
{
	static char out[1 << 16];
	char err[512];
	const char *dir = dopt.cdi_dir ? dopt.cdi_dir : "/etc/cdi";
	unsigned int cur, stale, missing;
	int ret;

	ret = run_cdi_list(out, sizeof(out), err, sizeof(err));
	if (ret && !(ret == EXIT_FAIL && out[0] == '{')) { /* 1 with its document: a spec is not current */
		check("cdi", NULL, NULL, ST_WARN, "rdmactl cdi list: %s", ret < 0 ? strerror(-ret) : err[0] ? err : "failed");
		return;
	}
	cur = count(out, "\"spec\":\"current\"");
	stale = count(out, "\"spec\":\"stale\"") + (strstr(out, "\"stale_files\":[]") ? 0 : 1);
	missing = count(out, "\"spec\":\"missing\"");
	if (!cur && !stale) {
		check("cdi", NULL, NULL, ST_ABSENT, "no rdmactl.io specs in %s (rdmactl cdi generate writes them, for "
		      "runtimes that read CDI)", dir);
		return;
	}
	if (stale || missing)
		check("cdi", NULL, NULL, ST_WARN, "specs in %s: %u device%s current, %u stale, %u missing (rdmactl cdi list "
		      "names them; rdmactl cdi generate%s%s writes them again)", dir, cur, cur == 1 ? "" : "s", stale,
		      missing, dopt.exe ? " --exe " : "", dopt.exe ? dopt.exe : "");
	else
		check("cdi", NULL, NULL, ST_OK, "specs in %s current (%u device%s)", dir, cur, cur == 1 ? "" : "s");
}

static void check_exporter(void)
{
	struct metrics_opts mo = { .ledger = dopt.ledger };
	struct metrics_ctx *x;
	struct metrics_snap s;
	int i;

	if (metrics_open(&mo, &x)) {
		check("exporter", NULL, NULL, ST_WARN, "cannot open its sources: out of memory");
		return;
	}
	if (metrics_collect(x, &s)) {
		metrics_close(x);
		check("exporter", NULL, NULL, ST_WARN, "cannot collect: out of memory");
		return;
	}
	for (i = 0; i < METRICS_SRC_NR; i++) {
		const char *name = metrics_source_names[i];

		if (!s.err[i])
			check("exporter", "source", name, ST_OK, "read (rdmactl_source_up{source=\"%s\"} 1)", name);
		else
			check("exporter", "source", name, s.state[i] == METRICS_STATE_ABSENT ? ST_ABSENT : ST_WARN, "%s",
			      s.why[i][0] ? s.why[i] : strerror(-s.err[i]));
	}
	metrics_snap_free(&s);
	metrics_close(x);
}

int cmd_doctor(int argc, char **argv)
{
	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return EXIT_USAGE;
	load_policy();
	out_open_object(NULL);
	print_string(PRINT_JSON, "version", NULL, RDMACTL_VERSION);
	print_string(PRINT_JSON, "policy", NULL, policy_path(dopt.policy));
	out_open_array("checks");
	check_lsm();
	check_bpffs();
	check_programs();
	check_rdmacg();
	check_rdma_max();
	check_ledger();
	check_interceptor();
	check_policy();
	check_limits();
	check_cdi();
	check_exporter();
	out_close_array();
	print_bool(PRINT_JSON, "enforceable", NULL, !nfail);
	if (!nfail)
		print_text("\n%s\n", node.pol_found ? "every limit of the node policy can be enforced here" :
			   "kernel limits can be set here (no node policy)");
	else
		print_text("\n%u check%s failed: %s\n", nfail, nfail == 1 ? "" : "s",
			   node.pol_found ? "not every limit of the node policy can be enforced here" :
			   "kernel limits cannot be set here");
	out_close_object();
	return nfail ? EXIT_FAIL : EXIT_OK;
}
