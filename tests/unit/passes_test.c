/*
 * passes_test.c - graph passes on hand-built graphs: fold-bn (folds, with
 * weights equal to the formula and the same results as Conv then BN; does
 * not fold when the Conv output has another user), DCE, simplify, constant
 * folding, rnn-project, layernorm (merges the written-out form; leaves it
 * when an intermediate has another reader, the axes are not the last ones,
 * the power is not 2 or epsilon is not a constant), qdq (fuses a QDQ Conv
 * group with a bias and a Relu into QLinearConv; leaves it float when the
 * bias scale is not x_scale * w_scale or the Relu clamps inside y's range),
 * and the pass runner.
 */
#include "../../core/ops/ops.h"
#include "../../core/passes/passes.h"
#include "test.h"

#include <math.h>
#include <sys/stat.h>

struct fixture {
	struct collagec_ctx ctx;
	struct strbuf cap;
	struct graph *g;
};

static void fx_init(struct fixture *f)
{
	ctx_init(&f->ctx);
	f->ctx.diag_out = NULL;
	memset(&f->cap, 0, sizeof(f->cap));
	f->ctx.capture = &f->cap;
	f->g = graph_new(&f->ctx);
	f->g->opset = 17;
}

static void fx_release(struct fixture *f)
{
	graph_free(f->g);
	sb_release(&f->cap);
	ctx_release(&f->ctx);
}

static int add_node(struct graph *g, enum op op, const char *name, const int *in, int n_in,
		    const int *out, int n_out)
{
	int id = graph_add_node(g, op, name, in, n_in, out, n_out);
	struct node *n = &g->nodes.v[id];

	n->op_type = op_info(op)->name;
	node_span_self(g, n);
	return id;
}

static int add_input(struct graph *g, const char *name, enum dtype t, const struct shape *s)
{
	int v = graph_add_value(g, name);

	g->values.v[v].dtype = t;
	g->values.v[v].shape = *s;
	g->values.v[v].has_shape = true;
	g->values.v[v].flags |= VALUE_INPUT;
	vec_push(&g->inputs, v);
	return v;
}

static int add_output(struct graph *g, const char *name)
{
	int v = graph_add_value(g, name);

	g->values.v[v].flags |= VALUE_OUTPUT;
	vec_push(&g->outputs, v);
	return v;
}

static void set_attr_float(struct graph *g, struct node *n, const char *name, double v)
{
	struct attr *na = arena_alloc(g->arena, sizeof(*na) * (size_t)(n->n_attrs + 1));

	if (n->n_attrs)
		memcpy(na, n->attrs, sizeof(*na) * (size_t)n->n_attrs);
	na[n->n_attrs].name = arena_strdup(g->arena, name);
	na[n->n_attrs].kind = ATTR_FLOAT;
	na[n->n_attrs].f = v;
	n->attrs = na;
	n->n_attrs++;
}

static int live_nodes(struct graph *g)
{
	int k = 0;

	for (int i = 0; i < g->nodes.n; i++)
		k += !g->nodes.v[i].dead;
	return k;
}

static const struct shape S1 = { 1, { { 3, 0, { 0 } } } };	/* [3] */

/* ---- Conv + BatchNormalization ---- */

enum { OC = 3, IC = 2, HW = 4 };

static const float conv_w[OC * IC * 2 * 2] = {
	0.5f, -1, 0.25f, 2, 1, 1, -0.5f, 0.75f,
	-2, 0.125f, 1.5f, -1, 0.3f, 0.7f, -0.9f, 1.1f,
	1, 2, 3, 4, -4, -3, -2, -1,
};
static const float conv_b[OC] = { 0.1f, -0.2f, 0.3f };
static const float bn_scale[OC] = { 1.5f, -0.5f, 2 };
static const float bn_beta[OC] = { 0.25f, 1, -1 };
static const float bn_mean[OC] = { 0.5f, -1, 2 };
static const float bn_var[OC] = { 4, 0.25f, 0.01f };
#define BN_EPS 1e-3

struct convbn {
	int x, w, b, c, y;
	int conv, bn;
};

/* x[1,IC,HW,HW] -> Conv(W[OC,IC,2,2], B) -> c -> BN -> y (graph output) */
static void build_conv_bn(struct graph *g, struct convbn *cb, bool with_bias)
{
	struct shape xs = { 4, { dim_const(1), dim_const(IC), dim_const(HW), dim_const(HW) } };
	struct shape ws = { 4, { dim_const(OC), dim_const(IC), dim_const(2), dim_const(2) } };
	struct shape vs = { 1, { dim_const(OC) } };
	int in[5];

	cb->x = add_input(g, "x", DTYPE_F32, &xs);
	cb->w = graph_add_const(g, "W", DTYPE_F32, &ws, conv_w);
	cb->b = with_bias ? graph_add_const(g, "B", DTYPE_F32, &vs, conv_b) : -1;
	cb->c = graph_add_value(g, "c");
	cb->y = add_output(g, "y");
	in[0] = cb->x;
	in[1] = cb->w;
	in[2] = cb->b;
	cb->conv = add_node(g, OP_CONV, "conv1", in, with_bias ? 3 : 2, &cb->c, 1);
	in[0] = cb->c;
	in[1] = graph_add_const(g, "scale", DTYPE_F32, &vs, bn_scale);
	in[2] = graph_add_const(g, "beta", DTYPE_F32, &vs, bn_beta);
	in[3] = graph_add_const(g, "mean", DTYPE_F32, &vs, bn_mean);
	in[4] = graph_add_const(g, "var", DTYPE_F32, &vs, bn_var);
	cb->bn = add_node(g, OP_BATCHNORMALIZATION, "bn1", in, 5, &cb->y, 1);
	set_attr_float(g, &g->nodes.v[cb->bn], "epsilon", BN_EPS);
}

