/*
 * ops_elemwise.c - elementwise and broadcast ops. All of them lower through
 * lower_map(): one loop nest over the output, one load per input (with
 * numpy broadcasting), and a scalar expression from map_expr().
 */
#include "ops.h"
#include "../../runtime/rt_half.h"

#include <math.h>
#include <string.h>

int infer_unary(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 1, n->op == OP_CLIP ? 3 : 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (n->op != OP_IDENTITY && n->op != OP_CLIP && n->op != OP_NEG && n->op != OP_ABS &&
	    n->op != OP_SIGN && n->op != OP_RELU && !dtype_is_float(x->dtype)) {
		diag_error(g->ctx, "%s: type %s is not supported (expected a float type)",
			   node_loc(g, n), dtype_name(x->dtype));
		return -1;
	}
	if (n->op == OP_GELU && strcmp(node_attr_str(n, "approximate", "none"), "none") &&
	    strcmp(node_attr_str(n, "approximate", "none"), "tanh")) {
		diag_error(g->ctx, "%s: approximate '%s' is not supported (expected none or tanh)",
			   node_loc(g, n), node_attr_str(n, "approximate", "none"));
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

static bool is_bool(enum dtype t)
{
	return t == DTYPE_BOOL;
}

/*
 * Unary or binary ops whose inputs must all be of one family (what: "bool",
 * "an integer type"), broadcast to the output of dtype out (UNDEF: the
 * inputs').
 */
static int infer_typed(struct graph *g, struct node *n, int arity, bool (*ok)(enum dtype),
		       const char *what, enum dtype out)
{
	if (infer_arity(g, n, arity, arity, 1) < 0)
		return -1;
	for (int i = 0; i < arity; i++) {
		struct value *v = infer_input(g, n, i);

		if (!v)
			return -1;
		if (!ok(v->dtype)) {
			diag_error(g->ctx, "%s: input %d must be %s, not %s", node_loc(g, n), i,
				   what, dtype_name(v->dtype));
			return -1;
		}
	}
	return infer_broadcast_to(g, n, out);
}

/* BitwiseAnd/Or/Xor/Not (opset 18): integer types only. */
int infer_bitwise(struct graph *g, struct node *n)
{
	return infer_typed(g, n, n->op == OP_BITWISENOT ? 1 : 2, dtype_is_int, "an integer type",
			   DTYPE_UNDEF);
}

int infer_binary(struct graph *g, struct node *n)
{
	bool variadic = n->op == OP_MAX || n->op == OP_MIN || n->op == OP_SUM || n->op == OP_MEAN;

	if (infer_arity(g, n, variadic ? 1 : 2, variadic ? -1 : 2, 1) < 0)
		return -1;
	for (int i = 0; i < n->n_in; i++)
		if (!infer_input(g, n, i))
			return -1;
	if (n->op == OP_BITSHIFT && !dtype_is_int(node_in(g, n, 0)->dtype)) {
		diag_error(g->ctx, "%s: BitShift needs an integer type", node_loc(g, n));
		return -1;
	}
	return infer_broadcast_to(g, n, DTYPE_UNDEF);
}

/* SwiGLU (opset 28): float A and B of one type and one shape (no broadcasting). */
int infer_swiglu(struct graph *g, struct node *n)
{
	struct value *a, *b;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(a = infer_input(g, n, 0)) ||
	    !(b = infer_input(g, n, 1)))
		return -1;
	if (!dtype_is_float(a->dtype) || b->dtype != a->dtype) {
		diag_error(g->ctx, "%s: A and B must have one float type, not %s and %s",
			   node_loc(g, n), dtype_name(a->dtype), dtype_name(b->dtype));
		return -1;
	}
	if (!shape_eq(&a->shape, &b->shape)) {
		struct strbuf x = STRBUF_INIT, y = STRBUF_INIT;

		shape_print(g, &a->shape, &x);
		shape_print(g, &b->shape, &y);
		diag_error(g->ctx, "%s: A %s and B %s must have one shape", node_loc(g, n),
			   sb_str(&x), sb_str(&y));
		sb_release(&x);
		sb_release(&y);
		return -1;
	}
	infer_set(g, n, 0, a->dtype, &a->shape);
	return 0;
}

int infer_compare(struct graph *g, struct node *n)
{
	struct value *a, *b;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(a = infer_input(g, n, 0)) ||
	    !(b = infer_input(g, n, 1)))
		return -1;
	/* Equal of strings (pass_infer lets only Equal take them) compares two */
	if (dtype_is_string(a->dtype) != dtype_is_string(b->dtype)) {
		diag_error(g->ctx, "%s: inputs of types %s and %s (a string compares only with a "
			   "string)", node_loc(g, n), dtype_name(a->dtype), dtype_name(b->dtype));
		return -1;
	}
	return infer_broadcast_to(g, n, DTYPE_BOOL);
}

int infer_logical(struct graph *g, struct node *n)
{
	return infer_typed(g, n, n->op == OP_NOT ? 1 : 2, is_bool, "bool", DTYPE_BOOL);
}

int infer_isx(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	infer_set(g, n, 0, DTYPE_BOOL, &x->shape);
	return 0;
}

/* Cast's round_mode (opset 24, for float8e8m0): 0 up, 1 down, 2 nearest; -1 unknown. */
static int cast_round_mode(const struct node *n)
{
	const char *m = node_attr_str(n, "round_mode", "up");

	return !strcmp(m, "up") ? 0 : !strcmp(m, "down") ? 1 : !strcmp(m, "nearest") ? 2 : -1;
}

int infer_cast(struct graph *g, struct node *n)
{
	struct value *x;
	enum dtype t;

	if (infer_arity(g, n, n->op == OP_CAST ? 1 : 2, n->op == OP_CAST ? 1 : 2, 1) < 0 ||
	    !(x = infer_input(g, n, 0)))
		return -1;
	if (n->op == OP_CASTLIKE) {
		struct value *like = infer_input(g, n, 1);

		if (!like)
			return -1;
		t = like->dtype;
	} else {
		int64_t to = node_attr_int(n, "to", -1);

		t = dtype_from_onnx((int)to);
		if (t == DTYPE_UNDEF) {
			diag_error(g->ctx, "%s: cast to ONNX type %lld is not supported",
				   node_loc(g, n), (long long)to);
			return -1;
		}
	}
	if (cast_round_mode(n) < 0) {
		diag_error(g->ctx, "%s: round_mode '%s' is not supported (expected up, down or "
			   "nearest)", node_loc(g, n), node_attr_str(n, "round_mode", "up"));
		return -1;
	}
	if (((dtype_is_float8(t) || dtype_is_subbyte(t)) && dtype_is_string(x->dtype)) ||
	    ((dtype_is_float8(x->dtype) || dtype_is_subbyte(x->dtype)) && dtype_is_string(t))) {
		diag_error(g->ctx, "%s: casts between strings and %s are not supported",
			   node_loc(g, n), dtype_name(dtype_is_string(t) ? x->dtype : t));
		return -1;
	}
	infer_set(g, n, 0, t, &x->shape);
	return 0;
}

