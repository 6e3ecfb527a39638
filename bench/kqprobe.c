// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the kernel quota programs (bpf/kq.bpf.c) add to a create/destroy pair of each kind and to verbs that
 * create nothing, with the programs attached and detached in alternating windows in one process (the maps
 * stay). Meant for the lab with LAB_ICOUNT=0, where the clock counts instructions, the kernel's included:
 * bench/kqprobe.sh runs it.
 *
 * It loads and pins the programs (as `rdmactl quota set --kernel` does). lib/kq/kq.c attaches them only while a
 * kernel limit exists: once the first limit is set, this takes their pinned links away and attaches the same
 * programs itself (BPF_RAW_TRACEPOINT_OPEN of each program), so that it can detach them between windows; at
 * the end it attaches and pins them again, and lifts its limits (which detaches them). Configurations, in
 * this order:
 *   control windows alternate exactly the same way but nothing is attached in either (the noise floor)
 *   empty   programs that return at once (bpf/kqempty.bpf.c) at the hooks a pair passes while a limit
 *           exists: the trampolines alone, the floor of any BPF design
 *   lookup  at the same hooks, one look at the thread's task storage each (bpf/kqfloor.bpf.c): the floor of
 *           a design that tells a limited thread from a free one at each hook
 *   record  lookup's, and an object counted against one scope: its usage added to and taken from, a record
 *           inserted and deleted (bpf/kqfloor.bpf.c): the floor of a limited thread's pair that records objects
 *   least-other, least-self  the least a design keeping issue 33's promises pays without a record per object
 *           (bpf/kqfloor.bpf.c, KQR_LEAST; one more hook, the ioctl's return), for a free thread and for a
 *           limited one
 *   none    no limit anywhere: what lib/kq/kq.c leaves attached then (nothing)
 *   other   a limit on another scope: every create looks up this process's scopes and finds no limit
 *   self    a limit on every kind on this process's own scope: checked, charged and credited
 *   self+N, other+N (-s SCOPES, N = SCOPES - 1): the same with N more limited scopes, cgroups of their own
 *           that this process is not in: what a pair costs must not grow with the number of scopes
 * Per configuration and kind it prints the 10th percentile of a pair's instructions detached and attached,
 * the difference and its share of the detached pair.
 *   kqprobe [-d DEV] [-n PAIRS] [-r ROUNDS] [-k KIND[,KIND...]] [-p PROGRAM] [-s SCOPES]
 * -p attaches only the programs whose pinned link's name contains PROGRAM (one program's share).
 * PAIRS pairs of every kind per window, ROUNDS pairs of windows (on-off, then off-on, ...). Kinds: ctx pd cq
 * qp srq mr ah mw, and verbs that create nothing: query_port (a write command through the ioctl path),
 * modify_qp (RESET to INIT and back: two write commands), query_device; and what the rest of the host pays:
 * open_close (open and close /dev/null), other_ioctl (FIONREAD on a pipe), other_write (a byte written to a
 * pipe and read back), uverbs_write (a legacy write(2) QUERY_PORT on the uverbs file). Needs root; leaves the programs
 * pinned as it found them (loaded: it loads them when they are not).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "bench.h"
#include "kq/kq.h"
#include "kqempty.skel.h"
#include "kqfloor.skel.h"

#define MAXPROGS 48

static struct {
	char name[256];
	int prog;
	int link;
} progs[MAXPROGS];
static int nprogs;
static const char *only; /* -p: attach only the programs whose pin name contains this */
static int first;        /* attach() starts there (the empty programs' windows) */

static struct ibv_device *dev;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *mqp; /* the QP modify_qp moves */
static union ibv_gid gid;
static char buf[65536];
static int pipefd[2] = { -1, -1 }; /* other_ioctl: FIONREAD on a pipe */

static void die(const char *what, int err)
{
	fprintf(stderr, "kqprobe: %s: %s\n", what, strerror(err));
	exit(1);
}

static bool known(const char *name)
{
	for (int i = 0; i < nprogs; i++)
		if (!strcmp(progs[i].name, name))
			return true;
	return false;
}

