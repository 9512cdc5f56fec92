/*
 * rt_cpw.h - the c target's 1x1 (pointwise) convolution on NCHW planes,
 * pasted into the generated code (embedded into collagec) by the strategy
 * conv.1x1_tiles of backends/c/c_strategies.c.
 *
 * A 1x1 convolution of an image is the GEMM y[M, P] = w[M, K] x[K, P]
 * whose B, the image, is already row-major along the pixels, so it needs
 * no packing: a tile of RT_PW_MR output channels by RT_PW_NV vectors of
 * pixels keeps its sums in registers over all of K, each step loading
 * RT_PW_NV vectors of one input channel and broadcasting RT_PW_MR weights.
 * The loop IR's blocked form (conv.1x1) loaded and stored its sums every
 * four input channels, and MobileNet's and EfficientNet's convolutions of
 * 16 to 144 channels ran at half ONNX Runtime's speed.
 *
 * Each output is bias + w[m, 0] x[0, p] + w[m, 1] x[1, p] + ..., in that
 * order, whatever the tile, the vector width or the thread count.
 *
 * Example: rt_cpw(w, x, b, y, 144, 24, 3136, 3136, 320, 1);
 */
#ifndef RT_CPW_H
#define RT_CPW_H

#include <stdint.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define RT_PW_V 16			/* floats per vector */
#define RT_PW_MR 8			/* output channels per tile: 16 sums */
#else
#define RT_PW_V 8
#define RT_PW_MR 6			/* 12 sums of 16 registers */
#endif
#define RT_PW_NV 2			/* vectors of pixels per tile */

typedef float rt_pw_vec __attribute__((vector_size(4 * RT_PW_V)));
typedef float rt_pw_uvec __attribute__((vector_size(4 * RT_PW_V), aligned(4)));

#if defined(__AVX512F__)
static inline __attribute__((always_inline)) rt_pw_vec rt_pw_load(const float *p, int64_t n)
{
	return (rt_pw_vec)_mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}

