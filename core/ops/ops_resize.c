/*
 * ops_resize.c - Resize and Upsample (its opset 7-9 form).
 *
 * Scales or sizes must be constants.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- Resize and Upsample ---- */

enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum rs_coord {
	RC_HALF_PIXEL, RC_PYTORCH_HALF_PIXEL, RC_ALIGN_CORNERS, RC_ASYMMETRIC,
	RC_TF_HALF_PIXEL_FOR_NN, RC_TF_CROP_AND_RESIZE, RC_HALF_PIXEL_SYMMETRIC, RC_COUNT
};
/* Resize-18 keep_aspect_ratio_policy: how sizes are read */
enum rs_keep { RK_STRETCH, RK_NOT_LARGER, RK_NOT_SMALLER, RK_COUNT };
/* RN_SIMPLE: Upsample and Resize-10: floor, or ceil when downsampling */
enum rs_nearest {
	RN_ROUND_PREFER_FLOOR, RN_ROUND_PREFER_CEIL, RN_FLOOR, RN_CEIL, RN_SIMPLE, RN_COUNT
};

struct resize_plan {
	enum rs_mode mode;
	enum rs_coord coord;
	enum rs_nearest nearest;
	enum rs_keep keep;
	bool antialias;
	double scale[MAX_RANK];			/* output / input, as the coordinates use it */
	double roi_b[MAX_RANK], roi_e[MAX_RANK];	/* tf_crop_and_resize */
	bool same[MAX_RANK];			/* axis copied unchanged */
	double cubic_a, extrapolation;
	bool exclude_outside;
	struct shape out;
	/*
	 * scales or sizes known only at run time: the kernel reads them (and
	 * roi) from its inputs, the output dims are data symbols
	 */
	bool rt;
	int sc_in, sz_in, roi_in;		/* input indices, -1: none or constant */
	int na, axes[MAX_RANK];			/* the axes scales, sizes and roi refer to */
	int at[MAX_RANK];			/* index of axis k in them, or -1 */
	/*
	 * constant scales or sizes on a symbolic axis: the run computes the
	 * scale from the input's length (sizes, stretched) or takes the
	 * constant one (scales), as for run-time scales
	 */
	bool sym[MAX_RANK];
};

static int pick(struct graph *g, struct node *n, const char *attr, const char *def,
		const char *const *names, int count)
{
	const char *s = node_attr_str(n, attr, def);

	for (int i = 0; i < count; i++)
		if (!strcmp(s, names[i]))
			return i;
	diag_error(g->ctx, "%s: %s '%s' is not supported", node_loc(g, n), attr, s);
	return -1;
}

/* Reads the attributes that pick the interpolation; -1 after a diagnostic. */
static int resize_modes(struct graph *g, struct node *n, bool old, struct resize_plan *p)
{
	static const char *const modes[] = { "nearest", "linear", "cubic" };
	static const char *const coords[RC_COUNT] = {
		"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
		"tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric",
	};
	static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil",
						"floor", "ceil" };
	static const char *const keeps[RK_COUNT] = { "stretch", "not_larger", "not_smaller" };
	int m = pick(g, n, "mode", "nearest", modes, old ? 2 : 3), c, r, k;

	if (m < 0)
		return -1;
	p->mode = (enum rs_mode)m;
	p->cubic_a = node_attr_float(n, "cubic_coeff_a", -0.75);
	p->exclude_outside = node_attr_int(n, "exclude_outside", 0) != 0;
	p->extrapolation = node_attr_float(n, "extrapolation_value", 0);
	if (old) {
		p->coord = RC_ASYMMETRIC;
		p->nearest = RN_SIMPLE;
		return 0;
	}
	if ((c = pick(g, n, "coordinate_transformation_mode", "half_pixel", coords,
		      RC_COUNT)) < 0 ||
	    (r = pick(g, n, "nearest_mode", "round_prefer_floor", nearests, 4)) < 0 ||
	    (k = pick(g, n, "keep_aspect_ratio_policy", "stretch", keeps, RK_COUNT)) < 0)
		return -1;
	p->coord = (enum rs_coord)c;
	p->nearest = (enum rs_nearest)r;
	p->keep = (enum rs_keep)k;
	/* the filter is stretched only when downscaling (see resize_taps_aa) */
	p->antialias = p->mode != RS_NEAREST && node_attr_int(n, "antialias", 0) != 0;
	return 0;
}

/* A size computed from shapes that is the input's own (symbolic) length. */
#define RESIZE_SAME INT64_MIN

/*
 * Reads the sizes input: constants, or computed from shapes where a
 * symbolic size must be the axis's own length (sizes = Shape(x)[0:2] and
 * [8, 8]); those read RESIZE_SAME. 0 or -1 after a diagnostic.
 */
static int resize_sizes(struct graph *g, struct node *n, const int *axes, int64_t **sz,
			int64_t *nsz)
{
	const struct value *x = node_in(g, n, 0);
	struct dim *v;

	if (infer_sym_ints(g, n, 3, &v, nsz) < 0)
		return -1;
	*sz = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(*nsz + 1));
	for (int64_t k = 0; k < *nsz; k++) {
		if (dim_is_const(v[k])) {
			(*sz)[k] = v[k].c;
		} else if (k < x->shape.rank && dim_eq(v[k], x->shape.d[axes[k]])) {
			(*sz)[k] = RESIZE_SAME;
		} else {
			diag_error(g->ctx, "%s: size %lld is computed from symbolic dims and is not "
				   "the input's length", node_loc(g, n), (long long)k);
			return -1;
		}
	}
	return 0;
}

