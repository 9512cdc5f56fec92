/*
 * onnx_control.c - If, Loop and Scan, expanded into the graph when shape
 * inference reaches them (pass_infer calls onnx_expand_control), because
 * then their inputs' shapes and constant values are known:
 *
 *   If    a condition known when compiling (a constant, or shape arithmetic
 *         folded by then) imports only its branch; otherwise both branches
 *         are imported and each output is Where(cond, then, else), which
 *         needs both branches to give the same shape and dtype.
 *   Loop  unrolled one iteration at a time: each step imports the body once
 *         and leaves a Loop node for the rest, so the next step sees whether
 *         the body's condition folded. A condition computed at run time
 *         guards the carried values with Where. What cannot be unrolled (a
 *         trip count known only at run time, scan outputs whose length
 *         depends on a run-time condition, more than CONTROL_UNROLL_MAX
 *         iterations) becomes a call of the body compiled on its own, from
 *         the iteration reached on (loop_call, onnx_loop_call.c).
 *   Scan  unrolled over the scan axis, whose length must be static.
 *   SequenceMap  unrolled over its first input's elements (a sequence whose
 *         length is known, onnx_sequence.c); further sequence inputs give
 *         their element i, tensors themselves.
 *
 * Sub-graph nodes are named "outer/then/inner", "outer[3]/inner" and carry
 * the outer node's span before their own (onnx_node.c, import_span).
 */
#include "onnx_import.h"

#include <string.h>

#include "../ops/ops.h"

/* Most iterations a Loop or Scan is unrolled to. */
#define CONTROL_UNROLL_MAX 1024

/* ---- expansion ---- */

struct expander {
	struct graph *g;
	struct node n;		/* a copy of the control node (g->nodes moves) */
	int n_onnx;		/* its ONNX inputs; the captured values follow */
	const struct attr *caps;
};

static const Onnx__GraphProto *subgraph(struct expander *x, const char *name)
{
	const struct attr *a = node_attr(&x->n, name);

	if (!a || a->kind != ATTR_GRAPH || !a->graph) {
		diag_error(x->g->ctx, "%s: needs the graph attribute '%s'", node_loc(x->g, &x->n),
			   name);
		return NULL;
	}
	return a->graph;
}

/*
 * Imports one copy of sub-graph gp, its inputs bound to args, and gives its
 * outputs' value ids in *outs (arena). 0, or -1 after diagnostics.
 */
static int instance(struct expander *x, const Onnx__GraphProto *gp, const char *prefix,
		    const int *args, int n_args, int **outs)
{
	struct graph *g = x->g;
	struct importer im = { 0 };
	const char *path = g->path ? g->path : "model";
	const char *slash = strrchr(path, '/');
	int first = g->nodes.n, rc = 0;

	if ((int)gp->n_input != n_args) {
		diag_error(g->ctx, "%s: sub-graph '%s' has %zu inputs, expected %d",
			   node_loc(g, &x->n), gp->name ? gp->name : "", gp->n_input, n_args);
		return -1;
	}
	im.ctx = g->ctx;
	im.g = g;
	im.base = slash ? slash + 1 : path;
	im.dir = slash ? arena_strndup(g->arena, path, (size_t)(slash - path)) : ".";
	im.prefix = arena_printf(g->arena, "%s%s", x->n.name, prefix);
	im.outer = &x->n;
	for (int i = 0; i < x->caps->n; i++)
		import_bind(&im, x->caps->strs[i], x->n.in[x->n_onnx + i]);
	for (int i = 0; i < n_args; i++)
		import_bind(&im, gp->input[i]->name, args[i]);
	if (import_body(&im, gp) < 0)
		rc = -1;
	*outs = arena_alloc(g->arena, sizeof(int) * (gp->n_output + 1));
	for (size_t i = 0; i < gp->n_output && rc == 0; i++) {
		(*outs)[i] = strmap_get(&im.names, gp->output[i]->name);
		if ((*outs)[i] < 0) {
			diag_error(g->ctx, "%s: sub-graph output '%s' is not computed by any node",
				   node_loc(g, &x->n), gp->output[i]->name);
			rc = -1;
		}
	}
	strmap_free(&im.names);
	vec_free(&im.protos);
	for (int k = first; k < g->nodes.n; k++)
		onnx_normalize_node(g, &g->nodes.v[k]);
	return rc;
}

/* A node of the expansion itself (not of a sub-graph): the control node's span. */
static int glue(struct expander *x, enum op op, const char *type, const char *what,
		const int *in, int n_in, int out)
{
	return onnx_glue(x->g, &x->n, op, type, what, in, n_in, out);
}

static int glue_attr(struct expander *x, enum op op, const char *type, const char *what,
		     const int *in, int n_in, const char *attr, int64_t v)
{
	int out = glue(x, op, type, what, in, n_in, -1);

	node_set_attr_int(x->g, &x->g->nodes.v[x->g->nodes.n - 1], attr, v);
	return out;
}

static int const_i64(struct expander *x, const char *what, int rank, int64_t v)
{
	struct shape s = { rank, { { 1, 0, { 0 } } } };

	return graph_add_const(x->g, arena_printf(x->g->arena, "%s/%s", x->n.name, what),
			       DTYPE_I64, &s, &v);
}

static int const_bool(struct expander *x, const char *what, bool b)
{
	struct shape s = { 0 };
	unsigned char v = b;

	return graph_add_const(x->g, arena_printf(x->g->arena, "%s/%s", x->n.name, what),
			       DTYPE_BOOL, &s, &v);
}

