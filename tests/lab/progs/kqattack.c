// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab helper for kernel quotas: what a hostile tenant would send, in raw uverbs ioctls (libibverbs only opens
 * the device and allocates what a request needs), and honest creators racing at a limit.
 *   kqattack pad [-d DEV] [-c CHILDREN] [-p PAD] [-w] [-W START] [-H FILE]
 *       The keeper opens the device (and with -W prints "waiting" until START exists), allocates PDs until
 *       the kernel refuses, then forks CHILDREN children that share its uverbs file; each sends ALLOC_PD
 *       through INVOKE_WRITE with PAD unknown optional attributes (the kernel skips them) before WRITE_CMD
 *       (-w: as a legacy write() command instead), and exits. Prints "keeper pd=N errno=E", then "children
 *       ok=O refused=R killed=K other=X" (and "children other_errno=E", the last other's, when X > 0): a PD
 *       a child created stays in the keeper's file even when the child is killed.
 *   kqattack nocmd [-d DEV]
 *       INVOKE_WRITE without a WRITE_CMD attribute (its input an ALLOC_PD's). Prints "nocmd errno=E".
 *   kqattack mr [-d DEV] -a START -l LENGTH [-o]
 *       REG_MR through INVOKE_WRITE with any start and length (-o: on-demand paging, as an implicit ODP MR of
 *       length UINT64_MAX asks). Prints "mr errno=E".
 *   kqattack mrioctl [-d DEV] -m dmabuf|reg|dm -l LENGTH
 *       An MR registration through its own ioctl method, REG_DMABUF_MR, DM_MR_REG (device memory: rxe has
 *       none and answers with an error of its own) or REG_MR (kernel 6.17; on older
 *       kernels an unknown method), with a LENGTH attribute of LENGTH: what the programs read as the MR's
 *       bytes. Prints "mrioctl errno=E" (the lab's rxe answers any such request with an error of its own:
 *       EDQUOT is the programs' refusal).
 *   kqattack bound [-d DEV] [-k ctx|pd|qp|mr] [-t THREADS] [-r ROUNDS]
 *       THREADS threads (one context each) create and destroy one object of the kind (an MR of 64 KiB, a
 *       second context), ROUNDS times each:
 *       honest creators racing at a limit. Prints "bound ok=O refused=R other=X (errno E)".
 *   kqattack give -S SOCKET [-d DEV] [-c N] [-H FILE]
 *       Opens the device, allocates N PDs (default 0), prints "giving pid=P fd=F pd=N" (F: its uverbs file's
 *       fd) and, until FILE exists, sends that fd (SCM_RIGHTS) to every client of the unix socket SOCKET.
 *   kqattack take -S SOCKET | -P PID -f FD [-c N]
 *       Receives a uverbs file: from give's socket (recvmsg, SCM_RIGHTS) or with pidfd_getfd(PID's FD), and
 *       sends N ALLOC_PD requests through it. Prints "take fd=1|0 ctrunc=1|0 errno=E" (what the receive gave:
 *       the kernel drops an fd an LSM refuses and flags the message MSG_CTRUNC; pidfd_getfd fails with E),
 *       then, with a file, "take pd=OK errno=E" (E: the first refusal).
 *   kqattack steps -S PREFIX [-c K] [-d DEV] [-F]
 *       Opens the device and allocates one PD (the programs now know the thread: "warm pid=P"), then K times
 *       prints "ready k", waits for the file PREFIX.k and allocates PDs until one is refused (at most 64):
 *       "step k pd=N errno=E". A test changes the thread's scopes between the steps. -F: the opener forks
 *       after the open, and its child, sharing the opener's uverbs file, does the rest ("warm pid=CHILD
 *       opener=P"); the opener waits for it.
 *   kqattack flood -S STOP [-d DEV] [-c N] [-H FILE] [-F]
 *       Opens the device and prints "flood pid=P opener=P" (-F: forks, and the child, sharing the opener's
 *       uverbs file, prints "flood pid=CHILD opener=P"), then allocates PDs through it, keeping them, one
 *       every 100 us until STOP exists, N PDs (default 5000) or a refusal; then "flood pd=N errno=E" (E: the refusal's, 0 without one) and, with
 *       -H, "holding" until FILE exists. A test sets the opener's first limit meanwhile.
 *   kqattack clonefiles [-d DEV] [-c N] [-W START]
 *       Prints "clonefiles pid=P" (and with -W waits for START: a test limits P then). P makes a process C
 *       that shares its file table (clone with CLONE_FILES: a process of its own, not a thread). C opens the
 *       device, allocates and frees a PD through its own file (no scope anywhere: the programs remember that
 *       file as one without scopes) and closes it; then P opens the device (its uverbs file often where C's
 *       was: the kernel reuses the memory) and C sends N ALLOC_PD through P's file, in the shared table.
 *       Prints "clonefiles ok=O refused=R other=X": what P's file holds counts against P's limits.
 *   kqattack rereg [-d DEV] [-c N]
 *       Registers N MRs of 64 KiB, then changes the first one's access with the REREG_MR command (through
 *       INVOKE_WRITE): the kernel allocates a second MR object for the call (the driver may make a new MR),
 *       one past N for a moment. Prints "rereg mrs=N errno=E", then "alive" (not killed).
 *   kqattack flip [-d DEV] [-r ROUNDS]
 *       A REREG_MR request through INVOKE_WRITE whose write command a second thread flips between REREG_MR
 *       and REG_MR all the while (so that the check may read one and the kernel the other), ROUNDS times; its
 *       input is laid out to be a valid registration of 4 KiB as either. Prints "made N" after each MR the
 *       kernel registered (N so far, kept), and at the end "flip made=N" and "alive".
 *   kqattack grow -l SMALL -L BIG [-d DEV] [-r ROUNDS] [-H FILE]
 *       A REG_MR request through INVOKE_WRITE whose length a second thread flips between SMALL and BIG all the
 *       while (so that the check may read one and the kernel register the other), ROUNDS times, each MR
 *       deregistered at once but the last round's (a buffer of BIG bytes). Prints "made N" after each MR the
 *       kernel registered, at the end "grow made=N" and "alive", and with -H "holding" until FILE exists.
 *   kqattack inflight -m before|after -W START [-d DEV] [-c N] [-R READY] [-H FILE]
 *       An honest creation in flight while a limit comes: allocates N PDs (default 1) (with -R: then
 *       prints "made" and waits for READY: a test takes the programs away meanwhile), then sends
 *       ALLOC_PD through INVOKE_WRITE whose input (before: the kernel blocks before it allocates the object)
 *       or output (after: it blocks once the object is allocated, before its commit) is on a page that
 *       userfaultfd holds. Once the kernel waits on it, prints "blocked" and waits for START (a test sets
 *       the first kernel limit meanwhile: the programs attach while the call is inside the kernel), then
 *       lets it go. Prints "inflight pd errno=E", then "next pd errno=E" (one more ALLOC_PD), then "alive"
 *       (not killed), and with -H "holding" until FILE exists.
 * Exit 0 unless something could not be set up (1) or the arguments are wrong (2).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "labdev.h"
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <linux/userfaultfd.h>

#define MAXATTR 254 /* (PAGE_SIZE - header) / attribute: the most the kernel takes */

struct ioreq {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[MAXATTR];
};

static const char *dev = "rxe0";

static void attr(struct ioreq *r, __u16 id, __u16 len, __u64 data)
{
	struct ib_uverbs_attr *a = &r->attrs[r->hdr.num_attrs++];

	memset(a, 0, sizeof(*a));
	a->attr_id = id;
	a->len = len;
	a->data = data;
}

static int send_ioctl(int fd, struct ioreq *r)
{
	r->hdr.length = sizeof(r->hdr) + r->hdr.num_attrs * sizeof(r->attrs[0]);
	r->hdr.driver_id = RDMA_DRIVER_RXE; /* the kernel checks it against the device's driver */
	return ioctl(fd, RDMA_VERBS_IOCTL, r) ? errno : 0;
}

static struct ibv_context *open_dev(void)
{
	return lab_open_dev(dev, "kqattack");
}

/* Print what (holding, waiting) and wait until file exists (no file: go on at once). */
static void wait_file(const char *file, const char *what)
{
	struct stat st;

	if (!file)
		return;
	printf("%s\n", what);
	while (stat(file, &st))
		usleep(20000);
}

static void hold_until(const char *file)
{
	wait_file(file, "holding");
}

/* ALLOC_PD through INVOKE_WRITE, WRITE_CMD after pad unknown optional attributes. */
static int padded_alloc_pd(int fd, int pad)
{
	static struct ioreq r;
	struct ib_uverbs_alloc_pd_resp resp;
	int i;

	memset(&r.hdr, 0, sizeof(r.hdr));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	for (i = 0; i < pad; i++)
		attr(&r, 0x100 + i, 0, 0); /* no method has these: skipped, not mandatory */
	attr(&r, UVERBS_ATTR_CORE_IN, sizeof(__u64), 0); /* struct ib_uverbs_alloc_pd, inline */
	attr(&r, UVERBS_ATTR_CORE_OUT, sizeof(resp), (uintptr_t)&resp);
	attr(&r, UVERBS_ATTR_WRITE_CMD, sizeof(__u64), IB_USER_VERBS_CMD_ALLOC_PD);
	return send_ioctl(fd, &r);
}

/* ALLOC_PD as a legacy write() command on the uverbs fd: 0 or the errno. */
static int write_alloc_pd(int fd)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd cmd;
	} req = { 0 };

	req.hdr.command = IB_USER_VERBS_CMD_ALLOC_PD;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	return write(fd, &req, sizeof(req)) == (ssize_t)sizeof(req) ? 0 : errno;
}