static void input_data(float *x)
{
	for (int i = 0; i < IC * HW * HW; i++)
		x[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
}

/* Runs node n through its lowering and the interpreter (present inputs, then outputs). */
static void run_node(struct graph *g, struct node *n, void **bufs)
{
	struct tir_func *f = op_lower_node(g, n, "k");

	ASSERT_TRUE(f != NULL);
	ASSERT(0, tir_interpret(f, bufs, NULL));
}

static void check_fold_bn(bool with_bias)
{
	struct fixture f;
	struct convbn cb;
	float x[IC * HW * HW], c[OC * 3 * 3], want[OC * 3 * 3], got[OC * 3 * 3];
	struct node *conv;
	struct value *nw, *nb;

	fx_init(&f);
	build_conv_bn(f.g, &cb, with_bias);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	input_data(x);
	/* reference: Conv then BN, through the ops' own lowering */
	{
		void *b1[4], *b2[6];
		int k = 0;

		b1[k++] = x;
		b1[k++] = f.g->values.v[cb.w].data;
		if (with_bias)
			b1[k++] = f.g->values.v[cb.b].data;
		b1[k++] = c;
		run_node(f.g, &f.g->nodes.v[cb.conv], b1);
		b2[0] = c;
		for (int i = 1; i < 5; i++)
			b2[i] = f.g->values.v[f.g->nodes.v[cb.bn].in[i]].data;
		b2[5] = want;
		run_node(f.g, &f.g->nodes.v[cb.bn], b2);
	}

	ASSERT(0, pass_fold_bn(f.g));
	graph_verify(f.g);
	ASSERT(1, f.g->nodes.n);
	conv = &f.g->nodes.v[0];
	ASSERT(OP_CONV, conv->op);
	ASSERT_STR("conv1", conv->name);
	ASSERT(1, conv->n_out);
	ASSERT(cb.y, conv->out[0]);	/* it now writes the BN's output */
	ASSERT(0, f.g->values.v[cb.y].producer);
	ASSERT(-1, f.g->values.v[cb.c].producer);
	ASSERT(3, conv->n_in);
	ASSERT(cb.x, conv->in[0]);
	/* spans of both nodes */
	ASSERT(2, conv->span.n);
	ASSERT_STR("conv1", conv->span.names[0]);
	ASSERT_STR("bn1", conv->span.names[1]);
	ASSERT_STR("BatchNormalization", conv->span.types[1]);
	/* new constant weights: W' = W * s, B' = (B - mean) * s + beta */
	nw = &f.g->values.v[conv->in[1]];
	nb = &f.g->values.v[conv->in[2]];
	ASSERT_TRUE(conv->in[1] != cb.w);
	ASSERT_TRUE(nw->data != NULL && nb->data != NULL);
	ASSERT(DTYPE_F32, nw->dtype);
	ASSERT(DTYPE_F32, nb->dtype);
	ASSERT_TRUE(shape_eq(&nw->shape, &f.g->values.v[cb.w].shape));
	ASSERT(1, nb->shape.rank);
	ASSERT(OC, nb->shape.d[0].c);
	ASSERT_STR("conv1.folded_W", nw->name);
	ASSERT_STR("conv1.folded_B", nb->name);
	for (int o = 0; o < OC; o++) {
		double s = bn_scale[o] / sqrt((double)bn_var[o] + BN_EPS);
		double b0 = with_bias ? conv_b[o] : 0.0;

		for (int k = 0; k < IC * 4; k++) {
			float ew = (float)(conv_w[o * IC * 4 + k] * s);

			ASSERT_TRUE(((float *)nw->data)[o * IC * 4 + k] == ew);
		}
		ASSERT_TRUE(((float *)nb->data)[o] == (float)((b0 - bn_mean[o]) * s + bn_beta[o]));
	}
	/* the weights were the Conv's alone: folded where they were, not copied */
	ASSERT_TRUE(nw->data == f.g->values.v[cb.w].data);
	/* and the folded Conv computes what Conv + BN computed */
	{
		void *b[4] = { x, nw->data, nb->data, got };

		run_node(f.g, conv, b);
		for (int i = 0; i < OC * 9; i++) {
			double tol = 1e-5 * (1 + fabs(want[i]));

			if (fabs(got[i] - want[i]) > tol)
				fprintf(stderr, "  element %d: folded %.9g, conv+bn %.9g\n", i,
					got[i], want[i]);
			ASSERT_TRUE(fabs(got[i] - want[i]) <= tol);
		}
	}
	ASSERT(0, f.ctx.n_errors);
	fx_release(&f);
}

static void test_fold_bn_folds(void)
{
	check_fold_bn(true);
}

static void test_fold_bn_folds_without_bias(void)
{
	check_fold_bn(false);
}

/* The Conv output is also read by a Relu: folding would change the Relu's input. */
static void test_fold_bn_second_user(void)
{
	struct fixture f;
	struct convbn cb;
	int r;

	fx_init(&f);
	build_conv_bn(f.g, &cb, true);
	r = add_output(f.g, "r");
	add_node(f.g, OP_RELU, "relu1", &cb.c, 1, &r, 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold_bn(f.g));
	graph_verify(f.g);
	ASSERT(3, f.g->nodes.n);
	ASSERT(OP_CONV, f.g->nodes.v[0].op);
	ASSERT(OP_BATCHNORMALIZATION, f.g->nodes.v[1].op);
	ASSERT(cb.w, f.g->nodes.v[0].in[1]);	/* weights unchanged */
	ASSERT(cb.c, f.g->nodes.v[0].out[0]);
	ASSERT(cb.c, f.g->nodes.v[1].in[0]);
	ASSERT(1, f.g->nodes.v[0].span.n);
	fx_release(&f);
}

/*
 * Weights whose buffer another value holds too (an initializer a function
 * imports at each of its calls) are folded into a copy: the other value
 * keeps reading the model's weights.
 */
static void test_fold_bn_shared_weights(void)
{
	struct fixture f;
	struct convbn cb;
	const struct value *nw;
	int alias;

	fx_init(&f);
	build_conv_bn(f.g, &cb, true);
	alias = graph_adopt_const(f.g, "W.again", DTYPE_F32, &f.g->values.v[cb.w].shape,
				  f.g->values.v[cb.w].data);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold_bn(f.g));
	ASSERT(1, f.g->nodes.n);
	nw = &f.g->values.v[f.g->nodes.v[0].in[1]];
	ASSERT_STR("conv1.folded_W", nw->name);
	ASSERT_TRUE(nw->data != f.g->values.v[alias].data);
	ASSERT(0, memcmp(f.g->values.v[alias].data, conv_w, sizeof(conv_w)));
	ASSERT(0, memcmp(f.g->values.v[cb.w].data, conv_w, sizeof(conv_w)));
	fx_release(&f);
}

