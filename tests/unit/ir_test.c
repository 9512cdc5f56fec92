/*
 * ir_test.c - the graph IR: symbolic dims, broadcasting, topological order
 * and cycles, spans, attributes, constants, dtypes and the printers.
 */
#include "../../core/ir/ir.h"
#include "../../core/ops/ops.h"
#include "test.h"

/* A context whose diagnostics go only to a string. */
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
}

static void fx_release(struct fixture *f)
{
	graph_free(f->g);
	sb_release(&f->cap);
	ctx_release(&f->ctx);
}

static struct dim dsym(struct graph *g, const char *name)
{
	return dim_sym(graph_intern_sym(g, name));
}

static const char *dim_str(struct graph *g, struct dim d)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s;

	dim_print(g, d, &sb);
	s = arena_strdup(g->arena, sb_str(&sb));
	sb_release(&sb);
	return s;
}

static const char *shape_str(struct graph *g, const struct shape *s)
{
	struct strbuf sb = STRBUF_INIT;
	const char *r;

	shape_print(g, s, &sb);
	r = arena_strdup(g->arena, sb_str(&sb));
	sb_release(&sb);
	return r;
}

/* Adds a node with op_type and a one-entry span, like the importer. */
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

/* ---- dims ---- */

static void test_dim_mul_const(void)
{
	struct dim r;

	ASSERT_TRUE(dim_mul(dim_const(6), dim_const(7), &r));
	ASSERT(42, r.c);
	ASSERT(0, r.n);
	ASSERT_TRUE(dim_is_const(r));
	ASSERT_TRUE(dim_mul(dim_const(0), dim_sym(3), &r));
	ASSERT_TRUE(dim_eq(dim_const(0), r));
	ASSERT(0, r.n);
	/* overflow of the constant factor */
	ASSERT_TRUE(!dim_mul(dim_const(INT64_C(1) << 40), dim_const(INT64_C(1) << 40), &r));
	ASSERT_TRUE(!dim_mul(dim_const(INT64_MAX), dim_const(2), &r));
}

static void test_dim_mul_symbolic(void)
{
	struct fixture f;
	struct dim n, m, r, r2;

	fx_init(&f);
	n = dsym(f.g, "N");
	m = dsym(f.g, "M");
	ASSERT_TRUE(dim_mul(n, dim_const(128), &r));
	ASSERT(128, r.c);
	ASSERT(1, r.n);
	ASSERT_STR("128*N", dim_str(f.g, r));
	/* symbols are kept sorted, so M*N == N*M */
	ASSERT_TRUE(dim_mul(m, n, &r));
	ASSERT_TRUE(dim_mul(n, m, &r2));
	ASSERT_TRUE(dim_eq(r, r2));
	ASSERT(0, r.sym[0]);
	ASSERT(1, r.sym[1]);
	ASSERT_STR("N*M", dim_str(f.g, r2));
	/* N*N is allowed (a multiset) */
	ASSERT_TRUE(dim_mul(n, n, &r));
	ASSERT(2, r.n);
	ASSERT_STR("N*N", dim_str(f.g, r));
	/* more than DIM_MAX_SYMS symbols */
	ASSERT_TRUE(dim_mul(r, n, &r2));
	ASSERT(3, r2.n);
	ASSERT_TRUE(!dim_mul(r2, m, &r));
	ASSERT_TRUE(!dim_eq(n, m));
	ASSERT_TRUE(!dim_eq(n, dim_const(1)));
	fx_release(&f);
}

