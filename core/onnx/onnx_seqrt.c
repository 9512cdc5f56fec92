/*
 * onnx_seqrt.c - sequences whose length is only known at run time.
 *
 * A Loop decided at run time that carries a sequence, and an If decided at
 * run time whose branches give sequences of different lengths, cannot
 * resolve the sequence into its elements (onnx_sequence.c): the sequence
 * takes its run-time form (struct seq, rt), two ordinary tensors
 *
 *	data   1-D, the element type: every element's data, one after the other
 *	dims   int64 [len, rank]: every element's dims, one row each
 *
 * and an optional of a sequence a bool scalar `present`. The Loop carries
 * them as it carries tensors (the body, compiled on its own, takes and
 * gives them: struct seq_port), and the sequence ops on them become tensor
 * ops, named "node/what" with the node's span:
 *
 *   SequenceInsert (at the end)   Concat of data and of dims
 *   SequenceInsert (a position)   Gathers from those Concats at indexes
 *                                 computed by comparing with the position
 *   SequenceErase                 Compress of data and of dims, masks
 *                                 that leave out the element's range/row
 *   SequenceAt                    Slice between cumulative element sizes,
 *                                 Reshape to the element's row
 *   SequenceLength                the dims' first dim
 *   ConcatFromSequence            Reshape of data (axis 0), of a Gather of
 *                                 it (other axes), Transpose (new_axis)
 *   OptionalHasElement            present
 *   OptionalGetElement, Identity  the same tensors
 *   Where (an If's select)        Slice of the Concat of both sides
 *
 * A sequence known when compiling meets one of run-time length by being
 * packed (Concats of its elements). Elements share the dtype; one with
 * fewer dims than the sequence has columns gets a row that begins with
 * -1s, and such a mixed sequence refuses SequenceAt and ConcatFromSequence
 * (their result's rank would not be known when compiling). A position out
 * of range takes the nearest end, as with a sequence of known length; no
 * dim of a result depends on a position as shape arithmetic (which may be
 * negative: len - 1 of an empty sequence), only on comparisons with it.
 * Everything else (SequenceMap) is refused, naming the node. Graph
 * outputs in this form are their tensors, "NAME.data", "NAME.dims" and
 * "NAME.present" (collagec_output_sequence and OUT.json say they make one
 * sequence).
 */
#include "onnx_import.h"

#include <string.h>

#include "../ops/ops.h"

struct rtx {
	struct graph *g;
	const struct node *n;	/* the node being resolved (a copy) */
};

static int glue(struct rtx *x, enum op op, const char *type, const char *what, const int *in,
		int n_in, int out)
{
	return onnx_glue(x->g, x->n, op, type, what, in, n_in, out);
}

static int glue_axis(struct rtx *x, enum op op, const char *type, const char *what,
		     const int *in, int n_in, int64_t axis)
{
	int out = glue(x, op, type, what, in, n_in, -1);

	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "axis", axis);
	return out;
}

/* An int64 constant of n values (rank 0 or 1), named what. */
static int ints(struct rtx *x, const char *what, const int64_t *v, int n, int rank)
{
	struct shape s = { rank, { { n, 0, { 0 } } } };

	return graph_add_const(x->g, arena_printf(x->g->arena, "%s/%s", x->n->name, what),
			       DTYPE_I64, &s, v);
}

static int int1(struct rtx *x, const char *what, int64_t v)
{
	return ints(x, what, &v, 1, 1);
}

static const char *name2(struct rtx *x, const char *what, const char *sfx)
{
	return arena_printf(x->g->arena, "%s.%s", what, sfx);
}

/* The first dim of tensor v as a 1-D int64 tensor of one value. */
static int first_dim(struct rtx *x, int v, const char *what)
{
	int in[2] = { glue(x, OP_SHAPE, "Shape", name2(x, what, "shape"), &v, 1, -1),
		      int1(x, name2(x, what, "zero"), 0) };

	return glue(x, OP_GATHER, "Gather", what, in, 2, -1);
}

/* s's dims widened to rank columns: rows padded in front with -1s. */
static int widen(struct rtx *x, const struct seq *s, int rank, const char *what)
{
	int64_t pads[4] = { 0, rank - s->rank, 0, 0 }, minus1 = -1;
	int in[3];

	if (rank == s->rank)
		return s->dims;
	in[0] = s->dims;
	in[1] = ints(x, name2(x, what, "pads"), pads, 4, 1);
	in[2] = ints(x, name2(x, what, "fill"), &minus1, 1, 0);
	return glue(x, OP_PAD, "Pad", what, in, 3, -1);
}

/* Tensor t's row of dims [1, rank], -1s in front when t has fewer. */
static int row_of(struct rtx *x, int t, int rank, const char *what)
{
	int r = x->g->values.v[t].shape.rank, in[2], row;
	int64_t *fill;

	in[0] = glue(x, OP_SHAPE, "Shape", name2(x, what, "shape"), &t, 1, -1);
	in[1] = int1(x, name2(x, what, "axis"), 0);
	row = glue(x, OP_UNSQUEEZE, "Unsqueeze", what, in, 2, -1);
	if (r == rank)
		return row;
	fill = arena_alloc(x->g->arena, sizeof(int64_t) * (size_t)(rank - r));
	for (int k = 0; k < rank - r; k++)
		fill[k] = -1;
	{
		struct shape s = { 2, { { 1, 0, { 0 } }, { rank - r, 0, { 0 } } } };

		in[0] = graph_add_const(x->g, arena_printf(x->g->arena, "%s/%s.fill", x->n->name,
							   what), DTYPE_I64, &s, fill);
	}
	in[1] = row;
	return glue_axis(x, OP_CONCAT, "Concat", name2(x, what, "padded"), in, 2, 1);
}

