// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Mappings between the layers' kind enums, generated from the table in kinds.h. */
#include "core/kinds.h"

#include <string.h>

#include "core/util.h"

#define X(name, NAME, ...) [KIND_##NAME] = #name,
const char *const kind_names[KIND_NR] = { KINDS(X) };
#undef X

#define X(name, NAME, led, nl, rt, rtv, cg, ...) [KIND_##NAME] = KIND_CG_##cg,
const unsigned char kind_rdmacg[KIND_NR] = { KINDS(X) };
#undef X
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) [KIND_##NAME] = opt,
const char *const kind_opt[KIND_NR] = { KINDS(X) };
#undef X
#define X(name, NAME, led, nl, rt, rtv, cg, unit, uverbs, opt, help) [KIND_##NAME] = help,
const char *const kind_help[KIND_NR] = { KINDS(X) };
#undef X

/* A character of a kind's word as the table spells names: '-' is '_'. */
static char kind_char(char c)
{
	return c == '-' ? '_' : c;
}

int kind_lookup(const char *word, size_t len, int n)
{
	size_t i;
	int k;

	for (k = 0; k < n && k < KIND_NR; k++) {
		if (strlen(kind_names[k]) != len)
			continue;
		for (i = 0; i < len && kind_char(word[i]) == kind_names[k][i]; i++)
			;
		if (i == len)
			return k;
	}
	return -1;
}

int kind_match_word(const char *word, const char *const *names, int n)
{
	char w[64];
	size_t i;

	for (i = 0; word[i] && i < sizeof(w) - 1; i++)
		w[i] = kind_char(word[i]);
	w[i] = '\0';
	return word[i] ? -1 : match_word(w, names, n);
}
