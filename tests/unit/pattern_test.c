/*
 * pattern_test.c - the pattern language: parsing (rules, lets, op sets,
 * predicates), diagnostics with FILE:LINE:COL and a caret, matching
 * (wildcards, const, numbers, alternatives, optional and further inputs,
 * attribute predicates with ONNX defaults, one exit, backtracking), the
 * built-in tables, and the "none" placement of pattern partitions.
 */
#include "../../backends/backends.h"
#include "../../core/collage/collage.h"
#include "../../core/ops/ops.h"
#include "test.h"

static const struct target_kind pat_kind = {
	.api_version = TARGET_API_VERSION,
	.name = "pat",
	.device = "cpu",
	.description = "test kind whose only rule is its patterns",
	.patterns = "none-such.pat",	/* patterns only; never loaded here */
};

static const struct target_kind *const kinds[] = { &target_kind_c, &pat_kind };
#define NK ((int)ARRAY_SIZE(kinds))

struct fixture {
	struct collagec_ctx ctx;
	struct strbuf cap;
	struct pattern_set set;
	struct graph *g;
};

static void fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	ctx_init(&f->ctx);
	f->ctx.diag_out = NULL;
	f->ctx.capture = &f->cap;
}

static void fx_release(struct fixture *f)
{
	if (f->g)
		graph_free(f->g);
	pattern_set_release(&f->set);
	sb_release(&f->cap);
	ctx_release(&f->ctx);
}

static int parse(struct fixture *f, const char *text)
{
	return pattern_parse(&f->ctx, "t.pat", text, kinds, NK, &f->set);
}

/* Parsing text fails with exactly this diagnostic (three lines). */
static void expect_error(const char *text, const char *want)
{
	struct fixture f;

	fx_init(&f);
	ASSERT(-1, parse(&f, text));
	ASSERT_STR(want, sb_str(&f.cap));
	ASSERT(1, f.ctx.n_errors);
	ASSERT(STATUS_USAGE, f.ctx.status);
	fx_release(&f);
}

static void test_parse_rules(void)
{
	struct fixture f;

	fx_init(&f);
	ASSERT(0, parse(&f, "# comment\n"
			"target pat\n"
			"let act = {Relu|Tanh}\n"
			"let mm = MatMul(*, const) |\n"
			"         Gemm(*, const, const?)\n"
			"fused = $act(Add($mm, const))   # trailing comment\n"
			"conv = Conv(*, const, ...)[group == 1, dtype == float32,\n"
			"                           auto_pad != \"VALID\", strides == [1, 1]]\n"
			"target c\n"
			"one = Relu(*)\n"));
	ASSERT(3, f.set.rules.n);
	ASSERT_STR("fused", f.set.rules.v[0].name);
	ASSERT_STR("pat", f.set.rules.v[0].target);
	ASSERT(6, f.set.rules.v[0].line);
	ASSERT_STR("$act(Add($mm, const))", f.set.rules.v[0].text);
	ASSERT_STR("Conv(*, const, ...)[group == 1, dtype == float32, auto_pad != \"VALID\", "
		   "strides == [1, 1]]", f.set.rules.v[1].text);
	ASSERT_STR("c", f.set.rules.v[2].target);
	ASSERT_STR("t.pat", f.set.rules.v[2].file);
	ASSERT(0, f.ctx.n_errors);
	fx_release(&f);
}

