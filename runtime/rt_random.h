/*
 * rt_random.h - the random ops of the generated code (RandomUniform,
 * RandomNormal and their Like variants, Bernoulli, Multinomial,
 * training-mode Dropout). Included by rt_model.h; the compiler includes it
 * too, for rt_rand_seed_key (a seed attribute becomes a key at compile time)
 * and the unit test.
 *
 * The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11), written here from the
 * paper's description and checked against Random123's known answers
 * (tests/unit/random_test.c). It is counter based: element i of an op's
 * output is a pure function of (key, i), so any thread may compute any
 * element, in any order, and the values do not depend on the thread count.
 *
 * Keys, collagec's choice (ONNX leaves it open):
 *  - with a seed attribute the key is a hash of the seed alone: the op
 *    gives the same values on every run, in every handle and process, and
 *    two ops with the same seed give the same values. (ONNX Runtime
 *    advances its generator from run to run instead.)
 *  - without one, every execution of the op draws a fresh key: a
 *    process-wide atomic counter (rt_rand_counter) mixed with a base that
 *    rt_rand_init takes from the clock and the process id when the first
 *    model is opened. Values differ from run to run and from node to node;
 *    handles on several threads draw distinct keys without a lock.
 *
 * Conversions: a float (and float16/bfloat16) uniform in [0, 1) is 24
 * random bits times 2^-24, a double one 53 bits times 2^-53; where a
 * logarithm needs it, 1 - u is used instead, which is never 0. Normal
 * values come from Box-Muller on two uniforms (the cosine half).
 *
 *	// float y[n] in [0, 1); a fresh key per call (has_seed 0)
 *	rt_rand_uniform(y, 1, n, 0.0, 1.0, 0, 0, threads);
 */
#ifndef COLLAGEC_RT_RANDOM_H
#define COLLAGEC_RT_RANDOM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rt_half.h"
#include "rt_par.h"

/* ---- Philox4x32-10 ---- */

#define RT_PHILOX_M0 0xD2511F53u	/* the round multipliers */
#define RT_PHILOX_M1 0xCD9E8D57u
#define RT_PHILOX_W0 0x9E3779B9u	/* the key schedule: golden ratio, sqrt(3) - 1 */
#define RT_PHILOX_W1 0xBB67AE85u

/*
 * One Philox4x32-10 block: ctr[4] under key[2], into out[4] (out may be
 * ctr). Each round multiplies two words into 64-bit products, exchanges
 * their halves with the other two words and the key, and bumps the key.
 */
static inline void rt_philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];

	for (int r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)RT_PHILOX_M0 * c0, p1 = (uint64_t)RT_PHILOX_M1 * c2;

		c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
		c1 = (uint32_t)p1;
		c3 = (uint32_t)p0;
		k0 += RT_PHILOX_W0;
		k1 += RT_PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

/* The four words of element i of the stream of key. */
static inline void rt_rand_block(uint64_t key, uint64_t i, uint32_t w[4])
{
	uint32_t ctr[4] = { (uint32_t)i, (uint32_t)(i >> 32), 0, 0 };
	uint32_t k[2] = { (uint32_t)key, (uint32_t)(key >> 32) };

	rt_philox(ctr, k, w);
}

/* splitmix64's finaliser: spreads every input bit over the whole word. */
static inline uint64_t rt_rand_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/*
 * The key of a seed attribute: the bits of the seed (a float, or Dropout's
 * int) widened to double, hashed. A pure function of the seed.
 */
static inline uint64_t rt_rand_seed_key(double seed)
{
	uint64_t u;

	if (seed == 0)
		seed = 0;	/* -0.0 and 0.0 are one seed */
	memcpy(&u, &seed, sizeof(u));
	/* 63 bits: the key is printed as an int64 literal in kernels */
	return rt_rand_mix(u ^ 0x5EED5EED5EED5EEDull) >> 1;
}

/*
 * The compiler stops here (RT_RANDOM_KEYS_ONLY): it needs the seed keys,
 * not the run-time state or the ops.
 */
