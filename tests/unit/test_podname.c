// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of lib/engines/podname: pods' names by UID, written, read, removed, and gc'd against a cgroup tree. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engines/podname.h"
#include "unit.h"

#define UID1 "0b5a4c1e-7f3d-4d2a-9a61-3c2f0d9e8a11"
#define UID2 "1c6b5d2f-8a4e-4e3b-8b72-4d3a1e0f9b22"
#define UID3 "2d7c6e3a-9b5f-4f4c-9c83-5e4b2f1a0c33"

static char base[64];

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool exists(const char *path)
{
	return !access(path, F_OK);
}

/* Entries of a directory but . and .. */
static int entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void test_forms(void)
{
	static char big[300];

	CHECK(podname_uid_ok(UID1) && podname_uid_ok("0123456789abcdef0123456789abcdef"), "uuid, static pod hash");
	CHECK(!podname_uid_ok("") && !podname_uid_ok("../x") && !podname_uid_ok("ABCDEF") && !podname_uid_ok(UID1 "0") &&
		      !podname_uid_ok("a/b") && !podname_uid_ok(".") && !podname_uid_ok("a b"),
	      "bad uids");
	CHECK(podname_ns_ok("team-a") && podname_ns_ok("a") && podname_ns_ok("0"), "namespaces");
	CHECK(!podname_ns_ok("") && !podname_ns_ok("-a") && !podname_ns_ok("a-") && !podname_ns_ok("Team") &&
		      !podname_ns_ok("a.b") && !podname_ns_ok("a/b") && !podname_ns_ok("a\nb"),
	      "bad namespaces");
	memset(big, 'a', 63);
	CHECK(podname_ns_ok(big), "63");
	big[63] = 'a';
	CHECK(!podname_ns_ok(big), "64");
	CHECK(podname_name_ok("web-0") && podname_name_ok("web.0.x"), "names");
	CHECK(!podname_name_ok("") && !podname_name_ok(".web") && !podname_name_ok("web-") && !podname_name_ok("a/b") &&
		      !podname_name_ok("a_b") && !podname_name_ok("a\n"),
	      "bad names");
	memset(big, 'a', 253);
	big[253] = '\0';
	CHECK(podname_name_ok(big), "253");
	big[253] = 'a';
	CHECK(!podname_name_ok(big), "254");
}

static void test_write_read_remove(void)
{
	char dir[128], file[192];
	struct podname pn;
	struct stat sb;
	int ret;

	snprintf(dir, sizeof(dir), "%s/run/pods", base);
	setenv(PODNAME_ENV_DIR, dir, 1);
	CHECK(!strcmp(podname_dir(), dir), "%s", podname_dir());
	umask(077); /* a strict umask (systemd's UMask=0077) leaves the directories readable all the same */
	ret = podname_read(UID1, &pn);
	CHECK(ret == -ENOENT && !pn.ns[0] && !pn.name[0], "none yet: %d", ret);
	ret = podname_write(UID1, "team-a", "web-0");
	CHECK(ret == 0, "write: %d", ret);
	snprintf(file, sizeof(file), "%s/%s", dir, UID1);
	CHECK(!stat(file, &sb) && (sb.st_mode & 07777) == 0644, "mode %o", sb.st_mode & 07777);
	CHECK(!stat(dir, &sb) && (sb.st_mode & 07777) == 0755, "dir mode %o", sb.st_mode & 07777);
	umask(022);
	ret = podname_read(UID1, &pn);
	CHECK(ret == 0 && !strcmp(pn.ns, "team-a") && !strcmp(pn.name, "web-0"), "%d %s/%s", ret, pn.ns, pn.name);
	/* again: replaced whole, nothing else left in the directory */
	ret = podname_write(UID1, "team-b", "web-1");
	CHECK(ret == 0 && !podname_read(UID1, &pn) && !strcmp(pn.ns, "team-b") && !strcmp(pn.name, "web-1"), "%d", ret);
	CHECK(entries(dir) == 1, "%d files", entries(dir));
	/* what cannot be a file name or a Kubernetes name is refused, nothing written */
	CHECK(podname_write("../x", "a", "b") == -EINVAL && podname_write(UID2, "a/b", "c") == -EINVAL &&
		      podname_write(UID2, "a", "b\nc") == -EINVAL && podname_write(UID2, "", "b") == -EINVAL,
	      "bad forms");
	CHECK(podname_read(UID2, &pn) == -ENOENT, "nothing of them written");
	CHECK(podname_read("../../etc/passwd", &pn) == -EINVAL, "read: bad uid");
	CHECK(podname_remove("..") == -EINVAL, "remove: bad uid");
	CHECK(podname_remove(UID1) == 0 && !exists(file), "removed");
	CHECK(podname_remove(UID1) == 0, "removing what is gone is fine");
}

