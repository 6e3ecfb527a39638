// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The kernel's backstop under a scope's ledger limits: BPF LSM where it is active, else a cgroup's rdma.max. */
#include "kq/backstop.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/cgroup.h"
#include "core/kinds.h"
#include "core/proc.h"
#include "core/util.h"
#include "kq/internal.h"
#include "kq/kq.h"
#include "kq/rdmacg.h"

bool kq_backstop_object_kind(int k)
{
	return k >= 0 && k < LEDGER_NKINDS && kind_rdmacg[k] == KIND_CG_O;
}



/*
 * Write the cgroup's rdma.max from its ledger limits: hca_handle = ctx, hca_object = sum of the object
 * kinds (max as soon as one is unlimited, so the kernel is never stricter than the ledger).
 */
static int write_rdma_max(const struct kq_backstop *b, const uint64_t *limit)
{
	char path[PATH_MAX + 16], cur[4096], line[256], handle[32], object[32];
	struct rdmacg_line devs[RDMACG_MAX_DEVS];
	uint64_t sum = 0;
	bool unl = false;
	int k, i, ndev, n = 0;
	ssize_t rd;
	FILE *f;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (!kq_backstop_object_kind(k))
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

	snprintf(path, sizeof(path), "%s/rdma.max", b->cgdir);
	rd = path_read(path, cur, sizeof(cur));
	if (rd < 0) {
		pr_err("cannot set the kernel limit: %s: %s (enable the rdma controller: echo +rdma > "
		       "PARENT/cgroup.subtree_control)",
		       path, strerror((int)-rd));
		return -1;
	}
	ndev = rdmacg_parse(cur, devs, RDMACG_MAX_DEVS);
	for (i = 0; i < ndev; i++) {
		const char *dev = devs[i].dev;

		if (b->dev && strcmp(dev, b->dev))
			continue;
		f = fopen(path, "we");
		if (!f) {
			pr_err("cannot set the kernel limit: %s: %s", path, strerror(errno));
			return -1;
		}
		snprintf(line, sizeof(line), "%.*s hca_handle=%s hca_object=%s\n", RDMACG_DEV_LEN, dev, handle, object);
		if (fputs(line, f) == EOF || fclose(f) == EOF) {
			pr_err("cannot set the kernel limit: writing '%.*s' to %s: %s", (int)strlen(line) - 1, line,
			       path, strerror(errno));
			return -1;
		}
		pr_debug("%s: %.*s", path, (int)strlen(line) - 1, line);
		n++;
	}
	if (!n) {
		pr_err("cannot set the kernel limit: %s %s in %s (see 'rdma dev')", b->dev ? "no device" : "no RDMA devices",
		       b->dev ? b->dev : "listed", path);
		return -1;
	}
	return 0;
}

static bool noted_rdma_max;

int kq_backstop_set(const struct kq_backstop *b, int k, uint64_t value, const uint64_t *limit)
{
	char why[600], root[PATH_MAX];
	struct kq_scope sc;
	struct kq *q;
	int err, i;

	if (kq_lsm_active(why, sizeof(why))) {
		/*
		 * an unset on a host where nothing was ever loaded has nothing to lift; the programs are loaded
		 * before the scope is named (a pid of another pid namespace is translated by one of them)
		 */
		err = kq_open(value != LEDGER_UNLIMITED, &q);
		if (err == -ENOENT && value == LEDGER_UNLIMITED)
			return 0;
		if (err) {
			pr_err("cannot set the kernel limit: %s", kq_error());
			return -1;
		}
		cgroup2_root(root, sizeof(root));
		err = kq_scope_of_ledger(b->scope, root, &sc);
		if (err) {
			pr_err("cannot set the kernel limit: %s", kq_error());
			kq_close(q);
			return -1;
		}
		err = kq_set(q, &sc, b->scope->type == LEDGER_SCOPE_CGROUP ? b->cgdir : NULL, k,
			     value == LEDGER_UNLIMITED ? KQ_UNLIMITED : value);
		kq_close(q);
		if (err) {
			pr_err("cannot set the kernel limit on %s: %s", b->desc,
			       kq_error());
			return -1;
		}
		return 0;
	}
	if (b->scope->type != LEDGER_SCOPE_CGROUP) {
		pr_err("the kernel cannot enforce limits on %s: BPF LSM is not active (%s); add bpf to the "
		       "kernel's lsm= parameter (lsm=...,bpf) and reboot, or limit a cgroup (rdma.max)",
		       b->desc, why);
		return -1;
	}
	/* once per process: a container's or a set's several kinds (and a rollback) would repeat it */
	if (!noted_rdma_max) {
		pr_err("note: BPF LSM is not active (%s): writing the cgroup's rdma.max instead, which counts only "
		       "contexts and all objects together (add bpf to the kernel's lsm= parameter for per-kind limits)",
		       why);
		noted_rdma_max = true;
	}
	err = write_rdma_max(b, limit);
	if (err || value == LEDGER_UNLIMITED)
		return err;
	if (k == LEDGER_MR_BYTES) {
		pr_err("rdma.max cannot hold an mr_bytes limit: the kernel does not enforce it (the interceptor does)");
		return -1;
	}
	if (kq_backstop_object_kind(k))
		for (i = 0; i < LEDGER_NKINDS; i++)
			if (kq_backstop_object_kind(i) && limit[i] == LEDGER_UNLIMITED) {
				pr_err("rdma.max cannot hold a %s limit alone: it counts pd, cq, qp, srq, mr, ah, mw, xrcd "
				       "and wq together, and stays at max until each of them has a limit (%s has none); "
				       "the ledger keeps this one for the interceptor, and rdma.max is written when the last "
				       "object kind gets its limit", ledger_kind_names[k], ledger_kind_names[i]);
				return KQ_BACKSTOP_PENDING;
			}
	return 0;
}

int kq_backstop_cgroup(const char *cgdir, const uint64_t limit[LEDGER_NKINDS])
{
	struct kq_scope sc;
	struct kq *q = NULL;
	size_t i, n;
	int ret;

	ret = kq_open(true, &q);
	if (!ret)
		ret = kq_scope_cgroup(cgdir, &sc);
	for (i = 0, n = 0; !ret && i < KQ_NK; i++)
		if (limit[i] != LEDGER_UNLIMITED) {
			ret = kq_set(q, &sc, cgdir, (unsigned int)i, limit[i]);
			n++;
		}
	if (!ret && !n) {
		/* a cgroup without counted limits still gets its scope: quota set KIND N --cgroup DIR --kernel later */
		ret = kq_set(q, &sc, cgdir, KQ_QP, KQ_UNLIMITED);
	}
	if (ret && q) {
		char why[512];

		/* the error stays the one that stopped it, not the removal's */
		snprintf(why, sizeof(why), "%s", kq_error());
		kq_remove(q, &sc);
		kq_fail(ret, "%s", why);
	}
	kq_close(q);
	return ret;
}
