// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Interceptor accounting: per-process limits from RDMACTL_MAX_*, the shared ledger, refusal logging. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ledger/ledger.h"
#include "preload.h"
#include "core/hot.h"
#include "core/util.h"

struct pcfg pcfg HOT_DATA = { .err = ENOMEM, .log_level = 1, .log_fd = 2 };

/* Process-local usage and the RDMACTL_MAX_* limits that apply to this process alone. */
_Atomic uint64_t acct_used[LEDGER_NKINDS] HOT_DATA;
/* UINT64_MAX: no such limit, and acct_used[] is not kept (set once, before the first charge) */
uint64_t acct_limit[LEDGER_NKINDS] HOT_DATA;
/* An object of this kind has a local counter (its limit, or for an MR its bytes' limit): set with acct_limit[]. */
static bool local_on[LEDGER_NKINDS] HOT_DATA;
static const char *const limit_env[LEDGER_NKINDS] = {
#define X(name, NAME, led, ...) KINDS_IF(led, "RDMACTL_MAX_" #NAME, )
	KINDS(X)
#undef X
};

static struct ledger *ledger HOT_DATA;
/* The routes (preload.h): written by update_slow() only. */
unsigned char acct_route[LEDGER_NKINDS] HOT_DATA;
unsigned char acct_route_wr[LEDGER_NKINDS] HOT_DATA;
struct ledger *acct_ledger HOT_DATA;
struct slot *acct_slot HOT_DATA = &ledger_no_slot;
struct slot *acct_mark_slot = &ledger_no_slot;
/* The handle itself: every reserve and release reads it. */
static unsigned char ledger_mem[LEDGER_HANDLE_SIZE] HOT_DATA __attribute__((aligned(64)));
/* The ledger was asked for (job or path given) but is unusable and RDMACTL_FAIL=closed: refuse all. */
static bool refuse_all HOT_DATA;
/* Set in a forked child: attach a fresh slot on the next charge. */
static _Atomic bool reattach HOT_DATA;
/* refuse_all, reattach or debug logging: charges and releases take the long way (charge_slow()). */
static _Atomic bool slow HOT_DATA;
static void update_slow(void);
static int ledger_refused(int ret, enum ledger_kind kind, const struct ledger_denial *why) COLD_FN;
static pid_t my_pid;
static char my_job[LEDGER_NAME_MAX];

/* ---- logging ------------------------------------------------------------------------------------ */

static _Atomic int64_t last_refusal_ns = -1;
static _Atomic unsigned int suppressed;

static void vlog(const char *fmt, va_list ap)
{
	int n, saved = errno;
	char buf[512];

	n = snprintf(buf, sizeof(buf), "rdmactl: ");
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write: lines from concurrent threads and processes do not interleave. */
	if (write(pcfg.log_fd, buf, n) < 0)
		n = 0;
	errno = saved;
}

void plog_line(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > pcfg.log_level)
		return;
	va_start(ap, fmt);
	vlog(fmt, ap);
	va_end(ap);
}

