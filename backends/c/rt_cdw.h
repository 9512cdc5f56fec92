/*
 * rt_cdw.h - the c target's depthwise 2-D convolution across channels,
 * pasted into the generated code (embedded into collagec) by the strategy
 * conv.depthwise_vec of backends/c/c_strategies.c.
 *
 * The row form (conv.depthwise_rows) runs along an output row, which at
 * MobileNet's and EfficientNet's 7x7 and 14x14 is shorter than a vector
 * and its loop overhead: a 5x5 over 1152 channels of 7x7 ran at 4 GFLOP/s.
 * Here 8 channels share a vector instead: rt_cdw2d takes a block of up to
 * RT_DW_LANES channel planes (NCHW, so they are contiguous), copies a strip
 * of their input rows into a zero-padded buffer with the channels
 * interleaved (pixel-major, a channel a lane), and computes each output
 * pixel of the block as one vector: bias, then tap (kh, kw) in row-major
 * order times a vector of the 8 channels' weights, RT_DW_OW pixels at once
 * so each weight vector is loaded once per group. The planes are written
 * back lane by lane. The padding is in the buffer, so no tap is tested.
 *
 * The strip holds as many input rows as fit RT_DW_BUF vectors (32 KB on
 * the stack); strips overlap by the window's height less the stride. Each
 * output gets bias + its taps in the loop nest's order (that of
 * conv.depthwise_rows too), the same at every thread count: blocks are the
 * unit of work, a block one call.
 *
 * Example: rt_cdw2d(x, w, b, y, 8, 7, 7, 5, 5, 1, 1, 1, 1, 2, 2, 7, 7, 1);
 */
#ifndef RT_CDW_H
#define RT_CDW_H

#include <stdint.h>
#include <string.h>

#define RT_DW_LANES 8			/* channels per vector */
#define RT_DW_BUF 1024			/* vectors of the padded strip (32 KB) */
#define RT_DW_TAPS 64			/* kh * kw at most */
#define RT_DW_OW 4			/* output pixels per group (a0..a3) */

typedef float rt_dw_vec __attribute__((vector_size(4 * RT_DW_LANES)));

/*
 * nch (<= RT_DW_LANES) channels: x their input planes (H x W), w their
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
	rt_dw_vec buf[RT_DW_BUF], wv[RT_DW_TAPS], b0 = { 0 };
	int64_t wp = (OW - 1) * sw + (kw - 1) * dw + 1;	/* padded columns read */
	int64_t span = (kh - 1) * dh + 1;			/* input rows per output row */
	int64_t rows = (RT_DW_BUF / wp - span) / sh + 1;	/* output rows per strip */
	int64_t taps = kh * kw;

	(void)threads;

	memset(wv, 0, sizeof(wv[0]) * (size_t)taps);
	for (int64_t c = 0; c < nch; c++) {
		for (int64_t t = 0; t < taps; t++)
			wv[t][c] = w[c * taps + t];
		if (bias)
			b0[c] = bias[c];
	}
	if (rows > OH)
		rows = OH;
	for (int64_t oh0 = 0; oh0 < OH; oh0 += rows) {
		int64_t n_oh = OH - oh0 < rows ? OH - oh0 : rows;
		int64_t r0 = oh0 * sh - ph, n_r = (n_oh - 1) * sh + span;

		/* the strip: padded input rows r0 .. r0 + n_r - 1, a channel a lane */
		memset(buf, 0, sizeof(buf[0]) * (size_t)(n_r * wp));
		for (int64_t r = 0; r < n_r; r++) {
			int64_t ih = r0 + r, q0 = pw, q1 = pw + W;

			if (ih < 0 || ih >= H)
				continue;
			if (q1 > wp)
				q1 = wp;
			for (int64_t c = 0; c < nch; c++) {
				const float *xr = x + (c * H + ih) * W - pw;

				for (int64_t q = q0; q < q1; q++)
					buf[r * wp + q][c] = xr[q];
			}
		}
		for (int64_t i = 0; i < n_oh; i++) {
			const rt_dw_vec *row = buf + i * sh * wp;
			float *yr = y + (oh0 + i) * OW;
			int64_t ow = 0;

			for (; ow + RT_DW_OW <= OW; ow += RT_DW_OW) {
				rt_dw_vec a0 = b0, a1 = b0, a2 = b0, a3 = b0;

				for (int64_t u = 0; u < kh; u++) {
					const rt_dw_vec *p = row + u * dh * wp + ow * sw;
					const rt_dw_vec *k = wv + u * kw;

					for (int64_t v = 0; v < kw; v++, p += dw) {
						a0 += k[v] * p[0];
						a1 += k[v] * p[sw];
						a2 += k[v] * p[2 * sw];
						a3 += k[v] * p[3 * sw];
					}
				}
				for (int64_t c = 0; c < nch; c++) {
					float *yc = yr + c * OH * OW + ow;

					yc[0] = a0[c];
					yc[1] = a1[c];
					yc[2] = a2[c];
					yc[3] = a3[c];
				}
			}
			for (; ow < OW; ow++) {
				rt_dw_vec a = b0;

				for (int64_t u = 0; u < kh; u++)
					for (int64_t v = 0; v < kw; v++)
						a += wv[u * kw + v] * row[u * dh * wp + ow * sw + v * dw];
				for (int64_t c = 0; c < nch; c++)
					yr[c * OH * OW + ow] = a[c];
			}
		}
	}
}

#endif
