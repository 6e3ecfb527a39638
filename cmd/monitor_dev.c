// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl monitor: device names by index, and device add, remove and rename events. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "monitor/monfmt.h"
#include "monitor.h"
#include "nl/nl.h"
#include "nl/nlmon.h"
#include "core/out.h"
#include "core/util.h"

/* --- device names ----------------------------------------------------------------------------------- */

/*
 * Device names by index. Object events carry only the device's index (reading its name costs the probe a
 * helper call per event), and netlink netdev events only the index too. The table starts from an RDMA
 * netlink dump and follows adds, renames and removals. A removed device keeps its entry (marked gone): the
 * destroys of its objects can still be in the ring when the removal is read. An index not in the table
 * (a device added an instant ago) makes one new dump if the last one began before the event happened (the
 * device existed then, so a dump from after it lists the device unless it is gone already), else at
 * most every 100 ms. Timing alone is not enough: a device's add notification can come, and be followed
 * by a dump, before the device is registered and listed, while its first objects follow within 100 ms.
 */
static struct {
	uint32_t index;
	bool gone;
	char name[MON_DEV_LEN];
} dev_names[256];
static size_t ndev_names;
static double dev_names_loaded = -1;

static const char *dev_name_find(uint32_t index)
{
	size_t i;

	for (i = 0; i < ndev_names; i++)
		if (dev_names[i].index == index)
			return dev_names[i].name;
	return NULL;
}

static void dev_name_set(uint32_t index, const char *name)
{
	size_t i;

	for (i = 0; i < ndev_names && dev_names[i].index != index; i++)
		;
	if (i == ndev_names) {
		if (ndev_names == ARRAY_SIZE(dev_names)) {
			/* full: forget a removed device (its objects' destroys are long read) */
			for (i = 0; i < ndev_names && !dev_names[i].gone; i++)
				;
			if (i == ndev_names)
				return;
		} else {
			ndev_names++;
		}
	}
	dev_names[i].index = index;
	dev_names[i].gone = false;
	snprintf(dev_names[i].name, sizeof(dev_names[i].name), "%s", name);
}

static void dev_name_rename(const char *old, const char *name)
{
	size_t i;

	for (i = 0; i < ndev_names; i++)
		if (!dev_names[i].gone && !strcmp(dev_names[i].name, old)) {
			snprintf(dev_names[i].name, sizeof(dev_names[i].name), "%s", name);
			return;
		}
}

/* A removed device, by index (netlink) or by name (uevent: index NULL). */
static void dev_name_gone(const uint32_t *index, const char *name)
{
	size_t i;

	for (i = 0; i < ndev_names; i++)
		if (!dev_names[i].gone && (index ? dev_names[i].index == *index : !strcmp(dev_names[i].name, name))) {
			dev_names[i].gone = true;
			return;
		}
}

static int dev_name_cb(const struct nl_dev *d, void *arg)
{
	(void)arg;
	dev_name_set(d->index, d->name);
	return 0;
}

void dev_names_load(void)
{
	struct nl_handlers h = { .dev = dev_name_cb };
	struct nl_sock *s;
	int err;

	dev_names_loaded = clock_mono_s(); /* before the dump: whatever happened until now is in it */
	err = nl_open(&s);
	if (!err) {
		err = nl_dev_dump(s, &h);
		nl_close(s);
	}
	if (err)
		pr_debug("device names: RDMA netlink: %s", strerror(-err));
}

/*
 * The name of an object event's device: "" for none, or for a device gone before we could learn its name.
 * at: when the event happened (CLOCK_MONOTONIC seconds), or -1 when unknown.
 */
const char *dev_name_of(uint32_t index, double at)
{
	const char *name;

	if (index == MON_DEV_NONE)
		return "";
	name = dev_name_find(index);
	if (!name && (dev_names_loaded <= at || clock_mono_s() - dev_names_loaded >= 0.1)) {
		dev_names_load();
		name = dev_name_find(index);
	}
	return name ? name : "";
}

/* --- device events: RDMA netlink notifications, or kernel uevents of the infiniband class ------------ */