/*
 * Scales (attribute or constant input) or sizes (constant input) of the r
 * axes they refer to; -1 on error.
 */
static int resize_factors(struct graph *g, struct node *n, bool old, const int *axes, int r,
			  double **sc, int64_t **sz)
{
	int si = old ? 1 : 2;
	int64_t nsc = 0, nsz = 0;

	*sc = NULL;
	*sz = NULL;
	if (n->op == OP_UPSAMPLE && g->opset < 9) {
		const struct attr *a = node_attr(n, "scales");

		if (!a || a->kind != ATTR_FLOATS) {
			diag_error(g->ctx, "%s: attribute 'scales' is missing", node_loc(g, n));
			return -1;
		}
		*sc = a->floats;
		nsc = a->n;
	} else if (node_in(g, n, si) && infer_const_doubles(g, n, si, sc, &nsc) < 0) {
		return -1;
	}
	if (!old && node_in(g, n, 3) && resize_sizes(g, n, axes, sz, &nsz) < 0)
		return -1;
	if ((nsc > 0) == (nsz > 0)) {
		diag_error(g->ctx, "%s: exactly one of scales and sizes must be given",
			   node_loc(g, n));
		return -1;
	}
	if ((nsc ? nsc : nsz) != r) {
		diag_error(g->ctx, "%s: %s has %lld values for %d axes", node_loc(g, n),
			   nsc ? "scales" : "sizes", (long long)(nsc ? nsc : nsz), r);
		return -1;
	}
	/* an empty scales or sizes tensor counts as absent */
	if (!nsc)
		*sc = NULL;
	else
		*sz = NULL;
	return 0;
}

/*
 * The axes that scales, sizes and roi refer to: Resize-18's axes attribute,
 * else all. Their count, or -1 after a diagnostic.
 */
static int resize_axes(struct graph *g, struct node *n, bool old, int r, int *axes)
{
	const int64_t *v;
	int na = old ? -1 : node_attr_ints(n, "axes", &v);
	bool seen[MAX_RANK] = { false };

	if (na < 0) {
		for (int k = 0; k < r; k++)
			axes[k] = k;
		return r;
	}
	if (na > r) {
		diag_error(g->ctx, "%s: axes has %d values for rank %d", node_loc(g, n), na, r);
		return -1;
	}
	for (int i = 0; i < na; i++) {
		int a = infer_axis(g, n, v[i], r);

		if (a < 0)
			return -1;
		if (seen[a]) {
			diag_error(g->ctx, "%s: axis %d is repeated in axes", node_loc(g, n), a);
			return -1;
		}
		seen[a] = true;
		axes[i] = a;
	}
	return na;
}

/*
 * keep_aspect_ratio_policy not_larger / not_smaller: the one scale of all
 * resized axes, the smallest / largest of sizes[i] / input length. -1 after
 * a diagnostic.
 */
static int resize_keep_scale(struct graph *g, struct node *n, const struct resize_plan *p,
			     const struct shape *x, const int *axes, int na, const int64_t *sz,
			     double *scale)
{
	for (int i = 0; i < na; i++) {
		struct dim d = x->d[axes[i]];
		double s;

		if (!dim_is_const(d) || d.c == 0 || sz[i] < 0) {
			diag_error(g->ctx, "%s: keep_aspect_ratio_policy needs constant non-empty "
				   "input lengths and non-negative sizes", node_loc(g, n));
			return -1;
		}
		s = (double)sz[i] / (double)d.c;
		if (i == 0 || (p->keep == RK_NOT_LARGER ? s < *scale : s > *scale))
			*scale = s;
	}
	return 0;
}

/*
 * Input i as a run-time tensor of static element count (*count, 0 counting
 * as absent): neither a constant nor shape arithmetic.
 */
static bool resize_is_data(struct graph *g, struct node *n, int i, int64_t *count)
{
	const struct value *v = node_in(g, n, i);

	*count = 0;
	if (!v || !v->has_shape || v->data || v->sym || !shape_is_static(&v->shape))
		return false;
	*count = shape_numel_static(&v->shape);
	return true;
}

/* Whether input i is absent or has no elements (an empty constant or input). */
static bool resize_is_empty(struct graph *g, struct node *n, int i)
{
	const struct value *v = node_in(g, n, i);

	return !v || (v->has_shape && shape_is_static(&v->shape) &&
		      shape_numel_static(&v->shape) == 0);
}

/*
 * When scales or sizes are known only at run time: fills the plan's
 * run-time part (p->rt) and the output shape, data symbols on the axes
 * they refer to. Returns na, or -1 after a diagnostic.
 */
static int resize_data_plan(struct graph *g, struct node *n, bool old, const int *axes, int na,
			    struct resize_plan *p)
{
	const struct value *x = node_in(g, n, 0);
	int si = old ? 1 : 2;
	int64_t nsc = 0, nsz = 0, nroi;
	bool dsc, dsz;
	double *roi;

