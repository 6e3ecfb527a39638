// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/engines/policy: the node's container policy and what a container's limits resolve to. */
#include <string.h>

#include "engines/policy.h"
#include "unit.h"

static int parse(const char *text, struct policy *p, char *err, size_t errlen)
{
	return policy_parse(text, strlen(text), p, err, errlen);
}

static void test_parse_file(void)
{
	static struct policy p;
	const struct policy_budget *b;
	char err[256];
	int ret;

	ret = parse("# node policy\n"
		    "default qp=3 mr_bytes=8G   # every container\n"
		    "\n"
		    "ceiling qp=64,mr-bytes=64G\r\n"
		    "  budget small qp=2 cq=4\n"
		    "budget big.one qp=64 mr_bytes=unlimited", /* no newline at the end */
		    &p, err, sizeof(err));
	CHECK(ret == -EINVAL, "an unlimited budget is above a ceiling: %d %s", ret, err);
	CHECK(strstr(err, "line 6: budget big.one mr_bytes=unlimited is above the ceiling mr_bytes=68719476736 of line 4") != NULL, "%s", err);

	ret = parse("default qp=3 mr_bytes=8G\nceiling qp=64\nbudget small qp=2 cq=4\nbudget big.one qp=64 wr=128\n",
		    &p, err, sizeof(err));
	CHECK(ret == 0, "%s", err);
	CHECK(p.has_default && p.dflt.v[LEDGER_QP] == 3 && p.dflt.v[LEDGER_MR_BYTES] == 8ULL << 30 &&
		      p.dflt.set == ((1u << LEDGER_QP) | (1u << LEDGER_MR_BYTES)),
	      "default");
	CHECK(p.ceiling.set == 1u << LEDGER_QP && p.ceiling.v[LEDGER_QP] == 64, "ceiling");
	CHECK(p.nbudgets == 2, "%u budgets", p.nbudgets);
	b = policy_budget(&p, "small");
	CHECK(b && b->lim.v[LEDGER_QP] == 2 && b->lim.v[LEDGER_CQ] == 4, "budget small");
	b = policy_budget(&p, "big.one");
	CHECK(b && b->lim.v[LEDGER_WR] == 128, "budget big.one");
	CHECK(!policy_budget(&p, "smal"), "names match whole");

	ret = parse("", &p, err, sizeof(err));
	CHECK(ret == 0 && !p.has_default && !p.ceiling.set && !p.nbudgets, "an empty policy");
}

static void test_parse_errors(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "defaults qp=3\n", "line 1: unknown directive 'defaults'" },
		{ "\n\ndefault qpp=3\n", "line 3: unknown kind 'qpp'" },
		{ "default qp=3 qp=4\n", "line 1: qp given twice" },
		{ "default qp=3\ndefault cq=3\n", "line 2: a second default" },
		{ "ceiling qp=3\nceiling cq=3\n", "line 2: a second ceiling" },
		{ "default\n", "line 1: default without limits" },
		{ "budget\n", "line 1: budget without a NAME" },
		{ "budget a qp=1\nbudget a cq=1\n", "line 2: budget a named twice" },
		{ "budget 9a qp=1\n", "budget name '9a'" },
		{ "budget a- qp=1\n", "budget name 'a-'" },
		{ "budget a/b qp=1\n", "budget name 'a/b'" },
		{ "budget abcdefghijabcdefghijabcdefghijab qp=1\n", "longer than 31" },
		{ "default qp=-1\n", "qp: invalid value '-1'" },
		{ "default mr_bytes=8Q\n", "mr_bytes: invalid value '8Q'" },
		{ "default qp\n", "'qp': not KIND=VALUE" },
		{ "default qp=\n", "qp: an empty value" },
		{ "default qp=3\nceiling qp=2\n", "line 1: the default qp=3 is above the ceiling qp=2 of line 2" },
		{ "# x\nceiling qp=2\n\ndefault qp=unlimited\n", "line 4: the default qp=unlimited is above the ceiling qp=2 of line 2" },
		{ "default qp=3\0\n", "line 1: a NUL byte" },
		{ "default\xc2\xa0qp=3\n", "line 1, column 8: a no-break space (U+00A0): write a plain space" },
		{ "\ndefault qp=3 cq=\xe2\x80\x9c" "3\n", "line 2, column 17: a byte that is not ASCII (0xe2)" },
		{ "\xef\xbb\xbf\xef\xbb\xbf" "default qp=3\n", "line 1, column 1: a byte that is not ASCII (0xef)" },
	};
	static struct policy p;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i].text);
		int ret;

		if (strstr(bad[i].want, "NUL"))
			len += 2;
		ret = policy_parse(bad[i].text, len, &p, err, sizeof(err));
		CHECK(ret == -EINVAL && strstr(err, bad[i].want), "'%s': %d '%s' (want '%s')", bad[i].text, ret, err,
		      bad[i].want);
	}
}

static void test_budgets_bounded(void)
{
	static char text[POLICY_MAX_BUDGETS * 32 + 64];
	static struct policy p;
	char err[256];
	size_t at = 0;
	int i, ret;

	for (i = 0; i <= POLICY_MAX_BUDGETS; i++)
		at += snprintf(text + at, sizeof(text) - at, "budget b%d qp=%d\n", i, i);
	ret = parse(text, &p, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "more than 64 budgets"), "%d %s", ret, err);
}

