/*
 * ops_attention.c - the transformer ops of opset 23: RotaryEmbedding and
 * Attention (the key/value cache in and out, qk_matmul_output, masks,
 * causality, grouped heads, softcap), with Attention-24's nonpad_kv_seqlen
 * and Attention-25's sliding window.
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

/*
 * Y is accumulated per query row in this many locals at most (one per
 * column of V's head): a wider head takes more passes over the keys, each
 * recomputing the scores, so that every element of Y is summed in the
 * compute type and rounded once, without a scratch buffer (the constant
 * folder has none to give).
 */
#define ATTN_ACC 128

/*
 * What the infer and lower functions of one Attention node both decide:
 * the inputs as heads, the cache, the mask's geometry and the attributes.
 */
struct attn {
	struct heads q, k, v;		/* Q, K and V */
	struct heads pk, pv;		/* past_key and past_value (4-D), when past */
	bool past;
	struct dim p;			/* past length: 0 without the cache */
	struct dim total;		/* p + K's sequence: the keys a query scores */
	const struct value *mask;	/* attn_mask, or NULL */
	struct dim mlen;		/* the mask's last dim */
	bool mpad;			/* a mask shorter than total: later keys are masked */
	bool causal;
	bool nonpad;			/* nonpad_kv_seqlen (input 6) is given */
	int64_t left, right;		/* the window's sides (-1: unbounded) */
	int mode;			/* qk_matmul_output_mode */
	double scale, cap;		/* scale, softcap (0: none) */
	enum dtype t, ct;		/* Y's type; the type scores and softmax run in */
};

/*
 * a + b as a dim, the way Concat sums its inputs' axis (a derived symbol
 * such as (past+1) when one is symbolic); false when it cannot be written.
 */
static bool attn_dim_add(struct graph *g, struct dim a, struct dim b, struct dim *out)
{
	if (dim_is_const(a) && dim_is_const(b)) {
		*out = dim_const(a.c + b.c);
		return true;
	}
	if (b.c == 0) {
		*out = a;
		return true;
	}
	if (a.c == 0) {
		*out = b;
		return true;
	}
	return graph_sym_add(g, a, b, out);
}

/* past_key and past_value: both or neither, 4-D, like K and V but for the sequence. */
static int attn_past(struct graph *g, struct node *n, struct attn *a)
{
	bool pk = node_in(g, n, 4) != NULL, pv = node_in(g, n, 5) != NULL;

	a->past = pk && pv;
	a->p = dim_const(0);
	if (pk != pv) {
		diag_error(g->ctx, "%s: past_key and past_value must be given together",
			   node_loc(g, n));
		return -1;
	}
	if (!a->past)
		return 0;
	if (heads_of(g, n, 4, 0, &a->pk) < 0 || heads_of(g, n, 5, 0, &a->pv) < 0)
		return -1;
	if (a->pk.flat || a->pv.flat || !dim_eq(a->pk.b, a->q.b) || a->pk.h != a->k.h ||
	    a->pk.d != a->k.d || a->pv.h != a->k.h || a->pv.d != a->v.d ||
	    !dim_eq(a->pk.s, a->pv.s)) {
		diag_error(g->ctx, "%s: past_key and past_value must be [batch, kv_heads, "
			   "past_seq, head_size] with K's and V's batch, heads and head sizes",
			   node_loc(g, n));
		return -1;
	}
	if (node_in(g, n, 4)->dtype != node_in(g, n, 1)->dtype ||
	    node_in(g, n, 5)->dtype != node_in(g, n, 2)->dtype) {
		diag_error(g->ctx, "%s: past_key and past_value must have K's and V's types",
			   node_loc(g, n));
		return -1;
	}
	a->p = a->pk.s;
	return 0;
}

/*
 * attn_mask: bool (false masks a key) or numeric (added to the scores),
 * broadcast to [batch, q_heads, q_seq, total]. Its last dim may be 1, total
 * or shorter than total: the keys it does not reach are masked, as ONNX's
 * reference pads it.
 */
