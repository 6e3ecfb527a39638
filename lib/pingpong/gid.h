/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* GID tables from sysfs (type, address, netdev) and the route-based choice of device, port and GID. */
#ifndef RDMACTL_GID_H
#define RDMACTL_GID_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Root of sysfs ("/sys"); tests point it at a fake tree. */
extern const char *gid_sysfs_root;

enum gid_type { GID_TYPE_UNKNOWN, GID_TYPE_IB, GID_TYPE_ROCE_V1, GID_TYPE_ROCE_V2 };

struct gid_entry {
	char dev[64];
	int port;
	int index;
	uint8_t raw[16];
	enum gid_type type;
	char ndev[IF_NAMESIZE]; /* "" when the GID has no network device (IB) */
};

struct gid_table {
	struct gid_entry *v;
	size_t n;
};

/* Names of the RDMA devices under sysfs, sorted, NULL-terminated; free with gid_free_names(). */
int gid_dev_names(char ***names);
void gid_free_names(char **names);
/* Port numbers of dev (sorted); returns the count or -errno. */
int gid_dev_ports(const char *dev, int *ports, int max);
/* One line of ports/P/<attr> ("state", "link_layer", ...) without the newline. */
int gid_port_attr(const char *dev, int port, const char *attr, char *buf, size_t len);
/* The first device by name; -ENODEV when there is none. */
int gid_first_dev(char *dev, size_t len);

/*
 * Append the non-zero GIDs of dev/port (dev NULL: every device; port 0: every port) to t.
 * Returns 0 or -errno.
 */
int gid_table_read(const char *dev, int port, struct gid_table *t);
void gid_table_free(struct gid_table *t);

const char *gid_type_str(enum gid_type type);
/* Parse sysfs text "fe80:0000:...:0201" (eight groups of four hex digits). */
int gid_parse(const char *s, uint8_t raw[16]);
bool gid_is_zero(const uint8_t raw[16]);
bool gid_is_v4mapped(const uint8_t raw[16]);
bool gid_is_link_local(const uint8_t raw[16]);
/* The IP address a GID stands for: "192.0.2.1" for IPv4-mapped ones, else IPv6 text. */
const char *gid_ip_str(const uint8_t raw[16], char *buf, size_t len);
/* IPv6 text of the raw GID ("::ffff:192.0.2.1", "fe80::..."). */
const char *gid_str(const uint8_t raw[16], char *buf, size_t len);
/* What a GID is, for messages: "RoCE v2, 192.0.2.1 on veth0", "RoCE v2, fe80::1 link-local on veth0". */
const char *gid_desc(const struct gid_entry *e, char *buf, size_t len);
/* The IP address of a sockaddr as text; an IPv4 peer on a dual-stack socket (::ffff:a.b.c.d) as a.b.c.d. */
const char *gid_sockaddr_str(const struct sockaddr *sa, char *buf, size_t len);
/* The GID that stands for an IP address (IPv4 → ::ffff:a.b.c.d). */
int gid_from_sockaddr(const struct sockaddr *sa, uint8_t raw[16]);
/* And back: the IP address of a GID as a sockaddr (port 0). */
void gid_to_sockaddr(const uint8_t raw[16], struct sockaddr_storage *ss);

/*
 * The local address the kernel would use to reach host (name or address): a connected UDP socket's
 * getsockname(). dst receives the resolved destination. -EHOSTUNREACH/-ENETUNREACH when there is no
 * route, -ENOENT when host does not resolve.
 */
int gid_route_src(const char *host, struct sockaddr_storage *dst, struct sockaddr_storage *src);
/* Same for a destination that is already an address. */
int gid_route_src_addr(const struct sockaddr *dst, struct sockaddr_storage *src);
/* The network device that carries a local address; -ENODEV when none does. */
int gid_addr_netdev(const struct sockaddr *addr, char ndev[IF_NAMESIZE]);

/* A chosen GID and why. */
struct gid_choice {
	struct gid_entry gid;
	char why[256];
};

/*
 * Choose the GID whose address is local (a local IP address, typically the source of the route to the
 * peer): RoCE v2 before RoCE v1, on device dev if not NULL, port if not 0. -ENOENT when no GID has that
 * address.
 */
int gid_pick_for_addr(const struct gid_table *t, const char *dev, int port, const struct sockaddr *local,
		      struct gid_choice *out);
/*
 * The best GID of dev/port for general use: RoCE v2 IPv4-mapped, then RoCE v2 other non-link-local,
 * RoCE v2 link-local, RoCE v1, IB. -ENOENT if the port has no GID.
 */
int gid_pick_best(const struct gid_table *t, const char *dev, int port, struct gid_choice *out);
/* Find the entry dev/port/index in t, or NULL. */
const struct gid_entry *gid_find(const struct gid_table *t, const char *dev, int port, int index);

#endif
