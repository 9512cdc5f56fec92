/* infer.c - run a compiled model from C: cc infer.c ./mlp.so -o infer */
#include <stdio.h>
#include "collagec.h"

int main(void)
{
	static float x[784];
	int64_t dims[2] = { 1, 784 };
	const float *y;
	const int64_t *ydims;
	int rank;
	collagec_model *m;

	if (collagec_open(&m) != COLLAGEC_OK)
		return 1;
	for (int i = 0; i < 784; i++)
		x[i] = (float)(i % 10) / 10.0f;
	collagec_set_input(m, 0, x, dims, 2);
	if (collagec_run(m) != COLLAGEC_OK)
		return fprintf(stderr, "%s\n", collagec_last_error(m)), 1;
	collagec_get_output(m, 0, (const void **)&y, &ydims, &rank);
	printf("[%lld,%lld] first %.4f\n", (long long)ydims[0], (long long)ydims[1], y[0]);
	collagec_close(m);
	return 0;
}