static void test_dim_div(void)
{
	struct fixture f;
	struct dim n, m, nm, r;

	fx_init(&f);
	n = dsym(f.g, "N");
	m = dsym(f.g, "M");
	ASSERT_TRUE(dim_mul(n, dim_const(128), &r));
	/* N*128 / 128 == N */
	ASSERT_TRUE(dim_div(r, dim_const(128), &r));
	ASSERT_TRUE(dim_eq(n, r));
	ASSERT_TRUE(dim_mul(n, dim_const(128), &r));
	/* N*128 / N == 128 */
	ASSERT_TRUE(dim_div(r, n, &r));
	ASSERT_TRUE(dim_eq(dim_const(128), r));
	ASSERT_TRUE(dim_is_const(r));
	/* N*128 / 64 == 2*N */
	ASSERT_TRUE(dim_mul(n, dim_const(128), &r));
	ASSERT_TRUE(dim_div(r, dim_const(64), &r));
	ASSERT_STR("2*N", dim_str(f.g, r));
	/* not divisible */
	ASSERT_TRUE(dim_mul(n, dim_const(128), &r));
	ASSERT_TRUE(!dim_div(r, dim_const(3), &r));
	ASSERT_TRUE(!dim_div(r, dim_const(256), &r));
	ASSERT_TRUE(!dim_div(r, m, &r));
	ASSERT_TRUE(!dim_div(dim_const(7), dim_const(2), &r));
	ASSERT_TRUE(!dim_div(n, dim_const(0), &r));
	ASSERT_TRUE(!dim_div(dim_const(5), n, &r));
	/* N*M / M == N, N*M / N == M */
	ASSERT_TRUE(dim_mul(n, m, &nm));
	ASSERT_TRUE(dim_div(nm, m, &r));
	ASSERT_TRUE(dim_eq(n, r));
	ASSERT_TRUE(dim_div(nm, n, &r));
	ASSERT_TRUE(dim_eq(m, r));
	/* N / (N*M) fails */
	ASSERT_TRUE(!dim_div(n, nm, &r));
	/* 0 / 5 == 0; 0 / N is not exact */
	ASSERT_TRUE(dim_div(dim_const(0), dim_const(5), &r));
	ASSERT_TRUE(dim_eq(dim_const(0), r));
	ASSERT_TRUE(!dim_div(dim_const(0), n, &r));
	/* 12 / 4 == 3 */
	ASSERT_TRUE(dim_div(dim_const(12), dim_const(4), &r));
	ASSERT(3, r.c);
	fx_release(&f);
}

static void test_shape_numel(void)
{
	struct fixture f;
	struct shape s = { 3, { dim_const(4), { 1, 0, { 0 } }, dim_const(2) } };
	struct dim r;

	fx_init(&f);
	s.d[1] = dsym(f.g, "batch");
	ASSERT_TRUE(shape_numel(&s, &r));
	ASSERT_STR("8*batch", dim_str(f.g, r));
	ASSERT_TRUE(!shape_is_static(&s));
	s.d[1] = dim_const(5);
	ASSERT_TRUE(shape_is_static(&s));
	ASSERT(40, shape_numel_static(&s));
	ASSERT_TRUE(shape_numel(&s, &r));
	ASSERT(40, r.c);
	s.rank = 0;
	ASSERT(1, shape_numel_static(&s));
	fx_release(&f);
}

static void test_shape_print(void)
{
	struct fixture f;
	struct shape s;

	fx_init(&f);
	s.rank = 3;
	s.d[0] = dsym(f.g, "N");
	s.d[1] = dim_const(3);
	ASSERT_TRUE(dim_mul(dsym(f.g, "N"), dsym(f.g, "seq"), &s.d[2]));
	ASSERT_TRUE(dim_mul(s.d[2], dim_const(64), &s.d[2]));
	ASSERT_STR("[N,3,64*N*seq]", shape_str(f.g, &s));
	s.rank = 0;
	ASSERT_STR("[]", shape_str(f.g, &s));
	fx_release(&f);
}

