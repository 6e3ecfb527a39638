// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdmactl cdi: CDI (Container Device Interface) specs for the node's RDMA devices (rdmactl.io/hca=IBDEV, =all)
 * and for its budgets (rdmactl.io/budget=NAME: hooks only, 'rdmactl oci-hook' with the budget's limits).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/out.h"
#include "core/proc.h"
#include "core/util.h"
#include "engines/policy.h"
#include "quota.h"
#include "rdmactl.h"

#define CDI_DIR "/etc/cdi"
#define CDI_VENDOR "rdmactl.io"
#define CDI_MAX_HCAS 64
#define CDI_MAX_EXTRA 16 /* --budget NAME:LIMITS */

static struct {
	const char *dir, *policy, *exe, *sysfs, *devdir;
	bool preload;
	const char *extra[CDI_MAX_EXTRA];
	unsigned int nextra;
	const char *args[2];
	unsigned int nargs;
	bool policy_given;
} co;

/* The commands and the devices are argp doc entries: a list of two columns that argp indents and fills. */
#define DOC_ENTRY(name, doc, group) { name, 0, NULL, OPTION_DOC | OPTION_NO_USAGE, doc, group }
static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Commands:", 1 },
	DOC_ENTRY("generate", "write DIR/" CDI_VENDOR "-hca.json and DIR/" CDI_VENDOR "-budget.json (a budget spec "
			      "only when there are budgets; a stale one is removed)", 1),
	DOC_ENTRY("list", "the devices, and whether the specs in DIR are current (exit 1 when one is not; the "
			  "--budget devices of the spec on disk are kept)", 1),
	{ NULL, 0, NULL, 0, "Devices in the specs:", 2 },
	DOC_ENTRY(CDI_VENDOR "/hca=IBDEV", "the uverbs device node of IBDEV (and rdma_cm); " CDI_VENDOR "/hca=all: "
					  "every device's", 2),
	DOC_ENTRY(CDI_VENDOR "/budget=NAME", "hooks that run 'rdmactl oci-hook' with the budget NAME of the node "
					    "policy or of --budget: kernel limits on the container's cgroup, within the "
					    "node's ceiling", 2),
	{ NULL, 0, NULL, 0, "Options:", 3 },
	{ "output", 'o', "DIR", 0, "where the specs are (default " CDI_DIR "; /var/run/cdi is the other place "
				   "runtimes read)", 3 },
	{ "budget", 'b', "NAME:KIND=N[,...]", 0, "one more budget device, besides the node policy's (repeatable)", 3 },
	{ "policy", 'P', "FILE", 0, "the node policy whose budgets become devices (default $" POLICY_ENV ", else "
				    POLICY_PATH "); given, the hooks read it too", 3 },
	{ "exe", 'e', "PATH", 0, "the rdmactl the hooks run (default: this one)", 3 },
	{ "preload", 'l', NULL, 0, "the hca devices also put the interceptor into the container (mounted read-only, "
				   "LD_PRELOAD): RDMACTL_MAX_* in its environment then hold each process", 3 },
	{ "sysfs", 's', "DIR", OPTION_HIDDEN, "sysfs root (tests)", 3 },
	{ "dev", 'd', "DIR", OPTION_HIDDEN, "/dev/infiniband (tests)", 3 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'o':
	case 'P':
	case 'e':
	case 's':
	case 'd':
		if (!*arg)
			argp_error(state, "-%c: empty path", key);
		if (key == 'o')
			co.dir = arg;
		else if (key == 'P' && arg[0] != '/')
			argp_error(state, "--policy %s: " POLICY_ABS_WHY, arg);
		else if (key == 'P')
			co.policy = arg, co.policy_given = true;
		else if (key == 'e' && arg[0] != '/')
			argp_error(state, "--exe %s: an absolute path (CDI hooks need one)", arg);
		else if (key == 'e')
			co.exe = arg;
		else if (key == 's')
			co.sysfs = arg;
		else
			co.devdir = arg;
		break;
	case 'l':
		co.preload = true;
		break;
	case 'b':
		if (co.nextra >= CDI_MAX_EXTRA)
			argp_error(state, "--budget: more than %d", CDI_MAX_EXTRA);
		co.extra[co.nextra++] = arg;
		break;
	case ARGP_KEY_ARG:
		if (co.nargs >= 2)
			argp_error(state, "unexpected argument '%s'", arg);
		co.args[co.nargs++] = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, "generate|list",
	"CDI specs of this node's RDMA devices and of its budgets, for the container runtimes that read CDI "
	"(cdiVersion 0.3.0: podman >= 4.1, CRI-O >= 1.24, containerd >= 1.7 with enable_cdi, Docker >= 25) and "
	"for device plugins and DRA drivers to hand out. Budgets: those of the node policy (" POLICY_PATH ") and "
	"each --budget.\v"
	"Examples:\n"
	"  rdmactl cdi generate\n"
	"  rdmactl cdi generate --budget qp2:qp=2,mr_bytes=1G --output /var/run/cdi\n"
	"  rdmactl cdi list -j\n"
	"  podman run --device rdmactl.io/hca=all --device rdmactl.io/budget=qp2 IMAGE ./train\n",
	children, NULL, NULL,
};

struct hca {
	char name[64];
	char node[PATH_MAX]; /* /dev/infiniband/uverbsN */
};

struct budget_dev {
	char name[POLICY_NAME_MAX];
	char arg[256]; /* --budget NAME or --limit LIMITS */
	bool limit;
	bool from_spec; /* list: a --budget device of the spec on disk */
};

/* A device name CDI accepts (letters first keeps cdiVersion 0.3.0). */
static bool cdi_name_ok(const char *n)
{
	size_t i, len = strlen(n);

	if (!len || len > 63)
		return false;
	for (i = 0; i < len; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) &&
		    (!i || i == len - 1 || (c != '_' && c != '-' && c != '.')))
			return false;
	}
	return true;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct hca *)a)->name, ((const struct hca *)b)->name);
}

