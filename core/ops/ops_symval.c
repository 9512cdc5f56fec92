/*
 * ops_symval.c - symbolic payloads: the values of the small integer tensors that
 * a model computes from shapes (Shape, Gather, Concat, Add, ...), kept as
 * symbolic integers (c * product of symbols, struct dim) while the shapes
 * are symbolic, so that the Reshape, Expand, Tile, ConstantOfShape, Range,
 * Split or Slice they drive gets symbolic output dims at compile time.
 *
 * The infer pass calls symval_try() on every node after inferring it. The
 * node stays in the graph: the generated code computes its value at run
 * time for whoever reads it as data. An input that its node reads only at
 * compile time (Reshape's shape, symval_compile_time_input) is dropped by
 * DCE when it has a payload, and the shape arithmetic behind it dies with
 * it. When every
 * element of every output comes out constant, the node is folded into
 * constants instead, as the fold pass would.
 *
 * Data movement (Gather, Concat, Slice, Split, Squeeze, Unsqueeze, Reshape,
 * Flatten, Identity, Expand, Tile, Transpose, Where) has no second
 * implementation here: the op's own lowering is run by the loop-IR
 * interpreter on element ids in place of the symbolic inputs, and the ids
 * that come out say which input element each output element copies.
 * Arithmetic (Add, Sub, Mul, Div, Mod, Min, Max, Sum, Neg, Abs, Equal, Cast)
 * is done on the symbolic integers. A sum, quotient, remainder, minimum or
 * maximum that is not c * product of symbols (seq - 1, N / 2) becomes a
 * derived symbol (graph_derive_sym) that the compiled model computes from
 * the bound ones. What is left (a comparison of symbols, 5 - N, a product
 * of more than three symbols) gives no payload, and a node that needs it
 * as a shape says so, naming the node that computed it (symval_explain).
 */
#include "ops.h"

#include <string.h>

/* element ids: (input + 1) << ID_SHIFT | position */
#define ID_SHIFT 20
#define ID_MAX_INPUTS 1000

static bool payload_dtype(enum dtype t)
{
	return t == DTYPE_I64 || t == DTYPE_I32 || t == DTYPE_BOOL;
}

/* Every output can hold a payload: int or bool, static and small. */
static bool outputs_fit(struct graph *g, const struct node *n)
{
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);

		if (!v->has_shape || !payload_dtype(v->dtype) || !shape_is_static(&v->shape) ||
		    shape_numel_static(&v->shape) > SYMVAL_MAX)
			return false;
	}
	return true;
}

/* ---- data movement through the op's lowering ---- */

/* Which inputs an op moves elements of; the others are read as constants. */
static bool moves_input(enum op op, int i)
{
	switch (op) {
	case OP_CONCAT:
		return true;
	case OP_WHERE:
		return i == 1 || i == 2;
	case OP_GATHER: case OP_SLICE: case OP_SPLIT: case OP_SQUEEZE: case OP_UNSQUEEZE:
	case OP_RESHAPE: case OP_FLATTEN: case OP_IDENTITY: case OP_EXPAND: case OP_TILE:
	case OP_TRANSPOSE:
		return i == 0;
	default:
		return false;
	}
}

static void store_int(void *p, enum dtype t, int64_t i, int64_t x)
{
	switch (t) {
	case DTYPE_I64: ((int64_t *)p)[i] = x; break;
	case DTYPE_I32: ((int32_t *)p)[i] = (int32_t)x; break;
	case DTYPE_BOOL: ((uint8_t *)p)[i] = x != 0; break;
	default: BUG("store_int of %s", dtype_name(t));
	}
}