/*
 * BitCast (opset 26): the input's bytes as type 'to', which must have the
 * input's size; strings have none to reinterpret.
 */
int infer_bitcast(struct graph *g, struct node *n)
{
	struct value *x;
	int64_t to = node_attr_int(n, "to", -1);
	enum dtype t = dtype_from_onnx((int)to);

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (t == DTYPE_UNDEF || dtype_is_string(t) || dtype_is_string(x->dtype)) {
		diag_error(g->ctx, "%s: bitcast from %s to ONNX type %lld is not supported",
			   node_loc(g, n), dtype_name(x->dtype), (long long)to);
		return -1;
	}
	if (dtype_size(t) != dtype_size(x->dtype)) {
		diag_error(g->ctx, "%s: %s and %s differ in width", node_loc(g, n),
			   dtype_name(x->dtype), dtype_name(t));
		return -1;
	}
	infer_set(g, n, 0, t, &x->shape);
	return 0;
}

/* One rt_bitcast call (runtime/rt_half.h): C has no cast that keeps the bits. */
int lower_bitcast(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	struct tir *args[3];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[2] = tir_mul(L->b, lower_numel(L, &x->shape),
			  tir_int(L->b, (int64_t)dtype_size(x->dtype)));
	tir_extern(L->b, "rt_bitcast", args, 3);
	return 0;
}

int infer_where(struct graph *g, struct node *n)
{
	struct value *c;

	if (infer_arity(g, n, 3, 3, 1) < 0 || !(c = infer_input(g, n, 0)) ||
	    !infer_input(g, n, 1) || !infer_input(g, n, 2))
		return -1;
	if (infer_broadcast_to(g, n, DTYPE_UNDEF) < 0)
		return -1;
	node_out(g, n, 0)->dtype = node_in(g, n, 1)->dtype;
	return 0;
}

bool dropout_is_training(struct graph *g, const struct node *n)
{
	const struct value *ratio = node_in(g, n, 1), *training = node_in(g, n, 2);
	double v;

	if (!training || (value_const_scalar(g, training, &v) && v == 0))
		return false;
	return !(ratio && value_const_scalar(g, ratio, &v) && v == 0);
}

/*
 * Y: X's type and shape; the optional mask: bool, X's shape. Training mode
 * (dropout_is_training) is random; otherwise Dropout is the identity.
 */
