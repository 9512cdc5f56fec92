/*
 * ops_nn.c - convolution, pooling, matrix multiplication and batch
 * normalisation: direct loop nests (the c target's generic schedules; the
 * library backends replace them by pattern).
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- Conv ---- */

static int conv_plan_any(struct graph *g, struct node *n, int xi, int wi, bool sym,
			 struct window *w, struct shape *out)
{
	struct value *x = infer_input(g, n, xi), *wt = infer_input(g, n, wi);
	int64_t group = node_attr_int(n, "group", 1), kern[MAX_RANK];

	if (!x || !wt)
		return -1;
	if (wt->shape.rank != x->shape.rank) {
		diag_error(g->ctx, "%s: weight rank %d differs from input rank %d", node_loc(g, n),
			   wt->shape.rank, x->shape.rank);
		return -1;
	}
	if (!shape_is_static(&wt->shape)) {
		diag_error(g->ctx, "%s: weight shape must be static", node_loc(g, n));
		return -1;
	}
	for (int i = 2; i < wt->shape.rank; i++)
		kern[i - 2] = wt->shape.d[i].c;
	{
		const int64_t *ks;
		int c = node_attr_ints(n, "kernel_shape", &ks);

		for (int i = 0; c == wt->shape.rank - 2 && i < c; i++)
			if (ks[i] != kern[i]) {
				diag_error(g->ctx, "%s: kernel_shape does not match the weight",
					   node_loc(g, n));
				return -1;
			}
	}
	if ((sym ? window_plan_sym(g, n, &x->shape, kern, w)
	     : window_plan(g, n, &x->shape, kern, false, w)) < 0)
		return -1;
	if (group <= 0 || !dim_is_const(x->shape.d[1]) ||
	    x->shape.d[1].c != wt->shape.d[1].c * group || wt->shape.d[0].c % group) {
		diag_error(g->ctx, "%s: input channels, weight shape and group %lld disagree",
			   node_loc(g, n), (long long)group);
		return -1;
	}
	out->rank = x->shape.rank;
	out->d[0] = x->shape.d[0];
	out->d[1] = wt->shape.d[0];
	for (int i = 0; i < w->r; i++)
		out->d[i + 2] = w->dout[i];
	return 0;
}

int conv_plan_at(struct graph *g, struct node *n, int xi, int wi, struct window *w,
		 struct shape *out)
{
	return conv_plan_any(g, n, xi, wi, false, w, out);
}

/* Conv's own: a spatial dim may be symbolic (window_plan_sym), for conv.direct. */
static int conv_plan(struct graph *g, struct node *n, struct window *w, struct shape *out)
{
	return conv_plan_any(g, n, 0, 1, true, w, out);
}

int infer_conv(struct graph *g, struct node *n)
{
	struct window w;
	struct shape s;

	if (infer_arity(g, n, 2, 3, 1) < 0 || conv_plan(g, n, &w, &s) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

int lower_conv(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1), *y = lower_out(L, 0);
	int64_t group = node_attr_int(L->n, "group", 1);
	int64_t cin_g = wt->shape.d[1].c, cout_g = wt->shape.d[0].c / group;
	struct window w;
	struct shape s;
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *xi[MAX_RANK], *wi[MAX_RANK], *acc, *cond = NULL;
	struct tir *ic, *gidx;

	if (conv_plan(L->g, (struct node *)L->n, &w, &s) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, oi);
	acc = tir_let(b, "acc", L->in[2] ? tir_load(b, L->in[2], oi[1]) : tir_const(b, y->dtype, 0));
	gidx = tir_bin(b, BIN_DIV, oi[1], tir_int(b, cout_g));
	ic = tir_loop(b, tir_int(b, cin_g));
	for (int i = 0; i < w.r; i++)
		ki[i] = tir_loop(b, tir_int(b, w.k[i]));
	xi[0] = oi[0];
	xi[1] = tir_add(b, tir_mul(b, gidx, tir_int(b, cin_g)), ic);
	wi[0] = oi[1];
	wi[1] = ic;
	for (int i = 0; i < w.r; i++) {
		xi[i + 2] = lower_window_pos(L, &w, i, oi[i + 2], ki[i], &cond);
		wi[i + 2] = ki[i];
	}
	if (cond)
		tir_if(b, cond);
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_load(b, L->in[0],
				lower_offset(L, &x->shape, xi)),
				tir_load(b, L->in[1], lower_offset(L, &wt->shape, wi)))));
	if (cond)
		tir_end(b);
	lower_end_loops(L, w.r + 1);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- MaxPool / AveragePool ---- */

