/*
 * tir_interp.c - a small interpreter for loop IR, used to fold constant
 * sub-graphs at compile time with the very lowering that produces the
 * run-time kernels (so no op has a second implementation).
 *
 * Floats are computed in double and rounded when stored, integers in int64.
 */
#include "tir.h"
#include "../../runtime/rt_half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ival {
	double f;
	int64_t i;
};

struct interp {
	void **bufs;
	const int64_t *syms;
	struct ival *vars;
	int failed;
};

static bool isf(enum dtype t)
{
	return dtype_is_float(t);
}

static struct ival mk(enum dtype t, double f, int64_t i)
{
	struct ival v;

	if (isf(t)) {
		v.f = t == DTYPE_F32 ? (double)(float)f : f;
		v.i = 0;
	} else {
		v.i = i;
		v.f = 0;
	}
	return v;
}

/*
 * A double as int64, truncated as a C cast does; 0 for NaN and values out of
 * int64's range, where the cast is undefined (and ONNX's Cast unspecified).
 */
static int64_t f2i(double f)
{
	return f > -9.2233720368547758e18 && f < 9.2233720368547758e18 ? (int64_t)f : 0;
}

static double as_f(struct ival v, enum dtype t)
{
	return isf(t) ? v.f : (double)v.i;
}

static int64_t as_i(struct ival v, enum dtype t)
{
	return isf(t) ? f2i(v.f) : v.i;
}

static struct ival load(enum dtype t, void *p, int64_t i)
{
	switch (t) {
	case DTYPE_F32: return mk(t, ((float *)p)[i], 0);
	case DTYPE_F64: return mk(t, ((double *)p)[i], 0);
	case DTYPE_I64: return mk(t, 0, ((int64_t *)p)[i]);
	case DTYPE_I32: return mk(t, 0, ((int32_t *)p)[i]);
	case DTYPE_I16: return mk(t, 0, ((int16_t *)p)[i]);
	case DTYPE_I8: case DTYPE_I4: case DTYPE_I2: return mk(t, 0, ((int8_t *)p)[i]);
	case DTYPE_U8: case DTYPE_BOOL: case DTYPE_U4: case DTYPE_U2:
		return mk(t, 0, ((uint8_t *)p)[i]);
	case DTYPE_U16: return mk(t, 0, ((uint16_t *)p)[i]);
	case DTYPE_U32: return mk(t, 0, ((uint32_t *)p)[i]);
	case DTYPE_U64: return mk(t, 0, (int64_t)((uint64_t *)p)[i]);
	case DTYPE_F16: return mk(DTYPE_F32, rt_h2f(((uint16_t *)p)[i]), 0);
	case DTYPE_BF16: return mk(DTYPE_F32, rt_bf2f(((uint16_t *)p)[i]), 0);
	default:
		/* the 8-bit floats and float4e2m1 move as their bit patterns (dtype.def) */
		if (dtype_is_float8(t))
			return mk(t, 0, ((uint8_t *)p)[i]);
		BUG("interp load %s", dtype_name(t));
	}
}

static void store(enum dtype t, void *p, int64_t i, struct ival v)
{
	switch (t) {
	case DTYPE_F32: ((float *)p)[i] = (float)v.f; break;
	case DTYPE_F64: ((double *)p)[i] = v.f; break;
	case DTYPE_I64: ((int64_t *)p)[i] = v.i; break;
	case DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v.i; break;
	case DTYPE_I16: ((int16_t *)p)[i] = (int16_t)v.i; break;
	case DTYPE_I8: case DTYPE_I4: case DTYPE_I2: ((int8_t *)p)[i] = (int8_t)v.i; break;
	case DTYPE_U8: case DTYPE_U4: case DTYPE_U2: ((uint8_t *)p)[i] = (uint8_t)v.i; break;
	case DTYPE_BOOL: ((uint8_t *)p)[i] = v.i != 0; break;
	case DTYPE_U16: ((uint16_t *)p)[i] = (uint16_t)v.i; break;
	case DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)v.i; break;
	case DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)v.i; break;
	case DTYPE_F16: ((uint16_t *)p)[i] = rt_d2h(v.f); break;
	case DTYPE_BF16: ((uint16_t *)p)[i] = rt_d2bf(v.f); break;
	default:
		if (!dtype_is_float8(t))
			BUG("interp store %s", dtype_name(t));
		((uint8_t *)p)[i] = (uint8_t)v.i;
		break;
	}
}