static int flat(struct rtx *x, int t, const char *what)
{
	int in[2] = { t, int1(x, name2(x, what, "minus1"), -1) };

	return glue(x, OP_RESHAPE, "Reshape", what, in, 2, -1);
}

/*
 * The elements e[0..n) (compile-time values) packed into the run-time form
 * s with at least rank columns; s->optional and s->present left to the caller.
 */
static void pack_elems(struct rtx *x, const int *e, int n, enum dtype t, int rank,
		       const char *what, struct seq *s)
{
	struct graph *g = x->g;
	int *data = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
	int *rows = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
	int top = rank;

	for (int i = 0; i < n; i++)
		if (g->values.v[e[i]].shape.rank > top)
			top = g->values.v[e[i]].shape.rank;
	s->rt = true;
	s->elem = t;
	s->rank = top;
	s->any_rank = n == 0;
	s->mixed = false;
	s->present = -1;
	if (!n) {
		struct shape d0 = { 1, { { 0, 0, { 0 } } } };
		struct shape m0 = { 2, { { 0, 0, { 0 } }, { top, 0, { 0 } } } };

		s->data = graph_add_const(g, arena_printf(g->arena, "%s/%s.data", x->n->name, what),
					  t, &d0, NULL);
		s->dims = graph_add_const(g, arena_printf(g->arena, "%s/%s.dims", x->n->name, what),
					  DTYPE_I64, &m0, NULL);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *w = arena_printf(g->arena, "%s.%d", what, i);

		s->mixed |= g->values.v[e[i]].shape.rank != top;
		data[i] = flat(x, e[i], name2(x, w, "flat"));
		rows[i] = row_of(x, e[i], top, name2(x, w, "row"));
	}
	s->data = glue_axis(x, OP_CONCAT, "Concat", name2(x, what, "data"), data, n, 0);
	s->dims = glue_axis(x, OP_CONCAT, "Concat", name2(x, what, "dims"), rows, n, 0);
}

/* Whether the sequence's elements all have one dtype t; else a diagnostic. */
static int check_dtype(struct rtx *x, const struct seq *s, enum dtype t, const char *name)
{
	if (s->elem == DTYPE_UNDEF || s->elem == t)
		return 0;
	diag_error(x->g->ctx, "%s: tensor '%s' is %s, the sequence's elements %s",
		   node_loc(x->g, x->n), name, dtype_name(t), dtype_name(s->elem));
	return -1;
}

/*
 * Sequence (or optional of a sequence) value v in its run-time form: its
 * own, or a packing of its elements. NULL after a diagnostic.
 */
static const struct seq *packed(struct rtx *x, int v, enum dtype elem, const char *what)
{
	struct graph *g = x->g;
	const struct seq *s = g->values.v[v].seq, *in;
	struct seq *p;
	unsigned char has;

	if (s->rt)
		return s;
	p = arena_alloc(g->arena, sizeof(*p));
	in = s;
	if (s->optional) {
		in = s->n ? g->values.v[s->elems[0]].seq : NULL;
		if (s->n && !in) {
			diag_error(g->ctx, "%s: '%s' is an optional tensor; only sequences and "
				   "optionals of sequences can have a length known only at run time",
				   node_loc(g, x->n), g->values.v[v].name);
			return NULL;
		}
		if (in && in->rt) {
			*p = *in;
			p->optional = true;
			has = 1;
			p->present = graph_add_const(g, arena_printf(g->arena, "%s/%s.present",
						     x->n->name, what), DTYPE_BOOL,
						     &(struct shape){ 0 }, &has);
			return p;
		}
	}
	if (in && in->n)
		elem = g->values.v[in->elems[0]].dtype;
	else if (elem == DTYPE_UNDEF)
		elem = s->elem == DTYPE_UNDEF ? DTYPE_F32 : s->elem;
	pack_elems(x, in ? in->elems : NULL, in ? in->n : 0, elem, 0, what, p);
	if (s->optional) {
		has = s->n > 0;
		p->optional = true;
		p->present = graph_add_const(g, arena_printf(g->arena, "%s/%s.present", x->n->name,
							     what), DTYPE_BOOL, &(struct shape){ 0 },
					     &has);
	}
	return p;
}

int seqrt_pack(struct graph *g, const struct node *parent, int v, int rank, bool mixed,
	       enum dtype elem, const char *what, struct seq *out)
{
	struct rtx x = { g, parent };
	const struct seq *s = packed(&x, v, elem, what);

	if (!s)
		return -1;
	*out = *s;
	if (rank > s->rank || (mixed && !s->mixed)) {
		out->dims = widen(&x, s, rank > s->rank ? rank : s->rank, name2(&x, what, "widen"));
		out->mixed = mixed || (!s->any_rank && rank > s->rank) || s->mixed;
		out->rank = rank > s->rank ? rank : s->rank;
		out->any_rank = s->any_rank && !mixed;
	}
	return 0;
}

