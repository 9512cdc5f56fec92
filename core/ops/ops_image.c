/*
 * ops_image.c - the image-space ops of opsets 16 to 20: CenterCropPad,
 * Col2Im, AffineGrid and GridSample. Each output element is computed by one
 * gather from the geometry (the target shape, the image and block shapes,
 * the output size: constants, or symbols that the node's run-time shape
 * function binds when they are graph inputs) or from the sampling grid, so
 * every loop nest is parallel and writes once. ImageDecoder (opset 20) is
 * the exception: one call of the c target's decoders (runtime/rt_image.h).
 */
#include "ops.h"

#include <string.h>

/* ---- CenterCropPad ---- */

/*
 * The axes CenterCropPad sets (attribute axes, default all), normalised
 * into axes; their count, or -1 after a diagnostic.
 */
static int ccp_axes(struct graph *g, struct node *n, int r, int *axes)
{
	const int64_t *axv;
	int na = node_attr_ints(n, "axes", &axv);
	bool has = na >= 0, seen[MAX_RANK] = { false };

	if (!has)
		na = r;
	if (na > r) {
		diag_error(g->ctx, "%s: %d axes for rank %d", node_loc(g, n), na, r);
		return -1;
	}
	for (int i = 0; i < na; i++) {
		if ((axes[i] = infer_axis(g, n, has ? axv[i] : i, r)) < 0)
			return -1;
		if (seen[axes[i]]) {
			diag_error(g->ctx, "%s: axis %d is repeated", node_loc(g, n), axes[i]);
			return -1;
		}
		seen[axes[i]] = true;
	}
	return na;
}

/*
 * The output shape: the axes take their length from input 'shape'. A
 * constant shape gives constants (cropped or padded axes must be constant
 * in X); one known only at run time data symbols, each axis's start in X a
 * parameter of the kernel. -1 after a diagnostic.
 */
static int ccp_shape(struct graph *g, struct node *n, struct shape *out)
{
	struct value *x = infer_input(g, n, 0);
	int64_t *len, cnt;
	int na, axes[MAX_RANK];

	if (!x || !infer_input(g, n, 1) || (na = ccp_axes(g, n, x->shape.rank, axes)) < 0)
		return -1;
	if (infer_is_data(g, n, 1) ? infer_data_count(g, n, 1, &cnt) < 0
	    : infer_const_ints(g, n, 1, &len, &cnt) < 0)
		return -1;
	if (cnt != na) {
		diag_error(g->ctx, "%s: shape has %lld values for %d axes", node_loc(g, n),
			   (long long)cnt, na);
		return -1;
	}
	*out = x->shape;
	for (int i = 0; i < na; i++) {
		int a = axes[i];

		if (infer_is_data(g, n, 1)) {
			out->d[a] = graph_data_sym(g, n->out[0], a);
			graph_data_param(g, n->out[0], "start", a);
			continue;
		}
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
 * The body of CenterCropPad's loops over Y (idx): Y = X at xi where inside
 * holds (every element when it is NULL), 0 elsewhere; closes the loops.
 */
static int ccp_store(struct lower *L, struct tir **idx, struct tir **xi, struct tir *inside)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));

	if (inside)
		v = tir_select(b, inside, v, tir_const(b, x->dtype, 0));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), v);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/*
 * The target shape known only at run time: each listed axis reads X at its
 * index plus its start (rt_shape.c's shape_center_crop_pad), zero outside.
 */
static int lower_centercroppad_data(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL;
	int axes[MAX_RANK], na = ccp_axes(L->g, (struct node *)L->n, x->shape.rank, axes);

	if (na < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, idx);
	for (int k = 0; k < y->shape.rank; k++)
		xi[k] = idx[k];
	for (int i = 0; i < na; i++) {
		int a = axes[i];
		struct tir *c;

		xi[a] = tir_let(b, "p", tir_add(b, idx[a], tir_dim(b, graph_data_param(
			L->g, L->n->out[0], "start", a))));
		c = lower_in_range(L, xi[a], tir_dim(b, x->shape.d[a]));
		inside = inside ? tir_bin(b, BIN_LAND, inside, c) : c;
	}
	return ccp_store(L, idx, xi, inside);
}

/*
 * A cropped axis starts (in - out) / 2 into the input (rounded down); a
 * padded one puts (out - in) / 2 zeros first, the odd one at the end.
 */
int lower_centercroppad(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *inside = NULL;

	if (node_is_dynamic(L->g, L->n))
		return lower_centercroppad_data(L);
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
	return ccp_store(L, idx, xi, inside);
}

/* ---- Col2Im ---- */

