/*
 * tune.c - the sizes symbolic dims are measured at (cost.h). The model
 * stays symbolic; only the search's measurements and estimates bind the
 * symbols, to the sizes --tune-shape names or to defaults, so that a
 * candidate is timed at the size it will run at rather than at 1.
 *
 * The default, from the names real exports use (batch, batch_size, N;
 * sequence_length, seq_len, past_sequence_length; torch.export's s0, s1):
 * 1 for a batch, 128 for any other symbol (TUNE_OTHER). A symbol is a batch
 * when its name says so (it contains "batch", ignoring case, or is N, B or
 * bs), or, unless its name says it is a length (contains "seq" or "len"),
 * when it is the first dim of a graph input. A default is then halved
 * while an assumption the model makes of its symbols (graph.checks: a Slice
 * of a 64-row position table assumes seq <= 64) fails.
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#define TUNE_BATCH 1		/* the default size of a batch */
#define TUNE_OTHER 128		/* ... of any other symbol (a sequence length) */
#define TUNE_WIDE 32		/* the batch of the second measurement, at most */
#define TUNE_WIDE_FLOPS 64e6	/* the model's FLOPs there, at most (~0.5 ms of a core) */
#define TUNE_FEW_ROWS 16	/* a MatMul of fewer rows is matrix-vector-like */
#define TUNE_FEW_SHARE 0.25	/* ... and such MatMuls matter at this share of FLOPs */

/* Whether symbol s is bound by a graph input, and not derived or data. */
static bool tune_free(struct graph *g, int s)
{
	if (graph_sym_late(g, s))
		return false;
	for (int i = 0; i < g->sym_defs.n; i++)
		if (g->sym_defs.v[i].sym == s)
			return false;
	for (int i = 0; i < g->inputs.n; i++) {
		const struct shape *sh = &g->values.v[g->inputs.v[i]].shape;

		for (int k = 0; k < sh->rank; k++)
			for (int j = 0; j < sh->d[k].n; j++)
				if (sh->d[k].sym[j] == s)
					return true;
	}
	return false;
}

static int64_t tune_default(struct graph *g, int s)
{
	const char *name = g->syms.v[s];

	if (strcasestr(name, "batch") || !strcasecmp(name, "N") || !strcasecmp(name, "B") ||
	    !strcasecmp(name, "bs"))
		return TUNE_BATCH;
	if (strcasestr(name, "seq") || strcasestr(name, "len"))
		return TUNE_OTHER;
	for (int i = 0; i < g->inputs.n; i++) {
		const struct shape *sh = &g->values.v[g->inputs.v[i]].shape;

		if (sh->rank && sh->d[0].n == 1 && sh->d[0].c == 1 && sh->d[0].sym[0] == s)
			return TUNE_BATCH;
	}
	return TUNE_OTHER;
}

/* d as a symbolic integer (c may be negative) at g's sizes; saturates. */
static int64_t symint_at(const struct graph *g, struct dim d)
{
	int64_t v = d.c;

	for (int j = 0; j < d.n; j++) {
		int64_t s = !g->tune ? 1 : g->at_wide ? g->tune[d.sym[j]].wide
			    : g->tune[d.sym[j]].size, r;

		if (__builtin_mul_overflow(v, s, &r))
			return v < 0 ? -(DIM_LIMIT + 1) : DIM_LIMIT + 1;
		v = r;
	}
	return v > DIM_LIMIT ? DIM_LIMIT + 1 : v < -DIM_LIMIT ? -(DIM_LIMIT + 1) : v;
}

int64_t cost_dim_at(const struct graph *g, struct dim d)
{
	return symint_at(g, d);
}

double cost_tune_combine(const struct graph *g, double t, double tw)
{
	if (g->tune_wide < 2)
		return t;
	if (isnan(t) || isnan(tw))
		return NAN;
	return t + tw / (double)g->tune_wide;
}

/*
 * The derived symbols' sizes from the others', in graph.sym_defs order
 * (their wide sizes with g->at_wide).
 */
static void tune_derive(struct graph *g)
{
	for (int i = 0; i < g->sym_defs.n; i++) {
		const struct sym_def *d = &g->sym_defs.v[i];
		int64_t a = symint_at(g, d->a), b = symint_at(g, d->b), v;

		switch (d->op) {
		case SYM_ADD: v = a + b; break;	/* both within +-2^31: no overflow */
		case SYM_DIV: v = b > 0 ? a / b : 0; break;
		case SYM_MOD: v = b > 0 ? a % b : 0; break;
		case SYM_MIN: v = a < b ? a : b; break;
		default: v = a > b ? a : b; break;
		}
		/* as the compiled model takes it: never below 0 */
		*(g->at_wide ? &g->tune[d->sym].wide : &g->tune[d->sym].size) = v < 0 ? 0 : v;
	}
}

