// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of lib/monring: the reader of the monitor's event ring. The producer here is a C copy of the
 * protocol bpf/restrack.bpf.c follows (reserve by compare-and-swap, copy, publish seq + 1); the program
 * itself is exercised in the lab (tests/lab/monitor.bats: storms, losses, order of creates and destroys).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "monitor/monring.h"
#include "unit.h"

static struct mon_slot slots[MON_SLOTS];
static struct mon_ring_pos pos;

static void reset(void)
{
	memset(slots, 0, sizeof(slots));
	memset(&pos, 0, sizeof(pos));
}

/* Publish event number seq (its id) by hand, as the program does once the copy is complete. */
static void publish(__u64 seq)
{
	struct mon_slot *s = &slots[seq & (MON_SLOTS - 1)];

	s->e.id = (__u32)seq;
	s->e.tgid = (__u32)(seq >> 32);
	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELEASE);
}

struct got {
	__u64 ids[64];
	int n;
	int fail_at; /* return -EIO for the event with this index (-1: never) */
};

static int collect(const struct mon_event *e, void *arg)
{
	struct got *g = arg;

	if (g->n < 64)
		g->ids[g->n] = e->id | (__u64)e->tgid << 32;
	return g->n++ == g->fail_at ? -EIO : 0;
}

static void test_empty(void)
{
	struct got g = { .fail_at = -1 };

	reset();
	CHECK(mon_ring_drain(slots, &pos.cons, collect, &g) == 0, "events from an empty ring");
	CHECK(pos.cons == 0 && g.n == 0, "cons %llu n %d", (unsigned long long)pos.cons, g.n);
}

/* A fresh ring with events 0, 1 and 2 published, drained once into g. */
static int drain_three(struct got *g)
{
	reset();
	publish(0);
	publish(1);
	publish(2);
	return mon_ring_drain(slots, &pos.cons, collect, g);
}

static void test_in_order(void)
{
	struct got g = { .fail_at = -1 };
	int n = drain_three(&g);

	CHECK(n == 3 && pos.cons == 3, "n %d cons %llu", n, (unsigned long long)pos.cons);
	CHECK(g.ids[0] == 0 && g.ids[1] == 1 && g.ids[2] == 2, "order %llu %llu %llu", (unsigned long long)g.ids[0],
	      (unsigned long long)g.ids[1], (unsigned long long)g.ids[2]);
}

/* A slot still being filled holds the reader back; the later one is not skipped, only delayed. */
static void test_unfinished_slot_waits(void)
{
	struct got g = { .fail_at = -1 };
	int n;

	reset();
	publish(0);
	publish(2);
	n = mon_ring_drain(slots, &pos.cons, collect, &g);
	CHECK(n == 1 && pos.cons == 1, "n %d cons %llu", n, (unsigned long long)pos.cons);
	publish(1);
	n = mon_ring_drain(slots, &pos.cons, collect, &g);
	CHECK(n == 2 && pos.cons == 3 && g.ids[1] == 1 && g.ids[2] == 2, "n %d cons %llu", n,
	      (unsigned long long)pos.cons);
}

/* After a lap the slot still holds the previous lap's event: not the one expected, so not delivered. */
static void test_old_lap_not_delivered(void)
{
	struct got g = { .fail_at = -1 };
	__u64 base = 3 * (__u64)MON_SLOTS + 5;
	int n;

	reset();
	pos.cons = base;
	publish(base - MON_SLOTS); /* same slot, one lap earlier */
	n = mon_ring_drain(slots, &pos.cons, collect, &g);
	CHECK(n == 0 && pos.cons == base, "n %d cons %llu", n, (unsigned long long)pos.cons);
	publish(base);
	publish(base + 1);
	n = mon_ring_drain(slots, &pos.cons, collect, &g);
	CHECK(n == 2 && g.ids[0] == base && g.ids[1] == base + 1, "n %d first %llu", n,
	      (unsigned long long)g.ids[0]);
}

/* Across the end of the array: slot MON_SLOTS - 1 is followed by slot 0. */
static void test_wraps(void)
{
	struct got g = { .fail_at = -1 };
	__u64 base = MON_SLOTS - 2;
	int n, i;

	reset();
	pos.cons = base;
	for (i = 0; i < 4; i++)
		publish(base + i);
	n = mon_ring_drain(slots, &pos.cons, collect, &g);
	CHECK(n == 4 && pos.cons == base + 4 && g.ids[3] == base + 3, "n %d cons %llu", n,
	      (unsigned long long)pos.cons);
}

