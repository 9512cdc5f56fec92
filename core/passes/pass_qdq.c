/*
 * pass_qdq.c - QDQ graphs, as ONNX Runtime's quantize_static and other
 * exporters write them, into integer ops: the group
 *
 *	DequantizeLinear(x) ----------------\
 *	DequantizeLinear(w, constant) ------ Conv -> [Relu/Clip] -> QuantizeLinear -> y
 *	DequantizeLinear(bias, int32) ------/
 *
 * becomes one QLinearConv node (x's and w's quantized tensors, their scales
 * and zero points, y's, the int32 bias), and DequantizeLinear(a),
 * DequantizeLinear(b, constant) -> MatMul (or a Gemm: alpha and beta 1,
 * A not transposed, B's constant transposed here when transB, C the
 * DequantizeLinear of an int32 bias as a Conv's) -> QuantizeLinear one
 * QLinearMatMul (the bias its ninth input), and DequantizeLinear(a),
 * DequantizeLinear(b) -> Add -> QuantizeLinear one QLinearAdd
 * (com.microsoft), as ONNX Runtime's QDQ transformer fuses them into its
 * integer kernels. Pools and concatenations (per-tensor x and y):
 * DequantizeLinear -> MaxPool -> QuantizeLinear becomes a MaxPool of the
 * 8-bit integers (exact where x and y have one type, scale and zero point,
 * the scale positive: dequantizing is then monotone), else that MaxPool
 * then a one-input QLinearConcat, which requantizes each max as the float
 * graph would (exact too); DequantizeLinear -> AveragePool or
 * GlobalAveragePool -> QuantizeLinear (x and y of one type) becomes
 * QLinearAveragePool or QLinearGlobalAveragePool (exact integer sums, one
 * requantization: within a unit of the float graph's); DequantizeLinears
 * -> Concat -> QuantizeLinear a Concat of the integers when every input
 * has y's type, scale and zero point, else a QLinearConcat (each input
 * requantized, exactly as the float graph). The fused node takes the QuantizeLinear's place and
 * output, and the spans of every node that dies with the fusion, so
 * metadata and dumps still name the ONNX nodes it came from.
 *
 * The pass only fuses where the integer node computes what ONNX Runtime's
 * fusion computes: x and y of one 8-bit type (uint8 with uint8 or int8
 * weights, int8 with int8; an Add's a, b and y of one), per-tensor x and y
 * (an Add's a and b), weights per tensor or per
 * output channel (axis 0; per column of B, axis 1, for MatMul), no
 * block_size, every parameter a constant, the Conv's output read by the
 * QuantizeLinear (or the Relu/Clip) alone. A bias is fused only when its
 * scale is x_scale * w_scale (the float32 product, per channel) with zero
 * point 0, as quantizers write it: the int32 values are then exactly what
 * the float graph adds. A Relu is folded when y's zero point is its
 * type's least value, a Clip when its range covers all that y can hold:
 * then QuantizeLinear saturates exactly where they would clamp (ONNX
 * Runtime's ReluQuantFusion and ClipQuantFusion). What does not match
 * stays float; the fold pass after this one turns the weights' remaining
 * DequantizeLinears into float constants. Last, pass_nbits.c turns
 * DequantizeLinear of int4/uint4 weights -> MatMul into MatMulNBits.
 */
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The live node of op op that produces value v, or NULL. */
static struct node *producer(struct graph *g, int v, enum op op)
{
	int p = v >= 0 ? g->values.v[v].producer : -1;

	if (p < 0 || g->nodes.v[p].dead || g->nodes.v[p].op != op)
		return NULL;
	return &g->nodes.v[p];
}

/* The one live node that reads v, or NULL (several readers, or a graph output). */
static struct node *sole_reader(struct graph *g, const int *count, int v)
{
	if (count[v] != 1)
		return NULL;
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		for (int j = 0; j < n->n_in && !n->dead; j++)
			if (n->in[j] == v)
				return n;
	}
	return NULL;
}

static bool is_q8(enum dtype t)
{
	return t == DTYPE_U8 || t == DTYPE_I8;
}

/* A constant of static shape, numel elements (any shape) when numel >= 0. */
static bool const_numel(const struct value *v, int64_t numel)
{
	return v && v->data && v->has_shape && shape_is_static(&v->shape) &&
	       (numel < 0 || shape_numel_static(&v->shape) == numel);
}

