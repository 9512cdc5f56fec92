/*
 * rt_cqpool.h - the c target's 8-bit pooling and QLinearConcat, pasted into
 * the generated code (embedded into collagec) by the strategies
 * maxpool.q8rows, qlinearaveragepool.rows, qlinearglobalaveragepool.rows and
 * qlinearconcat.copy of backends/c/c_strategies.c.
 *
 * rt_qmaxpool2d  MaxPool of uint8 or int8 (ONNX MaxPool-12's integer
 *                types, and the qdq pass's DequantizeLinear -> MaxPool ->
 *                QuantizeLinear with one scale and zero point: dequantizing
 *                is monotone for a positive scale, so the max commutes with
 *                it and the integer max is exact). The rows of rt_cpool.h's
 *                float pool: per output row the window's rows reduced by a
 *                byte max into a padded row buffer, its stride phases split
 *                apart, one unit-stride loop per tap. int8 is taken as
 *                unsigned by x ^ 0x80 (order-preserving) on the loads and
 *                back on the stores, so one loop of vpmaxub (AVX2: 32
 *                bytes; AVX-512: 64, the last step masked) serves both;
 *                the padding is 0 there, the type's least value, which a
 *                window wholly in padding gives (the float path's -inf
 *                quantizes to it too).
 * rt_qavgpool2d  QLinearAveragePool (com.microsoft, and the qdq pass's
 * rt_qgap        DequantizeLinear -> AveragePool/GlobalAveragePool ->
 *                QuantizeLinear): the window's integers summed exactly in
 *                int32, then one requantization per output, the formula of
 *                the op's own lowering (core/ops/ops_quant.c,
 *                lower_qpool_out), bit for bit:
 *                  v = (double)(sum - n * zx) * ((double)sx / ((double)sy * div))
 *                  y = saturate(rint(v) + zy)
 *                n the taps inside the image, div n or, with
 *                count_include_pad, the taps inside the padded image.
 * rt_qconcat     one input of QLinearConcat: a copy when its scale, zero
 *                point and type are the output's, else every byte through
 *                a 256-entry table of what DequantizeLinear then
 *                QuantizeLinear compute in float32 (exactly the float
 *                graph's value).
 *
 * Example: rt_qmaxpool2d(x, y, N * C, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
 *                        56, 56, 0, threads);
 */
#ifndef RT_CQPOOL_H
#define RT_CQPOOL_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#endif

/* Most columns of the padded row buffer, largest column stride (c_strategies.c checks both). */
#define RT_QPOOL_MAXW 4096
#define RT_QPOOL_MAXS 64

/* The geometry of one call; per dim 0 (rows) and 1 (columns). */
struct rt_qpool_geom {
	int64_t in[2], k[2], s[2], d[2], pb[2], pe[2], out[2];
	int64_t wp;		/* columns of the padded row buffer */
	uint8_t flip;		/* 0x80 for int8 (taken as unsigned), else 0 */
};

#if defined(__AVX512BW__) && defined(__AVX512VL__)
/*
 * With AVX-512 every row loop is 64 bytes a step, its last step masked:
 * a row of a ResNet's first pool (112 bytes in, 56 out) is two or one,
 * where the plain loops' scalar tails took most of the time.
 */
#define RT_QPOOL_VEC 1

/* the first n (at most 64; none when n <= 0) lanes of 64 */
static inline __mmask64 rt_qmask(int64_t n)
{
	return n >= 64 ? ~(__mmask64)0 : n <= 0 ? 0 : ((__mmask64)1 << n) - 1;
}

/* v[0..n) = max(v, b ^ f), unsigned */
static inline void rt_qmax_acc(uint8_t *restrict v, const uint8_t *restrict b, uint8_t f,
			       int64_t n)
{
	const __m512i fv = _mm512_set1_epi8((char)f);

	for (int64_t j = 0; j < n; j += 64) {
		__mmask64 m = rt_qmask(n - j);
		__m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, b + j), fv);

		_mm512_mask_storeu_epi8(v + j, m, _mm512_max_epu8(_mm512_maskz_loadu_epi8(m, v + j), x));
	}
}

