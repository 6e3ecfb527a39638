/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output: JSON documents through json-c, honouring -p; one object per line for streams. */
#ifndef RDMACTL_OUT_H
#define RDMACTL_OUT_H

#include <stdbool.h>
#include <json-c/json.h>

extern bool out_pretty;

/* Print obj as one JSON document on stdout (pretty with -p, else one line), flush, release obj. */
void out_json(struct json_object *obj);

#endif
