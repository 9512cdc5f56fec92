/*
 * rt_cvec.h - the vectors the c target's convolution kernels share, pasted
 * into the generated code (embedded into collagec) before rt_cdw.h and
 * rt_cpw.h, which use them: RT_CV_V floats a vector (16 with AVX-512, else
 * 8), loads and stores of the first n lanes under a mask (a lane at a time
 * without AVX2), and a square transpose in registers (16 x 16 with
 * AVX-512, 8 x 8 with AVX2; element by element without either), and
 * rt_cv_trans2d, the transpose.blocks strategy's: a strided matrix
 * transposed in those squares (Transpose moving the last axis), and
 * rt_im2col2d, the float convolutions' patch matrix (conv.im2col,
 * conv.im2col_tiles).
 *
 * Example: rt_cv_vec v = rt_cv_load(p, 5); rt_cv_store(q, v, 5);
 */
#ifndef RT_CVEC_H
#define RT_CVEC_H

#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
#define RT_CV_V 16			/* floats per vector */
#else
#define RT_CV_V 8
#endif

typedef float rt_cv_vec __attribute__((vector_size(4 * RT_CV_V)));
/* the same, for loads and stores at any float boundary */
typedef float rt_cv_uvec __attribute__((vector_size(4 * RT_CV_V), aligned(4)));

/*
 * c + a * b, rounded once where the ISA has FMA (twice where not), as the
 * loop IR's forms and -ffp-contract=fast compute it. GCC contracts the
 * sums of the unrolled loops itself, but left a tail loop's vmulps and
 * vaddps apart with AVX2 (rt_pw_gemv's last columns): a unit off.
 */
static inline __attribute__((always_inline)) rt_cv_vec rt_cv_fmadd(rt_cv_vec a, float b,
								    rt_cv_vec c)
{
#if defined(__AVX512F__)
	return (rt_cv_vec)_mm512_fmadd_ps((__m512)a, _mm512_set1_ps(b), (__m512)c);
#elif defined(__AVX2__) && defined(__FMA__)
	return (rt_cv_vec)_mm256_fmadd_ps((__m256)a, _mm256_set1_ps(b), (__m256)c);
#else
	return c + a * b;
#endif
}

#if defined(__AVX512F__)
/* r[j][i] = r[i][j], i, j < 16 */
static inline __attribute__((always_inline)) void rt_cv_transpose(rt_cv_vec *r)
{
	__m512 t[16], u[16];

#pragma GCC unroll 16
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps((__m512)r[i], (__m512)r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps((__m512)r[i], (__m512)r[i + 1]);
	}
	/* u[4g + k], 128-bit lane L: column 4L + k of rows 4g .. 4g + 3 */
#pragma GCC unroll 16
	for (int g = 0; g < 16; g += 4) {
		u[g] = _mm512_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
		u[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
		u[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
		u[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
	}
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		__m512 p = _mm512_shuffle_f32x4(u[k], u[4 + k], _MM_SHUFFLE(1, 0, 1, 0));
		__m512 q = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], _MM_SHUFFLE(1, 0, 1, 0));
		__m512 p2 = _mm512_shuffle_f32x4(u[k], u[4 + k], _MM_SHUFFLE(3, 2, 3, 2));
		__m512 q2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], _MM_SHUFFLE(3, 2, 3, 2));

		r[k] = (rt_cv_vec)_mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(2, 0, 2, 0));
		r[4 + k] = (rt_cv_vec)_mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(3, 1, 3, 1));
		r[8 + k] = (rt_cv_vec)_mm512_shuffle_f32x4(p2, q2, _MM_SHUFFLE(2, 0, 2, 0));
		r[12 + k] = (rt_cv_vec)_mm512_shuffle_f32x4(p2, q2, _MM_SHUFFLE(3, 1, 3, 1));
	}
}

/* n (<= 16) floats from p, the rest 0 */
static inline __attribute__((always_inline)) rt_cv_vec rt_cv_load(const float *p, int64_t n)
{
	return (rt_cv_vec)_mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}

static inline __attribute__((always_inline)) void rt_cv_store(float *p, rt_cv_vec v, int64_t n)
{
	_mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), (__m512)v);
}
#elif defined(__AVX2__)
static inline __attribute__((always_inline)) void rt_cv_transpose(rt_cv_vec *r)
{
	__m256 t[8], u[8];

#pragma GCC unroll 8
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps((__m256)r[i], (__m256)r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps((__m256)r[i], (__m256)r[i + 1]);
	}
#pragma GCC unroll 8
	for (int g = 0; g < 8; g += 4) {
		u[g] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
		u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
		u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
		u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
	}
#pragma GCC unroll 4
	for (int k = 0; k < 4; k++) {
		r[k] = (rt_cv_vec)_mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
		r[4 + k] = (rt_cv_vec)_mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
	}
}

