// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Small shared helpers: number and size parsing, error messages, program name. */
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *util_prog = "rdmactl";
bool util_verbose;

static void vpr(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "%s: %s\n", util_prog, buf);
}

void pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vpr(fmt, ap);
	va_end(ap);
}

void pr_debug(const char *fmt, ...)
{
	va_list ap;

	if (!util_verbose)
		return;
	va_start(ap, fmt);
	vpr(fmt, ap);
	va_end(ap);
}

/*
 * Decimal digits only, whatever the first of them: "010" is ten, as a reader of a man page saying "a decimal
 * count" expects (strtoull's base 0 read it as octal 8, and "0x10" as 16). A sign or a space is refused too.
 */
static int parse_num(const char *s, unsigned long long *v, char **end)
{
	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end == s)
		return -EINVAL;
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int ret;

	ret = parse_num(s, &v, &end);
	if (ret)
		return ret;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	/* decimal only: strtod also reads spaces, signs, "inf" and hexadecimal ("0x1p3") */
	if (!s || !(isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]))) ||
	    strpbrk(s, "xX"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t max, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long v;
	const char *u;
	char *end;
	int ret, shift = 0;

	ret = parse_num(s, &v, &end);
	if (ret)
		return ret;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u || !*u)
			return -EINVAL;
		shift = 10 * (int)(u - units + 1);
		end++;
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
		if (*end)
			return -EINVAL;
		if (v > (UINT64_MAX >> shift))
			return -ERANGE;
		v <<= shift;
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

const char *parse_why(const char *s, int err, bool size)
{
	size_t n = s ? strspn(s, "0123456789") : 0;

	if (err == -ERANGE)
		return "out of range";
	if (n && (s[n] == 'x' || s[n] == 'X'))
		return "numbers are decimal, not hexadecimal";
	return size ? "not a size (a decimal number, then K, M, G or T)" : "not a decimal whole number";
}

int parse_pid(const char *s, bool must_exist, pid_t *out)
{
	uint64_t v;
	int ret;

	ret = parse_u64(s, 1, 4194304, &v);
	if (ret)
		return ret;
	if (must_exist && kill((pid_t)v, 0) && errno == ESRCH)
		return -ESRCH;
	*out = (pid_t)v;
	return 0;
}

const char *fmt_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	int i = -1;
	double d = (double)v;

	while (d >= 1024 && i < 5) {
		d /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else if (d == (uint64_t)d)
		snprintf(buf, len, "%.0f%c", d, units[i]);
	else
		snprintf(buf, len, "%.1f%c", d, units[i]);
	return buf;
}

int match_word(const char *word, const char *const *names, int n)
{
	size_t len = strlen(word);
	int i, found = -1;

	if (n < 0)
		for (n = 0; names[n]; n++)
			;
	if (!len)
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(word, names[i]))
			return i;
	for (i = 0; i < n; i++) {
		if (strncmp(word, names[i], len))
			continue;
		if (found >= 0)
			return -2;
		found = i;
	}
	return found;
}

int word_error(const char *what, const char *word, const char *const *names, int n, int ret)
{
	size_t len = strlen(word);
	char list[512] = "";
	int i, nmatch = 0;

	if (n < 0)
		for (n = 0; names[n]; n++)
			;
	for (i = 0; i < n; i++) {
		if (ret == -2 && strncmp(word, names[i], len))
			continue;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s'%s'", nmatch++ ? ", " : "",
			 names[i]);
	}
	if (ret == -2)
		pr_err("%s '%s' is ambiguous: could be %s", what, word, list);
	else
		pr_err("unknown %s '%s' (one of: %s)", what, word, list);
	fprintf(stderr, "Try '%s --help' for more information.\n", util_prog);
	return 2;
}

void copy_str(char *dst, const char *src, size_t len)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}
