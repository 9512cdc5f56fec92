/*
 * ops_rnn.c - RNN, GRU and LSTM (opsets 7 to 22 forms, layout 0 and 1):
 * shape inference and one kernel per node.
 *
 * The kernel walks each direction and batch row on its own (rows are
 * independent), and the steps of a row in order: forward from time 0,
 * reverse from its sequence length - 1 down to 0. A step reads the
 * previous hidden state from initial_h (or zeros) at the first step and
 * from the output row Y of the step before otherwise, so the state needs no
 * buffer of its own: normalisation gives every node all its outputs
 * (onnx_normalize.c). LSTM's cell state is updated in place in Y_c; GRU
 * without linear_before_reset keeps r (.) H_prev, which every new hidden
 * unit reads, in the Y_h row until the last step fills it. Steps past a
 * row's sequence length leave zeros in Y; Y_h (Y_c) hold the state after
 * the row's last step.
 *
 * When W is a constant the rnn-project pass (pass_rnn_project.c) has
 * computed X . W^T for all steps as a MatMul that the node reads in place
 * of X, W left absent; the kernel then only adds the recurrent part.
 *
 * Gate order is ONNX's: LSTM i, o, f, c (peepholes i, o, f), GRU z, r, h.
 * Activations come from the 'activations' list (ONNX RNN activation names,
 * any case), their alphas and betas from activation_alpha/beta in list
 * order, consumed only by functions that take them; 'clip' bounds every
 * gate's input before its activation.
 */
#include "ops.h"

#include <math.h>
#include <string.h>
#include <strings.h>

enum rnn_act {
	RNN_ACT_RELU, RNN_ACT_TANH, RNN_ACT_SIGMOID, RNN_ACT_AFFINE, RNN_ACT_LEAKYRELU,
	RNN_ACT_THRESHOLDEDRELU, RNN_ACT_SCALEDTANH, RNN_ACT_HARDSIGMOID, RNN_ACT_ELU,
	RNN_ACT_SOFTSIGN, RNN_ACT_SOFTPLUS,
	RNN_ACT_COUNT
};

/* Name, how many of alpha/beta it takes, their defaults (the ONNX ops' own). */
static const struct {
	const char *name;
	int n_params;
	double alpha, beta;
} rnn_acts[RNN_ACT_COUNT] = {
	[RNN_ACT_RELU] = { "Relu", 0, 0, 0 },
	[RNN_ACT_TANH] = { "Tanh", 0, 0, 0 },
	[RNN_ACT_SIGMOID] = { "Sigmoid", 0, 0, 0 },
	[RNN_ACT_AFFINE] = { "Affine", 2, 1.0, 0.0 },
	[RNN_ACT_LEAKYRELU] = { "LeakyRelu", 1, 0.01, 0 },
	[RNN_ACT_THRESHOLDEDRELU] = { "ThresholdedRelu", 1, 1.0, 0 },
	[RNN_ACT_SCALEDTANH] = { "ScaledTanh", 2, 1.0, 1.0 },
	[RNN_ACT_HARDSIGMOID] = { "HardSigmoid", 2, 0.2, 0.5 },
	[RNN_ACT_ELU] = { "Elu", 1, 1.0, 0 },
	[RNN_ACT_SOFTSIGN] = { "Softsign", 0, 0, 0 },
	[RNN_ACT_SOFTPLUS] = { "Softplus", 0, 0, 0 },
};

struct rnn_fn {
	enum rnn_act act;
	double alpha, beta;
};

#define RNN_MAX_FNS 6	/* 3 per direction (LSTM), 2 directions */

/* Everything the attributes and input shapes decide. */
struct rnn_plan {
	int gates;		/* 1 RNN, 3 GRU, 4 LSTM */
	int fns;		/* activations per direction: 1, 2, 3 */
	int dirs;		/* 1 or 2 */
	bool reverse[2];	/* per direction */
	bool layout1;		/* batch-major X, Y, Y_h, initial_h/c */
	bool has_clip;
	double clip;
	bool lbr;		/* GRU linear_before_reset */
	bool input_forget;	/* LSTM: f = 1 - i */
	int64_t hidden;
	struct rnn_fn fn[RNN_MAX_FNS];	/* direction d's k-th at d * fns + k */
};

