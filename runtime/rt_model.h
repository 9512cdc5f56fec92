/*
 * rt_model.h - the tables a generated model.c defines for the runtime
 * (rt_model.c), and what the two halves of every compiled model share.
 * Internal to the generated code; not installed.
 *
 * The runtime does not depend on the model: rt.c (#include "rt_model.h",
 * "rt_model.c") compiles to one rt.o per compiler and flags, which the
 * kernel-object cache keeps and every model links (core/emit/link.c). The
 * generator emits model.c in this order: #include "rt_model.h", the
 * kernels, the tables, then rt_desc, which points the runtime at them, and
 * the API's functions, each a call of the runtime's rt_api_NAME under the
 * model's names (--prefix: core/emit/prefix.c):
 *   rt_values[] rt_info_dims[][] (-1 where symbolic), rt_pick_KERNEL()
 *   per kernel with run-time dispatch, rt_variants[] rt_steps[] rt_args[]
 *   rt_inputs[] rt_outputs[] rt_seq_out[] (when an output is a sequence)
 *   rt_sym_names[], rt_derived[] (sym -1 at the end), rt_checks[] (text
 *   NULL at the end), rt_shapes[] (step -1 at the end) rt_sym_late[] (per
 *   symbol: bound by them), rt_late[] (the values with data-dependent dims
 *   by first step, -1 at the end), rt_inits[] (NULL-terminated) and
 *   rt_finis[] (parallel to rt_inits; NULL where an init has no fini),
 *   rt_caches[] (in -1 at the end),
 *   rt_loops[] (run-time loops, with their bodies' API declared), rt_packs[]
 *   (constants made at open), rt_weights (the embedded blob) and
 *   rt_metadata_json.
 *
 *	const struct rt_desc rt_desc = { .n_values = 3, ..., .values = rt_values, ... };
 *	RT_API int collagec_num_inputs(const collagec_model *m)
 *	{ return rt_api_num_inputs(m); }
 */
#ifndef COLLAGEC_RT_MODEL_H
#define COLLAGEC_RT_MODEL_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collagec.h"
#include "rt_half.h"
#include "rt_float8.h"
#include "rt_par.h"
#include "rt_string.h"
#include "rt_ml.h"
#include "rt_random.h"
#include "rt_plan.h"

/*
 * Vector math. glibc's libmvec has SIMD versions of these float functions
 * for every x86-64 level (_ZGVbN4v_expf for SSE4 ... _ZGVeN16v_expf for
 * AVX-512); declaring them __simd__, as glibc's math.h does under -ffast-math,
 * lets GCC vectorise the elementwise loops that call them (emit_link passes
 * -fno-math-errno, without which a call that may set errno blocks that).
 * -lm pulls libmvec in as needed. libmvec's error is at most 4 ulp (glibc's
 * manual); collagec(1) ACCURACY has what tests/unit/vecmath_test measures.
 * double kernels keep scalar libm. Other compilers and libcs: scalar libm.
 */
#if defined __GNUC__ && !defined __clang__ && defined __x86_64__ && defined __GLIBC__
#if __GLIBC_PREREQ(2, 22)
#define RT_SIMD __attribute__((__simd__("notinbranch")))
float expf(float) RT_SIMD;
float logf(float) RT_SIMD;
float powf(float, float) RT_SIMD;
#endif
#if __GLIBC_PREREQ(2, 35)
float erff(float) RT_SIMD;
float tanhf(float) RT_SIMD;
#endif
#endif