/*
 * Whether Quantize/DequantizeLinear n has constant float32 scale and
 * (absent or) constant zero point of one element each, and no blocks.
 */
static bool per_tensor(struct graph *g, const struct node *n)
{
	const struct value *s = node_in(g, n, 1), *z = node_in(g, n, 2);

	return node_attr_int(n, "block_size", 0) == 0 && const_numel(s, 1) &&
	       s->dtype == DTYPE_F32 && (!z || const_numel(z, 1));
}

/*
 * Whether DequantizeLinear n of a constant 8-bit tensor of rank >= 2 is
 * per tensor or per index of axis `axis` (its scale and zero point 1-D).
 */
static bool const_weights(struct graph *g, const struct node *n, int axis)
{
	const struct value *w = node_in(g, n, 0), *s = node_in(g, n, 1), *z = node_in(g, n, 2);
	int64_t a = node_attr_int(n, "axis", 1);

	if (!w || !w->data || !is_q8(w->dtype) || !w->has_shape || w->shape.rank < 2 ||
	    !shape_is_static(&w->shape))
		return false;
	if (per_tensor(g, n))
		return true;
	if (a < 0)
		a += w->shape.rank;
	return node_attr_int(n, "block_size", 0) == 0 && a == axis && const_numel(s, -1) &&
	       s->dtype == DTYPE_F32 && s->shape.rank == 1 &&
	       s->shape.d[0].c == w->shape.d[axis].c && (!z || (const_numel(z, -1) &&
								shape_eq(&z->shape, &s->shape)));
}

/* Element i of a scale (one element: element 0). */
static float scale_at(const struct value *s, int64_t i)
{
	return ((const float *)s->data)[shape_numel_static(&s->shape) == 1 ? 0 : i];
}

/* The zero point of Quantize/DequantizeLinear n as an int (absent: 0). */
static int zero_point(struct graph *g, const struct node *n)
{
	double z = 0;

	if (node_in(g, n, 2))
		value_const_scalar(g, node_in(g, n, 2), &z);
	return (int)z;
}

/*
 * Whether DequantizeLinear n of a constant int32 [M] is a Conv bias that
 * the integer sums can take as it is: zero point 0 and scale x_scale *
 * w_scale[c] for every channel c, bit for bit as float32.
 */
static bool bias_fits(struct graph *g, const struct node *n, const struct value *xs,
		      const struct value *ws, int64_t M)
{
	const struct value *b = node_in(g, n, 0), *s = node_in(g, n, 1), *z = node_in(g, n, 2);

	if (!b || b->dtype != DTYPE_I32 || !const_numel(b, M) || b->shape.rank != 1 ||
	    node_attr_int(n, "block_size", 0) || !s || s->dtype != DTYPE_F32 ||
	    !(const_numel(s, 1) || const_numel(s, M)))
		return false;
	if (z) {
		if (!const_numel(z, -1) || z->dtype != DTYPE_I32)
			return false;
		for (int64_t i = 0; i < shape_numel_static(&z->shape); i++)
			if (((const int32_t *)z->data)[i])
				return false;
	}
	for (int64_t c = 0; c < M; c++) {
		float want = scale_at(xs, 0) * scale_at(ws, c), have = scale_at(s, c);

		if (memcmp(&want, &have, sizeof(float)))
			return false;
	}
	return true;
}

/*
 * Whether Relu or Clip node a can go: QuantizeLinear q after it saturates
 * wherever it would clamp (see the top).
 */
static bool act_folds(struct graph *g, const struct node *a, const struct node *q)
{
	enum dtype t = node_out(g, q, 0)->dtype;
	float lo = t == DTYPE_U8 ? 0 : -128, hi = t == DTYPE_U8 ? 255 : 127;
	float s = scale_at(node_in(g, q, 1), 0), z = (float)zero_point(g, q);
	double mn = -INFINITY, mx = INFINITY;

	if (a->op == OP_RELU)
		return z == lo;
	if (node_in(g, a, 1) && !value_const_scalar(g, node_in(g, a, 1), &mn))
		return false;
	if (node_in(g, a, 2) && !value_const_scalar(g, node_in(g, a, 2), &mx))
		return false;
	/* as QuantizeLinear computes: rint(v / s) + z in float32 */
	return (isinf(mn) || rintf((float)mn / s) + z <= lo) &&
	       (isinf(mx) || rintf((float)mx / s) + z >= hi);
}

