// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Prometheus text exposition format (0.0.4): families, samples, escaping, into a growing buffer. */
#include "export/prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prom_buf_free(struct prom_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void prom_buf_reset(struct prom_buf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->data)
		b->data[0] = '\0';
}

static bool grow(struct prom_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 16384;
	while (cap < b->len + n + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

static void put(struct prom_buf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void puts_(struct prom_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

static void escape(struct prom_buf *b, const char *value, bool quote)
{
	const unsigned char *s = (const unsigned char *)value;
	size_t n = strlen(value), i = 0, run = 0, k;

	while (i < n) {
		unsigned char c = s[i];

		if (c == '\\' || c == '\n' || (quote && c == '"')) {
			put(b, (const char *)s + run, i - run);
			puts_(b, c == '\\' ? "\\\\" : c == '\n' ? "\\n" : "\\\"");
			run = ++i;
			continue;
		}
		k = utf8_len(s + i, n - i);
		if (!k) {
			put(b, (const char *)s + run, i - run);
			puts_(b, "\xef\xbf\xbd"); /* U+FFFD */
			run = ++i;
			continue;
		}
		i += k;
	}
	put(b, (const char *)s + run, n - run);
}

void prom_escape_value(struct prom_buf *b, const char *value)
{
	escape(b, value, true);
}

void prom_family(struct prom_buf *b, const char *name, enum prom_type type, const char *help)
{
	static const char *const types[] = { [PROM_GAUGE] = "gauge", [PROM_COUNTER] = "counter",
					     [PROM_UNTYPED] = "untyped" };

	puts_(b, "# HELP ");
	puts_(b, name);
	puts_(b, " ");
	escape(b, help, false);
	puts_(b, "\n# TYPE ");
	puts_(b, name);
	puts_(b, " ");
	puts_(b, types[type <= PROM_UNTYPED ? type : PROM_UNTYPED]);
	puts_(b, "\n");
}

static void series(struct prom_buf *b, const char *name, const struct prom_label *l, size_t n)
{
	bool first = true;
	size_t i;

	puts_(b, name);
	for (i = 0; i < n; i++) {
		if (!l[i].value || !l[i].value[0])
			continue;
		puts_(b, first ? "{" : ",");
		first = false;
		puts_(b, l[i].name);
		puts_(b, "=\"");
		escape(b, l[i].value, true);
		puts_(b, "\"");
	}
	if (!first)
		puts_(b, "}");
}

void prom_sample_u64(struct prom_buf *b, const char *name, const struct prom_label *l, size_t n, uint64_t v)
{
	char num[32];

	series(b, name, l, n);
	snprintf(num, sizeof(num), " %" PRIu64 "\n", v);
	puts_(b, num);
}

void prom_sample_f64(struct prom_buf *b, const char *name, const struct prom_label *l, size_t n, double v)
{
	char num[40];

	series(b, name, l, n);
	if (isnan(v))
		snprintf(num, sizeof(num), " NaN\n");
	else if (isinf(v))
		snprintf(num, sizeof(num), " %cInf\n", v > 0 ? '+' : '-');
	else
		snprintf(num, sizeof(num), " %.17g\n", v);
	puts_(b, num);
}

bool prom_name_ok(const char *name, bool label)
{
	const char *p;

	if (!name || !*name || (label && !strncmp(name, "__", 2)))
		return false;
	for (p = name; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || (!label && *p == ':');

		if (!alpha && !(p > name && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}