/* Take the pinned links away (their programs detach) and keep the programs (once). */
static void unpin_links(void)
{
	DIR *d = opendir(KQ_PIN_DIR);
	struct dirent *e;

	if (!d)
		die(KQ_PIN_DIR, errno);
	while ((e = readdir(d))) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		char path[600];
		int fd;

		if (strncmp(e->d_name, "link_", 5))
			continue;
		if (nprogs == MAXPROGS)
			die("too many programs", E2BIG);
		snprintf(path, sizeof(path), "%s/%s", KQ_PIN_DIR, e->d_name);
		fd = bpf_obj_get(path);
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			die(path, errno);
		if (known(e->d_name)) { /* attached again by lib/kq/kq.c: ours already */
			if (unlink(path))
				die(path, errno);
			close(fd);
			continue;
		}
		progs[nprogs].prog = bpf_prog_get_fd_by_id(info.prog_id);
		if (progs[nprogs].prog < 0)
			die("bpf_prog_get_fd_by_id", errno);
		snprintf(progs[nprogs].name, sizeof(progs[nprogs].name), "%s", e->d_name);
		progs[nprogs].link = -1;
		nprogs++;
		if (unlink(path))
			die(path, errno);
		close(fd); /* the last reference: detached */
	}
	closedir(d);
}

static void attach(void)
{
	for (int i = first; i < nprogs; i++) {
		if (only && !strstr(progs[i].name, only))
			continue;
		progs[i].link = bpf_raw_tracepoint_open(NULL, progs[i].prog);
		if (progs[i].link < 0)
			die(progs[i].name, errno);
	}
}

static void detach(void)
{
	for (int i = 0; i < nprogs; i++) {
		if (progs[i].link >= 0)
			close(progs[i].link);
		progs[i].link = -1;
	}
}

/* Attach and pin again, as rdmactl left them. */
static void repin(void)
{
	only = NULL;
	attach();
	for (int i = 0; i < nprogs; i++) {
		char path[600];

		if (snprintf(path, sizeof(path), "%s/%s", KQ_PIN_DIR, progs[i].name) >= (int)sizeof(path))
			die(progs[i].name, ENAMETOOLONG);
		if (bpf_obj_pin(progs[i].link, path))
			die(path, errno);
		close(progs[i].link);
		close(progs[i].prog);
	}
}

/* One pair; 0 or an errno. */
static int pair(const char *k)
{
	if (!strcmp(k, "ctx")) {
		struct ibv_context *c = ibv_open_device(dev);

		if (!c)
			return errno;
		return ibv_close_device(c) ? EIO : 0;
	}
	if (!strcmp(k, "pd")) {
		struct ibv_pd *p = ibv_alloc_pd(ctx);

		if (!p)
			return errno;
		return ibv_dealloc_pd(p) ? EIO : 0;
	}
	if (!strcmp(k, "cq")) {
		struct ibv_cq *c = ibv_create_cq(ctx, 16, NULL, NULL, 0);

		if (!c)
			return errno;
		return ibv_destroy_cq(c) ? EIO : 0;
	}
	if (!strcmp(k, "qp")) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *q = ibv_create_qp(pd, &qa);

		if (!q)
			return errno;
		return ibv_destroy_qp(q) ? EIO : 0;
	}
	if (!strcmp(k, "srq")) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		struct ibv_srq *q = ibv_create_srq(pd, &sa);

		if (!q)
			return errno;
		return ibv_destroy_srq(q) ? EIO : 0;
	}
	if (!strcmp(k, "mr")) {
		struct ibv_mr *m = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

		if (!m)
			return errno;
		return ibv_dereg_mr(m) ? EIO : 0;
	}
	if (!strcmp(k, "ah")) {
		struct ibv_ah_attr aa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = gid, .sgid_index = 1, .hop_limit = 64 },
		};
		struct ibv_ah *a = ibv_create_ah(pd, &aa);

		if (!a)
			return errno;
		return ibv_destroy_ah(a) ? EIO : 0;
	}
	if (!strcmp(k, "mw")) {
		struct ibv_mw *m = ibv_alloc_mw(pd, IBV_MW_TYPE_1);

		if (!m)
			return errno;
		return ibv_dealloc_mw(m) ? EIO : 0;
	}
	if (!strcmp(k, "query_port")) {
		struct ibv_port_attr pa;

		return ibv_query_port(ctx, 1, &pa) ? errno : 0;
	}
	if (!strcmp(k, "query_device")) {
		struct ibv_device_attr da;

		return ibv_query_device(ctx, &da) ? errno : 0;
	}
	if (!strcmp(k, "modify_qp")) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0 };
		int e = ibv_modify_qp(mqp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

		if (e)
			return e;
		a.qp_state = IBV_QPS_RESET;
		return ibv_modify_qp(mqp, &a, IBV_QP_STATE);
	}
	/* what everything else on the host pays: any file's open and close, any ioctl */
	if (!strcmp(k, "open_close")) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return errno;
		return close(fd) ? errno : 0;
	}
	if (!strcmp(k, "other_ioctl")) {
		int n;

		return ioctl(pipefd[0], FIONREAD, &n) ? errno : 0;
	}
	/* any write and read (lsm/file_permission: every one on the host passes it while a limit exists) */
	if (!strcmp(k, "other_write")) {
		char b = 0;

		if (write(pipefd[1], &b, 1) != 1)
			return errno;
		return read(pipefd[0], &b, 1) == 1 ? 0 : errno;
	}
	/* a legacy write(2) command on the uverbs file that creates nothing (how rxe posts every send) */
	if (!strcmp(k, "uverbs_write")) {
		struct ib_uverbs_query_port_resp resp;
		struct {
			struct ib_uverbs_cmd_hdr hdr;
			struct ib_uverbs_query_port cmd;
		} req = { 0 };

		req.hdr.command = IB_USER_VERBS_CMD_QUERY_PORT;
		req.hdr.in_words = sizeof(req) / 4;
		req.hdr.out_words = sizeof(resp) / 4;
		req.cmd.response = (uintptr_t)&resp;
		req.cmd.port_num = 1;
		return write(ctx->cmd_fd, &req, sizeof(req)) == (ssize_t)sizeof(req) ? 0 : errno;
	}
	fprintf(stderr, "kqprobe: unknown kind %s\n", k);
	exit(2);
}

