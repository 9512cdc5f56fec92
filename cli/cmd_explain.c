/*
 * cmd_explain.c - collagec explain: what the partitioner decided for a
 * compiled model. It reads the metadata (OUT.json beside OUT.so, else the
 * copy embedded in OUT.so through collagec_metadata()) and prints the
 * partition table and the search statistics, or (--json) the same as one
 * JSON document; --dot FILE draws the ONNX graph (imported again from the
 * model file the metadata names) with every node coloured by the target of
 * its partition and the partitions as clusters.
 *
 * Keys missing from the metadata (older collagec, a search that does not
 * estimate) are unknown: "-" in the table, null in --json.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/collage/rules.h"

enum { OPT_JSON = 256, OPT_DOT, OPT_MODEL, OPT_HTML, OPT_PROFILE, OPT_SOURCE };

/* Nodes of a partition named in the table before "+N more". */
enum { EXPLAIN_NODES_SHOWN = 3 };

/* ---- reading the metadata ---- */

/* OUT.so -> OUT.json (arena): ".so" replaced, else ".json" appended. */
static const char *json_path_of(struct collagec_ctx *ctx, const char *so)
{
	size_t n = strlen(so);

	if (n > 5 && !strcmp(so + n - 5, ".json"))
		return so;
	if (n > 3 && !strcmp(so + n - 3, ".so"))
		return arena_printf(&ctx->arena, "%.*s.json", (int)(n - 3), so);
	return arena_printf(&ctx->arena, "%s.json", so);
}

/* The metadata embedded in so (owned), or NULL after a diagnostic. */
static char *metadata_from_so(struct collagec_ctx *ctx, const char *so, const char *json)
{
	struct model_lib lib;
	char *err = NULL, *text;

	if (model_lib_load(&lib, so, &err) < 0) {
		diag_error(ctx, "%s: %s (and no metadata file '%s')", so, err ? err : "cannot load",
			   json);
		free(err);
		return NULL;
	}
	text = lib.metadata && lib.metadata() ? xstrdup(lib.metadata()) : NULL;
	model_lib_unload(&lib);
	if (!text)
		diag_error(ctx, "%s: the model has no embedded metadata", so);
	return text;
}

/*
 * The parsed metadata of so (owned: cJSON_Delete), from OUT.json when it
 * exists, else from the .so; NULL after a diagnostic.
 */
static cJSON *metadata_read(struct collagec_ctx *ctx, const char *so)
{
	const char *json = json_path_of(ctx, so), *from = json;
	size_t len;
	char *text = file_read(json, &len);
	const cJSON *schema;
	cJSON *root;

	if (!text && errno == ENOENT && json != so && access(so, F_OK) == 0) {
		text = metadata_from_so(ctx, so, json);
		from = so;
		if (!text)
			return NULL;
	} else if (!text) {
		if (json != so && errno == ENOENT)
			diag_error(ctx, "%s: cannot read: %s (nor its metadata '%s')", so,
				   strerror(ENOENT), json);
		else
			diag_error(ctx, "%s: cannot read: %s", json, strerror(errno));
		return NULL;
	}
	root = cJSON_Parse(text);
	free(text);
	schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
	if (!root || !cJSON_IsString(schema) ||
	    strcmp(schema->valuestring, "collagec-metadata/1") ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "partitions"))) {
		diag_error(ctx, "%s: not collagec metadata (schema collagec-metadata/1 with "
			   "partitions)", from);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static const char *meta_str(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/*
 * A cost or statistic: true and *v when known. The metadata writes +inf
 * as 1e308 (JSON has no infinity); it comes back as +INFINITY.
 */
static bool meta_num(const cJSON *o, const char *key, double *v)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(x) && !strcmp(x->valuestring, "inf")) {
		*v = INFINITY;
		return true;
	}
	if (!cJSON_IsNumber(x))
		return false;
	*v = x->valuedouble >= 1e308 ? INFINITY : x->valuedouble;
	return true;
}

/* ---- the partition table ---- */

struct part_row {
	const cJSON *json;		/* the metadata's partition; borrowed */
	int id;
	const char *target, *rule;	/* "?" when missing */
	const cJSON *nodes;		/* onnx_nodes, or NULL */
	bool has_est, has_meas;
	double est, meas;
	bool has_share;
	double share;			/* of the sum of the estimates, 0..1 */
};

struct explain {
	const cJSON *meta;		/* borrowed */
	struct arena arena;		/* the rows' bounded rule labels */
	VEC(struct part_row) parts;
	int n_nodes;			/* distinct ONNX nodes over all partitions (one
					   split across partitions counts once) */
	bool has_total;
	double est_total;		/* sum of the known finite estimates */
};

static void explain_build(struct explain *e, const cJSON *meta)
{
	const cJSON *p, *nd;
	struct strmap seen = { 0 };

	memset(e, 0, sizeof(*e));
	e->meta = meta;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(meta, "partitions")) {
		struct part_row r = { 0 };
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(p, "id");

		r.json = p;
		r.id = cJSON_IsNumber(id) ? id->valueint : e->parts.n;
		r.target = meta_str(p, "target") ? meta_str(p, "target") : "?";
		/* bounded, also when an older collagec stored every merge's name */
		r.rule = meta_str(p, "rule") ? rule_label_bound(&e->arena, meta_str(p, "rule"))
			 : "?";
		r.nodes = cJSON_GetObjectItemCaseSensitive(p, "onnx_nodes");
		r.has_est = meta_num(p, "estimated_cost", &r.est);
		r.has_meas = meta_num(p, "measured_cost", &r.meas);
		cJSON_ArrayForEach(nd, r.nodes) {
			const char *name = meta_str(nd, "name");

			if (name && strmap_get(&seen, name) < 0) {
				strmap_put(&seen, name, 0);
				e->n_nodes++;
			}
		}
		if (r.has_est && isfinite(r.est)) {
			e->est_total += r.est;
			e->has_total = true;
		}
		vec_push(&e->parts, r);
	}
	strmap_free(&seen);
	for (int i = 0; i < e->parts.n; i++) {
		struct part_row *r = &e->parts.v[i];

		if (r->has_est && isfinite(r->est) && e->est_total > 0) {
			r->has_share = true;
			r->share = r->est / e->est_total;
		}
	}
}

