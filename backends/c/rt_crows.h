/*
 * rt_crows.h - the c target's row kernels, pasted into the generated code
 * (embedded into collagec, after rt_model.h and its vector math) by the
 * strategy softmax.rows of backends/c/c_strategies.c.
 *
 * rt_softmax_rows normalises rows of K contiguous floats (Softmax, or
 * LogSoftmax when log_out): per row a max, exp(x - max) into y, their sum,
 * then y / sum (or x - max - log(sum)). The max and the sum run in
 * RT_CR_LANES interleaved lanes combined pairwise at the end, so both
 * vectorise; the order is fixed, the same at every thread count (rows are
 * split over the OpenMP team, never a row). exp's argument is clamped at
 * RT_CR_EXP_MIN: below it libmvec's vector expf calls scalar expf per lane
 * to round a subnormal result, which made an attention mask of -10000s
 * (or -FLT_MAX) three times slower; Softmax's entries below the clamp are
 * exactly 0 again in the last pass, LogSoftmax's only see the sum (>= 1)
 * grow by less than K * 1.7e-38. NaN passes through as in the loop form: a
 * NaN in a row (or x - max, where the row holds +inf or is all -inf) makes
 * the sum, and so the whole row, NaN; exp is given the clamp there too,
 * since libmvec's special-case path for a NaN lane is as slow (bert_tiny
 * float16 on collagec bench's inputs, whose mask of integers to 99
 * overflows to +inf: its two Softmaxes 0.23 ms each).
 *
 * rt_lnorm_rows normalises rows of K contiguous floats as LayerNormalization
 * does over its last axes: the mean, then the mean of the squared
 * deviations from it (two passes, as the loop form), each summed in
 * RT_CR_LANES lanes; y = (x - mean) * (1 / sqrt(var + eps)) * scale + bias.
 *
 * rt_rmsnorm_rows normalises rows of K contiguous floats as
 * RMSNormalization does over its last axes: the mean of the squares, summed
 * in RT_CR_LANES lanes; y = x * (1 / sqrt(mean + eps)) * scale, as the loop
 * form computes it but for the order of the sum.
 *
 * rt_mean_rows averages rows of K contiguous floats (GlobalAveragePool, a
 * row a plane), summed in RT_CR_LANES lanes as above.
 *
 * rt_attn_rows computes Attention's rows (attention.rows): per query row,
 * the scores of the keys it may see, their softmax and the weights times V,
 * a block of RT_ATTN_BLOCK keys at a time (an online softmax across
 * blocks: no buffer but the stack's, whatever the cache's length).
 *
 * Example: rt_softmax_rows(x, y, rows, 128, 0, threads);
 */
#ifndef RT_CROWS_H
#define RT_CROWS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define RT_CR_LANES 8			/* a ymm of floats */
#define RT_CR_EXP_MIN (-87.0f)		/* expf(-87) = 1.6e-38: not yet subnormal */

#if defined(__GNUC__)
typedef float rt_cr_vec __attribute__((vector_size(4 * RT_CR_LANES)));
typedef int32_t rt_cr_ivec __attribute__((vector_size(4 * RT_CR_LANES)));
#endif

/* The largest of x[0..K) other than NaN (-INFINITY when none). */
static inline float rt_cr_max(const float *restrict x, int64_t K)
{
	float t[RT_CR_LANES], mx;
	int64_t k = 0;
#if defined(__GNUC__)
	int64_t kv = K / RT_CR_LANES * RT_CR_LANES;
	rt_cr_vec m, v;

	for (int u = 0; u < RT_CR_LANES; u++)
		m[u] = -INFINITY;
	for (; k < kv; k += RT_CR_LANES) {
		rt_cr_ivec gt;

		memcpy(&v, x + k, sizeof(v));
		gt = v > m;
		m = (rt_cr_vec)((gt & (rt_cr_ivec)v) | (~gt & (rt_cr_ivec)m));
	}
	memcpy(t, &m, sizeof(t));
#else
	for (int u = 0; u < RT_CR_LANES; u++)
		t[u] = -INFINITY;
#endif
	for (int w = RT_CR_LANES / 2; w > 0; w /= 2)
		for (int u = 0; u < w; u++)
			t[u] = t[u + w] > t[u] ? t[u + w] : t[u];
	mx = t[0];
	for (; k < K; k++)
		mx = x[k] > mx ? x[k] : mx;
	return mx;
}

