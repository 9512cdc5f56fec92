/*
 * pass_infer.c - dtype and shape inference, node by node in topological
 * order through each op's infer function, folding each node whose inputs are
 * constants right away, so computed shapes are known downstream, and giving
 * integer tensors computed from symbolic shapes their symbolic payloads
 * (ops_symval.c), so shapes computed from a symbolic batch stay symbolic
 * dims instead of unknowns. A node whose inputs are unknown because an earlier node failed is skipped, so one
 * mistake gives one error.
 */
#include "passes.h"
#include "../ops/ops.h"

static bool inputs_known(struct graph *g, const struct node *n)
{
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (v && (!v->has_shape || v->dtype == DTYPE_UNDEF))
			return false;
	}
	return true;
}

static int check_size(struct graph *g, struct node *n)
{
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);
		struct dim d;

		if (!v->has_shape)
			continue;
		/* data-dependent dims: the compiled model checks the size when it knows it */
		if (graph_shape_late(g, &v->shape) && !shape_numel(&v->shape, &d))
			continue;
		if (!shape_numel(&v->shape, &d) || d.c > DIM_LIMIT) {
			diag_error(g->ctx, "%s: output %d '%s' has more than %lld elements",
				   node_loc(g, n), i, v->name, (long long)DIM_LIMIT);
			return -1;
		}
	}
	return 0;
}

int pass_infer(struct graph *g)
{
	int rc = 0;

	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		if (n->dead || !inputs_known(g, n))
			continue;
		if (op_info(n->op)->infer(g, n) < 0 || check_size(g, n) < 0)
			rc = -1;
		else if (symval_try(g, n) < 0 || fold_try(g, n) < 0)
			rc = -1;
	}
	graph_compact(g);
	return rc;
}
