/*
 * analytic.c - the analytic estimator (cost.h): no candidate is built. A
 * node costs max(FLOPs / peak, bytes / bandwidth) + a per-kernel overhead of
 * its target (times the library calls the node makes, where its kind says:
 * target_kind.node_calls), and a candidate the sum over its nodes. Each target's
 * roofline (peak FLOP/s from a 256^3 MatMul, bandwidth from an Add over 4M
 * elements, overhead from a 4^3 MatMul) is measured once per machine by the
 * measuring estimator, all targets' probes in one go, and kept in the cost
 * cache; a target that cannot run a probe alone borrows c's number for it.
 * Symbolic dims count at the sizes the search measures them at (tune.c).
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#include "cache.h"

struct roofline {
	const char *target;
	double flops, bytes, overhead;	/* per second, per second, seconds */
};

/*
 * The probes of the rooflines of some targets: those the cost cache has
 * are read (it[k].cost), the rest are todo (it[owner[j]] is todo[j]).
 */
struct probe_set {
	struct graph *g[3];
	struct dataflow df[3];
	VEC(const struct target *) ts;
	struct cost_item *it;
	struct cost_part *pp;
	struct cost_key *keys;
	VEC(struct cost_item) todo;
	VEC(int) owner;
};

struct analytic {
	struct collagec_ctx *ctx;
	struct measure_options o;
	struct cost_cache *cache;
	struct cost_estimator *measure;
	VEC(struct roofline) lines;
	struct probe_set pending;	/* calibration begun, not yet measured */
};

/* Dim k of v at the tuning sizes. */
static double dim_at(struct graph *g, const struct value *v, int k)
{
	return (double)cost_dim_at(g, v->shape.d[k]);
}

static double numel_at(struct graph *g, const struct value *v)
{
	double n = 1;

	for (int i = 0; i < v->shape.rank; i++)
		n *= dim_at(g, v, i);
	return n;
}

/* Whether n reads only as many elements of its input 0 as it writes. */
static bool reads_a_part(const struct node *n)
{
	return n->op == OP_GATHER || n->op == OP_GATHERELEMENTS || n->op == OP_GATHERND ||
	       n->op == OP_SLICE;
}

/*
 * FLOPs and bytes moved of one node. A Gather or Slice reads no more of its
 * data than it writes (an embedding lookup of one token reads one row of the
 * table, not the table), unless every input moves whole: opencl copies each
 * input to the device every run (a decoder's 4 MB table, 6.8 ms a token).
 */
static void node_work(struct graph *g, const struct node *n, bool whole, double *flops,
		      double *bytes)
{
	double out = 0, in = 0, written = 0;

	*bytes = 0;
	for (int j = 0; j < n->n_out; j++)
		written += numel_at(g, &g->values.v[n->out[j]]);
	for (int j = 0; j < n->n_in; j++)
		if (n->in[j] >= 0) {
			const struct value *v = &g->values.v[n->in[j]];
			double k = numel_at(g, v);

			if (j == 0 && !whole && reads_a_part(n) && k > written)
				k = written;
			in = k > in ? k : in;
			*bytes += k * (double)dtype_size(v->dtype);
		}
	for (int j = 0; j < n->n_out; j++) {
		const struct value *v = &g->values.v[n->out[j]];

		out += numel_at(g, v);
		*bytes += numel_at(g, v) * (double)dtype_size(v->dtype);
	}
	switch (n->op) {
	case OP_MATMUL:
	case OP_GEMM:
	case OP_MATMULINTEGER:
	case OP_QLINEARMATMUL: {
		const struct value *a = &g->values.v[n->in[0]];
		int transa = n->op == OP_GEMM && node_attr_int(n, "transA", 0);
		double k = a->shape.rank ? dim_at(g, a, transa ? a->shape.rank - 2
						  : a->shape.rank - 1) : 1;

		*flops = 2 * out * k;
		break;
	}
	case OP_CONV:
	case OP_CONVINTEGER:
	case OP_QLINEARCONV: {
		/* an integer multiply-add counted as a float one: the float roofline */
		const struct value *w = &g->values.v[n->in[n->op == OP_QLINEARCONV ? 3 : 1]];

		/* weights are [M, C/group, k...]: each output reads C/group * k... inputs */
		*flops = 2 * out * numel_at(g, w) / (w->shape.rank ? dim_at(g, w, 0) : 1);
		break;
	}
	default:
		*flops = out > in ? out : in;
	}
}

