/*
 * c_strategies.c - the c target's op strategies (core/target/strategy.h):
 *
 *   MatMul  float32, static K and N, one B, batch * M >= 16 && K > 16
 *                              matmul.micro     rt_cgemm.h's register tiles,
 *                                               B packed at compile time
 *                                               when constant
 *           float32, static K and N, M >= 16 && K > 16
 *                              matmul.micro     a batch of B: each packed
 *                                               at run time, one rt_cgemm
 *                                               per matrix
 *           float32, static K and N, one float16 or bfloat16 constant B
 *           widened, K > 16
 *                              matmul.gemv16    fewer rows: rt_cgemm16, the
 *                                               GEMV form over B packed in
 *                                               its 16 bits (half the bytes)
 *           float32, static K and N, one constant B, K > 16
 *                              matmul.gemv      fewer rows (a decode
 *                                               step's): rt_cgemm, whose
 *                                               GEMV form streams the
 *                                               panels once for <= 4 rows,
 *                                               threads over panel runs
 *           M >= 16 && K > 16  matmul.packed    B packed into scratch as
 *                                               16-column panels, 4x16 tiles
 *                              (matmul.blocked) column blocks of B reused
 *                                               across every row
 *           K > 16             matmul.ikj       rows streamed: a[i,k] * b[k,:]
 *                              (matmul.packed)  packing does not pay off yet
 *           always             matmul.ijk       one dot product per output
 *   Gemm    float32, static K and N
 *                              gemm.micro       rt_cgemm.h, C as its bias
 *           always             gemm.dot         one dot product per output
 *   Conv    depthwise, float32, 2-D, static image, <= 64 taps, output
 *           rows < 32 or column stride 1, the window's padded rows <= 1024
 *           vectors (unless the target's -dwvec=0)
 *                              conv.depthwise_vec  rt_cdw.h: 16 or 8
 *                                               channels a vector, input
 *                                               rows transposed into a
 *                                               padded strip
 *           depthwise, 2-D, static image, <= 64 taps
 *                              conv.depthwise_rows  per output row, a
 *                                               unit-stride loop per
 *                                               kernel row
 *           depthwise          conv.depthwise   one input channel per output
 *           float32, 3x3, stride 1, group 1, constant weights, C, M >= 16,
 *           >= 16 tiles of 4x4 (unless the target's -winograd=0)
 *                              conv.winograd    rt_cwino.h: F(4x4, 3x3), 36
 *                                               GEMMs over the channels per
 *                                               16 tiles, U transformed at
 *                                               compile time
 *           float32, 1x1, stride 1, no pad, group 1, constant weights,
 *           static image of 3 to 63 pixels, or 64 to 255 with C >= 256,
 *           not a multiple of 16 (unless the target's -chan=0)
 *                              conv.1x1_chan    rt_cpw.h: tiles of output
 *                                               channels a vector x pixels
 *                                               broadcast, weights packed
 *           float32, 1x1, stride 1, no pad, group 1, static image
 *                              conv.1x1_tiles   rt_cpw.h: register tiles of
 *                                               output channels x pixels
 *                                               over the image in place
 *           float32, static image, C/group * kernel >= 64 && M/group >= 32
 *                              conv.micro       rt_cconv.h: im2col a panel
 *                                               of rt_cgemm.h at a time,
 *                                               multiplied while in cache
 *           1x1, stride 1, no pad, group 1
 *                              conv.1x1         a matmul over the pixels
 *           float32, static image, C/group * kernel >= 8 && M/group >= 4
 *                              conv.im2col_tiles  patches copied into
 *                                               scratch, then rt_cpw.h's
 *                                               tiles per group
 *           C/group * kernel >= 8 && M/group >= 4
 *                              conv.im2col      patches copied into scratch,
 *                              (conv.direct)    then a blocked GEMM per group
 *           always             conv.direct      the generic loop nest
 *   MaxPool uint8 or int8, 1-D or 2-D, static image
 *                              maxpool.q8rows   rt_cqpool.h: rt_cpool.h's
 *                                               rows on bytes (int8 as
 *                                               x ^ 0x80), a byte max
 *           float32, 1-D or 2-D, static image
 *                              maxpool.vrows    rt_cpool.h: per output row
 *                                               the window's rows reduced
 *                                               into a padded buffer, then
 *                                               a unit-stride loop per tap
 *                                               over its stride phases
 *           2-D, static image, <= 64 taps
 *                              maxpool.rows     conv.depthwise_rows' form
 *           always             maxpool.window   the op's own lowering
 *   AveragePool
 *           float32, 1-D or 2-D, static image
 *                              averagepool.vrows  rt_cpool.h, as MaxPool
 *           always             averagepool.window the op's own lowering
 *   GlobalAveragePool
 *           float32, no prologue
 *                              globalaveragepool.rows  rt_crows.h: a plane
 *                                               a row, summed in lanes
 *           always             globalaveragepool.loops  the op's own lowering
 *   Softmax, LogSoftmax
 *           float32, along the last axis
 *                              softmax.rows     rt_crows.h: vector max and
 *                                               sum in lanes, clamped exp
 *           always             softmax.loops    the op's own lowering
 *   Transpose
 *           float32, the last axis moved
 *                              transpose.blocks rt_cvec.h: a matrix per
 *                                               index of the other axes,
 *                                               16 x 16 (8 x 8) squares
 *                                               transposed in registers
 *           always             transpose.loops  the op's own lowering
 *   Attention
 *           float32, a float32 or bool mask reaching every key (or
 *           none), no softcap, qk_matmul_output, nonpad_kv_seqlen nor window
 *                              attention.rows   rt_crows.h: per query row
 *                                               the scores in blocks of
 *                                               1024 keys (vector dot
 *                                               products), an online
 *                                               softmax, V summed in
 *                                               vectors
 *           always             attention.loops  the op's own lowering
 *   LayerNormalization
 *           float32, scale and bias over the normalised axes
 *                              layernorm.rows   rt_crows.h: mean and
 *                                               variance summed in lanes
 *           always             layernorm.loops  the op's own lowering
 *   RMSNormalization
 *           float32, scale over the normalised axes
 *                              rmsnorm.rows     rt_crows.h: the mean of the
 *                                               squares summed in lanes
 *           always             rmsnorm.loops    the op's own lowering
 *   MatMulInteger, QLinearMatMul
 *           constant B, static K and N
 *                              matmulinteger.gemm, qlinearmatmul.gemm
 *                                               rt_cquant.h: 8-bit GEMM,
 *                                               B packed at compile time
 *           always             matmulinteger.loops, qlinearmatmul.loops
 *                                               the op's own lowering
 *   ConvInteger, QLinearConv
 *           constant weights, 1-D or 2-D, static image
 *                              convinteger.gemm, qlinearconv.gemm
 *                                               rt_cquant.h: im2col of
 *                                               the pixels as A, the
 *                                               weights packed at compile
 *                                               time as B, written NCHW
 *           always             convinteger.loops, qlinearconv.loops
 *                                               the op's own lowering
 *   QuantizeLinear
 *           float32 to uint8, per tensor
 *                              quantizelinear.vec rt_cquant.h: the vector
 *                                               loop of dynquantize.vec
 *           always             quantizelinear.loops the op's own lowering
 *   QLinearAdd
 *           a and b each y's shape or one element
 *                              qlinearadd.vec   rt_cquant.h: 8 lanes of
 *                                               two fmas in double
 *           always             qlinearadd.loops the op's own lowering
 *   QLinearAveragePool
 *           1-D or 2-D, static image
 *                              qlinearaveragepool.rows  rt_cqpool.h: int32
 *                                               column sums, one
 *                                               requantization an output
 *           always             qlinearaveragepool.loops the op's own lowering
 *   QLinearGlobalAveragePool
 *           x its own buffer   qlinearglobalaveragepool.rows  rt_cqpool.h:
 *                                               a plane's int32 sum
 *           always             qlinearglobalaveragepool.loops the op's own
 *                                               lowering
 *   QLinearConcat
 *           every X its own buffer
 *                              qlinearconcat.copy rt_cqpool.h: a copy per
 *                                               input, or a 256-byte table
 *                                               where it is requantized
 *           always             qlinearconcat.loops the op's own lowering
 *   DynamicQuantizeLinear
 *           float32            dynquantize.vec  rt_cquant.h: min/max in
 *                                               lanes, vector quantize
 *           always             dynquantize.loops the op's own lowering
 *   MatMulNBits
 *           4 bits             matmulnbits.gemm rt_cnbits.h: B read 4-bit
 *                                               as the model packs it,
 *                                               unpacked in registers (few
 *                                               rows) or into a float panel
 *                                               in L1 for rt_cgemm.h's tiles
 *           always             matmulnbits.loops the op's own lowering
 *
 * In parentheses: the implementations that lose on plevel (measured at one
 * thread). With a symbolic M (a symbolic batch) MatMul gets all three
 * specializations as variants and a run-time dispatcher; Conv's conditions
 * are static.
 */
#include "../backends.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/target/strategy.h"
#include "../../runtime/rt_wino.h"
#include "rt_cipack.h"

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
	return strategy_and(L, tir_bin(L->b, BIN_GE, matmul_m(L), tir_int(L->b, 16)),
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

/*
 * Packed: B is copied into scratch as panels of NR columns, zero padded,
 * panel-major (Bp[jp][k][jj]), so the K x NR panel under a tile of MR rows
 * of y is contiguous and its inner loop has a constant extent the C
 * compiler vectorises. A B without batch dims is packed once for every
 * batch; else each matrix in turn (batches serial). With a symbolic K or N
 * it is matmul.blocked's loop nest (no constant panel size to plan).
 */
#define MR 4		/* rows of a tile */
#define NR 16		/* columns of a panel */

static bool batch_is_one(const struct shape *s)
{
	struct dim d;

	return shape_numel(s, &d) && dim_is_const(d) && d.c == 1;
}

/* bp[(jp * K + k) * NR + jj] = b[bb + k * N + jp * NR + jj] or 0 past N. */
static void matmul_pack(struct lower *L, struct tir_buf *bp, struct tir *bb, int64_t K,
			int64_t N)
{
	struct tir_builder *b = L->b;
	struct tir *jp, *k, *jj, *j, *v;

	jp = tir_loop(b, tir_int(b, (N + NR - 1) / NR));
	tir_mark_parallel(b);
	k = tir_loop(b, tir_int(b, K));
	jj = tir_loop(b, tir_int(b, NR));
	j = tir_let(b, "j", tir_add(b, tir_mul(b, jp, tir_int(b, NR)), jj));
	v = tir_load(b, L->in[1], tir_add(b, bb, tir_add(b, tir_mul(b, k, tir_int(b, N)), j)));
	if (N % NR)
		v = tir_select(b, tir_bin(b, BIN_LT, j, tir_int(b, N)), v,
			       tir_const(b, lower_in(L, 1)->dtype, 0));
	tir_store(b, bp, tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, jp, tir_int(b, K)), k),
					    tir_int(b, NR)), jj), v);
	lower_end_loops(L, 3);
}

/* One tile: MR full rows from i0 and a full panel jp (j0 = jp * NR). */
static void matmul_tile(struct lower *L, struct tir_buf *bp, struct tir *ba, struct tir *yb,
			struct tir *i0, struct tir *jp, int64_t K, int64_t N)
{
	struct tir_builder *b = L->b;
	enum dtype t = lower_out(L, 0)->dtype;
	struct tir *row[MR], *a[MR], *k, *jj, *pk;

	for (int r = 0; r < MR; r++)
		row[r] = tir_let(b, "yrow", tir_add(b, yb, tir_add(b, tir_mul(b, tir_add(b, i0,
						tir_int(b, r)), tir_int(b, N)), tir_mul(b, jp,
						tir_int(b, NR)))));
	jj = tir_loop(b, tir_int(b, NR));
	for (int r = 0; r < MR; r++)
		tir_store(b, L->out[0], tir_add(b, row[r], jj), tir_const(b, t, 0));
	tir_end(b);
	k = tir_loop(b, tir_int(b, K));
	for (int r = 0; r < MR; r++)
		a[r] = tir_let(b, "a", tir_load(b, L->in[0], tir_add(b, ba, tir_add(b,
					tir_mul(b, tir_add(b, i0, tir_int(b, r)), tir_int(b, K)), k))));
	pk = tir_let(b, "pk", tir_mul(b, tir_add(b, tir_mul(b, jp, tir_int(b, K)), k),
				      tir_int(b, NR)));
	jj = tir_loop(b, tir_int(b, NR));
	for (int r = 0; r < MR; r++)
		tir_store(b, L->out[0], tir_add(b, row[r], jj),
			  tir_add(b, tir_load(b, L->out[0], tir_add(b, row[r], jj)),
				  tir_mul(b, a[r], tir_load(b, bp, tir_add(b, pk, jj)))));
	tir_end(b);
	tir_end(b);
}

/* The rest: rows [i0, i0 + mr) x panel jp's columns below N, dot products. */
static void matmul_edge(struct lower *L, struct tir_buf *bp, struct tir *ba, struct tir *yb,
			struct tir *i0, struct tir *mr, struct tir *jp, int64_t K, int64_t N)
{
	struct tir_builder *b = L->b;
	enum dtype t = lower_out(L, 0)->dtype;
	struct tir *r, *jj, *k, *acc, *j0, *i;

	j0 = tir_let(b, "j0", tir_mul(b, jp, tir_int(b, NR)));
	r = tir_loop(b, mr);
	i = tir_let(b, "i", tir_add(b, i0, r));
	jj = tir_loop(b, tir_bin(b, BIN_MIN, tir_int(b, NR), tir_bin(b, BIN_SUB, tir_int(b, N), j0)));
	acc = tir_let(b, "acc", tir_const(b, t, 0));
	k = tir_loop(b, tir_int(b, K));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b,
		   tir_load(b, L->in[0], tir_add(b, ba, tir_add(b, tir_mul(b, i, tir_int(b, K)), k))),
		   tir_load(b, bp, tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, jp, tir_int(b, K)), k),
						      tir_int(b, NR)), jj)))));
	tir_end(b);
	tir_store(b, L->out[0], tir_add(b, yb, tir_add(b, tir_mul(b, i, tir_int(b, N)),
						       tir_add(b, j0, jj))), acc);
	lower_end_loops(L, 2);
}

static int lower_matmul_packed(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct tir *bidx[MAX_RANK], *ba, *bb, *yb, *ib, *i0, *mr, *jp, *M, *full;
	struct tir_buf *bp;
	int64_t K, N, np;
	bool shared;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	if (!dim_is_const(mg.K) || !dim_is_const(mg.N))
		return lower_matmul_blocked(L);	/* panels need a constant size */
	K = mg.K.c;
	N = mg.N.c;
	np = (N + NR - 1) / NR;
	bp = lower_scratch(L, lower_in(L, 1)->dtype, dim_const(np * NR * K));
	M = tir_dim(b, mg.M);
	shared = batch_is_one(&mg.batch_b);
	if (shared) {
		/*
		 * One B for the whole batch: A's matrices are consecutive rows, so
		 * the batch folds into M and every row block is one parallel loop
		 */
		matmul_pack(L, bp, tir_int(b, 0), K, N);
		M = tir_mul(b, lower_numel(L, &mg.batch), M);
		ba = tir_int(b, 0);
		yb = tir_int(b, 0);
	} else {
		lower_loops(L, &mg.batch, bidx);
		matmul_bases(L, &mg, bidx, &ba, &bb);
		ba = tir_let(b, "ba", ba);
		yb = tir_let(b, "yb", tir_mul(b, lower_offset(L, &mg.batch, bidx),
					      tir_mul(b, M, tir_int(b, N))));
		matmul_pack(L, bp, tir_let(b, "bb", bb), K, N);
	}
	ib = tir_loop(b, tir_bin(b, BIN_DIV, tir_add(b, M, tir_int(b, MR - 1)), tir_int(b, MR)));
	tir_mark_parallel(b);
	i0 = tir_let(b, "i0", tir_mul(b, ib, tir_int(b, MR)));
	mr = tir_let(b, "mr", tir_bin(b, BIN_MIN, tir_int(b, MR), tir_bin(b, BIN_SUB, M, i0)));
	jp = tir_loop(b, tir_int(b, np));
	full = tir_bin(b, BIN_EQ, mr, tir_int(b, MR));
	if (N % NR)
		full = tir_bin(b, BIN_LAND, full, tir_bin(b, BIN_LT, jp, tir_int(b, N / NR)));
	tir_if(b, full);
	matmul_tile(L, bp, ba, yb, i0, jp, K, N);
	tir_else(b);
	matmul_edge(L, bp, ba, yb, i0, mr, jp, K, N);
	tir_end(b);
	tir_end(b);
	tir_end(b);
	if (!shared)
		lower_end_loops(L, mg.batch.rank);
	return 0;
}


/*
 * The micro-kernel GEMM of rt_cgemm.h (pasted as the prelude): register
 * tiles of RT_CG_MR x 16 over B packed into 16-column panels. A constant B
 * is packed here, at compile time, into a constant buffer of the kernel
 * (the weights blob), or, where the blob holds B as it is anyway (another
 * variant of the kernel reads it) or the panels' padding makes it larger,
 * by the model when it opens (rt_cgemm_pack_const; core/emit/plan.c); any
 * other B is packed into scratch on every run.
 */
#define CG_NR 16	/* RT_CG_NR: the panel width of the packed layout */

/* Panel layout of a [K, N] matrix: elements, zero padded to whole panels. */
static int64_t cg_packed_numel(int64_t K, int64_t N)
{
	return (N + CG_NR - 1) / CG_NR * CG_NR * K;
}

/*
 * B[k, j] = src[k * brs + j * bcs] (params K, N, brs, bcs), elements of es
 * bytes, into rt_cgemm's panels (zero past N).
 */
static inline void cg_pack_elems(void *dst, const void *src, const int64_t *params, size_t es)
{
	const char *data = src;
	char *bp = dst;
	int64_t K = params[0], N = params[1], brs = params[2], bcs = params[3];

	for (int64_t jp = 0; jp < (N + CG_NR - 1) / CG_NR; jp++)
		for (int64_t k = 0; k < K; k++)
			for (int64_t jj = 0; jj < CG_NR; jj++) {
				int64_t j = jp * CG_NR + jj;
				char *d = bp + (size_t)((jp * K + k) * CG_NR + jj) * es;

				if (j < N)
					memcpy(d, data + (size_t)(k * brs + j * bcs) * es, es);
				else
					memset(d, 0, es);
			}
}

/* Fills cg_pack_const's buffer: params K, N, brs, bcs. */
static void cg_pack_fill(void *dst, const void *src, const int64_t *params)
{
	cg_pack_elems(dst, src, params, sizeof(float));
}

/*
 * B[k, j] = data[k * brs + j * bcs] packed as rt_cgemm_pack does (the
 * graph's, once per graph and kind), filled only where the blob holds it
 * (graph_derived_lazy), or made by rt_fn (a prelude's) when the model
 * opens, where the blob has B anyway.
 */
static struct tir_buf *cg_pack_const_as(struct lower *L, const float *data, int64_t K,
					int64_t N, int64_t brs, int64_t bcs, const char *kind,
					const char *rt_fn)
{
	const int64_t params[] = { K, N, brs, bcs };
	float *bp = graph_derived_lazy(L->g, data, kind, params, ARRAY_SIZE(params),
				       sizeof(float) * (size_t)(cg_packed_numel(K, N) + 1),
				       cg_pack_fill);

	graph_derived_open(L->g, bp, rt_fn);
	return lower_const(L, DTYPE_F32, cg_packed_numel(K, N), bp);
}

