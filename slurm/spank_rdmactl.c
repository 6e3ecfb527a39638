// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdmactl's Slurm SPANK plugin: srun --rdma-max-KIND=N runs each step as one rdmactl job (slurm-JOB.STEP)
 * under those limits, with the interceptor in its tasks and the kernel limits on the step's cgroup.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "engines/cgquota.h"
#include "core/cgroup.h"
#include "core/kinds.h"
#include "ledger/ledger.h"
#include "core/proc.h"
#include "core/util.h"

#ifndef RDMACTL_BINDIR
#define RDMACTL_BINDIR "/usr/local/bin"
#endif
#ifndef RDMACTL_LIBDIR
#define RDMACTL_LIBDIR "/usr/local/lib"
#endif

SPANK_PLUGIN(rdmactl, 1);

#define P "rdmactl: "

enum kernel_mode { KERNEL_AUTO, KERNEL_YES, KERNEL_NO };

static struct {
	/* plugstack.conf */
	uint64_t ceiling[LEDGER_NKINDS];
	char rdmactl[PATH_MAX];
	char preload[PATH_MAX];
	const char *ledger_arg;
	enum kernel_mode kernel;
	/* the user's request */
	uint64_t req[LEDGER_NKINDS];
	bool asked[LEDGER_NKINDS];
	char given[LEDGER_NKINDS][32];
	/* the step (slurmstepd) */
	struct ledger *l;
	char job[LEDGER_NAME_MAX];
	uint64_t limit[LEDGER_NKINDS];
	bool kernel_tried;
	bool kernel_failed; /* the step must not run: its tasks are stopped before they exec */
	char cgdir[PATH_MAX];
	uint64_t klimit[LEDGER_NKINDS]; /* what is on cgdir */
	char ledger_path[PATH_MAX];
} sp = { .rdmactl = RDMACTL_BINDIR "/rdmactl", .preload = RDMACTL_LIBDIR "/rdmactl/librdmactl-preload.so" };

static int parse_value(int k, const char *s, uint64_t *out)
{
	if (!strcmp(s, "unlimited")) {
		*out = LEDGER_UNLIMITED;
		return 0;
	}
	return k == LEDGER_MR_BYTES ? parse_size(s, LEDGER_UNLIMITED - 1, out)
				    : parse_u64(s, 0, LEDGER_UNLIMITED - 1, out);
}

static const char *value_hint(int k)
{
	return k == LEDGER_MR_BYTES ? "a decimal size like 4096, 64M or 8G, or 'unlimited'"
				    : "a decimal whole number, or 'unlimited'";
}

static int opt_cb(int val, const char *optarg, int remote)
{
	(void)remote;
	if (val < 0 || val >= LEDGER_NKINDS)
		return -1;
	if (!optarg || parse_value(val, optarg, &sp.req[val])) {
		slurm_error(P "--rdma-max-%s: invalid value '%s' (%s)", kind_opt[val], optarg ? optarg : "", value_hint(val));
		return -1;
	}
	sp.asked[val] = true;
	snprintf(sp.given[val], sizeof(sp.given[val]), "%s", optarg);
	return 0;
}

