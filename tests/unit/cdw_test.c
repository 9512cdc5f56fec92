/*
 * cdw_test.c - backends/c/rt_cdw.h's depthwise convolution and rt_cpw.h's
 * 1x1 convolution, built for this host as the generated code is
 * (-march=native), and again as cdw_avx2_test (-march=x86-64-v3) and
 * cdw_generic_test (-march=x86-64), so that each vector path runs here.
 * Every output must have the bits of a scalar loop that adds bias and the
 * taps (the input channels) in order, each a * b + c rounded once where
 * the ISA has FMA and twice where not (madd), as the loop IR's forms do:
 * blocks of 1 to RT_DW_BLOCK channels (tails of a vector), strides,
 * dilations, asymmetric and oversized pads, strips, rows shorter and longer
 * than a vector; tiles of every height, pixel tails, row strides wider than
 * the block; rt_cpwc's tiles of channels, every channel tail, short tiles
 * of pixels, and rt_cpwc_image's blocks on 1 to 3 threads. And rt_cvec.h's rt_im2col2d against the patch matrix's
 * definition, at random geometries, and rt_cv_trans2d, on 1 and 2 threads.
 */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/rt_par.c"
#include "../../backends/c/rt_cvec.h"
#include "../../backends/c/rt_cdw.h"
#include "../../backends/c/rt_cpw.h"

/*
 * a * b + c as the vector code computes it: one rounding where the ISA has
 * FMA, two where it has not (the C compiler may not contract the reference
 * loop itself: it vectorises the products of an in-order sum)
 */
static float madd(float a, float b, float c)
{
#ifdef __FMA__
	return fmaf(a, b, c);
#else
	volatile float p = a * b;

	return p + c;
#endif
}

static float rnd(void)
{
	return (float)(rand() % 2001 - 1000) / 997.0f;
}

static float *rnd_array(int64_t n)
{
	float *a = malloc(sizeof(float) * (size_t)(n + 1));

	for (int64_t i = 0; i < n; i++)
		a[i] = rnd();
	return a;
}

struct dw {
	int64_t nch, H, W, kh, kw, sh, sw, dh, dw, ph, pw, pe_h, pe_w;
};

/* 1 when rt_cdw2d's output has the reference's bits (and nothing past it is written) */
static int dw_case(const struct dw *c, int bias)
{
	int64_t OH = (c->H + c->ph + c->pe_h - ((c->kh - 1) * c->dh + 1)) / c->sh + 1;
	int64_t OW = (c->W + c->pw + c->pe_w - ((c->kw - 1) * c->dw + 1)) / c->sw + 1;
	int64_t n = c->nch * OH * OW;
	float *x = rnd_array(c->nch * c->H * c->W), *w = rnd_array(c->nch * c->kh * c->kw);
	float *b = bias ? rnd_array(c->nch) : NULL, *y = malloc(sizeof(float) * (size_t)(n + 16));
	int ok = 1;

	for (int64_t i = 0; i < n + 16; i++)
		y[i] = -7.0f;
	rt_cdw2d(x, w, b, y, c->nch, c->H, c->W, c->kh, c->kw, c->sh, c->sw, c->dh, c->dw, c->ph,
		 c->pw, OH, OW, 1);
	for (int64_t ch = 0; ch < c->nch; ch++)
		for (int64_t oh = 0; oh < OH; oh++)
			for (int64_t ow = 0; ow < OW; ow++) {
				float s = b ? b[ch] : 0.0f;

				for (int64_t u = 0; u < c->kh; u++)
					for (int64_t v = 0; v < c->kw; v++) {
						int64_t ih = oh * c->sh - c->ph + u * c->dh;
						int64_t iw = ow * c->sw - c->pw + v * c->dw;
						float xv = ih >= 0 && ih < c->H && iw >= 0 && iw < c->W
								   ? x[(ch * c->H + ih) * c->W + iw]
								   : 0.0f;

						s = madd(w[(ch * c->kh + u) * c->kw + v], xv, s);
					}
				ok &= memcmp(&s, &y[(ch * OH + oh) * OW + ow], sizeof(s)) == 0;
			}
	for (int64_t i = n; i < n + 16; i++)
		ok &= y[i] == -7.0f;
	free(x);
	free(w);
	free(b);
	free(y);
	return ok;
}

static void test_depthwise(void)
{
	static const struct dw cases[] = {
		{ 16, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2 },	/* EfficientNet's 7x7 */
		{ 16, 14, 14, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1 },	/* TF "same", stride 2 */
		{ 9, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },	/* a block past a vector */
		{ 3, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },	/* a tail alone */
		{ 16, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },	/* rows past a vector, strips */
		{ 8, 40, 40, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2 },
		{ 16, 9, 11, 7, 1, 1, 1, 1, 1, 3, 0, 3, 0 },	/* 7x1 */
		{ 12, 10, 10, 3, 3, 1, 2, 2, 2, 2, 1, 0, 3 },	/* dilated, asymmetric */
		{ 16, 3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3 },	/* pads past the window */
		{ 5, 17, 33, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1 },	/* stride 3 */
		{ 16, 120, 120, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1 },	/* 8 rows a strip */
	};

	srand(3);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT(1, dw_case(&cases[i], 1));
		ASSERT(1, dw_case(&cases[i], 0));
	}
}

