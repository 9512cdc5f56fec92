/*
 * ops_quant.c - linear quantization: QuantizeLinear and DequantizeLinear
 * (per tensor, per axis, blocked; to and from the integers of 16 bits or
 * fewer, int4, uint4, int2 and uint2, the 8-bit floats and float4e2m1),
 * DynamicQuantizeLinear,
 * MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and QLinearAdd
 * (com.microsoft; what the qdq pass makes of a QDQ Add).
 *
 * Quantizing computes in float as ONNX Runtime does: round(x / scale)
 * to nearest even (rint, under the default rounding mode), plus the zero
 * point, saturated to the type's range. To an 8-bit float or float4e2m1,
 * x / scale (+ the zero point) rounds to nearest even, saturated as the
 * saturate attribute says (float4e2m1 always saturates: it has no infinity)
 * by rt_qdq_f8 (runtime/rt_float8.h), which also dequantizes them. Integer products accumulate in
 * int32 after subtracting the zero points; requantizing multiplies the sum
 * by the float a_scale * b_scale / y_scale (in that order, as ONNX Runtime
 * computes its multiplier) and rounds the same way. Padding of the integer
 * convolutions stands for the zero point, so padded taps add nothing.
 *
 * QLinearAdd computes what ONNX Runtime's x86 kernel (MLAS, AVX2 with FMA)
 * computes, with the float32 ratios rA = sA / sC, rB = sB / sC and
 *
 *	fixed = (float)(zC - (rA zA + rB zB))
 *	C = saturate(rint(fma(A, rA, fma(B, rB, fixed))))
 *
 * on the raw A and B. Each fma is computed in double (A rA and B rB are
 * exact there: 8 bits times 24), rounded once to float32, so the result
 * is the same with or without FMA on the host; fixed likewise.
 */
#include "ops.h"

#include <string.h>

/* The integer types of QLinear* ops and DynamicQuantizeLinear's: 8- and 16-bit. */
static bool q_type_ok(enum dtype t)
{
	return t == DTYPE_U8 || t == DTYPE_I8 || t == DTYPE_U16 || t == DTYPE_I16;
}

/* The 8-bit floats and float4e2m1 that Quantize/DequantizeLinear take (not float8e8m0). */
static bool q_float_ok(enum dtype t)
{
	return dtype_is_float8(t) && t != DTYPE_F8E8M0;
}

/*
 * The types Quantize/DequantizeLinear convert to and from: the integers of
 * 16 bits or fewer, int4, uint4, int2, uint2, and the small floats.
 */
static bool qdq_type_ok(enum dtype t)
{
	return q_type_ok(t) || t == DTYPE_I4 || t == DTYPE_U4 || t == DTYPE_I2 ||
	       t == DTYPE_U2 || q_float_ok(t);
}

static bool q8_type_ok(enum dtype t)
{
	return t == DTYPE_U8 || t == DTYPE_I8;
}

/* The range of quantized type t. */
static void q_range(enum dtype t, double *lo, double *hi)
{
	switch (t) {
	case DTYPE_U8: *lo = 0; *hi = 255; break;
	case DTYPE_I8: *lo = -128; *hi = 127; break;
	case DTYPE_U16: *lo = 0; *hi = 65535; break;
	case DTYPE_I16: *lo = -32768; *hi = 32767; break;
	case DTYPE_U4: *lo = 0; *hi = 15; break;
	case DTYPE_I4: *lo = -8; *hi = 7; break;
	case DTYPE_U2: *lo = 0; *hi = 3; break;
	case DTYPE_I2: *lo = -2; *hi = 1; break;
	default: BUG("q_range of %s", dtype_name(t));
	}
}


static int q_type_error(struct graph *g, struct node *n, int i, enum dtype t, const char *want)
{
	diag_error(g->ctx, "%s: input %d has type %s, expected %s", node_loc(g, n), i,
		   dtype_name(t), want);
	return -1;
}

/*
 * Input i, if present, has one element or is 1-D of d elements (per row,
 * column or channel); 0, or -1 after a diagnostic.
 */
static int check_vec(struct graph *g, struct node *n, int i, struct dim d, const char *what)
{
	const struct value *v = node_in(g, n, i);

	if (!v || value_one_element(v) || (v->shape.rank == 1 && dim_eq(v->shape.d[0], d)))
		return 0;
	diag_error(g->ctx, "%s: input %d ('%s') must have one element or one per %s",
		   node_loc(g, n), i, v->name, what);
	return -1;
}

/* Input i must have one element (a per-tensor parameter). */
static int check_one(struct graph *g, struct node *n, int i)
{
	const struct value *v = node_in(g, n, i);

	if (!v || value_one_element(v))
		return 0;
	diag_error(g->ctx, "%s: input %d ('%s') must have one element", node_loc(g, n), i,
		   v->name);
	return -1;
}

/*
 * The scale (input 1) and zero point (input 2) of Quantize/DequantizeLinear
 * fit x: one element, one per index of axis (1-D), or with block_size one
 * per block of axis (x's rank, the other dims equal). The zero point has
 * the scale's shape, or both have one element in any shape (exporters
 * write a [1] scale beside a scalar zero point, and ONNX Runtime takes
 * it). 0 or -1.
 */