static int pool_plan(struct graph *g, struct node *n, struct window *w, struct shape *out)
{
	struct value *x = infer_input(g, n, 0);
	const int64_t *ks;
	int c = node_attr_ints(n, "kernel_shape", &ks);

	if (!x)
		return -1;
	if (c != x->shape.rank - 2) {
		diag_error(g->ctx, "%s: kernel_shape must have %d values", node_loc(g, n),
			   x->shape.rank - 2);
		return -1;
	}
	/*
	 * MaxPool and AveragePool take symbolic spatial dims as Conv does
	 * (window_plan_sym: explicit pads, no ceil_mode); the com.microsoft
	 * pools static ones
	 */
	if ((n->op == OP_MAXPOOL || n->op == OP_AVERAGEPOOL) &&
	    !node_attr_int(n, "ceil_mode", 0) ? window_plan_sym(g, n, &x->shape, ks, w) < 0 :
	    window_plan(g, n, &x->shape, ks, node_attr_int(n, "ceil_mode", 0) != 0, w) < 0)
		return -1;
	*out = x->shape;
	for (int i = 0; i < w->r; i++)
		out->d[i + 2] = w->dout[i];
	return 0;
}

/* Y has X's type; MaxPool's optional Indices (opset 8) are int64 of Y's shape. */
int infer_pool(struct graph *g, struct node *n)
{
	bool max8 = n->op == OP_MAXPOOL && g->opset >= 8;
	struct window w;
	struct shape s;

	if (infer_arity(g, n, 1, 1, max8 ? 2 : 1) < 0 || pool_plan(g, n, &w, &s) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	if (n->n_out > 1)
		infer_set(g, n, 1, DTYPE_I64, &s);
	return 0;
}

/* A global pool's output shape: X's with every spatial dim 1 (rank 3 or more). */
static int gpool_shape(struct graph *g, struct node *n, const struct value *x, struct shape *s)
{
	if (x->shape.rank < 3) {
		diag_error(g->ctx, "%s: input must have rank 3 or more", node_loc(g, n));
		return -1;
	}
	*s = x->shape;
	for (int i = 2; i < s->rank; i++)
		s->d[i] = dim_const(1);
	return 0;
}

/*
 * QLinearAveragePool and QLinearGlobalAveragePool (com.microsoft): X,
 * X_scale, [X_zero_point], Y_scale, [Y_zero_point], per tensor; Y of X's
 * 8-bit type, the pool's shape (channels_last 0 only).
 */
int infer_qlinearpool(struct graph *g, struct node *n)
{
	struct value *x;
	struct window w;
	struct shape s;

	if (infer_arity(g, n, 4, 5, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    infer_qparams_one(g, n, x->dtype) < 0)
		return -1;
	if (node_attr_int(n, "channels_last", 0)) {
		diag_error(g->ctx, "%s: channels_last is not supported", node_loc(g, n));
		return -1;
	}
	if (n->op == OP_QLINEARGLOBALAVERAGEPOOL ? gpool_shape(g, n, x, &s) < 0
	    : pool_plan(g, n, &w, &s) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * Flat index in X of window position xi: row-major over the whole tensor,
 * or with storage_order 1 the spatial dims column-major (the first one
 * fastest) after (n, c) row-major.
 */
static struct tir *pool_flat_index(struct lower *L, const struct shape *x, struct tir **xi)
{
	struct tir_builder *b = L->b;
	struct tir *sp = NULL, *step = NULL;
	int r = x->rank - 2;

	if (!node_attr_int(L->n, "storage_order", 0))
		return lower_offset(L, x, xi);
	for (int i = r - 1; i >= 0; i--)
		sp = sp ? tir_add(b, tir_mul(b, sp, tir_dim(b, x->d[i + 2])), xi[i + 2]) : xi[i + 2];
	for (int i = 0; i < r; i++)
		step = step ? tir_mul(b, step, tir_dim(b, x->d[i + 2])) : tir_dim(b, x->d[i + 2]);
	return tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, xi[0], tir_dim(b, x->d[1])), xi[1]),
				  step), sp);
}

