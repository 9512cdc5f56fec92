/*
 * rt_blas.h - the blas target's helpers (backends/blas/blas_target.c):
 * float32 MatMul, Gemm and 2-D Conv through OpenBLAS's cblas_sgemm and
 * cblas_sgemv. Embedded into collagec and pasted into the generated code
 * after rt_model.h as the blas runtime module's prelude, once per model
 * however many partitions ask (the include guard keeps it single even where
 * it were repeated); the module links -lopenblas.
 *
 * The helpers, all row-major:
 *   collagec_blas_matmul  one sgemm per element of the broadcast batch; the
 *                         batch is described by up to 6 groups (extent, stride
 *                         in a, stride in b) that relay_to_tir computes by
 *                         dropping unit dims and merging neighbours that
 *                         broadcast alike. A batch that only a broadcasts over
 *                         (b a plain matrix) folds into M: one sgemm.
 *   collagec_blas_gemm    Y = alpha op(A) op(B) + beta C, C broadcast into Y
 *                         first through (row, column) strides (0 = broadcast).
 *   collagec_blas_conv2d  per image and group: im2col of the group's input
 *                         channels into its part of the kernel's scratch
 *                         (C*kh*kw*OH*OW floats, planned in the workspace
 *                         like any value, never allocated by a run), then
 *                         W_g [Mg, Cg*kh*kw] x col [Cg*kh*kw, OH*OW]; a 1x1,
 *                         stride-1, unpadded conv multiplies the input
 *                         directly. Bias (or 0) initialises Y.
 * All three multiply through collagec_blas_sgemm: sgemm, or sgemv for a
 * one-row or one-column result (OpenBLAS's sgemm packs and does not thread
 * those). Each takes the
 * kernel's thread count last and splits its work over that many threads of
 * the model's pool (rt_par_for, runtime/rt_par.c); OpenBLAS itself is kept
 * at one thread.
 *
 *	// y [m, n] = a [m, k] x b [k, n] + bias [n], then Relu
 *	collagec_blas_gemm(a, b, bias, y, m, n, k, 0, 0, 1.0f, 1.0f, 0, 1, NULL, 1,
 *			   0.0f, 0.0f, threads);
 */
#ifndef COLLAGEC_RT_BLAS_H
#define COLLAGEC_RT_BLAS_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>

void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

/* multiply-adds below which a product runs on one thread */
#define COLLAGEC_BLAS_PAR_MIN 65536
/*
 * Floats of y in one block that an epilogue or a C finishes while it is in
 * cache (256 KB, half of a 512 KB L2), and the fewest rows or columns of a
 * block (narrower GEMMs would lose more in OpenBLAS's packing than the
 * cache saves).
 */
#define COLLAGEC_BLAS_TILE 65536
#define COLLAGEC_BLAS_MIN_BLK 256

/*
 * OpenBLAS's threaded builds stop their idle threads with this (they do it
 * before a fork); weak, as not every build has it (the serial one does not).
 */
int blas_thread_shutdown_(void) __attribute__((weak));

/*
 * Once per process: one thread, and OpenBLAS's own threads stopped. The
 * threaded builds start them when the library loads, and they spin
 * (sched_yield) for 2^28 cycles, a tenth of a second or more, before they
 * sleep: a model run in that time ran its 2-thread kernels at half speed
 * (mlp at N=64: 1.1 ms, 0.52 once they slept). With one thread OpenBLAS
 * starts none again. (Its single-threaded build is no way out: its calls
 * share one buffer pool without a lock, and the helpers call it from
 * several threads at once.)
 */
static void collagec_blas_quiet(void)
{
	if (openblas_get_num_threads() != 1)
		openblas_set_num_threads(1);
	if (blas_thread_shutdown_)
		blas_thread_shutdown_();
}

static pthread_once_t collagec_blas_once = PTHREAD_ONCE_INIT;

/*
 * OpenBLAS runs single-threaded; the helpers split the work over the thread
 * pool the c target's kernels use, so that two pools never spin against
 * each other.
 */
