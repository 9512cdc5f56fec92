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

/* Chunks a job is cut into per thread, in the pool and on libgomp's team alike. */
#define RT_PAR_SPLIT 4

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

#ifdef _OPENMP
#include <omp.h>

/*
 * Code compiled with -fopenmp (a model with dnnl kernels: Debian's oneDNN
 * runs on libgomp, and the model links it) runs the same chunks on
 * libgomp's team instead, claimed one at a time as above: a second pool
 * beside libgomp's spinning threads made bert_tiny's dnnl,c build 1.8x
 * slower at 2 threads. Such a model keeps libgomp's wait policy
 * (OMP_WAIT_POLICY, GOMP_SPINCOUNT).
 */
static inline void rt_par_for_omp(int threads, int64_t n, int64_t grain,
				  void (*fn)(void *, int64_t, int64_t), void *ctx)
{
	int64_t cuts = (int64_t)threads * RT_PAR_SPLIT, chunk, nc;

	if (grain < 1)
		grain = 1;
	chunk = (n + cuts - 1) / cuts;
	chunk = chunk < grain ? grain : chunk;
	nc = n > 0 ? (n + chunk - 1) / chunk : 0;
	if (threads <= 1 || nc <= 1 || omp_in_parallel()) {
		if (n > 0)
			fn(ctx, 0, n);
		return;
	}
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
	for (int64_t c = 0; c < nc; c++)
		fn(ctx, c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n);
}
#define rt_par_for rt_par_for_omp
#endif

#endif