double cost_node_flops(struct graph *g, const struct node *n)
{
	double f, b;

	node_work(g, n, false, &f, &b);
	return f;
}

/* The three probes of a roofline: a big MatMul, a tiny one, a big Add. */
static const struct {
	enum op op;
	int64_t r, k;
} probes[3] = { { OP_MATMUL, 256, 256 }, { OP_MATMUL, 4, 4 }, { OP_ADD, 2048, 2048 } };

/* The probes of ts (which have no roofline yet) into ps. */
static void probes_begin(struct cost_estimator *e, struct probe_set *ps)
{
	struct analytic *an = e->state;
	struct arena *a = &an->ctx->arena;
	int nt = ps->ts.n;

	ps->it = arena_alloc(a, sizeof(*ps->it) * (size_t)(3 * nt));
	ps->pp = arena_alloc(a, sizeof(*ps->pp) * (size_t)(3 * nt));
	ps->keys = arena_alloc(a, sizeof(*ps->keys) * (size_t)(3 * nt));
	for (int q = 0; q < 3; q++) {
		ps->g[q] = cost_probe_graph(an->ctx, probes[q].op, probes[q].r, probes[q].k, 1);
		dataflow_init(&ps->df[q], ps->g[q], ps->g[q]->arena);
	}
	for (int t = 0; t < nt; t++)
		for (int q = 0; q < 3; q++) {
			const struct target *tg = ps->ts.v[t];
			int k = 3 * t + q;
			double sec;

			ps->pp[k] = (struct cost_part){ cost_probe_single(an->ctx, &ps->df[q], tg, 0),
							tg, "probe" };
			ps->it[k] = (struct cost_item){ &ps->df[q], 1, &ps->pp[k], NAN, 0 };
			if (!ps->pp[k].sg)
				continue;
			ps->keys[k] = cost_key_make(an->ctx, cost_item_key(a, &ps->it[k]), tg->str,
						    an->o.threads, an->o.cpu);
			if (an->cache) {
				struct cost_meta meta = { NAN, NULL, 0, NULL };

				if (cost_cache_get_meta(an->cache, &ps->keys[k], &sec, &meta) == 1) {
					ps->it[k].cost = sec;
					cost_charge_hit(e, &meta);
					continue;
				}
			}
			vec_push(&ps->todo, ps->it[k]);
			vec_push(&ps->owner, k);
		}
}

/*
 * The todo probes measured (their costs set; NAN: not measured, each
 * charged each_us): stored with this charge (cost.h: origin), the rooflines
 * made, ps released.
 */
static void probes_end(struct cost_estimator *e, struct probe_set *ps, int64_t each_us)
{
	struct analytic *an = e->state;
	struct cost_meta meta = { NAN, NULL, each_us, e->origin };
	bool store = an->cache && ps->todo.n && cost_cache_begin(an->cache) == 0;

	for (int j = 0; j < ps->todo.n; j++) {
		struct cost_item *x = &ps->todo.v[j];

		ps->it[ps->owner.v[j]].cost = x->cost;
		if (isnan(x->cost))
			continue;
		e->charged_us += each_us;
		/* one that could not run is kept too: not measured again */
		if (store)
			cost_cache_put_meta(an->cache, &ps->keys[ps->owner.v[j]], x->cost,
					    "roofline probe", &meta);
	}
	if (store)
		cost_cache_commit(an->cache);
	for (int t = 0; t < ps->ts.n; t++) {
		struct roofline l = { ps->ts.v[t]->str, NAN, NAN, NAN };
		double sec[3];

		for (int q = 0; q < 3; q++) {
			sec[q] = ps->it[3 * t + q].cost;
			if (!isfinite(sec[q]) || sec[q] <= 0)
				sec[q] = NAN;
		}
		if (!isnan(sec[1]))
			l.overhead = sec[1];
		if (!isnan(sec[0]))
			l.flops = 2.0 * 256 * 256 * 256 /
				  (sec[0] > l.overhead ? sec[0] - l.overhead : sec[0]);
		if (!isnan(sec[2]))
			l.bytes = 3.0 * 2048 * 2048 * 4 / sec[2];
		vec_push(&an->lines, l);
	}
	for (int q = 0; q < 3; q++)
		graph_free(ps->g[q]);
	vec_free(&ps->ts);
	vec_free(&ps->todo);
	vec_free(&ps->owner);
	memset(ps, 0, sizeof(*ps));
}