static void collagec_blas_single(void)
{
	pthread_once(&collagec_blas_once, collagec_blas_quiet);
	if (openblas_get_num_threads() != 1)
		openblas_set_num_threads(1);
}

/* y = alpha op(a) op(b) + beta y on one thread, minding the sizes BLAS rejects */
static void collagec_blas_sgemm1(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
				 const float *a, int64_t lda, const float *b, int64_t ldb,
				 float beta, float *y, int64_t ldy)
{
	if (m <= 0 || n <= 0)
		return;
	if (k <= 0) {
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				y[i * ldy + j] = beta == 0.0f ? 0.0f : beta * y[i * ldy + j];
		return;
	}
	/* a one-row or one-column result: gemv (sgemm would pack all of b) */
	if (m == 1) {
		int incx = ta ? (int)lda : 1;

		if (tb)
			cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)k, alpha, b,
				    (int)ldb, a, incx, beta, y, 1);
		else
			cblas_sgemv(CblasRowMajor, CblasTrans, (int)k, (int)n, alpha, b,
				    (int)ldb, a, incx, beta, y, 1);
		return;
	}
	if (n == 1) {
		int incx = tb ? 1 : (int)ldb;

		if (ta)
			cblas_sgemv(CblasRowMajor, CblasTrans, (int)k, (int)m, alpha, a,
				    (int)lda, b, incx, beta, y, (int)ldy);
		else
			cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)m, (int)k, alpha, a,
				    (int)lda, b, incx, beta, y, (int)ldy);
		return;
	}
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a,
		    (int)lda, b, (int)ldb, beta, y, (int)ldy);
}

/*
 * What a helper does to each block of its output right after computing it,
 * while the block is in cache: adds res (the output's layout, row stride
 * ldr; NULL: none), then act: 0 none, 1 Relu, 2 Clip to [lo, hi] (NaN
 * kept, as the ops' own loops keep it). A loop per step, with no branch
 * inside and restrict rows, in forms -O2 vectorises (Clip's as x < lo ?
 * lo : x, which keeps NaN; with an explicit NaN test it stayed scalar).
 */
static void collagec_blas_epi_row(float *restrict y, const float *restrict res, int64_t n,
				  int act, float lo, float hi)
{
	if (res)
		for (int64_t j = 0; j < n; j++)
			y[j] += res[j];
	if (act == 1) {
		for (int64_t j = 0; j < n; j++) {
			float v = y[j];

			y[j] = (v > 0.0f) | (v != v) ? v : 0.0f;
		}
	} else if (act == 2) {
		for (int64_t j = 0; j < n; j++) {
			float v = y[j];

			v = v < lo ? lo : v;
			y[j] = v > hi ? hi : v;
		}
	}
}

static void collagec_blas_epi(float *y, int64_t ldy, const float *res, int64_t ldr, int64_t m,
			      int64_t n, int act, float lo, float hi)
{
	if (!res && !act)
		return;
	for (int64_t i = 0; i < m; i++)
		collagec_blas_epi_row(y + i * ldy, res ? res + i * ldr : NULL, n, act, lo, hi);
}

/* Rows [r0, r1), columns [c0, c1) of y = c broadcast through its strides (crs, ccs). */
static void collagec_blas_init(float *y, int64_t ldy, const float *c, int64_t crs, int64_t ccs,
			       int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
	for (int64_t i = r0; i < r1; i++) {
		float *restrict yr = y + i * ldy;
		const float *cr = c + i * crs;

		if (ccs == 0) {
			float v = cr[0];

			for (int64_t j = c0; j < c1; j++)
				yr[j] = v;
		} else if (ccs == 1) {
			memcpy(yr + c0, cr + c0, (size_t)(c1 - c0) * sizeof(float));
		} else {
			for (int64_t j = c0; j < c1; j++)
				yr[j] = cr[j * ccs];
		}
	}
}

