/*
 * pass_simplify.c - removes Identity and inference-mode Dropout by pointing
 * their users at their input. One whose output is a graph output goes too
 * where its input is a value another node computes and hands on nowhere
 * else as a graph value (no graph input or output, no constant), of the
 * same type and shape known before the run: that node then writes the
 * graph output itself and the input's users read it (bert_tiny's output
 * Identity had copied it).
 * Otherwise it stays (it names the output), as does a Dropout whose mask
 * is used and one that may train (random: dropout_is_training).
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

/*
 * Identity (or Dropout) n whose output y is a graph output: its input x's
 * producer writes y instead, and x's users read y, where x is no graph
 * input or output and no constant, and has y's type and shape, every
 * dim of it known before the run.
 */
static void write_output(struct graph *g, struct node *n)
{
	int x = n->in[0], y = n->out[0], p;
	const struct value *xv = &g->values.v[x], *yv = &g->values.v[y];

	p = xv->producer;
	if (p < 0 || g->nodes.v[p].dead || xv->data || xv->seq || yv->seq ||
	    (xv->flags & (VALUE_INPUT | VALUE_OUTPUT)) || xv->dtype != yv->dtype ||
	    !shape_eq(&xv->shape, &yv->shape))
		return;
	/* a size known only at run time (a Loop's scan output): the copy sizes the output */
	for (int i = 0; i < xv->shape.rank; i++)
		if (graph_dim_late(g, xv->shape.d[i]))
			return;
	for (int s = 0; s < g->nodes.v[p].n_out; s++)
		if (g->nodes.v[p].out[s] == x)
			g->nodes.v[p].out[s] = y;
	replace_uses(g, x, y);
	n->dead = true;
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
		if (n->op == OP_DROPOUT && n->n_out > 1 &&
		    ((g->values.v[n->out[1]].flags & VALUE_OUTPUT) || is_used(g, n->out[1])))
			continue;
		if (g->values.v[out].flags & VALUE_OUTPUT) {
			write_output(g, n);
			continue;
		}
		replace_uses(g, out, n->in[0]);
		n->dead = true;
	}
	graph_compact(g);
	return 0;
}
