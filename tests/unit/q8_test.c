/*
 * q8_test.c - the c target's 8-bit elementwise and pooling kernels against
 * plain references, built for this host, x86-64-v3 (AVX2, FMA) and x86-64
 * (plain loops), as rt_cdw.h's tests are:
 *  - rt_qadd (backends/c/rt_cquant.h), QLinearAdd, against the formula of
 *    core/ops/ops_quant.c written out here in double: every pair of 8-bit
 *    operands, uint8 and int8, each operand a tensor or one element, on 1
 *    and 2 threads, with scales whose two fmas are exact in double (the
 *    kernel's float FMA path) and scales where they are not (its double
 *    path);
 *  - rt_qmaxpool2d (backends/c/rt_cqpool.h), an 8-bit MaxPool, against
 *    the window's max taken tap by tap, over random geometries (kernel,
 *    stride, dilation, padding, rows 1 to 200 wide), uint8 and int8, on 1
 *    and 2 threads, and nothing written past the output;
 *  - rt_ciconv2d's two forms (backends/c/rt_cquant.h), the implicit one
 *    (taps: the weights packed in its quad order, the image channels last)
 *    and im2col's, against the int64 sums of ConvInteger written out here
 *    and against each other requantized, over random geometries (groups,
 *    strides, dilations, asymmetric pads, channels past whole quads and
 *    16-channel blocks, rows shorter and longer than 16 pixels, 1-D),
 *    uint8 and int8 x and w, weights of 8 and 7 bits (the 7-bit ones with
 *    quads in fused pairs), on 1 and 2 threads, and nothing written past
 *    the output.
 */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../runtime/rt_par.c"
#include "../../backends/c/rt_cipack.h"
#include "../../backends/c/rt_cquant.h"
#include "../../backends/c/rt_cqpool.h"

#define N 65536		/* every (a, b) pair */

/* ops_quant.c's QLinearAdd of one element: two fmas in double, each rounded to float */
static int ref(int a, int b, float ra, float rb, float fixed, int sgn)
{
	float lo = sgn ? -128.0f : 0.0f, hi = sgn ? 127.0f : 255.0f;
	float v = (float)((double)b * rb + fixed);

	v = (float)((double)a * ra + (double)v);
	v = v > lo ? v : lo;
	v = v < hi ? v : hi;
	return (int)rintf(v);
}

struct qcase {
	float sa, sb, sc;
	int za, zb, zc;
	int exact;	/* what rt_qadd_exact says of its ratios */
};

/* one case, both signednesses, tensors and one-element operands, 1 and 2 threads */
static int check(const struct qcase *c)
{
	static uint8_t a[N], b[N], y[N];
	int bad = 0;

	for (int i = 0; i < N; i++) {
		a[i] = (uint8_t)i;
		b[i] = (uint8_t)(i >> 8);
	}
	for (int sgn = 0; sgn < 2; sgn++) {
		uint8_t za = (uint8_t)c->za, zb = (uint8_t)c->zb, zc = (uint8_t)c->zc;
		float ra = c->sa / c->sc, rb = c->sb / c->sc;
		double zpa = sgn ? (int8_t)za : za, zpb = sgn ? (int8_t)zb : zb;
		double zpc = sgn ? (int8_t)zc : zc;
		float fixed = (float)(zpc - ((double)ra * zpa + (double)rb * zpb));

		ASSERT_TRUE(rt_qadd_exact(ra, rb, fixed) == c->exact);
		for (int form = 0; form < 3; form++) {
			/* 0: both tensors; 1: a one element (a[37]); 2: b one element (b[0]) */
			const uint8_t *pa = form == 1 ? &a[37] : a;
			int64_t na = form == 1 ? 1 : N, nb = form == 2 ? 1 : N;

			for (int th = 1; th <= 2; th++) {
				rt_qadd(pa, na, b, nb, N, &c->sa, &za, &c->sb, &zb, &c->sc, &zc, y, sgn,
					th);
				for (int i = 0; i < N && !bad; i++) {
					int av = sgn ? (int8_t)pa[na == 1 ? 0 : i] : pa[na == 1 ? 0 : i];
					int bv = sgn ? (int8_t)b[nb == 1 ? 0 : i] : b[nb == 1 ? 0 : i];
					int want = ref(av, bv, ra, rb, fixed, sgn);
					int got = sgn ? (int8_t)y[i] : y[i];

					if (got != want) {
						fprintf(stderr, "  sa %g sb %g sc %g, %s, form %d, %d "
							"threads: a %d b %d: %d, want %d\n", c->sa,
							c->sb, c->sc, sgn ? "int8" : "uint8", form, th,
							av, bv, got, want);
						bad = 1;
					}
				}
			}
		}
	}
	return !bad;
}

