// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdmactl oci-hook: an OCI runtime hook: annotations, budget devices and the node policy become limits on a
 * container's (or its pod's) cgroup.
 */
#include <dirent.h>
#include <errno.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engines/cgquota.h"
#include "core/cgroup.h"
#include "ledger/ledger.h"
#include "engines/ocistate.h"
#include "engines/podname.h"
#include "engines/policy.h"
#include "core/proc.h"
#include "quota.h"
#include "rdmactl.h"
#include "core/kinds.h"
#include "core/util.h"

#define OCI_STATE_DIR "/run/rdmactl/oci"
#define OCI_ENV_STATE_DIR "RDMACTL_OCI_STATE_DIR"
#define OCI_ANN_MAX OCISTATE_PREFIX "max-"
#define OCI_ANN_BUDGET OCISTATE_PREFIX "budget"

enum stage { STAGE_AUTO, STAGE_CREATE, STAGE_POSTSTOP };

#define OCI_MAX_ARGS 16
#define OCI_MAX_MEMBERS 64 /* containers of one pod with a pod budget */
#define OCI_ANN_SCOPE OCISTATE_PREFIX "scope"

static struct {
	enum stage stage;
	const char *state_dir;
	const char *policy; /* NULL: $RDMACTL_CONTAINERS_CONF or /etc/rdmactl/containers.conf, if there */
	const char *limit[OCI_MAX_ARGS], *budget[OCI_MAX_ARGS];
	unsigned int nlimit, nbudget;
} oo;

static const struct argp_option options[] = {
	{ "state-dir", 's', "DIR", 0, "where the hook remembers each container's limits between its stages (default "
				      "$" OCI_ENV_STATE_DIR ", else " OCI_STATE_DIR ")", 1 },
	{ "limit", 'l', "KIND=N[,...]", 0, "limits this hook asks for the container, as an annotation would (a CDI "
					   "budget device's hook); repeatable: the smaller per kind", 1 },
	{ "budget", 'b', "NAME", 0, "the node policy's budget NAME, as rdmactl.io/budget=NAME would", 1 },
	{ "policy", 'P', "FILE", 0, "the node policy (default $" POLICY_ENV ", else " POLICY_PATH
				    "; without the file: no default, no ceiling)", 1 },
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
	case 'l':
	case 'b':
		if (!*arg)
			argp_error(state, "--%s: empty", key == 'l' ? "limit" : "budget");
		if ((key == 'l' ? oo.nlimit : oo.nbudget) >= OCI_MAX_ARGS)
			argp_error(state, "--%s: more than %d", key == 'l' ? "limit" : "budget", OCI_MAX_ARGS);
		if (key == 'l')
			oo.limit[oo.nlimit++] = arg;
		else
			oo.budget[oo.nbudget++] = arg;
		break;
	case 'P':
		if (!*arg)
			argp_error(state, "--policy: empty path");
		if (arg[0] != '/')
			argp_error(state, "--policy %s: " POLICY_ABS_WHY, arg);
		oo.policy = arg;
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
	"An OCI runtime hook (runc, crun; podman, CRI-O, containerd; a CDI device's hook): reads the container's "
	"state (JSON) on stdin and puts limits on the container's cgroup as 'rdmactl quota set KIND N --cgroup "
	"DIR --kernel' does (the same code, in this process) at createRuntime (or prestart), and takes them off "
	"at poststop. A container asks with its annotations rdmactl.io/max-KIND (every kind of 'rdmactl quota', "
	"values as there: \"64\", \"8G\", \"unlimited\") and rdmactl.io/budget=NAME (a budget of the node "
	"policy), or with the hook's --limit and "
	"--budget (CDI devices rdmactl.io/budget=NAME, see rdmactl cdi). The node policy (" POLICY_PATH ") "
	"gives a container the default budget for every kind it does not ask, and holds every kind at its "
	"ceiling: a request above it fails the hook, so the container does not start. Several requests of one "
	"container (annotations, two budget devices): the smaller per kind. A bad request fails the hook; then "
	"nothing of it was applied. A container that asks nothing, on a node without a default or ceiling, is "
	"left alone. STAGE: createRuntime, prestart or poststop; by default the state's status says (creating or "
	"created: apply; stopped: remove).\v"
	"Examples:\n"
	"  ls /usr/share/containers/oci/hooks.d/rdmactl.json   # make install put it where podman and CRI-O look\n"
	"  podman run --annotation rdmactl.io/max-qp=64 --annotation rdmactl.io/max-mr-bytes=8G \\\n"
	"      --device /dev/infiniband/uverbs0 IMAGE ./train\n"
	"  rdmactl cdi generate && podman run --device rdmactl.io/hca=all --device rdmactl.io/budget=small IMAGE\n",
	children, NULL, NULL,
};