static void test_parse_errors(void)
{
	expect_error("target pat\nx = Relu(MatMul(*, *)\ny = Relu(*)\n",
		     "collagec: error: t.pat:2:9: '(' is not closed (found 'y' at line 3)\n"
		     "    x = Relu(MatMul(*, *)\n"
		     "            ^\n");
	expect_error("target pat\nx = Reluu(*)\n",
		     "collagec: error: t.pat:2:5: unknown op 'Reluu'; did you mean 'Relu'?\n"
		     "    x = Reluu(*)\n"
		     "        ^\n");
	expect_error("target pat\nx = Conv(*, *)[grup == 1]\n",
		     "collagec: error: t.pat:2:16: Conv has no attribute 'grup' (it has auto_pad, "
		     "dilations, group, kernel_shape, pads, strides)\n"
		     "    x = Conv(*, *)[grup == 1]\n"
		     "                   ^\n");
	expect_error("target pat\nx = Conv(*, *)[group == \"one\"]\n",
		     "collagec: error: t.pat:2:25: Conv.group is an integer: it compares with a "
		     "number\n"
		     "    x = Conv(*, *)[group == \"one\"]\n"
		     "                            ^\n");
	expect_error("target pat\nx = Conv(*, *)[auto_pad < \"SAME\"]\n",
		     "collagec: error: t.pat:2:27: Conv.auto_pad is a string: it compares with == "
		     "or != (a string)\n"
		     "    x = Conv(*, *)[auto_pad < \"SAME\"]\n"
		     "                              ^\n");
	expect_error("target woof\n",
		     "collagec: error: t.pat:1:8: unknown target kind 'woof' (kinds: c, pat)\n"
		     "    target woof\n"
		     "           ^\n");
	expect_error("x = Relu(*)\n",
		     "collagec: error: t.pat:1:1: rule 'x' before any 'target KIND' line\n"
		     "    x = Relu(*)\n"
		     "    ^\n");
	expect_error("target c\nx = * | const\n",
		     "collagec: error: t.pat:2:5: a rule must match a node: its pattern (each "
		     "alternative) must be an op call, not *, const or a number\n"
		     "    x = * | const\n"
		     "        ^\n");
	expect_error("target c\nx = Relu($y)\n",
		     "collagec: error: t.pat:2:11: no 'let y' above\n"
		     "    x = Relu($y)\n"
		     "              ^\n");
	expect_error("target c\nx = Relu(*)\nx = Tanh(*)\n",
		     "collagec: error: t.pat:3:1: rule 'c.x' is already defined at t.pat:2\n"
		     "    x = Tanh(*)\n"
		     "    ^\n");
	expect_error("target c\nx = Concat(..., *)\n",
		     "collagec: error: t.pat:2:17: '...' must be the last input\n"
		     "    x = Concat(..., *)\n"
		     "                    ^\n");
	expect_error("target c\nx = Relu(*) Tanh(*)\n",
		     "collagec: error: t.pat:2:13: expected '|' or the end of the line, found "
		     "'Tanh'\n"
		     "    x = Relu(*) Tanh(*)\n"
		     "                ^\n");
	expect_error("target c\nx = Relu(*)[dtype == float33]\n",
		     "collagec: error: t.pat:2:22: dtype compares with a dtype name such as float32\n"
		     "    x = Relu(*)[dtype == float33]\n"
		     "                         ^\n");
	expect_error("target c\nx = Relu(*)[dtype ! float32]\n",
		     "collagec: error: t.pat:2:19: expected a comparison (== != < <= > >=), found "
		     "'!'\n"
		     "    x = Relu(*)[dtype ! float32]\n"
		     "                      ^\n");
	expect_error("target c\n\tx = Relu(*) ~\n",
		     "collagec: error: t.pat:2:14: expected '|' or the end of the line, found "
		     "'~'\n"
		     "    \tx = Relu(*) ~\n"
		     "    \t            ^\n");
}

/* ---- matching on a small graph ---- */

/*
 * x -> MatMul(x, W) -> Add(., B) -> Relu -> y, and a side branch
 * LeakyRelu(x) -> z; Gemm(x, W2)[transB=1] -> Add(., 1.0) -> Sigmoid -> s.
 */
struct net {
	int x, mm, add, relu, leaky, gemm, add1, sig;
};

/* A float32 value of shape sh: an input of the graph with input. */
static int add_value(struct graph *g, const char *name, const struct shape *sh, bool input)
{
	int v = graph_add_value(g, name);

	g->values.v[v].dtype = DTYPE_F32;
	g->values.v[v].shape = *sh;
	g->values.v[v].has_shape = true;
	if (input) {
		g->values.v[v].flags = VALUE_INPUT;
		vec_push(&g->inputs, v);
	}
	return v;
}

/* Names the nodes' op types and spans, and makes outs[0..n) the outputs. */
static void finish(struct graph *g, const int *outs, int n)
{
	for (int i = 0; i < g->nodes.n; i++) {
		g->nodes.v[i].op_type = op_info(g->nodes.v[i].op)->name;
		node_span_self(g, &g->nodes.v[i]);
	}
	for (int i = 0; i < n; i++) {
		vec_push(&g->outputs, outs[i]);
		g->values.v[outs[i]].flags |= VALUE_OUTPUT;
	}
}