#ifndef RT_RANDOM_KEYS_ONLY

/* ---- fresh keys (the state lives in rt_model.c) ---- */

#include <stdatomic.h>

extern _Atomic uint64_t rt_rand_counter __attribute__((visibility("hidden")));
extern _Atomic uint64_t rt_rand_base __attribute__((visibility("hidden")));

/* A key no other execution of a random op in this process has had. */
static inline uint64_t rt_rand_fresh_key(void)
{
	uint64_t c = rt_rand_counter++;		/* atomic fetch-and-add */

	return rt_rand_mix(rt_rand_base + c * 0x9E3779B97F4A7C15ull);
}

/* The key of an op: its seed's when it has one, else a fresh one. */
static inline uint64_t rt_rand_key(int64_t has_seed, int64_t seed_key)
{
	return has_seed ? (uint64_t)seed_key : rt_rand_fresh_key();
}

/* ---- uniforms ---- */

/* [0, 1) from the top 24 bits of w. */
static inline float rt_rand_f24(uint32_t w)
{
	return (float)(w >> 8) * 0x1p-24f;
}

/* [0, 1) from 53 bits of a and b. */
static inline double rt_rand_d53(uint32_t a, uint32_t b)
{
	return (double)(((uint64_t)a << 21) ^ (b >> 11)) * 0x1p-53;
}

/* Whether a collagec_dtype is double (values then use 53 bits). */
static inline int rt_rand_dbl(int dtype)
{
	return dtype == 11;
}

/* ---- element access by collagec_dtype (the ONNX numbers) ---- */

/* Element i of float tensor x as a double. */
static inline double rt_rand_get(const void *x, int dtype, int64_t i)
{
	switch (dtype) {
	case 11: return ((const double *)x)[i];
	case 10: return rt_h2f(((const uint16_t *)x)[i]);
	case 16: return rt_bf2f(((const uint16_t *)x)[i]);
	default: return ((const float *)x)[i];
	}
}

/* y[i] = v converted to dtype (v is 0 or 1 for the integer types). */
static inline void rt_rand_put(void *y, int dtype, int64_t i, double v)
{
	switch (dtype) {
	case 1: ((float *)y)[i] = (float)v; break;
	case 11: ((double *)y)[i] = v; break;
	case 10: ((uint16_t *)y)[i] = rt_d2h(v); break;
	case 16: ((uint16_t *)y)[i] = rt_d2bf(v); break;
	case 2: case 9: ((uint8_t *)y)[i] = (uint8_t)v; break;
	case 3: ((int8_t *)y)[i] = (int8_t)v; break;
	case 4: ((uint16_t *)y)[i] = (uint16_t)v; break;
	case 5: ((int16_t *)y)[i] = (int16_t)v; break;
	case 6: ((int32_t *)y)[i] = (int32_t)v; break;
	case 7: ((int64_t *)y)[i] = (int64_t)v; break;
	case 12: ((uint32_t *)y)[i] = (uint32_t)v; break;
	case 13: ((uint64_t *)y)[i] = (uint64_t)v; break;
	}
}

/* ---- the ops; the trailing threads is the c target's extern argument ---- */

/*
 * Elements are independent: big tensors split over the model's threads
 * (rt_par_for), each element i computed from (key, i) wherever it runs.
 */
struct rt_rand_job {
	void *y, *mask;
	const void *x;			/* Bernoulli's p, Dropout's x */
	int dtype, xdtype;
	int dbl, train, has_mask;
	double a, b;			/* low and high, mean and scale, or ratio and scale */
	uint64_t key;
};

/* job over [0, n): on threads threads when n is big enough to pay */
static inline void rt_rand_run(void (*fn)(void *, int64_t, int64_t), struct rt_rand_job *j,
			       int64_t n, int threads)
{
	if (threads > 1 && n >= 65536)
		rt_par_for(threads, n, 4096, fn, j);
	else if (n > 0)
		fn(j, 0, n);
}

