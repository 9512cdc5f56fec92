/*
 * symval_test.c - shape arithmetic on symbolic dims: symbolic integers,
 * payloads through Shape/Gather/Unsqueeze/Concat/Slice and the arithmetic
 * ops, the shapes of the Reshape, Expand, Slice, Split, Tile,
 * ConstantOfShape, Range and Resize they drive, folding of payloads that come out
 * constant, DCE of the shape arithmetic a Reshape no longer needs, derived
 * symbols (seq - 1, seq / 2), and the error that names the node computing
 * a value with no symbolic form (5 - seq).
 */
#include "../../core/ops/ops.h"
#include "../../core/passes/passes.h"
#include "test.h"

struct fixture {
	struct collagec_ctx ctx;
	struct strbuf cap;
	struct graph *g;
	int x;			/* input x [batch, seq, 64] float32 */
	int batch, seq;		/* symbol ids */
};

static void fx_init(struct fixture *f)
{
	struct shape xs;
	int v;

	ctx_init(&f->ctx);
	f->ctx.diag_out = NULL;
	memset(&f->cap, 0, sizeof(f->cap));
	f->ctx.capture = &f->cap;
	f->g = graph_new(&f->ctx);
	f->g->opset = 17;
	f->batch = graph_intern_sym(f->g, "batch");
	f->seq = graph_intern_sym(f->g, "seq");
	xs.rank = 3;
	xs.d[0] = dim_sym(f->batch);
	xs.d[1] = dim_sym(f->seq);
	xs.d[2] = dim_const(64);
	v = graph_add_value(f->g, "x");
	f->g->values.v[v].dtype = DTYPE_F32;
	f->g->values.v[v].shape = xs;
	f->g->values.v[v].has_shape = true;
	f->g->values.v[v].flags |= VALUE_INPUT;
	vec_push(&f->g->inputs, v);
	f->x = v;
}

static void fx_release(struct fixture *f)
{
	graph_free(f->g);
	sb_release(&f->cap);
	ctx_release(&f->ctx);
}

/* Adds node op(in...) with one fresh output value; returns the value. */
static int op1(struct fixture *f, enum op op, const char *name, const int *in, int n_in)
{
	int out = graph_add_value(f->g, name);
	int id = graph_add_node(f->g, op, name, in, n_in, &out, 1);
	struct node *n = &f->g->nodes.v[id];

	n->op_type = op_info(op)->name;
	node_span_self(f->g, n);
	return out;
}

static int ints(struct fixture *f, int rank, const int64_t *v, int n)
{
	struct shape s = { rank, { dim_const(n) } };

	return graph_add_const(f->g, "c", DTYPE_I64, &s, v);
}

static int scalar(struct fixture *f, int64_t v)
{
	return ints(f, 0, &v, 1);
}

static int vec1(struct fixture *f, int64_t v)
{
	return ints(f, 1, &v, 1);
}

/* Unsqueeze(Gather(Shape(t), axis), [0]): torch's t.size(axis) */
static int size_of(struct fixture *f, int t, int64_t axis)
{
	int in[2];

	in[0] = op1(f, OP_SHAPE, "shape", &t, 1);
	in[1] = scalar(f, axis);
	in[0] = op1(f, OP_GATHER, "gather", in, 2);
	in[1] = vec1(f, 0);
	return op1(f, OP_UNSQUEEZE, "unsqueeze", in, 2);
}

static struct value *val(struct fixture *f, int v)
{
	return &f->g->values.v[v];
}

static const char *shape_str(struct fixture *f, int v)
{
	struct strbuf sb = STRBUF_INIT;
	char *s;

	shape_print(f->g, &val(f, v)->shape, &sb);
	s = arena_strdup(f->g->arena, sb_str(&sb));
	sb_release(&sb);
	return s;
}

static const char *payload_str(struct fixture *f, int v)
{
	struct strbuf sb = STRBUF_INIT;
	struct dim *d;
	int64_t n;
	char *s;

	if (value_sym_ints(f->g, val(f, v), &d, &n) < 0)
		return "none";
	for (int64_t i = 0; i < n; i++) {
		if (i)
			sb_putc(&sb, ',');
		dim_print(f->g, d[i], &sb);
	}
	s = arena_strdup(f->g->arena, sb_str(&sb));
	sb_release(&sb);
	return s;
}