/* A duration for people: "inf", "812 ns", "12.3 us", "4.56 ms", "1.2 s". */
static void seconds_text(double s, struct strbuf *sb)
{
	if (isinf(s))
		sb_puts(sb, "inf");
	else if (s >= 1)
		sb_printf(sb, "%.3g s", s);
	else if (s >= 1e-3)
		sb_printf(sb, "%.3g ms", s * 1e3);
	else if (s >= 1e-6)
		sb_printf(sb, "%.3g us", s * 1e6);
	else
		sb_printf(sb, "%.3g ns", s * 1e9);
}

/* "N: name(Op) name(Op) name(Op) +K more" */
static void nodes_text(const cJSON *nodes, struct strbuf *sb)
{
	const cJSON *n;
	int i = 0, total = cJSON_GetArraySize(nodes);

	sb_printf(sb, "%d:", total);
	cJSON_ArrayForEach(n, nodes) {
		const char *name = meta_str(n, "name"), *op = meta_str(n, "op");

		if (i++ == EXPLAIN_NODES_SHOWN) {
			sb_printf(sb, " +%d more", total - EXPLAIN_NODES_SHOWN);
			break;
		}
		sb_printf(sb, " %s(%s)", name ? name : "?", op ? op : "?");
	}
}

static void opt_seconds(bool known, double v, struct strbuf *sb)
{
	if (known)
		seconds_text(v, sb);
	else
		sb_putc(sb, '-');
}

/* A statistic of "search": its number, or "-" when absent. */
static void stat_text(const cJSON *search, const char *key, struct strbuf *sb)
{
	double v;

	if (meta_num(search, key, &v))
		sb_printf(sb, "%.15g", v);
	else
		sb_putc(sb, '-');
}

static const char *search_mode(const cJSON *meta)
{
	const char *m = meta_str(cJSON_GetObjectItemCaseSensitive(meta, "search"), "mode");

	if (!m)
		m = meta_str(cJSON_GetObjectItemCaseSensitive(meta, "compiler"), "search");
	return m ? m : "-";
}


/*
 * Estimate first: how many distinct candidates' costs were measured and how
 * many are estimates, under what budget.
 */
static void costs_text(const cJSON *search)
{
	double meas, est, budget;

	if (!meta_num(search, "measured", &meas) || !meta_num(search, "estimated", &est) ||
	    !meta_num(search, "budget", &budget))
		return;
	printf("costs: %d distinct candidates measured, %d left at their estimate; ", (int)meas,
	       (int)est);
	if (budget > 0)
		printf("search budget %.15g s%s\n", budget,
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(search, "budget_reached"))
		       ? ", reached" : ", not reached");
	else
		printf("no search budget\n");
}

/* Phase 5's plans, one line each, the one built marked with '*'. */
static void plans_text(const cJSON *search)
{
	const cJSON *plans = cJSON_GetObjectItemCaseSensitive(search, "plans"), *p;
	struct strbuf sb = STRBUF_INIT;

	if (!cJSON_IsArray(plans) || !cJSON_GetArraySize(plans))
		return;
	printf("plans timed end to end (the one built marked *):\n");
	cJSON_ArrayForEach(p, plans) {
		double cost, est, np = 0;
		const char *same = meta_str(p, "same_as");

		sb_reset(&sb);
		if (meta_num(p, "cost", &cost)) {
			seconds_text(cost, &sb);
		} else if (meta_num(p, "estimate", &est)) {
			sb_puts(&sb, "not timed, estimate ");
			seconds_text(est, &sb);
		} else {
			sb_putc(&sb, '-');
		}
		meta_num(p, "partitions", &np);
		printf("  %c %-24s %4d partitions  %10s%s%s%s\n",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "chosen")) ? '*' : ' ',
		       meta_str(p, "name") ? meta_str(p, "name") : "?", (int)np, sb_str(&sb),
		       same ? "  (same as " : "", same ? same : "", same ? ")" : "");
	}
	sb_release(&sb);
}

/*
 * The sizes the search measured symbols at (OUT.json search.tune_shape)
 * and who named them: "N=64 (--tune-shape), seq=128 (default)". Nothing
 * for a static model or older metadata.
 */
static void tune_text(const cJSON *search, struct strbuf *sb)
{
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(search, "tune_shape"), *s;
	const cJSON *from = cJSON_GetObjectItemCaseSensitive(search, "tune_shape_source");

	if (!cJSON_IsObject(at))
		return;
	cJSON_ArrayForEach(s, at) {
		const char *src = meta_str(from, s->string);

		if (!s->string || !cJSON_IsNumber(s))
			continue;
		sb_printf(sb, "%s%s=%.15g (%s)", sb->len ? ", " : "", s->string, s->valuedouble,
			  src ? src : "?");
	}
}

/*
 * The second sizes candidates were measured at (search.tune_wide,
 * tune_shape_wide) and what a cost then is: "and again at N=32: each cost
 * is the time at the first sizes plus 1/32 of the time at these". Nothing
 * where they were measured once.
 */
static void wide_text(const cJSON *search, struct strbuf *sb)
{
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(search, "tune_shape_wide"), *s;
	double w;

	if (!meta_num(search, "tune_wide", &w) || !cJSON_IsObject(at))
		return;
	sb_puts(sb, "and again at ");
	cJSON_ArrayForEach(s, at)
		if (s->string && cJSON_IsNumber(s))
			sb_printf(sb, "%s%s=%.15g", s == at->child ? "" : ", ", s->string,
				  s->valuedouble);
	sb_printf(sb, ": each cost is the time at the first sizes plus 1/%.15g of the time "
		  "at these", w);
}

/* The partitions per target, in order of first appearance: "blas 3, c 5". */
static void targets_text(const struct explain *e, struct strbuf *sb)
{
	for (int i = 0; i < e->parts.n; i++) {
		const char *t = e->parts.v[i].target;
		int n = 0;
		bool seen = false;

		for (int k = 0; k < i && !seen; k++)
			seen = !strcmp(e->parts.v[k].target, t);
		if (seen)
			continue;
		for (int k = i; k < e->parts.n; k++)
			n += !strcmp(e->parts.v[k].target, t);
		sb_printf(sb, "%s%s %d", sb->len ? ", " : "", t, n);
	}
}

