/*
 * ops_data.c - indexing, scatter/gather, generators and padding:
 * Compress, ConstantOfShape, Range, EyeLike, NonZero, OneHot, Tile, Pad, Trilu, DepthToSpace,
 * SpaceToDepth, GatherElements, GatherND, ScatterElements, ScatterND,
 * CumSum, TopK, ReverseSequence, Resize and Upsample.
 *
 * Inputs that decide an output shape (a shape, repeats, pads, k, scales or
 * sizes) must be constants; the other inputs (fill values, Trilu's k, the
 * CumSum axis, sequence lengths) are read by the kernel at run time.
 */
#include "ops.h"
#include "../../runtime/rt_half.h"

#include <math.h>
#include <string.h>

/* ---- shared helpers ---- */

static int not_constant(struct graph *g, struct node *n, int i, const char *what)
{
	diag_error(g->ctx, "%s: input %d '%s' must be a constant %s (data-dependent shapes are "
		   "not supported)", node_loc(g, n), i, node_in(g, n, i)->name, what);
	return -1;
}

/* Reads constant input i, which must hold one number. */
static int const_scalar(struct graph *g, struct node *n, int i, double *out)
{
	struct value *v = infer_input(g, n, i);

	if (!v)
		return -1;
	if (!value_const_scalar(g, v, out))
		return not_constant(g, n, i, "scalar");
	return 0;
}

/* Reads constant input i (any numeric type) as doubles (arena copy). */
static int const_doubles(struct graph *g, struct node *n, int i, double **vals, int64_t *count)
{
	struct value *v = infer_input(g, n, i);
	int64_t cnt, *iv;

	if (!v)
		return -1;
	if (!v->data || !shape_is_static(&v->shape))
		return not_constant(g, n, i, "tensor");
	cnt = shape_numel_static(&v->shape);
	*vals = arena_alloc(g->arena, sizeof(double) * (size_t)(cnt ? cnt : 1));
	*count = cnt;
	if (dtype_is_float(v->dtype)) {
		const uint16_t *h = v->data;

		for (int64_t k = 0; k < cnt; k++)
			(*vals)[k] = v->dtype == DTYPE_F32 ? ((const float *)v->data)[k]
				: v->dtype == DTYPE_F64 ? ((const double *)v->data)[k]
				: v->dtype == DTYPE_F16 ? rt_h2f(h[k]) : rt_bf2f(h[k]);
		return 0;
	}
	if (value_const_ints(g, v, &iv, &cnt) < 0)
		return not_constant(g, n, i, "tensor");
	for (int64_t k = 0; k < cnt; k++)
		(*vals)[k] = (double)iv[k];
	return 0;
}

static int check_index_type(struct graph *g, struct node *n, const struct value *v)
{
	if (v->dtype != DTYPE_I64 && v->dtype != DTYPE_I32) {
		diag_error(g->ctx, "%s: indices must be int32 or int64, not %s", node_loc(g, n),
			   dtype_name(v->dtype));
		return -1;
	}
	return 0;
}

static int check_rank(struct graph *g, struct node *n, int rank)
{
	if (rank > MAX_RANK) {
		diag_error(g->ctx, "%s: result rank is more than %d", node_loc(g, n), MAX_RANK);
		return -1;
	}
	return 0;
}

static int bad_shapes(struct graph *g, struct node *n, const char *what, const struct shape *a,
		      const struct shape *b)
{
	struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

	shape_print(g, a, &x);
	shape_print(g, b, &y);
	diag_error(g->ctx, "%s: %s: %s and %s", node_loc(g, n), what, sb_str(&x), sb_str(&y));
	sb_release(&x);
	sb_release(&y);
	return -1;
}

static struct tir *in_range(struct lower *L, struct tir *x, struct tir *dim)
{
	return tir_bin(L->b, BIN_LAND, tir_bin(L->b, BIN_GE, x, tir_int(L->b, 0)),
		       tir_bin(L->b, BIN_LT, x, dim));
}

/* Flat copy of input 0 into output 0, before a scatter updates it. */
static void copy_input(struct lower *L)
{
	struct tir *i = tir_loop(L->b, lower_numel(L, &lower_out(L, 0)->shape));

	tir_mark_parallel(L->b);
	tir_store(L->b, L->out[0], i, tir_load(L->b, L->in[0], i));
	tir_end(L->b);
}

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
	if (const_scalar(g, n, 0, &a) < 0 || const_scalar(g, n, 1, &l) < 0 ||
	    const_scalar(g, n, 2, &d) < 0)
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

/* out[i] = start + i * delta, in the output type. */
int lower_range(struct lower *L)
{
	struct tir_builder *b = L->b;
	enum dtype t = lower_out(L, 0)->dtype;
	struct tir *i = tir_loop(b, lower_numel(L, &lower_out(L, 0)->shape));
	struct tir *start = tir_load(b, L->in[0], tir_int(b, 0));
	struct tir *delta = tir_load(b, L->in[2], tir_int(b, 0));

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
	if (!depth && const_scalar(g, n, 1, &depth) < 0)
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
	if (check_rank(g, n, ix->shape.rank + 1) < 0)
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

/* ---- Tile ---- */

/* Output: each dimension times its repeat (constant or computed from shapes). */
int infer_tile(struct graph *g, struct node *n)
{
	struct value *x;
	struct dim *rep;
	int64_t cnt;
	struct shape s;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_is_data(g, n, 1)) {
		if (infer_data_count(g, n, 1, &cnt) < 0)
			return -1;
		if (cnt == x->shape.rank)
			return infer_set_data(g, n, 0, x->dtype, cnt);
	} else if (infer_sym_ints(g, n, 1, &rep, &cnt) < 0) {
		return -1;
	}
	if (cnt != x->shape.rank) {
		diag_error(g->ctx, "%s: repeats has %lld entries for rank %d", node_loc(g, n),
			   (long long)cnt, x->shape.rank);
		return -1;
	}
	s = x->shape;
	for (int k = 0; k < s.rank; k++) {
		if (rep[k].c < 0 || rep[k].c > DIM_LIMIT ||
		    !dim_mul(x->shape.d[k], rep[k], &s.d[k])) {
			diag_error(g->ctx, "%s: repeat %lld on axis %d is out of range",
				   node_loc(g, n), (long long)rep[k].c, k);
			return -1;
		}
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/* y[idx] = x[idx mod input dims]. */
int lower_tile(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK];

	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++)
		xi[k] = dim_eq(x->shape.d[k], y->shape.d[k]) ? idx[k]
			: tir_bin(L->b, BIN_MOD, idx[k], tir_dim(L->b, x->shape.d[k]));
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- Compress ---- */

/* The axis Compress selects along (normalised), or -1 without one (flattened). */
static int compress_axis(const struct node *n, int rank)
{
	int64_t a = node_attr_int(n, "axis", INT64_MIN);

	return a == INT64_MIN ? -1 : (int)(a < 0 ? a + rank : a);
}

/*
 * Output: the input with only the slices (or, without an axis, the
 * elements) whose condition is true; how many is a data symbol that the
 * shape function counts.
 */
int infer_compress(struct graph *g, struct node *n)
{
	struct value *x, *c;
	struct shape s;
	int axis;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(c = infer_input(g, n, 1)))
		return -1;
	if (c->dtype != DTYPE_BOOL || c->shape.rank != 1) {
		diag_error(g->ctx, "%s: condition must be a 1-D bool tensor", node_loc(g, n));
		return -1;
	}
	axis = compress_axis(n, x->shape.rank);
	if (node_attr(n, "axis") && infer_axis(g, n, node_attr_int(n, "axis", 0),
					       x->shape.rank) < 0)
		return -1;
	s = x->shape;
	if (axis < 0)
		s.rank = 1;
	s.d[axis < 0 ? 0 : axis] = graph_data_sym(g, n->out[0], axis < 0 ? 0 : axis);
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * For each position j on the axis whose condition holds, in order, the
 * slice x[..., j, ...] becomes y[..., count, ...].
 */
int lower_compress(struct lower *L)
{
	const struct value *xv = lower_in(L, 0), *c = lower_in(L, 1), *y = lower_out(L, 0);
	struct shape xs = xv->shape;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *count, *j;
	int axis = compress_axis(L->n, xv->shape.rank), r;

	if (axis < 0) {		/* the flattened input */
		if (!shape_numel(&xv->shape, &xs.d[0]))
			BUG("compress input of %s has no element count", L->n->name);
		xs.rank = 1;
		axis = 0;
	}
	r = xs.rank;
	count = tir_let(L->b, "count", tir_int(L->b, 0));
	j = tir_loop(L->b, tir_bin(L->b, BIN_MIN, tir_dim(L->b, c->shape.d[0]),
				   tir_dim(L->b, xs.d[axis])));
	tir_if(L->b, tir_bin(L->b, BIN_NE, tir_load(L->b, L->in[1], j),
			     tir_const(L->b, DTYPE_BOOL, 0)));
	for (int k = 0; k < r; k++) {
		idx[k] = k == axis ? count : tir_loop(L->b, tir_dim(L->b, xs.d[k]));
		xi[k] = k == axis ? j : idx[k];
	}
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &xs, xi)));
	lower_end_loops(L, r - 1);
	tir_assign(L->b, count, tir_add(L->b, count, tir_int(L->b, 1)));
	tir_end(L->b);
	tir_end(L->b);
	return 0;
}

/* ---- NonZero ---- */

/*
 * Output: int64 [rank, count], the count of non-zero elements a data symbol
 * that the run-time shape function binds by counting them.
 */
int infer_nonzero(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	s.rank = 2;
	s.d[0] = dim_const(x->shape.rank);
	s.d[1] = graph_data_sym(g, n->out[0], 1);
	infer_set(g, n, 0, DTYPE_I64, &s);
	return 0;
}

/* Column `count` of y takes the index of each non-zero element, in row-major order. */
int lower_nonzero(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *count, *nz, *cols = tir_dim(L->b, y->shape.d[1]);

	count = tir_let(L->b, "count", tir_int(L->b, 0));
	lower_loops(L, &x->shape, idx);		/* in order: not parallel */
	nz = tir_bin(L->b, BIN_NE, tir_load(L->b, L->in[0], lower_offset(L, &x->shape, idx)),
		     tir_const(L->b, x->dtype, 0));
	tir_if(L->b, nz);
	for (int k = 0; k < x->shape.rank; k++)
		tir_store(L->b, L->out[0], tir_add(L->b, tir_mul(L->b, tir_int(L->b, k), cols),
						   count), tir_cast(L->b, DTYPE_I64, idx[k]));
	tir_assign(L->b, count, tir_add(L->b, count, tir_int(L->b, 1)));
	tir_end(L->b);
	lower_end_loops(L, x->shape.rank);
	return 0;
}

/* ---- Unique ---- */

/*
 * The axis Unique compares slices along (normalised), or -1 for the
 * flattened input; -2 after a diagnostic.
 */
static int unique_axis(struct graph *g, struct node *n, const struct value *x)
{
	int a;

	if (!node_attr(n, "axis"))
		return -1;
	a = infer_axis(g, n, node_attr_int(n, "axis", 0), x->shape.rank);
	return a < 0 ? -2 : a;
}

/*
 * Y: the unique elements (or slices along axis), their count a data symbol
 * bound by counting them at run time; indices and counts [count] and
 * inverse_indices [the input's length] int64.
 */
int infer_unique(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s, one = { 0 };
	struct dim u;
	int axis;

	if (infer_arity(g, n, 1, 1, -1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (n->n_out > 4 || (axis = unique_axis(g, n, x)) == -2)
		return -1;
	if (x->dtype != DTYPE_F32 && x->dtype != DTYPE_F64 && dtype_is_float(x->dtype)) {
		diag_error(g->ctx, "%s: Unique of %s is not supported", node_loc(g, n),
			   dtype_name(x->dtype));
		return -1;
	}
	u = graph_data_sym(g, n->out[0], axis < 0 ? 0 : axis);
	s = x->shape;
	if (axis >= 0) {
		s.d[axis] = u;
	} else {
		s.rank = 1;
		s.d[0] = u;
	}
	infer_set(g, n, 0, x->dtype, &s);
	one.rank = 1;
	one.d[0] = u;
	for (int o = 1; o < n->n_out; o++) {
		if (o == 2 && axis >= 0)
			one.d[0] = x->shape.d[axis];
		else if (o == 2 && !shape_numel(&x->shape, &one.d[0]))
			return -1;
		else if (o != 2)
			one.d[0] = u;
		if (n->out[o] >= 0)
			infer_set(g, n, o, DTYPE_I64, &one);
	}
	return 0;
}

/* The slices Unique compares: count of them, elements in each, addressing. */
struct uslices {
	struct tir *n, *size, *inner;
	int axis;
};

/* Offset in X (or Y with cnt slices) of element t of slice s. */
static struct tir *uslice_at(struct lower *L, const struct uslices *us, struct tir *cnt,
			     struct tir *s, struct tir *t)
{
	struct tir_builder *b = L->b;

	if (us->axis < 0)
		return s;
	/* (t / inner * cnt + s) * inner + t % inner */
	return tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, tir_bin(b, BIN_DIV, t, us->inner), cnt),
					     s), us->inner), tir_bin(b, BIN_MOD, t, us->inner));
}

