/*
 * ops_signal.c - DFT (opsets 17 and 20) as a direct O(n^2) sum per output
 * frequency, STFT (opset 17) the same way per frame, and the window
 * functions of opset 17. The signal axis, its transform length and the
 * output length are constants, or parameters that the node's run-time
 * shape function binds when the inputs that decide them are known only
 * then (runtime/rt_shape.c); the sum runs in double with the twiddle angle
 * reduced modulo n first, so long transforms keep their precision.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

static const double dft_pi = 3.14159265358979323846;

/* The geometry of one DFT node. */
struct dft {
	int axis;		/* signal axis of X (not the last, complex one) */
	int64_t in;		/* X's length on axis */
	int64_t n;		/* transform length (dft_length, or in; 2 (in - 1)
				   for an inverse onesided one) */
	int64_t out;		/* output length: n, or n / 2 + 1 when onesided
				   (n when inverse too) */
	bool complex_in;	/* X's last dim is 2 (else 1) */
	bool inverse;
	bool onesided;
	bool irfft;		/* inverse and onesided: a one-sided spectrum to a
				   real signal, Y's last dim 1 */
	/*
	 * the axis or dft_length known only at run time: in, n and out
	 * unset, axis too (-1) unless it is a constant; the axis, n and in
	 * are parameters of the kernel (rt_shape.c's shape_dft)
	 */
	bool rt;
};

/* A constant int scalar input i, or def when absent. -1 after a diagnostic. */
static int dft_scalar(struct graph *g, struct node *n, int i, int64_t def, int64_t *out)
{
	int64_t *v, cnt;

	*out = def;
	if (!node_in(g, n, i))
		return 0;
	if (infer_const_ints(g, n, i, &v, &cnt) < 0)
		return -1;
	if (cnt != 1) {
		diag_error(g->ctx, "%s: input %d must be a scalar", node_loc(g, n), i);
		return -1;
	}
	*out = v[0];
	return 0;
}

/* Whether input i, a scalar, is known only at run time; -1 after a diagnostic. */
static int dft_is_data(struct graph *g, struct node *n, int i)
{
	int64_t cnt;

	if (!node_in(g, n, i) || !infer_is_data(g, n, i))
		return 0;
	if (infer_data_count(g, n, i, &cnt) < 0)
		return -1;
	if (cnt != 1) {
		diag_error(g->ctx, "%s: input %d must be a scalar", node_loc(g, n), i);
		return -1;
	}
	return 1;
}

/*
 * Opset 17 takes the axis as an attribute (default 1), opset 20 as input 2
 * (default -2); either counts from the back over X's whole rank. -1 after
 * a diagnostic.
 */