static void test_qadd_fma_path_every_pair(void)
{
	/* a QDQ ResNet's residual adds: scales near one another, zero points mid-range */
	static const struct qcase cs[] = {
		{ 0.0235f, 0.0412f, 0.0389f, 128, 121, 133, 1 },
		{ 0.1f, 0.1f, 0.2f, 0, 0, 0, 1 },
		{ 0.0117f, 0.0078f, 0.0039f, 3, 250, 7, 1 },
		{ 1.7e-3f, 2.9e-2f, 5.3e-3f, 77, 130, 1, 1 },
		{ 1.0f, 1.0f, 1.0f, 0, 0, 0, 1 },
	};

	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++)
		ASSERT_TRUE(check(&cs[k]));
}

static void test_qadd_double_path_every_pair(void)
{
	/*
	 * fixed far below the products' grid (zc cancels ra za + rb zb but for
	 * a remainder 2^-30 times smaller), and ratios 2^40 apart: the sums
	 * span more than 53 bits, so the kernel keeps the double form
	 */
	static const struct qcase cs[] = {
		{ 1.0f, 9.094947e-13f, 1.0f, 5, 0, 9, 0 },
		{ 3.0f, 1e-9f, 0.5f, 1, 2, 3, 0 },
	};

	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++)
		ASSERT_TRUE(check(&cs[k]));
}

static void test_qadd_exact_bounds(void)
{
	/*
	 * frexpf's e (|x| < 2^e): 1 for 1.0. ra 1, rb 1, fixed 0: the sum is
	 * below 2^(max(1 + 8, 1 + 9) + 1) on a grid of 2^(1 - 24): 35 bits
	 */
	ASSERT_TRUE(rt_qadd_exact(1.0f, 1.0f, 0.0f));
	/* rb 2^-20 (e -19): below 2^(9 + 1) (a ra), grid 2^(-19 - 24): 53 bits */
	ASSERT_TRUE(rt_qadd_exact(1.0f, 0x1p-20f, 0.0f));
	/* one step further: 54 bits */
	ASSERT_TRUE(!rt_qadd_exact(1.0f, 0x1p-21f, 0.0f));
	/* fixed 2^-19 (e -18) beside ra, rb 1: below 2^(10 + 1), grid 2^(-18 - 24): 53 */
	ASSERT_TRUE(rt_qadd_exact(1.0f, 1.0f, 0x1p-19f));
	ASSERT_TRUE(!rt_qadd_exact(1.0f, 1.0f, 0x1p-20f));
	ASSERT_TRUE(!rt_qadd_exact(INFINITY, 1.0f, 0.0f));
	ASSERT_TRUE(!rt_qadd_exact(1.0f, NAN, 0.0f));
}

/* the max of the window of y[c, oh, ow] over x [C, H, W], bytes compared as sgn says */
static int pool_ref(const uint8_t *x, int H, int W, const int *g, int sgn, int c, int oh, int ow)
{
	int best = sgn ? -128 : 0;	/* a window wholly in padding: the type's least value */

	for (int u = 0; u < g[0]; u++)
		for (int v = 0; v < g[1]; v++) {
			int ih = oh * g[2] - g[6] + u * g[4], iw = ow * g[3] - g[7] + v * g[5];
			int b;

			if (ih < 0 || ih >= H || iw < 0 || iw >= W)
				continue;
			b = sgn ? (int8_t)x[(c * H + ih) * W + iw] : x[(c * H + ih) * W + iw];
			best = b > best ? b : best;
		}
	return best;
}