static int infer_qparams(struct graph *g, struct node *n, const struct value *x)
{
	struct value *s = infer_input(g, n, 1), *zp = node_in(g, n, 2);
	int64_t block = node_attr_int(n, "block_size", 0);
	int axis;

	if (!s)
		return -1;
	if (!dtype_is_float(s->dtype))
		return q_type_error(g, n, 1, s->dtype, "a float type");
	if (zp && (!zp->has_shape || (!shape_eq(&zp->shape, &s->shape) &&
				      !(value_one_element(zp) && value_one_element(s))))) {
		diag_error(g->ctx, "%s: the zero point's shape differs from the scale's",
			   node_loc(g, n));
		return -1;
	}
	if (block < 0) {
		diag_error(g->ctx, "%s: block_size %lld is negative", node_loc(g, n),
			   (long long)block);
		return -1;
	}
	if (value_one_element(s) && block == 0)
		return 0;
	if ((axis = infer_axis(g, n, node_attr_int(n, "axis", 1), x->shape.rank)) < 0)
		return -1;
	if (block == 0) {
		if (s->shape.rank == 1 && dim_eq(s->shape.d[0], x->shape.d[axis]))
			return 0;
		diag_error(g->ctx, "%s: the scale must have one element or one per index of axis "
			   "%d", node_loc(g, n), axis);
		return -1;
	}
	if (s->shape.rank != x->shape.rank)
		goto bad_block;
	for (int k = 0; k < x->shape.rank; k++) {
		struct dim xd = x->shape.d[k], sd = s->shape.d[k];

		if (k != axis && !dim_eq(xd, sd))
			goto bad_block;
		if (k == axis && (!dim_is_const(xd) || !dim_is_const(sd) ||
				  sd.c != (xd.c + block - 1) / block))
			goto bad_block;
	}
	return 0;
bad_block:
	diag_error(g->ctx, "%s: the scale's shape does not fit blocks of %lld along axis %d",
		   node_loc(g, n), (long long)block, axis);
	return -1;
}

