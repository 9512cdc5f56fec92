/*
 * cache_api.c - KV caches kept in place (collagec_bind_cache) on the decoder
 * of testdata/gen_decoder.py, driven by tests/decode.sh: a 64-token prompt
 * and one decode step run twice, first with dense caches the model copies
 * into present (the reference), then with every past/present pair bound to
 * one buffer of CAP positions. The in-place runs must give the same logits
 * and caches bit for bit, present's data must be the bound buffer (strided
 * by CAP), and the step must write nothing but its new position: the
 * prompt's positions are made read-only (mprotect) before it, so a copy of
 * the past would fault, and the positions after the new one keep their
 * fill. Then the misuses: a pair that is no cache, past set to another
 * buffer, a total longer than the capacity, a buffer too small for the
 * batch; a batch of two rows matches its dense run too; and unbinding
 * gives dense outputs back. One line per check:
 * "ok decode/cache-api/NAME" or "FAIL decode/cache-api/NAME: why"; exit
 * status 1 when any failed.
 *
 * usage: cache_api (linked with the decoder compiled by collagec)
 */
#define _DEFAULT_SOURCE		/* MAP_ANONYMOUS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collagec.h"

#define PROMPT 64		/* positions the prompt fills: one 4 KiB page a head */
#define CAP 256			/* positions a bound cache holds */
#define FILL 0xA5		/* the bytes of a cache's unused positions */

static int failed;
static collagec_model *m;
static int layers, heads, hd, vocab;

static void verdict(const char *name, const char *why)
{
	if (why) {
		printf("FAIL decode/cache-api/%s: %s\n", name, why);
		failed = 1;
	} else {
		printf("ok   decode/cache-api/%s\n", name);
	}
}

/*
 * Runs B rows of tokens ids[0..B * n) at positions past.. with caches
 * past_bufs (input 2 + c, dims [B, heads, past, hd]). The status.
 */
static collagec_status run_b(int64_t B, const int64_t *ids, int64_t n, int64_t past,
			     float **past_bufs)
{
	int64_t pos[2 * PROMPT], d2[2] = { B, n }, d4[4] = { B, heads, past, hd };
	collagec_status s;

	for (int64_t i = 0; i < B * n; i++)
		pos[i] = past + i % n;
	if ((s = collagec_set_input(m, 0, ids, d2, 2)) != COLLAGEC_OK ||
	    (s = collagec_set_input(m, 1, pos, d2, 2)) != COLLAGEC_OK)
		return s;
	for (int c = 0; c < 2 * layers; c++)
		if ((s = collagec_set_input(m, 2 + c, past_bufs[c], d4, 4)) != COLLAGEC_OK)
			return s;
	return collagec_run(m);
}

static collagec_status run(const int64_t *ids, int64_t n, int64_t past, float **past_bufs)
{
	return run_b(1, ids, n, past, past_bufs);
}

/* Output o's data and length along the sequence axis. */
static const float *output(int o, int64_t *len)
{
	const int64_t *dims;
	const void *p;
	int rank;

	if (collagec_get_output(m, o, &p, &dims, &rank) != COLLAGEC_OK)
		return NULL;
	if (len)
		*len = rank == 4 ? dims[2] : -1;
	return p;
}

/*
 * Whether cache c as bound (buf, CAP positions a head) holds ref's n
 * positions (dense [1, heads, n, hd]) and its positions [n, CAP) are FILL.
 */
static const char *cache_is(const float *buf, const float *ref, int64_t n)
{
	for (int h = 0; h < heads; h++) {
		const unsigned char *rest = (const unsigned char *)(buf + ((int64_t)h * CAP + n) * hd);

		if (memcmp(buf + (int64_t)h * CAP * hd, ref + (int64_t)h * n * hd,
			   sizeof(float) * (size_t)(n * hd)))
			return "a position differs from the dense run's";
		for (size_t k = 0; k < sizeof(float) * (size_t)((CAP - n) * hd); k++)
			if (rest[k] != FILL)
				return "a position after the new ones was written";
	}
	return NULL;
}