/*
 * Adds t to ps->ts unless it has a roofline or is there. A kind that
 * cannot run here (no GPU) is not probed: its roofline is the kind's
 * nominal one.
 */
static void probe_target(struct analytic *an, struct probe_set *ps, const struct target *t)
{
	const struct target_kind *k = t->kind;

	for (int i = 0; i < an->lines.n; i++)
		if (!strcmp(an->lines.v[i].target, t->str))
			return;
	for (int i = 0; i < ps->ts.n; i++)
		if (ps->ts.v[i] == t)
			return;
	if (k->cannot_run && k->cannot_run()) {
		struct roofline l = { t->str, k->nominal_flops > 0 ? k->nominal_flops : NAN,
				      k->nominal_bytes > 0 ? k->nominal_bytes : NAN,
				      k->nominal_overhead > 0 ? k->nominal_overhead : NAN };

		vec_push(&an->lines, l);
		return;
	}
	vec_push(&ps->ts, t);
}

/*
 * The rooflines of every target of items that has none yet: their probes
 * from the cost cache, the rest measured together in one estimate call (a
 * bench model per target, built side by side), then stored.
 */
static void add_lines(struct cost_estimator *e, struct cost_item *items, int n)
{
	struct analytic *an = e->state;
	struct probe_set ps = { 0 };
	int64_t each = 0;
	double t0;

	for (int i = 0; i < n; i++)
		for (int p = 0; p < items[i].n_parts; p++)
			probe_target(an, &ps, items[i].parts[p].target);
	if (!ps.ts.n)
		return;
	probes_begin(e, &ps);
	t0 = time_now();
	if (ps.todo.n && an->measure->estimate(an->measure, ps.todo.v, ps.todo.n) == 0)
		each = (int64_t)((time_now() - t0) * 1e6) / ps.todo.n;
	else	/* not measured: no roofline of these */
		for (int j = 0; j < ps.todo.n; j++)
			ps.todo.v[j].cost = NAN;
	probes_end(e, &ps, each);
}

/*
 * The calibration hooks (cost.h): the probes of ts's rooflines that are to
 * be measured, kept in an->pending until they come back.
 */
static int analytic_calibration(struct cost_estimator *e, struct target *const *ts, int nt,
				struct cost_item **items)
{
	struct analytic *an = e->state;

	if (an->pending.ts.n)
		BUG("analytic calibration begun twice");
	for (int t = 0; t < nt; t++)
		probe_target(an, &an->pending, ts[t]);
	*items = NULL;
	if (!an->pending.ts.n)
		return 0;
	probes_begin(e, &an->pending);
	*items = an->pending.todo.v;
	return an->pending.todo.n;
}

static void analytic_calibrated(struct cost_estimator *e, int64_t each_us)
{
	struct analytic *an = e->state;

	if (an->pending.ts.n)
		probes_end(e, &an->pending, each_us);
}

static const struct roofline *line_of(struct analytic *an, const struct target *t)
{
	for (int i = 0; i < an->lines.n; i++)
		if (!strcmp(an->lines.v[i].target, t->str))
			return &an->lines.v[i];
	BUG("no roofline for target '%s'", t->str);
}

