/*
 * rt_cgemm.h - the c target's register-tiled float GEMM, pasted into the
 * generated code as a prelude (embedded into collagec) by the strategies
 * matmul.micro, gemm.micro and conv.micro of backends/c/c_strategies.c.
 *
 *	C[i, j] = act(alpha * sum_k A[i, k] * B[k, j] + beta * bias(i, j) + res[i, j])
 *
 * A is read through a row and a column stride (a transposed A is as
 * cheap). B is packed: panels of RT_CG_NR columns, zero past N, one after
 * the other bps floats apart, row k of a panel at k * RT_CG_NR:
 * Bp[jp * bps + k * RT_CG_NR + jj] = B[k, jp * RT_CG_NR + jj]. collagec packs
 * a constant B at compile time into the weights blob (the same layout, see
 * c_strategies.c); rt_cgemm_pack packs one at run time. bias(i, j) is
 * bias[i * brs + j * bcs] (strides 0 broadcast: per row, per column or one
 * value), or nothing when bias is NULL. res (a residual Add of the fused
 * partition, row stride rrs) is added after it, or nothing when NULL; act
 * is then Relu or Clip, with the graph ops' results: NaN stays NaN, a tie
 * gives the bound (Relu(-0) = +0). Applied to the tile in registers on
 * write-back (with a residual: in L1 just after it), they spare the c
 * target's epilogue loop its pass over C.
 *
 * The blocking is BLIS's (Van Zee and van de Geijn, "BLIS: A Framework for
 * Rapidly Instantiating BLAS Functionality"): per chunk of RT_CG_NC panels,
 * per block of K (at most RT_CG_KC rows, the blocks of one K all about the
 * same length), per block of RT_CG_MC rows of A, the rows are packed
 * into tiles of RT_CG_MR rows, column-major within a tile (the MR values
 * of one k side by side, read with broadcasts from one moving pointer;
 * the block stays in L2), and every panel of the chunk runs the
 * micro-kernel over every tile of the block: a K-block slice of the panel
 * (KC x 16 floats) stays in L1 across the tiles. With few panels per
 * thread A is read in place instead, as packing would cost more than it
 * saves (ResNet-18's last convolutions: N = 49 pixels, 4 panels); with
 * AVX-512 a row-major A is always read in place (RT_CG_PACK_MIN).
 *
 * The micro-kernel keeps an RT_CG_MR x 16 tile of C in registers (GCC
 * vector extensions: 6 x 2 ymm with AVX2 and FMA, 3 x 4 xmm with SSE2 only;
 * a tile of 8 columns or fewer, the last of N = 49 say, multiplies half of
 * them) over one K block, then writes the tile back. With AVX-512 a tile
 * spans two panels side by side (RT_CG_NP), 8 x 2 zmm: one panel's 8
 * accumulators left the FMA units waiting on loads (8 broadcasts and one
 * load for 8 FMAs), and MLP-sized GEMMs ran 15% slower (gemm_bench,
 * 64x1024x784, 200 against 232 GFLOP/s on one Zen core); the two panels'
 * K-block slices, 32 KiB at most, stay in L1. A lone last panel takes the
 * one-panel tile; each C[i, j] is the same sum either way. The tile is
 * written back in vector registers: stored on the first block, added to C on the
 * next ones, and on the last one alpha, the bias and the activation
 * applied.
 * Edge tiles (rows past M: zero rows of the packed A; columns past N: the
 * panel's zero padding) go through a tile on the stack.
 *
 * The packed block lives on each thread's stack: RT_CG_MC x RT_CG_KC
 * floats (72 KiB with AVX2, 96 KiB with AVX-512).
 *
 * Deterministic: every C[i, j] is summed over k in the same order (k
 * within a block in turn, the blocks in turn), whatever the thread count;
 * threads split the panels (or the rows, when few panels would share out
 * unevenly), never K.
 *
 * Up to RT_CG_GV_MR rows of A (a decoder's step: one) take the GEMV form
 * (rt_cg_gv_panels): two panels at a time, each read once and in order,
 * the same sums bit for bit, threads over runs of panels.
 */
#ifndef RT_CGEMM_H
#define RT_CGEMM_H

#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>		/* rt_cg_row16's float16 conversions */
#endif

#define RT_CG_NR 16		/* columns of a panel: one tile's width */
#define RT_CG_KC 256		/* most rows of B per block: a 16 KiB panel slice in L1 */
#define RT_CG_NC 32		/* panels per chunk: C's 512 columns of a block stay in L2 */
#if defined(__AVX512F__)
#define RT_CG_MR 8		/* 8 x 2 zmm accumulators: a tile spans two panels */
#define RT_CG_VBYTES 64
#define RT_CG_NP 2
#elif defined(__AVX__)
#define RT_CG_MR 6		/* 12 of 16 ymm: accumulators, 2 for B, 1 for A */
#define RT_CG_VBYTES 32
#else
#define RT_CG_MR 3		/* 12 of 16 xmm */
#define RT_CG_VBYTES 16
#endif
#ifndef RT_CG_NP
#define RT_CG_NP 1		/* panels a tile spans */
#endif
#define RT_CG_TW (RT_CG_NR * RT_CG_NP)	/* a tile's widest: its columns */
#define RT_CG_MC (RT_CG_MR * 12)	/* rows of A per packed block: 72 KiB with AVX2 */
/*
 * Panels per thread and chunk from which a row-major A is packed. With
 * AVX-512 never: the two-panel tiles read A in place faster than a
 * packed copy is made (gemm_bench on one Zen core: 64x1024x784 230 ->
 * 245 GFLOP/s, 512x196x256 200 -> 230), and threads' shares no longer
 * each pack all of A again.
 */
#if RT_CG_NP == 2
#define RT_CG_PACK_MIN (RT_CG_NC + 1)
#else
#define RT_CG_PACK_MIN 4
#endif

enum rt_cg_act { RT_CG_ACT_NONE, RT_CG_ACT_RELU, RT_CG_ACT_CLIP };

