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

static bool never(const struct tir *cond)
{
	return cond && cond->kind == TIR_INT && cond->i == 0;
}

/*
 * Lowers n under specialization sp into v (a function called name, like
 * op_lower_node) ending with epilogue e (NULL: none; or applied by the
 * implementation in its write-back, L.epi_done), the func named by
 * span; the scratch slots it asks for are added to (or shared with)
 * scratch. A condition that can never hold leaves v->func NULL and lowers
 * nothing, so it claims no scratch. 0, or -1 after a diagnostic.
 */
static int lower_with(struct graph *g, const struct target *t, struct node *n,
		      const char *name, const struct strategy_spec *sp, struct kernel_variant *v,
		      struct lower_scratch *scratch, const struct lower_epilogue *e,
		      struct span span)
{
	struct tir_builder b;
	struct lower L;
	struct tir_buf **eb;

	tir_builder_init(&b, g->arena, name);
	L.g = g;
	L.b = &b;
	L.n = n;
	L.scratch = scratch;
	L.n_scratch = 0;
	lower_params(&L, e, &eb);
	L.epi = e;
	L.ebuf = eb;
	L.epi_done = false;
	L.target = t;
	v->cond = sp->cond ? sp->cond(&L) : NULL;
	if (never(v->cond) || best(sp)->lower(&L) < 0) {
		tir_builder_release(&b);
		return never(v->cond) ? 0 : -1;
	}
	if (e && !L.epi_done)
		lower_epilogue(&L, e, eb);
	v->func = tir_finish(&b);
	v->func->span = span;
	return 0;
}

/*
 * Turns the kernel's scratch slots into graph values: 1-D, no producer, no
 * consumer; the kernel's extra arguments, so the plan places them for its
 * step alone.
 */
static void scratch_values(struct graph *g, const struct lower_scratch *s, struct kernel *k)
{
	k->n_scratch = s->slots.n;
	k->scratch = arena_alloc(g->arena, sizeof(int) * (size_t)(s->slots.n + 1));
	for (int i = 0; i < s->slots.n; i++) {
		int id = graph_add_value(g, arena_printf(g->arena, "%s.scratch%d", k->name, i));
		struct value *v = &g->values.v[id];

		v->dtype = s->slots.v[i].dtype;
		v->shape.rank = 1;
		v->shape.d[0] = s->slots.v[i].numel;
		v->has_shape = true;
		v->data = s->slots.v[i].data;	/* a constant: placed in the blob */
		k->scratch[i] = id;
	}
}

int strategy_lower(struct graph *g, const struct target *t, const struct op_strategy *s,
		   struct node *n, const struct lower_epilogue *e, struct kernel *k)
{
	VEC(struct kernel_variant) vs = { 0 };
	struct lower_scratch scratch = { 0 };
	int rc = 0;

	/* a window of symbolic extent: only the generic loop nest (the last spec) takes it */
	bool generic = window_symbolic(g, n);

	for (int i = 0; i < s->n_specs; i++) {
		const struct strategy_spec *sp = &s->specs[i];
		const struct strategy_impl *impl = best(sp);
		struct kernel_variant v = { 0 };
		const char *name = arena_printf(g->arena, "%s_v%d", k->name, vs.n);

		if (generic && sp->cond)
			continue;
		v.impl = impl->name;
		v.cond_text = sp->cond_text;
		if (lower_with(g, t, n, name, sp, &v, &scratch, e, k->span) < 0) {
			rc = -1;
			break;
		}
		if (!v.func)
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
		scratch_values(g, &scratch, k);
	}
	vec_free(&vs);
	vec_free(&scratch.slots);
	return rc;
}

struct tir *strategy_static(struct lower *L, bool v)
{
	return tir_typed_int(L->b, DTYPE_BOOL, v);
}

struct tir *strategy_and(struct lower *L, struct tir *x, struct tir *y)
{
	if (x->kind == TIR_INT)
		return x->i ? y : x;
	if (y->kind == TIR_INT)
		return y->i ? x : y;
	return tir_bin(L->b, BIN_LAND, x, y);
}
