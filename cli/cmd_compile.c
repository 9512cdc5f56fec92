/*
 * cmd_compile.c - collagec compile.
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/backends.h"

enum { OPT_SHAPE = 256, OPT_DUMP, OPT_DEPFILE, OPT_JSON, OPT_CC, OPT_OPT, OPT_KEEP, OPT_SEARCH,
       OPT_TARGET, OPT_PATTERNS };

int cmd_compile(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "search", required_argument, NULL, OPT_SEARCH },
		{ "patterns", required_argument, NULL, OPT_PATTERNS },
		{ "shape", required_argument, NULL, OPT_SHAPE },
		{ "dump-ir", required_argument, NULL, OPT_DUMP },
		{ "depfile", required_argument, NULL, OPT_DEPFILE },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "cc", required_argument, NULL, OPT_CC },
		{ "opt", required_argument, NULL, OPT_OPT },
		{ "keep-temps", no_argument, NULL, OPT_KEEP },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct compile_options o = { 0 };
	struct compile_stats st = { 0 };
	struct collagec_ctx ctx;
	VEC(const char *) shapes = { 0 };
	VEC(const char *) pats = { 0 };
	int c, rc, verbose = 0;
	bool quiet = false;

	if (cli_wants_help(argc, argv, "compile"))
		return 0;
	o.kinds = backend_registry;
	o.n_kinds = backend_registry_count;
	o.targets = "c";
	o.search = "none";
	o.cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	o.cflags = getenv("COLLAGEC_CFLAGS") && *getenv("COLLAGEC_CFLAGS")
		? getenv("COLLAGEC_CFLAGS") : "-O2";
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:qv", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': o.out = optarg; break;
		case OPT_TARGET: o.targets = optarg; break;
		case OPT_SEARCH: o.search = optarg; break;
		case OPT_SHAPE: vec_push(&shapes, optarg); break;
		case OPT_PATTERNS: vec_push(&pats, optarg); break;
		case OPT_DUMP: o.dump_dir = optarg; break;
		case OPT_DEPFILE: o.depfile = optarg; break;
		case OPT_JSON: o.json = optarg; break;
		case OPT_CC: o.cc = optarg; break;
		case OPT_OPT: o.cflags = optarg; break;
		case OPT_KEEP: o.keep_temps = true; break;
		case 'q': quiet = true; break;
		case 'v': verbose++; break;
		default:
			vec_free(&shapes);
			vec_free(&pats);
			return cli_error(2, "compile: unknown or incomplete option '%s' (see "
					 "'collagec compile --help')", argv[optind - 1]);
		}
	}
	if (optind != argc - 1 || !o.out) {
		vec_free(&shapes);
		vec_free(&pats);
		cli_usage("compile", stderr);
		return cli_error(2, "compile: expected one MODEL.onnx and -o OUT.so");
	}
	if (strcmp(o.search, "none")) {
		vec_free(&shapes);
		vec_free(&pats);
		return cli_error(2, "compile: --search '%s' is not available yet (only 'none')",
				 o.search);
	}
	o.model = argv[optind];
	o.shapes = shapes.v;
	o.n_shapes = shapes.n;
	o.pattern_files = pats.v;
	o.n_pattern_files = pats.n;
	ctx_init(&ctx);
	ctx.quiet = quiet;
	ctx.verbose = verbose;
	rc = collagec_compile(&ctx, &o, &st);
	if (rc == 0 && verbose)
		fprintf(stderr, "collagec: compiled %s in %.2f s: %d kernels, arena %lld bytes "
			"(peak live %lld), weights %lld bytes\n", o.model, st.seconds, st.n_kernels,
			(long long)st.arena_bytes, (long long)st.peak_bytes,
			(long long)st.weights_bytes);
	rc = rc == 0 ? 0 : (int)(ctx.status ? ctx.status : STATUS_MODEL);
	ctx_release(&ctx);
	vec_free(&shapes);
	vec_free(&pats);
	return rc;
}
