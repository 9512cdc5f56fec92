/*
 * emit.h - from lowered partitions to artifacts: the execution plan (step
 * order, value placement, static memory plan with liveness), the generated
 * model.c (kernels + tables + runtime), linking into OUT.so and the JSON
 * metadata.
 *
 *	struct exec_plan ep;
 *	emit_plan(g, parts, n, &ep);
 *	emit_model_c(g, &ep, sources, json, &csrc);
 *	emit_link(ctx, &lo, csrc.buf, &ep, "out.so");
 */
#ifndef COLLAGEC_EMIT_H
#define COLLAGEC_EMIT_H

#include "../target/target.h"

enum exec_kind {
	EXEC_UNUSED = -1,
	EXEC_CONST = 0,		/* matches enum rt_kind */
	EXEC_INPUT,
	EXEC_OUTPUT,
	EXEC_ARENA,
};

struct exec_value {
	enum exec_kind kind;
	int rt;			/* index in the generated rt_values, -1 if unused */
	int io;			/* input / output index */
	int64_t offset;		/* weights offset, or static arena offset (-1 dynamic) */
	int first, last;	/* step of first write / last read */
};

struct exec_step {
	const struct kernel *k;	/* the kernel this step runs */
	int n_args;
	const int *args;	/* value ids */
	int part;		/* id of the partition the kernel belongs to */
};

struct exec_plan {
	VEC(struct exec_step) steps;
	struct exec_value *vals;	/* per graph value */
	int n_rt;			/* values in rt_values */
	int *rt_to_value;		/* rt index -> value id */
	bool dynamic;			/* arena planned at run time */
	int64_t arena_bytes;		/* static arena (dynamic: at symbols = 1) */
	int64_t peak_bytes;		/* most bytes of arena tensors live at once (same binding) */
	struct strbuf weights;		/* the weights blob */
	int max_args;
};

/* Orders steps, classifies values and plans memory. 0 or -1. */
int emit_plan(struct graph *g, struct partition *parts, int n_parts, struct exec_plan *ep);
void exec_plan_release(struct exec_plan *ep);

/* What the partitions' runtime modules add up to (duplicates removed). */
struct model_sources {
	VEC(const char *) preludes;	/* once-per-model texts, first-seen order */
	struct strbuf kernels;		/* all kernel source */
	VEC(const char *) ldlibs;	/* link flags, in first-seen order */
	VEC(const char *) inits;	/* backend init functions */
	VEC(const char *) finis;	/* their fini functions (parallel to inits; may be NULL) */
};

/* Appends a runtime module to the model's sources. */
void model_sources_add(struct model_sources *ms, const struct runtime_module *m);
void model_sources_release(struct model_sources *ms);

/*
 * Prints "static int NAME(const int64_t *syms)" returning the index of the
 * variant of k whose condition holds first (the last one is the else), the
 * same test the backends' dispatchers make, so the runtime can record which
 * variant ran without a change to the kernel ABI. For kernels with variants.
 */
void emit_variant_pick(const struct kernel *k, const char *name, struct strbuf *sb);

/* Generates model.c: kernel sources, tables, the metadata string, runtime. */
void emit_model_c(struct graph *g, const struct exec_plan *ep, const struct model_sources *ms,
		  const char *metadata_json, struct strbuf *out);

/* The longest --prefix (a C identifier). */
#define EMIT_PREFIX_MAX 64

/* Whether prefix can name a model's API: a C identifier of EMIT_PREFIX_MAX at most. */
bool emit_prefix_valid(const char *prefix);

/*
 * Prints the "#define collagec_NAME PREFIX_NAME" lines, one per API function
 * (runtime/api.def), that go before everything else in a prefixed model.c.
 */
void emit_prefix_defines(const char *prefix, struct strbuf *out);

/* Prints OUT.h, the declarations of a prefixed model's API. */
void emit_header(const char *prefix, struct strbuf *out);

struct link_options {
	const char *cc;		/* compiler command ($CC or "cc") */
	const char *cflags;	/* optimisation flags */
	const char *ldlibs;	/* extra libraries */
	bool keep;		/* keep the build directory (--keep-temps) */
};

/* Whether out names a static archive (OUT.a) rather than a shared object. */
bool emit_out_is_archive(const char *out);

/*
 * Compiles model.c with the weights and runtime into out_so (atomically):
 * a shared object, or for a name ending in .a a static archive of one
 * object in which only the API is global.
 * Diagnostics with STATUS_ENV when the toolchain fails. 0 or -1.
 */
int emit_link(struct collagec_ctx *ctx, const struct link_options *lo, const char *model_c,
	      const struct exec_plan *ep, const char *out_so);

/* The runtime files embedded in collagec at build time (build/gen/embed.c). */
struct embedded_file {
	const char *name;
	const char *data;
	size_t size;
};
extern const struct embedded_file embedded_files[];
extern const int embedded_files_count;
const struct embedded_file *embedded_find(const char *name);

#endif
