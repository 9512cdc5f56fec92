/*
 * graph.c - graph construction, topological order, attributes, the text
 * printer and the verifier (dtypes and dims: ../base/types.c).
 */
#include "ir.h"
#include "../../runtime/rt_half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- graph ---- */

struct graph *graph_new(struct collagec_ctx *ctx)
{
	struct graph *g = xcalloc(1, sizeof(*g));

	g->ctx = ctx;
	g->arena = &ctx->arena;
	return g;
}

bool graph_host_cpu(const struct graph *g)
{
	return !g->cpu || !strcmp(g->cpu, "native");
}

struct graph *graph_new_scratch(struct collagec_ctx *ctx)
{
	struct graph *g = graph_new(ctx);

	g->arena = &g->own;
	return g;
}

void graph_free(struct graph *g)
{
	if (!g)
		return;
	vec_free(&g->values);
	vec_free(&g->nodes);
	vec_free(&g->inputs);
	vec_free(&g->outputs);
	vec_free(&g->syms);
	vec_free(&g->checks);
	vec_free(&g->sym_defs);
	vec_free(&g->sym_data);
	vec_free(&g->files);
	strmap_free(&g->kernel_texts);
	vec_free(&g->kernel_syms);
	vec_free(&g->fates);
	for (int i = 0; i < g->loops.n; i++)
		if (g->loops.v[i].dir)
			dir_remove_tree(g->loops.v[i].dir);
	vec_free(&g->loops);
	vec_free(&g->ports);
	for (int i = 0; i < g->derived.n; i++)
		free(g->derived.v[i].data);
	vec_free(&g->derived);
	for (int i = 0; i < g->maps.n; i++)
		munmap(g->maps.v[i].base, g->maps.v[i].len);
	vec_free(&g->maps);
	arena_release(&g->own);
	free(g);
}

void *graph_derived_const(struct graph *g, const void *src, const char *kind,
			  const int64_t *params, int n_params, size_t bytes, bool *fresh)
{
	struct derived_const d = { src, kind, { 0 }, bytes, NULL, NULL, NULL };

	if (n_params > (int)ARRAY_SIZE(d.params))
		BUG("derived constant '%s' with %d parameters", kind, n_params);
	memcpy(d.params, params, sizeof(*params) * (size_t)n_params);
	for (int i = 0; i < g->derived.n; i++) {
		const struct derived_const *e = &g->derived.v[i];

		if (e->src == src && !strcmp(e->kind, kind) && e->bytes == bytes &&
		    !memcmp(e->params, d.params, sizeof(d.params))) {
			*fresh = false;
			return e->data;
		}
	}
	d.data = xcalloc(bytes ? bytes : 1, 1);
	vec_push(&g->derived, d);
	*fresh = true;
	return d.data;
}

void *graph_derived_lazy(struct graph *g, const void *src, const char *kind,
			 const int64_t *params, int n_params, size_t bytes,
			 void (*fill)(void *data, const void *src, const int64_t *params))
{
	bool fresh;
	void *data = graph_derived_const(g, src, kind, params, n_params, bytes, &fresh);

	if (fresh)
		g->derived.v[g->derived.n - 1].fill = fill;
	return data;
}

void graph_derived_fill(struct graph *g, const void *data)
{
	for (int i = 0; data && i < g->derived.n; i++) {
		struct derived_const *d = &g->derived.v[i];
		void (*fill)(void *, const void *, const int64_t *) = d->fill;

		if (d->data != data)
			continue;
		if (fill) {
			d->fill = NULL;
			graph_derived_fill(g, d->src);
			fill(d->data, d->src, d->params);
		}
		return;
	}
}

void graph_derived_open(struct graph *g, const void *data, const char *rt_fn)
{
	for (int i = 0; i < g->derived.n; i++)
		if (g->derived.v[i].data == data) {
			g->derived.v[i].rt_fn = rt_fn;
			return;
		}
	BUG("graph_derived_open: not a derived constant (%s)", rt_fn);
}

const struct derived_const *graph_derived_of(const struct graph *g, const void *data)
{
	for (int i = 0; data && i < g->derived.n; i++)
		if (g->derived.v[i].data == data)
			return &g->derived.v[i];
	return NULL;
}