/* The callback's error stops the drain; the event it failed on counts as read. */
static void test_callback_error(void)
{
	struct got g = { .fail_at = 1 };
	int n = drain_three(&g);

	CHECK(n == -EIO && pos.cons == 2 && g.n == 2, "n %d cons %llu got %d", n, (unsigned long long)pos.cons, g.n);
	g.fail_at = -1;
	n = mon_ring_drain(slots, &pos.cons, collect, &g);
	CHECK(n == 1 && g.ids[2] == 2, "n %d", n);
}

/* ---- several producers against one reader ---- */

#define PRODUCERS 3
#define PER_PRODUCER 200000

static __u64 lost[PRODUCERS];

/* The program's ring_put, in C. */
static int put(__u32 producer, __u32 k)
{
	__u64 p = 0, c;
	int i, got = 0;
	struct mon_slot *s;

	for (i = 0; i < 8 && !got; i++) {
		p = __atomic_load_n(&pos.prod, __ATOMIC_RELAXED);
		c = __atomic_load_n(&pos.cons, __ATOMIC_ACQUIRE);
		if (p - c >= MON_SLOTS)
			return -1;
		got = __atomic_compare_exchange_n(&pos.prod, &p, p + 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	if (!got)
		return -1;
	s = &slots[p & (MON_SLOTS - 1)];
	s->e.tgid = producer;
	s->e.id = k;
	__atomic_exchange_n(&s->seq, p + 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void *producer(void *arg)
{
	__u32 id = (__u32)(uintptr_t)arg, k;

	for (k = 0; k < PER_PRODUCER; k++)
		if (put(id, k)) {
			lost[id]++;
			sched_yield(); /* let the reader in: both paths, read and lost, get exercised */
		}
	return NULL;
}

struct check {
	__u64 seen[PRODUCERS];
	long next[PRODUCERS]; /* the id after the last one seen */
	int bad;
};

static int verify(const struct mon_event *e, void *arg)
{
	struct check *c = arg;

	if (e->tgid >= PRODUCERS || (long)e->id < c->next[e->tgid]) {
		c->bad++; /* unknown producer, or one producer's events out of order or twice */
		return 0;
	}
	c->next[e->tgid] = (long)e->id + 1;
	c->seen[e->tgid]++;
	return 0;
}

static void test_producers_and_reader(void)
{
	pthread_t t[PRODUCERS];
	bool joined[PRODUCERS] = { false };
	struct check c;
	__u64 seen = 0, dropped = 0;
	int i, running = 1, n, errors = 0;

	reset();
	memset(&c, 0, sizeof(c));
	memset(lost, 0, sizeof(lost));
	for (i = 0; i < PRODUCERS; i++)
		pthread_create(&t[i], NULL, producer, (void *)(uintptr_t)i);
	while (running) {
		n = mon_ring_drain(slots, &pos.cons, verify, &c);
		if (n < 0)
			errors++;
		if (n == 0) {
			running = 0;
			for (i = 0; i < PRODUCERS; i++) {
				if (!joined[i] && pthread_tryjoin_np(t[i], NULL) == EBUSY)
					running = 1;
				else
					joined[i] = true;
			}
		}
	}
	mon_ring_drain(slots, &pos.cons, verify, &c);
	for (i = 0; i < PRODUCERS; i++) {
		seen += c.seen[i];
		dropped += lost[i];
	}
	CHECK(errors == 0, "%d drains failed", errors);
	CHECK(c.bad == 0, "%d events out of order, twice or unknown", c.bad);
	CHECK(seen + dropped == (__u64)PRODUCERS * PER_PRODUCER, "seen %llu + lost %llu != %d",
	      (unsigned long long)seen, (unsigned long long)dropped, PRODUCERS * PER_PRODUCER);
	CHECK(pos.cons == pos.prod && pos.prod == seen, "cons %llu prod %llu seen %llu", (unsigned long long)pos.cons,
	      (unsigned long long)pos.prod, (unsigned long long)seen);
	printf("# %llu events read, %llu lost to a full ring\n", (unsigned long long)seen, (unsigned long long)dropped);
}

int main(void)
{
	RUN(test_empty);
	RUN(test_in_order);
	RUN(test_unfinished_slot_waits);
	RUN(test_old_lap_not_delivered);
	RUN(test_wraps);
	RUN(test_callback_error);
	RUN(test_producers_and_reader);
	return unit_done();
}
