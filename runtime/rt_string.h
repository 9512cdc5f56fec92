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
 *
 * The compiler includes this file too, for rt_regex_posix (RegexFullMatch's
 * pattern is checked when compiling).
 */
#ifndef COLLAGEC_RT_STRING_H
#define COLLAGEC_RT_STRING_H

#include <ctype.h>
#include <math.h>
#include <regex.h>
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

/* ---- Equal ---- */

/* *y = whether strings a and b are equal, byte for byte (NULL reads as ""). */
static inline void rt_str_equal(uint8_t *y, const char *a, const char *b, int threads)
{
	(void)threads;
	*y = strcmp(a ? a : "", b ? b : "") == 0;
}

/* ---- StringConcat ---- */

/* *y = a pool copy of a then b. */
static inline void rt_str_concat(const char **y, const char *a, const char *b, int threads)
{
	size_t la = strlen(a ? a : ""), lb = strlen(b ? b : "");
	char *d = rt_str_alloc(la + lb + 1);

	(void)threads;
	if (!d) {
		*y = "";
		return;
	}
	memcpy(d, a ? a : "", la);
	memcpy(d + la, b ? b : "", lb + 1);
	*y = d;
}

/* ---- StringSplit ---- */

/* Python's str.isspace for ASCII: what split() without a separator splits at. */
static inline int rt_str_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/*
 * The pieces of s as Python's s.split(sep, maxsplit) makes them (sep ""
 * as None: runs of whitespace, none at the ends; maxsplit < 0: no limit):
 * the first cap of them pool copies in out[] (out NULL: only counted).
 * Returns their number.
 */
static inline int64_t rt_str_split1(const char *s, const char *sep, int64_t maxsplit,
				    const char **out, int64_t cap)
{
	size_t ls = strlen(sep);
	int64_t n = 0;
	const char *p = s, *e;

	for (;;) {
		if (!ls) {
			while (*p && rt_str_space((unsigned char)*p))
				p++;
			if (!*p)
				break;
		}
		if (maxsplit >= 0 && n == maxsplit)
			e = NULL;	/* the rest is the last piece */
		else if (ls)
			e = strstr(p, sep);
		else
			for (e = p; *e && !rt_str_space((unsigned char)*e); e++)
				;
		if (out && n < cap)
			out[n] = rt_str_dup(p, e ? (size_t)(e - p) : strlen(p));
		n++;
		if (!e || (!ls && !*e))
			break;
		p = e + ls;
	}
	return n;
}

/* The most pieces a string of x[0..n) splits into: StringSplit's last dim. */
static inline int64_t rt_str_split_max(const char *const *x, int64_t n, const char *sep,
				       int64_t maxsplit)
{
	int64_t m = 0;

	for (int64_t i = 0; i < n; i++) {
		int64_t c = rt_str_split1(x[i] ? x[i] : "", sep ? sep : "", maxsplit, NULL, 0);

		m = c > m ? c : m;
	}
	return m;
}

/*
 * StringSplit: y[i * cols ..] the pieces of x[i] padded with "", z[i]
 * their number; sep[0] the delimiter ("": whitespace).
 */
static inline void rt_str_split(const char *const *x, const char *const *sep, const char **y,
				int64_t *z, int64_t n, int64_t cols, int64_t maxsplit, int threads)
{
	(void)threads;
	for (int64_t i = 0; i < n; i++) {
		int64_t c = rt_str_split1(x[i] ? x[i] : "", sep[0] ? sep[0] : "", maxsplit,
					  y + i * cols, cols);

		for (int64_t k = c; k < cols; k++)
			y[i * cols + k] = "";
		z[i] = c;
	}
}

/* ---- TfIdfVectorizer over strings ---- */

/*
 * Adds to y[r * out + col], for each of the rows rows of x (c strings
 * each), the matches of the n-gram tok[0..len): a match starts at i and
 * takes every d-th string, d from 1 to skips.
 */
static inline void rt_str_tfidf_gram(const char *const *x, const char *const *tok, int64_t len,
				     float *y, int64_t rows, int64_t c, int64_t out, int64_t col,
				     int64_t skips, int threads)
{
	(void)threads;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t d = 1; d <= skips; d++)
			for (int64_t i = 0; i + d * (len - 1) < c; i++) {
				int64_t k = 0;

				while (k < len && !strcmp(x[r * c + i + d * k] ? x[r * c + i + d * k]
							  : "", tok[k] ? tok[k] : ""))
					k++;
				if (k == len)
					y[r * out + col] += 1;
			}
}