static void build(struct fixture *f, struct net *n, bool tap_add)
{
	struct graph *g = graph_new(&f->ctx);
	struct shape s2 = { 2, { dim_const(2), dim_const(2) } }, s1 = { 1, { dim_const(2) } };
	struct shape s0 = { 0, { { 0 } } };
	float w[4] = { 1, 2, 3, 4 }, b[2] = { 1, 1 }, one = 1;
	int x, W, B, W2, ONE, t[8];

	f->g = g;
	x = add_value(g, "x", &s2, true);
	W = graph_add_const(g, "W", DTYPE_F32, &s2, w);
	B = graph_add_const(g, "B", DTYPE_F32, &s1, b);
	W2 = graph_add_const(g, "W2", DTYPE_F32, &s2, w);
	ONE = graph_add_const(g, "one", DTYPE_F32, &s0, &one);
	for (int i = 0; i < 8; i++)
		t[i] = add_value(g, arena_printf(g->arena, "t%d", i), &s2, false);
	n->x = x;
	n->mm = graph_add_node(g, OP_MATMUL, "mm", (int[]){ x, W }, 2, &t[0], 1);
	n->add = graph_add_node(g, OP_ADD, "add", (int[]){ t[0], B }, 2, &t[1], 1);
	n->relu = graph_add_node(g, OP_RELU, "relu", &t[1], 1, &t[2], 1);
	n->leaky = graph_add_node(g, OP_LEAKYRELU, "leaky", &x, 1, &t[3], 1);
	n->gemm = graph_add_node(g, OP_GEMM, "gemm", (int[]){ x, W2 }, 2, &t[4], 1);
	node_set_attr_int(g, &g->nodes.v[n->gemm], "transB", 1);
	n->add1 = graph_add_node(g, OP_ADD, "add1", (int[]){ t[4], ONE }, 2, &t[5], 1);
	n->sig = graph_add_node(g, OP_SIGMOID, "sig", &t[5], 1, &t[6], 1);
	finish(g, (int[]){ t[2], t[3], t[6], t[1] }, tap_add ? 4 : 3);
}

/* Number of nodes rule r matches at node, or -1 for no match. */
static int match(struct fixture *f, int r, int node)
{
	struct pattern_uses u;
	struct pattern_match m;
	bool ok;

	pattern_uses_init(f->g, &u);
	ok = pattern_match(f->g, &u, f->set.rules.v[r].root, node, &m);
	pattern_uses_release(&u);
	if (ok)
		for (int i = 1; i < m.n_nodes; i++)
			ASSERT_TRUE(m.nodes[i - 1] < m.nodes[i]);
	return ok ? m.n_nodes : -1;
}

static void test_match(void)
{
	struct fixture f;
	struct net n;

	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\n"
			"a = Relu(Add(MatMul(*, const), const))\n"		/* 0 */
			"b = Relu(Add(MatMul(const, *), *))\n"			/* 1 */
			"c = Relu(Add(*, *))\n"					/* 2 */
			"d = {Tanh|Relu}(Add(Gemm(*, *) | MatMul(*, *), *))\n"	/* 3 */
			"e = Sigmoid(Add(Gemm(*, *, *?)[transB == 1], 1))\n"	/* 4 */
			"f = Sigmoid(Add(Gemm(*, *)[transA == 1], *))\n"	/* 5 */
			"g = Sigmoid(Add(Gemm(*, *)[transA == 0, alpha == 1.0], 2))\n" /* 6 */
			"h = LeakyRelu(*)[alpha == 0.01]\n"			/* 7 */
			"i = LeakyRelu(*)[alpha > 0.02]\n"			/* 8 */
			"j = LeakyRelu(*)[dtype == float32]\n"			/* 9 */
			"k = LeakyRelu(*)[dtype != float32]\n"			/* 10 */
			"l = Add(...)\n"					/* 11 */
			"m = Add(*)\n"						/* 12 */
			"n = Relu(Add(MatMul(*, *), *, *?))\n"			/* 13 */
			"o = Relu(Add(MatMul(*, *) | *, *))\n"));		/* 14 */
	build(&f, &n, false);
	ASSERT(3, match(&f, 0, n.relu));
	ASSERT(-1, match(&f, 0, n.add));		/* root is a Relu */
	ASSERT(-1, match(&f, 1, n.relu));		/* x is no constant */
	ASSERT(2, match(&f, 2, n.relu));		/* MatMul stays outside */
	ASSERT(3, match(&f, 3, n.relu));		/* op set, second alternative */
	ASSERT(3, match(&f, 4, n.sig));			/* attribute, optional C, number */
	ASSERT(-1, match(&f, 5, n.sig));		/* transA absent: default 0 */
	ASSERT(-1, match(&f, 6, n.sig));		/* 1.0 is not 2 */
	ASSERT(1, match(&f, 7, n.leaky));		/* default alpha, float compare */
	ASSERT(-1, match(&f, 8, n.leaky));
	ASSERT(1, match(&f, 9, n.leaky));
	ASSERT(-1, match(&f, 10, n.leaky));
	ASSERT(1, match(&f, 11, n.add));
	ASSERT(-1, match(&f, 12, n.add));		/* a second input, no "..." */
	ASSERT(3, match(&f, 13, n.relu));		/* absent third input */
	ASSERT(3, match(&f, 14, n.relu));		/* first alternative wins */
	fx_release(&f);

	/* Add's output is also a graph output: a match must have one exit */
	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\na = Relu(Add(MatMul(*, const), const))\n"
			"b = Add(MatMul(*, const), const)\n"));
	build(&f, &n, true);
	ASSERT(-1, match(&f, 0, n.relu));
	ASSERT(2, match(&f, 1, n.add));
	fx_release(&f);
}

