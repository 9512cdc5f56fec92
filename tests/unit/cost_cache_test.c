/*
 * cost_cache_test.c - the persistent cost cache of core/cost: get/put, the
 * key, +inf, transactions, the default path, errors, the schema version (a
 * schema-1 file upgraded in place), what a row says besides its cost (meta,
 * samples) and eight processes writing one file at once; and the
 * calibration the search learns from those samples (calib.c).
 */
#include "../../core/compile.h"
#include "../../core/cost/cache.h"
#include "../../core/cost/cost.h"
#include "test.h"

#include <math.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A context whose diagnostics go to diags instead of stderr. */
static struct strbuf diags = STRBUF_INIT;

static void quiet_ctx(struct collagec_ctx *ctx)
{
	ctx_init(ctx);
	ctx->diag_out = NULL;
	ctx->quiet = true;
	sb_reset(&diags);
	ctx->capture = &diags;
}

static struct cost_key key(const char *structure)
{
	struct cost_key k = { structure, "c", 1, "TestCPU|avx2|2cpu", "0.1.0" };

	return k;
}

static long n_rows;

static int count_row(const struct cost_row *r, void *arg)
{
	n_rows++;
	return 0;
}

static long count_rows(struct cost_cache *cc)
{
	n_rows = 0;
	ASSERT(0, cost_cache_foreach(cc, count_row, NULL));
	return n_rows;
}

