/*
 * executor.c - generates model.c: the kernels, the tables the runtime reads
 * (runtime/rt_model.h) and the metadata string, rt_desc, which points the
 * runtime at them, and the API's functions over the model-independent
 * runtime (runtime/rt_model.c, compiled on its own: link.c).
 */
#include "emit.h"
#include "../ops/ops.h"

#include <string.h>

#include "../tir/tir_print.h"

/* Appends s as a C string literal (everything unusual escaped in octal). */
void emit_c_string(struct strbuf *sb, const char *s)
{
	sb_putc(sb, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\' || *p == '?' || *p < 32 || *p > 126)
			sb_printf(sb, "\\%03o", *p);
		else
			sb_putc(sb, (char)*p);
	}
	sb_putc(sb, '"');
}

static void print_dim_name(struct graph *g, struct dim d, struct strbuf *sb)
{
	struct strbuf t = STRBUF_INIT;

	if (!d.n) {
		sb_puts(sb, "NULL");
		return;
	}
	dim_print(g, d, &t);
	emit_c_string(sb, sb_str(&t));
	sb_release(&t);
}

static void values_table(struct graph *g, const struct exec_plan *ep, struct strbuf *sb)
{
	sb_puts(sb, "static const struct rt_value rt_values[] = {\n");
	for (int r = 0; r < ep->n_rt; r++) {
		int v = ep->rt_to_value[r];
		const struct value *val = &g->values.v[v];
		const struct exec_value *e = &ep->vals[v];

		sb_puts(sb, "\t{ ");
		emit_c_string(sb, val->name);
		sb_printf(sb, ", %d, %d, %zu, %d, %d, {", (int)e->kind, dtype_to_onnx(val->dtype),
			  dtype_size(val->dtype), e->io, val->shape.rank);
		for (int k = 0; k < val->shape.rank; k++) {
			struct dim d = val->shape.d[k];

			sb_printf(sb, " { %lld, %d, { %d, %d, %d } },", (long long)d.c, d.n,
				  d.n > 0 ? d.sym[0] : 0, d.n > 1 ? d.sym[1] : 0,
				  d.n > 2 ? d.sym[2] : 0);
		}
		if (!val->shape.rank)
			sb_puts(sb, " { 0, 0, { 0, 0, 0 } }");	/* no empty initializers in C11 */
		sb_puts(sb, " }, {");
		if (!val->shape.rank)
			sb_puts(sb, " NULL");
		for (int k = 0; k < val->shape.rank; k++) {
			sb_putc(sb, ' ');
			print_dim_name(g, val->shape.d[k], sb);
			sb_putc(sb, ',');
		}
		sb_printf(sb, " }, %lld, %d, %d, %d, %lld },\n", (long long)e->offset, e->first,
			  e->last, (int)e->late, (long long)val->store_c);
	}
	sb_puts(sb, "\t{ NULL, 0, 0, 0, 0, 0, { { 0, 0, { 0, 0, 0 } } }, { NULL }, 0, 0, 0, 0, 0 }\n"
		"};\n");
	sb_puts(sb, "static const int64_t rt_info_dims[][RT_MAX_RANK] = {\n");
	for (int r = 0; r < ep->n_rt; r++) {
		const struct value *val = &g->values.v[ep->rt_to_value[r]];

		sb_puts(sb, "\t{");
		for (int k = 0; k < val->shape.rank; k++)
			sb_printf(sb, " %lld,", val->shape.d[k].n ? -1LL : (long long)val->shape.d[k].c);
		sb_puts(sb, " 0 },\n");
	}
	sb_puts(sb, "\t{ 0 }\n};\n");
}

/* A variant's implementation and condition as OUT.json lists them. */
static void variant_text(const struct kernel *k, int v, struct strbuf *sb)
{
	if (!k->n_variants) {
		sb_puts(sb, "\"generic\", \"always\"");
		return;
	}
	emit_c_string(sb, k->variants[v].impl);
	sb_puts(sb, ", ");
	emit_c_string(sb, k->variants[v].cond ? k->variants[v].cond_text : "always");
}

void emit_variant_pick(const struct kernel *k, const char *name, struct strbuf *sb)
{
	if (k->n_variants < 1 || k->variants[k->n_variants - 1].cond)
		BUG("kernel '%s' has no variant that always holds", k->name);
	sb_printf(sb, "static int %s(const int64_t *syms)\n{\n\t(void)syms;\n", name);
	for (int i = 0; i < k->n_variants - 1; i++) {
		sb_puts(sb, "\tif (");
		tir_print_expr(k->variants[i].cond, &tir_dialect_c, sb);
		sb_printf(sb, ")\n\t\treturn %d;\n", i);
	}
	sb_printf(sb, "\treturn %d;\n}\n", k->n_variants - 1);
}

