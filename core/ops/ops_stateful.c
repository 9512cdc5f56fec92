/*
 * ops_stateful.c - the recurrent-state ops of opset 27 that linear-attention
 * decoders (Gated DeltaNet, Mamba) use: LinearAttention and
 * CausalConvWithState. Each takes an optional past state and gives the
 * present one, so a decode step is one call per layer.
 *
 * Both are written as the recurrence their spec states, one token after
 * another, in float32: CausalConvWithState widens 16-bit types at the loads
 * and rounds once at the stores; LinearAttention keeps its state in
 * present_state, which it updates in place token by token, so it takes
 * float32 only.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- LinearAttention ---- */

enum la_rule { LA_LINEAR, LA_GATED, LA_DELTA, LA_GATED_DELTA, LA_COUNT };

/* What infer and lower both read of a LinearAttention node. */
struct la {
	enum la_rule rule;
	int64_t hq, hkv, dk, dv;	/* heads and head sizes */
	struct dim b, t;		/* batch and tokens */
	bool past;			/* past_state (input 3) is given */
	bool decay_per_key;		/* decay is [B, T, Hkv * dk], not [B, T, Hkv] */
	bool beta_per_head;		/* beta is [B, T, Hkv], not [B, T, 1] */
	double scale;
};

static int la_rule(struct graph *g, struct node *n, enum la_rule *r)
{
	static const char *const names[LA_COUNT] = { "linear", "gated", "delta", "gated_delta" };
	const char *s = node_attr_str(n, "update_rule", "gated_delta");

	for (int i = 0; i < LA_COUNT; i++)
		if (!strcmp(s, names[i])) {
			*r = i;
			return 0;
		}
	diag_error(g->ctx, "%s: update_rule '%s' is not supported (expected linear, gated, "
		   "delta or gated_delta)", node_loc(g, n), s);
	return -1;
}

/* Whether v is [b, t, last] (last constant). */
static bool la_packed(const struct value *v, struct dim b, struct dim t, int64_t last)
{
	return v->shape.rank == 3 && dim_eq(v->shape.d[0], b) && dim_eq(v->shape.d[1], t) &&
	       dim_is_const(v->shape.d[2]) && v->shape.d[2].c == last;
}

/*
 * decay (input 4) for the gated rules and beta (input 5) for the delta
 * ones, each present exactly when its rule reads it, of Q's type.
 */
static int la_gates(struct graph *g, struct node *n, struct la *a, enum dtype t)
{
	bool gated = a->rule == LA_GATED || a->rule == LA_GATED_DELTA;
	bool delta = a->rule == LA_DELTA || a->rule == LA_GATED_DELTA;
	struct value *d = node_in(g, n, 4) ? infer_input(g, n, 4) : NULL;
	struct value *be = node_in(g, n, 5) ? infer_input(g, n, 5) : NULL;

	if (gated != (d != NULL) || delta != (be != NULL)) {
		diag_error(g->ctx, "%s: update_rule '%s' needs %s and %s", node_loc(g, n),
			   node_attr_str(n, "update_rule", "gated_delta"),
			   gated ? "decay" : "no decay", delta ? "beta" : "no beta");
		return -1;
	}
	if (d) {
		a->decay_per_key = la_packed(d, a->b, a->t, a->hkv * a->dk);
		if (d->dtype != t || (!a->decay_per_key && !la_packed(d, a->b, a->t, a->hkv))) {
			diag_error(g->ctx, "%s: decay must be [batch, seq, kv_num_heads] or [batch, "
				   "seq, kv_num_heads * head_size] of query's type", node_loc(g, n));
			return -1;
		}
	}
	if (be) {
		a->beta_per_head = la_packed(be, a->b, a->t, a->hkv) && a->hkv != 1;
		if (be->dtype != t || (!a->beta_per_head && !la_packed(be, a->b, a->t, 1))) {
			diag_error(g->ctx, "%s: beta must be [batch, seq, kv_num_heads] or [batch, "
				   "seq, 1] of query's type", node_loc(g, n));
			return -1;
		}
	}
	return 0;
}