static const char *const default_fns[3][3] = {
	{ "Tanh" }, { "Sigmoid", "Tanh" }, { "Sigmoid", "Tanh", "Tanh" },
};

/* Reads the attributes of n into p; -1 after a diagnostic. */
static int rnn_plan_attrs(struct graph *g, const struct node *n, struct rnn_plan *p)
{
	const char *dir = node_attr_str(n, "direction", "forward");
	const struct attr *acts = node_attr(n, "activations");
	const struct attr *al = node_attr(n, "activation_alpha");
	const struct attr *be = node_attr(n, "activation_beta");
	int ia = 0, ib = 0, count;

	memset(p, 0, sizeof(*p));
	p->gates = n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1;
	p->fns = n->op == OP_LSTM ? 3 : n->op == OP_GRU ? 2 : 1;
	if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
		p->dirs = 1;
		p->reverse[0] = !strcmp(dir, "reverse");
	} else if (!strcmp(dir, "bidirectional")) {
		p->dirs = 2;
		p->reverse[1] = true;
	} else {
		diag_error(g->ctx, "%s: attr 'direction' is '%s' (expected 'forward', 'reverse' or "
			   "'bidirectional')", node_loc(g, n), dir);
		return -1;
	}
	p->layout1 = node_attr_int(n, "layout", 0) != 0;
	if (node_attr_int(n, "layout", 0) != 0 && node_attr_int(n, "layout", 0) != 1) {
		diag_error(g->ctx, "%s: attr 'layout' is %lld (expected 0 or 1)", node_loc(g, n),
			   (long long)node_attr_int(n, "layout", 0));
		return -1;
	}
	p->has_clip = node_attr(n, "clip") != NULL;
	p->clip = node_attr_float(n, "clip", 0);
	if (p->has_clip && !(p->clip >= 0)) {
		diag_error(g->ctx, "%s: attr 'clip' is %g (expected a threshold of 0 or more)",
			   node_loc(g, n), p->clip);
		return -1;
	}
	p->lbr = n->op == OP_GRU && node_attr_int(n, "linear_before_reset", 0);
	p->input_forget = n->op == OP_LSTM && node_attr_int(n, "input_forget", 0);
	p->hidden = node_attr_int(n, "hidden_size", -1);
	if (node_attr(n, "output_sequence")) {
		diag_error(g->ctx, "%s: attr 'output_sequence' (opset 1) is not supported",
			   node_loc(g, n));
		return -1;
	}
	if (acts && acts->kind != ATTR_STRINGS) {
		diag_error(g->ctx, "%s: attr 'activations' is not a list of strings",
			   node_loc(g, n));
		return -1;
	}
	count = acts ? acts->n : p->fns;
	if (count != p->fns && count != p->fns * p->dirs) {
		diag_error(g->ctx, "%s: attr 'activations' has %d names, expected %d", node_loc(g, n),
			   count, p->fns * p->dirs);
		return -1;
	}
	for (int i = 0; i < p->fns * p->dirs; i++) {
		const char *name = acts ? acts->strs[i % count] : default_fns[p->fns - 1][i % p->fns];
		struct rnn_fn *f = &p->fn[i];
		int a;

		for (a = 0; a < RNN_ACT_COUNT; a++)
			if (!strcasecmp(name, rnn_acts[a].name))
				break;
		if (a == RNN_ACT_COUNT) {
			diag_error(g->ctx, "%s: attr 'activations': unsupported activation '%s'",
				   node_loc(g, n), name);
			return -1;
		}
		f->act = (enum rnn_act)a;
		f->alpha = rnn_acts[a].alpha;
		f->beta = rnn_acts[a].beta;
		/* a list given once for both directions is read once */
		if (i >= count)
			*f = p->fn[i - count];
		else {
			if (rnn_acts[a].n_params >= 1 && al && ia < al->n)
				f->alpha = al->floats[ia++];
			if (rnn_acts[a].n_params >= 2 && be && ib < be->n)
				f->beta = be->floats[ib++];
		}
	}
	return 0;
}