/* Geometry of Col2Im: r spatial dims of the image and of the block grid. */
struct col2im {
	int r;
	int64_t img[MAX_RANK], blk[MAX_RANK];	/* image and block extents */
	int64_t s[MAX_RANK], d[MAX_RANK];	/* strides, dilations */
	int64_t pb[MAX_RANK], pe[MAX_RANK];	/* pads at the begin and the end */
	int64_t nb[MAX_RANK];			/* blocks along each dim */
	int64_t bsz, l;				/* elements of a block, blocks in all */
	/*
	 * image_shape or block_shape known only at run time: img, blk, nb,
	 * bsz and l unset; the output's dims but N are data symbols, each
	 * axis's block length and block count parameters of the kernel
	 */
	bool rt;
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

/* The count of image_shape or block_shape (input i), constant or not; its values or NULL. */
static int col2im_count(struct graph *g, struct node *n, int i, int64_t **v, int64_t *cnt)
{
	*v = NULL;
	if (!infer_input(g, n, i))
		return -1;
	if (infer_is_data(g, n, i))
		return infer_data_count(g, n, i, cnt);
	return infer_const_ints(g, n, i, v, cnt);
}

/* Strides, dilations and pads, which attributes give. -1 after a diagnostic. */
static int col2im_attrs(struct graph *g, struct node *n, struct col2im *p)
{
	int64_t pads[2 * MAX_RANK];

	if (ints_attr_or(g, n, "strides", p->r, p->s, 1) < 0 ||
	    ints_attr_or(g, n, "dilations", p->r, p->d, 1) < 0 ||
	    ints_attr_or(g, n, "pads", 2 * p->r, pads, 0) < 0)
		return -1;
	for (int i = 0; i < p->r; i++) {
		p->pb[i] = pads[i];
		p->pe[i] = pads[i + p->r];
		if (p->s[i] < 1 || p->d[i] < 1 || p->d[i] > DIM_LIMIT || pads[i] < 0 ||
		    pads[i + p->r] < 0 || pads[i] > DIM_LIMIT || pads[i + p->r] > DIM_LIMIT) {
			diag_error(g->ctx, "%s: strides, dilations or pads are out of range",
				   node_loc(g, n));
			return -1;
		}
	}
	return 0;
}

static int col2im_plan(struct graph *g, struct node *n, struct col2im *p)
{
	struct value *x = infer_input(g, n, 0);
	int64_t *img, *blk, ni, nb;

	memset(p, 0, sizeof(*p));
	if (!x || col2im_count(g, n, 1, &img, &ni) < 0 || col2im_count(g, n, 2, &blk, &nb) < 0)
		return -1;
	if (x->shape.rank != 3 || ni != nb || ni < 1 || ni > MAX_RANK - 2) {
		diag_error(g->ctx, "%s: input must be [N, C * block, L] with image_shape and "
			   "block_shape of one length", node_loc(g, n));
		return -1;
	}
	p->r = (int)ni;
	if (col2im_attrs(g, n, p) < 0)
		return -1;
	p->rt = !img || !blk;
	if (p->rt)
		return 0;
	p->bsz = 1;
	p->l = 1;
	for (int i = 0; i < p->r; i++) {
		int64_t span;

		p->img[i] = img[i];
		p->blk[i] = blk[i];
		span = img[i] + p->pb[i] + p->pe[i] - p->d[i] * (blk[i] - 1) - 1;
		if (img[i] < 1 || blk[i] < 1 || span < 0 || img[i] > DIM_LIMIT ||
		    blk[i] > DIM_LIMIT) {
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
	s.d[1] = p.rt ? graph_data_sym(g, n->out[0], 1) : dim_const(x->shape.d[1].c / p.bsz);
	for (int i = 0; i < p.r; i++) {
		s.d[i + 2] = p.rt ? graph_data_sym(g, n->out[0], i + 2) : dim_const(p.img[i]);
		if (p.rt) {
			graph_data_param(g, n->out[0], "block", i);
			graph_data_param(g, n->out[0], "blocks", i);
		}
	}
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/* Axis i's block length: a constant, or the parameter its shape function binds. */
static struct tir *col2im_blk(struct lower *L, const struct col2im *p, int i)
{
	return p->rt ? tir_dim(L->b, graph_data_param(L->g, L->n->out[0], "block", i))
		: tir_int(L->b, p->blk[i]);
}

/* Axis i's count of blocks, likewise. */
static struct tir *col2im_nb(struct lower *L, const struct col2im *p, int i)
{
	return p->rt ? tir_dim(L->b, graph_data_param(L->g, L->n->out[0], "blocks", i))
		: tir_int(L->b, p->nb[i]);
}

/*
 * Gather form of the fold: image position q takes, for each block offset
 * k, the column of the block whose window puts k at q, when there is one:
 * q + pad - k * dilation must be a multiple of the stride within the grid.
 * With shapes known only at run time the block lengths and counts are
 * the shape function's parameters (rt_shape.c's shape_col2im).
 */
int lower_col2im(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *cond = NULL, *acc, *row, *col, *xi[3], *bsz;
	struct col2im p;

	if (col2im_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, oi);
	acc = tir_let(b, "acc", tir_const(b, y->dtype, 0));
	col = tir_int(b, 0);
	for (int i = 0; i < p.r; i++) {
		struct tir *q, *c;

		ki[i] = tir_loop(b, col2im_blk(L, &p, i));
		q = tir_let(b, "q", tir_bin(b, BIN_SUB, tir_add(b, oi[i + 2], tir_int(b, p.pb[i])),
					    tir_mul(b, ki[i], tir_int(b, p.d[i]))));
		c = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, q, tir_int(b, 0)),
			    tir_bin(b, BIN_LT, q, tir_mul(b, col2im_nb(L, &p, i),
							  tir_int(b, p.s[i]))));
		if (p.s[i] > 1)
			c = tir_bin(b, BIN_LAND, c, tir_bin(b, BIN_EQ, tir_bin(b, BIN_MOD, q,
						tir_int(b, p.s[i])), tir_int(b, 0)));
		cond = cond ? tir_bin(b, BIN_LAND, cond, c) : c;
		col = tir_add(b, tir_mul(b, col, col2im_nb(L, &p, i)),
			      p.s[i] > 1 ? tir_bin(b, BIN_DIV, q, tir_int(b, p.s[i])) : q);
	}
	/* row = c * bsz + the block offset, row-major over the block dims */
	row = tir_int(b, 0);
	bsz = tir_int(b, 1);
	for (int i = 0; i < p.r; i++) {
		row = tir_add(b, tir_mul(b, row, col2im_blk(L, &p, i)), ki[i]);
		bsz = tir_mul(b, bsz, col2im_blk(L, &p, i));
	}
	row = tir_add(b, tir_mul(b, oi[1], bsz), row);
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

/*
 * The ints of the run-time shape function of a CenterCropPad, Col2Im or
 * DFT (runtime/rt_model.h's struct rt_shape): arena, *count of them; NULL
 * and 0 for other ops.
 */
int64_t *shape_fn_ints(struct graph *g, const struct node *n, int *count)
{
	struct node *nn = (struct node *)n;
	int64_t *v = arena_alloc(g->arena, sizeof(*v) * (5 * MAX_RANK + 1));
	struct col2im p;
	int axes[MAX_RANK], na;

	*count = 0;
	switch (n->op) {
	case OP_CENTERCROPPAD:
		if ((na = ccp_axes(g, nn, node_in(g, n, 0)->shape.rank, axes)) < 0)
			BUG("CenterCropPad node '%s' lost its axes", n->name);
		v[0] = na;
		for (int i = 0; i < na; i++)
			v[1 + i] = axes[i];
		*count = 1 + na;
		return v;
	case OP_COL2IM:
		if (col2im_plan(g, nn, &p) < 0)
			BUG("Col2Im node '%s' lost its geometry", n->name);
		v[0] = p.r;
		for (int i = 0; i < p.r; i++) {
			v[1 + i] = p.s[i];
			v[1 + p.r + i] = p.d[i];
			v[1 + 2 * p.r + i] = p.pb[i];
			v[1 + 3 * p.r + i] = p.pe[i];
		}
		*count = 1 + 4 * p.r;
		return v;
	case OP_DFT:
		v[0] = g->opset >= 20 ? -2 : node_attr_int(n, "axis", 1);
		*count = 1;
		return v;
	default:
		return NULL;
	}
}

/* ---- AffineGrid ---- */

/*
 * The size input [N, C, (D,) H, W]: its count (4 or 5), or -1; *size its
 * values when constant, else NULL (known only at run time).
 */
static int affine_size(struct graph *g, struct node *n, int64_t **size)
{
	struct value *th = infer_input(g, n, 0);
	int64_t cnt;

	*size = NULL;
	if (!th || !infer_input(g, n, 1))
		return -1;
	if (infer_is_data(g, n, 1) ? infer_data_count(g, n, 1, &cnt) < 0
	    : infer_const_ints(g, n, 1, size, &cnt) < 0)
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
	for (int i = 0; *size && i < cnt; i++)
		if ((*size)[i] < 1 || (*size)[i] > DIM_LIMIT) {
			diag_error(g->ctx, "%s: size %lld is out of range", node_loc(g, n),
				   (long long)(*size)[i]);
			return -1;
		}
	return (int)cnt;
}

/*
 * grid is [N, H, W, 2] or [N, D, H, W, 3], theta's type; with size known
 * only at run time its spatial dims are data symbols.
 */
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
		s.d[i - 1] = size ? dim_const(size[i]) : graph_data_sym(g, n->out[0], i - 1);
	s.d[cnt - 1] = dim_const(cnt - 2);
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/*
 * Base coordinate of index i on an axis of len known only at run time:
 * -1 + 2 i / (len - 1) with align_corners (-1 for len 1), else -1 +
 * (2 i + 1) / len, as lower_affinegrid computes them for a constant len.
 */
static struct tir *affine_base_rt(struct lower *L, enum dtype t, bool align, struct tir *i,
				  struct dim len)
{
	struct tir_builder *b = L->b;
	struct tir *c = tir_mul(b, tir_const(b, t, 2), tir_cast(b, t, i));
	struct tir *one = tir_const(b, t, 1);

	if (!align)
		return tir_bin(b, BIN_SUB, tir_bin(b, BIN_DIV, tir_add(b, c, one),
						   tir_cast(b, t, tir_dim(b, len))), one);
	c = tir_bin(b, BIN_DIV, c, tir_cast(b, t, tir_bin(b, BIN_SUB, tir_dim(b, len),
							   tir_int(b, 1))));
	return tir_select(b, tir_bin(b, BIN_GT, tir_dim(b, len), tir_int(b, 1)),
			  tir_bin(b, BIN_SUB, c, one), tir_const(b, t, -1));
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

		if (!dim_is_const(y->shape.d[i + 1])) {
			base[r - 1 - i] = affine_base_rt(L, t, align, idx[i + 1], y->shape.d[i + 1]);
			continue;
		}
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

/* ---- GridSample ---- */

enum gs_mode { GS_NEAREST, GS_LINEAR, GS_CUBIC, GS_MODE_COUNT };
enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION, GS_PAD_COUNT };

struct gridsample {
	int r;			/* spatial dims */
	enum gs_mode mode;
	enum gs_pad pad;
	bool align;		/* align_corners */
};

/*
 * Reads the attributes and checks X [N, C, d1..dr] against grid
 * [N, D1..Dr, r]. Opset 16 names the modes bilinear/bicubic and takes 4-D
 * X only; opset 20 renamed them linear/cubic and went N-D. -1 after a
 * diagnostic.
 */
static int gs_plan(struct graph *g, const struct node *n, struct gridsample *p)
{
	static const char *const pads[GS_PAD_COUNT] = { "zeros", "border", "reflection" };
	bool v20 = g->opset >= 20;
	const char *const modes[GS_MODE_COUNT] = { "nearest", v20 ? "linear" : "bilinear",
				      v20 ? "cubic" : "bicubic" };
	const char *m = node_attr_str(n, "mode", modes[GS_LINEAR]);
	const char *pm = node_attr_str(n, "padding_mode", "zeros");
	const struct value *x = node_in(g, n, 0), *grid = node_in(g, n, 1);
	int i;

	for (i = 0; i < GS_MODE_COUNT && strcmp(m, modes[i]); i++)
		;
	if (i == GS_MODE_COUNT) {
		diag_error(g->ctx, "%s: mode '%s' is not one of %s, %s, %s", node_loc(g, n), m,
			   modes[0], modes[1], modes[2]);
		return -1;
	}
	p->mode = (enum gs_mode)i;
	for (i = 0; i < GS_PAD_COUNT && strcmp(pm, pads[i]); i++)
		;
	if (i == GS_PAD_COUNT) {
		diag_error(g->ctx, "%s: padding_mode '%s' is not one of zeros, border, "
			   "reflection", node_loc(g, n), pm);
		return -1;
	}
	p->pad = (enum gs_pad)i;
	p->align = node_attr_int(n, "align_corners", 0) != 0;
	p->r = x->shape.rank - 2;
	if (!dtype_is_float(x->dtype) || !dtype_is_float(grid->dtype)) {
		diag_error(g->ctx, "%s: X and grid must have float types", node_loc(g, n));
		return -1;
	}
	if (p->r < 1 || (!v20 && p->r != 2) || grid->shape.rank != x->shape.rank ||
	    !dim_eq(grid->shape.d[0], x->shape.d[0]) ||
	    !dim_eq(grid->shape.d[p->r + 1], dim_const(p->r))) {
		diag_error(g->ctx, "%s: X must be [N, C, %s] and grid [N, %s, %d]",
			   node_loc(g, n), v20 ? "d1, ..., dr" : "H, W",
			   v20 ? "D1, ..., Dr" : "H_out, W_out", v20 ? p->r : 2);
		return -1;
	}
	return 0;
}

/* Y is [N, C, D1..Dr] of X's type. */
int infer_gridsample(struct graph *g, struct node *n)
{
	struct gridsample p;
	struct shape s;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !infer_input(g, n, 0) || !infer_input(g, n, 1) ||
	    gs_plan(g, n, &p) < 0)
		return -1;
	s = node_in(g, n, 0)->shape;
	for (int i = 0; i < p.r; i++)
		s.d[i + 2] = node_in(g, n, 1)->shape.d[i + 1];
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/*
 * x reflected by the nearer border, back and forth, until it lies in
 * [lo, hi]; lo when the range is empty (a length-1 axis with
 * align_corners), where the reflection has no period.
 */
static struct tir *gs_reflect(struct tir_builder *b, enum dtype t, struct tir *x,
			      struct tir *lo, struct tir *hi)
{
	struct tir *rng = tir_let(b, "rng", tir_bin(b, BIN_SUB, hi, lo));
	struct tir *below = tir_let(b, "below", tir_bin(b, BIN_LT, x, lo));
	struct tir *dx = tir_let(b, "dx", tir_select(b, below, tir_bin(b, BIN_SUB, lo, x),
						     tir_bin(b, BIN_SUB, x, hi)));
	struct tir *nf = tir_let(b, "nf", tir_call1(b, INTRIN_FLOOR,
						    tir_bin(b, BIN_DIV, dx, rng)));
	struct tir *rem = tir_let(b, "rem", tir_bin(b, BIN_SUB, dx, tir_mul(b, nf, rng)));
	struct tir *even = tir_bin(b, BIN_EQ, tir_call2(b, INTRIN_FMOD, nf, tir_const(b, t, 2)),
				   tir_const(b, t, 0));
	/* an even number of bounces leaves x near the border it crossed */
	struct tir *from_lo = tir_add(b, lo, rem), *from_hi = tir_bin(b, BIN_SUB, hi, rem);
	struct tir *out = tir_select(b, below, tir_select(b, even, from_lo, from_hi),
				     tir_select(b, even, from_hi, from_lo));

	out = tir_select(b, tir_bin(b, BIN_GT, rng, tir_const(b, t, 0)), out, lo);
	return tir_select(b, tir_bin(b, BIN_LOR, below, tir_bin(b, BIN_GT, x, hi)), out, x);
}

/* Keys' cubic convolution weight (a = -0.75) of a tap at distance d. */
static struct tir *gs_cubic_weight(struct tir_builder *b, enum dtype t, struct tir *d, bool near)
{
	const double a = -0.75;

	if (near)	/* |d| <= 1 */
		return tir_add(b, tir_mul(b, tir_mul(b, tir_bin(b, BIN_SUB,
			tir_mul(b, tir_const(b, t, a + 2), d), tir_const(b, t, a + 3)), d), d),
			tir_const(b, t, 1));
	/* 1 < |d| < 2 */
	return tir_bin(b, BIN_SUB, tir_mul(b, tir_add(b, tir_mul(b, tir_bin(b, BIN_SUB,
		tir_mul(b, tir_const(b, t, a), d), tir_const(b, t, 5 * a)), d),
		tir_const(b, t, 8 * a)), d), tir_const(b, t, 4 * a));
}

/* The taps of one spatial axis: input indices, weights, in-range flags. */
struct gs_taps {
	int n;
	struct tir *idx[4], *w[4], *ok[4];	/* ok: NULL unless padding is zeros */
};

/*
 * Pixel index pos (integer-valued, of type t) of an axis of length len
 * made readable: zeros padding flags it, border clamps it, reflection
 * folds it into [lo, hi]. The result is clamped into the axis either way
 * so no grid value can read outside X.
 */
static void gs_tap(struct tir_builder *b, enum dtype t, const struct gridsample *p,
		   struct tir *pos, struct tir *len, struct tir *lo, struct tir *hi,
		   struct gs_taps *tp, int k)
{
	struct tir *i, *last = tir_bin(b, BIN_SUB, len, tir_int(b, 1));

	if (p->pad == GS_REFLECTION)
		pos = gs_reflect(b, t, pos, lo, hi);
	i = tir_let(b, "ti", tir_cast(b, DTYPE_I64, tir_call1(b, INTRIN_FLOOR, pos)));
	tp->ok[k] = NULL;
	if (p->pad == GS_ZEROS)
		tp->ok[k] = tir_let(b, "tok", tir_bin(b, BIN_LAND,
			tir_bin(b, BIN_GE, i, tir_int(b, 0)), tir_bin(b, BIN_LT, i, len)));
	tp->idx[k] = tir_let(b, "tx", tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, i, tir_int(b, 0)),
					       last));
}

/*
 * Axis i's sampling position from its normalised grid coordinate v: the
 * pixel coordinate (align_corners maps -1 and 1 to the first and last
 * centres, otherwise to the outer edges), rounded for nearest, then a
 * coordinate outside the border range [lo, hi] is clamped into the image
 * (border) or reflected (reflection), and the taps around it are laid out.
 */
static void gs_axis(struct tir_builder *b, enum dtype t, const struct gridsample *p,
		    struct tir *v, struct dim d, struct gs_taps *tp)
{
	struct tir *len = tir_dim(b, d), *fl = tir_let(b, "len", tir_cast(b, t, len));
	struct tir *one = tir_const(b, t, 1), *half = tir_const(b, t, 0.5);
	struct tir *lo, *hi, *x, *x0, *f;

