// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the interceptor adds to one create/destroy pair of every kind, in one process, interleaved: each
 * iteration makes one pair through the verbs as a program calls them (the exported symbols through this
 * program's PLT, and the inline verbs through the context's ops) and one through libibverbs' own entry
 * points (the default version of each verb, found in libibverbs' symbol table by this program itself, so that
 * neither LD_AUDIT nor the preload's dlsym/dlvsym can hand it a wrapper) on a context opened by libibverbs'
 * own ibv_open_device, whose ops no wrapper replaced. The order alternates every iteration. Meant for the lab
 * with LAB_ICOUNT=0, where the clock counts instructions: bench/kinds.sh runs it bare (the control), under
 * LD_PRELOAD with RDMACTL_MAX_* and under `rdmactl run`, and prints the table.
 * Prints per kind "KIND direct P10 wrapped P10 added P10(wrapped)-P10(direct) errno E", E being the errno
 * both sides' creates failed with (0: they succeeded; else the pair is a failed create, as rxe's XRC domain
 * and WQ are). Then "query ..." for ibv_query_device, a verb that is not intercepted.
 *   kinds [-d DEV] [-n PAIRS] [-s MR_BYTES] [-k KIND[,KIND...]]
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "bench.h"

/* ---- libibverbs' own entry points ------------------------------------------------------------------ */

struct lookup {
	const char *name;
	void *addr;
};

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uintptr_t dyn_addr(ElfW(Addr) base, ElfW(Addr) a)
{
	return a < base ? a + base : a;
}

/* The default version of name in libibverbs (the one its @@ marks), by its GNU hash table. */
static int find_default(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lookup *lk = arg;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	const ElfW(Sym) *symtab = NULL;
	const uint32_t *ht = NULL, *buckets, *chain;
	const ElfW(Half) *versym = NULL;
	const ElfW(Dyn) *d = NULL;
	const char *strtab = NULL;
	uint32_t h, idx;
	int i;

	(void)size;
	if (!base || strncmp(base + 1, "libibverbs.so", 13))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)dyn_addr(info->dlpi_addr, d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			strtab = (const char *)dyn_addr(info->dlpi_addr, d->d_un.d_ptr);
		else if (d->d_tag == DT_GNU_HASH)
			ht = (const uint32_t *)dyn_addr(info->dlpi_addr, d->d_un.d_ptr);
		else if (d->d_tag == DT_VERSYM)
			versym = (const ElfW(Half) *)dyn_addr(info->dlpi_addr, d->d_un.d_ptr);
	}
	if (!symtab || !strtab || !ht || !ht[0])
		return 1;
	h = gnu_hash(lk->name);
	buckets = (const uint32_t *)((const ElfW(Addr) *)(ht + 4) + ht[2]);
	chain = buckets + ht[0];
	idx = buckets[h % ht[0]];
	if (idx < ht[1])
		return 1;
	for (;; idx++) {
		uint32_t ch = chain[idx - ht[1]];

		if ((ch | 1) == (h | 1) && symtab[idx].st_shndx != SHN_UNDEF && !strcmp(strtab + symtab[idx].st_name, lk->name) &&
		    (!versym || !(versym[idx] & 0x8000))) {
			lk->addr = (void *)(info->dlpi_addr + symtab[idx].st_value);
			return 1;
		}
		if (ch & 1)
			return 1;
	}
}

static void *own(const char *name)
{
	struct lookup lk = { name, NULL };

	dl_iterate_phdr(find_default, &lk);
	if (!lk.addr) {
		fprintf(stderr, "kinds: %s not found in libibverbs\n", name);
		exit(1);
	}
	return lk.addr;
}

static struct {
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *, void *, size_t, uint64_t, unsigned int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_ah *(*create_ah)(struct ibv_pd *, struct ibv_ah_attr *);
	int (*destroy_ah)(struct ibv_ah *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
} d;

/* ---- one side of each kind ------------------------------------------------------------------------- */

/* What each side works on: its own context (W opened through the symbol, D by libibverbs' own entry). */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	bool wrapped;
};

static struct ibv_device *dev;
static void *buf;
static size_t buf_size = 65536;
static union ibv_gid gid;