/* The uverbs devices of sysfs (class infiniband_verbs), named by their ibdev. */
static int find_hcas(struct hca *h, unsigned int *n)
{
	char path[PATH_MAX * 2], dir[PATH_MAX], buf[64];
	const char *sys = co.sysfs ? co.sysfs : "/sys";
	struct dirent *de;
	DIR *d;

	*n = 0;
	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs", sys);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) && *n < CDI_MAX_HCAS) {
		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path), "%s/%s/ibdev", dir, de->d_name);
		if (path_read(path, buf, sizeof(buf)) < 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (!cdi_name_ok(buf) || !strcmp(buf, "all")) {
			pr_err("warning: device %s: '%s' is not a CDI device name; left out", de->d_name, buf);
			continue;
		}
		copy_str(h[*n].name, buf, sizeof(h[*n].name));
		snprintf(h[*n].node, sizeof(h[*n].node), "%.3800s/%.200s", co.devdir ? co.devdir : "/dev/infiniband",
			 de->d_name);
		(*n)++;
	}
	closedir(d);
	qsort(h, *n, sizeof(*h), by_name);
	return 0;
}

/*
 * One --budget NAME:LIMITS into b[*n], checked against the policy and the budgets before it. A word of the
 * command line that fails is a usage error (2); one read back from the spec on disk (from_spec, by list) is
 * left out with a note (1), which leaves that spec stale.
 */
