/*
 * ops_loss.c - the NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss
 * pair: direct loop nests, written to be obviously right rather than fast.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ---- */

enum loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN };

/* The reduction attribute; -1 after a diagnostic. */
static int loss_reduction(struct graph *g, const struct node *n)
{
	const char *r = node_attr_str(n, "reduction", "mean");

	if (!strcmp(r, "none"))
		return LOSS_NONE;
	if (!strcmp(r, "sum"))
		return LOSS_SUM;
	if (!strcmp(r, "mean"))
		return LOSS_MEAN;
	diag_error(g->ctx, "%s: unknown reduction '%s' (expected none, sum or mean)",
		   node_loc(g, n), r);
	return -1;
}

/*
 * Input [N, C, D...], target [N, D...] of int32/int64, weight a C-vector;
 * the loss has the target's shape for reduction none, else it is a scalar.
 * SoftmaxCrossEntropyLoss's optional log_prob has the input's shape.
 */
int infer_loss(struct graph *g, struct node *n)
{
	bool sce = n->op == OP_SOFTMAXCROSSENTROPYLOSS;
	struct value *x, *t;
	struct shape s = { 0 };
	int red;

	if (infer_arity(g, n, 2, 3, sce ? 2 : 1) < 0 || !(x = infer_float_input(g, n, 0)) ||
	    !(t = infer_input(g, n, 1)) || (red = loss_reduction(g, n)) < 0)
		return -1;
	if (x->shape.rank < 2) {
		diag_error(g->ctx, "%s: input must have rank 2 or more", node_loc(g, n));
		return -1;
	}
	if (t->dtype != DTYPE_I32 && t->dtype != DTYPE_I64) {
		diag_error(g->ctx, "%s: target has type %s (expected int32 or int64)",
			   node_loc(g, n), dtype_name(t->dtype));
		return -1;
	}
	/* target is the input's shape without the class axis 1 */
	for (int k = 0; k < x->shape.rank; k++)
		if (k != 1)
			s.d[s.rank++] = x->shape.d[k];
	if (!shape_eq(&s, &t->shape)) {
		struct strbuf a = STRBUF_INIT, c = STRBUF_INIT;

		shape_print(g, &x->shape, &a);
		shape_print(g, &t->shape, &c);
		diag_error(g->ctx, "%s: target shape %s does not match input shape %s",
			   node_loc(g, n), sb_str(&c), sb_str(&a));
		sb_release(&a);
		sb_release(&c);
		return -1;
	}
	if (node_in(g, n, 2) && infer_check_vec(g, n, 2, x->dtype, x->shape.d[1]) < 0)
		return -1;
	if (red != LOSS_NONE)
		s.rank = 0;
	infer_set(g, n, 0, x->dtype, &s);
	if (n->n_out > 1)
		infer_set(g, n, 1, x->dtype, &x->shape);
	return 0;
}

/*
 * Input viewed as [N, C, D], target as [N, D]. Per element: l = -w[t] *
 * x[n, t, d] (x replaced by log-softmax over C for SCE), with l = w = 0
 * where t == ignore_index; a target outside [0, C) gives NaN instead of
 * reading out of bounds. mean divides the sum of l by the sum of w.
 */
int lower_loss(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	const struct node *n = L->n;
	bool sce = n->op == OP_SOFTMAXCROSSENTROPYLOSS, has_ii = node_attr(n, "ignore_index");
	int red = loss_reduction(L->g, n);
	enum dtype t = x->dtype;
	struct tir *C = tir_dim(b, x->shape.d[1]), *D = tir_int(b, 1), *zero = tir_const(b, t, 0);
	struct tir *sum = NULL, *wsum = NULL, *ni, *di, *tg, *base, *ok, *tc, *v, *w, *l, *c;
	struct tir *lse = NULL;

	if (red < 0)
		return -1;
	for (int k = 2; k < x->shape.rank; k++)
		D = tir_mul(b, D, tir_dim(b, x->shape.d[k]));
	if (red != LOSS_NONE) {
		sum = tir_let(b, "sum", zero);
		wsum = tir_let(b, "wsum", zero);
	}
	ni = tir_loop(b, tir_dim(b, x->shape.d[0]));
	if (red == LOSS_NONE)
		tir_mark_parallel(b);
	di = tir_loop(b, D);
	if (red == LOSS_NONE)
		tir_mark_parallel(b);
	tg = tir_let(b, "tg", tir_cast(b, DTYPE_I64, tir_load(b, L->in[1],
						tir_add(b, tir_mul(b, ni, D), di))));
	base = tir_let(b, "base", tir_add(b, tir_mul(b, tir_mul(b, ni, C), D), di));
#define AT(cc) tir_add(b, base, tir_mul(b, cc, D))
	if (sce) {
		struct tir *mx = tir_let(b, "mx", tir_const(b, t, -INFINITY)), *se;

		c = tir_loop(b, C);
		tir_assign(b, mx, tir_bin(b, BIN_MAX, mx, tir_load(b, L->in[0], AT(c))));
		tir_end(b);
		se = tir_let(b, "se", zero);
		c = tir_loop(b, C);
		tir_assign(b, se, tir_add(b, se, tir_call1(b, INTRIN_EXP, tir_bin(b, BIN_SUB,
						tir_load(b, L->in[0], AT(c)), mx))));
		tir_end(b);
		lse = tir_let(b, "lse", tir_add(b, mx, tir_call1(b, INTRIN_LOG, se)));
		if (n->n_out > 1) {
			c = tir_loop(b, C);
			tir_store(b, L->out[1], AT(c), tir_bin(b, BIN_SUB,
							       tir_load(b, L->in[0], AT(c)), lse));
			tir_end(b);
		}
	}
	ok = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, tg, tir_int(b, 0)), tir_bin(b, BIN_LT, tg, C));
	tc = tir_let(b, "tc", tir_select(b, ok, tg, tir_int(b, 0)));
	v = tir_load(b, L->in[0], AT(tc));
	if (sce)
		v = tir_bin(b, BIN_SUB, v, lse);
	w = L->in[2] ? tir_load(b, L->in[2], tc) : tir_const(b, t, 1);
	l = tir_select(b, ok, tir_un(b, UN_NEG, L->in[2] ? tir_mul(b, v, w) : v),
		       tir_const(b, t, NAN));
	if (has_ii) {
		struct tir *ign = tir_let(b, "ign", tir_bin(b, BIN_EQ, tg, tir_int(b,
							node_attr_int(n, "ignore_index", 0))));

		w = tir_select(b, ign, zero, w);
		l = tir_select(b, ign, zero, l);
	}
#undef AT
	if (red == LOSS_NONE) {
		tir_store(b, L->out[0], tir_add(b, tir_mul(b, ni, D), di), l);
	} else {
		tir_assign(b, sum, tir_add(b, sum, l));
		tir_assign(b, wsum, tir_add(b, wsum, w));
	}
	tir_end(b);
	tir_end(b);
	if (red != LOSS_NONE)
		tir_store(b, L->out[0], tir_int(b, 0),
			  red == LOSS_SUM ? sum : tir_bin(b, BIN_DIV, sum, wsum));
	return 0;
}