	p->rt = false;
	if (n->op == OP_UPSAMPLE && g->opset < 9)
		return na;
	dsc = resize_is_data(g, n, si, &nsc) && nsc > 0;
	dsz = !old && resize_is_data(g, n, 3, &nsz) && nsz > 0;
	if (!dsc && !dsz)
		return na;
	/* the other one must be absent or empty */
	if ((dsc && !old && !resize_is_empty(g, n, 3)) || (dsz && !resize_is_empty(g, n, si))) {
		diag_error(g->ctx, "%s: exactly one of scales and sizes must be given",
			   node_loc(g, n));
		return -1;
	}
	if ((dsc ? nsc : nsz) != na) {
		diag_error(g->ctx, "%s: %s has %lld values for %d axes", node_loc(g, n),
			   dsc ? "scales" : "sizes", (long long)(dsc ? nsc : nsz), na);
		return -1;
	}
	if (dsc && node_in(g, n, si)->dtype != DTYPE_F32 && node_in(g, n, si)->dtype != DTYPE_F64) {
		diag_error(g->ctx, "%s: scales known only at run time must be float or double",
			   node_loc(g, n));
		return -1;
	}
	p->rt = true;
	p->sc_in = dsc ? si : -1;
	p->sz_in = dsz ? 3 : -1;
	p->roi_in = -1;
	p->na = na;
	if (p->coord == RC_TF_CROP_AND_RESIZE) {
		if (node_in(g, n, 1) && resize_is_data(g, n, 1, &nroi)) {
			p->roi_in = 1;
		} else if (!node_in(g, n, 1) || infer_const_doubles(g, n, 1, &roi, &nroi) < 0) {
			return -1;
		}
		if (nroi != 2 * na) {
			diag_error(g->ctx, "%s: roi has %lld values, expected %d", node_loc(g, n),
				   (long long)nroi, 2 * na);
			return -1;
		}
	}
	p->out = x->shape;
	for (int k = 0; k < x->shape.rank; k++) {
		p->at[k] = -1;
		p->same[k] = true;
		p->scale[k] = 1;
		p->roi_b[k] = 0;
		p->roi_e[k] = 1;
	}
	for (int i = 0; i < na; i++) {
		int k = axes[i];

		p->axes[i] = k;
		p->at[k] = i;
		p->same[k] = false;
		if (p->coord == RC_TF_CROP_AND_RESIZE && p->roi_in < 0) {
			p->roi_b[k] = roi[i];
			p->roi_e[k] = roi[i + na];
		}
		p->out.d[k] = graph_data_sym(g, n->out[0], k);
	}
	return na;
}

static int resize_plan(struct graph *g, struct node *n, struct resize_plan *p);

/*
 * The rt_shape attr of a Resize or Upsample whose scales or sizes are known
 * only at run time (runtime/rt_shape.c's shape_resize): bit 0
 * tf_crop_and_resize, bits 1-2 keep_aspect_ratio_policy, bit 3 the old
 * input order (scales is input 1), bits 4-7 the number of axes, then 4
 * bits per axis from bit 8.
 */
int64_t resize_shape_attr(struct graph *g, const struct node *n)
{
	struct resize_plan p;
	int64_t a;

	if (resize_plan(g, (struct node *)n, &p) < 0 || !p.rt)
		BUG("Resize node '%s' has no run-time shape", n->name);
	a = (p.coord == RC_TF_CROP_AND_RESIZE) | (int64_t)p.keep << 1 |
	    (int64_t)(p.sc_in == 1) << 3 | (int64_t)p.na << 4;
	for (int i = 0; i < p.na; i++)
		a |= (int64_t)p.axes[i] << (8 + 4 * i);
	return a;
}

/*
 * Axis k of symbolic length d resized by a constant: to sizes sz (> 0,
 * stretched), or by scale sc when the output length floor(d * sc) is a
 * dim: an integer sc multiplies, 1 / 2^j divides (exactly, as the spec's
 * floor of the float product). 0, or -1 after a diagnostic.
 */
static int resize_sym_axis(struct graph *g, struct node *n, struct resize_plan *p, int k,
			   struct dim d, double sc, int64_t sz)
{
	double inv = sc > 0 ? 1 / sc : 0;

	p->sym[k] = true;
	if (p->coord == RC_TF_CROP_AND_RESIZE || (sz >= 0 && p->keep != RK_STRETCH)) {
		diag_error(g->ctx, "%s: resizing symbolic axis %d is supported with "
			   "stretched sizes or scales, not %s", node_loc(g, n), k,
			   sz >= 0 ? "keep_aspect_ratio_policy" : "tf_crop_and_resize");
		return -1;
	}
	if (sz >= 0) {
		if (sz == 0 || sz > DIM_LIMIT) {
			diag_error(g->ctx, "%s: cannot resize symbolic axis %d to %lld",
				   node_loc(g, n), k, (long long)sz);
			return -1;
		}
		p->out.d[k] = dim_const(sz);
		p->scale[k] = 0;	/* the run's: sz / d */
		return 0;
	}
	p->scale[k] = sc;
	if (sc >= 1 && sc == floor(sc) && sc <= DIM_LIMIT &&
	    dim_mul(d, dim_const((int64_t)sc), &p->out.d[k]))
		return 0;
	if (sc < 1 && inv == floor(inv) && ((int64_t)inv & ((int64_t)inv - 1)) == 0 &&
	    graph_derive_sym(g, SYM_DIV, d, dim_const((int64_t)inv), &p->out.d[k]))
		return 0;
	diag_error(g->ctx, "%s: resizing symbolic axis %d by %g is not supported (an integer "
		   "scale, 1/2, 1/4, ... or constant sizes are)", node_loc(g, n), k, sc);
	return -1;
}

