/*
 * onnx_loop_call.c - a Loop that cannot be unrolled (its trip count or its
 * condition is only known at run time, or it runs too many iterations)
 * becomes a call: its body is written out as an ONNX model of its own,
 *
 *	inputs   iteration number (int64 scalar), condition (bool scalar),
 *		 the loop-carried values, then the captured outer values
 *		 that are not constants (constants become initializers, so
 *		 that shape arithmetic on them still folds in the body)
 *	outputs  the body's: condition, carried values, scan elements
 *
 * which the compile driver compiles after passes (a whole compile: passes,
 * Collage, lowering; the bodies are listed in graph.loops) into an archive
 * with an API prefix of its own. What the body gives (its outputs' dtypes
 * and shapes) comes earlier, from a probe: the body imported and inferred
 * on its own, which the driver makes when inference asks for it
 * (graph.probes, body_probe). The Loop node
 * stays in the graph with attribute "call"; the c target lowers it to a
 * call of the runtime's rt_loop_kernel, and the runtime (rt_model.c) runs
 * the body through that API once per iteration, copying the carried values
 * from one iteration's outputs to the next one's inputs and appending the
 * scan elements.
 *
 * The Loop's outputs keep what the body says of their shapes: a static dim
 * stays static, a dim that is one of the outer model's symbols (passed in
 * through an input's shape) stays that symbol, and anything else, the scan
 * outputs' leading dim first, is data-dependent: bound by the run-time
 * shape function that runs the loop before the plan places its outputs.
 *
 * The same machinery serves an If decided at run time whose branches give
 * different shapes (onnx_if_call: each branch a model taking the captured
 * values, the one the condition takes run) and, through a Loop that
 * onnx_control.c builds, a Scan of a run-time length. Captured constants
 * are copied into each body's weights.
 */
#include "onnx_import.h"

#include <errno.h>
#include <string.h>

#include "../ops/ops.h"

/* The outer dims the body's input shapes name, by the name the body sees. */
struct dimvec {
	struct dim *v;
	int n, cap;
};

/* One ValueInfoProto for value v under the name `name`, dims as the outer model knows them. */
static Onnx__ValueInfoProto *value_info(struct graph *g, const char *name, const struct value *v,
					unsigned grow, struct strmap *dims, struct dimvec *dimv)
{
	struct arena *a = g->arena;
	Onnx__ValueInfoProto *vi = arena_alloc(a, sizeof(*vi));
	Onnx__TypeProto *tp = arena_alloc(a, sizeof(*tp));
	Onnx__TypeProto__Tensor *tt = arena_alloc(a, sizeof(*tt));
	Onnx__TensorShapeProto *sp = arena_alloc(a, sizeof(*sp));

	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sp);
	vi->name = (char *)name;
	vi->type = tp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	tt->has_elem_type = true;
	tt->elem_type = dtype_to_onnx(v->dtype);
	tt->shape = sp;
	sp->n_dim = (size_t)v->shape.rank;
	sp->dim = arena_alloc(a, sizeof(*sp->dim) * (size_t)(v->shape.rank + 1));
	for (int k = 0; k < v->shape.rank; k++) {
		Onnx__TensorShapeProto__Dimension *d = arena_alloc(a, sizeof(*d));
		struct dim dm = v->shape.d[k];

		onnx__tensor_shape_proto__dimension__init(d);
		if (grow & 1u << k) {
			/* a dim the body changes: a symbol of the body's own */
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = arena_printf(a, "%s[%d]", name, k);
		} else if (!dm.n) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = dm.c;
		} else {
			struct strbuf sb = STRBUF_INIT;

			/* "N", "2*N", "(seq-1)": the body sees one symbol of that name */
			dim_print(g, dm, &sb);
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = arena_strdup(a, sb_str(&sb));
			if (strmap_get(dims, d->dim_param) < 0) {
				strmap_put(dims, d->dim_param, dimv->n);
				vec_push(dimv, dm);
			}
			sb_release(&sb);
		}
		sp->dim[k] = d;
	}
	return vi;
}