/* Reads and checks LinearAttention node n into a; -1 after a diagnostic. */
static int la_plan(struct graph *g, struct node *n, struct la *a)
{
	struct value *q, *k, *v, *p = NULL;

	memset(a, 0, sizeof(*a));
	if (infer_arity(g, n, 3, 6, 2) < 0 || la_rule(g, n, &a->rule) < 0 ||
	    !(q = infer_input(g, n, 0)) || !(k = infer_input(g, n, 1)) ||
	    !(v = infer_input(g, n, 2)) || (node_in(g, n, 3) && !(p = infer_input(g, n, 3))))
		return -1;
	a->hq = node_attr_int(n, "q_num_heads", 0);
	a->hkv = node_attr_int(n, "kv_num_heads", 0);
	if (a->hq <= 0 || a->hkv <= 0 || a->hq % a->hkv) {
		diag_error(g->ctx, "%s: q_num_heads (%lld) must be a positive multiple of "
			   "kv_num_heads (%lld)", node_loc(g, n), (long long)a->hq,
			   (long long)a->hkv);
		return -1;
	}
	/* the state is kept in present_state: a 16-bit one would round every token */
	if (q->dtype != DTYPE_F32) {
		diag_error(g->ctx, "%s: LinearAttention of %s is not supported (expected float32)",
			   node_loc(g, n), dtype_name(q->dtype));
		return -1;
	}
	if (q->shape.rank == 3) {
		a->b = q->shape.d[0];
		a->t = q->shape.d[1];
	}
	if (q->shape.rank != 3 || !dim_is_const(q->shape.d[2]) || q->shape.d[2].c % a->hq ||
	    k->shape.rank != 3 || !dim_is_const(k->shape.d[2]) || k->shape.d[2].c % a->hkv ||
	    v->shape.rank != 3 || !dim_is_const(v->shape.d[2]) || v->shape.d[2].c % a->hkv) {
		diag_error(g->ctx, "%s: query, key and value must be [batch, seq, heads * "
			   "head_size] with constant last dims", node_loc(g, n));
		return -1;
	}
	a->dk = q->shape.d[2].c / a->hq;
	a->dv = v->shape.d[2].c / a->hkv;
	if (k->dtype != q->dtype || v->dtype != q->dtype ||
	    !la_packed(k, a->b, a->t, a->hkv * a->dk) || !la_packed(v, a->b, a->t, a->hkv * a->dv)) {
		diag_error(g->ctx, "%s: key and value must have query's type, batch, sequence "
			   "and head size", node_loc(g, n));
		return -1;
	}
	a->past = p != NULL;
	if (p && (p->dtype != q->dtype || p->shape.rank != 4 || !dim_eq(p->shape.d[0], a->b) ||
		  !dim_is_const(p->shape.d[1]) || p->shape.d[1].c != a->hkv ||
		  !dim_is_const(p->shape.d[2]) || p->shape.d[2].c != a->dk ||
		  !dim_is_const(p->shape.d[3]) || p->shape.d[3].c != a->dv)) {
		diag_error(g->ctx, "%s: past_state must be [batch, kv_num_heads, head_size, "
			   "v_head_size] of query's type", node_loc(g, n));
		return -1;
	}
	a->scale = node_attr_float(n, "scale", 0);
	if (a->scale == 0)
		a->scale = 1 / sqrt((double)a->dk);
	return la_gates(g, n, a, q->dtype);
}

/* output: [B, T, Hq * dv]; present_state: [B, Hkv, dk, dv], both of query's type. */
int infer_linearattention(struct graph *g, struct node *n)
{
	struct la a;
	struct shape y, s;

	if (la_plan(g, n, &a) < 0)
		return -1;
	y = (struct shape){ 3, { a.b, a.t, dim_const(a.hq * a.dv) } };
	s = (struct shape){ 4, { a.b, dim_const(a.hkv), dim_const(a.dk), dim_const(a.dv) } };
	infer_set(g, n, 0, node_in(g, n, 0)->dtype, &y);
	if (n->n_out > 1 && n->out[1] >= 0)
		infer_set(g, n, 1, node_in(g, n, 0)->dtype, &s);
	return 0;
}

