/*
 * rt_cpool.h - the c target's 1-D and 2-D float pooling (MaxPool,
 * AveragePool), pasted into the generated code (embedded into collagec) by
 * the strategies maxpool.vrows and averagepool.vrows of
 * backends/c/c_strategies.c.
 *
 * Per output row, in two passes that both run unit-stride in L1:
 *
 *   vertical   the window's input rows inside the image reduced column by
 *              column into a row buffer (one loop per input row: GCC
 *              vectorises one NaN-propagating max or one add per loop, not
 *              a chain of them), the buffer padded on both sides with the
 *              identity (-inf for max, 0 for sums) so that no column is
 *              ever out of bounds;
 *   horizontal with stride s the buffer is first split into its s phases
 *              (phase r holds columns r, r + s, ...), so tap j, at column
 *              ow * s + j * dw of the buffer, reads phase (j * dw) % s at
 *              ow + (j * dw) / s: one unit-stride loop per tap over the
 *              output row.
 *
 * So a 3x3 stride-2 window (ResNet's stem) costs per output row three
 * passes over an input row, one deinterleave and three passes over the
 * output row, all vectorised, and no bounds check but one per input row.
 * Only the rows are tested against the image; the columns past it read the
 * padding, whose identity changes nothing but a window wholly in padding,
 * which gives -inf (max) or 0 / count, as the op's loop nest does.
 *
 * Results: a max is the max of the same set (NaN wins as in the loop
 * nest's max: any NaN in a window makes the output NaN); a sum adds its
 * taps column by column and then across (another rounding than the loop
 * nest's row-major order), divided by the count as the loop nest does:
 * (rows inside) * (columns inside), or with count_include_pad the taps
 * before the end padding. Output rows are split over the OpenMP team;
 * each output is computed by one thread in a fixed order, the same at every
 * thread count.
 *
 * Example: rt_pool2d(x, y, N * C, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
 *                    56, 56, RT_POOL_MAX, threads);
 */
#ifndef RT_CPOOL_H
#define RT_CPOOL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Most columns of the padded row buffer, largest column stride (c_strategies.c checks both). */
#define RT_POOL_MAXW 4096
#define RT_POOL_MAXS 64

enum rt_pool_kind { RT_POOL_MAX, RT_POOL_AVG, RT_POOL_AVG_PAD };

/* The geometry of one call; per dim 0 (rows) and 1 (columns). */
struct rt_pool_geom {
	int64_t in[2], k[2], s[2], d[2], pb[2], pe[2], out[2];
	int64_t wp;		/* columns of the padded row buffer */
	int kind;		/* enum rt_pool_kind */
};

/* a NaN-propagating max, as the loop nest's (a NaN a wins; else b when not a > b) */
static inline float rt_pool_max(float a, float b)
{
	return (a > b) | (a != a) ? a : b;
}

/* Taps of dim i at output o that the divisor counts (see the top). */
static inline int64_t rt_pool_count(const struct rt_pool_geom *g, int i, int64_t o)
{
	int64_t st = o * g->s[i] - g->pb[i], n = 0;
	int64_t end = g->kind == RT_POOL_AVG_PAD ? g->in[i] + g->pe[i] : g->in[i];

	for (int64_t k = 0; k < g->k[i]; k++) {
		int64_t p = st + k * g->d[i];

		n += p < end && (g->kind == RT_POOL_AVG_PAD || p >= 0);
	}
	return n;
}

/* v[0..n) = a op b, op max or + (three arrays apart) */
static inline void rt_pool_pair(int kind, const float *restrict a, const float *restrict b,
				float *restrict v, int64_t n)
{
	if (kind == RT_POOL_MAX)
		for (int64_t j = 0; j < n; j++)
			v[j] = rt_pool_max(a[j], b[j]);
	else
		for (int64_t j = 0; j < n; j++)
			v[j] = a[j] + b[j];
}

/* v[0..n) = v op b, in place */
static inline void rt_pool_acc(int kind, float *restrict v, const float *restrict b, int64_t n)
{
	if (kind == RT_POOL_MAX)
		for (int64_t j = 0; j < n; j++)
			v[j] = rt_pool_max(v[j], b[j]);
	else
		for (int64_t j = 0; j < n; j++)
			v[j] += b[j];
}

/*
 * v[0..W) = the reduction of the window's rows of output row oh (plane x),
 * the first two rows in one pass; the number of rows inside the image.
 */
static inline int64_t rt_pool_vertical(const struct rt_pool_geom *g, const float *x, int64_t oh,
				       float *restrict v)
{
	int64_t W = g->in[1], rows = 0;
	const float *first = NULL;

	for (int64_t k = 0; k < g->k[0]; k++) {
		int64_t ih = oh * g->s[0] - g->pb[0] + k * g->d[0];
		const float *r = x + ih * W;

		if (ih < 0 || ih >= g->in[0])
			continue;
		if (rows++ == 0)
			first = r;
		else if (rows == 2)
			rt_pool_pair(g->kind, first, r, v, W);
		else
			rt_pool_acc(g->kind, v, r, W);
	}
	if (rows == 1)
		memcpy(v, first, sizeof(float) * (size_t)W);
	if (rows == 0) {
		float id = g->kind == RT_POOL_MAX ? -INFINITY : 0.0f;

		for (int64_t j = 0; j < W; j++)
			v[j] = id;
	}
	return rows;
}

