/*
 * half_test.c - the float16/bfloat16 conversions of runtime/rt_half.h
 * against references computed another way: every float16 and bfloat16 bit
 * pattern widened and compared with its value from ldexp; narrowing checked
 * on every 251st float bit pattern plus every exact tie, against the nearest
 * candidate found by comparing distances in double (ties to the even
 * pattern); double narrowing checked at values where rounding through float
 * first would round twice.
 */
#include "test.h"
#include "../../runtime/rt_half.h"

#include <math.h>

/* The value of float16 pattern h from its fields. */
static double h_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v;

	if (e == 0x1f)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(m | 0x400, e - 25);
	return h & 0x8000 ? -v : v;
}

static void test_h2f_all(void)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = rt_h2f((uint16_t)h);
		double v = h_value((uint16_t)h);

		if (isnan(v))
			ASSERT_TRUE(isnan(f));
		else
			ASSERT_TRUE((double)f == v && !signbit(f) == !signbit(v));
	}
}

/* The float16 nearest to f by brute force over the candidates of its sign. */
static uint16_t h_nearest(float f)
{
	uint16_t sign = signbit(f) ? 0x8000 : 0, best = 0;
	double a = fabs((double)f), bd = INFINITY;

	if (a >= 65520.0)	/* half way past the largest float16 and beyond */
		return sign | 0x7c00;
	for (uint32_t h = 0; h < 0x7c00; h++) {
		double d = fabs(h_value((uint16_t)h) - a);

		if (d < bd || (d == bd && !(h & 1))) {
			bd = d;
			best = (uint16_t)h;
		}
	}
	return sign | best;
}

