// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/util: number, size and pid parsing. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "core/proc.h"
#include "core/util.h"

static void test_parse_u64(void)
{
	uint64_t v = 0;

	CHECK(parse_u64("10", 0, 100, &v) == 0 && v == 10, "got %lu", (unsigned long)v);
	CHECK(parse_u64("0x10", 0, 100, &v) == -EINVAL && parse_u64("0X1", 0, 100, &v) == -EINVAL, "hex refused");
	CHECK(parse_u64("", 0, 100, &v) == -EINVAL, "empty");
	CHECK(parse_u64("-1", 0, 100, &v) == -EINVAL, "negative");
	CHECK(parse_u64(" 1", 0, 100, &v) == -EINVAL, "leading space");
	CHECK(parse_u64("1x", 0, 100, &v) == -EINVAL, "junk");
	CHECK(parse_u64("101", 0, 100, &v) == -ERANGE, "above max");
	CHECK(parse_u64("0", 1, 100, &v) == -ERANGE, "below min");
	CHECK(parse_u64("99999999999999999999999", 0, UINT64_MAX, &v) == -ERANGE, "overflow");
	CHECK(parse_u64(NULL, 0, 1, &v) == -EINVAL, "NULL");
}

/* issue 51: a leading 0 is decimal everywhere ("010" was octal 8, "09" refused) */
static void test_parse_decimal(void)
{
	uint64_t v = 0;
	pid_t p = 0;

	CHECK(parse_u64("010", 0, 100, &v) == 0 && v == 10, "010: got %lu", (unsigned long)v);
	CHECK(parse_u64("09", 0, 100, &v) == 0 && v == 9, "09: got %lu", (unsigned long)v);
	CHECK(parse_u64("064", 0, 100, &v) == 0 && v == 64, "064: got %lu", (unsigned long)v);
	CHECK(parse_u64("00", 0, 100, &v) == 0 && v == 0, "00");
	CHECK(parse_size("010", UINT64_MAX, &v) == 0 && v == 10, "size 010: got %lu", (unsigned long)v);
	CHECK(parse_size("010K", UINT64_MAX, &v) == 0 && v == 10240, "size 010K: got %lu", (unsigned long)v);
	CHECK(parse_size("0x10", UINT64_MAX, &v) == -EINVAL && parse_size("0x1K", UINT64_MAX, &v) == -EINVAL,
	      "size hex refused");
	CHECK(parse_pid("010", false, &p) == 0 && p == 10, "pid 010: got %d", (int)p);
	CHECK(parse_pid("0x10", false, &p) == -EINVAL, "pid hex refused");
	CHECK(!strcmp(parse_why("0x10", -EINVAL, false), "numbers are decimal, not hexadecimal"), "why hex: %s",
	      parse_why("0x10", -EINVAL, false));
	CHECK(!strcmp(parse_why("1q", -EINVAL, false), "not a decimal whole number"), "why junk");
	CHECK(!strcmp(parse_why("9", -ERANGE, true), "out of range"), "why range");
}

static void test_parse_seconds(void)
{
	double v = -1;

	CHECK(parse_seconds("0.5", 0.1, 10, &v) == 0 && v == 0.5, "0.5");
	CHECK(parse_seconds("2", 0, 10, &v) == 0 && v == 2, "whole");
	CHECK(parse_seconds("0.05", 0.1, 10, &v) == -EINVAL, "below min");
	CHECK(parse_seconds("11", 0, 10, &v) == -EINVAL, "above max");
	CHECK(parse_seconds("nan", 0, 10, &v) == -EINVAL && parse_seconds("inf", 0, 1e300, &v) == -EINVAL, "not finite");
	CHECK(parse_seconds("1s", 0, 10, &v) == -EINVAL && parse_seconds("", 0, 10, &v) == -EINVAL, "junk, empty");
	CHECK(parse_seconds(NULL, 0, 10, &v) == -EINVAL, "NULL");
	CHECK(parse_seconds("02", 0, 10, &v) == 0 && v == 2, "leading zero");
	CHECK(parse_seconds(".5", 0, 10, &v) == 0 && v == 0.5 && parse_seconds("1e-3", 0, 10, &v) == 0, ".5, 1e-3");
	CHECK(parse_seconds("0x2", 0, 10, &v) == -EINVAL && parse_seconds("0x1p1", 0, 10, &v) == -EINVAL, "hex");
	CHECK(parse_seconds(" 2", 0, 10, &v) == -EINVAL && parse_seconds("+2", 0, 10, &v) == -EINVAL, "space, sign");
}

