// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/monfmt: the hand-written JSON of monitor events against json-c's rendition. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monfmt.h"
#include "unit.h"

#define FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* The device name the monitor gives an event (from its index): up to MON_DEV_LEN - 1 bytes. */
static char dev[MON_DEV_LEN] = "rxe0";

/* Both renditions of e at rt; 1 when they are byte for byte the same. */
static int same(const struct mon_event *e, uint64_t rt, char *fast, size_t len)
{
	struct json_object *j = mon_event_json_object(e, dev, rt);
	const char *ref = json_object_to_json_string_ext(j, FLAGS);
	int n = mon_event_json(e, dev, rt, fast, len), ok;

	ok = n >= 0 && (size_t)n == strlen(ref) && !strcmp(fast, ref);
	if (!ok)
		printf("# json-c: %s\n# fast:   %s\n", ref, n >= 0 ? fast : "(error)");
	json_object_put(j);
	return ok;
}

static struct mon_event qp_event(void)
{
	struct mon_event e;

	memset(&e, 0, sizeof(e));
	e.op = MON_OP_CREATE;
	e.type = 2;
	e.tgid = 4242;
	e.tid = 4243;
	e.cur_tgid = 4242;
	e.id = 17;
	e.dev_index = 3;
	e.user = 1;
	e.hook = MON_HOOK_ADD;
	strcpy(e.comm, "ibv_rc_pingpong");
	strcpy(dev, "rxe0");
	return e;
}

static void test_known_line(void)
{
	struct mon_event e = qp_event();
	char buf[MON_JSON_LEN];
	int n;

	/* 2026-01-02T03:04:05.000006Z */
	n = mon_event_json(&e, dev, 1767323045000006789ULL, buf, sizeof(buf));
	CHECK(n == (int)strlen(buf), "n %d", n);
	CHECK(!strcmp(buf, "{\"time\":\"2026-01-02T03:04:05.000006Z\",\"time_ns\":1767323045000006789,"
			   "\"event\":\"create\",\"type\":\"qp\",\"pid\":4242,\"tid\":4243,\"comm\":\"ibv_rc_pingpong\","
			   "\"user\":true,\"dev\":\"rxe0\",\"dev_index\":3,\"id\":17,\"context_pid\":4242,\"hook\":\"add\"}"),
	      "%s", buf);
	CHECK(same(&e, 1767323045000006789ULL, buf, sizeof(buf)), "qp create");
}

static void test_variants_match_json_c(void)
{
	struct mon_event e = qp_event();
	char buf[MON_JSON_LEN];

	/* an MR destroy of a kernel object, with its length */
	e.op = MON_OP_DESTROY;
	e.type = 4;
	e.user = 0;
	e.mr_len = 1ULL << 40;
	e.hook = MON_HOOK_COMMIT_DEL;
	strcpy(e.comm, "rdma_cm");
	CHECK(same(&e, 0, buf, sizeof(buf)), "mr destroy at time 0");
	/* every byte that needs escaping, in comm (full length, no terminator) and in the longest dev */
	memcpy(e.comm, "a\"b\\c/d\ne\tf\x01\x1f\x7f\xc3\xa9", MON_COMM_LEN);
	memset(dev, '\b', sizeof(dev) - 1);
	dev[10] = '\f';
	dev[11] = '\r';
	CHECK(same(&e, UINT64_MAX, buf, sizeof(buf)), "escapes");
	/* numbers at their limits: pid/tid/dev_index print as json-c's int does */
	e.tgid = UINT32_MAX;
	e.tid = 0x80000000u;
	e.cur_tgid = 0;
	e.dev_index = UINT32_MAX;
	e.id = UINT32_MAX;
	e.mr_len = UINT64_MAX;
	CHECK(same(&e, 999, buf, sizeof(buf)), "limits");
	/* unknown type and hook: "?" (the BPF side never sends them) */
	e.type = 200;
	e.hook = 77;
	e.op = 9;
	CHECK(same(&e, 1, buf, sizeof(buf)), "unknown enums");
}