static void test_get_put_replace(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *path;
	struct cost_cache *cc;
	struct cost_key k = key("abc123");
	double s = -1;

	quiet_ctx(&ctx);
	path = arena_printf(&ctx.arena, "%s/costs.sqlite", dir);
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	ASSERT_STR(path, cost_cache_path(cc));
	ASSERT(0, cost_cache_get(cc, &k, &s));
	ASSERT(-1, (long long)s);		/* untouched when absent */
	ASSERT(0, cost_cache_put(cc, &k, 1.25e-3, "Conv+Relu 1x64x56x56"));
	ASSERT(1, cost_cache_get(cc, &k, &s));
	ASSERT_TRUE(s == 1.25e-3);
	ASSERT(0, cost_cache_put(cc, &k, 7.5e-4, NULL));	/* replaces */
	ASSERT(1, cost_cache_get(cc, &k, &s));
	ASSERT_TRUE(s == 7.5e-4);
	ASSERT(1, count_rows(cc));
	cost_cache_close(cc);
	/* it persists */
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	s = 0;
	ASSERT(1, cost_cache_get(cc, &k, &s));
	ASSERT_TRUE(s == 7.5e-4);
	cost_cache_close(cc);
	ASSERT(0, ctx.n_errors);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

static int check_label(const struct cost_row *r, void *arg)
{
	if (!strcmp(r->key.structure, "inf"))
		*(int *)arg = r->label && !strcmp(r->label, "cannot build") && isinf(r->seconds) &&
			      r->seconds > 0 && r->created > 1600000000;
	return 0;
}

static void test_infinity_round_trip(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *path;
	struct cost_cache *cc;
	struct cost_key k = key("inf");
	double s = 0;
	int ok = 0;
	sqlite3 *db;
	sqlite3_stmt *st;

	quiet_ctx(&ctx);
	path = arena_printf(&ctx.arena, "%s/costs.sqlite", dir);
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	ASSERT(0, cost_cache_put(cc, &k, INFINITY, "cannot build"));
	cost_cache_close(cc);
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	ASSERT(1, cost_cache_get(cc, &k, &s));
	ASSERT_TRUE(isinf(s) && s > 0);
	ASSERT(0, cost_cache_foreach(cc, check_label, &ok));
	ASSERT(1, ok);
	cost_cache_close(cc);
	/* SQLite itself holds a REAL infinity, not a string or NULL */
	ASSERT(SQLITE_OK, sqlite3_open(path, &db));
	ASSERT(SQLITE_OK, sqlite3_prepare_v2(db, "SELECT typeof(seconds), seconds > 1e308 "
					     "FROM costs", -1, &st, NULL));
	ASSERT(SQLITE_ROW, sqlite3_step(st));
	ASSERT_STR("real", (const char *)sqlite3_column_text(st, 0));
	ASSERT(1, sqlite3_column_int(st, 1));
	sqlite3_finalize(st);
	/* and the journal is WAL */
	ASSERT(SQLITE_OK, sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL));
	ASSERT(SQLITE_ROW, sqlite3_step(st));
	ASSERT_STR("wal", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

/* Every field of the key makes a different row. */
static void test_key_fields_distinguish(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	struct cost_cache *cc;
	struct cost_key k[6];
	double s;

	quiet_ctx(&ctx);
	for (int i = 0; i < 6; i++)
		k[i] = key("base");
	k[1].structure = "other";
	k[2].target = "blas";
	k[3].threads = 4;
	k[4].machine = "OtherCPU|avx512f|64cpu";
	k[5].version = "0.2.0";
	ASSERT(0, cost_cache_open(&ctx, arena_printf(&ctx.arena, "%s/c.sqlite", dir), &cc));
	for (int i = 0; i < 6; i++)
		ASSERT(0, cost_cache_put(cc, &k[i], i + 1.0, NULL));
	for (int i = 0; i < 6; i++) {
		ASSERT(1, cost_cache_get(cc, &k[i], &s));
		ASSERT(i + 1, (long long)s);
	}
	ASSERT(6, count_rows(cc));
	cost_cache_close(cc);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

/* Rows put between begin and commit are invisible to others until commit. */
static void test_begin_commit_batch(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *path;
	struct cost_cache *w, *r;
	char name[32];
	double s;

	quiet_ctx(&ctx);
	path = arena_printf(&ctx.arena, "%s/costs.sqlite", dir);
	ASSERT(0, cost_cache_open(&ctx, path, &w));
	ASSERT(0, cost_cache_open(&ctx, path, &r));
	ASSERT(0, cost_cache_begin(w));
	ASSERT(0, cost_cache_begin(w));		/* nested: one transaction */
	for (int i = 0; i < 100; i++) {
		struct cost_key k;

		snprintf(name, sizeof(name), "row%d", i);
		k = key(name);
		ASSERT(0, cost_cache_put(w, &k, i * 1e-6, name));
	}
	ASSERT(0, cost_cache_commit(w));	/* inner: nothing yet */
	ASSERT(0, count_rows(r));
	{
		struct cost_key k = key("row7");

		ASSERT(1, cost_cache_get(w, &k, &s));	/* the writer sees its own rows */
		ASSERT(0, cost_cache_get(r, &k, &s));
	}
	ASSERT(0, cost_cache_commit(w));
	ASSERT(100, count_rows(r));
	/* a rolled-back batch leaves nothing */
	ASSERT(0, cost_cache_begin(w));
	{
		struct cost_key k = key("dropped");

		ASSERT(0, cost_cache_put(w, &k, 1, NULL));
		cost_cache_rollback(w);
		ASSERT(0, cost_cache_get(w, &k, &s));
	}
	ASSERT(100, count_rows(r));
	cost_cache_close(w);
	cost_cache_close(r);
	ASSERT(0, ctx.n_errors);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

static void test_clear(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	struct cost_cache *cc;
	struct cost_key a = key("a"), b = key("b");
	long n = -1;

	quiet_ctx(&ctx);
	b.version = "0.0.9";
	ASSERT(0, cost_cache_open(&ctx, arena_printf(&ctx.arena, "%s/c.sqlite", dir), &cc));
	ASSERT(0, cost_cache_put(cc, &a, 1, NULL));
	ASSERT(0, cost_cache_put(cc, &b, 2, NULL));
	ASSERT(0, cost_cache_clear(cc, 1, NULL, &n));	/* both are fresh */
	ASSERT(0, n);
	ASSERT(0, cost_cache_clear(cc, -1, "0.0.9", &n));
	ASSERT(1, n);
	ASSERT(1, count_rows(cc));
	ASSERT(0, cost_cache_clear(cc, -1, NULL, &n));
	ASSERT(1, n);
	ASSERT(0, count_rows(cc));
	cost_cache_close(cc);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

static void restore_env(const char *name, char *saved)
{
	if (saved) {
		setenv(name, saved, 1);
		free(saved);
	} else {
		unsetenv(name);
	}
}

static void test_default_path(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	char *xdg = getenv("XDG_CACHE_HOME") ? xstrdup(getenv("XDG_CACHE_HOME")) : NULL;
	char *home = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL;
	const char *want;
	struct cost_cache *cc;
	struct stat st;

	quiet_ctx(&ctx);
	setenv("XDG_CACHE_HOME", arena_printf(&ctx.arena, "%s/xdg/deeper", dir), 1);
	want = arena_printf(&ctx.arena, "%s/xdg/deeper/collagec/costs.sqlite", dir);
	ASSERT_STR(want, cost_cache_default_path(&ctx));
	ASSERT(0, cost_cache_open(&ctx, NULL, &cc));	/* mkdir -p */
	ASSERT_STR(want, cost_cache_path(cc));
	cost_cache_close(cc);
	ASSERT(0, stat(want, &st));
	ASSERT_TRUE(S_ISREG(st.st_mode));
	ASSERT(0, stat(arena_printf(&ctx.arena, "%s/xdg/deeper/collagec", dir), &st));
	ASSERT(0700, st.st_mode & 0777);

	/* an empty or relative XDG_CACHE_HOME is ignored: $HOME/.cache */
	setenv("HOME", arena_printf(&ctx.arena, "%s/home", dir), 1);
	want = arena_printf(&ctx.arena, "%s/home/.cache/collagec/costs.sqlite", dir);
	setenv("XDG_CACHE_HOME", "", 1);
	ASSERT_STR(want, cost_cache_default_path(&ctx));
	setenv("XDG_CACHE_HOME", "relative/dir", 1);
	ASSERT_STR(want, cost_cache_default_path(&ctx));
	unsetenv("XDG_CACHE_HOME");
	ASSERT_STR(want, cost_cache_default_path(&ctx));
	unsetenv("HOME");
	ASSERT_TRUE(cost_cache_default_path(&ctx) == NULL);
	ASSERT(-1, cost_cache_open(&ctx, NULL, &cc));
	ASSERT_TRUE(cc == NULL);
	ASSERT(STATUS_ENV, ctx.status);
	ASSERT_TRUE(strstr(sb_str(&diags), "neither XDG_CACHE_HOME nor HOME is set") != NULL);

	restore_env("XDG_CACHE_HOME", xdg);
	restore_env("HOME", home);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

/* A path under a regular file cannot be made, even by root. */
static void test_unwritable_path(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *file, *path;
	struct cost_cache *cc = (struct cost_cache *)&ctx;

	quiet_ctx(&ctx);
	file = arena_printf(&ctx.arena, "%s/afile", dir);
	ASSERT(0, file_write_atomic(file, "x", 1));
	path = arena_printf(&ctx.arena, "%s/sub/costs.sqlite", file);
	ASSERT(-1, cost_cache_open(&ctx, path, &cc));
	ASSERT_TRUE(cc == NULL);
	ASSERT(1, ctx.n_errors);
	ASSERT(STATUS_ENV, ctx.status);
	ASSERT_STR(arena_printf(&ctx.arena, "collagec: error: cannot open the cost cache '%s': "
				"cannot create its directory: Not a directory\n", path),
		   sb_str(&diags));

	/* a file that is not a database */
	sb_reset(&diags);
	path = arena_printf(&ctx.arena, "%s/garbage.sqlite", dir);
	ASSERT(0, file_write_atomic(path, "this is no database, not even a little bit; it is "
				    "just text that goes on for a while to fill the header",
				    100));
	ASSERT(-1, cost_cache_open(&ctx, path, &cc));
	ASSERT_TRUE(strstr(sb_str(&diags), arena_printf(&ctx.arena, "cannot open the cost "
							"cache '%s': file is not a database",
							path)) != NULL);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

static void test_newer_schema_refused(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *path;
	struct cost_cache *cc;
	sqlite3 *db;

	quiet_ctx(&ctx);
	path = arena_printf(&ctx.arena, "%s/costs.sqlite", dir);
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	cost_cache_close(cc);
	ASSERT(SQLITE_OK, sqlite3_open(path, &db));
	ASSERT(SQLITE_OK, sqlite3_exec(db, "UPDATE schema_version SET version = 99", NULL, NULL,
				       NULL));
	sqlite3_close(db);
	ASSERT(-1, cost_cache_open(&ctx, path, &cc));
	ASSERT(STATUS_ENV, ctx.status);
	ASSERT_STR(arena_printf(&ctx.arena, "collagec: error: cannot open the cost cache '%s': "
				"its schema version 99 is newer than this collagec's (%d); use a "
				"newer collagec or another cache file\n", path, COST_CACHE_SCHEMA),
		   sb_str(&diags));
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

/* a file of schema 1 (before meta) keeps its rows and gets the meta columns */
static void test_schema_1_upgraded(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *path;
	struct cost_cache *cc;
	struct cost_key k = key("old");
	struct cost_meta meta = { 1, "x", 7, "y" };
	double s = -1;
	sqlite3 *db;
	int version = 0;
	sqlite3_stmt *st;

	quiet_ctx(&ctx);
	path = arena_printf(&ctx.arena, "%s/costs.sqlite", dir);
	ASSERT(SQLITE_OK, sqlite3_open(path, &db));
	ASSERT(SQLITE_OK, sqlite3_exec(db, "CREATE TABLE schema_version(version INTEGER NOT NULL);"
				       "INSERT INTO schema_version VALUES(1);"
				       "CREATE TABLE costs(structure TEXT NOT NULL, target TEXT NOT "
				       "NULL, threads INTEGER NOT NULL, machine TEXT NOT NULL, version "
				       "TEXT NOT NULL, seconds REAL NOT NULL, label TEXT, created "
				       "INTEGER NOT NULL, PRIMARY KEY(structure, target, threads, "
				       "machine, version)) WITHOUT ROWID;"
				       "INSERT INTO costs VALUES('old', 'c', 1, 'TestCPU|avx2|2cpu', "
				       "'0.1.0', 0.25, 'l', 0);", NULL, NULL, NULL));
	sqlite3_close(db);
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	ASSERT(1, cost_cache_get_meta(cc, &k, &s, &meta));
	ASSERT_TRUE(s == 0.25 && isnan(meta.estimate) && !meta.cls && meta.charge_us == 0 &&
		    !meta.origin);
	meta = (struct cost_meta){ 2e-3, "c:Conv", 1500, "abc" };
	ASSERT(0, cost_cache_put_meta(cc, &k, 0.5, NULL, &meta));
	meta = (struct cost_meta){ 0 };
	ASSERT(1, cost_cache_get_meta(cc, &k, &s, &meta));
	ASSERT_TRUE(s == 0.5 && meta.estimate == 2e-3 && meta.charge_us == 1500);
	ASSERT_STR("c:Conv", meta.cls);
	ASSERT_STR("abc", meta.origin);
	cost_cache_close(cc);
	ASSERT(SQLITE_OK, sqlite3_open(path, &db));
	ASSERT(SQLITE_OK, sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &st,
					     NULL));
	ASSERT(SQLITE_ROW, sqlite3_step(st));
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	ASSERT(COST_CACHE_SCHEMA, version);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

static int n_samples;
static double sample_sum;

static int add_sample(const char *cls, double estimate, double seconds, void *arg)
{
	n_samples++;
	sample_sum += seconds / estimate;
	return 0;
}

/* samples: rows with an estimate and a class, of the key's machine, not of one origin */
static void test_samples(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	struct cost_cache *cc;
	struct cost_key k1 = key("s1"), k2 = key("s2"), k3 = key("s3"), k4 = key("s4");
	struct cost_meta a = { 1e-3, "c:Conv", 10, "me" }, b = { 1e-3, "c:Conv", 10, "other" };

	quiet_ctx(&ctx);
	ASSERT(0, cost_cache_open(&ctx, arena_printf(&ctx.arena, "%s/c.sqlite", dir), &cc));
	k4.machine = "OtherCPU|-|1cpu";
	ASSERT(0, cost_cache_put_meta(cc, &k1, 2e-3, NULL, &a));
	ASSERT(0, cost_cache_put_meta(cc, &k2, 4e-3, NULL, &b));
	ASSERT(0, cost_cache_put(cc, &k3, 8e-3, NULL));
	ASSERT(0, cost_cache_put_meta(cc, &k4, 8e-3, NULL, &b));
	n_samples = 0;
	sample_sum = 0;
	ASSERT(0, cost_cache_samples(cc, &k1, "me", add_sample, NULL));
	ASSERT(1, n_samples);
	ASSERT_TRUE(fabs(sample_sum - 4) < 1e-9);
	n_samples = 0;
	ASSERT(0, cost_cache_samples(cc, &k1, NULL, add_sample, NULL));
	ASSERT(2, n_samples);
	cost_cache_close(cc);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

/*
 * calibration: a class's ratio is learned, shrunk towards its target's;
 * an unseen target keeps the estimate with a wide interval; more and
 * tighter samples narrow it; the order of the samples does not matter
 */
static void test_calibration(void)
{
	struct calib *c = calib_new(), *d = calib_new();
	double f0, f1, f2, e;

	calib_fit(c);
	e = calib_apply(c, "blas:Gemm", 1e-3, &f0);
	ASSERT_TRUE(e == 1e-3 && f0 > 2);
	for (int i = 0; i < 8; i++)
		calib_add(c, "blas:Gemm", 1e-3, (i % 2 ? 3.9e-3 : 4.1e-3));
	for (int i = 7; i >= 0; i--)
		calib_add(d, "blas:Gemm", 1e-3, (i % 2 ? 3.9e-3 : 4.1e-3));
	calib_add(c, "blas:Gemm", -1, 1);	/* ignored */
	calib_add(c, "blas:Gemm", 1, INFINITY);	/* ignored */
	calib_fit(c);
	calib_fit(d);
	e = calib_apply(c, "blas:Gemm", 2e-3, &f1);
	ASSERT_TRUE(e > 7.5e-3 && e < 8.5e-3 && f1 < f0);
	ASSERT_TRUE(calib_apply(d, "blas:Gemm", 2e-3, &f2) == e && f2 == f1);
	/* another op of blas: the target's ratio, less sure */
	e = calib_apply(c, "blas:Add", 1e-3, &f2);
	ASSERT_TRUE(e > 3e-3 && e < 4.5e-3 && f2 > f1);
	/* another target: as estimated */
	ASSERT_TRUE(calib_apply(c, "c:Gemm", 1e-3, &f2) == 1e-3 && f2 == f0);
	calib_free(c);
	calib_free(d);
}

/* cost_key_make: the key every lookup and store of collagec uses */
static void test_key_make(void)
{
	struct collagec_ctx ctx;
	struct cost_key k;

	quiet_ctx(&ctx);
	k = cost_key_make(&ctx, "abc", "blas", 4, "x86-64-v3");
	ASSERT_STR("abc", k.structure);
	ASSERT_STR("blas", k.target);
	ASSERT(4, k.threads);
	ASSERT_STR(cost_machine_fingerprint(&ctx, "x86-64-v3"), k.machine);
	ASSERT_STR(collagec_codegen_id, k.version);
	/* no thread count is measured as one thread */
	ASSERT(1, cost_key_make(&ctx, "abc", "c", 0, NULL).threads);
	ASSERT_STR(cost_machine_fingerprint(&ctx, "native"),
		   cost_key_make(&ctx, "abc", "c", 1, NULL).machine);
	ctx_release(&ctx);
}

static void test_machine_fingerprint(void)
{
	struct collagec_ctx ctx;
	const char *a, *b, *bar1, *bar2;
	char want[32];

	quiet_ctx(&ctx);
	a = cost_machine_fingerprint(&ctx, "x86-64-v3");
	b = cost_machine_fingerprint(&ctx, "x86-64-v3");
	ASSERT_STR(a, b);
	/* one fingerprint per --cpu level: their costs are never shared */
	ASSERT_TRUE(strcmp(a, cost_machine_fingerprint(&ctx, "generic")) != 0);
	ASSERT_STR(cost_machine_fingerprint(&ctx, NULL), cost_machine_fingerprint(&ctx, "native"));
	bar1 = strchr(a, '|');
	ASSERT_TRUE(bar1 && bar1 > a);
	bar2 = strchr(bar1 + 1, '|');
	ASSERT_TRUE(bar2 && bar2 > bar1 + 1 && strchr(bar2 + 1, '|'));
	snprintf(want, sizeof(want), "|%ldcpu|cpu=x86-64-v3", sysconf(_SC_NPROCESSORS_ONLN));
	ASSERT_STR(want, bar2);
	/* the flags are sorted, no duplicates, no spaces */
	{
		char *flags = arena_strndup(&ctx.arena, bar1 + 1, (size_t)(bar2 - bar1 - 1));
		const char *prev = "";

		ASSERT_TRUE(!strchr(flags, ' '));
		for (char *f = strtok(flags, ","); f; f = strtok(NULL, ",")) {
			ASSERT_TRUE(strcmp(prev, f) < 0);
			prev = f;
		}
	}
	ctx_release(&ctx);
}

/* ---- eight processes at once ---- */

enum { N_PROCS = 8, N_ROWS = 300, BATCH = 50, SHARE_EVERY = 6 };

/*
 * Row i of process p. Every SHARE_EVERY-th row has the same key in every
 * process, and a value that depends on the key only, so whoever writes last
 * the row is right; the others are the process's own.
 */
static struct cost_key row_key(int p, int i, char *buf, size_t n, double *seconds)
{
	struct cost_key k = key(buf);

	if (i % SHARE_EVERY == 0) {
		snprintf(buf, n, "shared-%d", i);
		*seconds = i % (2 * SHARE_EVERY) == 0 ? INFINITY : i * 1e-3;
	} else {
		snprintf(buf, n, "p%d-%d", p, i);
		*seconds = p * 1000.0 + i * 0.125;
	}
	k.target = i % 2 ? "blas" : "c";
	k.threads = 1 + i % 4;
	return k;
}

/* A child: waits for the start signal, opens, writes its rows; the exit status says. */
static int child_write(const char *path, int p, int start_fd)
{
	struct collagec_ctx ctx;
	struct cost_cache *cc;
	char c, buf[64], label[96];

	if (read(start_fd, &c, 1) < 0)
		return 10;
	ctx_init(&ctx);
	if (cost_cache_open(&ctx, path, &cc) < 0)
		return 11;
	for (int b = 0; b < N_ROWS / BATCH; b++) {
		if (cost_cache_begin(cc) < 0)
			return 12;
		for (int i = b * BATCH; i < (b + 1) * BATCH; i++) {
			double s;
			struct cost_key k = row_key(p, i, buf, sizeof(buf), &s);

			snprintf(label, sizeof(label), "label of %s", buf);
			if (cost_cache_put(cc, &k, s, label) < 0)
				return 13;
		}
		if (cost_cache_commit(cc) < 0)
			return 14;
	}
	cost_cache_close(cc);
	ctx_release(&ctx);
	return 0;
}

static int check_row_label(const struct cost_row *r, void *arg)
{
	char want[96];

	snprintf(want, sizeof(want), "label of %s", r->key.structure);
	if (!r->label || strcmp(r->label, want))
		(*(int *)arg)++;
	return 0;
}

static void test_concurrent_processes(void)
{
	struct collagec_ctx ctx;
	char *dir = dir_make_temp("unit-cost");
	const char *path;
	struct cost_cache *cc;
	struct strbuf check = STRBUF_INIT;
	pid_t pid[N_PROCS];
	int fds[2], bad_labels = 0;

	quiet_ctx(&ctx);
	/* a fresh file: the children race to create it too */
	path = arena_printf(&ctx.arena, "%s/shared/costs.sqlite", dir);
	ASSERT(0, pipe(fds));
	fflush(stdout);
	fflush(stderr);
	for (int p = 0; p < N_PROCS; p++) {
		pid[p] = fork();
		ASSERT_TRUE(pid[p] >= 0);
		if (pid[p] == 0) {
			close(fds[1]);
			_exit(child_write(path, p, fds[0]));
		}
	}
	close(fds[0]);
	close(fds[1]);		/* EOF: every child starts at once */
	for (int p = 0; p < N_PROCS; p++) {
		int status = -1;

		ASSERT(pid[p], waitpid(pid[p], &status, 0));
		ASSERT(1, WIFEXITED(status));
		ASSERT(0, WEXITSTATUS(status));
	}
	ASSERT(0, cost_cache_open(&ctx, path, &cc));
	ASSERT(N_ROWS / SHARE_EVERY + N_PROCS * (N_ROWS - N_ROWS / SHARE_EVERY), count_rows(cc));
	for (int p = 0; p < N_PROCS; p++) {
		for (int i = 0; i < N_ROWS; i++) {
			char buf[64];
			double want, got = NAN;
			struct cost_key k = row_key(p, i, buf, sizeof(buf), &want);

			ASSERT(1, cost_cache_get(cc, &k, &got));
			ASSERT_TRUE(got == want);
		}
	}
	ASSERT(0, cost_cache_foreach(cc, check_row_label, &bad_labels));
	ASSERT(0, bad_labels);
	ASSERT(0, cost_cache_check(cc, &check));
	ASSERT_STR("ok", sb_str(&check));
	sb_release(&check);
	cost_cache_close(cc);
	ASSERT(0, ctx.n_errors);
	ctx_release(&ctx);
	dir_remove_tree(dir);
	free(dir);
}

TESTS({ "get_put_replace", test_get_put_replace },
      { "infinity_round_trip", test_infinity_round_trip },
      { "key_fields_distinguish", test_key_fields_distinguish },
      { "begin_commit_batch", test_begin_commit_batch },
      { "clear", test_clear },
      { "default_path", test_default_path },
      { "unwritable_path", test_unwritable_path },
      { "newer_schema_refused", test_newer_schema_refused },
      { "schema_1_upgraded", test_schema_1_upgraded },
      { "samples", test_samples },
      { "calibration", test_calibration },
      { "key_make", test_key_make },
      { "machine_fingerprint", test_machine_fingerprint },
      { "concurrent_processes", test_concurrent_processes })
