/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Between lib/kq/kq.c (the pinned maps) and lib/kq/kqload.c (the programs: load, attach, populate). */
#ifndef RDMACTL_KQ_INTERNAL_H
#define RDMACTL_KQ_INTERNAL_H

#include <stddef.h>

#include "kq/kq.h"

#define PIN_ROOT "/sys/fs/bpf/rdmactl"

enum { M_LIMITS, M_USAGE, M_OBJS, M_STATE, M_EVENTS, M_GONE, M_NR };
extern const char *const kq_map_names[M_NR];
extern const size_t kq_map_vsize[M_NR];

struct kq {
	int fd[M_NR];
	struct kq_state *st; /* kq_state, mapped: rdmactl's fields are stored, the programs' counters read */
	size_t st_len;
};

/* The error kq_error() returns, formatted; returns err. */
int kq_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A pin directory rdmactl trusts (root's, 0700, on bpffs), or an error that says what to do. */
int kq_verify_dir(const char *path);
void kq_pin_path(char *buf, size_t len, const char *name);
/* kqload.c: load and pin programs and maps (the pin root locked, nothing pinned). */
int kq_load_and_pin(void);
/* kqload.c: the programs attached while a limit exists (the population at the first), detached after the last. */
int kq_count_limits(struct kq *q);

#endif