const void *graph_widened16_of(const struct graph *g, const void *data, bool *bf)
{
	const struct derived_const *d = graph_derived_of(g, data);

	if (!d || strcmp(d->kind, "widen16"))
		return NULL;
	*bf = d->params[0] != 0;
	return d->src;
}

void graph_drop_constant_pages(struct graph *g)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	for (int i = 0; i < g->values.n; i++) {
		const struct value *v = &g->values.v[i];
		uintptr_t from, to;

		if (!v->data || dtype_is_string(v->dtype) || !shape_is_static(&v->shape))
			continue;
		from = ((uintptr_t)v->data + page - 1) / page * page;
		to = ((uintptr_t)v->data + (uintptr_t)shape_numel_static(&v->shape) *
		      dtype_size(v->dtype)) / page * page;
		/* private memory: the child's own pages go, the parent keeps its */
		if (to > from)
			madvise((void *)from, to - from, MADV_DONTNEED);
	}
}

int graph_add_value(struct graph *g, const char *name)
{
	struct value v;

	memset(&v, 0, sizeof(v));
	v.name = arena_strdup(g->arena, name);
	v.producer = -1;
	vec_push(&g->values, v);
	return g->values.n - 1;
}

void graph_add_map(struct graph *g, void *base, size_t len)
{
	struct graph_map m = { base, len };

	vec_push(&g->maps, m);
}

int graph_adopt_const(struct graph *g, const char *name, enum dtype t, const struct shape *s,
		      void *data)
{
	struct shape sc = *s;	/* s may point into g->values, which may move */
	int id = graph_add_value(g, name);
	struct value *v = &g->values.v[id];

	if (dtype_is_string(t))
		BUG("constant '%s': a string tensor is copied, not adopted", name);
	v->dtype = t;
	v->shape = sc;
	v->has_shape = true;
	v->data = data;
	return id;
}

int graph_add_const(struct graph *g, const char *name, enum dtype t, const struct shape *s,
		    const void *data)
{
	struct shape sc = *s;	/* s may point into g->values, which may move */
	int id = graph_add_value(g, name);
	struct value *v = &g->values.v[id];
	size_t n = (size_t)shape_numel_static(&sc) * dtype_size(t);

	v->dtype = t;
	v->shape = sc;
	v->has_shape = true;
	v->data = arena_alloc(g->arena, n ? n : 1);
	if (n && dtype_is_string(t)) {
		const char *const *from = data;
		const char **to = v->data;

		for (size_t i = 0; i < n / sizeof(char *); i++)
			to[i] = arena_strdup(g->arena, from[i] ? from[i] : "");
	} else if (n) {
		memcpy(v->data, data, n);
	}
	return id;
}

int graph_add_node(struct graph *g, enum op op, const char *name, const int *in, int n_in,
		   const int *out, int n_out)
{
	struct node n;

	memset(&n, 0, sizeof(n));
	n.op = op;
	n.name = arena_strdup(g->arena, name);
	n.n_in = n_in;
	n.n_out = n_out;
	n.in = arena_memdup(g->arena, in, sizeof(int) * (size_t)(n_in ? n_in : 1));
	n.out = arena_memdup(g->arena, out, sizeof(int) * (size_t)(n_out ? n_out : 1));
	n.onnx_index = -1;
	vec_push(&g->nodes, n);
	for (int i = 0; i < n_out; i++)
		g->values.v[out[i]].producer = g->nodes.n - 1;
	return g->nodes.n - 1;
}

static const struct sym_def *sym_def_of(struct graph *g, struct dim d)
{
	if (d.c != 1 || d.n != 1)
		return NULL;
	for (int i = 0; i < g->sym_defs.n; i++)
		if (g->sym_defs.v[i].sym == d.sym[0])
			return &g->sym_defs.v[i];
	return NULL;
}

bool graph_derive_sym(struct graph *g, enum sym_op op, struct dim a, struct dim b,
		      struct dim *out)
{
	static const char *const ops[SYM_OP_COUNT] = { "+", "/", "%", "min", "max" };
	const struct sym_def *da = sym_def_of(g, a);
	struct strbuf name = STRBUF_INIT;
	struct sym_def def;