/* cg_pack_const_as for rt_cgemm (rt_cgemm.h packs it at open) */
static struct tir_buf *cg_pack_const(struct lower *L, const float *data, int64_t K, int64_t N,
				     int64_t brs, int64_t bcs)
{
	return cg_pack_const_as(L, data, K, N, brs, bcs, "cgemm.pack", "rt_cgemm_pack_const");
}

/*
 * The packed B of input 1 ([K, N] from element bb, (k, j) at bb + k * brs +
 * j * bcs): constant (bb 0), or scratch filled by rt_cgemm_pack at run time.
 */
static struct tir_buf *cg_pack_b(struct lower *L, struct tir *bb, int64_t K, int64_t N,
				 int64_t brs, int64_t bcs)
{
	struct tir_builder *b = L->b;
	const struct value *bv = lower_in(L, 1);
	struct tir_buf *bp;
	struct tir *args[6];

	if (bv->data)
		return cg_pack_const(L, bv->data, K, N, brs, bcs);
	bp = lower_scratch(L, DTYPE_F32, dim_const(cg_packed_numel(K, N)));
	args[0] = tir_int(b, K);
	args[1] = tir_int(b, N);
	args[2] = tir_addr(b, L->in[1], bb);
	args[3] = tir_int(b, brs);
	args[4] = tir_int(b, bcs);
	args[5] = tir_addr(b, bp, tir_int(b, 0));
	tir_extern(b, "rt_cgemm_pack", args, 6);
	return bp;
}

/*
 * What of the fused epilogue rt_cgemm's write-back applies (rt_cgemm.h):
 * a residual Add, then a Relu or a Clip with constant bounds.
 */
struct cg_epi {
	int act;			/* enum rt_cg_act: 0 none, 1 Relu, 2 Clip */
	double lo, hi;			/* the Clip's bounds */
	struct tir_buf *res;		/* the residual (the output's layout), or NULL */
};

/*
 * Whether L's fused epilogue is [Add(anchor, residual)] [Relu | Clip]
 * (lower_res_act) on float32, storing nothing but its result (no prologue
 * either), the residual one of the kernel's buffers: then *e says what,
 * and L->epi_done tells lower_with to leave out its loop, as rt_cgemm
 * applies it to each tile in registers on write-back (the loop was one
 * more pass over the whole output). Else *e is all none.
 */
static bool cg_take_epilogue(struct lower *L, struct cg_epi *e)
{
	const struct lower_epilogue *ep = L->epi;
	struct lower_res_act m;

	memset(e, 0, sizeof(*e));
	if (!ep || ep->n < 1 || ep->n > 2 || ep->n_pro || ep->n_stored || ep->keep_anchor ||
	    L->g->values.v[ep->anchor_out].dtype != DTYPE_F32 ||
	    !lower_res_act(L->g, ep->nodes, ep->n, ep->anchor_out, &m) ||
	    (m.res >= 0 && (!L->ebuf || !L->ebuf[m.res])))
		return false;
	e->act = m.act;
	e->lo = m.lo;
	e->hi = m.hi;
	e->res = m.res >= 0 ? L->ebuf[m.res] : NULL;
	L->epi_done = true;
	return true;
}

struct cg_call {
	struct tir *M;			/* rows of C (may be symbolic) */
	int64_t N, K;
	double alpha, beta;
	struct tir *a;			/* &A[0, 0] */
	int64_t ars, acs;		/* A's row and column strides */
	struct tir *bp;			/* &first panel */
	int64_t bps;			/* floats between panels */
	struct tir *c;			/* &C[0, 0] */
	int64_t ldc;
	struct tir *bias;		/* &bias(0, 0), or NULL */
	int64_t brs, bcs;
};

/*
 * call_extern rt_cgemm(...): C = act(alpha A x B + beta bias + res) with
 * the part of L's epilogue cg_take_epilogue lets rt_cgemm apply (the
 * residual at C's offset and stride), or none.
 */
static void cg_gemm(struct lower *L, const struct cg_call *c)
{
	struct tir_builder *b = L->b;
	struct tir *args[20];
	struct cg_epi e;
	int n = 0;

	cg_take_epilogue(L, &e);

	args[n++] = c->M;
	args[n++] = tir_int(b, c->N);
	args[n++] = tir_int(b, c->K);
	args[n++] = tir_flt(b, DTYPE_F32, c->alpha);
	args[n++] = c->a;
	args[n++] = tir_int(b, c->ars);
	args[n++] = tir_int(b, c->acs);
	args[n++] = c->bp;
	args[n++] = tir_int(b, c->bps);
	args[n++] = c->c;
	args[n++] = tir_int(b, c->ldc);
	args[n++] = c->bias ? c->bias : tir_int(b, 0);	/* 0: a null pointer */
	args[n++] = tir_int(b, c->brs);
	args[n++] = tir_int(b, c->bcs);
	args[n++] = tir_flt(b, DTYPE_F32, c->beta);
	args[n++] = tir_int(b, e.act);
	args[n++] = tir_flt(b, DTYPE_F32, e.lo);
	args[n++] = tir_flt(b, DTYPE_F32, e.hi);
	/* C's address is &out[off]: the residual's is &res[off] */
	args[n++] = e.res ? tir_addr(b, e.res, c->c->a) : tir_int(b, 0);
	args[n++] = tir_int(b, c->ldc);
	tir_extern(b, "rt_cgemm", args, n);
}

/* float32, K and N static (B one matrix shared by the whole batch, or a batch of them). */
static bool matmul_micro_ok(struct lower *L)
{
	struct matmul_geom mg;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	return lower_in(L, 0)->dtype == DTYPE_F32 && lower_in(L, 1)->dtype == DTYPE_F32 &&
	       dim_is_const(mg.K) && dim_is_const(mg.N);
}

/* B is one matrix for the whole batch (the batch folds into M). */
static bool matmul_b_shared(struct lower *L)
{
	struct matmul_geom mg;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	return batch_is_one(&mg.batch_b);
}

/*
 * One B: A's batch folds into M (A's matrices are consecutive rows), one
 * rt_cgemm over every row. A batch of B (attention's Q K^T and P V): per
 * matrix of the batch, in turn, B packed into scratch and one rt_cgemm,
 * whose threads split the panels.
 */
static int lower_matmul_micro(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct cg_call c = { 0 };
	struct tir *bidx[MAX_RANK], *ba, *bb;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	if (!matmul_micro_ok(L))
		BUG("matmul.micro on shapes it does not take");
	c.K = mg.K.c;
	c.N = mg.N.c;
	c.alpha = 1.0;
	c.ars = c.K;
	c.acs = 1;
	c.bps = c.K * CG_NR;
	c.ldc = c.N;
	if (matmul_b_shared(L)) {
		c.M = tir_mul(b, lower_numel(L, &mg.batch), tir_dim(b, mg.M));
		c.a = tir_addr(b, L->in[0], tir_int(b, 0));
		c.bp = tir_addr(b, cg_pack_b(L, tir_int(b, 0), c.K, c.N, c.N, 1), tir_int(b, 0));
		c.c = tir_addr(b, L->out[0], tir_int(b, 0));
		cg_gemm(L, &c);
		return 0;
	}
	lower_loops(L, &mg.batch, bidx);
	matmul_bases(L, &mg, bidx, &ba, &bb);
	c.M = tir_dim(b, mg.M);
	c.a = tir_addr(b, L->in[0], tir_let(b, "ba", ba));
	c.bp = tir_addr(b, cg_pack_b(L, tir_let(b, "bb", bb), c.K, c.N, c.N, 1), tir_int(b, 0));
	c.c = tir_addr(b, L->out[0], tir_let(b, "yb", tir_mul(b, lower_offset(L, &mg.batch, bidx),
							       tir_mul(b, c.M, tir_int(b, c.N)))));
	cg_gemm(L, &c);
	lower_end_loops(L, mg.batch.rank);
	return 0;
}

/* B's 16-bit source when B is a constant the model widens when it opens, else NULL. */
static const void *widened16_source(struct lower *L, bool *bf)
{
	return graph_widened16_of(L->g, lower_in(L, 1)->data, bf);
}

/* Fills lower_matmul_gemv16's 16-bit panels: params K, N, brs, bcs. */
static void cg_pack16_fill(void *dst, const void *src, const int64_t *params)
{
	cg_pack_elems(dst, src, params, sizeof(uint16_t));
}

/*
 * matmul.gemv16: fewer than 16 rows by a float16 or bfloat16 constant B,
 * rt_cgemm16's GEMV form on B packed in its own 16 bits (made from the
 * model's 16-bit weights when it opens; the widened copy is not made
 * unless another kernel reads it): half the bytes a decode step streams.
 * The epilogue, if any, is the generic loop after it.
 */
static int lower_matmul_gemv16(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct matmul_geom mg;
	struct tir *args[12];
	const void *src;
	int64_t K, N, params[4];
	uint16_t *bp;
	bool bf = false;
	int n = 0;

	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	if (!matmul_micro_ok(L) || !matmul_b_shared(L) || !(src = widened16_source(L, &bf)))
		BUG("matmul.gemv16 on a B it does not take");
	K = mg.K.c;
	N = mg.N.c;
	params[0] = K;
	params[1] = N;
	params[2] = N;
	params[3] = 1;
	bp = graph_derived_lazy(L->g, src, "cgemm.pack16", params, ARRAY_SIZE(params),
				sizeof(uint16_t) * (size_t)(cg_packed_numel(K, N) + 1), cg_pack16_fill);
	graph_derived_open(L->g, bp, "rt_cgemm_pack16_const");
	args[n++] = tir_mul(b, lower_numel(L, &mg.batch), tir_dim(b, mg.M));
	args[n++] = tir_int(b, N);
	args[n++] = tir_int(b, K);
	args[n++] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[n++] = tir_int(b, K);
	args[n++] = tir_int(b, 1);
	args[n++] = tir_addr(b, lower_const(L, bf ? DTYPE_BF16 : DTYPE_F16,
					     cg_packed_numel(K, N), bp), tir_int(b, 0));
	args[n++] = tir_int(b, K * CG_NR);
	args[n++] = tir_int(b, bf);
	args[n++] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[n++] = tir_int(b, N);
	tir_extern(b, "rt_cgemm16", args, n);
	return 0;
}

static const struct strategy_impl matmul_blocked[] = {
	{ "matmul.packed", 30, lower_matmul_packed },
	{ "matmul.blocked", 20, lower_matmul_blocked },
};
static const struct strategy_impl matmul_ikj[] = {
	{ "matmul.ikj", 10, lower_matmul_ikj },
	{ "matmul.packed", 5, lower_matmul_packed },
};
static const struct strategy_impl matmul_ijk[] = { { "matmul.ijk", 0, lower_matmul } };
static const struct strategy_impl matmul_micro[] = { { "matmul.micro", 40, lower_matmul_micro } };
/* the same call: rt_cgemm's GEMV form takes rows <= RT_CG_GV_MR */
static const struct strategy_impl matmul_gemv[] = { { "matmul.gemv", 40, lower_matmul_micro } };
static const struct strategy_impl matmul_gemv16[] = {
	{ "matmul.gemv16", 40, lower_matmul_gemv16 },
};

/* rows of every matrix of A together >= 16 && K > 16: the batch folds into M */
static struct tir *cond_micro_large(struct lower *L)
{
	struct matmul_geom mg;
	struct tir *rows;

	if (!matmul_micro_ok(L) || !matmul_b_shared(L))
		return strategy_static(L, false);
	matmul_geometry(lower_in(L, 0), lower_in(L, 1), &mg);
	rows = tir_mul(L->b, lower_numel(L, &mg.batch), tir_dim(L->b, mg.M));
	return strategy_and(L, tir_bin(L->b, BIN_GE, rows, tir_int(L->b, 16)), cond_k_gt_16(L));
}

/* a batch of B, M >= 16 && K > 16: B packed matrix by matrix */
static struct tir *cond_micro_batched(struct lower *L)
{
	return strategy_and(L, strategy_static(L, matmul_micro_ok(L) && !matmul_b_shared(L)),
			    cond_large(L));
}

/*
 * Fewer rows than that, one constant B (packed once, at compile time or
 * when the model opens) and K > 16: a decode step's projections. Any other
 * B would be packed on every run, a pass over it as long as the product.
 */
static struct tir *cond_gemv(struct lower *L)
{
	return strategy_and(L, strategy_static(L, matmul_micro_ok(L) && matmul_b_shared(L) &&
					       lower_in(L, 1)->data), cond_k_gt_16(L));
}

/* the same with B a float16 or bfloat16 constant widened at open: its 16 bits are read */
static struct tir *cond_gemv16(struct lower *L)
{
	bool bf;

	return strategy_and(L, strategy_static(L, matmul_micro_ok(L) && matmul_b_shared(L) &&
					       widened16_source(L, &bf)), cond_k_gt_16(L));
}

/* "M >= 16 && K > 16" where matmul.micro does not take the shapes */
static struct tir *cond_large_other(struct lower *L)
{
	return strategy_and(L, strategy_static(L, !matmul_micro_ok(L)), cond_large(L));
}

static const struct strategy_spec matmul_specs[] = {
	{ "float32, static K and N, one B, batch * M >= 16 && K > 16", cond_micro_large, matmul_micro,
	  ARRAY_SIZE(matmul_micro) },
	{ "float32, static K and N, M >= 16 && K > 16", cond_micro_batched, matmul_micro,
	  ARRAY_SIZE(matmul_micro) },
	{ "float32, static K and N, one float16 or bfloat16 constant B widened, K > 16",
	  cond_gemv16, matmul_gemv16, ARRAY_SIZE(matmul_gemv16) },
	{ "float32, static K and N, one constant B, K > 16", cond_gemv, matmul_gemv,
	  ARRAY_SIZE(matmul_gemv) },
	{ "M >= 16 && K > 16", cond_large_other, matmul_blocked, ARRAY_SIZE(matmul_blocked) },
	{ "K > 16", cond_k_gt_16, matmul_ikj, ARRAY_SIZE(matmul_ikj) },
	{ "always", NULL, matmul_ijk, ARRAY_SIZE(matmul_ijk) },
};

static const struct op_strategy matmul_strategy = {
	OP_MATMUL, matmul_specs, ARRAY_SIZE(matmul_specs)
};

/* ---- Gemm ---- */

/* float32 with static K and N (M, the batch, may be symbolic). */
static bool gemm_micro_ok(struct lower *L)
{
	const struct value *a = lower_in(L, 0), *bv = lower_in(L, 1), *c = lower_in(L, 2);
	bool ta = node_attr_int(L->n, "transA", 0), tb = node_attr_int(L->n, "transB", 0);

	if (a->dtype != DTYPE_F32 || bv->dtype != DTYPE_F32 || (c && c->dtype != DTYPE_F32))
		return false;
	return dim_is_const(a->shape.d[ta ? 0 : 1]) && dim_is_const(bv->shape.d[tb ? 0 : 1]) &&
	       (!ta || dim_is_const(a->shape.d[1]));
}

/* C's broadcast strides over Y [M, N]: 0 where C has extent 1 (or no dim). */
static void gemm_bias_strides(const struct value *c, int64_t N, int64_t *brs, int64_t *bcs)
{
	struct dim one = dim_const(1);
	const struct dim *d = c->shape.d;

	*brs = *bcs = 0;
	if (c->shape.rank == 1) {
		*bcs = dim_eq(d[0], one) ? 0 : 1;
	} else if (c->shape.rank == 2) {
		*bcs = dim_eq(d[1], one) ? 0 : 1;
		*brs = dim_eq(d[0], one) ? 0 : (*bcs ? N : 1);
	}
}

/* Y = alpha op(A) op(B) + beta C: one rt_cgemm, C its broadcast bias. */
static int lower_gemm_micro(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *a = lower_in(L, 0), *bv = lower_in(L, 1), *cv = lower_in(L, 2);
	bool ta = node_attr_int(L->n, "transA", 0), tb = node_attr_int(L->n, "transB", 0);
	struct cg_call c = { 0 };

	if (!gemm_micro_ok(L))
		BUG("gemm.micro on shapes it does not take");
	c.K = a->shape.d[ta ? 0 : 1].c;
	c.N = bv->shape.d[tb ? 0 : 1].c;
	c.M = tir_dim(b, a->shape.d[ta ? 1 : 0]);
	c.alpha = node_attr_float(L->n, "alpha", 1.0);
	c.beta = node_attr_float(L->n, "beta", 1.0);
	c.a = tir_addr(b, L->in[0], tir_int(b, 0));
	c.ars = ta ? 1 : c.K;
	c.acs = ta ? a->shape.d[1].c : 1;
	c.bp = tir_addr(b, tb ? cg_pack_b(L, tir_int(b, 0), c.K, c.N, 1, c.K) :
				cg_pack_b(L, tir_int(b, 0), c.K, c.N, c.N, 1),
			tir_int(b, 0));
	c.bps = c.K * CG_NR;
	c.c = tir_addr(b, L->out[0], tir_int(b, 0));
	c.ldc = c.N;
	if (cv) {
		c.bias = tir_addr(b, L->in[2], tir_int(b, 0));
		gemm_bias_strides(cv, c.N, &c.brs, &c.bcs);
	}
	cg_gemm(L, &c);
	return 0;
}

static struct tir *cond_gemm_micro(struct lower *L)
{
	return strategy_static(L, gemm_micro_ok(L));
}

static const struct strategy_impl gemm_micro[] = { { "gemm.micro", 10, lower_gemm_micro } };
static const struct strategy_impl gemm_dot[] = { { "gemm.dot", 0, lower_gemm } };

static const struct strategy_spec gemm_specs[] = {
	{ "float32, static K and N", cond_gemm_micro, gemm_micro, ARRAY_SIZE(gemm_micro) },
	{ "always", NULL, gemm_dot, ARRAY_SIZE(gemm_dot) },
};

static const struct op_strategy gemm_strategy = { OP_GEMM, gemm_specs, ARRAY_SIZE(gemm_specs) };

/* ---- Conv ---- */

static struct tir *cond_depthwise(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *w = lower_in(L, 1);
	int64_t group = node_attr_int(L->n, "group", 1);
	bool dw = group > 1 && dim_is_const(x->shape.d[1]) && x->shape.d[1].c == group &&
		  w->shape.d[0].c == group && w->shape.d[1].c == 1;

	return strategy_static(L, dw);
}

/* The pixels of an image of x [N, C, ...]; 0 where a spatial dim is symbolic. */
static int64_t image_pixels(const struct value *x)
{
	int64_t P = 1;

	for (int i = 2; i < x->shape.rank; i++)
		P *= dim_is_const(x->shape.d[i]) ? x->shape.d[i].c : 0;
	return P;
}