/* Element (bi, ti, head h, d) of packed [B, T, heads * size] input i, as float. */
static struct tir *la_load(struct lower *L, int i, const struct la *a, struct tir *bi,
			   struct tir *ti, struct tir *h, struct tir *d, int64_t heads, int64_t size)
{
	struct tir_builder *b = L->b;
	struct tir *off = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, bi, tir_dim(b, a->t)), ti),
					     tir_int(b, heads * size)),
				  tir_add(b, tir_mul(b, h, tir_int(b, size)), d));

	return tir_cast(b, DTYPE_F32, tir_load(b, L->in[i], off));
}

/*
 * One token ti of kv head kh of batch entry bi on the state S (present_state
 * at base, [dk, dv]): the decay, then per column m (the delta rule's
 * correction reads only that column) the write, then the query heads of
 * the group read it.
 */
static void la_token(struct lower *L, const struct la *a, struct tir *bi, struct tir *kh,
		     struct tir *ti, struct tir *base)
{
	struct tir_builder *b = L->b;
	struct tir_buf *st = L->out[1];
	struct tir *d, *m, *at, *v, *r, *beta, *g, *hq, *acc;
	bool gated = a->rule == LA_GATED || a->rule == LA_GATED_DELTA;
	bool delta = a->rule == LA_DELTA || a->rule == LA_GATED_DELTA;

	if (gated) {
		d = tir_loop(b, tir_int(b, a->dk));
		g = a->decay_per_key ? la_load(L, 4, a, bi, ti, kh, d, a->hkv, a->dk)
			: la_load(L, 4, a, bi, ti, kh, tir_int(b, 0), a->hkv, 1);
		g = tir_let(b, "g", tir_call1(b, INTRIN_EXP, g));
		m = tir_loop(b, tir_int(b, a->dv));
		at = tir_add(b, base, tir_add(b, tir_mul(b, d, tir_int(b, a->dv)), m));
		tir_store(b, st, at, tir_mul(b, tir_load(b, st, at), g));
		tir_end(b);
		tir_end(b);
	}
	m = tir_loop(b, tir_int(b, a->dv));
	v = la_load(L, 2, a, bi, ti, kh, m, a->hkv, a->dv);
	if (delta) {
		r = tir_let(b, "r", tir_const(b, DTYPE_F32, 0));
		d = tir_loop(b, tir_int(b, a->dk));
		at = tir_add(b, base, tir_add(b, tir_mul(b, d, tir_int(b, a->dv)), m));
		tir_assign(b, r, tir_add(b, r, tir_mul(b, tir_load(b, st, at),
						       la_load(L, 1, a, bi, ti, kh, d, a->hkv,
							       a->dk))));
		tir_end(b);
		beta = a->beta_per_head ? la_load(L, 5, a, bi, ti, kh, tir_int(b, 0), a->hkv, 1)
			: la_load(L, 5, a, bi, ti, tir_int(b, 0), tir_int(b, 0), 1, 1);
		v = tir_mul(b, beta, tir_bin(b, BIN_SUB, v, r));
	}
	v = tir_let(b, "u", v);
	d = tir_loop(b, tir_int(b, a->dk));
	at = tir_add(b, base, tir_add(b, tir_mul(b, d, tir_int(b, a->dv)), m));
	tir_store(b, st, at, tir_add(b, tir_load(b, st, at),
				     tir_mul(b, la_load(L, 1, a, bi, ti, kh, d, a->hkv, a->dk), v)));
	tir_end(b);
	tir_end(b);
	/* the group's query heads read the state: o = scale q . S[:, m] */
	g = tir_loop(b, tir_int(b, a->hq / a->hkv));
	hq = tir_let(b, "hq", tir_add(b, tir_mul(b, kh, tir_int(b, a->hq / a->hkv)), g));
	m = tir_loop(b, tir_int(b, a->dv));
	acc = tir_let(b, "acc", tir_const(b, DTYPE_F32, 0));
	d = tir_loop(b, tir_int(b, a->dk));
	at = tir_add(b, base, tir_add(b, tir_mul(b, d, tir_int(b, a->dv)), m));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, la_load(L, 0, a, bi, ti, hq, d, a->hq, a->dk),
						   tir_load(b, st, at))));
	tir_end(b);
	at = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, bi, tir_dim(b, a->t)), ti),
				tir_int(b, a->hq * a->dv)),
		     tir_add(b, tir_mul(b, hq, tir_int(b, a->dv)), m));
	tir_store(b, L->out[0], at, tir_mul(b, tir_const(b, DTYPE_F32, a->scale), acc));
	tir_end(b);
	tir_end(b);
}

