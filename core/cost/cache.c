/*
 * cache.c - the persistent cost cache on SQLite (Debian's libsqlite3).
 *
 * One file, two tables:
 *
 *	schema_version(version)		one row: COST_CACHE_SCHEMA of the writer
 *	costs(structure, target, threads, machine, version,	-- the key
 *	      seconds REAL, label TEXT, created INTEGER,	-- unix seconds
 *	      estimate REAL, class TEXT, charge INTEGER, origin TEXT)
 *
 * The last four (schema 2; a schema-1 file gets them, NULL, when first
 * opened) say how a measurement relates to the estimate made before it and
 * what it cost: the analytic estimate, the calibration class ("c:Conv"),
 * the microseconds of measuring it (charged to --search-budget) and the
 * search (a hash of the model's candidates and the options) that measured
 * it. See struct cost_meta.
 *
 * Several collagec processes (make -j, parallel CI jobs) share one file:
 * the journal is WAL so readers never block the writer, every connection
 * waits up to COST_CACHE_BUSY_MS for a lock instead of failing, and every
 * write transaction starts with BEGIN IMMEDIATE, so it takes the write lock
 * first and cannot be refused half-way by another writer's commit (WAL's
 * SQLITE_BUSY_SNAPSHOT, which no busy timeout retries).
 *
 * +INFINITY goes in and out as a REAL (SQLite keeps IEEE infinities); NaN
 * would be stored as NULL, so putting NaN is a BUG().
 */
#include "cache.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../compile.h"

enum { COST_CACHE_BUSY_MS = 10000 };

struct cost_cache {
	struct collagec_ctx *ctx;	/* for diagnostics; borrowed */
	char *path;			/* owned */
	sqlite3 *db;
	sqlite3_stmt *get;		/* prepared once */
	sqlite3_stmt *put;
	int depth;			/* cost_cache_begin() nesting */
};

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS costs("
	" structure TEXT NOT NULL,"
	" target TEXT NOT NULL,"
	" threads INTEGER NOT NULL,"
	" machine TEXT NOT NULL,"
	" version TEXT NOT NULL,"
	" seconds REAL NOT NULL,"
	" label TEXT,"
	" created INTEGER NOT NULL,"
	" estimate REAL,"
	" class TEXT,"
	" charge INTEGER,"
	" origin TEXT,"
	" PRIMARY KEY(structure, target, threads, machine, version)"
	") WITHOUT ROWID;";

/* A schema-1 file's upgrade, in the transaction that finds it. */
static const char upgrade_1_sql[] =
	"ALTER TABLE costs ADD COLUMN estimate REAL;"
	"ALTER TABLE costs ADD COLUMN class TEXT;"
	"ALTER TABLE costs ADD COLUMN charge INTEGER;"
	"ALTER TABLE costs ADD COLUMN origin TEXT;"
	"UPDATE schema_version SET version = 2;";

/* "cannot VERB the cost cache 'PATH': WHY" with SQLite's reason (and errno's). */
static int cache_fail(struct cost_cache *c, const char *verb)
{
	const char *why = c->db ? sqlite3_errmsg(c->db) : "out of memory";
	int err = c->db ? sqlite3_system_errno(c->db) : 0;

	if (err)
		diag_error_status(c->ctx, STATUS_ENV, "cannot %s the cost cache '%s': %s (%s)",
				  verb, c->path, why, strerror(err));
	else
		diag_error_status(c->ctx, STATUS_ENV, "cannot %s the cost cache '%s': %s", verb,
				  c->path, why);
	return -1;
}

const char *cost_cache_default_path(struct collagec_ctx *ctx)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	/* the XDG spec: an empty or relative $XDG_CACHE_HOME is ignored */
	if (xdg && xdg[0] == '/')
		return arena_printf(&ctx->arena, "%s/collagec/costs.sqlite", xdg);
	if (home && home[0])
		return arena_printf(&ctx->arena, "%s/.cache/collagec/costs.sqlite", home);
	return NULL;
}

