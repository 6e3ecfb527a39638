// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of the exposition writer (lib/export/prom) and of lib/export/metrics' cgroup labels and counts sources. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "export/metrics.h"
#include "export/prom.h"
#include "unit.h"

static void test_family_and_samples(void)
{
	struct prom_buf b = { 0 };
	const struct prom_label l[] = { { "cgroup", "/a" }, { "empty", "" }, { "none", NULL }, { "type", "qp" } };

	prom_family(&b, "rdmactl_objects", PROM_GAUGE, "Objects, by type.");
	prom_sample_u64(&b, "rdmactl_objects", l, 4, 18446744073709551615ull);
	prom_sample_u64(&b, "rdmactl_objects", NULL, 0, 0);
	prom_family(&b, "rdmactl_x_total", PROM_COUNTER, "back\\slash and\nnewline \"quoted\"");
	prom_sample_f64(&b, "rdmactl_x_total", l, 1, 0.25);
	prom_sample_f64(&b, "rdmactl_x_total", l, 1, NAN);
	prom_sample_f64(&b, "rdmactl_x_total", l, 1, INFINITY);
	prom_sample_f64(&b, "rdmactl_x_total", l, 1, -INFINITY);
	prom_sample_f64(&b, "rdmactl_x_total", NULL, 0, 3);
	CHECK(!b.oom, "oom");
	CHECK(!strcmp(b.data, "# HELP rdmactl_objects Objects, by type.\n"
			      "# TYPE rdmactl_objects gauge\n"
			      "rdmactl_objects{cgroup=\"/a\",type=\"qp\"} 18446744073709551615\n"
			      "rdmactl_objects 0\n"
			      "# HELP rdmactl_x_total back\\\\slash and\\nnewline \"quoted\"\n"
			      "# TYPE rdmactl_x_total counter\n"
			      "rdmactl_x_total{cgroup=\"/a\"} 0.25\n"
			      "rdmactl_x_total{cgroup=\"/a\"} NaN\n"
			      "rdmactl_x_total{cgroup=\"/a\"} +Inf\n"
			      "rdmactl_x_total{cgroup=\"/a\"} -Inf\n"
			      "rdmactl_x_total 3\n"),
	      "got:\n%s", b.data);
	prom_buf_reset(&b);
	CHECK(b.len == 0 && !strcmp(b.data, ""), "reset");
	prom_buf_free(&b);
	CHECK(!b.data && !b.len, "free");
}

static const char *esc(struct prom_buf *b, const char *v)
{
	prom_buf_reset(b);
	prom_escape_value(b, v);
	return b->data ? b->data : "";
}