/*
 * What the passes did to ONNX nodes (OUT.json "passes"), one line per pass
 * and kind: "removed by fold: a(Shape), b(Gather)", "merged by fold-bn:
 * bn1(BatchNormalization) into conv1". Older metadata has none.
 */
static void fates_text(const cJSON *meta)
{
	const cJSON *fates = cJSON_GetObjectItemCaseSensitive(meta, "passes"), *f, *g;
	struct strbuf sb = STRBUF_INIT;

	cJSON_ArrayForEach(f, fates) {
		const char *pass = meta_str(f, "pass");
		bool merged = meta_str(f, "into") != NULL, first = true;

		if (!pass)
			continue;
		/* print each (pass, kind) once, at its first fate */
		cJSON_ArrayForEach(g, fates) {
			if (g == f)
				break;
			if (meta_str(g, "pass") && !strcmp(meta_str(g, "pass"), pass) &&
			    (meta_str(g, "into") != NULL) == merged)
				first = false;
		}
		if (!first)
			continue;
		sb_reset(&sb);
		cJSON_ArrayForEach(g, fates) {
			if (!meta_str(g, "pass") || strcmp(meta_str(g, "pass"), pass) ||
			    (meta_str(g, "into") != NULL) != merged)
				continue;
			sb_printf(&sb, "%s%s(%s)", sb.len ? ", " : "",
				  meta_str(g, "name") ? meta_str(g, "name") : "?",
				  meta_str(g, "op") ? meta_str(g, "op") : "?");
			if (merged)
				sb_printf(&sb, " into %s", meta_str(g, "into"));
		}
		printf("%s by %s: %s\n", merged ? "merged" : "removed", pass, sb_str(&sb));
	}
	sb_release(&sb);
}

static void explain_print(const struct explain *e)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(e->meta, "model");
	const cJSON *comp = cJSON_GetObjectItemCaseSensitive(e->meta, "compiler");
	const cJSON *search = cJSON_GetObjectItemCaseSensitive(e->meta, "search"), *t;
	struct strbuf sb = STRBUF_INIT, cell[6] = { STRBUF_INIT, STRBUF_INIT, STRBUF_INIT,
						    STRBUF_INIT, STRBUF_INIT, STRBUF_INIT };
	int w[6] = { 2, 6, 4, 5, 9, 8 };	/* id target rule nodes estimated measured */
	static const char *const head[6] = { "id", "target", "rule", "nodes", "estimated",
					      "measured" };
	double total;

	printf("model: %s\n", meta_str(model, "path") ? meta_str(model, "path") : "?");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(comp, "targets"))
		sb_printf(&sb, "%s%s", sb.len ? "," : "", cJSON_GetStringValue(t) ?
			  cJSON_GetStringValue(t) : "?");
	printf("compiler: collagec %s, targets %s, search %s",
	       meta_str(comp, "version") ? meta_str(comp, "version") : "?",
	       sb.len ? sb_str(&sb) : "?", search_mode(e->meta));
	/* the API names, when not collagec_* (older metadata has no prefix) */
	if (meta_str(comp, "prefix") && strcmp(meta_str(comp, "prefix"), "collagec"))
		printf(", prefix %s", meta_str(comp, "prefix"));
	putchar('\n');
	/* widths first, so the columns line up */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			printf("%*s  %-*s  %-*s  %-*s  %*s  %*s  %6s\n", w[0], head[0], w[1],
			       head[1], w[2], head[2], w[3], head[3], w[4], head[4], w[5], head[5],
			       "share");
		for (int i = 0; i < e->parts.n; i++) {
			const struct part_row *r = &e->parts.v[i];

			for (int c = 0; c < 6; c++)
				sb_reset(&cell[c]);
			sb_printf(&cell[0], "%d", r->id);
			sb_puts(&cell[1], r->target);
			sb_puts(&cell[2], r->rule);
			nodes_text(r->nodes, &cell[3]);
			opt_seconds(r->has_est, r->est, &cell[4]);
			opt_seconds(r->has_meas, r->meas, &cell[5]);
			if (!pass) {
				for (int c = 0; c < 6; c++)
					w[c] = MAX(w[c], (int)cell[c].len);
				continue;
			}
			sb_reset(&sb);
			if (r->has_share)
				sb_printf(&sb, "%.1f%%", r->share * 100);
			else
				sb_putc(&sb, '-');
			printf("%*s  %-*s  %-*s  %-*s  %*s  %*s  %6s\n", w[0], sb_str(&cell[0]), w[1],
			       sb_str(&cell[1]), w[2], sb_str(&cell[2]), w[3], sb_str(&cell[3]), w[4],
			       sb_str(&cell[4]), w[5], sb_str(&cell[5]), sb_str(&sb));
		}
	}
	sb_reset(&sb);
	targets_text(e, &sb);
	printf("%d partition%s (%s), %d ONNX node%s\n", e->parts.n, e->parts.n == 1 ? "" : "s",
	       sb_str(&sb), e->n_nodes, e->n_nodes == 1 ? "" : "s");
	fates_text(e->meta);
	sb_reset(&sb);
	sb_printf(&sb, "search %s: estimator %s, candidates ", search_mode(e->meta),
		  meta_str(search, "estimator") ? meta_str(search, "estimator") : "-");
	stat_text(search, "candidates", &sb);
	sb_puts(&sb, ", max depth ");
	stat_text(search, "max_depth", &sb);
	sb_puts(&sb, ", estimated total ");
	if (meta_num(search, "estimated_total", &total))
		seconds_text(total, &sb);
	else
		opt_seconds(e->has_total, e->est_total, &sb);
	printf("%s\n", sb_str(&sb));
	sb_reset(&sb);
	tune_text(search, &sb);
	if (sb.len)
		printf("symbolic dims measured at: %s\n", sb_str(&sb));
	sb_reset(&sb);
	wide_text(search, &sb);
	if (sb.len)
		printf("%s\n", sb_str(&sb));
	costs_text(search);
	plans_text(search);
	for (int c = 0; c < 6; c++)
		sb_release(&cell[c]);
	sb_release(&sb);
}