static int add_extra(const struct policy *pol, const char *arg, const char *spec, struct budget_dev *b,
		     unsigned int *n)
{
	const char *c = strchr(arg, ':');
	size_t len = c ? (size_t)(c - arg) : 0;
	bool from_spec = spec;
	char msg[256], limits[200], what[PATH_MAX + 16];
	struct policy_limits l;
	unsigned int j;

	snprintf(what, sizeof(what), "%s%s--budget", spec ? spec : "", spec ? ": " : "");
	if (!c || !len || len >= POLICY_NAME_MAX) {
		fprintf(stderr, "%s: %s '%s': NAME:KIND=N[,...] (a name of at most %d characters)\n", util_prog, what,
			arg, POLICY_NAME_MAX - 1);
		return from_spec ? 1 : EXIT_USAGE;
	}
	memcpy(b[*n].name, arg, len);
	b[*n].name[len] = '\0';
	if (!policy_name_ok(b[*n].name)) {
		fprintf(stderr, "%s: %s '%s': the name: a letter first, then letters, digits, '_', '.' or '-', ending "
			"with a letter or digit\n", util_prog, what, arg);
		return from_spec ? 1 : EXIT_USAGE;
	}
	if (policy_limits_parse(c + 1, &l, msg, sizeof(msg))) {
		fprintf(stderr, "%s: %s '%s': %s\n", util_prog, what, arg, msg);
		return from_spec ? 1 : EXIT_USAGE;
	}
	if (policy_above_ceiling(pol, &l) >= 0) {
		fprintf(stderr, "%s: %s '%s': above the node's ceiling in %s (its hook would refuse every container)\n",
			util_prog, what, arg, policy_path(co.policy));
		return from_spec ? 1 : EXIT_USAGE;
	}
	for (j = 0; j < *n; j++)
		if (!strcmp(b[j].name, b[*n].name)) {
			if (from_spec) /* the policy's budget or the command line's of that name replaces it */
				return 1;
			fprintf(stderr, "%s: %s '%s': a budget %s exists already (%s)\n", util_prog, what, arg, b[j].name,
				b[j].limit ? "--budget" : policy_path(co.policy));
			return EXIT_USAGE;
		}
	policy_limits_format(&l, limits, sizeof(limits));
	copy_str(b[*n].arg, limits, sizeof(b[*n].arg));
	b[*n].limit = true;
	b[*n].from_spec = from_spec;
	(*n)++;
	return 0;
}

/*
 * The --budget devices of a budget spec on disk, as "NAME:LIMITS" into out[] (the args "--limit LIMITS" of
 * the device's hooks; a policy budget's hooks say "--budget NAME" instead). What it finds need not be right:
 * list compares the spec these give with the file byte for byte, so a file read wrong is only ever stale.
 */
static unsigned int spec_extras(const char *path, char out[][POLICY_NAME_MAX + 256], unsigned int max)
{
	static char buf[1 << 20];
	char str[2][256], *p, *end;
	unsigned int n = 0, i, k = 0;
	bool name_next = false, limit_next = false;

	if (path_read(path, buf, sizeof(buf)) <= 0)
		return 0;
	str[0][0] = '\0'; /* the device's name */
	for (p = buf; (p = strchr(p, '"')) && n < max; p = end + 1) {
		char *s = str[1];
		size_t len;

		end = p + 1 + strcspn(p + 1, "\"\\");
		if (*end != '"')
			break; /* no escapes in what generate writes */
		len = (size_t)(end - p - 1);
		if (len >= sizeof(str[1]))
			len = sizeof(str[1]) - 1;
		memcpy(s, p + 1, len);
		s[len] = '\0';
		if (name_next) {
			copy_str(str[0], s, sizeof(str[0]));
		} else if (limit_next && str[0][0]) {
			for (i = 0; i < n; i++)
				if (!strncmp(out[i], str[0], strlen(str[0])) && out[i][strlen(str[0])] == ':')
					break;
			if (i == n) /* createRuntime and poststop: the same device */
				snprintf(out[n++], sizeof(out[0]), "%.31s:%.255s", str[0], s);
		}
		k = (size_t)(end + 1 - buf) + strspn(end + 1, " \t\r\n");
		name_next = !strcmp(s, "name") && buf[k] == ':';
		limit_next = !strcmp(s, "--limit") && buf[k] != ':';
	}
	return n;
}

