// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor's event formatting: names, ISO times, JSON lines (hand-written fast path + json-c). */
#include "monfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

/* A type name that is never NULL (json-c cannot take NULL; the BPF side never sends an unknown type). */
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

/* --- the hand-written writer: append to [p, end); overflow leaves p past end ------------------------ */

struct jbuf {
	char *p, *end;
};

static void put(struct jbuf *b, const char *s, size_t n)
{
	if ((size_t)(b->end - b->p) < n) {
		b->p = b->end + 1;
		return;
	}
	memcpy(b->p, s, n);
	b->p += n;
}

#define PUT_LIT(b, s) put(b, s, sizeof(s) - 1)

static void put_u64(struct jbuf *b, uint64_t v)
{
	char tmp[20];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(b, tmp + i, sizeof(tmp) - i);
}

static void put_i64(struct jbuf *b, int64_t v)
{
	if (v < 0) {
		PUT_LIT(b, "-");
		put_u64(b, 0 - (uint64_t)v);
	} else {
		put_u64(b, (uint64_t)v);
	}
}

/* A quoted string escaped the way json-c escapes (with JSON_C_TO_STRING_NOSLASHESCAPE). */
static void put_str(struct jbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, start = 0;
	char esc[6];

	PUT_LIT(b, "\"");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t el = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(b, s + start, i - start);
		start = i + 1;
		esc[0] = '\\';
		switch (c) {
		case '\b': esc[1] = 'b'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		case '\f': esc[1] = 'f'; break;
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			el = 6;
		}
		put(b, esc, el);
	}
	put(b, s + start, n - start);
	PUT_LIT(b, "\"");
}

static void put_cstr(struct jbuf *b, const char *s)
{
	put_str(b, s, strlen(s));
}

int mon_event_json(const struct mon_event *e, const char *dev, uint64_t rt_ns, char *buf, size_t len)
{
	struct jbuf b = { buf, buf + len };
	char tbuf[MON_TIME_LEN];

	PUT_LIT(&b, "{\"time\":");
	put_cstr(&b, mon_time_iso(rt_ns, tbuf, sizeof(tbuf)));
	PUT_LIT(&b, ",\"time_ns\":");
	put_u64(&b, rt_ns);
	PUT_LIT(&b, ",\"event\":");
	put_cstr(&b, mon_op_name(e->op));
	PUT_LIT(&b, ",\"type\":");
	put_cstr(&b, type_str(e->type));
	PUT_LIT(&b, ",\"pid\":");
	put_i64(&b, (int)e->tgid);
	PUT_LIT(&b, ",\"tid\":");
	put_i64(&b, (int)e->tid);
	PUT_LIT(&b, ",\"comm\":");
	put_str(&b, e->comm, strnlen(e->comm, MON_COMM_LEN));
	if (e->user)
		PUT_LIT(&b, ",\"user\":true,\"dev\":");
	else
		PUT_LIT(&b, ",\"user\":false,\"dev\":");
	put_cstr(&b, dev);
	PUT_LIT(&b, ",\"dev_index\":");
	put_i64(&b, (int)e->dev_index);
	PUT_LIT(&b, ",\"id\":");
	put_u64(&b, e->id);
	if (e->type == RESTRACK_MR) {
		PUT_LIT(&b, ",\"mr_len\":");
		put_u64(&b, e->mr_len);
	}
	PUT_LIT(&b, ",\"context_pid\":");
	put_i64(&b, (int)e->cur_tgid);
	PUT_LIT(&b, ",\"hook\":");
	put_cstr(&b, mon_hook_name(e->hook));
	PUT_LIT(&b, "}");
	if (b.p >= b.end) /* no room left for the terminating NUL either */
		return -ENOSPC;
	*b.p = 0;
	return (int)(b.p - buf);
}

struct json_object *mon_event_json_object(const struct mon_event *e, const char *dev, uint64_t rt_ns)
{
	struct json_object *j = json_object_new_object();
	char tbuf[MON_TIME_LEN];

	json_object_object_add(j, "time", json_object_new_string(mon_time_iso(rt_ns, tbuf, sizeof(tbuf))));
	json_object_object_add(j, "time_ns", json_object_new_uint64(rt_ns));
	json_object_object_add(j, "event", json_object_new_string(mon_op_name(e->op)));
	json_object_object_add(j, "type", json_object_new_string(type_str(e->type)));
	json_object_object_add(j, "pid", json_object_new_int((int)e->tgid));
	json_object_object_add(j, "tid", json_object_new_int((int)e->tid));
	json_object_object_add(j, "comm", json_object_new_string_len(e->comm, (int)strnlen(e->comm, MON_COMM_LEN)));
	json_object_object_add(j, "user", json_object_new_boolean(e->user));
	json_object_object_add(j, "dev", json_object_new_string(dev));
	json_object_object_add(j, "dev_index", json_object_new_int((int)e->dev_index));
	json_object_object_add(j, "id", json_object_new_int64(e->id));
	if (e->type == RESTRACK_MR)
		json_object_object_add(j, "mr_len", json_object_new_uint64(e->mr_len));
	json_object_object_add(j, "context_pid", json_object_new_int((int)e->cur_tgid));
	json_object_object_add(j, "hook", json_object_new_string(mon_hook_name(e->hook)));
	return j;
}