	/* (x + k0) + k is x + (k0 + k), and x itself when that is 0 */
	if (op == SYM_ADD && da && da->op == SYM_ADD && dim_is_const(b) &&
	    dim_is_const(da->b)) {
		struct dim k = dim_const(da->b.c + b.c);

		a = da->a;
		b = k;
		if (k.c == 0) {
			*out = a;
			return true;
		}
		if (symint_add(a, b, out))
			return true;
	}
	for (int i = 0; i < g->sym_defs.n; i++) {
		const struct sym_def *d = &g->sym_defs.v[i];

		if (d->op == op && dim_eq(d->a, a) && dim_eq(d->b, b)) {
			*out = dim_sym(d->sym);
			return true;
		}
	}
	if (g->syms.n >= 255)
		return false;
	if (op == SYM_MIN || op == SYM_MAX) {
		sb_printf(&name, "%s(", ops[op]);
		dim_print(g, a, &name);
		sb_putc(&name, ',');
		dim_print(g, b, &name);
		sb_putc(&name, ')');
	} else {
		sb_putc(&name, '(');
		dim_print(g, a, &name);
		if (op == SYM_ADD && b.c < 0) {
			sb_putc(&name, '-');
			dim_print(g, symint_neg(b), &name);
		} else {
			sb_puts(&name, ops[op]);
			dim_print(g, b, &name);
		}
		sb_putc(&name, ')');
	}
	def.sym = graph_intern_sym(g, sb_str(&name));
	def.op = op;
	def.a = a;
	def.b = b;
	sb_release(&name);
	vec_push(&g->sym_defs, def);
	*out = dim_sym(def.sym);
	return true;
}

bool graph_sym_add(struct graph *g, struct dim a, struct dim b, struct dim *out)
{
	const struct sym_def *d;
	struct dim t;

	if (symint_add(a, b, out))
		return true;
	if (dim_is_const(a) || (!dim_is_const(b) && sym_def_of(g, a) && !sym_def_of(g, b))) {
		t = a;		/* a constant last, else a derived symbol last */
		a = b;
		b = t;
	}
	/* S + (S - 1) is (2*S - 1) */
	d = sym_def_of(g, b);
	if (d && d->op == SYM_ADD && dim_is_const(d->b) && !dim_is_const(a) &&
	    symint_add(a, d->a, &t) && t.c > 0)
		return graph_derive_sym(g, SYM_ADD, t, d->b, out);
	return a.c > 0 && graph_derive_sym(g, SYM_ADD, a, b, out);
}

static void add_check(struct graph *g, const struct node *n, struct dim a, struct dim b,
		      bool eq)
{
	struct sym_check c = { a, b, n->name, eq };

	for (int i = 0; i < g->checks.n; i++)
		if (dim_eq(g->checks.v[i].a, a) && dim_eq(g->checks.v[i].b, b) &&
		    g->checks.v[i].eq == eq)
			return;
	vec_push(&g->checks, c);
}

void graph_add_check(struct graph *g, const struct node *n, struct dim a, struct dim b)
{
	add_check(g, n, a, b, false);
}

void graph_add_check_eq(struct graph *g, const struct node *n, struct dim a, struct dim b)
{
	add_check(g, n, a, b, true);
}

struct dim graph_data_sym(struct graph *g, int v, int k)
{
	const char *name = arena_printf(g->arena, "%s[%d]", g->values.v[v].name, k);
	struct sym_data sd = { graph_intern_sym(g, name), v, k };

	for (int i = 0; i < g->sym_data.n; i++)
		if (g->sym_data.v[i].sym == sd.sym)
			return dim_sym(sd.sym);
	vec_push(&g->sym_data, sd);
	return dim_sym(sd.sym);
}

struct dim graph_data_param(struct graph *g, int v, const char *what, int k)
{
	const char *name = arena_printf(g->arena, "%s.%s[%d]", g->values.v[v].name, what, k);
	struct sym_data sd = { graph_intern_sym(g, name), v, -1 };

	for (int i = 0; i < g->sym_data.n; i++)
		if (g->sym_data.v[i].sym == sd.sym)
			return dim_sym(sd.sym);
	vec_push(&g->sym_data, sd);
	return dim_sym(sd.sym);
}

bool graph_dim_late(struct graph *g, struct dim d)
{
	for (int j = 0; j < d.n; j++)
		if (graph_sym_late(g, d.sym[j]))
			return true;
	return false;
}

