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

struct tir_func *op_lower_node(struct graph *g, struct node *n, const char *name)
{
	struct tir_builder b;
	struct lower L;
	struct tir_func *f;

	tir_builder_init(&b, g->arena, name);
	L.g = g;
	L.b = &b;
	L.n = n;
	L.scratch = NULL;
	L.n_scratch = 0;
	L.in = arena_alloc(g->arena, sizeof(*L.in) * (size_t)(n->n_in + 1));
	L.out = arena_alloc(g->arena, sizeof(*L.out) * (size_t)(n->n_out + 1));
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (v)
			L.in[i] = tir_param(&b, v->name, v->dtype);
	}
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);

		L.out[i] = tir_param(&b, v->name, v->dtype);
	}
	if (ops[n->op].lower(&L) < 0) {
		tir_builder_release(&b);
		return NULL;
	}
	f = tir_finish(&b);
	f->span = n->span;
	return f;
}
