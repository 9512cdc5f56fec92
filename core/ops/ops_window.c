/*
 * ops_window.c - the sliding-window ops beside ops_nn.c's Conv and
 * pooling: ConvTranspose and Lp pooling (LpPool, GlobalLpPool): direct loop
 * nests, written to be obviously right rather than fast.
 */
#include "ops.h"

#include <string.h>

/* ---- ConvTranspose and LpPool: window geometry ---- */

/* Fills dst[0..r) from ints attribute name, or def when absent; -1 on a wrong count. */
static int ints_or(struct graph *g, struct node *n, const char *name, int r, int64_t *dst,
		   int64_t def)
{
	const int64_t *v;
	int c = node_attr_ints(n, name, &v);

	if (c >= 0 && c != r) {
		diag_error(g->ctx, "%s: %s has %d values, expected %d", node_loc(g, n), name, c, r);
		return -1;
	}
	for (int i = 0; i < r; i++)
		dst[i] = c == r ? v[i] : def;
	return 0;
}

/* Spatial rank, extents and the strides/dilations common to both ops. */
static int win_init(struct graph *g, struct node *n, const struct shape *x, struct window *w)
{
	const char *ap = node_attr_str(n, "auto_pad", "NOTSET");

	w->r = x->rank - 2;
	if (w->r < 1) {
		diag_error(g->ctx, "%s: input must have rank 3 or more", node_loc(g, n));
		return -1;
	}
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && strcmp(ap, "SAME_UPPER") &&
	    strcmp(ap, "SAME_LOWER")) {
		diag_error(g->ctx, "%s: unknown auto_pad '%s'", node_loc(g, n), ap);
		return -1;
	}
	for (int i = 0; i < w->r; i++) {
		if (!dim_is_const(x->d[i + 2])) {
			diag_error(g->ctx, "%s: spatial dimension %d is symbolic (only the batch "
				   "and channel dims may be)", node_loc(g, n), i + 2);
			return -1;
		}
		w->in[i] = x->d[i + 2].c;
	}
	if (ints_or(g, n, "strides", w->r, w->s, 1) < 0 ||
	    ints_or(g, n, "dilations", w->r, w->d, 1) < 0)
		return -1;
	for (int i = 0; i < w->r; i++)
		if (w->s[i] <= 0 || w->d[i] <= 0 || w->k[i] <= 0) {
			diag_error(g->ctx, "%s: kernel, strides and dilations must be positive",
				   node_loc(g, n));
			return -1;
		}
	return 0;
}

/* Reads pads (2 * r values, or none) into pb/pe. */
static int win_pads(struct graph *g, struct node *n, const struct window *w, int64_t *pb,
		    int64_t *pe)
{
	const int64_t *v;
	int c = node_attr_ints(n, "pads", &v);

	if (c >= 0 && c != 2 * w->r) {
		diag_error(g->ctx, "%s: pads has %d values, expected %d", node_loc(g, n), c,
			   2 * w->r);
		return -1;
	}
	for (int i = 0; i < w->r; i++) {
		pb[i] = c > 0 ? v[i] : 0;
		pe[i] = c > 0 ? v[i + w->r] : 0;
		if (pb[i] < 0 || pe[i] < 0) {
			diag_error(g->ctx, "%s: pads must not be negative", node_loc(g, n));
			return -1;
		}
	}
	return 0;
}

/* ---- ConvTranspose ---- */

/*
 * Geometry of ConvTranspose: the full output along axis i has
 * s * (in - 1) + output_padding + (k - 1) * d + 1 elements, of which the
 * output keeps [pb, pb + out). Weight is [C, M / group, k...].
 */