static int dft_plan(struct graph *g, struct node *n, struct dft *p)
{
	struct value *x = infer_input(g, n, 0);
	bool onesided = node_attr_int(n, "onesided", 0) != 0;
	int64_t axis, len;
	int r, rt_len, rt_axis;

	memset(p, 0, sizeof(*p));
	if (!x)
		return -1;
	r = x->shape.rank;
	if (!dtype_is_float(x->dtype) || r < 2 || !dim_is_const(x->shape.d[r - 1]) ||
	    (x->shape.d[r - 1].c != 1 && x->shape.d[r - 1].c != 2)) {
		diag_error(g->ctx, "%s: X must be float [..., signal, 1] or [..., signal, 2]",
			   node_loc(g, n));
		return -1;
	}
	p->complex_in = x->shape.d[r - 1].c == 2;
	p->inverse = node_attr_int(n, "inverse", 0) != 0;
	p->onesided = onesided;
	p->irfft = p->inverse && onesided;
	if ((rt_len = dft_is_data(g, n, 1)) < 0 ||
	    (rt_axis = g->opset >= 20 ? dft_is_data(g, n, 2) : 0) < 0)
		return -1;
	p->rt = rt_len || rt_axis;
	if (g->opset >= 20) {
		if (!rt_axis && dft_scalar(g, n, 2, -2, &axis) < 0)
			return -1;
	} else {
		axis = node_attr_int(n, "axis", 1);
	}
	if (p->rt && !rt_len && dft_scalar(g, n, 1, 0, &len) < 0)
		return -1;
	p->axis = -1;
	if (p->rt && rt_axis)
		return 0;
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r - 1 || (!p->rt && !dim_is_const(x->shape.d[axis]))) {
		diag_error(g->ctx, "%s: axis must name a constant dim other than the last",
			   node_loc(g, n));
		return -1;
	}
	if (p->rt) {
		p->axis = (int)axis;
		return 0;
	}
	p->axis = (int)axis;
	p->in = x->shape.d[axis].c;
	if (dft_scalar(g, n, 1, p->irfft ? 2 * (p->in - 1) : p->in, &len) < 0)
		return -1;
	if (len < 1 || len > DIM_LIMIT) {
		diag_error(g->ctx, "%s: dft_length %lld is out of range", node_loc(g, n),
			   (long long)len);
		return -1;
	}
	p->n = len;
	p->out = onesided && !p->inverse ? len / 2 + 1 : len;
	return 0;
}

bool dft_is_runtime(struct graph *g, const struct node *n)
{
	struct dft p;

	return n->op == OP_DFT && dft_plan(g, (struct node *)n, &p) == 0 && p.rt;
}

/*
 * Y is X's shape with out on the axis and 2 (real, imaginary) last, or 1
 * for an inverse onesided DFT. When the axis or dft_length is known only
 * at run time, the axis's length is a data symbol; an axis known only then
 * makes all of them but the last data symbols, unless no length changes
 * (no dft_length, not onesided).
 */