/* Whether the value is a constant, and then its one element as a bool. */
static int const_cond(struct expander *x, int v, bool *out)
{
	const struct value *c = &x->g->values.v[v];
	double d;

	if (!c->data)
		return 0;
	if (shape_numel_static(&c->shape) != 1) {
		diag_error(x->g->ctx, "%s: condition '%s' must have one element",
			   node_loc(x->g, &x->n), c->name);
		return -1;
	}
	if (c->dtype == DTYPE_BOOL)
		*out = *(const unsigned char *)c->data != 0;
	else if (value_const_scalar(x->g, c, &d))
		*out = d != 0;
	else
		return 0;
	return 1;
}

/* Stacks vals[0..n) along a new axis: Unsqueeze each, Concat. */
static int stack(struct expander *x, const char *what, const int *vals, int n, int64_t axis,
		 int out)
{
	struct graph *g = x->g;
	int *parts = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
	int ax = const_i64(x, arena_printf(g->arena, "%s.axes", what), 1, axis);
	int ni;

	for (int i = 0; i < n; i++) {
		int in[2] = { vals[i], ax };

		parts[i] = glue(x, OP_UNSQUEEZE, "Unsqueeze",
				arena_printf(g->arena, "%s.unsqueeze%d", what, i), in, 2, -1);
	}
	out = glue(x, OP_CONCAT, "Concat", arena_printf(g->arena, "%s.concat", what), parts, n,
		   out);
	ni = g->nodes.n - 1;
	node_set_attr_int(g, &g->nodes.v[ni], "axis", axis);
	return out;
}

/*
 * A control node that stands for (the rest of) node x: its name, attributes,
 * op type, index and span, with attribute "inputs" its ONNX input count.
 * Returns its index.
 */
static int control_node(struct expander *x, enum op op, const int *in, int n_in,
			const int *out, int n_out)
{
	struct graph *g = x->g;
	int ni = graph_add_node(g, op, x->n.name, in, n_in, out, n_out);
	struct node *n = &g->nodes.v[ni];

	n->attrs = arena_memdup(g->arena, x->n.attrs, sizeof(*n->attrs) *
				(size_t)(x->n.n_attrs + 1));
	n->n_attrs = x->n.n_attrs;
	n->op_type = x->n.op_type;
	n->onnx_index = x->n.onnx_index;
	n->span = x->n.span;
	node_set_attr_int(g, n, "inputs", x->n_onnx);
	return ni;
}

/*
 * An If decided at run time whose branches give different shapes: a call
 * of the branch the condition takes, each compiled on its own
 * (onnx_if_call). 1 when the branches agree (computed both, selected).
 */
static int if_call(struct expander *x, const Onnx__GraphProto *tb, const Onnx__GraphProto *eb)
{
	struct graph *g = x->g;
	int n_in = x->n_onnx + x->caps->n, call, rc, ni;

	if ((rc = onnx_if_call(g, &x->n, tb, eb, x->caps, &call)) != 0)
		return rc;
	ni = control_node(x, OP_IF, x->n.in, n_in, x->n.out, x->n.n_out);
	node_set_attr_int(g, &g->nodes.v[ni], "call", call);
	return 0;
}

static int expand_if(struct expander *x)
{
	struct graph *g = x->g;
	const Onnx__GraphProto *tb = subgraph(x, "then_branch"), *eb = subgraph(x, "else_branch");
	int *t, *e, cond = x->n.in[0];
	bool c;
	int known;

	if (!tb || !eb || (known = const_cond(x, cond, &c)) < 0)
		return -1;
	if (known) {
		if (instance(x, c ? tb : eb, c ? "/then/" : "/else/", NULL, 0, &t) < 0)
			return -1;
		if ((int)(c ? tb : eb)->n_output != x->n.n_out)
			goto arity;
		for (int i = 0; i < x->n.n_out; i++)
			glue(x, OP_IDENTITY, "Identity", arena_printf(g->arena, "out%d", i), &t[i],
			     1, x->n.out[i]);
		return 0;
	}
	if ((known = if_call(x, tb, eb)) <= 0)
		return known;
	if (instance(x, tb, "/then/", NULL, 0, &t) < 0 || instance(x, eb, "/else/", NULL, 0, &e) < 0)
		return -1;
	if ((int)tb->n_output != x->n.n_out || (int)eb->n_output != x->n.n_out)
		goto arity;
	for (int i = 0; i < x->n.n_out; i++) {
		int in[3] = { cond, t[i], e[i] };

		/* op type "If": pass_infer checks that both branches agree */
		glue(x, OP_WHERE, "If", arena_printf(g->arena, "select%d", i), in, 3, x->n.out[i]);
	}
	return 0;
arity:
	diag_error(g->ctx, "%s: a branch has a different number of outputs than the node (%d)",
		   node_loc(g, &x->n), x->n.n_out);
	return -1;
}

