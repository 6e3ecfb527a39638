// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Why a create the interceptor let through failed in the kernel: its kernel limit (BPF LSM, EDQUOT), the
 * cgroup's rdma.max (EAGAIN), RLIMIT_MEMLOCK (an MR's ENOMEM with the locked-memory limit reached), or the
 * device itself (its own maxima). Cold: only a failed create comes here.
 */
#include "preload.h"
#include "wrap.h"
#include "objtab.h"
#include "core/proc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define CAP_IPC_LOCK_BIT 14

/* A small file into buf (NUL-terminated): 0, or -errno. */
static int path_read_ok(const char *path, char *buf, size_t len)
{
	ssize_t n = path_read(path, buf, len);

	return n < 0 ? (int)n : 0;
}

/* A "Key:\t value" line of /proc/self/status as a number (base 10, or 16 for the Cap* masks); -1: none. */
static int status_field(const char *status, const char *key, int base, uint64_t *v)
{
	const char *p = strstr(status, key);
	char *end;

	if (!p || (p != status && p[-1] != '\n'))
		return -1;
	p += strlen(key);
	errno = 0;
	*v = strtoull(p, &end, base);
	return errno || end == p ? -1 : 0;
}

/*
 * RLIMIT_MEMLOCK reached by registering bytes more: the limit, and what the process has pinned (VmPin:
 * the kernel's pinned_vm, which ib_umem_get() adds the MR's pages to and compares with the limit, unless
 * the process has CAP_IPC_LOCK).
 */
static bool memlock_reached(uint64_t bytes, uint64_t *limit, uint64_t *pinned)
{
	uint64_t kb, cap, page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	char st[4096];

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return false;
	if (path_read_ok("/proc/self/status", st, sizeof(st)))
		return false;
	if (!status_field(st, "CapEff:", 16, &cap) && (cap & (1ULL << CAP_IPC_LOCK_BIT)))
		return false;
	if (status_field(st, "VmPin:", 10, &kb))
		return false;
	*limit = rl.rlim_cur;
	*pinned = kb * 1024;
	return *pinned + (bytes + page - 1) / page * page > *limit;
}

/* The device's count of field in the rdma.current beside max_path (line: its rdma.max line); 0: not found. */
static uint64_t current_of(const char *max_path, const char *line, const char *field)
{
	char path[4200], cur[4096], dev[64], *p, *f;
	size_t n = strcspn(line, " ");

	if (n >= sizeof(dev))
		return 0;
	memcpy(dev, line, n);
	dev[n] = '\0';
	snprintf(path, sizeof(path), "%.*scurrent", (int)(strlen(max_path) - 3), max_path);
	if (path_read_ok(path, cur, sizeof(cur)))
		return 0;
	for (p = cur; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, dev, n) && p[n] == ' ' && (f = strstr(p, field)))
			return strtoull(f + strlen(field), NULL, 10);
	return 0;
}

/*
 * The nearest cgroup of this process (itself or an ancestor) whose rdma.max limits the field that charge
 * counts (hca_handle for a context, hca_object for every other object): its directory below /sys/fs/cgroup
 * and the device's line.
 */
