// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/http's request parser: valid heads, every refusal, the caps, heads that arrive in pieces. */
#include <string.h>

#include "export/http.h"
#include "unit.h"

static int parse(const char *s, struct http_req *r)
{
	return http_parse(s, strlen(s), r);
}

static void test_valid(void)
{
	struct http_req r;
	const char *s = "GET /metrics HTTP/1.1\r\nHost: x:9476\r\nAccept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\n"
			"User-Agent: Prometheus/2.42.0\r\nX-Empty:\r\n\r\n";

	CHECK(parse(s, &r) == 200, "status");
	CHECK(http_method_is(&r, "GET") && !http_method_is(&r, "GE") && !http_method_is(&r, "GETX"), "method");
	CHECK(http_path_is(&r, "/metrics") && !http_path_is(&r, "/metric"), "path");
	CHECK(r.minor == 1 && r.nheaders == 4 && r.head_len == strlen(s), "minor %d headers %u len %zu", r.minor,
	      r.nheaders, r.head_len);
	CHECK(parse("GET /metrics?x=1&y HTTP/1.0\n\n", &r) == 200 && http_path_is(&r, "/metrics") && r.minor == 0,
	      "query and bare LF");
	CHECK(parse("\r\n\r\nHEAD / HTTP/1.1\r\n\r\n", &r) == 200 && http_method_is(&r, "HEAD") && http_path_is(&r, "/"),
	      "empty lines first");
	CHECK(parse("GET http://host:9476/metrics?a HTTP/1.1\r\n\r\n", &r) == 200 && http_path_is(&r, "/metrics"),
	      "absolute-form");
	CHECK(parse("GET HTTPS://host HTTP/1.1\r\n\r\n", &r) == 200 && http_path_is(&r, "/"), "absolute-form, no path");
	CHECK(parse("OPTIONS * HTTP/1.1\r\n\r\n", &r) == 200 && http_path_is(&r, "*"), "asterisk-form");
	CHECK(parse("GET / HTTP/1.9\r\n\r\n", &r) == 200 && r.minor == 1, "1.9 answered as 1.1");
	CHECK(parse("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", &r) == 200 &&
		      http_method_is(&r, "POST") && r.head_len == strlen("POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n"),
	      "a body is not part of the head");
	CHECK(parse("GET / HTTP/1.1\r\nX: caf\xc3\xa9\t\x80\r\n\r\n", &r) == 200, "obs-text and tab in a value");
}

static void test_incomplete(void)
{
	const char *s = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_req r;
	size_t n;

	/* every proper prefix needs more, and a valid head never turns invalid on the way */
	for (n = 0; n < strlen(s); n++)
		CHECK(http_parse(s, n, &r) == HTTP_MORE, "prefix of %zu: %d", n, http_parse(s, n, &r));
	CHECK(http_parse(s, strlen(s), &r) == 200, "whole");
}

static void test_refused(void)
{
	static const struct {
		const char *s;
		int status;
	} cases[] = {
		{ "garbage\r\n\r\n", 400 },
		{ "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400 }, /* a TLS client hello, at once */
		{ "GET\r\n\r\n", 400 },
		{ "GET /\r\n\r\n", 400 }, /* HTTP/0.9 */
		{ "GET  / HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1 \r\n\r\n", 400 },
		{ "GET / http/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.\r\n\r\n", 400 },
		{ "GET / HTTP/11.1\r\n\r\n", 400 },
		{ "GET metrics HTTP/1.1\r\n\r\n", 400 },
		{ "GET ftp://x/ HTTP/1.1\r\n\r\n", 400 },
		{ "G(T / HTTP/1.1\r\n\r\n", 400 },
		{ "GET /\x7f HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\rX\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\n: x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400 },
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/0.9\r\n\r\n", 505 },
		{ "AVERYVERYVERYVERYVERYLONGMETHODNAMEX / HTTP/1.1\r\n\r\n", 400 },
		/* malformed parts are refused before the line is complete */
		{ "GET / HTTP/1.1\r\nBad Header", 400 },
		{ "GET /x Z", 400 },
	};
	struct http_req r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = parse(cases[i].s, &r);

		CHECK(st == cases[i].status, "case %zu: %d, want %d", i, st, cases[i].status);
	}
}

static void test_caps(void)
{
	static char buf[HTTP_MAX_HEAD * 2];
	struct http_req r;
	size_t n;
	int i;

	/* a request line that fills the cap */
	memcpy(buf, "GET /", 5);
	memset(buf + 5, 'a', sizeof(buf) - 5);
	CHECK(http_parse(buf, HTTP_MAX_HEAD - 1, &r) == HTTP_MORE, "below the cap");
	CHECK(http_parse(buf, HTTP_MAX_HEAD, &r) == 414, "at the cap");
	CHECK(http_parse(buf, sizeof(buf), &r) == 414, "above the cap");
	/* headers that fill it */
	n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nX: ");
	memset(buf + n, 'b', sizeof(buf) - n);
	CHECK(http_parse(buf, HTTP_MAX_HEAD, &r) == 431, "one huge header");
	/* a complete head one byte too long */
	n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nX: ");
	memset(buf + n, 'c', HTTP_MAX_HEAD - n - 4);
	memcpy(buf + HTTP_MAX_HEAD - 4, "\r\n\r\n", 4);
	CHECK(http_parse(buf, HTTP_MAX_HEAD, &r) == 200, "exactly the cap");
	memmove(buf + n + 1, buf + n, HTTP_MAX_HEAD - n);
	CHECK(http_parse(buf, HTTP_MAX_HEAD + 1, &r) == 431, "one byte over");
	/* the number of header lines */
	n = (size_t)snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\n");
	for (i = 0; i < HTTP_MAX_HEADERS; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "H%d: v\r\n", i);
	memcpy(buf + n, "\r\n", 3);
	CHECK(http_parse(buf, n + 2, &r) == 200 && r.nheaders == HTTP_MAX_HEADERS, "%d headers", HTTP_MAX_HEADERS);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "H: v\r\n\r\n");
	CHECK(http_parse(buf, n, &r) == 431, "one header more");
}

static void test_reason(void)
{
	CHECK(!strcmp(http_reason(431), "Request Header Fields Too Large"), "431");
	CHECK(!strcmp(http_reason(405), "Method Not Allowed"), "405");
	CHECK(!strcmp(http_reason(299), "Error"), "unknown");
}

int main(void)
{
	RUN(test_valid);
	RUN(test_incomplete);
	RUN(test_refused);
	RUN(test_caps);
	RUN(test_reason);
	return unit_done();
}