struct rt_cg_epilogue {
	float alpha, beta;
	const float *bias;	/* NULL: none */
	int64_t brs, bcs;	/* bias(i, j) = bias[i * brs + j * bcs] */
	int act;		/* enum rt_cg_act */
	float lo, hi;		/* RT_CG_ACT_CLIP's bounds */
	const float *res;	/* NULL: none; else res(i, j) = res[i * rrs + j] */
	int64_t rrs;
};

/* One K block: the blocks' length, the first one's start. */
struct rt_cg_kblock {
	int64_t k0, kc;
	int first, last;
};

/* The block of K from k0, kstep long (the last one shorter). */
static inline struct rt_cg_kblock rt_cg_kblock_at(int64_t k0, int64_t K, int64_t kstep)
{
	struct rt_cg_kblock kb;

	kb.k0 = k0;
	kb.kc = K - k0 < kstep ? K - k0 : kstep;
	kb.first = k0 == 0;
	kb.last = k0 + kb.kc >= K;
	return kb;
}

/*
 * The residual of rows [i0, i0 + mr), columns [j0, j0 + nr) added to the
 * tile just written back to c, then act: a pass over the tile while it is
 * in L1. Not in the registers' write-back: one more load stream there
 * slowed rt_cg_tile_nv down by 3% (GCC kept fewer values in registers),
 * more than the epilogue loop this replaces costs.
 */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void rt_cg_residual(float *c, int64_t ldc, int mr, int nr, int64_t i0, int64_t j0,
			   const struct rt_cg_epilogue *e)
{
	float lo = e->lo, hi = e->hi;

	for (int r = 0; r < mr; r++) {
		float *restrict cr = c + r * ldc;
		const float *restrict rr = e->res + (i0 + r) * e->rrs + j0;

		if (e->act == RT_CG_ACT_RELU) {
			for (int j = 0; j < nr; j++) {
				float v = cr[j] + rr[j];

				cr[j] = (v > 0.0f) | (v != v) ? v : 0.0f;
			}
		} else if (e->act == RT_CG_ACT_CLIP) {
			for (int j = 0; j < nr; j++) {
				float v = cr[j] + rr[j];

				v = (v > lo) | (v != v) ? v : lo;
				cr[j] = (v < hi) | (v != v) ? v : hi;
			}
		} else {
			for (int j = 0; j < nr; j++)
				cr[j] += rr[j];
		}
	}
}

#if defined(__GNUC__)
#define RT_CG_NV (RT_CG_NR * 4 / RT_CG_VBYTES)	/* vectors per row of a tile */
#define RT_CG_VL (RT_CG_VBYTES / 4)		/* floats per vector */
typedef float rt_cg_vec __attribute__((vector_size(RT_CG_VBYTES)));
typedef int32_t rt_cg_ivec __attribute__((vector_size(RT_CG_VBYTES)));
/* the same vector read from or written to memory of any alignment, in place */
typedef float rt_cg_uvec __attribute__((vector_size(RT_CG_VBYTES), aligned(4), may_alias));

/* Row r of the tile's bias, vector v (the tile at rows i0, columns j0, nr wide). */
static inline rt_cg_vec rt_cg_bias(const struct rt_cg_epilogue *e, int64_t i, int64_t j0, int nr,
				   int v)
{
	const float *b = e->bias + i * e->brs + j0 * e->bcs;
	float t[RT_CG_VL];

	if (e->bcs == 0)
		return (rt_cg_vec){ 0 } + b[0];
	if (e->bcs == 1 && (v + 1) * RT_CG_VL <= nr)
		return *(const rt_cg_uvec *)(b + v * RT_CG_VL);
	for (int j = 0; j < RT_CG_VL; j++) {
		int jj = v * RT_CG_VL + j;

		t[j] = jj < nr ? b[jj * e->bcs] : 0.0f;
	}
	return *(const rt_cg_uvec *)t;
}

/*
 * act(alpha * x + beta * bias), act left to rt_cg_residual when there is a
 * residual: the graph's Relu and Clip, NaN-propagating maxima and minima
 * as the c target prints them ((a > b) | (a != a) ? a : b), so the fused
 * write-back gives what the epilogue loop it replaces did, bit for bit.
 */
static inline rt_cg_vec rt_cg_epi(rt_cg_vec x, const struct rt_cg_epilogue *e, int64_t i,
				  int64_t j0, int nr, int v)
{
	rt_cg_vec zero = { 0 };
	rt_cg_ivec m;

	x *= e->alpha;
	if (e->bias)
		x += e->beta * rt_cg_bias(e, i, j0, nr, v);
	if (e->res) {
		/* rt_cg_residual adds it, then applies act */
	} else if (e->act == RT_CG_ACT_RELU) {
		m = (x > zero) | (x != x);	/* max(x, 0): NaN stays, -0 gives +0 */
		x = (rt_cg_vec)((rt_cg_ivec)x & m);
	} else if (e->act == RT_CG_ACT_CLIP) {
		rt_cg_vec lo = zero + e->lo, hi = zero + e->hi;

		m = (x > lo) | (x != x);	/* max(x, lo), then min(that, hi) */
		x = (rt_cg_vec)(((rt_cg_ivec)x & m) | ((rt_cg_ivec)lo & ~m));
		m = (x < hi) | (x != x);
		x = (rt_cg_vec)(((rt_cg_ivec)x & m) | ((rt_cg_ivec)hi & ~m));
	}
	return x;
}

/*
 * One tile: t = sum over the block's k of A(r, k) * bp[k * 16 ..], A(r, k)
 * at a[r * ars + k * acs], over the first nv vectors of the panel's
 * columns (a constant), then the tile written back to c (mr x nr of it,
 * row i0 of C) as the top of the file says. With np = 2 (a constant) the
 * tile spans two panels, bps floats apart in Bp and side by side in C:
 * nr counts the columns of both.
 */
