/*
 * target.c - target strings and the generic lowering.
 */
#include "target.h"

#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "../tir/tir_print.h"
#include "strategy.h"

const struct target_kind *target_kind_find(const struct target_kind *const *kinds, int n,
					   const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(kinds[i]->name, name))
			return kinds[i];
	return NULL;
}

static void list_kinds(struct strbuf *sb, const struct target_kind *const *kinds, int n)
{
	for (int i = 0; i < n; i++)
		sb_printf(sb, "%s%s", i ? ", " : "", kinds[i]->name);
}

struct target *target_parse(struct collagec_ctx *ctx, const struct target_kind *const *kinds,
			    int n, const char *str)
{
	struct target *t = arena_alloc(&ctx->arena, sizeof(*t));
	char *copy = arena_strdup(&ctx->arena, str), *save = NULL, *tok;
	struct strbuf canon = STRBUF_INIT;
	int nopt = 0;

	tok = strtok_r(copy, " \t", &save);
	if (!tok) {
		diag_error_status(ctx, STATUS_USAGE, "empty target string");
		return NULL;
	}
	t->kind = target_kind_find(kinds, n, tok);
	if (!t->kind) {
		struct strbuf sb = STRBUF_INIT;

		list_kinds(&sb, kinds, n);
		diag_error_status(ctx, STATUS_USAGE, "unknown target kind '%s' (known: %s)", tok,
				  sb_str(&sb));
		sb_release(&sb);
		return NULL;
	}
	for (const struct target_option *o = t->kind->options; o && o->name; o++) {
		t->text[nopt] = o->def_text;
		t->opt[nopt++] = o->def;
	}
	sb_puts(&canon, t->kind->name);
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(tok, '='), *end;
		const struct target_option *o;
		int k = 0;
		long long v;

		if (tok[0] != '-' || !eq) {
			sb_release(&canon);
			diag_error_status(ctx, STATUS_USAGE, "target '%s': expected -option=value, "
					  "got '%s'", t->kind->name, tok);
			return NULL;
		}
		*eq = 0;
		for (o = t->kind->options; o && o->name; o++, k++)
			if (!strcmp(o->name, tok + 1))
				break;
		if (!o || !o->name) {
			struct strbuf sb = STRBUF_INIT;

			for (o = t->kind->options; o && o->name; o++)
				sb_printf(&sb, "%s-%s", sb.len ? ", " : "", o->name);
			sb_release(&canon);
			diag_error_status(ctx, STATUS_USAGE, "target '%s' has no option '%s' "
					  "(options: %s)", t->kind->name, tok,
					  sb.len ? sb_str(&sb) : "none");
			sb_release(&sb);
			return NULL;
		}
		if (o->def_text) {
			if (!eq[1] || strchr(eq + 1, ',')) {
				sb_release(&canon);
				diag_error_status(ctx, STATUS_USAGE, "target '%s': -%s takes a word "
						  "(%s)", t->kind->name, o->name, o->help);
				return NULL;
			}
			t->text[k] = eq + 1;
			continue;
		}
		v = strtoll(eq + 1, &end, 10);
		if (*end || end == eq + 1 || v < o->min || v > o->max) {
			sb_release(&canon);
			diag_error_status(ctx, STATUS_USAGE, "target '%s': -%s takes an integer "
					  "from %lld to %lld", t->kind->name, o->name,
					  (long long)o->min, (long long)o->max);
			return NULL;
		}
		t->opt[k] = v;
	}
	{
		int k = 0;

		for (const struct target_option *o = t->kind->options; o && o->name; o++, k++) {
			if (o->def_text && strcmp(t->text[k], o->def_text) != 0)
				sb_printf(&canon, " -%s=%s", o->name, t->text[k]);
			else if (!o->def_text && t->opt[k] != o->def)
				sb_printf(&canon, " -%s=%lld", o->name, (long long)t->opt[k]);
		}
	}
	t->str = arena_strdup(&ctx->arena, sb_str(&canon));
	sb_release(&canon);
	return t;
}

