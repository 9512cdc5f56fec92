/*
 * opencl_handles.c - drives a model compiled for "opencl,c" from
 * make_opencl_models.py's act_chain (y = tanh(sigmoid(relu(x))), x [4,33])
 * through the C API the way programs do: two handles sharing the OpenCL
 * program (opened together, closed one at a time, the survivor still runs),
 * a reopen after the last close (the program is built again), and two
 * threads running their own handles at once. Prints "ok" or what failed.
 *
 *	cc -Iruntime opencl_handles.c ./act_chain.so -lm -pthread -o handles
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "collagec.h"

#define N 132

static float x[N];

static int check(collagec_model *m, const char *what)
{
	int64_t dims[2] = { 4, 33 };
	const float *y;
	const int64_t *yd;
	int rank;

	if (collagec_set_input(m, 0, x, dims, 2) != COLLAGEC_OK || collagec_run(m) != COLLAGEC_OK ||
	    collagec_get_output(m, 0, (const void **)&y, &yd, &rank) != COLLAGEC_OK) {
		printf("%s: %s\n", what, collagec_last_error(m));
		return -1;
	}
	for (int i = 0; i < N; i++) {
		float want = tanhf(1.0f / (1.0f + expf(-(x[i] > 0 ? x[i] : 0.0f))));

		if (fabsf(y[i] - want) > 1e-5f) {
			printf("%s: y[%d] = %g, expected %g\n", what, i, y[i], want);
			return -1;
		}
	}
	return 0;
}

static void *worker(void *arg)
{
	collagec_model *m;
	int rc = 0;

	if (collagec_open(&m) != COLLAGEC_OK) {
		printf("thread open: %s\n", collagec_last_error(NULL));
		return arg;
	}
	for (int r = 0; r < 50 && rc == 0; r++)
		rc = check(m, "thread run");
	collagec_close(m);
	return rc ? arg : NULL;
}

int main(void)
{
	collagec_model *a, *b;
	pthread_t t[2];
	static int tag[2];
	void *res[2];

	for (int i = 0; i < N; i++)
		x[i] = (float)((i * 37) % 23 - 11) / 4.0f;
	if (collagec_open(&a) != COLLAGEC_OK || collagec_open(&b) != COLLAGEC_OK) {
		printf("open: %s\n", collagec_last_error(NULL));
		return 1;
	}
	if (check(a, "first handle") || check(b, "second handle"))
		return 1;
	collagec_close(a);
	if (check(b, "second handle after the first closed"))
		return 1;
	collagec_close(b);
	if (collagec_open(&a) != COLLAGEC_OK) {
		printf("reopen: %s\n", collagec_last_error(NULL));
		return 1;
	}
	if (check(a, "reopened handle"))
		return 1;
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, &tag[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &res[i]);
	collagec_close(a);
	if (res[0] || res[1])
		return 1;
	printf("ok\n");
	return 0;
}