/* The Conv output is itself a graph output: it must stay computed. */
static void test_fold_bn_conv_output_is_graph_output(void)
{
	struct fixture f;
	struct convbn cb;

	fx_init(&f);
	build_conv_bn(f.g, &cb, true);
	f.g->values.v[cb.c].flags |= VALUE_OUTPUT;
	vec_push(&f.g->outputs, cb.c);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold_bn(f.g));
	ASSERT(2, f.g->nodes.n);
	ASSERT(OP_BATCHNORMALIZATION, f.g->nodes.v[1].op);
	ASSERT(cb.w, f.g->nodes.v[0].in[1]);
	fx_release(&f);
}

/* Weights fed at run time cannot be folded. */
static void test_fold_bn_non_constant(void)
{
	struct fixture f;
	struct convbn cb;
	struct shape vs = { 1, { dim_const(OC) } };
	int mean_in;

	fx_init(&f);
	build_conv_bn(f.g, &cb, true);
	/* BN mean from a graph input */
	mean_in = add_input(f.g, "mean_in", DTYPE_F32, &vs);
	f.g->nodes.v[cb.bn].in[3] = mean_in;
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold_bn(f.g));
	ASSERT(2, f.g->nodes.n);
	ASSERT(OP_BATCHNORMALIZATION, f.g->nodes.v[1].op);
	fx_release(&f);
}

/* ---- DCE ---- */

static void test_dce(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(3) } };
	int x, a, b, c, d, y, in2[2];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	a = graph_add_value(f.g, "a");
	b = graph_add_value(f.g, "b");
	c = graph_add_value(f.g, "c");
	d = graph_add_value(f.g, "d");
	y = add_output(f.g, "y");
	add_node(f.g, OP_NEG, "unused_neg", &x, 1, &a, 1);	/* a is never read */
	add_node(f.g, OP_EXP, "feeds_y", &x, 1, &b, 1);
	add_node(f.g, OP_RELU, "reads_unused", &a, 1, &c, 1);	/* dead chain */
	add_node(f.g, OP_ABS, "dead_end", &c, 1, &d, 1);
	in2[0] = b;
	in2[1] = x;
	add_node(f.g, OP_ADD, "out", in2, 2, &y, 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_dce(f.g));
	graph_verify(f.g);
	ASSERT(2, f.g->nodes.n);
	ASSERT_STR("feeds_y", f.g->nodes.v[0].name);
	ASSERT_STR("out", f.g->nodes.v[1].name);
	ASSERT(0, f.g->values.v[b].producer);
	ASSERT(1, f.g->values.v[y].producer);
	ASSERT(-1, f.g->values.v[a].producer);
	ASSERT(-1, f.g->values.v[d].producer);
	/* idempotent */
	ASSERT(0, pass_dce(f.g));
	ASSERT(2, f.g->nodes.n);
	fx_release(&f);
}

/* A node with two outputs stays when either one is used. */
static void test_dce_multi_output(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(3) } };
	int x, out[2], y;

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	out[0] = graph_add_value(f.g, "d");
	out[1] = graph_add_value(f.g, "mask");
	y = add_output(f.g, "y");
	add_node(f.g, OP_DROPOUT, "drop", &x, 1, out, 2);
	add_node(f.g, OP_NOT, "not", &out[1], 1, &y, 1);	/* only the mask is used */
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_dce(f.g));
	ASSERT(2, f.g->nodes.n);
	ASSERT_STR("drop", f.g->nodes.v[0].name);
	fx_release(&f);
}

/* ---- simplify ---- */

static void test_simplify_removes_identity(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(3) } };
	int x, a, b, y;

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	a = graph_add_value(f.g, "a");
	b = graph_add_value(f.g, "b");
	y = add_output(f.g, "y");
	add_node(f.g, OP_IDENTITY, "id1", &x, 1, &a, 1);
	add_node(f.g, OP_IDENTITY, "id2", &a, 1, &b, 1);	/* a chain of two */
	add_node(f.g, OP_RELU, "relu", &b, 1, &y, 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_simplify(f.g));
	graph_verify(f.g);
	ASSERT(1, f.g->nodes.n);
	ASSERT_STR("relu", f.g->nodes.v[0].name);
	ASSERT(x, f.g->nodes.v[0].in[0]);	/* reads the Identity's input */
	ASSERT(0, f.g->values.v[y].producer);
	fx_release(&f);
}

/*
 * An Identity naming a graph output goes where its input is computed here
 * and nothing else: the producer writes the output, the input's other
 * users read it.
 */
static void test_simplify_output_identity_writes_output(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(3) } };
	int x, a, y, z;

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	a = graph_add_value(f.g, "a");
	y = add_output(f.g, "y");
	z = add_output(f.g, "z");
	add_node(f.g, OP_RELU, "relu", &x, 1, &a, 1);
	add_node(f.g, OP_IDENTITY, "name_it", &a, 1, &y, 1);	/* names the graph output */
	add_node(f.g, OP_NEG, "neg", &a, 1, &z, 1);		/* a's other user */
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_simplify(f.g));
	graph_verify(f.g);
	ASSERT(2, f.g->nodes.n);
	ASSERT_STR("relu", f.g->nodes.v[0].name);
	ASSERT(y, f.g->nodes.v[0].out[0]);
	ASSERT(0, f.g->values.v[y].producer);
	ASSERT_STR("neg", f.g->nodes.v[1].name);
	ASSERT(y, f.g->nodes.v[1].in[0]);
	fx_release(&f);
}

/*
 * Kept where the output needs a copy: of a graph input, of a value that is
 * itself a graph output (the second of two Identities of one value).
 */