int infer_dropout(struct graph *g, struct node *n)
{
	struct value *x, *r = NULL, *t = NULL;

	if (infer_arity(g, n, 1, 3, 2) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if ((node_in(g, n, 1) && !(r = infer_input(g, n, 1))) ||
	    (node_in(g, n, 2) && !(t = infer_input(g, n, 2))))
		return -1;
	if (dropout_is_training(g, n) &&
	    (!dtype_is_float(x->dtype) || (r && !dtype_is_float(r->dtype)) ||
	     t->dtype != DTYPE_BOOL)) {
		diag_error(g->ctx, "%s: training mode needs float 'data' and 'ratio' and a bool "
			   "'training_mode'", node_loc(g, n));
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	if (n->n_out > 1)
		infer_set(g, n, 1, DTYPE_BOOL, &x->shape);
	return 0;
}

/* ---- lowering ---- */

static struct tir *fc(struct lower *L, enum dtype t, double v)
{
	return tir_const(L->b, t, v);
}

static struct tir *attr_c(struct lower *L, enum dtype t, const char *name, double def)
{
	return fc(L, t, node_attr_float(L->n, name, def));
}

static struct tir *call(struct lower *L, enum tir_intrin f, struct tir *x)
{
	return tir_call1(L->b, f, x);
}

/*
 * The value of input i of L's node when it is a constant of one element
 * (float or integer): true and *out, else false.
 */
static bool const_scalar(struct lower *L, int i, double *out)
{
	const struct value *v;

	if (i >= L->n->n_in || L->n->in[i] < 0)
		return false;
	v = &L->g->values.v[L->n->in[i]];
	if (!v->data || !shape_is_static(&v->shape) || shape_numel_static(&v->shape) != 1)
		return false;
	switch (v->dtype) {
	case DTYPE_F32: *out = *(const float *)v->data; return true;
	case DTYPE_F64: *out = *(const double *)v->data; return true;
	case DTYPE_F16: *out = rt_h2f(*(const uint16_t *)v->data); return true;
	case DTYPE_BF16: *out = rt_bf2f(*(const uint16_t *)v->data); return true;
	case DTYPE_I32: *out = *(const int32_t *)v->data; return true;
	case DTYPE_I64: *out = (double)*(const int64_t *)v->data; return true;
	default: return false;
	}
}

/*
 * Pow(a, e) for a constant exponent e by cheaper operations, each giving
 * the same result as powf/pow for every a, NaN, Inf and -0 included: 1 -> a,
 * 2 -> a*a, 3 -> a*a*a (two roundings: within 1 ulp of pow, which rounds
 * once), -1 -> 1/a, 0.5 -> sqrt(a) + 0 (pow(-0, 0.5) is +0) and +Inf for
 * -Inf (pow's, where sqrt gives NaN). NULL for other exponents.
 */
static struct tir *pow_reduced(struct lower *L, struct tir *a, double e, enum dtype t)
{
	struct tir_builder *b = L->b;

	if (e == 1)
		return a;
	if (e == 2)
		return tir_mul(b, a, a);
	if (e == 3)
		return tir_mul(b, tir_mul(b, a, a), a);
	if (e == -1)
		return tir_bin(b, BIN_DIV, fc(L, t, 1), a);
	if (e == 0.5)
		return tir_select(b, tir_bin(b, BIN_EQ, a, fc(L, t, -INFINITY)),
				  fc(L, t, INFINITY), tir_add(b, call(L, INTRIN_SQRT, a),
							      fc(L, t, 0)));
	return NULL;
}

/* Swish (opset 24), SwiGLU's gate: x sigmoid(alpha x) = x / (1 + exp(-alpha x)). */
static struct tir *swish(struct lower *L, struct tir *x, enum dtype t)
{
	struct tir_builder *b = L->b;
	struct tir *ax = tir_mul(b, attr_c(L, t, "alpha", 1.0), x);

	return tir_bin(b, BIN_DIV, x, tir_add(b, fc(L, t, 1), call(L, INTRIN_EXP,
								  tir_un(b, UN_NEG, ax))));
}

/* The unsigned type of t's width (t itself when unsigned). */
static enum dtype unsigned_of(enum dtype t)
{
	switch (t) {
	case DTYPE_I8: return DTYPE_U8;
	case DTYPE_I16: return DTYPE_U16;
	case DTYPE_I32: return DTYPE_U32;
	case DTYPE_I64: return DTYPE_U64;
	default: return t;
	}
}

/*
 * BitShift as opset 28 defines it for every integer type: a signed right
 * shift is arithmetic, a left shift drops the bits past the sign bit (done
 * unsigned: C leaves a negative one undefined), and a shift by a negative
 * amount or by the type's width or more gives what the sign fill alone
 * gives (-1 for a negative x shifted right, else 0). The amount is clamped
 * before the shift so that no lane shifts out of range. No locals: a
 * fused prologue inlines the expression.
 */
static struct tir *bitshift(struct lower *L, struct tir *x, struct tir *y, enum dtype t)
{
	struct tir_builder *b = L->b;
	bool right = !strcmp(node_attr_str(L->n, "direction", "LEFT"), "RIGHT");
	bool sgn = dtype_is_signed(t);
	struct tir *zero = fc(L, t, 0), *ok, *s, *r, *fill;

	ok = tir_bin(b, BIN_LT, y, fc(L, t, (double)(dtype_size(t) * 8)));
	if (sgn)
		ok = tir_bin(b, BIN_LAND, tir_bin(b, BIN_GE, y, zero), ok);
	s = tir_select(b, ok, y, zero);
	if (right) {
		r = tir_bin(b, BIN_SHR, x, s);
		fill = sgn ? tir_select(b, tir_bin(b, BIN_LT, x, zero), fc(L, t, -1), zero) : zero;
	} else {
		r = tir_cast(b, t, tir_bin(b, BIN_SHL, tir_cast(b, unsigned_of(t), x),
					   tir_cast(b, unsigned_of(t), s)));
		fill = zero;
	}
	return tir_select(b, ok, r, fill);
}

/*
 * Mod-28 of floats with fmod 0: a - floor(a / b) * b, the sign of b, as
 * numpy's remainder: fmod's remainder moved by b when their signs differ,
 * and a zero remainder signed like b. Infinities and NaN come out of fmod
 * as the spec asks (fmod(x, inf) = x, then x + inf = inf when the signs
 * differ).
 */
static struct tir *floor_mod(struct lower *L, struct tir *a, struct tir *d, enum dtype t)
{
	struct tir_builder *b = L->b;
	struct tir *zero = fc(L, t, 0), *r, *neg;

	r = tir_call2(b, INTRIN_FMOD, a, d);
	neg = tir_bin(b, BIN_LT, d, zero);
	return tir_select(b, tir_bin(b, BIN_EQ, r, zero),
			  tir_select(b, neg, tir_un(b, UN_NEG, zero), zero),
			  tir_select(b, tir_bin(b, BIN_NE, tir_bin(b, BIN_LT, r, zero), neg),
				     tir_add(b, r, d), r));
}

/* The scalar result of op n for loaded inputs x[0..]. */
static struct tir *map_expr(struct lower *L, struct tir **x, int nx, enum dtype t)
{
	struct tir_builder *b = L->b;
	const struct node *n = L->n;
	struct tir *a = x[0], *r;
	struct tir *zero = fc(L, t, 0), *one = fc(L, t, 1);

	switch (n->op) {
	case OP_ABS:
		return dtype_is_signed(t) ? tir_select(b, tir_bin(b, BIN_LT, a, zero),
						       tir_un(b, UN_NEG, a), a) : a;
	case OP_ACOS: return call(L, INTRIN_ACOS, a);
	case OP_ACOSH: return call(L, INTRIN_ACOSH, a);
	case OP_ASIN: return call(L, INTRIN_ASIN, a);
	case OP_ASINH: return call(L, INTRIN_ASINH, a);
	case OP_ATAN: return call(L, INTRIN_ATAN, a);
	case OP_ATANH: return call(L, INTRIN_ATANH, a);
	case OP_CEIL: return call(L, INTRIN_CEIL, a);
	case OP_COS: return call(L, INTRIN_COS, a);
	case OP_COSH: return call(L, INTRIN_COSH, a);
	case OP_ERF: return call(L, INTRIN_ERF, a);
	case OP_EXP: return call(L, INTRIN_EXP, a);
	case OP_FLOOR: return call(L, INTRIN_FLOOR, a);
	case OP_LOG: return call(L, INTRIN_LOG, a);
	case OP_ROUND: return call(L, INTRIN_RINT, a);
	case OP_SIN: return call(L, INTRIN_SIN, a);
	case OP_SINH: return call(L, INTRIN_SINH, a);
	case OP_SQRT: return call(L, INTRIN_SQRT, a);
	case OP_TAN: return call(L, INTRIN_TAN, a);
	case OP_TANH: return call(L, INTRIN_TANH, a);
	case OP_IDENTITY: return a;
	case OP_NEG: return tir_un(b, UN_NEG, a);
	case OP_NOT: return tir_un(b, UN_LNOT, a);
	case OP_RECIPROCAL: return tir_bin(b, BIN_DIV, one, a);
	case OP_RELU: return tir_bin(b, BIN_MAX, a, zero);
	case OP_SIGN:
		return tir_select(b, tir_bin(b, BIN_GT, a, zero), one,
				  tir_select(b, tir_bin(b, BIN_LT, a, zero), fc(L, t, -1), zero));
	case OP_SIGMOID:
		return tir_bin(b, BIN_DIV, one, tir_add(b, one, call(L, INTRIN_EXP,
							tir_un(b, UN_NEG, a))));
	case OP_SOFTPLUS:
		/* log(1 + exp(x)) without overflow for large x */
		return tir_select(b, tir_bin(b, BIN_GT, a, fc(L, t, 20)), a,
				  call(L, INTRIN_LOG1P, call(L, INTRIN_EXP, a)));
	case OP_MISH:
		/* x tanh(softplus(x)), softplus as in OP_SOFTPLUS */
		r = tir_select(b, tir_bin(b, BIN_GT, a, fc(L, t, 20)), a,
			       call(L, INTRIN_LOG1P, call(L, INTRIN_EXP, a)));
		return tir_mul(b, a, call(L, INTRIN_TANH, r));
	case OP_GELU:
		if (!strcmp(node_attr_str(n, "approximate", "none"), "tanh")) {
			/* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
			r = tir_add(b, a, tir_mul(b, fc(L, t, 0.044715), tir_mul(b, a,
									   tir_mul(b, a, a))));
			r = call(L, INTRIN_TANH, tir_mul(b, fc(L, t, 0.7978845608028654), r));
		} else {
			/* 0.5 x (1 + erf(x / sqrt(2))) */
			r = call(L, INTRIN_ERF, tir_mul(b, a, fc(L, t, 1 / sqrt(2))));
		}
		return tir_mul(b, tir_mul(b, fc(L, t, 0.5), a), tir_add(b, one, r));
	case OP_SOFTSIGN:
		return tir_bin(b, BIN_DIV, a, tir_add(b, one, call(L, INTRIN_FABS, a)));
	case OP_SWISH:
		return swish(L, a, t);
	case OP_SWIGLU:
		return tir_mul(b, swish(L, a, t), x[1]);
	case OP_ELU:
		return tir_select(b, tir_bin(b, BIN_LT, a, zero),
				  tir_mul(b, attr_c(L, t, "alpha", 1.0),
					  tir_bin(b, BIN_SUB, call(L, INTRIN_EXP, a), one)), a);
	case OP_CELU: {
		struct tir *al = attr_c(L, t, "alpha", 1.0);
		struct tir *e = tir_mul(b, al, tir_bin(b, BIN_SUB, call(L, INTRIN_EXP,
						tir_bin(b, BIN_DIV, a, al)), one));
		return tir_add(b, tir_bin(b, BIN_MAX, a, zero), tir_bin(b, BIN_MIN, e, zero));
	}
	case OP_SELU:
		return tir_mul(b, attr_c(L, t, "gamma", 1.05070102214813232421875),
			       tir_select(b, tir_bin(b, BIN_GT, a, zero), a,
					  tir_mul(b, attr_c(L, t, "alpha", 1.67326319217681884765625),
						  tir_bin(b, BIN_SUB, call(L, INTRIN_EXP, a), one))));
	case OP_LEAKYRELU:
		return tir_select(b, tir_bin(b, BIN_LT, a, zero),
				  tir_mul(b, attr_c(L, t, "alpha", 0.01), a), a);
	case OP_THRESHOLDEDRELU:
		return tir_select(b, tir_bin(b, BIN_GT, a, attr_c(L, t, "alpha", 1.0)), a, zero);
	case OP_HARDSIGMOID:
		r = tir_add(b, tir_mul(b, attr_c(L, t, "alpha", 0.2), a), attr_c(L, t, "beta", 0.5));
		return tir_bin(b, BIN_MAX, zero, tir_let(b, "hi", tir_bin(b, BIN_MIN, one, r)));
	case OP_HARDSWISH:
		r = tir_add(b, tir_mul(b, fc(L, t, 1.0 / 6.0), a), fc(L, t, 0.5));
		return tir_mul(b, a, tir_bin(b, BIN_MAX, zero,
					     tir_let(b, "hi", tir_bin(b, BIN_MIN, one, r))));
	case OP_SHRINK: {
		struct tir *lam = attr_c(L, t, "lambd", 0.5), *bias = attr_c(L, t, "bias", 0.0);

		return tir_select(b, tir_bin(b, BIN_LT, a, tir_un(b, UN_NEG, lam)),
				  tir_add(b, a, bias),
				  tir_select(b, tir_bin(b, BIN_GT, a, lam),
					     tir_bin(b, BIN_SUB, a, bias), zero));
	}
	case OP_CLIP:
		/* the lower bound in a local: one min/max per expression vectorises */
		r = a;
		if (nx > 1 && x[1])
			r = tir_bin(b, BIN_MAX, r, x[1]);
		if (nx > 2 && x[2])
			r = tir_bin(b, BIN_MIN, r == a ? r : tir_let(b, "lo", r), x[2]);
		return r;
	case OP_CAST:
	case OP_CASTLIKE:
		return tir_cast(b, t, a);
	case OP_ISNAN: return call(L, INTRIN_ISNAN, a);
	case OP_ISINF: {
		struct tir *inf = call(L, INTRIN_ISINF, a);
		bool pos = node_attr_int(n, "detect_positive", 1) != 0;
		bool neg = node_attr_int(n, "detect_negative", 1) != 0;
		struct tir *z = fc(L, L->in[0]->dtype, 0);

		if (pos && neg)
			return inf;
		if (!pos && !neg)
			return tir_typed_int(b, DTYPE_BOOL, 0);
		return tir_bin(b, BIN_LAND, inf, tir_bin(b, pos ? BIN_GT : BIN_LT, a, z));
	}
	case OP_ADD: case OP_SUM: case OP_MEAN:
		r = a;
		for (int i = 1; i < nx; i++)
			r = tir_add(b, r, x[i]);
		if (n->op == OP_MEAN)
			r = tir_bin(b, BIN_DIV, r, fc(L, t, nx));
		return r;
	case OP_SUB: return tir_bin(b, BIN_SUB, a, x[1]);
	case OP_MUL: return tir_mul(b, a, x[1]);
	case OP_DIV: return tir_bin(b, BIN_DIV, a, x[1]);
	case OP_MAX: case OP_MIN:
		r = a;
		for (int i = 1; i < nx; i++)
			r = tir_bin(b, n->op == OP_MAX ? BIN_MAX : BIN_MIN, r, x[i]);
		return r;
	case OP_POW: {
		double e;

		/* strength reduction by a constant exponent (kept: the node and its span) */
		if ((t == DTYPE_F32 || t == DTYPE_F64) && const_scalar(L, 1, &e) &&
		    (r = pow_reduced(L, a, e, t)))
			return r;
		if (dtype_is_float(t))
			return tir_call2(b, INTRIN_POW, a, tir_cast(b, t, x[1]));
		return tir_cast(b, t, tir_call2(b, INTRIN_POW, tir_cast(b, DTYPE_F64, a),
						tir_cast(b, DTYPE_F64, x[1])));
	}
	case OP_MOD:
		if (dtype_is_float(t) && !node_attr_int(n, "fmod", 0) && L->g->opset >= 28)
			return floor_mod(L, a, x[1], t);
		if (dtype_is_float(t) || node_attr_int(n, "fmod", 0))
			return dtype_is_float(t) ? tir_call2(b, INTRIN_FMOD, a, x[1])
						 : tir_bin(b, BIN_MOD, a, x[1]);
		/* Python-style: the result takes the divisor's sign */
		r = tir_bin(b, BIN_MOD, a, x[1]);
		if (!dtype_is_signed(t))
			return r;
		return tir_select(b, tir_bin(b, BIN_LAND, tir_bin(b, BIN_NE, r, zero),
					     tir_bin(b, BIN_NE, tir_bin(b, BIN_LT, r, zero),
						     tir_bin(b, BIN_LT, x[1], zero))),
				  tir_add(b, r, x[1]), r);
	case OP_PRELU:
		return tir_select(b, tir_bin(b, BIN_LT, a, zero), tir_mul(b, x[1], a), a);
	case OP_BITSHIFT:
		return bitshift(L, a, x[1], t);
	case OP_EQUAL: return tir_bin(b, BIN_EQ, a, x[1]);
	case OP_GREATER: return tir_bin(b, BIN_GT, a, x[1]);
	case OP_GREATEROREQUAL: return tir_bin(b, BIN_GE, a, x[1]);
	case OP_LESS: return tir_bin(b, BIN_LT, a, x[1]);
	case OP_LESSOREQUAL: return tir_bin(b, BIN_LE, a, x[1]);
	case OP_AND: return tir_bin(b, BIN_LAND, a, x[1]);
	case OP_OR: return tir_bin(b, BIN_LOR, a, x[1]);
	case OP_XOR: return tir_bin(b, BIN_NE, a, x[1]);
	case OP_BITWISEAND: return tir_bin(b, BIN_AND, a, x[1]);
	case OP_BITWISEOR: return tir_bin(b, BIN_OR, a, x[1]);
	case OP_BITWISEXOR: return tir_bin(b, BIN_XOR, a, x[1]);
	case OP_BITWISENOT: return tir_un(b, UN_NOT, a);
	case OP_WHERE: return tir_select(b, a, x[1], x[2]);
	default:
		BUG("map_expr: op %s", op_info(n->op)->name);
	}
}

/*
 * out[idx] = map_expr(in0[bcast(idx)], in1[bcast(idx)], ...): a flat loop
 * when every input has the output's shape, else one loop per output dim.
 */
/* One element: every dim a constant 1 (or rank 0). */
static bool is_scalar(const struct shape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (!dim_is_const(s->d[i]) || s->d[i].c != 1)
			return false;
	return true;
}

/*
 * Cast to or from string: one call of the run-time helper over the whole
 * tensor (runtime/rt_string.h), outside any parallel region, as its
 * strings come from the run's pool.
 */
static int lower_cast_string(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *args[5];
	bool to = dtype_is_string(y->dtype);
	const struct value *num = to ? x : y;

	if (!dtype_is_string(num->dtype) && !dtype_is_float(num->dtype) &&
	    !dtype_is_int(num->dtype) && num->dtype != DTYPE_BOOL)
		BUG("string cast with %s", dtype_name(num->dtype));
	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, dtype_to_onnx(to ? x->dtype : y->dtype));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = lower_numel(L, &y->shape);
	if (dtype_is_string(x->dtype) && to)	/* string to string: copies */
		tir_extern(L->b, "rt_str_copy", (struct tir *[]){ args[0], args[2], args[3] }, 3);
	else
		tir_extern(L->b, to ? "rt_str_from_num" : "rt_str_to_num", args, 4);
	return 0;
}

/*
 * Cast to or from an 8-bit float, float4e2m1 or a sub-byte integer: one
 * rt_cast_f8 call over the whole tensor (runtime/rt_float8.h), which
 * converts through double with the node's saturate and round_mode (and
 * wraps to int4, uint4, int2 and uint2 as Cast's fixed-point rule says).
 */
static int lower_cast_f8(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *args[7];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, dtype_to_onnx(x->dtype));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = tir_int(L->b, dtype_to_onnx(y->dtype));
	args[4] = lower_numel(L, &y->shape);
	args[5] = tir_int(L->b, node_attr_int(L->n, "saturate", 1) != 0);
	args[6] = tir_int(L->b, cast_round_mode(L->n));
	tir_extern(L->b, "rt_cast_f8", args, 7);
	return 0;
}

