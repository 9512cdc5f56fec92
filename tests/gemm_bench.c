/*
 * gemm_bench.c - make bench-gemm's measuring program: OpenBLAS's sgemm
 * next to the c target's rt_cgemm (backends/c/rt_cgemm.h, compiled as the
 * generated code is: -O2 -march=native -fopenmp) on the same shapes, the
 * same thread count, in the same run.
 *
 *	gemm_bench [-t THREADS] [-r RUNS] [-b] MxNxK...
 *
 * C [M, N] = A [M, K] x B [K, N], row-major, as conv.micro multiplies the
 * weights [Cout, Cin * kh * kw] by the im2col panels [Cin * kh * kw,
 * pixels]. B is packed once before timing (a compile-time constant for
 * matmul.micro; for conv.micro the im2col is counted in the model's
 * profile, not here). Per shape it prints one line:
 *
 *	M N K openblas_gflops cgemm_gflops
 *
 * the median of RUNS timed runs each (with -b the best), after one warm-up. The maximum
 * relative difference of the two results goes to stderr when above 1e-3.
 */
#define _GNU_SOURCE	/* rt_par.c: dladdr, dl_iterate_phdr */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../runtime/rt_par.c"
#include "../backends/c/rt_cgemm.h"

void openblas_set_num_threads(int);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) / 64 * 64);

	if (!p) {
		perror("gemm_bench");
		exit(1);
	}
	return p;
}

/* One shape: both GEMMs RUNS times, the medians as GFLOP/s. */
static void bench_shape(long M, long N, long K, int threads, int runs, int best)
{
	long np = (N + RT_CG_NR - 1) / RT_CG_NR;
	float *A = xalloc(sizeof(float) * M * K), *B = xalloc(sizeof(float) * K * N);
	float *Bp = xalloc(sizeof(float) * np * RT_CG_NR * (K ? K : 1));
	float *C1 = xalloc(sizeof(float) * M * N), *C2 = xalloc(sizeof(float) * M * N);
	double *t1 = xalloc(sizeof(double) * runs), *t2 = xalloc(sizeof(double) * runs);
	double flop = 2.0 * M * N * K, err = 0;

	srand(1);
	for (long i = 0; i < M * K; i++)
		A[i] = (float)rand() / RAND_MAX - 0.5f;
	for (long i = 0; i < K * N; i++)
		B[i] = (float)rand() / RAND_MAX - 0.5f;
	rt_cgemm_pack(K, N, B, N, 1, Bp, threads);
	for (int r = -1; r < runs; r++) {
		double t = now();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N,
			    0.0f, C1, N);
		if (r >= 0)
			t1[r] = now() - t;
		t = now();
		rt_cgemm(M, N, K, 1.0f, A, K, 1, Bp, K * RT_CG_NR, C2, N, NULL, 0, 0, 0.0f,
			 RT_CG_ACT_NONE, 0, 0, NULL, 0, threads);
		if (r >= 0)
			t2[r] = now() - t;
	}
	for (long i = 0; i < M * N; i++) {
		double d = fabs((double)C1[i] - C2[i]) / (fabs(C1[i]) + 1.0);

		err = d > err ? d : err;
	}
	if (err > 1e-3)
		fprintf(stderr, "gemm_bench: %ldx%ldx%ld: results differ by %g\n", M, N, K, err);
	qsort(t1, runs, sizeof(double), cmp_double);
	qsort(t2, runs, sizeof(double), cmp_double);
	printf("%ld %ld %ld %.1f %.1f\n", M, N, K, flop / t1[best ? 0 : runs / 2] * 1e-9,
	       flop / t2[best ? 0 : runs / 2] * 1e-9);
	fflush(stdout);
	free(A);
	free(B);
	free(Bp);
	free(C1);
	free(C2);
	free(t1);
	free(t2);
}

int main(int argc, char **argv)
{
	int threads = 1, runs = 20, best = 0, i;

	for (i = 1; i < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "-b")) {
			best = 1;
			i--;
			continue;
		}
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "-t"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-r"))
			runs = atoi(argv[i + 1]);
		else
			goto usage;
	}
	if (i == argc || threads < 1 || runs < 1)
		goto usage;
	openblas_set_num_threads(threads);
	for (; i < argc; i++) {
		long M, N, K;

		if (sscanf(argv[i], "%ldx%ldx%ld", &M, &N, &K) != 3 || M < 1 || N < 1 || K < 0)
			goto usage;
		bench_shape(M, N, K, threads, runs, best);
	}
	return 0;
usage:
	fprintf(stderr, "usage: gemm_bench [-t THREADS] [-r RUNS] [-b] MxNxK...\n");
	return 2;
}