/* The lanes' sum, combined pairwise (t is overwritten). */
static inline float rt_cr_lanes(float *t)
{
	for (int w = RT_CR_LANES / 2; w > 0; w /= 2)
		for (int u = 0; u < w; u++)
			t[u] += t[u + w];
	return t[0];
}

/*
 * (x[0] - m) + ... + (x[K - 1] - m) in RT_CR_LANES lanes, each term squared
 * when square (a constant once inlined; m = 0 adds x itself, exactly).
 */
static inline float rt_cr_sum(const float *restrict x, int64_t K, float m, int square)
{
	float t[RT_CR_LANES], s;
	int64_t k = 0;
#if defined(__GNUC__)
	int64_t kv = K / RT_CR_LANES * RT_CR_LANES;
	rt_cr_vec a = { 0 }, v;

	for (; k < kv; k += RT_CR_LANES) {
		memcpy(&v, x + k, sizeof(v));
		v -= m;
		a += square ? v * v : v;
	}
	memcpy(t, &a, sizeof(t));
#else
	for (int u = 0; u < RT_CR_LANES; u++)
		t[u] = 0.0f;
#endif
	s = rt_cr_lanes(t);
	for (; k < K; k++)
		s += square ? (x[k] - m) * (x[k] - m) : x[k] - m;
	return s;
}

/* One row: y = softmax(x) or log_softmax(x); x and y do not overlap. */
static inline void rt_cr_softmax_row(const float *restrict x, float *restrict y, int64_t K,
				     int log_out)
{
	float mx = rt_cr_max(x, K), lo = RT_CR_EXP_MIN, sum;
	int nan = 0;

#if defined(__GNUC__)
	/*
	 * lo opaque: knowing it, GCC folds expf(d < lo ? lo : d) into
	 * d < lo ? expf(lo) : expf(d) and calls expf on the unclamped lanes
	 */
	__asm__("" : "+m"(lo));
#endif
	for (int64_t k = 0; k < K; k++) {
		float d = x[k] - mx;

		nan |= d != d;
		y[k] = expf(d > lo ? d : lo);	/* NaN: lo */
	}
	sum = nan ? NAN : rt_cr_sum(y, K, 0.0f, 0);
	if (log_out) {
		float ls = logf(sum);

		for (int64_t k = 0; k < K; k++)
			y[k] = (x[k] - mx) - ls;
	} else {
		for (int64_t k = 0; k < K; k++)
			y[k] = (x[k] - mx < lo ? 0.0f : y[k]) / sum;	/* NaN sum: NaN */
	}
}

/* The arguments of rt_softmax_rows, rt_lnorm_rows and rt_rmsnorm_rows, for rt_par_for. */
struct rt_cr_job {
	const float *x, *scale, *bias;
	float *y, *mean, *inv;
	int64_t K;
	float eps;
	int log_out;
};

static void rt_cr_softmax_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_cr_job *j = v;

	for (int64_t r = r0; r < r1; r++)
		rt_cr_softmax_row(j->x + r * j->K, j->y + r * j->K, j->K, j->log_out);
}

/*
 * y [rows, K] = softmax (log_out: log_softmax) of each row of x [rows, K];
 * x and y do not overlap.
 */
