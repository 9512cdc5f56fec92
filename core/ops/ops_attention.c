/*
 * ops_attention.c - the transformer ops of opset 23: RotaryEmbedding and
 * Attention (its output Y; the key/value cache inputs and the extra
 * outputs are refused).
 *
 * Both take 4-D [batch, heads, seq, head_size] tensors or 3-D [batch, seq,
 * heads * head_size] ones with the head count in an attribute. The 3-D
 * form is read through the view [batch, seq, heads, head_size], which has
 * the same row-major layout, so one index (b, h, s, d) addresses either.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* A tensor of either form, with its 4-D view. */
struct heads {
	bool flat;		/* 3-D input, viewed as [B, S, H, D] */
	struct shape view;
	struct dim b, s;	/* batch and sequence length */
	int64_t h, d;		/* heads and head size (constant) */
};

/*
 * Reads input i as heads: 4-D as it is, 3-D split into nheads heads (an
 * attribute the caller read; 0 when absent). The head count and size must
 * be constant. -1 after a diagnostic.
 */
static int heads_of(struct graph *g, struct node *n, int i, int64_t nheads, struct heads *hd)
{
	struct value *v = infer_input(g, n, i);
	const struct shape *s;

	if (!v)
		return -1;
	if (!dtype_is_float(v->dtype)) {
		diag_error(g->ctx, "%s: input %d '%s' has type %s (expected a float type)",
			   node_loc(g, n), i, v->name, dtype_name(v->dtype));
		return -1;
	}
	s = &v->shape;
	memset(hd, 0, sizeof(*hd));
	if (s->rank == 4 && dim_is_const(s->d[1]) && dim_is_const(s->d[3])) {
		hd->view = *s;
		hd->b = s->d[0];
		hd->h = s->d[1].c;
		hd->s = s->d[2];
		hd->d = s->d[3].c;
		return 0;
	}
	if (s->rank == 3 && nheads > 0 && dim_is_const(s->d[2]) && s->d[2].c % nheads == 0) {
		hd->flat = true;
		hd->b = s->d[0];
		hd->s = s->d[1];
		hd->h = nheads;
		hd->d = s->d[2].c / nheads;
		hd->view.rank = 4;
		hd->view.d[0] = hd->b;
		hd->view.d[1] = hd->s;
		hd->view.d[2] = dim_const(hd->h);
		hd->view.d[3] = dim_const(hd->d);
		return 0;
	}
	diag_error(g->ctx, "%s: input %d '%s' must be [batch, heads, seq, head_size] or [batch, "
		   "seq, heads * head_size] with the head count attribute, both constant",
		   node_loc(g, n), i, v->name);
	return -1;
}

/* Offset of element (b, h, s, d) of a heads tensor. */
static struct tir *heads_offset(struct lower *L, const struct heads *hd, struct tir *b,
				struct tir *h, struct tir *s, struct tir *d)
{
	struct tir *idx[4] = { b, hd->flat ? s : h, hd->flat ? h : s, d };

	return lower_offset(L, &hd->view, idx);
}

/* ---- RotaryEmbedding ---- */

/* The rotated width: rotary_embedding_dim, or the head size when 0. */
static int64_t rope_dim(const struct node *n, const struct heads *x)
{
	int64_t r = node_attr_int(n, "rotary_embedding_dim", 0);

	return r ? r : x->d;
}

/*
 * X (4-D or 3-D with num_heads), cos and sin caches [P, r / 2] indexed by
 * position_ids [B, S], or [B, S, r / 2] without them. Y like X.
 */