static void test_qmaxpool_random_geometries(void)
{
	unsigned seed = 12345;
	int cases = 0;

	for (int t = 0; t < 3000; t++) {
		/* g: kh kw sh sw dh dw pt pl pb pr */
		int g[10], H, W, C, OH, OW, sgn, th;
		uint8_t *x, *y;

#define RND(n) ((int)((seed = seed * 1103515245u + 12345u) >> 16) % (n))
		g[0] = 1 + RND(4), g[1] = 1 + RND(4), g[2] = 1 + RND(3), g[3] = 1 + RND(3);
		g[4] = 1 + RND(2), g[5] = 1 + RND(2);
		g[6] = RND(g[0]), g[7] = RND(g[1]), g[8] = RND(g[0]), g[9] = RND(g[1]);
		H = 1 + RND(20), W = 1 + RND(200), C = 1 + RND(3), sgn = RND(2), th = 1 + RND(2);
		OH = H + g[6] + g[8] - ((g[0] - 1) * g[4] + 1);
		OW = W + g[7] + g[9] - ((g[1] - 1) * g[5] + 1);
		if (OH < 0 || OW < 0)
			continue;
		OH = OH / g[2] + 1, OW = OW / g[3] + 1;
		x = malloc((size_t)(C * H * W));
		y = malloc((size_t)(C * OH * OW + 64));
		for (int i = 0; i < C * H * W; i++)
			x[i] = (uint8_t)RND(256);
#undef RND
		memset(y, 0x5a, (size_t)(C * OH * OW + 64));
		rt_qmaxpool2d(x, y, C, H, W, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8],
			      g[9], OH, OW, sgn, th);
		for (int c = 0; c < C; c++)
			for (int oh = 0; oh < OH; oh++)
				for (int ow = 0; ow < OW; ow++) {
					int got = y[(c * OH + oh) * OW + ow];

					ASSERT(pool_ref(x, H, W, g, sgn, c, oh, ow),
					       sgn ? (int8_t)got : got);
				}
		for (int i = C * OH * OW; i < C * OH * OW + 64; i++)
			ASSERT(0x5a, y[i]);
		free(x);
		free(y);
		cases++;
	}
	ASSERT_TRUE(cases > 2000);
}

/* ConvInteger's sum at (m, oh, ow): g = kh kw sh sw dh dw ph pw, zero points zx, zw[m] */
static int64_t conv_ref(const uint8_t *x, const uint8_t *w, int xs, int ws, int C, int H,
			int W, int M, int group, const int *g, int zx, const int *zw, int m,
			int oh, int ow)
{
	int cg = C / group, gi = m / (M / group);
	int64_t s = 0;

	for (int c = 0; c < cg; c++)
		for (int i = 0; i < g[0]; i++)
			for (int k = 0; k < g[1]; k++) {
				int ih = oh * g[2] - g[6] + i * g[4], iw = ow * g[3] - g[7] + k * g[5];
				int xv = zx, wv = w[((m * cg + c) * g[0] + i) * g[1] + k];

				if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
					xv = x[((gi * cg + c) * H + ih) * W + iw];
					xv = xs ? (int8_t)xv : xv;
				}
				wv = ws ? (int8_t)wv : wv;
				s += (int64_t)(xv - zx) * (wv - zw[m]);
			}
	return s;
}

static int64_t fused_quads;	/* packed in fused pairs (rt_ci_pack's map) */

/*
 * A sum q requantized by m = sx sw / sy to uint8 (or int8, zy read as
 * int8): rint(q m) + zy saturated, as core/ops/ops_quant.c computes it.
 */
