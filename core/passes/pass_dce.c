/*
 * pass_dce.c - dead-code elimination: keeps the nodes that graph outputs
 * depend on, walking backwards in topological order. First it drops the
 * inputs that decided an output shape from a symbolic payload and that the
 * node's kernel never reads (Reshape's shape computed from Shape(x)), so
 * the shape arithmetic behind them is dead too.
 */
#include "passes.h"
#include "../ops/ops.h"

#include <stdlib.h>

int pass_dce(struct graph *g)
{
	bool *live = xcalloc((size_t)g->values.n + 1, 1);

	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		for (int j = 0; j < n->n_in && !n->dead; j++)
			if (n->in[j] >= 0 && g->values.v[n->in[j]].sym &&
			    symval_compile_time_input(n->op, j))
				n->in[j] = -1;
	}
	for (int i = 0; i < g->outputs.n; i++)
		live[g->outputs.v[i]] = true;
	for (int i = g->nodes.n - 1; i >= 0; i--) {
		struct node *n = &g->nodes.v[i];
		bool any = false;

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_out; j++)
			any |= live[n->out[j]];
		if (!any) {
			n->dead = true;
			continue;
		}
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] >= 0)
				live[n->in[j]] = true;
	}
	free(live);
	graph_compact(g);
	return 0;
}
