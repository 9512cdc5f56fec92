/*
 * cmd_cache.c - collagec cache: look into the cost cache (stats), move it
 * between machines or CI runs as JSON lines (export, import) and empty it
 * (clear). Reading commands never create a missing cache file.
 *
 * One exported row per line, keys in this order, rows in key order, so two
 * caches with the same rows export byte-identical files:
 *	{"structure":"9f..","target":"blas","threads":1,"machine":"AMD EPYC|avx,avx2|2cpu",
 *	 "version":"0.1.0+3f9a1c2d5e6b","seconds":0.00123,"label":"Conv+Relu"}
 * seconds +inf (cannot build or run) is the string "inf"; label may be null.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/cost/cache.h"
#include "../core/emit/emit.h"

enum { OPT_CACHE = 256, OPT_OLDER, OPT_VERSION };

struct cache_args {
	const char *action;	/* stats, export, import, clear */
	const char *path;	/* --cache, or NULL for the default */
	const char *out;	/* export -o */
	const char *in;		/* import FILE or "-" */
	double older_than;	/* clear --older-than DAYS, < 0 when not given */
	const char *version;	/* clear --version */
};

/* The cache file to use, or NULL after a diagnostic (no default path). */
static const char *cache_path(struct collagec_ctx *ctx, const struct cache_args *a)
{
	const char *p = a->path ? a->path : cost_cache_default_path(ctx);

	if (!p)
		diag_error_status(ctx, STATUS_ENV, "cannot find the cost cache: neither "
				  "XDG_CACHE_HOME nor HOME is set (use --cache PATH)");
	return p;
}

/* ---- stats ---- */

struct tally_item {
	char *name;		/* owned */
	long n;
};

struct tally {
	VEC(struct tally_item) v;
};

static void tally_add(struct tally *t, const char *name)
{
	struct tally_item it;

	for (int i = 0; i < t->v.n; i++) {
		if (!strcmp(t->v.v[i].name, name)) {
			t->v.v[i].n++;
			return;
		}
	}
	it.name = xstrdup(name);
	it.n = 1;
	vec_push(&t->v, it);
}

static int cmp_tally_item(const void *a, const void *b)
{
	return strcmp(((const struct tally_item *)a)->name, ((const struct tally_item *)b)->name);
}

static void tally_print(struct tally *t, const char *title)
{
	int w = 0;

	printf("by %s:\n", title);
	qsort(t->v.v, (size_t)t->v.n, sizeof(*t->v.v), cmp_tally_item);
	for (int i = 0; i < t->v.n; i++)
		w = MAX(w, (int)strlen(t->v.v[i].name));
	for (int i = 0; i < t->v.n; i++)
		printf("  %-*s  %ld\n", w, t->v.v[i].name, t->v.v[i].n);
}

static void tally_free(struct tally *t)
{
	for (int i = 0; i < t->v.n; i++)
		free(t->v.v[i].name);
	vec_free(&t->v);
}

struct stats {
	long rows, infinite;
	struct tally target, machine, version;
};

static int stats_row(const struct cost_row *r, void *arg)
{
	struct stats *s = arg;

	s->rows++;
	s->infinite += isinf(r->seconds);
	tally_add(&s->target, r->key.target);
	tally_add(&s->machine, r->key.machine);
	tally_add(&s->version, r->key.version);
	return 0;
}

/* The kernel-object cache beside the cost cache (compile's kernels_N.o). */
static void objects_print(struct collagec_ctx *ctx, const char *path)
{
	const char *dir = objcache_dir(&ctx->arena, path);
	long n;
	long long bytes;

	if (objcache_scan(dir, &n, &bytes, -1) < 0)
		printf("objects: %s cannot be read\n", dir);
	else
		printf("objects: %ld compiled kernel file%s, %lld bytes (%s; at most %lld)\n", n,
		       n == 1 ? "" : "s", bytes, dir, OBJCACHE_MAX_BYTES);
}

