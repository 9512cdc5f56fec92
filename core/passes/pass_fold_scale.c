/*
 * pass_fold_scale.c - moves a per-channel scale of a Conv's input into its
 * weights, where that is less work:
 *
 *   Conv(Mul(x, s), W)  =  Conv(x, Mul(W, s))
 *
 * x [1, C, H, W] of one image, s [1, C, 1, 1] or [C, 1, 1] (a value a run
 * computes: squeeze-and-excitation's sigmoid in EfficientNet, MobileNetV3
 * and their kin), the Conv 1x1 with group 1 and constant float weights W
 * [M, C, 1, 1], the only reader of the Mul. The Mul then scales W's M x C
 * elements instead of x's C x H x W: only done when M < H x W, so in the
 * early, large images (a 32 x 112 x 112 scale becomes 16 x 32 products),
 * not in the last 7 x 7 ones. Rounding moves from x * s to W * s: results
 * differ by an ulp or so of the products, not more.
 *
 * The Mul keeps its name, span and ONNX index; its output is a new value
 * "<conv>.scaled_W" that the Conv reads as its weights.
 */
#include "passes.h"
#include "../ops/ops.h"

static bool is_one(struct dim d)
{
	return dim_is_const(d) && d.c == 1;
}

/* s is a scale per channel of C: [1, C, 1, 1] or [C, 1, 1] */
static bool channel_scale(const struct value *s, int64_t C)
{
	const struct shape *sh = &s->shape;
	int r = sh->rank;

	if (!s->has_shape || s->dtype != DTYPE_F32 || (r != 3 && r != 4) ||
	    (r == 4 && !is_one(sh->d[0])))
		return false;
	return dim_is_const(sh->d[r - 3]) && sh->d[r - 3].c == C && is_one(sh->d[r - 2]) &&
	       is_one(sh->d[r - 1]);
}

/* Conv n is 1x1, group 1, with constant float32 weights [M, C, 1, 1] */
static bool pointwise_conv(struct graph *g, const struct node *n, int64_t C)
{
	const struct value *w = node_in(g, n, 1);

	return n->op == OP_CONV && n->n_in >= 2 && node_attr_int(n, "group", 1) == 1 && w &&
	       w->data && w->dtype == DTYPE_F32 && w->has_shape &&
	       shape_is_static(&w->shape) && w->shape.rank == 4 && w->shape.d[1].c == C &&
	       w->shape.d[2].c == 1 && w->shape.d[3].c == 1;
}

/* Mul m's input k is x, the other s: fold into Conv c when it pays. */
static bool try_fold(struct graph *g, int mi, int k)
{
	struct node *m = &g->nodes.v[mi], *c;
	const struct value *x = node_in(g, m, k), *s = node_in(g, m, 1 - k), *y;
	int ci = -1, xv, sv, wv, nw;
	int64_t C, HW;

	if (!x || !s || !x->has_shape || x->dtype != DTYPE_F32 || x->shape.rank != 4 ||
	    !shape_is_static(&x->shape) || x->shape.d[0].c != 1)
		return false;
	C = x->shape.d[1].c;
	HW = x->shape.d[2].c * x->shape.d[3].c;
	y = node_out(g, m, 0);
	if (!channel_scale(s, C) || !y || graph_value_readers(g, m->out[0], &ci) != 1 || ci < 0)
		return false;
	c = &g->nodes.v[ci];
	if (c->in[0] != m->out[0] || !pointwise_conv(g, c, C) ||
	    node_in(g, c, 1)->shape.d[0].c >= HW)
		return false;
	xv = m->in[k];
	sv = m->in[1 - k];
	wv = c->in[1];
	g->values.v[m->out[0]].producer = -1;	/* x * s is no longer made */
	/* graph_add_value may move g->values: x, s and y are not used below */
	nw = graph_add_value(g, arena_printf(g->arena, "%s.scaled_W", c->name));
	m = &g->nodes.v[mi];
	c = &g->nodes.v[ci];
	m->in[0] = wv;
	m->in[1] = sv;
	m->out[0] = nw;
	g->values.v[nw].producer = mi;
	if (op_info(OP_MUL)->infer(g, m) < 0)
		BUG("%s: the scaled weights do not infer", m->name);
	c->in[0] = xv;
	c->in[1] = nw;
	return true;
}

int pass_fold_scale(struct graph *g)
{
	int done = 0;

	for (int i = 0; i < g->nodes.n; i++) {
		struct node *m = &g->nodes.v[i];

		if (m->dead || m->op != OP_MUL || m->n_in != 2 || m->n_out != 1)
			continue;
		done += try_fold(g, i, 0) || try_fold(g, i, 1);
	}
	return done ? graph_toposort(g) : 0;
}