static inline __attribute__((always_inline)) void
rt_cg_tile_nv(const struct rt_cg_kblock *kb, const float *a, int64_t ars, int64_t acs,
	      const float *bp, int64_t bps, float *c, int64_t ldc, int mr, int nr, int64_t i0,
	      int64_t j0, const struct rt_cg_epilogue *e, const int nv, const int np)
{
	rt_cg_vec t[RT_CG_MR][RT_CG_NV * RT_CG_NP];
	float edge[RT_CG_MR * RT_CG_TW] __attribute__((aligned(RT_CG_VBYTES)));
	float *cc = c;
	int64_t ldcc = ldc;
	int full = mr == RT_CG_MR && nr == np * RT_CG_NR && nv == RT_CG_NV;

#pragma GCC unroll 8
	for (int r = 0; r < RT_CG_MR; r++)
#pragma GCC unroll 4
		for (int v = 0; v < nv * np; v++)
			t[r][v] = (rt_cg_vec){ 0 };
#pragma GCC unroll 2
	for (int64_t k = 0; k < kb->kc; k++) {
		rt_cg_vec b[RT_CG_NV * RT_CG_NP];

#pragma GCC unroll 4
		for (int v = 0; v < nv * np; v++)
			b[v] = *(const rt_cg_uvec *)(bp + v / nv * bps + k * RT_CG_NR +
						     v % nv * RT_CG_VL);
#pragma GCC unroll 8
		for (int r = 0; r < RT_CG_MR; r++) {
			float x = a[r * ars + k * acs];

#pragma GCC unroll 4
			for (int v = 0; v < nv * np; v++)
				t[r][v] += x * b[v];
		}
	}
	if (!full) {
		cc = edge;
		ldcc = RT_CG_TW;
		if (!kb->first)
			for (int r = 0; r < mr; r++)
				memcpy(edge + r * RT_CG_TW, c + r * ldc, sizeof(float) * (size_t)nr);
	}
#pragma GCC unroll 8
	for (int r = 0; r < RT_CG_MR; r++) {
		if (r >= mr)
			break;
#pragma GCC unroll 4
		for (int v = 0; v < nv * np; v++) {
			rt_cg_uvec *p = (rt_cg_uvec *)(cc + r * ldcc + v * RT_CG_VL);
			rt_cg_vec x = t[r][v];

			if (!kb->first)
				x += *p;
			if (kb->last)
				x = rt_cg_epi(x, e, i0 + r, j0, nr, v);
			*p = x;
		}
	}
	if (!full)
		for (int r = 0; r < mr; r++)
			memcpy(c + r * ldc, edge + r * RT_CG_TW, sizeof(float) * (size_t)nr);
	if (kb->last && e->res)
		rt_cg_residual(c, ldc, mr, nr, i0, j0, e);
}

/*
 * A tile of the full panel width, or with 8 columns or fewer (the last
 * panel of N = 49, say) of its first half: 6 x 8 FMAs a k, half the work.
 */
static inline void rt_cg_tile(const struct rt_cg_kblock *kb, const float *a, int64_t ars,
			      int64_t acs, const float *bp, float *c, int64_t ldc, int mr, int nr,
			      int64_t i0, int64_t j0, const struct rt_cg_epilogue *e)
{
#if RT_CG_NV >= 2
	if (nr <= RT_CG_NR / 2) {
		rt_cg_tile_nv(kb, a, ars, acs, bp, 0, c, ldc, mr, nr, i0, j0, e, RT_CG_NV / 2, 1);
		return;
	}
#endif
	rt_cg_tile_nv(kb, a, ars, acs, bp, 0, c, ldc, mr, nr, i0, j0, e, RT_CG_NV, 1);
}

#if RT_CG_NP == 2
/* The tile over two panels (bps floats apart), nr of their columns. */
static inline void rt_cg_tile2(const struct rt_cg_kblock *kb, const float *a, int64_t ars,
			       int64_t acs, const float *bp, int64_t bps, float *c, int64_t ldc,
			       int mr, int nr, int64_t i0, int64_t j0,
			       const struct rt_cg_epilogue *e)
{
	rt_cg_tile_nv(kb, a, ars, acs, bp, bps, c, ldc, mr, nr, i0, j0, e, RT_CG_NV, 2);
}
#endif
#else
/* Without GCC's vectors: the same blocks, plain loops. */
static inline float rt_cg_epi1(float v, const struct rt_cg_epilogue *e, int64_t i, int64_t j)
{
	v *= e->alpha;
	if (e->bias)
		v += e->beta * e->bias[i * e->brs + j * e->bcs];
	if (e->res)
		return v;	/* rt_cg_residual: the residual, then act */
	if (e->act == RT_CG_ACT_RELU) {
		v = (v > 0.0f) | (v != v) ? v : 0.0f;
	} else if (e->act == RT_CG_ACT_CLIP) {
		v = (v > e->lo) | (v != v) ? v : e->lo;
		v = (v < e->hi) | (v != v) ? v : e->hi;
	}
	return v;
}

static inline void rt_cg_tile(const struct rt_cg_kblock *kb, const float *a, int64_t ars,
			      int64_t acs, const float *bp, float *c, int64_t ldc, int mr, int nr,
			      int64_t i0, int64_t j0, const struct rt_cg_epilogue *e)
{
	for (int r = 0; r < mr; r++)
		for (int j = 0; j < nr; j++) {
			float s = 0.0f;

			for (int64_t k = 0; k < kb->kc; k++)
				s += a[r * ars + k * acs] * bp[k * RT_CG_NR + j];
			if (!kb->first)
				s += c[r * ldc + j];
			c[r * ldc + j] = kb->last ? rt_cg_epi1(s, e, i0 + r, j0 + j) : s;
		}
	if (kb->last && e->res)
		rt_cg_residual(c, ldc, mr, nr, i0, j0, e);
}
#endif

/*
 * ap = rows [i0, i0 + mc) of A, columns [k0, k0 + kc), in tiles of
 * RT_CG_MR rows: ap[(t * kc + k) * RT_CG_MR + r] = A[i0 + t * MR + r, k0 + k],
 * zero for rows past M.
 */
