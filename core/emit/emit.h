/*
 * emit.h - from lowered partitions to artifacts: the execution plan (step
 * order, value placement, static memory plan with liveness), the generated
 * model.c (kernels + tables + runtime), linking into OUT.so and the JSON
 * metadata.
 *
 *	struct exec_plan ep;
 *	emit_plan(g, parts, n, &ep);
 *	emit_model_c(g, &ep, sources, json, split, &csrc);
 *	emit_link(ctx, &lo, csrc.buf, &ep, "out.so");
 */
#ifndef COLLAGEC_EMIT_H
#define COLLAGEC_EMIT_H

#include <sys/types.h>

#include "../target/target.h"

enum exec_kind {
	EXEC_UNUSED = -1,
	EXEC_CONST = 0,		/* matches enum rt_kind */
	EXEC_INPUT,
	EXEC_OUTPUT,
	EXEC_ARENA,
	EXEC_DYN,		/* allocated at run time when its producer runs */
	EXEC_PACKED,		/* a derived constant made at open: offset is
				   its index in packs */
};

struct exec_value {
	enum exec_kind kind;
	int rt;			/* index in the generated rt_values, -1 if unused */
	int io;			/* input / output index */
	int64_t offset;		/* weights offset, or static arena offset (-1 dynamic) */
	int first, last;	/* step of first write / last read */
	bool late;		/* its dims mention late symbols (graph_sym_late) */
};

/*
 * A KV cache the compiled model can keep in place (collagec_bind_cache):
 * an Attention's past input and present output, which only its
 * attention.rows kernel reads and writes.
 */
struct exec_cache {
	int in, out;		/* input and output indices */
	int node;		/* the Attention */
};

/* A dynamic node's run-time shape function (node_is_dynamic), run before a step. */
struct exec_shape {
	int step;		/* the first step of the node's partition */
	int node;		/* node index */
};

struct exec_step {
	const struct kernel *k;	/* the kernel this step runs */
	int n_args;
	const int *args;	/* value ids */
	int part;		/* id of the partition the kernel belongs to */
};

/*
 * One constant of the weights blob, where it goes. The blob is written from
 * the pieces (emit_weights_write), zeros between them, never assembled in
 * memory: a model's weights are held once, by its graph.
 */
struct weight_piece {
	const void *data;	/* the graph's constant (borrowed), or owned when own */
	size_t len;
	int64_t offset;		/* in the blob (RT_ALIGN-aligned) */
	bool own;		/* made for the blob (a string tensor's offsets and text) */
};

/*
 * A derived constant (graph_derived_const) the compiled model makes when it
 * opens, from its source in the blob or from another pack (rt_desc.packs),
 * instead of the blob holding both.
 */
struct exec_pack {
	const struct derived_const *d;	/* borrowed from the graph */
	int src;			/* the blob constant it comes from: value id */
	int src_pack;			/* made from this pack (its d's source), or
					   -1: from src's blob copy */
	int64_t bytes;			/* of the buffer it fills */
	bool temp;			/* only other packs read it: freed once open */
};

struct exec_plan {
	VEC(struct exec_step) steps;
	VEC(struct exec_shape) shapes;	/* in step order */
	struct exec_value *vals;	/* per graph value */
	int n_rt;			/* values in rt_values */
	int *rt_to_value;		/* rt index -> value id */
	bool dynamic;			/* arena planned at run time */
	int64_t arena_bytes;		/* static arena (dynamic: at symbols = 1) */
	int64_t peak_bytes;		/* most bytes of arena tensors live at once (same binding) */
	VEC(struct weight_piece) weights;	/* the weights blob, in offset order */
	int64_t weights_bytes;		/* its size */
	VEC(struct exec_pack) packs;	/* constants made at open */
	VEC(struct exec_cache) caches;	/* by output index */
	int64_t packed_bytes;		/* their bytes, the temporary ones' aside */
	int max_args;
	int threads;			/* what collagec_open sets: compile --threads,
					   0 the physical cores at open (the caller's) */
};

/*
 * Orders steps, classifies values and plans memory. The plan borrows the
 * graph's constants (ep->weights): the graph must live until the blob is
 * written (emit_link). 0 or -1.
 */