/*
 * exp for float kernels (tir_print's name for a float exp). On AVX-512 and
 * where libmvec is not declared (clang, other libcs), rt_expf_poly below,
 * inline so that the compiler vectorises it in place: no call per vector,
 * no constants reloaded after one. A SiLU, x / (1 + exp(-x)), takes 0.16 ns
 * an element on a Zen 5 core with it, 0.21 with libmvec's _ZGVeN16v_expf.
 * With AVX2 and SSE libmvec's is as fast or faster (0.32 against 0.34 ns,
 * 0.76 against 1.21), so there rt_expf is expf.
 *
 * rt_expf_poly: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, a
 * degree-5 polynomial for e^r fitted for relative error (9.2e-8 before
 * rounding), and 2^n as two powers of two made in the exponent bits, so that
 * subnormal results and overflow to infinity come out right. Every float
 * against exp in double: at most 2.02 ulp with FMA, 2.31 without
 * (tests/unit/vecmath_test checks 2.5 over a sweep at three ISA levels). A
 * NaN stays NaN (the clamps keep it, the polynomial carries it); -inf gives
 * 0. The clamps vectorise as max and min with -fno-trapping-math
 * (emit_link's math flags). Scalar and vector lanes compute the same
 * sequence, so equal inputs give equal outputs wherever they lie.
 */
static inline float rt_expf_poly(float x)
{
	float c = x < -104.0f ? -104.0f : x;	/* e^-104 rounds to 0 */
	float n, r, p, s1, s2;
	int32_t k, h, e1, e2;

	c = c > 89.0f ? 89.0f : c;		/* e^89 rounds to infinity */
	n = (c * 1.44269504f + 12582912.0f) - 12582912.0f;	/* rint, |n| < 2^22 */
	r = c - n * 0.693145752f;		/* ln2's high part: n times it is exact */
	r = r - n * 1.42860677e-6f;		/* and its low part */
	p = 8.2903146330e-03f;
	p = p * r + 4.1897929337e-02f;
	p = p * r + 1.6667636196e-01f;
	p = p * r + 4.9999149530e-01f;
	p = p * r + 9.9999970719e-01f;
	p = p * r + 1.0f;
	k = (int32_t)n;				/* a NaN's is INT_MIN on x86: p is NaN */
	h = k >> 1;				/* 2^n = 2^h 2^(n-h), each normal */
	e1 = (h + 127) << 23;
	e2 = (k - h + 127) << 23;
	memcpy(&s1, &e1, sizeof(s1));
	memcpy(&s2, &e2, sizeof(s2));
	return p * s1 * s2;
}

#if defined RT_SIMD && !defined __AVX512F__
#define rt_expf(x) expf(x)
#else
#define rt_expf(x) rt_expf_poly(x)
#endif

#define RT_MAX_RANK 8

/* The API model.c exports, and what only the model's own code sees. */
#define RT_API __attribute__((visibility("default")))
#define RT_HIDDEN __attribute__((visibility("hidden")))

/*
 * How kernels are defined: static when model.c holds them all; a unit of
 * kernels compiled on its own defines RT_KERNEL as hidden-but-external
 * first, and model.c declares them (RT_KERNEL_EXTERN).
 */
#ifndef RT_KERNEL
#define RT_KERNEL static
#endif
#define RT_KERNEL_EXTERN extern __attribute__((visibility("hidden")))

enum rt_kind {
	RT_CONST,	/* offset into rt_weights */
	RT_INPUT,	/* io = input index */
	RT_OUTPUT,	/* io = output index */
	RT_ARENA,	/* offset into the workspace (static or planned) */
	RT_DYN,		/* data-dependent dims: a heap block per value, (re)allocated
			   when its producer runs and kept for the next run */
	RT_PACKED	/* made at open from a constant: offset into rt_packs */
};

/* c * syms[sym[0]] * ... */
struct rt_dim {
	int64_t c;
	int n;
	int sym[3];
};

struct rt_value {
	const char *name;
	int kind;			/* enum rt_kind */
	int dtype;			/* collagec_dtype */
	int esize;			/* element size in bytes */
	int io;				/* input/output index */
	int rank;
	struct rt_dim dims[RT_MAX_RANK];
	const char *dim_names[RT_MAX_RANK];
	int64_t offset;			/* const, or static arena offset; -1 if planned */
	int first, last;		/* steps that write first / read last */
	int late;			/* dims known only once its producer ran */
	int64_t store_c;		/* 0; else dim 1 as stored: a padded layout */
};