static struct tir *cond_1x1(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *w = lower_in(L, 1);
	bool ok = w->shape.rank == 4 && w->shape.d[2].c == 1 && w->shape.d[3].c == 1 &&
		  node_attr_int(L->n, "group", 1) == 1 && window_unit_stride_no_pad(L->n);

	/* the blocked GEMM needs constant channels and pixels (a batch may vary) */
	for (int i = 1; i < x->shape.rank; i++)
		ok &= dim_is_const(x->shape.d[i]);
	return strategy_static(L, ok);
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
		xi[i + 2] = lower_window_pos(L, &w, i, oi[i + 2], ki[i], &cond);
		wi[i + 2] = ki[i];
	}
	if (cond)
		tir_if(b, cond);
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, tir_load(b, L->in[0],
				lower_offset(L, &x->shape, xi)),
				tir_load(b, L->in[1], lower_offset(L, &wt->shape, wi)))));
	if (cond)
		tir_end(b);
	lower_end_loops(L, w.r);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/*
 * im2col: per image, the input patches are copied into a scratch matrix
 * col [C * kernel, pixels] (zeros where the window is in the padding), then
 * each group is a GEMM weights [M/group, C/group * kernel] x col. The GEMM
 * walks pixel blocks of PBLOCK (constant extent: the C compiler vectorises
 * it) and row blocks of KROWS of col, which stay in L1 while every output
 * channel of the group passes over them; rows go four at a time, so each
 * store of y carries four products.
 */
#define PBLOCK 64	/* pixels of a block */
#define KROWS 64	/* rows of col in a block: 64 x 64 floats = 16 KiB */
#define RUNROLL 4	/* rows of col per pass over a pixel block */

struct im2col {
	struct tir *n, *g;		/* image and group */
	struct tir_buf *col;		/* the patch matrix, or a 1x1 conv's input */
	struct tir *base;		/* offset of image n's matrix in col */
	int64_t P, Kc, Mg;		/* pixels, rows of col per group, channels per group */
	int64_t M, C;			/* output and input channels */
};

/* y[yrow + pp] += w[oo, k0 + r] * col[k0 + r, p0 + pp] over r < nk, pp < np. */
static void im2col_rows(struct lower *L, const struct im2col *ic, struct tir *oo,
			struct tir *yrow, struct tir *p0, struct tir *k0, struct tir *nk, int64_t np)
{
	struct tir_builder *b = L->b;
	struct tir *P = tir_int(b, ic->P), *r4, *r, *rr, *pp, *wv[RUNROLL], *sum, *crow, *wrow;

	/* col row (g*Kc + k0) at pixel p0; weights row oo at column k0 */
	crow = tir_let(b, "crow", tir_add(b, ic->base, tir_add(b, tir_mul(b, tir_add(b,
					tir_mul(b, ic->g, tir_int(b, ic->Kc)), k0), P), p0)));
	wrow = tir_let(b, "wrow", tir_add(b, tir_mul(b, oo, tir_int(b, ic->Kc)), k0));
	r4 = tir_loop(b, tir_bin(b, BIN_DIV, nk, tir_int(b, RUNROLL)));
	r = tir_let(b, "r", tir_mul(b, r4, tir_int(b, RUNROLL)));
	for (int u = 0; u < RUNROLL; u++)
		wv[u] = tir_let(b, "w", tir_load(b, L->in[1], tir_add(b, wrow,
								  tir_add(b, r, tir_int(b, u)))));
	pp = tir_loop(b, tir_int(b, np));
	sum = tir_load(b, L->out[0], tir_add(b, yrow, pp));
	for (int u = 0; u < RUNROLL; u++)
		sum = tir_add(b, sum, tir_mul(b, wv[u], tir_load(b, ic->col, tir_add(b, crow,
					tir_add(b, tir_mul(b, tir_add(b, r, tir_int(b, u)), P), pp)))));
	tir_store(b, L->out[0], tir_add(b, yrow, pp), sum);
	tir_end(b);
	tir_end(b);
	/* the rows left over */
	rr = tir_loop(b, tir_bin(b, BIN_MOD, nk, tir_int(b, RUNROLL)));
	r = tir_let(b, "r", tir_add(b, tir_bin(b, BIN_SUB, nk, tir_bin(b, BIN_MOD, nk,
						tir_int(b, RUNROLL))), rr));
	wv[0] = tir_let(b, "w", tir_load(b, L->in[1], tir_add(b, wrow, r)));
	pp = tir_loop(b, tir_int(b, np));
	tir_store(b, L->out[0], tir_add(b, yrow, pp),
		  tir_add(b, tir_load(b, L->out[0], tir_add(b, yrow, pp)),
			  tir_mul(b, wv[0], tir_load(b, ic->col, tir_add(b, crow,
						tir_add(b, tir_mul(b, r, P), pp))))));
	tir_end(b);
	tir_end(b);
}

/* Opens the loop over the group's output channels; *oo and *yrow for pixel p0. */
static void im2col_channel_loop(struct lower *L, const struct im2col *ic, struct tir *p0,
				bool parallel, struct tir **oo, struct tir **yrow)
{
	struct tir_builder *b = L->b;
	struct tir *o = tir_loop(b, tir_int(b, ic->Mg));

	if (parallel)
		tir_mark_parallel(b);
	*oo = tir_let(b, "oo", tir_add(b, tir_mul(b, ic->g, tir_int(b, ic->Mg)), o));
	*yrow = tir_let(b, "yrow", tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, ic->n,
							tir_int(b, ic->M)), *oo), tir_int(b, ic->P)), p0));
}

/* y[n, oo, p0 + pp] = bias[oo] (or 0) for pp < np. */
static void im2col_init(struct lower *L, struct tir *oo, struct tir *yrow, int64_t np)
{
	struct tir_builder *b = L->b;
	struct tir *pp = tir_loop(b, tir_int(b, np));

	tir_store(b, L->out[0], tir_add(b, yrow, pp),
		  L->in[2] ? tir_load(b, L->in[2], oo) : tir_const(b, lower_out(L, 0)->dtype, 0));
	tir_end(b);
}

/*
 * The pixels [p0, p0 + np) of every output channel of the group. A block
 * of KROWS rows of col stays in L1 while every channel passes over it; the
 * last block (alone in a small image) runs channel by channel instead, with
 * the channels in parallel.
 */
static void im2col_gemm_block(struct lower *L, const struct im2col *ic, struct tir *p0,
			      int64_t np, bool channels_outer)
{
	struct tir_builder *b = L->b;
	struct tir *oo, *yrow, *kb, *k0, *nk;
	int64_t nkb = (ic->Kc + KROWS - 1) / KROWS;
	bool epi = L->epi && epilogue_by_span(L->g, L->epi);

	if (channels_outer) {
		im2col_channel_loop(L, ic, p0, true, &oo, &yrow);
		im2col_init(L, oo, yrow, np);
	} else {
		im2col_channel_loop(L, ic, p0, false, &oo, &yrow);
		im2col_init(L, oo, yrow, np);
		tir_end(b);
	}
	kb = tir_loop(b, tir_int(b, nkb));
	k0 = tir_let(b, "k0", tir_mul(b, kb, tir_int(b, KROWS)));
	nk = tir_let(b, "nk", tir_bin(b, BIN_MIN, tir_int(b, KROWS),
				      tir_bin(b, BIN_SUB, tir_int(b, ic->Kc), k0)));
	if (!channels_outer)
		im2col_channel_loop(L, ic, p0, false, &oo, &yrow);
	im2col_rows(L, ic, oo, yrow, p0, k0, nk, np);
	tir_end(b);
	if (!channels_outer && epi) {
		/* the block's pixels of every channel done: the chain while they are in cache */
		tir_end(b);
		im2col_channel_loop(L, ic, p0, false, &oo, &yrow);
		lower_epilogue_span(L, L->epi, L->ebuf, yrow, np);
	} else if (epi) {
		lower_epilogue_span(L, L->epi, L->ebuf, yrow, np);
	}
	tir_end(b);
}

/*
 * col[c*kernel + kidx, pixel] = x[n, c, window position] or 0 in the padding:
 * a 1-D or 2-D float32 window of static extents and leading pads by rt_im2col2d
 * (rt_cvec.h: runs of zeros and copies, threads over rows), any other by
 * a loop nest that tests each position.
 */
static void im2col_copy(struct lower *L, const struct im2col *ic, const struct window *w)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *c, *ki[MAX_RANK], *oi[MAX_RANK], *xi[MAX_RANK], *row, *pix, *cond = NULL;

	if ((w->r == 1 || w->r == 2) && x->dtype == DTYPE_F32 && !w->sym && w->pb[0] >= 0 &&
	    (w->r == 1 || w->pb[1] >= 0)) {
		/* a 1-D window as a 2-D one of one row */
		int h = w->r - 1;
		const int64_t geo[] = { ic->C, h ? w->in[0] : 1, w->in[h], h ? w->k[0] : 1, w->k[h],
					h ? w->s[0] : 1, w->s[h], h ? w->d[0] : 1, w->d[h],
					h ? w->pb[0] : 0, w->pb[h], h ? w->out[0] : 1, w->out[h] };
		struct tir *args[2 + ARRAY_SIZE(geo)];

		args[0] = tir_addr(b, L->in[0], tir_mul(b, ic->n, tir_int(b, ic->C * geo[1] *
									    geo[2])));
		args[1] = tir_addr(b, ic->col, tir_int(b, 0));
		for (size_t i = 0; i < ARRAY_SIZE(geo); i++)
			args[2 + i] = tir_int(b, geo[i]);
		tir_extern_work(b, "rt_im2col2d", args, ARRAY_SIZE(args),
				ic->C * geo[3] * geo[4] * geo[11] * geo[12]);
		return;
	}
	c = tir_loop(b, tir_int(b, ic->C));
	tir_mark_parallel(b);
	row = c;
	for (int i = 0; i < w->r; i++) {
		ki[i] = tir_loop(b, tir_int(b, w->k[i]));
		row = tir_add(b, tir_mul(b, row, tir_int(b, w->k[i])), ki[i]);
	}
	row = tir_let(b, "row", tir_mul(b, row, tir_int(b, ic->P)));
	pix = tir_int(b, 0);
	xi[0] = ic->n;
	xi[1] = c;
	for (int i = 0; i < w->r; i++) {
		oi[i] = tir_loop(b, tir_int(b, w->out[i]));
		pix = tir_add(b, tir_mul(b, pix, tir_int(b, w->out[i])), oi[i]);
		xi[i + 2] = lower_window_pos(L, w, i, oi[i], ki[i], &cond);
	}
	if (cond) {
		tir_store(b, ic->col, tir_add(b, row, pix),
			  tir_select(b, cond, tir_load(b, L->in[0], lower_offset(L, &x->shape, xi)),
				     tir_const(b, x->dtype, 0)));
	} else {
		tir_store(b, ic->col, tir_add(b, row, pix),
			  tir_load(b, L->in[0], lower_offset(L, &x->shape, xi)));
	}
	lower_end_loops(L, 2 * w->r + 1);
}

static void im2col_gemm(struct lower *L, struct im2col *ic, int64_t group);

/*
 * conv.im2col's and conv.im2col_tiles' start: ic's sizes and patch matrix,
 * the loop over the images opened and image ic->n's patches copied; -1 when
 * the window has no plan.
 */
static int im2col_begin(struct lower *L, struct im2col *ic, int64_t group)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t kernel = 1, kern[MAX_RANK];
	struct window w;

	for (int i = 2; i < wt->shape.rank; i++)
		kern[i - 2] = wt->shape.d[i].c;
	if (window_plan(L->g, (struct node *)L->n, &x->shape, kern, false, &w) < 0)
		return -1;
	ic->P = 1;
	for (int i = 0; i < w.r; i++) {
		ic->P *= w.out[i];
		kernel *= w.k[i];
	}
	ic->M = wt->shape.d[0].c;
	ic->Mg = ic->M / group;
	ic->Kc = wt->shape.d[1].c * kernel;
	ic->C = wt->shape.d[1].c * group;
	ic->col = lower_scratch(L, x->dtype, dim_const(ic->C * kernel * ic->P));
	ic->base = tir_int(b, 0);
	ic->n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	im2col_copy(L, ic, &w);
	return 0;
}

static int lower_conv_im2col(struct lower *L)
{
	struct tir_builder *b = L->b;
	int64_t group = node_attr_int(L->n, "group", 1);
	struct im2col ic;

	if (im2col_begin(L, &ic, group) < 0)
		return -1;
	im2col_gemm(L, &ic, group);
	tir_end(b);
	return 0;
}

/* Every group's GEMM of image ic->n, in pixel blocks (the blocks in parallel). */
static void im2col_gemm(struct lower *L, struct im2col *ic, int64_t group)
{
	struct tir_builder *b = L->b;
	int64_t nfull = ic->P / PBLOCK;
	struct tir *pb;

	/* every block applies the fused chain (im2col_gemm_block) when it can */
	if (L->epi && epilogue_by_span(L->g, L->epi))
		L->epi_done = true;
	ic->g = tir_loop(b, tir_int(b, group));
	if (nfull) {
		pb = tir_loop(b, tir_int(b, nfull));
		tir_mark_parallel(b);
		im2col_gemm_block(L, ic, tir_let(b, "p0", tir_mul(b, pb, tir_int(b, PBLOCK))),
				  PBLOCK, false);
		tir_end(b);
	}
	if (ic->P % PBLOCK)
		im2col_gemm_block(L, ic, tir_int(b, nfull * PBLOCK), ic->P % PBLOCK, true);
	tir_end(b);
}

/*
 * 1x1, stride 1, unpadded, group 1: image n's input is already the patch
 * matrix [C, pixels], so it is im2col's blocked GEMM without the copy.
 */
static int lower_conv_1x1(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	struct im2col ic;

	ic.P = 1;
	for (int i = 2; i < x->shape.rank; i++)
		ic.P *= x->shape.d[i].c;
	ic.M = ic.Mg = wt->shape.d[0].c;
	ic.C = ic.Kc = wt->shape.d[1].c;
	ic.col = L->in[0];
	ic.n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	ic.base = tir_let(b, "xbase", tir_mul(b, ic.n, tir_int(b, ic.C * ic.P)));
	im2col_gemm(L, &ic, 1);
	tir_end(b);
	return 0;
}

/*
 * conv.1x1_tiles: the GEMM w[M, C] x[C, pixels] of each image read in place
 * by rt_cpw (rt_cpw.h), whose register tiles keep their sums over all of C;
 * per image and block of pixels (the blocks in parallel) one call, then the
 * fused chain over the block's pixels of every channel while they are in
 * cache. A block is an eighth of the image's pixels (for threads to share)
 * but no more than make 64K floats of output or 1024, a multiple of 32 (a
 * tile's width), 32 at least; in images of fewer than 4 such blocks, a
 * block's output channels are split into up to 4 blocks of a multiple of 8
 * (a tile's height) too. conv.im2col_tiles does the same over the patch
 * matrix that conv.im2col copies, per group.
 */
#define PW_BLOCK_FLOATS 65536

static bool f32_conv(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *w = lower_in(L, 1), *bias = lower_in(L, 2);

	return x->dtype == DTYPE_F32 && w->dtype == DTYPE_F32 &&
	       (!bias || bias->dtype == DTYPE_F32) && lower_out(L, 0)->dtype == DTYPE_F32;
}

static struct tir *cond_1x1_tiles(struct lower *L)
{
	return strategy_and(L, cond_1x1(L), strategy_static(L, f32_conv(L)));
}

/* The GEMMs of one image, or of every image, in blocks (conv.1x1_tiles) */
struct pw_gemm {
	struct tir_buf *x;	/* rows of K * group, P pixels: the input or the patches */
	struct tir *n;		/* the image when x holds its patches alone; NULL: x is the input */
	int64_t M, Mg, K, P;	/* output channels (per group), rows of x per group, pixels */
	int64_t np, mb;		/* pixels, output channels of a block (mb divides Mg) */
};

/* Blocks [p0, p0 + nb * np) of np pixels each of every output channel block. */
static void pw_blocks(struct lower *L, const struct pw_gemm *pg, int64_t p0, int64_t nb,
		      int64_t np)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct shape s = { 3, { x->shape.d[0], dim_const(nb), dim_const(pg->M / pg->mb) } };
	struct tir *idx[MAX_RANK], *n, *p, *m0, *xoff, *args[9], *m, *yrow;
	int a = 0;

	if (pg->n) {
		/* one image: its blocks and channel blocks */
		s.rank = 2;
		s.d[0] = s.d[1];
		s.d[1] = s.d[2];
		lower_loops_parallel(L, &s, idx + 1);
		n = pg->n;
		xoff = tir_int(b, 0);
	} else {
		lower_loops_parallel(L, &s, idx);
		n = idx[0];
		xoff = tir_mul(b, n, tir_int(b, pg->K * (pg->M / pg->Mg) * pg->P));
	}
	p = tir_let(b, "p", tir_add(b, tir_int(b, p0), tir_mul(b, idx[1], tir_int(b, np))));
	m0 = tir_let(b, "m0", tir_mul(b, idx[2], tir_int(b, pg->mb)));
	if (pg->Mg < pg->M)
		xoff = tir_add(b, xoff, tir_mul(b, tir_bin(b, BIN_DIV, m0, tir_int(b, pg->Mg)),
					       tir_int(b, pg->K * pg->P)));
	args[a++] = tir_addr(b, L->in[1], tir_mul(b, m0, tir_int(b, pg->K)));
	args[a++] = tir_addr(b, pg->x, tir_add(b, xoff, p));
	args[a++] = L->in[2] ? tir_addr(b, L->in[2], m0) : tir_int(b, 0);
	args[a++] = tir_addr(b, L->out[0], tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, n,
						tir_int(b, pg->M)), m0), tir_int(b, pg->P)), p));
	args[a++] = tir_int(b, pg->mb);
	args[a++] = tir_int(b, pg->K);
	args[a++] = tir_int(b, pg->P);
	args[a++] = tir_int(b, pg->P);
	args[a++] = tir_int(b, np);
	tir_extern_work(b, "rt_cpw", args, a, pg->mb * pg->K * np);
	if (L->epi && epilogue_by_span(L->g, L->epi)) {
		m = tir_loop(b, tir_int(b, pg->mb));
		yrow = tir_let(b, "yrow", tir_add(b, tir_mul(b, tir_add(b, tir_add(b, tir_mul(b,
						n, tir_int(b, pg->M)), m0), m), tir_int(b, pg->P)), p));
		if (!lower_epilogue_span(L, L->epi, L->ebuf, yrow, np))
			BUG("conv.1x1_tiles: a chain epilogue_by_span takes refused");
		tir_end(b);
		L->epi_done = true;
	}
	lower_end_loops(L, s.rank);
}

/* pg's blocks, from its sizes; then every block of every image */
static void pw_gemm(struct lower *L, struct pw_gemm *pg)
{
	int64_t P = pg->P, np, mb, k;

	np = MIN(P / 8, MIN(PW_BLOCK_FLOATS / pg->M, 1024)) / 32 * 32;
	np = MIN(MAX(np, 32), P);
	/* fewer than 4 blocks of pixels (7x7, 14x14): the channels split too */
	k = (4 + P / np - 1) / MAX(P / np, 1);
	for (mb = MAX((pg->Mg / k + 7) / 8 * 8, 8); mb < pg->Mg && pg->Mg % mb; mb += 8)
		;
	pg->mb = mb >= pg->Mg || pg->Mg % mb ? pg->Mg : mb;
	pg->np = np;
	if (P / np)
		pw_blocks(L, pg, 0, P / np, np);
	if (P % np)
		pw_blocks(L, pg, P / np * np, 1, P % np);
}

