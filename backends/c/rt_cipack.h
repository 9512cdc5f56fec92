/*
 * rt_cipack.h - packing of the 8-bit integer GEMM's constant B into the
 * panels rt_cquant.h reads, in one place for both of its users: the
 * compiler (c_strategies.c, ci_pack_at: at compile time, for the map of
 * safe quads and the safe flag it passes to the kernels) and the compiled
 * model (rt_cigemm_pack_const, pasted before rt_cquant.h: the panels made
 * again when the model opens, so that OUT.so holds the 8-bit weights once,
 * as the model has them; core/emit/plan.c decides which).
 *
 *	int safe = rt_ci_pack(w, K, N, 1, N, 1, 0, 0, is_signed, 1, panels, map);
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
 * A panel's map: RT_CI_MAP_HEAD counts (its quads in fused pairs, then
 * those safe in each of the first 3 orders), then which k quad each
 * packed quad is.
 */
#define RT_CI_MAP_HEAD 4

/*
 * The byte orders of a k quad (rt_ci_quad_order): the pairs vpmaddubsw
 * adds are bytes {0, 1} and {2, 3} of the quad as packed, so a quad
 * packed as k 4q + {0, 2, 1, 3} or {0, 3, 1, 2} (A's quad read in the same
 * order) pairs k 4q + 0 with 4q + 2 or 4q + 3: where the natural pairs of
 * some column could saturate, another pairing often cannot.
 */
enum rt_ci_order {
	RT_CI_ORDER_0123,	/* safe as it is */
	RT_CI_ORDER_0213,	/* safe packed (and read) in this order */
	RT_CI_ORDER_0312,
	RT_CI_ORDER_UNSAFE,	/* no order is safe: packed as it is */
	RT_CI_ORDER_COUNT
};

/* rt_ci_order's byte orders: byte b of a packed quad is k 4q + rt_ci_perm[o][b]. */
static const int rt_ci_perm[RT_CI_ORDER_COUNT][4] = {
	{ 0, 1, 2, 3 }, { 0, 2, 1, 3 }, { 0, 3, 1, 2 }, { 0, 1, 2, 3 }
};

/*
 * The k quads of a panel and, with taps t > 0 (an implicit convolution's
 * order), B[k, j] for k = c * t + tap read as quad q = (c / 4) * t + tap,
 * byte c % 4: K / t channels padded to whole quads (rt_ci_kq).
 */
static inline int64_t rt_ci_kq(int64_t K, int64_t t)
{
	return t > 0 ? (K / t + 3) / 4 * t : (K + 3) / 4;
}

/* B' of quad q of panel jp of the group at g0: c[jj][kk] = B'[4 q + kk, 16 jp + jj]. */
static inline void rt_ci_quad_get(const uint8_t *src, int64_t K, int64_t N, int64_t ks,
				  int64_t js, int64_t g0, int64_t jp, int64_t q, int64_t t,
				  int sgn, int8_t c[RT_CIP_NR][4])
{
	for (int64_t jj = 0; jj < RT_CIP_NR; jj++) {
		int64_t j = jp * RT_CIP_NR + jj;

		for (int kk = 0; kk < 4; kk++) {
			int64_t k = 4 * q + kk;
			uint8_t v;

			if (t > 0)
				k = 4 * (q / t) + kk < K / t ? (4 * (q / t) + kk) * t + q % t : K;
			v = k < K && j < N ? src[g0 + k * ks + j * js] : (sgn ? 0 : 128);
			c[jj][kk] = (int8_t)(sgn ? (int)(int8_t)v : (int)v - 128);
		}
	}
}

/*
 * The first byte order (enum rt_ci_order) of quad c in which vpmaddubsw
 * cannot saturate on it (|b0 + b1| <= 128 and |b2 + b3| <= 128 for every
 * column), or RT_CI_ORDER_UNSAFE; only the natural one tried without
 * reorder.
 */
static inline int rt_ci_quad_order(int8_t c[RT_CIP_NR][4], int reorder)
{
	for (int o = 0; o < (reorder ? RT_CI_ORDER_UNSAFE : 1); o++) {
		const int *pm = rt_ci_perm[o];
		int ok = 1;

		for (int jj = 0; jj < RT_CIP_NR && ok; jj++)
			ok = abs(c[jj][pm[0]] + c[jj][pm[1]]) <= 128 &&
			     abs(c[jj][pm[2]] + c[jj][pm[3]]) <= 128;
		if (ok)
			return o;
	}
	return RT_CI_ORDER_UNSAFE;
}

/* Quad c into d (64 bytes) in byte order o: d[4 jj + b] = c[jj][rt_ci_perm[o][b]]. */
static inline void rt_ci_quad_put(int8_t c[RT_CIP_NR][4], int o, int8_t *d)
{
	for (int jj = 0; jj < RT_CIP_NR; jj++)
		for (int b = 0; b < 4; b++)
			d[jj * 4 + b] = c[jj][rt_ci_perm[o][b]];
}