static void test_simplify_keeps_output_identity(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(3) } };
	int x, a, y[3];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	a = graph_add_value(f.g, "a");
	y[0] = add_output(f.g, "y0");
	y[1] = add_output(f.g, "y1");
	y[2] = add_output(f.g, "y2");
	add_node(f.g, OP_IDENTITY, "of_input", &x, 1, &y[0], 1);
	add_node(f.g, OP_RELU, "relu", &x, 1, &a, 1);
	add_node(f.g, OP_IDENTITY, "first", &a, 1, &y[1], 1);	/* relu writes y1 */
	add_node(f.g, OP_IDENTITY, "second", &a, 1, &y[2], 1);	/* then reads y1: kept */
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_simplify(f.g));
	graph_verify(f.g);
	ASSERT(3, f.g->nodes.n);
	ASSERT_STR("of_input", f.g->nodes.v[0].name);
	ASSERT(x, f.g->nodes.v[0].in[0]);
	ASSERT_STR("relu", f.g->nodes.v[1].name);
	ASSERT(y[1], f.g->nodes.v[1].out[0]);
	ASSERT_STR("second", f.g->nodes.v[2].name);
	ASSERT(y[1], f.g->nodes.v[2].in[0]);
	ASSERT(y[2], f.g->nodes.v[2].out[0]);
	fx_release(&f);
}

static void test_simplify_dropout(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(3) } };
	int x, d1, d2[2], y1, y2;

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	d1 = graph_add_value(f.g, "d1");
	d2[0] = graph_add_value(f.g, "d2");
	d2[1] = graph_add_value(f.g, "mask");
	y1 = add_output(f.g, "y1");
	y2 = add_output(f.g, "y2");
	add_node(f.g, OP_DROPOUT, "drop_plain", &x, 1, &d1, 1);	/* removed */
	add_node(f.g, OP_RELU, "r1", &d1, 1, &y1, 1);
	add_node(f.g, OP_DROPOUT, "drop_mask", &x, 1, d2, 2);	/* mask used: kept */
	add_node(f.g, OP_NOT, "r2", &d2[1], 1, &y2, 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_simplify(f.g));
	graph_verify(f.g);
	ASSERT(3, f.g->nodes.n);
	ASSERT_STR("r1", f.g->nodes.v[0].name);
	ASSERT(x, f.g->nodes.v[0].in[0]);
	ASSERT_STR("drop_mask", f.g->nodes.v[1].name);
	ASSERT_STR("r2", f.g->nodes.v[2].name);
	fx_release(&f);
}

/* ---- constant folding ---- */

static void test_fold_constants(void)
{
	struct fixture f;
	struct shape xs = { 3, { dim_const(2), dim_const(4), dim_const(3) } };
	struct shape s0 = { 0 };
	float av[3] = { 1, 2.5f, -1 }, bv = 0.5f;
	int64_t two = 2;
	int x, a, b, sum, shp, two_c, dbl, y, in2[2];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &xs);
	a = graph_add_const(f.g, "a", DTYPE_F32, &S1, av);
	b = graph_add_const(f.g, "b", DTYPE_F32, &s0, &bv);
	sum = graph_add_value(f.g, "sum");
	shp = graph_add_value(f.g, "shp");
	two_c = graph_add_const(f.g, "two", DTYPE_I64, &s0, &two);
	dbl = graph_add_value(f.g, "dbl");
	y = add_output(f.g, "y");
	in2[0] = a;
	in2[1] = b;
	add_node(f.g, OP_ADD, "add_consts", in2, 2, &sum, 1);
	add_node(f.g, OP_SHAPE, "shape_of_x", &x, 1, &shp, 1);
	in2[0] = shp;
	in2[1] = two_c;
	add_node(f.g, OP_MUL, "mul_shape", in2, 2, &dbl, 1);
	in2[0] = x;
	in2[1] = sum;
	add_node(f.g, OP_ADD, "add_x", in2, 2, &y, 1);	/* x is not constant: stays */
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold(f.g));
	graph_verify(f.g);
	ASSERT(1, f.g->nodes.n);
	ASSERT_STR("add_x", f.g->nodes.v[0].name);
	ASSERT_TRUE(f.g->values.v[sum].data != NULL);
	ASSERT(-1, f.g->values.v[sum].producer);
	ASSERT_TRUE(((float *)f.g->values.v[sum].data)[0] == 1.5f);
	ASSERT_TRUE(((float *)f.g->values.v[sum].data)[1] == 3.0f);
	ASSERT_TRUE(((float *)f.g->values.v[sum].data)[2] == -0.5f);
	ASSERT(DTYPE_I64, f.g->values.v[shp].dtype);
	ASSERT_TRUE(f.g->values.v[shp].data != NULL);
	ASSERT(2, ((int64_t *)f.g->values.v[shp].data)[0]);
	ASSERT(4, ((int64_t *)f.g->values.v[shp].data)[1]);
	ASSERT(3, ((int64_t *)f.g->values.v[shp].data)[2]);
	ASSERT_TRUE(f.g->values.v[dbl].data != NULL);
	ASSERT(4, ((int64_t *)f.g->values.v[dbl].data)[0]);
	ASSERT(8, ((int64_t *)f.g->values.v[dbl].data)[1]);
	ASSERT(6, ((int64_t *)f.g->values.v[dbl].data)[2]);
	ASSERT(0, f.ctx.n_errors);
	fx_release(&f);
}

/* A symbolic input's Shape is not a constant. */
static void test_fold_keeps_symbolic_shape(void)
{
	struct fixture f;
	struct shape xs = { 2, { { 1, 1, { 0 } }, dim_const(3) } };
	int x, shp, y;

	fx_init(&f);
	graph_intern_sym(f.g, "N");
	x = add_input(f.g, "x", DTYPE_F32, &xs);
	shp = graph_add_value(f.g, "shp");
	y = add_output(f.g, "y");
	add_node(f.g, OP_SHAPE, "shape_of_x", &x, 1, &shp, 1);
	add_node(f.g, OP_RELU, "relu", &x, 1, &y, 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold(f.g));
	ASSERT(2, f.g->nodes.n);
	ASSERT_TRUE(f.g->values.v[shp].data == NULL);
	fx_release(&f);
}

/* Folds node op over one constant input (reduce over all axes, keepdims=0). */
static void *fold_reduce(struct fixture *f, enum op op, enum dtype t, const void *data, int n)
{
	struct shape s = { 1, { dim_const(n) } };
	int c, y, node;

	c = graph_add_const(f->g, "c", t, &s, data);
	y = add_output(f->g, "y");
	node = add_node(f->g, op, "reduce", &c, 1, &y, 1);
	node_set_attr_int(f->g, &f->g->nodes.v[node], "keepdims", 0);
	ASSERT(0, pass_infer(f->g));
	ASSERT(0, f->g->values.v[y].shape.rank);
	ASSERT(0, pass_fold(f->g));
	ASSERT(0, f->g->nodes.n);
	ASSERT_TRUE(f->g->values.v[y].data != NULL);
	return f->g->values.v[y].data;
}

