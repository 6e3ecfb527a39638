// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rdmactl entry point: global options, then dispatch to a subcommand by (unique prefix of) its name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/out.h"
#include "rdmactl.h"
#include "core/util.h"


static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} cmds[] = {
	{ "cdi", cmd_cdi, "CDI specs: RDMA devices and budget devices for containers" },
	{ "dev", cmd_dev, "RDMA devices (maxima, ports, GIDs) and container policy" },
	{ "doctor", cmd_doctor, "what this node can enforce, and why not (BPF LSM, rdma cgroup)" },
	{ "export", cmd_export, "serve RDMA metrics to Prometheus (HTTP or textfile)" },
	{ "monitor", cmd_monitor, "stream resource create/destroy/deny events; audit bypass" },
	{ "oci-hook", cmd_oci_hook, "OCI runtime hook: rdmactl.io/ annotations as container limits" },
	{ "pingpong", cmd_pingpong, "RoCE connectivity check, ibv_rc_pingpong compatible" },
	{ "quota", cmd_quota, "set, unset and show RDMA resource quotas" },
	{ "run", cmd_run, "run a command as a job under RDMA resource limits" },
	{ "top", cmd_top, "per-process view of RDMA resources and quota use" },
};

/* argp's own lines quote `like this' (glibc's), the rest of rdmactl and getopt 'like this': its error stream
 * writes ` as ' on stderr, so that one message has one style ("Try 'rdmactl quota --help' ..."). */
static ssize_t quote_write(void *cookie, const char *buf, size_t len)
{
	size_t i;

	(void)cookie;
	for (i = 0; i < len; i++)
		if (putc(buf[i] == '`' ? '\'' : buf[i], stderr) == EOF)
			return i ? (ssize_t)i : -1;
	return (ssize_t)len;
}

static FILE *argp_err_stream(void)
{
	static FILE *f;

	if (!f) {
		f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = quote_write });
		if (f)
			setvbuf(f, NULL, _IONBF, 0);
	}
	return f ? f : stderr;
}

/*
 * --help is argp's help without the text after '\v', then that text as it is written: argp would fill it to
 * its right margin (79 columns, or ARGP_HELP_FMT's rmargin), breaking examples in the middle of a command,
 * which then cannot be pasted. So the text after '\v' is the examples, one command a line, and prose goes
 * before the '\v', where argp fills it.
 */
#define HELP_ARGP (ARGP_HELP_STD_HELP & ~(ARGP_HELP_POST_DOC | ARGP_HELP_EXIT_OK))

static void help_post(const struct argp *argp, FILE *f)
{
	char *doc = argp->doc ? strchr(argp->doc, '\v') : NULL;
	char *text = doc ? doc + 1 : NULL;

	if (argp->help_filter)
		text = argp->help_filter(ARGP_KEY_HELP_POST_DOC, text, NULL);
	if (text && *text)
		fprintf(f, "\n%s%s", text, text[strlen(text) - 1] == '\n' ? "" : "\n");
	/* as argp does: a filter's own text is the caller's to free */
	if (text && (!doc || text != doc + 1))
		free(text);
}

enum { OPT_USAGE = 0x100 };

