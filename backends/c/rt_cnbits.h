/*
 * rt_cnbits.h - the c target's 4-bit weight GEMM (MatMulNBits, see
 * core/ops/ops_nbits.c), pasted into the generated code after rt_cgemm.h
 * (embedded into collagec) by the strategy matmulnbits.gemm of
 * backends/c/c_strategies.c:
 *
 *	C[i, n] = sum_k A[i, k] * (q(n, k) - z(n, b)) * s(n, b) [+ bias[n]],  b = k / bs
 *
 * B stays as the model has it, 4 bits a weight, in the weights blob: row n
 * of B is its kb = ceil(K / bs) blocks one after the other, bs / 2 bytes
 * each, element j of a block in byte j / 2, the low nibble first. Nothing
 * is unpacked when the model opens; the weights are unpacked where they
 * are used:
 *
 * - Few rows (decode, M < RT_NB_GEMM_M): per group of up to RT_NB_R rows,
 *   A is laid out once per call so that it meets B's bytes as they come:
 *   per 16 elements (32 with AVX-512, RT_NB_G), the even ones, then the odd
 *   ones (Ad), and its sum
 *   per block (as). A column's 8 bytes of a block then are 8 low nibbles
 *   against the even half and 8 high nibbles against the odd one, in
 *   registers, and the zero point comes out of the block's sum:
 *	sum_k a_k (q_k - z) s = s (sum_k a_k q_k) - s z as(b)
 *   Threads take runs of columns of B, each read once per group of rows.
 * - More rows (prefill): per panel of 16 columns and slice of at most
 *   RT_NB_KC rows of K, the weights are unpacked into a small float panel
 *   in L1 in rt_cgemm.h's layout (with AVX2, 8 columns x 32 rows at a
 *   time: 16 bytes a column transposed as bytes, then each k pair's 8
 *   bytes split into two rows of nibbles; 8 x 8 at the slice's tail), and
 *   rt_cgemm.h's micro-kernel runs over every
 *   tile of rows against it; threads take runs of panels. Each weight is
 *   unpacked once per call.
 *
 * AVX2 with FMA where the code is compiled for it, plain loops otherwise
 * (the same order of sums within a path); with AVX-512 the few rows' form
 * takes 32 weights a step (16 bytes) where blocks are a multiple of 32
 * long, and the zero points' term 16 blocks at a time: a 2048 x 2048 decode
 * step 0.28 -> 0.14 ms on one Zen core. Every C[i, n] is summed in the
 * same order whatever the thread count: threads split N, never K.
 */
#ifndef RT_CNBITS_H
#define RT_CNBITS_H

#include <stdint.h>
#include <string.h>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#define RT_NB_R 4		/* rows of A per pass over B (few rows) */
#define RT_NB_GEMM_M 8		/* rows from which the panel GEMM is taken */
#define RT_NB_KC 256		/* most rows of K per unpacked panel slice */
#define RT_NB_COLS 16		/* columns of B per share of a thread (few rows) */
#define RT_NB_NC 8		/* panels per chunk (more rows): 128 columns of C */

struct rt_nb {
	int64_t M, N, K, bs, kb, zrow;
	const float *A;		/* [M, K] */
	const uint8_t *B;	/* [N, kb, bs / 2] */
	const float *S;		/* [N, kb] */
	const uint8_t *Zq;	/* packed zero points, zrow bytes a column; or NULL */
	const float *Zf;	/* float zero points [N, kb]; or NULL (both: 8) */
	const float *bias;	/* [N] or NULL */
	float *C;		/* [M, N] */
	const float *Ad;	/* few rows: RT_NB_R laid-out rows, kb * bs apart */
	const float *As;	/* few rows: their block sums, kb apart */
	int rows;		/* few rows: the group's rows */
	int G;			/* few rows: elements per group of Ad (RT_NB_G) */
};

/*
 * The few rows' groups of A: 16 elements (8 even, 8 odd: one AVX2 vector
 * each), or with AVX-512, where blocks are a multiple of 32 long, 32 (16
 * and 16: 16 bytes of B, one zmm of low and one of high nibbles).
 */