static int requant_ref(int32_t q, float m, uint8_t zy, int i8)
{
	float v = rintf((float)q * m) + (float)(i8 ? (int8_t)zy : zy);
	float lo = i8 ? -128.0f : 0.0f, hi = i8 ? 127.0f : 255.0f;

	v = v < lo ? lo : v > hi ? hi : v;
	return i8 ? (uint8_t)(int8_t)v : (uint8_t)v;
}

/*
 * rt_ciconv2d with the weights packed for taps (0: im2col's form), into y;
 * lay: x (bit 0) and y (bit 1) channels-last
 */
static void ciconv_lay(const uint8_t *x, const uint8_t *w, int xs, int ws, int C, int H, int W,
		       int M, int group, const int *g, int OH, int OW, uint8_t zx,
		       const uint8_t *zw, int taps, int out, const float *sw, float sy, uint8_t zy,
		       void *y, int threads, int lay)
{
	int cg = C / group, Mg = M / group, Kg = cg * g[0] * g[1];
	int64_t np = (Mg + 15) / 16, kq = rt_ci_kq(Kg, taps), pads[4], sb;
	int8_t *bp = malloc((size_t)(group * np * kq * 64));
	int32_t *map = malloc(sizeof(int32_t) * (size_t)(group * np * (kq + RT_CI_MAP_HEAD)));
	int32_t *bsum = calloc((size_t)(group * 2 * np * 16), sizeof(int32_t));
	float sx = 0.5f;
	uint8_t *scratch;
	int safe;

	safe = rt_ci_pack(w, Kg, Mg, group, 1, Kg, (int64_t)Mg * Kg, taps, ws, 1, bp, map);
	for (int64_t p = 0; p < group * np; p++)
		fused_quads += map[p * (kq + RT_CI_MAP_HEAD)];
	/* c_strategies.c's ci_sums_at: colsum(B') per column, then zb' */
	for (int gi = 0; gi < group; gi++)
		for (int j = 0; j < Mg; j++) {
			int32_t c = 0;

			for (int k = 0; k < Kg; k++) {
				uint8_t v = w[(gi * Mg + j) * Kg + k];

				c += ws ? (int8_t)v : v - 128;
			}
			bsum[gi * 2 * np * 16 + j] = c;
			bsum[gi * 2 * np * 16 + np * 16 + j] =
				(ws ? (int8_t)zw[gi * Mg + j] : zw[gi * Mg + j]) - (ws ? 0 : 128);
		}
	sb = taps ? rt_ci_implicit_bytes(cg, H, W, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
					 OH, OW, pads)
		  : (int64_t)OH * OW * 4 * ((Kg + 3) / 4);
	scratch = malloc((size_t)sb + 64);
	rt_ciconv2d(x, C, H, W, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], OH, OW, xs, &zx, bp,
		    bsum, ws, safe, M, group, NULL, y, out, &sx, sw, 1, &sy, &zy, map, taps, lay,
		    scratch, threads);
	free(scratch);
	free(bp);
	free(map);
	free(bsum);
}

static void ciconv(const uint8_t *x, const uint8_t *w, int xs, int ws, int C, int H, int W,
		   int M, int group, const int *g, int OH, int OW, uint8_t zx, const uint8_t *zw,
		   int taps, int out, const float *sw, float sy, uint8_t zy, void *y, int threads)
{
	ciconv_lay(x, w, xs, ws, C, H, W, M, group, g, OH, OW, zx, zw, taps, out, sw, sy, zy, y,
		   threads, 0);
}

/* The tests' generator: ((seed = seed * 1103515245 + 12345) >> 16) % n. */
static int rnd(unsigned *seed, int n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (int)(*seed >> 16) % n;
}

/*
 * Random weights w of a convolution (nw bytes, int8 when ws, else uint8;
 * narrow 1: of 7 bits, 0: of 8, 2: either, weight by weight), and per
 * output channel its zero point zw (zwv: as an int), mostly random, and
 * scale sw.
 */