const char *cost_item_class(struct arena *a, const struct cost_item *it)
{
	const struct cost_part *pt = &it->parts[0];
	struct graph *g = it->df->g;
	const struct node *top = NULL;
	double most = -1;

	indexset_for_each(x, &pt->sg->inside) {
		const struct node *n = &g->nodes.v[it->df->node[x]];
		double f, b;

		node_work(g, n, false, &f, &b);
		if (f > most) {
			most = f;
			top = n;
		}
	}
	return arena_printf(a, "%s:%s", pt->target->str, top ? op_info(top->op)->name : "-");
}

/* Item it's roofline time at g's sizes (c0: the c target's line, or NULL). */
static double item_time(struct analytic *an, const struct roofline *c0,
			const struct cost_item *it)
{
	struct graph *g = it->df->g;
	double cost = 0;

	for (int p = 0; p < it->n_parts; p++) {
		const struct cost_part *pt = &it->parts[p];
		const struct roofline *l = line_of(an, pt->target);
		double fl = l->flops, by = l->bytes, ov = l->overhead;
		bool whole = !strcmp(pt->target->kind->name, "opencl");
		/*
		 * a library kind (pattern rules) nothing calibrates here (it
		 * cannot run) pays its overhead once a part: a part is one
		 * call, however many nodes it fuses
		 */
		bool once = pt->target->kind->cannot_run && pt->target->kind->patterns &&
			    pt->target->kind->cannot_run();

		/* what a target cannot show alone, it borrows from c */
		if (isnan(fl))
			fl = c0 && !isnan(c0->flops) ? c0->flops : 1e9;
		if (isnan(by))
			by = c0 && !isnan(c0->bytes) ? c0->bytes : 1e10;
		if (isnan(ov))
			ov = c0 && !isnan(c0->overhead) ? c0->overhead : 1e-6;
		indexset_for_each(x, &pt->sg->inside) {
			double f, b;

			const struct node *nd = &g->nodes.v[it->df->node[x]];
			double calls = pt->target->kind->node_calls ?
				       pt->target->kind->node_calls(g, nd, cost_dim_at) : 1;

			node_work(g, nd, whole, &f, &b);
			cost += (f / fl > b / by ? f / fl : b / by) + (once ? 0 : ov * calls);
		}
		cost += once ? ov : 0;
	}
	return cost;
}

static int analytic_estimate(struct cost_estimator *e, struct cost_item *items, int n)
{
	struct analytic *an = e->state;
	const struct roofline *c0 = NULL;

	add_lines(e, items, n);
	for (int i = 0; i < n; i++)
		for (int p = 0; p < items[i].n_parts; p++)
			if (!strcmp(items[i].parts[p].target->kind->name, "c") && !c0)
				c0 = line_of(an, items[i].parts[p].target);
	for (int i = 0; i < n; i++) {
		struct graph *g = items[i].df->g;
		double t = item_time(an, c0, &items[i]), tw = t;

		/* and at the wide sizes (graph.tune_wide) */
		if (g->tune_wide > 1) {
			g->at_wide = true;
			tw = item_time(an, c0, &items[i]);
			g->at_wide = false;
		}
		items[i].cost = cost_tune_combine(g, t, tw);
		e->n_estimated++;
	}
	return 0;
}

static void analytic_free(struct cost_estimator *e)
{
	struct analytic *an = e->state;

	for (int q = 0; q < 3 && an->pending.ts.n; q++)
		graph_free(an->pending.g[q]);
	vec_free(&an->pending.ts);
	vec_free(&an->pending.todo);
	vec_free(&an->pending.owner);
	an->measure->free(an->measure);
	vec_free(&an->lines);
	free(an);
	free(e);
}

struct cost_estimator *cost_analytic_new(struct collagec_ctx *ctx,
					 const struct measure_options *o, struct cost_cache *cache)
{
	struct cost_estimator *e = xcalloc(1, sizeof(*e));
	struct analytic *an = xcalloc(1, sizeof(*an));

	an->ctx = ctx;
	an->o = *o;
	an->cache = cache;
	an->measure = cost_measure_new(ctx, o, NULL);
	e->name = "analytic";
	e->estimate = analytic_estimate;
	e->calibration = analytic_calibration;
	e->calibrated = analytic_calibrated;
	e->free = analytic_free;
	e->ctx = ctx;
	e->state = an;
	return e;
}