/* Where(c, a, b) of two tensors of a sequence, along their first axis. */
static int choose(struct rtx *x, int c, int a, int b, const char *what)
{
	int in[4], la, lb, zero, cat;

	in[0] = a;
	in[1] = b;
	cat = glue_axis(x, OP_CONCAT, "Concat", name2(x, what, "both"), in, 2, 0);
	la = first_dim(x, a, name2(x, what, "then_len"));
	lb = first_dim(x, b, name2(x, what, "else_len"));
	zero = int1(x, name2(x, what, "zero"), 0);
	in[0] = c;
	in[1] = zero;
	in[2] = la;
	in[3] = glue(x, OP_ADD, "Add", name2(x, what, "all"), (int[]){ la, lb }, 2, -1);
	{
		int st[3] = { c, zero, la }, en[3] = { c, la, in[3] }, sl[4];

		sl[0] = cat;
		sl[1] = glue(x, OP_WHERE, "Where", name2(x, what, "start"), st, 3, -1);
		sl[2] = glue(x, OP_WHERE, "Where", name2(x, what, "end"), en, 3, -1);
		sl[3] = zero;
		return glue(x, OP_SLICE, "Slice", what, sl, 4, -1);
	}
}

/* Where(c, a, b) over two sequences, one or both of run-time length, into out. */
static int select_rt(struct rtx *x, int c, int a, int b, int out)
{
	struct graph *g = x->g;
	const struct seq *sa = g->values.v[a].seq, *sb = g->values.v[b].seq, *pa, *pb;
	struct seq r = { 0 };

	if (!sa || !sb || sa->optional != sb->optional) {
		diag_error(g->ctx, "%s: with a condition computed at run time both sides must be "
			   "sequences, or both optionals", node_loc(g, x->n));
		return -1;
	}
	if (!(pa = packed(x, a, DTYPE_UNDEF, "then")) || !(pb = packed(x, b, DTYPE_UNDEF, "else")))
		return -1;
	if (pa->elem != pb->elem && !pa->any_rank && !pb->any_rank) {
		diag_error(g->ctx, "%s: the sides' elements are %s and %s; a sequence of run-time "
			   "length needs one dtype", node_loc(g, x->n), dtype_name(pa->elem),
			   dtype_name(pb->elem));
		return -1;
	}
	r = *pa;
	r.rt = true;
	r.elem = pa->any_rank ? pb->elem : pa->elem;
	r.rank = pa->rank > pb->rank ? pa->rank : pb->rank;
	r.any_rank = pa->any_rank && pb->any_rank;
	r.mixed = pa->mixed || pb->mixed || (!pa->any_rank && pa->rank != r.rank) ||
		  (!pb->any_rank && pb->rank != r.rank);
	r.data = choose(x, c, pa->data, pb->data, "select.data");
	r.dims = choose(x, c, widen(x, pa, r.rank, "select.then_dims"),
			widen(x, pb, r.rank, "select.else_dims"), "select.dims");
	if (r.optional) {
		int in[3] = { c, pa->present, pb->present };

		r.present = glue(x, OP_WHERE, "Where", "select.present", in, 3, -1);
	}
	onnx_seq_new(g, out, &r);
	return 0;
}

/*
 * Position value p as an int64 [1] counting from 0 in a sequence of length
 * len ([1]); its nodes are named pre.what.
 */
static int position(struct rtx *x, int p, int len, const char *pre)
{
	struct graph *g = x->g;
	const struct value *v = &g->values.v[p];
	int in[3], neg, q;

	if ((v->dtype != DTYPE_I64 && v->dtype != DTYPE_I32) || v->shape.rank > 1) {
		diag_error(g->ctx, "%s: position '%s' must be an int32 or int64 scalar",
			   node_loc(g, x->n), v->name);
		return -1;
	}
	in[0] = p;
	in[1] = int1(x, name2(x, pre, "shape"), 1);
	q = glue(x, OP_RESHAPE, "Reshape", name2(x, pre, "position"), in, 2, -1);
	if (v->dtype != DTYPE_I64) {
		q = glue(x, OP_CAST, "Cast", name2(x, pre, "int64"), &q, 1, -1);
		node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "to",
				  ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	}
	in[0] = q;
	in[1] = int1(x, name2(x, pre, "zero"), 0);
	neg = glue(x, OP_LESS, "Less", name2(x, pre, "negative"), in, 2, -1);
	in[1] = len;
	in[1] = glue(x, OP_ADD, "Add", name2(x, pre, "wrapped"), in, 2, -1);
	in[0] = neg;
	in[2] = q;
	return glue(x, OP_WHERE, "Where", name2(x, pre, "index"), in, 3, -1);
}

/*
 * Index q ([1]) clamped into 0..hi ([1]): a position out of range takes the
 * nearest end, as with a sequence of known length. SequenceAt and
 * SequenceErase clamp into 0..len-1 (an empty sequence's is 0: they read
 * or remove no element there), SequenceInsert into 0..len.
 */
static int clamp_index(struct rtx *x, int q, int hi, const char *pre)
{
	int in[2] = { q, hi };

	in[0] = glue(x, OP_MIN, "Min", name2(x, pre, "below"), in, 2, -1);
	in[1] = int1(x, name2(x, pre, "zero_index"), 0);
	return glue(x, OP_MAX, "Max", name2(x, pre, "index"), in, 2, -1);
}

/* len - 1 ([1]) of a sequence of length len ([1]). */
static int last_index(struct rtx *x, int len, const char *pre)
{
	int in[2] = { len, int1(x, name2(x, pre, "one"), 1) };

	return glue(x, OP_SUB, "Sub", name2(x, pre, "last"), in, 2, -1);
}

