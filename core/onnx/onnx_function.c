/*
 * onnx_function.c - model-local functions (ModelProto.functions, IR 8 and
 * later), inlined where they are called, as ONNX Runtime does:
 *
 *   a node whose (domain, op_type, overload) names a function of the model
 *   imports that function's nodes in a scope of their own: the formal
 *   inputs bound to the call's inputs (a missing optional one reads as
 *   absent), attributes that refer to the call's (ref_attr_name) take its
 *   value or the function's default (attribute_proto, IR 9), and nodes and
 *   intermediate values are named CALL/inner. Every inlined node's span
 *   starts with the call's, so a kernel names the ONNX node the user wrote.
 *   The function's output values take the names of the call's outputs
 *   (Identity nodes where an output is an input or repeats another).
 *   Functions may call functions, up to FUNCTION_DEPTH_MAX deep and while
 *   the graph has at most FUNCTION_NODES_MAX nodes (a call that fans out
 *   would otherwise grow it exponentially); one that calls itself, directly
 *   or not, is refused. A function must import the
 *   default domain at the model's version.
 *
 * Inlining is a stage of its own beside the node importer: the importer's
 * walk over a graph hands every node here (onnx_function_import_node), and
 * what is not a call, the body's nodes included, goes on to onnx_contrib.c
 * (ONNX Runtime's contrib ops, decomposed) or onnx_node.c, which know
 * nothing of functions; nothing calls back into this file. A function of
 * the model named like a contrib op wins over the decomposition.
 *
 * The schema collagec is built with (Debian's onnx.proto, ONNX 1.12) lacks
 * FunctionProto.attribute_proto and the overload fields of IR 10; they are
 * read from the messages' unknown fields.
 */
#include "onnx_import.h"

#include <string.h>

#include "../ops/ops.h"

#define FUNCTION_DEPTH_MAX 32
/* most nodes a graph may have before one more call is inlined */
#define FUNCTION_NODES_MAX 250000

/* protobuf field numbers the 1.12 schema does not know */
enum {
	FIELD_NODE_OVERLOAD = 8,		/* NodeProto.overload */
	FIELD_FUNCTION_ATTRIBUTE_PROTO = 11,	/* FunctionProto.attribute_proto */
	FIELD_FUNCTION_OVERLOAD = 13,		/* FunctionProto.overload */
};

/* The k-th length-delimited unknown field tag of m, or NULL. */
static const ProtobufCMessageUnknownField *unknown_field(const ProtobufCMessage *m,
							 unsigned tag, int k)
{
	for (unsigned i = 0; i < m->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &m->unknown_fields[i];

		if (u->tag == tag && u->wire_type == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED &&
		    k-- == 0)
			return u;
	}
	return NULL;
}

/*
 * The payload of unknown field u (protobuf-c keeps its length prefix in
 * data) in *p and *n: an empty one when u is NULL. -1 when the prefix does
 * not match the field's length.
 */
static int unknown_payload(const ProtobufCMessageUnknownField *u, const uint8_t **p, size_t *n)
{
	uint64_t len = 0;
	size_t i = 0;

	*p = NULL;
	*n = 0;
	if (!u)
		return 0;
	for (int shift = 0; i < u->len && shift < 64; shift += 7) {
		len |= (uint64_t)(u->data[i] & 0x7f) << shift;
		if (!(u->data[i++] & 0x80))
			break;
	}
	if (i == 0 || (u->data[i - 1] & 0x80) || len != u->len - i)
		return -1;
	*p = u->data + i;
	*n = (size_t)len;
	return 0;
}

/* Whether the overload strings (unknown fields; "" when absent) are equal. */
static bool same_overload(const Onnx__FunctionProto *fp, const Onnx__NodeProto *np)
{
	const uint8_t *a, *b;
	size_t la, lb;

	if (unknown_payload(unknown_field(&fp->base, FIELD_FUNCTION_OVERLOAD, 0), &a, &la) < 0 ||
	    unknown_payload(unknown_field(&np->base, FIELD_NODE_OVERLOAD, 0), &b, &lb) < 0)
		return false;
	return la == lb && (!la || !memcmp(a, b, la));
}

