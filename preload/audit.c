// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rtld-audit side of the preload: loaded a second time with LD_AUDIT (same file), it redirects bindings to
 * libibverbs' default-version verbs -- notably dlvsym(handle, ...) lookups, which LD_PRELOAD cannot
 * interpose -- to the wrappers of the copy loaded with LD_PRELOAD.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/stat.h>

#include "preload.h"

/* The ELF header of this copy: its load address, from which wrapper offsets are computed. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));

static dev_t self_dev;
static ino_t self_ino;
static struct link_map *preload_map; /* our copy in the main namespace (the LD_PRELOAD one) */
static struct link_map *verbs_map;   /* libibverbs */
static const Elf64_Half *verbs_versym;

PRELOAD_API unsigned int la_version(unsigned int version)
{
	struct stat st;
	Dl_info info;

	if (dladdr((void *)la_version, &info) && info.dli_fname && !stat(info.dli_fname, &st)) {
		self_dev = st.st_dev;
		self_ino = st.st_ino;
	}
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static bool is_self(const char *name)
{
	struct stat st;

	return self_ino && name && *name && !stat(name, &st) && st.st_dev == self_dev && st.st_ino == self_ino;
}

static bool is_libibverbs(const char *name)
{
	const char *base = name ? strrchr(name, '/') : NULL;

	base = base ? base + 1 : name;
	return base && !strncmp(base, "libibverbs.so", 13);
}

static const Elf64_Half *find_versym(struct link_map *map)
{
	const ElfW(Dyn) *d;

	for (d = map->l_ld; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_VERSYM) {
			ElfW(Addr) a = d->d_un.d_ptr;

			/* ld.so normally relocated it in place already; be safe if not. */
			return (const Elf64_Half *)(a < map->l_addr ? a + map->l_addr : a);
		}
	}
	return NULL;
}

PRELOAD_API unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	*cookie = (uintptr_t)map;
	if (lmid != LM_ID_BASE)
		return 0;
	if (!preload_map && is_self(map->l_name)) {
		preload_map = map;
		return 0;
	}
	if (!verbs_map && is_libibverbs(map->l_name)) {
		verbs_map = map;
		verbs_versym = find_versym(map);
		return LA_FLG_BINDTO;
	}
	return 0;
}

PRELOAD_API unsigned int la_objclose(uintptr_t *cookie)
{
	if (verbs_map && *cookie == (uintptr_t)verbs_map) {
		verbs_map = NULL;
		verbs_versym = NULL;
	}
	return 0;
}

PRELOAD_API uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
				   unsigned int *flags, const char *symname)
{
	unsigned int i;

	(void)flags;
	/* Only bindings to libibverbs, never the preload's own lookups of the real verbs. */
	if (!preload_map || !verbs_map || *defcook != (uintptr_t)verbs_map || *refcook == (uintptr_t)preload_map)
		return sym->st_value;
	/* A hidden (non-default) version such as ibv_create_qp@IBVERBS_1.0 keeps its compat entry point. */
	if (!verbs_versym || (verbs_versym[ndx] & 0x8000))
		return sym->st_value;
	if (strncmp(symname, "ibv_", 4))
		return sym->st_value;
	for (i = 0; i < wrap_nsyms; i++)
		if (!strcmp(symname, wrap_syms[i].name))
			return preload_map->l_addr + ((uintptr_t)wrap_syms[i].addr - (uintptr_t)__ehdr_start);
	return sym->st_value;
}
