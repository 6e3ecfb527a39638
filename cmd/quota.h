/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* rdmactl quota: between the verbs (quota.c) and show (quota_show.c). */
#ifndef RDMACTL_CMD_QUOTA_H
#define RDMACTL_CMD_QUOTA_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger/ledger.h"

#define MAX_ARGS 8

/* The command line of one quota invocation. */
struct quota_opts {
	const char *ledger;
	unsigned int procs; /* init --procs: process slots of the new ledger, 0 the default */
	bool create;
	bool kernel;
	bool hook; /* set_one called by the OCI hook (quota_cgroup_apply): it reports a failure itself */
	const char *dev;
	int nscopes;
	const char *scope_opt; /* the first scope option seen, for the conflict message */
	struct ledger_scope scope;
	char cgdir[PATH_MAX]; /* --cgroup: the directory in the cgroup2 mount */
	char *args[MAX_ARGS];
	int nargs;
};
extern struct quota_opts qopt;

/* The ledger opened for a verb, or the error said (exit code returned by quota_open_error()). */
int quota_open_ledger(unsigned int flags, struct ledger **l);
int quota_open_error(int err, unsigned int flags);
bool quota_ledger_missing(void);
const char *quota_ledger_file(void);
void quota_take_over(struct ledger *l);
const char *quota_scope_desc(const struct ledger_scope *s, char *buf, size_t len);
const char *quota_fmt_value(enum ledger_kind k, uint64_t v, char *buf, size_t len);
/*
 * Set (or, set false, unset) every kind of limit[] that is not LEDGER_UNLIMITED on the cgroup dir, as
 * 'rdmactl quota set KIND N --cgroup DIR --kernel' does (wr without --kernel), in this process: the OCI
 * hook's way. All or none when setting: a failure unsets what it had set, the failed kind included. Errors
 * are printed; returns EXIT_OK or EXIT_FAIL.
 */
int quota_cgroup_apply(const char *dir, const uint64_t limit[LEDGER_NKINDS], bool set);
/* quota_show.c */
int quota_show(void);

#endif
