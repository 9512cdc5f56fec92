/*
 * opencl_strategies.c - the opencl target's op strategies
 * (core/target/strategy.h): register-tiled MatMul, Gemm and Conv.
 *
 *   MatMul  M >= 4 && N >= 8    matmul.tile_4xn   4 x TN outputs per work-item
 *           N >= 8              matmul.tile_1xn   1 x TN
 *           always              matmul.generic    one output per work-item
 *   Gemm    transB, !transA, K >= 8
 *                               gemm.dot_1x4      4 dot products, k in 8 lanes
 *           M >= 4 && N >= 8    gemm.tile_4xn
 *           N >= 8              gemm.tile_1xn
 *           always              gemm.generic
 *   Conv    1-D/2-D, 1x1, stride 1, no padding
 *                               conv.tile_1x1     4 channels x TN pixels (flat)
 *           1-D/2-D depthwise   conv.tile_dw      1 channel x TN pixels of a row
 *           1-D/2-D             conv.tile         4 channels x TN pixels of a row
 *           always              conv.generic
 *
 * TN is 16 columns for MatMul/Gemm (8 when N < 16) and 16 output pixels
 * for Conv (the whole row when it is shorter). Every tiled kernel is an NDRange
 * over its tiles (the outer loops are marked parallel, so the stage splitter
 * maps them to get_global_id); a work-item keeps its tile's accumulators in
 * locals across the whole reduction loop, so each loaded element of one
 * operand is used by every row or column of the tile. The reduction body is
 * straight-line code over constant offsets (PoCL's LLVM turns the loads of a
 * tile row into vector loads and the updates into vector FMAs). Full tiles
 * take that path unguarded; tiles at the edges (extents not divisible by the
 * tile, conv windows that reach into the padding) take the same body with
 * clamped indices, zero for padding and guarded stores; a conv row's edge
 * tiles get a copy each with their column constant, so the OpenCL compiler
 * folds those tests away. With a symbolic M (a symbolic batch of Gemm) the
 * conditions are tested at run time.
 */
#include "../backends.h"

#include <string.h>

#include "../../core/target/strategy.h"

#define MM_TM 4		/* rows of a MatMul/Gemm tile */
#define MM_TN 16	/* columns of a MatMul/Gemm tile (8 when N < 16) */
#define DOT_TN 4	/* outputs of a transB Gemm tile */
#define DOT_U 8		/* its partial sums per output: k in lanes of 8 */
#define CONV_TM 4	/* output channels of a Conv tile */
#define CONV_TN 16	/* output pixels of a Conv tile, at most */
#define MAX_TILE 64	/* accumulators of a tile, at most */

_Static_assert(MM_TM * MM_TN <= MAX_TILE && CONV_TM * CONV_TN <= MAX_TILE &&
	       DOT_TN * DOT_U <= MAX_TILE, "tiles larger than MAX_TILE");

/* ---- helpers ---- */

static struct tir *ceil_div(struct tir_builder *b, struct tir *x, int64_t d)
{
	return tir_bin(b, BIN_DIV, tir_add(b, x, tir_int(b, d - 1)), tir_int(b, d));
}

static struct tir *imin(struct tir_builder *b, struct tir *x, struct tir *y)
{
	if (x->kind == TIR_INT && y->kind == TIR_INT && x->dtype == y->dtype)
		return x->i < y->i ? x : y;
	return tir_bin(b, BIN_MIN, x, y);
}

static struct tir *land(struct tir_builder *b, struct tir *x, struct tir *y)
{
	return x ? tir_bin(b, BIN_LAND, x, y) : y;
}

/* Opens a parallel loop over [0, n); returns its variable. */
static struct tir *par_loop(struct tir_builder *b, struct tir *n)
{
	struct tir *v = tir_loop(b, n);

	tir_mark_parallel(b);
	return v;
}

/* idx[0..s->rank) of the row-major flat index flat in shape s. */
static void unflatten(struct lower *L, const struct shape *s, struct tir *flat, struct tir **idx)
{
	struct tir_builder *b = L->b;

	for (int d = s->rank - 1; d >= 0; d--) {
		struct tir *D = tir_dim(b, s->d[d]);

		idx[d] = tir_let(b, "bi", d ? tir_bin(b, BIN_MOD, flat, D) : flat);
		if (d)
			flat = tir_let(b, "bq", tir_bin(b, BIN_DIV, flat, D));
	}
}

/* ---- the register tile of a matrix product ---- */

/*
 * C = A B over a tile of tm x tn outputs: element (i, k) of A is at
 * a0 + i * ai + k * ak, element (k, j) of B at b0 + k * bk + j * bj; store()
 * writes one output (adding a bias, scaling).
 */
struct mm {
	struct tir_buf *a, *b;
	struct tir *M, *N, *K;
	struct tir *a0, *ai, *ak, *b0, *bk, *bj;
	int tm, tn;
	void (*store)(struct lower *L, const struct mm *t, struct tir *i, struct tir *j,
		      struct tir *acc);
	struct tir *y0;			/* output base (batch) */
};

