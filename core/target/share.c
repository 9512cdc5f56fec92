/*
 * share.c - one function for kernels that differ only in integer constants.
 *
 * A network repeats the same layer at many sizes: DenseNet's BatchNorm, Relu,
 * Concat and 1x1 Conv kernels differ from layer to layer only in channel
 * counts, so their loop IR is the same nest with other extents and strides.
 * Printing each as C costs the C compiler most of a compile. This step finds
 * such kernels (of the kinds that ask for it, target_kind.share_constants),
 * moves the index constants that differ between them into a small int64
 * constant tensor, passed as one more input, and rewrites each kernel to load
 * them from it. Their loop IR is then identical up to buffer arguments, so the
 * printer's existing deduplication emits one function for all of them.
 *
 * Only int64 index constants move. A divisor, a modulus or a shift amount
 * stays in the code (a division by a variable costs far more than one by a
 * constant), and so does a short innermost loop's trip count (the
 * vectorizer and the unroller plan with it): kernels that differ in one of
 * those are not merged. Constants
 * that are equal across a group stay in the code too. Kernels that are alone
 * in their group, or identical already, are left as they are.
 *
 *	share_constants(g, parts, np);	// after relay_to_tir, before tir_to_runtime
 */
#include "target.h"

#include "../tir/tir_print.h"

#include <string.h>

/* A walk that copies a kernel body, lifting int64 index constants. */
struct lift {
	struct arena *arena;
	VEC(int64_t) vals;		/* every liftable constant, in walk order */
	const bool *mask;		/* NULL: lift all; else positions to lift */
	const int *slot;		/* with mask: position -> slot in kp */
	struct tir_buf *kp;		/* the constants' buffer */
	struct tir_buf *const *bufs;	/* old parameter index -> new buffer, or NULL */
	int lifted;			/* constants made loads so far */
};

/*
 * The work of an extern call (tir_extern_work) whose arguments had a
 * constant lifted: unknown at compile time, so, like a loop of symbolic
 * extent, taken as large (kernels differing only in the call's sizes share
 * their code, and the parallel step's threshold is passed).
 */
#define LIFTED_EXTERN_WORK ((int64_t)1 << 20)

static struct tir *slot_load(struct lift *L, int64_t slot)
{
	struct tir *i = arena_alloc(L->arena, sizeof(*i)), *e = arena_alloc(L->arena, sizeof(*e));

	i->kind = TIR_INT;
	i->dtype = DTYPE_I64;
	i->i = slot;
	e->kind = TIR_LOAD;
	e->dtype = DTYPE_I64;
	e->buf = L->kp;
	e->a = i;
	return e;
}

/*
 * Whether s is an innermost loop of a constant trip count of at most
 * SHORT_TRIP: the vectorizer and the unroller plan with such a count (a
 * 3x3 window, a 56-pixel row), while a long loop loses nothing by a
 * count read at run time.
 */
#define SHORT_TRIP 256
static bool short_innermost(const struct tir *s)
{
	return s->kind == TIR_FOR && s->a->kind == TIR_INT && s->a->i <= SHORT_TRIP &&
	       !tir_has_loop(s->b);
}

/* Whether b's right operand must stay a constant. */
static bool protects_rhs(const struct tir *e)
{
	return e->kind == TIR_BIN && (e->op == BIN_DIV || e->op == BIN_MOD || e->op == BIN_SHL ||
				      e->op == BIN_SHR);
}

static struct tir *lift(struct lift *L, const struct tir *e, bool keep)
{
	struct tir *c;

	if (!e)
		return NULL;
	if (e->kind == TIR_INT && e->dtype == DTYPE_I64 && !keep) {
		int pos = L->vals.n;

		vec_push(&L->vals, e->i);
		if (!L->mask || L->mask[pos]) {
			L->lifted++;
			return slot_load(L, L->mask ? L->slot[pos] : pos);
		}
	}
	c = arena_alloc(L->arena, sizeof(*c));
	*c = *e;
	if (L->bufs && e->buf)
		c->buf = L->bufs[e->buf->index];
	c->a = lift(L, e->a, keep || short_innermost(e));
	c->b = lift(L, e->b, keep || protects_rhs(e));
	c->c = lift(L, e->c, keep);
	if (e->n) {
		int before = L->lifted;

		c->list = arena_alloc(L->arena, sizeof(*c->list) * (size_t)e->n);
		for (int i = 0; i < e->n; i++)
			c->list[i] = lift(L, e->list[i], keep);
		if (e->kind == TIR_EXTERN && L->lifted > before)
			c->i = LIFTED_EXTERN_WORK;
	}
	return c;
}

/* What the grouping compares: the code with every liftable constant a load. */
static const char *shape_text(struct arena *a, const struct kernel *k, struct lift *L)
{
	struct tir_func *f = k->func;
	struct tir_buf *kp = arena_alloc(a, sizeof(*kp));
	struct strbuf sb = STRBUF_INIT;
	char *r;

	*kp = (struct tir_buf){ "consts", DTYPE_I64, f->n_bufs };
	L->kp = kp;
	sb_printf(&sb, "%d:", k->n_inputs);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(&sb, " %s", tir_ctype(f->bufs[i]->dtype));
	sb_putc(&sb, '\n');
	tir_print_stmt(lift(L, f->body, false), &tir_dialect_c, &sb, 1);
	L->kp = NULL;
	/* a kernel may name itself (its helpers); that is no difference */
	r = arena_strdup(a, sb_str(&sb));
	for (char *p; (p = strstr(r, k->name));)
		memset(p, '@', strlen(k->name));
	sb_release(&sb);
	return r;
}

