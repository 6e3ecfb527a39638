// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor's event formatting: names, times, an event as text or JSON through the output layer. */
#include "monitor/monfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/out.h"
#include "core/util.h"

#define X(name, NAME, led, nl, rt, ...) KINDS_IF(rt, [RESTRACK_##NAME] = #name, )
/* Indexed by enum restrack_type; NULL-terminated. */
const char *const mon_type_names[RESTRACK_NTYPES + 1] = { KINDS(X) };
_Static_assert(sizeof((const char *[]){ KINDS(X) }) == RESTRACK_NTYPES * sizeof(char *),
	       "RESTRACK_NTYPES is one past the largest restrack value");
#undef X

const char *mon_type_name(unsigned int type)
{
	return type < RESTRACK_NTYPES ? mon_type_names[type] : NULL;
}

const char *mon_op_name(unsigned int op)
{
	return op == MON_OP_CREATE ? "create" : "destroy";
}

const char *mon_hook_name(unsigned int hook)
{
	static const char *const hooks[] = { "?", "add", "del", "commit_del" };

	return hooks[hook < 4 ? hook : 0];
}

/* A type name that is never NULL (the BPF side never sends an unknown type). */
static const char *type_str(unsigned int type)
{
	const char *s = mon_type_name(type);

	return s ? s : "?";
}

/* Events come in bursts within the same second: format the date and time once per second. */
static __thread struct {
	int64_t sec;
	char text[MON_TIME_LEN];
	size_t n;
} iso_cache = { .sec = -1 };

const char *mon_time_iso(uint64_t rt_ns, char *buf, size_t len)
{
	int64_t sec = (int64_t)(rt_ns / 1000000000ULL);
	uint32_t us = (uint32_t)(rt_ns % 1000000000ULL / 1000);
	struct tm tm;
	time_t t = (time_t)sec;
	int i;

	if (iso_cache.sec != sec) {
		gmtime_r(&t, &tm);
		iso_cache.n = strftime(iso_cache.text, sizeof(iso_cache.text) - 9, "%Y-%m-%dT%H:%M:%S", &tm);
		iso_cache.sec = sec;
	}
	if (len < iso_cache.n + 9) {
		if (len)
			buf[0] = 0;
		return buf;
	}
	memcpy(buf, iso_cache.text, iso_cache.n);
	buf[iso_cache.n] = '.';
	for (i = 6; i >= 1; i--, us /= 10)
		buf[iso_cache.n + i] = (char)('0' + us % 10);
	buf[iso_cache.n + 7] = 'Z';
	buf[iso_cache.n + 8] = 0;
	return buf;
}

const char *mon_time_text(uint64_t rt_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(rt_ns / 1000000000ULL);
	struct tm tm;
	size_t n;

	localtime_r(&sec, &tm);
	n = strftime(buf, len, "%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06" PRIu64, (uint64_t)(rt_ns % 1000000000ULL / 1000));
	return buf;
}

void mon_event_print(const struct mon_event *e, const char *dev, uint64_t rt_ns, bool verbose)
{
	char tbuf[MON_TIME_LEN], detail[128], sz[32];
	size_t n = 0;

	out_open_object(NULL);
	if (out_is_json()) {
		print_string(PRINT_JSON, "time", NULL, mon_time_iso(rt_ns, tbuf, sizeof(tbuf)));
		print_uint(PRINT_JSON, "time_ns", NULL, rt_ns);
		print_string(PRINT_JSON, "event", NULL, mon_op_name(e->op));
		print_string(PRINT_JSON, "type", NULL, type_str(e->type));
		print_int(PRINT_JSON, "pid", NULL, (int)e->tgid);
		print_int(PRINT_JSON, "tid", NULL, (int)e->tid);
		print_strn(PRINT_JSON, "comm", NULL, e->comm, MON_COMM_LEN);
		print_bool(PRINT_JSON, "user", NULL, e->user);
		print_string(PRINT_JSON, "dev", NULL, dev);
		print_int(PRINT_JSON, "dev_index", NULL, (int)e->dev_index);
		print_uint(PRINT_JSON, "id", NULL, e->id);
		if (e->type == RESTRACK_MR)
			print_uint(PRINT_JSON, "mr_len", NULL, e->mr_len);
		print_int(PRINT_JSON, "context_pid", NULL, (int)e->cur_tgid);
		print_string(PRINT_JSON, "hook", NULL, mon_hook_name(e->hook));
	} else {
		detail[0] = 0;
		if (!e->user)
			n = snprintf(detail, sizeof(detail), "kernel");
		else if (e->tid != e->tgid)
			n = snprintf(detail, sizeof(detail), "tid %u", e->tid);
		if (e->type == RESTRACK_MR)
			n += snprintf(detail + n, sizeof(detail) - n, "%slen %s", n ? " " : "",
				      fmt_size(e->mr_len, sz, sizeof(sz)));
		/* every part is short (numbers, a size, a hook's name): the line fits, but never write past it */
		if (n >= sizeof(detail))
			n = sizeof(detail) - 1;
		if (verbose)
			snprintf(detail + n, sizeof(detail) - n, "%shook %s ctx %u", n ? " " : "", mon_hook_name(e->hook),
				 e->cur_tgid);
		print_text("%-15s %7u %-15.15s %-8s %-7s %-8.8s %8u  %s\n", mon_time_text(rt_ns, tbuf, sizeof(tbuf)),
			   e->tgid, e->comm, mon_op_name(e->op), type_str(e->type), dev[0] ? dev : "-", e->id, detail);
	}
	out_close_object();
}
