// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The node's container policy: a strict line parser, and what a container's limits resolve to under it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/kinds.h"
#include "core/util.h"
#include "engines/policy.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool policy_name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (!n || n >= POLICY_NAME_MAX || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
		return false;
	for (i = 1; i < n; i++)
		if (!is_alnum(name[i]) && name[i] != '_' && name[i] != '.' && name[i] != '-')
			return false;
	return is_alnum(name[n - 1]);
}

int policy_kind(const char *name, size_t len)
{
	return kind_lookup(name, len, LEDGER_NKINDS);
}

static void kinds_known(char *buf, size_t len)
{
	size_t at = 0;
	int k;

	buf[0] = '\0';
	for (k = 0; k < LEDGER_NKINDS && at < len; k++)
		at += snprintf(buf + at, len - at, "%s%s", k ? " " : "", ledger_kind_names[k]);
}

/* One KIND=VALUE word of n bytes into out. */
static int limit_word(const char *w, size_t n, struct policy_limits *out, char *err, size_t errlen)
{
	const char *eq = memchr(w, '=', n);
	char val[32], known[160];
	uint64_t v;
	int k, ret;

	if (!eq)
		return fail(err, errlen, "'%.*s': not KIND=VALUE", (int)(n > 40 ? 40 : n), w);
	k = policy_kind(w, eq - w);
	if (k < 0) {
		kinds_known(known, sizeof(known));
		return fail(err, errlen, "unknown kind '%.*s' (one of: %s)", (int)((eq - w) > 40 ? 40 : eq - w), w,
			    known);
	}
	if (policy_has(out, k))
		return fail(err, errlen, "%s given twice", ledger_kind_names[k]);
	n -= eq + 1 - w;
	if (!n || n >= sizeof(val))
		return fail(err, errlen, "%s: %s value", ledger_kind_names[k], n ? "a too long" : "an empty");
	memcpy(val, eq + 1, n);
	val[n] = '\0';
	if (!strcmp(val, "unlimited") || !strcmp(val, "max")) {
		v = LEDGER_UNLIMITED;
	} else {
		ret = k == LEDGER_MR_BYTES ? parse_size(val, LEDGER_UNLIMITED - 1, &v)
					   : parse_u64(val, 0, LEDGER_UNLIMITED - 1, &v);
		if (ret)
			return fail(err, errlen, "%s: invalid value '%s' (%s: %s)", ledger_kind_names[k], val,
				    parse_why(val, ret, k == LEDGER_MR_BYTES),
				    k == LEDGER_MR_BYTES ? "a size like 4096, 64K or 8G, or 'unlimited'"
							 : "a decimal whole number, or 'unlimited'");
	}
	out->v[k] = v;
	out->set |= 1u << k;
	return 0;
}

static bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == ',';
}

/* The words of s[0..n) into out (not cleared). */
static int limits_span(const char *s, size_t n, struct policy_limits *out, char *err, size_t errlen)
{
	size_t i = 0, j;
	int ret;

	while (i < n) {
		if (is_sep(s[i])) {
			i++;
			continue;
		}
		for (j = i; j < n && !is_sep(s[j]); j++)
			;
		ret = limit_word(s + i, j - i, out, err, errlen);
		if (ret)
			return ret;
		i = j;
	}
	return 0;
}

int policy_limits_parse(const char *s, struct policy_limits *out, char *err, size_t errlen)
{
	int ret;

	memset(out, 0, sizeof(*out));
	ret = limits_span(s, strlen(s), out, err, errlen);
	if (!ret && !out->set)
		ret = fail(err, errlen, "no limits (KIND=VALUE, e.g. qp=2,mr_bytes=1G)");
	return ret;
}

void policy_limits_min(struct policy_limits *a, const struct policy_limits *b)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (!policy_has(b, k))
			continue;
		if (!policy_has(a, k) || b->v[k] < a->v[k])
			a->v[k] = b->v[k];
		a->set |= 1u << k;
	}
}

void policy_limits_format(const struct policy_limits *l, char *buf, size_t len)
{
	size_t at = 0;
	int k;

	buf[0] = '\0';
	for (k = 0; k < LEDGER_NKINDS && at < len; k++) {
		if (!policy_has(l, k))
			continue;
		if (l->v[k] == LEDGER_UNLIMITED)
			at += snprintf(buf + at, len - at, "%s%s=unlimited", at ? "," : "", ledger_kind_names[k]);
		else
			at += snprintf(buf + at, len - at, "%s%s=%" PRIu64, at ? "," : "", ledger_kind_names[k],
				       l->v[k]);
	}
}

