// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of lib/gid: GID text, sysfs table reading and the GID choice, on a sysfs-shaped tree with the
 * cases the lab's rxe cannot show (RoCE v1 next to v2, two devices, an IB port, unused entries).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pingpong/gid.h"
#include "unit.h"

static char root[] = "/tmp/test_gid.XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/* A GID entry like the kernel's: gids/N always; types/N and ndevs/N only for used entries. */
static void gid(const char *dev, int port, int idx, const char *text, const char *type, const char *ndev)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gids/%d", dev, port, idx);
	put(rel, text);
	if (type) {
		snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gid_attrs/types/%d", dev, port, idx);
		put(rel, type);
	}
	if (ndev) {
		snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d", dev, port, idx);
		put(rel, ndev);
	}
}

static void build_tree(void)
{
	const char *zero = "0000:0000:0000:0000:0000:0000:0000:0000\n";

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(1);
	}
	/* roce0: v1 and v2 for the link-local address and for 127.0.0.1 (on lo), an unused entry between. */
	put("class/infiniband/roce0/ports/1/link_layer", "Ethernet\n");
	put("class/infiniband/roce0/ports/1/state", "4: ACTIVE\n");
	gid("roce0", 1, 0, "fe80:0000:0000:0000:0202:c9ff:fe00:0001\n", "IB/RoCE v1\n", "lo\n");
	gid("roce0", 1, 1, "fe80:0000:0000:0000:0202:c9ff:fe00:0001\n", "RoCE v2\n", "lo\n");
	gid("roce0", 1, 2, zero, NULL, NULL);
	gid("roce0", 1, 3, "0000:0000:0000:0000:0000:ffff:7f00:0001\n", "IB/RoCE v1\n", "lo\n");
	gid("roce0", 1, 4, "0000:0000:0000:0000:0000:ffff:7f00:0001\n", "RoCE v2\n", "lo\n");
	gid("roce0", 1, 10, "0000:0000:0000:0000:0000:ffff:c633:6401\n", "RoCE v2\n", "eth9\n");
	/* roce1: only RoCE v1 for 198.51.100.7 */
	put("class/infiniband/roce1/ports/1/link_layer", "Ethernet\n");
	gid("roce1", 1, 0, "0000:0000:0000:0000:0000:ffff:c633:6407\n", "IB/RoCE v1\n", "eth8\n");
	/* ib0: an InfiniBand port: "IB/RoCE v1" type, no netdev */
	put("class/infiniband/ib0/ports/1/link_layer", "InfiniBand\n");
	gid("ib0", 1, 0, "fe80:0000:0000:0000:0002:c903:0010:1a2b\n", "IB/RoCE v1\n", NULL);
}

static void test_text(void)
{
	uint8_t raw[16];
	char buf[64];

	CHECK(gid_parse("0000:0000:0000:0000:0000:ffff:c000:0201", raw) == 0, "parse");
	CHECK(gid_is_v4mapped(raw) && !gid_is_link_local(raw) && !gid_is_zero(raw), "v4mapped");
	CHECK(!strcmp(gid_ip_str(raw, buf, sizeof(buf)), "192.0.2.1"), "ip %s", buf);
	CHECK(!strcmp(gid_str(raw, buf, sizeof(buf)), "::ffff:192.0.2.1"), "str %s", buf);
	CHECK(gid_parse("fe80:0000:0000:0000:b879:efff:fee7:8fb3", raw) == 0 && gid_is_link_local(raw), "ll");
	CHECK(!strcmp(gid_ip_str(raw, buf, sizeof(buf)), "fe80::b879:efff:fee7:8fb3"), "ll ip %s", buf);
	CHECK(gid_parse("fe80:0000:0000:0000:b879:efff:fee7:8fb", raw) == -EINVAL, "short");
	CHECK(gid_parse("fe80:0000:0000:0000:b879:efff:fee7:8fb3:", raw) == -EINVAL, "trailing");
	CHECK(gid_parse("fe80-0000:0000:0000:b879:efff:fee7:8fb3", raw) == -EINVAL, "separator");
	CHECK(gid_parse("", raw) == -EINVAL, "empty");
}

static void test_sockaddr(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_storage ss;
	uint8_t raw[16];

	inet_pton(AF_INET, "192.0.2.1", &in.sin_addr);
	CHECK(gid_from_sockaddr((struct sockaddr *)&in, raw) == 0 && gid_is_v4mapped(raw), "from v4");
	gid_to_sockaddr(raw, &ss);
	CHECK(ss.ss_family == AF_INET && ((struct sockaddr_in *)&ss)->sin_addr.s_addr == in.sin_addr.s_addr,
	      "back to v4");
}

