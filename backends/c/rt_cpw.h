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

#if defined(__AVX512F__)
#define RT_PW_MR 8			/* output channels per tile: 16 sums */
#else
#define RT_PW_MR 6			/* 12 sums of 16 registers */
#endif
#define RT_PW_V RT_CV_V			/* floats per vector (rt_cvec.h) */
#define RT_PW_NV 2			/* vectors of pixels per tile */
#ifndef RT_PW_GEMV_NP
#define RT_PW_GEMV_NP 3			/* fewer pixels: rt_pw_gemv */
#endif
#define RT_PW_PFD 128			/* rt_pw_gemv fetches a row this far ahead */

/*
 * One tile: mr (<= RT_PW_MR) output channels of n (<= RT_PW_NV * RT_PW_V)
 * pixels. Inlined with mr constant, so that the sums stay in registers, and
 * n constant for whole tiles (tails load and store under masks).
 */
static inline __attribute__((always_inline)) void
rt_pw_tile(const float *restrict w, const float *restrict x, const float *restrict bias,
	   float *restrict y, int64_t K, int64_t xs, int64_t ys, int mr, int64_t n)
{
	rt_cv_vec acc[RT_PW_MR][RT_PW_NV];
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
			acc[i][j] = (rt_cv_vec){ 0 } + b;
	}
	for (int64_t k = 0; k < K; k++) {
		const float *xk = x + k * xs;
		rt_cv_vec xv[RT_PW_NV];

#pragma GCC unroll 2
		for (int j = 0; j < RT_PW_NV; j++)
			xv[j] = cnt[j] < RT_PW_V ? rt_cv_load(xk + j * RT_PW_V, cnt[j])
						 : *(const rt_cv_uvec *)(xk + j * RT_PW_V);
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
				rt_cv_store(yp, acc[i][j], cnt[j]);
			else
				*(rt_cv_uvec *)yp = acc[i][j];
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
 * One pixel, as in a squeeze-and-excitation block's 1x1 convolutions (their
 * images are 1 x 1): a tile would use one lane of its sums. Here RT_PW_V
 * output channels share a vector: a square of w (RT_PW_V rows, as many
 * columns) is transposed in registers into its columns, and each column k
 * times x[k] is added in order of k, as the tiles add. 1152 x 48 (w's 221
 * KB in cache), one pixel: 14.7 us as tiles, 11.5 gathering the columns,
 * 4.2 this way (AVX2: 15.7 and 7.2); two pixels 8.9 against 14.7.
 */
static __attribute__((noinline)) void
rt_pw_gemv(const float *restrict w, const float *restrict x, const float *restrict bias,
	   float *restrict y, int64_t M, int64_t K, int64_t xs, int64_t ys)
{
	for (int64_t m0 = 0; m0 < M; m0 += RT_PW_V) {
		int64_t n = M - m0 < RT_PW_V ? M - m0 : RT_PW_V;
		const float *wm = w + m0 * K;
		rt_cv_vec acc = { 0 }, col[RT_PW_V];
		/*
		 * Weights read once a run come from memory, and the loads
		 * waited on them (EfficientNet-B0's 1152 x 48: 0.033 ms, 0.004
		 * in cache). So the next RT_PW_V rows of w (contiguous) are
		 * fetched RT_PW_V lines a step, as fast as this square reads
		 * its own (0.0076 ms), and in long rows each row RT_PW_PFD
		 * floats ahead (48 x 1152 in blocks of 8 rows: 0.016 -> 0.009).
		 */
		const char *pf = (const char *)(wm + RT_PW_V * K);
		const char *pf_end = (const char *)(w + M * K);

		if (bias)
			acc = rt_cv_load(bias + m0, n);
		for (int64_t k0 = 0; k0 < K; k0 += RT_PW_V) {
			int64_t nk = K - k0 < RT_PW_V ? K - k0 : RT_PW_V;

			for (int i = 0; i < RT_PW_V; i++, pf += 64)
				if (pf < pf_end)
					__builtin_prefetch(pf);
			if (k0 + RT_PW_PFD < K)
				for (int i = 0; i < n; i++)
					__builtin_prefetch(wm + i * K + k0 + RT_PW_PFD);
			for (int i = 0; i < RT_PW_V; i++)
				col[i] = i < n ? rt_cv_load(wm + i * K + k0, nk) : (rt_cv_vec){ 0 };
			rt_cv_transpose(col);
			if (nk == RT_PW_V) {
#pragma GCC unroll 16
				for (int j = 0; j < RT_PW_V; j++)
					acc += col[j] * x[(k0 + j) * xs];
			} else {
				for (int64_t j = 0; j < nk; j++)
					acc = rt_cv_fmadd(col[j], x[(k0 + j) * xs], acc);
			}
		}
		if (ys == 1) {
			rt_cv_store(y + m0, acc, n);
		} else {
			for (int64_t i = 0; i < n; i++)
				y[(m0 + i) * ys] = acc[i];
		}
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
	if (np < RT_PW_GEMV_NP) {
		for (int64_t p = 0; p < np; p++)
			rt_pw_gemv(w, x + p, bias, y + p, M, K, xs, ys);
		return;
	}
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
