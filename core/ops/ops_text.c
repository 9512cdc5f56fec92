/*
 * ops_text.c - text ops. StringNormalizer, StringConcat, StringSplit and
 * RegexFullMatch on string tensors: calls of runtime/rt_string.h's helpers.
 * StringNormalizer's output length is a data symbol when there are
 * stopwords, StringSplit's last dim always is; RegexFullMatch's pattern is
 * checked here with the translation the run time uses.
 *
 * TfIdfVectorizer over integer tokens. The n-gram pool is an
 * attribute, so each pool entry becomes its own counting loop nest with
 * its tokens as constants: the kernel grows with the pool, and the pool
 * of a real vocabulary belongs in a table instead (not done yet). Over
 * strings (pool_strings, a string constant input after import) each pool
 * entry is one rt_str_tfidf_gram call instead.
 */
#include "ops.h"

#include <regex.h>
#include <string.h>

#include "../../runtime/rt_half.h"
#include "../../runtime/rt_string.h"

enum tfidf_mode { TFIDF_TF, TFIDF_IDF, TFIDF_TFIDF, TFIDF_MODE_COUNT };

/* The n-gram pool and how to count and weigh it. */
struct tfidf {
	int64_t min_n, max_n, max_skip;
	enum tfidf_mode mode;
	const int64_t *pool, *counts, *indexes;	/* pool_int64s (NULL: pool_strings, input 1
						   after import), ngram_counts, ngram_indexes */
	int n_pool, n_counts, n_indexes;
	const double *weights;			/* NULL: every weight is 1 */
	int n_weights;
	int64_t out;				/* output columns: max(ngram_indexes) + 1 */
};

/* Reads and checks the attributes against the pool's layout. -1 after a diagnostic. */
static int tfidf_plan(struct graph *g, const struct node *n, struct tfidf *p)
{
	static const char *const modes[TFIDF_MODE_COUNT] = { "TF", "IDF", "TFIDF" };
	const char *m = node_attr_str(n, "mode", "");
	const struct attr *w = node_attr(n, "weights");
	int64_t grams = 0;
	int i;

	for (i = 0; i < TFIDF_MODE_COUNT && strcmp(m, modes[i]); i++)
		;
	if (i == TFIDF_MODE_COUNT) {
		diag_error(g->ctx, "%s: mode '%s' is not one of TF, IDF, TFIDF", node_loc(g, n), m);
		return -1;
	}
	p->mode = (enum tfidf_mode)i;
	p->min_n = node_attr_int(n, "min_gram_length", 0);
	p->max_n = node_attr_int(n, "max_gram_length", 0);
	p->max_skip = node_attr_int(n, "max_skip_count", 0);
	p->n_pool = node_attr_ints(n, "pool_int64s", &p->pool);
	if (p->n_pool < 0 && node_attr(n, "pool_strings")) {
		p->pool = NULL;
		p->n_pool = node_attr(n, "pool_strings")->n;
	}
	p->n_counts = node_attr_ints(n, "ngram_counts", &p->counts);
	p->n_indexes = node_attr_ints(n, "ngram_indexes", &p->indexes);
	p->weights = w && w->kind == ATTR_FLOATS && w->n ? w->floats : NULL;
	p->n_weights = p->weights ? w->n : 0;
	if (p->min_n < 1 || p->max_n < p->min_n || p->max_skip < 0 || p->max_skip > DIM_LIMIT ||
	    p->n_pool < 0 || p->n_counts < 1 || p->n_indexes < 1) {
		diag_error(g->ctx, "%s: needs 1 <= min_gram_length <= max_gram_length, "
			   "max_skip_count >= 0, pool_int64s, ngram_counts and ngram_indexes",
			   node_loc(g, n));
		return -1;
	}
	p->out = 0;
	for (i = 0; i < p->n_counts; i++) {
		int64_t end = i + 1 < p->n_counts ? p->counts[i + 1] : p->n_pool;

		if (p->counts[i] < 0 || end < p->counts[i] || end > p->n_pool ||
		    (end - p->counts[i]) % (i + 1)) {
			diag_error(g->ctx, "%s: ngram_counts[%d] does not start a run of %d-grams "
				   "in the pool", node_loc(g, n), i, i + 1);
			return -1;
		}
		grams += (end - p->counts[i]) / (i + 1);
	}
	if (grams != p->n_indexes) {
		diag_error(g->ctx, "%s: ngram_indexes has %d values for %lld n-grams",
			   node_loc(g, n), p->n_indexes, (long long)grams);
		return -1;
	}
	for (i = 0; i < p->n_indexes; i++) {
		if (p->indexes[i] < 0 || p->indexes[i] >= DIM_LIMIT) {
			diag_error(g->ctx, "%s: ngram_indexes[%d] is out of range", node_loc(g, n), i);
			return -1;
		}
		if (p->indexes[i] + 1 > p->out)
			p->out = p->indexes[i] + 1;
	}
	if (p->weights && p->n_weights < p->out) {
		diag_error(g->ctx, "%s: weights has %d values for %lld outputs", node_loc(g, n),
			   p->n_weights, (long long)p->out);
		return -1;
	}
	return 0;
}