/* Output shape and per-axis coordinate parameters, shared by infer and lower. */
static int resize_plan(struct graph *g, struct node *n, struct resize_plan *p)
{
	bool old = n->op == OP_UPSAMPLE || g->opset < 11, tf;
	struct value *x = infer_input(g, n, 0);
	double *sc, *roi = NULL, keep_scale = 1;
	int64_t *sz, nroi;
	int r, na, axes[MAX_RANK], at[MAX_RANK];

	memset(p, 0, sizeof(*p));
	if (!x || resize_modes(g, n, old, p) < 0)
		return -1;
	r = x->shape.rank;
	if ((na = resize_axes(g, n, old, r, axes)) < 0 ||
	    (na = resize_data_plan(g, n, old, axes, na, p)) < 0)
		return -1;
	if (p->rt)
		return 0;
	if (resize_factors(g, n, old, axes, na, &sc, &sz) < 0)
		return -1;
	if (p->coord == RC_TF_CROP_AND_RESIZE) {
		if (!node_in(g, n, 1) || infer_const_doubles(g, n, 1, &roi, &nroi) < 0)
			return -1;
		if (nroi != 2 * na) {
			diag_error(g->ctx, "%s: roi has %lld values, expected %d", node_loc(g, n),
				   (long long)nroi, 2 * na);
			return -1;
		}
	}
	if (sz && p->keep != RK_STRETCH &&
	    resize_keep_scale(g, n, p, &x->shape, axes, na, sz, &keep_scale) < 0)
		return -1;
	/* at[k]: the index of axis k in scales, sizes and roi, or -1 */
	for (int k = 0; k < r; k++)
		at[k] = -1;
	for (int i = 0; i < na; i++)
		at[axes[i]] = i;
	tf = p->coord == RC_TF_CROP_AND_RESIZE || p->coord == RC_TF_HALF_PIXEL_FOR_NN;
	p->out = x->shape;
	for (int k = 0; k < r; k++) {
		struct dim d = x->shape.d[k];
		int i = at[k];
		double len;

		p->roi_b[k] = roi && i >= 0 ? roi[i] : 0;
		p->roi_e[k] = roi && i >= 0 ? roi[i + na] : 1;
		p->scale[k] = 1;
		p->same[k] = i < 0;
		if (i < 0)
			continue;
		if (sc && !(sc[i] > 0)) {
			diag_error(g->ctx, "%s: scale %g is not positive", node_loc(g, n), sc[i]);
			return -1;
		}
		/* an axis kept as it is may be symbolic */
		p->same[k] = !tf && (sc ? sc[i] == 1 : p->keep != RK_STRETCH ? keep_scale == 1
				     : sz[i] == RESIZE_SAME || dim_eq(d, dim_const(sz[i])));
		if (p->same[k])
			continue;
		if (!dim_is_const(d)) {
			if (resize_sym_axis(g, n, p, k, d, sc ? sc[i] : 0, sz ? sz[i] : -1) < 0)
				return -1;
			continue;
		}
		if (sz && p->keep != RK_STRETCH) {
			/* round half up, as the spec says */
			p->scale[k] = keep_scale;
			p->out.d[k] = dim_const((int64_t)(keep_scale * (double)d.c + 0.5));
			continue;
		}
		if (sz && (d.c == 0 || sz[i] < 0 || sz[i] > DIM_LIMIT)) {
			diag_error(g->ctx, "%s: cannot resize axis %d from %lld to %lld",
				   node_loc(g, n), k, (long long)d.c, (long long)sz[i]);
			return -1;
		}
		if (sz) {
			p->scale[k] = (double)sz[i] / (double)d.c;
			p->out.d[k] = dim_const(sz[i]);
			continue;
		}
		p->scale[k] = sc[i];
		len = (double)d.c * sc[i];
		if (p->coord == RC_TF_CROP_AND_RESIZE)
			len *= p->roi_e[k] - p->roi_b[k];
		if (!(len >= 0 && len < (double)DIM_LIMIT)) {
			diag_error(g->ctx, "%s: output length of axis %d is out of range",
				   node_loc(g, n), k);
			return -1;
		}
		p->out.d[k] = dim_const((int64_t)floor(len));
	}
	return 0;
}

/* Resize (opsets 10+) and Upsample: output lengths from constant scales or sizes. */
int infer_resize(struct graph *g, struct node *n)
{
	struct resize_plan p;
	struct value *x;
	bool up = n->op == OP_UPSAMPLE, old = up || g->opset < 11;

	if (infer_arity(g, n, 1, up ? (g->opset < 9 ? 1 : 2) : old ? 2 : 4, 1) < 0 ||
	    resize_plan(g, n, &p) < 0)
		return -1;
	x = node_in(g, n, 0);
	if (p.mode != RS_NEAREST && x->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: %s interpolation of bool is not supported",
			   node_loc(g, n), p.mode == RS_LINEAR ? "linear" : "cubic");
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &p.out);
	return 0;
}

static struct tir *f64(struct lower *L, double v)
{
	return tir_flt(L->b, DTYPE_F64, v);
}

/* Element i of input `in` of the node being lowered, as float64. */
static struct tir *load_f64(struct lower *L, int in, int i)
{
	return tir_cast(L->b, DTYPE_F64, tir_load(L->b, L->in[in], tir_int(L->b, i)));
}