/*
 * Matching backtracks: x -> MatMul(x, W) -> a, MatMul(x, W) -> b,
 * Add(a, b) -> y, with b also read by Relu -> z (a graph output). The
 * alternative that takes b's MatMul leaves two exits; the next one (a's
 * MatMul, or b as a wildcard) is tried instead of giving up, through
 * thousands of ways for nested alternatives to fail; not past the steps a
 * match may take (MATCH_STEPS).
 */
static void test_backtrack(void)
{
	struct fixture f;
	struct graph *g;
	struct shape s2 = { 2, { dim_const(2), dim_const(2) } };
	float w[4] = { 1, 2, 3, 4 };
	int x, W, t[4], add;

	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\n"
			"let x = * | * | * | * | * | * | * | * | * | * | * | * | * | * | * | *\n"
			"let y = $x | $x | $x | $x | $x | $x | $x | $x | $x | $x | $x | $x | "
			"$x | $x | $x | $x\n"
			"r = Add(*, MatMul(*, *)) | Add(MatMul(*, *), *)\n"	/* 0 */
			"s = Add(*, MatMul(*, *) | *)\n"			/* 1 */
			"t = Add(*, MatMul(*, *))\n"				/* 2 */
			/* 16^3 ways for the first alternative to fail, then the second */
			"u = Add($x, MatMul($x, $x)) | Add(MatMul(*, *), *)\n"	/* 3 */
			/* 256^3: past the steps a match may take, so no match */
			"v = Add($y, MatMul($y, $y)) | Add(MatMul(*, *), *)\n"));	/* 4 */
	g = f.g = graph_new(&f.ctx);
	x = add_value(g, "x", &s2, true);
	W = graph_add_const(g, "W", DTYPE_F32, &s2, w);
	for (int i = 0; i < 4; i++)
		t[i] = add_value(g, arena_printf(g->arena, "t%d", i), &s2, false);
	graph_add_node(g, OP_MATMUL, "a", (int[]){ x, W }, 2, &t[0], 1);
	graph_add_node(g, OP_MATMUL, "b", (int[]){ x, W }, 2, &t[1], 1);
	add = graph_add_node(g, OP_ADD, "add", (int[]){ t[0], t[1] }, 2, &t[2], 1);
	graph_add_node(g, OP_RELU, "relu", &t[1], 1, &t[3], 1);
	finish(g, (int[]){ t[2], t[3] }, 2);
	ASSERT(2, match(&f, 0, add));	/* the second alternative: a's MatMul */
	ASSERT(1, match(&f, 1, add));	/* b as the wildcard */
	ASSERT(-1, match(&f, 2, add));	/* no alternative: b's MatMul has two exits */
	ASSERT(2, match(&f, 3, add));
	ASSERT(-1, match(&f, 4, add));
	fx_release(&f);
}

