/*
 * pass_widen.c - float16 and bfloat16 MatMul, Gemm, Conv, ConvTranspose,
 * the pools, Softmax, LogSoftmax, LayerNormalization, RMSNormalization and
 * Attention (of one output) computed in float32 by the float32 kernels:
 *
 *   y = MatMul(a, b)    a, b, y float16
 *   =>
 *   a' = Cast(a, to=FLOAT)  b' = Cast(b, to=FLOAT)
 *   y' = MatMul(a', b')     y = Cast(y', to=FLOAT16)
 *
 * Every target computes a 16-bit node in float already (a load widens, a
 * store rounds once, to nearest even: runtime/rt_half.h), so the results
 * are those of the node, the sum's order aside; but only float32 has the
 * GEMM, convolution and row kernels (rt_cgemm.h, rt_crows.h, OpenBLAS,
 * oneDNN): a float16
 * MatMul of 64 x 512 x 512 took 297 ms in the loop nest that converts each
 * element it loads, 1.2 ms so. The fold pass runs this first, then folds
 * a constant input's Cast, so the weights are converted once, at compile
 * time, and stored as float32 (twice their bytes in OUT.so). One Cast per
 * value, however many nodes read it. The new nodes carry the node's span
 * and ONNX index, for messages.
 */
#include "passes.h"
#include "../ops/ops.h"

#include <stdlib.h>

static bool widens(enum op op)
{
	switch (op) {
	case OP_MATMUL: case OP_GEMM: case OP_CONV: case OP_CONVTRANSPOSE:
	case OP_AVERAGEPOOL: case OP_MAXPOOL: case OP_GLOBALAVERAGEPOOL:
	case OP_SOFTMAX: case OP_LOGSOFTMAX:
	case OP_LAYERNORMALIZATION: case OP_RMSNORMALIZATION: case OP_ATTENTION:
		return true;
	default:
		return false;
	}
}

/* A Cast node of n's from x to `to`, written into y. */
static void add_cast(struct graph *g, int ni, int x, int y, enum dtype to, const char *what)
{
	struct node *c, *n;
	int ci = graph_add_node(g, OP_CAST, arena_printf(g->arena, "%s.%s", g->nodes.v[ni].name,
							  what), &x, 1, &y, 1);

	c = &g->nodes.v[ci];
	n = &g->nodes.v[ni];
	c->op_type = op_info(OP_CAST)->name;
	c->onnx_index = n->onnx_index;
	span_add(g, &c->span, &n->span);
	node_set_attr_int(g, c, "to", dtype_to_onnx(to));
	if (op_info(OP_CAST)->infer(g, c) < 0)
		BUG("%s: the widening Cast does not infer", n->name);
}

/*
 * Whether n has one output, of a 16-bit float type t, and every float value
 * it reads is of t too (a mask of bools, an index of integers stay).
 */
static bool half_node(struct graph *g, const struct node *n, enum dtype *t)
{
	const struct value *y = node_out(g, n, 0);

	if (n->n_out != 1 || !y || !y->has_shape || !dtype_is_half(y->dtype))
		return false;
	*t = y->dtype;
	for (int i = 0; i < n->n_in; i++) {
		const struct value *v = node_in(g, n, i);

		if (v && (!v->has_shape || (dtype_is_float(v->dtype) && v->dtype != *t)))
			return false;
	}
	return true;
}

int pass_widen(struct graph *g)
{
	int count = g->nodes.n, nv = g->values.n, done = 0;
	int *wide = NULL;	/* per value of the graph as it came: its float32 Cast, or -1 */

	for (int i = 0; i < count; i++) {
		struct node *n = &g->nodes.v[i];
		enum dtype t;
		int y, y32;

		if (n->dead || !widens(n->op) || !half_node(g, n, &t))
			continue;
		if (!wide) {
			wide = xcalloc((size_t)nv + 1, sizeof(int));
			for (int v = 0; v <= nv; v++)
				wide[v] = -1;
		}
		for (int k = 0; k < g->nodes.v[i].n_in; k++) {
			int x = g->nodes.v[i].in[k];

			if (x < 0 || g->values.v[x].dtype != t)
				continue;
			if (x >= nv)
				BUG("%s reads a value the widen pass made", g->nodes.v[i].name);
			if (wide[x] < 0) {
				int v = graph_add_value(g, arena_printf(g->arena, "%s.f32",
									g->values.v[x].name));

				add_cast(g, i, x, v, DTYPE_F32, arena_printf(g->arena, "in%d.f32", k));
				wide[x] = v;
			}
			g->nodes.v[i].in[k] = wide[x];
		}
		y = g->nodes.v[i].out[0];
		y32 = graph_add_value(g, arena_printf(g->arena, "%s.f32", g->values.v[y].name));
		n = &g->nodes.v[i];
		n->out[0] = y32;
		g->values.v[y32].producer = i;
		if (op_info(n->op)->infer(g, n) < 0)
			BUG("%s: the widened node does not infer", n->name);
		add_cast(g, i, y32, y, t, "out.narrow");
		done++;
	}
	free(wide);
	return done ? graph_toposort(g) : 0;
}
