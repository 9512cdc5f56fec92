/*
 * rt_cquant.h - the c target's 8-bit integer GEMM, the convolutions on it
 * (rt_ciconv2d: im2col of the pixels as A, the weights as the packed B),
 * DynamicQuantizeLinear and QLinearAdd (rt_qadd), pasted into the
 * generated code as a prelude (embedded into collagec) by the strategies
 * matmulinteger.gemm, qlinearmatmul.gemm, convinteger.gemm,
 * qlinearconv.gemm, dynquantize.vec, quantizelinear.vec and qlinearadd.vec
 * of backends/c/c_strategies.c.
 *
 *	C[i, j] = sum_k (A[i, k] - za(i)) * (B[k, j] - zb(j))     (exact int32)
 *
 * stored as int32 (MatMulInteger) or requantized on write-back
 * (QLinearMatMul): rint(C * (sa(i) * sb(j) / sy)) + yz, saturated, as the
 * op's own lowering (core/ops/ops_quant.c) computes it, bit for bit.
 *
 * Operands. A (uint8 or int8, rows lda apart) is read in place and taken
 * as unsigned: A' = A, or A ^ 0x80 = A + 128 for int8 (the offset trick).
 * B, a constant, is packed at compile time (c_strategies.c) as signed
 * bytes B' = B, or B - 128 for uint8, in panels of RT_CI_NR columns:
 * Bp[(jp * kq + q) * 64 + jj * 4 + kk] = B'[4 q + kk, 16 jp + jj], kq =
 * ceil(K / 4), zero past K and N: each column's 4 bytes of one k quad side
 * by side, the layout vpdpbusd and vpmaddubsw read. With
 * za' = za + (128 for int8 A) and zb' = zb - (128 for uint8 B),
 *
 *	C = sum A'B' - zb'(j) rowsum(A')(i) - za'(i) colsum(B')(j) + K za' zb'
 *
 * computed modulo 2^32 (exact whenever C fits in int32, as ONNX requires
 * of its accumulator). colsum(B') and zb' are packed with B (bsum).
 *
 * Kernels, chosen by the ISA the generated code is compiled for:
 *   AVX-512 VNNI  vpdpbusd on zmm, RT_CI_MR = 8 rows x 16 columns: exact
 *   AVX-VNNI      vpdpbusd on ymm, 4 x 16: exact
 *   AVX2          with `safe` (every pair of B' bytes that vpmaddubsw adds,
 *                 k 4q + {0, 1} and 4q + {2, 3}, has |b0 + b1| <= 128, which
 *                 collagec checks when it packs B: weights quantized to 7
 *                 bits, ONNX Runtime's reduce_range): vpmaddubsw then
 *                 vpmaddwd by ones, which cannot saturate then. Otherwise
 *                 (pairs of 8-bit weights can reach 255 * 254 > 32767,
 *                 where vpmaddubsw saturates and ONNX Runtime's x86 kernels
 *                 lose exactness) the bytes are split into their even and
 *                 odd halves as int16 and multiplied by vpmaddwd, exact
 *                 for every input, about 1.5x the instructions.
 *   otherwise     plain loops over the same layout.
 *
 * Threads take runs of panels (or, with fewer panels than threads, runs
 * of row tiles); every C[i, j] is summed in the same order whatever the
 * thread count (integers: the order does not matter anyway).
 */
#ifndef RT_CQUANT_H
#define RT_CQUANT_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX2__) || defined(__AVXVNNI__) || defined(__AVX512VNNI__) || defined(__SSE2__)
#include <immintrin.h>
#endif

#define RT_CI_NR 16		/* columns of a panel */
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#define RT_CI_MR 8		/* 8 zmm accumulators */
#else
#define RT_CI_MR 4		/* 8 ymm accumulators, 4 for B's halves */
#endif
#define RT_CI_CHUNK 262144	/* bytes of packed B per chunk of panels: stays in L2 */

enum rt_ci_out { RT_CI_OUT_I32, RT_CI_OUT_U8, RT_CI_OUT_I8 };

struct rt_ci_gemm {
	int64_t M, N, K;
	const uint8_t *A;	/* bytes of A (int8 ones too) */
	int64_t lda;
	int a_signed;		/* A is int8: A' = A ^ 0x80 */
	const void *za;		/* A's zero point, A's type, za[i * zas]; NULL: 0 */
	int64_t zas;
	const int8_t *Bp;	/* packed B' */
	const int32_t *bsum;	/* colsum(B')[0, np * 16), then zb'[0, np * 16) */
	int b_signed;		/* B was int8 (B' = B), else uint8 (B' = B - 128) */
	int safe;		/* no pair of B' can saturate vpmaddubsw */
	void *C;		/* enum rt_ci_out's type */
	int64_t ldc;
	int out;		/* enum rt_ci_out */
	const float *sa, *sb, *sy;	/* QLinearMatMul: sa[i * sas], sb[j * sbs], sy[0] */
	int64_t sas, sbs;
	const void *yz;		/* the output's zero point (its type), or NULL: 0 */
	int64_t ldcj;		/* C[i, j] at C[i * ldc + j * ldcj]: 1, or a
				   convolution's pixels (rows) into NCHW */
	const int32_t *bias;	/* per column, added to the int32 sum; NULL: none */
	const int32_t *qmap;	/* NULL: B's quads in order; else per panel
				   the counts of its quads in fused pairs and
				   safe in each byte order, then the k quad of
				   each packed quad, those first (rt_ci_pack;
				   whole quads of A: lda >= 4 kq) */
	/* an implicit convolution (rt_ciconv2d with taps): 0 / NULL otherwise */
	int64_t kq;		/* quads of a panel (K / taps channels padded to 4) */
	const int32_t *qo;	/* byte offset of each k quad from a pixel's corner */
	const int32_t *rsum;	/* each row's sum of A' (rt_ci_rowsum's) */
	int64_t ow, rstep, cstep;	/* row i's corner at A + (i / ow) rstep + (i % ow) cstep */
};

/*
 * The byte offset in a row of A of k quad q: 4 q, or with qo (an implicit
 * convolution, rt_ciconv2d) qo[q], the quad's channels and tap in the
 * channels-last image from the pixel's corner.
 */
#define RT_CI_QOFF(qo, q) ((qo) ? (int64_t)(qo)[q] : 4 * (int64_t)(q))

/* One tile's sums: acc[r][jj] = sum_k A'(row r) B'(k, jj) over the panel. */
typedef int32_t rt_ci_acc[RT_CI_MR][RT_CI_NR];

/* The 4 bytes of A' at quad q of row a (the last, partial quad zero padded). */
static inline uint32_t rt_ci_quad(const uint8_t *a, int64_t q, int64_t K, uint32_t flip)
{
	uint32_t v = 0;

	if (4 * q + 4 <= K)
		memcpy(&v, a + 4 * q, 4);
	else
		memcpy(&v, a + 4 * q, (size_t)(K - 4 * q));
	return v ^ flip;
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
static inline void rt_ci_tile(const uint8_t *const *a, int64_t K, uint32_t flip,
			      const int8_t *bp, int safe, rt_ci_acc acc)
{
	__m512i t[RT_CI_MR];
	int64_t kq = (K + 3) / 4, nq = K / 4;

	(void)safe;
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		t[r] = _mm512_setzero_si512();
	for (int64_t q = 0; q < nq; q++) {
		__m512i b = _mm512_loadu_si512((const void *)(bp + q * 64));

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;

			memcpy(&v, a[r] + 4 * q, 4);
			t[r] = _mm512_dpbusd_epi32(t[r], _mm512_set1_epi32((int)(v ^ flip)), b);
		}
	}
	for (int64_t q = nq; q < kq; q++) {
		__m512i b = _mm512_loadu_si512((const void *)(bp + q * 64));

		for (int r = 0; r < RT_CI_MR; r++)
			t[r] = _mm512_dpbusd_epi32(t[r],
						   _mm512_set1_epi32((int)rt_ci_quad(a[r], q, K, flip)),
						   b);
	}
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		_mm512_storeu_si512((void *)acc[r], t[r]);
}
#elif defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
static inline void rt_ci_tile(const uint8_t *const *a, int64_t K, uint32_t flip,
			      const int8_t *bp, int safe, rt_ci_acc acc)
{
	__m256i t[RT_CI_MR][2];
	int64_t kq = (K + 3) / 4;

	(void)safe;
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		t[r][0] = t[r][1] = _mm256_setzero_si256();
	for (int64_t q = 0; q < kq; q++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + q * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + q * 64 + 32));

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			__m256i x = _mm256_set1_epi32((int)rt_ci_quad(a[r], q, K, flip));

#if defined(__AVXVNNI__)
			t[r][0] = _mm256_dpbusd_avx_epi32(t[r][0], x, b0);
			t[r][1] = _mm256_dpbusd_avx_epi32(t[r][1], x, b1);
#else
			t[r][0] = _mm256_dpbusd_epi32(t[r][0], x, b0);
			t[r][1] = _mm256_dpbusd_epi32(t[r][1], x, b1);
#endif
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++) {
		_mm256_storeu_si256((__m256i *)acc[r], t[r][0]);
		_mm256_storeu_si256((__m256i *)(acc[r] + 8), t[r][1]);
	}
}
#elif defined(__AVX2__)
/* vpmaddubsw, then vpmaddwd by ones: only for a `safe` B (see the top) */
static inline void rt_ci_tile_ubs(const uint8_t *const *a, int64_t K, uint32_t flip,
				  const int8_t *bp, rt_ci_acc acc)
{
	__m256i t[RT_CI_MR][2], ones = _mm256_set1_epi16(1);
	int64_t kq = (K + 3) / 4, nq = K / 4;

#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		t[r][0] = t[r][1] = _mm256_setzero_si256();
	for (int64_t q = 0; q < kq; q++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + q * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + q * 64 + 32));

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;
			__m256i x;

			if (q < nq)
				memcpy(&v, a[r] + 4 * q, 4), v ^= flip;
			else
				v = rt_ci_quad(a[r], q, K, flip);
			x = _mm256_set1_epi32((int)v);
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(
							   _mm256_maddubs_epi16(x, b0), ones));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(
							   _mm256_maddubs_epi16(x, b1), ones));
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++) {
		_mm256_storeu_si256((__m256i *)acc[r], t[r][0]);
		_mm256_storeu_si256((__m256i *)(acc[r] + 8), t[r][1]);
	}
}

/*
 * Exact for any B': per column, the even bytes (k 4q, 4q + 2) and the odd
 * ones (4q + 1, 4q + 3) as int16 pairs, each multiplied by A's matching
 * bytes with vpmaddwd (|a b| <= 255 * 128: no saturation anywhere). The
 * quads from q0 to q1, A's read through rt_ci_quad when pad (the last,
 * partial one), in place otherwise.
 */
static inline __attribute__((always_inline)) void
rt_ci_wd_run(const uint8_t *const *a, int64_t q0, int64_t q1, int64_t K, uint32_t flip,
	     const int8_t *bp, __m256i t[RT_CI_MR][2], const int pad)
{
	const __m256i lo8 = _mm256_set1_epi16(0xff), vflip = _mm256_set1_epi32((int)flip);
	const uint8_t *ar[RT_CI_MR];

#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		ar[r] = a[r];
	for (int64_t q = q0; q < q1; q++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + q * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + q * 64 + 32));
		__m256i b0e = _mm256_srai_epi16(_mm256_slli_epi16(b0, 8), 8);
		__m256i b0o = _mm256_srai_epi16(b0, 8);
		__m256i b1e = _mm256_srai_epi16(_mm256_slli_epi16(b1, 8), 8);
		__m256i b1o = _mm256_srai_epi16(b1, 8);

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;
			__m256i x, xe, xo;

			if (pad)
				v = rt_ci_quad(ar[r], q, K, 0);
			else
				memcpy(&v, ar[r] + 4 * q, 4);
			/* broadcast from memory, flipped in the vector (no GPR round trip) */
			x = _mm256_xor_si256(_mm256_set1_epi32((int)v), vflip);
			xe = _mm256_and_si256(x, lo8);
			xo = _mm256_srli_epi16(x, 8);
			/* one product in flight per accumulator: 16 registers, no spill */
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(xe, b0e));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(xe, b1e));
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(xo, b0o));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(xo, b1o));
		}
	}
}

