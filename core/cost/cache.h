/*
 * cache.h - the persistent cost cache (SQLite): measured seconds of a
 * candidate partition, keyed by what decides them. Several collagec
 * processes share one cache file safely (WAL journal, busy timeout, one
 * transaction per batch of rows).
 *
 *	struct cost_cache *cc;
 *	if (cost_cache_open(ctx, NULL, &cc) < 0) ...	// default path
 *	struct cost_key k = cost_key_make(ctx, hash, "blas", 1, NULL);
 *	if (cost_cache_get(cc, &k, &sec) == 0) { sec = measure(); cost_cache_put(cc, &k, sec, "Conv+Relu"); }
 *	cost_cache_close(cc);
 *
 * A cache holds its ctx for diagnostics: the ctx must outlive it. A cache
 * is not thread-safe and must not cross fork(): open one per thread or
 * process (a measuring child opens its own, or leaves the writing to the
 * parent).
 */
#ifndef COLLAGEC_COST_CACHE_H
#define COLLAGEC_COST_CACHE_H

#include <string.h>

#include "../ctx.h"
#include "cost.h"

struct cost_cache;

/* The schema this collagec writes; a file with a newer one is refused. */
#define COST_CACHE_SCHEMA 2

/* What a measured cost depends on; every field is part of the key. */
struct cost_key {
	const char *structure;	/* hex hash of the candidate (ops, attrs, shapes, dtypes) */
	const char *target;	/* canonical target string ("c", "blas", "opencl") */
	int threads;		/* the thread count it was measured with */
	const char *machine;	/* cost_machine_fingerprint() */
	const char *version;	/* collagec_codegen_id: version + sources' hash */
};

/*
 * The key of a cost this collagec measures on this machine: structure and
 * target as given (borrowed), threads (below 1 counts as 1), the machine
 * fingerprint for the --cpu level cpu (NULL = native) and
 * collagec_codegen_id. Every key collagec looks up or stores is made here.
 */
struct cost_key cost_key_make(struct collagec_ctx *ctx, const char *structure,
			      const char *target, int threads, const char *cpu);

/*
 * The default cache file: $XDG_CACHE_HOME/collagec/costs.sqlite, else
 * $HOME/.cache/collagec/costs.sqlite (arena string); NULL when neither
 * variable is set.
 */
const char *cost_cache_default_path(struct collagec_ctx *ctx);

/*
 * Opens (creating it and its directory when missing) the cache at path, or
 * the default path when path is NULL. 0, or -1 after a STATUS_ENV
 * diagnostic naming the file. *out is owned: cost_cache_close() frees it.
 */
int cost_cache_open(struct collagec_ctx *ctx, const char *path, struct cost_cache **out);
void cost_cache_close(struct cost_cache *c);

/*
 * Looks a key up: 1 and *seconds when found (+INFINITY is a stored value:
 * "cannot build or run"), 0 when absent, -1 after a diagnostic.
 */
int cost_cache_get(struct cost_cache *c, const struct cost_key *k, double *seconds);

/*
 * What a row says besides its cost: how the measurement relates to the
 * estimate the search made before it, and what measuring it cost.
 */
struct cost_meta {
	double estimate;	/* the analytic estimate, seconds; NAN when none */
	const char *cls;	/* calibration class ("c:Conv"), or NULL */
	int64_t charge_us;	/* microseconds of measuring, charged to a budget */
	const char *origin;	/* the search that measured it (its hex id), or NULL */
};

/*
 * Charges e (cost.h: origin) what measuring a row it found cost, when its
 * own search measured that row: a recompile is charged as the first compile.
 */
static inline void cost_charge_hit(struct cost_estimator *e, const struct cost_meta *meta)
{
	if (e->origin && meta->origin && !strcmp(meta->origin, e->origin))
		e->charged_us += meta->charge_us;
}

/* cost_cache_get, and the row's meta (strings in ctx's arena) when meta is not NULL. */
int cost_cache_get_meta(struct cost_cache *c, const struct cost_key *k, double *seconds,
			struct cost_meta *meta);

/*
 * Every row of like's threads, machine and version with an estimate and a
 * class, but those measured by search origin, in key order: fn(cls,
 * estimate, seconds, arg) returns 0 to go on. 0, fn's non-zero, or -1.
 */
int cost_cache_samples(struct cost_cache *c, const struct cost_key *like, const char *origin,
		       int (*fn)(const char *cls, double estimate, double seconds, void *),
		       void *arg);

/*
 * Stores (or replaces) a row; label is a human description for `cache
 * export` ("Conv+Relu 1x64x56x56"), may be NULL. Between cost_cache_begin()
 * and cost_cache_commit() rows go into one transaction. 0 or -1.
 */
int cost_cache_put(struct cost_cache *c, const struct cost_key *k, double seconds,
		   const char *label);
/* cost_cache_put with the row's meta (may be NULL: none). */
int cost_cache_put_meta(struct cost_cache *c, const struct cost_key *k, double seconds,
			const char *label, const struct cost_meta *meta);
int cost_cache_begin(struct cost_cache *c);
int cost_cache_commit(struct cost_cache *c);

/*
 * Transactions nest: only the outermost cost_cache_commit() commits. A write
 * transaction takes the file's write lock at cost_cache_begin() (waiting for
 * other processes up to 10 s), so it never fails half-way on a lock.
 * cost_cache_rollback() drops every row put since the outermost begin.
 */
void cost_cache_rollback(struct cost_cache *c);

/* The file of an open cache (borrowed from it). */
const char *cost_cache_path(const struct cost_cache *c);

/* One stored row, as cost_cache_foreach() hands it out. */
struct cost_row {
	struct cost_key key;	/* strings borrowed for the callback only */
	double seconds;		/* +INFINITY: cannot build or run */
	const char *label;	/* or NULL */
	int64_t created;	/* unix time of the put */
};

/*
 * Calls fn for every row in key order (structure, target, threads, machine,
 * version). fn returns 0 to go on, non-zero to stop: that value is
 * returned. 0 after the last row, -1 after a diagnostic.
 */
int cost_cache_foreach(struct cost_cache *c, int (*fn)(const struct cost_row *, void *),
		       void *arg);

/*
 * Deletes the rows created more than older_than_days ago (every age when it
 * is < 0) of collagec version version (every version when NULL); *deleted
 * (may be NULL) counts them. 0 or -1.
 */
int cost_cache_clear(struct cost_cache *c, double older_than_days, const char *version,
		     long *deleted);

/* Appends SQLite's PRAGMA integrity_check answer ("ok" when sound). 0 or -1. */
int cost_cache_check(struct cost_cache *c, struct strbuf *result);

/*
 * This machine, for the key: CPU model name, the ISA flags that decide code
 * speed (sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512_vnni amx...),
 * the online core count and the --cpu level the code is built for (NULL:
 * COLLAGEC_DEFAULT_CPU), as one printable string (arena):
 * "MODEL|FLAG,FLAG...|Ncpu|cpu=LEVEL" with the flags sorted, "-" for none.
 * Costs measured for one ISA level are never reused for another.
 */
const char *cost_machine_fingerprint(struct collagec_ctx *ctx, const char *cpu);

#endif
