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
 * every GCC target has; where the code may use F16C (__F16C__), float16's
 * two conversions are its instructions instead, with the same results
 * (RT_HALF_PORTABLE keeps the C).
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

/* Rounds q + rem / 2^shift to nearest, ties to even. */
static inline uint32_t rt_round_even(uint32_t q, uint32_t rem, int shift)
{
	uint32_t half = (uint32_t)1 << (shift - 1);

	return q + (rem > half || (rem == half && (q & 1)));
}

#if defined(__F16C__) && !defined(RT_HALF_PORTABLE)
/*
 * With F16C (x86-64-v3 and up; what --cpu chose) one instruction each way,
 * the same bits: IEEE's conversions, round to nearest even (imm 0), NaN
 * quieted with its top payload bits, overflow to infinity; ten times
 * faster than the C below (0.95 ms for a float16 MLP's 131072 Relu outputs).
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
#else
/* float16 bits to float: every float16 is a float, so this is exact. */
static inline float rt_h2f(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0x1f)	/* infinity or NaN, payload kept */
		return rt_bitsf(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {		/* zero or subnormal: man * 2^-24, exact in float */
		float f = (float)man * 5.9604644775390625e-8f;

		return sign ? -f : f;
	}
	return rt_bitsf(sign | ((exp + 112) << 23) | (man << 13));
}

/* float to float16 bits, rounding to nearest even. */
static inline uint16_t rt_f2h(float f)
{
	uint32_t x = rt_fbits(f), abs = x & 0x7fffffffu;
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);

	if (abs > 0x7f800000u)		/* NaN: quiet, top payload bits */
		return (uint16_t)(sign | 0x7e00 | ((abs >> 13) & 0x3ff));
	if (abs >= 0x477ff000u)		/* >= 65520: rounds past 65504 to infinity */
		return (uint16_t)(sign | 0x7c00);
	if (abs < 0x38800000u) {	/* below 2^-14: subnormal or zero */
		uint32_t e = abs >> 23, m, shift;

		if (abs <= 0x33000000u)	/* at most 2^-25, half the least subnormal */
			return sign;
		/* the value in units of 2^-24 is m / 2^shift */
		m = (abs & 0x7fffffu) | 0x800000u;
		shift = 126 - e;
		return (uint16_t)(sign | rt_round_even(m >> shift, m & ((1u << shift) - 1),
							 (int)shift));
	}
	/* rebias the exponent (127 -> 15); a carry out of the mantissa is right */
	return (uint16_t)(sign | rt_round_even((abs >> 13) - (112u << 10), abs & 0x1fff, 13));
}
#endif

/* bfloat16 bits to float: the top half of a float. */
static inline float rt_bf2f(uint16_t h)
{
	return rt_bitsf((uint32_t)h << 16);
}

/* float to bfloat16 bits, rounding to nearest even (overflow gives infinity). */
static inline uint16_t rt_f2bf(float f)
{
	uint32_t x = rt_fbits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)	/* NaN: keep it a quiet NaN */
		return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)(rt_round_even(x >> 16, x & 0xffff, 16));
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
