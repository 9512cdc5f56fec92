/*
 * checks.c - a compiled model checks what it is given (tests/runtime.sh).
 * Linked against checks.so (testdata/runtime/make_model.py): inputs a [N,3],
 * b [N,3], c [K,1], d [1,M], e [P,Q], f [R,Q]; outputs y = a + b, z = c * d,
 * w = Concat(e, f) [P+R,Q]. Each bad call
 * must return its documented status with a message from
 * collagec_last_error, and a good run must still work after all of them.
 * Prints "ok   runtime/NAME" or "FAIL runtime/NAME: why" per check.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collagec.h"

static int failed;

/* check NAME: the call gave want, and the handle's last error contains text */
static void check(const char *name, collagec_model *m, collagec_status got,
		  collagec_status want, const char *text)
{
	const char *err = collagec_last_error(m);

	if (got != want)
		printf("FAIL runtime/%s: status %d (%s), expected %d (%s); error '%s'\n", name,
		       got, collagec_status_string(got), want, collagec_status_string(want), err);
	else if (text && !strstr(err, text))
		printf("FAIL runtime/%s: error '%s' lacks '%s'\n", name, err, text);
	else {
		printf("ok   runtime/%s\n", name);
		return;
	}
	failed++;
}

static float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 10, 20, 30, 40, 50, 60 };
static float c[2] = { 1, 2 }, d[2] = { 3, 4 };
static const int64_t d23[2] = { 2, 3 }, d21[2] = { 2, 1 }, d12[2] = { 1, 2 };

/* Sets c, d, e and f to good values: only a and b are under test. */
static void set_rest(collagec_model *m)
{
	collagec_set_input(m, 2, c, d21, 2);
	collagec_set_input(m, 3, d, d12, 2);
	collagec_set_input(m, 4, c, d21, 2);
	collagec_set_input(m, 5, d, d21, 2);
}