static error_t common_parse(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case ARGP_KEY_INIT:
		state->err_stream = argp_err_stream();
		return ARGP_ERR_UNKNOWN;
	case 'j':
		out_init(NULL, true, out_is_pretty());
		break;
	case 'p':
		out_init(NULL, out_is_json(), true);
		break;
	case 'v':
		util_verbose = true;
		break;
	case '?':
		argp_state_help(state, state->out_stream, HELP_ARGP);
		help_post(state->root_argp, state->out_stream);
		exit(EXIT_OK);
	case OPT_USAGE:
		argp_state_help(state, state->out_stream, ARGP_HELP_USAGE | ARGP_HELP_EXIT_OK);
		break;
	case 'V':
		fprintf(state->out_stream, "%s\n", argp_program_version);
		exit(EXIT_OK);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* --help, --usage and --version are ours, not argp's (every argp_parse has ARGP_NO_HELP): see help_post(). */
static const struct argp_option common_options[] = {
	{ NULL, 0, NULL, 0, "Global options:", -1 },
	{ "help", '?', NULL, 0, "Give this help list", -1 },
	{ "json", 'j', NULL, 0, "Output JSON", -1 },
	{ "pretty", 'p', NULL, 0, "Pretty-print JSON output", -1 },
	{ "usage", OPT_USAGE, NULL, 0, "Give a short usage message", -1 },
	{ "verbose", 'v', NULL, 0, "Print more detail", -1 },
	{ "version", 'V', NULL, 0, "Print program version", -1 },
	{ 0 },
};

const struct argp common_argp = { common_options, common_parse, NULL, NULL, NULL, NULL, NULL };

const char *argp_program_version = "rdmactl " RDMACTL_VERSION;

static int sub_index = -1;

static error_t main_parse(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case ARGP_KEY_ARG:
		/* The first word is the subcommand: stop here and leave the rest to it. */
		sub_index = state->next - 1;
		state->next = state->argc;
		return 0;
	case ARGP_KEY_END:
		if (sub_index < 0)
			argp_error(state, "missing COMMAND");
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
}

static char *main_help(int key, const char *text, void *input)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	size_t i;

	(void)input;
	if (key != ARGP_KEY_HELP_POST_DOC)
		return (char *)text;
	f = open_memstream(&buf, &len);
	if (!f)
		return (char *)text;
	fprintf(f, "Commands:\n");
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\nCommands may be abbreviated to a unique prefix ('rdmactl mon').\n"
		   "'rdmactl COMMAND --help' describes each command.\n"
		   "Exit status: 0 ok, 1 failure, 2 usage error.\n\n%s",
		text ? text : "");
	fclose(f);
	return buf;
}

static const struct argp_child main_children[] = {
	{ &common_argp, 0, NULL, 0 },
	{ 0 },
};

static const struct argp main_argp = {
	NULL, main_parse, "COMMAND [ARGS...]",
	"rdmactl -- quotas, per-process views, events and connectivity checks for RDMA resources.\v"
	"Examples:\n"
	"  rdmactl top -b -n 1 -j\n"
	"  rdmactl quota set qp 10 --pid 1234\n"
	"  rdmactl run --max-qp 5 -- ./app\n",
	main_children, main_help, NULL,
};

int main(int argc, char **argv)
{
	static char prog[64];
	const char *names[ARRAY_SIZE(cmds)];
	size_t i;
	int idx;

	argp_err_exit_status = EXIT_USAGE;
	/* messages name the program, not the path it was run by ("build/rdmactl: unrecognized option") */
	argv[0] = (char *)"rdmactl";
	argp_parse(&main_argp, argc, argv, ARGP_IN_ORDER | ARGP_NO_HELP, NULL, NULL);

	/* iproute2's words: "rdmactl help" and "rdmactl help COMMAND" are --help */
	if (!strcmp(argv[sub_index], "help")) {
		if (sub_index + 1 >= argc) {
			argp_help(&main_argp, stdout, HELP_ARGP, (char *)"rdmactl");
			help_post(&main_argp, stdout);
			return EXIT_OK;
		}
		argv[sub_index] = argv[sub_index + 1];
		argv[sub_index + 1] = (char *)"--help";
	}

	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		names[i] = cmds[i].name;
	idx = match_word(argv[sub_index], names, ARRAY_SIZE(cmds));
	if (idx < 0)
		return word_error("command", argv[sub_index], names, ARRAY_SIZE(cmds), idx);

	snprintf(prog, sizeof(prog), "rdmactl %s", cmds[idx].name);
	util_prog = prog;
	argv[sub_index] = prog;
	/* "rdmactl quota help" (not run's: its words are CMD's) */
	if (sub_index + 1 < argc && !strcmp(argv[sub_index + 1], "help") && cmds[idx].fn != cmd_run)
		argv[sub_index + 1] = (char *)"--help";
	return cmds[idx].fn(argc - sub_index, argv + sub_index);
}