/* A derived symbol: syms[sym] = op(a, b), op 0..4 = + / % min max. */
struct rt_derived {
	int sym;			/* -1 ends the table */
	int op;
	int used;			/* in a shape: must not be negative */
	struct rt_dim a, b;
};

/* What compiling assumed of the symbols: a <= b (or a == b), else the run fails. */
struct rt_check {
	struct rt_dim a, b;
	const char *text;		/* "seq <= 32" */
	const char *node;		/* the ONNX node that assumed it */
	int eq;				/* a == b: "128*seq*batch == 2048*batch" */
};

/* What a run-time shape function computes (runtime/rt_shape.c). */
enum rt_shape_op {
	RT_SHAPE_RESHAPE,
	RT_SHAPE_EXPAND,
	RT_SHAPE_CONSTANT_OF_SHAPE,
	RT_SHAPE_TILE,
	RT_SHAPE_UNSQUEEZE,
	RT_SHAPE_SQUEEZE,
	RT_SHAPE_NONZERO,
	RT_SHAPE_SLICE,
	RT_SHAPE_REDUCE,
	RT_SHAPE_RANGE,
	RT_SHAPE_ONE_HOT,
	RT_SHAPE_COMPRESS,
	RT_SHAPE_TOP_K,
	RT_SHAPE_PAD,
	RT_SHAPE_RESIZE,
	RT_SHAPE_SPLIT,
	RT_SHAPE_WINDOW,
	RT_SHAPE_STFT,
	RT_SHAPE_MAX_UNPOOL,
	RT_SHAPE_UNIQUE,
	RT_SHAPE_NMS,
	RT_SHAPE_MEL_WEIGHT_MATRIX,
	RT_SHAPE_STRING_NORMALIZER,
	RT_SHAPE_STRING_SPLIT,
	RT_SHAPE_LOOP,			/* runs the loop rt_loops[attr] */
	RT_SHAPE_CENTER_CROP_PAD,
	RT_SHAPE_COL2IM,
	RT_SHAPE_DFT,
	RT_SHAPE_AFFINE_GRID,
	RT_SHAPE_IMAGE_DECODER		/* attr: the channels, 3 or 1 */
};

/*
 * A data-dependent node's shape function: before step `step`, computes the
 * dims of value `out` from the int64 tensor in[1] and the dims of in[0]
 * (NonZero: from the values of in[0]), and binds the data symbols that make
 * them up.
 */
struct rt_shape {
	int step;			/* -1 ends the table */
	int op;				/* enum rt_shape_op */
	int64_t attr;			/* Reshape's allowzero, Pad's mode != constant,
					   OneHot's axis, TopK's, Split's, STFT's
					   onesided,
					   Compress's and Unique's (-1: none),
					   NonMaxSuppression's center_point_box;
					   StringNormalizer's rt_str_normalize flags,
					   StringSplit's maxsplit; Reduce*: keepdims |
					   noop_with_empty_axes << 1; Resize: see
					   resize_shape_attr; DFT: inverse |
					   onesided << 1 */
	int in[5];			/* the data, the int64 tensor (-1: none);
					   Slice: x, starts, ends, axes, steps;
					   Range: start, limit, delta; Pad: x, pads,
					   constant_value, axes; Resize: x, roi,
					   scales, sizes (Upsample: x, scales);
					   CenterCropPad: x, shape; Col2Im: x,
					   image_shape, block_shape; DFT: x,
					   dft_length, axis; AffineGrid: theta,
					   size */
	int out;
	int param[2 * RT_MAX_RANK + 1];	/* per input axis two symbols: Slice's start
					   and step, Reduce*'s reduced flag and output
					   stride, Pad's begin and end pads; Split:
					   each output's length; STFT: frame_step,
					   frame_length; CenterCropPad: each listed
					   axis's start in the input; Col2Im: per
					   spatial axis the block's length and the
					   blocks along it; DFT: the axis, the
					   transform length, the input's length on
					   the axis; -1 after the last */
	const char *node;		/* the ONNX node, for messages */
	const int64_t *ints;		/* (or NULL) attributes the function needs:
					   CenterCropPad: the count of axes, then
					   each (normalised); Col2Im: the spatial
					   rank r, then strides, dilations, pads
					   (2r); DFT: the axis when no input gives
					   it (the attribute, or opset 20's -2) */
};