#if defined(__AVX512F__) && defined(__AVX512BW__)
#define RT_NB_G(bs) ((bs) % 32 == 0 ? 32 : 16)
#else
#define RT_NB_G(bs) 16
#endif

/* The zero point of block b of column n. */
static inline float rt_nb_zero(const struct rt_nb *g, int64_t n, int64_t b)
{
	if (g->Zq)
		return (float)((g->Zq[n * g->zrow + b / 2] >> (b % 2 * 4)) & 15);
	return g->Zf ? g->Zf[n * g->kb + b] : 8.0f;
}

/* Row a of A laid out as Ad (kb * bs floats, zero past K) with its block sums. */
static inline void rt_nb_layout(const struct rt_nb *g, const float *a, float *ad, float *as)
{
	for (int64_t b = 0; b < g->kb; b++) {
		float s = 0.0f;

		for (int64_t c = b * g->bs; c < (b + 1) * g->bs; c += g->G)
			for (int e = 0; e < g->G; e++) {
				int64_t k = c + e;
				float v = k < g->K ? a[k] : 0.0f;

				ad[c + (e % 2) * (g->G / 2) + e / 2] = v;
				s += v;
			}
		as[b] = s;
	}
}

#if defined(__AVX2__) && defined(__FMA__)
static inline float rt_nb_hsum(__m256 v)
{
	__m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	x = _mm_add_ps(x, _mm_movehl_ps(x, x));
	x = _mm_add_ss(x, _mm_movehdup_ps(x));
	return _mm_cvtss_f32(x);
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/*
 * The zero-point term of column n against the group's R rows, corr[r] =
 * sum_b s(n, b) z(n, b) as(r, b), 16 blocks at a time: the scales, the
 * zero points (16 nibbles of 8 bytes, or floats, or 8) and the block sums
 * as vectors.
 */
static inline __attribute__((always_inline)) void
rt_nb_corr_512(const struct rt_nb *g, int64_t n, const int R, float *corr)
{
	__m512 cv[RT_NB_R];
	__m128i mask = _mm_set1_epi8(15);

	for (int r = 0; r < R; r++)
		cv[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < g->kb; b += 16) {
		__mmask16 m = g->kb - b >= 16 ? 0xffff : (__mmask16)((1u << (g->kb - b)) - 1);
		__m512 sz = _mm512_maskz_loadu_ps(m, g->S + n * g->kb + b), z;

		if (g->Zq) {
			__m128i q = _mm_maskz_loadu_epi8((__mmask16)((1u << ((g->kb - b + 1) / 2 < 8 ?
									    (g->kb - b + 1) / 2 : 8)) - 1),
							 g->Zq + n * g->zrow + b / 2);

			q = _mm_unpacklo_epi8(_mm_and_si128(q, mask),
					      _mm_and_si128(_mm_srli_epi16(q, 4), mask));
			z = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q));
		} else if (g->Zf) {
			z = _mm512_maskz_loadu_ps(m, g->Zf + n * g->kb + b);
		} else {
			z = _mm512_set1_ps(8.0f);
		}
		sz = _mm512_mul_ps(sz, z);
		for (int r = 0; r < R; r++)
			cv[r] = _mm512_fmadd_ps(sz, _mm512_maskz_loadu_ps(m, g->As + r * g->kb + b),
						cv[r]);
	}
	for (int r = 0; r < R; r++)
		corr[r] = _mm512_reduce_add_ps(cv[r]);
}

/*
 * rt_nb_col with groups of 32 (G = 32): each 16 bytes of B unpacked once
 * into 16 low and 16 high nibbles as floats, one FMA per half and row, the
 * block's sums scaled into the column's total; the zero points' term apart
 * (rt_nb_corr_512). On one Zen core a decode step's 2048 x 2048 MatMulNBits
 * took 0.28 ms through the 8 lanes of the AVX2 form.
 */
