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
 * stores the 16-bit weights, not twice their bytes (core/emit/plan.c),
 * of any size (a float16 LLM's 2048 x 5632 projection, past the
 * interpreter's limit, was a Cast kernel widening 46 MB every run). So
 * is a 2-D Transpose of a constant, of any size (rt_transpose2,
 * runtime/rt_plan.h): GPT-2's MatMul(h, Transpose(wte)), whose Gather
 * reads wte as it is, transposed 154 MB every run (31 ms of 185), and
 * folding it as data would have stored both.
 */
#include "passes.h"
#include "../ops/ops.h"

#include <string.h>

#include "../../runtime/rt_half.h"
#include "../../runtime/rt_plan.h"

/* Outputs larger than this stay run-time kernels (the interpreter is slow). */
#define FOLD_LIMIT (INT64_C(1) << 22)

/* Widened or transposed constants under this many bytes stay plain (a pack each costs more). */
#define DERIVE_OPEN_MIN 4096

/*
 * Whether n transposes a 2-D constant of at least DERIVE_OPEN_MIN bytes
 * whose elements are whole bytes: a derived constant (rt_transpose2).
 */
static bool transposed_const(struct graph *g, const struct node *n)
{
	const struct value *x = n->op == OP_TRANSPOSE ? node_in(g, n, 0) : NULL;
	const int64_t *perm;
	int np;

	if (!x || !x->data || !x->has_shape || x->shape.rank != 2 || !shape_is_static(&x->shape) ||
	    dtype_is_string(x->dtype) || dtype_is_subbyte(x->dtype) ||
	    (size_t)shape_numel_static(&x->shape) * dtype_size(x->dtype) < DERIVE_OPEN_MIN)
		return false;
	np = node_attr_ints(n, "perm", &perm);
	return np < 0 || (np == 2 && perm[0] == 1 && perm[1] == 0);
}

/*
 * Whether n is a Cast of a float16 or bfloat16 constant of at least
 * DERIVE_OPEN_MIN bytes widened to float32 (not already a derived one): a
 * derived constant (rt_widen16).
 */
static bool widened_const(struct graph *g, const struct node *n)
{
	const struct value *x = n->op == OP_CAST ? node_in(g, n, 0) : NULL;
	const struct value *y = n->op == OP_CAST ? node_out(g, n, 0) : NULL;

	return x && y && x->data && (x->dtype == DTYPE_F16 || x->dtype == DTYPE_BF16) &&
	       y->dtype == DTYPE_F32 && y->has_shape && shape_is_static(&y->shape) &&
	       (size_t)shape_numel_static(&y->shape) * 4 >= DERIVE_OPEN_MIN &&
	       !graph_derived_of(g, x->data);
}

static bool foldable(struct graph *g, const struct node *n)
{
	bool shape_only = n->op == OP_SHAPE || n->op == OP_SIZE;

	/* a random op gives new values per run, or by a key the folder has not */
	if (op_is_random(g, n))
		return false;
	/* any size: made, not interpreted (fold_out) */
	if (transposed_const(g, n) || widened_const(g, n))
		return true;
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

/*
 * Where n's output goes: for a Cast of a float16 or bfloat16 constant to
 * float32 or a 2-D Transpose of a constant (transposed_const), a derived
 * constant of the source, filled here (*derived) by rt_widen16 or
 * rt_transpose2 as the compiled model fills it at open; otherwise fresh
 * arena memory (*derived false) for the interpreter.
 */
/* graph_derived_lazy's fill for a widened constant: rt_widen16. */
static void widen16_fill(void *data, const void *src, const int64_t *params)
{
	rt_widen16(src, data, params);
}

static void *fold_out(struct graph *g, const struct node *n, const struct value *v,
		      size_t bytes, bool *derived)
{
	const struct value *x = node_in(g, n, 0);
	void *data;
	bool fresh;

	if (transposed_const(g, n)) {
		int64_t p[3] = { (int64_t)dtype_size(x->dtype), x->shape.d[0].c, x->shape.d[1].c };

		*derived = true;
		data = graph_derived_const(g, x->data, "transpose2", p, 3, bytes, &fresh);
		graph_derived_fill(g, x->data);		/* a large weight widened lazily */
		if (fresh)
			rt_transpose2(x->data, data, p);
		graph_derived_open(g, data, "rt_transpose2");
		return data;
	}
	*derived = widened_const(g, n);
	if (!*derived)
		return arena_alloc(g->arena, bytes ? bytes : 1);
	{
		int64_t p[2] = { x->dtype == DTYPE_BF16, (int64_t)(bytes / 4) };

		if (p[1] > FOLD_LIMIT) {
			/*
			 * made when something reads it at compile time (graph_derived_fill:
			 * the plan, the folder, a transform), not otherwise: a float16
			 * LLM's weights would have held the compile at three times their
			 * bytes
			 */
			data = graph_derived_lazy(g, x->data, "widen16", p, 2, bytes, widen16_fill);
		} else {
			data = graph_derived_const(g, x->data, "widen16", p, 2, bytes, &fresh);
			if (fresh)
				rt_widen16(x->data, data, p);
		}
		graph_derived_open(g, data, "rt_widen16");
	}
	return data;
}

static int fold_node(struct graph *g, struct node *n)
{
	struct tir_func *f = op_lower_node(g, n, "fold");
	void **bufs;
	int k = 0;
	bool derived = false;

	if (!f)
		return -1;
	bufs = arena_alloc(g->arena, sizeof(void *) * (size_t)(n->n_in + n->n_out + 1));
	for (int i = 0; i < n->n_in; i++)
		if (node_in(g, n, i)) {
			graph_derived_fill(g, node_in(g, n, i)->data);
			bufs[k++] = node_in(g, n, i)->data;
		}
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);
		size_t bytes = (size_t)shape_numel_static(&v->shape) * dtype_size(v->dtype);

		v->data = fold_out(g, n, v, bytes, &derived);
		bufs[k++] = v->data;
	}
	if (!derived && tir_interpret(f, bufs, NULL) < 0) {
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