/*
 * A Loop run at run time (core/onnx/onnx_loop_call.c): its body is a model
 * of its own, linked in under the API prefix the generated model.c
 * declares, which the runtime runs once per iteration (rt_model.c). An If
 * whose branches give different shapes: two entries, one per branch, the
 * one the condition takes run once.
 */
struct rt_loop {
	const char *node;		/* the ONNX node, for messages */
	collagec_status (*open)(collagec_model **);
	void (*close)(collagec_model *);
	collagec_status (*set_threads)(collagec_model *, int);
	collagec_status (*set_input)(collagec_model *, int, const void *, const int64_t *, int);
	collagec_status (*run)(collagec_model *);
	collagec_status (*get_output)(collagec_model *, int, const void **, const int64_t **,
				      int *);
	const char *(*last_error)(const collagec_model *);
	int kind;			/* 0 a Loop; 1 an If's then branch, whose else
					   branch (kind 2) is the next entry */
	int m, cond;			/* rt ids of M and cond; -1 when absent */
	int n_carried, n_scan, n_caps;	/* an If: its outputs, 0, its captured inputs */
	int64_t iter0;			/* the first iteration's number */
	const int *in;			/* rt ids: the carried values' initial ones,
					   then the captured values the body takes */
	const int *out;			/* rt ids: the final carried values, then the
					   scan outputs; -1 where unused */
};

/* The kernel of a Loop run at run time: runs it (unless its shape function did) and writes its outputs. */
void rt_loop_kernel(int64_t loop, int threads) __attribute__((visibility("hidden")));

/*
 * A kernel's failure: the run stops after the kernel returns, with
 * COLLAGEC_E_RUNTIME and "node 'NAME': MESSAGE", NAME the node whose
 * run-time shape function ran before this step (else the kernel's name).
 * The kernel must return soon after, its outputs undefined.
 */
void rt_kernel_fail(const char *fmt, ...) __attribute__((visibility("hidden")))
	__attribute__((format(printf, 1, 2)));

/*
 * A KV cache the model can keep in place (collagec_bind_cache, OUT.json
 * caches[]): input in (an Attention's past_key or past_value) and output
 * out (its present_key or present_value), both read and written only by
 * that Attention's attention.rows kernel.
 */
struct rt_cache {
	int in, out;			/* input and output indices; in -1 ends the table */
};

/*
 * The row stride (positions along the sequence axis per batch and head)
 * of a cache that attention.rows reads as past and writes as present:
 * the capacity when the caller bound present to a cache
 * (collagec_bind_cache) and set past to the same buffer, else -1 (both
 * dense). Called by the kernel, on the thread that runs the model.
 */
int64_t rt_cache_capacity(const void *past, const void *present)
	__attribute__((visibility("hidden")));

/* The encoded image formats ImageDecoder reads (runtime/rt_imgprobe.c). */
enum rt_image_format {
	RT_IMAGE_BMP,
	RT_IMAGE_JPEG,
	RT_IMAGE_JP2,			/* JPEG 2000, the JP2 file format */
	RT_IMAGE_J2K,			/* JPEG 2000, a bare codestream */
	RT_IMAGE_PNG,
	RT_IMAGE_PNM,			/* P1 to P6 */
	RT_IMAGE_TIFF,
	RT_IMAGE_WEBP,
	RT_IMAGE_UNKNOWN
};

/* The format of the n bytes at p, from their magic as Pillow's Image.open tells. */
int rt_image_sniff(const unsigned char *p, int64_t n) __attribute__((visibility("hidden")));

typedef void (*rt_kernel)(void *const *bufs, const int64_t *syms, int threads);

