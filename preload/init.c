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
bool pl_on HOT_DATA;
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
	void *p = h ? pl_real_dlvsym(h, name, ver) : NULL;

	return p ? p : pl_real_dlvsym(RTLD_NEXT, name, ver);
}

static void do_init(void)
{
	/*
	 * A handle on the loaded libibverbs finds it even when it was dlopen()ed with RTLD_LOCAL (then
	 * RTLD_NEXT cannot see it: that is the loader case the audit redirection brings here).
	 */
	void *h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);

#define X(name, ver, ret, args) real.name = (ret(*) args)lookup(h, "ibv_" #name, ver);
	PRELOAD_VERBS(X)
#undef X
	if (h)
		dlclose(h);
	if (own_process())
		return;
#define X(name) &&real.name
	if (!(1 PRELOAD_REQUIRED(X))) {
		plog(1, "the libibverbs found lacks verbs of IBVERBS_1.1: every verb passes through uncounted");
		return;
	}
#undef X
	acct_init();
	pthread_atfork(NULL, NULL, atfork_child);
	pl_active = true;
}

void pl_init_once_fn(void)
{
	do_init();
	__atomic_store_n(&pl_inited, true, __ATOMIC_RELEASE);
	__atomic_store_n(&pl_on, pl_active, __ATOMIC_RELEASE);
}
