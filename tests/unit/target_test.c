/*
 * target_test.c - target strings (target_parse: kinds, options, canonical
 * form, usage errors that list what exists), target_opt, and the generic
 * lowering of a partition into kernels.
 */
#include "../../backends/backends.h"
#include "../../core/ops/ops.h"
#include "test.h"

#include <malloc.h>

static const struct target_option fake_options[] = {
	{ "tile", "tile size", 1, 64, 8 },
	{ "unroll", "unroll inner loops", 0, 1, 0 },
	{ "device", "a device's index, kind or name", 0, 0, 0, "0" },
	{ NULL, NULL, 0, 0, 0, NULL },
};

static const struct target_kind fake_kind = {
	.api_version = TARGET_API_VERSION,
	.name = "fake",
	.device = "cpu",
	.description = "test kind with two options",
	.options = fake_options,
};

static const struct target_kind bare_kind = {
	.api_version = TARGET_API_VERSION,
	.name = "bare",
	.device = "cpu",
	.description = "test kind without options",
	.options = NULL,
};

static const struct target_kind *const kinds[] = { &target_kind_c, &fake_kind, &bare_kind };
#define NK ((int)ARRAY_SIZE(kinds))

struct fixture {
	struct collagec_ctx ctx;
	struct strbuf cap;
};

static void fx_init(struct fixture *f)
{
	ctx_init(&f->ctx);
	f->ctx.diag_out = NULL;
	memset(&f->cap, 0, sizeof(f->cap));
	f->ctx.capture = &f->cap;
}

static void fx_release(struct fixture *f)
{
	sb_release(&f->cap);
	ctx_release(&f->ctx);
}

/* Parses str and expects exactly one usage error with message msg. */
static void expect_usage_error(const char *str, const char *msg)
{
	struct fixture f;
	char want[1024];

	fx_init(&f);
	ASSERT_TRUE(target_parse(&f.ctx, kinds, NK, str) == NULL);
	snprintf(want, sizeof(want), "collagec: error: %s\n", msg);
	ASSERT_STR(want, sb_str(&f.cap));
	ASSERT(1, f.ctx.n_errors);
	ASSERT(STATUS_USAGE, f.ctx.status);
	fx_release(&f);
}

static void test_parse_plain_c(void)
{
	struct fixture f;
	struct target *t;

	fx_init(&f);
	t = target_parse(&f.ctx, kinds, NK, "c");
	ASSERT_TRUE(t != NULL);
	ASSERT_TRUE(t->kind == &target_kind_c);
	ASSERT_STR("c", t->str);
	ASSERT(0, t->opt[0]);
	ASSERT(0, target_opt(t, "threads"));
	ASSERT(0, f.ctx.n_errors);
	ASSERT_STR("", sb_str(&f.cap));
	fx_release(&f);
}

static void test_parse_c_threads(void)
{
	struct fixture f;
	struct target *t;
	char src[] = "c -threads=4";

	fx_init(&f);
	t = target_parse(&f.ctx, kinds, NK, src);
	ASSERT_TRUE(t != NULL);
	ASSERT_TRUE(t->kind == &target_kind_c);
	ASSERT(4, target_opt(t, "threads"));
	ASSERT_STR("c -threads=4", t->str);
	ASSERT_STR("c -threads=4", src);	/* the caller's string is not touched */
	/* blanks and tabs around words */
	t = target_parse(&f.ctx, kinds, NK, "  c \t -threads=256  ");
	ASSERT_TRUE(t != NULL);
	ASSERT(256, target_opt(t, "threads"));
	ASSERT_STR("c -threads=256", t->str);
	/* the default value is left out of the canonical string */
	t = target_parse(&f.ctx, kinds, NK, "c -threads=0");
	ASSERT_TRUE(t != NULL);
	ASSERT(0, target_opt(t, "threads"));
	ASSERT_STR("c", t->str);
	/* the last occurrence wins */
	t = target_parse(&f.ctx, kinds, NK, "c -threads=2 -threads=3");
	ASSERT_TRUE(t != NULL);
	ASSERT(3, target_opt(t, "threads"));
	ASSERT(0, f.ctx.n_errors);
	fx_release(&f);
}