static void test_table(void)
{
	struct gid_table t = { 0 };
	const struct gid_entry *e;
	char **names;
	int ports[4];

	CHECK(gid_dev_names(&names) == 0, "names");
	CHECK(names[0] && !strcmp(names[0], "ib0") && names[1] && !strcmp(names[1], "roce0") && names[2] &&
	      !strcmp(names[2], "roce1") && !names[3], "sorted names");
	gid_free_names(names);
	CHECK(gid_dev_ports("roce0", ports, 4) == 1 && ports[0] == 1, "ports");
	CHECK(gid_dev_ports("nosuch", ports, 4) == -ENODEV, "no device");
	CHECK(gid_dev_ports("../x", ports, 4) == -ENODEV, "path in name");

	CHECK(gid_table_read(NULL, 0, &t) == 0, "read all");
	/* 5 used entries of roce0 (the zero one skipped), 1 of roce1, 1 of ib0 */
	CHECK(t.n == 7, "n %zu", t.n);
	e = gid_find(&t, "roce0", 1, 4);
	CHECK(e && e->type == GID_TYPE_ROCE_V2 && !strcmp(e->ndev, "lo"), "roce0/1/4");
	CHECK(!gid_find(&t, "roce0", 1, 2), "zero entry skipped");
	e = gid_find(&t, "roce0", 1, 10);
	CHECK(e && !strcmp(e->ndev, "eth9"), "index 10 (not sorted as text)");
	e = gid_find(&t, "ib0", 1, 0);
	CHECK(e && e->type == GID_TYPE_IB && !*e->ndev, "IB port: IB type, no netdev");
	gid_table_free(&t);

	CHECK(gid_table_read("roce1", 0, &t) == 0 && t.n == 1 && t.v[0].type == GID_TYPE_ROCE_V1, "one device");
	gid_table_free(&t);
	CHECK(gid_table_read("nosuch", 0, &t) == -ENODEV, "missing device");
	gid_table_free(&t);
}

static void test_pick(void)
{
	struct sockaddr_storage dst, src;
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct gid_table t = { 0 };
	struct gid_choice c;

	CHECK(gid_table_read(NULL, 0, &t) == 0, "read");

	/* The real route lookup: 127.0.0.1 is reached from 127.0.0.1 on lo. */
	CHECK(gid_route_src("127.0.0.1", &dst, &src) == 0 && src.ss_family == AF_INET, "route");
	CHECK(gid_pick_for_addr(&t, NULL, 0, (struct sockaddr *)&src, &c) == 0, "pick");
	CHECK(!strcmp(c.gid.dev, "roce0") && c.gid.index == 4 && c.gid.type == GID_TYPE_ROCE_V2,
	      "RoCE v2 before v1: %s %d", c.gid.dev, c.gid.index);
	CHECK(strstr(c.why, "RoCE v2 GID of 127.0.0.1 on lo") != NULL, "why: %s", c.why);

	/* Only a v1 GID for that address: v1 it is. */
	inet_pton(AF_INET, "198.51.100.7", &in.sin_addr);
	CHECK(gid_pick_for_addr(&t, NULL, 0, (struct sockaddr *)&in, &c) == 0 && !strcmp(c.gid.dev, "roce1") &&
	      c.gid.type == GID_TYPE_ROCE_V1, "v1 only");
	CHECK(gid_pick_for_addr(&t, "roce0", 0, (struct sockaddr *)&in, &c) == -ENOENT, "not on roce0");
	inet_pton(AF_INET, "203.0.113.9", &in.sin_addr);
	CHECK(gid_pick_for_addr(&t, NULL, 0, (struct sockaddr *)&in, &c) == -ENOENT, "nobody has it");

	/* Best of a port: v2 IPv4-mapped first, link-local only when nothing else. */
	CHECK(gid_pick_best(&t, "roce0", 1, &c) == 0 && c.gid.index == 4, "best roce0 %d", c.gid.index);
	CHECK(gid_pick_best(&t, "ib0", 1, &c) == 0 && c.gid.index == 0 && c.gid.type == GID_TYPE_IB, "best ib0");
	CHECK(gid_pick_best(&t, "roce0", 2, &c) == -ENOENT, "no such port");
	gid_table_free(&t);

	CHECK(gid_route_src("no-such-host.invalid", &dst, &src) < 0, "unknown host");
}

int main(void)
{
	char cmd[600];
	int ret;

	build_tree();
	gid_sysfs_root = root;
	RUN(test_text);
	RUN(test_sockaddr);
	RUN(test_table);
	RUN(test_pick);
	ret = unit_done();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
	return ret;
}