bool graph_sym_late(struct graph *g, int s)
{
	for (int i = 0; i < g->sym_data.n; i++)
		if (g->sym_data.v[i].sym == s)
			return true;
	/* derived symbols only refer to earlier ones, so this ends */
	for (int i = 0; i < g->sym_defs.n; i++)
		if (g->sym_defs.v[i].sym == s)
			return graph_dim_late(g, g->sym_defs.v[i].a) || graph_dim_late(g, g->sym_defs.v[i].b);
	return false;
}

bool value_one_element(const struct value *v)
{
	return v->has_shape && shape_is_static(&v->shape) && shape_numel_static(&v->shape) == 1;
}

bool graph_shape_late(struct graph *g, const struct shape *s)
{
	for (int k = 0; k < s->rank; k++)
		if (graph_dim_late(g, s->d[k]))
			return true;
	return false;
}

int graph_intern_sym(struct graph *g, const char *name)
{
	for (int i = 0; i < g->syms.n; i++)
		if (!strcmp(g->syms.v[i], name))
			return i;
	if (g->syms.n >= 255)
		BUG("more than 255 symbolic dims");
	vec_push(&g->syms, arena_strdup(g->arena, name));
	return g->syms.n - 1;
}

static void fix_producers(struct graph *g)
{
	for (int i = 0; i < g->values.n; i++)
		g->values.v[i].producer = -1;
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_out; j++)
			g->values.v[n->out[j]].producer = i;
	}
}

/*
 * Kahn's algorithm, stable: among ready nodes the one first in the current
 * order goes first, so an already sorted graph keeps its order.
 */
int graph_toposort(struct graph *g)
{
	int nn = g->nodes.n, done = 0;
	int *pending = xcalloc((size_t)nn + 1, sizeof(int));
	int *order = xmalloc(sizeof(int) * ((size_t)nn + 1));
	int *prod = xmalloc(sizeof(int) * ((size_t)g->values.n + 1));
	bool *placed = xcalloc((size_t)nn + 1, 1);
	struct node *sorted;
	int rc = 0;

	for (int i = 0; i < g->values.n; i++)
		prod[i] = -1;
	for (int i = 0; i < nn; i++)
		for (int j = 0; j < g->nodes.v[i].n_out; j++)
			prod[g->nodes.v[i].out[j]] = i;
	for (int i = 0; i < nn; i++) {
		struct node *n = &g->nodes.v[i];

		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] >= 0 && prod[n->in[j]] >= 0)
				pending[i]++;
	}
	/* O(n^2) in the worst case; graphs are small and sorted already */
	while (done < nn) {
		int pick = -1;

		for (int i = 0; i < nn; i++)
			if (!placed[i] && pending[i] == 0) {
				pick = i;
				break;
			}
		if (pick < 0)
			break;
		placed[pick] = true;
		order[done++] = pick;
		for (int i = 0; i < nn; i++) {
			struct node *n = &g->nodes.v[i];

			if (placed[i])
				continue;
			for (int j = 0; j < n->n_in; j++)
				if (n->in[j] >= 0 && prod[n->in[j]] == pick)
					pending[i]--;
		}
	}
	if (done < nn) {
		for (int i = 0; i < nn; i++)
			if (!placed[i]) {
				diag_error(g->ctx, "%s: graph has a cycle through this node",
					   node_loc(g, &g->nodes.v[i]));
				break;
			}
		rc = -1;
	} else {
		sorted = xmalloc(sizeof(struct node) * ((size_t)nn + 1));
		for (int i = 0; i < nn; i++)
			sorted[i] = g->nodes.v[order[i]];
		if (nn)		/* a graph of no nodes has no node array */
			memcpy(g->nodes.v, sorted, sizeof(struct node) * (size_t)nn);
		free(sorted);
		fix_producers(g);
	}
	free(pending);
	free(order);
	free(prod);
	free(placed);
	return rc;
}

static void push_fate(struct graph *g, const char *name, const char *op_type, const char *into)
{
	vec_push(&g->fates, ((struct node_fate){ name, op_type, g->pass ? g->pass : "import",
		 into }));
}

void graph_record_fate(struct graph *g, const char *name, const char *op_type)
{
	/* at import a node's span is itself: no other node holds its name */
	push_fate(g, name, op_type, NULL);
}

/*
 * Drops the dead nodes, recording the fate of each ONNX node in their
 * spans: once a pass (a pass that compacts twice records the first), and
 * not at all when a live node still bears its name (a folded Cast the widen
 * pass made for a node's weight carries the node's span; the node is still
 * there).
 */
