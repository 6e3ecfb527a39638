// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl export: the metric families, written from one collection (names, help, labels: the man page's table). */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "rdmactl.h"

/*
 * The labels a cgroup path adds after "cgroup", and its pod's namespace and name (the OCI hook's file of the
 * pod: rdmactl-oci-hook(8)); empty ones are not written.
 */
#define CG_LABELS(cg)                                                                              \
	{ "cgroup", (cg)->path }, { "slurm_job_id", (cg)->ids.slurm_job_id }, { "pod_uid", (cg)->ids.pod_uid }, \
	{ "namespace", (cg)->pod.ns }, { "pod", (cg)->pod.name }, { "container_id", (cg)->ids.container_id }

#define NLAB(a) (sizeof(a) / sizeof((a)[0]))

/* A family of one sample without labels. */
static void single(struct prom_buf *b, const char *name, enum prom_type type, uint64_t v, const char *help)
{
	prom_family(b, name, type, help);
	prom_sample_u64(b, name, NULL, 0, v);
}

static bool type_shown(const struct top_dev *d, int t)
{
	return !(d->unsupported & (1u << t));
}

/* The device label of a count: none for counts summed over every device (--no-qp-states). */
static const char *count_dev(const struct metrics_snap *s, const struct metrics_count *c)
{
	return c->dev == METRICS_ALL_DEVS ? "" : s->devs[c->dev].dev.name;
}

/* A count's type is written when its device can dump it (summed over devices: when one can). */
static bool count_type_shown(const struct metrics_snap *s, const struct metrics_count *c, int t)
{
	unsigned int i;

	if (c->dev != METRICS_ALL_DEVS)
		return type_shown(&s->devs[c->dev], t);
	for (i = 0; i < s->ndevs; i++)
		if (type_shown(&s->devs[i], t))
			return true;
	return false;
}

/* Where the counts of cgroups and processes came from: one series per source and reason, 1 for this one. */
static void counts_source(const struct metrics_snap *s, struct prom_buf *b)
{
	int w;

	if (s->err[METRICS_SRC_NETLINK])
		return;
	prom_family(b, "rdmactl_counts_source", PROM_GAUGE,
		    "Where this collection's per-cgroup and per-process counts came from (1; the other series 0): "
		    "source=\"counters\", a running rdmactl monitor's BPF counters, proven complete (with "
		    "--no-qp-states, or --counters: QP states then asked for QP by QP by number), or "
		    "source=\"dump\", RDMA netlink's per-object dumps, with the reason the counters were not used: "
		    "qp_states (neither option), no_monitor (none, or one that died), no_access, lost_counts, "
		    "incomplete (no complete baseline), busy (objects came and went while it read), mismatch (the "
		    "kernel's counts, or the monitor's QP numbers, differ), error.");
	for (w = 0; w < METRICS_DUMP_NR; w++) {
		struct prom_label l[] = { { "source", w == METRICS_DUMP_NONE ? "counters" : "dump" },
					  { "reason", metrics_dump_why_names[w] } };

		prom_sample_u64(b, "rdmactl_counts_source", l, NLAB(l), s->why_dump == (enum metrics_dump_why)w);
	}
}

