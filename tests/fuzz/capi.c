/*
 * capi.c - the compiled model's C API driven by bytes: a fixed model
 * (testdata/runtime/make_model.py: symbolic dims shared between inputs,
 * an outer product, a Concat with a derived dim), linked in as an archive,
 * receives whatever calls the input spells out: set_input (typed or not)
 * with any index, rank, dims (negative, huge, zero) and dtype, NULL data,
 * runs, output reads (every element read back, so a wrong dims answer is a
 * sanitizer report), info and kernel queries, thread counts, profiling.
 * Every call must return a documented status; nothing may crash or leak.
 * Buffers always match the dims they are passed with: the API cannot
 * check a caller's buffer size, so that is the caller's contract.
 */
#include "../../runtime/collagec.h"
#include "fuzz.h"

#include <stdbool.h>
#include <stdlib.h>

#define MAX_IN 8

struct reader {
	const uint8_t *p, *end;
};

static int next(struct reader *r)
{
	return r->p < r->end ? *r->p++ : 0;
}

/* A dim: small mostly, sometimes negative or past any buffer. */
static int64_t next_dim(struct reader *r)
{
	int b = next(r);

	if (b == 0xff)
		return INT64_MAX / 3;
	if (b >= 0xf0)
		return -(int64_t)(b & 15) - 1;
	return b % 65;
}

static void check_status(collagec_status s)
{
	if ((int)s < 0 || s >= COLLAGEC_E_COUNT)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, data + size };
	collagec_model *m = NULL;
	void *bufs[MAX_IN] = { 0 };
	int n_in, n_out;

	if (collagec_open(&m) != COLLAGEC_OK)
		abort();
	n_in = collagec_num_inputs(m);
	n_out = collagec_num_outputs(m);
	if (n_in > MAX_IN)
		abort();
	while (r.p < r.end) {
		int op = next(&r) % 8, i = next(&r) % (n_in + 2) - 1;
		collagec_tensor_info info;
		collagec_kernel_info ki;

		switch (op) {
		case 0:
		case 1: {
			int rank = next(&r) % 10, dtype = next(&r) % 16;
			int64_t dims[10], numel = 1;
			bool null = next(&r) & 1, fits = true;
			void *buf = NULL;

			for (int d = 0; d < rank; d++) {
				dims[d] = next_dim(&r);
				if (dims[d] < 0 || dims[d] > 4096 || (numel *= dims[d]) > 65536)
					fits = false;
			}
			/* data sized for what the dims claim, or NULL when they claim too much */
			if (!null && fits) {
				buf = calloc((size_t)numel + 1, 8);
				if (!buf)
					return 0;
			}
			check_status(op ? collagec_set_input_typed(m, i, dtype, buf, dims, rank)
				     : collagec_set_input(m, i, buf, dims, rank));
			if (i >= 0 && i < n_in) {
				free(bufs[i]);
				bufs[i] = buf;
			} else {
				free(buf);
			}
			break;
		}
		case 2:
			check_status(collagec_run(m));
			break;
		case 3: {
			const void *out;
			const int64_t *dims;
			int rank;
			collagec_status s = collagec_get_output(m, i, &out, &dims, &rank);

			check_status(s);
			if (s == COLLAGEC_OK) {
				int64_t numel = 1;
				volatile uint8_t sum = 0;

				for (int d = 0; d < rank; d++)
					numel *= dims[d];
				for (int64_t k = 0; k < numel * 4; k++)
					sum += ((const uint8_t *)out)[k];
			}
			break;
		}
		case 4:
			check_status(collagec_set_threads(m, next(&r) % 4 - 1));
			if (collagec_get_threads(m) < 1)
				abort();	/* a refused count leaves the last good one */
			break;
		case 5:
			check_status(i % 2 ? collagec_input_info(m, i, &info)
				     : collagec_output_info(m, i % (n_out + 1), &info));
			break;
		case 6:
			check_status(collagec_get_kernel_info(m, i, &ki));
			break;
		case 7:
			check_status(collagec_set_profiling(m, next(&r) & 1));
			break;
		}
		(void)collagec_last_error(m);
	}
	collagec_close(m);
	for (int k = 0; k < MAX_IN; k++)
		free(bufs[k]);
	return 0;
}