/* ---- RegexFullMatch ---- */

/*
 * The POSIX extended expression (as glibc's regcomp reads it, with its GNU
 * escapes \w \W \s \S \b \B) that matches what RE2 pattern re does, anchored
 * at both ends: "^(re)$". Translates \d \D, the class escapes inside
 * brackets ([\w.-]), escaped punctuation, (?:...) and lazy quantifiers
 * (the same as greedy ones for a full match). out needs 12 * strlen(re) +
 * 8 bytes. -1 on RE2 syntax it cannot express: other (?...) groups, \A \z
 * \p{..}, \x.. and such escapes.
 */
static inline int rt_regex_posix(const char *re, char *out)
{
	char *o = out;
	int br = 0, dash = 0;

	o += sprintf(o, "^(");
	for (const char *p = re; *p; p++) {
		char c = *p;

		if (c == '\\') {
			char d = *++p;

			if (!d)
				return -1;
			if (br) {
				if (d == 'd')
					o += sprintf(o, "0-9");
				else if (d == 'w')
					o += sprintf(o, "[:alnum:]_");
				else if (d == 's')
					o += sprintf(o, "[:space:]");
				else if (d == 'n' || d == 't')
					*o++ = d == 'n' ? '\n' : '\t';
				else if (d == '-')
					dash = 1;	/* a literal '-' goes last */
				else if (d == '\\' || (ispunct((unsigned char)d) && d != ']' &&
							!(d == '^' && o[-1] == '[')))
					*o++ = d;
				else
					return -1;
				continue;
			}
			if (d == 'd' || d == 'D')
				o += sprintf(o, d == 'd' ? "[0-9]" : "[^0-9]");
			else if (strchr("wWsSbB", d))
				o += sprintf(o, "\\%c", d);
			else if (d == 'n' || d == 't')
				*o++ = d == 'n' ? '\n' : '\t';
			else if (ispunct((unsigned char)d))
				o += sprintf(o, "\\%c", d);
			else
				return -1;
			continue;
		}
		if (br) {
			if (c == '[' && p[1] == ':') {	/* [:alpha:] */
				const char *e = strstr(p + 2, ":]");

				if (!e)
					return -1;
				memcpy(o, p, (size_t)(e + 2 - p));
				o += e + 2 - p;
				p = e + 1;
				continue;
			}
			if (c == ']') {
				if (dash)
					*o++ = '-';
				br = dash = 0;
			}
			*o++ = c;
			continue;
		}
		if (c == '[') {
			br = 1;
			*o++ = c;
			if (p[1] == '^')
				*o++ = *++p;
			if (p[1] == ']')
				*o++ = *++p;
			continue;
		}
		if (c == '(' && p[1] == '?') {
			if (p[2] != ':')
				return -1;
			p += 2;
		} else if (strchr("*+?}", c) && p[1] == '?') {
			*o++ = c;
			p++;
			continue;
		}
		*o++ = c;
	}
	if (br)
		return -1;
	strcpy(o, ")$");
	return 0;
}

/*
 * y[i] = whether all of x[i] matches pattern pat[0] (RE2 syntax, through
 * rt_regex_posix; checked when compiling, so it compiles here unless memory
 * runs out, which fails the run).
 */
static inline void rt_str_regex_full(const char *const *x, const char *const *pat, uint8_t *y,
				     int64_t n, int threads)
{
	char *posix = malloc(12 * strlen(pat[0]) + 8);
	regex_t re;
	int ok = posix && rt_regex_posix(pat[0], posix) == 0 &&
		 regcomp(&re, posix, REG_EXTENDED | REG_NOSUB) == 0;

	(void)threads;
	free(posix);
	if (!ok && rt_strpool_cur)
		rt_strpool_cur->failed = 1;
	for (int64_t i = 0; i < n; i++)
		y[i] = ok && regexec(&re, x[i] ? x[i] : "", 0, NULL, 0) == 0;
	if (ok)
		regfree(&re);
}

#endif