static int lower_conv_1x1_tiles(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	struct pw_gemm pg = { L->in[0], NULL, wt->shape.d[0].c, wt->shape.d[0].c,
			      wt->shape.d[1].c, 1, 0, 0 };

	pg.P = image_pixels(x);
	pw_gemm(L, &pg);
	return 0;
}

static const struct strategy_impl conv_1x1_tiles[] = {
	{ "conv.1x1_tiles", 30, lower_conv_1x1_tiles },
};

/*
 * conv.1x1_chan: a float32 pointwise convolution of constant weights over
 * an image of 3 to 63 pixels, or of 64 to 255 with 256 or more input
 * channels, not a whole number of vectors of 16 (7x7: 49, 14x14: 196), by
 * rt_cpwc (rt_cpw.h): output channels in the lanes, the weights
 * packed at compile time (as rt_cgemm.h packs B: 16-channel panels) or by
 * the model when it opens (rt_cpwc_pack_const), per image one call whose
 * blocks of channels and pixels run on the kernel's threads
 * (rt_cpwc_image), then the fused chain over the planes. conv.1x1_tiles
 * tiles such an image along its pixels: 49 of them fill four vectors of 16.
 * Images of 1 or 2 pixels keep conv.1x1_tiles' products by a vector.
 */
static struct tir *cond_1x1_chan(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	bool ok = f32_conv(L) && wt->data && (!L->target || target_opt_or(L->target, "chan", 1));
	int64_t P = image_pixels(x);

	/* at 14x14 it lost where K is small: the tiles' stores weigh more */
	ok &= P >= 3 && (P < 64 || (P < 256 && wt->shape.d[1].c >= 256)) && P % 16 != 0;
	return strategy_and(L, cond_1x1(L), strategy_static(L, ok));
}

static int lower_conv_1x1_chan(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t M = wt->shape.d[0].c, K = wt->shape.d[1].c, P = image_pixels(x);
	/* w [M, K] as B = w transposed, rt_cgemm.h's panels (rt_cpw.h packs it at open) */
	struct tir_buf *wp = cg_pack_const_as(L, wt->data, K, M, 1, K, "cpwc.pack",
					      "rt_cpwc_pack_const");
	struct shape s = { 2, { x->shape.d[0], dim_const(M) } };
	struct tir *n, *idx[MAX_RANK], *yrow, *args[7];
	int a = 0;

	/* per image one call, its blocks on the kernel's threads */
	n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	args[a++] = tir_addr(b, wp, tir_int(b, 0));
	args[a++] = tir_addr(b, L->in[0], tir_mul(b, n, tir_int(b, K * P)));
	args[a++] = L->in[2] ? tir_addr(b, L->in[2], tir_int(b, 0)) : tir_int(b, 0);
	args[a++] = tir_addr(b, L->out[0], tir_mul(b, n, tir_int(b, M * P)));
	args[a++] = tir_int(b, M);
	args[a++] = tir_int(b, K);
	args[a++] = tir_int(b, P);
	tir_extern_work(b, "rt_cpwc_image", args, a, M * K * P);
	tir_end(b);
	/* then the fused chain over every output plane (in cache: at most 255 pixels a plane) */
	if (L->epi && epilogue_by_span(L->g, L->epi)) {
		lower_loops_parallel(L, &s, idx);
		yrow = tir_let(b, "yrow", tir_mul(b, tir_add(b, tir_mul(b, idx[0], tir_int(b, M)),
							     idx[1]), tir_int(b, P)));
		if (!lower_epilogue_span(L, L->epi, L->ebuf, yrow, P))
			BUG("conv.1x1_chan: a chain epilogue_by_span takes refused");
		lower_end_loops(L, s.rank);
		L->epi_done = true;
	}
	return 0;
}

static const struct strategy_impl conv_1x1_chan[] = {
	{ "conv.1x1_chan", 30, lower_conv_1x1_chan },
};

/*
 * From these sizes on im2col beats the direct loop nest (with 1 or 2
 * output channels, or a couple of rows, the copy costs more than the GEMM
 * gains).
 */
#define IM2COL_MIN_ROWS 8	/* C/group * kernel: rows of col */
#define IM2COL_MIN_CHANNELS 4	/* M/group */

static struct tir *cond_im2col(struct lower *L)
{
	const struct value *w = lower_in(L, 1);
	int64_t rows = 1, group = node_attr_int(L->n, "group", 1);

	for (int i = 1; i < w->shape.rank; i++)
		rows *= w->shape.d[i].c;
	return strategy_static(L, rows >= IM2COL_MIN_ROWS &&
			     group > 0 && w->shape.d[0].c / group >= IM2COL_MIN_CHANNELS);
}


/*
 * conv.im2col_tiles: conv.im2col's patch matrix of each image, then its
 * GEMM per group by rt_cpw's register tiles (conv.1x1_tiles' blocks, in
 * parallel, the fused chain per block). EfficientNet's stem (3 -> 32
 * channels, 3x3, stride 2, 112x112 out): 0.61 ms with conv.im2col's blocked
 * loop GEMM.
 */
static struct tir *cond_im2col_tiles(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	bool ok = f32_conv(L);

	for (int i = 1; i < x->shape.rank; i++)
		ok &= dim_is_const(x->shape.d[i]);
	return strategy_and(L, cond_im2col(L), strategy_static(L, ok));
}

static int lower_conv_im2col_tiles(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct im2col ic;
	struct pw_gemm pg;

	if (im2col_begin(L, &ic, node_attr_int(L->n, "group", 1)) < 0)
		return -1;
	pg = (struct pw_gemm){ ic.col, ic.n, ic.M, ic.Mg, ic.Kc, ic.P, 0, 0 };
	pw_gemm(L, &pg);
	tir_end(b);
	return 0;
}

static const struct strategy_impl conv_im2col_tiles[] = {
	{ "conv.im2col_tiles", 20, lower_conv_im2col_tiles },
};

/*
 * conv.micro: im2col straight into rt_cgemm's packed panel layout (the
 * copy is the packing), zero past the last pixel, then per group rt_cgemm
 * of the weights [M/group, C/group * kernel] (read in place, the constant
 * A) by the group's rows of the panels, the bias per output row. 1-D and
 * 2-D convolutions do it a panel at a time in rt_cconv.h; 3-D ones pack the
 * whole matrix from loop IR first.
 */
static bool conv_micro_ok(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *w = lower_in(L, 1), *bias = lower_in(L, 2);
	bool ok = x->dtype == DTYPE_F32 && w->dtype == DTYPE_F32 &&
		  (!bias || bias->dtype == DTYPE_F32);

	for (int i = 1; i < x->shape.rank; i++)
		ok &= dim_is_const(x->shape.d[i]);
	return ok;
}

/* col[((pix / 16) * Kr + row) * 16 + pix % 16] = x[n, c, window position] or 0. */
static void cg_im2col(struct lower *L, struct tir_buf *col, struct tir *n, const struct window *w,
		      int64_t C, int64_t Kr)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *c, *ki[MAX_RANK], *oi[MAX_RANK], *xi[MAX_RANK], *row, *pix, *idx, *v;
	struct tir *cond = NULL;

	c = tir_loop(b, tir_int(b, C));
	tir_mark_parallel(b);
	row = c;
	for (int i = 0; i < w->r; i++) {
		ki[i] = tir_loop(b, tir_int(b, w->k[i]));
		row = tir_add(b, tir_mul(b, row, tir_int(b, w->k[i])), ki[i]);
	}
	row = tir_let(b, "row", row);
	pix = tir_int(b, 0);
	xi[0] = n;
	xi[1] = c;
	for (int i = 0; i < w->r; i++) {
		oi[i] = tir_loop(b, tir_int(b, w->out[i]));
		pix = tir_add(b, tir_mul(b, pix, tir_int(b, w->out[i])), oi[i]);
		xi[i + 2] = lower_window_pos(L, w, i, oi[i], ki[i], &cond);
	}
	pix = tir_let(b, "pix", pix);
	idx = tir_add(b, tir_mul(b, tir_add(b, tir_mul(b, tir_bin(b, BIN_DIV, pix,
		tir_int(b, CG_NR)), tir_int(b, Kr)), row), tir_int(b, CG_NR)),
		tir_bin(b, BIN_MOD, pix, tir_int(b, CG_NR)));
	v = tir_load(b, L->in[0], lower_offset(L, &x->shape, xi));
	if (cond)
		v = tir_select(b, cond, v, tir_const(b, x->dtype, 0));
	tir_store(b, col, idx, v);
	lower_end_loops(L, 2 * w->r + 1);
}

/* The last panel's columns past P: zero, for every row. */
static void cg_pad_panel(struct lower *L, struct tir_buf *col, int64_t P, int64_t Kr)
{
	struct tir_builder *b = L->b;
	int64_t last = P / CG_NR, used = P % CG_NR;
	struct tir *r, *jj;

	if (!used)
		return;
	r = tir_loop(b, tir_int(b, Kr));
	jj = tir_loop(b, tir_int(b, CG_NR - used));
	tir_store(b, col, tir_add(b, tir_mul(b, tir_add(b, tir_int(b, last * Kr), r),
					     tir_int(b, CG_NR)), tir_add(b, tir_int(b, used), jj)),
		  tir_const(b, DTYPE_F32, 0));
	lower_end_loops(L, 2);
}

/* The old form: the whole im2col packed first, then one rt_cgemm per group (3-D). */
static void conv_micro_whole(struct lower *L, const struct window *w, int64_t group, int64_t P,
			     int64_t kernel)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t M = wt->shape.d[0].c, Mg = M / group, Kcg = wt->shape.d[1].c * kernel;
	int64_t C = wt->shape.d[1].c * group, Kr = C * kernel;
	struct cg_call c = { 0 };
	struct tir_buf *col;
	struct tir *n, *g;

	col = lower_scratch(L, DTYPE_F32, dim_const(cg_packed_numel(Kr, P)));
	n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	cg_im2col(L, col, n, w, C, Kr);
	cg_pad_panel(L, col, P, Kr);
	g = tir_loop(b, tir_int(b, group));
	c.M = tir_int(b, Mg);
	c.N = P;
	c.K = Kcg;
	c.alpha = c.beta = 1.0;
	c.a = tir_addr(b, L->in[1], tir_mul(b, g, tir_int(b, Mg * Kcg)));
	c.ars = Kcg;
	c.acs = 1;
	c.bp = tir_addr(b, col, tir_mul(b, g, tir_int(b, Kcg * CG_NR)));
	c.bps = Kr * CG_NR;
	c.c = tir_addr(b, L->out[0], tir_mul(b, tir_add(b, tir_mul(b, n, tir_int(b, M)),
						      tir_mul(b, g, tir_int(b, Mg))), tir_int(b, P)));
	c.ldc = P;
	if (L->in[2]) {
		c.bias = tir_addr(b, L->in[2], tir_mul(b, g, tir_int(b, Mg)));
		c.brs = 1;
	}
	cg_gemm(L, &c);
	lower_end_loops(L, 2);
}

#define CC_SLOTS 32	/* panels rt_cconv2d packs at once: the most threads on one conv */

/*
 * The arguments rt_cconv2d and rt_cwino2d end with, from args[a]: the
 * bias, the fused epilogue rt_cgemm's write-back applies (act, lo, hi, the
 * residual of image n), y of image n (mp floats an image), the scratch and
 * its slots. Returns the new count.
 */
static int cg_conv_tail(struct lower *L, struct tir **args, int a, struct tir *n, int64_t mp,
			struct tir_buf *scratch, int64_t slots)
{
	struct tir_builder *b = L->b;
	struct cg_epi e;

	args[a++] = L->in[2] ? tir_addr(b, L->in[2], tir_int(b, 0)) : tir_int(b, 0);
	cg_take_epilogue(L, &e);
	args[a++] = tir_int(b, e.act);
	args[a++] = tir_flt(b, DTYPE_F32, e.lo);
	args[a++] = tir_flt(b, DTYPE_F32, e.hi);
	args[a++] = e.res ? tir_addr(b, e.res, tir_mul(b, n, tir_int(b, mp))) : tir_int(b, 0);
	args[a++] = tir_addr(b, L->out[0], tir_mul(b, n, tir_int(b, mp)));
	args[a++] = tir_addr(b, scratch, tir_int(b, 0));
	args[a++] = tir_int(b, slots);
	return a;
}

/*
 * 1-D and 2-D: per image one call of rt_cconv2d (rt_cconv.h), which packs
 * col a panel at a time into a few slots of scratch and multiplies each
 * panel while it is in cache, so the im2col matrix is never written whole.
 */
static void conv_micro_panels(struct lower *L, const struct window *w, int64_t group, int64_t P,
			      int64_t kernel)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t M = wt->shape.d[0].c, C = wt->shape.d[1].c * group, Kcg = wt->shape.d[1].c * kernel;
	int64_t np = (P + CG_NR - 1) / CG_NR, H = 1, HW = 1;
	int64_t g2[6][2];	/* (kernel, stride, dilation, pad, in, out) x (h, w) */
	int64_t slots = np < CC_SLOTS ? np : CC_SLOTS;
	struct tir_buf *scratch;
	struct tir *args[26], *n;
	int a = 0, o = 2 - w->r;

	for (int i = 0; i < 2; i++) {
		g2[0][i] = i < o ? 1 : w->k[i - o];
		g2[1][i] = i < o ? 1 : w->s[i - o];
		g2[2][i] = i < o ? 1 : w->d[i - o];
		g2[3][i] = i < o ? 0 : w->pb[i - o];
		g2[4][i] = i < o ? 1 : w->in[i - o];
		g2[5][i] = i < o ? 1 : w->out[i - o];
	}
	H = g2[4][0];
	HW = H * g2[4][1];
	scratch = lower_scratch(L, DTYPE_F32, dim_const(slots * Kcg * CG_NR));
	n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	args[a++] = tir_addr(b, L->in[0], tir_mul(b, n, tir_int(b, C * HW)));
	args[a++] = tir_int(b, C);
	args[a++] = tir_int(b, H);
	args[a++] = tir_int(b, g2[4][1]);
	for (int j = 0; j < 4; j++)
		for (int i = 0; i < 2; i++)
			args[a++] = tir_int(b, g2[j][i]);
	args[a++] = tir_int(b, g2[5][0]);
	args[a++] = tir_int(b, g2[5][1]);
	args[a++] = tir_addr(b, L->in[1], tir_int(b, 0));
	args[a++] = tir_int(b, M);
	args[a++] = tir_int(b, group);
	a = cg_conv_tail(L, args, a, n, M * P, scratch, slots);
	tir_extern(b, "rt_cconv2d", args, a);
	tir_end(b);
}

static int lower_conv_micro(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t group = node_attr_int(L->n, "group", 1), kernel = 1, P = 1;
	int64_t kern[MAX_RANK];
	struct window w;

	if (!conv_micro_ok(L))
		BUG("conv.micro on shapes it does not take");
	for (int i = 2; i < wt->shape.rank; i++)
		kern[i - 2] = wt->shape.d[i].c;
	if (window_plan(L->g, (struct node *)L->n, &x->shape, kern, false, &w) < 0)
		return -1;
	for (int i = 0; i < w.r; i++) {
		P *= w.out[i];
		kernel *= w.k[i];
	}
	if (w.r <= 2)
		conv_micro_panels(L, &w, group, P, kernel);
	else
		conv_micro_whole(L, &w, group, P, kernel);
	return 0;
}

/*
 * conv.micro's least GEMM per group: M/group output rows and C/group *
 * kernel reduction length. Below them the packed-panel im2col and the
 * per-call tile set-up cost more than the register tiles save (MNIST's
 * Convs, 16 -> 32 and 32 -> 32 channels 3x3 at 14x14).
 */
#define CONV_MICRO_MIN_M 32
#define CONV_MICRO_MIN_K 64

static struct tir *cond_conv_micro(struct lower *L)
{
	const struct value *w = lower_in(L, 1);
	int64_t k = 1, group = node_attr_int(L->n, "group", 1);

	for (int i = 1; i < w->shape.rank; i++)
		k *= w->shape.d[i].c;
	return strategy_and(L, strategy_static(L, conv_micro_ok(L) && group > 0 &&
					      w->shape.d[0].c / group >= CONV_MICRO_MIN_M &&
					      k >= CONV_MICRO_MIN_K), cond_im2col(L));
}

static const struct strategy_impl conv_micro[] = { { "conv.micro", 20, lower_conv_micro } };

/*
 * conv.winograd: a 3x3 stride-1 convolution by F(4x4, 3x3) (rt_cwino.h).
 * The weights' transform U = G g G^T (rt_wino_kernel, in double and
 * rounded once), u[(xi * M + m) * C + c], then 8 rows of zeros (the most a
 * micro-kernel tile reads past M), 4 times the weights' bytes: the model
 * computes it when it opens (rt_cwino_weights), from the weights in the
 * blob; it is computed here too, for the plan to choose.
 */
#define CW_PAD_ROWS 8

static struct tir_buf *cw_transform(struct lower *L, const float *w, int64_t M, int64_t C)
{
	int64_t n = 36 * M * C + CW_PAD_ROWS * C;
	const int64_t params[] = { M, C };
	bool fresh;
	float *u = graph_derived_const(L->g, w, "winograd", params, ARRAY_SIZE(params),
				       sizeof(float) * (size_t)n, &fresh);

	for (int64_t m = 0; m < M && fresh; m++)
		for (int64_t c = 0; c < C; c++)
			rt_wino_kernel(w + (m * C + c) * 9, u + m * C + c, M * C);
	/* 4x the weights: the model transforms them when it opens (rt_cwino_weights) */
	graph_derived_open(L->g, u, "rt_cwino_weights");
	return lower_const(L, DTYPE_F32, n, u);
}

/* Slots of scratch conv.winograd asks for at most: rt_cwino.h's RT_CW_TEAM. */
#define CW_SLOTS 16

/* The floats of one slot: rt_cwino.h's rt_cw_slot. */
static int64_t cw_slot(int64_t C, int64_t M)
{
	return 36 * CG_NR * (C + 1 + M);
}

static bool cw_geometry(struct lower *L, struct window *w)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	static const int64_t k3[2] = { 3, 3 };

	if (!conv_micro_ok(L) || !wt->data || x->shape.rank != 4 || wt->shape.rank != 4 ||
	    wt->shape.d[2].c != 3 || wt->shape.d[3].c != 3 ||
	    node_attr_int(L->n, "group", 1) != 1 ||
	    window_plan(L->g, (struct node *)L->n, &x->shape, k3, false, w) < 0)
		return false;
	return w->s[0] == 1 && w->s[1] == 1 && w->d[0] == 1 && w->d[1] == 1 && w->pb[0] >= 0 &&
	       w->pb[1] >= 0 && w->pe[0] >= 0 && w->pe[1] >= 0;
}