void graph_compact(struct graph *g)
{
	struct strmap holder = { 0 };	/* ONNX node name -> first live node naming it */
	struct strmap known = { 0 };	/* names of live nodes and of this pass's fates */
	const char *pass = g->pass ? g->pass : "import";
	int k = 0;
	bool any_dead = false;

	for (int i = 0; i < g->nodes.n && !any_dead; i++)
		any_dead = g->nodes.v[i].dead;
	for (int i = 0; i < g->nodes.n && any_dead; i++) {
		const struct node *n = &g->nodes.v[i];

		if (!n->dead)
			strmap_put(&known, n->name, 1);
		for (int s = 0; s < n->span.n && !n->dead; s++)
			if (strmap_get(&holder, n->span.names[s]) < 0)
				strmap_put(&holder, n->span.names[s], i);
	}
	for (int i = 0; i < g->fates.n && any_dead; i++)
		if (!strcmp(g->fates.v[i].pass, pass))
			strmap_put(&known, g->fates.v[i].name, 1);
	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];

		for (int s = 0; s < n->span.n && n->dead; s++) {
			int h = strmap_get(&holder, n->span.names[s]);

			if (strmap_get(&known, n->span.names[s]) >= 0)
				continue;
			strmap_put(&known, n->span.names[s], 1);
			push_fate(g, n->span.names[s], n->span.types[s],
				  h >= 0 ? g->nodes.v[h].name : NULL);
		}
	}
	strmap_free(&holder);
	strmap_free(&known);
	for (int i = 0; i < g->nodes.n; i++)
		if (!g->nodes.v[i].dead)
			g->nodes.v[k++] = g->nodes.v[i];
	g->nodes.n = k;
	fix_producers(g);
}

void graph_move_tail(struct graph *g, int from, int to)
{
	int nt = g->nodes.n - from, nm = from - to;
	struct node *tmp;

	if (to > from || from > g->nodes.n)
		BUG("graph_move_tail(%d, %d) of %d nodes", from, to, g->nodes.n);
	if (!nt || !nm)
		return;
	tmp = xmalloc(sizeof(*tmp) * (size_t)nt);
	memcpy(tmp, &g->nodes.v[from], sizeof(*tmp) * (size_t)nt);
	memmove(&g->nodes.v[to + nt], &g->nodes.v[to], sizeof(*tmp) * (size_t)nm);
	memcpy(&g->nodes.v[to], tmp, sizeof(*tmp) * (size_t)nt);
	free(tmp);
	fix_producers(g);
}

const char *node_loc(struct graph *g, const struct node *n)
{
	const char *path = g->path ? g->path : "model";
	const char *slash = strrchr(path, '/');

	if (slash)
		path = slash + 1;
	if (n->onnx_index >= 0)
		return arena_printf(g->arena, "%s: node %d '%s' (%s)", path, n->onnx_index,
				    n->name, n->op_type);
	return arena_printf(g->arena, "%s: node '%s' (%s)", path, n->name, n->op_type);
}

const struct attr *node_attr(const struct node *n, const char *name)
{
	for (int i = 0; i < n->n_attrs; i++)
		if (!strcmp(n->attrs[i].name, name))
			return &n->attrs[i];
	return NULL;
}

int64_t node_attr_int(const struct node *n, const char *name, int64_t def)
{
	const struct attr *a = node_attr(n, name);

	if (!a)
		return def;
	if (a->kind == ATTR_FLOAT)
		return (int64_t)a->f;
	return a->i;
}

double node_attr_float(const struct node *n, const char *name, double def)
{
	const struct attr *a = node_attr(n, name);

	if (!a)
		return def;
	if (a->kind == ATTR_INT)
		return (double)a->i;
	return a->f;
}

const char *node_attr_str(const struct node *n, const char *name, const char *def)
{
	const struct attr *a = node_attr(n, name);

	return a && a->kind == ATTR_STRING ? a->s : def;
}

int node_attr_ints(const struct node *n, const char *name, const int64_t **out)
{
	const struct attr *a = node_attr(n, name);

	if (!a || a->kind != ATTR_INTS)
		return -1;
	*out = a->ints;
	return a->n;
}

struct attr attr_int(const char *name, int64_t v)
{
	struct attr a = { 0 };