int infer_dft(struct graph *g, struct node *n)
{
	struct dft p;
	struct shape s;

	if (infer_arity(g, n, 1, 3, 1) < 0 || dft_plan(g, n, &p) < 0)
		return -1;
	s = node_in(g, n, 0)->shape;
	if (p.rt) {
		bool same = !p.onesided && !node_in(g, n, 1);

		for (int k = 0; k < s.rank - 1; k++)
			if (p.axis >= 0 ? k == p.axis : !same)
				s.d[k] = graph_data_sym(g, n->out[0], k);
		graph_data_param(g, n->out[0], "axis", 0);
		graph_data_param(g, n->out[0], "n", 0);
		graph_data_param(g, n->out[0], "len", 0);
	} else {
		s.d[p.axis] = dim_const(p.out);
	}
	s.d[s.rank - 1] = dim_const(p.irfft ? 1 : 2);
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/* Parameter what of DFT node n's output, which its shape function binds. */
static struct tir *dft_param(struct lower *L, const char *what)
{
	return tir_dim(L->b, graph_data_param(L->g, L->n->out[0], what, 0));
}

/*
 * Y[..., k, :] = sum over j < min(in, n) of X[..., j] * e^(-+2 pi i k j / n),
 * divided by n when inverse: X is zero-padded or truncated to n. An
 * inverse onesided DFT sums the Hermitian spectrum's real part instead:
 * X[0] + 2 sum Re(X[j] e^(2 pi i k j / n)) (+ X[n / 2] when n is even)
 * over j < min(in, n / 2 + 1), as numpy's irfft. With the axis known only
 * at run time the loop nest is the same, the axis's index picked by
 * comparing each with it.
 */
int lower_dft(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	enum dtype d = DTYPE_F64;
	struct shape outer = y->shape;
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *re, *im, *j, *ang, *c, *sn, *xr, *xim;
	struct tir *ax = NULL, *k, *nn, *cnt, *dang, *t;
	double sign = 0;
	struct dft p;
	int r = y->shape.rank;

	if (dft_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	sign = p.inverse ? 2 : -2;
	outer.rank = r - 1;
	lower_loops_parallel(L, &outer, idx);
	if (p.rt) {
		ax = tir_let(b, "axis", dft_param(L, "axis"));
		k = idx[r - 2];
		for (int a = r - 3; a >= 0; a--)
			k = tir_select(b, tir_bin(b, BIN_EQ, ax, tir_int(b, a)), idx[a], k);
		k = tir_let(b, "k", k);
		nn = tir_let(b, "n", dft_param(L, "n"));
		t = p.irfft ? tir_add(b, tir_bin(b, BIN_DIV, nn, tir_int(b, 2)), tir_int(b, 1)) : nn;
		cnt = tir_let(b, "cnt", tir_bin(b, BIN_MIN, dft_param(L, "len"), t));
		dang = tir_let(b, "dang", tir_bin(b, BIN_DIV, tir_const(b, d, sign * dft_pi),
						  tir_cast(b, d, nn)));
	} else {
		int64_t lim = p.irfft ? p.n / 2 + 1 : p.n;

		k = idx[p.axis];
		nn = tir_int(b, p.n);
		cnt = tir_int(b, p.in < lim ? p.in : lim);
		dang = tir_const(b, d, sign * dft_pi / (double)p.n);
	}
	re = tir_let(b, "re", tir_const(b, d, 0));
	im = p.irfft ? NULL : tir_let(b, "im", tir_const(b, d, 0));
	j = tir_loop(b, cnt);
	ang = tir_bin(b, BIN_MOD, tir_mul(b, k, j), nn);
	ang = tir_let(b, "ang", tir_mul(b, tir_cast(b, d, ang), dang));
	c = tir_let(b, "c", tir_call1(b, INTRIN_COS, ang));
	sn = tir_let(b, "s", tir_call1(b, INTRIN_SIN, ang));
	for (int a = 0; a < r - 1; a++)
		xi[a] = !p.rt ? (a == p.axis ? j : idx[a])
			: tir_select(b, tir_bin(b, BIN_EQ, ax, tir_int(b, a)), j, idx[a]);
	xi[r - 1] = tir_int(b, 0);
	xr = tir_let(b, "xr", tir_cast(b, d, tir_load(b, L->in[0], lower_offset(L, &x->shape, xi))));
	xim = NULL;
	if (p.complex_in) {
		xi[r - 1] = tir_int(b, 1);
		xim = tir_let(b, "xi", tir_cast(b, d, tir_load(b, L->in[0],
							       lower_offset(L, &x->shape, xi))));
	}
	if (p.irfft) {
		/* weight 1 for X[0] and X[n / 2], 2 for the others, which stand for two */
		struct tir *w = tir_select(b, tir_bin(b, BIN_LOR, tir_bin(b, BIN_EQ, j, tir_int(b, 0)),
				tir_bin(b, BIN_EQ, tir_mul(b, j, tir_int(b, 2)), nn)),
				tir_const(b, d, 1), tir_const(b, d, 2));
		struct tir *v = tir_mul(b, xr, c);

		if (xim)
			v = tir_bin(b, BIN_SUB, v, tir_mul(b, xim, sn));
		tir_assign(b, re, tir_add(b, re, tir_mul(b, w, v)));
	} else if (xim) {
		tir_assign(b, re, tir_add(b, re, tir_bin(b, BIN_SUB, tir_mul(b, xr, c),
							 tir_mul(b, xim, sn))));
		tir_assign(b, im, tir_add(b, im, tir_add(b, tir_mul(b, xr, sn), tir_mul(b, xim, c))));
	} else {
		tir_assign(b, re, tir_add(b, re, tir_mul(b, xr, c)));
		tir_assign(b, im, tir_add(b, im, tir_mul(b, xr, sn)));
	}
	tir_end(b);
	if (p.inverse) {
		tir_assign(b, re, tir_bin(b, BIN_DIV, re, tir_cast(b, d, nn)));
		if (im)
			tir_assign(b, im, tir_bin(b, BIN_DIV, im, tir_cast(b, d, nn)));
	}
	for (int a = 0; a < r - 1; a++)
		xi[a] = idx[a];
	xi[r - 1] = tir_int(b, 0);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, xi), tir_cast(b, y->dtype, re));
	if (im) {
		xi[r - 1] = tir_int(b, 1);
		tir_store(b, L->out[0], lower_offset(L, &y->shape, xi), tir_cast(b, y->dtype, im));
	}
	lower_end_loops(L, r - 1);
	return 0;
}

