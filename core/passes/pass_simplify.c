/*
 * pass_simplify.c - removes Identity and inference-mode Dropout by pointing
 * their users at their input. A node whose output is a graph output stays
 * (it names the output), as does a Dropout whose mask is used and one that
 * may train (random: dropout_is_training).
 */
#include "passes.h"
#include "../ops/ops.h"

static void replace_uses(struct graph *g, int from, int to)
{
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] == from)
				n->in[j] = to;
	}
}

static bool is_used(struct graph *g, int v)
{
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] == v)
				return true;
	}
	return false;
}

int pass_simplify(struct graph *g)
{
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];
		int out;

		if (n->dead || (n->op != OP_IDENTITY && n->op != OP_DROPOUT) ||
		    (n->op == OP_DROPOUT && dropout_is_training(g, n)))
			continue;
		out = n->out[0];
		if (g->values.v[out].flags & VALUE_OUTPUT)
			continue;
		if (n->op == OP_DROPOUT && n->n_out > 1 &&
		    ((g->values.v[n->out[1]].flags & VALUE_OUTPUT) || is_used(g, n->out[1])))
			continue;
		replace_uses(g, out, n->in[0]);
		n->dead = true;
	}
	graph_compact(g);
	return 0;
}