static int cache_stats(struct collagec_ctx *ctx, const char *path)
{
	struct stats s = { 0 };
	struct cost_cache *cc;
	struct stat st;

	if (access(path, F_OK) < 0) {
		printf("cache: %s (not created yet)\nrows: 0\nthis machine: %s\nthis collagec: %s\n",
		       path, cost_machine_fingerprint(ctx, COLLAGEC_DEFAULT_CPU), collagec_codegen_id);
		objects_print(ctx, path);
		return 0;
	}
	if (cost_cache_open(ctx, path, &cc) < 0)
		return ctx->status;
	if (cost_cache_foreach(cc, stats_row, &s) < 0) {
		cost_cache_close(cc);
		return ctx->status;
	}
	cost_cache_close(cc);
	printf("cache: %s\n", path);
	printf("rows: %ld (%ld +inf: cannot build or run)\n", s.rows, s.infinite);
	if (stat(path, &st) == 0)
		printf("size: %lld bytes\n", (long long)st.st_size);
	printf("this machine: %s\n", cost_machine_fingerprint(ctx, COLLAGEC_DEFAULT_CPU));
	printf("this collagec: %s\n", collagec_codegen_id);
	objects_print(ctx, path);
	tally_print(&s.target, "target");
	tally_print(&s.machine, "machine");
	tally_print(&s.version, "collagec version");
	tally_free(&s.target);
	tally_free(&s.machine);
	tally_free(&s.version);
	return 0;
}

/* ---- export ---- */

static int export_row(const struct cost_row *r, void *arg)
{
	struct strbuf *sb = arg;
	cJSON *o = cJSON_CreateObject();
	char *line;

	cJSON_AddStringToObject(o, "structure", r->key.structure);
	cJSON_AddStringToObject(o, "target", r->key.target);
	cJSON_AddNumberToObject(o, "threads", r->key.threads);
	cJSON_AddStringToObject(o, "machine", r->key.machine);
	cJSON_AddStringToObject(o, "version", r->key.version);
	if (isinf(r->seconds))
		cJSON_AddStringToObject(o, "seconds", r->seconds > 0 ? "inf" : "-inf");
	else
		cJSON_AddNumberToObject(o, "seconds", r->seconds);
	if (r->label)
		cJSON_AddStringToObject(o, "label", r->label);
	else
		cJSON_AddNullToObject(o, "label");
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!line)
		BUG("cJSON cannot print a cache row");
	sb_puts(sb, line);
	sb_putc(sb, '\n');
	cJSON_free(line);
	return 0;
}

static int cache_export(struct collagec_ctx *ctx, const char *path, const char *out)
{
	struct strbuf sb = STRBUF_INIT;
	struct cost_cache *cc;
	int rc = 0;

	if (access(path, F_OK) == 0) {	/* a missing cache exports nothing */
		if (cost_cache_open(ctx, path, &cc) < 0)
			return ctx->status;
		rc = cost_cache_foreach(cc, export_row, &sb);
		cost_cache_close(cc);
		if (rc < 0) {
			sb_release(&sb);
			return ctx->status;
		}
	}
	if (out && file_write_atomic(out, sb.buf ? sb.buf : "", sb.len) < 0)
		rc = cli_error(4, "cannot write '%s': %s", out, strerror(errno));
	else if (!out && (fwrite(sb.buf ? sb.buf : "", 1, sb.len, stdout) != sb.len ||
			  fflush(stdout) != 0))
		rc = cli_error(4, "cannot write the standard output: %s", strerror(errno));
	sb_release(&sb);
	return rc;
}

/* ---- import ---- */

/* All of standard input; owned, NULL with errno on a read error. */
static char *read_stdin(size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;

	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
		sb_add(&sb, buf, n);
	if (ferror(stdin)) {
		sb_release(&sb);
		return NULL;
	}
	*len = sb.len;
	if (!sb.buf)
		return xstrdup("");
	return sb_detach(&sb);
}

/* The string member key of o, non-empty; NULL after a diagnostic. */
static const char *json_text(struct collagec_ctx *ctx, const char *where, const cJSON *o,
			     const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	if (!s || !*s)
		diag_error(ctx, "%s: '%s' must be a non-empty string", where, key);
	return s && *s ? s : NULL;
}

/*
 * Checks one line and fills row from it (strings borrowed from the parsed
 * line). 0, or -1 after diagnostics naming where (FILE:LINE).
 */
