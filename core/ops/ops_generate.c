/*
 * ops_generate.c - ops that make a tensor from a few numbers:
 * ConstantOfShape, Range, EyeLike and OneHot.
 *
 * A number that decides an output shape (a shape, Range's start, limit
 * and delta, OneHot's depth) is a constant, a symbolic value (ops_symval.c)
 * or, where the op allows it, known only at run time (a data symbol the
 * kernel binds); fill values and OneHot's values are read by the kernel at
 * run time.
 */
#include "ops.h"

#include <math.h>

/* ---- ConstantOfShape ---- */

static const struct value *fill_value(struct graph *g, const struct node *n)
{
	const struct attr *a = node_attr(n, "value");

	return a && a->kind == ATTR_TENSOR ? &g->values.v[a->tensor] : NULL;
}

/* Reads 1-D shape input i (constant or symbolic) into s; -1 after a diagnostic. */
static int shape_input(struct graph *g, struct node *n, int i, struct shape *s)
{
	struct dim *v;
	int64_t cnt;

	if (infer_sym_ints(g, n, i, &v, &cnt) < 0)
		return -1;
	if (cnt > MAX_RANK) {
		diag_error(g->ctx, "%s: target rank %lld is more than %d", node_loc(g, n),
			   (long long)cnt, MAX_RANK);
		return -1;
	}
	s->rank = (int)cnt;
	for (int k = 0; k < cnt; k++) {
		if (v[k].c < 0 || v[k].c > DIM_LIMIT) {
			diag_error(g->ctx, "%s: target dimension %lld is out of range",
				   node_loc(g, n), (long long)v[k].c);
			return -1;
		}
		s->d[k] = v[k];
	}
	return 0;
}

/* Output: the shape given by input 0 (constant or from shapes), typed by attribute 'value'. */
int infer_constantofshape(struct graph *g, struct node *n)
{
	const struct value *c = fill_value(g, n);
	struct shape s;
	int64_t cnt;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !infer_input(g, n, 0))
		return -1;
	if (node_attr(n, "value") && (!c || !c->data || !shape_is_static(&c->shape) ||
				      shape_numel_static(&c->shape) != 1)) {
		diag_error(g->ctx, "%s: attribute 'value' must be a tensor of one element",
			   node_loc(g, n));
		return -1;
	}
	if (infer_is_data(g, n, 0))
		return infer_data_count(g, n, 0, &cnt) < 0 ? -1
			: infer_set_data(g, n, 0, c ? c->dtype : DTYPE_F32, cnt);
	if (shape_input(g, n, 0, &s) < 0)
		return -1;
	infer_set(g, n, 0, c ? c->dtype : DTYPE_F32, &s);
	return 0;
}

/* Fills the output with the value attribute (0.0f when absent). */
int lower_constantofshape(struct lower *L)
{
	const struct value *c = fill_value(L->g, L->n), *y = lower_out(L, 0);
	struct tir *v, *i;
	int64_t *iv, cnt;
	double d = 0;

	if (c && !dtype_is_float(c->dtype) && value_const_ints(L->g, c, &iv, &cnt) == 0)
		v = tir_typed_int(L->b, y->dtype, iv[0]);
	else
		v = tir_const(L->b, y->dtype, c && value_const_scalar(L->g, c, &d) ? d : 0);
	i = tir_loop(L->b, lower_numel(L, &y->shape));
	tir_mark_parallel(L->b);
	tir_store(L->b, L->out[0], i, v);
	tir_end(L->b);
	return 0;
}

/* ---- Range ---- */

/*
 * Range over integers computed from symbolic shapes (Range(0, N, 1)): the
 * count (limit - start) / delta must be c * symbols with c >= 0, or a
 * derived symbol (Range(1, N, 1) has N - 1 elements).
 */
static int infer_range_sym(struct graph *g, struct node *n)
{
	struct value *st = node_in(g, n, 0);
	struct shape s = { 1, { { 0, 0, { 0 } } } };
	struct dim a, l, d, span;

	if (!node_in(g, n, 1) || !node_in(g, n, 2) || node_in(g, n, 1)->dtype != st->dtype ||
	    node_in(g, n, 2)->dtype != st->dtype || st->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: start, limit and delta must have one numeric type",
			   node_loc(g, n));
		return -1;
	}
	if (infer_sym_scalar(g, n, 0, &a) < 0 || infer_sym_scalar(g, n, 1, &l) < 0 ||
	    infer_sym_scalar(g, n, 2, &d) < 0)
		return -1;
	if (a.c == INT64_MIN || !graph_sym_add(g, l, symint_neg(a), &span) ||
	    !dim_div(span, d, &s.d[0]) || s.d[0].c < 0 ||
	    s.d[0].c > DIM_LIMIT) {
		struct strbuf x = STRBUF_INIT, y = STRBUF_INIT, z = STRBUF_INIT;

		dim_print(g, a, &x);
		dim_print(g, l, &y);
		dim_print(g, d, &z);
		diag_error(g->ctx, "%s: the length of Range(%s, %s, %s) is not a constant times "
			   "a product of symbols", node_loc(g, n), sb_str(&x), sb_str(&y),
			   sb_str(&z));
		sb_release(&x);
		sb_release(&y);
		sb_release(&z);
		return -1;
	}
	infer_set(g, n, 0, st->dtype, &s);
	return 0;
}

