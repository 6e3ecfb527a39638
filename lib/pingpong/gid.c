// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* GID tables from sysfs (type, address, netdev) and the route-based choice of device, port and GID. */
#include "pingpong/gid.h"
#include "core/proc.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *gid_sysfs_root = "/sys";

/* Read a small sysfs file into buf without the trailing newline. */
static int read_line(const char *path, char *buf, size_t len)
{
	ssize_t n = path_read(path, buf, len);

	if (n < 0)
		return (int)n;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int gid_dev_names(char ***names)
{
	char path[512], **v = NULL, **nv;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/class/infiniband", gid_sysfs_root);
	d = opendir(path);
	if (!d) {
		if (errno != ENOENT)
			return -errno;
	} else {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			nv = realloc(v, (n + 2) * sizeof(*v));
			if (!nv)
				goto nomem;
			v = nv;
			v[n] = strdup(de->d_name);
			if (!v[n])
				goto nomem;
			n++;
		}
		closedir(d);
		d = NULL;
	}
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	v[n] = NULL;
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*names = v;
	return 0;
nomem:
	if (d)
		closedir(d);
	if (v) {
		v[n] = NULL;
		gid_free_names(v);
	}
	return -ENOMEM;
}

void gid_free_names(char **names)
{
	char **p;

	if (!names)
		return;
	for (p = names; *p; p++)
		free(*p);
	free(names);
}

int gid_dev_ports(const char *dev, int *ports, int max)
{
	char path[512], *end;
	struct dirent *de;
	int n = 0;
	long v;
	DIR *d;

	if (strchr(dev, '/') || !strcmp(dev, ".") || !strcmp(dev, ".."))
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", gid_sysfs_root, dev);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ENODEV : -errno;
	while ((de = readdir(d)) && n < max) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		v = strtol(de->d_name, &end, 10);
		if (*end || v < 1 || v > 255)
			continue;
		ports[n++] = (int)v;
	}
	closedir(d);
	if (n)
		qsort(ports, n, sizeof(*ports), cmp_int);
	return n;
}

int gid_port_attr(const char *dev, int port, const char *attr, char *buf, size_t len)
{
	char path[512];

	if (strchr(dev, '/'))
		return -ENODEV;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%d/%s", gid_sysfs_root, dev, port, attr);
	return read_line(path, buf, len);
}

int gid_first_dev(char *dev, size_t len)
{
	char **names;
	int ret;

	ret = gid_dev_names(&names);
	if (ret)
		return ret;
	if (!names[0]) {
		gid_free_names(names);
		return -ENODEV;
	}
	snprintf(dev, len, "%s", names[0]);
	gid_free_names(names);
	return 0;
}

int gid_parse(const char *s, uint8_t raw[16])
{
	int i, j, v;

	for (i = 0; i < 8; i++) {
		for (j = 0, v = 0; j < 4; j++, s++) {
			if (!isxdigit((unsigned char)*s))
				return -EINVAL;
			v = v * 16 + (isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10);
		}
		raw[2 * i] = (uint8_t)(v >> 8);
		raw[2 * i + 1] = (uint8_t)v;
		if (i < 7 && *s++ != ':')
			return -EINVAL;
	}
	return *s ? -EINVAL : 0;
}

static enum gid_type parse_type(const char *s)
{
	if (!strcmp(s, "RoCE v2"))
		return GID_TYPE_ROCE_V2;
	if (!strcmp(s, "IB/RoCE v1") || !strcmp(s, "RoCE v1"))
		return GID_TYPE_ROCE_V1;
	if (!strcmp(s, "IB"))
		return GID_TYPE_IB;
	return GID_TYPE_UNKNOWN;
}