	if (p->align) {
		x = tir_mul(b, tir_bin(b, BIN_DIV, tir_add(b, v, one), tir_const(b, t, 2)),
			    tir_bin(b, BIN_SUB, fl, one));
		lo = tir_const(b, t, 0);
		hi = tir_bin(b, BIN_SUB, fl, one);
	} else {
		x = tir_bin(b, BIN_DIV, tir_bin(b, BIN_SUB, tir_mul(b, tir_add(b, v, one), fl), one),
			    tir_const(b, t, 2));
		lo = tir_un(b, UN_NEG, half);
		hi = tir_bin(b, BIN_SUB, fl, half);
	}
	lo = tir_let(b, "lo", lo);
	hi = tir_let(b, "hi", hi);
	x = tir_let(b, "gx", x);
	if (p->mode == GS_NEAREST)
		x = tir_let(b, "gx", tir_call1(b, INTRIN_RINT, x));
	if (p->pad == GS_BORDER)
		x = tir_select(b, tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, x, lo),
					  tir_bin(b, BIN_GT, x, hi)),
			       tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, x, tir_const(b, t, 0)),
				       tir_bin(b, BIN_SUB, fl, one)), x);
	else if (p->pad == GS_REFLECTION)
		x = gs_reflect(b, t, x, lo, hi);
	/* far outside, every tap reads padding: keep floor() in int64 range */
	x = tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, x, tir_const(b, t, -4)),
		    tir_add(b, fl, tir_const(b, t, 4)));
	x = tir_let(b, "gx", x);
	x0 = tir_let(b, "x0", tir_call1(b, INTRIN_FLOOR, x));
	f = tir_let(b, "fr", tir_bin(b, BIN_SUB, x, x0));
	tp->n = p->mode == GS_NEAREST ? 1 : p->mode == GS_LINEAR ? 2 : 4;
	for (int k = 0; k < tp->n; k++) {
		struct tir *pos = tir_add(b, x0, tir_const(b, t, p->mode == GS_CUBIC ? k - 1 : k));

		gs_tap(b, t, p, p->mode == GS_NEAREST ? x : pos, len, lo, hi, tp, k);
	}
	if (p->mode == GS_NEAREST) {
		tp->w[0] = one;
	} else if (p->mode == GS_LINEAR) {
		tp->w[0] = tir_let(b, "w", tir_bin(b, BIN_SUB, one, f));
		tp->w[1] = f;
	} else {
		struct tir *two = tir_const(b, t, 2);

		tp->w[0] = tir_let(b, "w", gs_cubic_weight(b, t, tir_add(b, f, one), false));
		tp->w[1] = tir_let(b, "w", gs_cubic_weight(b, t, f, true));
		tp->w[2] = tir_let(b, "w", gs_cubic_weight(b, t, tir_bin(b, BIN_SUB, one, f), true));
		tp->w[3] = tir_let(b, "w", gs_cubic_weight(b, t, tir_bin(b, BIN_SUB, two, f), false));
	}
}

