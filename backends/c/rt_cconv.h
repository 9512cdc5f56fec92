/*
 * rt_cconv.h - the c target's convolution by rt_cgemm.h, pasted into the
 * generated code after rt_cgemm.h (embedded into collagec) by the strategy
 * conv.micro of backends/c/c_strategies.c.
 *
 * A 2-D convolution of one image is, per group, the GEMM
 *
 *	y[M/group, pixels] = act(w[M/group, C/group * kh * kw] x col + bias + res)
 *
 * where col's row (c, i, j) holds input channel c shifted by tap (i, j) at
 * every output pixel (im2col). col is never built whole: it is packed one
 * 16-pixel panel of rt_cgemm's layout at a time (the rows of a panel one
 * after the other, 16 floats each, zero in the padding and past the last
 * pixel) into a slot of scratch, and rt_cgemm multiplies that panel while
 * it is still in L1/L2. A panel's pixels fall into runs of one output row
 * each; per run and row of col the columns inside the image are a strided
 * copy (a unit-stride one at stride 1) between zeros, so no bounds check
 * is left per element.
 *
 * Each output element is the same sum in the same order as one rt_cgemm
 * over the whole col would compute: results do not depend on the number of
 * threads. Panels are split over the OpenMP team; a thread packs into its
 * own slot of scratch, so at most `slots` threads work on one convolution.
 * When scratch has a slot for every panel (small images), all panels are
 * packed first and one rt_cgemm multiplies them: each block of w is then
 * read once per image instead of once per panel.
 *
 * act (enum rt_cg_act, with lo and hi for a Clip) and res (a residual of
 * y's layout, or NULL) are the fused partition's Relu, Clip and Add, applied
 * in rt_cgemm's write-back (see rt_cgemm.h).
 *
 * Example (what conv.micro emits, per image n, for a Conv + Relu):
 *	rt_cconv2d(x + n * C * H * W, C, H, W, 3, 3, 1, 1, 1, 1, 1, 1, OH, OW,
 *		   w, M, group, bias, RT_CG_ACT_RELU, 0, 0, NULL,
 *		   y + n * M * OH * OW, scratch, slots, threads);
 */
#ifndef RT_CCONV_H
#define RT_CCONV_H

#include <stdint.h>
#include <string.h>

/* Rows of a panel: one run of output pixels in one output row. */
struct rt_cc_run {
	int64_t jj, len;	/* its columns [jj, jj + len) of the panel */
	int64_t ih, iw;		/* input position of its first pixel at tap (0, 0) */
};

/*
 * Packs panel jp (pixels jp * 16 ..) of channels [c0, c0 + cg) into dst:
 * row ((c - c0) * kh + i) * kw + j at dst + row * 16.
 */
