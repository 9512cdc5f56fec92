/*
 * onnx_captures.c - part of the importer: the outer names that a control
 * node's sub-graphs read (free names, nested sub-graphs included) are
 * resolved in the importer's scope as the node is imported, and become
 * extra inputs of the node (attribute "captures"), so that it sorts after
 * their producers and the expansion (onnx_control.c) finds them.
 */
#include "onnx_import.h"

#include <string.h>

/* ---- captures: the outer names a sub-graph reads ---- */

struct names {
	VEC(const char *) v;
	struct strmap seen;
};

static void names_add(struct names *ns, const char *s)
{
	if (strmap_get(&ns->seen, s) >= 0)
		return;
	strmap_put(&ns->seen, s, ns->v.n);
	vec_push(&ns->v, s);
}

static void names_release(struct names *ns)
{
	vec_free(&ns->v);
	strmap_free(&ns->seen);
}

static void free_names(const Onnx__GraphProto *gp, struct names *out);

static void attr_free_names(const Onnx__AttributeProto *ap, struct names *out)
{
	if (ap->g)
		free_names(ap->g, out);
	for (size_t i = 0; i < ap->n_graphs; i++)
		free_names(ap->graphs[i], out);
}

/* Appends to out the names gp reads but does not define, nested graphs included. */
static void free_names(const Onnx__GraphProto *gp, struct names *out)
{
	struct strmap def = { 0 };
	struct names inner = { { 0 }, { 0 } };

	for (size_t i = 0; i < gp->n_initializer; i++)
		strmap_put(&def, gp->initializer[i]->name, 0);
	for (size_t i = 0; i < gp->n_input; i++)
		strmap_put(&def, gp->input[i]->name, 0);
	for (size_t i = 0; i < gp->n_node; i++)
		for (size_t j = 0; j < gp->node[i]->n_output; j++)
			strmap_put(&def, gp->node[i]->output[j], 0);
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];

		for (size_t j = 0; j < np->n_input; j++)
			if (np->input[j][0])
				names_add(&inner, np->input[j]);
		for (size_t j = 0; j < np->n_attribute; j++)
			attr_free_names(np->attribute[j], &inner);
	}
	for (size_t i = 0; i < gp->n_output; i++)
		names_add(&inner, gp->output[i]->name);
	for (int i = 0; i < inner.v.n; i++)
		if (strmap_get(&def, inner.v.v[i]) < 0)
			names_add(out, inner.v.v[i]);
	names_release(&inner);
	strmap_free(&def);
}

int import_captures(struct importer *im, int ni)
{
	struct graph *g = im->g;
	struct node *n = &g->nodes.v[ni];
	struct names fn = { { 0 }, { 0 } };
	struct attr *a;
	int *in, rc = 0;

	if (n->op != OP_IF && n->op != OP_LOOP && n->op != OP_SCAN && n->op != OP_SEQUENCEMAP)
		return 0;
	for (int i = 0; i < n->n_attrs; i++)
		if (n->attrs[i].kind == ATTR_GRAPH && n->attrs[i].graph)
			free_names(n->attrs[i].graph, &fn);
	in = arena_alloc(g->arena, sizeof(int) * (size_t)(n->n_in + fn.v.n + 1));
	memcpy(in, n->in, sizeof(int) * (size_t)n->n_in);
	for (int i = 0; i < fn.v.n; i++) {
		in[n->n_in + i] = strmap_get(&im->names, fn.v.v[i]);
		if (in[n->n_in + i] < 0) {
			diag_error(im->ctx, "%s: a sub-graph reads '%s', which is not defined "
				   "before the node", node_loc(g, n), fn.v.v[i]);
			rc = -1;
		}
	}
	n->in = in;
	n->n_in += fn.v.n;
	a = arena_alloc(g->arena, sizeof(*a) * (size_t)(n->n_attrs + 1));
	memcpy(a, n->attrs, sizeof(*a) * (size_t)n->n_attrs);
	memset(&a[n->n_attrs], 0, sizeof(*a));
	a[n->n_attrs].name = "captures";
	a[n->n_attrs].kind = ATTR_STRINGS;
	a[n->n_attrs].n = fn.v.n;
	a[n->n_attrs].strs = arena_alloc(g->arena, sizeof(char *) * (size_t)(fn.v.n + 1));
	if (fn.v.n)
		memcpy(a[n->n_attrs].strs, fn.v.v, sizeof(char *) * (size_t)fn.v.n);
	n->attrs = a;
	n->n_attrs++;
	names_release(&fn);
	return rc;
}