/*
 * The tile at (i0, j0): accumulators in locals, the k loop loads tm values
 * of A and tn of B and does tm x tn multiply-adds. An edge tile clamps its
 * rows and columns into the matrices and stores only the outputs inside.
 */
static void mm_tile(struct lower *L, const struct mm *t, struct tir *i0, struct tir *j0,
		    bool edge)
{
	struct tir_builder *b = L->b;
	enum dtype dt = lower_out(L, 0)->dtype;
	struct tir *arow[MM_TM], *bcol[MM_TN], *acc[MAX_TILE], *av[MM_TM], *bv[MM_TN];
	struct tir *k, *bk = NULL, *last_i, *last_j;

	last_i = tir_bin(b, BIN_SUB, t->M, tir_int(b, 1));
	last_j = tir_bin(b, BIN_SUB, t->N, tir_int(b, 1));
	for (int r = 0; r < t->tm; r++) {
		struct tir *i = tir_add(b, i0, tir_int(b, r));

		arow[r] = tir_let(b, "ar", tir_add(b, t->a0, tir_mul(b, edge ? imin(b, i, last_i) : i,
								       t->ai)));
	}
	if (edge)
		for (int c = 0; c < t->tn; c++)
			bcol[c] = tir_let(b, "bc", tir_add(b, t->b0, tir_mul(b, imin(b, tir_add(b, j0,
							tir_int(b, c)), last_j), t->bj)));
	else
		bcol[0] = tir_let(b, "bc", tir_add(b, t->b0, tir_mul(b, j0, t->bj)));
	for (int q = 0; q < t->tm * t->tn; q++)
		acc[q] = tir_let(b, "acc", tir_const(b, dt, 0));
	k = tir_loop(b, t->K);
	if (!edge)
		bk = tir_let(b, "bk", tir_add(b, bcol[0], tir_mul(b, k, t->bk)));
	for (int r = 0; r < t->tm; r++)
		av[r] = tir_let(b, "a", tir_load(b, t->a, tir_add(b, arow[r], tir_mul(b, k, t->ak))));
	for (int c = 0; c < t->tn; c++)
		bv[c] = tir_let(b, "b", tir_load(b, t->b, edge ? tir_add(b, bcol[c], tir_mul(b, k, t->bk))
						  : tir_add(b, bk, tir_mul(b, tir_int(b, c), t->bj))));
	for (int r = 0; r < t->tm; r++)
		for (int c = 0; c < t->tn; c++) {
			struct tir *a = acc[r * t->tn + c];

			tir_assign(b, a, tir_add(b, a, tir_mul(b, av[r], bv[c])));
		}
	tir_end(b);
	for (int r = 0; r < t->tm; r++)
		for (int c = 0; c < t->tn; c++) {
			struct tir *i = tir_add(b, i0, tir_int(b, r)), *j = tir_add(b, j0, tir_int(b, c));

			if (edge)
				tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_LT, i, t->M),
						  tir_bin(b, BIN_LT, j, t->N)));
			t->store(L, t, i, j, acc[r * t->tn + c]);
			if (edge)
				tir_end(b);
		}
}

/*
 * The same tile as dot products along k, for B stored as [N, K] (ak == bk
 * == 1): each output keeps DOT_U partial sums over consecutive k, so both
 * operands are read in runs of DOT_U; the remainder of K runs one k at a time.
 */
