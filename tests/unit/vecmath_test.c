/*
 * vecmath_test.c - the vector math that generated kernels call (glibc's
 * libmvec, declared __simd__ in runtime/rt_model.h) against a double-precision
 * libm reference, for every x86-64 variant this CPU runs: b (SSE, 4 lanes,
 * what --cpu generic and x86-64-v2 call), c (AVX), d (AVX2, x86-64-v3) and e
 * (AVX-512, x86-64-v4). Inputs: every 2^SHIFT-th float bit pattern of both
 * signs, plus the specials (+-0, +-Inf, NaN, the smallest and largest
 * subnormals and normals, and each function's overflow and underflow
 * thresholds and their neighbours). NaN must give NaN, every other result
 * must be within MAX_ULP of the rounded reference: libmvec's documented
 * bound. The measured maxima are printed (man collagec, ACCURACY).
 *
 * rt_expf_poly, the inline exp of runtime/rt_model.h that float kernels call
 * on AVX-512 (and without libmvec), is checked the same way, compiled as the
 * generated code is (the Makefile gives
 * this file its math flags and -ffp-contract=fast), in loops built for
 * x86-64, x86-64-v3 and AVX-512 so that GCC vectorises it with each, within
 * RT_MAX_ULP; its sigmoid, 1 / (1 + exp(-x)), within RT_MAX_ULP + 1.
 */
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#include "../../runtime/rt_model.h"

#define RT_MAX_ULP 2.5		/* rt_expf_poly: 2.02 (2.31 without FMA) over every float */

#if defined __x86_64__ && defined __GLIBC__ && __GLIBC_PREREQ(2, 35)
#include <immintrin.h>

#define SHIFT 10		/* every 1024th bit pattern: 2^22 inputs per sign */
#define MAX_ULP 4.0		/* libmvec: at most 4 ulp */

/* libmvec's entry points, named by the x86-64 vector function ABI */
__m128 _ZGVbN4v_expf(__m128);
__m128 _ZGVbN4v_logf(__m128);
__m128 _ZGVbN4v_tanhf(__m128);
__m128 _ZGVbN4v_erff(__m128);
__m128 _ZGVbN4vv_powf(__m128, __m128);
__attribute__((target("avx"))) __m256 _ZGVcN8v_expf(__m256);
__attribute__((target("avx"))) __m256 _ZGVcN8v_logf(__m256);
__attribute__((target("avx"))) __m256 _ZGVcN8v_tanhf(__m256);
__attribute__((target("avx"))) __m256 _ZGVcN8v_erff(__m256);
__attribute__((target("avx"))) __m256 _ZGVcN8vv_powf(__m256, __m256);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_expf(__m256);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_logf(__m256);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_tanhf(__m256);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_erff(__m256);
__attribute__((target("avx2"))) __m256 _ZGVdN8vv_powf(__m256, __m256);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_expf(__m512);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_logf(__m512);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_tanhf(__m512);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_erff(__m512);
__attribute__((target("avx512f"))) __m512 _ZGVeN16vv_powf(__m512, __m512);

enum fn { FN_EXP, FN_LOG, FN_TANH, FN_ERF, FN_POW, FN_SIGMOID, FN_RT_EXP, FN_RT_SIGMOID, FN_COUNT };

static const char *const fn_names[FN_COUNT] = {
	[FN_EXP] = "expf", [FN_LOG] = "logf", [FN_TANH] = "tanhf", [FN_ERF] = "erff",
	[FN_POW] = "powf", [FN_SIGMOID] = "sigmoid", [FN_RT_EXP] = "rt_expf_poly",
	[FN_RT_SIGMOID] = "rt_sigmoid",
};

