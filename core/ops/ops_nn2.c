/*
 * ops_nn2.c - normalisations (LayerNormalization, InstanceNormalization,
 * GroupNormalization, RMSNormalization, MeanVarianceNormalization,
 * LpNormalization, LRN), ConvTranspose, Lp
 * pooling, the NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss pair,
 * Einsum and Det: direct loop nests, written to be obviously right rather
 * than fast.
 *
 * The normalisations share one shape: loops over the kept axes outside,
 * then passes over the normalised axes inside (sum, squared deviation,
 * output), with the statistics in scalar locals.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- shared helpers ---- */

/* Input i, which must be a float32 or float64 tensor. */
static struct value *float_input(struct graph *g, struct node *n, int i)
{
	struct value *v = infer_input(g, n, i);

	if (v && !dtype_is_float(v->dtype)) {
		diag_error(g->ctx, "%s: input %d '%s' has type %s (expected a float type)",
			   node_loc(g, n), i, v->name, dtype_name(v->dtype));
		return NULL;
	}
	return v;
}

/* Optional input i must have dtype t and broadcast unidirectionally to s. */
static int check_param(struct graph *g, struct node *n, int i, enum dtype t,
		       const struct shape *s)
{
	struct value *v = node_in(g, n, i);
	struct shape r;

	if (!v)
		return 0;
	if (!(v = infer_input(g, n, i)))
		return -1;
	if (v->dtype != t) {
		diag_error(g->ctx, "%s: input %d '%s' has type %s, expected %s", node_loc(g, n),
			   i, v->name, dtype_name(v->dtype), dtype_name(t));
		return -1;
	}
	if (!shape_broadcast(s, &v->shape, &r) || !shape_eq(&r, s)) {
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;

		shape_print(g, &v->shape, &a);
		shape_print(g, s, &b);
		diag_error(g->ctx, "%s: input %d '%s' of shape %s does not broadcast to %s",
			   node_loc(g, n), i, v->name, sb_str(&a), sb_str(&b));
		sb_release(&a);
		sb_release(&b);
		return -1;
	}
	return 0;
}

/* Input i must be a vector of dtype t and length d (the channel count). */
static int check_vec(struct graph *g, struct node *n, int i, enum dtype t, struct dim d)
{
	struct value *v = infer_input(g, n, i);

	if (!v)
		return -1;
	if (v->dtype != t || v->shape.rank != 1 || !dim_eq(v->shape.d[0], d)) {
		diag_error(g->ctx, "%s: input %d '%s' must be a %s vector of the channel count",
			   node_loc(g, n), i, v->name, dtype_name(t));
		return -1;
	}
	return 0;
}

/*
 * Opens one loop per axis k of s with red[k] == want, in axis order, and
 * puts its variable in idx[k]; marks them parallel when par. Returns the
 * number of loops opened.
 */
static int open_axes(struct lower *L, const struct shape *s, const bool *red, bool want,
		     bool par, struct tir **idx)
{
	int cnt = 0;

	for (int k = 0; k < s->rank; k++) {
		if (red[k] != want)
			continue;
		idx[k] = tir_loop(L->b, tir_dim(L->b, s->d[k]));
		if (par)
			tir_mark_parallel(L->b);
		cnt++;
	}
	return cnt;
}

/* lower_loops() over the output, every loop parallel. */
static void out_loops(struct lower *L, const struct shape *s, struct tir **idx)
{
	for (int k = 0; k < s->rank; k++) {
		idx[k] = tir_loop(L->b, tir_dim(L->b, s->d[k]));
		tir_mark_parallel(L->b);
	}
}

/* Element count of the axes k of s with red[k], as a value of type t. */
static struct tir *red_count(struct lower *L, const struct shape *s, const bool *red,
			     enum dtype t)
{
	struct tir *c = tir_int(L->b, 1);

	for (int k = 0; k < s->rank; k++)
		if (red[k])
			c = tir_mul(L->b, c, tir_dim(L->b, s->d[k]));
	return tir_cast(L->b, t, c);
}

/* Offset of idx's kept axes in s with the axes red[] collapsed to 1. */
static struct tir *kept_offset(struct lower *L, const struct shape *s, const bool *red,
			       struct tir **idx)
{
	struct shape ks = *s;
	struct tir *ki[MAX_RANK];

	for (int k = 0; k < s->rank; k++) {
		ki[k] = red[k] ? tir_int(L->b, 0) : idx[k];
		if (red[k])
			ks.d[k] = dim_const(1);
	}
	return lower_offset(L, &ks, ki);
}

/*
 * Inside the loops over the kept axes (idx[] holds them): the mean and the
 * biased variance of input 0 over the axes red[], computed in type ct.
 */
static void lower_moments(struct lower *L, const bool *red, enum dtype ct, struct tir **idx,
			  struct tir **mean, struct tir **var)
{
	struct tir_builder *b = L->b;
	const struct shape *s = &lower_in(L, 0)->shape;
	struct tir *cnt = red_count(L, s, red, ct), *acc, *d;
	int nl;

	acc = tir_let(b, "sum", tir_const(b, ct, 0));
	nl = open_axes(L, s, red, true, false, idx);
	tir_assign(b, acc, tir_add(b, acc, tir_cast(b, ct, tir_load(b, L->in[0],
							lower_offset(L, s, idx)))));
	lower_end_loops(L, nl);
	*mean = tir_let(b, "mean", tir_bin(b, BIN_DIV, acc, cnt));
	acc = tir_let(b, "ssd", tir_const(b, ct, 0));
	nl = open_axes(L, s, red, true, false, idx);
	d = tir_let(b, "d", tir_bin(b, BIN_SUB, tir_cast(b, ct, tir_load(b, L->in[0],
							lower_offset(L, s, idx))), *mean));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, d, d)));
	lower_end_loops(L, nl);
	*var = tir_let(b, "var", tir_bin(b, BIN_DIV, acc, cnt));
}

