// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl pingpong --cm: through rdma_cm, RDMA-write a buffer, read it back, verify; the result. */
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>

#include "pingpong/gid.h"
#include "core/out.h"
#include "pingpong.h"
#include "pingpong/pp.h"
#include "rdmactl.h"
#include "core/util.h"

static void cm_waiting(uint16_t port)
{
	fprintf(stderr, "%s: waiting for an rdma_cm client on port %u\n", util_prog, port);
}

int pingpong_cm(const struct pingpong_opts *a)
{
	struct pp_cm_opts o = {
		.host = a->host, .port = a->port, .size = a->size, .timeout_ms = a->timeout_s * 1000,
		.accept_timeout_ms = a->accept_timeout_s ? a->accept_timeout_s * 1000 : -1, .waiting = cm_waiting,
	};
	struct pp_cm_result r;
	char err[512], gid[INET6_ADDRSTRLEN];

	if (pp_cm_run(&o, &r, err, sizeof(err))) {
		pr_err("%s", err);
		return EXIT_FAIL;
	}
	out_open_object(NULL);
	print_string(PRINT_JSON, "mode", NULL, "cm");
	print_string(PRINT_JSON, "role", NULL, a->host ? "client" : "server");
	print_string(PRINT_ANY, "device", "rdma_cm: %s", r.dev);
	print_int(PRINT_ANY, "port", " port %" PRId64, r.port);
	print_string(PRINT_ANY, "local_address", ", %s", r.local);
	print_string(PRINT_ANY, "remote_address", " -> %s", r.remote);
	print_string(PRINT_ANY, "sgid", ", GID %s", gid_str(r.sgid, gid, sizeof(gid)));
	print_string(PRINT_ANY, "dgid", " -> %s\n", gid_str(r.dgid, gid, sizeof(gid)));
	if (a->host) {
		print_uint(PRINT_ANY, "size", "RDMA write of %" PRIu64 " bytes: ", r.size);
		print_fixed(PRINT_ANY, "write_us", "%.1f usec, ", r.write_us, 2);
		print_fixed(PRINT_ANY, "read_us", "read back: %.1f usec, data verified\n", r.read_us, 2);
	} else {
		print_uint(PRINT_ANY, "size",
			   "the client's RDMA write of %" PRIu64 " bytes arrived intact, data verified\n", r.size);
	}
	print_bool(PRINT_JSON, "verified", NULL, r.verified);
	out_close_object();
	return EXIT_OK;
}
