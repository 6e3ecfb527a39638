// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The reader's side of the monitor's event ring. */
#include "monitor/monring.h"

#include <string.h>

int mon_ring_drain(const struct mon_slot *slots, __u64 *cons, int (*cb)(const struct mon_event *e, void *arg),
		   void *arg)
{
	__u64 c = __atomic_load_n(cons, __ATOMIC_RELAXED);
	int n = 0, ret;

	for (;;) {
		const struct mon_slot *s = &slots[c & (MON_SLOTS - 1)];
		struct mon_event e;

		if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != c + 1)
			break;
		memcpy(&e, &s->e, sizeof(e));
		c++;
		/* after the copy: from here the producer may reuse the slot */
		__atomic_store_n(cons, c, __ATOMIC_RELEASE);
		n++;
		if (cb && (ret = cb(&e, arg)) < 0)
			return ret;
	}
	return n;
}
