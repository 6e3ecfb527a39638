// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: lib/nl's reply parser over arbitrary buffers (seeds: real replies from the lab). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nl/nl.h"

static volatile size_t sink;

static int on_dev(const struct nl_dev *d, void *arg)
{
	(void)arg;
	sink += strlen(d->name) + strlen(d->fw) + strlen(d->protocol) + d->nports;
	return 0;
}

static int on_port(const struct nl_port *p, void *arg)
{
	(void)arg;
	sink += strlen(p->dev_name) + strlen(p->netdev) + p->state + strlen(nl_port_state_name(p->state));
	return 0;
}

static int on_summary(const struct nl_summary *s, void *arg)
{
	int t;

	(void)arg;
	for (t = 0; t < NL_RES_NTYPES; t++)
		sink += s->curr[t];
	sink += strlen(s->dev_name);
	return 0;
}

static int on_res(const struct nl_res *r, void *arg)
{
	(void)arg;
	sink += strlen(r->dev_name) + r->id + r->pid + r->mrlen + strlen(nl_res_name(r->type));
	if (r->kern_name)
		sink += strlen(r->kern_name);
	sink += r->qp_type + strlen(nl_qp_state_name(r->state));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nl_handlers h = { .dev = on_dev, .port = on_port, .summary = on_summary, .res = on_res };
	int ret;

	ret = nl_parse(data, size, &h);
	/* The contract: 0, 1 or a negative errno, and a terminated ext-ack string. */
	if (ret > 1 || ret < -4095 || memchr(h.ext_ack, '\0', sizeof(h.ext_ack)) == NULL)
		__builtin_trap();
	return 0;
}