static void test_escape_value(void)
{
	struct prom_buf b = { 0 };

	CHECK(!strcmp(esc(&b, "plain /a/b.slice"), "plain /a/b.slice"), "%s", b.data);
	CHECK(!strcmp(esc(&b, "a\\b\"c\nd"), "a\\\\b\\\"c\\nd"), "%s", b.data);
	CHECK(!strcmp(esc(&b, "\\\\\n\n\"\""), "\\\\\\\\\\n\\n\\\"\\\""), "%s", b.data);
	/* tabs and other characters pass as they are */
	CHECK(!strcmp(esc(&b, "a\tb{c}=,"), "a\tb{c}=,"), "%s", b.data);
	/* valid UTF-8 stays, invalid bytes become U+FFFD */
	CHECK(!strcmp(esc(&b, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	      "%s", b.data);
	CHECK(!strcmp(esc(&b, "a\xffz"), "a\xef\xbf\xbdz"), "lone 0xff: %s", b.data);
	CHECK(!strcmp(esc(&b, "\xc3"), "\xef\xbf\xbd"), "truncated sequence: %s", b.data);
	CHECK(!strcmp(esc(&b, "\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd"), "overlong '/': %s", b.data);
	CHECK(!strcmp(esc(&b, "\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"), "surrogate: %s", b.data);
	CHECK(!strcmp(esc(&b, "\xf4\x90\x80\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
	      "beyond U+10FFFF: %s", b.data);
	CHECK(!strcmp(esc(&b, ""), ""), "empty");
	prom_buf_free(&b);
}

static void test_names(void)
{
	CHECK(prom_name_ok("rdmactl_objects", false), "metric");
	CHECK(prom_name_ok("a:b_c9", false), "colon in a metric name");
	CHECK(!prom_name_ok("a:b", true), "colon in a label name");
	CHECK(!prom_name_ok("9a", false), "leading digit");
	CHECK(!prom_name_ok("", false) && !prom_name_ok(NULL, true), "empty");
	CHECK(!prom_name_ok("__name__", true), "reserved label");
	CHECK(!prom_name_ok("a-b", true), "dash");
	CHECK(prom_name_ok("slurm_job_id", true), "label");
}

struct ids_case {
	const char *path, *job, *pod, *container;
};

static void test_cgroup_ids(void)
{
	static const struct ids_case cases[] = {
		/* Slurm, cgroup v2 and v1 plugins */
		{ "/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0", "1234", "", "" },
		{ "/slurm/uid_1000/job_42/step_batch", "42", "", "" },
		{ "/slurm_node1/job_7", "7", "", "" },
		{ "/job_/x", "", "", "" },
		{ "/job_12a/x", "", "", "" },
		{ "/myjob_12/x", "", "", "" },
		{ "/job_99999999999999999999999999", "", "", "" }, /* longer than the field: not taken */
		/* Kubernetes, cgroupfs driver */
		{ "/kubepods/besteffort/pod0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b/"
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		  "", "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
		{ "/kubepods/pod0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "", "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "" },
		/* Kubernetes, systemd driver, containerd and CRI-O and docker */
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0d2b5f3a_1c2d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
		  "cri-containerd-aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899.scope",
		  "", "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
		  "aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899" },
		{ "/kubepods.slice/kubepods-pod0d2b5f3a_1c2d_4e5f_8a9b_0c1d2e3f4a5b.slice/crio-0123456789ab.scope", "",
		  "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "0123456789ab" },
		{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0d2b5f3a_1c2d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
		  "crio-conmon-0123456789ab.scope",
		  "", "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "" },
		{ "/kubepods.slice/kubepods-pod0d2b5f3a_1c2d_4e5f_8a9b_0c1d2e3f4a5b.slice/docker-0123456789abcdef.scope",
		  "", "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "0123456789abcdef" },
		/* a static pod: its uid is a 32-digit hash */
		{ "/kubepods/burstable/pod0123456789abcdef0123456789abcdef/fedcba9876543210", "",
		  "0123456789abcdef0123456789abcdef", "fedcba9876543210" },
		/* podman, cgroupfs: a container alone, a container of a pod (with an infra container) */
		{ "/libpod_parent/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", "",
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
		{ "/libpod_parent/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210/"
		  "libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		  "", "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
		{ "/libpod_parent/libpod-conmon-0123456789abcdef", "", "", "" },
		{ "/libpod_parent/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "",
		  "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "" },
		{ "/other/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "", "", "" },
		/* podman, systemd: a container's scope (and its nested cgroup), a pod's slice */
		{ "/machine.slice/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope/container",
		  "", "", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
		{ "/machine.slice/machine-libpod_pod_fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.slice/"
		  "libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope",
		  "", "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
		{ "/machine.slice/libpod-xyz.scope", "", "", "" },
		{ "/machine.slice/machine-libpod_pod_fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.slice",
		  "", "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "" },
		/* not under kubepods: no pod, even with a pod-like name */
		{ "/user.slice/pod0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b/0123456789abcdef", "", "", "" },
		/* a pod-like name that is not a uid */
		{ "/kubepods/podxyz/0123456789abcdef", "", "", "" },
		/* a Slurm job inside a pod */
		{ "/kubepods/pod0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b/0123456789abcdef/job_5/step_0", "5",
		  "0d2b5f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "0123456789abcdef" },
		{ "/", "", "", "" },
		{ "", "", "", "" },
		{ "///job_3///", "3", "", "" },
	};
	struct cgroup_ids ids;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ids_case *c = &cases[i];

		memset(&ids, 'x', sizeof(ids));
		cgroup_ids(c->path, &ids);
		CHECK(!strcmp(ids.slurm_job_id, c->job) && !strcmp(ids.pod_uid, c->pod) &&
			      !strcmp(ids.container_id, c->container),
		      "%s: job '%s' pod '%s' container '%s'", c->path, ids.slurm_job_id, ids.pod_uid, ids.container_id);
	}
}

/* The reasons rdmactl_counts_source gives for the dump: stable words (label values), one per errno class. */
static void test_dump_whys(void)
{
	int i, j;

	CHECK(!strcmp(metrics_dump_why_names[METRICS_DUMP_NONE], ""), "the counters have no reason");
	for (i = 1; i < METRICS_DUMP_NR; i++) {
		CHECK(metrics_dump_why_names[i] && prom_name_ok(metrics_dump_why_names[i], true), "word %d", i);
		for (j = 1; j < i; j++)
			CHECK(strcmp(metrics_dump_why_names[i], metrics_dump_why_names[j]), "%d and %d alike", i, j);
	}
	CHECK(metrics_dump_why_of(0) == METRICS_DUMP_NONE, "0");
	CHECK(metrics_dump_why_of(-ENOENT) == METRICS_DUMP_NO_MONITOR, "ENOENT");
	CHECK(metrics_dump_why_of(-ESRCH) == METRICS_DUMP_NO_MONITOR, "ESRCH");
	CHECK(metrics_dump_why_of(-EACCES) == METRICS_DUMP_NO_ACCESS, "EACCES");
	CHECK(metrics_dump_why_of(-EPERM) == METRICS_DUMP_NO_ACCESS, "EPERM");
	CHECK(metrics_dump_why_of(-ENOSPC) == METRICS_DUMP_LOST, "ENOSPC");
	CHECK(metrics_dump_why_of(-ENODATA) == METRICS_DUMP_INCOMPLETE, "ENODATA");
	CHECK(metrics_dump_why_of(-EAGAIN) == METRICS_DUMP_BUSY, "EAGAIN");
	CHECK(metrics_dump_why_of(-ESTALE) == METRICS_DUMP_MISMATCH, "ESTALE");
	CHECK(metrics_dump_why_of(-EPROTO) == METRICS_DUMP_ERROR, "EPROTO");
}

int main(void)
{
	RUN(test_family_and_samples);
	RUN(test_escape_value);
	RUN(test_names);
	RUN(test_cgroup_ids);
	RUN(test_dump_whys);
	return unit_done();
}