/* The kind of an annotation key rdmactl.io/max-OPT, or -1. */
static int ann_kind(const char *key)
{
	if (strncmp(key, OCI_ANN_MAX, strlen(OCI_ANN_MAX)))
		return -1;
	/* max-mr-bytes or max-mr_bytes */
	return kind_lookup(key + strlen(OCI_ANN_MAX), strlen(key + strlen(OCI_ANN_MAX)), LEDGER_NKINDS);
}

/* One request (what): within the node's ceiling, then into asked (the smaller per kind). */
static int ask(const struct policy *pol, struct policy_limits *asked, const struct policy_limits *l,
	       const char *what)
{
	int k = policy_above_ceiling(pol, l);

	if (k >= 0) {
		char v[32] = "unlimited";

		if (l->v[k] != LEDGER_UNLIMITED)
			snprintf(v, sizeof(v), "%" PRIu64, l->v[k]);
		pr_err("%s asks %s=%s, above the node's ceiling %s=%" PRIu64 " (%s); the container does not start",
		       what, ledger_kind_names[k], v, ledger_kind_names[k], pol->ceiling.v[k], policy_path(oo.policy));
		return -EPERM;
	}
	policy_limits_min(asked, l);
	return 0;
}

/* A budget of the node policy by name (what: where the name came from). */
static int ask_budget(const struct policy *pol, struct policy_limits *asked, const char *name, const char *what)
{
	const struct policy_budget *b = policy_budget(pol, name);
	char names[POLICY_MAX_BUDGETS * 8] = "";
	size_t at = 0;
	unsigned int i;

	if (!b) {
		for (i = 0; i < pol->nbudgets && at < sizeof(names); i++)
			at += snprintf(names + at, sizeof(names) - at, "%s%s", i ? " " : "", pol->budget[i].name);
		pr_err("%s: no budget '%s' in %s (%s%s); the container does not start", what, name,
		       policy_path(oo.policy), pol->nbudgets ? "its budgets: " : "it has none", names);
		return -ENOENT;
	}
	return ask(pol, asked, &b->lim, what);
}

/*
 * Every request of the annotations and the hook's arguments checked before anything is applied. With
 * rdmactl.io/scope=pod the annotations' requests are the pod's (pod_asked, *pod set), shared by the
 * containers of the pod that say so; the hook's arguments (a CDI budget device) are the container's own.
 */
static int read_requests(const struct ocistate *st, const struct policy *pol, struct policy_limits *asked,
			 struct policy_limits *pod_asked, bool *pod)
{
	char what[OCISTATE_ANN_KEY_MAX + OCISTATE_ANN_VAL_MAX + 32], msg[256];
	struct policy_limits l, *ann_asked = asked;
	unsigned int i;
	int k, err;