/* An initializer holding constant v (not a string tensor). */
static Onnx__TensorProto *initializer(struct graph *g, const char *name, const struct value *v)
{
	Onnx__TensorProto *t = arena_alloc(g->arena, sizeof(*t));
	int64_t n = shape_numel_static(&v->shape);

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = true;
	t->data_type = dtype_to_onnx(v->dtype);
	t->n_dims = (size_t)v->shape.rank;
	t->dims = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(v->shape.rank + 1));
	for (int k = 0; k < v->shape.rank; k++)
		t->dims[k] = v->shape.d[k].c;
	t->has_raw_data = true;
	t->raw_data.len = (size_t)n * dtype_size(v->dtype);
	t->raw_data.data = v->data;
	return t;
}

/*
 * The probe of body lb (written out): its outputs into lb->outs, from the
 * driver's probes in the order they are asked for. 0; or -1 and
 * g->probe_wanted when this one was not probed yet (the driver probes it and
 * imports the model again: lb->dir is then the driver's, not lb's).
 */
static int body_probe(struct graph *g, struct loop_body *lb)
{
	const struct loop_body *p;

	if (g->probe_wanted)
		return -1;	/* inference goes on, but is started over */
	if (g->n_probes_asked == g->n_probes) {
		g->probe_wanted = arena_memdup(g->arena, lb, sizeof(*lb));
		lb->dir = NULL;
		return -1;
	}
	p = &g->probes[g->n_probes_asked++];
	if (p->kind != lb->kind || p->n_out != lb->n_out || strcmp(p->prefix, lb->prefix))
		BUG("probe %d is for %s, asked for %s", g->n_probes_asked - 1, p->prefix,
		    lb->prefix);
	memcpy(lb->outs, p->outs, sizeof(*lb->outs) * (size_t)lb->n_out);
	return 0;
}

/* Whether outer value v can go into the body: a tensor of known dtype and shape. */
static int check_passable(struct graph *g, const struct node *n, const char *what,
			  const struct value *v)
{
	if (v->seq) {
		diag_error(g->ctx, "%s: %s '%s' is %s; a loop run at run time takes tensors "
			   "only", node_loc(g, n), what, v->name,
			   v->seq->optional ? "an optional" : "a sequence");
		return -1;
	}
	if (dtype_is_string(v->dtype)) {
		diag_error(g->ctx, "%s: %s '%s' is a string tensor; a loop run at run time takes "
			   "numeric tensors only", node_loc(g, n), what, v->name);
		return -1;
	}
	if (!v->has_shape || v->dtype == DTYPE_UNDEF)
		BUG("%s: %s '%s' reached the loop without a shape", node_loc(g, n), what, v->name);
	return 0;
}

/*
 * The file of the body of node n, whose name is what the body's messages
 * begin with: "model.onnx#loop", "model.onnx#if.then" ('/' in the node's
 * name made '_').
 */
static char *body_file(struct graph *g, const char *dir, const struct node *n, int lb_kind)
{
	const char *path = g->path ? g->path : "model";
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *name = arena_printf(g->arena, "%s#%s%s", base, n->name,
				  lb_kind == 2 ? ".else" : lb_kind ? ".then" : "");

	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '_';
	return arena_printf(g->arena, "%s/%s", dir, name);
}

/*
 * The body's nodes, named "loop/body/inner" ("if/then/inner") as an
 * unrolled copy's are "loop[3]/inner".
 */
static Onnx__NodeProto **body_nodes(struct graph *g, const struct node *n,
				    const Onnx__GraphProto *body, const char *part)
{
	Onnx__NodeProto **v = arena_alloc(g->arena, sizeof(*v) * (body->n_node + 1));

	for (size_t i = 0; i < body->n_node; i++) {
		v[i] = arena_memdup(g->arena, body->node[i], sizeof(*v[i]));
		if (body->node[i]->name && body->node[i]->name[0])
			v[i]->name = arena_printf(g->arena, "%s/%s/%s", n->name, part,
						  body->node[i]->name);
		else	/* the importer's name for an unnamed node */
			v[i]->name = arena_printf(g->arena, "%s/%s/%s_%zu", n->name, part,
						  body->node[i]->op_type, i);
	}
	return v;
}

/* The number of tensors that carry port p: 1 for a tensor (no port). */
static int port_width(const struct seq_port *p)
{
	return !p || !p->name ? 1 : p->optional ? 3 : 2;
}

