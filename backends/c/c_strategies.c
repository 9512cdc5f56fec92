/*
 * c_strategies.c - the c target's op strategies (core/target/strategy.h):
 *
 *   MatMul  M >= 16 && K > 16  matmul.blocked   column blocks of B reused
 *                                               across every row (large batch)
 *           K > 16             matmul.ikj       rows streamed: a[i,k] * b[k,:]
 *           always             matmul.ijk       one dot product per output
 *   Conv    depthwise          conv.depthwise   one input channel per output
 *           1x1, stride 1, no pad, group 1
 *                              conv.1x1         a matmul over the pixels
 *           always             conv.direct      the generic loop nest
 *
 * With a symbolic M (a symbolic batch) MatMul gets all three as variants and
 * a run-time dispatcher; Conv's conditions are static.
 */
#include "../backends.h"

#include <string.h>

#include "../../core/target/strategy.h"

#define KBLOCK 64	/* rows of B in a block */
#define NBLOCK 256	/* columns of B in a block: 64 x 256 floats = 64 KiB */

static struct tir *matmul_m(struct lower *L)
{
	struct matmul_geom mg;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	return tir_dim(L->b, mg.M);
}

static struct tir *matmul_k(struct lower *L)
{
	struct matmul_geom mg;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	return tir_dim(L->b, mg.K);
}

static struct tir *cond_k_gt_16(struct lower *L)
{
	return tir_bin(L->b, BIN_GT, matmul_k(L), tir_int(L->b, 16));
}

static struct tir *cond_large(struct lower *L)
{
	return tir_bin(L->b, BIN_LAND, tir_bin(L->b, BIN_GE, matmul_m(L), tir_int(L->b, 16)),
		       cond_k_gt_16(L));
}

/* Opens the parallel batch loops of a MatMul; returns the loop count. */
static int batch_loops(struct lower *L, const struct matmul_geom *mg, struct tir **bidx)
{
	lower_loops_parallel(L, &mg->batch, bidx);
	return mg->batch.rank;
}

/* y[i, :] += a[i, k] * b[k, :] with a row of the output zeroed first. */
static int lower_matmul_ikj(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct tir *bidx[MAX_RANK], *ba, *bb, *by, *i, *j, *k, *a, *N, *K;
	enum dtype t = lower_in(L, 0)->dtype;
	int nb;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	N = tir_dim(b, mg.N);
	K = tir_dim(b, mg.K);
	nb = batch_loops(L, &mg, bidx);
	i = tir_loop(b, tir_dim(b, mg.M));
	tir_mark_parallel(b);
	matmul_bases(L, &mg, bidx, &ba, &bb);
	by = tir_let(b, "yrow", tir_mul(b, tir_add(b, tir_mul(b, lower_offset(L, &mg.batch, bidx),
									tir_dim(b, mg.M)), i), N));
	j = tir_loop(b, N);
	tir_store(b, L->out[0], tir_add(b, by, j), tir_const(b, t, 0));
	tir_end(b);
	k = tir_loop(b, K);
	a = tir_let(b, "a", tir_load(b, L->in[0], tir_add(b, ba, tir_add(b, tir_mul(b, i, K), k))));
	j = tir_loop(b, N);
	tir_store(b, L->out[0], tir_add(b, by, j),
		  tir_add(b, tir_load(b, L->out[0], tir_add(b, by, j)),
			  tir_mul(b, a, tir_load(b, L->in[1], tir_add(b, bb, tir_add(b,
							tir_mul(b, k, N), j))))));
	tir_end(b);
	tir_end(b);
	tir_end(b);
	lower_end_loops(L, nb);
	return 0;
}

/*
 * Blocks of KBLOCK x NBLOCK of B stay in cache while every row of A passes
 * over them; column blocks are independent, so they run in parallel.
 */
