/*
 * subgraph.c - the dataflow graph and sub-graphs of it (see subgraph.h).
 */
#include "subgraph.h"

#include <string.h>

/* Appends x to list[0..*n) unless it is there already. */
static void add_unique(int *list, int *n, int x)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == x)
			return;
	list[(*n)++] = x;
}

void dataflow_init(struct dataflow *df, struct graph *g, struct arena *a)
{
	int n = 0, *maker = arena_alloc(a, sizeof(int) * ((size_t)g->values.n + 1));
	int *uses = arena_alloc(a, sizeof(int) * ((size_t)g->nodes.n + 1));

	memset(df, 0, sizeof(*df));
	df->g = g;
	df->arena = a;
	df->index = arena_alloc(a, sizeof(int) * ((size_t)g->nodes.n + 1));
	df->node = arena_alloc(a, sizeof(int) * ((size_t)g->nodes.n + 1));
	for (int i = 0; i < g->nodes.n; i++) {
		df->index[i] = g->nodes.v[i].dead ? -1 : n;
		if (!g->nodes.v[i].dead)
			df->node[n++] = i;
	}
	df->n = n;
	for (int v = 0; v < g->values.n; v++) {
		const struct value *val = &g->values.v[v];

		if (val->data && shape_is_static(&val->shape))
			df->const_bytes += (size_t)shape_numel_static(&val->shape) *
					   dtype_size(val->dtype);
	}
	df->in = arena_alloc(a, sizeof(int *) * ((size_t)n + 1));
	df->out = arena_alloc(a, sizeof(int *) * ((size_t)n + 1));
	df->n_in = arena_alloc(a, sizeof(int) * ((size_t)n + 1));
	df->n_out = arena_alloc(a, sizeof(int) * ((size_t)n + 1));
	df->external = arena_alloc(a, sizeof(bool) * ((size_t)n + 1));
	df->kind = arena_alloc(a, sizeof(enum op_kind) * ((size_t)n + 1));
	df->dynamic = arena_alloc(a, sizeof(bool) * ((size_t)n + 1));
	df->down = arena_alloc(a, sizeof(struct indexset) * ((size_t)n + 1));
	for (int v = 0; v < g->values.n; v++)
		maker[v] = -1;
	for (int i = 0; i < n; i++) {
		const struct node *nd = &g->nodes.v[df->node[i]];

		/* its run-time shape function reads inputs that must exist before its kernel */
		df->dynamic[i] = node_is_dynamic(g, nd);
		df->kind[i] = df->dynamic[i] ? OPK_OPAQUE : op_info(nd->op)->kind;
		df->in[i] = arena_alloc(a, sizeof(int) * ((size_t)nd->n_in + 1));
		for (int j = 0; j < nd->n_in; j++)
			if (nd->in[j] >= 0 && maker[nd->in[j]] >= 0) {
				add_unique(df->in[i], &df->n_in[i], maker[nd->in[j]]);
			}
		for (int j = 0; j < df->n_in[i]; j++)
			uses[df->in[i][j]]++;
		for (int j = 0; j < nd->n_out; j++) {
			maker[nd->out[j]] = i;
			if (g->values.v[nd->out[j]].flags & VALUE_OUTPUT)
				df->external[i] = true;
		}
	}
	for (int i = 0; i < n; i++)
		df->out[i] = arena_alloc(a, sizeof(int) * ((size_t)uses[i] + 1));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < df->n_in[i]; j++) {
			int p = df->in[i][j];

			df->out[p][df->n_out[p]++] = i;
		}
	/* edges go up in index, so one backward sweep finds everything downstream */
	for (int i = n - 1; i >= 0; i--) {
		df->down[i] = indexset_new(a, n);
		for (int j = 0; j < df->n_out[i]; j++) {
			int o = df->out[i][j];

			indexset_add(&df->down[i], o);
			indexset_or_into(&df->down[i], &df->down[o]);
		}
	}
}

static const char *make_label(const struct dataflow *df, const struct indexset *inside)
{
	struct strbuf sb = STRBUF_INIT;
	const char *r;

	indexset_for_each(i, inside) {
		const struct node *nd = &df->g->nodes.v[df->node[i]];

		sb_printf(&sb, "%s%s", sb.len ? "+" : "", nd->op_type);
	}
	r = arena_strdup(df->arena, sb_str(&sb));
	sb_release(&sb);
	return r;
}

