/*
 * rt_cgemm.h - the c target's register-tiled float GEMM, pasted into the
 * generated code as a prelude (embedded into collagec) by the strategies
 * matmul.micro, gemm.micro and conv.micro of backends/c/c_strategies.c.
 *
 *	C[i, j] = act(alpha * sum_k A[i, k] * B[k, j] + beta * bias(i, j))
 *
 * A is read in place through a row and a column stride (a transposed A
 * costs nothing). B is packed: panels of RT_CG_NR columns, zero past N,
 * one after the other bps floats apart, row k of a panel at k * RT_CG_NR:
 * Bp[jp * bps + k * RT_CG_NR + jj] = B[k, jp * RT_CG_NR + jj]. collagec packs
 * a constant B at compile time into the weights blob (the same layout, see
 * c_strategies.c); rt_cgemm_pack packs one at run time. bias(i, j) is
 * bias[i * brs + j * bcs] (strides 0 broadcast: per row, per column or one
 * value), or nothing when bias is NULL.
 *
 * The micro-kernel keeps an RT_CG_MR x 16 tile of C in registers (GCC
 * vector extensions: 6 x 2 ymm with AVX2 and FMA, 3 x 4 xmm with SSE2 only,
 * 8 zmm with AVX-512) and multiplies one K block (RT_CG_KC rows of B, whose
 * panel stays in L1 across every row tile) at a time. Edges cost no test in
 * the inner loop: rows past M read row 0 of the tile again and are not
 * stored, columns past N multiply the panel's zero padding. Every block but
 * the last stores or adds the raw tile with vector stores; the last one
 * applies alpha, the bias and the activation element by element, once per
 * element of C. Panels are split over the OpenMP team of `threads`.
 */
#ifndef RT_CGEMM_H
#define RT_CGEMM_H

#include <stdint.h>
#include <string.h>

#define RT_CG_NR 16		/* columns of a panel: one tile's width */
#define RT_CG_KC 128		/* rows of B per block: a 8 KiB panel slice in L1 */
#if defined(__AVX512F__)
#define RT_CG_MR 8		/* 8 zmm accumulators */
#define RT_CG_VBYTES 64
#elif defined(__AVX__)
#define RT_CG_MR 6		/* 12 of 16 ymm: accumulators, 2 for B, 1 for A */
#define RT_CG_VBYTES 32
#else
#define RT_CG_MR 3		/* 12 of 16 xmm */
#define RT_CG_VBYTES 16
#endif

enum rt_cg_act { RT_CG_ACT_NONE, RT_CG_ACT_RELU, RT_CG_ACT_CLIP };

#if defined(__GNUC__)
#define RT_CG_NV (RT_CG_NR * 4 / RT_CG_VBYTES)	/* vectors per row of a tile */
typedef float rt_cg_vec __attribute__((vector_size(RT_CG_VBYTES)));
/* the same vector read from or written to memory of any alignment, in place */
typedef float rt_cg_uvec __attribute__((vector_size(RT_CG_VBYTES), aligned(4), may_alias));
typedef struct { rt_cg_vec v[RT_CG_NV]; } rt_cg_v16;
#else
typedef struct { float f[RT_CG_NR]; } rt_cg_v16;	/* portable: plain loops */
#endif

/* acc[r] = sum over k < kc of a[r][k * acs] * bp[k * RT_CG_NR .. + 16]. */
static inline void rt_cg_tile(int64_t kc, const float *const *a, int64_t acs, const float *bp,
			      rt_cg_v16 *acc)
{
#if defined(__GNUC__)
	/* native vectors: GCC splits wider ones through memory */
	rt_cg_vec t[RT_CG_MR][RT_CG_NV];

#pragma GCC unroll 8
	for (int r = 0; r < RT_CG_MR; r++)
#pragma GCC unroll 4
		for (int v = 0; v < RT_CG_NV; v++)
			t[r][v] = (rt_cg_vec){ 0 };
	for (int64_t k = 0; k < kc; k++) {
		/* loaded straight into registers: a memcpy into b[] went through the
		 * stack in narrower pieces than it is read back, and every k
		 * stalled on the failed store forwarding */
		const rt_cg_uvec *bk = (const rt_cg_uvec *)(bp + k * RT_CG_NR);
		rt_cg_vec b[RT_CG_NV];

#pragma GCC unroll 4
		for (int v = 0; v < RT_CG_NV; v++)
			b[v] = bk[v];
#pragma GCC unroll 8
		for (int r = 0; r < RT_CG_MR; r++) {
			float x = a[r][k * acs];

#pragma GCC unroll 4
			for (int v = 0; v < RT_CG_NV; v++)
				t[r][v] += x * b[v];
		}
	}
	memcpy(acc, t, sizeof(t));
#else
	memset(acc, 0, sizeof(*acc) * RT_CG_MR);
	for (int64_t k = 0; k < kc; k++)
		for (int r = 0; r < RT_CG_MR; r++)
			for (int j = 0; j < RT_CG_NR; j++)
				acc[r].f[j] += a[r][k * acs] * bp[k * RT_CG_NR + j];
#endif
}

