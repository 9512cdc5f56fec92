/*
 * rt_ml.h - the kernels of domain ai.onnx.ml that are not loop nests:
 * LabelEncoder's lookup and the tree ensembles' walk (TreeEnsemble of
 * ai.onnx.ml 5, TreeEnsembleRegressor of 1 and 3). Included by
 * rt_model.h, so every unit of kernels has these (static) helpers; the
 * compiler lays out their tables (core/ops/ops_ml.c).
 *
 * Element types are passed as RT_ML_* codes. A tree ensemble is a table of
 * its branch nodes, 7 int64 each:
 *
 *	feature, mode, true, false, missing, member start, member count
 *
 * true/false: a node's index, or -1 - k for leaf k; mode: RT_ML_LEQ ..
 * RT_ML_MEMBER (x in members[start .. start + count)); missing: what a NaN
 * feature does (RT_ML_NAN_*). Leaf k adds weights[j] to target targets[j]
 * for j in [leaves[2k], leaves[2k] + leaves[2k + 1]); roots hold each
 * tree's first node (or leaf) in the same encoding.
 *
 *	rt_ml_trees(x, RT_ML_F32, 5, 3, nodes, splits, NULL, leaves, w, t,
 *		    roots, 10, 2, NULL, 0, RT_ML_SUM, RT_ML_NONE, y, RT_ML_F32, 1);
 *
 * Like every extern a kernel calls, each takes the kernel's thread count
 * last; these run on the calling thread.
 */
#ifndef COLLAGEC_RT_ML_H
#define COLLAGEC_RT_ML_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rt_half.h"

enum { RT_ML_STR, RT_ML_I64, RT_ML_I32, RT_ML_I16, RT_ML_F32, RT_ML_F64, RT_ML_F16 };
enum { RT_ML_LEQ, RT_ML_LT, RT_ML_GTE, RT_ML_GT, RT_ML_EQ, RT_ML_NEQ, RT_ML_MEMBER };
/* a NaN feature: compared as it is (NEQ true, the others false), goes true, goes false */
enum { RT_ML_NAN_CMP, RT_ML_NAN_TRUE, RT_ML_NAN_FALSE };
enum { RT_ML_AVERAGE, RT_ML_SUM, RT_ML_MIN, RT_ML_MAX };
enum { RT_ML_NONE, RT_ML_SOFTMAX, RT_ML_LOGISTIC, RT_ML_SOFTMAX_ZERO, RT_ML_PROBIT };
#define RT_ML_TARGETS_MAX 4096	/* a tree ensemble's targets: its scores are on the stack */

/* Element i of a numeric array of code t, as a double. */
static inline double rt_ml_get(const void *p, int t, int64_t i)
{
	switch (t) {
	case RT_ML_I64: return (double)((const int64_t *)p)[i];
	case RT_ML_I32: return (double)((const int32_t *)p)[i];
	case RT_ML_I16: return (double)((const int16_t *)p)[i];
	case RT_ML_F32: return (double)((const float *)p)[i];
	case RT_ML_F16: return (double)rt_h2f(((const uint16_t *)p)[i]);
	default: return ((const double *)p)[i];
	}
}

static inline void rt_ml_put(void *p, int t, int64_t i, double v)
{
	switch (t) {
	case RT_ML_F32: ((float *)p)[i] = (float)v; break;
	case RT_ML_F16: ((uint16_t *)p)[i] = rt_f2h((float)v); break;
	default: ((double *)p)[i] = v; break;
	}
}

/*
 * Order of key a (element i of keys) against x (element j of xs), both of
 * code t: strings by strcmp, numbers by value with every NaN equal and
 * above the rest (so a NaN key matches a NaN input, as ONNX Runtime's).
 */
static inline int rt_ml_cmp(const void *keys, int64_t i, const void *xs, int64_t j, int t)
{
	double a, b;

	if (t == RT_ML_STR) {
		const char *s = ((const char *const *)keys)[i], *u = ((const char *const *)xs)[j];

		return strcmp(s ? s : "", u ? u : "");
	}
	if (t == RT_ML_I64) {
		int64_t p = ((const int64_t *)keys)[i], q = ((const int64_t *)xs)[j];

		return (p > q) - (p < q);
	}
	a = rt_ml_get(keys, t, i);
	b = rt_ml_get(xs, t, j);
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b);
	return (a > b) - (a < b);
}

static inline size_t rt_ml_size(int t)
{
	switch (t) {
	case RT_ML_STR: return sizeof(const char *);
	case RT_ML_I32: case RT_ML_F32: return 4;
	case RT_ML_I16: case RT_ML_F16: return 2;
	default: return 8;
	}
}

/*
 * LabelEncoder: y[i] = values[k] where keys[k] equals x[i] (keys sorted by
 * rt_ml_cmp, no two equal), else *dflt; nk keys of code kt, values and the
 * default of code vt (strings: the constants' own pointers).
 */