	a.name = name;
	a.kind = ATTR_INT;
	a.i = v;
	return a;
}

void node_set_attr_int(struct graph *g, struct node *n, const char *name, int64_t v)
{
	struct attr *na;

	for (int i = 0; i < n->n_attrs; i++)
		if (!strcmp(n->attrs[i].name, name)) {
			n->attrs[i].kind = ATTR_INT;
			n->attrs[i].i = v;
			return;
		}
	na = arena_alloc(g->arena, sizeof(*na) * (size_t)(n->n_attrs + 1));
	if (n->n_attrs)
		memcpy(na, n->attrs, sizeof(*na) * (size_t)n->n_attrs);
	na[n->n_attrs].name = arena_strdup(g->arena, name);
	na[n->n_attrs].kind = ATTR_INT;
	na[n->n_attrs].i = v;
	n->attrs = na;
	n->n_attrs++;
}

void node_set_attr_float(struct graph *g, struct node *n, const char *name, double v)
{
	struct attr *a;

	node_set_attr_int(g, n, name, 0);
	for (a = n->attrs; strcmp(a->name, name); a++)
		;
	a->kind = ATTR_FLOAT;
	a->f = v;
}

void node_set_attr_ints(struct graph *g, struct node *n, const char *name, const int64_t *v,
			int count)
{
	struct attr *a;

	node_set_attr_int(g, n, name, 0);
	for (a = n->attrs; strcmp(a->name, name); a++)
		;
	a->kind = ATTR_INTS;
	a->n = count;
	a->ints = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(count + 1));
	if (count)
		memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
}

static int64_t load_int(const void *p, enum dtype t, int64_t i)
{
	switch (t) {
	case DTYPE_I64: return ((const int64_t *)p)[i];
	case DTYPE_I32: return ((const int32_t *)p)[i];
	case DTYPE_I16: return ((const int16_t *)p)[i];
	case DTYPE_I8: return ((const int8_t *)p)[i];
	case DTYPE_U8: case DTYPE_BOOL: return ((const uint8_t *)p)[i];
	case DTYPE_U16: return ((const uint16_t *)p)[i];
	case DTYPE_U32: return ((const uint32_t *)p)[i];
	case DTYPE_U64: return (int64_t)((const uint64_t *)p)[i];
	case DTYPE_F32: return (int64_t)((const float *)p)[i];
	case DTYPE_F64: return (int64_t)((const double *)p)[i];
	case DTYPE_F16: return (int64_t)rt_h2f(((const uint16_t *)p)[i]);
	case DTYPE_BF16: return (int64_t)rt_bf2f(((const uint16_t *)p)[i]);
	default: BUG("load_int of %s", dtype_name(t));
	}
}

int value_const_ints(struct graph *g, const struct value *v, int64_t **out, int64_t *count)
{
	int64_t n;

	if (!v || !v->data || !v->has_shape || !shape_is_static(&v->shape))
		return -1;
	n = shape_numel_static(&v->shape);
	*out = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		(*out)[i] = load_int(v->data, v->dtype, i);
	*count = n;
	return 0;
}