static void test_symint_arith(void)
{
	struct dim n = dim_sym(0), m = dim_sym(1), r;

	ASSERT_TRUE(symint_add(n, n, &r));
	ASSERT(2, r.c);
	ASSERT(1, r.n);
	ASSERT_TRUE(symint_sub(n, n, &r));
	ASSERT_TRUE(dim_eq(dim_const(0), r));
	ASSERT_TRUE(symint_add(dim_const(0), m, &r));
	ASSERT_TRUE(dim_eq(m, r));
	ASSERT_TRUE(!symint_add(n, dim_const(-1), &r));	/* N - 1 */
	ASSERT_TRUE(!symint_add(n, m, &r));		/* N + M */
	ASSERT(-3, symint_neg(dim_const(3)).c);
	ASSERT_TRUE(dim_mul(symint_neg(n), dim_const(4), &r));
	ASSERT(-4, r.c);
	ASSERT_TRUE(symint_add(dim_const(-1), dim_const(5), &r));
	ASSERT_TRUE(dim_eq(dim_const(4), r));
}

/* Reshape(x, Concat(batch, seq, [4], [16])) is [batch,seq,4,16]. */
static void test_heads_reshape(void)
{
	struct fixture f;
	int in[4], cat, y;
	FILE *tmp;
	char line[4096];
	bool seen = false;

	fx_init(&f);
	in[0] = size_of(&f, f.x, 0);
	in[1] = size_of(&f, f.x, 1);
	in[2] = vec1(&f, 4);
	in[3] = vec1(&f, 16);
	cat = op1(&f, OP_CONCAT, "concat", in, 4);
	node_set_attr_int(f.g, &f.g->nodes.v[val(&f, cat)->producer], "axis", 0);
	in[0] = f.x;
	in[1] = cat;
	y = op1(&f, OP_RESHAPE, "reshape", in, 2);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("batch,seq,4,16", payload_str(&f, cat));
	ASSERT_STR("[batch,seq,4,16]", shape_str(&f, y));
	/* the shape computation stays, to run if anyone reads it as data */
	ASSERT_TRUE(val(&f, cat)->producer >= 0);
	ASSERT_TRUE(val(&f, cat)->data == NULL);
	graph_verify(f.g);
	/* the printer shows payloads */
	tmp = tmpfile();
	ASSERT_TRUE(tmp != NULL);
	graph_print(f.g, tmp);
	rewind(tmp);
	while (fgets(line, sizeof(line), tmp))
		seen |= strstr(line, "int64[4]={batch,seq,4,16} = Concat(") != NULL;
	fclose(tmp);
	ASSERT_TRUE(seen);
	fx_release(&f);
}

/* After inference the Reshape needs no shape input: DCE leaves it alone. */
static void test_dce_drops_shape_arithmetic(void)
{
	struct fixture f;
	int in[3], y, live = 0;

	fx_init(&f);
	in[0] = size_of(&f, f.x, 0);
	in[1] = size_of(&f, f.x, 1);
	in[2] = vec1(&f, -1);
	in[1] = op1(&f, OP_CONCAT, "concat", in, 3);
	in[0] = f.x;
	y = op1(&f, OP_RESHAPE, "reshape", in, 2);
	val(&f, y)->flags |= VALUE_OUTPUT;
	vec_push(&f.g->outputs, y);
	ASSERT(0, pass_infer(f.g));
	ASSERT(0, pass_dce(f.g));
	graph_verify(f.g);
	for (int i = 0; i < f.g->nodes.n; i++)
		live += !f.g->nodes.v[i].dead;
	ASSERT(1, live);
	ASSERT(OP_RESHAPE, f.g->nodes.v[0].op);
	ASSERT(-1, f.g->nodes.v[0].in[1]);
	ASSERT_STR("[batch,seq,64]", shape_str(&f, y));
	ASSERT_TRUE(op_lower_node(f.g, &f.g->nodes.v[0], "k") != NULL);
	fx_release(&f);
}

/* Reshape(x, Concat(batch, [-1], [16])) infers -1 = 4*seq. */
static void test_reshape_minus_one(void)
{
	struct fixture f;
	int in[3], cat, y;

	fx_init(&f);
	in[0] = size_of(&f, f.x, 0);
	in[1] = vec1(&f, -1);
	in[2] = vec1(&f, 16);
	cat = op1(&f, OP_CONCAT, "concat", in, 3);
	in[0] = f.x;
	in[1] = cat;
	y = op1(&f, OP_RESHAPE, "reshape", in, 2);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("[batch,4*seq,16]", shape_str(&f, y));
	fx_release(&f);
}