/* Converts v of type from to type to, with C conversion semantics. */
static struct ival convert(struct ival v, enum dtype from, enum dtype to)
{
	if (to == DTYPE_BOOL)
		return mk(to, 0, isf(from) ? v.f != 0 : v.i != 0);
	if (isf(to))
		return mk(to, as_f(v, from), 0);
	if (isf(from)) {
		double f = v.f;

		if (to == DTYPE_U64 && f >= 9.2233720368547758e18 && f < 1.8446744073709552e19)
			return mk(to, 0, (int64_t)(uint64_t)f);
		return mk(to, 0, f2i(f));
	}
	switch (to) {
	case DTYPE_I32: return mk(to, 0, (int32_t)v.i);
	case DTYPE_I16: return mk(to, 0, (int16_t)v.i);
	case DTYPE_I8: return mk(to, 0, (int8_t)v.i);
	case DTYPE_U8: return mk(to, 0, (uint8_t)v.i);
	case DTYPE_U16: return mk(to, 0, (uint16_t)v.i);
	case DTYPE_U32: return mk(to, 0, (uint32_t)v.i);
	default: return mk(to, 0, v.i);
	}
}

static struct ival eval(struct interp *it, const struct tir *e);

static double intrin(int op, double x, double y)
{
	switch (op) {
	case INTRIN_EXP: return exp(x);
	case INTRIN_LOG: return log(x);
	case INTRIN_SQRT: return sqrt(x);
	case INTRIN_SIN: return sin(x);
	case INTRIN_COS: return cos(x);
	case INTRIN_TAN: return tan(x);
	case INTRIN_ASIN: return asin(x);
	case INTRIN_ACOS: return acos(x);
	case INTRIN_ATAN: return atan(x);
	case INTRIN_SINH: return sinh(x);
	case INTRIN_COSH: return cosh(x);
	case INTRIN_TANH: return tanh(x);
	case INTRIN_ASINH: return asinh(x);
	case INTRIN_ACOSH: return acosh(x);
	case INTRIN_ATANH: return atanh(x);
	case INTRIN_ERF: return erf(x);
	case INTRIN_FLOOR: return floor(x);
	case INTRIN_CEIL: return ceil(x);
	case INTRIN_RINT: return rint(x);
	case INTRIN_FABS: return fabs(x);
	case INTRIN_POW: return pow(x, y);
	case INTRIN_FMOD: return fmod(x, y);
	case INTRIN_ISNAN: return isnan(x);
	case INTRIN_ISINF: return isinf(x) != 0;
	case INTRIN_LOG1P: return log1p(x);
	case INTRIN_EXPM1: return expm1(x);
	default: BUG("interp intrinsic %d", op);
	}
}

static struct ival eval_bin(struct interp *it, const struct tir *e)
{
	struct ival a = eval(it, e->a), b = eval(it, e->b);
	enum dtype ta = e->a->dtype, tb = e->b->dtype;
	bool fl = isf(ta) || isf(tb);
	bool uns = !fl && (ta == DTYPE_U64 || ta == DTYPE_U32);
	double x = as_f(a, ta), y = as_f(b, tb);
	int64_t p = as_i(a, ta), q = as_i(b, tb);
	enum dtype t = e->dtype;

	switch (e->op) {
	case BIN_ADD: return fl ? mk(t, x + y, 0) : mk(t, 0, (int64_t)((uint64_t)p + (uint64_t)q));
	case BIN_SUB: return fl ? mk(t, x - y, 0) : mk(t, 0, (int64_t)((uint64_t)p - (uint64_t)q));
	case BIN_MUL: return fl ? mk(t, x * y, 0) : mk(t, 0, (int64_t)((uint64_t)p * (uint64_t)q));
	case BIN_DIV:
		if (fl)
			return mk(t, x / y, 0);
		if (q == 0) {
			it->failed = 1;
			return mk(t, 0, 0);
		}
		return mk(t, 0, uns ? (int64_t)((uint64_t)p / (uint64_t)q) : p / q);
	case BIN_MOD:
		if (fl)
			return mk(t, fmod(x, y), 0);
		if (q == 0) {
			it->failed = 1;
			return mk(t, 0, 0);
		}
		return mk(t, 0, uns ? (int64_t)((uint64_t)p % (uint64_t)q) : p % q);
	case BIN_MIN:
		return fl ? mk(t, isnan(x) || x < y ? x : y, 0)
			: mk(t, 0, (uns ? (uint64_t)p < (uint64_t)q : p < q) ? p : q);
	case BIN_MAX:
		return fl ? mk(t, isnan(x) || x > y ? x : y, 0)
			: mk(t, 0, (uns ? (uint64_t)p > (uint64_t)q : p > q) ? p : q);
	case BIN_LT: return mk(t, 0, fl ? x < y : uns ? (uint64_t)p < (uint64_t)q : p < q);
	case BIN_LE: return mk(t, 0, fl ? x <= y : uns ? (uint64_t)p <= (uint64_t)q : p <= q);
	case BIN_GT: return mk(t, 0, fl ? x > y : uns ? (uint64_t)p > (uint64_t)q : p > q);
	case BIN_GE: return mk(t, 0, fl ? x >= y : uns ? (uint64_t)p >= (uint64_t)q : p >= q);
	case BIN_EQ: return mk(t, 0, fl ? x == y : p == q);
	case BIN_NE: return mk(t, 0, fl ? x != y : p != q);
	case BIN_AND: return mk(t, 0, p & q);
	case BIN_OR: return mk(t, 0, p | q);
	case BIN_XOR: return mk(t, 0, p ^ q);
	case BIN_SHL: return mk(t, 0, q >= 64 ? 0 : (int64_t)((uint64_t)p << q));
	case BIN_SHR:
		/* arithmetic for signed types, as the C the backends print does (gcc, clang) */
		if (dtype_is_signed(ta))
			return mk(t, 0, p >> (q >= 64 ? 63 : q));
		return mk(t, 0, q >= 64 ? 0 : (int64_t)((uint64_t)p >> q));
	case BIN_LAND: return mk(t, 0, (fl ? x != 0 : p != 0) && (fl ? y != 0 : q != 0));
	case BIN_LOR: return mk(t, 0, (fl ? x != 0 : p != 0) || (fl ? y != 0 : q != 0));
	default: BUG("interp binop %d", e->op);
	}
}

