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

/*
 * The channels a vector (rt_cpwc, conv.1x1_chan): for images of few pixels
 * (7x7: 49) a row tile's vectors along the pixels are a quarter empty (49
 * pixels in four vectors of 16). Here a tile's RT_PWC_TV vectors hold that
 * many times RT_CV_V output channels, and each of its RT_PWC_NP pixels is
 * a broadcast of x: per input channel k, RT_PWC_TV loads of the weights
 * (packed at compile time as rt_cgemm.h packs B: wp[(m / 16) * K * 16 + k *
 * 16 + m % 16], zero past M) and RT_PWC_NP broadcasts for RT_PWC_TV x
 * RT_PWC_NP sums. 7 pixels divide 7x7, 14x14 and 28x28 images. The tile
 * leaves through a buffer on the stack, a row of pixels per channel. One
 * thread, AVX-512, EfficientNet-B0's 7x7 layers alone (best of 300): 1152
 * -> 192 0.250 -> 0.189 ms, 192 -> 1152 0.255 -> 0.215, 320 -> 1280 0.491
 * -> 0.427; with AVX2 1.07-1.19x. Each output is the same sum as
 * rt_cpw's, bias first, then k in order.
 */
#if RT_CV_V == 16
#define RT_PWC_TV 3			/* 48 channels x 7 pixels: 21 sums of 32 zmm */
#define RT_PWC_NP 7
#else
#define RT_PWC_TV 2			/* 16 x 6: 12 sums of 16 ymm */
#define RT_PWC_NP 6
#endif
#define RT_PWC_W 16			/* channels of a packed panel */

/*
 * n (<= RT_PWC_NP) pixels of mr (<= tv * RT_CV_V) channels; tv and full
 * (n == RT_PWC_NP) constant where inlined. A short tile repeats its last
 * pixel and keeps none of the copies.
 */
static inline __attribute__((always_inline)) void
rt_pwc_tile(const float *restrict wp, const float *restrict x, const float *restrict bias,
	    float *restrict y, int64_t K, int64_t xs, int64_t ys, int64_t mr, int64_t n, int tv,
	    int full)
{
	rt_cv_vec acc[RT_PWC_TV][RT_PWC_NP];
	const float *wv[RT_PWC_TV];
	int64_t px[RT_PWC_NP];
	float t[RT_PWC_NP][RT_PWC_TV * RT_CV_V];

#pragma GCC unroll 4
	for (int j = 0; j < tv; j++) {
		int64_t c = j * RT_CV_V, nb = mr - c < 0 ? 0 : mr - c > RT_CV_V ? RT_CV_V : mr - c;
		rt_cv_vec b = bias ? rt_cv_load(bias + c, nb) : (rt_cv_vec){ 0 };

		wv[j] = wp + c / RT_PWC_W * K * RT_PWC_W + c % RT_PWC_W;
#pragma GCC unroll 8
		for (int p = 0; p < RT_PWC_NP; p++)
			acc[j][p] = b;
	}
#pragma GCC unroll 8
	for (int p = 0; p < RT_PWC_NP; p++)
		px[p] = full ? p : p < n ? p : n - 1;
	for (int64_t k = 0; k < K; k++) {
		const float *xk = x + k * xs;
		rt_cv_vec w[RT_PWC_TV];

#pragma GCC unroll 4
		for (int j = 0; j < tv; j++)
			w[j] = *(const rt_cv_uvec *)(wv[j] + k * RT_PWC_W);
#pragma GCC unroll 8
		for (int p = 0; p < RT_PWC_NP; p++) {
			float xv = full ? xk[p] : xk[px[p]];

#pragma GCC unroll 4
			for (int j = 0; j < tv; j++)
				acc[j][p] += w[j] * xv;
		}
	}
#pragma GCC unroll 8
	for (int p = 0; p < RT_PWC_NP; p++)
#pragma GCC unroll 4
		for (int j = 0; j < tv; j++)
			*(rt_cv_uvec *)&t[p][j * RT_CV_V] = acc[j][p];
	for (int64_t m = 0; m < mr; m++)
		for (int64_t p = 0; p < n; p++)
			y[m * ys + p] = t[p][m];
}

/* Every pixel of mr channels in tiles of tv vectors (tv constant where inlined). */
static inline __attribute__((always_inline)) void
rt_pwc_cols(const float *restrict wp, const float *restrict x, const float *restrict bias,
	    float *restrict y, int64_t K, int64_t xs, int64_t ys, int64_t mr, int64_t np, int tv)
{
	int64_t p = 0;

	for (; p + RT_PWC_NP <= np; p += RT_PWC_NP)
		rt_pwc_tile(wp, x + p, bias, y + p, K, xs, ys, mr, RT_PWC_NP, tv, 1);
	if (p < np)
		rt_pwc_tile(wp, x + p, bias, y + p, K, xs, ys, mr, np - p, tv, 0);
}

