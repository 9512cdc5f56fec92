/*
 * pass_fold_bn.c - folds an inference BatchNormalization into the Conv that
 * feeds it, when the Conv's weight and bias and all BN parameters are
 * constants and nothing else reads the Conv's output:
 *   W'[o] = W[o] * s[o],  b'[o] = (b[o] - mean[o]) * s[o] + beta[o],
 *   s = scale / sqrt(var + eps).
 * The Conv takes over the BN's output and both spans.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

static bool const_f32(struct value *v)
{
	return v && v->data && v->dtype == DTYPE_F32;
}

/*
 * Whether constant value wv's buffer is its alone to rewrite: only one node
 * reads it, it is no graph output, and no other value holds the same
 * buffer (initializers are adopted from the model as unpacked, and one a
 * function imports at each of its calls is shared by the calls), and it
 * is no derived constant (a widened float16 weight, which the compiled
 * model makes again at open from its source).
 */
static bool weight_exclusive(struct graph *g, int wv)
{
	const void *data = g->values.v[wv].data;

	if (graph_value_readers(g, wv, NULL) != 1 || graph_derived_of(g, data))
		return false;
	for (int v = 0; v < g->values.n; v++)
		if (v != wv && g->values.v[v].data == data)
			return false;
	return true;
}

/*
 * The folded weights overwrite the old ones where those are the Conv's
 * alone (the usual case): a model's weights are then held once, not once
 * more for every folded Conv.
 */
static void fold(struct graph *g, struct node *conv, struct node *bn)
{
	struct value *w = node_in(g, conv, 1), *b = node_in(g, conv, 2);
	const float *scale = node_in(g, bn, 1)->data, *beta = node_in(g, bn, 2)->data;
	const float *mean = node_in(g, bn, 3)->data, *var = node_in(g, bn, 4)->data;
	double eps = node_attr_float(bn, "epsilon", 1e-5);
	int64_t oc = w->shape.d[0].c, per = shape_numel_static(&w->shape) / oc;
	float *nw = weight_exclusive(g, conv->in[1]) ? w->data
		    : arena_alloc(g->arena, sizeof(float) * (size_t)(oc * per));
	float *nb = arena_alloc(g->arena, sizeof(float) * (size_t)oc);
	struct shape bs = { 1, { { oc, 0, { 0 } } } }, ws = w->shape;
	int *in;

	for (int64_t o = 0; o < oc; o++) {
		double s = scale[o] / sqrt((double)var[o] + eps);
		double b0 = b ? ((const float *)b->data)[o] : 0.0;

		for (int64_t k = 0; k < per; k++)
			nw[o * per + k] = (float)(((const float *)w->data)[o * per + k] * s);
		nb[o] = (float)((b0 - mean[o]) * s + beta[o]);
	}
	/* graph_add_const may move g->values: w and b are not used below */
	in = arena_alloc(g->arena, sizeof(int) * 3);
	in[0] = conv->in[0];
	in[1] = graph_adopt_const(g, arena_printf(g->arena, "%s.folded_W", conv->name),
				  DTYPE_F32, &ws, nw);
	in[2] = graph_adopt_const(g, arena_printf(g->arena, "%s.folded_B", conv->name),
				  DTYPE_F32, &bs, nb);
	conv->in = in;
	conv->n_in = 3;
	conv->out[0] = bn->out[0];
	span_add(g, &conv->span, &bn->span);
	bn->dead = true;
}

int pass_fold_bn(struct graph *g)
{
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *bn = &g->nodes.v[i];
		struct value *x;
		struct node *conv;
		bool ok = true;

		/* training mode normalises by the batch's statistics, not the inputs */
		if (bn->dead || bn->op != OP_BATCHNORMALIZATION || bn->n_out != 1 ||
		    node_attr_int(bn, "training_mode", 0))
			continue;
		x = node_in(g, bn, 0);
		if (!x || x->producer < 0)
			continue;
		conv = &g->nodes.v[x->producer];
		if (conv->op != OP_CONV || conv->dead || graph_value_readers(g, conv->out[0], NULL) != 1)
			continue;
		if (!const_f32(node_in(g, conv, 1)) || (node_in(g, conv, 2) &&
							!const_f32(node_in(g, conv, 2))))
			continue;
		for (int j = 1; j < 5; j++)
			ok &= const_f32(node_in(g, bn, j));
		if (!ok)
			continue;
		fold(g, conv, bn);
	}
	graph_compact(g);
	return 0;
}
