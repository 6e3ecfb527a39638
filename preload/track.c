// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The charge/track protocol's out-of-line steps: after a create, after a destroy, and the failure paths. */
#include "wrap.h"

COLD_FN int pre_create_failed(int ret)
{
	errno = -ret;
	return -1;
}

static COLD_FN void create_failed(struct track *t)
{
	int saved = errno;

	acct_release(t->kind, t->bytes);
	obj_free(t->o);
	errno = saved;
}

/* After the real create: keep the charge with the object, or give it back. errno is preserved. */
HOT_CREATE void post_create(struct track *t, const void *obj, struct ibv_context *ctx)
{
	if (!t->counted)
		return;
	if (obj) {
		t->o->key = obj;
		t->o->ctx = ctx;
		t->o->kind = t->kind;
		t->o->bytes = t->bytes;
		obj_insert(t->o);
	} else {
		create_failed(t);
	}
}

/* After the real destroy of obj whose record was taken by obj_take(): release, or put it back. */
HOT_DESTROY void post_destroy(struct obj *o, int ret)
{
	if (!o)
		return;
	/* neither touches errno (the ledger makes no system calls, plog() and obj_free() preserve it) */
	if (ret) {
		obj_insert(o);
	} else {
		acct_release(o->kind, o->bytes);
		obj_free(o);
	}
}