/*
 * Block [s, e) of the rows (cols 0) or columns (cols 1) of y = alpha op(a)
 * op(b) + beta c, then the epilogue: c (NULL: none) is broadcast through
 * its strides (crs, ccs); it initialises the block when beta is not 0, and
 * when it is, 0 * c is added after (NaN and infinity still propagate).
 */
static void collagec_blas_block(int cols, int64_t s, int64_t e, int ta, int tb, int64_t m,
				int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
				const float *b, int64_t ldb, float beta, float *y, int64_t ldy,
				const float *c, int64_t crs, int64_t ccs, const float *res,
				int64_t ldr, int act, float lo, float hi)
{
	int64_t r0 = cols ? 0 : s, r1 = cols ? m : e, c0 = cols ? s : 0, c1 = cols ? e : n;
	float *yb = y + r0 * ldy + c0;

	if (c && beta != 0.0f)
		collagec_blas_init(y, ldy, c, crs, ccs, r0, r1, c0, c1);
	collagec_blas_sgemm1(ta, tb, r1 - r0, c1 - c0, k, alpha,
			     cols ? a : ta ? a + r0 : a + r0 * lda, lda,
			     !cols ? b : tb ? b + c0 * ldb : b + c0, ldb,
			     c && beta != 0.0f ? beta : 0.0f, yb, ldy);
	if (c && beta == 0.0f)
		for (int64_t i = r0; i < r1; i++)
			for (int64_t j = c0; j < c1; j++)
				y[i * ldy + j] += 0.0f * c[i * crs + j * ccs];
	collagec_blas_epi(yb, ldy, res ? res + r0 * ldr + c0 : NULL, ldr, r1 - r0, c1 - c0, act,
			  lo, hi);
}

/* collagec_blas_sgemm's blocks, for rt_par_for. */
struct collagec_blas_job {
	int cols, ta, tb, act;
	int64_t m, n, k, lda, ldb, ldy, crs, ccs, ldr, blk, ext;
	float alpha, beta, lo, hi;
	const float *a, *b, *c, *res;
	float *y;
};

static void collagec_blas_blocks(void *v, int64_t q0, int64_t q1)
{
	const struct collagec_blas_job *j = v;

	for (int64_t q = q0; q < q1; q++)
		collagec_blas_block(j->cols, q * j->blk,
				    q * j->blk + j->blk > j->ext ? j->ext : q * j->blk + j->blk,
				    j->ta, j->tb, j->m, j->n, j->k, j->alpha, j->a, j->lda, j->b,
				    j->ldb, j->beta, j->y, j->ldy, j->c, j->crs, j->ccs, j->res, j->ldr,
				    j->act, j->lo, j->hi);
}

/*
 * The same on nt threads, in blocks of columns (or rows, when there are
 * more), each finished by the epilogue while it is in cache: blocks of
 * at most COLLAGEC_BLAS_TILE floats of y where there is an epilogue to
 * run, one per thread otherwise.
 */
static void collagec_blas_sgemm(int nt, int ta, int tb, int64_t m, int64_t n, int64_t k,
				float alpha, const float *a, int64_t lda, const float *b,
				int64_t ldb, float beta, float *y, int64_t ldy, const float *c,
				int64_t crs, int64_t ccs, const float *res, int64_t ldr, int act,
				float lo, float hi)
{
	int cols = n >= m;
	int64_t ext = cols ? n : m, other = cols ? m : n, blk, nb;

	if (m <= 0 || n <= 0)
		return;
	if (nt <= 1 || m * n * k < COLLAGEC_BLAS_PAR_MIN || ext < 2)
		nt = 1;
	if (nt > ext)
		nt = (int)ext;
	nb = nt;
	/*
	 * with an epilogue or a c, blocks y's cache can hold, of 256 or more,
	 * as many for each thread (uneven shares made 2-thread runs slower)
	 */
	if ((c || res || act) && (ext + nt - 1) / nt * other > COLLAGEC_BLAS_TILE) {
		int64_t want = COLLAGEC_BLAS_TILE / other;

		want = want < COLLAGEC_BLAS_MIN_BLK ? COLLAGEC_BLAS_MIN_BLK : want;
		nb = (ext + want - 1) / want;
		nb = (nb + nt - 1) / nt * nt;
	}
	blk = (ext + nb - 1) / nb;
	/* blocks of whole SIMD widths where there is room */
	if (blk < ext && ext >= 16 * nb)
		blk = (blk + 15) / 16 * 16;
	if (blk > ext)
		blk = ext;
	nb = (ext + blk - 1) / blk;
	if (nt <= 1 || nb < 2) {
		for (int64_t q = 0; q < nb; q++)
			collagec_blas_block(cols, q * blk, q * blk + blk > ext ? ext : q * blk + blk,
					    ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, y, ldy,
					    c, crs, ccs, res, ldr, act, lo, hi);
		return;
	}
	{
		struct collagec_blas_job j = { cols, ta, tb, act, m, n, k, lda, ldb, ldy, crs, ccs,
					       ldr, blk, ext, alpha, beta, lo, hi, a, b, c, res, y };

		rt_par_for(nt, nb, 1, collagec_blas_blocks, &j);
	}
}

