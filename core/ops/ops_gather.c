/*
 * ops_gather.c - indexing by index tensors: GatherElements, GatherND,
 * ScatterElements (and Scatter, its opset 9-10 name), ScatterND and
 * TensorScatter.
 */
#include "ops.h"

#include <string.h>

/* ---- shared helpers ---- */

/* Flat copy of input 0 into output 0, before a scatter updates it. */
static void copy_input(struct lower *L)
{
	struct tir *i = tir_loop(L->b, lower_numel(L, &lower_out(L, 0)->shape));

	tir_mark_parallel(L->b);
	tir_store(L->b, L->out[0], i, tir_load(L->b, L->in[0], i));
	tir_end(L->b);
}

/* ---- GatherElements ---- */

/* Output: the indices' shape; data and indices have the same rank. */
int infer_gatherelements(struct graph *g, struct node *n)
{
	struct value *x, *ix;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(ix = infer_input(g, n, 1)) || infer_check_index_type(g, n, ix) < 0)
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

	if (infer_check_index_type(g, n, ix) < 0)
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
			return infer_bad_shapes(g, n, "batch dimensions of data and indices differ",
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
	if (k < 0 || infer_check_rank(g, n, ix->shape.rank - 1 + x->shape.rank - (int)batch - k) < 0)
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
			struct tir *c = lower_in_range(L, v, dim);

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
	    infer_check_index_type(g, n, *ix) < 0 || scatter_reduction(g, n) < 0)
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
		return infer_bad_shapes(g, n, "data and indices must have the same non-zero rank",
					&x->shape, &ix->shape);
	if (!shape_eq(&ix->shape, &up->shape))
		return infer_bad_shapes(g, n, "indices and updates differ in shape", &ix->shape,
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
	tir_if(b, lower_in_range(L, xi[axis], dim));
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
	if (infer_check_rank(g, n, ix->shape.rank - 1 + x->shape.rank - k) < 0)
		return -1;
	for (int d = 0; d < ix->shape.rank - 1; d++)
		s.d[s.rank++] = ix->shape.d[d];
	for (int d = k; d < x->shape.rank; d++)
		s.d[s.rank++] = x->shape.d[d];
	if (!shape_eq(&s, &up->shape))
		return infer_bad_shapes(g, n, "updates must have shape indices[:-1] + data[k:]",
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

/* ---- TensorScatter (opset 24): a key/value cache update ---- */

/* The sequence axis of TensorScatter n on a rank r cache; -1 after a diagnostic. */
static int tscatter_axis(struct graph *g, struct node *n, int r)
{
	int a = infer_axis(g, n, node_attr_int(n, "axis", -2), r);

	if (a == 0) {
		diag_error(g->ctx, "%s: axis must not be 0 (the batch axis)", node_loc(g, n));
		return -1;
	}
	return a;
}

static bool tscatter_circular(const struct node *n)
{
	return !strcmp(node_attr_str(n, "mode", "linear"), "circular");
}

/*
 * present_cache: past_cache's type and shape. update must be shaped like
 * the cache except along axis; write_indices, when given, int64 [batch].
 */
int infer_tensorscatter(struct graph *g, struct node *n)
{
	struct value *c, *u, *w = NULL;
	const char *mode = node_attr_str(n, "mode", "linear");
	int a;

	if (infer_arity(g, n, 2, 3, 1) < 0 || !(c = infer_input(g, n, 0)) ||
	    !(u = infer_input(g, n, 1)) || (node_in(g, n, 2) && !(w = infer_input(g, n, 2))))
		return -1;
	if (strcmp(mode, "linear") && strcmp(mode, "circular")) {
		diag_error(g->ctx, "%s: mode '%s' is not supported (expected linear or circular)",
			   node_loc(g, n), mode);
		return -1;
	}
	if (c->shape.rank < 2) {
		diag_error(g->ctx, "%s: past_cache must have rank 2 or more", node_loc(g, n));
		return -1;
	}
	if ((a = tscatter_axis(g, n, c->shape.rank)) < 0)
		return -1;
	if (u->dtype != c->dtype) {
		diag_error(g->ctx, "%s: update is %s but past_cache is %s", node_loc(g, n),
			   dtype_name(u->dtype), dtype_name(c->dtype));
		return -1;
	}
	if (u->shape.rank != c->shape.rank)
		return infer_bad_shapes(g, n, "update must have past_cache's rank", &u->shape,
					&c->shape);
	for (int d = 0; d < c->shape.rank; d++)
		if (d != a && !dim_eq(u->shape.d[d], c->shape.d[d]))
			return infer_bad_shapes(g, n, "update must have past_cache's dims but "
						"along axis", &u->shape, &c->shape);
	if (w && (w->dtype != DTYPE_I64 || w->shape.rank != 1 ||
		  !dim_eq(w->shape.d[0], c->shape.d[0]))) {
		diag_error(g->ctx, "%s: write_indices must be int64 [batch]", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, c->dtype, &c->shape);
	return 0;
}

/*
 * Copies the cache, then writes update's row s of batch entry b at
 * write_indices[b] + s along the axis (modulo the cache's length in
 * circular mode). A row that would land outside the cache (linear mode
 * with write_indices + sequence_length past the end, which ONNX forbids,
 * or a negative index) is not written, rather than writing out of bounds.
 */
int lower_tensorscatter(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *c = lower_in(L, 0), *u = lower_in(L, 1);
	int a = tscatter_axis(L->g, (struct node *)L->n, c->shape.rank);
	struct tir *idx[MAX_RANK], *ci[MAX_RANK], *max, *at, *ok;

	if (a < 0)
		return -1;
	copy_input(L);
	lower_loops(L, &u->shape, idx);
	memcpy(ci, idx, sizeof(idx));
	max = tir_dim(b, c->shape.d[a]);
	at = idx[a];
	if (lower_in(L, 2))
		at = tir_add(b, tir_load(b, L->in[2], idx[0]), at);
	if (tscatter_circular(L->n))
		at = tir_bin(b, BIN_MOD, tir_add(b, tir_bin(b, BIN_MOD, at, max), max), max);
	ci[a] = tir_let(b, "at", at);
	ok = lower_in_range(L, ci[a], max);
	tir_if(b, ok);
	tir_store(b, L->out[0], lower_offset(L, &c->shape, ci),
		  tir_load(b, L->in[1], lower_offset(L, &u->shape, idx)));
	tir_end(b);
	lower_end_loops(L, u->shape.rank);
	return 0;
}