static void test_shape_broadcast(void)
{
	struct fixture f;
	struct shape a = { 0 }, b = { 0 }, r;

	fx_init(&f);
	/* [N,1,3] x [4,1] -> [N,4,3] */
	a.rank = 3;
	a.d[0] = dsym(f.g, "N");
	a.d[1] = dim_const(1);
	a.d[2] = dim_const(3);
	b.rank = 2;
	b.d[0] = dim_const(4);
	b.d[1] = dim_const(1);
	ASSERT_TRUE(shape_broadcast(&a, &b, &r));
	ASSERT_STR("[N,4,3]", shape_str(f.g, &r));
	ASSERT_TRUE(shape_broadcast(&b, &a, &r));
	ASSERT_STR("[N,4,3]", shape_str(f.g, &r));
	/* scalar with anything */
	b.rank = 0;
	ASSERT_TRUE(shape_broadcast(&b, &a, &r));
	ASSERT_STR("[N,1,3]", shape_str(f.g, &r));
	/* [2,3] x [4,3]: incompatible */
	a.rank = 2;
	a.d[0] = dim_const(2);
	a.d[1] = dim_const(3);
	b.rank = 2;
	b.d[0] = dim_const(4);
	b.d[1] = dim_const(3);
	ASSERT_TRUE(!shape_broadcast(&a, &b, &r));
	/* [2,3] x [2]: trailing dims 3 vs 2 */
	b.rank = 1;
	b.d[0] = dim_const(2);
	ASSERT_TRUE(!shape_broadcast(&a, &b, &r));
	/* [N] x [M]: different symbols cannot be proven equal */
	a.rank = 1;
	a.d[0] = dsym(f.g, "N");
	b.rank = 1;
	b.d[0] = dsym(f.g, "M");
	ASSERT_TRUE(!shape_broadcast(&a, &b, &r));
	/* [N] x [N] and [N] x [1] */
	ASSERT_TRUE(shape_broadcast(&a, &a, &r));
	ASSERT_STR("[N]", shape_str(f.g, &r));
	b.d[0] = dim_const(1);
	ASSERT_TRUE(shape_broadcast(&b, &a, &r));
	ASSERT_STR("[N]", shape_str(f.g, &r));
	fx_release(&f);
}

static void test_infer_add_broadcast_error(void)
{
	struct fixture f;
	struct shape sa = { 2, { dim_const(2), dim_const(3) } }, sb = { 1, { dim_const(4) } };
	int a, b, y, in[2], n;

	fx_init(&f);
	a = add_input(f.g, "a", DTYPE_F32, &sa);
	b = add_input(f.g, "b", DTYPE_F32, &sb);
	y = graph_add_value(f.g, "y");
	in[0] = a;
	in[1] = b;
	n = add_node(f.g, OP_ADD, "add0", in, 2, &y, 1);
	ASSERT(-1, op_info(OP_ADD)->infer(f.g, &f.g->nodes.v[n]));
	ASSERT_STR("collagec: error: model: node 'add0' (Add): shapes [2,3] and [4] cannot be "
		   "broadcast\n", sb_str(&f.cap));
	ASSERT(1, f.ctx.n_errors);
	ASSERT_TRUE(!f.g->values.v[y].has_shape);
	/* [3] broadcasts: y is [2,3] float32 */
	f.g->values.v[b].shape.d[0] = dim_const(3);
	ASSERT(0, op_info(OP_ADD)->infer(f.g, &f.g->nodes.v[n]));
	ASSERT(DTYPE_F32, f.g->values.v[y].dtype);
	ASSERT_STR("[2,3]", shape_str(f.g, &f.g->values.v[y].shape));
	fx_release(&f);
}

/* ---- topological order ---- */

static void test_toposort_reorders(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(4) } };
	int x, a, b, c, d, in2[2];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	a = graph_add_value(f.g, "a");
	b = graph_add_value(f.g, "b");
	c = graph_add_value(f.g, "c");
	d = graph_add_value(f.g, "d");
	/* added consumers first: d = c + a, c = Relu(b), b = Neg(a), a = Exp(x) */
	in2[0] = c;
	in2[1] = a;
	add_node(f.g, OP_ADD, "nd", in2, 2, &d, 1);
	add_node(f.g, OP_RELU, "nc", &b, 1, &c, 1);
	add_node(f.g, OP_NEG, "nb", &a, 1, &b, 1);
	add_node(f.g, OP_EXP, "na", &x, 1, &a, 1);
	vec_push(&f.g->outputs, d);
	f.g->values.v[d].flags |= VALUE_OUTPUT;
	ASSERT(0, graph_toposort(f.g));
	ASSERT(4, f.g->nodes.n);
	ASSERT_STR("na", f.g->nodes.v[0].name);
	ASSERT_STR("nb", f.g->nodes.v[1].name);
	ASSERT_STR("nc", f.g->nodes.v[2].name);
	ASSERT_STR("nd", f.g->nodes.v[3].name);
	/* producers follow the new positions */
	ASSERT(0, f.g->values.v[a].producer);
	ASSERT(1, f.g->values.v[b].producer);
	ASSERT(2, f.g->values.v[c].producer);
	ASSERT(3, f.g->values.v[d].producer);
	ASSERT(-1, f.g->values.v[x].producer);
	ASSERT(0, f.ctx.n_errors);
	graph_verify(f.g);	/* aborts on a violation */
	fx_release(&f);
}