int emit_plan(struct graph *g, struct partition *parts, int n_parts, struct exec_plan *ep);
void exec_plan_release(struct exec_plan *ep);

/* Writes the weights blob of ep to f. 0, or -1 with errno set. */
int emit_weights_write(const struct exec_plan *ep, FILE *f);

/* The weights blob's SHA-256 in hex, read from the pieces as written. 0 or -1. */
int emit_weights_sha256(const struct exec_plan *ep, char hex[65]);

/*
 * Weights beside the code (--weights FILE): what OUT.so records of the
 * file that holds them (runtime/rt_plan.h's RT_WEIGHTS_*), which it maps
 * at open.
 */
struct weights_file {
	const char *name;	/* as recorded: relative to OUT.so's directory,
				   or absolute */
	const char *path;	/* where emit_link writes it */
	int64_t bytes;		/* the blob's */
	const char *sha256;	/* its hash (hex), or NULL: not checked (a
				   measuring build's private file) */
};

/* Writes wf's file (header, then ep's blob) to f. 0, or -1 with errno set. */
int emit_weights_file_write(const struct exec_plan *ep, const struct weights_file *wf, FILE *f);

/* Bytes of weights above which a compile puts them beside OUT.so unasked. */
#define EMIT_WEIGHTS_BESIDE_BYTES ((int64_t)3 << 29)	/* 1.5 GiB */

/* What the partitions' runtime modules add up to (duplicates removed). */
/* Kernels of standalone modules, which may be compiled apart from model.c. */
struct kernel_unit {
	char *source;			/* owned */
	const char *prelude;		/* its module's, or NULL */
	int lines;
};

struct model_sources {
	VEC(const char *) preludes;	/* once-per-model texts, first-seen order */
	struct strbuf kernels;		/* kernel source that must stay in model.c */
	VEC(const char *) ldlibs;	/* link flags, in first-seen order */
	VEC(const char *) inits;	/* backend init functions */
	VEC(const char *) finis;	/* their fini functions (parallel to inits; may be NULL) */
	VEC(const char *) syncs;	/* their end-of-run functions (parallel; may be NULL) */
	VEC(struct kernel_unit) units;	/* standalone modules, in order */
	VEC(const char *) entries;	/* the kernels the units define (steps call them) */
	struct strbuf cuda;		/* CUDA C of the modules (prelude first), or empty */
};

/* Appends a runtime module (made for partition p) to the model's sources. */
void model_sources_add(struct model_sources *ms, const struct runtime_module *m,
		       const struct partition *p);
void model_sources_release(struct model_sources *ms);

/*
 * The standalone kernels in translation units of their own: consecutive
 * units joined up to about max_lines each (0, or when they come to no more
 * than KERNEL_FILE_MIN_LINES: none split, everything stays in model.c). The split depends on the
 * code only, so outputs do not depend on -j. Returns the number of files, each an owned string in
 * (*out)[i] (free each and the array); the same split must be passed to
 * emit_model_c so model.c declares instead of defines them.
 */
int emit_kernel_files(const struct model_sources *ms, int max_lines, char ***out);

/*
 * Lines of standalone kernels per kernel file of a final build, and the
 * fewest worth a file of their own (a kernel file is one more compiler run,
 * and what the kernel-object cache keeps: small files let a change of one
 * layer recompile one file, and -j compile a shared-code model in parallel).
 */
#define KERNEL_FILE_LINES 400
#define KERNEL_FILE_MIN_LINES 300

/*
 * Prints "static int NAME(const int64_t *syms)" returning the index of the
 * variant of k whose condition holds first (the last one is the else), the
 * same test the backends' dispatchers make, so the runtime can record which
 * variant ran without a change to the kernel ABI. For kernels with variants.
 */
void emit_variant_pick(const struct kernel *k, const char *name, struct strbuf *sb);

/*
 * Generates model.c: kernel sources, tables, the metadata string, runtime.
 * With split, the standalone kernels are only declared (emit_kernel_files
 * holds them). The weights are embedded, or with wf in that file.
 */
void emit_model_c(struct graph *g, const struct exec_plan *ep, const struct model_sources *ms,
		  const char *metadata_json, bool split, const struct weights_file *wf,
		  struct strbuf *out);