/*
 * The variant pickers (kernels with run-time dispatch), the variants table
 * (one row per variant; kernels without a strategy get "generic") and the
 * steps table.
 */
static void steps_table(const struct exec_plan *ep, struct strbuf *sb)
{
	int arg0 = 0, var0 = 0;

	for (int s = 0; s < ep->steps.n; s++) {
		const struct kernel *k = ep->steps.v[s].k;
		struct strbuf name = STRBUF_INIT;

		if (k->n_variants <= 1)
			continue;
		sb_printf(&name, "rt_pick_%s", k->name);
		emit_variant_pick(k, sb_str(&name), sb);
		sb_release(&name);
	}
	sb_puts(sb, "static const struct rt_variant rt_variants[] = {\n");
	for (int s = 0; s < ep->steps.n; s++) {
		const struct kernel *k = ep->steps.v[s].k;

		for (int v = 0; v < (k->n_variants ? k->n_variants : 1); v++) {
			sb_puts(sb, "\t{ ");
			variant_text(k, v, sb);
			sb_puts(sb, " },\n");
		}
	}
	sb_puts(sb, "\t{ NULL, NULL }\n};\n");
	sb_puts(sb, "static const int rt_args[] = {");
	for (int s = 0; s < ep->steps.n; s++) {
		const struct exec_step *st = &ep->steps.v[s];

		sb_puts(sb, "\n\t");
		for (int a = 0; a < st->n_args; a++)
			sb_printf(sb, "%d, ", ep->vals[st->args[a]].rt);
	}
	sb_puts(sb, "\n\t-1\n};\nstatic const struct rt_step rt_steps[] = {\n");
	for (int s = 0; s < ep->steps.n; s++) {
		const struct exec_step *st = &ep->steps.v[s];
		int nv = st->k->n_variants ? st->k->n_variants : 1;

		sb_printf(sb, "\t{ %s, \"%s\", %d, %d, %d, %d, %d, ",
			  st->k->symbol ? st->k->symbol : st->k->name, st->k->name, arg0, st->n_args,
			  st->part, var0, nv);
		if (nv > 1)
			sb_printf(sb, "rt_pick_%s },\n", st->k->name);
		else
			sb_puts(sb, "NULL },\n");
		arg0 += st->n_args;
		var0 += nv;
	}
	sb_puts(sb, "\t{ NULL, NULL, 0, 0, 0, 0, 0, NULL }\n};\n");
}

static void add_unique(void *vec, const char *s)
{
	VEC(const char *) *v = vec;

	if (!s)
		return;
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return;
	vec_push(v, s);
}

void model_sources_add(struct model_sources *ms, const struct runtime_module *m,
		       const struct partition *p)
{
	add_unique(&ms->preludes, m->prelude);
	if (m->standalone) {
		const char *src = sb_str((struct strbuf *)&m->source);
		struct kernel_unit u = { xstrdup(src), m->prelude, 0 };

		for (const char *c = src; *c; c++)
			u.lines += *c == '\n';
		vec_push(&ms->units, u);
		for (int i = 0; i < p->kernels.n; i++)
			if (!p->kernels.v[i].symbol)
				vec_push(&ms->entries, p->kernels.v[i].name);
	} else {
		sb_puts(&ms->kernels, sb_str((struct strbuf *)&m->source));
	}
	for (int j = 0; j < m->ldlibs.n; j++)
		add_unique(&ms->ldlibs, m->ldlibs.v[j]);
	if (m->cuda.len) {
		if (!ms->cuda.len && m->cuda_prelude)
			sb_puts(&ms->cuda, m->cuda_prelude);
		sb_puts(&ms->cuda, sb_str((struct strbuf *)&m->cuda));
	}
	if (m->init) {
		bool seen = false;

		for (int i = 0; i < ms->inits.n; i++)
			seen |= !strcmp(ms->inits.v[i], m->init);
		if (!seen) {
			vec_push(&ms->inits, m->init);
			vec_push(&ms->finis, m->fini);
			vec_push(&ms->syncs, m->sync);
		}
	}
}

void model_sources_release(struct model_sources *ms)
{
	for (int i = 0; i < ms->units.n; i++)
		free(ms->units.v[i].source);
	vec_free(&ms->units);
	vec_free(&ms->entries);
	sb_release(&ms->kernels);
	sb_release(&ms->cuda);
	vec_free(&ms->preludes);
	vec_free(&ms->ldlibs);
	vec_free(&ms->inits);
	vec_free(&ms->finis);
	vec_free(&ms->syncs);
}

static void rt_dim_init(struct dim d, struct strbuf *sb)
{
	sb_printf(sb, "{ %lld, %d, { %d, %d, %d } }", (long long)d.c, d.n,
		  d.n > 0 ? d.sym[0] : 0, d.n > 1 ? d.sym[1] : 0, d.n > 2 ? d.sym[2] : 0);
}