/*
 * A batch of two (rows that differ) through a prompt and a step, dense and
 * then in place: the same logits and caches (each (batch, head) block at
 * CAP positions' stride in the cache). NULL, or why not.
 */
static const char *batch_of_two(void)
{
	static char why[160];
	int64_t ids[2 * PROMPT], step[2] = { 7, 9 }, hn = (int64_t)heads * hd;
	size_t bytes = sizeof(float) * 2 * CAP * (size_t)hn;
	float **dense = calloc((size_t)(2 * layers), sizeof(float *));
	float **cache = calloc((size_t)(2 * layers), sizeof(float *));
	float *logits = malloc(sizeof(float) * 2 * (size_t)vocab);
	float **present = calloc((size_t)(2 * layers), sizeof(float *));
	const char *w = NULL;

	for (int i = 0; i < 2 * PROMPT; i++)
		ids[i] = (i * 53 + 5) % vocab;
	for (int c = 0; c < 2 * layers; c++) {
		collagec_bind_cache(m, 2 + c, 1 + c, NULL, 0, 0);
		dense[c] = calloc(1, sizeof(float) * 2 * PROMPT * (size_t)hn);
		present[c] = malloc(sizeof(float) * 2 * (PROMPT + 1) * (size_t)hn);
		cache[c] = malloc(bytes);
		memset(cache[c], FILL, bytes);
	}
	if (run_b(2, ids, PROMPT, 0, dense) != COLLAGEC_OK)
		return collagec_last_error(m);
	for (int c = 0; c < 2 * layers; c++)
		memcpy(dense[c], output(1 + c, NULL), sizeof(float) * 2 * PROMPT * (size_t)hn);
	if (run_b(2, step, 1, PROMPT, dense) != COLLAGEC_OK)
		return collagec_last_error(m);
	memcpy(logits, output(0, NULL), sizeof(float) * 2 * (size_t)vocab);
	for (int c = 0; c < 2 * layers; c++)
		memcpy(present[c], output(1 + c, NULL), sizeof(float) * 2 * (PROMPT + 1) * (size_t)hn);
	for (int c = 0; c < 2 * layers; c++)
		collagec_bind_cache(m, 2 + c, 1 + c, cache[c], (int64_t)bytes, CAP);
	if (run_b(2, ids, PROMPT, 0, cache) != COLLAGEC_OK ||
	    run_b(2, step, 1, PROMPT, cache) != COLLAGEC_OK)
		return collagec_last_error(m);
	if (memcmp(output(0, NULL), logits, sizeof(float) * 2 * (size_t)vocab))
		w = "the logits differ from the dense run's";
	for (int c = 0; c < 2 * layers && !w; c++)
		for (int b = 0; b < 2 && !w; b++)
			for (int h = 0; h < heads && !w; h++)
				if (memcmp(cache[c] + ((int64_t)b * heads + h) * CAP * hd,
					   present[c] + ((int64_t)b * heads + h) * (PROMPT + 1) * hd,
					   sizeof(float) * (PROMPT + 1) * (size_t)hd)) {
					snprintf(why, sizeof(why), "cache %d, batch %d, head %d differs "
						 "from the dense run's", c, b, h);
					w = why;
				}
	for (int c = 0; c < 2 * layers; c++) {
		collagec_bind_cache(m, 2 + c, 1 + c, NULL, 0, 0);
		free(dense[c]);
		free(present[c]);
		free(cache[c]);
	}
	free(dense);
	free(present);
	free(cache);
	free(logits);
	return w;
}

