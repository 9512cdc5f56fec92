/*
 * sequences.c - a sequence output whose length is only known at run time,
 * through the C API (tests/runtime.sh). Linked against
 * testdata/sequence/loop_runtime_seq/model.onnx compiled: inputs x [5] and
 * m (int64), outputs r.data, r.dims (the sequence x[0:1], ..., x[0:m]),
 * acc and n. Prints "ok   runtime/sequence/NAME" or "FAIL ...: why" per check.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collagec.h"

static int failed;

static void result(const char *name, int ok, const char *why)
{
	if (ok) {
		printf("ok   runtime/sequence/%s\n", name);
		return;
	}
	printf("FAIL runtime/sequence/%s: %s\n", name, why);
	failed++;
}

/* check NAME: the call gave want, and the handle's last error contains text */
static void check(const char *name, collagec_model *m, collagec_status got,
		  collagec_status want, const char *text)
{
	char why[256];

	snprintf(why, sizeof(why), "status %d, expected %d; error '%s'", got, want,
		 collagec_last_error(m));
	result(name, got == want && (!text || strstr(collagec_last_error(m), text)), why);
}

static const float x[5] = { 1, 2, 3, 4, 5 };
static const int64_t d5[1] = { 5 };

static void run(collagec_model *m, int64_t trips)
{
	static int64_t t;

	t = trips;
	collagec_set_input(m, 0, x, d5, 1);
	collagec_set_input(m, 1, &t, NULL, 0);
	check("run", m, collagec_run(m), COLLAGEC_OK, NULL);
}

int main(void)
{
	collagec_model *m;
	const float *data;
	const int64_t *dims;
	int64_t n = -2;
	int rank = -1;

	if (collagec_open(&m) != COLLAGEC_OK) {
		printf("FAIL runtime/sequence/open: %s\n", collagec_last_error(NULL));
		return 1;
	}
	result("kinds", collagec_output_sequence(m, 0) == 1 &&
	       collagec_output_sequence(m, 1) == 0 && collagec_output_sequence(m, 2) == 0 &&
	       collagec_output_sequence(m, -1) == 0 && collagec_output_sequence(m, 9) == 0 &&
	       collagec_output_sequence(NULL, 0) == 0, "collagec_output_sequence");
	check("length-before-run", m, collagec_get_sequence_length(m, 0, &n), COLLAGEC_E_STATE,
	      "the model has not run");
	run(m, 3);
	check("length", m, collagec_get_sequence_length(m, 0, &n), COLLAGEC_OK, NULL);
	result("length-value", n == 3, "length is not 3");
	check("element", m, collagec_get_sequence_element(m, 0, 1, (const void **)&data, &dims,
							  &rank), COLLAGEC_OK, NULL);
	result("element-value", rank == 1 && dims[0] == 2 && data[0] == 1 && data[1] == 2,
	       "element 1 is not [1, 2]");
	check("element-last", m, collagec_get_sequence_element(m, 0, 2, (const void **)&data,
							       &dims, &rank), COLLAGEC_OK, NULL);
	result("element-last-value", rank == 1 && dims[0] == 3 && data[2] == 3,
	       "element 2 is not [1, 2, 3]");
	check("element-range", m, collagec_get_sequence_element(m, 0, 3, NULL, NULL, NULL),
	      COLLAGEC_E_ARG, "element 3 out of range (the sequence has 3)");
	check("not-a-sequence", m, collagec_get_sequence_length(m, 2, &n), COLLAGEC_E_ARG,
	      "output 2 is not a sequence of run-time length");
	check("length-null", m, collagec_get_sequence_length(m, 0, NULL), COLLAGEC_E_ARG,
	      "length is NULL");
	check("null-handle", NULL, collagec_get_sequence_length(NULL, 0, &n), COLLAGEC_E_ARG,
	      NULL);
	run(m, 0);
	check("empty", m, collagec_get_sequence_length(m, 0, &n), COLLAGEC_OK, NULL);
	result("empty-value", n == 0, "length is not 0");
	collagec_close(m);
	return failed ? 1 : 0;
}