static void test_toposort_stable(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(4) } };
	int x, v[4];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	for (int i = 0; i < 4; i++)
		v[i] = graph_add_value(f.g, arena_printf(f.g->arena, "v%d", i));
	/* independent nodes keep their order; v3 depends on v0 (added last) */
	add_node(f.g, OP_NEG, "k2", &x, 1, &v[2], 1);
	add_node(f.g, OP_RELU, "k3", &v[0], 1, &v[3], 1);
	add_node(f.g, OP_EXP, "k1", &x, 1, &v[1], 1);
	add_node(f.g, OP_ABS, "k0", &x, 1, &v[0], 1);
	ASSERT(0, graph_toposort(f.g));
	ASSERT_STR("k2", f.g->nodes.v[0].name);
	ASSERT_STR("k1", f.g->nodes.v[1].name);
	ASSERT_STR("k0", f.g->nodes.v[2].name);
	ASSERT_STR("k3", f.g->nodes.v[3].name);
	/* sorting a sorted graph is the identity */
	ASSERT(0, graph_toposort(f.g));
	ASSERT_STR("k2", f.g->nodes.v[0].name);
	ASSERT_STR("k3", f.g->nodes.v[3].name);
	fx_release(&f);
}

static void test_toposort_cycle(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(4) } };
	int x, a, b, c, in2[2];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	a = graph_add_value(f.g, "a");
	b = graph_add_value(f.g, "b");
	c = graph_add_value(f.g, "c");
	/* c = Exp(x) is fine; a = b + c and b = Relu(a) form a cycle */
	add_node(f.g, OP_EXP, "ok", &x, 1, &c, 1);
	in2[0] = b;
	in2[1] = c;
	add_node(f.g, OP_ADD, "loop_add", in2, 2, &a, 1);
	add_node(f.g, OP_RELU, "loop_relu", &a, 1, &b, 1);
	ASSERT(-1, graph_toposort(f.g));
	ASSERT_STR("collagec: error: model: node 'loop_add' (Add): graph has a cycle through "
		   "this node\n", sb_str(&f.cap));
	ASSERT(1, f.ctx.n_errors);
	ASSERT(STATUS_MODEL, f.ctx.status);
	/* the node order is left as it was */
	ASSERT_STR("ok", f.g->nodes.v[0].name);
	ASSERT_STR("loop_add", f.g->nodes.v[1].name);
	ASSERT_STR("loop_relu", f.g->nodes.v[2].name);
	fx_release(&f);
}

static void test_toposort_self_loop_with_path(void)
{
	struct fixture f;
	int a;

	fx_init(&f);
	f.g->path = "dir/sub/net.onnx";
	a = graph_add_value(f.g, "a");
	add_node(f.g, OP_RELU, "self", &a, 1, &a, 1);
	f.g->nodes.v[0].onnx_index = 7;
	ASSERT(-1, graph_toposort(f.g));
	ASSERT_STR("collagec: error: net.onnx: node 7 'self' (Relu): graph has a cycle through "
		   "this node\n", sb_str(&f.cap));
	fx_release(&f);
}

static void test_graph_compact(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(4) } };
	int x, v[3];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	for (int i = 0; i < 3; i++)
		v[i] = graph_add_value(f.g, arena_printf(f.g->arena, "v%d", i));
	add_node(f.g, OP_NEG, "n0", &x, 1, &v[0], 1);
	add_node(f.g, OP_RELU, "n1", &x, 1, &v[1], 1);
	add_node(f.g, OP_EXP, "n2", &v[1], 1, &v[2], 1);
	f.g->nodes.v[0].dead = true;
	graph_compact(f.g);
	ASSERT(2, f.g->nodes.n);
	ASSERT_STR("n1", f.g->nodes.v[0].name);
	ASSERT_STR("n2", f.g->nodes.v[1].name);
	ASSERT(-1, f.g->values.v[v[0]].producer);
	ASSERT(0, f.g->values.v[v[1]].producer);
	ASSERT(1, f.g->values.v[v[2]].producer);
	fx_release(&f);
}

