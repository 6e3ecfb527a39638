// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/out: text and JSON from one path; the streaming writer prints what json-c prints. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/out.h"
#include "unit.h"

static char *mem;
static size_t memlen;
static FILE *memf;

static void capture(bool json, bool pretty)
{
	free(mem);
	mem = NULL;
	memf = open_memstream(&mem, &memlen);
	out_init(memf, json, pretty);
}

static const char *captured(void)
{
	fflush(memf);
	return mem;
}

static void release(void)
{
	fclose(memf);
	free(mem);
	mem = NULL;
	out_init(NULL, false, false);
}

static const char *jc(struct json_object *o, bool pretty)
{
	int flags = pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;

	return json_object_to_json_string_ext(o, flags | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static void test_text_and_json_from_one_path(void)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		capture(pass, false);
		out_open_object(NULL);
		print_string(PRINT_ANY, "dev", "dev %s ", "rxe0");
		print_uint(PRINT_ANY, "lqpn", "lqpn %" PRIu64 " ", 17);
		print_int(PRINT_JSON, "pid", NULL, -1);
		print_text("only in text ");
		print_bool(PRINT_FP, NULL, "up %s", true);
		print_fixed(PRINT_ANY, "rate", " %.1f/s", 2.25, 2);
		print_nl();
		out_close_object();
		if (pass)
			CHECK(!strcmp(captured(), "{\"dev\":\"rxe0\",\"lqpn\":17,\"pid\":-1,\"rate\":2.25}\n"), "json: %s",
			      captured());
		else
			CHECK(!strcmp(captured(), "dev rxe0 lqpn 17 only in text up true 2.2/s\n"), "text: %s", captured());
		release();
	}
}

/* Build the same random tree through the writer and through json-c; compare the bytes. */
static unsigned int seed = 1;

static unsigned int rnd(unsigned int n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 16) % n;
}

static void random_string(char *s, size_t len)
{
	static const char pool[] = "ab/\\\"\n\t\x01\x1f\x7f\xc3\xa9 z_";
	size_t i, n = rnd((unsigned int)len);

	for (i = 0; i < n; i++)
		s[i] = pool[rnd(sizeof(pool) - 1)];
	s[n] = 0;
}

static struct json_object *random_value(const char *key, int depth)
{
	char s[16];
	unsigned int what = rnd(depth > 3 ? 6 : 8);

	switch (what) {
	case 0: {
		uint64_t v = (uint64_t)rnd(1000) * (rnd(2) ? 1 : 10000000000000ull);

		print_uint(PRINT_JSON, key, NULL, v);
		return json_object_new_uint64(v);
	}
	case 1: {
		int64_t v = -(int64_t)rnd(100000);

		print_int(PRINT_JSON, key, NULL, v);
		return json_object_new_int64(v);
	}
	case 2:
		random_string(s, sizeof(s));
		print_string(PRINT_JSON, key, NULL, s);
		return json_object_new_string(s);
	case 3: {
		bool b = rnd(2);

		print_bool(PRINT_JSON, key, NULL, b);
		return json_object_new_boolean(b);
	}
	case 4: {
		double v = rnd(100000) / 100.0;
		char t[32];

		print_fixed(PRINT_JSON, key, NULL, v, 2);
		snprintf(t, sizeof(t), "%.2f", v);
		return json_object_new_double_s(v, t);
	}
	case 5:
		if (rnd(2)) {
			/* a double as json-c prints it, with all its digits */
			double v = (double)rnd(1000000) / (1 + rnd(997)) * (rnd(2) ? 1 : 1e-7) * (rnd(3) ? 1 : -1);

			print_double(PRINT_JSON, key, NULL, v);
			return json_object_new_double(v);
		}
		print_null(PRINT_JSON, key, NULL);
		return NULL;
	case 6: {
		struct json_object *a = json_object_new_array();
		unsigned int i, n = rnd(4);

		out_open_array(key);
		for (i = 0; i < n; i++)
			json_object_array_add(a, random_value(NULL, depth + 1));
		out_close_array();
		return a;
	}
	default: {
		struct json_object *o = json_object_new_object();
		unsigned int i, n = rnd(5);
		char k[16];

		out_open_object(key);
		for (i = 0; i < n; i++) {
			snprintf(k, sizeof(k), "k%u", i);
			json_object_object_add(o, k, random_value(k, depth + 1));
		}
		out_close_object();
		return o;
	}
	}
}

static void test_matches_json_c(void)
{
	int i, bad = 0, pretty;

	for (pretty = 0; pretty < 2; pretty++) {
		for (i = 0; i < 2000; i++) {
			struct json_object *o = json_object_new_object();
			unsigned int k, n = rnd(6);
			char want[65536];

			capture(true, pretty);
			out_open_object(NULL);
			for (k = 0; k < n; k++) {
				char key[16];

				snprintf(key, sizeof(key), "key_%u", k);
				json_object_object_add(o, key, random_value(key, 1));
			}
			out_close_object();
			snprintf(want, sizeof(want), "%s\n", jc(o, pretty));
			if (strcmp(captured(), want) && bad++ < 3)
				printf("# pretty %d\n# want %s# got  %s", pretty, want, captured());
			json_object_put(o);
			release();
		}
	}
	CHECK(!bad, "%d of 4000 documents differ from json-c's", bad);
}

/* Each outermost object is one line, written when it closes; a discarded one never appears. */
static void test_stream_and_discard(void)
{
	capture(true, false);
	out_open_object(NULL);
	print_uint(PRINT_ANY, "n", "%" PRIu64, 1);
	CHECK(!captured() || !*captured(), "nothing is written before the document ends");
	out_close_object();
	out_open_object(NULL);
	print_uint(PRINT_ANY, "n", "%" PRIu64, 2);
	out_discard();
	out_open_array(NULL);
	out_close_array();
	CHECK(!strcmp(captured(), "{\"n\":1}\n[]\n"), "stream: %s", captured());
	CHECK(out_depth() == 0, "closed");
	release();
}

/* Deeper than the writer's stack: the excess is not written, the document stays well formed. */
static void test_too_deep(void)
{
	struct json_object *o;
	int i;

	capture(true, false);
	out_open_object(NULL);
	for (i = 0; i < 100; i++)
		out_open_array("a");
	print_uint(PRINT_JSON, NULL, NULL, 1);
	for (i = 0; i < 100; i++)
		out_close_array();
	out_close_object();
	o = json_tokener_parse(captured());
	CHECK(o != NULL, "well formed: %.80s", captured());
	json_object_put(o);
	release();
}

int main(void)
{
	RUN(test_text_and_json_from_one_path);
	RUN(test_matches_json_c);
	RUN(test_stream_and_discard);
	RUN(test_too_deep);
	return unit_done();
}