/* op (ReduceSum, ReduceProd) of t over axis, keepdims k. */
static int reduce(struct rtx *x, enum op op, const char *type, int t, int64_t axis, int k,
		  const char *what)
{
	int in[2] = { t, int1(x, name2(x, what, "axes"), axis) }, out;

	out = glue(x, op, type, what, in, 2, -1);
	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "keepdims", k);
	return out;
}

/* CumSum of the 1-D tensor t, exclusive or not. */
static int cumsum(struct rtx *x, int t, int exclusive, const char *what)
{
	int in[2] = { t, ints(x, name2(x, what, "axis"), (int64_t[]){ 0 }, 1, 0) }, out;

	out = glue(x, OP_CUMSUM, "CumSum", what, in, 2, -1);
	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "exclusive", exclusive);
	return out;
}

/*
 * Where each element's data begins, [len + 2]: 0, the cumulative sizes,
 * then one more 0, so that bounds[q] and bounds[q + 1] exist even when the
 * sequence is empty.
 */
static int element_bounds(struct rtx *x, const struct seq *s, const char *pre)
{
	int in[3], sizes;

	sizes = reduce(x, OP_REDUCEPROD, "ReduceProd", s->dims, 1, 0, name2(x, pre, "sizes"));
	in[1] = cumsum(x, sizes, 0, name2(x, pre, "ends"));
	in[0] = int1(x, name2(x, pre, "begin"), 0);
	in[2] = int1(x, name2(x, pre, "sentinel"), 0);
	return glue_axis(x, OP_CONCAT, "Concat", name2(x, pre, "bounds"), in, 3, 0);
}

/*
 * The dims of element q as a 1-D [rank] tensor; the dims get a row of 0s
 * after the last, so that row q exists even when the sequence is empty
 * (which gives an empty tensor, not an error).
 */
static int element_dims(struct rtx *x, const struct seq *s, int q, const char *pre)
{
	struct graph *g = x->g;
	struct shape zs = { 2, { { 1, 0, { 0 } }, { s->rank, 0, { 0 } } } };
	int64_t *zeros = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(s->rank + 1));
	int in[2];

	memset(zeros, 0, sizeof(int64_t) * (size_t)(s->rank + 1));
	in[0] = s->dims;
	in[1] = graph_add_const(g, arena_printf(g->arena, "%s/%s.zero_row", x->n->name, pre),
				DTYPE_I64, &zs, zeros);
	in[0] = glue_axis(x, OP_CONCAT, "Concat", name2(x, pre, "rows"), in, 2, 0);
	in[1] = q;
	in[0] = glue(x, OP_GATHER, "Gather", name2(x, pre, "row"), in, 2, -1);
	in[1] = int1(x, name2(x, pre, "row_shape"), s->rank);
	return glue(x, OP_RESHAPE, "Reshape", name2(x, pre, "dims"), in, 2, -1);
}

/* SequenceAt of run-time sequence s at its position input (absent: 0), into out. */
static int at_rt(struct rtx *x, const struct seq *s, int out)
{
	struct graph *g = x->g;
	int in[4], q, bounds, len;

	if (s->mixed) {
		diag_error(g->ctx, "%s: the sequence's length is only known at run time and its "
			   "elements may differ in rank, so SequenceAt's rank is not known",
			   node_loc(g, x->n));
		return -1;
	}
	len = first_dim(x, s->dims, "at.len");
	if (x->n->n_in < 2 || x->n->in[1] < 0)
		q = int1(x, "at.first", 0);
	else if ((q = position(x, x->n->in[1], len, "at")) < 0)
		return -1;
	q = clamp_index(x, q, last_index(x, len, "at"), "at");
	bounds = element_bounds(x, s, "at");
	in[0] = s->data;
	in[1] = glue(x, OP_GATHER, "Gather", "at.start", (int[]){ bounds, q }, 2, -1);
	in[2] = glue(x, OP_ADD, "Add", "at.next", (int[]){ q, int1(x, "at.step", 1) }, 2, -1);
	in[2] = glue(x, OP_GATHER, "Gather", "at.end", (int[]){ bounds, in[2] }, 2, -1);
	in[3] = int1(x, "at.data_axis", 0);
	in[0] = glue(x, OP_SLICE, "Slice", "at.piece", in, 4, -1);
	in[1] = element_dims(x, s, q, "at");
	glue(x, OP_RESHAPE, "Reshape", "at", in, 2, out);
	/* an element's 0 dim is a 0, not "keep the input's" */
	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "allowzero", 1);
	return 0;
}

/* SequenceLength of run-time sequence s, into out (an int64 scalar). */
static void length_rt(struct rtx *x, const struct seq *s, int out)
{
	int in[2] = { glue(x, OP_SHAPE, "Shape", "length.shape", &s->dims, 1, -1),
		      ints(x, "length.zero", (int64_t[]){ 0 }, 1, 0) };

	glue(x, OP_GATHER, "Gather", "length", in, 2, out);
}

/* Slice of tensor t between start and end ([1] each, end absent: to the end) on axis 0. */
static int cut(struct rtx *x, int t, int start, int end, const char *what)
{
	int in[4] = { t, start, end, int1(x, name2(x, what, "axis"), 0) };

	if (end < 0)
		in[2] = int1(x, name2(x, what, "end"), INT64_MAX);
	return glue(x, OP_SLICE, "Slice", what, in, 4, -1);
}

