/*
 * scratch_test.c - kernel scratch buffers (lower_scratch): the variants of a
 * kernel share slots (parameter positions after the outputs), a slot grows
 * for a larger constant request, other dtypes and symbolic sizes get slots
 * of their own, a specialization that can never hold claims none, and the
 * execution plan makes each slot an arena value alive in its step alone.
 */
#include "../../core/emit/emit.h"
#include "../../core/ops/ops.h"
#include "../../core/target/strategy.h"
#include "test.h"

/* Each implementation asks for its buffers and writes y = x + 1 through the first. */
static int copy_through(struct lower *L, struct tir_buf *s)
{
	struct tir_builder *b = L->b;
	struct tir *i = tir_loop(b, tir_dim(b, lower_out(L, 0)->shape.d[0]));

	tir_store(b, s, i, tir_load(b, L->in[0], i));
	tir_store(b, L->out[0], i, tir_add(b, tir_load(b, s, i), tir_flt(b, DTYPE_F32, 1)));
	tir_end(b);
	return 0;
}

/* slots: f32 [100] (new), f32 [10] (new) */
static int impl_a(struct lower *L)
{
	struct tir_buf *s = lower_scratch(L, DTYPE_F32, dim_const(100));

	lower_scratch(L, DTYPE_F32, dim_const(10));
	return copy_through(L, s);
}

/* f32 [300]: slot 0 grows; i64 [7]: a new slot (slot 1 is f32) */
static int impl_b(struct lower *L)
{
	struct tir_buf *s = lower_scratch(L, DTYPE_F32, dim_const(300));

	lower_scratch(L, DTYPE_I64, dim_const(7));
	return copy_through(L, s);
}

/* f32 [N]: symbolic, so neither constant slot can take it */
static int impl_c(struct lower *L)
{
	return copy_through(L, lower_scratch(L, DTYPE_F32, dim_sym(0)));
}

/* never lowered: its condition is false */
static int impl_never(struct lower *L)
{
	return copy_through(L, lower_scratch(L, DTYPE_F32, dim_const(1000000)));
}

static struct tir *cond_false(struct lower *L)
{
	return tir_typed_int(L->b, DTYPE_BOOL, 0);
}

static struct tir *cond_n_ge(struct lower *L, int64_t v)
{
	return tir_bin(L->b, BIN_GE, tir_sym(L->b, 0), tir_int(L->b, v));
}

static struct tir *cond_n_ge_64(struct lower *L) { return cond_n_ge(L, 64); }
static struct tir *cond_n_ge_16(struct lower *L) { return cond_n_ge(L, 16); }

static const struct strategy_impl a[] = { { "t.a", 1, impl_a } };
static const struct strategy_impl bb[] = { { "t.b", 1, impl_b } };
static const struct strategy_impl c[] = { { "t.c", 1, impl_c } };
static const struct strategy_impl nv[] = { { "t.never", 1, impl_never } };

static const struct strategy_spec specs[] = {
	{ "never", cond_false, nv, 1 },
	{ "N >= 64", cond_n_ge_64, a, 1 },
	{ "N >= 16", cond_n_ge_16, bb, 1 },
	{ "always", NULL, c, 1 },
};

static const struct op_strategy strategy = { OP_RELU, specs, ARRAY_SIZE(specs) };

struct fixture {
	struct collagec_ctx ctx;
	struct graph *g;
	struct partition p;
	int x, y, node;
};

/* x [N] -> Relu -> y [N], lowered with the test strategy into partition 0. */
static void fx_init(struct fixture *f)
{
	struct shape s = { 1, { dim_sym(0) } };
	struct kernel k = { 0 };
	struct node *n;

	ctx_init(&f->ctx);
	f->ctx.diag_out = NULL;
	f->g = graph_new(&f->ctx);
	graph_intern_sym(f->g, "N");
	f->x = graph_add_value(f->g, "x");
	f->y = graph_add_value(f->g, "y");
	for (int v = f->x; v <= f->y; v++) {
		f->g->values.v[v].dtype = DTYPE_F32;
		f->g->values.v[v].shape = s;
		f->g->values.v[v].has_shape = true;
	}
	vec_push(&f->g->inputs, f->x);
	vec_push(&f->g->outputs, f->y);
	f->node = graph_add_node(f->g, OP_RELU, "relu", &f->x, 1, &f->y, 1);
	n = &f->g->nodes.v[f->node];
	n->op_type = "Relu";
	k.name = "k0_0_Relu";
	ASSERT(0, strategy_lower(f->g, NULL, &strategy, n, NULL, &k));
	k.args = arena_alloc(f->g->arena, 2 * sizeof(int));
	k.args[0] = f->x;
	k.args[1] = f->y;
	k.n_args = 2;
	k.n_inputs = 1;
	memset(&f->p, 0, sizeof(f->p));
	f->p.n_nodes = 1;
	f->p.nodes = &f->node;
	vec_push(&f->p.kernels, k);
}

