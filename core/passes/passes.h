/*
 * passes.h - the graph pass pipeline. Passes are a table (passes.def), not
 * methods on the graph; passes_run() runs them in order, verifies the graph
 * after each, stops at the first pass that reported an error, and with a
 * dump directory writes the IR after every pass (NN-name.ir, span comments).
 *
 *	if (passes_run(g, opts.dump_dir) < 0) return -1;
 */
#ifndef COLLAGEC_PASSES_H
#define COLLAGEC_PASSES_H

#include "../ir/ir.h"

enum pass_id {
#define PASS(id, name, fn, help) PASS_##id,
#include "passes.def"
#undef PASS
	PASS_COUNT
};

struct pass {
	const char *name;
	int (*run)(struct graph *g);	/* 0, or -1 after diagnostics */
	const char *help;
};

extern const struct pass passes[PASS_COUNT];

/* Runs every pass; dump_dir may be NULL. 0 or -1. */
int passes_run(struct graph *g, const char *dump_dir);

/* Writes the graph's text form to DIR/NN-name.ir. */
int passes_dump(struct graph *g, const char *dir, int seq, const char *name);

/*
 * Folds node n when its inputs are constants (or it is a Shape/Size of a
 * static shape): its outputs become constants and it is marked dead. The
 * infer pass calls it node by node, so shape computations are constants
 * before the nodes that need them (Reshape, Expand, ...) are inferred.
 * 0, or -1 after a diagnostic; not folding is not an error.
 */
int fold_try(struct graph *g, struct node *n);

#define PASS(id, name, fn, help) int fn(struct graph *g);
#include "passes.def"
#undef PASS

/*
 * The qdq pass's last step (pass_nbits.c): DequantizeLinear(int4/uint4
 * constant) -> MatMul into MatMulNBits, then any other int4 tensor refused.
 * 0, or -1 after diagnostics.
 */
int qdq_nbits(struct graph *g);

/*
 * The fold pass's first step (pass_widen.c): float16 and bfloat16 GEMMs,
 * convolutions, pools, normalizations, Softmax and Attention computed in
 * float32 between Casts, whose constant inputs the fold then converts. 0
 * (nothing to report).
 */
int pass_widen(struct graph *g);

/*
 * The layernorm pass's second step (pass_attention.c): attention written
 * as MatMul, Softmax and MatMul (PyTorch's export of
 * scaled_dot_product_attention) into one Attention node. 0 (nothing to
 * report).
 */
int merge_attention(struct graph *g);

#endif