static int attn_mask(struct graph *g, struct node *n, struct attn *a)
{
	struct value *m;
	struct shape want = { 4, { a->q.b, dim_const(a->q.h), a->q.s, a->total } }, r;

	a->mask = NULL;
	if (!node_in(g, n, 3))
		return 0;
	if (!(m = infer_input(g, n, 3)))
		return -1;
	if (m->dtype == DTYPE_STR || m->shape.rank < 1 || m->shape.rank > 4) {
		diag_error(g->ctx, "%s: attn_mask must be a bool or numeric tensor of rank 1 to 4",
			   node_loc(g, n));
		return -1;
	}
	a->mask = m;
	a->mlen = m->shape.d[m->shape.rank - 1];
	a->mpad = !dim_eq(a->mlen, a->total) && !(dim_is_const(a->mlen) && a->mlen.c == 1);
	if (a->mpad)
		want.d[3] = a->mlen;
	if ((a->mpad && dim_is_const(a->mlen) && dim_is_const(a->total) &&
	     a->mlen.c > a->total.c) ||
	    !shape_broadcast(&m->shape, &want, &r) || !shape_eq(&r, &want)) {
		diag_error(g->ctx, "%s: attn_mask must broadcast to [batch, q_heads, q_seq, "
			   "past_seq + kv_seq]", node_loc(g, n));
		return -1;
	}
	return 0;
}

/*
 * nonpad_kv_seqlen (Attention-24): int64 [batch], the valid keys of each
 * batch entry of a cache kept outside the op, so never with past_key.
 */
static int attn_nonpad(struct graph *g, struct node *n, struct attn *a)
{
	struct value *v;

	a->nonpad = node_in(g, n, 6) != NULL;
	if (!a->nonpad)
		return 0;
	if (!(v = infer_input(g, n, 6)))
		return -1;
	if (a->past) {
		diag_error(g->ctx, "%s: nonpad_kv_seqlen cannot be given with past_key and "
			   "past_value", node_loc(g, n));
		return -1;
	}
	if (v->dtype != DTYPE_I64 || v->shape.rank != 1 || !dim_eq(v->shape.d[0], a->q.b)) {
		diag_error(g->ctx, "%s: nonpad_kv_seqlen must be int64 [batch]", node_loc(g, n));
		return -1;
	}
	return 0;
}

/* left_window_size and right_window_size (Attention-25): -1 or at least 0. */
static int attn_window(struct graph *g, struct node *n, struct attn *a)
{
	a->left = node_attr_int(n, "left_window_size", -1);
	a->right = node_attr_int(n, "right_window_size", -1);
	if (a->left < -1 || a->right < -1) {
		diag_error(g->ctx, "%s: attr '%s' is %lld (expected -1 or at least 0)",
			   node_loc(g, n), a->left < -1 ? "left_window_size" : "right_window_size",
			   (long long)(a->left < -1 ? a->left : a->right));
		return -1;
	}
	return 0;
}

/* Reads and checks everything of Attention node n into a; -1 after a diagnostic. */
static int attn_plan(struct graph *g, struct node *n, struct attn *a)
{
	int64_t hq = node_attr_int(n, "q_num_heads", 0), hkv = node_attr_int(n, "kv_num_heads", 0);
	enum dtype sp = DTYPE_UNDEF;

	memset(a, 0, sizeof(*a));
	/* nonpad_kv_seqlen, input 6, came with Attention-24 */
	if (infer_arity(g, n, 3, g->opset >= 24 ? 7 : 6, 4) < 0 ||
	    heads_of(g, n, 0, hq, &a->q) < 0 || heads_of(g, n, 1, hkv, &a->k) < 0 ||
	    heads_of(g, n, 2, hkv, &a->v) < 0)
		return -1;
	if (a->q.flat != a->k.flat || a->k.flat != a->v.flat || a->k.h != a->v.h ||
	    a->q.d != a->k.d || !dim_eq(a->q.b, a->k.b) || !dim_eq(a->k.b, a->v.b) ||
	    !dim_eq(a->k.s, a->v.s) || a->k.h == 0 || a->q.h % a->k.h) {
		diag_error(g->ctx, "%s: Q, K and V do not agree in form, batch, heads, sequence or "
			   "head size", node_loc(g, n));
		return -1;
	}
	a->t = node_in(g, n, 0)->dtype;
	if (node_in(g, n, 1)->dtype != a->t) {
		diag_error(g->ctx, "%s: Q and K must have one type", node_loc(g, n));
		return -1;
	}
	if (attn_past(g, n, a) < 0 || attn_nonpad(g, n, a) < 0 || attn_window(g, n, a) < 0)
		return -1;
	if (!attn_dim_add(g, a->p, a->k.s, &a->total)) {
		diag_error(g->ctx, "%s: the past and new sequence lengths cannot be added",
			   node_loc(g, n));
		return -1;
	}
	if (attn_mask(g, n, a) < 0)
		return -1;
	a->mode = (int)node_attr_int(n, "qk_matmul_output_mode", 0);
	if (a->mode < 0 || a->mode > 3) {
		diag_error(g->ctx, "%s: qk_matmul_output_mode %d is not 0, 1, 2 or 3",
			   node_loc(g, n), a->mode);
		return -1;
	}
	if (node_attr(n, "softmax_precision")) {
		sp = dtype_from_onnx((int)node_attr_int(n, "softmax_precision", 1));
		if (!dtype_is_float(sp)) {
			diag_error(g->ctx, "%s: softmax_precision %lld is not a float type",
				   node_loc(g, n),
				   (long long)node_attr_int(n, "softmax_precision", 1));
			return -1;
		}
	}
	/*
	 * float32 at least: the 16-bit types are computed in float and rounded
	 * once, at the outputs (a softmax_precision below float changes nothing)
	 */
	a->ct = a->t == DTYPE_F64 || sp == DTYPE_F64 ? DTYPE_F64 : DTYPE_F32;
	a->scale = node_attr_float(n, "scale", 1 / sqrt((double)a->q.d));
	a->cap = node_attr_float(n, "softcap", 0);
	a->causal = node_attr_int(n, "is_causal", 0) != 0;
	return 0;
}