static inline void rt_ci_tile_wd(const uint8_t *const *a, int64_t K, uint32_t flip,
				 const int8_t *bp, rt_ci_acc acc)
{
	__m256i t[RT_CI_MR][2];

#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		t[r][0] = t[r][1] = _mm256_setzero_si256();
	rt_ci_wd_run(a, 0, K / 4, K, flip, bp, t, 0);
	rt_ci_wd_run(a, K / 4, (K + 3) / 4, K, flip, bp, t, 1);
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++) {
		_mm256_storeu_si256((__m256i *)acc[r], t[r][0]);
		_mm256_storeu_si256((__m256i *)(acc[r] + 8), t[r][1]);
	}
}

static inline void rt_ci_tile(const uint8_t *const *a, int64_t K, uint32_t flip,
			      const int8_t *bp, int safe, rt_ci_acc acc)
{
	if (safe)
		rt_ci_tile_ubs(a, K, flip, bp, acc);
	else
		rt_ci_tile_wd(a, K, flip, bp, acc);
}
#else
static inline void rt_ci_tile(const uint8_t *const *a, int64_t K, uint32_t flip,
			      const int8_t *bp, int safe, rt_ci_acc acc)
{
	int64_t kq = (K + 3) / 4;

	(void)safe;	/* plain int32 products cannot saturate */
	memset(acc, 0, sizeof(rt_ci_acc));
	for (int64_t q = 0; q < kq; q++)
		for (int r = 0; r < RT_CI_MR; r++) {
			int32_t x[4] = { 0 };

			for (int kk = 0; kk < 4 && 4 * q + kk < K; kk++)
				x[kk] = (uint8_t)(a[r][4 * q + kk] ^ (uint8_t)flip);
			for (int jj = 0; jj < RT_CI_NR; jj++) {
				const int8_t *b = bp + q * 64 + jj * 4;

				acc[r][jj] += x[0] * b[0] + x[1] * b[1] + x[2] * b[2] + x[3] * b[3];
			}
		}
}
#endif

/*
 * A's quad v in the byte order o (enum rt_ci_order) its B quad was packed
 * in: byte b of the result is byte rt_ci_perm[o][b] of v.
 */
static inline uint32_t rt_ci_aperm(uint32_t v, int o)
{
	if (o == RT_CI_ORDER_0213)
		return (v & 0xff0000ffu) | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u);
	if (o == RT_CI_ORDER_0312)
		return (v & 0xffu) | (v >> 16 & 0xff00u) | (v << 8 & 0xffff0000u);
	return v;
}

/*
 * The byte order of packed quad p of a panel whose map is map (rt_ci_pack):
 * the fused pairs' (map[0] quads) and the next map[1] as they are, then
 * map[2] and map[3] in the two other orders.
 */
static inline int rt_ci_map_order(const int32_t *map, int64_t p)
{
	int64_t n = map[0];

	if (p < n)
		return RT_CI_ORDER_0123;
	for (int o = 1; o < RT_CI_MAP_HEAD; o++)
		if (p < (n += map[o]))
			return o - 1;
	return RT_CI_ORDER_UNSAFE;
}

#if defined(__AVX2__) && !defined(__AVXVNNI__) && \
	!(defined(__AVX512VNNI__) && defined(__AVX512VL__))
/*
 * Packed quads [p0, p1) of a panel by vpmaddubsw, then vpmaddwd by ones
 * (exact: each is safe in its byte order), A's quads flipped by flip and,
 * with shuf, put in that byte order by vpshufb with ctl.
 */
static inline __attribute__((always_inline)) void
rt_ci_ubs_run(const uint8_t *const *a, int64_t p0, int64_t p1, const uint32_t flip,
	      const int shuf, __m256i ctl, const int8_t *bp, const int32_t *qi,
	      const int32_t *qo, __m256i t[RT_CI_MR][2])
{
	const __m256i ones = _mm256_set1_epi16(1);

	for (int64_t p = p0; p < p1; p++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + p * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + p * 64 + 32));
		int64_t off = RT_CI_QOFF(qo, qi[p]);

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;
			__m256i x;

			memcpy(&v, a[r] + off, 4);
			x = _mm256_set1_epi32((int)(v ^ flip));
			if (shuf)
				x = _mm256_shuffle_epi8(x, ctl);
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(
							   _mm256_maddubs_epi16(x, b0), ones));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(
							   _mm256_maddubs_epi16(x, b1), ones));
		}
	}
}

/*
 * rt_ci_tile_map with AVX2 (no VNNI), flip a constant at each call (0 for
 * uint8 A: no xor at all): the quads safe in some byte order on
 * vpmaddubsw, the others on vpmaddwd, their values kept in registers: 8
 * accumulators, B's 4 halves, A's quad as even and odd int16 (made by
 * shifts, no mask register) and one product, 15 of the 16 ymm registers
 * (with a mask or the flip in a register GCC spilled an accumulator, a
 * store and a reload in every quad's dependency chain).
 */
static inline __attribute__((always_inline)) void
rt_ci_map_avx2(const uint8_t *const *a, int64_t kq, const uint32_t flip, const int8_t *bp,
	       const int32_t *map, const int32_t *qo, rt_ci_acc acc)
{
	const int32_t *qi = map + RT_CI_MAP_HEAD;
	__m256i t[RT_CI_MR][2];
	int64_t nf = map[0], n0 = nf + map[1], n1 = n0 + map[2], n2 = n1 + map[3];
	/* bytes 0 2 1 3 and 0 3 1 2 of each dword (rt_ci_perm) */
	const __m256i c1 = _mm256_set1_epi32(0x03010200), c2 = _mm256_set1_epi32(0x02010300);
	const __m256i ones = _mm256_set1_epi16(1);

#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++)
		t[r][0] = t[r][1] = _mm256_setzero_si256();
	/*
	 * fused pairs: the two quads' vpmaddubsw sums added in 16 bits (exact:
	 * rt_ci_fusable), then one vpmaddwd by ones for both
	 */
	for (int64_t p = 0; p < nf; p += 2) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + p * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + p * 64 + 32));
		__m256i b2 = _mm256_loadu_si256((const __m256i *)(bp + p * 64 + 64));
		__m256i b3 = _mm256_loadu_si256((const __m256i *)(bp + p * 64 + 96));
		int64_t o0 = RT_CI_QOFF(qo, qi[p]), o1 = RT_CI_QOFF(qo, qi[p + 1]);

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v, w;
			__m256i x, y;

			memcpy(&v, a[r] + o0, 4);
			memcpy(&w, a[r] + o1, 4);
			x = _mm256_set1_epi32((int)(v ^ flip));
			y = _mm256_set1_epi32((int)(w ^ flip));
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(_mm256_add_epi16(
				_mm256_maddubs_epi16(x, b0), _mm256_maddubs_epi16(y, b2)), ones));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(_mm256_add_epi16(
				_mm256_maddubs_epi16(x, b1), _mm256_maddubs_epi16(y, b3)), ones));
		}
	}
	rt_ci_ubs_run(a, nf, n0, flip, 0, c1, bp, qi, qo, t);
	rt_ci_ubs_run(a, n0, n1, flip, 1, c1, bp, qi, qo, t);
	rt_ci_ubs_run(a, n1, n2, flip, 1, c2, bp, qi, qo, t);
	for (int64_t p = n2; p < kq; p++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + p * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + p * 64 + 32));
		__m256i b0e = _mm256_srai_epi16(_mm256_slli_epi16(b0, 8), 8);
		__m256i b0o = _mm256_srai_epi16(b0, 8);
		__m256i b1e = _mm256_srai_epi16(_mm256_slli_epi16(b1, 8), 8);
		__m256i b1o = _mm256_srai_epi16(b1, 8);
		int64_t off = RT_CI_QOFF(qo, qi[p]);

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;
			__m256i x, xe, xo;

			memcpy(&v, a[r] + off, 4);
			x = _mm256_set1_epi32((int)(v ^ flip));
			xo = _mm256_srli_epi16(x, 8);
			xe = _mm256_srli_epi16(_mm256_slli_epi16(x, 8), 8);
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(xe, b0e));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(xe, b1e));
			t[r][0] = _mm256_add_epi32(t[r][0], _mm256_madd_epi16(xo, b0o));
			t[r][1] = _mm256_add_epi32(t[r][1], _mm256_madd_epi16(xo, b1o));
		}
	}
#pragma GCC unroll 8
	for (int r = 0; r < RT_CI_MR; r++) {
		_mm256_storeu_si256((__m256i *)acc[r], t[r][0]);
		_mm256_storeu_si256((__m256i *)(acc[r] + 8), t[r][1]);
	}
}
#endif

/*
 * rt_ci_tile over a panel packed in the order of map (see qmap and
 * rt_ci_pack): packed quad p holds k quad map[RT_CI_MAP_HEAD + p] of B,
 * the first map[0] of them fused pairs and the next map[1] safe for
 * vpmaddubsw as they are (no pair |b0 + b1| > 128 in any of the panel's
 * columns), the next map[2] and map[3] safe in byte orders 0 2 1 3 and 0
 * 3 1 2 (enum rt_ci_order; A's quad read in the same order), the rest in
 * none. With AVX2 the safe ones take vpmaddubsw (exact there), a fused
 * pair's two sums added in 16 bits before one vpmaddwd (rt_ci_fusable),
 * the others the vpmaddwd path: most quads of 8-bit weights are safe in
 * some order (ResNet-50's quantized by ONNX Runtime: 63% as they are, 88%
 * in some order), so most of the work runs at vpmaddubsw's speed and
 * every sum stays exact; per-tensor weights (BERT-Base's by
 * quantize_dynamic) mostly fuse (73% of quads). A's quads are whole (lda
 * >= 4 kq).
 */
static inline void rt_ci_tile_map(const uint8_t *const *a, int64_t kq, uint32_t flip,
				  const int8_t *bp, const int32_t *map, const int32_t *qo,
				  rt_ci_acc acc)
{
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
	const int32_t *qi = map + RT_CI_MAP_HEAD;
	__m512i t[RT_CI_MR];

	for (int r = 0; r < RT_CI_MR; r++)
		t[r] = _mm512_setzero_si512();
	for (int64_t p = 0; p < kq; p++) {
		__m512i b = _mm512_loadu_si512((const void *)(bp + p * 64));
		int o = rt_ci_map_order(map, p);

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;
			__m512i x;

			memcpy(&v, a[r] + RT_CI_QOFF(qo, qi[p]), 4);
			x = _mm512_set1_epi32((int)rt_ci_aperm(v ^ flip, o));

			t[r] = _mm512_dpbusd_epi32(t[r], x, b);
		}
	}
	for (int r = 0; r < RT_CI_MR; r++)
		_mm512_storeu_si512((void *)acc[r], t[r]);
#elif defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
	const int32_t *qi = map + RT_CI_MAP_HEAD;
	__m256i t[RT_CI_MR][2];

	for (int r = 0; r < RT_CI_MR; r++)
		t[r][0] = t[r][1] = _mm256_setzero_si256();
	for (int64_t p = 0; p < kq; p++) {
		__m256i b0 = _mm256_loadu_si256((const __m256i *)(bp + p * 64));
		__m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + p * 64 + 32));
		int o = rt_ci_map_order(map, p);

#pragma GCC unroll 8
		for (int r = 0; r < RT_CI_MR; r++) {
			uint32_t v;
			__m256i x;

			memcpy(&v, a[r] + RT_CI_QOFF(qo, qi[p]), 4);
			x = _mm256_set1_epi32((int)rt_ci_aperm(v ^ flip, o));
#if defined(__AVXVNNI__)
			t[r][0] = _mm256_dpbusd_avx_epi32(t[r][0], x, b0);
			t[r][1] = _mm256_dpbusd_avx_epi32(t[r][1], x, b1);
#else
			t[r][0] = _mm256_dpbusd_epi32(t[r][0], x, b0);
			t[r][1] = _mm256_dpbusd_epi32(t[r][1], x, b1);
#endif
		}
	}
	for (int r = 0; r < RT_CI_MR; r++) {
		_mm256_storeu_si256((__m256i *)acc[r], t[r][0]);
		_mm256_storeu_si256((__m256i *)(acc[r] + 8), t[r][1]);
	}