static void test_place_none(void)
{
	struct fixture f;
	struct net n;
	struct target *ts[2];
	struct partition *parts;
	int np;

	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\n"
			"mm = Relu(Add(MatMul(*, const), const))\n"
			"small = Add(MatMul(*, const), const)\n"
			"gemm = Sigmoid(Add(Gemm(*, *), *))\n"));
	build(&f, &n, false);
	ts[0] = target_parse(&f.ctx, kinds, NK, "pat");
	ts[1] = target_parse(&f.ctx, kinds, NK, "c");
	ASSERT(0, collage_place_none(f.g, ts, 2, &f.set, &parts, &np));
	/* in the order of their roots: mm+add+relu, leaky, gemm+add1+sig */
	ASSERT(3, np);
	ASSERT_STR("pat.mm", parts[0].rule);
	ASSERT(3, parts[0].n_nodes);
	ASSERT(n.relu, parts[0].nodes[2]);
	ASSERT(3, parts[0].span.n);
	ASSERT_TRUE(parts[1].target == ts[1]);
	ASSERT_STR("LeakyRelu", parts[1].rule);
	ASSERT_STR("pat.gemm", parts[2].rule);
	ASSERT(2, parts[2].id);
	fx_release(&f);

	/* a patterns-only target alone: the LeakyRelu has no target */
	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\nmm = Relu(Add(MatMul(*, const), const))\n"
			"gemm = Sigmoid(Add(Gemm(*, *), *))\n"));
	build(&f, &n, false);
	ts[0] = target_parse(&f.ctx, kinds, NK, "pat");
	ASSERT(-1, collage_place_none(f.g, ts, 1, &f.set, &parts, &np));
	ASSERT_STR("collagec: error: model: node 'leaky' (LeakyRelu): no target in the list "
		   "supports this op\n", sb_str(&f.cap));
	ASSERT(1, f.ctx.n_errors);
	fx_release(&f);
}

/* clear: forget the current target's rules so far, the built-in table too */
static void test_clear(void)
{
	struct fixture f;

	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\na = Relu(*)\nb = Tanh(*)\ntarget c\nc = Relu(*)\n"));
	ASSERT(0, pattern_parse(&f.ctx, "u.pat", "target pat\nclear\nb = Sigmoid(*)\n", kinds, NK,
				&f.set));
	ASSERT(2, f.set.rules.n);
	ASSERT_STR("c", f.set.rules.v[0].target);
	ASSERT_STR("b", f.set.rules.v[1].name);
	ASSERT_STR("u.pat", f.set.rules.v[1].file);
	fx_release(&f);
	expect_error("clear\n",
		     "collagec: error: t.pat:1:1: 'clear' before any 'target KIND' line\n"
		     "    clear\n"
		     "    ^\n");
	expect_error("target c x = Relu(*)\n",
		     "collagec: error: t.pat:1:10: expected the end of the line after 'target c', "
		     "found 'x'\n"
		     "    target c x = Relu(*)\n"
		     "             ^\n");
}

/* The shipped tables parse (they are embedded in collagec). */
/* Attributes of opsets 18 to 23 (attrs.def's hand table) parse with their kinds. */
static void test_later_attrs(void)
{
	struct fixture f;

	fx_init(&f);
	ASSERT(0, parse(&f, "target pat\n"
			"g = Gelu(*)[approximate == \"tanh\"]\n"
			"r = Resize(*, ...)[antialias == 0, keep_aspect_ratio_policy == \"stretch\"]\n"
			"n = GroupNormalization(*, const, const)[num_groups == 4]\n"
			"p = AveragePool(*)[dilations == [1, 1]]\n"
			"m = ReduceMax(*, ...)[noop_with_empty_axes == 0]\n"));
	ASSERT(5, f.set.rules.n);
	ASSERT(0, f.ctx.n_errors);
	fx_release(&f);
	expect_error("target pat\nx = Split(*)[num_outputs == \"two\"]\n",
		     "collagec: error: t.pat:2:29: Split.num_outputs is an integer: it compares "
		     "with a number\n"
		     "    x = Split(*)[num_outputs == \"two\"]\n"
		     "                                ^\n");
}

static void test_builtin_tables(void)
{
	struct fixture f;
	int blas = 0;

	fx_init(&f);
	ASSERT(0, pattern_load(&f.ctx, backend_registry, backend_registry_count, NULL, 0, &f.set));
	for (int i = 0; i < f.set.rules.n; i++)
		blas += !strcmp(f.set.rules.v[i].target, "blas");
	ASSERT_TRUE(blas >= 4);
	fx_release(&f);
}

TESTS({ "parse_rules", test_parse_rules },
      { "parse_errors", test_parse_errors },
      { "match", test_match },
      { "backtrack", test_backtrack },
      { "place_none", test_place_none },
      { "clear", test_clear },
      { "later_attrs", test_later_attrs },
      { "builtin_tables", test_builtin_tables })
