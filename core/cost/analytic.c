/*
 * analytic.c - the analytic estimator (cost.h): no candidate is built. A
 * node costs max(FLOPs / peak, bytes / bandwidth) + a per-kernel overhead of
 * its target, and a candidate the sum over its nodes. Each target's
 * roofline (peak FLOP/s from a 256^3 MatMul, bandwidth from an Add over 4M
 * elements, overhead from a 4^3 MatMul) is measured once per machine by the
 * measuring estimator and kept in the cost cache; a target that cannot run
 * a probe alone borrows c's number for it. Symbolic dims count at the
 * sizes the search measures them at (tune.c).
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#include "../compile.h"
#include "cache.h"

struct roofline {
	const char *target;
	double flops, bytes, overhead;	/* per second, per second, seconds */
};

struct analytic {
	struct collagec_ctx *ctx;
	const struct compile_options *o;
	struct cost_cache *cache;
	struct cost_estimator *measure;
	VEC(struct roofline) lines;
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

/* FLOPs and bytes moved of one node. */
static void node_work(struct graph *g, const struct node *n, double *flops, double *bytes)
{
	double out = 0, in = 0;

	*bytes = 0;
	for (int j = 0; j < n->n_in; j++)
		if (n->in[j] >= 0) {
			const struct value *v = &g->values.v[n->in[j]];

			in = numel_at(g, v) > in ? numel_at(g, v) : in;
			*bytes += numel_at(g, v) * (double)dtype_size(v->dtype);
		}
	for (int j = 0; j < n->n_out; j++) {
		const struct value *v = &g->values.v[n->out[j]];

		out += numel_at(g, v);
		*bytes += numel_at(g, v) * (double)dtype_size(v->dtype);
	}
	switch (n->op) {
	case OP_MATMUL:
	case OP_GEMM: {
		const struct value *a = &g->values.v[n->in[0]];
		int transa = n->op == OP_GEMM && node_attr_int(n, "transA", 0);
		double k = a->shape.rank ? dim_at(g, a, transa ? a->shape.rank - 2
						  : a->shape.rank - 1) : 1;

		*flops = 2 * out * k;
		break;
	}
	case OP_CONV: {
		const struct value *w = &g->values.v[n->in[1]];

		/* weights are [M, C/group, k...]: each output reads C/group * k... inputs */
		*flops = 2 * out * numel_at(g, w) / (w->shape.rank ? dim_at(g, w, 0) : 1);
		break;
	}
	default:
		*flops = out > in ? out : in;
	}
}

/* Seconds of the probe on t (cached); NAN when t cannot run it alone. */
static double probe_time(struct analytic *an, const struct target *t, enum op op, int64_t r,
			 int64_t k)
{
	struct graph *g = cost_probe_graph(an->ctx, op, r, k, 1);
	struct dataflow df;
	struct cost_part part = { NULL, t, "probe" };
	struct cost_item it = { &df, 1, &part, NAN };
	double sec = NAN;

	dataflow_init(&df, g, g->arena);
	part.sg = cost_probe_single(an->ctx, &df, t, 0);
	if (part.sg) {
		struct cost_key key = cost_key_make(an->ctx, cost_item_key(g->arena, &it), t->str,
						    an->o->threads, an->o->cpu);

		if (!an->cache || cost_cache_get(an->cache, &key, &sec) != 1) {
			an->measure->estimate(an->measure, &it, 1);
			sec = it.cost;
			if (an->cache && isfinite(sec))
				cost_cache_put(an->cache, &key, sec, "roofline probe");
		}
	}
	graph_free(g);
	return isfinite(sec) && sec > 0 ? sec : NAN;
}

static const struct roofline *line_of(struct analytic *an, const struct target *t)
{
	struct roofline l = { t->str, NAN, NAN, NAN };
	double big, tiny, add;

	for (int i = 0; i < an->lines.n; i++)
		if (!strcmp(an->lines.v[i].target, t->str))
			return &an->lines.v[i];
	big = probe_time(an, t, OP_MATMUL, 256, 256);
	tiny = probe_time(an, t, OP_MATMUL, 4, 4);
	add = probe_time(an, t, OP_ADD, 2048, 2048);
	if (!isnan(tiny))
		l.overhead = tiny;
	if (!isnan(big))
		l.flops = 2.0 * 256 * 256 * 256 / (big > l.overhead ? big - l.overhead : big);
	if (!isnan(add))
		l.bytes = 3.0 * 2048 * 2048 * 4 / add;
	vec_push(&an->lines, l);
	return &an->lines.v[an->lines.n - 1];
}

static int analytic_estimate(struct cost_estimator *e, struct cost_item *items, int n)
{
	struct analytic *an = e->state;
	const struct roofline *c0 = NULL;

	for (int i = 0; i < n; i++)
		for (int p = 0; p < items[i].n_parts; p++)
			if (!strcmp(items[i].parts[p].target->kind->name, "c") && !c0)
				c0 = line_of(an, items[i].parts[p].target);
	for (int i = 0; i < n; i++) {
		double cost = 0;

		for (int p = 0; p < items[i].n_parts; p++) {
			const struct cost_part *pt = &items[i].parts[p];
			const struct roofline *l = line_of(an, pt->target);
			struct graph *g = items[i].df->g;
			double fl = l->flops, by = l->bytes, ov = l->overhead;

			/* what a target cannot show alone, it borrows from c */
			if (isnan(fl))
				fl = c0 && !isnan(c0->flops) ? c0->flops : 1e9;
			if (isnan(by))
				by = c0 && !isnan(c0->bytes) ? c0->bytes : 1e10;
			if (isnan(ov))
				ov = c0 && !isnan(c0->overhead) ? c0->overhead : 1e-6;
			indexset_for_each(x, &pt->sg->inside) {
				double f, b;

				node_work(g, &g->nodes.v[items[i].df->node[x]], &f, &b);
				cost += (f / fl > b / by ? f / fl : b / by) + ov;
			}
		}
		items[i].cost = cost;
		e->n_estimated++;
	}
	return 0;
}

static void analytic_free(struct cost_estimator *e)
{
	struct analytic *an = e->state;

	an->measure->free(an->measure);
	vec_free(&an->lines);
	free(an);
	free(e);
}

struct cost_estimator *cost_analytic_new(struct collagec_ctx *ctx,
					 const struct compile_options *o, struct cost_cache *cache)
{
	struct cost_estimator *e = xcalloc(1, sizeof(*e));
	struct analytic *an = xcalloc(1, sizeof(*an));

	an->ctx = ctx;
	an->o = o;
	an->cache = cache;
	an->measure = cost_measure_new(ctx, o, NULL);
	e->name = "analytic";
	e->estimate = analytic_estimate;
	e->free = analytic_free;
	e->ctx = ctx;
	e->state = an;
	return e;
}