static void random_qweights(unsigned *seed, uint8_t *w, int nw, int ws, int narrow, int M,
			    uint8_t *zw, int *zwv, float *sw)
{
	for (int i = 0; i < nw; i++) {
		int n = narrow == 2 ? rnd(seed, 2) : narrow;
		int v = n ? rnd(seed, 128) - 64 : rnd(seed, 256) - 128;

		w[i] = (uint8_t)(ws ? v : v + 128);
	}
	for (int m = 0; m < M; m++) {
		zw[m] = (uint8_t)(rnd(seed, 4) ? rnd(seed, 256) : (ws ? 0 : 128));
		zwv[m] = ws ? (int8_t)zw[m] : zw[m];
		sw[m] = 1.0f / (float)(1 + rnd(seed, 64));
	}
}

/* Each int32 sum of y [M, OH, OW] equals conv_ref's. */
static void check_conv_sums(const uint8_t *x, const uint8_t *w, int xs, int ws, int C, int H,
			    int W, int M, int group, const int *g, uint8_t zx, const int *zwv,
			    int OH, int OW, const int32_t *y)
{
	for (int m = 0; m < M; m++)
		for (int oh = 0; oh < OH; oh++)
			for (int ow = 0; ow < OW; ow++)
				ASSERT(conv_ref(x, w, xs, ws, C, H, W, M, group, g,
						xs ? (int8_t)zx : zx, zwv, m, oh, ow),
				       y[(m * OH + oh) * OW + ow]);
}

static void test_ciconv_implicit_random_geometries(void)
{
	unsigned seed = 777;
	int cases = 0, implicit_rows = 0;

	for (int t = 0; t < 400; t++) {
		/* g: kh kw sh sw dh dw ph pw pb pr */
		int g[10], H, W, C, M, group, OH, OW, xs, ws, th, narrow, zwv[64];
		uint8_t *x, *w, zw[64], zx, zy;
		int32_t *yi, *yr;
		uint8_t *y8a, *y8b;
		float sw[64];

#define RND(n) ((int)((seed = seed * 1103515245u + 12345u) >> 16) % (n))
		g[0] = 1 + RND(4), g[1] = 1 + RND(4), g[2] = 1 + RND(3), g[3] = 1 + RND(3);
		g[4] = 1 + RND(2), g[5] = 1 + RND(2);
		g[6] = RND(3), g[7] = RND(3), g[8] = RND(3), g[9] = RND(3);
		if (RND(4) == 0)
			g[0] = 1, g[2] = 1, g[4] = 1, g[6] = g[8] = 0;	/* 1-D */
		group = 1 + RND(3);
		C = RND(2) ? 40 : 6;
		C = group * (1 + RND(C));
		M = group * (1 + RND(20));
		H = 1 + RND(12), W = 1 + RND(40);
		xs = RND(2), ws = RND(2), th = 1 + RND(2), narrow = RND(2);
		OH = H + g[6] + g[8] - ((g[0] - 1) * g[4] + 1);
		OW = W + g[7] + g[9] - ((g[1] - 1) * g[5] + 1);
		if (OH < 0 || OW < 0 || g[0] * g[1] == 1)
			continue;
		OH = OH / g[2] + 1, OW = OW / g[3] + 1;
		x = malloc((size_t)(C * H * W));
		w = malloc((size_t)(M * (C / group) * g[0] * g[1]));
		for (int i = 0; i < C * H * W; i++)
			x[i] = (uint8_t)RND(256);
		random_qweights(&seed, w, M * (C / group) * g[0] * g[1], ws, narrow, 0, zw, zwv,
				sw);
		zx = (uint8_t)RND(256), zy = (uint8_t)RND(256);
		random_qweights(&seed, w, 0, ws, 0, M, zw, zwv, sw);
#undef RND
		yi = malloc(sizeof(int32_t) * (size_t)(M * OH * OW) + 64);
		yr = malloc(sizeof(int32_t) * (size_t)(M * OH * OW) + 64);
		y8a = malloc((size_t)(M * OH * OW) + 64);
		y8b = malloc((size_t)(M * OH * OW) + 64);
		memset(yi, 0x5a, sizeof(int32_t) * (size_t)(M * OH * OW) + 64);
		memset(y8a, 0x5a, (size_t)(M * OH * OW) + 64);
		ciconv(x, w, xs, ws, C, H, W, M, group, g, OH, OW, zx, zw, g[0] * g[1],
		       RT_CI_OUT_I32, sw, 1.0f, 0, yi, th);
		check_conv_sums(x, w, xs, ws, C, H, W, M, group, g, zx, zwv, OH, OW, yi);
		for (int i = 0; i < 64; i++)
			ASSERT(0x5a, ((uint8_t *)(yi + M * OH * OW))[i]);
		/* requantized: the same bytes as im2col's form */
		ciconv(x, w, xs, ws, C, H, W, M, group, g, OH, OW, zx, zw, g[0] * g[1],
		       RT_CI_OUT_U8, sw, 3.0f, zy, y8a, th);
		ciconv(x, w, xs, ws, C, H, W, M, group, g, OH, OW, zx, zw, 0, RT_CI_OUT_U8, sw, 3.0f,
		       zy, y8b, th);
		for (int i = 0; i < M * OH * OW; i++)
			ASSERT(y8b[i], y8a[i]);
		for (int i = M * OH * OW; i < M * OH * OW + 64; i++)
			ASSERT(0x5a, y8a[i]);
		/*
		 * and the requantization of the exact sums, as the op's lowering
		 * computes it: rint(sum * (sx sw / sy)) + zy, saturated, uint8
		 * and int8 (the write-back's NCHW stores, whole tiles and not)
		 */
		for (int i = 0; i < M * OH * OW; i++)
			ASSERT(requant_ref(yi[i], 0.5f * sw[i / (OH * OW)] / 3.0f, zy, 0), y8a[i]);
		ciconv(x, w, xs, ws, C, H, W, M, group, g, OH, OW, zx, zw, 0,
		       RT_CI_OUT_I8, sw, 3.0f, zy, y8b, th);
		for (int i = 0; i < M * OH * OW; i++)
			ASSERT(requant_ref(yi[i], 0.5f * sw[i / (OH * OW)] / 3.0f, zy, 1), y8b[i]);
		implicit_rows += W >= 16 && C / group >= 16;
		free(x);
		free(w);
		free(yi);
		free(yr);
		free(y8a);
		free(y8b);
		cases++;
	}
	ASSERT_TRUE(cases > 250);
	ASSERT_TRUE(implicit_rows > 20);
	ASSERT_TRUE(fused_quads > 1000);
}

