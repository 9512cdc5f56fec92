/*
 * pass_dce.c - dead-code elimination: keeps the nodes that graph outputs
 * depend on, walking backwards in topological order.
 */
#include "passes.h"

#include <stdlib.h>

int pass_dce(struct graph *g)
{
	bool *live = xcalloc((size_t)g->values.n + 1, 1);

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
