/*
 * cipack_test.c - backends/c/rt_cipack.h, the packing of the 8-bit integer
 * GEMM's constant B, against a plain reference: with the map, every panel
 * holds first its fused pairs (quads safe as they are whose 16-bit sums
 * may be added, each paired with the next such quad in k order), then its
 * other k quads by byte order (enum rt_ci_order: safe for vpmaddubsw as
 * they are, safe in order 0 2 1 3, in 0 3 1 2, in none), each kind in k
 * order and each quad's bytes in its order, the map counting the kinds
 * and naming each packed quad's k quad. RT_CIP_ORD is made small, so that
 * both ways of ordering a panel run (the kinds kept, with pairs, for
 * panels of at most RT_CIP_ORD quads; a pass per order over longer ones).
 */
#include "test.h"

#include <stdint.h>
#include <stdlib.h>

#define RT_CIP_ORD 6
#include "../../backends/c/rt_cipack.h"

#define KMAX 40		/* 10 quads: panels longer than RT_CIP_ORD */
#define N 21		/* two panels, the second 5 columns wide */

static int K;		/* KMAX, or 24: 6 quads, RT_CIP_ORD */

/* B' of B[k, j] (B [K, N] row-major), zero past N */
static int bq(const uint8_t *b, int sgn, int k, int j)
{
	if (j >= N)
		return 0;
	return sgn ? (int8_t)b[k * N + j] : b[k * N + j] - 128;
}

/* the reference's order of quad q of panel jp: the first of 01|23, 02|13, 03|12 that is safe */
static int ref_order(const uint8_t *b, int sgn, int jp, int q)
{
	static const int pm[3][4] = { { 0, 1, 2, 3 }, { 0, 2, 1, 3 }, { 0, 3, 1, 2 } };

	for (int o = 0; o < 3; o++) {
		int ok = 1;

		for (int jj = 0; jj < 16; jj++) {
			int v[4];

			for (int kk = 0; kk < 4; kk++)
				v[kk] = bq(b, sgn, 4 * q + kk, jp * 16 + jj);
			ok &= abs(v[pm[o][0]] + v[pm[o][1]]) <= 128 &&
			      abs(v[pm[o][2]] + v[pm[o][3]]) <= 128;
		}
		if (ok)
			return o;
	}
	return 3;
}

/* B with quads of every kind: quad q of kind q % 4, made so by columns 0 and 1 of a panel */
static void make_b(uint8_t *b, int sgn)
{
	static const int spoil[4][2][4] = {
		{ { 1, 2, 3, 4 }, { 5, 6, 7, 8 } },
		{ { 100, 100, -100, -100 }, { 0, 0, 0, 0 } },
		{ { 100, 100, 0, 0 }, { 100, 0, 100, 0 } },
		{ { 100, 100, 100, 100 }, { -128, -128, -128, -128 } },
	};

	srand(7);
	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++) {
			int v = rand() % 81 - 40;

			if (j % 16 < 2)
				v = spoil[(k / 4 + j / 16) % 4][j % 16][k % 4];
			b[k * N + j] = (uint8_t)(sgn ? v : v + 128);
		}
}

/* whether quads q and r (safe as they are) of panel jp may be summed in 16 bits: every
   column's positive and negative B' of pairs {0, 1} and {2, 3} of both within 128 */
static int ref_fusable(const uint8_t *b, int sgn, int jp, int q, int r)
{
	for (int jj = 0; jj < 16; jj++)
		for (int h = 0; h < 4; h += 2) {
			int pos = 0, neg = 0;

			for (int kk = h; kk < h + 2; kk++) {
				int u = bq(b, sgn, 4 * q + kk, jp * 16 + jj);
				int v = bq(b, sgn, 4 * r + kk, jp * 16 + jj);

				pos += (u > 0 ? u : 0) + (v > 0 ? v : 0);
				neg += (u < 0 ? u : 0) + (v < 0 ? v : 0);
			}
			if (pos > 128 || neg < -128)
				return 0;
		}
	return 1;
}