/* The most inputs of a Concat the pass makes a QLinearConcat of. */
#define QDQ_MAX_CONCAT 32

/* A fusion: its nodes (the last one becomes the integer node) and inputs. */
struct fusion {
	struct node *dead[QDQ_MAX_CONCAT + 2];	/* the nodes that go, in graph order */
	int n_dead;
	int in[3 * QDQ_MAX_CONCAT + 2];		/* the integer node's inputs */
	int n_in;
};

/*
 * The zero point input of Quantize/DequantizeLinear n, made a constant 0 of
 * type t when it has none. Adding a value may move g->values.
 */
static int zp_input(struct graph *g, const struct node *n, enum dtype t)
{
	static const struct shape scalar;
	uint8_t zero = 0;

	if (n->n_in > 2 && n->in[2] >= 0)
		return n->in[2];
	return graph_add_const(g, arena_printf(g->arena, "%s.zero_point.%d", n->name, g->values.n),
			       t, &scalar, &zero);
}

/*
 * The last node of the chain after `op` (its output read by one node: Q,
 * or a foldable Relu/Clip then Q) into f; the QuantizeLinear, or NULL.
 */
static struct node *take_tail(struct graph *g, const int *count, struct node *op,
			      struct fusion *f)
{
	struct node *q = sole_reader(g, count, op->out[0]), *act = NULL;

	if (q && (q->op == OP_RELU || q->op == OP_CLIP) && q->n_out == 1 && q->in[0] == op->out[0]) {
		act = q;
		q = sole_reader(g, count, act->out[0]);
	}
	if (!q || q->op != OP_QUANTIZELINEAR || q->in[0] != (act ? act : op)->out[0] ||
	    !per_tensor(g, q) || !is_q8(node_out(g, q, 0)->dtype) ||
	    (act && !act_folds(g, act, q)))
		return NULL;
	f->dead[f->n_dead++] = op;
	if (act)
		f->dead[f->n_dead++] = act;
	return q;
}

/* The DequantizeLinear dq goes with the fusion when the fused node was its only reader. */
static void take_dq(const int *count, struct node *dq, struct fusion *f)
{
	if (count[dq->out[0]] == 1)
		f->dead[f->n_dead++] = dq;
}

/* Types ONNX Runtime's integer kernels take: x and y alike, int8 x with int8 w. */
static bool types_ok(enum dtype x, enum dtype w, enum dtype y)
{
	return is_q8(x) && is_q8(w) && x == y && (x == DTYPE_U8 || w == DTYPE_I8);
}

/* Matches the Conv group at conv into f; the QuantizeLinear, or NULL. */
static struct node *match_conv(struct graph *g, const int *count, struct node *conv,
			       struct fusion *f)
{
	struct node *dqx = producer(g, conv->in[0], OP_DEQUANTIZELINEAR);
	struct node *dqw = conv->n_in > 1 ? producer(g, conv->in[1], OP_DEQUANTIZELINEAR) : NULL;
	struct node *dqb = NULL, *q;
	int64_t M;

	if (!dqx || !dqw || !per_tensor(g, dqx) || !const_weights(g, dqw, 0))
		return NULL;
	M = node_in(g, dqw, 0)->shape.d[0].c;
	if (conv->n_in > 2 && conv->in[2] >= 0) {
		dqb = producer(g, conv->in[2], OP_DEQUANTIZELINEAR);
		if (!dqb || !bias_fits(g, dqb, node_in(g, dqx, 1), node_in(g, dqw, 1), M))
			return NULL;
	}
	f->n_dead = 0;
	take_dq(count, dqx, f);
	take_dq(count, dqw, f);
	if (dqb)
		take_dq(count, dqb, f);
	if (!(q = take_tail(g, count, conv, f)) ||
	    !types_ok(node_in(g, dqx, 0)->dtype, node_in(g, dqw, 0)->dtype,
		      node_out(g, q, 0)->dtype))
		return NULL;
	f->n_in = 0;
	f->in[f->n_in++] = dqx->in[0];
	f->in[f->n_in++] = dqx->in[1];
	f->in[f->n_in++] = zp_input(g, dqx, node_in(g, dqx, 0)->dtype);
	f->in[f->n_in++] = dqw->in[0];
	f->in[f->n_in++] = dqw->in[1];
	f->in[f->n_in++] = zp_input(g, dqw, node_in(g, dqw, 0)->dtype);
	f->in[f->n_in++] = q->in[1];
	f->in[f->n_in++] = zp_input(g, q, node_out(g, q, 0)->dtype);
	if (dqb)
		f->in[f->n_in++] = dqb->in[0];
	return q;
}