static void info(const struct metrics_snap *s, const struct export_render_opts *o, struct prom_buf *b)
{
	static const struct prom_label version[] = { { "version", RDMACTL_VERSION } };
	int i;

	(void)o;
	prom_family(b, "rdmactl_build_info", PROM_GAUGE, "rdmactl's version (always 1).");
	prom_sample_u64(b, "rdmactl_build_info", version, 1, 1);
	prom_family(b, "rdmactl_source_up", PROM_GAUGE,
		    "Whether a source could be read in this collection: netlink (RDMA netlink dumps), ledger (the "
		    "quota ledger), monitor (the BPF counters pinned by rdmactl monitor), kernel (the kernel quota "
		    "programs' maps, pinned by rdmactl quota set --kernel).");
	for (i = 0; i < METRICS_SRC_NR; i++) {
		struct prom_label l[] = { { "source", metrics_source_names[i] } };

		prom_sample_u64(b, "rdmactl_source_up", l, 1, s->err[i] ? 0 : 1);
	}
	prom_family(b, "rdmactl_source_state", PROM_GAUGE,
		    "What this collection made of each source: 1 for its state, 0 for the others. up: read; absent: "
		    "nothing there to read (no ledger, where no limit was ever set; a kernel without RDMA; no "
		    "monitor or kernel quotas pinned); down: there, and it could not be read.");
	for (i = 0; i < METRICS_SRC_NR; i++) {
		int j;

		for (j = 0; j < METRICS_STATE_NR; j++) {
			struct prom_label l[] = { { "source", metrics_source_names[i] },
						  { "state", metrics_state_names[j] } };

			prom_sample_u64(b, "rdmactl_source_state", l, NLAB(l), s->state[i] == (enum metrics_source_state)j);
		}
	}
	prom_family(b, "rdmactl_collect_duration_seconds", PROM_GAUGE,
		    "Seconds the collection took (every source read once).");
	prom_sample_f64(b, "rdmactl_collect_duration_seconds", NULL, 0, s->seconds);
	counts_source(s, b);
}

static void devices(const struct metrics_snap *s, struct prom_buf *b)
{
	unsigned int i, p;
	char guid[32], port[16], state[16];
	int t;

	if (!s->ndevs)
		return;
	prom_family(b, "rdmactl_device_info", PROM_GAUGE, "An RDMA device (always 1).");
	for (i = 0; i < s->ndevs; i++) {
		const struct nl_dev *d = &s->devs[i].dev;
		struct prom_label l[] = { { "device", d->name }, { "node_guid", guid }, { "fw", d->fw },
					  { "protocol", d->protocol } };

		snprintf(guid, sizeof(guid), "%016" PRIx64, d->node_guid);
		prom_sample_u64(b, "rdmactl_device_info", l, NLAB(l), 1);
	}
	prom_family(b, "rdmactl_device_objects", PROM_GAUGE,
		    "Objects on the device by type, every owner (processes, the kernel, exited threads), as the "
		    "kernel counts them.");
	for (i = 0; i < s->ndevs; i++) {
		const struct top_dev *d = &s->devs[i];

		for (t = 0; t < NL_RES_NTYPES; t++) {
			struct prom_label l[] = { { "device", d->dev.name }, { "type", nl_res_name(t) } };

			if (!type_shown(d, t))
				continue;
			prom_sample_u64(b, "rdmactl_device_objects", l, NLAB(l),
					d->has_summary ? d->summary.curr[t] : d->totals.n[t]);
		}
	}
	prom_family(b, "rdmactl_device_mr_bytes", PROM_GAUGE,
		    "Bytes of the memory regions on the device, every owner.");
	for (i = 0; i < s->ndevs; i++) {
		struct prom_label l[] = { { "device", s->devs[i].dev.name } };

		prom_sample_u64(b, "rdmactl_device_mr_bytes", l, NLAB(l), s->devs[i].totals.mr_bytes);
	}
	prom_family(b, "rdmactl_port_state", PROM_GAUGE,
		    "Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.");
	for (i = 0; i < s->ndevs; i++)
		for (p = 0; p < s->devs[i].nports; p++) {
			struct prom_label l[] = { { "device", s->devs[i].dev.name }, { "port", port } };

			snprintf(port, sizeof(port), "%u", s->devs[i].ports[p].port);
			prom_sample_u64(b, "rdmactl_port_state", l, NLAB(l), s->devs[i].ports[p].state);
		}
	prom_family(b, "rdmactl_port_phys_state", PROM_GAUGE,
		    "Physical port state: 1 SLEEP, 2 POLLING, 3 DISABLED, 4 TRAINING, 5 LINK_UP, 6 ERROR_RECOVERY, "
		    "7 PHY_TEST.");
	for (i = 0; i < s->ndevs; i++)
		for (p = 0; p < s->devs[i].nports; p++) {
			struct prom_label l[] = { { "device", s->devs[i].dev.name }, { "port", port } };

			snprintf(port, sizeof(port), "%u", s->devs[i].ports[p].port);
			prom_sample_u64(b, "rdmactl_port_phys_state", l, NLAB(l), s->devs[i].ports[p].phys_state);
		}
	prom_family(b, "rdmactl_port_info", PROM_GAUGE,
		    "A port with its network device (RoCE, iWARP) and its logical state by name (always 1).");
	for (i = 0; i < s->ndevs; i++)
		for (p = 0; p < s->devs[i].nports; p++) {
			const struct nl_port *np = &s->devs[i].ports[p];
			struct prom_label l[] = { { "device", s->devs[i].dev.name }, { "port", port },
						  { "netdev", np->netdev }, { "state", state } };

			snprintf(port, sizeof(port), "%u", np->port);
			snprintf(state, sizeof(state), "%s", nl_port_state_name(np->state));
			prom_sample_u64(b, "rdmactl_port_info", l, NLAB(l), 1);
		}
}