static inline void rt_softmax_rows(const float *x, float *y, int64_t rows, int64_t K,
				   int log_out, int threads)
{
	struct rt_cr_job j = { x, NULL, NULL, y, NULL, NULL, K, 0.0f, log_out };

	if (threads > 1 && rows > 1 && rows * K >= 16384)
		rt_par_for(threads, rows, 1, rt_cr_softmax_some, &j);
	else
		rt_cr_softmax_some(&j, 0, rows);
}

static void rt_cr_lnorm_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_cr_job *j = v;
	int64_t K = j->K;

	for (int64_t r = r0; r < r1; r++) {
		const float *xr = j->x + r * K, *scale = j->scale, *bias = j->bias;
		float *yr = j->y + r * K;
		float m = rt_cr_sum(xr, K, 0.0f, 0) / (float)K;
		float is = 1.0f / sqrtf(rt_cr_sum(xr, K, m, 1) / (float)K + j->eps);

		if (j->mean)
			j->mean[r] = m;
		if (j->inv)
			j->inv[r] = is;
		if (bias)
			for (int64_t k = 0; k < K; k++)
				yr[k] = (xr[k] - m) * is * scale[k] + bias[k];
		else
			for (int64_t k = 0; k < K; k++)
				yr[k] = (xr[k] - m) * is * scale[k];
	}
}

/*
 * y [rows, K] = LayerNormalization of each row of x [rows, K] with scale
 * [K] and bias [K] (NULL: none); mean and inv [rows] (NULL: not wanted)
 * get each row's mean and 1 / sqrt(var + eps). y may be x.
 */
static inline void rt_lnorm_rows(const float *x, const float *scale, const float *bias,
				 float *y, float *mean, float *inv, int64_t rows, int64_t K,
				 float eps, int threads)
{
	struct rt_cr_job j = { x, scale, bias, y, mean, inv, K, eps, 0 };

	if (threads > 1 && rows > 1 && rows * K >= 16384)
		rt_par_for(threads, rows, 1, rt_cr_lnorm_some, &j);
	else
		rt_cr_lnorm_some(&j, 0, rows);
}

static void rt_cr_rmsnorm_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_cr_job *j = v;
	int64_t K = j->K;

	for (int64_t r = r0; r < r1; r++) {
		const float *xr = j->x + r * K, *scale = j->scale;
		float *yr = j->y + r * K;
		float is = 1.0f / sqrtf(rt_cr_sum(xr, K, 0.0f, 1) / (float)K + j->eps);

		for (int64_t k = 0; k < K; k++)
			yr[k] = xr[k] * is * scale[k];
	}
}

/*
 * y [rows, K] = RMSNormalization of each row of x [rows, K] with scale [K].
 * y may be x.
 */
static inline void rt_rmsnorm_rows(const float *x, const float *scale, float *y, int64_t rows,
				   int64_t K, float eps, int threads)
{
	struct rt_cr_job j = { x, scale, NULL, y, NULL, NULL, K, eps, 0 };

	if (threads > 1 && rows > 1 && rows * K >= 16384)
		rt_par_for(threads, rows, 1, rt_cr_rmsnorm_some, &j);
	else
		rt_cr_rmsnorm_some(&j, 0, rows);
}

static void rt_cr_mean_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_cr_job *j = v;

	for (int64_t r = r0; r < r1; r++)
		j->y[r] = rt_cr_sum(j->x + r * j->K, j->K, 0.0f, 0) / (float)j->K;
}

/*
 * y [rows] = the mean of each row of x [rows, K] (GlobalAveragePool over
 * NCHW: a row a plane), summed in lanes (rt_cr_sum).
 */
static inline void rt_mean_rows(const float *x, float *y, int64_t rows, int64_t K, int threads)
{
	struct rt_cr_job j = { x, NULL, NULL, y, NULL, NULL, K, 0.0f, 0 };

	if (threads > 1 && rows > 1 && rows * K >= 16384)
		rt_par_for(threads, rows, 1, rt_cr_mean_some, &j);
	else
		rt_cr_mean_some(&j, 0, rows);
}

/* ---- Attention ---- */