static int push(struct gid_table *t, const struct gid_entry *e)
{
	struct gid_entry *nv;

	nv = realloc(t->v, (t->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->v = nv;
	t->v[t->n++] = *e;
	return 0;
}

static int read_port(const char *dev, int port, struct gid_table *t)
{
	char base[512], path[640], buf[128], ll[32] = "";
	struct gid_entry e;
	struct dirent *de;
	int ret = 0, idx;
	char *end;
	DIR *d;

	snprintf(base, sizeof(base), "%s/class/infiniband/%s/ports/%d", gid_sysfs_root, dev, port);
	snprintf(path, sizeof(path), "%s/link_layer", base);
	read_line(path, ll, sizeof(ll));
	snprintf(path, sizeof(path), "%s/gids", base);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		idx = (int)strtol(de->d_name, &end, 10);
		if (*end || idx < 0)
			continue;
		memset(&e, 0, sizeof(e));
		snprintf(path, sizeof(path), "%s/gids/%d", base, idx);
		if (read_line(path, buf, sizeof(buf)) || gid_parse(buf, e.raw) || gid_is_zero(e.raw))
			continue;
		snprintf(e.dev, sizeof(e.dev), "%s", dev);
		e.port = port;
		e.index = idx;
		/* Unused or IB entries make these reads fail with EINVAL: no type or no netdev. */
		snprintf(path, sizeof(path), "%s/gid_attrs/types/%d", base, idx);
		if (!read_line(path, buf, sizeof(buf)))
			e.type = parse_type(buf);
		else if (!strcmp(ll, "InfiniBand"))
			e.type = GID_TYPE_IB;
		if (e.type == GID_TYPE_ROCE_V1 && !strcmp(ll, "InfiniBand"))
			e.type = GID_TYPE_IB;
		snprintf(path, sizeof(path), "%s/gid_attrs/ndevs/%d", base, idx);
		if (!read_line(path, buf, sizeof(buf)))
			snprintf(e.ndev, sizeof(e.ndev), "%.*s", (int)sizeof(e.ndev) - 1, buf);
		ret = push(t, &e);
		if (ret)
			break;
	}
	closedir(d);
	return ret;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct gid_entry *x = a, *y = b;
	int c = strcmp(x->dev, y->dev);

	if (c)
		return c;
	if (x->port != y->port)
		return x->port - y->port;
	return x->index - y->index;
}

int gid_table_read(const char *dev, int port, struct gid_table *t)
{
	char **names = NULL, *one[2] = { (char *)dev, NULL }, **p;
	int ports[64], np, i, ret = 0;

	if (!dev) {
		ret = gid_dev_names(&names);
		if (ret)
			return ret;
	}
	for (p = dev ? one : names; *p && !ret; p++) {
		np = gid_dev_ports(*p, ports, (int)ARRAY_SIZE(ports));
		if (np < 0) {
			ret = dev ? np : 0;
			continue;
		}
		for (i = 0; i < np && !ret; i++)
			if (!port || ports[i] == port)
				ret = read_port(*p, ports[i], t);
	}
	gid_free_names(names);
	if (!ret && t->n)
		qsort(t->v, t->n, sizeof(*t->v), cmp_entry);
	return ret;
}

void gid_table_free(struct gid_table *t)
{
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

const char *gid_type_str(enum gid_type type)
{
	switch (type) {
	case GID_TYPE_IB:
		return "IB";
	case GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "unknown";
	}
}

bool gid_is_zero(const uint8_t raw[16])
{
	int i;

	for (i = 0; i < 16; i++)
		if (raw[i])
			return false;
	return true;
}

bool gid_is_v4mapped(const uint8_t raw[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(raw, prefix, sizeof(prefix));
}

bool gid_is_link_local(const uint8_t raw[16])
{
	return raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
}

const char *gid_str(const uint8_t raw[16], char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

const char *gid_ip_str(const uint8_t raw[16], char *buf, size_t len)
{
	if (gid_is_v4mapped(raw)) {
		if (!inet_ntop(AF_INET, raw + 12, buf, (socklen_t)len))
			snprintf(buf, len, "?");
		return buf;
	}
	return gid_str(raw, buf, len);
}

const char *gid_desc(const struct gid_entry *e, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s, %s%s%s%s", gid_type_str(e->type), gid_ip_str(e->raw, ip, sizeof(ip)),
		 gid_is_link_local(e->raw) ? " link-local" : "", *e->ndev ? " on " : "", e->ndev);
	return buf;
}

const char *gid_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *p = sa->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr :
						   (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
	struct sockaddr_in in;

	if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
		memset(&in, 0, sizeof(in));
		memcpy(&in.sin_addr, (const uint8_t *)p + 12, 4);
		p = &in.sin_addr;
		sa = (const struct sockaddr *)&in;
		in.sin_family = AF_INET;
	}
	if (!inet_ntop(sa->sa_family, p, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

int gid_from_sockaddr(const struct sockaddr *sa, uint8_t raw[16])
{
	if (sa->sa_family == AF_INET) {
		memset(raw, 0, 10);
		raw[10] = raw[11] = 0xff;
		memcpy(raw + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

void gid_to_sockaddr(const uint8_t raw[16], struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (gid_is_v4mapped(raw)) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, raw + 12, 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, raw, 16);
	}
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

int gid_route_src_addr(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct sockaddr_storage d;
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memcpy(&d, dst, sa_len(dst));
	/* Any port: connect() on UDP sends nothing, it only makes the kernel choose route and source. */
	if (d.ss_family == AF_INET)
		((struct sockaddr_in *)&d)->sin_port = htons(9);
	else
		((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
	fd = socket(d.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&d, sa_len(dst)) || getsockname(fd, (struct sockaddr *)src, &len))
		ret = -errno;
	close(fd);
	return ret;
}

int gid_route_src(const char *host, struct sockaddr_storage *dst, struct sockaddr_storage *src)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res, *r;
	int ret;

	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret)
		return ret == EAI_SYSTEM ? -errno : -ENOENT;
	ret = -EHOSTUNREACH;
	for (r = res; r; r = r->ai_next) {
		if (r->ai_family != AF_INET && r->ai_family != AF_INET6)
			continue;
		memset(dst, 0, sizeof(*dst));
		memcpy(dst, r->ai_addr, r->ai_addrlen);
		ret = gid_route_src_addr(r->ai_addr, src);
		if (!ret)
			break;
	}
	freeaddrinfo(res);
	return ret;
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return false;
}

int gid_addr_netdev(const struct sockaddr *addr, char ndev[IF_NAMESIZE])
{
	struct ifaddrs *ifa, *i;
	int ret = -ENODEV;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || !same_addr(i->ifa_addr, addr))
			continue;
		snprintf(ndev, IF_NAMESIZE, "%s", i->ifa_name);
		ret = 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}

static int type_rank(enum gid_type t)
{
	return t == GID_TYPE_ROCE_V2 ? 0 : t == GID_TYPE_ROCE_V1 ? 1 : t == GID_TYPE_IB ? 2 : 3;
}

static bool match_dp(const struct gid_entry *e, const char *dev, int port)
{
	return (!dev || !strcmp(e->dev, dev)) && (!port || e->port == port);
}

int gid_pick_for_addr(const struct gid_table *t, const char *dev, int port, const struct sockaddr *local,
		      struct gid_choice *out)
{
	const struct gid_entry *best = NULL;
	char ndev[IF_NAMESIZE] = "", ip[INET6_ADDRSTRLEN];
	uint8_t want[16];
	size_t i;

	if (gid_from_sockaddr(local, want))
		return -EAFNOSUPPORT;
	gid_addr_netdev(local, ndev);
	for (i = 0; i < t->n; i++) {
		const struct gid_entry *e = &t->v[i];

		if (!match_dp(e, dev, port) || memcmp(e->raw, want, 16))
			continue;
		/* The same address can sit on a VLAN and on its parent: prefer the netdev that has it. */
		if (!best || type_rank(e->type) < type_rank(best->type) ||
		    (type_rank(e->type) == type_rank(best->type) && *ndev && !strcmp(e->ndev, ndev) &&
		     strcmp(best->ndev, ndev)))
			best = e;
	}
	if (!best)
		return -ENOENT;
	out->gid = *best;
	snprintf(out->why, sizeof(out->why), "%s GID of %s on %s", gid_type_str(best->type),
		 gid_ip_str(best->raw, ip, sizeof(ip)), *best->ndev ? best->ndev : "?");
	return 0;
}

static int best_rank(const struct gid_entry *e)
{
	int r = type_rank(e->type) * 4;

	if (gid_is_v4mapped(e->raw))
		return r;
	if (!gid_is_link_local(e->raw))
		return r + 1;
	return r + 2;
}

int gid_pick_best(const struct gid_table *t, const char *dev, int port, struct gid_choice *out)
{
	const struct gid_entry *best = NULL;
	char ip[INET6_ADDRSTRLEN];
	size_t i;

	for (i = 0; i < t->n; i++)
		if (match_dp(&t->v[i], dev, port) && (!best || best_rank(&t->v[i]) < best_rank(best)))
			best = &t->v[i];
	if (!best)
		return -ENOENT;
	out->gid = *best;
	snprintf(out->why, sizeof(out->why), "%s GID of %s%s%s", gid_type_str(best->type),
		 gid_ip_str(best->raw, ip, sizeof(ip)), *best->ndev ? " on " : "", best->ndev);
	return 0;
}

const struct gid_entry *gid_find(const struct gid_table *t, const char *dev, int port, int index)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].dev, dev) && t->v[i].port == port && t->v[i].index == index)
			return &t->v[i];
	return NULL;
}
