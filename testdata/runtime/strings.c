/*
 * strings.c - string tensors through the C API (tests/runtime.sh). Linked
 * against strings.so (testdata/runtime/make_strings.py): inputs s [N]
 * (string) and x [2] (float); outputs num = Cast(s) to float, up =
 * StringNormalizer(s) (UPPER, stopword "skip"), txt = x as strings (CastLike
 * with a string initializer), norm = txt lowercased. Checks the info of
 * string inputs and outputs, the values of several runs (the pool of strings
 * is reused), NULL elements read as "", a wrong dtype and the empty-output
 * rule. Prints "ok   runtime/strings-NAME" or "FAIL runtime/strings-NAME: why".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collagec.h"

static int failed;

static int run = -1;	/* the run under test, or -1 */

static void result(const char *name, const char *why)
{
	char full[64];

	snprintf(full, sizeof(full), run < 0 ? "%s" : "%s-run%d", name, run);
	if (why) {
		printf("FAIL runtime/strings-%s: %s\n", full, why);
		failed++;
	} else {
		printf("ok   runtime/strings-%s\n", full);
	}
}

/* Output i as n strings equal to want[]? NULL, or why not (static). */
static const char *strings_are(collagec_model *m, int i, const char *const *want, int64_t n)
{
	static char why[256];
	const void *data;
	const int64_t *dims;
	int rank;

	if (collagec_get_output(m, i, &data, &dims, &rank) != COLLAGEC_OK)
		return collagec_last_error(m);
	if (rank != 1 || dims[0] != n) {
		snprintf(why, sizeof(why), "rank %d dim %lld, expected [%lld]", rank,
			 rank ? (long long)dims[0] : -1LL, (long long)n);
		return why;
	}
	for (int64_t k = 0; k < n; k++)
		if (strcmp(((const char *const *)data)[k], want[k])) {
			snprintf(why, sizeof(why), "element %lld is \"%s\", expected \"%s\"",
				 (long long)k, ((const char *const *)data)[k], want[k]);
			return why;
		}
	return NULL;
}

int main(void)
{
	collagec_model *m;
	collagec_tensor_info info;
	const char *s1[4] = { "1.5", "skip", "-INF", "Ab\xc3\xa9" };
	const char *s2[3] = { "SKIP", NULL, "nan" };
	const char *up1[3] = { "1.5", "-INF", "AB\xc3\xa9" }, *up2[2] = { "", "NAN" };
	const char *txt[2] = { "0.1", "-3.0" }, *norm[2] = { "0.1", "-3.0" };
	const char *none[1] = { "" }, *only[2] = { "skip", "Skip" };
	float x[2] = { 0.1f, -3.0f };
	const int64_t n4 = 4, n3 = 3, n2 = 2;
	const void *data;
	const float *num;

	if (collagec_open(&m) != COLLAGEC_OK) {
		printf("FAIL runtime/strings-open: %s\n", collagec_last_error(NULL));
		return 1;
	}
	result("input-info", collagec_input_info(m, 0, &info) == COLLAGEC_OK &&
	       info.dtype == COLLAGEC_STRING ? NULL : "input 0 is not COLLAGEC_STRING");
	result("output-info", collagec_output_info(m, 1, &info) == COLLAGEC_OK &&
	       info.dtype == COLLAGEC_STRING && info.dynamic ? NULL
	       : "output 'up' is not a dynamic COLLAGEC_STRING");
	result("wrong-dtype", collagec_set_input_typed(m, 0, COLLAGEC_FLOAT, x, &n2, 1) ==
	       COLLAGEC_E_ARG ? NULL : "a float for a string input was taken");
	for (run = 0; run < 3; run++) {
		const char *why;

		if (collagec_set_input_typed(m, 0, COLLAGEC_STRING, run == 1 ? s2 : s1,
					     run == 1 ? &n3 : &n4, 1) != COLLAGEC_OK ||
		    collagec_set_input(m, 1, x, &n2, 1) != COLLAGEC_OK ||
		    collagec_run(m) != COLLAGEC_OK) {
			result("run", collagec_last_error(m));
			continue;
		}
		collagec_get_output(m, 0, &data, NULL, NULL);
		num = data;
		why = run == 1 ? (isnan(num[2]) && num[1] == 0 ? NULL : "nan or NULL misread")
			: num[0] == 1.5f && isinf(num[2]) && num[2] < 0 ? NULL : "1.5 or -INF misread";
		result(run == 1 ? "cast-from-string-null" : "cast-from-string", why);
		result(run == 1 ? "normalizer-null" : "normalizer",
		       run == 1 ? strings_are(m, 1, up2, 2) : strings_are(m, 1, up1, 3));
		result("cast-to-string", strings_are(m, 2, txt, 2));
		result("intermediate", strings_are(m, 3, norm, 2));
	}
	run = -1;
	if (collagec_set_input(m, 0, only, &n2, 1) == COLLAGEC_OK && collagec_run(m) == COLLAGEC_OK)
		result("empty-output", strings_are(m, 1, none, 1));
	else
		result("empty-output", collagec_last_error(m));
	collagec_close(m);
	return failed ? 1 : 0;
}
