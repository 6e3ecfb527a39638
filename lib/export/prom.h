/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Prometheus text exposition format (0.0.4): families, samples, escaping, into a growing buffer. */
#ifndef RDMACTL_PROM_H
#define RDMACTL_PROM_H

/*
 * A writer, not a model: the caller opens a family (HELP and TYPE once) and then writes its samples, all of
 * them before the next family, as the format wants. Values of labels are escaped (\\, \", \n) and made valid
 * UTF-8 (an invalid byte becomes U+FFFD): process names and cgroup paths come from tenants, and one bad
 * byte must not make Prometheus reject the whole scrape. A label whose value is "" is not written: the
 * data model treats both alike, and it keeps optional labels (slurm_job_id...) off the series they do not
 * describe. Names are the caller's constants; prom_name_ok() lets tests check them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum prom_type {
	PROM_GAUGE,
	PROM_COUNTER,
	PROM_UNTYPED,
};

struct prom_buf {
	char *data;
	size_t len, cap;
	bool oom;		/* an append failed: the text is incomplete and must not be served */
};

struct prom_label {
	const char *name;
	const char *value;	/* NULL or "": the label is left out */
};

void prom_buf_free(struct prom_buf *b);
/* Forget the text, keep the memory. */
void prom_buf_reset(struct prom_buf *b);

/* "# HELP name help" (help escaped: \\ and \n) and "# TYPE name type". */
void prom_family(struct prom_buf *b, const char *name, enum prom_type type, const char *help);
/* name{labels} value: an integer as such; doubles as %.17g, NaN and +Inf/-Inf as the format spells them. */
void prom_sample_u64(struct prom_buf *b, const char *name, const struct prom_label *l, size_t n, uint64_t v);
void prom_sample_f64(struct prom_buf *b, const char *name, const struct prom_label *l, size_t n, double v);

/* Append value escaped as a label value (without the quotes); exposed for tests. */
void prom_escape_value(struct prom_buf *b, const char *value);

/* A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, label true, a label name ([a-zA-Z_][a-zA-Z0-9_]*, no "__"). */
bool prom_name_ok(const char *name, bool label);

#endif
