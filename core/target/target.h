/*
 * target.h - target kinds, their hooks, target strings, partitions and the
 * kernels they lower to.
 *
 * A target kind is a const struct of hooks (optional slots NULL = default),
 * registered by the cli from backends/registry.c; core/ never names a
 * backend. A target is a kind plus options parsed from a target string such
 * as "c -threads=2".
 *
 *	struct target *t = target_parse(ctx, kinds, n_kinds, "c");
 *	for (int s = 0; s < LOWER_STEP_COUNT; s++)
 *		target_lower_step(g, t, part, s);   // relay_to_tir or generic, then plan_parallel
 *	t->kind->tir_to_runtime(g, t, part, mod);
 */
#ifndef COLLAGEC_TARGET_H
#define COLLAGEC_TARGET_H

#include "../ir/ir.h"
#include "../tir/tir.h"

#define TARGET_API_VERSION 1
#define TARGET_MAX_OPTS 8

struct target;
struct op_strategy;

/*
 * One implementation of a kernel under a condition (op strategies): when a
 * condition depends on a symbolic dim, the kernel holds several variants and
 * a run-time dispatcher tries their conditions in order.
 */
struct kernel_variant {
	const char *impl;		/* implementation name ("matmul.ikj") */
	const char *cond_text;		/* the specialization condition ("M >= 16"), "always" */
	struct tir *cond;		/* boolean loop-IR expression over syms; NULL = else */
	struct tir_func *func;		/* its loop IR (same parameters as the kernel) */
};

/* One generated kernel: its loop IR and the values bound to its parameters. */
struct kernel {
	const char *name;		/* C symbol, unique in the model */
	/* (optional) the C function to call instead: an earlier kernel's identical code */
	const char *symbol;
	struct tir_func *func;		/* loop IR; NULL when made by relay_to_runtime */
	int n_args;
	int *args;			/* value ids, in parameter order */
	int n_inputs;			/* args[0..n_inputs) are read, the rest written */
	struct span span;
	int n_variants;			/* 0: func only; else dispatch over variants */
	struct kernel_variant *variants;
	int n_scratch;			/* scratch values (lower_scratch), parameters */
	int *scratch;			/* after args: written and read by this kernel only */
};

/* A sub-graph placed on one target. */
struct partition {
	int id;
	const struct target *target;
	int n_nodes;
	int *nodes;			/* node indices, topological order */
	struct span span;		/* union of the nodes' spans */
	const char *rule;		/* what placed it: "blas.dense_bias_act", "op" */
	VEC(struct kernel) kernels;	/* filled by relay_to_tir */
	double est_cost;		/* seconds; NAN = unknown */
	double measured_cost;		/* seconds when measured (or from the cost cache); NAN else */
};

/*
 * What tir_to_runtime produces: source for the model's translation unit.
 * A backend with state (an OpenCL context, built programs) names an init
 * function, run by every collagec_open() before any kernel, and a fini run by
 * every collagec_close(): "int NAME(void *model, char *err, size_t errlen)"
 * returning 0, and "void NAME(void *model)", model the handle (a key: its
 * state per handle). They keep their own reference count; a fini runs
 * only after its init succeeded (a failed open undoes the inits before it).
 * A sync, "void NAME(void *model, int end)", runs at the end of every run
 * of the handle (end 1), and with profiling after every step (end 0): it
 * waits for what the kernels left queued (outputs on their way back from a
 * device). Each is emitted once per model even when several
 * partitions of the target ask for it.
 */
struct runtime_module {
	/* (optional) text emitted once per model before all kernels (includes, helpers) */
	const char *prelude;
	struct strbuf source;		/* C code defining the partition's kernels */
	VEC(const char *) ldlibs;	/* extra link libraries ("-lopenblas") */
	const char *init;		/* (optional) init function name */
	const char *fini;		/* (optional) fini function name */
	const char *sync;		/* (optional) end-of-run function name */
	/*
	 * (optional) CUDA C for the model's one device program: every
	 * module's text, joined after cuda_prelude (once per model), is
	 * compiled by nvcc into a fatbin that OUT.so holds as rt_cuda_fatbin
	 * (emit_link)
	 */
	struct strbuf cuda;
	const char *cuda_prelude;
	/*
	 * The source needs nothing but rt_model.h (no prelude, no state): its
	 * functions are declared RT_KERNEL, and its kernels may be compiled in
	 * a translation unit of their own, in parallel with the rest.
	 */
	bool standalone;
};