struct subgraph *subgraph_new_nested(const struct dataflow *df, const struct indexset *inside,
				     const struct nested_subgraph *nested, int n_nested)
{
	struct arena *a = df->arena;
	struct subgraph *sg = arena_alloc(a, sizeof(*sg));
	int *d = arena_alloc(a, sizeof(int) * ((size_t)df->n + 1));

	sg->inside = indexset_copy(a, inside);
	sg->entry = indexset_new(a, df->n);
	sg->exit = indexset_new(a, df->n);
	sg->input = indexset_new(a, df->n);
	sg->output = indexset_new(a, df->n);
	sg->first = indexset_first(inside);
	sg->last = indexset_last(inside);
	sg->kind = OPK_ELEMWISE;
	indexset_for_each(i, inside) {
		const struct node *nd = &df->g->nodes.v[df->node[i]];
		bool entry = false;

		d[i] = 1;
		for (int j = 0; j < df->n_in[i]; j++) {
			int p = df->in[i][j];

			if (indexset_has(inside, p)) {
				if (d[p] + 1 > d[i])
					d[i] = d[p] + 1;
			} else {
				entry = true;
				indexset_add(&sg->input, p);
			}
		}
		/* a graph input read directly also makes an entry */
		for (int j = 0; j < nd->n_in && !entry; j++)
			if (nd->in[j] >= 0 && (df->g->values.v[nd->in[j]].flags & VALUE_INPUT))
				entry = true;
		if (entry)
			indexset_add(&sg->entry, i);
		if (df->external[i])
			indexset_add(&sg->exit, i);
		for (int j = 0; j < df->n_out[i]; j++)
			if (!indexset_has(inside, df->out[i][j])) {
				indexset_add(&sg->exit, i);
				indexset_add(&sg->output, df->out[i][j]);
			}
		if (d[i] > sg->depth)
			sg->depth = d[i];
		if (df->kind[i] > sg->kind)
			sg->kind = df->kind[i];
	}
	sg->label = make_label(df, inside);
	sg->n_nested = n_nested;
	if (n_nested) {
		sg->nested = arena_alloc(a, sizeof(*sg->nested) * (size_t)n_nested);
		memcpy(sg->nested, nested, sizeof(*sg->nested) * (size_t)n_nested);
	}
	return sg;
}

struct subgraph *subgraph_new(const struct dataflow *df, const struct indexset *inside)
{
	return subgraph_new_nested(df, inside, NULL, 0);
}

bool subgraph_valid(const struct dataflow *df, const struct subgraph *sg,
		    const struct subgraph_config *cfg)
{
	if (cfg->max_exits > 0 && indexset_count(&sg->exit) > cfg->max_exits)
		return false;
	if (cfg->max_depth > 0 && sg->depth > cfg->max_depth)
		return false;
	for (int i = 0; i < sg->n_nested; i++) {
		if (!indexset_subset(&sg->nested[i].inside, &sg->inside))
			return false;
		for (int j = 0; j < i; j++)
			if (indexset_intersects(&sg->nested[i].inside, &sg->nested[j].inside))
				return false;
	}
	if (!cfg->allow_taps)
		indexset_for_each(e, &sg->exit)
			for (int j = 0; j < df->n_out[e]; j++)
				if (indexset_has(&sg->inside, df->out[e][j]))
					return false;
	/* a run-time shape function runs before the partition's first kernel */
	indexset_for_each(i, &sg->inside)
		for (int j = 0; df->dynamic[i] && j < df->n_in[i]; j++)
			if (indexset_has(&sg->inside, df->in[i][j]))
				return false;
	/* convex: nothing leaving the sub-graph comes back into it */
	indexset_for_each(o, &sg->output)
		if (indexset_intersects(&df->down[o], &sg->entry))
			return false;
	return true;
}

/* Does some node downstream of l (outside r) feed an entry of r? */
static bool flows_into(const struct dataflow *df, const struct subgraph *l,
		       const struct subgraph *r)
{
	indexset_for_each(o, &l->output)
		if (!indexset_has(&r->inside, o) && indexset_intersects(&df->down[o], &r->entry))
			return true;
	return false;
}

bool subgraph_touching(const struct dataflow *df, const struct subgraph *a,
		       const struct subgraph *b)
{
	return indexset_disjoint(&a->inside, &b->inside) &&
	       indexset_intersects(&a->output, &b->entry) && !flows_into(df, a, b) &&
	       !flows_into(df, b, a);
}

struct subgraph *subgraph_union(const struct dataflow *df, const struct subgraph *a,
				const struct subgraph *b)
{
	struct indexset in;
	struct nested_subgraph *nested;
	int nn = a->n_nested + b->n_nested;

	if (indexset_intersects(&a->inside, &b->inside))
		BUG("union of overlapping sub-graphs %s and %s",
		    indexset_str(df->arena, &a->inside), indexset_str(df->arena, &b->inside));
	in = indexset_or(df->arena, &a->inside, &b->inside);
	nested = arena_alloc(df->arena, sizeof(*nested) * (size_t)(nn + 1));
	if (a->n_nested)
		memcpy(nested, a->nested, sizeof(*nested) * (size_t)a->n_nested);
	if (b->n_nested)
		memcpy(nested + a->n_nested, b->nested, sizeof(*nested) * (size_t)b->n_nested);
	return subgraph_new_nested(df, &in, nested, nn);
}
