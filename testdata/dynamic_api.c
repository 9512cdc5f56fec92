/*
 * dynamic_api.c - the C API on a model with data-dependent shapes
 * (nonzero_chain of testdata/gen_dynamic_tests.py), driven by tests/dynamic.sh:
 * one handle runs inputs whose outputs grow, shrink and become empty, and
 * each run's output dims and values are checked against what the inputs
 * imply; output_info marks the dynamic outputs; values that break Reshape's
 * rules fail the run with COLLAGEC_E_SHAPE naming the node, and the handle
 * runs again afterwards; an output bound to the caller's buffer
 * (collagec_bind_output) is written there, a run whose output outgrows the
 * buffer fails, and unbinding gives the model's own block back. One line per
 * check: "ok dynamic/api/NAME" or
 * "FAIL dynamic/api/NAME: why"; exit status 1 when any failed.
 */
#include <stdio.h>
#include <string.h>

#include "collagec.h"

static int failed;

static void verdict(const char *name, const char *why)
{
	if (why) {
		printf("FAIL dynamic/api/%s: %s\n", name, why);
		failed = 1;
	} else {
		printf("ok   dynamic/api/%s\n", name);
	}
}

/* Runs x (n values) with r; checks y, count and xr against x and r. */
static const char *run_and_check(collagec_model *m, const float *x, int64_t n,
				 const int64_t *r)
{
	static char why[200];
	int64_t xd[1] = { n }, rd[1] = { 2 }, k = 0;
	const int64_t *dims;
	const void *p;
	const float *y;
	int rank;

	if (collagec_set_input(m, 0, x, xd, 1) || collagec_set_input(m, 1, r, rd, 1))
		return "set_input failed";
	if (collagec_run(m) != COLLAGEC_OK) {
		snprintf(why, sizeof(why), "run failed: %s", collagec_last_error(m));
		return why;
	}
	if (collagec_get_output(m, 0, &p, &dims, &rank))
		return "get_output y failed";
	y = p;
	for (int64_t i = 0; i < n; i++) {
		if (!(x[i] > 0))
			continue;
		if (k < dims[0] && y[k] != x[i] + 1)
			return "y differs from x[x > 0] + 1";
		k++;
	}
	if (rank != 1 || dims[0] != k) {
		snprintf(why, sizeof(why), "y has %lld values, expected %lld",
			 (long long)dims[0], (long long)k);
		return why;
	}
	if (collagec_get_output(m, 1, &p, &dims, &rank) || ((const int64_t *)p)[0] != k)
		return "count differs";
	if (collagec_get_output(m, 2, &p, &dims, &rank) || rank != 2 || dims[0] != r[0] ||
	    dims[1] != 2 * r[1] || memcmp(p, x, sizeof(float) * (size_t)n))
		return "xr is not x reshaped to r * [1, 2]";
	return NULL;
}

/* y (output 0, sized by the run) bound to the caller's buffer, then unbound. */
static void bind_checks(collagec_model *m, float *x)
{
	static float buf[64];
	const void *p = NULL;
	const char *why;
	int64_t r[2] = { 5, 3 };	/* x reshaped to [5, 6] */

	for (int i = 0; i < 64; i++)
		x[i] = (float)((i * 7) % 5) - 2.0f;
	why = collagec_bind_output(m, 0, buf, sizeof(buf)) ? "bind_output failed"
		: run_and_check(m, x, 30, r);
	collagec_get_output(m, 0, &p, NULL, NULL);
	verdict("bind-output", why ? why : p != (const void *)buf ? "y is not in the bound buffer"
		: buf[0] != x[2] + 1 ? "the bound buffer does not hold y" : NULL);
	collagec_bind_output(m, 0, buf, 2 * sizeof(float));
	why = run_and_check(m, x, 30, r);
	verdict("bind-too-small", why && strstr(collagec_last_error(m), "output 'y' takes 48 "
		"bytes for these inputs; the buffer bound to it holds 8") ? NULL
		: why ? why : "a run wrote 12 values into a buffer of 2");
	collagec_bind_output(m, 0, NULL, 0);
	why = run_and_check(m, x, 30, r);
	collagec_get_output(m, 0, &p, NULL, NULL);
	verdict("unbind", why ? why : p == (const void *)buf ? "y is still in the unbound buffer"
		: NULL);
	verdict("bind-bad-index", collagec_bind_output(m, 9, buf, sizeof(buf)) == COLLAGEC_E_ARG
		? NULL : "output 9 of 3 was bound");
}

int main(void)
{
	static float x[64];
	collagec_model *m;
	collagec_tensor_info info;
	int64_t r[2];
	const char *why;

	if (collagec_open(&m) != COLLAGEC_OK) {
		verdict("open", collagec_last_error(NULL));
		return 1;
	}
	verdict("output-info-dynamic",
		collagec_output_info(m, 0, &info) || !info.dynamic || info.dims[0] != -1 ||
		collagec_output_info(m, 1, &info) || info.dynamic ||
		collagec_output_info(m, 2, &info) || !info.dynamic ? "dynamic flags wrong" : NULL);
	verdict("before-run", collagec_get_output(m, 0, NULL, NULL, NULL) == COLLAGEC_E_STATE ?
		NULL : "reading an output before a run is not COLLAGEC_E_STATE");
	for (int i = 0; i < 64; i++)
		x[i] = (float)((i * 7) % 5) - 2.0f;	/* -2..2: two in five positive */
	r[0] = 3, r[1] = 2;
	verdict("run-12", run_and_check(m, x, 12, r));
	r[0] = 8, r[1] = 4;
	verdict("grow-64", run_and_check(m, x, 64, r));
	r[0] = 2, r[1] = 1;
	verdict("shrink-4", run_and_check(m, x + 1, 4, r));
	for (int i = 0; i < 6; i++)
		x[i] = -1.0f;
	r[0] = 1, r[1] = 3;
	verdict("none-positive", run_and_check(m, x, 6, r));
	r[0] = 5, r[1] = 5;
	why = run_and_check(m, x, 6, r);
	verdict("bad-reshape", why && strstr(why, "node 'reshape'") &&
		strstr(collagec_last_error(m), "cannot reshape 6 elements") ? NULL
		: why ? why : "reshaping 6 elements to [5,10] succeeded");
	r[0] = 3, r[1] = 1;
	verdict("after-failure", run_and_check(m, x, 6, r));
	bind_checks(m, x);
	collagec_close(m);
	return failed;
}
