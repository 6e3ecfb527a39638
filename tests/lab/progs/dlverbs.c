// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Lab program: loads libibverbs the way NCCL does -- dlopen() then dlvsym(handle, name, "IBVERBS_1.1") --
 * which LD_PRELOAD symbol interposition alone does not see. Creates up to N QPs and M MRs of SIZE bytes.
 *   dlverbs [-d DEV] [-q NQP] [-r NMR] [-S SIZE] [-H SECONDS] [-l LOOPS] [-K [-R]] [-F]
 * Prints "qp created=N refused=M errno=E" and "mr created=..." lines. -l: then LOOPS create/destroy pairs of
 * a QP and reg/dereg pairs of an MR while holding those ("loops qp ok=N refused=M", "loops mr ..."), and
 * holds -H seconds after them. -K: close the device without destroying anything, print "closed with
 * everything" and hold -H seconds; -R: then open the device again, create NQP QPs there ("reopened qp
 * created=N refused=M errno=E"), print "reopened holding" and hold -H seconds once more.
 * -F: fork once the objects exist; the child opens a context of its own, creates NQP QPs there and prints
 * "child holding", the parent "holding"; both hold -H seconds, then tear down what each created.
 * A hold ends early at SIGUSR1 (one signal ends one hold): a test moves the program on when its checks are
 * done, instead of racing a timer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define V "IBVERBS_1.1"

static struct {
	struct ibv_device **(*get_device_list)(int *);
	const char *(*get_device_name)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*destroy_qp)(struct ibv_qp *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *);
} f;

static void report(const char *kind, int created, int refused, int err)
{
	printf("%s created=%d refused=%d errno=%s\n", kind, created, refused, err ? strerrorname_np(err) : "0");
	fflush(stdout);
}

/* Hold up to SECONDS, or until a SIGUSR1 (blocked in main, so one sent before the wait is not lost). */
static void hold_for(int seconds)
{
	struct timespec ts = { .tv_sec = seconds };
	sigset_t set;

	if (seconds <= 0)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigtimedwait(&set, NULL, &ts) < 0 && errno == EINTR)
		;
}