/* c[r * ldc + j] = (first ? 0 : c) + acc[r][j] over a full-width tile of mr rows. */
static inline void rt_cg_accumulate(const rt_cg_v16 *acc, int mr, float *c, int64_t ldc,
				    int first)
{
	for (int r = 0; r < mr; r++) {
		rt_cg_v16 v = acc[r];

		if (!first) {
			rt_cg_v16 old;

			memcpy(&old, c + r * ldc, sizeof(old));
#if defined(__GNUC__)
			for (int j = 0; j < RT_CG_NV; j++)
				v.v[j] += old.v[j];
#else
			for (int j = 0; j < RT_CG_NR; j++)
				v.f[j] += old.f[j];
#endif
		}
		memcpy(c + r * ldc, &v, sizeof(v));
	}
}

struct rt_cg_epilogue {
	float alpha, beta;
	const float *bias;	/* NULL: none */
	int64_t brs, bcs;	/* bias(i, j) = bias[i * brs + j * bcs] */
	int act;		/* enum rt_cg_act */
	float lo, hi;		/* RT_CG_ACT_CLIP's bounds */
};

#if defined(__GNUC__)
/*
 * rt_cg_finish of a full-width tile without activation, bias per row, per
 * column or none, in vector registers: with a short K the element by
 * element epilogue would cost more than the multiplications.
 */
static inline int rt_cg_finish_vec(const rt_cg_v16 *acc, int mr, int nr, float *c, int64_t ldc,
				   int first, int64_t i0, int64_t j0,
				   const struct rt_cg_epilogue *e)
{
	if (nr != RT_CG_NR || e->act != RT_CG_ACT_NONE || (e->bias && e->bcs > 1))
		return 0;
	for (int r = 0; r < mr; r++) {
		float *cr = c + r * ldc;
		const float *br = e->bias ? e->bias + (i0 + r) * e->brs + j0 * e->bcs : NULL;

		for (int v = 0; v < RT_CG_NV; v++) {
			rt_cg_vec t = acc[r].v[v], old, bv;

			if (!first) {
				memcpy(&old, cr + v * (RT_CG_NR / RT_CG_NV), sizeof(old));
				t += old;
			}
			t *= e->alpha;
			if (br && e->bcs) {
				memcpy(&bv, br + v * (RT_CG_NR / RT_CG_NV), sizeof(bv));
				t += e->beta * bv;
			} else if (br) {
				t += e->beta * br[0];
			}
			memcpy(cr + v * (RT_CG_NR / RT_CG_NV), &t, sizeof(t));
		}
	}
	return 1;
}
#endif

/* The last block: C = act(alpha * (C so far + acc) + beta * bias) on mr x nr. */
static inline void rt_cg_finish(const rt_cg_v16 *acc, int mr, int nr, float *c, int64_t ldc,
				int first, int64_t i0, int64_t j0,
				const struct rt_cg_epilogue *e)
{
	float t[RT_CG_MR][RT_CG_NR];

#if defined(__GNUC__)
	if (rt_cg_finish_vec(acc, mr, nr, c, ldc, first, i0, j0, e))
		return;
#endif
	memcpy(t, acc, sizeof(t));
	for (int r = 0; r < mr; r++) {
		float *cr = c + r * ldc;

		for (int j = 0; j < nr; j++) {
			float v = e->alpha * (t[r][j] + (first ? 0.0f : cr[j]));

			if (e->bias)
				v += e->beta * e->bias[(i0 + r) * e->brs + (j0 + j) * e->bcs];
			if (e->act == RT_CG_ACT_RELU)
				v = v > 0.0f ? v : 0.0f;
			else if (e->act == RT_CG_ACT_CLIP)
				v = v < e->lo ? e->lo : v > e->hi ? e->hi : v;
			cr[j] = v;
		}
	}
}

