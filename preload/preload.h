/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the interceptor's parts share: resource kinds, accounting entry points, the wrapper table. */
#ifndef RDMACTL_PRELOAD_H
#define RDMACTL_PRELOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "ledger/ledger.h"
#include "ledger/obj.h"

#define PRELOAD_API __attribute__((visibility("default")))

/* Internal to the preload (built -fvisibility=hidden): direct PC-relative access, no GOT. */
#pragma GCC visibility push(hidden)

/* The interceptor counts in ledger kinds (lib/core/kinds.h); an MR's bytes travel with LEDGER_MR. */

/* Settings read once from the environment. */
struct pcfg {
	int err;          /* errno of a refused verb (RDMACTL_ERRNO, default ENOMEM) */
	int log_level;    /* 0 quiet, 1 refusals (default), 2 debug */
	int log_fd;       /* stderr or RDMACTL_LOG_FILE */
	bool fail_closed; /* ledger unusable: refuse every creation instead of passing through */
};
extern struct pcfg pcfg;

/* Why a create the interceptor let through failed (explain.c): the line to log, and a denial to record. */
struct why_failed {
	char msg[400];
	const char *env;       /* the denial's limit_env ("rdma.max", "RLIMIT_MEMLOCK"); NULL: none recorded */
	uint64_t usage, limit; /* for that denial */
};
/* errno err of a failed create of kind (bytes: an MR's length): true with w filled when a cause is known. */
bool explain_failure(enum ledger_kind kind, uint64_t bytes, int err, struct why_failed *w);
/* A create let through failed with err: say which limit refused it, if one did (explain.c). */
void acct_create_failed(enum ledger_kind kind, uint64_t bytes, int err);
/* Log (rate-limited with the refusals) and record what explain_failure() found (acct.c). */
void acct_failure_said(enum ledger_kind kind, uint64_t bytes, const struct why_failed *w);

/*
 * Reserve one object of kind (and bytes, for MRs) for this process before the real verb runs.
 * Returns 0, or -errno when refused (the refusal is logged and recorded; errno to return is pcfg.err).
 */
int acct_charge(enum ledger_kind kind, uint64_t bytes);
/* Give back what acct_charge() took (also on the create's failure path). */
void acct_release(enum ledger_kind kind, uint64_t bytes);
/*
 * The route of a kind's charge, decided when the settings or the attachment change (update_slow() in acct.c),
 * never per call, so that a wrapper goes where acct_charge() would, with its result, in fewer steps:
 * ROUTE_LEDGER straight to the ledger's operation (attached, no RDMACTL_MAX_* counter for the kind: the
 * ledger's refusal hook logs); ROUTE_LOCAL the RDMACTL_MAX_* counters alone (no ledger; ROUTE_LOCAL_MR for an MR,
 * whose bytes have a counter too, so that a destroy tells the two apart by its route alone); ROUTE_NONE nothing
 * to count; ROUTE_SLOW through acct_charge() (both, a fork not reattached yet, a fail mode, debug logging).
 * ROUTE_OFF (0, as the table starts): not initialised yet, or rdmactl inactive in this process, so that a
 * wrapper reads no flag of its own before its route (acct_charge_other() inits, and says ACCT_PASS when
 * inactive). acct_route_wr: the same for a queue, ROUTE_SLOW where an RDMACTL_MAX_WR cap applies.
 */
enum { ROUTE_OFF, ROUTE_SLOW, ROUTE_LEDGER, ROUTE_LOCAL, ROUTE_LOCAL_MR, ROUTE_NONE };
/* A charge's answer besides 0 and -errno: rdmactl is inactive, the create passes through uncounted. */
#define ACCT_PASS 1
extern unsigned char acct_route[LEDGER_NKINDS];
extern unsigned char acct_route_wr[LEDGER_NKINDS];
extern struct ledger *acct_ledger;
/* Its slot (the ledger's fast_slot; ledger_no_slot without one): set with the routes, and before a detach. */
extern struct slot *acct_slot;
int acct_charge_local(enum ledger_kind kind, uint64_t bytes);
void acct_release_local(enum ledger_kind kind, uint64_t bytes);
/* ROUTE_SLOW and ROUTE_OFF, out of line (track.c): acct_charge(), or, before init, init first; ACCT_PASS. */
int acct_charge_other(enum ledger_kind kind, uint64_t bytes);
int acct_charge_wr_other(enum ledger_kind kind, uint32_t send_wr, uint32_t recv_wr);
/* The RDMACTL_MAX_* counters and their limits (UINT64_MAX: none, the counter is not kept), acct.c. */
extern _Atomic uint64_t acct_used[LEDGER_NKINDS];
extern uint64_t acct_limit[LEDGER_NKINDS];