/* QPs by state per cgroup and device (not with --no-qp-states: the states are in the per-object dump only). */
static void cgroup_qps(const struct metrics_snap *s, struct prom_buf *b)
{
	size_t i;
	int t;

	prom_family(b, "rdmactl_qps", PROM_GAUGE,
		    "QPs held by the processes of a cgroup, by device (with --counters: every device summed) and state "
		    "(RESET, INIT, RTR, RTS, SQD, SQE, ERR), as the kernel reports it.");
	for (i = 0; i < s->ncg_counts; i++) {
		const struct metrics_count *c = &s->cg_counts[i];
		const struct metrics_cgroup *cg = &s->cgroups[c->owner];

		if (!count_type_shown(s, c, NL_RES_QP))
			continue;
		for (t = 0; t < TOP_QP_NSTATES; t++) {
			struct prom_label l[] = { CG_LABELS(cg), { "device", count_dev(s, c) },
						  { "state", top_qp_state_name((unsigned int)t) } };

			prom_sample_u64(b, "rdmactl_qps", l, NLAB(l), c->c.qp_state[t]);
		}
	}
}

static void cgroups(const struct metrics_snap *s, struct prom_buf *b)
{
	size_t i;
	int t;

	if (s->err[METRICS_SRC_NETLINK])
		return;
	prom_family(b, "rdmactl_objects", PROM_GAUGE,
		    "Objects held by the processes of a cgroup, by device (with --no-qp-states: every device "
		    "summed, no device label) and type (user objects; kernel objects and those of exited threads "
		    "are in rdmactl_device_objects only).");
	for (i = 0; i < s->ncg_counts; i++) {
		const struct metrics_count *c = &s->cg_counts[i];
		const struct metrics_cgroup *cg = &s->cgroups[c->owner];

		for (t = 0; t < NL_RES_NTYPES; t++) {
			struct prom_label l[] = { CG_LABELS(cg), { "device", count_dev(s, c) }, { "type", nl_res_name(t) } };

			if (count_type_shown(s, c, t))
				prom_sample_u64(b, "rdmactl_objects", l, NLAB(l), c->c.n[t]);
		}
	}
	prom_family(b, "rdmactl_mr_bytes", PROM_GAUGE,
		    "Bytes of the memory regions registered by the processes of a cgroup, by device (with "
		    "--no-qp-states: every device summed).");
	for (i = 0; i < s->ncg_counts; i++) {
		const struct metrics_count *c = &s->cg_counts[i];
		const struct metrics_cgroup *cg = &s->cgroups[c->owner];
		struct prom_label l[] = { CG_LABELS(cg), { "device", count_dev(s, c) } };

		prom_sample_u64(b, "rdmactl_mr_bytes", l, NLAB(l), c->c.mr_bytes);
	}
	if (!s->no_qp_states)
		cgroup_qps(s, b);
	prom_family(b, "rdmactl_processes", PROM_GAUGE,
		    "Processes of a cgroup that hold RDMA objects; managed: attached to the quota ledger (started "
		    "under rdmactl run or with its preload), false for the others (and all when there is no ledger).");
	for (i = 0; i < s->ncgroups; i++) {
		const struct metrics_cgroup *cg = &s->cgroups[i];
		struct prom_label yes[] = { CG_LABELS(cg), { "managed", "true" } };
		struct prom_label no[] = { CG_LABELS(cg), { "managed", "false" } };

		if (!cg->nprocs)
			continue;
		prom_sample_u64(b, "rdmactl_processes", yes, NLAB(yes), cg->nmanaged);
		prom_sample_u64(b, "rdmactl_processes", no, NLAB(no), cg->nprocs - cg->nmanaged);
	}
}