#elif defined(__AVX2__)
	/* specialised: flip and whether there are offsets constants of each copy */
	if (qo && flip)
		rt_ci_map_avx2(a, kq, 0x80808080u, bp, map, qo, acc);
	else if (qo)
		rt_ci_map_avx2(a, kq, 0, bp, map, qo, acc);
	else if (flip)
		rt_ci_map_avx2(a, kq, 0x80808080u, bp, map, NULL, acc);
	else
		rt_ci_map_avx2(a, kq, 0, bp, map, NULL, acc);
#else
	const int32_t *qi = map + RT_CI_MAP_HEAD;

	memset(acc, 0, sizeof(rt_ci_acc));
	for (int64_t p = 0; p < kq; p++) {
		int o = rt_ci_map_order(map, p);

		for (int r = 0; r < RT_CI_MR; r++) {
			const uint8_t *ar = a[r] + RT_CI_QOFF(qo, qi[p]);
			int32_t x[4];

			for (int kk = 0; kk < 4; kk++)
				x[kk] = (uint8_t)(ar[rt_ci_perm[o][kk]] ^ (uint8_t)flip);
			for (int jj = 0; jj < RT_CI_NR; jj++) {
				const int8_t *b = bp + p * 64 + jj * 4;

				acc[r][jj] += x[0] * b[0] + x[1] * b[1] + x[2] * b[2] + x[3] * b[3];
			}
		}
	}
#endif
}

/* A zero point of an 8-bit type as an int. */
static inline int32_t rt_ci_zp(const void *z, int64_t i, int is_signed)
{
	if (!z)
		return 0;
	return is_signed ? ((const int8_t *)z)[i] : ((const uint8_t *)z)[i];
}

/*
 * m[j] = sa(i) * sb(j0 + j) / sy for the panel's 16 columns (past N: 0),
 * the requantization multiplier, in that order as the op's lowering
 * computes it (vector or not, the same float32 operations).
 */
static inline void rt_ci_mult(const struct rt_ci_gemm *g, int64_t i, int64_t j0, int nr,
			      float m[RT_CI_NR])
{
	float sb[RT_CI_NR] = { 0 };

	for (int j = 0; j < nr; j++)
		sb[j] = g->sb[(j0 + j) * g->sbs];
#if defined(__AVX2__)
	for (int h = 0; h < RT_CI_NR; h += 8)
		_mm256_storeu_ps(m + h, _mm256_div_ps(_mm256_mul_ps(_mm256_set1_ps(g->sa[i * g->sas]),
								    _mm256_loadu_ps(sb + h)),
						      _mm256_set1_ps(g->sy[0])));
#else
	for (int j = 0; j < RT_CI_NR; j++)
		m[j] = g->sa[i * g->sas] * sb[j] / g->sy[0];
#endif
}

/*
 * q[j] = rint(q[j] * m[j]) + yz clamped to [lo, hi] (a NaN kept, as the
 * op's lowering keeps it), truncated to int32 in place: the requantized
 * values of one row of a tile. With AVX2 8 at a time (vmaxps/vminps with
 * the bound first return the NaN operand, as the scalar selects do).
 */
#if defined(__AVX2__)
/* 8 lanes of rt_ci_requant: rint(q m) + yz clamped to [lo, hi], truncated to int32. */
static inline __attribute__((always_inline)) __m256i
rt_ci_requant8(__m256i q, __m256 m, __m256 vz, __m256 vlo, __m256 vhi)
{
	__m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), m),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

	v = _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(v, vz)));
	return _mm256_cvttps_epi32(v);
}

/* The low bytes of 4 rows' 8 columns side by side: a column's 4 bytes a dword. */
static inline __attribute__((always_inline)) __m256i rt_ci_bytes4(const __m256i v[4])
{
	const __m256i m8 = _mm256_set1_epi32(0xff);
	__m256i lo = _mm256_or_si256(_mm256_and_si256(v[0], m8),
				     _mm256_slli_epi32(_mm256_and_si256(v[1], m8), 8));
	__m256i hi = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(v[2], m8), 16),
				     _mm256_slli_epi32(v[3], 24));

	return _mm256_or_si256(lo, hi);
}
#endif

static inline void rt_ci_requant(int32_t q[RT_CI_NR], const float m[RT_CI_NR], float yz,
				 float lo, float hi)
{
#if defined(__AVX2__)
	const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), vz = _mm256_set1_ps(yz);

	for (int h = 0; h < RT_CI_NR; h += 8)
		_mm256_storeu_si256((__m256i *)(q + h), rt_ci_requant8(
			_mm256_loadu_si256((const __m256i *)(q + h)), _mm256_loadu_ps(m + h), vz,
			vlo, vhi));
#else
	for (int j = 0; j < RT_CI_NR; j++) {
		float v = rintf((float)q[j] * m[j]) + yz;

		v = ((v > lo) | (v != v)) ? v : lo;
		v = ((v < hi) | (v != v)) ? v : hi;
		q[j] = (int32_t)v;
	}
#endif
}

/*
 * A panel's constants of rt_ci_store, made once per panel and chunk of
 * rows by rt_ci_block where A's zero point is per tensor (zas 0): the
 * requantization multipliers (sas 0; rt_ci_mult's), cc[j] = bias[j] - za
 * cs[j] + K za zb'[j] and whether every zb'[j] is 0, so that the
 * correction of a sum is acc - zb'[j] rs (one product, none where zb' is
 * 0) plus cc[j]: the same int32 sums modulo 2^32, so the same values.
 */
struct rt_ci_pre {
	float m[RT_CI_NR];
	int32_t cc[RT_CI_NR];
	int zb0;
};

#define RT_CI_PRE 64	/* panels of a chunk with their constants made once */

static inline void rt_ci_pre_make(const struct rt_ci_gemm *g, int64_t jp, struct rt_ci_pre *p)
{
	int64_t np = (g->N + RT_CI_NR - 1) / RT_CI_NR, j0 = jp * RT_CI_NR;
	int nr = g->N - j0 < RT_CI_NR ? (int)(g->N - j0) : RT_CI_NR;
	const int32_t *cs = g->bsum + j0, *zb = g->bsum + np * RT_CI_NR + j0;
	uint32_t za = (uint32_t)(rt_ci_zp(g->za, 0, g->a_signed) + (g->a_signed ? 128 : 0));
	uint32_t kza = (uint32_t)g->K * za;

	p->zb0 = 1;
	for (int j = 0; j < RT_CI_NR; j++) {
		uint32_t b = j < nr && g->bias ? (uint32_t)g->bias[j0 + j] : 0;

		p->cc[j] = (int32_t)(b - za * (uint32_t)cs[j] + kza * (uint32_t)zb[j]);
		p->zb0 &= zb[j] == 0;
	}
	if (g->out != RT_CI_OUT_I32 && g->sas == 0)
		rt_ci_mult(g, 0, j0, nr, p->m);
	else
		memset(p->m, 0, sizeof(p->m));
}

#if defined(__AVX2__)
/*
 * 8 sums of row i of a tile (rs: its sum of A') corrected for the weights'
 * zero points (zbv, unless zb0) and by the panel's constants cc, then
 * requantized: the write-backs' arithmetic, rt_ci_store's general path's.
 */
static inline __attribute__((always_inline)) __m256i
rt_ci_out8(__m256i q, int zb0, __m256i zbv, int32_t rs, __m256i cc, __m256 m, __m256 vz,
	   __m256 vlo, __m256 vhi)
{
	if (!zb0)
		q = _mm256_sub_epi32(q, _mm256_mullo_epi32(zbv, _mm256_set1_epi32(rs)));
	return rt_ci_requant8(_mm256_add_epi32(q, cc), m, vz, vlo, vhi);
}

/*
 * rt_ci_store of a whole tile (RT_CI_MR rows, 4 or 8) into a convolution's
 * NCHW bytes (ldc 1, ldcj the pixels), its panel's constants made (pre)
 * and one multiplier per column (sas 0): rt_ci_out8 and rt_ci_bytes4, 8
 * columns of 4 rows at a time kept in registers from the sums to each
 * column's 4 bytes, C and ldcj in
 * locals (a byte store may alias g, which GCC then read again for each
 * store). 1.1-1.5x faster layers where K is small (64->256 1x1 at 56x56).
 */
static inline void rt_ci_store_nchw(const struct rt_ci_gemm *g, rt_ci_acc acc,
				    const int32_t *rs, int64_t i0, int64_t j0, int nr,
				    const struct rt_ci_pre *pre, const int32_t *zb, float yz,
				    float lo, float hi)
{
	const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), vz = _mm256_set1_ps(yz);
	const int64_t ldcj = g->ldcj;
	uint8_t *c = (uint8_t *)g->C + i0 + j0 * ldcj;

	for (int h = 0; h < RT_CI_NR && h < nr; h += 8) {
		const __m256i cc = _mm256_loadu_si256((const __m256i *)(pre->cc + h));
		const __m256i zbv = _mm256_loadu_si256((const __m256i *)(zb + h));
		const __m256 m = _mm256_loadu_ps(pre->m + h);

		for (int r0 = 0; r0 < RT_CI_MR; r0 += 4) {
			__m256i v[4];
			uint32_t w[8];

#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				v[r] = rt_ci_out8(_mm256_loadu_si256((const __m256i *)
								     (acc[r0 + r] + h)),
						  pre->zb0, zbv, rs[r0 + r], cc, m, vz, vlo, vhi);
			_mm256_storeu_si256((__m256i *)w, rt_ci_bytes4(v));
			for (int j = 0; j < 8 && h + j < nr; j++)
				memcpy(c + r0 + (h + j) * ldcj, &w[j], 4);
		}
	}
}

/*
 * rt_ci_store of a whole tile into row-major bytes (ldcj 1: a QLinearMatMul,
 * or a convolution's channels-last output, ldc the channels), its panel's
 * constants made (pre), one multiplier per column (sas 0): per row the
 * correction and requantization (rt_ci_out8), and each 2 rows' low bytes
 * (masked, so that the unsigned packs keep them as they are, as the general
 * path's casts do) packed into two 16-byte stores.
 */
static inline void rt_ci_store_rows(const struct rt_ci_gemm *g, rt_ci_acc acc,
				    const int32_t *rs, int64_t i0, int64_t j0, int nr,
				    const struct rt_ci_pre *pre, const int32_t *zb, float yz,
				    float lo, float hi)
{
	const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi), vz = _mm256_set1_ps(yz);
	const __m256i m8 = _mm256_set1_epi32(0xff);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	const __m256i cc0 = _mm256_loadu_si256((const __m256i *)pre->cc);
	const __m256i cc1 = _mm256_loadu_si256((const __m256i *)(pre->cc + 8));
	const __m256 m0 = _mm256_loadu_ps(pre->m), m1 = _mm256_loadu_ps(pre->m + 8);
	const __m256i zb0 = _mm256_loadu_si256((const __m256i *)zb);
	const __m256i zb1 = _mm256_loadu_si256((const __m256i *)(zb + 8));
	const int64_t ldc = g->ldc;
	uint8_t *c = (uint8_t *)g->C + i0 * ldc + j0;

	for (int r = 0; r < RT_CI_MR; r += 2) {
		__m256i v[4], b;

		for (int t = 0; t < 2; t++) {
			const int32_t *q = acc[r + t];

			v[2 * t] = _mm256_and_si256(rt_ci_out8(_mm256_loadu_si256((const __m256i *)q),
							       pre->zb0, zb0, rs[r + t], cc0, m0,
							       vz, vlo, vhi), m8);
			v[2 * t + 1] = _mm256_and_si256(rt_ci_out8(_mm256_loadu_si256(
								   (const __m256i *)(q + 8)),
								   pre->zb0, zb1, rs[r + t], cc1,
								   m1, vz, vlo, vhi), m8);
		}
		b = _mm256_packus_epi16(_mm256_packus_epi32(v[0], v[1]),
					_mm256_packus_epi32(v[2], v[3]));
		b = _mm256_permutevar8x32_epi32(b, order);
		if (nr == RT_CI_NR) {
			_mm_storeu_si128((__m128i *)(c + r * ldc), _mm256_castsi256_si128(b));
			_mm_storeu_si128((__m128i *)(c + (r + 1) * ldc),
					 _mm256_extracti128_si256(b, 1));
		} else {
			uint8_t t16[32];

			_mm256_storeu_si256((__m256i *)t16, b);
			memcpy(c + r * ldc, t16, (size_t)nr);
			memcpy(c + (r + 1) * ldc, t16 + 16, (size_t)nr);
		}
	}
}
#endif