/* Whether n is a Cast or CastLike that reads or makes 8-bit floats or sub-byte types. */
static bool is_float8_cast(struct graph *g, const struct node *n)
{
	enum dtype x = node_in(g, n, 0)->dtype, y = node_out(g, n, 0)->dtype;

	return (n->op == OP_CAST || n->op == OP_CASTLIKE) &&
	       (dtype_is_float8(x) || dtype_is_float8(y) || dtype_is_subbyte(x) ||
		dtype_is_subbyte(y));
}

/* Whether n is a Cast or CastLike that reads or makes strings. */
static bool is_string_cast(struct graph *g, const struct node *n)
{
	return (n->op == OP_CAST || n->op == OP_CASTLIKE) &&
	       (dtype_is_string(node_in(g, n, 0)->dtype) ||
		dtype_is_string(node_out(g, n, 0)->dtype));
}

/*
 * Equal of two string tensors (opset 19): per output element, one
 * rt_str_equal call on the broadcast elements (runtime/rt_string.h).
 */
static int lower_equal_string(struct lower *L)
{
	const struct value *a = lower_in(L, 0), *c = lower_in(L, 1), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *args[3];

	lower_loops(L, &y->shape, idx);
	args[0] = tir_addr(L->b, L->out[0], lower_offset(L, &y->shape, idx));
	args[1] = tir_load(L->b, L->in[0], lower_bcast_offset(L, &a->shape, &y->shape, idx));
	args[2] = tir_load(L->b, L->in[1], lower_bcast_offset(L, &c->shape, &y->shape, idx));
	tir_extern(L->b, "rt_str_equal", args, 3);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* Whether input 0 of n is a string tensor (Equal of strings). */
static bool reads_strings(struct graph *g, const struct node *n)
{
	return n->n_in > 0 && node_in(g, n, 0) && dtype_is_string(node_in(g, n, 0)->dtype);
}

int lower_map(struct lower *L)
{
	const struct value *out = lower_out(L, 0);
	int nin = L->n->n_in;
	struct tir **x = arena_alloc(L->g->arena, sizeof(*x) * (size_t)(nin + 1));
	struct tir *idx[MAX_RANK], *flat = NULL;
	bool same = true;
	enum dtype t = out->dtype;

	if (is_string_cast(L->g, L->n))
		return lower_cast_string(L);
	if (is_float8_cast(L->g, L->n))
		return lower_cast_f8(L);
	if (L->n->op == OP_EQUAL && reads_strings(L->g, L->n))
		return lower_equal_string(L);
	if (L->n->op == OP_CASTLIKE)
		nin = 1;
	/* one flat loop when every input has the output's shape or one element */
	for (int i = 0; i < nin; i++)
		if (lower_in(L, i) && !shape_eq(&lower_in(L, i)->shape, &out->shape) &&
		    !is_scalar(&lower_in(L, i)->shape))
			same = false;
	/* each output written once: the loops are parallel either way */
	if (same) {
		flat = tir_loop(L->b, lower_numel(L, &out->shape));
		tir_mark_parallel(L->b);
	} else {
		lower_loops_parallel(L, &out->shape, idx);
	}
	for (int i = 0; i < nin; i++) {
		const struct value *v = lower_in(L, i);

		if (!v) {
			x[i] = NULL;
			continue;
		}
		x[i] = tir_load(L->b, L->in[i], same && is_scalar(&v->shape) &&
				!shape_eq(&v->shape, &out->shape) ? tir_int(L->b, 0)
				: same ? flat : lower_bcast_offset(L, &v->shape, &out->shape, idx));
	}
	/* comparisons and casts compute in the input type */
	if (t == DTYPE_BOOL || L->n->op == OP_CAST || L->n->op == OP_CASTLIKE ||
	    L->n->op == OP_WHERE)
		t = L->n->op == OP_CAST || L->n->op == OP_CASTLIKE ? out->dtype
			: L->n->op == OP_WHERE ? out->dtype : lower_in(L, 0)->dtype;
	tir_store(L->b, L->out[0], same ? flat : lower_offset(L, &out->shape, idx),
		  map_expr(L, x, nin, t));
	if (same)
		tir_end(L->b);
	else
		lower_end_loops(L, out->shape.rank);
	return 0;
}

/*
 * Training-mode Dropout: one rt_rand_dropout call (runtime/rt_random.h),
 * which reads ratio and training_mode at run time. An absent ratio is
 * passed as rdtype 0 (the default 0.5), an absent mask as has_mask 0; the
 * buffers in their places are never read.
 */
static int lower_dropout_training(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *r = lower_in(L, 1);
	bool mask = L->n->n_out > 1 && L->out[1];
	struct tir *args[11];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, dtype_to_onnx(x->dtype));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = tir_addr(L->b, mask ? L->out[1] : L->out[0], tir_int(L->b, 0));
	args[4] = tir_int(L->b, mask);
	args[5] = lower_numel(L, &x->shape);
	args[6] = tir_addr(L->b, r ? L->in[1] : L->in[0], tir_int(L->b, 0));
	args[7] = tir_int(L->b, r ? dtype_to_onnx(r->dtype) : 0);
	args[8] = tir_addr(L->b, L->in[2], tir_int(L->b, 0));
	lower_rand_key(L, args + 9);
	tir_extern(L->b, "rt_rand_dropout", args, 11);
	return 0;
}