/* The node policy's budgets, then --budget's (list: and those of the spec on disk); a name twice is an error. */
static int find_budgets(const struct policy *pol, struct budget_dev *b, unsigned int *n, const char *spec)
{
	static char found[CDI_MAX_EXTRA][POLICY_NAME_MAX + 256];
	unsigned int i, nfound = 0;
	int ret;

	*n = 0;
	for (i = 0; i < pol->nbudgets; i++) {
		copy_str(b[*n].name, pol->budget[i].name, sizeof(b[*n].name));
		copy_str(b[*n].arg, pol->budget[i].name, sizeof(b[*n].arg));
		b[*n].limit = false;
		b[*n].from_spec = false;
		(*n)++;
	}
	for (i = 0; i < co.nextra; i++) {
		ret = add_extra(pol, co.extra[i], NULL, b, n);
		if (ret)
			return ret;
	}
	if (spec)
		nfound = spec_extras(spec, found, CDI_MAX_EXTRA - co.nextra);
	for (i = 0; i < nfound; i++)
		add_extra(pol, found[i], spec, b, n);
	return 0;
}

static void spec_head(const char *class)
{
	char kind[64];

	snprintf(kind, sizeof(kind), CDI_VENDOR "/%s", class);
	out_open_object(NULL);
	print_string(PRINT_JSON, "cdiVersion", NULL, "0.3.0");
	print_string(PRINT_JSON, "kind", NULL, kind);
	out_open_array("devices");
}

static void spec_tail(void)
{
	out_close_array();
	out_close_object();
}

static void node(const char *path)
{
	out_open_object(NULL);
	print_string(PRINT_JSON, "path", NULL, path);
	out_close_object();
}

static void hca_spec(const struct hca *h, unsigned int n, const char *cm, const char *preload)
{
	char env[PATH_MAX + 16];
	unsigned int i, j;

	snprintf(env, sizeof(env), "LD_PRELOAD=%s", preload ? preload : "");
	spec_head("hca");
	for (i = 0; i <= n; i++) {
		out_open_object(NULL);
		print_string(PRINT_JSON, "name", NULL, i < n ? h[i].name : "all");
		out_open_object("containerEdits");
		if (preload) {
			/* the interceptor at the host's path, read-only; cdiVersion 0.3.0 has no mount type: a bind by options */
			out_open_array("env");
			print_string(PRINT_JSON, NULL, NULL, env);
			out_close_array();
			out_open_array("mounts");
			out_open_object(NULL);
			print_string(PRINT_JSON, "hostPath", NULL, preload);
			print_string(PRINT_JSON, "containerPath", NULL, preload);
			out_open_array("options");
			print_string(PRINT_JSON, NULL, NULL, "ro");
			print_string(PRINT_JSON, NULL, NULL, "nosuid");
			print_string(PRINT_JSON, NULL, NULL, "nodev");
			print_string(PRINT_JSON, NULL, NULL, "bind");
			out_close_array();
			out_close_object();
			out_close_array();
		}
		out_open_array("deviceNodes");
		for (j = 0; j < n; j++)
			if (j == i || i == n)
				node(h[j].node);
		if (cm)
			node(cm);
		out_close_array();
		out_close_object();
		out_close_object();
	}
	spec_tail();
}

static void hook(const char *exe, const struct budget_dev *b, const char *stage)
{
	out_open_object(NULL);
	print_string(PRINT_JSON, "hookName", NULL, stage);
	print_string(PRINT_JSON, "path", NULL, exe);
	out_open_array("args");
	print_string(PRINT_JSON, NULL, NULL, "rdmactl");
	print_string(PRINT_JSON, NULL, NULL, "oci-hook");
	if (co.policy_given) {
		print_string(PRINT_JSON, NULL, NULL, "--policy");
		print_string(PRINT_JSON, NULL, NULL, co.policy);
	}
	print_string(PRINT_JSON, NULL, NULL, b->limit ? "--limit" : "--budget");
	print_string(PRINT_JSON, NULL, NULL, b->arg);
	print_string(PRINT_JSON, NULL, NULL, stage);
	out_close_array();
	out_close_object();
}

static void budget_spec(const char *exe, const struct budget_dev *b, unsigned int n)
{
	unsigned int i;

	spec_head("budget");
	for (i = 0; i < n; i++) {
		out_open_object(NULL);
		print_string(PRINT_JSON, "name", NULL, b[i].name);
		out_open_object("containerEdits");
		out_open_array("hooks");
		hook(exe, &b[i], "createRuntime");
		hook(exe, &b[i], "poststop");
		out_close_array();
		out_close_object();
		out_close_object();
	}
	spec_tail();
}

