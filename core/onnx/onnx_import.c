/*
 * onnx_import.c - ONNX ModelProto -> graph IR: the model's opsets, its
 * graph's inputs (sequences and optionals as their elements), initializers
 * and outputs, and its nodes in order, each through onnx_function.c (which
 * inlines a call of a model-local function and hands any other node to
 * onnx_node.c); a sub-graph's body (import_body) the same way.
 *
 * protobuf-c unpacks into the compilation arena (its free is a no-op), so a
 * large model needs no free_unpacked walk; onnx_read.c reads the weights
 * beside it without a second copy of the file.
 */

#include "onnx_import.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void *pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

static int import_shape(struct importer *im, const char *what, const Onnx__TypeProto *tp,
			struct value *v)
{
	const Onnx__TypeProto__Tensor *tt;

	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
		diag_error(im->ctx, "%s: %s '%s' is not a tensor (maps and sequences of "
			   "sequences are not supported)", im->base, what, v->name);
		return -1;
	}
	tt = tp->tensor_type;
	v->dtype = dtype_from_onnx(tt->elem_type);
	if (v->dtype == DTYPE_UNDEF) {
		diag_error(im->ctx, "%s: %s '%s' has element type %s (%d), which is not supported",
			   im->base, what, v->name, onnx_type_name(tt->elem_type), tt->elem_type);
		return -1;
	}
	if (!tt->shape) {
		diag_error(im->ctx, "%s: %s '%s' has no shape (rank must be known)", im->base, what,
			   v->name);
		return -1;
	}
	if (tt->shape->n_dim > MAX_RANK) {
		diag_error(im->ctx, "%s: %s '%s' has rank %zu, more than %d", im->base, what,
			   v->name, tt->shape->n_dim, MAX_RANK);
		return -1;
	}
	v->shape.rank = (int)tt->shape->n_dim;
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];

		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0 || d->dim_value > DIM_LIMIT) {
				diag_error(im->ctx, "%s: %s '%s' dimension %zu is %lld, outside "
					   "0..%lld", im->base, what, v->name, i,
					   (long long)d->dim_value, (long long)DIM_LIMIT);
				return -1;
			}
			v->shape.d[i] = dim_const(d->dim_value);
		} else {
			const char *nm = d->value_case ==
				ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param[0]
				? d->dim_param : arena_printf(&im->ctx->arena, "%s_dim%zu", v->name, i);

			/* a sequence's elements may differ where its type names a dim */
			if (im->sym_scope && nm == d->dim_param)
				nm = arena_printf(&im->ctx->arena, "%s.%s", im->sym_scope, nm);

			v->shape.d[i] = dim_sym(graph_intern_sym(im->g, nm));
		}
	}
	v->has_shape = true;
	return 0;
}

/* The --elements binding of input name: its count, -1 for "none", -2 when not given. */
static int seq_binding(struct importer *im, const char *name, int *count)
{
	size_t len = strlen(name);

	for (int i = 0; i < im->n_elements; i++) {
		const char *b = im->elements[i];
		char *end;
		long n;

		if (strncmp(b, name, len) || b[len] != '=')
			continue;
		if (!strcmp(b + len + 1, "none")) {
			*count = -1;
			return 0;
		}
		n = strtol(b + len + 1, &end, 10);
		if (end == b + len + 1 || *end || n < 0 || n > 1024) {
			diag_error_status(im->ctx, STATUS_USAGE, "--elements '%s': expected "
					  "NAME=N (0 to 1024) or NAME=none", b);
			return -1;
		}
		*count = (int)n;
		return 0;
	}
	*count = -2;
	return 0;
}

/* The rank a --shape binding gives name, or -1 when there is none. */
static int bound_rank(struct importer *im, const char *name)
{
	size_t len = strlen(name);

	for (int i = 0; i < im->n_shapes; i++) {
		const char *s = im->shapes[i];
		int rank = 1;

		if (strncmp(s, name, len) || s[len] != '=')
			continue;
		if (!s[len + 1])
			return 0;
		for (const char *p = s + len + 1; *p; p++)
			rank += *p == ',';
		return rank;
	}
	return -1;
}

