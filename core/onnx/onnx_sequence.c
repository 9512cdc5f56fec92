/*
 * onnx_sequence.c - sequences and optionals, resolved when compiling.
 *
 * A sequence (or optional) value whose element count is known holds the
 * value ids of its elements (struct seq). pass_infer hands each sequence
 * node here once its inputs are known, and the node becomes the nodes on
 * its elements, named "node/what" with the node's span, like the If/Loop
 * expansion (onnx_control.c):
 *
 *   SequenceConstruct, SequenceEmpty, SequenceInsert, SequenceErase,
 *   Optional                 a new element list, no node
 *   SequenceAt, OptionalGetElement, Identity
 *                            the element itself (an Identity node)
 *   SequenceLength, OptionalHasElement
 *                            a constant
 *   SplitToSequence          one Slice (or Gather, keepdims=0) per piece
 *   ConcatFromSequence       Concat (new_axis: of Unsqueezes)
 *   Where (an If or Loop on a run-time condition over sequences)
 *                            one Where per element; lengths must agree
 *
 * A position known when compiling (a constant or shape arithmetic) picks
 * elements; with one known only at run time (SequenceAt, SequenceInsert,
 * SequenceErase) each output element chooses among the elements it may be
 * (choose(): one dtype and rank; Wheres, or a flat copy Sliced and Reshaped
 * when their dims differ): a position still out of range after adding n
 * takes the nearest end, as Gather's indices do.
 * SplitToSequence by a run-time split of static length k makes k Slices
 * whose bounds are its cumulative sums (data-dependent dims; sizes that do
 * not add up to the axis are clamped as Slice clamps, not refused).
 * SequenceMap is unrolled per element by onnx_control.c. Graph outputs that
 * are sequences become one output per element (onnx_sequence_outputs).
 * A sequence whose length is only known at run time (a run-time Loop
 * carries it, a run-time If chooses between lengths) goes to onnx_seqrt.c.
 */
#include "onnx_import.h"

#include <string.h>

#include "../ops/ops.h"

struct seqx {
	struct graph *g;
	struct node n;		/* a copy of the node (g->nodes moves) */
};

static struct seq *seq_of(struct graph *g, int v)
{
	return v >= 0 ? g->values.v[v].seq : NULL;
}

/* Makes value v the sequence (or optional) elems[0..n). */
static void seq_set(struct graph *g, int v, const int *elems, int n, bool optional,
		    enum dtype elem)
{
	struct seq *s = arena_alloc(g->arena, sizeof(*s));
	struct value *val = &g->values.v[v];

	s->n = n;
	s->elems = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
	if (n)
		memcpy(s->elems, elems, sizeof(int) * (size_t)n);
	s->optional = optional;
	s->elem = elem;
	val->seq = s;
	val->dtype = elem == DTYPE_UNDEF ? DTYPE_F32 : elem;
	val->has_shape = true;
	val->shape.rank = 0;
}

/* A node of the resolution: the sequence node's span. */
static int glue(struct seqx *x, enum op op, const char *type, const char *what, const int *in,
		int n_in, int out)
{
	return onnx_glue(x->g, &x->n, op, type, what, in, n_in, out);
}

static int const_i64s(struct seqx *x, const char *what, const int64_t *v, int n, int rank)
{
	struct shape s = { rank, { { n, 0, { 0 } } } };

	return graph_add_const(x->g, arena_printf(x->g->arena, "%s/%s", x->n.name, what),
			       DTYPE_I64, &s, v);
}

/* Makes value v a constant scalar (SequenceLength, OptionalHasElement). */
static void set_const(struct graph *g, int v, enum dtype t, const void *data)
{
	struct value *val = &g->values.v[v];

	val->dtype = t;
	val->shape.rank = 0;
	val->has_shape = true;
	val->data = arena_memdup(g->arena, data, dtype_size(t));
}

/* dst becomes src: the same element list, or an Identity of a tensor. */
static void alias(struct seqx *x, int src, int dst, const char *what)
{
	struct seq *s = seq_of(x->g, src);

	if (s)
		seq_set(x->g, dst, s->elems, s->n, s->optional, s->elem);
	else
		glue(x, OP_IDENTITY, "Identity", what, &src, 1, dst);
}

