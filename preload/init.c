// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The interceptor's start: the real verbs looked up once, settings and ledger, fork handling. */
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "wrap.h"

struct real_verbs real HOT_DATA;
pthread_once_t pl_init_once = PTHREAD_ONCE_INIT;
bool pl_inited HOT_DATA;
bool pl_active HOT_DATA;
__thread int pl_guard __attribute__((tls_model("initial-exec")));

static bool own_process(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *base;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return !strcmp(base, "rdmactl");
}

/*
 * The child has one thread: locks another thread of the parent held at fork time would never be released.
 * The parent's object records stay (the parent's to release) but are ignored by generation.
 */
static void atfork_child(void)
{
	obj_atfork_child();
	ctx_atfork_child();
	acct_atfork_child();
}

static void *lookup(void *h, const char *name, const char *ver)
{
	void *p = h ? dlvsym(h, name, ver) : NULL;

	return p ? p : dlvsym(RTLD_NEXT, name, ver);
}

static void do_init(void)
{
	/*
	 * A handle on the loaded libibverbs finds it even when it was dlopen()ed with RTLD_LOCAL (then
	 * RTLD_NEXT cannot see it: that is the loader case the audit redirection brings here).
	 */
	void *h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);

#define R(field, name, ver) real.field = (__typeof__(real.field))lookup(h, name, ver)
	R(open_device, "ibv_open_device", "IBVERBS_1.1");
	R(close_device, "ibv_close_device", "IBVERBS_1.1");
	R(import_device, "ibv_import_device", "IBVERBS_1.10");
	R(alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1");
	R(dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1");
	R(reg_mr, "ibv_reg_mr", "IBVERBS_1.1");
	R(reg_mr_iova, "ibv_reg_mr_iova", "IBVERBS_1.7");
	R(reg_mr_iova2, "ibv_reg_mr_iova2", "IBVERBS_1.8");
	R(reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "IBVERBS_1.12");
	R(rereg_mr, "ibv_rereg_mr", "IBVERBS_1.1");
	R(dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1");
	R(create_cq, "ibv_create_cq", "IBVERBS_1.1");
	R(destroy_cq, "ibv_destroy_cq", "IBVERBS_1.1");
	R(create_srq, "ibv_create_srq", "IBVERBS_1.1");
	R(destroy_srq, "ibv_destroy_srq", "IBVERBS_1.1");
	R(create_qp, "ibv_create_qp", "IBVERBS_1.1");
	R(destroy_qp, "ibv_destroy_qp", "IBVERBS_1.1");
	R(create_ah, "ibv_create_ah", "IBVERBS_1.1");
	R(create_ah_from_wc, "ibv_create_ah_from_wc", "IBVERBS_1.1");
	R(destroy_ah, "ibv_destroy_ah", "IBVERBS_1.1");
#undef R
	if (h)
		dlclose(h);
	if (own_process())
		return;
	acct_init();
	obj_init();
	pthread_atfork(NULL, NULL, atfork_child);
	pl_active = true;
}

void pl_init_once_fn(void)
{
	do_init();
	__atomic_store_n(&pl_inited, true, __ATOMIC_RELEASE);
}