static void dot_tile(struct lower *L, const struct mm *t, struct tir *i0, struct tir *j0,
		     bool edge)
{
	struct tir_builder *b = L->b;
	enum dtype dt = lower_out(L, 0)->dtype;
	struct tir *arow[MM_TM], *bcol[DOT_TN], *p[MAX_TILE * DOT_U], *av[MM_TM * DOT_U];
	struct tir *bv[DOT_TN * DOT_U], *acc[MAX_TILE], *kb, *k0, *kr, *k, *kmain, *last_i, *last_j;
	int tm = t->tm, tn = t->tn;

	last_i = tir_bin(b, BIN_SUB, t->M, tir_int(b, 1));
	last_j = tir_bin(b, BIN_SUB, t->N, tir_int(b, 1));
	for (int r = 0; r < tm; r++) {
		struct tir *i = tir_add(b, i0, tir_int(b, r));

		arow[r] = tir_let(b, "ar", tir_add(b, t->a0, tir_mul(b, edge ? imin(b, i, last_i) : i,
								       t->ai)));
	}
	for (int c = 0; c < tn; c++) {
		struct tir *j = tir_add(b, j0, tir_int(b, c));

		bcol[c] = tir_let(b, "bc", tir_add(b, t->b0, tir_mul(b, edge ? imin(b, j, last_j) : j,
								       t->bj)));
	}
	for (int q = 0; q < tm * tn * DOT_U; q++)
		p[q] = tir_let(b, "p", tir_const(b, dt, 0));
	kb = tir_loop(b, tir_bin(b, BIN_DIV, t->K, tir_int(b, DOT_U)));
	k0 = tir_let(b, "k0", tir_mul(b, kb, tir_int(b, DOT_U)));
	for (int r = 0; r < tm; r++)
		for (int u = 0; u < DOT_U; u++)
			av[r * DOT_U + u] = tir_let(b, "a", tir_load(b, t->a, tir_add(b, arow[r],
							tir_add(b, k0, tir_int(b, u)))));
	for (int c = 0; c < tn; c++)
		for (int u = 0; u < DOT_U; u++)
			bv[c * DOT_U + u] = tir_let(b, "b", tir_load(b, t->b, tir_add(b, bcol[c],
							tir_add(b, k0, tir_int(b, u)))));
	for (int r = 0; r < tm; r++)
		for (int c = 0; c < tn; c++)
			for (int u = 0; u < DOT_U; u++) {
				struct tir *s = p[(r * tn + c) * DOT_U + u];

				tir_assign(b, s, tir_add(b, s, tir_mul(b, av[r * DOT_U + u],
								       bv[c * DOT_U + u])));
			}
	tir_end(b);
	/* pairwise sums of the lanes */
	for (int q = 0; q < tm * tn; q++) {
		struct tir *s[DOT_U];

		for (int u = 0; u < DOT_U; u++)
			s[u] = p[q * DOT_U + u];
		for (int w = DOT_U / 2; w >= 1; w /= 2)
			for (int u = 0; u < w; u++)
				s[u] = tir_add(b, s[u], s[u + w]);
		acc[q] = tir_let(b, "acc", s[0]);
	}
	kmain = tir_mul(b, tir_bin(b, BIN_DIV, t->K, tir_int(b, DOT_U)), tir_int(b, DOT_U));
	if (t->K->kind != TIR_INT || t->K->i % DOT_U) {
		kr = tir_loop(b, tir_bin(b, BIN_SUB, t->K, kmain));
		k = tir_let(b, "k", tir_add(b, kmain, kr));
		for (int r = 0; r < tm; r++)
			for (int c = 0; c < tn; c++) {
				struct tir *a = acc[r * tn + c];

				tir_assign(b, a, tir_add(b, a, tir_mul(b,
					tir_load(b, t->a, tir_add(b, arow[r], k)),
					tir_load(b, t->b, tir_add(b, bcol[c], k)))));
			}
		tir_end(b);
	}
	for (int r = 0; r < tm; r++)
		for (int c = 0; c < tn; c++) {
			struct tir *i = tir_add(b, i0, tir_int(b, r)), *j = tir_add(b, j0, tir_int(b, c));

			if (edge)
				tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_LT, i, t->M),
						  tir_bin(b, BIN_LT, j, t->N)));
			t->store(L, t, i, j, acc[r * tn + c]);
			if (edge)
				tir_end(b);
		}
}

typedef void (*tile_fn)(struct lower *L, const struct mm *t, struct tir *i0, struct tir *j0,
			bool edge);

/*
 * Inside the tile loops (it, jt): the full-tile path, and the edge path
 * behind a run-time test unless every tile is full for these shapes.
 */
static void mm_tiles(struct lower *L, const struct mm *t, struct tir *it, struct tir *jt,
		     tile_fn tile)
{
	struct tir_builder *b = L->b;
	struct tir *i0 = tir_let(b, "i0", tir_mul(b, it, tir_int(b, t->tm)));
	struct tir *j0 = tir_let(b, "j0", tir_mul(b, jt, tir_int(b, t->tn)));
	struct tir *full = NULL;

	if (t->M->kind != TIR_INT || t->M->i % t->tm)
		full = tir_bin(b, BIN_LE, tir_add(b, i0, tir_int(b, t->tm)), t->M);
	if (t->N->kind != TIR_INT || t->N->i % t->tn)
		full = land(b, full, tir_bin(b, BIN_LE, tir_add(b, j0, tir_int(b, t->tn)), t->N));
	if (!full) {
		tile(L, t, i0, j0, false);
		return;
	}
	tir_if(b, full);
	tile(L, t, i0, j0, false);
	tir_else(b);
	tile(L, t, i0, j0, true);
	tir_end(b);
}

/* TN for N columns: MM_TN, or 8 when N is known to be smaller. */
static int pick_tn(struct dim N)
{
	return dim_is_const(N) && N.c < MM_TN ? 8 : MM_TN;
}

/* ---- MatMul ---- */

static void matmul_store(struct lower *L, const struct mm *t, struct tir *i, struct tir *j,
			 struct tir *acc)
{
	struct tir_builder *b = L->b;

	tir_store(b, L->out[0], tir_add(b, t->y0, tir_add(b, tir_mul(b, i, t->N), j)), acc);
}

/*
 * Loops: the broadcast batch flattened into one (none without a batch),
 * row tiles, column tiles; all parallel, at most three NDRange dims.
 */
