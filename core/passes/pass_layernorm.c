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
 * It merges RMSNormalization written out as well, the way torch's exporter
 * writes LlamaRMSNorm (and T5's, Gemma's and Mistral's norms),
 *
 *   x    = Cast(x0, to=float32)            optional (x0 float16, bfloat16, ...)
 *   ms   = ReduceMean(Pow(x, 2), axes)     or Mul(x, x); the last k axes, keepdims
 *   r    = Reciprocal(Sqrt(Add(ms, eps)))  or Div(1, Sqrt(..)), Pow(.., -0.5)
 *   y    = Mul(x, r)                       or y = Div(x, Sqrt(Add(ms, eps)))
 *   y    = Cast(y, to=T)                   optional, only before a T scale
 *   y    = Mul(y, scale)                   optional, scale constant
 *
 * into one RMSNormalization(x0, scale, axis, epsilon, stash_type=float32)
 * node, one kernel instead of two to six. x itself may have other readers
 * (the residual stream does); Add, Mul and the scale's Mul commute.
 *
 * The nodes compute x * (1 / sqrt(var + eps)) where the written-out form
 * may divide by the square root or raise to -0.5: the results differ by
 * rounding only (a few ulp). Every intermediate must have no other reader
 * and not be a graph output; scale and bias must broadcast over the
 * normalised axes only (a scale that does not stays a Mul after the merged
 * node). The merged node stands where the last node of the chain stood,
 * with its name and output and the spans of all of them.
 *
 * A chain in float16 or bfloat16 (a model converted to float16 whole, as
 * onnxruntime.transformers.float16 and onnxconverter-common write it)
 * merges the same way; its node then computes in float32 between Casts
 * (pass_widen.c), rounding once where each op of the chain rounded: the
 * row kernels instead of seven 16-bit loops that convert every element
 * (bert_tiny in float16: 0.13 ms a LayerNorm, 0.005 merged).
 */
#include "passes.h"
#include "../ops/ops.h"

#include <stdlib.h>
#include <string.h>

#include "../../runtime/rt_half.h"

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

/* Whether constant p of type t broadcasts over x's axes from axis on only (no larger than x). */
static bool normalised_param(const struct value *p, enum dtype t, const struct value *x, int axis)
{
	int off;

	if (!p || !p->data || p->dtype != t || p->shape.rank > x->shape.rank - axis)
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
	if (p < 0 || !normalised_param(&g->values.v[p], g->values.v[y].dtype, x, axis) ||
	    !shape_eq(&node_out(g, n, 0)->shape, &x->shape))
		return NULL;
	*param = p;
	return n;
}

/*
 * Ones of x's dtype over the normalised axes of x (static), for a chain
 * without a scale; -1 when not static.
 */
static int ones_scale(struct graph *g, const struct value *x, int axis, const char *name)
{
	struct shape s = { 0 };
	int64_t n = 1;

	for (int k = axis; k < x->shape.rank; k++) {
		if (!dim_is_const(x->shape.d[k]))
			return -1;
		s.d[s.rank++] = x->shape.d[k];
		n *= x->shape.d[k].c;
	}
	if (dtype_is_half(x->dtype)) {
		uint16_t *one = arena_alloc(g->arena, sizeof(uint16_t) * (size_t)n);

		for (int64_t i = 0; i < n; i++)
			one[i] = x->dtype == DTYPE_F16 ? rt_f2h(1.0f) : rt_f2bf(1.0f);
		return graph_add_const(g, arena_printf(g->arena, "%s.ones", name), x->dtype, &s,
				       one);
	} else {
		float *one = arena_alloc(g->arena, sizeof(float) * (size_t)n);

		for (int64_t i = 0; i < n; i++)
			one[i] = 1.0f;
		return graph_add_const(g, arena_printf(g->arena, "%s.ones", name), DTYPE_F32, &s,
				       one);
	}
}

/*
 * The types a chain may compute in: float32, or float16 and bfloat16 (the
 * merged node is then widened as the fold pass widens the others).
 */
static bool chain_type(enum dtype t)
{
	return t == DTYPE_F32 || dtype_is_half(t);
}

/*
 * The chain from ReduceMean m1, when it is one: its nodes in graph order,
 * the op it becomes, the value it normalises, scale, bias.
 */
struct chain {
	struct node *nodes[10];
	int n, axis, x, scale, bias;
	enum op op;
	double eps;
};

static bool match(struct graph *g, const struct readers *r, struct node *m1, struct chain *c)
{
	struct value *x = node_in(g, m1, 0);
	struct node *sub, *sq, *other, *m2, *add, *rt, *div, *mul, *bias;
	int d, y;
	double e;

	if (!x || !chain_type(x->dtype) || !x->has_shape || m1->n_out != 1 ||
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
	c->op = OP_LAYERNORMALIZATION;
	c->x = m1->in[0];
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

/* Whether dtype t is one a Cast around an RMS chain may convert from or to. */
static bool rms_cast_type(enum dtype t)
{
	return t == DTYPE_F32 || t == DTYPE_F16 || t == DTYPE_BF16 || t == DTYPE_F64;
}

/*
 * From the eps Add's output a to y = x * (1 / sqrt(a)): Reciprocal(Sqrt),
 * Div(1, Sqrt) or Pow(a, -0.5), then Mul with x (either order); or
 * Div(x, Sqrt(a)). Appends the nodes to c; NULL when a is read otherwise.
 */
static struct node *rms_scale_by_rsqrt(struct graph *g, const struct readers *r, int a, int x,
				       struct chain *c)
{
	struct node *rt = sole_reader(g, r, a, OP_SQRT), *inv = NULL, *mul;
	double k;

	if (rt) {
		struct node *n;

		c->nodes[c->n++] = rt;
		if (r->count[rt->out[0]] != 1)
			return NULL;
		n = &g->nodes.v[r->node[rt->out[0]]];
		if (n->op == OP_DIV && n->n_out == 1 && n->in[0] == x && n->in[1] == rt->out[0])
			return c->nodes[c->n++] = n;	/* Div(x, Sqrt(a)) */
		if ((n->op == OP_RECIPROCAL && n->n_out == 1) ||
		    (n->op == OP_DIV && n->n_out == 1 && n->in[1] == rt->out[0] &&
		     value_const_scalar(g, node_in(g, n, 0), &k) && k == 1.0))
			inv = n;
	} else if ((inv = sole_reader(g, r, a, OP_POW)) &&
		   !(inv->in[0] == a && value_const_scalar(g, node_in(g, inv, 1), &k) &&
		     k == -0.5)) {
		inv = NULL;
	}
	if (!inv)
		return NULL;
	c->nodes[c->n++] = inv;
	mul = sole_reader(g, r, inv->out[0], OP_MUL);
	if (!mul || other_input(mul, inv->out[0]) != x)
		return NULL;
	return c->nodes[c->n++] = mul;
}

/*
 * The RMS chain whose ReduceMean is m, when it is one (see the top of the
 * file). The normalised value x is the square's input, or the input of the
 * Cast to float32 that made it when the chain reads the Cast's output only.
 */
static bool match_rms(struct graph *g, const struct readers *r, struct node *m, struct chain *c)
{
	struct value *sqv = node_in(g, m, 0), *xv;
	struct node *sq, *add, *y, *cast, *mul, *c0 = NULL;
	int x, out;
	double e;

	if (!sqv || sqv->producer < 0 || m->n_out != 1 || r->count[m->in[0]] != 1)
		return false;
	sq = &g->nodes.v[sqv->producer];
	x = sq->n_in == 2 ? sq->in[0] : -1;
	if (x < 0 || sq->dead || !squares(g, sq, x) || sq->out[0] != m->in[0])
		return false;
	xv = &g->values.v[x];
	if (!chain_type(xv->dtype) || !xv->has_shape || (c->axis = trailing_axis(g, m, xv)) < 0)
		return false;
	/* x made by a Cast to float32 that only the chain reads: the Cast goes too */
	if (xv->producer >= 0) {
		struct node *p = &g->nodes.v[xv->producer];
		const struct value *x0 = node_in(g, p, 0);

		if (p->op == OP_CAST && p->n_out == 1 && x0 && rms_cast_type(x0->dtype) &&
		    r->count[x] == 2 + (sq->op == OP_MUL))
			c0 = p;
	}
	add = sole_reader(g, r, m->out[0], OP_ADD);
	if (!add || other_input(add, m->out[0]) < 0 ||
	    !value_const_scalar(g, node_in(g, add, add->in[0] == m->out[0]), &e) || !(e >= 0))
		return false;
	c->n = 0;
	if (c0)
		c->nodes[c->n++] = c0;
	c->nodes[c->n++] = sq;
	c->nodes[c->n++] = m;
	c->nodes[c->n++] = add;
	y = rms_scale_by_rsqrt(g, r, add->out[0], x, c);
	if (!y || !shape_eq(&node_out(g, y, 0)->shape, &xv->shape))
		return false;
	/* Cast(y, to=T) goes only with a scale of type T after it */
	out = y->out[0];
	cast = sole_reader(g, r, out, OP_CAST);
	if (cast && rms_cast_type(node_out(g, cast, 0)->dtype) &&
	    (mul = affine(g, r, cast->out[0], OP_MUL, xv, c->axis, &c->scale))) {
		c->nodes[c->n++] = cast;
		c->nodes[c->n++] = mul;
	} else if ((mul = affine(g, r, out, OP_MUL, xv, c->axis, &c->scale))) {
		c->nodes[c->n++] = mul;
	}
	c->op = OP_RMSNORMALIZATION;
	c->x = c0 ? c0->in[0] : x;
	c->bias = -1;
	c->eps = e;
	return true;
}

/* Turns the chain's last node into the LayerNormalization or RMSNormalization; the others die. */
static bool merge(struct graph *g, struct chain *c)
{
	struct node *last = c->nodes[c->n - 1];
	int x = c->x, scale = c->scale, *in;
	struct span sp = { 0 };

	if (scale < 0 && (scale = ones_scale(g, &g->values.v[x], c->axis, last->name)) < 0)
		return false;
	in = arena_alloc(g->arena, sizeof(int) * 3);
	in[0] = x;
	in[1] = scale;
	in[2] = c->bias;
	last->op = c->op;
	last->op_type = c->op == OP_RMSNORMALIZATION ? "RMSNormalization" : "LayerNormalization";
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
	bool half = false;

	readers_count(g, &r);
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];
		struct chain c;

		/* the counts of a merged chain's values are stale, but none is read again */
		if (!n->dead && n->op == OP_REDUCEMEAN &&
		    (match(g, &r, n, &c) || match_rms(g, &r, n, &c)) && merge(g, &c))
			half |= dtype_is_half(node_out(g, c.nodes[c.n - 1], 0)->dtype);
	}
	free(r.count);
	free(r.first);
	free(r.node);
	merge_attention(g);
	graph_compact(g);
	if (!half)
		return 0;
	/*
	 * A float16 or bfloat16 chain merged: its node runs in float32 between
	 * Casts like those the fold pass widened (its scale's and bias's Casts
	 * folded the same way), not in the 16-bit loops
	 */
	if (pass_widen(g) < 0)
		return -1;
	for (int i = 0; i < g->nodes.n; i++)
		if (g->nodes.v[i].op == OP_CAST && fold_try(g, &g->nodes.v[i]) < 0)
			return -1;
	graph_compact(g);
	return 0;
}