static inline __attribute__((always_inline)) void
rt_nb_col_512(const struct rt_nb *g, int64_t n, const int R)
{
	const uint8_t *bn = g->B + n * g->kb * (g->bs / 2);
	const float *sn = g->S + n * g->kb;
	__m512 tot[RT_NB_R], acc[RT_NB_R];
	__m128i mask = _mm_set1_epi8(15);
	float corr[RT_NB_R];

	for (int r = 0; r < R; r++)
		tot[r] = _mm512_setzero_ps();
	for (int64_t b = 0; b < g->kb; b++) {
		for (int r = 0; r < R; r++)
			acc[r] = _mm512_setzero_ps();
		for (int64_t c = 0; c < g->bs; c += 32) {
			__m128i v = _mm_loadu_si128((const __m128i *)(bn + (b * g->bs + c) / 2));
			__m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(v, mask)));
			__m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
				_mm_and_si128(_mm_srli_epi16(v, 4), mask)));

			for (int r = 0; r < R; r++) {
				const float *ad = g->Ad + r * g->kb * g->bs + b * g->bs + c;

				acc[r] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(ad), acc[r]);
				acc[r] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(ad + 16), acc[r]);
			}
		}
		for (int r = 0; r < R; r++)
			tot[r] = _mm512_fmadd_ps(acc[r], _mm512_set1_ps(sn[b]), tot[r]);
	}
	rt_nb_corr_512(g, n, R, corr);
	for (int r = 0; r < R; r++)
		g->C[r * g->N + n] = _mm512_reduce_add_ps(tot[r]) - corr[r] +
				     (g->bias ? g->bias[n] : 0.0f);
}
#endif

/*
 * Column n against the group's R rows: each 8 bytes of B unpacked once
 * into 8 low and 8 high nibbles as floats, then one FMA per half and row.
 */
static inline __attribute__((always_inline)) void
rt_nb_col(const struct rt_nb *g, int64_t n, const int R)
{
	const uint8_t *bn = g->B + n * g->kb * (g->bs / 2);
	__m256 tot[RT_NB_R], acc[RT_NB_R];
	__m128i mask = _mm_set1_epi8(15);
	float corr[RT_NB_R] = { 0 };

	for (int r = 0; r < R; r++)
		tot[r] = _mm256_setzero_ps();
	for (int64_t b = 0; b < g->kb; b++) {
		float s = g->S[n * g->kb + b], zs = s * rt_nb_zero(g, n, b);

		for (int r = 0; r < R; r++)
			acc[r] = _mm256_setzero_ps();
		for (int64_t c = 0; c < g->bs; c += 16) {
			__m128i v = _mm_loadl_epi64((const __m128i *)(bn + (b * g->bs + c) / 2));
			__m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(v, mask)));
			__m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
						_mm_and_si128(_mm_srli_epi16(v, 4), mask)));

			for (int r = 0; r < R; r++) {
				const float *ad = g->Ad + r * g->kb * g->bs + b * g->bs + c;

				acc[r] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(ad), acc[r]);
				acc[r] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(ad + 8), acc[r]);
			}
		}
		for (int r = 0; r < R; r++) {
			tot[r] = _mm256_fmadd_ps(acc[r], _mm256_set1_ps(s), tot[r]);
			corr[r] += zs * g->As[r * g->kb + b];
		}
	}
	for (int r = 0; r < R; r++)
		g->C[r * g->N + n] = rt_nb_hsum(tot[r]) - corr[r] + (g->bias ? g->bias[n] : 0.0f);
}
#else
/* Column n against the group's R rows, the 8 lanes of the AVX2 path as an array. */
static inline void rt_nb_col(const struct rt_nb *g, int64_t n, const int R)
{
	const uint8_t *bn = g->B + n * g->kb * (g->bs / 2);
	float tot[RT_NB_R][8] = { { 0 } }, corr[RT_NB_R] = { 0 };

	for (int64_t b = 0; b < g->kb; b++) {
		float s = g->S[n * g->kb + b], zs = s * rt_nb_zero(g, n, b);
		float acc[RT_NB_R][8] = { { 0 } };

		for (int64_t c = 0; c < g->bs; c += 16) {
			const uint8_t *p = bn + (b * g->bs + c) / 2;

			for (int r = 0; r < R; r++) {
				const float *ad = g->Ad + r * g->kb * g->bs + b * g->bs + c;

				for (int e = 0; e < 8; e++)
					acc[r][e] += (float)(p[e] & 15) * ad[e] +
						     (float)(p[e] >> 4) * ad[8 + e];
			}
		}
		for (int r = 0; r < R; r++) {
			for (int e = 0; e < 8; e++)
				tot[r][e] += acc[r][e] * s;
			corr[r] += zs * g->As[r * g->kb + b];
		}
	}
	for (int r = 0; r < R; r++) {
		float t = 0.0f;

		for (int e = 0; e < 8; e++)
			t += tot[r][e];
		g->C[r * g->N + n] = t - corr[r] + (g->bias ? g->bias[n] : 0.0f);
	}
}
#endif