/* y[i] = rt_expf_poly(x[i]) (of -x[i] for the sigmoid), vectorised for each level */
#define RT_LOOP(name, attr)                                                           \
	attr static void name(enum fn f, const float *restrict x, float *restrict y,   \
			      size_t n)                                              \
	{                                                                        \
		if (f == FN_RT_SIGMOID)                                          \
			for (size_t i = 0; i < n; i++)                           \
				y[i] = rt_expf_poly(-x[i]);                      \
		else                                                             \
			for (size_t i = 0; i < n; i++)                           \
				y[i] = rt_expf_poly(x[i]);                       \
	}
RT_LOOP(rt_run_b, )
RT_LOOP(rt_run_d, __attribute__((target("arch=x86-64-v3"))))
RT_LOOP(rt_run_e, __attribute__((target("arch=x86-64-v4"))))
#undef RT_LOOP

/* y[i] = f(x[i], e[i]) with ISA variant isa ('b', 'c', 'd', 'e'); n % 16 == 0 */
static void run_b(enum fn f, const float *x, const float *e, float *y, size_t n)
{
	for (size_t i = 0; i < n; i += 4) {
		__m128 v = _mm_loadu_ps(x + i), r;

		switch (f) {
		case FN_EXP: r = _ZGVbN4v_expf(v); break;
		case FN_LOG: r = _ZGVbN4v_logf(v); break;
		case FN_TANH: r = _ZGVbN4v_tanhf(v); break;
		case FN_ERF: r = _ZGVbN4v_erff(v); break;
		case FN_POW: r = _ZGVbN4vv_powf(v, _mm_loadu_ps(e + i)); break;
		default: r = _ZGVbN4v_expf(_mm_sub_ps(_mm_setzero_ps(), v)); break;
		}
		_mm_storeu_ps(y + i, r);
	}
}

__attribute__((target("avx"))) static void run_c(enum fn f, const float *x, const float *e,
						  float *y, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), r;

		switch (f) {
		case FN_EXP: r = _ZGVcN8v_expf(v); break;
		case FN_LOG: r = _ZGVcN8v_logf(v); break;
		case FN_TANH: r = _ZGVcN8v_tanhf(v); break;
		case FN_ERF: r = _ZGVcN8v_erff(v); break;
		case FN_POW: r = _ZGVcN8vv_powf(v, _mm256_loadu_ps(e + i)); break;
		default: r = _ZGVcN8v_expf(_mm256_sub_ps(_mm256_setzero_ps(), v)); break;
		}
		_mm256_storeu_ps(y + i, r);
	}
}

__attribute__((target("avx2"))) static void run_d(enum fn f, const float *x, const float *e,
						   float *y, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), r;

		switch (f) {
		case FN_EXP: r = _ZGVdN8v_expf(v); break;
		case FN_LOG: r = _ZGVdN8v_logf(v); break;
		case FN_TANH: r = _ZGVdN8v_tanhf(v); break;
		case FN_ERF: r = _ZGVdN8v_erff(v); break;
		case FN_POW: r = _ZGVdN8vv_powf(v, _mm256_loadu_ps(e + i)); break;
		default: r = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_setzero_ps(), v)); break;
		}
		_mm256_storeu_ps(y + i, r);
	}
}

__attribute__((target("avx512f"))) static void run_e(enum fn f, const float *x, const float *e,
						      float *y, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i), r;

		switch (f) {
		case FN_EXP: r = _ZGVeN16v_expf(v); break;
		case FN_LOG: r = _ZGVeN16v_logf(v); break;
		case FN_TANH: r = _ZGVeN16v_tanhf(v); break;
		case FN_ERF: r = _ZGVeN16v_erff(v); break;
		case FN_POW: r = _ZGVeN16vv_powf(v, _mm512_loadu_ps(e + i)); break;
		default: r = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), v)); break;
		}
		_mm512_storeu_ps(y + i, r);
	}
}

static double reference(enum fn f, float x, float e)
{
	switch (f) {
	case FN_EXP: return exp(x);
	case FN_LOG: return log(x);
	case FN_TANH: return tanh(x);
	case FN_ERF: return erf(x);
	case FN_POW: return pow(x, e);
	case FN_RT_EXP: return exp(x);
	default: return 1 / (1 + exp(-(double)x));
	}
}