/*
 * Whether Gemm n is a MatMul the integer node takes: alpha and beta 1, A
 * not transposed (B transposed: its constant is transposed here; C: an
 * int32 bias, matched by the caller).
 */
static bool gemm_is_matmul(const struct node *n)
{
	return node_attr_float(n, "alpha", 1.0) == 1.0 && node_attr_float(n, "beta", 1.0) == 1.0 &&
	       !node_attr_int(n, "transA", 0);
}

/*
 * The constant 8-bit matrix w [N, K] transposed into a new constant
 * [K, N]; its value id. Adding a value may move g->values.
 */
static int transposed(struct graph *g, const struct value *w)
{
	int64_t N = w->shape.d[0].c, K = w->shape.d[1].c;
	uint8_t *t = arena_alloc(g->arena, (size_t)(K * N));
	const uint8_t *src = w->data;
	struct shape s = { .rank = 2 };
	const char *name = arena_printf(g->arena, "%s.transposed", w->name);
	enum dtype dt = w->dtype;

	for (int64_t k = 0; k < K; k++)
		for (int64_t j = 0; j < N; j++)
			t[k * N + j] = src[j * K + k];
	s.d[0] = dim_const(K);
	s.d[1] = dim_const(N);
	return graph_add_const(g, name, dt, &s, t);
}

/*
 * Matches the MatMul (or Gemm) group at mm into f; the QuantizeLinear, or
 * NULL. A Gemm's transposed B is transposed here, and its C, when the
 * DequantizeLinear of an int32 bias that fits (bias_fits), becomes the
 * QLinearMatMul's int32 bias (a ninth input, as QLinearConv's).
 */
static struct node *match_matmul(struct graph *g, const int *count, struct node *mm,
				 struct fusion *f)
{
	struct node *dqa = producer(g, mm->in[0], OP_DEQUANTIZELINEAR);
	struct node *dqb = mm->n_in > 1 ? producer(g, mm->in[1], OP_DEQUANTIZELINEAR) : NULL;
	struct node *dqc = NULL;
	bool gemm = mm->op == OP_GEMM, tb = gemm && node_attr_int(mm, "transB", 0);
	const struct value *a, *bv;
	struct node *q;
	int64_t N;

	if (!dqa || !dqb || !per_tensor(g, dqa) || (gemm && !gemm_is_matmul(mm)))
		return NULL;
	a = node_in(g, dqa, 0);
	bv = node_in(g, dqb, 0);
	if (!a->has_shape || a->shape.rank < 2 || (gemm && a->shape.rank != 2) ||
	    bv->shape.rank != 2 || !const_weights(g, dqb, tb ? 0 : 1))
		return NULL;
	N = bv->shape.d[tb ? 0 : 1].c;
	if (gemm && mm->n_in > 2 && mm->in[2] >= 0) {
		dqc = producer(g, mm->in[2], OP_DEQUANTIZELINEAR);
		if (!dqc || !bias_fits(g, dqc, node_in(g, dqa, 1), node_in(g, dqb, 1), N))
			return NULL;
	}
	f->n_dead = 0;
	take_dq(count, dqa, f);
	take_dq(count, dqb, f);
	if (dqc)
		take_dq(count, dqc, f);
	if (!(q = take_tail(g, count, mm, f)) ||
	    !types_ok(a->dtype, bv->dtype, node_out(g, q, 0)->dtype))
		return NULL;
	f->n_in = 0;
	f->in[f->n_in++] = dqa->in[0];
	f->in[f->n_in++] = dqa->in[1];
	f->in[f->n_in++] = zp_input(g, dqa, a->dtype);
	f->in[f->n_in++] = tb ? transposed(g, node_in(g, dqb, 0)) : dqb->in[0];
	f->in[f->n_in++] = dqb->in[1];
	f->in[f->n_in++] = zp_input(g, dqb, node_in(g, dqb, 0)->dtype);
	f->in[f->n_in++] = q->in[1];
	f->in[f->n_in++] = zp_input(g, q, node_out(g, q, 0)->dtype);
	if (dqc)
		f->in[f->n_in++] = dqc->in[0];
	return q;
}