static struct seq *need_seq(struct seqx *x, int i)
{
	int v = i < x->n.n_in ? x->n.in[i] : -1;
	struct seq *s = seq_of(x->g, v);

	if (!s || s->optional) {
		diag_error(x->g->ctx, "%s: input %d '%s' must be a sequence", node_loc(x->g, &x->n),
			   i, v >= 0 ? x->g->values.v[v].name : "");
		return NULL;
	}
	return s;
}

static int need_tensor(struct seqx *x, int i)
{
	int v = i < x->n.n_in ? x->n.in[i] : -1;

	if (v < 0 || seq_of(x->g, v)) {
		diag_error(x->g->ctx, "%s: input %d '%s' must be a tensor", node_loc(x->g, &x->n),
			   i, v >= 0 ? x->g->values.v[v].name : "");
		return -1;
	}
	return v;
}

/*
 * The position input i (absent: def), checked against lo..hi after adding
 * n to a negative one. 1 when it is only known at run time (*pos is then
 * its value id), 0 when known, -1 after a diagnostic.
 */
static int position(struct seqx *x, int i, int n, int def, int lo, int hi, int *pos)
{
	struct graph *g = x->g;
	int v = i < x->n.n_in ? x->n.in[i] : -1;
	double d;

	if (v < 0) {
		*pos = def;
		return 0;
	}
	if (!value_const_scalar(g, &g->values.v[v], &d)) {
		*pos = v;
		return 1;
	}
	*pos = d < -1e6 || d > 1e6 ? -1 - n : (int)d;	/* far out: out of range */
	if (*pos < 0)
		*pos += n;
	if (*pos < lo || *pos > hi) {
		diag_error(g->ctx, "%s: position %lld is out of range for a sequence of %d "
			   "elements", node_loc(g, &x->n), (long long)d, n);
		return -1;
	}
	return 0;
}

/* A new int64 scalar constant named what. */
static int scalar(struct seqx *x, const char *what, int64_t v)
{
	return const_i64s(x, what, &v, 1, 0);
}

/* Value v (int32 or int64) as int64: v itself, or a Cast named what. */
static int as_int64(struct seqx *x, int v, const char *what)
{
	if (x->g->values.v[v].dtype == DTYPE_I64)
		return v;
	v = glue(x, OP_CAST, "Cast", what, &v, 1, -1);
	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "to",
			  ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	return v;
}

/*
 * Where pieces of the int64 sizes (1-D) begin and end one after the other:
 * returns the ends (CumSum, named what.ends), *starts the ends less the
 * sizes (what.starts).
 */
static int piece_bounds(struct seqx *x, int sizes, const char *what, int *starts)
{
	struct graph *g = x->g;
	int in[2] = { sizes, scalar(x, arena_printf(g->arena, "%s.axis", what), 0) }, ends;

	ends = glue(x, OP_CUMSUM, "CumSum", arena_printf(g->arena, "%s.ends", what), in, 2, -1);
	in[0] = ends;
	in[1] = sizes;
	*starts = glue(x, OP_SUB, "Sub", arena_printf(g->arena, "%s.starts", what), in, 2, -1);
	return ends;
}

/*
 * Position value v of a sequence of n elements as an int64 scalar counting
 * from 0: v, or v + n when negative. -1 after a diagnostic.
 */
static int runtime_position(struct seqx *x, int v, int n)
{
	struct graph *g = x->g;
	enum dtype t = g->values.v[v].dtype;
	struct shape sh = g->values.v[v].shape;
	int64_t zero = 0;
	int in[3], neg, wrapped;

	if ((t != DTYPE_I64 && t != DTYPE_I32) || !(sh.rank == 0 || (sh.rank == 1 &&
	    dim_is_const(sh.d[0]) && sh.d[0].c == 1))) {
		diag_error(g->ctx, "%s: position '%s' must be an int32 or int64 scalar",
			   node_loc(g, &x->n), g->values.v[v].name);
		return -1;
	}
	if (sh.rank) {
		in[0] = v;
		in[1] = const_i64s(x, "position.shape", &zero, 0, 1);
		v = glue(x, OP_RESHAPE, "Reshape", "position.scalar", in, 2, -1);
	}
	v = as_int64(x, v, "position.int64");
	in[0] = v;
	in[1] = scalar(x, "position.zero", 0);
	neg = glue(x, OP_LESS, "Less", "position.negative", in, 2, -1);
	in[1] = scalar(x, "position.n", n);
	wrapped = glue(x, OP_ADD, "Add", "position.wrapped", in, 2, -1);
	in[0] = neg;
	in[1] = wrapped;
	in[2] = v;
	return glue(x, OP_WHERE, "Where", "position", in, 3, -1);
}