static const char *domain_of(const char *d)
{
	return d && strcmp(d, "ai.onnx") ? d : "";
}

/* The function of the model that node np calls, or NULL. */
static const Onnx__FunctionProto *onnx_function_find(const struct graph *g,
						     const Onnx__NodeProto *np)
{
	const char *d = domain_of(np->domain);

	for (int i = 0; i < g->n_functions; i++) {
		const Onnx__FunctionProto *fp = g->functions[i];

		if (!strcmp(fp->name, np->op_type) && !strcmp(domain_of(fp->domain), d) &&
		    same_overload(fp, np))
			return fp;
	}
	return NULL;
}

static void *pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

struct call {
	const struct call *up;		/* the call around it, or NULL */
	const Onnx__FunctionProto *fp;	/* the function called */
	int depth;			/* 1 + up's */
	const Onnx__NodeProto *np;	/* the call */
	const struct node *node;	/* its name and span */
	VEC(Onnx__AttributeProto *) defaults;	/* fp's attribute_proto */
	struct strmap absent;		/* formal inputs the call leaves out */
};

/* fp's attribute defaults (attribute_proto), unpacked into the arena. */
static int function_defaults(struct importer *im, const Onnx__FunctionProto *fp,
			     struct call *c)
{
	ProtobufCAllocator alloc = { pb_alloc, pb_free, &im->ctx->arena };
	const ProtobufCMessageUnknownField *u;

	for (int k = 0; (u = unknown_field(&fp->base, FIELD_FUNCTION_ATTRIBUTE_PROTO, k)); k++) {
		Onnx__AttributeProto *ap = NULL;
		const uint8_t *p;
		size_t n;

		if (unknown_payload(u, &p, &n) == 0)
			ap = onnx__attribute_proto__unpack(&alloc, n, p);
		if (!ap || !ap->name) {
			diag_error(im->ctx, "%s: function '%s' has a malformed attribute default",
				   node_loc(im->g, c->node), fp->name);
			return -1;
		}
		vec_push(&c->defaults, ap);
	}
	return 0;
}

static const Onnx__AttributeProto *attr_named(Onnx__AttributeProto *const *v, size_t n,
					      const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i]->name && !strcmp(v[i]->name, name))
			return v[i];
	return NULL;
}


/*
 * Inner node np as this call sees it: attributes referring to the call's
 * (ref_attr_name) replaced by the call's value or the default (left out
 * when neither has one), inputs naming an absent formal input emptied.
 * np itself when nothing changes; NULL after a diagnostic.
 */
static const Onnx__NodeProto *bind_node(struct importer *im, struct call *c,
					const Onnx__NodeProto *np)
{
	struct arena *ar = &im->ctx->arena;
	bool change = false;
	Onnx__NodeProto *b;
	size_t k = 0;

	for (size_t i = 0; i < np->n_attribute; i++)
		change |= np->attribute[i]->ref_attr_name && np->attribute[i]->ref_attr_name[0];
	for (size_t i = 0; i < np->n_input; i++)
		change |= np->input[i][0] && strmap_get(&c->absent, np->input[i]) >= 0;
	if (!change)
		return np;
	b = arena_memdup(ar, np, sizeof(*np));
	b->input = arena_alloc(ar, sizeof(char *) * (np->n_input + 1));
	for (size_t i = 0; i < np->n_input; i++)
		b->input[i] = np->input[i][0] && strmap_get(&c->absent, np->input[i]) >= 0
			? (char *)"" : np->input[i];
	b->attribute = arena_alloc(ar, sizeof(*b->attribute) * (np->n_attribute + 1));
	for (size_t i = 0; i < np->n_attribute; i++) {
		Onnx__AttributeProto *a = np->attribute[i], *v;
		const Onnx__AttributeProto *src;

		if (!a->ref_attr_name || !a->ref_attr_name[0]) {
			b->attribute[k++] = a;
			continue;
		}
		src = attr_named(c->np->attribute, c->np->n_attribute, a->ref_attr_name);
		if (!src)
			src = attr_named(c->defaults.v, (size_t)c->defaults.n, a->ref_attr_name);
		if (!src)
			continue;	/* neither given nor defaulted: the attribute is absent */
		if (a->has_type && src->has_type && a->type != src->type) {
			diag_error(im->ctx, "%s: attribute '%s' refers to the call's '%s', which has "
				   "another type", node_loc(im->g, c->node), a->name,
				   a->ref_attr_name);
			return NULL;
		}
		v = arena_memdup(ar, src, sizeof(*src));
		v->name = a->name;
		b->attribute[k++] = v;
	}
	b->n_attribute = k;
	return b;
}

