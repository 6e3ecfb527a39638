// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the ibv_rc_pingpong address message parser (what a peer sends over TCP) and gid_parse. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pingpong/gid.h"
#include "pingpong/pp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pp_dest d, back;
	char msg[PP_MSG_LEN], *s;
	uint8_t raw[16];

	/* The server reads at most PP_MSG_LEN bytes into a buffer of that size: parse exactly that. */
	if (!pp_wire_parse((const char *)data, size < PP_MSG_LEN ? size : PP_MSG_LEN, &d)) {
		/* Whatever parses must format and parse back to the same fields (masked to their widths). */
		pp_wire_format(&d, msg);
		if (pp_wire_parse(msg, sizeof(msg), &back) || back.lid != (d.lid & 0xffff) ||
		    back.qpn != (d.qpn & 0xffffff) || back.psn != (d.psn & 0xffffff) || memcmp(back.gid, d.gid, 16))
			abort();
	}
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	gid_parse(s, raw);
	free(s);
	return 0;
}
