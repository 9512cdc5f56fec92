/*
 * pass_fold.c - constant folding. A node whose inputs are all constants (or
 * a Shape/Size of a static shape) is lowered with its normal lowering and
 * run by the loop-IR interpreter; its outputs become constants. This folds
 * the shape computations that static shapes need, with no second
 * implementation of any op. Random ops (op_is_random) are never folded:
 * unseeded ones must differ from run to run. First, 16-bit float GEMMs,
 * convolutions and row ops get their Casts to float32 (pass_widen.c), so
 * that those of their weights fold here. A float16 or bfloat16 constant
 * widened to float32 is a derived constant that the compiled model makes
 * again when it opens (rt_widen16, runtime/rt_half.h), so that OUT.so
 * stores the 16-bit weights, not twice their bytes (core/emit/plan.c).
 */
#include "passes.h"
#include "../ops/ops.h"

#include <string.h>

#include "../../runtime/rt_half.h"

/* Outputs larger than this stay run-time kernels (the interpreter is slow). */
#define FOLD_LIMIT (INT64_C(1) << 22)

static bool foldable(struct graph *g, const struct node *n)
{
	bool shape_only = n->op == OP_SHAPE || n->op == OP_SIZE;

	/* a random op gives new values per run, or by a key the folder has not */
	if (op_is_random(g, n))
		return false;
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);

		if (!v->has_shape || !shape_is_static(&v->shape) ||
		    shape_numel_static(&v->shape) > FOLD_LIMIT)
			return false;
	}
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (!v)
			continue;
		if (shape_only ? !shape_is_static(&v->shape) : !v->data)
			return false;
	}
	return true;
}

/* Widened constants under this many bytes stay plain (a pack each costs more). */
#define WIDEN_OPEN_MIN 4096

/*
 * Where n's output goes: for a Cast of a float16 or bfloat16 constant to
 * float32 (*widened), a derived constant of the source, filled here by
 * rt_widen16 as the compiled model fills it at open; otherwise fresh arena
 * memory (*widened false) for the interpreter.
 */
static void *fold_out(struct graph *g, const struct node *n, const struct value *v,
		      size_t bytes, bool *widened)
{
	const struct value *x = n->op == OP_CAST ? node_in(g, n, 0) : NULL;
	int64_t p[2] = { x && x->dtype == DTYPE_BF16, (int64_t)(bytes / 4) };
	void *data;
	bool fresh;

	*widened = x && (x->dtype == DTYPE_F16 || x->dtype == DTYPE_BF16) &&
		   v->dtype == DTYPE_F32 && bytes >= WIDEN_OPEN_MIN && !graph_derived_of(g, x->data);
	if (!*widened)
		return arena_alloc(g->arena, bytes ? bytes : 1);
	data = graph_derived_const(g, x->data, "widen16", p, 2, bytes, &fresh);
	if (fresh)
		rt_widen16(x->data, data, p);
	graph_derived_open(g, data, "rt_widen16");
	return data;
}

static int fold_node(struct graph *g, struct node *n)
{
	struct tir_func *f = op_lower_node(g, n, "fold");
	void **bufs;
	int k = 0;
	bool widened = false;

	if (!f)
		return -1;
	bufs = arena_alloc(g->arena, sizeof(void *) * (size_t)(n->n_in + n->n_out + 1));
	for (int i = 0; i < n->n_in; i++)
		if (node_in(g, n, i))
			bufs[k++] = node_in(g, n, i)->data;
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);
		size_t bytes = (size_t)shape_numel_static(&v->shape) * dtype_size(v->dtype);

		v->data = fold_out(g, n, v, bytes, &widened);
		bufs[k++] = v->data;
	}
	if (!widened && tir_interpret(f, bufs, NULL) < 0) {
		for (int i = 0; i < n->n_out; i++)
			node_out(g, n, i)->data = NULL;
		return 0;	/* leave it to run time */
	}
	n->dead = true;
	for (int i = 0; i < n->n_out; i++)
		node_out(g, n, i)->producer = -1;
	return 0;
}

int fold_try(struct graph *g, struct node *n)
{
	if (n->dead || !foldable(g, n))
		return 0;
	return fold_node(g, n);
}

int pass_fold(struct graph *g)
{
	if (pass_widen(g) < 0)
		return -1;
	for (int i = 0; i < g->nodes.n; i++)
		if (fold_try(g, &g->nodes.v[i]) < 0)
			return -1;
	graph_compact(g);
	return 0;
}