/* ---- --json ---- */

static cJSON *json_cost(bool known, double v)
{
	if (!known)
		return cJSON_CreateNull();
	return isinf(v) ? cJSON_CreateString("inf") : cJSON_CreateNumber(v);
}

static cJSON *json_stat(const cJSON *search, const char *key)
{
	double v;

	return meta_num(search, key, &v) ? json_cost(true, v) : cJSON_CreateNull();
}

/* The --json document (owned string), one trailing newline. */
static char *explain_json(const struct explain *e)
{
	const cJSON *search = cJSON_GetObjectItemCaseSensitive(e->meta, "search");
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(e->meta, "model");
	const cJSON *comp = cJSON_GetObjectItemCaseSensitive(e->meta, "compiler");
	cJSON *root = cJSON_CreateObject(), *parts, *s;
	const cJSON *plans, *fates, *t;
	const char *est = meta_str(search, "estimator");
	double total;
	char *txt, *res;

	cJSON_AddItemToObject(root, "model", model ? cJSON_Duplicate(model, 1)
			      : cJSON_CreateNull());
	cJSON_AddItemToObject(root, "compiler", comp ? cJSON_Duplicate(comp, 1)
			      : cJSON_CreateNull());
	parts = cJSON_AddArrayToObject(root, "partitions");
	for (int i = 0; i < e->parts.n; i++) {
		const struct part_row *r = &e->parts.v[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "id", r->id);
		cJSON_AddStringToObject(o, "target", r->target);
		cJSON_AddStringToObject(o, "rule", r->rule);
		cJSON_AddItemToObject(o, "nodes", r->nodes ? cJSON_Duplicate(r->nodes, 1)
				      : cJSON_CreateArray());
		cJSON_AddItemToObject(o, "estimated_cost", json_cost(r->has_est, r->est));
		cJSON_AddItemToObject(o, "measured_cost", json_cost(r->has_meas, r->meas));
		cJSON_AddItemToObject(o, "share", r->has_share ? cJSON_CreateNumber(r->share)
				      : cJSON_CreateNull());
		cJSON_AddItemToArray(parts, o);
	}
	s = cJSON_AddObjectToObject(root, "search");
	cJSON_AddStringToObject(s, "mode", search_mode(e->meta));
	cJSON_AddItemToObject(s, "estimator", est ? cJSON_CreateString(est) : cJSON_CreateNull());
	cJSON_AddItemToObject(s, "candidates", json_stat(search, "candidates"));
	cJSON_AddItemToObject(s, "max_depth", json_stat(search, "max_depth"));
	if (meta_num(search, "estimated_total", &total))
		cJSON_AddItemToObject(s, "estimated_total", json_cost(true, total));
	else
		cJSON_AddItemToObject(s, "estimated_total", json_cost(e->has_total, e->est_total));
	cJSON_AddItemToObject(s, "plan", meta_str(search, "plan")
			      ? cJSON_CreateString(meta_str(search, "plan")) : cJSON_CreateNull());
	cJSON_AddItemToObject(s, "plan_cost", json_stat(search, "plan_cost"));
	/*
	 * the sizes symbols were measured at, as OUT.json has them (null: none):
	 * objects, but for the second measurement's batch, a number
	 */
	for (int i = 0; i < 4; i++) {
		static const char *const key[] = {
			"tune_shape", "tune_shape_source", "tune_wide", "tune_shape_wide",
		};

		t = cJSON_GetObjectItemCaseSensitive(search, key[i]);
		cJSON_AddItemToObject(s, key[i], (i == 2 ? cJSON_IsNumber(t) : cJSON_IsObject(t))
				      ? cJSON_Duplicate(t, 1) : cJSON_CreateNull());
	}
	fates = cJSON_GetObjectItemCaseSensitive(e->meta, "passes");
	cJSON_AddItemToObject(root, "passes", cJSON_IsArray(fates) ? cJSON_Duplicate(fates, 1)
			      : cJSON_CreateArray());
	plans = cJSON_GetObjectItemCaseSensitive(search, "plans");
	cJSON_AddItemToObject(s, "plans", cJSON_IsArray(plans) ? cJSON_Duplicate(plans, 1)
			      : cJSON_CreateArray());
	txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		BUG("cJSON cannot print the explain document");
	res = xmalloc(strlen(txt) + 2);
	sprintf(res, "%s\n", txt);
	cJSON_free(txt);
	return res;
}

/* ---- --dot ---- */

/* Fill and border colour per target kind; anything else gets the last. */
static const struct dot_colour {
	const char *kind, *fill, *border;
} dot_colours[] = {
	{ "c", "#a6cee3", "#1f78b4" },
	{ "blas", "#b2df8a", "#33a02c" },
	{ "opencl", "#fdbf6f", "#ff7f00" },
	{ "lapack", "#cab2d6", "#6a3d9a" },
	{ "dnnl", "#fb9a99", "#e31a1c" },
	{ NULL, "#ffff99", "#b15928" },
};

/* The kind of a target string: its leading name ("c" of "c -threads=4"). */
static const struct dot_colour *dot_colour_of(const char *target)
{
	size_t n = strspn(target, "abcdefghijklmnopqrstuvwxyz0123456789_");
	const struct dot_colour *c = dot_colours;

	for (; c->kind; c++)
		if (strlen(c->kind) == n && !strncmp(c->kind, target, n))
			break;
	return c;
}

/* s as a DOT string body: quotes and backslashes escaped. */
static void dot_quote(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sb_putc(sb, '\\');
		if (*s == '\n')
			sb_puts(sb, "\\n");
		else
			sb_putc(sb, *s);
	}
}

static void dot_node(struct strbuf *sb, const char *indent, int id, const struct node *n,
		     const struct dot_colour *c)
{
	sb_printf(sb, "%sn%d [label=\"", indent, id);
	dot_quote(sb, n->name);
	sb_puts(sb, "\\n");
	dot_quote(sb, n->op_type);
	if (c)
		sb_printf(sb, "\", fillcolor=\"%s\", color=\"%s\"];\n", c->fill, c->border);
	else
		sb_puts(sb, "\", style=\"rounded,dashed,filled\", fillcolor=\"#eeeeee\", "
			"color=\"#999999\", fontcolor=\"#666666\"];\n");
}

