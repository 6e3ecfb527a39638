/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What every subcommand shares: global options, the common argp child, exit codes. */
#ifndef RDMACTL_H
#define RDMACTL_H

#include <argp.h>
#include <stdbool.h>

#include "core/out.h"
#include "core/util.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* The global options live where they are used: -j and -p in the output layer (out_is_json(),
 * out_is_pretty()), -v in util (util_verbose). */

/*
 * -j/-p/-v, accepted before the subcommand and after it, and --help, --usage, --version: add as a child to
 * each subcommand's argp, and parse with ARGP_NO_HELP (argp's own --help would fill the examples):
 *   static const struct argp_child children[] = { { &common_argp, 0, NULL, 0 }, { 0 } };
 *   argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL);
 * The doc's text after '\v' is printed as written: "Examples:\n" and one command a line, indented by two.
 */
extern const struct argp common_argp;

/* Each subcommand: argv[0] is "rdmactl <sub>"; returns an exit code. */
int cmd_cdi(int argc, char **argv);
int cmd_dev(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
int cmd_oci_hook(int argc, char **argv);
int cmd_pingpong(int argc, char **argv);
int cmd_quota(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* run.c: the interceptor's path (next to the binary, else ../lib/rdmactl/; $RDMACTL_PRELOAD wins), or -errno. */
int run_find_preload(char *out, size_t len);


#endif