static int cmd_pad(int children, int pad, const char *hold, const char *start, bool viawrite)
{
	struct ibv_context *ctx = open_dev();
	int held = 0, err = 0, i, ok = 0, refused = 0, killed = 0, other = 0, last = 0;

	if (!ctx)
		return 1;
	wait_file(start, "waiting");
	while (held < 4096 && ibv_alloc_pd(ctx))
		held++;
	err = errno;
	printf("keeper pd=%d errno=%d\n", held, err);
	for (i = 0; i < children; i++) {
		int st;
		pid_t p = fork();

		if (p < 0)
			return 1;
		if (p == 0)
			_exit((viawrite ? write_alloc_pd(ctx->cmd_fd) : padded_alloc_pd(ctx->cmd_fd, pad)) & 0x7f);
		if (waitpid(p, &st, 0) != p)
			return 1;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == EDQUOT)
			refused++;
		else
			other++, last = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
	printf("children ok=%d refused=%d killed=%d other=%d\n", ok, refused, killed, other);
	if (other)
		printf("children other_errno=%d\n", last);
	hold_until(hold);
	return 0;
}

static int cmd_nocmd(void)
{
	struct ibv_context *ctx = open_dev();
	struct ib_uverbs_alloc_pd_resp resp;
	struct ioreq r;

	if (!ctx)
		return 1;
	memset(&r.hdr, 0, sizeof(r.hdr));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	attr(&r, UVERBS_ATTR_CORE_IN, sizeof(__u64), 0);
	attr(&r, UVERBS_ATTR_CORE_OUT, sizeof(resp), (uintptr_t)&resp);
	printf("nocmd errno=%d\n", send_ioctl(ctx->cmd_fd, &r));
	return 0;
}