int value_sym_ints(struct graph *g, const struct value *v, struct dim **out, int64_t *count)
{
	int64_t *iv, n;

	if (v && v->sym) {
		n = shape_numel_static(&v->shape);
		*out = arena_memdup(g->arena, v->sym, sizeof(struct dim) * (size_t)(n ? n : 1));
		*count = n;
		return 0;
	}
	if (!v || dtype_is_float(v->dtype) || value_const_ints(g, v, &iv, &n) < 0)
		return -1;
	*out = arena_alloc(g->arena, sizeof(struct dim) * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		(*out)[i] = dim_const(iv[i]);
	*count = n;
	return 0;
}

bool value_const_scalar(struct graph *g, const struct value *v, double *out)
{
	(void)g;
	if (!v || !v->data || !v->has_shape || !shape_is_static(&v->shape) ||
	    shape_numel_static(&v->shape) != 1)
		return false;
	if (v->dtype == DTYPE_F32)
		*out = ((const float *)v->data)[0];
	else if (v->dtype == DTYPE_F64)
		*out = ((const double *)v->data)[0];
	else if (v->dtype == DTYPE_F16)
		*out = rt_h2f(((const uint16_t *)v->data)[0]);
	else if (v->dtype == DTYPE_BF16)
		*out = rt_bf2f(((const uint16_t *)v->data)[0]);
	else
		*out = (double)load_int(v->data, v->dtype, 0);
	return true;
}

void node_span_self(struct graph *g, struct node *n)
{
	n->span.n = 1;
	n->span.names = arena_alloc(g->arena, sizeof(char *));
	n->span.types = arena_alloc(g->arena, sizeof(char *));
	n->span.names[0] = n->name;
	n->span.types[0] = n->op_type;
}

void span_add(struct graph *g, struct span *dst, const struct span *src)
{
	int n = dst->n;
	const char **names, **types;

	for (int i = 0; i < src->n; i++) {
		bool dup = false;

		for (int j = 0; j < dst->n; j++)
			if (!strcmp(dst->names[j], src->names[i]))
				dup = true;
		if (!dup)
			n++;
	}
	names = arena_alloc(g->arena, sizeof(char *) * (size_t)(n + 1));
	types = arena_alloc(g->arena, sizeof(char *) * (size_t)(n + 1));
	if (dst->n) {
		memcpy(names, dst->names, sizeof(char *) * (size_t)dst->n);
		memcpy(types, dst->types, sizeof(char *) * (size_t)dst->n);
	}
	n = dst->n;
	for (int i = 0; i < src->n; i++) {
		bool dup = false;

		for (int j = 0; j < dst->n; j++)
			if (!strcmp(dst->names[j], src->names[i]))
				dup = true;
		if (!dup) {
			names[n] = src->names[i];
			types[n] = src->types[i];
			n++;
		}
	}
	dst->names = names;
	dst->types = types;
	dst->n = n;
}

/* ---- printer ---- */

void dim_print(struct graph *g, struct dim d, struct strbuf *sb)
{
	if (d.n == 0) {
		sb_printf(sb, "%lld", (long long)d.c);
		return;
	}
	if (d.c != 1)
		sb_printf(sb, "%lld*", (long long)d.c);
	for (int i = 0; i < d.n; i++)
		sb_printf(sb, "%s%s", i ? "*" : "", g->syms.v[d.sym[i]]);
}

void shape_print(struct graph *g, const struct shape *s, struct strbuf *sb)
{
	sb_putc(sb, '[');
	for (int i = 0; i < s->rank; i++) {
		if (i)
			sb_putc(sb, ',');
		dim_print(g, s->d[i], sb);
	}
	sb_putc(sb, ']');
}

static void print_value_ref(struct graph *g, int id, struct strbuf *sb)
{
	struct value *v;

	if (id < 0) {
		sb_puts(sb, "_");
		return;
	}
	v = &g->values.v[id];
	sb_printf(sb, "%%%d:%s", id, dtype_name(v->dtype));
	if (v->has_shape)
		shape_print(g, &v->shape, sb);
}

/* "={batch,seq,4,16}" after a value computed from shapes */
static void print_sym_payload(struct graph *g, const struct value *v, struct strbuf *sb)
{
	int64_t n;

	if (!v->sym)
		return;
	n = shape_numel_static(&v->shape);
	sb_puts(sb, "={");
	for (int64_t i = 0; i < n; i++) {
		if (i)
			sb_putc(sb, ',');
		dim_print(g, v->sym[i], sb);
	}
	sb_putc(sb, '}');
}

static void print_attr(const struct attr *a, struct strbuf *sb)
{
	sb_printf(sb, "%s=", a->name);
	switch (a->kind) {
	case ATTR_INT: sb_printf(sb, "%lld", (long long)a->i); break;
	case ATTR_FLOAT: sb_printf(sb, "%.9g", a->f); break;
	case ATTR_STRING: sb_printf(sb, "\"%s\"", a->s); break;
	case ATTR_INTS:
		sb_putc(sb, '[');
		for (int i = 0; i < a->n; i++)
			sb_printf(sb, "%s%lld", i ? "," : "", (long long)a->ints[i]);
		sb_putc(sb, ']');
		break;
	case ATTR_FLOATS:
		sb_putc(sb, '[');
		for (int i = 0; i < a->n; i++)
			sb_printf(sb, "%s%.9g", i ? "," : "", a->floats[i]);
		sb_putc(sb, ']');
		break;
	case ATTR_STRINGS: sb_printf(sb, "<%d strings>", a->n); break;
	case ATTR_TENSOR: sb_printf(sb, "%%%d", a->tensor); break;
	default: sb_puts(sb, "<graph>"); break;
	}
}

void graph_print(struct graph *g, FILE *f)
{
	struct strbuf sb = STRBUF_INIT;
	int n_const = 0;

	sb_printf(&sb, "graph '%s' opset %lld\n", g->name ? g->name : "", (long long)g->opset);
	for (int i = 0; i < g->inputs.n; i++) {
		sb_printf(&sb, "input '%s' ", g->values.v[g->inputs.v[i]].name);
		print_value_ref(g, g->inputs.v[i], &sb);
		sb_putc(&sb, '\n');
	}
	for (int i = 0; i < g->values.n; i++)
		if (g->values.v[i].data)
			n_const++;
	sb_printf(&sb, "# %d constants\n", n_const);
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_out; j++) {
			sb_puts(&sb, j ? ", " : "");
			print_value_ref(g, n->out[j], &sb);
			print_sym_payload(g, &g->values.v[n->out[j]], &sb);
		}
		sb_printf(&sb, " = %s(", n->op_type);
		for (int j = 0; j < n->n_in; j++) {
			sb_puts(&sb, j ? ", " : "");
			print_value_ref(g, n->in[j], &sb);
			if (n->in[j] >= 0 && g->values.v[n->in[j]].data)
				sb_puts(&sb, " const");
		}
		sb_puts(&sb, ")");
		for (int j = 0; j < n->n_attrs; j++) {
			sb_puts(&sb, j ? " " : " {");
			print_attr(&n->attrs[j], &sb);
			if (j == n->n_attrs - 1)
				sb_puts(&sb, "}");
		}
		sb_puts(&sb, "  #");
		for (int j = 0; j < n->span.n; j++)
			sb_printf(&sb, " %s(%s)", n->span.names[j], n->span.types[j]);
		sb_putc(&sb, '\n');
	}
	for (int i = 0; i < g->outputs.n; i++) {
		sb_printf(&sb, "output '%s' ", g->values.v[g->outputs.v[i]].name);
		print_value_ref(g, g->outputs.v[i], &sb);
		sb_putc(&sb, '\n');
	}
	fputs(sb_str(&sb), f);
	sb_release(&sb);
}