static inline void rt_ml_label(const void *x, int kt, int64_t n, const void *keys, int64_t nk,
			       const void *values, const void *dflt, int vt, void *y, int threads)
{
	size_t vs = rt_ml_size(vt);

	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		int64_t lo = 0, hi = nk;
		const void *v = dflt;

		while (lo < hi) {
			int64_t mid = lo + (hi - lo) / 2;
			int c = rt_ml_cmp(keys, mid, x, i, kt);

			if (!c) {
				v = (const char *)values + (size_t)mid * vs;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		memcpy((char *)y + (size_t)i * vs, v, vs);
	}
}

/* Whether a branch node sends feature value v down its true side. */
static inline int rt_ml_branch(const int64_t *nd, double split, const double *members, double v)
{
	if (isnan(v) && nd[4] != RT_ML_NAN_CMP)
		return nd[4] == RT_ML_NAN_TRUE;
	switch (nd[1]) {
	case RT_ML_LEQ: return v <= split;
	case RT_ML_LT: return v < split;
	case RT_ML_GTE: return v >= split;
	case RT_ML_GT: return v > split;
	case RT_ML_EQ: return v == split;
	case RT_ML_NEQ: return v != split;
	default:
		for (int64_t k = 0; k < nd[6]; k++)
			if (members[nd[5] + k] == v)
				return 1;
		return 0;
	}
}

/*
 * sqrt(2) * erfinv(2p - 1) by Winitzki's approximation (a = 0.147), the
 * one ONNX Runtime's ML kernels use, so that PROBIT scores agree with its.
 */
static inline double rt_ml_probit(double p)
{
	double x = 2 * p - 1, sgn = x < 0 ? -1 : 1, l = log((1 - x) * (1 + x));
	double v = 2 / (3.14159 * 0.147) + 0.5 * l;

	return 1.41421356 * sgn * sqrt(-v + sqrt(v * v - l / 0.147));
}

/* The post_transform of one row of m scores, in place. */
static inline void rt_ml_post(double *s, int64_t m, int post)
{
	double mx = -INFINITY, sum = 0;

	switch (post) {
	case RT_ML_SOFTMAX:
	case RT_ML_SOFTMAX_ZERO:
		for (int64_t j = 0; j < m; j++)
			if (post == RT_ML_SOFTMAX || s[j] != 0)
				mx = s[j] > mx ? s[j] : mx;
		for (int64_t j = 0; j < m; j++) {
			s[j] = post == RT_ML_SOFTMAX || s[j] != 0 ? exp(s[j] - mx) : 0;
			sum += s[j];
		}
		for (int64_t j = 0; j < m && sum > 0; j++)
			s[j] /= sum;
		break;
	case RT_ML_LOGISTIC:
		for (int64_t j = 0; j < m; j++)
			s[j] = 1 / (1 + exp(-s[j]));
		break;
	case RT_ML_PROBIT:
		for (int64_t j = 0; j < m; j++)
			s[j] = rt_ml_probit(s[j]);
		break;
	default:
		break;
	}
}

/*
 * The tree ensemble over n rows of f features of x (code xt) into y [n,
 * nt] (code yt), the header's tables; base (nt values, if has_base) is added
 * after aggregating, as ONNX's TreeEnsembleRegressor does. The sums are
 * float64, rounded once; under MIN and MAX a target no leaf reached scores
 * 0 (+ base), as in ONNX Runtime (onnx's reference leaves the type's
 * largest magnitude). nt is at most RT_ML_TARGETS_MAX.
 */
static inline void rt_ml_trees(const void *x, int xt, int64_t n, int64_t f, const int64_t *nodes,
			       const double *splits, const double *members,
			       const int64_t *leaves, const double *weights,
			       const int64_t *targets, const int64_t *roots, int64_t ntrees,
			       int64_t nt, const double *base, int has_base, int64_t agg,
			       int64_t post, void *y, int yt, int threads)
{
	(void)threads;
	for (int64_t r = 0; r < n; r++) {
		double s[nt > 0 ? nt : 1];
		unsigned char hit[nt > 0 ? nt : 1];

		memset(hit, 0, sizeof(hit));
		for (int64_t j = 0; j < nt; j++)
			s[j] = 0;
		for (int64_t t = 0; t < ntrees; t++) {
			int64_t k = roots[t];

			while (k >= 0) {
				const int64_t *nd = nodes + 7 * k;

				k = rt_ml_branch(nd, splits[k], members,
						 rt_ml_get(x, xt, r * f + nd[0])) ? nd[2] : nd[3];
			}
			k = -1 - k;
			for (int64_t j = leaves[2 * k]; j < leaves[2 * k] + leaves[2 * k + 1]; j++) {
				double *d = &s[targets[j]];

				if (agg == RT_ML_MIN && hit[targets[j]])
					*d = weights[j] < *d ? weights[j] : *d;
				else if (agg == RT_ML_MAX && hit[targets[j]])
					*d = weights[j] > *d ? weights[j] : *d;
				else
					*d += weights[j];
				hit[targets[j]] = 1;
			}
		}
		for (int64_t j = 0; j < nt; j++) {
			if (agg == RT_ML_AVERAGE && ntrees)
				s[j] /= (double)ntrees;
			if (has_base)
				s[j] += base[j];
		}
		rt_ml_post(s, nt, (int)post);
		for (int64_t j = 0; j < nt; j++)
			rt_ml_put(y, yt, r * nt + j, s[j]);
	}
}

#endif