static int lower_matmul_tiled(struct lower *L, int tm)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct tir *bidx[MAX_RANK], *bt = tir_int(b, 0), *it, *jt, *ba, *bb;
	struct mm t = { 0 };
	int nl = 0;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	t.a = L->in[0];
	t.b = L->in[1];
	t.M = tir_dim(b, mg.M);
	t.N = tir_dim(b, mg.N);
	t.K = tir_dim(b, mg.K);
	t.tm = tm;
	t.tn = pick_tn(mg.N);
	if (mg.batch.rank > 0) {
		bt = par_loop(b, lower_numel(L, &mg.batch));
		nl++;
	}
	it = par_loop(b, ceil_div(b, t.M, tm));
	jt = par_loop(b, ceil_div(b, t.N, t.tn));
	nl += 2;
	unflatten(L, &mg.batch, bt, bidx);
	matmul_bases(L, &mg, bidx, &ba, &bb);
	t.a0 = tir_let(b, "abase", ba);
	t.b0 = tir_let(b, "bbase", bb);
	t.y0 = tir_let(b, "ybase", tir_mul(b, bt, tir_mul(b, t.M, t.N)));
	t.ai = t.K;
	t.ak = tir_int(b, 1);
	t.bk = t.N;
	t.bj = tir_int(b, 1);
	t.store = matmul_store;
	mm_tiles(L, &t, it, jt, mm_tile);
	lower_end_loops(L, nl);
	return 0;
}

static int lower_matmul_4xn(struct lower *L)
{
	return lower_matmul_tiled(L, MM_TM);
}

static int lower_matmul_1xn(struct lower *L)
{
	return lower_matmul_tiled(L, 1);
}

static struct tir *matmul_dim(struct lower *L, char which)
{
	struct matmul_geom mg;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	return tir_dim(L->b, which == 'M' ? mg.M : which == 'N' ? mg.N : mg.K);
}

static struct tir *cond_ge(struct lower *L, struct tir *x, int64_t v)
{
	return tir_bin(L->b, BIN_GE, x, tir_int(L->b, v));
}

static struct tir *cond_matmul_4xn(struct lower *L)
{
	return strategy_and(L, cond_ge(L, matmul_dim(L, 'M'), MM_TM), cond_ge(L, matmul_dim(L, 'N'), 8));
}

static struct tir *cond_matmul_1xn(struct lower *L)
{
	return cond_ge(L, matmul_dim(L, 'N'), 8);
}

static const struct strategy_impl matmul_4xn[] = { { "matmul.tile_4xn", 20, lower_matmul_4xn } };
static const struct strategy_impl matmul_1xn[] = { { "matmul.tile_1xn", 10, lower_matmul_1xn } };
static const struct strategy_impl matmul_generic[] = { { "matmul.generic", 0, lower_matmul } };

static const struct strategy_spec matmul_specs[] = {
	{ "M >= 4 && N >= 8", cond_matmul_4xn, matmul_4xn, 1 },
	{ "N >= 8", cond_matmul_1xn, matmul_1xn, 1 },
	{ "always", NULL, matmul_generic, 1 },
};

static const struct op_strategy matmul_strategy = { OP_MATMUL, matmul_specs, 3 };

/* ---- Gemm ---- */

struct gemm_attrs {
	bool ta, tb;
	double alpha, beta;
};

static void gemm_attrs(struct lower *L, struct gemm_attrs *g)
{
	g->ta = node_attr_int(L->n, "transA", 0) != 0;
	g->tb = node_attr_int(L->n, "transB", 0) != 0;
	g->alpha = node_attr_float(L->n, "alpha", 1.0);
	g->beta = node_attr_float(L->n, "beta", 1.0);
}

/* y = alpha * acc + beta * C[broadcast] */
static void gemm_store(struct lower *L, const struct mm *t, struct tir *i, struct tir *j,
		       struct tir *acc)
{
	struct tir_builder *b = L->b;
	const struct value *c = lower_in(L, 2), *y = lower_out(L, 0);
	struct gemm_attrs g;
	struct tir *r, *idx[2] = { i, j };

	gemm_attrs(L, &g);
	r = g.alpha == 1.0 ? acc : tir_mul(b, tir_const(b, y->dtype, g.alpha), acc);
	if (c) {
		struct tir *cv = tir_load(b, L->in[2], lower_bcast_offset(L, &c->shape, &y->shape, idx));

		r = tir_add(b, r, g.beta == 1.0 ? cv : tir_mul(b, tir_const(b, y->dtype, g.beta), cv));
	}
	tir_store(b, L->out[0], tir_add(b, tir_mul(b, i, t->N), j), r);
}