/* v[0..n) = max(a ^ f, b ^ f), unsigned */
static inline void rt_qmax_pair(const uint8_t *restrict a, const uint8_t *restrict b,
				uint8_t *restrict v, uint8_t f, int64_t n)
{
	const __m512i fv = _mm512_set1_epi8((char)f);

	for (int64_t j = 0; j < n; j += 64) {
		__mmask64 m = rt_qmask(n - j);
		__m512i p = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, a + j), fv);
		__m512i q = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, b + j), fv);

		_mm512_mask_storeu_epi8(v + j, m, _mm512_max_epu8(p, q));
	}
}

/* v[0..n) = a ^ f */
static inline void rt_qxor(const uint8_t *a, uint8_t *v, uint8_t f, int64_t n)
{
	const __m512i fv = _mm512_set1_epi8((char)f);

	for (int64_t j = 0; j < n; j += 64) {
		__mmask64 m = rt_qmask(n - j);

		_mm512_mask_storeu_epi8(v + j, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, a + j), fv));
	}
}

/* rt_qmax_phases for stride 2: 64 bytes a step, even bytes (the low ones of 16-bit lanes) and odd */
static inline void rt_qmax_phases2(const uint8_t *restrict buf, int64_t wp, uint8_t *restrict ph,
				   int64_t *off)
{
	const __m512i lo = _mm512_set1_epi16(0xff);
	int64_t ne = (wp + 1) / 2, no = wp / 2;

	off[0] = 0;
	off[1] = ne;
	for (int64_t i = 0; i < wp; i += 64) {
		__m512i x = _mm512_maskz_loadu_epi8(rt_qmask(wp - i), buf + i);
		int64_t k = i / 2;

		_mm256_mask_storeu_epi8(ph + k, (__mmask32)rt_qmask(ne - k < 32 ? ne - k : 32),
					_mm512_cvtepi16_epi8(_mm512_and_si512(x, lo)));
		_mm256_mask_storeu_epi8(ph + ne + k, (__mmask32)rt_qmask(no - k < 32 ? no - k : 32),
					_mm512_cvtepi16_epi8(_mm512_srli_epi16(x, 8)));
	}
}
#else
#define RT_QPOOL_VEC 0

/* v[0..n) = max(v, b ^ f), unsigned */
static inline void rt_qmax_acc(uint8_t *restrict v, const uint8_t *restrict b, uint8_t f,
			       int64_t n)
{
	for (int64_t j = 0; j < n; j++) {
		uint8_t x = (uint8_t)(b[j] ^ f);

		v[j] = v[j] > x ? v[j] : x;
	}
}

/* v[0..n) = max(a ^ f, b ^ f), unsigned */
static inline void rt_qmax_pair(const uint8_t *restrict a, const uint8_t *restrict b,
				uint8_t *restrict v, uint8_t f, int64_t n)
{
	for (int64_t j = 0; j < n; j++) {
		uint8_t p = (uint8_t)(a[j] ^ f), q = (uint8_t)(b[j] ^ f);

		v[j] = p > q ? p : q;
	}
}

/* v[0..n) = a ^ f */
static inline void rt_qxor(const uint8_t *a, uint8_t *v, uint8_t f, int64_t n)
{
	for (int64_t j = 0; j < n; j++)
		v[j] = (uint8_t)(a[j] ^ f);
}
#endif