int64_t target_opt(const struct target *t, const char *name)
{
	int k = 0;

	for (const struct target_option *o = t->kind->options; o && o->name; o++, k++)
		if (!strcmp(o->name, name))
			return t->opt[k];
	BUG("target '%s' has no option '%s'", t->kind->name, name);
}

const char *target_opt_text(const struct target *t, const char *name)
{
	int k = 0;

	for (const struct target_option *o = t->kind->options; o && o->name; o++, k++)
		if (!strcmp(o->name, name) && o->def_text)
			return t->text[k];
	BUG("target '%s' has no text option '%s'", t->kind->name, name);
}

int64_t target_opt_or(const struct target *t, const char *name, int64_t def)
{
	for (const struct target_option *o = t->kind->options; o && o->name; o++)
		if (!strcmp(o->name, name))
			return target_opt(t, name);
	return def;
}

bool target_fuses(const struct target *t)
{
	return !t->kind->relay_to_tir && target_opt_or(t, "fuse", 1) != 0;
}

/*
 * How many nodes from p->nodes[i] on fuse into one elementwise kernel: a
 * run of fusable nodes with one output shape, each reading an earlier one.
 */
static int fused_run(struct graph *g, const struct partition *p, int i)
{
	const struct node *first = &g->nodes.v[p->nodes[i]];
	int k = i + 1;

	if (!op_fusable_elementwise(g, first))
		return 1;
	for (; k < p->n_nodes; k++) {
		const struct node *n = &g->nodes.v[p->nodes[k]];
		bool reads = false;

		if (!op_fusable_elementwise(g, n) ||
		    !shape_eq(&node_out(g, n, 0)->shape, &node_out(g, first, 0)->shape))
			break;
		for (int j = 0; j < n->n_in && !reads; j++)
			for (int q = i; q < k && !reads; q++)
				reads = n->in[j] >= 0 && n->in[j] == g->nodes.v[p->nodes[q]].out[0];
		if (!reads)
			break;
	}
	return k - i;
}

/*
 * How many nodes after p->nodes[i] join its epilogue (0 when none): the
 * elementwise chain op_epilogue_accepts takes, in partition order.
 */
static int epilogue_run(struct graph *g, const struct partition *p, int i)
{
	const struct node *a = &g->nodes.v[p->nodes[i]];
	int k = i + 1;

	if (!op_is_epilogue_anchor(g, a))
		return 0;
	while (k < p->n_nodes &&
	       op_epilogue_accepts(g, a, p->nodes + i + 1, k - i - 1, &g->nodes.v[p->nodes[k]]))
		k++;
	return op_epilogue_trim(g, a, p->nodes + i + 1, k - i - 1);
}

/*
 * The arguments of node n's kernel with epilogue e (NULL: none) in the
 * order lower_params declares its parameters; sets k->args, n_args, n_inputs.
 */
static void kernel_args(struct graph *g, const struct node *n, const struct lower_epilogue *e,
			struct kernel *k)
{
	int na = 0, cap = n->n_in + n->n_out + 1 + (e ? e->n_extra + e->n_stored : 0);

	cap += e ? e->n_pro_extra : 0;
	k->args = arena_alloc(g->arena, sizeof(int) * (size_t)cap);
	for (int j = 0; e && j < e->n_pro_extra; j++)
		k->args[na++] = e->pro_extra[j];
	for (int j = 0; j < n->n_in; j++)
		if (n->in[j] >= 0 && !(j == 0 && e && e->n_pro))
			k->args[na++] = n->in[j];
	for (int j = 0; e && j < e->n_extra; j++)
		k->args[na++] = e->extra[j];
	k->n_inputs = na;
	for (int j = 0; j < n->n_out; j++)
		k->args[na++] = j == 0 && e && !e->keep_anchor ? e->final : n->out[j];
	for (int j = 0; e && j < e->n_stored; j++)
		k->args[na++] = e->stored[j];
	k->n_args = na;
}

