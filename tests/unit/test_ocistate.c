// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/engines/ocistate: the OCI state a hook reads, its rdmactl.io/ annotations and the pod's identity. */
#include <stdio.h>
#include <string.h>

#include "engines/ocistate.h"
#include "unit.h"

static int parse(const char *text, struct ocistate *st, char *err, size_t errlen)
{
	return ocistate_parse(text, strlen(text), st, err, errlen);
}

/* A string of n copies of c (n < sizeof buf). */
static const char *rep(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

static void test_fields(void)
{
	struct ocistate st;
	char err[256];
	int ret;

	ret = parse("{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":4242,\"bundle\":\"/b\","
		    "\"annotations\":{\"io.container.manager\":\"libpod\",\"rdmactl.io/max-qp\":\"64\"}}",
		    &st, err, sizeof(err));
	CHECK(ret == 0, "%s", err);
	CHECK(!strcmp(st.id, "c1") && !strcmp(st.status, "creating") && st.pid == 4242, "%s %s %d", st.id, st.status,
	      (int)st.pid);
	CHECK(st.nann == 1 && !strcmp(st.ann[0].key, "rdmactl.io/max-qp") && !strcmp(st.ann[0].value, "64"), "%u",
	      st.nann);
	CHECK(!st.pod.name[0] && !st.pod.ns[0] && !st.pod.uid[0], "no pod: %s/%s %s", st.pod.ns, st.pod.name,
	      st.pod.uid);
}

/* containerd's CRI and CRI-O name the pod under their own keys; both land in the same fields. */
static void test_pod_keys(void)
{
	static const char *const states[] = {
		"{\"id\":\"c1\",\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
		"\"io.kubernetes.cri.sandbox-name\":\"web-0\",\"io.kubernetes.cri.sandbox-namespace\":\"team-a\","
		"\"io.kubernetes.cri.sandbox-uid\":\"0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11\",\"rdmactl.io/max-qp\":\"2\"}}",
		"{\"id\":\"c1\",\"annotations\":{\"io.kubernetes.pod.name\":\"web-0\",\"io.kubernetes.pod.namespace\":"
		"\"team-a\",\"io.kubernetes.pod.uid\":\"0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11\","
		"\"io.kubernetes.container.name\":\"main\",\"rdmactl.io/max-qp\":\"2\"}}",
		/* both, agreeing */
		"{\"id\":\"c1\",\"annotations\":{\"io.kubernetes.pod.name\":\"web-0\",\"io.kubernetes.cri.sandbox-name\":"
		"\"web-0\",\"io.kubernetes.cri.sandbox-namespace\":\"team-a\",\"io.kubernetes.pod.namespace\":\"team-a\","
		"\"io.kubernetes.pod.uid\":\"0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11\",\"rdmactl.io/max-qp\":\"2\","
		"\"io.kubernetes.cri.sandbox-uid\":\"0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11\"}}",
	};
	struct ocistate st;
	char err[256];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		ret = parse(states[i], &st, err, sizeof(err));
		CHECK(ret == 0, "state %zu: %s", i, err);
		CHECK(!strcmp(st.pod.name, "web-0") && !strcmp(st.pod.ns, "team-a") &&
			      !strcmp(st.pod.uid, "0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11"),
		      "state %zu: '%s' '%s' '%s'", i, st.pod.ns, st.pod.name, st.pod.uid);
		CHECK(st.nann == 1, "state %zu: the pod's keys are not rdmactl.io/ annotations: %u", i, st.nann);
	}
	/* a part of it only: the rest stays "" */
	ret = parse("{\"annotations\":{\"io.kubernetes.pod.namespace\":\"team-a\"}}", &st, err, sizeof(err));
	CHECK(ret == 0 && !strcmp(st.pod.ns, "team-a") && !st.pod.name[0] && !st.pod.uid[0], "%d %s", ret, err);
	/* look-alike keys are not the pod's */
	ret = parse("{\"annotations\":{\"io.kubernetes.pod.names\":\"x\",\"io.kubernetes.cri.sandbox-nam\":\"y\","
		    "\"IO.KUBERNETES.POD.NAME\":\"z\"}}",
		    &st, err, sizeof(err));
	CHECK(ret == 0 && !st.pod.name[0], "%d %s '%s'", ret, err, st.pod.name);
}