/* Binary search variant of h_nearest: the float16s are ordered like their patterns. */
static uint16_t h_nearest_fast(float f)
{
	uint16_t sign = signbit(f) ? 0x8000 : 0;
	double a = fabs((double)f), dl, dh;
	uint32_t lo = 0, hi = 0x7bff;

	if (a >= 65520.0)
		return sign | 0x7c00;
	if (a >= h_value(0x7bff))
		return sign | 0x7bff;
	while (hi - lo > 1) {	/* h_value(lo) <= a < h_value(hi) */
		uint32_t mid = (lo + hi) / 2;

		if (h_value((uint16_t)mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	dl = a - h_value((uint16_t)lo);
	dh = h_value((uint16_t)hi) - a;
	if (dl < dh || (dl == dh && !(lo & 1)))
		return sign | (uint16_t)lo;
	return sign | (uint16_t)hi;
}

static void test_f2h(void)
{
	/* the brute force agrees with the binary search on a few values */
	const float few[] = { 0.1f, -3.14159f, 65504.0f, 65519.0f, 1e-7f, 3e-8f, 6e-5f };

	for (size_t i = 0; i < sizeof(few) / sizeof(few[0]); i++)
		ASSERT(h_nearest(few[i]), h_nearest_fast(few[i]));
	for (uint64_t u = 0; u < 0x100000000ull; u += 251) {
		float f = rt_bitsf((uint32_t)u);

		if (isnan(f)) {
			ASSERT(0x7c00, rt_f2h(f) & 0x7c00);
			ASSERT_TRUE(rt_f2h(f) & 0x3ff);
			continue;
		}
		ASSERT(h_nearest_fast(f), rt_f2h(f));
	}
	/* every tie between two float16s (and its neighbours) */
	for (uint32_t h = 0; h < 0x7c00; h++) {
		double mid = (h_value((uint16_t)h) + h_value((uint16_t)(h + 1))) / 2;
		float f = (float)mid;

		ASSERT_TRUE((double)f == mid);
		ASSERT(h_nearest_fast(f), rt_f2h(f));
		ASSERT(h_nearest_fast(-f), rt_f2h(-f));
		ASSERT(h_nearest_fast(nextafterf(f, 0)), rt_f2h(nextafterf(f, 0)));
		ASSERT(h_nearest_fast(nextafterf(f, INFINITY)), rt_f2h(nextafterf(f, INFINITY)));
	}
	ASSERT(0x7c00, rt_f2h(INFINITY));
	ASSERT(0xfc00, rt_f2h(-INFINITY));
	ASSERT(0x8000, rt_f2h(-0.0f));
}

/* The bfloat16 nearest to finite f: one of the two truncations around it. */
static uint16_t bf_nearest(float f)
{
	uint32_t u = rt_fbits(f);
	uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
	double dl = fabs((double)f - rt_bf2f(lo)), dh;

	if ((u & 0xffff) == 0)
		return lo;
	/* past the largest finite bfloat16 the next pattern is infinity */
	dh = (hi & 0x7f80) == 0x7f80 ? ldexp(1, 128) - fabs((double)f)
		: fabs((double)f - rt_bf2f(hi));
	return dl < dh || (dl == dh && !(lo & 1)) ? lo : hi;
}

static void test_bf16(void)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = rt_bf2f((uint16_t)h);

		if (isnan(f))
			ASSERT_TRUE(((h >> 7) & 0xff) == 0xff && (h & 0x7f));
		else
			ASSERT(h, rt_f2bf(f));	/* exact values come back */
	}
	for (uint64_t u = 0; u < 0x100000000ull; u += 251) {
		float f = rt_bitsf((uint32_t)u);

		if (isnan(f))
			ASSERT_TRUE(isnan(rt_bf2f(rt_f2bf(f))));
		else if (!isinf(f))
			ASSERT(bf_nearest(f), rt_f2bf(f));
	}
	ASSERT(0x3f80, rt_f2bf(1.00390625f));		/* a tie: to even (down) */
	ASSERT(0x3f82, rt_f2bf(1.01171875f));		/* a tie: to even (up) */
	ASSERT(0x7f80, rt_f2bf(3.4028235e38f));		/* the largest float overflows */
}

static void test_double(void)
{
	/* 1 + 2^-11 + 2^-40: a plain (float) gives the tie 1 + 2^-11, then even = 1 */
	ASSERT(0x3c01, rt_d2h(1.0 + ldexp(1, -11) + ldexp(1, -40)));
	ASSERT(0x3c00, rt_d2h(1.0 + ldexp(1, -11)));
	ASSERT(0x3c01, rt_d2h(1.0 + ldexp(1, -10)));
	ASSERT(0x3f81, rt_d2bf(1.0 + ldexp(1, -8) + ldexp(1, -40)));
	ASSERT(0x7c00, rt_d2h(1e300));
	ASSERT(0x7f80, rt_d2bf(1e300));
	ASSERT(0x0000, rt_d2h(1e-300));
	ASSERT(0x8000, rt_d2bf(-1e-300));
	ASSERT_TRUE(isnan(rt_h2f(rt_d2h(NAN))));
}

/*
 * rt_round16 and rt_roundbf, the generated code's branch-free round trips,
 * give what rt_f2h then rt_h2f (rt_f2bf then rt_bf2f) give, bit for bit,
 * NaNs included: every 61st float bit pattern and every float within 64
 * patterns of each float16 boundary (ties, the subnormal and overflow
 * thresholds, the NaNs).
 */
static void round_trip_at(uint32_t u)
{
	float f = rt_bitsf(u);

	ASSERT(rt_fbits(rt_h2f(rt_f2h(f))), rt_fbits(rt_round16(f)));
	ASSERT(rt_fbits(rt_bf2f(rt_f2bf(f))), rt_fbits(rt_roundbf(f)));
}

static void test_round_trips(void)
{
	static const uint32_t edge[] = { 0x33000000u, 0x38800000u, 0x477fe000u, 0x477ff000u,
					 0x7f800000u, 0x7fc00000u, 0x3f801000u, 0x00000000u };

	for (uint64_t u = 0; u < 0x100000000ull; u += 61)
		round_trip_at((uint32_t)u);
	for (size_t k = 0; k < sizeof(edge) / sizeof(edge[0]); k++)
		for (uint32_t d = 0; d < 128; d++)
			for (uint32_t s = 0; s < 2; s++)
				round_trip_at((s << 31) | (edge[k] + d - 64));
	/* every float16 value comes back as itself */
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = rt_h2f((uint16_t)h);

		if (!isnan(f))
			ASSERT(rt_fbits(f), rt_fbits(rt_round16(f)));
	}
}

/* A signalling float16 NaN widens quiet (as F16C's conversion does), payload kept. */
static void test_h2f_nan(void)
{
	ASSERT(0x7fc02000u, rt_fbits(rt_h2f(0x7c01)));
	ASSERT(0xffffe000u, rt_fbits(rt_h2f(0xffff)));
	ASSERT(0x7f800000u, rt_fbits(rt_h2f(0x7c00)));
}

TESTS({ "h2f_all", test_h2f_all }, { "f2h", test_f2h }, { "bf16", test_bf16 },
      { "double", test_double }, { "round_trips", test_round_trips },
      { "h2f_nan", test_h2f_nan })
