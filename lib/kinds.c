// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Mappings between the layers' kind enums, generated from the table in kinds.h. */
#include "kinds.h"
#include "ledger.h"
#include "nl.h"

const signed char kind_ledger_of_nl[NL_RES_NTYPES] = {
#define X(name, NAME, led, nl, ...) KINDS_IF(nl, [NL_RES_##NAME] = KINDS_SEL(led, LEDGER_##NAME, -1), )
	KINDS(X)
#undef X
};

const signed char kind_nl_of_restrack[RESTRACK_NTYPES] = {
#define X(name, NAME, led, nl, rt, ...) KINDS_IF(rt, [RESTRACK_##NAME] = KINDS_SEL(nl, NL_RES_##NAME, -1), )
	KINDS(X)
#undef X
};

#define X(name, NAME, led, nl, rt, rtv, cg, ...) [KIND_##NAME] = KIND_CG_##cg,
const unsigned char kind_rdmacg[KIND_NR] = { KINDS(X) };
#undef X
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) [KIND_##NAME] = opt,
const char *const kind_opt[KIND_NR] = { KINDS(X) };
#undef X
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) [KIND_##NAME] = help,
const char *const kind_help[KIND_NR] = { KINDS(X) };
#undef X

#define X(name, NAME, led, ...) KINDS_IF(led, _Static_assert((int)LEDGER_##NAME == (int)KIND_##NAME, #name);)
KINDS(X)
#undef X
