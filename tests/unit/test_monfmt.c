// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/monfmt: monitor events through the output layer, against json-c's rendition. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "monitor/monfmt.h"
#include "core/out.h"
#include "unit.h"

/* The device name the monitor gives an event (from its index): up to MON_DEV_LEN - 1 bytes. */
static char dev[MON_DEV_LEN] = "rxe0";

/* The event as json-c renders the keys monitor's man page promises: the reference the writer must equal. */
static struct json_object *ref_object(const struct mon_event *e, uint64_t rt)
{
	struct json_object *j = json_object_new_object();
	char tbuf[MON_TIME_LEN];
	const char *type = mon_type_name(e->type);

	json_object_object_add(j, "time", json_object_new_string(mon_time_iso(rt, tbuf, sizeof(tbuf))));
	json_object_object_add(j, "time_ns", json_object_new_uint64(rt));
	json_object_object_add(j, "event", json_object_new_string(mon_op_name(e->op)));
	json_object_object_add(j, "type", json_object_new_string(type ? type : "?"));
	json_object_object_add(j, "pid", json_object_new_int((int)e->tgid));
	json_object_object_add(j, "tid", json_object_new_int((int)e->tid));
	json_object_object_add(j, "comm", json_object_new_string_len(e->comm, (int)strnlen(e->comm, MON_COMM_LEN)));
	json_object_object_add(j, "user", json_object_new_boolean(e->user));
	json_object_object_add(j, "dev", json_object_new_string(dev));
	json_object_object_add(j, "dev_index", json_object_new_int((int)e->dev_index));
	json_object_object_add(j, "id", json_object_new_int64(e->id));
	if (e->type == RESTRACK_MR)
		json_object_object_add(j, "mr_len", json_object_new_uint64(e->mr_len));
	json_object_object_add(j, "context_pid", json_object_new_int((int)e->cur_tgid));
	json_object_object_add(j, "hook", json_object_new_string(mon_hook_name(e->hook)));
	return j;
}

static char *mem;
static size_t memlen;

/* mon_event_print() of e at rt into buf (JSON or text, pretty or not), as the monitor prints it. */
static const char *printed(const struct mon_event *e, uint64_t rt, bool json, bool pretty, bool verbose)
{
	FILE *f = open_memstream(&mem, &memlen);

	out_init(f, json, pretty);
	mon_event_print(e, dev, rt, verbose);
	fclose(f);
	out_init(NULL, false, false);
	return mem;
}

/* The writer's rendition of e at rt equals json-c's, plain and pretty; 1 when they are byte for byte. */
static int same(const struct mon_event *e, uint64_t rt)
{
	struct json_object *j = ref_object(e, rt);
	int pretty, ok = 1;

	for (pretty = 0; pretty < 2; pretty++) {
		int flags = pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;
		const char *ref = json_object_to_json_string_ext(j, flags | JSON_C_TO_STRING_NOSLASHESCAPE);
		const char *got = printed(e, rt, true, pretty, false);

		if (strlen(got) != strlen(ref) + 1 || strncmp(got, ref, strlen(ref)) || got[strlen(ref)] != '\n') {
			printf("# json-c: %s\n# writer: %s", ref, got);
			ok = 0;
		}
		free(mem);
		mem = NULL;
	}
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

	/* 2026-01-02T03:04:05.000006Z */
	CHECK(!strcmp(printed(&e, 1767323045000006789ULL, true, false, false),
		      "{\"time\":\"2026-01-02T03:04:05.000006Z\",\"time_ns\":1767323045000006789,"
		      "\"event\":\"create\",\"type\":\"qp\",\"pid\":4242,\"tid\":4243,\"comm\":\"ibv_rc_pingpong\","
		      "\"user\":true,\"dev\":\"rxe0\",\"dev_index\":3,\"id\":17,\"context_pid\":4242,\"hook\":\"add\"}\n"),
	      "%s", mem);
	free(mem);
	CHECK(same(&e, 1767323045000006789ULL), "qp create");
	/* the text line (TZ=UTC): time, pid, comm, op, type, dev, id, detail */
	CHECK(!strcmp(printed(&e, 1767323045000006789ULL, false, false, false),
		      "03:04:05.000006    4242 ibv_rc_pingpong create   qp      rxe0           17  tid 4243\n"),
	      "[%s]", mem);
	free(mem);
	e.type = RESTRACK_MR;
	e.user = 0;
	e.mr_len = 65536;
	CHECK(!strcmp(printed(&e, 1767323045000006789ULL, false, false, true),
		      "03:04:05.000006    4242 ibv_rc_pingpong create   mr      rxe0           17  kernel len 64K hook add "
		      "ctx 4242\n"),
	      "[%s]", mem);
	free(mem);
	mem = NULL;
}

static void test_variants_match_json_c(void)
{
	struct mon_event e = qp_event();

	/* an MR destroy of a kernel object, with its length */
	e.op = MON_OP_DESTROY;
	e.type = 4;
	e.user = 0;
	e.mr_len = 1ULL << 40;
	e.hook = MON_HOOK_COMMIT_DEL;
	strcpy(e.comm, "rdma_cm");
	CHECK(same(&e, 0), "mr destroy at time 0");
	/* every byte that needs escaping, in comm (full length, no terminator) and in the longest dev */
	memcpy(e.comm, "a\"b\\c/d\ne\tf\x01\x1f\x7f\xc3\xa9", MON_COMM_LEN);
	memset(dev, '\b', sizeof(dev) - 1);
	dev[10] = '\f';
	dev[11] = '\r';
	CHECK(same(&e, UINT64_MAX), "escapes");
	/* numbers at their limits: pid/tid/dev_index print as json-c's int does */
	e.tgid = UINT32_MAX;
	e.tid = 0x80000000u;
	e.cur_tgid = 0;
	e.dev_index = UINT32_MAX;
	e.id = UINT32_MAX;
	e.mr_len = UINT64_MAX;
	CHECK(same(&e, 999), "limits");
	/* unknown type and hook: "?" (the BPF side never sends them) */
	e.type = 200;
	e.hook = 77;
	e.op = 9;
	CHECK(same(&e, 1), "unknown enums");
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
		if (!same(&e, ((uint64_t)rand_r(&seed) << 31) ^ (uint64_t)rand_r(&seed)) && ++bad > 3)
			break;
	}
	CHECK(!bad, "%u mismatches", bad);
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	RUN(test_known_line);
	RUN(test_variants_match_json_c);
	RUN(test_time);
	RUN(test_names);
	RUN(test_random);
	return unit_done();
}
