// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper for kernel quotas: a tenant that sends uverbs write commands through io_uring instead of write(2)
 * or ioctl(2) (raw io_uring system calls; libibverbs only opens the device). Each request is a legacy ALLOC_PD
 * command written to the uverbs file by IORING_OP_WRITE: the kernel runs it in an io-wq worker, a thread of
 * the submitter.
 *   kquring write [-d DEV] [-n N] [-m async|ioctl] [-H FILE]
 *       N ALLOC_PD writes through a ring of its own. async: each with IOSQE_ASYNC (the worker is born inside
 *       io_uring_enter); ioctl: the first one linked after a poll on a pty master in packet mode that
 *       ioctl(slave, TCFLSH) wakes, so that the worker is born from task work at the exit of an ioctl(2) (its
 *       saved registers are the ioctl's), and the others after it reuse that idle worker. Prints "uring pd
 *       ok=O refused=R other=X errno=E" (E: the first error), then "alive", and with -H "holding" until FILE
 *       exists.
 *   kquring persona [-d DEV] [-c CHILDREN] [-H FILE]
 *       The opener registers its credentials as an io_uring personality; each of CHILDREN forked children
 *       (sharing the opener's ring and uverbs file) submits one ALLOC_PD write with that personality, so that
 *       the kernel's check of a write from another process's credentials passes. Prints "persona ok=O
 *       refused=R killed=K other=X errno=E", then "alive" and with -H "holding".
 *   kquring hold [-d DEV] [-c N] [-H FILE]
 *       Opens the device, allocates N PDs through it (default 0), registers the uverbs file as the ring's fixed
 *       file 0 and its credentials as a personality, then closes the uverbs fd: the ring alone holds the file.
 *       Prints "hold pid=P ring=F persona=I", then "holding" until FILE exists; then N more ALLOC_PD writes
 *       through the ring: "hold pd ok=O refused=R other=X errno=E".
 *   kquring take -P PID -f RINGFD -i PERSONA [-n N]
 *       Takes PID's ring with pidfd_getfd and sends N ALLOC_PD writes through its fixed file 0 with the
 *       personality. Prints "take ring=1|0 errno=E", then "take pd ok=O refused=R other=X errno=E".
 * Exit 0 unless something could not be set up (1) or the arguments are wrong (2).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "labdev.h"
#include <linux/io_uring.h>
#include <rdma/ib_user_verbs.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static const char *dev = "rxe0";

struct ring {
	int fd;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

/* A legacy ALLOC_PD write command (its response in the submitter's memory: a worker shares it). */
struct pdreq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_alloc_pd cmd;
};
static struct ib_uverbs_alloc_pd_resp resp;
static struct pdreq req;

static void pdreq_init(void)
{
	req.hdr.command = IB_USER_VERBS_CMD_ALLOC_PD;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
}

static int uring_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int uring_enter(int fd, unsigned submit, unsigned wait)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, wait, wait ? IORING_ENTER_GETEVENTS : 0, NULL, 0);
}