/*
 * BatchNormalization in training mode (opset 14 on): per channel, the
 * batch's mean and biased variance over N and the spatial axes (in double)
 * normalise X, and the running statistics move toward them:
 * running = input * momentum + batch * (1 - momentum).
 */
int lower_batchnorm_training(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	const struct shape *s = &x->shape;
	double eps = node_attr_float(L->n, "epsilon", 1e-5);
	double mom = node_attr_float(L->n, "momentum", 0.9);
	enum dtype ct = DTYPE_F64;
	bool red[MAX_RANK];
	struct tir *idx[MAX_RANK], *mean, *var, *inv, *sc, *bi, *v;
	int nl;

	for (int k = 0; k < s->rank; k++)
		red[k] = k != 1;
	open_axes(L, s, red, false, true, idx);
	lower_moments(L, red, ct, idx, &mean, &var);
	for (int i = 1; i < L->n->n_out; i++) {
		struct tir *run = tir_cast(b, ct, tir_load(b, L->in[i + 2], idx[1]));
		struct tir *batch = i == 1 ? mean : var;

		v = tir_add(b, tir_mul(b, run, tir_const(b, ct, mom)),
			    tir_mul(b, batch, tir_const(b, ct, 1 - mom)));
		tir_store(b, L->out[i], idx[1], tir_cast(b, lower_out(L, i)->dtype, v));
	}
	inv = tir_let(b, "inv", tir_bin(b, BIN_DIV, tir_const(b, ct, 1), tir_call1(b,
				INTRIN_SQRT, tir_add(b, var, tir_const(b, ct, eps)))));
	sc = tir_let(b, "sc", tir_mul(b, inv, tir_cast(b, ct, tir_load(b, L->in[1], idx[1]))));
	bi = tir_let(b, "bi", tir_cast(b, ct, tir_load(b, L->in[2], idx[1])));
	nl = open_axes(L, s, red, true, false, idx);
	v = tir_bin(b, BIN_SUB, tir_cast(b, ct, tir_load(b, L->in[0], lower_offset(L, s, idx))),
		    mean);
	tir_store(b, L->out[0], lower_offset(L, s, idx),
		  tir_cast(b, x->dtype, tir_add(b, tir_mul(b, v, sc), bi)));
	lower_end_loops(L, nl);
	lower_end_loops(L, 1);
	return 0;
}

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

/* ---- LayerNormalization ---- */

/* Stage-one precision: the stash_type attribute (ONNX TensorProto type). */
static enum dtype lnorm_stash(const struct node *n)
{
	return dtype_from_onnx((int)node_attr_int(n, "stash_type", 1));
}

/* Y like X; Mean and InvStdDev keep X's leading dims, 1 from axis on, in the stash type. */
int infer_lnorm(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape ms;
	enum dtype st = lnorm_stash(n);
	int axis;

	if (infer_arity(g, n, 2, 3, 3) < 0 || !(x = float_input(g, n, 0)) ||
	    !infer_input(g, n, 1))
		return -1;
	if (x->shape.rank < 1) {
		diag_error(g->ctx, "%s: input must have rank 1 or more", node_loc(g, n));
		return -1;
	}
	axis = infer_axis(g, n, node_attr_int(n, "axis", -1), x->shape.rank);
	if (axis < 0 || check_param(g, n, 1, x->dtype, &x->shape) < 0 ||
	    check_param(g, n, 2, x->dtype, &x->shape) < 0)
		return -1;
	if (!dtype_is_float(st)) {
		diag_error(g->ctx, "%s: stash_type %lld is not supported (expected a float type)",
			   node_loc(g, n), (long long)node_attr_int(n, "stash_type", 1));
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	ms = x->shape;
	for (int k = axis; k < ms.rank; k++)
		ms.d[k] = dim_const(1);
	for (int i = 1; i < n->n_out; i++)
		infer_set(g, n, i, st, &ms);
	return 0;
}

/*
 * Y = (X - Mean) * InvStdDev * Scale + B over the axes from 'axis' on; the
 * statistics in the stash type, the scaling in X's type.
 */
int lower_lnorm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *sc = lower_in(L, 1), *bi = lower_in(L, 2);
	const struct shape *s = &x->shape;
	enum dtype t = x->dtype, ct = lnorm_stash(L->n);
	double eps = node_attr_float(L->n, "epsilon", 1e-5);
	int axis = (int)node_attr_int(L->n, "axis", -1), nk, nl;
	bool red[MAX_RANK];
	struct tir *idx[MAX_RANK], *mean, *var, *inv, *off, *v;

	if (axis < 0)
		axis += s->rank;
	for (int k = 0; k < s->rank; k++)
		red[k] = k >= axis;
	nk = open_axes(L, s, red, false, true, idx);
	lower_moments(L, red, ct, idx, &mean, &var);
	inv = tir_let(b, "inv", tir_bin(b, BIN_DIV, tir_const(b, ct, 1),
					tir_call1(b, INTRIN_SQRT, tir_add(b, var,
									  tir_const(b, ct, eps)))));
	if (L->n->n_out > 1) {
		off = kept_offset(L, s, red, idx);
		tir_store(b, L->out[1], off, mean);
		if (L->n->n_out > 2)
			tir_store(b, L->out[2], off, inv);
	}
	nl = open_axes(L, s, red, true, false, idx);
	off = lower_offset(L, s, idx);
	v = tir_mul(b, tir_bin(b, BIN_SUB, tir_cast(b, ct, tir_load(b, L->in[0], off)), mean), inv);
	v = tir_mul(b, tir_cast(b, t, v), tir_load(b, L->in[1],
						   lower_bcast_offset(L, &sc->shape, s, idx)));
	if (bi)
		v = tir_add(b, v, tir_load(b, L->in[2], lower_bcast_offset(L, &bi->shape, s, idx)));
	tir_store(b, L->out[0], off, v);
	lower_end_loops(L, nl + nk);
	return 0;
}

/* ---- InstanceNormalization ---- */

