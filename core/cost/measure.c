/*
 * measure.c - the measuring estimator (cost.h): what a candidate costs is
 * what its kernels take, built and run the way the final model will be.
 *
 * The items of one target go into one "bench model": a graph that holds a
 * copy of each item's nodes side by side (an item's outside values become
 * model inputs, what leaves it model outputs, constants are shared), one
 * partition per part, lowered through the same hooks, planned, emitted and
 * linked as any model (one cc run for many candidates; several bench
 * models are built at once with -j). A worker process then loads it, feeds
 * random inputs (integers 0, so indices stay in range; symbolic dims at the
 * sizes the search measures them at, tune.c),
 * runs it with per-kernel profiling on, warm-up then repeats, and reports
 * per item the median over runs of the sum of its kernels' times (where
 * the graph has wide sizes, graph.tune_wide, the same bench model is timed
 * again at those and the two combined, cost_tune_combine; when
 * the model's constants are more than the last-level cache, every run
 * starts with the caches evicted but for the inputs: in the model each
 * kernel's weights come from memory; cost_weights_cold). A bench
 * model that fails to build, crashes, hangs or returns wrongly shaped
 * outputs is split in halves and retried, down to single items, which then
 * cost +inf; nothing of that reaches the user as an error.
 *
 * Transitions: for each ordered pair of targets that both run a MatMul
 * alone, a probe runs MatMul -> MatMul with the two on the two targets, and
 * each alone; what the chain costs beyond the two is the transition
 * penalty (never below 0), kept in the cost cache like any cost.
 */
#include "cost.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/loader.h"
#include "../emit/emit.h"
#include "cache.h"

#define WORKER_TIMEOUT_S 120	/* a bench model's whole run, warm-up included */
#define BATCH_MAX 48		/* items in one bench model */
/*
 * Bytes of constants in one bench model, at most, but for an item larger
 * alone: its worker maps them and packs most again at open (a 2 GiB
 * model's two 1 GiB MatMuls in one bench model took its worker to 1.54
 * times the model's weights).
 */
#define BATCH_BYTES ((size_t)256 << 20)
#define WHOLE_MAX_RUNS 4095	/* runs of a whole plan within its 0.1 s */
#define MIN_RUNS 5		/* runs of a batch before it may settle */
#define SETTLE 0.03		/* a settled median's interval, a fraction of it */
#define PLANS_OPEN_BYTES (256u << 20)	/* plans' weights kept open at once, at most */
/*
 * A plan whose runs take more than this many times the best plan's median
 * is timed no further: it cannot win, and BERT-Base's plan with opencl's
 * MatMuls (PoCL) ran for minutes through phase 5's four rounds.
 */
#define PLAN_GIVE_UP 2.0

struct measure {
	struct collagec_ctx *ctx;
	struct measure_options o;
	struct cost_cache *cache;
	struct link_options lo;
	int threads, jobs;
	bool cold;			/* the model's constants are more than the
					   last-level cache: kernels measured with
					   their weights evicted (evict()) */
	double timeout;			/* seconds a worker may take */
	bool progress;
	char *dir;			/* owned temp directory */
	int n_built;			/* bench models built, for file names */
	bool first_built;		/* the first build is done: rt.o is cached */
	bool said_workers;		/* -v has said how workers run */
	/* progress */
	int done, total;
	double t0;
	/* transition penalties, nt x nt, filled on first use */
	const struct target **tt;
	double *pen;
	int n_tt;
};

/* ---- the bench model ---- */

struct batch {
	struct cost_item **items;
	int n;
	char *so;			/* built shared object (owned), NULL before */
	char *weights;			/* its weights file, beside it */
	bool failed;			/* build failed */
	pid_t pid;			/* building child */
	bool whole;			/* one plan: timed by whole runs, profiling off */
};

struct batches {
	VEC(struct batch *);
};

/* A value of the bench graph standing for v of the item's graph. */
static int copy_value(struct graph *bg, struct graph *g, int v, const char *prefix)
{
	const struct value *src = &g->values.v[v];
	int id = graph_add_value(bg, arena_printf(bg->arena, "%s%s", prefix, src->name));
	struct value *dst = &bg->values.v[id];

	dst->dtype = src->dtype;
	dst->shape = src->shape;
	dst->has_shape = src->has_shape;
	dst->data = src->data;
	dst->sym = src->sym;
	return id;
}

/* Maps values of one source graph to the bench graph (constants shared). */
struct vmap {
	struct graph *g;		/* source */
	int *to;			/* per source value: bench value + 1, 0 = none */
};

static int map_const(struct graph *bg, struct vmap *cm, int v)
{
	if (!cm->to[v])
		cm->to[v] = 1 + copy_value(bg, cm->g, v, "");
	return cm->to[v] - 1;
}

static struct vmap *const_map(struct graph *bg, struct vmap *maps, int *n_maps, struct graph *g)
{
	for (int i = 0; i < *n_maps; i++)
		if (maps[i].g == g)
			return &maps[i];
	maps[*n_maps].g = g;
	maps[*n_maps].to = arena_alloc(bg->arena, sizeof(int) * ((size_t)g->values.n + 1));
	return &maps[(*n_maps)++];
}

/*
 * The bench graph has every symbol of the model, but its inputs bind only
 * those of the items' own inputs: a decode step's MatMul binds batch and
 * seq, not past, and the bench model would refuse to run ("symbol 'past'
 * is not bound by any input"). Each symbol that no input dim mentions and
 * that is neither derived nor bound by data becomes a constant, its tuning
 * size, computed before the derived ones that read it.
 */
static void unbound_syms_fixed(struct graph *bg)
{
	bool *bound = xcalloc((size_t)bg->syms.n + 1, sizeof(bool));
	VEC(struct sym_def) defs = { 0 };

	for (int i = 0; i < bg->inputs.n; i++) {
		const struct shape *sh = &bg->values.v[bg->inputs.v[i]].shape;

		for (int k = 0; k < sh->rank; k++)
			for (int j = 0; j < sh->d[k].n; j++)
				bound[sh->d[k].sym[j]] = true;
	}
	for (int d = 0; d < bg->sym_defs.n; d++)
		bound[bg->sym_defs.v[d].sym] = true;
	for (int d = 0; d < bg->sym_data.n; d++)
		bound[bg->sym_data.v[d].sym] = true;
	for (int s = 0; s < bg->syms.n; s++) {
		struct sym_def def = { s, SYM_MAX, { 0 }, { 0 } };

		if (bound[s] || graph_sym_late(bg, s))
			continue;
		def.a.c = def.b.c = bg->tune && bg->tune[s].size > 0 ? bg->tune[s].size : 1;
		vec_push(&defs, def);
	}
	for (int d = 0; d < bg->sym_defs.n && defs.n; d++)
		vec_push(&defs, bg->sym_defs.v[d]);
	if (defs.n) {
		vec_free(&bg->sym_defs);
		bg->sym_defs.v = defs.v;
		bg->sym_defs.n = defs.n;
		bg->sym_defs.cap = defs.cap;
	} else {
		vec_free(&defs);
	}
	free(bound);
}

/*
 * Builds the bench graph of a batch: item i's parts become partitions with
 * part_item[] = i. Outputs of an item are what its nodes make that its own
 * nodes do not all read, or that were graph outputs.
 */