/* Product i of the batch: its offsets in a and b from the six (extent, strides) groups. */
static void collagec_blas_matmul1(const float *a, const float *b, float *y, int64_t m, int64_t n,
				  int64_t k, const int64_t *d, const int64_t *sa, const int64_t *sb,
				  int64_t i, const float *res, int act, float lo, float hi, int nt)
{
	int64_t r = i, oa = 0, ob = 0;

	for (int g = 5; g >= 0; g--) {
		oa += r % d[g] * sa[g];
		ob += r % d[g] * sb[g];
		r /= d[g];
	}
	collagec_blas_sgemm(nt, 0, 0, m, n, k, 1.0f, a + oa, k, b + ob, n, 0.0f, y + i * m * n, n,
			    NULL, 0, 0, res ? res + i * m * n : NULL, n, act, lo, hi);
}

/* collagec_blas_matmul's products, for rt_par_for: each on one thread. */
struct collagec_blas_mm_job {
	const float *a, *b;
	float *y;
	const float *res;
	int64_t m, n, k;
	const int64_t *d, *sa, *sb;
	int act;
	float lo, hi;
};

static void collagec_blas_products(void *v, int64_t i0, int64_t i1)
{
	const struct collagec_blas_mm_job *j = v;

	for (int64_t i = i0; i < i1; i++)
		collagec_blas_matmul1(j->a, j->b, j->y, j->m, j->n, j->k, j->d, j->sa, j->sb, i,
				      j->res, j->act, j->lo, j->hi, 1);
}

static void collagec_blas_matmul(const float *a, const float *b, float *y, int64_t m,
				 int64_t n, int64_t k,
				 int64_t d0, int64_t sa0, int64_t sb0, int64_t d1, int64_t sa1,
				 int64_t sb1, int64_t d2, int64_t sa2, int64_t sb2, int64_t d3,
				 int64_t sa3, int64_t sb3, int64_t d4, int64_t sa4, int64_t sb4,
				 int64_t d5, int64_t sa5, int64_t sb5, const float *res, int act,
				 float lo, float hi, int threads)
{
	const int64_t d[6] = { d0, d1, d2, d3, d4, d5 };
	const int64_t sa[6] = { sa0, sa1, sa2, sa3, sa4, sa5 };
	const int64_t sb[6] = { sb0, sb1, sb2, sb3, sb4, sb5 };
	int64_t batch = d0 * d1 * d2 * d3 * d4 * d5;
	int nt = threads > 1 ? threads : 1;

	collagec_blas_single();
	/* at least one product per thread: products in parallel, else each split */
	if (nt > 1 && batch >= nt && batch * m * n * k >= COLLAGEC_BLAS_PAR_MIN) {
		struct collagec_blas_mm_job j = { a, b, y, res, m, n, k, d, sa, sb, act, lo, hi };

		rt_par_for(nt, batch, 1, collagec_blas_products, &j);
		return;
	}
	for (int64_t i = 0; i < batch; i++)
		collagec_blas_matmul1(a, b, y, m, n, k, d, sa, sb, i, res, act, lo, hi, nt);
}

