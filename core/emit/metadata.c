/*
 * metadata.c - builds OUT.json with cJSON; SHA-256 from OpenSSL's libcrypto.
 */
#include "metadata.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "../collage/collage.h"
#include "../ops/ops.h"

int sha256_file(const char *path, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE], buf[1 << 16];
	unsigned int mdlen = 0;
	FILE *f = fopen(path, "rb");
	EVP_MD_CTX *c;
	size_t n;
	bool ok;

	if (!f)
		return -1;
	/* a block at a time: the model is not read into memory a second time */
	c = EVP_MD_CTX_new();
	ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	while (ok && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		ok = EVP_DigestUpdate(c, buf, n);
	ok = ok && EVP_DigestFinal_ex(c, md, &mdlen);
	EVP_MD_CTX_free(c);
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		errno = e ? e : EIO;
		return -1;
	}
	fclose(f);
	/* SHA-256 fails only when libcrypto cannot allocate */
	if (!ok)
		die_oom(0);
	for (unsigned i = 0; i < mdlen && i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
	out[64] = 0;
	return 0;
}

static cJSON *shape_json(struct graph *g, const struct shape *s)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < s->rank; i++) {
		if (dim_is_const(s->d[i])) {
			cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s->d[i].c));
		} else {
			struct strbuf sb = STRBUF_INIT;

			dim_print(g, s->d[i], &sb);
			cJSON_AddItemToArray(a, cJSON_CreateString(sb_str(&sb)));
			sb_release(&sb);
		}
	}
	return a;
}

static cJSON *tensors_json(struct graph *g, const int *ids, int n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < n; i++) {
		const struct value *v = &g->values.v[ids[i]];
		cJSON *t = cJSON_CreateObject();

		cJSON_AddStringToObject(t, "name", v->name);
		cJSON_AddStringToObject(t, "dtype", dtype_name(v->dtype));
		cJSON_AddItemToObject(t, "shape", shape_json(g, &v->shape));
		/* only where true, so OUT.json of other models keeps its bytes */
		if (graph_shape_late(g, &v->shape))
			cJSON_AddTrueToObject(t, "dynamic");
		/* the data of a sequence of run-time length: its dims (and presence) follow */
		if (v->flags & VALUE_SEQ)
			cJSON_AddStringToObject(t, "sequence", v->flags & VALUE_SEQ_OPT ? "optional"
						: "sequence");
		cJSON_AddItemToArray(a, t);
	}
	return a;
}

static void add_cost(cJSON *o, const char *key, double c)
{
	if (isnan(c))
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, isinf(c) ? 1e308 : c);
}

/* [{ name, op }] of the ONNX nodes a partition or kernel implements. */
static cJSON *nodes_json(const struct span *sp)
{
	cJSON *a = cJSON_CreateArray();

	for (int s = 0; s < sp->n; s++) {
		cJSON *nd = cJSON_CreateObject();

		cJSON_AddStringToObject(nd, "name", sp->names[s]);
		cJSON_AddStringToObject(nd, "op", sp->types[s]);
		cJSON_AddItemToArray(a, nd);
	}
	return a;
}