/* 0, 1, .., n - 1 (n an int64 [1]) as a 1-D tensor. */
static int iota(struct rtx *x, int n, const char *what)
{
	int in[3] = { n, ints(x, name2(x, what, "scalar"), NULL, 0, 1), -1 };

	in[1] = glue(x, OP_RESHAPE, "Reshape", name2(x, what, "count"), in, 2, -1);
	in[0] = ints(x, name2(x, what, "zero"), (int64_t[]){ 0 }, 1, 0);
	in[2] = ints(x, name2(x, what, "step"), (int64_t[]){ 1 }, 1, 0);
	return glue(x, OP_RANGE, "Range", what, in, 3, -1);
}

static int binary(struct rtx *x, enum op op, const char *type, int a, int b, const char *what)
{
	int in[2] = { a, b };

	return glue(x, op, type, what, in, 2, -1);
}

/* Where(c, a, b). */
static int pick(struct rtx *x, int c, int a, int b, const char *what)
{
	int in[3] = { c, a, b };

	return glue(x, OP_WHERE, "Where", what, in, 3, -1);
}

/*
 * SequenceInsert of tensor t into run-time sequence s, into out: at the end
 * without a position; else before element q (a negative q counted from the
 * end; out of range, the nearest end). With a position the result is a
 * Gather from the data followed by t's, and from the dims followed by t's
 * row, at indexes computed by comparisons with q and t's offset: no dim of
 * it depends on q, which may be shape arithmetic that is negative for an
 * empty sequence (len - 1).
 */
static int insert_rt(struct rtx *x, const struct seq *s, int t, int out)
{
	struct graph *g = x->g;
	const struct value *tv = &g->values.v[t];
	int rank = tv->shape.rank > s->rank ? tv->shape.rank : s->rank, in[3];
	int item, len, q, off, size, total, p, end;
	struct seq r = *s;

	if (!s->any_rank && check_dtype(x, s, tv->dtype, tv->name) < 0)
		return -1;
	r.elem = tv->dtype;
	r.rank = rank;
	r.any_rank = false;
	r.mixed = s->mixed || tv->shape.rank != rank || (!s->any_rank && s->rank != rank);
	r.optional = false;
	r.present = -1;
	in[0] = s->data;
	in[1] = item = flat(x, t, "insert.flat");
	r.data = glue_axis(x, OP_CONCAT, "Concat", "insert.data", in, 2, 0);
	in[0] = widen(x, s, rank, "insert.widen");
	in[1] = row_of(x, t, rank, "insert.row");
	r.dims = glue_axis(x, OP_CONCAT, "Concat", "insert.dims", in, 2, 0);
	if (x->n->n_in < 3 || x->n->in[2] < 0) {
		onnx_seq_new(g, out, &r);
		return 0;
	}
	len = first_dim(x, s->dims, "insert.len");
	if ((q = position(x, x->n->in[2], len, "insert")) < 0)
		return -1;
	q = clamp_index(x, q, len, "insert");
	in[0] = element_bounds(x, s, "insert");
	in[1] = q;
	off = glue(x, OP_GATHER, "Gather", "insert.offset", in, 2, -1);
	size = first_dim(x, item, "insert.size");
	total = first_dim(x, s->data, "insert.total");
	/* data index at p: p before the offset, then t's, then p - size */
	p = iota(x, binary(x, OP_ADD, "Add", total, size, "insert.count"), "insert.positions");
	end = binary(x, OP_ADD, "Add", off, size, "insert.item_end");
	in[0] = binary(x, OP_SUB, "Sub", binary(x, OP_ADD, "Add", p, total, "insert.past"), off,
		       "insert.in_item");
	in[1] = binary(x, OP_SUB, "Sub", p, size, "insert.shifted");
	in[1] = pick(x, binary(x, OP_LESS, "Less", p, end, "insert.is_item"), in[0], in[1],
		     "insert.after");
	in[1] = pick(x, binary(x, OP_LESS, "Less", p, off, "insert.is_before"), p, in[1],
		     "insert.data_index");
	in[0] = r.data;
	r.data = glue(x, OP_GATHER, "Gather", "insert.data_at", in, 2, -1);
	/* row index at k: k before q, t's row (len) at q, k - 1 after */
	p = iota(x, binary(x, OP_ADD, "Add", len, int1(x, "insert.one_row", 1),
			   "insert.rows"), "insert.row_positions");
	in[1] = binary(x, OP_SUB, "Sub", p, int1(x, "insert.back", 1), "insert.row_shifted");
	in[1] = pick(x, binary(x, OP_EQUAL, "Equal", p, q, "insert.is_row"), len, in[1],
		     "insert.row_after");
	in[1] = pick(x, binary(x, OP_LESS, "Less", p, q, "insert.is_row_before"), p, in[1],
		     "insert.row_index");
	in[0] = r.dims;
	r.dims = glue(x, OP_GATHER, "Gather", "insert.dims_at", in, 2, -1);
	onnx_seq_new(g, out, &r);
	return 0;
}

/* Compress of t along axis 0 by the bool mask keep. */
static int keep_where(struct rtx *x, int t, int keep, const char *what)
{
	int in[2] = { t, keep };

	return glue_axis(x, OP_COMPRESS, "Compress", what, in, 2, 0);
}