static int lower_matmul_blocked(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct tir *bidx[MAX_RANK], *ba, *bb, *ybase, *jb, *kb, *i, *kk, *jj, *k, *j, *a, *row;
	struct tir *N, *K, *M, *j0, *k0, *nj, *nk;
	enum dtype t = lower_in(L, 0)->dtype;
	int nb;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	N = tir_dim(b, mg.N);
	K = tir_dim(b, mg.K);
	M = tir_dim(b, mg.M);
	nb = batch_loops(L, &mg, bidx);
	jb = tir_loop(b, tir_bin(b, BIN_DIV, tir_add(b, N, tir_int(b, NBLOCK - 1)),
				 tir_int(b, NBLOCK)));
	tir_mark_parallel(b);
	matmul_bases(L, &mg, bidx, &ba, &bb);
	ybase = tir_let(b, "ybase", tir_mul(b, lower_offset(L, &mg.batch, bidx), tir_mul(b, M, N)));
	j0 = tir_let(b, "j0", tir_mul(b, jb, tir_int(b, NBLOCK)));
	nj = tir_let(b, "nj", tir_bin(b, BIN_MIN, tir_int(b, NBLOCK), tir_bin(b, BIN_SUB, N, j0)));
	i = tir_loop(b, M);
	jj = tir_loop(b, nj);
	tir_store(b, L->out[0], tir_add(b, ybase, tir_add(b, tir_mul(b, i, N), tir_add(b, j0, jj))),
		  tir_const(b, t, 0));
	tir_end(b);
	tir_end(b);
	kb = tir_loop(b, tir_bin(b, BIN_DIV, tir_add(b, K, tir_int(b, KBLOCK - 1)),
				 tir_int(b, KBLOCK)));
	k0 = tir_let(b, "k0", tir_mul(b, kb, tir_int(b, KBLOCK)));
	nk = tir_let(b, "nk", tir_bin(b, BIN_MIN, tir_int(b, KBLOCK), tir_bin(b, BIN_SUB, K, k0)));
	i = tir_loop(b, M);
	row = tir_let(b, "row", tir_add(b, ybase, tir_add(b, tir_mul(b, i, N), j0)));
	kk = tir_loop(b, nk);
	k = tir_let(b, "k", tir_add(b, k0, kk));
	a = tir_let(b, "a", tir_load(b, L->in[0], tir_add(b, ba, tir_add(b, tir_mul(b, i, K), k))));
	jj = tir_loop(b, nj);
	j = tir_add(b, j0, jj);
	tir_store(b, L->out[0], tir_add(b, row, jj),
		  tir_add(b, tir_load(b, L->out[0], tir_add(b, row, jj)),
			  tir_mul(b, a, tir_load(b, L->in[1], tir_add(b, bb, tir_add(b,
							tir_mul(b, k, N), j))))));
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	lower_end_loops(L, nb);
	return 0;
}

static const struct strategy_impl matmul_blocked[] = { { "matmul.blocked", 20, lower_matmul_blocked } };
static const struct strategy_impl matmul_ikj[] = { { "matmul.ikj", 10, lower_matmul_ikj } };
static const struct strategy_impl matmul_ijk[] = { { "matmul.ijk", 0, lower_matmul } };

static const struct strategy_spec matmul_specs[] = {
	{ "M >= 16 && K > 16", cond_large, matmul_blocked, 1 },
	{ "K > 16", cond_k_gt_16, matmul_ikj, 1 },
	{ "always", NULL, matmul_ijk, 1 },
};

static const struct op_strategy matmul_strategy = { OP_MATMUL, matmul_specs, 3 };

/* ---- Conv ---- */

static struct tir *cond_depthwise(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *w = lower_in(L, 1);
	int64_t group = node_attr_int(L->n, "group", 1);
	bool dw = group > 1 && dim_is_const(x->shape.d[1]) && x->shape.d[1].c == group &&
		  w->shape.d[0].c == group && w->shape.d[1].c == 1;

	return tir_typed_int(L->b, DTYPE_BOOL, dw);
}

static struct tir *cond_1x1(struct lower *L)
{
	const struct value *w = lower_in(L, 1);
	const int64_t *v;
	bool ok = w->shape.rank == 4 && w->shape.d[2].c == 1 && w->shape.d[3].c == 1 &&
		  node_attr_int(L->n, "group", 1) == 1 &&
		  !strcmp(node_attr_str(L->n, "auto_pad", "NOTSET"), "NOTSET");
	int n;

	if ((n = node_attr_ints(L->n, "strides", &v)) > 0)
		for (int i = 0; i < n; i++)
			ok &= v[i] == 1;
	if ((n = node_attr_ints(L->n, "pads", &v)) > 0)
		for (int i = 0; i < n; i++)
			ok &= v[i] == 0;
	return tir_typed_int(L->b, DTYPE_BOOL, ok);
}

