/*
 * decode.c - greedy decoding with a KV cache through the C API: the model
 * of testdata/gen_decoder.py (input_ids, position_ids, then past_key_L and
 * past_value_L per layer; logits, then present_key_L and present_value_L).
 *
 * usage: decode [-n TOKENS] [-t THREADS] [-b PAST] [-C] PROMPT-TOKEN...
 *
 * Runs the prompt at once, then one token a step, each the argmax of the
 * last logits, and prints the generated tokens on one line. The cache never
 * leaves the model's kernels. Where the model keeps its caches in place
 * (OUT.json caches[]), each past_* / present_* pair lives in one buffer of
 * MAX_TOKENS positions (collagec_bind_cache) and a step writes only its
 * new positions there. Otherwise, or with -C, each present_* is bound
 * (collagec_bind_output) to one of two buffers per cache that take turns,
 * and the next step reads it there as its past_*: the model copies the
 * cache into present each step, the program copies nothing.
 *
 * With -b PAST it times decode steps instead: the prompt is run, then
 * steps at a past length of PAST (the cache refilled to PAST each time, as
 * if PAST tokens had gone before), and it prints the median step in
 * milliseconds over 20 steps after 3 warm-up ones.
 *
 * Link it with a model compiled by collagec: cc decode.c -lmodel.
 */
#define _POSIX_C_SOURCE 200809L	/* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collagec.h"

#define MAX_TOKENS 4096

struct cache {
	float *buf[2];		/* the two buffers a cache takes turns in (in
				   place: buf[0] alone) */
	int64_t cap;		/* bytes each */
};

static collagec_model *m;
static int layers, kv_heads, head_dim, vocab;
static int in_place;		/* the caches bound with collagec_bind_cache */
static struct cache *caches;	/* 2 per layer: key, value */

