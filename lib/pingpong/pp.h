/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* pingpong engines: the ibv_rc_pingpong wire, TCP with deadlines, RC and rdma_cm runs, GID choice, diagnosis, --check. */
#ifndef RDMACTL_PP_H
#define RDMACTL_PP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "pingpong/gid.h"

/* sizeof "0000:000000:000000:" + 32 hex digits + NUL: what ibv_rc_pingpong reads and writes. */
#define PP_MSG_LEN 52
/* The client's last word, NUL included. */
#define PP_DONE_LEN 5

struct pp_dest {
	uint32_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
};

/* "%04x:%06x:%06x:<32 hex digits of the raw GID>" plus NUL, exactly PP_MSG_LEN bytes. */
void pp_wire_format(const struct pp_dest *d, char msg[PP_MSG_LEN]);
/* Parse a peer's message (len bytes, NUL not required); -EPROTO when it is not one. */
int pp_wire_parse(const char *msg, size_t len, struct pp_dest *d);

/* IB MTU in bytes (256..4096) to enum ibv_mtu value (1..5); -EINVAL otherwise. And back. */
int pp_mtu_to_enum(unsigned int mtu);
unsigned int pp_mtu_from_enum(int e);

/* TCP with deadlines. timeout_ms < 0 waits forever. All return 0 or -errno (-ETIMEDOUT). */
int pp_tcp_listen(uint16_t port, int *fd);
int pp_tcp_accept(int lfd, int timeout_ms, int *cfd);
int pp_tcp_connect(const char *host, uint16_t port, int timeout_ms, int *fd);
/* Read up to len bytes, stopping early at EOF; returns the count or -errno. */
ssize_t pp_read_full(int fd, void *buf, size_t len, int timeout_ms);
int pp_write_full(int fd, const void *buf, size_t len, int timeout_ms);

/* Milliseconds left until deadline (monotonic ns), 0 when passed. */
int pp_ms_left(uint64_t deadline_ns);
uint64_t pp_now_ns(void);

struct pp_stats {
	double min, avg, p50, p99, p999, max;
};
/* Sort samples (µs) in place and summarise them; nearest-rank percentiles. n == 0 gives zeros. */
void pp_stats_compute(double *samples, size_t n, struct pp_stats *s);

struct pp_result {
	unsigned int iters;
	uint64_t bytes; /* both directions, as ibv_rc_pingpong counts */
	double seconds;
	double gbps;
	struct pp_stats lat; /* round trip per iteration, µs */
	unsigned long cq_events;
};

/* --- RC over verbs (ibv_rc_pingpong compatible) ------------------------------------------------ */
struct pp_rc_opts {
	const char *dev; /* NULL: first device */
	int ib_port;
	int gid_index; /* < 0: no GRH, like ibv_rc_pingpong without -g */
	unsigned int size;
	unsigned int iters;
	unsigned int rx_depth;
	int mtu; /* enum ibv_mtu */
	int sl;
	bool events;
	int timeout_ms; /* without progress for this long, the run fails */
};

/* Why the last step failed, for the caller's diagnosis. */
enum pp_fail {
	PP_FAIL_NONE,
	PP_FAIL_SETUP, /* device, PD, MR, CQ, QP, INIT */
	PP_FAIL_RTR,
	PP_FAIL_RTS,
	PP_FAIL_STALL, /* no completion before the deadline */
	PP_FAIL_WC, /* a completion with an error status */
	PP_FAIL_POST,
};

struct pp_rc;

/* Open the device and create PD, MR, CQ, QP (INIT), post the receives. err gets the message. */
int pp_rc_open(struct pp_rc **rc, const struct pp_rc_opts *o, char *err, size_t errlen);
void pp_rc_close(struct pp_rc *rc);
/* Our side of the exchange: LID, QPN, a random PSN, GID (zero without GRH). */
void pp_rc_local(struct pp_rc *rc, struct pp_dest *me);
/* Port attributes the caller's diagnosis needs. */
int pp_rc_port(struct pp_rc *rc, int *link_layer, int *active_mtu, int *state);
/* RTR then RTS towards rem. */
int pp_rc_connect(struct pp_rc *rc, const struct pp_dest *rem, char *err, size_t errlen);
/* The pingpong loop: client sends first. */
int pp_rc_run(struct pp_rc *rc, bool client, struct pp_result *res, char *err, size_t errlen);
enum pp_fail pp_rc_fail(const struct pp_rc *rc);
/* Completion status of a PP_FAIL_WC (enum ibv_wc_status), and how many iterations got through. */
int pp_rc_wc_status(const struct pp_rc *rc);
/* Whether that failed completion was of a receive (else of a send). */
bool pp_rc_wc_recv(const struct pp_rc *rc);
unsigned int pp_rc_done_iters(const struct pp_rc *rc);

