/*
 * collage.h - partitioning: which nodes run on which target, as a list of
 * partitions in an order the executor can run them in.
 *
 *	struct partition *parts; int np;
 *	if (collage_place_none(g, targets, nt, &patterns, &parts, &np) < 0) ...
 */
#ifndef COLLAGEC_COLLAGE_H
#define COLLAGEC_COLLAGE_H

#include "pattern.h"

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