/*
 * Whether the elementwise run p->nodes[i..i+run) is the prologue of the
 * node after it; fills e (its epilogue too) when it is.
 */
static bool plan_prologue(struct graph *g, const struct partition *p, int i, int run,
			  struct lower_epilogue *e)
{
	const struct node *a;
	int ne;

	if (i + run >= p->n_nodes || !op_fusable_elementwise(g, &g->nodes.v[p->nodes[i]]))
		return false;
	a = &g->nodes.v[p->nodes[i + run]];
	if (!op_is_prologue_anchor(g, a))
		return false;
	ne = epilogue_run(g, p, i + run);
	epilogue_plan(g, a, p->nodes + i + run + 1, ne, e);
	return prologue_plan(g, a, p->nodes + i, run, e);
}

const char *const lower_step_names[LOWER_STEP_COUNT] = {
	[LOWER_STEP_OPS] = "ops",
	[LOWER_STEP_STRATEGY] = "strategy",
	[LOWER_STEP_FUSE] = "fuse",
	[LOWER_STEP_SHARE] = "share",
	[LOWER_STEP_PARALLEL] = "parallel",
};

/* The ops step: kernel i lowers p->nodes[i] with its op's own lowering. */
static int lower_ops(struct graph *g, struct partition *p)
{
	for (int i = 0; i < p->n_nodes; i++) {
		struct node *n = &g->nodes.v[p->nodes[i]];
		struct kernel k = { 0 };
		int na = 0;

		k.name = arena_printf(g->arena, "k%d_%d_%s", p->id, i, op_info(n->op)->name);
		k.span = n->span;
		if (!(k.func = op_lower_node(g, n, k.name)))
			return -1;
		k.args = arena_alloc(g->arena, sizeof(int) * (size_t)(n->n_in + n->n_out + 1));
		for (int j = 0; j < n->n_in; j++)
			if (n->in[j] >= 0)
				k.args[na++] = n->in[j];
		k.n_inputs = na;
		for (int j = 0; j < n->n_out; j++)
			k.args[na++] = n->out[j];
		k.n_args = na;
		vec_push(&p->kernels, k);
	}
	return 0;
}

/*
 * The strategy step: the kernel of a node whose op has a strategy on this
 * kind is lowered again through it (one func, or variants).
 */
static int lower_strategy(struct graph *g, const struct target *t, struct partition *p)
{
	if (p->kernels.n != p->n_nodes)
		BUG("strategy step after fusion");
	for (int i = 0; i < p->n_nodes; i++) {
		struct node *n = &g->nodes.v[p->nodes[i]];
		const struct op_strategy *s = strategy_find(t->kind, n->op);

		if (s && strategy_lower(g, t, s, n, NULL, &p->kernels.v[i]) < 0)
			return -1;
	}
	return 0;
}

/* Whether node j of the partition reads an output of node i. */
static bool reads_from(struct graph *g, const struct partition *p, int i, int j)
{
	const struct node *a = &g->nodes.v[p->nodes[i]], *b = &g->nodes.v[p->nodes[j]];

	for (int x = 0; x < b->n_in; x++)
		for (int y = 0; y < a->n_out; y++)
			if (b->in[x] >= 0 && b->in[x] == a->out[y])
				return true;
	return false;
}

/*
 * Puts each elementwise consumer that can fuse with its producer right
 * after it, keeping a topological order. The graph's order may interleave
 * parallel chains (an exporter's Q, K and V projections: three Casts, then
 * three Muls, then three Adds), and fused_run and epilogue_run, reading
 * the partition in order, would give each of them its own kernel. A node is
 * pulled forward only when all of its producers in the partition are
 * placed, and only where the pair fuses: same output shape, or the
 * producer an epilogue anchor. p->kernels (one per node at this step)
 * follows the nodes.
 */