_Static_assert(SYM_ADD == 0 && SYM_DIV == 1 && SYM_MOD == 2 && SYM_MIN == 3 && SYM_MAX == 4,
	       "rt_model.c's bind_syms numbers the derived-symbol ops so");

static void mark_syms(struct dim d, bool *used)
{
	for (int k = 0; k < d.n; k++)
		used[d.sym[k]] = true;
}

static void mark_value_syms(struct graph *g, int v, bool *used)
{
	if (v < 0)
		return;
	for (int k = 0; k < g->values.v[v].shape.rank; k++)
		mark_syms(g->values.v[v].shape.d[k], used);
}

/*
 * Which symbols the model's shapes and checks use: a derived symbol that
 * only shape arithmetic nobody needed as a shape made (Shape(x)[0] - 5 as
 * data) may be negative without harm.
 */
static void used_syms(struct graph *g, bool *used)
{
	for (int i = 0; i < g->inputs.n; i++)
		mark_value_syms(g, g->inputs.v[i], used);
	for (int i = 0; i < g->outputs.n; i++)
		mark_value_syms(g, g->outputs.v[i], used);
	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_in; j++)
			mark_value_syms(g, n->in[j], used);
		for (int j = 0; j < n->n_out; j++)
			mark_value_syms(g, n->out[j], used);
	}
	for (int i = 0; i < g->checks.n; i++) {
		mark_syms(g->checks.v[i].a, used);
		mark_syms(g->checks.v[i].b, used);
	}
	for (int i = g->sym_defs.n - 1; i >= 0; i--) {
		const struct sym_def *d = &g->sym_defs.v[i];

		if (used[d->sym]) {
			mark_syms(d->a, used);
			mark_syms(d->b, used);
		}
	}
}

/* The derived symbols (graph.sym_defs), computed in order after binding. */
static void derived_table(struct graph *g, struct strbuf *out)
{
	bool *used = arena_alloc(g->arena, (size_t)g->syms.n + 1);

	memset(used, 0, (size_t)g->syms.n + 1);
	used_syms(g, used);
	sb_puts(out, "static const struct rt_derived rt_derived[] = {\n");
	for (int i = 0; i < g->sym_defs.n; i++) {
		const struct sym_def *d = &g->sym_defs.v[i];

		sb_printf(out, "\t{ %d, %d, %d, ", d->sym, (int)d->op, (int)used[d->sym]);
		rt_dim_init(d->a, out);
		sb_puts(out, ", ");
		rt_dim_init(d->b, out);
		sb_puts(out, " },\n");
	}
	sb_puts(out, "\t{ -1, 0, 0, { 0, 0, { 0, 0, 0 } }, { 0, 0, { 0, 0, 0 } } }\n};\n");
}

/* runtime/rt_model.h's enum rt_shape_op for a dynamic node's op. */
static int shape_op(const struct node *n)
{
	switch (n->op) {
	case OP_RESHAPE: return 0;
	case OP_EXPAND: return 1;
	case OP_CONSTANTOFSHAPE: return 2;
	case OP_TILE: return 3;
	case OP_UNSQUEEZE: return 4;
	case OP_SQUEEZE: return 5;
	case OP_NONZERO: return 6;
	case OP_SLICE: return 7;
	case OP_REDUCEL1: case OP_REDUCEL2: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
	case OP_REDUCEMAX: case OP_REDUCEMEAN: case OP_REDUCEMIN: case OP_REDUCEPROD:
	case OP_REDUCESUM: case OP_REDUCESUMSQUARE:
		return 8;
	case OP_RANGE: return 9;
	case OP_ONEHOT: return 10;
	case OP_COMPRESS: return 11;
	case OP_TOPK: return 12;
	case OP_PAD: return 13;
	case OP_RESIZE: case OP_UPSAMPLE: return 14;
	case OP_SPLIT: return 15;
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: return 16;
	case OP_STFT: return 17;
	case OP_MAXUNPOOL: return 18;
	case OP_UNIQUE: return 19;
	case OP_NONMAXSUPPRESSION: return 20;
	case OP_MELWEIGHTMATRIX: return 21;
	case OP_STRINGNORMALIZER: return 22;
	case OP_STRINGSPLIT: return 23;
	case OP_LOOP: case OP_IF: return 24;
	case OP_CENTERCROPPAD: return 25;
	case OP_COL2IM: return 26;
	case OP_DFT: return 27;
	case OP_AFFINEGRID: return 28;
	case OP_IMAGEDECODER: return 29;
	default: BUG("no run-time shape function for %s", n->op_type);
	}
}