/* Every row tile of panel jp, block by block of K. */
static inline void rt_cg_panel(int64_t M, int64_t N, int64_t K, const float *A, int64_t ars,
			int64_t acs, const float *panel, float *C, int64_t ldc, int64_t jp,
			const struct rt_cg_epilogue *e)
{
	int64_t j0 = jp * RT_CG_NR;
	int nr = N - j0 < RT_CG_NR ? (int)(N - j0) : RT_CG_NR;
	rt_cg_v16 acc[RT_CG_MR];
	const float *a[RT_CG_MR];

	for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += RT_CG_KC) {
		int64_t kc = K - k0 < RT_CG_KC ? K - k0 : RT_CG_KC;
		int first = k0 == 0, last = k0 + kc >= K;

		for (int64_t i0 = 0; i0 < M; i0 += RT_CG_MR) {
			int mr = M - i0 < RT_CG_MR ? (int)(M - i0) : RT_CG_MR;
			float *c = C + i0 * ldc + j0;

			for (int r = 0; r < RT_CG_MR; r++)
				a[r] = A + (i0 + (r < mr ? r : 0)) * ars + k0 * acs;
			rt_cg_tile(kc, a, acs, panel + k0 * RT_CG_NR, acc);
			if (last)
				rt_cg_finish(acc, mr, nr, c, ldc, first, i0, j0, e);
			else if (nr == RT_CG_NR)
				rt_cg_accumulate(acc, mr, c, ldc, first);
			else
				rt_cg_finish(acc, mr, nr, c, ldc, first, 0, 0,
					     &(struct rt_cg_epilogue){ 1.0f, 0.0f, NULL, 0, 0,
								       RT_CG_ACT_NONE, 0, 0 });
		}
		if (K == 0)
			break;
	}
}

/*
 * C [M, N] (row stride ldc) = act(alpha * A [M, K] x B + beta * bias) with
 * B packed (panels bps floats apart); see the top of this file.
 */
static inline void rt_cgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
		     int64_t ars, int64_t acs, const float *Bp, int64_t bps, float *C,
		     int64_t ldc, const float *bias, int64_t brs, int64_t bcs, float beta, int act,
		     float lo, float hi, int threads)
{
	struct rt_cg_epilogue e = { alpha, beta, bias, brs, bcs, act, lo, hi };
	int64_t np = (N + RT_CG_NR - 1) / RT_CG_NR;

	(void)threads;
	/* below about a quarter of a million multiply-adds a team costs more than it gains */
#pragma omp parallel for num_threads(threads) if (threads > 1 && np > 1 && M * N * K >= 262144)
	for (int64_t jp = 0; jp < np; jp++)
		rt_cg_panel(M, N, K, A, ars, acs, Bp + jp * bps, C, ldc, jp, &e);
}

/* Bp (panels K * RT_CG_NR apart) = B [K, N], B[k, j] at B[k * brs + j * bcs]. */
static inline void rt_cgemm_pack(int64_t K, int64_t N, const float *B, int64_t brs,
				 int64_t bcs, float *Bp, int threads)
{
	int64_t np = (N + RT_CG_NR - 1) / RT_CG_NR;

	(void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1 && np > 1 && K * N >= 65536)
	for (int64_t jp = 0; jp < np; jp++)
		for (int64_t k = 0; k < K; k++) {
			float *d = Bp + (jp * K + k) * RT_CG_NR;

			for (int jj = 0; jj < RT_CG_NR; jj++) {
				int64_t j = jp * RT_CG_NR + jj;

				d[jj] = j < N ? B[k * brs + j * bcs] : 0.0f;
			}
		}
}

#endif
