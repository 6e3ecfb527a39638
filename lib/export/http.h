/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A small HTTP/1.x server for exporters: a strict request parser and one poll loop with bounded connections. */
#ifndef RDMACTL_HTTP_H
#define RDMACTL_HTTP_H

/*
 * Built to face a network it does not trust, and nothing more: one request per connection (every response
 * says "Connection: close"), no request bodies, no threads. The request line and headers together are
 * capped at HTTP_MAX_HEAD bytes and HTTP_MAX_HEADERS lines; a connection gets `timeout` seconds to send
 * its request and as long again to take the response, then it is closed (slowloris, slow readers); at most
 * max_conns connections are open, and a new one evicts the oldest that has still not sent a whole request.
 * Every answer is written without blocking; after it the connection is half-closed and drained for a
 * moment, so that a client still sending (a POST body, a huge header) reads the answer instead of a reset.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEAD 8192   /* request line + headers + the empty line */
#define HTTP_MAX_HEADERS 64
#define HTTP_MAX_CONNS 1024  /* upper bound of max_conns */

/* A parsed request head; the pointers point into the parsed buffer. */
struct http_req {
	const char *method;
	size_t method_len;
	const char *path;	/* the target's path: "/metrics" of "/metrics?x=1" or of "http://host/metrics" */
	size_t path_len;
	int minor;		/* HTTP/1.minor */
	unsigned int nheaders;
	size_t head_len;	/* bytes up to and including the empty line */
};

/* http_parse() result when the head is not complete yet (and may still become a valid one). */
#define HTTP_MORE 0

/*
 * Parse a request head from buf[0..len). Returns HTTP_MORE when more bytes are needed, 200 when the head is
 * complete and valid (req filled), else the status to answer with: 400 malformed (bad characters, bare CR,
 * header continuation lines, no path), 414 request line longer than HTTP_MAX_HEAD, 431 headers beyond
 * HTTP_MAX_HEAD or HTTP_MAX_HEADERS, 505 an HTTP version other than 1.0/1.1. Lines end in CRLF or LF;
 * empty lines before the request line are skipped. A malformed line is reported as soon as it is seen,
 * complete or not. Never reads outside buf[0..len).
 */
int http_parse(const char *buf, size_t len, struct http_req *req);

/* True when the request's method is m (case-sensitive, as methods are). */
bool http_method_is(const struct http_req *req, const char *m);
/* True when the request's path is p. */
bool http_path_is(const struct http_req *req, const char *p);

/* "OK", "Not Found"...; "Error" for codes it does not know. */
const char *http_reason(int status);

/* What a handler answers. body must stay valid until the handler is called again or the server freed. */
struct http_response {
	int status;
	const char *content_type;	/* NULL: no body headers beyond Content-Length */
	const char *allow;		/* for 405: the Allow header */
	const char *body;
	size_t body_len;
	bool head_only;			/* HEAD: headers (with the body's length) and no body */
};

typedef void (*http_handler)(const struct http_req *req, struct http_response *resp, void *arg);

struct http_opts {
	unsigned int max_conns;	/* 1..HTTP_MAX_CONNS */
	double timeout;		/* seconds to send a request, and again to read the response */
};

/* Counters since the server started (exported as metrics by the caller). */
struct http_stats {
	uint64_t accepted;
	uint64_t timeouts;	/* closed for not sending a request (or not reading the answer) in time */
	uint64_t evicted;	/* closed to make room for a new connection */
	uint64_t rejected;	/* answered 503 at once: no room at all */
	uint64_t responses[8];	/* by status: see http_stat_codes */
};
/* The statuses http_stats.responses counts, in order; others count in the last one ("other"). */
extern const int http_stat_codes[8];

/*
 * Listen on "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (every address, IPv6 and IPv4 when the host has IPv6).
 * PORT 0 picks a free port: http_local_addr() tells which. 0, -EINVAL (bad syntax; why in err) or -errno
 * of getaddrinfo/socket/bind/listen (why in err).
 */
int http_listen(const char *addr, int *fd, char *err, size_t errlen);
/* The address a listening socket is bound to, as "ADDR:PORT" or "[V6]:PORT". */
void http_local_addr(int fd, char *buf, size_t len);

struct http_server;

/* Takes over listen_fd (closed by http_server_free). 0, -EINVAL, -ENOMEM. */
int http_server_new(int listen_fd, const struct http_opts *o, http_handler h, void *arg, struct http_server **out);
void http_server_free(struct http_server *s);
/*
 * Wait up to timeout_ms for activity, then serve what is ready: accept, read, call the handler on each
 * complete request, write, close. 0, or -EINTR when a signal came (the caller checks its flag), or -errno.
 */
int http_server_poll(struct http_server *s, int timeout_ms);
const struct http_stats *http_server_stats(const struct http_server *s);
/* Open connections now. */
unsigned int http_server_conns(const struct http_server *s);

#endif