/*
 * Y[n, c, o...] = sum over the tap combinations of the product of the
 * axes' weights times X[n, c, taps...] (0 for a tap outside under zeros
 * padding): the separable interpolation written out as one sum.
 */
int lower_gridsample(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *grid = lower_in(L, 1), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *gi[MAX_RANK], *xi[MAX_RANK], *acc;
	struct gs_taps taps[MAX_RANK];
	struct gridsample p;
	enum dtype t = y->dtype;
	int combos = 1;

	if (gs_plan(L->g, L->n, &p) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, idx);
	gi[0] = idx[0];
	for (int i = 0; i < p.r; i++)
		gi[i + 1] = idx[i + 2];
	for (int i = 0; i < p.r; i++) {
		/* grid's last axis lists the coordinates innermost axis first */
		gi[p.r + 1] = tir_int(b, p.r - 1 - i);
		gs_axis(b, t, &p, tir_cast(b, t, tir_load(b, L->in[1],
				lower_offset(L, &grid->shape, gi))), x->shape.d[i + 2], &taps[i]);
		combos *= taps[i].n;
	}
	acc = tir_let(b, "acc", tir_const(b, t, 0));
	xi[0] = idx[0];
	xi[1] = idx[1];
	for (int c = 0; c < combos; c++) {
		struct tir *w = NULL, *ok = NULL, *v;

		for (int i = p.r - 1, rest = c; i >= 0; rest /= taps[i].n, i--) {
			int k = rest % taps[i].n;

			xi[i + 2] = taps[i].idx[k];
			w = w ? tir_mul(b, w, taps[i].w[k]) : taps[i].w[k];
			if (taps[i].ok[k])
				ok = ok ? tir_bin(b, BIN_LAND, ok, taps[i].ok[k]) : taps[i].ok[k];
		}
		v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
		if (ok)
			v = tir_select(b, ok, v, tir_const(b, t, 0));
		tir_assign(b, acc, tir_add(b, acc, tir_mul(b, w, v)));
	}
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- RoiAlign ---- */

/*
 * Checks X [N, C, H, W], rois [R, 4] of X's type and batch_indices [R]
 * (int64), and the mode. -1 after a diagnostic.
 */
static int roialign_check(struct graph *g, const struct node *n)
{
	const struct value *x = node_in(g, n, 0), *rois = node_in(g, n, 1);
	const struct value *bi = node_in(g, n, 2);
	const char *m = node_attr_str(n, "mode", "avg");
	const char *ct = node_attr_str(n, "coordinate_transformation_mode", "half_pixel");

	if (strcmp(m, "avg") && strcmp(m, "max")) {
		diag_error(g->ctx, "%s: mode '%s' is not one of avg, max", node_loc(g, n), m);
		return -1;
	}
	if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel")) {
		diag_error(g->ctx, "%s: coordinate_transformation_mode '%s' is not one of "
			   "half_pixel, output_half_pixel", node_loc(g, n), ct);
		return -1;
	}
	if (!dtype_is_float(x->dtype) || rois->dtype != x->dtype || bi->dtype != DTYPE_I64) {
		diag_error(g->ctx, "%s: X and rois must have one float type and batch_indices "
			   "int64", node_loc(g, n));
		return -1;
	}
	if (x->shape.rank != 4 || rois->shape.rank != 2 || bi->shape.rank != 1 ||
	    !dim_eq(rois->shape.d[1], dim_const(4)) || !dim_eq(bi->shape.d[0], rois->shape.d[0])) {
		diag_error(g->ctx, "%s: X must be [N, C, H, W], rois [R, 4] and batch_indices "
			   "[R]", node_loc(g, n));
		return -1;
	}
	if (node_attr_int(n, "output_height", 1) < 1 || node_attr_int(n, "output_width", 1) < 1 ||
	    node_attr_int(n, "output_height", 1) > DIM_LIMIT ||
	    node_attr_int(n, "output_width", 1) > DIM_LIMIT) {
		diag_error(g->ctx, "%s: output_height and output_width must be positive",
			   node_loc(g, n));
		return -1;
	}
	return 0;
}