/*
 * SequenceErase of run-time sequence s at its position input (absent: the
 * last element), into out: Compresses of the data outside the element's
 * range and of the dims but its row (no dim of the result depends on the
 * position: see insert_rt). A position out of range takes the nearest end;
 * an empty sequence stays empty.
 */
static int erase_rt(struct rtx *x, const struct seq *s, int out)
{
	struct graph *g = x->g;
	int in[2], len, last, q, bounds, p, start, end;
	struct seq r = *s;

	len = first_dim(x, s->dims, "erase.len");
	last = last_index(x, len, "erase");
	if (x->n->n_in < 2 || x->n->in[1] < 0)
		q = last;
	else if ((q = position(x, x->n->in[1], len, "erase")) < 0)
		return -1;
	q = clamp_index(x, q, last, "erase");
	bounds = element_bounds(x, s, "erase");
	in[0] = bounds;
	in[1] = q;
	start = glue(x, OP_GATHER, "Gather", "erase.start", in, 2, -1);
	in[1] = binary(x, OP_ADD, "Add", q, int1(x, "erase.step", 1), "erase.next");
	end = glue(x, OP_GATHER, "Gather", "erase.stop", in, 2, -1);
	p = iota(x, first_dim(x, s->data, "erase.total"), "erase.positions");
	in[0] = binary(x, OP_LESS, "Less", p, start, "erase.before");
	in[1] = binary(x, OP_GREATEROREQUAL, "GreaterOrEqual", p, end, "erase.after");
	r.data = keep_where(x, s->data, binary(x, OP_OR, "Or", in[0], in[1], "erase.keep"),
			    "erase.data");
	p = iota(x, len, "erase.rows");
	in[0] = binary(x, OP_EQUAL, "Equal", p, q, "erase.is_row");
	in[0] = glue(x, OP_NOT, "Not", "erase.keep_row", in, 1, -1);
	r.dims = keep_where(x, s->dims, in[0], "erase.dims");
	onnx_seq_new(g, out, &r);
	return 0;
}

/* Reshape of t to the int64 [rank] shape, with allowzero: a 0 is a 0. */
static int reshape_to(struct rtx *x, int t, int shape, const char *what, int out)
{
	int in[2] = { t, shape };

	out = glue(x, OP_RESHAPE, "Reshape", what, in, 2, out);
	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "allowzero", 1);
	return out;
}

/* Entries from..to of the 1-D tensor t (to absent: to its end). */
static int part(struct rtx *x, int t, int64_t from, int64_t to, const char *what)
{
	return cut(x, t, int1(x, name2(x, what, "from"), from),
		   to < 0 ? -1 : int1(x, name2(x, what, "to"), to), what);
}

/* The sum of column k of s's dims, a 1-D tensor of one value (0 when empty). */
static int column_sum(struct rtx *x, const struct seq *s, int64_t k, const char *what)
{
	int in[4] = { s->dims, int1(x, name2(x, what, "from"), k),
		      int1(x, name2(x, what, "to"), k + 1), int1(x, name2(x, what, "axis"), 1) };

	in[0] = glue(x, OP_SLICE, "Slice", name2(x, what, "column"), in, 4, -1);
	in[0] = reduce(x, OP_REDUCESUM, "ReduceSum", in[0], 0, 0, what);
	return in[0];
}

/*
 * The data of run-time sequence s, elements sharing every dim but axis k
 * (> 0), in the order of their concatenation along k: with outer the
 * product of the dims before k and inner[i] element i's size / outer, the
 * result's row o (of outer) is every element's o-th piece of inner[i]
 * values in turn. A Gather of the data at indexes computed for all
 * positions p: w = sum(inner), o = p / w, c = p % w, i the element whose
 * columns hold c, index = offset[i] + o * inner[i] + c - column[i].
 */
static int concat_inner(struct rtx *x, const struct seq *s, int row0, int64_t k)
{
	int in[3], sizes, outer, inner, w, p, o, c, i, idx;

	sizes = reduce(x, OP_REDUCEPROD, "ReduceProd", s->dims, 1, 0, "concat.sizes");
	outer = reduce(x, OP_REDUCEPROD, "ReduceProd", part(x, row0, 0, k, "concat.before"), 0,
		       1, "concat.outer");
	in[0] = outer;
	in[1] = int1(x, "concat.one", 1);
	outer = glue(x, OP_MAX, "Max", "concat.outer_1", in, 2, -1);	/* no division by 0 */
	in[0] = sizes;
	in[1] = outer;
	inner = glue(x, OP_DIV, "Div", "concat.inner", in, 2, -1);
	w = reduce(x, OP_REDUCESUM, "ReduceSum", inner, 0, 1, "concat.width");
	in[0] = w;
	in[1] = int1(x, "concat.one_col", 1);
	w = glue(x, OP_MAX, "Max", "concat.width_1", in, 2, -1);
	p = iota(x, reduce(x, OP_REDUCESUM, "ReduceSum", sizes, 0, 1, "concat.total"),
		 "concat.positions");
	in[0] = p;
	in[1] = w;
	o = glue(x, OP_DIV, "Div", "concat.outer_index", in, 2, -1);
	c = glue(x, OP_MOD, "Mod", "concat.column", in, 2, -1);
	in[0] = c;
	in[1] = int1(x, "concat.column_axis", 1);
	in[0] = glue(x, OP_UNSQUEEZE, "Unsqueeze", "concat.column_2d", in, 2, -1);
	in[1] = cumsum(x, inner, 0, "concat.column_ends");
	in[0] = glue(x, OP_GREATEROREQUAL, "GreaterOrEqual", "concat.past", in, 2, -1);
	in[0] = glue(x, OP_CAST, "Cast", "concat.past_int", in, 1, -1);
	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], "to",
			  ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	i = reduce(x, OP_REDUCESUM, "ReduceSum", in[0], 1, 0, "concat.element");
	in[1] = i;
	in[0] = cumsum(x, sizes, 1, "concat.offsets");
	idx = glue(x, OP_GATHER, "Gather", "concat.offset", in, 2, -1);
	in[0] = inner;
	in[0] = glue(x, OP_GATHER, "Gather", "concat.inner_i", in, 2, -1);
	in[1] = o;
	in[0] = glue(x, OP_MUL, "Mul", "concat.row", in, 2, -1);
	in[1] = idx;
	idx = glue(x, OP_ADD, "Add", "concat.row_start", in, 2, -1);
	in[0] = cumsum(x, inner, 1, "concat.column_starts");
	in[1] = i;
	in[0] = glue(x, OP_GATHER, "Gather", "concat.column_start", in, 2, -1);
	in[1] = glue(x, OP_SUB, "Sub", "concat.in_element", (int[]){ c, in[0] }, 2, -1);
	in[0] = idx;
	idx = glue(x, OP_ADD, "Add", "concat.index", in, 2, -1);
	in[0] = s->data;
	in[1] = idx;
	return glue(x, OP_GATHER, "Gather", "concat.data", in, 2, -1);
}