/* ReduceMin/ReduceMax of int64 constants: the exact extreme element. */
static void test_fold_reduce_int64(void)
{
	static const int64_t v[4] = { 5, -3, 9, 4 };
	static const int64_t big[2] = { INT64_MAX - 1, INT64_MAX - 7 };
	struct fixture f;

	fx_init(&f);
	ASSERT(-3, *(int64_t *)fold_reduce(&f, OP_REDUCEMIN, DTYPE_I64, v, 4));
	fx_release(&f);
	fx_init(&f);
	ASSERT(9, *(int64_t *)fold_reduce(&f, OP_REDUCEMAX, DTYPE_I64, v, 4));
	fx_release(&f);
	fx_init(&f);
	ASSERT(INT64_MAX - 7, *(int64_t *)fold_reduce(&f, OP_REDUCEMIN, DTYPE_I64, big, 2));
	fx_release(&f);
}

/* uint64 values at and above 2^63 compare as unsigned. */
static void test_fold_reduce_uint64(void)
{
	static const uint64_t v[3] = { UINT64_MAX, UINT64_MAX - 2, (UINT64_C(1) << 63) + 1 };
	struct fixture f;

	fx_init(&f);
	ASSERT_TRUE(*(uint64_t *)fold_reduce(&f, OP_REDUCEMIN, DTYPE_U64, v, 3) ==
		    (UINT64_C(1) << 63) + 1);
	fx_release(&f);
	fx_init(&f);
	ASSERT_TRUE(*(uint64_t *)fold_reduce(&f, OP_REDUCEMAX, DTYPE_U64, v, 3) == UINT64_MAX);
	fx_release(&f);
}

/* Elementwise Max/Min of uint64 constants. */
static void test_fold_max_min_uint64(void)
{
	static const uint64_t a[2] = { (UINT64_C(1) << 63) + 5, 3 };
	static const uint64_t b[2] = { 1, UINT64_MAX };
	struct shape s = { 1, { dim_const(2) } };
	struct fixture f;
	int ca, cb, mx, mn, in2[2];

	fx_init(&f);
	ca = graph_add_const(f.g, "a", DTYPE_U64, &s, a);
	cb = graph_add_const(f.g, "b", DTYPE_U64, &s, b);
	mx = add_output(f.g, "mx");
	mn = add_output(f.g, "mn");
	in2[0] = ca;
	in2[1] = cb;
	add_node(f.g, OP_MAX, "max", in2, 2, &mx, 1);
	add_node(f.g, OP_MIN, "min", in2, 2, &mn, 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_fold(f.g));
	ASSERT(0, f.g->nodes.n);
	ASSERT_TRUE(((uint64_t *)f.g->values.v[mx].data)[0] == (UINT64_C(1) << 63) + 5);
	ASSERT_TRUE(((uint64_t *)f.g->values.v[mx].data)[1] == UINT64_MAX);
	ASSERT_TRUE(((uint64_t *)f.g->values.v[mn].data)[0] == 1);
	ASSERT_TRUE(((uint64_t *)f.g->values.v[mn].data)[1] == 3);
	fx_release(&f);
}

/* ---- rnn-project ---- */

/* x [2, 1, 3] -> RNN (W [1, 4, 3] constant or an input, R constant) -> y, y_h. */
static int build_rnn(struct graph *g, bool const_w, int *x, int *w)
{
	struct shape xs = { 3, { dim_const(2), dim_const(1), dim_const(3) } };
	struct shape ws = { 3, { dim_const(1), dim_const(4), dim_const(3) } };
	struct shape rs = { 3, { dim_const(1), dim_const(4), dim_const(4) } };
	float wd[12], rd[16] = { 0 };
	int in[3], out[2];

	for (int i = 0; i < 12; i++)
		wd[i] = (float)i;
	*x = add_input(g, "x", DTYPE_F32, &xs);
	*w = const_w ? graph_add_const(g, "w", DTYPE_F32, &ws, wd)
		: add_input(g, "w", DTYPE_F32, &ws);
	in[0] = *x;
	in[1] = *w;
	in[2] = graph_add_const(g, "r", DTYPE_F32, &rs, rd);
	out[0] = add_output(g, "y");
	out[1] = add_output(g, "y_h");
	return add_node(g, OP_RNN, "rnn1", in, 3, out, 2);
}

/* A constant W becomes W^T [3, 4] of a MatMul on x, which the RNN reads instead. */
static void test_rnn_project_const_w(void)
{
	struct fixture f;
	const struct node *mm, *rnn;
	const struct value *wt;
	int x, w;

	fx_init(&f);
	build_rnn(f.g, true, &x, &w);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_rnn_project(f.g));
	ASSERT(0, f.ctx.n_errors);
	ASSERT(2, f.g->nodes.n);
	mm = &f.g->nodes.v[0];
	rnn = &f.g->nodes.v[1];
	ASSERT(OP_MATMUL, mm->op);
	ASSERT(OP_RNN, rnn->op);
	ASSERT(x, mm->in[0]);
	ASSERT(mm->out[0], rnn->in[0]);
	ASSERT(-1, rnn->in[1]);
	ASSERT(1, mm->span.n);
	ASSERT_STR("rnn1", mm->span.names[0]);
	ASSERT_STR("RNN", mm->span.types[0]);
	wt = &f.g->values.v[mm->in[1]];
	ASSERT(2, wt->shape.rank);
	ASSERT(3, wt->shape.d[0].c);
	ASSERT(4, wt->shape.d[1].c);
	for (int k = 0; k < 3; k++)
		for (int r = 0; r < 4; r++)
			ASSERT_TRUE(((const float *)wt->data)[k * 4 + r] == (float)(r * 3 + k));
	ASSERT(3, f.g->values.v[mm->out[0]].shape.rank);
	ASSERT(4, f.g->values.v[mm->out[0]].shape.d[2].c);
	graph_verify(f.g);
	fx_release(&f);
}