static int tconv_plan(struct graph *g, struct node *n, struct window *w, struct shape *out)
{
	struct value *x = infer_float_input(g, n, 0), *wt = infer_input(g, n, 1);
	const char *ap = node_attr_str(n, "auto_pad", "NOTSET");
	bool same = !strncmp(ap, "SAME_", 5), upper = !strcmp(ap, "SAME_UPPER");
	int64_t group = node_attr_int(n, "group", 1), op[MAX_RANK], pb[MAX_RANK], pe[MAX_RANK];
	const int64_t *os, *ks;
	int nos, nks;

	if (!x || !wt)
		return -1;
	if (wt->dtype != x->dtype || wt->shape.rank != x->shape.rank ||
	    !shape_is_static(&wt->shape)) {
		diag_error(g->ctx, "%s: weight must be a static %s tensor of the input's rank",
			   node_loc(g, n), dtype_name(x->dtype));
		return -1;
	}
	for (int i = 2; i < wt->shape.rank; i++)
		w->k[i - 2] = wt->shape.d[i].c;
	if (win_init(g, n, &x->shape, w) < 0 || win_pads(g, n, w, pb, pe) < 0 ||
	    ints_or(g, n, "output_padding", w->r, op, 0) < 0)
		return -1;
	nks = node_attr_ints(n, "kernel_shape", &ks);
	for (int i = 0; i < nks; i++)
		if (nks != w->r || ks[i] != w->k[i]) {
			diag_error(g->ctx, "%s: kernel_shape does not match the weight",
				   node_loc(g, n));
			return -1;
		}
	if (group <= 0 || !dim_is_const(x->shape.d[1]) || x->shape.d[1].c != wt->shape.d[0].c ||
	    wt->shape.d[0].c % group) {
		diag_error(g->ctx, "%s: input channels, weight shape and group %lld disagree",
			   node_loc(g, n), (long long)group);
		return -1;
	}
	/* output_shape may name the spatial dims only or the whole output */
	nos = node_attr_ints(n, "output_shape", &os);
	if (nos == w->r + 2)
		os += 2;
	else if (nos >= 0 && nos != w->r) {
		diag_error(g->ctx, "%s: output_shape has %d values, expected %d", node_loc(g, n),
			   nos, w->r);
		return -1;
	}
	for (int i = 0; i < w->r; i++) {
		int64_t full = w->s[i] * (w->in[i] - 1) + op[i] + (w->k[i] - 1) * w->d[i] + 1;
		int64_t tot;

		if (op[i] < 0 || (op[i] >= w->s[i] && op[i] >= w->d[i])) {
			diag_error(g->ctx, "%s: output_padding must be smaller than the stride or "
				   "the dilation", node_loc(g, n));
			return -1;
		}
		if (nos >= 0 || same) {
			/*
			 * The ONNX formula; a negative total (an output larger than
			 * the full one) pads nothing and leaves the tail to bias.
			 */
			w->out[i] = nos >= 0 ? os[i] : w->in[i] * w->s[i];
			tot = MAX(full - w->out[i], 0);
			w->pb[i] = upper ? tot / 2 : tot - tot / 2;
		} else if (!strcmp(ap, "VALID")) {
			w->pb[i] = 0;
			w->out[i] = full;
		} else {
			w->pb[i] = pb[i];
			w->out[i] = full - pb[i] - pe[i];
		}
		if (w->out[i] <= 0) {
			diag_error(g->ctx, "%s: output dimension %d would be %lld", node_loc(g, n),
				   i + 2, (long long)w->out[i]);
			return -1;
		}
	}
	out->rank = x->shape.rank;
	out->d[0] = x->shape.d[0];
	out->d[1] = dim_const(wt->shape.d[1].c * group);
	for (int i = 0; i < w->r; i++)
		out->d[i + 2] = dim_const(w->out[i]);
	if (node_in(g, n, 2) && infer_check_vec(g, n, 2, x->dtype, out->d[1]) < 0)
		return -1;
	return 0;
}

