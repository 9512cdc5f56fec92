/*
 * rt_cipack.h - packing of the 8-bit integer GEMM's constant B into the
 * panels rt_cquant.h reads, in one place for both of its users: the
 * compiler (c_strategies.c, ci_pack_at: at compile time, for the map of
 * safe quads and the safe flag it passes to the kernels) and the compiled
 * model (rt_cigemm_pack_const, pasted before rt_cquant.h: the panels made
 * again when the model opens, so that OUT.so holds the 8-bit weights once,
 * as the model has them; core/emit/plan.c decides which).
 *
 *	int safe = rt_ci_pack(w, K, N, 1, N, 1, 0, is_signed, 1, panels, map);
 *
 * Layout (rt_cquant.h's top): B' = B (int8) or B - 128 (uint8), each
 * column's 4 bytes of one k quad side by side, 16 columns a panel, zero
 * padded past K and N; B[k, j] of group g is src[g * gs + k * ks + j * js].
 */
#ifndef RT_CIPACK_H
#define RT_CIPACK_H

#include <stdint.h>
#include <stdlib.h>

#define RT_CIP_NR 16	/* RT_CI_NR: columns of a panel */

/*
 * B' of quad q of panel jp of the group at g0 into d (64 bytes); whether
 * vpmaddubsw cannot saturate on it.
 */
static inline int rt_ci_pack_quad(const uint8_t *src, int64_t K, int64_t N, int64_t ks,
				  int64_t js, int64_t g0, int64_t jp, int64_t q, int sgn, int8_t *d)
{
	int ok = 1;

	for (int64_t jj = 0; jj < RT_CIP_NR; jj++) {
		int8_t *c = d + jj * 4;
		int64_t j = jp * RT_CIP_NR + jj;

		for (int kk = 0; kk < 4; kk++) {
			int64_t k = 4 * q + kk;
			uint8_t v = k < K && j < N ? src[g0 + k * ks + j * js] : (sgn ? 0 : 128);

			c[kk] = (int8_t)(sgn ? (int)(int8_t)v : (int)v - 128);
		}
		if (abs(c[0] + c[1]) > 128 || abs(c[2] + c[3]) > 128)
			ok = 0;
	}
	return ok;
}

/*
 * Packs the groups of B [K, N] into bp (groups * ceil(N / 16) * ceil(K /
 * 4) * 64 bytes). With map, each panel's quads go safe ones first (no
 * column has a pair of B' bytes that vpmaddubsw adds with |b0 + b1| >
 * 128), then the others, each in k order; mapv (when not NULL) receives
 * per group and panel the count of safe quads, then which k quad each
 * packed quad is (rt_ci_tile_map). Returns 1 when every quad is safe.
 */
static inline int rt_ci_pack(const uint8_t *src, int64_t K, int64_t N, int64_t groups,
			     int64_t ks, int64_t js, int64_t gs, int sgn, int map, int8_t *bp,
			     int32_t *mapv)
{
	int64_t np = (N + RT_CIP_NR - 1) / RT_CIP_NR, kq = (K + 3) / 4;
	int8_t scratch[64];
	int safe = 1;

	for (int64_t g = 0; g < groups; g++)
		for (int64_t jp = 0; jp < np; jp++) {
			int8_t *dst = bp + (g * np + jp) * kq * 64;
			int32_t *m = mapv ? mapv + (g * np + jp) * (kq + 1) : NULL;
			int64_t at = 0, n_ok = 0;

			if (!map) {
				for (int64_t q = 0; q < kq; q++)
					safe &= rt_ci_pack_quad(src, K, N, ks, js, g * gs, jp, q,
								sgn, dst + q * 64);
				continue;
			}
			/* safe quads first, then the others: each quad's test made twice */
			for (int pass = 0; pass < 2; pass++)
				for (int64_t q = 0; q < kq; q++) {
					int ok = rt_ci_pack_quad(src, K, N, ks, js, g * gs, jp, q,
								 sgn, scratch);

					if (ok != !pass)
						continue;
					for (int b = 0; b < 64; b++)
						dst[at * 64 + b] = scratch[b];
					if (m)
						m[1 + at] = (int32_t)q;
					at++;
					n_ok += ok;
					safe &= ok;
				}
			if (m)
				m[0] = (int32_t)n_ok;
		}
	return safe;
}

/*
 * The packed panels of a constant B made when the model opens
 * (rt_desc.packs), as the compiler made them (c_strategies.c, ci_pack_at):
 * p = { K, N, is_signed | map << 1, groups, ks, js }, gs = N * js. The map
 * and the safe flag stay the compiler's (the map in the blob).
 */
static inline void rt_cigemm_pack_const(const void *src, void *dst, const int64_t *p)
{
	rt_ci_pack((const uint8_t *)src, p[0], p[1], p[3], p[4], p[5], p[1] * p[5],
		   (int)(p[2] & 1), (int)(p[2] >> 1 & 1), (int8_t *)dst, NULL);
}

#endif
