// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/kinds: every layer's kinds agree with the one table. */
#include <string.h>

#include "core/kinds.h"
#include "ledger/ledger.h"
#include "monitor/monfmt.h"
#include "nl/nl.h"
#include "unit.h"

static const char *const names[KIND_NR] = {
#define X(name, ...) #name,
	KINDS(X)
#undef X
};

/* The ledger kind of that name, -1 if none. */
static int ledger_by_name(const char *nm)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		if (!strcmp(ledger_kind_names[k], nm))
			return k;
	return -1;
}

/* Each layer's name of a kind is the table's, and the layers map onto each other by name. */
static void test_layers_agree(void)
{
	int k, n;

	for (k = 0, n = 0; k < KIND_NR; k++)
		if (ledger_kind_name((enum ledger_kind)k) && !strcmp(ledger_kind_name((enum ledger_kind)k), names[k]))
			n++;
	CHECK(n == LEDGER_NKINDS, "ledger kinds are the first %d rows, in order (%d matched)", LEDGER_NKINDS, n);
	CHECK(!ledger_kind_name(LEDGER_NKINDS) && !ledger_kind_names[LEDGER_NKINDS], "ledger names end");
	CHECK(LEDGER_NKINDS == 12 && LEDGER_WR == 11 && LEDGER_MR_BYTES == 6,
	      "the ledger file's counter order is unchanged (format)");
	for (n = 0; n < NL_RES_NTYPES; n++) {
		const char *nm = nl_res_name((enum nl_res_type)n);
		int l = kind_ledger_of_nl[n];

		CHECK(nm && nl_res_from_name(nm) == n, "netlink kind %d has a name", n);
		CHECK(nm && l == ledger_by_name(nm),
		      "netlink %s maps to the ledger kind of that name (%d)", nm, l);
	}
	CHECK(!nl_res_name(NL_RES_NTYPES), "netlink names end");
	for (n = 0; n < RESTRACK_NTYPES; n++) {
		const char *nm = mon_type_name(n);
		int t = kind_nl_of_restrack[n];

		CHECK(nm != NULL, "restrack type %d has a name", n);
		CHECK(t < 0 ? nl_res_from_name(nm) < 0 : !strcmp(nl_res_name((enum nl_res_type)t), nm),
		      "restrack %s maps to the netlink kind of that name", nm);
	}
	CHECK(!mon_type_name(RESTRACK_NTYPES), "restrack names end");
}

/* The kernel's values (include/rdma/restrack.h) and the rdma cgroup's split, as the table states them. */
/* issue 51: one spelling rule, '_' and '-' alike, for every kind with an underscore */
static void test_spelling(void)
{
	static const char *const names[] = { "mr", "mr_bytes", "mw", "cm_id", NULL };
	int k;

	CHECK(kind_lookup("mr_bytes", 8, LEDGER_NKINDS) == LEDGER_MR_BYTES &&
		      kind_lookup("mr-bytes", 8, LEDGER_NKINDS) == LEDGER_MR_BYTES, "mr_bytes, mr-bytes");
	CHECK(kind_lookup("mr_bytesx", 8, LEDGER_NKINDS) == LEDGER_MR_BYTES, "len bounds the word");
	CHECK(kind_lookup("cm-id", 5, KIND_NR) == KIND_CM_ID && kind_lookup("cm-id", 5, LEDGER_NKINDS) == -1,
	      "cm-id, a kind past the ledger's");
	CHECK(kind_lookup("mr=bytes", 8, LEDGER_NKINDS) == -1 && kind_lookup("mr", 1, LEDGER_NKINDS) == -1 &&
		      kind_lookup("", 0, LEDGER_NKINDS) == -1,
	      "no other character, no prefix");
	for (k = 0; k < KIND_NR; k++) {
		char w[32];
		size_t i;

		for (i = 0; kind_names[k][i]; i++)
			w[i] = kind_names[k][i] == '_' ? '-' : kind_names[k][i];
		CHECK(kind_lookup(kind_names[k], i, KIND_NR) == k && kind_lookup(w, i, KIND_NR) == k &&
			      kind_lookup(kind_opt[k], strlen(kind_opt[k]), KIND_NR) == k,
		      "%s: both spellings and the option name", kind_names[k]);
	}
	CHECK(kind_match_word("mr-bytes", names, -1) == 1 && kind_match_word("mr-b", names, -1) == 1 &&
		      kind_match_word("cm-", names, -1) == 3 && kind_match_word("mr", names, -1) == 0 &&
		      kind_match_word("m", names, -1) == -2 && kind_match_word("mr+", names, -1) == -1,
	      "kind_match_word: exact, prefix, ambiguous, unknown");
}

static void test_kernel_values(void)
{
	CHECK(RESTRACK_PD == 0 && RESTRACK_CQ == 1 && RESTRACK_QP == 2 && RESTRACK_CM_ID == 3 && RESTRACK_MR == 4 &&
		      RESTRACK_CTX == 5 && RESTRACK_COUNTER == 6 && RESTRACK_SRQ == 7,
	      "enum rdma_restrack_type");
	CHECK(kind_rdmacg[KIND_CTX] == KIND_CG_H && kind_rdmacg[KIND_QP] == KIND_CG_O &&
		      kind_rdmacg[KIND_MR_BYTES] == KIND_CG_N && kind_rdmacg[KIND_WR] == KIND_CG_N,
	      "hca_handle and hca_object");
	CHECK(!strcmp(kind_opt[KIND_MR_BYTES], "mr-bytes") && !strcmp(kind_opt[KIND_QP], "qp"), "option names");
}

int main(void)
{
	RUN(test_layers_agree);
	RUN(test_kernel_values);
	RUN(test_spelling);
	return unit_done();
}
