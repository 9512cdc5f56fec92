/*
 * pass_rnn_project.c - takes the input projections out of RNN, GRU and
 * LSTM nodes whose weight W is a constant: X . W^T for every time step,
 * direction and gate is one MatMul over all of X,
 *
 *   XW = MatMul(X, W_T)     X [seq, batch, input] (layout 1: [batch, seq,
 *                           input]), W_T [input, dirs * G * hidden] the
 *                           constant W [dirs, G * hidden, input] transposed
 *
 * which the blas target (and the Collage search) can take, and the node
 * reads XW in place of X. Its input 1 (W, required by ONNX) is left absent:
 * that is how its lowering (ops_rnn.c) knows the form; only this pass makes
 * it. The MatMul keeps the node's span and its ONNX index for messages.
 */
#include "passes.h"
#include "../ops/ops.h"

#include <string.h>

static bool is_rnn(enum op op)
{
	return op == OP_RNN || op == OP_GRU || op == OP_LSTM;
}

/* W [D, GH, I] as W_T [I, D * GH], element by element (f32 or f64). */
static void *transpose_w(struct graph *g, const struct value *w)
{
	int64_t dgh = w->shape.d[0].c * w->shape.d[1].c, in = w->shape.d[2].c;
	size_t es = dtype_size(w->dtype);
	const unsigned char *src = w->data;
	unsigned char *dst = arena_alloc(g->arena, es * (size_t)(dgh * in));

	for (int64_t r = 0; r < dgh; r++)
		for (int64_t k = 0; k < in; k++)
			memcpy(dst + es * (size_t)(k * dgh + r), src + es * (size_t)(r * in + k), es);
	return dst;
}

static void project(struct graph *g, int i)
{
	struct node *n = &g->nodes.v[i], *m;
	const struct value *w = node_in(g, n, 1);
	struct shape ts = { 2, { w->shape.d[2], dim_const(w->shape.d[0].c * w->shape.d[1].c) } };
	void *data = transpose_w(g, w);
	int in[2], xw, mi;

	/* graph_add_const and graph_add_value may move g->values: w is not used below */
	in[0] = n->in[0];
	in[1] = graph_add_const(g, arena_printf(g->arena, "%s.W_T", n->name), w->dtype, &ts, data);
	xw = graph_add_value(g, arena_printf(g->arena, "%s.XW", n->name));
	mi = graph_add_node(g, OP_MATMUL, arena_printf(g->arena, "%s.XW", n->name), in, 2, &xw, 1);
	m = &g->nodes.v[mi];
	n = &g->nodes.v[i];
	m->op_type = op_info(OP_MATMUL)->name;
	m->onnx_index = n->onnx_index;
	span_add(g, &m->span, &n->span);
	if (op_info(OP_MATMUL)->infer(g, m) < 0)
		BUG("%s: the projection MatMul does not infer", n->name);
	n->in[0] = xw;
	n->in[1] = -1;
}

int pass_rnn_project(struct graph *g)
{
	int count = g->nodes.n, done = 0;

	for (int i = 0; i < count; i++) {
		struct node *n = &g->nodes.v[i];
		const struct value *x, *w;

		if (n->dead || !is_rnn(n->op))
			continue;
		x = node_in(g, n, 0);
		w = node_in(g, n, 1);
		/* a failed inference left the node without shapes: nothing to do */
		if (!x || !w || !w->data || !x->has_shape || !w->has_shape ||
		    !shape_is_static(&w->shape) || w->shape.rank != 3 ||
		    !dim_eq(x->shape.d[2], w->shape.d[2]))
			continue;
		project(g, i);
		done++;
	}
	return done ? graph_toposort(g) : 0;
}