const struct policy_budget *policy_budget(const struct policy *p, const char *name)
{
	unsigned int i;

	for (i = 0; i < p->nbudgets; i++)
		if (!strcmp(p->budget[i].name, name))
			return &p->budget[i];
	return NULL;
}

int policy_above_ceiling(const struct policy *p, const struct policy_limits *l)
{
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++)
		if (policy_has(l, k) && policy_has(&p->ceiling, k) && l->v[k] > p->ceiling.v[k])
			return k;
	return -1;
}

bool policy_resolve(const struct policy *p, const struct policy_limits *asked, uint64_t out[LEDGER_NKINDS])
{
	bool any = false;
	int k;

	for (k = 0; k < LEDGER_NKINDS; k++) {
		if (policy_has(asked, k))
			out[k] = asked->v[k];
		else if (p->has_default && policy_has(&p->dflt, k))
			out[k] = p->dflt.v[k];
		else if (policy_has(&p->ceiling, k))
			out[k] = p->ceiling.v[k];
		else
			out[k] = LEDGER_UNLIMITED;
		if (policy_has(&p->ceiling, k) && out[k] > p->ceiling.v[k])
			out[k] = p->ceiling.v[k]; /* never above it, whatever asked */
		any |= out[k] != LEDGER_UNLIMITED;
	}
	return any;
}

static const char *const directives[] = { "default", "ceiling", "budget" };

/* "line 2: the default qp=8 is above the ceiling qp=4 of line 1" */
static int above_ceiling(const struct policy *p, const char *what, const struct policy_limits *l, unsigned int ln,
			 int k, char *err, size_t errlen)
{
	char v[24];

	if (l->v[k] == LEDGER_UNLIMITED)
		snprintf(v, sizeof(v), "unlimited");
	else
		snprintf(v, sizeof(v), "%" PRIu64, l->v[k]);
	return fail(err, errlen, "line %u: %s %s=%s is above the ceiling %s=%" PRIu64 " of line %u", ln, what,
		    ledger_kind_names[k], v, ledger_kind_names[k], p->ceiling.v[k], p->ceiling_line);
}

/* One line (no newline, comment cut) numbered ln. */
static int parse_line(struct policy *p, const char *s, size_t n, unsigned int ln, bool *seen_ceiling, char *err,
		      size_t errlen)
{
	struct policy_limits *lim;
	char msg[256], name[POLICY_NAME_MAX];
	size_t i = 0, w;
	int d, ret;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i == n)
		return 0;
	for (w = i; w < n && s[w] != ' ' && s[w] != '\t'; w++)
		;
	for (d = 0; d < 3; d++)
		if (strlen(directives[d]) == w - i && !memcmp(s + i, directives[d], w - i))
			break;
	if (d == 3)
		return fail(err, errlen, "line %u: unknown directive '%.*s' (default, ceiling or budget NAME)", ln,
			    (int)(w - i > 40 ? 40 : w - i), s + i);
	i = w;
	if (d == 0) {
		if (p->has_default)
			return fail(err, errlen, "line %u: a second default", ln);
		p->has_default = true;
		p->default_line = ln;
		lim = &p->dflt;
	} else if (d == 1) {
		if (*seen_ceiling)
			return fail(err, errlen, "line %u: a second ceiling", ln);
		*seen_ceiling = true;
		p->ceiling_line = ln;
		lim = &p->ceiling;
	} else {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		for (w = i; w < n && s[w] != ' ' && s[w] != '\t'; w++)
			;
		if (w == i)
			return fail(err, errlen, "line %u: budget without a NAME", ln);
		if (w - i >= sizeof(name))
			return fail(err, errlen, "line %u: budget name longer than %d characters", ln,
				    POLICY_NAME_MAX - 1);
		memcpy(name, s + i, w - i);
		name[w - i] = '\0';
		if (!policy_name_ok(name))
			return fail(err, errlen, "line %u: budget name '%s': a letter first, then letters, digits, "
				    "'_', '.' or '-', ending with a letter or digit", ln, name);
		if (policy_budget(p, name))
			return fail(err, errlen, "line %u: budget %s named twice", ln, name);
		if (p->nbudgets >= POLICY_MAX_BUDGETS)
			return fail(err, errlen, "line %u: more than %d budgets", ln, POLICY_MAX_BUDGETS);
		memcpy(p->budget[p->nbudgets].name, name, w - i + 1);
		p->budget[p->nbudgets].line = ln;
		lim = &p->budget[p->nbudgets++].lim;
		i = w;
	}
	ret = limits_span(s + i, n - i, lim, msg, sizeof(msg));
	if (ret)
		return fail(err, errlen, "line %u: %s", ln, msg);
	if (!lim->set)
		return fail(err, errlen, "line %u: %s without limits (KIND=VALUE ...)", ln, directives[d]);
	return 0;
}

