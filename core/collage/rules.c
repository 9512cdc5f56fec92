/*
 * rules.c - partition rules and combiners (see rules.h).
 */
#include "rules.h"

#include <stdlib.h>
#include <string.h>

const struct combiner rule_fuseops_combiners[3] = {
	{ "A->B", OPK_ANCHOR, OPK_BROADCAST },
	{ "B->R", OPK_BROADCAST, OPK_REDUCE },
	{ "I->I", OPK_INJECTIVE, OPK_INJECTIVE },
};

static struct partition_rule *rule_new(struct arena *a, enum rule_kind kind, const char *name)
{
	struct partition_rule *r = arena_alloc(a, sizeof(*r));

	r->kind = kind;
	r->name = name;
	return r;
}

struct partition_rule *rule_pattern(struct arena *a, const struct pattern_rule *p)
{
	struct partition_rule *r = rule_new(a, RULE_PATTERN, p->name);

	r->pattern = p;
	return r;
}

struct partition_rule *rule_supported(struct arena *a, const char *name)
{
	return rule_new(a, RULE_SUPPORTED, name);
}

static void set_subs(struct arena *a, struct partition_rule *r, struct partition_rule **subs,
		     int n)
{
	r->subs = arena_memdup(a, subs, sizeof(*subs) * (size_t)n);
	r->n_subs = n;
}

struct partition_rule *rule_union(struct arena *a, struct partition_rule **subs, int n)
{
	struct partition_rule *r = rule_new(a, RULE_UNION, "union");

	set_subs(a, r, subs, n);
	return r;
}

struct partition_rule *rule_combine(struct arena *a, struct partition_rule *sub,
				    const struct combiner *cs, int n, int max_depth)
{
	struct partition_rule *r = rule_new(a, RULE_COMBINE, "fused");

	set_subs(a, r, &sub, 1);
	r->combiners = cs;
	r->n_combiners = n;
	r->max_depth = max_depth;
	return r;
}

struct partition_rule *rule_only_valid(struct arena *a, struct partition_rule *sub,
				       struct subgraph_config cfg)
{
	struct partition_rule *r = rule_new(a, RULE_ONLY_VALID, "valid");

	set_subs(a, r, &sub, 1);
	r->cfg = cfg;
	return r;
}

struct partition_rule *rule_default(struct arena *a, const struct target_kind *kind,
				    const struct pattern_set *ps, int max_depth)
{
	struct subgraph_config cfg = { 1, false, max_depth };
	VEC(struct partition_rule *) subs = { 0 };
	struct partition_rule *r;

	for (int i = 0; ps && i < ps->rules.n; i++)
		if (!strcmp(ps->rules.v[i].target, kind->name))
			vec_push(&subs, rule_pattern(a, &ps->rules.v[i]));
	if (subs.n == 0) {
		r = rule_combine(a, rule_supported(a, "op"), rule_fuseops_combiners,
				 (int)ARRAY_SIZE(rule_fuseops_combiners), max_depth);
	} else {
		if (kind->supports)
			vec_push(&subs, rule_supported(a, "op"));
		r = rule_union(a, subs.v, subs.n);
		/*
		 * a pattern's match is as deep as its pattern says (dnnl's
		 * squeeze-and-excitation is 7 nodes deep); the limit is for
		 * what combiners put together
		 */
		cfg.max_depth = 0;
	}
	vec_free(&subs);
	return rule_only_valid(a, r, cfg);
}

/* ---- running rules ---- */

static const struct indexset *cand_key(const void *owner, int i)
{
	const struct rule_candidates *c = owner;

	return &c->v[i].sg->inside;
}

/* Appends unless a candidate with the same inside set is there already. */
static bool add_unique(struct rule_candidates *out, struct indexset_table *seen,
		       struct subgraph *sg, const char *rule)
{
	struct rule_candidate c = { sg, rule };

	if (indexset_table_find(seen, &sg->inside, cand_key, out) >= 0)
		return false;
	vec_push(out, c);
	indexset_table_add(seen, &sg->inside, out->n - 1, cand_key, out);
	return true;
}

static bool match_ok(struct graph *g, const struct target_kind *k, const int *nodes, int n)
{
	if (k->pattern_check)
		return k->pattern_check(g, nodes, n);
	if (!k->supports)
		return true;
	for (int i = 0; i < n; i++)
		if (!k->supports(g, &g->nodes.v[nodes[i]]))
			return false;
	return true;
}

