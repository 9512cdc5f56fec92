/*
 * ops_image.c - the image-space ops of opsets 18 to 20: CenterCropPad,
 * Col2Im and AffineGrid. Each output element is computed by one gather
 * from constant geometry (the target shape, the image and block shapes,
 * the output size), so every loop nest is parallel and writes once.
 */
#include "ops.h"

#include <string.h>

/* ---- CenterCropPad ---- */

/*
 * The output shape: axes (attribute, default all) take their length from
 * the constant input 'shape'. Cropped or padded axes must be constant in X.
 * -1 after a diagnostic.
 */
static int ccp_shape(struct graph *g, struct node *n, struct shape *out)
{
	struct value *x = infer_input(g, n, 0);
	const int64_t *axv;
	int64_t *len, cnt;
	int na, r;

	if (!x || infer_const_ints(g, n, 1, &len, &cnt) < 0)
		return -1;
	r = x->shape.rank;
	na = node_attr_ints(n, "axes", &axv);
	if (na < 0)
		na = r;
	if (cnt != na) {
		diag_error(g->ctx, "%s: shape has %lld values for %d axes", node_loc(g, n),
			   (long long)cnt, na);
		return -1;
	}
	*out = x->shape;
	for (int i = 0; i < na; i++) {
		int a = infer_axis(g, n, node_attr(n, "axes") ? axv[i] : i, r);

		if (a < 0)
			return -1;
		if (len[i] < 0 || len[i] > DIM_LIMIT) {
			diag_error(g->ctx, "%s: target length %lld is out of range", node_loc(g, n),
				   (long long)len[i]);
			return -1;
		}
		if (dim_eq(x->shape.d[a], dim_const(len[i])))
			continue;
		if (!dim_is_const(x->shape.d[a])) {
			diag_error(g->ctx, "%s: cropping or padding symbolic axis %d is not "
				   "supported", node_loc(g, n), a);
			return -1;
		}
		out->d[a] = dim_const(len[i]);
	}
	return 0;
}

/* Y is X with the target lengths on the chosen axes. */
int infer_centercroppad(struct graph *g, struct node *n)
{
	struct shape s;

	if (infer_arity(g, n, 2, 2, 1) < 0 || ccp_shape(g, n, &s) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/*
 * A cropped axis starts (in - out) / 2 into the input (rounded down); a
 * padded one puts (out - in) / 2 zeros first, the odd one at the end.
 */
int lower_centercroppad(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL, *v;

	lower_loops_parallel(L, &y->shape, idx);
	for (int k = 0; k < y->shape.rank; k++) {
		int64_t in, out;
		struct tir *c;

		xi[k] = idx[k];
		if (dim_eq(x->shape.d[k], y->shape.d[k]))
			continue;
		in = x->shape.d[k].c;
		out = y->shape.d[k].c;
		if (in > out) {
			xi[k] = tir_add(b, idx[k], tir_int(b, (in - out) / 2));
			continue;
		}
		xi[k] = tir_let(b, "p", tir_bin(b, BIN_SUB, idx[k], tir_int(b, (out - in) / 2)));
		c = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, xi[k], tir_int(b, 0)),
			    tir_bin(b, BIN_LT, xi[k], tir_int(b, in)));
		inside = inside ? tir_bin(b, BIN_LAND, inside, c) : c;
	}
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (inside)
		v = tir_select(b, inside, v, tir_const(b, x->dtype, 0));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), v);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- Col2Im ---- */

/* Geometry of Col2Im: r spatial dims of the image and of the block grid. */
struct col2im {
	int r;
	int64_t img[MAX_RANK], blk[MAX_RANK];	/* image and block extents */
	int64_t s[MAX_RANK], d[MAX_RANK];	/* strides, dilations */
	int64_t pb[MAX_RANK];			/* pads at the begin */
	int64_t nb[MAX_RANK];			/* blocks along each dim */
	int64_t bsz, l;				/* elements of a block, blocks in all */
};

/* Fills dst[0..r) from ints attribute name (count cnt), or def when absent. */
static int ints_attr_or(struct graph *g, struct node *n, const char *name, int cnt,
			int64_t *dst, int64_t def)
{
	const int64_t *v;
	int c = node_attr_ints(n, name, &v);

	if (c >= 0 && c != cnt) {
		diag_error(g->ctx, "%s: %s has %d values, expected %d", node_loc(g, n), name, c,
			   cnt);
		return -1;
	}
	for (int i = 0; i < cnt; i++)
		dst[i] = c >= 0 ? v[i] : def;
	return 0;
}