static void dot_legend(struct strbuf *sb, const struct explain *e, bool any_orphan)
{
	sb_puts(sb, "\tsubgraph cluster_legend {\n\t\tlabel=\"targets\";\n\t\tstyle=dashed;\n"
		"\t\tcolor=\"#999999\";\n");
	for (int i = 0; i < e->parts.n; i++) {
		const struct dot_colour *c = dot_colour_of(e->parts.v[i].target);
		bool seen = false;

		for (int k = 0; k < i && !seen; k++)
			seen = dot_colour_of(e->parts.v[k].target) == c &&
			       !strcmp(e->parts.v[k].target, e->parts.v[i].target);
		if (seen)
			continue;
		sb_printf(sb, "\t\tlegend%d [label=\"", i);
		dot_quote(sb, e->parts.v[i].target);
		sb_printf(sb, "\", fillcolor=\"%s\", color=\"%s\"];\n", c->fill, c->border);
	}
	if (any_orphan)
		sb_puts(sb, "\t\tlegend_none [label=\"in no partition\\n(folded by a pass)\", "
			"style=\"rounded,dashed,filled\", fillcolor=\"#eeeeee\", "
			"color=\"#999999\", fontcolor=\"#666666\"];\n");
	sb_puts(sb, "\t}\n");
}

/*
 * The digraph: graph inputs and outputs as ellipses, ONNX nodes as boxes
 * in one cluster per partition, nodes of no partition grey and dashed.
 * Constants (initializers, Constant nodes) are weights, not drawn.
 */
static void dot_build(struct graph *g, const struct explain *e, bool ids, struct strbuf *sb)
{
	int *part_of = xcalloc((size_t)g->nodes.n + 1, sizeof(int));
	struct strmap names = { 0 };
	bool any_orphan = false;

	for (int i = e->parts.n - 1; i >= 0; i--) {	/* the first partition wins */
		const cJSON *n;

		cJSON_ArrayForEach(n, e->parts.v[i].nodes)
			if (meta_str(n, "name"))
				strmap_put(&names, meta_str(n, "name"), i);
	}
	for (int i = 0; i < g->nodes.n; i++) {
		part_of[i] = strmap_get(&names, g->nodes.v[i].name);
		any_orphan |= part_of[i] < 0 && !g->nodes.v[i].dead;
	}
	sb_puts(sb, "digraph \"");
	dot_quote(sb, g->name && *g->name ? g->name : "model");
	sb_puts(sb, "\" {\n\tgraph [rankdir=TB, fontname=\"Helvetica\", labelloc=t, label=\"");
	dot_quote(sb, g->path ? g->path : "");
	sb_printf(sb, ": %d partition%s\"];\n", e->parts.n, e->parts.n == 1 ? "" : "s");
	sb_puts(sb, "\tnode [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
		"fontsize=10];\n\tedge [color=\"#555555\"];\n");
	dot_legend(sb, e, any_orphan);
	for (int p = 0; p < e->parts.n; p++) {
		const struct part_row *r = &e->parts.v[p];
		const struct dot_colour *c = dot_colour_of(r->target);
		bool any = false;

		for (int i = 0; i < g->nodes.n && !any; i++)
			any = part_of[i] == p && !g->nodes.v[i].dead;
		if (!any)
			continue;
		sb_printf(sb, "\tsubgraph cluster_p%d {\n\t\tlabel=\"p%d ", p, r->id);
		dot_quote(sb, r->target);
		sb_putc(sb, ' ');
		dot_quote(sb, r->rule);
		sb_printf(sb, "\";\n\t\tstyle=\"rounded\";\n\t\tcolor=\"%s\";\n", c->border);
		if (ids)
			sb_printf(sb, "\t\tid=\"p%d\";\n", r->id);
		for (int i = 0; i < g->nodes.n; i++)
			if (part_of[i] == p && !g->nodes.v[i].dead)
				dot_node(sb, "\t\t", i, &g->nodes.v[i], c);
		sb_puts(sb, "\t}\n");
	}
	for (int i = 0; i < g->nodes.n; i++)
		if (part_of[i] < 0 && !g->nodes.v[i].dead)
			dot_node(sb, "\t", i, &g->nodes.v[i], NULL);
	/* for --html: SVG ids the page's script finds nodes and clusters by */
	if (ids) {
		for (int i = 0; i < g->nodes.n; i++)
			if (!g->nodes.v[i].dead)
				sb_printf(sb, "\tn%d [id=\"n%d\"];\n", i, i);
	}
	for (int i = 0; i < g->inputs.n; i++) {
		sb_printf(sb, "\tin%d [shape=ellipse, style=solid, label=\"", i);
		dot_quote(sb, g->values.v[g->inputs.v[i]].name);
		sb_puts(sb, "\"];\n");
	}
	for (int i = 0; i < g->outputs.n; i++) {
		sb_printf(sb, "\tout%d [shape=ellipse, style=solid, label=\"", i);
		dot_quote(sb, g->values.v[g->outputs.v[i]].name);
		sb_puts(sb, "\"];\n");
	}
	/* edges: producer (or graph input) -> consumer, node -> graph output */
	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int k = 0; k < n->n_in; k++) {
			int v = n->in[k], prod = v >= 0 ? g->values.v[v].producer : -1;

			if (prod >= 0) {
				sb_printf(sb, "\tn%d -> n%d;\n", prod, i);
				continue;
			}
			for (int j = 0; v >= 0 && j < g->inputs.n; j++)
				if (g->inputs.v[j] == v)
					sb_printf(sb, "\tin%d -> n%d;\n", j, i);
		}
	}
	for (int j = 0; j < g->outputs.n; j++) {
		int prod = g->values.v[g->outputs.v[j]].producer;

		if (prod >= 0)
			sb_printf(sb, "\tn%d -> out%d;\n", prod, j);
	}
	sb_puts(sb, "}\n");
	strmap_free(&names);
	free(part_of);
}