int infer_rope(struct graph *g, struct node *n)
{
	struct heads x;
	struct value *c, *s, *pos = NULL;
	int64_t r;
	bool with_pos;

	if (infer_arity(g, n, 3, 4, 1) < 0 ||
	    heads_of(g, n, 0, node_attr_int(n, "num_heads", 0), &x) < 0 ||
	    !(c = infer_input(g, n, 1)) || !(s = infer_input(g, n, 2)))
		return -1;
	with_pos = node_in(g, n, 3) != NULL;
	if (with_pos && !(pos = infer_input(g, n, 3)))
		return -1;
	r = rope_dim(n, &x);
	if (r <= 0 || r % 2 || r > x.d) {
		diag_error(g->ctx, "%s: rotary_embedding_dim %lld must be even and at most the "
			   "head size %lld", node_loc(g, n), (long long)r, (long long)x.d);
		return -1;
	}
	if (c->dtype != node_in(g, n, 0)->dtype || s->dtype != c->dtype ||
	    !shape_eq(&c->shape, &s->shape) || c->shape.rank != (with_pos ? 2 : 3) ||
	    !dim_eq(c->shape.d[c->shape.rank - 1], dim_const(r / 2)) ||
	    (with_pos && !dim_is_const(c->shape.d[0])) ||
	    (!with_pos && (!dim_eq(c->shape.d[0], x.b) || !dim_eq(c->shape.d[1], x.s)))) {
		diag_error(g->ctx, "%s: cos_cache and sin_cache must be X's type and [positions, "
			   "%lld] with position_ids, else [batch, seq, %lld]", node_loc(g, n),
			   (long long)r / 2, (long long)r / 2);
		return -1;
	}
	if (with_pos && (pos->dtype != DTYPE_I64 || pos->shape.rank != 2 ||
			 !dim_eq(pos->shape.d[0], x.b) || !dim_eq(pos->shape.d[1], x.s))) {
		diag_error(g->ctx, "%s: position_ids must be int64 [batch, seq]", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, c->dtype, &node_in(g, n, 0)->shape);
	return 0;
}

/*
 * The first r elements of each head rotate in pairs (d, d + r / 2), or
 * (2 i, 2 i + 1) when interleaved, by the angle of the token's position:
 * (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2). The rest are copied.
 */
int lower_rope(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *cv = lower_in(L, 1);
	bool inter = node_attr_int(L->n, "interleaved", 0) != 0;
	struct heads x;
	struct tir *idx[4], *bi, *hi, *si, *di, *i, *first, *x1, *x2, *x0, *row, *co, *sn, *rot;
	int64_t r, half;

	if (heads_of(L->g, (struct node *)L->n, 0, node_attr_int(L->n, "num_heads", 0), &x) < 0)
		return -1;
	r = rope_dim(L->n, &x);
	half = r / 2;
	lower_loops_parallel(L, &x.view, idx);
	bi = idx[0];
	hi = x.flat ? idx[2] : idx[1];
	si = x.flat ? idx[1] : idx[2];
	di = idx[3];
	/* the pair's cache column (clamped: unused past r) and which half d is */
	if (inter) {
		i = tir_bin(b, BIN_DIV, di, tir_int(b, 2));
		first = tir_bin(b, BIN_EQ, tir_bin(b, BIN_MOD, di, tir_int(b, 2)), tir_int(b, 0));
	} else {
		first = tir_bin(b, BIN_LT, di, tir_int(b, half));
		i = tir_select(b, first, di, tir_bin(b, BIN_SUB, di, tir_int(b, half)));
	}
	first = tir_let(b, "first", first);
	i = tir_let(b, "i", tir_bin(b, BIN_MIN, i, tir_int(b, half - 1)));
	x1 = tir_load(b, L->in[0], heads_offset(L, &x, bi, hi, si,
						inter ? tir_mul(b, i, tir_int(b, 2)) : i));
	x2 = tir_load(b, L->in[0], heads_offset(L, &x, bi, hi, si,
						inter ? tir_add(b, tir_mul(b, i, tir_int(b, 2)),
								tir_int(b, 1))
						: tir_add(b, i, tir_int(b, half))));
	x1 = tir_let(b, "x1", x1);
	x2 = tir_let(b, "x2", x2);
	if (L->in[3]) {
		/* the cache row of the token's position, clamped to the cache */
		struct tir *tok = tir_add(b, tir_mul(b, bi, tir_dim(b, x.s)), si);
		struct tir *p = tir_load(b, L->in[3], tok);

		p = tir_bin(b, BIN_MAX, tir_bin(b, BIN_MIN, p, tir_int(b, cv->shape.d[0].c - 1)),
			    tir_int(b, 0));
		row = tir_mul(b, p, tir_int(b, half));
	} else {
		row = tir_mul(b, tir_add(b, tir_mul(b, bi, tir_dim(b, x.s)), si), tir_int(b, half));
	}
	row = tir_let(b, "row", tir_add(b, row, i));
	co = tir_let(b, "cos", tir_load(b, L->in[1], row));
	sn = tir_let(b, "sin", tir_load(b, L->in[2], row));
	rot = tir_select(b, first, tir_bin(b, BIN_SUB, tir_mul(b, co, x1), tir_mul(b, sn, x2)),
			 tir_add(b, tir_mul(b, sn, x1), tir_mul(b, co, x2)));
	x0 = tir_load(b, L->in[0], heads_offset(L, &x, bi, hi, si, di));
	tir_store(b, L->out[0], heads_offset(L, &x, bi, hi, si, di),
		  tir_select(b, tir_bin(b, BIN_LT, di, tir_int(b, r)), rot, x0));
	lower_end_loops(L, 4);
	return 0;
}

/* ---- Attention ---- */

/* Q, K and V as heads, checked against each other; -1 after a diagnostic. */
static int attn_inputs(struct graph *g, struct node *n, struct heads *q, struct heads *k,
		       struct heads *v)
{
	int64_t hq = node_attr_int(n, "q_num_heads", 0), hkv = node_attr_int(n, "kv_num_heads", 0);

	if (heads_of(g, n, 0, hq, q) < 0 || heads_of(g, n, 1, hkv, k) < 0 ||
	    heads_of(g, n, 2, hkv, v) < 0)
		return -1;
	if (q->flat != k->flat || k->flat != v->flat || k->h != v->h || q->d != k->d ||
	    !dim_eq(q->b, k->b) || !dim_eq(k->b, v->b) || !dim_eq(k->s, v->s) ||
	    k->h == 0 || q->h % k->h) {
		diag_error(g->ctx, "%s: Q, K and V do not agree in form, batch, heads, sequence or "
			   "head size", node_loc(g, n));
		return -1;
	}
	if (node_in(g, n, 1)->dtype != node_in(g, n, 0)->dtype ||
	    node_in(g, n, 2)->dtype != node_in(g, n, 0)->dtype) {
		diag_error(g->ctx, "%s: Q, K and V must have one type", node_loc(g, n));
		return -1;
	}
	return 0;
}

/* The scores' shape [B, Hq, Sq, Skv], which the mask broadcasts to. */
static struct shape attn_scores(const struct heads *q, const struct heads *k)
{
	struct shape s = { 4, { q->b, dim_const(q->h), q->s, k->s } };

	return s;
}

/*
 * Y: [B, Hq, Sq, Dv], or [B, Sq, Hq * Dv] for 3-D inputs. The cache inputs
 * (past_key, past_value) and the outputs after Y are not supported.
 */
int infer_attention(struct graph *g, struct node *n)
{
	struct heads q, k, v;
	struct value *m;
	struct shape y, sc, r;
	enum dtype t;

	if (infer_arity(g, n, 3, 6, -1) < 0 || attn_inputs(g, n, &q, &k, &v) < 0)
		return -1;
	if (node_in(g, n, 4) || node_in(g, n, 5)) {
		diag_error(g->ctx, "%s: past_key and past_value are not supported", node_loc(g, n));
		return -1;
	}
	for (int i = 1; i < n->n_out; i++)
		if (node_out(g, n, i)) {
			diag_error(g->ctx, "%s: outputs present_key, present_value and "
				   "qk_matmul_output are not supported", node_loc(g, n));
			return -1;
		}
	t = node_in(g, n, 0)->dtype;
	if (node_attr(n, "softmax_precision") &&
	    !dtype_is_float(dtype_from_onnx((int)node_attr_int(n, "softmax_precision", 1)))) {
		diag_error(g->ctx, "%s: softmax_precision %lld is not supported", node_loc(g, n),
			   (long long)node_attr_int(n, "softmax_precision", 1));
		return -1;
	}
	sc = attn_scores(&q, &k);
	if ((m = node_in(g, n, 3))) {
		if (!(m = infer_input(g, n, 3)))
			return -1;
		if ((m->dtype != DTYPE_BOOL && m->dtype != t) ||
		    !shape_broadcast(&m->shape, &sc, &r) || !shape_eq(&r, &sc)) {
			diag_error(g->ctx, "%s: attn_mask must be bool or Q's type and broadcast to "
				   "[batch, q_heads, q_seq, kv_seq]", node_loc(g, n));
			return -1;
		}
	}
	y = q.view;
	y.d[3] = dim_const(v.d);
	if (q.flat) {
		y.rank = 3;
		y.d[2] = dim_const(q.h * v.d);
	}
	infer_set(g, n, 0, t, &y);
	return 0;
}

/*
 * The score of query i and key j: (q . k) * scale, softcapped, plus the
 * mask's bias (-inf where a bool mask is false or causality forbids j).
 */
static struct tir *attn_score(struct lower *L, const struct heads *q, const struct heads *k,
			      struct tir **qi, struct tir *j, enum dtype ct)
{
	struct tir_builder *b = L->b;
	const struct value *m = lower_in(L, 3);
	double scale = node_attr_float(L->n, "scale", 1 / sqrt((double)q->d));
	double cap = node_attr_float(L->n, "softcap", 0);
	struct tir *kh = tir_bin(b, BIN_DIV, qi[1], tir_int(b, q->h / k->h));
	struct tir *acc = tir_let(b, "qk", tir_const(b, ct, 0)), *d, *s, *ninf;

	d = tir_loop(b, tir_int(b, q->d));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b,
		tir_cast(b, ct, tir_load(b, L->in[0], heads_offset(L, q, qi[0], qi[1], qi[2], d))),
		tir_cast(b, ct, tir_load(b, L->in[1], heads_offset(L, k, qi[0], kh, j, d))))));
	tir_end(b);
	s = tir_mul(b, acc, tir_const(b, ct, scale));
	if (cap > 0)
		s = tir_mul(b, tir_const(b, ct, cap), tir_call1(b, INTRIN_TANH,
			    tir_bin(b, BIN_DIV, s, tir_const(b, ct, cap))));
	ninf = tir_const(b, ct, -INFINITY);
	if (m) {
		struct shape sc = attn_scores(q, k);
		struct tir *mi[4] = { qi[0], qi[1], qi[2], j };
		struct tir *mv = tir_load(b, L->in[3], lower_bcast_offset(L, &m->shape, &sc, mi));

		s = m->dtype == DTYPE_BOOL ? tir_select(b, mv, s, ninf)
			: tir_add(b, s, tir_cast(b, ct, mv));
	}
	if (node_attr_int(L->n, "is_causal", 0))
		s = tir_select(b, tir_bin(b, BIN_GT, j, qi[2]), ninf, s);
	return tir_let(b, "s", s);
}

