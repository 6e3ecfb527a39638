/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The node's container policy (/etc/rdmactl/containers.conf): named budgets, a default budget every container
 * gets, and ceilings no container may ask above. One line a directive, '#' to the end of a line a comment:
 *
 *   default qp=3 mr_bytes=8G        # what a container that asks nothing gets
 *   ceiling qp=64 mr_bytes=64G      # what no container may ask above
 *   budget small qp=2 cq=4          # a profile: rdmactl.io/budget=small, CDI device rdmactl.io/budget=small
 *
 * Limits are KIND=VALUE words (KIND a ledger kind, mr_bytes or mr-bytes; VALUE a count, a size for mr_bytes,
 * or 'unlimited'), separated by blanks or commas. The same lists come from hook arguments (--limit).
 */
#ifndef RDMACTL_POLICY_H
#define RDMACTL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger/ledger.h"

#define POLICY_PATH "/etc/rdmactl/containers.conf"
#define POLICY_ENV "RDMACTL_CONTAINERS_CONF" /* another file, for tests and staging */
/* Why a policy path must be absolute: hooks get it as an argument and run from the bundle directory. */
#define POLICY_ABS_WHY "an absolute path (runtimes run hooks from the container's bundle directory)"
#define POLICY_MAX_INPUT (64 << 10)          /* bytes of policy read */
#define POLICY_MAX_BUDGETS 64
#define POLICY_NAME_MAX 32 /* a budget's name, NUL included: [A-Za-z][A-Za-z0-9_.-]*, ending alphanumeric */

/* Limits per kind; a kind is given when its bit in set is on (v[k] may then be LEDGER_UNLIMITED). */
struct policy_limits {
	uint64_t v[LEDGER_NKINDS];
	uint32_t set;
};

struct policy_budget {
	char name[POLICY_NAME_MAX];
	struct policy_limits lim;
	unsigned int line; /* in the file, for messages */
};

struct policy {
	bool has_default;
	struct policy_limits dflt;
	struct policy_limits ceiling; /* kinds not set: no ceiling */
	unsigned int nbudgets;
	struct policy_budget budget[POLICY_MAX_BUDGETS];
	unsigned int default_line, ceiling_line; /* in the file, for messages */
};

static inline bool policy_has(const struct policy_limits *l, int k)
{
	return l->set & (1u << k);
}

/* A budget name a CDI device name can be too. */
bool policy_name_ok(const char *name);

/* One kind's name (qp, mr_bytes, mr-bytes): its index, or -1. */
int policy_kind(const char *name, size_t len);

/*
 * "qp=2,mr_bytes=1G" (blanks or commas between words) into out (cleared first). A kind twice, an unknown
 * kind, a bad value or an empty list is -EINVAL with a message in err.
 */
int policy_limits_parse(const char *s, struct policy_limits *out, char *err, size_t errlen);

/* Per kind, the smaller of the kinds given in a and b into a (a kind given in one only: that one). */
void policy_limits_min(struct policy_limits *a, const struct policy_limits *b);

/* "qp=2,mr_bytes=1073741824" (the kinds given, in table order; "" when none). */
void policy_limits_format(const struct policy_limits *l, char *buf, size_t len);

/*
 * The text of a policy file. Errors (-EINVAL, err: "line N: ..."): an unknown directive, a bad limit, a
 * second default or ceiling, a budget named twice or with a bad name, more than POLICY_MAX_BUDGETS, and a
 * default or budget above the ceiling.
 */
int policy_parse(const char *buf, size_t len, struct policy *p, char *err, size_t errlen);

/* The file path (NULL: $RDMACTL_CONTAINERS_CONF, else POLICY_PATH): -ENOENT when it does not exist, -EINVAL
 * when it is not absolute. */
int policy_load(const char *path, struct policy *p, char *err, size_t errlen);
const char *policy_path(const char *path);

/* The budget of that name, or NULL. */
const struct policy_budget *policy_budget(const struct policy *p, const char *name);

/* The first kind where l is above the ceiling (an unlimited value is above any ceiling), or -1. */
int policy_above_ceiling(const struct policy *p, const struct policy_limits *l);

/*
 * What a container gets: per kind what it asked, else the default, else the ceiling, else unlimited
 * (LEDGER_UNLIMITED). Returns true when any kind is limited.
 */
bool policy_resolve(const struct policy *p, const struct policy_limits *asked, uint64_t out[LEDGER_NKINDS]);

#endif