/* X is [N, C, D...]; scale and B are C-vectors; Y like X. */
int infer_inorm(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(x = float_input(g, n, 0)))
		return -1;
	if (x->shape.rank < 3) {
		diag_error(g->ctx, "%s: input must have rank 3 or more", node_loc(g, n));
		return -1;
	}
	if (check_vec(g, n, 1, x->dtype, x->shape.d[1]) < 0 ||
	    check_vec(g, n, 2, x->dtype, x->shape.d[1]) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c] over the spatial axes. */
int lower_inorm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct shape *s = &lower_in(L, 0)->shape;
	enum dtype t = lower_in(L, 0)->dtype;
	double eps = node_attr_float(L->n, "epsilon", 1e-5);
	bool red[MAX_RANK];
	struct tir *idx[MAX_RANK], *mean, *var, *inv, *off, *v;
	int nk, nl;

	for (int k = 0; k < s->rank; k++)
		red[k] = k >= 2;
	nk = open_axes(L, s, red, false, true, idx);
	lower_moments(L, red, t, idx, &mean, &var);
	inv = tir_let(b, "inv", tir_bin(b, BIN_DIV, tir_load(b, L->in[1], idx[1]),
					tir_call1(b, INTRIN_SQRT, tir_add(b, var,
									  tir_const(b, t, eps)))));
	nl = open_axes(L, s, red, true, false, idx);
	off = lower_offset(L, s, idx);
	v = tir_mul(b, tir_bin(b, BIN_SUB, tir_load(b, L->in[0], off), mean), inv);
	tir_store(b, L->out[0], off, tir_add(b, v, tir_load(b, L->in[2], idx[1])));
	lower_end_loops(L, nl + nk);
	return 0;
}

/* ---- GroupNormalization ---- */

/*
 * X is [N, C, D...] with a constant C that num_groups divides; scale and
 * bias are vectors of one value per group (opsets 18 to 20) or per channel
 * (21 on). Y like X.
 */
int infer_gnorm(struct graph *g, struct node *n)
{
	struct value *x;
	int64_t groups = node_attr_int(n, "num_groups", 0);

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(x = float_input(g, n, 0)))
		return -1;
	if (x->shape.rank < 2 || !dim_is_const(x->shape.d[1])) {
		diag_error(g->ctx, "%s: input must have rank 2 or more and a constant channel "
			   "count", node_loc(g, n));
		return -1;
	}
	if (groups <= 0 || x->shape.d[1].c % groups) {
		diag_error(g->ctx, "%s: num_groups %lld does not divide the %lld channels",
			   node_loc(g, n), (long long)groups, (long long)x->shape.d[1].c);
		return -1;
	}
	if (g->opset >= 21 && !dtype_is_float(lnorm_stash(n))) {
		diag_error(g->ctx, "%s: stash_type %lld is not supported (expected a float type)",
			   node_loc(g, n), (long long)node_attr_int(n, "stash_type", 1));
		return -1;
	}
	for (int i = 1; i < 3; i++)
		if (check_vec(g, n, i, x->dtype, g->opset < 21 ? dim_const(groups)
			      : x->shape.d[1]) < 0)
			return -1;
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/*
 * Per (instance, group): the mean and variance over the group's channels
 * and the spatial axes, one flat run of cg * S elements (stash type), then
 * y = (x - mean) / sqrt(var + epsilon) * scale + bias.
 */
int lower_gnorm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct shape *s = &lower_in(L, 0)->shape;
	enum dtype t = lower_in(L, 0)->dtype;
	enum dtype ct = L->g->opset < 21 ? t : lnorm_stash(L->n);	/* stash_type is 21's */
	int64_t groups = node_attr_int(L->n, "num_groups", 1), cg = s->d[1].c / groups;
	double eps = node_attr_float(L->n, "epsilon", 1e-5);
	bool per_group = L->g->opset < 21;
	struct tir *sp = tir_int(b, 1), *ni, *gi, *base, *len, *i, *acc, *mean, *var, *inv;
	struct tir *c, *ch, *off, *v, *pi;

	for (int k = 2; k < s->rank; k++)
		sp = tir_mul(b, sp, tir_dim(b, s->d[k]));
	sp = tir_let(b, "sp", sp);
	ni = tir_loop(b, tir_dim(b, s->d[0]));
	tir_mark_parallel(b);
	gi = tir_loop(b, tir_int(b, groups));
	tir_mark_parallel(b);
	base = tir_let(b, "base", tir_mul(b, tir_add(b, tir_mul(b, ni, tir_int(b, s->d[1].c)),
						      tir_mul(b, gi, tir_int(b, cg))), sp));
	len = tir_let(b, "len", tir_mul(b, tir_int(b, cg), sp));
	acc = tir_let(b, "sum", tir_const(b, ct, 0));
	i = tir_loop(b, len);
	tir_assign(b, acc, tir_add(b, acc, tir_cast(b, ct, tir_load(b, L->in[0],
							tir_add(b, base, i)))));
	tir_end(b);
	mean = tir_let(b, "mean", tir_bin(b, BIN_DIV, acc, tir_cast(b, ct, len)));
	acc = tir_let(b, "ssd", tir_const(b, ct, 0));
	i = tir_loop(b, len);
	v = tir_let(b, "d", tir_bin(b, BIN_SUB, tir_cast(b, ct, tir_load(b, L->in[0],
							tir_add(b, base, i))), mean));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, v, v)));
	tir_end(b);
	var = tir_let(b, "var", tir_bin(b, BIN_DIV, acc, tir_cast(b, ct, len)));
	inv = tir_let(b, "inv", tir_bin(b, BIN_DIV, tir_const(b, ct, 1),
					tir_call1(b, INTRIN_SQRT, tir_add(b, var,
									  tir_const(b, ct, eps)))));
	c = tir_loop(b, tir_int(b, cg));
	ch = tir_let(b, "ch", per_group ? gi : tir_add(b, tir_mul(b, gi, tir_int(b, cg)), c));
	pi = tir_loop(b, sp);
	off = tir_let(b, "off", tir_add(b, tir_add(b, base, tir_mul(b, c, sp)), pi));
	v = tir_mul(b, tir_bin(b, BIN_SUB, tir_cast(b, ct, tir_load(b, L->in[0], off)), mean), inv);
	v = tir_add(b, tir_mul(b, tir_cast(b, t, v), tir_load(b, L->in[1], ch)),
		    tir_load(b, L->in[2], ch));
	tir_store(b, L->out[0], off, v);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	return 0;
}