/* A file not of the form NAMESPACE/NAME\n is no name: -EINVAL, the name unknown. */
static void test_read_bad(void)
{
	static const char *const bad[] = {
		"", "team-a/web-0", "team-a/web-0\n\n", "team-a\n", "/web-0\n", "team-a/\n", "team-a/web/0\n",
		"Team/web\n", "team-a/web-0\nx", "team-a/web 0\n",
	};
	char dir[128], file[192], big[400];
	struct podname pn;
	size_t i;
	int ret;

	snprintf(dir, sizeof(dir), "%s/run/pods", base);
	setenv(PODNAME_ENV_DIR, dir, 1);
	mkdir(dir, 0755);
	snprintf(file, sizeof(file), "%s/%s", dir, UID3);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(file, bad[i]);
		ret = podname_read(UID3, &pn);
		CHECK(ret == -EINVAL && !pn.ns[0] && !pn.name[0], "'%s': %d", bad[i], ret);
	}
	memset(big, 'a', sizeof(big) - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	big[10] = '/';
	put(file, big);
	CHECK(podname_read(UID3, &pn) == -EINVAL, "too long");
	unlink(file);
	CHECK(!mkdir(file, 0755) && podname_read(UID3, &pn) == -EINVAL, "a directory");
	rmdir(file);
	CHECK(!symlink("/etc/hostname", file) && podname_read(UID3, &pn) < 0, "a symlink is not followed");
	unlink(file);
}

/* gc: a file stays while a cgroup names its pod (cgroupfs or systemd layout), and goes with the last. */
static void test_gc(void)
{
	char dir[128], cg[128], path[1024];
	unsigned int n = 99;
	int ret;

	snprintf(dir, sizeof(dir), "%s/gc/pods", base);
	snprintf(cg, sizeof(cg), "%s/gc/cgroup", base);
	setenv(PODNAME_ENV_DIR, dir, 1);
	/* no directory: nothing to do */
	ret = podname_gc(cg, &n);
	CHECK(ret == 0 && n == 0, "%d %u", ret, n);
	CHECK(!podname_write(UID1, "team-a", "a") && !podname_write(UID2, "team-a", "b") &&
		      !podname_write(UID3, "team-a", "c"),
	      "written");
	/* a cgroup tree that cannot be read: nothing removed */
	ret = podname_gc(cg, &n);
	CHECK(ret == -ENOENT && n == 0, "%d %u", ret, n);
	snprintf(path, sizeof(path), "%s/%s", dir, UID3);
	CHECK(exists(path), "kept when the tree cannot be read");
	/* UID1: cgroupfs, with a container below; UID2: systemd's kubepods-QOS-pod<uid_>.slice */
	snprintf(path, sizeof(path), "mkdir -p '%s/kubepods/besteffort/pod%s/0123456789abcdef' "
		 "'%s/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1c6b5d2f_8a4e_4e3b_8b72_4d3a1e0f9b22.slice' "
		 "'%s/system.slice' '%s/libpod_parent/%s'",
		 cg, UID1, cg, cg, cg, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	CHECK(system(path) == 0, "%s", path);
	/* a leftover temporary file of a pod that is gone goes too; a file not named by a UID stays */
	snprintf(path, sizeof(path), "%s/.%s.AbC123", dir, UID3);
	put(path, "x");
	snprintf(path, sizeof(path), "%s/README", dir);
	put(path, "x");
	ret = podname_gc(cg, &n);
	CHECK(ret == 0 && n == 1, "%d %u", ret, n);
	snprintf(path, sizeof(path), "%s/%s", dir, UID1);
	CHECK(exists(path), "UID1 kept");
	snprintf(path, sizeof(path), "%s/%s", dir, UID2);
	CHECK(exists(path), "UID2 kept (systemd layout)");
	snprintf(path, sizeof(path), "%s/%s", dir, UID3);
	CHECK(!exists(path), "UID3 removed");
	snprintf(path, sizeof(path), "%s/.%s.AbC123", dir, UID3);
	CHECK(!exists(path), "its temporary file removed");
	snprintf(path, sizeof(path), "%s/README", dir);
	CHECK(exists(path), "others kept");
	/* the pod's cgroup goes: its file goes */
	snprintf(path, sizeof(path), "rm -r '%s/kubepods/besteffort/pod%s'", cg, UID1);
	CHECK(system(path) == 0, "%s", path);
	ret = podname_gc(cg, &n);
	CHECK(ret == 0 && n == 1, "%d %u", ret, n);
	snprintf(path, sizeof(path), "%s/%s", dir, UID1);
	CHECK(!exists(path), "UID1 removed");
}

int main(void)
{
	char cmd[128];
	int ret;

	snprintf(base, sizeof(base), "/tmp/test_podname.XXXXXX");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	RUN(test_forms);
	RUN(test_write_read_remove);
	RUN(test_read_bad);
	RUN(test_gc);
	ret = unit_done();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd))
		ret = EXIT_FAILURE;
	return ret;
}