/*
 * The scale of axis k when scales or sizes are known only at run time: the
 * scales element, the output length over the input's, or under
 * keep_aspect_ratio_policy the smallest / largest of those over the axes.
 */
static struct tir *resize_rt_scale(struct lower *L, const struct resize_plan *p, int k)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *s = NULL;

	if (p->sc_in >= 0)
		return load_f64(L, p->sc_in, p->at[k]);
	if (p->keep == RK_STRETCH)
		return tir_bin(b, BIN_DIV, tir_cast(b, DTYPE_F64, tir_dim(b, y->shape.d[k])),
			       tir_cast(b, DTYPE_F64, tir_dim(b, x->shape.d[k])));
	for (int i = 0; i < p->na; i++) {
		struct tir *si = tir_bin(b, BIN_DIV, load_f64(L, p->sz_in, i), tir_cast(b, DTYPE_F64,
					 tir_dim(b, x->shape.d[p->axes[i]])));

		s = s ? tir_bin(b, p->keep == RK_NOT_LARGER ? BIN_MIN : BIN_MAX, s, si) : si;
	}
	return s;
}

/*
 * resize_coord with the scale (and roi) known only at run time: the same
 * formulas on expressions. in: the input length (float64), out: the output's.
 */
static struct tir *resize_coord_rt(struct lower *L, const struct resize_plan *p, struct tir *o,
				   struct tir *scale, struct tir *in, struct tir *out, int axis)
{
	struct tir_builder *b = L->b;
	struct tir *width = tir_let(b, "width", tir_mul(b, scale, in));
	struct tir *x = tir_cast(b, DTYPE_F64, o), *one = tir_bin(b, BIN_EQ, width, f64(L, 1));
	struct tir *hp = tir_bin(b, BIN_SUB, tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)),
						     scale), f64(L, 0.5));
	struct tir *in1 = tir_bin(b, BIN_SUB, in, f64(L, 1)), *rb, *re, *wd;

	switch (p->coord) {
	case RC_HALF_PIXEL:
		return hp;
	case RC_HALF_PIXEL_SYMMETRIC:
		return tir_add(b, tir_mul(b, tir_bin(b, BIN_DIV, in, f64(L, 2)),
					  tir_bin(b, BIN_SUB, f64(L, 1), tir_bin(b, BIN_DIV, out,
										 width))), hp);
	case RC_PYTORCH_HALF_PIXEL:
		return tir_select(b, one, f64(L, -0.5), hp);
	case RC_ALIGN_CORNERS:
		return tir_select(b, one, f64(L, 0), tir_bin(b, BIN_DIV, tir_mul(b, x, in1),
							     tir_bin(b, BIN_SUB, width, f64(L, 1))));
	case RC_TF_HALF_PIXEL_FOR_NN:
		return tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)), scale);
	case RC_TF_CROP_AND_RESIZE:
		rb = p->roi_in >= 0 ? load_f64(L, p->roi_in, p->at[axis]) : f64(L, p->roi_b[axis]);
		re = p->roi_in >= 0 ? load_f64(L, p->roi_in, p->at[axis] + p->na)
			: f64(L, p->roi_e[axis]);
		rb = tir_let(b, "rb", rb);
		wd = tir_let(b, "rw", tir_mul(b, tir_bin(b, BIN_SUB, re, rb), in1));
		return tir_add(b, tir_select(b, one, tir_bin(b, BIN_DIV, wd, f64(L, 2)),
					     tir_bin(b, BIN_DIV, tir_mul(b, x, wd),
						     tir_bin(b, BIN_SUB, width, f64(L, 1)))),
			       tir_mul(b, rb, in1));
	default:
		return tir_bin(b, BIN_DIV, x, scale);
	}
}

/*
 * Input coordinate (float64) of output index o on an axis of length in. As
 * in the ONNX reference, the unrounded output length scale * in is used.
 */
static struct tir *resize_coord(struct lower *L, const struct resize_plan *p, struct tir *o,
				int64_t in, int axis)
{
	struct tir_builder *b = L->b;
	double scale = p->scale[axis], width = scale * (double)in;
	struct tir *x = tir_cast(b, DTYPE_F64, o);
	struct tir *hp = tir_bin(b, BIN_SUB, tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)),
						     f64(L, scale)), f64(L, 0.5));
	double rb = p->roi_b[axis], re = p->roi_e[axis];

	switch (p->coord) {
	case RC_HALF_PIXEL:
		return hp;
	case RC_HALF_PIXEL_SYMMETRIC: {
		/* shifts the half_pixel grid by the rounding of the output length */
		double adjust = (double)p->out.d[axis].c / width;

		return tir_add(b, f64(L, (double)in / 2 * (1 - adjust)), hp);
	}
	case RC_PYTORCH_HALF_PIXEL:
		return width == 1 ? f64(L, -0.5) : hp;
	case RC_ALIGN_CORNERS:
		if (width == 1)
			return f64(L, 0);
		return tir_bin(b, BIN_DIV, tir_mul(b, x, f64(L, (double)(in - 1))),
			       f64(L, width - 1));
	case RC_TF_HALF_PIXEL_FOR_NN:
		return tir_bin(b, BIN_DIV, tir_add(b, x, f64(L, 0.5)), f64(L, scale));
	case RC_TF_CROP_AND_RESIZE:
		if (width == 1)
			return f64(L, (re - rb) * (double)(in - 1) / 2 + rb * (double)(in - 1));
		return tir_add(b, tir_bin(b, BIN_DIV, tir_mul(b, x, f64(L, (re - rb) *
									   (double)(in - 1))),
					  f64(L, width - 1)), f64(L, rb * (double)(in - 1)));
	default:
		return tir_bin(b, BIN_DIV, x, f64(L, scale));
	}
}