/* A write command through INVOKE_WRITE, its input and output inline or pointed to: its errno (0: done). */
static int invoke_write(int fd, __u64 wcmd, const void *in, size_t inlen, void *out, size_t outlen)
{
	struct ioreq r;

	memset(&r.hdr, 0, sizeof(r.hdr));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	attr(&r, UVERBS_ATTR_WRITE_CMD, sizeof(__u64), wcmd);
	if (inlen <= sizeof(__u64)) { /* the ABI: an input of 8 bytes or less is inline in data (DEREG_MR's) */
		__u64 inl = 0;

		memcpy(&inl, in, inlen);
		attr(&r, UVERBS_ATTR_CORE_IN, inlen, inl);
	} else {
		attr(&r, UVERBS_ATTR_CORE_IN, inlen, (uintptr_t)in);
	}
	if (out) /* a command without a response (DEREG_MR) has no CORE_OUT */
		attr(&r, UVERBS_ATTR_CORE_OUT, outlen, (uintptr_t)out);
	return send_ioctl(fd, &r);
}

static int cmd_mr(__u64 start, __u64 length, bool odp)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd;
	struct ib_uverbs_reg_mr cmd;
	struct ib_uverbs_reg_mr_resp resp;

	if (!ctx || !(pd = ibv_alloc_pd(ctx)))
		return 1;
	memset(&cmd, 0, sizeof(cmd));
	cmd.start = start;
	cmd.length = length;
	cmd.hca_va = start;
	cmd.pd_handle = pd->handle;
	cmd.access_flags = IBV_ACCESS_LOCAL_WRITE | (odp ? IBV_ACCESS_ON_DEMAND : 0);
	printf("mr errno=%d\n", invoke_write(ctx->cmd_fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd), &resp, sizeof(resp)));
	return 0;
}

/* The MR object's registration methods: REG_MR is newer than these headers (bpf/kq.h KQ_METHOD_REG_MR). */
#define REG_MR_METHOD (UVERBS_METHOD_REG_DMABUF_MR + 1)
#define REG_MR_ATTR_PD 1
#define REG_MR_ATTR_LENGTH 5

