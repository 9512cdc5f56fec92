/*
 * onnx_normalize.c - one form per op whatever the opset: attributes that
 * later opsets turned into inputs become constant inputs here, so shape
 * inference and lowering only know the newest form.
 *
 *   Reshape  <5   shape attr             -> input 1
 *   Slice    <10  starts/ends/axes attrs -> inputs 1..3
 *   Clip     <11  min/max attrs          -> inputs 1, 2
 *   Pad      <11  pads (paddings) / value attrs -> inputs 1, 2
 *   TopK     <10  k attr                 -> input 1
 *   Split, Squeeze, Unsqueeze, ReduceSum <13  attr -> input 1
 *   other Reduce*  <18  axes attr -> input 1
 *   RNN, GRU, LSTM  absent trailing outputs -> unread values, as import
 *                   makes for empty names: their kernel keeps its state there
 *
 * Forms that opset 18 added next to the old ones (Split's num_outputs,
 * Pad's axes input, Resize's axes) are read by the ops themselves.
 */
#include "onnx_import.h"

#include <string.h>

#include "../ops/ops.h"

/* Sets input slot i of n to value id, growing the inputs (absent ones are -1). */
static void set_input(struct graph *g, struct node *n, int i, int id)
{
	if (i >= n->n_in) {
		int *in = arena_alloc(g->arena, sizeof(int) * (size_t)(i + 1));

		memcpy(in, n->in, sizeof(int) * (size_t)n->n_in);
		for (int j = n->n_in; j < i; j++)
			in[j] = -1;
		n->in = in;
		n->n_in = i + 1;
	}
	n->in[i] = id;
}

/* Sets input slot i of n to a new 1-D int64 constant. */
static void set_const_input(struct graph *g, struct node *n, int i, const int64_t *v, int count,
			    const char *what)
{
	struct shape s = { 1, { { count, 0, { 0 } } } };

	set_input(g, n, i, graph_add_const(g, arena_printf(g->arena, "%s.%s", n->name, what),
					   DTYPE_I64, &s, v));
}

static void set_scalar_input(struct graph *g, struct node *n, int i, enum dtype t, double v,
			     const char *what)
{
	struct shape s = { 0 };
	unsigned char buf[8];
	int id;

	if (t == DTYPE_F64)
		memcpy(buf, &v, 8);
	else {
		float f = (float)v;

		memcpy(buf, &f, 4);
		t = DTYPE_F32;
	}
	id = graph_add_const(g, arena_printf(g->arena, "%s.%s", n->name, what), t, &s, buf);
	set_input(g, n, i, id);
}

/* Moves ints attribute name (if present) to input slot i. */
static void attr_to_input(struct graph *g, struct node *n, const char *name, int i)
{
	const int64_t *v;
	int count = node_attr_ints(n, name, &v);

	if (count >= 0)
		set_const_input(g, n, i, v, count, name);
}

/*
 * Gives n all count outputs: the ones the model leaves out become values
 * nothing reads, named like the ones import makes for empty output names.
 */
static void pad_outputs(struct graph *g, struct node *n, int count)
{
	int *out;

	if (n->n_out >= count)
		return;
	out = arena_alloc(g->arena, sizeof(int) * (size_t)count);
	memcpy(out, n->out, sizeof(int) * (size_t)n->n_out);
	for (int i = n->n_out; i < count; i++) {
		out[i] = graph_add_value(g, arena_printf(g->arena, "%s.out%d", n->name, i));
		g->values.v[out[i]].producer = (int)(n - g->nodes.v);
	}
	n->out = out;
	n->n_out = count;
}

static bool is_reduce(enum op op)
{
	const char *nm = op_info(op)->name;

	return !strncmp(nm, "Reduce", 6);
}

/*
 * PRelu before opset 7 applies a slope of X's channel count along axis 1,
 * not by numpy broadcasting: a constant slope that only this node reads
 * gets the shape [C, 1, ...] under which broadcasting means the same.
 * Other slopes are left for shape inference to judge.
 */
static void prelu_channel_slope(struct graph *g, struct node *n)
{
	struct value *x = node_in(g, n, 0), *sl = node_in(g, n, 1);
	int r;

	if (!x || !sl || !x->has_shape || !sl->data || sl->shape.rank != 1 ||
	    x->shape.rank < 3 || !dim_eq(sl->shape.d[0], x->shape.d[1]) ||
	    dim_eq(sl->shape.d[0], dim_const(1)))
		return;
	for (int k = 0; k < g->nodes.n; k++)
		for (int i = 0; i < g->nodes.v[k].n_in; i++)
			if (&g->nodes.v[k] != n && g->nodes.v[k].in[i] == n->in[1])
				return;
	if (sl->flags & VALUE_OUTPUT)
		return;
	r = x->shape.rank - 1;
	sl->shape.rank = r;
	for (int k = 1; k < r; k++)
		sl->shape.d[k] = dim_const(1);
}