/* Input i, absent or of dtype t and the shape rank/dims given (-2: any dim). */
static int check_rnn_input(struct graph *g, struct node *n, int i, const char *what,
			   enum dtype t, int rank, const struct dim *d)
{
	struct value *v = node_in(g, n, i);

	if (!v)
		return 0;
	if (v->dtype != t) {
		diag_error(g->ctx, "%s: input %d '%s' (%s) has type %s, expected %s", node_loc(g, n),
			   i, v->name, what, dtype_name(v->dtype), dtype_name(t));
		return -1;
	}
	if (!v->has_shape)
		return 0;
	if (v->shape.rank != rank) {
		diag_error(g->ctx, "%s: input %d '%s' (%s) has rank %d, expected %d",
			   node_loc(g, n), i, v->name, what, v->shape.rank, rank);
		return -1;
	}
	for (int k = 0; k < rank; k++) {
		struct strbuf want = STRBUF_INIT, got = STRBUF_INIT;

		if (dim_eq(v->shape.d[k], d[k]))
			continue;
		dim_print(g, d[k], &want);
		dim_print(g, v->shape.d[k], &got);
		diag_error(g->ctx, "%s: input %d '%s' (%s) has dim %d of %s, expected %s",
			   node_loc(g, n), i, v->name, what, k, sb_str(&got), sb_str(&want));
		sb_release(&want);
		sb_release(&got);
		return -1;
	}
	return 0;
}

/*
 * X [seq, batch, input] (layout 1: [batch, seq, input]), W [dirs, G*hidden,
 * input], R [dirs, G*hidden, hidden], B [dirs, 2*G*hidden], sequence_lens
 * [batch] int32, initial_h/c like Y_h, P [dirs, 3*hidden]. Y [seq, dirs,
 * batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h and Y_c [dirs,
 * batch, hidden] (layout 1: [batch, dirs, hidden]).
 */
int infer_rnn(struct graph *g, struct node *n)
{
	struct rnn_plan p;
	struct value *x, *w, *r;
	struct dim S, B, I, D, GH, H, d[4];
	struct shape ys, hs;
	enum dtype t;
	int max_in = n->op == OP_LSTM ? 8 : 6;

	if (infer_arity(g, n, 3, max_in, n->op == OP_LSTM ? 3 : 2) < 0 ||
	    rnn_plan_attrs(g, n, &p) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(w = infer_input(g, n, 1)) || !(r = infer_input(g, n, 2)))
		return -1;
	t = x->dtype;
	if (t != DTYPE_F32 && t != DTYPE_F64) {
		diag_error(g->ctx, "%s: input 0 '%s' has type %s (expected float32 or float64)",
			   node_loc(g, n), x->name, dtype_name(t));
		return -1;
	}
	if (!x->has_shape || !w->has_shape || x->shape.rank != 3 || w->shape.rank != 3) {
		diag_error(g->ctx, "%s: inputs 'X' and 'W' need known shapes of rank 3",
			   node_loc(g, n));
		return -1;
	}
	S = x->shape.d[p.layout1 ? 1 : 0];
	B = x->shape.d[p.layout1 ? 0 : 1];
	I = x->shape.d[2];
	D = dim_const(p.dirs);
	GH = w->shape.d[1];
	if (p.hidden < 0) {
		/* hidden_size is optional in the schema: W's rows tell it */
		if (!dim_is_const(GH) || GH.c % p.gates) {
			diag_error(g->ctx, "%s: attr 'hidden_size' is missing and W's dim 1 does "
				   "not give it", node_loc(g, n));
			return -1;
		}
		p.hidden = GH.c / p.gates;
	}
	if (p.hidden < 1 || p.hidden > DIM_LIMIT) {
		diag_error(g->ctx, "%s: attr 'hidden_size' is %lld (expected 1 or more)",
			   node_loc(g, n), (long long)p.hidden);
		return -1;
	}
	H = dim_const(p.hidden);
	GH = dim_const(p.hidden * p.gates);
	d[0] = D, d[1] = GH, d[2] = I;
	if (check_rnn_input(g, n, 1, "W", t, 3, d) < 0)
		return -1;
	d[2] = H;
	if (check_rnn_input(g, n, 2, "R", t, 3, d) < 0)
		return -1;
	d[1] = dim_const(2 * p.hidden * p.gates);
	if (check_rnn_input(g, n, 3, "B", t, 2, d) < 0)
		return -1;
	d[0] = B;
	if (check_rnn_input(g, n, 4, "sequence_lens", DTYPE_I32, 1, d) < 0)
		return -1;
	hs.rank = 3;
	hs.d[0] = p.layout1 ? B : D;
	hs.d[1] = p.layout1 ? D : B;
	hs.d[2] = H;
	if (check_rnn_input(g, n, 5, "initial_h", t, 3, hs.d) < 0)
		return -1;
	if (n->op == OP_LSTM) {
		if (check_rnn_input(g, n, 6, "initial_c", t, 3, hs.d) < 0)
			return -1;
		d[0] = D;
		d[1] = dim_const(3 * p.hidden);
		if (check_rnn_input(g, n, 7, "P", t, 2, d) < 0)
			return -1;
	}
	ys.rank = 4;
	ys.d[0] = p.layout1 ? B : S;
	ys.d[1] = p.layout1 ? S : D;
	ys.d[2] = p.layout1 ? D : B;
	ys.d[3] = H;
	infer_set(g, n, 0, t, &ys);
	for (int i = 1; i < n->n_out; i++)
		infer_set(g, n, i, t, &hs);
	return 0;
}

