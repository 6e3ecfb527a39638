// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dlsym() and dlvsym() for programs that dlopen() libibverbs and look its verbs up (NCCL does): LD_PRELOAD
 * alone never sees those calls, so without this the preload would charge an MR that libibverbs' ibv_reg_mr
 * registers through its PLT (ibv_reg_mr_iova2, interposed) but never credit its ibv_dereg_mr, and count no
 * QP at all. With it, the env-variable mode catches what `rdmactl run` (with its audit module) catches.
 *
 * Only lookups in an explicit handle are looked at: a result that is exactly the entry point the preload
 * itself uses for a verb (libibverbs' default version of it) is replaced by the preload's wrapper of that
 * verb. Compat versions (ibv_create_qp@IBVERBS_1.0) keep their own entry points, which call the default
 * version through libibverbs' PLT and land in the wrappers anyway. RTLD_DEFAULT and RTLD_NEXT lookups find
 * the wrappers by themselves (the preload comes first in the global scope), and RTLD_NEXT depends on who
 * calls: those two go straight on to glibc by a jump, so glibc sees the caller's own return address.
 *
 * glibc exports dlsym and dlvsym at GLIBC_2.2.5 (older programs) and GLIBC_2.34; both are defined here. The
 * real functions are found in libc's own symbol table (the preload's own references would bind to itself).
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "wrap.h"

#if defined(__x86_64__)

/* glibc's dlsym and dlvsym, found once (read by the entry points below). */
void *rdmactl_real_dlsym __attribute__((visibility("hidden")));
void *rdmactl_real_dlvsym __attribute__((visibility("hidden")));

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

/* A dynamic-section address: ld.so has relocated most in place already; be safe if not. */
static uintptr_t dyn_addr(ElfW(Addr) base, ElfW(Addr) a)
{
	return a < base ? a + base : a;
}

/*
 * The string helpers of the lookup, our own: it can run inside another library's start (a sanitizer's
 * runtime looks its real functions up with dlsym before anything else is initialised), when libc's strcmp
 * may be an interceptor that is not ready yet.
 */
static bool str_eq(const char *a, const char *b)
{
	for (; *a && *a == *b; a++, b++)
		;
	return *a == *b;
}

static bool str_prefix(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (*s != *prefix)
			return false;
	return true;
}

/* name's address in one loaded object, by its GNU hash table; NULL when it has none or no such symbol. */
static void *gnu_lookup(const struct dl_phdr_info *info, const char *name)
{
	const ElfW(Sym) *symtab = NULL;
	const uint32_t *ht = NULL, *buckets, *chain;
	const char *strtab = NULL;
	const ElfW(Dyn) *d = NULL;
	uint32_t h = gnu_hash(name), nbuckets, symoffset, bloom_size, idx;
	int i;

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
	}
	if (!symtab || !strtab || !ht)
		return NULL;
	nbuckets = ht[0];
	symoffset = ht[1];
	bloom_size = ht[2];
	if (!nbuckets)
		return NULL;
	buckets = (const uint32_t *)((const ElfW(Addr) *)(ht + 4) + bloom_size);
	chain = buckets + nbuckets;
	idx = buckets[h % nbuckets];
	if (idx < symoffset)
		return NULL;
	for (;; idx++) {
		uint32_t ch = chain[idx - symoffset];

		if ((ch | 1) == (h | 1) && symtab[idx].st_shndx != SHN_UNDEF && str_eq(strtab + symtab[idx].st_name, name))
			return (void *)(info->dlpi_addr + symtab[idx].st_value);
		if (ch & 1)
			return NULL;
	}
}

static int find_in_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = NULL, *p;

	(void)size;
	(void)arg;
	for (p = info->dlpi_name; p && *p; p++)
		if (*p == '/')
			base = p;
	if (!base || !str_prefix(base + 1, "libc.so."))
		return 0;
	__atomic_store_n(&rdmactl_real_dlsym, gnu_lookup(info, "dlsym"), __ATOMIC_RELEASE);
	__atomic_store_n(&rdmactl_real_dlvsym, gnu_lookup(info, "dlvsym"), __ATOMIC_RELEASE);
	return 1;
}

/* Called by the entry points while the real functions are not known yet (idempotent, any thread). */
__attribute__((visibility("hidden"))) void rdmactl_dl_resolve(void)
{
	dl_iterate_phdr(find_in_libc, NULL);
}

__attribute__((constructor(101))) static void dl_init(void)
{
	rdmactl_dl_resolve();
}

void *pl_real_dlvsym(void *handle, const char *name, const char *ver)
{
	void *(*fn)(void *, const char *, const char *);

	if (!__atomic_load_n(&rdmactl_real_dlvsym, __ATOMIC_ACQUIRE))
		rdmactl_dl_resolve();
	fn = (void *(*)(void *, const char *, const char *))__atomic_load_n(&rdmactl_real_dlvsym, __ATOMIC_ACQUIRE);
	return fn ? fn(handle, name, ver) : NULL;
}