/* Uniform i of the stream of key in [0, 1): 53 bits when dbl, else 24. */
static inline double rt_rand_unit(uint64_t key, int64_t i, int dbl)
{
	uint32_t w[4];

	rt_rand_block(key, (uint64_t)i, w);
	return dbl ? rt_rand_d53(w[0], w[1]) : rt_rand_f24(w[0]);
}

static void rt_rand_uniform_some(void *v, int64_t i0, int64_t i1)
{
	const struct rt_rand_job *j = v;

	for (int64_t i = i0; i < i1; i++)
		rt_rand_put(j->y, j->dtype, i, j->a + (j->b - j->a) * rt_rand_unit(j->key, i, j->dbl));
}

/* RandomUniform(Like): y[i] = low + (high - low) u_i. */
static inline void rt_rand_uniform(void *y, int64_t dtype, int64_t n, double low, double high,
				   int64_t has_seed, int64_t seed_key, int threads)
{
	struct rt_rand_job j = { .y = y, .dtype = (int)dtype, .dbl = rt_rand_dbl((int)dtype),
				 .a = low, .b = high, .key = rt_rand_key(has_seed, seed_key) };

	rt_rand_run(rt_rand_uniform_some, &j, n, threads);
}

static void rt_rand_normal_some(void *v, int64_t i0, int64_t i1)
{
	const struct rt_rand_job *j = v;

	for (int64_t i = i0; i < i1; i++) {
		uint32_t w[4];
		double z;

		rt_rand_block(j->key, (uint64_t)i, w);
		if (j->dbl) {
			z = sqrt(-2.0 * log(1.0 - rt_rand_d53(w[0], w[1]))) *
			    cos(6.283185307179586 * rt_rand_d53(w[2], w[3]));
		} else {
			float u = 1.0f - rt_rand_f24(w[0]), t = rt_rand_f24(w[1]);

			z = sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * t);
		}
		rt_rand_put(j->y, j->dtype, i, j->a + j->b * z);
	}
}

/* RandomNormal(Like): y[i] = mean + scale sqrt(-2 ln(1 - u)) cos(2 pi v). */
static inline void rt_rand_normal(void *y, int64_t dtype, int64_t n, double mean, double scale,
				  int64_t has_seed, int64_t seed_key, int threads)
{
	struct rt_rand_job j = { .y = y, .dtype = (int)dtype, .dbl = rt_rand_dbl((int)dtype),
				 .a = mean, .b = scale, .key = rt_rand_key(has_seed, seed_key) };

	rt_rand_run(rt_rand_normal_some, &j, n, threads);
}

static void rt_rand_bernoulli_some(void *v, int64_t i0, int64_t i1)
{
	const struct rt_rand_job *j = v;

	for (int64_t i = i0; i < i1; i++)
		rt_rand_put(j->y, j->dtype, i,
			    rt_rand_unit(j->key, i, j->dbl) < rt_rand_get(j->x, j->xdtype, i) ? 1 : 0);
}

/* Bernoulli: y[i] = u_i < p[i] (1 or 0 in y's type). */
static inline void rt_rand_bernoulli(const void *p, int64_t pdtype, void *y, int64_t ydtype,
				     int64_t n, int64_t has_seed, int64_t seed_key, int threads)
{
	struct rt_rand_job j = { .y = y, .x = p, .dtype = (int)ydtype, .xdtype = (int)pdtype,
				 .dbl = rt_rand_dbl((int)pdtype),
				 .key = rt_rand_key(has_seed, seed_key) };

	rt_rand_run(rt_rand_bernoulli_some, &j, n, threads);
}

/*
 * Multinomial: for each of the batch rows of x (classes unnormalised log
 * probabilities), samples class indices into y (int32 or int64, batch x
 * samples). Sample j of row b is element b * samples + j of the stream: a
 * double uniform times the row's total of exp(x - max), then the first
 * class whose running sum exceeds it (a scan per sample: no scratch
 * memory). A row with no positive finite total (NaN, all -inf) gives 0s.
 */