/* v[0..W) = the max of the window's rows of output row oh (flipped), 0 when none is inside */
static inline void rt_qmax_vertical(const struct rt_qpool_geom *g, const uint8_t *x, int64_t oh,
				    uint8_t *restrict v)
{
	int64_t W = g->in[1], rows = 0;
	const uint8_t *first = NULL;

	for (int64_t k = 0; k < g->k[0]; k++) {
		int64_t ih = oh * g->s[0] - g->pb[0] + k * g->d[0];
		const uint8_t *r = x + ih * W;

		if (ih < 0 || ih >= g->in[0])
			continue;
		if (rows++ == 0)
			first = r;
		else if (rows == 2)
			rt_qmax_pair(first, r, v, g->flip, W);
		else
			rt_qmax_acc(v, r, g->flip, W);
	}
	if (rows == 1)
		rt_qxor(first, v, g->flip, W);
	if (rows == 0)
		memset(v, 0, (size_t)W);
}

/*
 * ph = the s phases of buf[0..wp) one after the other, phase r from off[r];
 * s a constant where inlined with one (stride 2: vectorised deinterleave).
 */
static inline __attribute__((always_inline)) void
rt_qmax_phases(const uint8_t *restrict buf, int64_t wp, const int64_t s, uint8_t *restrict ph,
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

/* Output row oh of one plane (rt_cpool.h's rt_pool_row, for bytes). */
static inline void rt_qmax_row(const struct rt_qpool_geom *g, const uint8_t *x, uint8_t *y,
			       int64_t oh, uint8_t *buf, uint8_t *ph)
{
	int64_t off[RT_QPOOL_MAXS], OW = g->out[1], s = g->s[1];
	const uint8_t *src = buf;

	rt_qmax_vertical(g, x, oh, buf + g->pb[1]);
	off[0] = 0;
	if (s == 2) {
#if RT_QPOOL_VEC
		rt_qmax_phases2(buf, g->wp, ph, off);
#else
		rt_qmax_phases(buf, g->wp, 2, ph, off);
#endif
		src = ph;
	} else if (s > 1) {
		rt_qmax_phases(buf, g->wp, s, ph, off);
		src = ph;
	}
	if (g->k[1] == 1)
		memcpy(y, src, (size_t)OW);
	for (int64_t k = 1; k < g->k[1]; k++) {
		int64_t t = k * g->d[1];
		const uint8_t *p = src + off[t % s] + t / s;

		if (k == 1)
			rt_qmax_pair(src, p, y, 0, OW);
		else
			rt_qmax_acc(y, p, 0, OW);
	}
	if (g->flip)
		rt_qxor(y, y, 0x80, OW);
}

/* Output rows [r0, r1) of planes * OH, with the thread's own row buffers. */
static inline void rt_qmax_rows(const struct rt_qpool_geom *g, const uint8_t *x, uint8_t *y,
				int64_t r0, int64_t r1)
{
	uint8_t buf[RT_QPOOL_MAXW], ph[RT_QPOOL_MAXW];
	int64_t H = g->in[0], W = g->in[1], OH = g->out[0];

	/* the padding (0: the least value, flipped), never written after */
	memset(buf, 0, (size_t)g->wp);
	for (int64_t r = r0; r < r1; r++)
		rt_qmax_row(g, x + r / OH * H * W, y + r * g->out[1], r % OH, buf, ph);
}

/* rt_qmaxpool2d's rows, for rt_par_for. */
struct rt_qpool_job {
	const struct rt_qpool_geom *g;
	const uint8_t *x;
	uint8_t *y;
	double sx, sy;
	int zx, zy, incl, is_signed;
};

static void rt_qmax_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_qpool_job *j = v;

	rt_qmax_rows(j->g, j->x, j->y, r0, r1);
}

/*
 * y [planes, OH, OW] = the max pool of the bytes x [planes, H, W] (int8
 * when is_signed), arguments as rt_cpool.h's rt_pool2d; the padded row at
 * most RT_QPOOL_MAXW columns, sw at most RT_QPOOL_MAXS (c_strategies.c's
 * condition). 1-D is H = OH = kh = 1.
 */