static inline __attribute__((always_inline)) void rt_pw_store(float *p, rt_pw_vec v, int64_t n)
{
	_mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), (__m512)v);
}
#elif defined(__AVX2__)
static inline __attribute__((always_inline)) __m256i rt_pw_mask(int64_t n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
				  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __attribute__((always_inline)) rt_pw_vec rt_pw_load(const float *p, int64_t n)
{
	return (rt_pw_vec)_mm256_maskload_ps(p, rt_pw_mask(n));
}

static inline __attribute__((always_inline)) void rt_pw_store(float *p, rt_pw_vec v, int64_t n)
{
	_mm256_maskstore_ps(p, rt_pw_mask(n), (__m256)v);
}
#else
static inline rt_pw_vec rt_pw_load(const float *p, int64_t n)
{
	rt_pw_vec v = { 0 };

	for (int64_t i = 0; i < n; i++)
		v[i] = p[i];
	return v;
}

static inline void rt_pw_store(float *p, rt_pw_vec v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = v[i];
}
#endif

/*
 * One tile: mr (<= RT_PW_MR) output channels of n (<= RT_PW_NV * RT_PW_V)
 * pixels. Inlined with mr constant, so that the sums stay in registers, and
 * n constant for whole tiles (tails load and store under masks).
 */
static inline __attribute__((always_inline)) void
rt_pw_tile(const float *restrict w, const float *restrict x, const float *restrict bias,
	   float *restrict y, int64_t K, int64_t xs, int64_t ys, int mr, int64_t n)
{
	rt_pw_vec acc[RT_PW_MR][RT_PW_NV];
	int64_t cnt[RT_PW_NV];

#pragma GCC unroll 2
	for (int j = 0; j < RT_PW_NV; j++)
		cnt[j] = n - j * RT_PW_V < 0 ? 0 : n - j * RT_PW_V > RT_PW_V ? RT_PW_V
										 : n - j * RT_PW_V;
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++) {
		float b = bias ? bias[i] : 0.0f;

#pragma GCC unroll 2
		for (int j = 0; j < RT_PW_NV; j++)
			acc[i][j] = (rt_pw_vec){ 0 } + b;
	}
	for (int64_t k = 0; k < K; k++) {
		const float *xk = x + k * xs;
		rt_pw_vec xv[RT_PW_NV];

#pragma GCC unroll 2
		for (int j = 0; j < RT_PW_NV; j++)
			xv[j] = cnt[j] < RT_PW_V ? rt_pw_load(xk + j * RT_PW_V, cnt[j])
						 : *(const rt_pw_uvec *)(xk + j * RT_PW_V);
#pragma GCC unroll 8
		for (int i = 0; i < mr; i++) {
			float wi = w[i * K + k];

#pragma GCC unroll 2
			for (int j = 0; j < RT_PW_NV; j++)
				acc[i][j] += wi * xv[j];
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 2
		for (int j = 0; j < RT_PW_NV; j++) {
			float *yp = y + i * ys + j * RT_PW_V;

			if (cnt[j] < RT_PW_V)
				rt_pw_store(yp, acc[i][j], cnt[j]);
			else
				*(rt_pw_uvec *)yp = acc[i][j];
		}
}

/* A tile of fewer than RT_PW_MR rows, with mr a constant (one copy each, not inlined) */
static __attribute__((noinline)) void
rt_pw_rows(const float *restrict w, const float *restrict x, const float *restrict bias,
	   float *restrict y, int64_t K, int64_t xs, int64_t ys, int64_t mr, int64_t n)
{
	switch (mr) {
#if RT_PW_MR > 6
	case 7: rt_pw_tile(w, x, bias, y, K, xs, ys, 7, n); break;
	case 6: rt_pw_tile(w, x, bias, y, K, xs, ys, 6, n); break;
#endif
	case 5: rt_pw_tile(w, x, bias, y, K, xs, ys, 5, n); break;
	case 4: rt_pw_tile(w, x, bias, y, K, xs, ys, 4, n); break;
	case 3: rt_pw_tile(w, x, bias, y, K, xs, ys, 3, n); break;
	case 2: rt_pw_tile(w, x, bias, y, K, xs, ys, 2, n); break;
	default: rt_pw_tile(w, x, bias, y, K, xs, ys, 1, n); break;
	}
}

/*
 * y[m * ys + p] = bias[m] (0 without) + sum over k of w[m * K + k] *
 * x[k * xs + p], for m < M and p < np: w row-major [M, K], x's and y's
 * rows xs and ys floats apart. threads is the kernel's (unused: the caller
 * runs pixel blocks in parallel).
 */
static __attribute__((noinline)) void rt_cpw(const float *restrict w, const float *restrict x, const float *restrict bias,
		   float *restrict y, int64_t M, int64_t K, int64_t xs, int64_t ys, int64_t np,
		   int threads)
{
	const int64_t T = RT_PW_NV * RT_PW_V;

	(void)threads;
	for (int64_t m0 = 0; m0 < M; m0 += RT_PW_MR) {
		int64_t mr = M - m0 < RT_PW_MR ? M - m0 : RT_PW_MR, p = 0;
		const float *wm = w + m0 * K, *bm = bias ? bias + m0 : NULL;
		float *ym = y + m0 * ys;

		if (mr < RT_PW_MR) {
			for (; p < np; p += T)
				rt_pw_rows(wm, x + p, bm, ym + p, K, xs, ys, mr,
					   np - p < T ? np - p : T);
			continue;
		}
		for (; p + T <= np; p += T)
			rt_pw_tile(wm, x + p, bm, ym + p, K, xs, ys, RT_PW_MR, T);
		if (p < np)
			rt_pw_tile(wm, x + p, bm, ym + p, K, xs, ys, RT_PW_MR, np - p);
	}
}

#endif