/* The identity of a max over type t: -inf, or for MaxPool-12's 8-bit integers their least value. */
static double max_identity(enum dtype t)
{
	return t == DTYPE_I8 ? -128 : t == DTYPE_U8 ? 0 : -INFINITY;
}

int lower_pool(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	bool is_max = L->n->op == OP_MAXPOOL, q = L->n->op == OP_QLINEARAVERAGEPOOL;
	bool incl = node_attr_int(L->n, "count_include_pad", 0) != 0;
	enum dtype t = q ? DTYPE_I32 : y->dtype;	/* QLinearAveragePool: exact int32 sums */
	struct window w;
	struct shape s;
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *xi[MAX_RANK], *acc, *cnt, *cond = NULL, *v;
	struct tir *div = NULL, *arg = NULL;

	if (pool_plan(L->g, (struct node *)L->n, &w, &s) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, oi);
	acc = tir_let(b, "acc", tir_const(b, t, is_max ? max_identity(t) : 0));
	cnt = tir_let(b, "cnt", tir_int(b, 0));
	if (is_max && L->n->n_out > 1)
		arg = tir_let(b, "arg", tir_int(b, 0));
	if (!is_max && incl) {
		/* divisor: window positions inside the padded input */
		for (int i = 0; i < w.r; i++) {
			struct tir *st = tir_bin(b, BIN_SUB, tir_mul(b, oi[i + 2], tir_int(b, w.s[i])),
						 tir_int(b, w.pb[i]));
			struct tir *en = tir_bin(b, BIN_MIN, tir_add(b, st, tir_int(b,
							(w.k[i] - 1) * w.d[i] + 1)),
						 tir_add(b, tir_dim(b, w.din[i]),
							 tir_int(b, w.pe[i])));
			struct tir *e = tir_bin(b, BIN_DIV, tir_add(b, tir_bin(b, BIN_SUB, en, st),
							     tir_int(b, w.d[i] - 1)), tir_int(b, w.d[i]));

			div = div ? tir_mul(b, div, e) : e;
		}
	}
	for (int i = 0; i < w.r; i++)
		ki[i] = tir_loop(b, tir_int(b, w.k[i]));
	xi[0] = oi[0];
	xi[1] = oi[1];
	for (int i = 0; i < w.r; i++)
		xi[i + 2] = lower_window_pos(L, &w, i, oi[i + 2], ki[i], &cond);
	if (cond)
		tir_if(b, cond);
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (q)
		v = tir_cast(b, DTYPE_I32, v);
	if (arg) {
		/* the first position holding the maximum wins */
		v = tir_let(b, "v", v);
		tir_if(b, tir_bin(b, BIN_LOR, tir_bin(b, BIN_EQ, cnt, tir_int(b, 0)),
				  tir_bin(b, BIN_GT, v, acc)));
		tir_assign(b, acc, v);
		tir_assign(b, arg, pool_flat_index(L, &x->shape, xi));
		tir_end(b);
	} else {
		tir_assign(b, acc, is_max ? tir_bin(b, BIN_MAX, acc, v) : tir_add(b, acc, v));
	}
	tir_assign(b, cnt, tir_add(b, cnt, tir_int(b, 1)));
	if (cond)
		tir_end(b);
	lower_end_loops(L, w.r);
	if (is_max)
		v = acc;
	else if (q)
		v = lower_qpool_out(L, acc, cnt, div ? div : cnt);
	else
		v = tir_bin(b, BIN_DIV, acc, tir_cast(b, t, div ? div : cnt));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), v);
	if (arg)
		tir_store(b, L->out[1], lower_offset(L, &y->shape, oi), arg);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- MaxUnpool ---- */

/*
 * The output shape: the constant output_shape input when there is one (it
 * must hold at least the default), else per spatial dim
 * (in - 1) * stride + kernel - pads. -1 after a diagnostic.
 */