/* Whether input i is a number known only at run time (any numeric type). */
static bool number_is_data(struct graph *g, struct node *n, int i)
{
	struct value *v = node_in(g, n, i);

	return v && v->has_shape && !v->data && !v->sym;
}

/*
 * The type Range-27's stash_type asks the 16-bit float types to be
 * computed in (float unless told double; the older versions are computed
 * in float too, like every 16-bit op); DTYPE_UNDEF for another value.
 */
static enum dtype range_stash(const struct node *n)
{
	int64_t st = node_attr_int(n, "stash_type", 1);

	return st == 1 ? DTYPE_F32 : st == 11 ? DTYPE_F64 : DTYPE_UNDEF;
}

/* Output: ceil((limit - start) / delta) elements, from constant inputs. */
int infer_range(struct graph *g, struct node *n)
{
	struct value *st;
	struct shape s = { 1, { { 0, 0, { 0 } } } };
	double a, l, d;
	int64_t cnt;

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(st = infer_input(g, n, 0)) ||
	    !infer_input(g, n, 1) || !infer_input(g, n, 2))
		return -1;
	if (range_stash(n) == DTYPE_UNDEF) {
		diag_error(g->ctx, "%s: attr 'stash_type' is %lld (expected 1, float, or 11, "
			   "double)", node_loc(g, n), (long long)node_attr_int(n, "stash_type", 1));
		return -1;
	}
	if (number_is_data(g, n, 0) || number_is_data(g, n, 1) || number_is_data(g, n, 2)) {
		if (node_in(g, n, 1)->dtype != st->dtype || node_in(g, n, 2)->dtype != st->dtype ||
		    st->dtype == DTYPE_BOOL) {
			diag_error(g->ctx, "%s: start, limit and delta must have one numeric type",
				   node_loc(g, n));
			return -1;
		}
		/* the length is counted when the model runs */
		return infer_set_data(g, n, 0, st->dtype, 1);
	}
	if (!dtype_is_float(st->dtype) && (!st->data || !node_in(g, n, 1)->data ||
					   !node_in(g, n, 2)->data))
		return infer_range_sym(g, n);
	if (infer_const_scalar(g, n, 0, &a) < 0 || infer_const_scalar(g, n, 1, &l) < 0 ||
	    infer_const_scalar(g, n, 2, &d) < 0)
		return -1;
	if (node_in(g, n, 1)->dtype != st->dtype || node_in(g, n, 2)->dtype != st->dtype ||
	    st->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: start, limit and delta must have one numeric type",
			   node_loc(g, n));
		return -1;
	}
	if (d == 0) {
		diag_error(g->ctx, "%s: delta is 0", node_loc(g, n));
		return -1;
	}
	if (dtype_is_float(st->dtype)) {
		double c = ceil((l - a) / d);

		if (!(c < (double)DIM_LIMIT)) {
			diag_error(g->ctx, "%s: range has too many elements", node_loc(g, n));
			return -1;
		}
		cnt = c > 0 ? (int64_t)c : 0;
	} else {
		int64_t v[3], *p, k, span;

		/* exact for all int64 values (the doubles above are not) */
		for (int i = 0; i < 3; i++) {
			if (value_const_ints(g, node_in(g, n, i), &p, &k) < 0)
				return -1;
			v[i] = p[0];
		}
		if (__builtin_sub_overflow(v[1], v[0], &span)) {
			diag_error(g->ctx, "%s: range has too many elements", node_loc(g, n));
			return -1;
		}
		/* ceil(span / delta) */
		cnt = span / v[2];
		if (span % v[2] != 0 && (span > 0) == (v[2] > 0))
			cnt++;
		cnt = cnt > 0 ? cnt : 0;
		if (cnt > DIM_LIMIT) {
			diag_error(g->ctx, "%s: range has too many elements", node_loc(g, n));
			return -1;
		}
	}
	s.d[0] = dim_const(cnt);
	infer_set(g, n, 0, st->dtype, &s);
	return 0;
}

/*
 * out[i] = start + i * delta, in the output type; the 16-bit float types in
 * the stash type, rounded once at the store.
 */