/* Where device events come from: "netlink", "uevent" or "none" (for -v and the JSON "start" event). */
const char *dev_source = "none";
/* With the netlink source: the uevent socket that renames come from (-1 none). */
int rename_fd = -1;

/* One device event. ne: the netlink notification (NULL for a uevent); old: the previous name of a rename. */
static void print_device(const char *action, const char *dev, const char *old, const struct nlmon_event *ne)
{
	char tbuf[MON_TIME_LEN], detail[128];
	size_t n = 0;
	uint64_t t;
	bool netdev = ne && (ne->type == NLMON_NETDEV_ATTACH || ne->type == NLMON_NETDEV_DETACH ||
			     ne->type == NLMON_NETDEV_RENAME);

	if (mopt.dev && strcmp(mopt.dev, dev) && (!old || strcmp(mopt.dev, old)))
		return;
	monitor_summary.devices++;
	if (mopt.stats)
		return;
	t = clock_rt_ns();
	text_header();
	detail[0] = 0;
	if (old)
		n = snprintf(detail, sizeof(detail), "was %s", old);
	if (n >= sizeof(detail))
		n = sizeof(detail) - 1;
	if (netdev)
		snprintf(detail + n, sizeof(detail) - n, "%sport %u netdev %s (%u)", n ? " " : "", ne->port,
			 ne->has & NLMON_HAS_NDEV_NAME ? ne->ndev_name : "?", ne->ndev_index);
	out_open_object(NULL);
	print_string(PRINT_JSON, "time", NULL, mon_time_iso(t, tbuf, sizeof(tbuf)));
	/* "netdev_attached" -> "attached" under TYPE "netdev" keeps the columns */
	print_text("%-15s %7s %-15s %-8s %-7s %-8.8s %8s  %s\n", mon_time_text(t, tbuf, sizeof(tbuf)), "-", "-",
		   netdev ? action + 7 : action, netdev ? "netdev" : "device", dev[0] ? dev : "-", "-", detail);
	print_string(PRINT_JSON, "event", NULL, "device");
	print_string(PRINT_JSON, "action", NULL, action);
	print_string(PRINT_JSON, "dev", NULL, dev);
	if (old)
		print_string(PRINT_JSON, "old_name", NULL, old);
	if (ne && (ne->has & NLMON_HAS_DEV))
		print_int(PRINT_JSON, "dev_index", NULL, ne->dev_index);
	if (ne && (ne->has & NLMON_HAS_PORT))
		print_int(PRINT_JSON, "port", NULL, ne->port);
	if (ne && (ne->has & NLMON_HAS_NDEV_NAME))
		print_string(PRINT_JSON, "netdev", NULL, ne->ndev_name);
	if (ne && (ne->has & NLMON_HAS_NDEV))
		print_int(PRINT_JSON, "netdev_index", NULL, ne->ndev_index);
	if (ne && !nlmon_type_name(ne->type))
		print_int(PRINT_JSON, "event_type", NULL, ne->type);
	print_string(PRINT_JSON, "source", NULL, ne ? "netlink" : "uevent");
	out_close_object();
	out_flush();
}

static int on_nlmon(const struct nlmon_event *e, void *arg)
{
	char unknown[32];
	const char *name = NULL;

	(void)arg;
	if (e->has & NLMON_HAS_NAME)
		name = e->dev_name;
	else if (e->has & NLMON_HAS_DEV)
		name = dev_name_of(e->dev_index, -1); /* netdev renames carry only the index */
	if (!name)
		name = "";
	switch (e->type) {
	case NLMON_REGISTER:
		dev_name_set(e->dev_index, name);
		print_device("added", name, NULL, e);
		break;
	case NLMON_UNREGISTER:
		print_device("removed", name, NULL, e);
		dev_name_gone(&e->dev_index, NULL);
		break;
	case NLMON_RENAME:
		/* printed from the uevent (see device_events_open); only the name table follows */
		dev_name_set(e->dev_index, name);
		break;
	case NLMON_NETDEV_ATTACH:
		print_device("netdev_attached", name, NULL, e);
		break;
	case NLMON_NETDEV_DETACH:
		print_device("netdev_detached", name, NULL, e);
		break;
	case NLMON_NETDEV_RENAME:
		print_device("netdev_renamed", name, NULL, e);
		break;
	default:
		snprintf(unknown, sizeof(unknown), "event_%u", e->type);
		print_device(unknown, name, NULL, e);
	}
	return 0;
}

