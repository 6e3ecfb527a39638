// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The charge/track protocol's out-of-line steps: after a create, after a destroy, and the failure paths. */
#include "wrap.h"

COLD_FN int pre_create_failed(int ret)
{
	errno = -ret;
	return -1;
}

static COLD_FN void create_failed(const struct track *t)
{
	int saved = errno;

	acct_release(t->kind, t->bytes);
	errno = saved;
}

/*
 * No slot among the object's probes and no memory for an overflow record: without a record its destroy
 * could not give the charge back, so it goes back now (the object is then not counted: fail open).
 */
static COLD_FN void untracked(const struct track *t)
{
	int saved = errno;

	acct_release(t->kind, t->bytes);
	plog(1, "no memory to track a %s: not counted", ledger_kind_names[t->kind]);
	errno = saved;
}

/* After the real create: keep the charge with the object, or give it back. errno is preserved. */
HOT_CREATE void post_create(const struct track *t, const void *obj, struct ibv_context *ctx)
{
	struct orec r;

	if (__builtin_expect(!obj, 0)) {
		create_failed(t);
		return;
	}
	r.ctx = ctx;
	r.bytes = t->bytes;
	r.kind = t->kind;
	if (__builtin_expect(!obj_insert(obj, &r), 0))
		untracked(t);
}

/* After the real destroy of obj, whose record r obj_take() took: release, or put the record back. */
HOT_DESTROY void post_destroy(const void *obj, const struct orec *r, int ret)
{
	/* neither touches errno (the ledger makes no system calls, plog() preserves it) */
	if (__builtin_expect(!ret, 1))
		acct_release(r->kind, r->bytes);
	else if (!obj_insert(obj, r))
		acct_release(r->kind, r->bytes);
}