struct taps {
	int n;
	struct tir *at[4], *w[4];	/* input indices and weights (none for nearest) */
	/* antialias (resize_taps_aa): a loop over n taps from i0 + start instead */
	bool loop;
	int64_t start, in;
	double s;			/* the scale that stretches the filter */
	struct tir *c, *i0, *wsum;	/* coordinate, base index, the weights' sum */
	/*
	 * with the scale known only at run time: the tap count, the scale
	 * (at most 1) and the input's length as let variables; else NULL
	 */
	struct tir *rn, *rs, *rin;
};

/* A looped axis's tap count, filter scale and input length, constant or not. */
static struct tir *taps_n(struct lower *L, const struct taps *t)
{
	return t->rn ? t->rn : tir_int(L->b, t->n);
}

static struct tir *taps_s(struct lower *L, const struct taps *t)
{
	return t->rs ? t->rs : tir_const(L->b, DTYPE_F64, t->s);
}

static struct tir *taps_in(struct lower *L, const struct taps *t)
{
	return t->rin ? t->rin : tir_int(L->b, t->in);
}

/*
 * Fills the taps (clamped input indices and weights) of coordinate c on an
 * axis of length dim; rscale: the scale when known only at run time, else
 * NULL and scale.
 */
static void resize_taps(struct lower *L, const struct resize_plan *p, struct tir *c, double scale,
			struct tir *rscale, struct tir *dim, struct taps *t)
{
	struct tir_builder *b = L->b;
	struct tir *fl, *r, *i0, *sum = NULL;
	double A = p->cubic_a;

	t->loop = false;
	if (p->mode == RS_NEAREST) {
		enum rs_nearest m = p->nearest;

		if (m == RN_SIMPLE && rscale) {
			/* ceil when downsampling */
			c = tir_select(b, tir_bin(b, BIN_LT, rscale, f64(L, 1)),
				       tir_call1(b, INTRIN_CEIL, c), tir_call1(b, INTRIN_FLOOR, c));
			m = RN_COUNT;
		} else if (m == RN_SIMPLE) {
			m = scale < 1 ? RN_CEIL : RN_FLOOR;
		}
		switch (m) {
		case RN_COUNT:
			break;
		case RN_ROUND_PREFER_FLOOR:
			c = tir_call1(b, INTRIN_CEIL, tir_bin(b, BIN_SUB, c, f64(L, 0.5)));
			break;
		case RN_ROUND_PREFER_CEIL:
			c = tir_call1(b, INTRIN_FLOOR, tir_add(b, c, f64(L, 0.5)));
			break;
		case RN_CEIL:
			c = tir_call1(b, INTRIN_CEIL, c);
			break;
		default:
			c = tir_call1(b, INTRIN_FLOOR, c);
			break;
		}
		t->n = 1;
		t->at[0] = tir_let(b, "at", lower_clamp_index(L, tir_cast(b, DTYPE_I64, c), dim));
		return;
	}
	fl = tir_let(b, "fl", tir_call1(b, INTRIN_FLOOR, c));
	r = tir_let(b, "r", tir_bin(b, BIN_SUB, c, fl));
	i0 = tir_let(b, "i0", tir_cast(b, DTYPE_I64, fl));
	if (p->mode == RS_LINEAR) {
		t->n = 2;
		t->at[0] = tir_let(b, "at", lower_clamp_index(L, i0, dim));
		t->at[1] = tir_let(b, "at", lower_clamp_index(L, tir_add(b, i0, tir_int(b, 1)), dim));
		t->w[0] = tir_let(b, "w", tir_bin(b, BIN_SUB, f64(L, 1), r));
		t->w[1] = r;
		return;
	}
	/* cubic convolution with coefficient A on taps i0 - 1 .. i0 + 2 */
	t->n = 4;
	for (int j = 0; j < 4; j++) {
		/* distance of tap j from the coordinate */
		struct tir *d, *w, *raw;

		if (j == 1)
			d = r;
		else
			d = tir_let(b, "d", j == 0 ? tir_add(b, r, f64(L, 1))
				    : tir_bin(b, BIN_SUB, f64(L, j - 1), r));
		if (j == 1 || j == 2) {
			/* ((A + 2) d - (A + 3)) d^2 + 1 */
			w = tir_bin(b, BIN_SUB, tir_mul(b, f64(L, A + 2), d), f64(L, A + 3));
			w = tir_add(b, tir_mul(b, tir_mul(b, w, d), d), f64(L, 1));
		} else {
			/* ((A d - 5A) d + 8A) d - 4A */
			w = tir_bin(b, BIN_SUB, tir_mul(b, f64(L, A), d), f64(L, 5 * A));
			w = tir_add(b, tir_mul(b, w, d), f64(L, 8 * A));
			w = tir_bin(b, BIN_SUB, tir_mul(b, w, d), f64(L, 4 * A));
		}
		raw = tir_add(b, i0, tir_int(b, j - 1));
		if (p->exclude_outside)
			w = tir_select(b, lower_in_range(L, raw, dim), w, f64(L, 0));
		t->w[j] = tir_let(b, "w", w);
		t->at[j] = tir_let(b, "at", lower_clamp_index(L, raw, dim));
		sum = sum ? tir_add(b, sum, t->w[j]) : t->w[j];
	}
	if (p->exclude_outside) {
		sum = tir_let(b, "wsum", sum);
		for (int j = 0; j < 4; j++)
			t->w[j] = tir_let(b, "w", tir_bin(b, BIN_DIV, t->w[j], sum));
	}
}

