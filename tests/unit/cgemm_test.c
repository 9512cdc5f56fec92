/*
 * cgemm_test.c - backends/c/rt_cgemm.h's micro-kernel tiles, built for
 * this host as the generated code is (-march=native, the Makefile says):
 * with AVX-512 a tile spans two panels (RT_CG_NP), and every C[i, j] must
 * come out with the bits a one-panel tile gives it, whether A is packed or
 * read in place; on any ISA the sums must match a double-precision
 * reference, and rt_cgemm must give the same bits on 1 and 3 threads. Row
 * counts past a tile, narrow and odd last panels, several K blocks, each
 * epilogue.
 */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../runtime/rt_par.c"
#include "../../backends/c/rt_cgemm.h"

static float rnd(void)
{
	return (float)(rand() % 2001 - 1000) / 997.0f;
}

struct gemm {
	int64_t M, N, K, np;
	float *a, *b, *bp, *bias, *res, *ap;
	struct rt_cg_epilogue e;
};

/* ep: 0 none, 1 bias per column, 2 per row + Relu, 3 one value + Clip, 4 residual */
static void gemm_init(struct gemm *g, int64_t M, int64_t N, int64_t K, int ep)
{
	int act = ep == 2 || ep == 4 ? RT_CG_ACT_RELU : ep == 3 ? RT_CG_ACT_CLIP : RT_CG_ACT_NONE;

	g->M = M, g->N = N, g->K = K;
	g->np = (N + RT_CG_NR - 1) / RT_CG_NR;
	g->a = malloc(sizeof(float) * (size_t)(M * K + 1));
	g->b = malloc(sizeof(float) * (size_t)(K * N + 1));
	g->bp = aligned_alloc(64, sizeof(float) * (size_t)(g->np * RT_CG_NR * K + 16));
	g->bias = malloc(sizeof(float) * (size_t)(M * N));
	g->res = malloc(sizeof(float) * (size_t)(M * N));
	g->ap = aligned_alloc(64, sizeof(float) * RT_CG_MC * RT_CG_KC);
	g->e = (struct rt_cg_epilogue){ ep == 3 ? 0.5f : 1.0f, ep == 1 ? 2.0f : 0.75f,
					ep >= 1 && ep <= 3 ? g->bias : NULL, ep == 2 ? 1 : 0,
					ep == 1, act, -0.25f, 0.5f, ep == 4 ? g->res : NULL, N };
	for (int64_t i = 0; i < M * K; i++)
		g->a[i] = rnd();
	for (int64_t i = 0; i < K * N; i++)
		g->b[i] = rnd();
	for (int64_t i = 0; i < M * N; i++) {
		g->bias[i] = rnd();
		g->res[i] = rnd();
	}
	rt_cgemm_pack(K, N, g->b, N, 1, g->bp, 1);
}

static void gemm_free(struct gemm *g)
{
	free(g->a);
	free(g->b);
	free(g->bp);
	free(g->bias);
	free(g->res);
	free(g->ap);
}

/* C by tiles over panels [jp0, jp1) at a time, A packed from pack_min panels */
static void by_runs(const struct gemm *g, float *c, int64_t run, int64_t pack_min)
{
	for (int64_t jp = 0; jp < g->np; jp += run)
		rt_cg_panels(g->M, g->N, g->K, g->a, g->K, 1, g->bp, g->K * RT_CG_NR, c, g->N, jp,
			     jp + run < g->np ? jp + run : g->np, &g->e, g->ap, pack_min);
}

/* The epilogue of the graph ops on a double sum, in float as the kernel ends. */
static float reference(const struct gemm *g, int64_t i, int64_t j, double *mag)
{
	const struct rt_cg_epilogue *e = &g->e;
	double s = 0;
	float v;

	*mag = 0;
	for (int64_t k = 0; k < g->K; k++) {
		s += (double)g->a[i * g->K + k] * g->b[k * g->N + j];
		*mag += fabs((double)g->a[i * g->K + k] * g->b[k * g->N + j]);
	}
	v = (float)(e->alpha * s);
	if (e->bias)
		v += e->beta * e->bias[i * e->brs + j * e->bcs];
	if (e->res)
		v += e->res[i * e->rrs + j];
	if (e->act == RT_CG_ACT_RELU)
		v = v > 0 ? v : 0;
	else if (e->act == RT_CG_ACT_CLIP)
		v = v < e->lo ? e->lo : v > e->hi ? e->hi : v;
	return v;
}

/*
 * 0 when C through two-panel tiles (A packed), one-panel tiles (A packed
 * and in place), rt_cgemm on 1 and 3 threads all have the same bits and
 * match the reference; else which of those failed.
 */
static int check(int64_t M, int64_t N, int64_t K, int ep)
{
	struct gemm g;
	size_t mn = sizeof(float) * (size_t)(M * N);
	float *pair = malloc(mn), *one = malloc(mn), *inplace = malloc(mn), *t1 = malloc(mn),
	      *t3 = malloc(mn);
	int bad = 0;

	gemm_init(&g, M, N, K, ep);
	by_runs(&g, pair, g.np, 1);
	by_runs(&g, one, 1, 1);
	by_runs(&g, inplace, 1, 2);
	rt_cgemm(M, N, K, g.e.alpha, g.a, K, 1, g.bp, K * RT_CG_NR, t1, N, g.e.bias, g.e.brs,
		 g.e.bcs, g.e.beta, g.e.act, g.e.lo, g.e.hi, g.e.res, N, 1);
	rt_cgemm(M, N, K, g.e.alpha, g.a, K, 1, g.bp, K * RT_CG_NR, t3, N, g.e.bias, g.e.brs,
		 g.e.bcs, g.e.beta, g.e.act, g.e.lo, g.e.hi, g.e.res, N, 3);
	if (memcmp(pair, one, mn))
		bad = 1;
	else if (memcmp(one, inplace, mn))
		bad = 2;
	else if (memcmp(pair, t1, mn))
		bad = 3;
	else if (memcmp(t1, t3, mn))
		bad = 4;
	for (int64_t i = 0; i < M && !bad; i++)
		for (int64_t j = 0; j < N && !bad; j++) {
			double mag;
			float r = reference(&g, i, j, &mag);

			if (fabs((double)pair[i * N + j] - r) > 1e-5 * (mag + 1))
				bad = 5;
		}
	gemm_free(&g);
	free(pair);
	free(one);
	free(inplace);
	free(t1);
	free(t3);
	return bad;
}

static void test_tiles(void)
{
	static const int64_t ms[] = { 1, 3, 8, 9, 17, 64 };
	static const int64_t ns[] = { 1, 16, 17, 31, 32, 33, 40, 49, 64, 100, 512 + 48 };
	static const int64_t ks[] = { 1, 7, 300, 600 };

	for (size_t m = 0; m < sizeof(ms) / sizeof(ms[0]); m++)
		for (size_t n = 0; n < sizeof(ns) / sizeof(ns[0]); n++)
			for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++)
				for (int ep = 0; ep < 5; ep++)
					ASSERT(10 * (1000000 * ms[m] + 1000 * ns[n] + ks[k]),
					       10 * (1000000 * ms[m] + 1000 * ns[n] + ks[k]) +
						       check(ms[m], ns[n], ks[k], ep));
}

/* Where the host has AVX-512, the generated code's tiles span two panels. */
static void test_pairs_on_avx512(void)
{
#if defined(__AVX512F__)
	ASSERT(2, RT_CG_NP);
#else
	ASSERT(1, RT_CG_NP);
#endif
}

TESTS({ "tiles", test_tiles }, { "pairs_on_avx512", test_pairs_on_avx512 })