/* Y is [R, C, output_height, output_width]. */
int infer_roialign(struct graph *g, struct node *n)
{
	struct shape s = { 0 };

	if (infer_arity(g, n, 3, 3, 1) < 0 || !infer_input(g, n, 0) || !infer_input(g, n, 1) ||
	    !infer_input(g, n, 2) || roialign_check(g, n) < 0)
		return -1;
	s.rank = 4;
	s.d[0] = node_in(g, n, 1)->shape.d[0];
	s.d[1] = node_in(g, n, 0)->shape.d[1];
	s.d[2] = dim_const(node_attr_int(n, "output_height", 1));
	s.d[3] = dim_const(node_attr_int(n, "output_width", 1));
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/* -1 <= v <= len: a sample outside counts as 0. */
static struct tir *roi_inside(struct tir_builder *b, struct tir *v, int64_t len)
{
	return tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, v, tir_const(b, DTYPE_F64, -1)),
		       tir_bin(b, BIN_LE, v, tir_const(b, DTYPE_F64, (double)len)));
}

/*
 * Samples per bin along an axis without sampling_ratio: ceil of the bin
 * size, capped at 2^20 so that a wild box keeps the int64 conversion
 * defined and the loop finite (no real box comes near it).
 */
static struct tir *roi_grid(struct tir_builder *b, struct tir *bin)
{
	return tir_cast(b, DTYPE_I64, tir_bin(b, BIN_MIN, tir_call1(b, INTRIN_CEIL, bin),
					      tir_const(b, DTYPE_F64, 1 << 20)));
}

/* One axis of a bilinear sample: the two rows (or columns) and their weights. */
struct roi_axis {
	struct tir *lo, *hi, *wlo, *whi;
};

/*
 * Sample coordinate v (double) on an axis of length len, as RoiAlign
 * defines it: below 0 it reads 0, at or past the last row both taps are
 * the last row. v is clamped into [0, len] first, which changes nothing
 * for the samples that count and keeps the int64 conversion defined.
 */
static void roi_axis(struct tir_builder *b, struct tir *v, int64_t len, struct roi_axis *a)
{
	enum dtype d = DTYPE_F64;
	struct tir *c = tir_let(b, "c", tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, v,
					tir_const(b, d, 0)), tir_const(b, d, (double)len)));
	struct tir *lo = tir_let(b, "lo", tir_cast(b, DTYPE_I64, c));
	struct tir *edge = tir_let(b, "edge", tir_bin(b, BIN_GE, lo, tir_int(b, len - 1)));
	struct tir *l;

	a->lo = tir_let(b, "lo", tir_select(b, edge, tir_int(b, len - 1), lo));
	a->hi = tir_select(b, edge, tir_int(b, len - 1), tir_add(b, lo, tir_int(b, 1)));
	l = tir_select(b, edge, tir_const(b, d, 0), tir_bin(b, BIN_SUB, c, tir_cast(b, d, lo)));
	a->whi = tir_let(b, "l", l);
	a->wlo = tir_let(b, "h", tir_bin(b, BIN_SUB, tir_const(b, d, 1), a->whi));
}

/*
 * Per region r: its box in X's pixel space (spatial_scale, minus half a
 * pixel under half_pixel; at least 1x1 under opset 10's
 * output_half_pixel), split into output_height x output_width bins of
 * sampling_ratio (or ceil(bin size)) samples each way. Each sample is
 * bilinear in X[batch_indices[r], c]; a bin averages its samples (avg),
 * or takes the largest weighted corner of any sample (max).
 */