/* The antialias filter at distance u (in output pixels): a triangle or the cubic kernel. */
static struct tir *aa_weight(struct lower *L, const struct resize_plan *p, struct tir *u)
{
	struct tir_builder *b = L->b;
	double A = p->cubic_a;
	struct tir *x = tir_let(b, "u", tir_call1(b, INTRIN_FABS, u)), *near, *far;

	if (p->mode == RS_LINEAR)
		return tir_bin(b, BIN_MAX, f64(L, 0), tir_bin(b, BIN_SUB, f64(L, 1), x));
	/* ((A + 2) x - (A + 3)) x^2 + 1 within 1, ((A x - 5A) x + 8A) x - 4A within 2 */
	near = tir_add(b, tir_mul(b, tir_mul(b, tir_bin(b, BIN_SUB, tir_mul(b, f64(L, A + 2), x),
							f64(L, A + 3)), x), x), f64(L, 1));
	far = tir_bin(b, BIN_SUB, tir_mul(b, tir_add(b, tir_mul(b, tir_bin(b, BIN_SUB,
			tir_mul(b, f64(L, A), x), f64(L, 5 * A)), x), f64(L, 8 * A)), x), f64(L, 4 * A));
	return tir_select(b, tir_bin(b, BIN_LE, x, f64(L, 1)), near,
			  tir_select(b, tir_bin(b, BIN_LT, x, f64(L, 2)), far, f64(L, 0)));
}

/* Weight of tap j of a looped axis, zero outside the input under exclude_outside. */
static struct tir *aa_tap_weight(struct lower *L, const struct resize_plan *p,
				 const struct taps *t, struct tir *idx)
{
	struct tir_builder *b = L->b;
	struct tir *w = aa_weight(L, p, tir_mul(b, tir_bin(b, BIN_SUB, tir_cast(b, DTYPE_F64, idx),
							  t->c), taps_s(L, t)));

	if (p->exclude_outside)
		w = tir_select(b, lower_in_range(L, idx, taps_in(L, t)), w, f64(L, 0));
	return w;
}

/*
 * Antialiased linear or cubic taps when downscaling by s: the filter is
 * stretched by 1 / s, so 2 - 2 * start taps from ceil(c) - 1 + start,
 * start = floor(-1 / s) + 1 (linear) or floor(-2 / s) + 1 (cubic), weighted
 * by the filter at (index - c) * s and normalised by their sum (the taps
 * inside the input only, under exclude_outside); outside indices clamp.
 */
static void resize_taps_aa(struct lower *L, const struct resize_plan *p, struct tir *c,
			   double scale, int64_t in, struct taps *t)
{
	struct tir_builder *b = L->b;
	struct tir *j, *idx;

	memset(t, 0, sizeof(*t));
	t->loop = true;
	t->s = scale;
	t->in = in;
	t->start = (int64_t)floor((p->mode == RS_LINEAR ? -1 : -2) / scale) + 1;
	t->n = (int)(2 - 2 * t->start);
	t->c = c;
	t->i0 = tir_let(b, "i0", tir_add(b, tir_cast(b, DTYPE_I64, tir_bin(b, BIN_SUB,
				tir_call1(b, INTRIN_CEIL, c), f64(L, 1))), tir_int(b, t->start)));
	t->wsum = tir_let(b, "wsum", f64(L, 0));
	j = tir_loop(b, taps_n(L, t));
	idx = tir_let(b, "ix", tir_add(b, t->i0, j));
	tir_assign(b, t->wsum, tir_add(b, t->wsum, aa_tap_weight(L, p, t, idx)));
	tir_end(b);
}

/*
 * resize_taps_aa with the scale s known only at run time (and in, the
 * input's length, a let variable): the filter stretched by 1 / min(s, 1),
 * so that an axis scaled up takes the plain taps, normalised.
 */
static void resize_taps_aa_rt(struct lower *L, const struct resize_plan *p, struct tir *c,
			      struct tir *s, struct tir *in, struct taps *t)
{
	struct tir_builder *b = L->b;
	struct tir *j, *idx, *start;

	memset(t, 0, sizeof(*t));
	t->loop = true;
	t->c = c;
	t->rin = in;
	t->rs = tir_let(b, "sa", tir_bin(b, BIN_MIN, s, f64(L, 1)));
	start = tir_let(b, "st", tir_add(b, tir_cast(b, DTYPE_I64, tir_call1(b, INTRIN_FLOOR,
			tir_bin(b, BIN_DIV, f64(L, p->mode == RS_LINEAR ? -1 : -2), t->rs))),
					 tir_int(b, 1)));
	t->rn = tir_let(b, "nt", tir_bin(b, BIN_SUB, tir_int(b, 2),
					 tir_mul(b, tir_int(b, 2), start)));
	t->i0 = tir_let(b, "i0", tir_add(b, tir_cast(b, DTYPE_I64, tir_bin(b, BIN_SUB,
				tir_call1(b, INTRIN_CEIL, c), f64(L, 1))), start));
	t->wsum = tir_let(b, "wsum", f64(L, 0));
	j = tir_loop(b, t->rn);
	idx = tir_let(b, "ix", tir_add(b, t->i0, j));
	tir_assign(b, t->wsum, tir_add(b, t->wsum, aa_tap_weight(L, p, t, idx)));
	tir_end(b);
}

