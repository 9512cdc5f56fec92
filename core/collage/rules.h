/*
 * rules.h - partition rules (Collage phase 1 and 2): trees that, run over a
 * dataflow graph for one target, give the candidate sub-graphs of that
 * target. Leaves make candidates (the matches of one pattern rule, or each
 * node the kind's supports hook accepts); inner rules transform them
 * (union, combine by FuseOps-like combiners up to a depth, keep only valid).
 *
 * Each kind's default tree (rule_default):
 *   kind with pattern rules   OnlyValid{1 exit, no taps, depth D}(Union(Pattern...))
 *   any other kind            OnlyValid{1 exit, no taps, depth D}(
 *                               Combine[A->B, B->R, I->I](Supported))
 * A kind with both also gets the supported singletons next to its patterns.
 *
 *	struct partition_rule *r = rule_default(arena, kind, &patterns, 4);
 *	struct rule_candidates out = { 0 };
 *	rule_run(r, &df, target, &uses, &out);	// out.v[i].sg, out.v[i].rule
 *	vec_free(&out);
 */
#ifndef COLLAGEC_RULES_H
#define COLLAGEC_RULES_H

#include "pattern.h"
#include "subgraph.h"

enum rule_kind {
	RULE_PATTERN,		/* the matches of one pattern rule */
	RULE_SUPPORTED,		/* every node the kind's supports hook accepts, alone */
	RULE_UNION,		/* the candidates of every sub-rule */
	RULE_COMBINE,		/* sub-rule's candidates and unions of touching ones */
	RULE_ONLY_VALID,	/* sub-rule's candidates valid under cfg */
	RULE_KIND_COUNT
};

/*
 * Combines touching candidates u (upstream) and d when u's kind <= up and
 * d's kind <= down: "A->B" puts elementwise/broadcast ops after an anchor,
 * "B->R" elementwise ops before a reduction, "I->I" injective chains.
 */
struct combiner {
	const char *name;
	enum op_kind up, down;
};

struct partition_rule {
	enum rule_kind kind;
	const char *name;
	const struct pattern_rule *pattern;	/* RULE_PATTERN */
	struct partition_rule **subs;		/* UNION, COMBINE, ONLY_VALID */
	int n_subs;
	const struct combiner *combiners;	/* COMBINE */
	int n_combiners;
	int max_depth;				/* COMBINE: 0 = no limit */
	struct subgraph_config cfg;		/* ONLY_VALID */
};

struct rule_candidate {
	struct subgraph *sg;
	const char *rule;		/* "blas.conv_act", "c.op", "c.fused" */
};

struct rule_candidates {
	VEC(struct rule_candidate);
};

/* The FuseOps-like combiners: A->B, B->R, I->I. */
extern const struct combiner rule_fuseops_combiners[3];

struct partition_rule *rule_pattern(struct arena *a, const struct pattern_rule *p);
struct partition_rule *rule_supported(struct arena *a, const char *name);
struct partition_rule *rule_union(struct arena *a, struct partition_rule **subs, int n);
struct partition_rule *rule_combine(struct arena *a, struct partition_rule *sub,
				    const struct combiner *cs, int n, int max_depth);
struct partition_rule *rule_only_valid(struct arena *a, struct partition_rule *sub,
				       struct subgraph_config cfg);
/* The default tree of kind (see above); arena. */
struct partition_rule *rule_default(struct arena *a, const struct target_kind *kind,
				    const struct pattern_set *ps, int max_depth);

/*
 * Runs rule over df for target t, appending candidates (sub-graphs in df's
 * arena); duplicates (same inside set) are dropped, the first one kept.
 */
void rule_run(const struct partition_rule *r, const struct dataflow *df, const struct target *t,
	      const struct pattern_uses *u, struct rule_candidates *out);

/* The tree as text: "OnlyValid{exits=1,depth=4}(Combine[A->B,B->R,I->I](Supported))". */
const char *rule_str(struct arena *a, const struct partition_rule *r);

/* Rule names a partition's label shows before "+N more". */
#define RULE_LABEL_NAMES 3

/*
 * The rule label of a partition phase 4 merged from candidates of several
 * rules: the first RULE_LABEL_NAMES of names (distinct, in the order the
 * merges met them) joined by '+', then "+N more" for the other n - 3 and
 * for more (names a label already left out), so a label stays short
 * however many candidates merged: "c.fused+c.op", "a+b+c+2 more" (arena).
 */
const char *rule_label(struct arena *a, const char *const *names, int n, int more);

/*
 * label bounded as rule_label() bounds it, for labels read back (OUT.json
 * of any collagec): its '+'-separated names, each once, the count of a
 * trailing "N more" carried over. A bounded label comes back unchanged
 * (arena).
 */
const char *rule_label_bound(struct arena *a, const char *label);

#endif