/* Loop's finish: carried values and the stacked scan outputs become its outputs. */
static int loop_finish(struct expander *x, int n_carried, int n_scan, int iter, const int *elems)
{
	struct graph *g = x->g;

	for (int j = 0; j < n_carried && j < x->n.n_out; j++)
		glue(x, OP_IDENTITY, "Identity", arena_printf(g->arena, "out%d", j),
		     &x->n.in[2 + j], 1, x->n.out[j]);
	for (int s = 0; s < n_scan && n_carried + s < x->n.n_out; s++) {
		int *v = arena_alloc(g->arena, sizeof(int) * (size_t)(iter + 1));

		if (!iter) {
			diag_error(g->ctx, "%s: the loop runs no iteration, so its scan outputs' "
				   "shapes are unknown", node_loc(g, &x->n));
			return -1;
		}
		for (int t = 0; t < iter; t++)
			v[t] = elems[t * n_scan + s];
		stack(x, arena_printf(g->arena, "scan%d", s), v, iter, 0, x->n.out[n_carried + s]);
	}
	return 0;
}

/*
 * The carried sequences of a Loop call in their run-time form (ports):
 * in[] gets each carried value's tensors, outs[] new values for the
 * Loop's, seqs[] what each carried sequence is packed as. Returns the
 * number of carried tensors, or -1 after a diagnostic.
 */
static int carried_tensors(struct expander *x, const struct seq_port *ports, int n_carried,
			   int *in, int *outs, struct seq *seqs)
{
	struct graph *g = x->g;
	int t = 0;

	for (int j = 0; j < n_carried; j++) {
		const char *out = j < x->n.n_out && x->n.out[j] >= 0
			? g->values.v[x->n.out[j]].name : arena_printf(g->arena, "%s/unused%d",
								       x->n.name, j);
		struct seq *s = &seqs[j];

		if (!ports[j].name) {
			bool used = j < x->n.n_out && x->n.out[j] >= 0;

			outs[t] = used ? x->n.out[j] : graph_add_value(g, out);
			in[t++] = x->n.in[2 + j];
			continue;
		}
		if (seqrt_pack(g, &x->n, x->n.in[2 + j], ports[j].rank, ports[j].mixed,
			       ports[j].elem, arena_printf(g->arena, "carried%d", j), s) < 0)
			return -1;
		outs[t] = graph_add_value(g, arena_printf(g->arena, "%s.data", out));
		in[t++] = s->data;
		outs[t] = graph_add_value(g, arena_printf(g->arena, "%s.dims", out));
		in[t++] = s->dims;
		if (s->optional) {
			outs[t] = graph_add_value(g, arena_printf(g->arena, "%s.present", out));
			in[t++] = s->present;
		}
	}
	return t;
}

/* Whether the body's output o is declared an optional. */
static bool optional_output(const Onnx__GraphProto *body, int o)
{
	const Onnx__TypeProto *tp = body->output[o]->type;

	return tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
}

/*
 * The Loop's carried sequences from the call's tensors outs[]
 * (carried_tensors). A carried optional that the body gives on as the
 * sequence it holds comes out as that sequence (its presence unused).
 */
static void carried_seqs(struct expander *x, const Onnx__GraphProto *body,
			 const struct seq_port *ports, int n_carried, const int *outs,
			 const struct seq *seqs)
{
	for (int j = 0, t = 0; j < n_carried; j++) {
		struct seq like = seqs[j];
		int present = -1;

		if (!ports[j].name) {
			t++;
			continue;
		}
		if (like.optional)
			present = outs[t + 2];
		if (like.optional && !optional_output(body, 1 + j)) {
			like.optional = false;
			present = -1;
		}
		like.rank = ports[j].rank;
		like.mixed = ports[j].mixed;
		like.any_rank = false;
		like.elem = ports[j].elem;
		if (j < x->n.n_out && x->n.out[j] >= 0)
			seqrt_set(x->g, x->n.out[j], &like, present, outs[t], outs[t + 1]);
		t += seqs[j].optional ? 3 : 2;
	}
}

/*
 * The rest of a Loop, from iteration iter on, as a call of its body
 * compiled on its own (onnx_loop_call.c): a Loop node with attribute
 * "call" taking M, cond, the carried values and the captured ones (a
 * carried sequence as the tensors of its run-time form, onnx_seqrt.c). Scan
 * elements of iterations unrolled before come first in the scan outputs.
 */
