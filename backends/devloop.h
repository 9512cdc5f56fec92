/*
 * devloop.h - loop IR run on a device (opencl, cuda): which top-level loop
 * nests of a kernel run as index ranges (the parallel step, proved from the
 * accesses when the lowering did not mark them), the stages a kernel splits
 * into, and what the compiler tells the host code of each argument at a
 * boundary with the CPU (DEVLOOP_* flags). The printers (OpenCL C, CUDA C)
 * are the targets' own.
 *
 *	.supports = devloop_supports, .plan_parallel = devloop_plan_parallel,
 *	n = devloop_stages(f, st);	// in tir_to_runtime, per function
 */
#ifndef COLLAGEC_DEVLOOP_H
#define COLLAGEC_DEVLOOP_H

#include "backends.h"

#define DEVLOOP_MAX_BUFS 48	/* buffer arguments of one kernel, at most */
#define DEVLOOP_MAX_STAGES 16	/* stages of one kernel, at most */
#define DEVLOOP_MAX_NEST 8	/* loops of one range, at most */

/*
 * The node rule both device targets share: elementwise, broadcast,
 * injective, reduction and anchor ops (conv, pooling, MatMul, Gemm) and
 * the normalisations, on float32 data (inputs and outputs float32, int64
 * or bool, one at least float32), not random, at most DEVLOOP_MAX_BUFS
 * buffers.
 */
bool devloop_supports(struct graph *g, const struct node *n);

/* True when e is computable on the host from constants and symbols. */
bool devloop_host_expr(const struct tir *e);
/*
 * Marks in used[] the symbols s reads and in assigned[] the locals it
 * assigns; false when s holds what a device kernel cannot (C calls).
 */
bool devloop_scan(const struct tir *s, bool *used, int n_syms, bool *assigned);

/*
 * The parallel step of a device target: for every function of p's kernels,
 * which top-level loop nests run as ranges (TIR_FOR .region on the head:
 * how many loops, those of extent 1 included).
 */
int devloop_plan_parallel(struct graph *g, const struct target *t, struct partition *p);

/*
 * One device kernel of an executor kernel: a range over the first n_nest
 * loops of a top-level loop nest (those of extent 1 bound to 0), or the
 * statements stmts[0..n_stmts) run by one thread.
 */
struct devloop_stage {
	const char *name;
	int n_nest;
	const struct tir *nest[DEVLOOP_MAX_NEST];
	int n_stmts;
	const struct tir *const *stmts;
};

/*
 * Splits f's body into stages as the parallel step decided: each nest with
 * a region is a range stage, runs of other statements single-thread
 * stages; a body with top-level locals is one single-thread stage. How
 * many (at most DEVLOOP_MAX_STAGES).
 */
int devloop_stages(const struct tir_func *f, struct devloop_stage *st);
/* Whether loop s runs once. */
bool devloop_unit_loop(const struct tir *s);
/* How many loops of a stage's range are not of extent 1. */
int devloop_stage_dims(const struct devloop_stage *s);

/* Bytes of kernel argument value v, as a C expression over syms[]. */
void devloop_print_bytes(const struct value *v, struct strbuf *sb);
/*
 * The start of the host function of function f of kernel k (the
 * executor's ABI): its name line, then the arrays bytes[] (each argument's
 * size), flags[] (devloop_arg_flags with same) and scalars[] of type
 * scalar ("cl_long", "int64_t"), the symbols syms[0..n_syms) the device
 * code reads.
 */
void devloop_print_host_args(struct graph *g, const struct kernel *k, const struct tir_func *f,
			     const struct target_kind **where,
			     bool (*same)(const struct target_kind *k), const char *scalar,
			     const int *syms, int n_syms, struct strbuf *sb);

/*
 * Runs fill(out) in a child process and copies its size bytes of *out back,
 * so that no driver state (threads a driver starts as it loads) survives
 * into processes collagec forks later; in this process when it cannot fork.
 * 0, the signal that killed the child, or -1 when it gave no answer (*out
 * then undefined).
 */
int devloop_probe(void (*fill)(void *out), void *out, size_t size);

/* Where each node runs: its partition's kind (g->lowering), NULL when none. */
const struct target_kind **devloop_node_kinds(struct graph *g);

/*
 * What the host half must do with value v, an input or an output of a
 * kernel on a device whose memory the kinds same() names share: an input
 * is a constant, or on the device when such a kind made it; an output stays
 * on the device when such a kind reads it, and goes back to the host when
 * anything else does (waited for), or when it is a model output (by the
 * run's end). A node with a run-time shape function counts as host code.
 */
enum {
	DEVLOOP_DEV = 1,	/* input: a kernel of this device made it this run */
	DEVLOOP_CONST = 2,	/* input: a constant, uploaded once per handle */
	DEVLOOP_KEEP = 4,	/* output: a kernel of this device reads it */
	DEVLOOP_SYNC = 8,	/* output: host code reads it: copied back, waited for */
	DEVLOOP_LATE = 16,	/* output: only the caller reads it: back by the run's end */
};
int devloop_arg_flags(struct graph *g, const struct target_kind **where, int v, bool input,
		      bool (*same)(const struct target_kind *k));

#endif
