/*
 * two_models.c - two compiled models in one program: scale.so (compiled
 * with --prefix scale) and project.so (--prefix project) export scale_open,
 * project_open and so on, declared by the scale.h and project.h collagec
 * writes beside them. y = project(scale(x)) for x = 0..7 as [2, 4].
 */
#include <stdio.h>

#include "project.h"
#include "scale.h"

int main(void)
{
	float x[8];
	const int64_t dims[2] = { 2, 4 };
	const float *t, *y;
	const int64_t *tdims, *ydims;
	int trank, yrank;
	collagec_model *a, *b;

	for (int i = 0; i < 8; i++)
		x[i] = (float)i;
	if (scale_open(&a) != COLLAGEC_OK || project_open(&b) != COLLAGEC_OK)
		return fprintf(stderr, "cannot open the models\n"), 1;
	if (scale_set_input_typed(a, 0, COLLAGEC_FLOAT, x, dims, 2) != COLLAGEC_OK ||
	    scale_run(a) != COLLAGEC_OK ||
	    scale_get_output(a, 0, (const void **)&t, &tdims, &trank) != COLLAGEC_OK)
		return fprintf(stderr, "scale: %s\n", scale_last_error(a)), 1;
	if (project_set_input_typed(b, 0, COLLAGEC_FLOAT, t, tdims, trank) != COLLAGEC_OK ||
	    project_run(b) != COLLAGEC_OK ||
	    project_get_output(b, 0, (const void **)&y, &ydims, &yrank) != COLLAGEC_OK)
		return fprintf(stderr, "project: %s\n", project_last_error(b)), 1;
	printf("y [%lld,%lld]:", (long long)ydims[0], (long long)ydims[1]);
	for (int i = 0; i < ydims[0] * ydims[1]; i++)
		printf(" %g", y[i]);
	printf("\n");
	project_close(b);
	scale_close(a);
	return 0;
}