/* Gather(Shape(x), 2) is the constant 64: folded, no payload. */
static void test_constant_dim_folds(void)
{
	struct fixture f;
	int in[2], s, d;

	fx_init(&f);
	s = op1(&f, OP_SHAPE, "shape", &f.x, 1);
	in[0] = s;
	in[1] = scalar(&f, -1);
	d = op1(&f, OP_GATHER, "gather", in, 2);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("batch,seq,64", payload_str(&f, s));
	ASSERT_TRUE(val(&f, d)->data != NULL);
	ASSERT_TRUE(val(&f, d)->sym == NULL);
	ASSERT(-1, val(&f, d)->producer);
	ASSERT(64, *(int64_t *)val(&f, d)->data);
	fx_release(&f);
}

/* batch * seq, (batch * seq) / seq, seq % seq, Max(seq, seq), Neg, Shape[0:2]. */
static void test_arithmetic(void)
{
	struct fixture f;
	int in[5], b, s, bs, q, m, mx, ng, sl, eq;

	fx_init(&f);
	b = size_of(&f, f.x, 0);
	s = size_of(&f, f.x, 1);
	in[0] = b;
	in[1] = s;
	bs = op1(&f, OP_MUL, "mul", in, 2);
	in[0] = bs;
	q = op1(&f, OP_DIV, "div", in, 2);
	in[0] = s;
	m = op1(&f, OP_MOD, "mod", in, 2);
	mx = op1(&f, OP_MAX, "max", in, 2);
	eq = op1(&f, OP_EQUAL, "equal", in, 2);
	ng = op1(&f, OP_NEG, "neg", &bs, 1);
	in[0] = op1(&f, OP_SHAPE, "shape", &f.x, 1);
	in[1] = vec1(&f, 0);
	in[2] = vec1(&f, 2);
	sl = op1(&f, OP_SLICE, "slice", in, 3);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("batch*seq", payload_str(&f, bs));
	ASSERT_STR("batch", payload_str(&f, q));
	ASSERT_STR("0", payload_str(&f, m));
	ASSERT_TRUE(val(&f, m)->data != NULL);	/* constant: folded */
	ASSERT_STR("seq", payload_str(&f, mx));
	ASSERT_STR("1", payload_str(&f, eq));
	ASSERT_STR("-1*batch*seq", payload_str(&f, ng));
	ASSERT_STR("batch,seq", payload_str(&f, sl));
	fx_release(&f);
}

/*
 * How torch.onnx exports expand(): Where(Equal(shape, -1), ones, shape) over
 * shape = Concat(batch, [1], [64]) is the shape again, with no -1 in it.
 */
static void test_expand_export_pattern(void)
{
	struct fixture f;
	int in[3], shp, eq, w, y;
	int64_t ones[3] = { 1, 1, 1 };
	float one = 1;
	struct shape s1 = { 1, { dim_const(1) } };

	fx_init(&f);
	in[0] = size_of(&f, f.x, 0);
	in[1] = vec1(&f, 1);
	in[2] = vec1(&f, 64);
	shp = op1(&f, OP_CONCAT, "shape", in, 3);
	in[0] = shp;
	in[1] = vec1(&f, -1);
	eq = op1(&f, OP_EQUAL, "eq", in, 2);
	in[0] = eq;
	in[1] = ints(&f, 1, ones, 3);
	in[2] = shp;
	w = op1(&f, OP_WHERE, "where", in, 3);
	in[0] = graph_add_const(f.g, "one", DTYPE_F32, &s1, &one);
	in[1] = w;
	y = op1(&f, OP_EXPAND, "expand", in, 2);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_TRUE(val(&f, eq)->data != NULL);	/* all false: a constant */
	ASSERT_STR("0,0,0", payload_str(&f, eq));
	ASSERT_STR("batch,1,64", payload_str(&f, w));
	ASSERT_STR("[batch,1,64]", shape_str(&f, y));
	fx_release(&f);
}

/*
 * Split(x, Concat(5 - seq, 5 - seq)): 5 - seq may be negative, so the sizes
 * are no symbolic payload; they are data, and each output's length on the
 * axis a data symbol of its own, bound (and checked) when the model runs.
 */