static bool rdma_max_of(bool handle, char *cg, size_t cglen, char *line, size_t linelen, uint64_t *limit,
			uint64_t *usage)
{
	const char *field = handle ? "hca_handle=" : "hca_object=";
	char buf[4096], path[4200], *p, *nl, *save;

	if (path_read_ok("/proc/self/cgroup", buf, sizeof(buf)) || strncmp(buf, "0::", 3))
		return false;
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	if (strlen(buf + 3) >= cglen)
		return false;
	memcpy(cg, buf + 3, strlen(buf + 3) + 1);
	for (;;) {
		char m[4096];

		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/rdma.max", strcmp(cg, "/") ? cg : "");
		if (!path_read_ok(path, m, sizeof(m)))
			for (p = strtok_r(m, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
				const char *f = strstr(p, field);

				if (f && strncmp(f + strlen(field), "max", 3)) {
					size_t n = strlen(p);

					while (n && p[n - 1] == ' ')
						p[--n] = '\0'; /* the kernel ends each line with a space */
					snprintf(line, linelen, "%s", p);
					*limit = strtoull(f + strlen(field), NULL, 10);
					*usage = current_of(path, p, field);
					return true;
				}
			}
		p = strrchr(cg, '/');
		if (!p || p == cg)
			return false;
		*p = '\0';
	}
}

/* The device's own maxima for kind, as "max_qp 65536, max_qp_wr 16384"; "" when unknown. */
static void device_max(enum ledger_kind kind, char *buf, size_t len)
{
	struct ctx_ent *e = atomic_load_explicit(&ctx_last, memory_order_relaxed);
	struct ibv_context *ctx = e ? atomic_load_explicit(&e->ctx, memory_order_acquire) : NULL;
	int (*query)(struct ibv_context *, struct ibv_device_attr *);
	struct ibv_device_attr a;
	void *h;

	buf[0] = '\0';
	if (!ctx)
		return;
	/* not a verb the interceptor wraps: looked up here, where a create has failed */
	h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	query = (int (*)(struct ibv_context *, struct ibv_device_attr *))pl_real_dlvsym(h ? h : RTLD_NEXT,
											  "ibv_query_device", "IBVERBS_1.1");
	if (h)
		dlclose(h);
	if (!query || query(ctx, &a))
		return;
	switch (kind) {
	case LEDGER_PD: snprintf(buf, len, "max_pd %d", a.max_pd); break;
	case LEDGER_CQ: snprintf(buf, len, "max_cq %d, max_cqe %d", a.max_cq, a.max_cqe); break;
	case LEDGER_QP: snprintf(buf, len, "max_qp %d, max_qp_wr %d, max_sge %d", a.max_qp, a.max_qp_wr, a.max_sge); break;
	case LEDGER_SRQ: snprintf(buf, len, "max_srq %d, max_srq_wr %d", a.max_srq, a.max_srq_wr); break;
	case LEDGER_MR: snprintf(buf, len, "max_mr %d, max_mr_size %" PRIu64, a.max_mr, (uint64_t)a.max_mr_size); break;
	case LEDGER_AH: snprintf(buf, len, "max_ah %d", a.max_ah); break;
	case LEDGER_MW: snprintf(buf, len, "max_mw %d", a.max_mw); break;
	default: break;
	}
}

bool explain_failure(enum ledger_kind kind, uint64_t bytes, int err, struct why_failed *w)
{
	const char *k = ledger_kind_names[kind];
	char cg[1024], line[256], max[160];
	pid_t pid = getpid();

	memset(w, 0, sizeof(*w));
	if (err == EDQUOT) {
		/* the interceptor refuses with its own errno before the call: EDQUOT from the call is the kernel's */
		snprintf(w->msg, sizeof(w->msg), "refused %s for pid %d: a kernel limit (BPF LSM) of its cgroup, "
			 "its pid or the host (rdmactl quota show names it, with its usage)", k, (int)pid);
		return true;
	}
	if (err == EAGAIN &&
	    rdma_max_of(kind == LEDGER_CTX, cg, sizeof(cg), line, sizeof(line), &w->limit, &w->usage)) {
		snprintf(w->msg, sizeof(w->msg), "refused %s for pid %d: the rdma.max of cgroup %.200s: \"%.100s\", %" PRIu64
			 " in use (rdma.current)", k, (int)pid, cg, line, w->usage);
		w->env = "rdma.max";
		return true;
	}
	if (err == ENOMEM && kind == LEDGER_MR && memlock_reached(bytes, &w->limit, &w->usage)) {
		snprintf(w->msg, sizeof(w->msg), "refused mr of %" PRIu64 " bytes for pid %d: RLIMIT_MEMLOCK is %" PRIu64
			 " bytes and %" PRIu64 " are pinned already (ulimit -l; LimitMEMLOCK= of a systemd unit)",
			 bytes, (int)pid, w->limit, w->usage);
		w->env = "RLIMIT_MEMLOCK";
		return true;
	}
	if (err != ENOMEM && err != ENOSPC && err != EINVAL && err != EAGAIN)
		return false;
	device_max(kind, max, sizeof(max));
	if (!max[0])
		return false;
	snprintf(w->msg, sizeof(w->msg), "%s for pid %d failed: %s from the device, no limit refused it (the device's "
		 "%s; ibv_devinfo -v)", k, (int)pid, strerror(err), max);
	return true;
}

COLD_FN void acct_create_failed(enum ledger_kind kind, uint64_t bytes, int err)
{
	struct why_failed w;

	if (pcfg.log_level >= 1 && explain_failure(kind, bytes, err, &w))
		acct_failure_said(kind, bytes, &w);
}
