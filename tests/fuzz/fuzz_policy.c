// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer harness: the node policy parser and the limit lists (hook arguments) on any bytes. What it
 * accepts holds the policy's own rules: every budget named once with a good name, nothing above the ceiling,
 * and a limit list it formats parses back to the same limits.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engines/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy p;
	struct policy_limits l, back;
	uint64_t out[LEDGER_NKINDS];
	char err[256], text[512], buf[1024];
	unsigned int i, j;

	if (policy_parse((const char *)data, size, &p, err, sizeof(err))) {
		if (!err[0])
			abort(); /* every refusal says why */
	} else {
		if (p.nbudgets > POLICY_MAX_BUDGETS)
			abort();
		for (i = 0; i < p.nbudgets; i++) {
			if (!policy_name_ok(p.budget[i].name) || !p.budget[i].lim.set ||
			    policy_above_ceiling(&p, &p.budget[i].lim) >= 0)
				abort();
			for (j = 0; j < i; j++)
				if (!strcmp(p.budget[i].name, p.budget[j].name))
					abort();
		}
		if (p.has_default && policy_above_ceiling(&p, &p.dflt) >= 0)
			abort();
		memset(&l, 0, sizeof(l));
		policy_resolve(&p, &l, out);
		for (i = 0; i < LEDGER_NKINDS; i++)
			if (policy_has(&p.ceiling, i) && out[i] > p.ceiling.v[i])
				abort();
	}
	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (policy_limits_parse(text, &l, err, sizeof(err))) {
		if (!err[0])
			abort();
		return 0;
	}
	policy_limits_format(&l, buf, sizeof(buf));
	if (policy_limits_parse(buf, &back, err, sizeof(err)) || back.set != l.set ||
	    memcmp(back.v, l.v, sizeof(l.v)))
		abort();
	return 0;
}
