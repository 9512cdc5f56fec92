/*
 * ops_select.c - ops that keep the elements (or the indices of the
 * elements) of their input that a condition picks: Compress, NonZero,
 * Unique and NonMaxSuppression.
 */
#include "ops.h"


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
	if (dtype_is_float8(x->dtype) || dtype_is_string(x->dtype)) {
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