/* The forked child: objects of its own on a context of its own; the parent's are not its to touch. */
static int child_run(struct ibv_device **list, const char *dev_name, int n_qp, int hold)
{
	struct ibv_context *ctx = NULL;
	struct ibv_qp *qps[256];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int i, nq = 0;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(f.get_device_name(list[i]), dev_name))
			ctx = f.open_device(list[i]);
	if (!ctx || !(pd = f.alloc_pd(ctx)) || !(cq = f.create_cq(ctx, 16, NULL, NULL, 0))) {
		fprintf(stderr, "dlverbs: child setup on %s: %s\n", dev_name, strerror(errno));
		return 1;
	}
	for (i = 0; i < n_qp; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[nq] = f.create_qp(pd, &qa);
		if (qps[nq])
			nq++;
	}
	printf("child pid=%d qp created=%d\nchild holding\n", (int)getpid(), nq);
	fflush(stdout);
	hold_for(hold);
	for (i = 0; i < nq; i++)
		f.destroy_qp(qps[i]);
	f.destroy_cq(cq);
	f.dealloc_pd(pd);
	f.close_device(ctx);
	printf("child done\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev_name = "rxe0";
	int n_qp = 1, n_mr = 0, hold = 0, loops = 0, keep = 0, reopen = 0, forks = 0, opt, i, nq = 0, nm = 0, err,
	    refused;
	size_t size = 4096;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp *qps[256];
	struct ibv_mr *mrs[256];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	sigset_t usr1;
	void *h, *buf;

	while ((opt = getopt(argc, argv, "d:q:r:S:H:l:KRF")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'q': n_qp = atoi(optarg); break;
		case 'r': n_mr = atoi(optarg); break;
		case 'S': size = strtoull(optarg, NULL, 0); break;
		case 'H': hold = atoi(optarg); break;
		case 'l': loops = atoi(optarg); break;
		case 'K': keep = 1; break;
		case 'R': reopen = 1; break;
		case 'F': forks = 1; break;
		default: return 2;
		}
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	if (n_qp > 256 || n_mr > 256)
		return 2;
	h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlverbs: %s\n", dlerror());
		return 1;
	}
#define L(field, name)                                                                  \
	do {                                                                            \
		*(void **)&f.field = dlvsym(h, name, V);                                \
		if (!f.field) {                                                         \
			fprintf(stderr, "dlverbs: dlvsym %s: %s\n", name, dlerror());   \
			return 1;                                                       \
		}                                                                       \
	} while (0)
	L(get_device_list, "ibv_get_device_list");
	L(get_device_name, "ibv_get_device_name");
	L(open_device, "ibv_open_device");
	L(close_device, "ibv_close_device");
	L(alloc_pd, "ibv_alloc_pd");
	L(dealloc_pd, "ibv_dealloc_pd");
	L(create_cq, "ibv_create_cq");
	L(destroy_cq, "ibv_destroy_cq");
	L(create_qp, "ibv_create_qp");
	L(destroy_qp, "ibv_destroy_qp");
	L(reg_mr, "ibv_reg_mr");
	L(dereg_mr, "ibv_dereg_mr");

	list = f.get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(f.get_device_name(list[i]), dev_name))
			ctx = f.open_device(list[i]);
	if (!ctx || !(pd = f.alloc_pd(ctx)) || !(cq = f.create_cq(ctx, 16, NULL, NULL, 0))) {
		fprintf(stderr, "dlverbs: setup on %s: %s\n", dev_name, strerror(errno));
		return 1;
	}
	err = refused = 0;
	for (i = 0; i < n_qp; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps[nq] = f.create_qp(pd, &qa);
		if (qps[nq])
			nq++;
		else
			refused++, err = errno;
	}
	report("qp", nq, refused, err);
	buf = calloc(1, size ? size : 1);
	err = refused = 0;
	for (i = 0; buf && i < n_mr; i++) {
		mrs[nm] = f.reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE);
		if (mrs[nm])
			nm++;
		else
			refused++, err = errno;
	}
	if (n_mr)
		report("mr", nm, refused, err);
	if (loops) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		int ok = 0;

		err = refused = 0;
		for (i = 0; i < loops; i++) {
			struct ibv_qp *qp = f.create_qp(pd, &qa);

			if (!qp) {
				refused++, err = errno;
				continue;
			}
			ok++;
			if (f.destroy_qp(qp)) {
				fprintf(stderr, "dlverbs: destroy_qp: %s\n", strerror(errno));
				return 1;
			}
		}
		printf("loops qp ok=%d refused=%d errno=%s\n", ok, refused, err ? strerrorname_np(err) : "0");
		ok = err = refused = 0;
		for (i = 0; buf && i < loops; i++) {
			struct ibv_mr *mr = f.reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE);

			if (!mr) {
				refused++, err = errno;
				continue;
			}
			ok++;
			if (f.dereg_mr(mr)) {
				fprintf(stderr, "dlverbs: dereg_mr: %s\n", strerror(errno));
				return 1;
			}
		}
		printf("loops mr ok=%d refused=%d errno=%s\n", ok, refused, err ? strerrorname_np(err) : "0");
		fflush(stdout);
	}
	if (forks) {
		pid_t child;

		fflush(stdout);
		child = fork();
		if (child < 0) {
			fprintf(stderr, "dlverbs: fork: %s\n", strerror(errno));
			return 1;
		}
		if (child == 0)
			return child_run(list, dev_name, n_qp, hold);
	}
	if (hold) {
		printf("holding\n");
		fflush(stdout);
		hold_for(hold);
	}
	if (keep) {
		/* what the context holds stays in the kernel while its queues stay mapped: until exit */
		f.close_device(ctx);
		printf("closed with everything\n");
		fflush(stdout);
		hold_for(hold);
		if (reopen) {
			ctx = NULL;
			for (i = 0; list && list[i]; i++)
				if (!strcmp(f.get_device_name(list[i]), dev_name))
					ctx = f.open_device(list[i]);
			if (!ctx || !(pd = f.alloc_pd(ctx)) || !(cq = f.create_cq(ctx, 16, NULL, NULL, 0))) {
				fprintf(stderr, "dlverbs: reopen on %s: %s\n", dev_name, strerror(errno));
				return 1;
			}
			err = refused = nq = 0;
			for (i = 0; i < n_qp; i++) {
				struct ibv_qp_init_attr qa = {
					.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
				};

				if (f.create_qp(pd, &qa))
					nq++;
				else
					refused++, err = errno;
			}
			printf("reopened ");
			report("qp", nq, refused, err);
			printf("reopened holding\n");
			fflush(stdout);
			hold_for(hold);
		}
		free(buf);
		printf("done\n");
		return 0;
	}
	for (i = 0; i < nm; i++)
		f.dereg_mr(mrs[i]);
	for (i = 0; i < nq; i++)
		f.destroy_qp(qps[i]);
	f.destroy_cq(cq);
	f.dealloc_pd(pd);
	f.close_device(ctx);
	free(buf);
	dlclose(h);
	printf("done\n");
	return 0;
}
