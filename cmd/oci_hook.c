// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl oci-hook: an OCI runtime hook that turns rdmactl.io/max-* annotations into limits on the container's cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engines/cgquota.h"
#include "core/cgroup.h"
#include "ledger/ledger.h"
#include "engines/ocistate.h"
#include "core/proc.h"
#include "rdmactl.h"
#include "core/util.h"

#define OCI_STATE_DIR "/run/rdmactl/oci"
#define OCI_ENV_STATE_DIR "RDMACTL_OCI_STATE_DIR"
#define OCI_ANN_MAX OCISTATE_PREFIX "max-"

enum stage { STAGE_AUTO, STAGE_CREATE, STAGE_POSTSTOP };

static struct {
	enum stage stage;
	const char *state_dir;
} oo;

static const struct argp_option options[] = {
	{ "state-dir", 's', "DIR", 0, "where the hook remembers each container's limits between its stages (default "
				      "$" OCI_ENV_STATE_DIR ", else " OCI_STATE_DIR ")", 1 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 's':
		if (!*arg)
			argp_error(state, "--state-dir: empty path");
		oo.state_dir = arg;
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num > 0)
			argp_error(state, "unexpected argument '%s'", arg);
		if (!strcmp(arg, "createRuntime") || !strcmp(arg, "prestart"))
			oo.stage = STAGE_CREATE;
		else if (!strcmp(arg, "poststop"))
			oo.stage = STAGE_POSTSTOP;
		else
			argp_error(state, "unknown STAGE '%s' (createRuntime, prestart or poststop)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, "[STAGE]",
	"An OCI runtime hook (runc, crun; podman, CRI-O, containerd): reads the container's state (JSON) on stdin "
	"and applies its annotations rdmactl.io/max-KIND (every kind of 'rdmactl quota', values as there: "
	"\"64\", \"8G\", \"unlimited\") to the container's cgroup with 'rdmactl quota set KIND N --cgroup DIR "
	"--kernel' at createRuntime (or prestart), and takes them off at poststop. A bad annotation fails the "
	"hook, so the container does not start; then nothing of it was applied. A container without rdmactl.io/ "
	"annotations is left alone. STAGE: createRuntime, prestart or poststop; by default the state's status "
	"says (creating or created: apply; stopped: remove).\v"
	"Examples:\n"
	"  cp /usr/local/share/containers/oci/hooks.d/rdmactl.json /etc/containers/oci/hooks.d/\n"
	"  podman run --annotation rdmactl.io/max-qp=64 --annotation rdmactl.io/max-mr-bytes=8G \\\n"
	"      --device /dev/infiniband/uverbs0 IMAGE ./train\n",
	children, NULL, NULL,
};

/* The kind of an annotation key rdmactl.io/max-OPT, or -1. */
static int ann_kind(const char *key)
{
	int k;

	if (strncmp(key, OCI_ANN_MAX, strlen(OCI_ANN_MAX)))
		return -1;
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (!strcmp(key + strlen(OCI_ANN_MAX), kind_opt[k]))
			return k;
	return -1;
}

/* Every annotation checked before anything is applied: limit[] filled, or an error naming the annotation. */
static int read_annotations(const struct ocistate *st, uint64_t limit[LEDGER_NKINDS], bool *any)
{
	unsigned int i;
	int k, ret;

	*any = false;
	for (k = 0; k < LEDGER_NKINDS; k++)
		limit[k] = LEDGER_UNLIMITED;
	for (i = 0; i < st->nann; i++) {
		const struct ocistate_ann *a = &st->ann[i];

		k = ann_kind(a->key);
		if (k < 0) {
			char known[256] = "";
			size_t at = 0;
			int j;

			for (j = 0; j < LEDGER_NKINDS && at < sizeof(known); j++)
				at += snprintf(known + at, sizeof(known) - at, "%s%s", j ? " " : "", kind_opt[j]);
			pr_err("annotation %s: unknown (rdmactl.io/max-KIND, KIND one of: %s); the container does not "
			       "start",
			       a->key, known);
			return -EINVAL;
		}
		if (!strcmp(a->value, "unlimited") || !strcmp(a->value, "max"))
			continue;
		ret = k == LEDGER_MR_BYTES ? parse_size(a->value, LEDGER_UNLIMITED - 1, &limit[k])
					   : parse_u64(a->value, 0, LEDGER_UNLIMITED - 1, &limit[k]);
		if (ret) {
			pr_err("annotation %s: invalid value '%s' (%s); the container does not start", a->key, a->value,
			       k == LEDGER_MR_BYTES ? "a size like 4096, 64K or 8G, or 'unlimited'"
						    : "a whole number, or 'unlimited'");
			return -EINVAL;
		}
		*any = true;
	}
	return 0;
}

/* A container id usable as a file name: [A-Za-z0-9_.-], not starting with '.'. */
static bool id_ok(const char *id)
{
	const char *c;

	if (!*id || *id == '.')
		return false;
	for (c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
		      *c == '-' || *c == '.'))
			return false;
	return true;
}