/* ---- HannWindow, HammingWindow, BlackmanWindow (opset 17) ---- */

/* The constant window length (input 0). -1 after a diagnostic. */
static int window_size(struct graph *g, struct node *n, int64_t *size)
{
	if (!infer_input(g, n, 0) || dft_scalar(g, n, 0, 0, size) < 0)
		return -1;
	if (*size < 0 || *size > DIM_LIMIT) {
		diag_error(g->ctx, "%s: size %lld is out of range", node_loc(g, n), (long long)*size);
		return -1;
	}
	return 0;
}

/* Y is [size] of output_datatype (default float). */
int infer_window(struct graph *g, struct node *n)
{
	int64_t to = node_attr_int(n, "output_datatype", 1), size;
	enum dtype t = dtype_from_onnx((int)to);
	struct shape s = { 0 };

	if (infer_arity(g, n, 1, 1, 1) < 0)
		return -1;
	if (infer_is_data(g, n, 0)) {
		/* the length known only at run time: a data symbol */
		if (infer_data_count(g, n, 0, &size) < 0)
			return -1;
		if (size != 1) {
			diag_error(g->ctx, "%s: input 0 must be a scalar", node_loc(g, n));
			return -1;
		}
		size = -1;
	} else if (window_size(g, n, &size) < 0) {
		return -1;
	}
	if (t == DTYPE_UNDEF || t == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: output_datatype %lld is not supported", node_loc(g, n),
			   (long long)to);
		return -1;
	}
	s.rank = 1;
	s.d[0] = size < 0 ? graph_data_sym(g, n->out[0], 0) : dim_const(size);
	infer_set(g, n, 0, t, &s);
	return 0;
}

/*
 * w[i] = a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N) with N = size
 * (periodic) or size - 1 (symmetric): Hann (1/2, 1/2, 0), Hamming
 * (25/46, 21/46, 0), Blackman (0.42, 0.5, 0.08); computed in double.
 */
int lower_window(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	enum op op = L->n->op;
	enum dtype d = DTYPE_F64;
	double a0 = op == OP_HAMMINGWINDOW ? 25.0 / 46 : op == OP_BLACKMANWINDOW ? 0.42 : 0.5;
	double a1 = op == OP_HAMMINGWINDOW ? 21.0 / 46 : 0.5;
	double a2 = op == OP_BLACKMANWINDOW ? 0.08 : 0;
	int64_t size = y->shape.d[0].c;
	bool periodic = node_attr_int(L->n, "periodic", 1) != 0;
	double N = (double)(periodic ? size : size - 1);
	struct tir *i, *x, *v, *step;

	if (dim_is_const(y->shape.d[0])) {
		step = tir_const(b, d, 2 * dft_pi / N);
	} else {
		/* the length known only at run time: the same step, computed there */
		struct tir *n = tir_cast(b, d, tir_dim(b, y->shape.d[0]));

		step = tir_let(b, "step", tir_bin(b, BIN_DIV, tir_const(b, d, 2 * dft_pi),
			       periodic ? n : tir_bin(b, BIN_SUB, n, tir_const(b, d, 1))));
	}
	i = tir_loop(b, tir_dim(b, y->shape.d[0]));
	tir_mark_parallel(b);
	x = tir_let(b, "x", tir_mul(b, tir_cast(b, d, i), step));
	v = tir_bin(b, BIN_SUB, tir_const(b, d, a0), tir_mul(b, tir_const(b, d, a1),
							     tir_call1(b, INTRIN_COS, x)));
	if (a2 != 0)
		v = tir_add(b, v, tir_mul(b, tir_const(b, d, a2), tir_call1(b, INTRIN_COS,
						tir_mul(b, tir_const(b, d, 2), x))));
	tir_store(b, L->out[0], i, tir_cast(b, y->dtype, v));
	tir_end(b);
	return 0;
}

