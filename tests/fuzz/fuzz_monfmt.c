// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: lib/monfmt's hand-written event JSON must equal json-c's, for any event bytes. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "monfmt.h"

/*
 * Input: 8 bytes of CLOCK_REALTIME ns, a struct mon_event, then the device name the monitor would give
 * it (up to MON_DEV_LEN - 1 bytes, cut at the first NUL). Short inputs are zero-padded.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char fast[MON_JSON_LEN];
	struct json_object *j;
	struct mon_event e;
	char dev[MON_DEV_LEN] = "";
	uint64_t rt = 0;
	size_t head = sizeof(rt) + sizeof(e);
	const char *ref;
	int n;

	memset(&e, 0, sizeof(e));
	memcpy(&rt, data, size < sizeof(rt) ? size : sizeof(rt));
	if (size > sizeof(rt))
		memcpy(&e, data + sizeof(rt), size - sizeof(rt) < sizeof(e) ? size - sizeof(rt) : sizeof(e));
	if (size > head)
		memcpy(dev, data + head, size - head < sizeof(dev) - 1 ? size - head : sizeof(dev) - 1);
	n = mon_event_json(&e, dev, rt, fast, sizeof(fast));
	j = mon_event_json_object(&e, dev, rt);
	ref = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (n < 0 || (size_t)n != strlen(ref) || memcmp(fast, ref, n))
		__builtin_trap();
	/* and a buffer one byte short fails without writing past it */
	if (mon_event_json(&e, dev, rt, fast, n) != -ENOSPC)
		__builtin_trap();
	json_object_put(j);
	return 0;
}