	memset(asked, 0, sizeof(*asked));
	memset(pod_asked, 0, sizeof(*pod_asked));
	*pod = false;
	for (i = 0; i < st->nann; i++) {
		if (strcmp(st->ann[i].key, OCI_ANN_SCOPE))
			continue;
		if (!strcmp(st->ann[i].value, "pod")) {
			*pod = true;
			ann_asked = pod_asked;
		} else if (strcmp(st->ann[i].value, "container")) {
			pr_err("annotation %s=%s: the scope is 'pod' (one budget for the pod's containers) or "
			       "'container'; the container does not start", st->ann[i].key, st->ann[i].value);
			return -EINVAL;
		}
	}
	for (i = 0; i < st->nann; i++) {
		const struct ocistate_ann *a = &st->ann[i];

		snprintf(what, sizeof(what), "annotation %s=%s", a->key, a->value);
		if (!strcmp(a->key, OCI_ANN_SCOPE))
			continue;
		if (!strcmp(a->key, OCI_ANN_BUDGET)) {
			if (ask_budget(pol, ann_asked, a->value, what))
				return -EINVAL;
			continue;
		}
		k = ann_kind(a->key);
		if (k < 0) {
			char known[256] = "";
			size_t at = 0;
			int j;

			for (j = 0; j < LEDGER_NKINDS && at < sizeof(known); j++)
				at += snprintf(known + at, sizeof(known) - at, "%s%s", j ? " " : "", kind_opt[j]);
			pr_err("annotation %s: unknown (rdmactl.io/max-KIND, KIND one of: %s; rdmactl.io/budget, rdmactl.io/scope); the "
			       "container does not start",
			       a->key, known);
			return -EINVAL;
		}
		memset(&l, 0, sizeof(l));
		l.set = 1u << k;
		if (!strcmp(a->value, "unlimited") || !strcmp(a->value, "max")) {
			l.v[k] = LEDGER_UNLIMITED;
		} else if ((err = k == LEDGER_MR_BYTES ? parse_size(a->value, LEDGER_UNLIMITED - 1, &l.v[k])
						       : parse_u64(a->value, 0, LEDGER_UNLIMITED - 1, &l.v[k]))) {
			pr_err("annotation %s: invalid value '%s' (%s: %s); the container does not start", a->key,
			       a->value, parse_why(a->value, err, k == LEDGER_MR_BYTES),
			       k == LEDGER_MR_BYTES ? "a size like 4096, 64K or 8G, or 'unlimited'"
						    : "a decimal whole number, or 'unlimited'");
			return -EINVAL;
		}
		if (ask(pol, ann_asked, &l, what))
			return -EINVAL;
	}
	if (*pod && !pod_asked->set) {
		pr_err("annotation %s=pod without a budget for the pod (rdmactl.io/max-KIND or rdmactl.io/budget); the "
		       "container does not start", OCI_ANN_SCOPE);
		return -EINVAL;
	}
	for (i = 0; i < oo.nlimit; i++) {
		if (policy_limits_parse(oo.limit[i], &l, msg, sizeof(msg))) {
			pr_err("--limit %s: %s; the container does not start", oo.limit[i], msg);
			return -EINVAL;
		}
		snprintf(what, sizeof(what), "--limit %s", oo.limit[i]);
		if (ask(pol, asked, &l, what))
			return -EINVAL;
	}
	for (i = 0; i < oo.nbudget; i++) {
		snprintf(what, sizeof(what), "--budget %s", oo.budget[i]);
		if (ask_budget(pol, asked, oo.budget[i], what))
			return -EINVAL;
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

/*
 * A record: of a container, what createRuntime applied, for poststop (which has no pid) and for a later
 * createRuntime hook of the same container (a second budget device); of a pod (scope=pod), the pod's
 * budget and its members. Lines: "cgroup DIR", "KIND VALUE" (applied), "asked KIND VALUE" (what was asked,
 * before the policy's default and ceiling), "pod ID" (the pod a container joined), "member ID" (a pod's),
 * "k8s-pod UID" (the Kubernetes pod whose name the hook wrote under PODNAME_DIR).
 */
struct record {
	char dir[PATH_MAX];
	uint64_t limit[LEDGER_NKINDS];
	struct policy_limits asked;
	char pod[OCISTATE_ANN_VAL_MAX + 8];
	char k8s_pod[OCISTATE_POD_UID_MAX];
	unsigned int nmembers;
	char member[OCI_MAX_MEMBERS][OCISTATE_ID_MAX];
};

static int save(const char *file, const struct record *r)
{
	char tmp[PATH_MAX + 8];
	unsigned int i;
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
	fprintf(f, "cgroup %s\n", r->dir);
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (r->limit[k] != LEDGER_UNLIMITED)
			fprintf(f, "%s %" PRIu64 "\n", ledger_kind_name(k), r->limit[k]);
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (policy_has(&r->asked, k))
			fprintf(f, "asked %s %" PRIu64 "\n", ledger_kind_name(k), r->asked.v[k]);
	if (r->pod[0])
		fprintf(f, "pod %s\n", r->pod);
	if (r->k8s_pod[0])
		fprintf(f, "k8s-pod %s\n", r->k8s_pod);
	for (i = 0; i < r->nmembers; i++)
		fprintf(f, "member %s\n", r->member[i]);
	if (fclose(f) || rename(tmp, file)) {
		ret = -errno;
		pr_err("cannot write %s: %s", file, strerror(-ret));
		unlink(tmp);
		return ret;
	}
	return 0;
}

/* -ENOENT when there is no record (nothing was applied); -EPROTO when it names no cgroup. */
static int load(const char *file, struct record *r)
{
	char line[PATH_MAX + 16], name[32], word[8];
	uint64_t v;
	FILE *f;
	int k, ret = -EPROTO;

	memset(r, 0, sizeof(*r));
	for (k = 0; k < LEDGER_NKINDS; k++)
		r->limit[k] = LEDGER_UNLIMITED;
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "cgroup /", 8)) {
			if (strlen(line + 7) < sizeof(r->dir)) {
				copy_str(r->dir, line + 7, sizeof(r->dir));
				ret = 0;
			}
			continue;
		}
		if (!strncmp(line, "pod ", 4)) {
			copy_str(r->pod, line + 4, sizeof(r->pod));
			continue;
		}
		if (!strncmp(line, "k8s-pod ", 8)) {
			if (podname_uid_ok(line + 8))
				copy_str(r->k8s_pod, line + 8, sizeof(r->k8s_pod));
			continue;
		}
		if (!strncmp(line, "member ", 7)) {
			if (r->nmembers < OCI_MAX_MEMBERS && id_ok(line + 7))
				copy_str(r->member[r->nmembers++], line + 7, OCISTATE_ID_MAX);
			continue;
		}
		if (sscanf(line, "%7s %31s %" SCNu64, word, name, &v) == 3 && !strcmp(word, "asked")) {
			k = policy_kind(name, strlen(name));
			if (k >= 0) {
				r->asked.v[k] = v;
				r->asked.set |= 1u << k;
			}
			continue;
		}
		if (sscanf(line, "%31s %" SCNu64, name, &v) != 2)
			continue;
		k = match_word(name, ledger_kind_names, LEDGER_NKINDS);
		if (k >= 0 && !strcmp(ledger_kind_names[k], name))
			r->limit[k] = v;
	}
	fclose(f);
	return ret;
}