/* Where(q OP j, a, b) for a constant j, named what, into out (or a new value). */
static int pick(struct seqx *x, int q, enum op op, int64_t j, int a, int b, const char *what,
		int out)
{
	struct graph *g = x->g;
	int in[3] = { q, scalar(x, arena_printf(g->arena, "%s.j", what), j), -1 };

	in[0] = glue(x, op, op == OP_LESS ? "Less" : "Greater", arena_printf(g->arena, "%s.test",
			what), in, 2, -1);
	in[1] = a;
	in[2] = b;
	return glue(x, OP_WHERE, "Where", what, in, 3, out);
}

/*
 * Tensor c[sel] of c[0..m) for the int64 scalar value sel (below 0: c[0],
 * m or more: c[m - 1]), into out (or a new value named what). Tensors of
 * one dtype and shape are chosen by a chain of Wheres; tensors of one rank
 * whose dims differ go through one flat Concat of them all, the chosen
 * one's range Sliced and Reshaped to its dims (data-dependent dims).
 * -1 after a diagnostic naming the position pos.
 */
static int choose(struct seqx *x, int pos, const int *c, int m, int sel, const char *what,
		  int out)
{
	struct graph *g = x->g;
	const struct value *c0 = &g->values.v[c[0]];
	enum dtype t = c0->dtype;
	int r = c0->shape.rank, in[4], *flat, *shp, *cnt, cat, ends, starts, at;
	bool same = true;
	int64_t minus1 = -1, zero = 0, one = 1;

	for (int i = 1; i < m; i++) {
		const struct value *ci = &g->values.v[c[i]];

		if (ci->dtype != t || ci->shape.rank != r) {
			diag_error(g->ctx, "%s: position '%s' is only known at run time, so the "
				   "tensors it chooses between need one dtype and rank: '%s' is %s "
				   "of rank %d, '%s' is %s of rank %d", node_loc(g, &x->n),
				   g->values.v[pos].name, c0->name, dtype_name(t), r, ci->name,
				   dtype_name(ci->dtype), ci->shape.rank);
			return -1;
		}
		same &= shape_eq(&ci->shape, &c0->shape);
	}
	if (m == 1)
		return glue(x, OP_IDENTITY, "Identity", what, c, 1, out);
	if (same) {
		/* sel <= i takes c[i], the first i that holds */
		int cur = c[m - 1];

		for (int i = m - 2; i >= 0; i--)
			cur = pick(x, sel, OP_LESS, i + 1, c[i], cur,
				   i ? arena_printf(g->arena, "%s.%d", what, i) : what, i ? -1 : out);
		return cur;
	}
	flat = arena_alloc(g->arena, sizeof(int) * (size_t)m);
	shp = arena_alloc(g->arena, sizeof(int) * (size_t)m);
	cnt = arena_alloc(g->arena, sizeof(int) * (size_t)m);
	for (int i = 0; i < m; i++) {
		const char *w = arena_printf(g->arena, "%s.%d", what, i);

		in[0] = c[i];
		in[1] = const_i64s(x, arena_printf(g->arena, "%s.minus1", w), &minus1, 1, 1);
		flat[i] = glue(x, OP_RESHAPE, "Reshape", arena_printf(g->arena, "%s.flat", w), in,
			       2, -1);
		in[0] = glue(x, OP_SHAPE, "Shape", arena_printf(g->arena, "%s.shape", w), &c[i], 1,
			     -1);
		cnt[i] = glue(x, OP_REDUCEPROD, "ReduceProd", arena_printf(g->arena, "%s.numel", w),
			      in, 1, -1);
		in[1] = const_i64s(x, arena_printf(g->arena, "%s.axis", w), &zero, 1, 1);
		shp[i] = glue(x, OP_UNSQUEEZE, "Unsqueeze", arena_printf(g->arena, "%s.dims", w),
			      in, 2, -1);
	}
	cat = glue(x, OP_CONCAT, "Concat", arena_printf(g->arena, "%s.flat", what), flat, m, -1);
	node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "axis", 0);
	in[0] = glue(x, OP_CONCAT, "Concat", arena_printf(g->arena, "%s.numels", what), cnt, m,
		     -1);
	node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "axis", 0);
	ends = piece_bounds(x, in[0], what, &starts);
	in[0] = sel;
	in[1] = const_i64s(x, arena_printf(g->arena, "%s.shape1", what), &one, 1, 1);
	at = glue(x, OP_RESHAPE, "Reshape", arena_printf(g->arena, "%s.at", what), in, 2, -1);
	{
		int a[2] = { starts, at }, b[2] = { ends, at }, sl[4], d[2];

		sl[0] = cat;
		sl[1] = glue(x, OP_GATHER, "Gather", arena_printf(g->arena, "%s.start", what), a,
			     2, -1);
		sl[2] = glue(x, OP_GATHER, "Gather", arena_printf(g->arena, "%s.end", what), b, 2,
			     -1);
		sl[3] = const_i64s(x, arena_printf(g->arena, "%s.axes", what), &zero, 1, 1);
		in[0] = glue(x, OP_SLICE, "Slice", arena_printf(g->arena, "%s.piece", what), sl, 4,
			     -1);
		d[0] = glue(x, OP_CONCAT, "Concat", arena_printf(g->arena, "%s.shapes", what), shp,
			    m, -1);
		node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "axis", 0);
		d[1] = sel;
		in[1] = glue(x, OP_GATHER, "Gather", arena_printf(g->arena, "%s.dims", what), d, 2,
			     -1);
	}
	return glue(x, OP_RESHAPE, "Reshape", what, in, 2, out);
}

