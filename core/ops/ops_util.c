/*
 * ops_util.c - helpers shared by the infer and lower functions of all ops.
 */
#include "ops.h"

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
		diag_error(g->ctx, "%s: input %d '%s' must be a constant integer tensor "
			   "(data-dependent shapes are not supported)", node_loc(g, n), i, v->name);
		return -1;
	}
	return 0;
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