/* Whether d depends on symbol s, through derived symbols too. */
static bool dim_uses(struct graph *g, struct dim d, int s)
{
	for (int j = 0; j < d.n; j++) {
		if (d.sym[j] == s)
			return true;
		for (int i = 0; i < g->sym_defs.n; i++)
			if (g->sym_defs.v[i].sym == d.sym[j] &&
			    (dim_uses(g, g->sym_defs.v[i].a, s) || dim_uses(g, g->sym_defs.v[i].b, s)))
				return true;
	}
	return false;
}

/* The first check the sizes break (data symbols aside), or NULL. */
static const struct sym_check *tune_broken(struct graph *g)
{
	for (int i = 0; i < g->checks.n; i++) {
		const struct sym_check *c = &g->checks.v[i];

		int64_t a, b;

		if (graph_dim_late(g, c->a) || graph_dim_late(g, c->b))
			continue;
		a = symint_at(g, c->a);
		b = symint_at(g, c->b);
		if (a > b || (c->eq && a != b))
			return c;
	}
	return NULL;
}

/*
 * An equality the sizes break, solved for its one defaulted symbol: with
 * the symbols both sides share cancelled, c1 * s == c2 sets s to c2 / c1
 * (a Reshape of [seq, batch, 128] to [16, 4*batch, 32] measures seq at 16).
 * Whether it set one.
 */
static bool tune_solve(struct graph *g, const struct sym_check *c)
{
	int cnt[256] = { 0 }, s = -1;
	int64_t lhs, rhs;

	for (int j = 0; j < c->a.n; j++)
		cnt[c->a.sym[j]]++;
	for (int j = 0; j < c->b.n; j++)
		cnt[c->b.sym[j]]--;
	for (int k = 0; k < 256; k++) {
		if (!cnt[k])
			continue;
		if (s >= 0 || (cnt[k] != 1 && cnt[k] != -1) || k >= g->syms.n ||
		    g->tune[k].from != TUNE_FROM_DEFAULT)
			return false;
		s = k;
	}
	if (s < 0)
		return false;
	/* the side holding s has constant lhs, the other rhs (shared symbols cancel) */
	lhs = cnt[s] > 0 ? c->a.c : c->b.c;
	rhs = cnt[s] > 0 ? c->b.c : c->a.c;
	if (lhs <= 0 || rhs <= 0 || rhs % lhs || rhs / lhs > DIM_LIMIT)
		return false;
	g->tune[s].size = rhs / lhs;
	return true;
}

/* Parses "NAME=VALUE" into g->tune; 0, or -1 after a usage diagnostic. */
static int tune_named(struct graph *g, const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *end;
	long long v;
	int s = -1;

	if (!eq || eq == arg) {
		diag_error_status(g->ctx, STATUS_USAGE, "--tune-shape '%s': expected NAME=VALUE",
				  arg);
		return -1;
	}
	v = strtoll(eq + 1, &end, 10);
	if (!eq[1] || *end || v < 1 || v > DIM_LIMIT) {
		diag_error_status(g->ctx, STATUS_USAGE, "--tune-shape '%s': the size must be a "
				  "whole number from 1 to %lld", arg, (long long)DIM_LIMIT);
		return -1;
	}
	for (int k = 0; k < g->syms.n && s < 0; k++)
		if (strlen(g->syms.v[k]) == (size_t)(eq - arg) &&
		    !strncmp(g->syms.v[k], arg, (size_t)(eq - arg)) && tune_free(g, k))
			s = k;
	if (s < 0) {
		struct strbuf sb = STRBUF_INIT;

		for (int k = 0; k < g->syms.n; k++)
			if (tune_free(g, k))
				sb_printf(&sb, "%s%s", sb.len ? ", " : "", g->syms.v[k]);
		diag_error_status(g->ctx, STATUS_USAGE, "--tune-shape '%s': the model has no "
				  "symbolic dim named '%.*s' (%s%s)", arg, (int)(eq - arg), arg,
				  sb.len ? "it has " : "it has none", sb_str(&sb));
		sb_release(&sb);
		return -1;
	}
	/* the last one named wins, as with other repeated options */
	g->tune[s] = (struct sym_tune){ .size = v, .wide = v, .from = TUNE_FROM_OPTION };
	return 0;
}

/* Whether s is a defaulted batch at its default size (tune_default). */
static bool tune_batch(struct graph *g, int s)
{
	return g->tune[s].from == TUNE_FROM_DEFAULT && g->tune[s].size == TUNE_BATCH &&
	       tune_default(g, s) == TUNE_BATCH;
}

/* The FLOPs of g's nodes at its tuning sizes (cost_node_flops). */
static double tune_flops(struct graph *g)
{
	double sum = 0;

	for (int i = 0; i < g->nodes.n; i++)
		sum += cost_node_flops(g, &g->nodes.v[i]);
	return sum;
}

