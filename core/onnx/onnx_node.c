/*
 * onnx_node.c - one ONNX node into the graph IR: its op (in the domains
 * the model imports), its attributes and the tensors they hold, or, for a
 * Constant, a constant value; the scope its names resolve in (import_bind,
 * import_scoped) and the span it gets. A node that calls a function of
 * the model is not one of these: onnx_function.c inlines its body, node by
 * node, through import_node.
 *
 * Tensors are decoded from raw_data (taken over, not copied), the typed
 * fields or external-data files next to the model.
 */

#include "onnx_import.h"
#include "onnx_tensor.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"

/* Registers value v under the name key; a later definition of the same name wins. */
void import_bind(struct importer *im, const char *key, int v)
{
	strmap_put(&im->names, key, v);
}

/* The name a value or node of the graph being imported gets: prefixed in a sub-graph. */
const char *import_scoped(struct importer *im, const char *name)
{
	if (!im->prefix)
		return name;
	return arena_printf(&im->ctx->arena, "%s%s", im->prefix, name);
}

/*
 * Tensor t as a constant named name (where: what it is, for messages).
 * Its id, or -1 after a diagnostic.
 */
int import_tensor(struct importer *im, const Onnx__TensorProto *t, const char *name,
		  const char *where)
{
	struct host_tensor ht;
	char *err = NULL;
	struct shape s;
	int id;

	if (onnx_tensor_decode(t, im->dir, &ht, &err, im->g) < 0) {
		diag_error(im->ctx, "%s: %s '%s': %s", im->base, where, name, err);
		free(err);
		return -1;
	}
	s.rank = ht.rank;
	for (int i = 0; i < ht.rank; i++)
		s.d[i] = dim_const(ht.dims[i]);
	/*
	 * raw_data, where a model keeps its weights, was unpacked into the
	 * arena the graph lives in, and large external data is mapped for the
	 * graph: the constant takes it over instead of holding a second copy
	 * of every weight.
	 */
	if (ht.data == t->raw_data.data || ht.mapped) {
		id = graph_adopt_const(im->g, name, ht.dtype, &s, ht.data);
		ht.data = NULL;
	} else {
		id = graph_add_const(im->g, name, ht.dtype, &s, ht.data);
	}
	host_tensor_free(&ht);
	return id;
}

static int import_attr(struct importer *im, const Onnx__AttributeProto *ap, struct attr *a,
		       const struct node *n)
{
	struct arena *ar = &im->ctx->arena;

	a->name = arena_strdup(ar, ap->name);
	switch (ap->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		a->kind = ATTR_INT;
		a->i = ap->i;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		a->kind = ATTR_FLOAT;
		a->f = ap->f;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		a->kind = ATTR_STRING;
		a->s = arena_strndup(ar, (const char *)ap->s.data, ap->s.len);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		a->kind = ATTR_INTS;
		a->n = (int)ap->n_ints;
		a->ints = arena_alloc(ar, sizeof(int64_t) * (ap->n_ints + 1));
		if (ap->n_ints)
			memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		a->kind = ATTR_FLOATS;
		a->n = (int)ap->n_floats;
		a->floats = arena_alloc(ar, sizeof(double) * (ap->n_floats + 1));
		for (size_t i = 0; i < ap->n_floats; i++)
			a->floats[i] = ap->floats[i];
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
		a->kind = ATTR_STRINGS;
		a->n = (int)ap->n_strings;
		a->strs = arena_alloc(ar, sizeof(char *) * (ap->n_strings + 1));
		for (size_t i = 0; i < ap->n_strings; i++)
			a->strs[i] = arena_strndup(ar, (const char *)ap->strings[i].data,
						   ap->strings[i].len);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		a->kind = ATTR_TENSOR;
		if (!ap->t) {	/* type TENSOR with no t field */
			diag_error(im->ctx, "%s: attribute '%s' is a tensor without one",
				   node_loc(im->g, n), ap->name);
			return -1;
		}
		a->tensor = import_tensor(im, ap->t, arena_printf(ar, "%s.%s", n->name, ap->name),
					  "attribute tensor");
		if (a->tensor < 0)
			return -1;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		a->kind = ATTR_GRAPH;
		a->graph = ap->g;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
		a->kind = ATTR_GRAPH;	/* no op collagec knows takes a list of graphs */
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
		a->kind = ATTR_TYPE;	/* Optional's type */
		a->graph = ap->tp;
		break;
	default:
		diag_error(im->ctx, "%s: attribute '%s' has unsupported type %d",
			   node_loc(im->g, n), ap->name, ap->type);
		return -1;
	}
	return 0;
}

