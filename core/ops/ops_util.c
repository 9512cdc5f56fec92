/*
 * ops_util.c - helpers shared by the infer and lower functions of all ops.
 */
#include "ops.h"
#include "../../runtime/rt_half.h"

#include <math.h>
#include <string.h>

void infer_set(struct graph *g, struct node *n, int i, enum dtype t, const struct shape *s)
{
	struct value *v = node_out(g, n, i);

	v->dtype = t;
	v->shape = *s;
	v->has_shape = true;
}

static bool dim_is_one(struct dim d)
{
	return d.n == 0 && d.c == 1;
}

bool shape_broadcast(const struct shape *a, const struct shape *b, struct shape *out)
{
	int r = MAX(a->rank, b->rank);
	struct shape s;

	s.rank = r;
	for (int i = 0; i < r; i++) {
		int ia = a->rank - r + i, ib = b->rank - r + i;
		struct dim da = ia >= 0 ? a->d[ia] : dim_const(1);
		struct dim db = ib >= 0 ? b->d[ib] : dim_const(1);

		if (dim_eq(da, db) || dim_is_one(db))
			s.d[i] = da;
		else if (dim_is_one(da))
			s.d[i] = db;
		else
			return false;
	}
	*out = s;
	return true;
}

int infer_axis(struct graph *g, struct node *n, int64_t axis, int rank)
{
	if (axis < -rank || axis >= (rank ? rank : 1)) {
		diag_error(g->ctx, "%s: axis %lld is out of range for rank %d", node_loc(g, n),
			   (long long)axis, rank);
		return -1;
	}
	return (int)(axis < 0 ? axis + rank : axis);
}

struct value *infer_input(struct graph *g, struct node *n, int i)
{
	struct value *v = node_in(g, n, i);

	if (!v) {
		diag_error(g->ctx, "%s: missing input %d", node_loc(g, n), i);
		return NULL;
	}
	if (!v->has_shape || v->dtype == DTYPE_UNDEF) {
		diag_error(g->ctx, "%s: input %d '%s' has an unknown type or shape", node_loc(g, n),
			   i, v->name);
		return NULL;
	}
	return v;
}

int infer_const_ints(struct graph *g, struct node *n, int i, int64_t **vals, int64_t *count)
{
	struct value *v = infer_input(g, n, i);

	if (!v)
		return -1;
	if (dtype_is_float(v->dtype) || value_const_ints(g, v, vals, count) < 0) {
		const char *why = symval_explain(g, v);

		if (v->sym)
			diag_error(g->ctx, "%s: input %d '%s' must be a constant integer tensor, "
				   "not one computed from symbolic dims", node_loc(g, n), i,
				   v->name);
		else if (why)
			diag_error(g->ctx, "%s: input %d '%s' must be a constant integer tensor: "
				   "%s", node_loc(g, n), i, v->name, why);
		else
			diag_error(g->ctx, "%s: input %d '%s' must be a constant integer tensor "
				   "(data-dependent shapes are not supported)", node_loc(g, n), i,
				   v->name);
		return -1;
	}
	return 0;
}

int infer_sym_ints(struct graph *g, struct node *n, int i, struct dim **vals, int64_t *count)
{
	struct value *v = infer_input(g, n, i);
	const char *why;

	if (!v)
		return -1;
	if (!dtype_is_float(v->dtype) && value_sym_ints(g, v, vals, count) == 0)
		return 0;
	why = dtype_is_float(v->dtype) ? NULL : symval_explain(g, v);
	if (why)
		diag_error(g->ctx, "%s: input %d '%s' must be known at compile time: %s",
			   node_loc(g, n), i, v->name, why);
	else
		diag_error(g->ctx, "%s: input %d '%s' must be a constant integer tensor "
			   "(data-dependent shapes are not supported)", node_loc(g, n), i, v->name);
	return -1;
}

int infer_sym_scalar(struct graph *g, struct node *n, int i, struct dim *val)
{
	struct dim *v;
	int64_t cnt;

	if (infer_sym_ints(g, n, i, &v, &cnt) < 0)
		return -1;
	if (cnt != 1) {
		diag_error(g->ctx, "%s: input %d '%s' must hold one value, not %lld",
			   node_loc(g, n), i, node_in(g, n, i)->name, (long long)cnt);
		return -1;
	}
	*val = v[0];
	return 0;
}

