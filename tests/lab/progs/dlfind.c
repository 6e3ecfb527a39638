// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Test program: where do dlsym/dlvsym lookups of libibverbs' verbs lead, with libibverbs dlopen()ed
 * RTLD_LOCAL (as NCCL loads it)? One line per lookup: "WHAT FILE" (FILE the base name of the object that
 * holds the result, or "none"). Needs no RDMA device.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void where(const char *what, void *p)
{
	Dl_info info;
	const char *base;

	if (!p || !dladdr(p, &info) || !info.dli_fname) {
		printf("%s none\n", what);
		return;
	}
	base = strrchr(info.dli_fname, '/');
	printf("%s %s\n", what, base ? base + 1 : info.dli_fname);
}

int main(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dlfind: %s\n", dlerror());
		return 1;
	}
	where("dlvsym(h,ibv_create_qp,IBVERBS_1.1)", dlvsym(h, "ibv_create_qp", "IBVERBS_1.1"));
	where("dlvsym(h,ibv_create_qp,IBVERBS_1.0)", dlvsym(h, "ibv_create_qp", "IBVERBS_1.0"));
	where("dlvsym(h,ibv_reg_mr_iova2,IBVERBS_1.8)", dlvsym(h, "ibv_reg_mr_iova2", "IBVERBS_1.8"));
	where("dlsym(h,ibv_dereg_mr)", dlsym(h, "ibv_dereg_mr"));
	where("dlsym(h,ibv_get_device_list)", dlsym(h, "ibv_get_device_list"));
	where("dlsym(h,ibv_nosuch)", dlsym(h, "ibv_nosuch"));
	printf("dlerror %s\n", dlerror() ? "set" : "clear");
	/* the next definition after this program: the preload's, when there is one (caller-dependent) */
	where("dlsym(RTLD_NEXT,ibv_create_qp)", dlsym(RTLD_NEXT, "ibv_create_qp"));
	where("dlsym(RTLD_DEFAULT,ibv_create_qp)", dlsym(RTLD_DEFAULT, "ibv_create_qp"));
	where("dlvsym(RTLD_NEXT,getpid,GLIBC_2.2.5)", dlvsym(RTLD_NEXT, "getpid", "GLIBC_2.2.5"));
	dlclose(h);
	return 0;
}
