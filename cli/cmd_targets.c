/*
 * cmd_targets.c - collagec targets: the registry, hooks, pattern rules and
 * availability.
 */
#include "cli.h"

#include <getopt.h>
#include <string.h>

#include "../backends/backends.h"
#include "../core/collage/collage.h"

enum { OPT_PATTERNS = 256 };

static const char *rule_kind(const struct target_kind *k)
{
	if (k->patterns)
		return k->supports ? "own (op predicate + patterns)" : "patterns";
	return k->supports ? "own (op predicate)" : "default (every op)";
}

int cmd_targets(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "patterns", required_argument, NULL, OPT_PATTERNS },
		{ NULL, 0, NULL, 0 },
	};
	struct pattern_set set = { { 0 } };
	struct collagec_ctx ctx;
	VEC(const char *) files = { 0 };
	int c, rc = 0;

	if (cli_wants_help(argc, argv, "targets"))
		return 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != OPT_PATTERNS) {
			vec_free(&files);
			return cli_error(2, "targets: unknown or incomplete option '%s' (see "
					 "'collagec targets --help')", argv[optind - 1]);
		}
		vec_push(&files, optarg);
	}
	if (optind != argc) {
		vec_free(&files);
		return cli_error(2, "targets: unexpected argument '%s'", argv[optind]);
	}
	ctx_init(&ctx);
	if (pattern_load(&ctx, backend_registry, backend_registry_count, files.v, files.n,
			 &set) < 0) {
		rc = ctx.status;
		goto out;
	}
	for (int i = 0; i < backend_registry_count; i++) {
		const struct target_kind *k = backend_registry[i];
		const char *why = k->unavailable ? k->unavailable() : NULL;
		const char *idle = !why && k->cannot_run ? k->cannot_run() : NULL;
		int n_rules = 0;

		printf("%s (%s): %s\n", k->name, k->device, k->description);
		if (idle)
			printf("  status:   compiles, cannot run here: %s (costs are estimated; "
			       "not in the default target list)\n", idle);
		else
			printf("  status:   %s%s\n", why ? "unavailable: " : "available",
			       why ? why : "");
		printf("  hooks:    partition_rule=%s relay_to_tir=%s plan_parallel=%s "
		       "tir_to_runtime=%s relay_to_runtime=%s\n", rule_kind(k),
		       k->relay_to_tir ? "own" : "default (op lowering)",
		       k->plan_parallel ? "own" : "none",
		       k->tir_to_runtime ? "own" : "none",
		       k->relay_to_runtime ? "own" : "none");
		for (int r = 0; r < set.rules.n; r++)
			n_rules += !strcmp(set.rules.v[r].target, k->name);
		if (!n_rules)
			printf("  patterns: none\n");
		else
			printf("  patterns: %d rule%s%s%s\n", n_rules, n_rules == 1 ? "" : "s",
			       k->patterns ? ", built in: patterns/" : "",
			       k->patterns ? k->patterns : "");
		for (int r = 0; r < set.rules.n; r++) {
			const struct pattern_rule *pr = &set.rules.v[r];

			if (!strcmp(pr->target, k->name))
				printf("  rule:     %s.%s = %s  (%s:%d)\n", pr->target, pr->name,
				       pr->text, pr->file, pr->line);
		}
		printf("  search:   %s\n", rule_str(&ctx.arena, rule_default(&ctx.arena, k, &set,
							COLLAGE_DEFAULT_MAX_DEPTH)));
		for (const struct target_option *o = k->options; o && o->name; o++)
			if (o->def_text)
				printf("  option:   -%s=WORD  %s (default %s)\n", o->name, o->help,
				       o->def_text);
			else
				printf("  option:   -%s=N  %s (%lld..%lld, default %lld)\n", o->name,
				       o->help, (long long)o->min, (long long)o->max,
				       (long long)o->def);
		if (k->devices && !why) {
			const char *d = k->devices();

			while (d && *d) {
				const char *nl = strchr(d, '\n');
				int len = nl ? (int)(nl - d) : (int)strlen(d);

				printf("  device:   %.*s\n", len, d);
				d += len + (nl != NULL);
			}
		}
	}
out:
	pattern_set_release(&set);
	ctx_release(&ctx);
	vec_free(&files);
	return rc;
}