static int64_t load_id(const void *p, enum dtype t, int64_t i)
{
	return t == DTYPE_I64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

/*
 * Runs the node's lowering on ids; out[k] receives output k's elements.
 * False when the node cannot be run this way (a constant input is not
 * constant, an id fell outside every input).
 */
static bool move_elements(struct graph *g, struct node *n, struct dim **out)
{
	struct dim **ins = arena_alloc(g->arena, sizeof(*ins) * (size_t)(n->n_in + 1));
	int64_t *cnt = arena_alloc(g->arena, sizeof(*cnt) * (size_t)(n->n_in + 1));
	void **bufs = arena_alloc(g->arena, sizeof(void *) * (size_t)(n->n_in + n->n_out + 1));
	struct tir_func *f;
	int k = 0, errs = g->ctx->n_errors;

	if (n->n_in > ID_MAX_INPUTS)
		return false;
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		ins[i] = NULL;
		if (!v)
			continue;
		if (!moves_input(n->op, i)) {
			if (!v->data)
				return false;
			bufs[k++] = v->data;
			continue;
		}
		if ((v->dtype != DTYPE_I64 && v->dtype != DTYPE_I32) ||
		    value_sym_ints(g, v, &ins[i], &cnt[i]) < 0 || cnt[i] >= (1 << ID_SHIFT))
			return false;
		bufs[k] = arena_alloc(g->arena, dtype_size(v->dtype) * (size_t)(cnt[i] + 1));
		for (int64_t j = 0; j < cnt[i]; j++)
			store_int(bufs[k], v->dtype, j, ((int64_t)(i + 1) << ID_SHIFT) | j);
		k++;
	}
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);

		if (v->dtype == DTYPE_BOOL)
			return false;
		bufs[k++] = arena_alloc(g->arena, dtype_size(v->dtype) *
					(size_t)(shape_numel_static(&v->shape) + 1));
	}
	f = op_lower_node(g, n, "symval");
	if (!f || g->ctx->n_errors > errs)
		return false;	/* the lowering's diagnostic stops the infer pass */
	if (tir_interpret(f, bufs, NULL) < 0)
		return false;
	k -= n->n_out;
	for (int o = 0; o < n->n_out; o++) {
		struct value *v = node_out(g, n, o);
		int64_t m = shape_numel_static(&v->shape);

		out[o] = arena_alloc(g->arena, sizeof(struct dim) * (size_t)(m ? m : 1));
		for (int64_t j = 0; j < m; j++) {
			int64_t id = load_id(bufs[k + o], v->dtype, j);
			int64_t i = (id >> ID_SHIFT) - 1, pos = id & ((1 << ID_SHIFT) - 1);

			if (i < 0 || i >= n->n_in || !ins[i] || pos >= cnt[i])
				return false;
			out[o][j] = ins[i][pos];
		}
	}
	return true;
}

/* ---- arithmetic on symbolic integers ---- */

static bool sym_div(struct graph *g, struct dim a, struct dim b, bool mod, struct dim *out)
{
	struct dim q;

	if (dim_is_const(a) && dim_is_const(b)) {
		if (b.c == 0 || (a.c == INT64_MIN && b.c == -1))
			return false;
		if (!mod) {
			*out = dim_const(a.c / b.c);	/* C and ONNX Runtime truncate */
		} else {
			int64_t r = a.c % b.c;

			/* Mod with fmod=0 takes the divisor's sign */
			*out = dim_const(r != 0 && (r < 0) != (b.c < 0) ? r + b.c : r);
		}
		return true;
	}
	if (dim_div(a, b, &q)) {
		*out = mod ? dim_const(0) : q;
		return true;
	}
	/* sizes are not negative: floor division, a derived symbol */
	if (a.c < 0 || b.c <= 0)
		return false;
	return graph_derive_sym(g, mod ? SYM_MOD : SYM_DIV, a, b, out);
}