static const char *state_dir(void)
{
	const char *env = getenv(OCI_ENV_STATE_DIR);

	if (oo.state_dir)
		return oo.state_dir;
	return env && *env ? env : OCI_STATE_DIR;
}

static int mkdirs(const char *path)
{
	char buf[PATH_MAX], *s;

	snprintf(buf, sizeof(buf), "%s", path);
	for (s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The record of what createRuntime applied, for poststop (which has no pid): "cgroup DIR" and "KIND VALUE" lines. */
static int save(const char *file, const char *dir, const uint64_t limit[LEDGER_NKINDS])
{
	char tmp[PATH_MAX + 8];
	FILE *f;
	int k, ret;

	ret = mkdirs(state_dir());
	if (ret) {
		pr_err("cannot create %s: %s (--state-dir DIR: a directory root may write)", state_dir(), strerror(-ret));
		return ret;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "we");
	if (!f) {
		ret = -errno;
		pr_err("cannot write %s: %s", tmp, strerror(-ret));
		return ret;
	}
	fprintf(f, "cgroup %s\n", dir);
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (limit[k] != LEDGER_UNLIMITED)
			fprintf(f, "%s %" PRIu64 "\n", ledger_kind_name(k), limit[k]);
	if (fclose(f) || rename(tmp, file)) {
		ret = -errno;
		pr_err("cannot write %s: %s", file, strerror(-ret));
		unlink(tmp);
		return ret;
	}
	return 0;
}

/* -ENOENT when createRuntime left no record (nothing was applied). */
static int load(const char *file, char *dir, size_t dirlen, uint64_t limit[LEDGER_NKINDS])
{
	char line[PATH_MAX + 16], name[32];
	uint64_t v;
	FILE *f;
	int k, ret = -EPROTO;

	for (k = 0; k < LEDGER_NKINDS; k++)
		limit[k] = LEDGER_UNLIMITED;
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "cgroup /", 8)) {
			size_t l = strlen(line + 7);

			if (l < dirlen) {
				memcpy(dir, line + 7, l + 1);
				ret = 0;
			}
			continue;
		}
		if (sscanf(line, "%31s %" SCNu64, name, &v) != 2)
			continue;
		k = match_word(name, ledger_kind_names, LEDGER_NKINDS);
		if (k >= 0 && !strcmp(ledger_kind_names[k], name))
			limit[k] = v;
	}
	fclose(f);
	return ret;
}

static int create_stage(const struct ocistate *st, const char *file, const uint64_t limit[LEDGER_NKINDS])
{
	char root[PATH_MAX], cg[PATH_MAX], dir[PATH_MAX * 2], err[2048];
	int ret;

	if (st->pid <= 0) {
		pr_err("the state has no pid: createRuntime or prestart runs the hook with the container's pid (is the "
		       "hook registered for another stage?)");
		return EXIT_FAIL;
	}
	ret = proc_cgroup(st->pid, cg, sizeof(cg));
	if (ret) {
		pr_err("cannot read the cgroup of the container's process %d: %s (a cgroup v2 host?)", (int)st->pid,
		       strerror(-ret));
		return EXIT_FAIL;
	}
	if (!strcmp(cg, "/")) {
		pr_err("the container's process %d is in the root cgroup, which takes no limits", (int)st->pid);
		return EXIT_FAIL;
	}
	cgroup2_root(root, sizeof(root));
	snprintf(dir, sizeof(dir), "%s%s", root, cg);
	/* recorded first: a hook killed half way still leaves poststop what to take back */
	if (save(file, dir, limit))
		return EXIT_FAIL;
	if (cgquota_apply("/proc/self/exe", NULL, dir, limit, err, sizeof(err))) {
		pr_err("container %s: %s; nothing of its rdmactl.io/ annotations was applied", st->id, err);
		unlink(file);
		return EXIT_FAIL;
	}
	pr_debug("container %s: limits on %s", st->id, dir);
	return EXIT_OK;
}