struct meta_strings {
	const char **v;
	int n;
};

/* o's string array key (absent: none) into out, in ctx's arena; -1 after a diagnostic. */
static int meta_strings(struct collagec_ctx *ctx, const cJSON *o, const char *key,
			struct meta_strings *out)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key), *it;
	int i = 0;

	out->v = NULL;
	out->n = 0;
	if (!a)
		return 0;
	if (!cJSON_IsArray(a)) {
		diag_error(ctx, "the metadata's model.%s is not an array", key);
		return -1;
	}
	out->v = arena_alloc(&ctx->arena, (size_t)cJSON_GetArraySize(a) * sizeof(*out->v) + 1);
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it)) {
			diag_error(ctx, "the metadata's model.%s holds a value that is not a string",
				   key);
			return -1;
		}
		out->v[i++] = it->valuestring;
	}
	out->n = i;
	return 0;
}

/*
 * The ONNX graph again, for --dot and --html: from --model, else the model
 * path in the metadata (tried beside the metadata too when relative). NULL
 * after a diagnostic.
 */
static struct graph *import_model(struct collagec_ctx *ctx, const struct explain *e,
				  const char *model, const char *meta_path, const char *opt)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e->meta, "model");
	bool from_meta = !model;
	struct meta_strings elements, shapes;

	/* sequence and optional inputs are imported as the compile bound them */
	if (meta_strings(ctx, m, "elements", &elements) < 0 ||
	    meta_strings(ctx, m, "shapes", &shapes) < 0)
		return NULL;
	if (!model)
		model = meta_str(m, "path");
	if (!model) {
		diag_error(ctx, "%s: the metadata names no model file (use --model PATH)", opt);
		return NULL;
	}
	/* a relative path is the compile's; try it beside the metadata too */
	if (from_meta && model[0] != '/' && access(model, R_OK) < 0 && strchr(meta_path, '/')) {
		const char *alt = arena_printf(&ctx->arena, "%.*s/%s",
					       (int)(strrchr(meta_path, '/') - meta_path),
					       meta_path, model);

		if (access(alt, R_OK) == 0)
			model = alt;
	}
	if (access(model, R_OK) < 0) {
		diag_error(ctx, "%s: cannot read the model '%s': %s%s", opt, model, strerror(errno),
			   from_meta ? " (use --model PATH)" : "");
		return NULL;
	}
	return onnx_import_bound(ctx, model, elements.v, elements.n, shapes.v, shapes.n, false);
}

/* Writes the --dot file; 0, or the exit status after a diagnostic. */
static int explain_dot(struct collagec_ctx *ctx, const struct explain *e, const char *model,
		       const char *meta_path, const char *out)
{
	struct strbuf sb = STRBUF_INIT;
	struct graph *g = import_model(ctx, e, model, meta_path, "--dot");
	int rc = 0;

	if (!g)
		return ctx->status ? ctx->status : STATUS_MODEL;
	dot_build(g, e, false, &sb);
	if (file_write_atomic(out, sb.buf, sb.len) < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", out, strerror(errno));
		rc = ctx->status;
	}
	sb_release(&sb);
	graph_free(g);
	return rc;
}

/* ---- --html ---- */

/* Runs dot -Tsvg on the DOT text; the SVG (owned, from "<svg") or NULL. */
static char *dot_to_svg(struct collagec_ctx *ctx, const struct strbuf *dot)
{
	char *dir = dir_make_temp("explain"), *svg = NULL, *start;
	const char *in, *out;
	pid_t pid;
	int st;

	if (!dir) {
		diag_error_status(ctx, STATUS_ENV, "cannot create a temporary directory: %s",
				  strerror(errno));
		return NULL;
	}
	in = arena_printf(&ctx->arena, "%s/graph.dot", dir);
	out = arena_printf(&ctx->arena, "%s/graph.svg", dir);
	if (file_write_atomic(in, dot->buf, dot->len) < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", in, strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		execlp("dot", "dot", "-Tsvg", "-o", out, in, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		diag_error_status(ctx, STATUS_ENV, "--html: Graphviz's dot %s (Debian: apt-get "
				  "install graphviz)", pid > 0 && WIFEXITED(st) &&
				  WEXITSTATUS(st) == 127 ? "cannot be run" : "failed");
		goto out;
	}
	svg = file_read(out, NULL);
	if (!svg) {
		diag_error_status(ctx, STATUS_ENV, "--html: dot wrote no SVG");
		goto out;
	}
	/* the XML prolog and doctype do not belong inside HTML */
	start = strstr(svg, "<svg");
	if (!start) {
		free(svg);
		svg = NULL;
		diag_error_status(ctx, STATUS_ENV, "--html: dot wrote no <svg> element");
		goto out;
	}
	memmove(svg, start, strlen(start) + 1);
out:
	dir_remove_tree(dir);
	free(dir);
	return svg;
}

/*
 * --source DIR: the loop IR of each kernel from a --dump-ir directory's
 * NN-lower.tir, whose blocks start "// partition" and name their kernel on
 * a "kernel NAME(" line. kernel name -> block text, in map (arena).
 */
static void read_sources(struct collagec_ctx *ctx, const char *dir, cJSON *map)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *text = NULL;

	if (!d)
		return;
	while ((de = readdir(d)) && !text) {
		size_t n = strlen(de->d_name);

		if (n > 10 && !strcmp(de->d_name + n - 10, "-lower.tir"))
			text = file_read(arena_printf(&ctx->arena, "%s/%s", dir, de->d_name), NULL);
	}
	closedir(d);
	for (char *p = text; p && *p;) {
		char *end = strstr(p + 1, "\n// partition "), *k, *paren;

		if (end)
			end++;
		else
			end = p + strlen(p);
		k = strstr(p, "\nkernel ");
		if (k && k < end) {
			k += 8;
			paren = strchr(k, '(');
			if (paren && paren < end) {
				char *name = arena_printf(&ctx->arena, "%.*s", (int)(paren - k), k);
				char *body = arena_printf(&ctx->arena, "%.*s", (int)(end - p), p);

				if (!cJSON_GetObjectItemCaseSensitive(map, name))
					cJSON_AddStringToObject(map, name, body);
			}
		}
		p = end;
	}
	free(text);
}