/* What the writer makes of one spec, in memory (malloc'd, *len bytes). */
static char *render(void (*fn)(const void *), const void *arg, size_t *len)
{
	bool json = out_is_json(), pretty = out_is_pretty();
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	out_init(f, true, true);
	fn(arg);
	out_init(NULL, json, pretty);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct node_state {
	struct hca hca[CDI_MAX_HCAS];
	unsigned int nhca;
	const char *cm;
	struct budget_dev bud[POLICY_MAX_BUDGETS + CDI_MAX_EXTRA];
	unsigned int nbud;
	char exe[PATH_MAX];
	char preload[PATH_MAX]; /* "" without --preload */
	bool preload_spec; /* list: the hca spec on disk has the interceptor */
};

static void render_hca(const void *arg)
{
	const struct node_state *ns = arg;

	hca_spec(ns->hca, ns->nhca, ns->cm, ns->preload[0] ? ns->preload : NULL);
}

static void render_budget(const void *arg)
{
	const struct node_state *ns = arg;

	budget_spec(ns->exe, ns->bud, ns->nbud);
}

/* Whether the file at path holds what. */
static bool file_has(const char *path, const char *what)
{
	static char buf[1 << 20];

	if (path_read(path, buf, sizeof(buf)) <= 0)
		return false;
	return strstr(buf, what);
}

/*
 * What this node has and what generate makes of it. list (hpath and bpath given) takes the specs on disk for
 * what they were generated as: their --budget devices, and --preload when the hca spec has the interceptor.
 */
static int read_node(struct node_state *ns, const char *hpath, const char *bpath)
{
	static char cm[PATH_MAX];
	static struct policy pol;
	char err[768];
	struct stat sb;
	ssize_t n;
	int ret;

	/* the hooks get the file the environment names: a relative one would be read from the bundle directory */
	if (!co.policy_given && getenv(POLICY_ENV) && *getenv(POLICY_ENV) && getenv(POLICY_ENV)[0] != '/') {
		fprintf(stderr, "%s: " POLICY_ENV "=%s: " POLICY_ABS_WHY "\nTry '%s --help' for more information.\n",
			util_prog, getenv(POLICY_ENV), util_prog);
		return EXIT_USAGE;
	}
	ret = policy_load(co.policy, &pol, err, sizeof(err));
	if (ret == -ENOENT && !co.policy_given && !getenv(POLICY_ENV))
		memset(&pol, 0, sizeof(pol));
	else if (ret) {
		pr_err("cannot read the node policy: %s", err);
		return EXIT_FAIL;
	}
	if (getenv(POLICY_ENV) && !co.policy_given)
		co.policy = getenv(POLICY_ENV), co.policy_given = true; /* the hooks must read the same file */
	ret = find_budgets(&pol, ns->bud, &ns->nbud, bpath);
	if (ret)
		return ret;
	ret = find_hcas(ns->hca, &ns->nhca);
	if (ret) {
		pr_err("cannot list the RDMA devices: %s", strerror(-ret));
		return EXIT_FAIL;
	}
	snprintf(cm, sizeof(cm), "%s/rdma_cm", co.devdir ? co.devdir : "/dev/infiniband");
	ns->cm = stat(cm, &sb) ? NULL : cm;
	if (!co.preload && hpath && file_has(hpath, "\"LD_PRELOAD=")) {
		/* generated with --preload: no interceptor found here leaves that spec stale */
		ns->preload_spec = true;
		if (run_find_preload(ns->preload, sizeof(ns->preload)))
			ns->preload[0] = '\0';
	} else if (co.preload) {
		ret = run_find_preload(ns->preload, sizeof(ns->preload));
		if (ret) {
			pr_err("--preload: cannot find librdmactl-preload.so next to rdmactl or in ../lib/rdmactl: %s "
			       "(RDMACTL_PRELOAD=PATH names it)", strerror(-ret));
			return EXIT_FAIL;
		}
	}
	if (co.exe) {
		copy_str(ns->exe, co.exe, sizeof(ns->exe));
	} else {
		n = readlink("/proc/self/exe", ns->exe, sizeof(ns->exe) - 1);
		if (n <= 0) {
			pr_err("cannot find this rdmactl's path: %s (give --exe PATH)", strerror(errno));
			return EXIT_FAIL;
		}
		ns->exe[n] = '\0';
	}
	return 0;
}

/* "current", "stale" or "missing": the file at path against the bytes it should hold. */
static const char *file_state(const char *path, const char *want, size_t len)
{
	static char have[1 << 20];
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return "missing";
	while (got < sizeof(have) && (n = read(fd, have + got, sizeof(have) - got)) > 0)
		got += n;
	close(fd);
	return got == len && !memcmp(have, want, len) ? "current" : "stale";
}

static int write_file(const char *path, const char *buf, size_t len)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) || chmod(tmp, 0644) || rename(tmp, path)) {
		int e = errno;

		pr_err("cannot write %s: %s", f ? path : tmp, strerror(e));
		unlink(tmp);
		return -e;
	}
	return 0;
}