static int unpool_shape(struct graph *g, struct node *n, struct shape *out, struct shape *def)
{
	struct value *x = infer_input(g, n, 0), *ix = infer_input(g, n, 1);
	const int64_t *ks, *st, *pd;
	int r, nk, ns, np;

	if (!x || !ix)
		return -1;
	r = x->shape.rank - 2;
	nk = node_attr_ints(n, "kernel_shape", &ks);
	ns = node_attr_ints(n, "strides", &st);
	np = node_attr_ints(n, "pads", &pd);
	if (r < 1 || nk != r || (ns >= 0 && ns != r) || (np >= 0 && np != 2 * r)) {
		diag_error(g->ctx, "%s: X must have rank 3 or more, with kernel_shape and strides "
			   "of %d values and pads of %d", node_loc(g, n), r > 0 ? r : 1,
			   2 * (r > 0 ? r : 1));
		return -1;
	}
	if (ix->dtype != DTYPE_I64 || !shape_eq(&ix->shape, &x->shape)) {
		diag_error(g->ctx, "%s: I must be int64 of X's shape", node_loc(g, n));
		return -1;
	}
	*out = x->shape;
	for (int i = 0; i < r; i++) {
		int64_t s = ns >= 0 ? st[i] : 1, o;

		if (!dim_is_const(x->shape.d[i + 2]) || s < 1 || ks[i] < 1 ||
		    (np >= 0 && (pd[i] < 0 || pd[i + r] < 0))) {
			diag_error(g->ctx, "%s: spatial dims must be constant, kernel_shape and "
				   "strides positive and pads non-negative", node_loc(g, n));
			return -1;
		}
		o = (x->shape.d[i + 2].c - 1) * s + ks[i] - (np >= 0 ? pd[i] + pd[i + r] : 0);
		if (o < 1 || o > DIM_LIMIT) {
			diag_error(g->ctx, "%s: output dim %d would be %lld", node_loc(g, n), i + 2,
				   (long long)o);
			return -1;
		}
		out->d[i + 2] = dim_const(o);
	}
	if (def)
		*def = *out;
	if (n->n_in > 2 && n->in[2] >= 0 && infer_is_data(g, n, 2)) {
		/* known only at run time: the spatial dims are data symbols */
		int64_t cnt;

		if (infer_data_count(g, n, 2, &cnt) < 0)
			return -1;
		if (cnt != x->shape.rank) {
			diag_error(g->ctx, "%s: output_shape must be [N, C, ...] of %d values",
				   node_loc(g, n), x->shape.rank);
			return -1;
		}
		for (int i = 2; i < cnt; i++)
			out->d[i] = graph_data_sym(g, n->out[0], i);
	} else if (n->n_in > 2 && n->in[2] >= 0) {
		int64_t *os, cnt;

		if (infer_const_ints(g, n, 2, &os, &cnt) < 0)
			return -1;
		if (cnt != x->shape.rank || !dim_eq(x->shape.d[0], dim_const(os[0])) ||
		    !dim_eq(x->shape.d[1], dim_const(os[1]))) {
			diag_error(g->ctx, "%s: output_shape must be [N, C, ...] of %d values",
				   node_loc(g, n), x->shape.rank);
			return -1;
		}
		for (int i = 2; i < cnt; i++) {
			if (os[i] < out->d[i].c || os[i] > DIM_LIMIT) {
				diag_error(g->ctx, "%s: output_shape[%d] = %lld is smaller than the "
					   "unpooled size %lld", node_loc(g, n), i, (long long)os[i],
					   (long long)out->d[i].c);
				return -1;
			}
			out->d[i] = dim_const(os[i]);
		}
	}
	return 0;
}

/* Y has X's type and the unpooled (or the given) shape. */
int infer_maxunpool(struct graph *g, struct node *n)
{
	struct shape s;

	if (infer_arity(g, n, 2, 3, 1) < 0 || unpool_shape(g, n, &s, NULL) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/*
 * Zeros, then each X element at its flat index I in Y, in X's order (a
 * repeated index keeps the last). I indexes the default unpooled shape;
 * under a larger output_shape each element keeps its coordinates (the
 * ONNX reference pads at the end). Indices outside Y are skipped.
 */
int lower_maxunpool(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *i, *off, *numel = lower_numel(L, &y->shape);
	struct shape def, got;

	if (unpool_shape(L->g, (struct node *)L->n, &got, &def) < 0)
		return -1;
	i = tir_loop(b, numel);
	tir_mark_parallel(b);
	tir_store(b, L->out[0], i, tir_const(b, y->dtype, 0));
	tir_end(b);
	i = tir_loop(b, lower_numel(L, &x->shape));
	off = tir_let(b, "at", tir_load(b, L->in[1], i));
	if (!shape_eq(&def, &y->shape)) {
		/* the coordinates in the default shape, bounded by Y's */
		struct tir *inside = tir_bin(b, BIN_LT, off, lower_numel(L, &def));
		struct tir *rest = off, *at = tir_int(b, 0), *stride = tir_int(b, 1);

		inside = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, off, tir_int(b, 0)), inside);
		for (int k = def.rank - 1; k >= 0; k--) {
			struct tir *c = tir_let(b, "c", tir_bin(b, BIN_MOD, rest,
								tir_dim(b, def.d[k])));

			rest = tir_bin(b, BIN_DIV, rest, tir_dim(b, def.d[k]));
			inside = tir_bin(b, BIN_LAND, inside, tir_bin(b, BIN_LT, c,
								      tir_dim(b, y->shape.d[k])));
			at = tir_add(b, at, tir_mul(b, c, stride));
			stride = tir_mul(b, stride, tir_dim(b, y->shape.d[k]));
		}
		tir_if(b, inside);
		tir_store(b, L->out[0], at, tir_load(b, L->in[0], i));
		tir_end(b);
		tir_end(b);
		return 0;
	}
	tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, off, tir_int(b, 0)),
			  tir_bin(b, BIN_LT, off, numel)));
	tir_store(b, L->out[0], off, tir_load(b, L->in[0], i));
	tir_end(b);
	tir_end(b);
	return 0;
}