int infer_quantize(struct graph *g, struct node *n)
{
	struct value *x, *zp;
	enum dtype t = DTYPE_U8;
	int64_t od = node_attr_int(n, "output_dtype", 0);

	if (infer_arity(g, n, 2, 3, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (!dtype_is_float(x->dtype))
		return q_type_error(g, n, 0, x->dtype, "a float type");
	if (infer_qparams(g, n, x) < 0)
		return -1;
	if (node_attr_int(n, "precision", 0) && node_attr_int(n, "precision", 0) != 1) {
		diag_error(g->ctx, "%s: precision %lld is not supported (float32 is)",
			   node_loc(g, n), (long long)node_attr_int(n, "precision", 0));
		return -1;
	}
	zp = node_in(g, n, 2);
	if (zp)
		t = zp->dtype;
	else if (od)
		t = dtype_from_onnx((int)od);
	if (zp && od && dtype_from_onnx((int)od) != zp->dtype) {
		diag_error(g->ctx, "%s: output_dtype %lld differs from the zero point's type %s",
			   node_loc(g, n), (long long)od, dtype_name(zp->dtype));
		return -1;
	}
	if (t == DTYPE_UNDEF) {
		diag_error(g->ctx, "%s: quantizing to ONNX type %lld is not supported",
			   node_loc(g, n), (long long)od);
		return -1;
	}
	if (!qdq_type_ok(t)) {
		diag_error(g->ctx, "%s: quantizing to %s is not supported (the integers of 16 bits "
			   "or fewer, the 8-bit floats but float8e8m0, and float4e2m1 are)",
			   node_loc(g, n), dtype_name(t));
		return -1;
	}
	infer_set(g, n, 0, t, &x->shape);
	return 0;
}

int infer_dequantize(struct graph *g, struct node *n)
{
	struct value *x, *zp;
	int64_t od;

	if (infer_arity(g, n, 2, 3, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (!qdq_type_ok(x->dtype) && x->dtype != DTYPE_I32)
		return q_type_error(g, n, 0, x->dtype, "an integer of 32 bits or fewer, an 8-bit "
				    "float but float8e8m0, or float4e2m1");
	if (infer_qparams(g, n, x) < 0)
		return -1;
	zp = node_in(g, n, 2);
	if (zp && zp->dtype != x->dtype)
		return q_type_error(g, n, 2, zp->dtype, dtype_name(x->dtype));
	od = node_attr_int(n, "output_dtype", 0);
	if (od && dtype_from_onnx((int)od) != node_in(g, n, 1)->dtype) {
		diag_error(g->ctx, "%s: output_dtype %lld differs from the scale's type %s",
			   node_loc(g, n), (long long)od, dtype_name(node_in(g, n, 1)->dtype));
		return -1;
	}
	infer_set(g, n, 0, node_in(g, n, 1)->dtype, &x->shape);
	return 0;
}

int infer_dynquantize(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape scalar = { 0 };

	if (infer_arity(g, n, 1, 1, 3) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->dtype != DTYPE_F32)
		return q_type_error(g, n, 0, x->dtype, "float32");
	infer_set(g, n, 0, DTYPE_U8, &x->shape);
	infer_set(g, n, 1, DTYPE_F32, &scalar);
	infer_set(g, n, 2, DTYPE_U8, &scalar);
	return 0;
}

/*
 * MatMul geometry of inputs ia and ib (both of rank 2 or more), with the
 * zero points iaz (per row) and ibz (per column); output 0 gets dtype t (or
 * the type of input it, when t is UNDEF). 0 or -1.
 */
static int infer_qmm(struct graph *g, struct node *n, int ia, int ib, int iaz, int ibz,
		     enum dtype t, int it)
{
	struct value *a = infer_input(g, n, ia), *b = infer_input(g, n, ib);
	struct matmul_geom mg;
	struct shape ba, bb, batch;

	if (!a || !b)
		return -1;
	if (!q8_type_ok(a->dtype))
		return q_type_error(g, n, ia, a->dtype, "uint8 or int8");
	if (!q8_type_ok(b->dtype))
		return q_type_error(g, n, ib, b->dtype, "uint8 or int8");
	if (a->shape.rank < 2 || b->shape.rank < 2) {
		diag_error(g->ctx, "%s: inputs of rank 1 are not supported", node_loc(g, n));
		return -1;
	}
	ba = a->shape;
	ba.rank -= 2;
	bb = b->shape;
	bb.rank -= 2;
	if (!dim_eq(a->shape.d[a->shape.rank - 1], b->shape.d[b->shape.rank - 2]) ||
	    !shape_broadcast(&ba, &bb, &batch)) {
		diag_error(g->ctx, "%s: the inputs' shapes do not multiply", node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		const struct value *z = node_in(g, n, i ? ibz : iaz);

		if (z && z->dtype != (i ? b : a)->dtype)
			return q_type_error(g, n, i ? ibz : iaz, z->dtype,
					    dtype_name((i ? b : a)->dtype));
	}
	matmul_geometry(a, b, &mg);
	if (check_vec(g, n, iaz, mg.M, "row") < 0 || check_vec(g, n, ibz, mg.N, "column") < 0)
		return -1;
	if (t == DTYPE_UNDEF) {
		struct value *ty = infer_input(g, n, it);

		if (!ty)
			return -1;
		if (!q8_type_ok(ty->dtype))
			return q_type_error(g, n, it, ty->dtype, "uint8 or int8");
		t = ty->dtype;
	}
	infer_set(g, n, 0, t, &mg.y);
	return 0;
}

int infer_matmulinteger(struct graph *g, struct node *n)
{
	if (infer_arity(g, n, 2, 4, 1) < 0)
		return -1;
	return infer_qmm(g, n, 0, 1, 2, 3, DTYPE_I32, 0);
}

/*
 * The scales of QLinear* ops: one element or one per row/column/channel;
 * float32, or (QLinearMatMul-21, half) float16 or bfloat16, all three of
 * one type (computed in float32 like the float32 ones).
 */
static int check_scales(struct graph *g, struct node *n, const int *idx, int count, bool half)
{
	for (int k = 0; k < count; k++) {
		struct value *s = infer_input(g, n, idx[k]);
		enum dtype t0;

		if (!s)
			return -1;
		t0 = node_in(g, n, idx[0])->dtype;
		if (!half && s->dtype != DTYPE_F32)
			return q_type_error(g, n, idx[k], s->dtype, "float32");
		if (half && s->dtype != DTYPE_F32 && s->dtype != DTYPE_F16 && s->dtype != DTYPE_BF16)
			return q_type_error(g, n, idx[k], s->dtype, "float32, float16 or bfloat16");
		if (s->dtype != t0)
			return q_type_error(g, n, idx[k], s->dtype, dtype_name(t0));
	}
	return 0;
}

/*
 * QLinearMatMul; a ninth input, an int32 bias per column added
 * to the sums before requantizing, is the qdq pass's (a Gemm's C), as
 * QLinearConv's.
 */
int infer_qlinearmatmul(struct graph *g, struct node *n)
{
	static const int scales[] = { 1, 4, 6 };
	struct matmul_geom mg;

	const struct value *bias;

	if (infer_arity(g, n, 8, 9, 1) < 0 || check_scales(g, n, scales, 3, true) < 0 ||
	    infer_qmm(g, n, 0, 3, 2, 5, DTYPE_UNDEF, 7) < 0)
		return -1;
	matmul_geometry(node_in(g, n, 0), node_in(g, n, 3), &mg);
	if (check_vec(g, n, 1, mg.M, "row") < 0 || check_vec(g, n, 4, mg.N, "column") < 0 ||
	    check_one(g, n, 6) < 0 || check_one(g, n, 7) < 0)
		return -1;
	bias = node_in(g, n, 8);
	if (bias && bias->dtype != DTYPE_I32)
		return q_type_error(g, n, 8, bias->dtype, "int32");
	if (bias && (bias->shape.rank != 1 || !dim_eq(bias->shape.d[0], mg.N))) {
		diag_error(g->ctx, "%s: input 8 ('%s') must have one element per column",
			   node_loc(g, n), bias->name);
		return -1;
	}
	return 0;
}

/* Conv geometry of x (ix) and w (iw), zero points ixz, iwz; output dtype t or input it's. */
static int infer_qc(struct graph *g, struct node *n, int ix, int iw, int ixz, int iwz,
		    enum dtype t, int it)
{
	struct window w;
	struct shape s;
	struct value *x = infer_input(g, n, ix), *wt = infer_input(g, n, iw);

	if (!x || !wt)
		return -1;
	if (!q8_type_ok(x->dtype))
		return q_type_error(g, n, ix, x->dtype, "uint8 or int8");
	if (!q8_type_ok(wt->dtype))
		return q_type_error(g, n, iw, wt->dtype, "uint8 or int8");
	if (conv_plan_at(g, n, ix, iw, &w, &s) < 0 || check_one(g, n, ixz) < 0 ||
	    check_vec(g, n, iwz, wt->shape.d[0], "output channel") < 0)
		return -1;
	if (t == DTYPE_UNDEF) {
		struct value *ty = infer_input(g, n, it);

		if (!ty)
			return -1;
		if (!q8_type_ok(ty->dtype))
			return q_type_error(g, n, it, ty->dtype, "uint8 or int8");
		t = ty->dtype;
	}
	infer_set(g, n, 0, t, &s);
	return 0;
}

int infer_convinteger(struct graph *g, struct node *n)
{
	if (infer_arity(g, n, 2, 4, 1) < 0)
		return -1;
	return infer_qc(g, n, 0, 1, 2, 3, DTYPE_I32, 0);
}

int infer_qlinearconv(struct graph *g, struct node *n)
{
	static const int scales[] = { 1, 4, 6 };
	const struct value *bias;

	if (infer_arity(g, n, 8, 9, 1) < 0 || check_scales(g, n, scales, 3, false) < 0 ||
	    infer_qc(g, n, 0, 3, 2, 5, DTYPE_UNDEF, 7) < 0)
		return -1;
	if (check_vec(g, n, 4, node_in(g, n, 3)->shape.d[0], "output channel") < 0 ||
	    check_one(g, n, 1) < 0 || check_one(g, n, 6) < 0 || check_one(g, n, 7) < 0)
		return -1;
	bias = node_in(g, n, 8);
	if (bias && bias->dtype != DTYPE_I32)
		return q_type_error(g, n, 8, bias->dtype, "int32");
	return check_vec(g, n, 8, node_in(g, n, 3)->shape.d[0], "output channel");
}

/*
 * QLinearAdd (com.microsoft): A, A_scale, A_zero_point, B, B_scale,
 * B_zero_point, C_scale, C_zero_point; A and B of one 8-bit type,
 * broadcast; every scale and zero point one element (per tensor).
 */
int infer_qlinearadd(struct graph *g, struct node *n)
{
	static const int scales[] = { 1, 4, 6 };
	struct value *a, *b;
	struct shape s;

	if (infer_arity(g, n, 7, 8, 1) < 0 || check_scales(g, n, scales, 3, false) < 0 ||
	    !(a = infer_input(g, n, 0)) || !(b = infer_input(g, n, 3)))
		return -1;
	if (!q8_type_ok(a->dtype))
		return q_type_error(g, n, 0, a->dtype, "uint8 or int8");
	if (b->dtype != a->dtype)
		return q_type_error(g, n, 3, b->dtype, dtype_name(a->dtype));
	for (int i = 1; i < 8; i++) {
		const struct value *z = node_in(g, n, i);

		if (i == 3)
			continue;	/* B */
		if (check_one(g, n, i) < 0)
			return -1;
		if (z && (i == 2 || i == 5 || i == 7) && z->dtype != a->dtype)
			return q_type_error(g, n, i, z->dtype, dtype_name(a->dtype));
	}
	if (!shape_broadcast(&a->shape, &b->shape, &s))
		return infer_bad_shapes(g, n, "the inputs' shapes cannot be broadcast", &a->shape,
					&b->shape);
	infer_set(g, n, 0, a->dtype, &s);
	return 0;
}

/* ---- lowering ---- */

/* round(v) to nearest even, saturated to t's range, as t. */
static struct tir *requantize(struct lower *L, struct tir *v, enum dtype t)
{
	struct tir_builder *b = L->b;
	double lo, hi;

	q_range(t, &lo, &hi);
	v = tir_bin(b, BIN_MAX, v, tir_flt(b, v->dtype, lo));
	v = tir_bin(b, BIN_MIN, v, tir_flt(b, v->dtype, hi));
	return tir_cast(b, t, v);
}

/*
 * Offset into the scale and zero point of Quantize/DequantizeLinear for
 * the element of x at idx (infer_qparams has checked their shapes).
 */
static struct tir *qparam_offset(struct lower *L, const struct value *x, struct tir **idx)
{
	const struct value *s = lower_in(L, 1);
	int64_t block = node_attr_int(L->n, "block_size", 0);
	int64_t axis = node_attr_int(L->n, "axis", 1);
	struct tir *si[MAX_RANK];

	if (value_one_element(s) && block == 0)
		return tir_int(L->b, 0);
	if (axis < 0)
		axis += x->shape.rank;
	if (block == 0)
		return idx[axis];
	memcpy(si, idx, sizeof(*si) * (size_t)x->shape.rank);
	si[axis] = tir_bin(L->b, BIN_DIV, idx[axis], tir_int(L->b, block));
	return lower_offset(L, &s->shape, si);
}

/*
 * Quantize/DequantizeLinear to or from an 8-bit float or float4e2m1: one
 * rt_qdq_f8 call over the whole tensor (runtime/rt_float8.h), which
 * converts through double; the parameters' layout as the axis splits x:
 * the axis's length and the elements after it, and the block size.
 */
static int lower_qdq_f8(struct lower *L, bool quant)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0), *s = lower_in(L, 1), *y = lower_out(L, 0);
	const struct value *z = L->n->n_in > 2 ? lower_in(L, 2) : NULL;
	int64_t block = node_attr_int(L->n, "block_size", 0);
	int64_t axis = node_attr_int(L->n, "axis", 1);
	struct tir *args[14], *inner = tir_int(b, 1), *d = tir_int(b, 1);

	if (!value_one_element(s) || block) {
		if (axis < 0)
			axis += x->shape.rank;
		d = tir_dim(b, x->shape.d[axis]);
		for (int k = (int)axis + 1; k < x->shape.rank; k++)
			inner = tir_mul(b, inner, tir_dim(b, x->shape.d[k]));
	}
	args[0] = tir_int(b, quant);
	args[1] = tir_addr(b, L->in[0], tir_int(b, 0));
	args[2] = tir_int(b, dtype_to_onnx(x->dtype));
	args[3] = tir_addr(b, L->in[1], tir_int(b, 0));
	args[4] = tir_int(b, dtype_to_onnx(s->dtype));
	args[5] = tir_addr(b, z && L->in[2] ? L->in[2] : L->in[1], tir_int(b, 0));
	args[6] = tir_int(b, z && L->in[2] ? dtype_to_onnx(z->dtype) : 0);
	args[7] = tir_addr(b, L->out[0], tir_int(b, 0));
	args[8] = tir_int(b, dtype_to_onnx(y->dtype));
	args[9] = lower_numel(L, &x->shape);
	args[10] = d;
	args[11] = inner;
	args[12] = tir_int(b, block);
	args[13] = tir_int(b, node_attr_int(L->n, "saturate", 1) != 0);
	tir_extern(b, "rt_qdq_f8", args, 14);
	return 0;
}

int lower_quantize(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	enum dtype t = lower_out(L, 0)->dtype;
	struct tir *idx[MAX_RANK], *at, *off, *q;

	if (q_float_ok(t))
		return lower_qdq_f8(L, true);
	lower_loops_parallel(L, &x->shape, idx);
	at = lower_offset(L, &x->shape, idx);
	off = qparam_offset(L, x, idx);
	q = tir_bin(b, BIN_DIV, tir_load(b, L->in[0], at), tir_load(b, L->in[1], off));
	q = tir_call1(b, INTRIN_RINT, q);
	if (L->in[2])
		q = tir_add(b, q, tir_cast(b, q->dtype, tir_load(b, L->in[2], off)));
	tir_store(b, L->out[0], at, requantize(L, q, t));
	lower_end_loops(L, x->shape.rank);
	return 0;
}

/* x - zero point as an integer wide enough for the difference. */
static struct tir *minus_zp(struct lower *L, struct tir *x, int iz, struct tir *off)
{
	enum dtype w = x->dtype == DTYPE_I32 ? DTYPE_I64 : DTYPE_I32;

	x = tir_cast(L->b, w, x);
	if (iz < L->n->n_in && L->in[iz])
		x = tir_bin(L->b, BIN_SUB, x, tir_cast(L->b, w, tir_load(L->b, L->in[iz], off)));
	return x;
}

int lower_dequantize(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	enum dtype ct = dtype_compute(lower_out(L, 0)->dtype);
	struct tir *idx[MAX_RANK], *at, *off, *v;

	if (q_float_ok(x->dtype))
		return lower_qdq_f8(L, false);
	lower_loops_parallel(L, &x->shape, idx);
	at = lower_offset(L, &x->shape, idx);
	off = qparam_offset(L, x, idx);
	v = tir_cast(b, ct, minus_zp(L, tir_load(b, L->in[0], at), 2, off));
	tir_store(b, L->out[0], at, tir_mul(b, v, tir_load(b, L->in[1], off)));
	lower_end_loops(L, x->shape.rank);
	return 0;
}

/*
 * y_scale = (max(x, 0) - min(x, 0)) / 255 and the uint8 zero point that
 * maps min(x, 0) to 0, then y as QuantizeLinear computes it. An all-zero x
 * has scale 0: its zero point and y are 0 (the division is by 1 instead).
 */
int lower_dynquantize(struct lower *L)
{
	struct tir_builder *b = L->b;
	struct tir *n = lower_numel(L, &lower_in(L, 0)->shape), *mn, *mx, *v, *i, *s, *sd, *zp, *q;
	struct tir *zero = tir_flt(b, DTYPE_F32, 0);

	mn = tir_let(b, "mn", zero);
	mx = tir_let(b, "mx", zero);
	i = tir_loop(b, n);
	v = tir_let(b, "v", tir_load(b, L->in[0], i));
	tir_assign(b, mn, tir_bin(b, BIN_MIN, mn, v));
	tir_assign(b, mx, tir_bin(b, BIN_MAX, mx, v));
	tir_end(b);
	s = tir_let(b, "scale", tir_bin(b, BIN_DIV, tir_bin(b, BIN_SUB, mx, mn),
					tir_flt(b, DTYPE_F32, 255)));
	tir_store(b, L->out[1], tir_int(b, 0), s);
	sd = tir_let(b, "sd", tir_select(b, tir_bin(b, BIN_EQ, s, zero),
					 tir_flt(b, DTYPE_F32, 1), s));
	zp = tir_bin(b, BIN_SUB, zero, tir_bin(b, BIN_DIV, mn, sd));
	zp = tir_bin(b, BIN_MIN, tir_bin(b, BIN_MAX, zp, zero), tir_flt(b, DTYPE_F32, 255));
	zp = tir_let(b, "zp", tir_call1(b, INTRIN_RINT, zp));
	tir_store(b, L->out[2], tir_int(b, 0), tir_cast(b, DTYPE_U8, zp));
	i = tir_loop(b, n);
	tir_mark_parallel(b);
	q = tir_call1(b, INTRIN_RINT, tir_bin(b, BIN_DIV, tir_load(b, L->in[0], i), sd));
	tir_store(b, L->out[0], i, requantize(L, tir_add(b, q, zp), DTYPE_U8));
	tir_end(b);
	return 0;
}

/* Input i (a per-tensor or 1-D parameter) at position pos of its dim. */
static struct tir *vec_at(struct lower *L, int i, struct tir *pos)
{
	return tir_load(L->b, L->in[i], value_one_element(lower_in(L, i)) ? tir_int(L->b, 0) : pos);
}

/* acc * (sa * sb / sy) rounded, plus the zero point yz, saturated: QLinear*'s output. */
static struct tir *qlinear_out(struct lower *L, struct tir *acc, struct tir *sa, struct tir *sb)
{
	struct tir_builder *b = L->b;
	struct tir *m = tir_bin(b, BIN_DIV, tir_mul(b, sa, sb), vec_at(L, 6, tir_int(b, 0)));
	struct tir *v = tir_call1(b, INTRIN_RINT, tir_mul(b, tir_cast(b, DTYPE_F32, acc), m));

	v = tir_add(b, v, tir_cast(b, DTYPE_F32, vec_at(L, 7, tir_int(b, 0))));
	return requantize(L, v, lower_out(L, 0)->dtype);
}

/* MatMulInteger and QLinearMatMul: an int32 dot product per output element (+ the bias). */
int lower_qmatmul(struct lower *L)
{
	struct tir_builder *b = L->b;
	bool ql = L->n->op == OP_QLINEARMATMUL;
	int ia = 0, ib = ql ? 3 : 1, iaz = 2, ibz = ql ? 5 : 3;
	struct matmul_geom mg;
	struct tir *idx[MAX_RANK], *k, *acc, *oa, *ob, *av, *bv;
	int r;

	matmul_geometry(lower_in(L, ia), lower_in(L, ib), &mg);
	r = mg.batch.rank;
	lower_loops_parallel(L, &mg.y, idx);
	acc = tir_let(b, "acc", ql && L->n->n_in > 8 && L->in[8] ? vec_at(L, 8, idx[r + 1])
		      : tir_typed_int(b, DTYPE_I32, 0));
	k = tir_loop(b, tir_dim(b, mg.K));
	matmul_bases(L, &mg, idx, &oa, &ob);
	oa = tir_add(b, oa, tir_add(b, tir_mul(b, idx[r], tir_dim(b, mg.K)), k));
	ob = tir_add(b, ob, tir_add(b, tir_mul(b, k, tir_dim(b, mg.N)), idx[r + 1]));
	av = minus_zp(L, tir_load(b, L->in[ia], oa), iaz,
		      iaz < L->n->n_in && L->in[iaz] && !value_one_element(lower_in(L, iaz)) ? idx[r]
		      : tir_int(b, 0));
	bv = minus_zp(L, tir_load(b, L->in[ib], ob), ibz,
		      ibz < L->n->n_in && L->in[ibz] && !value_one_element(lower_in(L, ibz)) ? idx[r + 1]
		      : tir_int(b, 0));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, av, bv)));
	tir_end(b);
	if (ql)
		acc = qlinear_out(L, acc, vec_at(L, 1, idx[r]), vec_at(L, 4, idx[r + 1]));
	tir_store(b, L->out[0], lower_offset(L, &mg.y, idx), acc);
	lower_end_loops(L, mg.y.rank);
	return 0;
}

