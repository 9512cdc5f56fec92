/*
 * none.c - the "none" search: targets in list order take the matches of
 * their pattern rules, then the single nodes their supports hook accepts.
 */
#include "collage.h"

#include <math.h>
#include <string.h>

#include "../ops/ops.h"

struct placer {
	struct graph *g;
	int *owner;			/* node -> partition, -1 free */
	VEC(struct partition) parts;
};

static void add_partition(struct placer *pl, const struct target *t, const char *rule,
			  const int *nodes, int n)
{
	struct partition p = { 0 };

	p.id = pl->parts.n;
	p.target = t;
	p.rule = rule;
	p.n_nodes = n;
	p.nodes = arena_memdup(pl->g->arena, nodes, sizeof(int) * (size_t)n);
	p.est_cost = NAN;
	p.measured_cost = NAN;
	for (int i = 0; i < n; i++) {
		span_add(pl->g, &p.span, &pl->g->nodes.v[nodes[i]].span);
		pl->owner[nodes[i]] = p.id;
	}
	vec_push(&pl->parts, p);
}

static bool check_match(struct graph *g, const struct target_kind *k,
			const struct pattern_match *m)
{
	if (k->pattern_check)
		return k->pattern_check(g, m->nodes, m->n_nodes);
	if (!k->supports)
		return true;
	for (int i = 0; i < m->n_nodes; i++)
		if (!k->supports(g, &g->nodes.v[m->nodes[i]]))
			return false;
	return true;
}

static void place_patterns(struct placer *pl, const struct pattern_uses *u,
			   const struct target *t, const struct pattern_set *ps)
{
	struct graph *g = pl->g;

	for (int i = g->nodes.n - 1; i >= 0; i--) {
		if (pl->owner[i] >= 0 || g->nodes.v[i].dead)
			continue;
		for (int r = 0; r < ps->rules.n; r++) {
			const struct pattern_rule *rule = &ps->rules.v[r];
			struct pattern_match m;
			bool free = true;

			if (strcmp(rule->target, t->kind->name) ||
			    !pattern_match(g, u, rule->root, i, &m))
				continue;
			for (int j = 0; j < m.n_nodes && free; j++)
				free = pl->owner[m.nodes[j]] < 0;
			if (!free || !check_match(g, t->kind, &m))
				continue;
			add_partition(pl, t, arena_printf(g->arena, "%s.%s", rule->target,
							  rule->name), m.nodes, m.n_nodes);
			break;
		}
	}
}

static int cmp_root(const void *a, const void *b)
{
	const struct partition *x = a, *y = b;

	return x->nodes[x->n_nodes - 1] - y->nodes[y->n_nodes - 1];
}

int collage_place_none(struct graph *g, struct target **ts, int nt,
		       const struct pattern_set *patterns, struct partition **out, int *n_out)
{
	struct placer pl = { .g = g };
	struct pattern_uses u;
	int rc = 0;

	pl.owner = xmalloc(sizeof(int) * ((size_t)g->nodes.n + 1));
	for (int i = 0; i < g->nodes.n; i++)
		pl.owner[i] = -1;
	pattern_uses_init(g, &u);
	for (int k = 0; k < nt; k++) {
		const struct target_kind *kind = ts[k]->kind;

		place_patterns(&pl, &u, ts[k], patterns);
		if (!kind->supports && kind->patterns)
			continue;	/* only its patterns place nodes on it */
		for (int i = 0; i < g->nodes.n; i++) {
			struct node *n = &g->nodes.v[i];

			if (pl.owner[i] >= 0 || n->dead || (kind->supports && !kind->supports(g, n)))
				continue;
			add_partition(&pl, ts[k], op_info(n->op)->name, &i, 1);
		}
	}
	for (int i = 0; i < g->nodes.n; i++)
		if (pl.owner[i] < 0 && !g->nodes.v[i].dead) {
			diag_error(g->ctx, "%s: no target in the list supports this op",
				   node_loc(g, &g->nodes.v[i]));
			rc = -1;
		}
	qsort(pl.parts.v, (size_t)pl.parts.n, sizeof(*pl.parts.v), cmp_root);
	for (int i = 0; i < pl.parts.n; i++)
		pl.parts.v[i].id = i;
	*out = arena_alloc(g->arena, sizeof(*pl.parts.v) * (size_t)(pl.parts.n + 1));
	if (pl.parts.n)
		memcpy(*out, pl.parts.v, sizeof(*pl.parts.v) * (size_t)pl.parts.n);
	*n_out = pl.parts.n;
	vec_free(&pl.parts);
	pattern_uses_release(&u);
	free(pl.owner);
	return rc;
}