/* ---- GlobalAveragePool / GlobalMaxPool ---- */

int infer_gpool(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    gpool_shape(g, n, x, &s) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

int lower_gpool(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	bool is_max = L->n->op == OP_GLOBALMAXPOOL, q = L->n->op == OP_QLINEARGLOBALAVERAGEPOOL;
	enum dtype t = q ? DTYPE_I32 : x->dtype;
	struct tir *nc, *sp = tir_int(b, 1), *i, *acc, *v;

	for (int k = 2; k < x->shape.rank; k++)
		sp = tir_mul(b, sp, tir_dim(b, x->shape.d[k]));
	nc = tir_loop(b, tir_mul(b, tir_dim(b, x->shape.d[0]), tir_dim(b, x->shape.d[1])));
	tir_mark_parallel(b);
	acc = tir_let(b, "acc", tir_const(b, t, is_max ? max_identity(t) : 0));
	i = tir_loop(b, sp);
	v = tir_load(b, L->in[0], tir_add(b, tir_mul(b, nc, sp), i));
	if (q)
		v = tir_cast(b, DTYPE_I32, v);
	tir_assign(b, acc, is_max ? tir_bin(b, BIN_MAX, acc, v) : tir_add(b, acc, v));
	tir_end(b);
	tir_store(b, L->out[0], nc, is_max ? acc : q ? lower_qpool_out(L, acc, sp, sp)
		  : tir_bin(b, BIN_DIV, acc, tir_cast(b, t, sp)));
	tir_end(b);
	return 0;
}

/* ---- MatMul ---- */

int infer_matmul(struct graph *g, struct node *n)
{
	struct value *a, *bb;
	struct shape sa, sb, ba, bbt, batch, s;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(a = infer_input(g, n, 0)) ||
	    !(bb = infer_input(g, n, 1)))
		return -1;
	sa = a->shape;
	sb = bb->shape;
	if (sa.rank == 0 || sb.rank == 0) {
		diag_error(g->ctx, "%s: MatMul inputs must have rank 1 or more", node_loc(g, n));
		return -1;
	}
	if (sa.rank == 1) {
		sa.rank = 2;
		sa.d[1] = sa.d[0];
		sa.d[0] = dim_const(1);
	}
	if (sb.rank == 1) {
		sb.rank = 2;
		sb.d[1] = dim_const(1);
	}
	if (!dim_eq(sa.d[sa.rank - 1], sb.d[sb.rank - 2])) {
		struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

		shape_print(g, &a->shape, &x);
		shape_print(g, &bb->shape, &y);
		diag_error(g->ctx, "%s: inner dimensions of %s and %s differ", node_loc(g, n),
			   sb_str(&x), sb_str(&y));
		sb_release(&x);
		sb_release(&y);
		return -1;
	}
	ba = sa;
	ba.rank -= 2;
	bbt = sb;
	bbt.rank -= 2;
	if (!shape_broadcast(&ba, &bbt, &batch)) {
		diag_error(g->ctx, "%s: batch dimensions cannot be broadcast", node_loc(g, n));
		return -1;
	}
	s = batch;
	if (a->shape.rank > 1)
		s.d[s.rank++] = sa.d[sa.rank - 2];
	if (bb->shape.rank > 1)
		s.d[s.rank++] = sb.d[sb.rank - 1];
	infer_set(g, n, 0, a->dtype, &s);
	return 0;
}