/*
 * The parameters the shape function of a CenterCropPad, Col2Im or DFT
 * binds for its kernel (runtime/rt_model.h's struct rt_shape).
 */
static void shape_params(struct graph *g, const struct node *n, struct strbuf *out)
{
	int cnt = 0;
	const int64_t *ints = shape_fn_ints(g, n, &cnt);

	if (n->op == OP_CENTERCROPPAD)
		for (int i = 0; i < ints[0]; i++)
			sb_printf(out, " %d,", graph_data_param(g, n->out[0], "start",
								 (int)ints[1 + i]).sym[0]);
	for (int i = 0; n->op == OP_COL2IM && i < ints[0]; i++)
		sb_printf(out, " %d, %d,", graph_data_param(g, n->out[0], "block", i).sym[0],
			  graph_data_param(g, n->out[0], "blocks", i).sym[0]);
	if (n->op == OP_DFT)
		sb_printf(out, " %d, %d, %d,", graph_data_param(g, n->out[0], "axis", 0).sym[0],
			  graph_data_param(g, n->out[0], "n", 0).sym[0],
			  graph_data_param(g, n->out[0], "len", 0).sym[0]);
}

/*
 * The ints of a shape function (shape_fn_ints) as a compound literal, or
 * NULL (written out: the model's C compiles under -Wextra -Werror).
 */
static void shape_ints(struct graph *g, const struct node *n, struct strbuf *out)
{
	int cnt = 0;
	const int64_t *ints = shape_fn_ints(g, n, &cnt);

	if (!cnt) {
		sb_puts(out, ", NULL");
		return;
	}
	sb_puts(out, ", (const int64_t[]){");
	for (int i = 0; i < cnt; i++)
		sb_printf(out, " %lld,", (long long)ints[i]);
	sb_puts(out, " }");
}

/*
 * rt_late[]: the values with data-dependent dims, in the order of the step
 * that writes them first (then of rt index), -1 at the end: run_shapes
 * gives each its block through a cursor instead of scanning every value
 * before every step.
 */
static void late_table(const struct exec_plan *ep, struct strbuf *out)
{
	sb_puts(out, "static const int rt_late[] = {");
	for (int s = 0; s < ep->steps.n; s++)
		for (int r = 0; r < ep->n_rt; r++) {
			const struct exec_value *e = &ep->vals[ep->rt_to_value[r]];

			if (e->late && e->first == s)
				sb_printf(out, " %d,", r);
		}
	sb_puts(out, " -1 };\n");
}

/*
 * The run-time shape functions (exec_plan.shapes) and which symbols they
 * bind, directly or through derived symbols (rt_sym_late).
 */