static int cmd_mrioctl(const char *method, __u64 length)
{
	struct ibv_context *ctx = open_dev();
	struct ibv_pd *pd;
	struct ioreq r;

	if (!ctx || !(pd = ibv_alloc_pd(ctx)))
		return 1;
	memset(&r.hdr, 0, sizeof(r.hdr));
	r.hdr.object_id = UVERBS_OBJECT_MR;
	if (!strcmp(method, "dmabuf")) {
		r.hdr.method_id = UVERBS_METHOD_REG_DMABUF_MR;
		attr(&r, UVERBS_ATTR_REG_DMABUF_MR_HANDLE, 0, 0);
		attr(&r, UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, 0, pd->handle);
		attr(&r, UVERBS_ATTR_REG_DMABUF_MR_OFFSET, sizeof(__u64), 0);
		attr(&r, UVERBS_ATTR_REG_DMABUF_MR_LENGTH, sizeof(__u64), length);
		attr(&r, UVERBS_ATTR_REG_DMABUF_MR_IOVA, sizeof(__u64), 0);
		attr(&r, UVERBS_ATTR_REG_DMABUF_MR_FD, 0, (__u64)-1);
	} else if (!strcmp(method, "dm")) {
		r.hdr.method_id = UVERBS_METHOD_DM_MR_REG;
		attr(&r, UVERBS_ATTR_REG_DM_MR_HANDLE, 0, 0);
		attr(&r, UVERBS_ATTR_REG_DM_MR_OFFSET, sizeof(__u64), 0);
		attr(&r, UVERBS_ATTR_REG_DM_MR_LENGTH, sizeof(__u64), length);
		attr(&r, UVERBS_ATTR_REG_DM_MR_PD_HANDLE, 0, pd->handle);
		attr(&r, UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, sizeof(__u32), IBV_ACCESS_LOCAL_WRITE);
		attr(&r, UVERBS_ATTR_REG_DM_MR_DM_HANDLE, 0, 0);
	} else if (!strcmp(method, "reg")) {
		r.hdr.method_id = REG_MR_METHOD;
		attr(&r, 0, 0, 0); /* the new MR's handle */
		attr(&r, REG_MR_ATTR_PD, 0, pd->handle);
		attr(&r, REG_MR_ATTR_LENGTH, sizeof(__u64), length);
	} else {
		return 2;
	}
	printf("mrioctl errno=%d\n", send_ioctl(ctx->cmd_fd, &r));
	return 0;
}

struct bound {
	const char *kind;
	long rounds, ok, refused, other;
	int lasterr;
};

static void *bound_thread(void *arg)
{
	struct bound *b = arg;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	static char buf[65536] __attribute__((aligned(4096)));
	long i;

	if (!strcmp(b->kind, "ctx")) {
		/* no context held: each round opens one and closes it */
		struct ibv_device **list, *d = NULL;
		int num, n;

		list = ibv_get_device_list(&num);
		for (n = 0; list && n < num; n++)
			if (!strcmp(ibv_get_device_name(list[n]), dev))
				d = list[n];
		if (!d) {
			b->other = -1;
			return NULL;
		}
		for (i = 0; i < b->rounds; i++) {
			struct ibv_context *c = ibv_open_device(d);

			if (c && !ibv_close_device(c))
				b->ok++;
			else if (errno == EDQUOT || errno == ENOENT) /* libibverbs turns the open's EDQUOT into ENOENT */
				b->refused++;
			else
				b->other++, b->lasterr = errno;
		}
		return NULL;
	}
	ctx = open_dev();
	if (!ctx) {
		b->other = -1;
		return NULL;
	}
	if (strcmp(b->kind, "pd")) {
		pd = ibv_alloc_pd(ctx);
		cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
		if (!pd || !cq) {
			b->other = -1;
			return NULL;
		}
	}
	for (i = 0; i < b->rounds; i++) {
		int e = 0;

		if (!strcmp(b->kind, "pd")) {
			struct ibv_pd *p = ibv_alloc_pd(ctx);

			if (!p || ibv_dealloc_pd(p))
				e = errno ? errno : EIO;
		} else if (!strcmp(b->kind, "mr")) {
			struct ibv_mr *m = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

			if (!m || ibv_dereg_mr(m))
				e = errno ? errno : EIO;
		} else {
			struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
						       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
								.max_send_sge = 1, .max_recv_sge = 1 } };
			struct ibv_qp *q = ibv_create_qp(pd, &qa);

			if (!q || ibv_destroy_qp(q))
				e = errno ? errno : EIO;
		}
		if (!e)
			b->ok++;
		else if (e == EDQUOT)
			b->refused++;
		else
			b->other++, b->lasterr = e;
	}
	return NULL;
}

static int cmd_bound(const char *kind, int threads, long rounds)
{
	struct bound b[64];
	pthread_t t[64];
	long ok = 0, refused = 0, other = 0;
	int i, lasterr = 0;

	if (threads < 1 || threads > 64)
		return 2;
	for (i = 0; i < threads; i++) {
		b[i] = (struct bound){ .kind = kind, .rounds = rounds };
		if (pthread_create(&t[i], NULL, bound_thread, &b[i]))
			return 1;
	}
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		if (b[i].other < 0)
			return 1;
		ok += b[i].ok;
		refused += b[i].refused;
		other += b[i].other;
		if (b[i].lasterr)
			lasterr = b[i].lasterr;
	}
	printf("bound ok=%ld refused=%ld other=%ld (errno %d)\n", ok, refused, other, lasterr);
	return 0;
}