static float bits_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * |r - ref| in units of the last place of floats at ref (subnormal spacing
 * 2^-149 below FLT_MIN); 0 when both are NaN or the same infinity, +Inf when
 * only one is NaN or r is an infinity that ref does not round to.
 */
static double ulp_error(float r, double ref)
{
	double a = fabs(ref);
	int ex;

	if (isnan(ref) || isnan(r))
		return isnan(ref) && isnan(r) ? 0 : INFINITY;
	if (isinf(r))
		return r == (float)ref ? 0 : INFINITY;
	if (a < FLT_MIN)
		return fabs(r - ref) / 0x1p-149;
	frexp(a < FLT_MAX ? a : FLT_MAX, &ex);
	return fabs(r - ref) / ldexp(1, ex - 24);
}

/* The exponents powf is tested with: integers, halves, reciprocals, large ones */
static const float pow_exps[] = { 2, 3, 0.5f, -1, 1, -2, 1.7f, -0.3f, 0.1f, 10, -10, 33.3f,
				  1.0f / 3 };

static const uint32_t specials[] = {
	0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
	0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x80800000, 0x7f7fffff,
	0xff7fffff, 0x3f800000, 0xbf800000,
	0x42b17217, 0x42b17218, 0x42b17219,	/* expf overflow: ln(FLT_MAX) ~ 88.7228 */
	0xc2ce8ed0, 0xc2ce8ec0, 0xc2cff1b4, 0xc2cff1b5,	/* expf underflow: -103.28, -103.97 */
	0xc2aeac4f, 0xc2aeac50,	/* expf's result becomes subnormal: -87.336 */
	0x41100000, 0xc1100000, 0x40e00000,	/* erff/tanhf saturation: 9, -9, 7 */
	0x39800000, 0xb9800000,	/* 2^-12: small-argument paths */
};

/* The inputs (and exponents for powf), padded with 1.0 to a multiple of 16. */
static size_t inputs(enum fn f, float **xs, float **es)
{
	size_t cap = ((size_t)2 << (32 - SHIFT)) + ARRAY_SIZE(specials) + 16, n = 0;
	size_t ne = f == FN_POW ? ARRAY_SIZE(pow_exps) : 1;
	int shift = f == FN_POW ? SHIFT + 4 : SHIFT;
	float *x = malloc(sizeof(float) * cap * ne), *e = malloc(sizeof(float) * cap * ne);

	for (size_t k = 0; k < ne; k++) {
		float ek = f == FN_POW ? pow_exps[k] : 0;

		for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += (uint64_t)1 << shift) {
			x[n] = bits_float((uint32_t)u);
			e[n++] = ek;
		}
		for (size_t i = 0; i < ARRAY_SIZE(specials); i++) {
			x[n] = bits_float(specials[i]);
			e[n++] = ek;
		}
	}
	while (n % 16) {
		x[n] = 1;
		e[n++] = 1;
	}
	*xs = x;
	*es = e;
	return n;
}

/* The error f may have: libmvec's bound or rt_expf_poly's; a sigmoid's one more. */
static double bound(enum fn f)
{
	double b = f == FN_RT_EXP || f == FN_RT_SIGMOID ? RT_MAX_ULP : MAX_ULP;

	return f == FN_SIGMOID || f == FN_RT_SIGMOID ? b + 1 : b;
}

