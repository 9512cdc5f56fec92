/*
 * ops.c - the op table and the per-node lowering driver.
 */
#include "ops.h"

#include <string.h>

#define OP(id, nm, kind, inferfn, lowerfn) int inferfn(struct graph *, struct node *); \
	int lowerfn(struct lower *);
#include "ops.def"
#undef OP

static const struct op_info ops[OP_COUNT] = {
#define OP(id, nm, kind, inferfn, lowerfn) [OP_##id] = { nm, kind, inferfn, lowerfn },
#include "ops.def"
#undef OP
};

const struct op_info *op_info(enum op op)
{
	if ((int)op < 0 || op >= OP_COUNT)
		BUG("op_info(%d)", (int)op);
	return &ops[op];
}

const char *op_kind_name(enum op_kind k)
{
	static const char *const names[OPK_COUNT] = {
		[OPK_ELEMWISE] = "elemwise", [OPK_BROADCAST] = "broadcast",
		[OPK_INJECTIVE] = "injective", [OPK_REDUCE] = "reduce",
		[OPK_ANCHOR] = "anchor", [OPK_OPAQUE] = "opaque",
	};
	return names[k];
}

enum op op_from_onnx(const char *op_type)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (!strcmp(ops[i].name, op_type))
			return (enum op)i;
	return OP_COUNT;
}

const char *op_domain(enum op op)
{
	if (op == OP_ADAGRAD || op == OP_ADAM || op == OP_MOMENTUM)
		return "ai.onnx.preview.training";
	if (op == OP_MATMULNBITS || op == OP_QLINEARADD || op == OP_QLINEARAVERAGEPOOL ||
	    op == OP_QLINEARCONCAT || op == OP_QLINEARGLOBALAVERAGEPOOL)
		return "com.microsoft";
	if (op == OP_ARRAYFEATUREEXTRACTOR || op == OP_BINARIZER || op == OP_LABELENCODER ||
	    op == OP_TREEENSEMBLE || op == OP_TREEENSEMBLEREGRESSOR)
		return "ai.onnx.ml";
	return "";
}

/* sorted by op name, then attribute name: each op's attributes are adjacent */
static const struct op_attr attrs[] = {
#define ATTR(op, nm, kind, def) { OP_##op, nm, kind, def },
#include "attrs.def"
#undef ATTR
};

int op_attrs(enum op op, const struct op_attr **out)
{
	int n = 0;

	*out = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(attrs); i++)
		if (attrs[i].op == op) {
			if (!n)
				*out = &attrs[i];
			n++;
		}
	return n;
}

const struct op_attr *op_attr_find(enum op op, const char *name)
{
	const struct op_attr *a;
	int n = op_attrs(op, &a);

	for (int i = 0; i < n; i++)
		if (!strcmp(a[i].name, name))
			return &a[i];
	return NULL;
}

/* ---- versions (strict checking) ---- */

struct op_version {
	enum op op;
	int since;
};

struct op_version_attr {
	enum op op;
	int since;
	const char *name;
	enum attr_kind kind;
	bool required;
};

/* each op's versions adjacent and increasing; each version's attributes after it */
static const struct op_version versions[] = {
#define OPV(op, since) { OP_##op, since },
#define OPV_ATTR(op, since, nm, kind, req)
#include "versions.def"
#undef OPV
#undef OPV_ATTR
};

static const struct op_version_attr version_attrs[] = {
#define OPV(op, since)
#define OPV_ATTR(op, since, nm, kind, req) { OP_##op, since, nm, kind, req },
#include "versions.def"
#undef OPV
#undef OPV_ATTR
};

static const char *attr_kind_name(enum attr_kind k)
{
	static const char *const names[ATTR_KIND_COUNT] = {
		[ATTR_INT] = "INT", [ATTR_FLOAT] = "FLOAT", [ATTR_STRING] = "STRING",
		[ATTR_INTS] = "INTS", [ATTR_FLOATS] = "FLOATS", [ATTR_STRINGS] = "STRINGS",
		[ATTR_TENSOR] = "TENSOR", [ATTR_GRAPH] = "GRAPH",
		[ATTR_TYPE] = "TYPE_PROTO",
	};
	return names[k];
}