/* Matches the Add group at add into f; the QuantizeLinear, or NULL. */
static struct node *match_add(struct graph *g, const int *count, struct node *add,
			      struct fusion *f)
{
	struct node *dqa = producer(g, add->in[0], OP_DEQUANTIZELINEAR);
	struct node *dqb = producer(g, add->in[1], OP_DEQUANTIZELINEAR);
	enum dtype t;
	struct node *q;

	if (!dqa || !dqb || !per_tensor(g, dqa) || !per_tensor(g, dqb))
		return NULL;
	t = node_in(g, dqa, 0)->dtype;
	if (!is_q8(t) || node_in(g, dqb, 0)->dtype != t)
		return NULL;
	f->n_dead = 0;
	take_dq(count, dqa, f);
	if (dqb != dqa)
		take_dq(count, dqb, f);
	if (!(q = take_tail(g, count, add, f)) || node_out(g, q, 0)->dtype != t)
		return NULL;
	f->n_in = 0;
	f->in[f->n_in++] = dqa->in[0];
	f->in[f->n_in++] = dqa->in[1];
	f->in[f->n_in++] = zp_input(g, dqa, t);
	f->in[f->n_in++] = dqb->in[0];
	f->in[f->n_in++] = dqb->in[1];
	f->in[f->n_in++] = zp_input(g, dqb, t);
	f->in[f->n_in++] = q->in[1];
	f->in[f->n_in++] = zp_input(g, q, t);
	return q;
}

/*
 * Whether DequantizeLinear dq and QuantizeLinear q have one 8-bit type,
 * bit-identical scales and equal zero points (per_tensor both).
 */
static bool same_params(struct graph *g, const struct node *dq, const struct node *q)
{
	float a = scale_at(node_in(g, dq, 1), 0), b = scale_at(node_in(g, q, 1), 0);

	return node_in(g, dq, 0)->dtype == node_out(g, q, 0)->dtype && !memcmp(&a, &b, sizeof a) &&
	       zero_point(g, dq) == zero_point(g, q);
}

/* A per-tensor DequantizeLinear of an 8-bit tensor producing v, or NULL. */
static struct node *dq8(struct graph *g, int v)
{
	struct node *dq = producer(g, v, OP_DEQUANTIZELINEAR);

	return dq && per_tensor(g, dq) && is_q8(node_in(g, dq, 0)->dtype) ? dq : NULL;
}

/* The per-tensor 8-bit QuantizeLinear that alone reads pool's output, or NULL. */
static struct node *q8_after(struct graph *g, const int *count, const struct node *op)
{
	struct node *q = sole_reader(g, count, op->out[0]);

	return q && q->op == OP_QUANTIZELINEAR && q->in[0] == op->out[0] && per_tensor(g, q) &&
	       is_q8(node_out(g, q, 0)->dtype) ? q : NULL;
}

/*
 * Matches DequantizeLinear -> MaxPool (no Indices) -> QuantizeLinear at mp
 * into f; the QuantizeLinear, or NULL. With the same parameters the fused
 * node is an 8-bit MaxPool (exact: dequantizing with a positive scale is
 * monotone, so the max of the dequantized values is the dequantized max,
 * which QuantizeLinear maps back to itself); otherwise *requant is set:
 * mp stays, made a MaxPool of the integers, and the fused node is a
 * one-input QLinearConcat that requantizes its max, one value per output
 * (again exactly what the float graph computes).
 */
static struct node *match_maxpool(struct graph *g, const int *count, struct node *mp,
				  struct fusion *f, bool *requant)
{
	struct node *dq = dq8(g, mp->in[0]), *q;
	float s;