/*
 * ph = the s phases of buf[0..wp) one after the other, phase r from
 * off[r] (its length (wp - r + s - 1) / s); s a constant where inlined
 * with one, so that the stride-2 loads vectorise.
 */
static inline __attribute__((always_inline)) void
rt_pool_phases(const float *restrict buf, int64_t wp, const int64_t s, float *restrict ph,
	       int64_t *off)
{
	int64_t o = 0;

	for (int64_t r = 0; r < s; r++) {
		int64_t n = (wp - r + s - 1) / s;

		off[r] = o;
		for (int64_t i = 0; i < n; i++)
			ph[o + i] = buf[i * s + r];
		o += n;
	}
}

/* y[0..OW) = the horizontal reduction of the padded, split row buffer. */
static inline void rt_pool_horizontal(const struct rt_pool_geom *g, const float *src,
				      const int64_t *off, float *y)
{
	int64_t OW = g->out[1], s = g->s[1];

	const float *p0 = src + off[0];

	if (g->k[1] == 1)
		memcpy(y, p0, sizeof(float) * (size_t)OW);
	for (int64_t k = 1; k < g->k[1]; k++) {
		int64_t t = k * g->d[1];
		const float *p = src + off[t % s] + t / s;

		if (k == 1)
			rt_pool_pair(g->kind, p0, p, y, OW);
		else
			rt_pool_acc(g->kind, y, p, OW);
	}
}

/* Output row oh of one plane; buf has its padding in place, ph room for wp. */
static inline void rt_pool_row(const struct rt_pool_geom *g, const float *x, float *y, int64_t oh,
			       float *buf, float *ph, const float *cols)
{
	int64_t off[RT_POOL_MAXS], zero = 0;
	int64_t rows = rt_pool_vertical(g, x, oh, buf + g->pb[1]);
	const float *src = buf;

	if (g->s[1] == 2) {
		rt_pool_phases(buf, g->wp, 2, ph, off);
		src = ph;
	} else if (g->s[1] > 1) {
		rt_pool_phases(buf, g->wp, g->s[1], ph, off);
		src = ph;
	}
	rt_pool_horizontal(g, src, g->s[1] > 1 ? off : &zero, y);
	if (g->kind != RT_POOL_MAX) {
		float r = (float)(g->kind == RT_POOL_AVG_PAD ? rt_pool_count(g, 0, oh) : rows);

		for (int64_t ow = 0; ow < g->out[1]; ow++)
			y[ow] = y[ow] / (r * cols[ow]);
	}
}

/* Output rows [r0, r1) of planes * OH, with the thread's own row buffers. */
static inline void rt_pool_rows(const struct rt_pool_geom *g, const float *x, float *y, int64_t r0,
				int64_t r1, const float *cols)
{
	float buf[RT_POOL_MAXW], ph[RT_POOL_MAXW];
	float id = g->kind == RT_POOL_MAX ? -INFINITY : 0.0f;
	int64_t H = g->in[0], W = g->in[1], OH = g->out[0];

	/* the padding, never written after: rt_pool_vertical fills the columns between */
	for (int64_t j = 0; j < g->wp; j++)
		buf[j] = id;
	for (int64_t r = r0; r < r1; r++)
		rt_pool_row(g, x + r / OH * H * W, y + r * g->out[1], r % OH, buf, ph, cols);
}

/* rt_pool2d's rows, for rt_par_for. */
struct rt_pool_job {
	const struct rt_pool_geom *g;
	const float *x;
	float *y;
	const float *cols;
};

static void rt_pool_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_pool_job *j = v;

	rt_pool_rows(j->g, j->x, j->y, r0, r1, j->cols);
}

/*
 * y [planes, OH, OW] = the pooling (kind) of x [planes, H, W] with a kh x kw
 * window, strides sh, sw, dilations dh, dw, pads pt, pl (before) and pb, pr
 * (after); the padded row (the pads, W and the window's reach) at most
 * RT_POOL_MAXW columns and sw at most RT_POOL_MAXS (c_strategies.c's
 * condition). 1-D is H = OH = kh = 1.
 */
static inline void rt_pool2d(const float *x, float *y, int64_t planes, int64_t H, int64_t W,
			     int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
			     int64_t pt, int64_t pl, int64_t pb, int64_t pr, int64_t OH, int64_t OW,
			     int kind, int threads)
{
	struct rt_pool_geom g = { { H, W }, { kh, kw }, { sh, sw }, { dh, dw }, { pt, pl },
				  { pb, pr }, { OH, OW }, 0, kind };
	int64_t reach = (OW - 1) * sw + (kw - 1) * dw + 1, rows = planes * OH;
	float cols[RT_POOL_MAXW];
	struct rt_pool_job j = { &g, x, y, cols };

	g.wp = pl + W > reach ? pl + W : reach;
	/* the product (rows * cols) in float: exact, as the loop nest's int count */
	if (kind != RT_POOL_MAX)
		for (int64_t ow = 0; ow < OW; ow++)
			cols[ow] = (float)rt_pool_count(&g, 1, ow);
	/* small pools run serially: a job costs microseconds */
	if (threads <= 1 || rows < 2 || rows * OW * kh * kw < 65536) {
		rt_pool_rows(&g, x, y, 0, rows, cols);
		return;
	}
	rt_par_for(threads, rows, 1, rt_pool_some, &j);
}

#endif