static Onnx__StringStringEntryProto *port_entry(struct arena *a, const char *dir,
						 const char *name, const struct seq_port *p)
{
	Onnx__StringStringEntryProto *e = arena_alloc(a, sizeof(*e));

	onnx__string_string_entry_proto__init(e);
	e->key = "collagec.sequence";
	e->value = arena_printf(a, "%s %s %d %d %s%s%s-", dir, name, dtype_to_onnx(p->elem),
				p->rank, p->optional ? "o" : "", p->any_rank ? "a" : "",
				p->mixed ? "m" : "");
	return e;
}

/*
 * The body's run-time sequences (ports[j] for carried value j, name NULL
 * for a tensor) as the model's metadata (struct seq_port): in under the
 * body input's name, out under the output's that carries it on.
 */
static void ports_metadata(struct arena *a, const Onnx__GraphProto *body,
			   const struct seq_port *ports, int n_carried, Onnx__ModelProto *mp)
{
	mp->metadata_props = arena_alloc(a, sizeof(*mp->metadata_props) *
					 (size_t)(2 * n_carried + 1));
	for (int j = 0; j < n_carried; j++) {
		if (!ports[j].name)
			continue;
		mp->metadata_props[mp->n_metadata_props++] =
			port_entry(a, "in", body->input[2 + j]->name, &ports[j]);
		mp->metadata_props[mp->n_metadata_props++] =
			port_entry(a, "out", body->output[1 + j]->name, &ports[j]);
	}
}

/*
 * lb's counts (n_tc carried tensors: a run-time sequence is two or three),
 * its outputs' room and its API prefix, before body_model fills it.
 */
static void body_init(struct graph *g, struct loop_body *lb, int n_tc, int n_scan)
{
	lb->n_carried = n_tc;
	lb->n_scan = n_scan;
	lb->n_out = 1 + n_tc + n_scan;
	lb->outs = arena_alloc(g->arena, sizeof(*lb->outs) * (size_t)(lb->n_out + 1));
	lb->prefix = arena_printf(g->arena, "%s_loop%d", g->loop_prefix ? g->loop_prefix
				  : "collagec", g->loops.n);
}

/*
 * The ModelProto of the body; its inputs and the captured values' fate in
 * lb. The captured values are node n's inputs from cap0 on; ports (NULL:
 * none) say which carried values are sequences.
 */
static int body_model(struct graph *g, const struct node *n, const Onnx__GraphProto *body,
		      int n_onnx, int cap0, const struct attr *caps, const int *carried,
		      const struct seq_port *ports, struct loop_body *lb, Onnx__ModelProto *mp,
		      struct strmap *dims, struct dimvec *dimv)
{
	struct arena *a = g->arena;
	Onnx__GraphProto *gp = arena_alloc(a, sizeof(*gp));
	bool loop = n->op == OP_LOOP;
	int n_carried = loop ? n_onnx - 2 : 0, n_init = 0, n_in = 0;
	struct value scalar = { 0 };
	Onnx__OperatorSetIdProto **ops = arena_alloc(a, sizeof(*ops) * 3);

