// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A small HTTP/1.x server for exporters: a strict request parser and one poll loop with bounded connections. */
#include "export/http.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* --- parser --------------------------------------------------------------------------------------- */

#define METHOD_MAX 32

/* RFC 9110 tchar */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Field value characters: VCHAR, SP, HTAB, obs-text. */
static bool vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* A prefix of "HTTP/d.d" (complete: all of it). 0 fits, 505 another major version, 400 otherwise. */
static int check_version(const char *s, size_t n, bool complete, int *minor)
{
	static const char pat[] = "HTTP/d.d";
	size_t i;

	if (n > 8 || (complete && n != 8))
		return 400;
	for (i = 0; i < n; i++) {
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return 400;
	}
	if (!complete)
		return 0;
	if (s[5] != '1')
		return 505;
	*minor = s[7] == '0' ? 0 : 1; /* 1.x above 1 is answered as 1.1 (RFC 9110 2.5) */
	return 0;
}

/* The request line s[0..n) (without its line end; complete: all of it is there). 0, 400 or 505. */
static int check_request_line(const char *s, size_t n, bool complete, struct http_req *req)
{
	size_t i = 0, m, t;

	while (i < n && tchar((unsigned char)s[i]))
		i++;
	if (i > METHOD_MAX)
		return 400;
	if (i == n)
		return complete ? 400 : 0;
	if (s[i] != ' ' || !i)
		return 400;
	m = i++;
	t = i;
	while (i < n && (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f)
		i++;
	if (i == n)
		return complete ? 400 : 0;
	if (s[i] != ' ' || i == t)
		return 400;
	i++;
	if (check_version(s + i, n - i, complete, &req->minor) == 400)
		return 400;
	if (!complete)
		return 0;
	req->method = s;
	req->method_len = m;
	req->path = s + t;
	req->path_len = i - 1 - t;
	return check_version(s + i, n - i, true, &req->minor);
}

/* The path of the request target: origin-form, absolute-form or "*". 0 or 400. */
static int target_path(struct http_req *req)
{
	const char *p = req->path, *end = p + req->path_len;
	size_t n;

	if (req->path_len == 1 && *p == '*')
		return 0;
	if (*p != '/') {
		if (req->path_len > 7 && !strncasecmp(p, "http://", 7))
			p += 7;
		else if (req->path_len > 8 && !strncasecmp(p, "https://", 8))
			p += 8;
		else
			return 400;
		while (p < end && *p != '/' && *p != '?')
			p++;
		if (p == end || *p == '?') {
			req->path = "/";
			req->path_len = 1;
			return 0;
		}
	}
	for (n = 0; p + n < end && p[n] != '?' && p[n] != '#'; n++)
		;
	req->path = p;
	req->path_len = n;
	return 0;
}

/* A header line s[0..n) (without its line end). 0 or 400. */
static int check_header(const char *s, size_t n, bool complete)
{
	size_t i = 0;

	if (!n)
		return 0;
	if (s[0] == ' ' || s[0] == '\t')
		return 400; /* obs-fold */
	while (i < n && tchar((unsigned char)s[i]))
		i++;
	if (i == n)
		return complete ? 400 : 0;
	if (s[i] != ':' || !i)
		return 400;
	for (i++; i < n; i++)
		if (!vchar((unsigned char)s[i]))
			return 400;
	return 0;
}

/*
 * The next line from s[*pos..len): its length without the line end in *n, *pos moved past it. 1 when a
 * whole line was there, 0 when it is not complete yet (*n: what there is, a trailing CR left out), 400
 * for a CR that does not end the line.
 */
static int next_line(const char *s, size_t len, size_t *pos, size_t *n)
{
	size_t i;

	for (i = *pos; i < len; i++) {
		if (s[i] == '\n') {
			*n = i - *pos;
			if (*n && s[i - 1] == '\r')
				(*n)--;
			*pos = i + 1;
			return 1;
		}
		if (s[i] == '\r' && i + 1 < len && s[i + 1] != '\n')
			return 400;
	}
	*n = len - *pos;
	if (*n && s[len - 1] == '\r')
		(*n)--;
	return 0;
}

int http_parse(const char *buf, size_t len, struct http_req *req)
{
	size_t pos = 0, start, n, cap = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
	bool full = len >= HTTP_MAX_HEAD;
	int ret;

	memset(req, 0, sizeof(*req));
	/* Empty lines before the request line are skipped (RFC 9112 2.2). */
	for (;;) {
		start = pos;
		ret = next_line(buf, cap, &pos, &n);
		if (ret == 400)
			return 400;
		if (!ret) {
			ret = check_request_line(buf + start, n, false, req);
			return ret ? ret : full ? 414 : HTTP_MORE;
		}
		if (n)
			break;
	}
	ret = check_request_line(buf + start, n, true, req);
	if (ret)
		return ret;
	if (target_path(req))
		return 400;
	for (;;) {
		start = pos;
		ret = next_line(buf, cap, &pos, &n);
		if (ret == 400)
			return 400;
		if (!ret) {
			if (check_header(buf + start, n, false))
				return 400;
			return full ? 431 : HTTP_MORE;
		}
		if (!n)
			break;
		if (++req->nheaders > HTTP_MAX_HEADERS)
			return 431;
		if (check_header(buf + start, n, true))
			return 400;
	}
	req->head_len = pos;
	return 200;
}

bool http_method_is(const struct http_req *req, const char *m)
{
	return req->method_len == strlen(m) && !memcmp(req->method, m, req->method_len);
}

bool http_path_is(const struct http_req *req, const char *p)
{
	return req->path_len == strlen(p) && !memcmp(req->path, p, req->path_len);
}

const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

const int http_stat_codes[8] = { 200, 400, 404, 405, 408, 431, 503, 0 };

/* --- listening ------------------------------------------------------------------------------------ */

int http_listen(const char *addr, int *fd, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res = NULL, *ai;
	char host[256], port[16];
	const char *colon, *h;
	int s = -1, one = 1, zero = 0, ret;
	uint64_t pv;
	size_t hl;

	colon = strrchr(addr, ':');
	if (!colon || !colon[1] || strlen(colon + 1) >= sizeof(port) || strspn(colon + 1, "0123456789") !=
	    strlen(colon + 1)) {
		snprintf(err, errlen, "expected ADDR:PORT, [IPV6]:PORT or :PORT");
		return -EINVAL;
	}
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (parse_u64(port, 0, 65535, &pv)) {
		snprintf(err, errlen, "port %s is out of range", port);
		return -EINVAL;
	}
	h = addr;
	hl = (size_t)(colon - addr);
	if (hl && h[0] == '[') {
		if (hl < 2 || h[hl - 1] != ']') {
			snprintf(err, errlen, "expected [IPV6]:PORT");
			return -EINVAL;
		}
		h++;
		hl -= 2;
		hints.ai_flags |= AI_NUMERICHOST;
		hints.ai_family = AF_INET6;
	} else if (memchr(h, ':', hl)) {
		snprintf(err, errlen, "an IPv6 address goes in brackets: [ADDR]:PORT");
		return -EINVAL;
	}
	if (hl >= sizeof(host)) {
		snprintf(err, errlen, "address too long");
		return -EINVAL;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (!hl)
		hints.ai_family = AF_INET6; /* every address: "::" dual stack, else 0.0.0.0 below */
	ret = getaddrinfo(hl ? host : NULL, port, &hints, &res);
	if (ret && !hl) {
		hints.ai_family = AF_INET;
		ret = getaddrinfo(NULL, port, &hints, &res);
	}
	if (ret) {
		snprintf(err, errlen, "%s", gai_strerror(ret));
		return ret == EAI_SYSTEM ? -errno : -EINVAL;
	}
	ret = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (s < 0) {
			ret = -errno;
			continue;
		}
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6 && !hl)
			setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (!bind(s, ai->ai_addr, ai->ai_addrlen) && !listen(s, 128))
			break;
		ret = -errno;
		close(s);
		s = -1;
	}
	freeaddrinfo(res);
	if (s < 0 && !hl && hints.ai_family == AF_INET6 && ret == -EAFNOSUPPORT) {
		/* no IPv6 on this host: every IPv4 address */
		char v4[32];

		snprintf(v4, sizeof(v4), "0.0.0.0:%s", port);
		return http_listen(v4, fd, err, errlen);
	}
	if (s < 0) {
		snprintf(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	*fd = s;
	return 0;
}

void http_local_addr(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		snprintf(buf, len, "?");
		return;
	}
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	}
}

