/*
 * rt_cdw.h - the c target's depthwise 2-D convolution across channels,
 * pasted into the generated code (embedded into collagec) by the strategy
 * conv.depthwise_vec of backends/c/c_strategies.c.
 *
 * The row form (conv.depthwise_rows) runs along an output row, which at
 * MobileNet's and EfficientNet's 7x7 and 14x14 is shorter than a vector
 * and its loop overhead: a 5x5 over 1152 channels of 7x7 ran at 4 GFLOP/s.
 * Here the channels share a vector instead (RT_DW_LANES: 16 with AVX-512,
 * else 8): rt_cdw2d takes a block of up to RT_DW_BLOCK channel planes
 * (NCHW, so they are contiguous) and, RT_DW_LANES channels at a time,
 * copies a strip of their input rows into a zero-padded buffer with the
 * channels interleaved (pixel-major, a channel a lane) and computes each
 * output pixel as one vector: bias, then tap (kh, kw) in row-major order
 * times a vector of the channels' weights, RT_DW_OW pixels at once so each
 * weight vector is loaded once per group. The padding is in the buffer, so
 * no tap is tested.
 *
 * Interleaving and de-interleaving, of the weights too, are square
 * transposes in registers (rt_cvec.h: 16 x 16 with AVX-512, 8 x 8 with
 * AVX2; lane by lane without either): a copy lane by lane cost more than
 * the taps, at 3x3 twice as much.
 *
 * The strip holds as many input rows as fit RT_DW_BUF vectors (32 KB with
 * 8 lanes, 64 KB with 16); strips overlap by the window's height less the
 * stride. Each output gets bias + its taps in the loop nest's order (that
 * of conv.depthwise_rows too), the same at every thread count and vector
 * width: blocks are the unit of work, a block one call.
 *
 * Example: rt_cdw2d(x, w, b, y, 16, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 7, 7, 1);
 */
#ifndef RT_CDW_H
#define RT_CDW_H

#include <stdint.h>

#define RT_DW_LANES RT_CV_V		/* channels per vector (rt_cvec.h) */
#define RT_DW_BLOCK 16			/* channels per call at most */
#define RT_DW_BUF 1024			/* vectors of the padded strip */
#define RT_DW_TAPS 64			/* kh * kw at most */
#define RT_DW_OW 4			/* output pixels per group (a0..a3) */

typedef rt_cv_vec rt_dw_vec;

/*
 * Input rows r0 .. r0 + n_r - 1 of nch (<= RT_DW_LANES) planes x (H x W)
 * into buf, wp vectors a row: columns [pw, pw + W) clipped to wp, zeros
 * around them and in rows outside the image.
 */
static inline void rt_dw_strip(rt_dw_vec *restrict buf, const float *restrict x, int64_t nch,
			       int64_t H, int64_t W, int64_t r0, int64_t n_r, int64_t wp,
			       int64_t pw)
{
	rt_dw_vec z = { 0 };
	int64_t lead = pw < wp ? pw : wp;		/* padding columns first */
	int64_t n_in = W < wp - lead ? W : wp - lead;	/* then columns of the image */

	for (int64_t r = 0; r < n_r; r++) {
		rt_dw_vec *br = buf + r * wp, t[RT_DW_LANES];
		int64_t ih = r0 + r;

		if (ih < 0 || ih >= H) {
			for (int64_t q = 0; q < wp; q++)
				br[q] = z;
			continue;
		}
		for (int64_t q = 0; q < lead; q++)
			br[q] = z;
		for (int64_t q = lead + n_in; q < wp; q++)
			br[q] = z;
		for (int64_t q = 0; q < n_in; q += RT_DW_LANES) {
			int64_t n = n_in - q < RT_DW_LANES ? n_in - q : RT_DW_LANES;

			for (int64_t c = 0; c < RT_DW_LANES; c++)
				t[c] = c < nch ? rt_cv_load(x + (c * H + ih) * W + q, n) : z;
			rt_cv_transpose(t);
			for (int64_t i = 0; i < n; i++)
				br[pw + q + i] = t[i];
		}
	}
}

/*
 * Output row yr of nch channels (planes OHW apart) from the strip rows at
 * row: RT_DW_LANES pixels at a time, transposed into the planes. (Copies
 * inlined with 3x3 and 5x5 windows' constants, their taps unrolled, ran
 * within 5% of it, and made a model's C compile 1.6 times slower.)
 */