	*gp = *body;
	gp->node = body_nodes(g, n, body, lb->kind == 2 ? "else" : lb->kind ? "then" : "body");
	gp->input = arena_alloc(a, sizeof(*gp->input) * (size_t)(n_carried + 2 + caps->n + 1));
	gp->initializer = arena_alloc(a, sizeof(*gp->initializer) *
				      (body->n_initializer + (size_t)caps->n + 1));
	if (body->n_initializer)
		memcpy(gp->initializer, body->initializer,
		       sizeof(*gp->initializer) * body->n_initializer);
	n_init = (int)body->n_initializer;
	scalar.has_shape = true;
	scalar.dtype = DTYPE_I64;
	if (loop)	/* an If's branch takes the captured values alone */
		gp->input[n_in++] = value_info(g, body->input[0]->name, &scalar, 0, dims, dimv);
	scalar.dtype = DTYPE_BOOL;
	if (loop)
		gp->input[n_in++] = value_info(g, body->input[1]->name, &scalar, 0, dims, dimv);
	for (int j = 0; j < n_carried; j++) {
		const struct value *v = &g->values.v[carried[j]];

		if (ports && ports[j].name) {
			/* the importer makes its tensors (seqrt_input) */
			gp->input[n_in++] = body->input[2 + j];
			continue;
		}
		if (check_passable(g, n, "loop-carried value", v) < 0)
			return -1;
		gp->input[n_in++] = value_info(g, body->input[2 + j]->name, v,
					       lb->grow ? lb->grow[j] : 0, dims, dimv);
	}
	lb->caps = arena_alloc(a, sizeof(int) * (size_t)(caps->n + 1));
	lb->n_caps = 0;
	for (int i = 0; i < caps->n; i++) {
		const struct value *v = &g->values.v[n->in[cap0 + i]];

		if (check_passable(g, n, "captured value", v) < 0)
			return -1;
		if (v->data && shape_is_static(&v->shape)) {
			gp->initializer[n_init++] = initializer(g, caps->strs[i], v);
			continue;
		}
		lb->caps[lb->n_caps++] = i;
		gp->input[n_in++] = value_info(g, caps->strs[i], v, 0, dims, dimv);
	}
	gp->n_input = (size_t)n_in;
	gp->n_initializer = (size_t)n_init;
	gp->name = arena_printf(a, "%s/%s", n->name, lb->kind == 2 ? "else" : lb->kind ? "then"
				: "body");
	onnx__model_proto__init(mp);
	mp->has_ir_version = true;
	mp->ir_version = g->n_functions ? 8 : 7;
	mp->producer_name = "collagec";
	mp->graph = gp;
	mp->n_opset_import = 0;
	mp->opset_import = ops;
	for (int i = 0; i < 3; i++) {
		static const char *const domains[] = { "", "ai.onnx.preview.training", "ai.onnx.ml" };
		int64_t v = i == 2 ? g->ml_opset : i ? g->training_opset : g->opset;

		if (!v)
			continue;
		ops[mp->n_opset_import] = arena_alloc(a, sizeof(**ops));
		onnx__operator_set_id_proto__init(ops[mp->n_opset_import]);
		ops[mp->n_opset_import]->domain = (char *)domains[i];
		ops[mp->n_opset_import]->has_version = true;
		ops[mp->n_opset_import]->version = v;
		mp->n_opset_import++;
	}
	mp->n_functions = (size_t)g->n_functions;
	mp->functions = (Onnx__FunctionProto **)g->functions;
	if (ports)
		ports_metadata(a, body, ports, n_carried, mp);
	return 0;
}

/* Writes the body model to a new temp directory: lb->dir, lb->model. */
static int write_body(struct graph *g, const struct node *n, const Onnx__ModelProto *mp,
		      struct loop_body *lb)
{
	size_t len = onnx__model_proto__get_packed_size(mp);
	uint8_t *buf = xmalloc(len + 1);
	char *dir = lb->dir ? xstrdup(lb->dir) : dir_make_temp("loop");
	int rc = 0;

	onnx__model_proto__pack(mp, buf);
	if (!dir) {
		diag_error_status(g->ctx, STATUS_ENV, "cannot create a temp directory: %s",
				  strerror(errno));
		free(buf);
		return -1;
	}
	lb->dir = arena_strdup(g->arena, dir);
	free(dir);
	lb->model = body_file(g, lb->dir, n, lb->kind);
	if (file_write_atomic(lb->model, buf, len) < 0) {
		diag_error_status(g->ctx, STATUS_ENV, "cannot write '%s': %s", lb->model,
				  strerror(errno));
		rc = -1;
	}
	free(buf);
	return rc;
}

/*
 * Output o of the Loop: what the body says of its shape (lb->outs[src]),
 * with its dims mapped back to the outer model's, the leading one of a
 * scan output data-dependent.
 */
static void set_output(struct graph *g, int out, const struct loop_body *lb, int src, bool scan,
		       const struct value *init, struct strmap *dims, const struct dim *dimv)
{
	const struct loop_out *lo = &lb->outs[src];
	struct value *v = &g->values.v[out];
	int r = scan ? lo->rank + 1 : lo->rank;

	v->dtype = lo->dtype;
	v->has_shape = true;
	v->shape.rank = r;
	if (scan)
		v->shape.d[0] = graph_data_sym(g, out, 0);
	for (int k = 0; k < lo->rank; k++) {
		int at = scan ? k + 1 : k, i;
		struct dim *d = &g->values.v[out].shape.d[at];

		if (lo->c[k] >= 0)
			*d = dim_const(lo->c[k]);
		else if (lo->sym[k] && (i = strmap_get(dims, lo->sym[k])) >= 0)
			*d = dimv[i];
		else
			*d = graph_data_sym(g, out, at);
		v = &g->values.v[out];
	}
	/*
	 * a loop that runs no iteration gives the initial values: a carried
	 * value whose dims the body may change is data-dependent there
	 */
	if (init && !scan && (init->shape.rank != r || !shape_eq(&init->shape, &v->shape)))
		for (int k = 0; k < r; k++)
			if (k >= init->shape.rank || !dim_eq(init->shape.d[k], v->shape.d[k]))
				g->values.v[out].shape.d[k] = graph_data_sym(g, out, k);
}