static int lower_gemm_tiled(struct lower *L, int tm, int tn, tile_fn tile)
{
	struct tir_builder *b = L->b;
	const struct value *a = lower_in(L, 0), *y = lower_out(L, 0);
	struct gemm_attrs g;
	struct tir *it, *jt;
	struct mm t = { 0 };

	gemm_attrs(L, &g);
	t.a = L->in[0];
	t.b = L->in[1];
	t.M = tir_dim(b, y->shape.d[0]);
	t.N = tir_dim(b, y->shape.d[1]);
	t.K = tir_dim(b, a->shape.d[g.ta ? 0 : 1]);
	t.tm = tm;
	t.tn = tn;
	it = par_loop(b, ceil_div(b, t.M, tm));
	jt = par_loop(b, ceil_div(b, t.N, tn));
	t.a0 = tir_int(b, 0);
	t.ai = g.ta ? tir_int(b, 1) : t.K;
	t.ak = g.ta ? t.M : tir_int(b, 1);
	t.b0 = tir_int(b, 0);
	t.bk = g.tb ? tir_int(b, 1) : t.N;
	t.bj = g.tb ? t.K : tir_int(b, 1);
	t.y0 = tir_int(b, 0);
	t.store = gemm_store;
	mm_tiles(L, &t, it, jt, tile);
	lower_end_loops(L, 2);
	return 0;
}

static int lower_gemm_4xn(struct lower *L)
{
	return lower_gemm_tiled(L, MM_TM, pick_tn(lower_out(L, 0)->shape.d[1]), mm_tile);
}

static int lower_gemm_1xn(struct lower *L)
{
	return lower_gemm_tiled(L, 1, pick_tn(lower_out(L, 0)->shape.d[1]), mm_tile);
}

static int lower_gemm_dot(struct lower *L)
{
	return lower_gemm_tiled(L, 1, DOT_TN, dot_tile);
}

static struct tir *gemm_dim(struct lower *L, char which)
{
	const struct value *a = lower_in(L, 0), *y = lower_out(L, 0);
	struct gemm_attrs g;

	gemm_attrs(L, &g);
	return tir_dim(L->b, which == 'M' ? y->shape.d[0] : which == 'N' ? y->shape.d[1] :
		       a->shape.d[g.ta ? 0 : 1]);
}

static struct tir *cond_gemm_dot(struct lower *L)
{
	struct gemm_attrs g;
	struct tir *k = cond_ge(L, gemm_dim(L, 'K'), DOT_U);

	gemm_attrs(L, &g);
	if (!g.tb || g.ta)
		return strategy_static(L, false);
	return k;
}

static struct tir *cond_gemm_4xn(struct lower *L)
{
	return strategy_and(L, cond_ge(L, gemm_dim(L, 'M'), MM_TM), cond_ge(L, gemm_dim(L, 'N'), 8));
}

static struct tir *cond_gemm_1xn(struct lower *L)
{
	return cond_ge(L, gemm_dim(L, 'N'), 8);
}

static const struct strategy_impl gemm_dot[] = { { "gemm.dot_1x4", 30, lower_gemm_dot } };
static const struct strategy_impl gemm_4xn[] = { { "gemm.tile_4xn", 20, lower_gemm_4xn } };
static const struct strategy_impl gemm_1xn[] = { { "gemm.tile_1xn", 10, lower_gemm_1xn } };
static const struct strategy_impl gemm_generic[] = { { "gemm.generic", 0, lower_gemm } };

static const struct strategy_spec gemm_specs[] = {
	{ "transB && !transA && K >= 8", cond_gemm_dot, gemm_dot, 1 },
	{ "M >= 4 && N >= 8", cond_gemm_4xn, gemm_4xn, 1 },
	{ "N >= 8", cond_gemm_1xn, gemm_1xn, 1 },
	{ "always", NULL, gemm_generic, 1 },
};

static const struct op_strategy gemm_strategy = { OP_GEMM, gemm_specs, 4 };

/* ---- Conv ---- */

/*
 * A 1-D or 2-D convolution seen as 2-D (1-D: one row of height 1); a 1x1
 * convolution with stride 1 and no padding as one row of H x W pixels.
 */
struct conv_view {
	int64_t C, H, W;		/* input channels and extents */
	int64_t O, OH, OW;		/* output channels and extents */
	int64_t G, cin_g, cout_g;	/* groups, channels per group */
	int64_t KH, KW, sh, sw, dh, dw, ph, pw;
	int tm, tn;			/* tile: channels x pixels of a row */
};

static int conv_view(struct lower *L, bool flat, struct conv_view *v)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	struct window w;
	int64_t kern[MAX_RANK];
	int o = 0;

	for (int i = 2; i < wt->shape.rank; i++)
		kern[i - 2] = wt->shape.d[i].c;
	if (window_plan(L->g, (struct node *)L->n, &x->shape, kern, false, &w) < 0)
		return -1;
	if (w.r != 1 && w.r != 2)
		BUG("conv_view on a %d-D convolution", w.r);
	if (w.r == 2)
		o = 1;
	v->C = x->shape.d[1].c;
	v->O = wt->shape.d[0].c;
	v->G = node_attr_int(L->n, "group", 1);
	v->cin_g = wt->shape.d[1].c;
	v->cout_g = v->O / v->G;
	v->H = o ? w.in[0] : 1;
	v->OH = o ? w.out[0] : 1;
	v->KH = o ? w.k[0] : 1;
	v->sh = o ? w.s[0] : 1;
	v->dh = o ? w.d[0] : 1;
	v->ph = o ? w.pb[0] : 0;
	v->W = w.in[o];
	v->OW = w.out[o];
	v->KW = w.k[o];
	v->sw = w.s[o];
	v->dw = w.d[o];
	v->pw = w.pb[o];
	if (flat) {
		v->W *= v->H;
		v->OW *= v->OH;
		v->H = v->OH = 1;
	}
	v->tm = v->cout_g < CONV_TM ? (int)v->cout_g : CONV_TM;
	v->tn = v->OW < CONV_TN ? (int)v->OW : CONV_TN;
	return 0;
}