static void run_pattern(const struct partition_rule *r, const struct dataflow *df,
			const struct target *t, const struct pattern_uses *u,
			struct rule_candidates *out, struct indexset_table *seen)
{
	struct graph *g = df->g;
	const char *name = arena_printf(df->arena, "%s.%s", t->kind->name, r->pattern->name);

	for (int i = 0; i < df->n; i++) {
		struct pattern_match m;
		struct nested_subgraph nested;
		struct indexset in;

		if (!pattern_match(g, u, r->pattern->root, df->node[i], &m) ||
		    !match_ok(g, t->kind, m.nodes, m.n_nodes))
			continue;
		in = indexset_new(df->arena, df->n);
		for (int j = 0; j < m.n_nodes; j++)
			indexset_add(&in, df->index[m.nodes[j]]);
		nested.inside = in;
		nested.label = name;
		add_unique(out, seen, subgraph_new_nested(df, &in, &nested, 1), name);
	}
}

static void run_supported(const struct dataflow *df, const struct target *t,
			  struct rule_candidates *out, struct indexset_table *seen)
{
	const char *name = arena_printf(df->arena, "%s.op", t->kind->name);

	for (int i = 0; i < df->n; i++) {
		struct indexset in;

		if (t->kind->supports && !t->kind->supports(df->g, &df->g->nodes.v[df->node[i]]))
			continue;
		in = indexset_new(df->arena, df->n);
		indexset_add(&in, i);
		add_unique(out, seen, subgraph_new(df, &in), name);
	}
}

static bool combines(const struct partition_rule *r, const struct subgraph *up,
		     const struct subgraph *down)
{
	for (int k = 0; k < r->n_combiners; k++)
		if (up->kind <= r->combiners[k].up && down->kind <= r->combiners[k].down)
			return true;
	return false;
}

/*
 * Unions of touching candidates to a fixed point. Every round tries each
 * pair with at least one member new in the last round, so no pair is
 * missed (the prototype skipped old upstream x new downstream pairs).
 */
static void run_combine(const struct partition_rule *r, const struct dataflow *df,
			const struct target *t, struct rule_candidates *out,
			struct indexset_table *seen, int base)
{
	const char *name = arena_printf(df->arena, "%s.fused", t->kind->name);
	int old_end = base, end = out->n;
	VEC(int) *by_entry = xmalloc(sizeof(*by_entry) * ((size_t)df->n + 1));

	memset(by_entry, 0, sizeof(*by_entry) * ((size_t)df->n + 1));
	while (end > old_end) {
		for (int j = base; j < end; j++)
			if (j >= old_end)
				indexset_for_each(e, &out->v[j].sg->entry)
					vec_push(&by_entry[e], j);
		for (int i = base; i < end; i++) {
			const struct subgraph *up = out->v[i].sg;

			indexset_for_each(o, &up->output)
				for (int k = 0; k < by_entry[o].n; k++) {
					int j = by_entry[o].v[k];
					const struct subgraph *down = out->v[j].sg;

					if (i < old_end && j < old_end)
						continue;	/* tried in an earlier round */
					/* the union is at most this deep; checked exactly below */
					if (!combines(r, up, down) || !subgraph_touching(df, up, down))
						continue;
					if (r->max_depth > 0 && up->depth + down->depth > r->max_depth &&
					    subgraph_union(df, up, down)->depth > r->max_depth)
						continue;
					add_unique(out, seen, subgraph_union(df, up, down), name);
				}
		}
		old_end = end;
		end = out->n;
	}
	for (int i = 0; i < df->n; i++)
		vec_free(&by_entry[i]);
	free(by_entry);
}

static void run(const struct partition_rule *r, const struct dataflow *df, const struct target *t,
		const struct pattern_uses *u, struct rule_candidates *out,
		struct indexset_table *seen)
{
	int base = out->n;