/*
 * SequenceAt, SequenceInsert (t >= 0) or SequenceErase of s at the
 * run-time position value p, into out: each output element chooses among
 * the elements it may be, by the position.
 */
static int runtime_at(struct seqx *x, const struct seq *s, int p, int t, int out)
{
	struct graph *g = x->g;
	int n = s->n, q, *e;

	if (n == 0 && t < 0) {
		diag_error(g->ctx, "%s: the sequence is empty", node_loc(g, &x->n));
		return -1;
	}
	if ((q = runtime_position(x, p, n)) < 0)
		return -1;
	if (x->n.op == OP_SEQUENCEAT)
		return choose(x, p, s->elems, n, q, "at", out) < 0 ? -1 : 0;
	e = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 2));
	if (t >= 0) {
		/* out[j] is s[j] (q > j), t (q == j) or s[j - 1] (q < j), j = 0..n */
		for (int j = 0; j <= n; j++) {
			const char *w = arena_printf(g->arena, "insert%d", j);
			int c[3], m = 0, sel;

			if (j < n)
				c[m++] = s->elems[j];
			c[m++] = t;
			if (j > 0)
				c[m++] = s->elems[j - 1];
			/* the index into c of t, or of s[j - 1] when q < j */
			sel = pick(x, q, OP_LESS, j, scalar(x, arena_printf(g->arena, "%s.before", w),
							    m - 1),
				   scalar(x, arena_printf(g->arena, "%s.here", w), j < n),
				   arena_printf(g->arena, "%s.choice", w), -1);
			if (j < n)
				sel = pick(x, q, OP_GREATER, j, scalar(x, arena_printf(
					   g->arena, "%s.after", w), 0), sel,
					   arena_printf(g->arena, "%s.which", w), -1);
			if ((e[j] = choose(x, p, c, m, sel, w, -1)) < 0)
				return -1;
		}
		seq_set(g, out, e, n + 1, false, g->values.v[t].dtype);
		return 0;
	}
	/* out[j] is s[j] (q > j) or s[j + 1], j = 0..n-2 */
	for (int j = 0; j + 1 < n; j++) {
		const char *w = arena_printf(g->arena, "erase%d", j);
		int sel = pick(x, q, OP_GREATER, j, scalar(x, arena_printf(g->arena, "%s.keep", w),
							   0),
			       scalar(x, arena_printf(g->arena, "%s.next", w), 1),
			       arena_printf(g->arena, "%s.which", w), -1);

		if ((e[j] = choose(x, p, s->elems + j, 2, sel, w, -1)) < 0)
			return -1;
	}
	seq_set(g, out, e, n - 1, false, s->elem);
	return 0;
}