/* The ledger's limits of a cgroup that no longer exists, by its name. */
static int forget_cgroup(const char *dir, const uint64_t limit[LEDGER_NKINDS])
{
	struct ledger_scope sc = { .type = LEDGER_SCOPE_CGROUP };
	char root[PATH_MAX];
	struct ledger *l;
	size_t n;
	int k, ret;

	cgroup2_root(root, sizeof(root));
	n = strlen(root);
	if (strncmp(dir, root, n) || dir[n] != '/' || ledger_cgroup_normalize(dir + n, sc.name, sizeof(sc.name)))
		return -EINVAL;
	ret = ledger_open(NULL, LEDGER_POLICY_RW, &l);
	if (ret == -ENOENT)
		return 0; /* no ledger: nothing kept */
	if (ret)
		return ret;
	for (k = 0; k < LEDGER_NKINDS && !ret; k++) {
		if (limit[k] == LEDGER_UNLIMITED)
			continue;
		ret = ledger_set_limit(l, &sc, k, LEDGER_UNLIMITED);
		if (ret == -ENOENT)
			ret = 0;
	}
	ledger_close(l);
	return ret;
}

static int poststop_stage(const struct ocistate *st, const char *file)
{
	uint64_t limit[LEDGER_NKINDS];
	char dir[PATH_MAX], err[2048], out[1024];
	char *gc[] = { "rdmactl", "quota", "gc", NULL };
	struct stat sb;
	int ret;

	ret = load(file, dir, sizeof(dir), limit);
	if (ret == -ENOENT)
		return EXIT_OK; /* nothing was applied */
	if (ret) {
		pr_err("container %s: cannot read %s: %s (remove the limits with 'rdmactl quota unset KIND --cgroup "
		       "DIR --kernel')",
		       st->id, file, strerror(-ret));
		return EXIT_FAIL;
	}
	ret = EXIT_OK;
	if (!stat(dir, &sb)) {
		if (cgquota_remove("/proc/self/exe", NULL, dir, limit, err, sizeof(err))) {
			pr_err("container %s: %s", st->id, err);
			ret = EXIT_FAIL;
		}
	} else {
		/*
		 * The runtime removed the cgroup before poststop (runc does), so 'quota unset --cgroup' cannot name
		 * it any more: its ledger limits go by name, and the gc drops the kernel's scope of a cgroup gone.
		 */
		int gret = forget_cgroup(dir, limit);

		if (gret) {
			pr_err("container %s: cannot remove the ledger limits of its cgroup %s: %s", st->id, dir,
			       *ledger_error() ? ledger_error() : strerror(-gret));
			ret = EXIT_FAIL;
		}
		gret = cgquota_run("/proc/self/exe", NULL, gc, out, sizeof(out));

		if (gret) {
			pr_err("container %s: its cgroup %s is gone and 'rdmactl quota gc' failed: %s", st->id, dir,
			       gret < 0 ? strerror(-gret) : out);
			ret = EXIT_FAIL;
		}
	}
	if (ret == EXIT_OK)
		unlink(file);
	return ret;
}

int cmd_oci_hook(int argc, char **argv)
{
	static char buf[OCISTATE_MAX_INPUT + 1];
	struct ocistate st;
	uint64_t limit[LEDGER_NKINDS];
	char err[256], file[PATH_MAX];
	enum stage stage;
	size_t len = 0;
	ssize_t n;
	bool any;
	int idx;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &idx, NULL))
		return EXIT_USAGE;
	while (len < sizeof(buf)) {
		n = read(0, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			pr_err("cannot read the OCI state on stdin: %s", strerror(errno));
			return EXIT_FAIL;
		}
		if (!n)
			break;
		len += n;
	}
	if (ocistate_parse(buf, len, &st, err, sizeof(err))) {
		pr_err("cannot read the OCI state on stdin: %s (the runtime passes the container's state as JSON)", err);
		return EXIT_FAIL;
	}
	if (read_annotations(&st, limit, &any))
		return EXIT_FAIL;
	stage = oo.stage;
	if (stage == STAGE_AUTO) {
		if (!strcmp(st.status, "stopped"))
			stage = STAGE_POSTSTOP;
		else if (!strcmp(st.status, "creating") || !strcmp(st.status, "created"))
			stage = STAGE_CREATE;
		else {
			pr_err("container %s: status '%s': give the STAGE (createRuntime, prestart or poststop)", st.id,
			       st.status);
			return EXIT_USAGE;
		}
	}
	if (stage == STAGE_CREATE && !any)
		return EXIT_OK; /* nothing asked: the container is left alone */
	if (!id_ok(st.id)) {
		pr_err("container id '%s' is empty or not made of [A-Za-z0-9_.-]", st.id);
		return EXIT_FAIL;
	}
	snprintf(file, sizeof(file), "%s/%s", state_dir(), st.id);
	return stage == STAGE_CREATE ? create_stage(&st, file, limit) : poststop_stage(&st, file);
}