/* rt_ci_store's general path (any tile, per-row multipliers, int32 results). */
static inline void rt_ci_store_any(const struct rt_ci_gemm *g, rt_ci_acc acc,
				   const int32_t *rs, int64_t i0, int mr, int64_t j0, int nr,
				   const struct rt_ci_pre *pre, const int32_t *cs,
				   const int32_t *zb, int yt, float yz, float lo, float hi)
{
	int32_t bias[RT_CI_NR] = { 0 };
	float m[RT_CI_NR];

	if (pre) {
		memcpy(m, pre->m, sizeof(m));
#if defined(__AVX2__)
		for (int r = 0; r < mr; r++)
			for (int h = 0; h < RT_CI_NR; h += 8) {
				__m256i v = _mm256_loadu_si256((const __m256i *)(acc[r] + h));
				__m256i rk = _mm256_set1_epi32(rs[r]);

				if (!pre->zb0)
					v = _mm256_sub_epi32(v, _mm256_mullo_epi32(_mm256_loadu_si256(
						(const __m256i *)(zb + h)), rk));
				v = _mm256_add_epi32(v, _mm256_loadu_si256((const __m256i *)
									   (pre->cc + h)));
				_mm256_storeu_si256((__m256i *)(acc[r] + h), v);
			}
#else
		for (int r = 0; r < mr; r++)
			for (int j = 0; j < RT_CI_NR; j++)
				acc[r][j] = (int32_t)((uint32_t)acc[r][j] -
						      (uint32_t)zb[j] * (uint32_t)rs[r] +
						      (uint32_t)pre->cc[j]);
#endif
		for (int r = 0; r < mr && g->out != RT_CI_OUT_I32; r++) {
			if (g->sas != 0)
				rt_ci_mult(g, i0 + r, j0, nr, m);
			rt_ci_requant(acc[r], m, yz, lo, hi);
		}
	} else {
		if (g->bias)
			memcpy(bias, g->bias + j0, sizeof(int32_t) * (size_t)nr);
		if (g->out != RT_CI_OUT_I32 && g->sas == 0)
			rt_ci_mult(g, 0, j0, nr, m);
	}
	for (int r = 0; r < mr && !pre; r++) {
		int64_t i = i0 + r;
		uint32_t za = (uint32_t)(rt_ci_zp(g->za, i * g->zas, g->a_signed) +
					 (g->a_signed ? 128 : 0));
		uint32_t kza = (uint32_t)g->K * za;

		/* cs and zb are zero padded to the whole panel */
#if defined(__AVX2__)
		for (int h = 0; h < RT_CI_NR; h += 8) {
			__m256i zbv = _mm256_loadu_si256((const __m256i *)(zb + h));
			__m256i v = _mm256_loadu_si256((const __m256i *)(acc[r] + h));

			v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zbv, _mm256_set1_epi32(rs[r])));
			v = _mm256_sub_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32((int)za),
				_mm256_loadu_si256((const __m256i *)(cs + h))));
			v = _mm256_add_epi32(v, _mm256_mullo_epi32(_mm256_set1_epi32((int)kza), zbv));
			v = _mm256_add_epi32(v, _mm256_loadu_si256((const __m256i *)(bias + h)));
			_mm256_storeu_si256((__m256i *)(acc[r] + h), v);
		}
#else
		for (int j = 0; j < RT_CI_NR; j++)
			acc[r][j] = (int32_t)((uint32_t)acc[r][j] - (uint32_t)zb[j] * (uint32_t)rs[r] -
					      za * (uint32_t)cs[j] + kza * (uint32_t)zb[j] +
					      (uint32_t)bias[j]);
#endif
		if (g->out == RT_CI_OUT_I32)
			continue;
		if (g->sas != 0)
			rt_ci_mult(g, i, j0, nr, m);
		rt_ci_requant(acc[r], m, yz, lo, hi);
	}
	if (g->ldcj == 1) {
		/* C in a local: a byte store may alias g */
		void *const C = g->C;
		const int64_t ldc = g->ldc;

		for (int r = 0; r < mr; r++) {
			int64_t at = (i0 + r) * ldc + j0;

			if (g->out == RT_CI_OUT_I32)
				memcpy((int32_t *)C + at, acc[r], sizeof(int32_t) * (size_t)nr);
			else if (yt)
				for (int j = 0; j < nr; j++)
					((int8_t *)C)[at + j] = (int8_t)acc[r][j];
			else
				for (int j = 0; j < nr; j++)
					((uint8_t *)C)[at + j] = (uint8_t)acc[r][j];
		}
		return;
	}
	if (g->out != RT_CI_OUT_I32 && g->ldc == 1 && mr == 4) {
		/* a column's 4 pixels are 4 bytes side by side: one 32-bit store */
		uint32_t w[RT_CI_NR];

#if defined(__AVX2__)
		for (int h = 0; h < RT_CI_NR; h += 8) {
			__m256i v[4];

			for (int r = 0; r < 4; r++)
				v[r] = _mm256_loadu_si256((const __m256i *)(acc[r] + h));
			_mm256_storeu_si256((__m256i *)(w + h), rt_ci_bytes4(v));
		}
#else
		for (int j = 0; j < RT_CI_NR; j++)
			w[j] = ((uint32_t)acc[0][j] & 0xff) | ((uint32_t)acc[1][j] & 0xff) << 8 |
			       ((uint32_t)acc[2][j] & 0xff) << 16 | (uint32_t)acc[3][j] << 24;
#endif
		for (int j = 0; j < nr; j++)
			memcpy((uint8_t *)g->C + i0 + (j0 + j) * g->ldcj, &w[j], 4);
		return;
	}
	for (int j = 0; j < nr; j++) {
		int64_t at = i0 * g->ldc + (j0 + j) * g->ldcj;

		for (int r = 0; r < mr; r++) {
			if (g->out == RT_CI_OUT_I32)
				((int32_t *)g->C)[at + r * g->ldc] = acc[r][j];
			else if (yt)
				((int8_t *)g->C)[at + r * g->ldc] = (int8_t)acc[r][j];
			else
				((uint8_t *)g->C)[at + r * g->ldc] = (uint8_t)acc[r][j];
		}
	}
}

/*
 * The tile's sums, corrected for the zero points (and the bias added),
 * requantized or not, written to C (rows i0, panel jp): a row of C at a
 * time, or with ldcj > 1 (a convolution's NCHW output) a column of the
 * tile's rows at a time. pre: the panel's constants (struct rt_ci_pre),
 * or NULL.
 */
static inline void rt_ci_store(const struct rt_ci_gemm *g, rt_ci_acc acc, const int32_t *rs,
			       int64_t i0, int mr, int64_t jp, const struct rt_ci_pre *pre)
{
	int64_t np = (g->N + RT_CI_NR - 1) / RT_CI_NR, j0 = jp * RT_CI_NR;
	int nr = g->N - j0 < RT_CI_NR ? (int)(g->N - j0) : RT_CI_NR;
	const int32_t *cs = g->bsum + j0, *zb = g->bsum + np * RT_CI_NR + j0;
	int yt = g->out == RT_CI_OUT_I8;
	float lo = yt ? -128.0f : 0.0f, hi = yt ? 127.0f : 255.0f;
	float yz = (float)rt_ci_zp(g->yz, 0, yt);

#if defined(__AVX2__)
	if (pre && mr == RT_CI_MR && g->sas == 0 && g->out != RT_CI_OUT_I32 && g->ldcj > 1 &&
	    g->ldc == 1) {
		rt_ci_store_nchw(g, acc, rs, i0, j0, nr, pre, zb, yz, lo, hi);
		return;
	}
	if (pre && mr == RT_CI_MR && g->sas == 0 && g->out != RT_CI_OUT_I32 && g->ldcj == 1) {
		rt_ci_store_rows(g, acc, rs, i0, j0, nr, pre, zb, yz, lo, hi);
		return;
	}
#endif
	rt_ci_store_any(g, acc, rs, i0, mr, j0, nr, pre, cs, zb, yt, yz, lo, hi);
}

/* sum_k A'[k] of a row of A (A' = A ^ flip), with AVX2 by vpsadbw 32 bytes at a time. */
static inline int32_t rt_ci_rowsum(const uint8_t *p, int64_t K, uint32_t flip)
{
	uint32_t s = 0;
	int64_t k = 0;

#if defined(__AVX2__)
	{
		__m256i t = _mm256_setzero_si256(), f = _mm256_set1_epi32((int)flip);
		__m128i u = _mm_setzero_si128(), f16 = _mm_set1_epi32((int)flip);
		/* the 8-byte loads zero the rest: so does its mask */
		__m128i f8 = _mm_set_epi32(0, 0, (int)flip, (int)flip);
		uint64_t l[4], m[2];

		for (; k + 32 <= K; k += 32)
			t = _mm256_add_epi64(t, _mm256_sad_epu8(_mm256_xor_si256(
				_mm256_loadu_si256((const __m256i *)(p + k)), f), _mm256_setzero_si256()));
		/* then 16 and 8 bytes (a pixel's channels, a few quads) */
		for (; k + 16 <= K; k += 16)
			u = _mm_add_epi64(u, _mm_sad_epu8(_mm_xor_si128(_mm_loadu_si128(
				(const __m128i *)(p + k)), f16), _mm_setzero_si128()));
		for (; k + 8 <= K; k += 8)
			u = _mm_add_epi64(u, _mm_sad_epu8(_mm_xor_si128(_mm_loadl_epi64(
				(const __m128i *)(p + k)), f8), _mm_setzero_si128()));
		_mm256_storeu_si256((__m256i *)l, t);
		_mm_storeu_si128((__m128i *)m, u);
		s = (uint32_t)(l[0] + l[1] + l[2] + l[3] + m[0] + m[1]);
	}
#endif
	for (; k < K; k++)
		s += (uint32_t)(uint8_t)(p[k] ^ (uint8_t)flip);
	return (int32_t)s;
}

/* Rows [r0, r1) x panels [jp0, jp1) of C. */
static inline void rt_ci_block(const struct rt_ci_gemm *g, int64_t r0, int64_t r1, int64_t jp0,
			       int64_t jp1)
{
	int64_t kq = g->kq ? g->kq : (g->K + 3) / 4, pb = kq * 64;
	int64_t nc = RT_CI_CHUNK / (pb > 0 ? pb : 1);
	uint32_t flip = g->a_signed ? 0x80808080u : 0;
	struct rt_ci_pre pbuf[RT_CI_PRE], *pre = g->zas == 0 ? pbuf : NULL;

	nc = nc < 1 ? 1 : nc;
	if (g->zas == 0)
		nc = nc < RT_CI_PRE ? nc : RT_CI_PRE;
	for (int64_t jc = jp0; jc < jp1; jc += nc) {
		int64_t jce = jp1 - jc < nc ? jp1 : jc + nc;

		if (pre)
			for (int64_t jp = jc; jp < jce; jp++)
				rt_ci_pre_make(g, jp, pre + (jp - jc));

		for (int64_t i0 = r0; i0 < r1; i0 += RT_CI_MR) {
			int mr = r1 - i0 < RT_CI_MR ? (int)(r1 - i0) : RT_CI_MR;
			const uint8_t *a[RT_CI_MR];
			int32_t rs[RT_CI_MR];
			rt_ci_acc acc;

			for (int r = 0; r < RT_CI_MR; r++) {
				/* rows past the end repeat the last one, their sums dropped */
				int64_t i = i0 + (r < mr ? r : mr - 1);

				if (g->rsum) {
					a[r] = g->A + i / g->ow * g->rstep + i % g->ow * g->cstep;
					rs[r] = g->rsum[i];
					continue;
				}
				a[r] = g->A + i * g->lda;
				rs[r] = rt_ci_rowsum(a[r], g->K, flip);
			}
			for (int64_t jp = jc; jp < jce; jp++) {
				if (g->qmap)
					rt_ci_tile_map(a, kq, flip, g->Bp + jp * pb,
						       g->qmap + jp * (kq + RT_CI_MAP_HEAD), g->qo,
						       acc);
				else
					rt_ci_tile(a, g->K, flip, g->Bp + jp * pb, g->safe, acc);
				rt_ci_store(g, acc, rs, i0, mr, jp,
					    pre ? pre + (jp - jc) : NULL);
			}
		}
	}
}

/* rt_cigemm's work in nt shares, for rt_par_for. */
struct rt_ci_job {
	const struct rt_ci_gemm *g;
	int64_t np, tiles, nt;
	int rows;
};

