/*
 * main.c - collagec's entry point: --help/--version and the dispatch over
 * the subcommand table (cli.c).
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

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
