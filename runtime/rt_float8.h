/*
 * rt_float8.h - the 8-bit floats of ONNX (opsets 19 and 24) as bit patterns
 * (uint8_t), and Cast to and from them. Generated kernels move them as
 * bytes; only Cast and CastLike convert (rt_cast_f8, one call per node),
 * as do the compiler's readers of test data, through the same functions.
 *
 *   type  ONNX  exponent/mantissa  bias  largest  NaN          infinity
 *   E4M3FN   17    4/3               7     448    S.1111.111   none
 *   E4M3FNUZ 18    4/3               8     240    1.0000.000   none
 *   E5M2     19    5/2              15   57344    S.11111.xx>0 S.11111.00
 *   E5M2FNUZ 20    5/2              16   57344    1.00000.00   none
 *   E8M0     24    8/0             127    2^127   11111111     none (no
 *                                                  sign, no zero)
 *
 *   E2M1     23    2/1               1       6    none         none (float4e2m1:
 *                                                  the low four bits)
 *
 * To E4M3FN..E5M2FNUZ a value rounds to nearest even; with saturate one
 * beyond the largest (infinity included) becomes the largest, without it
 * NaN (E5M2: infinity); the FNUZ types have no -0 (it is their NaN). To
 * E8M0 the float32 exponent is taken and rounded as round_mode says, as
 * ONNX's reference does (onnx.numpy_helper.to_float8e8m0). To E2M1, which
 * has no infinity and no NaN, a value rounds to nearest even and saturates
 * (infinity included) to +-6 whatever saturate says; NaN becomes 0x8 (-0),
 * as ml_dtypes, ONNX's reference, writes it and ONNX's node tests expect
 * (onnx's docs/technical/float4.md says 6 instead).
 *
 * The sub-byte integers int4 (ONNX 22), uint4 (21), int2 (26) and uint2
 * (25) are held one byte an element, sign- or zero-extended (dtype.def); a
 * conversion to them keeps the low 4 or 2 bits of the integer C's
 * conversion gives (truncation toward zero), as Cast's rule for fixed
 * point (discard higher bits) and ml_dtypes' astype do. rt_subbyte_pack
 * and rt_subbyte_unpack convert between that form and ONNX's packed one
 * (two or four a byte, the first in the lowest bits).
 *
 *	uint8_t b = rt_d2f8(0.3, 17, 1);	// 0x29: 0.3125
 *	double d = rt_f82d(b, 17);		// 0.3125
 */
#ifndef COLLAGEC_RT_FLOAT8_H
#define COLLAGEC_RT_FLOAT8_H

#include <math.h>
#include <stdint.h>

#include "rt_half.h"

/* One of the four formats with a sign, exponent and mantissa. */
struct rt_f8fmt {
	int mbits, bias;
	int uz;		/* FNUZ: 0x80 is the NaN, no -0, no infinity */
	int inf;	/* IEEE-like (E5M2): an all-ones exponent is infinity or NaN */
	double max;
};

static inline struct rt_f8fmt rt_f8fmt(int t)
{
	switch (t) {
	case 17: return (struct rt_f8fmt){ 3, 7, 0, 0, 448 };
	case 18: return (struct rt_f8fmt){ 3, 8, 1, 0, 240 };
	case 19: return (struct rt_f8fmt){ 2, 15, 0, 1, 57344 };
	default: return (struct rt_f8fmt){ 2, 16, 1, 0, 57344 };
	}
}

static inline int rt_is_f8(int t)
{
	return (t >= 17 && t <= 20) || t == 24 || t == 23;
}

/* Bits an element of ONNX type t takes packed: 4 (int4, uint4, float4e2m1), 2, else 8. */
static inline int rt_subbyte_bits(int t)
{
	return t == 21 || t == 22 || t == 23 ? 4 : t == 25 || t == 26 ? 2 : 8;
}