int lower_roialign(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	const struct node *n = L->n;
	bool half = L->g->opset >= 16 &&
		!strcmp(node_attr_str(n, "coordinate_transformation_mode", "half_pixel"),
			"half_pixel");
	bool is_max = !strcmp(node_attr_str(n, "mode", "avg"), "max");
	double scale = node_attr_float(n, "spatial_scale", 1.0);
	int64_t sr = node_attr_int(n, "sampling_ratio", 0);
	int64_t oh = y->shape.d[2].c, ow = y->shape.d[3].c, H, W;
	enum dtype d = DTYPE_F64;
	struct tir *r, *c, *ph, *pw, *box[4], *rh, *rw, *gh, *gw, *cnt, *base, *acc, *first;
	struct tir *iy, *ix, *yy, *xx, *in, *v[4], *w[4], *val, *bidx;
	struct roi_axis ay, ax;

	if (roialign_check(L->g, n) < 0)
		return -1;
	if (!dim_is_const(x->shape.d[2]) || !dim_is_const(x->shape.d[3])) {
		diag_error(L->g->ctx, "%s: X must have constant H and W", node_loc(L->g, n));
		return -1;
	}
	H = x->shape.d[2].c;
	W = x->shape.d[3].c;
	r = tir_loop(b, tir_dim(b, y->shape.d[0]));
	tir_mark_parallel(b);
	for (int k = 0; k < 4; k++)
		box[k] = tir_let(b, "box", tir_bin(b, BIN_SUB, tir_mul(b, tir_cast(b, d,
				tir_load(b, L->in[1], tir_add(b, tir_mul(b, r, tir_int(b, 4)),
							      tir_int(b, k)))), tir_const(b, d, scale)),
				tir_const(b, d, half ? 0.5 : 0)));
	rw = tir_bin(b, BIN_SUB, box[2], box[0]);
	rh = tir_bin(b, BIN_SUB, box[3], box[1]);
	if (!half) {
		rw = tir_bin(b, BIN_MAX, rw, tir_const(b, d, 1));
		rh = tir_bin(b, BIN_MAX, rh, tir_const(b, d, 1));
	}
	rw = tir_let(b, "bw", tir_bin(b, BIN_DIV, rw, tir_const(b, d, (double)ow)));
	rh = tir_let(b, "bh", tir_bin(b, BIN_DIV, rh, tir_const(b, d, (double)oh)));
	gh = sr > 0 ? tir_int(b, sr) : tir_let(b, "gh", roi_grid(b, rh));
	gw = sr > 0 ? tir_int(b, sr) : tir_let(b, "gw", roi_grid(b, rw));
	cnt = tir_let(b, "cnt", tir_cast(b, d, tir_bin(b, BIN_MAX, tir_mul(b, gh, gw),
						      tir_int(b, 1))));
	/* a batch index outside X reads image 0 rather than memory past it */
	bidx = tir_load(b, L->in[2], r);
	bidx = tir_let(b, "bi", tir_select(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, bidx,
			tir_int(b, 0)), tir_bin(b, BIN_LT, bidx, tir_dim(b, x->shape.d[0]))),
			bidx, tir_int(b, 0)));
	c = tir_loop(b, tir_dim(b, y->shape.d[1]));
	tir_mark_parallel(b);
	base = tir_let(b, "base", tir_mul(b, tir_add(b, tir_mul(b, bidx, tir_dim(b,
					x->shape.d[1])), c), tir_int(b, H * W)));
	ph = tir_loop(b, tir_int(b, oh));
	pw = tir_loop(b, tir_int(b, ow));
	acc = tir_let(b, "acc", tir_const(b, d, 0));
	first = is_max ? tir_let(b, "first", tir_int(b, 1)) : NULL;
	iy = tir_loop(b, gh);
	yy = tir_let(b, "yy", tir_add(b, tir_add(b, box[1], tir_mul(b, tir_cast(b, d, ph), rh)),
		tir_bin(b, BIN_DIV, tir_mul(b, tir_add(b, tir_cast(b, d, iy), tir_const(b, d, 0.5)),
					   rh), tir_cast(b, d, gh))));
	ix = tir_loop(b, gw);
	xx = tir_let(b, "xx", tir_add(b, tir_add(b, box[0], tir_mul(b, tir_cast(b, d, pw), rw)),
		tir_bin(b, BIN_DIV, tir_mul(b, tir_add(b, tir_cast(b, d, ix), tir_const(b, d, 0.5)),
					   rw), tir_cast(b, d, gw))));
	in = tir_let(b, "in", tir_bin(b, BIN_LAND, roi_inside(b, yy, H), roi_inside(b, xx, W)));
	roi_axis(b, yy, H, &ay);
	roi_axis(b, xx, W, &ax);
	for (int k = 0; k < 4; k++) {
		struct tir *row = k < 2 ? ay.lo : ay.hi, *col = k % 2 ? ax.hi : ax.lo;
		struct tir *wy = k < 2 ? ay.wlo : ay.whi, *wx = k % 2 ? ax.whi : ax.wlo;

		w[k] = tir_select(b, in, tir_mul(b, wy, wx), tir_const(b, d, 0));
		v[k] = tir_cast(b, d, tir_load(b, L->in[0], tir_add(b, base,
				tir_add(b, tir_mul(b, row, tir_int(b, W)), col))));
	}
	if (is_max) {
		val = tir_mul(b, w[0], v[0]);
		for (int k = 1; k < 4; k++)
			val = tir_bin(b, BIN_MAX, val, tir_mul(b, w[k], v[k]));
		val = tir_let(b, "val", val);
		tir_assign(b, acc, tir_select(b, first, val, tir_bin(b, BIN_MAX, acc, val)));
		tir_assign(b, first, tir_int(b, 0));
	} else {
		val = tir_mul(b, w[0], v[0]);
		for (int k = 1; k < 4; k++)
			val = tir_add(b, val, tir_mul(b, w[k], v[k]));
		tir_assign(b, acc, tir_add(b, acc, val));
	}
	lower_end_loops(L, 2);
	val = is_max ? acc : tir_bin(b, BIN_DIV, acc, cnt);
	tir_store(b, L->out[0], tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, tir_add(b,
		tir_mul(b, r, tir_dim(b, y->shape.d[1])), c), tir_int(b, oh)), ph), tir_int(b, ow)),
		pw), tir_cast(b, y->dtype, val));
	lower_end_loops(L, 4);
	return 0;
}

/* ---- DeformConv ---- */

/* Geometry of a 2-D deformable convolution. */
struct deform {
	int64_t n, c, h, w;		/* X */
	int64_t oc, kh, kw;		/* W: [oc, c / group, kh, kw] */
	int64_t oh, ow;			/* Y's spatial dims */
	int64_t sh, sw, dh, dw;		/* strides, dilations */
	int64_t pt, pl;			/* pads at the top and left */
	int64_t group, og;		/* group, offset_group */
};

/* An ints attribute of 2 values (or 4 for pads), or def. -1 after a diagnostic. */
static int deform_ints(struct graph *g, const struct node *n, const char *name, int cnt,
		       int64_t *dst, int64_t def)
{
	const int64_t *v;
	int c = node_attr_ints(n, name, &v);

	if (c >= 0 && c != cnt) {
		diag_error(g->ctx, "%s: attribute '%s' must have %d values", node_loc(g, n), name,
			   cnt);
		return -1;
	}
	for (int i = 0; i < cnt; i++)
		dst[i] = c >= 0 ? v[i] : def;
	return 0;
}

