// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pingpong --check: what devices, ports and GID tables say, which GID for which address, and what is wrong. */
#include "pingpong/pp.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nl/nl.h"

/* The findings being gathered; ret turns -ENOMEM once something could not be kept. */
struct reader {
	struct pp_check *c;
	int ret;
};

/* One more zeroed element at the end of the array *arr (a pointer to the array pointer) of n elements. */
static void *grow(struct reader *r, void *arr, size_t *n, size_t size)
{
	char *v, *nv;

	memcpy(&v, arr, sizeof(v));
	nv = realloc(v, (*n + 1) * size);
	if (!nv) {
		r->ret = -ENOMEM;
		return NULL;
	}
	memcpy(arr, &nv, sizeof(nv));
	memset(nv + *n * size, 0, size);
	return nv + (*n)++ * size;
}

static void warn(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct reader *r, const char *fmt, ...)
{
	char buf[512], **w;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w = grow(r, &r->c->warnings, &r->c->n_warnings, sizeof(*w));
	if (w && !(*w = strdup(buf))) {
		r->c->n_warnings--;
		r->ret = -ENOMEM;
	}
}

static int netdev_mtu(const char *ndev)
{
	char path[128], buf[32];
	FILE *f;
	int v = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ndev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		v = atoi(buf);
	fclose(f);
	return v;
}

/* The kernel's port states (one table: lib/nl's; libibverbs' enum ibv_port_state has the same numbers). */
_Static_assert(IBV_PORT_NOP == 0 && IBV_PORT_DOWN == 1 && IBV_PORT_INIT == 2 && IBV_PORT_ARMED == 3 &&
		       IBV_PORT_ACTIVE == 4 && IBV_PORT_ACTIVE_DEFER == 5,
	       "ibv_port_state is the kernel's port state");

const char *pp_port_state_str(int state)
{
	return state > IBV_PORT_NOP && state <= IBV_PORT_ACTIVE_DEFER ? nl_port_state_name((uint8_t)state) : "NOP";
}

/* The GIDs of dev/port in t, and for each address the GID to use for it. */
static void read_gids(struct reader *r, const char *dev, int port, const struct gid_table *t, struct pp_check_port *p)
{
	struct pp_check_use *u;
	struct gid_entry *g;
	size_t i, j;

	for (i = 0; i < t->n; i++) {
		const struct gid_entry *e = &t->v[i];
		struct sockaddr_storage ss;
		struct gid_choice gc;

		if (strcmp(e->dev, dev) || e->port != port)
			continue;
		g = grow(r, &p->gids, &p->n_gids, sizeof(*g));
		if (g)
			*g = *e;
		/* One "use" per address: the first GID of the best type for it. */
		for (j = 0; j < i; j++)
			if (!strcmp(t->v[j].dev, dev) && t->v[j].port == port && !memcmp(t->v[j].raw, e->raw, 16))
				break;
		if (j < i)
			continue;
		gid_to_sockaddr(e->raw, &ss);
		if (gid_pick_for_addr(t, dev, port, (struct sockaddr *)&ss, &gc))
			continue;
		u = grow(r, &p->use, &p->n_use, sizeof(*u));
		if (!u)
			continue;
		gid_ip_str(e->raw, u->address, sizeof(u->address));
		u->gid = gc.gid;
		u->link_local = gid_is_link_local(e->raw);
	}
}

/* One port: attributes, GIDs, which GID for which address; what is wrong with it goes to the warnings. */
static void read_port(struct reader *r, struct ibv_context *ctx, const char *dev, int port, const struct gid_table *t,
		      struct pp_check_port *p)
{
	struct ibv_port_attr pa;
	const char *ndev = NULL;
	bool v2 = false;
	size_t i;

	p->port = port;
	if (ibv_query_port(ctx, (uint8_t)port, &pa)) {
		p->error = errno;
		warn(r, "%s/%d: cannot query the port: %s", dev, port, strerror(p->error));
		return;
	}
	p->state = pa.state;
	p->eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	p->active_mtu = pp_mtu_from_enum(pa.active_mtu);
	p->max_mtu = pp_mtu_from_enum(pa.max_mtu);
	p->lid = pa.lid;
	read_gids(r, dev, port, t, p);
	for (i = 0; i < p->n_gids; i++) {
		if (*p->gids[i].ndev && !ndev)
			ndev = p->gids[i].ndev;
		v2 |= p->gids[i].type == GID_TYPE_ROCE_V2;
	}
	if (ndev) {
		snprintf(p->ndev, sizeof(p->ndev), "%s", ndev);
		p->ndev_mtu = netdev_mtu(ndev);
	}
	if (pa.state != IBV_PORT_ACTIVE)
		warn(r, "%s/%d: port is %s: nothing can connect through it (is %s up? ip link set %s up)", dev, port,
		     pp_port_state_str(pa.state), ndev ? ndev : "its netdev", ndev ? ndev : "DEV");
	if (p->eth && !v2)
		warn(r, "%s/%d: no RoCE v2 GID: RoCE v2 peers cannot reach this port (give %s an IP address)", dev, port,
		     ndev ? ndev : "its netdev");
	/* RoCE v2 over IPv4 adds IP, UDP, BTH, RETH and ICRC headers (60 bytes) to a path-MTU payload. */
	if (p->eth && p->ndev_mtu && (int)p->active_mtu + 60 > p->ndev_mtu)
		warn(r, "%s/%d: active MTU %u is larger than %s's MTU %d allows: full-size packets will be dropped "
		     "(use -m %u or raise the netdev MTU)", dev, port, p->active_mtu, p->ndev, p->ndev_mtu,
		     p->ndev_mtu >= 4096 + 60 ? 4096 :
		     p->ndev_mtu >= 2048 + 60 ? 2048 :
		     p->ndev_mtu >= 1024 + 60 ? 1024 : 512);
}