static inline void rt_qmaxpool2d(const void *x, void *y, int64_t planes, int64_t H, int64_t W,
				 int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
				 int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr,
				 int64_t OH, int64_t OW, int is_signed, int threads)
{
	struct rt_qpool_geom g = { { H, W }, { kh, kw }, { sh, sw }, { dh, dw }, { pt, pl },
				   { pb, pr }, { OH, OW }, 0, (uint8_t)(is_signed ? 0x80 : 0) };
	int64_t reach = (OW - 1) * sw + (kw - 1) * dw + 1, rows = planes * OH;
	struct rt_qpool_job j = { &g, x, y, 0, 0, 0, 0, 0, is_signed };

	g.wp = pl + W > reach ? pl + W : reach;
	if (threads <= 1 || rows < 2 || rows * OW * kh * kw < 262144) {
		rt_qmax_rows(&g, x, y, 0, rows);
		return;
	}
	rt_par_for(threads, rows, 1, rt_qmax_some, &j);
}

/* A one-element parameter: the float at p, or the 8-bit zero point at p (NULL: 0). */
static inline int rt_qzp(const void *p, int is_signed)
{
	return !p ? 0 : is_signed ? *(const int8_t *)p : *(const uint8_t *)p;
}

/* The requantization of the top of the file; one output byte. */
static inline uint8_t rt_qpool_out(const struct rt_qpool_job *j, int32_t sum, int64_t n,
				   int64_t div)
{
	double v = (double)(sum - (int32_t)n * j->zx) * (j->sx / (j->sy * (double)div));
	double lo = j->is_signed ? -128 : 0, hi = j->is_signed ? 127 : 255;

	v = rint(v) + j->zy;
	v = v > lo ? v : lo;
	v = v < hi ? v : hi;
	return (uint8_t)(int)v;
}

/* Taps of dim i at output o inside the image, or (incl) inside the padded image. */
static inline int64_t rt_qpool_count(const struct rt_qpool_geom *g, int i, int64_t o, int incl)
{
	int64_t st = o * g->s[i] - g->pb[i], n = 0;
	int64_t end = incl ? g->in[i] + g->pe[i] : g->in[i];

	for (int64_t k = 0; k < g->k[i]; k++) {
		int64_t p = st + k * g->d[i];

		n += p < end && (incl || p >= 0);
	}
	return n;
}

/* Output rows [r0, r1) of the average pool: int32 column sums, then the taps of each output. */
static inline void rt_qavg_rows(const struct rt_qpool_job *j, int64_t r0, int64_t r1)
{
	const struct rt_qpool_geom *g = j->g;
	int32_t buf[RT_QPOOL_MAXW];
	int64_t H = g->in[0], W = g->in[1], OH = g->out[0], OW = g->out[1];

	memset(buf, 0, sizeof(buf[0]) * (size_t)g->wp);
	for (int64_t r = r0; r < r1; r++) {
		int64_t oh = r % OH, rows = 0;
		const uint8_t *x = j->x + r / OH * H * W;
		uint8_t *y = j->y + r * OW;
		int32_t *v = buf + g->pb[1];

		memset(v, 0, sizeof(v[0]) * (size_t)W);
		for (int64_t k = 0; k < g->k[0]; k++) {
			int64_t ih = oh * g->s[0] - g->pb[0] + k * g->d[0];
			const uint8_t *xr = x + ih * W;

			if (ih < 0 || ih >= H)
				continue;
			rows++;
			if (j->is_signed)
				for (int64_t c = 0; c < W; c++)
					v[c] += (int8_t)xr[c];
			else
				for (int64_t c = 0; c < W; c++)
					v[c] += xr[c];
		}
		for (int64_t ow = 0; ow < OW; ow++) {
			int32_t s = 0;
			int64_t c0 = ow * g->s[1], cols = rt_qpool_count(g, 1, ow, 0);

			for (int64_t k = 0; k < g->k[1]; k++)
				s += buf[c0 + k * g->d[1]];
			y[ow] = rt_qpool_out(j, s, rows * cols,
					     j->incl ? rt_qpool_count(g, 0, oh, 1) *
						       rt_qpool_count(g, 1, ow, 1) : rows * cols);
		}
	}
}