/* Dropout at inference is the identity; the optional mask is all true. */
int lower_dropout(struct lower *L)
{
	const struct value *out = lower_out(L, 0);
	struct tir *i;

	if (dropout_is_training(L->g, L->n))
		return lower_dropout_training(L);
	i = tir_loop(L->b, lower_numel(L, &out->shape));

	tir_store(L->b, L->out[0], i, tir_load(L->b, L->in[0], i));
	if (L->n->n_out > 1)
		tir_store(L->b, L->out[1], i, tir_typed_int(L->b, DTYPE_BOOL, 1));
	tir_end(L->b);
	return 0;
}

bool op_fusable_elementwise(struct graph *g, const struct node *n)
{
	return op_info(n->op)->lower == lower_map && n->op != OP_ISINF && n->op != OP_CASTLIKE &&
	       n->n_out == 1 && node_out(g, n, 0)->has_shape && !is_string_cast(g, n) &&
	       !is_float8_cast(g, n) && !reads_strings(g, n);
}

/* Is value v read by a live node outside nodes[0..n), or a graph output? */
static bool escapes(struct graph *g, int v, const int *nodes, int n)
{
	if (g->values.v[v].flags & VALUE_OUTPUT)
		return true;
	for (int i = 0; i < g->nodes.n; i++) {
		const struct node *c = &g->nodes.v[i];
		bool inside = false;

		if (c->dead)
			continue;
		for (int k = 0; k < n && !inside; k++)
			inside = nodes[k] == i;
		if (inside)
			continue;
		for (int j = 0; j < c->n_in; j++)
			if (c->in[j] == v)
				return true;
	}
	return false;
}