enum { PW_ROWS, PW_CHAN, PW_IMAGE };

/*
 * 1 when a pointwise kernel's output has the reference's bits and leaves
 * the rest of y alone: rt_cpw (PW_ROWS), rt_cpwc on w packed by
 * rt_cpwc_pack_const (PW_CHAN), or rt_cpwc_image on threads (PW_IMAGE: the
 * whole image, p0 0 and np P)
 */
static int pw_run(int kind, int64_t M, int64_t K, int64_t P, int64_t p0, int64_t np, int bias,
		  int threads)
{
	const int64_t params[] = { K, M, 1, K };
	float *x = rnd_array(K * P), *w = rnd_array(M * K), *b = bias ? rnd_array(M) : NULL;
	float *wp = malloc(sizeof(float) * (size_t)(((M + 15) / 16 * 16) * K));
	float *y = malloc(sizeof(float) * (size_t)(M * P));
	int ok = 1;

	for (int64_t i = 0; i < M * P; i++)
		y[i] = -7.0f;
	rt_cpwc_pack_const(w, wp, params);
	if (kind == PW_ROWS)
		rt_cpw(w, x + p0, b, y + p0, M, K, P, P, np, 1);
	else if (kind == PW_CHAN)
		rt_cpwc(wp, x + p0, b, y + p0, M, K, P, P, np, 1);
	else
		rt_cpwc_image(wp, x, b, y, M, K, P, threads);
	for (int64_t m = 0; m < M; m++)
		for (int64_t p = 0; p < P; p++) {
			float s = b ? b[m] : 0.0f;

			if (p < p0 || p >= p0 + np) {
				ok &= y[m * P + p] == -7.0f;
				continue;
			}
			for (int64_t k = 0; k < K; k++)
				s = madd(w[m * K + k], x[k * P + p], s);
			ok &= memcmp(&s, &y[m * P + p], sizeof(s)) == 0;
		}
	free(x);
	free(w);
	free(wp);
	free(b);
	free(y);
	return ok;
}

static int pw_case(int64_t M, int64_t K, int64_t P, int64_t p0, int64_t np, int bias)
{
	return pw_run(PW_ROWS, M, K, P, p0, np, bias, 1);
}

static void test_pointwise(void)
{
	srand(5);
	/* every tile height, pixel tails of 1, a vector and more, a block inside the row */
	for (int64_t M = 1; M <= 17; M++)
		ASSERT(1, pw_case(M, 24, 49, 0, 49, M & 1));
	ASSERT(1, pw_case(144, 24, 3136, 320, 448, 1));
	ASSERT(1, pw_case(16, 32, 200, 0, 200, 0));
	ASSERT(1, pw_case(24, 1152, 49, 32, 17, 1));
	ASSERT(1, pw_case(8, 3, 16, 0, 16, 1));
	ASSERT(1, pw_case(8, 3, 40, 0, 33, 1));
	ASSERT(1, pw_case(7, 5, 8, 0, 7, 1));
	ASSERT(1, pw_case(9, 1, 1, 0, 1, 1));
	/* fewer than RT_PW_GEMV_NP pixels (rt_pw_gemv): whole and partial squares */
	ASSERT(1, pw_case(1152, 48, 1, 0, 1, 1));
	ASSERT(1, pw_case(37, 21, 1, 0, 1, 0));
	ASSERT(1, pw_case(20, 35, 2, 0, 2, 1));
	ASSERT(1, pw_case(24, 40, 49, 32, 2, 1));
	ASSERT(1, pw_case(16, 16, 7, 3, 1, 1));
}

static int pwc_case(int64_t M, int64_t K, int64_t P, int64_t p0, int64_t np, int bias)
{
	return pw_run(PW_CHAN, M, K, P, p0, np, bias, 1);
}

static void test_pointwise_chan(void)
{
	srand(7);
	/* every channel tail of a tile (1 to 3 vectors), pixel tails, 7x7 */
	for (int64_t M = 1; M <= 50; M++)
		ASSERT(1, pwc_case(M, 19, 49, 0, 49, M & 1));
	for (int64_t np = 1; np <= 15; np++)
		ASSERT(1, pwc_case(20, 33, 40, 40 - np, np, 1));
	ASSERT(1, pwc_case(1152, 192, 49, 0, 49, 1));
	ASSERT(1, pwc_case(192, 1152, 49, 0, 49, 0));
	ASSERT(1, pwc_case(96, 1, 9, 0, 9, 1));
	ASSERT(1, pwc_case(48, 64, 63, 14, 49, 1));
	/* rt_cpwc_image: blocks of channels and of pixels, 1, 2 and 3 threads */
	for (int th = 1; th <= 3; th++) {
		ASSERT(1, pw_run(PW_IMAGE, 64, 384, 49, 0, 49, 1, th));
		ASSERT(1, pw_run(PW_IMAGE, 40, 256, 196, 0, 196, 1, th));
		ASSERT(1, pw_run(PW_IMAGE, 1152, 192, 49, 0, 49, 0, th));
		ASSERT(1, pw_run(PW_IMAGE, 17, 300, 25, 0, 25, 1, th));
	}
}