/* ---- the kernel ---- */

/* The state of lowering one node: plan, geometry and buffers. */
struct rnn_lower {
	struct lower *L;
	struct tir_builder *b;
	struct rnn_plan p;
	enum dtype t;
	struct tir *S, *B, *I, *H;		/* extents */
	struct tir_buf *x, *w, *r, *bias, *lens, *h0, *c0, *peep;
	struct tir_buf *y, *yh, *yc;
	int d;				/* the direction being emitted */
	struct tir *bi;			/* the batch row */
};

/* Offset of X[t, b, k]. */
static struct tir *x_off(struct rnn_lower *R, struct tir *t, struct tir *k)
{
	struct tir_builder *b = R->b;
	struct tir *row = R->p.layout1 ? tir_add(b, tir_mul(b, R->bi, R->S), t)
		: tir_add(b, tir_mul(b, t, R->B), R->bi);

	return tir_add(b, tir_mul(b, row, R->I), k);
}

/* Offset of Y[t, d, b, j] (layout 1: Y[b, t, d, j]). */
static struct tir *y_off(struct rnn_lower *R, struct tir *t, struct tir *j)
{
	struct tir_builder *b = R->b;
	struct tir *D = tir_int(b, R->p.dirs), *dd = tir_int(b, R->d), *row;

	if (R->p.layout1)
		row = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, R->bi, R->S), t), D), dd);
	else
		row = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, t, D), dd), R->B), R->bi);
	return tir_add(b, tir_mul(b, row, R->H), j);
}

/* Offset of Y_h[d, b, j] (layout 1: [b, d, j]); also initial_h/c and Y_c. */
static struct tir *h_off(struct rnn_lower *R, struct tir *j)
{
	struct tir_builder *b = R->b;
	struct tir *row = R->p.layout1
		? tir_add(b, tir_mul(b, R->bi, tir_int(b, R->p.dirs)), tir_int(b, R->d))
		: tir_add(b, tir_mul(b, tir_int(b, R->d), R->B), R->bi);

	return tir_add(b, tir_mul(b, row, R->H), j);
}

/* Where a step reads the previous hidden state: a buffer row, or zeros. */
struct rnn_prev {
	struct tir_buf *buf;	/* NULL: zeros */
	struct tir *t;		/* Y's time index, or NULL: an h_off row (initial_h) */
};

static struct tir *prev_load(struct rnn_lower *R, const struct rnn_prev *pv, struct tir *k)
{
	if (!pv->buf)
		return tir_const(R->b, R->t, 0);
	return tir_load(R->b, pv->buf, pv->t ? y_off(R, pv->t, k) : h_off(R, k));
}

