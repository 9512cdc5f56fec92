/*
 * float8_test.c - the 8-bit float conversions of runtime/rt_float8.h
 * against references computed another way: every bit pattern of the four
 * sign/exponent/mantissa formats widened and narrowed back (NaNs aside),
 * and narrowing of every 65537th float bit pattern and of every tie
 * between neighbours checked against the nearest pattern found by
 * comparing distances (ties to the even pattern), saturated or not;
 * float8e8m0 against its powers of two and ONNX's rounding modes.
 */
#include "test.h"
#include "../../runtime/rt_float8.h"

#include <math.h>

static const int formats[] = { 17, 18, 19, 20 };

static void test_roundtrip(void)
{
	for (int k = 0; k < 4; k++)
		for (int p = 0; p < 256; p++) {
			double v = rt_f82d((uint8_t)p, formats[k]);

			if (!isnan(v) && !isinf(v))
				ASSERT(p, rt_d2f8(v, formats[k], 1));
		}
	/* the NaNs and infinities the formats have */
	ASSERT_TRUE(isnan(rt_f82d(0x7f, 17)) && isnan(rt_f82d(0xff, 17)));
	ASSERT_TRUE(isnan(rt_f82d(0x80, 18)) && isnan(rt_f82d(0x80, 20)));
	ASSERT_TRUE(isinf(rt_f82d(0x7c, 19)) && isnan(rt_f82d(0x7d, 19)));
	ASSERT_TRUE(rt_f82d(0x7e, 17) == 448 && rt_f82d(0x7f, 18) == 240);
	ASSERT_TRUE(rt_f82d(0x7b, 19) == 57344 && rt_f82d(0x7f, 20) == 57344);
}

/*
 * The pattern of format t nearest to d (finite), ties to the even pattern,
 * among those of d's sign and the value one step past the largest (whose
 * pattern would follow the largest's): -1 when that one is nearest.
 */
static int nearest(double d, int t)
{
	static const double step[] = { 32, 16, 8192, 8192 };	/* at the largest */
	static const int maxpat[] = { 0x7e, 0x7f, 0x7b, 0x7f };
	int k = t - 17, best = -1, bestpar = (maxpat[k] + 1) & 1;
	double a = fabs(d), bd = fabs(rt_f8fmt(t).max + step[k] - a);

	for (int p = 0; p < 256; p++) {
		double v = rt_f82d((uint8_t)p, t), dist;

		/* a FNUZ format's one zero serves both signs */
		if (isnan(v) || isinf(v) || ((p >> 7) != !!signbit(d) && !(p == 0 && t % 2 == 0)))
			continue;
		dist = fabs(fabs(v) - a);
		if (dist < bd || (dist == bd && !(p & 1) && bestpar)) {
			best = p;
			bd = dist;
			bestpar = p & 1;
		}
	}
	return best;
}

/* d narrowed to format t, saturated and not, against nearest(). */
static void check_narrow(double d, int t)
{
	int want = nearest(d, t);
	struct rt_f8fmt fm = rt_f8fmt(t);

	if (want < 0) {
		ASSERT(rt_d2f8(d < 0 ? -fm.max : fm.max, t, 1), rt_d2f8(d, t, 1));
		ASSERT(fm.uz ? 0x80 : (d < 0 ? 0x80 : 0) | (fm.inf ? 0x7c : 0x7f), rt_d2f8(d, t, 0));
	} else {
		ASSERT(want, rt_d2f8(d, t, 1));
		ASSERT(want, rt_d2f8(d, t, 0));
	}
}

static void test_narrow(void)
{
	for (uint64_t u = 0; u < 0x100000000u; u += 65537) {
		float f = rt_bitsf((uint32_t)u);

		if (isnan(f) || isinf(f) || fabsf(f) > 1e6f)
			continue;
		for (int k = 0; k < 4; k++)
			check_narrow(f, formats[k]);
	}
	/* every tie: halfway between neighbours, and past the largest */
	for (int k = 0; k < 4; k++)
		for (int p = 0; p < 255; p++) {
			double a = rt_f82d((uint8_t)p, formats[k]);
			double b = rt_f82d((uint8_t)(p + 1), formats[k]);

			if (isnan(a) || isnan(b) || isinf(a) || isinf(b) || (p & 0x7f) == 0x7f)
				continue;
			check_narrow((a + b) / 2, formats[k]);
		}
	check_narrow(464, 17);		/* to 448: its pattern is even */
	check_narrow(-248, 18);		/* past 240, odd: overflows */
	check_narrow(61440, 19);
	check_narrow(61440, 20);
}

static void test_e8m0(void)
{
	for (int p = 0; p < 255; p++)
		ASSERT_TRUE(rt_f82d((uint8_t)p, 24) == ldexp(1.0, p - 127));
	ASSERT_TRUE(isnan(rt_f82d(0xff, 24)));
	ASSERT(127, rt_f2e8m0(1.0f, 1, 0));
	ASSERT(128, rt_f2e8m0(1.5f, 1, 0));	/* up */
	ASSERT(127, rt_f2e8m0(1.5f, 1, 1));	/* down */
	ASSERT(128, rt_f2e8m0(1.5f, 1, 2));	/* nearest: the tie goes up */
	ASSERT(127, rt_f2e8m0(1.4f, 1, 2));
	ASSERT(0xfe, rt_f2e8m0(3e38f, 1, 0));	/* saturated */
	ASSERT(0xff, rt_f2e8m0(3e38f, 0, 0));
}

TESTS({ "roundtrip", test_roundtrip }, { "narrow", test_narrow }, { "e8m0", test_e8m0 })