/* A Constant node becomes a constant value; no IR node remains. */
static int import_constant(struct importer *im, const Onnx__NodeProto *np, struct node *tmp)
{
	struct graph *g = im->g;
	const char *out = np->n_output ? np->output[0] : "";
	struct shape s = { 0 };
	int id = -1;

	if (np->n_attribute != 1) {
		diag_error(im->ctx, "%s: Constant needs exactly one value attribute",
			   node_loc(g, tmp));
		return -1;
	}
	const Onnx__AttributeProto *ap = np->attribute[0];
	const char *an = ap->name;

	if (!strcmp(an, "value")) {
		if (!ap->t) {
			diag_error(im->ctx, "%s: attribute 'value' holds no tensor", node_loc(g, tmp));
			return -1;
		}
		id = import_tensor(im, ap->t, out, "Constant");
		if (id < 0)
			return -1;
	} else if (!strcmp(an, "value_float")) {
		float f = ap->f;

		id = graph_add_const(g, out, DTYPE_F32, &s, &f);
	} else if (!strcmp(an, "value_int")) {
		id = graph_add_const(g, out, DTYPE_I64, &s, &ap->i);
	} else if (!strcmp(an, "value_floats")) {
		s.rank = 1;
		s.d[0] = dim_const((int64_t)ap->n_floats);
		id = graph_add_const(g, out, DTYPE_F32, &s, ap->floats);
	} else if (!strcmp(an, "value_ints")) {
		s.rank = 1;
		s.d[0] = dim_const((int64_t)ap->n_ints);
		id = graph_add_const(g, out, DTYPE_I64, &s, ap->ints);
	} else if (!strcmp(an, "value_string") || !strcmp(an, "value_strings")) {
		/* a string scalar or 1-D string tensor (bytes up to a NUL: UTF-8 text) */
		bool one = !strcmp(an, "value_string");
		size_t n = one ? 1 : ap->n_strings;
		const char **strs = arena_alloc(g->arena, sizeof(char *) * (n + 1));

		for (size_t i = 0; i < n; i++) {
			const ProtobufCBinaryData *b = one ? &ap->s : &ap->strings[i];

			strs[i] = arena_strndup(g->arena, (const char *)b->data, b->len);
		}
		if (!one) {
			s.rank = 1;
			s.d[0] = dim_const((int64_t)n);
		}
		id = graph_add_const(g, out, DTYPE_STR, &s, strs);
	} else {
		diag_error(im->ctx, "%s: Constant attribute '%s' is not supported", node_loc(g, tmp),
			   an);
		return -1;
	}
	g->values.v[id].name = arena_strdup(g->arena, import_scoped(im, out));
	import_bind(im, out, id);
	/* a constant now, no node: its fate says so (the model's own nodes only) */
	if (!im->outer)
		graph_record_fate(g, tmp->name, tmp->op_type);
	return 0;
}
/*
 * The node's domain: the default one (empty or "ai.onnx"),
 * ai.onnx.preview.training or ai.onnx.ml, each only when the model imports
 * it, and the op must belong to it. *op is OP_COUNT for an op type nobody
 * knows (and for Constant). -1 after a diagnostic, *op then OP_COUNT.
 */
static int import_domain(struct importer *im, const Onnx__NodeProto *np, struct node *tmp,
			 enum op *op)
{
	const char *d = np->domain && strcmp(np->domain, "ai.onnx") ? np->domain : "";
	bool training = !strcmp(d, "ai.onnx.preview.training"), ml = !strcmp(d, "ai.onnx.ml");

	*op = OP_COUNT;
	if (d[0] && !training && !ml) {
		diag_error(im->ctx, "%s: operator domain '%s' is not supported",
			   node_loc(im->g, tmp), d);
		return -1;
	}
	if (!(training ? im->g->training_opset : ml ? im->g->ml_opset : im->g->opset)) {
		diag_error(im->ctx, "%s: model imports no %s opset", node_loc(im->g, tmp),
			   d[0] ? d : "default-domain");
		return -1;
	}
	*op = strcmp(np->op_type, "Constant") || d[0] ? op_from_onnx(np->op_type) : OP_COUNT;
	if (*op != OP_COUNT && strcmp(op_domain(*op), d)) {
		diag_error(im->ctx, "%s: op '%s' is not in domain '%s'", node_loc(im->g, tmp),
			   np->op_type, d[0] ? d : "ai.onnx");
		*op = OP_COUNT;
		return -1;
	}
	return 0;
}


/*
 * A node's span: itself, and inside a sub-graph the control node's span
 * before it, so a kernel of a loop body names the Loop and the body's node.
 */
