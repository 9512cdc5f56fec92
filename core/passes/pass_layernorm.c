/*
 * pass_layernorm.c - merges LayerNormalization written out as elementwise
 * ops and reductions, the way exporters before opset 17 write it (and
 * PyTorch's and Hugging Face's exports still do at opset 13/14),
 *
 *   mean = ReduceMean(x, axes)            axes: the last k axes, keepdims
 *   d    = Sub(x, mean)
 *   var  = ReduceMean(Pow(d, 2), axes)     or Mul(d, d)
 *   y    = Div(d, Sqrt(Add(var, eps)))     eps a constant scalar
 *   y    = Mul(y, scale)                   optional, scale constant
 *   y    = Add(y, bias)                    optional, bias constant
 *
 * into one LayerNormalization(x, scale, bias, axis, epsilon) node, which
 * every target lowers as one kernel (c: the statistics and the scaling in
 * one loop nest per row; dnnl: its layer normalization primitive) instead
 * of four to seven kernels with three intermediates in memory.
 *
 * The node computes (x - mean) * (1 / sqrt(var + eps)) where the written-out
 * form divides by the square root: the results differ by rounding only
 * (a few ulp). Every intermediate must have no other reader and not be a
 * graph output; scale and bias must broadcast over the normalised axes
 * only. The merged node stands where the last node of the chain stood,
 * with its name and output and the spans of all of them.
 */
#include "passes.h"
#include "../ops/ops.h"

#include <stdlib.h>
#include <string.h>

/*
 * Per value: how many times live nodes read it (+1 for a graph output; a
 * node reading it twice counts twice), and its first and last readers.
 */
struct readers {
	int *count, *first, *node;
};

static void readers_count(struct graph *g, struct readers *r)
{
	r->count = xcalloc((size_t)g->values.n + 1, sizeof(int));
	r->first = xcalloc((size_t)g->values.n + 1, sizeof(int));
	r->node = xcalloc((size_t)g->values.n + 1, sizeof(int));
	for (int v = 0; v < g->values.n; v++)
		r->count[v] = (g->values.v[v].flags & VALUE_OUTPUT) ? 1 : 0;
	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];

		for (int j = 0; j < n->n_in && !n->dead; j++)
			if (n->in[j] >= 0) {
				if (!r->count[n->in[j]]++)
					r->first[n->in[j]] = i;
				r->node[n->in[j]] = i;
			}
	}
}

/* The one node that reads value v with op op, or NULL (other readers, or output). */
static struct node *sole_reader(struct graph *g, const struct readers *r, int v, enum op op)
{
	struct node *n;

	if (v < 0 || r->count[v] != 1)
		return NULL;
	n = &g->nodes.v[r->node[v]];
	return n->op == op && n->n_out == 1 ? n : NULL;
}

/* Input of binary node n that is not value v, or -1 when neither or both are v. */
static int other_input(const struct node *n, int v)
{
	if (n->n_in != 2)
		return -1;
	if (n->in[0] == v && n->in[1] != v)
		return n->in[1];
	if (n->in[1] == v && n->in[0] != v)
		return n->in[0];
	return -1;
}

/*
 * The first reduced axis of ReduceMean n over x when it reduces the last
 * axes of x with keepdims; -1 when it reduces anything else.
 */
static int trailing_axis(struct graph *g, const struct node *n, const struct value *x)
{
	int64_t *ax, cnt;
	bool red[MAX_RANK] = { false };
	int first = x->shape.rank;

	if (n->n_in < 2 || !node_in(g, n, 1) || node_attr_int(n, "keepdims", 1) != 1 ||
	    value_const_ints(g, node_in(g, n, 1), &ax, &cnt) < 0 || cnt < 1 ||
	    cnt > x->shape.rank)
		return -1;
	for (int64_t i = 0; i < cnt; i++) {
		int64_t a = ax[i] < 0 ? ax[i] + x->shape.rank : ax[i];

		if (a < 0 || a >= x->shape.rank || red[a])
			return -1;
		red[a] = true;
		if (a < first)
			first = (int)a;
	}
	return first + cnt == x->shape.rank ? first : -1;
}

/* Whether constant p broadcasts over x's axes from axis on only (float32, no larger than x). */
static bool normalised_param(const struct value *p, const struct value *x, int axis)
{
	int off;

	if (!p || !p->data || p->dtype != DTYPE_F32 || p->shape.rank > x->shape.rank - axis)
		return false;
	off = x->shape.rank - p->shape.rank;
	for (int k = 0; k < p->shape.rank; k++) {
		struct dim d = p->shape.d[k];

		if (!dim_is_const(d) || (d.c != 1 && !dim_eq(d, x->shape.d[off + k])))
			return false;
	}
	return true;
}

/* Whether node n squares value d: Pow(d, 2) or Mul(d, d). */
static bool squares(struct graph *g, const struct node *n, int d)
{
	double two;

	if (n->n_in != 2 || n->n_out != 1 || n->in[0] != d)
		return false;
	if (n->op == OP_MUL)
		return n->in[1] == d;
	return n->op == OP_POW && value_const_scalar(g, node_in(g, n, 1), &two) && two == 2.0;
}

/*
 * The sole reader of y with op op (Mul: the scale; Add: the bias) whose
 * other input is a constant over x's normalised axes and whose output has
 * x's shape; its other input in *param (-1 when there is none: NULL).
 */