/* Y = alpha op(A) op(B) + beta C, C broadcast through (row, column) strides (0 = broadcast). */
static void collagec_blas_gemm(const float *a, const float *b, const float *c, float *y,
			       int64_t m, int64_t n, int64_t k, int ta, int tb, float alpha,
			       float beta, int64_t csr, int64_t csc, const float *res, int act,
			       float lo, float hi, int threads)
{
	collagec_blas_single();
	collagec_blas_sgemm(threads, ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, y,
			    n, c, csr, csc, res, n, act, lo, hi);
}

/*
 * Rows [r0, r1) of col, row (c, i, j) = the input pixels kernel tap (i, j)
 * of channel c sees, 0 in the padding.
 */
static void collagec_blas_im2col(const float *x, float *col, int64_t r0, int64_t r1, int64_t h,
				 int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
				 int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t oh,
				 int64_t ow)
{
	for (int64_t rr = r0; rr < r1; rr++) {
		int64_t c = rr / (kh * kw), i = rr / kw % kh, j = rr % kw;
		float *row = col + rr * oh * ow;
		int64_t off = j * dw - pw, lo = 0, hi;

		/* ow in [lo, hi) reads inside the row: 0 <= ow * sw + off < w */
		if (off < 0)
			lo = (-off + sw - 1) / sw;
		hi = w - off <= 0 ? 0 : (w - off + sw - 1) / sw;
		lo = lo > ow ? ow : lo;
		hi = hi > ow ? ow : hi < lo ? lo : hi;
		for (int64_t r = 0; r < oh; r++) {
			int64_t ih = r * sh - ph + i * dh;
			float *out = row + r * ow;
			const float *in;

			if (ih < 0 || ih >= h) {
				memset(out, 0, (size_t)ow * sizeof(float));
				continue;
			}
			in = x + (c * h + ih) * w;
			for (int64_t o = 0; o < lo; o++)
				out[o] = 0.0f;
			if (sw == 1 && hi > lo)
				memcpy(out + lo, in + lo + off, (size_t)(hi - lo) * sizeof(float));
			else if (sw != 1)
				for (int64_t o = lo; o < hi; o++)
					out[o] = in[o * sw + off];
			for (int64_t o = hi; o < ow; o++)
				out[o] = 0.0f;
		}
	}
}

/* collagec_blas_im2col's rows, for rt_par_for. */
struct collagec_blas_col_job {
	const float *x;
	float *col;
	int64_t h, wd, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
};

static void collagec_blas_col_rows(void *v, int64_t r0, int64_t r1)
{
	const struct collagec_blas_col_job *j = v;

	collagec_blas_im2col(j->x, j->col, r0, r1, j->h, j->wd, j->kh, j->kw, j->sh, j->sw, j->ph,
			     j->pw, j->dh, j->dw, j->oh, j->ow);
}

/*
 * Image jg / group, group jg % group on nt threads; col: kc * oh * ow
 * scratch or NULL. The bias initialises each block of y that the GEMM
 * then adds to, and the epilogue (res, act) finishes it.
 */
static void collagec_blas_conv1(const float *x, const float *w, const float *bias, float *y,
				float *col, int64_t jg, int64_t c, int64_t cg, int64_t m,
				int64_t mg, int64_t kc, int64_t h, int64_t wd, int64_t kh,
				int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
				int64_t dh, int64_t dw, int64_t oh, int64_t ow, const float *res, int act,
				float lo, float hi, int nt, int64_t group)
{
	int64_t i = jg / group, g = jg % group, p = oh * ow;
	const float *xg = x + (i * c + g * cg) * h * wd;
	float *yg = y + (i * m + g * mg) * p;

	if (col) {
		if (nt > 1 && kc >= nt && kc * p >= COLLAGEC_BLAS_PAR_MIN) {
			struct collagec_blas_col_job j = { xg, col, h, wd, kh, kw, sh, sw, ph, pw,
							   dh, dw, oh, ow };

			rt_par_for(nt, kc, 1, collagec_blas_col_rows, &j);
		} else {
			collagec_blas_im2col(xg, col, 0, kc, h, wd, kh, kw, sh, sw, ph, pw, dh, dw,
					     oh, ow);
		}
	}
	collagec_blas_sgemm(nt, 0, 0, mg, p, kc, 1.0f, w + g * mg * kc, kc, col ? col : xg, p,
			    bias ? 1.0f : 0.0f, yg, p, bias ? bias + g * mg : NULL, 1, 0,
			    res ? res + (i * m + g * mg) * p : NULL, p, act, lo, hi);
}

