/*
 * omp_two.c - two models with dnnl kernels in one process (tests/backends.sh,
 * dnnl/omp-team). Each OUT.so defines the OpenMP entry points libdnnl
 * calls (rt_dnnl.h); libdnnl, loaded once, binds them to the first model
 * that calls into it. This program loads A and B with dlopen (RTLD_LOCAL,
 * as a plugin host would), runs both on 2 threads, closes and unloads A,
 * runs B again, then loads and runs A again: every output must be
 * bit-identical to the first run's, and nothing may crash (libdnnl, still
 * loaded for B, must not call into an unloaded A).
 *
 *	omp_two A.so B.so
 *
 * Float inputs only; a symbolic dim is given the value 2. Prints
 * "ok   backends/dnnl/omp-two-models" or "FAIL backends/dnnl/omp-two-models: why".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collagec.h"

#define NAME "backends/dnnl/omp-two-models"

struct api {
	void *h;
	collagec_status (*open)(collagec_model **);
	void (*close)(collagec_model *);
	int (*num_inputs)(const collagec_model *);
	collagec_status (*input_info)(const collagec_model *, int, collagec_tensor_info *);
	collagec_status (*set_input)(collagec_model *, int, const void *, const int64_t *, int);
	collagec_status (*run)(collagec_model *);
	collagec_status (*get_output)(collagec_model *, int, const void **, const int64_t **,
				      int *);
	collagec_status (*set_threads)(collagec_model *, int);
};

static int fail(const char *why, const char *what)
{
	printf("FAIL %s: %s%s\n", NAME, why, what ? what : "");
	return 1;
}

static int load(struct api *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	if (!(a->h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		return fail("dlopen: ", dlerror());
	*(void **)&a->open = dlsym(a->h, "collagec_open");
	*(void **)&a->close = dlsym(a->h, "collagec_close");
	*(void **)&a->num_inputs = dlsym(a->h, "collagec_num_inputs");
	*(void **)&a->input_info = dlsym(a->h, "collagec_input_info");
	*(void **)&a->set_input = dlsym(a->h, "collagec_set_input");
	*(void **)&a->run = dlsym(a->h, "collagec_run");
	*(void **)&a->get_output = dlsym(a->h, "collagec_get_output");
	*(void **)&a->set_threads = dlsym(a->h, "collagec_set_threads");
	if (!a->open || !a->close || !a->num_inputs || !a->input_info || !a->set_input ||
	    !a->run || !a->get_output || !a->set_threads)
		return fail("missing API symbol in ", path);
	return 0;
}

/*
 * Opens, runs on 2 threads with deterministic inputs, and returns a malloc'd
 * copy of output 0 (its byte count in *bytes), or NULL on failure.
 */
static float *run_once(struct api *a, size_t *bytes)
{
	collagec_model *m;
	float *ins[8] = { 0 }, *copy = NULL;
	int64_t dims[8][8];
	int n_in;

	if (a->open(&m) != COLLAGEC_OK || a->set_threads(m, 2) != COLLAGEC_OK) {
		fail("open or set_threads failed", NULL);
		return NULL;
	}
	n_in = a->num_inputs(m);
	if (n_in < 1 || n_in > 8) {
		fail("unexpected input count", NULL);
		goto out;
	}
	for (int i = 0; i < n_in; i++) {
		collagec_tensor_info info;
		int64_t n = 1;

		if (a->input_info(m, i, &info) != COLLAGEC_OK || info.dtype != COLLAGEC_FLOAT ||
		    info.rank > 8) {
			fail("an input is not float32", NULL);
			goto out;
		}
		for (int d = 0; d < info.rank; d++) {
			dims[i][d] = info.dims[d] < 0 ? 2 : info.dims[d];
			n *= dims[i][d];
		}
		if (!(ins[i] = malloc(sizeof(float) * (size_t)n))) {
			fail("out of memory", NULL);
			goto out;
		}
		for (int64_t k = 0; k < n; k++)
			ins[i][k] = (float)((k * 7 + i * 3) % 23) / 11.0f - 1.0f;
		if (a->set_input(m, i, ins[i], dims[i], info.rank) != COLLAGEC_OK) {
			fail("set_input failed", NULL);
			goto out;
		}
	}
	if (a->run(m) != COLLAGEC_OK) {
		fail("run failed", NULL);
	} else {
		const void *data;
		const int64_t *odims;
		int rank;
		size_t n = 1;

		if (a->get_output(m, 0, &data, &odims, &rank) != COLLAGEC_OK) {
			fail("get_output failed", NULL);
			goto out;
		}
		for (int d = 0; d < rank; d++)
			n *= (size_t)odims[d];
		*bytes = n * sizeof(float);
		if ((copy = malloc(*bytes)))
			memcpy(copy, data, *bytes);
	}
out:
	a->close(m);
	for (int i = 0; i < 8; i++)
		free(ins[i]);
	return copy;
}

static int same(const float *x, size_t nx, const float *y, size_t ny)
{
	return x && y && nx == ny && !memcmp(x, y, nx);
}

int main(int argc, char **argv)
{
	struct api a, b;
	float *a1, *b1, *b2, *a2;
	size_t na1 = 0, nb1 = 0, nb2 = 0, na2 = 0;

	if (argc != 3)
		return 2;
	if (load(&a, argv[1]) || load(&b, argv[2]))
		return 1;
	a1 = run_once(&a, &na1);
	b1 = run_once(&b, &nb1);
	if (!a1 || !b1)
		return 1;
	if (dlclose(a.h) != 0)
		return fail("dlclose: ", dlerror());
	b2 = run_once(&b, &nb2);
	if (!same(b1, nb1, b2, nb2))
		return fail("B's output changed after A was unloaded", NULL);
	if (load(&a, argv[1]))
		return 1;
	a2 = run_once(&a, &na2);
	if (!same(a1, na1, a2, na2))
		return fail("A's output changed after it was loaded again", NULL);
	printf("ok   %s\n", NAME);
	free(a1);
	free(b1);
	free(b2);
	free(a2);
	return 0;
}
