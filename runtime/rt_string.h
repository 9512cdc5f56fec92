/*
 * rt_string.h - string tensors in the generated code. Included by
 * rt_model.h, so every unit of kernels has these (static) helpers.
 *
 * A string tensor is an array of `const char *`, each a NUL-terminated
 * UTF-8 string. The memory plan holds the pointer arrays like any tensor;
 * the strings a kernel makes live in the run's string pool: chunks owned by
 * the model handle, reset (kept, not freed) at the start of every run and
 * freed by collagec_close. So an output's strings are valid until the next
 * run, like its other data. A NULL element of an input reads as "".
 *
 * Kernels reach the pool of the run under way through rt_strpool_cur, set
 * by collagec_run for the calling thread (a handle is used by one thread at
 * a time); string kernels call these helpers outside parallel regions.
 *
 *	const char **y = ...;			(a kernel's string output)
 *	rt_str_from_num(x, COLLAGEC_FLOAT, y, n, threads);
 *	rt_str_to_num(y, COLLAGEC_FLOAT, x, n, threads);
 */
#ifndef COLLAGEC_RT_STRING_H
#define COLLAGEC_RT_STRING_H

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One block of the pool; data[] holds strings back to back. */
struct rt_strchunk {
	struct rt_strchunk *next;
	size_t size, used;
	char data[];
};

struct rt_strpool {
	struct rt_strchunk *head;	/* every chunk, kept across runs */
	int failed;			/* an allocation failed in this run */
};

/* The pool of the run under way on this thread (rt_model.c), or NULL. */
extern _Thread_local struct rt_strpool *rt_strpool_cur __attribute__((visibility("hidden")));

#define RT_STRCHUNK_MIN 65536

/*
 * n bytes from the run's pool: the first chunk with room, or a new one at
 * the end. NULL (and the pool marked failed) when out of memory.
 */
static inline char *rt_str_alloc(size_t n)
{
	struct rt_strpool *p = rt_strpool_cur;
	struct rt_strchunk **c;

	if (!p)
		return NULL;
	for (c = &p->head; *c; c = &(*c)->next)
		if ((*c)->size - (*c)->used >= n) {
			char *s = (*c)->data + (*c)->used;

			(*c)->used += n;
			return s;
		}
	*c = malloc(sizeof(**c) + (n > RT_STRCHUNK_MIN ? n : RT_STRCHUNK_MIN));
	if (!*c) {
		p->failed = 1;
		return NULL;
	}
	(*c)->next = NULL;
	(*c)->size = n > RT_STRCHUNK_MIN ? n : RT_STRCHUNK_MIN;
	(*c)->used = n;
	return (*c)->data;
}

/* A pool copy of s[0..n) plus a NUL; "" when out of memory (the run then fails). */
static inline const char *rt_str_dup(const char *s, size_t n)
{
	char *d = rt_str_alloc(n + 1);

	if (!d)
		return "";
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/*
 * x as the shortest decimal that reads back as the same float (as NumPy
 * prints a float32: "0.1", "1e-05", "3.0"), "nan", "inf" or "-inf".
 */
static inline int rt_str_fmt_float(char *buf, size_t size, double x, int single)
{
	int n = 0;

	if (isnan(x))
		return snprintf(buf, size, "nan");
	if (isinf(x))
		return snprintf(buf, size, x < 0 ? "-inf" : "inf");
	for (int p = 1; p <= 17; p++) {
		n = snprintf(buf, size, "%.*g", p, x);
		if (single ? strtof(buf, NULL) == (float)x : strtod(buf, NULL) == x)
			break;
	}
	if (!strpbrk(buf, ".e"))	/* an integral value keeps its ".0" */
		n += snprintf(buf + n, size - (size_t)n, ".0");
	return n;
}

/* y[i] = x[i] as a string; x's element type is dtype (a collagec_dtype). */
static inline void rt_str_from_num(const void *x, int dtype, const char **y, int64_t n, int threads)
{
	char buf[64];

	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		int len;

		switch (dtype) {
		case 1: len = rt_str_fmt_float(buf, sizeof(buf), ((const float *)x)[i], 1); break;
		case 11: len = rt_str_fmt_float(buf, sizeof(buf), ((const double *)x)[i], 0); break;
		case 10: len = rt_str_fmt_float(buf, sizeof(buf),
						rt_h2f(((const uint16_t *)x)[i]), 1); break;
		case 16: len = rt_str_fmt_float(buf, sizeof(buf),
						rt_bf2f(((const uint16_t *)x)[i]), 1); break;
		case 2: len = snprintf(buf, sizeof(buf), "%u", ((const uint8_t *)x)[i]); break;
		case 3: len = snprintf(buf, sizeof(buf), "%d", ((const int8_t *)x)[i]); break;
		case 4: len = snprintf(buf, sizeof(buf), "%u", ((const uint16_t *)x)[i]); break;
		case 5: len = snprintf(buf, sizeof(buf), "%d", ((const int16_t *)x)[i]); break;
		case 6: len = snprintf(buf, sizeof(buf), "%d", (int)((const int32_t *)x)[i]); break;
		case 7: len = snprintf(buf, sizeof(buf), "%lld",
				       (long long)((const int64_t *)x)[i]); break;
		case 9: len = snprintf(buf, sizeof(buf), "%s",
				       ((const uint8_t *)x)[i] ? "True" : "False"); break;
		case 12: len = snprintf(buf, sizeof(buf), "%u",
					(unsigned)((const uint32_t *)x)[i]); break;
		case 13: len = snprintf(buf, sizeof(buf), "%llu",
					(unsigned long long)((const uint64_t *)x)[i]); break;
		default: len = 0; buf[0] = 0; break;
		}
		y[i] = rt_str_dup(buf, (size_t)len);
	}
}