/*
 * y[m * ys + p] = bias[m] (0 without) + sum over k of w[m, k] x[k * xs + p]
 * for m < M, p < np, as rt_cpw, w packed as above (wp at a multiple of 16
 * channels). threads is unused: rt_cpwc_image splits the work.
 */
static __attribute__((noinline)) void
rt_cpwc(const float *restrict wp, const float *restrict x, const float *restrict bias,
	float *restrict y, int64_t M, int64_t K, int64_t xs, int64_t ys, int64_t np, int threads)
{
	const int64_t T = RT_PWC_TV * RT_CV_V;

	(void)threads;
	for (int64_t m0 = 0; m0 < M; m0 += T) {
		int64_t mr = M - m0 < T ? M - m0 : T, tv = (mr + RT_CV_V - 1) / RT_CV_V;
		const float *w = wp + m0 * K, *b = bias ? bias + m0 : NULL;
		float *ym = y + m0 * ys;

		if (tv == RT_PWC_TV)
			rt_pwc_cols(w, x, b, ym, K, xs, ys, mr, np, RT_PWC_TV);
#if RT_PWC_TV > 2
		else if (tv == 2)
			rt_pwc_cols(w, x, b, ym, K, xs, ys, mr, np, 2);
#endif
		else
			rt_pwc_cols(w, x, b, ym, K, xs, ys, mr, np, 1);
	}
}

struct rt_cpwc_job {
	const float *wp, *x, *bias;
	float *y;
	int64_t M, K, P, cb, bs;	/* cb blocks of channels; pixel blocks of bs */
};

/* jobs [lo, hi) of rt_cpwc_image: job j is channel block j % cb of pixel block j / cb */
static void rt_cpwc_jobs(void *v, int64_t lo, int64_t hi)
{
	const struct rt_cpwc_job *j = v;
	const int64_t T = RT_PWC_TV * RT_CV_V;

	for (int64_t i = lo; i < hi; i++) {
		int64_t m0 = i % j->cb * T, p0 = i / j->cb * j->bs;
		int64_t mr = j->M - m0 < T ? j->M - m0 : T;
		int64_t np = j->P - p0 < j->bs ? j->P - p0 : j->bs;

		rt_cpwc(j->wp + m0 * j->K, j->x + p0, j->bias ? j->bias + m0 : NULL,
			j->y + m0 * j->P + p0, mr, j->K, j->P, j->P, np, 1);
	}
}

/*
 * One image: y [M, P] = w x [K, P] (+ bias), wp packed as above, in blocks
 * of a tile's channels by whole tiles of pixels, enough of them for every
 * thread to take two (EfficientNet's 7x7 layers of 192 and 320 channels are
 * 4 and 7 blocks of 48; MobileNetV2's 14x14 one of 64 channels, 2 blocks of
 * them, takes 2 blocks of pixels too), threads over the blocks. Any split
 * gives the same bits.
 */
static void rt_cpwc_image(const float *wp, const float *x, const float *bias, float *y,
			  int64_t M, int64_t K, int64_t P, int threads)
{
	const int64_t T = RT_PWC_TV * RT_CV_V;
	struct rt_cpwc_job j = { wp, x, bias, y, M, K, P, (M + T - 1) / T, P };
	int64_t pb = 1;

	if (threads > 1 && M * K * P >= 65536) {
		/* pixel blocks of 2 tiles at least, until each thread has 2 jobs */
		while (j.cb * pb < 2 * threads && P / (pb + 1) >= 2 * RT_PWC_NP)
			pb++;
		j.bs = (P + pb - 1) / pb;
		j.bs = (j.bs + RT_PWC_NP - 1) / RT_PWC_NP * RT_PWC_NP;
		rt_par_for(threads, j.cb * ((P + j.bs - 1) / j.bs), 1, rt_cpwc_jobs, &j);
	} else {
		rt_cpwc(wp, x, bias, y, M, K, P, P, P, threads);
	}
}

/*
 * w [N, K] (src; row-major, params { K, N, 1, K }: B = w transposed) packed
 * into dst as rt_cpwc reads it, when the model opens (rt_desc.packs), as
 * the compiler packs it (c_strategies.c, conv.1x1_chan).
 */
static inline void rt_cpwc_pack_const(const void *src, void *dst, const int64_t *params)
{
	const float *w = src;
	float *d = dst;
	int64_t K = params[0], N = params[1], brs = params[2], bcs = params[3];

	for (int64_t jp = 0; jp < (N + RT_PWC_W - 1) / RT_PWC_W; jp++)
		for (int64_t k = 0; k < K; k++)
			for (int64_t jj = 0; jj < RT_PWC_W; jj++) {
				int64_t j = jp * RT_PWC_W + jj;

				*d++ = j < N ? w[k * brs + j * bcs] : 0.0f;
			}
}

#endif