static void fx_release(struct fixture *f)
{
	vec_free(&f->p.kernels);
	graph_free(f->g);
	ctx_release(&f->ctx);
}

static const struct value *slot(struct fixture *f, int i)
{
	return &f->g->values.v[f->p.kernels.v[0].scratch[i]];
}

static void test_variants_share_slots(void)
{
	struct fixture f;
	const struct kernel *k;

	fx_init(&f);
	k = &f.p.kernels.v[0];
	ASSERT(3, k->n_variants);
	ASSERT_STR("t.a", k->variants[0].impl);
	ASSERT_STR("t.c", k->variants[2].impl);
	ASSERT(4, k->n_scratch);
	/* t.a: x, y, slots 0 and 1; t.b: slots 0 to 2; t.c: 0 to 3 */
	ASSERT(4, k->variants[0].func->n_bufs);
	ASSERT(5, k->variants[1].func->n_bufs);
	ASSERT(6, k->variants[2].func->n_bufs);
	ASSERT(DTYPE_I64, k->variants[1].func->bufs[4]->dtype);
	fx_release(&f);
}

static void test_slot_sizes(void)
{
	struct fixture f;

	fx_init(&f);
	ASSERT(DTYPE_F32, slot(&f, 0)->dtype);
	ASSERT(1, slot(&f, 0)->shape.rank);
	ASSERT(300, slot(&f, 0)->shape.d[0].c);	/* grown for t.b */
	ASSERT(10, slot(&f, 1)->shape.d[0].c);
	ASSERT(DTYPE_I64, slot(&f, 2)->dtype);
	ASSERT(7, slot(&f, 2)->shape.d[0].c);
	ASSERT(1, slot(&f, 3)->shape.d[0].n);	/* symbolic: N */
	ASSERT(-1, slot(&f, 0)->producer);
	ASSERT_STR("k0_0_Relu.scratch0", slot(&f, 0)->name);
	fx_release(&f);
}

static void test_plan_live_in_step_only(void)
{
	struct fixture f;
	struct exec_plan ep;
	const struct kernel *k;

	fx_init(&f);
	k = &f.p.kernels.v[0];
	ASSERT(0, emit_plan(f.g, &f.p, 1, &ep));
	ASSERT(1, ep.steps.n);
	ASSERT(2 + 4, ep.steps.v[0].n_args);
	for (int i = 0; i < k->n_scratch; i++) {
		const struct exec_value *e = &ep.vals[k->scratch[i]];

		ASSERT(k->scratch[i], ep.steps.v[0].args[2 + i]);
		ASSERT(EXEC_ARENA, e->kind);
		ASSERT(0, e->first);
		ASSERT(0, e->last);
	}
	ASSERT_TRUE(ep.dynamic);	/* one slot is [N] */
	/* at N = 1: 300 + 10 floats, 7 int64s, 1 float, each 64-byte aligned */
	ASSERT(1200 + 40 + 56 + 4, ep.peak_bytes);
	ASSERT(1216 + 64 + 64 + 4, ep.arena_bytes);
	exec_plan_release(&ep);
	fx_release(&f);
}

static void test_dispatch_runs_with_scratch(void)
{
	struct fixture f;
	float xs[70], ys[70], s0[300], s1[10], s3[70];
	int64_t s2[7], n = 70;
	void *bufs[6] = { xs, ys, s0, s1, s2, s3 };
	const struct kernel *k;

	fx_init(&f);
	k = &f.p.kernels.v[0];
	for (int i = 0; i < 70; i++)
		xs[i] = (float)i;
	/* each variant runs on the kernel's one argument list */
	for (int v = 0; v < k->n_variants; v++) {
		memset(ys, 0, sizeof(ys));
		ASSERT(0, tir_interpret(k->variants[v].func, bufs, &n));
		ASSERT(70, (int64_t)ys[69]);
	}
	fx_release(&f);
}

TESTS({ "variants_share_slots", test_variants_share_slots },
      { "slot_sizes", test_slot_sizes },
      { "plan_live_in_step_only", test_plan_live_in_step_only },
      { "dispatch_runs_with_scratch", test_dispatch_runs_with_scratch })