/*
 * A count without bytes on ROUTE_LOCAL (its limit is set): one compare-and-swap inline; at the limit,
 * acct_charge_local() decides again and logs the refusal.
 */
static inline __attribute__((always_inline)) int acct_charge_count_local(enum ledger_kind kind)
{
	uint64_t cur = __atomic_load_n(&acct_used[kind], __ATOMIC_RELAXED);

	do {
		if (__builtin_expect(cur >= acct_limit[kind], 0))
			return acct_charge_local(kind, 0);
	} while (!__atomic_compare_exchange_n(&acct_used[kind], &cur, cur + 1, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return 0;
}

static inline __attribute__((always_inline)) int acct_charge_obj(enum ledger_kind kind, uint64_t bytes)
{
	unsigned char r = __atomic_load_n(&acct_route[kind], __ATOMIC_RELAXED);

	if (__builtin_expect(r == ROUTE_LEDGER, 1))
		return ledger_take_obj(&acct_ledger, acct_slot, kind, bytes);
	if (kind != LEDGER_MR && r == ROUTE_LOCAL)
		return acct_charge_count_local(kind);
	if (kind == LEDGER_MR && r == ROUTE_LOCAL_MR)
		return acct_charge_local(kind, bytes);
	if (r == ROUTE_NONE)
		return 0;
	return acct_charge_other(kind, bytes);
}

static inline __attribute__((always_inline)) void acct_release_obj(enum ledger_kind kind, uint64_t bytes)
{
	unsigned char r = __atomic_load_n(&acct_route[kind], __ATOMIC_RELAXED);

	if (__builtin_expect(r == ROUTE_LEDGER, 1))
		ledger_give_obj(&acct_ledger, acct_slot, kind, bytes);
	else if (r == ROUTE_LOCAL)
		__atomic_fetch_sub(&acct_used[kind], 1, __ATOMIC_RELAXED);
	else if (r == ROUTE_LOCAL_MR)
		acct_release_local(kind, bytes);
	else if (r != ROUTE_NONE)
		acct_release(kind, bytes);
}

/* Change the bytes of a live MR by delta (rereg). Growing may be refused like acct_charge. */
int acct_mr_bytes(int64_t delta);
/*
 * A queue (QP, SRQ, WQ): its requested depth against every work-request cap, then acct_charge(kind, 0), in
 * one ledger operation. 0 or -errno.
 */
int acct_charge_wr(enum ledger_kind kind, uint32_t send_wr, uint32_t recv_wr);
/* One-time setup (settings, ledger); called under the init once. */
void acct_init(void);
/* Bracket a device open (before its charge, after the open returned): the gc may then check the process. */
void acct_open_mark(void);
/*
 * The slot a device open marks (ledger_open_mark()): the process's own, whatever its plans' shape; the slot
 * of zeros without one. Set with the routes.
 */
extern struct slot *acct_mark_slot;
/* acct_open_mark() by the route of contexts: straight to the slot, nothing without a ledger. */
static inline __attribute__((always_inline)) void acct_open_mark_obj(void)
{
	unsigned char r = __atomic_load_n(&acct_route[LEDGER_CTX], __ATOMIC_RELAXED);

	if (__builtin_expect(r == ROUTE_LEDGER, 1))
		ledger_mark_open(acct_mark_slot);
	else if (r == ROUTE_SLOW)
		acct_open_mark();
}
/* In a forked child: start from zero. */
void acct_atfork_child(void);
/*
 * Log a line (level 1 = refusal, 2 = debug), rate-limited for refusals. The arguments are only evaluated
 * when the level is on; errno is preserved.
 */
void plog_line(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define plog(level, ...)                                       \
	do {                                                   \
		if ((level) <= pcfg.log_level)                 \
			plog_line((level), __VA_ARGS__);       \
	} while (0)

/* Exported wrappers by name, for the rtld-audit redirection and the dlsym interposer. */
struct wrap_sym {
	const char *name;
	void *addr;	      /* the wrapper */
	void *const *real; /* where the real entry point is kept, once looked up */
};
extern const struct wrap_sym wrap_syms[];
extern const unsigned int wrap_nsyms;

#pragma GCC visibility pop

#endif
