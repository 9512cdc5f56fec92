/*
 * float8_test.c - the 8-bit float conversions of runtime/rt_float8.h
 * against references computed another way: every bit pattern of the four
 * sign/exponent/mantissa formats widened and narrowed back (NaNs aside),
 * and narrowing of every 65537th float bit pattern and of every tie
 * between neighbours checked against the nearest pattern found by
 * comparing distances (ties to the even pattern), saturated or not;
 * float8e8m0 against its powers of two and ONNX's rounding modes;
 * float4e2m1's 16 patterns back and forth, its ties and saturation against
 * the nearest-by-distance pattern, and the sub-byte packing of
 * int4/uint4/int2/uint2 (odd counts, in place, sign extension) and their
 * wrapping casts.
 */
#include "test.h"
#include "../../runtime/rt_float8.h"

#include <math.h>
#include <string.h>

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

static void test_f4(void)
{
	for (int p = 0; p < 16; p++)
		ASSERT(p == 8 ? 8 : p, rt_d2f4(rt_f82d((uint8_t)p, 23)));
	ASSERT_TRUE(rt_f82d(7, 23) == 6 && rt_f82d(15, 23) == -6 && rt_f82d(1, 23) == 0.5);
	/* every quarter step from -8 to 8: the nearest value, ties to the even pattern */
	for (int q = -32; q <= 32; q++) {
		double d = q / 4.0, best = 1e9;
		int want = 0;

		for (int p = 0; p < 16; p++) {
			double v = rt_f82d((uint8_t)p, 23), dist = fabs(v - (d > 6 ? 6 : d < -6 ? -6 : d));

			if ((v != 0 || signbit(v) == signbit(d)) &&
			    (dist < best || (dist == best && !(p & 1))))
				best = dist, want = p;
		}
		ASSERT(want, rt_d2f4(d));
	}
	ASSERT(7, rt_d2f4(INFINITY));
	ASSERT(15, rt_d2f4(-INFINITY));
	ASSERT(8, rt_d2f4(NAN));	/* as ml_dtypes writes it (rt_float8.h) */
	ASSERT(8, rt_d2f4(-0.0));
}

static void test_subbyte(void)
{
	uint8_t one[9], packed[9], back[9];
	static const int types[] = { 22, 21, 26, 25 };

	for (int k = 0; k < 4; k++) {
		int t = types[k], bits = rt_subbyte_bits(t), sgn = t == 22 || t == 26;

		for (int i = 0; i < 9; i++) {
			int v = (i * 5 + 3) & ((1 << bits) - 1);

			one[i] = (uint8_t)(sgn ? (v ^ (1 << (bits - 1))) - (1 << (bits - 1)) : v);
		}
		memset(packed, 0xee, sizeof(packed));
		rt_subbyte_pack(t, one, packed, 9);
		/* the last byte's unused bits are 0 */
		ASSERT(0, packed[(9 * bits - 1) / 8] >> (9 * bits % 8 ? 9 * bits % 8 : 8));
		rt_subbyte_unpack(t, packed, back, 9);
		ASSERT(0, memcmp(one, back, 9));
		memcpy(back, one, 9);
		rt_subbyte_pack(t, back, back, 9);	/* in place */
		ASSERT(0, memcmp(packed, back, (size_t)(9 * bits + 7) / 8));
	}
	ASSERT(0x21, (rt_subbyte_pack(22, (const uint8_t[]){ 1, 2 }, one, 2), one[0]));
	/* casts to the sub-byte integers keep the low bits of the truncated value */
	{
		double x[] = { 8, -9, 7.9, -8.5, 17, 2.5 };
		int8_t i4[6];
		uint8_t u2[6];

		rt_cast_f8(x, 11, i4, 22, 6, 1, 0, 1);
		rt_cast_f8(x, 11, u2, 25, 6, 1, 0, 1);
		ASSERT_TRUE(i4[0] == -8 && i4[1] == 7 && i4[2] == 7 && i4[3] == -8 && i4[4] == 1 &&
			    i4[5] == 2);
		ASSERT_TRUE(u2[0] == 0 && u2[1] == 3 && u2[2] == 3 && u2[3] == 0 && u2[4] == 1 &&
			    u2[5] == 2);
	}
}

TESTS({ "roundtrip", test_roundtrip }, { "narrow", test_narrow }, { "e8m0", test_e8m0 },
      { "f4", test_f4 }, { "subbyte", test_subbyte })
