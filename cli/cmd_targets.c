/*
 * cmd_targets.c - collagec targets: the registry, hooks and availability.
 */
#include "cli.h"

#include "../backends/backends.h"

int cmd_targets(int argc, char **argv)
{
	if (cli_wants_help(argc, argv, "targets"))
		return 0;
	if (argc > 1)
		return cli_error(2, "targets: takes no arguments");
	for (int i = 0; i < backend_registry_count; i++) {
		const struct target_kind *k = backend_registry[i];
		const char *why = k->unavailable ? k->unavailable() : NULL;

		printf("%s (%s): %s\n", k->name, k->device, k->description);
		printf("  status:   %s%s\n", why ? "unavailable: " : "available", why ? why : "");
		printf("  hooks:    partition_rule=%s relay_to_tir=%s tir_to_runtime=%s "
		       "relay_to_runtime=%s\n", k->supports ? "own" : "default (every op)",
		       k->relay_to_tir ? "own" : "default (op lowering)",
		       k->tir_to_runtime ? "own" : "none",
		       k->relay_to_runtime ? "own" : "none");
		printf("  patterns: %s\n", k->supports ? "from its rule" : "none (every op)");
		for (const struct target_option *o = k->options; o && o->name; o++)
			printf("  option:   -%s=N  %s (%lld..%lld, default %lld)\n", o->name, o->help,
			       (long long)o->min, (long long)o->max, (long long)o->def);
	}
	return 0;
}