static void rt_ci_share(void *v, int64_t t0, int64_t t1)
{
	const struct rt_ci_job *j = v;
	int64_t nt = j->nt;

	for (int64_t t = t0; t < t1; t++) {
		if (j->rows) {
			int64_t r0 = j->tiles * t / nt * RT_CI_MR;
			int64_t r1 = j->tiles * (t + 1) / nt * RT_CI_MR;

			r1 = r1 < j->g->M ? r1 : j->g->M;
			if (r0 < r1)
				rt_ci_block(j->g, r0, r1, 0, j->np);
		} else {
			rt_ci_block(j->g, 0, j->g->M, j->np * t / nt, j->np * (t + 1) / nt);
		}
	}
}

/*
 * C = the zero-point-corrected product of A and the packed B (+ bias per
 * column, when not NULL), as int32 or
 * requantized (out, enum rt_ci_out); see the top of this file. qmap: B
 * packed with each panel's safe quads first (K a multiple of 4), or NULL
 * (struct rt_ci_gemm). threads
 * split the panels, or the row tiles when panels are fewer than threads.
 */
static inline void rt_cigemm(int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
			     int a_signed, const void *za, int64_t zas, const int8_t *Bp,
			     const int32_t *bsum, int b_signed, int safe, void *C, int64_t ldc,
			     int out, const float *sa, int64_t sas, const float *sb, int64_t sbs,
			     const float *sy, const void *yz, const int32_t *bias,
			     const int32_t *qmap, int threads)
{
	struct rt_ci_gemm g = { M, N, K, (const uint8_t *)A, lda, a_signed, za, zas, Bp, bsum,
				b_signed, safe, C, ldc, out, sa, sb, sy, sas, sbs, yz, 1, bias,
				qmap, 0, NULL, NULL, 0, 0, 0 };
	int64_t np = (N + RT_CI_NR - 1) / RT_CI_NR, tiles = (M + RT_CI_MR - 1) / RT_CI_MR;
	/* below about a quarter of a million multiply-adds a team costs more than it gains */
	int nt = threads > 1 && M * N * K >= 262144 ? threads : 1;
	int rows = nt > np;

	if (M <= 0 || N <= 0)
		return;
	if (rows && nt > tiles)
		nt = tiles > 0 ? (int)tiles : 1;
	if (nt > 1) {
		struct rt_ci_job j = { &g, np, tiles, nt, rows };

		rt_par_for(nt, nt, 1, rt_ci_share, &j);
	} else {
		rt_ci_block(&g, 0, M, 0, np);
	}
}

/*
 * Pixels [qa, qb) of output row oh in column k = (c * kh + i) * kw + j of
 * the im2col matrix of one group's channels (one row per pixel, ld bytes
 * apart; the caller steps c, i, j, sparing divisions): col[p * ld + k]
 * for pixel p = oh * OW + q and k = (c * kh + i) * kw + j is x[c, oh * sh
 * - ph + i * dh, q * sw - pw + j * dw], or the zero point z outside the
 * image (padding stands for the zero point, so padded taps add nothing
 * once it is subtracted): a strided copy between runs of z.
 */
static inline void rt_ci_im2col_k(const uint8_t *x, int64_t H, int64_t W, int64_t c,
				  int64_t i, int64_t j, int64_t sh, int64_t sw, int64_t dh,
				  int64_t dw, int64_t ph, int64_t pw, int64_t OW, int64_t oh,
				  int64_t k, int64_t qa, int64_t qb, int64_t ld, uint8_t z,
				  uint8_t *col)
{
	int64_t lo = 0, hi = OW, iw0 = j * dw - pw, ih = oh * sh - ph + i * dh;
	uint8_t *d = col + oh * OW * ld + k;
	const uint8_t *xr;

	if (ih < 0 || ih >= H) {
		for (int64_t q = qa; q < qb; q++)
			d[q * ld] = z;
		return;
	}
	if (iw0 < 0)
		lo = (-iw0 + sw - 1) / sw;
	if (iw0 + (OW - 1) * sw >= W)
		hi = W - 1 - iw0 < 0 ? 0 : (W - 1 - iw0) / sw + 1;
	lo = lo < qa ? qa : lo > qb ? qb : lo;
	hi = hi < lo ? lo : hi > qb ? qb : hi;
	xr = x + (c * H + ih) * W + iw0;
	for (int64_t q = qa; q < lo; q++)
		d[q * ld] = z;
	for (int64_t q = lo; q < hi; q++)
		d[q * ld] = xr[q * sw];
	for (int64_t q = hi; q < qb; q++)
		d[q * ld] = z;
}

#if defined(__SSE2__)
/* r[j] = the bytes j of r[0 .. 15]: a 16 x 16 byte transpose in four rounds of unpacks. */
static inline __attribute__((always_inline)) void rt_ci_t16(__m128i r[16])
{
	__m128i a[16], b[16];

	for (int i = 0; i < 8; i++) {
		a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
		a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
	}
	for (int i = 0; i < 4; i++) {
		b[4 * i] = _mm_unpacklo_epi16(a[4 * i], a[4 * i + 2]);
		b[4 * i + 1] = _mm_unpackhi_epi16(a[4 * i], a[4 * i + 2]);
		b[4 * i + 2] = _mm_unpacklo_epi16(a[4 * i + 1], a[4 * i + 3]);
		b[4 * i + 3] = _mm_unpackhi_epi16(a[4 * i + 1], a[4 * i + 3]);
	}
	for (int i = 0; i < 2; i++)
		for (int m = 0; m < 4; m++) {
			a[8 * i + 2 * m] = _mm_unpacklo_epi32(b[8 * i + m], b[8 * i + 4 + m]);
			a[8 * i + 2 * m + 1] = _mm_unpackhi_epi32(b[8 * i + m], b[8 * i + 4 + m]);
		}
	for (int n = 0; n < 8; n++) {
		r[2 * n] = _mm_unpacklo_epi64(a[n], a[8 + n]);
		r[2 * n + 1] = _mm_unpackhi_epi64(a[n], a[8 + n]);
	}
}

/*
 * Columns [k, k + 16) of output row oh at unit stride and dilation (sw,
 * dw 1): where all 16 read inside the image, 16 pixels at a time are
 * loaded per column (16 bytes of one input row each, or of zrow, z
 * bytes, for a tap row outside it) and transposed into 16 bytes per pixel,
 * then 8 where 8 are left; the pixels left over, rt_ci_im2col_k.
 */
static inline void rt_ci_im2col16(const uint8_t *x, int64_t H, int64_t W, int64_t kh,
				  int64_t kw, int64_t sh, int64_t dh, int64_t ph, int64_t pw,
				  int64_t OW, int64_t oh, int64_t k, const int64_t cij[3], int64_t ld,
				  uint8_t z, const uint8_t *zrow, uint8_t *col)
{
	const uint8_t *src[16];
	int step[16];
	int64_t qs = 0, qe = OW, q0, ct[16], it[16], jt[16];
	int64_t c = cij[0], i = cij[1], j = cij[2];
	__m128i r[16];

	for (int t = 0; t < 16; t++) {
		int64_t ih = oh * sh - ph + i * dh, iw0 = j - pw;

		ct[t] = c;
		it[t] = i;
		jt[t] = j;
		if (++j == kw && (j = 0, ++i == kh))
			i = 0, c++;
		if (ih < 0 || ih >= H) {
			src[t] = zrow;
			step[t] = 0;
			continue;
		}
		src[t] = x + (ct[t] * H + ih) * W + iw0;
		step[t] = 1;
		qs = -iw0 > qs ? -iw0 : qs;
		qe = W - iw0 < qe ? W - iw0 : qe;
	}
	for (q0 = qs; q0 + 16 <= qe; q0 += 16) {
		for (int t = 0; t < 16; t++)
			r[t] = _mm_loadu_si128((const __m128i *)(src[t] + q0 * step[t]));
		rt_ci_t16(r);
		for (int t = 0; t < 16; t++)
			_mm_storeu_si128((__m128i *)(col + (oh * OW + q0 + t) * ld + k), r[t]);
	}
	if (q0 + 8 <= qe) {
		/* 8 more pixels (8 bytes a column, the transpose's other half unused) */
		for (int t = 0; t < 16; t++)
			r[t] = _mm_loadl_epi64((const __m128i *)(src[t] + q0 * step[t]));
		rt_ci_t16(r);
		for (int t = 0; t < 8; t++)
			_mm_storeu_si128((__m128i *)(col + (oh * OW + q0 + t) * ld + k), r[t]);
		q0 += 8;
	}
	if (q0 == qs)
		qs = q0 = OW;	/* no block: every pixel below */
	for (int t = 0; t < 16; t++) {
		rt_ci_im2col_k(x, H, W, ct[t], it[t], jt[t], sh, 1, dh, 1, ph, pw, OW, oh, k + t,
			       0, qs, ld, z, col);
		rt_ci_im2col_k(x, H, W, ct[t], it[t], jt[t], sh, 1, dh, 1, ph, pw, OW, oh, k + t,
			       q0, OW, ld, z, col);
	}
}
#endif

/*
 * Columns [k0, k1) of the im2col matrix (see rt_ci_im2col_k), an output
 * row at a time: its pixels' ld-byte rows, a few KB, stay in L1 until
 * every k has written them (a k at a time over the whole image would
 * fetch each line once per k from L3). At unit stride and dilation 16
 * columns at a time go through a byte transpose (rt_ci_im2col16).
 */
static inline void rt_ci_im2col(const uint8_t *x, int64_t H, int64_t W, int64_t kh, int64_t kw,
				int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph,
				int64_t pw, int64_t OH, int64_t OW, int64_t k0, int64_t k1,
				int64_t ld, uint8_t z, uint8_t *col)
{
#if defined(__SSE2__)
	uint8_t zrow[16];

	memset(zrow, z, sizeof(zrow));
#endif
	for (int64_t oh = 0; oh < OH; oh++) {
		int64_t k = k0, cij[3] = { k0 / (kh * kw), k0 / kw % kh, k0 % kw };

#if defined(__SSE2__)
		if (sw == 1 && dw == 1)
			for (; k + 16 <= k1; k += 16) {
				rt_ci_im2col16(x, H, W, kh, kw, sh, dh, ph, pw, OW, oh, k, cij, ld,
					       z, zrow, col);
				cij[2] += 16;
				cij[1] += cij[2] / kw;
				cij[2] %= kw;
				cij[0] += cij[1] / kh;
				cij[1] %= kh;
			}
#endif
		for (; k < k1; k++) {
			rt_ci_im2col_k(x, H, W, cij[0], cij[1], cij[2], sh, sw, dh, dw, ph, pw, OW,
				       oh, k, 0, OW, ld, z, col);
			if (++cij[2] == kw && (cij[2] = 0, ++cij[1] == kh))
				cij[1] = 0, cij[0]++;
		}
	}
}

/* One group of rt_ciconv2d, in nt shares for rt_par_for. */
struct rt_cic_job {
	const uint8_t *x;	/* channels-last (xc > 0): at the group's first channel */
	int64_t H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW, Kg, lda;
	uint8_t z;
	uint8_t *col;
	const struct rt_ci_gemm *g;
	int64_t np, tiles, nt;
	int64_t xc, cg;		/* x channels-last: its channels (0: NCHW); the group's */
};

/*
 * The im2col rows [p0, p1) (pixels) of a channels-last x: a row's k = c *
 * taps + tap, as rt_ci_im2col's, its bytes past Kg the zero point. At one
 * tap a row is its pixel's cg bytes as they lie (or the zero point's).
 */
static inline void rt_ci_im2col_nhwc(const struct rt_cic_job *j, int64_t p0, int64_t p1)
{
	int64_t taps = j->kh * j->kw, xc = j->xc;

	for (int64_t p = p0; p < p1; p++) {
		int64_t oh = p / j->OW, ow = p % j->OW;
		uint8_t *row = j->col + p * j->lda;

		if (taps == 1) {
			int64_t ih = oh * j->sh - j->ph, iw = ow * j->sw - j->pw;

			if (ih >= 0 && ih < j->H && iw >= 0 && iw < j->W)
				memcpy(row, j->x + (ih * j->W + iw) * xc, (size_t)j->cg);
			else
				memset(row, j->z, (size_t)j->cg);
		} else {
			for (int64_t t = 0; t < taps; t++) {
				int64_t ih = oh * j->sh - j->ph + t / j->kw * j->dh;
				int64_t iw = ow * j->sw - j->pw + t % j->kw * j->dw;
				int in = ih >= 0 && ih < j->H && iw >= 0 && iw < j->W;
				const uint8_t *px = j->x + (ih * j->W + iw) * xc;

				for (int64_t c = 0; c < j->cg; c++)
					row[c * taps + t] = in ? px[c] : j->z;
			}
		}
		memset(row + j->Kg, j->z, (size_t)(j->lda - j->Kg));
	}
}