void matmul_geometry(const struct value *a, const struct value *b, struct matmul_geom *mg)
{
	mg->a = a->shape;
	mg->b = b->shape;
	if (mg->a.rank == 1) {
		mg->a.rank = 2;
		mg->a.d[1] = mg->a.d[0];
		mg->a.d[0] = dim_const(1);
	}
	if (mg->b.rank == 1) {
		mg->b.rank = 2;
		mg->b.d[1] = dim_const(1);
	}
	mg->batch_a = mg->a;
	mg->batch_a.rank -= 2;
	mg->batch_b = mg->b;
	mg->batch_b.rank -= 2;
	if (!shape_broadcast(&mg->batch_a, &mg->batch_b, &mg->batch))
		BUG("matmul batch shapes changed after inference");
	mg->M = mg->a.d[mg->a.rank - 2];
	mg->K = mg->a.d[mg->a.rank - 1];
	mg->N = mg->b.d[mg->b.rank - 1];
	/* full output shape [batch..., M, N] even when inputs were vectors */
	mg->y = mg->batch;
	mg->y.d[mg->y.rank++] = mg->M;
	mg->y.d[mg->y.rank++] = mg->N;
}

void matmul_bases(struct lower *L, const struct matmul_geom *mg, struct tir **bidx,
		  struct tir **base_a, struct tir **base_b)
{
	struct tir_builder *b = L->b;

	*base_a = tir_mul(b, lower_bcast_offset(L, &mg->batch_a, &mg->batch, bidx),
			  tir_mul(b, tir_dim(b, mg->M), tir_dim(b, mg->K)));
	*base_b = tir_mul(b, lower_bcast_offset(L, &mg->batch_b, &mg->batch, bidx),
			  tir_mul(b, tir_dim(b, mg->K), tir_dim(b, mg->N)));
}

/* The generic MatMul: one dot product per output element. */
int lower_matmul(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct tir *idx[MAX_RANK], *k, *acc, *oa, *ob;
	int r;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	r = mg.batch.rank;
	lower_loops_parallel(L, &mg.y, idx);
	acc = tir_let(b, "acc", tir_const(b, lower_in(L, 0)->dtype, 0));
	k = tir_loop(b, tir_dim(b, mg.K));
	matmul_bases(L, &mg, idx, &oa, &ob);
	oa = tir_add(b, oa, tir_add(b, tir_mul(b, idx[r], tir_dim(b, mg.K)), k));
	ob = tir_add(b, ob, tir_add(b, tir_mul(b, k, tir_dim(b, mg.N)), idx[r + 1]));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_load(b, L->in[0], oa),
						   tir_load(b, L->in[1], ob))));
	tir_end(b);
	tir_store(b, L->out[0], lower_offset(L, &mg.y, idx), acc);
	lower_end_loops(L, mg.y.rank);
	return 0;
}

/* ---- Gemm ---- */