static void processes(const struct metrics_snap *s, struct prom_buf *b)
{
	char pid[16];
	size_t i;
	int t;

	if (s->err[METRICS_SRC_NETLINK])
		return;
#define PROC_LABELS(p, cg) { "pid", pid }, { "comm", (p)->comm }, CG_LABELS(cg)
	prom_family(b, "rdmactl_process_objects", PROM_GAUGE,
		    "Objects held by a process, by device (with --no-qp-states: every device summed, no device "
		    "label) and type.");
	for (i = 0; i < s->nproc_counts; i++) {
		const struct metrics_count *c = &s->proc_counts[i];
		const struct metrics_proc *p = &s->procs[c->owner];

		snprintf(pid, sizeof(pid), "%d", (int)p->pid);
		for (t = 0; t < NL_RES_NTYPES; t++) {
			struct prom_label l[] = { PROC_LABELS(p, &s->cgroups[p->cg]), { "device", count_dev(s, c) },
						  { "type", nl_res_name(t) } };

			if (count_type_shown(s, c, t))
				prom_sample_u64(b, "rdmactl_process_objects", l, NLAB(l), c->c.n[t]);
		}
	}
	prom_family(b, "rdmactl_process_mr_bytes", PROM_GAUGE,
		    "Bytes of the memory regions registered by a process, by device (with --no-qp-states: every "
		    "device summed).");
	for (i = 0; i < s->nproc_counts; i++) {
		const struct metrics_count *c = &s->proc_counts[i];
		const struct metrics_proc *p = &s->procs[c->owner];
		struct prom_label l[] = { PROC_LABELS(p, &s->cgroups[p->cg]), { "device", count_dev(s, c) } };

		snprintf(pid, sizeof(pid), "%d", (int)p->pid);
		prom_sample_u64(b, "rdmactl_process_mr_bytes", l, NLAB(l), c->c.mr_bytes);
	}
	if (!s->no_qp_states) {
		prom_family(b, "rdmactl_process_qps", PROM_GAUGE,
			    "QPs held by a process, by device (with --counters: every device summed) and state.");
		for (i = 0; i < s->nproc_counts; i++) {
			const struct metrics_count *c = &s->proc_counts[i];
			const struct metrics_proc *p = &s->procs[c->owner];

			if (!count_type_shown(s, c, NL_RES_QP))
				continue;
			snprintf(pid, sizeof(pid), "%d", (int)p->pid);
			for (t = 0; t < TOP_QP_NSTATES; t++) {
				struct prom_label l[] = { PROC_LABELS(p, &s->cgroups[p->cg]), { "device", count_dev(s, c) },
							  { "state", top_qp_state_name((unsigned int)t) } };

				prom_sample_u64(b, "rdmactl_process_qps", l, NLAB(l), c->c.qp_state[t]);
			}
		}
	}
	prom_family(b, "rdmactl_process_managed", PROM_GAUGE,
		    "1 when the process is attached to the quota ledger, 0 when it holds objects outside it.");
	for (i = 0; i < s->nprocs; i++) {
		const struct metrics_proc *p = &s->procs[i];
		struct prom_label l[] = { PROC_LABELS(p, &s->cgroups[p->cg]) };

		snprintf(pid, sizeof(pid), "%d", (int)p->pid);
		prom_sample_u64(b, "rdmactl_process_managed", l, NLAB(l), p->managed);
	}
#undef PROC_LABELS
}