static void test_limits_and_resolve(void)
{
	static struct policy p;
	struct policy_limits a, b;
	uint64_t out[LEDGER_NKINDS];
	char err[256], buf[256];
	int ret;

	ret = policy_limits_parse("qp=2,mr-bytes=1G cq=unlimited", &a, err, sizeof(err));
	CHECK(ret == 0 && a.v[LEDGER_QP] == 2 && a.v[LEDGER_MR_BYTES] == 1ULL << 30 && a.v[LEDGER_CQ] == LEDGER_UNLIMITED,
	      "%s", err);
	policy_limits_format(&a, buf, sizeof(buf));
	CHECK(!strcmp(buf, "cq=unlimited,qp=2,mr_bytes=1073741824"), "%s", buf);
	CHECK(policy_limits_parse(" , ", &b, err, sizeof(err)) == -EINVAL && strstr(err, "no limits"), "%s", err);

	ret = policy_limits_parse("qp=4,pd=1", &b, err, sizeof(err));
	CHECK(ret == 0, "%s", err);
	policy_limits_min(&a, &b);
	CHECK(a.v[LEDGER_QP] == 2 && a.v[LEDGER_PD] == 1 && a.v[LEDGER_CQ] == LEDGER_UNLIMITED, "smaller per kind");

	ret = parse("default qp=3 cq=8\nceiling qp=64 mr=100\n", &p, err, sizeof(err));
	CHECK(ret == 0, "%s", err);
	memset(&a, 0, sizeof(a));
	CHECK(policy_resolve(&p, &a, out), "the default limits");
	CHECK(out[LEDGER_QP] == 3 && out[LEDGER_CQ] == 8 && out[LEDGER_MR] == 100 && out[LEDGER_PD] == LEDGER_UNLIMITED,
	      "asked nothing: default, else ceiling, else unlimited");
	policy_limits_parse("qp=10,cq=unlimited", &a, err, sizeof(err));
	CHECK(policy_above_ceiling(&p, &a) == -1, "cq has no ceiling");
	policy_resolve(&p, &a, out);
	CHECK(out[LEDGER_QP] == 10 && out[LEDGER_CQ] == LEDGER_UNLIMITED && out[LEDGER_MR] == 100, "asked wins");
	policy_limits_parse("mr=unlimited", &a, err, sizeof(err));
	CHECK(policy_above_ceiling(&p, &a) == LEDGER_MR, "unlimited is above a ceiling");
	policy_resolve(&p, &a, out);
	CHECK(out[LEDGER_MR] == 100, "never above the ceiling");

	memset(&p, 0, sizeof(p));
	memset(&a, 0, sizeof(a));
	CHECK(!policy_resolve(&p, &a, out), "no policy, nothing asked: nothing limited");
}

/* issue 51: "ceiling qp=064" meant 52 (octal), "0x10" 16 */
static void test_decimal(void)
{
	static struct policy p;
	struct policy_limits a;
	char err[256];
	int ret;

	ret = parse("ceiling qp=064 mr_bytes=010G\ndefault qp=09\n", &p, err, sizeof(err));
	CHECK(ret == 0 && p.ceiling.v[LEDGER_QP] == 64 && p.ceiling.v[LEDGER_MR_BYTES] == 10ULL << 30 &&
		      p.dflt.v[LEDGER_QP] == 9,
	      "%d %s: qp %llu", ret, err, (unsigned long long)p.ceiling.v[LEDGER_QP]);
	/* issue 51: a UTF-8 byte order mark was "unknown directive '<BOM>ceiling'"; comments may be UTF-8 */
	ret = parse("\xef\xbb\xbf" "ceiling qp=64 # plafond \xc3\xa9lev\xc3\xa9\n", &p, err, sizeof(err));
	CHECK(ret == 0 && p.ceiling.v[LEDGER_QP] == 64, "BOM: %d %s", ret, err);
	ret = policy_limits_parse("qp=0x10", &a, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "qp: invalid value '0x10' (numbers are decimal, not hexadecimal"), "%s", err);
	ret = policy_limits_parse("mr_bytes=0x10", &a, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "mr_bytes: invalid value '0x10' (numbers are decimal"), "%s", err);
}

static void test_names(void)
{
	CHECK(policy_name_ok("qp2") && policy_name_ok("a") && policy_name_ok("A_b.c-9"), "good names");
	CHECK(!policy_name_ok("") && !policy_name_ok("2qp") && !policy_name_ok("a_") && !policy_name_ok("a b") &&
		      !policy_name_ok("a=b") && !policy_name_ok("abcdefghijabcdefghijabcdefghijab"),
	      "bad names");
	CHECK(policy_kind("mr-bytes", 8) == LEDGER_MR_BYTES && policy_kind("mr_bytes", 8) == LEDGER_MR_BYTES &&
		      policy_kind("q", 1) == -1 && policy_kind("qp", 2) == LEDGER_QP,
	      "kind names");
}

int main(void)
{
	RUN(test_parse_file);
	RUN(test_parse_errors);
	RUN(test_budgets_bounded);
	RUN(test_limits_and_resolve);
	RUN(test_decimal);
	RUN(test_names);
	return unit_done();
}