#define KIND_ARG_N "N"
#define KIND_ARG_B "SIZE"
#define KIND_ARG_C "N"
static struct spank_option options[] = {
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) \
	KINDS_IF(led, { "rdma-max-" opt, KIND_ARG_##unit, "RDMA limit of the step: " help, 1, LEDGER_##NAME, opt_cb }, )
	KINDS(X)
#undef X
	SPANK_OPTIONS_TABLE_END
};

/* plugstack.conf arguments: max_KIND=VALUE (site ceilings), rdmactl=PATH, preload=PATH, ledger=PATH, kernel=MODE */
static int parse_args(int ac, char **av)
{
	char word[64];
	int i, k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		sp.ceiling[k] = LEDGER_UNLIMITED;
	for (i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '='), *v;
		size_t n;

		if (!eq || eq == av[i] || (size_t)(eq - av[i]) >= sizeof(word))
			goto bad;
		n = eq - av[i];
		memcpy(word, av[i], n);
		word[n] = '\0';
		for (char *c = word; *c; c++)
			if (*c == '_')
				*c = '-';
		v = eq + 1;
		if (!strcmp(word, "rdmactl") && *v == '/') {
			snprintf(sp.rdmactl, sizeof(sp.rdmactl), "%s", v);
			continue;
		}
		if (!strcmp(word, "preload") && *v == '/') {
			snprintf(sp.preload, sizeof(sp.preload), "%s", v);
			continue;
		}
		if (!strcmp(word, "ledger") && *v == '/') {
			sp.ledger_arg = v;
			continue;
		}
		if (!strcmp(word, "kernel")) {
			if (!strcmp(v, "auto"))
				sp.kernel = KERNEL_AUTO;
			else if (!strcmp(v, "yes"))
				sp.kernel = KERNEL_YES;
			else if (!strcmp(v, "no"))
				sp.kernel = KERNEL_NO;
			else
				goto bad;
			continue;
		}
		if (strncmp(word, "max-", 4))
			goto bad;
		for (k = 0; k < LEDGER_NKINDS; k++)
			if (!strcmp(word + 4, kind_opt[k]))
				break;
		if (k == LEDGER_NKINDS)
			goto bad;
		if (parse_value(k, v, &sp.ceiling[k])) {
			slurm_error(P "plugstack.conf: %s: invalid value '%s' (%s)", av[i], v, value_hint(k));
			return -1;
		}
	}
	return 0;
bad:
	slurm_error(P "plugstack.conf: unknown argument '%s' (max_KIND=VALUE for a kind of 'rdmactl quota', "
		    "rdmactl=/PATH, preload=/PATH, ledger=/PATH, kernel=auto|yes|no; see rdmactl-slurm(8))",
		    av[i]);
	return -1;
}

int slurm_spank_init(spank_t sp_, int ac, char **av)
{
	spank_context_t ctx;
	size_t i;

	if (parse_args(ac, av))
		return -1;
	ctx = spank_context();
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
		return 0; /* slurmd itself, prolog and epilog: no options there */
	for (i = 0; options[i].name; i++)
		if (spank_option_register(sp_, &options[i]) != ESPANK_SUCCESS) {
			slurm_error(P "cannot register --%s", options[i].name);
			return -1;
		}
	return 0;
}

/* A request above the site's ceiling is refused where it is made (srun, sbatch), before anything runs. */
static int check_ceilings(void)
{
	char c[32];
	int k, bad = 0;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (!sp.asked[k] || sp.ceiling[k] == LEDGER_UNLIMITED || sp.req[k] <= sp.ceiling[k])
			continue;
		if (k == LEDGER_MR_BYTES)
			fmt_size(sp.ceiling[k], c, sizeof(c));
		else
			snprintf(c, sizeof(c), "%" PRIu64, sp.ceiling[k]);
		/* "queue pairs", "registered bytes": the help text up to its parenthesis */
		slurm_error(P "--rdma-max-%s=%s is above this cluster's ceiling of %s %.*s per step (max_%s in "
			    "plugstack.conf): ask for at most %s",
			    kind_opt[k], sp.given[k], c, (int)(strcspn(kind_help[k], "(") - !!strchr(kind_help[k], '(')),
			    kind_help[k], ledger_kind_name(k), c);
		bad++;
	}
	return bad ? -1 : 0;
}