static void test_inexpressible_split_is_dynamic(void)
{
	struct fixture f;
	int in[3], sub, cat, out[2], id;

	fx_init(&f);
	in[0] = vec1(&f, 5);
	in[1] = size_of(&f, f.x, 1);
	sub = op1(&f, OP_SUB, "five_minus_seq", in, 2);
	in[0] = sub;
	in[1] = sub;
	cat = op1(&f, OP_CONCAT, "concat", in, 2);
	in[0] = f.x;
	in[1] = cat;
	out[0] = graph_add_value(f.g, "y");
	out[1] = graph_add_value(f.g, "z");
	id = graph_add_node(f.g, OP_SPLIT, "split", in, 2, out, 2);
	f.g->nodes.v[id].op_type = "Split";
	node_set_attr_int(f.g, &f.g->nodes.v[id], "axis", 1);
	node_span_self(f.g, &f.g->nodes.v[id]);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("payload none", arena_printf(f.g->arena, "payload %s", payload_str(&f, sub)));
	ASSERT_STR("[batch,y[1],64]", shape_str(&f, out[0]));
	ASSERT_STR("[batch,z[1],64]", shape_str(&f, out[1]));
	ASSERT_TRUE(node_is_dynamic(f.g, &f.g->nodes.v[id]));
	fx_release(&f);
}

/*
 * Reshape(x, Concat(5 - seq, -1)) is data-dependent instead: its output dims
 * are data symbols named after it, bound when the model runs.
 */
static void test_inexpressible_reshape_is_dynamic(void)
{
	struct fixture f;
	int in[3], sub, cat, y;

	fx_init(&f);
	in[0] = vec1(&f, 5);
	in[1] = size_of(&f, f.x, 1);
	sub = op1(&f, OP_SUB, "five_minus_seq", in, 2);
	in[0] = sub;
	in[1] = vec1(&f, -1);
	cat = op1(&f, OP_CONCAT, "concat", in, 2);
	in[0] = f.x;
	in[1] = cat;
	y = op1(&f, OP_RESHAPE, "reshape", in, 2);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("[reshape[0],reshape[1]]", shape_str(&f, y));
	ASSERT_TRUE(graph_shape_late(f.g, &val(&f, y)->shape));
	ASSERT_TRUE(node_is_dynamic(f.g, &f.g->nodes.v[val(&f, y)->producer]));
	ASSERT_TRUE(!graph_shape_late(f.g, &val(&f, f.x)->shape));
	fx_release(&f);
}

/*
 * seq - 1, seq / 2, seq % 3 and max(batch, seq) become derived symbols:
 * x[:, :-1] is [batch,(seq-1),64], Concat(x, x[:, :-1]) on axis 1 is
 * (2*seq-1), (seq-1)+1 is seq again, and the same expression twice is one
 * symbol.
 */
static void test_derived_symbols(void)
{
	struct fixture f;
	int in[4], s, m1, p1, h, r, mx, sl, cat, again;

	fx_init(&f);
	s = size_of(&f, f.x, 1);
	in[0] = s;
	in[1] = vec1(&f, 1);
	m1 = op1(&f, OP_SUB, "seq_minus_one", in, 2);
	again = op1(&f, OP_SUB, "seq_minus_one_again", in, 2);
	in[0] = m1;
	p1 = op1(&f, OP_ADD, "plus_one", in, 2);
	in[0] = s;
	in[1] = vec1(&f, 2);
	h = op1(&f, OP_DIV, "half", in, 2);
	in[1] = vec1(&f, 3);
	r = op1(&f, OP_MOD, "rem", in, 2);
	in[1] = size_of(&f, f.x, 0);
	mx = op1(&f, OP_MAX, "max", in, 2);
	in[0] = f.x;
	in[1] = vec1(&f, 0);
	in[2] = vec1(&f, -1);
	in[3] = vec1(&f, 1);
	sl = op1(&f, OP_SLICE, "shift", in, 4);
	in[0] = f.x;
	in[1] = sl;
	cat = op1(&f, OP_CONCAT, "cat", in, 2);
	node_set_attr_int(f.g, &f.g->nodes.v[val(&f, cat)->producer], "axis", 1);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("(seq-1)", payload_str(&f, m1));
	ASSERT_STR("(seq-1)", payload_str(&f, again));
	ASSERT_STR("seq", payload_str(&f, p1));
	ASSERT_STR("(seq/2)", payload_str(&f, h));
	ASSERT_STR("(seq%3)", payload_str(&f, r));
	ASSERT_STR("max(seq,batch)", payload_str(&f, mx));
	ASSERT_STR("[batch,(seq-1),64]", shape_str(&f, sl));
	ASSERT_STR("[batch,(2*seq-1),64]", shape_str(&f, cat));
	/* seq-1, seq/2, seq%3, max(seq,batch), 2*seq-1: in the order made */
	ASSERT(5, f.g->sym_defs.n);
	ASSERT(SYM_ADD, f.g->sym_defs.v[0].op);
	ASSERT_TRUE(dim_eq(dim_sym(f.seq), f.g->sym_defs.v[0].a));
	ASSERT_TRUE(dim_eq(dim_const(-1), f.g->sym_defs.v[0].b));
	ASSERT(SYM_DIV, f.g->sym_defs.v[1].op);
	ASSERT(SYM_MOD, f.g->sym_defs.v[2].op);
	ASSERT(SYM_MAX, f.g->sym_defs.v[3].op);
	ASSERT(SYM_ADD, f.g->sym_defs.v[4].op);
	ASSERT_TRUE(dim_eq(dim_const(2), (struct dim){ f.g->sym_defs.v[4].a.c, 0, { 0 } }));
	graph_verify(f.g);
	fx_release(&f);
}