/*
 * X is [C] or [B, C] of int32 or int64 (pool_int64s) or of strings
 * (pool_strings); Y is float [O] or [B, O].
 */
int infer_tfidf(struct graph *g, struct node *n)
{
	struct tfidf p;
	struct value *x;
	struct shape s;

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    tfidf_plan(g, n, &p) < 0)
		return -1;
	if ((p.pool ? x->dtype != DTYPE_I32 && x->dtype != DTYPE_I64 : !dtype_is_string(x->dtype)) ||
	    x->shape.rank < 1 || x->shape.rank > 2) {
		diag_error(g->ctx, "%s: X must be %s of shape [C] or [B, C]", node_loc(g, n),
			   p.pool ? "int32 or int64 (pool_int64s)" : "strings (pool_strings)");
		return -1;
	}
	s = x->shape;
	s.d[s.rank - 1] = dim_const(p.out);
	infer_set(g, n, 0, DTYPE_F32, &s);
	return 0;
}

/*
 * Counts pool entry j (tokens tok[0..len)) into Y column col of every row:
 * a match starts at i and takes every d-th token, d from 1 to
 * max_skip_count + 1 (unigrams once, whatever the skip).
 */
static void tfidf_count(struct lower *L, const struct tfidf *p, const int64_t *tok, int len,
			int64_t col)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	struct tir *C = tir_dim(b, x->shape.d[x->shape.rank - 1]), *row, *d, *i, *base, *ok;
	int64_t skips = len == 1 ? 1 : p->max_skip + 1;

	row = x->shape.rank == 2 ? tir_loop(b, tir_dim(b, x->shape.d[0])) : tir_int(b, 0);
	if (x->shape.rank == 2)
		tir_mark_parallel(b);
	base = tir_let(b, "row", tir_mul(b, row, C));
	d = tir_add(b, tir_loop(b, tir_int(b, skips)), tir_int(b, 1));
	d = tir_let(b, "d", d);
	i = tir_loop(b, tir_bin(b, BIN_SUB, C, tir_mul(b, d, tir_int(b, len - 1))));
	ok = NULL;
	for (int k = 0; k < len; k++) {
		struct tir *at = tir_add(b, base, tir_add(b, i, tir_mul(b, d, tir_int(b, k))));
		struct tir *eq = tir_bin(b, BIN_EQ, tir_cast(b, DTYPE_I64, tir_load(b, L->in[0], at)),
					 tir_int(b, tok[k]));

		ok = ok ? tir_bin(b, BIN_LAND, ok, eq) : eq;
	}
	tir_if(b, ok);
	{
		struct tir *at = tir_add(b, tir_mul(b, row, tir_int(b, p->out)), tir_int(b, col));

		tir_store(b, L->out[0], at, tir_add(b, tir_load(b, L->out[0], at),
						    tir_const(b, DTYPE_F32, 1)));
	}
	tir_end(b);
	tir_end(b);
	tir_end(b);
	if (x->shape.rank == 2)
		tir_end(b);
}