#define RT_ATTN_BLOCK 1024		/* keys scored at once, on the stack */
#define RT_ATTN_MAX_DV 512		/* V's head size at most (acc on the stack) */

/* Bits of rt_attn_rows's form: which tensors are 3-D, and causality. */
#define RT_ATTN_Q_FLAT 1		/* Q and Y [B, S, H * D], else [B, H, S, D] */
#define RT_ATTN_K_FLAT 2		/* K likewise (the cache is always 4-D) */
#define RT_ATTN_V_FLAT 4
#define RT_ATTN_CAUSAL 8		/* query i sees keys [0, P + i] */
#define RT_ATTN_PRESENT_K 16		/* pk is present_key, written here */
#define RT_ATTN_PRESENT_V 32		/* pv is present_value */

struct rt_attn {
	const float *q, *kp, *vp, *kn, *vn;
	float *y;
	int64_t hq, hkv, S, P, Skv, D, Dv;
	int64_t qs[3], ks[3], vs[3], ps[3], pvs[3], ys[3];	/* batch, head, row strides */
	float scale;
	int causal;
	const void *mask;	/* attn_mask: RT_ATTN_MASK_* mkind, NULL none */
	int mkind;
	int64_t ms[4];		/* its element strides along batch, head, row, key (0: broadcast) */
};

#define RT_ATTN_MASK_ADD 1		/* float32, added to the scores */
#define RT_ATTN_MASK_BOOL 2		/* bool (uint8_t): 0 masks the key */

/* x . y over n floats, in RT_CR_LANES lanes combined pairwise. */
static inline float rt_attn_dot(const float *restrict x, const float *restrict y, int64_t n)
{
	float t[RT_CR_LANES], s;
	int64_t k = 0;
#if defined(__GNUC__)
	int64_t kv = n / RT_CR_LANES * RT_CR_LANES;
	rt_cr_vec a = { 0 }, u, v;

	for (; k < kv; k += RT_CR_LANES) {
		memcpy(&u, x + k, sizeof(u));
		memcpy(&v, y + k, sizeof(v));
		a += u * v;
	}
	memcpy(t, &a, sizeof(t));
#else
	for (int l = 0; l < RT_CR_LANES; l++)
		t[l] = 0.0f;
#endif
	s = rt_cr_lanes(t);
	for (; k < n; k++)
		s += x[k] * y[k];
	return s;
}

/* Key or value row j of the total sequence for batch b, KV head kh. */
static inline const float *rt_attn_row(const struct rt_attn *a, int kv, int64_t b, int64_t kh,
				       int64_t j)
{
	const int64_t *st = j < a->P ? (kv ? a->pvs : a->ps) : (kv ? a->vs : a->ks);
	const float *base = j < a->P ? (kv ? a->vp : a->kp) : (kv ? a->vn : a->kn);

	if (j >= a->P)
		j -= a->P;
	return base + b * st[0] + kh * st[1] + j * st[2];
}

static void rt_attn_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_attn *a = v;
	float s[RT_ATTN_BLOCK], acc[RT_ATTN_MAX_DV], lo = RT_CR_EXP_MIN;

#if defined(__GNUC__)
	__asm__("" : "+m"(lo));		/* see rt_cr_softmax_row */