/*
 * Compares slices a and b of X element by element: a let that ends -1, 0
 * or 1 (a < b, equal, a > b: the first differing element decides).
 */
static struct tir *uslice_cmp(struct lower *L, const struct uslices *us, struct tir *a,
			      struct tir *b_)
{
	struct tir_builder *b = L->b;
	struct tir *c = tir_let(b, "cmp", tir_int(b, 0)), *t, *va, *vb;

	t = tir_loop(b, us->size);
	va = tir_let(b, "va", tir_load(b, L->in[0], uslice_at(L, us, us->n, a, t)));
	vb = tir_let(b, "vb", tir_load(b, L->in[0], uslice_at(L, us, us->n, b_, t)));
	tir_if(b, tir_bin(b, BIN_EQ, c, tir_int(b, 0)));
	tir_if(b, tir_bin(b, BIN_LT, va, vb));
	tir_assign(b, c, tir_int(b, -1));
	tir_else(b);
	/* unordered (NaN) counts as different too */
	tir_if(b, tir_bin(b, BIN_NE, va, vb));
	tir_assign(b, c, tir_int(b, 1));
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	return c;
}

/*
 * Writes unique slice i as number p: Y's slice, its index, its count, and
 * p as the inverse index of every slice equal to it.
 */
static void unique_emit(struct lower *L, const struct uslices *us, struct tir *i, struct tir *p)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	struct tir *u = tir_dim(b, y->shape.d[us->axis < 0 ? 0 : us->axis]);
	struct tir *t, *j, *cnt, *c;

	t = tir_loop(b, us->size);
	tir_store(b, L->out[0], uslice_at(L, us, u, p, t),
		  tir_load(b, L->in[0], uslice_at(L, us, us->n, i, t)));
	tir_end(b);
	if (L->n->n_out > 1 && L->out[1])
		tir_store(b, L->out[1], p, i);
	cnt = tir_let(b, "count", tir_int(b, 0));
	j = tir_loop(b, us->n);
	c = uslice_cmp(L, us, j, i);
	tir_if(b, tir_bin(b, BIN_EQ, c, tir_int(b, 0)));
	tir_assign(b, cnt, tir_add(b, cnt, tir_int(b, 1)));
	if (L->n->n_out > 2 && L->out[2])
		tir_store(b, L->out[2], j, p);
	tir_end(b);
	tir_end(b);
	if (L->n->n_out > 3 && L->out[3])
		tir_store(b, L->out[3], p, cnt);
}

/* best = j when best is unset or slice j is less than slice best. */
static void unique_take_least(struct lower *L, const struct uslices *us, struct tir *best,
			      struct tir *j)
{
	struct tir_builder *b = L->b;

	tir_if(b, tir_bin(b, BIN_LT, best, tir_int(b, 0)));
	tir_assign(b, best, j);
	tir_else(b);
	tir_if(b, tir_bin(b, BIN_LT, uslice_cmp(L, us, j, best), tir_int(b, 0)));
	tir_assign(b, best, j);
	tir_end(b);
	tir_end(b);
}

/*
 * Without scratch memory, in O(n^2) slice comparisons: sorted, each round
 * takes the least slice greater than the last one taken (the first of
 * equal ones); not sorted, each slice equal to no earlier one in turn.
 * Writes stop at the count the shape function bound.
 */
int lower_unique(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct uslices us;
	struct tir *i, *j, *p, *u, *c;
	int axis = unique_axis(L->g, (struct node *)L->n, x);

	if (axis == -2)
		return -1;
	us.axis = axis;
	if (axis < 0) {
		us.n = tir_let(b, "n", lower_numel(L, &x->shape));
		us.size = tir_int(b, 1);
		us.inner = tir_int(b, 1);
	} else {
		struct shape rest = x->shape;

		us.n = tir_let(b, "n", tir_dim(b, x->shape.d[axis]));
		us.inner = tir_let(b, "inner", lower_stride(L, &x->shape, axis));
		rest.d[axis] = dim_const(1);
		us.size = tir_let(b, "size", lower_numel(L, &rest));
	}
	u = tir_dim(b, y->shape.d[axis < 0 ? 0 : axis]);
	p = tir_let(b, "p", tir_int(b, 0));
	if (node_attr_int(L->n, "sorted", 1)) {
		struct tir *prev = tir_let(b, "prev", tir_int(b, -1)), *best;

		i = tir_loop(b, us.n);
		best = tir_let(b, "best", tir_int(b, -1));
		j = tir_loop(b, us.n);
		tir_if(b, tir_bin(b, BIN_LT, prev, tir_int(b, 0)));
		unique_take_least(L, &us, best, j);
		tir_else(b);
		c = uslice_cmp(L, &us, prev, j);
		tir_if(b, tir_bin(b, BIN_LT, c, tir_int(b, 0)));
		unique_take_least(L, &us, best, j);
		tir_end(b);
		tir_end(b);
		tir_end(b);
		tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, best, tir_int(b, 0)),
				  tir_bin(b, BIN_LT, p, u)));
		unique_emit(L, &us, best, p);
		tir_assign(b, p, tir_add(b, p, tir_int(b, 1)));
		tir_assign(b, prev, best);
		tir_end(b);
		tir_end(b);
		return 0;
	}
	i = tir_loop(b, us.n);
	{
		struct tir *first = tir_let(b, "first", tir_int(b, 1));

		j = tir_loop(b, i);
		c = uslice_cmp(L, &us, j, i);
		tir_if(b, tir_bin(b, BIN_EQ, c, tir_int(b, 0)));
		tir_assign(b, first, tir_int(b, 0));
		tir_end(b);
		tir_end(b);
		tir_if(b, tir_bin(b, BIN_LAND, first, tir_bin(b, BIN_LT, p, u)));
		unique_emit(L, &us, i, p);
		tir_assign(b, p, tir_add(b, p, tir_int(b, 1)));
		tir_end(b);
	}
	tir_end(b);
	return 0;
}

/* ---- NonMaxSuppression ---- */

/* The optional scalar input i: float or int64 of one element, or absent. */
static int nms_scalar(struct graph *g, struct node *n, int i, enum dtype t)
{
	const struct value *v = node_in(g, n, i);
	struct dim c;

	if (!v)
		return 0;
	if (v->dtype != t || !shape_numel(&v->shape, &c) || !dim_is_const(c) || c.c > 1) {
		diag_error(g->ctx, "%s: input %d must be a %s scalar", node_loc(g, n), i,
			   dtype_name(t));
		return -1;
	}
	return 0;
}

/*
 * boxes [B, N, 4] and scores [B, C, N] float; selected_indices [count, 3]
 * int64, the count a data symbol the run-time shape function binds by
 * running the selection.
 */
int infer_nms(struct graph *g, struct node *n)
{
	struct value *bx, *sc;
	struct shape s;

	if (infer_arity(g, n, 2, 5, 1) < 0 || !(bx = infer_input(g, n, 0)) ||
	    !(sc = infer_input(g, n, 1)))
		return -1;
	if (bx->dtype != DTYPE_F32 || sc->dtype != DTYPE_F32 || bx->shape.rank != 3 ||
	    sc->shape.rank != 3 || !dim_eq(bx->shape.d[2], dim_const(4)) ||
	    !dim_eq(bx->shape.d[0], sc->shape.d[0]) || !dim_eq(bx->shape.d[1], sc->shape.d[2])) {
		diag_error(g->ctx, "%s: boxes must be float [B, N, 4] and scores float [B, C, N]",
			   node_loc(g, n));
		return -1;
	}
	if (nms_scalar(g, n, 2, DTYPE_I64) < 0 || nms_scalar(g, n, 3, DTYPE_F32) < 0 ||
	    nms_scalar(g, n, 4, DTYPE_F32) < 0)
		return -1;
	s.rank = 2;
	s.d[0] = graph_data_sym(g, n->out[0], 0);
	s.d[1] = dim_const(3);
	infer_set(g, n, 0, DTYPE_I64, &s);
	return 0;
}

/* Scalar input i of the node as a let of type t, or def when absent or empty. */
static struct tir *nms_input(struct lower *L, int i, enum dtype t, double def)
{
	const struct value *v = lower_in(L, i);
	struct dim c;

	if (!v || !shape_numel(&v->shape, &c) || c.c == 0)
		return tir_const(L->b, t, def);
	return tir_let(L->b, "arg", tir_load(L->b, L->in[i], tir_int(L->b, 0)));
}

/* Box k of batch bb as lets ymin, xmin, ymax, xmax (float). */
static void nms_box(struct lower *L, struct tir *bb, struct tir *k, struct tir **c)
{
	struct tir_builder *b = L->b;
	const struct value *bx = lower_in(L, 0);
	struct tir *at = tir_mul(b, tir_add(b, tir_mul(b, bb, tir_dim(b, bx->shape.d[1])), k),
				 tir_int(b, 4)), *v[4];

	for (int j = 0; j < 4; j++)
		v[j] = tir_let(b, "bv", tir_load(b, L->in[0], tir_add(b, at, tir_int(b, j))));
	if (node_attr_int(L->n, "center_point_box", 0)) {
		/* x, y, w, h */
		struct tir *hw = tir_bin(b, BIN_DIV, v[2], tir_const(b, DTYPE_F32, 2));
		struct tir *hh = tir_bin(b, BIN_DIV, v[3], tir_const(b, DTYPE_F32, 2));

		c[0] = tir_let(b, "y0", tir_bin(b, BIN_SUB, v[1], hh));
		c[1] = tir_let(b, "x0", tir_bin(b, BIN_SUB, v[0], hw));
		c[2] = tir_let(b, "y1", tir_add(b, v[1], hh));
		c[3] = tir_let(b, "x1", tir_add(b, v[0], hw));
		return;
	}
	c[0] = tir_let(b, "y0", tir_bin(b, BIN_MIN, v[0], v[2]));
	c[1] = tir_let(b, "x0", tir_bin(b, BIN_MIN, v[1], v[3]));
	c[2] = tir_let(b, "y1", tir_bin(b, BIN_MAX, v[0], v[2]));
	c[3] = tir_let(b, "x1", tir_bin(b, BIN_MAX, v[1], v[3]));
}

/* Whether kept box a suppresses box c: IoU above thr (runtime/rt_shape.c's nms_suppress). */
static struct tir *nms_overlaps(struct lower *L, struct tir **a, struct tir **c, struct tir *thr)
{
	struct tir_builder *b = L->b;
	struct tir *zero = tir_const(b, DTYPE_F32, 0), *iw, *ih, *inter, *aa, *ac, *uni;

	iw = tir_bin(b, BIN_MAX, zero, tir_bin(b, BIN_SUB, tir_bin(b, BIN_MIN, a[3], c[3]),
					       tir_bin(b, BIN_MAX, a[1], c[1])));
	ih = tir_bin(b, BIN_MAX, zero, tir_bin(b, BIN_SUB, tir_bin(b, BIN_MIN, a[2], c[2]),
					       tir_bin(b, BIN_MAX, a[0], c[0])));
	inter = tir_let(b, "inter", tir_mul(b, iw, ih));
	aa = tir_let(b, "aa", tir_mul(b, tir_bin(b, BIN_SUB, a[3], a[1]),
				      tir_bin(b, BIN_SUB, a[2], a[0])));
	ac = tir_let(b, "ab", tir_mul(b, tir_bin(b, BIN_SUB, c[3], c[1]),
				      tir_bin(b, BIN_SUB, c[2], c[0])));
	uni = tir_let(b, "uni", tir_bin(b, BIN_SUB, tir_add(b, aa, ac), inter));
	return tir_bin(b, BIN_LAND, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GT, inter, zero),
					    tir_bin(b, BIN_LAND, tir_bin(b, BIN_GT, aa, zero),
						    tir_bin(b, BIN_GT, ac, zero))),
		       tir_bin(b, BIN_LAND, tir_bin(b, BIN_GT, uni, zero),
			       tir_bin(b, BIN_GT, tir_bin(b, BIN_DIV, inter, uni), thr)));
}

/*
 * The selection of runtime/rt_shape.c's shape_nms, without scratch memory:
 * each round takes the next box in score order, O(N^2) per class, and
 * compares it with the rows this class has written so far. Writes stop at
 * the count the shape function bound.
 */
