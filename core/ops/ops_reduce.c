/*
 * ops_reduce.c - Reduce*, ArgMax/ArgMin and the softmax family.
 *
 * A reduction loops over the kept axes outside and the reduced axes inside,
 * with a scalar accumulator: init, combine and finish come from one table.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* Marks reduced axes in red[]; returns 1 for "identity" (noop), 0, or -1. */
static int reduce_axes(struct graph *g, const struct node *n, int rank, bool *red)
{
	struct node *nn = (struct node *)n;
	int64_t *v, cnt = 0;

	memset(red, 0, sizeof(bool) * MAX_RANK);
	/* an empty axes tensor, even one fed by the user, is no axes */
	if (node_in(g, n, 1) && !(shape_is_static(&node_in(g, n, 1)->shape) &&
				  shape_numel_static(&node_in(g, n, 1)->shape) == 0)) {
		if (infer_const_ints(g, nn, 1, &v, &cnt) < 0)
			return -1;
		for (int i = 0; i < cnt; i++) {
			int a = infer_axis(g, nn, v[i], rank);

			if (a < 0)
				return -1;
			red[a] = true;
		}
	}
	if (cnt == 0) {
		if (node_attr_int(n, "noop_with_empty_axes", 0))
			return 1;
		for (int i = 0; i < rank; i++)
			red[i] = true;
	}
	return 0;
}

/* Whether n reduces over axes known only at run time (a non-empty data tensor). */
static bool reduce_is_data(struct graph *g, const struct node *n)
{
	struct value *a = node_in(g, n, 1);

	return infer_is_data(g, (struct node *)n, 1) && shape_is_static(&a->shape) &&
	       shape_numel_static(&a->shape) > 0;
}

/*
 * Axes known only at run time: the output's dims are data symbols (its rank
 * follows from keepdims and the axes' count), and per input axis the shape
 * function binds whether it is reduced and its stride in the output.
 */
static int infer_reduce_data(struct graph *g, struct node *n, struct value *x)
{
	int64_t cnt = shape_numel_static(&node_in(g, n, 1)->shape);
	bool keep = node_attr_int(n, "keepdims", 1) != 0;

	if (cnt > x->shape.rank) {
		diag_error(g->ctx, "%s: %lld axes for rank %d", node_loc(g, n), (long long)cnt,
			   x->shape.rank);
		return -1;
	}
	if (infer_set_data(g, n, 0, x->dtype, keep ? x->shape.rank : x->shape.rank - cnt) < 0)
		return -1;
	for (int k = 0; k < x->shape.rank; k++) {
		graph_data_param(g, n->out[0], "red", k);
		graph_data_param(g, n->out[0], "ystride", k);
	}
	return 0;
}

