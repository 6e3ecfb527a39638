// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Output: JSON documents through json-c, honouring -p; one object per line for streams. */
#include "out.h"

#include <stdio.h>

bool out_pretty;

void out_json(struct json_object *obj)
{
	int flags = out_pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;

	fputs(json_object_to_json_string_ext(obj, flags | JSON_C_TO_STRING_NOSLASHESCAPE), stdout);
	fputc('\n', stdout);
	fflush(stdout);
	json_object_put(obj);
}
