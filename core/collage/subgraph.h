/*
 * subgraph.h - the dataflow graph of the live nodes (topological indices,
 * edges, what is downstream of what) and sub-graphs of it: the inside set
 * plus what follows from it (entries, exits, inputs, outputs, depth, kind,
 * label), validity (max exits, taps, max depth, convexity), touching and
 * disjoint union. Collage's candidates are sub-graphs placed on a target.
 *
 * Index i of the dataflow graph is the i-th live node of g->nodes, which is
 * in topological order, so every edge goes from a lower to a higher index.
 * Graph inputs and constants are not nodes: a value that is neither is made
 * by exactly one node. A node is external when it makes a graph output.
 *
 *	struct dataflow df;
 *	dataflow_init(&df, g, arena);
 *	struct indexset in = indexset_new(arena, df.n); indexset_add(&in, 3);
 *	struct subgraph *sg = subgraph_new(&df, &in);
 *	if (subgraph_valid(&df, sg, &(struct subgraph_config){ 1, false, 4 })) ...
 */
#ifndef COLLAGEC_SUBGRAPH_H
#define COLLAGEC_SUBGRAPH_H

#include "../ops/ops.h"
#include "indexset.h"

struct dataflow {
	struct graph *g;
	struct arena *arena;
	int n;				/* live nodes */
	int *node;			/* index -> g->nodes id */
	int *index;			/* g->nodes id -> index; -1 for dead nodes */
	int **in, *n_in;		/* per index: distinct producer indices */
	int **out, *n_out;		/* per index: distinct consumer indices */
	bool *external;			/* makes a graph output */
	enum op_kind *kind;		/* the op's pattern kind */
	bool *dynamic;			/* has a run-time shape function (node_is_dynamic) */
	struct indexset *down;		/* per index: reachable along edges (not itself) */
	size_t const_bytes;		/* g's constants of static shape, in bytes */
};

/* Builds the dataflow graph of g's live nodes in arena. */
void dataflow_init(struct dataflow *df, struct graph *g, struct arena *a);

struct subgraph_config {
	int max_exits;			/* 0 = no limit */
	bool allow_taps;		/* may an exit also feed an inside node? */
	int max_depth;			/* longest inside path in nodes; 0 = no limit */
};

/* A labelled part of a sub-graph: what one pattern rule matched. */
struct nested_subgraph {
	struct indexset inside;
	const char *label;		/* the rule ("blas.conv_act") */
};

struct subgraph {
	struct indexset inside;		/* the identity */
	struct indexset entry;		/* inside, with an input made outside or a graph input */
	struct indexset exit;		/* inside, read outside or external */
	struct indexset input;		/* outside, feeding an inside node */
	struct indexset output;		/* outside, reading an inside node */
	int first, last;		/* lowest and highest inside index */
	int depth;			/* nodes on the longest inside path */
	enum op_kind kind;		/* the largest kind inside */
	const char *label;		/* op names joined by '+', in index order */
	int n_nested;
	struct nested_subgraph *nested;	/* disjoint, each a subset of inside */
};

/* Derives everything from inside (arena). */
struct subgraph *subgraph_new(const struct dataflow *df, const struct indexset *inside);
/* Same, carrying nested parts. */
struct subgraph *subgraph_new_nested(const struct dataflow *df, const struct indexset *inside,
				     const struct nested_subgraph *nested, int n_nested);
bool subgraph_valid(const struct dataflow *df, const struct subgraph *sg,
		    const struct subgraph_config *cfg);
/*
 * Is a directly upstream of b, with no path from one to the other through
 * a node of neither (so their union has no cycle through the outside)?
 */
bool subgraph_touching(const struct dataflow *df, const struct subgraph *a,
		       const struct subgraph *b);
/* The union of two disjoint sub-graphs (nested parts concatenated). */
struct subgraph *subgraph_union(const struct dataflow *df, const struct subgraph *a,
				const struct subgraph *b);

#endif