/*
 * Expand([1,64] const, Concat(batch, [1], [64])), Tile(x, [1, batch, 1]),
 * ConstantOfShape(Concat(batch, [3])), Range(0, seq, 1), Split(x, [seq, seq])
 * on Concat(x, x, axis 1), Slice(pos[1,32,64], ends = seq, axes = [1]).
 */
static void test_consumers(void)
{
	struct fixture f;
	int in[4], b, s, e, t, c, r, sp[2], sl, cat;
	float w[64] = { 0 }, pos[32 * 64] = { 0 };
	struct shape ws = { 2, { dim_const(1), dim_const(64) } };
	struct shape ps = { 3, { dim_const(1), dim_const(32), dim_const(64) } };
	int id;

	fx_init(&f);
	b = size_of(&f, f.x, 0);
	s = size_of(&f, f.x, 1);
	in[0] = b;
	in[1] = vec1(&f, 1);
	in[2] = vec1(&f, 64);
	in[1] = op1(&f, OP_CONCAT, "shape3", in, 3);
	in[0] = graph_add_const(f.g, "w", DTYPE_F32, &ws, w);
	e = op1(&f, OP_EXPAND, "expand", in, 2);

	in[0] = vec1(&f, 1);
	in[1] = b;
	in[2] = vec1(&f, 1);
	in[1] = op1(&f, OP_CONCAT, "reps", in, 3);
	in[0] = f.x;
	t = op1(&f, OP_TILE, "tile", in, 2);

	in[0] = b;
	in[1] = vec1(&f, 3);
	in[0] = op1(&f, OP_CONCAT, "cshape", in, 2);
	c = op1(&f, OP_CONSTANTOFSHAPE, "cos", in, 1);

	in[0] = scalar(&f, 0);
	in[1] = op1(&f, OP_SQUEEZE, "seq_scalar", &s, 1);
	in[2] = scalar(&f, 1);
	r = op1(&f, OP_RANGE, "range", in, 3);

	in[0] = f.x;
	in[1] = f.x;
	cat = op1(&f, OP_CONCAT, "xx", in, 2);
	node_set_attr_int(f.g, &f.g->nodes.v[val(&f, cat)->producer], "axis", 1);
	in[0] = cat;
	in[1] = op1(&f, OP_CONCAT, "sizes", (int[]){ s, s }, 2);
	sp[0] = graph_add_value(f.g, "split0");
	sp[1] = graph_add_value(f.g, "split1");
	id = graph_add_node(f.g, OP_SPLIT, "split", in, 2, sp, 2);
	f.g->nodes.v[id].op_type = "Split";
	node_span_self(f.g, &f.g->nodes.v[id]);
	node_set_attr_int(f.g, &f.g->nodes.v[id], "axis", 1);

	in[0] = graph_add_const(f.g, "pos", DTYPE_F32, &ps, pos);
	in[1] = vec1(&f, 0);
	in[2] = s;
	in[3] = vec1(&f, 1);
	sl = op1(&f, OP_SLICE, "slice", in, 4);

	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("[batch,1,64]", shape_str(&f, e));
	ASSERT_STR("[batch,batch*seq,64]", shape_str(&f, t));
	ASSERT_STR("[batch,3]", shape_str(&f, c));
	ASSERT_STR("[seq]", shape_str(&f, r));
	ASSERT_STR("[batch,2*seq,64]", shape_str(&f, cat));
	ASSERT_STR("[batch,seq,64]", shape_str(&f, sp[0]));
	ASSERT_STR("[batch,seq,64]", shape_str(&f, sp[1]));
	ASSERT_STR("[1,seq,64]", shape_str(&f, sl));
	/* the slice assumes seq <= 32, for the compiled model to check */
	ASSERT(1, f.g->checks.n);
	ASSERT_TRUE(dim_eq(dim_sym(f.seq), f.g->checks.v[0].a));
	ASSERT_TRUE(dim_eq(dim_const(32), f.g->checks.v[0].b));
	ASSERT_STR("slice", f.g->checks.v[0].node);
	graph_verify(f.g);
	/* every one of them lowers (the slice clamps its reads into the table) */
	for (int i = 0; i < f.g->nodes.n; i++)
		if (!f.g->nodes.v[i].dead)
			ASSERT_TRUE(op_lower_node(f.g, &f.g->nodes.v[i], "k") != NULL);
	fx_release(&f);
}