struct target_option {
	const char *name;		/* "threads" */
	const char *help;
	int64_t min, max, def;		/* integer options */
	/*
	 * (optional) a text option instead, with this default: any word
	 * without blanks or commas ("gpu", "0"), which the kind checks when it
	 * lowers (target_opt_text)
	 */
	const char *def_text;
};

struct target_kind {
	int api_version;		/* TARGET_API_VERSION */
	const char *name;		/* "c" */
	const char *device;		/* "cpu" */
	const char *description;
	const struct target_option *options;	/* NULL-name terminated, or NULL */
	/* (optional) why it cannot be used here, or NULL when available */
	const char *(*unavailable)(void);
	/*
	 * (optional) why its kernels compile here but cannot run (no device
	 * to run them on), or NULL when they can: the search then takes their
	 * costs from the analytic estimator, never measures them, says so, and
	 * times no plan that holds them
	 */
	const char *(*cannot_run)(void);
	/*
	 * (with cannot_run) what the analytic estimator assumes of the kind
	 * where it cannot measure it: FLOP/s, bytes/s, the least a kernel
	 * costs (seconds), and what a value costs to cross between it and
	 * another kind (seconds, the transition penalty)
	 */
	double nominal_flops, nominal_bytes, nominal_overhead, nominal_transfer;
	/*
	 * (optional) the memory its values live in, when kinds share one
	 * ("cuda": cuda, cublas, cudnn): a value crossing between two kinds
	 * of one memory costs no transfer
	 */
	const char *memory;
	/*
	 * (optional) how many calls of its library one node of its costs (a
	 * Conv of G groups on OpenBLAS: a GEMM per image and group): the
	 * analytic estimator charges the kind's per-kernel overhead that many
	 * times. NULL: one. dim_at gives a dim at the sizes the search times
	 * symbolic dims at.
	 */
	double (*node_calls)(struct graph *g, const struct node *n,
			     int64_t (*dim_at)(const struct graph *g, struct dim d));
	/* (optional) the devices it can run on here, one per line, for `targets` */
	const char *(*devices)(void);
	/*
	 * The partition rule (phase 1) has two halves. supports: (optional) can
	 * this one node run here alone? NULL = every op, unless the kind has
	 * patterns: then only its pattern rules place nodes on it.
	 */
	bool (*supports)(struct graph *g, const struct node *n);
	/*
	 * (optional) patterns: the built-in pattern table, the name of a file of
	 * patterns/ embedded in collagec ("blas.pat"); users add rules with
	 * --patterns FILE. pattern_check: (optional) can the nodes a rule matched
	 * (graph order, the root last) be lowered here as one partition? NULL =
	 * when each of them passes supports.
	 */
	const char *patterns;
	bool (*pattern_check)(struct graph *g, const int *nodes, int n_nodes);
	/*
	 * (optional) run once before any partition is lowered, with all of
	 * them: may set value.layout on values that only partitions of this
	 * kind produce and read (never graph inputs or outputs), so that its
	 * kernels hand them over in a layout of their own, and value.store_c
	 * where that layout pads the channels (the memory plan then gives
	 * the value that many). Returns 0 or -1.
	 */
	int (*plan_layouts)(struct graph *g, const struct partition *parts, int np);
	/*
	 * (optional) partition -> loop IR kernels; NULL = the generic steps
	 * (enum lower_step: ops, strategy, fuse). When set, it is the ops step
	 * and the strategy and fuse steps leave its kernels alone.
	 */
	int (*relay_to_tir)(struct graph *g, const struct target *t, struct partition *p);
	/*
	 * (optional) the parallel step: decides which loops marked parallel
	 * (TIR_FOR .parallel) head a parallel region (TIR_FOR .region), for
	 * tir_to_runtime to obey. NULL = its printer decides, or nothing runs
	 * in parallel. Returns 0 or -1.
	 */
	int (*plan_parallel)(struct graph *g, const struct target *t, struct partition *p);
	/* loop IR kernels -> runtime module source */
	int (*tir_to_runtime)(struct graph *g, const struct target *t, struct partition *p,
			      struct runtime_module *m);
	/* (optional) partition -> runtime module directly, skipping loop IR */
	int (*relay_to_runtime)(struct graph *g, const struct target *t, struct partition *p,
				struct runtime_module *m);
	/* (optional) op strategies, NULL-terminated; see core/target/strategy.h */
	const struct op_strategy *const *strategies;
	/*
	 * Kernels that differ only in index constants share one function, the
	 * constants passed in a small tensor (core/target/share.c), unless
	 * the target's option "share" (which such a kind must have) is 0. For
	 * targets whose compile cost is per function (C); off for others.
	 */
	bool share_constants;
	/*
	 * (optional) 8-bit values handed over channels-last ([N, H, W, C]
	 * bytes: value.layout 1, core/emit/q8layout.c), between partitions of
	 * any kinds that take them. q8_cl_writes: the 8-bit value partition p
	 * may write channels-last (one it hands on), else -1. q8_cl_reads:
	 * whether p reads value v, input slot of its node n, channels-last.
	 * q8_cl_elementwise: the kind's partitions that map 8-bit tensors
	 * elementwise (a QDQ residual add) run on them in whatever order
	 * their elements are stored, so they take and hand on channels-last
	 * values when all of their operands and results are.
	 */
	int (*q8_cl_writes)(struct graph *g, const struct partition *p);
	bool (*q8_cl_reads)(struct graph *g, const struct partition *p, const struct node *n,
			    int slot, int v);
	bool q8_cl_elementwise;
};

