// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The rdma cgroup controller's files (rdma.max, rdma.current): one line per device, parsed into numbers. */
#include "kq/rdmacg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

static bool value(const char *s, size_t n, uint64_t *out)
{
	char buf[32];

	if (n == 3 && !memcmp(s, "max", 3)) {
		*out = RDMACG_MAX;
		return true;
	}
	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return !parse_u64(buf, 0, UINT64_MAX - 1, out);
}

static bool parse_line(const char *s, size_t n, struct rdmacg_line *l)
{
	const char *end = s + n, *w, *eq;
	unsigned int seen = 0;
	size_t len;

	len = strcspn(s, " ");
	if (!len || len >= n || len >= sizeof(l->dev))
		return false;
	memcpy(l->dev, s, len);
	l->dev[len] = '\0';
	for (w = s + len; w < end;) {
		while (w < end && *w == ' ')
			w++;
		if (w == end)
			break;
		for (len = 0; w + len < end && w[len] != ' '; len++)
			;
		eq = memchr(w, '=', len);
		if (eq && eq - w == 10 && !memcmp(w, "hca_handle", 10) && value(eq + 1, len - 11, &l->hca_handle))
			seen |= 1;
		else if (eq && eq - w == 10 && !memcmp(w, "hca_object", 10) && value(eq + 1, len - 11, &l->hca_object))
			seen |= 2;
		w += len;
	}
	return seen == 3;
}

int rdmacg_parse(const char *text, struct rdmacg_line *out, int max)
{
	const char *p = text;
	int n = 0;

	while (*p && n < max) {
		size_t len = strcspn(p, "\n");

		if (parse_line(p, len, &out[n]))
			n++;
		p += len;
		if (*p)
			p++;
	}
	return n;
}

int rdmacg_read(const char *root, const char *cgroup, const char *file, struct rdmacg_line *out, int max)
{
	char path[PATH_MAX], buf[4096];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s%s/%s", root, cgroup, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return rdmacg_parse(buf, out, max);
}