/* mkdir -p of the directory part of path (private: 0700, as XDG asks). */
static int make_parent_dirs(const char *path)
{
	char *dir = xstrdup(path);
	int rc = 0;

	for (char *p = dir + 1; *p && rc == 0; p++) {
		struct stat st;

		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			rc = -1;
		else if (stat(dir, &st) < 0)
			rc = -1;
		else if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			rc = -1;
		}
		*p = '/';
	}
	free(dir);
	return rc;
}

static int exec_sql(struct cost_cache *c, const char *sql, const char *verb)
{
	if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return cache_fail(c, verb);
	return 0;
}

/* Runs a statement of one row or none to its end; SQLite's code. */
static int run_sql(struct cost_cache *c, const char *sql, int *first_int)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (first_int)
			*first_int = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * One try at making the file ready: WAL (unless the file system cannot; then
 * SQLite keeps a rollback journal), then the tables of a new file or the
 * version check of an old one in one write transaction, so that processes
 * opening a new file at once create it once. SQLite's code; *version is the
 * file's schema version.
 */
static int setup_try(struct cost_cache *c, int *version)
{
	int rc;

	if ((rc = run_sql(c, "PRAGMA journal_mode=WAL", NULL)) != SQLITE_OK ||
	    (rc = run_sql(c, "PRAGMA synchronous=NORMAL", NULL)) != SQLITE_OK ||
	    (rc = run_sql(c, "BEGIN IMMEDIATE", NULL)) != SQLITE_OK)
		return rc;
	*version = 0;
	if ((rc = sqlite3_exec(c->db, schema_sql, NULL, NULL, NULL)) != SQLITE_OK ||
	    (rc = run_sql(c, "SELECT max(version) FROM schema_version", version)) != SQLITE_OK)
		goto fail;
	if (*version > COST_CACHE_SCHEMA)
		goto fail;
	if (*version == 1) {
		if ((rc = sqlite3_exec(c->db, upgrade_1_sql, NULL, NULL, NULL)) != SQLITE_OK)
			goto fail;
		*version = 2;
	}
	if (*version == 0) {
		char sql[64];

		snprintf(sql, sizeof(sql), "INSERT INTO schema_version VALUES(%d)",
			 COST_CACHE_SCHEMA);
		if ((rc = run_sql(c, sql, NULL)) != SQLITE_OK)
			goto fail;
	}
	if ((rc = run_sql(c, "COMMIT", NULL)) == SQLITE_OK)
		return SQLITE_OK;
fail:
	sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * Makes the file ready, retrying for COST_CACHE_BUSY_MS while another
 * process holds a lock: switching a new file to WAL needs it alone, and
 * SQLite answers SQLITE_BUSY to that at once, without its busy handler.
 */
static int setup(struct cost_cache *c)
{
	double deadline = time_now() + COST_CACHE_BUSY_MS / 1000.0;
	int version = 0, rc, tries = 0;

	while ((rc = setup_try(c, &version)) != SQLITE_OK && (rc & 0xff) == SQLITE_BUSY &&
	       time_now() < deadline) {
		/* 1 to 10 ms, different in each process */
		struct timespec ts = { 0, (long)(1 + (getpid() + tries++) % 10) * 1000000L };

		nanosleep(&ts, NULL);
	}
	if (rc != SQLITE_OK)
		return cache_fail(c, "open");
	if (version > COST_CACHE_SCHEMA) {
		diag_error_status(c->ctx, STATUS_ENV, "cannot open the cost cache '%s': its schema "
				  "version %d is newer than this collagec's (%d); use a newer "
				  "collagec or another cache file", c->path, version,
				  COST_CACHE_SCHEMA);
		return -1;
	}
	return 0;
}

int cost_cache_open(struct collagec_ctx *ctx, const char *path, struct cost_cache **out)
{
	struct cost_cache *c;

	*out = NULL;
	if (!path)
		path = cost_cache_default_path(ctx);
	if (!path) {
		diag_error_status(ctx, STATUS_ENV, "cannot find the cost cache: neither "
				  "XDG_CACHE_HOME nor HOME is set (use --cache PATH)");
		return -1;
	}
	c = xcalloc(1, sizeof(*c));
	c->ctx = ctx;
	c->path = xstrdup(path);
	if (make_parent_dirs(path) < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot open the cost cache '%s': cannot create "
				  "its directory: %s", path, strerror(errno));
		goto fail;
	}
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		cache_fail(c, "open");
		goto fail;
	}
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, COST_CACHE_BUSY_MS);
	if (setup(c) < 0)
		goto fail;
	if (sqlite3_prepare_v2(c->db, "SELECT seconds, estimate, class, charge, origin FROM costs "
			       "WHERE structure = ?1 AND target = ?2 AND threads = ?3 AND "
			       "machine = ?4 AND version = ?5", -1, &c->get, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO costs(structure, target, threads, "
			       "machine, version, seconds, label, created, estimate, class, "
			       "charge, origin) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
			       "?11, ?12)", -1, &c->put, NULL) != SQLITE_OK) {
		cache_fail(c, "open");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	cost_cache_close(c);
	return -1;
}

void cost_cache_close(struct cost_cache *c)
{
	if (!c)
		return;
	if (c->depth && c->db)
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_finalize(c->get);
	sqlite3_finalize(c->put);
	sqlite3_close(c->db);
	free(c->path);
	free(c);
}

const char *cost_cache_path(const struct cost_cache *c)
{
	return c->path;
}

static void bind_key(sqlite3_stmt *st, const struct cost_key *k)
{
	if (!k->structure || !k->target || !k->machine || !k->version)
		BUG("cost_key with a NULL field");
	sqlite3_bind_text(st, 1, k->structure, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, k->target, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, k->threads);
	sqlite3_bind_text(st, 4, k->machine, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, k->version, -1, SQLITE_STATIC);
}

/* A text column as an arena string, or NULL. */
static const char *column_str(struct arena *a, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	return t ? arena_strdup(a, (const char *)t) : NULL;
}

int cost_cache_get_meta(struct cost_cache *c, const struct cost_key *k, double *seconds,
			struct cost_meta *meta)
{
	int rc;

	sqlite3_reset(c->get);
	bind_key(c->get, k);
	rc = sqlite3_step(c->get);
	if (rc == SQLITE_ROW) {
		*seconds = sqlite3_column_double(c->get, 0);
		if (meta) {
			meta->estimate = sqlite3_column_type(c->get, 1) == SQLITE_NULL ? NAN
					 : sqlite3_column_double(c->get, 1);
			meta->cls = column_str(&c->ctx->arena, c->get, 2);
			meta->charge_us = sqlite3_column_int64(c->get, 3);
			meta->origin = column_str(&c->ctx->arena, c->get, 4);
		}
	}
	sqlite3_reset(c->get);
	sqlite3_clear_bindings(c->get);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	return cache_fail(c, "read");
}

int cost_cache_get(struct cost_cache *c, const struct cost_key *k, double *seconds)
{
	return cost_cache_get_meta(c, k, seconds, NULL);
}

int cost_cache_put(struct cost_cache *c, const struct cost_key *k, double seconds,
		   const char *label)
{
	return cost_cache_put_meta(c, k, seconds, label, NULL);
}

int cost_cache_put_meta(struct cost_cache *c, const struct cost_key *k, double seconds,
			const char *label, const struct cost_meta *meta)
{
	int rc;

	if (isnan(seconds))
		BUG("cost_cache_put: NaN seconds (unknown costs are not cached)");
	sqlite3_reset(c->put);
	bind_key(c->put, k);
	sqlite3_bind_double(c->put, 6, seconds);
	if (label)
		sqlite3_bind_text(c->put, 7, label, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(c->put, 7);
	sqlite3_bind_int64(c->put, 8, (sqlite3_int64)time(NULL));
	if (meta) {
		if (isfinite(meta->estimate))
			sqlite3_bind_double(c->put, 9, meta->estimate);
		if (meta->cls)
			sqlite3_bind_text(c->put, 10, meta->cls, -1, SQLITE_STATIC);
		sqlite3_bind_int64(c->put, 11, (sqlite3_int64)meta->charge_us);
		if (meta->origin)
			sqlite3_bind_text(c->put, 12, meta->origin, -1, SQLITE_STATIC);
	}
	rc = sqlite3_step(c->put);
	sqlite3_reset(c->put);
	sqlite3_clear_bindings(c->put);
	if (rc != SQLITE_DONE)
		return cache_fail(c, "write");
	return 0;
}

int cost_cache_begin(struct cost_cache *c)
{
	if (c->depth++)
		return 0;
	if (exec_sql(c, "BEGIN IMMEDIATE", "write") < 0) {
		c->depth = 0;
		return -1;
	}
	return 0;
}

int cost_cache_commit(struct cost_cache *c)
{
	if (c->depth <= 0)
		BUG("cost_cache_commit without cost_cache_begin");
	if (--c->depth)
		return 0;
	if (exec_sql(c, "COMMIT", "write") < 0) {
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	return 0;
}

void cost_cache_rollback(struct cost_cache *c)
{
	if (c->depth <= 0)
		BUG("cost_cache_rollback without cost_cache_begin");
	c->depth = 0;
	sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

int cost_cache_foreach(struct cost_cache *c, int (*fn)(const struct cost_row *, void *),
		       void *arg)
{
	sqlite3_stmt *st;
	int rc = SQLITE_DONE, stop = 0;

	if (sqlite3_prepare_v2(c->db, "SELECT structure, target, threads, machine, version, "
			       "seconds, label, created FROM costs ORDER BY structure, target, "
			       "threads, machine, version", -1, &st, NULL) != SQLITE_OK)
		return cache_fail(c, "read");
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cost_row r;

		r.key.structure = (const char *)sqlite3_column_text(st, 0);
		r.key.target = (const char *)sqlite3_column_text(st, 1);
		r.key.threads = sqlite3_column_int(st, 2);
		r.key.machine = (const char *)sqlite3_column_text(st, 3);
		r.key.version = (const char *)sqlite3_column_text(st, 4);
		r.seconds = sqlite3_column_double(st, 5);
		r.label = (const char *)sqlite3_column_text(st, 6);
		r.created = sqlite3_column_int64(st, 7);
		if (!r.key.structure || !r.key.target || !r.key.machine || !r.key.version) {
			sqlite3_finalize(st);
			return cache_fail(c, "read");
		}
		stop = fn(&r, arg);
	}
	sqlite3_finalize(st);
	if (!stop && rc != SQLITE_DONE)
		return cache_fail(c, "read");
	return stop;
}

int cost_cache_samples(struct cost_cache *c, const struct cost_key *like, const char *origin,
		       int (*fn)(const char *cls, double estimate, double seconds, void *),
		       void *arg)
{
	sqlite3_stmt *st;
	int rc, stop = 0;

	/* in key order, so that whoever sums them gets the same double */
	if (sqlite3_prepare_v2(c->db, "SELECT class, estimate, seconds FROM costs WHERE "
			       "threads = ?1 AND machine = ?2 AND version = ?3 AND "
			       "estimate IS NOT NULL AND class IS NOT NULL AND "
			       "(origin IS NULL OR origin != ?4) ORDER BY structure, target",
			       -1, &st, NULL) != SQLITE_OK)
		return cache_fail(c, "read");
	sqlite3_bind_int(st, 1, like->threads);
	sqlite3_bind_text(st, 2, like->machine, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, like->version, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, origin ? origin : "", -1, SQLITE_STATIC);
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
		stop = fn((const char *)sqlite3_column_text(st, 0), sqlite3_column_double(st, 1),
			  sqlite3_column_double(st, 2), arg);
	sqlite3_finalize(st);
	if (!stop && rc != SQLITE_DONE)
		return cache_fail(c, "read");
	return stop;
}

int cost_cache_clear(struct cost_cache *c, double older_than_days, const char *version,
		     long *deleted)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(c->db, "DELETE FROM costs WHERE (?1 IS NULL OR created < ?1) "
			       "AND (?2 IS NULL OR version = ?2)", -1, &st, NULL) != SQLITE_OK)
		return cache_fail(c, "write");
	if (older_than_days >= 0)
		sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL) -
				   (sqlite3_int64)(older_than_days * 86400.0));
	if (version)
		sqlite3_bind_text(st, 2, version, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cache_fail(c, "write");
	if (deleted)
		*deleted = (long)sqlite3_changes(c->db);
	return 0;
}