static int cmd_rereg(int n)
{
	static char buf[64][65536] __attribute__((aligned(4096)));
	struct ibv_context *ctx = open_dev();
	struct ib_uverbs_rereg_mr cmd;
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_mr *mr[64];
	struct ibv_pd *pd;
	int i, err;

	if (!ctx || n < 1 || n > 64)
		return 1;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return 1;
	for (i = 0; i < n; i++) {
		mr[i] = ibv_reg_mr(pd, buf[i], sizeof(buf[i]), IBV_ACCESS_LOCAL_WRITE);
		if (!mr[i]) {
			printf("reg mr %d errno=%d\n", i, errno);
			return 1;
		}
	}
	/* the command itself: a provider without rereg (rxe's) answers ibv_rereg_mr without asking the kernel */
	memset(&cmd, 0, sizeof(cmd));
	cmd.mr_handle = mr[0]->handle;
	cmd.flags = IBV_REREG_MR_CHANGE_ACCESS; /* the kernel's IB_MR_REREG_ACCESS */
	cmd.access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	err = invoke_write(ctx->cmd_fd, IB_USER_VERBS_CMD_REREG_MR, &cmd, sizeof(cmd), &resp, sizeof(resp));
	printf("rereg mrs=%d errno=%d\n", n, err);
	printf("alive\n");
	for (i = 0; i < n; i++)
		ibv_dereg_mr(mr[i]);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

/* The flipper of cmd_flip: the write command's attribute, REREG_MR and REG_MR in turn. */
static volatile __u64 *flip_cmd;
static volatile int flip_stop;

static void *flipper(void *arg)
{
	(void)arg;
	while (!flip_stop)
		*flip_cmd = *flip_cmd == IB_USER_VERBS_CMD_REREG_MR ? IB_USER_VERBS_CMD_REG_MR : IB_USER_VERBS_CMD_REREG_MR;
	return NULL;
}

static int cmd_flip(long rounds)
{
	static char page[8192] __attribute__((aligned(4096)));
	static struct ioreq r;
	struct ibv_context *ctx = open_dev();
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_pd *pd;
	pthread_t th;
	__u64 in[6];
	long i;
	int made = 0;

	if (!ctx || !(pd = ibv_alloc_pd(ctx)))
		return 1;
	/*
	 * As REG_MR (response, start, length, hca_va, pd_handle | access << 32): page, 4096 bytes. As REREG_MR
	 * (response, mr_handle | flags << 32, start, length, hca_va, pd_handle | access << 32): handle and flags
	 * from the page's address, which names no MR (the kernel refuses it).
	 */
	in[0] = (uintptr_t)&resp;
	in[1] = (uintptr_t)page;
	in[2] = 4096;
	in[3] = (uintptr_t)page;
	in[4] = pd->handle | (__u64)IBV_ACCESS_LOCAL_WRITE << 32;
	in[5] = pd->handle | (__u64)IBV_ACCESS_LOCAL_WRITE << 32;
	memset(&r.hdr, 0, sizeof(r.hdr));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	attr(&r, UVERBS_ATTR_WRITE_CMD, sizeof(__u64), IB_USER_VERBS_CMD_REREG_MR);
	attr(&r, UVERBS_ATTR_CORE_IN, sizeof(in), (uintptr_t)in);
	attr(&r, UVERBS_ATTR_CORE_OUT, sizeof(resp), (uintptr_t)&resp);
	flip_cmd = &r.attrs[0].data;
	if (pthread_create(&th, NULL, flipper, NULL))
		return 1;
	for (i = 0; i < rounds; i++) {
		resp.mr_handle = ~0u;
		if (!send_ioctl(ctx->cmd_fd, &r) && resp.mr_handle != ~0u)
			printf("made %d\n", ++made);
	}
	flip_stop = 1;
	pthread_join(th, NULL);
	printf("flip made=%d\n", made);
	printf("alive\n");
	return 0;
}

static volatile __u64 *grow_len;
static __u64 grow_small, grow_big;

static void *grower(void *arg)
{
	(void)arg;
	while (!flip_stop)
		*grow_len = *grow_len == grow_small ? grow_big : grow_small;
	return NULL;
}

static int cmd_grow(long rounds, __u64 small, __u64 big, const char *hold)
{
	static struct ib_uverbs_reg_mr cmd;
	struct ibv_context *ctx = open_dev();
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_pd *pd;
	pthread_t th;
	void *buf;
	long i;
	int made = 0;

	if (!ctx || !(pd = ibv_alloc_pd(ctx)) || !small || small > big || big > (1ULL << 30))
		return 1;
	buf = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	memset(buf, 1, big);
	memset(&cmd, 0, sizeof(cmd));
	cmd.response = (uintptr_t)&resp;
	cmd.start = (uintptr_t)buf;
	cmd.length = small;
	cmd.hca_va = (uintptr_t)buf;
	cmd.pd_handle = pd->handle;
	cmd.access_flags = IBV_ACCESS_LOCAL_WRITE;
	grow_len = &cmd.length;
	grow_small = small;
	grow_big = big;
	if (pthread_create(&th, NULL, grower, NULL))
		return 1;
	for (i = 0; i < rounds; i++) {
		resp.mr_handle = ~0u;
		if (!invoke_write(ctx->cmd_fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd), &resp, sizeof(resp)) &&
		    resp.mr_handle != ~0u) {
			printf("made %d\n", ++made);
			/* given back at once, but the last: the limit never fills, and every round is a try */
			if (i < rounds - 1) {
				struct ib_uverbs_dereg_mr d = { .mr_handle = resp.mr_handle };
				int err = invoke_write(ctx->cmd_fd, IB_USER_VERBS_CMD_DEREG_MR, &d, sizeof(d), NULL, 0);

				if (err) { /* the limit would fill, and the rounds after it try nothing */
					printf("dereg errno=%d\n", err);
					return 1;
				}
			}
		}
	}
	flip_stop = 1;
	pthread_join(th, NULL);
	printf("grow made=%d\n", made);
	printf("alive\n");
	hold_until(hold);
	return 0;
}