/*
 * Which dims of each carried value the body changes (lb->outs from a
 * probe against the initial values' shapes): lb->grow, or NULL when none.
 * A body that changes a carried value's rank or dtype is refused.
 */
static int carried_growth(struct graph *g, const struct node *n, const int *carried,
			  int n_carried, const struct seq_port *ports, struct loop_body *lb)
{
	unsigned *grow = arena_alloc(g->arena, sizeof(unsigned) * (size_t)(n_carried + 1));
	bool any = false;

	for (int j = 0, t = 0; j < n_carried; t += port_width(ports ? &ports[j] : NULL), j++) {
		const struct value *v = &g->values.v[carried[j]];
		const struct loop_out *lo = &lb->outs[1 + t];

		grow[j] = 0;
		if (ports && ports[j].name)
			continue;	/* its tensors' lengths are the body's symbols */
		if (lo->dtype != v->dtype || lo->rank != v->shape.rank) {
			diag_error(g->ctx, "%s: the body changes the %s of loop-carried value '%s'",
				   node_loc(g, n), lo->dtype != v->dtype ? "dtype" : "rank", v->name);
			return -1;
		}
		for (int k = 0; k < lo->rank; k++) {
			struct dim d = v->shape.d[k];
			struct strbuf sb = STRBUF_INIT;
			bool same;

			if (lo->c[k] == -2) {
				/* it may or may not change: the body keeps the dim, and
				   the run fails if it changes (the body checks its inputs) */
				same = true;
			} else if (!d.n) {
				same = lo->c[k] == d.c;
			} else {
				dim_print(g, d, &sb);
				same = lo->sym[k] && !strcmp(lo->sym[k], sb_str(&sb));
			}
			sb_release(&sb);
			if (!same) {
				grow[j] |= 1u << k;
				any = true;
			}
		}
	}
	lb->grow = any ? grow : NULL;
	return 0;
}

/* Port p for carried sequence value v, named as the body's input. */
static void port_init(struct graph *g, struct seq_port *p, const char *name, int v)
{
	const struct seq *s = g->values.v[v].seq, *in = s;

	memset(p, 0, sizeof(*p));
	p->name = name;
	p->optional = s->optional;
	if (s->optional && !s->rt)
		in = s->n ? g->values.v[s->elems[0]].seq : NULL;
	p->elem = s->elem;
	if (in && in->rt) {
		p->rank = in->rank;
		p->any_rank = in->any_rank;
		p->mixed = in->mixed;
	} else {
		p->any_rank = !in || !in->n;
		for (int i = 0; in && i < in->n; i++) {
			int r = g->values.v[in->elems[i]].shape.rank;

			p->mixed |= i && r != p->rank;
			p->rank = r > p->rank ? r : p->rank;
		}
		if (in && in->n)
			p->elem = g->values.v[in->elems[0]].dtype;
	}
	if (p->elem == DTYPE_UNDEF)
		p->elem = DTYPE_F32;	/* an empty one's: the body's elements decide */
}

/*
 * What the probed body lb gives for port p (its data and dims lb->outs[at]
 * and the next): a port that takes it. 1 when p changed, 0 when it fits,
 * -1 after a diagnostic.
 */
