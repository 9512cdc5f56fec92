/*
 * compile.h - the compiler driver: ONNX model in, OUT.so + OUT.json out.
 * Every stage is one call in collagec_compile() (compile.c), in order.
 *
 *	struct compile_options o = { .model = "m.onnx", .out = "m.so", ... };
 *	if (collagec_compile(&ctx, &o, &stats) < 0) return ctx.status;
 */
#ifndef COLLAGEC_COMPILE_H
#define COLLAGEC_COMPILE_H

#include "target/target.h"

#define COLLAGEC_VERSION "0.1.0"

/*
 * The defaults of struct compile_options' cc, cpu and cflags (a NULL
 * field means them too), written here once for every place that fills one
 * in.
 */
#define COLLAGEC_DEFAULT_CC "cc"		/* C compiler command (the cli takes $CC first) */
#define COLLAGEC_DEFAULT_CPU "native"	/* --cpu: this host's level */
#define COLLAGEC_DEFAULT_CFLAGS "-O2"	/* optimisation flags for generated code */

/*
 * What a measured cost depends on besides the machine: COLLAGEC_VERSION, a
 * '+' and the first 12 hex digits of the SHA-256 of every source built into
 * collagec (its code generators, the embedded runtime and pattern tables),
 * as "0.1.0+3f9a1c2d5e6b". Written by the Makefile (build/gen/codegen_id.c),
 * so a collagec rebuilt from changed sources measures again instead of
 * trusting the times of code it no longer generates.
 */
extern const char collagec_codegen_id[];

struct compile_options {
	const char *model;		/* MODEL.onnx */
	const char *out;		/* OUT.so */
	const char *json;		/* OUT.json; NULL = OUT with .so replaced */
	const char *weights;		/* --weights: the weights in this file, beside
					   the code; NULL: in OUT.so unless more than
					   EMIT_WEIGHTS_BESIDE_BYTES (then in OUT.weights) */
	const char *prefix;		/* --prefix: API names PREFIX_open...; NULL = collagec */
	const char *targets;		/* comma list of target strings */
	const char *search;		/* "collage", "greedy" or "none" */
	int max_depth;			/* --max-depth: candidates' longest chain */
	const char *estimator;		/* "measure", "analytic" or "mock" */
	const char *mock_costs;		/* the mock estimator's weights ("c=3,blas=1") */
	const char *cache;		/* --cache PATH; NULL = the default file */
	bool no_cache;			/* --no-cache */
	bool no_plan_check;		/* --no-plan-check: skip Collage's phase 5 */
	double search_budget;		/* --search-budget: seconds of measuring (0: no
					   limit); COLLAGE_DEFAULT_BUDGET by default */
	int threads;			/* --threads: costs are measured with it and the
					   model opens with it; 0 (not given): measured
					   at 1, opens on the physical cores */
	int jobs;			/* parallel C compiler runs while measuring */
	bool progress;			/* a progress bar while measuring (on a terminal) */
	double measure_timeout;		/* seconds a bench model may run; 0 = 120 */
	const char *dump_dir;		/* --dump-ir */
	const char *depfile;		/* --depfile */
	const char *stats;		/* --stats FILE ("-": standard output): stage
					   times, what was measured, cache use */
	const char *const *shapes;	/* --shape NAME=DIMS */
	int n_shapes;
	const char *const *tune_shapes;	/* --tune-shape NAME=VALUE: the sizes the
					   search measures symbols at (cost.h) */
	int n_tune_shapes;
	const char *const *elements;	/* --elements NAME=N|none: sequence and
					   optional inputs' element counts */
	int n_elements;
	const char *const *pattern_files;	/* --patterns FILE, in order */
	int n_pattern_files;
	const struct target_kind *const *kinds;	/* the registry */
	int n_kinds;
	const char *cc;			/* C compiler command */
	const char *cflags;		/* optimisation flags for generated code */
	const char *cpu;		/* --cpu level (emit_cpu_flags); NULL = the default */
	bool keep_temps;
	bool emit_only;			/* stop once model.c is made: no C compiler, no
					   files (the fuzz harness) */
	struct loop_body *body;		/* (internal) compiling a run-time loop's body:
					   its outputs' shapes and link flags go here */
	const char *model_name;		/* (internal) OUT.json's model path, when not
					   model (a body's temp file) */
	bool body_probe;		/* (internal) stop once body's outputs are known */
};

struct compile_stats {
	double seconds;
	int candidates, unique, estimated, cache_hits, guessed;
	double search_seconds;
	int n_partitions, n_kernels;
	int64_t arena_bytes, peak_bytes, weights_bytes;
	int64_t packed_bytes;		/* made at open from weights in the blob */
};

/* 0, or -1 after diagnostics (ctx->status says which exit status). */
int collagec_compile(struct collagec_ctx *ctx, const struct compile_options *o,
		     struct compile_stats *stats);

/* Applies --shape bindings to the graph inputs. 0 or -1 (usage error). */
int compile_bind_shapes(struct graph *g, const char *const *shapes, int n);

#endif