/* Depthwise: output channel c reads input channel c only. */
static int lower_conv_depthwise(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1), *y = lower_out(L, 0);
	struct window w;
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *xi[MAX_RANK], *wi[MAX_RANK], *acc, *cond = NULL;
	int64_t kern[MAX_RANK];

	for (int i = 2; i < wt->shape.rank; i++)
		kern[i - 2] = wt->shape.d[i].c;
	if (window_plan(L->g, (struct node *)L->n, &x->shape, kern, false, &w) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, oi);
	acc = tir_let(b, "acc", L->in[2] ? tir_load(b, L->in[2], oi[1]) : tir_const(b, y->dtype, 0));
	for (int i = 0; i < w.r; i++)
		ki[i] = tir_loop(b, tir_int(b, w.k[i]));
	xi[0] = oi[0];
	xi[1] = oi[1];
	wi[0] = oi[1];
	wi[1] = tir_int(b, 0);
	for (int i = 0; i < w.r; i++) {
		struct tir *p = tir_bin(b, BIN_SUB, tir_add(b, tir_mul(b, oi[i + 2], tir_int(b, w.s[i])),
						   tir_mul(b, ki[i], tir_int(b, w.d[i]))),
					tir_int(b, w.pb[i]));

		p = tir_let(b, "p", p);
		cond = lower_inside(b, cond, p, w.in[i]);
		xi[i + 2] = p;
		wi[i + 2] = ki[i];
	}
	tir_if(b, cond);
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_load(b, L->in[0],
				lower_offset(L, &x->shape, xi)),
				tir_load(b, L->in[1], lower_offset(L, &wt->shape, wi)))));
	tir_end(b);
	lower_end_loops(L, w.r);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* 1x1: y[n, o, :] = bias[o] + sum_c w[o, c] * x[n, c, :] over the pixels. */
static int lower_conv_1x1(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1), *y = lower_out(L, 0);
	enum dtype t = y->dtype;
	struct tir *n, *o, *c, *p, *wv, *P, *C, *Mo, *yrow, *xrow;

	P = tir_mul(b, tir_dim(b, x->shape.d[2]), tir_dim(b, x->shape.d[3]));
	C = tir_dim(b, x->shape.d[1]);
	Mo = tir_dim(b, wt->shape.d[0]);
	n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	tir_mark_parallel(b);
	o = tir_loop(b, Mo);
	tir_mark_parallel(b);
	yrow = tir_let(b, "yrow", tir_mul(b, tir_add(b, tir_mul(b, n, Mo), o), P));
	p = tir_loop(b, P);
	tir_store(b, L->out[0], tir_add(b, yrow, p),
		  L->in[2] ? tir_load(b, L->in[2], o) : tir_const(b, t, 0));
	tir_end(b);
	c = tir_loop(b, C);
	wv = tir_let(b, "w", tir_load(b, L->in[1], tir_add(b, tir_mul(b, o, C), c)));
	xrow = tir_let(b, "xrow", tir_mul(b, tir_add(b, tir_mul(b, n, C), c), P));
	p = tir_loop(b, P);
	tir_store(b, L->out[0], tir_add(b, yrow, p),
		  tir_add(b, tir_load(b, L->out[0], tir_add(b, yrow, p)),
			  tir_mul(b, wv, tir_load(b, L->in[0], tir_add(b, xrow, p)))));
	tir_end(b);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	return 0;
}

static const struct strategy_impl conv_dw[] = { { "conv.depthwise", 10, lower_conv_depthwise } };
static const struct strategy_impl conv_1x1[] = { { "conv.1x1", 10, lower_conv_1x1 } };
static const struct strategy_impl conv_direct[] = { { "conv.direct", 0, lower_conv } };

static const struct strategy_spec conv_specs[] = {
	{ "depthwise (group == C == M)", cond_depthwise, conv_dw, 1 },
	{ "1x1, stride 1, no padding, group 1", cond_1x1, conv_1x1, 1 },
	{ "always", NULL, conv_direct, 1 },
};

static const struct op_strategy conv_strategy = { OP_CONV, conv_specs, 3 };

const struct op_strategy *const c_strategies[] = {
	&matmul_strategy,
	&conv_strategy,
	NULL,
};