static inline void rt_cg_pack_a(int64_t M, const float *A, int64_t ars, int64_t acs, int64_t i0,
				int64_t mc, int64_t k0, int64_t kc, float *ap)
{
	for (int64_t t = 0; t < mc; t += RT_CG_MR) {
		float *d = ap + t * kc;

		for (int r = 0; r < RT_CG_MR; r++) {
			int64_t i = i0 + t + r;
			const float *s = A + i * ars + k0 * acs;

			if (i >= M)
				for (int64_t k = 0; k < kc; k++)
					d[k * RT_CG_MR + r] = 0.0f;
			else if (acs == 1)
				for (int64_t k = 0; k < kc; k++)
					d[k * RT_CG_MR + r] = s[k];
			else
				for (int64_t k = 0; k < kc; k++)
					d[k * RT_CG_MR + r] = s[k * acs];
		}
	}
}

/*
 * Lines [l0, l0 + n) of the n-line run at p (up to end) into L2. While the
 * tiles of a block of rows run over one panel's slice of a K block, the
 * next panel's slice is fetched, a share per tile: a B larger than the
 * last-level cache (an MLP's weights, read once per run) otherwise comes
 * from memory at the first tile of every slice, the hardware prefetcher
 * starting each 16 KiB run cold.
 */
static inline void rt_cg_prefetch(const char *p, int64_t l0, int64_t n, int64_t end)
{
#if defined(__GNUC__)
	for (int64_t l = l0; l < l0 + n && l < end; l++)
		__builtin_prefetch(p + l * 64, 0, 2);
#else
	(void)p, (void)l0, (void)n, (void)end;
#endif
}

/*
 * Panels [jp0, jp1) of C, in chunks of RT_CG_NC panels, block by block of
 * K and of rows; ap is the packed block's room (RT_CG_MC * RT_CG_KC). A
 * (row-major) is packed when a chunk has pack_min panels or more.
 */
static inline void rt_cg_panels(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
				int64_t acs, const float *Bp, int64_t bps, float *C, int64_t ldc,
				int64_t jp0, int64_t jp1, const struct rt_cg_epilogue *e,
				float *ap, int64_t pack_min)
{
	/* K blocks of about the same length: no short last block */
	int64_t nkb = K > 0 ? (K + RT_CG_KC - 1) / RT_CG_KC : 1;
	int64_t kstep = K > 0 ? (K + nkb - 1) / nkb : 0;

	for (int64_t jc = jp0; jc < jp1; jc += RT_CG_NC) {
		int64_t jce = jp1 - jc < RT_CG_NC ? jp1 : jc + RT_CG_NC;
		int pack = jce - jc >= pack_min || acs != 1;

		for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kstep) {
			struct rt_cg_kblock kb = rt_cg_kblock_at(k0, K, kstep);

			for (int64_t ic = 0; ic < M; ic += RT_CG_MC) {
				int64_t mc = M - ic < RT_CG_MC ? M - ic : RT_CG_MC;

				if (pack)
					rt_cg_pack_a(M, A, ars, acs, ic, mc, k0, kb.kc, ap);
				for (int64_t jp = jc; jp < jce; jp += RT_CG_NP) {
					/* panels of this tile: two where RT_CG_NP is and the chunk has them */
					int np = jp + RT_CG_NP <= jce ? RT_CG_NP : 1;
					int64_t j0 = jp * RT_CG_NR, jl = (jp + np - 1) * RT_CG_NR;
					int nr = (np - 1) * RT_CG_NR +
						 (N - jl < RT_CG_NR ? (int)(N - jl) : RT_CG_NR);
					const float *bp = Bp + jp * bps + k0 * RT_CG_NR;
					/* the next panels' slices, a share per tile (see rt_cg_prefetch) */
					int64_t nn = jce - jp - np < np ? jce - jp - np : np;
					int64_t lines = kb.kc * RT_CG_NR * 4 / 64;
					int64_t tiles = (mc + RT_CG_MR - 1) / RT_CG_MR;
					int64_t per = (lines + tiles - 1) / tiles;

					for (int64_t ir = 0; ir < mc; ir += RT_CG_MR) {
						int64_t i0 = ic + ir;
						int mr = M - i0 < RT_CG_MR ? (int)(M - i0) : RT_CG_MR;
						float *c = C + i0 * ldc + j0;
						const float *a = ap + ir * kb.kc;
						int64_t as = 1, ak = RT_CG_MR;

						for (int64_t q = 0; q < nn; q++)
							rt_cg_prefetch((const char *)(bp + (np + q) * bps),
								       ir / RT_CG_MR * per, per, lines);
						if (!pack && mr == RT_CG_MR) {
							a = A + i0 * ars + k0;
							as = ars, ak = 1;
						} else if (!pack) {
							/* rows past M: a packed tile's zero rows */
							rt_cg_pack_a(M, A, ars, acs, i0, mr, k0,
								     kb.kc, ap);
							a = ap;
						}
#if RT_CG_NP == 2
						if (np == 2) {
							rt_cg_tile2(&kb, a, as, ak, bp, bps, c, ldc, mr,
								    nr, i0, j0, e);
							continue;
						}
#endif
						rt_cg_tile(&kb, a, as, ak, bp, c, ldc, mr, nr, i0, j0, e);
					}
				}
			}
			if (K == 0)
				break;
		}
	}
}

/*
 * The GEMV form, for RT_CG_GV_MR rows of A or fewer (a decode step's one
 * token): a tile would multiply RT_CG_MR rows, all but these of zeros
 * (eight times the multiply-adds for one row with AVX-512); a run of panels is
 * instead read once, two panels side by side (two loads, two independent
 * sums a row), every row of A beside them. B, a panel run being one
 * contiguous stretch of Bp, streams from memory in order whatever the
 * thread count: threads take runs of panels.
 *
 * Each C[i, j] is the micro-kernel's sum, bit for bit: over the same K
 * blocks, each summed from zero in k order, added to what the blocks before
 * left in C, alpha, the bias, the activation and the residual applied as
 * rt_cg_tile_nv applies them. A row gives the same bits through either
 * form, and so on any number of threads.
 */