bool infer_is_data(struct graph *g, struct node *n, int i)
{
	struct value *v = node_in(g, n, i);

	return v && v->has_shape && dtype_is_int(v->dtype) && !v->data && !v->sym;
}

int infer_data_count(struct graph *g, struct node *n, int i, int64_t *count)
{
	struct value *v = node_in(g, n, i);

	if (!shape_is_static(&v->shape)) {
		diag_error(g->ctx, "%s: input %d '%s' has a symbolic length, so the output rank "
			   "would depend on values", node_loc(g, n), i, v->name);
		return -1;
	}
	*count = shape_numel_static(&v->shape);
	return 0;
}

int infer_set_data(struct graph *g, struct node *n, int o, enum dtype t, int64_t rank)
{
	struct shape s;

	if (rank < 0 || rank > MAX_RANK) {
		diag_error(g->ctx, "%s: output rank %lld is outside 0..%d", node_loc(g, n),
			   (long long)rank, MAX_RANK);
		return -1;
	}
	s.rank = (int)rank;
	for (int k = 0; k < s.rank; k++)
		s.d[k] = graph_data_sym(g, n->out[o], k);
	infer_set(g, n, o, t, &s);
	return 0;
}

bool node_is_dynamic(struct graph *g, const struct node *n)
{
	if (dft_is_runtime(g, n))
		return true;
	for (int o = 0; o < n->n_out; o++) {
		const struct value *v = node_out(g, n, o);

		for (int i = 0; i < g->sym_data.n; i++) {
			const struct sym_data *sd = &g->sym_data.v[i];

			if (sd->value == n->out[o] && sd->dim >= 0 && sd->dim < v->shape.rank &&
			    dim_eq(v->shape.d[sd->dim], dim_sym(sd->sym)))
				return true;
		}
	}
	return false;
}

int infer_arity(struct graph *g, struct node *n, int min_in, int max_in, int n_out)
{
	int present = n->n_in;

	while (present > 0 && n->in[present - 1] < 0)
		present--;
	if (present < min_in || (max_in >= 0 && present > max_in)) {
		if (max_in == min_in)
			diag_error(g->ctx, "%s: has %d inputs, expected %d", node_loc(g, n), present,
				   min_in);
		else if (max_in < 0)
			diag_error(g->ctx, "%s: has %d inputs, expected %d or more", node_loc(g, n),
				   present, min_in);
		else
			diag_error(g->ctx, "%s: has %d inputs, expected %d to %d", node_loc(g, n),
				   present, min_in, max_in);
		return -1;
	}
	if (n->n_out < 1 || (n_out >= 0 && n->n_out > n_out)) {
		diag_error(g->ctx, "%s: has %d outputs, expected %d", node_loc(g, n), n->n_out,
			   n_out);
		return -1;
	}
	return 0;
}

int infer_broadcast_to(struct graph *g, struct node *n, enum dtype t)
{
	struct shape s;
	struct value *v0 = infer_input(g, n, 0);

	if (!v0)
		return -1;
	s = v0->shape;
	for (int i = 1; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (!v)
			continue;
		if (!v->has_shape) {
			diag_error(g->ctx, "%s: input %d has an unknown shape", node_loc(g, n), i);
			return -1;
		}
		if (!shape_broadcast(&s, &v->shape, &s)) {
			struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;

			shape_print(g, &v0->shape, &a);
			shape_print(g, &v->shape, &b);
			diag_error(g->ctx, "%s: shapes %s and %s cannot be broadcast",
				   node_loc(g, n), sb_str(&a), sb_str(&b));
			sb_release(&a);
			sb_release(&b);
			return -1;
		}
	}
	infer_set(g, n, 0, t == DTYPE_UNDEF ? v0->dtype : t, &s);
	return 0;
}

/* ---- lowering helpers ---- */

void lower_loops(struct lower *L, const struct shape *s, struct tir **idx)
{
	for (int k = 0; k < s->rank; k++)
		idx[k] = tir_loop(L->b, tir_dim(L->b, s->d[k]));
}

void lower_loops_parallel(struct lower *L, const struct shape *s, struct tir **idx)
{
	for (int k = 0; k < s->rank; k++) {
		idx[k] = tir_loop(L->b, tir_dim(L->b, s->d[k]));
		tir_mark_parallel(L->b);
	}
}

void lower_end_loops(struct lower *L, int n)
{
	while (n-- > 0)
		tir_end(L->b);
}

