// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl run: start a command as a job under RDMA resource limits, enforced by the preload in every process. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "kq/backstop.h"
#include "kq/kq.h"
#include "ledger/ledger.h"
#include "core/proc.h"
#include "rdmactl.h"
#include "core/util.h"

#define PRELOAD_NAME LEDGER_PRELOAD_NAME

enum {
	OPT_FAIL_OPEN = 0x100,
	OPT_FAIL_CLOSED,
	OPT_KERNEL,
	OPT_MAX_FIRST, /* --max-<kind>: OPT_MAX_FIRST + enum ledger_kind */
};

static struct {
	uint64_t limit[LEDGER_NKINDS];
	const char *job;
	const char *cgroup;
	const char *log;
	const char *fail;
	bool kernel;
	int cmd; /* index of CMD in argv */
} run_opts;

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Limits for the whole job (every process CMD starts shares them):", 1 },
#define KIND_ARG_N "N"
#define KIND_ARG_B "SIZE"
#define KIND_ARG_C "N"
/* and, hidden, --max-NAME: a kind spelt with '_' (lib/core/kinds.h; where NAME is OPT, getopt sees one option) */
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help)                                  \
	KINDS_IF(led, { "max-" opt, OPT_MAX_FIRST + LEDGER_##NAME, KIND_ARG_##unit, 0, help, 1 },        \
		 { "max-" #name, OPT_MAX_FIRST + LEDGER_##NAME, NULL, OPTION_ALIAS | OPTION_HIDDEN, NULL, 1 }, )
	KINDS(X)
#undef X
	{ NULL, 0, NULL, 0, "Job:", 2 },
	{ "job", 'J', "NAME", 0, "job name (default: CMD's name and rdmactl's pid); "
				  "'rdmactl quota set KIND N --job NAME' changes limits while it runs", 2 },
	{ "cgroup", 'c', "PATH", 0, "start CMD (and so its whole tree) in this cgroup v2: absolute, or relative to "
				      "the cgroup2 mount", 2 },
	{ "log", 'l', "FILE", 0, "append refusal lines to FILE instead of CMD's stderr", 2 },
	{ "kernel", OPT_KERNEL, NULL, 0, "the kernel enforces the limits too (BPF LSM): CMD runs in a child cgroup of "
					 "its own (below --cgroup PATH, else below rdmactl's cgroup) that carries them, so "
					 "that programs the interceptor cannot see (static, raw ioctl) are held to them", 2 },
	{ "fail-open", OPT_FAIL_OPEN, NULL, 0, "if the ledger becomes unusable, let creations through (default)", 2 },
	{ "fail-closed", OPT_FAIL_CLOSED, NULL, 0, "if the ledger becomes unusable, refuse every creation", 2 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	int kind, ret;

	switch (key) {
	case 'J':
		if (!*arg || strlen(arg) >= LEDGER_NAME_MAX)
			argp_error(state, "job name must be 1 to %d characters", LEDGER_NAME_MAX - 1);
		run_opts.job = arg;
		break;
	case 'c':
		run_opts.cgroup = arg;
		break;
	case 'l':
		run_opts.log = arg;
		break;
	case OPT_KERNEL:
		run_opts.kernel = true;
		break;
	case OPT_FAIL_OPEN:
	case OPT_FAIL_CLOSED:
		if (run_opts.fail)
			argp_error(state, "--fail-open and --fail-closed are mutually exclusive");
		run_opts.fail = key == OPT_FAIL_OPEN ? "open" : "closed";
		break;
	case ARGP_KEY_ARG:
		/* CMD: everything from here on belongs to it. */
		run_opts.cmd = state->next - 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!run_opts.cmd)
			argp_error(state, "missing CMD");
		break;
	default:
		kind = key - OPT_MAX_FIRST;
		if (kind < 0 || kind >= LEDGER_NKINDS)
			return ARGP_ERR_UNKNOWN;
		if (!strcmp(arg, "unlimited")) {
			run_opts.limit[kind] = LEDGER_UNLIMITED;
			break;
		}
		ret = kind == LEDGER_MR_BYTES ? parse_size(arg, LEDGER_UNLIMITED - 1, &run_opts.limit[kind])
					      : parse_u64(arg, 0, LEDGER_UNLIMITED - 1, &run_opts.limit[kind]);
		if (ret)
			argp_error(state, "--max-%s: invalid value '%s': %s (%s)", kind_opt[kind], arg,
				   parse_why(arg, ret, kind == LEDGER_MR_BYTES),
				   kind == LEDGER_MR_BYTES ? "a size like 64M" : "a decimal count or 'unlimited'");
		break;
	}
	return 0;
}

static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
static const struct argp argp = {
	options, parse_opt, "-- CMD [ARGS...]",
	"Run CMD as a job under RDMA resource limits. The limits are in the ledger before CMD starts; the "
	"interceptor (" PRELOAD_NAME ", via LD_PRELOAD and LD_AUDIT) charges every verbs resource that CMD "
	"and its descendants create against them. Over a limit, the verb fails with ENOMEM and one line on "
	"stderr says why. rdmactl exits with CMD's status (128+N if it was killed by signal N).\v"
	"Examples:\n"
	"  rdmactl run --max-qp 5 -- ./app\n"
	"  rdmactl run --job train --max-qp 64 --max-mr-bytes 8G -- mpirun -np 8 ./train\n"
	"  rdmactl quota set qp 128 --job train      # while it runs\n"
	"  rdmactl run --max-wr 256 --log /tmp/refusals -- ib_write_bw -x 1 -q 4 host\n"
	"  rdmactl run --kernel --max-qp 8 -- ./statically-linked-app\n",
	children, NULL, NULL,
};

/* The preload next to the binary (build tree), else ../lib/rdmactl/ (installed); $RDMACTL_PRELOAD wins. */
int run_find_preload(char *out, size_t len)
{
	const char *env = getenv("RDMACTL_PRELOAD");
	char exe[PATH_MAX], *dir;
	ssize_t n;
	int err;

	if (env && *env) {
		if (access(env, R_OK))
			return -errno;
		snprintf(out, len, "%s", env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	dir = dirname(exe);
	snprintf(out, len, "%s/%s", dir, PRELOAD_NAME);
	if (!access(out, R_OK))
		return 0;
	/* "Permission denied" next to the binary says more than the ENOENT of the installed path would */
	err = errno;
	snprintf(out, len, "%s/../lib/rdmactl/%s", dir, PRELOAD_NAME);
	if (!access(out, R_OK)) {
		char real[PATH_MAX];

		if (realpath(out, real))
			snprintf(out, len, "%s", real);
		return 0;
	}
	return err == ENOENT ? -errno : -err;
}

/* Prepend lib to a colon/space separated list variable, keeping what was there. */
static int env_prepend(const char *var, const char *lib)
{
	const char *old = getenv(var);
	char *v;
	int ret;

	if (!old || !*old)
		return setenv(var, lib, 1) ? -errno : 0;
	if (asprintf(&v, "%s:%s", lib, old) < 0)
		return -ENOMEM;
	ret = setenv(var, v, 1) ? -errno : 0;
	free(v);
	return ret;
}

/*
 * --cgroup: resolved like 'quota --cgroup' (so that both name the same cgroup) and its cgroup.procs opened
 * before anything starts. rdmactl moves CMD itself, between fork and exec (see cmd_run): a move the kernel
 * refuses is then rdmactl's failure, reported as such, and CMD never runs outside the cgroup. Returns the
 * open cgroup.procs or -errno (said why).
 */
static int open_cgroup(const char *arg)
{
	char root[PATH_MAX], dir[PATH_MAX], file[PATH_MAX + 16];
	int fd, ret;

	ret = cgroup_resolve(arg, root, sizeof(root), dir, sizeof(dir));
	if (ret == -ENOTDIR)
		pr_err("cannot move into cgroup %s: not a cgroup v2 directory (cgroup2 is mounted at %s)", arg, root);
	else if (ret == -EXDEV)
		pr_err("cannot move into cgroup %s: not under the cgroup2 mount %s", arg, root);
	else if (ret)
		pr_err("cannot move into cgroup %s: %s (a cgroup v2 directory, absolute or relative to %s)", arg,
		       strerror(-ret), root);
	if (ret)
		return ret;
	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		pr_err("cannot move into cgroup %s: %s: %s (%s)", arg, file, strerror(-ret),
		       ret == -EACCES || ret == -EPERM || ret == -EROFS ? "a cgroup delegated to you, or run as root"
									: "a cgroup v2 directory");
		return ret;
	}
	return fd;
}

/* Move process pid into the cgroup whose cgroup.procs is open as fd. */
static int move_to_cgroup(int fd, const char *arg, pid_t pid)
{
	char buf[32];
	const char *hint;
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)pid), ret;
	ssize_t w = write(fd, buf, n);

	if (w == n)
		return 0;
	ret = w < 0 ? -errno : -EIO;
	switch (ret) {
	case -EBUSY:
		hint = "it has controllers enabled in cgroup.subtree_control: only a leaf cgroup takes processes";
		break;
	case -EACCES:
	case -EPERM:
		hint = "moving needs write access to cgroup.procs of the common ancestor of rdmactl's cgroup and this one";
		break;
	case -EOPNOTSUPP:
		hint = "a threaded cgroup takes threads, not processes";
		break;
	case -ENODEV:
	case -ENOENT:
		hint = "the cgroup was removed";
		break;
	default:
		hint = "a cgroup v2 directory you may write to";
		break;
	}
	pr_err("cannot move into cgroup %s: %s (%s)", arg, strerror(-ret), hint);
	return ret;
}

static volatile sig_atomic_t child_pid;

/*
 * Forward SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to rdmactl by a process (kill, a job scheduler). Signals from
 * the terminal already reach CMD, which is in the same process group: not sent twice.
 */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill(child_pid, sig);
}