/* How many times nodes[0..n) read value v. */
static int uses(struct graph *g, int v, const int *nodes, int n)
{
	int u = 0;

	for (int k = 0; k < n; k++)
		for (int i = 0; i < g->nodes.v[nodes[k]].n_in; i++)
			u += g->nodes.v[nodes[k]].in[i] == v;
	return u;
}

/*
 * The body of a fused elementwise loop over shape s (flat index flat when
 * every outside input has s's shape or one element, else the nest idx):
 * each node's result becomes a local the later ones read, stored where
 * buf[its output] is a buffer. local and buf are indexed by value id.
 * With inline_once, a result read once and not stored stays an expression
 * of its reader, as in an unfused kernel: GCC 12 did not vectorise Clip's
 * NaN-aware selects on a local in place (a Conv + Clip epilogue ran 20x
 * slower than the two kernels apart).
 */
static void fused_body(struct lower *L, const int *nodes, int n, const struct shape *s,
		       struct tir *flat, struct tir **idx, struct tir **local,
		       struct tir_buf **buf, bool inline_once)
{
	struct graph *g = L->g;
	struct tir_builder *b = L->b;
	struct tir *off = flat ? flat : lower_offset(L, s, idx);

	for (int k = 0; k < n; k++) {
		const struct node *nd = &g->nodes.v[nodes[k]];
		const struct value *out = node_out(g, nd, 0);
		struct tir **x = arena_alloc(g->arena, sizeof(*x) * (size_t)(nd->n_in + 1));
		enum dtype t = out->dtype;

		L->n = nd;
		for (int i = 0; i < nd->n_in; i++) {
			int v = nd->in[i];
			const struct value *val = v >= 0 ? &g->values.v[v] : NULL;

			if (!val)
				x[i] = NULL;
			else if (local[v])
				x[i] = local[v];
			else
				x[i] = tir_load(b, buf[v], is_scalar(&val->shape) &&
						!shape_eq(&val->shape, s) ? tir_int(b, 0)
						: flat ? flat : lower_bcast_offset(L, &val->shape, s, idx));
		}
		if (t == DTYPE_BOOL || nd->op == OP_CAST || nd->op == OP_WHERE)
			t = nd->op == OP_CAST || nd->op == OP_WHERE ? out->dtype
			    : lower_in(L, 0)->dtype;
		local[nd->out[0]] = map_expr(L, x, nd->n_in, t);
		if (!inline_once || buf[nd->out[0]] || uses(g, nd->out[0], nodes + k + 1, n - k - 1) > 1)
			local[nd->out[0]] = tir_let(b, "t", local[nd->out[0]]);
		if (buf[nd->out[0]])
			tir_store(b, buf[nd->out[0]], off, local[nd->out[0]]);
	}
}