int lower_nms(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *sc = lower_in(L, 1), *y = lower_out(L, 0);
	struct tir *nb = tir_dim(b, sc->shape.d[0]), *nc = tir_dim(b, sc->shape.d[1]);
	struct tir *nn = tir_dim(b, sc->shape.d[2]), *u = tir_dim(b, y->shape.d[0]);
	struct tir *maxout = nms_input(L, 2, DTYPE_I64, 0), *iou = nms_input(L, 3, DTYPE_F32, 0);
	bool has_st = lower_in(L, 4) != NULL;
	struct tir *st = has_st ? nms_input(L, 4, DTYPE_F32, 0) : NULL;
	struct tir *rows = tir_let(b, "rows", tir_int(b, 0));
	struct tir *bb, *cc, *i, *q, *start, *last, *lasts, *best, *bs, *s, *ok, *keep;
	struct tir *cb[4], *kb[4], *base;

	if (has_st && !shape_numel_static(&lower_in(L, 4)->shape))
		has_st = false;
	bb = tir_loop(b, nb);
	cc = tir_loop(b, nc);
	base = tir_let(b, "base", tir_mul(b, tir_add(b, tir_mul(b, bb, nc), cc), nn));
	start = tir_let(b, "start", rows);
	last = tir_let(b, "last", tir_int(b, -1));
	lasts = tir_let(b, "lasts", tir_const(b, DTYPE_F32, 0));
	tir_loop(b, nn);	/* rounds: one box each, in score order */
	best = tir_let(b, "best", tir_int(b, -1));
	bs = tir_let(b, "bs", tir_const(b, DTYPE_F32, 0));
	i = tir_loop(b, nn);
	s = tir_let(b, "s", tir_load(b, L->in[1], tir_add(b, base, i)));
	/* after the last box taken in score order, and better than the best so far */
	ok = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, last, tir_int(b, 0)),
		     tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, s, lasts),
			     tir_bin(b, BIN_LAND, tir_bin(b, BIN_EQ, s, lasts),
				     tir_bin(b, BIN_GT, i, last))));
	ok = tir_bin(b, BIN_LAND, ok, tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, best, tir_int(b, 0)),
					       tir_bin(b, BIN_GT, s, bs)));
	if (has_st)
		ok = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GT, s, st), ok);
	tir_if(b, ok);
	tir_assign(b, best, i);
	tir_assign(b, bs, s);
	tir_end(b);
	tir_end(b);
	tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, best, tir_int(b, 0)),
			  tir_bin(b, BIN_LT, tir_bin(b, BIN_SUB, rows, start), maxout)));
	tir_assign(b, last, best);
	tir_assign(b, lasts, bs);
	keep = tir_let(b, "keep", tir_int(b, 1));
	nms_box(L, bb, best, cb);
	q = tir_loop(b, tir_bin(b, BIN_SUB, rows, start));
	nms_box(L, bb, tir_load(b, L->out[0], tir_add(b, tir_mul(b, tir_add(b, start, q),
								       tir_int(b, 3)),
							 tir_int(b, 2))), kb);
	tir_if(b, nms_overlaps(L, kb, cb, iou));
	tir_assign(b, keep, tir_int(b, 0));
	tir_end(b);
	tir_end(b);
	tir_if(b, tir_bin(b, BIN_LAND, keep, tir_bin(b, BIN_LT, rows, u)));
	tir_store(b, L->out[0], tir_mul(b, rows, tir_int(b, 3)), bb);
	tir_store(b, L->out[0], tir_add(b, tir_mul(b, rows, tir_int(b, 3)), tir_int(b, 1)), cc);
	tir_store(b, L->out[0], tir_add(b, tir_mul(b, rows, tir_int(b, 3)), tir_int(b, 2)), best);
	tir_assign(b, rows, tir_add(b, rows, tir_int(b, 1)));
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	return 0;
}

/* ---- Pad ---- */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

struct pad_plan {
	enum pad_mode mode;
	int64_t pb[MAX_RANK], pe[MAX_RANK];	/* pads at the begin / end of each axis */
	struct shape out;
};

/*
 * Spreads pads over the axes: all of them, or (opset 18+) those of the
 * constant input 3, the other axes unpadded. -1 after a diagnostic.
 */
static int pad_axes(struct graph *g, struct node *n, int r, int64_t np, const int64_t *pads,
		    struct pad_plan *p)
{
	int64_t all[MAX_RANK], *axes = all, na = r;

	for (int k = 0; k < r; k++) {
		all[k] = k;
		p->pb[k] = p->pe[k] = 0;
	}
	if (node_in(g, n, 3) && infer_const_ints(g, n, 3, &axes, &na) < 0)
		return -1;
	if (np != 2 * na) {
		diag_error(g->ctx, "%s: pads has %lld values, expected %lld", node_loc(g, n),
			   (long long)np, 2 * (long long)na);
		return -1;
	}
	for (int i = 0; i < na; i++) {
		int a = infer_axis(g, n, axes[i], r);

		if (a < 0)
			return -1;
		p->pb[a] = pads[i];
		p->pe[a] = pads[i + na];
	}
	return 0;
}

static int pad_plan(struct graph *g, struct node *n, struct pad_plan *p)
{
	static const char *const modes[] = { "constant", "reflect", "edge", "wrap" };
	const char *mode = node_attr_str(n, "mode", "constant");
	struct value *x = infer_input(g, n, 0);
	int64_t *pads, np;
	int r;

	if (!x || infer_const_ints(g, n, 1, &pads, &np) < 0)
		return -1;
	r = x->shape.rank;
	for (p->mode = PAD_CONSTANT; p->mode <= PAD_WRAP; p->mode++)
		if (!strcmp(mode, modes[p->mode]))
			break;
	if (p->mode > PAD_WRAP) {
		diag_error(g->ctx, "%s: pad mode '%s' is not supported", node_loc(g, n), mode);
		return -1;
	}
	if (pad_axes(g, n, r, np, pads, p) < 0)
		return -1;
	p->out = x->shape;
	for (int k = 0; k < r; k++) {
		struct dim d = x->shape.d[k];
		int64_t len;

		if (!p->pb[k] && !p->pe[k])
			continue;
		if (!dim_is_const(d)) {
			diag_error(g->ctx, "%s: padding symbolic axis %d is not supported",
				   node_loc(g, n), k);
			return -1;
		}
		len = -1;
		if (p->pb[k] >= -DIM_LIMIT && p->pb[k] <= DIM_LIMIT && p->pe[k] >= -DIM_LIMIT &&
		    p->pe[k] <= DIM_LIMIT)
			len = d.c + p->pb[k] + p->pe[k];
		if (len < 0 || len > DIM_LIMIT) {
			diag_error(g->ctx, "%s: pads on axis %d give an invalid length",
				   node_loc(g, n), k);
			return -1;
		}
		if (p->mode != PAD_CONSTANT && d.c == 0 && len > 0) {
			diag_error(g->ctx, "%s: cannot %s-pad the empty axis %d", node_loc(g, n),
				   mode, k);
			return -1;
		}
		p->out.d[k] = dim_const(len);
	}
	return 0;
}

/* Whether the pads or the axes are known only at run time. */
static bool pad_is_data(struct graph *g, struct node *n)
{
	return infer_is_data(g, n, 1) || infer_is_data(g, n, 3);
}

/*
 * Output: each dimension plus its pads (negative pads crop): constants, or
 * for pads known only at run time data symbols, with each axis's begin pad a
 * parameter of the kernel.
 */
int infer_pad(struct graph *g, struct node *n)
{
	struct pad_plan p;
	struct value *v, *x;

	if (infer_arity(g, n, 2, 4, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !infer_input(g, n, 1))
		return -1;
	if (pad_is_data(g, n)) {
		if (infer_set_data(g, n, 0, x->dtype, x->shape.rank) < 0)
			return -1;
		for (int k = 0; k < x->shape.rank; k++) {
			graph_data_param(g, n->out[0], "begin", k);
			graph_data_param(g, n->out[0], "end", k);
		}
		return 0;
	}
	if (pad_plan(g, n, &p) < 0)
		return -1;
	if ((v = node_in(g, n, 2)) && v->has_shape && shape_is_static(&v->shape) &&
	    shape_numel_static(&v->shape) != 1) {
		diag_error(g->ctx, "%s: constant_value must hold one element", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &p.out);
	return 0;
}

/*
 * Source index on one axis of length d for padded position s (s may be
 * outside [0, d)); d a constant, or NULL with dd the axis's length when only
 * the run knows whether the axis is padded (and d may be 1).
 */
static struct tir *pad_source(struct lower *L, enum pad_mode mode, struct tir *s, int64_t d,
			      struct tir *dd)
{
	struct tir_builder *b = L->b;
	struct tir *m, *p, *len = dd ? dd : tir_int(b, d);

	switch (mode) {
	case PAD_EDGE:
		return lower_clamp_index(L, s, len);
	case PAD_WRAP:
		return tir_bin(b, BIN_MOD, tir_add(b, tir_bin(b, BIN_MOD, s, len), len), len);
	case PAD_REFLECT:
		/* reflection without repeating the edge has period 2 * (d - 1) */
		if (!dd && d == 1)
			return tir_int(b, 0);
		p = tir_mul(b, tir_int(b, 2), tir_bin(b, BIN_SUB, len, tir_int(b, 1)));
		if (dd)		/* length 1: period 1, everything maps to 0 */
			p = tir_bin(b, BIN_MAX, p, tir_int(b, 1));
		m = tir_bin(b, BIN_MOD, tir_add(b, tir_bin(b, BIN_MOD, s, p), p), p);
		m = tir_let(b, "m", m);
		return tir_select(b, tir_bin(b, BIN_LT, m, len), m, tir_bin(b, BIN_SUB, p, m));
	default:
		return s;
	}
}

/* The fill value of constant padding (constant_value, else 0). */
static struct tir *pad_fill(struct lower *L, enum dtype t)
{
	return L->in[2] ? tir_cast(L->b, t, tir_load(L->b, L->in[2], tir_int(L->b, 0)))
		: tir_const(L->b, t, 0);
}

/* Pads known at run time: every axis shifted by its begin pad and mapped back. */
static int lower_pad_data(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	const char *mode = node_attr_str(L->n, "mode", "constant");
	enum pad_mode pm = !strcmp(mode, "reflect") ? PAD_REFLECT : !strcmp(mode, "edge")
		? PAD_EDGE : !strcmp(mode, "wrap") ? PAD_WRAP : PAD_CONSTANT;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL, *v;

	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++) {
		struct tir *d = tir_dim(b, x->shape.d[k]);

		xi[k] = tir_bin(b, BIN_SUB, idx[k], tir_dim(b, graph_data_param(
			L->g, L->n->out[0], "begin", k)));
		if (pm != PAD_CONSTANT) {
			xi[k] = pad_source(L, pm, xi[k], 0, d);
		} else {
			struct tir *c = in_range(L, xi[k], d);

			inside = inside ? tir_bin(b, BIN_LAND, inside, c) : c;
		}
	}
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (inside)
		v = tir_select(b, inside, v, pad_fill(L, x->dtype));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), v);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* Fill value outside the input (constant), else the reflected, clamped or wrapped source. */
int lower_pad(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL, *v;
	struct pad_plan p;

	if (node_is_dynamic(L->g, L->n))
		return lower_pad_data(L);
	if (pad_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++) {
		int64_t d = x->shape.d[k].c;

		if (!p.pb[k] && !p.pe[k]) {
			xi[k] = idx[k];
			continue;
		}
		xi[k] = tir_add(b, idx[k], tir_int(b, -p.pb[k]));
		if (p.mode != PAD_CONSTANT) {
			xi[k] = pad_source(L, p.mode, xi[k], d, NULL);
		} else if (p.pb[k] > 0 || p.pe[k] > 0) {
			/* only an axis padded at an end can step outside the input */
			struct tir *c = in_range(L, xi[k], tir_int(b, d));

			inside = inside ? tir_bin(b, BIN_LAND, inside, c) : c;
		}
	}
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (inside)
		v = tir_select(b, inside, v, pad_fill(L, x->dtype));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), v);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- Trilu ---- */