/* Row (gate * hidden + j) of direction d of W or R, element k; cols per row. */
static struct tir *mat_off(struct rnn_lower *R, int gate, struct tir *j, struct tir *cols,
			   struct tir *k)
{
	struct tir_builder *b = R->b;
	struct tir *row = tir_add(b, tir_mul(b, tir_int(b, (int64_t)R->d * R->p.gates + gate),
					    R->H), j);

	return tir_add(b, tir_mul(b, row, cols), k);
}

/* Wb + Rb of gate row j (which: 1 Wb only, 2 Rb only, 3 both); 0 without B. */
static struct tir *bias(struct rnn_lower *R, int gate, struct tir *j, int which)
{
	struct tir_builder *b = R->b;
	int64_t gh = (int64_t)R->p.gates * R->p.hidden;
	struct tir *row = tir_add(b, tir_int(b, gate * R->p.hidden), j), *v = NULL;

	if (!R->bias)
		return tir_const(b, R->t, 0);
	if (which & 1)
		v = tir_load(b, R->bias, tir_add(b, tir_int(b, R->d * 2 * gh), row));
	if (which & 2) {
		struct tir *rb = tir_load(b, R->bias, tir_add(b, tir_int(b, R->d * 2 * gh + gh), row));

		v = v ? tir_add(b, v, rb) : rb;
	}
	return v;
}

/*
 * Sum over k of X[t, b, k] * W[gate row j, k] as a local; from the
 * projection XW[t, b, (d * G + gate) * hidden + j] when W is absent.
 */
static struct tir *dot_x(struct rnn_lower *R, int gate, struct tir *t, struct tir *j)
{
	struct tir_builder *b = R->b;
	struct tir *acc, *k;

	if (!R->w)
		return tir_load(b, R->x, x_off(R, t, tir_add(b, tir_int(b, ((int64_t)R->d *
			R->p.gates + gate) * R->p.hidden), j)));
	acc = tir_let(b, "ax", tir_const(b, R->t, 0));
	k = tir_loop(b, R->I);
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_load(b, R->x, x_off(R, t, k)),
						   tir_load(b, R->w, mat_off(R, gate, j, R->I, k)))));
	tir_end(b);
	return acc;
}

/* A local: sum over k of h[k] * R[gate row j, k], h the previous state (or GRU's r.H in Y_h). */
static struct tir *dot_h(struct rnn_lower *R, int gate, const struct rnn_prev *pv, bool rh,
			 struct tir *j)
{
	struct tir_builder *b = R->b;
	struct tir *acc = tir_let(b, "ah", tir_const(b, R->t, 0)), *k, *h;

	if (!rh && !pv->buf)
		return acc;
	k = tir_loop(b, R->H);
	h = rh ? tir_load(b, R->yh, h_off(R, k)) : prev_load(R, pv, k);
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, h, tir_load(b, R->r, mat_off(R, gate, j,
										     R->H, k)))));
	tir_end(b);
	return acc;
}

/*
 * f(x) for activation k of the current direction as a local, x clipped
 * first when it is a gate's input: LSTM's h of the cell state is not
 * clipped (as in ONNX Runtime; the spec says "the input of activations").
 */
static struct tir *activate(struct rnn_lower *R, int k, struct tir *x)
{
	struct tir_builder *b = R->b;
	const struct rnn_fn *f = &R->p.fn[R->d * R->p.fns + k];
	enum dtype t = R->t;
	struct tir *zero = tir_const(b, t, 0), *one = tir_const(b, t, 1), *v;