int lower_range(struct lower *L)
{
	struct tir_builder *b = L->b;
	enum dtype t = lower_out(L, 0)->dtype;
	struct tir *i = tir_loop(b, lower_numel(L, &lower_out(L, 0)->shape));
	struct tir *start = tir_load(b, L->in[0], tir_int(b, 0));
	struct tir *delta = tir_load(b, L->in[2], tir_int(b, 0));

	if (t == DTYPE_F16 || t == DTYPE_BF16) {
		t = range_stash(L->n);
		start = tir_cast(b, t, start);
		delta = tir_cast(b, t, delta);
	}
	tir_mark_parallel(b);
	tir_store(b, L->out[0], i, tir_add(b, start, tir_mul(b, tir_cast(b, t, i), delta)));
	tir_end(b);
	return 0;
}

/* ---- EyeLike ---- */

/* Output: the 2-D input's shape, in the dtype attribute or the input's type. */
int infer_eyelike(struct graph *g, struct node *n)
{
	struct value *x;
	enum dtype t;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->shape.rank != 2) {
		diag_error(g->ctx, "%s: input must have rank 2, not %d", node_loc(g, n),
			   x->shape.rank);
		return -1;
	}
	t = x->dtype;
	if (node_attr(n, "dtype")) {
		int64_t to = node_attr_int(n, "dtype", 0);

		t = dtype_from_onnx((int)to);
		if (t == DTYPE_UNDEF) {
			diag_error(g->ctx, "%s: ONNX type %lld is not supported", node_loc(g, n),
				   (long long)to);
			return -1;
		}
	}
	infer_set(g, n, 0, t, &x->shape);
	return 0;
}

/* Ones on the diagonal j - i = k, zeros elsewhere. */
int lower_eyelike(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	struct tir *idx[2];

	lower_loops(L, &y->shape, idx);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_select(b, tir_bin(b, BIN_EQ, tir_bin(b, BIN_SUB, idx[1], idx[0]),
					tir_int(b, node_attr_int(L->n, "k", 0))),
			     tir_const(b, y->dtype, 1), tir_const(b, y->dtype, 0)));
	lower_end_loops(L, 2);
	return 0;
}

/* ---- OneHot ---- */

/* Output: indices' shape with the constant depth inserted at axis. */
int infer_onehot(struct graph *g, struct node *n)
{
	struct value *ix, *vals;
	struct shape s = { 0 };
	double depth;
	int axis;

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(ix = infer_input(g, n, 0)) ||
	    !(vals = infer_input(g, n, 2)) || !infer_input(g, n, 1))
		return -1;
	/* a depth known only at run time: a data symbol the shape function binds */
	depth = number_is_data(g, n, 1) ? 1 : 0;
	if (!depth && infer_const_scalar(g, n, 1, &depth) < 0)
		return -1;
	if (!(depth >= 1 && depth <= (double)DIM_LIMIT)) {
		diag_error(g->ctx, "%s: depth %g is out of range", node_loc(g, n), depth);
		return -1;
	}
	if (ix->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: indices must be numeric", node_loc(g, n));
		return -1;
	}
	if (vals->shape.rank != 1 || !dim_eq(vals->shape.d[0], dim_const(2))) {
		diag_error(g->ctx, "%s: values must hold two elements (off, on)", node_loc(g, n));
		return -1;
	}
	if (infer_check_rank(g, n, ix->shape.rank + 1) < 0)
		return -1;
	axis = infer_axis(g, n, node_attr_int(n, "axis", -1), ix->shape.rank + 1);
	if (axis < 0)
		return -1;
	for (int k = 0; k < ix->shape.rank; k++) {
		if (k == axis)
			s.d[s.rank++] = dim_const((int64_t)depth);
		s.d[s.rank++] = ix->shape.d[k];
	}
	if (axis == ix->shape.rank)
		s.d[s.rank++] = dim_const((int64_t)depth);
	if (number_is_data(g, n, 1))
		s.d[axis] = graph_data_sym(g, n->out[0], axis);
	infer_set(g, n, 0, vals->dtype, &s);
	return 0;
}

/* values[1] where the (wrapped) index equals the position on axis, else values[0]. */
int lower_onehot(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *ix = lower_in(L, 0), *y = lower_out(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", -1);
	struct tir *idx[MAX_RANK], *ii[MAX_RANK], *depth, *k;

	if (axis < 0)
		axis += y->shape.rank;
	depth = tir_dim(b, y->shape.d[axis]);
	lower_loops(L, &y->shape, idx);
	for (int d = 0, j = 0; d < y->shape.rank; d++)
		if (d != axis)
			ii[j++] = idx[d];
	k = lower_wrap_index(L, tir_load(b, L->in[0], lower_offset(L, &ix->shape, ii)), depth);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_select(b, tir_bin(b, BIN_EQ, k, idx[axis]),
			     tir_load(b, L->in[2], tir_int(b, 1)),
			     tir_load(b, L->in[2], tir_int(b, 0))));
	lower_end_loops(L, y->shape.rank);
	return 0;
}