static void chain_order(struct graph *g, struct partition *p)
{
	int n = p->n_nodes, m = 0;
	int *prod = arena_alloc(g->arena, sizeof(int) * ((size_t)g->values.n + 1));
	int *order = arena_alloc(g->arena, sizeof(int) * ((size_t)n + 1));
	bool *done = arena_alloc(g->arena, (size_t)n + 1);
	int *nodes;
	struct kernel *ks;
	bool moved = false;

	for (int v = 0; v < g->values.n; v++)
		prod[v] = -1;
	for (int i = 0; i < n; i++) {
		const struct node *nd = &g->nodes.v[p->nodes[i]];

		done[i] = false;
		for (int y = 0; y < nd->n_out; y++)
			if (nd->out[y] >= 0)
				prod[nd->out[y]] = i;
	}
	for (int i = 0; i < n; i++) {
		int c = i;

		if (done[i])
			continue;
		while (c >= 0) {
			const struct node *a = &g->nodes.v[p->nodes[c]];
			int next = -1;

			order[m++] = c;
			done[c] = true;
			for (int j = i + 1; j < n && next < 0; j++) {
				const struct node *b = &g->nodes.v[p->nodes[j]];
				bool ready = true;

				if (done[j] || !op_fusable_elementwise(g, b) || !reads_from(g, p, c, j))
					continue;
				if (!op_is_epilogue_anchor(g, a) &&
				    !(op_fusable_elementwise(g, a) &&
				      shape_eq(&node_out(g, b, 0)->shape, &node_out(g, a, 0)->shape)))
					continue;
				for (int x = 0; x < b->n_in && ready; x++)
					ready = b->in[x] < 0 || prod[b->in[x]] < 0 || done[prod[b->in[x]]];
				if (ready)
					next = j;
			}
			c = next;
		}
	}
	if (m != n)
		BUG("chain order placed %d of %d nodes", m, n);
	for (int k = 0; k < n && !moved; k++)
		moved = order[k] != k;
	if (!moved)
		return;
	nodes = arena_alloc(g->arena, sizeof(int) * (size_t)n);
	ks = arena_alloc(g->arena, sizeof(*ks) * (size_t)n);
	for (int k = 0; k < n; k++) {
		nodes[k] = p->nodes[order[k]];
		ks[k] = p->kernels.v[order[k]];
	}
	p->nodes = nodes;	/* a new array: the search may hold the old one */
	memcpy(p->kernels.v, ks, sizeof(*ks) * (size_t)n);
}

/*
 * The fuse step (unless the target's -fuse is 0): each run of fusable
 * elementwise nodes becomes one kernel (op_lower_fused), and an anchor
 * (conv, matmul, gemm, pooling, reduction, softmax) is lowered again with
 * the elementwise chain after it as its epilogue and, for a reduction or
 * softmax, the run before it as its prologue (struct lower_epilogue). A
 * node that fuses with nothing keeps the strategy step's kernel.
 */