/* A W fed at run time stays the node's own input. */
static void test_rnn_project_input_w(void)
{
	struct fixture f;
	int x, w;

	fx_init(&f);
	build_rnn(f.g, false, &x, &w);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_rnn_project(f.g));
	ASSERT(1, f.g->nodes.n);
	ASSERT(x, f.g->nodes.v[0].in[0]);
	ASSERT(w, f.g->nodes.v[0].in[1]);
	fx_release(&f);
}

/* ---- qdq ---- */

/*
 * xq[1,2,4,4] u8 -> DQ -> Conv(DQ(W int8 per channel), DQ(B int32)) -> Relu
 * -> Q (u8, zero point yz) -> y; the bias scale is x_scale * w_scale, one
 * ulp more for channel 1 when bias_off. Returns the Conv's node index.
 */
static int build_qdq_conv(struct graph *g, bool bias_off, uint8_t yz)
{
	struct shape xs = { 4, { dim_const(1), dim_const(2), dim_const(4), dim_const(4) } };
	struct shape ws = { 4, { dim_const(3), dim_const(2), dim_const(2), dim_const(2) } };
	struct shape vs = { 1, { dim_const(3) } }, one = { 0 };
	static const int8_t w[24] = { 1, -2, 3, -4, 5, -6, 7, -8, 9, 10, 11, 12,
				      -1, -1, 2, 2, 3, 3, -4, -4, 5, 5, 6, 6 };
	static const int8_t wz[3] = { 0, 1, -1 };
	static const int32_t bias[3] = { 100, -200, 300 };
	const float xsc = 0.05f, ysc = 0.1f, wsc[3] = { 0.01f, 0.02f, 0.03f };
	float bsc[3];
	uint8_t xz = 128, zero8 = 0;
	static const int32_t zero32[3];
	int in[3], dq[3], c, r, y, conv;
	struct node *n;

	for (int i = 0; i < 3; i++)
		bsc[i] = xsc * wsc[i];
	if (bias_off)
		bsc[1] = nextafterf(bsc[1], 1.0f);
	in[0] = add_input(g, "xq", DTYPE_U8, &xs);
	in[1] = graph_add_const(g, "x_scale", DTYPE_F32, &one, &xsc);
	in[2] = graph_add_const(g, "x_zp", DTYPE_U8, &one, &xz);
	dq[0] = graph_add_value(g, "x");
	add_node(g, OP_DEQUANTIZELINEAR, "dq_x", in, 3, &dq[0], 1);
	in[0] = graph_add_const(g, "wq", DTYPE_I8, &ws, w);
	in[1] = graph_add_const(g, "w_scale", DTYPE_F32, &vs, wsc);
	in[2] = graph_add_const(g, "w_zp", DTYPE_I8, &vs, wz);
	dq[1] = graph_add_value(g, "w");
	n = &g->nodes.v[add_node(g, OP_DEQUANTIZELINEAR, "dq_w", in, 3, &dq[1], 1)];
	node_set_attr_int(g, n, "axis", 0);
	in[0] = graph_add_const(g, "bq", DTYPE_I32, &vs, bias);
	in[1] = graph_add_const(g, "b_scale", DTYPE_F32, &vs, bsc);
	in[2] = graph_add_const(g, "b_zp", DTYPE_I32, &vs, zero32);
	dq[2] = graph_add_value(g, "b");
	n = &g->nodes.v[add_node(g, OP_DEQUANTIZELINEAR, "dq_b", in, 3, &dq[2], 1)];
	node_set_attr_int(g, n, "axis", 0);
	c = graph_add_value(g, "c");
	conv = add_node(g, OP_CONV, "conv", dq, 3, &c, 1);
	r = graph_add_value(g, "r");
	add_node(g, OP_RELU, "relu", &c, 1, &r, 1);
	in[0] = r;
	in[1] = graph_add_const(g, "y_scale", DTYPE_F32, &one, &ysc);
	in[2] = graph_add_const(g, "y_zp", DTYPE_U8, &one, yz ? &yz : &zero8);
	y = add_output(g, "y");
	add_node(g, OP_QUANTIZELINEAR, "q_y", in, 3, &y, 1);
	return conv;
}

/* The whole group becomes one QLinearConv with every node's span. */
static void test_qdq_fuses_conv(void)
{
	struct fixture f;
	struct node *n;

	fx_init(&f);
	build_qdq_conv(f.g, false, 0);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_qdq(f.g));
	ASSERT(0, f.ctx.n_errors);
	ASSERT(1, live_nodes(f.g));
	n = &f.g->nodes.v[0];
	ASSERT(OP_QLINEARCONV, n->op);
	ASSERT(9, n->n_in);
	ASSERT_STR("xq", f.g->values.v[n->in[0]].name);
	ASSERT_STR("wq", f.g->values.v[n->in[3]].name);
	ASSERT_STR("bq", f.g->values.v[n->in[8]].name);
	ASSERT_STR("y", f.g->values.v[n->out[0]].name);
	ASSERT(6, n->span.n);
	ASSERT_STR("dq_x", n->span.names[0]);
	ASSERT_STR("conv", n->span.names[3]);
	ASSERT_STR("q_y", n->span.names[5]);
	fx_release(&f);
}

/* A bias scale that is not x_scale * w_scale, or a Relu that clamps above y's least value: float. */
static void test_qdq_left_alone(void)
{
	for (int k = 0; k < 2; k++) {
		struct fixture f;

		fx_init(&f);
		build_qdq_conv(f.g, k == 0, k == 0 ? 0 : 3);
		ASSERT(0, pass_infer(f.g));
		ASSERT(0, pass_qdq(f.g));
		ASSERT(6, live_nodes(f.g));
		for (int i = 0; i < f.g->nodes.n; i++)
			ASSERT_TRUE(f.g->nodes.v[i].op != OP_QLINEARCONV);
		fx_release(&f);
	}
}

/* ---- the pipeline ---- */