/* Runs [c0, c1) of RT_NB_COLS columns of the group of rows, for rt_par_for. */
static void rt_nb_cols(void *v, int64_t c0, int64_t c1)
{
	const struct rt_nb *g = v;
	int64_t n1 = c1 * RT_NB_COLS < g->N ? c1 * RT_NB_COLS : g->N, n = c0 * RT_NB_COLS;

#if defined(__AVX512F__) && defined(__AVX512BW__)
	for (; g->G == 32 && n < n1; n++)
		switch (g->rows) {
		case 1: rt_nb_col_512(g, n, 1); break;
		case 2: rt_nb_col_512(g, n, 2); break;
		case 3: rt_nb_col_512(g, n, 3); break;
		default: rt_nb_col_512(g, n, 4); break;
		}
#endif
	for (; n < n1; n++)
		switch (g->rows) {
		case 1: rt_nb_col(g, n, 1); break;
		case 2: rt_nb_col(g, n, 2); break;
		case 3: rt_nb_col(g, n, 3); break;
		default: rt_nb_col(g, n, 4); break;
		}
}

/*
 * Column n of B, rows [k, k1) of K (k even, within one block), unpacked
 * into d (column n's place in the panel, rows RT_CG_NR floats apart).
 */
static inline void rt_nb_unpack1(const struct rt_nb *g, int64_t n, int64_t k, int64_t k1,
				 float *d)
{
	const uint8_t *bn = g->B + n * g->kb * (g->bs / 2);
	int64_t b = k / g->bs, e = 0, e1 = k1 - k;
	float s = g->S[n * g->kb + b], z = rt_nb_zero(g, n, b);

	for (; e + 1 < e1; e += 2) {
		uint8_t q = bn[(k + e) / 2];

		d[e * RT_CG_NR] = ((float)(q & 15) - z) * s;
		d[(e + 1) * RT_CG_NR] = ((float)(q >> 4) - z) * s;
	}
	if (e < e1)
		d[e * RT_CG_NR] = ((float)(bn[(k + e) / 2] & 15) - z) * s;
}

#if defined(__AVX2__) && defined(__FMA__)
/*
 * Columns [n, n + 8) of B, rows [k, k + 8) (within block b), unpacked into
 * the panel at d: each column's 4 bytes into 8 integers in order (nibbles
 * interleaved low, high), the 8 x 8 block transposed so that a row of 8
 * columns is one vector, then scaled by the columns' s and s z (sv, zv).
 */
static inline __attribute__((always_inline)) void
rt_nb_unpack8x8(const uint8_t *b0, int64_t row, __m256 sv, __m256 zv, float *d)
{
	__m128i mask = _mm_set1_epi8(15);
	__m256 r[8], t[8], u[8];

#pragma GCC unroll 8
	for (int c = 0; c < 8; c++) {
		int32_t w;
		__m128i v;

		memcpy(&w, b0 + c * row, 4);
		v = _mm_cvtsi32_si128(w);
		v = _mm_unpacklo_epi8(_mm_and_si128(v, mask), _mm_and_si128(_mm_srli_epi16(v, 4),
									     mask));
		r[c] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
	}
#pragma GCC unroll 4
	for (int c = 0; c < 8; c += 2) {
		t[c] = _mm256_unpacklo_ps(r[c], r[c + 1]);
		t[c + 1] = _mm256_unpackhi_ps(r[c], r[c + 1]);
	}
#pragma GCC unroll 2
	for (int c = 0; c < 8; c += 4) {
		u[c] = _mm256_shuffle_ps(t[c], t[c + 2], 0x44);
		u[c + 1] = _mm256_shuffle_ps(t[c], t[c + 2], 0xee);
		u[c + 2] = _mm256_shuffle_ps(t[c + 1], t[c + 3], 0x44);
		u[c + 3] = _mm256_shuffle_ps(t[c + 1], t[c + 3], 0xee);
	}
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		_mm256_storeu_ps(d + c * RT_CG_NR, _mm256_fmsub_ps(
			_mm256_permute2f128_ps(u[c], u[c + 4], 0x20), sv, zv));
		_mm256_storeu_ps(d + (c + 4) * RT_CG_NR, _mm256_fmsub_ps(
			_mm256_permute2f128_ps(u[c], u[c + 4], 0x31), sv, zv));
	}
}

