/*
 * cmd_compile.c - collagec compile.
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/collage/collage.h"

#include "../backends/backends.h"
#include "../core/emit/emit.h"

enum { OPT_SHAPE = 256, OPT_ELEMENTS, OPT_DUMP, OPT_DEPFILE, OPT_STATS, OPT_JSON, OPT_CC, OPT_OPT,
       OPT_KEEP, OPT_SEARCH,
       OPT_TARGET, OPT_PATTERNS, OPT_MAX_DEPTH, OPT_ESTIMATOR, OPT_CACHE, OPT_NO_CACHE,
       OPT_THREADS, OPT_PROGRESS, OPT_NO_PLAN_CHECK, OPT_CPU, OPT_PREFIX, OPT_BUDGET,
       OPT_TUNE_SHAPE, OPT_WEIGHTS };

/* A whole number in [lo, hi] for option name; -1 after a usage error. */
static int int_arg(const char *name, const char *arg, int lo, int hi)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (!*arg || *end || v < lo || v > hi) {
		cli_error(2, "compile: %s takes a whole number from %d to %d, not '%s'", name, lo,
			  hi, arg);
		return -1;
	}
	return (int)v;
}

int cmd_compile(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "search", required_argument, NULL, OPT_SEARCH },
		{ "patterns", required_argument, NULL, OPT_PATTERNS },
		{ "shape", required_argument, NULL, OPT_SHAPE },
		{ "tune-shape", required_argument, NULL, OPT_TUNE_SHAPE },
		{ "elements", required_argument, NULL, OPT_ELEMENTS },
		{ "dump-ir", required_argument, NULL, OPT_DUMP },
		{ "depfile", required_argument, NULL, OPT_DEPFILE },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "weights", required_argument, NULL, OPT_WEIGHTS },
		{ "cc", required_argument, NULL, OPT_CC },
		{ "opt", required_argument, NULL, OPT_OPT },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "keep-temps", no_argument, NULL, OPT_KEEP },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "estimator", required_argument, NULL, OPT_ESTIMATOR },
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "no-cache", no_argument, NULL, OPT_NO_CACHE },
		{ "no-plan-check", no_argument, NULL, OPT_NO_PLAN_CHECK },
		{ "search-budget", required_argument, NULL, OPT_BUDGET },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "jobs", required_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "prefix", required_argument, NULL, OPT_PREFIX },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct compile_options o = { 0 };
	struct compile_stats st = { 0 };
	struct collagec_ctx ctx;
	VEC(const char *) shapes = { 0 };
	VEC(const char *) tune = { 0 };
	VEC(const char *) elements = { 0 };
	VEC(const char *) pats = { 0 };
	int c, rc, verbose = 0;
	bool quiet = false, progress = false;

	if (cli_wants_help(argc, argv, "compile"))
		return 0;
	o.kinds = backend_registry;
	o.n_kinds = backend_registry_count;
	o.targets = NULL;		/* every available kind */
	o.search = "collage";
	o.max_depth = COLLAGE_DEFAULT_MAX_DEPTH;
	o.estimator = "measure";
	o.search_budget = COLLAGE_DEFAULT_BUDGET;
	o.mock_costs = getenv("COLLAGEC_MOCK_COSTS");
	if (getenv("COLLAGEC_MEASURE_TIMEOUT"))
		o.measure_timeout = atof(getenv("COLLAGEC_MEASURE_TIMEOUT"));
	o.threads = 0;	/* not given: measured at, and opens on, the physical cores */
	o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (o.jobs < 1)
		o.jobs = 1;
	o.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : COLLAGEC_DEFAULT_CC;
	o.cpu = COLLAGEC_DEFAULT_CPU;
	o.cflags = getenv("COLLAGEC_CFLAGS") && *getenv("COLLAGEC_CFLAGS")
		? getenv("COLLAGEC_CFLAGS") : COLLAGEC_DEFAULT_CFLAGS;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:j:qv", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.out = optarg; break;
		case OPT_TARGET: o.targets = optarg; break;
		case OPT_SEARCH: o.search = optarg; break;
		case OPT_SHAPE: vec_push(&shapes, optarg); break;
		case OPT_TUNE_SHAPE: vec_push(&tune, optarg); break;
		case OPT_ELEMENTS: vec_push(&elements, optarg); break;
		case OPT_PATTERNS: vec_push(&pats, optarg); break;
		case OPT_DUMP: o.dump_dir = optarg; break;
		case OPT_DEPFILE: o.depfile = optarg; break;
		case OPT_STATS: o.stats = optarg; break;
		case OPT_JSON: o.json = optarg; break;
		case OPT_WEIGHTS: o.weights = optarg; break;
		case OPT_CC: o.cc = optarg; break;
		case OPT_OPT: o.cflags = optarg; break;
		case OPT_CPU: o.cpu = optarg; break;
		case OPT_KEEP: o.keep_temps = true; break;
		case OPT_MAX_DEPTH:
			if ((o.max_depth = int_arg("--max-depth", optarg, 1, 64)) < 0)
				goto usage;
			break;
		case OPT_ESTIMATOR: o.estimator = optarg; break;
		case OPT_CACHE: o.cache = optarg; break;
		case OPT_NO_CACHE: o.no_cache = true; break;
		case OPT_NO_PLAN_CHECK: o.no_plan_check = true; break;
		case OPT_BUDGET: {
			char *end;

			o.search_budget = strtod(optarg, &end);
			if (!*optarg || *end || !(o.search_budget >= 0) ||
			    o.search_budget > 1e6) {
				cli_error(2, "compile: --search-budget takes seconds from 0 (no "
					  "limit) to 1000000, not '%s'", optarg);
				goto usage;
			}
			break;
		}
		case OPT_THREADS:
			if ((o.threads = int_arg("--threads", optarg, 1, 1024)) < 0)
				goto usage;
			break;
		case 'j':
			if ((o.jobs = int_arg("-j", optarg, 1, 1024)) < 0)
				goto usage;
			break;
		case OPT_PROGRESS: progress = true; break;
		case OPT_PREFIX:
			if (!emit_prefix_valid(optarg)) {
				cli_error(2, "compile: --prefix takes a C identifier of at most %d "
					  "characters, not '%s'", EMIT_PREFIX_MAX, optarg);
				goto usage;
			}
			o.prefix = optarg;
			break;
		case 'q': quiet = true; break;
		case 'v': verbose++; break;
		default:
			vec_free(&shapes);
	vec_free(&tune);
			vec_free(&elements);
			vec_free(&pats);
			return cli_error(2, "compile: unknown or incomplete option '%s' (see "
					 "'collagec compile --help')", argv[optind - 1]);
		}
	}
	if (optind != argc - 1 || !o.out) {
		vec_free(&shapes);
	vec_free(&tune);
		vec_free(&elements);
		vec_free(&pats);
		cli_usage("compile", stderr);
		return cli_error(2, "compile: expected one MODEL.onnx and -o OUT.so");
	}
	if (strcmp(o.search, "collage") && strcmp(o.search, "greedy") && strcmp(o.search, "none")) {
		cli_error(2, "compile: unknown --search '%s' (collage, greedy or none)", o.search);
		goto usage;
	}
	if (strcmp(o.estimator, "measure") && strcmp(o.estimator, "analytic") &&
	    strcmp(o.estimator, "mock")) {
		cli_error(2, "compile: unknown --estimator '%s' (measure, analytic or mock)",
			  o.estimator);
		goto usage;
	}
	if (!emit_cpu_flags(o.cpu)) {
		cli_error(2, "compile: unknown --cpu '%s' (%s)", o.cpu, emit_cpu_levels);
		goto usage;
	}
	/* a progress bar on a terminal, or when asked; never with -q */
	o.progress = !quiet && (progress || isatty(2));
	o.model = argv[optind];
	o.shapes = shapes.v;
	o.n_shapes = shapes.n;
	o.tune_shapes = tune.v;
	o.n_tune_shapes = tune.n;
	o.elements = elements.v;
	o.n_elements = elements.n;
	o.pattern_files = pats.v;
	o.n_pattern_files = pats.n;
	ctx_init(&ctx);
	ctx.quiet = quiet;
	ctx.verbose = verbose;
	rc = collagec_compile(&ctx, &o, &st);
	if (rc == 0 && verbose)
		fprintf(stderr, "collagec: compiled %s in %.2f s: %d kernels, arena %lld bytes "
			"(peak live %lld), weights %lld bytes (%lld more packed at open)\n", o.model,
			st.seconds, st.n_kernels, (long long)st.arena_bytes, (long long)st.peak_bytes,
			(long long)st.weights_bytes, (long long)st.packed_bytes);
	if (rc == 0 && verbose && strcmp(o.search, "none"))
		fprintf(stderr, "collagec: search %s: %d candidates, %d distinct, %d measured "
			"now, %d from the cost cache, %d left at their estimate, %.2f s\n",
			o.search, st.candidates, st.unique,
			strcmp(o.search, "collage") || strcmp(o.estimator, "measure") ? 0
			: st.estimated, st.cache_hits, st.guessed, st.search_seconds);
	rc = rc == 0 ? 0 : (int)(ctx.status ? ctx.status : STATUS_MODEL);
	ctx_release(&ctx);
	vec_free(&shapes);
	vec_free(&tune);
	vec_free(&elements);
	vec_free(&pats);
	return rc;
usage:
	vec_free(&shapes);
	vec_free(&tune);
	vec_free(&elements);
	vec_free(&pats);
	return 2;
}