struct tir *lower_stride(struct lower *L, const struct shape *s, int k)
{
	struct tir *st = tir_int(L->b, 1);

	for (int j = s->rank - 1; j > k; j--)
		st = tir_mul(L->b, st, tir_dim(L->b, s->d[j]));
	return st;
}

/* Can slot hold numel elements of t (growing when both sizes are constant)? */
static bool scratch_fits(struct lower_scratch_slot *slot, enum dtype t, struct dim numel)
{
	if (slot->dtype != t || slot->data)
		return false;
	if (dim_eq(slot->numel, numel))
		return true;
	if (!dim_is_const(slot->numel) || !dim_is_const(numel))
		return false;
	if (numel.c > slot->numel.c)
		slot->numel = numel;
	return true;
}

struct tir_buf *lower_scratch(struct lower *L, enum dtype t, struct dim numel)
{
	struct lower_scratch *s = L->scratch;
	struct tir_buf *buf = NULL;
	int i;

	if (!s)
		BUG("%s: a scratch buffer outside an op strategy", node_loc(L->g, L->n));
	for (i = L->n_scratch; i < s->slots.n; i++)
		if (scratch_fits(&s->slots.v[i], t, numel))
			break;
	if (i == s->slots.n) {
		struct lower_scratch_slot slot = { t, numel, NULL };

		vec_push(&s->slots, slot);
	}
	/* slots this function skips are declared too: parameter positions are shared */
	while (L->n_scratch <= i) {
		const char *name = arena_printf(L->g->arena, "scratch%d", L->n_scratch);

		buf = tir_param(L->b, name, s->slots.v[L->n_scratch].dtype);
		L->n_scratch++;
	}
	return buf;
}

/* Declares the slots up to i (parameter positions are shared); returns slot i's buffer. */
static struct tir_buf *scratch_declare(struct lower *L, int i)
{
	struct tir_buf *buf = NULL;

	while (L->n_scratch <= i) {
		const char *name = arena_printf(L->g->arena, "scratch%d", L->n_scratch);

		buf = tir_param(L->b, name, L->scratch->slots.v[L->n_scratch].dtype);
		L->n_scratch++;
	}
	return buf;
}

struct tir_buf *lower_const(struct lower *L, enum dtype t, int64_t numel, void *data)
{
	struct lower_scratch *s = L->scratch;
	struct lower_scratch_slot slot = { t, dim_const(numel), data };

	if (!s)
		BUG("%s: a constant buffer outside an op strategy", node_loc(L->g, L->n));
	/* the same constant in an earlier variant (B packed for two of them): its slot */
	for (int i = L->n_scratch; i < s->slots.n; i++)
		if (s->slots.v[i].data == data && s->slots.v[i].dtype == t &&
		    dim_eq(s->slots.v[i].numel, slot.numel))
			return scratch_declare(L, i);
	vec_push(&s->slots, slot);
	return scratch_declare(L, s->slots.n - 1);
}

struct tir *lower_offset(struct lower *L, const struct shape *s, struct tir **idx)
{
	struct tir *off = tir_int(L->b, 0);

	/* Horner form: ((i0 * d1 + i1) * d2 + i2) ... */
	for (int k = 0; k < s->rank; k++) {
		off = tir_mul(L->b, off, tir_dim(L->b, s->d[k]));
		off = tir_add(L->b, off, idx[k]);
	}
	return off;
}

struct tir *lower_bcast_offset(struct lower *L, const struct shape *in, const struct shape *out,
			       struct tir **idx)
{
	struct tir *off = tir_int(L->b, 0);
	int shift = out->rank - in->rank;

	for (int k = 0; k < in->rank; k++) {
		struct dim d = in->d[k];
		struct tir *i = dim_is_one(d) ? tir_int(L->b, 0) : idx[k + shift];

		off = tir_mul(L->b, off, tir_dim(L->b, d));
		off = tir_add(L->b, off, i);
	}
	return off;
}

struct tir *lower_numel(struct lower *L, const struct shape *s)
{
	struct tir *e = tir_int(L->b, 1);

	for (int k = 0; k < s->rank; k++)
		e = tir_mul(L->b, e, tir_dim(L->b, s->d[k]));
	return e;
}

struct tir *lower_wrap_index(struct lower *L, struct tir *x, struct tir *dim)
{
	struct tir_builder *b = L->b;
	struct tir *k = tir_let(b, "k", tir_cast(b, DTYPE_I64, x));