/* n elements of ONNX sub-byte type t, packed at src, one a byte into dst. */
static inline void rt_subbyte_unpack(int t, const uint8_t *src, uint8_t *dst, int64_t n)
{
	int bits = rt_subbyte_bits(t), per = 8 / bits, mask = (1 << bits) - 1;
	int sgn = t == 22 || t == 26;

	for (int64_t i = 0; i < n; i++) {
		int v = (src[i / per] >> (i % per * bits)) & mask;

		dst[i] = (uint8_t)(sgn ? (v ^ (1 << (bits - 1))) - (1 << (bits - 1)) : v);
	}
}

/*
 * n elements of ONNX sub-byte type t, one a byte at src, packed into dst
 * ((n * bits + 7) / 8 bytes, the last one's unused bits 0). dst may be src:
 * byte i / per is written after every element before i was read.
 */
static inline void rt_subbyte_pack(int t, const uint8_t *src, uint8_t *dst, int64_t n)
{
	int bits = rt_subbyte_bits(t), per = 8 / bits, mask = (1 << bits) - 1;

	for (int64_t i = 0; i < n; i += per) {
		uint8_t b = 0;

		for (int k = 0; k < per && i + k < n; k++)
			b |= (uint8_t)((src[i + k] & mask) << (k * bits));
		dst[i / per] = b;
	}
}

/* The value of float4e2m1 bit pattern v (its low four bits). */
static inline double rt_f42d(uint8_t v)
{
	static const double mag[8] = { 0, 0.5, 1, 1.5, 2, 3, 4, 6 };

	return v & 8 ? -mag[v & 7] : mag[v & 7];
}

/* d to float4e2m1: nearest even, saturated to +-6; NaN to 0x8 (the header says why). */
static inline uint8_t rt_d2f4(double d)
{
	uint8_t s = signbit(d) ? 8 : 0;
	double a = fabs(d);
	int m;

	if (isnan(d))
		return (uint8_t)(s ^ 8);
	/* in units of 0.5 below 2, of 1 below 4, of 2 from 4 */
	if (a < 2)
		m = (int)rint(a * 2);			/* 0..4: 4 is 2.0 */
	else if (a < 4)
		m = 2 + (int)rint(a);			/* 4..6: 2, 3, 4 */
	else if (a < 6)
		m = 4 + (int)rint(a / 2);		/* 6..7: 4, 6 (5 ties to 4) */
	else
		m = 7;
	return (uint8_t)(s | (m > 7 ? 7 : m));
}

/* The value of bit pattern v of 8-bit float type t (exact). */
static inline double rt_f82d(uint8_t v, int t)
{
	struct rt_f8fmt f = rt_f8fmt(t);
	int emax = (1 << (7 - f.mbits)) - 1, mmax = (1 << f.mbits) - 1;
	int e = (v >> f.mbits) & emax, m = v & mmax;
	double x;

	if (t == 24)
		return v == 0xff ? NAN : ldexp(1.0, v - 127);
	if (t == 23)
		return rt_f42d(v);
	if (f.uz && v == 0x80)
		return NAN;
	if (f.inf && e == emax)
		return m ? NAN : (v & 0x80 ? -INFINITY : INFINITY);
	if (!f.uz && !f.inf && e == emax && m == mmax)
		return NAN;
	x = e ? ldexp(1.0 + (double)m / (mmax + 1), e - f.bias) : ldexp(m, 1 - f.bias - f.mbits);
	return v & 0x80 ? -x : x;
}

/* What a value too large for type t becomes without saturate, sign s. */
static inline uint8_t rt_f8_overflow(struct rt_f8fmt f, uint8_t s)
{
	if (f.uz)
		return 0x80;
	return (uint8_t)(s | (f.inf ? 0x7c : 0x7f));
}