/*
 * The same over strings: one rt_str_tfidf_gram call (runtime/rt_string.h)
 * compares the pool's strings (input 1) at pool offset at.
 */
static void tfidf_count_strings(struct lower *L, const struct tfidf *p, int64_t at, int len,
				int64_t col)
{
	const struct value *x = lower_in(L, 0);
	struct tir *args[9];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_addr(L->b, L->in[1], tir_int(L->b, at));
	args[2] = tir_int(L->b, len);
	args[3] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[4] = x->shape.rank == 2 ? tir_dim(L->b, x->shape.d[0]) : tir_int(L->b, 1);
	args[5] = tir_dim(L->b, x->shape.d[x->shape.rank - 1]);
	args[6] = tir_int(L->b, p->out);
	args[7] = tir_int(L->b, col);
	args[8] = tir_int(L->b, len == 1 ? 1 : p->max_skip + 1);
	tir_extern(L->b, "rt_str_tfidf_gram", args, 9);
}

/*
 * Y = 0; every pool entry whose length is within [min_gram_length,
 * max_gram_length] adds its matches to its column (ngram_indexes); then
 * IDF replaces a non-zero count with the column's weight (1 without
 * weights) and TFIDF multiplies by it.
 */
int lower_tfidf(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	struct tir *e, *v, *zero = tir_const(b, DTYPE_F32, 0);
	struct tfidf p;
	int j = 0;

	if (tfidf_plan(L->g, L->n, &p) < 0)
		return -1;
	e = tir_loop(b, lower_numel(L, &y->shape));
	tir_mark_parallel(b);
	tir_store(b, L->out[0], e, tir_const(b, DTYPE_F32, 0));
	tir_end(b);
	for (int len = 1; len <= p.n_counts; len++) {
		int64_t end = len < p.n_counts ? p.counts[len] : p.n_pool;

		for (int64_t at = p.counts[len - 1]; at < end; at += len, j++)
			if (len >= p.min_n && len <= p.max_n && p.pool)
				tfidf_count(L, &p, p.pool + at, len, p.indexes[j]);
			else if (len >= p.min_n && len <= p.max_n)
				tfidf_count_strings(L, &p, at, len, p.indexes[j]);
	}
	if (p.mode == TFIDF_TF || (p.mode == TFIDF_TFIDF && !p.weights))
		return 0;
	e = tir_loop(b, lower_numel(L, &y->shape));
	tir_mark_parallel(b);
	v = tir_let(b, "v", tir_load(b, L->out[0], e));
	if (p.weights) {
		struct tir *col = tir_let(b, "col", tir_bin(b, BIN_MOD, e, tir_int(b, p.out)));
		struct tir *w = tir_const(b, DTYPE_F32, p.weights[p.out - 1]);

		/* the column's weight, by a chain of selects over the constant list */
		for (int64_t c = p.out - 2; c >= 0; c--)
			w = tir_select(b, tir_bin(b, BIN_EQ, col, tir_int(b, c)),
				       tir_const(b, DTYPE_F32, p.weights[c]), w);
		if (p.mode == TFIDF_IDF)
			v = tir_select(b, tir_bin(b, BIN_GT, v, zero), w, zero);
		else
			v = tir_mul(b, v, w);
	} else {
		v = tir_select(b, tir_bin(b, BIN_GT, v, zero), tir_const(b, DTYPE_F32, 1), zero);
	}
	tir_store(b, L->out[0], e, v);
	tir_end(b);
	return 0;
}

/* ---- StringNormalizer ---- */

/* rt_string.h's flags: RT_STR_LOWER, RT_STR_UPPER, RT_STR_CASE_SENSITIVE */
enum { STRNORM_LOWER = 1, STRNORM_UPPER = 2, STRNORM_CASE_SENSITIVE = 4 };

int64_t stringnorm_flags(const struct node *n)
{
	const char *a = node_attr_str(n, "case_change_action", "NONE");

	return (!strcmp(a, "LOWER") ? STRNORM_LOWER : !strcmp(a, "UPPER") ? STRNORM_UPPER : 0) |
	       (node_attr_int(n, "is_case_sensitive", 0) ? STRNORM_CASE_SENSITIVE : 0);
}