static void shapes_table(struct graph *g, const struct exec_plan *ep, struct strbuf *out)
{
	sb_puts(out, "static const struct rt_shape rt_shapes[] = {\n");
	for (int i = 0; i < ep->shapes.n; i++) {
		const struct node *n = &g->nodes.v[ep->shapes.v[i].node];
		int in[5] = { -1, -1, -1, -1, -1 };

		/*
		 * in[0] the data, in[1] the int64 tensor: ConstantOfShape has only
		 * the tensor, NonZero only the data, Slice four tensors
		 */
		for (int j = 0; j < n->n_in && j < 5 && shape_op(n) != 24; j++)
			if (n->in[j] >= 0)
				in[n->op == OP_CONSTANTOFSHAPE ? 1 : j] = ep->vals[n->in[j]].rt;
		/* the kernel's parameters, two per input axis (graph_data_param) */
		const char *p0 = n->op == OP_SLICE ? "start" : n->op == OP_PAD ? "begin" : "red";
		const char *p1 = n->op == OP_SLICE ? "step" : n->op == OP_PAD ? "end" : "ystride";
		bool params = n->op == OP_SLICE || n->op == OP_PAD || shape_op(n) == 8;
		/* a Loop's M may be absent */
		int rank = node_in(g, n, 0) ? node_in(g, n, 0)->shape.rank : 0;
		int64_t axis = node_attr_int(n, "axis", -1);
		/*
		 * allowzero, whether Pad's mode is not constant, OneHot's axis,
		 * TopK's and Compress's (normalised, -1: none), or
		 * keepdims | noop_with_empty_axes << 1
		 */
		int64_t attr = shape_op(n) == 24 ? node_attr_int(n, "call", 0)
			: shape_op(n) == 14 ? resize_shape_attr(g, n)
			: n->op == OP_STRINGNORMALIZER ? stringnorm_flags(n)
			: n->op == OP_STRINGSPLIT ? node_attr_int(n, "maxsplit", -1)
			: n->op == OP_STFT ? node_attr_int(n, "onesided", 1) != 0
			: n->op == OP_DFT ? (node_attr_int(n, "inverse", 0) != 0) |
					    (node_attr_int(n, "onesided", 0) != 0) << 1
			: n->op == OP_CENTERCROPPAD || n->op == OP_COL2IM || n->op == OP_AFFINEGRID ? 0
			: n->op == OP_IMAGEDECODER ? (strcmp(node_attr_str(n, "pixel_format", "RGB"),
							     "Grayscale") ? 3 : 1)
			: n->op == OP_NONMAXSUPPRESSION ? node_attr_int(n, "center_point_box", 0) != 0
			: n->op == OP_PAD ? strcmp(node_attr_str(n, "mode", "constant"),
							 "constant") != 0
			: n->op == OP_ONEHOT ? axis
			: n->op == OP_TOPK || n->op == OP_SPLIT ? (axis < 0 ? axis + rank : axis)
			: n->op == OP_COMPRESS || n->op == OP_UNIQUE ? (!node_attr(n, "axis") ? -1
						  : axis < 0 ? axis + rank : axis)
			: shape_op(n) != 8 ? node_attr_int(n, "allowzero", 0)
			: (node_attr_int(n, "keepdims", 1) != 0) |
			  (node_attr_int(n, "noop_with_empty_axes", 0) != 0) << 1;

		sb_printf(out, "\t{ %d, %d, %lld, { %d, %d, %d, %d, %d }, %d, {",
			  ep->shapes.v[i].step, shape_op(n), (long long)attr, in[0], in[1], in[2],
			  in[3], in[4], ep->vals[n->out[0]].rt);
		/* Split: the symbol of each output's length on the axis */
		for (int k = 0; n->op == OP_SPLIT && k < n->n_out; k++)
			sb_printf(out, " %d,", graph_data_sym(g, n->out[k], (int)attr).sym[0]);
		/* STFT: frame_step and frame_length */
		if (n->op == OP_STFT)
			sb_printf(out, " %d, %d,", graph_data_param(g, n->out[0], "step", 0).sym[0],
				  graph_data_param(g, n->out[0], "frame", 0).sym[0]);
		for (int k = 0; params && k < 2 * rank; k++)
			sb_printf(out, " %d,", graph_data_param(g, n->out[0], k % 2 ? p1 : p0,
								 k / 2).sym[0]);
		shape_params(g, n, out);
		sb_puts(out, " -1 }, ");
		emit_c_string(out, n->name);
		shape_ints(g, n, out);
		sb_puts(out, " },\n");
	}
	sb_puts(out, "\t{ -1, 0, 0, { -1, -1, -1, -1, -1 }, -1, { -1 }, NULL, NULL }\n};\nstatic const char rt_sym_late[] = {");
	for (int s = 0; s < g->syms.n; s++)
		sb_printf(out, " %d,", (int)graph_sym_late(g, s));
	sb_puts(out, " 0 };\n");
}

/* What compiling assumed of the symbols (graph.checks), tested after binding. */
static void checks_table(struct graph *g, struct strbuf *out)
{
	sb_puts(out, "static const struct rt_check rt_checks[] = {\n");
	for (int i = 0; i < g->checks.n; i++) {
		const struct sym_check *c = &g->checks.v[i];
		struct strbuf t = STRBUF_INIT;

		dim_print(g, c->a, &t);
		sb_puts(&t, c->eq ? " == " : " <= ");
		dim_print(g, c->b, &t);
		sb_puts(out, "\t{ ");
		rt_dim_init(c->a, out);
		sb_puts(out, ", ");
		rt_dim_init(c->b, out);
		sb_puts(out, ", ");
		emit_c_string(out, sb_str(&t));
		sb_puts(out, ", ");
		emit_c_string(out, c->node);
		sb_printf(out, ", %d },\n", (int)c->eq);
		sb_release(&t);
	}
	sb_puts(out, "\t{ { 0, 0, { 0, 0, 0 } }, { 0, 0, { 0, 0, 0 } }, NULL, NULL, 0 }\n};\n");
}

/* The rt id of value v, or -1 when absent or unused. */
static int rt_of(const struct exec_plan *ep, int v)
{
	return v >= 0 ? ep->vals[v].rt : -1;
}

/* The Loop or If node that calls graph.loops[i], or NULL (none: removed, or an else branch). */
static const struct node *call_node(struct graph *g, int i)
{
	for (int k = 0; k < g->nodes.n; k++)
		if (!g->nodes.v[k].dead && (g->nodes.v[k].op == OP_LOOP || g->nodes.v[k].op == OP_IF) &&
		    node_attr(&g->nodes.v[k], "call") && node_attr_int(&g->nodes.v[k], "call", -1) == i)
			return &g->nodes.v[k];
	return NULL;
}