/*
 * One element of a sequence or optional graph input: a tensor input named
 * name of type tp; a type without a shape takes its rank from --shape.
 * A sequence's element (seq) gets symbols of its own for the type's named
 * dims ("x[1].N"): the elements of one sequence may differ in size.
 */
static int seq_elem_input(struct importer *im, const char *name, const Onnx__TypeProto *tp,
			  bool seq)
{
	struct graph *g = im->g;
	int id = graph_add_value(g, name);
	struct value *v = &g->values.v[id];

	v->flags |= VALUE_INPUT;
	vec_push(&g->inputs, id);
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
	    !tp->tensor_type->shape) {
		int rank = bound_rank(im, name);

		v->dtype = dtype_from_onnx(tp->tensor_type->elem_type);
		if (rank < 0 || rank > MAX_RANK || v->dtype == DTYPE_UNDEF) {
			diag_error(im->ctx, "%s: input element '%s' has no shape in the model; give "
				   "it with --shape '%s=DIMS'", im->base, name, name);
			return -1;
		}
		v->shape.rank = rank;
		for (int i = 0; i < rank; i++)
			v->shape.d[i] = dim_sym(graph_intern_sym(g, arena_printf(g->arena,
						"%s_dim%d", name, i)));
		v->has_shape = true;
		return id;
	}
	{
		int rc;

		im->sym_scope = seq ? name : NULL;
		rc = import_shape(im, "input", tp, v);
		im->sym_scope = NULL;
		return rc < 0 ? -1 : id;
	}
}

/*
 * A sequence or optional graph input: its element count is fixed when
 * compiling (--elements), and each element is a tensor input of its own.
 * The value bound to the ONNX name is the sequence of them. Returns its id,
 * or -1 after a diagnostic.
 */
static int seq_input(struct importer *im, const char *name, const Onnx__TypeProto *tp,
		     int count)
{
	struct graph *g = im->g;
	bool opt = tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
	const Onnx__TypeProto *et = opt ? tp->optional_type->elem_type
		: tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE
		? tp->sequence_type->elem_type : NULL;
	struct seq *s;
	int id;

	if (!et || (et->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
		    et->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)) {
		diag_error(im->ctx, "%s: input '%s' is a map or a nested type, which is not "
			   "supported (sequences of tensors and optionals are)", im->base, name);
		return -1;
	}
	if (opt && et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && count == -2)
		count = 1;	/* an optional tensor is present unless --elements says none */
	if (count == -2) {
		diag_error(im->ctx, "%s: input '%s' is a sequence; its length must be known when "
			   "compiling: give it with --elements '%s=N'", im->base, name, name);
		return -1;
	}
	if (count == -1 && !opt) {
		diag_error_status(im->ctx, STATUS_USAGE, "--elements '%s=none': input '%s' is a "
				  "sequence, not an optional", name, name);
		return -1;
	}
	s = arena_alloc(g->arena, sizeof(*s));
	s->optional = opt;
	s->elem = et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
		? dtype_from_onnx(et->tensor_type->elem_type) : DTYPE_UNDEF;
	if (opt) {
		s->n = count >= 0;
		s->elems = arena_alloc(g->arena, sizeof(int) * 2);
		if (s->n) {
			if (et->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
				if (count != 1) {
					diag_error_status(im->ctx, STATUS_USAGE, "--elements '%s=%d': "
							  "an optional tensor has 1 element or none",
							  name, count);
					return -1;
				}
				s->elems[0] = seq_elem_input(im, name, et, false);
			} else {
				s->elems[0] = seq_input(im, name, et, count);
			}
			if (s->elems[0] < 0)
				return -1;
		}
	} else {
		s->n = count;
		s->elems = arena_alloc(g->arena, sizeof(int) * (size_t)(count + 1));
		for (int i = 0; i < count; i++) {
			s->elems[i] = seq_elem_input(im, arena_printf(g->arena, "%s[%d]", name, i),
						     et, true);
			if (s->elems[i] < 0)
				return -1;
		}
	}
	if (s->elem == DTYPE_UNDEF && s->n)
		s->elem = g->values.v[s->elems[0]].dtype;
	id = graph_add_value(g, name);	/* the element of an optional tensor is "name" too */
	g->values.v[id].seq = s;
	g->values.v[id].dtype = s->elem == DTYPE_UNDEF ? DTYPE_F32 : s->elem;
	g->values.v[id].has_shape = true;
	return id;
}