static int col2im_plan(struct graph *g, struct node *n, struct col2im *p)
{
	struct value *x = infer_input(g, n, 0);
	int64_t *img, *blk, ni, nb, pads[2 * MAX_RANK];

	if (!x || infer_const_ints(g, n, 1, &img, &ni) < 0 ||
	    infer_const_ints(g, n, 2, &blk, &nb) < 0)
		return -1;
	if (x->shape.rank != 3 || ni != nb || ni < 1 || ni > MAX_RANK - 2) {
		diag_error(g->ctx, "%s: input must be [N, C * block, L] with image_shape and "
			   "block_shape of one length", node_loc(g, n));
		return -1;
	}
	p->r = (int)ni;
	if (ints_attr_or(g, n, "strides", p->r, p->s, 1) < 0 ||
	    ints_attr_or(g, n, "dilations", p->r, p->d, 1) < 0 ||
	    ints_attr_or(g, n, "pads", 2 * p->r, pads, 0) < 0)
		return -1;
	p->bsz = 1;
	p->l = 1;
	for (int i = 0; i < p->r; i++) {
		int64_t span;

		p->img[i] = img[i];
		p->blk[i] = blk[i];
		p->pb[i] = pads[i];
		span = img[i] + pads[i] + pads[i + p->r] - p->d[i] * (blk[i] - 1) - 1;
		if (img[i] < 1 || blk[i] < 1 || p->s[i] < 1 || p->d[i] < 1 || pads[i] < 0 ||
		    pads[i + p->r] < 0 || span < 0 || img[i] > DIM_LIMIT || blk[i] > DIM_LIMIT) {
			diag_error(g->ctx, "%s: image, block, strides, dilations or pads are out "
				   "of range", node_loc(g, n));
			return -1;
		}
		p->nb[i] = span / p->s[i] + 1;
		p->bsz *= blk[i];
		p->l *= p->nb[i];
	}
	if (!dim_is_const(x->shape.d[1]) || x->shape.d[1].c % p->bsz ||
	    !dim_eq(x->shape.d[2], dim_const(p->l))) {
		diag_error(g->ctx, "%s: input must be [N, C * %lld, %lld]", node_loc(g, n),
			   (long long)p->bsz, (long long)p->l);
		return -1;
	}
	return 0;
}

/* Y is [N, C, image_shape...]. */
int infer_col2im(struct graph *g, struct node *n)
{
	struct col2im p;
	struct value *x;
	struct shape s = { 0 };

	if (infer_arity(g, n, 3, 3, 1) < 0 || col2im_plan(g, n, &p) < 0)
		return -1;
	x = node_in(g, n, 0);
	s.rank = p.r + 2;
	s.d[0] = x->shape.d[0];
	s.d[1] = dim_const(x->shape.d[1].c / p.bsz);
	for (int i = 0; i < p.r; i++)
		s.d[i + 2] = dim_const(p.img[i]);
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * Gather form of the fold: image position q takes, for each block offset
 * k, the column of the block whose window puts k at q, when there is one:
 * q + pad - k * dilation must be a multiple of the stride within the grid.
 */
int lower_col2im(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *cond = NULL, *acc, *row, *col, *xi[3];
	struct col2im p;

	if (col2im_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, oi);
	acc = tir_let(b, "acc", tir_const(b, y->dtype, 0));
	col = tir_int(b, 0);
	for (int i = 0; i < p.r; i++) {
		struct tir *q, *c;

		ki[i] = tir_loop(b, tir_int(b, p.blk[i]));
		q = tir_let(b, "q", tir_bin(b, BIN_SUB, tir_add(b, oi[i + 2], tir_int(b, p.pb[i])),
					    tir_mul(b, ki[i], tir_int(b, p.d[i]))));
		c = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, q, tir_int(b, 0)),
			    tir_bin(b, BIN_LT, q, tir_int(b, p.nb[i] * p.s[i])));
		if (p.s[i] > 1)
			c = tir_bin(b, BIN_LAND, c, tir_bin(b, BIN_EQ, tir_bin(b, BIN_MOD, q,
						tir_int(b, p.s[i])), tir_int(b, 0)));
		cond = cond ? tir_bin(b, BIN_LAND, cond, c) : c;
		col = tir_add(b, tir_mul(b, col, tir_int(b, p.nb[i])),
			      p.s[i] > 1 ? tir_bin(b, BIN_DIV, q, tir_int(b, p.s[i])) : q);
	}
	/* row = c * bsz + the block offset, row-major over the block dims */
	row = tir_int(b, 0);
	for (int i = 0; i < p.r; i++)
		row = tir_add(b, tir_mul(b, row, tir_int(b, p.blk[i])), ki[i]);
	row = tir_add(b, tir_mul(b, oi[1], tir_int(b, p.bsz)), row);
	tir_if(b, cond);
	xi[0] = oi[0];
	xi[1] = row;
	xi[2] = col;
	tir_assign(b, acc, tir_add(b, acc, tir_load(b, L->in[0],
						    lower_offset(L, &x->shape, xi))));
	tir_end(b);
	lower_end_loops(L, p.r);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- AffineGrid ---- */