/* Shares [t0, t1) of the im2col rows k (channels-last x: of the pixels). */
static void rt_cic_cols(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cic_job *j = v;
	int64_t P = j->OH * j->OW;

	for (int64_t t = t0; t < t1 && j->xc; t++)
		rt_ci_im2col_nhwc(j, P * t / j->nt, P * (t + 1) / j->nt);
	for (int64_t t = t0; t < t1 && !j->xc; t++)
		rt_ci_im2col(j->x, j->H, j->W, j->kh, j->kw, j->sh, j->sw, j->dh, j->dw, j->ph,
			     j->pw, j->OH, j->OW, j->Kg * t / j->nt, j->Kg * (t + 1) / j->nt, j->lda,
			     j->z, j->col);
}

/* Shares [t0, t1) of the GEMM's row tiles (pixels). */
static void rt_cic_rows(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cic_job *j = v;
	int64_t P = j->OH * j->OW;

	for (int64_t t = t0; t < t1; t++) {
		int64_t r0 = j->tiles * t / j->nt * RT_CI_MR;
		int64_t r1 = j->tiles * (t + 1) / j->nt * RT_CI_MR;

		r1 = r1 < P ? r1 : P;
		if (r0 < r1)
			rt_ci_block(j->g, r0, r1, 0, j->np);
	}
}

/*
 * An implicit convolution's image and sums (rt_ciconv2d with taps): per
 * padded row hh of the image (hh - ph of x), its Wp pixels of c4 bytes,
 * the cg channels of x there (channels past cg, and pixels outside x, the
 * zero point z), and S[hh, ww], the sum over the cg channels of A' = A ^
 * flip there (vpsadbw over the pixel's bytes; 4 channels: vpmaddubsw as
 * they are unpacked), then summed along the window's width in place
 * (rt_cin_hsum). 16 channels by 16 pixels at a time through rt_ci_t16.
 */
struct rt_cin_job {
	const uint8_t *x;
	int64_t cg, c4, H, W, ph, pw, hp, wp, kh, kw, sh, sw, dh, dw, OW;
	uint8_t z, flip;
	uint8_t *xp;
	int32_t *S, *rsum;
	const struct rt_ci_gemm *g;
	int64_t tiles, nt, P;
	int64_t xc;		/* x channels-last: its channels (x at the group's first);
				   0: NCHW */
};

/*
 * Row s of S summed along the window's width, in place: s[ow] becomes the
 * sum of s[ow * sw + k * dw] over the kw taps k (each read lies at or past
 * ow, so no sum reads one already made), and rt_cin_gemm adds kh of them
 * per pixel, not kh * kw.
 */
static inline void rt_cin_hsum(const struct rt_cin_job *j, int32_t *s)
{
	for (int64_t ow = 0; ow < j->OW; ow++) {
		int32_t sum = 0;

		for (int64_t k = 0; k < j->kw; k++)
			sum += s[ow * j->sw + k * j->dw];
		s[ow] = sum;
	}
}

static void rt_cin_rows(void *v, int64_t h0, int64_t h1)
{
	const struct rt_cin_job *j = v;
	int64_t W = j->W, pw = j->pw, wp = j->wp, c4 = j->c4, HW = j->H * W;
	int32_t zs = (int32_t)j->cg * (uint8_t)(j->z ^ j->flip);

	for (int64_t hh = h0; hh < h1; hh++) {
		int64_t h = hh - j->ph, c = 0, sdone = 0;
		int32_t *s = j->S + hh * wp;
		uint8_t *d = j->xp + hh * wp * c4;
		const uint8_t *xr = j->x + h * W;

		for (int64_t w = 0; w < wp; w++)
			s[w] = zs;
		if (h < 0 || h >= j->H) {
			memset(d, j->z, (size_t)(wp * c4));
			rt_cin_hsum(j, s);
			continue;
		}
		memset(d, j->z, (size_t)(pw * c4));
		memset(d + (pw + W) * c4, j->z, (size_t)((wp - pw - W) * c4));
		d += pw * c4;
		if (j->xc) {
			/*
			 * channels-last: each pixel's cg bytes as they lie (the
			 * whole row at once where they are all of them)
			 */
			if (j->xc == c4)
				memcpy(d, j->x + h * W * c4, (size_t)(W * c4));
			for (int64_t w = 0; w < W && j->xc != c4; w++) {
				memcpy(d + w * c4, j->x + (h * W + w) * j->xc, (size_t)j->cg);
				memset(d + w * c4 + j->cg, j->z, (size_t)(c4 - j->cg));
			}
			for (int64_t w = 0; w < W; w++)
				s[pw + w] = rt_ci_rowsum(d + w * c4, c4, j->flip * 0x01010101u) -
					    (int32_t)(c4 - j->cg) * (uint8_t)(j->z ^ j->flip);
			rt_cin_hsum(j, s);
			continue;
		}
#if defined(__SSE2__)
		for (; c + 16 <= j->cg; c += 16) {
			int64_t w = 0;
			__m128i r[16];

			for (int64_t w0 = 0; W >= 16 && w0 < W; w0 += 16) {
				w = w0 + 16 <= W ? w0 : W - 16;	/* the last block overlaps */
				for (int t = 0; t < 16; t++)
					r[t] = _mm_loadu_si128((const __m128i *)(xr + (c + t) * HW + w));
				rt_ci_t16(r);
				for (int t = 0; t < 16; t++)
					_mm_storeu_si128((__m128i *)(d + (w + t) * c4 + c), r[t]);
				w = W;
			}
			for (; w < W; w++)
				for (int t = 0; t < 16; t++)
					d[w * c4 + c + t] = xr[(c + t) * HW + w];
		}
#endif
#if defined(__SSE2__)
		/* a quad of channels (those past cg: z) 16 pixels at a time */
		for (; c < c4; c += 4) {
			const __m128i zv = _mm_set1_epi8((char)j->z);
			int64_t w = 0;

			for (; w + 16 <= W; w += 16) {
				__m128i r[4], lo01, hi01, lo23, hi23, o[4];

				for (int t = 0; t < 4; t++)
					r[t] = c + t < j->cg ? _mm_loadu_si128((const __m128i *)
									(xr + (c + t) * HW + w))
							      : zv;
				lo01 = _mm_unpacklo_epi8(r[0], r[1]);
				hi01 = _mm_unpackhi_epi8(r[0], r[1]);
				lo23 = _mm_unpacklo_epi8(r[2], r[3]);
				hi23 = _mm_unpackhi_epi8(r[2], r[3]);
				o[0] = _mm_unpacklo_epi16(lo01, lo23);
				o[1] = _mm_unpackhi_epi16(lo01, lo23);
				o[2] = _mm_unpacklo_epi16(hi01, hi23);
				o[3] = _mm_unpackhi_epi16(hi01, hi23);
#if defined(__SSSE3__)
				if (c4 == 4) {
					/* the pixels' sums here: pairs by vpmaddubsw, then quads */
					const __m128i f8 = _mm_set1_epi8((char)j->flip);
					const __m128i one8 = _mm_set1_epi8(1), one16 = _mm_set1_epi16(1);
					const __m128i zc = _mm_set1_epi32((int32_t)(4 - j->cg) *
									  (uint8_t)(j->z ^ j->flip));

					for (int t = 0; t < 4; t++) {
						__m128i q = _mm_madd_epi16(_mm_maddubs_epi16(
							_mm_xor_si128(o[t], f8), one8), one16);

						_mm_storeu_si128((__m128i *)(d + 4 * w + 16 * t), o[t]);
						_mm_storeu_si128((__m128i *)(s + pw + w + 4 * t),
								 _mm_sub_epi32(q, zc));
					}
					sdone = w + 16;
					continue;
				}
#else
				if (c4 == 4) {
					for (int t = 0; t < 4; t++)
						_mm_storeu_si128((__m128i *)(d + 4 * w + 16 * t), o[t]);
					continue;
				}
#endif
				{
					uint8_t tmp[64];

					for (int t = 0; t < 4; t++)
						_mm_storeu_si128((__m128i *)(tmp + 16 * t), o[t]);
					for (int u = 0; u < 16; u++)
						memcpy(d + (w + u) * c4 + c, tmp + 4 * u, 4);
				}
			}
			for (; w < W; w++)
				for (int t = 0; t < 4; t++)
					d[w * c4 + c + t] = c + t < j->cg ? xr[(c + t) * HW + w] : j->z;
		}
#else
		for (; c < c4; c++)
			for (int64_t w = 0; w < W; w++)
				d[w * c4 + c] = c < j->cg ? xr[c * HW + w] : j->z;
#endif
		/* the pixel's c4 bytes, less the channels past cg (z there) */
		for (int64_t w = sdone; w < W; w++)
			s[pw + w] = rt_ci_rowsum(d + w * c4, c4, j->flip * 0x01010101u) -
				    (int32_t)(c4 - j->cg) * (uint8_t)(j->z ^ j->flip);
		rt_cin_hsum(j, s);
	}
}

/* Shares [t0, t1) of the pixels' row tiles: their row sums, then the GEMM's rows. */
static void rt_cin_gemm(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cin_job *j = v;

	for (int64_t t = t0; t < t1; t++) {
		int64_t r0 = j->tiles * t / j->nt * RT_CI_MR;
		int64_t r1 = j->tiles * (t + 1) / j->nt * RT_CI_MR;

		r1 = r1 < j->P ? r1 : j->P;
		/* per output row, the kh sums along the window's width below each pixel */
		for (int64_t p = r0; p < r1;) {
			int64_t oh = p / j->OW;
			int64_t e = (oh + 1) * j->OW < r1 ? (oh + 1) * j->OW : r1;
			const int32_t *s = j->S + oh * j->sh * j->wp - oh * j->OW;

			for (; p < e; p++) {
				int32_t sum = 0;

				for (int64_t i = 0; i < j->kh; i++)
					sum += s[i * j->dh * j->wp + p];
				j->rsum[p] = sum;
			}
		}
		if (r0 < r1)
			rt_ci_block(j->g, r0, r1, 0, (j->g->N + RT_CI_NR - 1) / RT_CI_NR);
	}
}

/*
 * QLinearConv / ConvInteger of one image, 1-D (H = 1) or 2-D: per group
 * the im2col matrix col [OH * OW, Kg] (Kg = C / group * kh * kw, in
 * scratch) is the GEMM's A, its rows the pixels, and the weights of the
 * group's Mg = M / group output channels, packed at compile time
 * (c_strategies.c: B[k, j] = w[g * Mg + j, k], group g's panels at Bp + g
 * * np * kq * 64, its sums at bsum + g * 2 * np * 16), its B, so that
 * rt_ci_store writes C[pixel, channel] straight into y [M, OH * OW] (ldc
 * 1, ldcj the pixels) with the int32 bias per channel added and the
 * requantization (sx * sw(channel) / sy, yz; out, enum rt_ci_out) fused;
 * out RT_CI_OUT_I32 stores the int32 sums (ConvInteger). x's zero point
 * xz is per tensor, w's per tensor or per channel (packed into bsum), sw
 * per channel when sws is 1. col's rows are padded to whole k quads (ld
 * 4 kq bytes), so that every panel may take its quads in the order of
 * qmap (per group np * (kq + RT_CI_MAP_HEAD) entries; see struct rt_ci_gemm), or
 * NULL.
 *
 * With taps (kh * kw; the weights packed in rt_ci_quad_get's implicit
 * order, with qmap) there is no im2col matrix: the group's channels are
 * copied into a padded channels-last image in scratch (rt_cin_rows; its
 * size rt_ci_implicit_bytes), each GEMM row (an output pixel) points at
 * the corner of its window there and each k quad (a channel quad at a
 * tap) is an offset from it (RT_CI_QOFF), so that a pixel's quads are
 * read where they lie: x is read once, not kh * kw times.
 *
 * lay's bit 0 says x is channels-last ([H, W, C] bytes), bit 1 that y is
 * ([OH, OW, M]: rt_ci_store writes each pixel's channels side by side,
 * ldc M, ldcj 1), as the 8-bit values QLinearConvs hand each other
 * (core/emit/q8layout.c). A channels-last x is copied by whole pixels
 * (rt_cin_rows, rt_ci_im2col_nhwc), and a 1 x 1 unit-stride unpadded
 * convolution of whole channel quads reads it in place as A (lda C):
 * neither needs a transpose.
 */