#ifndef RT_CG_GV_MR		/* (a test may set it: 1 to 4) */
#if defined(__AVX512F__)
#define RT_CG_GV_MR 4		/* 4 rows x 2 panels: 8 zmm accumulators */
#elif defined(__AVX__)
#define RT_CG_GV_MR 3		/* 3 rows x 2 panels x 2 ymm: 12 accumulators */
#else
#define RT_CG_GV_MR 1		/* 2 panels x 4 xmm: 8 accumulators */
#endif
#endif

#if defined(__GNUC__)
/*
 * Rows [i0, i0 + mr) over the np panels (1 or 2) from bp (panels bps
 * apart, K block kb), the last one nr columns wide (the others 16), written
 * back to c (row i0 of C, column j0) as rt_cg_tile_nv writes a tile back.
 */
static inline __attribute__((always_inline)) void
rt_cg_gv_tile(const struct rt_cg_kblock *kb, const float *a, int64_t ars, int64_t acs,
	      const float *bp, int64_t bps, float *c, int64_t ldc, const int mr, int np, int nr,
	      int64_t i0, int64_t j0, const struct rt_cg_epilogue *e)
{
	rt_cg_vec t[RT_CG_GV_MR][2][RT_CG_NV];
	float edge[RT_CG_GV_MR * RT_CG_NR] __attribute__((aligned(RT_CG_VBYTES)));
	const float *b1 = np > 1 ? bp + bps : bp;

#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < RT_CG_NV; v++)
			t[r][0][v] = t[r][1][v] = (rt_cg_vec){ 0 };
	if (np > 1) {
#pragma GCC unroll 2
		for (int64_t k = 0; k < kb->kc; k++) {
			const rt_cg_uvec *p0 = (const rt_cg_uvec *)(bp + k * RT_CG_NR);
			const rt_cg_uvec *p1 = (const rt_cg_uvec *)(b1 + k * RT_CG_NR);
			rt_cg_vec x0[RT_CG_NV], x1[RT_CG_NV];

#pragma GCC unroll 4
			for (int v = 0; v < RT_CG_NV; v++) {
				x0[v] = p0[v];
				x1[v] = p1[v];
			}
#pragma GCC unroll 4
			for (int r = 0; r < mr; r++) {
				float x = a[r * ars + k * acs];

#pragma GCC unroll 4
				for (int v = 0; v < RT_CG_NV; v++) {
					t[r][0][v] += x * x0[v];
					t[r][1][v] += x * x1[v];
				}
			}
		}
	} else {
#pragma GCC unroll 2
		for (int64_t k = 0; k < kb->kc; k++) {
			const rt_cg_uvec *p0 = (const rt_cg_uvec *)(bp + k * RT_CG_NR);

#pragma GCC unroll 4
			for (int r = 0; r < mr; r++) {
				float x = a[r * ars + k * acs];

#pragma GCC unroll 4
				for (int v = 0; v < RT_CG_NV; v++)
					t[r][0][v] += x * p0[v];
			}
		}
	}
	for (int p = 0; p < np; p++) {
		int w = p == np - 1 ? nr : RT_CG_NR;
		float *cp = c + p * RT_CG_NR, *cc = cp;
		int64_t ldcc = ldc;

		if (w < RT_CG_NR) {
			cc = edge;
			ldcc = RT_CG_NR;
			if (!kb->first)
				for (int r = 0; r < mr; r++)
					memcpy(edge + r * RT_CG_NR, cp + r * ldc,
					       sizeof(float) * (size_t)w);
		}
#pragma GCC unroll 4
		for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
			for (int v = 0; v < RT_CG_NV; v++) {
				rt_cg_uvec *q = (rt_cg_uvec *)(cc + r * ldcc + v * RT_CG_VL);
				rt_cg_vec x = t[r][p][v];

				if (!kb->first)
					x += *q;
				if (kb->last)
					x = rt_cg_epi(x, e, i0 + r, j0 + p * RT_CG_NR, w, v);
				*q = x;
			}
		if (w < RT_CG_NR)
			for (int r = 0; r < mr; r++)
				memcpy(cp + r * ldc, edge + r * RT_CG_NR,
				       sizeof(float) * (size_t)w);
		if (kb->last && e->res)
			rt_cg_residual(cp, ldc, mr, w, i0, j0 + p * RT_CG_NR, e);
	}
}
#else
/* Without GCC's vectors: the tile, a panel at a time (the same sums). */
static inline void rt_cg_gv_tile(const struct rt_cg_kblock *kb, const float *a, int64_t ars,
				 int64_t acs, const float *bp, int64_t bps, float *c, int64_t ldc,
				 int mr, int np, int nr, int64_t i0, int64_t j0,
				 const struct rt_cg_epilogue *e)
{
	for (int p = 0; p < np; p++)
		rt_cg_tile(kb, a, ars, acs, bp + p * bps, c + p * RT_CG_NR, ldc, mr,
			   p == np - 1 ? nr : RT_CG_NR, i0, j0 + p * RT_CG_NR, e);
}
#endif

/* rt_cg_gv_tile for all M <= RT_CG_GV_MR rows, the row count a constant of each copy. */
static inline void rt_cg_gv_rows(const struct rt_cg_kblock *kb, int64_t M, const float *a,
				 int64_t ars, int64_t acs, const float *bp, int64_t bps, float *c,
				 int64_t ldc, int np, int nr, int64_t j0,
				 const struct rt_cg_epilogue *e)
{
	switch (M) {
	case 1:
		rt_cg_gv_tile(kb, a, ars, acs, bp, bps, c, ldc, 1, np, nr, 0, j0, e);
		break;
#if RT_CG_GV_MR >= 2
	case 2:
		rt_cg_gv_tile(kb, a, ars, acs, bp, bps, c, ldc, 2, np, nr, 0, j0, e);
		break;
#endif
#if RT_CG_GV_MR >= 3
	case 3:
		rt_cg_gv_tile(kb, a, ars, acs, bp, bps, c, ldc, 3, np, nr, 0, j0, e);
		break;
#endif
#if RT_CG_GV_MR >= 4
	case 4:
		rt_cg_gv_tile(kb, a, ars, acs, bp, bps, c, ldc, 4, np, nr, 0, j0, e);
		break;
#endif
	default:
		break;
	}
}

