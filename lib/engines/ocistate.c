// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A strict RFC 8259 parser for the OCI state document: id, status, pid, rdmactl.io/ annotations, the pod's identity. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engines/ocistate.h"

struct parser {
	const unsigned char *s;
	size_t n, i;
	int depth;
	char *err;
	size_t errlen;
};

/* A decoded string: into out[0..cap) when out is set; too long or with a NUL byte is noted, not an error. */
struct sbuf {
	char *out;
	size_t cap, len;
	bool trunc, nul;
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err && p->errlen) {
		n = snprintf(p->err, p->errlen, "at byte %zu: ", p->i);
		if (n >= 0 && (size_t)n < p->errlen) {
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errlen - n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

static void ws(struct parser *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
		p->i++;
}

static void put(struct sbuf *b, unsigned char c)
{
	if (!b || !b->out)
		return;
	if (!c)
		b->nul = true;
	if (b->len + 1 < b->cap)
		b->out[b->len++] = (char)c;
	else
		b->trunc = true;
	b->out[b->len < b->cap ? b->len : b->cap - 1] = '\0';
}

static void put_cp(struct sbuf *b, uint32_t cp)
{
	if (cp < 0x80) {
		put(b, cp);
	} else if (cp < 0x800) {
		put(b, 0xc0 | cp >> 6);
		put(b, 0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		put(b, 0xe0 | cp >> 12);
		put(b, 0x80 | (cp >> 6 & 0x3f));
		put(b, 0x80 | (cp & 0x3f));
	} else {
		put(b, 0xf0 | cp >> 18);
		put(b, 0x80 | (cp >> 12 & 0x3f));
		put(b, 0x80 | (cp >> 6 & 0x3f));
		put(b, 0x80 | (cp & 0x3f));
	}
}

static int hex4(struct parser *p, uint32_t *out)
{
	uint32_t v = 0;
	int k;

	if (p->n - p->i < 4)
		return fail(p, "truncated \\u escape");
	for (k = 0; k < 4; k++) {
		unsigned char c = p->s[p->i + k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return fail(p, "bad \\u escape");
	}
	p->i += 4;
	*out = v;
	return 0;
}

/* One UTF-8 sequence starting at p->i (its first byte >= 0x80): well formed, shortest form, no surrogates. */
static int utf8(struct parser *p, struct sbuf *b)
{
	unsigned char c = p->s[p->i];
	uint32_t cp, min;
	size_t k, len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07, min = 0x10000;
	else
		return fail(p, "invalid UTF-8");
	if (p->n - p->i < len)
		return fail(p, "truncated UTF-8");
	for (k = 1; k < len; k++) {
		unsigned char d = p->s[p->i + k];

		if ((d & 0xc0) != 0x80)
			return fail(p, "invalid UTF-8");
		cp = cp << 6 | (d & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail(p, "invalid UTF-8");
	for (k = 0; k < len; k++)
		put(b, p->s[p->i + k]);
	p->i += len;
	return 0;
}

/* A string at p->i (which must be '"'), decoded into b (NULL: only checked). */
static int string(struct parser *p, struct sbuf *b)
{
	uint32_t cp, lo;
	int ret;

	if (p->i >= p->n || p->s[p->i] != '"')
		return fail(p, "a string expected");
	p->i++;
	for (;;) {
		unsigned char c;

		if (p->i >= p->n)
			return fail(p, "unterminated string");
		c = p->s[p->i];
		if (c == '"') {
			p->i++;
			return 0;
		}
		if (c < 0x20)
			return fail(p, "control character in a string");
		if (c >= 0x80) {
			ret = utf8(p, b);
			if (ret)
				return ret;
			continue;
		}
		p->i++;
		if (c != '\\') {
			put(b, c);
			continue;
		}
		if (p->i >= p->n)
			return fail(p, "unterminated string");
		c = p->s[p->i++];
		switch (c) {
		case '"': case '\\': case '/': put(b, c); break;
		case 'b': put(b, '\b'); break;
		case 'f': put(b, '\f'); break;
		case 'n': put(b, '\n'); break;
		case 'r': put(b, '\r'); break;
		case 't': put(b, '\t'); break;
		case 'u':
			ret = hex4(p, &cp);
			if (ret)
				return ret;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(p, "lone low surrogate in \\u escape");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
					return fail(p, "high surrogate without its low half");
				p->i += 2;
				ret = hex4(p, &lo);
				if (ret)
					return ret;
				if (lo < 0xdc00 || lo > 0xdfff)
					return fail(p, "high surrogate without its low half");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			put_cp(b, cp);
			break;
		default:
			p->i--;
			return fail(p, "bad escape '\\%c'", c >= 0x20 && c < 0x7f ? c : '?');
		}
	}
}

static bool digit(struct parser *p)
{
	return p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9';
}

/* A number; *integer when it has no fraction and no exponent, its value in *v (saturated at INT64_MAX). */
static int number(struct parser *p, bool *integer, int64_t *v)
{
	bool neg = false;
	int64_t x = 0;

	*integer = true;
	if (p->i < p->n && p->s[p->i] == '-') {
		neg = true;
		p->i++;
	}
	if (!digit(p))
		return fail(p, "a digit expected");
	if (p->s[p->i] == '0') {
		p->i++;
		if (digit(p))
			return fail(p, "leading zero in a number");
	} else {
		while (digit(p)) {
			int d = p->s[p->i++] - '0';

			x = x > (INT64_MAX - d) / 10 ? INT64_MAX : x * 10 + d;
		}
	}
	if (p->i < p->n && p->s[p->i] == '.') {
		*integer = false;
		p->i++;
		if (!digit(p))
			return fail(p, "a digit expected after '.'");
		while (digit(p))
			p->i++;
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		*integer = false;
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (!digit(p))
			return fail(p, "a digit expected in the exponent");
		while (digit(p))
			p->i++;
	}
	*v = neg ? -x : x;
	return 0;
}

static int literal(struct parser *p, const char *word)
{
	size_t len = strlen(word);

	if (p->n - p->i < len || memcmp(p->s + p->i, word, len))
		return fail(p, "unexpected character");
	p->i += len;
	return 0;
}

static int value(struct parser *p);

/* Members of an object or elements of an array (p->i just after the opening bracket), only checked. */
static int container(struct parser *p, bool object)
{
	char close = object ? '}' : ']';
	int ret;

	if (++p->depth > OCISTATE_MAX_DEPTH)
		return fail(p, "nested deeper than %d", OCISTATE_MAX_DEPTH);
	ws(p);
	if (p->i < p->n && p->s[p->i] == close) {
		p->i++;
		p->depth--;
		return 0;
	}
	for (;;) {
		ws(p);
		if (object) {
			ret = string(p, NULL);
			if (ret)
				return ret;
			ws(p);
			if (p->i >= p->n || p->s[p->i] != ':')
				return fail(p, "':' expected");
			p->i++;
			ws(p);
		}
		ret = value(p);
		if (ret)
			return ret;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == close) {
			p->i++;
			p->depth--;
			return 0;
		}
		return fail(p, "',' or '%c' expected", close);
	}
}

/* Any value, only checked. */
static int value(struct parser *p)
{
	bool integer;
	int64_t v;

	if (p->i >= p->n)
		return fail(p, "a value expected");
	switch (p->s[p->i]) {
	case '{':
		p->i++;
		return container(p, true);
	case '[':
		p->i++;
		return container(p, false);
	case '"':
		return string(p, NULL);
	case 't':
		return literal(p, "true");
	case 'f':
		return literal(p, "false");
	case 'n':
		return literal(p, "null");
	default:
		if (p->s[p->i] == '-' || digit(p))
			return number(p, &integer, &v);
		return fail(p, "unexpected character");
	}
}

/* A string member we keep: into out[0..cap), or an error naming it when it does not fit or holds a NUL. */
static int kept_string(struct parser *p, const char *what, char *out, size_t cap)
{
	struct sbuf b = { out, cap, 0, false, false };
	size_t at = p->i;
	int ret;

	out[0] = '\0';
	ret = string(p, &b);
	if (ret)
		return ret;
	p->i = at;
	if (b.trunc)
		return fail(p, "%s longer than %zu bytes", what, cap - 1);
	if (b.nul)
		return fail(p, "%s holds a NUL character", what);
	return 0;
}

/* The pod's identity: each field under containerd's CRI key, then CRI-O's. */
#define POD_FIELDS 3
static const char *const pod_keys[2][POD_FIELDS] = {
	{ "io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-uid" },
	{ "io.kubernetes.pod.name", "io.kubernetes.pod.namespace", "io.kubernetes.pod.uid" },
};

/* The index (runtime * POD_FIELDS + field) of a pod key, or -1. */
static int pod_key(const char *key)
{
	int r, f;

	for (r = 0; r < 2; r++)
		for (f = 0; f < POD_FIELDS; f++)
			if (!strcmp(key, pod_keys[r][f]))
				return r * POD_FIELDS + f;
	return -1;
}

/* The value of pod key pk (p->i at its string): into its field, the same as the other runtime's key's if set. */
static int pod_value(struct parser *p, struct ocistate *out, int pk, unsigned int *seen)
{
	char *field[POD_FIELDS] = { out->pod.name, out->pod.ns, out->pod.uid };
	const size_t cap[POD_FIELDS] = { sizeof(out->pod.name), sizeof(out->pod.ns), sizeof(out->pod.uid) };
	char v[OCISTATE_POD_NAME_MAX];
	int f = pk % POD_FIELDS, other = (pk + POD_FIELDS) % (2 * POD_FIELDS);
	unsigned int seen_before;
	int ret;

	struct sbuf b = { v, cap[f], 0, false, false };
	size_t at = p->i;

	v[0] = '\0';
	ret = string(p, &b);
	if (ret)
		return ret; /* not a JSON string: the document is bad */
	p->i = at;
	seen_before = *seen;
	*seen |= 1u << pk; /* a key given twice is an error even after the identity was dropped */
	/*
	 * The pod's identity names it for the exporter and quota show, nothing more: one that does not fit is
	 * dropped with the reason (the caller says it), and the container is not refused for it.
	 */
	if (out->pod.bad[0])
		return 0;
	if (b.trunc || b.nul)
		snprintf(out->pod.bad, sizeof(out->pod.bad), "annotation %s %s", pod_keys[pk / POD_FIELDS][f],
			 b.trunc ? "is too long" : "holds a NUL character");
	else if ((seen_before & 1u << other) && strcmp(v, field[f]))
		snprintf(out->pod.bad, sizeof(out->pod.bad), "annotation %s=%.32s disagrees with %s",
			 pod_keys[pk / POD_FIELDS][f], v, pod_keys[other / POD_FIELDS][f]);
	if (out->pod.bad[0]) {
		out->pod.name[0] = out->pod.ns[0] = out->pod.uid[0] = '\0';
		return 0;
	}
	memcpy(field[f], v, cap[f]);
	return 0;
}

static int annotations(struct parser *p, struct ocistate *out)
{
	size_t plen = strlen(OCISTATE_PREFIX);
	char key[OCISTATE_ANN_KEY_MAX];
	unsigned int k, pod_seen = 0;
	struct sbuf kb;
	int ret, pk;

	if (p->i >= p->n || p->s[p->i] != '{')
		return fail(p, "annotations: an object expected");
	p->i++;
	if (++p->depth > OCISTATE_MAX_DEPTH)
		return fail(p, "nested deeper than %d", OCISTATE_MAX_DEPTH);
	ws(p);
	if (p->i < p->n && p->s[p->i] == '}') {
		p->i++;
		p->depth--;
		return 0;
	}
	for (;;) {
		size_t at;
		bool ours;

		ws(p);
		at = p->i;
		kb = (struct sbuf){ key, sizeof(key), 0, false, false };
		key[0] = '\0';
		ret = string(p, &kb);
		if (ret)
			return ret;
		ours = !strncmp(key, OCISTATE_PREFIX, plen) || (kb.len < plen && kb.trunc);
		pk = ours || kb.trunc || kb.nul ? -1 : pod_key(key);
		if (pk >= 0 && (pod_seen & 1u << pk)) {
			p->i = at;
			return fail(p, "annotation %s given twice", key);
		}
		if (ours) {
			p->i = at;
			if (kb.trunc)
				return fail(p, "annotation key longer than %zu bytes", sizeof(key) - 1);
			if (kb.nul)
				return fail(p, "annotation key holds a NUL character");
			for (k = 0; k < out->nann; k++)
				if (!strcmp(out->ann[k].key, key))
					return fail(p, "annotation %s given twice", key);
			if (out->nann == OCISTATE_MAX_ANN)
				return fail(p, "more than %d %s annotations", OCISTATE_MAX_ANN, OCISTATE_PREFIX);
			ret = string(p, NULL);
			if (ret)
				return ret;
		}
		ws(p);
		if (p->i >= p->n || p->s[p->i] != ':')
			return fail(p, "':' expected");
		p->i++;
		ws(p);
		if (p->i >= p->n || p->s[p->i] != '"')
			return fail(p, "annotation %s: a string value expected", ours || pk >= 0 ? key : "values");
		if (pk >= 0) {
			ret = pod_value(p, out, pk, &pod_seen);
			if (ret)
				return ret;
		}
		if (ours) {
			struct ocistate_ann *a = &out->ann[out->nann];

			memcpy(a->key, key, sizeof(a->key));
			ret = kept_string(p, "annotation value", a->value, sizeof(a->value));
			if (ret)
				return ret;
			out->nann++;
		}
		ret = string(p, NULL);
		if (ret)
			return ret;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == '}') {
			p->i++;
			p->depth--;
			return 0;
		}
		return fail(p, "',' or '}' expected");
	}
}

int ocistate_parse(const char *buf, size_t len, struct ocistate *out, char *err, size_t errlen)
{
	struct parser p = { (const unsigned char *)buf, len, 0, 0, err, errlen };
	enum { F_ID = 1, F_STATUS = 2, F_PID = 4, F_ANN = 8 };
	unsigned int seen = 0, f;
	char key[16];
	struct sbuf kb;
	bool integer;
	int64_t v;
	int ret;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	if (len > OCISTATE_MAX_INPUT)
		return fail(&p, "more than %d bytes", OCISTATE_MAX_INPUT);
	ws(&p);
	if (p.i >= p.n || p.s[p.i] != '{')
		return fail(&p, "the state must be a JSON object");
	p.i++;
	p.depth = 1;
	ws(&p);
	if (p.i < p.n && p.s[p.i] == '}') {
		p.i++;
		goto end;
	}
	for (;;) {
		size_t at;

		ws(&p);
		at = p.i;
		kb = (struct sbuf){ key, sizeof(key), 0, false, false };
		key[0] = '\0';
		ret = string(&p, &kb);
		if (ret)
			return ret;
		f = kb.trunc || kb.nul ? 0
		    : !strcmp(key, "id")	  ? F_ID
		    : !strcmp(key, "status")	  ? F_STATUS
		    : !strcmp(key, "pid")	  ? F_PID
		    : !strcmp(key, "annotations") ? F_ANN
						  : 0;
		if (f & seen) {
			p.i = at;
			return fail(&p, "member %s given twice", key);
		}
		seen |= f;
		ws(&p);
		if (p.i >= p.n || p.s[p.i] != ':')
			return fail(&p, "':' expected");
		p.i++;
		ws(&p);
		switch (f) {
		case F_ID:
		case F_STATUS:
			if (p.i >= p.n || p.s[p.i] != '"')
				return fail(&p, "%s: a string expected", key);
			ret = f == F_ID ? kept_string(&p, "id", out->id, sizeof(out->id))
					: kept_string(&p, "status", out->status, sizeof(out->status));
			if (!ret)
				ret = string(&p, NULL);
			break;
		case F_PID:
			at = p.i;
			if (p.i >= p.n || !(p.s[p.i] == '-' || digit(&p)))
				return fail(&p, "pid: a number expected");
			ret = number(&p, &integer, &v);
			if (!ret && (!integer || v < 1 || v > INT_MAX)) {
				p.i = at;
				return fail(&p, "pid: a whole number from 1 to %d expected", INT_MAX);
			}
			if (!ret)
				out->pid = (pid_t)v;
			break;
		case F_ANN:
			ret = annotations(&p, out);
			break;
		default:
			ret = value(&p);
			break;
		}
		if (ret)
			return ret;
		ws(&p);
		if (p.i < p.n && p.s[p.i] == ',') {
			p.i++;
			continue;
		}
		if (p.i < p.n && p.s[p.i] == '}') {
			p.i++;
			break;
		}
		return fail(&p, "',' or '}' expected");
	}
end:
	ws(&p);
	if (p.i != p.n)
		return fail(&p, "trailing data after the document");
	return 0;
}