/*
 * With forked: fork, and in the parent wait for the child and give its exit status (true, *rc set); the child,
 * which shares the opener's uverbs file, goes on (false), as does a process told not to fork.
 */
static bool fork_child(bool forked, int *rc)
{
	pid_t child;
	int status;

	if (!forked)
		return false;
	child = fork();
	if (child < 0) {
		*rc = 1;
		return true;
	}
	if (!child)
		return false;
	*rc = waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	return true;
}

static int cmd_steps(const char *prefix, int k, bool forked)
{
	struct ibv_context *ctx = open_dev();
	char file[4096], what[32];
	pid_t opener = getpid();
	int i, n, rc;

	if (!ctx)
		return 1;
	if (fork_child(forked, &rc))
		return rc;
	if (!ibv_alloc_pd(ctx))
		return 1;
	if (forked)
		printf("warm pid=%d opener=%d\n", (int)getpid(), (int)opener);
	else
		printf("warm pid=%d\n", (int)getpid());
	for (i = 1; i <= k; i++) {
		snprintf(file, sizeof(file), "%s.%d", prefix, i);
		snprintf(what, sizeof(what), "ready %d", i);
		wait_file(file, what);
		for (n = 0; n < 64 && ibv_alloc_pd(ctx); n++)
			;
		printf("step %d pd=%d errno=%d\n", i, n, n < 64 ? errno : 0);
	}
	return 0;
}

static int cmd_flood(const char *stop, int max, const char *hold, bool forked)
{
	struct ibv_context *ctx = open_dev();
	pid_t opener = getpid();
	struct stat st;
	int n, err = 0, rc;

	if (!ctx)
		return 1;
	if (fork_child(forked, &rc))
		return rc;
	printf("flood pid=%d opener=%d\n", (int)getpid(), (int)opener);
	for (n = 0; n < max; n++) {
		if (!(n & 15) && !stat(stop, &st))
			break;
		if (!ibv_alloc_pd(ctx)) {
			err = errno;
			break;
		}
		usleep(100);
	}
	printf("flood pd=%d errno=%d\n", n, err);
	hold_until(hold);
	return 0;
}

static int cmd_clonefiles(int n, const char *start)
{
	int c2p[2], p2c[2], fd = -1, ok = 0, refused = 0, other = 0, i, status;
	struct ibv_context *ctx;
	pid_t c;

	cpu_set_t one;

	printf("clonefiles pid=%d\n", (int)getpid());
	if (start)
		wait_file(start, "waiting");
	/* both on one CPU: the kernel's allocator hands out the memory just freed on the same CPU first */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (pipe(c2p) || pipe(p2c))
		return 1;
	c = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
	if (c < 0)
		return 1;
	if (c == 0) {
		struct ibv_context *own = open_dev();
		struct ibv_pd *pd = own ? ibv_alloc_pd(own) : NULL;
		char b = 'c';

		if (!pd)
			_exit(1);
		ibv_dealloc_pd(pd);
		ibv_close_device(own);
		if (write(c2p[1], &b, 1) != 1 || read(p2c[0], &fd, sizeof(fd)) != sizeof(fd))
			_exit(1);
		for (i = 0; i < n; i++) {
			int err = padded_alloc_pd(fd, 0);

			if (!err)
				ok++;
			else if (err == EDQUOT)
				refused++;
			else
				other++;
		}
		printf("clonefiles ok=%d refused=%d other=%d\n", ok, refused, other);
		_exit(0);
	}
	{
		char b;

		if (read(c2p[0], &b, 1) != 1)
			return 1;
	}
	ctx = open_dev();
	if (!ctx)
		return 1;
	if (write(p2c[1], &ctx->cmd_fd, sizeof(int)) != sizeof(int))
		return 1;
	if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	ibv_close_device(ctx);
	return 0;
}