/*
 * Backend state: init runs in collagec_open (0 = ok, else a message in err),
 * fini in close; model is the handle.
 */
typedef int (*rt_init_fn)(void *model, char *err, size_t errlen);
typedef void (*rt_fini_fn)(void *model);
/*
 * sync waits for the device work the kernels queued: at the end of every
 * run (end 1), and with profiling after every step (end 0), so that a
 * step's time holds its device work.
 */
typedef void (*rt_sync_fn)(void *model, int end);

/*
 * The handle whose run is under way on this thread (NULL outside runs),
 * and its arena as this run has it: a backend that mirrors the arena on a
 * device maps its pointers by their offset.
 */
void *rt_run_model(unsigned char **arena, int64_t *arena_bytes) __attribute__((visibility("hidden")));

/*
 * The constant named name in the weights blob (*data, *bytes), for a
 * backend that uploads its kernels' constants when the model opens: 0, or
 * -1 when no such constant is there (a string tensor's, or one made at
 * open, comes later).
 */
int rt_model_const(const char *name, const void **data, int64_t *bytes) __attribute__((visibility("hidden")));

/*
 * What a backend's module holds for the process rather than for a handle
 * (dnnl's primitives and reordered weights, in its kernels' static caches)
 * goes when the last open handle closes: the module registers a hook from
 * a constructor (at load, before any open), and rt_api_close runs every
 * hook's fn after the last handle is gone. Models stay loaded once opened
 * (RTLD_NODELETE), so without it a closed model kept all of that.
 */
struct rt_close_hook {
	void (*fn)(void);
	struct rt_close_hook *next;
};
void rt_on_last_close(struct rt_close_hook *h) __attribute__((visibility("hidden")));

/*
 * A constant the model makes when it opens, into memory the handle owns
 * (freed at close), from another in rt_weights: a backend's packed or
 * transformed weights where the blob holds the weights as they are
 * anyway (core/emit/plan.c). fn fills all of dst from src.
 */
struct rt_pack {
	void (*fn)(const void *src, void *dst, const int64_t *params);
	int src;			/* rt id of the source in the blob (RT_CONST) */
	int src_pack;			/* made from that pack instead (earlier), or -1 */
	int temp;			/* only later packs read it: freed once open */
	int64_t bytes;			/* of dst */
	int64_t params[6];		/* the fn's (graph_derived_const's) */
};

/* One implementation of a kernel and its condition, as OUT.json lists them. */
struct rt_variant {
	const char *impl;		/* "matmul.ikj", or "generic" */
	const char *cond;		/* "M >= 16", the last one "always" */
};

/* The index of the variant a kernel's dispatcher takes for these symbols. */
typedef int (*rt_pick_fn)(const int64_t *syms);

/* One step per kernel, in OUT.json order (partitions, then their kernels). */
struct rt_step {
	rt_kernel fn;
	const char *name;
	int arg0;			/* first index into rt_args */
	int nargs;
	int part;			/* partition id */
	int var0;			/* first index into rt_variants */
	int nvars;
	rt_pick_fn pick;		/* NULL when nvars == 1 */
};

/*
 * The model as the runtime sees it: its sizes and its tables (above).
 * model.c defines the one rt_desc; the runtime reads nothing else of it.
 */