/* an expansion appended at the end moves to where its node stood */
static void test_graph_move_tail(void)
{
	struct fixture f;
	struct shape s = { 1, { dim_const(4) } };
	int x, v[4];

	fx_init(&f);
	x = add_input(f.g, "x", DTYPE_F32, &s);
	for (int i = 0; i < 4; i++)
		v[i] = graph_add_value(f.g, arena_printf(f.g->arena, "v%d", i));
	add_node(f.g, OP_NEG, "n0", &x, 1, &v[0], 1);
	add_node(f.g, OP_EXP, "n1", &v[1], 1, &v[2], 1);	/* reads the tail's v1 */
	add_node(f.g, OP_RELU, "t0", &v[0], 1, &v[3], 1);
	add_node(f.g, OP_ABS, "t1", &v[3], 1, &v[1], 1);
	graph_move_tail(f.g, 2, 1);
	ASSERT(4, f.g->nodes.n);
	ASSERT_STR("n0", f.g->nodes.v[0].name);
	ASSERT_STR("t0", f.g->nodes.v[1].name);
	ASSERT_STR("t1", f.g->nodes.v[2].name);
	ASSERT_STR("n1", f.g->nodes.v[3].name);
	ASSERT(0, f.g->values.v[v[0]].producer);
	ASSERT(2, f.g->values.v[v[1]].producer);
	ASSERT(3, f.g->values.v[v[2]].producer);
	ASSERT(1, f.g->values.v[v[3]].producer);
	graph_move_tail(f.g, 4, 1);	/* nothing to move */
	ASSERT_STR("t0", f.g->nodes.v[1].name);
	fx_release(&f);
}

/* ---- spans ---- */

static void test_span_add(void)
{
	struct fixture f;
	const char *n1[] = { "conv1", "bn1" }, *t1[] = { "Conv", "BatchNormalization" };
	const char *n2[] = { "bn1", "relu1", "conv1" }, *t2[] = { "BatchNormalization", "Relu", "Conv" };
	struct span dst = { 0 }, a = { 2, n1, t1 }, b = { 3, n2, t2 };

	fx_init(&f);
	span_add(f.g, &dst, &a);
	ASSERT(2, dst.n);
	ASSERT_STR("conv1", dst.names[0]);
	ASSERT_STR("BatchNormalization", dst.types[1]);
	ASSERT_TRUE(dst.names != n1);	/* a copy, not the source array */
	span_add(f.g, &dst, &b);	/* only relu1 is new */
	ASSERT(3, dst.n);
	ASSERT_STR("conv1", dst.names[0]);
	ASSERT_STR("bn1", dst.names[1]);
	ASSERT_STR("relu1", dst.names[2]);
	ASSERT_STR("Relu", dst.types[2]);
	span_add(f.g, &dst, &dst);	/* self: no change */
	ASSERT(3, dst.n);
	{
		struct span empty = { 0 };

		span_add(f.g, &dst, &empty);
		ASSERT(3, dst.n);
		ASSERT_STR("relu1", dst.names[2]);
	}
	fx_release(&f);
}

/* ---- attributes, constants, dtypes ---- */