/*
 * Pod records are read and written under one lock, the state directory's (flock): a container joining a pod
 * while another leaves it sees the other's change, and the last one out removes exactly the pod's limits.
 */
static int lock_state(void)
{
	int fd, ret = mkdirs(state_dir());

	if (ret) {
		pr_err("cannot create %s: %s", state_dir(), strerror(-ret));
		return ret;
	}
	fd = open(state_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		ret = -errno;
		pr_err("cannot lock %s: %s", state_dir(), strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd; /* closing it unlocks */
}

/* The pod cgroup of a container's cgroup dir (root: the cgroup2 mount): its parent, when that is a pod's. */
static int pod_of(const char *root, const char *dir, char *pod_dir, size_t len, char *pod, size_t podlen)
{
	struct cgroup_ids me, parent;
	const char *slash = strrchr(dir, '/');

	cgroup_ids(dir + strlen(root), &me);
	if (!slash || !me.pod_uid[0] || !me.container_id[0] || (size_t)(slash - dir) >= len)
		return -ENOENT;
	memcpy(pod_dir, dir, slash - dir);
	pod_dir[slash - dir] = '\0';
	/* Kubernetes' pod cgroups name their pod alone; podman's is named by the pod id its container carries */
	cgroup_ids(pod_dir + strlen(root), &parent);
	if (parent.container_id[0] || (strcmp(parent.pod_uid, me.pod_uid) && !strstr(strrchr(pod_dir, '/'), me.pod_uid)))
		return -ENOENT;
	copy_str(pod, me.pod_uid, podlen);
	return 0;
}

/* The container id joins the pod's budget: recorded, then the pod's limits (the smaller per kind) applied. */
static int pod_join(const struct ocistate *st, const char *pod, const char *pod_dir, const struct policy_limits *l,
		    uint64_t *mr_bytes)
{
	static struct record r;
	char file[PATH_MAX];
	uint64_t old[LEDGER_NKINDS];
	bool fresh, added = false;
	unsigned int i;
	int fd, ret, k;

	snprintf(file, sizeof(file), "%s/pod-%s", state_dir(), pod);
	fd = lock_state();
	if (fd < 0)
		return EXIT_FAIL;
	ret = load(file, &r);
	fresh = ret == -ENOENT;
	if (ret && !fresh) {
		pr_err("container %s: cannot read %s: %s", st->id, file, strerror(-ret));
		goto fail;
	}
	if (fresh)
		copy_str(r.dir, pod_dir, sizeof(r.dir));
	else if (strcmp(r.dir, pod_dir)) {
		pr_err("container %s: pod %s was limited on cgroup %s, this container's pod is %s", st->id, pod, r.dir,
		       pod_dir);
		goto fail;
	}
	memcpy(old, r.limit, sizeof(old));
	policy_limits_min(&r.asked, l);
	for (k = 0; k < LEDGER_NKINDS; k++)
		r.limit[k] = policy_has(&r.asked, k) ? r.asked.v[k] : LEDGER_UNLIMITED;
	for (i = 0; i < r.nmembers && strcmp(r.member[i], st->id); i++)
		;
	if (i == r.nmembers) {
		if (r.nmembers >= OCI_MAX_MEMBERS) {
			pr_err("container %s: pod %s has %d containers with a pod budget already", st->id, pod,
			       OCI_MAX_MEMBERS);
			goto fail;
		}
		copy_str(r.member[r.nmembers++], st->id, OCISTATE_ID_MAX);
		added = true;
	}
	if (save(file, &r))
		goto fail;
	if (quota_cgroup_apply(pod_dir, r.limit, true)) {
		pr_err("container %s: pod %s's budget not applied (above); the container does not start", st->id, pod);
		if (added)
			r.nmembers--;
		if (!r.nmembers) {
			unlink(file);
			goto fail;
		}
		/* a failure took back what it had set: the pod's other containers get their budget again */
		memcpy(r.limit, old, sizeof(old));
		save(file, &r);
		if (quota_cgroup_apply(pod_dir, r.limit, true))
			pr_err("pod %s: its budget could not be set again on %s (above): its running containers are not "
			       "held by it; set it by hand (rdmactl quota set KIND N --cgroup %s --kernel)", pod,
			       pod_dir, pod_dir);
		goto fail;
	}
	pr_debug("container %s: pod %s's budget on %s (%u containers)", st->id, pod, pod_dir, r.nmembers);
	*mr_bytes = r.limit[LEDGER_MR_BYTES];
	close(fd);
	return EXIT_OK;
fail:
	close(fd);
	return EXIT_FAIL;
}

/*
 * The container's RLIMIT_MEMLOCK follows its mr_bytes budget (the smaller of its own and its pod's), soft and
 * hard, set on its process before the program starts: registering its budget needs neither memlock=unlimited
 * nor CAP_IPC_LOCK, and the rlimit bounds pinning beside the kernel limit. Without an mr_bytes budget the
 * runtime's rlimit stays. A failure is said, not fatal: the kernel limit on mr_bytes holds all the same.
 */
static void set_memlock(const struct ocistate *st, uint64_t bytes)
{
	struct rlimit rl = { .rlim_cur = bytes, .rlim_max = bytes };

	if (bytes == LEDGER_UNLIMITED)
		return;
	if (prlimit(st->pid, RLIMIT_MEMLOCK, &rl, NULL))
		pr_err("container %s: warning: RLIMIT_MEMLOCK not set to its mr_bytes budget (%llu): %s", st->id,
			(unsigned long long)bytes, strerror(errno));
	else
		pr_debug("container %s: RLIMIT_MEMLOCK %llu", st->id, (unsigned long long)bytes);
}

/*
 * The state names its Kubernetes pod (UID, namespace and name, in Kubernetes' forms). A pod named in part, or
 * otherwise, is said and left unnamed: the name is for the exporter's labels and quota show, not a limit.
 */
static bool pod_named(const struct ocistate *st)
{
	const struct ocistate_pod *p = &st->pod;

	if (p->bad[0]) {
		pr_err("container %s: warning: its pod is not named: %s (the exporter and quota show will not name it)",
		       st->id, p->bad);
		return false;
	}
	if (!p->uid[0] && !p->ns[0] && !p->name[0])
		return false;
	if (podname_uid_ok(p->uid) && podname_ns_ok(p->ns) && podname_name_ok(p->name))
		return true;
	pr_err("container %s: warning: its pod (uid '%s', namespace '%s', name '%s') is not named as Kubernetes names "
	       "pods: the exporter and quota show will not name it", st->id, p->uid, p->ns, p->name);
	return false;
}

/* The pod's name under PODNAME_DIR, written under the state lock (a last container may be leaving). */
static void name_pod(const struct ocistate *st)
{
	int fd = lock_state(), ret;

	ret = podname_write(st->pod.uid, st->pod.ns, st->pod.name);
	if (ret)
		pr_err("container %s: warning: cannot write %s/%s: %s (the exporter and quota show will not name pod "
		       "%s/%s; $" PODNAME_ENV_DIR " sets another directory)", st->id, podname_dir(), st->pod.uid,
		       strerror(-ret), st->pod.ns, st->pod.name);
	else
		pr_debug("container %s: pod %s is %s/%s", st->id, st->pod.uid, st->pod.ns, st->pod.name);
	if (fd >= 0)
		close(fd);
}

/* The Kubernetes pod of a container's record: the one the hook named for it, else the one its cgroup's path names. */
static void record_pod_uid(const struct record *r, const char *root, char *uid, size_t len)
{
	struct cgroup_ids ids;
	size_t n = strlen(root);

	if (r->k8s_pod[0]) {
		copy_str(uid, r->k8s_pod, len);
		return;
	}
	cgroup_ids(strncmp(r->dir, root, n) ? r->dir : r->dir + n, &ids);
	copy_str(uid, podname_uid_ok(ids.pod_uid) ? ids.pod_uid : "", len);
}

/*
 * A container's record is gone: its pod's name goes too when no record of the state directory is of that pod
 * any more (the pod's last container the hook limited). Called under the state lock.
 */
static void unname_pod(const struct record *r)
{
	static struct record other;
	char root[PATH_MAX], path[PATH_MAX], uid[OCISTATE_POD_UID_MAX], ouid[OCISTATE_POD_UID_MAX];
	struct podname pn;
	struct dirent *de;
	size_t n;
	DIR *d;
	int ret;

	cgroup2_root(root, sizeof(root));
	record_pod_uid(r, root, uid, sizeof(uid));
	if (!uid[0] || podname_read(uid, &pn) == -ENOENT)
		return;
	d = opendir(state_dir());
	if (!d)
		return; /* cannot tell: quota gc removes it once the pod's cgroup is gone */
	while ((de = readdir(d))) {
		n = strlen(de->d_name);
		/* containers' records only: not a pod budget's (pod-ID), nor one being written (ID.tmp) */
		if (!id_ok(de->d_name) || !strncmp(de->d_name, "pod-", 4) || (n > 4 && !strcmp(de->d_name + n - 4, ".tmp")))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", state_dir(), de->d_name) >= sizeof(path) ||
		    load(path, &other))
			continue;
		record_pod_uid(&other, root, ouid, sizeof(ouid));
		if (!strcmp(ouid, uid))
			break;
	}
	if (!de) {
		ret = podname_remove(uid);
		if (ret)
			pr_err("pod %s: warning: cannot remove %s/%s: %s", uid, podname_dir(), uid, strerror(-ret));
		else
			pr_debug("pod %s: its last container gone, its name removed", uid);
	}
	closedir(d);
}

static int create_stage(const struct ocistate *st, const char *file, const struct policy *pol,
			struct policy_limits *asked, const struct policy_limits *pod_asked)
{
	static struct record r, before;
	char root[PATH_MAX], cg[PATH_MAX], dir[PATH_MAX * 2], pod_dir[PATH_MAX], pod[80];
	uint64_t pod_mr = LEDGER_UNLIMITED;
	bool any, named;
	int ret, k;

	if (st->pid <= 0) {
		pr_err("the state has no pid: createRuntime or prestart runs the hook with the container's pid (is the "
		       "hook registered for another stage?)");
		return EXIT_FAIL;
	}
	ret = proc_cgroup(st->pid, cg, sizeof(cg));
	if (ret) {
		pr_err("cannot read the cgroup of the container's process %d: %s", (int)st->pid,
		       ret == -ESRCH ? "the process is gone (it exited before the hook ran)"
		       : ret == -ENOENT ? "its /proc/PID/cgroup has no cgroup v2 line (rdmactl needs the unified "
					  "hierarchy, cgroup v2)"
		       : strerror(-ret));
		return EXIT_FAIL;
	}
	cgroup2_root(root, sizeof(root));
	snprintf(dir, sizeof(dir), "%s%s", root, cg);
	if (pod_asked && pod_of(root, dir, pod_dir, sizeof(pod_dir), pod, sizeof(pod))) {
		pr_err("container %s: rdmactl.io/scope=pod, but its cgroup %s is not inside a pod's cgroup (podman "
		       "pods without an infra container put their containers beside all others); the container does "
		       "not start", st->id, cg);
		return EXIT_FAIL;
	}
	/* an earlier hook of this container (another budget device, hooks.d and CDI both): its requests count too */
	ret = load(file, &before);
	if (ret && ret != -ENOENT) {
		pr_err("container %s: cannot read %s: %s", st->id, file, strerror(-ret));
		return EXIT_FAIL;
	}
	if (!ret) {
		if (strcmp(before.dir, dir)) {
			pr_err("container %s: an earlier hook limited cgroup %s, this one finds %s", st->id, before.dir,
			       dir);
			return EXIT_FAIL;
		}
		policy_limits_min(asked, &before.asked);
	}
	memset(&r, 0, sizeof(r));
	any = policy_resolve(pol, asked, r.limit);
	if (!any && ret == -ENOENT && !pod_asked)
		return EXIT_OK; /* nothing asked, no default, no ceiling: the container is left alone */
	if (!strcmp(cg, "/")) {
		pr_err("the container's process %d is in the root cgroup, which takes no limits", (int)st->pid);
		return EXIT_FAIL;
	}
	copy_str(r.dir, dir, sizeof(r.dir));
	r.asked = *asked;
	if (ret != -ENOENT) {
		for (k = 0; k < LEDGER_NKINDS; k++)
			if (r.limit[k] == LEDGER_UNLIMITED && before.limit[k] != LEDGER_UNLIMITED)
				r.limit[k] = before.limit[k]; /* cannot happen (requests only add); kept for poststop */
		copy_str(r.pod, before.pod, sizeof(r.pod));
	}
	if (pod_asked)
		copy_str(r.pod, pod, sizeof(r.pod));
	/* its Kubernetes pod, named once the limits are on: poststop of the pod's last container removes the name */
	named = pod_named(st);
	if (named)
		copy_str(r.k8s_pod, st->pod.uid, sizeof(r.k8s_pod));
	else if (ret != -ENOENT)
		copy_str(r.k8s_pod, before.k8s_pod, sizeof(r.k8s_pod));
	/* recorded first: a hook killed half way still leaves poststop what to take back */
	if (save(file, &r))
		return EXIT_FAIL;
	if (quota_cgroup_apply(dir, r.limit, true)) {
		pr_err("container %s: its limits not applied (above), nothing of them stays; the container does not "
		       "start", st->id);
		if (ret == -ENOENT)
			unlink(file);
		return EXIT_FAIL;
	}
	if (pod_asked && pod_join(st, pod, pod_dir, pod_asked, &pod_mr)) {
		quota_cgroup_apply(dir, r.limit, false);
		unlink(file);
		return EXIT_FAIL;
	}
	pr_debug("container %s: limits on %s", st->id, dir);
	if (named)
		name_pod(st);
	set_memlock(st, r.limit[LEDGER_MR_BYTES] < pod_mr ? r.limit[LEDGER_MR_BYTES] : pod_mr);
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

/* Take limit off the cgroup dir (what: "container ID", "pod ID"), or its leftovers when the runtime removed it. */
static int remove_limits(const char *what, const char *dir, const uint64_t limit[LEDGER_NKINDS])
{
	char out[1024];
	char *gc[] = { "rdmactl", "quota", "gc", NULL };
	struct stat sb;
	int ret = EXIT_OK, gret, k;

	for (k = 0; k < LEDGER_NKINDS && limit[k] == LEDGER_UNLIMITED; k++)
		;
	if (k == LEDGER_NKINDS)
		return EXIT_OK; /* a pod's member without limits of its own */
	if (!stat(dir, &sb)) {
		if (quota_cgroup_apply(dir, limit, false)) {
			pr_err("%s: its limits on %s not all removed (above)", what, dir);
			ret = EXIT_FAIL;
		}
		return ret;
	}
	/*
	 * The runtime removed the cgroup before poststop (runc does), so 'quota unset --cgroup' cannot name it
	 * any more: its ledger limits go by name, and the gc drops the kernel's scope of a cgroup gone.
	 */
	gret = forget_cgroup(dir, limit);
	if (gret) {
		pr_err("%s: cannot remove the ledger limits of its cgroup %s: %s", what, dir,
		       *ledger_error() ? ledger_error() : strerror(-gret));
		ret = EXIT_FAIL;
	}
	gret = cgquota_run("/proc/self/exe", NULL, gc, out, sizeof(out));
	if (gret) {
		pr_err("%s: its cgroup %s is gone and 'rdmactl quota gc' failed: %s", what, dir,
		       gret < 0 ? strerror(-gret) : out);
		ret = EXIT_FAIL;
	}
	return ret;
}

/* The container leaves its pod's budget; the last one out takes the pod's limits off. */
static int pod_leave(const struct ocistate *st, const char *pod)
{
	static struct record r;
	char file[PATH_MAX], what[128];
	unsigned int i;
	int fd, ret;

	snprintf(file, sizeof(file), "%s/pod-%s", state_dir(), pod);
	fd = lock_state();
	if (fd < 0)
		return EXIT_FAIL;
	ret = load(file, &r);
	if (ret == -ENOENT) {
		close(fd);
		return EXIT_OK;
	}
	if (ret) {
		pr_err("container %s: cannot read %s: %s", st->id, file, strerror(-ret));
		close(fd);
		return EXIT_FAIL;
	}
	for (i = 0; i < r.nmembers && strcmp(r.member[i], st->id); i++)
		;
	if (i < r.nmembers)
		memmove(&r.member[i], &r.member[i + 1], (r.nmembers-- - i - 1) * sizeof(r.member[0]));
	ret = EXIT_OK;
	if (r.nmembers) {
		ret = save(file, &r) ? EXIT_FAIL : EXIT_OK;
	} else {
		snprintf(what, sizeof(what), "pod %.64s", pod);
		ret = remove_limits(what, r.dir, r.limit);
		if (ret == EXIT_OK)
			unlink(file);
	}
	close(fd);
	return ret;
}

static int poststop_stage(const struct ocistate *st, const char *file)
{
	static struct record r;
	char what[OCISTATE_ID_MAX + 16];
	int ret, fd;

	ret = load(file, &r);
	if (ret == -ENOENT)
		return EXIT_OK; /* nothing was applied */
	if (ret) {
		pr_err("container %s: cannot read %s: %s (remove the limits with 'rdmactl quota unset KIND --cgroup "
		       "DIR --kernel')",
		       st->id, file, strerror(-ret));
		return EXIT_FAIL;
	}
	snprintf(what, sizeof(what), "container %s", st->id);
	ret = remove_limits(what, r.dir, r.limit);
	if (r.pod[0] && pod_leave(st, r.pod))
		ret = EXIT_FAIL;
	if (ret == EXIT_OK) {
		/* under the lock: of two containers of a pod leaving at once, one sees the other's record gone */
		fd = lock_state();
		unlink(file);
		unname_pod(&r);
		if (fd >= 0)
			close(fd);
	}
	return ret;
}

int cmd_oci_hook(int argc, char **argv)
{
	static char buf[OCISTATE_MAX_INPUT + 1];
	static struct policy pol;
	struct policy_limits asked, pod_asked;
	bool pod = false;
	struct ocistate st;
	char err[768], file[PATH_MAX];
	enum stage stage;
	size_t len = 0;
	ssize_t n;
	int idx, ret;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER | ARGP_NO_HELP, &idx, NULL))
		return EXIT_USAGE;
	/* run by hand: say what it waits for (a runtime gives a hook a pipe, never a terminal) */
	if (isatty(0))
		fprintf(stderr, "%s: reading the container's OCI state (JSON) on stdin, as a runtime gives it to a hook; "
			"end with Ctrl-D (rdmactl oci-hook --help)\n", util_prog);
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
	if (stage == STAGE_CREATE) {
		/* the node's policy first: a policy that cannot be read fails closed (no container unlimited by it) */
		ret = policy_load(oo.policy, &pol, err, sizeof(err));
		if (ret == -ENOENT && !oo.policy && !getenv(POLICY_ENV))
			memset(&pol, 0, sizeof(pol));
		else if (ret) {
			pr_err("cannot read the node policy: %s; the container does not start", err);
			return EXIT_FAIL;
		}
		if (read_requests(&st, &pol, &asked, &pod_asked, &pod))
			return EXIT_FAIL;
		if (!asked.set && !pod && !pol.has_default && !pol.ceiling.set)
			return EXIT_OK; /* nothing asked, nothing the node gives or holds: left alone */
	}
	if (!id_ok(st.id)) {
		pr_err("container id '%s' is empty or not made of [A-Za-z0-9_.-]", st.id);
		return EXIT_FAIL;
	}
	snprintf(file, sizeof(file), "%s/%s", state_dir(), st.id);
	return stage == STAGE_CREATE ? create_stage(&st, file, &pol, &asked, pod ? &pod_asked : NULL)
				     : poststop_stage(&st, file);
}