/*
 * 1 when rt_im2col2d's col is the definition's: col[((c * kh + u) * kw + v)
 * * OH * OW + oh * OW + ow] = x[c, oh * sh + u * dh - ph, ow * sw + v * dw -
 * pw] or 0 outside the plane, and nothing past col is written. OH and OW
 * may reach past the input (the end pads).
 */
static int im2col_case(int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh,
		       int64_t sw, int64_t dh, int64_t dw, int64_t ph, int64_t pw, int64_t OH,
		       int64_t OW, int threads)
{
	int64_t n = C * kh * kw * OH * OW;
	float *x = rnd_array(C * H * W), *col = malloc(sizeof(float) * (size_t)(n + 16));
	int ok = 1;

	for (int64_t i = 0; i < n + 16; i++)
		col[i] = -7.0f;
	rt_im2col2d(x, col, C, H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW, threads);
	for (int64_t c = 0, i = 0; c < C; c++)
		for (int64_t u = 0; u < kh; u++)
			for (int64_t v = 0; v < kw; v++)
				for (int64_t oh = 0; oh < OH; oh++)
					for (int64_t ow = 0; ow < OW; ow++, i++) {
						int64_t ih = oh * sh + u * dh - ph;
						int64_t iw = ow * sw + v * dw - pw;
						float e = ih >= 0 && ih < H && iw >= 0 && iw < W ?
								  x[(c * H + ih) * W + iw] : 0.0f;

						ok &= memcmp(&e, &col[i], sizeof(e)) == 0;
					}
	for (int64_t i = n; i < n + 16; i++)
		ok &= col[i] == -7.0f;
	free(x);
	free(col);
	return ok;
}

static void test_im2col(void)
{
	srand(11);
	/* EfficientNet's and MobileNet's stem, ResNet's, a large one split between threads */
	ASSERT(1, im2col_case(3, 224, 224, 3, 3, 2, 2, 1, 1, 1, 1, 112, 112, 1));
	ASSERT(1, im2col_case(3, 224, 224, 3, 3, 2, 2, 1, 1, 1, 1, 112, 112, 2));
	ASSERT(1, im2col_case(3, 64, 64, 7, 7, 2, 2, 1, 1, 3, 3, 32, 32, 2));
	ASSERT(1, im2col_case(16, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 56, 56, 2));
	for (int i = 0; i < 400; i++) {
		int64_t C = 1 + rand() % 4, H = 1 + rand() % 40, W = 1 + rand() % 40;
		int64_t kh = 1 + rand() % 5, kw = 1 + rand() % 5, sh = 1 + rand() % 4;
		int64_t sw = 1 + rand() % 4, dh = 1 + rand() % 3, dw = 1 + rand() % 3;
		int64_t ph = rand() % 4, pw = rand() % 4;
		int64_t eh = rand() % 4, ew = rand() % 4;	/* end pads */
		int64_t OH = (H + ph + eh - ((kh - 1) * dh + 1)) / sh + 1;
		int64_t OW = (W + pw + ew - ((kw - 1) * dw + 1)) / sw + 1;

		if (OH < 1 || OW < 1)
			continue;
		ASSERT(1, im2col_case(C, H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW,
				      1 + (i & 1)));
	}
}

/* rt_cv_trans2d: y[r * sy + c] = x[c * sx + r], squares and edges, 1 and 2 threads */
static void test_trans2d(void)
{
	static const int64_t sizes[][2] = { { 37, 21 }, { 16, 16 }, { 5, 300 }, { 300, 300 } };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		int64_t R = sizes[k][0], C = sizes[k][1], sx = R + 3, sy = C + 1;
		float *x = rnd_array(C * sx), *y = malloc(sizeof(float) * (size_t)(R * sy));
		int ok = 1;

		for (int threads = 1; threads <= 2; threads++) {
			for (int64_t i = 0; i < R * sy; i++)
				y[i] = -7.0f;
			rt_cv_trans2d(x, sx, y, sy, R, C, threads);
			for (int64_t r = 0; r < R; r++)
				for (int64_t c = 0; c < sy; c++)
					ok &= y[r * sy + c] == (c < C ? x[c * sx + r] : -7.0f);
		}
		ASSERT(1, ok);
		free(x);
		free(y);
	}
}

TESTS({ "depthwise", test_depthwise }, { "pointwise", test_pointwise },
      { "pointwise_chan", test_pointwise_chan }, { "im2col", test_im2col },
      { "trans2d", test_trans2d })