static int unix_socket(const char *path, struct sockaddr_un *sa)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (s < 0 || strlen(path) >= sizeof(sa->sun_path)) {
		fprintf(stderr, "kqattack: socket %s: %s\n", path, s < 0 ? strerror(errno) : "path too long");
		return -1;
	}
	strcpy(sa->sun_path, path);
	return s;
}

static int cmd_give(const char *path, int n, const char *hold)
{
	struct ibv_context *ctx = open_dev();
	struct sockaddr_un sa;
	struct stat st;
	int s, held = 0;

	if (!ctx)
		return 1;
	while (held < n && ibv_alloc_pd(ctx))
		held++;
	s = unix_socket(path, &sa);
	if (s < 0)
		return 1;
	unlink(path);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 8)) {
		fprintf(stderr, "kqattack: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("giving pid=%d fd=%d pd=%d\n", (int)getpid(), ctx->cmd_fd, held);
	while (!hold || stat(hold, &st)) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 'f';
		struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		int cl;

		if (poll(&p, 1, 50) <= 0)
			continue;
		cl = accept(s, NULL, NULL);
		if (cl < 0)
			continue;
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &ctx->cmd_fd, sizeof(int));
		if (sendmsg(cl, &m, 0) != 1)
			fprintf(stderr, "kqattack: sendmsg: %s\n", strerror(errno));
		close(cl);
	}
	unlink(path);
	return 0;
}

static int cmd_take(const char *path, int pid, int tfd, int n)
{
	int fd = -1, ok = 0, err = 0, i;

	if (path) {
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte;
		struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct sockaddr_un sa;
		struct cmsghdr *c;
		int s = unix_socket(path, &sa);

		if (s < 0)
			return 1;
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) || recvmsg(s, &m, 0) != 1) {
			fprintf(stderr, "kqattack: %s: %s\n", path, strerror(errno));
			return 1;
		}
		c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
		printf("take fd=%d ctrunc=%d errno=0\n", fd >= 0, !!(m.msg_flags & MSG_CTRUNC));
	} else {
		int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

		if (pfd < 0) {
			fprintf(stderr, "kqattack: pidfd_open %d: %s\n", pid, strerror(errno));
			return 1;
		}
		fd = (int)syscall(SYS_pidfd_getfd, pfd, tfd, 0);
		printf("take fd=%d ctrunc=0 errno=%d\n", fd >= 0, fd >= 0 ? 0 : errno);
	}
	if (fd < 0)
		return 0;
	for (i = 0; i < n; i++) {
		int e = padded_alloc_pd(fd, 0);

		if (e) {
			err = e;
			break;
		}
		ok++;
	}
	printf("take pd=%d errno=%d\n", ok, err);
	return 0;
}

struct inflight {
	int uffd;
	void *page;
	long pg;
	const char *start;
	int err;
};

/*
 * The fault's side: waits until the kernel's copy faults on the page (it waits there), prints "blocked",
 * waits for START, and fills the page (the call goes on). The call is the main thread's: the object's owner
 * (the task netlink names) stays alive.
 */