static void test_parse_options_canonical_order(void)
{
	struct fixture f;
	struct target *t;

	fx_init(&f);
	t = target_parse(&f.ctx, kinds, NK, "fake");
	ASSERT_TRUE(t != NULL);
	ASSERT_TRUE(t->kind == &fake_kind);
	ASSERT(8, target_opt(t, "tile"));	/* defaults */
	ASSERT(0, target_opt(t, "unroll"));
	ASSERT_STR("fake", t->str);
	t = target_parse(&f.ctx, kinds, NK, "fake -unroll=1 -tile=16");
	ASSERT_TRUE(t != NULL);
	ASSERT(16, t->opt[0]);
	ASSERT(1, t->opt[1]);
	ASSERT_STR("fake -tile=16 -unroll=1", t->str);	/* in the kind's option order */
	t = target_parse(&f.ctx, kinds, NK, "fake -tile=8 -unroll=1");
	ASSERT_STR("fake -unroll=1", t->str);
	/* a text option: its default stays out of the canonical form */
	ASSERT_STR("0", target_opt_text(t, "device"));
	t = target_parse(&f.ctx, kinds, NK, "fake -device=gpu -tile=4");
	ASSERT_TRUE(t != NULL);
	ASSERT_STR("gpu", target_opt_text(t, "device"));
	ASSERT_STR("fake -tile=4 -device=gpu", t->str);
	t = target_parse(&f.ctx, kinds, NK, "fake -device=0");
	ASSERT_STR("fake", t->str);
	t = target_parse(&f.ctx, kinds, NK, "bare");
	ASSERT_TRUE(t != NULL);
	ASSERT_TRUE(t->kind == &bare_kind);
	ASSERT_STR("bare", t->str);
	ASSERT(0, f.ctx.n_errors);
	fx_release(&f);
}

static void test_unknown_kind(void)
{
	expect_usage_error("cuda", "unknown target kind 'cuda' (known: c, fake, bare)");
	expect_usage_error("cuda -threads=4", "unknown target kind 'cuda' (known: c, fake, bare)");
	/* names match whole, case-sensitively */
	expect_usage_error("C", "unknown target kind 'C' (known: c, fake, bare)");
	expect_usage_error("cc", "unknown target kind 'cc' (known: c, fake, bare)");
}

static void test_unknown_kind_with_only_c(void)
{
	struct fixture f;
	const struct target_kind *const only_c[] = { &target_kind_c };

	fx_init(&f);
	ASSERT_TRUE(target_parse(&f.ctx, only_c, 1, "cuda") == NULL);
	ASSERT_STR("collagec: error: unknown target kind 'cuda' (known: c)\n", sb_str(&f.cap));
	ASSERT(STATUS_USAGE, f.ctx.status);
	fx_release(&f);
}

static void test_unknown_option(void)
{
	expect_usage_error("c -foo=1", "target 'c' has no option '-foo' (options: -threads, -fuse, -share, -dwvec, -winograd, -chan)");
	expect_usage_error("fake -threads=2",
			   "target 'fake' has no option '-threads' (options: -tile, -unroll, -device)");
	expect_usage_error("bare -x=1", "target 'bare' has no option '-x' (options: none)");
	/* an unknown option after a good one still fails */
	expect_usage_error("c -threads=2 -foo=1", "target 'c' has no option '-foo' (options: -threads, -fuse, -share, -dwvec, -winograd, -chan)");
}

static void test_malformed_option(void)
{
	expect_usage_error("c threads=4", "target 'c': expected -option=value, got 'threads=4'");
	expect_usage_error("c -threads", "target 'c': expected -option=value, got '-threads'");
	expect_usage_error("c extra", "target 'c': expected -option=value, got 'extra'");
}

