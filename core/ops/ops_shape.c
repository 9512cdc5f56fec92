/*
 * ops_shape.c - shape manipulation and data movement: reshape-like copies,
 * transpose, concat, gather, slice, split, expand, Shape and Size.
 */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

/* ---- reshape family: output is a flat copy of the input ---- */

int lower_copy(struct lower *L)
{
	/* the input's count: a data-dependent output's may be more symbols than a dim holds */
	struct tir *i = tir_loop(L->b, lower_numel(L, &lower_in(L, 0)->shape));

	tir_mark_parallel(L->b);
	tir_store(L->b, L->out[0], i, tir_load(L->b, L->in[0], i));
	tir_end(L->b);
	return 0;
}

/*
 * The element counts of in and out must agree: at compile time, or where
 * they are different products of symbols (a TorchScript export that baked
 * seq = 16 into a target shape) at run time, by a check naming the node.
 */
static int check_numel(struct graph *g, struct node *n, const struct shape *in,
		       const struct shape *out)
{
	struct dim a, b;
	bool ok = shape_numel(in, &a) && shape_numel(out, &b);

	if (ok && !dim_eq(a, b) && (!dim_is_const(a) || !dim_is_const(b))) {
		graph_add_check_eq(g, n, a, b);
		return 0;
	}
	if (!ok || !dim_eq(a, b)) {
		struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

		shape_print(g, in, &x);
		shape_print(g, out, &y);
		diag_error(g->ctx, "%s: cannot reshape %s to %s", node_loc(g, n), sb_str(&x),
			   sb_str(&y));
		sb_release(&x);
		sb_release(&y);
		return -1;
	}
	return 0;
}

/* A target dimension must be c * symbols with 0 <= c <= DIM_LIMIT. */
static bool target_dim_ok(struct dim d)
{
	return d.c >= 0 && d.c <= DIM_LIMIT;
}

/*
 * The -1 of a target shape: the input's element count over the others'
 * product, exact at compile time, or a derived symbol whose exactness the
 * run checks (check_numel: [seq, batch, 128] to [16, -1, 32] is
 * (128*seq*batch/512)).
 */
static bool reshape_minus(struct graph *g, struct node *n, const struct shape *x,
			  struct dim known, struct dim *out)
{
	struct dim total;

	if (shape_numel(x, &total) && dim_div(total, known, out))
		return true;
	if (shape_numel(x, &total) && known.c > 0 && !dim_is_const(total) &&
	    graph_derive_sym(g, SYM_DIV, total, known, out))
		return true;
	diag_error(g->ctx, "%s: cannot infer the -1 dimension of the target shape",
		   node_loc(g, n));
	return false;
}

int infer_reshape(struct graph *g, struct node *n)
{
	struct value *x;
	struct dim *v;
	int64_t cnt;
	struct shape s;
	int minus = -1;
	struct dim known = dim_const(1);
	bool allowzero = node_attr_int(n, "allowzero", 0) != 0;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_is_data(g, n, 1))
		return infer_data_count(g, n, 1, &cnt) < 0 ? -1
			: infer_set_data(g, n, 0, x->dtype, cnt);
	if (infer_sym_ints(g, n, 1, &v, &cnt) < 0)
		return -1;
	if (cnt > MAX_RANK) {
		diag_error(g->ctx, "%s: target rank %lld is more than %d", node_loc(g, n),
			   (long long)cnt, MAX_RANK);
		return -1;
	}
	s.rank = (int)cnt;
	for (int i = 0; i < s.rank; i++) {
		if (dim_is_const(v[i]) && v[i].c == -1) {
			if (minus >= 0) {
				diag_error(g->ctx, "%s: more than one -1 in the target shape",
					   node_loc(g, n));
				return -1;
			}
			minus = i;
			continue;
		}
		if (dim_is_const(v[i]) && v[i].c == 0 && !allowzero) {
			if (i >= x->shape.rank) {
				diag_error(g->ctx, "%s: 0 at position %d copies a dimension the "
					   "input does not have", node_loc(g, n), i);
				return -1;
			}
			s.d[i] = x->shape.d[i];
		} else if (!target_dim_ok(v[i])) {
			struct strbuf t = STRBUF_INIT;

			dim_print(g, v[i], &t);
			diag_error(g->ctx, "%s: target dimension %s is out of range",
				   node_loc(g, n), sb_str(&t));
			sb_release(&t);
			return -1;
		} else {
			s.d[i] = v[i];
		}
		if (!dim_mul(known, s.d[i], &known)) {
			diag_error(g->ctx, "%s: target shape is too large", node_loc(g, n));
			return -1;
		}
	}
	if (minus >= 0 && !reshape_minus(g, n, &x->shape, known, &s.d[minus]))
		return -1;
	if (check_numel(g, n, &x->shape, &s) < 0)
		return -1;
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

