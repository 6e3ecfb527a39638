/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the benchmark programs share: clocks and medians. */
#ifndef RDMACTL_BENCH_H
#define RDMACTL_BENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A cheap timestamp that touches no page (the vDSO would): the TSC, scaled by calibrate(). */
static inline uint64_t ticks(void)
{
#ifdef __x86_64__
	return __builtin_ia32_rdtsc();
#else
	return now_ns();
#endif
}

/* Nanoseconds per tick. */
static inline double calibrate(void)
{
	uint64_t t0 = now_ns(), k0 = ticks();

	usleep(200000);
	return (double)(now_ns() - t0) / (double)(ticks() - k0);
}

static inline int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