/* Columns [n, n + 8), rows [k, k1) (k, k1 multiples of 8 in one block) into d. */
static inline void rt_nb_unpack8(const struct rt_nb *g, int64_t n, int64_t k, int64_t k1,
				 float *d)
{
	int64_t b = k / g->bs, row = g->kb * (g->bs / 2);
	float s[8], z[8];
	__m256 sv, zv;

	for (int c = 0; c < 8; c++) {
		s[c] = g->S[(n + c) * g->kb + b];
		z[c] = s[c] * rt_nb_zero(g, n + c, b);
	}
	sv = _mm256_loadu_ps(s);
	zv = _mm256_loadu_ps(z);
	for (; k < k1; k += 8, d += 8 * RT_CG_NR)
		rt_nb_unpack8x8(g->B + n * row + k / 2, row, sv, zv, d);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
/* The scales s and s z of block b of columns [n, n + 8). */
static inline void rt_nb_scales8(const struct rt_nb *g, int64_t n, int64_t b, __m256 *sv,
				 __m256 *zv)
{
	float s[8], z[8];

	for (int c = 0; c < 8; c++) {
		s[c] = g->S[(n + c) * g->kb + b];
		z[c] = s[c] * rt_nb_zero(g, n + c, b);
	}
	*sv = _mm256_loadu_ps(s);
	*zv = _mm256_loadu_ps(z);
}

/* Rows k and k + 1 of 8 columns: the low and high nibbles of 8 bytes. */
static inline __attribute__((always_inline)) void
rt_nb_rows2(__m128i lo, __m128i hi, __m256 sv, __m256 zv, float *d)
{
	_mm256_storeu_ps(d, _mm256_fmsub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo)), sv, zv));
	_mm256_storeu_ps(d + RT_CG_NR, _mm256_fmsub_ps(_mm256_cvtepi32_ps(
		_mm256_cvtepu8_epi32(hi)), sv, zv));
}

/*
 * Columns [n, n + 8), rows [k, k + 32) into d: 16 bytes of each column
 * transposed as bytes (8 x 16, three rounds of unpacks), so that each k
 * pair of the 8 columns is 8 bytes, then their nibbles as two rows. sv0,
 * zv0 scale rows k to k + 15, sv1, zv1 the rest (another block when bs is 16).
 */
static inline void rt_nb_unpack8x32(const uint8_t *b0, int64_t row, __m256 sv0, __m256 zv0,
				    __m256 sv1, __m256 zv1, float *d)
{
	__m128i mask = _mm_set1_epi8(15), r[8], a[8], b[8], c[8];

#pragma GCC unroll 8
	for (int i = 0; i < 8; i++)
		r[i] = _mm_loadu_si128((const __m128i *)(b0 + i * row));
#pragma GCC unroll 4
	for (int i = 0; i < 8; i += 2) {
		a[i] = _mm_unpacklo_epi8(r[i], r[i + 1]);
		a[i + 1] = _mm_unpackhi_epi8(r[i], r[i + 1]);
	}
	/* b: columns 0-3 (b0..b3) and 4-7 (b4..b7), 4 bytes a k pair, pairs 0-15 */
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		b[4 * h] = _mm_unpacklo_epi16(a[4 * h], a[4 * h + 2]);
		b[4 * h + 1] = _mm_unpackhi_epi16(a[4 * h], a[4 * h + 2]);
		b[4 * h + 2] = _mm_unpacklo_epi16(a[4 * h + 1], a[4 * h + 3]);
		b[4 * h + 3] = _mm_unpackhi_epi16(a[4 * h + 1], a[4 * h + 3]);
	}
	/* c[q]: the 8 columns of k pairs 2q and 2q + 1 */