int infer_flatten(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s = { 2, { { 1, 0, { 0 } }, { 1, 0, { 0 } } } };
	int axis;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	axis = (int)node_attr_int(n, "axis", 1);
	if (axis < 0)
		axis += x->shape.rank;
	if (axis < 0 || axis > x->shape.rank) {
		diag_error(g->ctx, "%s: axis %d is out of range for rank %d", node_loc(g, n),
			   axis, x->shape.rank);
		return -1;
	}
	for (int i = 0; i < x->shape.rank; i++)
		if (!dim_mul(s.d[i < axis ? 0 : 1], x->shape.d[i], &s.d[i < axis ? 0 : 1])) {
			diag_error(g->ctx, "%s: shape is too large", node_loc(g, n));
			return -1;
		}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/* Reads optional constant axes input 1, normalised for rank r; count or -1. */
static int axes_input(struct graph *g, struct node *n, int r, int *axes)
{
	int64_t *v, cnt;

	if (!node_in(g, n, 1))
		return 0;
	if (infer_const_ints(g, n, 1, &v, &cnt) < 0)
		return -1;
	if (cnt > MAX_RANK) {
		diag_error(g->ctx, "%s: too many axes", node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < cnt; i++) {
		axes[i] = infer_axis(g, n, v[i], r);
		if (axes[i] < 0)
			return -1;
		for (int j = 0; j < i; j++)
			if (axes[j] == axes[i]) {
				diag_error(g->ctx, "%s: axis %d appears twice", node_loc(g, n),
					   axes[i]);
				return -1;
			}
	}
	return (int)cnt;
}

int infer_squeeze(struct graph *g, struct node *n)
{
	struct value *x;
	int axes[MAX_RANK], na;
	bool drop[MAX_RANK] = { false };
	struct shape s = { 0 };

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_is_data(g, n, 1)) {
		int64_t cnt;

		/* which axes go is decided at run time; how many is not */
		return infer_data_count(g, n, 1, &cnt) < 0 ? -1
			: infer_set_data(g, n, 0, x->dtype, x->shape.rank - cnt);
	}
	na = axes_input(g, n, x->shape.rank, axes);
	if (na < 0)
		return -1;
	if (!node_in(g, n, 1)) {
		for (int i = 0; i < x->shape.rank; i++)
			drop[i] = dim_is_const(x->shape.d[i]) && x->shape.d[i].c == 1;
	}
	for (int i = 0; i < na; i++) {
		struct dim d = x->shape.d[axes[i]];

		if (dim_is_const(d) && d.c != 1) {
			diag_error(g->ctx, "%s: cannot squeeze axis %d of size %lld",
				   node_loc(g, n), axes[i], (long long)d.c);
			return -1;
		}
		drop[axes[i]] = true;
	}
	for (int i = 0; i < x->shape.rank; i++)
		if (!drop[i])
			s.d[s.rank++] = x->shape.d[i];
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

int infer_unsqueeze(struct graph *g, struct node *n)
{
	struct value *x;
	int64_t *v, cnt;
	bool ins[MAX_RANK] = { false };
	struct shape s;
	int r, k = 0;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_is_data(g, n, 1))
		return infer_data_count(g, n, 1, &cnt) < 0 ? -1
			: infer_set_data(g, n, 0, x->dtype, x->shape.rank + cnt);
	if (infer_const_ints(g, n, 1, &v, &cnt) < 0)
		return -1;
	r = x->shape.rank + (int)cnt;
	if (r > MAX_RANK) {
		diag_error(g->ctx, "%s: result rank %d is more than %d", node_loc(g, n), r,
			   MAX_RANK);
		return -1;
	}
	for (int i = 0; i < cnt; i++) {
		int a = infer_axis(g, n, v[i], r);

		if (a < 0)
			return -1;
		if (ins[a]) {
			diag_error(g->ctx, "%s: axis %d appears twice", node_loc(g, n), a);
			return -1;
		}
		ins[a] = true;
	}
	s.rank = r;
	for (int i = 0; i < r; i++)
		s.d[i] = ins[i] ? dim_const(1) : x->shape.d[k++];
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/* ---- transpose ---- */

void transpose_perm(const struct node *n, int rank, int *perm)
{
	const int64_t *p;
	int cnt = node_attr_ints(n, "perm", &p);

	for (int i = 0; i < rank; i++)
		perm[i] = cnt == rank ? (int)p[i] : rank - 1 - i;
}

int infer_transpose(struct graph *g, struct node *n)
{
	struct value *x;
	int perm[MAX_RANK];
	bool seen[MAX_RANK] = { false };
	const int64_t *p;
	struct shape s;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (node_attr_ints(n, "perm", &p) >= 0 && node_attr_ints(n, "perm", &p) != x->shape.rank) {
		diag_error(g->ctx, "%s: perm has %d entries for rank %d", node_loc(g, n),
			   node_attr_ints(n, "perm", &p), x->shape.rank);
		return -1;
	}
	transpose_perm(n, x->shape.rank, perm);
	s.rank = x->shape.rank;
	for (int i = 0; i < s.rank; i++) {
		if (perm[i] < 0 || perm[i] >= s.rank || seen[perm[i]]) {
			diag_error(g->ctx, "%s: perm is not a permutation", node_loc(g, n));
			return -1;
		}
		seen[perm[i]] = true;
		s.d[i] = x->shape.d[perm[i]];
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

int lower_transpose(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *off = tir_int(L->b, 0);
	int perm[MAX_RANK];

	transpose_perm(L->n, x->shape.rank, perm);
	/*
	 * Parallel from 65536 elements (or a symbolic count): a copied element
	 * is about a quarter of the parallel step's work unit (transpose.blocks
	 * in c_strategies.c says what was measured).
	 */
	if (shape_is_static(&y->shape) && shape_numel_static(&y->shape) < 65536)
		lower_loops(L, &y->shape, idx);
	else
		lower_loops_parallel(L, &y->shape, idx);
	for (int k = 0; k < y->shape.rank; k++)
		off = tir_add(L->b, off, tir_mul(L->b, idx[k], lower_stride(L, &x->shape, perm[k])));
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx), tir_load(L->b, L->in[0], off));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- concat ---- */

int infer_concat(struct graph *g, struct node *n)
{
	struct value *x0;
	struct shape s;
	int axis;

	if (infer_arity(g, n, 1, -1, 1) < 0 || !(x0 = infer_input(g, n, 0)))
		return -1;
	axis = infer_axis(g, n, node_attr_int(n, "axis", 0), x0->shape.rank);
	if (axis < 0)
		return -1;
	s = x0->shape;
	for (int i = 1; i < n->n_in; i++) {
		struct value *x = infer_input(g, n, i);
		struct dim a = s.d[axis], b;

		if (!x)
			return -1;
		b = x->shape.d[axis];
		if (x->shape.rank != s.rank) {
			diag_error(g->ctx, "%s: input %d has rank %d, expected %d", node_loc(g, n), i,
				   x->shape.rank, s.rank);
			return -1;
		}
		for (int k = 0; k < s.rank; k++)
			if (k != axis && !dim_eq(s.d[k], x->shape.d[k])) {
				diag_error(g->ctx, "%s: input %d differs in dimension %d",
					   node_loc(g, n), i, k);
				return -1;
			}
		if (dim_is_const(a) && dim_is_const(b))
			s.d[axis] = dim_const(a.c + b.c);
		else if (dim_eq(a, b) && a.c < DIM_LIMIT)
			s.d[axis].c *= 2;
		else if (b.c == 0)
			;
		else if (a.c == 0)
			s.d[axis] = b;
		else if (graph_sym_add(g, a, b, &s.d[axis]))
			;	/* (seq+1): a derived symbol */
		else {
			diag_error(g->ctx, "%s: concatenating symbolic dimensions of different "
				   "forms is not supported", node_loc(g, n));
			return -1;
		}
	}
	infer_set(g, n, 0, x0->dtype, &s);
	return 0;
}

int lower_concat(struct lower *L)
{
	const struct value *y = lower_out(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	struct tir *base = tir_int(L->b, 0);

	if (axis < 0)
		axis += y->shape.rank;
	for (int i = 0; i < L->n->n_in; i++) {
		const struct value *x = lower_in(L, i);
		struct tir *idx[MAX_RANK], *oidx[MAX_RANK];

		lower_loops(L, &x->shape, idx);
		memcpy(oidx, idx, sizeof(idx));
		oidx[axis] = tir_add(L->b, idx[axis], base);
		tir_store(L->b, L->out[0], lower_offset(L, &y->shape, oidx),
			  tir_load(L->b, L->in[i], lower_offset(L, &x->shape, idx)));
		lower_end_loops(L, x->shape.rank);
		base = tir_add(L->b, base, tir_dim(L->b, x->shape.d[axis]));
	}
	return 0;
}

/* ---- gather ---- */

int infer_gather(struct graph *g, struct node *n)
{
	struct value *x, *ix;
	struct shape s = { 0 };
	int axis;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(ix = infer_input(g, n, 1)))
		return -1;
	if (ix->dtype != DTYPE_I64 && ix->dtype != DTYPE_I32) {
		diag_error(g->ctx, "%s: indices must be int32 or int64", node_loc(g, n));
		return -1;
	}
	axis = infer_axis(g, n, node_attr_int(n, "axis", 0), x->shape.rank);
	if (axis < 0)
		return -1;
	if (x->shape.rank - 1 + ix->shape.rank > MAX_RANK) {
		diag_error(g->ctx, "%s: result rank is more than %d", node_loc(g, n), MAX_RANK);
		return -1;
	}
	for (int i = 0; i < axis; i++)
		s.d[s.rank++] = x->shape.d[i];
	for (int i = 0; i < ix->shape.rank; i++)
		s.d[s.rank++] = ix->shape.d[i];
	for (int i = axis + 1; i < x->shape.rank; i++)
		s.d[s.rank++] = x->shape.d[i];
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * Gather's index for output index idx (its axes axis .. axis + q - 1 index
 * the indices), as a variable: negative indices count from the end; one
 * still outside the axis reads the nearest end.
 */
static struct tir *gather_index(struct lower *L, struct tir **idx, int axis)
{
	const struct value *x = lower_in(L, 0), *ix = lower_in(L, 1);
	struct tir *dimx = tir_dim(L->b, x->shape.d[axis]);
	struct tir *k = tir_load(L->b, L->in[1], lower_offset(L, &ix->shape, idx + axis));

	return tir_let(L->b, "k", lower_clamp_index(L, lower_wrap_index(L, k, dimx), dimx));
}

/*
 * The index is read and clamped once per row of the axes after axis, ahead
 * of their loops, so a row is a plain copy the C compiler vectorises
 * (computed per element, the clamp's selects kept BERT's embedding lookup,
 * 128 rows of 128 floats, scalar).
 */
int lower_gather(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *ix = lower_in(L, 1), *y = lower_out(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *k = NULL;
	int q = ix->shape.rank;

	if (axis < 0)
		axis += x->shape.rank;
	for (int i = 0; i < y->shape.rank; i++) {
		if (i == axis + q)
			k = gather_index(L, idx, axis);
		idx[i] = tir_loop(L->b, tir_dim(L->b, y->shape.d[i]));
	}
	if (!k)
		k = gather_index(L, idx, axis);
	for (int i = 0; i < axis; i++)
		xi[i] = idx[i];
	xi[axis] = k;
	for (int i = axis + 1; i < x->shape.rank; i++)
		xi[i] = idx[i - 1 + q];
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- slice ---- */

struct slice_axis {
	struct dim start;	/* symbolic when the axis or the bounds are */
	int64_t step;
	bool clamp;		/* bounds assumed inside the axis: start <= end <= len
				   is checked at run time, reads are clamped */
	struct dim end, len;	/* (clamp) */
};

/* An end at or past INT32_MAX means "to the end of the axis". */
static bool slice_to_end(struct dim e)
{
	return dim_is_const(e) && e.c >= INT32_MAX;
}

/*
 * One axis whose length or bounds are symbolic, step 1: the slice is
 * [b, e) with negative constants counting from the end; e - b is a
 * constant times symbols or a derived symbol (seq - 1), and the bounds are taken
 * to be inside the axis (they cannot be clamped at compile time): the
 * compiled model checks b <= e <= len once it knows the symbols.
 */
static bool slice_axis_sym(struct graph *g, struct dim len, struct dim b, struct dim e,
			   struct slice_axis *sl, struct dim *out)
{
	if (dim_is_const(b) && b.c < 0 && !graph_sym_add(g, len, b, &b))
		return false;
	if (slice_to_end(e))
		e = len;
	else if (dim_is_const(e) && e.c < 0 && !graph_sym_add(g, len, e, &e))
		return false;
	if (dim_is_const(b) && b.c > DIM_LIMIT)
		return false;
	if (b.c == INT64_MIN || !graph_sym_add(g, e, symint_neg(b), out) || out->c < 0)
		return false;
	sl->start = b;
	sl->step = 1;
	sl->clamp = !dim_eq(e, len) || !dim_is_const(b);
	sl->end = e;
	sl->len = len;
	return true;
}

/* Fills per-axis start/step for all axes and the output shape. */
static int slice_plan(struct graph *g, struct node *n, struct slice_axis *sl, struct shape *s)
{
	struct value *x = infer_input(g, n, 0);
	struct dim *st, *en;
	int64_t *ax = NULL, *sp = NULL, ns, ne, na = 0, nst = 0;
	int r;

	if (!x || infer_sym_ints(g, n, 1, &st, &ns) < 0 || infer_sym_ints(g, n, 2, &en, &ne) < 0)
		return -1;
	if (node_in(g, n, 3) && infer_const_ints(g, n, 3, &ax, &na) < 0)
		return -1;
	if (node_in(g, n, 4) && infer_const_ints(g, n, 4, &sp, &nst) < 0)
		return -1;
	r = x->shape.rank;
	*s = x->shape;
	for (int i = 0; i < r; i++) {
		sl[i].start = dim_const(0);
		sl[i].step = 1;
		sl[i].clamp = false;
	}
	if (ns != ne || (ax && na != ns) || (sp && nst != ns) || ns > r) {
		diag_error(g->ctx, "%s: starts, ends, axes and steps differ in length",
			   node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < ns; i++) {
		int a = ax ? infer_axis(g, n, ax[i], r) : i;
		int64_t step = sp ? sp[i] : 1, dim, b, e;

		if (a < 0)
			return -1;
		if (step == 0) {
			diag_error(g->ctx, "%s: slice step is 0", node_loc(g, n));
			return -1;
		}
		if (!dim_is_const(x->shape.d[a]) || !dim_is_const(st[i]) ||
		    !dim_is_const(en[i])) {
			if (step == 1 && slice_axis_sym(g, x->shape.d[a], st[i], en[i], &sl[a],
							&s->d[a]))
				continue;
			diag_error(g->ctx, "%s: slicing axis %d with symbolic bounds or length "
				   "is supported with step 1 when the result is a constant "
				   "times symbols", node_loc(g, n), a);
			return -1;
		}
		dim = x->shape.d[a].c;
		b = st[i].c < 0 ? st[i].c + dim : st[i].c;
		e = en[i].c < 0 ? en[i].c + dim : en[i].c;
		if (step > 0) {
			b = b < 0 ? 0 : b > dim ? dim : b;
			e = e < 0 ? 0 : e > dim ? dim : e;
			s->d[a] = dim_const(e > b ? (e - b + step - 1) / step : 0);
		} else {
			b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			s->d[a] = dim_const(b > e ? (b - e + (-step) - 1) / (-step) : 0);
		}
		sl[a].start = dim_const(b);
		sl[a].step = step;
	}
	return 0;
}

/* Whether starts, ends, axes or steps are known only at run time. */
static bool slice_is_data(struct graph *g, struct node *n)
{
	for (int i = 1; i < n->n_in && i <= 4; i++)
		if (infer_is_data(g, n, i))
			return true;
	return false;
}

/*
 * A Slice by run-time values: a data symbol for each dim of the axes it
 * slices (all of them when the axes are run-time values too; the others
 * keep x's dims), and per axis the start and step its shape function works
 * out (Slice's clamping rules) as parameters of the kernel.
 */
static int infer_slice_data(struct graph *g, struct node *n)
{
	struct value *x = infer_input(g, n, 0);
	const struct value *ax = node_in(g, n, 3);
	bool all = true, sliced[MAX_RANK] = { 0 };
	int64_t *axes = NULL, na = 0;
	struct shape s;

	if (!x)
		return -1;
	if (ax && value_const_ints(g, ax, &axes, &na) == 0 && na > 0) {
		all = false;
		for (int64_t i = 0; i < na; i++) {
			int64_t a = axes[i] < 0 ? axes[i] + x->shape.rank : axes[i];

			if (a < 0 || a >= x->shape.rank)
				all = true;	/* the shape function reports it */
			else
				sliced[a] = true;
		}
	}
	if (all) {
		if (infer_set_data(g, n, 0, x->dtype, x->shape.rank) < 0)
			return -1;
	} else {
		s = x->shape;
		for (int k = 0; k < s.rank; k++)
			if (sliced[k])
				s.d[k] = graph_data_sym(g, n->out[0], k);
		infer_set(g, n, 0, x->dtype, &s);
	}
	for (int k = 0; k < x->shape.rank; k++) {
		graph_data_param(g, n->out[0], "start", k);
		graph_data_param(g, n->out[0], "step", k);
	}
	return 0;
}

int infer_slice(struct graph *g, struct node *n)
{
	struct slice_axis sl[MAX_RANK];
	struct shape s;

	if (infer_arity(g, n, 3, 5, 1) < 0)
		return -1;
	if (slice_is_data(g, n))
		return infer_slice_data(g, n);
	if (slice_plan(g, n, sl, &s) < 0)
		return -1;
	for (int k = 0; k < s.rank; k++) {
		if (!sl[k].clamp)
			continue;
		if (!dim_eq(sl[k].end, sl[k].len))
			graph_add_check(g, n, sl[k].end, sl[k].len);
		if (!dim_is_const(sl[k].start))
			graph_add_check(g, n, sl[k].start, sl[k].end);
	}
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

int lower_slice(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct slice_axis sl[MAX_RANK];
	struct shape s;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK];

	if (node_is_dynamic(L->g, L->n)) {
		/* x[start + i * step] on every axis, as the shape function worked them out */
		lower_loops(L, &y->shape, idx);
		for (int k = 0; k < x->shape.rank; k++)
			xi[k] = tir_add(L->b, tir_dim(L->b, graph_data_param(L->g, L->n->out[0],
									  "start", k)),
					tir_mul(L->b, idx[k], tir_dim(L->b, graph_data_param(
						L->g, L->n->out[0], "step", k))));
		tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
			  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
		lower_end_loops(L, y->shape.rank);
		return 0;
	}
	if (slice_plan(L->g, (struct node *)L->n, sl, &s) < 0)
		return -1;
	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++) {
		xi[k] = tir_add(L->b, tir_dim(L->b, sl[k].start),
				tir_mul(L->b, idx[k], tir_int(L->b, sl[k].step)));
		if (sl[k].clamp)
			xi[k] = tir_bin(L->b, BIN_MAX, tir_int(L->b, 0), tir_bin(L->b, BIN_MIN, xi[k],
				tir_bin(L->b, BIN_SUB, tir_dim(L->b, x->shape.d[k]), tir_int(L->b, 1))));
	}
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- split ---- */

/*
 * The most outputs of a Split whose sizes are known only at run time: its
 * shape function binds one symbol per output (runtime/rt_model.h's
 * rt_shape.param).
 */
#define SPLIT_MAX_DATA 16

/*
 * A symbolic axis d split into n->n_out parts without sizes. Even parts
 * where d divides; else num_outputs (opset 18) takes ceil(d / n) each but
 * the last, d less the others; and an older Split (seq in 2) takes
 * (seq/2) each, the run checking that they add up to seq.
 */
static int split_symbolic(struct graph *g, struct node *n, struct dim d, struct dim *sizes)
{
	struct dim k = dim_const(n->n_out), q, back, up, last = dim_const(0);
	bool ok;

	if (dim_div(d, k, &q)) {
		for (int i = 0; i < n->n_out; i++)
			sizes[i] = q;
		return 0;
	}
	if (node_attr(n, "num_outputs"))
		ok = graph_sym_add(g, d, dim_const(n->n_out - 1), &up) &&
		     graph_derive_sym(g, SYM_DIV, up, k, &q) &&
		     dim_mul(q, dim_const(1 - n->n_out), &back) && graph_sym_add(g, d, back, &last);
	else
		ok = graph_derive_sym(g, SYM_DIV, d, k, &q) && dim_mul(q, k, &back);
	if (!ok) {
		diag_error(g->ctx, "%s: cannot split a symbolic axis evenly", node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < n->n_out; i++)
		sizes[i] = q;
	if (node_attr(n, "num_outputs"))
		sizes[n->n_out - 1] = last;
	else
		graph_add_check_eq(g, n, back, d);
	return 0;
}

static int split_sizes(struct graph *g, struct node *n, int axis, struct dim *sizes)
{
	struct value *x = node_in(g, n, 0);
	struct dim d = x->shape.d[axis];

	if (node_in(g, n, 1)) {
		struct dim *v, sum = dim_const(0);
		int64_t cnt;
		bool sum_ok = true;

		if (infer_sym_ints(g, n, 1, &v, &cnt) < 0)
			return -1;
		if (cnt != n->n_out) {
			diag_error(g->ctx, "%s: split has %lld sizes for %d outputs", node_loc(g, n),
				   (long long)cnt, n->n_out);
			return -1;
		}
		for (int i = 0; i < cnt; i++) {
			if (v[i].c < 0) {
				diag_error(g->ctx, "%s: negative split size", node_loc(g, n));
				return -1;
			}
			sizes[i] = v[i];
			sum_ok = sum_ok && symint_add(sum, v[i], &sum);
		}
		/* sizes that fit the symbolic axis for some lengths: checked at run time */
		if (sum_ok && !dim_eq(sum, d) && !dim_is_const(d)) {
			graph_add_check_eq(g, n, sum, d);
			return 0;
		}
		if (!sum_ok || !dim_eq(sum, d)) {
			diag_error(g->ctx, "%s: split sizes do not add up to the axis length",
				   node_loc(g, n));
			return -1;
		}
		return 0;
	}
	if (!dim_is_const(d))
		return split_symbolic(g, n, d, sizes);
	/* uneven: the last chunk is smaller (opset 18 rule; exact for even splits) */
	{
		int64_t chunk = (d.c + n->n_out - 1) / n->n_out, left = d.c;

		for (int i = 0; i < n->n_out; i++) {
			sizes[i] = dim_const(chunk < left ? chunk : left);
			left -= sizes[i].c;
		}
	}
	return 0;
}

/* Split-18's num_outputs: the number of outputs, and only without a split input. */
static int split_num_outputs(struct graph *g, struct node *n)
{
	int64_t k = node_attr_int(n, "num_outputs", 0);

	if (!node_attr(n, "num_outputs"))
		return 0;
	if (node_in(g, n, 1)) {
		diag_error(g->ctx, "%s: both input 'split' and attribute 'num_outputs' are given",
			   node_loc(g, n));
		return -1;
	}
	if (k != n->n_out) {
		diag_error(g->ctx, "%s: num_outputs is %lld but the node has %d outputs",
			   node_loc(g, n), (long long)k, n->n_out);
		return -1;
	}
	return 0;
}

int infer_split(struct graph *g, struct node *n)
{
	struct value *x;
	struct dim *sizes;
	int axis;

	if (infer_arity(g, n, 1, 2, -1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	axis = infer_axis(g, n, node_attr_int(n, "axis", 0), x->shape.rank);
	if (axis < 0 || split_num_outputs(g, n) < 0)
		return -1;
	sizes = arena_alloc(g->arena, sizeof(*sizes) * (size_t)n->n_out);
	if (node_in(g, n, 1) && infer_is_data(g, n, 1)) {
		/* sizes known only at run time: one data symbol per output */
		int64_t cnt;

		if (infer_data_count(g, n, 1, &cnt) < 0)
			return -1;
		if (cnt != n->n_out || n->n_out > SPLIT_MAX_DATA) {
			diag_error(g->ctx, "%s: split has %lld sizes for %d outputs (at most %d "
				   "when they are known only at run time)", node_loc(g, n),
				   (long long)cnt, n->n_out, SPLIT_MAX_DATA);
			return -1;
		}
		for (int i = 0; i < n->n_out; i++)
			sizes[i] = graph_data_sym(g, n->out[i], axis);
	} else if (split_sizes(g, n, axis, sizes) < 0) {
		return -1;
	}
	for (int i = 0; i < n->n_out; i++) {
		struct shape s = x->shape;

		s.d[axis] = sizes[i];
		infer_set(g, n, i, x->dtype, &s);
	}
	return 0;
}

int lower_split(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	struct tir *base = tir_int(L->b, 0);

	if (axis < 0)
		axis += x->shape.rank;
	for (int i = 0; i < L->n->n_out; i++) {
		const struct value *y = lower_out(L, i);
		struct tir *idx[MAX_RANK], *xi[MAX_RANK];

		lower_loops(L, &y->shape, idx);
		memcpy(xi, idx, sizeof(idx));
		xi[axis] = tir_add(L->b, idx[axis], base);
		tir_store(L->b, L->out[i], lower_offset(L, &y->shape, idx),
			  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
		lower_end_loops(L, y->shape.rank);
		base = tir_add(L->b, base, tir_dim(L->b, y->shape.d[axis]));
	}
	return 0;
}

/* ---- expand ---- */

int infer_expand(struct graph *g, struct node *n)
{
	struct value *x;
	struct dim *v;
	int64_t cnt;
	struct shape t, s;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_is_data(g, n, 1))
		return infer_data_count(g, n, 1, &cnt) < 0 ? -1
			: infer_set_data(g, n, 0, x->dtype, MAX(cnt, x->shape.rank));
	if (infer_sym_ints(g, n, 1, &v, &cnt) < 0)
		return -1;
	if (cnt > MAX_RANK) {
		diag_error(g->ctx, "%s: target rank is more than %d", node_loc(g, n), MAX_RANK);
		return -1;
	}
	t.rank = (int)cnt;
	for (int i = 0; i < cnt; i++) {
		if (!target_dim_ok(v[i])) {
			struct strbuf d = STRBUF_INIT;

			dim_print(g, v[i], &d);
			diag_error(g->ctx, "%s: target dimension %s is out of range",
				   node_loc(g, n), sb_str(&d));
			sb_release(&d);
			return -1;
		}
		t.d[i] = v[i];
	}
	if (!shape_broadcast(&x->shape, &t, &s)) {
		diag_error(g->ctx, "%s: input cannot be expanded to the target shape",
			   node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

int lower_expand(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK];

	lower_loops(L, &y->shape, idx);
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_bcast_offset(L, &x->shape, &y->shape, idx)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- Shape and Size ---- */

void shape_op_range(const struct node *n, int rank, int *b, int *e)
{
	int64_t s = node_attr_int(n, "start", 0), t = node_attr_int(n, "end", rank);

	s = s < 0 ? s + rank : s;
	t = t < 0 ? t + rank : t;
	*b = (int)(s < 0 ? 0 : s > rank ? rank : s);
	*e = (int)(t < 0 ? 0 : t > rank ? rank : t);
	if (*e < *b)
		*e = *b;
}

int infer_shape_op(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s = { 1, { { 0, 0, { 0 } } } };
	int b, e;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	shape_op_range(n, x->shape.rank, &b, &e);
	s.d[0] = dim_const(e - b);
	infer_set(g, n, 0, DTYPE_I64, &s);
	return 0;
}

int lower_shape_op(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	int b, e;

	shape_op_range(L->n, x->shape.rank, &b, &e);
	for (int i = b; i < e; i++)
		tir_store(L->b, L->out[0], tir_int(L->b, i - b), tir_dim(L->b, x->shape.d[i]));
	return 0;
}

int infer_size(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s = { 0 };

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	infer_set(g, n, 0, DTYPE_I64, &s);
	return 0;
}

int lower_size(struct lower *L)
{
	tir_store(L->b, L->out[0], tir_int(L->b, 0), lower_numel(L, &lower_in(L, 0)->shape));
	return 0;
}