/* One pair of kind k on side s: 0, or the errno of the failed create (-1: the destroy failed). */
static int pair(const char *k, struct side *s)
{
	bool w = s->wrapped;

	if (!strcmp(k, "ctx")) {
		struct ibv_context *c = w ? ibv_open_device(dev) : d.open_device(dev);

		if (!c)
			return errno;
		return (w ? ibv_close_device(c) : d.close_device(c)) ? -1 : 0;
	}
	if (!strcmp(k, "pd")) {
		struct ibv_pd *p = w ? ibv_alloc_pd(s->ctx) : d.alloc_pd(s->ctx);

		if (!p)
			return errno;
		return (w ? ibv_dealloc_pd(p) : d.dealloc_pd(p)) ? -1 : 0;
	}
	if (!strcmp(k, "cq")) {
		struct ibv_cq *c = w ? ibv_create_cq(s->ctx, 16, NULL, NULL, 0) : d.create_cq(s->ctx, 16, NULL, NULL, 0);

		if (!c)
			return errno;
		return (w ? ibv_destroy_cq(c) : d.destroy_cq(c)) ? -1 : 0;
	}
	if (!strcmp(k, "qp")) {
		struct ibv_qp_init_attr qa = {
			.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *q = w ? ibv_create_qp(s->pd, &qa) : d.create_qp(s->pd, &qa);

		if (!q)
			return errno;
		return (w ? ibv_destroy_qp(q) : d.destroy_qp(q)) ? -1 : 0;
	}
	if (!strcmp(k, "srq")) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		struct ibv_srq *q = w ? ibv_create_srq(s->pd, &sa) : d.create_srq(s->pd, &sa);

		if (!q)
			return errno;
		return (w ? ibv_destroy_srq(q) : d.destroy_srq(q)) ? -1 : 0;
	}
	if (!strcmp(k, "mr")) {
		/* ibv_reg_mr with a constant access is the exported ibv_reg_mr; libibverbs' own is iova2 */
		struct ibv_mr *m = w ? ibv_reg_mr(s->pd, buf, buf_size, IBV_ACCESS_LOCAL_WRITE)
				     : d.reg_mr_iova2(s->pd, buf, buf_size, (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);

		if (!m)
			return errno;
		return (w ? ibv_dereg_mr(m) : d.dereg_mr(m)) ? -1 : 0;
	}
	if (!strcmp(k, "ah")) {
		struct ibv_ah_attr aa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = gid, .sgid_index = 1, .hop_limit = 64 },
		};
		struct ibv_ah *a = w ? ibv_create_ah(s->pd, &aa) : d.create_ah(s->pd, &aa);

		if (!a)
			return errno;
		return (w ? ibv_destroy_ah(a) : d.destroy_ah(a)) ? -1 : 0;
	}
	/* the inline verbs: the same call on both sides, through each context's ops */
	if (!strcmp(k, "mw")) {
		struct ibv_mw *m = ibv_alloc_mw(s->pd, IBV_MW_TYPE_1);

		if (!m)
			return errno;
		return ibv_dealloc_mw(m) ? -1 : 0;
	}
	if (!strcmp(k, "xrcd")) {
		struct ibv_xrcd_init_attr xa = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1, .oflags = O_CREAT,
		};
		struct ibv_xrcd *x = ibv_open_xrcd(s->ctx, &xa);

		if (!x)
			return errno;
		return ibv_close_xrcd(x) ? -1 : 0;
	}
	if (!strcmp(k, "wq")) {
		struct ibv_wq_init_attr wa = {
			.wq_type = IBV_WQT_RQ, .max_wr = 16, .max_sge = 1, .pd = s->pd, .cq = s->cq,
		};
		struct ibv_wq *q = ibv_create_wq(s->ctx, &wa);

		if (!q)
			return errno;
		return ibv_destroy_wq(q) ? -1 : 0;
	}
	if (!strcmp(k, "query")) {
		struct ibv_device_attr da;

		return (w ? ibv_query_device(s->ctx, &da) : d.query_device(s->ctx, &da)) ? errno : 0;
	}
	fprintf(stderr, "kinds: unknown kind %s\n", k);
	exit(2);
}

static double p10(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[n / 10];
}