int infer_gemm(struct graph *g, struct node *n)
{
	struct value *a, *bb, *c;
	bool ta = node_attr_int(n, "transA", 0), tb = node_attr_int(n, "transB", 0);
	struct shape s = { 2, { { 0, 0, { 0 } } } }, tmp;

	if (infer_arity(g, n, 2, 3, 1) < 0 || !(a = infer_input(g, n, 0)) ||
	    !(bb = infer_input(g, n, 1)))
		return -1;
	if (a->shape.rank != 2 || bb->shape.rank != 2) {
		diag_error(g->ctx, "%s: Gemm inputs must be matrices", node_loc(g, n));
		return -1;
	}
	if (!dim_eq(a->shape.d[ta ? 0 : 1], bb->shape.d[tb ? 1 : 0])) {
		diag_error(g->ctx, "%s: inner dimensions differ", node_loc(g, n));
		return -1;
	}
	s.d[0] = a->shape.d[ta ? 1 : 0];
	s.d[1] = bb->shape.d[tb ? 0 : 1];
	c = node_in(g, n, 2);
	if (c && (!c->has_shape || !shape_broadcast(&c->shape, &s, &tmp) || !shape_eq(&tmp, &s))) {
		diag_error(g->ctx, "%s: C cannot be broadcast to the output", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, a->dtype, &s);
	return 0;
}

int lower_gemm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *a = lower_in(L, 0), *bv = lower_in(L, 1), *y = lower_out(L, 0);
	const struct value *c = lower_in(L, 2);
	bool ta = node_attr_int(L->n, "transA", 0), tb = node_attr_int(L->n, "transB", 0);
	double alpha = node_attr_float(L->n, "alpha", 1.0), beta = node_attr_float(L->n, "beta", 1.0);
	enum dtype t = y->dtype;
	struct tir *idx[2], *k, *acc, *av, *bvv, *r;
	struct tir *K = tir_dim(b, a->shape.d[ta ? 0 : 1]);

	lower_loops_parallel(L, &y->shape, idx);
	acc = tir_let(b, "acc", tir_const(b, t, 0));
	k = tir_loop(b, K);
	av = tir_load(b, L->in[0], ta ? tir_add(b, tir_mul(b, k, tir_dim(b, a->shape.d[1])), idx[0])
		      : tir_add(b, tir_mul(b, idx[0], K), k));
	bvv = tir_load(b, L->in[1], tb ? tir_add(b, tir_mul(b, idx[1], K), k)
		       : tir_add(b, tir_mul(b, k, tir_dim(b, bv->shape.d[1])), idx[1]));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, av, bvv)));
	tir_end(b);
	r = alpha == 1.0 ? acc : tir_mul(b, tir_const(b, t, alpha), acc);
	if (c) {
		struct tir *cv = tir_load(b, L->in[2], lower_bcast_offset(L, &c->shape, &y->shape, idx));

		r = tir_add(b, r, beta == 1.0 ? cv : tir_mul(b, tir_const(b, t, beta), cv));
	}
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), r);
	lower_end_loops(L, 2);
	return 0;
}

/* ---- BatchNormalization ---- */

/* Opset 14's training_mode: normalise by the batch's own statistics. */
static bool batchnorm_training(struct graph *g, const struct node *n)
{
	return g->opset >= 14 && node_attr_int(n, "training_mode", 0) != 0;
}

/*
 * Y has X's shape; in training mode the optional running_mean and
 * running_var have the shape and type of the input mean and var. The
 * extra outputs of the opsets before 14 (saved mean and variance) are
 * refused.
 */
int infer_batchnorm(struct graph *g, struct node *n)
{
	bool train = batchnorm_training(g, n);
	struct value *x;

	if (infer_arity(g, n, 5, 5, train ? 3 : -1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (n->n_out > 1 && !train) {
		diag_error(g->ctx, "%s: %s", node_loc(g, n), g->opset >= 14 ?
			   "running_mean and running_var are outputs of training mode only" :
			   "training-mode BatchNormalization before opset 14 is not supported");
		return -1;
	}
	for (int i = 1; i < 5; i++) {
		struct value *p = infer_input(g, n, i);

		if (!p)
			return -1;
		if (p->shape.rank != 1 || x->shape.rank < 2 || !dim_eq(p->shape.d[0], x->shape.d[1])) {
			diag_error(g->ctx, "%s: input %d must be a vector of the channel count",
				   node_loc(g, n), i);
			return -1;
		}
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	for (int i = 1; i < n->n_out; i++)
		infer_set(g, n, i, node_in(g, n, i + 2)->dtype, &node_in(g, n, i + 2)->shape);
	return 0;
}

/* Y = (X - mean) * scale / sqrt(var + epsilon) + B with the given statistics. */
int lower_batchnorm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	enum dtype t = x->dtype;
	struct tir *idx[MAX_RANK], *c, *v, *inv;
	double eps = node_attr_float(L->n, "epsilon", 1e-5);

	if (batchnorm_training(L->g, L->n))
		return lower_batchnorm_training(L);
	lower_loops(L, &x->shape, idx);
	c = idx[1];
	inv = tir_bin(b, BIN_DIV, tir_load(b, L->in[1], c),
		      tir_call1(b, INTRIN_SQRT, tir_add(b, tir_load(b, L->in[4], c),
							 tir_const(b, t, eps))));
	v = tir_mul(b, tir_bin(b, BIN_SUB, tir_load(b, L->in[0], lower_offset(L, &x->shape, idx)),
			       tir_load(b, L->in[3], c)), inv);
	tir_store(b, L->out[0], lower_offset(L, &x->shape, idx), tir_add(b, v, tir_load(b,
							L->in[2], c)));
	lower_end_loops(L, x->shape.rank);
	return 0;
}