	return tir_let(b, "k", tir_select(b, tir_bin(b, BIN_LT, k, tir_int(b, 0)),
					  tir_add(b, k, dim), k));
}

struct tir *lower_clamp_index(struct lower *L, struct tir *x, struct tir *dim)
{
	struct tir_builder *b = L->b;

	return tir_bin(b, BIN_MAX, tir_bin(b, BIN_MIN, x, tir_bin(b, BIN_SUB, dim, tir_int(b, 1))),
		       tir_int(b, 0));
}

bool lower_clip_bounds(struct graph *g, const struct node *e, double *lo, double *hi)
{
	*lo = -INFINITY;
	*hi = INFINITY;
	for (int i = 1; i < e->n_in && i < 3; i++) {
		const struct value *bv = node_in(g, e, i);
		double x;

		if (!bv)
			continue;
		if (!bv->data || !value_const_scalar(g, bv, &x) || isnan(x))
			return false;
		if (i == 1)
			*lo = x;
		else
			*hi = x;
	}
	return e->n_in <= 3 && *lo <= *hi;
}

bool lower_res_act(struct graph *g, const int *nodes, int n, int chain, struct lower_res_act *e)
{
	const struct shape *cs = &g->values.v[chain].shape;
	int i = 0;

	memset(e, 0, sizeof(*e));
	e->res = -1;
	if (i < n) {
		const struct node *a = &g->nodes.v[nodes[i]];
		int r = a->n_in == 2 && a->in[0] == chain ? a->in[1] : a->in[0];
		const struct value *rv = r >= 0 ? &g->values.v[r] : NULL;

		if (a->op == OP_ADD && a->n_in == 2 && (a->in[0] == chain) != (a->in[1] == chain) &&
		    rv && rv->dtype == DTYPE_F32 && rv->has_shape && shape_eq(&rv->shape, cs) &&
		    shape_eq(&rv->shape, &node_out(g, a, 0)->shape)) {
			e->res = r;
			chain = a->out[0];
			i++;
		}
	}
	if (i < n) {
		const struct node *a = &g->nodes.v[nodes[i]];
		bool reads = a->n_in >= 1 && a->in[0] == chain;

		if (reads && a->op == OP_RELU)
			e->act = 1;
		else if (reads && a->op == OP_CLIP && lower_clip_bounds(g, a, &e->lo, &e->hi))
			e->act = 2;
		else
			goto other;
		i++;
	}
	if (i == n)
		return true;
other:
	memset(e, 0, sizeof(*e));
	e->res = -1;
	return false;
}

/* ---- windows of convolution and pooling ---- */

static int ints_attr(const struct node *n, const char *name, int r, int64_t *dst, int64_t def)
{
	const int64_t *v;
	int c = node_attr_ints(n, name, &v);

	for (int i = 0; i < r; i++)
		dst[i] = c == r ? v[i] : def;
	return c < 0 || c == r ? 0 : -1;
}


/* A symbolic spatial extent: what window_plan_sym makes of it. -1 after a diagnostic. */
static int window_sym_dim(struct graph *g, struct node *n, struct window *w, int i)
{
	int64_t ek = (w->k[i] - 1) * w->d[i] + 1, add = w->pb[i] + w->pe[i] - ek;
	struct dim span, q;

	if (!graph_sym_add(g, w->din[i], dim_const(add), &span) ||
	    (w->s[i] > 1 && !graph_derive_sym(g, SYM_DIV, span, dim_const(w->s[i]), &q)) ||
	    !graph_sym_add(g, w->s[i] > 1 ? q : span, dim_const(1), &w->dout[i])) {
		diag_error(g->ctx, "%s: the output length of symbolic spatial dimension %d "
			   "cannot be represented", node_loc(g, n), i + 2);
		return -1;
	}
	if (add < 0)	/* the padded input must hold the kernel */
		graph_add_check(g, n, dim_const(-add), w->din[i]);
	w->in[i] = w->out[i] = -1;
	w->sym = true;
	return 0;
}