static void run_kind(const char *k, struct side *sw, struct side *sd, int n)
{
	double *tw = calloc(n, sizeof(*tw)), *td = calloc(n, sizeof(*td));
	int i, ew = 0, ed = 0;

	if (!tw || !td)
		exit(1);
	/* one untimed pair each: first calls bind symbols and fault pages in */
	ew = pair(k, sw);
	ed = pair(k, sd);
	if (ew != ed || ew < 0) {
		fprintf(stderr, "kinds: %s: wrapped side %s, direct side %s\n", k, ew ? strerror(ew > 0 ? ew : EIO) : "ok",
			ed ? strerror(ed > 0 ? ed : EIO) : "ok");
		printf("%s failed\n", k);
		free(tw);
		free(td);
		return;
	}
	for (i = 0; i < n * 2; i++) {
		bool wrapped = (i % 2) ^ ((i / 2) % 2);
		struct side *s = wrapped ? sw : sd;
		uint64_t t0, t1;
		int e;

		t0 = now_ns();
		e = pair(k, s);
		t1 = now_ns();
		if (e != ew) {
			fprintf(stderr, "kinds: %s pair %d (%s): %s\n", k, i / 2, wrapped ? "wrapped" : "direct",
				e > 0 ? strerror(e) : e < 0 ? "destroy failed" : "succeeded");
			exit(1);
		}
		(wrapped ? tw : td)[i / 2] = (double)(t1 - t0);
	}
	printf("%s direct %.0f wrapped %.0f added %.0f errno %s\n", k, p10(td, n), p10(tw, n), p10(tw, n) - p10(td, n),
	       ew ? strerrorname_np(ew) : "0");
	fflush(stdout);
	free(tw);
	free(td);
}

static void setup(struct side *s, bool wrapped)
{
	s->wrapped = wrapped;
	s->ctx = wrapped ? ibv_open_device(dev) : d.open_device(dev);
	s->pd = s->ctx ? (wrapped ? ibv_alloc_pd(s->ctx) : d.alloc_pd(s->ctx)) : NULL;
	s->cq = s->pd ? (wrapped ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : d.create_cq(s->ctx, 64, NULL, NULL, 0))
		      : NULL;
	if (!s->cq) {
		fprintf(stderr, "kinds: setup (%s): %s\n", wrapped ? "wrapped" : "direct", strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0";
	char kinds[256] = "qp,cq,pd,mr,srq,ah,mw,xrcd,wq,ctx,query", *k, *save;
	struct ibv_device **list;
	struct side sw, sd;
	int n = 300, opt, i;

	while ((opt = getopt(argc, argv, "d:n:s:k:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 's': buf_size = strtoull(optarg, NULL, 0); break;
		case 'k': snprintf(kinds, sizeof(kinds), "%s", optarg); break;
		default:
			fprintf(stderr, "usage: kinds [-d DEV] [-n PAIRS] [-s MR_BYTES] [-k KIND[,KIND...]]\n");
			return 2;
		}
	}
	if (n < 10) {
		fprintf(stderr, "kinds: -n must be at least 10\n");
		return 2;
	}
#define OWN(f, name) *(void **)&d.f = own(name)
	OWN(open_device, "ibv_open_device");
	OWN(close_device, "ibv_close_device");
	OWN(alloc_pd, "ibv_alloc_pd");
	OWN(dealloc_pd, "ibv_dealloc_pd");
	OWN(create_cq, "ibv_create_cq");
	OWN(destroy_cq, "ibv_destroy_cq");
	OWN(create_qp, "ibv_create_qp");
	OWN(destroy_qp, "ibv_destroy_qp");
	OWN(create_srq, "ibv_create_srq");
	OWN(destroy_srq, "ibv_destroy_srq");
	OWN(reg_mr_iova2, "ibv_reg_mr_iova2");
	OWN(dereg_mr, "ibv_dereg_mr");
	OWN(create_ah, "ibv_create_ah");
	OWN(destroy_ah, "ibv_destroy_ah");
	OWN(query_device, "ibv_query_device");
	if ((void *)d.create_qp == (void *)ibv_create_qp)
		fprintf(stderr, "kinds: ibv_create_qp is not intercepted here (a control run)\n");
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			dev = list[i];
	if (!dev || !(buf = aligned_alloc(4096, buf_size))) {
		fprintf(stderr, "kinds: no device %s\n", dev_name);
		return 1;
	}
	memset(buf, 0, buf_size);
	setup(&sw, true);
	setup(&sd, false);
	if (ibv_query_gid(sd.ctx, 1, 1, &gid)) {
		fprintf(stderr, "kinds: no GID 1 on %s port 1\n", dev_name);
		return 1;
	}
	for (k = strtok_r(kinds, ",", &save); k; k = strtok_r(NULL, ",", &save))
		run_kind(k, &sw, &sd, !strcmp(k, "ctx") ? (n / 3 < 10 ? 10 : n / 3) : n);
	return 0;
}
