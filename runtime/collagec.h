/*
 * collagec.h - the C API of a model compiled by collagec.
 *
 * A compiled model is one shared object (weights embedded) exporting the
 * functions below. Link it (-l) or dlopen() it; no collagec is needed at run
 * time. A model handle is not thread-safe; open one handle per thread.
 *
 *	collagec_model *m;
 *	if (collagec_open(&m) != COLLAGEC_OK) ...
 *	int64_t dims[2] = { 1, 784 };
 *	collagec_set_input(m, 0, data, dims, 2);
 *	collagec_run(m);
 *	const void *y; const int64_t *ydims; int yrank;
 *	collagec_get_output(m, 0, &y, &ydims, &yrank);
 *	collagec_close(m);
 *
 * Ownership: strings and arrays returned are borrowed from the model and
 * valid until collagec_close() (output data: until the next collagec_run()).
 *
 * A model compiled with --prefix NAME exports NAME_open, NAME_run, ...
 * instead of collagec_*: include the OUT.h written beside it, which
 * declares them with this header's types.
 */
#ifndef COLLAGEC_H
#define COLLAGEC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLAGEC_ABI_VERSION 8

/*
 * Every failure also leaves a one-line detail in collagec_last_error(m).
 * A compiled model checks what it is given; bad input never crashes it.
 */
typedef enum collagec_status {
	COLLAGEC_OK = 0,
	COLLAGEC_E_ARG,		/* bad argument: input/output/kernel index out of
				   range, NULL handle, data, dims or info, rank
				   outside 0..8, wrong dtype (set_input_typed) */
	COLLAGEC_E_SHAPE,	/* input shape does not fit the model: wrong rank,
				   negative dim, dims whose byte size overflows,
				   (at run) a dim that differs from the model's, a
				   symbol bound to two values by two inputs, or a
				   tensor or symbol too large for these inputs */
	COLLAGEC_E_ALLOC,	/* out of memory */
	COLLAGEC_E_STATE,	/* run before every input was set; output read
				   before a run */
	COLLAGEC_E_RUNTIME,	/* a kernel or device failed */
	COLLAGEC_E_COUNT
} collagec_status;

/* Element types use ONNX TensorProto.DataType codes. */
typedef enum collagec_dtype {
	COLLAGEC_FLOAT = 1,
	COLLAGEC_UINT8 = 2,
	COLLAGEC_INT8 = 3,
	COLLAGEC_UINT16 = 4,
	COLLAGEC_INT16 = 5,
	COLLAGEC_INT32 = 6,
	COLLAGEC_INT64 = 7,
	COLLAGEC_STRING = 8,		/* const char *: NUL-terminated UTF-8 (below) */
	COLLAGEC_BOOL = 9,
	COLLAGEC_FLOAT16 = 10,		/* IEEE half: uint16_t bit patterns */
	COLLAGEC_DOUBLE = 11,
	COLLAGEC_UINT32 = 12,
	COLLAGEC_UINT64 = 13,
	COLLAGEC_BFLOAT16 = 16,		/* the top half of a float: uint16_t bits */
	/* the 8-bit floats: uint8_t bit patterns (ONNX's Cast has their formats) */
	COLLAGEC_FLOAT8E4M3FN = 17,
	COLLAGEC_FLOAT8E4M3FNUZ = 18,
	COLLAGEC_FLOAT8E5M2 = 19,
	COLLAGEC_FLOAT8E5M2FNUZ = 20,
	COLLAGEC_FLOAT8E8M0 = 24,
	/*
	 * The sub-byte types, packed as ONNX packs them (below): two a byte,
	 * the first element in the low four bits, for int4 (two's complement),
	 * uint4 and float4e2m1 (1 sign, 2 exponent, 1 mantissa bits); four a
	 * byte, the first in the lowest two bits, for int2 and uint2.
	 */
	COLLAGEC_UINT4 = 21,
	COLLAGEC_INT4 = 22,
	COLLAGEC_FLOAT4E2M1 = 23,
	COLLAGEC_UINT2 = 25,
	COLLAGEC_INT2 = 26
} collagec_dtype;