struct rt_desc {
	int n_values;			/* rt_values, without its terminator */
	int n_inputs, n_outputs;
	int n_syms;
	int n_steps;
	int max_args;			/* the most arguments of a step (at least 1) */
	int n_shapes;			/* rt_shapes, without its terminator */
	int n_loops;
	int n_packs;			/* rt_packs, without its terminator */
	int n_caches;			/* rt_caches, without its terminator */
	int64_t static_arena;		/* bytes, or -1 when planned at run time */
	int threads;			/* what collagec_open sets: compile --threads,
					   or 0: the physical cores it may run on */
	const struct rt_value *values;
	const int64_t (*info_dims)[RT_MAX_RANK];
	const struct rt_variant *variants;
	const struct rt_step *steps;
	const int *args;
	const int *inputs, *outputs;
	const signed char *seq_out;	/* per output: 1 a sequence of run-time
					   length, 2 an optional's; NULL: none is */
	const char *const *sym_names;
	const struct rt_derived *derived;
	const struct rt_check *checks;
	const struct rt_shape *shapes;
	const char *sym_late;
	const int *late;
	const struct rt_loop *loops;
	const rt_init_fn *inits;
	const rt_fini_fn *finis;
	const rt_sync_fn *syncs;
	const unsigned char *weights;	/* NULL when in weights_file */
	const char *weights_file;	/* (or NULL) the file of the weights
					   (RT_WEIGHTS_*), relative to the
					   directory of this object unless absolute */
	int64_t weights_bytes;		/* the blob's size in weights_file */
	const char *weights_sha256;	/* its hash, checked at open (NULL: not) */
	const struct rt_pack *packs;
	const struct rt_cache *caches;
	const char *metadata_json;
	void (*rt_abort)(const char *msg);	/* the model's collagec_rt_abort,
						   which a program may replace */
};

extern const struct rt_desc rt_desc RT_HIDDEN;

/*
 * The API (runtime/api.def) as the runtime defines it: model.c's
 * collagec_NAME (or PREFIX_NAME) calls rt_api_NAME, so that one runtime
 * object serves every prefix.
 */
RT_HIDDEN collagec_status rt_api_open(collagec_model **out);
RT_HIDDEN void rt_api_close(collagec_model *m);
RT_HIDDEN int rt_api_num_inputs(const collagec_model *m);
RT_HIDDEN int rt_api_num_outputs(const collagec_model *m);
RT_HIDDEN collagec_status rt_api_input_info(const collagec_model *m, int i,
					    collagec_tensor_info *info);
RT_HIDDEN collagec_status rt_api_output_info(const collagec_model *m, int i,
					     collagec_tensor_info *info);
RT_HIDDEN collagec_status rt_api_set_input(collagec_model *m, int i, const void *data,
					   const int64_t *dims, int rank);
RT_HIDDEN collagec_status rt_api_set_input_typed(collagec_model *m, int i, int dtype,
						 const void *data, const int64_t *dims, int rank);
RT_HIDDEN collagec_status rt_api_run(collagec_model *m);
RT_HIDDEN collagec_status rt_api_get_output(collagec_model *m, int i, const void **data,
					    const int64_t **dims, int *rank);
RT_HIDDEN collagec_status rt_api_bind_output(collagec_model *m, int i, void *data,
					     int64_t bytes);
RT_HIDDEN collagec_status rt_api_bind_cache(collagec_model *m, int in, int out, void *data,
					    int64_t bytes, int64_t capacity);
RT_HIDDEN int rt_api_output_sequence(const collagec_model *m, int i);
RT_HIDDEN collagec_status rt_api_get_sequence_length(collagec_model *m, int i,
						     int64_t *length);
RT_HIDDEN collagec_status rt_api_get_sequence_element(collagec_model *m, int i, int64_t k,
						      const void **data, const int64_t **dims,
						      int *rank);
RT_HIDDEN collagec_status rt_api_set_threads(collagec_model *m, int n);
RT_HIDDEN int rt_api_get_threads(const collagec_model *m);
RT_HIDDEN int rt_api_num_kernels(const collagec_model *m);
RT_HIDDEN collagec_status rt_api_get_kernel_info(const collagec_model *m, int k,
						 collagec_kernel_info *info);
RT_HIDDEN collagec_status rt_api_set_profiling(collagec_model *m, int on);
RT_HIDDEN const char *rt_api_status_string(collagec_status s);
RT_HIDDEN const char *rt_api_last_error(const collagec_model *m);
RT_HIDDEN const char *rt_api_metadata(void);
RT_HIDDEN int rt_api_abi_version(void);
RT_HIDDEN void rt_api_rt_abort(const char *msg);

#endif