static void rt_qavg_some(void *v, int64_t r0, int64_t r1)
{
	rt_qavg_rows(v, r0, r1);
}

/*
 * y [planes, OH, OW] = QLinearAveragePool of x [planes, H, W] (see the top;
 * geometry as rt_qmaxpool2d's), x and y of one 8-bit type.
 */
static inline void rt_qavgpool2d(const void *x, void *y, int64_t planes, int64_t H, int64_t W,
				 int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
				 int64_t dw, int64_t pt, int64_t pl, int64_t pb, int64_t pr,
				 int64_t OH, int64_t OW, int incl, const float *sx, const void *zx,
				 const float *sy, const void *zy, int is_signed, int threads)
{
	struct rt_qpool_geom g = { { H, W }, { kh, kw }, { sh, sw }, { dh, dw }, { pt, pl },
				   { pb, pr }, { OH, OW }, 0, 0 };
	int64_t reach = (OW - 1) * sw + (kw - 1) * dw + 1, rows = planes * OH;
	struct rt_qpool_job j = { &g, x, y, *sx, *sy, rt_qzp(zx, is_signed),
				  rt_qzp(zy, is_signed), incl, is_signed };

	g.wp = pl + W > reach ? pl + W : reach;
	if (threads <= 1 || rows < 2 || rows * OW * kh * kw < 65536) {
		rt_qavg_rows(&j, 0, rows);
		return;
	}
	rt_par_for(threads, rows, 1, rt_qavg_some, &j);
}

/*
 * y [planes] = QLinearGlobalAveragePool of x [planes, hw]: each plane summed
 * in int32, requantized as rt_qavgpool2d's outputs.
 */
static inline void rt_qgap(const void *x, void *y, int64_t planes, int64_t hw, const float *sx,
			   const void *zx, const float *sy, const void *zy, int is_signed,
			   int threads)
{
	struct rt_qpool_job j = { NULL, x, y, *sx, *sy, rt_qzp(zx, is_signed),
				  rt_qzp(zy, is_signed), 0, is_signed };

	(void)threads;
	for (int64_t p = 0; p < planes; p++) {
		const uint8_t *r = j.x + p * hw;
		int32_t s = 0;

		if (is_signed)
			for (int64_t i = 0; i < hw; i++)
				s += (int8_t)r[i];
		else
			for (int64_t i = 0; i < hw; i++)
				s += r[i];
		j.y[p] = rt_qpool_out(&j, s, hw, hw);
	}
}

/*
 * One input of QLinearConcat: outer blocks of `block` bytes from x to y,
 * ystride apart in y; requantized from (sx, zx, xs) to (sy, zy, ys) through
 * a table unless they are the same (see the top).
 */
static inline void rt_qconcat(const void *x, int64_t outer, int64_t block, int64_t ystride,
			      void *y, const float *sx, const void *zx, int xs, const float *sy,
			      const void *zy, int ys, int threads)
{
	const uint8_t *src = x;
	uint8_t *dst = y, tab[256];
	int zxi = rt_qzp(zx, xs), zyi = rt_qzp(zy, ys);
	int copy = xs == ys && zxi == zyi && !memcmp(sx, sy, sizeof(float));

	(void)threads;
	if (!copy)
		for (int b = 0; b < 256; b++) {
			int q = xs ? (int8_t)b : b;
			float v = (float)(q - zxi) * *sx;
			float lo = ys ? -128.0f : 0.0f, hi = ys ? 127.0f : 255.0f;

			v = rintf(v / *sy) + (float)zyi;
			v = v > lo ? v : lo;
			v = v < hi ? v : hi;
			tab[b] = (uint8_t)(int)v;
		}
	for (int64_t o = 0; o < outer; o++) {
		const uint8_t *s = src + o * block;
		uint8_t *d = dst + o * ystride;

		if (copy)
			memcpy(d, s, (size_t)block);
		else
			for (int64_t i = 0; i < block; i++)
				d[i] = tab[s[i]];
	}
}

#endif