/*
 * Whether the case of locale is one this build changes correctly: it maps
 * ASCII letters only, which is what en_US (and the C locale) do to them.
 */
static bool stringnorm_locale_ok(const char *l)
{
	return !l[0] || !strcmp(l, "C") || !strcmp(l, "POSIX") || !strncmp(l, "en_US", 5) ||
	       !strncmp(l, "en-US", 5) || !strcmp(l, "en");
}

/*
 * X: string [C] or [1, C]. Y: the strings that are not stopwords (input 1,
 * from the attribute by import), [C'] or [1, C'] with C' a data symbol that
 * the run-time shape function binds (1 when every string is a stopword: Y
 * is then one ""); without stopwords, X's shape.
 */
int infer_stringnormalizer(struct graph *g, struct node *n)
{
	const char *a = node_attr_str(n, "case_change_action", "NONE");
	const char *loc = node_attr_str(n, "locale", "");
	struct value *x, *stop;
	struct shape s;

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	stop = node_in(g, n, 1);
	if (!dtype_is_string(x->dtype) || (x->shape.rank != 1 && x->shape.rank != 2) ||
	    (x->shape.rank == 2 && !dim_eq(x->shape.d[0], dim_const(1)))) {
		diag_error(g->ctx, "%s: input 'X' must be a string tensor of shape [C] or [1, C]",
			   node_loc(g, n));
		return -1;
	}
	if (strcmp(a, "NONE") && strcmp(a, "LOWER") && strcmp(a, "UPPER")) {
		diag_error(g->ctx, "%s: case_change_action '%s' is not one of LOWER, UPPER, NONE",
			   node_loc(g, n), a);
		return -1;
	}
	if (!stringnorm_locale_ok(loc)) {
		diag_error(g->ctx, "%s: locale '%s' is not supported (en_US only: ASCII letters "
			   "change case)", node_loc(g, n), loc);
		return -1;
	}
	s = x->shape;
	if (stop && shape_numel_static(&stop->shape) > 0)
		s.d[s.rank - 1] = graph_data_sym(g, n->out[0], s.rank - 1);
	infer_set(g, n, 0, DTYPE_STR, &s);
	return 0;
}

/* One call of rt_str_normalize over the whole input (runtime/rt_string.h). */
int lower_stringnormalizer(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *stop = lower_in(L, 1);
	int out = L->n->n_in > 1 && L->in[1] ? 1 : 0;
	struct tir *args[6];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_addr(L->b, out ? L->in[1] : L->in[0], tir_int(L->b, 0));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = lower_numel(L, &x->shape);
	args[4] = stop ? lower_numel(L, &stop->shape) : tir_int(L->b, 0);
	args[5] = tir_int(L->b, stringnorm_flags(L->n));
	tir_extern(L->b, "rt_str_normalize", args, 6);
	return 0;
}

/* ---- StringConcat ---- */

/* Z = X + Y, string by string, under numpy broadcasting. */
int infer_stringconcat(struct graph *g, struct node *n)
{
	if (infer_arity(g, n, 2, 2, 1) < 0 || !infer_input(g, n, 0) || !infer_input(g, n, 1))
		return -1;
	if (!dtype_is_string(node_in(g, n, 0)->dtype) ||
	    !dtype_is_string(node_in(g, n, 1)->dtype)) {
		diag_error(g->ctx, "%s: inputs 'X' and 'Y' must be string tensors", node_loc(g, n));
		return -1;
	}
	return infer_broadcast_to(g, n, DTYPE_STR);
}

/* One rt_str_concat call per output element, in order (not parallel: the pool). */
int lower_stringconcat(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_in(L, 1), *z = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *args[3];

	lower_loops(L, &z->shape, idx);
	args[0] = tir_addr(L->b, L->out[0], lower_offset(L, &z->shape, idx));
	args[1] = tir_load(L->b, L->in[0], lower_bcast_offset(L, &x->shape, &z->shape, idx));
	args[2] = tir_load(L->b, L->in[1], lower_bcast_offset(L, &y->shape, &z->shape, idx));
	tir_extern(L->b, "rt_str_concat", args, 3);
	lower_end_loops(L, z->shape.rank);
	return 0;
}

