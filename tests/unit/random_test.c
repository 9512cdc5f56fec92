/*
 * random_test.c - runtime/rt_random.h: Philox4x32-10 against the known
 * answers published with Random123 (tests/kat_vectors, the three
 * "philox4x32 10" lines), the seed keys as pure functions of the seed, the
 * fresh keys as all different, and the ops' edge cases that the statistical
 * suite (tests/random.sh) cannot see: ranges, ratio 0 and 1, all -inf rows.
 */
#include "test.h"
#include "../../runtime/rt_random.h"
#include "../../runtime/rt_par.c"

_Atomic uint64_t rt_rand_counter __attribute__((visibility("hidden")));
_Atomic uint64_t rt_rand_base __attribute__((visibility("hidden")));

static void kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
		uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
	uint32_t ctr[4] = { c0, c1, c2, c3 }, key[2] = { k0, k1 }, out[4];

	rt_philox(ctr, key, out);
	ASSERT(r0, out[0]);
	ASSERT(r1, out[1]);
	ASSERT(r2, out[2]);
	ASSERT(r3, out[3]);
}

static void test_philox_kat(void)
{
	kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
	kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
	    0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
	kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
	    0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1);
}

static void test_keys(void)
{
	uint64_t a = rt_rand_fresh_key(), b = rt_rand_fresh_key();

	ASSERT_TRUE(rt_rand_seed_key(1.0) == rt_rand_seed_key(1.0));
	ASSERT_TRUE(rt_rand_seed_key(1.0) != rt_rand_seed_key(2.0));
	ASSERT_TRUE(rt_rand_seed_key(0.0) == rt_rand_seed_key(-0.0));
	ASSERT_TRUE(rt_rand_seed_key(3.0) >> 63 == 0);
	ASSERT_TRUE(a != b);
	ASSERT_TRUE(rt_rand_key(1, 42) == 42);
}

static void test_uniform(void)
{
	static float y[1000], z[1000], big1[100000], big4[100000];
	double d[1000];

	rt_rand_uniform(y, 1, 1000, -2.0, 3.0, 1, 77, 1);
	rt_rand_uniform(z, 1, 1000, -2.0, 3.0, 1, 77, 4);
	ASSERT(0, memcmp(y, z, sizeof(y)));
	/* big enough for the thread pool: the same numbers on 4 threads */
	rt_rand_uniform(big1, 1, 100000, -2.0, 3.0, 1, 77, 1);
	rt_rand_uniform(big4, 1, 100000, -2.0, 3.0, 1, 77, 4);
	ASSERT(0, memcmp(big1, big4, sizeof(big1)));
	ASSERT(0, memcmp(y, big1, sizeof(y)));
	for (int i = 0; i < 1000; i++)
		ASSERT_TRUE(y[i] >= -2.0f && y[i] <= 3.0f);
	rt_rand_uniform(d, 11, 1000, 0.0, 1.0, 0, 0, 1);
	for (int i = 0; i < 1000; i++)
		ASSERT_TRUE(d[i] >= 0 && d[i] < 1);
	rt_rand_uniform(z, 1, 1000, -2.0, 3.0, 0, 0, 1);
	ASSERT_TRUE(memcmp(y, z, sizeof(y)) != 0);
}

static void test_normal_finite(void)
{
	float y[4096];

	rt_rand_normal(y, 1, 4096, 0.0, 1.0, 1, 5, 1);
	for (int i = 0; i < 4096; i++)
		ASSERT_TRUE(isfinite(y[i]));
}

static void test_dropout_edges(void)
{
	float x[64], y[64], r0 = 0, r1 = 1;
	uint8_t m[64], on = 1, off = 0;

	for (int i = 0; i < 64; i++)
		x[i] = (float)i - 10.5f;
	rt_rand_dropout(x, 1, y, m, 1, 64, &r0, 1, &on, 0, 0, 1);
	ASSERT(0, memcmp(x, y, sizeof(x)));
	for (int i = 0; i < 64; i++)
		ASSERT(1, m[i]);
	rt_rand_dropout(x, 1, y, m, 1, 64, &r1, 1, &on, 0, 0, 1);
	for (int i = 0; i < 64; i++)
		ASSERT_TRUE(y[i] == 0 && m[i] == 0);
	rt_rand_dropout(x, 1, y, m, 1, 64, &r1, 1, &off, 0, 0, 1);
	ASSERT(0, memcmp(x, y, sizeof(x)));
}

static void test_multinomial_edges(void)
{
	float x[6] = { -INFINITY, -INFINITY, -INFINITY, 0, -INFINITY, -INFINITY };
	int64_t y[20];

	rt_rand_multinomial(x, 1, y, 7, 2, 3, 10, 1, 9, 1);
	for (int j = 0; j < 10; j++) {
		ASSERT(0, y[j]);	/* no finite probability: class 0 */
		ASSERT(0, y[10 + j]);	/* all the mass on class 0 */
	}
	x[3] = -INFINITY;
	x[5] = 0;
	rt_rand_multinomial(x, 1, y, 7, 2, 3, 10, 1, 9, 1);
	for (int j = 0; j < 10; j++)
		ASSERT(2, y[10 + j]);
}

TESTS({ "philox_kat", test_philox_kat }, { "keys", test_keys }, { "uniform", test_uniform },
      { "normal_finite", test_normal_finite }, { "dropout_edges", test_dropout_edges },
      { "multinomial_edges", test_multinomial_edges })