/* --- server --------------------------------------------------------------------------------------- */

enum conn_state {
	CONN_FREE,
	CONN_READ,	/* waiting for the whole request head */
	CONN_WRITE,	/* writing the answer */
	CONN_LINGER,	/* answer written, write side shut: drain what the client still sends, then close */
};

#define LINGER_S 1.0
#define LINGER_DRAIN (64 * 1024)

struct conn {
	int fd;
	enum conn_state state;
	double deadline;	/* CLOCK_MONOTONIC seconds */
	double since;		/* when accepted (oldest first when evicting) */
	size_t in_len;
	size_t drained;
	char *out;
	size_t out_len, out_off;
	char in[HTTP_MAX_HEAD];
};

struct http_server {
	int lfd;
	struct http_opts o;
	http_handler handler;
	void *arg;
	struct conn *conns;
	unsigned int nopen;
	struct pollfd *pfd;
	int *pidx;		/* pfd[i] serves conns[pidx[i]] (-1: the listening socket) */
	struct http_stats stats;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int http_server_new(int listen_fd, const struct http_opts *o, http_handler h, void *arg, struct http_server **out)
{
	struct http_server *s;
	unsigned int i;

	if (listen_fd < 0 || !o || !h || !o->max_conns || o->max_conns > HTTP_MAX_CONNS || !(o->timeout > 0))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->conns = calloc(o->max_conns, sizeof(*s->conns));
	s->pfd = calloc(o->max_conns + 1, sizeof(*s->pfd));
	s->pidx = calloc(o->max_conns + 1, sizeof(*s->pidx));
	if (!s->conns || !s->pfd || !s->pidx) {
		free(s->conns);
		free(s->pfd);
		free(s->pidx);
		free(s);
		return -ENOMEM;
	}
	for (i = 0; i < o->max_conns; i++)
		s->conns[i].fd = -1;
	s->lfd = listen_fd;
	s->o = *o;
	s->handler = h;
	s->arg = arg;
	*out = s;
	return 0;
}

static void conn_close(struct http_server *s, struct conn *c)
{
	if (c->state == CONN_FREE)
		return;
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->state = CONN_FREE;
	s->nopen--;
}

void http_server_free(struct http_server *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < s->o.max_conns; i++)
		conn_close(s, &s->conns[i]);
	close(s->lfd);
	free(s->conns);
	free(s->pfd);
	free(s->pidx);
	free(s);
}

