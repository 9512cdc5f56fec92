/*
 * compile.c - the pipeline as one readable function:
 * import -> bind shapes -> passes -> partition -> lower -> plan -> emit ->
 * link -> metadata.
 */

#include "compile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collage/collage.h"
#include "emit/emit.h"
#include "emit/metadata.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "passes/passes.h"
#include "tir/tir_print.h"
#include "../runtime/rt_cores.h"

/* ---- --shape ---- */

static void remap_syms(struct graph *g)
{
	int map[256], n = 0;
	bool used[256] = { false };
	const char **names = arena_alloc(g->arena, sizeof(char *) * (size_t)(g->syms.n + 1));

	for (int v = 0; v < g->values.n; v++)
		for (int k = 0; k < g->values.v[v].shape.rank; k++)
			for (int j = 0; j < g->values.v[v].shape.d[k].n; j++)
				used[g->values.v[v].shape.d[k].sym[j]] = true;
	for (int s = 0; s < g->syms.n; s++) {
		map[s] = used[s] ? n : -1;
		if (used[s])
			names[n++] = g->syms.v[s];
	}
	for (int v = 0; v < g->values.n; v++)
		for (int k = 0; k < g->values.v[v].shape.rank; k++)
			for (int j = 0; j < g->values.v[v].shape.d[k].n; j++)
				g->values.v[v].shape.d[k].sym[j] =
					(uint8_t)map[g->values.v[v].shape.d[k].sym[j]];
	for (int s = 0; s < n; s++)
		g->syms.v[s] = names[s];
	g->syms.n = n;
}

static void subst_sym(struct graph *g, int sym, int64_t val)
{
	for (int v = 0; v < g->values.n; v++) {
		struct shape *s = &g->values.v[v].shape;

		for (int k = 0; k < s->rank; k++) {
			struct dim d = s->d[k], r = dim_const(d.c);

			for (int j = 0; j < d.n; j++) {
				if (d.sym[j] == sym)
					r.c *= val;
				else
					r.sym[r.n++] = d.sym[j];
			}
			s->d[k] = r;
		}
	}
}

int compile_bind_shapes(struct graph *g, const char *const *shapes, int n)
{
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(shapes[i], '=');
		char *name;
		int64_t dims[MAX_RANK];
		int rank = 0, sym = -1, input = -1;
		const char *p;

		if (!eq || eq == shapes[i]) {
			diag_error_status(g->ctx, STATUS_USAGE, "--shape '%s': expected NAME=DIMS",
					  shapes[i]);
			return -1;
		}
		name = arena_strndup(g->arena, shapes[i], (size_t)(eq - shapes[i]));
		for (p = eq + 1; *p;) {
			char *end;
			long long v = strtoll(p, &end, 10);

			if (end == p || v < 0 || v > DIM_LIMIT || rank == MAX_RANK ||
			    (*end && *end != ',')) {
				diag_error_status(g->ctx, STATUS_USAGE, "--shape '%s': dimensions "
						  "must be integers from 0 to %lld", shapes[i],
						  (long long)DIM_LIMIT);
				return -1;
			}
			dims[rank++] = v;
			p = *end ? end + 1 : end;
		}
		for (int k = 0; k < g->inputs.n; k++)
			if (!strcmp(g->values.v[g->inputs.v[k]].name, name))
				input = g->inputs.v[k];
		for (int k = 0; k < g->syms.n; k++)
			if (!strcmp(g->syms.v[k], name))
				sym = k;
		if (input >= 0) {
			struct value *v = &g->values.v[input];

			if (rank != v->shape.rank) {
				diag_error_status(g->ctx, STATUS_USAGE, "--shape '%s': input '%s' has "
						  "rank %d", shapes[i], name, v->shape.rank);
				return -1;
			}
			for (int k = 0; k < rank; k++) {
				if (v->shape.d[k].n == 1 && v->shape.d[k].c == 1)
					subst_sym(g, v->shape.d[k].sym[0], dims[k]);
				else if (v->shape.d[k].n == 0 && v->shape.d[k].c != dims[k]) {
					diag_error_status(g->ctx, STATUS_USAGE, "--shape '%s': "
							  "dimension %d of '%s' is fixed at %lld",
							  shapes[i], k, name,
							  (long long)v->shape.d[k].c);
					return -1;
				}
			}
		} else if (sym >= 0) {
			if (rank != 1) {
				diag_error_status(g->ctx, STATUS_USAGE, "--shape '%s': a symbolic "
						  "dim takes one value", shapes[i]);
				return -1;
			}
			subst_sym(g, sym, dims[0]);
		} else {
			diag_error_status(g->ctx, STATUS_USAGE, "--shape '%s': the model has no "
					  "input or symbolic dim named '%s'", shapes[i], name);
			return -1;
		}
	}
	remap_syms(g);
	return 0;
}