/* The command that writes the specs again as they are meant: the --budget devices and --preload kept. */
static void print_generate(const struct node_state *ns)
{
	unsigned int i;

	fprintf(stderr, "rdmactl cdi generate");
	if (co.preload || ns->preload_spec)
		fprintf(stderr, " --preload");
	for (i = 0; i < ns->nbud; i++)
		if (ns->bud[i].limit)
			fprintf(stderr, " --budget %s:%s", ns->bud[i].name, ns->bud[i].arg);
	if (strcmp(co.dir, CDI_DIR))
		fprintf(stderr, " --output %s", co.dir);
	if (co.exe)
		fprintf(stderr, " --exe %s", co.exe);
}

/*
 * The devices and the state of their specs (generate: the devices only, in JSON). Returns 0, or 1 (list)
 * when a spec on disk is not what generate would write.
 */
static int list(const struct node_state *ns, int sub, const char *hpath, const char *hbuf, size_t hlen,
		const char *bpath, const char *bbuf, size_t blen)
{
	unsigned int i, bad = 0;
	const char *st;

	out_open_object(NULL);
	print_string(PRINT_JSON, "dir", NULL, co.dir);
	out_open_array("devices");
	for (i = 0; i <= ns->nhca && ns->nhca; i++) {
		const char *name = i < ns->nhca ? ns->hca[i].name : "all";

		st = file_state(hpath, hbuf, hlen);
		bad += strcmp(st, "current") != 0;
		out_open_object(NULL);
		print_string(PRINT_JSON, "kind", NULL, CDI_VENDOR "/hca");
		print_string(PRINT_ANY, "name", sub ? CDI_VENDOR "/hca=%-14s " : NULL, name);
		print_string(PRINT_ANY, "nodes", sub ? "%s" : NULL, i < ns->nhca ? ns->hca[i].node : "every uverbs");
		print_string(PRINT_ANY, "spec", sub ? " (spec %s)\n" : NULL, st);
		out_close_object();
	}
	for (i = 0; i < ns->nbud; i++) {
		const struct budget_dev *b = &ns->bud[i];
		char text[POLICY_NAME_MAX + 300];

		st = file_state(bpath, bbuf, blen);
		bad += strcmp(st, "current") != 0;
		if (b->limit)
			snprintf(text, sizeof(text), "--budget %s:%s", b->name, b->arg);
		else
			snprintf(text, sizeof(text), "policy budget %s", b->name);
		out_open_object(NULL);
		print_string(PRINT_JSON, "kind", NULL, CDI_VENDOR "/budget");
		print_string(PRINT_ANY, "name", sub ? CDI_VENDOR "/budget=%-11s " : NULL, b->name);
		print_string(PRINT_JSON, b->limit ? "limits" : "policy_budget", NULL, b->arg);
		if (b->limit)
			print_string(PRINT_JSON, "from", NULL, b->from_spec ? "spec" : "option");
		print_string(PRINT_FP, NULL, sub ? "%s" : NULL, text);
		print_string(PRINT_ANY, "spec", sub ? " (spec %s)\n" : NULL, st);
		out_close_object();
	}
	out_close_array();
	/* a spec on disk for devices this node no longer has: generate removes it */
	out_open_array("stale_files");
	if (!hbuf && !access(hpath, F_OK)) {
		bad++;
		print_string(PRINT_ANY, NULL, sub ? "%s: stale (no RDMA devices now; rdmactl cdi generate removes it)\n" :
			     NULL, hpath);
	}
	if (!bbuf && !access(bpath, F_OK)) {
		bad++;
		print_string(PRINT_ANY, NULL, sub ? "%s: stale (no budgets now; rdmactl cdi generate removes it)\n" :
			     NULL, bpath);
	}
	out_close_array();
	out_close_object();
	if (!sub || !bad)
		return EXIT_OK;
	fflush(stdout);
	fprintf(stderr, "%s: the specs in %s are not current (", util_prog, co.dir);
	print_generate(ns);
	fprintf(stderr, " writes them again)\n");
	return EXIT_FAIL;
}