int policy_parse(const char *buf, size_t len, struct policy *p, char *err, size_t errlen)
{
	bool seen_ceiling = false;
	size_t at = 0, end, n;
	unsigned int ln = 0, i;
	char what[64];
	int ret, k;

	memset(p, 0, sizeof(*p));
	err[0] = '\0';
	/* a UTF-8 byte order mark, as some editors write one: not part of the first directive */
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		at = 3;
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at), *hash;

		end = nl ? (size_t)(nl - buf) : len;
		ln++;
		n = end - at;
		if (memchr(buf + at, '\0', n))
			return fail(err, errlen, "line %u: a NUL byte", ln);
		hash = memchr(buf + at, '#', n);
		if (hash)
			n = hash - (buf + at);
		if (n && buf[at + n - 1] == '\r')
			n--;
		/* outside comments the policy is ASCII: name what an editor or a web page slipped in */
		for (i = 0; i < n; i++) {
			unsigned char c = (unsigned char)buf[at + i];

			if (c < 0x80)
				continue;
			if (c == 0xc2 && i + 1 < n && (unsigned char)buf[at + i + 1] == 0xa0)
				return fail(err, errlen, "line %u, column %u: a no-break space (U+00A0): write a plain space",
					    ln, i + 1);
			return fail(err, errlen, "line %u, column %u: a byte that is not ASCII (0x%02x): words, numbers "
				    "and separators are plain ASCII", ln, i + 1, c);
		}
		ret = parse_line(p, buf + at, n, ln, &seen_ceiling, err, errlen);
		if (ret)
			return ret;
		at = end + 1;
	}
	/* what the node gives must be within what it allows: the line that gives it, and the ceiling's */
	if (p->has_default && (k = policy_above_ceiling(p, &p->dflt)) >= 0)
		return above_ceiling(p, "the default", &p->dflt, p->default_line, k, err, errlen);
	for (i = 0; i < p->nbudgets; i++)
		if ((k = policy_above_ceiling(p, &p->budget[i].lim)) >= 0) {
			snprintf(what, sizeof(what), "budget %s", p->budget[i].name);
			return above_ceiling(p, what, &p->budget[i].lim, p->budget[i].line, k, err, errlen);
		}
	return 0;
}

const char *policy_path(const char *path)
{
	const char *env = getenv(POLICY_ENV);

	if (path)
		return path;
	return env && *env ? env : POLICY_PATH;
}

int policy_load(const char *path, struct policy *p, char *err, size_t errlen)
{
	static char buf[POLICY_MAX_INPUT + 1];
	size_t len = 0;
	ssize_t n;
	int fd, ret;

	memset(p, 0, sizeof(*p));
	path = policy_path(path);
	if (path[0] != '/')
		return fail(err, errlen, "%s%s: " POLICY_ABS_WHY, path == getenv(POLICY_ENV) ? POLICY_ENV "=" : "", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	while (len < sizeof(buf)) {
		n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			close(fd);
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
			return ret;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	if (len > POLICY_MAX_INPUT) {
		snprintf(err, errlen, "%s: longer than %d bytes", path, POLICY_MAX_INPUT);
		return -EFBIG;
	}
	ret = policy_parse(buf, len, p, err, errlen);
	if (ret) {
		char msg[512];

		copy_str(msg, err, sizeof(msg));
		snprintf(err, errlen, "%s: %s", path, msg);
	}
	return ret;
}