static int port_fit(struct graph *g, const struct node *n, struct seq_port *p, bool init_any,
		    const struct loop_body *lb, int at)
{
	const struct loop_out *data = &lb->outs[at], *dims = &lb->outs[at + 1];
	bool changed = false;

	if (dims->dtype != DTYPE_I64 || dims->rank != 2 || dims->c[1] < 0 || data->rank != 1)
		BUG("%s: port '%s' came back as no sequence", node_loc(g, n), p->name);
	if (data->dtype != p->elem) {
		if (!p->any_rank) {
			diag_error(g->ctx, "%s: the body changes the dtype of the elements of "
				   "loop-carried sequence '%s' (%s to %s)", node_loc(g, n), p->name,
				   dtype_name(p->elem), dtype_name(data->dtype));
			return -1;
		}
		p->elem = data->dtype;
		changed = true;
	}
	if (dims->c[1] > p->rank) {
		/* elements the loop did not make keep fewer dims */
		p->mixed |= !init_any;
		p->rank = (int)dims->c[1];
		changed = true;
	}
	if (dims->mixed && !p->mixed) {
		p->mixed = true;
		changed = true;
	}
	if (p->any_rank) {
		p->any_rank = false;
		changed = true;
	}
	return changed;
}

/* Whether carried value v, body input vi, is an optional of a tensor. */
static bool optional_tensor(struct graph *g, const struct value *v,
			    const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto *tp = vi->type;

	if (!v->seq->optional)
		return false;
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE &&
	    tp->optional_type->elem_type)
		return tp->optional_type->elem_type->value_case ==
		       ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	/* no type: what it holds says */
	return v->seq->n && !v->seq->rt && !g->values.v[v->seq->elems[0]].seq;
}

int onnx_loop_ports(struct graph *g, const struct node *n, const Onnx__GraphProto *body,
		    int n_onnx, const struct attr *caps, const int *carried,
		    struct seq_port **out)
{
	int n_carried = n_onnx - 2, n_scan = (int)body->n_output - 1 - n_carried, n_tc = 0;
	struct seq_port *ports = arena_alloc(g->arena, sizeof(*ports) * (size_t)(n_carried + 1));
	bool *init_any = arena_alloc(g->arena, sizeof(bool) * (size_t)(n_carried + 1)), any = false;
	int changed = 1, rc = 0;

	*out = NULL;
	for (int j = 0; j < n_carried; j++) {
		const struct value *v = &g->values.v[carried[j]];

		memset(&ports[j], 0, sizeof(ports[j]));
		if (v->seq && optional_tensor(g, v, body->input[2 + j])) {
			diag_error(g->ctx, "%s: loop-carried value '%s' is an optional tensor; a loop "
				   "run at run time takes tensors, sequences and optionals of "
				   "sequences", node_loc(g, n), v->name);
			return -1;
		}
		if (v->seq) {
			port_init(g, &ports[j], body->input[2 + j]->name, carried[j]);
			init_any[j] = ports[j].any_rank;
			any = true;
		}
		n_tc += port_width(&ports[j]);
	}
	if (!any || !g->call_loops)
		return 0;	/* onnx_loop_call says what is wrong with the latter */
	/* each round widens a port, mixes it or learns its dtype: few rounds */
	for (int round = 0; changed > 0; round++) {
		struct loop_body lb = { 0 };
		struct strmap dims = { 0 };
		struct dimvec dimv = { 0 };
		Onnx__ModelProto mp;

		if (round > 4 * MAX_RANK)
			BUG("%s: the ports of the loop do not settle", node_loc(g, n));
		body_init(g, &lb, n_tc, n_scan);
		rc = body_model(g, n, body, n_onnx, n_onnx, caps, carried, ports, &lb, &mp, &dims,
				&dimv);
		if (rc == 0)
			rc = write_body(g, n, &mp, &lb);
		if (rc == 0)
			rc = body_probe(g, &lb);
		if (lb.dir)
			dir_remove_tree(lb.dir);
		strmap_free(&dims);
		vec_free(&dimv);
		if (rc < 0)
			return -1;
		changed = 0;
		for (int j = 0, t = 0; j < n_carried; t += port_width(&ports[j]), j++) {
			int c = ports[j].name ? port_fit(g, n, &ports[j], init_any[j], &lb, 1 + t)
				: 0;

			if (c < 0)
				return -1;
			changed |= c;
		}
	}
	*out = ports;
	return 0;
}

