/*
 * ops_axis.c - ops that run along one axis of their input: CumSum, CumProd,
 * TopK and ReverseSequence.
 *
 * TopK's k must be a constant; CumSum's and CumProd's axis and
 * ReverseSequence's sequence lengths are read by the kernel at run time.
 */
#include "ops.h"

#include <string.h>

/* ---- CumSum and CumProd (opset 26) ---- */

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
 * the three extents from the per-axis candidates in the kernel. The
 * running sum (product) starts at 0 (1), which the exclusive form stores
 * first.
 */
int lower_cumsum(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	const struct shape *s = &x->shape;
	enum dtype t = x->dtype;
	bool excl = node_attr_int(L->n, "exclusive", 0) != 0;
	bool rev = node_attr_int(L->n, "reverse", 0) != 0;
	bool prod = L->n->op == OP_CUMPROD;
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
	acc = tir_let(b, "acc", tir_const(b, t, prod ? 1 : 0));
	k = tir_loop(b, len);
	if (rev)
		k = tir_bin(b, BIN_SUB, tir_bin(b, BIN_SUB, len, tir_int(b, 1)), k);
	at = tir_let(b, "at", tir_add(b, base, tir_mul(b, k, inner)));
	v = tir_let(b, "v", tir_load(b, L->in[0], at));
	if (excl)
		tir_store(b, L->out[0], at, acc);
	tir_assign(b, acc, prod ? tir_mul(b, acc, v) : tir_add(b, acc, v));
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
	if (infer_check_index_type(g, n, lens) < 0)
		return -1;
	if (lens->shape.rank != 1 || !dim_eq(lens->shape.d[0], x->shape.d[ba]))
		return infer_bad_shapes(g, n, "sequence_lens must have shape [batch]", &lens->shape,
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
