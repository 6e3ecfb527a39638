// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong --check: devices, ports, GID tables, which -g for which address, the route to HOST, warnings. */
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "pingpong/gid.h"
#include "core/out.h"
#include "pingpong.h"
#include "pingpong/pp.h"
#include "rdmactl.h"
#include "core/util.h"

/* A port: a line of text then its GID table and which GID for which address; an object in JSON. */
static void print_check_port(const struct pp_check_port *p)
{
	char gid[INET6_ADDRSTRLEN], ip[INET6_ADDRSTRLEN];
	size_t i;

	out_open_object(NULL);
	print_int(PRINT_ANY, "port", "  port %" PRId64 ": ", p->port);
	if (p->error) {
		print_string(PRINT_JSON, "error", NULL, strerror(p->error));
		/* The text has always shown a port that cannot be queried so (the error is among the warnings). */
		print_text("(null), link layer (null), active MTU 0 (max 0)\n");
		out_close_object();
		return;
	}
	print_string(PRINT_ANY, "state", "%s", pp_port_state_str(p->state));
	print_string(PRINT_ANY, "link_layer", ", link layer %s", p->eth ? "Ethernet" : "InfiniBand");
	print_uint(PRINT_ANY, "active_mtu", ", active MTU %" PRIu64, p->active_mtu);
	print_uint(PRINT_ANY, "max_mtu", " (max %" PRIu64 ")", p->max_mtu);
	if (!p->eth)
		print_uint(PRINT_JSON, "lid", NULL, p->lid);
	if (*p->ndev) {
		print_string(PRINT_ANY, "netdev", ", netdev %s", p->ndev);
		/* An unknown netdev MTU: no key in JSON, "MTU 0" in text. */
		print_int(p->ndev_mtu ? PRINT_ANY : PRINT_FP, "netdev_mtu", " (MTU %" PRId64 ")", p->ndev_mtu);
	}
	print_nl();

	out_open_array("gids");
	if (p->n_gids)
		print_text("    %-5s %-40s %-8s %-6s %s\n", "GID", "address", "type", "netdev", "gid");
	for (i = 0; i < p->n_gids; i++) {
		const struct gid_entry *e = &p->gids[i];

		out_open_object(NULL);
		print_int(PRINT_ANY, "index", "    %-5" PRId64 " ", e->index);
		print_string(PRINT_JSON, "gid", NULL, gid_str(e->raw, gid, sizeof(gid)));
		print_string(PRINT_JSON, "type", NULL, gid_type_str(e->type));
		print_string(PRINT_ANY, "address", "%-40s ", gid_ip_str(e->raw, ip, sizeof(ip)));
		print_string(PRINT_FP, NULL, "%-8s ", gid_type_str(e->type));
		print_bool(PRINT_JSON, "link_local", NULL, gid_is_link_local(e->raw));
		print_string(PRINT_ANY, "netdev", "%-6s ", e->ndev);
		print_string(PRINT_FP, NULL, "%s\n", gid);
		out_close_object();
	}
	out_close_array();

	out_open_array("use");
	for (i = 0; i < p->n_use; i++) {
		const struct pp_check_use *u = &p->use[i];

		out_open_object(NULL);
		print_string(PRINT_ANY, "address", "    to use %s: ", u->address);
		print_int(PRINT_ANY, "gid_index", "-g %" PRId64 " (", u->gid.index);
		print_string(PRINT_ANY, "type", "%s", gid_type_str(u->gid.type));
		print_string(PRINT_JSON, "netdev", NULL, u->gid.ndev);
		print_bool(PRINT_JSON, "link_local", NULL, u->link_local);
		print_text("%s)\n", u->link_local ? ", link-local: same link only" : "");
		out_close_object();
	}
	out_close_array();
	out_close_object();
}

/* Devices and ports, the route to HOST, the warnings (in JSON before the route). */
static void print_check(const struct pp_check *c)
{
	char line[1024];
	size_t i, j;

	out_open_object(NULL);
	out_open_array("devices");
	for (i = 0; i < c->n_devs; i++) {
		const struct pp_check_dev *d = &c->devs[i];

		out_open_object(NULL);
		print_string(PRINT_ANY, "name", "%s\n", d->name);
		if (d->opened) {
			out_open_array("ports");
			for (j = 0; j < d->n_ports; j++)
				print_check_port(&d->ports[j]);
			out_close_array();
		}
		out_close_object();
	}
	out_close_array();
	out_open_array("warnings");
	for (i = 0; i < c->n_warnings; i++)
		print_string(PRINT_JSON, NULL, NULL, c->warnings[i]);
	out_close_array();
	if (c->route.host) {
		const struct pp_choice *ch = &c->route.choice;

		out_open_object("route");
		print_string(PRINT_ANY, "host", "to reach %s: ", c->route.host);
		if (c->route.chosen) {
			snprintf(line, sizeof(line), "%s port %d GID %d: %s", ch->dev, ch->port, ch->gidx, ch->why);
			print_string(PRINT_ANY, "reason", "%s\n", line);
			pingpong_print_choice(ch);
		} else {
			/* No route or no choice: the text has always said so; the reason is on stderr or a warning. */
			print_text("(null)\n");
		}
		out_close_object();
	}
	for (i = 0; i < c->n_warnings; i++)
		print_string(PRINT_FP, NULL, "warning: %s\n", c->warnings[i]);
	if (!c->n_warnings)
		print_text("no problems found\n");
	out_close_object();
}

int pingpong_check(const struct pingpong_opts *a)
{
	struct pp_check_opts o = {
		.dev = a->dev, .ib_port = a->ib_port_set ? a->ib_port : 0, .host = a->host,
		.choose = pingpong_choose_opts(a),
	};
	struct pp_check c;
	char err[1024];

	if (pp_check_read(&o, &c, err, sizeof(err))) {
		pr_err("%s", err);
		pp_check_free(&c);
		return EXIT_FAIL;
	}
	if (*c.route.err)
		pr_err("%s", c.route.err);
	print_check(&c);
	pp_check_free(&c);
	return EXIT_OK;
}