/* ---- STFT (opset 17) with constant frame parameters ---- */

/* Geometry of an STFT node. */
struct stft {
	int64_t len;		/* signal length */
	int64_t step, frame;	/* frame_step, frame_length */
	int64_t frames, bins;	/* output frames and frequency bins */
	bool complex_in;
	bool window;		/* a window input multiplies each frame */
	/*
	 * frame_step or frame_length known only at run time: frames and bins
	 * are data symbols, step and frame data parameters of the output
	 */
	bool rt;
};

/* STFT's signal: float [batch, length, 1 or 2], length constant. -1 after a diagnostic. */
static int stft_signal(struct graph *g, const struct node *n, const struct value *x)
{
	if (!dtype_is_float(x->dtype) || x->shape.rank != 3 || !dim_is_const(x->shape.d[1]) ||
	    !dim_is_const(x->shape.d[2]) || (x->shape.d[2].c != 1 && x->shape.d[2].c != 2)) {
		diag_error(g->ctx, "%s: signal must be float [batch, length, 1 or 2] with a "
			   "constant length", node_loc(g, n));
		return -1;
	}
	return 0;
}

/*
 * stft_plan when frame_step or frame_length is known only at run time: the
 * signal's checks, each scalar input's count; the shape function checks the
 * values. -1 after a diagnostic.
 */
static int stft_plan_rt(struct graph *g, struct node *n, struct stft *p)
{
	struct value *x = node_in(g, n, 0), *w = node_in(g, n, 2);
	int64_t cnt;

	for (int i = 1; i <= 3; i += 2) {
		if (!node_in(g, n, i))
			continue;
		if (!infer_is_data(g, n, i) && dft_scalar(g, n, i, 0, &cnt) < 0)
			return -1;
		if (infer_is_data(g, n, i) && (infer_data_count(g, n, i, &cnt) < 0 || cnt != 1)) {
			diag_error(g->ctx, "%s: input %d must be a scalar", node_loc(g, n), i);
			return -1;
		}
	}
	if (stft_signal(g, n, x) < 0)
		return -1;
	if (w && (w->dtype != x->dtype || w->shape.rank != 1 || !dim_is_const(w->shape.d[0]))) {
		diag_error(g->ctx, "%s: window must be [frame_length] of the signal's type",
			   node_loc(g, n));
		return -1;
	}
	if (!node_in(g, n, 1) || (!w && !node_in(g, n, 3))) {
		diag_error(g->ctx, "%s: frame_step and frame_length (or a window) are required",
			   node_loc(g, n));
		return -1;
	}
	p->window = w != NULL;
	p->len = x->shape.d[1].c;
	p->complex_in = x->shape.d[2].c == 2;
	return 0;
}

/*
 * signal [B, len, 1 or 2]; frame_step and frame_length constant scalars;
 * the frame length comes from frame_length or else the window's length.
 * -1 after a diagnostic.
 */