/*
 * Y: [B, Hq, Sq, Dv], or [B, Sq, Hq * Dv] for 3-D inputs; present_key and
 * present_value: [B, Hkv, P + Skv, D or Dv], the cache with K and V
 * appended; qk_matmul_output: the scores [B, Hq, Sq, P + Skv] at the step
 * qk_matmul_output_mode names.
 */
int infer_attention(struct graph *g, struct node *n)
{
	struct attn a;
	struct shape y, pk, pv, qk;

	if (attn_plan(g, n, &a) < 0)
		return -1;
	if (a.mpad && !(dim_is_const(a.mlen) && dim_is_const(a.total)))
		graph_add_check(g, n, a.mlen, a.total);
	y = a.q.view;
	y.d[3] = dim_const(a.v.d);
	if (a.q.flat) {
		y.rank = 3;
		y.d[2] = dim_const(a.q.h * a.v.d);
	}
	infer_set(g, n, 0, a.t, &y);
	pk = (struct shape){ 4, { a.q.b, dim_const(a.k.h), a.total, dim_const(a.k.d) } };
	pv = (struct shape){ 4, { a.q.b, dim_const(a.k.h), a.total, dim_const(a.v.d) } };
	qk = (struct shape){ 4, { a.q.b, dim_const(a.q.h), a.q.s, a.total } };
	if (n->n_out > 1)
		infer_set(g, n, 1, a.t, &pk);
	if (n->n_out > 2)
		infer_set(g, n, 2, node_in(g, n, 2)->dtype, &pv);
	if (n->n_out > 3)
		infer_set(g, n, 3, a.t, &qk);
	return 0;
}

/*
 * The keys and values of one stretch of the total sequence: the cache
 * (keys [0, P)) or the new K and V (keys [P, P + Skv)).
 */
struct attn_src {
	struct tir_buf *k, *v;
	const struct heads *kh, *vh;
	struct tir *len;	/* keys in the stretch */
	struct tir *off;	/* the first one's index in the total sequence */
};

/* The stretches of a, in order: the cache, if any, then K and V. Returns their count. */
static int attn_srcs(struct lower *L, const struct attn *a, struct attn_src *s)
{
	int n = 0;

	if (a->past)
		s[n++] = (struct attn_src){ L->in[4], L->in[5], &a->pk, &a->pv,
					    tir_dim(L->b, a->p), tir_int(L->b, 0) };
	s[n++] = (struct attn_src){ L->in[1], L->in[2], &a->k, &a->v, tir_dim(L->b, a->k.s),
				    tir_dim(L->b, a->p) };
	return n;
}

/*
 * Offset of (i0, i1, i2, i3) in a row-major [d0, d1, d2, d3], the dims as
 * expressions (the total sequence P + Skv is no dim of the graph's).
 */