typedef struct collagec_model collagec_model;

typedef struct collagec_tensor_info {
	const char *name;		/* ONNX tensor name */
	int dtype;			/* collagec_dtype */
	int rank;
	const int64_t *dims;		/* -1 where the dim is symbolic */
	const char *const *dim_names;	/* per dim: symbol text ("N", "2*N") or NULL */
	int dynamic;			/* 1 when dims depend on tensor values (NonZero's
					   count, Reshape to a computed shape): known
					   only after a run, from collagec_get_output */
} collagec_tensor_info;

/*
 * A kernel of the model, in OUT.json order (partitions, then their kernels).
 * With op strategies a kernel has several variants (implementations under
 * conditions on symbolic dims, OUT.json's partitions[].kernels[].variants);
 * the fields below the line describe the last completed collagec_run of
 * this handle.
 */
typedef struct collagec_kernel_info {
	const char *name;		/* the generated function (OUT.json kernels[].name) */
	int partition;			/* OUT.json partitions[].id */
	int n_variants;			/* 1 when the choice was made at compile time */
	/* ---- the last run; -1 and NULL before the first one ---- */
	int variant;			/* index into the variants that ran */
	const char *implementation;	/* its implementation ("matmul.ikj", "generic") */
	const char *condition;		/* its condition ("M >= 16", "always") */
	int64_t time_ns;		/* its time when that run was profiled, else -1 */
} collagec_kernel_info;

/*
 * Loads the model: allocates its workspace (and the weights it packs at
 * open, which collagec_close frees). The handle's kernels use the thread
 * count the model was compiled for (compile --threads N, OUT.json's
 * compiler.threads); compiled without it, the physical cores this process
 * may run on (its affinity mask; SMT siblings count once) when it opens.
 */
collagec_status collagec_open(collagec_model **out);
void collagec_close(collagec_model *m);

int collagec_num_inputs(const collagec_model *m);
int collagec_num_outputs(const collagec_model *m);
collagec_status collagec_input_info(const collagec_model *m, int i, collagec_tensor_info *info);
collagec_status collagec_output_info(const collagec_model *m, int i, collagec_tensor_info *info);

/*
 * Borrows data (dense, row-major, the input's dtype) until the next run.
 * A failed call unsets input i, so a run without setting it again fails.
 *
 * String tensors (COLLAGEC_STRING): data is an array of `const char *`, one
 * NUL-terminated UTF-8 string per element (NULL reads as ""); the strings
 * are borrowed too, until the run ends. A string output's data is an array
 * of `const char *` whose strings the model owns, valid until the next
 * collagec_run() or collagec_close(), like every output's data.
 *
 * Sub-byte tensors (COLLAGEC_INT4, UINT4, FLOAT4E2M1, INT2, UINT2): data
 * holds them packed, ceil(n * bits / 8) bytes for n elements (the last
 * byte's unused high bits are ignored); collagec_set_input copies it
 * (unpacked) at once, so data need not outlive the call. Their outputs
 * come packed the same way (the unused bits 0); a buffer bound to one
 * (collagec_bind_output) must still hold one byte an element, and the
 * packed tensor is at its start after the run.
 */
collagec_status collagec_set_input(collagec_model *m, int i, const void *data,
				   const int64_t *dims, int rank);
/* The same, checking that dtype (a collagec_dtype) is the input's. */
collagec_status collagec_set_input_typed(collagec_model *m, int i, int dtype,
					 const void *data, const int64_t *dims, int rank);
collagec_status collagec_run(collagec_model *m);
collagec_status collagec_get_output(collagec_model *m, int i, const void **data,
				    const int64_t **dims, int *rank);
