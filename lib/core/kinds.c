// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Mappings between the layers' kind enums, generated from the table in kinds.h. */
#include "core/kinds.h"

#define X(name, NAME, led, nl, rt, rtv, cg, ...) [KIND_##NAME] = KIND_CG_##cg,
const unsigned char kind_rdmacg[KIND_NR] = { KINDS(X) };
#undef X
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) [KIND_##NAME] = opt,
const char *const kind_opt[KIND_NR] = { KINDS(X) };
#undef X
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) [KIND_##NAME] = help,
const char *const kind_help[KIND_NR] = { KINDS(X) };
#undef X