/* ---- RegexFullMatch ---- */

/*
 * Y: bool of X's shape, whether each string matches the pattern (input 1
 * after import: a string constant) as a whole. The pattern is RE2's syntax;
 * what rt_regex_posix can turn into a POSIX expression is supported.
 */
int infer_regexfullmatch(struct graph *g, struct node *n)
{
	struct value *x, *p;
	const char *pat;
	char *posix;
	regex_t re;
	int rc;

	if (infer_arity(g, n, 1, 2, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	p = node_in(g, n, 1);
	if (!dtype_is_string(x->dtype) || !p || !p->data) {
		diag_error(g->ctx, "%s: needs a string input 'X' and the attribute 'pattern'",
			   node_loc(g, n));
		return -1;
	}
	pat = ((const char *const *)p->data)[0];
	posix = arena_alloc(g->arena, 12 * strlen(pat) + 8);
	if (rt_regex_posix(pat, posix) < 0) {
		diag_error(g->ctx, "%s: pattern '%s' uses RE2 syntax that is not supported "
			   "(POSIX extended expressions with \\d \\w \\s \\b and (?:...) are)",
			   node_loc(g, n), pat);
		return -1;
	}
	rc = regcomp(&re, posix, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[128];

		regerror(rc, &re, msg, sizeof(msg));
		diag_error(g->ctx, "%s: pattern '%s' is not a valid regular expression: %s",
			   node_loc(g, n), pat, msg);
		return -1;
	}
	regfree(&re);
	infer_set(g, n, 0, DTYPE_BOOL, &x->shape);
	return 0;
}

/* One rt_str_regex_full call over the whole input (it compiles the pattern once). */
int lower_regexfullmatch(struct lower *L)
{
	struct tir *args[4];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_addr(L->b, L->in[1], tir_int(L->b, 0));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = lower_numel(L, &lower_in(L, 0)->shape);
	tir_extern(L->b, "rt_str_regex_full", args, 4);
	return 0;
}

/* ---- StringSplit ---- */

/*
 * Y: X's shape plus the most pieces any string splits into (a data symbol
 * that the run-time shape function binds), padded with ""; Z: int64, X's
 * shape, each string's count. Input 1 (from import) holds the delimiter,
 * "" for whitespace as Python's split() does.
 */
int infer_stringsplit(struct graph *g, struct node *n)
{
	struct value *x, *sep;
	struct shape s;

	if (infer_arity(g, n, 2, 2, 2) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	sep = node_in(g, n, 1);
	if (!dtype_is_string(x->dtype) || !sep || !sep->data || x->shape.rank >= MAX_RANK) {
		diag_error(g->ctx, "%s: input 'X' must be a string tensor of rank below %d",
			   node_loc(g, n), MAX_RANK);
		return -1;
	}
	s = x->shape;
	s.rank++;
	s.d[s.rank - 1] = graph_data_sym(g, n->out[0], s.rank - 1);
	infer_set(g, n, 0, DTYPE_STR, &s);
	infer_set(g, n, 1, DTYPE_I64, &x->shape);
	return 0;
}

/* One rt_str_split call over the whole input. */
int lower_stringsplit(struct lower *L)
{
	const struct value *y = lower_out(L, 0);
	struct tir *args[7];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_addr(L->b, L->in[1], tir_int(L->b, 0));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = tir_addr(L->b, L->out[1], tir_int(L->b, 0));
	args[4] = lower_numel(L, &lower_in(L, 0)->shape);
	args[5] = tir_dim(L->b, y->shape.d[y->shape.rank - 1]);
	args[6] = tir_int(L->b, node_attr_int(L->n, "maxsplit", -1));
	tir_extern(L->b, "rt_str_split", args, 7);
	return 0;
}