static void test_bad_option_value(void)
{
	static const char *const bad[] = {
		"c -threads=", "c -threads=abc", "c -threads=4x", "c -threads=-1",
		"c -threads=257", "c -threads=99999999999999999999",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		expect_usage_error(bad[i], "target 'c': -threads takes an integer from 0 to 256");
	expect_usage_error("fake -tile=0", "target 'fake': -tile takes an integer from 1 to 64");
	expect_usage_error("fake -unroll=2", "target 'fake': -unroll takes an integer from 0 to 1");
	expect_usage_error("fake -device=", "target 'fake': -device takes a word (a device's "
			   "index, kind or name)");
}

static void test_empty_string(void)
{
	expect_usage_error("", "empty target string");
	expect_usage_error(" \t ", "empty target string");
}

static void test_kind_find_and_registry(void)
{
	ASSERT_TRUE(target_kind_find(kinds, NK, "fake") == &fake_kind);
	ASSERT_TRUE(target_kind_find(kinds, NK, "c") == &target_kind_c);
	ASSERT_TRUE(target_kind_find(kinds, NK, "nope") == NULL);
	ASSERT_TRUE(target_kind_find(kinds, 0, "c") == NULL);
	/* the shipped registry has the c target first */
	ASSERT_TRUE(backend_registry_count >= 1);
	ASSERT_TRUE(backend_registry[0] == &target_kind_c);
	ASSERT(TARGET_API_VERSION, target_kind_c.api_version);
	ASSERT_STR("cpu", target_kind_c.device);
	for (int i = 0; i < backend_registry_count; i++) {
		ASSERT(TARGET_API_VERSION, backend_registry[i]->api_version);
		ASSERT_TRUE(backend_registry[i]->tir_to_runtime || backend_registry[i]->relay_to_runtime);
	}
}

/*
 * A rejected target string frees everything it allocated: after the
 * context is released the heap is back where it was (glibc's count of bytes
 * in use; under ASan, LeakSanitizer reports the same leak).
 */
static void test_usage_errors_do_not_leak(void)
{
	static const char *const bad[] = {
		"cuda", "", "c -foo=1", "c threads=4", "c -threads=300", "c -threads=x",
		"fake -tile=2 -unroll=5",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t before, after;

		/* once to warm up anything allocated on first use */
		for (int pass = 0; pass < 2; pass++) {
			struct fixture f;

			if (pass == 1)
				before = mallinfo2().uordblks;
			fx_init(&f);
			ASSERT_TRUE(target_parse(&f.ctx, kinds, NK, bad[i]) == NULL);
			fx_release(&f);
		}
		after = mallinfo2().uordblks;
		if (after != before)
			fprintf(stderr, "  '%s': %zu bytes still allocated\n", bad[i], after - before);
		ASSERT(before, after);
	}
}

/* ---- generic lowering ---- */

static void test_lower_generic_add(void)
{
	struct fixture f;
	struct graph *g;
	struct target *t;
	struct partition p;
	struct shape s23 = { 2, { dim_const(2), dim_const(3) } }, s3 = { 1, { dim_const(3) } };
	int x, y, z, in[2], nodes[1];
	float xs[6] = { 1, 2, 3, 4, 5, 6 }, ys[3] = { 10, 20, 30 }, zs[6] = { 0 };
	void *bufs[3] = { xs, ys, zs };
	struct kernel *k;

	fx_init(&f);
	g = graph_new(&f.ctx);
	x = graph_add_value(g, "x");
	y = graph_add_value(g, "y");
	z = graph_add_value(g, "z");
	g->values.v[x].dtype = g->values.v[y].dtype = DTYPE_F32;
	g->values.v[x].shape = s23;
	g->values.v[y].shape = s3;
	g->values.v[x].has_shape = g->values.v[y].has_shape = true;
	in[0] = x;
	in[1] = y;
	nodes[0] = graph_add_node(g, OP_ADD, "add", in, 2, &z, 1);
	g->nodes.v[0].op_type = "Add";
	ASSERT(0, op_info(OP_ADD)->infer(g, &g->nodes.v[0]));
	t = target_parse(&f.ctx, kinds, NK, "c");
	ASSERT_TRUE(t != NULL);
	memset(&p, 0, sizeof(p));
	p.id = 3;
	p.target = t;
	p.n_nodes = 1;
	p.nodes = nodes;
	ASSERT(0, target_lower_generic(g, t, &p));
	ASSERT(1, p.kernels.n);
	k = &p.kernels.v[0];
	ASSERT_STR("k3_0_Add", k->name);
	ASSERT_STR("k3_0_Add", k->func->name);
	ASSERT(3, k->n_args);
	ASSERT(2, k->n_inputs);
	ASSERT(x, k->args[0]);
	ASSERT(y, k->args[1]);
	ASSERT(z, k->args[2]);
	ASSERT(3, k->func->n_bufs);
	/* the kernel computes x + y with broadcasting */
	ASSERT(0, tir_interpret(k->func, bufs, NULL));
	ASSERT_TRUE(zs[0] == 11 && zs[1] == 22 && zs[2] == 33);
	ASSERT_TRUE(zs[3] == 14 && zs[4] == 25 && zs[5] == 36);
	/* and the c target prints it as a kernel with the executor's ABI */
	{
		struct runtime_module m;

		memset(&m, 0, sizeof(m));
		ASSERT(0, target_kind_c.tir_to_runtime(g, t, &p, &m));
		ASSERT_TRUE(strstr(sb_str(&m.source), "RT_KERNEL void k3_0_Add(void *const *bufs, "
					      "const int64_t *syms, int threads)\n{\n") != NULL);
		ASSERT_TRUE(strstr(sb_str(&m.source), "\tfloat *restrict b2 = bufs[2];\n") != NULL);
		sb_release(&m.source);
		vec_free(&m.ldlibs);
	}
	vec_free(&p.kernels);
	graph_free(g);
	fx_release(&f);
}

TESTS({ "parse_plain_c", test_parse_plain_c },
      { "parse_c_threads", test_parse_c_threads },
      { "parse_options_canonical_order", test_parse_options_canonical_order },
      { "unknown_kind", test_unknown_kind },
      { "unknown_kind_with_only_c", test_unknown_kind_with_only_c },
      { "unknown_option", test_unknown_option },
      { "malformed_option", test_malformed_option },
      { "bad_option_value", test_bad_option_value },
      { "empty_string", test_empty_string },
      { "kind_find_and_registry", test_kind_find_and_registry },
      { "usage_errors_do_not_leak", test_usage_errors_do_not_leak },
      { "lower_generic_add", test_lower_generic_add })
