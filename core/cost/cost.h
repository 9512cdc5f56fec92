/*
 * cost.h - what a candidate partition costs: a double in seconds, +INFINITY
 * when it cannot be built or run, NAN when unknown. Estimators fill in the
 * costs of a list of candidates at once (so a measuring one can build and
 * time many together); the search never compares a NAN.
 *
 *	struct cost_estimator *e = cost_mock_new(ctx, "c=3,blas=1");
 *	e->estimate(e, g, items, n);	// items[i].cost set
 *	e->free(e);
 */
#ifndef COLLAGEC_COST_H
#define COLLAGEC_COST_H

#include <math.h>

#include "../collage/subgraph.h"
#include "../target/target.h"

/* One part of a measured item: a sub-graph placed on a target. */
struct cost_part {
	const struct subgraph *sg;
	const struct target *target;
	const char *rule;
};

/*
 * What an estimator is asked: one candidate (n_parts 1), a chain of parts on
 * different targets run together (a transition probe), or a whole placement
 * of the graph (a plan, see estimate_plans). The cost is the time of all
 * parts together.
 */
struct cost_item {
	const struct dataflow *df;
	int n_parts;
	const struct cost_part *parts;	/* n_parts (the caller's storage) */
	double cost;			/* out: seconds, +INFINITY, or NAN */
	double charge;			/* out (measure): seconds its measuring took,
					   its share of its bench model's build
					   and run; 0 when unknown */
};

struct cost_estimator {
	const char *name;		/* "measure", "analytic", "mock" */
	/* Sets items[i].cost for every item. 0, or -1 after a diagnostic. */
	int (*estimate)(struct cost_estimator *e, struct cost_item *items, int n);
	/*
	 * (optional) seconds added when a value crosses from one target to
	 * another: pen[a * nt + b] for ts[a] -> ts[b], 0 on the diagonal and
	 * where unknown; with n_extra other items measured alongside (their
	 * costs set, NAN when not measured), each charged *extra_us. 0, or -1
	 * after a diagnostic.
	 */
	int (*transitions)(struct cost_estimator *e, struct target *const *ts, int nt,
			   double *pen, struct cost_item *extra, int n_extra, int64_t *extra_us);
	/*
	 * (optional) Calibration measured by another estimator: the items
	 * (owned by e) it would measure to know ts (the analytic estimator's
	 * roofline probes the cost cache lacks), their number returned; the
	 * other measures them (transitions' extra items) and calibrated()
	 * hands them back, each charged each_us (NAN costs: not measured).
	 */
	int (*calibration)(struct cost_estimator *e, struct target *const *ts, int nt,
			   struct cost_item **items);
	void (*calibrated)(struct cost_estimator *e, int64_t each_us);
	/*
	 * (optional) Times whole plans end to end, each as one model built
	 * and run on its own, with part_cost filled when given; an estimator
	 * without it cannot check plans. 0, or -1 after a diagnostic.
	 */
	int (*estimate_plans)(struct cost_estimator *e, struct cost_item *items, int n);
	void (*free)(struct cost_estimator *e);
	struct collagec_ctx *ctx;
	int n_estimated;		/* items estimated so far */
	/*
	 * The search measuring through it (its hex id, or NULL), set by the
	 * search: what the estimator measures for itself and keeps in the
	 * cost cache (rooflines, transition penalties) carries it, with what
	 * measuring it cost. charged_us adds up that cost for this origin:
	 * of what it measured now, and of the rows it finds that this origin
	 * measured before, so a recompile from the cache is charged what the
	 * first compile was. The search reads and resets it.
	 */
	const char *origin;
	int64_t charged_us;
	void *state;
};

/*
 * The mock estimator for tests: a candidate of k nodes on target t costs
 * w(t) * (1 + 0.9 + ... + 0.9^(k-1)), with w from spec "kind=w,kind=w"
 * (kinds not named cost 1); no transition cost. Owned; e->free(e).
 */
struct cost_estimator *cost_mock_new(struct collagec_ctx *ctx, const char *spec);


/*
 * The structure of an item as text, what decides its cost and nothing else:
 * its targets, and per inside node its op, attributes, output dtypes and
 * shapes, where each input comes from (an inside node, a constant of a
 * dtype and shape (small constants with their values), or the k-th outside
 * value), which outputs leave, and the size each symbol of those shapes is
 * measured at (g->tune). Equal text = measured once.
 */
const char *cost_item_structure(struct arena *a, const struct cost_item *it);
/*
 * The last-level cache's size in bytes: $COLLAGEC_LLC_BYTES, else the
 * system's, else 32 MiB.
 */
size_t cost_llc_bytes(void);
/*
 * Whether the model's constants (df->const_bytes) are more than the
 * last-level cache holds, so that a whole run brings each kernel's weights
 * back from memory: the measuring estimator then times candidates with
 * their weights evicted, and the structure (and key) of every candidate
 * says so.
 */
bool cost_weights_cold(const struct dataflow *df);
/* SHA-256 of cost_item_structure(), in hex (arena). */
const char *cost_item_key(struct arena *a, const struct cost_item *it);
/* SHA-256 of a string, in hex (arena). */
const char *cost_sha256_hex(struct arena *a, const char *s);

/*
 * A probe graph (arena values; graph_free() it): x[r,k] float32 through
 * n_nodes nodes of op (MatMul: with a constant [k,k]; Add: with a constant
 * [r,k]), the last one the graph output. Node i is dataflow index i.
 */
struct graph *cost_probe_graph(struct collagec_ctx *ctx, enum op op, int64_t r, int64_t k,
			       int n_nodes);