static int start_job(struct ledger *l, const char *name)
{
	int ret = ledger_job_create(l, name, run_opts.limit);

	if (ret == -EEXIST)
		pr_err("cannot create job '%s': %s (choose another --job name)", name, ledger_error());
	else if (ret)
		pr_err("cannot create job '%s' in %s: %s (%s)", name, ledger_path(l),
		       *ledger_error() ? ledger_error() : strerror(-ret), "check the ledger with 'rdmactl quota show'");
	return ret;
}

/*
 * --kernel: a child cgroup for the job (below --cgroup, else below rdmactl's own cgroup), with the job's
 * limits enforced there by the kernel. dir receives its directory. Returns 0 or an exit status (said why).
 */
static int kernel_cgroup(const char *job, char *dir, size_t len)
{
	char root[PATH_MAX], parent[PATH_MAX], own[PATH_MAX], why[600], name[LEDGER_NAME_MAX];
	size_t i;
	int ret;

	if (!kq_lsm_active(why, sizeof(why))) {
		pr_err("--kernel: BPF LSM is not active (%s): add bpf to the kernel's lsm= parameter (lsm=...,bpf) and "
		       "reboot, or run without --kernel (the interceptor alone)", why);
		return EXIT_FAIL;
	}
	if (run_opts.cgroup) {
		ret = cgroup_resolve(run_opts.cgroup, root, sizeof(root), parent, sizeof(parent));
		if (ret) {
			pr_err("--kernel: cannot use cgroup %s: %s", run_opts.cgroup, strerror(-ret));
			return EXIT_FAIL;
		}
	} else {
		cgroup2_root(root, sizeof(root));
		ret = proc_cgroup(getpid(), own, sizeof(own));
		if (ret < 0 || (size_t)snprintf(parent, sizeof(parent), "%s%s", root, own) >= sizeof(parent)) {
			pr_err("--kernel: cannot find rdmactl's own cgroup: %s", strerror(ret < 0 ? -ret : ENAMETOOLONG));
			return EXIT_FAIL;
		}
	}
	snprintf(name, sizeof(name), "%s", job);
	for (i = 0; name[i]; i++)
		if (name[i] == '/' || name[i] == '\n')
			name[i] = '_';
	if ((size_t)snprintf(dir, len, "%s/rdmactl-job-%s", parent, name) >= len) {
		pr_err("--kernel: cgroup path too long");
		return EXIT_FAIL;
	}
	if (mkdir(dir, 0755)) {
		pr_err("--kernel: cannot create the job's cgroup %s: %s%s", dir, strerror(errno),
		       errno == EEXIST ? " (another job of that name? choose another --job)" :
		       errno == EACCES || errno == EPERM || errno == EROFS ? " (root only)" : "");
		return EXIT_FAIL;
	}
	ret = kq_backstop_cgroup(dir, run_opts.limit);
	if (ret) {
		pr_err("--kernel: cannot set the kernel limits on %s: %s", dir, kq_error());
		rmdir(dir);
		return EXIT_FAIL;
	}
	pr_debug("job cgroup %s", dir);
	return 0;
}