	if (R->p.has_clip && !(R->L->n->op == OP_LSTM && k == 2))
		x = tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, x, tir_const(b, t, -R->p.clip)),
			    tir_const(b, t, R->p.clip));
	x = tir_let(b, "g", x);
	switch (f->act) {
	case RNN_ACT_RELU:
		v = tir_bin(b, BIN_MAX, x, zero);
		break;
	case RNN_ACT_TANH:
		v = tir_call1(b, INTRIN_TANH, x);
		break;
	case RNN_ACT_SIGMOID:
		v = tir_bin(b, BIN_DIV, one, tir_add(b, one, tir_call1(b, INTRIN_EXP,
								      tir_un(b, UN_NEG, x))));
		break;
	case RNN_ACT_AFFINE:
		v = tir_add(b, tir_mul(b, tir_const(b, t, f->alpha), x), tir_const(b, t, f->beta));
		break;
	case RNN_ACT_LEAKYRELU:
		v = tir_select(b, tir_bin(b, BIN_GE, x, zero), x,
			       tir_mul(b, tir_const(b, t, f->alpha), x));
		break;
	case RNN_ACT_THRESHOLDEDRELU:
		v = tir_select(b, tir_bin(b, BIN_GT, x, tir_const(b, t, f->alpha)), x, zero);
		break;
	case RNN_ACT_SCALEDTANH:
		v = tir_mul(b, tir_const(b, t, f->alpha),
			    tir_call1(b, INTRIN_TANH, tir_mul(b, tir_const(b, t, f->beta), x)));
		break;
	case RNN_ACT_HARDSIGMOID:
		v = tir_bin(b, BIN_MAX, zero, tir_bin(b, BIN_MIN, one, tir_add(b, tir_mul(
			b, tir_const(b, t, f->alpha), x), tir_const(b, t, f->beta))));
		break;
	case RNN_ACT_ELU:
		v = tir_select(b, tir_bin(b, BIN_GE, x, zero), x,
			       tir_mul(b, tir_const(b, t, f->alpha),
				       tir_call1(b, INTRIN_EXPM1, x)));
		break;
	case RNN_ACT_SOFTSIGN:
		v = tir_bin(b, BIN_DIV, x, tir_add(b, one, tir_call1(b, INTRIN_FABS, x)));
		break;
	case RNN_ACT_SOFTPLUS:
		v = tir_call1(b, INTRIN_LOG1P, tir_call1(b, INTRIN_EXP, x));
		break;
	default:
		BUG("rnn activation %d", (int)f->act);
	}
	return tir_let(b, "a", v);
}

/* Pre-activation of gate row j: X.W + H.R + Wb + Rb. */
static struct tir *gate_in(struct rnn_lower *R, int gate, struct tir *t,
			   const struct rnn_prev *pv, struct tir *j)
{
	struct tir_builder *b = R->b;
	struct tir *ax = dot_x(R, gate, t, j), *ah = dot_h(R, gate, pv, false, j);

	return tir_add(R->b, tir_add(b, ax, ah), bias(R, gate, j, 3));
}

/* H_t = f(X.Wi + H.Ri + Wbi + Rbi) */
static void step_rnn(struct rnn_lower *R, struct tir *t, const struct rnn_prev *pv)
{
	struct tir_builder *b = R->b;
	struct tir *j = tir_loop(b, R->H);

	tir_store(b, R->y, y_off(R, t, j), activate(R, 0, gate_in(R, 0, t, pv, j)));
	tir_end(b);
}

/*
 * z = f(..z), r = f(..r); h~ = g(X.Wh + (r (.) H).Rh + Rbh + Wbh), or with
 * linear_before_reset g(X.Wh + r (.) (H.Rh + Rbh) + Wbh); H = (1-z) h~ + z H.
 */
static void step_gru(struct rnn_lower *R, struct tir *t, const struct rnn_prev *pv)
{
	struct tir_builder *b = R->b;
	struct tir *j, *z, *rr, *hx, *hh, *hn;

	if (!R->p.lbr) {
		/* r (.) H_prev for every unit first: each new unit reads all of it */
		j = tir_loop(b, R->H);
		rr = activate(R, 0, gate_in(R, 1, t, pv, j));
		tir_store(b, R->yh, h_off(R, j), tir_mul(b, rr, prev_load(R, pv, j)));
		tir_end(b);
	}
	j = tir_loop(b, R->H);
	z = activate(R, 0, gate_in(R, 0, t, pv, j));
	hx = tir_add(b, dot_x(R, 2, t, j), bias(R, 2, j, 1));
	if (R->p.lbr) {
		rr = activate(R, 0, gate_in(R, 1, t, pv, j));
		hh = tir_add(b, dot_h(R, 2, pv, false, j), bias(R, 2, j, 2));
		hn = activate(R, 1, tir_add(b, hx, tir_mul(b, rr, hh)));
	} else {
		hh = tir_add(b, dot_h(R, 2, pv, true, j), bias(R, 2, j, 2));
		hn = activate(R, 1, tir_add(b, hx, hh));
	}
	tir_store(b, R->y, y_off(R, t, j),
		  tir_add(b, tir_mul(b, tir_bin(b, BIN_SUB, tir_const(b, R->t, 1), z), hn),
			  tir_mul(b, z, prev_load(R, pv, j))));
	tir_end(b);
}

