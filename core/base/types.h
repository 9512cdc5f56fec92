/*
 * types.h - what both IRs (the graph IR, core/ir/, and the loop IR,
 * core/tir/) build on: element types (dtype.def) and dimensions that are a
 * constant times a product of symbols. A symbol is an index into a table of
 * names that the graph keeps (graph.syms); the loop IR reads symbols by index
 * (TIR_SYM) and never needs the names. A span, the ONNX nodes an IR object
 * came from, is named here too, as both IRs carry one.
 *
 * Invariant: a dimension is c * s1 * s2 ... (c > 0, symbols sorted); a
 * constant dimension has no symbols. Symbolic integers (symint_*) share the
 * form with any sign of c.
 *
 *	struct dim n = dim_sym(0), two_n;
 *	if (dim_mul(dim_const(2), n, &two_n)) ...
 *	size_t bytes = dtype_size(DTYPE_F32);
 */
#ifndef COLLAGEC_TYPES_H
#define COLLAGEC_TYPES_H

#include "base.h"

/* ---- dtypes ---- */

enum dtype {
	DTYPE_UNDEF = 0,
#define DTYPE(id, name, ctype, onnx, size, fl) DTYPE_##id,
#include "dtype.def"
#undef DTYPE
	DTYPE_COUNT
};

const char *dtype_name(enum dtype t);		/* "float32" */
const char *dtype_ctype(enum dtype t);		/* "float" */
size_t dtype_size(enum dtype t);
bool dtype_is_float(enum dtype t);		/* float16 and bfloat16 included */
bool dtype_is_half(enum dtype t);		/* float16, bfloat16 */
/*
 * The type loop IR computes t in: float for the 16-bit floats (loads widen,
 * stores round to nearest even), t itself otherwise.
 */
enum dtype dtype_compute(enum dtype t);
bool dtype_is_int(enum dtype t);		/* signed or unsigned integer, not bool */
bool dtype_is_signed(enum dtype t);
bool dtype_is_string(enum dtype t);		/* string: elements are const char * */
bool dtype_is_nibble(enum dtype t);		/* int4, uint4: one byte an element (dtype.def) */
bool dtype_is_float8(enum dtype t);		/* the 8-bit floats and float4e2m1: bit patterns
						   (dtype.def) */
bool dtype_is_subbyte(enum dtype t);		/* int4, uint4, int2, uint2, float4e2m1: one byte
						   an element, packed in ONNX (dtype.def) */
int dtype_bits(enum dtype t);			/* bits an element takes packed: 2, 4, 8, ... */
enum dtype dtype_from_onnx(int onnx_type);	/* DTYPE_UNDEF when unsupported */
int dtype_to_onnx(enum dtype t);
enum dtype dtype_from_name(const char *name);	/* "float32" or numpy "<f4" */

/* ---- dimensions and shapes ---- */

#define DIM_MAX_SYMS 3
#define MAX_RANK 8

struct dim {
	int64_t c;			/* constant factor (>= 0) */
	uint8_t n;			/* number of symbols in the product */
	uint8_t sym[DIM_MAX_SYMS];	/* symbol ids (graph.syms), sorted */
};

struct shape {
	int rank;
	struct dim d[MAX_RANK];
};

static inline struct dim dim_const(int64_t c)
{
	struct dim d = { c, 0, { 0 } };
	return d;
}

struct dim dim_sym(int sym);
bool dim_is_const(struct dim d);
bool dim_eq(struct dim a, struct dim b);
/* Product; returns false when it would overflow or need too many symbols. */
bool dim_mul(struct dim a, struct dim b, struct dim *out);
/* Exact quotient a / b; false when b does not divide a. */
bool dim_div(struct dim a, struct dim b, struct dim *out);
/* Number of elements of a shape, false on overflow / too many symbols. */
bool shape_numel(const struct shape *s, struct dim *out);
bool shape_is_static(const struct shape *s);
int64_t shape_numel_static(const struct shape *s);	/* BUG() unless static */
bool shape_eq(const struct shape *a, const struct shape *b);

/*
 * Symbolic integers: the elements of an int tensor computed from shapes
 * (Shape, Gather, Concat, ...) are dims whose constant may be negative or
 * zero. They follow the same c * product-of-symbols form as dimensions.
 */
#define SYMVAL_MAX 64
/* a + b, a - b when both have the same symbols (or one is 0); false otherwise. */
bool symint_add(struct dim a, struct dim b, struct dim *out);
bool symint_sub(struct dim a, struct dim b, struct dim *out);
struct dim symint_neg(struct dim a);

/* Largest tensor dimension or element count collagec accepts (2^31). */
#define DIM_LIMIT (INT64_C(1) << 31)


/* ---- spans: which ONNX nodes a node came from ---- */

struct span {
	int n;
	const char **names;	/* ONNX node names */
	const char **types;	/* their ONNX op types */
};

#endif