/*
 * SplitToSequence of x on axis by split sizes known only at run time: a
 * 1-D split of static length k gives k Slices from its exclusive and
 * inclusive cumulative sums.
 */
static int runtime_split(struct seqx *x, int in, int sp, int64_t axis)
{
	struct graph *g = x->g;
	const struct value *v = &g->values.v[sp];
	enum dtype t = g->values.v[in].dtype;
	int64_t k = v->shape.rank == 1 && dim_is_const(v->shape.d[0]) ? v->shape.d[0].c : -1;
	int a[4], ends, starts, *elems;

	if (k < 0 || k > 1024 || (v->dtype != DTYPE_I64 && v->dtype != DTYPE_I32)) {
		diag_error(g->ctx, "%s: split '%s' is only known at run time; it must then be a "
			   "1-D int32 or int64 tensor of static length (up to 1024)",
			   node_loc(g, &x->n), v->name);
		return -1;
	}
	ends = piece_bounds(x, as_int64(x, sp, "split.int64"), "split", &starts);
	elems = arena_alloc(g->arena, sizeof(int) * (size_t)(k + 1));
	for (int64_t i = 0; i < k; i++) {
		const char *w = arena_printf(g->arena, "piece%lld", (long long)i);
		int64_t lo = i, hi = i + 1;
		int b[4];

		b[1] = const_i64s(x, arena_printf(g->arena, "%s.at", w), &lo, 1, 1);
		b[2] = const_i64s(x, arena_printf(g->arena, "%s.next", w), &hi, 1, 1);
		b[0] = starts;
		a[1] = glue(x, OP_SLICE, "Slice", arena_printf(g->arena, "%s.start", w), b, 3, -1);
		b[0] = ends;
		a[2] = glue(x, OP_SLICE, "Slice", arena_printf(g->arena, "%s.end", w), b, 3, -1);
		a[0] = in;
		a[3] = const_i64s(x, arena_printf(g->arena, "%s.axes", w), &axis, 1, 1);
		elems[i] = glue(x, OP_SLICE, "Slice", w, a, 4, -1);
	}
	seq_set(g, x->n.out[0], elems, (int)k, false, t);
	return 0;
}

static int split_to_sequence(struct seqx *x)
{
	struct graph *g = x->g;
	int in = need_tensor(x, 0), sp = x->n.n_in > 1 ? x->n.in[1] : -1;
	int64_t axis = node_attr_int(&x->n, "axis", 0), keep = node_attr_int(&x->n, "keepdims", 1);
	int64_t *sizes = NULL, count = 0, len, at = 0;
	const struct value *v;	/* x; moves when the pieces add values */
	enum dtype t;
	int *elems;

	if (in < 0)
		return -1;
	v = &g->values.v[in];
	t = v->dtype;
	if (axis < 0)
		axis += v->shape.rank;
	if (axis >= 0 && axis < v->shape.rank && sp >= 0 &&
	    value_const_ints(g, &g->values.v[sp], &sizes, &count) < 0)
		return runtime_split(x, in, sp, axis);
	if (axis < 0 || axis >= v->shape.rank || !dim_is_const(v->shape.d[axis])) {
		diag_error(g->ctx, "%s: axis %lld must be an axis of static length of '%s'",
			   node_loc(g, &x->n), (long long)node_attr_int(&x->n, "axis", 0),
			   v->name);
		return -1;
	}
	len = v->shape.d[axis].c;	/* a split's sizes (and count) were read above */
	if (sp >= 0 && g->values.v[sp].shape.rank == 0) {
		int64_t c = sizes[0], k = c > 0 ? (len + c - 1) / c : -1;

		if (c <= 0) {
			diag_error(g->ctx, "%s: split %lld must be positive", node_loc(g, &x->n),
				   (long long)c);
			return -1;
		}
		sizes = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(k + 1));
		for (int64_t i = 0; i < k; i++)
			sizes[i] = i < k - 1 || len % c == 0 ? c : len % c;
		count = k;
	} else if (sp < 0) {
		count = len;
		sizes = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(len + 1));
		for (int64_t i = 0; i < len; i++)
			sizes[i] = 1;
	}
	for (int64_t i = 0; i < count; i++) {
		if (sizes[i] < 0) {
			diag_error(g->ctx, "%s: split size %lld is negative", node_loc(g, &x->n),
				   (long long)sizes[i]);
			return -1;
		}
		at += sizes[i];
	}
	if (at != len || count > 1024) {
		diag_error(g->ctx, "%s: the split sizes add up to %lld, not the axis length %lld",
			   node_loc(g, &x->n), (long long)at, (long long)len);
		return -1;
	}
	elems = arena_alloc(g->arena, sizeof(int) * (size_t)(count + 1));
	at = 0;
	for (int64_t i = 0; i < count; i++) {
		const char *w = arena_printf(g->arena, "piece%lld", (long long)i);

		if (sp < 0 && !keep) {
			int a[2] = { in, const_i64s(x, arena_printf(g->arena, "%s.index", w), &at,
						     1, 0) };

			elems[i] = glue(x, OP_GATHER, "Gather", w, a, 2, -1);
			node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "axis", axis);
		} else {
			int64_t e = at + sizes[i];
			int a[4] = { in,
				     const_i64s(x, arena_printf(g->arena, "%s.starts", w), &at, 1, 1),
				     const_i64s(x, arena_printf(g->arena, "%s.ends", w), &e, 1, 1),
				     const_i64s(x, arena_printf(g->arena, "%s.axes", w), &axis, 1,
						1) };

			elems[i] = glue(x, OP_SLICE, "Slice", w, a, 4, -1);
		}
		at += sizes[i];
	}
	seq_set(g, x->n.out[0], elems, (int)count, false, t);
	return 0;
}

