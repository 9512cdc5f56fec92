/*
 * tir_parallel.c - the parallel step: which loops marked parallel by the
 * lowering (independent iterations) run as parallel regions. Printers obey
 * the decision (TIR_FOR .region) instead of making it while they print.
 */
#include "tir.h"

bool tir_has_loop(const struct tir *s)
{
	if (!s)
		return false;
	if (s->kind == TIR_FOR)
		return true;
	if (s->kind == TIR_SEQ) {
		for (int i = 0; i < s->n; i++)
			if (tir_has_loop(s->list[i]))
				return true;
	}
	return s->kind == TIR_IF && (tir_has_loop(s->b) || tir_has_loop(s->c));
}

int64_t tir_work(const struct tir *s)
{
	const int64_t cap = (int64_t)1 << 40;
	int64_t w = 0, e;

	if (!s)
		return 0;
	switch (s->kind) {
	case TIR_FOR:
		e = s->a->kind == TIR_INT ? MAX(s->a->i, 0) : 256;
		w = tir_work(s->b);
		return e && w > cap / e ? cap : e * MAX(w, 1);
	case TIR_SEQ:
		for (int i = 0; i < s->n; i++)
			w = MIN(cap, w + tir_work(s->list[i]));
		return w;
	case TIR_IF:
		return MAX(tir_work(s->b), tir_work(s->c));
	case TIR_EXTERN:
		return MIN(cap, MAX(s->i, 1));
	default:
		return 1;
	}
}

bool tir_has_extern(const struct tir *s)
{
	if (!s)
		return false;
	if (s->kind == TIR_EXTERN)
		return true;
	if (s->kind == TIR_SEQ) {
		for (int i = 0; i < s->n; i++)
			if (tir_has_extern(s->list[i]))
				return true;
	}
	return s->kind == TIR_IF && (tir_has_extern(s->b) || tir_has_extern(s->c));
}

static bool unit_loop(const struct tir *s)
{
	return s->kind == TIR_FOR && s->a->kind == TIR_INT && s->a->i == 1;
}

/* Whether the loops in body b, if any, are a nest of loops of extent 1. */
static bool only_unit_loops(const struct tir *b)
{
	if (!tir_has_loop(b))
		return true;
	return b->n == 1 && unit_loop(b->list[0]) && only_unit_loops(b->list[0]->b);
}

/*
 * Perfectly nested parallel loops starting at s (at most 3), the innermost
 * loop aside unless it calls an extern function.
 */
static int parallel_depth(const struct tir *s)
{
	const struct tir *nest[3];
	int k = 0;

	while (k < 3 && s->kind == TIR_FOR && s->parallel) {
		nest[k++] = s;
		if (s->b->n != 1)
			break;
		s = s->b->list[0];
	}
	/*
	 * The innermost loop stays out of a collapse: it is the loop the C
	 * compiler vectorizes, and a collapsed one is not, so the parallel and
	 * the serial version of the nest would differ (vector and scalar math
	 * functions round differently) and outputs would depend on the
	 * thread count. A loop around an extern function's call (a block
	 * of rt_cdw2d, rt_cpw) is no such loop. Nor is a loop of extent 1
	 * (a [M, C, 1, 1] tensor's last two): the innermost is then the last
	 * loop of another extent, C's. Collapsed with M's, every iteration
	 * was one element (W * s of fold-scale: 112 x 480 took 0.046 ms on 2
	 * threads, 0.006 on 1).
	 */
	if (k > 1 && only_unit_loops(nest[k - 1]->b) && !tir_has_extern(nest[k - 1]->b)) {
		while (k > 1 && unit_loop(nest[k - 1]))
			k--;
		if (k > 1)
			k--;
	}
	return k;
}

/*
 * The region's work estimate when it is known at compile time: the
 * collapsed loops' constant extents times the work of one iteration (as
 * the printed run-time condition computes it); -1 when an extent is
 * symbolic.
 */
static int64_t static_work(const struct tir *s, int depth)
{
	const int64_t cap = (int64_t)1 << 40;
	int64_t w = 1;

	for (int k = 0; k < depth; k++) {
		if (s->a->kind != TIR_INT)
			return -1;
		w = s->a->i > 0 && w > cap / s->a->i ? cap : w * MAX(s->a->i, 0);
		if (k + 1 < depth)
			s = s->b->list[0];
	}
	if (tir_has_loop(s->b) || tir_has_extern(s->b)) {
		int64_t inner = tir_work(s->b);

		w = inner && w > cap / inner ? cap : w * inner;
	}
	return w;
}

static void plan(struct tir *s, int64_t min_work)
{
	if (!s)
		return;
	switch (s->kind) {
	case TIR_SEQ:
		for (int i = 0; i < s->n; i++)
			plan(s->list[i], min_work);
		break;
	case TIR_IF:
		plan(s->b, min_work);
		plan(s->c, min_work);
		break;
	case TIR_FOR:
		if (s->parallel) {
			int depth = parallel_depth(s);
			int64_t w = static_work(s, depth);

			/* nothing inside a region, or a nest too small for one, is another */
			s->region = w >= 0 && w < min_work ? -1 : depth;
			return;
		}
		plan(s->b, min_work);
		break;
	default:
		break;
	}
}

/* Clears earlier decisions, so that planning twice gives the same result. */
static void clear(struct tir *s)
{
	if (!s)
		return;
	if (s->kind == TIR_SEQ)
		for (int i = 0; i < s->n; i++)
			clear(s->list[i]);
	if (s->kind == TIR_IF) {
		clear(s->b);
		clear(s->c);
	}
	if (s->kind == TIR_FOR) {
		s->region = 0;
		clear(s->b);
	}
}

void tir_plan_parallel(struct tir_func *f, int64_t min_work)
{
	clear(f->body);
	plan(f->body, min_work);
}
