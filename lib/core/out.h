/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Output: one code path for text and JSON (print_*(PRINT_ANY, key, fmt, value)), one streaming JSON writer. */
#ifndef RDMACTL_OUT_H
#define RDMACTL_OUT_H

/*
 * Commands print through these calls only; data code returns structs. Each value names its JSON key and its
 * text format once:
 *   print_uint(PRINT_ANY, "lqpn", "lqpn %" PRIu64 " ", qpn);
 * With -j the key and value go to the JSON writer, else fmt is printed (fmt NULL: nothing in text).
 * PRINT_FP prints only in text, PRINT_JSON only in JSON. Objects and arrays exist in JSON only: in text,
 * out_open_*() and out_close_*() print nothing.
 *
 * The writer streams: it appends to a buffer as values come and writes a document out when its outermost
 * object or array closes, followed by a newline and a flush, so a stream (monitor, top -b) is one document a
 * line and an interrupted run never leaves half a document on stdout. Keys are snake_case. Strings are
 * escaped as json-c escapes them (control characters, '"' and '\'; '/' and bytes >= 0x7f as they are), and
 * -p prints json-c's pretty layout: the output is byte for byte what the json-c trees printed before.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum out_type {
	PRINT_FP = 1,	/* text only */
	PRINT_JSON = 2, /* JSON only */
	PRINT_ANY = 3,	/* both */
};

/* From the global options: JSON or text, pretty JSON; documents go to f (stdout when NULL). */
void out_init(FILE *f, bool json, bool pretty);
bool out_is_json(void);
bool out_is_pretty(void);

/* key: the member's name inside an object, NULL inside an array or for the outermost one. */
void out_open_object(const char *key);
void out_close_object(void);
void out_open_array(const char *key);
void out_close_array(void);
/* Depth of open objects and arrays (0: between documents). */
int out_depth(void);

void print_string(enum out_type t, const char *key, const char *fmt, const char *v); /* v NULL: null */
/* A string of at most n bytes that need not be terminated (a kernel comm, a fixed field). */
void print_strn(enum out_type t, const char *key, const char *fmt, const char *v, size_t n);
void print_uint(enum out_type t, const char *key, const char *fmt, uint64_t v);
void print_int(enum out_type t, const char *key, const char *fmt, int64_t v);
void print_bool(enum out_type t, const char *key, const char *fmt, bool v);
/* A number with a fixed count of decimals (JSON "%.*f"); fmt gets the double. */
void print_fixed(enum out_type t, const char *key, const char *fmt, double v, int decimals);
/* A number as json-c printed a double: "%.17g", with ".0" added to a whole number. fmt gets the double. */
void print_double(enum out_type t, const char *key, const char *fmt, double v);
void print_null(enum out_type t, const char *key, const char *fmt);
/* Text only: printf; nothing with -j. */
void print_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Text only: a newline. */
void print_nl(void);

/*
 * Batched streams (monitor's events come in bursts): a finished document is not flushed on its own; the
 * caller flushes with out_flush() after a burst, always at a document boundary.
 */
void out_set_batched(bool batched);
void out_flush(void);

/*
 * Drop a document that was begun but not finished (an error in the middle of it): nothing of it is written.
 * The next out_open_*() begins a new document.
 */
void out_discard(void);

#endif