struct tir_func *op_lower_fused(struct graph *g, const int *nodes, int n, const char *name,
				int **args, int *n_args, int *n_inputs)
{
	const struct shape *s = &node_out(g, &g->nodes.v[nodes[n - 1]], 0)->shape;
	struct tir_builder b;
	struct lower L = { g, &b, NULL, NULL, NULL, NULL, 0, NULL, NULL, false, NULL };
	struct tir **local = arena_alloc(g->arena, sizeof(*local) * ((size_t)g->values.n + 1));
	struct tir_buf **buf = arena_alloc(g->arena, sizeof(*buf) * ((size_t)g->values.n + 1));
	struct tir *idx[MAX_RANK], *flat = NULL;
	int *a = arena_alloc(g->arena, sizeof(int) * (size_t)(4 * n + 8)), na = 0, cap = 4 * n + 8;
	bool same = true;
	struct tir_func *f;

	tir_builder_init(&b, g->arena, name);
	/* inputs made outside the group, each value once */
	for (int k = 0; k < n; k++) {
		const struct node *nd = &g->nodes.v[nodes[k]];

		for (int i = 0; i < nd->n_in; i++) {
			int v = nd->in[i];
			bool mine = false;

			if (v < 0 || buf[v])
				continue;
			for (int q = 0; q < k && !mine; q++)
				mine = g->nodes.v[nodes[q]].out[0] == v;
			if (mine)
				continue;
			if (na == cap)
				BUG("fused kernel with too many arguments");
			buf[v] = tir_param(&b, g->values.v[v].name, g->values.v[v].dtype);
			a[na++] = v;
			if (!shape_eq(&g->values.v[v].shape, s) && !is_scalar(&g->values.v[v].shape))
				same = false;
		}
	}
	*n_inputs = na;
	for (int k = 0; k < n; k++) {
		int o = g->nodes.v[nodes[k]].out[0];

		if (escapes(g, o, nodes, n)) {
			buf[o] = tir_param(&b, g->values.v[o].name, g->values.v[o].dtype);
			a[na++] = o;
		}
	}
	if (same) {
		flat = tir_loop(&b, lower_numel(&L, s));
		tir_mark_parallel(&b);
	} else {
		lower_loops_parallel(&L, s, idx);
	}
	fused_body(&L, nodes, n, s, flat, idx, local, buf, false);
	if (same)
		tir_end(&b);
	else
		lower_end_loops(&L, s->rank);
	f = tir_finish(&b);
	*args = a;
	*n_args = na;
	return f;
}

bool op_is_epilogue_anchor(struct graph *g, const struct node *n)
{
	enum op_kind k = op_info(n->op)->kind;

	return (k == OPK_ANCHOR || k == OPK_REDUCE || n->op == OP_SOFTMAX ||
		n->op == OP_LOGSOFTMAX) && n->n_out >= 1 && node_out(g, n, 0)->has_shape &&
	       !node_is_dynamic(g, n);
}

/* The types an epilogue may move between: its locals are floats either way. */
static bool float_type(enum dtype t)
{
	return t == DTYPE_F32 || dtype_is_half(t);
}

int op_epilogue_trim(struct graph *g, const struct node *a, const int *nodes, int n)
{
	enum dtype t = node_out(g, a, 0)->dtype;

	while (n > 0 && node_out(g, &g->nodes.v[nodes[n - 1]], 0)->dtype != t)
		n--;
	return n;
}

bool op_epilogue_accepts(struct graph *g, const struct node *a, const int *nodes, int n,
			 const struct node *c)
{
	const struct value *ao = node_out(g, a, 0), *co;
	bool reads = false;

	if (!op_fusable_elementwise(g, c))
		return false;
	co = node_out(g, c, 0);
	if ((co->dtype != ao->dtype && !(float_type(co->dtype) && float_type(ao->dtype))) ||
	    !shape_eq(&co->shape, &ao->shape))
		return false;
	for (int j = 0; j < c->n_in; j++) {
		int v = c->in[j];

		if (v < 0)
			continue;
		for (int o = 1; o < a->n_out; o++)
			if (a->out[o] == v)
				return false;
		reads |= v == a->out[0];
		for (int q = 0; q < n && !reads; q++)
			reads = g->nodes.v[nodes[q]].out[0] == v;
	}
	return reads;
}

void epilogue_plan(struct graph *g, const struct node *a, const int *nodes, int n,
		   struct lower_epilogue *e)
{
	int *all = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
	bool *seen = arena_alloc(g->arena, sizeof(bool) * ((size_t)g->values.n + 1));

	memset(e, 0, sizeof(*e));
	e->nodes = nodes;
	e->n = n;
	e->anchor_out = a->out[0];
	e->final = n ? g->nodes.v[nodes[n - 1]].out[0] : a->out[0];
	memcpy(all, nodes, sizeof(int) * (size_t)n);
	e->keep_anchor = n == 0 || escapes(g, e->anchor_out, all, n);
	e->extra = arena_alloc(g->arena, sizeof(int) * (size_t)(4 * n + 1));
	e->stored = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 1));
	e->n_extra = e->n_stored = 0;
	seen[e->anchor_out] = true;
	for (int k = 0; k < n; k++) {
		const struct node *nd = &g->nodes.v[nodes[k]];

		for (int i = 0; i < nd->n_in; i++) {
			int v = nd->in[i];

			if (v < 0 || seen[v])
				continue;
			seen[v] = true;
			if (e->n_extra == 4 * n)
				BUG("epilogue with too many inputs");
			e->extra[e->n_extra++] = v;
		}
		seen[nd->out[0]] = true;
		if ((nd->out[0] == e->final && e->keep_anchor && n > 0) ||
		    (nd->out[0] != e->final && escapes(g, nd->out[0], all, n)))
			e->stored[e->n_stored++] = nd->out[0];
	}
}

int lower_reduce(struct lower *L);	/* ops_reduce.c */

struct inline_ctx {
	struct lower *L;
	const struct lower_epilogue *e;
	struct tir_buf **ebuf;
};

/* The prologue's value at flat index idx of the anchor's input 0. */
static struct tir *prologue_at(void *p, struct tir *idx)
{
	struct inline_ctx *ic = p;
	struct lower *L = ic->L;
	struct graph *g = L->g;
	const struct node *anchor = L->n;
	struct tir **local = arena_alloc(g->arena, sizeof(*local) * ((size_t)g->values.n + 1));
	struct tir *r = NULL;