static double p10(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[n / 10];
}

#define MAXKINDS 16

struct verb {
	const char *name;
	double *on, *off;
	int non, noff;
};

/* ROUNDS pairs of windows; attached windows attach when really is set. */
static void measure(struct verb *kinds, int nk, int pairs, int rounds, bool really)
{
	for (int k = 0; k < nk; k++)
		kinds[k].non = kinds[k].noff = 0;
	for (int w = 0; w < rounds * 2; w++) {
		bool on = (w % 2) ^ ((w / 2) % 2);

		if (on && really)
			attach();
		for (int k = 0; k < nk; k++) {
			struct verb *x = &kinds[k];
			int e = pair(x->name); /* untimed: the first after a switch */

			if (e)
				die(x->name, e);
			for (int i = 0; i < pairs; i++) {
				uint64_t t0 = now_ns(), t1;

				e = pair(x->name);
				t1 = now_ns();
				if (e)
					die(x->name, e);
				if (on)
					x->on[x->non++] = (double)(t1 - t0);
				else
					x->off[x->noff++] = (double)(t1 - t0);
			}
		}
		if (on && really)
			detach();
	}
}

static void report(const char *config, struct verb *kinds, int nk)
{
	for (int k = 0; k < nk; k++) {
		double off = p10(kinds[k].off, kinds[k].noff), on = p10(kinds[k].on, kinds[k].non);

		printf("%-8s %-13s %10.0f %10.0f %+8.0f %+7.2f %%\n", config, kinds[k].name, off, on, on - off,
		       off > 0 ? 100.0 * (on - off) / off : 0.0);
	}
	fflush(stdout);
}

/* The programs of another object (obj) join the list, apart from the kq programs (none without limits). */
static int floor_progs(struct bpf_object *obj)
{
	struct bpf_program *prog;
	int saved = nprogs;

	first = nprogs;
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__fd(prog) < 0)
			continue; /* not loaded (autoload off) */
		if (nprogs == MAXPROGS)
			die("too many programs", E2BIG);
		snprintf(progs[nprogs].name, sizeof(progs[nprogs].name), "%s", bpf_program__name(prog));
		progs[nprogs].prog = bpf_program__fd(prog);
		progs[nprogs].link = -1;
		nprogs++;
	}
	return saved;
}

/* A floor: programs of another object (obj) at the hooks a pair passes while a limit exists (-p picks too). */
static void floor_of(const char *config, struct bpf_object *obj, struct verb *kinds, int nk, int pairs, int rounds)
{
	int saved = floor_progs(obj);

	measure(kinds, nk, pairs, rounds, true);
	report(config, kinds, nk);
	nprogs = saved;
	first = 0;
}

/* bpf/kqfloor.bpf.c's scope and limits (KQR_LEAST), as its maps keep them */
struct kqr_scope {
	__u32 type;
	__u32 epoch;
	__u64 id;
};

