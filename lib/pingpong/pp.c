// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pingpong plumbing: ibv_rc_pingpong wire format, TCP with deadlines, latency statistics. */
#include "pingpong/pp.h"

#include "core/clock.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void pp_wire_format(const struct pp_dest *d, char msg[PP_MSG_LEN])
{
	int i, n;

	/* The GID goes as its 16 raw bytes in order, as hex: that is what gid_to_wire_gid() amounts to. */
	n = snprintf(msg, PP_MSG_LEN, "%04x:%06x:%06x:", d->lid & 0xffff, d->qpn & 0xffffff, d->psn & 0xffffff);
	for (i = 0; i < 16 && n + 2 < PP_MSG_LEN; i++)
		n += snprintf(msg + n, PP_MSG_LEN - n, "%02x", d->gid[i]);
	memset(msg + n, 0, PP_MSG_LEN - n);
}

static int hexval(int c)
{
	if (isdigit(c))
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Parse up to max hex digits ending at ':' (field) at *p; advances *p past the colon. */
static int hex_field(const char **p, const char *end, int max, uint32_t *out)
{
	uint32_t v = 0;
	int n = 0, h;

	while (*p < end && (h = hexval((unsigned char)**p)) >= 0 && n < max) {
		v = v << 4 | (uint32_t)h;
		(*p)++;
		n++;
	}
	if (!n || *p >= end || **p != ':')
		return -EPROTO;
	(*p)++;
	*out = v;
	return 0;
}

int pp_wire_parse(const char *msg, size_t len, struct pp_dest *d)
{
	const char *p = msg, *end;
	int i, hi, lo;

	if (len > PP_MSG_LEN)
		len = PP_MSG_LEN;
	end = memchr(msg, '\0', len);
	if (!end)
		end = msg + len;
	if (hex_field(&p, end, 4, &d->lid) || hex_field(&p, end, 6, &d->qpn) || hex_field(&p, end, 6, &d->psn))
		return -EPROTO;
	if (end - p != 32)
		return -EPROTO;
	for (i = 0; i < 16; i++) {
		hi = hexval((unsigned char)p[2 * i]);
		lo = hexval((unsigned char)p[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EPROTO;
		d->gid[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int pp_mtu_to_enum(unsigned int mtu)
{
	switch (mtu) {
	case 256:
		return 1;
	case 512:
		return 2;
	case 1024:
		return 3;
	case 2048:
		return 4;
	case 4096:
		return 5;
	default:
		return -EINVAL;
	}
}

unsigned int pp_mtu_from_enum(int e)
{
	return e >= 1 && e <= 5 ? 128u << e : 0;
}

uint64_t pp_now_ns(void)
{
	return clock_mono_ns();
}

int pp_ms_left(uint64_t deadline_ns)
{
	uint64_t now = pp_now_ns();

	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999) / 1000000);
}

/* Wait until fd is ready for events; 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, uint64_t deadline_ns, bool forever)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret;

	for (;;) {
		ret = poll(&pfd, 1, forever ? -1 : pp_ms_left(deadline_ns));
		if (ret > 0)
			return 0;
		if (!ret)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static uint64_t deadline(int timeout_ms)
{
	return pp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
}

int pp_tcp_listen(uint16_t port, int *fd)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = in6addr_any };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s, one = 1, zero = 0, ret;

	/* Dual stack when the host has IPv6, plain IPv4 otherwise. */
	s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (!bind(s, (struct sockaddr *)&in6, sizeof(in6)))
			goto listen;
		ret = -errno;
		close(s);
		if (ret == -EADDRINUSE)
			return ret;
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&in, sizeof(in))) {
		ret = -errno;
		close(s);
		return ret;
	}
listen:
	if (listen(s, 1)) {
		ret = -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int pp_tcp_accept(int lfd, int timeout_ms, int *cfd)
{
	int ret, s;

	ret = wait_fd(lfd, POLLIN, deadline(timeout_ms), timeout_ms < 0);
	if (ret)
		return ret;
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		return -errno;
	*cfd = s;
	return 0;
}

/* Non-blocking connect bounded by the deadline. */
static int connect_one(const struct addrinfo *a, uint64_t dl, int *fd)
{
	int s, ret, soerr = 0;
	socklen_t len = sizeof(soerr);

	s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
	if (s < 0)
		return -errno;
	if (connect(s, a->ai_addr, a->ai_addrlen)) {
		if (errno != EINPROGRESS) {
			ret = -errno;
			goto fail;
		}
		ret = wait_fd(s, POLLOUT, dl, false);
		if (ret)
			goto fail;
		if (getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len)) {
			ret = -errno;
			goto fail;
		}
		if (soerr) {
			ret = -soerr;
			goto fail;
		}
	}
	*fd = s;
	return 0;
fail:
	close(s);
	return ret;
}

int pp_tcp_connect(const char *host, uint16_t port, int timeout_ms, int *fd)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *a;
	uint64_t dl = deadline(timeout_ms);
	char service[8];
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret)
		return ret == EAI_SYSTEM ? -errno : -ENOENT;
	ret = -EHOSTUNREACH;
	for (a = res; a; a = a->ai_next) {
		ret = connect_one(a, dl, fd);
		if (!ret || ret == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	return ret;
}

/* Move len bytes in one direction before the deadline. Returns the count moved (short only on EOF). */
static ssize_t xfer_full(int fd, void *buf, size_t len, int timeout_ms, bool out)
{
	uint64_t dl = deadline(timeout_ms);
	size_t done = 0;
	ssize_t n;
	int ret;

	while (done < len) {
		ret = wait_fd(fd, out ? POLLOUT : POLLIN, dl, timeout_ms < 0);
		if (ret)
			return ret;
		n = out ? send(fd, (char *)buf + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL)
			: recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (!n)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t pp_read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	return xfer_full(fd, buf, len, timeout_ms, false);
}

int pp_write_full(int fd, const void *buf, size_t len, int timeout_ms)
{
	ssize_t n = xfer_full(fd, (void *)buf, len, timeout_ms, true);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EPIPE;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double rank(const double *v, size_t n, double p)
{
	double want = p * (double)n;
	size_t k = (size_t)want;

	if ((double)k < want)
		k++;

	return v[k ? k - 1 : 0];
}

void pp_stats_compute(double *samples, size_t n, struct pp_stats *s)
{
	double sum = 0;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (!n)
		return;
	qsort(samples, n, sizeof(*samples), cmp_double);
	for (i = 0; i < n; i++)
		sum += samples[i];
	s->min = samples[0];
	s->max = samples[n - 1];
	s->avg = sum / (double)n;
	s->p50 = rank(samples, n, 0.5);
	s->p99 = rank(samples, n, 0.99);
	s->p999 = rank(samples, n, 0.999);
}