static struct graph *bench_graph(struct measure *m, struct batch *b, struct partition **parts,
				 int *np, int **part_item)
{
	struct graph *bg = graph_new_scratch(m->ctx);	/* its lowering goes with it */
	struct vmap maps[8];
	int n_maps = 0, n_parts = 0;

	for (int i = 0; i < b->n; i++)
		n_parts += b->items[i]->n_parts;
	*parts = arena_alloc(bg->arena, sizeof(**parts) * ((size_t)n_parts + 1));
	*part_item = arena_alloc(bg->arena, sizeof(int) * ((size_t)n_parts + 1));
	*np = 0;
	for (int i = 0; i < b->n; i++) {
		const struct cost_item *it = b->items[i];
		struct graph *g = it->df->g;
		struct vmap *cm = const_map(bg, maps, &n_maps, g);
		int *local = arena_alloc(bg->arena, sizeof(int) * ((size_t)g->values.n + 1));
		const char *prefix = arena_printf(bg->arena, "i%d.", i);
		struct indexset all = indexset_new(bg->arena, it->df->n);

		/*
		 * the opsets, which decide what some ops' inputs and defaults
		 * mean (Resize's scales and sizes, Softmax's axis)
		 */
		bg->opset = bg->opset > g->opset ? bg->opset : g->opset;
		bg->training_opset = bg->training_opset > g->training_opset ? bg->training_opset :
				     g->training_opset;
		bg->ml_opset = bg->ml_opset > g->ml_opset ? bg->ml_opset : g->ml_opset;
		bg->cpu = g->cpu;	/* the CPU the rules placed for */
		/* the symbols, derived ones with how to compute them */
		if (bg->syms.n == 0) {
			for (int s = 0; s < g->syms.n; s++)
				vec_push(&bg->syms, g->syms.v[s]);
			for (int s = 0; s < g->sym_defs.n; s++)
				vec_push(&bg->sym_defs, g->sym_defs.v[s]);
			bg->tune = g->tune;
			bg->tune_wide = g->tune_wide;
		}
		for (int p = 0; p < it->n_parts; p++)
			indexset_or_into(&all, &it->parts[p].sg->inside);
		for (int p = 0; p < it->n_parts; p++) {
			const struct subgraph *sg = it->parts[p].sg;
			struct partition *pt = &(*parts)[*np];

			pt->id = *np;
			pt->target = it->parts[p].target;
			pt->rule = it->parts[p].rule;
			pt->est_cost = pt->measured_cost = NAN;
			pt->nodes = arena_alloc(bg->arena, sizeof(int) *
						((size_t)indexset_count(&sg->inside) + 1));
			(*part_item)[*np] = i;
			indexset_for_each(x, &sg->inside) {
				const struct node *n = &g->nodes.v[it->df->node[x]];
				int in[64], out[64], ni;
				struct node *nn;

				if (n->n_in > 64 || n->n_out > 64)
					BUG("node with %d inputs", n->n_in);
				for (int j = 0; j < n->n_in; j++) {
					int v = n->in[j];

					if (v < 0)
						in[j] = -1;
					else if (local[v])
						in[j] = local[v] - 1;
					else if (g->values.v[v].data)
						in[j] = map_const(bg, cm, v);
					else {
						local[v] = 1 + copy_value(bg, g, v, prefix);
						bg->values.v[local[v] - 1].flags = VALUE_INPUT;
						vec_push(&bg->inputs, local[v] - 1);
						in[j] = local[v] - 1;
					}
				}
				for (int j = 0; j < n->n_out; j++) {
					local[n->out[j]] = 1 + copy_value(bg, g, n->out[j], prefix);
					out[j] = local[n->out[j]] - 1;
				}
				ni = graph_add_node(bg, n->op, n->name, in, n->n_in, out, n->n_out);
				nn = &bg->nodes.v[ni];
				nn->op_type = n->op_type;
				nn->onnx_index = n->onnx_index;
				nn->span = n->span;
				nn->n_attrs = n->n_attrs;
				nn->attrs = n->n_attrs ? arena_memdup(bg->arena, n->attrs,
							 sizeof(*n->attrs) * (size_t)n->n_attrs) : NULL;
				for (int a = 0; a < n->n_attrs; a++)
					if (nn->attrs[a].kind == ATTR_TENSOR)
						nn->attrs[a].tensor = map_const(bg, cm, n->attrs[a].tensor);
				for (int j = 0; j < bg->nodes.v[ni].n_out; j++)
					bg->values.v[out[j]].producer = ni;
				pt->nodes[pt->n_nodes++] = ni;
			}
			(*np)++;
		}
		/* what leaves the item: read by a node outside it, or a graph output */
		indexset_for_each(x, &all) {
			const struct node *n = &g->nodes.v[it->df->node[x]];

			for (int j = 0; j < n->n_out; j++) {
				int v = n->out[j];
				bool leaves = (g->values.v[v].flags & VALUE_OUTPUT) != 0;

				for (int k = 0; k < it->df->n_out[x] && !leaves; k++) {
					int c = it->df->out[x][k];
					const struct node *cn = &g->nodes.v[it->df->node[c]];

					if (indexset_has(&all, c))
						continue;
					for (int q = 0; q < cn->n_in; q++)
						leaves |= cn->in[q] == v;
				}
				if (leaves) {
					bg->values.v[local[v] - 1].flags |= VALUE_OUTPUT;
					vec_push(&bg->outputs, local[v] - 1);
				}
			}
		}
		/*
		 * the data symbols the item's nodes bind when they run (a
		 * NonZero's count), on their values here: else the bench model
		 * expects them of its inputs ("symbol 'i[1]' is not bound")
		 */
		for (int d = 0; d < g->sym_data.n; d++) {
			struct sym_data sd = g->sym_data.v[d];
			bool seen = false;

			if (!local[sd.value] || (bg->values.v[local[sd.value] - 1].flags & VALUE_INPUT))
				continue;
			for (int e = 0; e < bg->sym_data.n && !seen; e++)
				seen = bg->sym_data.v[e].sym == sd.sym;
			sd.value = local[sd.value] - 1;
			if (!seen)
				vec_push(&bg->sym_data, sd);
		}
	}
	unbound_syms_fixed(bg);
	return bg;
}

/*
 * Lowers and emits the batch's model.c; items whose lowering fails are
 * marked +inf and dropped from b first. 0 with *bgp the bench graph (owned:
 * ep's weights are its constants until emit_link has written them), or -1
 * when nothing is left.
 */
static int emit_batch(struct measure *m, struct batch *b, struct strbuf *src,
		      struct exec_plan *ep, struct model_sources *ms, struct weights_file *wf,
		      char ***kfiles, int *n_kfiles, struct graph **bgp)
{
	for (;;) {
		struct partition *parts;
		int np, *part_item, bad = -1, w = 0;
		struct graph *bg;
		struct diag_hush h;

		if (b->n == 0)
			return -1;
		bg = bench_graph(m, b, &parts, &np, &part_item);
		diag_hush_begin(m->ctx, &h);
		/* a whole plan's partitions hand over layouts as in the model */
		if (lower_plan_layouts(bg, parts, np) < 0)
			bad = b->n > 1 ? -2 : 0;
		for (int p = 0; p < np && bad < 0; p++)
			if (lower_partitions(bg, &parts[p], 1, ms, NULL) < 0)
				bad = part_item[p];
		if (bad < 0 && emit_plan(bg, parts, np, ep) < 0)
			bad = b->n > 1 ? -2 : 0;
		ep->threads = m->threads;	/* set_threads sets it again */
		diag_hush_end(m->ctx, &h);
		if (bad == -1) {
			wf->bytes = ep->weights_bytes;
			/*
			 * A whole plan's kernels in kernel files, as the final
			 * build splits them: the object cache then hands the
			 * winner's to the final build
			 */
			*n_kfiles = b->whole ? emit_kernel_files(ms, KERNEL_FILE_LINES, kfiles) : 0;
			emit_model_c(bg, ep, ms, "{}", *n_kfiles > 0, wf, src);
			for (int p = 0; p < np; p++)
				vec_free(&parts[p].kernels);
			*bgp = bg;
			return 0;
		}
		for (int p = 0; p < np; p++)
			vec_free(&parts[p].kernels);
		graph_free(bg);
		exec_plan_release(ep);
		memset(ep, 0, sizeof(*ep));
		model_sources_release(ms);
		memset(ms, 0, sizeof(*ms));
		if (bad == -2)
			return -1;	/* the plan failed: let the caller split */
		b->items[bad]->cost = INFINITY;
		for (int i = 0; i < b->n; i++)
			if (i != bad)
				b->items[w++] = b->items[i];
		b->n = w;
	}
}