const struct http_stats *http_server_stats(const struct http_server *s)
{
	return &s->stats;
}

unsigned int http_server_conns(const struct http_server *s)
{
	return s->nopen;
}

static void count_status(struct http_server *s, int status)
{
	unsigned int i;

	for (i = 0; i + 1 < sizeof(http_stat_codes) / sizeof(http_stat_codes[0]); i++)
		if (http_stat_codes[i] == status)
			break;
	s->stats.responses[i]++;
}

/* Put the whole answer into c->out and switch to writing it. */
static void respond(struct http_server *s, struct conn *c, const struct http_response *r)
{
	char head[512];
	int n;

	count_status(s, r->status);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\n%s%s%s%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n", r->status,
		     http_reason(r->status), r->content_type ? "Content-Type: " : "",
		     r->content_type ? r->content_type : "", r->content_type ? "\r\n" : "", r->allow ? "Allow: " : "",
		     r->allow ? r->allow : "", r->allow ? "\r\n" : "", r->body_len);
	if (n < 0 || (size_t)n >= sizeof(head))
		n = 0;
	free(c->out);
	c->out_len = (size_t)n + (r->head_only ? 0 : r->body_len);
	c->out_off = 0;
	c->out = malloc(c->out_len ? c->out_len : 1);
	if (!c->out) {
		conn_close(s, c);
		return;
	}
	memcpy(c->out, head, (size_t)n);
	if (!r->head_only && r->body_len)
		memcpy(c->out + n, r->body, r->body_len);
	c->state = CONN_WRITE;
	c->deadline = now_s() + s->o.timeout;
}

static void respond_error(struct http_server *s, struct conn *c, int status)
{
	char body[128];
	struct http_response r = { .status = status, .content_type = "text/plain; charset=utf-8", .body = body };

	r.body_len = (size_t)snprintf(body, sizeof(body), "%d %s\n", status, http_reason(status));
	respond(s, c, &r);
}

static void linger(struct http_server *s, struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_LINGER;
	c->drained = 0;
	c->deadline = now_s() + (s->o.timeout < LINGER_S ? s->o.timeout : LINGER_S);
}

static void on_write(struct http_server *s, struct conn *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				conn_close(s, c);
			return;
		}
		c->out_off += (size_t)n;
	}
	linger(s, c);
}