/* d to 8-bit float type t (17 to 20), rounding to nearest even. */
static inline uint8_t rt_d2f8(double d, int t, int saturate)
{
	struct rt_f8fmt f = rt_f8fmt(t);
	uint8_t s = signbit(d) ? 0x80 : 0;
	int emin = 1 - f.bias, e;
	double a = fabs(d), r;

	if (isnan(d))	/* the quiet NaN ml_dtypes (ONNX's reference) writes */
		return f.uz ? 0x80 : (uint8_t)(s | (f.inf ? 0x7e : 0x7f));
	if (isinf(a)) {
		if (!saturate)
			return rt_f8_overflow(f, s);
		a = f.max;
	}
	if (a == 0)
		return f.uz ? 0 : s;
	frexp(a, &e);
	e = e - 1 < emin ? emin : e - 1;	/* a in [2^e, 2^(e+1)), or subnormal */
	r = rint(ldexp(a, f.mbits - e));	/* nearest even, in units of the last place */
	r = ldexp(r, e - f.mbits);
	if (r > f.max) {
		if (!saturate)
			return rt_f8_overflow(f, s);
		r = f.max;
	}
	if (r == 0)
		return f.uz ? 0 : s;
	frexp(r, &e);
	if (e - 1 < emin)
		return (uint8_t)(s | (uint8_t)ldexp(r, f.mbits - emin));
	return (uint8_t)(s | ((e - 1 + f.bias) << f.mbits) |
			 ((uint8_t)ldexp(r, f.mbits - (e - 1)) & ((1 << f.mbits) - 1)));
}

/* f to E8M0: its float32 exponent, rounded up (0), down (1) or to nearest (2). */
static inline uint8_t rt_f2e8m0(float f, int saturate, int mode)
{
	uint32_t x = rt_fbits(f), e = (x >> 23) & 0xff;
	int up = 0;

	if (e == 0xff)
		return 0xff;
	if (mode == 0)
		up = (x & 0x7fffff) != 0;
	else if (mode == 2)	/* guard bit, and round, sticky or a normal number's lsb */
		up = (x & 0x400000) && ((x & 0x200000) || (x & 0x1fffff) || e > 0);
	if (up && !(saturate && e == 0xfe))
		e++;
	return (uint8_t)e;
}

/* Element i of numeric tensor x of ONNX type t, as a double. */
static inline double rt_f8_num_at(const void *x, int t, int64_t i)
{
	switch (t) {
	case 1: return ((const float *)x)[i];
	case 11: return ((const double *)x)[i];
	case 10: return rt_h2f(((const uint16_t *)x)[i]);
	case 16: return rt_bf2f(((const uint16_t *)x)[i]);
	case 2: case 9: return ((const uint8_t *)x)[i];
	case 3: return ((const int8_t *)x)[i];
	case 4: return ((const uint16_t *)x)[i];
	case 5: return ((const int16_t *)x)[i];
	case 6: return ((const int32_t *)x)[i];
	case 12: return ((const uint32_t *)x)[i];
	case 13: return (double)((const uint64_t *)x)[i];
	case 7: return (double)((const int64_t *)x)[i];
	case 22: case 26: return ((const int8_t *)x)[i];
	case 21: case 25: return ((const uint8_t *)x)[i];
	default: return rt_f82d(((const uint8_t *)x)[i], t);
	}
}