static void check(int sgn, int k)
{
	enum { NP = (N + 15) / 16 };
	uint8_t b[KMAX * N];
	int8_t bp[NP * KMAX / 4 * 64];
	int32_t map[NP * (KMAX / 4 + RT_CI_MAP_HEAD)];
	int seen[4] = { 0 }, KQ = k / 4, fused = 0;

	K = k;
	make_b(b, sgn);
	ASSERT(0, rt_ci_pack(b, K, N, 1, N, 1, 0, 0, sgn, 1, bp, map));
	for (int jp = 0; jp < NP; jp++) {
		const int32_t *m = map + jp * (KQ + RT_CI_MAP_HEAD);
		int order[KMAX / 4], mate[KMAX / 4], pend = -1, p = 0, nf = 0;

		/*
		 * the expected placement: fused pairs of quads safe as they are
		 * (each with the next such quad, when fusable; none in panels
		 * longer than RT_CIP_ORD), then each order's other quads
		 */
		for (int q = 0; q < KQ; q++) {
			order[q] = ref_order(b, sgn, jp, q);
			mate[q] = -1;
			if (order[q] != 0 || KQ > RT_CIP_ORD)
				continue;
			if (pend >= 0 && ref_fusable(b, sgn, jp, pend, q)) {
				mate[pend] = q;
				mate[q] = -2;
				pend = -1;
				nf += 2;
			} else {
				pend = q;
			}
		}
		ASSERT(nf, m[0]);
		for (int q = 0; q < KQ; q++) {
			if (mate[q] < 0)
				continue;
			for (int h = 0; h < 2; h++) {
				int r = h ? mate[q] : q;

				ASSERT(r, m[RT_CI_MAP_HEAD + p]);
				for (int jj = 0; jj < 16; jj++)
					for (int c = 0; c < 4; c++)
						ASSERT(bq(b, sgn, 4 * r + c, jp * 16 + jj),
						       bp[(jp * KQ + p) * 64 + jj * 4 + c]);
				p++;
			}
			fused++;
		}
		for (int o = 0; o < 4; o++) {
			int n = 0;

			for (int q = 0; q < KQ; q++) {
				if (order[q] != o || mate[q] != -1)
					continue;
				ASSERT(q, m[RT_CI_MAP_HEAD + p]);
				for (int jj = 0; jj < 16; jj++)
					for (int c = 0; c < 4; c++) {
						int k = 4 * q + rt_ci_perm[o][c];

						ASSERT(bq(b, sgn, k, jp * 16 + jj),
						       bp[(jp * KQ + p) * 64 + jj * 4 + c]);
					}
				p++;
				n++;
				seen[o]++;
			}
			if (o < RT_CI_MAP_HEAD - 1)
				ASSERT(n, m[1 + o]);
		}
		ASSERT(KQ, p);
	}
	for (int o = 0; o < 4; o++)
		ASSERT_TRUE(seen[o] > 0);
	/* panels of at most RT_CIP_ORD quads have pairs */
	ASSERT_TRUE(KQ > RT_CIP_ORD || fused > 0);
}

/* with the map: by order, 6 quads a panel (their orders kept) and 10 (a pass per order) */
static void test_pack_orders_s8(void)
{
	check(1, 24);
	check(1, KMAX);
}

static void test_pack_orders_u8(void)
{
	check(0, 24);
	check(0, KMAX);
}

/* without the map, in k order and as they are; safe only when every quad is */
static void test_pack_plain(void)
{
	enum { NP = (N + 15) / 16, KQ = KMAX / 4 };
	uint8_t b[KMAX * N];
	int8_t bp[NP * KQ * 64];

	K = KMAX;
	make_b(b, 1);
	ASSERT(0, rt_ci_pack(b, K, N, 1, N, 1, 0, 0, 1, 0, bp, NULL));
	for (int jp = 0; jp < NP; jp++)
		for (int q = 0; q < KQ; q++)
			for (int jj = 0; jj < 16; jj++)
				for (int c = 0; c < 4; c++)
					ASSERT(bq(b, 1, 4 * q + c, jp * 16 + jj),
					       bp[(jp * KQ + q) * 64 + jj * 4 + c]);
	for (int i = 0; i < K * N; i++)
		b[i] = (uint8_t)(rand() % 81 - 40);
	ASSERT(1, rt_ci_pack(b, K, N, 1, N, 1, 0, 0, 1, 0, bp, NULL));
}

TESTS({ "pack_orders_s8", test_pack_orders_s8 },
      { "pack_orders_u8", test_pack_orders_u8 },
      { "pack_plain", test_pack_plain })