static inline void rt_ciconv2d(const void *x, int64_t C, int64_t H, int64_t W, int64_t kh,
			       int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
			       int64_t ph, int64_t pw, int64_t OH, int64_t OW, int x_signed,
			       const void *xz, const int8_t *Bp, const int32_t *bsum, int w_signed,
			       int safe, int64_t M, int64_t group, const int32_t *bias, void *y,
			       int out, const float *sx, const float *swt, int64_t sws,
			       const float *sy, const void *yz, const int32_t *qmap,
			       int64_t taps, int lay, uint8_t *scratch, int threads)
{
	int64_t P = OH * OW, cg = C / group, Mg = M / group, Kg = cg * kh * kw;
	int64_t xc = lay & 1 ? C : 0, ldc = lay & 2 ? M : 1, ldcj = lay & 2 ? 1 : P;
	int64_t ygs = lay & 2 ? Mg : Mg * P;	/* a group's first output */
	int64_t np = (Mg + RT_CI_NR - 1) / RT_CI_NR, kq = (Kg + 3) / 4, lda = 4 * kq;
	int64_t tiles = (P + RT_CI_MR - 1) / RT_CI_MR;
	size_t ysz = out == RT_CI_OUT_I32 ? 4 : 1;
	uint8_t z = (uint8_t)rt_ci_zp(xz, 0, x_signed);
	int nt = threads > 1 && P * Mg * Kg >= 262144 ? threads : 1;

	if (nt > tiles)
		nt = tiles > 0 ? (int)tiles : 1;
	if (taps > 0) {
		int64_t pads[4], cq = (cg + 3) / 4, kqi = cq * taps, c4 = 4 * cq;
		int64_t hp, wp, o0, o1, o2;

		rt_ci_implicit_bytes(cg, H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW, pads);
		hp = pads[2];
		wp = pads[3];
		o0 = (c4 * hp * wp + 63) / 64 * 64;
		o1 = o0 + (hp * wp * 4 + 63) / 64 * 64;
		o2 = o1 + (P * 4 + 63) / 64 * 64;
		/* quad q: channels 4 (q / taps) + [0, 4) at tap q % taps (rt_ci_quad_get) */
		for (int64_t q = 0; q < kqi; q++)
			((int32_t *)(scratch + o2))[q] =
				(int32_t)((q % taps / kw * dh * wp + q % kw * dw) * c4 + q / taps * 4);
		for (int64_t gi = 0; gi < group; gi++) {
			struct rt_ci_gemm g = {
				P, Mg, Kg, scratch, 0, x_signed, xz, 0, Bp + gi * np * kqi * 64,
				bsum + gi * 2 * np * RT_CI_NR, w_signed, safe,
				(uint8_t *)y + (size_t)(gi * ygs) * ysz, ldc, out, sx,
				swt + gi * Mg * sws, sy, 0, sws, yz, ldcj,
				bias ? bias + gi * Mg : NULL,
				qmap + gi * np * (kqi + RT_CI_MAP_HEAD), kqi,
				(const int32_t *)(scratch + o2), (const int32_t *)(scratch + o1), OW,
				sh * wp * c4, sw * c4
			};
			struct rt_cin_job j = {
				(const uint8_t *)x + gi * cg * (xc ? 1 : H * W), cg, c4, H, W,
				ph, pw, hp, wp, kh, kw, sh, sw, dh, dw, OW, z,
				(uint8_t)(x_signed ? 0x80 : 0), scratch, (int32_t *)(scratch + o0),
				(int32_t *)(scratch + o1), &g, tiles, nt, P, xc
			};

			if (nt > 1) {
				rt_par_for(nt, hp, 1, rt_cin_rows, &j);
				rt_par_for(nt, nt, 1, rt_cin_gemm, &j);
			} else {
				rt_cin_rows(&j, 0, hp);
				rt_cin_gemm(&j, 0, 1);
			}
		}
		return;
	}
	for (int64_t gi = 0; gi < group; gi++) {
		struct rt_ci_gemm g = {
			P, Mg, Kg, scratch, lda, x_signed, xz, 0, Bp + gi * np * kq * 64,
			bsum + gi * 2 * np * RT_CI_NR, w_signed, safe,
			(uint8_t *)y + (size_t)(gi * ygs) * ysz, ldc, out, sx, swt + gi * Mg * sws,
			sy, 0, sws, yz, ldcj, bias ? bias + gi * Mg : NULL,
			qmap ? qmap + gi * np * (kq + RT_CI_MAP_HEAD) : NULL, 0, NULL, NULL, 0, 0, 0
		};

		struct rt_cic_job j = { (const uint8_t *)x + gi * cg * (xc ? 1 : H * W), H, W, kh,
					kw, sh, sw, dh, dw, ph, pw, OH, OW, Kg, lda, z, scratch, &g,
					np, tiles, nt, xc, cg };

		/*
		 * channels-last, 1 x 1 at unit stride, unpadded, whole quads: x's
		 * pixels are A's rows as they lie
		 */
		if (xc && kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 &&
		    OH == H && OW == W && cg % 4 == 0) {
			g.A = j.x;
			g.lda = xc;
			if (nt > 1)
				rt_par_for(nt, nt, 1, rt_cic_rows, &j);
			else
				rt_cic_rows(&j, 0, 1);
			continue;
		}

		/*
		 * 1 x 1 at unit stride, unpadded: the pixels are x's own, one
		 * row of H * W (im2col's 16 x 16 transposes along the whole
		 * image, not per row of it, where a row of fewer than 16 took
		 * the byte loop)
		 */
		if (!xc && kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 &&
		    OH == H && OW == W)
			j.H = j.OH = 1, j.W = j.OW = P;

		if (nt > 1)
			rt_par_for(nt, nt, 1, rt_cic_cols, &j);
		else
			rt_cic_cols(&j, 0, 1);
		/* rows padded to whole quads (B is zero there; the row sums stop at Kg) */
		for (int64_t p = 0; p < P && lda > Kg && !xc; p++)
			memset(scratch + p * lda + Kg, z, (size_t)(lda - Kg));
		/* runs of row tiles: pixels */
		if (nt > 1)
			rt_par_for(nt, nt, 1, rt_cic_rows, &j);
		else
			rt_cic_rows(&j, 0, 1);
	}
}

/*
 * y[k] = saturate(rint(x[k] / sd) + z) for k in [k0, k1): 8 at a time with
 * AVX2 (GCC's -O2 vectorises no loop of unknown trip count), the same
 * operations in the same order; NaN (a NaN x makes every y NaN) gives 0
 * both ways on x86.
 */
static inline void rt_dynquant_run(const float *x, int64_t k0, int64_t k1, uint8_t *y, float sd,
				   float z)
{
	int64_t k = k0;

#if defined(__AVX2__)
	{
		__m256 vsd = _mm256_set1_ps(sd), vz = _mm256_set1_ps(z);
		__m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.0f);

		for (; k + 8 <= k1; k += 8) {
			__m256 v = _mm256_div_ps(_mm256_loadu_ps(x + k), vsd);
			__m256i w;
			__m128i p;

			v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vz), lo), hi);
			w = _mm256_cvttps_epi32(v);
			p = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
			_mm_storel_epi64((__m128i *)(y + k), _mm_packus_epi16(p, p));
		}
	}
#endif
	for (; k < k1; k++) {
		float v = rintf(x[k] / sd) + z;

		v = ((v > 0.0f) | (v != v)) ? v : 0.0f;
		v = ((v < 255.0f) | (v != v)) ? v : 255.0f;
		y[k] = (uint8_t)v;
	}
}

/* rt_dynquant's blocks of 4096 elements, for rt_par_for. */
struct rt_dq_job {
	const float *x;
	uint8_t *y;
	int64_t n;
	float sd, z;
};

static void rt_dq_blocks(void *v, int64_t b0, int64_t b1)
{
	const struct rt_dq_job *j = v;

	for (int64_t k0 = b0 * 4096; k0 < b1 * 4096 && k0 < j->n; k0 += 4096)
		rt_dynquant_run(j->x, k0, j->n - k0 < 4096 ? j->n : k0 + 4096, j->y, j->sd, j->z);
}

/*
 * QuantizeLinear of float32 x [n] to uint8 with one scale s[0] and zero
 * point z[0] (z NULL: 0): rt_dynquant_run's loop, the op's own lowering's
 * operations (ops_quant.c: rint(x / s) + z, saturated), bit for bit.
 */
static inline void rt_quantize_u8(const float *x, int64_t n, uint8_t *y, const float *s,
				  const uint8_t *z, int threads)
{
	struct rt_dq_job j = { x, y, n, s[0], z ? (float)z[0] : 0.0f };

	if (threads > 1 && n >= 65536)
		rt_par_for(threads, (n + 4095) / 4096, 1, rt_dq_blocks, &j);
	else
		rt_dq_blocks(&j, 0, (n + 4095) / 4096);
}

/*
 * DynamicQuantizeLinear of x [n] into y, *scale, *zp, with the op's own
 * lowering's results bit for bit (ops_quant.c): min and max with 0 (NaN
 * propagating), scale = (max - min) / 255, zp = rint(clamp(0 - min / sd)),
 * y = saturate(rint(x / sd) + zp), sd = scale or 1 when scale is 0.
 * Vector minima and maxima in lanes with AVX, then the quantizing loop
 * (rt_dynquant_run: a division and a rounding per element, as the op's
 * lowering does, no reciprocal), threads taking runs of 4096 elements.
 */
static inline void rt_dynquant(const float *x, int64_t n, uint8_t *y, float *scale, uint8_t *zp,
			       int threads)
{
	float mn = 0.0f, mx = 0.0f, s, sd, z;
	struct rt_dq_job j;
	int64_t i = 0;
	int nan = 0;

#if defined(__AVX__)
	{
		__m256 vmn = _mm256_setzero_ps(), vmx = _mm256_setzero_ps();
		__m256 vnan = _mm256_setzero_ps();
		float tn[8], tx[8], tq[8];

		for (; i + 8 <= n; i += 8) {
			__m256 v = _mm256_loadu_ps(x + i);

			vmn = _mm256_min_ps(vmn, v);
			vmx = _mm256_max_ps(vmx, v);
			vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
		}
		_mm256_storeu_ps(tn, vmn);
		_mm256_storeu_ps(tx, vmx);
		_mm256_storeu_ps(tq, vnan);
		for (int l = 0; l < 8; l++) {
			uint32_t u;

			memcpy(&u, &tq[l], 4);
			nan |= u != 0;
			mn = tn[l] < mn ? tn[l] : mn;
			mx = tx[l] > mx ? tx[l] : mx;
		}
	}
#endif
	for (; i < n; i++) {
		nan |= x[i] != x[i];
		mn = x[i] < mn ? x[i] : mn;
		mx = x[i] > mx ? x[i] : mx;
	}
	if (nan)
		mn = mx = NAN;
	s = (mx - mn) / 255.0f;
	/* min and max in another order: a zero scale may come out as -0, the loop's +0 */
	s = s == 0.0f ? 0.0f : s;
	*scale = s;
	sd = s == 0.0f ? 1.0f : s;
	z = 0.0f - mn / sd;
	z = ((z > 0.0f) | (z != z)) ? z : 0.0f;
	z = ((z < 255.0f) | (z != z)) ? z : 255.0f;
	z = rintf(z);
	*zp = (uint8_t)z;
	j = (struct rt_dq_job){ x, y, n, sd, z };
	if (threads > 1 && n >= 65536)
		rt_par_for(threads, (n + 4095) / 4096, 1, rt_dq_blocks, &j);
	else
		rt_dq_blocks(&j, 0, (n + 4095) / 4096);
}

/* rt_qadd's operands and the constants of its formula (see rt_qadd). */
struct rt_qadd_job {
	const uint8_t *a, *b;	/* the raw bytes; a one-element operand is read at 0 */
	int a1, b1;		/* whether a, b have one element */
	uint8_t *y;
	int64_t n;
	double ra, rb, fixed;
	int is_signed;
	int fma;	/* the two fmas are exact in double: float FMAs give the same bits */
};