static int lower_conv_winograd(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t M = wt->shape.d[0].c, C = wt->shape.d[1].c, P, tiles, slots;
	struct tir_buf *u, *scratch;
	struct tir *args[20], *n;
	struct window w;
	int a = 0;

	if (!cw_geometry(L, &w))
		BUG("conv.winograd on a convolution it does not take");
	P = w.out[0] * w.out[1];
	tiles = (w.out[0] + 3) / 4 * ((w.out[1] + 3) / 4);
	slots = (tiles + CG_NR - 1) / CG_NR;
	if (slots > CW_SLOTS)
		slots = CW_SLOTS;
	graph_derived_fill(L->g, wt->data);	/* a large 16-bit weight widened lazily */
	u = cw_transform(L, wt->data, M, C);
	scratch = lower_scratch(L, DTYPE_F32, dim_const(slots * cw_slot(C, M)));
	n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	args[a++] = tir_addr(b, L->in[0], tir_mul(b, n, tir_int(b, C * w.in[0] * w.in[1])));
	args[a++] = tir_int(b, C);
	args[a++] = tir_int(b, w.in[0]);
	args[a++] = tir_int(b, w.in[1]);
	args[a++] = tir_int(b, w.pb[0]);
	args[a++] = tir_int(b, w.pb[1]);
	args[a++] = tir_int(b, w.out[0]);
	args[a++] = tir_int(b, w.out[1]);
	args[a++] = tir_addr(b, u, tir_int(b, 0));
	args[a++] = tir_int(b, M);
	a = cg_conv_tail(L, args, a, n, M * P, scratch, slots);
	tir_extern(b, "rt_cwino2d", args, a);
	tir_end(b);
	return 0;
}

/*
 * Where F(4x4, 3x3) beats conv.micro: 16 tiles or more (at 4, ResNet-18's
 * 7x7, 12 of a panel's 16 lanes idle) and 16 channels or more (below, the
 * GEMMs are too short for their share to matter).
 */
#define CW_MIN_CHANNELS 16
#define CW_MIN_TILES 16

static struct tir *cond_conv_winograd(struct lower *L)
{
	const struct value *wt = lower_in(L, 1);
	struct window w;
	bool ok = (!L->target || target_opt_or(L->target, "winograd", 1)) && cw_geometry(L, &w);

	ok = ok && wt->shape.d[0].c >= CW_MIN_CHANNELS && wt->shape.d[1].c >= CW_MIN_CHANNELS &&
	     (w.out[0] + 3) / 4 * ((w.out[1] + 3) / 4) >= CW_MIN_TILES;
	return strategy_static(L, ok);
}

static const struct strategy_impl conv_winograd[] = {
	{ "conv.winograd", 30, lower_conv_winograd },
};


/*
 * 2-D windows row by row (depthwise Conv, MaxPool): per image, channel and
 * output row, the row is initialised, then each kernel row kh passes over
 * it: for a depthwise Conv one loop over the output columns that every tap
 * (kh, kw) reaches inside the input applies all of them, and a loop per tap
 * covers the columns at the borders that only some reach; MaxPool has a
 * loop per tap (ranges known at compile time), so no bounds check is left
 * in an inner loop; the input row of kh is tested once per output row. Every column gets its taps in the order of
 * the generic loop nest, so results are the same bit for bit (but for the
 * C compiler's contractions).
 */
enum rows_kind { ROWS_DEPTHWISE, ROWS_MAX };

/*
 * Taps the row form unrolls at most: one loop per tap, so a 60x80 window
 * would be 4800 loops of C (minutes of cc); past this the window nest.
 */
#define ROWS_MAX_TAPS 64

/* Output columns [*lo, *hi) whose tap kw reads a column inside [0, W). */
static void rows_range(const struct window *w, int64_t kw, int64_t *lo, int64_t *hi)
{
	int64_t off = kw * w->d[1] - w->pb[1];	/* input column of output column 0 */
	int64_t last = w->in[1] - 1 - off;	/* ow * s <= last */

	*lo = off >= 0 ? 0 : (-off + w->s[1] - 1) / w->s[1];
	*hi = last < 0 ? 0 : last / w->s[1] + 1;
	if (*hi > w->out[1])
		*hi = w->out[1];
	if (*lo > *hi)
		*lo = *hi;
}

/* The weight of tap (kh, kw) of channel c (depthwise), or NULL (max). */
static struct tir *rows_weight(struct lower *L, const struct window *w, enum rows_kind kind,
			       struct tir *c, int64_t kh, int64_t kw)
{
	struct tir_builder *b = L->b;

	if (kind != ROWS_DEPTHWISE)
		return NULL;
	return tir_let(b, "w", tir_load(b, L->in[1], tir_add(b, tir_mul(b, c,
			tir_int(b, w->k[0] * w->k[1])), tir_int(b, kh * w->k[1] + kw))));
}

/* acc combined with tap kw (weight wv) at output column ow of input row xrow. */
static struct tir *rows_term(struct lower *L, const struct window *w, enum rows_kind kind,
			     struct tir *acc, struct tir *wv, struct tir *xrow, struct tir *ow,
			     int64_t kw)
{
	struct tir_builder *b = L->b;
	struct tir *xv = tir_load(b, L->in[0], tir_add(b, xrow, tir_add(b, tir_mul(b, ow,
					tir_int(b, w->s[1])), tir_int(b, kw * w->d[1] - w->pb[1]))));

	return kind == ROWS_MAX ? tir_bin(b, BIN_MAX, acc, xv) : tir_add(b, acc, tir_mul(b, wv, xv));
}

/* Tap kw alone over output columns [lo, hi) of row yrow. */
static void rows_tap(struct lower *L, const struct window *w, enum rows_kind kind,
		     struct tir *wv, struct tir *yrow, struct tir *xrow, int64_t kw, int64_t lo,
		     int64_t hi)
{
	struct tir_builder *b = L->b;
	struct tir *i, *ow;

	if (hi <= lo)
		return;
	i = tir_loop(b, tir_int(b, hi - lo));
	ow = tir_add(b, tir_int(b, lo), i);
	tir_store(b, L->out[0], tir_add(b, yrow, ow), rows_term(L, w, kind,
		  tir_load(b, L->out[0], tir_add(b, yrow, ow)), wv, xrow, ow, kw));
	tir_end(b);
}

/*
 * Every tap of kernel row kh over output row yrow from input row xrow: for
 * a depthwise Conv the columns every tap reaches in one loop (one load and
 * store of y for all the taps), the border columns tap by tap. Each column
 * still gets its taps in kw order, so the sums are those of one loop per
 * tap.
 */
static void rows_taps(struct lower *L, const struct window *w, enum rows_kind kind,
		      struct tir *c, struct tir *yrow, struct tir *xrow, int64_t kh)
{
	struct tir_builder *b = L->b;
	int64_t lo[ROWS_MAX_TAPS], hi[ROWS_MAX_TAPS], LO = 0, HI = w->out[1];
	struct tir *wv[ROWS_MAX_TAPS], *i, *ow, *acc;

	for (int64_t kw = 0; kw < w->k[1]; kw++) {
		rows_range(w, kw, &lo[kw], &hi[kw]);
		LO = lo[kw] > LO ? lo[kw] : LO;
		HI = hi[kw] < HI ? hi[kw] : HI;
		wv[kw] = rows_weight(L, w, kind, c, kh, kw);
	}
	if (kind == ROWS_MAX) {
		/*
		 * a loop per tap: GCC vectorises one NaN-propagating max per
		 * loop, but not a chain of them (2.5x slower at ResNet's 3x3/2)
		 */
		for (int64_t kw = 0; kw < w->k[1]; kw++)
			rows_tap(L, w, kind, wv[kw], yrow, xrow, kw, lo[kw], hi[kw]);
		return;
	}
	if (HI < LO)
		HI = LO;
	for (int64_t kw = 0; kw < w->k[1]; kw++)
		rows_tap(L, w, kind, wv[kw], yrow, xrow, kw, lo[kw], hi[kw] < LO ? hi[kw] : LO);
	if (HI > LO) {
		i = tir_loop(b, tir_int(b, HI - LO));
		ow = tir_add(b, tir_int(b, LO), i);
		acc = tir_load(b, L->out[0], tir_add(b, yrow, ow));
		for (int64_t kw = 0; kw < w->k[1]; kw++)
			acc = rows_term(L, w, kind, acc, wv[kw], xrow, ow, kw);
		tir_store(b, L->out[0], tir_add(b, yrow, ow), acc);
		tir_end(b);
	}
	for (int64_t kw = 0; kw < w->k[1]; kw++)
		rows_tap(L, w, kind, wv[kw], yrow, xrow, kw, lo[kw] > HI ? lo[kw] : HI, hi[kw]);
}

static int lower_rows2d(struct lower *L, const struct window *w, enum rows_kind kind)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
	struct tir *idx[MAX_RANK], *plane, *xp, *yp, *oh, *yrow, *ow, *ih, *init;
	struct shape nc = { 2, { y->shape.d[0], y->shape.d[1] } };

	lower_loops_parallel(L, &nc, idx);
	plane = tir_let(b, "plane", tir_add(b, tir_mul(b, idx[0], tir_dim(b, x->shape.d[1])),
					    idx[1]));
	xp = tir_let(b, "xp", tir_mul(b, plane, tir_int(b, H * W)));
	yp = tir_let(b, "yp", tir_mul(b, plane, tir_int(b, OH * OW)));
	oh = tir_loop(b, tir_int(b, OH));
	yrow = tir_let(b, "yrow", tir_add(b, yp, tir_mul(b, oh, tir_int(b, OW))));
	if (kind == ROWS_MAX)
		init = tir_const(b, y->dtype, -INFINITY);
	else
		init = L->in[2] ? tir_load(b, L->in[2], idx[1]) : tir_const(b, y->dtype, 0);
	init = tir_let(b, "init", init);
	ow = tir_loop(b, tir_int(b, OW));
	tir_store(b, L->out[0], tir_add(b, yrow, ow), init);
	tir_end(b);
	for (int64_t kh = 0; kh < w->k[0]; kh++) {
		ih = tir_let(b, "ih", tir_add(b, tir_mul(b, oh, tir_int(b, w->s[0])),
					      tir_int(b, kh * w->d[0] - w->pb[0])));
		tir_if(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, ih, tir_int(b, 0)),
				  tir_bin(b, BIN_LT, ih, tir_int(b, H))));
		rows_taps(L, w, kind, idx[1], yrow, tir_let(b, "xrow", tir_add(b, xp,
				tir_mul(b, ih, tir_int(b, W)))), kh);
		tir_end(b);
	}
	tir_end(b);
	/*
	 * the fused chain over the finished plane while it is in cache, not
	 * after the nest (per row, rows of 7 or 14 made the loop's overhead
	 * cost more than it saved)
	 */
	if (L->epi && lower_epilogue_span(L, L->epi, L->ebuf, yp, OH * OW))
		L->epi_done = true;
	lower_end_loops(L, 2);
	return 0;
}


/* 2-D with a static image and a kh x kw window of few taps: the row form applies. */
static bool rows_ok(struct lower *L, int64_t kh, int64_t kw)
{
	const struct value *x = lower_in(L, 0);

	return x->shape.rank == 4 && dim_is_const(x->shape.d[1]) && dim_is_const(x->shape.d[2]) &&
	       dim_is_const(x->shape.d[3]) && dtype_is_float(x->dtype) &&
	       kh * kw <= ROWS_MAX_TAPS;
}

static int lower_conv_dw_rows(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t kern[2] = { wt->shape.d[2].c, wt->shape.d[3].c };
	struct window w;

	if (window_plan(L->g, (struct node *)L->n, &x->shape, kern, false, &w) < 0)
		return -1;
	return lower_rows2d(L, &w, ROWS_DEPTHWISE);
}

static struct tir *cond_depthwise_rows(struct lower *L)
{
	const struct value *wt = lower_in(L, 1);

	return strategy_and(L, strategy_static(L, wt->shape.rank == 4 &&
					       rows_ok(L, wt->shape.d[2].c, wt->shape.d[3].c)),
			    cond_depthwise(L));
}

static const struct strategy_impl conv_dw_rows[] = {
	{ "conv.depthwise_rows", 20, lower_conv_dw_rows },
};

/*
 * conv.depthwise_vec: the channels a vector (rt_cdw.h), per image and block
 * of 16 channels one call of rt_cdw2d, then the fused chain over the
 * block's planes while they are in cache. For images whose rows are too
 * short to vectorise along (cond_depthwise_vec, DW_VEC_MAX_OW) and for any
 * of column stride 1; a wider one of stride 2 transposes 4 input pixels per
 * output pixel and the row form does better (a 3x3 of stride 2 over 96
 * channels of 112x112: 0.18 ms against 0.28 at one thread).
 */
#define DW_BLOCK 16		/* rt_cdw.h's RT_DW_BLOCK */
#define DW_BUF 1024		/* RT_DW_BUF */
#define DW_TAPS 64		/* RT_DW_TAPS */
#define DW_VEC_MAX_OW 32	/* from 32 columns a row is vector work enough */

static bool dw_vec_geometry(struct lower *L, struct window *w)
{
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t kern[2], wp;

	if (x->dtype != DTYPE_F32 || x->shape.rank != 4 || wt->shape.rank != 4 ||
	    !dim_is_const(x->shape.d[1]) || !dim_is_const(x->shape.d[2]) ||
	    !dim_is_const(x->shape.d[3]))
		return false;
	kern[0] = wt->shape.d[2].c;
	kern[1] = wt->shape.d[3].c;
	if (kern[0] * kern[1] > DW_TAPS ||
	    window_plan(L->g, (struct node *)L->n, &x->shape, kern, false, w) < 0 ||
	    w->pb[0] < 0 || w->pb[1] < 0)
		return false;
	wp = (w->out[1] - 1) * w->s[1] + (w->k[1] - 1) * w->d[1] + 1;
	return ((w->k[0] - 1) * w->d[0] + 1) * wp <= DW_BUF;
}

static struct tir *cond_depthwise_vec(struct lower *L)
{
	struct window w;

	return strategy_and(L, cond_depthwise(L), strategy_static(L,
				(!L->target || target_opt_or(L->target, "dwvec", 1)) &&
				dw_vec_geometry(L, &w) && (w.out[1] < DW_VEC_MAX_OW || w.s[1] == 1)));
}

/* Blocks [c0, c0 + nb * nch) of nch channels each, every image. */
static void dw_vec_blocks(struct lower *L, const struct window *w, int64_t c0, int64_t nb,
			  int64_t nch)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *wt = lower_in(L, 1);
	int64_t C = x->shape.d[1].c, HW = w->in[0] * w->in[1], OHW = w->out[0] * w->out[1];
	int64_t taps = wt->shape.d[2].c * wt->shape.d[3].c;
	struct shape s = { 2, { x->shape.d[0], dim_const(nb) } };
	struct tir *idx[MAX_RANK], *c, *plane, *args[17], *yp;
	int a = 0;

	lower_loops_parallel(L, &s, idx);
	c = tir_let(b, "c", tir_add(b, tir_int(b, c0), tir_mul(b, idx[1], tir_int(b, nch))));
	plane = tir_let(b, "plane", tir_add(b, tir_mul(b, idx[0], tir_int(b, C)), c));
	yp = tir_let(b, "yp", tir_mul(b, plane, tir_int(b, OHW)));
	args[a++] = tir_addr(b, L->in[0], tir_mul(b, plane, tir_int(b, HW)));
	args[a++] = tir_addr(b, L->in[1], tir_mul(b, c, tir_int(b, taps)));
	args[a++] = L->in[2] ? tir_addr(b, L->in[2], c) : tir_int(b, 0);
	args[a++] = tir_addr(b, L->out[0], yp);
	args[a++] = tir_int(b, nch);
	args[a++] = tir_int(b, w->in[0]);
	args[a++] = tir_int(b, w->in[1]);
	args[a++] = tir_int(b, w->k[0]);
	args[a++] = tir_int(b, w->k[1]);
	args[a++] = tir_int(b, w->s[0]);
	args[a++] = tir_int(b, w->s[1]);
	args[a++] = tir_int(b, w->d[0]);
	args[a++] = tir_int(b, w->d[1]);
	args[a++] = tir_int(b, w->pb[0]);
	args[a++] = tir_int(b, w->pb[1]);
	args[a++] = tir_int(b, w->out[0]);
	args[a++] = tir_int(b, w->out[1]);
	/* the work of a block: its taps, for the parallel step */
	tir_extern_work(b, "rt_cdw2d", args, a, nch * OHW * taps);
	if (L->epi && lower_epilogue_span(L, L->epi, L->ebuf, yp, nch * OHW))
		L->epi_done = true;
	lower_end_loops(L, 2);
}

static int lower_conv_dw_vec(struct lower *L)
{
	int64_t C = lower_in(L, 0)->shape.d[1].c;
	struct window w;
	bool epi = L->epi != NULL;

	if (!dw_vec_geometry(L, &w))
		BUG("conv.depthwise_vec on a convolution it does not take");
	if (C >= DW_BLOCK)
		dw_vec_blocks(L, &w, 0, C / DW_BLOCK, DW_BLOCK);
	if (C % DW_BLOCK) {
		/* both nests must apply the chain, or neither (then lower_with's loop does) */
		bool done = L->epi_done;

		dw_vec_blocks(L, &w, C / DW_BLOCK * DW_BLOCK, 1, C % DW_BLOCK);
		if (epi && C >= DW_BLOCK && done != L->epi_done)
			BUG("conv.depthwise_vec: the epilogue applied to some blocks only");
	}
	return 0;
}

static const struct strategy_impl conv_dw_vec[] = {
	{ "conv.depthwise_vec", 30, lower_conv_dw_vec },
};

static const struct strategy_impl conv_dw[] = { { "conv.depthwise", 10, lower_conv_depthwise } };
static const struct strategy_impl conv_1x1[] = { { "conv.1x1", 10, lower_conv_1x1 } };
static const struct strategy_impl conv_im2col[] = {
	{ "conv.im2col", 10, lower_conv_im2col },
	{ "conv.direct", 0, lower_conv },
};
static const struct strategy_impl conv_direct[] = { { "conv.direct", 0, lower_conv } };

static const struct strategy_spec conv_specs[] = {
	{ "depthwise (group == C == M), float32, 2-D, static image, <= 64 taps, output rows "
	  "< 32, the window's rows of the padded width <= 1024",
	  cond_depthwise_vec, conv_dw_vec, ARRAY_SIZE(conv_dw_vec) },
	{ "depthwise (group == C == M), 2-D, static image, kernel <= 64 taps",
	  cond_depthwise_rows, conv_dw_rows,
	  ARRAY_SIZE(conv_dw_rows) },
	{ "depthwise (group == C == M)", cond_depthwise, conv_dw, ARRAY_SIZE(conv_dw) },
	{ "float32, 3x3, stride 1, group 1, constant weights, C, M >= 16, >= 16 tiles of 4x4",
	  cond_conv_winograd, conv_winograd, ARRAY_SIZE(conv_winograd) },
	{ "float32, 1x1, stride 1, no padding, group 1, constant weights, 3 to 63 pixels or "
	  "64 to 255 with C >= 256, not a multiple of 16", cond_1x1_chan, conv_1x1_chan,
	  ARRAY_SIZE(conv_1x1_chan) },
	{ "float32, 1x1, stride 1, no padding, group 1", cond_1x1_tiles, conv_1x1_tiles,
	  ARRAY_SIZE(conv_1x1_tiles) },
	{ "float32, static image, C/group * kernel >= 64 && M/group >= 32", cond_conv_micro,
	  conv_micro, ARRAY_SIZE(conv_micro) },
	{ "1x1, stride 1, no padding, group 1", cond_1x1, conv_1x1, ARRAY_SIZE(conv_1x1) },
	{ "float32, static image, C/group * kernel >= 8 && M/group >= 4", cond_im2col_tiles,
	  conv_im2col_tiles, ARRAY_SIZE(conv_im2col_tiles) },
	{ "C/group * kernel >= 8 && M/group >= 4", cond_im2col, conv_im2col,
	  ARRAY_SIZE(conv_im2col) },
	{ "always", NULL, conv_direct, ARRAY_SIZE(conv_direct) },
};