static struct tir *attn_offset4(struct tir_builder *b, struct tir *d1, struct tir *d2,
				struct tir *d3, struct tir *i0, struct tir *i1, struct tir *i2,
				struct tir *i3)
{
	struct tir *off = tir_add(b, tir_mul(b, i0, d1), i1);

	off = tir_add(b, tir_mul(b, off, d2), i2);
	return tir_add(b, tir_mul(b, off, d3), i3);
}

/*
 * Output o (present_key or present_value, [B, Hkv, P + Skv, d]): each
 * stretch copied to its place, the total length te.
 */
static void attn_present(struct lower *L, const struct attn *a, int o, struct tir *te)
{
	struct tir_builder *b = L->b;
	struct attn_src src[2];
	int ns = attn_srcs(L, a, src);

	for (int s = 0; s < ns; s++) {
		const struct heads *h = o == 1 ? src[s].kh : src[s].vh;
		struct tir *bi, *hi, *j, *d, *x;

		bi = tir_loop(b, tir_dim(b, a->q.b));
		tir_mark_parallel(b);
		hi = tir_loop(b, tir_int(b, a->k.h));
		tir_mark_parallel(b);
		j = tir_loop(b, src[s].len);
		tir_mark_parallel(b);
		d = tir_loop(b, tir_int(b, h->d));
		x = tir_load(b, o == 1 ? src[s].k : src[s].v, heads_offset(L, h, bi, hi, j, d));
		tir_store(b, L->out[o], attn_offset4(b, tir_int(b, a->k.h), te, tir_int(b, h->d),
						     bi, hi, tir_add(b, j, src[s].off), d), x);
		lower_end_loops(L, 4);
	}
}

/*
 * Score x of query qi = (b, h, i) and key jt with the bounds on the keys
 * applied (-inf outside them): causality, the window and the padding.
 * Query i sits at position offset + i of the total sequence, the offset
 * being the past length P, or with nonpad_kv_seqlen n[b] - Sq (the keys
 * that precede the queries in a cache kept outside the op, which may be
 * negative: leading rows that see no key).
 */
static struct tir *attn_frontier(struct lower *L, const struct attn *a, struct tir **qi,
				 struct tir *jt, struct tir *x)
{
	struct tir_builder *b = L->b;
	struct tir *ninf = tir_const(b, a->ct, -INFINITY), *np = NULL, *pos, *diff;

	if (a->nonpad) {
		np = tir_let(b, "np", tir_load(b, L->in[6], qi[0]));
		pos = tir_add(b, qi[2], tir_bin(b, BIN_SUB, np, tir_dim(b, a->q.s)));
	} else {
		pos = tir_add(b, qi[2], tir_dim(b, a->p));
	}
	diff = tir_bin(b, BIN_SUB, pos, jt);	/* how far key jt lies before the query */
	if (a->causal)
		x = tir_select(b, tir_bin(b, BIN_GT, jt, pos), ninf, x);
	if (a->left >= 0)
		x = tir_select(b, tir_bin(b, BIN_GT, diff, tir_int(b, a->left)), ninf, x);
	if (a->right >= 0)
		x = tir_select(b, tir_bin(b, BIN_GT, tir_un(b, UN_NEG, diff),
					  tir_int(b, a->right)), ninf, x);
	if (np)
		x = tir_select(b, tir_bin(b, BIN_GE, jt, np), ninf, x);
	return x;
}

/*
 * The score of query qi = (b, h, i) and key j of stretch src (jt in the
 * total sequence), kv head kh: q . k times scale, softcapped, then the
 * mask's bias added and -inf where a bool mask or causality forbids the
 * key. *raw (when not NULL) gets the scaled product before the softcap,
 * *capped the softcapped one.
 */
static struct tir *attn_score(struct lower *L, const struct attn *a, struct tir **qi,
			      struct tir *kh, const struct attn_src *src, struct tir *j,
			      struct tir *jt, struct tir **raw, struct tir **capped)
{
	struct tir_builder *b = L->b;
	enum dtype ct = a->ct;
	struct tir *acc = tir_let(b, "qk", tir_const(b, ct, 0)), *d, *x, *qv, *kv, *ninf;