static void test_parse_size(void)
{
	uint64_t v = 0;

	CHECK(parse_size("4096", UINT64_MAX, &v) == 0 && v == 4096, "plain");
	CHECK(parse_size("64K", UINT64_MAX, &v) == 0 && v == 65536, "K");
	CHECK(parse_size("1m", UINT64_MAX, &v) == 0 && v == 1048576, "m");
	CHECK(parse_size("2GiB", UINT64_MAX, &v) == 0 && v == 2ULL << 30, "GiB");
	CHECK(parse_size("3TB", UINT64_MAX, &v) == 0 && v == 3ULL << 40, "TB");
	CHECK(parse_size("1Q", UINT64_MAX, &v) == -EINVAL, "bad suffix");
	CHECK(parse_size("1KX", UINT64_MAX, &v) == -EINVAL, "junk after suffix");
	CHECK(parse_size("K", UINT64_MAX, &v) == -EINVAL, "no digits");
	CHECK(parse_size("16777216T", UINT64_MAX, &v) == -ERANGE, "overflow by suffix");
	CHECK(parse_size("2K", 1024, &v) == -ERANGE, "above max");
}

static void test_parse_pid(void)
{
	char buf[32];
	pid_t p = 0;

	snprintf(buf, sizeof(buf), "%d", (int)getpid());
	CHECK(parse_pid(buf, true, &p) == 0 && p == getpid(), "self");
	CHECK(parse_pid("0", false, &p) == -ERANGE, "zero");
	CHECK(parse_pid("4194304", true, &p) == -ESRCH, "no such pid");
	CHECK(parse_pid("abc", false, &p) == -EINVAL, "word");
}

static void test_fmt_size(void)
{
	char b[32];

	CHECK(!strcmp(fmt_size(512, b, sizeof(b)), "512"), "%s", b);
	CHECK(!strcmp(fmt_size(65536, b, sizeof(b)), "64K"), "%s", b);
	CHECK(!strcmp(fmt_size(3 << 19, b, sizeof(b)), "1.5M"), "%s", b);
}

static void test_match_word(void)
{
	static const char *const words[] = { "set", "show", "unset", "gc", NULL };
	static const char *const cmds[] = { "quota", "query", "quotas" };

	CHECK(match_word("set", words, -1) == 0, "exact");
	CHECK(match_word("sh", words, -1) == 1, "unique prefix");
	CHECK(match_word("s", words, -1) == -2, "ambiguous");
	CHECK(match_word("x", words, -1) == -1, "unknown");
	CHECK(match_word("", words, -1) == -1, "empty");
	CHECK(match_word("setx", words, -1) == -1, "longer than a word");
	CHECK(match_word("quota", cmds, 3) == 0, "exact beats a longer word with the same prefix");
	CHECK(match_word("qu", cmds, 3) == -2, "ambiguous among three");
	CHECK(word_error("word", "s", words, -1, -2) == 2, "usage exit code");
}

static pthread_mutex_t tgid_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tgid_cv = PTHREAD_COND_INITIALIZER;
static pid_t tgid_tid;
static int tgid_done;

static void *tgid_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&tgid_mu);
	tgid_tid = gettid();
	pthread_cond_signal(&tgid_cv);
	while (!tgid_done)
		pthread_cond_wait(&tgid_cv, &tgid_mu);
	pthread_mutex_unlock(&tgid_mu);
	return NULL;
}

/* proc_tgid: a thread's process, a process itself, and the number back when /proc cannot tell */
static void test_proc_tgid(void)
{
	pthread_t t;

	CHECK(proc_tgid(getpid()) == getpid(), "a process is its own");
	CHECK(!pthread_create(&t, NULL, tgid_thread, NULL), "thread");
	pthread_mutex_lock(&tgid_mu);
	while (!tgid_tid)
		pthread_cond_wait(&tgid_cv, &tgid_mu);
	CHECK(tgid_tid != getpid() && proc_tgid(tgid_tid) == getpid(), "thread %d -> %d", (int)tgid_tid,
	      (int)proc_tgid(tgid_tid));
	tgid_done = 1;
	pthread_cond_broadcast(&tgid_cv);
	pthread_mutex_unlock(&tgid_mu);
	pthread_join(t, NULL);
	CHECK(proc_tgid(1 << 30) == 1 << 30, "no such process: the number itself");
}

int main(void)
{
	RUN(test_parse_u64);
	RUN(test_parse_decimal);
	RUN(test_parse_seconds);
	RUN(test_parse_size);
	RUN(test_parse_pid);
	RUN(test_fmt_size);
	RUN(test_match_word);
	RUN(test_proc_tgid);
	return unit_done();
}