static int stft_plan(struct graph *g, struct node *n, struct stft *p)
{
	struct value *x = infer_input(g, n, 0), *w = node_in(g, n, 2);
	int64_t fl;

	if (!x)
		return -1;
	p->rt = (node_in(g, n, 1) && infer_is_data(g, n, 1)) ||
		(node_in(g, n, 3) && infer_is_data(g, n, 3));
	if (p->rt)
		return stft_plan_rt(g, n, p);
	if (dft_scalar(g, n, 1, 0, &p->step) < 0 || dft_scalar(g, n, 3, -1, &fl) < 0)
		return -1;
	if (!node_in(g, n, 1)) {
		diag_error(g->ctx, "%s: input 1 'frame_step' is required", node_loc(g, n));
		return -1;
	}
	if (stft_signal(g, n, x) < 0)
		return -1;
	p->window = w != NULL;
	if (w && (w->dtype != x->dtype || w->shape.rank != 1 || !dim_is_const(w->shape.d[0]) ||
		  (fl >= 0 && w->shape.d[0].c != fl))) {
		diag_error(g->ctx, "%s: window must be [frame_length] of the signal's type",
			   node_loc(g, n));
		return -1;
	}
	if (fl < 0 && w)
		fl = w->shape.d[0].c;
	p->len = x->shape.d[1].c;
	p->complex_in = x->shape.d[2].c == 2;
	p->frame = fl;
	if (fl < 1 || fl > p->len || p->step < 1) {
		diag_error(g->ctx, "%s: frame_length must be in [1, %lld] (from frame_length or "
			   "the window) and frame_step positive", node_loc(g, n), (long long)p->len);
		return -1;
	}
	p->frames = (p->len - fl) / p->step + 1;
	p->bins = node_attr_int(n, "onesided", 1) ? fl / 2 + 1 : fl;
	if (p->complex_in && p->bins != fl) {
		diag_error(g->ctx, "%s: a onesided STFT needs a real signal", node_loc(g, n));
		return -1;
	}
	return 0;
}

/* Y is [batch, frames, bins, 2]. */
int infer_stft(struct graph *g, struct node *n)
{
	struct stft p;
	struct shape s = { 0 };

	if (infer_arity(g, n, 2, 4, 1) < 0 || stft_plan(g, n, &p) < 0)
		return -1;
	s.rank = 4;
	s.d[0] = node_in(g, n, 0)->shape.d[0];
	s.d[1] = p.rt ? graph_data_sym(g, n->out[0], 1) : dim_const(p.frames);
	s.d[2] = p.rt ? graph_data_sym(g, n->out[0], 2) : dim_const(p.bins);
	if (p.rt) {
		graph_data_param(g, n->out[0], "step", 0);
		graph_data_param(g, n->out[0], "frame", 0);
	}
	s.d[3] = dim_const(2);
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/* Y[b, f, k] = sum over j < frame of x[b, f * step + j] w[j] e^(-2 pi i k j / frame). */
int lower_stft(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	enum dtype d = DTYPE_F64;
	struct tir_buf *win = L->n->n_in > 2 ? L->in[2] : NULL;
	struct tir *idx[4], *re, *im, *j, *ang, *c, *sn, *at, *xr, *xim, *w, *frame, *step, *dang;
	struct stft p;
	struct shape outer = y->shape;
	int cw;

	if (stft_plan(L->g, (struct node *)L->n, &p) < 0)
		return -1;
	cw = p.complex_in ? 2 : 1;
	outer.rank = 3;
	lower_loops_parallel(L, &outer, idx);
	re = tir_let(b, "re", tir_const(b, d, 0));
	im = tir_let(b, "im", tir_const(b, d, 0));
	if (p.rt) {
		/* frame_step and frame_length as the shape function bound them */
		frame = tir_dim(b, graph_data_param(L->g, L->n->out[0], "frame", 0));
		step = tir_dim(b, graph_data_param(L->g, L->n->out[0], "step", 0));
		dang = tir_let(b, "dang", tir_bin(b, BIN_DIV, tir_const(b, d, -2 * dft_pi),
						  tir_cast(b, d, frame)));
	} else {
		frame = tir_int(b, p.frame);
		step = tir_int(b, p.step);
		dang = tir_const(b, d, -2 * dft_pi / (double)p.frame);
	}
	j = tir_loop(b, frame);
	ang = tir_bin(b, BIN_MOD, tir_mul(b, idx[2], j), frame);
	ang = tir_let(b, "ang", tir_mul(b, tir_cast(b, d, ang), dang));
	c = tir_let(b, "c", tir_call1(b, INTRIN_COS, ang));
	sn = tir_let(b, "s", tir_call1(b, INTRIN_SIN, ang));
	at = tir_let(b, "at", tir_mul(b, tir_add(b, tir_mul(b, idx[0], tir_int(b, p.len)),
		tir_add(b, tir_mul(b, idx[1], step), j)), tir_int(b, cw)));
	w = win ? tir_let(b, "w", tir_cast(b, d, tir_load(b, win, j))) : NULL;
	xr = tir_cast(b, d, tir_load(b, L->in[0], at));
	xr = tir_let(b, "xr", w ? tir_mul(b, xr, w) : xr);
	if (p.complex_in) {
		xim = tir_cast(b, d, tir_load(b, L->in[0], tir_add(b, at, tir_int(b, 1))));
		xim = tir_let(b, "xi", w ? tir_mul(b, xim, w) : xim);
		tir_assign(b, re, tir_add(b, re, tir_bin(b, BIN_SUB, tir_mul(b, xr, c),
							 tir_mul(b, xim, sn))));
		tir_assign(b, im, tir_add(b, im, tir_add(b, tir_mul(b, xr, sn), tir_mul(b, xim, c))));
	} else {
		tir_assign(b, re, tir_add(b, re, tir_mul(b, xr, c)));
		tir_assign(b, im, tir_add(b, im, tir_mul(b, xr, sn)));
	}
	tir_end(b);
	idx[3] = tir_int(b, 0);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), tir_cast(b, y->dtype, re));
	idx[3] = tir_int(b, 1);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), tir_cast(b, y->dtype, im));
	lower_end_loops(L, 3);
	return 0;
}

