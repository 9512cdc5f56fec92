/*
 * ops_layout.c - ops whose every output element is one input element at
 * an index computed from its own, or a fill value: Tile, Pad, Trilu,
 * DepthToSpace and SpaceToDepth.
 *
 * Inputs that decide an output shape (repeats, pads) must be constants;
 * the other inputs (Pad's fill value, Trilu's k) are read by the kernel at
 * run time.
 */
#include "ops.h"

#include <string.h>

/* ---- Tile ---- */

/* Output: each dimension times its repeat (constant or computed from shapes). */
int infer_tile(struct graph *g, struct node *n)
{
	struct value *x;
	struct dim *rep;
	int64_t cnt;
	struct shape s;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (infer_is_data(g, n, 1)) {
		if (infer_data_count(g, n, 1, &cnt) < 0)
			return -1;
		if (cnt == x->shape.rank)
			return infer_set_data(g, n, 0, x->dtype, cnt);
	} else if (infer_sym_ints(g, n, 1, &rep, &cnt) < 0) {
		return -1;
	}
	if (cnt != x->shape.rank) {
		diag_error(g->ctx, "%s: repeats has %lld entries for rank %d", node_loc(g, n),
			   (long long)cnt, x->shape.rank);
		return -1;
	}
	s = x->shape;
	for (int k = 0; k < s.rank; k++) {
		if (rep[k].c < 0 || rep[k].c > DIM_LIMIT ||
		    !dim_mul(x->shape.d[k], rep[k], &s.d[k])) {
			diag_error(g->ctx, "%s: repeat %lld on axis %d is out of range",
				   node_loc(g, n), (long long)rep[k].c, k);
			return -1;
		}
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/* y[idx] = x[idx mod input dims]. */
int lower_tile(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK];

	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++)
		xi[k] = dim_eq(x->shape.d[k], y->shape.d[k]) ? idx[k]
			: tir_bin(L->b, BIN_MOD, idx[k], tir_dim(L->b, x->shape.d[k]));
	tir_store(L->b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- Pad ---- */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

struct pad_plan {
	enum pad_mode mode;
	int64_t pb[MAX_RANK], pe[MAX_RANK];	/* pads at the begin / end of each axis */
	struct shape out;
};

/*
 * Spreads pads over the axes: all of them, or (opset 18+) those of the
 * constant input 3, the other axes unpadded. -1 after a diagnostic.
 */
static int pad_axes(struct graph *g, struct node *n, int r, int64_t np, const int64_t *pads,
		    struct pad_plan *p)
{
	int64_t all[MAX_RANK], *axes = all, na = r;

	for (int k = 0; k < r; k++) {
		all[k] = k;
		p->pb[k] = p->pe[k] = 0;
	}
	if (node_in(g, n, 3) && infer_const_ints(g, n, 3, &axes, &na) < 0)
		return -1;
	if (np != 2 * na) {
		diag_error(g->ctx, "%s: pads has %lld values, expected %lld", node_loc(g, n),
			   (long long)np, 2 * (long long)na);
		return -1;
	}
	for (int i = 0; i < na; i++) {
		int a = infer_axis(g, n, axes[i], r);

		if (a < 0)
			return -1;
		p->pb[a] = pads[i];
		p->pe[a] = pads[i + na];
	}
	return 0;
}

/*
 * A symbolic axis of length d padded to d + pb + pe: a derived symbol, and
 * run-time checks that the result is not negative and (but for constant
 * padding) that an axis padded outward is not empty. -1 after a diagnostic.
 */
static int pad_symbolic(struct graph *g, struct node *n, struct pad_plan *p, int k)
{
	struct dim d = p->out.d[k];
	int64_t add = p->pb[k] + p->pe[k];

	if (p->pb[k] < -DIM_LIMIT || p->pb[k] > DIM_LIMIT || p->pe[k] < -DIM_LIMIT ||
	    p->pe[k] > DIM_LIMIT || !graph_sym_add(g, d, dim_const(add), &p->out.d[k])) {
		diag_error(g->ctx, "%s: pads on symbolic axis %d give a length collagec cannot "
			   "represent", node_loc(g, n), k);
		return -1;
	}
	if (add < 0)
		graph_add_check(g, n, dim_const(-add), d);
	if (p->mode != PAD_CONSTANT && (p->pb[k] > 0 || p->pe[k] > 0))
		graph_add_check(g, n, dim_const(1), d);
	return 0;
}

static int pad_plan(struct graph *g, struct node *n, struct pad_plan *p)
{
	static const char *const modes[] = { "constant", "reflect", "edge", "wrap" };
	const char *mode = node_attr_str(n, "mode", "constant");
	struct value *x = infer_input(g, n, 0);
	int64_t *pads, np;
	int r;

	if (!x || infer_const_ints(g, n, 1, &pads, &np) < 0)
		return -1;
	r = x->shape.rank;
	for (p->mode = PAD_CONSTANT; p->mode <= PAD_WRAP; p->mode++)
		if (!strcmp(mode, modes[p->mode]))
			break;
	if (p->mode > PAD_WRAP) {
		diag_error(g->ctx, "%s: pad mode '%s' is not supported", node_loc(g, n), mode);
		return -1;
	}
	if (pad_axes(g, n, r, np, pads, p) < 0)
		return -1;
	p->out = x->shape;
	for (int k = 0; k < r; k++) {
		struct dim d = x->shape.d[k];
		int64_t len;

		if (!p->pb[k] && !p->pe[k])
			continue;
		if (!dim_is_const(d)) {
			if (pad_symbolic(g, n, p, k) < 0)
				return -1;
			continue;
		}
		len = -1;
		if (p->pb[k] >= -DIM_LIMIT && p->pb[k] <= DIM_LIMIT && p->pe[k] >= -DIM_LIMIT &&
		    p->pe[k] <= DIM_LIMIT)
			len = d.c + p->pb[k] + p->pe[k];
		if (len < 0 || len > DIM_LIMIT) {
			diag_error(g->ctx, "%s: pads on axis %d give an invalid length",
				   node_loc(g, n), k);
			return -1;
		}
		if (p->mode != PAD_CONSTANT && d.c == 0 && len > 0) {
			diag_error(g->ctx, "%s: cannot %s-pad the empty axis %d", node_loc(g, n),
				   mode, k);
			return -1;
		}
		p->out.d[k] = dim_const(len);
	}
	return 0;
}

/* Whether the pads or the axes are known only at run time. */
static bool pad_is_data(struct graph *g, struct node *n)
{
	return infer_is_data(g, n, 1) || infer_is_data(g, n, 3);
}

/*
 * Output: each dimension plus its pads (negative pads crop): constants, or
 * for pads known only at run time data symbols, with each axis's begin pad a
 * parameter of the kernel.
 */
int infer_pad(struct graph *g, struct node *n)
{
	struct pad_plan p;
	struct value *v, *x;

	if (infer_arity(g, n, 2, 4, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !infer_input(g, n, 1))
		return -1;
	if (pad_is_data(g, n)) {
		if (infer_set_data(g, n, 0, x->dtype, x->shape.rank) < 0)
			return -1;
		for (int k = 0; k < x->shape.rank; k++) {
			graph_data_param(g, n->out[0], "begin", k);
			graph_data_param(g, n->out[0], "end", k);
		}
		return 0;
	}
	if (pad_plan(g, n, &p) < 0)
		return -1;
	if ((v = node_in(g, n, 2)) && v->has_shape && shape_is_static(&v->shape) &&
	    shape_numel_static(&v->shape) != 1) {
		diag_error(g->ctx, "%s: constant_value must hold one element", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &p.out);
	return 0;
}

/*
 * Source index on one axis of length d for padded position s (s may be
 * outside [0, d)); d a constant, or NULL with dd the axis's length when only
 * the run knows whether the axis is padded (and d may be 1).
 */
static struct tir *pad_source(struct lower *L, enum pad_mode mode, struct tir *s, int64_t d,
			      struct tir *dd)
{
	struct tir_builder *b = L->b;
	struct tir *m, *p, *len = dd ? dd : tir_int(b, d);

	switch (mode) {
	case PAD_EDGE:
		return lower_clamp_index(L, s, len);
	case PAD_WRAP:
		return tir_bin(b, BIN_MOD, tir_add(b, tir_bin(b, BIN_MOD, s, len), len), len);
	case PAD_REFLECT:
		/* reflection without repeating the edge has period 2 * (d - 1) */
		if (!dd && d == 1)
			return tir_int(b, 0);
		p = tir_mul(b, tir_int(b, 2), tir_bin(b, BIN_SUB, len, tir_int(b, 1)));
		if (dd)		/* length 1: period 1, everything maps to 0 */
			p = tir_bin(b, BIN_MAX, p, tir_int(b, 1));
		m = tir_bin(b, BIN_MOD, tir_add(b, tir_bin(b, BIN_MOD, s, p), p), p);
		m = tir_let(b, "m", m);
		return tir_select(b, tir_bin(b, BIN_LT, m, len), m, tir_bin(b, BIN_SUB, p, m));
	default:
		return s;
	}
}

/* The fill value of constant padding (constant_value, else 0). */
static struct tir *pad_fill(struct lower *L, enum dtype t)
{
	return L->in[2] ? tir_cast(L->b, t, tir_load(L->b, L->in[2], tir_int(L->b, 0)))
		: tir_const(L->b, t, 0);
}

/* Pads known at run time: every axis shifted by its begin pad and mapped back. */
static int lower_pad_data(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	const char *mode = node_attr_str(L->n, "mode", "constant");
	enum pad_mode pm = !strcmp(mode, "reflect") ? PAD_REFLECT : !strcmp(mode, "edge")
		? PAD_EDGE : !strcmp(mode, "wrap") ? PAD_WRAP : PAD_CONSTANT;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL, *v;

	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++) {
		struct tir *d = tir_dim(b, x->shape.d[k]);

		xi[k] = tir_bin(b, BIN_SUB, idx[k], tir_dim(b, graph_data_param(
			L->g, L->n->out[0], "begin", k)));
		if (pm != PAD_CONSTANT) {
			xi[k] = pad_source(L, pm, xi[k], 0, d);
		} else {
			struct tir *c = lower_in_range(L, xi[k], d);

			inside = inside ? tir_bin(b, BIN_LAND, inside, c) : c;
		}
	}
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (inside)
		v = tir_select(b, inside, v, pad_fill(L, x->dtype));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), v);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* Fill value outside the input (constant), else the reflected, clamped or wrapped source. */
int lower_pad(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL, *v;
	struct pad_plan p;

	if (node_is_dynamic(L->g, L->n))
		return lower_pad_data(L);
	if (pad_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	lower_loops(L, &y->shape, idx);
	for (int k = 0; k < x->shape.rank; k++) {
		struct dim xd = x->shape.d[k];
		int64_t d = xd.c;
		/* a symbolic axis's length is read at run time */
		struct tir *dd = dim_is_const(xd) ? NULL : tir_dim(b, xd);

		if (!p.pb[k] && !p.pe[k]) {
			xi[k] = idx[k];
			continue;
		}
		xi[k] = tir_add(b, idx[k], tir_int(b, -p.pb[k]));
		if (p.mode != PAD_CONSTANT) {
			xi[k] = pad_source(L, p.mode, xi[k], d, dd);
		} else if (p.pb[k] > 0 || p.pe[k] > 0) {
			/* only an axis padded at an end can step outside the input */
			struct tir *c = lower_in_range(L, xi[k], dd ? dd : tir_int(b, d));

			inside = inside ? tir_bin(b, BIN_LAND, inside, c) : c;
		}
	}
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (inside)
		v = tir_select(b, inside, v, pad_fill(L, x->dtype));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), v);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- Trilu ---- */

/* Output: the input's shape; k (optional) must be an int64 scalar. */
int infer_trilu(struct graph *g, struct node *n)
{
	struct value *x, *k;

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->shape.rank < 2) {
		diag_error(g->ctx, "%s: input must have rank 2 or more", node_loc(g, n));
		return -1;
	}
	if (node_in(g, n, 1)) {
		if (!(k = infer_input(g, n, 1)))
			return -1;
		if (k->dtype != DTYPE_I64 || k->shape.rank > 1) {
			diag_error(g->ctx, "%s: k must be an int64 scalar", node_loc(g, n));
			return -1;
		}
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* Keeps x[..., i, j] where j - i >= k (upper) or j - i <= k (lower); k is read at run time. */
int lower_trilu(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	int r = x->shape.rank;
	bool upper = node_attr_int(L->n, "upper", 1) != 0;
	struct tir *idx[MAX_RANK], *k, *off, *keep;
	int64_t *kv, cnt;

	if (!L->in[1])
		k = tir_int(b, 0);
	else if (value_const_ints(L->g, lower_in(L, 1), &kv, &cnt) == 0 && cnt == 1)
		k = tir_int(b, kv[0]);
	else
		k = tir_let(b, "k", tir_load(b, L->in[1], tir_int(b, 0)));
	lower_loops(L, &x->shape, idx);
	keep = tir_bin(b, upper ? BIN_GE : BIN_LE, tir_bin(b, BIN_SUB, idx[r - 1], idx[r - 2]), k);
	off = lower_offset(L, &x->shape, idx);
	tir_store(b, L->out[0], off, tir_select(b, keep, tir_load(b, L->in[0], off),
						 tir_const(b, x->dtype, 0)));
	lower_end_loops(L, r);
	return 0;
}

/* ---- DepthToSpace and SpaceToDepth ---- */

static int64_t blocksize(const struct node *n)
{
	return node_attr_int(n, "blocksize", 0);
}

static bool crd_mode(const struct node *n)
{
	return !strcmp(node_attr_str(n, "mode", "DCR"), "CRD");
}

/* DepthToSpace and SpaceToDepth on NCHW: moves blocksize^2 between C and H, W. */
int infer_depthtospace(struct graph *g, struct node *n)
{
	struct value *x;
	int64_t bs = blocksize(n);
	bool d2s = n->op == OP_DEPTHTOSPACE;
	const char *mode = node_attr_str(n, "mode", "DCR");
	struct shape s;
	bool ok;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->shape.rank != 4) {
		diag_error(g->ctx, "%s: input must have rank 4, not %d", node_loc(g, n),
			   x->shape.rank);
		return -1;
	}
	if (bs <= 0 || bs > 65536) {
		diag_error(g->ctx, "%s: blocksize %lld is out of range", node_loc(g, n),
			   (long long)bs);
		return -1;
	}
	/* SpaceToDepth has a mode from opset 28 on */
	if (strcmp(mode, "DCR") && strcmp(mode, "CRD")) {
		diag_error(g->ctx, "%s: mode '%s' is not supported (expected DCR or CRD)",
			   node_loc(g, n), mode);
		return -1;
	}
	s = x->shape;
	if (d2s)
		ok = dim_div(x->shape.d[1], dim_const(bs * bs), &s.d[1]) &&
		     dim_mul(x->shape.d[2], dim_const(bs), &s.d[2]) &&
		     dim_mul(x->shape.d[3], dim_const(bs), &s.d[3]);
	else
		ok = dim_mul(x->shape.d[1], dim_const(bs * bs), &s.d[1]) &&
		     dim_div(x->shape.d[2], dim_const(bs), &s.d[2]) &&
		     dim_div(x->shape.d[3], dim_const(bs), &s.d[3]);
	if (!ok) {
		struct strbuf sb = STRBUF_INIT;

		shape_print(g, &x->shape, &sb);
		if (d2s)
			diag_error(g->ctx, "%s: channels of input %s are not divisible by "
				   "blocksize^2 = %lld", node_loc(g, n), sb_str(&sb),
				   (long long)(bs * bs));
		else
			diag_error(g->ctx, "%s: height and width of input %s must be divisible "
				   "by blocksize %lld", node_loc(g, n), sb_str(&sb), (long long)bs);
		sb_release(&sb);
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * DepthToSpace: y[n, c, h*b + i, w*b + j] = x[n, ch, h, w] with
 * ch = (i*b + j)*C' + c (DCR) or c*b*b + i*b + j (CRD).
 * SpaceToDepth, its inverse: y[n, ch, h, w] = x[n, c, h*b + i, w*b + j]
 * with ch as above for C input channels (its mode came with opset 28).
 */
int lower_depthtospace(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[4], *xi[4], *bs = tir_int(b, blocksize(L->n)), *i, *j;

	lower_loops(L, &y->shape, idx);
	xi[0] = idx[0];
	if (L->n->op == OP_DEPTHTOSPACE) {
		i = tir_bin(b, BIN_MOD, idx[2], bs);
		j = tir_bin(b, BIN_MOD, idx[3], bs);
		xi[2] = tir_bin(b, BIN_DIV, idx[2], bs);
		xi[3] = tir_bin(b, BIN_DIV, idx[3], bs);
		if (crd_mode(L->n))
			xi[1] = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, idx[1], bs), i), bs),
					j);
		else
			xi[1] = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, i, bs), j),
						   tir_dim(b, y->shape.d[1])), idx[1]);
	} else {
		struct tir *c = tir_dim(b, x->shape.d[1]), *bb = tir_int(b, blocksize(L->n) *
									     blocksize(L->n));
		bool crd = crd_mode(L->n);
		struct tir *ij = tir_let(b, "ij", tir_bin(b, crd ? BIN_MOD : BIN_DIV, idx[1],
							  crd ? bb : c));

		xi[1] = tir_bin(b, crd ? BIN_DIV : BIN_MOD, idx[1], crd ? bb : c);
		xi[2] = tir_add(b, tir_mul(b, idx[2], bs), tir_bin(b, BIN_DIV, ij, bs));
		xi[3] = tir_add(b, tir_mul(b, idx[3], bs), tir_bin(b, BIN_MOD, ij, bs));
	}
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx),
		  tir_load(b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, 4);
	return 0;
}
