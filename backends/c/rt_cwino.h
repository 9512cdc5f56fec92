/*
 * rt_cwino.h - the c target's 3x3 stride-1 convolution by Winograd's
 * minimal filtering F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", CVPR 2016), pasted into the generated
 * code after rt_cgemm.h (embedded into collagec) by the strategy
 * conv.winograd of backends/c/c_strategies.c.
 *
 * Each 4x4 tile of output is Y = A^T [ U (.) V ] A summed over the input
 * channels, where V = B^T d B is the transform of the 6x6 input patch d
 * under it and U = G g G^T the transform of the 3x3 kernel g (the matrices
 * are rt_wino.h's): 36 products a tile and channel instead of 144. Summing
 * over channels first turns the 36 element positions xi into 36
 * independent GEMMs
 *
 *	O_xi [M, tiles] = U_xi [M, C] x V_xi [C, tiles]
 *
 * which rt_cgemm.h's micro-kernel runs. U is computed from the constant
 * weights by rt_wino_kernel when the model opens (rt_cwino_weights, from the
 * weights in the blob: U is 4 times their size) into memory the handle
 * owns: u[(xi * M + m) * C + c], with 8 rows of zeros after the last, which
 * a micro-kernel tile past M may read.
 *
 * The tiles are taken a panel (16 tiles, rt_cgemm's panel width) at a
 * time, so that its V and O stay in L2: V is written straight into
 * rt_cgemm's packed panel layout, O read back by the output transform while
 * still in cache (blocks of 2 or 4 panels, reusing each row of U more,
 * measured no faster). The transforms work on
 * the tiles of a panel at once, one vector lane per tile; with AVX, 8x8
 * and 4x8 transposes in registers turn patch rows into lanes and lanes
 * back into output rows, so no element goes through memory alone (one
 * per store, then a vector load of them, stalls on store forwarding).
 *
 * Accuracy: the transforms' coefficients (1/4, 1/6, 1/12, 1/24 in G, up to 8
 * in A) make the rounding error larger than the direct sum's: on random
 * data over 512 channels the largest error was 7e-6 of the largest output
 * (the direct float sum's about 1e-6). Results do not depend on the thread
 * count: each output's sums run in one order, whichever thread runs them.
 *
 * act (enum rt_cg_act, lo and hi for a Clip) and res (a residual of y's
 * layout, or NULL) are the fused partition's Relu, Clip and Add, applied as
 * the output transform writes y.
 */
#ifndef RT_CWINO_H
#define RT_CWINO_H

#include <stdint.h>
#include <string.h>

#include "rt_wino.h"

#define RT_CW_T 6		/* input patch: 6x6 */
#define RT_CW_TEAM 16		/* the most threads on one convolution */
#define RT_CW_N (RT_CW_T * RT_CW_T)

/*
 * U from the weights w [M, C, 3, 3] when the model opens (rt_desc.packs),
 * as c_strategies.c's cw_transform computes it, then its 8 rows of zeros:
 * p = { M, C }.
 */
static inline void rt_cwino_weights(const void *src, void *dst, const int64_t *p)
{
	const float *w = (const float *)src;
	float *u = (float *)dst;
	int64_t M = p[0], C = p[1];

	for (int64_t m = 0; m < M; m++)
		for (int64_t c = 0; c < C; c++)
			rt_wino_kernel(w + (m * C + c) * 9, u + m * C + c, M * C);
	memset(u + RT_CW_N * M * C, 0, sizeof(float) * 8 * (size_t)C);
}

#if defined(__GNUC__)
typedef float rt_cw_v __attribute__((vector_size(4 * RT_CG_NR)));
/* the same read from memory of any alignment, in place (no copy through the stack) */
typedef float rt_cw_uv __attribute__((vector_size(4 * RT_CG_NR), aligned(4), may_alias));
#else
#error "rt_cwino.h needs GCC's vector extensions"
#endif

