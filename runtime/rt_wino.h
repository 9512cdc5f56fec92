/*
 * rt_wino.h - Winograd's minimal filtering F(4x4, 3x3) (Lavin and Gray,
 * "Fast Algorithms for Convolutional Neural Networks", CVPR 2016): its
 * transform matrices G, B^T and A^T, written once for every user. The c
 * target's conv.winograd (backends/c/rt_cwino.h for the tiles,
 * c_strategies.c for the weights at compile time) and the dnnl target's
 * Winograd around a oneDNN matmul (backends/dnnl/rt_dnnl.h) include it;
 * it is embedded into collagec and written next to each compiled model.
 *
 * Each 4x4 output tile is Y = A^T [ U (.) V ] A summed over the input
 * channels, V = B^T d B the transform of the 6x6 input patch d under it
 * and U = G g G^T that of the 3x3 kernel g.
 *
 *	float u[36 * 9];
 *	rt_wino_kernel(g, u, 9);	// u[xi * 9], xi = i * 6 + j
 *	RT_WINO_TRANSFORMS(vec, my)	// my_bt, my_at on vectors of floats
 */
#ifndef COLLAGEC_RT_WINO_H
#define COLLAGEC_RT_WINO_H

#include <stdint.h>

/*
 * u[xi * us] = (G g G^T)[i][j], xi = i * 6 + j, for the 3x3 kernel g
 * (row-major): computed in double and rounded once. The products go
 * through volatile, so that no compiler fuses a multiply and an add (GCC's
 * -ffp-contract=fast under -std=gnu11 on an FMA host): collagec, built
 * without, and a compiled model transforming the weights when it opens
 * (rt_cwino.h) get the same bits.
 */
static inline void rt_wino_kernel(const float *g, float *u, int64_t us)
{
	static const double G[6][3] = {
		{ 1.0 / 4, 0, 0 },
		{ -1.0 / 6, -1.0 / 6, -1.0 / 6 },
		{ -1.0 / 6, 1.0 / 6, -1.0 / 6 },
		{ 1.0 / 24, 1.0 / 12, 1.0 / 6 },
		{ 1.0 / 24, -1.0 / 12, 1.0 / 6 },
		{ 0, 0, 1 },
	};
	double t[6][3];

	volatile double p[3];

	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 3; j++) {
			p[0] = G[i][0] * g[j];
			p[1] = G[i][1] * g[3 + j];
			p[2] = G[i][2] * g[6 + j];
			t[i][j] = p[0] + p[1] + p[2];
		}
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++) {
			p[0] = t[i][0] * G[j][0];
			p[1] = t[i][1] * G[j][1];
			p[2] = t[i][2] * G[j][2];
			u[(i * 6 + j) * us] = (float)(p[0] + p[1] + p[2]);
		}
}

/*
 * The 1-D transforms, for a vector type T of floats as NAME_bt and
 * NAME_at: v[0..5] = B^T d[0..5] (d a column or a row of the patch, ds and
 * vs the strides) and o[0..3] = A^T m[0..5] (ms and os the strides).
 */
#define RT_WINO_TRANSFORMS(T, NAME)							\
static inline void NAME##_bt(const T *d, int64_t ds, T *v, int64_t vs)			\
{											\
	T d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds],	\
	  d5 = d[5 * ds];								\
	T a = d4 - 4.0f * d2, b = d3 - 4.0f * d1, c = d4 - d2, e = 2.0f * (d3 - d1);	\
											\
	v[0] = 4.0f * d0 - 5.0f * d2 + d4;						\
	v[vs] = a + b;									\
	v[2 * vs] = a - b;								\
	v[3 * vs] = c + e;								\
	v[4 * vs] = c - e;								\
	v[5 * vs] = 4.0f * d1 - 5.0f * d3 + d5;					\
}											\
											\
static inline void NAME##_at(const T *m, int64_t ms, T *o, int64_t os)			\
{											\
	T s12 = m[ms] + m[2 * ms], d12 = m[ms] - m[2 * ms];				\
	T s34 = m[3 * ms] + m[4 * ms], d34 = m[3 * ms] - m[4 * ms];			\
											\
	o[0] = m[0] + s12 + s34;							\
	o[os] = d12 + 2.0f * d34;							\
	o[2 * os] = s12 + 4.0f * s34;							\
	o[3 * os] = d12 + 8.0f * d34 + m[5 * ms];					\
}

#endif