void import_span(struct importer *im, struct node *n, const char *raw)
{
	const struct span *o;

	if (!im->outer) {
		node_span_self(im->g, n);
		return;
	}
	o = &im->outer->span;
	n->span.n = o->n + 1;
	n->span.names = arena_alloc(im->g->arena, sizeof(char *) * (size_t)n->span.n);
	n->span.types = arena_alloc(im->g->arena, sizeof(char *) * (size_t)n->span.n);
	memcpy(n->span.names, o->names, sizeof(char *) * (size_t)o->n);
	memcpy(n->span.types, o->types, sizeof(char *) * (size_t)o->n);
	n->span.names[o->n] = raw;
	n->span.types[o->n] = n->op_type;
}

int import_node(struct importer *im, const Onnx__NodeProto *np, int index)
{
	struct graph *g = im->g;
	struct arena *ar = g->arena;
	struct node tmp = { 0 };
	enum op op;
	const char *raw;
	int *in, *out, ni, rc = 0;

	if (!np->op_type || !np->op_type[0]) {
		tmp.name = np->name && np->name[0] ? np->name : "?";
		tmp.op_type = "no op_type";
		tmp.onnx_index = index;
		diag_error(im->ctx, "%s: the node has no op_type", node_loc(g, &tmp));
		return -1;
	}
	tmp.name = np->name && np->name[0] ? arena_strdup(ar, np->name)
		: arena_printf(ar, "%s_%d", np->op_type, index);
	raw = tmp.name;
	tmp.name = import_scoped(im, tmp.name);
	tmp.op_type = arena_strdup(ar, np->op_type);
	/* a sub-graph's node index would read as the outer graph's */
	tmp.onnx_index = im->outer ? -1 : index;
	/* a node refused for its domain is still imported, so that its outputs exist */
	if (import_domain(im, np, &tmp, &op) < 0)
		rc = -1;
	else if (op == OP_COUNT && !strcmp(np->op_type, "Constant"))
		return import_constant(im, np, &tmp);
	if (op == OP_COUNT && !rc) {
		diag_error(im->ctx, "%s: unsupported op '%s'", node_loc(g, &tmp), np->op_type);
		rc = -1;
	}
	in = arena_alloc(ar, sizeof(int) * (np->n_input + 1));
	for (size_t i = 0; i < np->n_input; i++) {
		if (!np->input[i][0]) {
			in[i] = -1;
			continue;
		}
		in[i] = strmap_get(&im->names, np->input[i]);
		if (in[i] < 0) {
			/* maybe defined by a later node (unsorted graph): resolved below */
			in[i] = -2 - (int)i;
		}
	}
	out = arena_alloc(ar, sizeof(int) * (np->n_output + 1));
	for (size_t i = 0; i < np->n_output; i++) {
		out[i] = graph_add_value(g, np->output[i][0] ? import_scoped(im, np->output[i])
					 : arena_printf(ar, "%s.out%zu", tmp.name, i));
		if (np->output[i][0])
			import_bind(im, np->output[i], out[i]);
	}
	if (rc < 0)
		return rc;
	ni = graph_add_node(g, op, tmp.name, in, (int)np->n_input, out, (int)np->n_output);
	vec_push(&im->protos, np);
	{
		struct node *n = &g->nodes.v[ni];

		n->op_type = tmp.op_type;
		n->onnx_index = tmp.onnx_index;
		import_span(im, n, raw);
		n->n_attrs = (int)np->n_attribute;
		n->attrs = arena_alloc(ar, sizeof(struct attr) * (np->n_attribute + 1));
		for (size_t i = 0; i < np->n_attribute; i++)
			if (import_attr(im, np->attribute[i], &n->attrs[i], n) < 0)
				rc = -1;
		if (rc == 0 && op_check_version(g, n, strcmp(op_domain(n->op), "ai.onnx.ml")
							  ? g->opset : g->ml_opset) < 0)
			return -1;
		if (rc == 0 && import_captures(im, ni) < 0)
			rc = -1;
	}
	return rc;
}

/* Second chance for inputs named before their producer (unsorted graphs). */
int import_resolve_forward(struct importer *im)
{
	struct graph *g = im->g;
	int rc = 0;

	for (int k = im->node0; k < g->nodes.n; k++) {
		const Onnx__NodeProto *np = im->protos.v[k - im->node0];
		struct node *n = &g->nodes.v[k];

		if (!np)
			continue;	/* a node of an inlined function call: resolved there */
		for (int i = 0; i < n->n_in; i++) {
			if (n->in[i] > -2)
				continue;
			n->in[i] = strmap_get(&im->names, np->input[i]);
			if (n->in[i] < 0) {
				diag_error(im->ctx, "%s: input %d '%s' is not defined by any node, "
					   "initializer or graph input", node_loc(g, n), i,
					   np->input[i]);
				rc = -1;
			}
		}
	}
	return rc;
}