static int loop_call(struct expander *x, const Onnx__GraphProto *body, int n_carried,
		     int n_scan, int iter, const int *elems)
{
	struct graph *g = x->g;
	int n_in = x->n_onnx + x->caps->n, n_out = n_carried + n_scan, ni, n_tc = n_carried;
	int *in = arena_memdup(g->arena, x->n.in, sizeof(int) * (size_t)(n_in + 1));
	int *outs = arena_alloc(g->arena, sizeof(int) * (size_t)(n_out + 1));
	struct seq_port *ports;
	struct seq *seqs = NULL;

	if (onnx_loop_ports(g, &x->n, body, x->n_onnx, x->caps, x->n.in + 2, &ports) < 0)
		return -1;
	if (ports) {
		/* each carried sequence is 2 or 3 tensors */
		in = arena_alloc(g->arena, sizeof(int) * (size_t)(n_in + 2 * n_carried + 1));
		outs = arena_alloc(g->arena, sizeof(int) * (size_t)(n_out + 2 * n_carried + 1));
		seqs = arena_alloc(g->arena, sizeof(*seqs) * (size_t)(n_carried + 1));
		in[0] = x->n.in[0];
		in[1] = x->n.in[1];
		if ((n_tc = carried_tensors(x, ports, n_carried, in + 2, outs, seqs)) < 0)
			return -1;
		memcpy(in + 2 + n_tc, x->n.in + x->n_onnx, sizeof(int) * (size_t)x->caps->n);
		n_in += n_tc - n_carried;
		n_out += n_tc - n_carried;
	}
	for (int o = ports ? n_tc : 0; o < n_out; o++) {
		int oo = o - n_tc + n_carried;	/* its ONNX output */
		bool rest = oo >= n_carried && iter > 0;

		if (oo < x->n.n_out && x->n.out[oo] >= 0 && !rest)
			outs[o] = x->n.out[oo];
		else
			outs[o] = graph_add_value(g, arena_printf(g->arena, "%s/%s%d", x->n.name,
								  rest ? "rest" : "unused", oo));
	}
	ni = control_node(x, OP_LOOP, in, n_in, outs, n_out);
	node_set_attr_int(g, &g->nodes.v[ni], "inputs", 2 + n_tc);
	if (onnx_loop_call(g, ni, body, x->n_onnx, x->caps, x->n.in + 2, ports, iter, outs) < 0) {
		/* not a Loop to expand again */
		g->nodes.v[ni].dead = true;
		return -1;
	}
	if (ports)
		carried_seqs(x, body, ports, n_carried, outs, seqs);
	for (int s = 0; s < n_scan && iter > 0; s++) {
		int o = n_carried + s, *v, cat[2], out;

		if (o >= x->n.n_out || x->n.out[o] < 0)
			continue;
		v = arena_alloc(g->arena, sizeof(int) * (size_t)(iter + 1));
		for (int t = 0; t < iter; t++)
			v[t] = elems[t * n_scan + s];
		cat[0] = stack(x, arena_printf(g->arena, "scan%d", s), v, iter, 0, -1);
		cat[1] = outs[n_tc + s];
		out = glue(x, OP_CONCAT, "Concat", arena_printf(g->arena, "scan%d.all", s), cat, 2,
			   x->n.out[o]);
		(void)out;
		node_set_attr_int(g, &g->nodes.v[g->nodes.n - 1], "axis", 0);
	}
	return 0;
}
/*
 * One iteration of a Loop: inputs M, cond, carried..., captured...,
 * then the scan-output elements of the iterations done so far; attribute
 * "iter" counts them and "inputs" keeps the ONNX input count. Leaves a Loop
 * node for the rest, which the next step of pass_infer expands in turn.
 */
static int expand_loop(struct expander *x)
{
	struct graph *g = x->g;
	const Onnx__GraphProto *body = subgraph(x, "body");
	int n_carried = x->n_onnx - 2, n_scan, iter = (int)node_attr_int(&x->n, "iter", 0);
	int m_id = x->n.n_in > 0 ? x->n.in[0] : -1, c_id = x->n_onnx > 1 ? x->n.in[1] : -1;
	const int *elems = &x->n.in[x->n_onnx + x->caps->n];
	int64_t m = -1;
	double md;
	bool c = true;
	int known = 1, *args, *outs, *in, ni, n_in, base;

	if (!body)
		return -1;
	if (x->n_onnx < 2) {
		diag_error(g->ctx, "%s: needs inputs M and cond (either may be empty)",
			   node_loc(g, &x->n));
		return -1;
	}
	n_scan = (int)body->n_output - 1 - n_carried;
	if (n_carried < 0 || n_scan < 0 || (int)body->n_input != n_carried + 2) {
		diag_error(g->ctx, "%s: the body has %zu inputs and %zu outputs for %d loop-carried "
			   "values", node_loc(g, &x->n), body->n_input, body->n_output,
			   n_carried < 0 ? 0 : n_carried);
		return -1;
	}
	if (m_id >= 0) {
		if (!value_const_scalar(g, &g->values.v[m_id], &md))
			return loop_call(x, body, n_carried, n_scan, iter, elems);
		m = md > 0 ? (int64_t)md : 0;	/* a negative count runs no iteration */
	}
	if (c_id >= 0 && (known = const_cond(x, c_id, &c)) < 0)
		return -1;
	if ((m >= 0 && iter >= m) || (known && !c))
		return loop_finish(x, n_carried, n_scan, iter, elems);
	/* the rest runs at run time: how many iterations, or whether scan
	   elements are made, depends on data; or unrolling would go too far */
	if ((m < 0 && !known) || (!known && n_scan) || iter >= CONTROL_UNROLL_MAX ||
	    (iter == 0 && m > CONTROL_UNROLL_MAX))
		return loop_call(x, body, n_carried, n_scan, iter, elems);
	args = arena_alloc(g->arena, sizeof(int) * (size_t)(n_carried + 2));
	args[0] = const_i64(x, arena_printf(g->arena, "iter%d", iter), 0, iter);
	args[1] = c_id >= 0 ? c_id : const_bool(x, arena_printf(g->arena, "cond%d", iter), true);
	for (int j = 0; j < n_carried; j++)
		args[2 + j] = x->n.in[2 + j];
	if (instance(x, body, arena_printf(g->arena, "[%d]/", iter), args, n_carried + 2, &outs) < 0)
		return -1;
	/* the rest of the loop: M, cond, carried, captured, scan elements */
	base = x->n_onnx + x->caps->n;
	n_in = base + (iter + 1) * n_scan;
	in = arena_alloc(g->arena, sizeof(int) * (size_t)(n_in + 1));
	memcpy(in, x->n.in, sizeof(int) * (size_t)base);
	memcpy(in + base, elems, sizeof(int) * (size_t)(iter * n_scan));
	for (int s = 0; s < n_scan; s++)
		in[base + iter * n_scan + s] = outs[1 + n_carried + s];
	in[1] = outs[0];
	for (int j = 0; j < n_carried; j++) {
		int w[3] = { c_id, outs[1 + j], x->n.in[2 + j] };

		/* a run-time condition: once false, the values stay (op type "Loop": checked) */
		in[2 + j] = known ? outs[1 + j]
			: glue(x, OP_WHERE, "Loop", arena_printf(g->arena, "keep%d_%d", iter, j), w,
			       3, -1);
	}
	if (!known) {
		int a[2] = { c_id, outs[0] };

		in[1] = glue(x, OP_AND, "Loop", arena_printf(g->arena, "cond%d", iter), a, 2, -1);
	}
	ni = control_node(x, OP_LOOP, in, n_in, x->n.out, x->n.n_out);
	node_set_attr_int(g, &g->nodes.v[ni], "iter", iter + 1);
	return 0;
}