static void test_pass_table(void)
{
	ASSERT(9, PASS_COUNT);
	ASSERT_STR("infer", passes[0].name);
	ASSERT_STR("qdq", passes[1].name);
	ASSERT_STR("fold", passes[2].name);
	ASSERT_STR("simplify", passes[3].name);
	ASSERT_STR("layernorm", passes[4].name);
	ASSERT_STR("fold-bn", passes[5].name);
	ASSERT_STR("fold-scale", passes[6].name);
	ASSERT_STR("rnn-project", passes[7].name);
	ASSERT_STR("dce", passes[8].name);
	ASSERT_TRUE(passes[PASS_DCE].run == pass_dce);
	ASSERT_TRUE(passes[PASS_FOLD_BN].run == pass_fold_bn);
}

/* x -> Identity -> Conv -> BN -> Relu -> y, plus a dead branch: Conv, Relu remain. */
static void test_passes_run_pipeline(void)
{
	struct fixture f;
	struct convbn cb;
	int idv, r, dead;
	char *dir = dir_make_temp("unit-passes");
	char path[4096];
	struct stat st;

	ASSERT_TRUE(dir != NULL);
	fx_init(&f);
	build_conv_bn(f.g, &cb, true);
	/* y is no longer the output: Relu(y) is */
	f.g->values.v[cb.y].flags = 0;
	f.g->outputs.n = 0;
	r = add_output(f.g, "r");
	add_node(f.g, OP_RELU, "relu1", &cb.y, 1, &r, 1);
	/* an Identity in front of the Conv */
	idv = graph_add_value(f.g, "x_id");
	add_node(f.g, OP_IDENTITY, "id", &cb.x, 1, &idv, 1);
	f.g->nodes.v[cb.conv].in[0] = idv;
	dead = graph_add_value(f.g, "dead");
	add_node(f.g, OP_EXP, "unused", &cb.x, 1, &dead, 1);
	ASSERT(0, graph_toposort(f.g));	/* the Identity was added last */
	ASSERT(0, passes_run(f.g, dir));
	ASSERT(0, f.ctx.n_errors);
	ASSERT(2, f.g->nodes.n);
	ASSERT(OP_CONV, f.g->nodes.v[0].op);
	ASSERT(OP_RELU, f.g->nodes.v[1].op);
	ASSERT(cb.x, f.g->nodes.v[0].in[0]);
	ASSERT(cb.y, f.g->nodes.v[0].out[0]);
	ASSERT_TRUE(f.g->values.v[f.g->nodes.v[0].in[1]].data != NULL);
	/* the BN folded into the Conv's weights (in place: they were its alone) */
	ASSERT_TRUE(f.g->nodes.v[0].in[1] != cb.w);
	ASSERT_STR("conv1.folded_W", f.g->values.v[f.g->nodes.v[0].in[1]].name);
	/* one dump per stage */
	static const char *const dumps[] = { "00-import.ir", "01-infer.ir", "02-qdq.ir",
					     "03-fold.ir", "04-simplify.ir", "05-layernorm.ir",
					     "06-fold-bn.ir", "07-fold-scale.ir", "08-rnn-project.ir",
					     "09-dce.ir" };
	for (size_t i = 0; i < ARRAY_SIZE(dumps); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, dumps[i]);
		ASSERT(0, stat(path, &st));
	}
	{
		char *text;

		snprintf(path, sizeof(path), "%s/09-dce.ir", dir);
		text = file_read(path, NULL);
		ASSERT_TRUE(text != NULL);
		ASSERT_TRUE(strstr(text, "= Conv(") != NULL);
		ASSERT_TRUE(strstr(text, "# conv1(Conv) bn1(BatchNormalization)\n") != NULL);
		ASSERT_TRUE(strstr(text, "Identity") == NULL);
		ASSERT_TRUE(strstr(text, "= Exp(") == NULL);
		free(text);
	}
	dir_remove_tree(dir);
	free(dir);
	fx_release(&f);
}

/* A pass that reports an error stops the pipeline with -1. */
static void test_passes_run_stops_on_error(void)
{
	struct fixture f;
	struct shape sa = { 1, { dim_const(2) } }, sb = { 1, { dim_const(3) } };
	int a, b, y, in2[2];

	fx_init(&f);
	a = add_input(f.g, "a", DTYPE_F32, &sa);
	b = add_input(f.g, "b", DTYPE_F32, &sb);
	y = add_output(f.g, "y");
	in2[0] = a;
	in2[1] = b;
	add_node(f.g, OP_ADD, "bad_add", in2, 2, &y, 1);
	ASSERT(-1, passes_run(f.g, NULL));
	ASSERT(1, f.ctx.n_errors);
	ASSERT_STR("collagec: error: model: node 'bad_add' (Add): shapes [2] and [3] cannot be "
		   "broadcast\n", sb_str(&f.cap));
	ASSERT(1, live_nodes(f.g));
	fx_release(&f);
}

enum ln_form { LN_MERGES, LN_POW3, LN_AXIS0, LN_MEAN_OUTPUT, LN_EPS_INPUT };