/* ---- RMSNormalization ---- */

/* Y like X, in scale's type; scale broadcasts to X. */
int infer_rmsnorm(struct graph *g, struct node *n)
{
	struct value *x, *sc;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = float_input(g, n, 0)) ||
	    !(sc = float_input(g, n, 1)))
		return -1;
	if (x->shape.rank < 1) {
		diag_error(g->ctx, "%s: input must have rank 1 or more", node_loc(g, n));
		return -1;
	}
	if (infer_axis(g, n, node_attr_int(n, "axis", -1), x->shape.rank) < 0 ||
	    check_param(g, n, 1, sc->dtype, &x->shape) < 0)
		return -1;
	if (!dtype_is_float(lnorm_stash(n))) {
		diag_error(g->ctx, "%s: stash_type %lld is not supported (expected a float type)",
			   node_loc(g, n), (long long)node_attr_int(n, "stash_type", 1));
		return -1;
	}
	infer_set(g, n, 0, sc->dtype, &x->shape);
	return 0;
}

/* Y = X / sqrt(mean(X^2) + epsilon) * scale over the axes from 'axis' on. */
int lower_rmsnorm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *sc = lower_in(L, 1);
	const struct shape *s = &x->shape;
	enum dtype ct = lnorm_stash(L->n);
	double eps = node_attr_float(L->n, "epsilon", 1e-5);
	int axis = (int)node_attr_int(L->n, "axis", -1), nk, nl;
	bool red[MAX_RANK];
	struct tir *idx[MAX_RANK], *acc, *inv, *off, *v;

	if (axis < 0)
		axis += s->rank;
	for (int k = 0; k < s->rank; k++)
		red[k] = k >= axis;
	nk = open_axes(L, s, red, false, true, idx);
	acc = tir_let(b, "ss", tir_const(b, ct, 0));
	nl = open_axes(L, s, red, true, false, idx);
	v = tir_let(b, "v", tir_cast(b, ct, tir_load(b, L->in[0], lower_offset(L, s, idx))));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, v, v)));
	lower_end_loops(L, nl);
	inv = tir_let(b, "inv", tir_bin(b, BIN_DIV, tir_const(b, ct, 1),
					tir_call1(b, INTRIN_SQRT, tir_add(b, tir_bin(b, BIN_DIV, acc,
						red_count(L, s, red, ct)), tir_const(b, ct, eps)))));
	nl = open_axes(L, s, red, true, false, idx);
	off = lower_offset(L, s, idx);
	v = tir_mul(b, tir_cast(b, ct, tir_load(b, L->in[0], off)), inv);
	v = tir_mul(b, tir_cast(b, sc->dtype, v),
		    tir_load(b, L->in[1], lower_bcast_offset(L, &sc->shape, s, idx)));
	tir_store(b, L->out[0], off, v);
	lower_end_loops(L, nl + nk);
	return 0;
}

/* ---- MeanVarianceNormalization ---- */

/* Marks the normalised axes (attribute axes, default [0, 2, 3]); -1 after a diagnostic. */
static int mvn_axes(struct graph *g, struct node *n, int rank, bool *red)
{
	static const int64_t def[] = { 0, 2, 3 };
	const int64_t *v;
	int c = node_attr_ints(n, "axes", &v);

	if (c < 0) {
		v = def;
		c = ARRAY_SIZE(def);
	}
	memset(red, 0, sizeof(bool) * MAX_RANK);
	for (int i = 0; i < c; i++) {
		int a = infer_axis(g, n, v[i], rank);

		if (a < 0)
			return -1;
		red[a] = true;
	}
	return 0;
}

/* Y like X; the axes must be valid for X's rank. */
int infer_mvn(struct graph *g, struct node *n)
{
	struct value *x;
	bool red[MAX_RANK];

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = float_input(g, n, 0)) ||
	    mvn_axes(g, n, x->shape.rank, red) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* y = (x - mean) / (sqrt(var) + 1e-9), the epsilon of the ONNX function body. */
int lower_mvn(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct shape *s = &lower_in(L, 0)->shape;
	enum dtype t = lower_in(L, 0)->dtype;
	bool red[MAX_RANK];
	struct tir *idx[MAX_RANK], *mean, *var, *den, *off;
	int nk, nl;

	if (mvn_axes(L->g, (struct node *)L->n, s->rank, red) < 0)
		return -1;
	nk = open_axes(L, s, red, false, true, idx);
	lower_moments(L, red, t, idx, &mean, &var);
	den = tir_let(b, "den", tir_add(b, tir_call1(b, INTRIN_SQRT, var), tir_const(b, t, 1e-9)));
	nl = open_axes(L, s, red, true, false, idx);
	off = lower_offset(L, s, idx);
	tir_store(b, L->out[0], off, tir_bin(b, BIN_DIV, tir_bin(b, BIN_SUB,
					tir_load(b, L->in[0], off), mean), den));
	lower_end_loops(L, nl + nk);
	return 0;
}

/* ---- LpNormalization ---- */