/* ---- MelWeightMatrix (opset 17) ---- */

/* Dim of a scalar int input: its value (transformed) if constant, else a data symbol. */
static int mel_dim(struct graph *g, struct node *n, int i, int k, bool half, struct dim *d)
{
	int64_t *v, cnt;

	if (infer_is_data(g, n, i)) {
		if (infer_data_count(g, n, i, &cnt) < 0)
			return -1;
		*d = graph_data_sym(g, n->out[0], k);
	} else {
		if (infer_const_ints(g, n, i, &v, &cnt) < 0)
			return -1;
		*d = dim_const(cnt == 1 ? (half ? v[0] / 2 + 1 : v[0]) : -1);
	}
	if (cnt != 1 || (dim_is_const(*d) && (d->c < 0 || d->c > DIM_LIMIT))) {
		diag_error(g->ctx, "%s: input %d must be a scalar in range", node_loc(g, n), i);
		return -1;
	}
	return 0;
}

/* Y [dft_length / 2 + 1, num_mel_bins] of output_datatype (default float). */
int infer_melweightmatrix(struct graph *g, struct node *n)
{
	int64_t to = node_attr_int(n, "output_datatype", 1);
	enum dtype t = dtype_from_onnx((int)to);
	struct shape s = { 0 };

	if (infer_arity(g, n, 5, 5, 1) < 0)
		return -1;
	for (int i = 0; i < 5; i++)
		if (!infer_input(g, n, i))
			return -1;
	if (!dtype_is_float(t)) {
		diag_error(g->ctx, "%s: output_datatype %lld is not supported", node_loc(g, n),
			   (long long)to);
		return -1;
	}
	s.rank = 2;
	if (mel_dim(g, n, 1, 0, true, &s.d[0]) < 0 || mel_dim(g, n, 0, 1, false, &s.d[1]) < 0)
		return -1;
	infer_set(g, n, 0, t, &s);
	return 0;
}