/* An ints attribute's element i, or def when the attribute is absent. */
static int64_t attr_ints_at(const struct node *n, const char *name, int i, int64_t def)
{
	const int64_t *v;
	int c = node_attr_ints(n, name, &v);

	return c < 0 ? def : i < c ? v[i] : def;
}

/* ---- a Scan of run-time length: a Loop call ---- */

static Onnx__ValueInfoProto *named_info(struct arena *a, const char *name)
{
	Onnx__ValueInfoProto *vi = arena_alloc(a, sizeof(*vi));

	onnx__value_info_proto__init(vi);
	vi->name = (char *)name;
	return vi;
}

/* A NodeProto: op(in...) -> out, with an int attribute when attr is not NULL. */
static Onnx__NodeProto *node_proto(struct arena *a, const char *op, const char *name,
				   const char *const *in, int n_in, const char *out,
				   const char *attr, int64_t v)
{
	Onnx__NodeProto *np = arena_alloc(a, sizeof(*np));

	onnx__node_proto__init(np);
	np->op_type = (char *)op;
	np->name = (char *)name;
	np->n_input = (size_t)n_in;
	np->input = arena_memdup(a, in, sizeof(char *) * (size_t)n_in);
	np->n_output = 1;
	np->output = arena_alloc(a, sizeof(char *));
	np->output[0] = (char *)out;
	if (attr) {
		Onnx__AttributeProto *ap = arena_alloc(a, sizeof(*ap));

		onnx__attribute_proto__init(ap);
		ap->name = (char *)attr;
		ap->has_type = true;
		ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		ap->has_i = true;
		ap->i = v;
		np->n_attribute = 1;
		np->attribute = arena_alloc(a, sizeof(*np->attribute));
		np->attribute[0] = ap;
	}
	return np;
}

/*
 * The body of the Loop a Scan becomes: inputs (i, cond, states), element i
 * (or len - 1 - i) of each scan input gathered from the captured
 * "scan.x<m>" along its axis under the name the Scan's body gives it, the
 * Scan's body, and outputs (cond, states, scan elements).
 */
static Onnx__GraphProto *scan_loop_body(struct expander *x, const Onnx__GraphProto *body,
					int ns, int nx, const int *axes)
{
	struct arena *a = x->g->arena;
	Onnx__GraphProto *gp = arena_alloc(a, sizeof(*gp));
	const char *dirs = "scan_input_directions";
	int n = 0;

	*gp = *body;
	gp->n_input = (size_t)ns + 2;
	gp->input = arena_alloc(a, sizeof(*gp->input) * (size_t)(ns + 3));
	gp->input[0] = named_info(a, "scan.i");
	gp->input[1] = named_info(a, "scan.cond");
	for (int k = 0; k < ns; k++)
		gp->input[2 + k] = body->input[k];
	gp->node = arena_alloc(a, sizeof(*gp->node) * (body->n_node + 2 * (size_t)nx + 2));
	for (int m = 0; m < nx; m++) {
		bool rev = attr_ints_at(&x->n, dirs, m, 0) != 0;
		const char *in[2] = { arena_printf(a, "scan.x%d", m), "scan.i" };
		const char *back[2] = { "scan.last", "scan.i" };

		if (rev) {
			in[1] = arena_printf(a, "scan.back%d", m);
			gp->node[n++] = node_proto(a, "Sub", arena_printf(a, "scan.back%d", m), back,
						   2, in[1], NULL, 0);
		}
		gp->node[n++] = node_proto(a, "Gather", arena_printf(a, "scan.slice%d", m), in, 2,
					   body->input[ns + m]->name, "axis", axes[m]);
	}
	for (size_t k = 0; k < body->n_node; k++)
		gp->node[n++] = body->node[k];
	{
		const char *c[1] = { "scan.cond" };

		gp->node[n++] = node_proto(a, "Identity", "scan.keep", c, 1, "scan.cond_out", NULL,
					   0);
	}
	gp->n_node = (size_t)n;
	gp->n_output = body->n_output + 1;
	gp->output = arena_alloc(a, sizeof(*gp->output) * (body->n_output + 2));
	gp->output[0] = named_info(a, "scan.cond_out");
	memcpy(gp->output + 1, body->output, sizeof(*gp->output) * body->n_output);
	return gp;
}

/*
 * A Scan whose length is only known at run time (or too long to unroll):
 * a Loop call (loop_call) of M = the scan axis's length iterations over the
 * body above, capturing the scan inputs and len - 1; scan outputs along
 * another axis than 0 are transposed after it. Reversed scan outputs are
 * refused (a Slice of step -1 on a data-dependent axis).
 */