static const struct op_strategy conv_strategy = { OP_CONV, conv_specs, ARRAY_SIZE(conv_specs) };


/* ---- MaxPool, AveragePool ---- */

static struct tir *ci_vec(struct lower *L, int i, struct tir **stride);

/* rt_cpool.h's limits: the padded row buffer's columns, the column stride */
#define POOL_MAXW 4096
#define POOL_MAXS 64

/*
 * The window of a pool node as a 2-D one (1-D: one row, kernel 1 high); a
 * window rt_pool2d cannot take (3-D, a padded row past its buffer) false.
 */
static bool pool_window2d(struct lower *L, struct window *w)
{
	const struct value *x = lower_in(L, 0);
	const int64_t *ks;
	int r = x->shape.rank - 2;

	if ((r != 1 && r != 2) || node_attr_ints(L->n, "kernel_shape", &ks) != r)
		return false;
	for (int i = 2; i < x->shape.rank; i++)
		if (!dim_is_const(x->shape.d[i]))
			return false;
	if (window_plan(L->g, (struct node *)L->n, &x->shape, ks,
			node_attr_int(L->n, "ceil_mode", 0) != 0, w) < 0)
		BUG("%s: the pool's window was planned at inference", node_loc(L->g, L->n));
	if (r == 1) {
		/* the row becomes dim 1; dim 0 one row high */
		w->k[1] = w->k[0], w->s[1] = w->s[0], w->d[1] = w->d[0];
		w->pb[1] = w->pb[0], w->pe[1] = w->pe[0];
		w->in[1] = w->in[0], w->out[1] = w->out[0];
		w->k[0] = w->s[0] = w->d[0] = w->in[0] = w->out[0] = 1;
		w->pb[0] = w->pe[0] = 0;
		w->r = 2;
	}
	return w->pb[1] + w->in[1] <= POOL_MAXW && w->s[1] <= POOL_MAXS &&
	       (w->out[1] - 1) * w->s[1] + (w->k[1] - 1) * w->d[1] + 1 <= POOL_MAXW;
}

/* float32, 1-D or 2-D with a static image, no Indices: rt_pool2d applies. */
static struct tir *cond_pool_vrows(struct lower *L)
{
	struct window w;

	return strategy_static(L, lower_in(L, 0)->dtype == DTYPE_F32 && L->n->n_out == 1 &&
			       pool_window2d(L, &w));
}

/* uint8 or int8, 1-D or 2-D with a static image, no Indices: rt_qmaxpool2d applies. */
static struct tir *cond_pool_q8(struct lower *L)
{
	enum dtype t = lower_in(L, 0)->dtype;
	struct window w;

	return strategy_static(L, (t == DTYPE_U8 || t == DTYPE_I8) && L->n->n_out == 1 &&
			       pool_window2d(L, &w));
}

/*
 * One call of rt_pool2d (rt_cpool.h) over every plane of the batch; of
 * rt_qmaxpool2d for 8 bits, rt_qavgpool2d for QLinearAveragePool
 * (rt_cqpool.h), their geometry arguments alike.
 */
static int lower_pool_vrows(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *args[24], *zs;
	struct window w;
	int n = 0, kind = 0;	/* RT_POOL_MAX */
	bool q8 = x->dtype == DTYPE_U8 || x->dtype == DTYPE_I8;

	if (!pool_window2d(L, &w))
		BUG("pool.vrows on a window it does not take");
	if (L->n->op == OP_AVERAGEPOOL)
		kind = node_attr_int(L->n, "count_include_pad", 0) ? 2 : 1;
	if (L->n->op == OP_QLINEARAVERAGEPOOL)
		kind = node_attr_int(L->n, "count_include_pad", 0) != 0;
	args[n++] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[n++] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[n++] = tir_mul(b, tir_dim(b, x->shape.d[0]), tir_dim(b, x->shape.d[1]));
	args[n++] = tir_int(b, w.in[0]);
	args[n++] = tir_int(b, w.in[1]);
	args[n++] = tir_int(b, w.k[0]);
	args[n++] = tir_int(b, w.k[1]);
	args[n++] = tir_int(b, w.s[0]);
	args[n++] = tir_int(b, w.s[1]);
	args[n++] = tir_int(b, w.d[0]);
	args[n++] = tir_int(b, w.d[1]);
	args[n++] = tir_int(b, w.pb[0]);
	args[n++] = tir_int(b, w.pb[1]);
	args[n++] = tir_int(b, w.pe[0]);
	args[n++] = tir_int(b, w.pe[1]);
	args[n++] = tir_int(b, w.out[0]);
	args[n++] = tir_int(b, w.out[1]);
	if (L->n->op == OP_QLINEARAVERAGEPOOL) {
		args[n++] = tir_int(b, kind);
		args[n++] = ci_vec(L, 1, &zs);
		args[n++] = ci_vec(L, 2, &zs);
		args[n++] = ci_vec(L, 3, &zs);
		args[n++] = ci_vec(L, 4, &zs);
	}
	args[n++] = tir_int(b, q8 ? x->dtype == DTYPE_I8 : kind);
	tir_extern(b, L->n->op == OP_QLINEARAVERAGEPOOL ? "rt_qavgpool2d" :
		   q8 ? "rt_qmaxpool2d" : "rt_pool2d", args, n);
	return 0;
}

static const struct strategy_impl maxpool_q8rows[] = {
	{ "maxpool.q8rows", 30, lower_pool_vrows },
};

static const struct strategy_impl maxpool_vrows[] = {
	{ "maxpool.vrows", 20, lower_pool_vrows },
};
static const struct strategy_impl averagepool_vrows[] = {
	{ "averagepool.vrows", 20, lower_pool_vrows },
};

static int lower_maxpool_rows(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	const int64_t *ks;
	struct window w;

	if (node_attr_ints(L->n, "kernel_shape", &ks) != 2 ||
	    window_plan(L->g, (struct node *)L->n, &x->shape, ks,
			node_attr_int(L->n, "ceil_mode", 0) != 0, &w) < 0)
		BUG("%s: MaxPool's window was planned at inference", node_loc(L->g, L->n));
	return lower_rows2d(L, &w, ROWS_MAX);
}

static struct tir *cond_maxpool_rows(struct lower *L)
{
	const int64_t *ks;

	return strategy_static(L, node_attr_ints(L->n, "kernel_shape", &ks) == 2 &&
			       rows_ok(L, ks[0], ks[1]) && L->n->n_out == 1);
}

static const struct strategy_impl maxpool_rows[] = {
	{ "maxpool.rows", 10, lower_maxpool_rows },
};
/*
 * The op's own lowering: maxpool.window and averagepool.window (one output
 * at a time, every tap bounds-checked), softmax.loops, layernorm.loops.
 */
static int lower_own(struct lower *L)
{
	return op_info(L->n->op)->lower(L);
}

static const struct strategy_impl maxpool_generic[] = {
	{ "maxpool.window", 0, lower_own },
};
static const struct strategy_impl averagepool_generic[] = {
	{ "averagepool.window", 0, lower_own },
};

static const struct strategy_spec maxpool_specs[] = {
	{ "uint8 or int8, 1-D or 2-D, static image", cond_pool_q8, maxpool_q8rows,
	  ARRAY_SIZE(maxpool_q8rows) },
	{ "float32, 1-D or 2-D, static image", cond_pool_vrows, maxpool_vrows,
	  ARRAY_SIZE(maxpool_vrows) },
	{ "2-D, static image, kernel <= 64 taps", cond_maxpool_rows, maxpool_rows, ARRAY_SIZE(maxpool_rows) },
	{ "always", NULL, maxpool_generic, ARRAY_SIZE(maxpool_generic) },
};

static const struct op_strategy maxpool_strategy = {
	OP_MAXPOOL, maxpool_specs, ARRAY_SIZE(maxpool_specs)
};

static const struct strategy_spec averagepool_specs[] = {
	{ "float32, 1-D or 2-D, static image", cond_pool_vrows, averagepool_vrows,
	  ARRAY_SIZE(averagepool_vrows) },
	{ "always", NULL, averagepool_generic, ARRAY_SIZE(averagepool_generic) },
};

static const struct op_strategy averagepool_strategy = {
	OP_AVERAGEPOOL, averagepool_specs, ARRAY_SIZE(averagepool_specs)
};

/* ---- Softmax, LogSoftmax ---- */

/* The axis of a Softmax in [0, rank); opset < 13 flattens from it to the end. */
static int softmax_axis(struct lower *L)
{
	int r = lower_in(L, 0)->shape.rank;
	int axis = (int)node_attr_int(L->n, "axis", L->g->opset >= 13 ? -1 : 1);

	return axis < 0 ? axis + r : axis;
}

/* Elements of x as a dim, when they make one (a prologue's scratch needs it). */
static bool softmax_numel(const struct value *x, struct dim *out)
{
	*out = dim_const(1);
	for (int i = 0; i < x->shape.rank; i++)
		if (!dim_mul(*out, x->shape.d[i], out))
			return false;
	return true;
}

/*
 * float32 rows: the normalised axis is the last one (or every axis from it
 * on, before opset 13). A prologue (the loads of input 0 inlined from the
 * elementwise run before) is first stored whole, which needs its size.
 */
static struct tir *cond_softmax_rows(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	struct dim numel;
	bool ok = x->dtype == DTYPE_F32 && lower_out(L, 0)->dtype == DTYPE_F32 &&
		  x->shape.rank >= 1 &&
		  (L->g->opset < 13 || softmax_axis(L) == x->shape.rank - 1) &&
		  (L->in[0]->index >= 0 || softmax_numel(x, &numel));

	return strategy_static(L, ok);
}

/* Input 0 as rows of K elements: the dims before axis make the rows. */
static void lower_rows(struct lower *L, int axis, struct tir **rows, struct tir **K)
{
	const struct value *x = lower_in(L, 0);

	*rows = *K = tir_int(L->b, 1);
	for (int d = 0; d < x->shape.rank; d++) {
		if (d < axis)
			*rows = tir_mul(L->b, *rows, tir_dim(L->b, x->shape.d[d]));
		else
			*K = tir_mul(L->b, *K, tir_dim(L->b, x->shape.d[d]));
	}
}

/* softmax.rows: one call of rt_softmax_rows (rt_crows.h) over every row. */
static int lower_softmax_rows(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *rows, *K, *args[6], *i;
	struct tir_buf *src = L->in[0];
	struct dim numel;

	lower_rows(L, softmax_axis(L), &rows, &K);
	if (L->in[0]->index < 0) {
		/* a prologue: its loads become its expression (lower_epilogue) */
		if (!softmax_numel(x, &numel))
			BUG("softmax.rows with a prologue of no size");
		src = lower_scratch(L, DTYPE_F32, numel);
		i = tir_loop(b, tir_mul(b, rows, K));
		tir_mark_parallel(b);
		tir_store(b, src, i, tir_load(b, L->in[0], i));
		tir_end(b);
	}
	args[0] = tir_addr(b, src, tir_int(b, 0));
	args[1] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[2] = rows;
	args[3] = K;
	args[4] = tir_int(b, L->n->op == OP_LOGSOFTMAX);
	tir_extern(b, "rt_softmax_rows", args, 5);
	return 0;
}

/* float32 Attention that rt_attn_rows computes (attention_rows_fits). */
static struct tir *cond_attention_rows(struct lower *L)
{
	return strategy_static(L, attention_rows_fits(L));
}

static const struct strategy_impl attention_rows[] = {
	{ "attention.rows", 10, lower_attention_rows },
};
static const struct strategy_impl attention_loops[] = {
	{ "attention.loops", 0, lower_own },
};

static const struct strategy_spec attention_specs[] = {
	{ "float32, a float32 or bool mask or none, no softcap, qk_matmul_output, nonpad_kv_seqlen nor window",
	  cond_attention_rows, attention_rows, ARRAY_SIZE(attention_rows) },
	{ "always", NULL, attention_loops, ARRAY_SIZE(attention_loops) },
};

static const struct op_strategy attention_strategy = {
	OP_ATTENTION, attention_specs, ARRAY_SIZE(attention_specs)
};

static const struct strategy_impl softmax_rows[] = {
	{ "softmax.rows", 10, lower_softmax_rows },
};
static const struct strategy_impl softmax_loops[] = {
	{ "softmax.loops", 0, lower_own },
};

static const struct strategy_spec softmax_specs[] = {
	{ "float32, along the last axis", cond_softmax_rows, softmax_rows,
	  ARRAY_SIZE(softmax_rows) },
	{ "always", NULL, softmax_loops, ARRAY_SIZE(softmax_loops) },
};

static const struct op_strategy softmax_strategy = {
	OP_SOFTMAX, softmax_specs, ARRAY_SIZE(softmax_specs)
};
static const struct op_strategy logsoftmax_strategy = {
	OP_LOGSOFTMAX, softmax_specs, ARRAY_SIZE(softmax_specs)
};

/* ---- Transpose ---- */

/* float32, the input's last axis moved: the output's rows gather a column. */
static struct tir *cond_transpose_blocks(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	int perm[MAX_RANK], r = x->shape.rank;

	if (x->dtype != DTYPE_F32 || r < 2)
		return strategy_static(L, false);
	transpose_perm(L->n, r, perm);
	return strategy_static(L, perm[r - 1] != r - 1);
}

/*
 * transpose.blocks: for each index of the output axes other than the last
 * and the one the input's last axis goes to (q), one rt_cv_trans2d
 * (rt_cvec.h) of that [y.d[q], y.d[last]] matrix; those loops are a
 * parallel region.
 */
static int lower_transpose_blocks(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *xo = tir_int(b, 0), *yo = tir_int(b, 0), *args[6];
	int perm[MAX_RANK], r = x->shape.rank, q = 0, loops = 0;
	struct dim work = dim_const(1);

	transpose_perm(L->n, r, perm);
	while (perm[q] != r - 1)
		q++;
	for (int k = 0; k < r - 1; k++) {
		struct tir *i;

		if (k == q)
			continue;
		i = tir_loop(b, tir_dim(b, y->shape.d[k]));
		tir_mark_parallel(b);
		loops++;
		xo = tir_add(b, xo, tir_mul(b, i, lower_stride(L, &x->shape, perm[k])));
		yo = tir_add(b, yo, tir_mul(b, i, lower_stride(L, &y->shape, k)));
	}
	args[0] = tir_addr(b, L->in[0], xo);
	args[1] = lower_stride(L, &x->shape, perm[r - 1]);
	args[2] = tir_addr(b, L->out[0], yo);
	args[3] = lower_stride(L, &y->shape, q);
	args[4] = tir_dim(b, y->shape.d[q]);
	args[5] = tir_dim(b, y->shape.d[r - 1]);
	/*
	 * A copied element is about a quarter of the work unit the parallel
	 * step weighs: BERT's two heads of 64 x 128 ran 0.0026 ms on one thread
	 * and 0.0028-0.0038 as a region of two calls on two.
	 */
	if (!dim_mul(y->shape.d[q], y->shape.d[r - 1], &work) || !dim_is_const(work))
		work = dim_const(1024);
	tir_extern_work(b, "rt_cv_trans2d", args, 6, MAX(work.c / 4, 1));
	while (loops-- > 0)
		tir_end(b);
	return 0;
}

static const struct strategy_impl transpose_blocks[] = {
	{ "transpose.blocks", 10, lower_transpose_blocks },
};
static const struct strategy_impl transpose_loops[] = {
	{ "transpose.loops", 0, lower_own },
};

static const struct strategy_spec transpose_specs[] = {
	{ "float32, the last axis moved", cond_transpose_blocks, transpose_blocks,
	  ARRAY_SIZE(transpose_blocks) },
	{ "always", NULL, transpose_loops, ARRAY_SIZE(transpose_loops) },
};

static const struct op_strategy transpose_strategy = {
	OP_TRANSPOSE, transpose_specs, ARRAY_SIZE(transpose_specs)
};

/* ---- GlobalAveragePool ---- */

/* float32 with no prologue: a plane is a row of contiguous floats. */
static struct tir *cond_gap_rows(struct lower *L)
{
	const struct value *x = lower_in(L, 0);

	return strategy_static(L, x->dtype == DTYPE_F32 && x->shape.rank >= 3 &&
			       L->in[0]->index >= 0);
}

/* globalaveragepool.rows: one call of rt_mean_rows (rt_crows.h), a row a plane. */
static int lower_gap_rows(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *rows, *K, *args[4];

	lower_rows(L, 2, &rows, &K);
	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[2] = rows;
	args[3] = K;
	tir_extern(b, "rt_mean_rows", args, 4);
	return 0;
}

static const struct strategy_impl gap_rows[] = {
	{ "globalaveragepool.rows", 10, lower_gap_rows },
};
static const struct strategy_impl gap_loops[] = {
	{ "globalaveragepool.loops", 0, lower_own },
};

static const struct strategy_spec gap_specs[] = {
	{ "float32, no prologue", cond_gap_rows, gap_rows, ARRAY_SIZE(gap_rows) },
	{ "always", NULL, gap_loops, ARRAY_SIZE(gap_loops) },
};

static const struct op_strategy gap_strategy = {
	OP_GLOBALAVERAGEPOOL, gap_specs, ARRAY_SIZE(gap_specs)
};

/* LayerNormalization's first normalised axis, in [0, rank). */
static int lnorm_axis(struct lower *L)
{
	int r = lower_in(L, 0)->shape.rank, axis = (int)node_attr_int(L->n, "axis", -1);

	return axis < 0 ? axis + r : axis;
}

/* Whether input i is absent or float32 with x's dims from axis on (leading 1s aside). */
static bool lnorm_param_rows(struct lower *L, int i, int axis)
{
	const struct value *x = lower_in(L, 0), *p = lower_in(L, i);
	int off;

	if (!p)
		return true;
	off = x->shape.rank - p->shape.rank;
	if (p->dtype != DTYPE_F32 || off > axis)
		return false;
	for (int k = 0; k < p->shape.rank; k++)
		if (off + k < axis ? !dim_eq(p->shape.d[k], dim_const(1))
				   : !dim_eq(p->shape.d[k], x->shape.d[off + k]))
			return false;
	return true;
}

/* float32 rows with a float32 stash; scale and bias are K-vectors. */
static struct tir *cond_lnorm_rows(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	int axis = lnorm_axis(L);
	bool ok = x->dtype == DTYPE_F32 && node_attr_int(L->n, "stash_type", 1) == 1 &&
		  L->in[0]->index >= 0 && lnorm_param_rows(L, 1, axis) &&
		  lnorm_param_rows(L, 2, axis);

	for (int i = 1; i < L->n->n_out && ok; i++)
		ok = lower_out(L, i) && lower_out(L, i)->dtype == DTYPE_F32;
	return strategy_static(L, ok);
}