/* ConvInteger and QLinearConv: Conv's direct loop nest over zero-point-shifted int32s. */
int lower_qconv(struct lower *L)
{
	struct tir_builder *b = L->b;
	bool ql = L->n->op == OP_QLINEARCONV;
	int ix = 0, iw = ql ? 3 : 1, ixz = 2, iwz = ql ? 5 : 3;
	const struct value *x = lower_in(L, ix), *wt = lower_in(L, iw), *y = lower_out(L, 0);
	int64_t group = node_attr_int(L->n, "group", 1);
	int64_t cin_g = wt->shape.d[1].c, cout_g = wt->shape.d[0].c / group;
	struct window w;
	struct shape s;
	struct tir *oi[MAX_RANK], *ki[MAX_RANK], *xi[MAX_RANK], *wi[MAX_RANK], *acc, *cond = NULL;
	struct tir *ic, *gidx, *xv, *wv;

	if (conv_plan_at(L->g, (struct node *)L->n, ix, iw, &w, &s) < 0)
		return -1;
	lower_loops_parallel(L, &y->shape, oi);
	acc = tir_let(b, "acc", ql && L->n->n_in > 8 && L->in[8] ? vec_at(L, 8, oi[1])
		      : tir_typed_int(b, DTYPE_I32, 0));
	gidx = tir_bin(b, BIN_DIV, oi[1], tir_int(b, cout_g));
	ic = tir_loop(b, tir_int(b, cin_g));
	for (int i = 0; i < w.r; i++)
		ki[i] = tir_loop(b, tir_int(b, w.k[i]));
	xi[0] = oi[0];
	xi[1] = tir_add(b, tir_mul(b, gidx, tir_int(b, cin_g)), ic);
	wi[0] = oi[1];
	wi[1] = ic;
	for (int i = 0; i < w.r; i++) {
		xi[i + 2] = lower_window_pos(L, &w, i, oi[i + 2], ki[i], &cond);
		wi[i + 2] = ki[i];
	}
	if (cond)
		tir_if(b, cond);
	xv = minus_zp(L, tir_load(b, L->in[ix], lower_offset(L, &x->shape, xi)), ixz,
		      tir_int(b, 0));
	wv = minus_zp(L, tir_load(b, L->in[iw], lower_offset(L, &wt->shape, wi)), iwz,
		      iwz < L->n->n_in && L->in[iwz] && !value_one_element(lower_in(L, iwz)) ? oi[1]
		      : tir_int(b, 0));
	tir_assign(b, acc, tir_add(b, acc, tir_mul(b, xv, wv)));
	if (cond)
		tir_end(b);
	lower_end_loops(L, w.r + 1);
	if (ql)
		acc = qlinear_out(L, acc, vec_at(L, 1, tir_int(b, 0)), vec_at(L, 4, oi[1]));
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* Input i (a one-element parameter) as double, 0 when absent. */
static struct tir *qadd_param(struct lower *L, int i)
{
	if (i >= L->n->n_in || !L->in[i])
		return tir_flt(L->b, DTYPE_F64, 0);
	return tir_cast(L->b, DTYPE_F64, tir_load(L->b, L->in[i], tir_int(L->b, 0)));
}

/* float32 of x * r + c computed in double (x r exact there): fma's result. */
static struct tir *qadd_fma(struct tir_builder *b, struct tir *x, struct tir *r, struct tir *c)
{
	return tir_cast(b, DTYPE_F32, tir_add(b, tir_mul(b, tir_cast(b, DTYPE_F64, x), r),
					      tir_cast(b, DTYPE_F64, c)));
}

/* QLinearAdd, as the top of the file says: one loop nest under broadcasting. */
int lower_qlinearadd(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *a = lower_in(L, 0), *bv = lower_in(L, 3), *y = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *sc, *ra, *rb, *fixed, *v;

	sc = tir_load(b, L->in[6], tir_int(b, 0));
	ra = tir_bin(b, BIN_DIV, tir_load(b, L->in[1], tir_int(b, 0)), sc);
	ra = tir_let(b, "ra", tir_cast(b, DTYPE_F64, ra));
	rb = tir_bin(b, BIN_DIV, tir_load(b, L->in[4], tir_int(b, 0)), sc);
	rb = tir_let(b, "rb", tir_cast(b, DTYPE_F64, rb));
	fixed = tir_bin(b, BIN_SUB, qadd_param(L, 7), tir_add(b, tir_mul(b, ra, qadd_param(L, 2)),
						      tir_mul(b, rb, qadd_param(L, 5))));
	fixed = tir_let(b, "fixed", tir_cast(b, DTYPE_F32, fixed));
	lower_loops_parallel(L, &y->shape, idx);
	v = qadd_fma(b, tir_load(b, L->in[3], lower_bcast_offset(L, &bv->shape, &y->shape, idx)),
		     rb, fixed);
	v = qadd_fma(b, tir_load(b, L->in[0], lower_bcast_offset(L, &a->shape, &y->shape, idx)),
		     ra, v);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, idx),
		  requantize(L, tir_call1(b, INTRIN_RINT, v), y->dtype));
	lower_end_loops(L, y->shape.rank);
	return 0;
}