static int scan_call(struct expander *x, const Onnx__GraphProto *body, int ns, int nx,
		     const int *xs, const int *axes)
{
	struct graph *g = x->g;
	int n_scan = (int)body->n_output - ns, nc = x->caps->n;
	struct expander lx = *x;
	struct attr *caps = arena_alloc(g->arena, sizeof(*caps));
	int *in = arena_alloc(g->arena, sizeof(int) * (size_t)(2 + ns + nc + nx + 2));
	int *out = arena_alloc(g->arena, sizeof(int) * (size_t)(ns + n_scan + 1));
	int shape, len, last, k = 0, idx[2], one;

	for (int s = 0; s < n_scan; s++)
		if (attr_ints_at(&x->n, "scan_output_directions", s, 0)) {
			diag_error(g->ctx, "%s: scan output %d is reversed; with a scan length known "
				   "only at run time that is not supported", node_loc(g, &x->n), s);
			return -1;
		}
	shape = glue(x, OP_SHAPE, "Shape", "scan.shape", &xs[0], 1, -1);
	idx[0] = shape;
	idx[1] = const_i64(x, "scan.axis", 0, axes[0]);
	len = glue_attr(x, OP_GATHER, "Gather", "scan.len", idx, 2, "axis", 0);
	one = const_i64(x, "scan.one", 0, 1);
	idx[0] = len;
	idx[1] = one;
	last = glue(x, OP_SUB, "Sub", "scan.last", idx, 2, -1);
	/* int64 scalars: what the call needs of them now; inference follows */
	for (int i = 0; i < 2; i++) {
		struct value *v = &g->values.v[i ? last : len];

		v->dtype = DTYPE_I64;
		v->has_shape = true;
		v->shape.rank = 0;
	}
	in[k++] = len;
	in[k++] = -1;
	for (int j = 0; j < ns; j++)
		in[k++] = x->n.in[j];
	*caps = *x->caps;
	caps->n = nc + nx + 1;
	caps->strs = arena_alloc(g->arena, sizeof(char *) * (size_t)(caps->n + 1));
	memcpy(caps->strs, x->caps->strs, sizeof(char *) * (size_t)nc);
	memcpy(in + k, &x->n.in[x->n_onnx], sizeof(int) * (size_t)nc);
	k += nc;
	for (int m = 0; m < nx; m++) {
		caps->strs[nc + m] = arena_printf(g->arena, "scan.x%d", m);
		in[k++] = xs[m];
	}
	caps->strs[nc + nx] = "scan.last";
	in[k++] = last;
	for (int o = 0; o < ns + n_scan; o++) {
		bool moved = o >= ns && attr_ints_at(&x->n, "scan_output_axes", o - ns, 0) != 0;

		out[o] = moved ? graph_add_value(g, arena_printf(g->arena, "%s/scan%d", x->n.name,
								 o - ns)) : x->n.out[o];
	}
	lx.n.in = in;
	lx.n.n_in = k;
	lx.n.out = out;
	lx.n.n_out = ns + n_scan;
	lx.n_onnx = 2 + ns;
	lx.caps = caps;
	if (loop_call(&lx, scan_loop_body(x, body, ns, nx, axes), ns, n_scan, 0, NULL) < 0)
		return -1;
	for (int s = 0; s < n_scan; s++) {
		int64_t a = attr_ints_at(&x->n, "scan_output_axes", s, 0);
		const struct value *v = &g->values.v[out[ns + s]];
		int64_t perm[MAX_RANK];

		if (!a)
			continue;
		if (a < 0)
			a += v->shape.rank;
		/* the elements were stacked along axis 0: move it to a */
		for (int d = 0, j = 1; d < v->shape.rank; d++)
			perm[d] = d == a ? 0 : j++;
		glue(x, OP_TRANSPOSE, "Transpose", arena_printf(g->arena, "scan%d.axis", s),
		     &out[ns + s], 1, x->n.out[ns + s]);
		node_set_attr_ints(g, &g->nodes.v[g->nodes.n - 1], "perm", perm, v->shape.rank);
	}
	return 0;
}

/*
 * The scan itself over states[0..ns) and the scan inputs xs[0..nx). Their
 * lengths come from the shapes of src[0..nx): the node's scan inputs, which
 * have ax_shift more leading axes (opset 8's batch axis, which xs no longer
 * have). tag ("", or "[b]" for opset 8's batch row b) begins the names it
 * makes: body copies are "scan[b][t]/inner". Sets outs[0..ns + n_scan):
 * 0; or 1 when the length is only known at run time (or too long) and the
 * scan became a Loop call that made the node's outputs itself; or -1.
 */
