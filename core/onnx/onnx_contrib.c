/*
 * onnx_contrib.c - ONNX Runtime's contrib ops (domain com.microsoft, and
 * the few ORT registers in the default domain below the opset that made
 * them standard), decomposed at import into the graph ops collagec
 * already knows, so that every target, shape inference and the fusion
 * passes see ordinary ONNX:
 *
 *   SkipLayerNormalization      Add(input, skip[, bias]) -> LayerNormalization
 *   SkipSimplifiedLayerNorm...  Add(input, skip[, bias]) -> RMSNormalization
 *   LayerNormalization (<17)    LayerNormalization (ORT's contrib, opset 1)
 *   SimplifiedLayerNorm...      RMSNormalization
 *   Gelu, BiasGelu, FastGelu    [Add] -> Gelu (FastGelu: approximate tanh)
 *   QuickGelu                   x * Sigmoid(alpha x)
 *   BiasAdd                     x + bias + skip
 *   FusedMatMul                 [Transpose] -> MatMul [-> Mul alpha]
 *   EmbedLayerNormalization     Gathers, Adds, LayerNormalization; mask_index
 *                               the mask's ReduceSum
 *   Attention                   MatMul, Add, Slice, Reshape, Transpose,
 *                               [Gather, Concat (the cache)], MatMul, Mul,
 *                               Add (mask), Softmax, MatMul
 *   MultiHeadAttention          [Slice, Add (bias)] -> Attention of opset 23
 *   RotaryEmbedding             RotaryEmbedding of opset 23
 *   GroupQueryAttention         [RotaryEmbedding], Concat (the cache), a
 *                               bool causal/padding mask -> Attention
 *   MatMulNBits                 MatMulNBits (core/ops/ops_nbits.c: kept,
 *                               a 4-bit GEMM on c), [Casts of float16]
 *   QLinearAdd                  QLinearAdd (core/ops/ops_quant.c: kept, the
 *                               node the qdq pass makes of a QDQ Add)
 *   QLinearAveragePool,         kept (the nodes the qdq pass makes of QDQ
 *   QLinearGlobalAveragePool,   pools and Concats)
 *   QLinearConcat
 *   FlexAttention (domain       Attention of opset 23; with a score_mod or
 *   ai.onnx.preview)            prob_mod graph MatMul, Mul, its nodes,
 *                               Softmax, its nodes, MatMul
 *
 * A mask's form depends on its rank, which import reads from the value
 * (graph inputs, constants) or through the producers that keep it
 * (cx_rank); the hidden sizes Attention splits by come from its weights.
 *
 * The nodes made are named NAME/what and carry the contrib node's span, so
 * a kernel names the node the model has. An attribute value, input or
 * output form a decomposition does not cover is a diagnostic naming the
 * node. Scalars the decompositions need take the float type of the node's
 * first input whose type is known at import (a weight, a graph input),
 * else float32.
 *
 * A stage of its own beside function inlining: onnx_function.c hands a
 * node of these domains here, and this file calls only onnx_node.c's
 * helpers (scope and span), so the calls between the files make no circle.
 */
#include "onnx_import.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../ops/ops.h"

#define CX_IN_MAX 98	/* QLinearConcat: 2 + 3 per input, 32 inputs */
#define CX_OUT_MAX 6

struct cx {
	struct importer *im;
	struct graph *g;
	const Onnx__NodeProto *np;
	struct node self;		/* the contrib node: name, op_type, span */
	int in[CX_IN_MAX];		/* value ids; -1 for absent */
	int n_in;
	int out[CX_OUT_MAX];		/* value ids; -1 for an output not asked for */
	int n_out;
	enum dtype ft;			/* the type of the scalars made */
	int k;				/* nodes made so far, for names */
};

/* ---- the node's attributes ---- */

static const Onnx__AttributeProto *cx_attr(const struct cx *c, const char *name)
{
	for (size_t i = 0; i < c->np->n_attribute; i++)
		if (c->np->attribute[i]->name && !strcmp(c->np->attribute[i]->name, name))
			return c->np->attribute[i];
	return NULL;
}

static int64_t cx_int(const struct cx *c, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = cx_attr(c, name);

	return a ? a->i : def;
}

static double cx_float(const struct cx *c, const char *name, double def)
{
	const Onnx__AttributeProto *a = cx_attr(c, name);

	return a ? a->f : def;
}

/*
 * Every attribute of the node is one of known (NULL-terminated) and has
 * the type its name has there ("i", "f", "ints", "s"). -1 after a diagnostic.
 */
