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
 *    and 2 threads, and nothing written past the output.
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

TESTS({ "fma_path_every_pair", test_qadd_fma_path_every_pair },
      { "double_path_every_pair", test_qadd_double_path_every_pair },
      { "exact_bounds", test_qadd_exact_bounds },
      { "qmaxpool_random_geometries", test_qmaxpool_random_geometries })