static bool shareable(const struct partition *p, const struct kernel *k)
{
	return p->target->kind->share_constants && target_opt(p->target, "share") && k->func &&
	       !k->symbol && k->n_variants <= 1;
}

/*
 * Rewrites k to read the constants at the positions in mask from a new
 * constant input holding vals (k's own values at those positions).
 */
static void rewrite(struct graph *g, struct kernel *k, const bool *mask, const int *slot,
		    int n_slots, const int64_t *vals, int n_vals)
{
	struct tir_func *f = k->func, *nf = arena_alloc(g->arena, sizeof(*nf));
	struct lift L = { .arena = g->arena, .mask = mask, .slot = slot };
	int64_t *data = arena_alloc(g->arena, sizeof(int64_t) * (size_t)n_slots);
	struct shape s = { .rank = 1 };
	int at = k->n_inputs, *args, id;

	for (int i = 0; i < n_vals; i++)
		if (mask[i])
			data[slot[i]] = vals[i];
	s.d[0] = dim_const(n_slots);
	id = graph_add_const(g, arena_printf(g->arena, "%s.consts", k->name), DTYPE_I64, &s, data);
	/* the new parameter goes after the inputs: outputs and scratch move up one */
	*nf = *f;
	nf->n_bufs = f->n_bufs + 1;
	nf->bufs = arena_alloc(g->arena, sizeof(*nf->bufs) * (size_t)nf->n_bufs);
	for (int i = 0, j = 0; i < nf->n_bufs; i++) {
		nf->bufs[i] = arena_alloc(g->arena, sizeof(struct tir_buf));
		if (i == at) {
			*nf->bufs[i] = (struct tir_buf){ "consts", DTYPE_I64, i };
			L.kp = nf->bufs[i];
			continue;
		}
		*nf->bufs[i] = *f->bufs[j++];
		nf->bufs[i]->index = i;
	}
	{
		struct tir_buf **map = arena_alloc(g->arena, sizeof(*map) * (size_t)f->n_bufs);

		for (int i = 0; i < f->n_bufs; i++)
			map[i] = nf->bufs[i < at ? i : i + 1];
		L.bufs = map;
	}
	nf->body = lift(&L, f->body, false);
	if (L.vals.n != n_vals)
		BUG("kernel %s: %d constants on the second walk, %d on the first", k->name,
		    L.vals.n, n_vals);
	vec_free(&L.vals);
	args = arena_alloc(g->arena, sizeof(int) * (size_t)(k->n_args + 1));
	memcpy(args, k->args, sizeof(int) * (size_t)at);
	args[at] = id;
	memcpy(args + at + 1, k->args + at, sizeof(int) * (size_t)(k->n_args - at));
	k->args = args;
	k->n_args++;
	k->n_inputs++;
	k->func = nf;
	if (k->n_variants == 1)
		k->variants[0].func = nf;
}

struct member {
	struct kernel *k;
	int64_t *vals;
	int n_vals;
	int next;		/* next member of the group, -1 */
};

void share_constants(struct graph *g, struct partition *parts, int np)
{
	struct strmap groups = { 0 };
	VEC(struct member) ms = { 0 };
	VEC(int) heads = { 0 }, tails = { 0 };

	for (int i = 0; i < np; i++)
		for (int j = 0; j < parts[i].kernels.n; j++) {
			struct kernel *k = &parts[i].kernels.v[j];
			struct lift L = { .arena = g->arena };
			struct member m = { .k = k, .next = -1 };
			const char *key;
			int gi;

			if (!shareable(&parts[i], k))
				continue;
			key = shape_text(g->arena, k, &L);
			m.n_vals = L.vals.n;
			m.vals = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(m.n_vals + 1));
			if (m.n_vals)
				memcpy(m.vals, L.vals.v, sizeof(int64_t) * (size_t)m.n_vals);
			vec_free(&L.vals);
			vec_push(&ms, m);
			if ((gi = strmap_get(&groups, key)) < 0) {
				strmap_put(&groups, key, heads.n);
				vec_push(&heads, ms.n - 1);
				vec_push(&tails, ms.n - 1);
			} else {
				ms.v[tails.v[gi]].next = ms.n - 1;
				tails.v[gi] = ms.n - 1;
			}
		}
	for (int gi = 0; gi < heads.n; gi++) {
		struct member *first = &ms.v[heads.v[gi]];
		int n = first->n_vals, n_slots = 0, size = 0;
		bool *mask = arena_alloc(g->arena, (size_t)n + 1);
		int *slot = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));

		for (int m = heads.v[gi]; m >= 0; m = ms.v[m].next) {
			size++;
			for (int i = 0; i < n; i++)
				mask[i] |= ms.v[m].vals[i] != first->vals[i];
		}
		for (int i = 0; i < n; i++)
			slot[i] = mask[i] ? n_slots++ : -1;
		if (size < 2 || !n_slots)
			continue;
		for (int m = heads.v[gi]; m >= 0; m = ms.v[m].next)
			rewrite(g, ms.v[m].k, mask, slot, n_slots, ms.v[m].vals, n);
	}
	strmap_free(&groups);
	vec_free(&ms);
	vec_free(&heads);
	vec_free(&tails);
}