/* The candidate of t's default rule holding node idx of df alone, or NULL. */
const struct subgraph *cost_probe_single(struct collagec_ctx *ctx, const struct dataflow *df,
					 const struct target *t, int idx);

/*
 * The sizes the search measures symbolic dims at (tune.c), into g->tune:
 * each symbol a graph input binds takes the size named[] gives
 * ("NAME=VALUE", --tune-shape; the last one of a name wins), else the
 * default: 1 for a batch (a name containing "batch", or N, B, bs; else,
 * unless the name contains "seq" or "len", the first dim of a graph input),
 * 128 for any other symbol, halved while an assumption of the model
 * (graph.checks) fails. Derived symbols follow from them, data symbols are
 * 1. When MatMuls or Gemms matrix-vector-like at a defaulted batch of 1
 * hold a quarter of the model's FLOPs, graph.tune_wide is the batch (32,
 * halved while the model's FLOPs there pass 64 M or an assumption fails)
 * every candidate is measured at a second time: a cost is then the time at
 * the sizes plus 1/tune_wide of the time at the wide ones (tune.wide).
 * After passes, before the search. 0, or -1 after a usage diagnostic
 * (not NAME=VALUE, a size outside 1..2^31, a name that is no such symbol,
 * named sizes that break an assumption of the model).
 */
int cost_tune_shapes(struct graph *g, const char *const *named, int n);
/*
 * d at g's tuning sizes (every symbol 1 when g has none), as a symbolic
 * integer: c may be negative; saturates at +-(DIM_LIMIT + 1).
 */
int64_t cost_dim_at(const struct graph *g, struct dim d);
/*
 * What an estimator combines of an item's times at the tuning sizes (t)
 * and, where g->tune_wide, at the wide ones (tw): t + tw / tune_wide, +inf
 * when either is, NAN when either is unknown; t alone without tune_wide.
 */
double cost_tune_combine(const struct graph *g, double t, double tw);
/* The FLOPs of node n of g at g's tuning sizes (analytic.c's count). */
double cost_node_flops(struct graph *g, const struct node *n);

/*
 * How the measuring estimator builds and times (the driver fills it in;
 * the estimators know nothing else of a compile): bench models are built
 * with cc, cflags and the --cpu level's flags, their objects kept in the
 * objects directory (NULL: one of the measuring directory's own, gone with
 * it), jobs C compiler runs at once, and timed with threads threads.
 */
struct measure_options {
	const char *cc;			/* C compiler command */
	const char *cflags;		/* optimisation flags for generated code */
	const char *cpu;		/* --cpu level (emit_cpu_flags) */
	const char *objects;		/* object cache directory, or NULL */
	int threads;			/* threads costs are measured with (the key) */
	int jobs;			/* C compiler runs at once */
	bool progress;			/* a progress bar on standard error */
	double budget;			/* the search's budget, seconds (0: none): the
					   bar's time left is at most what is left of it */
	double timeout;			/* seconds a bench model may run; 0 = 120 */
};

/*
 * The measuring estimator (measure.c): builds items into shared objects
 * (bench models: one cc run for many, o->jobs at once) through the same
 * lowering and emitting as a compiled model (emit.h), times them in a
 * worker process with o->threads threads, and measures the transition
 * between each pair of targets once (kept in cache when given). Owned.
 */
struct cost_cache;
struct cost_estimator *cost_measure_new(struct collagec_ctx *ctx, const struct measure_options *o,
					struct cost_cache *cache);
/*
 * Measuring workers (measure.c): with path set (the command line tool sets
 * /proc/self/exe), each runs as that program afresh, "PATH
 * --measure-worker SPEC", whose main calls cost_measure_worker(SPEC) and
 * exits with what it returns; unset, workers are forked from the compiler.
 */
void cost_set_worker_exe(const char *path);
int cost_measure_worker(const char *spec_path);

/*
 * The analytic estimator (analytic.c): FLOPs and bytes of each node against
 * a per-target roofline measured once per machine (kept in the cost cache).
 */
struct cost_estimator *cost_analytic_new(struct collagec_ctx *ctx,
					 const struct measure_options *o, struct cost_cache *cache);

/*
 * The calibration class of a one-part item (analytic.c): its target string
 * and the op of its node with the most FLOPs, "blas:Gemm" (arena). The
 * measured-to-analytic ratios of one class are alike; the search learns
 * them as it measures (calib.c).
 */
const char *cost_item_class(struct arena *a, const struct cost_item *it);

/*
 * Calibration (calib.c): how far the analytic estimate of a class is from
 * what its candidates measure, learned from (estimate, seconds) samples.
 * Per class, the ratio's geometric mean and spread, shrunk towards its
 * target's when the class has few samples; a target with none trusts the
 * analytic estimate, with a wide interval. Samples are sorted before they
 * are summed, so the same samples in any order give the same doubles.
 *
 *	struct calib *c = calib_new();
 *	calib_add(c, "blas:Gemm", est, measured);  ...
 *	calib_fit(c);
 *	double f, e = calib_apply(c, "blas:Gemm", est, &f);	// likely in [e / f, e * f]
 */
struct calib;
struct calib *calib_new(void);
/* Adds one sample; ignored unless both are finite and above 0. */
void calib_add(struct calib *c, const char *cls, double estimate, double seconds);
void calib_fit(struct calib *c);
/* The calibrated estimate of estimate in class cls, and *factor (>= 1) its uncertainty. */
double calib_apply(const struct calib *c, const char *cls, double estimate, double *factor);
void calib_free(struct calib *c);

#endif