/* The port of g named name (an input or an output), or NULL. */
const struct seq_port *onnx_port(const struct graph *g, const char *name, bool output)
{
	for (int i = 0; i < g->ports.n; i++)
		if (g->ports.v[i].output == output && !strcmp(g->ports.v[i].name, name))
			return &g->ports.v[i];
	return NULL;
}

/*
 * The body model's run-time sequences (struct seq_port): metadata_props
 * "collagec.sequence" = "in|out NAME DTYPE RANK FLAGS", written by
 * onnx_loop_call.c (read from bodies only: a user's model cannot make its
 * inputs run-time sequences). 0, or -1 after a diagnostic.
 */
static int import_ports(struct importer *im, const Onnx__ModelProto *mp)
{
	for (size_t i = 0; i < mp->n_metadata_props; i++) {
		const Onnx__StringStringEntryProto *e = mp->metadata_props[i];
		char dir[4], name[256], flags[5];
		int t, rank;
		struct seq_port p = { 0 };

		if (!e->key || strcmp(e->key, "collagec.sequence"))
			continue;
		if (!e->value || sscanf(e->value, "%3s %255s %d %d %4s", dir, name, &t, &rank,
					flags) != 5 || rank < 0 || rank > MAX_RANK ||
		    dtype_from_onnx(t) == DTYPE_UNDEF) {
			diag_error(im->ctx, "%s: malformed metadata 'collagec.sequence'", im->base);
			return -1;
		}
		p.name = arena_strdup(&im->ctx->arena, name);
		p.output = !strcmp(dir, "out");
		p.elem = dtype_from_onnx(t);
		p.rank = rank;
		p.optional = strchr(flags, 'o') != NULL;
		p.any_rank = strchr(flags, 'a') != NULL;
		p.mixed = strchr(flags, 'm') != NULL;
		vec_push(&im->g->ports, p);
	}
	return 0;
}

static int import_seq_input(struct importer *im, const Onnx__ValueInfoProto *vi)
{
	const struct seq_port *p = onnx_port(im->g, vi->name, false);
	int count, id;

	if (p) {
		import_bind(im, vi->name, seqrt_input(im->g, p));
		return 0;
	}
	if (seq_binding(im, vi->name, &count) < 0)
		return -1;
	id = seq_input(im, vi->name, vi->type, count);
	/* a placeholder on failure: its users must not report it as undefined */
	import_bind(im, vi->name, id < 0 ? graph_add_value(im->g, vi->name) : id);
	return id < 0 ? -1 : 0;
}

static int import_initializers(struct importer *im, const Onnx__GraphProto *gp)
{
	struct graph *g = im->g;
	int rc = 0;

	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *t = gp->initializer[i];
		const char *nm = t->name ? t->name : "";
		int id = import_tensor(im, t, import_scoped(im, nm), "initializer");

		if (id < 0) {
			/* bind a placeholder: its users must not report it as undefined */
			id = graph_add_value(g, import_scoped(im, nm));
			rc = -1;
		}
		import_bind(im, nm, id);
	}
	if (gp->n_sparse_initializer) {
		diag_error(im->ctx, "%s: sparse initializers are not supported", im->base);
		rc = -1;
	}
	return rc;
}

int import_body(struct importer *im, const Onnx__GraphProto *gp)
{
	int rc = import_initializers(im, gp);

	im->node0 = im->g->nodes.n;
	for (size_t i = 0; i < gp->n_node; i++)
		if (onnx_function_import_node(im, gp->node[i], (int)i) < 0)
			rc = -1;
	if (import_resolve_forward(im) < 0)
		rc = -1;
	return rc;
}