/* The constant size input [N, C, (D,) H, W]; its count (4 or 5), or -1. */
static int affine_size(struct graph *g, struct node *n, int64_t **size)
{
	struct value *th = infer_input(g, n, 0);
	int64_t cnt;

	if (!th || infer_const_ints(g, n, 1, size, &cnt) < 0)
		return -1;
	if (!dtype_is_float(th->dtype)) {
		diag_error(g->ctx, "%s: theta has type %s (expected a float type)", node_loc(g, n),
			   dtype_name(th->dtype));
		return -1;
	}
	if ((cnt != 4 && cnt != 5) || th->shape.rank != 3 ||
	    !dim_eq(th->shape.d[1], dim_const(cnt - 2)) ||
	    !dim_eq(th->shape.d[2], dim_const(cnt - 1))) {
		diag_error(g->ctx, "%s: theta must be [N, 2, 3] with a size of 4 values or "
			   "[N, 3, 4] with 5", node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < cnt; i++)
		if ((*size)[i] < 1 || (*size)[i] > DIM_LIMIT) {
			diag_error(g->ctx, "%s: size %lld is out of range", node_loc(g, n),
				   (long long)(*size)[i]);
			return -1;
		}
	return (int)cnt;
}

/* grid is [N, H, W, 2] or [N, D, H, W, 3], theta's type. */
int infer_affinegrid(struct graph *g, struct node *n)
{
	struct shape s = { 0 };
	int64_t *size;
	int cnt;

	if (infer_arity(g, n, 2, 2, 1) < 0 || (cnt = affine_size(g, n, &size)) < 0)
		return -1;
	s.rank = cnt;
	s.d[0] = node_in(g, n, 0)->shape.d[0];
	for (int i = 2; i < cnt; i++)
		s.d[i - 1] = dim_const(size[i]);
	s.d[cnt - 1] = dim_const(cnt - 2);
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/*
 * grid[n, ..., j] = theta[n, j, :] . (x, y, (z,) 1), the base coordinates
 * in [-1, 1]: -1 + 2 i / (len - 1) with align_corners, else the pixel
 * centres -1 + (2 i + 1) / len.
 */
int lower_affinegrid(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *th = lower_in(L, 0), *y = lower_out(L, 0);
	bool align = node_attr_int(L->n, "align_corners", 0) != 0;
	enum dtype t = y->dtype;
	int r = y->shape.rank - 2;	/* spatial dims */
	struct tir *idx[MAX_RANK], *base[MAX_RANK], *acc, *ti[3];

	lower_loops_parallel(L, &y->shape, idx);
	for (int i = 0; i < r; i++) {
		int64_t len = y->shape.d[i + 1].c;
		struct tir *c = tir_mul(b, tir_const(b, t, 2), tir_cast(b, t, idx[i + 1]));
		struct tir *one = tir_const(b, t, 1);

		if (align && len == 1)
			c = tir_const(b, t, -1);
		else if (align)
			c = tir_bin(b, BIN_DIV, c, tir_const(b, t, (double)(len - 1)));
		else
			c = tir_bin(b, BIN_DIV, tir_add(b, c, one), tir_const(b, t, (double)len));
		if (!align || len > 1)
			c = tir_bin(b, BIN_SUB, c, one);
		/* the last spatial dim is x, the coefficient of theta column 0 */
		base[r - 1 - i] = c;
	}
	ti[0] = idx[0];
	ti[1] = idx[r + 1];
	ti[2] = tir_int(b, r);
	acc = tir_load(b, L->in[0], lower_offset(L, &th->shape, ti));
	for (int k = 0; k < r; k++) {
		ti[2] = tir_int(b, k);
		acc = tir_add(b, acc, tir_mul(b, tir_load(b, L->in[0],
							 lower_offset(L, &th->shape, ti)), base[k]));
	}
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}