static int lower_fuse(struct graph *g, const struct target *t, struct partition *p)
{
	VEC(struct kernel) out = { 0 };

	if (p->kernels.n != p->n_nodes)
		BUG("fuse step twice");
	if (!target_opt_or(t, "fuse", 1))
		return 0;
	chain_order(g, p);
	for (int i = 0, run; i < p->n_nodes; i += run) {
		struct kernel k = { 0 };
		struct lower_epilogue epi, *e = NULL;
		struct node *n;
		const struct op_strategy *s;
		int ne = 0, ai = i;	/* the anchor's position */

		run = fused_run(g, p, i);
		if (plan_prologue(g, p, i, run, &epi)) {
			e = &epi;
			ai = i + run;
			ne = epi.n;
		} else if (run > 1) {
			k.name = arena_printf(g->arena, "k%d_%d_fused", p->id, i);
			k.func = op_lower_fused(g, p->nodes + i, run, k.name, &k.args, &k.n_args,
						&k.n_inputs);
			for (int q = i; q < i + run; q++)
				span_add(g, &k.span, &g->nodes.v[p->nodes[q]].span);
			k.func->span = k.span;
			vec_push(&out, k);
			continue;
		} else if ((ne = epilogue_run(g, p, i)) > 0) {
			e = &epi;
			epilogue_plan(g, &g->nodes.v[p->nodes[i]], p->nodes + i + 1, ne, e);
		} else {
			vec_push(&out, p->kernels.v[i]);
			continue;
		}
		n = &g->nodes.v[p->nodes[ai]];
		s = strategy_find(t->kind, n->op);
		for (int q = i; q <= ai + ne; q++)
			span_add(g, &k.span, &g->nodes.v[p->nodes[q]].span);
		k.name = arena_printf(g->arena, "k%d_%d_%s_fused", p->id, i, op_info(n->op)->name);
		run = ai - i + 1 + ne;
		if (s ? strategy_lower(g, t, s, n, e, &k) < 0
		      : !(k.func = op_lower_node_epi(g, n, k.name, e))) {
			vec_free(&out);
			return -1;
		}
		if (!s)
			k.func->span = k.span;
		kernel_args(g, n, e, &k);
		vec_push(&out, k);
	}
	vec_free(&p->kernels);
	p->kernels.v = out.v;
	p->kernels.n = out.n;
	p->kernels.cap = out.cap;
	return 0;
}

int target_lower_step(struct graph *g, const struct target *t, struct partition *p,
		      enum lower_step s)
{
	const struct target_kind *k = t->kind;

	switch (s) {
	case LOWER_STEP_OPS:
		return k->relay_to_tir ? k->relay_to_tir(g, t, p) : lower_ops(g, p);
	case LOWER_STEP_STRATEGY:
		return k->relay_to_tir ? 0 : lower_strategy(g, t, p);
	case LOWER_STEP_FUSE:
		return k->relay_to_tir ? 0 : lower_fuse(g, t, p);
	case LOWER_STEP_SHARE:
		return 0;	/* one step over every partition: share_constants */
	case LOWER_STEP_PARALLEL:
		return k->plan_parallel ? k->plan_parallel(g, t, p) : 0;
	default:
		BUG("lowering step %d", (int)s);
	}
}

int target_lower_generic(struct graph *g, const struct target *t, struct partition *p)
{
	if (lower_ops(g, p) < 0 || lower_strategy(g, t, p) < 0)
		return -1;
	return lower_fuse(g, t, p);
}

void kernel_comment(const struct kernel *k, struct strbuf *sb)
{
	sb_puts(sb, "\n/*");
	for (int i = 0; i < k->span.n; i++)
		sb_printf(sb, " %s(%s)", k->span.names[i], k->span.types[i]);
	for (int i = 0; i < k->n_variants; i++)
		sb_printf(sb, "%s%s if %s", i ? "," : " -", k->variants[i].impl,
			  k->variants[i].cond ? k->variants[i].cond_text : "always");
	sb_puts(sb, " */\n");
}

void kernel_dispatcher(const struct kernel *k, const struct tir_dialect *d, struct strbuf *sb)
{
	sb_printf(sb, "RT_KERNEL void %s(void *const *bufs, const int64_t *syms, int threads)\n{\n",
		  k->name);
	for (int i = 0; i < k->n_variants; i++) {
		const struct kernel_variant *v = &k->variants[i];

		if (v->cond) {
			sb_puts(sb, "\tif (");
			tir_print_expr(v->cond, d, sb);
			sb_printf(sb, ") {\n\t\t%s(bufs, syms, threads);\n\t\treturn;\n\t}\n",
				  v->func->name);
		} else {
			sb_printf(sb, "\t%s(bufs, syms, threads);\n", v->func->name);
		}
	}
	sb_puts(sb, "}\n");
}