static inline __attribute__((always_inline)) void
rt_dw_outrow(const rt_dw_vec *restrict row, const rt_dw_vec *restrict wv, rt_dw_vec b0,
	     float *restrict yr, int64_t nch, int64_t OHW, int64_t OW, int64_t kh, int64_t kw,
	     int64_t sw, int64_t dh, int64_t dw, int64_t wp)
{
	for (int64_t ow0 = 0; ow0 < OW; ow0 += RT_DW_LANES) {
		int64_t n = OW - ow0 < RT_DW_LANES ? OW - ow0 : RT_DW_LANES, j = 0;
		rt_dw_vec a[RT_DW_LANES];

		/*
		 * groups of RT_DW_OW pixels; a last group short of pixels
		 * repeats its last one, and the copies are not kept (a row of
		 * 7 is two groups: as a group and three lone pixels it cost
		 * half as much again)
		 */
		for (; j < n; j += RT_DW_OW) {
			rt_dw_vec a0 = b0, a1 = b0, a2 = b0, a3 = b0;
			int64_t o1 = (j + 1 < n ? 1 : n - 1 - j) * sw;
			int64_t o2 = (j + 2 < n ? 2 : n - 1 - j) * sw;
			int64_t o3 = (j + 3 < n ? 3 : n - 1 - j) * sw;

			for (int64_t u = 0; u < kh; u++) {
				const rt_dw_vec *p = row + u * dh * wp + (ow0 + j) * sw;
				const rt_dw_vec *k = wv + u * kw;

				for (int64_t v = 0; v < kw; v++, p += dw) {
					a0 += k[v] * p[0];
					a1 += k[v] * p[o1];
					a2 += k[v] * p[o2];
					a3 += k[v] * p[o3];
				}
			}
			a[j] = a0;
			a[j + 1] = a1;
			a[j + 2] = a2;
			a[j + 3] = a3;
		}
		for (j = n; j < RT_DW_LANES; j++)
			a[j] = b0;
		rt_cv_transpose(a);
		for (int64_t c = 0; c < nch; c++)
			rt_cv_store(yr + c * OHW + ow0, a[c], n);
	}
}

/* rt_cdw2d for nch <= RT_DW_LANES channels */
static void rt_cdw2d_lanes(const float *restrict x, const float *restrict w,
			   const float *restrict bias, float *restrict y, int64_t nch, int64_t H,
			   int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
			   int64_t dw, int64_t ph, int64_t pw, int64_t OH, int64_t OW)
{
	rt_dw_vec buf[RT_DW_BUF], wv[RT_DW_TAPS], b0 = { 0 };
	int64_t wp = (OW - 1) * sw + (kw - 1) * dw + 1;	/* padded columns read */
	int64_t span = (kh - 1) * dh + 1;			/* input rows per output row */
	int64_t rows = (RT_DW_BUF / wp - span) / sh + 1;	/* output rows per strip */
	int64_t taps = kh * kw, OHW = OH * OW;

	/* the channels' weights interleaved: RT_DW_LANES taps of each, transposed */
	for (int64_t t0 = 0; t0 < taps; t0 += RT_DW_LANES) {
		int64_t nt = taps - t0 < RT_DW_LANES ? taps - t0 : RT_DW_LANES;
		rt_dw_vec col[RT_DW_LANES], z = { 0 };

		for (int64_t c = 0; c < RT_DW_LANES; c++)
			col[c] = c < nch ? rt_cv_load(w + c * taps + t0, nt) : z;
		rt_cv_transpose(col);
		for (int64_t t = 0; t < nt; t++)
			wv[t0 + t] = col[t];
	}
	if (bias)
		b0 = rt_cv_load(bias, nch);
	if (rows > OH)
		rows = OH;
	for (int64_t oh0 = 0; oh0 < OH; oh0 += rows) {
		int64_t n_oh = OH - oh0 < rows ? OH - oh0 : rows;

		rt_dw_strip(buf, x, nch, H, W, oh0 * sh - ph, (n_oh - 1) * sh + span, wp, pw);
		for (int64_t i = 0; i < n_oh; i++) {
			const rt_dw_vec *row = buf + i * sh * wp;
			float *yr = y + (oh0 + i) * OW;

			rt_dw_outrow(row, wv, b0, yr, nch, OHW, OW, kh, kw, sw, dh, dw, wp);
		}
	}
}

/*
 * nch (<= RT_DW_BLOCK) channels: x their input planes (H x W), w their
 * weights (kh x kw each), bias theirs or NULL, y their output planes (OH x
 * OW). Strides sh, sw, dilations dh, dw, leading pads ph, pw (>= 0). The
 * caller checks (kh - 1) * dh + 1 rows of the padded width fit RT_DW_BUF.
 * threads is the kernel's (unused: the caller runs blocks in parallel).
 */
static void rt_cdw2d(const float *restrict x, const float *restrict w,
		     const float *restrict bias, float *restrict y, int64_t nch, int64_t H,
		     int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
		     int64_t dw, int64_t ph, int64_t pw, int64_t OH, int64_t OW, int threads)
{
	(void)threads;
	for (int64_t c = 0; c < nch; c += RT_DW_LANES)
		rt_cdw2d_lanes(x + c * H * W, w + c * kh * kw, bias ? bias + c : NULL,
			       y + c * OH * OW, nch - c < RT_DW_LANES ? nch - c : RT_DW_LANES, H,
			       W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW);
}

#endif