/*
 * Panels [jp0, jp1) of C for M <= RT_CG_GV_MR rows, two at a time, the K
 * blocks of rt_cg_panels within each pair.
 */
static inline void rt_cg_gv_panels(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
				   int64_t acs, const float *Bp, int64_t bps, float *C,
				   int64_t ldc, int64_t jp0, int64_t jp1,
				   const struct rt_cg_epilogue *e)
{
	int64_t nkb = K > 0 ? (K + RT_CG_KC - 1) / RT_CG_KC : 1;
	int64_t kstep = K > 0 ? (K + nkb - 1) / nkb : 0;

	for (int64_t jp = jp0; jp < jp1; jp += 2) {
		int np = jp + 1 < jp1 ? 2 : 1;
		int64_t j0 = jp * RT_CG_NR, jl = (jp + np - 1) * RT_CG_NR;
		int nr = N - jl < RT_CG_NR ? (int)(N - jl) : RT_CG_NR;

		for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kstep) {
			struct rt_cg_kblock kb = rt_cg_kblock_at(k0, K, kstep);

			rt_cg_gv_rows(&kb, M, A + k0 * acs, ars, acs, Bp + jp * bps + k0 * RT_CG_NR,
				      bps, C + j0, ldc, np, nr, j0, e);
			if (K == 0)
				break;
		}
	}
}

/*
 * rt_cgemm with A packed only from pack_min panels per thread and chunk
 * (RT_CG_PACK_MIN there): a caller whose K is long and whose panels are
 * few reads A in place, each block of rows then coming from L2 for every
 * panel after the first, rather than copying all of A once more.
 */
/* rt_cgemm_ex's work, split into nt shares for rt_par_for. */
struct rt_cg_job {
	int64_t M, N, K, ars, acs, bps, ldc, np, pack_min;
	const float *A, *Bp;
	float *C;
	struct rt_cg_epilogue e;
	int nt, rows;
};

/* Shares [t0, t1) of nt of rt_cg_gv_panels' panel pairs, for rt_par_for. */
static void rt_cg_gv_share(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cg_job *j = v;
	int64_t pairs = (j->np + 1) / 2;
	int64_t p0 = 2 * (pairs * t0 / j->nt), p1 = 2 * (pairs * t1 / j->nt);

	rt_cg_gv_panels(j->M, j->N, j->K, j->A, j->ars, j->acs, j->Bp, j->bps, j->C, j->ldc, p0,
			p1 < j->np ? p1 : j->np, &j->e);
}

static void rt_cg_share(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cg_job *j = v;
	float ap[RT_CG_MC * RT_CG_KC] __attribute__((aligned(64)));
	int64_t nt = j->nt;

	for (int64_t t = t0; t < t1; t++) {
		if (j->rows) {
			int64_t tiles = (j->M + RT_CG_MR - 1) / RT_CG_MR;
			int64_t r0 = tiles * t / nt * RT_CG_MR, r1 = tiles * (t + 1) / nt * RT_CG_MR;
			struct rt_cg_epilogue et = j->e;

			r1 = r1 < j->M ? r1 : j->M;
			if (j->e.bias)
				et.bias = j->e.bias + r0 * j->e.brs;
			if (j->e.res)
				et.res = j->e.res + r0 * j->e.rrs;
			if (r0 < r1)
				rt_cg_panels(r1 - r0, j->N, j->K, j->A + r0 * j->ars, j->ars, j->acs,
					     j->Bp, j->bps, j->C + r0 * j->ldc, j->ldc, 0, j->np, &et,
					     ap, j->pack_min);
		} else {
			rt_cg_panels(j->M, j->N, j->K, j->A, j->ars, j->acs, j->Bp, j->bps, j->C,
				     j->ldc, j->np * t / nt, j->np * (t + 1) / nt, &j->e, ap,
				     j->pack_min);
		}
	}
}

static inline void rt_cgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			       int64_t ars, int64_t acs, const float *Bp, int64_t bps, float *C,
			       int64_t ldc, const float *bias, int64_t brs, int64_t bcs,
			       float beta, int act, float lo, float hi, const float *res,
			       int64_t rrs, int threads, int64_t pack_min)
{
	struct rt_cg_job j = { M, N, K, ars, acs, bps, ldc, (N + RT_CG_NR - 1) / RT_CG_NR,
			       pack_min, A, Bp, C,
			       { alpha, beta, bias, brs, bcs, act, lo, hi, res, rrs }, 1, 0 };
	/* below about a quarter of a million multiply-adds a team costs more than it gains */
	int nt = threads > 1 && M * N * K >= 262144 ? threads : 1;
	/*
	 * when runs of panels would leave one thread a quarter more columns
	 * than its share (few panels, the last one often narrow: 49 pixels are
	 * 16 + 16 + 16 + 1), threads take runs of whole tiles of rows over
	 * every panel instead
	 */
	int64_t most = (j.np + nt - 1) / nt * RT_CG_NR;

	if (M >= 1 && M <= RT_CG_GV_MR) {
		/* the GEMV form: runs of panel pairs, RT_PAR_SPLIT shares a thread */
		int64_t pairs = (j.np + 1) / 2;

		j.nt = nt > 1 ? (int)(pairs < RT_PAR_SPLIT * nt ? pairs : RT_PAR_SPLIT * nt) : 1;
		if (j.nt > 1)
			rt_par_for(nt, j.nt, 1, rt_cg_gv_share, &j);
		else
			rt_cg_gv_panels(M, N, K, A, ars, acs, Bp, bps, C, ldc, 0, j.np, &j.e);
		return;
	}
	j.rows = nt > 1 && M >= 4 * (int64_t)nt * RT_CG_MR && 4 * most * nt > 5 * N;
	if (!j.rows && nt > j.np)
		nt = (int)j.np;
	/*
	 * shares of RT_PAR_SPLIT per thread: one the kernel takes a thread
	 * from holds up the rest for less (rt_par.c)
	 */
	if (nt > 1) {
		int64_t units = j.rows ? (M + RT_CG_MR - 1) / RT_CG_MR : j.np;

		j.nt = (int)(units < RT_PAR_SPLIT * nt ? units : RT_PAR_SPLIT * nt);
	}
	if (j.nt > 1)
		rt_par_for(nt, j.nt, 1, rt_cg_share, &j);
	else
		rt_cg_share(&j, 0, 1);
}

