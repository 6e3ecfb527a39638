// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/pp: the ibv_rc_pingpong wire message, MTU mapping, latency percentiles. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "pingpong/pp.h"
#include "unit.h"

static void test_wire_format(void)
{
	struct pp_dest d = { .lid = 0x12, .qpn = 0x11, .psn = 0xabcdef }, back;
	const char *want = "0012:000011:abcdef:00000000000000000000ffffc0000201";
	char msg[PP_MSG_LEN];

	inet_pton(AF_INET6, "::ffff:192.0.2.1", d.gid);
	memset(msg, 'x', sizeof(msg));
	pp_wire_format(&d, msg);
	/* 51 characters and a NUL: exactly what ibv_rc_pingpong writes and reads. */
	CHECK(PP_MSG_LEN == sizeof("0000:000000:000000:00000000000000000000000000000000"), "length");
	CHECK(!strcmp(msg, want), "got '%s'", msg);
	CHECK(msg[PP_MSG_LEN - 1] == '\0', "NUL terminated");
	CHECK(pp_wire_parse(msg, sizeof(msg), &back) == 0, "parse back");
	CHECK(back.lid == d.lid && back.qpn == d.qpn && back.psn == d.psn && !memcmp(back.gid, d.gid, 16),
	      "round trip");

	/* Fields wider than the format are masked, not overflowed into the next one. */
	d.qpn = 0x1000011;
	pp_wire_format(&d, msg);
	CHECK(!strncmp(msg, "0012:000011:", 12), "masked '%s'", msg);
}

#define LL "0000:00001c:b7e16a:fe80000000000000b879effffee78fb3"
#define P(s) pp_wire_parse(s, sizeof(s), &d)

static void test_wire_parse(void)
{
	struct pp_dest d;
	char msg[PP_MSG_LEN];

	/* A link-local GID, as ibv_rc_pingpong -g 0 sends it. */
	CHECK(pp_wire_parse(LL, sizeof(LL), &d) == 0, "ll");
	CHECK(d.qpn == 0x1c && d.psn == 0xb7e16a && d.gid[0] == 0xfe && d.gid[1] == 0x80 && d.gid[15] == 0xb3,
	      "ll fields");
	/* Without NUL (a peer that sends 51 bytes) */
	memcpy(msg, "0000:000001:000002:00000000000000000000000000000000", 51);
	CHECK(pp_wire_parse(msg, 51, &d) == 0 && d.qpn == 1 && d.psn == 2, "no NUL");
	CHECK(P("done") == -EPROTO, "done");
	CHECK(pp_wire_parse("", 0, &d) == -EPROTO, "empty");
	CHECK(P("0000:000001:000002:0000") == -EPROTO, "short GID");
	CHECK(P("0000:000001:000002:0000000000000000000000000000000g") == -EPROTO, "bad hex");
	CHECK(P("00000:000001:000002:000000000000000000000000000000") == -EPROTO, "wide LID");
	CHECK(P("0000-000001:000002:00000000000000000000000000000000") == -EPROTO, "sep");
	CHECK(P("0000:000001:000002:000000000000000000000000000000000") == -EPROTO, "long GID");
	memset(msg, 'f', sizeof(msg));
	CHECK(pp_wire_parse(msg, sizeof(msg), &d) == -EPROTO, "garbage");
}

static void test_mtu(void)
{
	unsigned int m;

	for (m = 256; m <= 4096; m *= 2)
		CHECK(pp_mtu_from_enum(pp_mtu_to_enum(m)) == m, "mtu %u", m);
	CHECK(pp_mtu_to_enum(1024) == 3, "IBV_MTU_1024 is 3");
	CHECK(pp_mtu_to_enum(1000) == -EINVAL, "1000");
	CHECK(pp_mtu_to_enum(8192) == -EINVAL, "8192");
	CHECK(pp_mtu_from_enum(0) == 0 && pp_mtu_from_enum(6) == 0, "out of range enum");
}

static void test_stats(void)
{
	double v[1000];
	struct pp_stats s;
	size_t i;

	/* 1..1000 shuffled: nearest-rank percentiles are exact values of the sample. */
	for (i = 0; i < 1000; i++)
		v[i] = (double)((i * 7919) % 1000 + 1);
	pp_stats_compute(v, 1000, &s);
	CHECK(s.min == 1 && s.max == 1000, "min %f max %f", s.min, s.max);
	CHECK(s.avg == 500.5, "avg %f", s.avg);
	CHECK(s.p50 == 500, "p50 %f", s.p50);
	CHECK(s.p99 == 990, "p99 %f", s.p99);
	CHECK(s.p999 == 999, "p99.9 %f", s.p999);

	v[0] = 42;
	pp_stats_compute(v, 1, &s);
	CHECK(s.min == 42 && s.p50 == 42 && s.p999 == 42 && s.max == 42, "one sample");
	pp_stats_compute(v, 0, &s);
	CHECK(s.min == 0 && s.max == 0 && s.avg == 0, "no samples");
}

int main(void)
{
	RUN(test_wire_format);
	RUN(test_wire_parse);
	RUN(test_mtu);
	RUN(test_stats);
	return unit_done();
}