int cmd_cdi(int argc, char **argv)
{
	static struct node_state ns;
	char hpath[PATH_MAX], bpath[PATH_MAX];
	char *hbuf = NULL, *bbuf = NULL;
	size_t hlen = 0, blen = 0;
	int ret, sub;
	static const char *const subs[] = { "generate", "list" };

	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return EXIT_USAGE;
	if (!co.nargs) {
		fprintf(stderr, "%s: missing command (generate or list)\nTry '%s --help' for more information.\n",
			util_prog, util_prog);
		return EXIT_USAGE;
	}
	sub = match_word(co.args[0], subs, 2);
	if (sub < 0)
		return word_error("command", co.args[0], subs, 2, sub);
	if (co.nargs > 1) {
		fprintf(stderr, "%s: %s: unexpected argument '%s'\nTry '%s --help' for more information.\n", util_prog,
			subs[sub], co.args[1], util_prog);
		return EXIT_USAGE;
	}
	if (!co.dir)
		co.dir = CDI_DIR;
	snprintf(hpath, sizeof(hpath), "%s/" CDI_VENDOR "-hca.json", co.dir);
	snprintf(bpath, sizeof(bpath), "%s/" CDI_VENDOR "-budget.json", co.dir);
	ret = sub ? read_node(&ns, hpath, bpath) : read_node(&ns, NULL, NULL);
	if (ret)
		return ret;
	if (ns.nhca)
		hbuf = render(render_hca, &ns, &hlen);
	if (ns.nbud)
		bbuf = render(render_budget, &ns, &blen);
	if ((ns.nhca && !hbuf) || (ns.nbud && !bbuf)) {
		pr_err("out of memory");
		ret = EXIT_FAIL;
		goto out;
	}
	if (sub == 0) {
		if (mkdir(co.dir, 0755) && errno != EEXIST) {
			pr_err("cannot create %s: %s", co.dir, strerror(errno));
			ret = EXIT_FAIL;
			goto out;
		}
		if ((hbuf ? write_file(hpath, hbuf, hlen) : (unlink(hpath) && errno != ENOENT ? -errno : 0)) ||
		    (bbuf ? write_file(bpath, bbuf, blen) : (unlink(bpath) && errno != ENOENT ? -errno : 0))) {
			ret = EXIT_FAIL;
			goto out;
		}
		if (!ns.nhca)
			pr_err("note: no RDMA devices here: no rdmactl.io/hca devices (%s)", hpath);
		if (!out_is_json()) {
			if (hbuf)
				printf("%s: rdmactl.io/hca=all and %u device%s\n", hpath, ns.nhca, ns.nhca == 1 ? "" : "s");
			if (bbuf)
				printf("%s: %u budget%s\n", bpath, ns.nbud, ns.nbud == 1 ? "" : "s");
		}
	}
	ret = list(&ns, sub, hpath, hbuf, hlen, bpath, bbuf, blen);
out:
	free(hbuf);
	free(bbuf);
	return ret;
}