/*
 * Checks X [N, C, H, W], W [oC, C / group, kH, kW], offset
 * [N, offset_group * 2 * kH * kW, oH, oW], B [oC] and mask
 * [N, offset_group * kH * kW, oH, oW], all constant dims but N. Only the
 * 2-D form is done. -1 after a diagnostic.
 */
static int deform_plan(struct graph *g, const struct node *n, struct deform *p)
{
	const struct value *x = node_in(g, n, 0), *wt = node_in(g, n, 1);
	const struct value *off = node_in(g, n, 2), *bias = node_in(g, n, 3);
	const struct value *mask = node_in(g, n, 4);
	int64_t s[2], d[2], pads[4], ks[2];

	if (x->shape.rank != 4 || wt->shape.rank != 4 || !shape_is_static(&wt->shape) ||
	    !dim_is_const(x->shape.d[1]) || !dim_is_const(x->shape.d[2]) ||
	    !dim_is_const(x->shape.d[3])) {
		diag_error(g->ctx, "%s: only the 2-D DeformConv with constant C, H, W and "
			   "weights shape is supported", node_loc(g, n));
		return -1;
	}
	if (deform_ints(g, n, "strides", 2, s, 1) < 0 || deform_ints(g, n, "dilations", 2, d, 1) < 0 ||
	    deform_ints(g, n, "pads", 4, pads, 0) < 0 ||
	    deform_ints(g, n, "kernel_shape", 2, ks, 0) < 0)
		return -1;
	p->c = x->shape.d[1].c;
	p->h = x->shape.d[2].c;
	p->w = x->shape.d[3].c;
	p->oc = wt->shape.d[0].c;
	p->kh = wt->shape.d[2].c;
	p->kw = wt->shape.d[3].c;
	p->group = node_attr_int(n, "group", 1);
	p->og = node_attr_int(n, "offset_group", 1);
	p->sh = s[0], p->sw = s[1], p->dh = d[0], p->dw = d[1];
	p->pt = pads[0], p->pl = pads[1];
	if ((ks[0] && ks[0] != p->kh) || (ks[1] && ks[1] != p->kw) || p->group < 1 ||
	    p->og < 1 || p->c % p->group || p->oc % p->group || p->c % p->og ||
	    wt->shape.d[1].c * p->group != p->c || s[0] < 1 || s[1] < 1 || d[0] < 1 ||
	    d[1] < 1 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0) {
		diag_error(g->ctx, "%s: W, group, offset_group, kernel_shape, strides, dilations "
			   "or pads do not fit X", node_loc(g, n));
		return -1;
	}
	p->oh = (p->h + pads[0] + pads[2] - (p->kh - 1) * d[0] - 1) / s[0] + 1;
	p->ow = (p->w + pads[1] + pads[3] - (p->kw - 1) * d[1] - 1) / s[1] + 1;
	if (p->oh < 1 || p->ow < 1 || off->shape.rank != 4 ||
	    !dim_eq(off->shape.d[0], x->shape.d[0]) ||
	    !dim_eq(off->shape.d[1], dim_const(p->og * 2 * p->kh * p->kw)) ||
	    !dim_eq(off->shape.d[2], dim_const(p->oh)) || !dim_eq(off->shape.d[3], dim_const(p->ow)) ||
	    (bias && (bias->shape.rank != 1 || !dim_eq(bias->shape.d[0], dim_const(p->oc)))) ||
	    (mask && (mask->shape.rank != 4 || !dim_eq(mask->shape.d[0], x->shape.d[0]) ||
		      !dim_eq(mask->shape.d[1], dim_const(p->og * p->kh * p->kw)) ||
		      !dim_eq(mask->shape.d[2], dim_const(p->oh)) ||
		      !dim_eq(mask->shape.d[3], dim_const(p->ow))))) {
		diag_error(g->ctx, "%s: offset must be [N, %lld, %lld, %lld], B [%lld] and mask "
			   "[N, %lld, %lld, %lld]", node_loc(g, n),
			   (long long)(p->og * 2 * p->kh * p->kw), (long long)p->oh,
			   (long long)p->ow, (long long)p->oc, (long long)(p->og * p->kh * p->kw),
			   (long long)p->oh, (long long)p->ow);
		return -1;
	}
	return 0;
}

/* Y is [N, oC, oH, oW] of X's type. */
int infer_deformconv(struct graph *g, struct node *n)
{
	struct deform p;
	struct shape s = { 0 };
	enum dtype t;

	if (infer_arity(g, n, 3, 5, 1) < 0)
		return -1;
	for (int i = 0; i < 5; i++)
		if ((i < 3 || node_in(g, n, i)) && !infer_input(g, n, i))
			return -1;
	t = node_in(g, n, 0)->dtype;
	for (int i = 0; i < 5; i++)
		if (node_in(g, n, i) && node_in(g, n, i)->dtype != t) {
			diag_error(g->ctx, "%s: every input must have X's type", node_loc(g, n));
			return -1;
		}
	if (!dtype_is_float(t)) {
		diag_error(g->ctx, "%s: X must have a float type", node_loc(g, n));
		return -1;
	}
	if (deform_plan(g, n, &p) < 0)
		return -1;
	s.rank = 4;
	s.d[0] = node_in(g, n, 0)->shape.d[0];
	s.d[1] = dim_const(p.oc);
	s.d[2] = dim_const(p.oh);
	s.d[3] = dim_const(p.ow);
	infer_set(g, n, 0, t, &s);
	return 0;
}

/*
 * X[n, c] at the fractional position (y, x), bilinear, every corner
 * outside the image reading 0. The position is clamped to [-2, len + 1]
 * first, which changes no result and keeps floor() in int64 range.
 */
static struct tir *deform_sample(struct lower *L, struct tir *base, struct tir *y,
				 struct tir *x, const struct deform *p, enum dtype t)
{
	struct tir_builder *b = L->b;
	struct tir *pos[2] = { y, x }, *lo[2], *fr[2], *v = NULL;
	int64_t len[2] = { p->h, p->w };

	for (int a = 0; a < 2; a++) {
		struct tir *c = tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, pos[a], tir_const(b, t, -2)),
					tir_const(b, t, (double)(len[a] + 1)));
		struct tir *f = tir_let(b, "f", tir_call1(b, INTRIN_FLOOR, tir_let(b, "p", c)));

		fr[a] = tir_let(b, "fr", tir_bin(b, BIN_SUB, c, f));
		lo[a] = tir_let(b, "lo", tir_cast(b, DTYPE_I64, f));
	}
	for (int k = 0; k < 4; k++) {
		struct tir *iy = tir_add(b, lo[0], tir_int(b, k >> 1));
		struct tir *ix = tir_add(b, lo[1], tir_int(b, k & 1));
		struct tir *wy = k >> 1 ? fr[0] : tir_bin(b, BIN_SUB, tir_const(b, t, 1), fr[0]);
		struct tir *wx = k & 1 ? fr[1] : tir_bin(b, BIN_SUB, tir_const(b, t, 1), fr[1]);
		struct tir *in = tir_bin(b, BIN_LAND, lower_inside(b, NULL, iy, p->h),
					 lower_inside(b, NULL, ix, p->w));
		struct tir *at = tir_select(b, in, tir_add(b, base, tir_add(b, tir_mul(b, iy,
					tir_int(b, p->w)), ix)), tir_int(b, 0));
		struct tir *term = tir_select(b, in, tir_mul(b, tir_mul(b, wy, wx),
					tir_load(b, L->in[0], at)), tir_const(b, t, 0));

		v = v ? tir_add(b, v, term) : term;
	}
	return v;
}

