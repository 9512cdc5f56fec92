/*
 * main.c - collagec's entry point: --help/--version and the dispatch over
 * the subcommand table (cli.c).
 */
#include "cli.h"
#include "../core/cost/cost.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: collagec COMMAND [ARGS]\n\ncommands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(f, "  %-12s %s\n", c->name, c->summary);
	fprintf(f, "\n'collagec COMMAND --help' shows a command's options; man collagec has "
		"the rest.\n");
}

int main(int argc, char **argv)
{
	mem_init();
	/*
	 * a measuring worker of a compile (core/cost/measure.c): not for
	 * users. It ends as the forked workers did, without exit handlers
	 * (the libraries a bench model loaded, PoCL's threads)
	 */
	if (argc == 3 && !strcmp(argv[1], "--measure-worker")) {
		int rc = cost_measure_worker(argv[2]);

		fflush(NULL);
		_exit(rc);
	}
	/*
	 * the kernel's link to this very file: a collagec replaced on disk
	 * during a compile (make install) does not answer its workers
	 */
	cost_set_worker_exe("/proc/self/exe");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("collagec %s\n", COLLAGEC_VERSION);
		return 0;
	}
	temp_cleanup_on_signal();
	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, argv[1]))
			return c->run(argc - 1, argv + 1);
	cli_error(2, "unknown command '%s'", argv[1]);
	usage(stderr);
	return 2;
}