/* Where a conv tile is (loop-IR expressions, set inside the tile loops). */
struct conv_tile {
	const struct conv_view *v;
	struct tir *xbase;		/* input channel group's first element (batch n) */
	struct tir *ybase;		/* output (n, first channel of the group) */
	struct tir *oc0;		/* tile's first channel within its group */
	struct tir *oh, *ow0;		/* output row, first output column */
	struct tir *g;			/* group */
};

/*
 * One conv tile: tm channels x tn pixels of output row oh. For every input
 * channel and kernel row (skipped when it lies in the padding), the kernel
 * columns are unrolled: tm weights and tn inputs loaded, tm x tn updates.
 * A tile at the channel edge clamps its channels and stores only those
 * inside; a tile at a column edge (ow0 a constant then, so the OpenCL
 * compiler folds the tests) clamps its pixels, reads zero for padding and
 * stores only the pixels inside.
 */
static void conv_emit_tile(struct lower *L, const struct conv_tile *ct, bool chan_edge,
			   bool col_edge)
{
	struct tir_builder *b = L->b;
	const struct conv_view *v = ct->v;
	enum dtype dt = lower_out(L, 0)->dtype;
	struct tir *wrow[CONV_TM], *acc[MAX_TILE], *wv[CONV_TM], *xv[CONV_TN], *owc[CONV_TN];
	struct tir *c, *kh, *ih, *xc, *xrow, *iw0, *wc[CONV_TM];
	int64_t khw = v->KH * v->KW;
	bool rows_pad = v->ph > 0 || (v->OH - 1) * v->sh - v->ph + (v->KH - 1) * v->dh >= v->H;

	for (int r = 0; r < v->tm; r++) {
		struct tir *o = tir_add(b, ct->oc0, tir_int(b, r));

		if (chan_edge)
			o = imin(b, o, tir_int(b, v->cout_g - 1));
		o = tir_add(b, tir_mul(b, ct->g, tir_int(b, v->cout_g)), o);
		wrow[r] = tir_let(b, "wr", tir_mul(b, o, tir_int(b, v->cin_g * khw)));
		acc[r * v->tn] = tir_let(b, "acc", L->in[2] ? tir_load(b, L->in[2], o) :
					 tir_const(b, dt, 0));
		for (int t = 1; t < v->tn; t++)
			acc[r * v->tn + t] = tir_let(b, "acc", acc[r * v->tn]);
	}
	iw0 = tir_let(b, "iw0", tir_bin(b, BIN_SUB, tir_mul(b, ct->ow0, tir_int(b, v->sw)),
					tir_int(b, v->pw)));
	if (col_edge)
		for (int t = 0; t < v->tn; t++)
			owc[t] = imin(b, tir_add(b, ct->ow0, tir_int(b, t)), tir_int(b, v->OW - 1));
	c = tir_loop(b, tir_int(b, v->cin_g));
	xc = tir_let(b, "xc", tir_add(b, ct->xbase, tir_mul(b, c, tir_int(b, v->H * v->W))));
	for (int r = 0; r < v->tm; r++)
		wc[r] = tir_let(b, "wc", tir_add(b, wrow[r], tir_mul(b, c, tir_int(b, khw))));
	kh = v->KH > 1 ? tir_loop(b, tir_int(b, v->KH)) : tir_int(b, 0);
	ih = tir_let(b, "ih", tir_bin(b, BIN_SUB, tir_add(b, tir_mul(b, ct->oh, tir_int(b, v->sh)),
					tir_mul(b, kh, tir_int(b, v->dh))), tir_int(b, v->ph)));
	if (rows_pad)
		tir_if(b, lower_inside(b, NULL, ih, v->H));
	xrow = tir_let(b, "xrow", tir_add(b, xc, tir_mul(b, ih, tir_int(b, v->W))));
	for (int kw = 0; kw < v->KW; kw++) {
		struct tir *xk = NULL;

		for (int r = 0; r < v->tm; r++)
			wv[r] = tir_let(b, "w", tir_load(b, L->in[1], tir_add(b, wc[r],
					tir_add(b, tir_mul(b, kh, tir_int(b, v->KW)), tir_int(b, kw)))));
		if (!col_edge)
			xk = tir_let(b, "xk", tir_add(b, xrow, tir_add(b, iw0, tir_int(b, kw * v->dw))));
		for (int t = 0; t < v->tn; t++) {
			struct tir *iw, *ld;

			if (!col_edge) {
				xv[t] = tir_let(b, "x", tir_load(b, L->in[0], tir_add(b, xk,
								tir_int(b, t * v->sw))));
				continue;
			}
			iw = tir_bin(b, BIN_SUB, tir_add(b, tir_mul(b, owc[t], tir_int(b, v->sw)),
							  tir_int(b, kw * v->dw)), tir_int(b, v->pw));
			if (iw->kind == TIR_INT && (iw->i < 0 || iw->i >= v->W)) {
				xv[t] = NULL;	/* padding: nothing to add */
				continue;
			}
			if (iw->kind == TIR_INT) {
				xv[t] = tir_let(b, "x", tir_load(b, L->in[0], tir_add(b, xrow, iw)));
				continue;
			}
			iw = tir_let(b, "iw", iw);
			ld = tir_load(b, L->in[0], tir_add(b, xrow, tir_bin(b, BIN_MAX, tir_int(b, 0),
						imin(b, iw, tir_int(b, v->W - 1)))));
			xv[t] = tir_let(b, "x", tir_select(b, lower_inside(b, NULL, iw, v->W), ld,
							   tir_const(b, dt, 0)));
		}
		for (int r = 0; r < v->tm; r++)
			for (int t = 0; t < v->tn; t++) {
				struct tir *a = acc[r * v->tn + t];

				if (xv[t])
					tir_assign(b, a, tir_add(b, a, tir_mul(b, wv[r], xv[t])));
			}
	}
	if (rows_pad)
		tir_end(b);
	if (v->KH > 1)
		tir_end(b);
	tir_end(b);
	for (int r = 0; r < v->tm; r++)
		for (int t = 0; t < v->tn; t++) {
			struct tir *o = tir_add(b, ct->oc0, tir_int(b, r));
			struct tir *ow = tir_add(b, ct->ow0, tir_int(b, t));
			struct tir *in = NULL;
			struct tir *idx = tir_add(b, ct->ybase, tir_add(b, tir_mul(b, o,
						tir_int(b, v->OH * v->OW)), tir_add(b, tir_mul(b, ct->oh,
						tir_int(b, v->OW)), ow)));

			if (col_edge && ow->kind == TIR_INT && ow->i >= v->OW)
				continue;
			if (col_edge && ow->kind != TIR_INT)
				in = tir_bin(b, BIN_LT, ow, tir_int(b, v->OW));
			if (chan_edge)
				in = land(b, in, tir_bin(b, BIN_LT, o, tir_int(b, v->cout_g)));
			if (in)
				tir_if(b, in);
			tir_store(b, L->out[0], idx, acc[r * v->tn + t]);
			if (in)
				tir_end(b);
		}
}