/*
 * rt_loops[]: per run-time loop (graph.loops) its body's API, which
 * model.c declares here under the body's prefix, and the values it reads
 * and writes.
 */
static void loops_table(struct graph *g, const struct exec_plan *ep, struct strbuf *out)
{
	static const char *const fns[][3] = {
		{ "collagec_status", "open", "collagec_model **" },
		{ "void", "close", "collagec_model *" },
		{ "collagec_status", "set_threads", "collagec_model *, int" },
		{ "collagec_status", "set_input",
		  "collagec_model *, int, const void *, const int64_t *, int" },
		{ "collagec_status", "run", "collagec_model *" },
		{ "collagec_status", "get_output",
		  "collagec_model *, int, const void **, const int64_t **, int *" },
		{ "const char *", "last_error", "const collagec_model *" },
	};

	for (int i = 0; i < g->loops.n; i++) {
		const struct loop_body *lb = &g->loops.v[i];
		const struct node *n;
		int n_onnx;

		n = call_node(g, i);
		for (size_t f = 0; f < ARRAY_SIZE(fns); f++)
			sb_printf(out, "%s %s_%s(%s);\n", fns[f][0], lb->prefix, fns[f][1], fns[f][2]);
		if (!n) {
			/* an If's else branch (the then entry calls it), or a removed node */
			sb_printf(out, "static const int rt_loop%d_in[] = { -1 }, rt_loop%d_out[] = "
				  "{ -1 };\n", i, i);
			continue;
		}
		n_onnx = (int)node_attr_int(n, "inputs", 2);
		sb_printf(out, "static const int rt_loop%d_in[] = {", i);
		for (int j = 2; j < n_onnx; j++)
			sb_printf(out, " %d,", rt_of(ep, n->in[j]));
		for (int c = 0; c < lb->n_caps; c++)
			sb_printf(out, " %d,", rt_of(ep, n->in[n_onnx + lb->caps[c]]));
		sb_printf(out, " -1 };\nstatic const int rt_loop%d_out[] = {", i);
		for (int o = 0; o < n->n_out; o++)
			sb_printf(out, " %d,", rt_of(ep, n->out[o]));
		sb_puts(out, " -1 };\n");
	}
	sb_puts(out, "static const struct rt_loop rt_loops[] = {\n");
	for (int i = 0; i < g->loops.n; i++) {
		const struct loop_body *lb = &g->loops.v[i];
		const struct node *n = call_node(g, i);
		bool loop = n && n->op == OP_LOOP;

		sb_puts(out, "\t{ ");
		emit_c_string(out, n ? n->name : "");
		for (size_t f = 0; f < ARRAY_SIZE(fns); f++)
			sb_printf(out, ", %s_%s", lb->prefix, fns[f][1]);
		sb_printf(out, ", %d, %d, %d, %d, %d, %d, INT64_C(%lld), rt_loop%d_in, rt_loop%d_out "
			  "},\n", lb->kind, loop ? rt_of(ep, n->in[0]) : -1,
			  loop && n->n_in > 1 ? rt_of(ep, n->in[1]) : n ? rt_of(ep, n->in[0]) : -1,
			  lb->kind ? lb->n_out : lb->n_carried, lb->n_scan, lb->n_caps,
			  (long long)lb->iter0, i, i);
	}
	sb_puts(out, "\t{ NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, -1, -1, 0, 0, 0, 0, "
		"NULL, NULL }\n};\n");
}

/* Whether an output of g is a sequence of run-time length (or an optional). */
static bool has_seq_outputs(struct graph *g)
{
	bool any = false;

	for (int i = 0; i < g->outputs.n; i++)
		any |= (g->values.v[g->outputs.v[i]].flags & VALUE_SEQ) != 0;
	return any;
}

/*
 * Per output, what collagec_output_sequence says (rt_model.c): 1 for the
 * data of a sequence of run-time length, 2 for an optional's, else 0.
 * Only models that have one get the table (rt_desc.seq_out NULL: none).
 */
static void seq_outputs_table(struct graph *g, struct strbuf *out)
{
	if (!has_seq_outputs(g))
		return;
	sb_puts(out, "static const signed char rt_seq_out[] = {");
	for (int i = 0; i < g->outputs.n; i++) {
		unsigned f = g->values.v[g->outputs.v[i]].flags;

		sb_printf(out, " %d,", f & VALUE_SEQ_OPT ? 2 : f & VALUE_SEQ ? 1 : 0);
	}
	sb_puts(out, " 0 };\n");
}

/*
 * The init table and its parallel fini and sync tables (NULL where an init
 * has none).
 */
