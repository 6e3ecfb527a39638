// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Output: one code path for text and JSON (print_*(PRINT_ANY, key, fmt, value)), one streaming JSON writer. */
#include "core/out.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX_DEPTH 32

static struct {
	FILE *f;
	bool json, pretty;
	bool batched; /* no flush at the end of each document */
	/* the document being written */
	char *buf;
	size_t len, cap;
	bool oom; /* the buffer could not grow: the document is dropped when it ends */
	int depth;
	struct {
		bool array;
		unsigned int n; /* members so far */
	} stack[OUT_MAX_DEPTH];
	int overflow; /* opens past OUT_MAX_DEPTH, not written */
} w;

static FILE *out_file(void)
{
	return w.f ? w.f : stdout;
}

void out_init(FILE *f, bool json, bool pretty)
{
	w.f = f;
	w.json = json;
	w.pretty = pretty;
	w.len = 0;
	w.depth = 0;
	w.overflow = 0;
	w.oom = false;
}

bool out_is_json(void)
{
	return w.json;
}

bool out_is_pretty(void)
{
	return w.pretty;
}

int out_depth(void)
{
	return w.depth + w.overflow;
}

/* --- the buffer ---------------------------------------------------------------------------------- */

static bool reserve(size_t n)
{
	size_t cap;
	char *p;

	if (w.oom)
		return false;
	if (w.len + n <= w.cap)
		return true;
	cap = w.cap ? w.cap : 4096;
	while (cap < w.len + n)
		cap *= 2;
	p = realloc(w.buf, cap);
	if (!p) {
		w.oom = true;
		return false;
	}
	w.buf = p;
	w.cap = cap;
	return true;
}

static void put(const char *s, size_t n)
{
	if (!reserve(n))
		return;
	memcpy(w.buf + w.len, s, n);
	w.len += n;
}

#define PUT_LIT(s) put(s, sizeof(s) - 1)

static void put_u64(uint64_t v)
{
	char tmp[20];
	int i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(tmp + i, sizeof(tmp) - i);
}

static void put_i64(int64_t v)
{
	if (v < 0) {
		PUT_LIT("-");
		put_u64(0 - (uint64_t)v);
	} else {
		put_u64((uint64_t)v);
	}
}

/* A quoted string escaped the way json-c escapes (JSON_C_TO_STRING_NOSLASHESCAPE). */
static void put_str(const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, start = 0;
	char esc[6];

	PUT_LIT("\"");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t el = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(s + start, i - start);
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
		put(esc, el);
	}
	put(s + start, n - start);
	PUT_LIT("\"");
}

static void put_indent(int depth)
{
	static const char spaces[] = "                                                                ";
	size_t n = (size_t)depth * 2;

	PUT_LIT("\n");
	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;

		put(spaces, k);
		n -= k;
	}
}

/* What comes before a value: the separator, the pretty layout's line break, the key inside an object. */
static void begin_value(const char *key)
{
	if (w.depth) {
		if (w.stack[w.depth - 1].n++)
			PUT_LIT(",");
		if (w.pretty)
			put_indent(w.depth);
		if (!w.stack[w.depth - 1].array) {
			put_str(key ? key : "", key ? strlen(key) : 0);
			if (w.pretty)
				PUT_LIT(": ");
			else
				PUT_LIT(":");
		}
	} else {
		w.len = 0;
		w.oom = false;
	}
}

/* The outermost object or array closed: the document goes out in one write, a line of its own. */
static void end_document(void)
{
	FILE *f = out_file();

	PUT_LIT("\n");
	if (!w.oom)
		fwrite(w.buf, 1, w.len, f);
	else
		fputs("{\"error\":\"out of memory\"}\n", f);
	if (!w.batched)
		fflush(f);
	w.len = 0;
	w.oom = false;
}

/* --- objects and arrays ------------------------------------------------------------------------------ */

static void open_container(const char *key, bool array)
{
	if (!w.json)
		return;
	if (w.depth == OUT_MAX_DEPTH) {
		w.overflow++;
		return;
	}
	begin_value(key);
	put(array ? "[" : "{", 1);
	w.stack[w.depth].array = array;
	w.stack[w.depth].n = 0;
	w.depth++;
}