/*
 * Whether quads c and d, each safe as it is, can be summed in 16 bits
 * before vpmaddwd adds their pairs (a fused pair): for every column and
 * each half, the positive B' of both quads' pairs sum to at most 128 and
 * the negative ones to at least -128, so that with A' in [0, 255] the four
 * products' sum lies within 255 * 128 of zero and fits an int16.
 */
static inline int rt_ci_fusable(int8_t c[RT_CIP_NR][4], int8_t d[RT_CIP_NR][4])
{
	for (int jj = 0; jj < RT_CIP_NR; jj++)
		for (int h = 0; h < 4; h += 2) {
			int pos = 0, neg = 0;

			for (int k = h; k < h + 2; k++) {
				pos += (c[jj][k] > 0 ? c[jj][k] : 0) + (d[jj][k] > 0 ? d[jj][k] : 0);
				neg += (c[jj][k] < 0 ? c[jj][k] : 0) + (d[jj][k] < 0 ? d[jj][k] : 0);
			}
			if (pos > 128 || neg < -128)
				return 0;
		}
	return 1;
}

/*
 * One panel (kq quads from quad 0 of panel jp, into dst) packed by kind
 * (rt_ci_pack), m its map or NULL; the kinds of at most RT_CIP_ORD quads
 * kept at a time (each quad read up to three times), a panel of more read
 * once per order, with no fused pairs. The quads safe as they are pair up
 * in k order, each with the next such quad when the two are fusable
 * (rt_ci_fusable; otherwise the second is tried with the one after it).
 * Returns 1 when every quad is safe as it is.
 */
#ifndef RT_CIP_ORD
#define RT_CIP_ORD 4096
#endif
static inline int rt_ci_pack_panel(const uint8_t *src, int64_t K, int64_t N, int64_t ks,
				   int64_t js, int64_t g0, int64_t jp, int64_t t, int sgn,
				   int8_t *dst, int32_t *m)
{
	int64_t kq = rt_ci_kq(K, t), at[RT_CI_ORDER_COUNT] = { 0 }, n[RT_CI_ORDER_COUNT] = { 0 };
	int64_t nf = 0, af = 0, pend = -1;
	uint8_t ord[RT_CIP_ORD];
	int32_t mate[RT_CIP_ORD];	/* a fused pair's second quad, else -1 (-2: a second) */
	int8_t c[RT_CIP_NR][4], d[RT_CIP_NR][4];
	int safe = 1;

	if (kq > RT_CIP_ORD) {
		int64_t p = 0;

		for (int o = 0; o < RT_CI_ORDER_COUNT; o++)
			for (int64_t q = 0; q < kq; q++) {
				rt_ci_quad_get(src, K, N, ks, js, g0, jp, q, t, sgn, c);
				if (rt_ci_quad_order(c, 1) != o)
					continue;
				rt_ci_quad_put(c, o, dst + p * 64);
				if (m)
					m[RT_CI_MAP_HEAD + p] = (int32_t)q;
				p++;
				n[o]++;
			}
	} else {
		for (int64_t q = 0; q < kq; q++) {
			rt_ci_quad_get(src, K, N, ks, js, g0, jp, q, t, sgn, c);
			ord[q] = (uint8_t)rt_ci_quad_order(c, 1);
			mate[q] = -1;
			if (ord[q] != RT_CI_ORDER_0123)
				continue;
			if (pend >= 0) {
				rt_ci_quad_get(src, K, N, ks, js, g0, jp, pend, t, sgn, d);
				if (rt_ci_fusable(d, c)) {
					mate[pend] = (int32_t)q;
					mate[q] = -2;
					nf += 2;
					pend = -1;
					continue;
				}
			}
			pend = q;
		}
		for (int64_t q = 0; q < kq; q++)
			n[ord[q]] += mate[q] == -1;
		at[0] = nf;
		for (int o = 1; o < RT_CI_ORDER_COUNT; o++)
			at[o] = at[o - 1] + n[o - 1];
		for (int64_t q = 0; q < kq; q++) {
			int64_t p;

			if (mate[q] == -2)
				continue;
			p = mate[q] >= 0 ? af : at[ord[q]]++;
			rt_ci_quad_get(src, K, N, ks, js, g0, jp, q, t, sgn, c);
			rt_ci_quad_put(c, ord[q], dst + p * 64);
			if (m)
				m[RT_CI_MAP_HEAD + p] = (int32_t)q;
			if (mate[q] < 0)
				continue;
			rt_ci_quad_get(src, K, N, ks, js, g0, jp, mate[q], t, sgn, c);
			rt_ci_quad_put(c, RT_CI_ORDER_0123, dst + (p + 1) * 64);
			if (m)
				m[RT_CI_MAP_HEAD + p + 1] = mate[q];
			af += 2;
		}
	}
	if (m) {
		m[0] = (int32_t)nf;
		for (int o = 0; o < RT_CI_MAP_HEAD - 1; o++)
			m[1 + o] = (int32_t)n[o];
	}
	for (int o = 1; o < RT_CI_ORDER_COUNT; o++)
		safe &= n[o] == 0;
	return safe;
}