/* Output: the input's shape; k (optional) must be an int64 scalar. */
int infer_trilu(struct graph *g, struct node *n)
{
	struct value *x, *k;

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->shape.rank < 2) {
		diag_error(g->ctx, "%s: input must have rank 2 or more", node_loc(g, n));
		return -1;
	}
	if (node_in(g, n, 1)) {
		if (!(k = infer_input(g, n, 1)))
			return -1;
		if (k->dtype != DTYPE_I64 || k->shape.rank > 1) {
			diag_error(g->ctx, "%s: k must be an int64 scalar", node_loc(g, n));
			return -1;
		}
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* Keeps x[..., i, j] where j - i >= k (upper) or j - i <= k (lower); k is read at run time. */
int lower_trilu(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	int r = x->shape.rank;
	bool upper = node_attr_int(L->n, "upper", 1) != 0;
	struct tir *idx[MAX_RANK], *k, *off, *keep;
	int64_t *kv, cnt;

	if (!L->in[1])
		k = tir_int(b, 0);
	else if (value_const_ints(L->g, lower_in(L, 1), &kv, &cnt) == 0 && cnt == 1)
		k = tir_int(b, kv[0]);
	else
		k = tir_let(b, "k", tir_load(b, L->in[1], tir_int(b, 0)));
	lower_loops(L, &x->shape, idx);
	keep = tir_bin(b, upper ? BIN_GE : BIN_LE, tir_bin(b, BIN_SUB, idx[r - 1], idx[r - 2]), k);
	off = lower_offset(L, &x->shape, idx);
	tir_store(b, L->out[0], off, tir_select(b, keep, tir_load(b, L->in[0], off),
						 tir_const(b, x->dtype, 0)));
	lower_end_loops(L, r);
	return 0;
}

/* ---- DepthToSpace and SpaceToDepth ---- */

static int64_t blocksize(const struct node *n)
{
	return node_attr_int(n, "blocksize", 0);
}

static bool crd_mode(const struct node *n)
{
	return !strcmp(node_attr_str(n, "mode", "DCR"), "CRD");
}

/* DepthToSpace and SpaceToDepth on NCHW: moves blocksize^2 between C and H, W. */
int infer_depthtospace(struct graph *g, struct node *n)
{
	struct value *x;
	int64_t bs = blocksize(n);
	bool d2s = n->op == OP_DEPTHTOSPACE;
	const char *mode = node_attr_str(n, "mode", "DCR");
	struct shape s;
	bool ok;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->shape.rank != 4) {
		diag_error(g->ctx, "%s: input must have rank 4, not %d", node_loc(g, n),
			   x->shape.rank);
		return -1;
	}
	if (bs <= 0 || bs > 65536) {
		diag_error(g->ctx, "%s: blocksize %lld is out of range", node_loc(g, n),
			   (long long)bs);
		return -1;
	}
	if (d2s && strcmp(mode, "DCR") && strcmp(mode, "CRD")) {
		diag_error(g->ctx, "%s: mode '%s' is not supported (expected DCR or CRD)",
			   node_loc(g, n), mode);
		return -1;
	}
	s = x->shape;
	if (d2s)
		ok = dim_div(x->shape.d[1], dim_const(bs * bs), &s.d[1]) &&
		     dim_mul(x->shape.d[2], dim_const(bs), &s.d[2]) &&
		     dim_mul(x->shape.d[3], dim_const(bs), &s.d[3]);
	else
		ok = dim_mul(x->shape.d[1], dim_const(bs * bs), &s.d[1]) &&
		     dim_div(x->shape.d[2], dim_const(bs), &s.d[2]) &&
		     dim_div(x->shape.d[3], dim_const(bs), &s.d[3]);
	if (!ok) {
		struct strbuf sb = STRBUF_INIT;

		shape_print(g, &x->shape, &sb);
		if (d2s)
			diag_error(g->ctx, "%s: channels of input %s are not divisible by "
				   "blocksize^2 = %lld", node_loc(g, n), sb_str(&sb),
				   (long long)(bs * bs));
		else
			diag_error(g->ctx, "%s: height and width of input %s must be divisible "
				   "by blocksize %lld", node_loc(g, n), sb_str(&sb), (long long)bs);
		sb_release(&sb);
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * DepthToSpace: y[n, c, h*b + i, w*b + j] = x[n, ch, h, w] with
 * ch = (i*b + j)*C' + c (DCR) or c*b*b + i*b + j (CRD).
 * SpaceToDepth: y[n, (i*b + j)*C + c, h, w] = x[n, c, h*b + i, w*b + j].
 */
int lower_depthtospace(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[4], *xi[4], *bs = tir_int(b, blocksize(L->n)), *i, *j;

	lower_loops(L, &y->shape, idx);
	xi[0] = idx[0];
	if (L->n->op == OP_DEPTHTOSPACE) {
		i = tir_bin(b, BIN_MOD, idx[2], bs);
		j = tir_bin(b, BIN_MOD, idx[3], bs);
		xi[2] = tir_bin(b, BIN_DIV, idx[2], bs);
		xi[3] = tir_bin(b, BIN_DIV, idx[3], bs);
		if (crd_mode(L->n))
			xi[1] = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, idx[1], bs), i), bs),
					j);
		else
			xi[1] = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, i, bs), j),
						   tir_dim(b, y->shape.d[1])), idx[1]);
	} else {
		struct tir *c = tir_dim(b, x->shape.d[1]);
		struct tir *ij = tir_let(b, "ij", tir_bin(b, BIN_DIV, idx[1], c));

		xi[1] = tir_bin(b, BIN_MOD, idx[1], c);
		xi[2] = tir_add(b, tir_mul(b, idx[2], bs), tir_bin(b, BIN_DIV, ij, bs));
		xi[3] = tir_add(b, tir_mul(b, idx[3], bs), tir_bin(b, BIN_MOD, ij, bs));
	}
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, 4);
	return 0;
}

/* ---- GatherElements ---- */

/* Output: the indices' shape; data and indices have the same rank. */
int infer_gatherelements(struct graph *g, struct node *n)
{
	struct value *x, *ix;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(ix = infer_input(g, n, 1)) || check_index_type(g, n, ix) < 0)
		return -1;
	if (x->shape.rank != ix->shape.rank || x->shape.rank == 0) {
		diag_error(g->ctx, "%s: data rank %d and indices rank %d must be equal and "
			   "non-zero", node_loc(g, n), x->shape.rank, ix->shape.rank);
		return -1;
	}
	if (infer_axis(g, n, node_attr_int(n, "axis", 0), x->shape.rank) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &ix->shape);
	return 0;
}