static int import_graph(struct importer *im, const Onnx__GraphProto *gp)
{
	struct graph *g = im->g;
	int rc = 0;

	g->name = arena_strdup(g->arena, gp->name ? gp->name : "");
	if (import_initializers(im, gp) < 0)
		rc = -1;
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		int id;

		if (!vi->name[0]) {
			diag_error(im->ctx, "%s: graph input %zu has no name", im->base, i);
			rc = -1;
			continue;
		}
		if (strmap_get(&im->names, vi->name) >= 0)
			continue;	/* an initializer listed as input: a constant */
		if (vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
			if (import_seq_input(im, vi) < 0)
				rc = -1;
			continue;
		}
		id = graph_add_value(g, vi->name);
		g->values.v[id].flags |= VALUE_INPUT;
		if (import_shape(im, "input", vi->type, &g->values.v[id]) < 0)
			rc = -1;
		vec_push(&g->inputs, id);
		import_bind(im, vi->name, id);
	}
	im->node0 = g->nodes.n;
	for (size_t i = 0; i < gp->n_node; i++)
		if (onnx_function_import_node(im, gp->node[i], (int)i) < 0)
			rc = -1;
	if (import_resolve_forward(im) < 0)
		rc = -1;
	for (size_t i = 0; i < gp->n_output; i++) {
		int id;

		if (!gp->output[i]->name[0]) {
			diag_error(im->ctx, "%s: graph output %zu has no name", im->base, i);
			rc = -1;
			continue;
		}
		id = strmap_get(&im->names, gp->output[i]->name);
		if (id < 0) {
			diag_error(im->ctx, "%s: graph output '%s' is not computed by any node",
				   im->base, gp->output[i]->name);
			rc = -1;
			continue;
		}
		g->values.v[id].flags |= VALUE_OUTPUT;
		vec_push(&g->outputs, id);
	}
	if (!gp->n_output) {
		diag_error(im->ctx, "%s: graph has no outputs", im->base);
		rc = -1;
	}
	return rc;
}

static void fill_names(Onnx__GraphProto *gp);
static void fill_node_names(Onnx__NodeProto **nodes, size_t n);

static void fill_value_names(Onnx__ValueInfoProto **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!v[i]->name)
			v[i]->name = (char *)"";
}

/*
 * proto2 leaves a missing name NULL (value, initializer and attribute
 * names here; node names and op types are checked where read); the importer
 * reads names as strings
 * (a missing one then gets the diagnostic of an empty one). The arena owns
 * the message, so pointing at a literal frees nothing wrongly.
 */
static void fill_names(Onnx__GraphProto *gp)
{
	fill_value_names(gp->input, gp->n_input);
	fill_value_names(gp->output, gp->n_output);
	fill_value_names(gp->value_info, gp->n_value_info);
	for (size_t i = 0; i < gp->n_initializer; i++)
		if (!gp->initializer[i]->name)
			gp->initializer[i]->name = (char *)"";
	fill_node_names(gp->node, gp->n_node);
}

static void fill_node_names(Onnx__NodeProto **nodes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < nodes[i]->n_attribute; j++) {
			Onnx__AttributeProto *ap = nodes[i]->attribute[j];

			if (!ap->name)
				ap->name = (char *)"";
			if (ap->g)
				fill_names(ap->g);
			for (size_t k = 0; k < ap->n_graphs; k++)
				fill_names(ap->graphs[k]);
		}
}

/* Gives fp's missing names "" (as fill_names does for graphs). */
static void fill_function_names(Onnx__FunctionProto *fp)
{
	if (!fp->name)
		fp->name = (char *)"";
	if (!fp->domain)
		fp->domain = (char *)"";
	fill_node_names(fp->node, fp->n_node);
}