/*
 * Kernels with RDMA netlink notifications (RDMA_NL_GROUP_NOTIFY; mainline since 2024) say so in SYS_GET:
 * device register/unregister/rename and netdev attach/detach/rename come from there. Linux 6.1 has none,
 * so device add/remove/rename come from the kernel's kobject uevents (SUBSYSTEM=infiniband), which every
 * kernel sends whether or not udevd runs. RDMACTL_MON_UEVENT=1 forces the uevents.
 * Renames always come from the uevents: not every kernel with the notifications sends one for a rename
 * (6.12 does not), and taking them from one place reports each rename once on every kernel.
 */
static int uevent_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int device_events_open(void)
{
	const char *force = getenv("RDMACTL_MON_UEVENT");
	int fd, err;

	if (!(force && *force && strcmp(force, "0"))) {
		err = nlmon_open(&fd);
		if (!err) {
			dev_source = "netlink";
			rename_fd = uevent_open();
			if (rename_fd < 0)
				pr_debug("no device renames: %s", strerror(-rename_fd));
			return fd;
		}
		pr_debug("no RDMA netlink device notifications (%s): using uevents",
			 err == -EOPNOTSUPP ? "kernel without them" : strerror(-err));
	}
	fd = uevent_open();
	if (fd < 0) {
		pr_debug("no device events: %s", strerror(-fd));
		return fd;
	}
	dev_source = "uevent";
	return fd;
}

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* Kernel uevents of the infiniband class; renames_only with the netlink source (which has the rest). */
void uevent_read(int fd, bool renames_only)
{
	char buf[8192];
	struct sockaddr_nl sa;
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr msg = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	while ((n = recvmsg(fd, &msg, 0)) > 0) {
		const char *action = NULL, *devpath = NULL, *subsys = NULL, *old = NULL, *what;
		char *s;

		if (sa.nl_pid != 0) /* only the kernel, never another process */
			continue;
		buf[n] = 0;
		for (s = buf; s < buf + n; s += strlen(s) + 1) {
			if (!strncmp(s, "ACTION=", 7))
				action = s + 7;
			else if (!strncmp(s, "DEVPATH=", 8))
				devpath = s + 8;
			else if (!strncmp(s, "SUBSYSTEM=", 10))
				subsys = s + 10;
			else if (!strncmp(s, "DEVPATH_OLD=", 12))
				old = s + 12;
		}
		if (!action || !devpath || !subsys || strcmp(subsys, "infiniband"))
			continue;
		if (!strcmp(action, "add"))
			what = "added";
		else if (!strcmp(action, "remove"))
			what = "removed";
		else if (!strcmp(action, "move"))
			what = "renamed";
		else
			continue; /* change, bind...: not a lifetime event */
		if (renames_only && strcmp(what, "renamed"))
			continue;
		/* the name table (netlink adds and removes keep it by index themselves) */
		if (!strcmp(what, "renamed")) {
			if (old)
				dev_name_rename(basename_of(old), basename_of(devpath));
		} else if (!strcmp(what, "added")) {
			dev_names_load(); /* the uevent has no index */
		} else {
			dev_name_gone(NULL, basename_of(devpath));
		}
		print_device(what, basename_of(devpath), old ? basename_of(old) : NULL, NULL);
	}
}

void device_events_read(int fd)
{
	int err;

	if (strcmp(dev_source, "netlink")) {
		uevent_read(fd, false);
		return;
	}
	err = nlmon_read(fd, on_nlmon, NULL);
	if (err == -ENOBUFS)
		pr_err("device notifications overran the socket buffer: some were lost");
	else if (err < 0 && err != -EAGAIN)
		pr_debug("device notifications: %s", strerror(-err));
}

