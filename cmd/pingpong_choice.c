// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong: the choice of device, port and GID from the options, told on stderr and in JSON. */
#include <netinet/in.h>
#include <stdio.h>

#include "pingpong/gid.h"
#include "core/out.h"
#include "pingpong.h"
#include "pingpong/pp.h"
#include "core/util.h"

struct pp_choose_opts pingpong_choose_opts(const struct pingpong_opts *o)
{
	return (struct pp_choose_opts){ .dev = o->dev, .ib_port = o->ib_port, .gidx = o->gid_set ? o->gidx : -1 };
}

int pingpong_choose(const struct pingpong_opts *po, const struct sockaddr *local, const char *whence,
		    struct pp_choice *ch)
{
	struct pp_choose_opts o = pingpong_choose_opts(po);
	char err[1024];
	int ret;

	ret = pp_choose(&o, local, whence, ch, err, sizeof(err));
	if (ret)
		pr_err("%s", err);
	return ret;
}

void pingpong_tell_choice(const struct pp_choice *ch)
{
	if (ch->gidx >= 0)
		fprintf(stderr, "%s: using %s port %d GID %d: %s\n", util_prog, ch->dev, ch->port, ch->gidx, ch->why);
	else
		fprintf(stderr, "%s: using %s port %d: %s\n", util_prog, ch->dev, ch->port, ch->why);
	if (*ch->note)
		fprintf(stderr, "%s: %s\n", util_prog, ch->note);
}

void pingpong_print_choice(const struct pp_choice *ch)
{
	char buf[INET6_ADDRSTRLEN];

	out_open_object("choice");
	print_string(PRINT_JSON, "device", NULL, ch->dev);
	print_int(PRINT_JSON, "port", NULL, ch->port);
	print_int(PRINT_JSON, "gid_index", NULL, ch->gidx);
	if (ch->gidx >= 0) {
		print_string(PRINT_JSON, "gid", NULL, gid_str(ch->gid.raw, buf, sizeof(buf)));
		print_string(PRINT_JSON, "gid_type", NULL, gid_type_str(ch->gid.type));
		print_string(PRINT_JSON, "address", NULL, gid_ip_str(ch->gid.raw, buf, sizeof(buf)));
		print_string(PRINT_JSON, "netdev", NULL, ch->gid.ndev);
	}
	print_string(PRINT_JSON, "reason", NULL, ch->why);
	if (*ch->note)
		print_string(PRINT_JSON, "note", NULL, ch->note);
	out_close_object();
}