/* The preload's wrapper of the verb whose real entry point is p; p itself when it is none of them. */
static void *wrapper_of(void *p)
{
	unsigned int i;

	if (!p)
		return p;
	need_real();
	for (i = 0; i < wrap_nsyms; i++)
		if (*wrap_syms[i].real == p)
			return wrap_syms[i].addr;
	return p;
}

/* dlsym and dlvsym in an explicit handle (from the entry points). */
__attribute__((visibility("hidden"))) void *rdmactl_dlsym_handle(void *handle, const char *name)
{
	void *(*fn)(void *, const char *) = (void *(*)(void *, const char *))rdmactl_real_dlsym;
	void *p = fn(handle, name);

	return name && !strncmp(name, "ibv_", 4) ? wrapper_of(p) : p;
}

__attribute__((visibility("hidden"))) void *rdmactl_dlvsym_handle(void *handle, const char *name, const char *ver)
{
	void *(*fn)(void *, const char *, const char *) = (void *(*)(void *, const char *, const char *))rdmactl_real_dlvsym;
	void *p = fn(handle, name, ver);

	return name && !strncmp(name, "ibv_", 4) ? wrapper_of(p) : p;
}

/* Without glibc's functions (not found: never seen), a lookup finds nothing rather than crash. */
__attribute__((visibility("hidden"))) void *rdmactl_dl_none(void)
{
	return NULL;
}

/*
 * The entry points. RTLD_DEFAULT (0) and RTLD_NEXT (-1) jump to glibc with the caller's return address
 * untouched; an explicit handle goes through the C functions above. While glibc's functions are not known
 * (a lookup before this library's constructor), they are found first, the arguments kept on the stack.
 */
#define DL_ENTRY(sym, real, handle_fn, nargs_push, nargs_pop)                                      \
	"	.p2align 4\n"                                                                       \
	"	.type " sym ",@function\n"                                                          \
	sym ":\n"                                                                                   \
	"	endbr64\n"                                                                          \
	"	movq " real "(%rip), %rax\n"                                                        \
	"	testq %rax, %rax\n"                                                                 \
	"	jz 2f\n"                                                                            \
	"	testq %rdi, %rdi\n"                                                                 \
	"	jz 1f\n"                                                                            \
	"	cmpq $-1, %rdi\n"                                                                   \
	"	je 1f\n"                                                                            \
	"	jmp " handle_fn "\n"                                                                \
	"1:	jmp *%rax\n"                                                                        \
	"2:	" nargs_push "\n"                                                                   \
	"	call rdmactl_dl_resolve\n"                                                          \
	"	" nargs_pop "\n"                                                                    \
	"	movq " real "(%rip), %rax\n"                                                        \
	"	testq %rax, %rax\n"                                                                 \
	"	jz 3f\n"                                                                            \
	"	testq %rdi, %rdi\n"                                                                 \
	"	jz 1b\n"                                                                            \
	"	cmpq $-1, %rdi\n"                                                                   \
	"	je 1b\n"                                                                            \
	"	jmp " handle_fn "\n"                                                                \
	"3:	jmp rdmactl_dl_none\n"                                                              \
	"	.size " sym ", .-" sym "\n"

/* Two and three arguments saved across the call; the stack stays 16-byte aligned at the call. */
__asm__(".text\n" DL_ENTRY("rdmactl_dlsym_entry", "rdmactl_real_dlsym", "rdmactl_dlsym_handle",
			   "pushq %rdi\n	pushq %rsi\n	subq $8, %rsp", "addq $8, %rsp\n	popq %rsi\n	popq %rdi")
		DL_ENTRY("rdmactl_dlvsym_entry", "rdmactl_real_dlvsym", "rdmactl_dlvsym_handle",
			 "pushq %rdi\n	pushq %rsi\n	pushq %rdx", "popq %rdx\n	popq %rsi\n	popq %rdi")
	"	.globl rdmactl_dlsym_entry_old\n"
	"	.set rdmactl_dlsym_entry_old, rdmactl_dlsym_entry\n"
	"	.globl rdmactl_dlvsym_entry_old\n"
	"	.set rdmactl_dlvsym_entry_old, rdmactl_dlvsym_entry\n"
	"	.globl rdmactl_dlsym_entry\n"
	"	.globl rdmactl_dlvsym_entry\n"
	"	.symver rdmactl_dlsym_entry, dlsym@@GLIBC_2.34\n"
	"	.symver rdmactl_dlvsym_entry, dlvsym@@GLIBC_2.34\n"
	"	.symver rdmactl_dlsym_entry_old, dlsym@GLIBC_2.2.5\n"
	"	.symver rdmactl_dlvsym_entry_old, dlvsym@GLIBC_2.2.5\n");

#else

void *pl_real_dlvsym(void *handle, const char *name, const char *ver)
{
	return dlvsym(handle, name, ver);
}

#endif