	switch (r->kind) {
	case RULE_PATTERN:
		run_pattern(r, df, t, u, out, seen);
		break;
	case RULE_SUPPORTED:
		run_supported(df, t, out, seen);
		break;
	case RULE_UNION:
		for (int i = 0; i < r->n_subs; i++)
			run(r->subs[i], df, t, u, out, seen);
		break;
	case RULE_COMBINE:
		run(r->subs[0], df, t, u, out, seen);
		run_combine(r, df, t, out, seen, base);
		break;
	case RULE_ONLY_VALID: {
		int w = base;

		run(r->subs[0], df, t, u, out, seen);
		for (int i = base; i < out->n; i++)
			if (subgraph_valid(df, out->v[i].sg, &r->cfg))
				out->v[w++] = out->v[i];
		out->n = w;
		/* the table indexes positions: rebuild it */
		indexset_table_free(seen);
		for (int i = 0; i < out->n; i++)
			indexset_table_add(seen, &out->v[i].sg->inside, i, cand_key, out);
		break;
	}
	default:
		BUG("partition rule kind %d", (int)r->kind);
	}
}

void rule_run(const struct partition_rule *r, const struct dataflow *df, const struct target *t,
	      const struct pattern_uses *u, struct rule_candidates *out)
{
	struct rule_candidates mine = { 0 };
	struct indexset_table seen = { 0 };

	run(r, df, t, u, &mine, &seen);
	for (int i = 0; i < mine.n; i++)
		vec_push(out, mine.v[i]);
	vec_free(&mine);
	indexset_table_free(&seen);
}

static void print_rule(struct strbuf *sb, const struct partition_rule *r)
{
	switch (r->kind) {
	case RULE_PATTERN:
		sb_printf(sb, "Pattern(%s)", r->name);
		return;
	case RULE_SUPPORTED:
		sb_puts(sb, "Supported");
		return;
	case RULE_UNION:
		sb_puts(sb, "Union");
		break;
	case RULE_COMBINE:
		sb_puts(sb, "Combine[");
		for (int i = 0; i < r->n_combiners; i++)
			sb_printf(sb, "%s%s", i ? "," : "", r->combiners[i].name);
		sb_printf(sb, "]{depth=%d}", r->max_depth);
		break;
	case RULE_ONLY_VALID:
		sb_printf(sb, "OnlyValid{exits=%d,taps=%s", r->cfg.max_exits,
			  r->cfg.allow_taps ? "yes" : "no");
		if (r->cfg.max_depth > 0)
			sb_printf(sb, ",depth=%d", r->cfg.max_depth);
		sb_putc(sb, '}');
		break;
	default:
		BUG("partition rule kind %d", (int)r->kind);
	}
	sb_putc(sb, '(');
	for (int i = 0; i < r->n_subs; i++) {
		if (i)
			sb_puts(sb, ", ");
		print_rule(sb, r->subs[i]);
	}
	sb_putc(sb, ')');
}

const char *rule_str(struct arena *a, const struct partition_rule *r)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s;

	print_rule(&sb, r);
	s = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return s;
}

const char *rule_label(struct arena *a, const char *const *names, int n, int more)
{
	struct strbuf sb = STRBUF_INIT;
	const char *r;

	for (int i = 0; i < n && i < RULE_LABEL_NAMES; i++)
		sb_printf(&sb, "%s%s", i ? "+" : "", names[i]);
	if (n > RULE_LABEL_NAMES)
		more += n - RULE_LABEL_NAMES;
	if (more > 0)
		sb_printf(&sb, "+%d more", more);
	r = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return r;
}

/* The N of a label's last part "N more", or -1 when it is a name. */
static int label_more(const char *part, size_t len)
{
	size_t d = 0;

	while (d < len && part[d] >= '0' && part[d] <= '9')
		d++;
	if (!d || d > 9 || len != d + 5 || strncmp(part + d, " more", 5))
		return -1;
	return atoi(part);
}

const char *rule_label_bound(struct arena *a, const char *label)
{
	int cap = 1, n = 0, more = 0;
	const char **names;

	for (const char *p = label; *p; p++)
		cap += *p == '+';
	names = arena_alloc(a, sizeof(*names) * (size_t)cap);
	for (const char *p = label;;) {
		const char *end = strchr(p, '+');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *name = arena_strndup(a, p, len);
		int k = 0;

		if (!end && n && (more = label_more(p, len)) >= 0)
			break;
		more = 0;
		while (k < n && strcmp(names[k], name))
			k++;
		if (k == n)
			names[n++] = name;
		if (!end)
			break;
		p = end + 1;
	}
	return rule_label(a, names, n, more);
}