/* Map a ring's queues (fd: its own, or one taken from another process, with the layout p of one like it). */
static int ring_map(struct ring *r, int fd, const struct io_uring_params *p)
{
	size_t sqlen = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cqlen = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	char *sq, *cq;

	if (cqlen > sqlen)
		sqlen = cqlen;
	sq = mmap(NULL, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return -1;
	cq = sq; /* IORING_FEAT_SINGLE_MMAP: one mapping for both (every kernel of the lab) */
	r->sqes = mmap(NULL, p->sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return -1;
	r->fd = fd;
	r->sq_head = (unsigned *)(sq + p->sq_off.head);
	r->sq_tail = (unsigned *)(sq + p->sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p->sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p->sq_off.array);
	r->cq_head = (unsigned *)(cq + p->cq_off.head);
	r->cq_tail = (unsigned *)(cq + p->cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p->cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
	return 0;
}

static int ring_new(struct ring *r, struct io_uring_params *p)
{
	int fd;

	memset(p, 0, sizeof(*p));
	fd = uring_setup(8, p);
	if (fd < 0) {
		fprintf(stderr, "kquring: io_uring_setup: %s\n", strerror(errno));
		return -1;
	}
	if (!(p->features & IORING_FEAT_SINGLE_MMAP) || ring_map(r, fd, p)) {
		fprintf(stderr, "kquring: cannot map the ring\n");
		return -1;
	}
	return 0;
}

/* The next submission entry, zeroed (the caller fills it; queued by push). */
static struct io_uring_sqe *sqe_next(struct ring *r, unsigned n)
{
	unsigned tail = __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) + n, idx = tail & *r->sq_mask;

	memset(&r->sqes[idx], 0, sizeof(r->sqes[idx]));
	r->sq_array[idx] = idx;
	return &r->sqes[idx];
}

static void push(struct ring *r, unsigned n)
{
	__atomic_store_n(r->sq_tail, __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE) + n, __ATOMIC_RELEASE);
}

/* Wait for one completion: its result. */
static int reap(struct ring *r, __u64 *data)
{
	unsigned head;
	int res;

	for (;;) {
		head = __atomic_load_n(r->cq_head, __ATOMIC_ACQUIRE);
		if (head != __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			break;
		if (uring_enter(r->fd, 0, 1) < 0 && errno != EINTR)
			return -errno;
	}
	res = r->cqes[head & *r->cq_mask].res;
	if (data)
		*data = r->cqes[head & *r->cq_mask].user_data;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

static void write_sqe(struct io_uring_sqe *s, int fd, bool fixed, __u16 persona, __u8 flags)
{
	s->opcode = IORING_OP_WRITE;
	s->fd = fd;
	s->addr = (uintptr_t)&req;
	s->len = sizeof(req);
	s->off = (__u64)-1;
	s->flags = flags | (fixed ? IOSQE_FIXED_FILE : 0);
	s->personality = persona;
	s->user_data = 1;
}

struct tally {
	int ok, refused, other, err;
};

static void count(struct tally *t, int res)
{
	if (res == (int)sizeof(req)) {
		t->ok++;
		return;
	}
	if (res == -EDQUOT)
		t->refused++;
	else
		t->other++;
	if (!t->err)
		t->err = res < 0 ? -res : EIO;
}

/* One ALLOC_PD write through the ring: its result. */
static int ring_write(struct ring *r, int fd, bool fixed, __u16 persona, __u8 flags)
{
	write_sqe(sqe_next(r, 0), fd, fixed, persona, flags);
	push(r, 1);
	if (uring_enter(r->fd, 1, 0) < 0)
		return -errno;
	return reap(r, NULL);
}

static struct ibv_context *open_dev(void)
{
	return lab_open_dev(dev, "kquring");
}

static void hold_until(const char *file)
{
	struct stat st;

	if (!file)
		return;
	printf("holding\n");
	fflush(stdout);
	while (stat(file, &st))
		usleep(20000);
}

/*
 * The first write linked after a poll on a pty master in packet mode, woken by ioctl(slave, TCFLSH): the poll
 * completes in task work at the exit of that ioctl(2), which issues the write, which the kernel hands to a new
 * io-wq worker created there (a copy of the ioctl's saved registers).
 */
static int write_after_ioctl(struct ring *r, int fd)
{
	struct io_uring_sqe *s;
	int m, sl, one = 1, res, i, wres = 0;
	__u64 data;

	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) || unlockpt(m) || ioctl(m, TIOCPKT, &one)) {
		fprintf(stderr, "kquring: pty: %s\n", strerror(errno));
		return -EIO;
	}
	sl = open(ptsname(m), O_RDWR | O_NOCTTY);
	if (sl < 0) {
		fprintf(stderr, "kquring: pty slave: %s\n", strerror(errno));
		return -EIO;
	}
	s = sqe_next(r, 0);
	s->opcode = IORING_OP_POLL_ADD;
	s->fd = m;
	s->poll32_events = POLLIN | POLLPRI;
	s->flags = IOSQE_IO_LINK;
	s->user_data = 2;
	write_sqe(sqe_next(r, 1), fd, false, 0, 0);
	push(r, 2);
	if (uring_enter(r->fd, 2, 0) < 0)
		return -errno;
	usleep(100000); /* the poll armed */
	if (ioctl(sl, TCFLSH, TCOFLUSH)) {
		fprintf(stderr, "kquring: TCFLSH: %s\n", strerror(errno));
		return -EIO;
	}
	for (i = 0; i < 2; i++) {
		res = reap(r, &data);
		if (data == 1)
			wres = res;
	}
	close(sl);
	close(m);
	return wres;
}

static int cmd_write(int n, const char *mode, const char *hold)
{
	struct ibv_context *ctx = open_dev();
	struct io_uring_params p;
	struct ring r;
	struct tally t = { 0 };
	bool async = !strcmp(mode, "async");
	int i;

	if (!ctx || ring_new(&r, &p))
		return 1;
	for (i = 0; i < n; i++) {
		if (i == 0 && !strcmp(mode, "ioctl"))
			count(&t, write_after_ioctl(&r, ctx->cmd_fd));
		else
			count(&t, ring_write(&r, ctx->cmd_fd, false, 0, async ? IOSQE_ASYNC : 0));
	}
	printf("uring pd ok=%d refused=%d other=%d errno=%d\n", t.ok, t.refused, t.other, t.err);
	printf("alive\n");
	fflush(stdout);
	hold_until(hold);
	return 0;
}

static int cmd_persona(int children, const char *hold)
{
	struct ibv_context *ctx = open_dev();
	struct io_uring_params p;
	struct ring r;
	struct tally t = { 0 };
	int persona, i, killed = 0, st;

	if (!ctx || ring_new(&r, &p))
		return 1;
	persona = (int)syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_PERSONALITY, NULL, 0);
	if (persona < 0) {
		fprintf(stderr, "kquring: IORING_REGISTER_PERSONALITY: %s\n", strerror(errno));
		return 1;
	}
	fflush(stdout);
	for (i = 0; i < children; i++) {
		pid_t c = fork();

		if (c < 0)
			return 1;
		if (!c) {
			int res = ring_write(&r, ctx->cmd_fd, false, (__u16)persona, 0);

			_exit(res == (int)sizeof(req) ? 0 : res == -EDQUOT ? 3 : res < 0 && -res < 256 ? 100 : 4);
		}
		if (waitpid(c, &st, 0) != c)
			return 1;
		if (WIFSIGNALED(st))
			killed++;
		else if (WEXITSTATUS(st) == 0)
			t.ok++;
		else if (WEXITSTATUS(st) == 3)
			t.refused++;
		else
			t.other++;
	}
	printf("persona ok=%d refused=%d killed=%d other=%d errno=%d\n", t.ok, t.refused, killed, t.other, t.err);
	printf("alive\n");
	fflush(stdout);
	hold_until(hold);
	return 0;
}