/* Y like X; p is 1 or 2. */
int infer_lpnorm(struct graph *g, struct node *n)
{
	struct value *x;
	int64_t p = node_attr_int(n, "p", 2);

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = float_input(g, n, 0)) ||
	    infer_axis(g, n, node_attr_int(n, "axis", -1), x->shape.rank) < 0)
		return -1;
	if (p != 1 && p != 2) {
		diag_error(g->ctx, "%s: p must be 1 or 2, not %lld", node_loc(g, n), (long long)p);
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* y = x / ||x||_p along one axis; 0 where the norm is 0. */
int lower_lpnorm(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct shape *s = &lower_in(L, 0)->shape;
	enum dtype t = lower_in(L, 0)->dtype;
	bool l1 = node_attr_int(L->n, "p", 2) == 1;
	int axis = (int)node_attr_int(L->n, "axis", -1), nk, nl;
	bool red[MAX_RANK] = { false };
	struct tir *idx[MAX_RANK], *acc, *v, *off, *zero = tir_const(b, t, 0);

	if (axis < 0)
		axis += s->rank;
	red[axis] = true;
	nk = open_axes(L, s, red, false, true, idx);
	acc = tir_let(b, "acc", zero);
	nl = open_axes(L, s, red, true, false, idx);
	v = tir_load(b, L->in[0], lower_offset(L, s, idx));
	tir_assign(b, acc, tir_add(b, acc, l1 ? tir_call1(b, INTRIN_FABS, v) : tir_mul(b, v, v)));
	lower_end_loops(L, nl);
	if (!l1)
		tir_assign(b, acc, tir_call1(b, INTRIN_SQRT, acc));
	nl = open_axes(L, s, red, true, false, idx);
	off = lower_offset(L, s, idx);
	tir_store(b, L->out[0], off, tir_select(b, tir_bin(b, BIN_EQ, acc, zero), zero,
						tir_bin(b, BIN_DIV, tir_load(b, L->in[0], off),
							acc)));
	lower_end_loops(L, nl + nk);
	return 0;
}

/* ---- LRN ---- */

/* Y like X, which is [N, C, ...]; size is required. */
int infer_lrn(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = float_input(g, n, 0)))
		return -1;
	if (x->shape.rank < 2) {
		diag_error(g->ctx, "%s: input must have rank 2 or more", node_loc(g, n));
		return -1;
	}
	if (node_attr_int(n, "size", 0) <= 0) {
		diag_error(g->ctx, "%s: size must be a positive integer", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/*
 * y = x / (bias + alpha / size * sum of x^2 over the channels
 * [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]) ^ beta
 */
int lower_lrn(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct shape *s = &lower_in(L, 0)->shape;
	enum dtype t = lower_in(L, 0)->dtype;
	int64_t size = node_attr_int(L->n, "size", 1);
	double alpha = node_attr_float(L->n, "alpha", 1e-4);
	double beta = node_attr_float(L->n, "beta", 0.75);
	double bias = node_attr_float(L->n, "bias", 1.0);
	struct tir *idx[MAX_RANK], *ci[MAX_RANK], *acc, *j, *c, *v, *off, *den;

	out_loops(L, s, idx);
	acc = tir_let(b, "acc", tir_const(b, t, 0));
	j = tir_loop(b, tir_int(b, size));
	c = tir_let(b, "c", tir_add(b, tir_bin(b, BIN_SUB, idx[1], tir_int(b, (size - 1) / 2)), j));
	tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, c, tir_int(b, 0)),
			  tir_bin(b, BIN_LT, c, tir_dim(b, s->d[1]))));
	for (int k = 0; k < s->rank; k++)
		ci[k] = k == 1 ? c : idx[k];
	v = tir_let(b, "v", tir_load(b, L->in[0], lower_offset(L, s, ci)));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, v, v)));
	tir_end(b);
	tir_end(b);
	off = lower_offset(L, s, idx);
	den = tir_add(b, tir_const(b, t, bias),
		      tir_mul(b, tir_const(b, t, alpha / (double)size), acc));
	tir_store(b, L->out[0], off, tir_bin(b, BIN_DIV, tir_load(b, L->in[0], off),
					     tir_call2(b, INTRIN_POW, den, tir_const(b, t, beta))));
	lower_end_loops(L, s->rank);
	return 0;
}

/* ---- ConvTranspose and LpPool: window geometry ---- */


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
	struct value *x = float_input(g, n, 0), *wt = infer_input(g, n, 1);
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
	if (node_in(g, n, 2) && check_vec(g, n, 2, x->dtype, out->d[1]) < 0)
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
	out_loops(L, &y->shape, oi);
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
	struct value *x = float_input(g, n, 0);
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
	out_loops(L, &y->shape, oi);
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

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = float_input(g, n, 0)) || lp_order(g, n) < 0)
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

/* ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ---- */

enum loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN };

/* The reduction attribute; -1 after a diagnostic. */
static int loss_reduction(struct graph *g, const struct node *n)
{
	const char *r = node_attr_str(n, "reduction", "mean");

	if (!strcmp(r, "none"))
		return LOSS_NONE;
	if (!strcmp(r, "sum"))
		return LOSS_SUM;
	if (!strcmp(r, "mean"))
		return LOSS_MEAN;
	diag_error(g->ctx, "%s: unknown reduction '%s' (expected none, sum or mean)",
		   node_loc(g, n), r);
	return -1;
}

/*
 * Input [N, C, D...], target [N, D...] of int32/int64, weight a C-vector;
 * the loss has the target's shape for reduction none, else it is a scalar.
 * SoftmaxCrossEntropyLoss's optional log_prob has the input's shape.
 */
int infer_loss(struct graph *g, struct node *n)
{
	bool sce = n->op == OP_SOFTMAXCROSSENTROPYLOSS;
	struct value *x, *t;
	struct shape s = { 0 };
	int red;

	if (infer_arity(g, n, 2, 3, sce ? 2 : 1) < 0 || !(x = float_input(g, n, 0)) ||
	    !(t = infer_input(g, n, 1)) || (red = loss_reduction(g, n)) < 0)
		return -1;
	if (x->shape.rank < 2) {
		diag_error(g->ctx, "%s: input must have rank 2 or more", node_loc(g, n));
		return -1;
	}
	if (t->dtype != DTYPE_I32 && t->dtype != DTYPE_I64) {
		diag_error(g->ctx, "%s: target has type %s (expected int32 or int64)",
			   node_loc(g, n), dtype_name(t->dtype));
		return -1;
	}
	/* target is the input's shape without the class axis 1 */
	for (int k = 0; k < x->shape.rank; k++)
		if (k != 1)
			s.d[s.rank++] = x->shape.d[k];
	if (!shape_eq(&s, &t->shape)) {
		struct strbuf a = STRBUF_INIT, c = STRBUF_INIT;

		shape_print(g, &x->shape, &a);
		shape_print(g, &t->shape, &c);
		diag_error(g->ctx, "%s: target shape %s does not match input shape %s",
			   node_loc(g, n), sb_str(&c), sb_str(&a));
		sb_release(&a);
		sb_release(&c);
		return -1;
	}
	if (node_in(g, n, 2) && check_vec(g, n, 2, x->dtype, x->shape.d[1]) < 0)
		return -1;
	if (red != LOSS_NONE)
		s.rank = 0;
	infer_set(g, n, 0, x->dtype, &s);
	if (n->n_out > 1)
		infer_set(g, n, 1, x->dtype, &x->shape);
	return 0;
}