static int concat_from_sequence(struct seqx *x)
{
	struct graph *g = x->g;
	struct seq *s = need_seq(x, 0);
	int64_t axis = node_attr_int(&x->n, "axis", 0);
	int *parts;

	if (!s)
		return -1;
	if (!s->n) {
		diag_error(g->ctx, "%s: the sequence is empty", node_loc(g, &x->n));
		return -1;
	}
	parts = arena_alloc(g->arena, sizeof(int) * (size_t)(s->n + 1));
	for (int i = 0; i < s->n; i++) {
		int in[2] = { s->elems[i], -1 };

		parts[i] = s->elems[i];
		if (!node_attr_int(&x->n, "new_axis", 0))
			continue;
		in[1] = const_i64s(x, arena_printf(g->arena, "unsqueeze%d.axes", i), &axis, 1, 1);
		parts[i] = glue(x, OP_UNSQUEEZE, "Unsqueeze", arena_printf(g->arena,
				"unsqueeze%d", i), in, 2, -1);
	}
	glue(x, OP_CONCAT, "Concat", "concat", parts, s->n, x->n.out[0]);
	node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "axis", axis);
	return 0;
}

/* Where(c, a, b) over sequences: element by element, into out (or a new value). */
static int select_seq(struct seqx *x, int c, int a, int b, const char *what, int out)
{
	struct graph *g = x->g;
	struct seq *sa = seq_of(g, a), *sb = seq_of(g, b);
	int *e;

	if (!sa && !sb) {
		int in[3] = { c, a, b };

		return glue(x, OP_WHERE, x->n.op_type, what, in, 3, out);
	}
	if (!sa || !sb || sa->n != sb->n || sa->optional != sb->optional) {
		diag_error(g->ctx, "%s: with a condition computed at run time both sides must be "
			   "%s of the same length (%d and %d elements)", node_loc(g, &x->n),
			   sa && sa->optional ? "optionals" : "sequences", sa ? sa->n : -1,
			   sb ? sb->n : -1);
		return -1;
	}
	e = arena_alloc(g->arena, sizeof(int) * (size_t)(sa->n + 1));
	for (int i = 0; i < sa->n; i++) {
		e[i] = select_seq(x, c, sa->elems[i], sb->elems[i],
				  arena_printf(g->arena, "%s[%d]", what, i), -1);
		if (e[i] < 0)
			return -1;
	}
	if (out < 0)
		out = graph_add_value(g, arena_printf(g->arena, "%s/%s", x->n.name, what));
	seq_set(g, out, e, sa->n, sa->optional, sa->elem);
	return out;
}