static void init_tables(struct strbuf *out, const struct model_sources *ms)
{
	for (int i = 0; i < ms->inits.n; i++) {
		sb_printf(out, "int %s(void *model, char *err, size_t errlen);\n", ms->inits.v[i]);
		if (ms->finis.v[i])
			sb_printf(out, "void %s(void *model);\n", ms->finis.v[i]);
		if (ms->syncs.v[i])
			sb_printf(out, "void %s(void *model, int end);\n", ms->syncs.v[i]);
	}
	sb_puts(out, "static rt_init_fn const rt_inits[] = {");
	for (int i = 0; i < ms->inits.n; i++)
		sb_printf(out, " %s,", ms->inits.v[i]);
	sb_puts(out, " NULL };\nstatic rt_fini_fn const rt_finis[] = {");
	for (int i = 0; i < ms->inits.n; i++)
		sb_printf(out, " %s,", ms->finis.v[i] ? ms->finis.v[i] : "NULL");
	sb_puts(out, " NULL };\nstatic rt_sync_fn const rt_syncs[] = {");
	for (int i = 0; i < ms->inits.n; i++)
		sb_printf(out, " %s,", ms->syncs.v[i] ? ms->syncs.v[i] : "NULL");
	sb_puts(out, " NULL };\n");
}

/*
 * rt_packs[]: the derived constants the model makes when it opens
 * (ep->packs), each by its backend's function (a prelude's) from the
 * source constant in the blob or from an earlier pack.
 */
static void packs_table(const struct exec_plan *ep, struct strbuf *out)
{
	sb_puts(out, "static const struct rt_pack rt_packs[] = {\n");
	for (int i = 0; i < ep->packs.n; i++) {
		const struct exec_pack *p = &ep->packs.v[i];

		sb_printf(out, "\t{ %s, %d, %d, %d, INT64_C(%lld), {", p->d->rt_fn,
			  ep->vals[p->src].rt, p->src_pack, p->temp, (long long)p->bytes);
		for (size_t k = 0; k < ARRAY_SIZE(p->d->params); k++)
			sb_printf(out, " INT64_C(%lld),", (long long)p->d->params[k]);
		sb_puts(out, " } },\n");
	}
	sb_puts(out, "\t{ NULL, -1, -1, 0, 0, { 0 } }\n};\n");
}

/* rt_caches[]: the KV caches collagec_bind_cache may keep in place. */
static void caches_table(const struct exec_plan *ep, struct strbuf *out)
{
	sb_puts(out, "static const struct rt_cache rt_caches[] = {\n");
	for (int i = 0; i < ep->caches.n; i++)
		sb_printf(out, "\t{ %d, %d },\n", ep->caches.v[i].in, ep->caches.v[i].out);
	sb_puts(out, "\t{ -1, -1 }\n};\n");
}

/* rt_desc: the model's sizes and tables, all the runtime reads of it. */
static void desc(struct graph *g, const struct exec_plan *ep, const struct weights_file *wf,
		 struct strbuf *out)
{
	sb_printf(out, "const struct rt_desc rt_desc = {\n"
		  "\t.n_values = %d, .n_inputs = %d, .n_outputs = %d, .n_syms = %d,\n"
		  "\t.n_steps = %d, .max_args = %d, .n_shapes = %d, .n_loops = %d,\n"
		  "\t.n_packs = %d, .n_caches = %d, .static_arena = INT64_C(%lld), .threads = %d,\n",
		  ep->n_rt, g->inputs.n, g->outputs.n, g->syms.n, ep->steps.n,
		  ep->max_args ? ep->max_args : 1, ep->shapes.n, g->loops.n, ep->packs.n,
		  ep->caches.n,
		  ep->dynamic ? -1LL : (long long)ep->arena_bytes, ep->threads);
	sb_printf(out, "\t.values = rt_values, .info_dims = rt_info_dims,\n"
		  "\t.variants = rt_variants, .steps = rt_steps, .args = rt_args,\n"
		  "\t.inputs = rt_inputs, .outputs = rt_outputs, .seq_out = %s,\n"
		  "\t.sym_names = rt_sym_names, .derived = rt_derived, .checks = rt_checks,\n"
		  "\t.shapes = rt_shapes, .sym_late = rt_sym_late, .late = rt_late,\n"
		  "\t.loops = rt_loops, .inits = rt_inits, .finis = rt_finis,\n"
		  "\t.syncs = rt_syncs,\n"
		  "\t.weights = %s, .packs = rt_packs, .caches = rt_caches,\n"
		  "\t.metadata_json = rt_metadata_json,\n"
		  "\t.rt_abort = collagec_rt_abort,\n",
		  has_seq_outputs(g) ? "rt_seq_out" : "NULL", wf ? "NULL" : "rt_weights");
	if (wf) {
		sb_puts(out, "\t.weights_file = ");
		emit_c_string(out, wf->name);
		sb_printf(out, ", .weights_bytes = INT64_C(%lld),\n\t.weights_sha256 = ",
			  (long long)wf->bytes);
		if (wf->sha256)
			emit_c_string(out, wf->sha256);
		else
			sb_puts(out, "NULL");
		sb_puts(out, ",\n");
	}
	sb_puts(out, "};\n\n");
}

