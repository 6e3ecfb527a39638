/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the rooms of rdmactl pingpong share: its options, the choice of device, port and GID, the rooms' entries. */
#ifndef RDMACTL_PINGPONG_H
#define RDMACTL_PINGPONG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "pingpong/pp.h"

/* The command line (pingpong.c parses it). */
struct pingpong_opts {
	const char *dev;
	int ib_port;
	int gidx;
	bool gid_set, port_set, ib_port_set, mtu_set, iters_set, events_set;
	unsigned int size, iters, rx_depth, mtu;
	int sl;
	uint16_t port;
	bool events, check, cm;
	int timeout_s, accept_timeout_s;
	const char *host; /* NULL: server */
};

/* pingpong_choice.c: device, port and GID from -d, -i, -g and the address towards the peer. */
struct pp_choose_opts pingpong_choose_opts(const struct pingpong_opts *o);
/* pp_choose() with the options; the message on stderr when it fails. */
int pingpong_choose(const struct pingpong_opts *o, const struct sockaddr *local, const char *whence,
		    struct pp_choice *ch);
/* On stderr: which device, port and GID, and why. */
void pingpong_tell_choice(const struct pp_choice *ch);
/* JSON only (text says it on stderr): the choice as the member "choice". */
void pingpong_print_choice(const struct pp_choice *ch);

/* The rooms: each returns an exit code. */
int pingpong_rc(const struct pingpong_opts *o);    /* pingpong_rc.c: client with a HOST, else server */
int pingpong_cm(const struct pingpong_opts *o);    /* pingpong_cm.c: --cm */
int pingpong_check(const struct pingpong_opts *o); /* pingpong_check.c: --check */

#endif