/*
 * s as a number: decimal or scientific ("3.14", "1E8"), and "NaN", "INF",
 * "+INF", "-INF" in any case; anything else reads as far as it is a number
 * (ONNX leaves it undefined), an empty string as 0.
 */
static inline double rt_str_parse(const char *s)
{
	const char *p = s ? s : "";
	int neg = 0;

	while (isspace((unsigned char)*p))
		p++;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity"))
		return neg ? -INFINITY : INFINITY;
	if (!strcasecmp(p, "nan"))
		return NAN;
	return strtod(s ? s : "", NULL);
}

/* y[i] = x[i] read as a number of y's element type dtype (a collagec_dtype). */
static inline void rt_str_to_num(const char *const *x, int dtype, void *y, int64_t n, int threads)
{
	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		double d = rt_str_parse(x[i]);
		/* integers: truncated towards zero, as the spec's "100.5" to 100 */
		long long v = isnan(d) ? 0 : d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN
			: (long long)d;

		switch (dtype) {
		case 1: ((float *)y)[i] = (float)d; break;
		case 11: ((double *)y)[i] = d; break;
		case 10: ((uint16_t *)y)[i] = rt_d2h(d); break;
		case 16: ((uint16_t *)y)[i] = rt_d2bf(d); break;
		case 2: ((uint8_t *)y)[i] = (uint8_t)v; break;
		case 3: ((int8_t *)y)[i] = (int8_t)v; break;
		case 4: ((uint16_t *)y)[i] = (uint16_t)v; break;
		case 5: ((int16_t *)y)[i] = (int16_t)v; break;
		case 6: ((int32_t *)y)[i] = (int32_t)v; break;
		case 7: ((int64_t *)y)[i] = (int64_t)v; break;
		case 9: ((uint8_t *)y)[i] = d != 0; break;
		case 12: ((uint32_t *)y)[i] = (uint32_t)v; break;
		case 13: ((uint64_t *)y)[i] = (uint64_t)v; break;
		default: break;
		}
	}
}

/* y[i] = a pool copy of x[i]. */
static inline void rt_str_copy(const char *const *x, const char **y, int64_t n, int threads)
{
	(void)threads;
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] ? rt_str_dup(x[i], strlen(x[i])) : "";
}

/* ---- StringNormalizer ---- */

/* flags of rt_str_normalize */
enum { RT_STR_LOWER = 1, RT_STR_UPPER = 2, RT_STR_CASE_SENSITIVE = 4 };

/* a == b, ignoring ASCII case unless sensitive. */
static inline int rt_str_same(const char *a, const char *b, int sensitive)
{
	return sensitive ? !strcmp(a, b) : !strcasecmp(a, b);
}

/* Whether x is one of the n stopwords. */
static inline int rt_str_stop(const char *x, const char *const *stop, int64_t n, int flags)
{
	for (int64_t k = 0; k < n; k++)
		if (rt_str_same(x, stop[k] ? stop[k] : "", (flags & RT_STR_CASE_SENSITIVE) != 0))
			return 1;
	return 0;
}

/* How many of x[0..n) are not stopwords: the length of StringNormalizer's output. */
static inline int64_t rt_str_kept(const char *const *x, int64_t n, const char *const *stop,
			   int64_t n_stop, int flags)
{
	int64_t c = 0;

	for (int64_t i = 0; i < n; i++)
		c += !rt_str_stop(x[i] ? x[i] : "", stop, n_stop, flags);
	return c;
}

/*
 * StringNormalizer: the strings of x[0..n) that are not stopwords, in
 * order, with their case changed (flags); one "" when none is left. Case
 * changes map ASCII letters only (the en_US locale's rules for them);
 * other bytes, UTF-8 sequences included, are kept as they are.
 */
static inline void rt_str_normalize(const char *const *x, const char *const *stop, const char **y,
			     int64_t n, int64_t n_stop, int64_t flags, int threads)
{
	int64_t o = 0;

	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		const char *s = x[i] ? x[i] : "";
		size_t len = strlen(s);
		char *d;

		if (rt_str_stop(s, stop, n_stop, (int)flags))
			continue;
		d = rt_str_alloc(len + 1);
		if (!d) {
			y[o++] = "";
			continue;
		}
		for (size_t k = 0; k <= len; k++) {
			unsigned char c = (unsigned char)s[k];

			d[k] = (char)(c >= 0x80 ? c : flags & RT_STR_LOWER ? tolower(c)
				      : flags & RT_STR_UPPER ? toupper(c) : c);
		}
		y[o++] = d;
	}
	if (o == 0 && n_stop > 0)	/* (without stopwords Y is X's shape: maybe [0]) */
		y[0] = "";
}

#endif