static int import_row(struct collagec_ctx *ctx, const char *where, const cJSON *o,
		      struct cost_row *row)
{
	const cJSON *th = cJSON_GetObjectItemCaseSensitive(o, "threads");
	const cJSON *sec = cJSON_GetObjectItemCaseSensitive(o, "seconds");
	const cJSON *label = cJSON_GetObjectItemCaseSensitive(o, "label");
	int errors = ctx->n_errors;

	if (!cJSON_IsObject(o)) {
		diag_error(ctx, "%s: not a JSON object", where);
		return -1;
	}
	memset(row, 0, sizeof(*row));
	row->key.structure = json_text(ctx, where, o, "structure");
	row->key.target = json_text(ctx, where, o, "target");
	row->key.machine = json_text(ctx, where, o, "machine");
	row->key.version = json_text(ctx, where, o, "version");
	if (!cJSON_IsNumber(th) || th->valuedouble < 0 || th->valuedouble > 1e6 ||
	    th->valuedouble != (double)(int)th->valuedouble)
		diag_error(ctx, "%s: 'threads' must be an integer >= 0", where);
	else
		row->key.threads = th->valueint;
	if (cJSON_IsNumber(sec) && sec->valuedouble >= 0)
		row->seconds = sec->valuedouble;
	else if (cJSON_IsString(sec) && !strcmp(sec->valuestring, "inf"))
		row->seconds = INFINITY;
	else
		diag_error(ctx, "%s: 'seconds' must be a number >= 0 or \"inf\"", where);
	if (cJSON_IsString(label))
		row->label = label->valuestring;
	else if (label && !cJSON_IsNull(label))
		diag_error(ctx, "%s: 'label' must be a string or null", where);
	return ctx->n_errors > errors ? -1 : 0;
}

static int cache_import(struct collagec_ctx *ctx, const char *path, const char *in)
{
	bool is_stdin = !strcmp(in, "-");
	const char *name = is_stdin ? "<stdin>" : in;
	size_t len = 0;
	char *text = is_stdin ? read_stdin(&len) : file_read(in, &len);
	VEC(cJSON *) lines = { 0 };
	VEC(struct cost_row) rows = { 0 };
	struct cost_cache *cc = NULL;
	int rc = 0, lineno = 0;

	if (!text)
		return cli_error(1, "%s: cannot read: %s", name, strerror(errno));
	for (char *l = text, *next; l && l < text + len; l = next) {
		struct cost_row row;
		const char *where;
		cJSON *o;

		lineno++;
		next = memchr(l, '\n', (size_t)(text + len - l));
		if (next)
			*next++ = 0;
		if (strspn(l, " \t\r") == strlen(l))
			continue;	/* blank lines are fine */
		where = arena_printf(&ctx->arena, "%s:%d", name, lineno);
		o = cJSON_ParseWithOpts(l, NULL, 1);	/* nothing after the object */
		if (!o) {
			diag_error(ctx, "%s: not valid JSON", where);
			continue;
		}
		vec_push(&lines, o);
		if (import_row(ctx, where, o, &row) == 0)
			vec_push(&rows, row);
	}
	if (ctx->n_errors) {
		diag_error(ctx, "%s: nothing imported", name);
		rc = ctx->status;
		goto out;
	}
	if (cost_cache_open(ctx, path, &cc) < 0 || cost_cache_begin(cc) < 0) {
		rc = ctx->status;
		goto out;
	}
	for (int i = 0; i < rows.n; i++) {
		if (cost_cache_put(cc, &rows.v[i].key, rows.v[i].seconds, rows.v[i].label) < 0) {
			cost_cache_rollback(cc);
			rc = ctx->status;
			goto out;
		}
	}
	if (cost_cache_commit(cc) < 0) {
		rc = ctx->status;
		goto out;
	}
	printf("cache: imported %d row%s into %s\n", rows.n, rows.n == 1 ? "" : "s", path);
out:
	cost_cache_close(cc);
	for (int i = 0; i < lines.n; i++)
		cJSON_Delete(lines.v[i]);
	vec_free(&lines);
	vec_free(&rows);
	free(text);
	return rc;
}