/* Resize(x4[batch,3,4,4], sizes = Concat(Shape(x4)[0:2], [8, 8])) is [batch,3,8,8]. */
static void test_resize_sizes(void)
{
	struct fixture f;
	struct shape xs = { 4, { dim_const(1), dim_const(3), dim_const(4), dim_const(4) } };
	int64_t eight[2] = { 8, 8 };
	int in[4], x4, y;

	fx_init(&f);
	xs.d[0] = dim_sym(f.batch);
	x4 = graph_add_value(f.g, "x4");
	val(&f, x4)->dtype = DTYPE_F32;
	val(&f, x4)->shape = xs;
	val(&f, x4)->has_shape = true;
	val(&f, x4)->flags |= VALUE_INPUT;
	vec_push(&f.g->inputs, x4);
	in[0] = op1(&f, OP_SHAPE, "shape", &x4, 1);
	in[1] = vec1(&f, 0);
	in[2] = vec1(&f, 2);
	in[0] = op1(&f, OP_SLICE, "nc", in, 3);
	in[1] = ints(&f, 1, eight, 2);
	in[3] = op1(&f, OP_CONCAT, "sizes", in, 2);
	in[0] = x4;
	in[1] = -1;
	in[2] = -1;
	y = op1(&f, OP_RESIZE, "resize", in, 4);
	ASSERT(0, pass_infer(f.g));
	ASSERT_STR("", sb_str(&f.cap));
	ASSERT_STR("[batch,3,8,8]", shape_str(&f, y));
	ASSERT_TRUE(op_lower_node(f.g, &f.g->nodes.v[val(&f, y)->producer], "k") != NULL);
	fx_release(&f);
}

/* Range(1, seq, 1) has (seq-1) elements; Range(seq, 1, 1) would have 1 - seq: an error. */
static void test_range_lengths(void)
{
	struct fixture f;
	int in[3], r;

	fx_init(&f);
	in[0] = scalar(&f, 1);
	in[1] = op1(&f, OP_SQUEEZE, "seq_scalar", (int[]){ size_of(&f, f.x, 1) }, 1);
	in[2] = scalar(&f, 1);
	r = op1(&f, OP_RANGE, "range", in, 3);
	in[0] = in[1];
	in[1] = scalar(&f, 1);
	op1(&f, OP_RANGE, "backwards", in, 3);
	ASSERT(-1, pass_infer(f.g));
	ASSERT_STR("[(seq-1)]", shape_str(&f, r));
	ASSERT_TRUE(strstr(sb_str(&f.cap), "'backwards' (Range): the length of Range(seq, 1, 1) "
			   "is not a constant times a product of symbols") != NULL);
	fx_release(&f);
}

TESTS({ "symint_arith", test_symint_arith },
      { "heads_reshape", test_heads_reshape },
      { "reshape_minus_one", test_reshape_minus_one },
      { "dce_drops_shape_arithmetic", test_dce_drops_shape_arithmetic },
      { "constant_dim_folds", test_constant_dim_folds },
      { "arithmetic", test_arithmetic },
      { "expand_export_pattern", test_expand_export_pattern },
      { "inexpressible_split_is_dynamic", test_inexpressible_split_is_dynamic },
      { "inexpressible_reshape_is_dynamic", test_inexpressible_reshape_is_dynamic },
      { "consumers", test_consumers },
      { "derived_symbols", test_derived_symbols },
      { "resize_sizes", test_resize_sizes },
      { "range_lengths", test_range_lengths })