/* The profile's partition with this id (bench --profile --json), or NULL. */
static const cJSON *profile_part(const cJSON *profile, int id)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(profile, "partitions")) {
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "id");

		if (cJSON_IsNumber(pid) && pid->valueint == id)
			return p;
	}
	return NULL;
}

static cJSON *names_of(const cJSON *nodes)
{
	cJSON *a = cJSON_CreateArray();
	const cJSON *n;

	cJSON_ArrayForEach(n, nodes)
		cJSON_AddItemToArray(a, cJSON_CreateString(meta_str(n, "name") ? meta_str(n, "name")
							   : "?"));
	return a;
}

/* The page's data: partitions with kernels, drawn nodes with their fates. */
static cJSON *html_data(const struct explain *e, struct graph *g, const cJSON *profile,
			const char *profile_path, const cJSON *sources)
{
	const cJSON *comp = cJSON_GetObjectItemCaseSensitive(e->meta, "compiler");
	const cJSON *fates = cJSON_GetObjectItemCaseSensitive(e->meta, "passes"), *f;
	const cJSON *prof = cJSON_GetObjectItemCaseSensitive(profile, "profile");
	cJSON *root = cJSON_CreateObject(), *parts, *nodes, *removed, *legend;
	struct strmap part_of = { 0 };

	cJSON_AddStringToObject(root, "model", g->path ? g->path : "model");
	cJSON_AddStringToObject(root, "version", meta_str(comp, "version") ? meta_str(comp, "version")
				: "?");
	cJSON_AddStringToObject(root, "search", search_mode(e->meta));
	if (profile_path)
		cJSON_AddStringToObject(root, "profile", profile_path);
	else
		cJSON_AddNullToObject(root, "profile");
	legend = cJSON_AddArrayToObject(root, "legend");
	parts = cJSON_AddArrayToObject(root, "partitions");
	for (int i = 0; i < e->parts.n; i++) {
		const struct part_row *r = &e->parts.v[i];
		const struct dot_colour *c = dot_colour_of(r->target);
		const cJSON *pp = profile_part(prof, r->id), *k;
		cJSON *o = cJSON_CreateObject(), *ks;
		double v;
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = !strcmp(e->parts.v[j].target, r->target);
		if (!seen) {
			cJSON *l = cJSON_CreateObject();

			cJSON_AddStringToObject(l, "target", r->target);
			cJSON_AddStringToObject(l, "fill", c->fill);
			cJSON_AddStringToObject(l, "border", c->border);
			cJSON_AddItemToArray(legend, l);
		}
		cJSON_AddNumberToObject(o, "id", r->id);
		cJSON_AddStringToObject(o, "target", r->target);
		cJSON_AddStringToObject(o, "rule", r->rule);
		cJSON_AddItemToObject(o, "onnx_nodes", names_of(r->nodes));
		cJSON_AddItemToObject(o, "estimated_cost", r->has_est && isfinite(r->est)
				      ? cJSON_CreateNumber(r->est) : cJSON_CreateNull());
		cJSON_AddItemToObject(o, "measured_cost", r->has_meas && isfinite(r->meas)
				      ? cJSON_CreateNumber(r->meas) : cJSON_CreateNull());
		cJSON_AddItemToObject(o, "share", r->has_share ? cJSON_CreateNumber(r->share)
				      : cJSON_CreateNull());
		cJSON_AddItemToObject(o, "profile_ms", meta_num(pp, "median_ms", &v)
				      ? cJSON_CreateNumber(v) : cJSON_CreateNull());
		ks = cJSON_AddArrayToObject(o, "kernels");
		cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(r->json, "kernels")) {
			const char *name = meta_str(k, "name") ? meta_str(k, "name") : "?";
			const cJSON *pk, *variants = cJSON_GetObjectItemCaseSensitive(k, "variants");
			cJSON *kj = cJSON_CreateObject();
			const char *src = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(sources, name));

			cJSON_AddStringToObject(kj, "name", name);
			cJSON_AddStringToObject(kj, "dispatch", meta_str(k, "dispatch")
						? meta_str(k, "dispatch") : "?");
			cJSON_AddItemToObject(kj, "onnx_nodes", names_of(
				cJSON_GetObjectItemCaseSensitive(k, "onnx_nodes")));
			cJSON_AddItemToObject(kj, "variants", cJSON_IsArray(variants)
					      ? cJSON_Duplicate(variants, 1) : cJSON_CreateArray());
			cJSON_AddItemToObject(kj, "source", src ? cJSON_CreateString(src)
					      : cJSON_CreateNull());
			cJSON_AddNullToObject(kj, "profile");
			cJSON_ArrayForEach(pk, cJSON_GetObjectItemCaseSensitive(pp, "kernels"))
				if (meta_str(pk, "name") && !strcmp(meta_str(pk, "name"), name))
					cJSON_ReplaceItemInObject(kj, "profile", cJSON_Duplicate(pk, 1));
			cJSON_AddItemToArray(ks, kj);
		}
		cJSON_AddItemToArray(parts, o);
	}
	for (int i = e->parts.n - 1; i >= 0; i--) {	/* the first partition wins */
		const cJSON *n;

		cJSON_ArrayForEach(n, e->parts.v[i].nodes)
			if (meta_str(n, "name"))
				strmap_put(&part_of, meta_str(n, "name"), e->parts.v[i].id);
	}
	nodes = cJSON_AddObjectToObject(root, "nodes");
	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *n = &g->nodes.v[i];
		cJSON *o, *fs;
		int p;

		if (n->dead)
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", n->name);
		cJSON_AddStringToObject(o, "op", n->op_type);
		cJSON_AddNumberToObject(o, "index", n->onnx_index);
		p = strmap_get(&part_of, n->name);
		cJSON_AddItemToObject(o, "partition", p >= 0 ? cJSON_CreateNumber(p)
				      : cJSON_CreateNull());
		fs = cJSON_AddArrayToObject(o, "fates");
		cJSON_ArrayForEach(f, fates)
			if (meta_str(f, "name") && !strcmp(meta_str(f, "name"), n->name))
				cJSON_AddItemToArray(fs, cJSON_Duplicate(f, 1));
		cJSON_AddItemToObject(nodes, arena_printf(g->arena, "n%d", i), o);
	}
	removed = cJSON_AddArrayToObject(root, "removed");
	cJSON_ArrayForEach(f, fates)
		if (!meta_str(f, "into"))
			cJSON_AddItemToArray(removed, cJSON_Duplicate(f, 1));
	strmap_free(&part_of);
	return root;
}

