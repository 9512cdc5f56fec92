/*
 * collage.h - partitioning: which nodes run on which target, as a list of
 * partitions in an order the executor can run them in.
 *
 * Three searches:
 *  - collage (the default): Collage's measured-cost search. Phase 1 gives
 *    each target its partition rule (rules.h), phase 2 runs them into
 *    candidates, phase 3 finds the cover of least total cost by Dijkstra
 *    over covered node sets, phase 4 merges touching partitions of one
 *    target and orders the partitions. Phase 5 (measuring estimator only)
 *    builds the cover and the baseline placements (greedy, none over the
 *    list and over each target with c) as whole models, times them end to
 *    end and keeps the fastest: the sum of separately measured candidates
 *    misses what runs between them (caches, layouts, threads), and Collage
 *    must never lose to a plan the user could have asked for.
 *  - greedy: each target in list order takes its largest candidates that
 *    are still free (ONNX Runtime's placement), the rest goes on.
 *  - none: each target in list order takes what its pattern rules and its
 *    supports hook give it, one match or node at a time (none.c).
 *
 *	struct collage_options o = { .search = "collage", .max_depth = 4, .estimator = e };
 *	struct partition *parts; int np; struct collage_stats st;
 *	if (collage_partition(g, targets, nt, &patterns, &o, &parts, &np, &st) < 0) ...
 */
#ifndef COLLAGEC_COLLAGE_H
#define COLLAGEC_COLLAGE_H

#include "../cost/cache.h"
#include "../cost/cost.h"
#include "pattern.h"
#include "rules.h"

/*
 * Seconds of measuring when --search-budget is not given: the cold default
 * compile of the benchmark's models (make bench-search) stays within
 * max(3 x their --search none compile, 30 s) on 2 cores.
 */
#define COLLAGE_DEFAULT_BUDGET 20.0

/* Depth of the combined candidates when --max-depth is not given. */
#define COLLAGE_DEFAULT_MAX_DEPTH 4

struct collage_options {
	const char *search;		/* "collage" or "greedy" */
	int max_depth;			/* longest node chain in a candidate (0 = no limit) */
	struct cost_estimator *estimator;	/* collage: required */
	/*
	 * (optional) a cheap estimator (analytic) for estimate-first search:
	 * every candidate gets its calibrated estimate and an interval, and
	 * only those that can change the cover are handed to estimator
	 */
	struct cost_estimator *guess;
	double budget;			/* with guess: seconds of measuring; 0 = no limit */
	int jobs;			/* with guess: C compiler jobs (a round's size) */
	struct cost_cache *cache;	/* (optional) measured costs */
	int threads;			/* what costs are measured with (the cache key) */
	const char *dump_dir;		/* (optional) writes NN-candidates.txt there */
	/* (optional) per target, its rule; NULL (or a NULL entry): rule_default() */
	struct partition_rule *const *rules;
	const char *cpu;		/* (optional) --cpu level, in the cache key; NULL = native */
	/* (collage) phase 5: time the cover and the baselines end to end */
	bool check_plans;
	const struct pattern_set *patterns;	/* phase 5's none placements; NULL: none */
};

/*
 * One whole placement phase 5 timed end to end: the Collage cover, greedy
 * placement over the list, the none placement over the list and over each
 * target with c.
 */
struct collage_plan {
	const char *name;		/* "collage", "greedy", "none:blas,c" */
	int n_partitions;
	double cost;			/* seconds, +inf when it failed, NAN: not timed */
	double estimate;		/* the sum of its parts (estimate first), or NAN */
	const char *same_as;		/* an earlier plan with these partitions, or NULL */
	bool cached;			/* cost from the cost cache (--stats, not OUT.json) */
	bool chosen;
};

/* One candidate as OUT.json's search section lists it. */
struct collage_candidate {
	const char *target;		/* target string */
	const char *rule;
	int n_nodes;
	const int *nodes;		/* g->nodes ids, topological order */
	double cost;			/* seconds, +inf, NAN (greedy) */
	bool cached;			/* cost from the cost cache (--stats, not OUT.json) */
	bool measured;			/* cost measured (now or before), not estimated */
	bool chosen;			/* part of the cover (before phase 4 merges) */
};

/*
 * What the search did. Only what the decisions depend on (the model, the
 * options and the costs) goes into OUT.json; estimated, cache_hits, the
 * seconds and the cached flags depend on the state of the cost cache and
 * on timing, and go to --stats and -v only, so a warm recompile gives the
 * bytes of the cold one.
 */
struct collage_stats {
	int candidates;			/* made by the rules, all targets */
	int unique;			/* structurally distinct ones */
	int estimated;			/* handed to the estimator */
	int cache_hits;			/* found in the cost cache */
	/* estimate-first (o->guess): what the decisions used */
	int measured;			/* distinct candidates with a measured cost */
	int guessed;			/* distinct candidates left at their estimate */
	int rounds;			/* rounds of measuring */
	bool budget_hit;		/* the budget ended the search before it settled */
	double budget_spent;		/* seconds charged to the budget */
	int plans_skipped;		/* phase 5: plans their estimates ruled out */
	int states;			/* search states popped */
	bool untagged;			/* the states outgrew transitions (DIJKSTRA_TAGGED) */
	double seconds;			/* the whole partitioning */
	double measure_seconds;		/* of which estimating (building and timing) */
	double total_cost;		/* the chosen cover's estimated seconds */
	int n_list;
	struct collage_candidate *list;	/* every candidate (arena) */
	int n_plans;			/* phase 5; 0 when it did not run */
	struct collage_plan *plans;	/* (arena) */
	const char *plan;		/* what was built: "collage" unless phase 5 chose */
	double plan_cost;		/* its measured seconds (NAN without phase 5) */
};

/*
 * The collage or greedy search. Partitions (arena) come out in an order in
 * which each one's inputs are made by earlier ones, with est_cost set (NAN
 * for greedy). 0, or -1 after diagnostics (every node no target supports is
 * reported).
 */
int collage_partition(struct graph *g, struct target **ts, int nt,
		      const struct pattern_set *patterns, const struct collage_options *o,
		      struct partition **out, int *n_out, struct collage_stats *st);

/*
 * The "none" search (no costs): each target of the list, in order, takes
 * what its rules give it. First its pattern rules (patterns with the
 * target's kind name, in definition order; each node from the last to the
 * first is tried as a root, and a match whose nodes are all still free and
 * that the kind's pattern_check accepts becomes one partition), then, one
 * node at a time, what its supports hook accepts (every op for a kind with
 * neither supports nor patterns). Nodes no target takes are all reported.
 * Partitions come out in graph order of their roots. 0, or -1 after
 * diagnostics.
 */
int collage_place_none(struct graph *g, struct target **ts, int nt,
		       const struct pattern_set *patterns, struct partition **out, int *n_out);

#endif