#define MAX_EDGE_TILES 4	/* column edge tiles with a code path of their own */

/* Does pixel tile q of a row read padding or lie partly outside the row? */
static bool conv_col_edge(const struct conv_view *v, int64_t q)
{
	int64_t ow0 = q * v->tn, iw0 = ow0 * v->sw - v->pw;

	return ow0 + v->tn > v->OW || iw0 < 0 ||
	       iw0 + (v->tn - 1) * v->sw + (v->KW - 1) * v->dw >= v->W;
}

/*
 * Loops: (image, group, channel tile) flattened, output rows, pixel tiles;
 * all parallel. Tiles never straddle groups. The few pixel tiles of a row
 * at its edges get their own code with ow0 constant; when there are more
 * than MAX_EDGE_TILES of them, one run-time tested edge path serves all.
 */
static int lower_conv_tiled(struct lower *L, bool flat)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct conv_view v;
	struct conv_tile ct;
	struct tir *ngo, *owt, *n, *ot;
	int64_t OT, nt, n_edge = 0;
	bool chan_edge;
	int n_if = 0;

	if (x->shape.rank != 3 && x->shape.rank != 4)
		return lower_conv(L);	/* lowered for a specialization that cannot hold */
	if (conv_view(L, flat, &v) < 0)
		return -1;
	OT = (v.cout_g + v.tm - 1) / v.tm;
	nt = (v.OW + v.tn - 1) / v.tn;
	chan_edge = v.cout_g % v.tm != 0;
	ngo = par_loop(b, tir_mul(b, tir_dim(b, x->shape.d[0]), tir_int(b, v.G * OT)));
	ct.oh = par_loop(b, tir_int(b, v.OH));
	owt = par_loop(b, tir_int(b, nt));
	ct.v = &v;
	n = tir_let(b, "n", tir_bin(b, BIN_DIV, ngo, tir_int(b, v.G * OT)));
	ct.g = tir_let(b, "g", tir_bin(b, BIN_MOD, tir_bin(b, BIN_DIV, ngo, tir_int(b, OT)),
				       tir_int(b, v.G)));
	ot = tir_bin(b, BIN_MOD, ngo, tir_int(b, OT));
	ct.oc0 = tir_let(b, "oc0", tir_mul(b, ot, tir_int(b, v.tm)));
	ct.xbase = tir_let(b, "xbase", tir_mul(b, tir_add(b, tir_mul(b, n, tir_int(b, v.C)),
			tir_mul(b, ct.g, tir_int(b, v.cin_g))), tir_int(b, v.H * v.W)));
	ct.ybase = tir_let(b, "ybase", tir_mul(b, tir_add(b, tir_mul(b, n, tir_int(b, v.O)),
			tir_mul(b, ct.g, tir_int(b, v.cout_g))), tir_int(b, v.OH * v.OW)));
	for (int64_t q = 0; q < nt; q++)
		n_edge += conv_col_edge(&v, q);
	if (n_edge > MAX_EDGE_TILES) {
		struct tir *iw0, *iwn, *full;

		ct.ow0 = tir_let(b, "ow0", tir_mul(b, owt, tir_int(b, v.tn)));
		iw0 = tir_bin(b, BIN_SUB, tir_mul(b, ct.ow0, tir_int(b, v.sw)), tir_int(b, v.pw));
		iwn = tir_add(b, iw0, tir_int(b, (v.tn - 1) * v.sw + (v.KW - 1) * v.dw));
		full = tir_bin(b, BIN_LE, tir_add(b, ct.ow0, tir_int(b, v.tn)), tir_int(b, v.OW));
		full = land(b, full, tir_bin(b, BIN_GE, iw0, tir_int(b, 0)));
		full = land(b, full, tir_bin(b, BIN_LT, iwn, tir_int(b, v.W)));
		tir_if(b, full);
		conv_emit_tile(L, &ct, chan_edge, false);
		tir_else(b);
		conv_emit_tile(L, &ct, chan_edge, true);
		tir_end(b);
		lower_end_loops(L, 3);
		return 0;
	}
	/* if (owt == q0) {edge} else if (owt == q1) {edge} ... else {full} */
	for (int64_t q = 0, i = 0; q < nt; q++) {
		bool last = n_edge == nt && ++i == n_edge;	/* the final else */

		if (!conv_col_edge(&v, q))
			continue;
		if (!last) {
			tir_if(b, tir_bin(b, BIN_EQ, owt, tir_int(b, q)));
			n_if++;
		}
		ct.ow0 = tir_int(b, q * v.tn);
		conv_emit_tile(L, &ct, chan_edge, true);
		if (!last)
			tir_else(b);
	}
	if (n_edge < nt) {
		ct.ow0 = tir_let(b, "ow0", tir_mul(b, owt, tir_int(b, v.tn)));
		conv_emit_tile(L, &ct, chan_edge, false);
	}
	while (n_if-- > 0)
		tir_end(b);
	lower_end_loops(L, 3);
	return 0;
}