/* The longest --prefix (a C identifier). */
#define EMIT_PREFIX_MAX 64

/* Whether prefix can name a model's API: a C identifier of EMIT_PREFIX_MAX at most. */
bool emit_prefix_valid(const char *prefix);

/*
 * Prints the "#define collagec_NAME PREFIX_NAME" lines, one per API function
 * (runtime/api.def), that go before everything else in a prefixed model.c.
 */
void emit_prefix_defines(const char *prefix, struct strbuf *out);

/*
 * Prints the API's functions (runtime/api.def) that end model.c: each
 * collagec_NAME calls the runtime's rt_api_NAME (a prefixed model.c's
 * defines rename them), so that the runtime object needs no prefix.
 */
void emit_api_functions(struct strbuf *out);

/* Prints OUT.h, the declarations of a prefixed model's API. */
void emit_header(const char *prefix, struct strbuf *out);

struct link_options {
	const char *cc;		/* compiler command ($CC or "cc") */
	const char *cflags;	/* optimisation flags */
	const char *march;	/* CPU flags, emit_cpu_flags(--cpu) */
	const char *march_resolved;	/* (optional) emit_cpu_resolve(), for OUT.json */
	const char *ldlibs;	/* extra libraries (and -f flags such as -fopenmp) */
	bool keep;		/* keep the build directory (--keep-temps) */
	int jobs;		/* kernel files compiled at once (<= 1: one after another) */
	const char *objects;	/* (optional) the kernel-object cache directory */
	const char *runtime_lock;	/* (optional) the lock file of a compile of
					   rt.o into objects (emit_runtime_start):
					   rt.o is looked up once it is free */
	int objects_hit;	/* out: kernel files taken from it */
	bool runtime_hit;	/* out: the runtime's object (rt.o) taken from it */
	const char *math_flags;	/* out: emit_math_flags(cc), set by emit_link */
	bool stage;		/* leave the result in a temporary beside out_so */
	char *staged;		/* out: that temporary (owned; see file_commit) */
	const char *archives;	/* (optional) run-time loops' bodies: archives
				   linked in, their API kept out of OUT's */
	const char *archive_api;	/* (optional) their API names' pattern ("P_loop*"),
				   made local in an archive OUT */
	const struct weights_file *weights;	/* (optional) the weights go there,
						   as model.c was told */
	char *weights_staged;	/* out, with stage: their temporary (owned) */
	/*
	 * (optional) CUDA C of the model's kernels (model_sources.cuda):
	 * nvcc (emit_nvcc) compiles it into a fatbin, through the object
	 * cache, and OUT links it as rt_cuda_fatbin
	 */
	const char *cuda;
};

/*
 * The nvcc command: $COLLAGEC_NVCC, else nvcc on PATH, else
 * /usr/local/cuda/bin/nvcc (static); NULL when there is none.
 */
const char *emit_nvcc(void);
/* The flags nvcc compiles a model's kernels with (sm_80, sm_90, compute_90 PTX). */
extern const char emit_nvcc_flags[];

/*
 * Starts compiling the runtime's object (rt.o) into lo->objects in a child
 * process holding an exclusive lock on the file lock until rt.o is there
 * (or the compile failed): builds given lo->runtime_lock = lock meanwhile
 * compile their model.c and wait for rt.o instead of each compiling it. The
 * child's pid (reap it), 0 when rt.o is in the cache already, -1 when
 * there is no object cache or no child could start.
 */
pid_t emit_runtime_start(struct collagec_ctx *ctx, struct link_options *lo, const char *lock);

/* Whether out names a static archive (OUT.a) rather than a shared object. */
bool emit_out_is_archive(const char *out);

/*
 * The flags every generated model.c is compiled with, before --opt's:
 * -fno-math-errno, and with GCC -fno-trapping-math -fvect-cost-model=cheap
 * (clang has no such option, and does not assume traps by default). cc's
 * --version says which it is.
 */
const char *emit_math_flags(struct arena *a, const char *cc);

/*
 * The C compiler flags that make generated code for the CPU level cpu
 * (--cpu): "native", "x86-64-v2", "x86-64-v3", "x86-64-v4" or "generic".
 * A static string, or NULL when cpu names no level (a usage error).
 */