static void test_attrs(void)
{
	struct fixture f;
	int x, y;
	struct node *n;
	int64_t perm[3] = { 2, 0, 1 };
	struct attr *at;
	const int64_t *got;

	fx_init(&f);
	x = graph_add_value(f.g, "x");
	y = graph_add_value(f.g, "y");
	add_node(f.g, OP_TRANSPOSE, "t", &x, 1, &y, 1);
	n = &f.g->nodes.v[0];
	ASSERT(-5, node_attr_int(n, "axis", -5));
	ASSERT(-1, node_attr_ints(n, "perm", &got));
	node_set_attr_int(f.g, n, "axis", 3);
	node_set_attr_int(f.g, n, "keepdims", 0);
	ASSERT(2, n->n_attrs);
	ASSERT(3, node_attr_int(n, "axis", -5));
	ASSERT(0, node_attr_int(n, "keepdims", 1));
	node_set_attr_int(f.g, n, "axis", 9);	/* replaces */
	ASSERT(2, n->n_attrs);
	ASSERT(9, node_attr_int(n, "axis", -5));
	ASSERT_TRUE(node_attr_float(n, "axis", 0.5) == 9.0);
	ASSERT_TRUE(node_attr_float(n, "alpha", 0.25) == 0.25);
	ASSERT_STR("dflt", node_attr_str(n, "axis", "dflt"));	/* wrong kind */
	/* add an INTS attribute by hand */
	at = arena_alloc(f.g->arena, sizeof(*at) * 3);
	memcpy(at, n->attrs, sizeof(*at) * 2);
	at[2].name = "perm";
	at[2].kind = ATTR_INTS;
	at[2].n = 3;
	at[2].ints = perm;
	n->attrs = at;
	n->n_attrs = 3;
	ASSERT(3, node_attr_ints(n, "perm", &got));
	ASSERT(2, got[0]);
	ASSERT(1, got[2]);
	ASSERT(-1, node_attr_ints(n, "axis", &got));	/* not a list */
	fx_release(&f);
}

static void test_const_values(void)
{
	struct fixture f;
	struct shape s3 = { 1, { dim_const(3) } }, s0 = { 0 };
	int32_t iv[3] = { -1, 5, 70000 };
	uint8_t bv[3] = { 0, 1, 255 };
	double dv = 2.5;
	int64_t *out, cnt;
	double sc;
	int vi, vb, vd;

	fx_init(&f);
	vi = graph_add_const(f.g, "ci", DTYPE_I32, &s3, iv);
	vb = graph_add_const(f.g, "cb", DTYPE_U8, &s3, bv);
	vd = graph_add_const(f.g, "cd", DTYPE_F64, &s0, &dv);
	iv[0] = 99;	/* the graph owns a copy */
	ASSERT(0, value_const_ints(f.g, &f.g->values.v[vi], &out, &cnt));
	ASSERT(3, cnt);
	ASSERT(-1, out[0]);
	ASSERT(5, out[1]);
	ASSERT(70000, out[2]);
	ASSERT(0, value_const_ints(f.g, &f.g->values.v[vb], &out, &cnt));
	ASSERT(255, out[2]);
	ASSERT_TRUE(value_const_scalar(f.g, &f.g->values.v[vd], &sc));
	ASSERT_TRUE(sc == 2.5);
	ASSERT_TRUE(!value_const_scalar(f.g, &f.g->values.v[vi], &sc));	/* 3 elements */
	ASSERT(-1, f.g->values.v[vi].producer);
	ASSERT_TRUE(f.g->values.v[vd].has_shape);
	ASSERT(0, f.g->values.v[vd].shape.rank);
	{
		int nv = graph_add_value(f.g, "plain");

		ASSERT(-1, value_const_ints(f.g, &f.g->values.v[nv], &out, &cnt));
		ASSERT_TRUE(!value_const_scalar(f.g, &f.g->values.v[nv], &sc));
	}
	fx_release(&f);
}