static void close_container(bool array)
{
	if (!w.json)
		return;
	if (w.overflow) {
		w.overflow--;
		return;
	}
	if (!w.depth)
		return;
	w.depth--;
	if (w.pretty)
		put_indent(w.depth);
	put(array ? "]" : "}", 1);
	if (!w.depth)
		end_document();
}

void out_open_object(const char *key)
{
	open_container(key, false);
}

void out_close_object(void)
{
	close_container(false);
}

void out_open_array(const char *key)
{
	open_container(key, true);
}

void out_close_array(void)
{
	close_container(true);
}

void out_set_batched(bool batched)
{
	w.batched = batched;
}

void out_flush(void)
{
	fflush(out_file());
}

void out_discard(void)
{
	w.depth = 0;
	w.overflow = 0;
	w.len = 0;
	w.oom = false;
}

/* --- values --------------------------------------------------------------------------------------- */

/* Does this value go to JSON (true), or to text? */
static bool to_json(enum out_type t)
{
	return w.json && (t & PRINT_JSON) && !w.overflow;
}

static bool to_text(enum out_type t, const char *fmt)
{
	return !w.json && (t & PRINT_FP) && fmt;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

void print_strn(enum out_type t, const char *key, const char *fmt, const char *v, size_t n)
{
	if (to_json(t)) {
		begin_value(key);
		if (v)
			put_str(v, strnlen(v, n));
		else
			PUT_LIT("null");
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v ? (int)strnlen(v, n) : 0, v ? v : "");
	}
}

void print_string(enum out_type t, const char *key, const char *fmt, const char *v)
{
	if (to_json(t)) {
		begin_value(key);
		if (v)
			put_str(v, strlen(v));
		else
			PUT_LIT("null");
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v ? v : "");
	}
}

void print_uint(enum out_type t, const char *key, const char *fmt, uint64_t v)
{
	if (to_json(t)) {
		begin_value(key);
		put_u64(v);
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v);
	}
}

void print_int(enum out_type t, const char *key, const char *fmt, int64_t v)
{
	if (to_json(t)) {
		begin_value(key);
		put_i64(v);
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v);
	}
}

void print_bool(enum out_type t, const char *key, const char *fmt, bool v)
{
	if (to_json(t)) {
		begin_value(key);
		if (v)
			PUT_LIT("true");
		else
			PUT_LIT("false");
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v ? "true" : "false");
	}
}

void print_fixed(enum out_type t, const char *key, const char *fmt, double v, int decimals)
{
	if (to_json(t)) {
		char tmp[64];
		int n;

		begin_value(key);
		/* JSON has no NaN or infinity */
		if (v != v || v > 1e300 || v < -1e300)
			v = 0;
		n = snprintf(tmp, sizeof(tmp), "%.*f", decimals < 0 ? 0 : decimals > 17 ? 17 : decimals, v);
		put(tmp, n > 0 && (size_t)n < sizeof(tmp) ? (size_t)n : 0);
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v);
	}
}

void print_double(enum out_type t, const char *key, const char *fmt, double v)
{
	if (to_json(t)) {
		char tmp[64];
		int n;

		begin_value(key);
		if (v != v || v > 1e300 || v < -1e300)
			v = 0;
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
		if (n <= 0 || (size_t)n >= sizeof(tmp) - 2)
			n = 0;
		else if (!strpbrk(tmp, ".eE"))
			n += snprintf(tmp + n, sizeof(tmp) - n, ".0");
		put(tmp, (size_t)n);
	} else if (to_text(t, fmt)) {
		fprintf(out_file(), fmt, v);
	}
}

void print_null(enum out_type t, const char *key, const char *fmt)
{
	if (to_json(t)) {
		begin_value(key);
		PUT_LIT("null");
	} else if (to_text(t, fmt)) {
		fputs(fmt, out_file());
	}
}

#pragma GCC diagnostic pop

void print_text(const char *fmt, ...)
{
	va_list ap;

	if (w.json)
		return;
	va_start(ap, fmt);
	vfprintf(out_file(), fmt, ap);
	va_end(ap);
}

void print_nl(void)
{
	if (!w.json)
		fputc('\n', out_file());
}