/* search.list: every candidate with its target, rule, ONNX nodes, cost, and if chosen. */
/* What the passes did to ONNX nodes no kernel runs alone: graph.fates. */
static cJSON *fates_json(struct graph *g)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < g->fates.n; i++) {
		const struct node_fate *f = &g->fates.v[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "name", f->name);
		cJSON_AddStringToObject(o, "op", f->op_type);
		cJSON_AddStringToObject(o, "pass", f->pass);
		if (f->into)
			cJSON_AddStringToObject(o, "into", f->into);
		else
			cJSON_AddNullToObject(o, "into");
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *candidates_json(struct graph *g, const struct collage_stats *cs, bool first)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < cs->n_list; i++) {
		const struct collage_candidate *c = &cs->list[i];
		cJSON *o = cJSON_CreateObject(), *ns = cJSON_CreateArray();

		cJSON_AddStringToObject(o, "target", c->target);
		cJSON_AddStringToObject(o, "rule", c->rule);
		for (int k = 0; k < c->n_nodes; k++)
			cJSON_AddItemToArray(ns, cJSON_CreateString(g->nodes.v[c->nodes[k]].name));
		cJSON_AddItemToObject(o, "onnx_nodes", ns);
		add_cost(o, "cost", c->cost);
		/* estimate first: whether the cost was measured or is the estimate */
		if (first)
			cJSON_AddBoolToObject(o, "measured", c->measured);
		cJSON_AddBoolToObject(o, "chosen", c->chosen);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* search.plans: phase 5's whole plans, each timed end to end. */
static cJSON *plans_json(const struct collage_stats *cs, bool first)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < cs->n_plans; i++) {
		const struct collage_plan *p = &cs->plans[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "name", p->name);
		cJSON_AddNumberToObject(o, "partitions", p->n_partitions);
		add_cost(o, "cost", p->cost);
		if (first)
			add_cost(o, "estimate", p->estimate);
		if (p->same_as)
			cJSON_AddStringToObject(o, "same_as", p->same_as);
		else
			cJSON_AddNullToObject(o, "same_as");
		cJSON_AddBoolToObject(o, "chosen", p->chosen);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *partitions_json(struct graph *g, struct partition *parts, int np)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < np; i++) {
		struct partition *p = &parts[i];
		cJSON *o = cJSON_CreateObject(), *ks = cJSON_CreateArray();

		cJSON_AddNumberToObject(o, "id", p->id);
		cJSON_AddStringToObject(o, "target", p->target->str);
		cJSON_AddStringToObject(o, "rule", p->rule ? p->rule : "fused");
		cJSON_AddItemToObject(o, "onnx_nodes", nodes_json(&p->span));
		add_cost(o, "estimated_cost", p->est_cost);
		add_cost(o, "measured_cost", p->measured_cost);
		for (int k = 0; k < p->kernels.n; k++) {
			const struct kernel *kn = &p->kernels.v[k];
			cJSON *kj = cJSON_CreateObject(), *vs = cJSON_CreateArray();

			cJSON_AddStringToObject(kj, "name", kn->name);
			cJSON_AddItemToObject(kj, "onnx_nodes", nodes_json(&kn->span));
			cJSON_AddStringToObject(kj, "dispatch", kn->n_variants > 1 ? "run-time"
						: "compile-time");
			for (int v = 0; v < kn->n_variants; v++) {
				cJSON *vj = cJSON_CreateObject();

				cJSON_AddStringToObject(vj, "implementation", kn->variants[v].impl);
				cJSON_AddStringToObject(vj, "condition", kn->variants[v].cond
							? kn->variants[v].cond_text : "always");
				cJSON_AddItemToArray(vs, vj);
			}
			if (!kn->n_variants) {
				cJSON *vj = cJSON_CreateObject();

				cJSON_AddStringToObject(vj, "implementation", "generic");
				cJSON_AddStringToObject(vj, "condition", "always");
				cJSON_AddItemToArray(vs, vj);
			}
			cJSON_AddItemToObject(kj, "variants", vs);
			if (kn->n_scratch)
				cJSON_AddItemToObject(kj, "scratch", tensors_json(g, kn->scratch,
										 kn->n_scratch));
			cJSON_AddItemToArray(ks, kj);
		}
		cJSON_AddItemToObject(o, "kernels", ks);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/*
 * search.tune_shape and search.tune_shape_source: the size each symbol the
 * graph's inputs bind was measured at, and whether --tune-shape named it
 * or it is the default (cost_tune_shapes); nothing for a static model.
 * Where candidates were measured a second time (graph.tune_wide),
 * search.tune_wide is that batch and search.tune_shape_wide the sizes of
 * the symbols it changed.
 */
static void tune_json(struct graph *g, cJSON *search)
{
	cJSON *at = NULL, *from = NULL, *wide = NULL;

	if (g->tune && g->tune_wide > 1) {
		cJSON_AddNumberToObject(search, "tune_wide", (double)g->tune_wide);
		wide = cJSON_AddObjectToObject(search, "tune_shape_wide");
		for (int s = 0; s < g->syms.n; s++)
			if (g->tune[s].from != TUNE_FROM_OTHERS && g->tune[s].wide != g->tune[s].size)
				cJSON_AddNumberToObject(wide, g->syms.v[s], (double)g->tune[s].wide);
	}

	for (int s = 0; g->tune && s < g->syms.n; s++) {
		if (g->tune[s].from == TUNE_FROM_OTHERS)
			continue;
		if (!at) {
			at = cJSON_AddObjectToObject(search, "tune_shape");
			from = cJSON_AddObjectToObject(search, "tune_shape_source");
		}
		cJSON_AddNumberToObject(at, g->syms.v[s], (double)g->tune[s].size);
		cJSON_AddStringToObject(from, g->syms.v[s], g->tune[s].from == TUNE_FROM_OPTION
					? "--tune-shape" : "default");
	}
}

char *metadata_json(struct graph *g, const struct compile_options *o,
		    const struct link_options *lo, struct target **targets, int nt,
		    struct partition *parts, int np, const struct exec_plan *ep,
		    const struct collage_stats *cs)
{
	cJSON *root = cJSON_CreateObject(), *m, *c, *ts, *mem, *search, *at, *caches;
	char sha[65] = "";
	char *txt, *res;

	if (sha256_file(o->model, sha) < 0)
		sha[0] = 0;
	cJSON_AddStringToObject(root, "schema", "collagec-metadata/1");
	m = cJSON_AddObjectToObject(root, "model");
	cJSON_AddStringToObject(m, "path", o->model_name ? o->model_name : o->model);
	cJSON_AddStringToObject(m, "sha256", sha);
	cJSON_AddNumberToObject(m, "opset", (double)g->opset);
	cJSON_AddStringToObject(m, "producer", g->producer ? g->producer : "");
	/* the bindings the graph was imported with (explain imports it again) */
	if (o->n_elements)
		cJSON_AddItemToObject(m, "elements", cJSON_CreateStringArray(o->elements,
									      o->n_elements));
	if (o->n_shapes)
		cJSON_AddItemToObject(m, "shapes", cJSON_CreateStringArray(o->shapes, o->n_shapes));
	c = cJSON_AddObjectToObject(root, "compiler");
	cJSON_AddStringToObject(c, "version", COLLAGEC_VERSION);
	cJSON_AddStringToObject(c, "prefix", o->prefix ? o->prefix : "collagec");
	ts = cJSON_AddArrayToObject(c, "targets");
	for (int i = 0; i < nt; i++)
		cJSON_AddItemToArray(ts, cJSON_CreateString(targets[i]->str));
	cJSON_AddStringToObject(c, "search", o->search ? o->search : "none");
	cJSON_AddStringToObject(c, "cc", lo->cc);
	cJSON_AddStringToObject(c, "cflags", lo->cflags);
	cJSON_AddStringToObject(c, "cpu", o->cpu ? o->cpu : COLLAGEC_DEFAULT_CPU);
	/* collagec_open's thread count; 0: the physical cores where it opens */
	cJSON_AddNumberToObject(c, "threads", o->threads > 0 ? o->threads : 0);
	cJSON_AddStringToObject(c, "cpu_flags", lo->march);
	if (lo->march_resolved)
		cJSON_AddStringToObject(c, "cpu_resolved", lo->march_resolved);
	/* what a program linking OUT.a needs besides it (OUT.so links them itself) */
	cJSON_AddStringToObject(c, "ldlibs", lo->ldlibs ? lo->ldlibs : "");
	cJSON_AddItemToObject(root, "inputs", tensors_json(g, g->inputs.v, g->inputs.n));
	cJSON_AddItemToObject(root, "outputs", tensors_json(g, g->outputs.v, g->outputs.n));
	/* the KV caches collagec_bind_cache can keep in place */
	caches = cJSON_AddArrayToObject(root, "caches");
	for (int i = 0; i < ep->caches.n; i++) {
		const struct exec_cache *ec = &ep->caches.v[i];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "input", g->values.v[g->inputs.v[ec->in]].name);
		cJSON_AddStringToObject(e, "output", g->values.v[g->outputs.v[ec->out]].name);
		cJSON_AddStringToObject(e, "node", g->nodes.v[ec->node].name);
		cJSON_AddItemToArray(caches, e);
	}
	cJSON_AddItemToObject(root, "partitions", partitions_json(g, parts, np));
	cJSON_AddItemToObject(root, "passes", fates_json(g));
	mem = cJSON_AddObjectToObject(root, "memory");
	cJSON_AddStringToObject(mem, "plan", ep->dynamic ? "run-time" : "static");
	if (ep->shapes.n)
		cJSON_AddNumberToObject(mem, "shape_functions", ep->shapes.n);
	cJSON_AddNumberToObject(mem, "arena_bytes", (double)ep->arena_bytes);
	cJSON_AddNumberToObject(mem, "peak_bytes", (double)ep->peak_bytes);
	cJSON_AddNumberToObject(mem, "weights_bytes", (double)ep->weights_bytes);
	/* derived from weights the blob holds, by the model when it opens */
	cJSON_AddNumberToObject(mem, "packed_bytes", (double)ep->packed_bytes);
	/* --weights: the file OUT.so maps them from, as it records it */
	if (lo->weights) {
		cJSON_AddStringToObject(mem, "weights_file", lo->weights->name);
		cJSON_AddStringToObject(mem, "weights_sha256", lo->weights->sha256);
	} else {
		cJSON_AddNullToObject(mem, "weights_file");
	}
	at = cJSON_AddObjectToObject(mem, "symbols_at");
	for (int i = 0; i < g->syms.n; i++)
		cJSON_AddNumberToObject(at, g->syms.v[i], 1);
	search = cJSON_AddObjectToObject(root, "search");
	cJSON_AddStringToObject(search, "mode", o->search ? o->search : "none");
	if (o->search && strcmp(o->search, "none")) {
		const char *est = strcmp(o->search, "collage") ? "none"
				  : o->estimator ? o->estimator : "measure";

		bool first = !strcmp(est, "measure");

		cJSON_AddStringToObject(search, "estimator", est);
		/* targets that cannot run here (no GPU): their costs are estimates */
		for (int t = 0; t < nt; t++) {
			const struct target_kind *k = targets[t]->kind;
			const char *why = k->cannot_run ? k->cannot_run() : NULL;
			cJSON *idle, *x;

			if (!why)
				continue;
			if (!(idle = cJSON_GetObjectItem(search, "not_measured")))
				idle = cJSON_AddArrayToObject(search, "not_measured");
			x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "target", targets[t]->str);
			cJSON_AddStringToObject(x, "why", why);
			cJSON_AddItemToArray(idle, x);
		}
		if (first) {
			/* estimate first: the budget and what the decisions used */
			cJSON_AddNumberToObject(search, "budget", o->search_budget);
			cJSON_AddBoolToObject(search, "budget_reached", cs->budget_hit);
			cJSON_AddNumberToObject(search, "measured", cs->measured);
			cJSON_AddNumberToObject(search, "estimated", cs->guessed);
		}
		cJSON_AddNumberToObject(search, "max_depth", o->max_depth);
		cJSON_AddNumberToObject(search, "threads", o->threads > 0 ? o->threads : 1);
		if (!strcmp(o->search, "collage"))
			tune_json(g, search);
		cJSON_AddNumberToObject(search, "candidates", cs->candidates);
		cJSON_AddNumberToObject(search, "distinct", cs->unique);
		add_cost(search, "estimated_total", strcmp(o->search, "collage") ? NAN
						    : cs->total_cost);
		cJSON_AddStringToObject(search, "plan", cs->plan ? cs->plan : o->search);
		add_cost(search, "plan_cost", cs->n_plans ? cs->plan_cost : NAN);
		cJSON_AddItemToObject(search, "plans", plans_json(cs, first));
		cJSON_AddItemToObject(search, "list", candidates_json(g, cs, first));
	} else {
		cJSON_AddNumberToObject(search, "candidates", np);
	}
	txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt) {
		diag_error_status(g->ctx, STATUS_ENV, "cannot format the metadata");
		return NULL;
	}
	res = xmalloc(strlen(txt) + 2);
	sprintf(res, "%s\n", txt);
	cJSON_free(txt);
	return res;
}