/* y[idx] = data[idx with axis replaced by indices[idx]]. */
int lower_gatherelements(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *ix = lower_in(L, 1), *y = lower_out(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *dim, *off;

	if (axis < 0)
		axis += x->shape.rank;
	dim = tir_dim(L->b, x->shape.d[axis]);
	lower_loops(L, &y->shape, idx);
	memcpy(xi, idx, sizeof(idx));
	off = lower_offset(L, &ix->shape, idx);
	xi[axis] = lower_clamp_index(L, lower_wrap_index(L, tir_load(L->b, L->in[1], off), dim), dim);
	tir_store(L->b, L->out[0], off, tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- GatherND and ScatterND ---- */

/* Checks indices [..., k] against data; k (the tuple length) or -1. */
static int nd_tuple(struct graph *g, struct node *n, const struct value *x, const struct value *ix,
		    int batch)
{
	struct dim kd;

	if (check_index_type(g, n, ix) < 0)
		return -1;
	if (ix->shape.rank < 1) {
		diag_error(g->ctx, "%s: indices must have rank 1 or more", node_loc(g, n));
		return -1;
	}
	kd = ix->shape.d[ix->shape.rank - 1];
	if (!dim_is_const(kd)) {
		diag_error(g->ctx, "%s: the last dimension of indices must be static",
			   node_loc(g, n));
		return -1;
	}
	if (batch < 0 || batch >= ix->shape.rank || batch >= x->shape.rank || kd.c < 1 ||
	    kd.c > x->shape.rank - batch) {
		diag_error(g->ctx, "%s: index tuples of length %lld do not fit data of rank %d "
			   "with %d batch dims", node_loc(g, n), (long long)kd.c, x->shape.rank,
			   batch);
		return -1;
	}
	for (int k = 0; k < batch; k++)
		if (!dim_eq(x->shape.d[k], ix->shape.d[k]))
			return bad_shapes(g, n, "batch dimensions of data and indices differ",
					  &x->shape, &ix->shape);
	return (int)kd.c;
}

/* Output: indices.shape[:-1] + data.shape[batch_dims + k:]. */
int infer_gathernd(struct graph *g, struct node *n)
{
	struct value *x, *ix;
	int64_t batch = node_attr_int(n, "batch_dims", 0);
	struct shape s = { 0 };
	int k;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(ix = infer_input(g, n, 1)))
		return -1;
	if (batch < 0 || batch > MAX_RANK) {
		diag_error(g->ctx, "%s: batch_dims %lld is out of range", node_loc(g, n),
			   (long long)batch);
		return -1;
	}
	k = nd_tuple(g, n, x, ix, (int)batch);
	if (k < 0 || check_rank(g, n, ix->shape.rank - 1 + x->shape.rank - (int)batch - k) < 0)
		return -1;
	for (int d = 0; d < ix->shape.rank - 1; d++)
		s.d[s.rank++] = ix->shape.d[d];
	for (int d = (int)batch + k; d < x->shape.rank; d++)
		s.d[s.rank++] = x->shape.d[d];
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * Data index of output/update position idx: batch dims, then the k loaded
 * (wrapped) tuple entries, then the trailing slice dims. in_bounds receives
 * whether the tuple is inside the data (NULL to clamp instead).
 */
static void nd_index(struct lower *L, const struct value *x, const struct value *ix, int batch,
		     struct tir **idx, struct tir **xi, struct tir **in_bounds)
{
	struct tir_builder *b = L->b;
	int q = ix->shape.rank, k = (int)ix->shape.d[q - 1].c;
	struct tir *ii[MAX_RANK];

	memcpy(ii, idx, sizeof(*ii) * (size_t)(q - 1));
	for (int d = 0; d < batch; d++)
		xi[d] = idx[d];
	if (in_bounds)
		*in_bounds = NULL;
	for (int t = 0; t < k; t++) {
		struct tir *dim = tir_dim(b, x->shape.d[batch + t]), *v;

		ii[q - 1] = tir_int(b, t);
		v = lower_wrap_index(L, tir_load(b, L->in[1], lower_offset(L, &ix->shape, ii)), dim);
		if (in_bounds) {
			struct tir *c = in_range(L, v, dim);

			*in_bounds = *in_bounds ? tir_bin(b, BIN_LAND, *in_bounds, c) : c;
			xi[batch + t] = v;
		} else {
			xi[batch + t] = lower_clamp_index(L, v, dim);
		}
	}
	for (int d = batch + k; d < x->shape.rank; d++)
		xi[d] = idx[q - 1 + d - batch - k];
}

/* Each output slice reads the data slice its index tuple names. */
int lower_gathernd(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *ix = lower_in(L, 1), *y = lower_out(L, 0);
	int batch = (int)node_attr_int(L->n, "batch_dims", 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK];

	lower_loops(L, &y->shape, idx);
	nd_index(L, x, ix, batch, idx, xi, NULL);
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- ScatterElements, Scatter (its opset 9-10 name) and ScatterND ---- */

/* max and min came with opset 18 */
enum scatter_red { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN, RED_COUNT };

static int scatter_reduction(struct graph *g, const struct node *n)
{
	static const char *const names[RED_COUNT] = { "none", "add", "mul", "max", "min" };
	const char *r = node_attr_str(n, "reduction", "none");

	for (int i = 0; i < RED_COUNT; i++)
		if (!strcmp(r, names[i]))
			return i;
	diag_error(g->ctx, "%s: reduction '%s' is not supported", node_loc(g, n), r);
	return -1;
}

static int scatter_inputs(struct graph *g, struct node *n, struct value **x, struct value **ix,
			  struct value **up)
{
	if (infer_arity(g, n, 3, 3, 1) < 0 || !(*x = infer_input(g, n, 0)) ||
	    !(*ix = infer_input(g, n, 1)) || !(*up = infer_input(g, n, 2)) ||
	    check_index_type(g, n, *ix) < 0 || scatter_reduction(g, n) < 0)
		return -1;
	if ((*up)->dtype != (*x)->dtype) {
		diag_error(g->ctx, "%s: updates are %s but data is %s", node_loc(g, n),
			   dtype_name((*up)->dtype), dtype_name((*x)->dtype));
		return -1;
	}
	return 0;
}

/* ScatterElements and Scatter: output is data's shape; updates match indices. */
int infer_scatterelements(struct graph *g, struct node *n)
{
	struct value *x, *ix, *up;

	if (scatter_inputs(g, n, &x, &ix, &up) < 0)
		return -1;
	if (x->shape.rank != ix->shape.rank || x->shape.rank == 0)
		return bad_shapes(g, n, "data and indices must have the same non-zero rank",
				  &x->shape, &ix->shape);
	if (!shape_eq(&ix->shape, &up->shape))
		return bad_shapes(g, n, "indices and updates differ in shape", &ix->shape,
				  &up->shape);
	if (infer_axis(g, n, node_attr_int(n, "axis", 0), x->shape.rank) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* Stores v into out at off, combined with the value there by the reduction. */
static void scatter_store(struct lower *L, struct tir *off, struct tir *v)
{
	struct tir_builder *b = L->b;
	struct tir *old = tir_load(b, L->out[0], off);

	switch (scatter_reduction(L->g, L->n)) {
	case RED_ADD: v = tir_add(b, old, v); break;
	case RED_MUL: v = tir_mul(b, old, v); break;
	case RED_MAX: v = tir_bin(b, BIN_MAX, old, v); break;
	case RED_MIN: v = tir_bin(b, BIN_MIN, old, v); break;
	default: break;
	}
	tir_store(b, L->out[0], off, v);
}

/*
 * Copies data, then applies the updates in order (a later duplicate wins);
 * updates at indices outside the data are skipped.
 */
int lower_scatterelements(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *ix = lower_in(L, 1);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *dim, *off;

	if (axis < 0)
		axis += x->shape.rank;
	copy_input(L);
	dim = tir_dim(b, x->shape.d[axis]);
	lower_loops(L, &ix->shape, idx);
	memcpy(xi, idx, sizeof(idx));
	off = lower_offset(L, &ix->shape, idx);
	xi[axis] = lower_wrap_index(L, tir_load(b, L->in[1], off), dim);
	tir_if(b, in_range(L, xi[axis], dim));
	scatter_store(L, lower_offset(L, &x->shape, xi), tir_load(b, L->in[2], off));
	tir_end(b);
	lower_end_loops(L, ix->shape.rank);
	return 0;
}

/* Output: data's shape; updates must have shape indices[:-1] + data[k:]. */
int infer_scatternd(struct graph *g, struct node *n)
{
	struct value *x, *ix, *up;
	struct shape s = { 0 };
	int k;

	if (scatter_inputs(g, n, &x, &ix, &up) < 0 || (k = nd_tuple(g, n, x, ix, 0)) < 0)
		return -1;
	if (check_rank(g, n, ix->shape.rank - 1 + x->shape.rank - k) < 0)
		return -1;
	for (int d = 0; d < ix->shape.rank - 1; d++)
		s.d[s.rank++] = ix->shape.d[d];
	for (int d = k; d < x->shape.rank; d++)
		s.d[s.rank++] = x->shape.d[d];
	if (!shape_eq(&s, &up->shape))
		return bad_shapes(g, n, "updates must have shape indices[:-1] + data[k:]",
				  &up->shape, &s);
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* Copies data, then writes each update slice at its index tuple, in order. */
int lower_scatternd(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *ix = lower_in(L, 1), *up = lower_in(L, 2);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *ok;

	copy_input(L);
	lower_loops(L, &up->shape, idx);
	nd_index(L, x, ix, 0, idx, xi, &ok);
	if (ok)
		tir_if(b, ok);
	scatter_store(L, lower_offset(L, &x->shape, xi),
		      tir_load(b, L->in[2], lower_offset(L, &up->shape, idx)));
	if (ok)
		tir_end(b);
	lower_end_loops(L, up->shape.rank);
	return 0;
}

/* ---- CumSum ---- */

/* Output: the input's shape; a constant axis is checked here. */
int infer_cumsum(struct graph *g, struct node *n)
{
	struct value *x, *a;
	int64_t *v, cnt;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(a = infer_input(g, n, 1)))
		return -1;
	if (x->shape.rank < 1 || x->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: input must be a numeric tensor of rank 1 or more",
			   node_loc(g, n));
		return -1;
	}
	if (a->dtype != DTYPE_I32 && a->dtype != DTYPE_I64) {
		diag_error(g->ctx, "%s: axis must be int32 or int64", node_loc(g, n));
		return -1;
	}
	/* a constant axis is checked here; a run-time one picks an axis in the kernel */
	if (value_const_ints(g, a, &v, &cnt) == 0) {
		if (cnt != 1) {
			diag_error(g->ctx, "%s: axis must be a scalar", node_loc(g, n));
			return -1;
		}
		if (infer_axis(g, n, v[0], x->shape.rank) < 0)
			return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* Product of dims [b, e) of s as an expression. */
static struct tir *dims_product(struct lower *L, const struct shape *s, int b, int e)
{
	struct tir *p = tir_int(L->b, 1);

	for (int k = b; k < e; k++)
		p = tir_mul(L->b, p, tir_dim(L->b, s->d[k]));
	return p;
}

/*
 * Viewed as [outer, len, inner] around the axis. A run-time axis selects
 * the three extents from the per-axis candidates in the kernel.
 */
int lower_cumsum(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	const struct shape *s = &x->shape;
	enum dtype t = x->dtype;
	bool excl = node_attr_int(L->n, "exclusive", 0) != 0;
	bool rev = node_attr_int(L->n, "reverse", 0) != 0;
	struct tir *outer, *len, *inner, *o, *i, *k, *base, *at, *acc, *v;
	int64_t *av, cnt;
	int r = s->rank;

	if (value_const_ints(L->g, lower_in(L, 1), &av, &cnt) == 0) {
		int a = (int)(av[0] < 0 ? av[0] + r : av[0]);

		outer = dims_product(L, s, 0, a);
		len = tir_dim(b, s->d[a]);
		inner = dims_product(L, s, a + 1, r);
	} else {
		struct tir *a = tir_let(b, "axis", tir_cast(b, DTYPE_I64, tir_load(b, L->in[1],
										 tir_int(b, 0))));

		a = tir_let(b, "axis", tir_select(b, tir_bin(b, BIN_LT, a, tir_int(b, 0)),
						  tir_add(b, a, tir_int(b, r)), a));
		outer = dims_product(L, s, 0, r - 1);
		len = tir_dim(b, s->d[r - 1]);
		inner = tir_int(b, 1);
		for (int d = r - 2; d >= 0; d--) {
			struct tir *is = tir_bin(b, BIN_EQ, a, tir_int(b, d));

			outer = tir_select(b, is, dims_product(L, s, 0, d), outer);
			len = tir_select(b, is, tir_dim(b, s->d[d]), len);
			inner = tir_select(b, is, dims_product(L, s, d + 1, r), inner);
		}
		outer = tir_let(b, "outer", outer);
		len = tir_let(b, "len", len);
		inner = tir_let(b, "inner", inner);
	}
	o = tir_loop(b, outer);
	tir_mark_parallel(b);
	i = tir_loop(b, inner);
	base = tir_let(b, "base", tir_add(b, tir_mul(b, tir_mul(b, o, len), inner), i));
	acc = tir_let(b, "acc", tir_const(b, t, 0));
	k = tir_loop(b, len);
	if (rev)
		k = tir_bin(b, BIN_SUB, tir_bin(b, BIN_SUB, len, tir_int(b, 1)), k);
	at = tir_let(b, "at", tir_add(b, base, tir_mul(b, k, inner)));
	v = tir_let(b, "v", tir_load(b, L->in[0], at));
	if (excl)
		tir_store(b, L->out[0], at, acc);
	tir_assign(b, acc, tir_add(b, acc, v));
	if (!excl)
		tir_store(b, L->out[0], at, acc);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	return 0;
}

/* ---- TopK ---- */

static int topk_plan(struct graph *g, struct node *n, int *axis, int64_t *k)
{
	struct value *x = infer_input(g, n, 0);
	int64_t *v, cnt, run_time_k = -1;
	struct dim d;

	if (!x || !infer_input(g, n, 1))
		return -1;
	/* k known only at run time: -1, and the shape function checks it */
	if (infer_is_data(g, n, 1)) {
		if (infer_data_count(g, n, 1, &cnt) < 0)
			return -1;
		v = &run_time_k;
	} else if (infer_const_ints(g, n, 1, &v, &cnt) < 0) {
		return -1;
	}
	*axis = infer_axis(g, n, node_attr_int(n, "axis", -1), x->shape.rank);
	if (*axis < 0)
		return -1;
	if (x->shape.rank == 0 || cnt != 1) {
		diag_error(g->ctx, "%s: needs a tensor of rank 1 or more and a single k",
			   node_loc(g, n));
		return -1;
	}
	d = x->shape.d[*axis];
	*k = v[0];
	if (v == &run_time_k)
		return 0;
	if (*k < 0 || *k > DIM_LIMIT || (dim_is_const(d) && *k > d.c)) {
		diag_error(g->ctx, "%s: k = %lld is out of range for axis %d", node_loc(g, n),
			   (long long)*k, *axis);
		return -1;
	}
	return 0;
}

/*
 * Outputs: values and int64 indices, the axis cut to k: a constant, or a
 * data symbol that the shape function binds from a k known at run time.
 */
int infer_topk(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;
	int axis;
	int64_t k;

	if (infer_arity(g, n, 2, 2, 2) < 0 || topk_plan(g, n, &axis, &k) < 0)
		return -1;
	x = node_in(g, n, 0);
	if (x->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: bool input is not supported", node_loc(g, n));
		return -1;
	}
	s = x->shape;
	s.d[axis] = k < 0 ? graph_data_sym(g, n->out[0], axis) : dim_const(k);
	infer_set(g, n, 0, x->dtype, &s);
	if (n->n_out > 1)
		infer_set(g, n, 1, DTYPE_I64, &s);
	return 0;
}

/*
 * k selection passes per line, each taking the best element after the
 * previous one in the order (value, then lower index first for ties): the
 * output is sorted and needs no scratch memory.
 */
int lower_topk(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	bool largest = node_attr_int(L->n, "largest", 1) != 0;
	enum tir_binop better = largest ? BIN_GT : BIN_LT, worse = largest ? BIN_LT : BIN_GT;
	struct tir *o, *i, *t, *j, *inner, *len, *kk, *base, *obase, *pv, *pi, *bv, *bi, *w;
	struct tir *after, *cand;
	int axis;
	int64_t k;

	if (topk_plan(L->g, (struct node *)L->n, &axis, &k) < 0)
		return -1;
	len = tir_dim(b, x->shape.d[axis]);
	inner = dims_product(L, &x->shape, axis + 1, x->shape.rank);
	kk = k < 0 ? tir_dim(b, lower_out(L, 0)->shape.d[axis]) : tir_int(b, k);
	o = tir_loop(b, dims_product(L, &x->shape, 0, axis));
	tir_mark_parallel(b);
	i = tir_loop(b, inner);
	base = tir_let(b, "base", tir_add(b, tir_mul(b, tir_mul(b, o, len), inner), i));
	obase = tir_let(b, "obase", tir_add(b, tir_mul(b, tir_mul(b, o, kk), inner), i));
	pv = tir_let(b, "pv", tir_const(b, x->dtype, 0));
	pi = tir_let(b, "pi", tir_int(b, -1));
	t = tir_loop(b, kk);
	bv = tir_let(b, "bv", tir_const(b, x->dtype, 0));
	bi = tir_let(b, "bi", tir_int(b, -1));
	j = tir_loop(b, len);
	w = tir_let(b, "w", tir_load(b, L->in[0], tir_add(b, base, tir_mul(b, j, inner))));
	after = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, pi, tir_int(b, 0)),
			tir_bin(b, BIN_LOR, tir_bin(b, worse, w, pv),
				tir_bin(b, BIN_LAND, tir_bin(b, BIN_EQ, w, pv),
					tir_bin(b, BIN_GT, j, pi))));
	cand = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, bi, tir_int(b, 0)),
		       tir_bin(b, better, w, bv));
	tir_if(b, tir_bin(b, BIN_LAND, after, cand));
	tir_assign(b, bv, w);
	tir_assign(b, bi, j);
	tir_end(b);
	tir_end(b);
	tir_store(b, L->out[0], tir_add(b, obase, tir_mul(b, t, inner)), bv);
	if (L->n->n_out > 1)
		tir_store(b, L->out[1], tir_add(b, obase, tir_mul(b, t, inner)), bi);
	tir_assign(b, pv, bv);
	tir_assign(b, pi, bi);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	return 0;
}

/* ---- ReverseSequence ---- */

static void seq_axes(const struct node *n, int *batch, int *time)
{
	*batch = (int)node_attr_int(n, "batch_axis", 1);
	*time = (int)node_attr_int(n, "time_axis", 0);
}

/* Output: the input's shape; sequence_lens has one length per batch entry. */
int infer_reversesequence(struct graph *g, struct node *n)
{
	struct value *x, *lens;
	int ba, ta;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(lens = infer_input(g, n, 1)))
		return -1;
	seq_axes(n, &ba, &ta);
	if (x->shape.rank < 2 || (ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta) {
		diag_error(g->ctx, "%s: needs rank 2 or more and batch_axis, time_axis being 0 "
			   "and 1", node_loc(g, n));
		return -1;
	}
	if (check_index_type(g, n, lens) < 0)
		return -1;
	if (lens->shape.rank != 1 || !dim_eq(lens->shape.d[0], x->shape.d[ba]))
		return bad_shapes(g, n, "sequence_lens must have shape [batch]", &lens->shape,
				  &x->shape);
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* Reverses the first sequence_lens[b] steps of each batch entry. */
int lower_reversesequence(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *len, *tlen;
	int ba, ta;

	seq_axes(L->n, &ba, &ta);
	tlen = tir_dim(b, x->shape.d[ta]);
	lower_loops(L, &x->shape, idx);
	len = tir_cast(b, DTYPE_I64, tir_load(b, L->in[1], idx[ba]));
	len = tir_let(b, "len", tir_bin(b, BIN_MAX, tir_bin(b, BIN_MIN, len, tlen), tir_int(b, 0)));
	memcpy(xi, idx, sizeof(idx));
	xi[ta] = tir_select(b, tir_bin(b, BIN_LT, idx[ta], len),
			    tir_bin(b, BIN_SUB, tir_bin(b, BIN_SUB, len, tir_int(b, 1)), idx[ta]),
			    idx[ta]);
	tir_store(b, L->out[0], lower_offset(L, &x->shape, idx),
		  tir_load(b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, x->shape.rank);
	return 0;
}

/* ---- Resize and Upsample ---- */

enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum rs_coord {
	RC_HALF_PIXEL, RC_PYTORCH_HALF_PIXEL, RC_ALIGN_CORNERS, RC_ASYMMETRIC,
	RC_TF_HALF_PIXEL_FOR_NN, RC_TF_CROP_AND_RESIZE, RC_HALF_PIXEL_SYMMETRIC, RC_COUNT
};
/* Resize-18 keep_aspect_ratio_policy: how sizes are read */
enum rs_keep { RK_STRETCH, RK_NOT_LARGER, RK_NOT_SMALLER, RK_COUNT };
/* RN_SIMPLE: Upsample and Resize-10: floor, or ceil when downsampling */
enum rs_nearest {
	RN_ROUND_PREFER_FLOOR, RN_ROUND_PREFER_CEIL, RN_FLOOR, RN_CEIL, RN_SIMPLE, RN_COUNT
};

struct resize_plan {
	enum rs_mode mode;
	enum rs_coord coord;
	enum rs_nearest nearest;
	enum rs_keep keep;
	bool antialias;
	double scale[MAX_RANK];			/* output / input, as the coordinates use it */
	double roi_b[MAX_RANK], roi_e[MAX_RANK];	/* tf_crop_and_resize */
	bool same[MAX_RANK];			/* axis copied unchanged */
	double cubic_a, extrapolation;
	bool exclude_outside;
	struct shape out;
	/*
	 * scales or sizes known only at run time: the kernel reads them (and
	 * roi) from its inputs, the output dims are data symbols
	 */
	bool rt;
	int sc_in, sz_in, roi_in;		/* input indices, -1: none or constant */
	int na, axes[MAX_RANK];			/* the axes scales, sizes and roi refer to */
	int at[MAX_RANK];			/* index of axis k in them, or -1 */
};

static int pick(struct graph *g, struct node *n, const char *attr, const char *def,
		const char *const *names, int count)
{
	const char *s = node_attr_str(n, attr, def);

	for (int i = 0; i < count; i++)
		if (!strcmp(s, names[i]))
			return i;
	diag_error(g->ctx, "%s: %s '%s' is not supported", node_loc(g, n), attr, s);
	return -1;
}

/* Reads the attributes that pick the interpolation; -1 after a diagnostic. */
static int resize_modes(struct graph *g, struct node *n, bool old, struct resize_plan *p)
{
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	static const char *const coords[RC_COUNT] = {
		"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
		"tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric",
	};
	static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil",
						"floor", "ceil" };
	static const char *const keeps[RK_COUNT] = { "stretch", "not_larger", "not_smaller" };
	int m = pick(g, n, "mode", "nearest", modes, old ? 2 : 3), c, r, k;

	if (m < 0)
		return -1;
	p->mode = (enum rs_mode)m;
	p->cubic_a = node_attr_float(n, "cubic_coeff_a", -0.75);
	p->exclude_outside = node_attr_int(n, "exclude_outside", 0) != 0;
	p->extrapolation = node_attr_float(n, "extrapolation_value", 0);
	if (old) {
		p->coord = RC_ASYMMETRIC;
		p->nearest = RN_SIMPLE;
		return 0;
	}
	if ((c = pick(g, n, "coordinate_transformation_mode", "half_pixel", coords,
		      RC_COUNT)) < 0 ||
	    (r = pick(g, n, "nearest_mode", "round_prefer_floor", nearests, 4)) < 0 ||
	    (k = pick(g, n, "keep_aspect_ratio_policy", "stretch", keeps, RK_COUNT)) < 0)
		return -1;
	p->coord = (enum rs_coord)c;
	p->nearest = (enum rs_nearest)r;
	p->keep = (enum rs_keep)k;
	/* the filter is stretched only when downscaling (see resize_taps_aa) */
	p->antialias = p->mode != RS_NEAREST && node_attr_int(n, "antialias", 0) != 0;
	return 0;
}

/* A size computed from shapes that is the input's own (symbolic) length. */
#define RESIZE_SAME INT64_MIN

/*
 * Reads the sizes input: constants, or computed from shapes where a
 * symbolic size must be the axis's own length (sizes = Shape(x)[0:2] and
 * [8, 8]); those read RESIZE_SAME. 0 or -1 after a diagnostic.
 */
static int resize_sizes(struct graph *g, struct node *n, const int *axes, int64_t **sz,
			int64_t *nsz)
{
	const struct value *x = node_in(g, n, 0);
	struct dim *v;

	if (infer_sym_ints(g, n, 3, &v, nsz) < 0)
		return -1;
	*sz = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(*nsz + 1));
	for (int64_t k = 0; k < *nsz; k++) {
		if (dim_is_const(v[k])) {
			(*sz)[k] = v[k].c;
		} else if (k < x->shape.rank && dim_eq(v[k], x->shape.d[axes[k]])) {
			(*sz)[k] = RESIZE_SAME;
		} else {
			diag_error(g->ctx, "%s: size %lld is computed from symbolic dims and is not "
				   "the input's length", node_loc(g, n), (long long)k);
			return -1;
		}
	}
	return 0;
}

/*
 * Scales (attribute or constant input) or sizes (constant input) of the r
 * axes they refer to; -1 on error.
 */
static int resize_factors(struct graph *g, struct node *n, bool old, const int *axes, int r,
			  double **sc, int64_t **sz)
{
	int si = old ? 1 : 2;
	int64_t nsc = 0, nsz = 0;

	*sc = NULL;
	*sz = NULL;
	if (n->op == OP_UPSAMPLE && g->opset < 9) {
		const struct attr *a = node_attr(n, "scales");

		if (!a || a->kind != ATTR_FLOATS) {
			diag_error(g->ctx, "%s: attribute 'scales' is missing", node_loc(g, n));
			return -1;
		}
		*sc = a->floats;
		nsc = a->n;
	} else if (node_in(g, n, si) && const_doubles(g, n, si, sc, &nsc) < 0) {
		return -1;
	}
	if (!old && node_in(g, n, 3) && resize_sizes(g, n, axes, sz, &nsz) < 0)
		return -1;
	if ((nsc > 0) == (nsz > 0)) {
		diag_error(g->ctx, "%s: exactly one of scales and sizes must be given",
			   node_loc(g, n));
		return -1;
	}
	if ((nsc ? nsc : nsz) != r) {
		diag_error(g->ctx, "%s: %s has %lld values for %d axes", node_loc(g, n),
			   nsc ? "scales" : "sizes", (long long)(nsc ? nsc : nsz), r);
		return -1;
	}
	/* an empty scales or sizes tensor counts as absent */
	if (!nsc)
		*sc = NULL;
	else
		*sz = NULL;
	return 0;
}

/*
 * The axes that scales, sizes and roi refer to: Resize-18's axes attribute,
 * else all. Their count, or -1 after a diagnostic.
 */
static int resize_axes(struct graph *g, struct node *n, bool old, int r, int *axes)
{
	const int64_t *v;
	int na = old ? -1 : node_attr_ints(n, "axes", &v);
	bool seen[MAX_RANK] = { false };

	if (na < 0) {
		for (int k = 0; k < r; k++)
			axes[k] = k;
		return r;
	}
	if (na > r) {
		diag_error(g->ctx, "%s: axes has %d values for rank %d", node_loc(g, n), na, r);
		return -1;
	}
	for (int i = 0; i < na; i++) {
		int a = infer_axis(g, n, v[i], r);

		if (a < 0)
			return -1;
		if (seen[a]) {
			diag_error(g->ctx, "%s: axis %d is repeated in axes", node_loc(g, n), a);
			return -1;
		}
		seen[a] = true;
		axes[i] = a;
	}
	return na;
}

/*
 * keep_aspect_ratio_policy not_larger / not_smaller: the one scale of all
 * resized axes, the smallest / largest of sizes[i] / input length. -1 after
 * a diagnostic.
 */
static int resize_keep_scale(struct graph *g, struct node *n, const struct resize_plan *p,
			     const struct shape *x, const int *axes, int na, const int64_t *sz,
			     double *scale)
{
	for (int i = 0; i < na; i++) {
		struct dim d = x->d[axes[i]];
		double s;

		if (!dim_is_const(d) || d.c == 0 || sz[i] < 0) {
			diag_error(g->ctx, "%s: keep_aspect_ratio_policy needs constant non-empty "
				   "input lengths and non-negative sizes", node_loc(g, n));
			return -1;
		}
		s = (double)sz[i] / (double)d.c;
		if (i == 0 || (p->keep == RK_NOT_LARGER ? s < *scale : s > *scale))
			*scale = s;
	}
	return 0;
}

/*
 * Input i as a run-time tensor of static element count (*count, 0 counting
 * as absent): neither a constant nor shape arithmetic.
 */
static bool resize_is_data(struct graph *g, struct node *n, int i, int64_t *count)
{
	const struct value *v = node_in(g, n, i);

	*count = 0;
	if (!v || !v->has_shape || v->data || v->sym || !shape_is_static(&v->shape))
		return false;
	*count = shape_numel_static(&v->shape);
	return true;
}

/* Whether input i is absent or has no elements (an empty constant or input). */
static bool resize_is_empty(struct graph *g, struct node *n, int i)
{
	const struct value *v = node_in(g, n, i);

	return !v || (v->has_shape && shape_is_static(&v->shape) &&
		      shape_numel_static(&v->shape) == 0);
}

/*
 * When scales or sizes are known only at run time: fills the plan's
 * run-time part (p->rt) and the output shape, data symbols on the axes
 * they refer to. Returns na, or -1 after a diagnostic.
 */
static int resize_data_plan(struct graph *g, struct node *n, bool old, const int *axes, int na,
			    struct resize_plan *p)
{
	const struct value *x = node_in(g, n, 0);
	int si = old ? 1 : 2;
	int64_t nsc = 0, nsz = 0, nroi;
	bool dsc, dsz;
	double *roi;

	p->rt = false;
	if (n->op == OP_UPSAMPLE && g->opset < 9)
		return na;
	dsc = resize_is_data(g, n, si, &nsc) && nsc > 0;
	dsz = !old && resize_is_data(g, n, 3, &nsz) && nsz > 0;
	if (!dsc && !dsz)
		return na;
	/* the other one must be absent or empty */
	if ((dsc && !old && !resize_is_empty(g, n, 3)) || (dsz && !resize_is_empty(g, n, si))) {
		diag_error(g->ctx, "%s: exactly one of scales and sizes must be given",
			   node_loc(g, n));
		return -1;
	}
	if ((dsc ? nsc : nsz) != na) {
		diag_error(g->ctx, "%s: %s has %lld values for %d axes", node_loc(g, n),
			   dsc ? "scales" : "sizes", (long long)(dsc ? nsc : nsz), na);
		return -1;
	}
	if (dsc && node_in(g, n, si)->dtype != DTYPE_F32 && node_in(g, n, si)->dtype != DTYPE_F64) {
		diag_error(g->ctx, "%s: scales known only at run time must be float or double",
			   node_loc(g, n));
		return -1;
	}
	if (p->antialias) {
		diag_error(g->ctx, "%s: antialias with scales or sizes known only at run time is "
			   "not supported", node_loc(g, n));
		return -1;
	}
	p->rt = true;
	p->sc_in = dsc ? si : -1;
	p->sz_in = dsz ? 3 : -1;
	p->roi_in = -1;
	p->na = na;
	if (p->coord == RC_TF_CROP_AND_RESIZE) {
		if (node_in(g, n, 1) && resize_is_data(g, n, 1, &nroi)) {
			p->roi_in = 1;
		} else if (!node_in(g, n, 1) || const_doubles(g, n, 1, &roi, &nroi) < 0) {
			return -1;
		}
		if (nroi != 2 * na) {
			diag_error(g->ctx, "%s: roi has %lld values, expected %d", node_loc(g, n),
				   (long long)nroi, 2 * na);
			return -1;
		}
	}
	p->out = x->shape;
	for (int k = 0; k < x->shape.rank; k++) {
		p->at[k] = -1;
		p->same[k] = true;
		p->scale[k] = 1;
		p->roi_b[k] = 0;
		p->roi_e[k] = 1;
	}
	for (int i = 0; i < na; i++) {
		int k = axes[i];

		p->axes[i] = k;
		p->at[k] = i;
		p->same[k] = false;
		if (p->coord == RC_TF_CROP_AND_RESIZE && p->roi_in < 0) {
			p->roi_b[k] = roi[i];
			p->roi_e[k] = roi[i + na];
		}
		p->out.d[k] = graph_data_sym(g, n->out[0], k);
	}
	return na;
}

static int resize_plan(struct graph *g, struct node *n, struct resize_plan *p);

/*
 * The rt_shape attr of a Resize or Upsample whose scales or sizes are known
 * only at run time (runtime/rt_shape.c's shape_resize): bit 0
 * tf_crop_and_resize, bits 1-2 keep_aspect_ratio_policy, bit 3 the old
 * input order (scales is input 1), bits 4-7 the number of axes, then 4
 * bits per axis from bit 8.
 */
int64_t resize_shape_attr(struct graph *g, const struct node *n)
{
	struct resize_plan p;
	int64_t a;

	if (resize_plan(g, (struct node *)n, &p) < 0 || !p.rt)
		BUG("Resize node '%s' has no run-time shape", n->name);
	a = (p.coord == RC_TF_CROP_AND_RESIZE) | (int64_t)p.keep << 1 |
	    (int64_t)(p.sc_in == 1) << 3 | (int64_t)p.na << 4;
	for (int i = 0; i < p.na; i++)
		a |= (int64_t)p.axes[i] << (8 + 4 * i);
	return a;
}

/* Output shape and per-axis coordinate parameters, shared by infer and lower. */
static int resize_plan(struct graph *g, struct node *n, struct resize_plan *p)
{
	bool old = n->op == OP_UPSAMPLE || g->opset < 11, tf;
	struct value *x = infer_input(g, n, 0);
	double *sc, *roi = NULL, keep_scale = 1;
	int64_t *sz, nroi;
	int r, na, axes[MAX_RANK], at[MAX_RANK];

	memset(p, 0, sizeof(*p));
	if (!x || resize_modes(g, n, old, p) < 0)
		return -1;
	r = x->shape.rank;
	if ((na = resize_axes(g, n, old, r, axes)) < 0 ||
	    (na = resize_data_plan(g, n, old, axes, na, p)) < 0)
		return -1;
	if (p->rt)
		return 0;
	if (resize_factors(g, n, old, axes, na, &sc, &sz) < 0)
		return -1;
	if (p->coord == RC_TF_CROP_AND_RESIZE) {
		if (!node_in(g, n, 1) || const_doubles(g, n, 1, &roi, &nroi) < 0)
			return -1;
		if (nroi != 2 * na) {
			diag_error(g->ctx, "%s: roi has %lld values, expected %d", node_loc(g, n),
				   (long long)nroi, 2 * na);
			return -1;
		}
	}
	if (sz && p->keep != RK_STRETCH &&
	    resize_keep_scale(g, n, p, &x->shape, axes, na, sz, &keep_scale) < 0)
		return -1;
	/* at[k]: the index of axis k in scales, sizes and roi, or -1 */
	for (int k = 0; k < r; k++)
		at[k] = -1;
	for (int i = 0; i < na; i++)
		at[axes[i]] = i;
	tf = p->coord == RC_TF_CROP_AND_RESIZE || p->coord == RC_TF_HALF_PIXEL_FOR_NN;
	p->out = x->shape;
	for (int k = 0; k < r; k++) {
		struct dim d = x->shape.d[k];
		int i = at[k];
		double len;

		p->roi_b[k] = roi && i >= 0 ? roi[i] : 0;
		p->roi_e[k] = roi && i >= 0 ? roi[i + na] : 1;
		p->scale[k] = 1;
		p->same[k] = i < 0;
		if (i < 0)
			continue;
		if (sc && !(sc[i] > 0)) {
			diag_error(g->ctx, "%s: scale %g is not positive", node_loc(g, n), sc[i]);
			return -1;
		}
		/* an axis kept as it is may be symbolic */
		p->same[k] = !tf && (sc ? sc[i] == 1 : p->keep != RK_STRETCH ? keep_scale == 1
				     : sz[i] == RESIZE_SAME || dim_eq(d, dim_const(sz[i])));
		if (p->same[k])
			continue;
		if (!dim_is_const(d)) {
			diag_error(g->ctx, "%s: resizing symbolic axis %d is not supported",
				   node_loc(g, n), k);
			return -1;
		}
		if (sz && p->keep != RK_STRETCH) {
			/* round half up, as the spec says */
			p->scale[k] = keep_scale;
			p->out.d[k] = dim_const((int64_t)(keep_scale * (double)d.c + 0.5));
			continue;
		}
		if (sz && (d.c == 0 || sz[i] < 0 || sz[i] > DIM_LIMIT)) {
			diag_error(g->ctx, "%s: cannot resize axis %d from %lld to %lld",
				   node_loc(g, n), k, (long long)d.c, (long long)sz[i]);
			return -1;
		}
		if (sz) {
			p->scale[k] = (double)sz[i] / (double)d.c;
			p->out.d[k] = dim_const(sz[i]);
			continue;
		}
		p->scale[k] = sc[i];
		len = (double)d.c * sc[i];
		if (p->coord == RC_TF_CROP_AND_RESIZE)
			len *= p->roi_e[k] - p->roi_b[k];
		if (!(len >= 0 && len < (double)DIM_LIMIT)) {
			diag_error(g->ctx, "%s: output length of axis %d is out of range",
				   node_loc(g, n), k);
			return -1;
		}
		p->out.d[k] = dim_const((int64_t)floor(len));
	}
	return 0;
}

/* Resize (opsets 10+) and Upsample: output lengths from constant scales or sizes. */
int infer_resize(struct graph *g, struct node *n)
{
	struct resize_plan p;
	struct value *x;
	bool up = n->op == OP_UPSAMPLE, old = up || g->opset < 11;

	if (infer_arity(g, n, 1, up ? (g->opset < 9 ? 1 : 2) : old ? 2 : 4, 1) < 0 ||
	    resize_plan(g, n, &p) < 0)
		return -1;
	x = node_in(g, n, 0);
	if (p.mode != RS_NEAREST && x->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: %s interpolation of bool is not supported",
			   node_loc(g, n), p.mode == RS_LINEAR ? "linear" : "cubic");
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &p.out);
	return 0;
}

static struct tir *f64(struct lower *L, double v)
{
	return tir_flt(L->b, DTYPE_F64, v);
}

/* Element i of input `in` of the node being lowered, as float64. */
static struct tir *load_f64(struct lower *L, int in, int i)
{
	return tir_cast(L->b, DTYPE_F64, tir_load(L->b, L->in[in], tir_int(L->b, i)));
}

/*
 * The scale of axis k when scales or sizes are known only at run time: the
 * scales element, the output length over the input's, or under
 * keep_aspect_ratio_policy the smallest / largest of those over the axes.
 */
static struct tir *resize_rt_scale(struct lower *L, const struct resize_plan *p, int k)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *s = NULL;

	if (p->sc_in >= 0)
		return load_f64(L, p->sc_in, p->at[k]);
	if (p->keep == RK_STRETCH)
		return tir_bin(b, BIN_DIV, tir_cast(b, DTYPE_F64, tir_dim(b, y->shape.d[k])),
			       tir_cast(b, DTYPE_F64, tir_dim(b, x->shape.d[k])));
	for (int i = 0; i < p->na; i++) {
		struct tir *si = tir_bin(b, BIN_DIV, load_f64(L, p->sz_in, i), tir_cast(b, DTYPE_F64,
					 tir_dim(b, x->shape.d[p->axes[i]])));

		s = s ? tir_bin(b, p->keep == RK_NOT_LARGER ? BIN_MIN : BIN_MAX, s, si) : si;
	}
	return s;
}

/*
 * resize_coord with the scale (and roi) known only at run time: the same
 * formulas on expressions. in: the input length (float64), out: the output's.
 */
static struct tir *resize_coord_rt(struct lower *L, const struct resize_plan *p, struct tir *o,
				   struct tir *scale, struct tir *in, struct tir *out, int axis)
{
	struct tir_builder *b = L->b;
	struct tir *width = tir_let(b, "width", tir_mul(b, scale, in));
	struct tir *x = tir_cast(b, DTYPE_F64, o), *one = tir_bin(b, BIN_EQ, width, f64(L, 1));
	struct tir *hp = tir_bin(b, BIN_SUB, tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)),
						     scale), f64(L, 0.5));
	struct tir *in1 = tir_bin(b, BIN_SUB, in, f64(L, 1)), *rb, *re, *wd;

	switch (p->coord) {
	case RC_HALF_PIXEL:
		return hp;
	case RC_HALF_PIXEL_SYMMETRIC:
		return tir_add(b, tir_mul(b, tir_bin(b, BIN_DIV, in, f64(L, 2)),
					  tir_bin(b, BIN_SUB, f64(L, 1), tir_bin(b, BIN_DIV, out,
										 width))), hp);
	case RC_PYTORCH_HALF_PIXEL:
		return tir_select(b, one, f64(L, -0.5), hp);
	case RC_ALIGN_CORNERS:
		return tir_select(b, one, f64(L, 0), tir_bin(b, BIN_DIV, tir_mul(b, x, in1),
							     tir_bin(b, BIN_SUB, width, f64(L, 1))));
	case RC_TF_HALF_PIXEL_FOR_NN:
		return tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)), scale);
	case RC_TF_CROP_AND_RESIZE:
		rb = p->roi_in >= 0 ? load_f64(L, p->roi_in, p->at[axis]) : f64(L, p->roi_b[axis]);
		re = p->roi_in >= 0 ? load_f64(L, p->roi_in, p->at[axis] + p->na)
			: f64(L, p->roi_e[axis]);
		rb = tir_let(b, "rb", rb);
		wd = tir_let(b, "rw", tir_mul(b, tir_bin(b, BIN_SUB, re, rb), in1));
		return tir_add(b, tir_select(b, one, tir_bin(b, BIN_DIV, wd, f64(L, 2)),
					     tir_bin(b, BIN_DIV, tir_mul(b, x, wd),
						     tir_bin(b, BIN_SUB, width, f64(L, 1)))),
			       tir_mul(b, rb, in1));
	default:
		return tir_bin(b, BIN_DIV, x, scale);
	}
}

