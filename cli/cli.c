/*
 * cli.c - the subcommand table and the helpers every cmd_*.c uses for
 * errors, usage and numbers. Apart from main.c so that the fuzz harnesses
 * (tests/fuzz/) can link the subcommands without main().
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const struct command commands[] = {
	{ "compile", cmd_compile, "compile an ONNX model into a shared object + metadata",
	  "collagec compile MODEL.onnx -o OUT.so|OUT.a [--target LIST]\n"
	  "                 [--search collage|greedy|none] [--max-depth N]\n"
	  "                 [--estimator measure|analytic|mock] [--cache PATH|--no-cache]\n"
	  "                 [--no-plan-check] [--search-budget SECONDS] [--threads N] [-j N]\n"
	  "                 [--progress]\n"
	  "                 [--patterns FILE]... [--shape NAME=DIMS]... [--tune-shape NAME=VALUE]...\n"
	  "                 [--elements NAME=N|none]...\n"
	  "                 [--dump-ir DIR] [--depfile FILE] [--stats FILE|-] [--prefix NAME]\n"
	  "                 [--json FILE] [--weights FILE] [--cc CC] [--opt FLAGS]\n"
	  "                 [--cpu native|x86-64-v2|x86-64-v3|x86-64-v4|generic]\n"
	  "                 [--keep-temps] [-q] [-v]" },
	{ "run", cmd_run, "run a compiled model on inputs from files or random data",
	  "collagec run OUT.so [--input [NAME=]FILE]... [--shape NAME=DIMS]... [--seed N]\n"
	  "                 [--output-dir DIR] [--npy] [--check DIR] [--rtol X] [--atol Y]\n"
	  "                 [--threads N] [--kernels]" },
	{ "bench", cmd_bench, "measure a compiled model's latency",
	  "collagec bench OUT.so [--runs N] [--warmup N] [--threads N] [--shape NAME=DIMS]...\n"
	  "                 [--seed N] [--json] [--profile]\n"
	  "                 [--baseline FILE.json --max-regression PCT]" },
	{ "conformance", cmd_conformance, "compile and check ONNX backend test folders",
	  "collagec conformance DIR... [--target LIST] [--patterns FILE]... [--rtol X]\n"
	  "                 [--atol Y] [-j N] [--timeout SECONDS] [--opt FLAGS] [--cpu LEVEL]\n"
	  "                 [--expect FILE] [--json] [-q]" },
	{ "targets", cmd_targets, "list the target kinds, hooks, pattern rules and availability",
	  "collagec targets [--patterns FILE]..." },
	{ "explain", cmd_explain, "show a compiled model's partitions, costs and search",
	  "collagec explain OUT.so [--json] [--dot FILE] [--html FILE [--profile FILE]\n"
	  "                 [--source DIR]] [--model MODEL.onnx]" },
	{ "cache", cmd_cache, "show, export, import or clear the cost cache",
	  "collagec cache stats [--cache PATH]\n"
	  "       collagec cache export [-o FILE] [--cache PATH]\n"
	  "       collagec cache import FILE|- [--cache PATH]\n"
	  "       collagec cache clear [--older-than DAYS] [--version V] [--cache PATH]" },
	{ NULL, NULL, NULL, NULL },
};

int cli_error(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("collagec: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

void cli_usage(const char *cmd, FILE *f)
{
	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, cmd))
			fprintf(f, "usage: %s\n", c->usage);
}

int cli_number(const char *cmd, const char *opt, const char *arg, double min, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= min))
		return cli_error(2, "%s: %s takes a number >= %g, not '%s'", cmd, opt, min, arg);
	*out = v;
	return 0;
}

bool cli_wants_help(int argc, char **argv, const char *cmd)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cli_usage(cmd, stdout);
			return true;
		}
	}
	return false;
}