struct graph *onnx_import(struct collagec_ctx *ctx, const char *path)
{
	return onnx_import_bound(ctx, path, NULL, 0, NULL, 0, false);
}

struct graph *onnx_import_bound(struct collagec_ctx *ctx, const char *path,
				const char *const *elements, int n_elements,
				const char *const *shapes, int n_shapes, bool body)
{
	struct importer im = { 0 };
	ProtobufCAllocator alloc = { pb_alloc, pb_free, &ctx->arena };
	Onnx__ModelProto *mp;
	const char *slash = strrchr(path, '/');
	int rc = 0;

	im.ctx = ctx;
	im.elements = elements;
	im.n_elements = n_elements;
	im.shapes = shapes;
	im.n_shapes = n_shapes;
	im.base = slash ? slash + 1 : path;
	im.dir = slash ? arena_strndup(&ctx->arena, path, (size_t)(slash - path)) : ".";
	if (onnx_read_model(ctx, &alloc, path, &mp) < 0) {
		diag_error(ctx, "%s: cannot read: %s", path, strerror(errno));
		return NULL;
	}
	if (!mp || !mp->graph) {
		diag_error(ctx, "%s: not an ONNX model (protobuf parse failed or no graph)",
			   im.base);
		return NULL;
	}
	fill_names(mp->graph);
	for (size_t i = 0; i < mp->n_functions; i++)
		fill_function_names(mp->functions[i]);
	im.g = graph_new(ctx);
	im.g->functions = (const void *const *)mp->functions;
	im.g->n_functions = (int)mp->n_functions;
	im.g->path = arena_strdup(&ctx->arena, path);
	vec_push(&im.g->files, im.g->path);
	im.g->opset = 0;
	for (size_t i = 0; i < mp->n_opset_import; i++) {
		const char *d = mp->opset_import[i]->domain;

		if (!d || !d[0] || !strcmp(d, "ai.onnx"))
			im.g->opset = mp->opset_import[i]->version;
		else if (!strcmp(d, "ai.onnx.preview.training"))
			im.g->training_opset = mp->opset_import[i]->version;
		else if (!strcmp(d, "ai.onnx.ml"))
			im.g->ml_opset = mp->opset_import[i]->version;
	}
	/* a model of optimizer steps or ML ops alone may import only that domain */
	if (!im.g->opset && !im.g->training_opset && !im.g->ml_opset) {
		diag_error(ctx, "%s: model imports no default-domain opset", im.base);
		rc = -1;
	} else if (im.g->ml_opset > ONNX_ML_OPSET_MAX) {
		diag_error(ctx, "%s: ai.onnx.ml opset %lld is newer than the newest supported (%d)",
			   im.base, (long long)im.g->ml_opset, ONNX_ML_OPSET_MAX);
		rc = -1;
	} else if (im.g->opset > ONNX_OPSET_MAX) {
		diag_error(ctx, "%s: opset %lld is newer than the newest supported (%d)",
			   im.base, (long long)im.g->opset, ONNX_OPSET_MAX);
		rc = -1;
	}
	if (im.g->training_opset > 1) {
		diag_error(ctx, "%s: ai.onnx.preview.training opset %lld is newer than the newest "
			   "supported (1)", im.base, (long long)im.g->training_opset);
		rc = -1;
	}
	im.g->producer = arena_printf(&ctx->arena, "%s%s%s",
				      mp->producer_name ? mp->producer_name : "",
				      mp->producer_version && mp->producer_version[0] ? " " : "",
				      mp->producer_version ? mp->producer_version : "");
	if (rc == 0 && ((body && import_ports(&im, mp) < 0) || import_graph(&im, mp->graph) < 0))
		rc = -1;
	strmap_free(&im.names);
	vec_free(&im.protos);
	if (rc == 0 && graph_toposort(im.g) < 0)
		rc = -1;
	if (rc == 0 && onnx_normalize(im.g) < 0)
		rc = -1;
	if (rc < 0 || ctx->n_errors) {
		graph_free(im.g);
		return NULL;
	}
	return im.g;
}