int infer_reduce(struct graph *g, struct node *n)
{
	struct value *x;
	bool red[MAX_RANK];
	bool keep = node_attr_int(n, "keepdims", 1) != 0;
	struct shape s = { 0 };
	int rc;

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (reduce_is_data(g, n))
		return infer_reduce_data(g, n, x);
	rc = reduce_axes(g, n, x->shape.rank, red);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		infer_set(g, n, 0, x->dtype, &x->shape);
		return 0;
	}
	for (int i = 0; i < x->shape.rank; i++) {
		if (!red[i])
			s.d[s.rank++] = x->shape.d[i];
		else if (keep)
			s.d[s.rank++] = dim_const(1);
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

static double reduce_init(enum op op, enum dtype t)
{
	if (t == DTYPE_BOOL)	/* ReduceMax/ReduceMin-20: any / all */
		return op == OP_REDUCEMIN || op == OP_REDUCEPROD;
	switch (op) {
	case OP_REDUCEMAX:
		return dtype_is_float(t) ? -INFINITY : dtype_is_signed(t) ?
			(t == DTYPE_I64 ? (double)INT64_MIN : t == DTYPE_I32 ? (double)INT32_MIN
			 : t == DTYPE_I16 ? -32768.0 : -128.0) : 0;
	case OP_REDUCEMIN:
		return dtype_is_float(t) ? INFINITY : t == DTYPE_I64 ? (double)INT64_MAX
			: t == DTYPE_I32 ? (double)INT32_MAX : t == DTYPE_U32 ? 4294967295.0
			: t == DTYPE_U64 ? 18446744073709551615.0 : t == DTYPE_I16 ? 32767.0
			: t == DTYPE_U16 ? 65535.0 : t == DTYPE_I8 ? 127.0 : 255.0;
	case OP_REDUCEPROD:
		return 1;
	default:
		return 0;
	}
}

/* acc combined with the next value v. */
static struct tir *reduce_combine(struct tir_builder *b, enum op op, enum dtype t,
				  struct tir *acc, struct tir *v)
{
	switch (op) {
	case OP_REDUCEMAX: return tir_bin(b, BIN_MAX, acc, v);
	case OP_REDUCEMIN: return tir_bin(b, BIN_MIN, acc, v);
	case OP_REDUCEPROD: return tir_mul(b, acc, v);
	case OP_REDUCEL1:
		return tir_add(b, acc, dtype_is_float(t) ? tir_call1(b, INTRIN_FABS, v)
			       : tir_select(b, tir_bin(b, BIN_LT, v, tir_const(b, t, 0)),
					    tir_un(b, UN_NEG, v), v));
	case OP_REDUCEL2: case OP_REDUCESUMSQUARE: return tir_add(b, acc, tir_mul(b, v, v));
	case OP_REDUCELOGSUMEXP: return tir_add(b, acc, tir_call1(b, INTRIN_EXP, v));
	default: return tir_add(b, acc, v);
	}
}

/* The result from the accumulator of count values. */
static struct tir *reduce_finish(struct tir_builder *b, enum op op, enum dtype t,
				 struct tir *acc, struct tir *count)
{
	switch (op) {
	case OP_REDUCEMEAN: return tir_bin(b, BIN_DIV, acc, tir_cast(b, t, count));
	case OP_REDUCEL2:
		return dtype_is_float(t) ? tir_call1(b, INTRIN_SQRT, acc)
			: tir_cast(b, t, tir_call1(b, INTRIN_SQRT, tir_cast(b, DTYPE_F64, acc)));
	case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP: return tir_call1(b, INTRIN_LOG, acc);
	default: return acc;
	}
}

/*
 * Axes known at run time: every input axis has an outer loop (its length
 * when kept, else 1) and an inner one (its length when reduced, else 1),
 * with the flags and output strides its shape function bound.
 */
static int lower_reduce_data(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	enum dtype t = x->dtype;
	int r = x->shape.rank, out = L->n->out[0];
	struct tir *red[MAX_RANK], *outer[MAX_RANK], *xi[MAX_RANK], *acc, *off = tir_int(b, 0);
	struct tir *count = tir_int(b, 1), *one = tir_int(b, 1);

	for (int k = 0; k < r; k++) {
		red[k] = tir_bin(b, BIN_NE, tir_dim(b, graph_data_param(L->g, out, "red", k)),
				 tir_int(b, 0));
		outer[k] = tir_loop(b, tir_select(b, red[k], one, tir_dim(b, x->shape.d[k])));
		off = tir_add(b, off, tir_mul(b, outer[k], tir_dim(b, graph_data_param(
			L->g, out, "ystride", k))));
	}
	acc = tir_let(b, "acc", tir_const(b, t, reduce_init(L->n->op, t)));
	for (int k = 0; k < r; k++) {
		struct tir *len = tir_select(b, red[k], tir_dim(b, x->shape.d[k]), one);

		xi[k] = tir_add(b, outer[k], tir_loop(b, len));
		count = tir_mul(b, count, len);
	}
	tir_assign(b, acc, reduce_combine(b, L->n->op, t, acc,
					  tir_load(b, L->in[0], lower_offset(L, &x->shape, xi))));
	lower_end_loops(L, r);
	tir_store(b, L->out[0], off, reduce_finish(b, L->n->op, t, acc, count));
	lower_end_loops(L, r);
	return 0;
}

int lower_reduce(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	enum op op = L->n->op;
	enum dtype t = x->dtype;
	bool red[MAX_RANK];
	struct tir *idx[MAX_RANK], *oi[MAX_RANK], *acc, *count = tir_int(b, 1);
	struct shape ks = { 0 };
	int rc, no = 0, nl = 0;

	if (node_is_dynamic(L->g, L->n))
		return lower_reduce_data(L);
	rc = reduce_axes(L->g, L->n, x->shape.rank, red);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return lower_copy(L);
	for (int k = 0; k < x->shape.rank; k++)
		if (!red[k]) {
			idx[k] = tir_loop(b, tir_dim(b, x->shape.d[k]));
			nl++;
		}
	acc = tir_let(b, "acc", tir_const(b, t, reduce_init(op, t)));
	for (int k = 0; k < x->shape.rank; k++)
		if (red[k]) {
			idx[k] = tir_loop(b, tir_dim(b, x->shape.d[k]));
			count = tir_mul(b, count, tir_dim(b, x->shape.d[k]));
		}
	tir_assign(b, acc, reduce_combine(b, op, t, acc,
					  tir_load(b, L->in[0], lower_offset(L, &x->shape, idx))));
	for (int k = 0; k < x->shape.rank; k++)
		if (red[k])
			tir_end(b);
	for (int k = 0; k < x->shape.rank; k++)
		if (!red[k]) {
			oi[no++] = idx[k];
			ks.d[ks.rank++] = x->shape.d[k];
		}
	tir_store(b, L->out[0], lower_offset(L, &ks, oi), reduce_finish(b, op, t, acc, count));
	lower_end_loops(L, nl);
	return 0;
}

/* ---- ArgMax / ArgMin ---- */

int infer_arg(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;
	int axis;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	axis = infer_axis(g, n, node_attr_int(n, "axis", 0), x->shape.rank);
	if (axis < 0)
		return -1;
	s = x->shape;
	if (node_attr_int(n, "keepdims", 1)) {
		s.d[axis] = dim_const(1);
	} else {
		for (int i = axis; i < s.rank - 1; i++)
			s.d[i] = s.d[i + 1];
		s.rank--;
	}
	infer_set(g, n, 0, DTYPE_I64, &s);
	return 0;
}

int lower_arg(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	bool last = node_attr_int(L->n, "select_last_index", 0) != 0;
	bool is_max = L->n->op == OP_ARGMAX;
	struct tir *idx[MAX_RANK], *best, *bi, *v, *better;
	struct shape ks = x->shape;
	int nl = 0;

	if (axis < 0)
		axis += x->shape.rank;
	for (int k = 0; k < x->shape.rank; k++)
		if (k != axis) {
			idx[k] = tir_loop(b, tir_dim(b, x->shape.d[k]));
			nl++;
		}
	idx[axis] = tir_int(b, 0);
	best = tir_let(b, "best", tir_load(b, L->in[0], lower_offset(L, &x->shape, idx)));
	bi = tir_let(b, "bi", tir_int(b, 0));
	idx[axis] = tir_loop(b, tir_dim(b, x->shape.d[axis]));
	v = tir_let(b, "v", tir_load(b, L->in[0], lower_offset(L, &x->shape, idx)));
	better = tir_bin(b, is_max ? (last ? BIN_GE : BIN_GT) : (last ? BIN_LE : BIN_LT), v, best);
	tir_if(b, better);
	tir_assign(b, best, v);
	tir_assign(b, bi, idx[axis]);
	tir_end(b);
	tir_end(b);
	ks.d[axis] = dim_const(1);
	idx[axis] = tir_int(b, 0);
	tir_store(b, L->out[0], lower_offset(L, &ks, idx), bi);
	lower_end_loops(L, nl);
	return 0;
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */

int infer_softmax(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_axis(g, n, node_attr_int(n, "axis", g->opset >= 13 ? -1 : 1),
		       x->shape.rank) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/*
 * Viewed as [outer, K, inner]: opset >= 13 normalises along one axis; older
 * opsets flatten everything from the axis on into K (inner = 1).
 */
int lower_softmax(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	enum dtype t = x->dtype;
	int r = x->shape.rank;
	int axis = (int)node_attr_int(L->n, "axis", L->g->opset >= 13 ? -1 : 1);
	struct tir *outer = tir_int(b, 1), *K = tir_int(b, 1), *inner = tir_int(b, 1);
	struct tir *o, *i, *k, *base, *mx, *sum, *v, *at;
	enum op op = L->n->op;

	if (axis < 0)
		axis += r;
	for (int d = 0; d < r; d++) {
		struct tir *e = tir_dim(b, x->shape.d[d]);

		if (d < axis)
			outer = tir_mul(b, outer, e);
		else if (d == axis || L->g->opset < 13)
			K = tir_mul(b, K, e);
		else
			inner = tir_mul(b, inner, e);
	}
	o = tir_loop(b, outer);
	i = tir_loop(b, inner);
	base = tir_let(b, "base", tir_add(b, tir_mul(b, tir_mul(b, o, K), inner), i));
#define AT(kk) tir_add(b, base, tir_mul(b, kk, inner))
	mx = tir_let(b, "mx", tir_const(b, t, -INFINITY));
	if (op == OP_HARDMAX) {
		struct tir *arg = tir_let(b, "arg", tir_int(b, 0));

		k = tir_loop(b, K);
		v = tir_let(b, "v", tir_load(b, L->in[0], AT(k)));
		tir_if(b, tir_bin(b, BIN_GT, v, mx));
		tir_assign(b, mx, v);
		tir_assign(b, arg, k);
		tir_end(b);
		tir_end(b);
		k = tir_loop(b, K);
		tir_store(b, L->out[0], AT(k), tir_select(b, tir_bin(b, BIN_EQ, k, arg),
							  tir_const(b, t, 1), tir_const(b, t, 0)));
		tir_end(b);
	} else {
		k = tir_loop(b, K);
		tir_assign(b, mx, tir_bin(b, BIN_MAX, mx, tir_load(b, L->in[0], AT(k))));
		tir_end(b);
		sum = tir_let(b, "sum", tir_const(b, t, 0));
		k = tir_loop(b, K);
		at = AT(k);
		v = tir_call1(b, INTRIN_EXP, tir_bin(b, BIN_SUB, tir_load(b, L->in[0], at), mx));
		if (op == OP_SOFTMAX) {
			/*
			 * exp in a loop of its own, which vectorises (vector
			 * math, rt_model.h); the in-order sum of what it stored
			 * in a second one, which does not
			 */
			tir_store(b, L->out[0], at, v);
			tir_end(b);
			k = tir_loop(b, K);
			v = tir_load(b, L->out[0], AT(k));
		}
		tir_assign(b, sum, tir_add(b, sum, v));
		tir_end(b);
		k = tir_loop(b, K);
		at = AT(k);
		if (op == OP_SOFTMAX)
			v = tir_bin(b, BIN_DIV, tir_load(b, L->out[0], at), sum);
		else
			v = tir_bin(b, BIN_SUB, tir_bin(b, BIN_SUB, tir_load(b, L->in[0], at), mx),
				    tir_call1(b, INTRIN_LOG, sum));
		tir_store(b, L->out[0], at, v);
		tir_end(b);
	}
#undef AT
	tir_end(b);
	tir_end(b);
	return 0;
}