/* The function imports the default domain at the model's version, or none. */
static int check_opset(struct importer *im, const Onnx__FunctionProto *fp,
		       const struct node *call)
{
	for (size_t i = 0; i < fp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = fp->opset_import[i];

		if (!domain_of(o->domain)[0] && o->version != im->g->opset) {
			diag_error(im->ctx, "%s: function '%s' imports opset %lld of the default "
				   "domain and the model %lld; they must be the same",
				   node_loc(im->g, call), fp->name, (long long)o->version,
				   (long long)im->g->opset);
			return -1;
		}
	}
	return 0;
}

/*
 * Imports np, a call of fp, as fp's nodes inlined: named CALL/inner, with
 * the call's span before their own; the function's outputs take the
 * names of the call's. 0, or -1 after diagnostics.
 */
static int onnx_function_call(struct importer *im, const Onnx__NodeProto *np, int index,
			      const Onnx__FunctionProto *fp)
{
	struct graph *g = im->g;
	struct arena *ar = g->arena;
	struct importer sub = *im;
	struct node node = { 0 };
	struct call c = { im->call, fp, im->call ? im->call->depth + 1 : 1, np, &node, { 0 },
			  { 0 } };
	const char *raw;
	bool *renamed;
	int first = g->nodes.n, v0 = g->values.n, rc = 0;

	/* sub's scope is its own (freed at out:), not a copy of the caller's */
	memset(&sub.names, 0, sizeof(sub.names));
	memset(&sub.protos, 0, sizeof(sub.protos));
	raw = np->name && np->name[0] ? arena_strdup(ar, np->name)
		: arena_printf(ar, "%s_%d", np->op_type, index);
	node.name = import_scoped(im, raw);
	node.op_type = arena_strdup(ar, np->op_type);
	node.onnx_index = im->outer ? -1 : index;
	import_span(im, &node, raw);
	for (const struct call *u = im->call; u && rc == 0; u = u->up)
		if (u->fp == fp) {
			diag_error(im->ctx, "%s: function '%s' calls itself", node_loc(g, &node),
				   fp->name);
			rc = -1;
		}
	if (rc == 0 && (c.depth > FUNCTION_DEPTH_MAX || g->nodes.n > FUNCTION_NODES_MAX)) {
		diag_error(im->ctx, "%s: inlining function '%s' goes past %d nested calls or %d "
			   "nodes", node_loc(g, &node), fp->name, FUNCTION_DEPTH_MAX,
			   FUNCTION_NODES_MAX);
		rc = -1;
	}
	if (rc == 0 && (np->n_input > fp->n_input || np->n_output > fp->n_output)) {
		diag_error(im->ctx, "%s: %zu inputs and %zu outputs for function '%s' of %zu and %zu",
			   node_loc(g, &node), np->n_input, np->n_output, fp->name, fp->n_input,
			   fp->n_output);
		rc = -1;
	}
	if (rc == 0 && (check_opset(im, fp, &node) < 0 || function_defaults(im, fp, &c) < 0))
		rc = -1;
	if (rc < 0)
		goto out;

	/* the function's own scope: its formal inputs, then its nodes */
	sub.prefix = arena_printf(ar, "%s/", node.name);
	sub.outer = &node;
	sub.call = &c;
	for (size_t i = 0; i < fp->n_input; i++) {
		int id = i < np->n_input && np->input[i][0] ? strmap_get(&im->names, np->input[i])
			: -1;

		if (i < np->n_input && np->input[i][0] && id < 0) {
			diag_error(im->ctx, "%s: input '%s' is not defined before the call of "
				   "function '%s'", node_loc(g, &node), np->input[i], fp->name);
			rc = -1;
		} else if (id < 0) {
			strmap_put(&c.absent, fp->input[i], 1);
		} else {
			import_bind(&sub, fp->input[i], id);
		}
	}
	sub.node0 = g->nodes.n;
	for (size_t i = 0; i < fp->n_node && rc == 0; i++) {
		const Onnx__NodeProto *b = bind_node(im, &c, fp->node[i]);

		if (!b || onnx_function_import_node(&sub, b, (int)i) < 0)
			rc = -1;
	}
	if (rc == 0 && import_resolve_forward(&sub) < 0)
		rc = -1;

	/*
	 * the call's outputs, in the caller's scope: the function's output
	 * values renamed, or Identity nodes of them where a value is not the
	 * call's own (an input or a capture) or is already another output
	 */
	renamed = arena_alloc(ar, np->n_output + 1);
	for (size_t i = 0; i < np->n_output && rc == 0; i++) {
		int in, out, ni;

		if (!np->output[i][0])
			continue;
		in = strmap_get(&sub.names, fp->output[i]);
		if (in < 0) {
			diag_error(im->ctx, "%s: function '%s' does not compute its output '%s'",
				   node_loc(g, &node), fp->name, fp->output[i]);
			rc = -1;
			break;
		}
		if (in >= v0 && !renamed[i]) {
			/* made by the call: the value itself takes the caller's name */
			for (size_t j = i; j < np->n_output; j++)
				renamed[j] |= j < fp->n_output && !strcmp(fp->output[j], fp->output[i]);
			g->values.v[in].name = import_scoped(im, np->output[i]);
			import_bind(im, np->output[i], in);
			continue;
		}
		out = graph_add_value(g, import_scoped(im, np->output[i]));
		import_bind(im, np->output[i], out);
		ni = graph_add_node(g, OP_IDENTITY, arena_printf(ar, "%s/%s", node.name,
								fp->output[i]), &in, 1, &out, 1);
		g->nodes.v[ni].op_type = "Identity";
		g->nodes.v[ni].onnx_index = -1;
		g->nodes.v[ni].span = node.span;
	}
out:
	/* after a diagnostic the outputs still exist, so later nodes add none of their own */
	for (size_t i = 0; i < np->n_output && rc < 0; i++)
		if (np->output[i][0] && strmap_get(&im->names, np->output[i]) < 0)
			import_bind(im, np->output[i],
				    graph_add_value(g, import_scoped(im, np->output[i])));
	/* the caller's forward-reference pass has no proto for these nodes */
	for (int k = first; k < g->nodes.n; k++)
		vec_push(&im->protos, NULL);
	strmap_free(&sub.names);
	strmap_free(&c.absent);
	vec_free(&sub.protos);
	vec_free(&c.defaults);
	return rc;
}

int onnx_function_import_node(struct importer *im, const Onnx__NodeProto *np, int index)
{
	const Onnx__FunctionProto *fp;

	/* a node without an op_type calls nothing: import_node reports it */
	if (np->op_type && np->op_type[0] && (fp = onnx_function_find(im->g, np)))
		return onnx_function_call(im, np, index, fp);
	if (np->op_type && np->op_type[0] && onnx_contrib_is(im->g, np))
		return onnx_contrib_import(im, np, index);
	return import_node(im, np, index);
}