void graph_verify(struct graph *g)
{
	bool *ready = xcalloc((size_t)g->values.n + 1, 1);

	for (int i = 0; i < g->values.n; i++)
		if (g->values.v[i].data || (g->values.v[i].flags & VALUE_INPUT))
			ready[i] = true;
	for (int i = 0; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		if (n->op < 0 || n->op >= OP_COUNT)
			BUG("node %d has op %d", i, n->op);
		if (n->span.n == 0)
			BUG("node %d '%s' has an empty span", i, n->name);
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] >= 0 && !ready[n->in[j]])
				BUG("node %d '%s' input %d used before defined", i, n->name, j);
		for (int j = 0; j < n->n_out; j++) {
			const struct value *v = &g->values.v[n->out[j]];

			if (v->producer != i)
				BUG("node %d '%s' output %d producer mismatch", i, n->name, j);
			if (v->sym && (v->data || !shape_is_static(&v->shape) ||
				       shape_numel_static(&v->shape) > SYMVAL_MAX))
				BUG("node %d '%s' output %d has a bad symbolic payload", i,
				    n->name, j);
			ready[n->out[j]] = true;
		}
	}
	for (int i = 0; i < g->outputs.n; i++)
		if (!ready[g->outputs.v[i]])
			BUG("graph output %d is not computed", i);
	free(ready);
}

int graph_value_readers(const struct graph *g, int v, int *last)
{
	int n = 0;

	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *nd = &g->nodes.v[i];

		if (nd->dead)
			continue;
		for (int j = 0; j < nd->n_in; j++)
			if (nd->in[j] == v) {
				n++;
				if (last)
					*last = i;
			}
	}
	return n + ((g->values.v[v].flags & VALUE_OUTPUT) ? 1 : 0);
}

int *graph_count_readers(const struct graph *g)
{
	int *count = xcalloc((size_t)g->values.n + 1, sizeof(int));

	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] >= 0)
				count[n->in[j]]++;
	}
	for (int i = 0; i < g->outputs.n; i++)
		count[g->outputs.v[i]]++;
	return count;
}