/*
 * Y[n, o, i, j] = B[o] + sum over the group's channels c and the kernel
 * taps (u, v) of W[o, c, u, v] * mask * X[n, c] sampled at the tap's
 * position (i * stride - pad + u * dilation) moved by its offset pair
 * (dy, dx) of c's offset group.
 */
int lower_deformconv(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	enum dtype t = y->dtype;
	struct tir *idx[4], *acc, *c, *ic, *og, *u, *v, *tap, *at, *dy, *dx, *py, *px, *m, *wv;
	/* L->in has one entry per node input: B and mask may be absent or missing */
	struct tir_buf *bias = L->n->n_in > 3 ? L->in[3] : NULL;
	struct tir_buf *mask = L->n->n_in > 4 ? L->in[4] : NULL;
	struct tir *plane;
	struct deform p;
	int64_t cg, k2;

	if (deform_plan(L->g, L->n, &p) < 0)
		return -1;
	cg = p.c / p.group;
	k2 = p.kh * p.kw;
	lower_loops_parallel(L, &y->shape, idx);
	acc = tir_let(b, "acc", bias ? tir_load(b, bias, idx[1]) : tir_const(b, t, 0));
	c = tir_loop(b, tir_int(b, cg));
	ic = tir_let(b, "ic", tir_add(b, tir_mul(b, tir_bin(b, BIN_DIV, idx[1],
					tir_int(b, p.oc / p.group)), tir_int(b, cg)), c));
	og = tir_let(b, "og", tir_bin(b, BIN_DIV, ic, tir_int(b, p.c / p.og)));
	plane = tir_let(b, "xb", tir_mul(b, tir_add(b, tir_mul(b, idx[0], tir_int(b, p.c)), ic),
					 tir_int(b, p.h * p.w)));
	u = tir_loop(b, tir_int(b, p.kh));
	v = tir_loop(b, tir_int(b, p.kw));
	tap = tir_let(b, "tap", tir_add(b, tir_mul(b, og, tir_int(b, k2)),
					tir_add(b, tir_mul(b, u, tir_int(b, p.kw)), v)));
	/* offset[n, 2 * tap + {0, 1}, i, j]: dy then dx */
	at = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, idx[0],
		tir_int(b, 2 * p.og * k2)), tir_mul(b, tap, tir_int(b, 2))), tir_int(b, p.oh)),
		idx[2]), tir_int(b, p.ow)), idx[3]);
	at = tir_let(b, "at", at);
	dy = tir_load(b, L->in[2], at);
	dx = tir_load(b, L->in[2], tir_add(b, at, tir_int(b, p.oh * p.ow)));
	py = tir_add(b, tir_cast(b, t, tir_add(b, tir_bin(b, BIN_SUB, tir_mul(b, idx[2],
		tir_int(b, p.sh)), tir_int(b, p.pt)), tir_mul(b, u, tir_int(b, p.dh)))), dy);
	px = tir_add(b, tir_cast(b, t, tir_add(b, tir_bin(b, BIN_SUB, tir_mul(b, idx[3],
		tir_int(b, p.sw)), tir_int(b, p.pl)), tir_mul(b, v, tir_int(b, p.dw)))), dx);
	m = mask ? tir_load(b, mask, tir_add(b, tir_mul(b, tir_add(b, tir_mul(b,
		tir_add(b, tir_mul(b, idx[0], tir_int(b, p.og * k2)), tap), tir_int(b, p.oh)),
		idx[2]), tir_int(b, p.ow)), idx[3])) : NULL;
	wv = tir_load(b, L->in[1], tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, idx[1],
		tir_int(b, cg)), c), tir_int(b, k2)), tir_add(b, tir_mul(b, u, tir_int(b, p.kw)), v)));
	wv = tir_mul(b, wv, deform_sample(L, plane, tir_let(b, "py", py), tir_let(b, "px", px),
					  &p, t));
	tir_assign(b, acc, tir_add(b, acc, m ? tir_mul(b, wv, m) : wv));
	lower_end_loops(L, 3);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), acc);
	lower_end_loops(L, 4);
	return 0;
}

/* ---- ImageDecoder ---- */

/*
 * The pixel format's code (runtime/rt_image.h's RT_IMAGE_RGB, _BGR,
 * _GRAY), or -1 after a diagnostic.
 */
static int imagedecoder_format(struct graph *g, const struct node *n)
{
	static const char *const names[] = { "RGB", "BGR", "Grayscale" };
	const char *f = node_attr_str(n, "pixel_format", "RGB");

	for (int i = 0; i < 3; i++)
		if (!strcmp(f, names[i]))
			return i;
	diag_error(g->ctx, "%s: attr 'pixel_format' is '%s', expected RGB, BGR or Grayscale",
		   node_loc(g, n), f);
	return -1;
}

/*
 * Output: uint8 [H, W, C], C 3 (RGB, BGR) or 1 (Grayscale); H and W are
 * data symbols that the run-time shape function reads from the image's
 * header (runtime/rt_imgprobe.c).
 */
int infer_imagedecoder(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;
	int f;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    (f = imagedecoder_format(g, n)) < 0)
		return -1;
	if (x->dtype != DTYPE_U8 || x->shape.rank != 1) {
		diag_error(g->ctx, "%s: input 'encoded_stream' must be a 1-D uint8 tensor",
			   node_loc(g, n));
		return -1;
	}
	s.rank = 3;
	s.d[0] = graph_data_sym(g, n->out[0], 0);
	s.d[1] = graph_data_sym(g, n->out[0], 1);
	s.d[2] = dim_const(f == 2 ? 1 : 3);
	infer_set(g, n, 0, DTYPE_U8, &s);
	return 0;
}

/*
 * One rt_image_decode call (runtime/rt_image.h, the c target's prelude,
 * which links the image libraries): the bytes, their count, the output and
 * the H and W the shape function bound, which the decoded image must have.
 */
int lower_imagedecoder(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *args[6];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_dim(L->b, x->shape.d[0]);
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = tir_dim(L->b, y->shape.d[0]);
	args[4] = tir_dim(L->b, y->shape.d[1]);
	args[5] = tir_int(L->b, imagedecoder_format(L->g, L->n));
	tir_extern(L->b, "rt_image_decode", args, 6);
	return 0;
}