static inline __m256i rt_cv_mask(int64_t n)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
				  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __attribute__((always_inline)) rt_cv_vec rt_cv_load(const float *p, int64_t n)
{
	return (rt_cv_vec)_mm256_maskload_ps(p, rt_cv_mask(n));
}

static inline __attribute__((always_inline)) void rt_cv_store(float *p, rt_cv_vec v, int64_t n)
{
	_mm256_maskstore_ps(p, rt_cv_mask(n), (__m256)v);
}
#else
static inline __attribute__((always_inline)) void rt_cv_transpose(rt_cv_vec *r)
{
	for (int i = 0; i < RT_CV_V; i++)
		for (int j = i + 1; j < RT_CV_V; j++) {
			float t = r[i][j];

			r[i][j] = r[j][i];
			r[j][i] = t;
		}
}

static inline __attribute__((always_inline)) rt_cv_vec rt_cv_load(const float *p, int64_t n)
{
	rt_cv_vec v = { 0 };

	for (int64_t i = 0; i < n; i++)
		v[i] = p[i];
	return v;
}

static inline __attribute__((always_inline)) void rt_cv_store(float *p, rt_cv_vec v, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = v[i];
}
#endif

/*
 * y[r * sy + c] = x[c * sx + r] for r < R, c < C: RT_CV_V x RT_CV_V squares
 * loaded by rows of x (masked at the edges), transposed in registers and
 * stored by rows of y. Each element is copied, so any split gives the
 * same bytes: a large one splits its columns between threads (a Transpose
 * with more axes runs these calls in a parallel region instead).
 */
static void rt_cv_trans2d_cols(const float *x, int64_t sx, float *y, int64_t sy, int64_t R,
			       int64_t C, int64_t c_lo, int64_t c_hi)
{
	rt_cv_vec t[RT_CV_V];

	for (int64_t c0 = c_lo; c0 < c_hi; c0 += RT_CV_V) {
		int64_t nc = C - c0 < RT_CV_V ? C - c0 : RT_CV_V;

		for (int64_t r0 = 0; r0 < R; r0 += RT_CV_V) {
			int64_t nr = R - r0 < RT_CV_V ? R - r0 : RT_CV_V;

			if (nr == RT_CV_V) {
				for (int i = 0; i < nc; i++)
					t[i] = *(const rt_cv_uvec *)(x + (c0 + i) * sx + r0);
			} else {
				for (int i = 0; i < nc; i++)
					t[i] = rt_cv_load(x + (c0 + i) * sx + r0, nr);
			}
			for (int i = (int)nc; i < RT_CV_V; i++)
				t[i] = (rt_cv_vec){ 0 };
			rt_cv_transpose(t);
			if (nc == RT_CV_V) {
				for (int k = 0; k < nr; k++)
					*(rt_cv_uvec *)(y + (r0 + k) * sy + c0) = t[k];
			} else {
				for (int k = 0; k < nr; k++)
					rt_cv_store(y + (r0 + k) * sy + c0, t[k], nc);
			}
		}
	}
}

struct rt_cv_trans2d_job {
	const float *x;
	float *y;
	int64_t sx, sy, R, C;
};

static void rt_cv_trans2d_some(void *v, int64_t lo, int64_t hi)
{
	const struct rt_cv_trans2d_job *j = v;
	int64_t c_hi = hi * RT_CV_V < j->C ? hi * RT_CV_V : j->C;

	rt_cv_trans2d_cols(j->x, j->sx, j->y, j->sy, j->R, j->C, lo * RT_CV_V, c_hi);
}

static void rt_cv_trans2d(const float *x, int64_t sx, float *y, int64_t sy, int64_t R, int64_t C,
			  int threads)
{
	struct rt_cv_trans2d_job j = { x, y, sx, sy, R, C };
	int64_t blocks = (C + RT_CV_V - 1) / RT_CV_V;

	if (threads > 1 && blocks > 1 && R * C >= 65536)	/* see transpose.blocks */
		rt_par_for(threads, blocks, 1, rt_cv_trans2d_some, &j);
	else
		rt_cv_trans2d_cols(x, sx, y, sy, R, C, 0, C);
}