int cost_cache_check(struct cost_cache *c, struct strbuf *result)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(c->db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK)
		return cache_fail(c, "read");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *line = (const char *)sqlite3_column_text(st, 0);

		if (result->len)
			sb_putc(result, '\n');
		sb_puts(result, line ? line : "");
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cache_fail(c, "read");
	return 0;
}

struct cost_key cost_key_make(struct collagec_ctx *ctx, const char *structure,
			      const char *target, int threads, const char *cpu)
{
	struct cost_key k = { structure, target, threads > 0 ? threads : 1,
			      cost_machine_fingerprint(ctx, cpu), collagec_codegen_id };

	return k;
}

/* ---- the machine fingerprint ---- */

/*
 * The CPU features that change which code is fastest, sorted: x86 SIMD and
 * matrix extensions, and AArch64's (from "Features"). Others (virtualisation,
 * security mitigations, power management) do not and would split caches
 * between otherwise identical machines.
 */
static const char *const isa_flags[] = {
	"amx_bf16", "amx_int8", "amx_tile", "asimd", "asimddp", "asimdhp", "avx", "avx2",
	"avx512_bf16", "avx512_fp16", "avx512_vnni", "avx512bw", "avx512cd", "avx512dq",
	"avx512f", "avx512vl", "avx_vnni", "bf16", "f16c", "fma", "i8mm", "neon", "sse4_1",
	"sse4_2", "sve", "sve2",
};