	d = tir_loop(b, tir_int(b, a->q.d));
	qv = tir_load(b, L->in[0], heads_offset(L, &a->q, qi[0], qi[1], qi[2], d));
	kv = tir_load(b, src->k, heads_offset(L, src->kh, qi[0], kh, j, d));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_cast(b, ct, qv), tir_cast(b, ct, kv))));
	tir_end(b);
	x = tir_let(b, "x", tir_mul(b, acc, tir_const(b, ct, a->scale)));
	if (raw)
		*raw = x;
	if (a->cap > 0)
		x = tir_let(b, "xc", tir_mul(b, tir_const(b, ct, a->cap), tir_call1(b, INTRIN_TANH,
				tir_bin(b, BIN_DIV, x, tir_const(b, ct, a->cap)))));
	if (capped)
		*capped = x;
	ninf = tir_const(b, ct, -INFINITY);
	if (a->mask) {
		struct shape sc = { 4, { a->q.b, dim_const(a->q.h), a->q.s, a->total } };
		struct tir *mi[4] = { qi[0], qi[1], qi[2], jt }, *mv;

		/* a key past a short mask reads its last column, then masks the key */
		if (a->mpad)
			mi[3] = tir_bin(b, BIN_MIN, jt, tir_add(b, tir_dim(b, a->mlen),
								  tir_int(b, -1)));
		mv = tir_load(b, L->in[3], lower_bcast_offset(L, &a->mask->shape, &sc, mi));
		mv = a->mask->dtype == DTYPE_BOOL ? tir_select(b, mv, x, ninf)
			: tir_add(b, x, tir_cast(b, ct, mv));
		if (a->mpad)
			mv = tir_select(b, tir_bin(b, BIN_LT, jt, tir_dim(b, a->mlen)), mv, ninf);
		x = mv;
	}
	return tir_let(b, "s", attn_frontier(L, a, qi, jt, x));
}

/*
 * Per query row (parallel): the row's largest score (storing the scores
 * as qk_matmul_output modes 0 to 2 ask), then per group of at most
 * ATTN_ACC columns of Y the softmax weights times V summed in locals (the
 * first group sums the weights too), each column divided by the sum and
 * rounded once; mode 3 stores the weights last. A row that every key is
 * masked from is zero, in Y and in mode 3's weights.
 */