static void on_read(struct http_server *s, struct conn *c)
{
	struct http_response r;
	struct http_req req;
	char sink[4096];
	ssize_t n;
	int st;

	if (c->state == CONN_LINGER) {
		n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0)
			c->drained += (size_t)n;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || c->drained > LINGER_DRAIN)
			conn_close(s, c);
		return;
	}
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_close(s, c);
		return;
	}
	if (n == 0) {
		/* the client gave up before a whole request: nobody to answer */
		conn_close(s, c);
		return;
	}
	c->in_len += (size_t)n;
	st = http_parse(c->in, c->in_len, &req);
	if (st == HTTP_MORE)
		return;
	if (st != 200) {
		respond_error(s, c, st);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.status = 500;
	s->handler(&req, &r, s->arg);
	respond(s, c, &r);
}

/* The oldest connection still reading its request, else the oldest lingering one; NULL when none. */
static struct conn *victim(struct http_server *s)
{
	static const enum conn_state order[] = { CONN_READ, CONN_LINGER };
	struct conn *best = NULL;
	unsigned int i, k;

	for (k = 0; k < 2 && !best; k++)
		for (i = 0; i < s->o.max_conns; i++)
			if (s->conns[i].state == order[k] && (!best || s->conns[i].since < best->since))
				best = &s->conns[i];
	return best;
}

static void on_accept(struct http_server *s)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	struct conn *c = NULL;
	unsigned int i, k;
	int fd;

	/* A bounded number per wakeup, so that a flood of connections cannot starve the open ones. */
	for (k = 0; k < 64; k++) {
		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		s->stats.accepted++;
		c = NULL;
		for (i = 0; i < s->o.max_conns && !c; i++)
			if (s->conns[i].state == CONN_FREE)
				c = &s->conns[i];
		if (!c) {
			c = victim(s);
			if (!c) {
				s->stats.rejected++;
				count_status(s, 503);
				if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
					/* nothing more to do for it */
				}
				close(fd);
				continue;
			}
			s->stats.evicted++;
			conn_close(s, c);
		}
		memset(c, 0, offsetof(struct conn, in));
		c->fd = fd;
		c->state = CONN_READ;
		c->since = now_s();
		c->deadline = c->since + s->o.timeout;
		s->nopen++;
		/*
		 * A scraper sends its request with the handshake's last packet: read it now, so that it is
		 * answered before a flood of later connections could make it the oldest one still reading.
		 */
		on_read(s, c);
		if (c->state == CONN_WRITE)
			on_write(s, c);
	}
}

static void expire(struct http_server *s, double now)
{
	static const char late[] = "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	unsigned int i;

	for (i = 0; i < s->o.max_conns; i++) {
		struct conn *c = &s->conns[i];

		if (c->state == CONN_FREE || now < c->deadline)
			continue;
		if (c->state == CONN_READ) {
			s->stats.timeouts++;
			count_status(s, 408);
			if (send(c->fd, late, sizeof(late) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* closed below either way */
			}
		} else if (c->state == CONN_WRITE) {
			s->stats.timeouts++;
		}
		conn_close(s, c);
	}
}

int http_server_poll(struct http_server *s, int timeout_ms)
{
	double now = now_s(), next = now + (timeout_ms < 0 ? 3600.0 : timeout_ms / 1e3);
	unsigned int i, n = 0;
	int ret, wait_ms;

	s->pfd[n].fd = s->lfd;
	s->pfd[n].events = POLLIN;
	s->pidx[n++] = -1;
	for (i = 0; i < s->o.max_conns; i++) {
		struct conn *c = &s->conns[i];

		if (c->state == CONN_FREE)
			continue;
		s->pfd[n].fd = c->fd;
		s->pfd[n].events = c->state == CONN_WRITE ? POLLOUT : POLLIN;
		s->pidx[n++] = (int)i;
		if (c->deadline < next)
			next = c->deadline;
	}
	wait_ms = next > now ? (int)((next - now) * 1e3) + 1 : 0;
	ret = poll(s->pfd, n, wait_ms);
	if (ret < 0)
		return -errno;
	for (i = 0; ret > 0 && i < n; i++) {
		struct conn *c;

		if (!s->pfd[i].revents)
			continue;
		if (s->pidx[i] < 0) {
			on_accept(s);
			continue;
		}
		c = &s->conns[s->pidx[i]];
		if (c->state == CONN_FREE || c->fd != s->pfd[i].fd)
			continue; /* closed (evicted) during this round */
		if (c->state == CONN_WRITE && (s->pfd[i].revents & (POLLOUT | POLLERR | POLLHUP)))
			on_write(s, c);
		else if (s->pfd[i].revents & (POLLIN | POLLERR | POLLHUP))
			on_read(s, c);
		/* a complete request answered at once: try to write without another round */
		if (c->state == CONN_WRITE)
			on_write(s, c);
	}
	expire(s, now_s());
	return 0;
}
