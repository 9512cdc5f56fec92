/*
 * none.c - the "none" search: targets in list order take the matches of
 * their pattern rules, then the nodes their supports hook accepts: one
 * partition per node, or on a target that fuses (target_fuses) the groups
 * FuseOps would make: an anchor (conv, matmul, pooling, reduction) or an
 * elementwise node with the elementwise nodes after it of its output's
 * shape, each reading the group; an elementwise group may end in a
 * reduction or softmax reading it (its prologue), then that one's epilogue.
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

static bool supported(struct placer *pl, const struct target_kind *k, int i)
{
	const struct node *n = &pl->g->nodes.v[i];

	return pl->owner[i] < 0 && !n->dead && (!k->supports || k->supports(pl->g, n));
}

/* Whether node c reads a value that nodes[0..n) produce. */
static bool reads_group(struct graph *g, const struct node *c, const int *nodes, int n)
{
	for (int j = 0; j < c->n_in; j++)
		for (int q = 0; q < n; q++)
			for (int o = 0; c->in[j] >= 0 && o < g->nodes.v[nodes[q]].n_out; o++)
				if (c->in[j] == g->nodes.v[nodes[q]].out[o])
					return true;
	return false;
}

/*
 * Whether c's inputs all come from the group or from nodes before its
 * first one (graph order is topological): then nothing outside the group
 * lies on a path between its nodes, and the group stays convex.
 */
static bool inputs_ok(struct graph *g, const struct node *c, const int *nodes, int n)
{
	for (int j = 0; j < c->n_in; j++) {
		int v = c->in[j], prod = v >= 0 ? g->values.v[v].producer : -1;
		bool mine = false;

		for (int q = 0; q < n && !mine; q++)
			mine = nodes[q] == prod;
		if (prod >= nodes[0] && !mine)
			return false;
	}
	return true;
}

/* Nodes later than the last that a group may still reach for its next member. */
#define GROUP_WINDOW 64
#define GROUP_MAX 32

/*
 * Grows the FuseOps group that starts at node i into nodes[] (node i
 * first, graph order); returns its size.
 */
static int grow_group(struct placer *pl, const struct target_kind *k, int i, int *nodes)
{
	struct graph *g = pl->g;
	const struct node *first = &g->nodes.v[i];
	bool anchor = op_is_epilogue_anchor(g, first);
	int n = 1, chain = 1;	/* the anchor's epilogue: nodes[chain..n) */

	nodes[0] = i;
	if (!anchor && !op_fusable_elementwise(g, first))
		return 1;
	for (int j = i + 1; j < g->nodes.n && j <= nodes[n - 1] + GROUP_WINDOW && n < GROUP_MAX;
	     j++) {
		const struct node *c = &g->nodes.v[j];

		if (!supported(pl, k, j) || !reads_group(g, c, nodes, n) ||
		    !inputs_ok(g, c, nodes, n))
			continue;
		if (!anchor && op_is_prologue_anchor(g, c) &&
		    c->in[0] == g->nodes.v[nodes[n - 1]].out[0]) {
			/* elementwise into a reduction: its prologue, then its epilogue */
			nodes[n++] = j;
			first = c;
			anchor = op_is_epilogue_anchor(g, c);
			chain = n;
			if (!anchor)
				break;
			continue;
		}
		if (anchor ? !op_epilogue_accepts(g, first, nodes + chain, n - chain, c)
			   : !op_fusable_elementwise(g, c) ||
			     !shape_eq(&node_out(g, c, 0)->shape, &node_out(g, first, 0)->shape))
			continue;
		nodes[n++] = j;
	}
	return anchor ? chain + op_epilogue_trim(g, first, nodes + chain, n - chain) : n;
}

/* The partitions before pl->parts.v[j] that produce a value one of its nodes reads. */
static int reads_from(struct placer *pl, int j, const bool *placed)
{
	struct graph *g = pl->g;
	const struct partition *p = &pl->parts.v[j];
	int n = 0;

	for (int q = 0; q < p->n_nodes; q++) {
		const struct node *x = &g->nodes.v[p->nodes[q]];

		for (int k = 0; k < x->n_in; k++) {
			int prod = x->in[k] >= 0 ? g->values.v[x->in[k]].producer : -1;
			int o = prod >= 0 ? pl->owner[prod] : -1;

			n += o >= 0 && o != j && !placed[o];
		}
	}
	return n;
}

/*
 * Orders the partitions so that each comes after those whose values it
 * reads, the ready one with the lowest root (last node) first. A fused
 * group's nodes need not be adjacent in graph order, so sorting by root
 * alone could put a partition before one it reads.
 */
static void order_partitions(struct placer *pl)
{
	int n = pl->parts.n;
	bool *placed = xcalloc((size_t)n + 1, sizeof(bool));
	struct partition *out = xmalloc(sizeof(*out) * ((size_t)n + 1));

	for (int k = 0; k < n; k++) {
		int best = -1;

		for (int i = 0; i < n; i++) {
			const struct partition *p = &pl->parts.v[i];

			if (placed[i] || (best >= 0 && p->nodes[p->n_nodes - 1] >
				    pl->parts.v[best].nodes[pl->parts.v[best].n_nodes - 1]))
				continue;
			if (!reads_from(pl, i, placed))
				best = i;
		}
		if (best < 0)
			BUG("the partitions of the none search have a cycle");
		placed[best] = true;
		out[k] = pl->parts.v[best];
		out[k].id = k;
	}
	memcpy(pl->parts.v, out, sizeof(*out) * (size_t)n);
	free(out);
	free(placed);
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
			int group[GROUP_MAX], m = 1;

			if (!supported(&pl, kind, i))
				continue;
			group[0] = i;
			if (target_fuses(ts[k]))
				m = grow_group(&pl, kind, i, group);
			add_partition(&pl, ts[k], m > 1 ? "fused" : op_info(g->nodes.v[i].op)->name,
				      group, m);
		}
	}
	for (int i = 0; i < g->nodes.n; i++)
		if (pl.owner[i] < 0 && !g->nodes.v[i].dead) {
			diag_error(g->ctx, "%s: no target in the list supports this op",
				   node_loc(g, &g->nodes.v[i]));
			rc = -1;
		}
	order_partitions(&pl);
	*out = arena_alloc(g->arena, sizeof(*pl.parts.v) * (size_t)(pl.parts.n + 1));
	if (pl.parts.n)
		memcpy(*out, pl.parts.v, sizeof(*pl.parts.v) * (size_t)pl.parts.n);
	*n_out = pl.parts.n;
	vec_free(&pl.parts);
	pattern_uses_release(&u);
	free(pl.owner);
	return rc;
}