#endif
	for (int64_t r = r0; r < r1; r++) {
		int64_t b = r / (a->hq * a->S), h = r / a->S % a->hq, i = r % a->S;
		int64_t kh = h / (a->hq / a->hkv), n = a->P + a->Skv;
		const float *q = a->q + b * a->qs[0] + h * a->qs[1] + i * a->qs[2];
		float *y = a->y + b * a->ys[0] + h * a->ys[1] + i * a->ys[2];
		float mx = -INFINITY, sum = 0.0f;

		if (a->causal && a->P + i + 1 < n)
			n = a->P + i + 1;
		memset(acc, 0, sizeof(float) * (size_t)a->Dv);
		for (int64_t j0 = 0; j0 < n; j0 += RT_ATTN_BLOCK) {
			int64_t m = n - j0 < RT_ATTN_BLOCK ? n - j0 : RT_ATTN_BLOCK;
			float bm, nm;

			for (int64_t j = 0; j < m; j++)
				s[j] = rt_attn_dot(q, rt_attn_row(a, 0, b, kh, j0 + j), a->D) *
				       a->scale;
			if (a->mkind) {
				int64_t mo = b * a->ms[0] + h * a->ms[1] + i * a->ms[2] +
					     j0 * a->ms[3];
				const float *mf = (const float *)a->mask + mo;
				const uint8_t *mb = (const uint8_t *)a->mask + mo;

				for (int64_t j = 0; j < m; j++)
					if (a->mkind == RT_ATTN_MASK_ADD)
						s[j] += mf[j * a->ms[3]];
					else if (!mb[j * a->ms[3]])
						s[j] = -INFINITY;
			}
			bm = rt_cr_max(s, m);
			nm = bm > mx ? bm : mx;
			if (nm == -INFINITY)
				continue;	/* every score so far -inf: no weight yet */
			if (mx != nm && mx != -INFINITY) {
				/* an earlier block's weights, rescaled to the new max */
				float f = expf(mx - nm);

				sum *= f;
				for (int64_t d = 0; d < a->Dv; d++)
					acc[d] *= f;
			}
			mx = nm;
			for (int64_t j = 0; j < m; j++) {
				float d = s[j] - mx, e = expf(d < lo ? lo : d);

				s[j] = d < lo ? 0.0f : e;	/* clamped: exactly 0 */
			}
			sum += rt_cr_sum(s, m, 0.0f, 0);
			for (int64_t j = 0; j < m; j++) {
				const float *vr = rt_attn_row(a, 1, b, kh, j0 + j);
				float p = s[j];

				for (int64_t d = 0; d < a->Dv; d++)
					acc[d] += p * vr[d];
			}
		}
		for (int64_t d = 0; d < a->Dv; d++)
			y[d] = sum == 0.0f ? 0.0f : acc[d] / sum;
	}
}

/* A present output being written: the past's rows, then the new ones. */
struct rt_attn_present {
	const float *past, *now;	/* [B, H, P, d] at row stride ps; the new rows */
	float *out;			/* [B, H, P + Skv, d] at row stride os */
	int64_t H, P, Skv, d, ps, os;
	int64_t ns[3];			/* the new rows' batch, head and row strides */
	int in_place;			/* out is past's buffer: its rows are there */
};

static void rt_attn_present_some(void *v, int64_t r0, int64_t r1)
{
	const struct rt_attn_present *p = v;

	for (int64_t r = r0; r < r1; r++) {
		int64_t b = r / p->H, h = r % p->H;
		float *o = p->out + r * p->os * p->d;

		if (!p->in_place && p->P)
			memcpy(o, p->past + r * p->ps * p->d, sizeof(float) * (size_t)(p->P * p->d));
		for (int64_t j = 0; j < p->Skv; j++)
			memcpy(o + (p->P + j) * p->d, p->now + b * p->ns[0] + h * p->ns[1] +
			       j * p->ns[2], sizeof(float) * (size_t)p->d);
	}
}

/*
 * present = past then the new rows, per (batch, head) a block. A past kept
 * in place (rt_cache_capacity: the caller's cache, read and written at its
 * capacity's stride) is not copied: only the new rows are written. The
 * past's row stride, for the scores to read it at.
 */