/* slurm-JOB.STEP, with the names Slurm gives its special steps. */
static int step_name(spank_t s, char *out, size_t len, bool *skip)
{
	uint32_t job, step;
	char st[16];

	*skip = false;
	if (spank_get_item(s, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(s, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return -1;
	switch (step) {
	case SLURM_EXTERN_CONT:
		*skip = true; /* the extern step holds adopted ssh sessions, not the job's tasks */
		return 0;
	case SLURM_BATCH_SCRIPT:
		snprintf(st, sizeof(st), "batch");
		break;
	case SLURM_INTERACTIVE_STEP:
		snprintf(st, sizeof(st), "interactive");
		break;
	default:
		snprintf(st, sizeof(st), "%" PRIu32, step);
		break;
	}
	snprintf(out, len, "slurm-%" PRIu32 ".%s", job, st);
	return 0;
}

/* slurmstepd: the step becomes a ledger job owned by slurmstepd (released at exit; the gc takes it if it dies). */
static int start_step(spank_t s)
{
	bool any = false, skip;
	int k, ret;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		sp.limit[k] = sp.asked[k] ? sp.req[k] : sp.ceiling[k];
		any |= sp.limit[k] != LEDGER_UNLIMITED;
	}
	if (!any)
		return 0; /* nothing asked, no ceiling: the step runs as if the plugin were not there */
	if (step_name(s, sp.job, sizeof(sp.job), &skip)) {
		slurm_error(P "cannot get the job and step id");
		return -1;
	}
	if (skip)
		return 0;
	if (access(sp.preload, R_OK)) {
		slurm_error(P "step %s: cannot use the interceptor %s: %s (preload=/PATH in plugstack.conf)", sp.job,
			    sp.preload, strerror(errno));
		return -1;
	}
	ret = ledger_open(sp.ledger_arg, LEDGER_CREATE, &sp.l);
	if (ret) {
		slurm_error(P "step %s: cannot open the ledger %s: %s (rdmactl quota init recreates it)", sp.job,
			    sp.ledger_arg ? sp.ledger_arg : ledger_default_path(), ledger_error());
		return -1;
	}
	snprintf(sp.ledger_path, sizeof(sp.ledger_path), "%s", ledger_path(sp.l));
	ret = ledger_job_create(sp.l, sp.job, sp.limit);
	if (ret == -EEXIST) {
		/* a step of this name whose slurmstepd died (node failure, requeue): its entry goes if it holds nothing */
		ledger_gc(sp.l, NULL);
		ret = ledger_job_create(sp.l, sp.job, sp.limit);
	}
	if (ret) {
		slurm_error(P "step %s: cannot create its rdmactl job in %s: %s", sp.job, sp.ledger_path,
			    *ledger_error() ? ledger_error() : strerror(-ret));
		ledger_close(sp.l);
		sp.l = NULL;
		return -1;
	}
	slurm_verbose(P "step %s: rdmactl job in %s", sp.job, sp.ledger_path);
	return 0;
}

int slurm_spank_init_post_opt(spank_t s, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (check_ceilings())
		return -1;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return start_step(s);
}

/* In the task, as the user, just before exec: the interceptor first in LD_PRELOAD, and the job's name. */
static int prepend(spank_t s, const char *var, const char *lib)
{
	char old[4096], val[sizeof(old) + PATH_MAX + 2];
	spank_err_t e = spank_getenv(s, var, old, sizeof(old));

	if (e == ESPANK_SUCCESS && *old) {
		/* a step started inside a batch step under the plugin already has it */
		if (!strncmp(old, lib, strlen(lib)) && (old[strlen(lib)] == ':' || !old[strlen(lib)]))
			return 0;
		snprintf(val, sizeof(val), "%s:%s", lib, old);
	} else {
		snprintf(val, sizeof(val), "%s", lib);
	}
	return spank_setenv(s, var, val, 1) == ESPANK_SUCCESS ? 0 : -1;
}

int slurm_spank_task_init(spank_t s, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!sp.l)
		return 0;
	if (prepend(s, "LD_PRELOAD", sp.preload) || prepend(s, "LD_AUDIT", sp.preload) ||
	    spank_setenv(s, LEDGER_ENV_JOB, sp.job, 1) != ESPANK_SUCCESS ||
	    spank_setenv(s, LEDGER_ENV_PATH, sp.ledger_path, 1) != ESPANK_SUCCESS) {
		slurm_error(P "step %s: cannot set the task's environment", sp.job);
		return -1;
	}
	return 0;
}

/* The step's cgroup from a task's: .../job_J/step_S[/user/task_T] -> .../job_J/step_S. */
static int step_cgroup(pid_t pid, char *out, size_t len)
{
	char cg[PATH_MAX], root[PATH_MAX], *p, *end;
	int ret = proc_cgroup(pid, cg, sizeof(cg));

	if (ret)
		return ret;
	p = strstr(cg, "/step_");
	if (!p)
		return -ENOENT;
	end = strchr(p + 1, '/');
	if (end)
		*end = '\0';
	cgroup2_root(root, sizeof(root));
	if ((size_t)snprintf(out, len, "%s%s", root, cg) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * A task of a step that must not run, stopped before it execs. Returning an error from task_post_fork would
 * do that too, but srun then reports a launch failure and exits 0 (Slurm 22.05, seen in the lab), so a job
 * script would go on as if the step had run: the task is killed instead, and srun fails with it.
 */
static int stop_task(pid_t pid)
{
	if (kill(pid, SIGKILL) && errno != ESRCH) {
		slurm_error(P "step %s: cannot stop task %d: %s", sp.job, (int)pid, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * slurmstepd, root, after each task was forked and put in the step's cgroup, before it execs: for the first,
 * the kernel limits on the step's cgroup, through 'rdmactl quota set --kernel'. With kernel=yes, and
 * kernel=auto on a host where BPF LSM is active, no task of a step whose kernel limits cannot be applied
 * execs: a step that was to be kernel-limited does not run on the interceptor alone. kernel=auto without BPF
 * LSM tries the rdma cgroup's rdma.max (what quota set --kernel falls back to), and runs the step under the
 * interceptor when that cannot hold the limits.
 */
int slurm_spank_task_post_fork(spank_t s, int ac, char **av)
{
	char err[2048], lsm[640] = "", why[768];
	bool must;
	pid_t pid;
	int k, ret;

	(void)ac;
	(void)av;
	if (!sp.l || sp.kernel == KERNEL_NO)
		return 0;
	if (spank_get_item(s, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		pid = 0;
	if (sp.kernel_tried) {
		if (!sp.kernel_failed)
			return 0;
		return pid > 0 ? stop_task(pid) : -1;
	}
	sp.kernel_tried = true;
	must = sp.kernel == KERNEL_YES || lsm_active("bpf", lsm, sizeof(lsm)); /* kernel=auto from here */
	if (pid <= 0) {
		/* a path Slurm does not take: only a step that must be kernel-limited is stopped for it */
		sp.kernel_failed = must;
		if (!must) {
			slurm_verbose(P "step %s: no pid for a task, so no kernel limits: the interceptor alone "
				      "enforces this step's limits (kernel=auto: %s)", sp.job, lsm);
			return 0;
		}
		slurm_error(P "step %s: no pid for a task, so no kernel limits: the step does not run (%s; kernel=no "
			    "in plugstack.conf runs steps on the interceptor alone)", sp.job,
			    sp.kernel == KERNEL_YES ? "kernel=yes" : "kernel=auto, and BPF LSM is active");
		return -1;
	}
	if (sp.kernel == KERNEL_YES)
		snprintf(why, sizeof(why), "the step does not run: kernel=yes");
	else if (must)
		snprintf(why, sizeof(why), "the step does not run: kernel=auto, and BPF LSM is active");
	else
		snprintf(why, sizeof(why), "the interceptor alone enforces this step's limits (kernel=auto: %s)", lsm);
	ret = step_cgroup(pid, sp.cgdir, sizeof(sp.cgdir));
	if (ret) {
		sp.cgdir[0] = '\0';
		if (!must) {
			slurm_verbose(P "step %s: no cgroup of its own: %s", sp.job, why);
			return 0;
		}
		slurm_error(P "step %s: no cgroup of its own (%s), so no kernel limits; %s (they need Slurm's cgroup "
			    "v2 plugin, ProctrackType=proctrack/cgroup; kernel=no in plugstack.conf runs steps on the "
			    "interceptor alone)", sp.job, strerror(-ret), why);
		sp.kernel_failed = true;
		return stop_task(pid);
	}
	for (k = 0; k < LEDGER_NKINDS; k++)
		sp.klimit[k] = k == LEDGER_WR ? LEDGER_UNLIMITED : sp.limit[k]; /* the job has the wr cap */
	if (cgquota_apply(sp.rdmactl, sp.ledger_path, sp.cgdir, sp.klimit, err, sizeof(err))) {
		slurm_error(P "step %s: kernel limits on %s not applied: %s; %s%s", sp.job, sp.cgdir, err, why,
			    must ? " (kernel=no in plugstack.conf runs steps on the interceptor alone)" : "");
		sp.cgdir[0] = '\0';
		sp.kernel_failed = must;
		return must ? stop_task(pid) : 0;
	}
	slurm_verbose(P "step %s: kernel limits on %s", sp.job, sp.cgdir);
	return 0;
}

/* slurmstepd, once the tasks are gone (normal end, scancel): the kernel limits off, the job released. */
int slurm_spank_exit(spank_t s, int ac, char **av)
{
	char err[2048];

	(void)s;
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || !sp.l)
		return 0;
	/* the job first (a write to the ledger); taking the kernel limits off may detach the programs (slower) */
	ledger_job_release(sp.l, sp.job);
	if (sp.cgdir[0] && cgquota_remove(sp.rdmactl, sp.ledger_path, sp.cgdir, sp.klimit, err, sizeof(err)))
		slurm_error(P "step %s: %s", sp.job, err);
	ledger_close(sp.l);
	sp.l = NULL;
	return 0;
}