/* Starts building b's shared object in a child process. */
static void build_start(struct measure *m, struct batch *b)
{
	struct strbuf src = STRBUF_INIT, ldlibs = STRBUF_INIT;
	struct exec_plan ep = { 0 };
	struct model_sources ms = { .kernels = STRBUF_INIT };
	struct graph *bg = NULL;
	char **kfiles = NULL;
	int n_kfiles = 0;
	bool alone = m->n_built == 0;
	/*
	 * The weights in a file beside the bench model, which the worker
	 * maps: the assembler and the linker never copy them (a BERT-Base
	 * batch's are 700 MB)
	 */
	struct weights_file wf = { arena_printf(&m->ctx->arena, "bench%d.weights", m->n_built),
				   NULL, 0, NULL };

	wf.path = arena_printf(&m->ctx->arena, "%s/%s", m->dir, wf.name);
	b->weights = (char *)wf.path;
	b->so = arena_printf(&m->ctx->arena, "%s/bench%d.so", m->dir, m->n_built++);
	b->pid = -1;
	if (emit_batch(m, b, &src, &ep, &ms, &wf, &kfiles, &n_kfiles, &bg) < 0) {
		b->failed = true;
		goto out;
	}
	for (int i = 0; i < ms.ldlibs.n; i++)
		sb_printf(&ldlibs, "%s%s", i ? " " : "", ms.ldlibs.v[i]);
	fflush(NULL);
	b->pid = fork();
	if (b->pid == 0) {
		struct link_options lo = m->lo;
		struct diag_hush h;

		lo.ldlibs = sb_str(&ldlibs);
		lo.cuda = ms.cuda.len ? sb_str(&ms.cuda) : NULL;
		lo.weights = &wf;
		/* the first build runs alone: its model.c and rt.c compile side by side */
		lo.jobs = alone ? m->jobs : 1;
		diag_hush_begin(m->ctx, &h);
		_exit(emit_link(m->ctx, &lo, sb_str(&src), kfiles, n_kfiles, &ep, b->so) < 0 ? 1 : 0);
	}
	if (b->pid < 0)
		b->failed = true;
	else	/* should collagec stop (a signal, no memory), it waits for the build */
		temp_track_child(b->pid);
out:
	exec_plan_release(&ep);
	model_sources_release(&ms);
	graph_free(bg);	/* the child has its own copy of the weights it writes */
	for (int i = 0; i < n_kfiles; i++)
		free(kfiles[i]);
	free(kfiles);
	sb_release(&src);
	sb_release(&ldlibs);
}

/* Removes b's shared object and weights file, once measured. */
static void batch_remove(struct batch *b)
{
	if (b->so)
		remove(b->so);
	if (b->weights)
		remove(b->weights);
}