/*
 * Input coordinate (float64) of output index o on an axis of length in. As
 * in the ONNX reference, the unrounded output length scale * in is used.
 */
static struct tir *resize_coord(struct lower *L, const struct resize_plan *p, struct tir *o,
				int64_t in, int axis)
{
	struct tir_builder *b = L->b;
	double scale = p->scale[axis], width = scale * (double)in;
	struct tir *x = tir_cast(b, DTYPE_F64, o);
	struct tir *hp = tir_bin(b, BIN_SUB, tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)),
						     f64(L, scale)), f64(L, 0.5));
	double rb = p->roi_b[axis], re = p->roi_e[axis];

	switch (p->coord) {
	case RC_HALF_PIXEL:
		return hp;
	case RC_HALF_PIXEL_SYMMETRIC: {
		/* shifts the half_pixel grid by the rounding of the output length */
		double adjust = (double)p->out.d[axis].c / width;

		return tir_add(b, f64(L, (double)in / 2 * (1 - adjust)), hp);
	}
	case RC_PYTORCH_HALF_PIXEL:
		return width == 1 ? f64(L, -0.5) : hp;
	case RC_ALIGN_CORNERS:
		if (width == 1)
			return f64(L, 0);
		return tir_bin(b, BIN_DIV, tir_mul(b, x, f64(L, (double)(in - 1))),
			       f64(L, width - 1));
	case RC_TF_HALF_PIXEL_FOR_NN:
		return tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)), f64(L, scale));
	case RC_TF_CROP_AND_RESIZE:
		if (width == 1)
			return f64(L, (re - rb) * (double)(in - 1) / 2 + rb * (double)(in - 1));
		return tir_add(b, tir_bin(b, BIN_DIV, tir_mul(b, x, f64(L, (re - rb) *
									   (double)(in - 1))),
					  f64(L, width - 1)), f64(L, rb * (double)(in - 1)));
	default:
		return tir_bin(b, BIN_DIV, x, f64(L, scale));
	}
}