int onnx_loop_call(struct graph *g, int ni, const Onnx__GraphProto *body, int n_onnx,
		   const struct attr *caps, const int *carried, const struct seq_port *ports,
		   int64_t iter0, int *outs)
{
	struct node *n = &g->nodes.v[ni];
	int n_carried = n_onnx - 2, n_scan = (int)body->n_output - 1 - n_carried, idx;
	int n_tc = 0, cap0;
	struct loop_body lb = { 0 };
	Onnx__ModelProto mp;
	struct strmap dims = { 0 };
	struct dimvec dimv = { 0 };
	int rc = -1;

	if (!g->call_loops) {
		diag_error(g->ctx, "%s: the loop's trip count or condition is only known at run "
			   "time; only compiling runs such a loop", node_loc(g, n));
		return -1;
	}
	for (int j = 0; j < n_carried; j++)
		n_tc += port_width(ports ? &ports[j] : NULL);
	cap0 = 2 + n_tc;
	body_init(g, &lb, n_tc, n_scan);
	lb.iter0 = iter0;
	if (body_model(g, n, body, n_onnx, cap0, caps, carried, ports, &lb, &mp, &dims,
		       &dimv) < 0 || write_body(g, n, &mp, &lb) < 0)
		goto out;
	idx = g->loops.n;
	vec_push(&g->loops, lb);
	/* what the body does to the carried values' shapes first */
	if (body_probe(g, &g->loops.v[idx]) < 0 ||
	    carried_growth(g, n, carried, n_carried, ports, &g->loops.v[idx]) < 0)
		goto out;
	/* a body that grows them takes symbols of its own there: probed again */
	if (g->loops.v[idx].grow) {
		strmap_free(&dims);
		dims = (struct strmap){ 0 };
		dimv.n = 0;
		if (body_model(g, n, body, n_onnx, cap0, caps, carried, ports, &g->loops.v[idx],
			       &mp, &dims, &dimv) < 0 || write_body(g, n, &mp, &g->loops.v[idx]) < 0 ||
		    body_probe(g, &g->loops.v[idx]) < 0)
			goto out;
	}
	lb = g->loops.v[idx];
	n = &g->nodes.v[ni];
	if (lb.outs[0].dtype != DTYPE_BOOL || lb.outs[0].rank > 1) {
		diag_error(g->ctx, "%s: the body's first output must be the bool condition",
			   node_loc(g, n));
		goto out;
	}
	for (int o = 0, j = 0, w = 0; o < n_tc + n_scan; o++) {
		/* tensor o carries value j (its w-th tensor), or is a scan output */
		const struct seq_port *p = o < n_tc && ports ? &ports[j] : NULL;
		bool port = p && p->name;

		if (outs[o] >= 0)
			set_output(g, outs[o], &lb, 1 + o, o >= n_tc, o < n_tc && !port
				   ? &g->values.v[carried[j]] : NULL, &dims, dimv.v);
		if (o < n_tc && ++w == port_width(p)) {
			j++;
			w = 0;
		}
	}
	node_set_attr_int(g, &g->nodes.v[ni], "call", idx);
	rc = 0;
out:
	strmap_free(&dims);
	vec_free(&dimv);
	return rc;
}

/* Whether the two branches agree on every output: dtype, rank and dims. */
static bool branches_agree(const struct loop_body *t, const struct loop_body *e)
{
	for (int o = 0; o < t->n_out; o++) {
		const struct loop_out *a = &t->outs[o], *b = &e->outs[o];

		if (a->dtype != b->dtype || a->rank != b->rank)
			return false;
		for (int k = 0; k < a->rank; k++)
			if (a->c[k] != b->c[k] || (a->c[k] < 0 && (!a->sym[k] || !b->sym[k] ||
							     strcmp(a->sym[k], b->sym[k]))))
				return false;
	}
	return true;
}

/*
 * One branch of If node ni as a model of its own: lb filled and written
 * out, and with probe, probed.
 */
static int if_branch(struct graph *g, const struct node *n, const Onnx__GraphProto *gp,
		     int kind, int index, const struct attr *caps, bool probe,
		     struct loop_body *lb, struct strmap *dims, struct dimvec *dimv)
{
	Onnx__ModelProto mp;

