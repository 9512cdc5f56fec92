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

/* Chunks a job is cut into per thread. */
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

/*
 * OpenMP's fork-join on the pool, for the OpenMP entry points a model with
 * dnnl kernels exports (rt_dnnl.h: GOMP_parallel, GOMP_barrier,
 * omp_get_max_threads, ...), which libdnnl then calls in place of
 * libgomp's: rt_omp_parallel runs fn(data) once per member id of a team
 * of nthr (0: rt_omp_max_threads()), each id claimed by a free thread of
 * the pool (a team of one when nested or when the pool is held);
 * rt_omp_barrier waits for the team's members (spin, then futex).
 */
void rt_omp_parallel(void (*fn)(void *), void *data, unsigned nthr)
	__attribute__((visibility("hidden")));
void rt_omp_barrier(void) __attribute__((visibility("hidden")));
int rt_omp_max_threads(void) __attribute__((visibility("hidden")));
void rt_omp_set_threads(int n) __attribute__((visibility("hidden")));
int rt_omp_num_threads(void) __attribute__((visibility("hidden")));
int rt_omp_thread_num(void) __attribute__((visibility("hidden")));
int rt_omp_in_parallel(void) __attribute__((visibility("hidden")));
/* Whether the entry points forward to libgomp's (rt_par.c says when). */
int rt_omp_delegated(void) __attribute__((visibility("hidden")));


#endif
