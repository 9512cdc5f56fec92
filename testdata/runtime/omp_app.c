/*
 * omp_app.c - a program with OpenMP code of its own, linked with a model
 * that has dnnl kernels (tests/backends.sh, dnnl/omp-app). The model
 * defines the OpenMP entry points libdnnl calls (rt_dnnl.h); linked into
 * the program ahead of libgomp, those are what the program's own parallel
 * regions call too, while its work-sharing loops and single blocks call
 * libgomp. The model must then forward its entry points to libgomp, or a
 * dynamic loop's iterations would run once per thread and a single block
 * on every thread. Checks, on 2 threads, before and after the model runs:
 * each iteration of a dynamic loop runs once, a single block once per
 * region, the team has 2 threads; and the model's output is the same on
 * both runs.
 *
 * Built with -fopenmp, linked with the model. Float inputs only; a
 * symbolic dim is given the value 2. Prints "ok   backends/dnnl/omp-app"
 * or "FAIL backends/dnnl/omp-app: why".
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collagec.h"

#define NAME "backends/dnnl/omp-app"
#define ITERS 4096

static int fail(const char *why)
{
	printf("FAIL %s: %s\n", NAME, why);
	return 1;
}

/* The program's own OpenMP: 0 when it behaves as OpenMP says. */
static int own_openmp(void)
{
	static int hits[ITERS];
	int singles = 0, team = 0;

	memset(hits, 0, sizeof(hits));
#pragma omp parallel num_threads(2)
	{
#pragma omp for schedule(dynamic, 7)
		for (int i = 0; i < ITERS; i++)
#pragma omp atomic
			hits[i]++;
#pragma omp single
		{
#pragma omp atomic
			singles++;
			team = omp_get_num_threads();
		}
	}
	for (int i = 0; i < ITERS; i++)
		if (hits[i] != 1)
			return fail("an iteration of the program's dynamic loop ran other than once");
	if (singles != 1)
		return fail("the program's single block ran other than once");
	if (team != 2)
		return fail("the program's team does not have 2 threads");
	return 0;
}

/* Runs the model on 2 threads; a malloc'd copy of output 0 (bytes in *n). */
static float *run_model(size_t *n)
{
	collagec_model *m;
	float *ins[8] = { 0 }, *copy = NULL;
	int64_t dims[8][8];
	int n_in;

	if (collagec_open(&m) != COLLAGEC_OK || collagec_set_threads(m, 2) != COLLAGEC_OK)
		return NULL;
	n_in = collagec_num_inputs(m);
	for (int i = 0; i < n_in && i < 8; i++) {
		collagec_tensor_info info;
		int64_t k = 1;

		if (collagec_input_info(m, i, &info) != COLLAGEC_OK || info.dtype != COLLAGEC_FLOAT ||
		    info.rank > 8)
			goto out;
		for (int d = 0; d < info.rank; d++) {
			dims[i][d] = info.dims[d] < 0 ? 2 : info.dims[d];
			k *= dims[i][d];
		}
		if (!(ins[i] = malloc(sizeof(float) * (size_t)k)))
			goto out;
		for (int64_t j = 0; j < k; j++)
			ins[i][j] = (float)((j * 5 + i) % 19) / 9.0f - 1.0f;
		if (collagec_set_input(m, i, ins[i], dims[i], info.rank) != COLLAGEC_OK)
			goto out;
	}
	if (n_in >= 1 && n_in <= 8 && collagec_run(m) == COLLAGEC_OK) {
		const void *data;
		const int64_t *od;
		int rank;
		size_t e = 1;

		if (collagec_get_output(m, 0, &data, &od, &rank) == COLLAGEC_OK) {
			for (int d = 0; d < rank; d++)
				e *= (size_t)od[d];
			*n = e * sizeof(float);
			if ((copy = malloc(*n)))
				memcpy(copy, data, *n);
		}
	}
out:
	collagec_close(m);
	for (int i = 0; i < 8; i++)
		free(ins[i]);
	return copy;
}

int main(void)
{
	float *a, *b;
	size_t na = 0, nb = 0;

	if (own_openmp())
		return 1;
	if (!(a = run_model(&na)))
		return fail("the model did not run");
	if (own_openmp())
		return 1;
	if (!(b = run_model(&nb)))
		return fail("the model did not run a second time");
	if (na != nb || memcmp(a, b, na))
		return fail("the model's output changed between runs");
	printf("ok   %s\n", NAME);
	free(a);
	free(b);
	return 0;
}