/* The cgroup entry of a cgroup scope (its identities), NULL for other scopes. */
static const struct metrics_cgroup *scope_cgroup(const struct metrics_snap *s, const struct ledger_scope_stat *st)
{
	size_t i;

	if (st->scope.type != LEDGER_SCOPE_CGROUP)
		return NULL;
	for (i = 0; i < s->ncgroups; i++)
		if (!strcmp(s->cgroups[i].path, st->scope.name))
			return &s->cgroups[i];
	return NULL;
}

static bool scope_shown(const struct ledger_scope_stat *st, bool per_process)
{
	int k;

	if (st->scope.type != LEDGER_SCOPE_PROCESS || per_process)
		return true;
	for (k = 0; k < LEDGER_NKINDS; k++)
		if (st->limit[k] != LEDGER_UNLIMITED)
			return true;
	return false;
}

/* A family written once per scope: its name, type and help. */
struct family {
	const char *name;
	enum prom_type type;
	const char *help;
};

/* The labels of a ledger scope's series, as rdmactl_quota_limit has them: scope, owner (the pid, the job, the
 * cgroup's path; none for the global scope), type, and the cgroup's identities and pod. */
struct scope_labels {
	char owner[LEDGER_CGROUP_MAX];
	struct prom_label l[8];
};

static void scope_labels(const struct metrics_snap *s, const struct ledger_scope_stat *st, struct scope_labels *sl)
{
	static const struct cgroup_ids none;
	static const struct podname no_pod;
	const struct metrics_cgroup *cg = scope_cgroup(s, st);
	const struct cgroup_ids *ids = cg ? &cg->ids : &none;
	const struct podname *pod = cg ? &cg->pod : &no_pod;

	if (st->scope.type == LEDGER_SCOPE_PROCESS)
		snprintf(sl->owner, sizeof(sl->owner), "%d", (int)st->scope.pid);
	else
		snprintf(sl->owner, sizeof(sl->owner), "%s", st->scope.type == LEDGER_SCOPE_GLOBAL ? "" : st->scope.name);
	sl->l[0] = (struct prom_label){ "scope", ledger_scope_type_name(st->scope.type) };
	sl->l[1] = (struct prom_label){ "owner", sl->owner };
	sl->l[2] = (struct prom_label){ "type", NULL }; /* set per sample */
	sl->l[3] = (struct prom_label){ "slurm_job_id", ids->slurm_job_id };
	sl->l[4] = (struct prom_label){ "pod_uid", ids->pod_uid };
	sl->l[5] = (struct prom_label){ "namespace", pod->ns };
	sl->l[6] = (struct prom_label){ "pod", pod->name };
	sl->l[7] = (struct prom_label){ "container_id", ids->container_id };
}