/* --- device, port and GID for a peer (pp_choose.c) ------------------------------------------- */
struct pp_choose_opts {
	const char *dev; /* NULL: the device whose GID has our address, else the first */
	int ib_port;
	int gidx; /* < 0: choose; else the index given with -g */
};

/* Device, port and GID to use, and why. */
struct pp_choice {
	char dev[64];
	int port;
	int gidx; /* -1: no GRH (InfiniBand without -g) */
	struct gid_entry gid;
	char why[800];
	char note[512]; /* "" or a note or warning about the choice */
	int suggest; /* with -g: the GID the route wants instead, else -1 */
	char suggest_desc[160];
};

/*
 * Pick device, port and GID. local is our address towards the peer (the route's source for a client,
 * the address the client reached for a server), NULL when unknown; whence says how it was found, with
 * "{}" where the address (and its netdev) goes. Returns 0, or -errno with the cause and the fix in err.
 */
int pp_choose(const struct pp_choose_opts *o, const struct sockaddr *local, const char *whence,
	      struct pp_choice *ch, char *err, size_t errlen);

/* --- why an RC connection or run failed (pp_diag.c) ------------------------------------------ */
/*
 * The cause and the fix of a failed pp_rc_connect() (ret: what it returned) or pp_rc_run() towards rem,
 * for the step's own message; "" when there is nothing to add. mtu and size: the -m and -s asked for;
 * client: which side we are.
 */
void pp_rc_hint(struct pp_rc *rc, const struct pp_choice *ch, const struct pp_dest *rem, int ret, unsigned int mtu,
		unsigned int size, bool client, char *hint, size_t hintlen);

/* --- --check: devices, ports, GIDs, which GID for which address (pp_check.c) ------------------ */
struct pp_check_opts {
	const char *dev; /* NULL: every device */
	int ib_port; /* 0: every port */
	const char *host; /* NULL: no route to look at */
	struct pp_choose_opts choose; /* for the route to host */
};

/* An address of the port and the GID to use for it. */
struct pp_check_use {
	char address[64];
	struct gid_entry gid;
	bool link_local;
};

struct pp_check_port {
	int port;
	int error; /* errno of querying the port; nothing below is known */
	int state; /* enum ibv_port_state */
	bool eth;
	unsigned int active_mtu, max_mtu;
	unsigned int lid;
	char ndev[IF_NAMESIZE]; /* "" when no GID has one */
	int ndev_mtu; /* 0: unknown */
	struct gid_entry *gids;
	size_t n_gids;
	struct pp_check_use *use; /* one per address, in the order of the GIDs */
	size_t n_use;
};

struct pp_check_dev {
	char name[64];
	bool opened; /* false: it could not be opened or queried (a warning says so), no ports */
	struct pp_check_port *ports;
	size_t n_ports;
};

struct pp_check {
	struct pp_check_dev *devs;
	size_t n_devs;
	char **warnings;
	size_t n_warnings;
	/* With a host: the route to it and the choice it leads to. */
	struct {
		const char *host; /* NULL: none asked for */
		bool chosen; /* choice holds the pingpong's choice */
		struct pp_choice choice;
		char err[1024]; /* why there is no choice, "" when a warning says it */
	} route;
};

/*
 * Look at the devices (or o->dev) and their ports (or o->ib_port), and at the route to o->host. Returns 0,
 * or -errno with the cause and the fix in err when there is nothing to look at; free c with
 * pp_check_free() either way.
 */
int pp_check_read(const struct pp_check_opts *o, struct pp_check *c, char *err, size_t errlen);
void pp_check_free(struct pp_check *c);
/* "ACTIVE", "DOWN", ... for an enum ibv_port_state. */
const char *pp_port_state_str(int state);

/* --- rdma_cm write/read check ------------------------------------------------------------------ */
struct pp_cm_opts {
	const char *host; /* NULL: server */
	uint16_t port;
	unsigned int size;
	int timeout_ms; /* per step */
	int accept_timeout_ms; /* server: waiting for a client, < 0 forever */
	void (*waiting)(uint16_t port); /* server: called once listening */
};

struct pp_cm_result {
	char dev[64];
	int port;
	uint8_t sgid[16];
	uint8_t dgid[16];
	char local[64];
	char remote[64];
	unsigned int size;
	double write_us, read_us; /* client: one RDMA write, one read */
	bool verified;
};

int pp_cm_run(const struct pp_cm_opts *o, struct pp_cm_result *res, char *err, size_t errlen);

#endif