/* layernorm.rows: one call of rt_lnorm_rows (rt_crows.h) over every row. */
static int lower_lnorm_rows(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *rows, *K, *args[10];

	lower_rows(L, lnorm_axis(L), &rows, &K);
	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = tir_addr(b, L->in[1], tir_int(b, 0));
	args[2] = lower_in(L, 2) ? tir_addr(b, L->in[2], tir_int(b, 0)) : tir_int(b, 0);
	args[3] = tir_addr(b, L->out[0], tir_int(b, 0));
	for (int i = 1; i < 3; i++)	/* Mean, InvStdDev; 0: a null pointer */
		args[3 + i] = i < L->n->n_out ? tir_addr(b, L->out[i], tir_int(b, 0))
							   : tir_int(b, 0);
	args[6] = rows;
	args[7] = K;
	args[8] = tir_const(b, DTYPE_F32, node_attr_float(L->n, "epsilon", 1e-5));
	tir_extern(b, "rt_lnorm_rows", args, 9);
	return 0;
}

static const struct strategy_impl lnorm_rows[] = {
	{ "layernorm.rows", 10, lower_lnorm_rows },
};
static const struct strategy_impl lnorm_loops[] = {
	{ "layernorm.loops", 0, lower_own },
};

static const struct strategy_spec lnorm_specs[] = {
	{ "float32, scale and bias over the normalised axes", cond_lnorm_rows, lnorm_rows,
	  ARRAY_SIZE(lnorm_rows) },
	{ "always", NULL, lnorm_loops, ARRAY_SIZE(lnorm_loops) },
};

static const struct op_strategy lnorm_strategy = {
	OP_LAYERNORMALIZATION, lnorm_specs, ARRAY_SIZE(lnorm_specs)
};

/* float32 rows with a float32 stash; scale a K-vector (RMSNormalization) */
static struct tir *cond_rmsnorm_rows(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);

	return strategy_static(L, x->dtype == DTYPE_F32 && y && y->dtype == DTYPE_F32 &&
			       node_attr_int(L->n, "stash_type", 1) == 1 &&
			       L->in[0]->index >= 0 && lnorm_param_rows(L, 1, lnorm_axis(L)));
}

/* rmsnorm.rows: one call of rt_rmsnorm_rows (rt_crows.h) over every row. */
static int lower_rmsnorm_rows(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *rows, *K, *args[7];

	lower_rows(L, lnorm_axis(L), &rows, &K);
	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = tir_addr(b, L->in[1], tir_int(b, 0));
	args[2] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[3] = rows;
	args[4] = K;
	args[5] = tir_const(b, DTYPE_F32, node_attr_float(L->n, "epsilon", 1e-5));
	tir_extern(b, "rt_rmsnorm_rows", args, 6);
	return 0;
}

static const struct strategy_impl rmsnorm_rows[] = {
	{ "rmsnorm.rows", 10, lower_rmsnorm_rows },
};
static const struct strategy_impl rmsnorm_loops[] = {
	{ "rmsnorm.loops", 0, lower_own },
};

static const struct strategy_spec rmsnorm_specs[] = {
	{ "float32, scale over the normalised axes", cond_rmsnorm_rows, rmsnorm_rows,
	  ARRAY_SIZE(rmsnorm_rows) },
	{ "always", NULL, rmsnorm_loops, ARRAY_SIZE(rmsnorm_loops) },
};

static const struct op_strategy rmsnorm_strategy = {
	OP_RMSNORMALIZATION, rmsnorm_specs, ARRAY_SIZE(rmsnorm_specs)
};

/* ---- MatMulInteger, QLinearMatMul, DynamicQuantizeLinear: rt_cquant.h ---- */

#define CI_NR 16	/* RT_CI_NR: the panel width of the packed layout */

/* The inputs of MatMulInteger or QLinearMatMul: A, B and their zero points. */
struct ci_io {
	bool ql;			/* QLinearMatMul */
	int ia, ib, iaz, ibz;
};

static struct ci_io ci_io(struct lower *L)
{
	bool ql = L->n->op == OP_QLINEARMATMUL;
	struct ci_io io = { ql, 0, ql ? 3 : 1, 2, ql ? 5 : 3 };

	return io;
}


/* Input i if the node has it, else NULL. */
static const struct value *ci_opt(struct lower *L, int i)
{
	return i < L->n->n_in && L->in[i] ? lower_in(L, i) : NULL;
}

/*
 * What rt_cigemm takes: B a constant matrix (no batch), K and N static,
 * A's own buffer (not a prologue's loads), B's zero point absent or
 * constant, the per-row parameters of A (zero point, scale) per
 * tensor unless A has no batch (its rows are then the matrix's), and
 * float32 scales (QLinearMatMul-21's float16 ones take the loops).
 */
static bool cigemm_ok(struct lower *L)
{
	struct ci_io io = ci_io(L);
	const struct value *bz = ci_opt(L, io.ibz), *az = ci_opt(L, io.iaz);
	struct matmul_geom mg;

	if (io.ql && lower_in(L, 1)->dtype != DTYPE_F32)
		return false;
	matmul_geometry(lower_in(L, io.ia), lower_in(L, io.ib), &mg);
	if (!lower_in(L, io.ib)->data || !dim_is_const(mg.K) || !dim_is_const(mg.N) ||
	    !batch_is_one(&mg.batch_b) || L->in[io.ia]->index < 0 || (bz && !bz->data))
		return false;
	if (batch_is_one(&mg.batch_a))
		return true;
	return (!az || value_one_element(az)) && (!io.ql || value_one_element(lower_in(L, 1)));
}

static struct tir *cond_cigemm(struct lower *L)
{
	return strategy_static(L, cigemm_ok(L));
}

/*
 * B [K, N] (uint8 or int8) packed as rt_cquant.h reads it: B' = B (int8)
 * or B - 128 (uint8) in panels of 16 columns of k quads, zero padded; the
 * byte after the panels (after the map, with one) is 1 when no pair of B'
 * bytes that vpmaddubsw adds can saturate (|b0 + b1| <= 128), 0
 * otherwise. B[k, j] of group g is src[g * gs + k * ks + j * js] (a
 * MatMul's B: 1 group, ks N, js 1; a convolution's weights [M, Kg]: ks 1,
 * js Kg, gs Mg * Kg), the groups' panels one after the other; taps > 0:
 * an implicit convolution's quad order (rt_ci_quad_get). With map,
 * each panel's quads go safe ones first (pairs of those where no column
 * has such a pair whose 16-bit sums may be added, the other such quads,
 * then those safe in another byte order: enum rt_ci_order), and the
 * int32 map after the panels says per group and panel how many are of
 * each safe kind, then which k quad each packed quad is (rt_ci_tile_map).
 * Once per graph (graph_derived_const), by rt_cipack.h's rt_ci_pack, which
 * the compiled model runs again when it opens (rt_cigemm_pack_const).
 */
static int8_t *ci_pack_at(struct lower *L, const struct value *bv, int64_t K, int64_t N,
			  int64_t groups, int64_t ks, int64_t js, int64_t gs, int64_t taps,
			  bool map, int64_t *bytes)
{
	bool sgn = bv->dtype == DTYPE_I8, fresh;
	int64_t np = (N + CI_NR - 1) / CI_NR, kq = rt_ci_kq(K, taps), gb = np * kq * 64;
	int64_t mapn = map ? groups * np * (kq + RT_CI_MAP_HEAD) : 0;
	/* gs is N * js wherever groups > 1 (convolutions): not a key of its own */
	const int64_t params[] = { K, N, sgn | map << 1 | taps << 2, groups, ks, js };
	int8_t *bp;

	*bytes = groups * gb;
	bp = graph_derived_const(L->g, bv->data, "cigemm.pack", params, ARRAY_SIZE(params),
				 (size_t)(*bytes + 4 * mapn) + 1, &fresh);
	if (fresh)
		bp[*bytes + 4 * mapn] = (int8_t)rt_ci_pack(bv->data, K, N, groups, ks, js, gs, taps,
							   sgn, map, bp, map ? (int32_t *)(bp + *bytes)
							   : NULL);
	/*
	 * or the model packs the panels when it opens, where the blob holds
	 * B anyway (the kernel's own argument): the map stays a constant
	 */
	graph_derived_open(L->g, bp, "rt_cigemm_pack_const");
	return bp;
}

/*
 * Per group (laid out as ci_pack_at's), colsum(B') over K per column, then
 * zb' = zb - (128 for uint8 B) per column (zb: the constant zero point,
 * per tensor or per column of all groups, or 0), both zero padded to whole
 * panels (arena).
 */
static int32_t *ci_sums_at(struct lower *L, const struct value *bv, const struct value *bz,
			   int64_t K, int64_t N, int64_t groups, int64_t ks, int64_t js,
			   int64_t gs)
{
	int64_t np = (N + CI_NR - 1) / CI_NR;
	int32_t *s = arena_alloc(L->g->arena,
				 sizeof(int32_t) * (size_t)(groups * 2 * np * CI_NR));
	bool sgn = bv->dtype == DTYPE_I8;
	const uint8_t *src = bv->data, *z = bz ? bz->data : NULL;
	bool per = bz && !value_one_element(bz);

	for (int64_t g = 0; g < groups; g++)
		for (int64_t j = 0; j < N; j++) {
			int64_t zi = per ? g * N + j : 0;
			int32_t c = 0, zb = z ? (sgn ? (int8_t)z[zi] : z[zi]) : 0;
			int32_t *sg = s + g * 2 * np * CI_NR;

			for (int64_t k = 0; k < K; k++) {
				uint8_t v = src[g * gs + k * ks + j * js];

				c += sgn ? (int8_t)v : v - 128;
			}
			sg[j] = c;
			sg[np * CI_NR + j] = zb - (sgn ? 0 : 128);
		}
	return s;
}

static int32_t *ci_sums(struct lower *L, const struct value *bv, const struct value *bz,
			int64_t K, int64_t N)
{
	return ci_sums_at(L, bv, bz, K, N, 1, N, 1, 0);
}

/* &input i at 0, or a null pointer (0) when absent; *stride 0 for one element, else 1. */
static struct tir *ci_vec(struct lower *L, int i, struct tir **stride)
{
	const struct value *v = ci_opt(L, i);

	*stride = tir_int(L->b, v && !value_one_element(v));
	return v ? tir_addr(L->b, L->in[i], tir_int(L->b, 0)) : tir_int(L->b, 0);
}

/*
 * matmulinteger.gemm and qlinearmatmul.gemm: one call of rt_cigemm over
 * every row of A (its batch folds into M), B packed here.
 */
static int lower_cigemm(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct ci_io io = ci_io(L);
	const struct value *a = lower_in(L, io.ia), *bv = lower_in(L, io.ib);
	enum dtype yt = lower_out(L, 0)->dtype;
	struct matmul_geom mg;
	struct tir *args[23], *zs;
	int64_t K, N, bytes, mapn;
	int8_t *bp;
	bool map;
	int n = 0;

	if (!cigemm_ok(L))
		BUG("rt_cigemm on operands it does not take");
	matmul_geometry(a, bv, &mg);
	K = mg.K.c;
	N = mg.N.c;
	/* whole quads of A in place (K % 4 == 0): safe quads first (rt_ci_tile_map) */
	map = K % 4 == 0;
	bp = ci_pack_at(L, bv, K, N, 1, N, 1, 0, 0, map, &bytes);
	mapn = map ? (N + CI_NR - 1) / CI_NR * (K / 4 + RT_CI_MAP_HEAD) : 0;
	args[n++] = tir_mul(b, lower_numel(L, &mg.batch), tir_dim(b, mg.M));
	args[n++] = tir_int(b, N);
	args[n++] = tir_int(b, K);
	args[n++] = tir_addr(b, L->in[io.ia], tir_int(b, 0));
	args[n++] = tir_int(b, K);
	args[n++] = tir_int(b, a->dtype == DTYPE_I8);
	args[n++] = ci_vec(L, io.iaz, &zs);
	args[n++] = zs;
	args[n++] = tir_addr(b, lower_const(L, DTYPE_I8, bytes, bp), tir_int(b, 0));
	args[n++] = tir_addr(b, lower_const(L, DTYPE_I32, 2 * ((N + CI_NR - 1) / CI_NR * CI_NR),
					    ci_sums(L, bv, ci_opt(L, io.ibz), K, N)),
			     tir_int(b, 0));
	args[n++] = tir_int(b, bv->dtype == DTYPE_I8);
	args[n++] = tir_int(b, bp[bytes + 4 * mapn]);
	args[n++] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[n++] = tir_int(b, N);
	args[n++] = tir_int(b, yt == DTYPE_I32 ? 0 : yt == DTYPE_U8 ? 1 : 2);
	if (io.ql) {
		args[n++] = ci_vec(L, 1, &zs);
		args[n++] = zs;
		args[n++] = ci_vec(L, 4, &zs);
		args[n++] = zs;
		args[n++] = ci_vec(L, 6, &zs);
		args[n++] = ci_vec(L, 7, &zs);
	} else {
		for (int i = 0; i < 6; i++)
			args[n++] = tir_int(b, 0);
	}
	args[n++] = io.ql && ci_opt(L, 8) ? tir_addr(b, L->in[8], tir_int(b, 0)) : tir_int(b, 0);
	args[n++] = map ? tir_addr(b, lower_const(L, DTYPE_I32, mapn, bp + bytes), tir_int(b, 0))
		    : tir_int(b, 0);
	tir_extern(b, "rt_cigemm", args, n);
	return 0;
}

static const struct strategy_impl cigemm[] = { { "matmulinteger.gemm", 10, lower_cigemm } };
static const struct strategy_impl qlgemm[] = { { "qlinearmatmul.gemm", 10, lower_cigemm } };
static const struct strategy_impl qmm_loops[] = { { "matmulinteger.loops", 0, lower_own } };
static const struct strategy_impl qlmm_loops[] = { { "qlinearmatmul.loops", 0, lower_own } };

static const struct strategy_spec matmulinteger_specs[] = {
	{ "constant B, static K and N", cond_cigemm, cigemm, ARRAY_SIZE(cigemm) },
	{ "always", NULL, qmm_loops, ARRAY_SIZE(qmm_loops) },
};

static const struct op_strategy matmulinteger_strategy = {
	OP_MATMULINTEGER, matmulinteger_specs, ARRAY_SIZE(matmulinteger_specs)
};

static const struct strategy_spec qlinearmatmul_specs[] = {
	{ "constant B, static K and N", cond_cigemm, qlgemm, ARRAY_SIZE(qlgemm) },
	{ "always", NULL, qlmm_loops, ARRAY_SIZE(qlmm_loops) },
};

static const struct op_strategy qlinearmatmul_strategy = {
	OP_QLINEARMATMUL, qlinearmatmul_specs, ARRAY_SIZE(qlinearmatmul_specs)
};

/* ---- ConvInteger, QLinearConv: rt_ciconv2d (rt_cquant.h) ---- */

/* The inputs of ConvInteger or QLinearConv: x, w and their zero points. */
static struct ci_io ciconv_io(struct lower *L)
{
	bool ql = L->n->op == OP_QLINEARCONV;
	struct ci_io io = { ql, 0, ql ? 3 : 1, 2, ql ? 5 : 3 };

	return io;
}

/*
 * What rt_ciconv2d takes: a 1-D or 2-D convolution of static image size,
 * constant weights and weight zero point (packed at compile time)
 * (ciconv_takes), x its own buffer (its address is passed).
 */
static bool ciconv_takes(const struct value *x, const struct value *w, const struct value *wz)
{
	bool ok = w->data && (!wz || wz->data) && (w->shape.rank == 3 || w->shape.rank == 4);

	for (int i = 1; ok && i < x->shape.rank; i++)
		ok &= dim_is_const(x->shape.d[i]);
	return ok;
}

static bool ciconv_ok(struct lower *L)
{
	struct ci_io io = ciconv_io(L);

	return L->in[io.ia]->index >= 0 &&
	       ciconv_takes(lower_in(L, io.ia), lower_in(L, io.ib), ci_opt(L, io.ibz));
}

static struct tir *cond_ciconv(struct lower *L)
{
	return strategy_static(L, ciconv_ok(L));
}

/*
 * Whether c partition p is one QLinearConv that rt_ciconv2d runs
 * (ciconv_ok's ciconv_takes: a value another partition hands over is its
 * own buffer), so that it may read and write its 8-bit x and y
 * channels-last (target_kind.q8_cl_*).
 */
static bool c_q8conv(struct graph *g, const struct partition *p)
{
	const struct node *n = &g->nodes.v[p->nodes[0]];

	return p->n_nodes == 1 && n->op == OP_QLINEARCONV &&
	       ciconv_takes(node_in(g, n, 0), node_in(g, n, 3), node_in(g, n, 5));
}

int c_q8_cl_writes(struct graph *g, const struct partition *p)
{
	const struct value *y;

	if (!c_q8conv(g, p))
		return -1;
	y = node_out(g, &g->nodes.v[p->nodes[0]], 0);
	return y->data || (y->flags & (VALUE_INPUT | VALUE_OUTPUT)) ? -1 : (int)(y - g->values.v);
}

/*
 * A channels-last x takes whole pixels, which pays where a group has 4
 * channels or more: with fewer (a depthwise convolution, a 3-channel
 * image's stem) its pixels' few bytes are copied one pixel at a time
 * where the NCHW form transposes 16 by 16 (the stem alone: 1.62 -> 1.99 ms).
 */
bool c_q8_cl_reads(struct graph *g, const struct partition *p, const struct node *n, int slot,
		   int v)
{
	(void)v;
	return c_q8conv(g, p) && n == &g->nodes.v[p->nodes[0]] && slot == 0 &&
	       node_in(g, n, 3)->shape.d[1].c >= 4;
}

/*
 * convinteger.gemm and qlinearconv.gemm: per image one call of
 * rt_ciconv2d, the weights packed here per group as the GEMM's B (k the
 * reduction over channel and taps, j the group's output channels). A
 * window of more than one tap over 3 channels or more a group runs
 * implicit (no im2col matrix: rt_ciconv2d), the weights packed in its
 * quad order: ResNet-50's 3x3 layers 1.2-1.6x faster, its 7x7 stem of 3
 * channels 1.2-1.4x (alone, one thread, AVX2; README). At one tap the
 * im2col matrix is x transposed, which the implicit form makes too, and
 * the window sums it adds made 1x1 layers 1.1-1.5x slower; at 1 or 2
 * channels a group (depthwise) the channel quads would be mostly padding.
 */