	if (!dq || mp->n_in != 1 || !(q = q8_after(g, count, mp)))
		return NULL;
	s = scale_at(node_in(g, dq, 1), 0);
	if (!(s > 0) || isinf(s))
		return NULL;
	*requant = !same_params(g, dq, q);
	f->n_dead = 0;
	take_dq(count, dq, f);
	f->n_in = 0;
	if (!*requant) {
		f->dead[f->n_dead++] = mp;
		f->in[f->n_in++] = dq->in[0];
		return q;
	}
	f->in[f->n_in++] = q->in[1];
	f->in[f->n_in++] = zp_input(g, q, node_out(g, q, 0)->dtype);
	f->in[f->n_in++] = mp->out[0];
	f->in[f->n_in++] = dq->in[1];
	f->in[f->n_in++] = zp_input(g, dq, node_in(g, dq, 0)->dtype);
	return q;
}

/*
 * Matches DequantizeLinear -> AveragePool or GlobalAveragePool ->
 * QuantizeLinear (x and y of one 8-bit type) at pool into f; the
 * QuantizeLinear, or NULL. The fused node, QLinearAveragePool or
 * QLinearGlobalAveragePool, sums the integers exactly and requantizes once
 * (ops_quant.c's lower_qpool_out): within a unit of the float graph's.
 */
static struct node *match_avgpool(struct graph *g, const int *count, struct node *pool,
				  struct fusion *f)
{
	struct node *dq = dq8(g, pool->in[0]), *q;
	enum dtype t;

	if (!dq || pool->n_in != 1 || !(q = q8_after(g, count, pool)))
		return NULL;
	t = node_in(g, dq, 0)->dtype;
	if (node_out(g, q, 0)->dtype != t)
		return NULL;
	f->n_dead = 0;
	take_dq(count, dq, f);
	f->dead[f->n_dead++] = pool;
	f->n_in = 0;
	f->in[f->n_in++] = dq->in[0];
	f->in[f->n_in++] = dq->in[1];
	f->in[f->n_in++] = zp_input(g, dq, t);
	f->in[f->n_in++] = q->in[1];
	f->in[f->n_in++] = zp_input(g, q, t);
	return q;
}

/*
 * Matches DequantizeLinear x k -> Concat -> QuantizeLinear at cat (the
 * concatenated dim a constant in each input) into f; the QuantizeLinear,
 * or NULL. *copy is set when every input has y's type, scale and zero
 * point: the fused node is then a Concat of the integers; else a
 * QLinearConcat, each input requantized to y's parameters as
 * DequantizeLinear then QuantizeLinear compute it (exactly).
 */
static struct node *match_concat(struct graph *g, const int *count, struct node *cat,
				 struct fusion *f, bool *copy)
{
	struct node *q, *dq[QDQ_MAX_CONCAT];
	const struct value *y = node_out(g, cat, 0);
	int64_t axis = node_attr_int(cat, "axis", 0);

	if (cat->n_in < 1 || cat->n_in > QDQ_MAX_CONCAT || !y->has_shape ||
	    !(q = q8_after(g, count, cat)))
		return NULL;
	if (axis < 0)
		axis += y->shape.rank;
	if (axis < 0 || axis >= y->shape.rank)
		return NULL;
	*copy = true;
	for (int i = 0; i < cat->n_in; i++) {
		const struct value *x;

		if (!(dq[i] = dq8(g, cat->in[i])))
			return NULL;
		x = node_in(g, dq[i], 0);
		if (!x->has_shape || x->shape.rank != y->shape.rank ||
		    !dim_is_const(x->shape.d[axis]))
			return NULL;
		*copy = *copy && same_params(g, dq[i], q);
	}
	f->n_dead = 0;
	f->dead[f->n_dead++] = cat;
	for (int i = 0; i < cat->n_in; i++) {
		bool seen = false;

		for (int j = 0; j < i; j++)
			seen = seen || dq[j] == dq[i];
		if (!seen)
			take_dq(count, dq[i], f);
	}
	f->n_in = 0;
	if (*copy) {
		for (int i = 0; i < cat->n_in; i++)
			f->in[f->n_in++] = dq[i]->in[0];
		return q;
	}
	f->in[f->n_in++] = q->in[1];
	f->in[f->n_in++] = zp_input(g, q, node_out(g, q, 0)->dtype);
	for (int i = 0; i < cat->n_in; i++) {
		f->in[f->n_in++] = dq[i]->in[0];
		f->in[f->n_in++] = dq[i]->in[1];
		f->in[f->n_in++] = zp_input(g, dq[i], node_in(g, dq[i], 0)->dtype);
	}
	return q;
}

static int span_order(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;

	return (x > y) - (x < y);
}