/*
 * Input viewed as [N, C, D], target as [N, D]. Per element: l = -w[t] *
 * x[n, t, d] (x replaced by log-softmax over C for SCE), with l = w = 0
 * where t == ignore_index; a target outside [0, C) gives NaN instead of
 * reading out of bounds. mean divides the sum of l by the sum of w.
 */
int lower_loss(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	const struct node *n = L->n;
	bool sce = n->op == OP_SOFTMAXCROSSENTROPYLOSS, has_ii = node_attr(n, "ignore_index");
	int red = loss_reduction(L->g, n);
	enum dtype t = x->dtype;
	struct tir *C = tir_dim(b, x->shape.d[1]), *D = tir_int(b, 1), *zero = tir_const(b, t, 0);
	struct tir *sum = NULL, *wsum = NULL, *ni, *di, *tg, *base, *ok, *tc, *v, *w, *l, *c;
	struct tir *lse = NULL;

	if (red < 0)
		return -1;
	for (int k = 2; k < x->shape.rank; k++)
		D = tir_mul(b, D, tir_dim(b, x->shape.d[k]));
	if (red != LOSS_NONE) {
		sum = tir_let(b, "sum", zero);
		wsum = tir_let(b, "wsum", zero);
	}
	ni = tir_loop(b, tir_dim(b, x->shape.d[0]));
	if (red == LOSS_NONE)
		tir_mark_parallel(b);
	di = tir_loop(b, D);
	if (red == LOSS_NONE)
		tir_mark_parallel(b);
	tg = tir_let(b, "tg", tir_cast(b, DTYPE_I64, tir_load(b, L->in[1],
						tir_add(b, tir_mul(b, ni, D), di))));
	base = tir_let(b, "base", tir_add(b, tir_mul(b, tir_mul(b, ni, C), D), di));
#define AT(cc) tir_add(b, base, tir_mul(b, cc, D))
	if (sce) {
		struct tir *mx = tir_let(b, "mx", tir_const(b, t, -INFINITY)), *se;

		c = tir_loop(b, C);
		tir_assign(b, mx, tir_bin(b, BIN_MAX, mx, tir_load(b, L->in[0], AT(c))));
		tir_end(b);
		se = tir_let(b, "se", zero);
		c = tir_loop(b, C);
		tir_assign(b, se, tir_add(b, se, tir_call1(b, INTRIN_EXP, tir_bin(b, BIN_SUB,
						tir_load(b, L->in[0], AT(c)), mx))));
		tir_end(b);
		lse = tir_let(b, "lse", tir_add(b, mx, tir_call1(b, INTRIN_LOG, se)));
		if (n->n_out > 1) {
			c = tir_loop(b, C);
			tir_store(b, L->out[1], AT(c), tir_bin(b, BIN_SUB,
							       tir_load(b, L->in[0], AT(c)), lse));
			tir_end(b);
		}
	}
	ok = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, tg, tir_int(b, 0)), tir_bin(b, BIN_LT, tg, C));
	tc = tir_let(b, "tc", tir_select(b, ok, tg, tir_int(b, 0)));
	v = tir_load(b, L->in[0], AT(tc));
	if (sce)
		v = tir_bin(b, BIN_SUB, v, lse);
	w = L->in[2] ? tir_load(b, L->in[2], tc) : tir_const(b, t, 1);
	l = tir_select(b, ok, tir_un(b, UN_NEG, L->in[2] ? tir_mul(b, v, w) : v),
		       tir_const(b, t, NAN));
	if (has_ii) {
		struct tir *ign = tir_let(b, "ign", tir_bin(b, BIN_EQ, tg, tir_int(b,
							node_attr_int(n, "ignore_index", 0))));

		w = tir_select(b, ign, zero, w);
		l = tir_select(b, ign, zero, l);
	}
#undef AT
	if (red == LOSS_NONE) {
		tir_store(b, L->out[0], tir_add(b, tir_mul(b, ni, D), di), l);
	} else {
		tir_assign(b, sum, tir_add(b, sum, l));
		tir_assign(b, wsum, tir_add(b, wsum, w));
	}
	tir_end(b);
	tir_end(b);
	if (red != LOSS_NONE)
		tir_store(b, L->out[0], tir_int(b, 0),
			  red == LOSS_SUM ? sum : tir_bin(b, BIN_DIV, sum, wsum));
	return 0;
}

/* ---- Einsum ---- */

/*
 * Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (numpy's order for the
 * implicit output), the broadcast dims of '...' are EIN_ELL + 0.. from the
 * left.
 */
#define EIN_ELL 52
#define EIN_LABELS (EIN_ELL + MAX_RANK)
#define EIN_MAX_IN 16

struct einsum {
	int n_in;
	int8_t lab[EIN_MAX_IN][MAX_RANK];	/* label of each input dim */
	int out_rank;
	int8_t out[MAX_RANK];			/* label of each output dim */
	bool used[EIN_LABELS];			/* appears in some input */
	struct dim size[EIN_LABELS];
};

static int ein_letter(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return 26 + c - 'a';
	return -1;
}

static char ein_char(int l)
{
	return (char)(l < 26 ? 'A' + l : 'a' + l - 26);
}