/* After the job: its cgroup goes once empty, and with it the kernel's limits on it. */
static void kernel_cgroup_release(const char *dir)
{
	struct kq_scope sc;
	struct kq *q;
	int i;

	if (kq_scope_cgroup(dir, &sc))
		return;
	/* processes of the job that outlive CMD keep the cgroup, and their limits, alive */
	for (i = 0; i < 50 && rmdir(dir) && errno == EBUSY; i++)
		usleep(20000);
	if (!access(dir, F_OK)) {
		pr_err("note: the job's cgroup %s still has processes: its kernel limits stay until 'rdmactl quota gc' "
		       "after they are gone", dir);
		return;
	}
	if (!kq_open(false, &q)) {
		kq_remove(q, &sc);
		kq_close(q);
	}
}

/* The job's environment for CMD: the interceptor (preload and audit module), the job, the ledger, options. */
static int set_env(const char *preload, const char *job, struct ledger *l)
{
	return env_prepend("LD_PRELOAD", preload) || env_prepend("LD_AUDIT", preload) ||
	       setenv(LEDGER_ENV_JOB, job, 1) || setenv(LEDGER_ENV_PATH, ledger_path(l), 1) ||
	       (run_opts.log && setenv("RDMACTL_LOG_FILE", run_opts.log, 1)) ||
	       (run_opts.fail && setenv(LEDGER_ENV_FAIL, run_opts.fail, 1)) ||
	       (util_verbose && setenv("RDMACTL_LOG_LEVEL", "2", 1));
}