static void *inflight_resolver(void *arg)
{
	struct inflight *f = arg;
	struct uffdio_zeropage zp = {};
	struct pollfd pfd = { .fd = f->uffd, .events = POLLIN };
	struct uffd_msg msg;

	if (poll(&pfd, 1, 60000) != 1 || read(f->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		fprintf(stderr, "kqattack: no fault from the kernel's copy\n");
		f->err = 1;
	} else {
		wait_file(f->start, "blocked");
	}
	zp.range.start = (uintptr_t)f->page;
	zp.range.len = f->pg;
	if (ioctl(f->uffd, UFFDIO_ZEROPAGE, &zp)) {
		fprintf(stderr, "kqattack: UFFDIO_ZEROPAGE: %s\n", strerror(errno));
		f->err = 1;
	}
	return NULL;
}

static int cmd_inflight(const char *when, const char *start, int n, const char *ready, const char *hold)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {};
	struct inflight f = { .start = start, .pg = sysconf(_SC_PAGESIZE) };
	bool after = !strcmp(when, "after");
	static struct ioreq r;
	static __u64 in[2];
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_context *ctx;
	pthread_t th;
	int i, err;

	if (!start || (!after && strcmp(when, "before")))
		return 2;
	ctx = open_dev();
	if (!ctx)
		return 1;
	for (i = 0; i < n; i++)
		if (!ibv_alloc_pd(ctx)) {
			fprintf(stderr, "kqattack: ibv_alloc_pd: %s\n", strerror(errno));
			return 1;
		}
	wait_file(ready, "made");
	/* a fault the kernel takes (its copy from or to the page): not a user-mode-only descriptor (root) */
	f.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	f.page = mmap(NULL, f.pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (uintptr_t)f.page;
	reg.range.len = f.pg;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (f.uffd < 0 || f.page == MAP_FAILED || ioctl(f.uffd, UFFDIO_API, &api) || ioctl(f.uffd, UFFDIO_REGISTER, &reg)) {
		fprintf(stderr, "kqattack: userfaultfd: %s\n", strerror(errno));
		return 1;
	}
	if (pthread_create(&th, NULL, inflight_resolver, &f))
		return 1;
	/* ALLOC_PD through INVOKE_WRITE, its input (16 bytes: more than 8, so read from memory, not inline; an
	 * ALLOC_PD and 8 bytes of zeros for the driver) or its output on the page */
	memset(&r.hdr, 0, sizeof(r.hdr));
	r.hdr.object_id = UVERBS_OBJECT_DEVICE;
	r.hdr.method_id = UVERBS_METHOD_INVOKE_WRITE;
	attr(&r, UVERBS_ATTR_WRITE_CMD, sizeof(__u64), IB_USER_VERBS_CMD_ALLOC_PD);
	attr(&r, UVERBS_ATTR_CORE_IN, sizeof(in), (uintptr_t)(after ? (void *)in : f.page));
	attr(&r, UVERBS_ATTR_CORE_OUT, sizeof(resp), (uintptr_t)(after ? f.page : (void *)&resp));
	err = send_ioctl(ctx->cmd_fd, &r);
	pthread_join(th, NULL);
	if (f.err)
		return 1;
	printf("inflight pd errno=%d\n", err);
	errno = 0;
	printf("next pd errno=%d\n", ibv_alloc_pd(ctx) ? 0 : errno);
	printf("alive\n");
	hold_until(hold);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode, *hold = NULL, *ready = NULL, *kind = "pd", *method = NULL, *startfile = NULL, *sock = NULL;
	int tpid = 0, tfd = -1;
	bool viawrite = false;
	int opt, children = 20, pad = 16, threads = 2;
	long rounds = 1000;
	__u64 start = 0, length = 0, big = 0;
	bool odp = false, forked = false, cgiven = false;

	if (argc < 2)
		goto usage;
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "d:c:p:H:W:R:wa:l:L:ok:m:t:r:S:P:f:F")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'c': children = atoi(optarg); cgiven = true; break;
		case 'p': pad = atoi(optarg); break;
		case 'H': hold = optarg; break;
		case 'W': startfile = optarg; break;
		case 'R': ready = optarg; break;
		case 'w': viawrite = true; break;
		case 'a': start = strtoull(optarg, NULL, 0); break;
		case 'l': length = strtoull(optarg, NULL, 0); break;
		case 'L': big = strtoull(optarg, NULL, 0); break;
		case 'o': odp = true; break;
		case 'k': kind = optarg; break;
		case 'm': method = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 'r': rounds = atol(optarg); break;
		case 'S': sock = optarg; break;
		case 'P': tpid = atoi(optarg); break;
		case 'f': tfd = atoi(optarg); break;
		case 'F': forked = true; break;
		default: goto usage;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "pad") && pad >= 0 && pad <= MAXATTR - 3)
		return cmd_pad(children, pad, hold, startfile, viawrite);
	if (!strcmp(mode, "nocmd"))
		return cmd_nocmd();
	if (!strcmp(mode, "mr"))
		return cmd_mr(start, length, odp);
	if (!strcmp(mode, "mrioctl") && method)
		return cmd_mrioctl(method, length);
	if (!strcmp(mode, "bound"))
		return cmd_bound(kind, threads, rounds);
	if (!strcmp(mode, "give") && sock)
		return cmd_give(sock, children, hold);
	if (!strcmp(mode, "take") && (sock || (tpid > 0 && tfd >= 0)))
		return cmd_take(sock, tpid, tfd, children);
	if (!strcmp(mode, "steps") && sock && strlen(sock) < 4000)
		return cmd_steps(sock, children, forked);
	if (!strcmp(mode, "flood") && sock)
		return cmd_flood(sock, cgiven ? children : 5000, hold, forked);
	if (!strcmp(mode, "clonefiles"))
		return cmd_clonefiles(children, startfile);
	if (!strcmp(mode, "rereg"))
		return cmd_rereg(children);
	if (!strcmp(mode, "flip"))
		return cmd_flip(rounds);
	if (!strcmp(mode, "grow"))
		return cmd_grow(rounds, length, big, hold);
	if (!strcmp(mode, "inflight") && method)
		return cmd_inflight(method, startfile, cgiven ? children : 1, ready, hold);
usage:
	fprintf(stderr, "usage: kqattack pad|nocmd|mr|mrioctl|bound|give|take|steps|flood|clonefiles|rereg|flip|grow|inflight [options] "
		"(see the source)\n");
	return 2;
}