static inline int64_t rt_attn_present(const float *past, const float *now, const int64_t *ns,
				      float *out, int64_t B, int64_t H, int64_t P, int64_t Skv,
				      int64_t d, int threads)
{
	int64_t cap = rt_cache_capacity(past, out);
	struct rt_attn_present p = { past, now, out, H, P, Skv, d, cap > 0 ? cap : P,
				     cap > 0 ? cap : P + Skv, { ns[0], ns[1], ns[2] }, cap > 0 };
	int64_t moved = B * H * ((cap > 0 ? 0 : P) + Skv) * d;

	if (threads > 1 && B * H > 1 && moved >= 65536)
		rt_par_for(threads, B * H, 1, rt_attn_present_some, &p);
	else
		rt_attn_present_some(&p, 0, B * H);
	return p.ps;
}

/*
 * Y of Attention, float32: q, the new keys kn and values vn, the cache kp
 * and vp ([B, Hkv, P, D]; P may be 0), and with RT_ATTN_PRESENT_K (_V) in
 * form present_key pk (present_value pv) written first, the cache then
 * the new rows (rt_attn_present); y in Q's form with V's head size
 * Dv (<= RT_ATTN_MAX_DV); form is RT_ATTN_* bits; mask of mkind
 * (RT_ATTN_MASK_*, 0: none) read at b * ms0 + h * ms1 + i * ms2 + j * ms3
 * for query row i of head h and key j of the total sequence. Rows (b, h, i)
 * split over the threads, never a row.
 */
static inline void rt_attn_rows(const float *q, const float *kp, const float *vp,
				const float *kn, const float *vn, float *y, float *pk, float *pv,
				int64_t B,
				int64_t hq, int64_t hkv, int64_t S, int64_t P, int64_t Skv,
				int64_t D, int64_t Dv, int64_t form, float scale,
				const void *mask, int64_t mkind, int64_t ms0, int64_t ms1,
				int64_t ms2, int64_t ms3, int threads)
{
	struct rt_attn a = { q, kp, vp, kn, vn, y, hq, hkv, S, P, Skv, D, Dv,
			     { 0 }, { 0 }, { 0 }, { 0 }, { 0 }, { 0 }, scale,
			     (form & RT_ATTN_CAUSAL) != 0, mask, (int)mkind,
			     { ms0, ms1, ms2, ms3 } };
	int64_t rows = B * hq * S;

	/* strides of batch, head and row: [B, S, H, D] or [B, H, S, D] */
#define RT_ATTN_STRIDES(st, flat, h, s, d) do { \
		(st)[0] = (h) * (s) * (d); \
		(st)[1] = (flat) ? (d) : (s) * (d); \
		(st)[2] = (flat) ? (h) * (d) : (d); \
	} while (0)
	RT_ATTN_STRIDES(a.qs, form & RT_ATTN_Q_FLAT, hq, S, D);
	RT_ATTN_STRIDES(a.ks, form & RT_ATTN_K_FLAT, hkv, Skv, D);
	RT_ATTN_STRIDES(a.vs, form & RT_ATTN_V_FLAT, hkv, Skv, Dv);
	RT_ATTN_STRIDES(a.ps, 0, hkv, P, D);
	RT_ATTN_STRIDES(a.pvs, 0, hkv, P, Dv);
	RT_ATTN_STRIDES(a.ys, form & RT_ATTN_Q_FLAT, hq, S, Dv);
#undef RT_ATTN_STRIDES
	/* the present outputs; a past kept in place is read at its stride */
	if (form & RT_ATTN_PRESENT_K) {
		int64_t ps = rt_attn_present(kp, kn, a.ks, pk, B, hkv, P, Skv, D, threads);

		a.ps[0] = hkv * ps * D;
		a.ps[1] = ps * D;
	}
	if (form & RT_ATTN_PRESENT_V) {
		int64_t ps = rt_attn_present(vp, vn, a.vs, pv, B, hkv, P, Skv, Dv, threads);

		a.pvs[0] = hkv * ps * Dv;
		a.pvs[1] = ps * Dv;
	}
	if (threads > 1 && rows > 1 && rows * (P + Skv) * (D + Dv) >= 32768)
		rt_par_for(threads, rows, 1, rt_attn_some, &a);
	else
		rt_attn_some(&a, 0, rows);
}

#endif