/* ---- QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat ---- */

int infer_qparams_one(struct graph *g, struct node *n, enum dtype t)
{
	static const int scales[] = { 1, 3 };

	if (!q8_type_ok(t))
		return q_type_error(g, n, 0, t, "uint8 or int8");
	if (check_scales(g, n, scales, 2, false) < 0)
		return -1;
	for (int i = 1; i <= 4; i++) {
		const struct value *z = node_in(g, n, i);

		if (check_one(g, n, i) < 0)
			return -1;
		if (z && (i == 2 || i == 4) && z->dtype != t)
			return q_type_error(g, n, i, z->dtype, dtype_name(t));
	}
	return 0;
}

/* Input i (a one-element zero point) as int32, 0 when absent. */
static struct tir *q_zp32(struct lower *L, int i)
{
	if (i >= L->n->n_in || !L->in[i])
		return tir_int(L->b, 0);
	return tir_cast(L->b, DTYPE_I32, tir_load(L->b, L->in[i], tir_int(L->b, 0)));
}

struct tir *lower_qpool_out(struct lower *L, struct tir *acc, struct tir *n, struct tir *div)
{
	struct tir_builder *b = L->b;
	struct tir *sx = tir_cast(b, DTYPE_F64, tir_load(b, L->in[1], tir_int(b, 0)));
	struct tir *sy = tir_cast(b, DTYPE_F64, tir_load(b, L->in[3], tir_int(b, 0)));
	struct tir *a, *m, *v;