	memset(lb, 0, sizeof(*lb));
	lb->kind = kind;
	lb->n_out = (int)gp->n_output;
	lb->outs = arena_alloc(g->arena, sizeof(*lb->outs) * (size_t)(lb->n_out + 1));
	lb->prefix = arena_printf(g->arena, "%s_loop%d", g->loop_prefix ? g->loop_prefix
				  : "collagec", index);
	if (body_model(g, n, gp, 1, 1, caps, NULL, NULL, lb, &mp, dims, dimv) < 0 ||
	    write_body(g, n, &mp, lb) < 0)
		return -1;
	return probe ? body_probe(g, lb) : 0;
}

/* Whether a branch output's declared type is a numeric tensor (or not declared). */
static bool numeric_output(const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto *t = vi->type;

	if (!t || t->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
		return true;
	return t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
	       (!t->tensor_type->has_elem_type ||
		t->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__STRING);
}

/*
 * Whether an If's branches can be models of their own: numeric tensors
 * in and out. Sequences, optionals and strings stay with the select.
 */
static bool tensors_only(struct graph *g, const struct node *n, const Onnx__GraphProto *tb,
			 const Onnx__GraphProto *eb, const struct attr *caps)
{
	for (int i = 0; i < caps->n; i++) {
		const struct value *v = &g->values.v[n->in[1 + i]];

		if (v->seq || dtype_is_string(v->dtype))
			return false;
	}
	for (size_t i = 0; i < tb->n_output; i++)
		if (!numeric_output(tb->output[i]))
			return false;
	for (size_t i = 0; i < eb->n_output; i++)
		if (!numeric_output(eb->output[i]))
			return false;
	return true;
}

int onnx_if_call(struct graph *g, const struct node *n, const Onnx__GraphProto *tb,
		 const Onnx__GraphProto *eb, const struct attr *caps, int *call)
{
	struct loop_body lb[2];
	struct strmap dims = { 0 };
	struct dimvec dimv = { 0 };
	int rc = -1, idx = g->loops.n;

	if (!g->call_loops || !tensors_only(g, n, tb, eb, caps))
		return 1;	/* select between both branches */
	if ((int)tb->n_output != n->n_out || (int)eb->n_output != n->n_out)
		return 1;	/* expand_if says what is wrong */
	/* the shapes first: branches that agree are cheaper computed both and selected */
	for (int b = 0; b < 2; b++) {
		int r = if_branch(g, n, b ? eb : tb, 1 + b, idx + b, caps, true, &lb[b], &dims,
				  &dimv);

		if (lb[b].dir)
			dir_remove_tree(lb[b].dir);
		lb[b].dir = NULL;
		if (r < 0)
			goto out;
	}
	if (branches_agree(&lb[0], &lb[1])) {
		rc = 1;
		goto out;
	}
	for (int o = 0; o < lb[0].n_out; o++)
		if (lb[0].outs[o].dtype != lb[1].outs[o].dtype ||
		    lb[0].outs[o].rank != lb[1].outs[o].rank) {
			diag_error(g->ctx, "%s: the branches give output %d different %s; an If decided "
				   "at run time needs the same on both", node_loc(g, n), o,
				   lb[0].outs[o].dtype != lb[1].outs[o].dtype ? "dtypes" : "ranks");
			goto out;
		}
	for (int b = 0; b < 2; b++) {
		vec_push(&g->loops, lb[b]);
		if (if_branch(g, n, b ? eb : tb, 1 + b, idx + b, caps, false, &g->loops.v[idx + b],
			      &dims, &dimv) < 0)
			goto out;
		/* the same model as probed: what it gives too */
		memcpy(g->loops.v[idx + b].outs, lb[b].outs, sizeof(*lb[b].outs) *
		       (size_t)lb[b].n_out);
	}
	/* a dim both branches agree on stays; any other is data-dependent */
	for (int o = 0; o < n->n_out; o++) {
		struct loop_out *t = &g->loops.v[idx].outs[o], *e = &g->loops.v[idx + 1].outs[o];

		for (int k = 0; k < t->rank; k++)
			if (t->c[k] != e->c[k] || (t->sym[k] && (!e->sym[k] ||
								   strcmp(t->sym[k], e->sym[k])))) {
				t->c[k] = -1;
				t->sym[k] = NULL;
			}
		if (n->out[o] >= 0)
			set_output(g, n->out[o], &g->loops.v[idx], o, false, NULL, &dims, dimv.v);
	}
	*call = idx;
	rc = 0;
out:
	strmap_free(&dims);
	vec_free(&dimv);
	return rc;
}