static void test_worst_case_fits(void)
{
	struct mon_event e = qp_event();
	char buf[MON_JSON_LEN];
	int n;

	e.type = 4;
	e.mr_len = UINT64_MAX;
	memset(e.comm, 1, sizeof(e.comm));
	memset(dev, 2, sizeof(dev) - 1);
	e.tgid = e.tid = e.cur_tgid = 0x80000000u;
	n = mon_event_json(&e, dev, UINT64_MAX, buf, sizeof(buf));
	CHECK(n > 0 && n < MON_JSON_LEN, "n %d", n);
	CHECK(same(&e, UINT64_MAX, buf, sizeof(buf)), "worst case");
}

static void test_short_buffer(void)
{
	struct mon_event e = qp_event();
	char full[MON_JSON_LEN], small[MON_JSON_LEN];
	int n, m;
	size_t len;

	n = mon_event_json(&e, dev, 123456789, full, sizeof(full));
	CHECK(n > 0, "n %d", n);
	/* every length up to the exact need fails cleanly and never writes past len */
	for (len = 0; len <= (size_t)n; len++) {
		memset(small, 'X', sizeof(small));
		m = mon_event_json(&e, dev, 123456789, small, len);
		CHECK(m == -ENOSPC, "len %zu: %d", len, m);
		CHECK(small[len] == 'X', "len %zu: wrote past the end", len);
	}
	m = mon_event_json(&e, dev, 123456789, small, n + 1);
	CHECK(m == n && !strcmp(small, full), "len n+1: %d", m);
}

static void test_time(void)
{
	char buf[MON_TIME_LEN], tiny[8];

	CHECK(!strcmp(mon_time_iso(0, buf, sizeof(buf)), "1970-01-01T00:00:00.000000Z"), "%s", buf);
	CHECK(!strcmp(mon_time_iso(1767323045999999999ULL, buf, sizeof(buf)), "2026-01-02T03:04:05.999999Z"), "%s", buf);
	/* same second from the cache, other microseconds */
	CHECK(!strcmp(mon_time_iso(1767323045000001000ULL, buf, sizeof(buf)), "2026-01-02T03:04:05.000001Z"), "%s", buf);
	CHECK(!strcmp(mon_time_iso(1767323046000000000ULL, buf, sizeof(buf)), "2026-01-02T03:04:06.000000Z"), "%s", buf);
	CHECK(mon_time_iso(0, tiny, sizeof(tiny))[0] == 0, "too small: empty");
}

static void test_names(void)
{
	CHECK(!strcmp(mon_type_name(0), "pd") && !strcmp(mon_type_name(7), "srq") && !mon_type_name(8), "types");
	CHECK(!strcmp(mon_op_name(MON_OP_CREATE), "create") && !strcmp(mon_op_name(MON_OP_DESTROY), "destroy"), "ops");
	CHECK(!strcmp(mon_hook_name(MON_HOOK_COMMIT_DEL), "commit_del") && !strcmp(mon_hook_name(4), "?"), "hooks");
}

/* Random events: the two renditions never differ. */
static void test_random(void)
{
	char buf[MON_JSON_LEN];
	struct mon_event e;
	unsigned int seed = 12345, bad = 0;
	size_t k;
	int i;

	for (i = 0; i < 20000; i++) {
		for (k = 0; k < sizeof(e); k++)
			((unsigned char *)&e)[k] = (unsigned char)rand_r(&seed);
		e.type %= 10;
		e.hook %= 5;
		e.op = 1 + e.op % 2;
		if (!same(&e, ((uint64_t)rand_r(&seed) << 31) ^ (uint64_t)rand_r(&seed), buf, sizeof(buf)) && ++bad > 3)
			break;
	}
	CHECK(!bad, "%u mismatches", bad);
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	RUN(test_known_line);
	RUN(test_variants_match_json_c);
	RUN(test_worst_case_fits);
	RUN(test_short_buffer);
	RUN(test_time);
	RUN(test_names);
	RUN(test_random);
	return unit_done();
}