static int scan_core(struct expander *x, const Onnx__GraphProto *body, const char *tag,
		     const int *states, int ns, const int *xs, const int *src, int nx,
		     int ax_shift, int *outs)
{
	struct graph *g = x->g;
	int n_scan = (int)body->n_output - ns, len = -1;
	int *args = arena_alloc(g->arena, sizeof(int) * (size_t)(ns + nx + 1));
	int *axes = arena_alloc(g->arena, sizeof(int) * (size_t)(nx + 1));
	int *elems, *bo;
	const char *dirs = g->opset < 9 ? "directions" : "scan_input_directions";

	for (int m = 0; m < nx; m++) {
		const struct value *v = &g->values.v[src[m]];
		int rank = v->shape.rank - ax_shift;
		int64_t a = attr_ints_at(&x->n, "scan_input_axes", m, 0);

		if (a < 0)
			a += rank;
		if (a < 0 || a >= rank) {
			diag_error(g->ctx, "%s: scan input '%s' has no axis %lld", node_loc(g, &x->n),
				   v->name, (long long)a);
			return -1;
		}
		axes[m] = (int)a;
		if (!dim_is_const(v->shape.d[a + ax_shift]) || v->shape.d[a + ax_shift].c >
		    CONTROL_UNROLL_MAX) {
			if (ax_shift) {
				diag_error(g->ctx, "%s: scan input '%s' needs a static length along "
					   "its scan axis", node_loc(g, &x->n), v->name);
				return -1;
			}
			len = -2;	/* run time: a Loop call */
			continue;
		}
		if (len >= 0 && v->shape.d[a + ax_shift].c != len) {
			diag_error(g->ctx, "%s: scan inputs have different lengths (%d and %lld)",
				   node_loc(g, &x->n), len, (long long)v->shape.d[a + ax_shift].c);
			return -1;
		}
		if (len != -2)
			len = (int)v->shape.d[a + ax_shift].c;
	}
	if (len == -2 && n_scan >= 0)
		return scan_call(x, body, ns, nx, xs, axes) < 0 ? -1 : 1;
	if (n_scan < 0 || len < 1 || len > CONTROL_UNROLL_MAX) {
		if (n_scan < 0)
			diag_error(g->ctx, "%s: the body has too few outputs", node_loc(g, &x->n));
		else
			diag_error(g->ctx, "%s: the scan length is %d; scans are unrolled and "
				   "must have 1 to %d steps", node_loc(g, &x->n), len,
				   CONTROL_UNROLL_MAX);
		return -1;
	}
	elems = arena_alloc(g->arena, sizeof(int) * (size_t)(len * n_scan + 1));
	memcpy(args, states, sizeof(int) * (size_t)ns);
	for (int t = 0; t < len; t++) {
		for (int m = 0; m < nx; m++) {
			int at = attr_ints_at(&x->n, dirs, m, 0) ? len - 1 - t : t;
			const char *nm = arena_printf(g->arena, "%sstep%d.in%d", tag, t, m);
			int in[2] = { xs[m], const_i64(x, nm, 0, at) };

			args[ns + m] = glue_attr(x, OP_GATHER, "Gather",
						 arena_printf(g->arena, "%sstep%d.slice%d", tag, t, m),
						 in, 2, "axis", axes[m]);
		}
		if (instance(x, body, arena_printf(g->arena, "%s[%d]/", tag, t), args, ns + nx,
			     &bo) < 0)
			return -1;
		memcpy(args, bo, sizeof(int) * (size_t)ns);
		for (int s = 0; s < n_scan; s++)
			elems[t * n_scan + s] = bo[ns + s];
	}
	memcpy(outs, args, sizeof(int) * (size_t)ns);
	for (int s = 0; s < n_scan; s++) {
		int *v = arena_alloc(g->arena, sizeof(int) * (size_t)(len + 1));
		bool rev = attr_ints_at(&x->n, "scan_output_directions", s, 0) != 0;

		for (int t = 0; t < len; t++)
			v[t] = elems[(rev ? len - 1 - t : t) * n_scan + s];
		outs[ns + s] = stack(x, arena_printf(g->arena, "%sscan%d", tag, s), v, len,
				     attr_ints_at(&x->n, "scan_output_axes", s, 0), -1);
	}
	return 0;
}

/* Scan: opset 8 has a leading sequence_lens input and a batch axis 0. */
static int expand_scan(struct expander *x)
{
	struct graph *g = x->g;
	const Onnx__GraphProto *body = subgraph(x, "body");
	int nx = (int)node_attr_int(&x->n, "num_scan_inputs", -1), v8 = g->opset < 9;
	int ns = x->n_onnx - v8 - nx, nout, *outs, batch;
	const int *states = &x->n.in[v8], *xs = &x->n.in[v8 + ns];

	if (!body)
		return -1;
	nout = (int)body->n_output;
	if (nx < 1 || ns < 0 || (int)body->n_input != ns + nx || nout < ns ||
	    x->n.n_out != nout) {
		diag_error(g->ctx, "%s: num_scan_inputs, the inputs and the body's inputs and "
			   "outputs do not agree", node_loc(g, &x->n));
		return -1;
	}
	outs = arena_alloc(g->arena, sizeof(int) * (size_t)(nout + 1));
	if (!v8) {
		int r = scan_core(x, body, "", states, ns, xs, xs, nx, 0, outs);

		if (r != 0)
			return r < 0 ? -1 : 0;	/* 1: a Loop call made the outputs */
		for (int i = 0; i < nout; i++)
			glue(x, OP_IDENTITY, "Identity", arena_printf(g->arena, "out%d", i), &outs[i],
			     1, x->n.out[i]);
		return 0;
	}
	if (x->n.in[0] >= 0) {
		diag_error(g->ctx, "%s: sequence_lens is not supported", node_loc(g, &x->n));
		return -1;
	}
	if (!g->values.v[xs[0]].shape.rank || !dim_is_const(g->values.v[xs[0]].shape.d[0])) {
		diag_error(g->ctx, "%s: the batch size must be static", node_loc(g, &x->n));
		return -1;
	}
	batch = (int)g->values.v[xs[0]].shape.d[0].c;
	{
		int *per = arena_alloc(g->arena, sizeof(int) * (size_t)(batch * nout + 1));
		int *bs = arena_alloc(g->arena, sizeof(int) * (size_t)(ns + nx + 1));

		for (int b = 0; b < batch; b++) {
			const char *tag = arena_printf(g->arena, "[%d]", b);

			for (int i = 0; i < ns + nx; i++) {
				int in[2] = { x->n.in[1 + i], const_i64(x, arena_printf(g->arena,
						"batch%d.%d", b, i), 0, b) };

				bs[i] = glue_attr(x, OP_GATHER, "Gather", arena_printf(g->arena,
						  "batch%d.slice%d", b, i), in, 2, "axis", 0);
			}
			if (scan_core(x, body, tag, bs, ns, bs + ns, xs, nx, 1, &per[b * nout]) < 0)
				return -1;
		}
		for (int i = 0; i < nout; i++) {
			int *v = arena_alloc(g->arena, sizeof(int) * (size_t)(batch + 1));

			for (int b = 0; b < batch; b++)
				v[b] = per[b * nout + i];
			stack(x, arena_printf(g->arena, "out%d", i), v, batch, 0, x->n.out[i]);
		}
	}
	return 0;
}