/*
 * Per batch entry and kv head (parallel): the state starts as past_state
 * (or zeros) in present_state, then each token updates it and the group's
 * query heads read it.
 */
int lower_linearattention(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct la a;
	struct tir *bi, *kh, *base, *i, *ti;
	int64_t n = 0;

	if (la_plan(L->g, (struct node *)L->n, &a) < 0)
		return -1;
	if (L->n->n_out < 2 || !L->out[1]) {
		diag_error(L->g->ctx, "%s: LinearAttention needs its present_state output (the "
			   "state's workspace)", node_loc(L->g, L->n));
		return -1;
	}
	n = a.dk * a.dv;
	bi = tir_loop(b, tir_dim(b, a.b));
	tir_mark_parallel(b);
	kh = tir_loop(b, tir_int(b, a.hkv));
	tir_mark_parallel(b);
	base = tir_let(b, "base", tir_mul(b, tir_add(b, tir_mul(b, bi, tir_int(b, a.hkv)), kh),
					  tir_int(b, n)));
	i = tir_loop(b, tir_int(b, n));
	tir_store(b, L->out[1], tir_add(b, base, i), a.past ?
		  tir_load(b, L->in[3], tir_add(b, base, i)) : tir_const(b, DTYPE_F32, 0));
	tir_end(b);
	ti = tir_loop(b, tir_dim(b, a.t));
	la_token(L, &a, bi, kh, ti, base);
	tir_end(b);
	lower_end_loops(L, 2);
	return 0;
}

/* ---- CausalConvWithState ---- */

/* Reads the node's shapes: x [B, C, L], weight [C, 1, k]; *k the kernel size. */
static int ccs_plan(struct graph *g, struct node *n, int64_t *k)
{
	struct value *x, *w, *bias = NULL, *p = NULL;
	const char *act = node_attr_str(n, "activation", "none");

	if (infer_arity(g, n, 2, 4, 2) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(w = infer_input(g, n, 1)) || (node_in(g, n, 2) && !(bias = infer_input(g, n, 2))) ||
	    (node_in(g, n, 3) && !(p = infer_input(g, n, 3))))
		return -1;
	if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish")) {
		diag_error(g->ctx, "%s: activation '%s' is not supported (expected none, silu or "
			   "swish)", node_loc(g, n), act);
		return -1;
	}
	if (!dtype_is_float(x->dtype) || x->dtype == DTYPE_F64 || x->shape.rank != 3 ||
	    w->dtype != x->dtype || w->shape.rank != 3 || !dim_eq(w->shape.d[0], x->shape.d[1]) ||
	    !dim_is_const(w->shape.d[1]) || w->shape.d[1].c != 1 || !dim_is_const(w->shape.d[2]) ||
	    w->shape.d[2].c < 1) {
		diag_error(g->ctx, "%s: input must be float [batch, channels, length] and weight "
			   "[channels, 1, k] of its type, k constant", node_loc(g, n));
		return -1;
	}
	*k = w->shape.d[2].c;
	if (bias && (bias->dtype != x->dtype || bias->shape.rank != 1 ||
		     !dim_eq(bias->shape.d[0], x->shape.d[1]))) {
		diag_error(g->ctx, "%s: bias must be [channels] of input's type", node_loc(g, n));
		return -1;
	}
	if (p && (p->dtype != x->dtype || p->shape.rank != 3 || !dim_eq(p->shape.d[0], x->shape.d[0]) ||
		  !dim_eq(p->shape.d[1], x->shape.d[1]) || !dim_is_const(p->shape.d[2]) ||
		  p->shape.d[2].c != *k - 1)) {
		diag_error(g->ctx, "%s: past_state must be [batch, channels, k - 1] of input's type",
			   node_loc(g, n));
		return -1;
	}
	return 0;
}