static void quotas(const struct metrics_snap *s, const struct export_render_opts *o, struct prom_buf *b)
{
	static const struct cgroup_ids none;
	static const struct podname no_pod;
	size_t i;
	int k, pass, sc;

	if (s->err[METRICS_SRC_LEDGER])
		return;
	static const struct family fam[] = {
		{ "rdmactl_quota_limit", PROM_GAUGE,
		  "Limit of a quota ledger scope (process: owner is the pid; job: the rdmactl run job; cgroup: the "
		  "path; global: no owner), by type; no series where there is no limit. mr_bytes in bytes; wr is a cap "
		  "on each QP's or SRQ's depth." },
		{ "rdmactl_quota_usage", PROM_GAUGE,
		  "Usage charged to a quota ledger scope, by type (labels as rdmactl_quota_limit)." },
		{ "rdmactl_quota_refusals_total", PROM_COUNTER,
		  "Creations a quota ledger scope's own limits refused, by type (labels as rdmactl_quota_limit), "
		  "since the scope's entry was made: a cgroup's first limit, a job's start, a process's attach." },
	};

	for (pass = 0; pass < (int)NLAB(fam); pass++) {
		prom_family(b, fam[pass].name, fam[pass].type, fam[pass].help);
		for (i = 0; i < s->nscopes; i++) {
			const struct ledger_scope_stat *st = &s->scopes[i];
			struct scope_labels sl;

			if (!scope_shown(st, o->per_process))
				continue;
			scope_labels(s, st, &sl);
			for (k = 0; k < LEDGER_NKINDS; k++) {
				sl.l[2].value = ledger_kind_name(k);
				if (pass == 0 && st->limit[k] != LEDGER_UNLIMITED)
					prom_sample_u64(b, fam[pass].name, sl.l, NLAB(sl.l), st->limit[k]);
				else if (pass == 1 && k != LEDGER_WR)
					prom_sample_u64(b, fam[pass].name, sl.l, NLAB(sl.l), st->usage[k]);
				else if (pass == 2)
					prom_sample_u64(b, fam[pass].name, sl.l, NLAB(sl.l), st->refused[k]);
			}
		}
	}
	if (s->slots) {
		prom_family(b, "rdmactl_ledger_process_slots", PROM_GAUGE,
			    "The quota ledger's process slots (quota init --procs): taken (state=\"used\") and all "
			    "(state=\"capacity\"). A full ledger refuses RDMA to the processes its limits cover.");
		prom_sample_u64(b, "rdmactl_ledger_process_slots", &(struct prom_label){ "state", "used" }, 1,
				s->slots_used);
		prom_sample_u64(b, "rdmactl_ledger_process_slots", &(struct prom_label){ "state", "capacity" }, 1,
				s->slots);
	}
	prom_family(b, "rdmactl_quota_processes", PROM_GAUGE,
		    "Live processes attached to the ledger in a global, cgroup or job scope.");
	for (i = 0; i < s->nscopes; i++) {
		const struct ledger_scope_stat *st = &s->scopes[i];
		const struct metrics_cgroup *cg = scope_cgroup(s, st);
		const struct cgroup_ids *ids = cg ? &cg->ids : &none;
		const struct podname *pod = cg ? &cg->pod : &no_pod;
		struct prom_label l[] = { { "scope", ledger_scope_type_name(st->scope.type) },
					  { "owner", st->scope.type == LEDGER_SCOPE_GLOBAL ? "" : st->scope.name },
					  { "slurm_job_id", ids->slurm_job_id }, { "pod_uid", ids->pod_uid },
					  { "namespace", pod->ns }, { "pod", pod->name },
					  { "container_id", ids->container_id } };

		if (st->scope.type != LEDGER_SCOPE_PROCESS)
			prom_sample_u64(b, "rdmactl_quota_processes", l, NLAB(l), st->nprocs);
	}
	prom_family(b, "rdmactl_refusals_total", PROM_COUNTER,
		    "Creations the quota ledger refused, by the scope whose limit refused and type, since the "
		    "ledger was created. unattributed: refusals this exporter did not see in the ledger's ring of "
		    "recent ones (before it started, in a burst, or with --once).");
	for (sc = 0; sc < METRICS_NSCOPES; sc++)
		for (k = 0; k < LEDGER_NKINDS; k++) {
			struct prom_label l[] = { { "scope", metrics_scope_name(sc) }, { "type", ledger_kind_name(k) } };

			prom_sample_u64(b, "rdmactl_refusals_total", l, NLAB(l), s->refusals[sc][k]);
		}
}

