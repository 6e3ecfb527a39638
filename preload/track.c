// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The charge/track protocol's out-of-line steps: the failure paths of a create and a destroy. */
#include "wrap.h"

/* A charge on ROUTE_OFF: init first; true when rdmactl is then inactive (the create passes through). */
static bool inactive_after_init(const unsigned char *route)
{
	if (__atomic_load_n(route, __ATOMIC_RELAXED) != ROUTE_OFF)
		return false;
	need_real();
	return !__atomic_load_n(&pl_on, __ATOMIC_ACQUIRE);
}

COLD_FN int acct_charge_other(enum ledger_kind kind, uint64_t bytes)
{
	return inactive_after_init(&acct_route[kind]) ? ACCT_PASS : acct_charge(kind, bytes);
}

COLD_FN int acct_charge_wr_other(enum ledger_kind kind, uint32_t send_wr, uint32_t recv_wr)
{
	return inactive_after_init(&acct_route_wr[kind]) ? ACCT_PASS : acct_charge_wr(kind, send_wr, recv_wr);
}

COLD_FN int pre_create_failed(int ret)
{
	errno = -ret;
	return -1;
}

/* The real create failed: give its charge back. */
COLD_FN void create_failed(enum ledger_kind kind, uint64_t bytes)
{
	int saved = errno;

	acct_release(kind, bytes);
	acct_create_failed(kind, bytes, saved);
	errno = saved;
}

/*
 * No slot among the object's probes and no memory for an overflow record: without a record its destroy
 * could not give the charge back, so it goes back now (the object is then not counted: fail open).
 */
COLD_FN void untracked(enum ledger_kind kind, uint64_t bytes)
{
	int saved = errno;

	acct_release(kind, bytes);
	plog(1, "no memory to track a %s: not counted", ledger_kind_names[kind]);
	errno = saved;
}

/* The real destroy failed: the object may still be there, its record goes back with its charge. */
COLD_FN void destroy_failed(const void *obj, const struct orec *r)
{
	int saved = errno;

	if (!obj_insert(obj, r->ce, r->bytes, r->kind))
		acct_release(r->kind, r->bytes);
	errno = saved;
}

COLD_FN void destroy_done_other(unsigned int j)
{
	enum ledger_kind kind = obj_tab[j].r.kind;
	uint64_t bytes = obj_tab[j].r.bytes;

	obj_free_slot(j);
	if ((unsigned int)kind < LEDGER_NKINDS)
		acct_release(kind, bytes);
}