static void build_wait(struct batch *b)
{
	int st;

	if (b->pid <= 0)
		return;
	while (waitpid(b->pid, &st, 0) < 0)
		if (errno != EINTR) {
			b->failed = true;
			break;
		}
	temp_untrack_child(b->pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		b->failed = true;
	b->pid = -1;
}

/* Builds every batch, m->jobs at a time. */
static void build_all(struct measure *m, struct batch **bs, int n)
{
	int running = 0, next = 0;
	VEC(struct batch *) live = { 0 };
	pid_t rt = 0;

	/*
	 * The runtime's object compiles once, beside the first builds' model.c
	 * (ResNet-18's first two bench models took 8.9 s one after the other,
	 * rt.c 3.2 s of it, on 2 cores)
	 */
	if (!m->first_built && m->dir && m->lo.objects) {
		const char *lock = arena_printf(&m->ctx->arena, "%s/rt.lock", m->dir);

		rt = emit_runtime_start(m->ctx, &m->lo, lock);
		if (rt >= 0)
			m->first_built = true;
		if (rt > 0)
			m->lo.runtime_lock = lock;
	}
	while (next < n || running) {
		/*
		 * The first build of a compile goes alone: it compiles the
		 * runtime's object into the object cache when it is not there
		 * yet, and the builds beside it would each compile it too
		 */
		while (next < n && running < (m->first_built ? m->jobs : 1)) {
			build_start(m, bs[next]);
			if (bs[next]->pid > 0) {
				vec_push(&live, bs[next]);
				running++;
			}
			next++;
		}
		if (running) {
			/* wait for the oldest; builds take about as long as each other */
			build_wait(live.v[0]);
			m->first_built = true;
			memmove(live.v, live.v + 1, sizeof(*live.v) * (size_t)(live.n - 1));
			live.n--;
			running--;
		}
	}
	if (rt > 0) {
		int st;

		while (waitpid(rt, &st, 0) < 0 && errno == EINTR)
			;
		temp_untrack_child(rt);
	}
	vec_free(&live);
}

/* ---- the worker ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/*
 * Evicts the caches the way a whole model's run does for each kernel's
 * weights (a model's constants come back from memory on the next run once
 * they are more than the cache holds): reads a buffer of twice the
 * last-level cache, then the bench model's inputs again (in a model, a
 * kernel's inputs were just written by the kernel before it).
 */
static volatile unsigned char evict_sink;	/* keeps evict()'s reads */

static void evict(const unsigned char *flush, size_t flush_bytes, unsigned char *const *in,
		  const size_t *in_bytes, int ni)
{
	unsigned char acc = 0;

	for (size_t k = 0; k < flush_bytes; k += 64)
		acc ^= flush[k];
	for (int i = 0; i < ni; i++)
		for (size_t k = 0; k < in_bytes[i]; k += 64)
			acc ^= in[i][k];
	evict_sink = acc;
}

/* q-quantile of sorted t[0..n) (linear between neighbours). */
static double quantile(const double *t, int n, double q)
{
	double x = q * (n - 1);
	int i = (int)x;

	return i + 1 < n ? t[i] + (x - i) * (t[i + 1] - t[i]) : t[n - 1];
}

/*
 * Whether every item's median is known well enough: the notch of a box
 * plot, 1.58 IQR / sqrt(runs), is about a 95% interval of the median; it
 * must be within SETTLE of the median. Items that failed (res < 0) do not
 * count; tmp has room for runs doubles.
 */
static bool settled(double **per_run, int runs, int n, const double *res, double *tmp)
{
	for (int i = 0; i < n; i++) {
		double med, iqr;

		if (res[i] < 0)
			continue;
		for (int r = 0; r < runs; r++)
			tmp[r] = per_run[r][i];
		qsort(tmp, (size_t)runs, sizeof(double), cmp_double);
		med = quantile(tmp, runs, 0.5);
		iqr = quantile(tmp, runs, 0.75) - quantile(tmp, runs, 0.25);
		if (!(1.58 * iqr / sqrt(runs) <= SETTLE * med))
			return false;
	}
	return true;
}

/*
 * Whether item it holds a dynamic node (a NonZero: its output's dims are
 * known when it has run). Beside other items it shares its symbol with
 * them, and an item that reads such a value as a bench input binds the
 * symbol at the tuning size: NonZero -> Cast -> Relu's bench model of
 * NonZero beside Cast broke the worker's heap ("malloc(): invalid size"),
 * most likely NonZero writing as many columns as its random input has
 * nonzeros into a buffer planned for one.
 */
static bool item_dynamic(const struct cost_item *it)
{
	for (int p = 0; p < it->n_parts; p++)
		indexset_for_each(x, &it->parts[p].sg->inside)
			if (it->df->dynamic[x])
				return true;
	return false;
}

/* Bytes of the constants item it reads (a constant two of its nodes read, twice). */
static size_t item_const_bytes(const struct cost_item *it)
{
	const struct graph *g = it->df->g;
	size_t sum = 0;

	for (int p = 0; p < it->n_parts; p++)
		indexset_for_each(x, &it->parts[p].sg->inside) {
			const struct node *n = &g->nodes.v[it->df->node[x]];

			for (int s = 0; s < n->n_in; s++) {
				const struct value *v = n->in[s] >= 0 ? &g->values.v[n->in[s]] : NULL;

				if (v && v->data && shape_is_static(&v->shape) &&
				    !dtype_is_string(v->dtype))
					sum += (size_t)shape_numel_static(&v->shape) *
					       dtype_size(v->dtype);
			}
		}
	return sum;
}

/*
 * The dims of the bench model's inputs and outputs at the tuning sizes and,
 * where the graph has them (graph.tune_wide), at the wide ones.
 */
struct bench_dims {
	int64_t (*in)[MAX_RANK], (*out)[MAX_RANK];
	int64_t (*in_w)[MAX_RANK], (*out_w)[MAX_RANK];
	int ni, no;			/* the bench model's inputs and outputs */
	int64_t wide;			/* graph.tune_wide: 0, or > 1 */
};

struct bench {
	struct model_lib lib;
	collagec_model *mod;
	int ni, no, nk, min_runs, max_runs;
	bool wide;			/* its inputs are at the wide dims */
	unsigned char **in, *flush;
	size_t *in_bytes, flush_bytes;
	double **per_run, *t;
};

/*
 * Gives w's inputs the dims bd says (the wide ones with wide; new random
 * data), runs it once (warm-up) and marks in res the items whose outputs
 * are not of bd's dims (-1); out_item maps outputs to items (NULL: all
 * item 0). 0, or -1 when it cannot run.
 */
static int bench_inputs(struct bench *w, const struct bench_dims *bd, bool wide,
			const int *out_item, double *res)
{
	int64_t (*ind)[MAX_RANK] = wide ? bd->in_w : bd->in;
	int64_t (*outd)[MAX_RANK] = wide ? bd->out_w : bd->out;
	uint32_t seed = 1;

	for (int i = 0; i < w->ni; i++) {
		collagec_tensor_info info;
		int64_t dims[8], n = 1;
		size_t es, bytes;
		unsigned char *buf;
		enum dtype t;

		if (w->lib.input_info(w->mod, i, &info) != COLLAGEC_OK || info.rank > 8)
			return -1;
		for (int k = 0; k < info.rank; k++) {
			dims[k] = info.dims[k] < 0 ? ind[i][k] : info.dims[k];
			if (dims[k] > DIM_LIMIT || __builtin_mul_overflow(n, dims[k], &n))
				return -1;
		}
		/* integers and bools stay 0; strings and unknown types get 8 bytes */
		t = dtype_from_onnx((int)info.dtype);
		es = t == DTYPE_UNDEF || dtype_is_string(t) ? 8 : dtype_size(t);
		/* aligned like the model's own arena (RT_ALIGN), zeroed */
		bytes = ((size_t)(n ? n : 1) * es + 63) / 64 * 64;
		buf = aligned_alloc(64, bytes);
		if (!buf)
			return -1;
		memset(buf, 0, bytes);
		if (info.dtype == COLLAGEC_FLOAT)
			for (int64_t k = 0; k < n; k++)
				((float *)buf)[k] = (float)(lcg(&seed) % 20001) / 10000.0f - 1.0f;
		else if (info.dtype == COLLAGEC_DOUBLE)
			for (int64_t k = 0; k < n; k++)
				((double *)buf)[k] = (double)(lcg(&seed) % 20001) / 10000.0 - 1.0;
		if (w->lib.set_input(w->mod, i, buf, dims, info.rank) != COLLAGEC_OK) {
			free(buf);
			return -1;
		}
		free(w->in[i]);
		w->in[i] = buf;
		w->in_bytes[i] = bytes;
	}
	w->wide = wide;
	if (w->lib.run(w->mod) != COLLAGEC_OK)	/* warm-up */
		return -1;
	for (int o = 0; o < w->no; o++) {
		collagec_tensor_info info;
		const void *data;
		const int64_t *dims;
		int rank;
		bool ok;

		if (w->lib.output_info(w->mod, o, &info) != COLLAGEC_OK ||
		    w->lib.get_output(w->mod, o, &data, &dims, &rank) != COLLAGEC_OK)
			return -1;
		ok = rank == info.rank;
		/* (a dim the run decides, a NonZero's count, is -1 in bd: any) */
		for (int k = 0; k < rank && ok; k++)
			ok = info.dims[k] < 0 ? outd[o][k] < 0 || dims[k] == outd[o][k] :
			     dims[k] == info.dims[k];
		if (!ok)
			res[out_item ? out_item[o] : 0] = -1;
	}
	return 0;
}

/*
 * Loads b->so into w, sets its inputs (symbolic dims as bd says), runs it
 * once (warm-up) and marks in res the items whose outputs are not of bd's
 * dims (-1); out_item maps outputs to items (NULL: all item 0). 0, or -1
 * when it cannot run.
 */
static int bench_open(struct measure *m, struct batch *b, struct bench *w,
		      const struct bench_dims *bd, const int *out_item, double *res)
{
	char *err = NULL;

	memset(w, 0, sizeof(*w));
	w->max_runs = b->whole ? WHOLE_MAX_RUNS : 15;
	/* under a budget a whole plan's turn ends after 3 runs past its 0.1 s */
	w->min_runs = b->whole && m->o.budget > 0 ? 3 : 5;
	if (model_lib_load(&w->lib, b->so, &err) < 0 || w->lib.open(&w->mod) != COLLAGEC_OK)
		return -1;
	w->ni = w->lib.num_inputs(w->mod);
	w->no = w->lib.num_outputs(w->mod);
	w->in = calloc((size_t)w->ni + 1, sizeof(*w->in));
	w->in_bytes = calloc((size_t)w->ni + 1, sizeof(*w->in_bytes));
	if (!w->in || !w->in_bytes)
		return -1;
	if (m->cold && !b->whole) {
		w->flush_bytes = 2 * cost_llc_bytes();
		w->flush = malloc(w->flush_bytes);
		if (!w->flush)
			return -1;
		memset(w->flush, 1, w->flush_bytes);
	}
	w->lib.set_threads(w->mod, m->threads);
	/* a whole plan runs as a user runs it: no clock read around each kernel */
	w->lib.set_profiling(w->mod, !b->whole);
	if (bench_inputs(w, bd, false, out_item, res) < 0)
		return -1;
	w->nk = w->lib.num_kernels(w->mod);
	w->per_run = calloc((size_t)w->max_runs, sizeof(*w->per_run));
	w->t = calloc((size_t)w->max_runs, sizeof(double));
	if (!w->per_run || !w->t)
		return -1;
	for (int r = 0; r < w->max_runs; r++)
		if (!(w->per_run[r] = calloc((size_t)b->n + 1, sizeof(double))))
			return -1;
	return 0;
}

/*
 * Times an opened bench: res[i] (unless -1) becomes item i's median. A
 * batch's partitions run at least MIN_RUNS times, until every item's median
 * is known to SETTLE (settled()) or for 0.5 s, at most 15 times; a whole
 * plan runs for 0.1 s, at least 5 (3 under a budget) and at most WHOLE_MAX_RUNS times, as
 * phase 5 compares plans a few percent apart: a small plan's median then
 * spans 0.1 s, not the millisecond after its first run. In that
 * millisecond (63 runs) MNIST on dnnl,c at 2 threads timed 34 us in each
 * of phase 5's rounds, against 16 in `collagec bench` even with 1 warm-up
 * run (why, we did not find), and the search kept a cover twice as slow.
 * A run taking more than give_up seconds on average ends the timing (a
 * plan far slower than the best one). 0, or -1 when a run fails.
 */
static int bench_time(struct batch *b, struct bench *w, const int *part_item, double *res,
		      double give_up)
{
	double budget = b->whole ? 0.1 : 0.5, start = time_now();
	int runs = 0;

	for (int r = 0; r < w->max_runs; r++)
		memset(w->per_run[r], 0, sizeof(double) * (size_t)b->n);
	while (runs < w->max_runs) {
		double el, t0;

		if (w->flush)
			evict(w->flush, w->flush_bytes, w->in, w->in_bytes, w->ni);
		t0 = time_now();
		if (w->lib.run(w->mod) != COLLAGEC_OK)
			return -1;
		if (b->whole)
			w->per_run[runs][0] = time_now() - t0;
		for (int k = 0; k < w->nk && !b->whole; k++) {
			collagec_kernel_info ki;

			if (w->lib.get_kernel_info(w->mod, k, &ki) != COLLAGEC_OK || ki.time_ns < 0)
				return -1;
			w->per_run[runs][part_item[ki.partition]] += (double)ki.time_ns * 1e-9;
		}
		runs++;
		el = time_now() - start;
		if ((runs >= w->min_runs && el > budget) || (runs >= 3 && el > 3.0) ||
		    el / runs > give_up)
			break;
		if (!b->whole && runs >= MIN_RUNS && settled(w->per_run, runs, b->n, res, w->t))
			break;
	}
	for (int i = 0; i < b->n; i++) {
		if (res[i] < 0)
			continue;
		for (int r = 0; r < runs; r++)
			w->t[r] = w->per_run[r][i];
		qsort(w->t, (size_t)runs, sizeof(double), cmp_double);
		res[i] = runs % 2 ? w->t[runs / 2] : (w->t[runs / 2 - 1] + w->t[runs / 2]) / 2;
	}
	return 0;
}

/*
 * bench_time at bd's dims and, where bd has wide ones, at those too: then
 * res[i] is the two combined as cost_tune_combine does (t + tw / wide),
 * -1 when either is. The wide timing gives up where the combined time
 * would pass give_up. 0, or -1 when a run fails.
 */
static int bench_time_both(struct batch *b, struct bench *w, const struct bench_dims *bd,
			   const int *out_item, const int *part_item, double *res,
			   double give_up)
{
	double *rw;
	int rc = -1;

	if (w->wide && bench_inputs(w, bd, false, out_item, res) < 0)
		return -1;
	if (bench_time(b, w, part_item, res, give_up) < 0)
		return -1;
	if (bd->wide < 2)
		return 0;
	if (!(rw = calloc((size_t)b->n + 1, sizeof(double))))
		return -1;
	if (bench_inputs(w, bd, true, out_item, rw) == 0 &&
	    bench_time(b, w, part_item, rw, give_up * (double)bd->wide) == 0) {
		for (int i = 0; i < b->n; i++)
			res[i] = res[i] < 0 || rw[i] < 0 ? -1 : res[i] + rw[i] / (double)bd->wide;
		rc = 0;
	}
	free(rw);
	return rc;
}

/*
 * In the worker: loads b->so, runs it, writes one double per item (seconds;
 * -1 for an item whose outputs came back wrongly shaped) to fd. Exit status
 * 0 on success. With cold weights (measure.cold), the caches are evicted
 * before every run but of a whole plan.
 */
static int worker(struct measure *m, struct batch *b, const int *out_item, const int *part_item,
		  const struct bench_dims *bd, int fd)
{
	struct bench w;
	double *res = calloc((size_t)b->n + 1, sizeof(double));

	if (!res || bench_open(m, b, &w, bd, out_item, res) < 0 ||
	    bench_time_both(b, &w, bd, out_item, part_item, res, INFINITY) < 0)
		return 1;
	if (write(fd, res, sizeof(double) * (size_t)b->n) != (ssize_t)(sizeof(double) * (size_t)b->n))
		return 1;
	return 0;
}

/* Closes what bench_open opened (w may be half-opened). */
static void bench_close(struct bench *w)
{
	if (w->mod)
		w->lib.close(w->mod);
	if (w->lib.handle)
		model_lib_unload(&w->lib);
	for (int i = 0; w->in && i < w->ni; i++)
		free(w->in[i]);
	for (int r = 0; w->per_run && r < w->max_runs; r++)
		free(w->per_run[r]);
	free(w->in);
	free(w->in_bytes);
	free(w->flush);
	free(w->per_run);
	free(w->t);
	memset(w, 0, sizeof(*w));
}

/*
 * In the plans' worker: times every whole plan of bs (one item each), in
 * turns, rounds times over, and writes rounds x n doubles, round by round
 * (-1 for a plan that cannot run). With keep, each plan is opened once and
 * stays open; without (large weights: every open plan holds its own), each
 * is opened for its turn and closed after it.
 */
static int plans_worker(struct measure *m, struct batch **bs, const struct bench_dims *bds, int n,
			int rounds, bool keep, int fd)
{
	struct bench *w = calloc((size_t)n + 1, sizeof(*w));
	double *res = calloc((size_t)(n * rounds) + 1, sizeof(double));
	bool *ok = calloc((size_t)n + 1, sizeof(bool));

	double best = INFINITY;

	if (!w || !res || !ok)
		return 1;
	for (int i = 0; i < n; i++)
		ok[i] = !bs[i]->failed && bs[i]->n == 1;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i++) {
			double x = 0;

			/* a plan far slower than the best keeps its first round's time */
			if (r > 0 && ok[i] && res[i] > PLAN_GIVE_UP * best) {
				res[r * n + i] = res[i];
				continue;
			}
			if (ok[i] && !w[i].mod &&
			    (bench_open(m, bs[i], &w[i], &bds[i], NULL, &x) < 0 || x != 0))
				ok[i] = false;
			if (!ok[i] || bench_time_both(bs[i], &w[i], &bds[i], NULL, NULL, &x,
						      PLAN_GIVE_UP * best) < 0) {
				ok[i] = false;
				x = -1;
			}
			res[r * n + i] = x;
			if (x > 0 && x < best)
				best = x;
			if (!keep || !ok[i])
				bench_close(&w[i]);
		}
	if (write(fd, res, sizeof(double) * (size_t)(n * rounds)) !=
	    (ssize_t)(sizeof(double) * (size_t)(n * rounds)))
		return 1;
	return 0;
}

