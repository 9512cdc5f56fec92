/*
 * types.c - dtypes (dtype.def) and symbolic dimensions, below both IRs.
 */
#include "types.h"

#include <string.h>

/* ---- dtypes ---- */

static const struct {
	const char *name, *ctype;
	int onnx;
	size_t size;
	char fl;
} dtypes[DTYPE_COUNT] = {
	[DTYPE_UNDEF] = { "undef", "void", 0, 0, '?' },
#define DTYPE(id, nm, ct, ox, sz, f) [DTYPE_##id] = { nm, #ct, ox, sz, #f[0] },
#include "dtype.def"
#undef DTYPE
};

const char *dtype_name(enum dtype t) { return dtypes[t].name; }
const char *dtype_ctype(enum dtype t) { return dtypes[t].ctype; }
size_t dtype_size(enum dtype t) { return dtypes[t].size; }
bool dtype_is_float(enum dtype t) { return dtypes[t].fl == 'F' || dtypes[t].fl == 'H'; }
bool dtype_is_half(enum dtype t) { return dtypes[t].fl == 'H'; }
bool dtype_is_int(enum dtype t) { return dtypes[t].fl == 'S' || dtypes[t].fl == 'U'; }
bool dtype_is_signed(enum dtype t) { return dtypes[t].fl == 'S' || dtype_is_float(t); }
bool dtype_is_string(enum dtype t) { return dtypes[t].fl == 'T'; }
bool dtype_is_nibble(enum dtype t) { return t == DTYPE_I4 || t == DTYPE_U4; }
bool dtype_is_float8(enum dtype t) { return dtypes[t].fl == 'E'; }

/* Bits an element of t takes in ONNX's packed form: 4 or 2, else 8 times its size. */
int dtype_bits(enum dtype t)
{
	switch (t) {
	case DTYPE_I4: case DTYPE_U4: case DTYPE_F4E2M1: return 4;
	case DTYPE_I2: case DTYPE_U2: return 2;
	default: return 8 * (int)dtypes[t].size;
	}
}

bool dtype_is_subbyte(enum dtype t) { return dtype_bits(t) < 8; }

enum dtype dtype_compute(enum dtype t)
{
	return dtype_is_half(t) ? DTYPE_F32 : t;
}
int dtype_to_onnx(enum dtype t) { return dtypes[t].onnx; }

enum dtype dtype_from_onnx(int onnx_type)
{
	for (int t = 1; t < DTYPE_COUNT; t++)
		if (dtypes[t].onnx == onnx_type)
			return (enum dtype)t;
	return DTYPE_UNDEF;
}

enum dtype dtype_from_name(const char *name)
{
	for (int t = 1; t < DTYPE_COUNT; t++)
		if (!strcmp(dtypes[t].name, name))
			return (enum dtype)t;
	return DTYPE_UNDEF;
}

/* ---- dims ---- */

struct dim dim_sym(int sym)
{
	struct dim d = { 1, 1, { (uint8_t)sym } };
	return d;
}

bool dim_is_const(struct dim d) { return d.n == 0; }

bool dim_eq(struct dim a, struct dim b)
{
	if (a.c != b.c || a.n != b.n)
		return false;
	if (a.c == 0)
		return true;
	return memcmp(a.sym, b.sym, a.n) == 0;
}

bool dim_mul(struct dim a, struct dim b, struct dim *out)
{
	struct dim r = { 0, 0, { 0 } };
	int i = 0, j = 0;

	if (a.c == 0 || b.c == 0) {
		*out = dim_const(0);
		return true;
	}
	if (__builtin_mul_overflow(a.c, b.c, &r.c) || r.c > DIM_LIMIT * 64)
		return false;
	if (a.n + b.n > DIM_MAX_SYMS)
		return false;
	while (i < a.n || j < b.n) {
		if (j >= b.n || (i < a.n && a.sym[i] <= b.sym[j]))
			r.sym[r.n++] = a.sym[i++];
		else
			r.sym[r.n++] = b.sym[j++];
	}
	*out = r;
	return true;
}

bool dim_div(struct dim a, struct dim b, struct dim *out)
{
	struct dim r = { 0, 0, { 0 } };
	int i = 0, j = 0;

	if (b.c == 0 || a.c % b.c)
		return false;
	r.c = a.c / b.c;
	if (a.c == 0) {
		*out = r;
		return b.n == 0;
	}
	/* remove b's symbols from a's (multiset difference) */
	while (i < a.n) {
		if (j < b.n && a.sym[i] == b.sym[j]) {
			i++, j++;
		} else if (j < b.n && b.sym[j] < a.sym[i]) {
			return false;
		} else {
			r.sym[r.n++] = a.sym[i++];
		}
	}
	if (j < b.n)
		return false;
	*out = r;
	return true;
}

static bool same_syms(struct dim a, struct dim b)
{
	return a.n == b.n && memcmp(a.sym, b.sym, a.n) == 0;
}

bool symint_add(struct dim a, struct dim b, struct dim *out)
{
	struct dim r = a;

	if (b.c == 0 || a.c == 0) {
		*out = a.c == 0 ? b : a;
		return true;
	}
	if (!same_syms(a, b) || __builtin_add_overflow(a.c, b.c, &r.c))
		return false;
	*out = r.c == 0 ? dim_const(0) : r;
	return true;
}

struct dim symint_neg(struct dim a)
{
	a.c = -a.c;
	return a;
}

bool symint_sub(struct dim a, struct dim b, struct dim *out)
{
	if (b.c == INT64_MIN)
		return false;
	return symint_add(a, symint_neg(b), out);
}

bool shape_numel(const struct shape *s, struct dim *out)
{
	struct dim r = dim_const(1);

	for (int i = 0; i < s->rank; i++)
		if (!dim_mul(r, s->d[i], &r))
			return false;
	*out = r;
	return true;
}

bool shape_is_static(const struct shape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (s->d[i].n)
			return false;
	return true;
}

int64_t shape_numel_static(const struct shape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->rank; i++) {
		if (s->d[i].n)
			BUG("shape_numel_static on a symbolic shape");
		n *= s->d[i].c;
	}
	return n;
}

bool shape_eq(const struct shape *a, const struct shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (!dim_eq(a->d[i], b->d[i]))
			return false;
	return true;
}