#pragma GCC unroll 4
	for (int q = 0; q < 4; q++) {
		c[2 * q] = _mm_unpacklo_epi32(b[q], b[q + 4]);
		c[2 * q + 1] = _mm_unpackhi_epi32(b[q], b[q + 4]);
	}
#pragma GCC unroll 8
	for (int q = 0; q < 8; q++) {
		__m128i lo = _mm_and_si128(c[q], mask);
		__m128i hi = _mm_and_si128(_mm_srli_epi16(c[q], 4), mask);
		__m256 sv = q < 4 ? sv0 : sv1, zv = q < 4 ? zv0 : zv1;
		float *dq = d + 4 * q * RT_CG_NR;

		rt_nb_rows2(lo, hi, sv, zv, dq);
		rt_nb_rows2(_mm_unpackhi_epi64(lo, lo), _mm_unpackhi_epi64(hi, hi), sv, zv,
			    dq + 2 * RT_CG_NR);
	}
}

/* Columns [n, n + 8), rows [k, k1) (32 rows at a time, k1 - k a multiple of 32) into d. */
static inline void rt_nb_unpack8w(const struct rt_nb *g, int64_t n, int64_t k, int64_t k1,
				  float *d)
{
	int64_t row = g->kb * (g->bs / 2), bl = -1;
	__m256 sv0 = _mm256_setzero_ps(), zv0 = sv0, sv1 = sv0, zv1 = sv0;

	for (; k < k1; k += 32, d += 32 * RT_CG_NR) {
		if (k / g->bs != bl) {
			bl = k / g->bs;
			rt_nb_scales8(g, n, bl, &sv0, &zv0);
			sv1 = sv0;
			zv1 = zv0;
		}
		if ((k + 16) / g->bs != bl) {
			bl = (k + 16) / g->bs;
			rt_nb_scales8(g, n, bl, &sv1, &zv1);
		}
		rt_nb_unpack8x32(g->B + n * row + k / 2, row, sv0, zv0, sv1, zv1, d);
	}
}
#endif

/*
 * Columns [j0, j0 + nr) of B, rows [k0, k0 + kc) of K (k0 a multiple of
 * 16), unpacked into p (rt_cgemm.h's panel: row k at k * 16): element k of
 * column n is nibble k of its row of B, whatever the block; 8 x 8 at a
 * time with AVX2, one column a block segment at a time otherwise.
 */
static inline void rt_nb_panel(const struct rt_nb *g, int64_t j0, int nr, int64_t k0,
			       int64_t kc, float *p)
{
	int64_t k8 = k0, k1;
	int c8 = 0;

#if defined(__AVX2__) && defined(__FMA__)
	k8 = k0 + kc / 8 * 8;
	c8 = nr / 8 * 8;
	for (int jj = 0; jj < c8; jj += 8)
		rt_nb_unpack8w(g, j0 + jj, k0, k0 + kc / 32 * 32, p + jj);
	for (int jj = 0; jj < c8; jj += 8)
		for (int64_t k = k0 + kc / 32 * 32; k < k8; k = k1) {
			int64_t b1 = (k / g->bs + 1) * g->bs;

			k1 = b1 < k8 ? b1 : k8;
			rt_nb_unpack8(g, j0 + jj, k, k1, p + (k - k0) * RT_CG_NR + jj);
		}
#endif
	for (int jj = 0; jj < nr; jj++)
		for (int64_t k = jj < c8 ? k8 : k0; k < k0 + kc; k = k1) {
			int64_t b1 = (k / g->bs + 1) * g->bs;

			k1 = b1 < k0 + kc ? b1 : k0 + kc;
			rt_nb_unpack1(g, j0 + jj, k, k1, p + (k - k0) * RT_CG_NR + jj);
		}
}

/*
 * Panels [p0, p1) of C (many rows), for rt_par_for: per chunk of
 * RT_NB_NC panels (C's chunk stays in L2), per slice of K, the last tile's
 * rows past M packed once (zero rows), then per panel its slice unpacked
 * and every tile of rows run against it.
 */