/* Refusals: at most one line per second per process; the next line says how many were not shown. */
static void log_refusal(const char *fmt, ...) __attribute__((format(printf, 1, 2))) COLD_FN;
static void log_refusal(const char *fmt, ...)
{
	struct timespec ts;
	int64_t last, now;
	unsigned int n;
	char msg[400];
	va_list ap;

	if (pcfg.log_level < 1)
		return;
	/* a window of one second from the last line shown (not "once per calendar second", which lets two
	 * refusals a millisecond apart both through when a second boundary falls between them) */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	last = atomic_load(&last_refusal_ns);
	if ((last >= 0 && now - last < 1000000000) ||
	    !atomic_compare_exchange_strong(&last_refusal_ns, &last, now)) {
		atomic_fetch_add(&suppressed, 1);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = atomic_exchange(&suppressed, 0);
	if (n)
		plog(1, "%s (%u more refusals not shown)", msg, n);
	else
		plog(1, "%s", msg);
}

/* ---- settings ----------------------------------------------------------------------------------- */

static void read_env(void)
{
	const char *s;
	uint64_t v;
	int i;

	if ((s = getenv("RDMACTL_LOG_LEVEL")) && !parse_u64(s, 0, 3, &v))
		pcfg.log_level = (int)v;
	if ((s = getenv("RDMACTL_LOG_FILE")) && *s) {
		int fd = open(s, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		if (fd >= 0)
			pcfg.log_fd = fd;
		else
			plog(1, "cannot open RDMACTL_LOG_FILE %s: %s (logging to stderr)", s, strerror(errno));
	}
	if ((s = getenv("RDMACTL_ERRNO")) && *s) {
		if (!parse_u64(s, 1, 4095, &v))
			pcfg.err = (int)v;
		else if (!strcasecmp(s, "ENOMEM"))
			pcfg.err = ENOMEM;
		else if (!strcasecmp(s, "EDQUOT"))
			pcfg.err = EDQUOT;
		else if (!strcasecmp(s, "EAGAIN"))
			pcfg.err = EAGAIN;
		else if (!strcasecmp(s, "ENOSPC"))
			pcfg.err = ENOSPC;
		else if (!strcasecmp(s, "EPERM"))
			pcfg.err = EPERM;
	}
	s = getenv(LEDGER_ENV_FAIL);
	pcfg.fail_closed = s && !strcasecmp(s, "closed");
	for (i = 0; i < LEDGER_NKINDS; i++) {
		acct_limit[i] = UINT64_MAX;
		s = getenv(limit_env[i]);
		if (!s || !*s)
			continue;
		if (!strcasecmp(s, "unlimited"))
			continue;
		if ((i == LEDGER_MR_BYTES ? parse_size(s, UINT64_MAX, &v) : parse_u64(s, 0, UINT64_MAX, &v)))
			plog(1, "ignoring %s=%s: %s", limit_env[i], s, parse_why(s, -EINVAL, i == LEDGER_MR_BYTES));
		else
			acct_limit[i] = v;
	}
	for (i = 0; i < LEDGER_NKINDS; i++)
		local_on[i] = acct_limit[i] != UINT64_MAX || (i == LEDGER_MR && acct_limit[LEDGER_MR_BYTES] != UINT64_MAX);
}

static void open_ledger(void)
{
	const char *job = getenv(LEDGER_ENV_JOB);
	bool wanted = (job && *job) || getenv(LEDGER_ENV_PATH);
	struct ledger *l = NULL;
	int ret;

	if (job)
		snprintf(my_job, sizeof(my_job), "%s", job);
	ret = ledger_open_in(ledger_mem, NULL, 0, &l);
	if (!ret) {
		ret = ledger_attach(l, NULL);
		if (!ret) {
			ledger_on_refusal(l, ledger_refused);
			ledger = l;
			return;
		}
		if (ret == -ENOSPC && ledger_limits_apply(l, NULL)) {
			/* a full ledger must not let a process its limits cover run unlimited */
			plog(1, "ledger %s: %s (refusing every creation: limits of the ledger apply to this process)",
			     ledger_default_path(), ledger_error());
			ledger_close(l);
			refuse_all = true;
			return;
		}
		ledger_close(l);
		if (!wanted && ret == -ENOENT)
			return;
		plog(1, "ledger %s: cannot attach: %s (%s)", ledger_default_path(), strerror(-ret),
		     pcfg.fail_closed ? "refusing every creation: RDMACTL_FAIL=closed" : "not enforcing its limits");
	} else {
		/* No ledger and nobody asked for one: only the RDMACTL_MAX_* limits apply, silently. */
		if (!wanted && ret == -ENOENT)
			return;
		plog(1, "ledger %s: %s (%s)", ledger_default_path(), ledger_error(),
		     pcfg.fail_closed ? "refusing every creation: RDMACTL_FAIL=closed" : "not enforcing its limits");
	}
	refuse_all = pcfg.fail_closed;
}

void acct_init(void)
{
	my_pid = getpid();
	read_env();
	open_ledger();
	update_slow();
}

void acct_atfork_child(void)
{
	int i;

	my_pid = getpid();
	for (i = 0; i < LEDGER_NKINDS; i++)
		atomic_store_explicit(&acct_used[i], 0, memory_order_relaxed);
	atomic_store(&reattach, true);
	update_slow();
}

static COLD_FN void attach_child(void)
{
	if (atomic_exchange(&reattach, false) && ledger) {
		int ret = ledger_attach_child(ledger);

		if (ret == -ENOSPC && ledger_limits_apply(ledger, my_job)) {
			plog(1, "ledger: forked child %d: %s (refusing every creation: limits of the ledger apply to it)",
			     (int)getpid(), ledger_error());
			refuse_all = true;
		} else if (ret) {
			plog(1, "ledger: forked child %d cannot attach: %s", (int)getpid(), strerror(-ret));
		}
	}
	update_slow();
}

static inline void ensure_attached(void)
{
	if (__builtin_expect(atomic_load_explicit(&reattach, memory_order_relaxed), 0))
		attach_child();
}

/* ---- charging ----------------------------------------------------------------------------------- */

static const char *job_part(char *buf, size_t len)
{
	if (my_job[0])
		snprintf(buf, len, " (job %s)", my_job);
	else
		buf[0] = '\0';
	return buf;
}

/* A refusal by an RDMACTL_MAX_* limit: into the ledger's denial ring too, so monitor and top see it. */
static COLD_FN void note_local_denial(int i, uint64_t n, uint64_t cur)
{
	if (ledger && ledger_attached(ledger))
		ledger_note_denial(ledger, (enum ledger_kind)i, n, cur, acct_limit[i], limit_env[i], NULL);
}

static COLD_FN int local_refused(int i, uint64_t n, uint64_t cur)
{
	char jb[LEDGER_NAME_MAX + 8];

	log_refusal("refused %s for pid %d%s: %" PRIu64 "/%" PRIu64 " in use, limit set by %s", ledger_kind_names[i],
		    (int)my_pid, job_part(jb, sizeof(jb)), cur, acct_limit[i], limit_env[i]);
	note_local_denial(i, n, cur);
	return -pcfg.err;
}

/* Local (RDMACTL_MAX_*) counter i: add n, or refuse and log. Nothing to count without such a limit. */
static inline int local_charge(int i, uint64_t n)
{
	uint64_t cur;

	if (acct_limit[i] == UINT64_MAX)
		return 0;
	cur = atomic_load_explicit(&acct_used[i], memory_order_relaxed);
	do {
		if (cur + n < cur || cur + n > acct_limit[i])
			return local_refused(i, n, cur);
	} while (!atomic_compare_exchange_weak_explicit(&acct_used[i], &cur, cur + n, memory_order_relaxed,
						       memory_order_relaxed));
	return 0;
}

static inline void local_release(int i, uint64_t n)
{
	if (acct_limit[i] != UINT64_MAX)
		atomic_fetch_sub_explicit(&acct_used[i], n, memory_order_relaxed);
}

/* One object's RDMACTL_MAX_* counters given back: its count, and an MR's bytes. */
static inline ALWAYS_INLINE void local_release_obj(enum ledger_kind kind, uint64_t bytes)
{
	local_release(kind, 1);
	if (kind == LEDGER_MR)
		local_release(LEDGER_MR_BYTES, bytes);
}

/* The ledger's refusal hook (ledger_on_refusal()): log the refusal, or follow the fail mode on an error. */
static COLD_FN int ledger_refused(int ret, enum ledger_kind kind, const struct ledger_denial *why)
{
	char msg[300];

	if (ret != -EDQUOT || !why) {
		/* Not a quota decision (e.g. the slot is gone): follow the fail mode. */
		if (!pcfg.fail_closed)
			return 0;
		log_refusal("refused %s for pid %d: ledger error: %s (RDMACTL_FAIL=closed)", ledger_kind_name(kind),
			    (int)my_pid, strerror(-ret));
		return -pcfg.err;
	}
	ledger_format_denial(why, msg, sizeof(msg));
	log_refusal("%s", msg);
	return -pcfg.err;
}

/* What explain.c found of a failed create: logged with the refusals, and recorded as a denial where it names one. */
COLD_FN void acct_failure_said(enum ledger_kind kind, uint64_t bytes, const struct why_failed *w)
{
	log_refusal("%s", w->msg);
	if (w->env && ledger && ledger_attached(ledger))
		ledger_note_denial(ledger, kind, kind == LEDGER_MR && bytes ? bytes : 1, w->usage, w->limit, w->env,
				   NULL);
}

/* Reserve n of one kind in the ledger, or refuse and log (rereg's bytes). */
static int ledger_charge(enum ledger_kind k, uint64_t n)
{
	struct ledger_denial why;
	int ret;

	if (!ledger)
		return 0;
	ret = ledger_reserve(ledger, k, n, &why);
	return ret ? ledger_refused(ret, k, &why) : 0;
}

static void ledger_uncharge(enum ledger_kind k, uint64_t n)
{
	if (ledger && n)
		ledger_release(ledger, k, n);
}

static COLD_FN int refuse_closed(const char *what)
{
	log_refusal("refused %s for pid %d: ledger unusable and RDMACTL_FAIL=closed", what, (int)my_pid);
	return -pcfg.err;
}

static COLD_FN int local_wr_refused(enum ledger_kind kind, uint64_t depth)
{
	char jb[LEDGER_NAME_MAX + 8];

	log_refusal("refused %s for pid %d%s: %" PRIu64 " work requests asked, cap %" PRIu64 " set by RDMACTL_MAX_WR",
		    ledger_kind_names[kind], (int)my_pid, job_part(jb, sizeof(jb)), depth, acct_limit[LEDGER_WR]);
	note_local_denial(LEDGER_WR, depth, 0);
	return -pcfg.err;
}

/* A refusal of the ledger (logged by its hook): the local counters given back. */
static COLD_FN int ledger_charge_failed(int ret, enum ledger_kind kind, uint64_t bytes)
{
	local_release_obj(kind, bytes);
	return ret;
}

/*
 * One object of kind: its RDMACTL_MAX_* counters, then the ledger in one operation. extra: an MR's bytes,
 * or a queue's work-request depth (queue true).
 */
static inline ALWAYS_INLINE int charge(enum ledger_kind kind, uint64_t extra, bool queue)
{
	struct ledger *l;
	int ret;

	if (queue && __builtin_expect(extra > acct_limit[LEDGER_WR], 0))
		return local_wr_refused(kind, extra);
	ret = local_charge(kind, 1);
	if (ret)
		return ret;
	if (!queue && kind == LEDGER_MR && (ret = local_charge(LEDGER_MR_BYTES, extra))) {
		local_release(kind, 1);
		return ret;
	}
	l = ledger;
	if (!l)
		return 0;
	ret = ledger_reserve_obj(l, kind, extra, NULL);
	if (__builtin_expect(!ret, 1))
		return 0;
	return ledger_charge_failed(ret, kind, queue ? 0 : extra);
}

/* The long way: fail-closed without a ledger, a forked child not attached yet, debug logging. */
static COLD_FN int charge_slow(enum ledger_kind kind, uint64_t extra, bool queue)
{
	int ret;

	if (refuse_all)
		return refuse_closed(ledger_kind_names[kind]);
	ensure_attached();
	ret = charge(kind, extra, queue);
	if (!ret && queue)
		plog(2, "charged %s 1 (depth %" PRIu64 ") for pid %d", ledger_kind_names[kind], extra, (int)my_pid);
	else if (!ret && kind == LEDGER_MR)
		plog(2, "charged mr 1 (%" PRIu64 " bytes) for pid %d", extra, (int)my_pid);
	else if (!ret)
		plog(2, "charged %s 1 for pid %d", ledger_kind_names[kind], (int)my_pid);
	return ret;
}

/* A refusal of acct_charge_local(): logged; an MR refused by its bytes gives its count back. */
static COLD_FN int charge_local_refused(enum ledger_kind kind, uint64_t bytes, uint64_t cur, bool by_bytes)
{
	if (!by_bytes)
		return local_refused(kind, 1, cur);
	local_release(LEDGER_MR, 1);
	return local_refused(LEDGER_MR_BYTES, bytes, cur);
}

/*
 * Without a ledger (the environment-variable mode, ROUTE_LOCAL in preload.h): the RDMACTL_MAX_* counters
 * alone, as a leaf: the refusal's logging out of line, so that the usual path needs no stack frame.
 */
HOT_CREATE int acct_charge_local(enum ledger_kind kind, uint64_t bytes)
{
	uint64_t lim = acct_limit[kind], cur;

	if (lim != UINT64_MAX) {
		cur = atomic_load_explicit(&acct_used[kind], memory_order_relaxed);
		do {
			if (__builtin_expect(cur >= lim, 0))
				return charge_local_refused(kind, bytes, cur, false);
		} while (!atomic_compare_exchange_weak_explicit(&acct_used[kind], &cur, cur + 1, memory_order_relaxed,
							       memory_order_relaxed));
	}
	if (kind == LEDGER_MR && (lim = acct_limit[LEDGER_MR_BYTES]) != UINT64_MAX) {
		cur = atomic_load_explicit(&acct_used[LEDGER_MR_BYTES], memory_order_relaxed);
		do {
			if (__builtin_expect(bytes > lim || cur > lim - bytes, 0))
				return charge_local_refused(kind, bytes, cur, true);
		} while (!atomic_compare_exchange_weak_explicit(&acct_used[LEDGER_MR_BYTES], &cur, cur + bytes,
							       memory_order_relaxed, memory_order_relaxed));
	}
	return 0;
}

HOT_DESTROY void acct_release_local(enum ledger_kind kind, uint64_t bytes)
{
	local_release_obj(kind, bytes);
}

/* With an RDMACTL_MAX_* counter for the kind: out of line, so that the usual path needs no stack frame. */
static __attribute__((noinline)) HOT_CREATE int charge_local(enum ledger_kind kind, uint64_t extra, bool queue)
{
	return charge(kind, extra, queue);
}

/* Settings or a fork that send every charge the long way (charge_slow): one flag on the hot path. */
static void update_slow(void)
{
	bool sl = refuse_all || atomic_load(&reattach) || pcfg.log_level >= 2;
	int i;

	atomic_store(&slow, sl);
	/* where acct_charge() and acct_charge_wr() would go at once, without a check on the way */
	acct_ledger = ledger;
	{
		struct slot *s = ledger ? __atomic_load_n(&ledger->fast_slot, __ATOMIC_RELAXED) : NULL;

		__atomic_store_n(&acct_slot, s ? s : &ledger_no_slot, __ATOMIC_RELAXED);
		__atomic_store_n(&acct_mark_slot, ledger ? ledger_own_slot(ledger) : &ledger_no_slot, __ATOMIC_RELAXED);
	}
	for (i = 0; i < LEDGER_NKINDS; i++) {
		unsigned char r = sl ? ROUTE_SLOW
			       : ledger ? (local_on[i] ? ROUTE_SLOW : ROUTE_LEDGER)
					: !local_on[i] ? ROUTE_NONE
					: i == LEDGER_MR ? ROUTE_LOCAL_MR : ROUTE_LOCAL;

		__atomic_store_n(&acct_route[i], r, __ATOMIC_RELAXED);
		/* a queue's route: a WR cap from the environment takes the long way, unless nothing is counted */
		if (acct_limit[LEDGER_WR] != UINT64_MAX && r != ROUTE_SLOW)
			r = ROUTE_SLOW;
		__atomic_store_n(&acct_route_wr[i], r, __ATOMIC_RELAXED);
	}
}
/*
 * The first function of the create side. Without an RDMACTL_MAX_* limit on the kind (the usual case under
 * run) it is a tail call into the ledger, whose refusal hook logs (ledger_refused()).
 */
HOT_CREATE_FIRST int acct_charge(enum ledger_kind kind, uint64_t bytes)
{
	struct ledger *l = ledger;

	if (__builtin_expect(atomic_load_explicit(&slow, memory_order_relaxed), 0))
		return charge_slow(kind, bytes, false);
	if (!local_on[kind])
		return l ? ledger_reserve_obj(l, kind, bytes, NULL) : 0;
	if (!l)
		return acct_charge_local(kind, bytes);
	return charge_local(kind, bytes, false);
}

HOT_CREATE int acct_charge_wr(enum ledger_kind kind, uint32_t send_wr, uint32_t recv_wr)
{
	uint32_t depth = send_wr > recv_wr ? send_wr : recv_wr;
	struct ledger *l = ledger;

	if (__builtin_expect(atomic_load_explicit(&slow, memory_order_relaxed), 0))
		return charge_slow(kind, depth, true);
	if (!local_on[kind] && acct_limit[LEDGER_WR] == UINT64_MAX)
		return l ? ledger_reserve_obj(l, kind, depth, NULL) : 0;
	if (!l) {
		if (__builtin_expect(depth > acct_limit[LEDGER_WR], 0))
			return local_wr_refused(kind, depth);
		return local_charge(kind, 1);
	}
	return charge_local(kind, depth, true);
}

static COLD_FN void release_slow(enum ledger_kind kind, uint64_t bytes)
{
	if (refuse_all)
		return;
	local_release_obj(kind, bytes);
	if (ledger)
		ledger_release_obj(ledger, kind, bytes);
	plog(2, "released %s for pid %d", ledger_kind_names[kind], (int)my_pid);
}

static __attribute__((noinline)) HOT_DESTROY void release_local(enum ledger_kind kind, uint64_t bytes)
{
	struct ledger *l = ledger;

	local_release_obj(kind, bytes);
	if (l)
		ledger_release_obj(l, kind, bytes);
}

/* The first function of the destroy side. */
HOT_DESTROY_FIRST void acct_release(enum ledger_kind kind, uint64_t bytes)
{
	struct ledger *l = ledger;

	if (__builtin_expect(atomic_load_explicit(&slow, memory_order_relaxed), 0)) {
		release_slow(kind, bytes);
		return;
	}
	if (!local_on[kind]) {
		if (l)
			ledger_release_obj(l, kind, bytes);
		return;
	}
	if (!l) {
		local_release_obj(kind, bytes);
		return;
	}
	release_local(kind, bytes);
}

int acct_mr_bytes(int64_t delta)
{
	int ret;

	if (refuse_all)
		return delta > 0 ? refuse_closed("mr_bytes") : 0;
	if (delta <= 0) {
		local_release(LEDGER_MR_BYTES, (uint64_t)-delta);
		ledger_uncharge(LEDGER_MR_BYTES, (uint64_t)-delta);
		return 0;
	}
	ensure_attached();
	ret = local_charge(LEDGER_MR_BYTES, (uint64_t)delta);
	if (ret)
		return ret;
	ret = ledger_charge(LEDGER_MR_BYTES, (uint64_t)delta);
	if (ret)
		local_release(LEDGER_MR_BYTES, (uint64_t)delta);
	return ret;
}

/* Before a device open is charged, and once it returned and its charge is settled: see ledger_open_mark(). */
COLD_FN void acct_open_mark(void)
{
	if (refuse_all)
		return;
	ensure_attached();
	if (ledger)
		ledger_open_mark(ledger);
}

/* A clean exit gives the slot back at once; a killed process is reclaimed by the ledger's gc. */
__attribute__((destructor)) static void acct_fini(void)
{
	if (ledger && !atomic_load(&reattach) && my_pid == getpid()) {
		/* the slot goes back: a create or destroy from now on goes the long way, which sees it gone */
		__atomic_store_n(&acct_slot, &ledger_no_slot, __ATOMIC_RELAXED);
		__atomic_store_n(&acct_mark_slot, &ledger_no_slot, __ATOMIC_RELAXED);
		ledger_detach(ledger);
	}
}