int op_check_version(struct graph *g, const struct node *n, int64_t opset)
{
	int since = 0, first = 0, rc = 0;
	const char *ver;

	for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
		if (versions[i].op == n->op) {
			if (!first)
				first = versions[i].since;
			if (versions[i].since <= opset)
				since = versions[i].since;
		}
	if (!first)
		return 0;	/* not an ONNX op, or not in the schemas */
	if (!since) {
		diag_error(g->ctx, "%s: %s does not exist in opset %lld (it first appears in "
			   "opset %d)", node_loc(g, n), n->op_type, (long long)opset, first);
		return -1;
	}
	ver = arena_printf(g->arena, "%s-%d", n->op_type, since);
	for (int a = 0; a < n->n_attrs; a++) {
		const struct op_version_attr *d = NULL;

		for (int b = 0; b < a; b++)
			if (!strcmp(n->attrs[a].name, n->attrs[b].name)) {
				diag_error(g->ctx, "%s: attribute '%s' is given twice",
					   node_loc(g, n), n->attrs[a].name);
				rc = -1;
			}
		for (size_t i = 0; i < ARRAY_SIZE(version_attrs) && !d; i++)
			if (version_attrs[i].op == n->op && version_attrs[i].since == since &&
			    !strcmp(version_attrs[i].name, n->attrs[a].name))
				d = &version_attrs[i];
		if (!d) {
			diag_error(g->ctx, "%s: %s (the model's opset %lld) has no attribute '%s'",
				   node_loc(g, n), ver, (long long)opset, n->attrs[a].name);
			rc = -1;
		} else if (d->kind != n->attrs[a].kind) {
			diag_error(g->ctx, "%s: attribute '%s' of %s must be %s, not %s",
				   node_loc(g, n), d->name, ver, attr_kind_name(d->kind),
				   attr_kind_name(n->attrs[a].kind));
			rc = -1;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(version_attrs); i++) {
		const struct op_version_attr *d = &version_attrs[i];
		bool found = false;

		if (d->op != n->op || d->since != since || !d->required)
			continue;
		for (int a = 0; a < n->n_attrs && !found; a++)
			found = !strcmp(n->attrs[a].name, d->name);
		if (!found) {
			diag_error(g->ctx, "%s: %s needs attribute '%s'", node_loc(g, n), ver,
				   d->name);
			rc = -1;
		}
	}
	return rc;
}

void lower_params(struct lower *L, const struct lower_epilogue *e, struct tir_buf ***ebuf)
{
	struct graph *g = L->g;
	const struct node *n = L->n;
	struct tir_buf **eb = NULL;

	L->in = arena_alloc(g->arena, sizeof(*L->in) * (size_t)(n->n_in + 1));
	L->out = arena_alloc(g->arena, sizeof(*L->out) * (size_t)(n->n_out + 1));
	if (e)
		eb = arena_alloc(g->arena, sizeof(*eb) * ((size_t)g->values.n + 1));
	for (int i = 0; e && i < e->n_pro_extra; i++)
		eb[e->pro_extra[i]] = tir_param(L->b, g->values.v[e->pro_extra[i]].name,
						g->values.v[e->pro_extra[i]].dtype);
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (v && i == 0 && e && e->n_pro) {
			/* not a parameter: lower_epilogue inlines its loads */
			L->in[0] = arena_alloc(g->arena, sizeof(*L->in[0]));
			L->in[0]->name = v->name;
			L->in[0]->dtype = v->dtype;
			L->in[0]->index = -1;
		} else if (v) {
			L->in[i] = tir_param(L->b, v->name, v->dtype);
		}
	}
	if (e) {
		for (int i = 0; i < e->n_extra; i++)
			eb[e->extra[i]] = tir_param(L->b, g->values.v[e->extra[i]].name,
						    g->values.v[e->extra[i]].dtype);
	}
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);

		if (i == 0 && e && !e->keep_anchor)
			v = &g->values.v[e->final];
		L->out[i] = tir_param(L->b, v->name, v->dtype);
	}
	if (e) {
		for (int i = 0; i < e->n_stored; i++)
			eb[e->stored[i]] = tir_param(L->b, g->values.v[e->stored[i]].name,
						     g->values.v[e->stored[i]].dtype);
		if (!e->keep_anchor)
			eb[e->final] = L->out[0];
	}
	if (ebuf)
		*ebuf = eb;
}

struct tir_func *op_lower_node(struct graph *g, struct node *n, const char *name)
{
	return op_lower_node_epi(g, n, name, NULL);
}

struct tir_func *op_lower_node_epi(struct graph *g, struct node *n, const char *name,
				   const struct lower_epilogue *e)
{
	struct tir_builder b;
	struct lower L;
	struct tir_func *f;
	struct tir_buf **eb;

	tir_builder_init(&b, g->arena, name);
	L.g = g;
	L.b = &b;
	L.n = n;
	L.scratch = NULL;
	L.n_scratch = 0;
	L.epi = NULL;	/* the op's own lowering never applies it */
	L.ebuf = NULL;
	L.epi_done = false;
	L.target = NULL;
	lower_params(&L, e, &eb);
	if (ops[n->op].lower(&L) < 0) {
		tir_builder_release(&b);
		return NULL;
	}
	if (e)
		lower_epilogue(&L, e, eb);
	f = tir_finish(&b);
	f->span = n->span;
	return f;
}