/* y[i] of ONNX type t = d, converted as C converts (bool: nonzero). */
static inline void rt_f8_num_set(void *y, int t, int64_t i, double d)
{
	int64_t v = d == d && d > -9.2e18 && d < 9.2e18 ? (int64_t)d : 0;

	switch (t) {
	case 1: ((float *)y)[i] = (float)d; break;
	case 11: ((double *)y)[i] = d; break;
	case 10: ((uint16_t *)y)[i] = rt_d2h(d); break;
	case 16: ((uint16_t *)y)[i] = rt_d2bf(d); break;
	case 9: ((uint8_t *)y)[i] = d != 0; break;
	case 2: ((uint8_t *)y)[i] = (uint8_t)v; break;
	case 3: ((int8_t *)y)[i] = (int8_t)v; break;
	case 4: ((uint16_t *)y)[i] = (uint16_t)v; break;
	case 5: ((int16_t *)y)[i] = (int16_t)v; break;
	case 6: ((int32_t *)y)[i] = (int32_t)v; break;
	case 12: ((uint32_t *)y)[i] = (uint32_t)v; break;
	case 13: ((uint64_t *)y)[i] = d >= 9.2e18 ? (uint64_t)d : (uint64_t)v; break;
	/* the sub-byte integers: the low bits, sign- or zero-extended */
	case 22: ((int8_t *)y)[i] = (int8_t)(((v & 15) ^ 8) - 8); break;
	case 21: ((uint8_t *)y)[i] = (uint8_t)(v & 15); break;
	case 26: ((int8_t *)y)[i] = (int8_t)(((v & 3) ^ 2) - 2); break;
	case 25: ((uint8_t *)y)[i] = (uint8_t)(v & 3); break;
	default: ((int64_t *)y)[i] = v; break;
	}
}

/*
 * Cast or CastLike of n elements of x (ONNX type xt) into y (type yt), one
 * of them an 8-bit float, float4e2m1 or a sub-byte integer: through double, which holds every value of both
 * exactly. saturate and round_mode (0 up, 1 down, 2 nearest) as the node's.
 */
static inline void rt_cast_f8(const void *x, int xt, void *y, int yt, int64_t n, int saturate,
			      int round_mode, int threads)
{
	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		double d = rt_f8_num_at(x, xt, i);

		if (yt == 24)
			((uint8_t *)y)[i] = rt_f2e8m0((float)d, saturate, round_mode);
		else if (yt == 23)
			((uint8_t *)y)[i] = rt_d2f4(d);
		else if (rt_is_f8(yt))
			((uint8_t *)y)[i] = rt_d2f8(d, yt, saturate);
		else
			rt_f8_num_set(y, yt, i, d);
	}
}

/* d rounded to the precision of float ONNX type t (float32, float16, bfloat16; else d). */
static inline double rt_f8_round_to(double d, int t)
{
	switch (t) {
	case 1: return (float)d;
	case 10: return rt_h2f(rt_d2h(d));
	case 16: return rt_bf2f(rt_d2bf(d));
	default: return d;
	}
}

/*
 * QuantizeLinear (quant 1) or DequantizeLinear (0) of the n elements of x
 * (ONNX type xt) into y (type yt), where the quantized side is an 8-bit
 * float or float4e2m1. The scale s (type st) and zero point z (type zt;
 * 0: none) hold one element (d 1, inner 1, block 0), one per index of an
 * axis of length d followed by inner elements a row, or with block one per
 * block of that axis (x's shape, the axis ceil(d / block) long).
 * Quantizing rounds x / scale as x's type does, adds the zero point and
 * converts to nearest even, saturating as saturate says (float4e2m1
 * always saturates); dequantizing computes (x - zero point) * scale in
 * double, exact for these types, and rounds once to y's type.
 */
static inline void rt_qdq_f8(int quant, const void *x, int xt, const void *s, int st,
			     const void *z, int zt, void *y, int yt, int64_t n, int64_t d,
			     int64_t inner, int64_t block, int saturate, int threads)
{
	int64_t nb = block ? (d + block - 1) / block : 0;

	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		int64_t k = i % inner, a = i / inner % d, o = i / inner / d, off;
		double sc, zv, v;

		if (block)
			off = (o * nb + a / block) * inner + k;
		else
			off = a;
		sc = rt_f8_num_at(s, st, off);
		zv = zt ? rt_f8_num_at(z, zt, off) : 0;
		if (!quant) {
			rt_f8_num_set(y, yt, i, (rt_f8_num_at(x, xt, i) - zv) * sc);
			continue;
		}
		v = rt_f8_round_to(rt_f8_num_at(x, xt, i) / sc, xt) + zv;
		((uint8_t *)y)[i] = yt == 23 ? rt_d2f4(v) : rt_d2f8(v, yt, saturate);
	}
}

#endif
