/*
 * dnnl_shapes.c - one handle of a model with a symbolic batch dim, run at
 * several batch sizes in turn (tests/backends.sh, dnnl section):
 *
 *	dnnl_shapes [-reopen BYTES] MODEL.so N...
 *
 * dlopens MODEL.so (one float input [N, ...], one float output [N, ...]),
 * runs it once per N in the order given, batch item b of the input always
 * holding the same values whatever N, and checks that each item's output
 * equals what earlier runs computed for it (rtol 1e-4, atol 1e-5): the
 * kernels' cached primitives of one batch size must not serve another.
 * With -reopen the handle is then closed, which must give back what the
 * kernels' caches held (rt_dnnl_release_all: the heap in use, glibc's
 * mallinfo2, at most BYTES above what it was before the first open, where
 * oneDNN's engine and its primitive cache stay), and a new handle runs the
 * sizes again to the same outputs; twice, the heap in use after each close
 * no more than 64 KiB above what it was after the first.
 * Prints nothing and exits 0 when all agree; else one line saying why and
 * exits 1 (2: usage or load error).
 */
#include <dlfcn.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collagec.h"

#define MAX_N 64

struct api {
	collagec_status (*open)(collagec_model **);
	void (*close)(collagec_model *);
	collagec_status (*input_info)(const collagec_model *, int, collagec_tensor_info *);
	collagec_status (*set_input)(collagec_model *, int, const void *, const int64_t *, int);
	collagec_status (*run)(collagec_model *);
	collagec_status (*get_output)(collagec_model *, int, const void **, const int64_t **,
				      int *);
	const char *(*last_error)(const collagec_model *);
};

static int load(const char *path, struct api *a)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "dnnl_shapes: %s\n", dlerror());
		return -1;
	}
	*(void **)&a->open = dlsym(h, "collagec_open");
	*(void **)&a->close = dlsym(h, "collagec_close");
	*(void **)&a->input_info = dlsym(h, "collagec_input_info");
	*(void **)&a->set_input = dlsym(h, "collagec_set_input");
	*(void **)&a->run = dlsym(h, "collagec_run");
	*(void **)&a->get_output = dlsym(h, "collagec_get_output");
	*(void **)&a->last_error = dlsym(h, "collagec_last_error");
	if (!a->open || !a->close || !a->input_info || !a->set_input || !a->run ||
	    !a->get_output || !a->last_error) {
		fprintf(stderr, "dnnl_shapes: %s lacks the collagec API\n", path);
		return -1;
	}
	return 0;
}

/* Bytes of the heap in use: small chunks and mmapped ones. */
static size_t in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static float *ref;	/* per item: the output first computed for it */
static int64_t ref_n, item_out, item_in = 1;

/* Runs m at each N of ns; 0, or 1 after a line saying why (2: bad N). */
static int run_sizes(const struct api *a, collagec_model *m, const collagec_tensor_info *in,
		     char **ns, int n_ns)
{
	static float x[1 << 20];

	for (int r = 0; r < n_ns; r++) {
		int64_t n = atoll(ns[r]), dims[8];
		const int64_t *od;
		const void *y;
		int orank;

		if (n < 1 || n > MAX_N || n * item_in > (int64_t)(sizeof(x) / sizeof(x[0]))) {
			fprintf(stderr, "dnnl_shapes: bad N '%s'\n", ns[r]);
			return 2;
		}
		for (int64_t b = 0; b < n; b++)
			for (int64_t j = 0; j < item_in; j++)
				x[b * item_in + j] = (float)sin(0.37 * (double)j + 1.3 * (double)b);
		memcpy(dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
		dims[0] = n;
		if (a->set_input(m, 0, x, dims, in->rank) != COLLAGEC_OK ||
		    a->run(m) != COLLAGEC_OK || a->get_output(m, 0, &y, &od, &orank) != COLLAGEC_OK) {
			printf("N=%lld: %s\n", (long long)n, a->last_error(m));
			return 1;
		}
		if (!ref) {
			item_out = 1;
			for (int i = 1; i < orank; i++)
				item_out *= od[i];
			ref = calloc((size_t)(MAX_N * item_out), sizeof(float));
			if (!ref)
				return 2;
		}
		for (int64_t b = 0; b < n; b++)
			for (int64_t j = 0; j < item_out; j++) {
				float v = ((const float *)y)[b * item_out + j];
				float e = ref[b * item_out + j];

				if (b < ref_n && fabsf(v - e) > 1e-5f + 1e-4f * fabsf(e)) {
					printf("N=%lld (run %d): item %lld element %lld is %g, "
					       "earlier runs gave %g\n", (long long)n, r + 1,
					       (long long)b, (long long)j, v, e);
					return 1;
				}
				if (b >= ref_n)
					ref[b * item_out + j] = v;
			}
		if (n > ref_n)
			ref_n = n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int reopen = argc > 2 && !strcmp(argv[1], "-reopen"), rc;
	size_t keep = reopen ? (size_t)atoll(argv[2]) : 0, before, first = 0;
	collagec_tensor_info in;
	collagec_model *m;
	struct api a;

	argv += 2 * reopen;
	argc -= 2 * reopen;
	if (argc < 3 || load(argv[1], &a) < 0) {
		fprintf(stderr, "usage: dnnl_shapes [-reopen BYTES] MODEL.so N... (the model must "
			"load)\n");
		return 2;
	}
	before = in_use();
	if (a.open(&m) != COLLAGEC_OK || a.input_info(m, 0, &in) != COLLAGEC_OK || in.rank < 1 ||
	    in.rank > 8) {
		fprintf(stderr, "dnnl_shapes: %s does not open, or its input is not [N, ...]\n",
			argv[1]);
		return 2;
	}
	for (int i = 1; i < in.rank; i++)
		item_in *= in.dims[i];
	rc = run_sizes(&a, m, &in, argv + 2, argc - 2);
	a.close(m);
	for (int k = 0; k < 3 * reopen && rc == 0; k++) {
		size_t now = in_use();

		if (k == 0)
			first = now;
		if (now > before + keep || now > first + (64u << 10)) {
			printf("closed (%d): %zu bytes of heap in use, %zu before the first open, "
			       "%zu after the first close\n", k + 1, now, before, first);
			rc = 1;
			break;
		}
		if (k == 2)
			break;
		if (a.open(&m) != COLLAGEC_OK) {
			printf("reopen (%d) failed\n", k + 1);
			rc = 1;
			break;
		}
		rc = run_sizes(&a, m, &in, argv + 2, argc - 2);
		a.close(m);
	}
	free(ref);
	return rc;
}
