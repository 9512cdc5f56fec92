/*
 * strategy.h - op strategies: for an (op, target kind) a list of
 * specializations, each a condition over the node's shapes and attributes
 * with implementations ranked by priority (plevel).
 *
 * With static shapes every condition folds to true or false at compile time
 * and the node gets the best implementation of the first specialization
 * whose condition holds. When a condition depends on a symbolic dim, the
 * kernel gets one variant per specialization that can still hold, ending
 * with the first that always holds, and the target prints a dispatcher that
 * tests the conditions at run time in order (struct kernel_variant).
 * Implementations may ask for scratch buffers (lower_scratch in ops.h): the
 * variants share them, and they become kernel->scratch values that the
 * memory plan places for the kernel's step alone.
 *
 *	static const struct strategy_impl small[] = { { "matmul.ikj", 10, lower_ikj } };
 *	static const struct strategy_spec specs[] = {
 *		{ "M < 16", cond_small_m, small, 1 },
 *		{ "always", NULL, generic, 1 },
 *	};
 *	const struct op_strategy matmul = { OP_MATMUL, specs, 2 };
 */
#ifndef COLLAGEC_STRATEGY_H
#define COLLAGEC_STRATEGY_H

#include "../ops/ops.h"
#include "target.h"

struct strategy_impl {
	const char *name;		/* "matmul.ikj" */
	int plevel;			/* the higher, the more preferred */
	op_lower_fn lower;		/* emits the loop IR, as an op's lowering does */
};

struct strategy_spec {
	const char *cond_text;		/* for metadata and dumps */
	/* (optional) the condition as a boolean loop-IR expression; NULL = always */
	struct tir *(*cond)(struct lower *L);
	const struct strategy_impl *impls;
	int n_impls;
};

struct op_strategy {
	enum op op;
	const struct strategy_spec *specs;
	int n_specs;
};

/* A condition decided at compile time (static shapes and attributes). */
struct tir *strategy_static(struct lower *L, bool v);
/* x && y, folded when either half is decided at compile time. */
struct tir *strategy_and(struct lower *L, struct tir *x, struct tir *y);

/* The strategy of op on a target kind, or NULL (then the op's own lowering). */
const struct op_strategy *strategy_find(const struct target_kind *k, enum op op);

/*
 * Lowers node n into kernel k (name, args and span already set) for target
 * t (its options reach the conditions as L->target) with the strategy s:
 * one func when the choice is static, else variants, each ending with the
 * epilogue e (NULL: none; see struct lower_epilogue). 0 or -1.
 */
int strategy_lower(struct graph *g, const struct target *t, const struct op_strategy *s,
		   struct node *n, const struct lower_epilogue *e, struct kernel *k);

#endif