/*
 * Whether MatMuls and Gemms of fewer than TUNE_FEW_ROWS rows at the tuning
 * sizes (A's dims but its last; a Gemm's dim 0, or 1 transposed), the
 * count depending on a defaulted batch, hold TUNE_FEW_SHARE of g's FLOPs
 * (an MLP's, not BERT's pooler).
 */
static bool tune_few_rows(struct graph *g)
{
	double few = 0;

	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];
		const struct shape *a;
		int lo, hi;
		int64_t rows = 1;
		bool batch = false;

		if ((n->op != OP_MATMUL && n->op != OP_GEMM) || n->n_in < 2 || n->in[0] < 0)
			continue;
		a = &g->values.v[n->in[0]].shape;
		if (a->rank < 2)
			continue;
		lo = n->op == OP_GEMM ? (int)node_attr_int(n, "transA", 0) : 0;
		hi = n->op == OP_GEMM ? lo + 1 : a->rank - 1;
		for (int k = lo; k < hi; k++) {
			rows *= symint_at(g, a->d[k]);
			for (int s = 0; s < g->syms.n; s++)
				batch |= tune_batch(g, s) && dim_uses(g, a->d[k], s);
		}
		if (batch && rows < TUNE_FEW_ROWS)
			few += cost_node_flops(g, n);
	}
	return few > 0 && few >= TUNE_FEW_SHARE * tune_flops(g);
}

/*
 * graph.tune_wide and each symbol's wide size: the defaulted batches at
 * TUNE_WIDE, halved while the model's FLOPs pass TUNE_WIDE_FLOPS or an
 * assumption fails; none (0) when there is no matrix-vector-like MatMul
 * or the batch halves to 1.
 */
static void tune_wide(struct graph *g)
{
	int64_t w = TUNE_WIDE;
	/* an assumption the sizes already break (no halving mended it) */
	bool broken = tune_broken(g) != NULL;

	g->tune_wide = 0;
	for (int s = 0; s < g->syms.n; s++)
		g->tune[s].wide = g->tune[s].size;
	if (!tune_few_rows(g))
		return;
	g->at_wide = true;
	for (; w > 1; w /= 2) {
		for (int s = 0; s < g->syms.n; s++)
			if (tune_batch(g, s))
				g->tune[s].wide = w;
		tune_derive(g);
		if ((broken || !tune_broken(g)) && tune_flops(g) <= TUNE_WIDE_FLOPS)
			break;
	}
	g->at_wide = false;
	g->tune_wide = w > 1 ? w : 0;
	if (!g->tune_wide)
		for (int s = 0; s < g->syms.n; s++)
			g->tune[s].wide = g->tune[s].size;
}

int cost_tune_shapes(struct graph *g, const char *const *named, int n)
{
	const struct sym_check *c;

	g->tune = arena_alloc(g->arena, sizeof(*g->tune) * ((size_t)g->syms.n + 1));
	for (int s = 0; s < g->syms.n; s++)
		g->tune[s] = tune_free(g, s) ? (struct sym_tune){ .size = tune_default(g, s),
								   .from = TUNE_FROM_DEFAULT }
			: (struct sym_tune){ .size = 1, .from = TUNE_FROM_OTHERS };
	for (int i = 0; i < n; i++)
		if (tune_named(g, named[i]) < 0)
			return -1;
	tune_derive(g);
	/*
	 * a broken equality sets its defaulted symbol; then halve the defaults
	 * a broken assumption depends on (at most 31 times each); solving one
	 * equality may break another, hence the bound on rounds
	 */
	for (int round = 0; round < 256 && (c = tune_broken(g)); round++) {
		bool halved = false;

		if (c->eq && tune_solve(g, c)) {
			tune_derive(g);
			if (tune_broken(g) != c)
				continue;
		}
		for (int s = 0; s < g->syms.n; s++)
			if (g->tune[s].from == TUNE_FROM_DEFAULT && g->tune[s].size > 1 &&
			    dim_uses(g, c->a, s)) {
				g->tune[s].size /= 2;
				halved = true;
			}
		if (!halved)
			break;
		tune_derive(g);
	}
	if ((c = tune_broken(g))) {
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
		bool named_one = false;

		for (int s = 0; s < g->syms.n; s++)
			named_one |= g->tune[s].from == TUNE_FROM_OPTION &&
				     (dim_uses(g, c->a, s) || dim_uses(g, c->b, s));
		/* a default that no halving mends: measured as it is, as before */
		if (!named_one) {
			tune_wide(g);
			return 0;
		}
		dim_print(g, c->a, &a);
		dim_print(g, c->b, &b);
		diag_error_status(g->ctx, STATUS_USAGE, "--tune-shape: node '%s' needs %s %s %s, "
				  "these sizes give %lld %s %lld", c->node, sb_str(&a),
				  c->eq ? "==" : "<=", sb_str(&b), (long long)symint_at(g, c->a),
				  c->eq ? "!=" : ">", (long long)symint_at(g, c->b));
		sb_release(&a);
		sb_release(&b);
		return -1;
	}
	tune_wide(g);
	return 0;
}
