/*
 * cgemv16_test.c - backends/c/rt_cgemm.h's GEMV form on 16-bit panels
 * (rt_cgemm16, B packed in float16 or bfloat16 by rt_cgemm_pack16) against
 * rt_cgemm on the same values widened to float: the same bits for 1 to 9
 * rows (groups of RT_CG_GV_MR, and against rt_cgemm's tiles past it),
 * narrow last panels, odd panel counts, several K blocks, on 1 and 3
 * threads. Built for this host (AVX-512's vcvtph2ps), for x86-64-v3 (F16C)
 * and for x86-64 (rt_half.h's C).
 */
#include "test.h"

#include <stdint.h>
#include <stdlib.h>

#include "../../runtime/rt_half.h"
#include "../../runtime/rt_par.c"
#include "../../backends/c/rt_cgemm.h"

static float rnd(void)
{
	return (float)(rand() % 2001 - 1000) / 997.0f;
}

/* rows M of A [M, K] x B [K, N] (B 16-bit: bfloat16 when bf) both ways; 1 when the bits agree */
static int same_bits(int64_t M, int64_t N, int64_t K, int bf, int threads)
{
	int64_t np = (N + RT_CG_NR - 1) / RT_CG_NR, pn = np * RT_CG_NR * K + 16;
	float *a = malloc(sizeof(float) * (size_t)(M * K + 1));
	uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(K * N + 1));
	float *b = malloc(sizeof(float) * (size_t)(K * N + 1));
	float *bp = aligned_alloc(64, sizeof(float) * (size_t)pn);
	uint16_t *hp = aligned_alloc(64, sizeof(uint16_t) * (size_t)(pn + 32));
	size_t mn = sizeof(float) * (size_t)(M * N);
	float *c1 = malloc(mn), *c2 = malloc(mn);
	int same;

	for (int64_t i = 0; i < M * K; i++)
		a[i] = rnd();
	for (int64_t i = 0; i < K * N; i++) {
		h[i] = bf ? rt_f2bf(rnd()) : rt_f2h(rnd());
		b[i] = bf ? rt_bf2f(h[i]) : rt_h2f(h[i]);
	}
	rt_cgemm_pack(K, N, b, N, 1, bp, 1);
	rt_cgemm_pack16(K, N, h, N, 1, hp);
	rt_cgemm(M, N, K, 1.0f, a, K, 1, bp, K * RT_CG_NR, c1, N, NULL, 0, 0, 0.0f,
		 RT_CG_ACT_NONE, 0.0f, 0.0f, NULL, N, threads);
	memset(c2, 0xff, mn);
	rt_cgemm16(M, N, K, a, K, 1, hp, K * RT_CG_NR, bf, c2, N, threads);
	same = !memcmp(c1, c2, mn);
	free(a);
	free(h);
	free(b);
	free(bp);
	free(hp);
	free(c1);
	free(c2);
	return same;
}

static void sweep(int threads)
{
	static const int64_t ns[] = { 1, 5, 16, 24, 40, 49, 512 + 16 }, ks[] = { 1, 17, 300, 600 };

	for (int bf = 0; bf < 2; bf++)
		for (int64_t m = 1; m <= 9; m++)
			for (size_t n = 0; n < sizeof(ns) / sizeof(ns[0]); n++)
				for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
					ASSERT(10000000 * bf + 1000000 * m + 1000 * ns[n] + ks[k],
					       same_bits(m, ns[n], ks[k], bf, threads) ?
					       10000000 * bf + 1000000 * m + 1000 * ns[n] + ks[k] : -1);
}

static void test_one_thread(void)
{
	sweep(1);
}

static void test_three_threads(void)
{
	sweep(3);
}

TESTS({ "one_thread", test_one_thread }, { "three_threads", test_three_threads })