/*
 * ConcatFromSequence of run-time sequence s, into out. The elements share
 * their rank (a mixed sequence is refused) and every dim but the axis's.
 * Along axis 0 the result is the data reshaped to [sum of the elements'
 * first dims, the first element's other dims]; along another axis the data
 * is gathered in its order first (concat_inner). With new_axis the stack
 * is the data reshaped to [len, the first element's dims], transposed to
 * put len at the axis. An empty sequence gives an empty tensor (ONNX
 * Runtime refuses it: "Must have 1 or more inputs"): 0 along the axis and
 * 0 for every other dim.
 */
static int concat_rt(struct rtx *x, const struct seq *s, int out)
{
	struct graph *g = x->g;
	int64_t axis = node_attr_int(x->n, "axis", 0);
	int stack = node_attr_int(x->n, "new_axis", 0) != 0;
	int r = s->rank + stack, in[3], row0, shape, data;

	if (s->mixed) {
		diag_error(g->ctx, "%s: the sequence's length is only known at run time and its "
			   "elements may differ in rank; ConcatFromSequence needs one rank",
			   node_loc(g, x->n));
		return -1;
	}
	if (!r) {
		diag_error(g->ctx, "%s: the elements are scalars; ConcatFromSequence needs "
			   "new_axis=1 to stack them", node_loc(g, x->n));
		return -1;
	}
	if (r > MAX_RANK) {
		diag_error(g->ctx, "%s: stacking gives rank %d, more than %d", node_loc(g, x->n),
			   r, MAX_RANK);
		return -1;
	}
	if (axis < -r || axis >= r) {
		diag_error(g->ctx, "%s: axis %lld is out of range for a result of rank %d",
			   node_loc(g, x->n), (long long)axis, r);
		return -1;
	}
	if (axis < 0)
		axis += r;
	row0 = element_dims(x, s, int1(x, "concat.first", 0), "concat");
	if (stack) {
		int64_t perm[MAX_RANK];

		in[0] = first_dim(x, s->dims, "concat.len");
		in[1] = row0;
		shape = glue_axis(x, OP_CONCAT, "Concat", "concat.shape", in, 2, 0);
		if (!axis) {
			reshape_to(x, s->data, shape, "concat", out);
			return 0;
		}
		data = reshape_to(x, s->data, shape, "concat.stacked", -1);
		for (int k = 0, j = 1; k < r; k++)
			perm[k] = k == axis ? 0 : j++;
		glue(x, OP_TRANSPOSE, "Transpose", "concat", &data, 1, out);
		node_set_attr_ints(g, &g->nodes.v[g->nodes.n - 1], "perm", perm, r);
		return 0;
	}
	data = axis ? concat_inner(x, s, row0, axis) : s->data;
	in[0] = axis ? part(x, row0, 0, axis, "concat.dims_before") : -1;
	in[1] = column_sum(x, s, axis, "concat.axis_len");
	in[2] = axis + 1 < r ? part(x, row0, axis + 1, -1, "concat.dims_after") : -1;
	{
		int parts[3], n = 0;

		for (int k = 0; k < 3; k++)
			if (in[k] >= 0)
				parts[n++] = in[k];
		shape = n == 1 ? parts[0] : glue_axis(x, OP_CONCAT, "Concat", "concat.shape",
						      parts, n, 0);
	}
	reshape_to(x, data, shape, "concat", out);
	return 0;
}