/* StringNormalizer's stopwords become input 1, a 1-D string constant (when there are any). */
static void stopwords_input(struct graph *g, struct node *n)
{
	const struct attr *a = node_attr(n, "stopwords");
	struct shape s = { 1, { { 0, 0, { 0 } } } };

	if (!a || a->kind != ATTR_STRINGS || a->n == 0 || n->n_in != 1)
		return;
	s.d[0] = dim_const(a->n);
	set_input(g, n, 1, graph_add_const(g, arena_printf(g->arena, "%s.stopwords", n->name),
					   DTYPE_STR, &s, a->strs));
}

/*
 * String attribute name (RegexFullMatch's pattern, StringSplit's delimiter)
 * becomes input 1, a [1] string constant: "" when absent, except a missing
 * pattern, which infer reports.
 */
static void string_attr_input(struct graph *g, struct node *n, const char *name)
{
	const struct attr *a = node_attr(n, name);
	struct shape s = { 1, { { 1, 0, { 0 } } } };
	const char *v = a && a->kind == ATTR_STRING ? a->s : "";

	if (n->n_in != 1 || ((!a || a->kind != ATTR_STRING) && n->op == OP_REGEXFULLMATCH))
		return;
	set_input(g, n, 1, graph_add_const(g, arena_printf(g->arena, "%s.%s", n->name, name),
					   DTYPE_STR, &s, &v));
}

/* TfIdfVectorizer's pool_strings become input 1, a 1-D string constant. */
static void pool_strings_input(struct graph *g, struct node *n)
{
	const struct attr *a = node_attr(n, "pool_strings");
	struct shape s = { 1, { { 0, 0, { 0 } } } };

	if (!a || a->kind != ATTR_STRINGS || n->n_in != 1 || node_attr(n, "pool_int64s"))
		return;
	s.d[0] = dim_const(a->n);
	set_input(g, n, 1, graph_add_const(g, arena_printf(g->arena, "%s.pool", n->name),
					   DTYPE_STR, &s, a->strs));
}

void onnx_normalize_node(struct graph *g, struct node *n)
{
	int64_t opset = g->opset;

	switch (n->op) {
	case OP_RNN:
	case OP_GRU:
		pad_outputs(g, n, 2);
		break;
	case OP_LSTM:
		pad_outputs(g, n, 3);
		break;
	case OP_RESHAPE:
		if (opset < 5)
			attr_to_input(g, n, "shape", 1);
		break;
	case OP_SQUEEZE:
	case OP_UNSQUEEZE:
		if (opset < 13)
			attr_to_input(g, n, "axes", 1);
		break;
	case OP_SPLIT:
		if (opset < 13 && n->n_in < 2)
			attr_to_input(g, n, "split", 1);
		break;
	case OP_SLICE:
		if (opset < 10) {
			attr_to_input(g, n, "starts", 1);
			attr_to_input(g, n, "ends", 2);
			attr_to_input(g, n, "axes", 3);
		}
		break;
	case OP_PAD:
		if (opset < 11) {
			struct value *x = node_in(g, n, 0);
			enum dtype t = x && x->dtype ? x->dtype : DTYPE_F32;

			attr_to_input(g, n, node_attr(n, "pads") ? "pads" : "paddings", 1);
			if (node_attr(n, "value"))
				set_scalar_input(g, n, 2, t, node_attr_float(n, "value", 0),
						 "value");
		}
		break;
	case OP_TOPK:
		if (opset < 10 && node_attr(n, "k")) {
			int64_t k = node_attr_int(n, "k", 0);

			set_const_input(g, n, 1, &k, 1, "k");
		}
		break;
	case OP_PRELU:
		if (opset < 7)
			prelu_channel_slope(g, n);
		break;
	case OP_CLIP:
		if (opset < 11) {
			struct value *x = node_in(g, n, 0);
			enum dtype t = x && x->dtype ? x->dtype : DTYPE_F32;

			if (node_attr(n, "min"))
				set_scalar_input(g, n, 1, t, node_attr_float(n, "min", 0),
						 "min");
			if (node_attr(n, "max"))
				set_scalar_input(g, n, 2, t, node_attr_float(n, "max", 0),
						 "max");
		}
		break;
	case OP_STRINGNORMALIZER:
		stopwords_input(g, n);
		break;
	case OP_REGEXFULLMATCH:
		string_attr_input(g, n, "pattern");
		break;
	case OP_STRINGSPLIT:
		string_attr_input(g, n, "delimiter");
		break;
	case OP_TFIDFVECTORIZER:
		pool_strings_input(g, n);
		break;
	default:
		if (is_reduce(n->op) && opset < (n->op == OP_REDUCESUM ? 13 : 18))
			attr_to_input(g, n, "axes", 1);
		break;
	}
}

int onnx_normalize(struct graph *g)
{
	for (int k = 0; k < g->nodes.n; k++)
		onnx_normalize_node(g, &g->nodes.v[k]);
	return 0;
}
