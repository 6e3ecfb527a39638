/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small shared helpers: number and size parsing, error messages, program name. */
#ifndef RDMACTL_UTIL_H
#define RDMACTL_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* "rdmactl" or "rdmactl <sub>": prefix of every message on stderr. */
extern const char *util_prog;

/* Print "<prog>: <message>\n" to stderr. */
void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only when verbose output was asked for. */
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool util_verbose;

/*
 * Parse an unsigned decimal integer in [min, max]: decimal whatever it starts with ("010" is 10, "0x10" is
 * refused). Returns 0, -EINVAL for anything that is not a plain number (hexadecimal, sign, spaces, trailing
 * junk, empty) or -ERANGE when out of range. Every number rdmactl reads from outside goes through here.
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds as a decimal number in [min, max] (finite; "0.5", "2", "1e-3"; not "0x1p1"); -EINVAL otherwise. */
int parse_seconds(const char *s, double min, double max, double *out);
/* Size with optional binary suffix K, M, G, T (also KB, KiB...); same errors as parse_u64. */
int parse_size(const char *s, uint64_t max, uint64_t *out);
/*
 * Why parse_u64() (size: parse_size()) refused s with err, for a message that names s: "out of range",
 * "numbers are decimal, not hexadecimal", "not a decimal whole number" or "not a size (...)".
 */
const char *parse_why(const char *s, int err, bool size);
/* A pid (decimal): 1..pid_max. -ESRCH when no such process exists. */
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

/* Copy the string src into dst of len bytes (len >= 1), cut to fit, always terminated. */
void copy_str(char *dst, const char *src, size_t len);

#endif