/* The kernel's side (BPF LSM) of the ledger scopes with kernel limits: labels as rdmactl_quota_limit's. */
static void kernel_quotas(const struct metrics_snap *s, struct prom_buf *b)
{
	static const struct family fam[] = {
		{ "rdmactl_kernel_quota_limit", PROM_GAUGE,
		  "Limit the kernel enforces (BPF LSM: rdmactl quota set --kernel) on a scope, by type (labels as "
		  "rdmactl_quota_limit); no series where the kernel has no limit." },
		{ "rdmactl_kernel_quota_usage", PROM_GAUGE,
		  "Objects (mr_bytes: bytes) the kernel counts against a scope that has kernel limits, by type." },
		{ "rdmactl_kernel_refusals_total", PROM_COUNTER,
		  "Creations the kernel refused (EDQUOT) in a scope since its first kernel limit, by type." },
		{ "rdmactl_kernel_kills_total", PROM_COUNTER,
		  "Processes the kernel killed in a scope for a creation past a limit that slipped past the check "
		  "(a request rewritten after it, a legacy write() command), by type." },
	};
	unsigned int f, k;
	size_t i;

	if (s->err[METRICS_SRC_KERNEL])
		return;
	if (s->kq_enforced) {
		single(b, "rdmactl_kernel_enforcement_up", PROM_GAUGE, s->kq_enforced > 0,
		       "1 when every kernel limit is enforced (or none is set), 0 when kernel limits are set and "
		       "their programs are not attached: nothing enforces them (rdmactl quota kernel repair).");
		single(b, "rdmactl_kernel_unrecorded_objects", PROM_GAUGE, s->kq_table.lost,
		       "Charged objects the kernel quota programs could not record since they were loaded: their "
		       "charge stays until the limit is set again (rdmactl quota show says the last error).");
		single(b, "rdmactl_kernel_table_records", PROM_GAUGE, (uint64_t)s->kq_table.records,
		       "Records in the kernel quota programs' table: one per object a kernel-limited scope holds.");
		single(b, "rdmactl_kernel_table_size", PROM_GAUGE, s->kq_table.size,
		       "Entries of the kernel quota programs' table (RDMACTL_KQ_OBJECTS when they were loaded).");
		single(b, "rdmactl_kernel_table_full_refusals_total", PROM_COUNTER, s->kq_table.full,
		       "Limited creations the kernel refused because its quota programs' table was nearly full.");
		single(b, "rdmactl_kernel_unfinished_scopes", PROM_GAUGE, s->kq_unfinished,
		       "Scopes whose quota set --kernel was killed before its limit went in: no kernel limit is in "
		       "force there (rdmactl quota show names them; set the limit again, or rdmactl quota gc).");
	}
	if (!s->kscopes)
		return;
	for (f = 0; f < NLAB(fam); f++) {
		prom_family(b, fam[f].name, fam[f].type, fam[f].help);
		for (i = 0; i < s->nscopes; i++) {
			const struct metrics_kscope *ks = &s->kscopes[i];
			struct scope_labels sl;

			if (!ks->has)
				continue;
			scope_labels(s, &s->scopes[i], &sl);
			for (k = 0; k < KQ_NK; k++) {
				uint64_t v;

				switch (f) {
				case 0:
					if (ks->max[k] == KQ_UNLIMITED)
						continue;
					v = ks->max[k];
					break;
				case 1:
					v = ks->use[k] > 0 ? (uint64_t)ks->use[k] : 0;
					break;
				case 2:
					v = ks->refused[k];
					break;
				default:
					v = ks->killed[k];
				}
				sl.l[2].value = kq_kind_name(k);
				prom_sample_u64(b, fam[f].name, sl.l, NLAB(sl.l), v);
			}
		}
	}
}

static void monitor(const struct metrics_snap *s, struct prom_buf *b)
{
	unsigned int t, d;
	int pass;

	if (s->err[METRICS_SRC_MONITOR])
		return;
	for (pass = 0; pass < 2; pass++) {
		const char *name = pass ? "rdmactl_destroys_total" : "rdmactl_creates_total";

		prom_family(b, name, PROM_COUNTER,
			    pass ? "Objects destroyed since rdmactl monitor started, every owner, by device and type "
				   "(without device: objects of no device, or of one that is gone)."
				 : "Objects created since rdmactl monitor started, every owner, by device and type "
				   "(without device: objects of no device, or of one that is gone).");
		for (t = 0; t < RESTRACK_NTYPES; t++) {
			struct prom_label l[] = { { "device", "" }, { "type", mon_type_name(t) } };

			if (!mon_type_name(t))
				continue;
			/* a monitor that pins no per-device counters: by type only */
			if (!s->mon_devs_read)
				prom_sample_u64(b, name, l + 1, 1, pass ? s->mon.destroy[t] : s->mon.create[t]);
			for (d = 0; s->mon_devs_read && d < s->mon_ndevs; d++) {
				const struct mon_counts *c = &s->mon_devs[d].c;

				l[0].value = s->mon_devs[d].name;
				prom_sample_u64(b, name, l, NLAB(l), pass ? c->destroy[t] : c->create[t]);
			}
		}
	}
	single(b, "rdmactl_mr_registered_bytes_total", PROM_COUNTER, s->mon.mr_bytes_create,
	       "Bytes of memory regions registered since rdmactl monitor started.");
	single(b, "rdmactl_mr_deregistered_bytes_total", PROM_COUNTER, s->mon.mr_bytes_destroy,
	       "Bytes of memory regions deregistered since rdmactl monitor started.");
}