struct kqr_lim {
	__s64 max[KQ_NK + 1];
	__s64 use[KQ_NK + 1];
};

/*
 * Does the least design do its work? Attached alone, a PD allocated by this process (limited in least-self)
 * is charged to its file's scope and given back at its deallocation; in least-other nothing is charged. A
 * floor that skipped its work would be no floor: the benchmark stops.
 */
static void least_works(struct kqfloor_bpf *f, bool self)
{
	struct kqr_scope sc = { .type = KQ_SCOPE_PID, .epoch = 1, .id = (__u64)getpid() };
	struct kqr_lim l;
	__s64 held, after;
	struct ibv_pd *p;
	int saved = floor_progs(f->obj), fd = bpf_map__fd(f->maps.kqr_lims);
	const char *picked = only;

	only = NULL; /* all of the floor's programs do its work, whatever -p picks to measure */
	attach();
	p = ibv_alloc_pd(ctx);
	held = bpf_map_lookup_elem(fd, &sc, &l) ? 0 : l.use[KQ_PD];
	if (!p || ibv_dealloc_pd(p))
		die("least: a PD", errno);
	after = bpf_map_lookup_elem(fd, &sc, &l) ? 0 : l.use[KQ_PD];
	detach();
	only = picked;
	nprogs = saved;
	first = 0;
	if (held != (self ? 1 : 0) || after != 0) {
		fprintf(stderr, "kqprobe: least-%s: a PD held counted %lld, after its deallocation %lld "
			"(expected %d and 0): the floor does not do its work\n", self ? "self" : "other",
			(long long)held, (long long)after, self ? 1 : 0);
		exit(1);
	}
}

/*
 * The floors: empty programs (the trampolines alone); one look at the thread's storage at each hook; that with
 * the least a limited thread's object needs in a design that records objects (its scope's usage added to and
 * taken from, its record); and the least a design keeping issue 33's promises pays without records (a
 * limited thread's request read, checked and reserved, the reservation taken or given back, the credit by the
 * file's scope), for a free thread (least-other) and a limited one (least-self).
 */
static void floors(struct verb *kinds, int nk, int pairs, int rounds)
{
	static const struct {
		const char *name;
		unsigned mode;
		bool self;
	} fl[] = { { "lookup", 0, false }, { "record", 1, false }, { "least-other", 2, false },
		   { "least-self", 2, true } };
	struct kqempty_bpf *e = kqempty_bpf__open_and_load();

	if (!e)
		die("kqempty", errno);
	floor_of("empty", e->obj, kinds, nk, pairs, rounds);
	kqempty_bpf__destroy(e);
	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		struct kqfloor_bpf *f = kqfloor_bpf__open();

		if (!f)
			die("kqfloor", errno);
		f->rodata->mode = fl[i].mode;
		f->rodata->limited_tgid = fl[i].self ? (unsigned)getpid() : 0;
		/* the ioctl's return: a hook of the designs that reserve only */
		bpf_program__set_autoload(f->progs.kqr_ioctl_done, fl[i].mode == 2);
		if (kqfloor_bpf__load(f))
			die("kqfloor", errno);
		if (fl[i].mode == 2)
			least_works(f, fl[i].self);
		floor_of(fl[i].name, f->obj, kinds, nk, pairs, rounds);
		kqfloor_bpf__destroy(f);
	}
}

/*
 * n cgroups of their own (/sys/fs/cgroup/kqprobe.I), each with a qp limit: more scopes in the programs' maps,
 * none on this process's path. n = 0: their limits lifted and the cgroups removed.
 */
static void many_scopes(struct kq *q, int n)
{
	static int made;
	char dir[64];
	int i, err;

	for (i = 0; i < (n ? n : made); i++) {
		struct kq_scope sc;

		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/kqprobe.%d", i);
		if (n && mkdir(dir, 0755) && errno != EEXIST)
			die(dir, errno);
		err = kq_scope_cgroup(dir, &sc);
		if (!err)
			err = n ? kq_set(q, &sc, dir, KQ_QP, 1000) : kq_remove(q, &sc);
		if (err && n)
			die(kq_error(), -err);
		if (!n)
			rmdir(dir);
	}
	made = n;
	if (n)
		unpin_links(); /* the programs lib/kq/kq.c may have attached and pinned again */
}