static void rt_nb_panels(void *v, int64_t p0, int64_t p1)
{
	const struct rt_nb *g = v;
	float bp[RT_NB_KC * RT_CG_NR] __attribute__((aligned(64)));
	float ap[RT_CG_MR * RT_NB_KC] __attribute__((aligned(64)));
	struct rt_cg_epilogue e = { 1.0f, 1.0f, g->bias, 0, 1, RT_CG_ACT_NONE, 0.0f, 0.0f, NULL, 0 };
	int64_t mfull = g->M / RT_CG_MR * RT_CG_MR;
	int mr = (int)(g->M - mfull);

	for (int64_t jc = p0; jc < p1; jc += RT_NB_NC) {
		int64_t jce = p1 - jc < RT_NB_NC ? p1 : jc + RT_NB_NC;

		for (int64_t k0 = 0; k0 < g->K; k0 += RT_NB_KC) {
			struct rt_cg_kblock kb;

			kb.k0 = k0;
			kb.kc = g->K - k0 < RT_NB_KC ? g->K - k0 : RT_NB_KC;
			kb.first = k0 == 0;
			kb.last = k0 + kb.kc >= g->K;
			if (mr)
				rt_cg_pack_a(g->M, g->A, g->K, 1, mfull, mr, k0, kb.kc, ap);
			for (int64_t jp = jc; jp < jce; jp++) {
				int64_t j0 = jp * RT_CG_NR;
				int nr = g->N - j0 < RT_CG_NR ? (int)(g->N - j0) : RT_CG_NR;

				/* the columns past N multiply as zeros (a tile computes 16) */
				if (nr < RT_CG_NR)
					memset(bp, 0, sizeof(bp));
				rt_nb_panel(g, j0, nr, k0, kb.kc, bp);
				for (int64_t i0 = 0; i0 < mfull; i0 += RT_CG_MR)
					rt_cg_tile(&kb, g->A + i0 * g->K + k0, g->K, 1, bp,
						   g->C + i0 * g->N + j0, g->N, RT_CG_MR, nr, i0, j0,
						   &e);
				if (mr)
					rt_cg_tile(&kb, ap, 1, RT_CG_MR, bp, g->C + mfull * g->N + j0,
						   g->N, mr, nr, mfull, j0, &e);
			}
		}
	}
}

/*
 * C [M, N] = A [M, K] times the 4-bit B (see the top of this file); Zq or
 * Zf the zero points (NULL both: 8), bias NULL or [N]. scratch holds
 * RT_NB_R * (kb * bs + kb) floats (the few-rows path's layout of A).
 */
static inline void rt_nbits(int64_t M, int64_t N, int64_t K, int64_t bs, const float *A,
			    const uint8_t *B, const float *S, const uint8_t *Zq, const float *Zf,
			    const float *bias, float *C, float *scratch, int threads)
{
	int64_t kb = (K + bs - 1) / bs;
	struct rt_nb g = { M, N, K, bs, kb, (kb + 1) / 2, A, B, S, Zq, Zf, bias, C, scratch,
			   scratch + RT_NB_R * kb * bs, 0, RT_NB_G(bs) };
	/* below about a quarter of a million multiply-adds a team costs more than it gains */
	int nt = threads > 1 && M * N * K >= 262144 ? threads : 1;

	if (M <= 0 || N <= 0)
		return;
	if (M >= RT_NB_GEMM_M) {
		int64_t np = (N + RT_CG_NR - 1) / RT_CG_NR;

		if (nt > 1)
			rt_par_for(nt, np, 1, rt_nb_panels, &g);
		else
			rt_nb_panels(&g, 0, np);
		return;
	}
	for (int64_t i = 0; i < M; i += RT_NB_R) {
		int64_t nc = (N + RT_NB_COLS - 1) / RT_NB_COLS;

		g.rows = M - i < RT_NB_R ? (int)(M - i) : RT_NB_R;
		g.A = A + i * K;
		g.C = C + i * N;
		for (int r = 0; r < g.rows; r++)
			rt_nb_layout(&g, g.A + r * K, scratch + r * kb * bs,
				     scratch + RT_NB_R * kb * bs + r * kb);
		if (nt > 1)
			rt_par_for(nt, nc, 1, rt_nb_cols, &g);
		else
			rt_nb_cols(&g, 0, nc);
	}
}

#endif