/* Peephole P[d, which * hidden + j] times c, or NULL without P. */
static struct tir *peephole(struct rnn_lower *R, int which, struct tir *j, struct tir *c)
{
	struct tir_builder *b = R->b;

	if (!R->peep)
		return NULL;
	return tir_mul(b, tir_load(b, R->peep, tir_add(b, tir_int(b, (R->d * 3 + which) *
								   R->p.hidden), j)), c);
}

static struct tir *add_opt(struct tir_builder *b, struct tir *x, struct tir *y)
{
	return y ? tir_add(b, x, y) : x;
}

/*
 * i = f(..i + Pi (.) C), f = f(..f + Pf (.) C) (1 - i with input_forget),
 * c = g(..c), C' = f C + i c, o = f(..o + Po (.) C'), H = o h(C').
 */
static void step_lstm(struct rnn_lower *R, struct tir *t, const struct rnn_prev *pv)
{
	struct tir_builder *b = R->b;
	struct tir *j = tir_loop(b, R->H), *c, *gi, *gf, *gc, *go, *cn;

	c = tir_let(b, "c", tir_load(b, R->yc, h_off(R, j)));
	gi = activate(R, 0, add_opt(b, gate_in(R, 0, t, pv, j), peephole(R, 0, j, c)));
	if (R->p.input_forget)
		gf = tir_bin(b, BIN_SUB, tir_const(b, R->t, 1), gi);
	else
		gf = activate(R, 0, add_opt(b, gate_in(R, 2, t, pv, j), peephole(R, 2, j, c)));
	gc = activate(R, 1, gate_in(R, 3, t, pv, j));
	cn = tir_let(b, "cn", tir_add(b, tir_mul(b, gf, c), tir_mul(b, gi, gc)));
	go = activate(R, 0, add_opt(b, gate_in(R, 1, t, pv, j), peephole(R, 1, j, cn)));
	tir_store(b, R->yc, h_off(R, j), cn);
	tir_store(b, R->y, y_off(R, t, j), tir_mul(b, go, activate(R, 2, cn)));
	tir_end(b);
}

static void step(struct rnn_lower *R, struct tir *t, const struct rnn_prev *pv)
{
	switch (R->L->n->op) {
	case OP_RNN:
		step_rnn(R, t, pv);
		break;
	case OP_GRU:
		step_gru(R, t, pv);
		break;
	case OP_LSTM:
		step_lstm(R, t, pv);
		break;
	default:
		BUG("lower_rnn on %s", op_info(R->L->n->op)->name);
	}
}

/* The time index of step s of a row of length len in the current direction. */
static struct tir *time_of(struct rnn_lower *R, struct tir *s, struct tir *len)
{
	struct tir_builder *b = R->b;

	if (!R->p.reverse[R->d])
		return s;
	return tir_bin(b, BIN_SUB, tir_bin(b, BIN_SUB, len, tir_int(b, 1)), s);
}

/* The row's state from buf (an h_off row) or zeros into dst's h_off row. */
static void copy_state(struct rnn_lower *R, struct tir_buf *dst, struct tir_buf *src)
{
	struct tir_builder *b = R->b;
	struct tir *j = tir_loop(b, R->H);

	tir_store(b, dst, h_off(R, j), src ? tir_load(b, src, h_off(R, j))
		  : tir_const(b, R->t, 0));
	tir_end(b);
}