/* Y is [N, M, spatial...] from tconv_plan(). */
int infer_tconv(struct graph *g, struct node *n)
{
	struct window w;
	struct shape s;

	if (infer_arity(g, n, 2, 3, 1) < 0 || tconv_plan(g, n, &w, &s) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/*
 * Gather form: y[n, m, o] = B[m] + sum over the group's input channels c
 * and kernel taps k of x[n, c, (o + pb - k * d) / s] * w[c, m % (M / group), k],
 * for the taps where that division is exact and lands inside the input.
 */
int lower_tconv(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1), *y = lower_out(L, 0);
	int64_t group = node_attr_int(L->n, "group", 1);
	int64_t cin_g = wt->shape.d[0].c / group, cout_g = wt->shape.d[1].c;
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *xi[MAX_RANK], *wi[MAX_RANK], *tp[MAX_RANK];
	struct tir *acc, *ic, *cond = NULL;
	struct window w;
	struct shape s;

	if (tconv_plan(L->g, (struct node *)L->n, &w, &s) < 0)
		return -1;
	lower_out_loops(L, &y->shape, oi);
	acc = tir_let(b, "acc", L->in[2] ? tir_load(b, L->in[2], oi[1])
		      : tir_const(b, y->dtype, 0));
	ic = tir_loop(b, tir_int(b, cin_g));
	xi[0] = oi[0];
	xi[1] = tir_add(b, tir_mul(b, tir_bin(b, BIN_DIV, oi[1], tir_int(b, cout_g)),
				   tir_int(b, cin_g)), ic);
	wi[0] = xi[1];
	wi[1] = tir_bin(b, BIN_MOD, oi[1], tir_int(b, cout_g));
	for (int i = 0; i < w.r; i++)
		ki[i] = wi[i + 2] = tir_loop(b, tir_int(b, w.k[i]));
	for (int i = 0; i < w.r; i++) {
		struct tir *t = tir_bin(b, BIN_SUB, tir_add(b, oi[i + 2], tir_int(b, w.pb[i])),
					tir_mul(b, ki[i], tir_int(b, w.d[i])));

		tp[i] = tir_let(b, "t", t);
		cond = lower_inside(b, cond, tp[i], w.s[i] * (w.in[i] - 1) + 1);
		if (w.s[i] > 1) {
			struct tir *r = tir_bin(b, BIN_MOD, tp[i], tir_int(b, w.s[i]));

			cond = tir_bin(b, BIN_LAND, cond, tir_bin(b, BIN_EQ, r, tir_int(b, 0)));
		}
		xi[i + 2] = tir_bin(b, BIN_DIV, tp[i], tir_int(b, w.s[i]));
	}
	tir_if(b, cond);
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_load(b, L->in[0],
				lower_offset(L, &x->shape, xi)),
				tir_load(b, L->in[1], lower_offset(L, &wt->shape, wi)))));
	tir_end(b);
	lower_end_loops(L, w.r + 1);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- LpPool / GlobalLpPool ---- */

/* The p attribute (default 2), which must be positive. */
static int lp_order(struct graph *g, struct node *n)
{
	int64_t p = node_attr_int(n, "p", 2);

	if (p <= 0 || p > INT32_MAX) {
		diag_error(g->ctx, "%s: p must be a positive integer, not %lld", node_loc(g, n),
			   (long long)p);
		return -1;
	}
	return (int)p;
}

/* |v|^p for the accumulation. */
static struct tir *lp_term(struct tir_builder *b, struct tir *v, int p)
{
	if (p == 1)
		return tir_call1(b, INTRIN_FABS, v);
	if (p == 2)
		return tir_mul(b, v, v);
	return tir_call2(b, INTRIN_POW, tir_call1(b, INTRIN_FABS, v), tir_const(b, v->dtype, p));
}

/* acc^(1/p) for the result. */
static struct tir *lp_root(struct tir_builder *b, struct tir *acc, int p)
{
	if (p == 1)
		return acc;
	if (p == 2)
		return tir_call1(b, INTRIN_SQRT, acc);
	return tir_call2(b, INTRIN_POW, acc, tir_const(b, acc->dtype, 1.0 / p));
}

