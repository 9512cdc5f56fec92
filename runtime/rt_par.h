/*
 * rt_par.h - the parallel loop of compiled models: rt_par_for runs a job's
 * chunks on the model's own thread pool (rt_par.c, part of rt.c), where the
 * c target's outlined loop nests and the helpers of rt_c*.h, rt_blas.h and
 * rt_random.h run. Internal to the generated code; not installed.
 *
 *	struct job { const float *x; float *y; };
 *	static void twice(void *v, int64_t lo, int64_t hi)
 *	{
 *		const struct job *j = v;
 *		for (int64_t i = lo; i < hi; i++) j->y[i] = 2 * j->x[i];
 *	}
 *	rt_par_for(threads, n, 1, twice, &(struct job){ x, y });
 */
#ifndef COLLAGEC_RT_PAR_H
#define COLLAGEC_RT_PAR_H

#include <stdint.h>

/*
 * fn(ctx, lo, hi) over chunks of [0, n), each at least grain long, on up to
 * threads threads of the pool, the caller among them; returns when all have
 * run. Chunks must not depend on one another: which thread runs one, and
 * how [0, n) is cut, may change from call to call. A call from inside a
 * chunk, or while another thread's job holds the pool, runs on its caller
 * alone.
 */
void rt_par_for(int threads, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
		void *ctx) __attribute__((visibility("hidden")));

#endif