static int window_plan_at(struct graph *g, struct node *n, const struct shape *x,
			  const int64_t *kernel, bool ceil_mode, bool sym, struct window *w)
{
	const char *ap = node_attr_str(n, "auto_pad", "NOTSET");
	bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	const int64_t *pads;
	int np;

	w->r = x->rank - 2;
	w->sym = false;
	if (w->r < 1) {
		diag_error(g->ctx, "%s: input must have rank 3 or more", node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < w->r; i++) {
		w->din[i] = x->d[i + 2];
		if (!dim_is_const(x->d[i + 2]) && !sym) {
			diag_error(g->ctx, "%s: spatial dimension %d is symbolic (only the batch "
				   "and channel dims may be)", node_loc(g, n), i + 2);
			return -1;
		}
		if (!dim_is_const(x->d[i + 2]) && (ceil_mode || same)) {
			diag_error(g->ctx, "%s: spatial dimension %d is symbolic, which needs "
				   "explicit pads (no auto_pad SAME)", node_loc(g, n), i + 2);
			return -1;
		}
		w->in[i] = x->d[i + 2].c;
		w->k[i] = kernel[i];
	}
	if (ints_attr(n, "strides", w->r, w->s, 1) < 0 ||
	    ints_attr(n, "dilations", w->r, w->d, 1) < 0) {
		diag_error(g->ctx, "%s: strides/dilations do not match the spatial rank %d",
			   node_loc(g, n), w->r);
		return -1;
	}
	np = node_attr_ints(n, "pads", &pads);
	if (np >= 0 && np != 2 * w->r) {
		diag_error(g->ctx, "%s: pads has %d values, expected %d", node_loc(g, n), np,
			   2 * w->r);
		return -1;
	}
	for (int i = 0; i < w->r; i++) {
		int64_t ek = (w->k[i] - 1) * w->d[i] + 1;

		if (w->s[i] <= 0 || w->d[i] <= 0 || w->k[i] <= 0) {
			diag_error(g->ctx, "%s: kernel, strides and dilations must be positive",
				   node_loc(g, n));
			return -1;
		}
		w->pb[i] = np > 0 ? pads[i] : 0;
		w->pe[i] = np > 0 ? pads[i + w->r] : 0;
		if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			int64_t o = (w->in[i] + w->s[i] - 1) / w->s[i];
			int64_t tot = (o - 1) * w->s[i] + ek - w->in[i];

			tot = tot < 0 ? 0 : tot;
			w->pb[i] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
			w->pe[i] = tot - w->pb[i];
			w->out[i] = o;
			continue;
		}
		if (!strcmp(ap, "VALID"))
			w->pb[i] = w->pe[i] = 0;
		if (!dim_is_const(w->din[i])) {
			if (window_sym_dim(g, n, w, i) < 0)
				return -1;
			continue;
		}
		{
			int64_t span = w->in[i] + w->pb[i] + w->pe[i] - ek;

			if (span < 0) {
				diag_error(g->ctx, "%s: kernel is larger than the padded input",
					   node_loc(g, n));
				return -1;
			}
			w->out[i] = ceil_mode ? (span + w->s[i] - 1) / w->s[i] + 1 : span / w->s[i] + 1;
			/* the last window must start inside the input or its begin pad */
			if (ceil_mode && (w->out[i] - 1) * w->s[i] >= w->in[i] + w->pb[i])
				w->out[i]--;
		}
	}
	for (int i = 0; i < w->r; i++)
		if (dim_is_const(w->din[i]))
			w->dout[i] = dim_const(w->out[i]);
	return 0;
}

int window_plan(struct graph *g, struct node *n, const struct shape *x,
		const int64_t *kernel, bool ceil_mode, struct window *w)
{
	return window_plan_at(g, n, x, kernel, ceil_mode, false, w);
}

int window_plan_sym(struct graph *g, struct node *n, const struct shape *x,
		    const int64_t *kernel, struct window *w)
{
	return window_plan_at(g, n, x, kernel, false, true, w);
}

bool window_symbolic(struct graph *g, const struct node *n)
{
	const struct value *x;

	if ((n->op != OP_CONV && n->op != OP_MAXPOOL && n->op != OP_AVERAGEPOOL) ||
	    !(x = node_in(g, n, 0)) || !x->has_shape)
		return false;
	for (int i = 2; i < x->shape.rank; i++)
		if (!dim_is_const(x->shape.d[i]))
			return true;
	return false;
}

struct tir *lower_window_pos(struct lower *L, const struct window *w, int i, struct tir *o,
			     struct tir *k, struct tir **cond)
{
	struct tir_builder *b = L->b;
	struct tir *p = tir_add(b, tir_mul(b, o, tir_int(b, w->s[i])),
				tir_mul(b, k, tir_int(b, w->d[i])));

