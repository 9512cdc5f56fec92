/*
 * onnx_glue.c - what the importer and the stages after it (If/Loop/Scan
 * expansion, onnx_control.c; sequence lowering, onnx_sequence.c and
 * onnx_seqrt.c) make alike: glue nodes with their parent's span, and the
 * values of run-time sequences. It calls none of them.
 */
#include "onnx_import.h"

int onnx_glue(struct graph *g, const struct node *parent, enum op op, const char *type,
	      const char *what, const int *in, int n_in, int out)
{
	const char *name = arena_printf(g->arena, "%s/%s", parent->name, what);
	int ni;

	if (out < 0)
		out = graph_add_value(g, name);
	ni = graph_add_node(g, op, name, in, n_in, &out, 1);
	g->nodes.v[ni].op_type = type;
	g->nodes.v[ni].span = parent->span;
	return out;
}

struct seq *onnx_seq_new(struct graph *g, int v, const struct seq *like)
{
	struct seq *s = arena_alloc(g->arena, sizeof(*s));

	*s = *like;
	g->values.v[v].seq = s;
	g->values.v[v].dtype = s->elem == DTYPE_UNDEF ? DTYPE_F32 : s->elem;
	g->values.v[v].has_shape = true;
	g->values.v[v].shape.rank = 0;
	return s;
}

void seqrt_set(struct graph *g, int v, const struct seq *like, int present, int data, int dims)
{
	struct seq *s = onnx_seq_new(g, v, like);

	s->present = present;
	s->data = data;
	s->dims = dims;
}

/* One tensor of a port: an input named NAME.what of dtype t and rank r (dims symbols). */
static int port_input(struct graph *g, const char *name, const char *what, enum dtype t,
		      int r, int cols)
{
	int id = graph_add_value(g, arena_printf(g->arena, "%s.%s", name, what));
	struct value *v = &g->values.v[id];

	v->flags |= VALUE_INPUT;
	v->dtype = t;
	v->has_shape = true;
	v->shape.rank = r;
	if (r)
		v->shape.d[0] = dim_sym(graph_intern_sym(g, arena_printf(g->arena, "%s.%s[0]",
								      name, what)));
	if (r == 2)
		v->shape.d[1] = dim_const(cols);
	vec_push(&g->inputs, id);
	return id;
}

int seqrt_input(struct graph *g, const struct seq_port *p)
{
	struct seq s = { 0 };
	int id;

	s.rt = true;
	s.optional = p->optional;
	s.elem = p->elem;
	s.rank = p->rank;
	s.any_rank = p->any_rank;
	s.mixed = p->mixed;
	s.data = port_input(g, p->name, "data", p->elem, 1, 0);
	s.dims = port_input(g, p->name, "dims", DTYPE_I64, 2, p->rank);
	s.present = p->optional ? port_input(g, p->name, "present", DTYPE_BOOL, 0, 0) : -1;
	id = graph_add_value(g, p->name);
	onnx_seq_new(g, id, &s);
	return id;
}