/*
 * Floats between V's GEMMs in a slot: C rows of 16, then 16 more, so that
 * the 36 stores of one channel's transform do not all fall in one L1 set
 * (with C * 16 floats a multiple of 4 KiB they would).
 */
static inline int64_t rt_cw_vstride(int64_t C)
{
	return (C + 1) * RT_CG_NR;
}

/* Floats of scratch one slot (a panel's V and O) takes. */
static inline int64_t rt_cw_slot(int64_t C, int64_t M)
{
	return RT_CW_N * (rt_cw_vstride(C) + RT_CG_NR * M);
}

/* The 1-D transforms B^T and A^T (rt_wino.h) on a panel's tiles, one a lane. */
RT_WINO_TRANSFORMS(rt_cw_v, rt_cw)

#if defined(__AVX__)
#include <immintrin.h>

typedef float rt_cw_v8 __attribute__((vector_size(32)));

RT_WINO_TRANSFORMS(rt_cw_v8, rt_cw8)

/*
 * d[s] = column s (s < 6) of the 8x8 matrix whose rows are r0..r7: the
 * transpose by unpacks, shuffles and half swaps, kept in registers.
 */
static inline __attribute__((always_inline)) void
rt_cw_tr8(__m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4, __m256 r5, __m256 r6,
	  __m256 r7, rt_cw_v8 *d)
{
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
	__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
	__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);

	d[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
	d[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
	d[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
	d[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
	d[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
	d[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
}
#endif

/*
 * V of panel jp (tiles jp * 16 ..) for channels [cb, ce) of C:
 * vp[xi * rt_cw_vstride(C) + c * 16 + lane], rt_cgemm's packed layout for
 * GEMM xi.
 * With AVX, per 8 tiles and patch row, 8 loads of 8 floats (masked where
 * the patch crosses the image's left or right edge, zero for a row in the
 * padding) and a transpose give the row's 6 elements a tile a lane;
 * without, the patches are gathered element by element a chunk of channels
 * ahead (the chunk's scalar stores have left the store buffer when the
 * transform's vector loads read them: a load of data still in flight as
 * narrower stores is not forwarded and waits).
 */
#define RT_CW_CCHUNK 8

static inline void rt_cw_input(const float *x, int64_t C, int64_t H, int64_t W, int64_t ph,
			       int64_t pw, int64_t TW, int64_t T, int64_t jp, int64_t cb,
			       int64_t ce, float *vp)
{
	int64_t ih[RT_CG_NR], iw[RT_CG_NR], vs = rt_cw_vstride(C);

	for (int j = 0; j < RT_CG_NR; j++) {
		int64_t tile = jp * RT_CG_NR + j;

		/* a lane past the last tile reads zeros: its outputs are never written */
		ih[j] = tile < T ? tile / TW * 4 - ph : -RT_CW_T;
		iw[j] = tile < T ? tile % TW * 4 - pw : 0;
	}
#if defined(__AVX__)
	__m256i mask[RT_CG_NR];
	int whole[RT_CG_NR];	/* 8 floats from iw are inside the row */

	for (int j = 0; j < RT_CG_NR; j++) {
		int32_t m[8];

		for (int l = 0; l < 8; l++)
			m[l] = l < RT_CW_T && iw[j] + l >= 0 && iw[j] + l < W ? -1 : 0;
		mask[j] = _mm256_loadu_si256((const __m256i *)m);
		whole[j] = iw[j] >= 0 && iw[j] + 8 <= W;
	}
/* row r of tile h + j's patch: zero in the padding, masked across an edge */
#define RT_CW_ROW(j)									\
	(ih[h + (j)] + r < 0 || ih[h + (j)] + r >= H ? _mm256_setzero_ps() :		\
	 whole[h + (j)] ? _mm256_loadu_ps(xc + (ih[h + (j)] + r) * W + iw[h + (j)]) :	\
	 _mm256_maskload_ps(xc + (ih[h + (j)] + r) * W + iw[h + (j)], mask[h + (j)]))
	for (int64_t c = cb; c < ce; c++) {
		const float *xc = x + c * H * W;

		/*
		 * the patches of channel c + 2 into L1, from every third tile
		 * (tiles start 4 floats apart: neighbours share a line): the
		 * hardware's prefetchers do not follow rows a plane apart
		 */
		if (c + 2 < ce)
			for (int j = 0; j < RT_CG_NR; j += 3)
				for (int r = 0; r < RT_CW_T; r++)
					if (ih[j] + r >= 0 && ih[j] + r < H)
						_mm_prefetch((const char *)(xc + 2 * H * W + (ih[j] + r) * W +
									    (iw[j] < 0 ? 0 : iw[j])),
							     _MM_HINT_T0);
		for (int h = 0; h < RT_CG_NR; h += 8) {
			rt_cw_v8 d[RT_CW_N], t[RT_CW_N];

			for (int r = 0; r < RT_CW_T; r++)
				rt_cw_tr8(RT_CW_ROW(0), RT_CW_ROW(1), RT_CW_ROW(2), RT_CW_ROW(3),
					  RT_CW_ROW(4), RT_CW_ROW(5), RT_CW_ROW(6), RT_CW_ROW(7),
					  d + r * RT_CW_T);
			/* columns, then rows: V = B^T d B */
			for (int s = 0; s < RT_CW_T; s++)
				rt_cw8_bt(d + s, RT_CW_T, t + s, RT_CW_T);
			for (int i = 0; i < RT_CW_T; i++)
				rt_cw8_bt(t + i * RT_CW_T, 1, d + i * RT_CW_T, 1);
			for (int xi = 0; xi < RT_CW_N; xi++)
				_mm256_storeu_ps(vp + xi * vs + c * RT_CG_NR + h, d[xi]);
		}
	}
#undef RT_CW_ROW
#else
	for (int64_t c0 = cb; c0 < ce; c0 += RT_CW_CCHUNK) {
		int nc = ce - c0 < RT_CW_CCHUNK ? (int)(ce - c0) : RT_CW_CCHUNK;
		rt_cw_v d[RT_CW_CCHUNK][RT_CW_N], t[RT_CW_N];

		for (int k = 0; k < nc; k++) {
			const float *xc = x + (c0 + k) * H * W;
			float *dk = (float *)d[k];

			for (int j = 0; j < RT_CG_NR; j++)
				for (int r = 0; r < RT_CW_T; r++)
					for (int s = 0; s < RT_CW_T; s++) {
						int64_t y0 = ih[j] + r, x0 = iw[j] + s;

						dk[(r * RT_CW_T + s) * RT_CG_NR + j] =
							y0 >= 0 && y0 < H && x0 >= 0 && x0 < W ?
							xc[y0 * W + x0] : 0.0f;
					}
		}
		for (int k = 0; k < nc; k++) {
			float *dst = vp + (c0 + k) * RT_CG_NR;

			for (int s = 0; s < RT_CW_T; s++)
				rt_cw_bt(d[k] + s, RT_CW_T, t + s, RT_CW_T);
			for (int i = 0; i < RT_CW_T; i++)
				rt_cw_bt(t + i * RT_CW_T, 1, d[k] + i * RT_CW_T, 1);
			for (int xi = 0; xi < RT_CW_N; xi++)
				*(rt_cw_uv *)(dst + xi * vs) = d[k][xi];
		}
	}
#endif
}

#if defined(__AVX__)
typedef float rt_cw_f4 __attribute__((vector_size(16)));
typedef int32_t rt_cw_i4 __attribute__((vector_size(16)));
typedef float rt_cw_uv8 __attribute__((vector_size(32), aligned(4), may_alias));

/* act on 4 lanes: the graph's Relu and Clip (NaN stays NaN), as rt_cg_epi. */
static inline __attribute__((always_inline)) rt_cw_f4
rt_cw_act4(rt_cw_f4 v, const int act, float lo, float hi)
{
	rt_cw_f4 zero = { 0 };
	rt_cw_i4 m;

	if (act == RT_CG_ACT_RELU) {
		m = (v > zero) | (v != v);
		v = (rt_cw_f4)((rt_cw_i4)v & m);
	} else if (act == RT_CG_ACT_CLIP) {
		rt_cw_f4 l = zero + lo, h = zero + hi;

		m = (v > l) | (v != v);
		v = (rt_cw_f4)(((rt_cw_i4)v & m) | ((rt_cw_i4)l & ~m));
		m = (v < h) | (v != v);
		v = (rt_cw_f4)(((rt_cw_i4)v & m) | ((rt_cw_i4)h & ~m));
	}
	return v;
}
#endif

/* act on one value, as rt_cw_act4. */
static inline __attribute__((always_inline)) float rt_cw_act1(float v, const int act, float lo,
							      float hi)
{
	if (act == RT_CG_ACT_RELU) {
		v = (v > 0.0f) | (v != v) ? v : 0.0f;
	} else if (act == RT_CG_ACT_CLIP) {
		v = (v > lo) | (v != v) ? v : lo;
		v = (v < hi) | (v != v) ? v : hi;
	}
	return v;
}

/*
 * Output channel m of panel jp from O (o[xi * 16 + lane] for its 16 tiles):
 * y's tiles = A^T O A + b, then the residual and act. act and whether
 * there is a residual are constants in every copy rt_cw_output's dispatch
 * inlines, so the loops test nothing but the tiles' extents. With AVX,
 * per 8 tiles: the transform on 8 lanes in registers, then per tile row a
 * 4x8 transpose gives each tile's row as one vector of 4 (one load of the
 * residual, one store).
 */
static inline __attribute__((always_inline)) void
rt_cw_out(const float *o, int64_t OH, int64_t OW, int64_t TW, int64_t T, int64_t jp, float b,
	  const int act, float lo, float hi, const float *res, float *y, int next)
{
	int64_t at[RT_CG_NR];
	int rows[RT_CG_NR], cols[RT_CG_NR], n = 0;

	for (int j = 0; j < RT_CG_NR && jp * RT_CG_NR + j < T; j++, n++) {
		int64_t tile = jp * RT_CG_NR + j, oh0 = tile / TW * 4, ow0 = tile % TW * 4;

		at[j] = oh0 * OW + ow0;
		rows[j] = OH - oh0 < 4 ? (int)(OH - oh0) : 4;
		cols[j] = OW - ow0 < 4 ? (int)(OW - ow0) : 4;
	}
	/*
	 * the next output channel's rows of these tiles (and of the residual)
	 * into cache for the stores: a store that misses waits for the line
	 */
	if (next)
		for (int j = 0; j < n; j += 3)
			for (int r = 0; r < rows[j]; r++) {
				__builtin_prefetch(y + OH * OW + at[j] + r * OW, 1);
				if (res)
					__builtin_prefetch(res + OH * OW + at[j] + r * OW, 0);
			}
#if defined(__AVX__)
	for (int h = 0; h < n; h += 8) {
		rt_cw_v8 mv[RT_CW_N], t[4 * RT_CW_T], q[16];

		for (int xi = 0; xi < RT_CW_N; xi++)
			mv[xi] = *(const rt_cw_uv8 *)(o + xi * RT_CG_NR + h);
		for (int s = 0; s < RT_CW_T; s++)
			rt_cw8_at(mv + s, RT_CW_T, t + s, RT_CW_T);
		for (int i = 0; i < 4; i++)
			rt_cw8_at(t + i * RT_CW_T, 1, q + i * 4, 1);
		for (int r = 0; r < 4; r++) {
			__m256 t0 = _mm256_unpacklo_ps(q[r * 4], q[r * 4 + 1]);
			__m256 t1 = _mm256_unpackhi_ps(q[r * 4], q[r * 4 + 1]);
			__m256 t2 = _mm256_unpacklo_ps(q[r * 4 + 2], q[r * 4 + 3]);
			__m256 t3 = _mm256_unpackhi_ps(q[r * 4 + 2], q[r * 4 + 3]);
			__m256 c[4];	/* c[k]: tile k in the low half, tile k + 4 in the high */

			c[0] = _mm256_shuffle_ps(t0, t2, 0x44);
			c[1] = _mm256_shuffle_ps(t0, t2, 0xee);
			c[2] = _mm256_shuffle_ps(t1, t3, 0x44);
			c[3] = _mm256_shuffle_ps(t1, t3, 0xee);
			for (int j = 0; j < 8 && h + j < n; j++) {
				int k = h + j;
				rt_cw_f4 v = j < 4 ? (rt_cw_f4)_mm256_castps256_ps128(c[j]) :
					     (rt_cw_f4)_mm256_extractf128_ps(c[j - 4], 1);
				int64_t at0 = at[k] + r * OW;

				if (r >= rows[k])
					continue;
				v += b;
				if (cols[k] == 4) {
					if (res)
						v += (rt_cw_f4)_mm_loadu_ps(res + at0);
					_mm_storeu_ps(y + at0, (__m128)rt_cw_act4(v, act, lo, hi));
				} else {
					float e[4];

					memcpy(e, &v, sizeof(e));
					for (int s = 0; s < cols[k]; s++)
						y[at0 + s] = rt_cw_act1(e[s] + (res ? res[at0 + s] : 0.0f),
									act, lo, hi);
				}
			}
		}
	}
#else
	rt_cw_v mv[RT_CW_N], t[4 * RT_CW_T], out[16];
	const float *op = (const float *)out;

	for (int xi = 0; xi < RT_CW_N; xi++)
		mv[xi] = *(const rt_cw_uv *)(o + xi * RT_CG_NR);
	for (int s = 0; s < RT_CW_T; s++)
		rt_cw_at(mv + s, RT_CW_T, t + s, RT_CW_T);
	for (int i = 0; i < 4; i++)
		rt_cw_at(t + i * RT_CW_T, 1, out + i * 4, 1);
	for (int j = 0; j < n; j++)
		for (int r = 0; r < rows[j]; r++) {
			int64_t at0 = at[j] + r * OW;

			for (int s = 0; s < cols[j]; s++)
				y[at0 + s] = rt_cw_act1(op[(r * 4 + s) * RT_CG_NR + j] + b +
							(res ? res[at0 + s] : 0.0f), act, lo, hi);
		}
#endif
}

/*
 * rt_cw_out for output channel m (of M), its act and residual made
 * constants; next: whether channel m + 1 of this panel comes after it.
 */
static inline void rt_cw_output(const float *o, int64_t m, int64_t M, int64_t OH, int64_t OW,
				int64_t TW, int64_t T, int64_t jp, const float *bias, int act,
				float lo, float hi, const float *res, float *y)
{
	int next = m + 1 < M;
	float b = bias ? bias[m] : 0.0f;
	const float *rm = res ? res + m * OH * OW : NULL;
	float *ym = y + m * OH * OW;

	switch (act * 2 + !!rm) {
	case RT_CG_ACT_NONE * 2:
		rt_cw_out(o, OH, OW, TW, T, jp, b, RT_CG_ACT_NONE, lo, hi, NULL, ym, next);
		break;
	case RT_CG_ACT_NONE * 2 + 1:
		rt_cw_out(o, OH, OW, TW, T, jp, b, RT_CG_ACT_NONE, lo, hi, rm, ym, next);
		break;
	case RT_CG_ACT_RELU * 2:
		rt_cw_out(o, OH, OW, TW, T, jp, b, RT_CG_ACT_RELU, lo, hi, NULL, ym, next);
		break;
	case RT_CG_ACT_RELU * 2 + 1:
		rt_cw_out(o, OH, OW, TW, T, jp, b, RT_CG_ACT_RELU, lo, hi, rm, ym, next);
		break;
	case RT_CG_ACT_CLIP * 2:
		rt_cw_out(o, OH, OW, TW, T, jp, b, RT_CG_ACT_CLIP, lo, hi, NULL, ym, next);
		break;
	default:
		rt_cw_out(o, OH, OW, TW, T, jp, b, RT_CG_ACT_CLIP, lo, hi, rm, ym, next);
		break;
	}
}

/*
 * GEMM xi of a panel: op[(m * 36 + xi) * 16 + lane] = sum_c u_xi[m, c]
 * vp[xi * rt_cw_vstride(C) + c * 16 + lane]: an output channel's 36 vectors are
 * contiguous for the output transform.
 */
static inline void rt_cw_gemm(const float *u, int64_t M, int64_t C, int xi, const float *vp,
			      float *op)
{
	struct rt_cg_epilogue e = { 1.0f, 0.0f, NULL, 0, 0, RT_CG_ACT_NONE, 0, 0, NULL, 0 };
	int64_t nkb = (C + RT_CG_KC - 1) / RT_CG_KC;
	int64_t kstep = (C + nkb - 1) / nkb;
	const float *ux = u + xi * M * C, *vx = vp + xi * rt_cw_vstride(C);
	float *ox = op + xi * RT_CG_NR;

	for (int64_t k0 = 0; k0 < C; k0 += kstep) {
		struct rt_cg_kblock kb;

		kb.k0 = k0;
		kb.kc = C - k0 < kstep ? C - k0 : kstep;
		kb.first = k0 == 0;
		kb.last = k0 + kb.kc >= C;
		/* a tile's rows past M read the next xi's (or the zero rows at the end) */
		for (int64_t i0 = 0; i0 < M; i0 += RT_CG_MR)
			rt_cg_tile(&kb, ux + i0 * C + k0, C, 1, vx + k0 * RT_CG_NR,
				   ox + i0 * RT_CW_N * RT_CG_NR, RT_CW_N * RT_CG_NR,
				   M - i0 < RT_CG_MR ? (int)(M - i0) : RT_CG_MR, RT_CG_NR, i0, 0, &e);
	}
}

/* rt_cwino2d's arguments and its split, for rt_par_for. */
struct rt_cw_job {
	const float *x, *u, *bias, *res;
	float *y, *sl;
	int64_t C, H, W, ph, pw, OH, OW, M, TW, T, np, slot, vsize, nch;
	int act;
	float lo, hi;
	int64_t pieces;		/* rt_cw_pieces: runs of panels, each in slot of its own */
};

/* The shared split's first step: every panel's input transform by channel chunk. */
static void rt_cw_inputs(void *v, int64_t i0, int64_t i1)
{
	const struct rt_cw_job *j = v;

	for (int64_t i = i0; i < i1; i++) {
		int64_t jp = i / j->nch, c0 = i % j->nch * RT_CW_CCHUNK;

		rt_cw_input(j->x, j->C, j->H, j->W, j->ph, j->pw, j->TW, j->T, jp, c0,
			    j->C - c0 < RT_CW_CCHUNK ? j->C : c0 + RT_CW_CCHUNK, j->sl + jp * j->slot);
	}
}

/* Its second: the 36 GEMMs of every panel. */
static void rt_cw_gemms(void *v, int64_t i0, int64_t i1)
{
	const struct rt_cw_job *j = v;

	for (int64_t i = i0; i < i1; i++) {
		float *sp = j->sl + i / RT_CW_N * j->slot;

		rt_cw_gemm(j->u, j->M, j->C, (int)(i % RT_CW_N), sp, sp + j->vsize);
	}
}

/* Its third: the output transform by output channel. */
static void rt_cw_outputs(void *v, int64_t i0, int64_t i1)
{
	const struct rt_cw_job *j = v;
	int64_t M = j->M;

	for (int64_t i = i0; i < i1; i++) {
		float *sp = j->sl + i / M * j->slot + j->vsize;

		rt_cw_output(sp + i % M * RT_CW_N * RT_CG_NR, i % M, M, j->OH, j->OW, j->TW, j->T,
			     i / M, j->bias, j->act, j->lo, j->hi, j->res, j->y);
	}
}

/* Pieces [p0, p1): piece p takes a run of panels through all three steps in slot p. */
static void rt_cw_pieces(void *v, int64_t p0, int64_t p1)
{
	const struct rt_cw_job *j = v;
	int64_t np = j->np, n = j->pieces;

	for (int64_t p = p0; p < p1; p++) {
		float *vp = j->sl + p * j->slot, *op = vp + j->vsize;

		for (int64_t jp = p * np / n; jp < (p + 1) * np / n; jp++) {
			rt_cw_input(j->x, j->C, j->H, j->W, j->ph, j->pw, j->TW, j->T, jp, 0, j->C,
				    vp);
			for (int xi = 0; xi < RT_CW_N; xi++)
				rt_cw_gemm(j->u, j->M, j->C, xi, vp, op);
			for (int64_t m = 0; m < j->M; m++)
				rt_cw_output(op + m * RT_CW_N * RT_CG_NR, m, j->M, j->OH, j->OW,
					     j->TW, j->T, jp, j->bias, j->act, j->lo, j->hi, j->res,
					     j->y);
		}
	}
}

/*
 * y [M, OH * OW] = act(conv(x [C, H, W], w [M, C, 3, 3]) + bias[M] + res)
 * for one image, stride 1, padding ph, pw at the top and the left (OH,
 * OW give the rest), u the weights' transform (above), bias and res NULL
 * for none. scratch holds `slots` slots of rt_cw_slot(C, M) floats: one
 * per panel, or RT_CW_TEAM when there are more panels.
 *
 * With a panel or more per thread, the panels are cut into runs (up to
 * RT_PAR_SPLIT per thread, one per slot) that each take all three steps on
 * one panel while it is in L2. With fewer panels than threads (a 14x14
 * image has 16 tiles: one panel), the steps are split instead: every
 * panel's input transform by channel chunks, then the 36 GEMMs, then the
 * output transform by output channel, each step shared by the team.
 */
static inline void rt_cwino2d(const float *x, int64_t C, int64_t H, int64_t W, int64_t ph,
			      int64_t pw, int64_t OH, int64_t OW, const float *u, int64_t M,
			      const float *bias, int act, float lo, float hi, const float *res,
			      float *y, float *scratch, int64_t slots, int threads)
{
	int64_t TW = (OW + 3) / 4, T = (OH + 3) / 4 * TW, np = (T + RT_CG_NR - 1) / RT_CG_NR;
	struct rt_cw_job j = { x, u, bias, res, y, scratch, C, H, W, ph, pw, OH, OW, M, TW, T,
			       np, rt_cw_slot(C, M), RT_CW_N * rt_cw_vstride(C),
			       (C + RT_CW_CCHUNK - 1) / RT_CW_CCHUNK, act, lo, hi, 1 };
	int team = threads < RT_CW_TEAM ? threads : RT_CW_TEAM;

	if (np >= team && team > slots)
		team = (int)slots;	/* not with the slots c_strategies.c gives */
	if (team > 1 && np < team && np <= slots) {
		rt_par_for(team, np * j.nch, 1, rt_cw_inputs, &j);
		rt_par_for(team, np * RT_CW_N, 1, rt_cw_gemms, &j);
		rt_par_for(team, np * M, 1, rt_cw_outputs, &j);
		return;
	}
	if (team > 1) {
		int64_t most = slots < 4 * (int64_t)team ? slots : 4 * (int64_t)team;

		j.pieces = np < most ? np : most;
	}
	if (j.pieces > 1)
		rt_par_for(team, j.pieces, 1, rt_cw_pieces, &j);
	else
		rt_cw_pieces(&j, 0, 1);
}

#endif
