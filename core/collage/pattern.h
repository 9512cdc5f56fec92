/*
 * pattern.h - the pattern language of partition rules: text tables
 * (patterns/NAME.pat, --patterns FILE) parsed at start-up into trees, matched
 * against the graph rooted at one node.
 *
 * A file is a list of lines:
 *
 *	target blas                        # the rules below are blas's
 *	clear                              # (forget blas's rules so far)
 *	let mm = MatMul(*, *) | Gemm(*, *, const?)
 *	dense_bias_act = {Relu|Sigmoid}(Add($mm, const))
 *	conv = Conv(*, const, const?)[group == 1, dtype == float32]
 *
 * Patterns: `*` any value (it stays outside the match), `const` a constant
 * (weights), a number a constant scalar of that value, `Op(args)` a node of
 * that op whose inputs match args in order (`{A|B}(...)` one of several
 * ops; `p?` an optional input that may be absent; a last `...` any further
 * inputs), `p | q` the first alternative that matches, `$name` a let, and
 * `[attr OP literal, ...]` attribute predicates (OP one of == != < <= > >=;
 * literals: numbers, "strings", [lists], dtype names for the pseudo
 * attribute `dtype` of the node's first output). An attribute the node does
 * not carry compares as its ONNX default (core/ops/attrs.def); without one
 * the predicate is false.
 *
 * Errors are reported as "FILE:LINE:COL: message" with the line and a caret
 * under the column, status 2 (STATUS_USAGE).
 *
 *	struct pattern_set set = { 0 };
 *	if (pattern_parse(ctx, "my.pat", text, kinds, n, &set) < 0) ...
 *	struct pattern_match m;
 *	if (pattern_match(g, &uses, set.rules.v[0].root, node, &m)) ...
 *	pattern_set_release(&set);
 */
#ifndef COLLAGEC_PATTERN_H
#define COLLAGEC_PATTERN_H

#include "../target/target.h"

#define PATTERN_MAX_NODES 32

struct pat;

struct pattern_rule {
	const char *name;		/* "dense_bias_act" (arena) */
	const char *target;		/* target kind name */
	const char *file;		/* where it was defined */
	int line;
	const char *text;		/* the pattern as written, blanks squeezed */
	const struct pat *root;
};

struct pattern_set {
	VEC(struct pattern_rule) rules;	/* in definition order */
};

/*
 * Parses one pattern file (text NUL-terminated) into set, appending. Target
 * names are checked against kinds. 0, or -1 after diagnostics.
 */
int pattern_parse(struct collagec_ctx *ctx, const char *file, const char *text,
		  const struct target_kind *const *kinds, int n_kinds, struct pattern_set *set);
void pattern_set_release(struct pattern_set *set);
/*
 * The built-in tables of kinds (kind->patterns, embedded in collagec from
 * patterns/), then the user's files. 0, or -1 after diagnostics (status 2
 * for a bad or unreadable user file).
 */
int pattern_load(struct collagec_ctx *ctx, const struct target_kind *const *kinds, int n_kinds,
		 const char *const *files, int n_files, struct pattern_set *set);

/* How many nodes read each value (graph outputs count as one more reader). */
struct pattern_uses {
	int *n;				/* per value id (owned) */
};

void pattern_uses_init(struct graph *g, struct pattern_uses *u);
void pattern_uses_release(struct pattern_uses *u);

/* A match: its nodes in graph (topological) order; the root is the last. */
struct pattern_match {
	int n_nodes;
	int nodes[PATTERN_MAX_NODES];
};

/*
 * Matches p at node's first output. A match must have one exit: every node
 * but the root is read only by nodes of the match and is no graph output.
 */
bool pattern_match(struct graph *g, const struct pattern_uses *u, const struct pat *p, int node,
		   struct pattern_match *m);

#endif