/*
 * Weighted sum of the taps of resized axes a.. (float64), nested like the
 * ONNX reference: sum_i w_i * (sum_j w_j * (...)), the last axis innermost.
 */
static struct tir *resize_sum(struct lower *L, const struct resize_plan *p,
			      const struct taps *taps, const int *ax, int nax, int a, struct tir **xi)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *acc = NULL;

	if (a == nax)
		return tir_cast(L->b, DTYPE_F64, tir_load(L->b, L->in[0],
							  lower_offset(L, &x->shape, xi)));
	if (taps[a].loop) {
		/* an antialiased axis sums its taps in a loop */
		struct tir *j, *idx, *w;

		acc = tir_let(b, "acc", f64(L, 0));
		j = tir_loop(b, taps_n(L, &taps[a]));
		idx = tir_let(b, "ix", tir_add(b, taps[a].i0, j));
		w = tir_let(b, "w", aa_tap_weight(L, p, &taps[a], idx));
		xi[ax[a]] = tir_let(b, "at", lower_clamp_index(L, idx, taps_in(L, &taps[a])));
		tir_assign(b, acc, tir_add(b, acc, tir_mul(b, w, resize_sum(L, p, taps, ax, nax,
									      a + 1, xi))));
		tir_end(b);
		return tir_bin(b, BIN_DIV, acc, taps[a].wsum);
	}
	for (int j = 0; j < taps[a].n; j++) {
		struct tir *v;

		xi[ax[a]] = taps[a].at[j];
		v = tir_mul(L->b, taps[a].w[j], resize_sum(L, p, taps, ax, nax, a + 1, xi));
		acc = acc ? tir_add(L->b, acc, v) : v;
	}
	return acc;
}

/*
 * Loops over the output; on each resized axis the coordinate and its taps
 * are computed in that axis's loop, and the innermost body sums the
 * weighted taps of all resized axes (one load for nearest).
 */
int lower_resize(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	int r = x->shape.rank, ax[MAX_RANK], nax = 0;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *outside = NULL, *acc;
	struct taps taps[MAX_RANK];
	struct resize_plan p;

	if (resize_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	for (int k = 0; k < r; k++) {
		idx[k] = tir_loop(b, tir_dim(b, y->shape.d[k]));
		xi[k] = idx[k];
		if (p.same[k])
			continue;
		if (p.rt || p.sym[k]) {
			struct tir *in = tir_let(b, "in", tir_dim(b, x->shape.d[k]));
			struct tir *inf = tir_cast(b, DTYPE_F64, in);
			struct tir *s = tir_let(b, "scale", p.rt ? resize_rt_scale(L, &p, k) :
						p.scale[k] > 0 ? f64(L, p.scale[k]) :
						tir_bin(b, BIN_DIV, tir_cast(b, DTYPE_F64,
							tir_dim(b, y->shape.d[k])), inf));
			struct tir *c = tir_let(b, "c", resize_coord_rt(L, &p, idx[k], s, inf,
					tir_cast(b, DTYPE_F64, tir_dim(b, y->shape.d[k])), k));

			if (p.coord == RC_TF_CROP_AND_RESIZE) {
				struct tir *o = tir_bin(b, BIN_GT, c, tir_bin(b, BIN_SUB, inf,
									      f64(L, 1)));

				o = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, c, f64(L, 0)), o);
				if (outside)
					o = tir_bin(b, BIN_LOR, outside, o);
				outside = tir_let(b, "out", o);
			}
			if (p.antialias)
				resize_taps_aa_rt(L, &p, c, s, in, &taps[nax]);
			else
				resize_taps(L, &p, c, 1, s, in, &taps[nax]);
			ax[nax++] = k;
			continue;
		}
		{
			int64_t in = x->shape.d[k].c;
			struct tir *c = tir_let(b, "c", resize_coord(L, &p, idx[k], in, k));

			if (p.coord == RC_TF_CROP_AND_RESIZE) {
				struct tir *o = tir_bin(b, BIN_GT, c, f64(L, (double)(in - 1)));

				o = tir_bin(b, BIN_LOR, tir_bin(b, BIN_LT, c, f64(L, 0)), o);
				if (outside)
					o = tir_bin(b, BIN_LOR, outside, o);
				outside = tir_let(b, "out", o);
			}
			if (p.antialias && p.scale[k] < 1)
				resize_taps_aa(L, &p, c, p.scale[k], in, &taps[nax]);
			else
				resize_taps(L, &p, c, p.scale[k], NULL, tir_int(b, in), &taps[nax]);
			ax[nax++] = k;
		}
	}
	if (p.mode == RS_NEAREST) {
		for (int a = 0; a < nax; a++)
			xi[ax[a]] = taps[a].at[0];
		acc = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	} else {
		acc = resize_sum(L, &p, taps, ax, nax, 0, xi);
	}
	if (outside)
		acc = tir_select(b, outside, tir_const(b, x->dtype, p.extrapolation),
				 tir_cast(b, x->dtype, acc));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), acc);
	lower_end_loops(L, r);
	return 0;
}