static void rdmacg(const struct metrics_snap *s, struct prom_buf *b)
{
	size_t i;
	int pass, r;

	if (!s->nrdmacg)
		return;
	for (pass = 0; pass < 2; pass++) {
		const char *name = pass ? "rdmactl_rdmacg_usage" : "rdmactl_rdmacg_limit";

		prom_family(b, name, PROM_GAUGE,
			    pass ? "The rdma cgroup controller's charge of a cgroup (rdma.current), by device and "
				   "resource (hca_handle: contexts, hca_object: every other object)."
				 : "The rdma cgroup controller's limit of a cgroup (rdma.max), by device and resource; no "
				   "series where it is max.");
		for (i = 0; i < s->nrdmacg; i++) {
			const struct metrics_rdmacg *e = &s->rdmacg[i];
			const struct metrics_cgroup *cg = &s->cgroups[e->cg];

			for (r = 0; r < 2; r++) {
				struct prom_label l[] = { CG_LABELS(cg), { "device", e->dev },
							  { "resource", r ? "hca_object" : "hca_handle" } };
				uint64_t v = pass ? (r ? e->cur_object : e->cur_handle) : (r ? e->max_object : e->max_handle);

				if (pass ? e->has_cur : (e->has_max && v != RDMACG_MAX))
					prom_sample_u64(b, name, l, NLAB(l), v);
			}
		}
	}
}

static void http(const struct http_stats *h, struct prom_buf *b)
{
	static const struct {
		const char *reason;
		size_t off;
	} closed[] = {
		{ "timeout", offsetof(struct http_stats, timeouts) },
		{ "evicted", offsetof(struct http_stats, evicted) },
		{ "rejected", offsetof(struct http_stats, rejected) },
	};
	char code[16];
	size_t i;

	if (!h)
		return;
	prom_family(b, "rdmactl_http_connections_total", PROM_COUNTER, "Connections accepted by the exporter.");
	prom_sample_u64(b, "rdmactl_http_connections_total", NULL, 0, h->accepted);
	prom_family(b, "rdmactl_http_connections_closed_total", PROM_COUNTER,
		    "Connections the exporter closed before a normal end: timeout (no request, or the answer not "
		    "read, in time), evicted (to make room), rejected (no room: answered 503).");
	for (i = 0; i < NLAB(closed); i++) {
		struct prom_label l[] = { { "reason", closed[i].reason } };

		prom_sample_u64(b, "rdmactl_http_connections_closed_total", l, 1,
				*(const uint64_t *)((const char *)h + closed[i].off));
	}
	prom_family(b, "rdmactl_http_responses_total", PROM_COUNTER,
		    "Responses by status code (other: the codes not listed), this scrape's not yet counted.");
	for (i = 0; i < NLAB(http_stat_codes); i++) {
		struct prom_label l[] = { { "code", code } };

		if (http_stat_codes[i])
			snprintf(code, sizeof(code), "%d", http_stat_codes[i]);
		else
			snprintf(code, sizeof(code), "other");
		prom_sample_u64(b, "rdmactl_http_responses_total", l, 1, h->responses[i]);
	}
}

void export_render(const struct metrics_snap *s, const struct export_render_opts *o, struct prom_buf *b)
{
	info(s, o, b);
	devices(s, b);
	cgroups(s, b);
	if (o->per_process)
		processes(s, b);
	quotas(s, o, b);
	kernel_quotas(s, b);
	monitor(s, b);
	rdmacg(s, b);
	http(o->http, b);
}