/* ---- targets and partitions ---- */

/*
 * Every available kind that can run here (a GPU kind with its GPU), c
 * last: the default target list.
 */
static const char *default_targets(struct collagec_ctx *ctx, const struct compile_options *o)
{
	struct strbuf sb = STRBUF_INIT;
	const char *r;

	for (int i = 0; i < o->n_kinds; i++) {
		const struct target_kind *k = o->kinds[i];

		if (strcmp(k->name, "c") && (!k->unavailable || !k->unavailable()) &&
		    (!k->cannot_run || !k->cannot_run()))
			sb_printf(&sb, "%s,", k->name);
	}
	sb_puts(&sb, "c");
	r = arena_strdup(&ctx->arena, sb_str(&sb));
	sb_release(&sb);
	return r;
}

static int parse_targets(struct collagec_ctx *ctx, const struct compile_options *o,
			 struct target ***out, int *n_out)
{
	char *list = arena_strdup(&ctx->arena, o->targets ? o->targets : default_targets(ctx, o));
	char *save, *tok;
	struct target **ts = arena_alloc(&ctx->arena, sizeof(*ts) * 16);
	int n = 0;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct target *t;
		const char *why;

		while (*tok == ' ')
			tok++;
		if (n == 16) {
			diag_error_status(ctx, STATUS_USAGE, "too many targets");
			return -1;
		}
		t = target_parse(ctx, o->kinds, o->n_kinds, tok);
		if (!t)
			return -1;
		if (t->kind->unavailable && (why = t->kind->unavailable())) {
			diag_error_status(ctx, STATUS_ENV, "target '%s' is unavailable: %s",
					  t->kind->name, why);
			return -1;
		}
		ts[n++] = t;
	}
	if (n == 0) {
		diag_error_status(ctx, STATUS_USAGE, "--target needs at least one target");
		return -1;
	}
	*out = ts;
	*n_out = n;
	return 0;
}

/* Graph outputs computed by no node (constants, inputs) get a copy node. */
static void add_output_copies(struct graph *g)
{
	for (int i = 0; i < g->outputs.n; i++) {
		int v = g->outputs.v[i], copy, ni;
		struct value *src;

		if (g->values.v[v].producer >= 0)
			continue;
		copy = graph_add_value(g, g->values.v[v].name);
		src = &g->values.v[v];
		src->name = arena_printf(g->arena, "%s.source", src->name);
		src->flags &= ~(unsigned)VALUE_OUTPUT;
		g->values.v[copy].dtype = src->dtype;
		g->values.v[copy].shape = src->shape;
		g->values.v[copy].has_shape = true;
		g->values.v[copy].flags = VALUE_OUTPUT | (src->flags & (VALUE_SEQ | VALUE_SEQ_OPT |
									  VALUE_MIXED));
		ni = graph_add_node(g, OP_IDENTITY, arena_printf(g->arena, "output_copy_%d", i), &v,
				    1, &copy, 1);
		g->nodes.v[ni].op_type = "Identity";
		node_span_self(g, &g->nodes.v[ni]);
		g->outputs.v[i] = copy;
	}
}

/*
 * Phase 1-4 (or the "none" placement): the estimator and the cost cache live
 * only as long as the search.
 */
static int partition(struct collagec_ctx *ctx, struct graph *g, const struct compile_options *o,
		     struct target **ts, int nt, const struct pattern_set *ps,
		     struct partition **parts, int *np, struct collage_stats *cs)
{
	struct collage_options co = { 0 };
	struct measure_options mo = { 0 };
	struct cost_cache *cache = NULL;
	int rc;