/*
 * Per query row (parallel): the row's largest score, then the softmax
 * weights times V summed into Y, then Y divided by the weights' sum. A row
 * that every key is masked from is zero.
 */
int lower_attention(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct heads q, k, v, y;
	enum dtype t = lower_out(L, 0)->dtype, ct = t;
	struct tir *qi[3], *j, *mx, *sum, *p, *d, *kh, *off, *ninf;

	if (attn_inputs(L->g, (struct node *)L->n, &q, &k, &v) < 0)
		return -1;
	if (node_attr(L->n, "softmax_precision"))
		ct = dtype_from_onnx((int)node_attr_int(L->n, "softmax_precision", 1));
	/* Y: Q's batch, heads and rows, V's head size, in Q's form */
	y = v;
	y.view.d[0] = q.b;
	y.view.d[y.flat ? 2 : 1] = dim_const(q.h);
	y.view.d[y.flat ? 1 : 2] = q.s;
	ninf = tir_const(b, ct, -INFINITY);
	qi[0] = tir_loop(b, tir_dim(b, q.b));
	tir_mark_parallel(b);
	qi[1] = tir_loop(b, tir_int(b, q.h));
	tir_mark_parallel(b);
	qi[2] = tir_loop(b, tir_dim(b, q.s));
	tir_mark_parallel(b);
	kh = tir_let(b, "kh", tir_bin(b, BIN_DIV, qi[1], tir_int(b, q.h / k.h)));
	mx = tir_let(b, "mx", ninf);
	j = tir_loop(b, tir_dim(b, k.s));
	tir_assign(b, mx, tir_bin(b, BIN_MAX, mx, attn_score(L, &q, &k, qi, j, ct)));
	tir_end(b);
	d = tir_loop(b, tir_int(b, v.d));
	tir_store(b, L->out[0], heads_offset(L, &y, qi[0], qi[1], qi[2], d), tir_const(b, t, 0));
	tir_end(b);
	sum = tir_let(b, "sum", tir_const(b, ct, 0));
	j = tir_loop(b, tir_dim(b, k.s));
	p = attn_score(L, &q, &k, qi, j, ct);
	p = tir_select(b, tir_bin(b, BIN_EQ, mx, ninf), tir_const(b, ct, 0),
		       tir_call1(b, INTRIN_EXP, tir_bin(b, BIN_SUB, p, mx)));
	p = tir_let(b, "p", p);
	tir_assign(b, sum, tir_add(b, sum, p));
	d = tir_loop(b, tir_int(b, v.d));
	off = tir_let(b, "off", heads_offset(L, &y, qi[0], qi[1], qi[2], d));
	tir_store(b, L->out[0], off, tir_add(b, tir_load(b, L->out[0], off), tir_cast(b, t,
		  tir_mul(b, p, tir_cast(b, ct, tir_load(b, L->in[2], heads_offset(L, &v, qi[0],
								kh, j, d)))))));
	tir_end(b);
	tir_end(b);
	d = tir_loop(b, tir_int(b, v.d));
	off = tir_let(b, "off", heads_offset(L, &y, qi[0], qi[1], qi[2], d));
	tir_store(b, L->out[0], off, tir_select(b, tir_bin(b, BIN_EQ, sum, tir_const(b, ct, 0)),
						tir_const(b, t, 0),
						tir_bin(b, BIN_DIV, tir_load(b, L->out[0], off),
							tir_cast(b, t, sum))));
	tir_end(b);
	lower_end_loops(L, 3);
	return 0;
}
