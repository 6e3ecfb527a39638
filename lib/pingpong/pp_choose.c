// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pingpong's choice of device, port and GID for a peer: from the route's source address, and why. */
#include "pingpong/pp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static bool is_ib(const char *dev, int port)
{
	char ll[32];

	return !gid_port_attr(dev, port, "link_layer", ll, sizeof(ll)) && !strcmp(ll, "InfiniBand");
}

/* The device: as given, else the one whose GID has our address, else the first. */
static int choose_dev(const struct pp_choose_opts *o, const struct gid_table *t, const struct sockaddr *local,
		      struct pp_choice *ch, char *err, size_t errlen)
{
	struct gid_choice gc;
	int ret;

	if (o->dev) {
		snprintf(ch->dev, sizeof(ch->dev), "%s", o->dev);
	} else if (local && !gid_pick_for_addr(t, NULL, o->ib_port, local, &gc)) {
		snprintf(ch->dev, sizeof(ch->dev), "%s", gc.gid.dev);
	} else {
		ret = gid_first_dev(ch->dev, sizeof(ch->dev));
		if (ret) {
			snprintf(err, errlen, "no RDMA device found (load the driver; for Soft-RoCE: rdma link add rxe0 "
				 "type rxe netdev eth0)");
			return ret;
		}
	}
	return 0;
}

/* The GID given with -g, if the port has it; where says the route's source address (local) for the note. */
static int choose_given_gid(const struct pp_choose_opts *o, const struct gid_table *t,
			    const struct sockaddr *local, const char *where, struct pp_choice *ch, char *err, size_t errlen)
{
	const struct gid_entry *e;
	struct gid_choice gc;
	char desc[160];

	e = gid_find(t, ch->dev, ch->port, o->gidx);
	if (!e) {
		if (!gid_pick_best(t, ch->dev, ch->port, &gc))
			snprintf(err, errlen, "GID index %d of %s port %d is empty (use -g %d (%s), or see "
				 "'rdmactl pingpong --check')", o->gidx, ch->dev, ch->port, gc.gid.index,
				 gid_desc(&gc.gid, desc, sizeof(desc)));
		else
			snprintf(err, errlen, "GID index %d of %s port %d is empty and the port has no GID (is the "
				 "port up? see 'rdmactl pingpong --check')", o->gidx, ch->dev, ch->port);
		return -ENOENT;
	}
	ch->gidx = o->gidx;
	ch->gid = *e;
	snprintf(ch->why, sizeof(ch->why), "GID %d (%s) as given by -g", o->gidx, gid_desc(e, desc, sizeof(desc)));
	/* Say so when the route would want another GID: the usual cause of an RTR failure. */
	if (local && !gid_pick_for_addr(t, ch->dev, ch->port, local, &gc) && gc.gid.index != o->gidx) {
		gid_desc(&gc.gid, desc, sizeof(desc));
		ch->suggest = gc.gid.index;
		snprintf(ch->suggest_desc, sizeof(ch->suggest_desc), "%s", desc);
		snprintf(ch->note, sizeof(ch->note), "note: %s; its GID is -g %d (%s)", where, gc.gid.index, desc);
	}
	return 0;
}

/*
 * Without -g: the GID of the route's source address (local, ip on the netdev ndev, said in where), else
 * none on an InfiniBand port, else the port's best GID, with a warning when there was an address.
 */
static int choose_gid(const struct gid_table *t, const struct sockaddr *local, const char *where, const char *ip,
		      const char *ndev, struct pp_choice *ch, char *err, size_t errlen)
{
	struct gid_choice gc;
	char desc[160];

	if (local && !gid_pick_for_addr(t, ch->dev, ch->port, local, &gc)) {
		ch->gid = gc.gid;
		ch->gidx = gc.gid.index;
		snprintf(ch->why, sizeof(ch->why), "%s; GID %d is the %s GID of that address", where, ch->gidx,
			 gid_type_str(gc.gid.type));
		return 0;
	}
	if (is_ib(ch->dev, ch->port) && (!local || gid_pick_best(t, ch->dev, ch->port, &gc))) {
		snprintf(ch->why, sizeof(ch->why), "InfiniBand port: LID routing, no GRH (as ibv_rc_pingpong "
			 "without -g)");
		return 0;
	}
	if (!gid_pick_best(t, ch->dev, ch->port, &gc)) {
		ch->gid = gc.gid;
		ch->gidx = gc.gid.index;
		gid_desc(&gc.gid, desc, sizeof(desc));
		if (local)
			snprintf(ch->why, sizeof(ch->why), "%s, but no GID of %s port %d has that address; using its "
				 "best GID %d (%s)", where, ch->dev, ch->port, ch->gidx, desc);
		else
			snprintf(ch->why, sizeof(ch->why), "best GID of %s port %d: %s", ch->dev, ch->port, desc);
		if (local)
			snprintf(ch->note, sizeof(ch->note), "warning: %s port %d has no GID for %s: the peer may not "
				 "reach it (is %s the device on %s?)", ch->dev, ch->port, ip, ch->dev,
				 *ndev ? ndev : "that network");
		return 0;
	}
	snprintf(err, errlen, "%s port %d has no usable GID (port down or no IP address on its netdev? see "
		 "'rdmactl pingpong --check')", ch->dev, ch->port);
	return -ENOENT;
}

int pp_choose(const struct pp_choose_opts *o, const struct sockaddr *local, const char *whence,
	      struct pp_choice *ch, char *err, size_t errlen)
{
	char ip[INET6_ADDRSTRLEN] = "", ndev[IF_NAMESIZE] = "", where[256] = "";
	const char *mark = strstr(whence, "{}");
	int ret, pre = mark ? (int)(mark - whence) : (int)strlen(whence);
	struct gid_table t = { 0 };

	memset(ch, 0, sizeof(*ch));
	ch->port = o->ib_port;
	ch->gidx = -1;
	ch->suggest = -1;
	ret = gid_table_read(o->dev, 0, &t);
	if (ret == -ENODEV) {
		snprintf(err, errlen, "device %s not found (see 'rdmactl pingpong --check' for the devices there are)",
			 o->dev);
		return ret;
	}
	if (ret) {
		snprintf(err, errlen, "cannot read the GID tables: %s", strerror(-ret));
		return ret;
	}
	if (local) {
		gid_sockaddr_str(local, ip, sizeof(ip));
		gid_addr_netdev(local, ndev);
		snprintf(where, sizeof(where), "%.*s%s%s%s%s", pre, whence, ip, *ndev ? " on " : "", ndev,
			 mark ? mark + 2 : "");
	}
	ret = choose_dev(o, &t, local, ch, err, errlen);
	if (!ret)
		ret = o->gidx >= 0 ? choose_given_gid(o, &t, local, where, ch, err, errlen) :
				     choose_gid(&t, local, where, ip, ndev, ch, err, errlen);
	gid_table_free(&t);
	return ret;
}