	if (!strcmp(o->search, "none"))
		return collage_place_none(g, ts, nt, ps, parts, np);
	co.search = o->search;
	co.max_depth = o->max_depth;
	/*
	 * without --threads the model opens on the physical cores of the
	 * machine that runs it: measure at those of this one, the count it
	 * opens with here
	 */
	co.threads = o->threads > 0 ? o->threads : rt_physical_cores();
	co.cpu = o->cpu ? o->cpu : COLLAGEC_DEFAULT_CPU;
	co.dump_dir = o->dump_dir;
	co.check_plans = !o->no_plan_check;
	co.patterns = ps;
	if (!strcmp(o->search, "collage")) {
		const char *est = o->estimator ? o->estimator : "measure";

		if (strcmp(est, "mock") && !o->no_cache &&
		    cost_cache_open(ctx, o->cache, &cache) < 0)
			return -1;
		mo.cc = o->cc ? o->cc : COLLAGEC_DEFAULT_CC;
		mo.cflags = o->cflags ? o->cflags : COLLAGEC_DEFAULT_CFLAGS;
		mo.cpu = co.cpu;
		mo.objects = o->no_cache ? NULL : objcache_dir(&ctx->arena, o->cache ? o->cache
							 : cost_cache_default_path(ctx));
		mo.threads = co.threads;
		mo.jobs = o->jobs > 0 ? o->jobs : 1;
		mo.progress = o->progress;
		mo.budget = o->search_budget;
		mo.timeout = o->measure_timeout;
		if (!strcmp(est, "mock")) {
			co.estimator = cost_mock_new(ctx, o->mock_costs);
		} else if (!strcmp(est, "analytic")) {
			co.estimator = cost_analytic_new(ctx, &mo, cache);
		} else if (!strcmp(est, "measure")) {
			co.cache = cache;
			co.estimator = cost_measure_new(ctx, &mo, cache);
			co.guess = cost_analytic_new(ctx, &mo, cache);
			co.budget = o->search_budget;
			co.jobs = o->jobs > 0 ? o->jobs : 1;
		} else {
			BUG("estimator '%s'", est);
		}
	}
	rc = collage_partition(g, ts, nt, ps, &co, parts, np, cs);
	if (co.estimator)
		co.estimator->free(co.estimator);
	if (co.guess)
		co.guess->free(co.guess);
	if (cache)
		cost_cache_close(cache);
	return rc;
}

/*
 * --dump-ir: the loop IR after each lowering step, NN-lower.K-STEP.tir
 * (numbered after the pass dumps, K from 1), then NN-lower.tir, the loop IR
 * that tir_to_runtime printed: the last step's. Every file lists the same
 * partitions in the same order, so consecutive ones diff to what a step did.
 */
