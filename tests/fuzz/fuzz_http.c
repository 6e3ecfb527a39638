// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the HTTP request parser of rdmactl export (whatever a network client sends). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct http_req r, again;
	int st;

	st = http_parse(buf, size, &r);
	if (st != HTTP_MORE && st != 200 && st != 400 && st != 414 && st != 431 && st != 505)
		abort();
	if (st != 200)
		return 0;
	/* a whole head: inside the buffer and the cap, its parts inside it */
	if (!r.head_len || r.head_len > size || r.head_len > HTTP_MAX_HEAD || r.nheaders > HTTP_MAX_HEADERS)
		abort();
	if (r.method < buf || r.method + r.method_len > buf + r.head_len || !r.method_len)
		abort();
	if (!r.path_len || (r.path[0] != '/' && r.path[0] != '*') ||
	    ((r.path < buf || r.path + r.path_len > buf + r.head_len) && strcmp(r.path, "/")))
		abort();
	if (r.minor != 0 && r.minor != 1)
		abort();
	/* the head alone parses the same, and any shorter piece of it only asks for more */
	if (http_parse(buf, r.head_len, &again) != 200 || again.head_len != r.head_len ||
	    again.nheaders != r.nheaders || again.path_len != r.path_len)
		abort();
	if (http_parse(buf, r.head_len - 1, &again) != HTTP_MORE || http_parse(buf, r.head_len / 2, &again) != HTTP_MORE)
		abort();
	return 0;
}