static void set_limits(struct kq *q, const struct kq_scope *sc, uint64_t max)
{
	for (unsigned int k = 0; k < KQ_NK; k++) {
		int err = kq_set(q, sc, NULL, k, max);

		if (err)
			die(kq_error(), -err);
	}
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0";
	char list[256] = "ctx,pd,cq,qp,srq,mr,ah,mw,query_port,modify_qp,query_device,open_close,other_ioctl,other_write,uverbs_write", *tok, *save;
	struct verb kinds[MAXKINDS];
	struct ibv_device **devs;
	struct kq *q;
	int pairs = 30, rounds = 10, nk = 0, nscopes = 1, opt, err;

	while ((opt = getopt(argc, argv, "d:n:r:k:p:s:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'n': pairs = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'k': snprintf(list, sizeof(list), "%s", optarg); break;
		case 'p': only = optarg; break;
		case 's': nscopes = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: kqprobe [-d DEV] [-n PAIRS] [-r ROUNDS] [-k KIND[,KIND...]] [-p PROGRAM] "
				"[-s SCOPES]\n");
			return 2;
		}
	}
	if (nscopes < 1 || nscopes > 2000) {
		fprintf(stderr, "kqprobe: -s takes 1 to 2000 scopes\n");
		return 2;
	}
	if (pairs < 1 || rounds < 1 || pairs * rounds < 10) {
		fprintf(stderr, "kqprobe: -n and -r must give at least 10 pairs per side\n");
		return 2;
	}
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (nk == MAXKINDS)
			die("too many kinds", E2BIG);
		kinds[nk].name = tok;
		kinds[nk].on = calloc((size_t)pairs * rounds, sizeof(double));
		kinds[nk].off = calloc((size_t)pairs * rounds, sizeof(double));
		if (!kinds[nk].on || !kinds[nk].off)
			die("calloc", ENOMEM);
		nk++;
	}

	if (pipe(pipefd))
		die("pipe", errno);
	err = kq_open(true, &q);
	if (err)
		die(kq_error(), -err);
	devs = ibv_get_device_list(NULL);
	for (int i = 0; devs && devs[i]; i++)
		if (!strcmp(ibv_get_device_name(devs[i]), dev_name))
			dev = devs[i];
	if (!dev)
		die(dev_name, ENODEV);
	ctx = ibv_open_device(dev);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!cq)
		die("setup", errno);
	{
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		mqp = ibv_create_qp(pd, &qa);
		if (!mqp || ibv_query_gid(ctx, 1, 1, &gid))
			die("setup", errno);
	}

	unpin_links();
	printf("kernel quota programs: %d attached without limits (lib/kq/kq.c attaches them with the first limit), "
	       "attached and detached in alternating windows of %d pairs per kind, %d rounds\n", nprogs, pairs, rounds);
	printf("instructions per pair (10th percentiles): detached, attached, added and its share\n");
	printf("%-8s %-13s %10s %10s %8s %9s\n", "config", "verb", "detached", "attached", "added", "share");

	struct kq_scope self, other;

	/* process scopes are a pid and its start time */
	if (kq_scope_pid(getpid(), 0, &self) || kq_scope_pid(1, 0, &other))
		die(kq_error(), ESRCH);

	measure(kinds, nk, pairs, rounds, false);
	report("control", kinds, nk);
	floors(kinds, nk, pairs, rounds);
	measure(kinds, nk, pairs, rounds, true);
	report("none", kinds, nk);
	set_limits(q, &other, 1000000);
	unpin_links(); /* every program, attached by the first limit */
	measure(kinds, nk, pairs, rounds, true);
	report("other", kinds, nk);
	if (nscopes > 1) {
		char name[32];

		/* as many scopes again, on cgroups of their own that this process is not in: a pair costs the same */
		many_scopes(q, nscopes - 1);
		snprintf(name, sizeof(name), "other+%d", nscopes - 1);
		measure(kinds, nk, pairs, rounds, true);
		report(name, kinds, nk);
		set_limits(q, &self, 1ull << 40);
		unpin_links();
		snprintf(name, sizeof(name), "self+%d", nscopes - 1);
		measure(kinds, nk, pairs, rounds, true);
		report(name, kinds, nk);
		many_scopes(q, 0);
	}
	set_limits(q, &self, 1ull << 40);
	unpin_links();
	measure(kinds, nk, pairs, rounds, true);
	report("self", kinds, nk);
	repin();
	kq_remove(q, &self);
	kq_remove(q, &other); /* the last limit: every program is detached again */
	ibv_destroy_qp(mqp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	kq_close(q);
	return 0;
}