/*
 * C [M, N] (row stride ldc) = act(alpha * A [M, K] x B + beta * bias + res)
 * with B packed (panels bps floats apart); see the top of this file.
 * Threads take runs of panels, or of rows (rt_cgemm_ex).
 */
static inline void rt_cgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			    int64_t ars, int64_t acs, const float *Bp, int64_t bps, float *C,
			    int64_t ldc, const float *bias, int64_t brs, int64_t bcs, float beta,
			    int act, float lo, float hi, const float *res, int64_t rrs, int threads)
{
	rt_cgemm_ex(M, N, K, alpha, A, ars, acs, Bp, bps, C, ldc, bias, brs, bcs, beta, act, lo,
		    hi, res, rrs, threads, RT_CG_PACK_MIN);
}

/* rt_cgemm_pack's arguments, for rt_par_for. */
struct rt_cg_pack_job {
	int64_t K, N, brs, bcs;
	const float *B;
	float *Bp;
};

static void rt_cg_pack_panels(void *v, int64_t p0, int64_t p1)
{
	const struct rt_cg_pack_job *j = v;

	for (int64_t jp = p0; jp < p1; jp++)
		for (int64_t k = 0; k < j->K; k++) {
			float *d = j->Bp + (jp * j->K + k) * RT_CG_NR;

			for (int jj = 0; jj < RT_CG_NR; jj++) {
				int64_t c = jp * RT_CG_NR + jj;

				d[jj] = c < j->N ? j->B[k * j->brs + c * j->bcs] : 0.0f;
			}
		}
}

/* Bp (panels K * RT_CG_NR apart) = B [K, N], B[k, j] at B[k * brs + j * bcs]. */
static inline void rt_cgemm_pack(int64_t K, int64_t N, const float *B, int64_t brs,
				 int64_t bcs, float *Bp, int threads)
{
	struct rt_cg_pack_job j = { K, N, brs, bcs, B, Bp };
	int64_t np = (N + RT_CG_NR - 1) / RT_CG_NR;

	if (threads > 1 && np > 1 && K * N >= 65536)
		rt_par_for(threads, np, 1, rt_cg_pack_panels, &j);
	else
		rt_cg_pack_panels(&j, 0, np);
}

/*
 * A constant B packed when the model opens (rt_desc.packs), as the
 * compiler packs it (c_strategies.c, cg_pack_const): p = { K, N, brs, bcs }.
 */
static inline void rt_cgemm_pack_const(const void *src, void *dst, const int64_t *p)
{
	rt_cgemm_pack(p[0], p[1], (const float *)src, p[2], p[3], (float *)dst, 1);
}

/*
 * The GEMV form on 16-bit panels (rt_cgemm16): a float16 or bfloat16
 * model's constant B packed as rt_cgemm_pack packs floats, but its 16-bit
 * values themselves (rt_cgemm_pack16), which the loop widens as it loads
 * them (F16C's vcvtph2ps, a bfloat16 shifted into a float's top half).
 * A decode step's projections stream B from memory once: half the bytes
 * of the widened panels, and the model holds B in its 16 bits (the widened
 * copy is never made). Every row of C is the GEMV form's sum over the
 * same values, bit for bit: rows in groups of RT_CG_GV_MR, no epilogue
 * (the caller's loop applies it).
 */
static inline void rt_cgemm_pack16(int64_t K, int64_t N, const uint16_t *B, int64_t brs,
				   int64_t bcs, uint16_t *Bp)
{
	for (int64_t jp = 0; jp < (N + RT_CG_NR - 1) / RT_CG_NR; jp++)
		for (int64_t k = 0; k < K; k++) {
			uint16_t *d = Bp + (jp * K + k) * RT_CG_NR;

			for (int jj = 0; jj < RT_CG_NR; jj++) {
				int64_t c = jp * RT_CG_NR + jj;

				d[jj] = c < N ? B[k * brs + c * bcs] : 0;
			}
		}
}

/* rt_cgemm_pack16 when the model opens: p = { K, N, brs, bcs }. */
static inline void rt_cgemm_pack16_const(const void *src, void *dst, const int64_t *p)
{
	rt_cgemm_pack16(p[0], p[1], (const uint16_t *)src, p[2], p[3], (uint16_t *)dst);
}

#if defined(__GNUC__)
/* One row of a 16-bit panel (RT_CG_NR values) as RT_CG_NV float vectors. */
static inline __attribute__((always_inline)) void rt_cg_row16(const uint16_t *p, int bf,
								rt_cg_vec *x)
{
	float f[RT_CG_NR] __attribute__((aligned(RT_CG_VBYTES)));

	if (bf) {
		typedef uint16_t rt_u16x16 __attribute__((vector_size(32), aligned(2), may_alias));
		typedef uint32_t rt_u32x16 __attribute__((vector_size(64)));
		rt_u32x16 w = __builtin_convertvector(*(const rt_u16x16 *)p, rt_u32x16) << 16;

		memcpy(f, &w, sizeof(f));
	} else {
#if defined(__AVX512F__)
		x[0] = (rt_cg_vec)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
		return;
#elif defined(__F16C__) && defined(__AVX__)
		x[0] = (rt_cg_vec)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
		x[1] = (rt_cg_vec)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 8)));
		return;
#else
		for (int j = 0; j < RT_CG_NR; j++)
			f[j] = rt_h2f(p[j]);
#endif
	}
	for (int v = 0; v < RT_CG_NV; v++)
		memcpy(&x[v], f + v * RT_CG_VL, RT_CG_VBYTES);
}

/*
 * Rows [0, mr) of a over the np panels (1 or 2) of 16-bit bp (panels bps
 * apart, K block kb), the last nr columns wide, into c as rt_cg_gv_tile
 * writes them, without an epilogue.
 */