	p = tir_let(b, "p", tir_bin(b, BIN_SUB, p, tir_int(b, w->pb[i])));
	if (!dim_is_const(w->din[i])) {
		/* the run decides where windows leave the input: always checked */
		struct tir *c = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, p, tir_int(b, 0)),
					tir_bin(b, BIN_LT, p, tir_dim(b, w->din[i])));

		*cond = *cond ? tir_bin(b, BIN_LAND, *cond, c) : c;
	} else if (w->pb[i] || w->pe[i] ||
		   w->s[i] * (w->out[i] - 1) + (w->k[i] - 1) * w->d[i] >= w->in[i]) {
		*cond = lower_inside(b, *cond, p, w->in[i]);
	}
	return p;
}

bool window_unit_stride_no_pad(const struct node *n)
{
	const int64_t *v;
	bool ok = !strcmp(node_attr_str(n, "auto_pad", "NOTSET"), "NOTSET");
	int k;

	if ((k = node_attr_ints(n, "strides", &v)) > 0)
		for (int i = 0; i < k; i++)
			ok &= v[i] == 1;
	if ((k = node_attr_ints(n, "pads", &v)) > 0)
		for (int i = 0; i < k; i++)
			ok &= v[i] == 0;
	return ok;
}

struct tir *lower_inside(struct tir_builder *b, struct tir *cond, struct tir *pos, int64_t ext)
{
	struct tir *c = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, pos, tir_int(b, 0)),
				tir_bin(b, BIN_LT, pos, tir_int(b, ext)));

	return cond ? tir_bin(b, BIN_LAND, cond, c) : c;
}

/* ---- checks and constant inputs of the indexing and data ops ---- */

static int not_constant(struct graph *g, struct node *n, int i, const char *what)
{
	diag_error(g->ctx, "%s: input %d '%s' must be a constant %s (data-dependent shapes are "
		   "not supported)", node_loc(g, n), i, node_in(g, n, i)->name, what);
	return -1;
}

/* Reads constant input i, which must hold one number. */
int infer_const_scalar(struct graph *g, struct node *n, int i, double *out)
{
	struct value *v = infer_input(g, n, i);

	if (!v)
		return -1;
	if (!value_const_scalar(g, v, out))
		return not_constant(g, n, i, "scalar");
	return 0;
}

/* Reads constant input i (any numeric type) as doubles (arena copy). */
int infer_const_doubles(struct graph *g, struct node *n, int i, double **vals,
			int64_t *count)
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

int infer_check_index_type(struct graph *g, struct node *n, const struct value *v)
{
	if (v->dtype != DTYPE_I64 && v->dtype != DTYPE_I32) {
		diag_error(g->ctx, "%s: indices must be int32 or int64, not %s", node_loc(g, n),
			   dtype_name(v->dtype));
		return -1;
	}
	return 0;
}

int infer_check_rank(struct graph *g, struct node *n, int rank)
{
	if (rank > MAX_RANK) {
		diag_error(g->ctx, "%s: result rank is more than %d", node_loc(g, n), MAX_RANK);
		return -1;
	}
	return 0;
}

int infer_bad_shapes(struct graph *g, struct node *n, const char *what, const struct shape *a,
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

struct tir *lower_in_range(struct lower *L, struct tir *x, struct tir *dim)
{
	return tir_bin(L->b, BIN_LAND, tir_bin(L->b, BIN_GE, x, tir_int(L->b, 0)),
		       tir_bin(L->b, BIN_LT, x, dim));
}

/* ---- checks and loops of the normalisation, window, loss and linear algebra ops ---- */

/* Input i, which must be a float32 or float64 tensor. */
struct value *infer_float_input(struct graph *g, struct node *n, int i)
{
	struct value *v = infer_input(g, n, i);

	if (v && !dtype_is_float(v->dtype)) {
		diag_error(g->ctx, "%s: input %d '%s' has type %s (expected a float type)",
			   node_loc(g, n), i, v->name, dtype_name(v->dtype));
		return NULL;
	}
	return v;
}

/* Input i must be a vector of dtype t and length d (the channel count). */
int infer_check_vec(struct graph *g, struct node *n, int i, enum dtype t, struct dim d)
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

/* lower_loops() over the output, every loop parallel. */
void lower_out_loops(struct lower *L, const struct shape *s, struct tir **idx)
{
	for (int k = 0; k < s->rank; k++) {
		idx[k] = tir_loop(L->b, tir_dim(L->b, s->d[k]));
		tir_mark_parallel(L->b);
	}
}