/* Reads n bytes from fd within the deadline; false on EOF, error or timeout. */
static bool read_all(int fd, void *buf, size_t n, double deadline)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = { fd, POLLIN, 0 };
		double left = deadline - time_now();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			return false;
		r = read(fd, (char *)buf + got, n - got);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return false;
		}
		got += (size_t)r;
	}
	return true;
}

/*
 * Symbolic dims at the tuning sizes, and at the wide ones where bg has
 * them (bg's arena): inputs given them, outputs checked.
 */
static void dims_of(struct graph *bg, struct bench_dims *bd)
{
	bd->ni = bg->inputs.n;
	bd->no = bg->outputs.n;
	bd->wide = bg->tune_wide > 1 ? bg->tune_wide : 0;
	for (int w = 0; w < 1 + (bd->wide > 1); w++) {
		int64_t (*in)[MAX_RANK] = arena_alloc(bg->arena, sizeof(*in) * ((size_t)bd->ni + 1));
		int64_t (*out)[MAX_RANK] = arena_alloc(bg->arena,
						      sizeof(*out) * ((size_t)bd->no + 1));

		bg->at_wide = w;
		for (int i = 0; i < bg->inputs.n; i++)
			for (int k = 0; k < bg->values.v[bg->inputs.v[i]].shape.rank; k++)
				in[i][k] = cost_dim_at(bg, bg->values.v[bg->inputs.v[i]].shape.d[k]);
		for (int o = 0; o < bg->outputs.n; o++)
			for (int k = 0; k < bg->values.v[bg->outputs.v[o]].shape.rank; k++) {
				struct dim d = bg->values.v[bg->outputs.v[o]].shape.d[k];

				out[o][k] = graph_dim_late(bg, d) ? -1 : cost_dim_at(bg, d);
			}
		*(w ? &bd->in_w : &bd->in) = in;
		*(w ? &bd->out_w : &bd->out) = out;
	}
	bg->at_wide = false;
}

/* What a worker is handed: a batch, or whole plans. */
struct job {
	struct measure *m;
	struct batch *b;
	const int *out_item, *part_item;
	struct batch **bs;
	const struct bench_dims *bd;	/* the batch's, or one per plan */
	int n, rounds;
	bool keep;			/* plans: keep each open between turns */
	int np;				/* a batch's partitions: part_item's length */
};

/*
 * ---- workers run afresh ----
 *
 * A worker forked from the compiler starts with the compiler's pages: its
 * graph, its candidates, what the search holds, and what it dropped of the
 * weights (graph_drop_constant_pages) aside, counted again in the worker's
 * resident set, on top of what the bench model maps and packs (ResNet-18:
 * 58 MB of the 381 its largest worker peaked at, against a bound of 389).
 * Where collagec's own program can be run again (cost_set_worker_exe: the
 * command line tool), a worker is that program run afresh,
 * "collagec --measure-worker SPEC" (cost_measure_worker), handed the job in
 * the file SPEC: int64s and strings (a length, then its bytes) in the order
 * job_spec writes them; it answers on file descriptor 3. Elsewhere (a
 * program of the library's own), workers are forked as before.
 */
#define SPEC_MAGIC INT64_C(0x636f6c6c61676531)	/* "collage1" */
#define WORKER_FD 3

static const char *worker_exe;
static int n_specs;

void cost_set_worker_exe(const char *path)
{
	worker_exe = path;
}

static void put_i(struct strbuf *sb, int64_t v)
{
	sb_add(sb, (const char *)&v, sizeof(v));
}

static void put_dims(struct strbuf *sb, int64_t (*d)[MAX_RANK], int n)
{
	sb_add(sb, (const char *)d, sizeof(*d) * (size_t)n);
}

/* The spec of job j (kind, the measure's settings, then each batch). */
static void job_spec(const struct job *j, struct strbuf *sb)
{
	int n = j->bs ? j->n : 1;

	put_i(sb, SPEC_MAGIC);
	put_i(sb, j->bs != NULL);
	put_i(sb, j->m->threads);
	put_i(sb, j->m->cold);
	put_i(sb, j->m->o.budget > 0);
	put_i(sb, j->rounds);
	put_i(sb, j->keep);
	put_i(sb, n);
	for (int i = 0; i < n; i++) {
		const struct batch *b = j->bs ? j->bs[i] : j->b;
		const struct bench_dims *bd = &j->bd[j->bs ? i : 0];

		put_i(sb, (int64_t)strlen(b->so));
		sb_puts(sb, b->so);
		put_i(sb, b->n);
		put_i(sb, b->whole);
		put_i(sb, b->failed);
		put_i(sb, bd->ni);
		put_i(sb, bd->no);
		put_dims(sb, bd->in, bd->ni);
		put_dims(sb, bd->out, bd->no);
		put_i(sb, bd->wide);
		if (bd->wide) {
			put_dims(sb, bd->in_w, bd->ni);
			put_dims(sb, bd->out_w, bd->no);
		}
	}
	if (!j->bs) {
		for (int o = 0; o < j->bd->no; o++)
			put_i(sb, j->out_item[o]);
		put_i(sb, j->np);
		for (int p = 0; p < j->np; p++)
			put_i(sb, j->part_item[p]);
	}
}