/*
 * Packs the groups of B [K, N] into bp (groups * ceil(N / 16) *
 * rt_ci_kq(K, t) * 64 bytes; t > 0: the quads of an implicit convolution
 * of t taps, rt_ci_quad_get). With map, each panel's quads go by kind: the
 * fused pairs of quads safe as they are (rt_ci_pack_panel), the other
 * quads vpmaddubsw takes as they are, those it takes in each other byte
 * order (enum rt_ci_order), then the unsafe ones, each kind in k order;
 * mapv (when not NULL) receives per group and panel RT_CI_MAP_HEAD counts
 * (the quads in fused pairs, then those of the first three orders), then
 * which k quad each packed quad is (rt_ci_tile_map). Without, every quad
 * in k order and as it is. Returns 1 when every quad is safe as it is.
 */
static inline int rt_ci_pack(const uint8_t *src, int64_t K, int64_t N, int64_t groups,
			     int64_t ks, int64_t js, int64_t gs, int64_t t, int sgn, int map,
			     int8_t *bp, int32_t *mapv)
{
	int64_t np = (N + RT_CIP_NR - 1) / RT_CIP_NR, kq = rt_ci_kq(K, t);
	int8_t c[RT_CIP_NR][4];
	int safe = 1;

	for (int64_t g = 0; g < groups; g++)
		for (int64_t jp = 0; jp < np; jp++) {
			int8_t *dst = bp + (g * np + jp) * kq * 64;

			if (map) {
				safe &= rt_ci_pack_panel(src, K, N, ks, js, g * gs, jp, t, sgn, dst,
							 mapv ? mapv + (g * np + jp) *
							 (kq + RT_CI_MAP_HEAD) : NULL);
				continue;
			}
			for (int64_t q = 0; q < kq; q++) {
				rt_ci_quad_get(src, K, N, ks, js, g * gs, jp, q, t, sgn, c);
				safe &= rt_ci_quad_order(c, 0) == 0;
				rt_ci_quad_put(c, 0, dst + q * 64);
			}
		}
	return safe;
}

/*
 * An implicit convolution's image (rt_ciconv2d with taps): Hp x Wp pixels
 * of C channels padded to a multiple of 4 (x padded with its zero point,
 * channels last; pads[4] = { ph, pw, Hp, Wp } on return), then Hp x Wp int32 sums
 * over the channels, OH x OW row sums and kq quad offsets; the scratch
 * bytes of one group, each part 64-byte aligned.
 */
static inline int64_t rt_ci_implicit_bytes(int64_t C, int64_t H, int64_t W, int64_t kh,
					   int64_t kw, int64_t sh, int64_t sw, int64_t dh,
					   int64_t dw, int64_t ph, int64_t pw, int64_t OH,
					   int64_t OW, int64_t pads[4])
{
	int64_t hp = (OH - 1) * sh + (kh - 1) * dh + 1, wp = (OW - 1) * sw + (kw - 1) * dw + 1;
	int64_t cq = (C + 3) / 4, kq = cq * kh * kw;

	hp = hp > ph + H ? hp : ph + H;
	wp = wp > pw + W ? wp : pw + W;
	pads[0] = ph;
	pads[1] = pw;
	pads[2] = hp;
	pads[3] = wp;
	return (4 * cq * hp * wp + 63) / 64 * 64 + (hp * wp * 4 + 63) / 64 * 64 +
	       (OH * OW * 4 + 63) / 64 * 64 + (kq * 4 + 63) / 64 * 64;
}

/*
 * The packed panels of a constant B made when the model opens
 * (rt_desc.packs), as the compiler made them (c_strategies.c, ci_pack_at):
 * p = { K, N, is_signed | map << 1 | taps << 2, groups, ks, js }, gs = N *
 * js. The map and the safe flag stay the compiler's (the map in the blob).
 */
static inline void rt_cigemm_pack_const(const void *src, void *dst, const int64_t *p)
{
	rt_ci_pack((const uint8_t *)src, p[0], p[1], p[3], p[4], p[5], p[1] * p[5], p[2] >> 2,
		   (int)(p[2] & 1), (int)(p[2] >> 1 & 1), (int8_t *)dst, NULL);
}

#endif
