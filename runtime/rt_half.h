/*
 * rt_half.h - float16 and bfloat16 as 16-bit patterns (uint16_t), and their
 * conversions to and from float. Generated kernels store these types as such
 * and compute in float: a load widens (exactly), a store rounds to nearest,
 * ties to even, with NaN and infinities kept (a NaN stays a quiet NaN with
 * its top payload bits; float16 overflows to infinity, as IEEE rounding
 * does). The compiler's constant folder uses the same functions, so folded
 * and run-time results agree bit for bit.
 *
 * Plain C11 and only <stdint.h>/<string.h>: no _Float16 or __bf16, which not
 * every GCC target has, and no branch, so that GCC 12 vectorises the loops
 * (it vectorises no conversion of _Float16 either); where the code may use
 * F16C but not AVX-512, float16's conversions are F16C's instructions
 * instead, with the same results (RT_HALF_PORTABLE keeps the C).
 *
 *	uint16_t h = rt_f2h(0.1f);	// 0x2e66
 *	float f = rt_h2f(h);		// 0.0999755859375f
 */
#ifndef COLLAGEC_RT_HALF_H
#define COLLAGEC_RT_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rt_fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/*
 * BitCast (opset 26): y gets the n bytes of x unchanged, whatever their
 * types (of one width). The kernel of a BitCast node is this call.
 */
static inline void rt_bitcast(const void *x, void *y, int64_t n, int threads)
{
	(void)threads;
	memcpy(y, x, (size_t)n);
}