/* The value of the first "key<spaces>: value" line of cpuinfo, trimmed (arena), or NULL. */
static char *cpuinfo_field(struct arena *a, const char *info, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = info; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *v, *end;

		if (strncmp(l, key, kl) || (l[kl] != ' ' && l[kl] != '\t' && l[kl] != ':'))
			continue;
		v = l + kl;
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != ':')
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		end = strchr(v, '\n');
		if (!end)
			end = v + strlen(v);
		while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		return arena_strndup(a, v, (size_t)(end - v));
	}
	return NULL;
}

/* Is word a whitespace-separated word of list? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == '\t') &&
		    (p[n] == 0 || p[n] == ' ' || p[n] == '\t'))
			return true;
	return false;
}

const char *cost_machine_fingerprint(struct collagec_ctx *ctx, const char *cpu)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len;
	char *info = file_read("/proc/cpuinfo", &len), *model = NULL, *flags = NULL;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *res;
	int nf = 0;

	if (info) {
		model = cpuinfo_field(&ctx->arena, info, "model name");
		if (!model)
			model = cpuinfo_field(&ctx->arena, info, "Model");	/* arm boards */
		if (!model)
			model = cpuinfo_field(&ctx->arena, info, "CPU part");
		flags = cpuinfo_field(&ctx->arena, info, "flags");
		if (!flags)
			flags = cpuinfo_field(&ctx->arena, info, "Features");
	}
	/* one space between words, and no '|' (the separator) */
	for (const char *p = model && *model ? model : "unknown"; *p; p++) {
		if (*p == ' ' || *p == '\t') {
			if (sb.len && sb.buf[sb.len - 1] != ' ')
				sb_putc(&sb, ' ');
		} else {
			sb_putc(&sb, *p == '|' ? '/' : *p);
		}
	}
	sb_putc(&sb, '|');
	for (size_t i = 0; i < ARRAY_SIZE(isa_flags); i++) {
		if (flags && has_word(flags, isa_flags[i])) {
			sb_printf(&sb, "%s%s", nf ? "," : "", isa_flags[i]);
			nf++;
		}
	}
	if (!nf)
		sb_putc(&sb, '-');
	sb_printf(&sb, "|%ldcpu|cpu=%s", ncpu > 0 ? ncpu : 1, cpu ? cpu : COLLAGEC_DEFAULT_CPU);
	res = arena_strdup(&ctx->arena, sb_str(&sb));
	sb_release(&sb);
	free(info);
	return res;
}