/* 2595 log10(1 + hz / 700): hertz to mel. */
static struct tir *mel_of(struct lower *L, struct tir *hz)
{
	struct tir_builder *b = L->b;
	enum dtype d = DTYPE_F64;

	return tir_mul(b, tir_const(b, d, 2595), tir_bin(b, BIN_DIV, tir_call1(b, INTRIN_LOG,
		tir_add(b, tir_const(b, d, 1), tir_bin(b, BIN_DIV, hz, tir_const(b, d, 700)))),
		tir_const(b, d, 2.302585092994045684)));
}

/*
 * Spectrogram bin of mel point k: the mel range split into num_mel_bins + 2
 * steps (as the ONNX reference does, so the last point falls short of it), back to hertz, floor((dft_length + 1) * hz / sample_rate).
 */
static struct tir *mel_bin(struct lower *L, struct tir *k, struct tir *step, struct tir *lo,
			   struct tir *dft, struct tir *sr)
{
	struct tir_builder *b = L->b;
	enum dtype d = DTYPE_F64;
	struct tir *mel = tir_add(b, tir_mul(b, tir_cast(b, d, k), step), lo);
	struct tir *hz = tir_mul(b, tir_const(b, d, 700), tir_bin(b, BIN_SUB, tir_call2(b,
		INTRIN_POW, tir_const(b, d, 10), tir_bin(b, BIN_DIV, mel, tir_const(b, d, 2595))),
		tir_const(b, d, 1)));

	return tir_let(b, "bin", tir_call1(b, INTRIN_FLOOR, tir_bin(b, BIN_DIV, tir_mul(b,
		tir_add(b, dft, tir_const(b, d, 1)), hz), sr)));
}

/*
 * Y[j, i]: triangle i of the mel filterbank rising from bin(i) to bin(i + 1)
 * and falling to bin(i + 2), computed in double.
 */
int lower_melweightmatrix(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	enum dtype d = DTYPE_F64;
	struct tir *arg[5], *lo, *step, *idx[2], *l, *c, *h, *jf, *v;

	for (int i = 0; i < 5; i++)
		arg[i] = tir_let(b, "arg", tir_cast(b, d, tir_load(b, L->in[i], tir_int(b, 0))));
	lo = tir_let(b, "lomel", mel_of(L, arg[3]));
	step = tir_let(b, "step", tir_bin(b, BIN_DIV, tir_bin(b, BIN_SUB, mel_of(L, arg[4]), lo),
					  tir_add(b, arg[0], tir_const(b, d, 2))));
	lower_loops_parallel(L, &y->shape, idx);
	l = mel_bin(L, idx[1], step, lo, arg[1], arg[2]);
	c = mel_bin(L, tir_add(b, idx[1], tir_int(b, 1)), step, lo, arg[1], arg[2]);
	h = mel_bin(L, tir_add(b, idx[1], tir_int(b, 2)), step, lo, arg[1], arg[2]);
	jf = tir_let(b, "jf", tir_cast(b, d, idx[0]));
	v = tir_let(b, "v", tir_const(b, d, 0));
	tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, jf, l), tir_bin(b, BIN_LE, jf, c)));
	tir_assign(b, v, tir_select(b, tir_bin(b, BIN_EQ, c, l), tir_const(b, d, 1),
				    tir_bin(b, BIN_DIV, tir_bin(b, BIN_SUB, jf, l),
					    tir_bin(b, BIN_SUB, c, l))));
	tir_end(b);
	tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, jf, c), tir_bin(b, BIN_LT, jf, h)));
	tir_assign(b, v, tir_bin(b, BIN_DIV, tir_bin(b, BIN_SUB, h, jf), tir_bin(b, BIN_SUB, h, c)));
	tir_end(b);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx), tir_cast(b, y->dtype, v));
	lower_end_loops(L, 2);
	return 0;
}
