/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The clocks rdmactl reads: monotonic seconds for intervals, nanoseconds of both clocks for stamps. */
#ifndef RDMACTL_CLOCK_H
#define RDMACTL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds (intervals, deadlines). */
static inline double clock_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME in nanoseconds (time stamps users read). */
static inline uint64_t clock_rt_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

#endif