static inline double rt_rand_row_exp(const void *x, int64_t xdtype, int64_t row, int64_t c,
				     double mx)
{
	return exp(rt_rand_get(x, (int)xdtype, row + c) - mx);
}

static inline void rt_rand_multinomial(const void *x, int64_t xdtype, void *y, int64_t ydtype,
				       int64_t batch, int64_t classes, int64_t samples,
				       int64_t has_seed, int64_t seed_key, int threads)
{
	uint64_t key = rt_rand_key(has_seed, seed_key);

	(void)threads;
	for (int64_t b = 0; b < batch; b++) {
		int64_t row = b * classes;
		double mx = -INFINITY, t = 0;

		for (int64_t c = 0; c < classes; c++) {
			double v = rt_rand_get(x, (int)xdtype, row + c);

			mx = v > mx ? v : mx;
		}
		for (int64_t c = 0; c < classes; c++)
			t += rt_rand_row_exp(x, xdtype, row, c, mx);
		for (int64_t j = 0; j < samples; j++) {
			uint32_t w[4];
			double u, s = 0;
			int64_t c = 0;

			rt_rand_block(key, (uint64_t)(b * samples + j), w);
			u = rt_rand_d53(w[0], w[1]) * t;
			if (t > 0 && t < INFINITY)
				for (c = 0; c < classes - 1; c++) {
					s += rt_rand_row_exp(x, xdtype, row, c, mx);
					if (s > u)
						break;
				}
			rt_rand_put(y, (int)ydtype, b * samples + j, (double)c);
		}
	}
}

static void rt_rand_dropout_some(void *v, int64_t i0, int64_t i1)
{
	const struct rt_rand_job *j = v;
	double r = j->a, scale = j->b;

	for (int64_t i = i0; i < i1; i++) {
		uint32_t w[4];
		double u, x = rt_rand_get(j->x, j->dtype, i);
		int keep = 1;

		if (j->train) {
			rt_rand_block(j->key, (uint64_t)i, w);
			u = j->dbl ? rt_rand_d53(w[0], w[1]) : rt_rand_f24(w[0]);
			keep = r < 1 && u >= r;
			x = keep ? (j->dtype == 11 ? x * scale : (float)x * (float)scale) : 0;
		}
		rt_rand_put(j->y, j->dtype, i, x);
		if (j->has_mask)
			((uint8_t *)j->mask)[i] = (uint8_t)keep;
	}
}

/*
 * Dropout in training mode: mask[i] = u_i >= ratio, y[i] = x[i] * mask[i] *
 * (1 / (1 - ratio)) with the scale rounded to x's type first, as ONNX's
 * reference computes it. ratio is read at run time (rdtype 0: absent, 0.5),
 * as is training (false: y = x, mask all true); mask is written when
 * has_mask. A ratio of 1 or more drops everything.
 */
static inline void rt_rand_dropout(const void *x, int64_t dtype, void *y, void *mask,
				   int64_t has_mask, int64_t n, const void *ratio, int64_t rdtype,
				   const uint8_t *training, int64_t has_seed, int64_t seed_key,
				   int threads)
{
	double r = rdtype ? rt_rand_get(ratio, (int)rdtype, 0) : 0.5;
	struct rt_rand_job j = { .y = y, .mask = mask, .x = x, .dtype = (int)dtype,
				 .dbl = rt_rand_dbl((int)dtype), .train = training[0] != 0,
				 .has_mask = (int)has_mask, .a = r, .b = r < 1 ? 1.0 / (1.0 - r) : 0,
				 .key = rt_rand_key(has_seed, seed_key) };

	if (!j.dbl)
		j.b = (float)j.b;	/* numpy: float32 x times a float32 scale */
	rt_rand_run(rt_rand_dropout_some, &j, n, threads);
}

#endif /* RT_RANDOM_KEYS_ONLY */

#endif