/*
 * collagec_blas_conv2d's (image, group) jobs, for rt_par_for, each on one
 * thread: every job of the batch (image -1, no col), or the groups of one
 * image, each on its part of col.
 */
struct collagec_blas_conv_job {
	const float *x, *w, *bias;
	float *y, *col;
	const float *res;
	int64_t c, cg, m, mg, kc, h, wd, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, group, image;
	int act;
	float lo, hi;
};

static void collagec_blas_convs(void *v, int64_t i0, int64_t i1)
{
	const struct collagec_blas_conv_job *j = v;

	for (int64_t i = i0; i < i1; i++) {
		int64_t jg = j->image < 0 ? i : j->image * j->group + i;
		float *col = j->image < 0 ? NULL : j->col + i * j->kc * j->oh * j->ow;

		collagec_blas_conv1(j->x, j->w, j->bias, j->y, col, jg, j->c, j->cg, j->m, j->mg,
				    j->kc, j->h, j->wd, j->kh, j->kw, j->sh, j->sw, j->ph, j->pw,
				    j->dh, j->dw, j->oh, j->ow, j->res, j->act, j->lo, j->hi, 1,
				    j->group);
	}
}

/*
 * col: the im2col scratch, c * kh * kw * oh * ow floats (one image, every
 * group in its own part) planned in the model's workspace, or NULL for a
 * 1x1, stride-1, unpadded conv, which multiplies the input itself.
 */
static void collagec_blas_conv2d(const float *x, const float *w, const float *bias,
				 float *y, float *col, int64_t n, int64_t c, int64_t h,
				 int64_t wd, int64_t m, int64_t kh, int64_t kw, int64_t sh,
				 int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
				 int64_t group, int64_t oh, int64_t ow, const float *res, int act,
				 float lo, float hi, int threads)
{
	int64_t cg = c / group, mg = m / group, kc = cg * kh * kw, p = oh * ow, jobs = n * group;
	int nt = threads > 1 ? threads : 1;
	struct collagec_blas_conv_job j = { x, w, bias, y, col, res, c, cg, m, mg, kc, h, wd, kh,
					    kw, sh, sw, ph, pw, dh, dw, oh, ow, group, -1, act, lo,
					    hi };

	collagec_blas_single();
	if (jobs <= 0 || p <= 0 || mg <= 0)
		return;
	/*
	 * at least one (image, group) per thread: those in parallel, one thread
	 * each - without col, every one of them; with it, the groups of one
	 * image at a time, each on its part of col
	 */
	if (nt > 1 && !col && jobs >= nt && jobs * mg * p * kc >= COLLAGEC_BLAS_PAR_MIN) {
		rt_par_for(nt, jobs, 1, collagec_blas_convs, &j);
		return;
	}
	if (nt > 1 && col && group >= nt && group * mg * p * kc >= COLLAGEC_BLAS_PAR_MIN) {
		for (j.image = 0; j.image < n; j.image++)
			rt_par_for(nt, group, 1, collagec_blas_convs, &j);
		return;
	}
	/* else one (image, group) after the other, each on nt threads */
	for (int64_t jg = 0; jg < jobs; jg++)
		collagec_blas_conv1(x, w, bias, y, col, jg, c, cg, m, mg, kc, h, wd, kh, kw, sh, sw,
				    ph, pw, dh, dw, oh, ow, res, act, lo, hi, nt, group);
}

#endif