static void attn_rows(struct lower *L, const struct attn *a, struct tir *te)
{
	struct tir_builder *b = L->b;
	enum dtype t = a->t, ct = a->ct;
	struct heads y;
	struct attn_src src[2];
	int ns = attn_srcs(L, a, src);
	struct tir *qi[3], *kh, *mx, *sum, *j, *jt, *s, *raw, *capped, *p, *acc[ATTN_ACC];
	struct tir_buf *qk = L->n->n_out > 3 ? L->out[3] : NULL;

	/* Y: Q's batch, heads and rows, V's head size, in Q's form */
	y = a->v;
	y.view.d[0] = a->q.b;
	y.view.d[y.flat ? 2 : 1] = dim_const(a->q.h);
	y.view.d[y.flat ? 1 : 2] = a->q.s;
	qi[0] = tir_loop(b, tir_dim(b, a->q.b));
	tir_mark_parallel(b);
	qi[1] = tir_loop(b, tir_int(b, a->q.h));
	tir_mark_parallel(b);
	qi[2] = tir_loop(b, tir_dim(b, a->q.s));
	tir_mark_parallel(b);
	kh = tir_let(b, "kh", tir_bin(b, BIN_DIV, qi[1], tir_int(b, a->q.h / a->k.h)));
	mx = tir_let(b, "mx", tir_const(b, ct, -INFINITY));
	for (int k = 0; k < ns; k++) {
		j = tir_loop(b, src[k].len);
		jt = tir_let(b, "jt", tir_add(b, j, src[k].off));
		s = attn_score(L, a, qi, kh, &src[k], j, jt, &raw, &capped);
		if (qk && a->mode < 3)
			tir_store(b, qk, attn_offset4(b, tir_int(b, a->q.h), tir_dim(b, a->q.s), te,
						      qi[0], qi[1], qi[2], jt),
				  tir_cast(b, t, a->mode == 0 ? raw : a->mode == 1 ? capped : s));
		tir_assign(b, mx, tir_bin(b, BIN_MAX, mx, s));
		tir_end(b);
	}
	sum = tir_let(b, "sum", tir_const(b, ct, 0));
	for (int64_t d0 = 0; d0 < a->v.d; d0 += ATTN_ACC) {
		int na = a->v.d - d0 < ATTN_ACC ? (int)(a->v.d - d0) : ATTN_ACC;

		for (int c = 0; c < na; c++)
			acc[c] = tir_let(b, "acc", tir_const(b, ct, 0));
		for (int k = 0; k < ns; k++) {
			j = tir_loop(b, src[k].len);
			jt = tir_let(b, "jt", tir_add(b, j, src[k].off));
			s = attn_score(L, a, qi, kh, &src[k], j, jt, NULL, NULL);
			p = tir_select(b, tir_bin(b, BIN_EQ, mx, tir_const(b, ct, -INFINITY)),
				       tir_const(b, ct, 0),
				       tir_call1(b, INTRIN_EXP, tir_bin(b, BIN_SUB, s, mx)));
			p = tir_let(b, "p", p);
			if (d0 == 0)
				tir_assign(b, sum, tir_add(b, sum, p));
			for (int c = 0; c < na; c++) {
				struct tir *off = heads_offset(L, src[k].vh, qi[0], kh, j,
							       tir_int(b, d0 + c));
				struct tir *vv = tir_cast(b, ct, tir_load(b, src[k].v, off));

				tir_assign(b, acc[c], tir_add(b, acc[c], tir_mul(b, p, vv)));
			}
			tir_end(b);
		}
		for (int c = 0; c < na; c++)
			tir_store(b, L->out[0], heads_offset(L, &y, qi[0], qi[1], qi[2],
							     tir_int(b, d0 + c)),
				  tir_cast(b, t, tir_select(b, tir_bin(b, BIN_EQ, sum,
								       tir_const(b, ct, 0)),
							    tir_const(b, ct, 0),
							    tir_bin(b, BIN_DIV, acc[c], sum))));
	}
	for (int k = 0; qk && a->mode == 3 && k < ns; k++) {
		j = tir_loop(b, src[k].len);
		jt = tir_let(b, "jt", tir_add(b, j, src[k].off));
		s = attn_score(L, a, qi, kh, &src[k], j, jt, NULL, NULL);
		p = tir_call1(b, INTRIN_EXP, tir_bin(b, BIN_SUB, s, mx));
		p = tir_select(b, tir_bin(b, BIN_EQ, sum, tir_const(b, ct, 0)), tir_const(b, ct, 0),
			       tir_bin(b, BIN_DIV, p, sum));
		tir_store(b, qk, attn_offset4(b, tir_int(b, a->q.h), tir_dim(b, a->q.s), te, qi[0],
					      qi[1], qi[2], jt),
			  tir_cast(b, t, p));
		tir_end(b);
	}
	lower_end_loops(L, 3);
}

/*
 * The present outputs first (a copy of the cache and of K and V), then
 * the rows. The scores read the cache and K (V) in two loops, one per
 * stretch, so that no load chooses between buffers.
 */
int lower_attention(struct lower *L)
{
	struct attn a;
	struct tir *te;

	if (attn_plan(L->g, (struct node *)L->n, &a) < 0)
		return -1;
	te = tir_add(L->b, tir_dim(L->b, a.p), tir_dim(L->b, a.k.s));
	if (L->n->n_out > 1)
		attn_present(L, &a, 1, te);
	if (L->n->n_out > 2)
		attn_present(L, &a, 2, te);
	attn_rows(L, &a, te);
	return 0;
}

/* ---- attention.rows: the c target's strategy (backends/c) ---- */

/* V's head size that rt_attn_rows takes at most (RT_ATTN_MAX_DV). */
#define ATTN_ROWS_MAX_DV 512

/*
 * Whether rt_attn_rows (backends/c/rt_crows.h) computes node L->n: float32
 * throughout, a float32 or bool attn_mask that reaches every key (or none),
 * no softcap, qk_matmul_output, nonpad_kv_seqlen nor sliding window, Q's
 * and K's head sizes equal, and every input a buffer of its own (no
 * prologue fused in).
 */