/* The child: default signals, through the gate (moved into its cgroup first) when there is one, then CMD. */
static void __attribute__((noreturn)) run_child(char **argv, const int *sigs, size_t nsigs, int gate[2])
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	size_t i;
	char go;
	ssize_t n;
	int err;

	for (i = 0; i < nsigs; i++)
		sigaction(sigs[i], &dfl, NULL);
	if (gate[0] >= 0) {
		close(gate[1]);
		while ((n = read(gate[0], &go, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			_exit(EXIT_FAIL); /* rdmactl is gone */
	}
	execvp(argv[run_opts.cmd], argv + run_opts.cmd);
	err = errno;
	pr_err("cannot run %s: %s", argv[run_opts.cmd], strerror(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* Wait for CMD: its exit status, 128 + the signal that killed it, or EXIT_FAIL. */
static int wait_exit(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			pr_err("waitpid: %s", strerror(errno));
			return EXIT_FAIL;
		}
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_FAIL;
}

/* The job's name: --job, else CMD's name and rdmactl's pid. */
static void job_name(const char *cmd, char *job, size_t len)
{
	char *c;

	if (run_opts.job) {
		snprintf(job, len, "%s", run_opts.job);
		return;
	}
	c = strdup(cmd);
	snprintf(job, len, "%.40s-%d", c ? basename(c) : "run", (int)getpid());
	free(c);
}

/*
 * The cgroup CMD is moved into, opened (*cgfd; -1: none): with --kernel the job's own (its directory in kdir,
 * made with the kernel's limits), else --cgroup's. 0, or an exit status (said why).
 */
static int job_cgroup(const char *job, char *kdir, size_t len, int *cgfd)
{
	int ret;

	*cgfd = -1;
	if (run_opts.kernel) {
		ret = kernel_cgroup(job, kdir, len);
		if (ret)
			return ret;
		*cgfd = open_cgroup(kdir);
		if (*cgfd < 0) {
			kernel_cgroup_release(kdir);
			return EXIT_FAIL;
		}
	} else if (run_opts.cgroup) {
		*cgfd = open_cgroup(run_opts.cgroup);
		if (*cgfd < 0)
			return EXIT_FAIL;
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	char preload[PATH_MAX], job[LEDGER_NAME_MAX], kdir[PATH_MAX] = "";
	struct sigaction sa = { .sa_sigaction = forward, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct ledger *l;
	int idx, ret, status, cgfd = -1, gate[2] = { -1, -1 };
	size_t i;
	pid_t pid;

	for (i = 0; i < LEDGER_NKINDS; i++)
		run_opts.limit[i] = LEDGER_UNLIMITED;
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER | ARGP_NO_HELP, &idx, NULL))
		return EXIT_USAGE;

	ret = run_find_preload(preload, sizeof(preload));
	if (ret) {
		pr_err("cannot find %s: %s (looked next to rdmactl and in ../lib/rdmactl/; set RDMACTL_PRELOAD)",
		       PRELOAD_NAME, strerror(-ret));
		return EXIT_FAIL;
	}
	job_name(argv[run_opts.cmd], job, sizeof(job));
	ret = job_cgroup(job, kdir, sizeof(kdir), &cgfd);
	if (ret)
		return ret;
	ret = ledger_open(NULL, LEDGER_CREATE, &l);
	if (ret) {
		pr_err("cannot open the ledger %s: %s (rdmactl quota init recreates it)", ledger_default_path(),
		       ledger_error());
		ret = EXIT_FAIL;
		goto out_cg;
	}
	if (start_job(l, job)) {
		ledger_close(l);
		ret = EXIT_FAIL;
		goto out_cg;
	}
	if (set_env(preload, job, l)) {
		pr_err("cannot set the environment: %s", strerror(errno));
		ret = EXIT_FAIL;
		goto out;
	}
	pr_debug("job %s, preload %s", job, preload);

	/* with --cgroup, the child waits at this gate until rdmactl has moved it (a socket: no SIGPIPE if it died) */
	if (cgfd >= 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate)) {
		pr_err("socketpair: %s", strerror(errno));
		ret = EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(fwd); i++)
		sigaction(fwd[i], &sa, NULL);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		pr_err("fork: %s", strerror(errno));
		ret = EXIT_FAIL;
		goto out;
	}
	if (!pid)
		run_child(argv, fwd, ARRAY_SIZE(fwd), gate);
	child_pid = pid;
	if (gate[0] >= 0) {
		close(gate[0]);
		gate[0] = -1;
		ret = move_to_cgroup(cgfd, kdir[0] ? kdir : run_opts.cgroup, pid);
		if (!ret && send(gate[1], "g", 1, MSG_NOSIGNAL) != 1) {
			ret = -errno;
			pr_err("cannot start %s: %s", argv[run_opts.cmd], strerror(-ret));
		}
		if (ret) {
			/* CMD never ran: nothing of it outside the cgroup */
			child_pid = 0;
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			ret = EXIT_FAIL;
			goto out;
		}
	}
	ret = wait_exit(pid);
	child_pid = 0;
out:
	/* The entry stays while a descendant of CMD still holds resources; the ledger frees it after. */
	ledger_job_release(l, job);
	ledger_close(l);
out_cg:
	for (i = 0; i < ARRAY_SIZE(gate); i++)
		if (gate[i] >= 0)
			close(gate[i]);
	if (cgfd >= 0)
		close(cgfd);
	if (kdir[0])
		kernel_cgroup_release(kdir);
	return ret;
}