/* The largest error of f's variant isa over its inputs; -1 when this CPU lacks isa. */
static double max_error(enum fn f, char isa)
{
	float *x, *e, *y;
	size_t n;
	double worst = 0;

	if ((isa == 'c' && !__builtin_cpu_supports("avx")) ||
	    (isa == 'd' && !__builtin_cpu_supports("avx2")) ||
	    (isa == 'e' && !__builtin_cpu_supports("avx512f")))
		return -1;
	n = inputs(f, &x, &e);
	y = malloc(sizeof(float) * n);
	if (f == FN_RT_EXP || f == FN_RT_SIGMOID) {
		switch (isa) {
		case 'b': rt_run_b(f, x, y, n); break;
		case 'd': rt_run_d(f, x, y, n); break;
		default: rt_run_e(f, x, y, n); break;
		}
	} else {
		switch (isa) {
		case 'b': run_b(f, x, e, y, n); break;
		case 'c': run_c(f, x, e, y, n); break;
		case 'd': run_d(f, x, e, y, n); break;
		default: run_e(f, x, e, y, n); break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		double err;

		/* the kernels' sigmoid, 1 / (1 + exp(-x)), from the vector exp */
		if (f == FN_SIGMOID || f == FN_RT_SIGMOID)
			y[i] = 1 / (1 + y[i]);
		err = ulp_error(y[i], reference(f, x[i], e[i]));
		/*
		 * sigmoid below -88.72: exp(-x) overflows to +Inf and the
		 * result is 0 where the reference is a subnormal or a
		 * normal under 2^-126: an absolute error below FLT_MIN
		 */
		if ((f == FN_SIGMOID || f == FN_RT_SIGMOID) && isinf(1 / y[i]) &&
		    fabs(reference(f, x[i], 0)) < FLT_MIN)
			err = 0;
		if (err > worst) {
			if (err > bound(f))
				fprintf(stderr, "  %s %c: x=%a e=%a: %a, reference %a (%g ulp)\n",
					fn_names[f], isa, x[i], e[i], y[i], reference(f, x[i], e[i]),
					err);
			worst = err;
		}
	}
	free(x);
	free(e);
	free(y);
	return worst;
}

static void check(enum fn f)
{
	bool rt = f == FN_RT_EXP || f == FN_RT_SIGMOID;

	for (const char *isa = rt ? "bde" : "bcde"; *isa; isa++) {
		double err = max_error(f, *isa);

		if (err < 0)
			continue;
		fprintf(stderr, "  %-12s %c: max %.3f ulp\n", fn_names[f], *isa, err);
		ASSERT_TRUE(err <= bound(f));
	}
}

static void test_expf(void) { check(FN_EXP); }
static void test_logf(void) { check(FN_LOG); }
static void test_tanhf(void) { check(FN_TANH); }
static void test_erff(void) { check(FN_ERF); }
static void test_powf(void) { check(FN_POW); }
static void test_sigmoid(void) { check(FN_SIGMOID); }
static void test_rt_expf_poly(void) { check(FN_RT_EXP); }
static void test_rt_sigmoid(void) { check(FN_RT_SIGMOID); }

/* The harness itself: an error it must catch. */
static void test_ulp_error(void)
{
	ASSERT_TRUE(ulp_error(1.0f, 1.0) == 0);
	ASSERT_TRUE(ulp_error(nextafterf(1.0f, 2), 1.0) == 1);
	ASSERT_TRUE(ulp_error(0x1p-149f, 0) == 1);
	ASSERT_TRUE(isinf(ulp_error(NAN, 1.0)));
	ASSERT_TRUE(isinf(ulp_error(1.0f, NAN)));
	ASSERT_TRUE(ulp_error(NAN, NAN) == 0);
	ASSERT_TRUE(isinf(ulp_error(INFINITY, FLT_MAX)));
	ASSERT_TRUE(ulp_error(INFINITY, 1e39) == 0);
}

TESTS({ "ulp_error", test_ulp_error }, { "expf", test_expf }, { "logf", test_logf },
      { "tanhf", test_tanhf }, { "erff", test_erff }, { "powf", test_powf },
      { "sigmoid", test_sigmoid }, { "rt_expf_poly", test_rt_expf_poly },
      { "rt_sigmoid", test_rt_sigmoid })

#else
/* no libmvec (not x86-64 glibc >= 2.35): the kernels call scalar libm */
static void test_none(void) { ASSERT_TRUE(1); }

TESTS({ "no-libmvec", test_none })
#endif