/* One direction: every batch row's steps, then its Y_h and zeros past its length. */
static void lower_direction(struct rnn_lower *R)
{
	struct tir_builder *b = R->b;
	struct tir *len, *s, *j, *last;
	struct rnn_prev first = { R->h0, NULL }, prev;

	R->bi = tir_loop(b, R->B);
	tir_mark_parallel(b);
	if (R->lens)
		len = tir_let(b, "len", tir_bin(b, BIN_MAX, tir_int(b, 0), tir_bin(
			b, BIN_MIN, R->S, tir_cast(b, DTYPE_I64, tir_load(b, R->lens, R->bi)))));
	else
		len = tir_let(b, "len", R->S);
	if (R->yc)
		copy_state(R, R->yc, R->c0);
	tir_if(b, tir_bin(b, BIN_GT, len, tir_int(b, 0)));
	step(R, time_of(R, tir_int(b, 0), len), &first);
	tir_end(b);
	s = tir_loop(b, tir_bin(b, BIN_SUB, len, tir_int(b, 1)));
	s = tir_let(b, "s", tir_add(b, s, tir_int(b, 1)));
	prev.buf = R->y;
	prev.t = R->p.reverse[R->d] ? tir_add(b, time_of(R, s, len), tir_int(b, 1))
		: tir_bin(b, BIN_SUB, s, tir_int(b, 1));
	step(R, time_of(R, s, len), &prev);
	tir_end(b);
	/* Y_h: the state after the last step (the initial one for an empty row) */
	tir_if(b, tir_bin(b, BIN_GT, len, tir_int(b, 0)));
	last = R->p.reverse[R->d] ? tir_int(b, 0) : tir_bin(b, BIN_SUB, len, tir_int(b, 1));
	j = tir_loop(b, R->H);
	tir_store(b, R->yh, h_off(R, j), tir_load(b, R->y, y_off(R, last, j)));
	tir_end(b);
	tir_else(b);
	copy_state(R, R->yh, R->h0);
	tir_end(b);
	/* steps past the row's length output zeros */
	s = tir_loop(b, tir_bin(b, BIN_SUB, R->S, len));
	s = tir_let(b, "t", tir_add(b, s, len));
	j = tir_loop(b, R->H);
	tir_store(b, R->y, y_off(R, s, j), tir_const(b, R->t, 0));
	tir_end(b);
	tir_end(b);
	tir_end(b);
}

int lower_rnn(struct lower *L)
{
	struct rnn_lower R = { 0 };
	const struct value *x = lower_in(L, 0);
	int lstm = L->n->op == OP_LSTM;

	if (rnn_plan_attrs(L->g, L->n, &R.p) < 0)
		return -1;
	if (L->n->n_out < (lstm ? 3 : 2))
		BUG("%s: rnn node has %d outputs (normalisation pads them)", L->n->name,
		    L->n->n_out);
	R.L = L;
	R.b = L->b;
	R.t = x->dtype;
	R.S = tir_dim(R.b, x->shape.d[R.p.layout1 ? 1 : 0]);
	R.B = tir_dim(R.b, x->shape.d[R.p.layout1 ? 0 : 1]);
	R.I = tir_dim(R.b, x->shape.d[2]);
	R.p.hidden = lower_out(L, 0)->shape.d[3].c;
	R.H = tir_int(R.b, R.p.hidden);
	R.x = L->in[0];
	R.w = L->in[1];
	R.r = L->in[2];
	R.bias = L->n->n_in > 3 ? L->in[3] : NULL;
	R.lens = L->n->n_in > 4 ? L->in[4] : NULL;
	R.h0 = L->n->n_in > 5 ? L->in[5] : NULL;
	R.c0 = lstm && L->n->n_in > 6 ? L->in[6] : NULL;
	R.peep = lstm && L->n->n_in > 7 ? L->in[7] : NULL;
	R.y = L->out[0];
	R.yh = L->out[1];
	R.yc = lstm ? L->out[2] : NULL;
	for (R.d = 0; R.d < R.p.dirs; R.d++)
		lower_direction(&R);
	return 0;
}
