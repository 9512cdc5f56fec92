/*
 * ops_norm.c - normalisations: LayerNormalization, InstanceNormalization,
 * GroupNormalization, RMSNormalization, MeanVarianceNormalization,
 * LpNormalization, LRN and BatchNormalization's training mode: direct loop
 * nests, written to be obviously right rather than fast.
 *
 * The normalisations share one shape: loops over the kept axes outside,
 * then passes over the normalised axes inside (sum, squared deviation,
 * output), with the statistics in scalar locals.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- shared helpers ---- */

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

	if (infer_arity(g, n, 2, 3, 3) < 0 || !(x = infer_float_input(g, n, 0)) ||
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

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(x = infer_float_input(g, n, 0)))
		return -1;
	if (x->shape.rank < 3) {
		diag_error(g->ctx, "%s: input must have rank 3 or more", node_loc(g, n));
		return -1;
	}
	if (infer_check_vec(g, n, 1, x->dtype, x->shape.d[1]) < 0 ||
	    infer_check_vec(g, n, 2, x->dtype, x->shape.d[1]) < 0)
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

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(x = infer_float_input(g, n, 0)))
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
		if (infer_check_vec(g, n, i, x->dtype, g->opset < 21 ? dim_const(groups)
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

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_float_input(g, n, 0)) ||
	    !(sc = infer_float_input(g, n, 1)))
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

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_float_input(g, n, 0)) ||
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

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_float_input(g, n, 0)) ||
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

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_float_input(g, n, 0)))
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

	lower_out_loops(L, s, idx);
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
