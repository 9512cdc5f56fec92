/*
 * scale_app.c - a compiled model from a CMake project: libscale.so computes
 * y = 2 * x + 1 for x float32 [N, 4]; here N = 2, x = 0..7.
 */
#include <stdio.h>

#include "collagec.h"

int main(void)
{
	float x[8];
	const int64_t dims[2] = { 2, 4 };
	const float *y;
	const int64_t *ydims;
	int rank;
	collagec_model *m;

	for (int i = 0; i < 8; i++)
		x[i] = (float)i;
	if (collagec_open(&m) != COLLAGEC_OK)
		return fprintf(stderr, "cannot open the model: %s\n", collagec_last_error(NULL)), 1;
	if (collagec_set_input_typed(m, 0, COLLAGEC_FLOAT, x, dims, 2) != COLLAGEC_OK ||
	    collagec_run(m) != COLLAGEC_OK ||
	    collagec_get_output(m, 0, (const void **)&y, &ydims, &rank) != COLLAGEC_OK)
		return fprintf(stderr, "%s\n", collagec_last_error(m)), 1;
	printf("y [%lld,%lld]:", (long long)ydims[0], (long long)ydims[1]);
	for (int i = 0; i < ydims[0] * ydims[1]; i++)
		printf(" %g", y[i]);
	printf("\n");
	collagec_close(m);
	return 0;
}