static inline void rt_cc_pack(const float *x, int64_t cg, int64_t H, int64_t W, int64_t kh,
			      int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
			      int64_t ph, int64_t pw, int64_t OH, int64_t OW, int64_t jp,
			      float *dst)
{
	struct rt_cc_run run[RT_CG_NR];
	int64_t p = jp * RT_CG_NR, P = OH * OW, nrun = 0, tail;

	if (kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && OW == W) {
		/* pointwise: the panel's pixels are consecutive in every channel */
		int64_t n = P - p < RT_CG_NR ? P - p : RT_CG_NR;

		for (int64_t c = 0; c < cg; c++) {
			float *d = dst + c * RT_CG_NR;

			if (n == RT_CG_NR) {
				memcpy(d, x + c * H * W + p, sizeof(float) * RT_CG_NR);
			} else {
				memcpy(d, x + c * H * W + p, sizeof(float) * (size_t)n);
				memset(d + n, 0, sizeof(float) * (size_t)(RT_CG_NR - n));
			}
		}
		return;
	}
	/* the panel's pixels, output row by output row */
	for (int64_t jj = 0; jj < RT_CG_NR && p < P; nrun++) {
		int64_t oh = p / OW, ow = p % OW, len = OW - ow;

		if (len > RT_CG_NR - jj)
			len = RT_CG_NR - jj;
		if (len > P - p)
			len = P - p;
		run[nrun] = (struct rt_cc_run){ jj, len, oh * sh - ph, ow * sw - pw };
		jj += len;
		p += len;
	}
	tail = nrun ? run[nrun - 1].jj + run[nrun - 1].len : 0;
	for (int64_t c = 0; c < cg; c++) {
		const float *xc = x + c * H * W;

		for (int64_t i = 0; i < kh; i++)
			for (int64_t j = 0; j < kw; j++) {
				float *d = dst + ((c * kh + i) * kw + j) * RT_CG_NR;

				for (int64_t r = 0; r < nrun; r++) {
					const struct rt_cc_run *u = &run[r];
					int64_t ih = u->ih + i * dh, iw = u->iw + j * dw;
					int64_t lo = 0, hi = u->len;
					float *dr = d + u->jj;
					const float *xr;

					if (ih < 0 || ih >= H) {
						memset(dr, 0, sizeof(float) * (size_t)u->len);
						continue;
					}
					/* columns [lo, hi) of the run read inside the row */
					if (iw < 0)
						lo = (-iw + sw - 1) / sw;
					if (iw + (hi - 1) * sw >= W)
						hi = W - 1 - iw < 0 ? 0 : (W - 1 - iw) / sw + 1;
					if (lo > hi)
						lo = hi;
					xr = xc + ih * W + iw;
					for (int64_t q = 0; q < lo; q++)
						dr[q] = 0.0f;
					if (sw == 1)
						memcpy(dr + lo, xr + lo, sizeof(float) * (size_t)(hi - lo));
					else
						for (int64_t q = lo; q < hi; q++)
							dr[q] = xr[q * sw];
					for (int64_t q = hi; q < u->len; q++)
						dr[q] = 0.0f;
				}
				if (tail < RT_CG_NR)
					memset(d + tail, 0, sizeof(float) * (size_t)(RT_CG_NR - tail));
			}
	}
}

/*
 * y [M, OH * OW] = act(conv(x [C, H, W], w [M, C/group, kh, kw]) + bias[M]
 * + res [M, OH * OW]) (bias, res NULL: none) for one image: kernel kh x kw,
 * strides sh, sw, dilations dh, dw, padding ph, pw at the top and the
 * left. scratch holds `slots` panels of C/group * kh * kw rows (slots >= 1).
 */
/* rt_cconv2d's arguments, for rt_par_for. */
struct rt_cc_job {
	const float *x, *w, *bias, *res;
	float *y, *scratch;
	int64_t C, H, W, kh, kw, sh, sw, dh, dw, ph, pw, OH, OW, M, group;
	int act;
	float lo, hi;
	int64_t np, nt;		/* panels; shares of them (rt_cc_share) */
	int64_t gi;		/* the group rt_cc_pack_some packs */
};

/* Packs panels [p0, p1) of group j->gi, each into its own slot. */
static void rt_cc_pack_some(void *v, int64_t p0, int64_t p1)
{
	const struct rt_cc_job *j = v;
	int64_t cg = j->C / j->group, Kg = cg * j->kh * j->kw;

	for (int64_t jp = p0; jp < p1; jp++)
		rt_cc_pack(j->x + j->gi * cg * j->H * j->W, cg, j->H, j->W, j->kh, j->kw, j->sh,
			   j->sw, j->dh, j->dw, j->ph, j->pw, j->OH, j->OW, jp,
			   j->scratch + jp * Kg * RT_CG_NR);
}