static bool sym_binary(struct graph *g, enum op op, struct dim a, struct dim b,
		       struct dim *out)
{
	switch (op) {
	case OP_ADD: case OP_SUM: return graph_sym_add(g, a, b, out);
	case OP_SUB: return b.c != INT64_MIN && graph_sym_add(g, a, symint_neg(b), out);
	case OP_MUL: return dim_mul(a, b, out);
	case OP_DIV: return sym_div(g, a, b, false, out);
	case OP_MOD: return sym_div(g, a, b, true, out);
	case OP_MIN: case OP_MAX:
		if (dim_eq(a, b)) {
			*out = a;
			return true;
		}
		if (dim_is_const(a) && dim_is_const(b)) {
			*out = dim_const(op == OP_MIN ? MIN(a.c, b.c) : MAX(a.c, b.c));
			return true;
		}
		if (a.c < 0 || b.c < 0)
			return false;
		if (dim_is_const(a)) {
			struct dim t = a;

			a = b;
			b = t;
		}
		return graph_derive_sym(g, op == OP_MIN ? SYM_MIN : SYM_MAX, a, b, out);
	case OP_EQUAL:
		if (dim_eq(a, b)) {
			*out = dim_const(1);
			return true;
		}
		/*
		 * c * symbols has c's sign or is 0 (symbols are sizes, never
		 * negative): Equal(N, -1), as exported Expand shapes test, is 0
		 */
		if (!dim_is_const(a) && dim_is_const(b) && (b.c < 0) != (a.c < 0) && b.c != 0)
			*out = dim_const(0);
		else if (!dim_is_const(b) && dim_is_const(a) && (a.c < 0) != (b.c < 0) && a.c != 0)
			*out = dim_const(0);
		else if (dim_is_const(a) && dim_is_const(b))
			*out = dim_const(0);
		else
			return false;
		return true;
	default:
		return false;
	}
}

/* Flat index into in (static) of flat output index o under broadcasting. */
static int64_t bcast_index(const struct shape *in, const struct shape *out, int64_t o)
{
	int64_t idx = 0, stride = 1;

	for (int k = out->rank - 1; k >= 0; k--) {
		int ki = k - (out->rank - in->rank);
		int64_t ok = o % out->d[k].c;

		o /= out->d[k].c;
		if (ki < 0)
			continue;
		idx += (in->d[ki].c == 1 ? 0 : ok) * stride;
		stride *= in->d[ki].c;
	}
	return idx;
}

static bool arith_elements(struct graph *g, struct node *n, struct dim **out)
{
	struct value *y = node_out(g, n, 0);
	int64_t m = shape_numel_static(&y->shape);
	struct dim *r = arena_alloc(g->arena, sizeof(struct dim) * (size_t)(m ? m : 1));

	for (int i = 0; i < n->n_in; i++) {
		struct value *x = node_in(g, n, i);
		struct dim *xv;
		int64_t cnt;

		if (!x || !payload_dtype(x->dtype) || value_sym_ints(g, x, &xv, &cnt) < 0)
			return false;
		for (int64_t j = 0; j < m; j++) {
			struct dim d = xv[bcast_index(&x->shape, &y->shape, j)];

			if (n->op == OP_NEG)
				d = symint_neg(d);
			else if (n->op == OP_ABS && d.c < 0)
				d = symint_neg(d);	/* symbols are never negative */
			if (i == 0)
				r[j] = d;
			else if (!sym_binary(g, n->op, r[j], d, &r[j]))
				return false;
		}
	}
	if (n->op == OP_EQUAL || y->dtype == DTYPE_BOOL) {
		for (int64_t j = 0; j < m; j++)
			if (!dim_is_const(r[j]))
				return false;
	}
	if (y->dtype == DTYPE_I32) {
		for (int64_t j = 0; j < m; j++)
			if (r[j].c < INT32_MIN || r[j].c > INT32_MAX)
				return false;
	}
	out[0] = r;
	return true;
}

/* ---- Shape and Size ---- */

static bool shape_elements(struct graph *g, struct node *n, struct dim **out)
{
	struct value *x = node_in(g, n, 0);
	int b, e;

	if (n->op == OP_SIZE) {
		out[0] = arena_alloc(g->arena, sizeof(struct dim));
		return shape_numel(&x->shape, out[0]);
	}
	shape_op_range(n, x->shape.rank, &b, &e);
	out[0] = arena_alloc(g->arena, sizeof(struct dim) * (size_t)(e - b + 1));
	for (int i = b; i < e; i++)
		out[0][i - b] = x->shape.d[i];
	return true;
}

