/*
 * probe.c - small graphs that estimators time to learn about a target:
 * MatMul chains for transition penalties, MatMul and Add for rooflines
 * (cost.h).
 */
#include "cost.h"

#include "../collage/rules.h"

struct graph *cost_probe_graph(struct collagec_ctx *ctx, enum op op, int64_t r, int64_t k,
			       int n_nodes)
{
	struct graph *g = graph_new(ctx);
	struct shape sx = { 2, { { r, 0, { 0 } }, { k, 0, { 0 } } } };
	struct shape sw = op == OP_ADD ? sx : (struct shape){ 2, { { k, 0, { 0 } },
								    { k, 0, { 0 } } } };
	float *w = arena_alloc(&ctx->arena, sizeof(float) * (size_t)(sw.d[0].c * sw.d[1].c));
	int v = graph_add_value(g, "x");

	for (int64_t i = 0; i < sw.d[0].c * sw.d[1].c; i++)
		w[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
	g->values.v[v].dtype = DTYPE_F32;
	g->values.v[v].shape = sx;
	g->values.v[v].has_shape = true;
	g->values.v[v].flags = VALUE_INPUT;
	vec_push(&g->inputs, v);
	for (int i = 0; i < n_nodes; i++) {
		int in[2] = { v, graph_add_const(g, arena_printf(&ctx->arena, "w%d", i), DTYPE_F32,
						 &sw, w) };
		int out = graph_add_value(g, arena_printf(&ctx->arena, "y%d", i)), n;

		g->values.v[out].dtype = DTYPE_F32;
		g->values.v[out].shape = sx;
		g->values.v[out].has_shape = true;
		n = graph_add_node(g, op, arena_printf(&ctx->arena, "probe%d", i), in, 2, &out, 1);
		g->nodes.v[n].op_type = op_info(op)->name;
		node_span_self(g, &g->nodes.v[n]);
		g->values.v[out].producer = n;
		v = out;
	}
	g->values.v[v].flags = VALUE_OUTPUT;
	vec_push(&g->outputs, v);
	return g;
}

const struct subgraph *cost_probe_single(struct collagec_ctx *ctx, const struct dataflow *df,
					 const struct target *t, int idx)
{
	struct pattern_set ps = { { 0 } };
	struct rule_candidates rc = { 0 };
	struct pattern_uses u;
	const struct subgraph *r = NULL;

	if (t->kind->patterns && pattern_load(ctx, &t->kind, 1, NULL, 0, &ps) < 0)
		return NULL;
	pattern_uses_init(df->g, &u);
	rule_run(rule_default(df->arena, t->kind, &ps, 1), df, t, &u, &rc);
	for (int i = 0; i < rc.n && !r; i++)
		if (indexset_count(&rc.v[i].sg->inside) == 1 && indexset_has(&rc.v[i].sg->inside, idx))
			r = rc.v[i].sg;
	vec_free(&rc);
	pattern_uses_release(&u);
	pattern_set_release(&ps);
	return r;
}