/* output: the input's shape; present_state: [B, C, k - 1]. */
int infer_causalconvwithstate(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;
	int64_t k;

	if (ccs_plan(g, n, &k) < 0)
		return -1;
	x = node_in(g, n, 0);
	infer_set(g, n, 0, x->dtype, &x->shape);
	s = x->shape;
	s.d[2] = dim_const(k - 1);
	if (n->n_out > 1 && n->out[1] >= 0)
		infer_set(g, n, 1, x->dtype, &s);
	return 0;
}

/*
 * Element i of channel (bi, c) of the padded sequence past ++ x (k - 1
 * past positions, zeros without past_state), as float. The select reads
 * both sides: each index is clamped into its buffer.
 */
static struct tir *ccs_padded(struct lower *L, struct tir *bi, struct tir *c, struct tir *i,
			      int64_t k)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *len = tir_dim(b, x->shape.d[2]), *ch = tir_dim(b, x->shape.d[1]);
	struct tir *row = tir_add(b, tir_mul(b, bi, ch), c), *xi, *xv, *pv;

	xi = tir_bin(b, BIN_SUB, i, tir_int(b, k - 1));
	xv = tir_cast(b, DTYPE_F32, tir_load(b, L->in[0], tir_add(b, tir_mul(b, row, len),
				 tir_bin(b, BIN_MAX, xi, tir_int(b, 0)))));
	if (k == 1)
		return xv;
	pv = lower_in(L, 3) ? tir_cast(b, DTYPE_F32, tir_load(b, L->in[3],
				tir_add(b, tir_mul(b, row, tir_int(b, k - 1)),
					tir_bin(b, BIN_MIN, i, tir_int(b, k - 2)))))
		: tir_const(b, DTYPE_F32, 0);
	return tir_select(b, tir_bin(b, BIN_LT, i, tir_int(b, k - 1)), pv, xv);
}

/*
 * y[b, c, l] = bias[c] + sum_j w[c, 0, j] padded[l + j], then x sigmoid(x)
 * under silu/swish; present_state: the last k - 1 padded positions.
 */
int lower_causalconvwithstate(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	const char *act = node_attr_str(L->n, "activation", "none");
	struct tir *bi, *c, *l, *j, *acc, *y, *len = tir_dim(b, x->shape.d[2]), *row;
	int64_t k;

	if (ccs_plan(L->g, (struct node *)L->n, &k) < 0)
		return -1;
	bi = tir_loop(b, tir_dim(b, x->shape.d[0]));
	tir_mark_parallel(b);
	c = tir_loop(b, tir_dim(b, x->shape.d[1]));
	tir_mark_parallel(b);
	row = tir_let(b, "row", tir_add(b, tir_mul(b, bi, tir_dim(b, x->shape.d[1])), c));
	l = tir_loop(b, len);
	acc = tir_let(b, "acc", lower_in(L, 2) ? tir_cast(b, DTYPE_F32, tir_load(b, L->in[2], c))
		      : tir_const(b, DTYPE_F32, 0));
	j = tir_loop(b, tir_int(b, k));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_cast(b, DTYPE_F32, tir_load(b, L->in[1],
				tir_add(b, tir_mul(b, c, tir_int(b, k)), j))),
				ccs_padded(L, bi, c, tir_add(b, l, j), k))));
	tir_end(b);
	y = acc;
	if (strcmp(act, "none"))
		y = tir_bin(b, BIN_DIV, acc, tir_add(b, tir_const(b, DTYPE_F32, 1),
						     tir_call1(b, INTRIN_EXP, tir_un(b, UN_NEG, acc))));
	tir_store(b, L->out[0], tir_add(b, tir_mul(b, row, len), l), y);
	tir_end(b);
	if (k > 1 && L->n->n_out > 1 && L->out[1]) {
		j = tir_loop(b, tir_int(b, k - 1));
		tir_store(b, L->out[1], tir_add(b, tir_mul(b, row, tir_int(b, k - 1)), j),
			  ccs_padded(L, bi, c, tir_add(b, len, j), k));
		tir_end(b);
	}
	lower_end_loops(L, 2);
	return 0;
}