static int lower_conv_tile(struct lower *L)
{
	return lower_conv_tiled(L, false);
}

static int lower_conv_1x1(struct lower *L)
{
	return lower_conv_tiled(L, true);
}

/* 1-D or 2-D (the tiled kernels' view). */
static bool conv_2d(struct lower *L)
{
	int r = lower_in(L, 0)->shape.rank;

	return r == 3 || r == 4;
}

static struct tir *cond_conv_1x1(struct lower *L)
{
	const struct value *w = lower_in(L, 1);
	bool ok = conv_2d(L) && window_unit_stride_no_pad(L->n);

	for (int i = 2; i < w->shape.rank; i++)
		ok &= w->shape.d[i].c == 1;
	return strategy_static(L, ok);
}

static struct tir *cond_conv_dw(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *w = lower_in(L, 1);
	int64_t group = node_attr_int(L->n, "group", 1);

	return strategy_static(L, conv_2d(L) && group > 1 && x->shape.d[1].c == group &&
			   w->shape.d[0].c == group && w->shape.d[1].c == 1);
}

static struct tir *cond_conv_tile(struct lower *L)
{
	return strategy_static(L, conv_2d(L));
}

static const struct strategy_impl conv_1x1[] = { { "conv.tile_1x1", 20, lower_conv_1x1 } };
static const struct strategy_impl conv_dw[] = { { "conv.tile_dw", 20, lower_conv_tile } };
static const struct strategy_impl conv_tiled[] = { { "conv.tile", 10, lower_conv_tile } };
static const struct strategy_impl conv_generic[] = { { "conv.generic", 0, lower_conv } };

static const struct strategy_spec conv_specs[] = {
	{ "1-D/2-D, 1x1, stride 1, no padding", cond_conv_1x1, conv_1x1, 1 },
	{ "1-D/2-D, depthwise (group == C == M)", cond_conv_dw, conv_dw, 1 },
	{ "1-D/2-D", cond_conv_tile, conv_tiled, 1 },
	{ "always", NULL, conv_generic, 1 },
};

static const struct op_strategy conv_strategy = { OP_CONV, conv_specs, 4 };

const struct op_strategy *const opencl_strategies[] = {
	&matmul_strategy,
	&gemm_strategy,
	&conv_strategy,
	NULL,
};