/* The pooling window: MaxPool's rules (auto_pad, ceil_mode, dilations). */
static int lppool_plan(struct graph *g, struct node *n, struct window *w, struct shape *out)
{
	struct value *x = infer_float_input(g, n, 0);
	const int64_t *ks;
	int c = node_attr_ints(n, "kernel_shape", &ks);

	if (!x || lp_order(g, n) < 0)
		return -1;
	if (c != x->shape.rank - 2 || c < 1) {
		diag_error(g->ctx, "%s: kernel_shape must have %d values", node_loc(g, n),
			   MAX(x->shape.rank - 2, 1));
		return -1;
	}
	if (window_plan(g, n, &x->shape, ks, node_attr_int(n, "ceil_mode", 0) != 0, w) < 0)
		return -1;
	*out = x->shape;
	for (int i = 0; i < w->r; i++)
		out->d[i + 2] = dim_const(w->out[i]);
	return 0;
}

/* Y is [N, C, windows...] from lppool_plan(). */
int infer_lppool(struct graph *g, struct node *n)
{
	struct window w;
	struct shape s;

	if (infer_arity(g, n, 1, 1, 1) < 0 || lppool_plan(g, n, &w, &s) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/* y = (sum over the window of |x|^p)^(1/p); padding contributes zeros. */
int lower_lppool(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	int p = (int)node_attr_int(L->n, "p", 2);
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *xi[MAX_RANK], *acc, *cond = NULL;
	struct window w;
	struct shape s;

	if (lppool_plan(L->g, (struct node *)L->n, &w, &s) < 0)
		return -1;
	lower_out_loops(L, &y->shape, oi);
	acc = tir_let(b, "acc", tir_const(b, y->dtype, 0));
	for (int i = 0; i < w.r; i++)
		ki[i] = tir_loop(b, tir_int(b, w.k[i]));
	xi[0] = oi[0];
	xi[1] = oi[1];
	for (int i = 0; i < w.r; i++) {
		struct tir *pos = tir_add(b, tir_mul(b, oi[i + 2], tir_int(b, w.s[i])),
					  tir_mul(b, ki[i], tir_int(b, w.d[i])));

		xi[i + 2] = tir_let(b, "p", tir_bin(b, BIN_SUB, pos, tir_int(b, w.pb[i])));
		cond = lower_inside(b, cond, xi[i + 2], w.in[i]);
	}
	tir_if(b, cond);
	tir_assign(b, acc, tir_add(b, acc, lp_term(b, tir_load(b, L->in[0],
						lower_offset(L, &x->shape, xi)), p)));
	tir_end(b);
	lower_end_loops(L, w.r);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), lp_root(b, acc, p));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* Y is [N, C, 1, ...]. */
int infer_glpool(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_float_input(g, n, 0)) || lp_order(g, n) < 0)
		return -1;
	if (x->shape.rank < 3) {
		diag_error(g->ctx, "%s: input must have rank 3 or more", node_loc(g, n));
		return -1;
	}
	s = x->shape;
	for (int i = 2; i < s.rank; i++)
		s.d[i] = dim_const(1);
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/* y[n, c] = (sum over the spatial dims of |x|^p)^(1/p). */
int lower_glpool(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	int p = (int)node_attr_int(L->n, "p", 2);
	struct tir *nc, *sp = tir_int(b, 1), *i, *acc;

	for (int k = 2; k < x->shape.rank; k++)
		sp = tir_mul(b, sp, tir_dim(b, x->shape.d[k]));
	nc = tir_loop(b, tir_mul(b, tir_dim(b, x->shape.d[0]), tir_dim(b, x->shape.d[1])));
	tir_mark_parallel(b);
	acc = tir_let(b, "acc", tir_const(b, x->dtype, 0));
	i = tir_loop(b, sp);
	tir_assign(b, acc, tir_add(b, acc, lp_term(b, tir_load(b, L->in[0],
						tir_add(b, tir_mul(b, nc, sp), i)), p)));
	tir_end(b);
	tir_store(b, L->out[0], nc, lp_root(b, acc, p));
	tir_end(b);
	return 0;
}