static int resolve(struct seqx *x)
{
	struct graph *g = x->g;
	int out = x->n.out[0], pos, k;
	struct seq *s;
	int *e;

	if (seqrt_wanted(g, &x->n))
		return seqrt_resolve(g, &x->n);
	switch (x->n.op) {
	case OP_IDENTITY:
		alias(x, x->n.in[0], out, "identity");
		return 0;
	case OP_WHERE:
		return select_seq(x, x->n.in[0], x->n.in[1], x->n.in[2], "select", out) < 0 ? -1 : 0;
	case OP_SEQUENCECONSTRUCT:
		for (int i = 0; i < x->n.n_in; i++) {
			if (need_tensor(x, i) < 0)
				return -1;
			if (g->values.v[x->n.in[i]].dtype != g->values.v[x->n.in[0]].dtype) {
				diag_error(g->ctx, "%s: the elements have different types",
					   node_loc(g, &x->n));
				return -1;
			}
		}
		seq_set(g, out, x->n.in, x->n.n_in, false, x->n.n_in ?
			g->values.v[x->n.in[0]].dtype : DTYPE_F32);
		return 0;
	case OP_SEQUENCEEMPTY: {
		enum dtype t = dtype_from_onnx((int)node_attr_int(&x->n, "dtype", 1));

		if (t == DTYPE_UNDEF) {
			diag_error(g->ctx, "%s: dtype %lld is not supported", node_loc(g, &x->n),
				   (long long)node_attr_int(&x->n, "dtype", 1));
			return -1;
		}
		seq_set(g, out, NULL, 0, false, t);
		return 0;
	}
	case OP_SEQUENCEAT:
		if (!(s = need_seq(x, 0)) || (k = position(x, 1, s->n, 0, 0, s->n - 1, &pos)) < 0)
			return -1;
		if (k)
			return runtime_at(x, s, pos, -1, out);
		alias(x, s->elems[pos], out, arena_printf(g->arena, "at%d", pos));
		return 0;
	case OP_SEQUENCEINSERT:
		if (!(s = need_seq(x, 0)) || need_tensor(x, 1) < 0 ||
		    (k = position(x, 2, s->n, s->n, 0, s->n, &pos)) < 0)
			return -1;
		if (k)
			return runtime_at(x, s, pos, x->n.in[1], out);
		if (s->n && g->values.v[x->n.in[1]].dtype != g->values.v[s->elems[0]].dtype) {
			diag_error(g->ctx, "%s: tensor '%s' is %s, the sequence's elements %s",
				   node_loc(g, &x->n), g->values.v[x->n.in[1]].name,
				   dtype_name(g->values.v[x->n.in[1]].dtype),
				   dtype_name(g->values.v[s->elems[0]].dtype));
			return -1;
		}
		e = arena_alloc(g->arena, sizeof(int) * (size_t)(s->n + 2));
		memcpy(e, s->elems, sizeof(int) * (size_t)pos);
		e[pos] = x->n.in[1];
		memcpy(e + pos + 1, s->elems + pos, sizeof(int) * (size_t)(s->n - pos));
		seq_set(g, out, e, s->n + 1, false, g->values.v[x->n.in[1]].dtype);
		return 0;
	case OP_SEQUENCEERASE:
		if (!(s = need_seq(x, 0)) ||
		    (k = position(x, 1, s->n, s->n - 1, 0, s->n - 1, &pos)) < 0)
			return -1;
		if (k)
			return runtime_at(x, s, pos, -1, out);
		e = arena_alloc(g->arena, sizeof(int) * (size_t)(s->n + 1));
		memcpy(e, s->elems, sizeof(int) * (size_t)pos);
		memcpy(e + pos, s->elems + pos + 1, sizeof(int) * (size_t)(s->n - pos - 1));
		seq_set(g, out, e, s->n - 1, false, s->elem);
		return 0;
	case OP_SEQUENCELENGTH: {
		int64_t n;

		if (!(s = need_seq(x, 0)))
			return -1;
		n = s->n;
		set_const(g, out, DTYPE_I64, &n);
		return 0;
	}
	case OP_SPLITTOSEQUENCE:
		return split_to_sequence(x);
	case OP_CONCATFROMSEQUENCE:
		return concat_from_sequence(x);
	case OP_OPTIONAL: {
		int v = x->n.n_in ? x->n.in[0] : -1;
		const struct attr *a = node_attr(&x->n, "type");
		enum dtype t = DTYPE_F32;

		if (v >= 0) {
			t = g->values.v[v].seq ? g->values.v[v].seq->elem : g->values.v[v].dtype;
		} else if (a && a->kind == ATTR_TYPE && a->graph) {
			const Onnx__TypeProto *tp = a->graph;

			if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
				tp = tp->sequence_type->elem_type;
			if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
				t = dtype_from_onnx(tp->tensor_type->elem_type);
		} else {
			diag_error(g->ctx, "%s: an Optional without an input needs the attribute "
				   "'type'", node_loc(g, &x->n));
			return -1;
		}
		seq_set(g, out, &v, v >= 0, true, t);
		return 0;
	}
	case OP_OPTIONALHASELEMENT: {
		int v = x->n.n_in ? x->n.in[0] : -1;
		unsigned char has = v >= 0 && (!seq_of(g, v) || !seq_of(g, v)->optional ||
					       seq_of(g, v)->n);

		set_const(g, out, DTYPE_BOOL, &has);
		return 0;
	}
	case OP_OPTIONALGETELEMENT:
		k = x->n.n_in ? x->n.in[0] : -1;
		s = seq_of(g, k);
		if (k < 0 || (s && s->optional && !s->n)) {
			diag_error(g->ctx, "%s: the optional '%s' has no element", node_loc(g, &x->n),
				   k >= 0 ? g->values.v[k].name : "");
			return -1;
		}
		alias(x, s && s->optional ? s->elems[0] : k, out, "element");
		return 0;
	default:
		BUG("onnx_expand_sequence(%s)", node_loc(g, &x->n));
	}
}

