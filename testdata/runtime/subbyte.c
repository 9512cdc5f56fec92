/*
 * subbyte.c - int4 tensors through the C API (tests/runtime.sh), packed as
 * collagec.h says: two elements a byte, the first in the low four bits.
 * Linked against testdata/subbyte/good/moves_int4's model: input x int4
 * [3, 5]; outputs t = Transpose(x) int4 [5, 3], y = t flattened through
 * Reshape, Unsqueeze, Squeeze, Flatten and Identity, int4 [1, 15], and
 * n = Shape(x). 15 elements: the eighth byte's high four bits are unused.
 * Checks the info's dtypes, the outputs' packed bytes against a transpose
 * computed here for two runs with different values (set_input copies the
 * packed input, so the caller's buffer is clobbered between the call and
 * the run), and a buffer bound to t. Prints "ok   runtime/subbyte-NAME" or
 * "FAIL runtime/subbyte-NAME: why".
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collagec.h"

static int failed;

static void result(const char *name, const char *why)
{
	if (why) {
		printf("FAIL runtime/subbyte-%s: %s\n", name, why);
		failed++;
	} else {
		printf("ok   runtime/subbyte-%s\n", name);
	}
}

/* Element i of the packed int4 tensor p, sign-extended. */
static int nibble(const uint8_t *p, int i)
{
	int v = (p[i / 2] >> (i % 2 * 4)) & 15;

	return (v ^ 8) - 8;
}

static void set_nibble(uint8_t *p, int i, int v)
{
	p[i / 2] = (uint8_t)((p[i / 2] & ~(15 << (i % 2 * 4))) | ((v & 15) << (i % 2 * 4)));
}

/* Output i packed as the transpose of x [3, 5] would be, unused bits 0? NULL, or why. */
static const char *is_transpose(collagec_model *m, int i, const uint8_t *x, int rank)
{
	static char why[160];
	const void *data;
	const int64_t *dims;
	int r;

	if (collagec_get_output(m, i, &data, &dims, &r) != COLLAGEC_OK)
		return collagec_last_error(m);
	if (r != rank)
		return "wrong rank";
	for (int k = 0; k < 15; k++) {
		int want = nibble(x, k % 3 * 5 + k / 3), got = nibble(data, k);

		if (got != want) {
			snprintf(why, sizeof(why), "element %d is %d, expected %d", k, got, want);
			return why;
		}
	}
	if (((const uint8_t *)data)[7] >> 4)
		return "the unused high bits of the last byte are not 0";
	return NULL;
}

int main(void)
{
	collagec_model *m = NULL;
	collagec_tensor_info info;
	int64_t dims[2] = { 3, 5 };
	uint8_t x[8], caller[8], bound[16];

	if (collagec_open(&m) != COLLAGEC_OK) {
		result("open", "collagec_open failed");
		return 1;
	}
	if (collagec_input_info(m, 0, &info) != COLLAGEC_OK || info.dtype != COLLAGEC_INT4 ||
	    collagec_output_info(m, 0, &info) != COLLAGEC_OK || info.dtype != COLLAGEC_INT4)
		result("info", "x and t are not COLLAGEC_INT4");
	else
		result("info", NULL);
	for (int run = 0; run < 2; run++) {
		char name[32];
		const char *why;

		memset(x, 0, sizeof(x));
		for (int k = 0; k < 15; k++)
			set_nibble(x, k, run ? 7 - k : k - 8);	/* -8..6, then 7..-7 */
		memcpy(caller, x, sizeof(x));
		if (collagec_set_input_typed(m, 0, COLLAGEC_INT4, caller, dims, 2) != COLLAGEC_OK) {
			result("set-input", collagec_last_error(m));
			break;
		}
		memset(caller, 0x5a, sizeof(caller));	/* copied at set_input */
		if (collagec_run(m) != COLLAGEC_OK) {
			result("run", collagec_last_error(m));
			break;
		}
		snprintf(name, sizeof(name), "transpose-run%d", run);
		result(name, is_transpose(m, 0, x, 2));
		snprintf(name, sizeof(name), "moved-run%d", run);
		why = is_transpose(m, 1, x, 2);
		result(name, why);
	}
	/* a bound buffer holds one byte an element; the packed tensor is at its start */
	memset(bound, 0xff, sizeof(bound));
	if (collagec_bind_output(m, 0, bound, sizeof(bound)) != COLLAGEC_OK ||
	    collagec_set_input(m, 0, x, dims, 2) != COLLAGEC_OK || collagec_run(m) != COLLAGEC_OK)
		result("bound", collagec_last_error(m));
	else
		result("bound", is_transpose(m, 0, x, 2) ? is_transpose(m, 0, x, 2)
			: nibble(bound, 1) != nibble(x, 5) ? "the packed output is not at the start "
			"of the bound buffer" : NULL);
	collagec_close(m);
	return failed ? 1 : 0;
}