static int cx_check_attrs(struct cx *c, const char *const *known)
{
	static const struct { const char *t; int type; } types[] = {
		{ "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT },
		{ "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT },
		{ "ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS },
		{ "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING },
	};
	int rc = 0;

	for (size_t i = 0; i < c->np->n_attribute; i++) {
		const Onnx__AttributeProto *a = c->np->attribute[i];
		const char *want = NULL;

		for (int k = 0; known[k] && !want; k += 2)
			if (!strcmp(known[k], a->name))
				want = known[k + 1];
		if (!want) {
			diag_error(c->im->ctx, "%s: attribute '%s' is not supported",
				   node_loc(c->g, &c->self), a->name);
			rc = -1;
			continue;
		}
		for (size_t t = 0; t < ARRAY_SIZE(types); t++)
			if (!strcmp(types[t].t, want) && (int)a->type != types[t].type) {
				diag_error(c->im->ctx, "%s: attribute '%s' must be %s",
					   node_loc(c->g, &c->self), a->name,
					   !strcmp(want, "i") ? "an int" : !strcmp(want, "f") ?
					   "a float" : !strcmp(want, "s") ? "a string" :
					   "a list of ints");
				rc = -1;
			}
	}
	return rc;
}

/* A diagnostic naming the node; always -1. */
PRINTF_LIKE(2, 3) static int cx_error(struct cx *c, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_error(c->im->ctx, "%s: %s", node_loc(c->g, &c->self), msg);
	return -1;
}

/* ---- the nodes and constants made ---- */

static struct attr attr_f(const char *name, double v)
{
	struct attr a = { 0 };

	a.name = name;
	a.kind = ATTR_FLOAT;
	a.f = v;
	return a;
}

static struct attr attr_s(const char *name, const char *s)
{
	struct attr a = { 0 };

	a.name = name;
	a.kind = ATTR_STRING;
	a.s = s;
	return a;
}

static struct attr attr_ints(struct cx *c, const char *name, const int64_t *v, int n)
{
	struct attr a = { 0 };

	a.name = name;
	a.kind = ATTR_INTS;
	a.n = n;
	a.ints = arena_memdup(c->g->arena, v, sizeof(int64_t) * (size_t)n);
	return a;
}

/*
 * Adds node op (its ONNX type name type) reading in[], writing out (a new
 * value when out < 0) with attributes a[na]; named NAME/TYPE_K with the
 * contrib node's span. Returns its output. Multi-output ops use cx_node_n.
 */
static int cx_node_n(struct cx *c, enum op op, const char *type, const int *in, int n_in,
		     int *out, int n_out, const struct attr *a, int na)
{
	struct graph *g = c->g;
	const char *name = arena_printf(g->arena, "%s/%s_%d", c->self.name, type, c->k++);
	struct node *n;
	int ni;

	for (int i = 0; i < n_out; i++)
		if (out[i] < 0)
			out[i] = graph_add_value(g, n_out == 1 ? name
						 : arena_printf(g->arena, "%s.out%d", name, i));
	ni = graph_add_node(g, op, name, in, n_in, out, n_out);
	n = &g->nodes.v[ni];
	n->op_type = type;
	n->onnx_index = -1;
	n->span = c->self.span;
	n->n_attrs = na;
	n->attrs = arena_alloc(g->arena, sizeof(struct attr) * (size_t)(na + 1));
	if (na)
		memcpy(n->attrs, a, sizeof(struct attr) * (size_t)na);
	/* the importer's forward-reference pass has no proto for it */
	vec_push(&c->im->protos, NULL);
	return out[0];
}

static int cx_node(struct cx *c, enum op op, const char *type, const int *in, int n_in, int out,
		   const struct attr *a, int na)
{
	return cx_node_n(c, op, type, in, n_in, &out, 1, a, na);
}

static int cx_bin(struct cx *c, enum op op, const char *type, int x, int y, int out)
{
	int in[2] = { x, y };

	return cx_node(c, op, type, in, 2, out, NULL, 0);
}

static int cx_un(struct cx *c, enum op op, const char *type, int x, int out)
{
	return cx_node(c, op, type, &x, 1, out, NULL, 0);
}

/* A 1-D int64 constant. */
static int cx_ints(struct cx *c, const int64_t *v, int n)
{
	struct shape s = { 1, { { 0 } } };

	s.d[0] = dim_const(n);
	return graph_add_const(c->g, arena_printf(c->g->arena, "%s/const_%d", c->self.name,
						  c->k++), DTYPE_I64, &s, v);
}

static int cx_int1(struct cx *c, int64_t v)
{
	return cx_ints(c, &v, 1);
}

/* A scalar of type t (float32 or float64 directly; other floats through a Cast). */
static int cx_scalar_t(struct cx *c, double v, enum dtype t)
{
	struct shape s = { 0 };
	const char *name = arena_printf(c->g->arena, "%s/const_%d", c->self.name, c->k++);
	float f = (float)v;
	struct attr to;
	int id;

	if (t == DTYPE_F64)
		return graph_add_const(c->g, name, DTYPE_F64, &s, &v);
	id = graph_add_const(c->g, name, DTYPE_F32, &s, &f);
	if (t == DTYPE_F32)
		return id;
	to = attr_int("to", dtype_to_onnx(t));
	return cx_node(c, OP_CAST, "Cast", &id, 1, -1, &to, 1);
}

static int cx_scalar(struct cx *c, double v)
{
	return cx_scalar_t(c, v, c->ft);
}

/* Unsqueeze(x, axes). */
static int cx_unsqueeze(struct cx *c, int x, const int64_t *axes, int n)
{
	int in[2] = { x, cx_ints(c, axes, n) };

	return cx_node(c, OP_UNSQUEEZE, "Unsqueeze", in, 2, -1, NULL, 0);
}

static int cx_reshape(struct cx *c, int x, const int64_t *shape, int n, int out)
{
	int in[2] = { x, cx_ints(c, shape, n) };

	return cx_node(c, OP_RESHAPE, "Reshape", in, 2, out, NULL, 0);
}

static int cx_transpose(struct cx *c, int x, const int64_t *perm, int n, int out)
{
	struct attr a = attr_ints(c, "perm", perm, n);

	return cx_node(c, OP_TRANSPOSE, "Transpose", &x, 1, out, &a, 1);
}

/* x[..., from:to] on axis. */
static int cx_slice(struct cx *c, int x, int64_t axis, int64_t from, int64_t to)
{
	int in[4] = { x, cx_int1(c, from), cx_int1(c, to), cx_int1(c, axis) };

	return cx_node(c, OP_SLICE, "Slice", in, 4, -1, NULL, 0);
}

/* Shape(x)[start:end] (int64, 1-D). */
static int cx_shape(struct cx *c, int x, int64_t start, int64_t end)
{
	struct attr a[2] = { attr_int("start", start), attr_int("end", end) };

	return cx_node(c, OP_SHAPE, "Shape", &x, 1, -1, a, 2);
}

/* Dim d of constant-shaped value v (weights), or -1. */
static int64_t cx_dim(const struct cx *c, int v, int d)
{
	const struct value *val = v >= 0 ? &c->g->values.v[v] : NULL;

	if (!val || !val->has_shape || d >= val->shape.rank || !dim_is_const(val->shape.d[d]))
		return -1;
	return val->shape.d[d].c;
}

/*
 * The rank of value v when import can tell: its own shape (graph inputs,
 * constants), else through producers whose rank follows from their
 * input's (Cast, Identity, ReduceSum by constant axes: EmbedLayerNormalization's
 * mask_index) or a constant shape (ConstantOfShape). -1 when unknown.
 */
static int cx_rank(const struct cx *c, int v)
{
	for (int hops = 0; v >= 0 && hops < 64; hops++) {
		const struct value *val = &c->g->values.v[v];
		const struct node *p;

		if (val->has_shape)
			return val->shape.rank;
		if (val->producer < 0)
			return -1;
		p = &c->g->nodes.v[val->producer];
		if (p->op == OP_REDUCESUM && p->n_in == 2) {
			const struct value *ax = &c->g->values.v[p->in[1]];
			int r = cx_rank(c, p->in[0]);

			if (r < 0 || !ax->data || !ax->has_shape || ax->shape.rank != 1 ||
			    !dim_is_const(ax->shape.d[0]))
				return -1;
			return node_attr_int(p, "keepdims", 1) ? r : r - (int)ax->shape.d[0].c;
		}
		if (p->op == OP_CONSTANTOFSHAPE) {
			int64_t n = cx_dim(c, p->in[0], 0);

			return n >= 0 ? (int)n : -1;
		}
		if ((p->op != OP_CAST && p->op != OP_IDENTITY) || p->n_in < 1)
			return -1;
		v = p->in[0];
	}
	return -1;
}

/* ---- normalizations ---- */

static const char *const LN_ATTRS[] = { "axis", "i", "epsilon", "f", "stash_type", "i", NULL };

/* LayerNormalization(x, scale, bias) over the last axis into outs[0..2]. */
static void cx_layernorm(struct cx *c, int x, int scale, int bias, double eps, int *outs,
			 int n_outs)
{
	int in[3] = { x, scale, bias };
	struct attr a[2] = { attr_int("axis", -1), attr_f("epsilon", eps) };

	cx_node_n(c, OP_LAYERNORMALIZATION, "LayerNormalization", in, bias >= 0 ? 3 : 2, outs,
		  n_outs, a, 2);
}

/* LayerNormalization as ORT's contrib op of opset 1 (opset 17's, earlier). */
static int cx_layer_norm(struct cx *c)
{
	struct attr a[3];
	int na = 0;

	if (cx_check_attrs(c, LN_ATTRS) < 0)
		return -1;
	a[na++] = attr_int("axis", cx_int(c, "axis", -1));
	a[na++] = attr_f("epsilon", cx_float(c, "epsilon", 1e-5));
	a[na++] = attr_int("stash_type", cx_int(c, "stash_type", 1));
	cx_node_n(c, OP_LAYERNORMALIZATION, "LayerNormalization", c->in, c->n_in, c->out,
		  c->n_out, a, na);
	return 0;
}

/* Y = X / sqrt(mean(X^2) + epsilon) * scale: RMSNormalization of opset 23. */
static int cx_simplified_layer_norm(struct cx *c)
{
	struct attr a[3];

	if (cx_check_attrs(c, LN_ATTRS) < 0)
		return -1;
	if (c->n_out > 1 && c->out[1] >= 0)
		return cx_error(c, "output 1 'inv_std_var' is not supported");
	a[0] = attr_int("axis", cx_int(c, "axis", -1));
	a[1] = attr_f("epsilon", cx_float(c, "epsilon", 1e-5));
	a[2] = attr_int("stash_type", cx_int(c, "stash_type", 1));
	cx_node(c, OP_RMSNORMALIZATION, "RMSNormalization", c->in, 2, c->out[0], a, 3);
	return 0;
}

/* input + skip (+ bias), into out (the input_skip_bias_sum output, or new). */
static int cx_skip_sum(struct cx *c, int bias, int out)
{
	int s = cx_bin(c, OP_ADD, "Add", c->in[0], c->in[1], bias >= 0 ? -1 : out);

	return bias >= 0 ? cx_bin(c, OP_ADD, "Add", s, bias, out) : s;
}

/*
 * SkipLayerNormalization(input, skip, gamma, beta?, bias?): outputs
 * output, mean, inv_std_var (LayerNormalization's) and input_skip_bias_sum.
 */
static int cx_skip_layer_norm(struct cx *c)
{
	static const char *const known[] = { "epsilon", "f", NULL };
	int sum, outs[3] = { c->out[0], c->n_out > 1 ? c->out[1] : -1,
			     c->n_out > 2 ? c->out[2] : -1 };

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (c->n_in < 3 || c->in[0] < 0 || c->in[1] < 0 || c->in[2] < 0)
		return cx_error(c, "inputs 'input', 'skip' and 'gamma' are required");
	sum = cx_skip_sum(c, c->n_in > 4 ? c->in[4] : -1, c->n_out > 3 ? c->out[3] : -1);
	cx_layernorm(c, sum, c->in[2], c->n_in > 3 ? c->in[3] : -1,
		     cx_float(c, "epsilon", 1e-12), outs, outs[2] >= 0 ? 3 : outs[1] >= 0 ? 2 : 1);
	return 0;
}

/* SkipSimplifiedLayerNormalization(input, skip, gamma, bias?). */
static int cx_skip_simplified_layer_norm(struct cx *c)
{
	static const char *const known[] = { "epsilon", "f", NULL };
	struct attr a[2];
	int in[2];

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (c->n_in < 3 || c->in[0] < 0 || c->in[1] < 0 || c->in[2] < 0)
		return cx_error(c, "inputs 'input', 'skip' and 'gamma' are required");
	for (int i = 1; i < 3 && i < c->n_out; i++)
		if (c->out[i] >= 0)
			return cx_error(c, "output %d '%s' is not supported", i,
					i == 1 ? "mean" : "inv_std_var");
	in[0] = cx_skip_sum(c, c->n_in > 3 ? c->in[3] : -1, c->n_out > 3 ? c->out[3] : -1);
	in[1] = c->in[2];
	a[0] = attr_int("axis", -1);
	a[1] = attr_f("epsilon", cx_float(c, "epsilon", 1e-12));
	cx_node(c, OP_RMSNORMALIZATION, "RMSNormalization", in, 2, c->out[0], a, 2);
	return 0;
}

/* ---- activations ---- */

/* Gelu(A [+ B]): Gelu and BiasGelu exact (erf), FastGelu the tanh approximation. */
static int cx_gelu(struct cx *c)
{
	static const char *const none[] = { NULL };
	bool fast = !strcmp(c->np->op_type, "FastGelu");
	struct attr a = attr_s("approximate", fast ? "tanh" : "none");
	int x = c->in[0];

	if (cx_check_attrs(c, none) < 0)
		return -1;
	if (c->n_in > 1 && c->in[1] >= 0)
		x = cx_bin(c, OP_ADD, "Add", x, c->in[1], -1);
	cx_node(c, OP_GELU, "Gelu", &x, 1, c->out[0], &a, 1);
	return 0;
}

/* QuickGelu: x * Sigmoid(alpha x). */
static int cx_quick_gelu(struct cx *c)
{
	static const char *const known[] = { "alpha", "f", NULL };
	int s;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	s = cx_bin(c, OP_MUL, "Mul", c->in[0], cx_scalar(c, cx_float(c, "alpha", 1.702)), -1);
	s = cx_un(c, OP_SIGMOID, "Sigmoid", s, -1);
	cx_bin(c, OP_MUL, "Mul", c->in[0], s, c->out[0]);
	return 0;
}

/* BiasAdd(X, bias, skip) = X + bias + skip. */
static int cx_bias_add(struct cx *c)
{
	static const char *const none[] = { NULL };

	if (cx_check_attrs(c, none) < 0)
		return -1;
	if (c->n_in < 3 || c->in[1] < 0 || c->in[2] < 0)
		return cx_error(c, "inputs 'bias' and 'skip' are required");
	cx_bin(c, OP_ADD, "Add", cx_bin(c, OP_ADD, "Add", c->in[0], c->in[1], -1), c->in[2],
	       c->out[0]);
	return 0;
}

/* ---- FusedMatMul ---- */

/* x with its last two axes swapped (Transpose when the rank is known, else Einsum). */
static int cx_swap_last(struct cx *c, int x)
{
	int r = cx_rank(c, x);
	struct attr a;

	if (r >= 2) {
		int64_t perm[MAX_RANK];

		for (int i = 0; i < r; i++)
			perm[i] = i;
		perm[r - 2] = r - 1;
		perm[r - 1] = r - 2;
		return cx_transpose(c, x, perm, r, -1);
	}
	a = attr_s("equation", "...ij->...ji");
	return cx_node(c, OP_EINSUM, "Einsum", &x, 1, -1, &a, 1);
}

/* alpha * op(A) op(B), op a swap of the last two axes when transA/transB. */
static int cx_fused_matmul(struct cx *c)
{
	static const char *const known[] = { "alpha", "f", "transA", "i", "transB", "i",
					     "transBatchA", "i", "transBatchB", "i", NULL };
	double alpha;
	int a, b;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (cx_int(c, "transBatchA", 0) || cx_int(c, "transBatchB", 0))
		return cx_error(c, "transBatchA and transBatchB are not supported");
	alpha = cx_float(c, "alpha", 1.0);
	a = cx_int(c, "transA", 0) ? cx_swap_last(c, c->in[0]) : c->in[0];
	b = cx_int(c, "transB", 0) ? cx_swap_last(c, c->in[1]) : c->in[1];
	a = cx_bin(c, OP_MATMUL, "MatMul", a, b, alpha == 1.0 ? c->out[0] : -1);
	if (alpha != 1.0)
		cx_bin(c, OP_MUL, "Mul", a, cx_scalar(c, alpha), c->out[0]);
	return 0;
}

/* ---- MatMulNBits ---- */

/*
 * Whether g_idx (input 4: the block of each k) is the plain order k /
 * block_size, which says nothing the blocks do not: a constant int32 [K].
 */
static bool cx_gidx_plain(struct cx *c, int64_t K, int64_t bs)
{
	const struct value *v = &c->g->values.v[c->in[4]];
	const int32_t *d = v->data;

	if (!d || v->dtype != DTYPE_I32 || cx_dim(c, c->in[4], 0) != K || v->shape.rank != 1)
		return false;
	for (int64_t k = 0; k < K; k++)
		if (d[k] != k / bs)
			return false;
	return true;
}

/* Cast(x) to float32 (x absent: -1). */
static int cx_f32(struct cx *c, int x)
{
	struct attr to = attr_int("to", dtype_to_onnx(DTYPE_F32));

	return x < 0 ? -1 : cx_node(c, OP_CAST, "Cast", &x, 1, -1, &to, 1);
}

/*
 * MatMulNBits as collagec's op of that name (core/ops/ops_nbits.c), which
 * computes in float32: a float16 model's A, scales, float zero points and
 * bias go through Casts, and so does the result back, as ONNX Runtime's
 * CPU kernel widens them.
 */
static int cx_matmul_nbits(struct cx *c)
{
	static const char *const known[] = { "K", "i", "N", "i", "bits", "i", "block_size", "i",
					     "accuracy_level", "i", NULL };
	struct attr a[4];
	int in[6], out = c->out[0];
	int64_t K = cx_int(c, "K", 0), bs = cx_int(c, "block_size", 0);
	bool half = c->ft == DTYPE_F16;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (c->ft != DTYPE_F32 && !half)
		return cx_error(c, "type %s is not supported (float32 and float16 are)",
				dtype_name(c->ft));
	if (c->n_in > 4 && c->in[4] >= 0 && (bs < 1 || !cx_gidx_plain(c, K, bs)))
		return cx_error(c, "g_idx other than k / block_size (act-order) is not supported");
	/* ONNX Runtime 1.32 then reads the zero points otherwise (as if absent) */
	if (c->n_in > 4 && c->in[4] >= 0 && c->in[3] >= 0)
		return cx_error(c, "g_idx with zero_points is not supported");
	for (int i = 0; i < 6; i++)
		in[i] = i < c->n_in && i != 4 ? c->in[i] : -1;
	if (half) {
		in[0] = cx_f32(c, in[0]);
		in[2] = cx_f32(c, in[2]);
		if (in[3] >= 0 && dtype_is_half(c->g->values.v[in[3]].dtype))
			in[3] = cx_f32(c, in[3]);
		in[5] = cx_f32(c, in[5]);
		out = -1;
	}
	a[0] = attr_int("K", K);
	a[1] = attr_int("N", cx_int(c, "N", 0));
	a[2] = attr_int("bits", cx_int(c, "bits", 4));
	a[3] = attr_int("block_size", bs);
	out = cx_node(c, OP_MATMULNBITS, "MatMulNBits", in, 6, out, a, 4);
	/* the node the model has, under its own name (diagnostics of shape inference) */
	c->g->nodes.v[c->g->values.v[out].producer].name = c->self.name;
	c->g->nodes.v[c->g->values.v[out].producer].onnx_index = c->self.onnx_index;
	if (half) {
		struct attr to = attr_int("to", dtype_to_onnx(DTYPE_F16));

		cx_node(c, OP_CAST, "Cast", &out, 1, c->out[0], &to, 1);
	}
	return 0;
}

/* ---- QLinearAdd ---- */

/* kept as it is (ops_quant.c computes it as ONNX Runtime's kernel does) */
static int cx_qlinear_add(struct cx *c)
{
	static const char *const known[] = { NULL };
	int in[8], out;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	for (int i = 0; i < 8; i++)
		in[i] = i < c->n_in ? c->in[i] : -1;
	out = cx_node(c, OP_QLINEARADD, "QLinearAdd", in, 8, c->out[0], NULL, 0);
	/* the node the model has, under its own name (diagnostics of shape inference) */
	c->g->nodes.v[c->g->values.v[out].producer].name = c->self.name;
	c->g->nodes.v[c->g->values.v[out].producer].onnx_index = c->self.onnx_index;
	return 0;
}

/* ---- QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat ---- */

/* Attribute p (an int, ints or string) as a struct attr. */
static struct attr cx_copy_attr(struct cx *c, const Onnx__AttributeProto *p)
{
	if (p->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
		return attr_ints(c, p->name, p->ints, (int)p->n_ints);
	if (p->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
		return attr_s(p->name, arena_strndup(c->g->arena, (const char *)p->s.data,
						       p->s.len));
	return attr_int(p->name, p->i);
}

/*
 * kept as they are (ops_quant.c, ops_nn.c: exact integer sums, one
 * requantization; ONNX Runtime sums in float32 and, with
 * count_include_pad, divides by the whole kernel even where a ceil_mode
 * window reaches past the end padding: within a unit otherwise);
 * channels_last 0 only; QLinearConcat's X_zero_points may be absent
 */
static int cx_qlinear_pool(struct cx *c)
{
	static const char *const pool[] = { "auto_pad", "s", "ceil_mode", "i", "channels_last",
					    "i", "count_include_pad", "i", "kernel_shape", "ints",
					    "pads", "ints", "strides", "ints", NULL };
	static const char *const global[] = { "channels_last", "i", NULL };
	static const char *const concat[] = { "axis", "i", NULL };
	bool is_pool = !strcmp(c->self.op_type, "QLinearAveragePool");
	bool is_concat = !strcmp(c->self.op_type, "QLinearConcat");
	enum op op = is_pool ? OP_QLINEARAVERAGEPOOL : is_concat ? OP_QLINEARCONCAT
		     : OP_QLINEARGLOBALAVERAGEPOOL;
	struct attr a[8];
	int in[CX_IN_MAX], na = 0, out;

	if (cx_check_attrs(c, is_pool ? pool : is_concat ? concat : global) < 0)
		return -1;
	if (cx_int(c, "channels_last", 0)) {
		diag_error(c->im->ctx, "%s: channels_last is not supported",
			   node_loc(c->g, &c->self));
		return -1;
	}
	for (size_t i = 0; i < c->np->n_attribute && na < 8; i++)
		if (strcmp(c->np->attribute[i]->name, "channels_last"))
			a[na++] = cx_copy_attr(c, c->np->attribute[i]);
	for (int i = 0; i < c->n_in; i++)
		in[i] = c->in[i];
	for (int i = c->n_in; i < 5; i++)
		in[i] = -1;
	out = cx_node(c, op, c->self.op_type, in, is_concat ? c->n_in : 5, c->out[0], a, na);
	/* the node the model has, under its own name (diagnostics of shape inference) */
	c->g->nodes.v[c->g->values.v[out].producer].name = c->self.name;
	c->g->nodes.v[c->g->values.v[out].producer].onnx_index = c->self.onnx_index;
	return 0;
}

/* ---- EmbedLayerNormalization ---- */

/*
 * word_embedding[input_ids] + position_embedding[position_ids, or 0..S-1]
 * (+ segment_embedding[segment_ids]), layer-normalized; mask_index is the
 * mask's row sums (0s without a mask), embedding_sum the sum.
 */
static int cx_embed_layer_norm(struct cx *c)
{
	static const char *const known[] = { "epsilon", "f", "mask_index_type", "i", NULL };
	int ids = c->in[0], seg = c->n_in > 1 ? c->in[1] : -1;
	int mask = c->n_in > 7 ? c->in[7] : -1, pos_ids = c->n_in > 8 ? c->in[8] : -1;
	int w, p, sum, outs[1];
	struct attr ax0 = attr_int("axis", 0);

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (c->n_in < 7 || ids < 0 || c->in[2] < 0 || c->in[3] < 0 || c->in[5] < 0 ||
	    c->in[6] < 0)
		return cx_error(c, "inputs 'input_ids', 'word_embedding', 'position_embedding', "
				"'gamma' and 'beta' are required");
	if ((seg >= 0) != (c->in[4] >= 0))
		return cx_error(c, "'segment_ids' and 'segment_embedding' go together");
	{
		int in[2] = { c->in[2], ids };

		w = cx_node(c, OP_GATHER, "Gather", in, 2, -1, &ax0, 1);
	}
	if (pos_ids >= 0) {
		int in[2] = { c->in[3], pos_ids };

		p = cx_node(c, OP_GATHER, "Gather", in, 2, -1, &ax0, 1);
	} else {
		int in[4] = { c->in[3], cx_int1(c, 0), cx_shape(c, ids, 1, 2), cx_int1(c, 0) };

		p = cx_node(c, OP_SLICE, "Slice", in, 4, -1, NULL, 0);
	}
	sum = cx_bin(c, OP_ADD, "Add", w, p, seg >= 0 || c->n_out <= 2 ? -1 : c->out[2]);
	if (seg >= 0) {
		int in[2] = { c->in[4], seg };

		sum = cx_bin(c, OP_ADD, "Add", sum, cx_node(c, OP_GATHER, "Gather", in, 2, -1,
							    &ax0, 1),
			     c->n_out > 2 ? c->out[2] : -1);
	}
	outs[0] = c->out[0];
	cx_layernorm(c, sum, c->in[5], c->in[6], cx_float(c, "epsilon", 1e-12), outs, 1);
	if (c->n_out > 1 && c->out[1] >= 0) {
		if (mask >= 0) {
			int64_t one = 1;
			int in[2] = { mask, cx_ints(c, &one, 1) };
			struct attr a = attr_int("keepdims", 0);

			cx_node(c, OP_REDUCESUM, "ReduceSum", in, 2, c->out[1], &a, 1);
		} else {
			struct shape s = { 1, { { 0 } } };
			int32_t zero = 0;
			struct attr a = { 0 };
			int in;

			s.d[0] = dim_const(1);
			a.name = "value";
			a.kind = ATTR_TENSOR;
			a.tensor = graph_add_const(c->g, arena_printf(c->g->arena, "%s/zero",
								      c->self.name), DTYPE_I32, &s,
						   &zero);
			in = cx_shape(c, ids, 0, 1);
			cx_node(c, OP_CONSTANTOFSHAPE, "ConstantOfShape", &in, 1, c->out[1], &a, 1);
		}
	}
	return 0;
}

/* ---- attention ---- */

/* 0..n-1 (int64), n the scalar dim d of value x. */
static int cx_iota(struct cx *c, int x, int d)
{
	struct shape scalar = { 0 };
	int64_t zero = 0, one = 1;
	int in[3];

	in[0] = cx_shape(c, x, d, d + 1);
	in[1] = cx_ints(c, &zero, 1);
	in[1] = cx_node(c, OP_SQUEEZE, "Squeeze", in, 2, -1, NULL, 0);
	in[0] = graph_add_const(c->g, arena_printf(c->g->arena, "%s/const_%d", c->self.name,
						   c->k++), DTYPE_I64, &scalar, &zero);
	in[2] = graph_add_const(c->g, arena_printf(c->g->arena, "%s/const_%d", c->self.name,
						   c->k++), DTYPE_I64, &scalar, &one);
	return cx_node(c, OP_RANGE, "Range", in, 3, -1, NULL, 0);
}

/*
 * The causal bias [S, T] of queries x [B, S, ...] over keys whose count is
 * dim kdim of kv: filter where key j comes after query i + P (plen, a
 * [1] int64 past length, or -1 for 0), else 0 (added to the other masks,
 * as ONNX Runtime adds mask_filter_value).
 */
static int cx_causal_bias(struct cx *c, int x, int kv, int kdim, int plen, double filter)
{
	int64_t zero = 0, one = 1;
	int i = cx_iota(c, x, 1), in[3];

	if (plen >= 0)
		i = cx_bin(c, OP_ADD, "Add", i, plen, -1);
	in[0] = cx_bin(c, OP_GREATER, "Greater", cx_unsqueeze(c, cx_iota(c, kv, kdim), &zero, 1),
		       cx_unsqueeze(c, i, &one, 1), -1);
	in[1] = cx_scalar(c, filter);
	in[2] = cx_scalar(c, 0);
	return cx_node(c, OP_WHERE, "Where", in, 3, -1, NULL, 0);
}

/*
 * The additive bias of mask m ([B, L] or [B, S, L]: 0 where > 0, else
 * filter; [B]: 0 before each row's end, else filter), broadcasting to
 * [B, N, S, L]; L is dim kdim of kv. -1 after a diagnostic.
 */
static int cx_mask_bias(struct cx *c, int m, int kv, int kdim, double filter,
			const char *what)
{
	int r = cx_rank(c, m), keep, in[3];
	int64_t axes[2] = { 1, 2 }, one = 1;

	if (r == 2 || r == 3) {
		struct attr to = attr_int("to", dtype_to_onnx(DTYPE_F32));
		int mf = cx_node(c, OP_CAST, "Cast", &m, 1, -1, &to, 1);

		keep = cx_bin(c, OP_GREATER, "Greater", mf, cx_scalar_t(c, 0, DTYPE_F32), -1);
	} else if (r == 1) {
		struct attr to = attr_int("to", dtype_to_onnx(DTYPE_I64));
		int rng = cx_iota(c, kv, kdim), ends;

		ends = cx_unsqueeze(c, cx_node(c, OP_CAST, "Cast", &m, 1, -1, &to, 1), &one, 1);
		keep = cx_bin(c, OP_LESS, "Less", rng, ends, -1);
	} else {
		return cx_error(c, "%s must be [batch], [batch, total_seq] or [batch, seq, "
				"total_seq]%s", what,
				r < 0 ? " (its rank is not known at import)" : "");
	}
	in[0] = keep;
	in[1] = cx_scalar(c, 0);
	in[2] = cx_scalar(c, filter);
	return cx_unsqueeze(c, cx_node(c, OP_WHERE, "Where", in, 3, -1, NULL, 0), axes,
			    r == 3 ? 1 : 2);
}

/* x [B, S, n * H] as heads [B, n, S, H]. */
static int cx_heads(struct cx *c, int x, int64_t n)
{
	int64_t shape[4] = { 0, 0, n, -1 }, perm[4] = { 0, 2, 1, 3 };

	return cx_transpose(c, cx_reshape(c, x, shape, 4, -1), perm, 4, -1);
}

/*
 * Softmax(scale Q K^T + bias) V over n heads of q [B, S, n*dh], k [B, L,
 * n*dh], v [B, L, n*dv] (or, with heads4, k and v already [B, n, L, dh]
 * and [B, n, L, dv]): the heads split by Reshape and Transpose, merged
 * back into out [B, S, n*dv]. bias (or -1) broadcasts to [B, n, S, L].
 */
static void cx_attend(struct cx *c, int q, int k, int v, bool heads4, int64_t n, int64_t dh,
		      int64_t dv, double scale, int bias, int out)
{
	int64_t sq[4] = { 0, 0, n, dh }, sv[4] = { 0, 0, n, dv }, m3[3] = { 0, 0, n * dv };
	int64_t pq[4] = { 0, 2, 1, 3 }, pk[4] = { 0, 2, 3, 1 }, pt[4] = { 0, 1, 3, 2 };
	struct attr ax = attr_int("axis", -1);
	int s;

	q = cx_transpose(c, cx_reshape(c, q, sq, 4, -1), pq, 4, -1);
	if (heads4) {
		k = cx_transpose(c, k, pt, 4, -1);
	} else {
		k = cx_transpose(c, cx_reshape(c, k, sq, 4, -1), pk, 4, -1);
		v = cx_transpose(c, cx_reshape(c, v, sv, 4, -1), pq, 4, -1);
	}
	s = cx_bin(c, OP_MUL, "Mul", cx_bin(c, OP_MATMUL, "MatMul", q, k, -1),
		   cx_scalar(c, scale), -1);
	if (bias >= 0)
		s = cx_bin(c, OP_ADD, "Add", s, bias, -1);
	s = cx_node(c, OP_SOFTMAX, "Softmax", &s, 1, -1, &ax, 1);
	s = cx_transpose(c, cx_bin(c, OP_MATMUL, "MatMul", s, v, -1), pq, 4, -1);
	cx_reshape(c, s, m3, 3, out);
}

/* The sum of the additive biases a and b, either absent (-1). */
static int cx_add_bias(struct cx *c, int a, int b)
{
	return a < 0 ? b : b < 0 ? a : cx_bin(c, OP_ADD, "Add", a, b, -1);
}

/*
 * Attention(input, weights, bias?, mask_index?, past?, attention_bias?):
 * one MatMul by the merged Q/K/V weights, Slices, then cx_attend.
 */
static int cx_attention(struct cx *c)
{
	static const char *const known[] = {
		"num_heads", "i", "unidirectional", "i", "qkv_hidden_sizes", "ints",
		"past_present_share_buffer", "i", "mask_filter_value", "f", "scale", "f",
		"do_rotary", "i", "rotary_embedding_dim", "i", NULL };
	const Onnx__AttributeProto *sizes = cx_attr(c, "qkv_hidden_sizes");
	int64_t n = cx_int(c, "num_heads", 0), hq, hk, hv;
	int past = c->n_in > 4 ? c->in[4] : -1, plen = -1, qkv, q, k, v, bias = -1;
	bool cache = past >= 0 || (c->n_out > 1 && c->out[1] >= 0);

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (n <= 0)
		return cx_error(c, "attribute 'num_heads' is required and must be positive");
	if (cx_int(c, "do_rotary", 0))
		return cx_error(c, "do_rotary 1 is not supported");
	if ((c->n_in > 6 && c->in[6] >= 0) || cx_int(c, "past_present_share_buffer", 0))
		return cx_error(c, "past_sequence_length and past_present_share_buffer (a shared "
				"key/value buffer) are not supported");
	if (c->n_in < 2 || c->in[0] < 0 || c->in[1] < 0)
		return cx_error(c, "inputs 'input' and 'weights' are required");
	if (sizes) {
		if (sizes->n_ints != 3)
			return cx_error(c, "qkv_hidden_sizes must have 3 values");
		hq = sizes->ints[0], hk = sizes->ints[1], hv = sizes->ints[2];
	} else {
		int64_t w = cx_dim(c, c->in[1], 1);

		if (w < 0 || w % 3)
			return cx_error(c, "the weights' dim 1 must be known at import and a "
					"multiple of 3 without qkv_hidden_sizes");
		hq = hk = hv = w / 3;
	}
	if (hq != hk || hq % n || hv % n)
		return cx_error(c, "qkv_hidden_sizes must give Q and K one size, and Q's and V's "
				"a multiple of num_heads %lld", (long long)n);
	qkv = cx_bin(c, OP_MATMUL, "MatMul", c->in[0], c->in[1], -1);
	if (c->n_in > 2 && c->in[2] >= 0)
		qkv = cx_bin(c, OP_ADD, "Add", qkv, c->in[2], -1);
	q = cx_slice(c, qkv, -1, 0, hq);
	k = cx_slice(c, qkv, -1, hq, hq + hk);
	v = cx_slice(c, qkv, -1, hq + hk, hq + hk + hv);
	if (cache) {
		/* past [2, B, n, P, dh] before the new keys and values; present the same */
		struct attr ax2 = attr_int("axis", 2), ax0 = attr_int("axis", 0);
		int64_t zero = 0;
		int in[2];

		if (hv != hq)
			return cx_error(c, "with past or present, Q, K and V must have one hidden "
					"size");
		k = cx_heads(c, k, n);
		v = cx_heads(c, v, n);
		if (past >= 0) {
			for (int i = 0; i < 2; i++) {
				in[0] = past;
				in[1] = graph_add_const(c->g, arena_printf(c->g->arena,
						"%s/const_%d", c->self.name, c->k++), DTYPE_I64,
						&(struct shape){ 0 }, &(int64_t){ i });
				in[0] = cx_node(c, OP_GATHER, "Gather", in, 2, -1, &ax0, 1);
				in[1] = i ? v : k;
				*(i ? &v : &k) = cx_node(c, OP_CONCAT, "Concat", in, 2, -1, &ax2, 1);
			}
			plen = cx_shape(c, past, 3, 4);
		}
		if (c->n_out > 1 && c->out[1] >= 0) {
			in[0] = cx_unsqueeze(c, k, &zero, 1);
			in[1] = cx_unsqueeze(c, v, &zero, 1);
			cx_node(c, OP_CONCAT, "Concat", in, 2, c->out[1], &ax0, 1);
		}
	}
	if (c->n_in > 3 && c->in[3] >= 0 &&
	    (bias = cx_mask_bias(c, c->in[3], cache ? k : c->in[0], cache ? 2 : 1,
				 cx_float(c, "mask_filter_value", -10000.0), "mask_index")) < 0)
		return -1;
	if (cx_int(c, "unidirectional", 0))
		bias = cx_add_bias(c, bias, cx_causal_bias(c, c->in[0], cache ? k : c->in[0],
							   cache ? 2 : 1, plen,
							   cx_float(c, "mask_filter_value",
								    -10000.0)));
	bias = cx_add_bias(c, bias, c->n_in > 5 ? c->in[5] : -1);
	cx_attend(c, q, k, v, cache, n, hq / n, hv / n,
		  cx_float(c, "scale", 1 / sqrt((double)(hq / n))), bias, c->out[0]);
	return 0;
}

/*
 * MultiHeadAttention(query, key, value, bias?, key_padding_mask?,
 * attention_bias?, past_key?, past_value?), 3-D query, key and value:
 * opset 23's Attention on the 3-D form, whose scale defaults to
 * 1/sqrt(head_size) once shapes are known; with a cache on 4-D heads, the
 * past before the new keys and values (present_key, present_value) and
 * unidirectional's bound offset by the past's length.
 */
static int cx_multi_head_attention(struct cx *c)
{
	static const char *const known[] = {
		"num_heads", "i", "unidirectional", "i", "mask_filter_value", "f", "scale", "f",
		NULL };
	int64_t n = cx_int(c, "num_heads", 0);
	int past = c->n_in > 6 ? c->in[6] : -1, plen = -1;
	bool cache = past >= 0 || (c->n_out > 1 && c->out[1] >= 0) ||
		     (c->n_out > 2 && c->out[2] >= 0);
	struct attr a[4];
	int in[4], na = 0, bias = -1;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (n <= 0)
		return cx_error(c, "attribute 'num_heads' is required and must be positive");
	if (c->n_in < 3 || c->in[1] < 0 || c->in[2] < 0)
		return cx_error(c, "packed Q/K/V (no 'key' or 'value') is not supported");
	for (int i = 8; i < c->n_in; i++)
		if (c->in[i] >= 0)
			return cx_error(c, "past_sequence_length and cache_indirection are not "
					"supported");
	if (c->n_out > 3 && c->out[3] >= 0)
		return cx_error(c, "output 3 'qk' is not supported");
	if ((c->n_in > 6 && c->in[6] >= 0) != (c->n_in > 7 && c->in[7] >= 0))
		return cx_error(c, "past_key and past_value go together");
	for (int i = 0; i < 3; i++) {
		int r = cx_rank(c, c->in[i]);

		if (r >= 0 && r != 3)
			return cx_error(c, "input %d has rank %d; only 3-D query, key and value "
					"([batch, seq, hidden]) are supported", i, r);
	}
	in[0] = c->in[0], in[1] = c->in[1], in[2] = c->in[2];
	if (c->n_in > 3 && c->in[3] >= 0) {
		/* bias [D + D + Dv]: its parts added to Q, K and V, D query's dim 2 */
		int dq = cx_shape(c, c->in[0], 2, 3), dk = cx_bin(c, OP_ADD, "Add", dq, dq, -1);
		int big = cx_int1(c, INT64_MAX), zero = cx_int1(c, 0), s[4];

		s[0] = c->in[3], s[1] = zero, s[2] = dq, s[3] = zero;
		in[0] = cx_bin(c, OP_ADD, "Add", in[0],
			       cx_node(c, OP_SLICE, "Slice", s, 4, -1, NULL, 0), -1);
		s[1] = dq, s[2] = dk;
		in[1] = cx_bin(c, OP_ADD, "Add", in[1],
			       cx_node(c, OP_SLICE, "Slice", s, 4, -1, NULL, 0), -1);
		s[1] = dk, s[2] = big;
		in[2] = cx_bin(c, OP_ADD, "Add", in[2],
			       cx_node(c, OP_SLICE, "Slice", s, 4, -1, NULL, 0), -1);
	}
	if (cache) {
		/* heads [B, n, L, H] after past_key/past_value [B, n, P, H]: present */
		struct attr ax = attr_int("axis", 2);
		int cat[2];

		in[0] = cx_heads(c, in[0], n);
		in[1] = cx_heads(c, in[1], n);
		in[2] = cx_heads(c, in[2], n);
		for (int i = 1; i < 3; i++) {
			int out = c->n_out > i ? c->out[i] : -1;

			if (past >= 0) {
				cat[0] = c->in[5 + i], cat[1] = in[i];
				in[i] = cx_node(c, OP_CONCAT, "Concat", cat, 2, out, &ax, 1);
			} else if (out >= 0) {
				in[i] = cx_un(c, OP_IDENTITY, "Identity", in[i], out);
			}
		}
		if (past >= 0)
			plen = cx_shape(c, past, 2, 3);
	}
	if (c->n_in > 4 && c->in[4] >= 0 &&
	    (bias = cx_mask_bias(c, c->in[4], in[1], cache ? 2 : 1,
				 cx_float(c, "mask_filter_value", -10000.0),
				 "key_padding_mask")) < 0)
		return -1;
	if (cx_int(c, "unidirectional", 0) && cache)
		bias = cx_add_bias(c, bias, cx_causal_bias(c, c->in[0], in[1], 2, plen,
							   cx_float(c, "mask_filter_value",
								    -10000.0)));
	bias = cx_add_bias(c, bias, c->n_in > 5 ? c->in[5] : -1);
	in[3] = bias;
	if (!cache) {
		a[na++] = attr_int("q_num_heads", n);
		a[na++] = attr_int("kv_num_heads", n);
		if (cx_int(c, "unidirectional", 0))
			a[na++] = attr_int("is_causal", 1);
	}
	if (cx_attr(c, "scale"))
		a[na++] = attr_f("scale", cx_float(c, "scale", 1.0));
	if (!cache) {
		cx_node(c, OP_ATTENTION, "Attention", in, bias >= 0 ? 4 : 3, c->out[0], a, na);
	} else {
		int64_t perm[4] = { 0, 2, 1, 3 }, m3[3] = { 0, 0, -1 };
		int y = cx_node(c, OP_ATTENTION, "Attention", in, bias >= 0 ? 4 : 3, -1, a, na);

		cx_reshape(c, cx_transpose(c, y, perm, 4, -1), m3, 3, c->out[0]);
	}
	return 0;
}

/*
 * FlexAttention's graph attribute name (score_mod, prob_mod) applied to x
 * [B, H, L, S]: its nodes imported here, under NAME/name/, its one input
 * bound to x. Its output's value id, x when the node has no such graph, or
 * -1 after a diagnostic.
 */
static int cx_flex_mod(struct cx *c, const char *name, int x)
{
	const Onnx__AttributeProto *a = cx_attr(c, name);
	const Onnx__GraphProto *gp = a ? a->g : NULL;
	struct importer im = { 0 };
	int first = c->g->nodes.n, out = -1;

	if (!a)
		return x;
	if (!gp || gp->n_input != 1 || gp->n_output != 1)
		return cx_error(c, "%s must be a graph of one input and one output", name);
	im.ctx = c->im->ctx;
	im.g = c->g;
	im.base = c->im->base;
	im.dir = c->im->dir;
	im.prefix = arena_printf(c->g->arena, "%s/%s/", c->self.name, name);
	im.outer = &c->self;
	import_bind(&im, gp->input[0]->name, x);
	if (import_body(&im, gp) == 0 &&
	    (out = strmap_get(&im.names, gp->output[0]->name)) < 0)
		cx_error(c, "%s's output '%s' is not computed by any node", name,
			 gp->output[0]->name);
	strmap_free(&im.names);
	vec_free(&im.protos);
	/* the parent importer's forward-reference pass has no proto for them */
	for (int k = first; k < c->g->nodes.n; k++)
		vec_push(&c->im->protos, NULL);
	return out;
}

/*
 * FlexAttention (ai.onnx.preview, opset 26's preview domain): Q [B, Hq, L,
 * E], K [B, Hkv, S, E], V [B, Hkv, S, Ev], softmax(scale Q K^T) V over
 * every key. Without score_mod or prob_mod it is Attention of opset 23
 * with no mask, which computes the same (grouped heads; 16-bit types in
 * float32, rounded once). With one (Hq = Hkv), as its function body
 * writes it: MatMul, Mul by scale, score_mod's nodes, Softmax, prob_mod's
 * nodes, MatMul, in Q's type.
 */
static int cx_flex_attention(struct cx *c)
{
	static const char *const known[] = {
		"scale", "f", "softmax_precision", "i", "score_mod", "g", "prob_mod", "g", NULL };
	int64_t perm[4] = { 0, 1, 3, 2 }, e = cx_dim(c, c->in[0], 3);
	struct attr a[2];
	int na = 0, s;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		if (c->in[i] < 0 || cx_rank(c, c->in[i]) != 4)
			return cx_error(c, "Q, K and V must be 4-D [batch, heads, sequence, "
					"head_size]");
	if (!cx_attr(c, "score_mod") && !cx_attr(c, "prob_mod")) {
		if (cx_attr(c, "scale"))
			a[na++] = attr_f("scale", cx_float(c, "scale", 1.0));
		if (cx_attr(c, "softmax_precision"))
			a[na++] = attr_int("softmax_precision",
					   cx_int(c, "softmax_precision", 1));
		cx_node(c, OP_ATTENTION, "Attention", c->in, 3, c->out[0], a, na);
		return 0;
	}
	if (cx_dim(c, c->in[0], 1) < 0 || cx_dim(c, c->in[0], 1) != cx_dim(c, c->in[1], 1))
		return cx_error(c, "score_mod and prob_mod need Q and K of one static head count");
	if (!cx_attr(c, "scale") && e <= 0)
		return cx_error(c, "the head size (Q's last dim) must be static");
	s = cx_bin(c, OP_MATMUL, "MatMul", c->in[0], cx_transpose(c, c->in[1], perm, 4, -1), -1);
	s = cx_bin(c, OP_MUL, "Mul", s, cx_scalar(c, cx_attr(c, "scale") ? cx_float(c, "scale", 1.0)
						       : 1 / sqrt((double)e)), -1);
	if ((s = cx_flex_mod(c, "score_mod", s)) < 0)
		return -1;
	a[0] = attr_int("axis", -1);
	s = cx_node(c, OP_SOFTMAX, "Softmax", &s, 1, -1, a, 1);
	if ((s = cx_flex_mod(c, "prob_mod", s)) < 0)
		return -1;
	cx_bin(c, OP_MATMUL, "MatMul", s, c->in[2], c->out[0]);
	return 0;
}

/* RotaryEmbedding of x [B, S, n * H] at positions pos [B, S]. */
static int cx_rope(struct cx *c, int x, int pos, int64_t n)
{
	struct attr a[2] = { attr_int("interleaved", cx_int(c, "rotary_interleaved", 0)),
			     attr_int("num_heads", n) };
	int in[4] = { x, c->in[7], c->in[8], pos };

	return cx_node(c, OP_ROTARYEMBEDDING, "RotaryEmbedding", in, 4, -1, a, 2);
}

/*
 * GroupQueryAttention(query, key, value, past_key?, past_value?, seqlens_k,
 * total_sequence_length, cos_cache?, sin_cache?): the key/value cache as
 * concatenation, present = past ++ new along the sequence, every batch
 * row's past as long as past_key (P, 0 without one). Query i sees keys up
 * to P + i and, as ORT masks right padding, up to seqlens_k; rotary
 * positions are P + i. Into opset 23's Attention on 4-D heads (K and V
 * shared by num_heads / kv_num_heads query heads).
 */
static int cx_group_query_attention(struct cx *c)
{
	static const char *const known[] = {
		"num_heads", "i", "kv_num_heads", "i", "scale", "f", "softcap", "f",
		"local_window_size", "i", "do_rotary", "i", "rotary_interleaved", "i",
		"smooth_softmax", "i", "qk_output", "i", NULL };
	int64_t n = cx_int(c, "num_heads", 0), nkv = cx_int(c, "kv_num_heads", 0);
	int64_t zero = 0, one = 1, axes[2] = { 1, 2 }, perm[4] = { 0, 2, 1, 3 }, m3[3] = { 0, 0, -1 };
	bool past = c->n_in > 3 && c->in[3] >= 0;
	int q = c->in[0], k = c->in[1], v = c->in[2], plen, in[4], keep, pad, y;
	struct attr a[3];
	int na = 0;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (n <= 0 || nkv <= 0 || n % nkv)
		return cx_error(c, "num_heads and kv_num_heads must be positive, num_heads a "
				"multiple of kv_num_heads");
	if (cx_int(c, "local_window_size", -1) != -1 || cx_int(c, "smooth_softmax", 0) ||
	    cx_int(c, "qk_output", 0))
		return cx_error(c, "local_window_size, smooth_softmax and qk_output are not "
				"supported");
	if (c->n_in < 7 || k < 0 || v < 0)
		return cx_error(c, "packed Q/K/V (no 'key' or 'value') is not supported");
	if (past != (c->in[4] >= 0))
		return cx_error(c, "past_key and past_value go together");
	if (c->in[5] < 0)
		return cx_error(c, "input 'seqlens_k' is required");
	for (int i = 9; i < c->n_in; i++)
		if (c->in[i] >= 0)
			return cx_error(c, "input %d (position_ids, attention_bias, head_sink) is "
					"not supported", i);
	if (c->n_out > 3 && c->out[3] >= 0)
		return cx_error(c, "output 3 'output_qk' is not supported");
	if (cx_int(c, "do_rotary", 0) && (c->n_in < 9 || c->in[7] < 0 || c->in[8] < 0))
		return cx_error(c, "do_rotary needs cos_cache and sin_cache");
	/* P, the past's length: past_key's dim 2 */
	plen = past ? cx_shape(c, c->in[3], 2, 3) : cx_int1(c, 0);
	if (cx_int(c, "do_rotary", 0)) {
		/* positions [1, S] = P + 0..S-1, broadcast over the batch by Expand */
		int pos = cx_bin(c, OP_ADD, "Add", cx_iota(c, q, 1), plen, -1);

		in[0] = cx_unsqueeze(c, pos, &zero, 1);
		in[1] = cx_shape(c, q, 0, 2);
		pos = cx_node(c, OP_EXPAND, "Expand", in, 2, -1, NULL, 0);
		q = cx_rope(c, q, pos, n);
		k = cx_rope(c, k, pos, nkv);
	}
	k = cx_heads(c, k, nkv);
	v = cx_heads(c, v, nkv);
	if (past) {
		struct attr ax = attr_int("axis", 2);

		in[0] = c->in[3], in[1] = k;
		k = cx_node(c, OP_CONCAT, "Concat", in, 2, c->n_out > 1 ? c->out[1] : -1, &ax, 1);
		in[0] = c->in[4], in[1] = v;
		v = cx_node(c, OP_CONCAT, "Concat", in, 2, c->n_out > 2 ? c->out[2] : -1, &ax, 1);
	} else {
		if (c->n_out > 1 && c->out[1] >= 0)
			k = cx_un(c, OP_IDENTITY, "Identity", k, c->out[1]);
		if (c->n_out > 2 && c->out[2] >= 0)
			v = cx_un(c, OP_IDENTITY, "Identity", v, c->out[2]);
	}
	/* keep [B, 1, S, T]: key j <= P + i and j <= seqlens_k[b] */
	{
		int rt = cx_iota(c, k, 2), lim;
		struct attr to = attr_int("to", dtype_to_onnx(DTYPE_I64));

		lim = cx_bin(c, OP_ADD, "Add", cx_iota(c, q, 1), plen, -1);
		keep = cx_bin(c, OP_LESSOREQUAL, "LessOrEqual", cx_unsqueeze(c, rt, &zero, 1),
			      cx_unsqueeze(c, lim, &one, 1), -1);
		lim = cx_node(c, OP_CAST, "Cast", &c->in[5], 1, -1, &to, 1);
		pad = cx_bin(c, OP_LESSOREQUAL, "LessOrEqual", rt, cx_unsqueeze(c, lim, &one, 1),
			     -1);
		keep = cx_bin(c, OP_AND, "And", keep, cx_unsqueeze(c, pad, axes, 2), -1);
	}
	in[0] = cx_heads(c, q, n), in[1] = k, in[2] = v, in[3] = keep;
	if (cx_attr(c, "scale") && cx_float(c, "scale", 0) != 0)
		a[na++] = attr_f("scale", cx_float(c, "scale", 0));
	if (cx_float(c, "softcap", 0) != 0)
		a[na++] = attr_f("softcap", cx_float(c, "softcap", 0));
	y = cx_node(c, OP_ATTENTION, "Attention", in, 4, -1, a, na);
	cx_reshape(c, cx_transpose(c, y, perm, 4, -1), m3, 3, c->out[0]);
	return 0;
}

/* RotaryEmbedding(input, position_ids, cos_cache, sin_cache): opset 23's op. */
static int cx_rotary_embedding(struct cx *c)
{
	static const char *const known[] = {
		"interleaved", "i", "rotary_embedding_dim", "i", "num_heads", "i", "scale", "f",
		"is_packed_batching", "i", NULL };
	struct attr a[3];
	int in[4], r;

	if (cx_check_attrs(c, known) < 0)
		return -1;
	if (cx_float(c, "scale", 1.0) != 1.0)
		return cx_error(c, "scale other than 1 is not supported");
	if (cx_int(c, "is_packed_batching", 0))
		return cx_error(c, "is_packed_batching 1 is not supported");
	if (c->n_in < 4 || c->in[1] < 0 || c->in[2] < 0 || c->in[3] < 0)
		return cx_error(c, "inputs 'position_ids', 'cos_cache' and 'sin_cache' are "
				"required");
	r = cx_rank(c, c->in[1]);
	if (r >= 0 && r != 2)
		return cx_error(c, "position_ids must be [batch, seq] (an offset of shape [1] is "
				"not supported)");
	in[0] = c->in[0], in[1] = c->in[2], in[2] = c->in[3], in[3] = c->in[1];
	a[0] = attr_int("interleaved", cx_int(c, "interleaved", 0));
	a[1] = attr_int("rotary_embedding_dim", cx_int(c, "rotary_embedding_dim", 0));
	a[2] = attr_int("num_heads", cx_int(c, "num_heads", 0));
	cx_node(c, OP_ROTARYEMBEDDING, "RotaryEmbedding", in, 4, c->out[0], a, 3);
	return 0;
}

/* ---- the table ---- */

static const struct contrib_op {
	const char *name;
	bool default_domain;	/* also taken in the default domain (ORT registers it there);
				   FlexAttention: in ai.onnx.preview alone */
	int max_opset;		/* there, only below this opset (0: any) */
	int (*run)(struct cx *c);
	int min_in, max_in, max_out;
} contrib_ops[] = {
	{ "Attention", false, 0, cx_attention, 2, 7, 2 },
	{ "BiasAdd", false, 0, cx_bias_add, 3, 3, 1 },
	{ "BiasGelu", false, 0, cx_gelu, 2, 2, 1 },
	{ "EmbedLayerNormalization", false, 0, cx_embed_layer_norm, 7, 9, 3 },
	{ "FastGelu", false, 0, cx_gelu, 1, 2, 1 },
	{ "FlexAttention", false, 0, cx_flex_attention, 3, 3, 1 },
	{ "FusedMatMul", false, 0, cx_fused_matmul, 2, 2, 1 },
	{ "GroupQueryAttention", false, 0, cx_group_query_attention, 7, 12, 4 },
	{ "Gelu", false, 0, cx_gelu, 1, 1, 1 },
	{ "LayerNormalization", true, 17, cx_layer_norm, 2, 3, 3 },
	{ "MatMulNBits", false, 0, cx_matmul_nbits, 3, 6, 1 },
	{ "MultiHeadAttention", false, 0, cx_multi_head_attention, 1, 10, 4 },
	{ "QLinearAdd", false, 0, cx_qlinear_add, 7, 8, 1 },
	{ "QLinearAveragePool", false, 0, cx_qlinear_pool, 4, 5, 1 },
	{ "QLinearConcat", false, 0, cx_qlinear_pool, 5, CX_IN_MAX, 1 },
	{ "QLinearGlobalAveragePool", false, 0, cx_qlinear_pool, 4, 5, 1 },
	{ "QuickGelu", false, 0, cx_quick_gelu, 1, 1, 1 },
	{ "RotaryEmbedding", false, 0, cx_rotary_embedding, 4, 4, 1 },
	{ "SimplifiedLayerNormalization", true, 0, cx_simplified_layer_norm, 2, 2, 2 },
	{ "SkipLayerNormalization", false, 0, cx_skip_layer_norm, 3, 5, 4 },
	{ "SkipSimplifiedLayerNormalization", false, 0, cx_skip_simplified_layer_norm, 3, 4, 4 },
};

static bool is_microsoft(const char *d)
{
	return d && !strcmp(d, "com.microsoft");
}

static bool is_preview_flex(const Onnx__NodeProto *np)
{
	return np->domain && !strcmp(np->domain, "ai.onnx.preview") && np->op_type &&
	       !strcmp(np->op_type, "FlexAttention");
}

static const struct contrib_op *contrib_find(const struct graph *g, const Onnx__NodeProto *np)
{
	bool ms = is_microsoft(np->domain);
	bool dflt = !np->domain || !np->domain[0] || !strcmp(np->domain, "ai.onnx");

	if (is_preview_flex(np)) {
		for (size_t i = 0; i < ARRAY_SIZE(contrib_ops); i++)
			if (!strcmp(contrib_ops[i].name, "FlexAttention"))
				return &contrib_ops[i];
	}
	if (!np->op_type || (!ms && !dflt) || !strcmp(np->op_type, "FlexAttention"))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(contrib_ops); i++) {
		const struct contrib_op *o = &contrib_ops[i];

		if (strcmp(o->name, np->op_type))
			continue;
		if (ms)
			return o;
		if (o->default_domain && (!o->max_opset || g->opset < o->max_opset))
			return o;
	}
	return NULL;
}

bool onnx_contrib_is(const struct graph *g, const Onnx__NodeProto *np)
{
	return is_microsoft(np->domain) || contrib_find(g, np);
}

int onnx_contrib_import(struct importer *im, const Onnx__NodeProto *np, int index)
{
	const struct contrib_op *o = contrib_find(im->g, np);
	struct graph *g = im->g;
	struct arena *ar = g->arena;
	struct cx c = { 0 };
	const char *raw;
	int rc = 0;

	c.im = im;
	c.g = g;
	c.np = np;
	raw = np->name && np->name[0] ? arena_strdup(ar, np->name)
		: arena_printf(ar, "%s_%d", np->op_type, index);
	c.self.name = import_scoped(im, raw);
	c.self.op_type = arena_strdup(ar, np->op_type);
	c.self.onnx_index = im->outer ? -1 : index;
	import_span(im, &c.self, raw);
	c.ft = DTYPE_F32;
	if (!o) {
		diag_error(im->ctx, "%s: %s op '%s' is not supported", node_loc(g, &c.self),
			   np->domain, np->op_type);
		rc = -1;
	} else if ((int)np->n_input < o->min_in || (int)np->n_input > o->max_in ||
		   (int)np->n_output < 1 || (int)np->n_output > o->max_out) {
		diag_error(im->ctx, "%s: %zu inputs and %zu outputs, expected %d to %d inputs and 1 "
			   "to %d outputs", node_loc(g, &c.self), np->n_input, np->n_output,
			   o->min_in, o->max_in, o->max_out);
		rc = -1;
	}
	c.n_in = (int)np->n_input < CX_IN_MAX ? (int)np->n_input : CX_IN_MAX;
	for (int i = 0; i < c.n_in && rc == 0; i++) {
		c.in[i] = np->input[i][0] ? strmap_get(&im->names, np->input[i]) : -1;
		if (np->input[i][0] && c.in[i] < 0) {
			diag_error(im->ctx, "%s: input %d '%s' is not defined before the node",
				   node_loc(g, &c.self), i, np->input[i]);
			rc = -1;
		}
		if (c.in[i] >= 0 && c.ft == DTYPE_F32 &&
		    dtype_is_float(g->values.v[c.in[i]].dtype))
			c.ft = g->values.v[c.in[i]].dtype;
	}
	c.n_out = (int)np->n_output < CX_OUT_MAX ? (int)np->n_output : CX_OUT_MAX;
	for (int i = 0; i < (int)np->n_output; i++) {
		int v = -1;

		if (np->output[i][0]) {
			v = graph_add_value(g, import_scoped(im, np->output[i]));
			import_bind(im, np->output[i], v);
		}
		if (i < c.n_out)
			c.out[i] = v;
	}
	if (rc == 0 && c.out[0] < 0) {
		diag_error(im->ctx, "%s: output 0 has no name", node_loc(g, &c.self));
		rc = -1;
	}
	if (rc == 0)
		rc = o->run(&c);
	return rc;
}