/* Shares [t0, t1) of j->nt: share t packs and multiplies its panels of every group in slot t. */
static void rt_cc_share(void *v, int64_t t0, int64_t t1)
{
	const struct rt_cc_job *j = v;
	int64_t P = j->OH * j->OW, cg = j->C / j->group, Mg = j->M / j->group;
	int64_t Kg = cg * j->kh * j->kw, np = j->np, nt = j->nt;

	for (int64_t t = t0; t < t1; t++) {
		float *slot = j->scratch + t * Kg * RT_CG_NR;

		for (int64_t gi = 0; gi < j->group; gi++)
			for (int64_t jp = t * np / nt; jp < (t + 1) * np / nt; jp++) {
				int64_t j0 = jp * RT_CG_NR;

				rt_cc_pack(j->x + gi * cg * j->H * j->W, cg, j->H, j->W, j->kh,
					   j->kw, j->sh, j->sw, j->dh, j->dw, j->ph, j->pw, j->OH,
					   j->OW, jp, slot);
				rt_cgemm(Mg, P - j0 < RT_CG_NR ? P - j0 : RT_CG_NR, Kg, 1.0f,
					 j->w + gi * Mg * Kg, Kg, 1, slot, Kg * RT_CG_NR,
					 j->y + gi * Mg * P + j0, P,
					 j->bias ? j->bias + gi * Mg : NULL, 1, 0, 1.0f, j->act, j->lo,
					 j->hi, j->res ? j->res + gi * Mg * P + j0 : NULL, P, 1);
			}
	}
}

static inline void rt_cconv2d(const float *x, int64_t C, int64_t H, int64_t W, int64_t kh,
			      int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
			      int64_t ph, int64_t pw, int64_t OH, int64_t OW, const float *w,
			      int64_t M, int64_t group, const float *bias, int act, float lo,
			      float hi, const float *res, float *y, float *scratch, int64_t slots,
			      int threads)
{
	int64_t P = OH * OW, np = (P + RT_CG_NR - 1) / RT_CG_NR;
	int64_t cg = C / group, Mg = M / group, Kg = cg * kh * kw;
	int team = threads < slots ? threads : (int)slots;
	struct rt_cc_job j = { x, w, bias, res, y, scratch, C, H, W, kh, kw, sh, sw, dh, dw,
			       ph, pw, OH, OW, M, group, act, lo, hi, np, 1, 0 };

	if (np <= slots) {
		/*
		 * Room for every panel (a small image: ResNet-18's 7x7 has 4):
		 * pack them all, then one rt_cgemm over them reads each block
		 * of w from memory once for all of them, not once per panel
		 * (w of a 512-channel 3x3 conv is 9 MB); w is read in place,
		 * as copying it into tiles would cost what that saves
		 */
		for (int64_t gi = 0; gi < group; gi++) {
			j.gi = gi;
			if (team > 1 && np > 1 && P * Kg >= 65536)
				rt_par_for(team, np, 1, rt_cc_pack_some, &j);
			else
				rt_cc_pack_some(&j, 0, np);
			rt_cgemm_ex(Mg, P, Kg, 1.0f, w + gi * Mg * Kg, Kg, 1, scratch,
				    Kg * RT_CG_NR, y + gi * Mg * P, P, bias ? bias + gi * Mg : NULL,
				    1, 0, 1.0f, act, lo, hi, res ? res + gi * Mg * P : NULL, P,
				    threads, RT_CG_NC + 1);
		}
		return;
	}
	/*
	 * below about a quarter of a million multiply-adds a team costs more
	 * than it gains; else as many shares as there are slots, up to
	 * RT_PAR_SPLIT per thread (each share packs into a slot of its own)
	 */
	if (team > 1 && Mg * P * Kg >= 262144) {
		int64_t most = slots < RT_PAR_SPLIT * (int64_t)team ? slots
			       : RT_PAR_SPLIT * (int64_t)team;

		j.nt = np < most ? np : most;
		rt_par_for(team, j.nt, 1, rt_cc_share, &j);
	} else {
		rt_cc_share(&j, 0, 1);
	}
}

#endif
