/*
 * cgemv_test.c - backends/c/rt_cgemm.h's GEMV form (rt_cgemm with at most
 * RT_CG_GV_MR rows) against its micro-kernel tiles (rt_cg_panels, which
 * rt_cgemm runs for more rows): the same bits for every row count the form
 * takes, narrow last panels, odd panel counts, several K blocks, each
 * epilogue (bias by column, by row or one value, alpha and beta, Relu,
 * Clip, the residual), on 1 and 3 threads. RT_CG_GV_MR is set to 4, so
 * that every row count runs whatever ISA this test is built for.
 */
#include "test.h"

#include <stdint.h>
#include <stdlib.h>

#define RT_CG_GV_MR 4
#include "../../runtime/rt_par.c"
#include "../../backends/c/rt_cgemm.h"

static float rnd(void)
{
	return (float)(rand() % 2001 - 1000) / 997.0f;
}

/* rows M of A [M, K] x B [K, N] with epilogue kind ep, both ways; 1 when the bits agree */
static int same_bits(int64_t M, int64_t N, int64_t K, int ep, int threads)
{
	int64_t np = (N + RT_CG_NR - 1) / RT_CG_NR;
	float *a = malloc(sizeof(float) * (size_t)(M * K + 1));
	float *b = malloc(sizeof(float) * (size_t)(K * N + 1));
	float *bp = aligned_alloc(64, sizeof(float) * (size_t)(np * RT_CG_NR * K + 16));
	size_t mn = sizeof(float) * (size_t)(M * N);
	float *c1 = malloc(mn), *c2 = malloc(mn), *bias = malloc(mn), *res = malloc(mn);
	float ap[RT_CG_MC * RT_CG_KC] __attribute__((aligned(64)));
	/* ep: 0 none, 1 bias per column, 2 per row + Relu, 3 one value + Clip, 4 residual */
	int act = ep == 2 || ep == 4 ? RT_CG_ACT_RELU : ep == 3 ? RT_CG_ACT_CLIP : RT_CG_ACT_NONE;
	struct rt_cg_epilogue e = { ep == 3 ? 0.5f : 1.0f, ep == 1 ? 2.0f : 0.75f,
				    ep >= 1 && ep <= 3 ? bias : NULL, ep == 2 ? 1 : 0, ep == 1,
				    act, -0.25f, 0.5f, ep == 4 ? res : NULL, N };
	int same;

	for (int64_t i = 0; i < M * K; i++)
		a[i] = rnd();
	for (int64_t i = 0; i < K * N; i++)
		b[i] = rnd();
	for (int64_t i = 0; i < M * N; i++) {
		bias[i] = rnd();
		res[i] = rnd();
	}
	rt_cgemm_pack(K, N, b, N, 1, bp, 1);
	rt_cg_panels(M, N, K, a, K, 1, bp, K * RT_CG_NR, c1, N, 0, np, &e, ap, RT_CG_PACK_MIN);
	rt_cgemm(M, N, K, e.alpha, a, K, 1, bp, K * RT_CG_NR, c2, N, e.bias, e.brs, e.bcs, e.beta,
		 e.act, e.lo, e.hi, e.res, N, threads);
	same = !memcmp(c1, c2, mn);
	free(a);
	free(b);
	free(bp);
	free(c1);
	free(c2);
	free(bias);
	free(res);
	return same;
}

static void sweep(int threads)
{
	static const int64_t ns[] = { 1, 5, 16, 24, 40, 49, 512 + 16 }, ks[] = { 1, 17, 300, 600 };

	for (int64_t m = 1; m <= RT_CG_GV_MR; m++)
		for (size_t n = 0; n < sizeof(ns) / sizeof(ns[0]); n++)
			for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
				for (int ep = 0; ep < 5; ep++)
					ASSERT(1000000 * m + 1000 * ns[n] + ks[k],
					       same_bits(m, ns[n], ks[k], ep, threads) ?
					       1000000 * m + 1000 * ns[n] + ks[k] : ep);
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