	a = tir_bin(b, BIN_SUB, acc, tir_mul(b, tir_cast(b, DTYPE_I32, n), q_zp32(L, 2)));
	m = tir_bin(b, BIN_DIV, sx, tir_mul(b, sy, tir_cast(b, DTYPE_F64, div)));
	v = tir_call1(b, INTRIN_RINT, tir_mul(b, tir_cast(b, DTYPE_F64, a), m));
	v = tir_add(b, v, tir_cast(b, DTYPE_F64, q_zp32(L, 4)));
	return requantize(L, v, lower_out(L, 0)->dtype);
}

/*
 * QLinearConcat (com.microsoft): Y_scale, Y_zero_point, then per input X,
 * X_scale, X_zero_point (zero points may be absent: 0); every parameter one
 * element, float32 scales; X and Y 8-bit (of any mix: each input is
 * requantized to Y's), ranks alike, dims alike but on axis, where they are
 * constants (the qdq pass makes it only then).
 */
int infer_qlinearconcat(struct graph *g, struct node *n)
{
	struct value *x0, *sy, *zy;
	struct shape s;
	int axis;

	if (infer_arity(g, n, 5, -1, 1) < 0)
		return -1;
	if ((n->n_in - 2) % 3) {
		diag_error(g->ctx, "%s: expected Y_scale, Y_zero_point and triples of X, X_scale "
			   "and X_zero_point, got %d inputs", node_loc(g, n), n->n_in);
		return -1;
	}
	if (!(sy = infer_input(g, n, 0)) || !(x0 = infer_input(g, n, 2)))
		return -1;
	zy = node_in(g, n, 1);
	if (sy->dtype != DTYPE_F32)
		return q_type_error(g, n, 0, sy->dtype, "float32");
	if (!zy)
		return q_type_error(g, n, 1, DTYPE_UNDEF, "uint8 or int8");
	if (!q8_type_ok(zy->dtype))
		return q_type_error(g, n, 1, zy->dtype, "uint8 or int8");
	if (check_one(g, n, 0) < 0 || check_one(g, n, 1) < 0)
		return -1;
	axis = infer_axis(g, n, node_attr_int(n, "axis", 0), x0->shape.rank);
	if (axis < 0)
		return -1;
	s = x0->shape;
	s.d[axis] = dim_const(0);
	for (int i = 2; i < n->n_in; i += 3) {
		struct value *x = infer_input(g, n, i), *sx = infer_input(g, n, i + 1);
		const struct value *zx = node_in(g, n, i + 2);

		if (!x || !sx)
			return -1;
		if (!q8_type_ok(x->dtype))
			return q_type_error(g, n, i, x->dtype, "uint8 or int8");
		if (sx->dtype != DTYPE_F32)
			return q_type_error(g, n, i + 1, sx->dtype, "float32");
		if (zx && zx->dtype != x->dtype)
			return q_type_error(g, n, i + 2, zx->dtype, dtype_name(x->dtype));
		if (check_one(g, n, i + 1) < 0 || check_one(g, n, i + 2) < 0)
			return -1;
		if (x->shape.rank != s.rank || !dim_is_const(x->shape.d[axis])) {
			diag_error(g->ctx, "%s: input %d must have rank %d and a constant "
				   "dimension %d", node_loc(g, n), i, s.rank, axis);
			return -1;
		}
		for (int k = 0; k < s.rank; k++)
			if (k != axis && !dim_eq(s.d[k], x->shape.d[k])) {
				diag_error(g->ctx, "%s: input %d differs in dimension %d",
					   node_loc(g, n), i, k);
				return -1;
			}
		s.d[axis].c += x->shape.d[axis].c;
	}
	infer_set(g, n, 0, zy->dtype, &s);
	return 0;
}