/* ---- driver ---- */

static bool has_payload_input(struct graph *g, const struct node *n)
{
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (v && v->sym)
			return true;
	}
	return false;
}

static bool elements(struct graph *g, struct node *n, struct dim **out)
{
	switch (n->op) {
	case OP_SHAPE: case OP_SIZE:
		return shape_elements(g, n, out);
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD: case OP_MIN:
	case OP_MAX: case OP_SUM: case OP_NEG: case OP_ABS: case OP_EQUAL:
		return arith_elements(g, n, out);
	case OP_CAST: case OP_CASTLIKE:
		/* int to int is the identity on values that fit, bool tests for 0 */
		return n->op == OP_CAST && arith_elements(g, n, out);
	default:
		return moves_input(n->op, 0) || moves_input(n->op, 1) ? move_elements(g, n, out)
			: false;
	}
}

/* Turns the outputs into constants and the node into a dead one. */
static void materialize(struct graph *g, struct node *n, struct dim **out)
{
	for (int o = 0; o < n->n_out; o++) {
		struct value *v = node_out(g, n, o);
		int64_t m = shape_numel_static(&v->shape);

		v->data = arena_alloc(g->arena, dtype_size(v->dtype) * (size_t)(m ? m : 1));
		for (int64_t j = 0; j < m; j++)
			store_int(v->data, v->dtype, j, out[o][j].c);
		v->sym = NULL;
		v->producer = -1;
	}
	n->dead = true;
}

int symval_try(struct graph *g, struct node *n)
{
	struct dim **out;
	bool all_const = true;

	if (n->dead || !outputs_fit(g, n))
		return 0;
	if (!has_payload_input(g, n) &&
	    !((n->op == OP_SHAPE || n->op == OP_SIZE) && !shape_is_static(&node_in(g, n, 0)->shape)))
		return 0;
	out = arena_alloc(g->arena, sizeof(*out) * (size_t)n->n_out);
	if (!elements(g, n, out))
		return 0;
	for (int o = 0; o < n->n_out; o++) {
		int64_t m = shape_numel_static(&node_out(g, n, o)->shape);

		for (int64_t j = 0; j < m; j++)
			all_const &= dim_is_const(out[o][j]);
	}
	if (all_const) {
		materialize(g, n, out);
		return 0;
	}
	for (int o = 0; o < n->n_out; o++)
		node_out(g, n, o)->sym = out[o];
	return 0;
}

bool symval_compile_time_input(enum op op, int i)
{
	switch (op) {
	case OP_RESHAPE: case OP_EXPAND: case OP_TILE:
		return i == 1;
	case OP_RANGE:		/* the kernel reads start and delta only */
		return i == 1;
	case OP_CONSTANTOFSHAPE:
		return i == 0;
	default:
		return false;
	}
}

/*
 * The node that stopped a shape computation from being known: the first
 * node on the way back from v whose inputs are all known (constants or
 * payloads) and whose output is not. NULL when v is known or depends on
 * run-time data (a graph input).
 */
static const struct node *culprit(struct graph *g, const struct value *v, int depth)
{
	const struct node *p;

	if (v->data || v->sym || v->producer < 0 || depth > 64)
		return NULL;
	p = &g->nodes.v[v->producer];
	if (p->op == OP_SHAPE || p->op == OP_SIZE)
		return p;
	for (int i = 0; i < p->n_in; i++) {
		struct value *x = node_in(g, p, i);

		if (x && !x->data && !x->sym)
			return culprit(g, x, depth + 1);
	}
	return p;
}

const char *symval_explain(struct graph *g, const struct value *v)
{
	const struct node *p = culprit(g, v, 0);

	if (!p)
		return NULL;
	return arena_printf(g->arena, "'%s' (%s) computes it from symbolic dims as a value "
			    "collagec cannot represent symbolically", p->name, p->op_type);
}