struct spec_reader {
	const char *p, *end;
	bool bad;
};

static void get_bytes(struct spec_reader *r, void *out, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
}

/* The next int64, which must lie in [lo, hi] (else the spec is bad). */
static int64_t get_i(struct spec_reader *r, int64_t lo, int64_t hi)
{
	int64_t v;

	get_bytes(r, &v, sizeof(v));
	if (v < lo || v > hi)
		r->bad = true;
	return r->bad ? lo : v;
}

/*
 * Reads a started worker's answer (bytes of it from fd into buf) within
 * timeout seconds, killing it when they pass first, and waits for it.
 * true when the whole answer came and it exited 0. Closes fd.
 */
static bool answer_of(pid_t pid, int fd, void *buf, size_t bytes, double timeout)
{
	bool ok = read_all(fd, buf, bytes, time_now() + timeout);
	int st;

	if (!ok)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(fd);
	return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/*
 * Spawns worker_exe on spec: the answer's bytes into buf, within timeout
 * seconds (killed after). 1 when the whole answer came and the worker
 * exited 0, 0 when not, -1 when it could not be started (the caller forks).
 */
static int in_worker(struct measure *m, const struct strbuf *spec, void *buf, size_t bytes,
		     double timeout)
{
	const char *path = arena_printf(&m->ctx->arena, "%s/job%d.spec", m->dir, n_specs++);
	char *argv[] = { (char *)"collagec", (char *)"--measure-worker", (char *)path, NULL };
	extern char **environ;
	posix_spawn_file_actions_t fa;
	int fd[2], e, ok;
	pid_t pid;

	if (file_write_atomic(path, spec->buf, spec->len) < 0)
		return -1;
	if (pipe2(fd, O_CLOEXEC) < 0) {
		remove(path);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], WORKER_FD);
	fflush(NULL);
	if ((e = posix_spawn(&pid, worker_exe, &fa, NULL, argv, environ)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(fd[0]);
		close(fd[1]);
		remove(path);
		diag_note(m->ctx, "measuring workers: cannot run %s (%s): forked instead",
			  worker_exe, strerror(e));
		worker_exe = NULL;
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (!m->said_workers)
		diag_note(m->ctx, "measuring workers: %s --measure-worker, each run afresh",
			  worker_exe);
	m->said_workers = true;
	close(fd[1]);
	ok = answer_of(pid, fd[0], buf, bytes, timeout);
	remove(path);
	return ok;
}

int cost_measure_worker(const char *spec_path)
{
	size_t len;
	char *spec = file_read(spec_path, &len);
	struct spec_reader r = { spec, spec ? spec + len : NULL, !spec };
	struct measure m = { 0 };
	struct batch *bs, **bps;
	struct bench_dims *bds;
	int *out_item = NULL, *part_item = NULL, plans, rounds, keep, n, rc = 1;

	if (get_i(&r, SPEC_MAGIC, SPEC_MAGIC) != SPEC_MAGIC || r.bad) {
		free(spec);
		return 2;
	}
	plans = (int)get_i(&r, 0, 1);
	m.threads = (int)get_i(&r, 1, 1 << 16);
	m.cold = get_i(&r, 0, 1) != 0;
	m.o.budget = (double)get_i(&r, 0, 1);
	rounds = (int)get_i(&r, 0, 1 << 16);
	keep = (int)get_i(&r, 0, 1);
	n = (int)get_i(&r, 1, 1 << 16);
	bs = xcalloc((size_t)n, sizeof(*bs));
	bps = xcalloc((size_t)n, sizeof(*bps));
	bds = xcalloc((size_t)n, sizeof(*bds));
	for (int i = 0; i < n && !r.bad; i++) {
		size_t sl = (size_t)get_i(&r, 1, 4096);
		char *so = xcalloc(sl + 1, 1);

		get_bytes(&r, so, r.bad ? 0 : sl);
		bs[i].so = so;
		bs[i].n = (int)get_i(&r, 0, 1 << 20);
		bs[i].whole = get_i(&r, 0, 1) != 0;
		bs[i].failed = get_i(&r, 0, 1) != 0;
		bds[i].ni = (int)get_i(&r, 0, 1 << 20);
		bds[i].no = (int)get_i(&r, 0, 1 << 20);
		bds[i].in = xcalloc((size_t)bds[i].ni + 1, sizeof(*bds[i].in));
		bds[i].out = xcalloc((size_t)bds[i].no + 1, sizeof(*bds[i].out));
		get_bytes(&r, bds[i].in, sizeof(*bds[i].in) * (size_t)bds[i].ni);
		get_bytes(&r, bds[i].out, sizeof(*bds[i].out) * (size_t)bds[i].no);
		bds[i].wide = get_i(&r, 0, DIM_LIMIT);
		if (bds[i].wide) {
			bds[i].in_w = xcalloc((size_t)bds[i].ni + 1, sizeof(*bds[i].in_w));
			bds[i].out_w = xcalloc((size_t)bds[i].no + 1, sizeof(*bds[i].out_w));
			get_bytes(&r, bds[i].in_w, sizeof(*bds[i].in_w) * (size_t)bds[i].ni);
			get_bytes(&r, bds[i].out_w, sizeof(*bds[i].out_w) * (size_t)bds[i].no);
		}
		bps[i] = &bs[i];
	}
	if (!plans && !r.bad) {
		int np;

		out_item = xcalloc((size_t)bds[0].no + 1, sizeof(int));
		for (int o = 0; o < bds[0].no; o++)
			out_item[o] = (int)get_i(&r, 0, bs[0].n - 1);
		np = (int)get_i(&r, 0, 1 << 20);
		part_item = xcalloc((size_t)np + 1, sizeof(int));
		for (int p = 0; p < np; p++)
			part_item[p] = (int)get_i(&r, 0, bs[0].n - 1);
	}
	if (!r.bad)
		rc = plans ? plans_worker(&m, bps, bds, n, rounds, keep, WORKER_FD)
			   : worker(&m, &bs[0], out_item, part_item, &bds[0], WORKER_FD);
	/* the process ends here: what it holds goes with it */
	free(spec);
	return r.bad ? 2 : rc;
}

/*
 * Runs fn(arg, fd) in a forked child process and reads bytes of its answer
 * from fd into buf, killing the child when timeout seconds pass first.
 * true when the whole answer came and the child exited 0. With a program
 * to run afresh (worker_exe), that instead, on j's spec.
 */
static bool in_child(int (*fn)(void *arg, int fd), const struct job *j, void *buf, size_t bytes,
		     double timeout)
{
	int fd[2];
	pid_t pid;

	if (worker_exe && j->m->dir) {
		struct strbuf spec = STRBUF_INIT;
		int r;

		job_spec(j, &spec);
		r = in_worker(j->m, &spec, buf, bytes, timeout);
		sb_release(&spec);
		if (r >= 0)
			return r > 0;
	}
	if (pipe(fd) < 0)
		return false;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		_exit(fn((void *)j, fd[1]));
	}
	close(fd[1]);
	if (pid > 0)
		return answer_of(pid, fd[0], buf, bytes, timeout);
	close(fd[0]);
	return false;
}

/* In a worker: the bench model carries the weights it reads, not the model's too. */
static void drop_model_pages(struct batch *b)
{
	for (int i = 0; i < b->n; i++)
		if (i == 0 || b->items[i]->df->g != b->items[i - 1]->df->g)
			graph_drop_constant_pages(b->items[i]->df->g);
}

static int batch_child(void *arg, int fd)
{
	struct job *j = arg;

	drop_model_pages(j->b);
	return worker(j->m, j->b, j->out_item, j->part_item, j->bd, fd);
}

static int plans_child(void *arg, int fd)
{
	struct job *j = arg;

	/* the plans are one model's: its pages go once */
	drop_model_pages(j->bs[0]);
	return plans_worker(j->m, j->bs, j->bd, j->n, j->rounds, j->keep, fd);
}

/* Runs the worker on a built batch; fills item costs. false when it failed as a whole. */
static bool run_batch(struct measure *m, struct batch *b)
{
	struct partition *parts;
	int np, *part_item, *out_item;
	struct graph *bg = bench_graph(m, b, &parts, &np, &part_item);
	double *res = xmalloc(sizeof(double) * ((size_t)b->n + 1));
	struct bench_dims bd;
	struct job j = { m, b, NULL, part_item, NULL, &bd, b->n, 0, false, np };
	bool ok;

	/* output o of the bench model belongs to the item whose prefix it has */
	out_item = arena_alloc(bg->arena, sizeof(int) * ((size_t)bg->outputs.n + 1));
	for (int o = 0; o < bg->outputs.n; o++)
		out_item[o] = atoi(bg->values.v[bg->outputs.v[o]].name + 1);
	j.out_item = out_item;
	dims_of(bg, &bd);
	ok = in_child(batch_child, &j, res, sizeof(double) * (size_t)b->n, m->timeout);
	if (ok)
		for (int i = 0; i < b->n; i++)
			b->items[i]->cost = res[i] < 0 ? INFINITY : res[i];
	graph_free(bg);	/* out_item, part_item and bd are in its arena */
	free(res);
	return ok;
}

/*
 * Runs plans_worker on built plans: best[i] becomes the least of plan i's
 * round medians (+inf when it could not run). false when the worker failed
 * as a whole (crashed, hung): best is then untouched.
 */
static bool run_plans(struct measure *m, struct batch **bs, int n, int rounds, double *best)
{
	double *res = xmalloc(sizeof(double) * ((size_t)(n * rounds) + 1));
	struct bench_dims *bds = arena_alloc(&m->ctx->arena, sizeof(*bds) * ((size_t)n + 1));
	/* plans open side by side only while their weights together stay small */
	struct job j = { m, NULL, NULL, NULL, bs, bds, n, rounds,
			 bs[0]->items[0]->df->const_bytes * (size_t)n <= PLANS_OPEN_BYTES, 0 };
	bool ok;

	struct graph **bgs = xcalloc((size_t)n + 1, sizeof(*bgs));

	for (int i = 0; i < n; i++) {
		struct partition *parts;
		int np, *part_item;

		bgs[i] = bench_graph(m, bs[i], &parts, &np, &part_item);
		dims_of(bgs[i], &bds[i]);
	}
	ok = in_child(plans_child, &j, res, sizeof(double) * (size_t)(n * rounds),
		      m->timeout * n);
	for (int i = 0; i < n; i++)
		graph_free(bgs[i]);	/* bds[i] is in its arena */
	free(bgs);
	if (ok)
		for (int i = 0; i < n; i++) {
			best[i] = INFINITY;
			for (int r = 0; r < rounds; r++)
				if (res[r * n + i] >= 0 && res[r * n + i] < best[i])
					best[i] = res[r * n + i];
		}
	free(res);
	return ok;
}

/* ---- progress ---- */

static void progress(struct measure *m, int add)
{
	double el, left;
	int w = 30, fill;

	m->done += add;
	if (!m->progress || m->total == 0)
		return;
	el = time_now() - m->t0;
	left = m->done ? el / m->done * (m->total - m->done) : 0;
	if (m->o.budget > 0 && left > m->o.budget - el)
		left = m->o.budget > el ? m->o.budget - el : 0;
	fill = m->total ? w * m->done / m->total : 0;
	fprintf(stderr, "\rcollagec: measuring %d/%d [%.*s%*s] %s%.0f s left ", m->done,
		m->total, fill, "==============================", w - fill, "",
		m->done ? "" : "~", left);
	if (m->done >= m->total)
		fputs("\n", stderr);
	fflush(stderr);
}

/* ---- estimate ---- */

static struct batch *batch_new(struct arena *a, struct cost_item **items, int n)
{
	struct batch *b = arena_alloc(a, sizeof(*b));

	/* NULL-terminated; the caller's array need not be (one item is often &it) */
	b->items = arena_alloc(a, sizeof(*items) * (size_t)(n + 1));
	memcpy(b->items, items, sizeof(*items) * (size_t)n);
	b->n = n;
	return b;
}

/* Builds and runs batches, halving those that fail, until every item has a cost. */
static void measure_batches(struct measure *m, struct batches *todo)
{
	struct arena *a = &m->ctx->arena;

	while (todo->n) {
		struct batches next = { 0 };
		double t0 = time_now(), share;
		int n = 0;

		for (int i = 0; i < todo->n; i++)
			n += todo->v[i]->n;
		/* each item is charged its share of the builds and its bench model's run */
		build_all(m, todo->v, todo->n);
		share = n ? (time_now() - t0) / n : 0;
		for (int i = 0; i < todo->n; i++) {
			struct batch *b = todo->v[i];
			double t1 = time_now(), run;
			bool ok = !b->failed && b->n > 0 && run_batch(m, b);

			run = b->n ? (time_now() - t1) / b->n : 0;
			for (int k = 0; k < b->n; k++)
				b->items[k]->charge += share + run;
			batch_remove(b);
			if (ok || b->n == 0) {
				progress(m, b->n);
				continue;
			}
			if (b->n == 1) {
				b->items[0]->cost = INFINITY;
				progress(m, 1);
				continue;
			}
			vec_push(&next, batch_new(a, b->items, b->n / 2));
			vec_push(&next, batch_new(a, b->items + b->n / 2, b->n - b->n / 2));
		}
		vec_free(todo);
		*todo = next;
	}
}


/*
 * Splits items into bench models, jobs-way parallel, one target's items
 * next to each other; an item with a dynamic node alone (item_dynamic).
 */
static int measure_estimate(struct cost_estimator *e, struct cost_item *items, int n)
{
	struct measure *m = e->state;
	struct batches todo = { 0 };
	struct cost_item **sorted = xmalloc(sizeof(*sorted) * ((size_t)n + 1));
	int k = 0;

	if (!m->dir) {
		diag_error_status(m->ctx, STATUS_ENV, "cannot create a directory to measure "
				  "candidates in: %s", strerror(errno));
		free(sorted);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		items[i].cost = NAN;
		items[i].charge = 0;
	}
	m->cold = n > 0 && cost_weights_cold(items[0].df);
	/* the dynamic items first, each a bench model of its own */
	for (int i = 0; i < n; i++)
		if (item_dynamic(&items[i]))
			vec_push(&todo, batch_new(&m->ctx->arena, (struct cost_item *[]){ &items[i] },
						  1));
	/* group by target string, first seen first, items in order within */
	for (int i = 0; i < n; i++) {
		bool seen = false;

		if (item_dynamic(&items[i]))
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = !item_dynamic(&items[j]) &&
			       !strcmp(items[j].parts[0].target->str, items[i].parts[0].target->str);
		if (seen)
			continue;
		for (int j = i; j < n; j++)
			if (!item_dynamic(&items[j]) &&
			    !strcmp(items[j].parts[0].target->str, items[i].parts[0].target->str))
				sorted[k++] = &items[j];
	}
	/*
	 * jobs bench models, or more when they would hold over BATCH_MAX
	 * items; each takes a run of the sorted items, so it holds few
	 * targets, cut again where its constants would pass BATCH_BYTES
	 */
	{
		int nb = (k + BATCH_MAX - 1) / BATCH_MAX;

		if (nb < m->jobs)
			nb = m->jobs < k ? m->jobs : k;
		for (int b = 0, s = 0; b < nb; b++) {
			int e = (int)((int64_t)k * (b + 1) / nb);

			while (e > s) {
				size_t bytes = item_const_bytes(sorted[s]);
				int t = s + 1;

				for (; t < e; t++) {
					size_t more = item_const_bytes(sorted[t]);

					if (bytes + more > BATCH_BYTES)
						break;
					bytes += more;
				}
				vec_push(&todo, batch_new(&m->ctx->arena, sorted + s, t - s));
				s = t;
			}
		}
	}
	m->total += n;
	if (!m->t0)
		m->t0 = time_now();
	progress(m, 0);
	measure_batches(m, &todo);
	vec_free(&todo);
	free(sorted);
	e->n_estimated += n;
	return 0;
}

/*
 * Whole plans: each one its own bench model (built jobs at a time), timed by
 * the wall-clock time of whole runs with profiling off (what a user's run
 * takes, the executor and the gaps between kernels included), in four
 * rounds that alternate between the plans, so that a burst of load on the
 * machine (on a shared machine they last seconds) does not decide between
 * plans a few percent apart; a plan costs the least of its round medians.
 * Under a budget, two rounds (ResNet-50's two plans took 14.7 s on 2
 * cores, half of it four rounds of 5 runs of 60 to 100 ms each, after
 * opening). A plan that fails costs +inf (no halving: a plan is one item).
 */
static int measure_plans(struct cost_estimator *e, struct cost_item *items, int n)
{
	struct measure *m = e->state;
	struct arena *a = &m->ctx->arena;
	struct batch **bs = arena_alloc(a, sizeof(*bs) * ((size_t)n + 1));
	double *best = arena_alloc(a, sizeof(double) * ((size_t)n + 1));
	int rounds = m->o.budget > 0 ? 2 : 4;

	if (!m->dir) {
		diag_error_status(m->ctx, STATUS_ENV, "cannot create a directory to measure "
				  "plans in: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct cost_item *it = &items[i];

		bs[i] = batch_new(a, &it, 1);
		bs[i]->whole = true;
		best[i] = INFINITY;
	}
	m->total += n;
	if (!m->t0)
		m->t0 = time_now();
	progress(m, 0);
	build_all(m, bs, n);
	/* one worker for all plans; should it fail as a whole, one per plan and round */
	if (!run_plans(m, bs, n, rounds, best))
		for (int r = 0; r < rounds; r++)
			for (int i = 0; i < n; i++)
				if (!bs[i]->failed && bs[i]->n == 1 && run_batch(m, bs[i]) &&
				    items[i].cost < best[i])
					best[i] = items[i].cost;
	for (int i = 0; i < n; i++) {
		batch_remove(bs[i]);
		items[i].cost = best[i];
	}
	progress(m, n);
	e->n_estimated += n;
	return 0;
}

/* ---- transitions ---- */

/*
 * Measures the penalty of every ordered pair of targets (from the cost
 * cache when it has them): a pair's three probes in one bench model, the
 * pairs and the extra items over jobs bench models, built side by side.
 * Pairs where a target runs no MatMul alone cost 0. Each item measured is
 * charged an even share of the measuring.
 */
static int measure_transitions(struct cost_estimator *e, struct target *const *ts, int nt,
			       double *pen, struct cost_item *extra, int n_extra, int64_t *extra_us)
{
	struct measure *m = e->state;
	struct arena *a = &m->ctx->arena;
	struct graph *g = cost_probe_graph(m->ctx, OP_MATMUL, 64, 64, 2);
	struct dataflow df;
	const struct subgraph **s1 = arena_alloc(a, sizeof(*s1) * (size_t)(nt + 1));
	const struct subgraph **s2 = arena_alloc(a, sizeof(*s2) * (size_t)(nt + 1));
	struct cost_item *it = arena_alloc(a, sizeof(*it) * (size_t)(3 * nt * nt + 1));
	struct cost_part *pp = arena_alloc(a, sizeof(*pp) * (size_t)(2 * nt * nt + 1));
	struct cost_item **todo_items = arena_alloc(a, sizeof(*todo_items) *
						     (size_t)(3 * nt * nt + n_extra + 1));
	struct cost_key *keys = arena_alloc(a, sizeof(*keys) * (size_t)(nt * nt + 1));
	int *pending = arena_alloc(a, sizeof(int) * (size_t)(nt * nt + 1));
	int n_todo = 0, n_pending = 0;

	dataflow_init(&df, g, g->arena);
	for (int t = 0; t < nt; t++) {
		s1[t] = cost_probe_single(m->ctx, &df, ts[t], 0);
		s2[t] = cost_probe_single(m->ctx, &df, ts[t], 1);
	}
	for (int x = 0; x < nt; x++)
		for (int y = 0; y < nt; y++) {
			int k = x * nt + y;
			struct cost_item *c = &it[3 * k];
			struct cost_part *p = &pp[2 * k];
			double sec;

			pen[k] = 0;
			if (x == y || !s1[x] || !s2[y])
				continue;
			p[0] = (struct cost_part){ s1[x], ts[x], "probe" };
			p[1] = (struct cost_part){ s2[y], ts[y], "probe" };
			c[0] = (struct cost_item){ &df, 2, p, NAN, 0 };
			c[1] = (struct cost_item){ &df, 1, p, NAN, 0 };
			c[2] = (struct cost_item){ &df, 1, p + 1, NAN, 0 };
			keys[k] = cost_key_make(m->ctx, cost_item_key(a, &c[0]),
						arena_printf(a, "%s->%s", ts[x]->str, ts[y]->str),
						m->threads, m->o.cpu);
			if (m->cache) {
				struct cost_meta meta = { NAN, NULL, 0, NULL };
				int found = cost_cache_get_meta(m->cache, &keys[k], &sec, &meta);

				if (found < 0)
					goto fail;
				if (found) {
					pen[k] = sec;
					cost_charge_hit(e, &meta);
					continue;
				}
			}
			for (int j = 0; j < 3; j++)
				todo_items[n_todo++] = &c[j];
			pending[n_pending++] = k;
		}
	*extra_us = 0;
	for (int i = 0; i < n_extra; i++)
		extra[i].cost = NAN;
	if (n_todo + n_extra) {
		struct batches todo = { 0 };
		int n = n_todo + n_extra, nb = m->jobs < n ? m->jobs : n;
		double t0 = time_now();
		struct cost_meta meta = { NAN, NULL, 0, e->origin };
		int64_t each;

		/* the extra items after the pairs: batch b takes a run of both */
		for (int b = 0, s = 0, x = 0; b < nb; b++) {
			int end = (int)((int64_t)n_pending * (b + 1) / nb);
			int xend = (int)((int64_t)n_extra * (b + 1) / nb);
			struct cost_item **bi = arena_alloc(a, sizeof(*bi) *
							    (size_t)(3 * (end - s) + xend - x + 1));
			int k = 0;

			for (int j = 3 * s; j < 3 * end; j++)
				bi[k++] = todo_items[j];
			for (int j = x; j < xend; j++)
				bi[k++] = &extra[j];
			if (k)
				vec_push(&todo, batch_new(a, bi, k));
			s = end;
			x = xend;
		}
		m->total += n;
		if (!m->t0)
			m->t0 = time_now();
		measure_batches(m, &todo);
		vec_free(&todo);
		/* each item charged its share of the measuring (cost.h: origin) */
		each = (int64_t)((time_now() - t0) * 1e6) / n;
		meta.charge_us = 3 * each;
		*extra_us = each;
		e->charged_us += meta.charge_us * n_pending;
		if (m->cache && cost_cache_begin(m->cache) < 0)
			goto fail;
		for (int i = 0; i < n_pending; i++) {
			int k = pending[i];
			const struct cost_item *c = &it[3 * k];
			double sec = c[0].cost - c[1].cost - c[2].cost;

			pen[k] = isfinite(sec) && sec > 0 ? sec : 0;
			if (m->cache && cost_cache_put_meta(m->cache, &keys[k], pen[k], keys[k].target,
							    &meta) < 0)
				goto fail;
		}
		if (m->cache && cost_cache_commit(m->cache) < 0)
			goto fail;
	}
	graph_free(g);
	return 0;
fail:
	graph_free(g);
	return -1;
}

static void measure_free(struct cost_estimator *e)
{
	struct measure *m = e->state;

	if (m->dir) {
		dir_remove_tree(m->dir);
		free(m->dir);
	}
	free(m);
	free(e);
}

struct cost_estimator *cost_measure_new(struct collagec_ctx *ctx, const struct measure_options *o,
					struct cost_cache *cache)
{
	struct cost_estimator *e = xcalloc(1, sizeof(*e));
	struct measure *m = xcalloc(1, sizeof(*m));

	if (!o->cc || !o->cflags || !o->cpu)
		BUG("measure_options without cc, cflags or cpu");
	m->ctx = ctx;
	m->o = *o;
	m->cache = cache;
	m->lo.cc = o->cc;
	m->lo.cflags = o->cflags;
	m->lo.march = emit_cpu_flags(o->cpu);
	if (!m->lo.march)
		BUG("unchecked --cpu '%s'", o->cpu);
	/* the runtime's object (rt.o) comes from the object cache, as for the final compile */
	m->lo.march_resolved = emit_cpu_resolve(ctx, m->lo.cc, o->cpu);
	m->lo.objects = o->objects;
	m->threads = o->threads > 0 ? o->threads : 1;
	m->jobs = o->jobs > 0 ? o->jobs : 1;
	m->progress = o->progress && !ctx->quiet;
	m->timeout = o->timeout > 0 ? o->timeout : WORKER_TIMEOUT_S;
	m->dir = dir_make_temp("measure");
	/*
	 * Without an object cache nothing is kept past this compile, but its
	 * bench builds still share the runtime's object and identical kernel
	 * files, in an object cache of their own that goes with the measuring
	 * directory
	 */
	if (!o->objects && m->dir)
		m->lo.objects = arena_printf(&ctx->arena, "%s/objects", m->dir);
	e->name = "measure";
	e->estimate = measure_estimate;
	e->transitions = measure_transitions;
	e->estimate_plans = measure_plans;
	e->free = measure_free;
	e->ctx = ctx;
	e->state = m;
	return e;
}