/*
 * One input x (at in) of QLinearConcat as DequantizeLinear then
 * QuantizeLinear compute it in float32 (rt_cqpool.h's table holds the same).
 */
static struct tir *qconcat_value(struct lower *L, struct tir *x, int in)
{
	struct tir_builder *b = L->b;
	struct tir *v;

	v = tir_cast(b, DTYPE_F32, minus_zp(L, x, in + 2, tir_int(b, 0)));
	v = tir_mul(b, v, tir_load(b, L->in[in + 1], tir_int(b, 0)));
	v = tir_call1(b, INTRIN_RINT, tir_bin(b, BIN_DIV, v, tir_load(b, L->in[0], tir_int(b, 0))));
	if (L->in[1])
		v = tir_add(b, v, tir_cast(b, DTYPE_F32, tir_load(b, L->in[1], tir_int(b, 0))));
	return requantize(L, v, lower_out(L, 0)->dtype);
}

/* QLinearConcat: per input one loop nest writing its slab of y. */
int lower_qlinearconcat(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	int axis = (int)node_attr_int(L->n, "axis", 0);
	int64_t at = 0;

	if (axis < 0)
		axis += y->shape.rank;
	for (int i = 2; i < L->n->n_in; i += 3) {
		const struct value *x = lower_in(L, i);
		struct tir *idx[MAX_RANK], *yi[MAX_RANK];

		lower_loops(L, &x->shape, idx);
		for (int k = 0; k < x->shape.rank; k++)
			yi[k] = k == axis ? tir_add(b, idx[k], tir_int(b, at)) : idx[k];
		tir_store(b, L->out[0], lower_offset(L, &y->shape, yi),
			  qconcat_value(L, tir_load(b, L->in[i], lower_offset(L, &x->shape, idx)), i));
		lower_end_loops(L, x->shape.rank);
		at += x->shape.d[axis].c;
	}
	return 0;
}