int emit_kernel_files(const struct model_sources *ms, int max_lines, char ***out)
{
	VEC(char *) files = { 0 };
	int i = 0;

	int total = 0;

	*out = NULL;
	for (int k = 0; k < ms->units.n; k++)
		total += ms->units.v[k].lines;
	if (max_lines <= 0 || total <= KERNEL_FILE_MIN_LINES)
		return 0;
	while (i < ms->units.n) {
		struct strbuf sb = STRBUF_INIT;
		VEC(const char *) preludes = { 0 };
		int j = i, lines = 0;

		/* a whole unit always goes in; more while they fit */
		do {
			lines += ms->units.v[j].lines;
			add_unique(&preludes, ms->units.v[j].prelude);
			j++;
		} while (j < ms->units.n && lines + ms->units.v[j].lines <= max_lines);
		sb_puts(&sb, "/* generated by collagec - do not edit */\n"
			"#define RT_KERNEL __attribute__((visibility(\"hidden\")))\n"
			"#include \"rt_model.h\"\n");
		for (int k = 0; k < preludes.n; k++)
			sb_puts(&sb, preludes.v[k]);
		for (; i < j; i++)
			sb_puts(&sb, ms->units.v[i].source);
		vec_free(&preludes);
		vec_push(&files, sb_detach(&sb));
	}
	*out = files.v;
	return files.n;
}

void emit_model_c(struct graph *g, const struct exec_plan *ep, const struct model_sources *ms,
		  const char *metadata_json, bool split, const struct weights_file *wf,
		  struct strbuf *out)
{
	sb_puts(out, "/* generated by collagec - do not edit */\n#include \"rt_model.h\"\n");
	for (int i = 0; i < ms->preludes.n; i++)
		sb_puts(out, ms->preludes.v[i]);
	sb_puts(out, sb_str((struct strbuf *)&ms->kernels));
	if (split) {
		sb_puts(out, "\n/* kernels compiled in kernels_N.c */\n");
		for (int i = 0; i < ms->entries.n; i++)
			sb_printf(out, "RT_KERNEL_EXTERN void %s(void *const *, const int64_t *, int);\n",
				  ms->entries.v[i]);
	} else {
		for (int i = 0; i < ms->units.n; i++)
			sb_puts(out, ms->units.v[i].source);
	}
	if (wf)
		sb_puts(out, "\n/* weights: in a file of their own (rt_desc.weights_file) */\n\n");
	else
		sb_puts(out, "\n/* weights: embedded as a blob, not as C arrays */\n"
			"__asm__(\".section .rodata\\n.balign 64\\n.globl rt_weights\\n"
			".hidden rt_weights\\nrt_weights:\\n.incbin \\\"weights.bin\\\"\\n"
			".byte 0\\n.previous\\n\");\n"
			"extern const unsigned char rt_weights[] "
			"__attribute__((visibility(\"hidden\")));\n\n");
	values_table(g, ep, out);
	steps_table(ep, out);
	sb_puts(out, "static const int rt_inputs[] = {");
	for (int i = 0; i < g->inputs.n; i++)
		sb_printf(out, " %d,", ep->vals[g->inputs.v[i]].rt);
	sb_puts(out, " -1 };\nstatic const int rt_outputs[] = {");
	for (int i = 0; i < g->outputs.n; i++)
		sb_printf(out, " %d,", ep->vals[g->outputs.v[i]].rt);
	sb_puts(out, " -1 };\n");
	seq_outputs_table(g, out);
	sb_puts(out, "static const char *const rt_sym_names[] = {");
	for (int i = 0; i < g->syms.n; i++) {
		sb_putc(out, ' ');
		emit_c_string(out, g->syms.v[i]);
		sb_putc(out, ',');
	}
	sb_puts(out, " NULL };\n");
	derived_table(g, out);
	checks_table(g, out);
	shapes_table(g, ep, out);
	late_table(ep, out);
	loops_table(g, ep, out);
	init_tables(out, ms);
	packs_table(ep, out);
	caches_table(ep, out);
	sb_puts(out, "static const char rt_metadata_json[] =\n\t");
	emit_c_string(out, metadata_json);
	sb_puts(out, ";\n\n");
	desc(g, ep, wf, out);
	emit_api_functions(out);
}

const struct embedded_file *embedded_find(const char *name)
{
	for (int i = 0; i < embedded_files_count; i++)
		if (!strcmp(embedded_files[i].name, name))
			return &embedded_files[i];
	return NULL;
}