/* x [4, 8] through LayerNormalization written out (mean, center, ..., bias); returns x. */
static int build_lnorm(struct fixture *f, enum ln_form form)
{
	static const float gamma[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, beta[8] = { 0 };
	struct shape s = { 2, { dim_const(4), dim_const(8) } }, s1 = { 1, { dim_const(1) } };
	struct shape s8 = { 1, { dim_const(8) } }, s0 = { 0 };
	int64_t *axes = arena_alloc(f->g->arena, sizeof(int64_t));
	float *two = arena_alloc(f->g->arena, sizeof(float)), *eps;
	int x, ax, mean, d, sq, var, ve, sd, nrm, sc, y, in[2], e;

	*axes = form == LN_AXIS0 ? 0 : -1;
	*two = form == LN_POW3 ? 3 : 2;
	x = add_input(f->g, "x", DTYPE_F32, &s);
	ax = graph_add_const(f->g, "axes", DTYPE_I64, &s1, axes);
	if (form == LN_EPS_INPUT) {
		e = add_input(f->g, "eps", DTYPE_F32, &s0);
	} else {
		eps = arena_alloc(f->g->arena, sizeof(float));
		*eps = 1e-5f;
		e = graph_add_const(f->g, "eps", DTYPE_F32, &s0, eps);
	}
	mean = form == LN_MEAN_OUTPUT ? add_output(f->g, "mu") : graph_add_value(f->g, "mu");
	d = graph_add_value(f->g, "d");
	sq = graph_add_value(f->g, "d2");
	var = graph_add_value(f->g, "var");
	ve = graph_add_value(f->g, "ve");
	sd = graph_add_value(f->g, "sd");
	nrm = graph_add_value(f->g, "nrm");
	sc = graph_add_value(f->g, "sc");
	y = add_output(f->g, "y");
	in[0] = x, in[1] = ax;
	add_node(f->g, OP_REDUCEMEAN, "mean", in, 2, &mean, 1);
	in[1] = mean;
	add_node(f->g, OP_SUB, "center", in, 2, &d, 1);
	in[0] = d, in[1] = graph_add_const(f->g, "two", DTYPE_F32, &s0, two);
	add_node(f->g, OP_POW, "square", in, 2, &sq, 1);
	in[0] = sq, in[1] = ax;
	add_node(f->g, OP_REDUCEMEAN, "variance", in, 2, &var, 1);
	in[0] = e, in[1] = var;		/* commuted */
	add_node(f->g, OP_ADD, "add_eps", in, 2, &ve, 1);
	add_node(f->g, OP_SQRT, "stddev", &ve, 1, &sd, 1);
	in[0] = d, in[1] = sd;
	add_node(f->g, OP_DIV, "normalize", in, 2, &nrm, 1);
	in[0] = nrm, in[1] = graph_add_const(f->g, "gamma", DTYPE_F32, &s8, gamma);
	add_node(f->g, OP_MUL, "scale", in, 2, &sc, 1);
	in[0] = sc, in[1] = graph_add_const(f->g, "beta", DTYPE_F32, &s8, beta);
	add_node(f->g, OP_ADD, "bias", in, 2, &y, 1);
	return x;
}

static void test_layernorm_merges(void)
{
	static const char *const names[] = { "mean", "center", "square", "variance", "add_eps",
					     "stddev", "normalize", "scale", "bias" };
	struct fixture f;
	const struct node *n;
	int x;

	fx_init(&f);
	x = build_lnorm(&f, LN_MERGES);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_layernorm(f.g));
	graph_verify(f.g);
	ASSERT(1, f.g->nodes.n);
	n = &f.g->nodes.v[0];
	ASSERT(OP_LAYERNORMALIZATION, n->op);
	ASSERT_STR("bias", n->name);
	ASSERT(3, n->n_in);
	ASSERT(x, n->in[0]);
	ASSERT_STR("gamma", f.g->values.v[n->in[1]].name);
	ASSERT_STR("beta", f.g->values.v[n->in[2]].name);
	ASSERT(1, node_attr_int(n, "axis", -1));
	ASSERT_TRUE(fabs(node_attr_float(n, "epsilon", 0) - 1e-5) < 1e-12);
	ASSERT(9, n->span.n);
	for (int i = 0; i < 9; i++)
		ASSERT_STR(names[i], n->span.names[i]);
	/* the merged nodes went into it */
	ASSERT(8, f.g->fates.n);
	ASSERT_STR("bias", f.g->fates.v[0].into);
	fx_release(&f);
}

/*
 * No LayerNormalization: x^3, axis 0, a mean the graph outputs, an input
 * epsilon. With the mean an output, what follows the centring (square,
 * variance, epsilon, root, divide, scale) is the RMSNormalization of the
 * centred d, which the pass merges; the bias stays an Add.
 */
static void test_layernorm_left_alone(void)
{
	for (enum ln_form form = LN_POW3; form <= LN_EPS_INPUT; form++) {
		struct fixture f;
		int rms = 0;

		fx_init(&f);
		build_lnorm(&f, form);
		ASSERT(0, pass_infer(f.g));
		ASSERT(0, pass_layernorm(f.g));
		graph_verify(f.g);
		ASSERT(form == LN_MEAN_OUTPUT ? 4 : 9, live_nodes(f.g));
		for (int i = 0; i < f.g->nodes.n; i++) {
			const struct node *n = &f.g->nodes.v[i];

			ASSERT_TRUE(n->op != OP_LAYERNORMALIZATION);
			if (n->dead || n->op != OP_RMSNORMALIZATION)
				continue;
			rms++;
			ASSERT_STR("scale", n->name);
			ASSERT_STR("d", f.g->values.v[n->in[0]].name);
			ASSERT_STR("gamma", f.g->values.v[n->in[1]].name);
			ASSERT(6, n->span.n);
		}
		ASSERT(form == LN_MEAN_OUTPUT, rms);
		fx_release(&f);
	}
}

TESTS({ "fold_bn_folds", test_fold_bn_folds },
      { "fold_bn_folds_without_bias", test_fold_bn_folds_without_bias },
      { "fold_bn_second_user", test_fold_bn_second_user },
      { "fold_bn_shared_weights", test_fold_bn_shared_weights },
      { "fold_bn_conv_output_is_graph_output", test_fold_bn_conv_output_is_graph_output },
      { "fold_bn_non_constant", test_fold_bn_non_constant },
      { "dce", test_dce },
      { "dce_multi_output", test_dce_multi_output },
      { "simplify_removes_identity", test_simplify_removes_identity },
      { "simplify_output_identity_writes_output",
	test_simplify_output_identity_writes_output },
      { "simplify_keeps_output_identity", test_simplify_keeps_output_identity },
      { "simplify_dropout", test_simplify_dropout },
      { "fold_constants", test_fold_constants },
      { "fold_keeps_symbolic_shape", test_fold_keeps_symbolic_shape },
      { "fold_reduce_int64", test_fold_reduce_int64 },
      { "fold_reduce_uint64", test_fold_reduce_uint64 },
      { "fold_max_min_uint64", test_fold_max_min_uint64 },
      { "rnn_project_const_w", test_rnn_project_const_w },
      { "rnn_project_input_w", test_rnn_project_input_w },
      { "layernorm_merges", test_layernorm_merges },
      { "layernorm_left_alone", test_layernorm_left_alone },
      { "qdq_fuses_conv", test_qdq_fuses_conv },
      { "qdq_left_alone", test_qdq_left_alone },
      { "pass_table", test_pass_table },
      { "passes_run_pipeline", test_passes_run_pipeline },
      { "passes_run_stops_on_error", test_passes_run_stops_on_error })