const char *emit_cpu_flags(const char *cpu);

/*
 * What cpu's flags mean to the C compiler cc: for "native", GCC's answer
 * ("-march=znver1 -mtune=znver1", arena; NULL when cc does not say), else
 * emit_cpu_flags(cpu) itself. Runs cc once for native.
 */
const char *emit_cpu_resolve(struct collagec_ctx *ctx, const char *cc, const char *cpu);

/* The --cpu levels, for messages: "native, x86-64-v2, ..." (static). */
extern const char emit_cpu_levels[];

/*
 * The kernel-object cache (objcache.c): kernels_N.o, and the runtime's
 * rt.o, kept by the hash of its source, the compiler's identity and the
 * flags, beside the cost cache.
 */
#define OBJCACHE_MAX_BYTES (512LL << 20)
/* DIR/objects for the cost cache at path DIR/costs.sqlite (arena); NULL for NULL. */
const char *objcache_dir(struct arena *a, const char *cost_cache_path);
/* What identifies the compiler: "cc --version" and "cc -dumpmachine" (arena); NULL if it fails. */
const char *objcache_compiler_id(struct arena *a, const char *cc);
/* The hex SHA-256 key of one kernel file (arena). */
const char *objcache_key(struct arena *a, const char *source, const char *compiler,
			 const char *flags);
/* Copies the object of key to dst; false when the cache has none. */
bool objcache_get(struct arena *a, const char *dir, const char *key, const char *dst);
/* Stores the object src under key (atomically; silently not when it cannot), then trims. */
void objcache_put(struct arena *a, const char *dir, const char *key, const char *src);
/*
 * Counts the objects in dir and their bytes; with max_bytes >= 0, first
 * deletes the least recently used down to 3/4 of it when they exceed it
 * (0 clears the cache). 0, or -1 when dir cannot be read.
 */
int objcache_scan(const char *dir, long *files, long long *bytes, long long max_bytes);

/*
 * Compiles model.c, the runtime (rt.c: runtime/rt_model.c, the same for
 * every model) and the kernel files (kernels_N.c), jobs at a time, the
 * runtime and kernel files through the object cache (lo->objects), and
 * links them with the weights into out_so (atomically): a shared object,
 * or for a name ending in .a a static archive of one object in which only
 * the API is global. Diagnostics with STATUS_ENV when the toolchain fails.
 * 0 or -1.
 */
int emit_link(struct collagec_ctx *ctx, struct link_options *lo, const char *model_c,
	      char *const *files, int n_files, const struct exec_plan *ep, const char *out_so);

/* Appends s as a C string literal (everything unusual escaped in octal). */
void emit_c_string(struct strbuf *sb, const char *s);

/* The runtime files embedded in collagec at build time (build/gen/embed.c). */
struct embedded_file {
	const char *name;
	const char *data;
	size_t size;
};
extern const struct embedded_file embedded_files[];
extern const int embedded_files_count;
const struct embedded_file *embedded_find(const char *name);

/*
 * Clears every value's layout, then runs the plan_layouts hook of each
 * target kind among parts[0..np) once, with all of them, then
 * lower_plan_q8_layouts: the layouts that partitions hand over to each
 * other. Before lower_partitions on the same
 * partitions. 0 or -1.
 */
int lower_plan_layouts(struct graph *g, const struct partition *parts, int np);

/*
 * Sets LAYOUT_Q8_CL (ir.h) on the 8-bit values partitions hand each other
 * channels-last (q8layout.c); lower_plan_layouts runs it after the kinds'
 * hooks.
 */
void lower_plan_q8_layouts(struct graph *g, const struct partition *parts, int np);

/*
 * Lowers each partition through its target's hooks into ms: the lowering
 * steps in order (enum lower_step: relay_to_tir or the generic ones, then
 * plan_parallel) and tir_to_runtime, or relay_to_runtime. With snaps (an
 * array of LOWER_STEP_COUNT strbufs, or NULL), snaps[s] gets the loop IR of
 * every partition's kernels after step s, as --dump-ir writes it. 0 or -1.
 */
int lower_partitions(struct graph *g, struct partition *parts, int np, struct model_sources *ms,
		     struct strbuf *snaps);

#endif