/*
 * im2col of a 2-D float convolution, or a 1-D one as one row (conv.im2col
 * and conv.im2col_tiles):
 * col[((c * kh + u) * kw + v) * OH * OW + oh * OW + ow] = x[c, oh * sh +
 * u * dh - ph, ow * sw + v * dw - pw], 0 where that is outside the H x W
 * plane, for c < C. Each output row of each (c, u, v) is three runs: the
 * padding's zeros, the columns inside the plane (a memcpy at column stride
 * 1, vector deinterleaves at stride 2, a plain loop otherwise), zeros. The
 * loop IR's copy tested both bounds of every element and split its work by
 * input channel: EfficientNet-B0's stem (3 channels, 3x3, stride 2, 224 x
 * 224) took 0.19 ms of it, on one of two threads for a third of the time.
 * Threads split the rows (c, u, v, oh); each element is copied, so any
 * split gives the same bytes.
 */
struct rt_im2col_job {
	const float *x;
	float *col;
	int64_t H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW;
};

/* n elements src[0], src[2], ... into dst (n >= 1; reads src[0 .. 2n - 2] only) */
static inline void rt_im2col_even(float *restrict dst, const float *restrict src, int64_t n)
{
	int64_t i = 0;

#if defined(__AVX512F__)
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
						26, 28, 30);

	for (; i + 17 <= n; i += 16)	/* 32 floats read: src[2i + 31] <= src[2n - 2] */
		_mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * i), even,
								 _mm512_loadu_ps(src + 2 * i + 16)));
#elif defined(__AVX2__)
	for (; i + 9 <= n; i += 8) {	/* 16 floats read: src[2i + 15] <= src[2n - 2] */
		__m256 e = _mm256_shuffle_ps(_mm256_loadu_ps(src + 2 * i),
					     _mm256_loadu_ps(src + 2 * i + 8), _MM_SHUFFLE(2, 0, 2, 0));

		_mm256_storeu_ps(dst + i, _mm256_castpd_ps(_mm256_permute4x64_pd(
						  _mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0))));
	}
#endif
	for (; i < n; i++)
		dst[i] = src[2 * i];
}

/* rows [lo, hi) of rt_im2col2d: row r is (c, u, v, oh) in that order */
static void rt_im2col_rows(void *v, int64_t lo, int64_t hi)
{
	const struct rt_im2col_job *j = v;
	int64_t OW = j->OW;

	for (int64_t r = lo; r < hi; r++) {
		int64_t oh = r % j->OH, q = r / j->OH;
		int64_t kv = q % j->kw, ku = q / j->kw % j->kh, c = q / j->kw / j->kh;
		int64_t ih = oh * j->sh + ku * j->dh - j->ph, off = kv * j->dw - j->pw;
		float *dst = j->col + r * OW;
		const float *src;
		int64_t lo_ow, hi_ow;	/* columns inside the plane: [lo_ow, hi_ow) */

		if (ih < 0 || ih >= j->H) {
			memset(dst, 0, sizeof(float) * (size_t)OW);
			continue;
		}
		/* iw = ow * sw + off within [0, W) */
		lo_ow = off >= 0 ? 0 : (-off + j->sw - 1) / j->sw;
		hi_ow = j->W - 1 - off < 0 ? 0 : (j->W - 1 - off) / j->sw + 1;
		lo_ow = lo_ow < OW ? lo_ow : OW;
		hi_ow = hi_ow < OW ? hi_ow : OW;
		hi_ow = hi_ow > lo_ow ? hi_ow : lo_ow;
		memset(dst, 0, sizeof(float) * (size_t)lo_ow);
		memset(dst + hi_ow, 0, sizeof(float) * (size_t)(OW - hi_ow));
		if (hi_ow == lo_ow)
			continue;
		src = j->x + (c * j->H + ih) * j->W + lo_ow * j->sw + off;
		if (j->sw == 1)
			memcpy(dst + lo_ow, src, sizeof(float) * (size_t)(hi_ow - lo_ow));
		else if (j->sw == 2)
			rt_im2col_even(dst + lo_ow, src, hi_ow - lo_ow);
		else
			for (int64_t ow = lo_ow; ow < hi_ow; ow++)
				dst[ow] = src[(ow - lo_ow) * j->sw];
	}
}

/*
 * C planes x (H x W) into col as above; sh, sw strides, dh, dw dilations,
 * ph, pw the leading pads (>= 0), OH x OW the output's size.
 */
static void rt_im2col2d(const float *x, float *col, int64_t C, int64_t H, int64_t W, int64_t kh,
			int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph,
			int64_t pw, int64_t OH, int64_t OW, int threads)
{
	struct rt_im2col_job j = { x, col, H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW };
	int64_t rows = C * kh * kw * OH;

	if (threads > 1 && rows * OW >= 65536)
		rt_par_for(threads, rows, (4096 + OW - 1) / OW, rt_im2col_rows, &j);
	else
		rt_im2col_rows(&j, 0, rows);
}

#endif