int main(void)
{
	int64_t prompt[PROMPT], tok = 7, len;
	float **dense, **next, **cache, *ref_logits, **ref_present;
	size_t cache_bytes, head_bytes, page = (size_t)sysconf(_SC_PAGESIZE);
	const float *p;
	collagec_tensor_info info;
	collagec_status s;
	char why[256];

	if (collagec_open(&m) != COLLAGEC_OK || collagec_input_info(m, 2, &info) != COLLAGEC_OK)
		return printf("FAIL decode/cache-api/open: %s\n", collagec_last_error(m)), 1;
	layers = (collagec_num_inputs(m) - 2) / 2;
	heads = (int)info.dims[1];
	hd = (int)info.dims[3];
	collagec_output_info(m, 0, &info);
	vocab = (int)info.dims[2];
	head_bytes = sizeof(float) * CAP * (size_t)hd;
	cache_bytes = head_bytes * (size_t)heads;
	for (int i = 0; i < PROMPT; i++)
		prompt[i] = (i * 37 + 11) % vocab;
	dense = calloc((size_t)(2 * layers), sizeof(*dense));
	next = calloc((size_t)(2 * layers), sizeof(*next));
	cache = calloc((size_t)(2 * layers), sizeof(*cache));
	ref_present = calloc((size_t)(2 * layers), sizeof(*ref_present));
	ref_logits = malloc(sizeof(float) * (size_t)vocab);

	/* the reference: dense caches, the model's own outputs */
	for (int c = 0; c < 2 * layers; c++) {
		dense[c] = calloc(1, sizeof(float));
		next[c] = malloc(sizeof(float) * PROMPT * (size_t)(heads * hd));
		ref_present[c] = malloc(sizeof(float) * (PROMPT + 1) * (size_t)(heads * hd));
	}
	if ((s = run(prompt, PROMPT, 0, dense)) != COLLAGEC_OK)
		return printf("FAIL decode/cache-api/reference: %s\n", collagec_last_error(m)), 1;
	for (int c = 0; c < 2 * layers; c++)
		memcpy(next[c], output(1 + c, NULL), sizeof(float) * PROMPT * (size_t)(heads * hd));
	if ((s = run(&tok, 1, PROMPT, next)) != COLLAGEC_OK)
		return printf("FAIL decode/cache-api/reference: %s\n", collagec_last_error(m)), 1;
	memcpy(ref_logits, output(0, NULL), sizeof(float) * (size_t)vocab);
	for (int c = 0; c < 2 * layers; c++)
		memcpy(ref_present[c], output(1 + c, NULL),
		       sizeof(float) * (PROMPT + 1) * (size_t)(heads * hd));

	/* in place: one mapping per cache, its unused positions FILL */
	for (int c = 0; c < 2 * layers; c++) {
		cache[c] = mmap(NULL, cache_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (cache[c] == MAP_FAILED)
			return printf("FAIL decode/cache-api/mmap\n"), 1;
		memset(cache[c], FILL, cache_bytes);
		if ((s = collagec_bind_cache(m, 2 + c, 1 + c, cache[c], (int64_t)cache_bytes,
					     CAP)) != COLLAGEC_OK)
			return printf("FAIL decode/cache-api/bind: %s\n", collagec_last_error(m)), 1;
	}
	s = run(prompt, PROMPT, 0, cache);
	why[0] = 0;
	for (int c = 0; c < 2 * layers && s == COLLAGEC_OK && !why[0]; c++) {
		const char *w;

		p = output(1 + c, &len);
		if (p != cache[c] || len != PROMPT)
			snprintf(why, sizeof(why), "present %d is not the bound buffer, %lld long",
				 c, (long long)len);
		else if ((w = cache_is(cache[c], next[c], PROMPT)))
			snprintf(why, sizeof(why), "cache %d: %s", c, w);
	}
	verdict("prompt-written-in-place", s != COLLAGEC_OK ? collagec_last_error(m)
			: why[0] ? why : NULL);

	/* the prompt's positions read-only: a copy of the past would fault */
	if (PROMPT * sizeof(float) * (size_t)hd % page || head_bytes % page) {
		verdict("step-writes-only-its-position", "the page size does not divide a head's "
			"prompt positions");
	} else {
		for (int c = 0; c < 2 * layers; c++)
			for (int h = 0; h < heads; h++)
				mprotect((char *)cache[c] + (size_t)h * head_bytes,
					 PROMPT * sizeof(float) * (size_t)hd, PROT_READ);
		s = run(&tok, 1, PROMPT, cache);
		why[0] = 0;
		if (s == COLLAGEC_OK && memcmp(output(0, NULL), ref_logits,
					       sizeof(float) * (size_t)vocab))
			snprintf(why, sizeof(why), "the logits differ from the dense run's");
		for (int c = 0; c < 2 * layers && s == COLLAGEC_OK && !why[0]; c++) {
			const char *w;

			p = output(1 + c, &len);
			if (p != cache[c] || len != PROMPT + 1)
				snprintf(why, sizeof(why), "present %d is not the bound buffer, "
					 "%lld long", c, (long long)len);
			else if ((w = cache_is(cache[c], ref_present[c], PROMPT + 1)))
				snprintf(why, sizeof(why), "cache %d: %s", c, w);
		}
		verdict("step-writes-only-its-position", s != COLLAGEC_OK ? collagec_last_error(m)
				: why[0] ? why : NULL);
		for (int c = 0; c < 2 * layers; c++)
			mprotect(cache[c], cache_bytes, PROT_READ | PROT_WRITE);
	}

	/* misuses */
	s = collagec_bind_cache(m, 2, 2, cache[0], (int64_t)cache_bytes, CAP);
	verdict("not-a-pair", s == COLLAGEC_E_ARG && strstr(collagec_last_error(m), "not a cache")
		? NULL : "binding past_key_0 to present_value_0 did not fail");
	s = collagec_bind_cache(m, 0, 0, cache[0], (int64_t)cache_bytes, CAP);
	verdict("not-a-cache", s == COLLAGEC_E_ARG ? NULL : "binding input_ids to logits did not fail");
	{
		float *other[64];

		for (int c = 0; c < 2 * layers && c < 64; c++)
			other[c] = c ? cache[c] : next[0];
		s = run(&tok, 1, 1, other);
		verdict("past-elsewhere", s == COLLAGEC_E_ARG &&
			strstr(collagec_last_error(m), "is not the buffer of the cache")
			? NULL : "a past outside its cache's buffer ran");
	}
	s = run(&tok, 1, CAP, cache);
	verdict("past-capacity", s == COLLAGEC_E_ARG &&
		strstr(collagec_last_error(m), "positions long")
		? NULL : "a total longer than the capacity ran");
	collagec_bind_cache(m, 2, 1, cache[0], (int64_t)cache_bytes - 4, CAP);
	s = run(&tok, 1, PROMPT, cache);
	verdict("buffer-too-small", s == COLLAGEC_E_ARG &&
		strstr(collagec_last_error(m), "its buffer holds")
		? NULL : "a cache larger than its buffer ran");

	verdict("batch-of-two", batch_of_two());

	/* unbound again: dense outputs of the model's own */
	for (int c = 0; c < 2 * layers; c++)
		collagec_bind_cache(m, 2 + c, 1 + c, NULL, 0, 0);
	s = run(&tok, 1, PROMPT, next);
	p = s == COLLAGEC_OK ? output(1, &len) : NULL;
	verdict("unbound", !p ? collagec_last_error(m)
		: p == cache[0] || len != PROMPT + 1 ||
		  memcmp(output(0, NULL), ref_logits, sizeof(float) * (size_t)vocab) ||
		  memcmp(p, ref_present[0], sizeof(float) * (PROMPT + 1) * (size_t)(heads * hd))
		? "not the dense run's outputs" : NULL);
	collagec_close(m);
	return failed;
}