static void die(const char *what, collagec_status s)
{
	fprintf(stderr, "decode: %s: %s (%s)\n", what, collagec_status_string(s),
		collagec_last_error(m));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The model's shape: from past_key_0's dims and logits's. */
static void shape_of(void)
{
	collagec_tensor_info in, out;
	collagec_status s;

	if (collagec_num_inputs(m) < 4 || (collagec_num_inputs(m) - 2) % 2)
		die("the model is not gen_decoder.py's", COLLAGEC_E_ARG);
	layers = (collagec_num_inputs(m) - 2) / 2;
	if ((s = collagec_input_info(m, 2, &in)) != COLLAGEC_OK ||
	    (s = collagec_output_info(m, 0, &out)) != COLLAGEC_OK)
		die("info", s);
	kv_heads = (int)in.dims[1];
	head_dim = (int)in.dims[3];
	vocab = (int)out.dims[2];
}

/*
 * One step: tokens ids[0..n) at positions pos.., past length past (cache
 * buffers turn), logits of the last token into *last. The new past length.
 */
static int64_t step(const int64_t *ids, int64_t n, int64_t pos, int64_t past, int turn,
		    const float **last)
{
	int64_t dims[4] = { 1, n, 0, 0 }, cdims[4] = { 1, kv_heads, past, head_dim };
	int64_t *posv = malloc(sizeof(int64_t) * (size_t)n);
	const int64_t *od;
	const void *lp;
	collagec_status s;
	int rank;

	for (int64_t i = 0; i < n; i++)
		posv[i] = pos + i;
	if ((s = collagec_set_input(m, 0, ids, dims, 2)) != COLLAGEC_OK ||
	    (s = collagec_set_input(m, 1, posv, dims, 2)) != COLLAGEC_OK)
		die("set_input", s);
	for (int c = 0; c < 2 * layers; c++) {
		if ((s = collagec_set_input(m, 2 + c, caches[c].buf[in_place ? 0 : turn], cdims,
					    4)) != COLLAGEC_OK)
			die("set_input (cache)", s);
		if (!in_place && (s = collagec_bind_output(m, 1 + c, caches[c].buf[!turn],
							   caches[c].cap)) != COLLAGEC_OK)
			die("bind_output", s);
	}
	if ((s = collagec_run(m)) != COLLAGEC_OK)
		die("run", s);
	if ((s = collagec_get_output(m, 0, &lp, &od, &rank)) != COLLAGEC_OK)
		die("get_output", s);
	*last = (const float *)lp + (n - 1) * vocab;
	free(posv);
	return past + n;
}

static int argmax(const float *v)
{
	int k = 0;

	for (int i = 1; i < vocab; i++)
		if (v[i] > v[k])
			k = i;
	return k;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int64_t prompt[MAX_TOKENS], np = 0, ntok = 16, bench = -1, past = 0;
	int threads = 0, turn = 0, copy = 0;
	const float *last;
	collagec_status s;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			ntok = atoll(argv[++i]);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			bench = atoll(argv[++i]);
		else if (!strcmp(argv[i], "-C"))
			copy = 1;
		else if (np < MAX_TOKENS)
			prompt[np++] = atoll(argv[i]);
	}
	if (!np || ntok < 0 || np + ntok > MAX_TOKENS || bench >= MAX_TOKENS) {
		fprintf(stderr, "usage: decode [-n TOKENS] [-t THREADS] [-b PAST] [-C] "
			"PROMPT-TOKEN...\n");
		return 2;
	}
	if ((s = collagec_open(&m)) != COLLAGEC_OK)
		die("open", s);
	if (threads > 0 && (s = collagec_set_threads(m, threads)) != COLLAGEC_OK)
		die("set_threads", s);
	shape_of();
	caches = calloc((size_t)(2 * layers), sizeof(*caches));
	for (int c = 0; c < 2 * layers; c++) {
		caches[c].cap = (int64_t)sizeof(float) * kv_heads * MAX_TOKENS * head_dim;
		for (int t = 0; t < 2; t++)
			if (!(caches[c].buf[t] = malloc((size_t)caches[c].cap)))
				die("malloc", COLLAGEC_E_ALLOC);
	}
	/* in place where the model can (all or none: its caches are every layer's) */
	in_place = !copy;
	for (int c = 0; c < 2 * layers && in_place; c++)
		in_place = collagec_bind_cache(m, 2 + c, 1 + c, caches[c].buf[0], caches[c].cap,
					       MAX_TOKENS) == COLLAGEC_OK;
	for (int c = 0; c < 2 * layers && !in_place; c++)
		collagec_bind_cache(m, 2 + c, 1 + c, NULL, 0, 0);
	past = step(prompt, np, 0, 0, turn, &last);
	turn = !turn;
	if (bench >= 0) {
		double t[23];
		int64_t tok = argmax(last);

		/* the cache's first PAST positions hold whatever: only the time counts */
		for (int c = 0; c < 2 * layers; c++)
			for (int b = 0; b < 2; b++)
				memset(caches[c].buf[b], 0, (size_t)caches[c].cap);
		for (int r = 0; r < 23; r++) {
			double t0 = now();

			step(&tok, 1, bench, bench, turn, &last);
			t[r] = now() - t0;
			turn = !turn;
		}
		qsort(t + 3, 20, sizeof(double), cmp_double);
		printf("%.4f\n", (t[12] + t[13]) / 2 * 1e3);
	} else {
		for (int64_t k = 0; k < ntok; k++) {
			int64_t tok = argmax(last);

			printf("%s%lld", k ? " " : "", (long long)tok);
			if (k + 1 < ntok) {
				past = step(&tok, 1, past, past, turn, &last);
				turn = !turn;
			}
		}
		printf("\n");
	}
	for (int c = 0; c < 2 * layers; c++)
		for (int t = 0; t < 2; t++)
			free(caches[c].buf[t]);
	free(caches);
	collagec_close(m);
	return 0;
}
