// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: lib/nlmon's device-notification and SYS_GET reply parsers over arbitrary buffers. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nl/nlmon.h"

static volatile size_t sink;

static int on_event(const struct nlmon_event *e, void *arg)
{
	const char *name = nlmon_type_name(e->type);

	(void)arg;
	/* strings are always terminated within their fields */
	if (!memchr(e->dev_name, 0, sizeof(e->dev_name)) || !memchr(e->ndev_name, 0, sizeof(e->ndev_name)))
		__builtin_trap();
	sink += strlen(e->dev_name) + strlen(e->ndev_name) + e->dev_index + e->port + e->ndev_index +
		(name ? strlen(name) : 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int ret = nlmon_parse(data, size, on_event, NULL), sys;

	sys = nlmon_parse_sys(data, size);
	/* the contract: a count or a negative errno; SYS_GET: 0, 1 or a negative errno */
	if (ret < -4095 || sys > 1 || sys < -4095)
		__builtin_trap();
	return 0;
}