static struct node *affine(struct graph *g, const struct readers *r, int y, enum op op,
			   const struct value *x, int axis, int *param)
{
	struct node *n = sole_reader(g, r, y, op);
	int p = n ? other_input(n, y) : -1;

	*param = -1;
	if (p < 0 || !normalised_param(&g->values.v[p], x, axis) ||
	    !shape_eq(&node_out(g, n, 0)->shape, &x->shape))
		return NULL;
	*param = p;
	return n;
}

/* Ones over the normalised axes of x (static), for a chain without a scale; -1 when not static. */
static int ones_scale(struct graph *g, const struct value *x, int axis, const char *name)
{
	struct shape s = { 0 };
	int64_t n = 1;
	float *one;

	for (int k = axis; k < x->shape.rank; k++) {
		if (!dim_is_const(x->shape.d[k]))
			return -1;
		s.d[s.rank++] = x->shape.d[k];
		n *= x->shape.d[k].c;
	}
	one = arena_alloc(g->arena, sizeof(float) * (size_t)n);
	for (int64_t i = 0; i < n; i++)
		one[i] = 1.0f;
	return graph_add_const(g, arena_printf(g->arena, "%s.ones", name), DTYPE_F32, &s, one);
}

/* The chain from ReduceMean m1, when it is one: its nodes, the last one's output, scale, bias. */
struct chain {
	struct node *nodes[9];
	int n, axis, scale, bias;
	double eps;
};

static bool match(struct graph *g, const struct readers *r, struct node *m1, struct chain *c)
{
	struct value *x = node_in(g, m1, 0);
	struct node *sub, *sq, *other, *m2, *add, *rt, *div, *mul, *bias;
	int d, y;
	double e;

	if (!x || x->dtype != DTYPE_F32 || !x->has_shape || m1->n_out != 1 ||
	    (c->axis = trailing_axis(g, m1, x)) < 0)
		return false;
	sub = sole_reader(g, r, m1->out[0], OP_SUB);
	if (!sub || sub->in[0] != m1->in[0] || sub->in[1] != m1->out[0])
		return false;
	/*
	 * d: read by the square and by the Div and nothing else, so they are
	 * its first and last readers (Mul(d, d) reads it twice)
	 */
	d = sub->out[0];
	sq = &g->nodes.v[r->first[d]];
	other = &g->nodes.v[r->node[d]];
	if (!squares(g, sq, d)) {
		other = sq;
		sq = &g->nodes.v[r->node[d]];
	}
	if (!squares(g, sq, d) || sq == other || r->count[d] != 2 + (sq->op == OP_MUL))
		return false;
	m2 = sole_reader(g, r, sq->out[0], OP_REDUCEMEAN);
	if (!m2 || m2->in[0] != sq->out[0] || trailing_axis(g, m2, x) != c->axis)
		return false;
	add = sole_reader(g, r, m2->out[0], OP_ADD);
	if (!add || !value_const_scalar(g, node_in(g, add, add->in[0] == m2->out[0]), &e) ||
	    other_input(add, m2->out[0]) < 0 || !(e >= 0))
		return false;
	rt = sole_reader(g, r, add->out[0], OP_SQRT);
	if (!rt)
		return false;
	div = sole_reader(g, r, rt->out[0], OP_DIV);
	if (div != other || div->in[0] != d || div->in[1] != rt->out[0] ||
	    !shape_eq(&node_out(g, div, 0)->shape, &x->shape))
		return false;
	c->eps = e;
	c->n = 0;
	c->nodes[c->n++] = m1;
	c->nodes[c->n++] = sub;
	c->nodes[c->n++] = sq;
	c->nodes[c->n++] = m2;
	c->nodes[c->n++] = add;
	c->nodes[c->n++] = rt;
	c->nodes[c->n++] = div;
	y = div->out[0];
	if ((mul = affine(g, r, y, OP_MUL, x, c->axis, &c->scale))) {
		c->nodes[c->n++] = mul;
		y = mul->out[0];
	}
	if ((bias = affine(g, r, y, OP_ADD, x, c->axis, &c->bias)))
		c->nodes[c->n++] = bias;
	return true;
}

/* Turns the chain's last node into the LayerNormalization; the others die. */
static bool merge(struct graph *g, struct chain *c)
{
	struct node *last = c->nodes[c->n - 1];
	int x = c->nodes[0]->in[0], scale = c->scale, *in;
	struct span sp = { 0 };

	if (scale < 0 && (scale = ones_scale(g, &g->values.v[x], c->axis, last->name)) < 0)
		return false;
	in = arena_alloc(g->arena, sizeof(int) * 3);
	in[0] = x;
	in[1] = scale;
	in[2] = c->bias;
	last->op = OP_LAYERNORMALIZATION;
	last->op_type = "LayerNormalization";
	last->in = in;
	last->n_in = c->bias >= 0 ? 3 : 2;
	last->n_attrs = 0;
	last->attrs = NULL;
	node_set_attr_int(g, last, "axis", c->axis);
	node_set_attr_float(g, last, "epsilon", c->eps);
	node_set_attr_int(g, last, "stash_type", 1);
	/* the span in graph order */
	for (int i = 0; i < c->n; i++) {
		span_add(g, &sp, &c->nodes[i]->span);
		c->nodes[i]->dead = i < c->n - 1;
	}
	last->span = sp;
	return true;
}

int pass_layernorm(struct graph *g)
{
	struct readers r;

	readers_count(g, &r);
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];
		struct chain c;

		/* the counts of a merged chain's values are stale, but none is read again */
		if (!n->dead && n->op == OP_REDUCEMEAN && match(g, &r, n, &c))
			merge(g, &c);
	}
	free(r.count);
	free(r.first);
	free(r.node);
	merge_attention(g);
	graph_compact(g);
	return 0;
}