static int dump_lower(struct graph *g, const char *dir, struct strbuf *snaps)
{
	for (int s = 0; s <= LOWER_STEP_COUNT; s++) {
		struct strbuf *sb = &snaps[s < LOWER_STEP_COUNT ? s : LOWER_STEP_COUNT - 1];
		char *path = s < LOWER_STEP_COUNT
			? arena_printf(g->arena, "%s/%02d-lower.%d-%s.tir", dir, PASS_COUNT + 1, s + 1,
				       lower_step_names[s])
			: arena_printf(g->arena, "%s/%02d-lower.tir", dir, PASS_COUNT + 1);

		if (file_write_atomic(path, sb_str(sb), sb->len) < 0) {
			diag_error_status(g->ctx, STATUS_ENV, "cannot write '%s': %s", path,
					  strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* --depfile: OUT, OUT.json and OUT.h depend on the model and its data files. */
static void depfile_text(struct graph *g, const struct compile_options *o, const char *json,
			 const char *header, struct strbuf *sb)
{
	sb_printf(sb, "%s %s%s%s:", o->out, json, header ? " " : "", header ? header : "");
	for (int i = 0; i < g->files.n; i++) {
		sb_puts(sb, " \\\n ");
		for (const char *p = g->files.v[i]; *p; p++) {
			if (*p == ' ' || *p == '#')
				sb_putc(sb, '\\');
			if (*p == '$')
				sb_putc(sb, '$');
			sb_putc(sb, *p);
		}
	}
	sb_putc(sb, '\n');
}

/* OUT with .so (or .a) replaced by ext (".json", ".h"), or OUT + ext. */
static const char *beside_out(struct collagec_ctx *ctx, const char *out, const char *ext)
{
	size_t n = strlen(out);

	if (n > 3 && !strcmp(out + n - 3, ".so"))
		return arena_printf(&ctx->arena, "%.*s%s", (int)(n - 3), out, ext);
	if (emit_out_is_archive(out))
		return arena_printf(&ctx->arena, "%.*s%s", (int)(n - 2), out, ext);
	return arena_printf(&ctx->arena, "%s%s", out, ext);
}

/* The absolute path of the directory path lies in (arena), or NULL with errno set. */
static const char *dir_of(struct collagec_ctx *ctx, const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d = slash ? arena_strndup(&ctx->arena, path, slash == path ? 1 : (size_t)(slash - path))
		  : (char *)".";
	char *r = realpath(d, NULL), *a;

	if (!r)
		return NULL;
	a = arena_strdup(&ctx->arena, r);
	free(r);
	return a;
}

/*
 * Where the weights go: with --weights, or past EMIT_WEIGHTS_BESIDE_BYTES
 * (as onnx-mlir moves them out at 1.5 GB), into a file beside the code
 * (wf filled in, their hash taken), else into OUT.so (wf->path NULL).
 * OUT.so records the file by its name when the two share a directory, so
 * that they move together, else by its absolute path; OUT.a always by
 * that (a program linking it lies anywhere). 0 or -1.
 */
static int weights_place(struct collagec_ctx *ctx, const struct compile_options *o,
			 const struct exec_plan *ep, struct weights_file *wf)
{
	const char *path = o->weights, *dw, *dout, *base;
	char *hex = arena_alloc(&ctx->arena, 65);

	if (!path && (o->body || ep->weights_bytes <= EMIT_WEIGHTS_BESIDE_BYTES))
		return 0;
	if (!path)
		path = beside_out(ctx, o->out, ".weights");
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	dw = dir_of(ctx, path);
	dout = dw ? dir_of(ctx, o->out) : NULL;
	if (!dw || !dout || !*base) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", path,
				  *base ? strerror(errno) : "a directory, not a file");
		return -1;
	}
	if (!strcmp(path, o->out) || (o->json && !strcmp(path, o->json))) {
		diag_error_status(ctx, STATUS_USAGE, "--weights '%s' is another output's name", path);
		return -1;
	}
	if (emit_weights_sha256(ep, hex) < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot hash the weights");
		return -1;
	}
	wf->path = path;
	wf->name = !strcmp(dw, dout) && !emit_out_is_archive(o->out) ? base
		   : arena_printf(&ctx->arena, "%s%s%s", dw, strcmp(dw, "/") ? "/" : "", base);
	wf->bytes = ep->weights_bytes;
	wf->sha256 = hex;
	return 0;
}

/*
 * Writes each output but OUT.so (outs[0], already staged by emit_link) to
 * a temporary beside it, then puts them all in place: first the old OUT.so
 * goes, then the others are renamed, and the new OUT.so comes last. A
 * compile stopped anywhere in between, by SIGKILL too, so never leaves an
 * OUT.so beside an OUT.json, OUT.h or depfile from another compile: at
 * worst there is no OUT.so, and make runs the compile again. 0 or -1.
 */
struct output {
	const char *path;
	const char *data;	/* NULL for OUT.so and the weights file */
	size_t len;
	char *tmp;
};

static int commit_outputs(struct collagec_ctx *ctx, struct output *outs, int n)
{
	int i;

	for (i = 1; i < n; i++) {
		if (outs[i].tmp)
			continue;	/* staged already: the weights file */
		outs[i].tmp = file_write_temp(outs[i].path, outs[i].data, outs[i].len);
		if (!outs[i].tmp)
			goto fail;
	}
	if (unlink(outs[0].path) < 0 && errno != ENOENT) {
		i = 0;
		goto fail;
	}
	for (i = n - 1; i >= 0; i--) {
		int rc = file_commit(outs[i].tmp, outs[i].path);

		outs[i].tmp = NULL;
		if (rc < 0)
			goto fail;
	}
	return 0;
fail:
	diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", outs[i].path,
			  strerror(errno));
	for (int k = 0; k < n; k++) {
		file_discard(outs[k].tmp);
		outs[k].tmp = NULL;
	}
	return -1;
}

/* How long each stage took: -v prints them, --stats records them. */
struct stages {
	double t;			/* the current stage's start */
	int n;
	const char *name[8];
	double seconds[8];
};

static void stage(struct collagec_ctx *ctx, const char *what, struct stages *st)
{
	double now = time_now();

	diag_note(ctx, "%-20s %.3f s", what, now - st->t);
	if (st->n == (int)ARRAY_SIZE(st->name))
		BUG("more than %d compile stages", st->n);
	st->name[st->n] = what;
	st->seconds[st->n++] = now - st->t;
	st->t = now;
}

/*
 * --stats FILE: what this compile cost and what the caches saved, as JSON:
 * the stages' seconds, and what the search measured and found in the cost
 * cache, for the whole and per plan and candidate (in OUT.json's order).
 * None of it is in OUT.json, which stays byte-identical whatever the
 * timings and the state of the caches.
 */
static char *stats_json(struct graph *g, const struct compile_options *o, const struct stages *st,
			const struct collage_stats *cs, const struct link_options *lo,
			int n_kfiles, int n_steps, double seconds)
{
	cJSON *j = cJSON_CreateObject(), *a = cJSON_CreateObject(), *c, *l;
	bool measured = !strcmp(o->search, "collage") &&
			!strcmp(o->estimator ? o->estimator : "measure", "measure");
	char *r;

	cJSON_AddStringToObject(j, "model", o->model);
	cJSON_AddStringToObject(j, "out", o->out);
	cJSON_AddNumberToObject(j, "seconds", seconds);
	for (int i = 0; i < st->n; i++)
		cJSON_AddNumberToObject(a, st->name[i], st->seconds[i]);
	cJSON_AddItemToObject(j, "stages", a);
	cJSON_AddNumberToObject(j, "nodes", g->nodes.n);
	cJSON_AddNumberToObject(j, "kernels", n_steps);
	cJSON_AddNumberToObject(j, "c_functions", g->kernel_syms.n);
	c = cJSON_AddObjectToObject(j, "object_cache");
	cJSON_AddBoolToObject(c, "enabled", lo->objects != NULL);
	cJSON_AddNumberToObject(c, "kernel_files", n_kfiles);
	cJSON_AddNumberToObject(c, "hits", lo->objects_hit);
	c = cJSON_AddObjectToObject(j, "cost_cache");
	cJSON_AddBoolToObject(c, "enabled", !o->no_cache && strcmp(o->search, "none"));
	cJSON_AddNumberToObject(c, "candidates", cs->candidates);
	cJSON_AddNumberToObject(c, "distinct", cs->unique);
	cJSON_AddNumberToObject(c, "hits", cs->cache_hits);
	/* estimated counts the candidates handed to the estimator, hits left out */
	cJSON_AddNumberToObject(c, "measured", measured ? cs->estimated : 0);
	cJSON_AddNumberToObject(c, "measure_seconds", cs->measure_seconds);
	/* estimate first: what stayed an estimate, the rounds and the budget */
	cJSON_AddNumberToObject(c, "estimated", cs->guessed);
	cJSON_AddNumberToObject(c, "rounds", cs->rounds);
	cJSON_AddNumberToObject(c, "budget_spent", cs->budget_spent);
	cJSON_AddNumberToObject(c, "plans_skipped", cs->plans_skipped);
	cJSON_AddNumberToObject(c, "states", cs->states);
	cJSON_AddBoolToObject(c, "transitions_dropped", cs->untagged);
	l = cJSON_AddArrayToObject(c, "plans");
	for (int i = 0; i < cs->n_plans; i++) {
		cJSON *p = cJSON_CreateObject();

		cJSON_AddStringToObject(p, "name", cs->plans[i].name);
		cJSON_AddBoolToObject(p, "timed", !isnan(cs->plans[i].cost));
		cJSON_AddBoolToObject(p, "cached", cs->plans[i].cached);
		cJSON_AddItemToArray(l, p);
	}
	l = cJSON_AddArrayToObject(c, "list");
	for (int i = 0; i < cs->n_list; i++) {
		cJSON *p = cJSON_CreateObject();

		cJSON_AddStringToObject(p, "target", cs->list[i].target);
		cJSON_AddBoolToObject(p, "measured", cs->list[i].measured);
		cJSON_AddBoolToObject(p, "cached", cs->list[i].cached);
		cJSON_AddItemToArray(l, p);
	}
	r = cJSON_Print(j);
	cJSON_Delete(j);
	if (!r)
		BUG("cJSON_Print failed");
	return r;
}

/* Whether symbol s is bound by the model's inputs (not derived, not data). */
static bool input_sym(struct graph *g, int s)
{
	if (graph_sym_late(g, s))
		return false;
	for (int i = 0; i < g->sym_defs.n; i++)
		if (g->sym_defs.v[i].sym == s)
			return false;
	return true;
}

/*
 * Compiling a run-time loop's body: what its outputs are, for the Loop
 * that calls it. A dim is static, one of the symbols its inputs bind
 * (which the outer model knows by that name), or else unknown: -1, or -2
 * when it depends on data.
 */
static int body_outputs(struct graph *g, struct loop_body *lb)
{
	if (g->outputs.n != lb->n_out) {
		diag_error(g->ctx, "%s: gives a sequence or optional; a loop body or If branch "
			   "run at run time gives tensors only", g->name ? g->name : "body");
		return -1;
	}
	for (int i = 0; i < g->outputs.n; i++) {
		const struct value *v = &g->values.v[g->outputs.v[i]];
		struct loop_out *lo = &lb->outs[i];

		lo->dtype = v->dtype;
		lo->rank = v->shape.rank;
		lo->mixed = (v->flags & VALUE_MIXED) != 0;
		for (int k = 0; k < v->shape.rank; k++) {
			struct dim d = v->shape.d[k];

			lo->c[k] = !d.n ? d.c : graph_dim_late(g, d) ? -2 : -1;
			lo->sym[k] = d.n == 1 && d.c == 1 && input_sym(g, d.sym[0])
				? g->syms.v[d.sym[0]] : NULL;
		}
	}
	return 0;
}

/*
 * Compiles run-time loop body lb (written out) into an archive, filling
 * lb->outs; with probe, only imports and infers it, to fill lb->outs.
 */
static int compile_body(struct collagec_ctx *ctx, const struct compile_options *o,
			struct loop_body *lb, bool probe)
{
	struct compile_options so = *o;
	const char *path = ctx->model_path;
	int rc;

	so.model = lb->model;
	so.out = arena_printf(&ctx->arena, "%s/body.a", lb->dir);
	so.json = NULL;
	so.prefix = lb->prefix;
	so.shapes = so.elements = so.tune_shapes = NULL;
	so.n_shapes = so.n_elements = so.n_tune_shapes = 0;
	so.dump_dir = so.depfile = so.stats = so.weights = NULL;
	so.body = lb;
	so.body_probe = probe;
	so.model_name = arena_printf(&ctx->arena, "%s#%s", o->model_name ? o->model_name : o->model,
				     lb->prefix);
	rc = collagec_compile(ctx, &so, NULL);
	ctx->model_path = path;
	if (rc == 0 && !o->emit_only && !probe)
		lb->archive = so.out;
	return rc;
}

/*
 * The bodies of g's run-time loops, which inference listed in g->loops
 * (probed, written out), each compiled into its archive. What they give
 * (lb->outs) stays as inference left it.
 */
static int compile_loops(struct graph *g, const struct compile_options *o)
{
	for (int i = 0; i < g->loops.n; i++) {
		struct loop_body lb = g->loops.v[i];

		lb.outs = arena_alloc(g->arena, sizeof(*lb.outs) * (size_t)(lb.n_out + 1));
		if (compile_body(g->ctx, o, &lb, false) < 0)
			return -1;
		g->loops.v[i].archive = lb.archive;
		g->loops.v[i].ldlibs = lb.ldlibs;
	}
	return 0;
}

/*
 * Import and passes. Shape inference may need a run-time loop's probe
 * (graph.probes) that was not made yet: then the diagnostics of this try
 * go nowhere, the body is probed (compile_body), and the model is imported
 * again with the probes made so far, until inference needs no new one.
 * The graph (owned), or NULL after diagnostics.
 */
static struct graph *compile_front(struct collagec_ctx *ctx, const struct compile_options *o,
				   struct stages *st)
{
	VEC(struct loop_body) probes = { 0 };
	struct stages st0 = *st;
	struct graph *g;
	int rc;

	for (;;) {
		struct diag_hush h;
		struct loop_body lb;

		*st = st0;
		rc = -1;
		diag_hush_begin(ctx, &h);
		g = onnx_import_bound(ctx, o->model, o->elements, o->n_elements, o->shapes,
				      o->n_shapes, o->body != NULL);
		if (g) {
			stage(ctx, "import", st);
			g->call_loops = true;
			g->probes = probes.v;
			g->n_probes = probes.n;
			g->loop_prefix = o->prefix ? o->prefix : "collagec";
			if (compile_bind_shapes(g, o->shapes, o->n_shapes) == 0)
				rc = passes_run(g, o->dump_dir);
		}
		if (!g || !g->probe_wanted) {
			diag_hush_keep(ctx, &h);
			break;
		}
		diag_hush_end(ctx, &h);
		lb = *g->probe_wanted;
		graph_free(g);
		g = NULL;
		lb.outs = arena_alloc(&ctx->arena, sizeof(*lb.outs) * (size_t)(lb.n_out + 1));
		rc = compile_body(ctx, o, &lb, true);
		dir_remove_tree(lb.dir);
		if (rc < 0)
			break;
		vec_push(&probes, lb);
	}
	vec_free(&probes);
	if (rc == 0)
		return g;
	graph_free(g);
	return NULL;
}

/* The loops' archives and their link flags, for the link of the model that calls them. */
static void loop_links(struct graph *g, const struct compile_options *o, struct strbuf *ldlibs,
		       struct link_options *lo)
{
	struct strbuf a = STRBUF_INIT;

	for (int i = 0; i < g->loops.n; i++) {
		const struct loop_body *lb = &g->loops.v[i];

		if (lb->archive)
			sb_printf(&a, " %s", lb->archive);
		if (lb->ldlibs && lb->ldlibs[0])
			sb_printf(ldlibs, "%s%s", ldlibs->len ? " " : "", lb->ldlibs);
	}
	if (a.len) {
		lo->archives = arena_strdup(g->arena, sb_str(&a));
		lo->archive_api = arena_printf(g->arena, "%s_loop*",
					       o->prefix ? o->prefix : "collagec");
	}
	sb_release(&a);
}

int collagec_compile(struct collagec_ctx *ctx, const struct compile_options *o,
		     struct compile_stats *stats)
{
	double t0 = time_now();
	struct stages st = { .t = t0 };
	struct graph *g = NULL;
	struct target **targets;
	struct partition *parts = NULL;
	struct pattern_set patterns = { { 0 } };
	struct exec_plan ep = { 0 };
	struct model_sources ms = { .kernels = STRBUF_INIT };
	struct strbuf ldlibs = STRBUF_INIT, model_c = STRBUF_INIT;
	char *meta = NULL;
	const char *json = o->json ? o->json : beside_out(ctx, o->out, ".json");
	const char *header = o->prefix ? beside_out(ctx, o->out, ".h") : NULL;
	struct link_options lo = { 0 };
	struct strbuf header_text = STRBUF_INIT, depfile = STRBUF_INIT;
	struct strbuf snaps[LOWER_STEP_COUNT];
	struct output outs[6];
	struct weights_file wf = { 0 };
	char *stats_text = NULL;
	int n_outs = 0;
	struct collage_stats cs = { 0 };
	char **kfiles = NULL;
	int nt, np = 0, n_kfiles = 0, rc = -1;

	for (int s = 0; s < LOWER_STEP_COUNT; s++)
		snaps[s] = (struct strbuf)STRBUF_INIT;
	ctx->model_path = o->model;
	if (!emit_cpu_flags(o->cpu ? o->cpu : COLLAGEC_DEFAULT_CPU)) {
		diag_error_status(ctx, STATUS_USAGE, "unknown --cpu '%s' (%s)", o->cpu,
				  emit_cpu_levels);
		return -1;
	}
	if (parse_targets(ctx, o, &targets, &nt) < 0)
		return -1;
	if (pattern_load(ctx, o->kinds, o->n_kinds, o->pattern_files, o->n_pattern_files,
			 &patterns) < 0)
		goto out;
	g = compile_front(ctx, o, &st);
	if (!g)
		goto out;
	g->cpu = o->cpu ? o->cpu : COLLAGEC_DEFAULT_CPU;
	if (o->body && body_outputs(g, o->body) < 0)
		goto out;
	if (o->body_probe) {
		rc = 0;
		goto out;
	}
	if (cost_tune_shapes(g, o->tune_shapes, o->n_tune_shapes) < 0)
		goto out;
	if (compile_loops(g, o) < 0)
		goto out;
	stage(ctx, "passes", &st);
	add_output_copies(g);
	if (partition(ctx, g, o, targets, nt, &patterns, &parts, &np, &cs) < 0)
		goto out;
	stage(ctx, "partition", &st);
	if (lower_plan_layouts(g, parts, np) < 0 ||
	    lower_partitions(g, parts, np, &ms, o->dump_dir ? snaps : NULL) < 0)
		goto out;
	if (o->dump_dir && dump_lower(g, o->dump_dir, snaps) < 0)
		goto out;
	stage(ctx, "lower", &st);
	if (emit_plan(g, parts, np, &ep) < 0)
		goto out;
	ep.threads = o->threads > 0 ? o->threads : 0;
	lo.cc = o->cc ? o->cc : COLLAGEC_DEFAULT_CC;
	lo.cflags = o->cflags ? o->cflags : COLLAGEC_DEFAULT_CFLAGS;
	lo.march = emit_cpu_flags(o->cpu ? o->cpu : COLLAGEC_DEFAULT_CPU);
	lo.march_resolved = emit_cpu_resolve(ctx, lo.cc, o->cpu ? o->cpu : COLLAGEC_DEFAULT_CPU);
	for (int i = 0; i < ms.ldlibs.n; i++)
		sb_printf(&ldlibs, "%s%s", i ? " " : "", ms.ldlibs.v[i]);
	loop_links(g, o, &ldlibs, &lo);
	lo.ldlibs = sb_str(&ldlibs);
	lo.cuda = ms.cuda.len ? sb_str(&ms.cuda) : NULL;
	if (o->body)
		o->body->ldlibs = arena_strdup(g->arena, lo.ldlibs);
	lo.keep = o->keep_temps;
	if (!o->emit_only && weights_place(ctx, o, &ep, &wf) < 0)
		goto out;
	lo.weights = wf.path ? &wf : NULL;
	meta = metadata_json(g, o, &lo, targets, nt, parts, np, &ep, &cs);
	if (!meta)
		goto out;
	n_kfiles = emit_kernel_files(&ms, KERNEL_FILE_LINES, &kfiles);
	if (o->prefix)
		emit_prefix_defines(o->prefix, &model_c);
	emit_model_c(g, &ep, &ms, meta, n_kfiles > 0, lo.weights, &model_c);
	if (g->kernel_syms.n)
		diag_note(ctx, "c kernels: %d functions for their steps (%d steps in all)",
			  g->kernel_syms.n, ep.steps.n);
	stage(ctx, "plan and emit", &st);
	if (o->emit_only) {
		rc = 0;
		goto out;
	}
	lo.jobs = o->jobs;
	lo.stage = true;
	if (!o->no_cache)
		lo.objects = objcache_dir(&ctx->arena, o->cache ? o->cache
					  : cost_cache_default_path(ctx));
	if (emit_link(ctx, &lo, sb_str(&model_c), kfiles, n_kfiles, &ep, o->out) < 0)
		goto out;
	if (n_kfiles)
		diag_note(ctx, "kernel files: %d, %d of them from the object cache%s%s", n_kfiles,
			  lo.objects_hit, lo.objects ? " " : "", lo.objects ? lo.objects : "");
	diag_note(ctx, "the runtime's object: %s", lo.runtime_hit ? "from the object cache"
		  : "compiled");
	stage(ctx, "cc", &st);
	outs[n_outs++] = (struct output){ o->out, NULL, 0, lo.staged };
	lo.staged = NULL;
	if (lo.weights_staged) {
		outs[n_outs++] = (struct output){ wf.path, NULL, 0, lo.weights_staged };
		lo.weights_staged = NULL;
	}
	outs[n_outs++] = (struct output){ json, meta, strlen(meta), NULL };
	if (header) {
		emit_header(o->prefix, &header_text);
		outs[n_outs++] = (struct output){ header, header_text.buf, header_text.len, NULL };
	}
	if (o->depfile) {
		depfile_text(g, o, json, header, &depfile);
		outs[n_outs++] = (struct output){ o->depfile, depfile.buf, depfile.len, NULL };
	}
	if (o->stats) {
		stats_text = stats_json(g, o, &st, &cs, &lo, n_kfiles, ep.steps.n, time_now() - t0);
		if (strcmp(o->stats, "-"))
			outs[n_outs++] = (struct output){ o->stats, stats_text, strlen(stats_text),
							  NULL };
	}
	/* an error a stage reported but got past (a cost cache read that failed
	 * in the middle of the search) still means no outputs */
	if (ctx->n_errors || commit_outputs(ctx, outs, n_outs) < 0)
		goto out;
	/* --stats -: on standard output, once the outputs are there */
	if (o->stats && !strcmp(o->stats, "-"))
		printf("%s\n", stats_text);
	if (stats) {
		stats->seconds = time_now() - t0;
		stats->n_partitions = np;
		stats->candidates = cs.candidates;
		stats->unique = cs.unique;
		stats->estimated = cs.estimated;
		stats->cache_hits = cs.cache_hits;
		stats->guessed = cs.guessed;
		stats->search_seconds = cs.seconds;
		stats->n_kernels = ep.steps.n;
		stats->arena_bytes = ep.arena_bytes;
		stats->peak_bytes = ep.peak_bytes;
		stats->weights_bytes = ep.weights_bytes;
		stats->packed_bytes = ep.packed_bytes;
	}
	rc = 0;
out:
	for (int i = 0; rc < 0 && i < n_outs; i++)
		file_discard(outs[i].tmp);	/* staged, never committed */
	for (int i = 0; i < n_kfiles; i++)
		free(kfiles[i]);
	free(kfiles);
	for (int i = 0; i < np; i++)
		vec_free(&parts[i].kernels);
	free(meta);
	free(stats_text);
	exec_plan_release(&ep);
	model_sources_release(&ms);
	sb_release(&ldlibs);
	sb_release(&model_c);
	sb_release(&header_text);
	sb_release(&depfile);
	for (int s = 0; s < LOWER_STEP_COUNT; s++)
		sb_release(&snaps[s]);
	pattern_set_release(&patterns);
	graph_free(g);
	if (rc < 0 && !ctx->n_errors)
		BUG("compile failed without a diagnostic");
	return rc;
}