static int cmd_hold(int n, const char *hold)
{
	struct ibv_context *ctx = open_dev();
	struct io_uring_params p;
	struct ring r;
	struct tally t = { 0 };
	int persona, fd, i;

	if (!ctx || ring_new(&r, &p))
		return 1;
	for (i = 0; i < n; i++)
		if (!ibv_alloc_pd(ctx)) {
			fprintf(stderr, "kquring: ibv_alloc_pd: %s\n", strerror(errno));
			return 1;
		}
	fd = ctx->cmd_fd;
	if (syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES, &fd, 1)) {
		fprintf(stderr, "kquring: IORING_REGISTER_FILES: %s\n", strerror(errno));
		return 1;
	}
	persona = (int)syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_PERSONALITY, NULL, 0);
	if (persona < 0) {
		fprintf(stderr, "kquring: IORING_REGISTER_PERSONALITY: %s\n", strerror(errno));
		return 1;
	}
	/* the ring alone holds the uverbs file now (libibverbs' context keeps the number, never used again) */
	close(fd);
	printf("hold pid=%d ring=%d persona=%d\n", (int)getpid(), r.fd, persona);
	fflush(stdout);
	hold_until(hold);
	for (i = 0; i < n; i++)
		count(&t, ring_write(&r, 0, true, (__u16)persona, 0));
	printf("hold pd ok=%d refused=%d other=%d errno=%d\n", t.ok, t.refused, t.other, t.err);
	fflush(stdout);
	_exit(0); /* not through libibverbs' teardown: its fd is the ring's now */
}

static int cmd_take(int pid, int ringfd, int persona, int n)
{
	struct io_uring_params p;
	struct ring mine, r;
	struct tally t = { 0 };
	int pfd, fd, i;

	/* the layout of a ring like the one taken (a kernel's offsets are the same for the same size) */
	if (ring_new(&mine, &p))
		return 1;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	fd = pfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pfd, ringfd, 0);
	printf("take ring=%d errno=%d\n", fd >= 0, fd >= 0 ? 0 : errno);
	if (fd < 0)
		return 0;
	if (ring_map(&r, fd, &p)) {
		fprintf(stderr, "kquring: cannot map the taken ring: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++)
		count(&t, ring_write(&r, 0, true, (__u16)persona, 0));
	printf("take pd ok=%d refused=%d other=%d errno=%d\n", t.ok, t.refused, t.other, t.err);
	return 0;
}

int main(int argc, char **argv)
{
	const char *hold = NULL, *mode = "async", *cmd;
	int n = 1, children = 1, pid = 0, ringfd = -1, persona = 0, opt;

	if (argc < 2)
		goto usage;
	cmd = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "d:n:m:c:H:P:f:i:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 'c': children = atoi(optarg); break;
		case 'H': hold = optarg; break;
		case 'P': pid = atoi(optarg); break;
		case 'f': ringfd = atoi(optarg); break;
		case 'i': persona = atoi(optarg); break;
		default: goto usage;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pdreq_init();
	if (!strcmp(cmd, "write") && (!strcmp(mode, "async") || !strcmp(mode, "ioctl")))
		return cmd_write(n, mode, hold);
	if (!strcmp(cmd, "persona"))
		return cmd_persona(children, hold);
	if (!strcmp(cmd, "hold"))
		return cmd_hold(n, hold);
	if (!strcmp(cmd, "take") && pid > 0 && ringfd >= 0)
		return cmd_take(pid, ringfd, persona, n);
usage:
	fprintf(stderr, "usage: kquring write|persona|hold|take [options] (see the comment at the top of kquring.c)\n");
	return 2;
}