int main(void)
{
	collagec_model *m;
	collagec_status st;
	const float *y;
	const int64_t *ydims;
	int rank;

	if (collagec_open(&m) != COLLAGEC_OK) {
		printf("FAIL runtime/open: %s\n", collagec_last_error(NULL));
		return 1;
	}
	check("null-handle-set-input", NULL, collagec_set_input(NULL, 0, a, d23, 2),
	      COLLAGEC_E_ARG, NULL);
	check("null-handle-run", NULL, collagec_run(NULL), COLLAGEC_E_ARG, NULL);
	check("open-null-out", NULL, collagec_open(NULL), COLLAGEC_E_ARG, NULL);

	/* index out of range, both sides */
	check("input-index-negative", m, collagec_set_input(m, -1, a, d23, 2), COLLAGEC_E_ARG,
	      "input index -1 out of range (the model has 6)");
	check("input-index-too-big", m, collagec_set_input(m, 6, a, d23, 2), COLLAGEC_E_ARG,
	      "input index 6 out of range");
	check("input-index-typed", m, collagec_set_input_typed(m, 7, COLLAGEC_FLOAT, a, d23, 2),
	      COLLAGEC_E_ARG, "input index 7 out of range");
	check("output-index", m, collagec_get_output(m, 3, NULL, NULL, NULL), COLLAGEC_E_ARG,
	      "output index 3 out of range (the model has 3)");
	{
		collagec_kernel_info ki;

		check("kernel-index", m, collagec_get_kernel_info(m, -3, &ki), COLLAGEC_E_ARG,
		      "kernel index -3 out of range");
	}
	{
		collagec_tensor_info ti;

		check("input-info-index", m, collagec_input_info(m, 6, &ti), COLLAGEC_E_ARG, NULL);
		check("input-info-null", m, collagec_input_info(m, 0, NULL), COLLAGEC_E_ARG, NULL);
	}

	/* pointers and ranks */
	check("null-data", m, collagec_set_input(m, 0, NULL, d23, 2), COLLAGEC_E_ARG,
	      "input 'a': NULL data");
	check("null-dims", m, collagec_set_input(m, 0, a, NULL, 2), COLLAGEC_E_ARG,
	      "input 'a': NULL dims for rank 2");
	check("rank-negative", m, collagec_set_input(m, 0, a, d23, -1), COLLAGEC_E_ARG,
	      "input 'a': rank -1 outside 0..8");
	check("rank-too-big", m, collagec_set_input(m, 0, a, d23, 9), COLLAGEC_E_ARG,
	      "input 'a': rank 9 outside 0..8");
	check("wrong-rank", m, collagec_set_input(m, 0, a, d23, 1), COLLAGEC_E_SHAPE,
	      "input 'a': rank 1, expected 2");
	{
		const int64_t neg[2] = { 2, -3 };

		check("negative-dim", m, collagec_set_input(m, 1, b, neg, 2), COLLAGEC_E_SHAPE,
		      "input 'b': dimension 1 is negative (-3)");
	}
	{
		const int64_t big[2] = { INT64_MAX / 2, 3 }, big2[2] = { (int64_t)1 << 31, (int64_t)1 << 31 };

		check("dims-overflow", m, collagec_set_input(m, 0, a, big, 2), COLLAGEC_E_SHAPE,
		      "input 'a': the dimensions' product overflows");
		/* 2^62 elements fit int64_t, their 2^64 bytes do not */
		check("bytes-overflow", m, collagec_set_input(m, 2, c, big2, 2), COLLAGEC_E_SHAPE,
		      NULL);
	}
	check("wrong-dtype", m, collagec_set_input_typed(m, 0, COLLAGEC_INT64, a, d23, 2),
	      COLLAGEC_E_ARG, "input 'a': dtype 7, expected 1");
	check("right-dtype", m, collagec_set_input_typed(m, 0, COLLAGEC_FLOAT, a, d23, 2),
	      COLLAGEC_OK, NULL);

	/* state: not every input set, output before a run */
	{
		collagec_model *m2;

		collagec_open(&m2);
		check("run-nothing-set", m2, collagec_run(m2), COLLAGEC_E_STATE,
		      "input 'a' was not set");
		collagec_set_input(m2, 0, a, d23, 2);
		collagec_set_input(m2, 1, b, d23, 2);
		collagec_set_input(m2, 2, c, d21, 2);
		collagec_set_input(m2, 4, c, d21, 2);
		collagec_set_input(m2, 5, d, d21, 2);
		check("run-one-input-missing", m2, collagec_run(m2), COLLAGEC_E_STATE,
		      "input 'd' was not set");
		check("output-before-run", m2, collagec_get_output(m2, 0, NULL, NULL, NULL),
		      COLLAGEC_E_STATE, "the model has not run");
		/* a failed set_input unsets what an earlier call set */
		collagec_set_input(m2, 3, d, d12, 2);
		collagec_set_input(m2, 1, NULL, d23, 2);
		check("failed-set-unsets", m2, collagec_run(m2), COLLAGEC_E_STATE,
		      "input 'b' was not set");
		collagec_close(m2);
	}

	/* shapes checked at run */
	set_rest(m);
	{
		const int64_t d24[2] = { 2, 4 }, d53[2] = { 5, 3 };

		collagec_set_input(m, 0, a, d24, 2);
		collagec_set_input(m, 1, b, d23, 2);
		check("fixed-dim-mismatch", m, collagec_run(m), COLLAGEC_E_SHAPE,
		      "input 'a': dimension 1 is 4, expected 3");
		collagec_set_input(m, 0, a, d23, 2);
		collagec_set_input(m, 1, b, d53, 2);
		check("symbol-bound-twice", m, collagec_run(m), COLLAGEC_E_SHAPE,
		      "input 'b': dimension 0 is 5, expected 2");
	}
	{
		/* each input fits; the outer product z [2^40, 2^40] does not */
		const int64_t k[2] = { (int64_t)1 << 40, 1 }, mm[2] = { 1, (int64_t)1 << 40 };

		collagec_set_input(m, 1, b, d23, 2);
		collagec_set_input(m, 2, c, k, 2);
		collagec_set_input(m, 3, d, mm, 2);
		check("output-too-large", m, collagec_run(m), COLLAGEC_E_SHAPE,
		      "tensor 'z' is too large for these inputs");
	}
	{
		/* z [2^26, 2^26] floats: 2^54 bytes, representable but not allocatable */
		const int64_t k[2] = { (int64_t)1 << 26, 1 }, mm[2] = { 1, (int64_t)1 << 26 };

		collagec_set_input(m, 2, c, k, 2);
		collagec_set_input(m, 3, d, mm, 2);
		check("output-cannot-allocate", m, collagec_run(m), COLLAGEC_E_ALLOC,
		      "cannot allocate");
	}

	{
		/* e and f hold no bytes (Q = 0), but P + R overflows */
		const int64_t big[2] = { INT64_MAX / 2 + 1, 0 };

		set_rest(m);
		collagec_set_input(m, 4, c, big, 2);
		collagec_set_input(m, 5, d, big, 2);
		check("derived-symbol-overflow", m, collagec_run(m), COLLAGEC_E_SHAPE,
		      "symbol '(P+R)' overflows for these inputs");
		/* an empty input whose other dim is huge does not overflow... */
		check("zero-dim-with-huge-dim", m, collagec_set_input(m, 0, a, big, 2),
		      COLLAGEC_OK, NULL);
		/* ...and its dims are checked at run as any others */
		collagec_set_input(m, 1, b, big, 2);
		set_rest(m);
		check("zero-dim-checked-at-run", m, collagec_run(m), COLLAGEC_E_SHAPE,
		      "input 'a': dimension 1 is 0, expected 3");
	}

	/* after all that, a good run */
	set_rest(m);
	collagec_set_input(m, 0, a, d23, 2);
	collagec_set_input(m, 1, b, d23, 2);
	st = collagec_run(m);
	check("good-run-after-failures", m, st, COLLAGEC_OK, NULL);
	if (st == COLLAGEC_OK &&
	    collagec_get_output(m, 0, (const void **)&y, &ydims, &rank) == COLLAGEC_OK) {
		if (rank != 2 || ydims[0] != 2 || ydims[1] != 3 || y[0] != 11 || y[5] != 66) {
			printf("FAIL runtime/good-run-values: rank %d [%lld,%lld] y[0] %g y[5] %g\n",
			       rank, (long long)ydims[0], (long long)ydims[1], y[0], y[5]);
			failed++;
		} else
			printf("ok   runtime/good-run-values\n");
	}
	collagec_close(m);
	return failed != 0;
}