static int lower_ciconv(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct ci_io io = ciconv_io(L);
	const struct value *x = lower_in(L, io.ia), *wt = lower_in(L, io.ib);
	enum dtype yt = lower_out(L, 0)->dtype;
	int64_t group = node_attr_int(L->n, "group", 1), M = wt->shape.d[0].c;
	int64_t Mg = M / group, Kg = shape_numel_static(&wt->shape) / M, P = 1, bytes;
	int64_t g2[6][2];	/* (kernel, stride, dilation, pad, in, out) x (h, w) */
	int64_t np = (Mg + CI_NR - 1) / CI_NR, kq, taps = 0, pads[4], sb;
	struct window w;
	struct shape s;
	struct tir *args[36], *zs, *n;
	int8_t *bp;
	int a = 0, o;
	/* channels-last x and y (core/emit/q8layout.c; only a QLinearConv's) */
	int lay = (x->layout == LAYOUT_Q8_CL) | (lower_out(L, 0)->layout == LAYOUT_Q8_CL) << 1;

	if (!ciconv_ok(L))
		BUG("rt_ciconv2d on operands it does not take");
	if (lay && !io.ql)
		BUG("a ConvInteger's operand handed over channels-last");
	if (conv_plan_at(L->g, (struct node *)L->n, io.ia, io.ib, &w, &s) < 0)
		return -1;
	o = 2 - w.r;
	for (int i = 0; i < 2; i++) {
		g2[0][i] = i < o ? 1 : w.k[i - o];
		g2[1][i] = i < o ? 1 : w.s[i - o];
		g2[2][i] = i < o ? 1 : w.d[i - o];
		g2[3][i] = i < o ? 0 : w.pb[i - o];
		g2[4][i] = i < o ? 1 : w.in[i - o];
		g2[5][i] = i < o ? 1 : w.out[i - o];
	}
	P = g2[5][0] * g2[5][1];
	if (g2[0][0] * g2[0][1] > 1 && wt->shape.d[1].c >= 3)
		taps = g2[0][0] * g2[0][1];
	kq = rt_ci_kq(Kg, taps);
	bp = ci_pack_at(L, wt, Kg, Mg, group, 1, Kg, Mg * Kg, taps, true, &bytes);
	n = tir_loop(b, tir_dim(b, x->shape.d[0]));
	args[a++] = tir_addr(b, L->in[io.ia], tir_mul(b, n, tir_int(b, wt->shape.d[1].c * group *
								    g2[4][0] * g2[4][1])));
	args[a++] = tir_int(b, wt->shape.d[1].c * group);
	args[a++] = tir_int(b, g2[4][0]);
	args[a++] = tir_int(b, g2[4][1]);
	for (int j = 0; j < 4; j++)
		for (int i = 0; i < 2; i++)
			args[a++] = tir_int(b, g2[j][i]);
	args[a++] = tir_int(b, g2[5][0]);
	args[a++] = tir_int(b, g2[5][1]);
	args[a++] = tir_int(b, x->dtype == DTYPE_I8);
	args[a++] = ci_vec(L, io.iaz, &zs);
	args[a++] = tir_addr(b, lower_const(L, DTYPE_I8, bytes, bp), tir_int(b, 0));
	args[a++] = tir_addr(b, lower_const(L, DTYPE_I32, group * 2 * np * CI_NR,
					    ci_sums_at(L, wt, ci_opt(L, io.ibz), Kg, Mg, group, 1,
						       Kg, Mg * Kg)),
			     tir_int(b, 0));
	args[a++] = tir_int(b, wt->dtype == DTYPE_I8);
	args[a++] = tir_int(b, bp[bytes + 4 * group * np * (kq + RT_CI_MAP_HEAD)]);
	args[a++] = tir_int(b, M);
	args[a++] = tir_int(b, group);
	args[a++] = io.ql && ci_opt(L, 8) ? tir_addr(b, L->in[8], tir_int(b, 0)) : tir_int(b, 0);
	args[a++] = tir_addr(b, L->out[0], tir_mul(b, n, tir_int(b, M * P)));
	args[a++] = tir_int(b, yt == DTYPE_I32 ? 0 : yt == DTYPE_U8 ? 1 : 2);
	if (io.ql) {
		args[a++] = ci_vec(L, 1, &zs);
		args[a++] = ci_vec(L, 4, &zs);
		args[a++] = zs;
		args[a++] = ci_vec(L, 6, &zs);
		args[a++] = ci_vec(L, 7, &zs);
	} else {
		for (int i = 0; i < 5; i++)
			args[a++] = tir_int(b, 0);
	}
	args[a++] = tir_addr(b, lower_const(L, DTYPE_I32, group * np * (kq + RT_CI_MAP_HEAD),
					    bp + bytes),
			     tir_int(b, 0));
	sb = taps ? rt_ci_implicit_bytes(wt->shape.d[1].c, g2[4][0], g2[4][1], g2[0][0],
					 g2[0][1], g2[1][0], g2[1][1], g2[2][0], g2[2][1],
					 g2[3][0], g2[3][1], g2[5][0], g2[5][1], pads)
		  : P * 4 * kq;
	args[a++] = tir_int(b, taps);
	args[a++] = tir_int(b, lay);
	args[a++] = tir_addr(b, lower_scratch(L, DTYPE_U8, dim_const(sb)), tir_int(b, 0));
	tir_extern(b, "rt_ciconv2d", args, a);
	tir_end(b);
	return 0;
}

static const struct strategy_impl ciconv[] = { { "convinteger.gemm", 10, lower_ciconv } };
static const struct strategy_impl qlconv[] = { { "qlinearconv.gemm", 10, lower_ciconv } };
static const struct strategy_impl qconv_loops[] = { { "convinteger.loops", 0, lower_own } };
static const struct strategy_impl qlconv_loops[] = { { "qlinearconv.loops", 0, lower_own } };

static const struct strategy_spec convinteger_specs[] = {
	{ "constant weights, 1-D or 2-D, static image", cond_ciconv, ciconv, ARRAY_SIZE(ciconv) },
	{ "always", NULL, qconv_loops, ARRAY_SIZE(qconv_loops) },
};

static const struct op_strategy convinteger_strategy = {
	OP_CONVINTEGER, convinteger_specs, ARRAY_SIZE(convinteger_specs)
};

static const struct strategy_spec qlinearconv_specs[] = {
	{ "constant weights, 1-D or 2-D, static image", cond_ciconv, qlconv, ARRAY_SIZE(qlconv) },
	{ "always", NULL, qlconv_loops, ARRAY_SIZE(qlconv_loops) },
};

static const struct op_strategy qlinearconv_strategy = {
	OP_QLINEARCONV, qlinearconv_specs, ARRAY_SIZE(qlinearconv_specs)
};

/*
 * float32 x of static size (its own buffer) to uint8, one scale (float32)
 * and zero point, no blocks: rt_quantize_u8.
 */
static struct tir *cond_quant_u8(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *s = lower_in(L, 1), *z = ci_opt(L, 2);

	return strategy_static(L, x->dtype == DTYPE_F32 && s->dtype == DTYPE_F32 && value_one_element(s) &&
			       (!z || value_one_element(z)) && lower_out(L, 0)->dtype == DTYPE_U8 &&
			       !node_attr_int(L->n, "block_size", 0) && L->in[0]->index >= 0);
}

/* quantizelinear.vec: one call of rt_quantize_u8 (rt_cquant.h). */
static int lower_quant_u8(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *args[5], *zs;

	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = lower_numel(L, &lower_in(L, 0)->shape);
	args[2] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[3] = ci_vec(L, 1, &zs);
	args[4] = ci_vec(L, 2, &zs);
	tir_extern(b, "rt_quantize_u8", args, 5);
	return 0;
}

static const struct strategy_impl quant_vec[] = { { "quantizelinear.vec", 10, lower_quant_u8 } };
static const struct strategy_impl quant_loops[] = { { "quantizelinear.loops", 0, lower_own } };

static const struct strategy_spec quant_specs[] = {
	{ "float32 to uint8, per tensor", cond_quant_u8, quant_vec, ARRAY_SIZE(quant_vec) },
	{ "always", NULL, quant_loops, ARRAY_SIZE(quant_loops) },
};

static const struct op_strategy quant_strategy = {
	OP_QUANTIZELINEAR, quant_specs, ARRAY_SIZE(quant_specs)
};

/* float32 input of static size, its own buffer */
static struct tir *cond_dynquant(struct lower *L)
{
	return strategy_static(L, lower_in(L, 0)->dtype == DTYPE_F32 && L->in[0]->index >= 0);
}

/* dynquantize.vec: one call of rt_dynquant (rt_cquant.h). */
static int lower_dynquant_vec(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *args[5];

	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = lower_numel(L, &lower_in(L, 0)->shape);
	args[2] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[3] = tir_addr(b, L->out[1], tir_int(b, 0));
	args[4] = tir_addr(b, L->out[2], tir_int(b, 0));
	tir_extern(b, "rt_dynquant", args, 5);
	return 0;
}

static const struct strategy_impl dynquant_vec[] = {
	{ "dynquantize.vec", 10, lower_dynquant_vec },
};
static const struct strategy_impl dynquant_loops[] = {
	{ "dynquantize.loops", 0, lower_own },
};

static const struct strategy_spec dynquant_specs[] = {
	{ "float32", cond_dynquant, dynquant_vec, ARRAY_SIZE(dynquant_vec) },
	{ "always", NULL, dynquant_loops, ARRAY_SIZE(dynquant_loops) },
};

static const struct op_strategy dynquant_strategy = {
	OP_DYNAMICQUANTIZELINEAR, dynquant_specs, ARRAY_SIZE(dynquant_specs)
};

/* ---- QLinearAdd: rt_qadd (rt_cquant.h) ---- */

/* Input i has y's shape, or one element; its own buffer. */
static bool qadd_operand(struct lower *L, int i)
{
	const struct value *v = lower_in(L, i);

	return L->in[i]->index >= 0 &&
	       (value_one_element(v) || shape_eq(&v->shape, &lower_out(L, 0)->shape));
}

static struct tir *cond_qadd(struct lower *L)
{
	return strategy_static(L, qadd_operand(L, 0) && qadd_operand(L, 3));
}

/* qlinearadd.vec: one call of rt_qadd over the whole tensor. */
static int lower_qadd_vec(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *args[13], *zs;

	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = lower_numel(L, &lower_in(L, 0)->shape);
	args[2] = tir_addr(b, L->in[3], tir_int(b, 0));
	args[3] = lower_numel(L, &lower_in(L, 3)->shape);
	args[4] = lower_numel(L, &lower_out(L, 0)->shape);
	args[5] = ci_vec(L, 1, &zs);
	args[6] = ci_vec(L, 2, &zs);
	args[7] = ci_vec(L, 4, &zs);
	args[8] = ci_vec(L, 5, &zs);
	args[9] = ci_vec(L, 6, &zs);
	args[10] = ci_vec(L, 7, &zs);
	args[11] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[12] = tir_int(b, lower_out(L, 0)->dtype == DTYPE_I8);
	tir_extern(b, "rt_qadd", args, 13);
	return 0;
}

static const struct strategy_impl qadd_vec[] = { { "qlinearadd.vec", 10, lower_qadd_vec } };
static const struct strategy_impl qadd_loops[] = { { "qlinearadd.loops", 0, lower_own } };

static const struct strategy_spec qadd_specs[] = {
	{ "a and b each y's shape or one element", cond_qadd, qadd_vec, ARRAY_SIZE(qadd_vec) },
	{ "always", NULL, qadd_loops, ARRAY_SIZE(qadd_loops) },
};

static const struct op_strategy qadd_strategy = {
	OP_QLINEARADD, qadd_specs, ARRAY_SIZE(qadd_specs)
};

/* ---- QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat (rt_cqpool.h) ---- */

/* 1-D or 2-D with a static image: rt_qavgpool2d applies. */
static struct tir *cond_qavgpool(struct lower *L)
{
	struct window w;

	return strategy_static(L, L->in[0]->index >= 0 && pool_window2d(L, &w));
}

static const struct strategy_impl qavgpool_rows[] = {
	{ "qlinearaveragepool.rows", 10, lower_pool_vrows },
};
static const struct strategy_impl qavgpool_loops[] = {
	{ "qlinearaveragepool.loops", 0, lower_own },
};

static const struct strategy_spec qavgpool_specs[] = {
	{ "1-D or 2-D, static image", cond_qavgpool, qavgpool_rows, ARRAY_SIZE(qavgpool_rows) },
	{ "always", NULL, qavgpool_loops, ARRAY_SIZE(qavgpool_loops) },
};

static const struct op_strategy qavgpool_strategy = {
	OP_QLINEARAVERAGEPOOL, qavgpool_specs, ARRAY_SIZE(qavgpool_specs)
};

static struct tir *cond_own_input(struct lower *L)
{
	return strategy_static(L, L->in[0]->index >= 0);
}

/* qlinearglobalaveragepool.rows: one call of rt_qgap, a plane a row. */
static int lower_qgap_rows(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *args[9], *zs, *hw = tir_int(b, 1);

	for (int i = 2; i < x->shape.rank; i++)
		hw = tir_mul(b, hw, tir_dim(b, x->shape.d[i]));
	args[0] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[1] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[2] = tir_mul(b, tir_dim(b, x->shape.d[0]), tir_dim(b, x->shape.d[1]));
	args[3] = hw;
	args[4] = ci_vec(L, 1, &zs);
	args[5] = ci_vec(L, 2, &zs);
	args[6] = ci_vec(L, 3, &zs);
	args[7] = ci_vec(L, 4, &zs);
	args[8] = tir_int(b, x->dtype == DTYPE_I8);
	tir_extern(b, "rt_qgap", args, 9);
	return 0;
}

static const struct strategy_impl qgap_rows[] = {
	{ "qlinearglobalaveragepool.rows", 10, lower_qgap_rows },
};
static const struct strategy_impl qgap_loops[] = {
	{ "qlinearglobalaveragepool.loops", 0, lower_own },
};

static const struct strategy_spec qgap_specs[] = {
	{ "x its own buffer", cond_own_input, qgap_rows, ARRAY_SIZE(qgap_rows) },
	{ "always", NULL, qgap_loops, ARRAY_SIZE(qgap_loops) },
};

static const struct op_strategy qgap_strategy = {
	OP_QLINEARGLOBALAVERAGEPOOL, qgap_specs, ARRAY_SIZE(qgap_specs)
};

/* Every X of the QLinearConcat its own buffer. */
static struct tir *cond_qconcat(struct lower *L)
{
	bool ok = true;

	for (int i = 2; i < L->n->n_in; i += 3)
		ok = ok && L->in[i]->index >= 0;
	return strategy_static(L, ok);
}

/* qlinearconcat.copy: one call of rt_qconcat per input, into its slab of y. */
static int lower_qconcat_copy(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	struct tir *outer = tir_int(b, 1), *inner = tir_int(b, 1), *zs;
	int64_t at = 0, total;

	if (axis < 0)
		axis += y->shape.rank;
	total = y->shape.d[axis].c;
	for (int k = 0; k < axis; k++)
		outer = tir_mul(b, outer, tir_dim(b, y->shape.d[k]));
	for (int k = axis + 1; k < y->shape.rank; k++)
		inner = tir_mul(b, inner, tir_dim(b, y->shape.d[k]));
	for (int i = 2; i < L->n->n_in; i += 3) {
		int64_t len = lower_in(L, i)->shape.d[axis].c;
		struct tir *args[11];

		args[0] = tir_addr(b, L->in[i], tir_int(b, 0));
		args[1] = outer;
		args[2] = tir_mul(b, tir_int(b, len), inner);
		args[3] = tir_mul(b, tir_int(b, total), inner);
		args[4] = tir_addr(b, L->out[0], tir_mul(b, tir_int(b, at), inner));
		args[5] = ci_vec(L, i + 1, &zs);
		args[6] = ci_vec(L, i + 2, &zs);
		args[7] = tir_int(b, lower_in(L, i)->dtype == DTYPE_I8);
		args[8] = ci_vec(L, 0, &zs);
		args[9] = ci_vec(L, 1, &zs);
		args[10] = tir_int(b, y->dtype == DTYPE_I8);
		tir_extern(b, "rt_qconcat", args, 11);
		at += len;
	}
	return 0;
}

static const struct strategy_impl qconcat_copy[] = {
	{ "qlinearconcat.copy", 10, lower_qconcat_copy },
};
static const struct strategy_impl qconcat_loops[] = {
	{ "qlinearconcat.loops", 0, lower_own },
};

static const struct strategy_spec qconcat_specs[] = {
	{ "every X its own buffer", cond_qconcat, qconcat_copy, ARRAY_SIZE(qconcat_copy) },
	{ "always", NULL, qconcat_loops, ARRAY_SIZE(qconcat_loops) },
};

static const struct op_strategy qconcat_strategy = {
	OP_QLINEARCONCAT, qconcat_specs, ARRAY_SIZE(qconcat_specs)
};

/* ---- MatMulNBits: rt_nbits (rt_cnbits.h) ---- */

/* What rt_nbits takes: 4-bit weights, every operand its own buffer. */
static bool nbits_ok(struct lower *L)
{
	bool ok = node_attr_int(L->n, "bits", 4) == 4;

	for (int i = 0; i < L->n->n_in && ok; i++)
		ok = !L->in[i] || L->in[i]->index >= 0;
	return ok;
}

static struct tir *cond_nbits(struct lower *L)
{
	return strategy_static(L, nbits_ok(L));
}

/* &input i at 0, or a null pointer (0) when absent or when want is false. */
static struct tir *nbits_ptr(struct lower *L, int i, bool want)
{
	return want && ci_opt(L, i) ? tir_addr(L->b, L->in[i], tir_int(L->b, 0))
	       : tir_int(L->b, 0);
}

/*
 * matmulnbits.gemm: one call of rt_nbits over every row of A (its batch
 * folds into M), B read as the model packs it, 4 bits a weight.
 */
static int lower_nbits(struct lower *L)
{
	struct tir_builder *b = L->b;
	int64_t K = node_attr_int(L->n, "K", 0), N = node_attr_int(L->n, "N", 0);
	int64_t bs = node_attr_int(L->n, "block_size", 0), kb = (K + bs - 1) / bs;
	const struct value *z = ci_opt(L, 3);
	struct tir *args[12];
	int n = 0;

	if (!nbits_ok(L))
		BUG("rt_nbits on operands it does not take");
	args[n++] = tir_bin(b, BIN_DIV, lower_numel(L, &lower_in(L, 0)->shape), tir_int(b, K));
	args[n++] = tir_int(b, N);
	args[n++] = tir_int(b, K);
	args[n++] = tir_int(b, bs);
	args[n++] = nbits_ptr(L, 0, true);
	args[n++] = nbits_ptr(L, 1, true);
	args[n++] = nbits_ptr(L, 2, true);
	args[n++] = nbits_ptr(L, 3, z && z->dtype == DTYPE_U8);
	args[n++] = nbits_ptr(L, 3, z && z->dtype == DTYPE_F32);
	args[n++] = nbits_ptr(L, 5, true);
	args[n++] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[n++] = tir_addr(b, lower_scratch(L, DTYPE_F32, dim_const(4 * (kb * bs + kb))),
			     tir_int(b, 0));
	tir_extern(b, "rt_nbits", args, n);
	return 0;
}

static const struct strategy_impl nbits_gemm[] = { { "matmulnbits.gemm", 10, lower_nbits } };
static const struct strategy_impl nbits_loops[] = { { "matmulnbits.loops", 0, lower_own } };

static const struct strategy_spec nbits_specs[] = {
	{ "4 bits", cond_nbits, nbits_gemm, ARRAY_SIZE(nbits_gemm) },
	{ "always", NULL, nbits_loops, ARRAY_SIZE(nbits_loops) },
};

static const struct op_strategy nbits_strategy = {
	OP_MATMULNBITS, nbits_specs, ARRAY_SIZE(nbits_specs)
};

const struct op_strategy *const c_strategies[] = {
	&matmul_strategy,
	&gemm_strategy,
	&conv_strategy,
	&maxpool_strategy,
	&averagepool_strategy,
	&gap_strategy,
	&softmax_strategy,
	&transpose_strategy,
	&attention_strategy,
	&logsoftmax_strategy,
	&lnorm_strategy,
	&rmsnorm_strategy,
	&matmulinteger_strategy,
	&qlinearmatmul_strategy,
	&convinteger_strategy,
	&qlinearconv_strategy,
	&quant_strategy,
	&dynquant_strategy,
	&qadd_strategy,
	&qavgpool_strategy,
	&qgap_strategy,
	&qconcat_strategy,
	&nbits_strategy,
	NULL,
};