/* One element of QLinearAdd: the formula of ops_quant.c, as rt_qadd's lanes compute it. */
static inline uint8_t rt_qadd1(const struct rt_qadd_job *j, int64_t i)
{
	int a = j->is_signed ? (int8_t)j->a[j->a1 ? 0 : i] : j->a[j->a1 ? 0 : i];
	int b = j->is_signed ? (int8_t)j->b[j->b1 ? 0 : i] : j->b[j->b1 ? 0 : i];
	float lo = j->is_signed ? -128.0f : 0.0f, hi = j->is_signed ? 127.0f : 255.0f;
	float v = (float)(b * j->rb + j->fixed);

	v = (float)(a * j->ra + (double)v);
	v = v > lo ? v : lo;
	v = v < hi ? v : hi;
	return (uint8_t)(int)rintf(v);
}

#if defined(__AVX512F__) && defined(__AVX512DQ__)
/* 16 bytes at p (or p[0] 16 times) as 2 x 8 doubles. */
static inline void rt_qadd_load16(const uint8_t *p, int one, int is_signed, __m512d *lo,
				  __m512d *hi)
{
	__m128i b = one ? _mm_set1_epi8((char)p[0]) : _mm_loadu_si128((const __m128i *)p);
	__m512i w = is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);

	*lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(w));
	*hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(w, 1));
}

/* 16 bytes at p (or p[0] 16 times) as 16 floats. */
static inline __m512 rt_qadd_load16f(const uint8_t *p, int one, int is_signed)
{
	__m128i b = one ? _mm_set1_epi8((char)p[0]) : _mm_loadu_si128((const __m128i *)p);

	return _mm512_cvtepi32_ps(is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
}

/*
 * Elements [i0, i1) of rt_qadd: 16 lanes at a time, the two roundings as
 * float FMAs where j->fma says they are exact in double, else in double
 * (as rt_qadd1).
 */
static inline void rt_qadd_run(const struct rt_qadd_job *j, int64_t i0, int64_t i1)
{
	const __m512d ra = _mm512_set1_pd(j->ra), rb = _mm512_set1_pd(j->rb);
	const __m512d fx = _mm512_set1_pd(j->fixed);
	const __m256 lo = _mm256_set1_ps(j->is_signed ? -128.0f : 0.0f);
	const __m256 hi = _mm256_set1_ps(j->is_signed ? 127.0f : 255.0f);
	int64_t i = i0;

	if (j->fma) {
		const __m512 fra = _mm512_set1_ps((float)j->ra), frb = _mm512_set1_ps((float)j->rb);
		const __m512 ffx = _mm512_set1_ps((float)j->fixed);
		const __m512 flo = _mm512_set1_ps(j->is_signed ? -128.0f : 0.0f);
		const __m512 fhi = _mm512_set1_ps(j->is_signed ? 127.0f : 255.0f);

		for (; i + 16 <= i1; i += 16) {
			__m512 a = rt_qadd_load16f(j->a + (j->a1 ? 0 : i), j->a1, j->is_signed);
			__m512 b = rt_qadd_load16f(j->b + (j->b1 ? 0 : i), j->b1, j->is_signed);
			__m512 v = _mm512_fmadd_ps(a, fra, _mm512_fmadd_ps(b, frb, ffx));

			v = _mm512_min_ps(_mm512_max_ps(v, flo), fhi);
			_mm_storeu_si128((__m128i *)(j->y + i),
					 _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
		}
	}
	for (; i + 16 <= i1; i += 16) {
		__m512d al, ah, bl, bh;
		__m256 vl, vh;
		__m512i q;

		rt_qadd_load16(j->a + (j->a1 ? 0 : i), j->a1, j->is_signed, &al, &ah);
		rt_qadd_load16(j->b + (j->b1 ? 0 : i), j->b1, j->is_signed, &bl, &bh);
		/* no fused multiply-add: each product and sum rounds as rt_qadd1's */
		vl = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(bl, rb), fx));
		vh = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(bh, rb), fx));
		vl = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(al, ra), _mm512_cvtps_pd(vl)));
		vh = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(ah, ra), _mm512_cvtps_pd(vh)));
		vl = _mm256_min_ps(_mm256_max_ps(vl, lo), hi);
		vh = _mm256_min_ps(_mm256_max_ps(vh, lo), hi);
		/* the default rounding: to nearest even, as rintf; in range, so no saturation */
		q = _mm512_cvtps_epi32(_mm512_insertf32x8(_mm512_castps256_ps512(vl), vh, 1));
		_mm_storeu_si128((__m128i *)(j->y + i), _mm512_cvtepi32_epi8(q));
	}
	for (; i < i1; i++)
		j->y[i] = rt_qadd1(j, i);
}
#elif defined(__AVX2__)
/* 8 bytes at p (or p[0] 8 times) as 2 x 4 doubles. */
static inline void rt_qadd_load(const uint8_t *p, int one, int is_signed, __m256d *lo,
				__m256d *hi)
{
	__m128i b = one ? _mm_set1_epi8((char)p[0]) : _mm_loadl_epi64((const __m128i *)p);
	__m256i w = is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);

	*lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(w));
	*hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(w, 1));
}

/*
 * Elements [i0, i1) of rt_qadd: 8 lanes at a time, the two roundings as
 * float FMAs where j->fma says they are exact in double (and the host has
 * FMA), else in double (as rt_qadd1).
 */
static inline void rt_qadd_run(const struct rt_qadd_job *j, int64_t i0, int64_t i1)
{
	const __m256d ra = _mm256_set1_pd(j->ra), rb = _mm256_set1_pd(j->rb);
	const __m256d fx = _mm256_set1_pd(j->fixed);
	const __m128 lo = _mm_set1_ps(j->is_signed ? -128.0f : 0.0f);
	const __m128 hi = _mm_set1_ps(j->is_signed ? 127.0f : 255.0f);
	int64_t i = i0;

#ifdef __FMA__
	if (j->fma) {
		const __m256 fra = _mm256_set1_ps((float)j->ra), frb = _mm256_set1_ps((float)j->rb);
		const __m256 ffx = _mm256_set1_ps((float)j->fixed);
		const __m256 flo = _mm256_set1_ps(j->is_signed ? -128.0f : 0.0f);
		const __m256 fhi = _mm256_set1_ps(j->is_signed ? 127.0f : 255.0f);

		for (; i + 8 <= i1; i += 8) {
			__m128i ab = j->a1 ? _mm_set1_epi8((char)j->a[0])
					   : _mm_loadl_epi64((const __m128i *)(j->a + i));
			__m128i bb = j->b1 ? _mm_set1_epi8((char)j->b[0])
					   : _mm_loadl_epi64((const __m128i *)(j->b + i));
			__m256 a = _mm256_cvtepi32_ps(j->is_signed ? _mm256_cvtepi8_epi32(ab)
							       : _mm256_cvtepu8_epi32(ab));
			__m256 b = _mm256_cvtepi32_ps(j->is_signed ? _mm256_cvtepi8_epi32(bb)
							       : _mm256_cvtepu8_epi32(bb));
			__m256 v = _mm256_fmadd_ps(a, fra, _mm256_fmadd_ps(b, frb, ffx));
			__m256i w;
			__m128i q;

			v = _mm256_min_ps(_mm256_max_ps(v, flo), fhi);
			w = _mm256_cvtps_epi32(v);
			q = _mm_packs_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
			q = j->is_signed ? _mm_packs_epi16(q, q) : _mm_packus_epi16(q, q);
			_mm_storel_epi64((__m128i *)(j->y + i), q);
		}
	}
#endif
	for (; i + 8 <= i1; i += 8) {
		__m256d al, ah, bl, bh;
		__m128 vl, vh;
		__m128i q;

		rt_qadd_load(j->a + (j->a1 ? 0 : i), j->a1, j->is_signed, &al, &ah);
		rt_qadd_load(j->b + (j->b1 ? 0 : i), j->b1, j->is_signed, &bl, &bh);
		vl = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(bl, rb), fx));
		vh = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(bh, rb), fx));
		vl = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(al, ra), _mm256_cvtps_pd(vl)));
		vh = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(ah, ra), _mm256_cvtps_pd(vh)));
		vl = _mm_min_ps(_mm_max_ps(vl, lo), hi);
		vh = _mm_min_ps(_mm_max_ps(vh, lo), hi);
		/* the default rounding: to nearest even, as rintf */
		q = _mm_packs_epi32(_mm_cvtps_epi32(vl), _mm_cvtps_epi32(vh));
		q = j->is_signed ? _mm_packs_epi16(q, q) : _mm_packus_epi16(q, q);
		_mm_storel_epi64((__m128i *)(j->y + i), q);
	}
	for (; i < i1; i++)
		j->y[i] = rt_qadd1(j, i);
}
#else
static inline void rt_qadd_run(const struct rt_qadd_job *j, int64_t i0, int64_t i1)
{
	for (int64_t i = i0; i < i1; i++)
		j->y[i] = rt_qadd1(j, i);
}
#endif

/*
 * Whether both fmas of rt_qadd are exact in double for every 8-bit a and
 * b (|a|, |b| < 2^8), so that a float FMA, which rounds the exact value
 * once, gives the bits the double form gives. With 2^e the bound frexpf
 * gives each of ra, rb and fixed, the second sum is below
 * 2^(max(e_ra + 8, e_rb + 9, e_fixed + 1) + 1) on a grid of
 * 2^(min(e) - 24) (the first's grid, and a rounded first sum's ulp is no
 * finer): exact when that spans at most 53 bits. Zeros add nothing; an
 * infinite or NaN ratio takes the double form.
 */
static inline int rt_qadd_exact(float ra, float rb, float fixed)
{
	const float v[3] = { ra, rb, fixed };
	const int add[3] = { 8, 9, 1 };
	int hi = -100000, lo = 100000;

	for (int k = 0; k < 3; k++) {
		int e;

		if (!isfinite(v[k]))
			return 0;
		if (v[k] == 0.0f)
			continue;
		frexpf(v[k], &e);
		hi = hi > e + add[k] ? hi : e + add[k];
		lo = lo < e ? lo : e;
	}
	return hi < lo || hi + 1 - (lo - 24) <= 53;
}

static void rt_qadd_blocks(void *v, int64_t b0, int64_t b1)
{
	const struct rt_qadd_job *j = v;

	rt_qadd_run(j, b0 * 4096, b1 * 4096 < j->n ? b1 * 4096 : j->n);
}

/*
 * QLinearAdd of a and b (uint8, or int8 when is_signed; na and nb
 * elements, each n or 1) into y [n], every scale and zero point one
 * element (zero points NULL: 0): ops_quant.c's formula, bit for bit,
 *
 *	y = saturate(rint(fma(a, ra, fma(b, rb, fixed))))
 *
 * ra = sa / sc, rb = sb / sc in float32, fixed = float32 of zc - (ra za +
 * rb zb), each fma computed in double (exact there) and rounded once to
 * float32: what ONNX Runtime's AVX2 kernel computes with float FMAs. With
 * AVX2, 8 elements a step; threads take runs of 4096 elements.
 */
static inline void rt_qadd(const void *a, int64_t na, const void *b, int64_t nb, int64_t n,
			   const float *sa, const void *za, const float *sb, const void *zb,
			   const float *sc, const void *zc, void *y, int is_signed, int threads)
{
	struct rt_qadd_job j;
	float ra = sa[0] / sc[0], rb = sb[0] / sc[0];
	double zpa = rt_ci_zp(za, 0, is_signed), zpb = rt_ci_zp(zb, 0, is_signed);
	double zpc = rt_ci_zp(zc, 0, is_signed);

	j.a = a;
	j.b = b;
	j.a1 = na == 1 && n != 1;
	j.b1 = nb == 1 && n != 1;
	j.y = y;
	j.n = n;
	j.ra = ra;
	j.rb = rb;
	j.fixed = (float)(zpc - ((double)ra * zpa + (double)rb * zpb));
	j.is_signed = is_signed;
	j.fma = rt_qadd_exact(ra, rb, (float)j.fixed);
	if (threads > 1 && n >= 65536)
		rt_par_for(threads, (n + 4095) / 4096, 1, rt_qadd_blocks, &j);
	else
		rt_qadd_blocks(&j, 0, (n + 4095) / 4096);
}

#endif