static inline float rt_bitsf(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * Rounds q + rem / 2^shift to nearest, ties to even (shift <= 30): up when
 * rem + (q & 1) passes half, which half - rem - (q & 1) says in its sign
 * bit. No comparison: GCC vectorises the loops that call it (a || on
 * comparisons left them scalar).
 */
static inline uint32_t rt_round_even(uint32_t q, uint32_t rem, int shift)
{
	uint32_t half = (uint32_t)1 << (shift - 1);

	return q + ((half - rem - (q & 1)) >> 31);
}

/* a where mask m is all ones, b where it is zero: a select GCC vectorises. */
static inline uint32_t rt_pick(uint32_t m, uint32_t a, uint32_t b)
{
	return (a & m) | (b & ~m);
}

/* All ones when c, else zero. */
static inline uint32_t rt_mask(int c)
{
	return -(uint32_t)(c != 0);
}

#if defined(__F16C__) && !defined(__AVX512F__) && !defined(RT_HALF_PORTABLE)
/*
 * With F16C but not AVX-512 (x86-64-v3; what --cpu chose) one instruction
 * each way: IEEE's conversions, round to nearest even (imm 0), NaN quieted
 * with its top payload bits, overflow to infinity; the same bits as the C
 * below. A loop of these stays scalar, but the branch-free C vectorised at
 * 256 bits stored float16 at half the speed (0.049 ms for 65536 values
 * against 0.023), and scalar it costs 8 ns a value.
 */
#include <immintrin.h>

static inline float rt_h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

static inline uint16_t rt_f2h(float f)
{
	return (uint16_t)_cvtss_sh(f, 0);
}

/* x rounded to float16 and back. */
static inline float rt_round16(float x)
{
	return _cvtsh_ss(_cvtss_sh(x, 0));
}
#else
/*
 * Branch-free C, the same bits: the generated loops that load, round or
 * store float16 vectorise (with AVX-512, 64-byte vectors: bert_tiny's
 * float16 bias Add, a load, two round trips and a store a value, ran in
 * 0.012 ms against F16C's scalar pair's 0.025).
 *
 * float16 bits to float, exact. A signalling NaN comes back quiet, payload
 * kept, as F16C's conversion gives it.
 */
static inline float rt_h2f(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, a = h & 0x7fffu;
	uint32_t exp = a >> 10;
	uint32_t nor = (a << 13) + (112u << 23);
	uint32_t inf = ((a << 13) + (224u << 23)) | (rt_mask(a > 0x7c00) & 0x400000u);
	/* zero or subnormal: a * 2^-24, exact in float */
	uint32_t sub = rt_fbits((float)(int32_t)a * 5.9604644775390625e-8f);

	return rt_bitsf(sign | rt_pick(rt_mask(exp == 0x1f), inf,
				       rt_pick(rt_mask(exp == 0), sub, nor)));
}

/*
 * x rounded to float16 and back (rt_h2f(rt_f2h(x))), in float bits: a
 * normal result rounds the mantissa to 10 bits in place (a carry into the
 * exponent is right); below 2^-14 adding 0.5 leaves x in units of 2^-24,
 * rounded by the addition to nearest even; from 65520 up it overflows to
 * infinity; a NaN is quieted, its payload cut to float16's 10 bits.
 */
static inline float rt_round16(float x)
{
	uint32_t u = rt_fbits(x), a = u & 0x7fffffffu, s = u & 0x80000000u;
	uint32_t nor = (a + 0xfffu + ((a >> 13) & 1)) & 0xffffe000u;
	uint32_t sub = rt_fbits((float)(int32_t)(rt_fbits(rt_bitsf(a) + 0.5f) - 0x3f000000u) *
				5.9604644775390625e-8f);
	uint32_t r = rt_pick(rt_mask(a < 0x38800000u), sub, nor);

	r = rt_pick(rt_mask(a >= 0x477ff000u), 0x7f800000u, r);
	r = rt_pick(rt_mask(a > 0x7f800000u), (a & 0xffffe000u) | 0x400000u, r);
	return rt_bitsf(s | r);
}

/*
 * float to float16 bits, rounding to nearest even: rt_round16's value,
 * which float16 holds exactly, in float16's fields (a subnormal as its
 * count of 2^-24; infinity and NaN keep the payload's top 10 bits).
 */
static inline uint16_t rt_f2h(float f)
{
	uint32_t u = rt_fbits(rt_round16(f)), a = u & 0x7fffffffu;
	uint32_t nor = (a >> 13) - (112u << 10);
	uint32_t sub = (uint32_t)(int32_t)(rt_bitsf(a) * 16777216.0f);
	uint32_t inf = ((a >> 13) & 0x3ffu) | 0x7c00u;
	uint32_t h = rt_pick(rt_mask(a < 0x38800000u), sub, nor);

	h = rt_pick(rt_mask(a >= 0x7f800000u), inf, h);
	return (uint16_t)(((u >> 16) & 0x8000u) | h);
}
#endif

/* bfloat16 bits to float: the top half of a float. */
static inline float rt_bf2f(uint16_t h)
{
	return rt_bitsf((uint32_t)h << 16);
}

/*
 * float to bfloat16 bits, rounding to nearest even (overflow gives
 * infinity; a NaN stays a NaN, quieted). No branch: its loops vectorise.
 */
static inline uint16_t rt_f2bf(float f)
{
	uint32_t x = rt_fbits(f);

	return (uint16_t)rt_pick(rt_mask((x & 0x7fffffffu) > 0x7f800000u), (x >> 16) | 0x40,
				 rt_round_even(x >> 16, x & 0xffff, 16));
}

/* x rounded to bfloat16 and back: rt_bf2f(rt_f2bf(x)) bit for bit. */
static inline float rt_roundbf(float x)
{
	return rt_bf2f(rt_f2bf(x));
}

/*
 * A float16 (p[0] 0) or bfloat16 (1) constant of p[1] elements widened to
 * float: how a compiled model makes a 16-bit weight that its kernels read
 * as float32 when it opens (a derived constant, "widen16"; core/passes/
 * pass_fold.c), and how the compiler makes it first. Exact both ways.
 */
static inline void rt_widen16(const void *src, void *dst, const int64_t *p)
{
	const uint16_t *h = src;
	float *f = dst;

	if (p[0])
		for (int64_t i = 0; i < p[1]; i++)
			f[i] = rt_bf2f(h[i]);
	else
		for (int64_t i = 0; i < p[1]; i++)
			f[i] = rt_h2f(h[i]);
}

/*
 * double to float rounding to odd: truncated, with the last bit set when
 * inexact. Rounding that float to nearest even at 11 or 8 bits then gives
 * the double's correctly rounded value (float keeps more than two extra
 * bits), which a plain (float) conversion first could miss by double
 * rounding. Assumes the default rounding mode.
 */
static inline float rt_d2f_odd(double d)
{
	float f = (float)d;
	uint32_t u;

	if (d != d || (double)f == d)
		return f;
	u = rt_fbits(f);
	if ((f < 0 ? -(double)f : (double)f) > (d < 0 ? -d : d))
		u--;	/* rounded away from zero: one step back (inf -> max) */
	return rt_bitsf(u | 1);
}

/* double to float16 bits, rounding to nearest even. */
static inline uint16_t rt_d2h(double d)
{
	return rt_f2h(rt_d2f_odd(d));
}

/* double to bfloat16 bits, rounding to nearest even. */
static inline uint16_t rt_d2bf(double d)
{
	return rt_f2bf(rt_d2f_odd(d));
}

#endif
