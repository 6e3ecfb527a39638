// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: a monitor event through the output layer is the JSON json-c would print, for any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "monitor/monfmt.h"
#include "core/out.h"

/*
 * Input: 8 bytes of CLOCK_REALTIME ns, a struct mon_event, then the device name the monitor would give
 * it (up to MON_DEV_LEN - 1 bytes, cut at the first NUL). Short inputs are zero-padded. The output must
 * parse, and every field must read back as it went in.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *j, *v;
	struct mon_event e;
	char dev[MON_DEV_LEN] = "";
	uint64_t rt = 0;
	size_t head = sizeof(rt) + sizeof(e), len = 0;
	char *mem = NULL;
	FILE *f;

	memset(&e, 0, sizeof(e));
	memcpy(&rt, data, size < sizeof(rt) ? size : sizeof(rt));
	if (size > sizeof(rt))
		memcpy(&e, data + sizeof(rt), size - sizeof(rt) < sizeof(e) ? size - sizeof(rt) : sizeof(e));
	if (size > head)
		memcpy(dev, data + head, size - head < sizeof(dev) - 1 ? size - head : sizeof(dev) - 1);
	f = open_memstream(&mem, &len);
	out_init(f, true, rt & 1);
	mon_event_print(&e, dev, rt, false);
	fclose(f);
	j = json_tokener_parse(mem);
	if (!j || !json_object_is_type(j, json_type_object))
		__builtin_trap();
	if (!json_object_object_get_ex(j, "dev", &v) || strcmp(json_object_get_string(v), dev))
		__builtin_trap();
	if (!json_object_object_get_ex(j, "comm", &v) ||
	    strncmp(json_object_get_string(v), e.comm, MON_COMM_LEN) ||
	    strlen(json_object_get_string(v)) != strnlen(e.comm, MON_COMM_LEN))
		__builtin_trap();
	if (!json_object_object_get_ex(j, "time_ns", &v) || json_object_get_uint64(v) != rt)
		__builtin_trap();
	if (!json_object_object_get_ex(j, "id", &v) || json_object_get_int64(v) != e.id)
		__builtin_trap();
	if (json_object_object_get_ex(j, "mr_len", &v) != (e.type == RESTRACK_MR))
		__builtin_trap();
	json_object_put(j);
	free(mem);
	return 0;
}