	for (int k = 0; k < ic->e->n_pro; k++) {
		const struct node *nd = &g->nodes.v[ic->e->pro[k]];
		const struct value *out = node_out(g, nd, 0);
		struct tir **x = arena_alloc(g->arena, sizeof(*x) * (size_t)(nd->n_in + 1));
		enum dtype t = out->dtype;

		L->n = nd;
		for (int i = 0; i < nd->n_in; i++) {
			int v = nd->in[i];

			if (v < 0)
				x[i] = NULL;
			else if (local[v])
				x[i] = local[v];
			else
				x[i] = tir_load(L->b, ic->ebuf[v], is_scalar(&g->values.v[v].shape) &&
						!shape_eq(&g->values.v[v].shape, &out->shape)
						? tir_int(L->b, 0) : idx);
		}
		if (t == DTYPE_BOOL || nd->op == OP_CAST || nd->op == OP_WHERE)
			t = nd->op == OP_CAST || nd->op == OP_WHERE ? out->dtype
			    : lower_in(L, 0)->dtype;
		r = local[nd->out[0]] = map_expr(L, x, nd->n_in, t);
	}
	L->n = anchor;
	return r;
}

void lower_epilogue(struct lower *L, const struct lower_epilogue *e, struct tir_buf **ebuf)
{
	struct graph *g = L->g;
	const struct node *anchor = L->n;
	const struct shape *s = &g->values.v[e->anchor_out].shape;
	struct tir **local = arena_alloc(g->arena, sizeof(*local) * ((size_t)g->values.n + 1));
	struct tir *idx[MAX_RANK], *flat = NULL;
	bool same = true;

	if (e->n_pro) {
		struct inline_ctx ic = { L, e, ebuf };

		tir_replace_loads(&L->b->stack.v[0], L->in[0], prologue_at, &ic);
	}
	if (e->n == 0)
		return;
	for (int i = 0; i < e->n_extra; i++) {
		const struct shape *xs = &g->values.v[e->extra[i]].shape;

		if (!shape_eq(xs, s) && !is_scalar(xs))
			same = false;
	}
	if (same) {
		flat = tir_loop(L->b, lower_numel(L, s));
		tir_mark_parallel(L->b);
	} else {
		lower_loops_parallel(L, s, idx);
	}
	/* a load, not a local, as the unfused kernel reads it (see fused_body) */
	local[e->anchor_out] = tir_load(L->b, L->out[0], flat ? flat : lower_offset(L, s, idx));
	fused_body(L, e->nodes, e->n, s, flat, idx, local, ebuf, true);
	if (same)
		tir_end(L->b);
	else
		lower_end_loops(L, s->rank);
	L->n = anchor;
}

bool epilogue_by_span(struct graph *g, const struct lower_epilogue *e)
{
	const struct shape *s = &g->values.v[e->anchor_out].shape;

	if (e->n_pro)
		return false;
	for (int k = 0; k < e->n_extra; k++) {
		const struct shape *xs = &g->values.v[e->extra[k]].shape;

		if (!shape_eq(xs, s) && !is_scalar(xs))
			return false;
	}
	return true;
}

bool lower_epilogue_span(struct lower *L, const struct lower_epilogue *e, struct tir_buf **ebuf,
			 struct tir *start, int64_t count)
{
	struct graph *g = L->g;
	const struct node *anchor = L->n;
	const struct shape *s = &g->values.v[e->anchor_out].shape;
	struct tir **local;
	struct tir *i, *flat;

	if (!epilogue_by_span(g, e))
		return false;
	if (e->n == 0)
		return true;
	local = arena_alloc(g->arena, sizeof(*local) * ((size_t)g->values.n + 1));
	i = tir_loop(L->b, tir_int(L->b, count));
	flat = tir_let(L->b, "f", tir_add(L->b, start, i));
	/* a load, not a local, as in lower_epilogue */
	local[e->anchor_out] = tir_load(L->b, L->out[0], flat);
	fused_body(L, e->nodes, e->n, s, flat, NULL, local, ebuf, true);
	tir_end(L->b);
	L->n = anchor;
	return true;
}

bool op_is_prologue_anchor(struct graph *g, const struct node *n)
{
	return (op_info(n->op)->lower == lower_reduce || n->op == OP_SOFTMAX ||
		n->op == OP_LOGSOFTMAX) && n->n_in >= 1 && n->in[0] >= 0 &&
	       node_out(g, n, 0)->has_shape && !node_is_dynamic(g, n);
}

bool prologue_plan(struct graph *g, const struct node *a, const int *nodes, int n,
		   struct lower_epilogue *e)
{
	const struct value *x = node_in(g, a, 0);
	int *all = arena_alloc(g->arena, sizeof(int) * (size_t)(n + 2));
	bool *seen = arena_alloc(g->arena, sizeof(bool) * ((size_t)g->values.n + 1));

	if (n < 1 || g->nodes.v[nodes[n - 1]].out[0] != a->in[0])
		return false;
	for (int j = 1; j < a->n_in; j++)
		for (int k = 0; k < n; k++)
			if (a->in[j] >= 0 && a->in[j] == g->nodes.v[nodes[k]].out[0])
				return false;
	memcpy(all, nodes, sizeof(int) * (size_t)n);
	all[n] = (int)(a - g->nodes.v);
	e->pro_extra = arena_alloc(g->arena, sizeof(int) * (size_t)(4 * n + 1));
	e->n_pro_extra = 0;
	for (int k = 0; k < n; k++) {
		const struct node *nd = &g->nodes.v[nodes[k]];

		/* map_expr declares locals for these: no place for them in an expression */
		if (nd->op == OP_HARDSIGMOID || nd->op == OP_HARDSWISH || nd->op == OP_CLIP ||
		    escapes(g, nd->out[0], all, n + 1))
			return false;
		for (int i = 0; i < nd->n_in; i++) {
			int v = nd->in[i];
			bool mine = false;

			for (int q = 0; q < k && !mine; q++)
				mine = g->nodes.v[nodes[q]].out[0] == v;
			if (v < 0 || mine || seen[v])
				continue;
			if (!shape_eq(&g->values.v[v].shape, &x->shape) &&
			    !is_scalar(&g->values.v[v].shape))
				return false;
			if (e->n_pro_extra == 4 * n)
				return false;
			seen[v] = true;
			e->pro_extra[e->n_pro_extra++] = v;
		}
	}
	e->pro = nodes;
	e->n_pro = n;
	return true;
}