/*
 * Parses one term from *p up to ',', '-' or the end (spaces skipped): its
 * letters go to let[], the number of letters before '...' to *ell (-1 when
 * there is none). Returns the letter count, or -1 on a syntax error.
 */
static int ein_term(const char **p, int8_t *let, int *ell)
{
	const char *s = *p;
	int k = 0;

	*ell = -1;
	for (; *s && *s != ',' && *s != '-'; s++) {
		if (*s == ' ')
			continue;
		if (*s == '.') {
			if (*ell >= 0 || strncmp(s, "...", 3))
				return -1;
			*ell = k;
			s += 2;
			continue;
		}
		if (ein_letter(*s) < 0 || k >= MAX_RANK)
			return -1;
		let[k++] = (int8_t)ein_letter(*s);
	}
	*p = s;
	return k;
}

/* Merges dimension d of a use of label l; broadcast only for '...' dims. */
static int ein_size(struct graph *g, struct node *n, struct einsum *e, int l, struct dim d)
{
	bool one = dim_is_const(d) && d.c == 1;

	if (!e->used[l]) {
		e->used[l] = true;
		e->size[l] = d;
		return 0;
	}
	if (dim_eq(e->size[l], d) || (l >= EIN_ELL && one))
		return 0;
	if (l >= EIN_ELL && dim_is_const(e->size[l]) && e->size[l].c == 1) {
		e->size[l] = d;
		return 0;
	}
	if (l >= EIN_ELL)
		diag_error(g->ctx, "%s: the '...' dimensions cannot be broadcast", node_loc(g, n));
	else
		diag_error(g->ctx, "%s: subscript '%c' has different sizes", node_loc(g, n),
			   ein_char(l));
	return -1;
}

/* Parses the equation attribute against the inputs' ranks and shapes. */
static int ein_parse(struct graph *g, struct node *n, struct einsum *e)
{
	const char *eq = node_attr_str(n, "equation", NULL), *p;
	int8_t let[EIN_MAX_IN][MAX_RANK], olet[MAX_RANK];
	int nlet[EIN_MAX_IN], ell[EIN_MAX_IN], cnt[EIN_LABELS] = { 0 }, n_ell = 0, no, oell;

	memset(e, 0, sizeof(*e));
	if (!eq) {
		diag_error(g->ctx, "%s: missing the equation attribute", node_loc(g, n));
		return -1;
	}
	if (n->n_in > EIN_MAX_IN) {
		diag_error(g->ctx, "%s: more than %d operands", node_loc(g, n), EIN_MAX_IN);
		return -1;
	}
	e->n_in = n->n_in;
	p = eq;
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = infer_input(g, n, i);

		if (!v)
			return -1;
		nlet[i] = ein_term(&p, let[i], &ell[i]);
		if (nlet[i] < 0 || (*p == ',') != (i + 1 < n->n_in))
			goto bad;
		if (*p == ',')
			p++;
		if (ell[i] < 0 ? v->shape.rank != nlet[i] : v->shape.rank < nlet[i]) {
			diag_error(g->ctx, "%s: term %d of equation '%s' does not match rank %d",
				   node_loc(g, n), i, eq, v->shape.rank);
			return -1;
		}
		if (ell[i] >= 0)
			n_ell = MAX(n_ell, v->shape.rank - nlet[i]);
	}
	for (int i = 0; i < n->n_in; i++) {
		const struct shape *s = &node_in(g, n, i)->shape;
		int ne = ell[i] < 0 ? 0 : s->rank - nlet[i];

		for (int j = 0, k = 0; j < s->rank; j++) {
			int l;

			if (ell[i] >= 0 && j >= ell[i] && j < ell[i] + ne)
				l = EIN_ELL + n_ell - ne + j - ell[i];
			else
				l = let[i][k++];
			e->lab[i][j] = (int8_t)l;
			cnt[l]++;
			if (ein_size(g, n, e, l, s->d[j]) < 0)
				return -1;
		}
	}
	while (*p == ' ')
		p++;
	if (!*p) {
		/* implicit output: '...' dims, then the letters used once, sorted */
		for (int l = EIN_ELL; l < EIN_ELL + n_ell; l++)
			e->out[e->out_rank++] = (int8_t)l;
		for (int l = 0; l < EIN_ELL; l++)
			if (cnt[l] == 1) {
				if (e->out_rank >= MAX_RANK)
					goto rank;
				e->out[e->out_rank++] = (int8_t)l;
			}
		return 0;
	}
	if (strncmp(p, "->", 2))
		goto bad;
	p += 2;
	no = ein_term(&p, olet, &oell);
	if (no < 0 || *p)
		goto bad;
	if (n_ell && oell < 0) {
		/* as numpy: '...' dims are never summed implicitly */
		diag_error(g->ctx, "%s: equation '%s' has '...' dims in the inputs but not in the "
			   "output", node_loc(g, n), eq);
		return -1;
	}
	if (no + (oell >= 0 ? n_ell : 0) > MAX_RANK)
		goto rank;
	for (int k = 0; k <= no; k++) {
		if (k == oell)
			for (int l = EIN_ELL; l < EIN_ELL + n_ell; l++)
				e->out[e->out_rank++] = (int8_t)l;
		if (k == no)
			break;
		if (!e->used[olet[k]]) {
			diag_error(g->ctx, "%s: output subscript '%c' is not in any input",
				   node_loc(g, n), ein_char(olet[k]));
			return -1;
		}
		for (int j = 0; j < k; j++)
			if (olet[j] == olet[k]) {
				diag_error(g->ctx, "%s: output subscript '%c' is repeated",
					   node_loc(g, n), ein_char(olet[k]));
				return -1;
			}
		e->out[e->out_rank++] = olet[k];
	}
	return 0;
bad:
	diag_error(g->ctx, "%s: cannot parse equation '%s' (expected %d comma-separated terms, "
		   "then optionally '->' and the output term)", node_loc(g, n), eq, n->n_in);
	return -1;
rank:
	diag_error(g->ctx, "%s: the output of '%s' has more than %d dimensions", node_loc(g, n),
		   eq, MAX_RANK);
	return -1;
}

