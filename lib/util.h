/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small shared helpers: number and size parsing, error messages, program name. */
#ifndef RDMACTL_UTIL_H
#define RDMACTL_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Code layout of the interceptor's per-verb path: hot functions are grouped together by the linker
 * (.text.hot), cold ones (refusals, gc, logging) moved out of the way, so that a verb call touches few code
 * pages. Under an emulated CPU whose TLB the verb itself flushes, every page touched is a refill.
 */
#define HOT_FN __attribute__((hot))
#define COLD_FN __attribute__((cold, noinline))
/* Fewer calls on the hot path: under TCG each return after a TLB flush is a jump-cache miss. */
#define ALWAYS_INLINE __attribute__((always_inline))
/*
 * Tighter for the hottest verbs (QP create/destroy, MR reg/dereg): their wrappers and everything they call
 * on success, split in a create side and a destroy side of one code page each, so that each half of a verb
 * call (before the real verb, after it) refills one code page. The linker sorts .text.sorted.* sections by
 * name: the FIRST function of each side opens it on a page boundary.
 */
#define HOT_CREATE_FIRST __attribute__((hot, section(".text.sorted.rdmactl_1a"), aligned(4096)))
#define HOT_CREATE __attribute__((hot, section(".text.sorted.rdmactl_1b")))
#define HOT_DESTROY_FIRST __attribute__((hot, section(".text.sorted.rdmactl_2a"), aligned(4096)))
#define HOT_DESTROY __attribute__((hot, section(".text.sorted.rdmactl_2b")))
/* The same for data: the small variables every verb call reads share one page (read-only ones included). */
#define HOT_DATA __attribute__((section(".data.rdmactl_hot")))
#define HOT_CONST __attribute__((section(".data.rdmactl_hot_const")))

/* "rdmactl" or "rdmactl <sub>": prefix of every message on stderr. */
extern const char *util_prog;

/* Print "<prog>: <message>\n" to stderr. */
void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only when verbose output was asked for. */
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool util_verbose;

/*
 * Parse an unsigned decimal (or 0x hex) integer in [min, max]. Returns 0, -EINVAL for anything that is
 * not a plain number (sign, spaces, trailing junk, empty) or -ERANGE when out of range.
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Size with optional binary suffix K, M, G, T (also KB, KiB...); same errors as parse_u64. */
int parse_size(const char *s, uint64_t max, uint64_t *out);
/* A pid: 1..pid_max. -ESRCH when no such process exists. */
int parse_pid(const char *s, bool must_exist, pid_t *out);
/* Human readable size into buf ("64K", "1.5G"); returns buf. */
const char *fmt_size(uint64_t v, char *buf, size_t len);

/*
 * Match word against names[0..n) (NULL-terminated when n < 0): exact match, else unique prefix.
 * Returns the index, -1 unknown, -2 ambiguous. Used for subcommands and for words inside them.
 */
int match_word(const char *word, const char *const *names, int n);
/* Print the "unknown"/"ambiguous" usage error for a match_word failure (what: "command", "kind"...),
 * naming the candidates; returns 2 (the usage exit code). */
int word_error(const char *what, const char *word, const char *const *names, int n, int ret);

#endif