struct taps {
	int n;
	struct tir *at[4], *w[4];	/* input indices and weights (none for nearest) */
	/* antialias (resize_taps_aa): a loop over n taps from i0 + start instead */
	bool loop;
	int64_t start, in;
	double s;			/* the scale that stretches the filter */
	struct tir *c, *i0, *wsum;	/* coordinate, base index, the weights' sum */
};

/*
 * Fills the taps (clamped input indices and weights) of coordinate c on an
 * axis of length dim; rscale: the scale when known only at run time, else
 * NULL and scale.
 */
static void resize_taps(struct lower *L, const struct resize_plan *p, struct tir *c, double scale,
			struct tir *rscale, struct tir *dim, struct taps *t)
{
	struct tir_builder *b = L->b;
	struct tir *fl, *r, *i0, *sum = NULL;
	double A = p->cubic_a;

	t->loop = false;
	if (p->mode == RS_NEAREST) {
		enum rs_nearest m = p->nearest;

		if (m == RN_SIMPLE && rscale) {
			/* ceil when downsampling */
			c = tir_select(b, tir_bin(b, BIN_LT, rscale, f64(L, 1)),
				       tir_call1(b, INTRIN_CEIL, c), tir_call1(b, INTRIN_FLOOR, c));
			m = RN_COUNT;
		} else if (m == RN_SIMPLE) {
			m = scale < 1 ? RN_CEIL : RN_FLOOR;
		}
		switch (m) {
		case RN_COUNT:
			break;
		case RN_ROUND_PREFER_FLOOR:
			c = tir_call1(b, INTRIN_CEIL, tir_bin(b, BIN_SUB, c, f64(L, 0.5)));
			break;
		case RN_ROUND_PREFER_CEIL:
			c = tir_call1(b, INTRIN_FLOOR, tir_add(b, c, f64(L, 0.5)));
			break;
		case RN_CEIL:
			c = tir_call1(b, INTRIN_CEIL, c);
			break;
		default:
			c = tir_call1(b, INTRIN_FLOOR, c);
			break;
		}
		t->n = 1;
		t->at[0] = tir_let(b, "at", lower_clamp_index(L, tir_cast(b, DTYPE_I64, c), dim));
		return;
	}
	fl = tir_let(b, "fl", tir_call1(b, INTRIN_FLOOR, c));
	r = tir_let(b, "r", tir_bin(b, BIN_SUB, c, fl));
	i0 = tir_let(b, "i0", tir_cast(b, DTYPE_I64, fl));
	if (p->mode == RS_LINEAR) {
		t->n = 2;
		t->at[0] = tir_let(b, "at", lower_clamp_index(L, i0, dim));
		t->at[1] = tir_let(b, "at", lower_clamp_index(L, tir_add(b, i0, tir_int(b, 1)), dim));
		t->w[0] = tir_let(b, "w", tir_bin(b, BIN_SUB, f64(L, 1), r));
		t->w[1] = r;
		return;
	}
	/* cubic convolution with coefficient A on taps i0 - 1 .. i0 + 2 */
	t->n = 4;
	for (int j = 0; j < 4; j++) {
		/* distance of tap j from the coordinate */
		struct tir *d, *w, *raw;

		if (j == 1)
			d = r;
		else
			d = tir_let(b, "d", j == 0 ? tir_add(b, r, f64(L, 1))
				    : tir_bin(b, BIN_SUB, f64(L, j - 1), r));
		if (j == 1 || j == 2) {
			/* ((A + 2) d - (A + 3)) d^2 + 1 */
			w = tir_bin(b, BIN_SUB, tir_mul(b, f64(L, A + 2), d), f64(L, A + 3));
			w = tir_add(b, tir_mul(b, tir_mul(b, w, d), d), f64(L, 1));
		} else {
			/* ((A d - 5A) d + 8A) d - 4A */
			w = tir_bin(b, BIN_SUB, tir_mul(b, f64(L, A), d), f64(L, 5 * A));
			w = tir_add(b, tir_mul(b, w, d), f64(L, 8 * A));
			w = tir_bin(b, BIN_SUB, tir_mul(b, w, d), f64(L, 4 * A));
		}
		raw = tir_add(b, i0, tir_int(b, j - 1));
		if (p->exclude_outside)
			w = tir_select(b, in_range(L, raw, dim), w, f64(L, 0));
		t->w[j] = tir_let(b, "w", w);
		t->at[j] = tir_let(b, "at", lower_clamp_index(L, raw, dim));
		sum = sum ? tir_add(b, sum, t->w[j]) : t->w[j];
	}
	if (p->exclude_outside) {
		sum = tir_let(b, "wsum", sum);
		for (int j = 0; j < 4; j++)
			t->w[j] = tir_let(b, "w", tir_bin(b, BIN_DIV, t->w[j], sum));
	}
}