/*
 * Has the runs write output i into the caller's data (bytes long, aligned
 * as malloc aligns) instead of the model's own block, until bound again;
 * data NULL unbinds. A run whose output i takes more than bytes fails
 * (COLLAGEC_E_ARG). data must not overlap an input of the same run. A
 * decoder's present_key/present_value bound to one buffer and passed as the
 * next step's past_key/past_value from it (two buffers per cache, taking
 * turns) goes from token to token with no copy out of the model; the
 * model still copies the past into present each step, which
 * collagec_bind_cache avoids. Sequence and optional outputs cannot be bound.
 */
collagec_status collagec_bind_output(collagec_model *m, int i, void *data, int64_t bytes);

/*
 * Keeps a KV cache in place, so that a decode step writes only its new
 * positions. Input in (an Attention's past_key or past_value) and output
 * out (its present_key or present_value) must be a pair the model lists
 * (OUT.json caches[]; COLLAGEC_E_ARG otherwise). Both then live in data
 * (bytes long, aligned as malloc aligns), which holds capacity positions
 * of the sequence axis for every batch entry and head: element (b, h, t, d)
 * of [batch, heads, length, head_size] at ((b * heads + h) * capacity + t)
 * * head_size + d, whatever the length. Each run still sets input in, to
 * data itself (COLLAGEC_E_ARG otherwise) with dims [batch, heads, past,
 * head_size]: the first past positions. The run writes positions [past,
 * past + new) and nothing else of data, and output out is [batch, heads,
 * past + new, head_size] in the same layout (so its data is not dense).
 * A run whose total length exceeds capacity, or whose batch does not fit
 * bytes, fails (COLLAGEC_E_ARG). data NULL unbinds; collagec_bind_output
 * on out replaces the binding.
 */
collagec_status collagec_bind_cache(collagec_model *m, int in, int out, void *data,
				    int64_t bytes, int64_t capacity);

/*
 * A sequence output whose length is only known when the model runs (a
 * Loop decided at run time carries it; OUT.json outputs[].sequence) is
 * three ordinary outputs, NAME.data (its elements' data, one after the
 * other), NAME.dims (int64 [length, columns]: one row of dims per
 * element, a lower-rank element's row begins with -1s) and, for an
 * optional, NAME.present (bool). collagec_output_sequence says whether
 * output i is such a NAME.data: 1 for a sequence, 2 for an optional, 0 if
 * not. After a run, collagec_get_sequence_length gives its length (-1
 * for an absent optional) and collagec_get_sequence_element element k's
 * data and dims (borrowed: until the next run; the dims until the next
 * call), with i the NAME.data output.
 */
int collagec_output_sequence(const collagec_model *m, int i);
collagec_status collagec_get_sequence_length(collagec_model *m, int i, int64_t *length);
collagec_status collagec_get_sequence_element(collagec_model *m, int i, int64_t k,
					      const void **data, const int64_t **dims,
					      int *rank);

/*
 * Threads the kernels may use (>= 1), in place of collagec_open's default;
 * results are the same bits at every count on the c and opencl targets.
 */
collagec_status collagec_set_threads(collagec_model *m, int n);
/* Threads the kernels use: collagec_open's default or set_threads' (-1: NULL m). */
int collagec_get_threads(const collagec_model *m);

int collagec_num_kernels(const collagec_model *m);
collagec_status collagec_get_kernel_info(const collagec_model *m, int k,
					 collagec_kernel_info *info);
/*
 * Profiling (default off) times every kernel of the following runs with
 * CLOCK_MONOTONIC (collagec_kernel_info.time_ns); off, a run reads no clock.
 */
collagec_status collagec_set_profiling(collagec_model *m, int on);

const char *collagec_status_string(collagec_status s);
/* Detail of the last failure of this handle, or "". */
const char *collagec_last_error(const collagec_model *m);
/* The model's metadata (the JSON collagec wrote beside the .so). */
const char *collagec_metadata(void);
int collagec_abi_version(void);

/*
 * Called on a broken internal invariant of the generated code. The default
 * prints and aborts; a program may define its own (the model's is weak).
 */
void collagec_rt_abort(const char *msg);

#ifdef __cplusplus
}
#endif

#endif