/* Kubernetes bounds them: a name 253 bytes, a namespace 63, a UID 36; one byte more is refused, naming the key. */
static void test_pod_lengths(void)
{
	static const struct {
		const char *key;
		size_t max;
	} k[] = {
		{ "io.kubernetes.cri.sandbox-name", 253 }, { "io.kubernetes.pod.name", 253 },
		{ "io.kubernetes.cri.sandbox-namespace", 63 }, { "io.kubernetes.pod.namespace", 63 },
		{ "io.kubernetes.cri.sandbox-uid", 36 }, { "io.kubernetes.pod.uid", 36 },
	};
	static char text[1024], v[300], want[128];
	struct ocistate st;
	char err[256];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		snprintf(text, sizeof(text), "{\"id\":\"c\",\"annotations\":{\"%s\":\"%s\"}}", k[i].key, rep(v, 'a', k[i].max));
		ret = parse(text, &st, err, sizeof(err));
		CHECK(ret == 0, "%s of %zu bytes: %s", k[i].key, k[i].max, err);
		CHECK(strlen(st.pod.name) + strlen(st.pod.ns) + strlen(st.pod.uid) == k[i].max, "%s kept whole", k[i].key);
		snprintf(text, sizeof(text), "{\"id\":\"c\",\"annotations\":{\"%s\":\"%s\"}}", k[i].key,
			 rep(v, 'a', k[i].max + 1));
		/* one byte more: the state parses (the container is not refused), the pod's identity is dropped */
		ret = parse(text, &st, err, sizeof(err));
		snprintf(want, sizeof(want), "annotation %s is too long", k[i].key);
		CHECK(ret == 0 && !strcmp(st.pod.bad, want) && !st.pod.name[0] && !st.pod.ns[0] && !st.pod.uid[0],
		      "%s: %d '%s'", k[i].key, ret, st.pod.bad);
		/* escapes count as what they decode to: 253 'a's plus one \u00e9 (2 bytes) is too long for a name */
		if (k[i].max == 253) {
			snprintf(text, sizeof(text), "{\"annotations\":{\"%s\":\"%s\\u00e9\"}}", k[i].key, rep(v, 'a', 252));
			ret = parse(text, &st, err, sizeof(err));
			CHECK(ret == 0 && strstr(st.pod.bad, "too long"), "%s: %d '%s'", k[i].key, ret, st.pod.bad);
		}
	}
}

static void test_pod_errors(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"annotations\":{\"io.kubernetes.pod.uid\":\"a\",\"io.kubernetes.pod.uid\":\"a\"}}",
		  "annotation io.kubernetes.pod.uid given twice" },
		{ "{\"annotations\":{\"io.kubernetes.pod.name\":7}}", "annotation io.kubernetes.pod.name: a string value expected" },
		/* still twice after the identity was dropped for the first value */
		{ "{\"annotations\":{\"io.kubernetes.pod.uid\":\"a\\u0000\",\"io.kubernetes.pod.uid\":\"a\"}}",
		  "annotation io.kubernetes.pod.uid given twice" },
		{ "{\"annotations\":{\"io.kubernetes.pod.name\":\"a\\x\"}}", "bad escape" },
	};
	/* a pod named in ways that do not fit: the state is good, the identity dropped with the reason */
	static const struct {
		const char *text, *bad;
	} dropped[] = {
		{ "{\"annotations\":{\"io.kubernetes.cri.sandbox-name\":\"a\",\"io.kubernetes.pod.name\":\"b\"}}",
		  "annotation io.kubernetes.pod.name=b disagrees with io.kubernetes.cri.sandbox-name" },
		{ "{\"annotations\":{\"io.kubernetes.pod.namespace\":\"a\",\"io.kubernetes.cri.sandbox-namespace\":\"\"}}",
		  "annotation io.kubernetes.cri.sandbox-namespace= disagrees with io.kubernetes.pod.namespace" },
		{ "{\"annotations\":{\"io.kubernetes.cri.sandbox-uid\":\"a\\u0000b\",\"io.kubernetes.pod.name\":\"n\"}}",
		  "annotation io.kubernetes.cri.sandbox-uid holds a NUL character" },
	};
	struct ocistate st;
	char err[256];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = parse(bad[i].text, &st, err, sizeof(err));
		CHECK(ret == -EINVAL && strstr(err, bad[i].want), "%s: %d '%s', want '%s'", bad[i].text, ret, err, bad[i].want);
	}
	for (i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		ret = parse(dropped[i].text, &st, err, sizeof(err));
		CHECK(ret == 0 && !strcmp(st.pod.bad, dropped[i].bad) && !st.pod.name[0] && !st.pod.ns[0] && !st.pod.uid[0],
		      "%s: %d '%s', want '%s'", dropped[i].text, ret, st.pod.bad, dropped[i].bad);
	}
}

int main(void)
{
	RUN(test_fields);
	RUN(test_pod_keys);
	RUN(test_pod_lengths);
	RUN(test_pod_errors);
	return unit_done();
}