struct target {
	const struct target_kind *kind;
	const char *str;			/* canonical target string (arena) */
	int64_t opt[TARGET_MAX_OPTS];		/* option values, in kind->options order */
	const char *text[TARGET_MAX_OPTS];	/* text options' values (arena), else NULL */
};

/* Finds a kind by name, or NULL. */
const struct target_kind *target_kind_find(const struct target_kind *const *kinds, int n,
					   const char *name);
/*
 * Parses "kind -opt=value ..." (arena result). Unknown kinds or options are
 * usage errors listing what exists; NULL then.
 */
struct target *target_parse(struct collagec_ctx *ctx, const struct target_kind *const *kinds,
			    int n, const char *str);
int64_t target_opt(const struct target *t, const char *name);
/* A text option's value (struct target_option.def_text). */
const char *target_opt_text(const struct target *t, const char *name);
/* The option's value, or def when t's kind has no such option. */
int64_t target_opt_or(const struct target *t, const char *name, int64_t def);
/*
 * Whether t lowers a multi-node partition into fused loop nests: kinds
 * with the generic lowering, unless their -fuse option is 0.
 */
bool target_fuses(const struct target *t);

/*
 * Lowering a partition to loop IR is a sequence of named steps; lower_partitions
 * runs each in turn for every partition, and --dump-ir snapshots every
 * kernel after each (NN-lower.K-NAME.tir). Tiling and vectorization are no
 * steps: they happen inside micro-kernel templates (rt_cgemm.h) and in the
 * C compiler.
 */
enum lower_step {
	LOWER_STEP_OPS,		/* one kernel per node, its op's own lowering (or relay_to_tir) */
	LOWER_STEP_STRATEGY,	/* op strategies: chosen implementations, run-time variants */
	LOWER_STEP_FUSE,	/* runs of elementwise nodes become one fused kernel */
	LOWER_STEP_SHARE,	/* across partitions: share_constants (lower_partitions runs it) */
	LOWER_STEP_PARALLEL,	/* the kind's plan_parallel: which loops run as parallel regions */
	LOWER_STEP_COUNT
};

extern const char *const lower_step_names[LOWER_STEP_COUNT];

/*
 * Runs one lowering step on p (steps in order, from an empty p->kernels).
 * A step that does not apply to the partition's kind leaves its kernels as
 * they are. 0 or -1 after a diagnostic.
 */
int target_lower_step(struct graph *g, const struct target *t, struct partition *p,
		      enum lower_step s);

/*
 * The default relay_to_tir: the ops, strategy and fuse steps. One kernel per
 * node through the op lowering (through the target's op strategy when it
 * has one), except that nodes fuse unless the target's -fuse is 0: a run of
 * elementwise nodes of one shape becomes one loop (op_lower_fused), and an
 * anchor (conv, matmul, gemm, pooling, reduction, softmax) takes the
 * elementwise chain after it as its epilogue (struct lower_epilogue). A
 * fused kernel's span names every node in it. 0 or -1.
 */
int target_lower_generic(struct graph *g, const struct target *t, struct partition *p);

/*
 * Appends the comment printers put before a kernel: the ONNX nodes it came
 * from and, with strategies, each variant and its condition.
 */
void kernel_comment(const struct kernel *k, struct strbuf *sb);
/*
 * Appends the C dispatcher of a kernel with variants: a function named
 * k->name with the executor's ABI that calls the first variant whose
 * condition holds (printed in dialect d), the last one else.
 */
struct tir_dialect;
void kernel_dispatcher(const struct kernel *k, const struct tir_dialect *d, struct strbuf *sb);

/*
 * After every partition's relay_to_tir: kernels of share_constants kinds
 * whose loop IR differs only in int64 index constants read those from a new
 * constant input instead, so that they print as one function.
 */
void share_constants(struct graph *g, struct partition *parts, int np);

#endif