int onnx_expand_sequence(struct graph *g, int ni)
{
	struct seqx x = { g, g->nodes.v[ni] };
	int tail = g->nodes.n, rc;

	rc = resolve(&x);
	g->nodes.v[ni].dead = true;
	g->nodes.v[ni].n_out = 0;
	graph_move_tail(g, tail, ni + 1);
	return rc;
}

/* Appends the outputs element v of a graph output gives, named name. */
static int flatten(struct graph *g, int v, const char *name)
{
	struct seq *s = g->values.v[v].seq;
	const struct node *p;
	int id, ni;

	if (s) {
		for (int i = 0; i < s->n; i++)
			if (flatten(g, s->elems[i], s->optional ? name : arena_printf(g->arena,
				    "%s[%d]", name, i)) < 0)
				return -1;
		return 0;
	}
	/* a copy: an element may be an input, a constant or in two outputs */
	id = graph_add_value(g, name);
	ni = graph_add_node(g, OP_IDENTITY, name, &v, 1, &id, 1);
	p = g->values.v[v].producer >= 0 ? &g->nodes.v[g->values.v[v].producer] : NULL;
	g->nodes.v[ni].op_type = "Identity";
	if (p && p->span.n)
		g->nodes.v[ni].span = p->span;
	else
		node_span_self(g, &g->nodes.v[ni]);
	g->values.v[id].flags |= VALUE_OUTPUT;
	vec_push(&g->outputs, id);
	return 0;
}

int onnx_sequence_outputs(struct graph *g)
{
	int n = g->outputs.n, *old, rc = 0;
	bool any = false;

	for (int i = 0; i < n; i++)
		any |= g->values.v[g->outputs.v[i]].seq != NULL;
	if (!any)
		return 0;
	old = arena_memdup(g->arena, g->outputs.v, sizeof(int) * (size_t)n);
	g->outputs.n = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		struct value *val = &g->values.v[old[i]];

		const struct seq_port *p = onnx_port(g, val->name, true);

		if (!val->seq) {
			vec_push(&g->outputs, old[i]);
			continue;
		}
		val->flags &= ~(unsigned)VALUE_OUTPUT;
		if (p || val->seq->rt || (val->seq->optional && val->seq->n &&
					  g->values.v[val->seq->elems[0]].seq &&
					  g->values.v[val->seq->elems[0]].seq->rt))
			rc = seqrt_output(g, old[i], val->name, p);
		else
			rc = flatten(g, old[i], val->name);
	}
	if (rc == 0 && !g->outputs.n) {
		diag_error(g->ctx, "%s: every output is an optional without an element, so the "
			   "model computes nothing", g->path ? g->path : "model");
		rc = -1;
	}
	return rc;
}