bool seqrt_wanted(struct graph *g, const struct node *n)
{
	for (int i = 0; i < n->n_in; i++) {
		const struct seq *s = n->in[i] >= 0 ? g->values.v[n->in[i]].seq : NULL;

		if (s && (s->rt || (s->optional && s->n && g->values.v[s->elems[0]].seq &&
				    g->values.v[s->elems[0]].seq->rt)))
			return true;
	}
	if (n->op == OP_WHERE && n->n_in == 3) {
		const struct seq *a = g->values.v[n->in[1]].seq, *b = g->values.v[n->in[2]].seq;

		/* sides of different lengths: a sequence whose length is decided at run time */
		return a && b && a->n != b->n && (!a->optional ||
			(a->n ? g->values.v[a->elems[0]].seq : g->values.v[b->elems[0]].seq));
	}
	return false;
}

int seqrt_resolve(struct graph *g, const struct node *n)
{
	struct rtx x = { g, n };
	const struct seq *s = n->n_in && n->in[0] >= 0 ? g->values.v[n->in[0]].seq : NULL;
	int out = n->out[0];
	unsigned char yes = 1;

	switch (n->op) {
	case OP_WHERE:
		return select_rt(&x, n->in[0], n->in[1], n->in[2], out);
	case OP_IDENTITY:
		onnx_seq_new(g, out, s);
		return 0;
	case OP_OPTIONAL: {
		struct seq r = *s;

		r.optional = true;
		r.present = graph_add_const(g, arena_printf(g->arena, "%s/present", n->name),
					    DTYPE_BOOL, &(struct shape){ 0 }, &yes);
		onnx_seq_new(g, out, &r);
		return 0;
	}
	default:
		break;
	}
	if (!s || (!s->rt && !(s = packed(&x, n->in[0], DTYPE_UNDEF, "packed"))))
		return -1;
	if (s->optional && n->op != OP_OPTIONALHASELEMENT && n->op != OP_OPTIONALGETELEMENT) {
		diag_error(g->ctx, "%s: input 0 '%s' must be a sequence", node_loc(g, n),
			   g->values.v[n->in[0]].name);
		return -1;
	}
	switch (n->op) {
	case OP_SEQUENCEINSERT:
		if (n->n_in < 2 || n->in[1] < 0 || g->values.v[n->in[1]].seq) {
			diag_error(g->ctx, "%s: input 1 must be a tensor", node_loc(g, n));
			return -1;
		}
		return insert_rt(&x, s, n->in[1], out);
	case OP_SEQUENCEERASE:
		return erase_rt(&x, s, out);
	case OP_CONCATFROMSEQUENCE:
		return concat_rt(&x, s, out);
	case OP_SEQUENCEAT:
		return at_rt(&x, s, out);
	case OP_SEQUENCELENGTH:
		length_rt(&x, s, out);
		return 0;
	case OP_OPTIONALHASELEMENT:
		glue(&x, OP_IDENTITY, "Identity", "has", &s->present, 1, out);
		return 0;
	case OP_OPTIONALGETELEMENT: {
		struct seq r = *s;

		r.optional = false;
		r.present = -1;
		onnx_seq_new(g, out, &r);
		return 0;
	}
	default:
		diag_error(g->ctx, "%s: input 0 '%s' is a sequence whose length is only known at "
			   "run time; %s does not take one (SequenceInsert, SequenceErase, SequenceAt, "
			   "SequenceLength, ConcatFromSequence and the optional ops do)", node_loc(g, n),
			   g->values.v[n->in[0]].name, n->op_type);
		return -1;
	}
}

/* A graph output NAME.what copying v: an Identity with the span of v's producer. */
static void output_copy(struct graph *g, int v, const char *name, const char *what,
			unsigned flags)
{
	const char *full = arena_printf(g->arena, "%s.%s", name, what);
	int id = graph_add_value(g, full), ni, pi = g->values.v[v].producer;

	ni = graph_add_node(g, OP_IDENTITY, full, &v, 1, &id, 1);
	g->nodes.v[ni].op_type = "Identity";
	if (pi >= 0 && g->nodes.v[pi].span.n)
		g->nodes.v[ni].span = g->nodes.v[pi].span;
	else
		node_span_self(g, &g->nodes.v[ni]);
	g->values.v[id].flags |= VALUE_OUTPUT | flags;
	vec_push(&g->outputs, id);
}

int seqrt_output(struct graph *g, int v, const char *name, const struct seq_port *p)
{
	struct node parent = { 0 };
	struct seq s;

	parent.name = name;
	parent.op_type = "Identity";	/* as flatten's copies of compile-time elements */
	node_span_self(g, &parent);
	if (seqrt_pack(g, &parent, v, p ? p->rank : 0, p && p->mixed, p ? p->elem : DTYPE_UNDEF,
		       "packed", &s) < 0)
		return -1;
	if (p && p->optional && !s.optional) {
		/* a Loop may carry an optional on as the sequence it holds */
		unsigned char yes = 1;

		s.optional = true;
		s.present = graph_add_const(g, arena_printf(g->arena, "%s.present.const", name),
					    DTYPE_BOOL, &(struct shape){ 0 }, &yes);
	} else if (p && s.optional != p->optional) {
		diag_error(g->ctx, "%s: output '%s' is %s, but the loop carries %s", g->path ?
			   g->path : "body", name, s.optional ? "an optional" : "a sequence",
			   p->optional ? "an optional" : "a sequence");
		return -1;
	}
	output_copy(g, s.data, name, "data", s.optional ? VALUE_SEQ | VALUE_SEQ_OPT : VALUE_SEQ);
	output_copy(g, s.dims, name, "dims", s.mixed ? VALUE_MIXED : 0);
	if (s.optional)
		output_copy(g, s.present, name, "present", 0);
	return 0;
}