/* One device: its ports (or the one asked for). */
static void read_dev(struct reader *r, const struct pp_check_opts *o, struct ibv_device *dev, const struct gid_table *t)
{
	const char *name = ibv_get_device_name(dev);
	struct pp_check_port *pt;
	struct pp_check_dev *d;
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	int p;

	d = grow(r, &r->c->devs, &r->c->n_devs, sizeof(*d));
	if (!d)
		return;
	snprintf(d->name, sizeof(d->name), "%s", name);
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_device(ctx, &da)) {
		warn(r, "%s: cannot open or query the device: %s", name, strerror(errno));
		if (ctx)
			ibv_close_device(ctx);
		return;
	}
	d->opened = true;
	for (p = 1; p <= da.phys_port_cnt; p++) {
		if (o->ib_port && p != o->ib_port)
			continue;
		pt = grow(r, &d->ports, &d->n_ports, sizeof(*pt));
		if (pt)
			read_port(r, ctx, name, p, t, pt);
	}
	if (o->ib_port && o->ib_port > da.phys_port_cnt)
		warn(r, "%s: no port %d (the device has %d)", name, o->ib_port, da.phys_port_cnt);
	ibv_close_device(ctx);
}

/* The route to o->host and the device and GID the pingpong would take for it. */
static void read_route(struct reader *r, const struct pp_check_opts *o)
{
	struct pp_check *c = r->c;
	struct sockaddr_storage dst, src;
	char why[160], ip[INET6_ADDRSTRLEN];
	int ret;

	c->route.host = o->host;
	ret = gid_route_src(o->host, &dst, &src);
	if (ret) {
		warn(r, "%s: %s", o->host, ret == -ENOENT ? "unknown host" : strerror(-ret));
		return;
	}
	snprintf(why, sizeof(why), "the route to %s leaves from {}",
		 gid_sockaddr_str((struct sockaddr *)&dst, ip, sizeof(ip)));
	c->route.chosen = !pp_choose(&o->choose, (struct sockaddr *)&src, why, &c->route.choice, c->route.err,
				     sizeof(c->route.err));
}

int pp_check_read(const struct pp_check_opts *o, struct pp_check *c, char *err, size_t errlen)
{
	struct reader r = { .c = c };
	struct ibv_device **list;
	struct gid_table t = { 0 };
	int i, n, ret, found = 0;
	char name0[64];

	memset(c, 0, sizeof(*c));
	ret = gid_table_read(o->dev, 0, &t);
	if (ret && ret != -ENODEV) {
		snprintf(err, errlen, "cannot read the GID tables from sysfs: %s", strerror(-ret));
		goto out;
	}
	if (o->dev && gid_dev_ports(o->dev, &i, 1) < 0) {
		ret = -ENODEV;
		snprintf(err, errlen, "device %s not found (run 'rdmactl pingpong --check' without -d to list the "
			 "devices)", o->dev);
		goto out;
	}
	if (!o->dev && gid_first_dev(name0, sizeof(name0)) == -ENODEV) {
		ret = -ENODEV;
		snprintf(err, errlen, "no RDMA devices (load the driver and ib_uverbs; for Soft-RoCE: rdma link add "
			 "rxe0 type rxe netdev eth0)");
		goto out;
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		ret = errno ? -errno : -ENODEV;
		snprintf(err, errlen, "cannot list RDMA devices: %s (is ib_uverbs loaded?)", strerror(-ret));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (o->dev && strcmp(ibv_get_device_name(list[i]), o->dev))
			continue;
		found++;
		read_dev(&r, o, list[i], &t);
	}
	ibv_free_device_list(list);
	if (!found) {
		ret = -ENODEV;
		if (o->dev)
			snprintf(err, errlen, "device %s not found (devices: see 'rdmactl pingpong --check')", o->dev);
		else
			snprintf(err, errlen, "no RDMA devices (load the driver or ib_uverbs; for Soft-RoCE: rdma link add "
				 "rxe0 type rxe netdev eth0)");
		goto out;
	}
	if (o->host)
		read_route(&r, o);
	ret = r.ret;
	if (ret)
		snprintf(err, errlen, "out of memory");
out:
	gid_table_free(&t);
	return ret;
}

void pp_check_free(struct pp_check *c)
{
	size_t i, j;

	for (i = 0; i < c->n_devs; i++) {
		for (j = 0; j < c->devs[i].n_ports; j++) {
			free(c->devs[i].ports[j].gids);
			free(c->devs[i].ports[j].use);
		}
		free(c->devs[i].ports);
	}
	free(c->devs);
	for (i = 0; i < c->n_warnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	memset(c, 0, sizeof(*c));
}