static struct ival eval(struct interp *it, const struct tir *e)
{
	struct ival a;

	switch (e->kind) {
	case TIR_INT: return mk(e->dtype, (double)e->i, e->i);
	case TIR_FLT: return mk(e->dtype, e->f, f2i(e->f));
	case TIR_VAR: return it->vars[e->var->id];
	case TIR_SYM: return mk(DTYPE_I64, 0, it->syms[e->i]);
	case TIR_LOAD:
		a = eval(it, e->a);
		return load(e->buf->dtype, it->bufs[e->buf->index], a.i);
	case TIR_BIN: return eval_bin(it, e);
	case TIR_UN:
		a = eval(it, e->a);
		if (e->op == UN_NEG)
			return isf(e->dtype) ? mk(e->dtype, -a.f, 0) : convert(mk(DTYPE_I64, 0,
					(int64_t)(0 - (uint64_t)a.i)), DTYPE_I64, e->dtype);
		if (e->op == UN_NOT)
			return convert(mk(DTYPE_I64, 0, ~a.i), DTYPE_I64, e->dtype);
		return mk(DTYPE_BOOL, 0, isf(e->a->dtype) ? a.f == 0 : a.i == 0);
	case TIR_CALL: {
		struct ival x = eval(it, e->list[0]);
		double y = 0;

		if (e->n > 1)
			y = as_f(eval(it, e->list[1]), e->list[1]->dtype);
		return mk(e->dtype, intrin(e->op, as_f(x, e->list[0]->dtype), y),
			  f2i(intrin(e->op, as_f(x, e->list[0]->dtype), y)));
	}
	case TIR_CAST:
		if (e->i) {	/* rounded through a 16-bit float, as rt_half.h does */
			double f = as_f(eval(it, e->a), e->a->dtype);

			return mk(DTYPE_F32, e->i == DTYPE_F16 ? rt_h2f(rt_d2h(f))
				  : rt_bf2f(rt_d2bf(f)), 0);
		}
		return convert(eval(it, e->a), e->a->dtype, e->dtype);
	case TIR_ADDR:
		it->failed = 1;	/* only call_extern takes addresses: not interpretable */
		return mk(DTYPE_I64, 0, 0);
	case TIR_SELECT:
		a = eval(it, e->a);
		return (isf(e->a->dtype) ? a.f != 0 : a.i != 0) ? eval(it, e->b) : eval(it, e->c);
	default: BUG("interp expr kind %d", e->kind);
	}
}

static void exec(struct interp *it, const struct tir *s)
{
	if (it->failed)
		return;
	switch (s->kind) {
	case TIR_SEQ:
		for (int i = 0; i < s->n && !it->failed; i++)
			exec(it, s->list[i]);
		break;
	case TIR_FOR: {
		int64_t n = eval(it, s->a).i;

		for (int64_t i = 0; i < n && !it->failed; i++) {
			it->vars[s->var->id] = mk(DTYPE_I64, 0, i);
			exec(it, s->b);
		}
		break;
	}
	case TIR_STORE: {
		int64_t i = eval(it, s->a).i;

		store(s->buf->dtype, it->bufs[s->buf->index], i,
		      convert(eval(it, s->b), s->b->dtype, s->buf->dtype));
		break;
	}
	case TIR_IF: {
		struct ival c = eval(it, s->a);

		if (isf(s->a->dtype) ? c.f != 0 : c.i != 0)
			exec(it, s->b);
		else if (s->c)
			exec(it, s->c);
		break;
	}
	case TIR_LET:
	case TIR_ASSIGN:
		it->vars[s->var->id] = convert(eval(it, s->a), s->a->dtype, s->var->dtype);
		break;
	case TIR_EXTERN:
		it->failed = 1;
		break;
	default:
		BUG("interp stmt kind %d", s->kind);
	}
}

int tir_interpret(const struct tir_func *f, void **bufs, const int64_t *syms)
{
	struct interp it = { bufs, syms, NULL, 0 };

	it.vars = xcalloc((size_t)f->n_vars + 1, sizeof(struct ival));
	exec(&it, f->body);
	free(it.vars);
	return it.failed ? -1 : 0;
}