static void test_dtypes(void)
{
	ASSERT(DTYPE_F32, dtype_from_onnx(1));
	ASSERT(DTYPE_I64, dtype_from_onnx(7));
	ASSERT(DTYPE_BOOL, dtype_from_onnx(9));
	ASSERT(DTYPE_F16, dtype_from_onnx(10));
	ASSERT(DTYPE_BF16, dtype_from_onnx(16));
	ASSERT(DTYPE_UNDEF, dtype_from_onnx(14));	/* complex64: unsupported */
	ASSERT(DTYPE_UNDEF, dtype_from_onnx(0));
	ASSERT(11, dtype_to_onnx(DTYPE_F64));
	ASSERT(DTYPE_F32, dtype_from_name("float32"));
	ASSERT(DTYPE_U16, dtype_from_name("uint16"));
	ASSERT(DTYPE_F16, dtype_from_name("float16"));
	ASSERT(DTYPE_UNDEF, dtype_from_name("complex64"));
	ASSERT(2, dtype_size(DTYPE_BF16));
	ASSERT(DTYPE_F32, dtype_compute(DTYPE_BF16));
	ASSERT(DTYPE_I8, dtype_compute(DTYPE_I8));
	ASSERT(8, dtype_size(DTYPE_F64));
	ASSERT(1, dtype_size(DTYPE_BOOL));
	ASSERT(2, dtype_size(DTYPE_I16));
	ASSERT_TRUE(dtype_is_float(DTYPE_F64));
	ASSERT_TRUE(!dtype_is_float(DTYPE_I32));
	ASSERT_TRUE(dtype_is_int(DTYPE_U8));
	ASSERT_TRUE(!dtype_is_int(DTYPE_BOOL));
	ASSERT_TRUE(dtype_is_signed(DTYPE_I8));
	ASSERT_TRUE(!dtype_is_signed(DTYPE_U64));
	ASSERT_STR("int64_t", dtype_ctype(DTYPE_I64));
	ASSERT_STR("uint32", dtype_name(DTYPE_U32));
	/* every dtype round-trips through its name and its ONNX number */
	for (int t = 1; t < DTYPE_COUNT; t++) {
		ASSERT(t, dtype_from_name(dtype_name((enum dtype)t)));
		ASSERT(t, dtype_from_onnx(dtype_to_onnx((enum dtype)t)));
	}
}

static void test_intern_sym(void)
{
	struct fixture f;

	fx_init(&f);
	ASSERT(0, graph_intern_sym(f.g, "N"));
	ASSERT(1, graph_intern_sym(f.g, "seq"));
	ASSERT(0, graph_intern_sym(f.g, "N"));
	ASSERT(2, f.g->syms.n);
	ASSERT_STR("seq", f.g->syms.v[1]);
	fx_release(&f);
}

static void test_graph_print(void)
{
	struct fixture f;
	struct shape s = { 2, { { 1, 1, { 0 } }, dim_const(3) } };
	int x, y;
	char *text;
	size_t len;
	FILE *fp;
	char *buf = NULL;

	fx_init(&f);
	graph_intern_sym(f.g, "N");
	f.g->name = "g";
	f.g->opset = 17;
	x = add_input(f.g, "x", DTYPE_F32, &s);
	y = graph_add_value(f.g, "y");
	add_node(f.g, OP_RELU, "r", &x, 1, &y, 1);
	ASSERT(0, op_info(OP_RELU)->infer(f.g, &f.g->nodes.v[0]));
	vec_push(&f.g->outputs, y);
	fp = open_memstream(&buf, &len);
	graph_print(f.g, fp);
	fclose(fp);
	text = buf;
	ASSERT_STR("graph 'g' opset 17\n"
		   "input 'x' %0:float32[N,3]\n"
		   "# 0 constants\n"
		   "%1:float32[N,3] = Relu(%0:float32[N,3])  # r(Relu)\n"
		   "output 'y' %1:float32[N,3]\n", text);
	free(buf);
	fx_release(&f);
}

TESTS({ "dim_mul_const", test_dim_mul_const },
      { "dim_mul_symbolic", test_dim_mul_symbolic },
      { "dim_div", test_dim_div },
      { "shape_numel", test_shape_numel },
      { "shape_print", test_shape_print },
      { "shape_broadcast", test_shape_broadcast },
      { "infer_add_broadcast_error", test_infer_add_broadcast_error },
      { "toposort_reorders", test_toposort_reorders },
      { "toposort_stable", test_toposort_stable },
      { "toposort_cycle", test_toposort_cycle },
      { "toposort_self_loop_with_path", test_toposort_self_loop_with_path },
      { "graph_compact", test_graph_compact },
      { "graph_move_tail", test_graph_move_tail },
      { "span_add", test_span_add },
      { "attrs", test_attrs },
      { "const_values", test_const_values },
      { "dtypes", test_dtypes },
      { "intern_sym", test_intern_sym },
      { "graph_print", test_graph_print })