bool attention_rows_fits(struct lower *L)
{
	struct attn a;

	if (attn_plan(L->g, (struct node *)L->n, &a) < 0)
		return false;
	for (int i = 0; i < L->n->n_in; i++)
		if (L->in[i] && L->in[i]->index < 0)
			return false;
	return a.t == DTYPE_F32 && a.ct == DTYPE_F32 && a.cap <= 0 &&
	       (!a.mask || ((a.mask->dtype == DTYPE_F32 || a.mask->dtype == DTYPE_BOOL) &&
			    !a.mpad)) &&
	       !a.nonpad && a.left < 0 && a.right < 0 && a.q.flat == a.v.flat &&
	       L->n->n_out <= 3 && a.q.d == a.k.d && a.v.d <= ATTN_ROWS_MAX_DV &&
	       a.q.h % a.k.h == 0 && (!a.past || (a.pk.d == a.k.d && a.pv.d == a.v.d));
}

/*
 * rt_attn_rows's mask arguments: the mask, its kind (rt_crows.h's
 * RT_ATTN_MASK_ADD for float32, RT_ATTN_MASK_BOOL, 0 without one) and its
 * element strides along [batch, q_heads, q_seq, total] as it broadcasts
 * there (right-aligned; 0 along an axis it lacks or has as 1).
 */
static void attn_mask_args(struct lower *L, const struct attn *a, struct tir **args)
{
	struct tir_builder *b = L->b;
	const struct shape *ms = a->mask ? &a->mask->shape : NULL;
	struct tir *stride = tir_int(b, 1);

	args[0] = tir_addr(b, L->in[a->mask ? 3 : 0], tir_int(b, 0));
	args[1] = tir_int(b, !a->mask ? 0 : a->mask->dtype == DTYPE_BOOL ? 2 : 1);
	for (int k = 3; k >= 0; k--) {
		int mk = ms ? ms->rank - 4 + k : -1;
		bool one = mk < 0 || (dim_is_const(ms->d[mk]) && ms->d[mk].c == 1);

		args[2 + k] = one ? tir_int(b, 0) : stride;
		if (mk >= 0)
			stride = tir_mul(b, stride, tir_dim(b, ms->d[mk]));
	}
}

/*
 * One call of rt_attn_rows, which writes the present outputs (the cache
 * then the new rows, or only the new rows where the caller keeps the
 * cache in place: collagec_bind_cache, core/emit/plan.c's caches), then
 * every query row: the scores, softmax and weighted sum
 * of V with vector dot products, each score computed once (the loop form
 * computes it once per pass over the keys). A float32 or bool attn_mask
 * that reaches every key is read in place.
 */
int lower_attention_rows(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct attn a;
	struct tir *args[24];
	int64_t form;

	if (attn_plan(L->g, (struct node *)L->n, &a) < 0)
		return -1;
	/* the rt_crows.h RT_ATTN_* bits */
	form = (a.q.flat ? 1 : 0) | (a.k.flat ? 2 : 0) | (a.v.flat ? 4 : 0) | (a.causal ? 8 : 0) |
	       (L->n->n_out > 1 && L->out[1] ? 16 : 0) | (L->n->n_out > 2 && L->out[2] ? 32 : 0);
	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = tir_addr(b, L->in[a.past ? 4 : 1], tir_int(b, 0));
	args[2] = tir_addr(b, L->in[a.past ? 5 : 2], tir_int(b, 0));
	args[3] = tir_addr(b, L->in[1], tir_int(b, 0));
	args[4] = tir_addr(b, L->in[2], tir_int(b, 0));
	args[5] = tir_addr(b, L->out[0], tir_int(b, 0));
	/* present_key and present_value, or Y again (not written) */
	args[6] = tir_addr(b, L->out[form & 16 ? 1 : 0], tir_int(b, 0));
	args[7] = tir_addr(b, L->out[form & 32 ? 2 : 0], tir_int(b, 0));
	args[8] = tir_dim(b, a.q.b);
	args[9] = tir_int(b, a.q.h);
	args[10] = tir_int(b, a.k.h);
	args[11] = tir_dim(b, a.q.s);
	args[12] = tir_dim(b, a.p);
	args[13] = tir_dim(b, a.k.s);
	args[14] = tir_int(b, a.q.d);
	args[15] = tir_int(b, a.v.d);
	args[16] = tir_int(b, form);
	args[17] = tir_flt(b, DTYPE_F32, a.scale);
	attn_mask_args(L, &a, args + 18);
	tir_extern(b, "rt_attn_rows", args, 24);
	return 0;
}