/*
 * The QuantizeLinear q becomes the integer node of f (op, with the
 * attributes of the float node `from`), with q's output and the spans of
 * every node of f in graph order; the others die.
 */
static void fuse(struct graph *g, struct node *q, struct fusion *f, enum op op,
		 const char *op_type, const struct node *from)
{
	struct span sp = { 0 };
	int *in = arena_alloc(g->arena, sizeof(int) * (size_t)f->n_in);
	bool from_attrs = op == OP_QLINEARCONV || op == OP_MAXPOOL || op == OP_CONCAT ||
			  op == OP_QLINEARAVERAGEPOOL || op == OP_QLINEARCONCAT;

	memcpy(in, f->in, sizeof(int) * (size_t)f->n_in);
	f->dead[f->n_dead++] = q;
	qsort(f->dead, (size_t)f->n_dead, sizeof(f->dead[0]), span_order);
	for (int i = 0; i < f->n_dead; i++)
		span_add(g, &sp, &f->dead[i]->span);
	q->op = op;
	q->op_type = op_type;
	q->in = in;
	q->n_in = f->n_in;
	q->n_attrs = from_attrs ? from->n_attrs : 0;
	q->attrs = from_attrs ? from->attrs : NULL;
	q->span = sp;
	for (int i = 0; i < f->n_dead; i++)
		f->dead[i]->dead = f->dead[i] != q;
}

int pass_qdq(struct graph *g)
{
	int *count = graph_count_readers(g);
	int nodes = g->nodes.n;

	for (int i = 0; i < nodes; i++) {
		struct node *n = &g->nodes.v[i], *q = NULL;
		struct fusion f;

		if (n->dead || n->n_out != 1)
			continue;
		if (n->op == OP_CONV)
			q = match_conv(g, count, n, &f);
		else if (n->op == OP_MATMUL || n->op == OP_GEMM)
			q = match_matmul(g, count, n, &f);
		else if (n->op == OP_ADD)
			q = match_add(g, count, n, &f);
		else if (n->op == OP_MAXPOOL) {
			bool requant;

			if ((q = match_maxpool(g, count, n, &f, &requant)) && requant) {
				/* n becomes the MaxPool of the integers, q requantizes its max */
				int xq = g->nodes.v[g->values.v[n->in[0]].producer].in[0];

				g->values.v[n->out[0]].dtype = g->values.v[xq].dtype;
				n->in[0] = xq;
				fuse(g, q, &f, OP_QLINEARCONCAT, "QLinearConcat", n);
				q->n_attrs = 0;
				q->attrs = NULL;
				node_set_attr_int(g, q, "axis", 1);
			} else if (q) {
				fuse(g, q, &f, OP_MAXPOOL, "MaxPool", n);
			}
		} else if (n->op == OP_AVERAGEPOOL || n->op == OP_GLOBALAVERAGEPOOL) {
			if ((q = match_avgpool(g, count, n, &f)))
				fuse(g, q, &f, n->op == OP_AVERAGEPOOL ? OP_QLINEARAVERAGEPOOL
				     : OP_QLINEARGLOBALAVERAGEPOOL, n->op == OP_AVERAGEPOOL ?
				     "QLinearAveragePool" : "QLinearGlobalAveragePool", n);
		} else if (n->op == OP_CONCAT) {
			bool copy;

			if ((q = match_concat(g, count, n, &f, &copy)))
				fuse(g, q, &f, copy ? OP_CONCAT : OP_QLINEARCONCAT,
				     copy ? "Concat" : "QLinearConcat", n);
		}
		if (!q)
			continue;
		if (n->op == OP_MAXPOOL || n->op == OP_AVERAGEPOOL ||
		    n->op == OP_GLOBALAVERAGEPOOL || n->op == OP_CONCAT)
			;	/* fused above */
		else if (n->op == OP_CONV)
			fuse(g, q, &f, OP_QLINEARCONV, "QLinearConv", n);
		else if (n->op == OP_ADD)
			fuse(g, q, &f, OP_QLINEARADD, "QLinearAdd", n);
		else
			fuse(g, q, &f, OP_QLINEARMATMUL, "QLinearMatMul", n);
		/* new values (zero points), readers gone: counted again */
		free(count);
		count = graph_count_readers(g);
	}
	free(count);
	graph_compact(g);
	return qdq_nbits(g);
}
