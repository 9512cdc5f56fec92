/*
 * strategy.c - choosing implementations by specialization conditions, at
 * compile time when shapes are static and at run time otherwise.
 */
#include "strategy.h"

#include <string.h>

const struct op_strategy *strategy_find(const struct target_kind *k, enum op op)
{
	for (const struct op_strategy *const *s = k->strategies; s && *s; s++)
		if ((*s)->op == op)
			return *s;
	return NULL;
}

static const struct strategy_impl *best(const struct strategy_spec *sp)
{
	const struct strategy_impl *b = NULL;

	for (int i = 0; i < sp->n_impls; i++)
		if (!b || sp->impls[i].plevel > b->plevel)
			b = &sp->impls[i];
	if (!b)
		BUG("specialization '%s' has no implementation", sp->cond_text);
	return b;
}

/* Lowers n with impl into a function called name (like op_lower_node). */
static struct tir_func *lower_with(struct graph *g, struct node *n, const char *name,
				   const struct strategy_impl *impl, struct tir **cond,
				   const struct strategy_spec *sp)
{
	struct tir_builder b;
	struct lower L;
	struct tir_func *f;

	tir_builder_init(&b, g->arena, name);
	L.g = g;
	L.b = &b;
	L.n = n;
	L.in = arena_alloc(g->arena, sizeof(*L.in) * (size_t)(n->n_in + 1));
	L.out = arena_alloc(g->arena, sizeof(*L.out) * (size_t)(n->n_out + 1));
	for (int i = 0; i < n->n_in; i++)
		if (node_in(g, n, i))
			L.in[i] = tir_param(&b, node_in(g, n, i)->name, node_in(g, n, i)->dtype);
	for (int i = 0; i < n->n_out; i++)
		L.out[i] = tir_param(&b, node_out(g, n, i)->name, node_out(g, n, i)->dtype);
	if (cond)
		*cond = sp && sp->cond ? sp->cond(&L) : NULL;
	if (impl->lower(&L) < 0) {
		tir_builder_release(&b);
		return NULL;
	}
	f = tir_finish(&b);
	f->span = n->span;
	return f;
}

int strategy_lower(struct graph *g, const struct op_strategy *s, struct node *n,
		   struct kernel *k)
{
	VEC(struct kernel_variant) vs = { 0 };
	int rc = 0;

	for (int i = 0; i < s->n_specs; i++) {
		const struct strategy_spec *sp = &s->specs[i];
		const struct strategy_impl *impl = best(sp);
		struct kernel_variant v = { 0 };
		const char *name = arena_printf(g->arena, "%s_v%d", k->name, vs.n);

		v.impl = impl->name;
		v.cond_text = sp->cond_text;
		v.func = lower_with(g, n, name, impl, &v.cond, sp);
		if (!v.func) {
			rc = -1;
			break;
		}
		if (v.cond && v.cond->kind == TIR_INT && v.cond->i == 0)
			continue;	/* can never hold for these shapes */
		if (!v.cond || v.cond->kind == TIR_INT) {
			v.cond = NULL;	/* always holds: the last variant */
			vec_push(&vs, v);
			break;
		}
		vec_push(&vs, v);
	}
	if (rc == 0 && (vs.n == 0 || vs.v[vs.n - 1].cond))
		BUG("strategy for %s has no specialization that always holds",
		    op_info(n->op)->name);
	if (rc == 0 && vs.n == 1)
		vs.v[0].func->name = k->name;	/* decided at compile time: no dispatcher */
	if (rc == 0) {
		k->n_variants = vs.n;
		k->variants = arena_memdup(g->arena, vs.v, sizeof(*vs.v) * (size_t)vs.n);
		k->func = vs.v[vs.n - 1].func;
	}
	vec_free(&vs);
	return rc;
}