static inline __attribute__((always_inline)) void
rt_cg_gv16_tile(const struct rt_cg_kblock *kb, const float *a, int64_t ars, int64_t acs,
		const uint16_t *bp, int64_t bps, int bf, float *c, int64_t ldc, const int mr,
		int np, int nr)
{
	rt_cg_vec t[RT_CG_GV_MR][2][RT_CG_NV];
	float edge[RT_CG_NR] __attribute__((aligned(RT_CG_VBYTES)));
	const uint16_t *b1 = np > 1 ? bp + bps : bp;

#pragma GCC unroll 4
	for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
		for (int v = 0; v < RT_CG_NV; v++)
			t[r][0][v] = t[r][1][v] = (rt_cg_vec){ 0 };
#pragma GCC unroll 2
	for (int64_t k = 0; k < kb->kc; k++) {
		rt_cg_vec x0[RT_CG_NV], x1[RT_CG_NV];

		rt_cg_row16(bp + k * RT_CG_NR, bf, x0);
		if (np > 1)
			rt_cg_row16(b1 + k * RT_CG_NR, bf, x1);
#pragma GCC unroll 4
		for (int r = 0; r < mr; r++) {
			float x = a[r * ars + k * acs];

#pragma GCC unroll 4
			for (int v = 0; v < RT_CG_NV; v++) {
				t[r][0][v] += x * x0[v];
				if (np > 1)
					t[r][1][v] += x * x1[v];
			}
		}
	}
	for (int p = 0; p < np; p++) {
		int w = p == np - 1 ? nr : RT_CG_NR;

		for (int r = 0; r < mr; r++) {
			float *cp = c + r * ldc + p * RT_CG_NR;

			for (int v = 0; v < RT_CG_NV; v++)
				memcpy(edge + v * RT_CG_VL, &t[r][p][v], RT_CG_VBYTES);
			for (int j = 0; j < w; j++)
				cp[j] = kb->first ? edge[j] : cp[j] + edge[j];
		}
	}
}

/* Panels [jp0, jp1) of C, two at a time, every row in groups of RT_CG_GV_MR. */
static inline void rt_cg_gv16_panels(int64_t M, int64_t N, int64_t K, const float *A,
				     int64_t ars, int64_t acs, const uint16_t *Bp, int64_t bps,
				     int bf, float *C, int64_t ldc, int64_t jp0, int64_t jp1)
{
	int64_t nkb = K > 0 ? (K + RT_CG_KC - 1) / RT_CG_KC : 1;
	int64_t kstep = K > 0 ? (K + nkb - 1) / nkb : 0;

	for (int64_t i0 = 0; i0 < M; i0 += RT_CG_GV_MR) {
		int64_t mr = M - i0 < RT_CG_GV_MR ? M - i0 : RT_CG_GV_MR;

		for (int64_t jp = jp0; jp < jp1; jp += 2) {
			int np = jp + 1 < jp1 ? 2 : 1;
			int64_t jl = (jp + np - 1) * RT_CG_NR;
			int nr = N - jl < RT_CG_NR ? (int)(N - jl) : RT_CG_NR;

			for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kstep) {
				struct rt_cg_kblock kb = rt_cg_kblock_at(k0, K, kstep);
				const float *a = A + i0 * ars + k0 * acs;
				const uint16_t *bp = Bp + jp * bps + k0 * RT_CG_NR;
				float *c = C + i0 * ldc + jp * RT_CG_NR;

				/* the row count a constant of each copy */
				if (mr == 1)
					rt_cg_gv16_tile(&kb, a, ars, acs, bp, bps, bf, c, ldc, 1, np, nr);
#if RT_CG_GV_MR >= 2
				else if (mr == 2)
					rt_cg_gv16_tile(&kb, a, ars, acs, bp, bps, bf, c, ldc, 2, np, nr);
#endif
#if RT_CG_GV_MR >= 3
				else if (mr == 3)
					rt_cg_gv16_tile(&kb, a, ars, acs, bp, bps, bf, c, ldc, 3, np, nr);
#endif
#if RT_CG_GV_MR >= 4
				else
					rt_cg_gv16_tile(&kb, a, ars, acs, bp, bps, bf, c, ldc, 4, np, nr);
#endif
				if (K == 0)
					break;
			}
		}
	}
}

struct rt_cg16_job {
	int64_t M, N, K, ars, acs, bps, ldc, np;
	const float *A;
	const uint16_t *Bp;
	float *C;
	int bf, nt;
};

static void rt_cg16_share(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cg16_job *j = v;
	int64_t pairs = (j->np + 1) / 2;
	int64_t p0 = 2 * (pairs * t0 / j->nt), p1 = 2 * (pairs * t1 / j->nt);

	rt_cg_gv16_panels(j->M, j->N, j->K, j->A, j->ars, j->acs, j->Bp, j->bps, j->bf, j->C,
			  j->ldc, p0, p1 < j->np ? p1 : j->np);
}

/*
 * C [M, N] (row stride ldc) = A [M, K] x B, B packed by rt_cgemm_pack16
 * (panels bps values apart), float16 (bf 0) or bfloat16 (1); threads take
 * runs of panel pairs.
 */
static inline void rt_cgemm16(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
			      int64_t acs, const uint16_t *Bp, int64_t bps, int bf, float *C,
			      int64_t ldc, int threads)
{
	struct rt_cg16_job j = { M, N, K, ars, acs, bps, ldc, (N + RT_CG_NR - 1) / RT_CG_NR,
				 A, Bp, C, bf, 1 };
	int64_t pairs = (j.np + 1) / 2;
	int nt = threads > 1 ? threads : 1;

	if (M <= 0 || N <= 0)
		return;
	j.nt = nt > 1 ? (int)(pairs < RT_PAR_SPLIT * nt ? pairs : RT_PAR_SPLIT * nt) : 1;
	if (j.nt > 1)
		rt_par_for(nt, j.nt, 1, rt_cg16_share, &j);
	else
		rt_cg16_share(&j, 0, 1);
}
#endif

#endif