/* The antialias filter at distance u (in output pixels): a triangle or the cubic kernel. */
static struct tir *aa_weight(struct lower *L, const struct resize_plan *p, struct tir *u)
{
	struct tir_builder *b = L->b;
	double A = p->cubic_a;
	struct tir *x = tir_let(b, "u", tir_call1(b, INTRIN_FABS, u)), *near, *far;

	if (p->mode == RS_LINEAR)
		return tir_bin(b, BIN_MAX, f64(L, 0), tir_bin(b, BIN_SUB, f64(L, 1), x));
	/* ((A + 2) x - (A + 3)) x^2 + 1 within 1, ((A x - 5A) x + 8A) x - 4A within 2 */
	near = tir_add(b, tir_mul(b, tir_mul(b, tir_bin(b, BIN_SUB, tir_mul(b, f64(L, A + 2), x),
							f64(L, A + 3)), x), x), f64(L, 1));
	far = tir_bin(b, BIN_SUB, tir_mul(b, tir_add(b, tir_mul(b, tir_bin(b, BIN_SUB,
			tir_mul(b, f64(L, A), x), f64(L, 5 * A)), x), f64(L, 8 * A)), x), f64(L, 4 * A));
	return tir_select(b, tir_bin(b, BIN_LE, x, f64(L, 1)), near,
			  tir_select(b, tir_bin(b, BIN_LT, x, f64(L, 2)), far, f64(L, 0)));
}

/* Weight of tap j of a looped axis, zero outside the input under exclude_outside. */
static struct tir *aa_tap_weight(struct lower *L, const struct resize_plan *p,
				 const struct taps *t, struct tir *idx)
{
	struct tir_builder *b = L->b;
	struct tir *w = aa_weight(L, p, tir_mul(b, tir_bin(b, BIN_SUB, tir_cast(b, DTYPE_F64, idx),
							  t->c), f64(L, t->s)));

	if (p->exclude_outside)
		w = tir_select(b, in_range(L, idx, tir_int(b, t->in)), w, f64(L, 0));
	return w;
}

/*
 * Antialiased linear or cubic taps when downscaling by s: the filter is
 * stretched by 1 / s, so 2 - 2 * start taps from ceil(c) - 1 + start,
 * start = floor(-1 / s) + 1 (linear) or floor(-2 / s) + 1 (cubic), weighted
 * by the filter at (index - c) * s and normalised by their sum (the taps
 * inside the input only, under exclude_outside); outside indices clamp.
 */
static void resize_taps_aa(struct lower *L, const struct resize_plan *p, struct tir *c,
			   double scale, int64_t in, struct taps *t)
{
	struct tir_builder *b = L->b;
	struct tir *j, *idx;

	memset(t, 0, sizeof(*t));
	t->loop = true;
	t->s = scale;
	t->in = in;
	t->start = (int64_t)floor((p->mode == RS_LINEAR ? -1 : -2) / scale) + 1;
	t->n = (int)(2 - 2 * t->start);
	t->c = c;
	t->i0 = tir_let(b, "i0", tir_add(b, tir_cast(b, DTYPE_I64, tir_bin(b, BIN_SUB,
				tir_call1(b, INTRIN_CEIL, c), f64(L, 1))), tir_int(b, t->start)));
	t->wsum = tir_let(b, "wsum", f64(L, 0));
	j = tir_loop(b, tir_int(b, t->n));
	idx = tir_let(b, "ix", tir_add(b, t->i0, j));
	tir_assign(b, t->wsum, tir_add(b, t->wsum, aa_tap_weight(L, p, t, idx)));
	tir_end(b);
}

/*
 * Weighted sum of the taps of resized axes a.. (float64), nested like the
 * ONNX reference: sum_i w_i * (sum_j w_j * (...)), the last axis innermost.
 */
static struct tir *resize_sum(struct lower *L, const struct resize_plan *p,
			      const struct taps *taps, const int *ax, int nax, int a, struct tir **xi)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *acc = NULL;

	if (a == nax)
		return tir_cast(L->b, DTYPE_F64, tir_load(L->b, L->in[0],
							  lower_offset(L, &x->shape, xi)));
	if (taps[a].loop) {
		/* an antialiased axis sums its taps in a loop */
		struct tir *j, *idx, *w;

		acc = tir_let(b, "acc", f64(L, 0));
		j = tir_loop(b, tir_int(b, taps[a].n));
		idx = tir_let(b, "ix", tir_add(b, taps[a].i0, j));
		w = tir_let(b, "w", aa_tap_weight(L, p, &taps[a], idx));
		xi[ax[a]] = tir_let(b, "at", lower_clamp_index(L, idx, tir_int(b, taps[a].in)));
		tir_assign(b, acc, tir_add(b, acc, tir_mul(b, w, resize_sum(L, p, taps, ax, nax,
									      a + 1, xi))));
		tir_end(b);
		return tir_bin(b, BIN_DIV, acc, taps[a].wsum);
	}
	for (int j = 0; j < taps[a].n; j++) {
		struct tir *v;

		xi[ax[a]] = taps[a].at[j];
		v = tir_mul(L->b, taps[a].w[j], resize_sum(L, p, taps, ax, nax, a + 1, xi));
		acc = acc ? tir_add(L->b, acc, v) : v;
	}
	return acc;
}

/*
 * Loops over the output; on each resized axis the coordinate and its taps
 * are computed in that axis's loop, and the innermost body sums the
 * weighted taps of all resized axes (one load for nearest).
 */
int lower_resize(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	int r = x->shape.rank, ax[MAX_RANK], nax = 0;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *outside = NULL, *acc;
	struct taps taps[MAX_RANK];
	struct resize_plan p;

	if (resize_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	for (int k = 0; k < r; k++) {
		idx[k] = tir_loop(b, tir_dim(b, y->shape.d[k]));
		xi[k] = idx[k];
		if (p.same[k])
			continue;
		if (p.rt) {
			struct tir *in = tir_let(b, "in", tir_dim(b, x->shape.d[k]));
			struct tir *inf = tir_cast(b, DTYPE_F64, in);
			struct tir *s = tir_let(b, "scale", resize_rt_scale(L, &p, k));
			struct tir *c = tir_let(b, "c", resize_coord_rt(L, &p, idx[k], s, inf,
					tir_cast(b, DTYPE_F64, tir_dim(b, y->shape.d[k])), k));

			if (p.coord == RC_TF_CROP_AND_RESIZE) {
				struct tir *o = tir_bin(b, BIN_GT, c, tir_bin(b, BIN_SUB, inf,
									      f64(L, 1)));

				o = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, c, f64(L, 0)), o);
				if (outside)
					o = tir_bin(b, BIN_LOR, outside, o);
				outside = tir_let(b, "out", o);
			}
			resize_taps(L, &p, c, 1, s, in, &taps[nax]);
			ax[nax++] = k;
			continue;
		}
		{
			int64_t in = x->shape.d[k].c;
			struct tir *c = tir_let(b, "c", resize_coord(L, &p, idx[k], in, k));

			if (p.coord == RC_TF_CROP_AND_RESIZE) {
				struct tir *o = tir_bin(b, BIN_GT, c, f64(L, (double)(in - 1)));

				o = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, c, f64(L, 0)), o);
				if (outside)
					o = tir_bin(b, BIN_LOR, outside, o);
				outside = tir_let(b, "out", o);
			}
			if (p.antialias && p.scale[k] < 1)
				resize_taps_aa(L, &p, c, p.scale[k], in, &taps[nax]);
			else
				resize_taps(L, &p, c, p.scale[k], NULL, tir_int(b, in), &taps[nax]);
			ax[nax++] = k;
		}
	}
	if (p.mode == RS_NEAREST) {
		for (int a = 0; a < nax; a++)
			xi[ax[a]] = taps[a].at[0];
		acc = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	} else {
		acc = resize_sum(L, &p, taps, ax, nax, 0, xi);
	}
	if (outside)
		acc = tir_select(b, outside, tir_const(b, x->dtype, p.extrapolation),
				 tir_cast(b, x->dtype, acc));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), acc);
	lower_end_loops(L, r);
	return 0;
}