/*
 * SequenceMap: the body once per element of the first input, named
 * "map[i]/inner"; each further input is a sequence of the same length (its
 * element i) or a tensor (itself). Each body output collects into a sequence.
 */
static int expand_sequence_map(struct expander *x)
{
	struct graph *g = x->g;
	const Onnx__GraphProto *body = subgraph(x, "body");
	const struct seq *s0 = x->n_onnx ? g->values.v[x->n.in[0]].seq : NULL;
	int nout = x->n.n_out, *args, *bo, **elems;

	if (!body)
		return -1;
	if (!s0 || s0->optional) {
		diag_error(g->ctx, "%s: input 0 must be a sequence", node_loc(g, &x->n));
		return -1;
	}
	if ((int)body->n_output != nout) {
		diag_error(g->ctx, "%s: the body has %zu outputs for %d", node_loc(g, &x->n),
			   body->n_output, nout);
		return -1;
	}
	for (int k = 0; k < x->n_onnx; k++) {
		const struct seq *s = x->n.in[k] >= 0 ? g->values.v[x->n.in[k]].seq : NULL;

		if (s && s->rt) {
			/* unrolled per element, it needs their number */
			diag_error(g->ctx, "%s: input %d '%s' is a sequence whose length is only "
				   "known at run time; SequenceMap does not take one",
				   node_loc(g, &x->n), k, g->values.v[x->n.in[k]].name);
			return -1;
		}
	}
	for (int k = 1; k < x->n_onnx; k++) {
		const struct seq *s = x->n.in[k] >= 0 ? g->values.v[x->n.in[k]].seq : NULL;

		if (x->n.in[k] < 0) {
			diag_error(g->ctx, "%s: input %d is empty", node_loc(g, &x->n), k);
			return -1;
		}
		if (s && (s->optional || s->n != s0->n)) {
			diag_error(g->ctx, "%s: input %d has %d elements, input 0 %d",
				   node_loc(g, &x->n), k, s->n, s0->n);
			return -1;
		}
	}
	args = arena_alloc(g->arena, sizeof(int) * (size_t)(x->n_onnx + 1));
	elems = arena_alloc(g->arena, sizeof(int *) * (size_t)(nout + 1));
	for (int j = 0; j < nout; j++)
		elems[j] = arena_alloc(g->arena, sizeof(int) * (size_t)(s0->n + 1));
	for (int i = 0; i < s0->n; i++) {
		for (int k = 0; k < x->n_onnx; k++) {
			const struct seq *s = g->values.v[x->n.in[k]].seq;

			args[k] = s ? s->elems[i] : x->n.in[k];
		}
		if (instance(x, body, arena_printf(g->arena, "[%d]/", i), args, x->n_onnx,
			     &bo) < 0)
			return -1;
		for (int j = 0; j < nout; j++)
			elems[j][i] = bo[j];
	}
	for (int j = 0; j < nout; j++) {
		struct seq *s = arena_alloc(g->arena, sizeof(*s));
		struct value *v = &g->values.v[x->n.out[j]];

		s->n = s0->n;
		s->elems = elems[j];
		s->elem = s0->n ? DTYPE_UNDEF : s0->elem;	/* set by pass_infer */
		v->seq = s;
		v->dtype = s0->elem;
		v->has_shape = true;
	}
	return 0;
}

int onnx_expand_control(struct graph *g, int ni)
{
	struct expander x = { g, g->nodes.v[ni], 0, NULL };
	int tail = g->nodes.n, rc;

	x.caps = node_attr(&x.n, "captures");
	if (!x.caps)
		BUG("%s has no captures", node_loc(g, &x.n));
	/* a Loop's rest (expand_loop) has scan elements after the captured values */
	x.n_onnx = (int)node_attr_int(&x.n, "inputs", x.n.n_in - x.caps->n);
	switch (x.n.op) {
	case OP_IF: rc = expand_if(&x); break;
	case OP_LOOP: rc = expand_loop(&x); break;
	case OP_SCAN: rc = expand_scan(&x); break;
	case OP_SEQUENCEMAP: rc = expand_sequence_map(&x); break;
	default: BUG("onnx_expand_control(%s)", node_loc(g, &x.n));
	}
	g->nodes.v[ni].dead = true;
	g->nodes.v[ni].n_out = 0;
	graph_move_tail(g, tail, ni + 1);
	return rc;
}