/* ---- clear ---- */

static int cache_clear(struct collagec_ctx *ctx, const char *path, const struct cache_args *a)
{
	struct cost_cache *cc;
	long n = 0;

	if (access(path, F_OK) == 0) {	/* nothing to delete in a missing cache */
		if (cost_cache_open(ctx, path, &cc) < 0)
			return ctx->status;
		if (cost_cache_clear(cc, a->older_than, a->version, &n) < 0) {
			cost_cache_close(cc);
			return ctx->status;
		}
		cost_cache_close(cc);
	}
	printf("cache: deleted %ld row%s from %s\n", n, n == 1 ? "" : "s", path);
	/* compiled kernels carry no date or version worth a filter: all or none */
	if (a->older_than < 0 && !a->version) {
		const char *dir = objcache_dir(&ctx->arena, path);
		long before, after;
		long long bytes;

		if (objcache_scan(dir, &before, &bytes, -1) == 0 &&
		    objcache_scan(dir, &after, &bytes, 0) == 0)
			printf("cache: deleted %ld compiled kernel file%s from %s\n", before - after,
			       before - after == 1 ? "" : "s", dir);
	}
	return 0;
}

/* ---- the command line ---- */

/* The usage, then "collagec: error: cache: ..."; returns 2. */
PRINTF_LIKE(1, 2) static int cache_usage_error(const char *fmt, ...)
{
	va_list ap;

	cli_usage("cache", stderr);
	fputs("collagec: error: cache: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* Parses argv into a; 0, or 2 after a usage error. */
static int cache_parse(int argc, char **argv, struct cache_args *a)
{
	static const struct option longopts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "output", required_argument, NULL, 'o' },
		{ "older-than", required_argument, NULL, OPT_OLDER },
		{ "version", required_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *older = NULL;
	int c, nargs;

	memset(a, 0, sizeof(*a));
	a->older_than = -1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CACHE: a->path = optarg; break;
		case 'o': a->out = optarg; break;
		case OPT_OLDER: older = optarg; break;
		case OPT_VERSION: a->version = optarg; break;
		default:
			return cli_error(2, "cache: unknown or incomplete option '%s' (see "
					 "'collagec cache --help')", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return cache_usage_error("expected an action: stats, export, import or clear");
	a->action = argv[optind++];
	nargs = argc - optind;
	if (strcmp(a->action, "stats") && strcmp(a->action, "export") &&
	    strcmp(a->action, "import") && strcmp(a->action, "clear"))
		return cache_usage_error("unknown action '%s' (stats, export, import or clear)",
					 a->action);
	if (!strcmp(a->action, "import")) {
		if (nargs != 1)
			return cache_usage_error("import expects one FILE (or - for the standard "
						 "input)");
		a->in = argv[optind];
	} else if (nargs) {
		return cli_error(2, "cache: unexpected argument '%s'", argv[optind]);
	}
	if (a->out && strcmp(a->action, "export"))
		return cli_error(2, "cache: -o is for 'cache export' only");
	if ((older || a->version) && strcmp(a->action, "clear"))
		return cli_error(2, "cache: --%s is for 'cache clear' only",
				 older ? "older-than" : "version");
	if (older && cli_number("cache", "--older-than", older, 0, &a->older_than))
		return 2;
	return 0;
}

int cmd_cache(int argc, char **argv)
{
	struct cache_args a;
	struct collagec_ctx ctx;
	const char *path;
	int rc;

	if (cli_wants_help(argc, argv, "cache"))
		return 0;
	if (cache_parse(argc, argv, &a))
		return 2;
	ctx_init(&ctx);
	path = cache_path(&ctx, &a);
	if (!path)
		rc = ctx.status;
	else if (!strcmp(a.action, "stats"))
		rc = cache_stats(&ctx, path);
	else if (!strcmp(a.action, "export"))
		rc = cache_export(&ctx, path, a.out);
	else if (!strcmp(a.action, "import"))
		rc = cache_import(&ctx, path, a.in);
	else
		rc = cache_clear(&ctx, path, &a);
	ctx_release(&ctx);
	return rc;
}