/* text with "</" written "<\/", so no string in it can end the <script> */
static void script_safe(struct strbuf *sb, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (p[0] == '<' && p[1] == '/') {
			sb_puts(sb, "<\\/");
			p++;
			continue;
		}
		sb_putc(sb, *p);
	}
}

static void html_escape(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			sb_puts(sb, "&lt;");
		else if (*s == '>')
			sb_puts(sb, "&gt;");
		else if (*s == '&')
			sb_puts(sb, "&amp;");
		else
			sb_putc(sb, *s);
	}
}

/*
 * Writes the --html page: cli/explorer.html (embedded) with the title, the
 * SVG and the data in place of its markers. 0, or the exit status after a
 * diagnostic.
 */
static int explain_html(struct collagec_ctx *ctx, const struct explain *e, const char *model,
			const char *meta_path, const char *profile_path, const char *source_dir,
			const char *out)
{
	const struct embedded_file *page = embedded_find("explorer.html");
	struct strbuf dot = STRBUF_INIT, html = STRBUF_INIT;
	cJSON *profile = NULL, *sources = cJSON_CreateObject(), *data = NULL;
	char *svg = NULL, *json = NULL, *text = NULL;
	struct graph *g = NULL;
	int rc = 0;

	if (!page)
		BUG("explorer.html is not embedded");
	if (profile_path) {
		text = file_read(profile_path, NULL);
		profile = text ? cJSON_Parse(text) : NULL;
		if (!profile || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(profile,
										  "profile"))) {
			diag_error(ctx, "--profile: '%s' %s", profile_path, text
				   ? "is not the output of 'collagec bench --profile --json'"
				   : strerror(errno));
			goto fail;
		}
	}
	if (source_dir) {
		DIR *d = opendir(source_dir);

		if (!d) {
			diag_error(ctx, "--source: cannot open '%s': %s", source_dir, strerror(errno));
			goto fail;
		}
		closedir(d);
		read_sources(ctx, source_dir, sources);
	}
	g = import_model(ctx, e, model, meta_path, "--html");
	if (!g)
		goto fail;
	dot_build(g, e, true, &dot);
	svg = dot_to_svg(ctx, &dot);
	if (!svg)
		goto fail;
	data = html_data(e, g, profile, profile_path, sources);
	json = cJSON_PrintUnformatted(data);
	if (!json)
		BUG("cJSON cannot print the explorer's data");
	for (const char *p = page->data, *end = page->data + page->size; p < end;) {
		const char *m = memmem(p, (size_t)(end - p), "@@", 2);

		if (!m) {
			sb_printf(&html, "%.*s", (int)(end - p), p);
			break;
		}
		sb_printf(&html, "%.*s", (int)(m - p), p);
		if (!strncmp(m, "@@TITLE@@", 9)) {
			html_escape(&html, g->path ? g->path : "model");
			p = m + 9;
		} else if (!strncmp(m, "@@SVG@@", 7)) {
			sb_puts(&html, svg);
			p = m + 7;
		} else if (!strncmp(m, "@@DATA@@", 8)) {
			script_safe(&html, json);
			p = m + 8;
		} else {
			sb_puts(&html, "@@");
			p = m + 2;
		}
	}
	if (file_write_atomic(out, html.buf, html.len) < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", out, strerror(errno));
		goto fail;
	}
	goto out;
fail:
	rc = ctx->status ? ctx->status : STATUS_MODEL;
out:
	cJSON_free(json);
	cJSON_Delete(data);
	cJSON_Delete(profile);
	cJSON_Delete(sources);
	free(text);
	free(svg);
	sb_release(&dot);
	sb_release(&html);
	graph_free(g);
	return rc;
}

int cmd_explain(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "dot", required_argument, NULL, OPT_DOT },
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "source", required_argument, NULL, OPT_SOURCE },
		{ NULL, 0, NULL, 0 },
	};
	const char *dot = NULL, *model = NULL, *html = NULL, *profile = NULL, *source = NULL;
	struct collagec_ctx ctx;
	struct explain e;
	bool json = false;
	cJSON *meta;
	int c, rc = 0;

	if (cli_wants_help(argc, argv, "explain"))
		return 0;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: json = true; break;
		case OPT_DOT: dot = optarg; break;
		case OPT_MODEL: model = optarg; break;
		case OPT_HTML: html = optarg; break;
		case OPT_PROFILE: profile = optarg; break;
		case OPT_SOURCE: source = optarg; break;
		default:
			return cli_error(2, "explain: unknown or incomplete option '%s' (see "
					 "'collagec explain --help')", argv[optind - 1]);
		}
	}
	if (optind != argc - 1) {
		cli_usage("explain", stderr);
		return cli_error(2, "explain: expected one compiled model (OUT.so)");
	}
	if (model && !dot && !html)
		return cli_error(2, "explain: --model is for --dot and --html only");
	if ((profile || source) && !html)
		return cli_error(2, "explain: --%s is for --html only", profile ? "profile" : "source");
	ctx_init(&ctx);
	meta = metadata_read(&ctx, argv[optind]);
	if (!meta) {
		rc = ctx.status;
		ctx_release(&ctx);
		return rc;
	}
	explain_build(&e, meta);
	if (dot)
		rc = explain_dot(&ctx, &e, model, argv[optind], dot);
	if (rc == 0 && html)
		rc = explain_html(&ctx, &e, model, argv[optind], profile, source, html);
	if (rc == 0 && json) {
		char *txt = explain_json(&e);

		fputs(txt, stdout);
		free(txt);
	} else if (rc == 0) {
		explain_print(&e);
	}
	vec_free(&e.parts);
	arena_release(&e.arena);
	cJSON_Delete(meta);
	ctx_release(&ctx);
	return rc;
}