/* All operands of one numeric type; the output shape from the equation. */
int infer_einsum(struct graph *g, struct node *n)
{
	struct einsum e;
	struct shape s = { 0 };
	struct value *x;

	if (infer_arity(g, n, 1, -1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	for (int i = 1; i < n->n_in; i++) {
		struct value *v = infer_input(g, n, i);

		if (!v)
			return -1;
		if (v->dtype != x->dtype) {
			diag_error(g->ctx, "%s: input %d has type %s, expected %s", node_loc(g, n),
				   i, dtype_name(v->dtype), dtype_name(x->dtype));
			return -1;
		}
	}
	if (x->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: bool operands are not supported", node_loc(g, n));
		return -1;
	}
	if (ein_parse(g, n, &e) < 0)
		return -1;
	s.rank = e.out_rank;
	for (int k = 0; k < e.out_rank; k++)
		s.d[k] = e.size[e.out[k]];
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * One loop per label: the output's outside, the summed ones inside, and
 * acc += product of the operands at those indices.
 */
int lower_einsum(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	struct tir *var[EIN_LABELS], *oi[MAX_RANK], *acc, *prod = NULL;
	bool is_out[EIN_LABELS] = { false };
	struct einsum e;
	int ns = 0;

	if (ein_parse(L->g, (struct node *)L->n, &e) < 0)
		return -1;
	for (int k = 0; k < e.out_rank; k++) {
		oi[k] = var[e.out[k]] = tir_loop(b, tir_dim(b, e.size[e.out[k]]));
		is_out[e.out[k]] = true;
		tir_mark_parallel(b);
	}
	acc = tir_let(b, "acc", tir_const(b, y->dtype, 0));
	for (int l = 0; l < EIN_LABELS; l++)
		if (e.used[l] && !is_out[l]) {
			var[l] = tir_loop(b, tir_dim(b, e.size[l]));
			ns++;
		}
	for (int i = 0; i < e.n_in; i++) {
		const struct shape *s = &lower_in(L, i)->shape;
		struct tir *idx[MAX_RANK], *v;

		for (int j = 0; j < s->rank; j++)
			idx[j] = dim_is_const(s->d[j]) && s->d[j].c == 1 ? tir_int(b, 0)
				: var[e.lab[i][j]];
		v = tir_load(b, L->in[i], lower_offset(L, s, idx));
		prod = prod ? tir_mul(b, prod, v) : v;
	}
	tir_assign(b, acc, tir_add(b, acc, prod));
	lower_end_loops(L, ns);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, e.out_rank);
	return 0;
}

/* ---- Det ---- */

/* Largest matrix the unrolled LU handles (M * M locals, O(M^3) statements). */
#define DET_MAX 16

/* X is [*, M, M] with a static M; Y is [*]. */
int infer_det(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;
	struct dim m;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = float_input(g, n, 0)))
		return -1;
	s = x->shape;
	if (s.rank < 2 || !dim_eq(s.d[s.rank - 1], s.d[s.rank - 2])) {
		diag_error(g->ctx, "%s: input must be a square matrix or a batch of them",
			   node_loc(g, n));
		return -1;
	}
	m = s.d[s.rank - 1];
	if (!dim_is_const(m) || m.c < 1 || m.c > DET_MAX) {
		diag_error(g->ctx, "%s: matrices must have a static size from 1 to %d",
			   node_loc(g, n), DET_MAX);
		return -1;
	}
	s.rank -= 2;
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * Per matrix: LU with partial pivoting, fully unrolled over M * M locals in
 * double precision. Bringing the largest |a[r][k]| to row k by successive
 * swaps flips the sign once per swap; det is the signed product of pivots.
 */
int lower_det(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	int r = x->shape.rank, m = (int)x->shape.d[r - 1].c;
	enum dtype ct = DTYPE_F64;
	struct tir *a[DET_MAX][DET_MAX], *nb = tir_int(b, 1), *bi, *base, *det, *tmp;

	for (int k = 0; k < r - 2; k++)
		nb = tir_mul(b, nb, tir_dim(b, x->shape.d[k]));
	bi = tir_loop(b, nb);
	tir_mark_parallel(b);
	base = tir_let(b, "base", tir_mul(b, bi, tir_int(b, (int64_t)m * m)));
	for (int i = 0; i < m; i++)
		for (int j = 0; j < m; j++)
			a[i][j] = tir_let(b, "a", tir_cast(b, ct, tir_load(b, L->in[0],
						tir_add(b, base, tir_int(b, i * m + j)))));
	det = tir_let(b, "det", tir_flt(b, ct, 1));
	tmp = tir_let(b, "tmp", tir_flt(b, ct, 0));
	for (int k = 0; k < m; k++) {
		for (int i = k + 1; i < m; i++) {
			tir_if(b, tir_bin(b, BIN_GT, tir_call1(b, INTRIN_FABS, a[i][k]),
					  tir_call1(b, INTRIN_FABS, a[k][k])));
			for (int j = k; j < m; j++) {
				tir_assign(b, tmp, a[k][j]);
				tir_assign(b, a[k][j], a[i][j]);
				tir_assign(b, a[i][j], tmp);
			}
			tir_assign(b, det, tir_un(b, UN_NEG, det));
			tir_end(b);
		}
		tir_assign(b, det, tir_mul(b, det, a[k][k]));
		if (k == m - 1)
			break;
		tir_if(b, tir_bin(b, BIN_NE, a[k][k], tir_flt(b, ct, 0)));
		for (int i = k + 1; i < m; i++) {
			tir_assign(b, tmp, tir_bin(b, BIN_DIV, a[i][k], a[k][k]));
			for (int j = k + 1; j < m; j++)
				tir_assign(b, a[i][j], tir_bin(b, BIN_SUB, a[i][j],
							       tir_mul(b, tmp, a[k][j])));
		}
		tir_end(b);
	}
	tir_store(b, L->out[0], bi, det);
	tir_end(b);
	return 0;
}