/*
 * Channels-last x and y (lay 1, 2, 3; core/emit/q8layout.c hands them
 * between QLinearConvs): the same requantized bytes as the exact int32
 * sums give, 1 x 1 (in place where unit-stride, unpadded, whole channel
 * quads; copied by pixels otherwise) and windows, implicit and im2col's
 * form, grouped, both signs, 1 and 2 threads; nothing written past y.
 */
static void test_ciconv_channels_last_random_geometries(void)
{
	unsigned seed = 4242;
	int cases = 0, inplace = 0;

	for (int t = 0; t < 300; t++) {
		int g[10], H, W, C, M, group, OH, OW, xs, ws, th, zwv[64], P, tapv[2], nt;
		uint8_t *x, *xcl, *w, zw[64], zx, zy, *y8, *yn;
		int32_t *yi;
		float sw[64];

#define RND(n) ((int)((seed = seed * 1103515245u + 12345u) >> 16) % (n))
		g[0] = 1 + RND(4), g[1] = 1 + RND(4), g[2] = 1 + RND(3), g[3] = 1 + RND(3);
		g[4] = 1 + RND(2), g[5] = 1 + RND(2);
		g[6] = RND(3), g[7] = RND(3), g[8] = RND(3), g[9] = RND(3);
		if (RND(2)) {
			/* 1 x 1, mostly unit-stride and unpadded */
			g[0] = g[1] = 1;
			if (RND(3)) {
				g[2] = g[3] = 1;
				g[6] = g[7] = g[8] = g[9] = 0;
			}
		}
		group = 1 + RND(2);
		C = group * (RND(2) ? 4 * (1 + RND(12)) : 1 + RND(20));
		M = group * (1 + RND(24));
		H = 1 + RND(10), W = 1 + RND(30);
		xs = RND(2), ws = RND(2), th = 1 + RND(2);
		OH = H + g[6] + g[8] - ((g[0] - 1) * g[4] + 1);
		OW = W + g[7] + g[9] - ((g[1] - 1) * g[5] + 1);
		if (OH < 0 || OW < 0)
			continue;
		OH = OH / g[2] + 1, OW = OW / g[3] + 1;
		P = OH * OW;
		x = malloc((size_t)(C * H * W));
		xcl = malloc((size_t)(C * H * W));
		w = malloc((size_t)(M * (C / group) * g[0] * g[1]));
		for (int i = 0; i < C * H * W; i++)
			x[i] = (uint8_t)RND(256);
		for (int c = 0; c < C; c++)
			for (int p = 0; p < H * W; p++)
				xcl[p * C + c] = x[c * H * W + p];
		random_qweights(&seed, w, M * (C / group) * g[0] * g[1], ws, 2, 0, zw, zwv, sw);
		zx = (uint8_t)RND(256), zy = (uint8_t)RND(256);
		random_qweights(&seed, w, 0, ws, 0, M, zw, zwv, sw);
#undef RND
		yi = malloc(sizeof(int32_t) * (size_t)(M * P));
		y8 = malloc((size_t)(M * P) + 64);
		yn = malloc((size_t)(M * P));
		ciconv(x, w, xs, ws, C, H, W, M, group, g, OH, OW, zx, zw, 0, RT_CI_OUT_I32, sw,
		       1.0f, 0, yi, th);
		check_conv_sums(x, w, xs, ws, C, H, W, M, group, g, zx, zwv, OH, OW, yi);
		tapv[0] = 0;
		tapv[1] = g[0] * g[1];
		nt = g[0] * g[1] > 1 ? 2 : 1;
		for (int ti = 0; ti < nt; ti++)
			for (int lay = 1; lay < 4; lay++)
				for (int i8 = 0; i8 < 2; i8++) {
					memset(y8, 0x5a, (size_t)(M * P) + 64);
					ciconv_lay(lay & 1 ? xcl : x, w, xs, ws, C, H, W, M, group, g,
						   OH, OW, zx, zw, tapv[ti],
						   i8 ? RT_CI_OUT_I8 : RT_CI_OUT_U8, sw, 3.0f, zy, y8,
						   th, lay);
					for (int m = 0; m < M; m++)
						for (int p = 0; p < P; p++)
							yn[m * P + p] = lay & 2 ? y8[p * M + m]
										: y8[m * P + p];
					for (int i = 0; i < M * P; i++)
					for (int i = 0; i < M * P; i++)
						ASSERT(requant_ref(yi[i], 0.5f * sw[i / P] / 3.0f, zy,
								   i8),
						       yn[i]);
					for (int i = M * P; i < M * P + 64; i++)
						ASSERT(0x5a, y8[i]);
				}
		inplace += g[0] * g[1] == 1 && g[2] * g[3] == 1 && g[6] + g[7] + g[8] + g[9] == 0 &&
			   C / group % 4 == 0;
		free(x);
		free(xcl);
		free(w);
		free(yi);
		free(y8);
		free(yn);
		cases++;
	}
	ASSERT_TRUE(cases > 200);
	ASSERT_TRUE(inplace > 20);
}

TESTS({ "fma_path_every_pair", test_qadd_fma_path_every_pair },
      { "double_path_every_pair", test_qadd_double_path_every_pair },
      { "exact_bounds", test_qadd_exact_bounds },
      { "qmaxpool_random_geometries", test_qmaxpool_random_geometries },
      { "ciconv_implicit_random_geometries", test_ciconv_implicit_random_geometries },
      { "ciconv_channels_last_random_geometries",
	test_ciconv_channels_last_random_geometries })
