/*
 * dnnl_target.c - the dnnl target: float32 Conv (1 to 3 spatial dims), MatMul and Gemm as
 * oneDNN primitives (Debian's libdnnl, the C API), with the elementwise ops
 * after them fused as oneDNN post-ops. It has the blas target's shape: its
 * partition rule is patterns/dnnl.pat, an anchor alone or followed by a
 * chain of epilogue ops; pattern_check takes a match when the anchor's
 * shapes fit and every epilogue op maps onto a post-op (everything else
 * stays on the next target, normally c):
 *   Relu, LeakyRelu          eltwise relu (alpha = the negative slope)
 *   Tanh, Sigmoid, Elu       eltwise tanh, logistic, elu
 *   Mul(x, Sigmoid(x))       eltwise swish (SiLU; alpha 1), x the chain value
 *   Mul(x, HardSigmoid(x))   eltwise hardswish, where alpha is 1/6 and beta 0.5
 *   HardSwish                eltwise hardswish
 *   HardSigmoid              eltwise linear then clip to [0, 1]
 *   Clip                     eltwise clip (constant bounds)
 *   Exp, Abs                 eltwise exp, abs
 *   Gelu                     eltwise gelu_erf (gelu_tanh: approximate tanh)
 *   Neg                      eltwise linear -1 (only through --patterns)
 *   Add                      a constant per-channel bias straight after a
 *                            Conv without one becomes its bias; else a
 *                            binary add post-op of a tensor of the output's
 *                            shape, a scalar, a per-channel (dim 1, Conv) or
 *                            last-dim (MatMul, Gemm) vector; two at most.
 * A QLinearConv alone (rule qconv) runs on oneDNN's int8 convolution
 * (collagec_dnnl_qconv) where qconv_fits says: constant scales and zero
 * points, int8 weights with zero points 0, a host with VNNI (and a model
 * compiled for it, --cpu native: host_vnni); a
 * MatMulInteger alone (rule qmatmul) on its int8 matmul (qmatmul_fits), and a
 * QLinearMatMul alone (rule qlmatmul) on the same with its requantization
 * as output scales and zero points (qlmatmul_fits). A MatMul or Gemm of a
 * bfloat16 model (widened: its input a Cast of bfloat16, its constant
 * weights bfloat16 widened at open) multiplies bfloat16 on a host with
 * AVX512-BF16 (mm_bf16; its kernel is named *_bf16), twice float32's
 * speed, the same products summed in float32.
 * The table's last rules take one op alone (pooling, BatchNormalization,
 * LayerNormalization, Softmax, LRN, eltwise, ConvTranspose, a channel
 * scale: op_plan says which, refusing what oneDNN would compute otherwise
 * than ONNX); each is one primitive in plain layouts, but for a 1-D or 2-D
 * pool of a blocked x and a channel scale (Mul by one value per channel,
 * squeeze-and-excitation's end), which rt_dnnl.h runs in kernels of its
 * own, in either layout. A whole squeeze-and-excitation block (rule se:
 * se_plan) is one kernel of rt_dnnl.h's too (collagec_dnnl_se).
 * relay_to_tir makes one kernel per partition whose body is one call_extern
 * of collagec_dnnl_conv, collagec_dnnl_matmul (or, for one op alone,
 * collagec_dnnl_pool, _eltwise, _softmax, _bnorm, _lnorm, _lrn, _deconv,
 * _scale),
 * helpers of the runtime
 * prelude rt_dnnl.h (embedded into collagec, pasted once per model; it
 * explains the primitive cache, layouts, the once-only weights reorder and
 * threads). tir_to_runtime prints each kernel (libcall_print_kernel) with a
 * static cache of its primitives (one per shape of its symbolic dims and
 * thread count) and passes it, the kernel's name and `threads` around the
 * loop-IR arguments. Arguments that depend on symbolic dims are loop-IR
 * expressions over syms[].
 * plan_layouts marks the values that Convs, pools and channel scales on
 * dnnl hand to each other (and to nothing else) blocked; their kernels get
 * `lay` bits saying which of their buffers are, and skip the reorders at
 * those edges. Where the channels are no multiple of the largest block, the
 * value's storage holds them padded to one (value.store_c).
 *
 * The collagec binary never links oneDNN: unavailable() checks for
 * <oneapi/dnnl/dnnl.h> and dlopens libdnnl in a child process
 * (libcall_lib_loads), so that nothing oneDNN or OpenMP starts survives
 * into processes that fork later. What it shares with the blas target (the
 * probe, the anchor's and epilogue's shape checks, kernel parameters, the
 * kernel printer) is in backends/libcall.c.
 */
#include "../backends.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "../../core/emit/emit.h"
#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"
#include "../libcall.h"

#define MAX_PO 6		/* post-ops the helpers take (rt_dnnl.h RT_DNNL_MAX_PO) */
#define MAX_BIN 2		/* binary operands */
#define MAX_MM_BATCH 4		/* batch dims of a batched matmul */
#define MAX_BLOCK 16		/* the largest channel block (rt_dnnl.h RT_DNNL_MAX_BLOCK) */

/* Post-op codes and broadcasts: as enum rt_dnnl_po / rt_dnnl_bcast of rt_dnnl.h. */
enum po_code {
	PO_NONE, PO_RELU, PO_TANH, PO_ELU, PO_LINEAR, PO_LOGISTIC, PO_CLIP, PO_HARDSWISH,
	PO_EXP, PO_ABS, PO_GELU_ERF, PO_GELU_TANH, PO_ADD0, PO_ADD1, PO_SWISH, PO_COUNT
};

enum bcast {
	BC_NONE, BC_FULL, BC_SCALAR, BC_CHANNEL, BC_LAST, BC_COUNT
};

/* ---- availability ---- */

static const char *const dnnl_sonames[] = { "libdnnl.so.3", "libdnnl.so.2" };

static const char *dnnl_unavailable(void)
{
	if (access("/usr/include/oneapi/dnnl/dnnl.h", R_OK) != 0 &&
	    access("/usr/local/include/oneapi/dnnl/dnnl.h", R_OK) != 0)
		return "oneDNN is not installed (no <oneapi/dnnl/dnnl.h>; apt-get install "
		       "libdnnl-dev)";
	if (!libcall_lib_loads(dnnl_sonames, ARRAY_SIZE(dnnl_sonames)))
		return "oneDNN is not installed (cannot load libdnnl.so.3 or libdnnl.so.2; "
		       "apt-get install libdnnl-dev)";
	return NULL;
}

/* ---- the rule ---- */

/*
 * MatMul and Gemm as oneDNN sees them: [batch..., m, k] x [(batch...,) k, n].
 * A batch that only a has (b one matrix) folds into m; vectors are promoted
 * to matrices.
 */
struct mm_plan {
	int nb;				/* batch dims, both inputs run over them */
	struct dim batch[MAX_MM_BATCH];
	bool fold;			/* a's batch folded into m */
	struct shape sa;		/* a, promoted */
	struct dim m, n, k;
	bool ta, tb;			/* Gemm's transA, transB */
	bool b_vec;			/* b was 1-D: the output has no n dim */
};

static bool mm_plan(struct graph *g, const struct node *n, struct mm_plan *p)
{
	const struct value *a = node_in(g, n, 0), *b = node_in(g, n, 1);
	struct shape sa, sb;

	memset(p, 0, sizeof(*p));
	if (!libcall_is_f32(a) || !libcall_is_f32(b) || n->n_out != 1 ||
	    !libcall_is_f32(node_out(g, n, 0)))
		return false;
	sa = a->shape;
	sb = b->shape;
	if (n->op == OP_GEMM) {
		if (sa.rank != 2 || sb.rank != 2)
			return false;
		p->ta = node_attr_int(n, "transA", 0) != 0;
		p->tb = node_attr_int(n, "transB", 0) != 0;
		p->m = sa.d[p->ta ? 1 : 0];
		p->k = sa.d[p->ta ? 0 : 1];
		p->n = sb.d[p->tb ? 0 : 1];
		p->sa = sa;
		return dim_eq(p->k, sb.d[p->tb ? 1 : 0]);
	}
	if (sa.rank < 1 || sb.rank < 1 || sa.rank > MAX_MM_BATCH + 2 ||
	    sb.rank > MAX_MM_BATCH + 2)
		return false;
	if (sa.rank == 1) {
		sa.rank = 2;
		sa.d[1] = sa.d[0];
		sa.d[0] = dim_const(1);
	}
	if (sb.rank == 1) {
		sb.rank = 2;
		sb.d[1] = dim_const(1);
		p->b_vec = true;
	}
	p->sa = sa;
	p->m = sa.d[sa.rank - 2];
	p->k = sa.d[sa.rank - 1];
	p->n = sb.d[1 + sb.rank - 2];
	if (!dim_eq(p->k, sb.d[sb.rank - 2]))
		return false;
	if (sb.rank == 2) {
		p->fold = sa.rank > 2;
		return true;
	}
	/* a batched b: a runs over the same batch (no broadcasting) */
	if (sa.rank != sb.rank)
		return false;
	for (int i = 0; i < sa.rank - 2; i++) {
		if (!dim_eq(sa.d[i], sb.d[i]))
			return false;
		p->batch[p->nb++] = sa.d[i];
	}
	return true;
}

static bool conv_fits(struct graph *g, const struct node *n)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
	int64_t group = node_attr_int(n, "group", 1);

	/* 1 to 3 spatial dims */
	if (!libcall_conv_fits(g, n, 3, 5))
		return false;
	if (group < 1 || x->shape.d[1].c % group || w->shape.d[0].c % group ||
	    w->shape.d[1].c * group != x->shape.d[1].c)
		return false;
	return true;
}

static bool gemm_fits(struct graph *g, const struct node *n)
{
	const struct value *c = node_in(g, n, 2), *y = node_out(g, n, 0);
	struct mm_plan p;

	if (!mm_plan(g, n, &p))
		return false;
	if (!c)
		return true;
	/* C becomes the matmul's bias: alpha and beta must leave it alone */
	if (!libcall_is_f32(c) || c->shape.rank > 2 || node_attr_float(n, "alpha", 1.0) != 1.0 ||
	    node_attr_float(n, "beta", 1.0) != 1.0)
		return false;
	for (int i = 0; i < c->shape.rank; i++) {
		struct dim o = y->shape.d[2 - c->shape.rank + i];

		if (!libcall_dim_is_one(c->shape.d[i]) && !dim_eq(c->shape.d[i], o))
			return false;
	}
	return true;
}

static bool anchor_fits(struct graph *g, const struct node *n)
{
	struct mm_plan p;

	switch (n->op) {
	case OP_MATMUL:
		return mm_plan(g, n, &p);
	case OP_GEMM:
		return gemm_fits(g, n);
	case OP_CONV:
		return conv_fits(g, n);
	default:
		return false;
	}
}

/*
 * QLinearConv on oneDNN's int8 convolution (collagec_dnnl_qconv): x and y
 * 8-bit, w int8 and constant with zero points 0 (oneDNN 2.6 takes none on
 * a convolution's weights), scalar x and y scales and zero points, weight
 * scales per tensor or per output channel, a constant int32 bias or none;
 * 1 to 3 spatial dims, every dim but the batch constant. Only on hosts
 * with VNNI (AVX512-VNNI or AVX-VNNI): without it oneDNN multiplies uint8
 * by int8 with vpmaddubsw, whose 16-bit pair sums saturate, where the c
 * target's kernel is exact on every ISA.
 */
static bool host_vnni(const struct graph *g)
{
#if defined(__x86_64__) && defined(__GNUC__)
	/* compiled for any host of a --cpu level: no level has VNNI */
	if (!graph_host_cpu(g))
		return false;
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
	return false;
#endif
}

static bool is_8bit(const struct value *v)
{
	return v && (v->dtype == DTYPE_U8 || v->dtype == DTYPE_I8);
}

/* Input i of n: absent, or a constant of numel elements of dtype dt. */
static bool const_or_absent(struct graph *g, const struct node *n, int i, enum dtype dt,
			    int64_t numel)
{
	const struct value *v = node_in(g, n, i);

	if (!v)
		return true;
	return v->data && v->has_shape && shape_is_static(&v->shape) && v->dtype == dt &&
	       shape_numel_static(&v->shape) == numel;
}

/*
 * The parameters of a QLinearConv or QLinearMatMul (the same inputs: x,
 * its scale and zero point, w, its scales and zero point, y's scale and
 * zero point, the qdq pass's int32 bias) as oneDNN's int8 primitives take
 * them: scales float32 and constant, x's and y's one element, w's one or m
 * (per output channel or column; rank 1 at most); zero points constant
 * scalars of their tensor's type, w's all 0 or absent; the bias m int32
 * values or absent; a host with VNNI.
 */
static bool q8_params_fit(struct graph *g, const struct node *n, int64_t m)
{
	const struct value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
	const struct value *ws = node_in(g, n, 4), *wz = node_in(g, n, 5);
	int64_t *z = NULL, nz = 0;

	if (!node_in(g, n, 1) || !node_in(g, n, 6) || !ws ||
	    !const_or_absent(g, n, 1, DTYPE_F32, 1) || !const_or_absent(g, n, 6, DTYPE_F32, 1) ||
	    !(const_or_absent(g, n, 4, DTYPE_F32, 1) || const_or_absent(g, n, 4, DTYPE_F32, m)) ||
	    ws->shape.rank > 1 || !const_or_absent(g, n, 2, x->dtype, 1) ||
	    !const_or_absent(g, n, 7, y->dtype, 1) || !const_or_absent(g, n, 8, DTYPE_I32, m))
		return false;
	if (wz) {
		if (!const_or_absent(g, n, 5, DTYPE_I8, shape_numel_static(&wz->shape)) ||
		    value_const_ints(g, wz, &z, &nz) < 0)
			return false;
		for (int64_t i = 0; i < nz; i++)
			if (z[i])
				return false;
	}
	return host_vnni(g);
}

static bool qconv_fits(struct graph *g, const struct node *n)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 3), *y = node_out(g, n, 0);
	int64_t group = node_attr_int(n, "group", 1), m;
	int r;

	if (n->op != OP_QLINEARCONV || n->n_out != 1 || !is_8bit(x) || !is_8bit(y) || !w ||
	    w->dtype != DTYPE_I8 || !w->data || !x->has_shape || !y->has_shape ||
	    !w->has_shape)
		return false;
	r = x->shape.rank;
	if (r < 3 || r > 5 || w->shape.rank != r || y->shape.rank != r ||
	    !shape_is_static(&w->shape))
		return false;
	for (int i = 1; i < r; i++)
		if (!dim_is_const(x->shape.d[i]) || !dim_is_const(y->shape.d[i]))
			return false;
	m = w->shape.d[0].c;
	if (group < 1 || x->shape.d[1].c % group || m % group ||
	    w->shape.d[1].c * group != x->shape.d[1].c)
		return false;
	return q8_params_fit(g, n, m);
}

/*
 * MatMulInteger on oneDNN's int8 matmul (collagec_dnnl_qmatmul): a uint8
 * or int8 of rank 2 or more (its batch dims folded into the rows, which
 * may be symbolic), b int8, constant, 2-D, of constant shape, its zero
 * points 0 or absent; a's zero point one element (constant or computed,
 * read at run time) or absent; on hosts with VNNI (qconv_fits says why).
 */
static bool qmatmul_fits(struct graph *g, const struct node *n)
{
	const struct value *a = node_in(g, n, 0), *b = node_in(g, n, 1), *y = node_out(g, n, 0);
	const struct value *az = node_in(g, n, 2), *bz = node_in(g, n, 3);
	int64_t *z = NULL, nz = 0;

	if (n->op != OP_MATMULINTEGER || n->n_out != 1 || !is_8bit(a) || !a->has_shape ||
	    a->shape.rank < 2 || !b || b->dtype != DTYPE_I8 || !b->data || !b->has_shape ||
	    b->shape.rank != 2 || !shape_is_static(&b->shape) || !y || y->dtype != DTYPE_I32 ||
	    !dim_is_const(a->shape.d[a->shape.rank - 1]))
		return false;
	if (az && (az->dtype != a->dtype || !az->has_shape || !shape_is_static(&az->shape) ||
		   shape_numel_static(&az->shape) != 1))
		return false;
	if (bz) {
		if (!bz->data || value_const_ints(g, bz, &z, &nz) < 0)
			return false;
		for (int64_t i = 0; i < nz; i++)
			if (z[i])
				return false;
	}
	return host_vnni(g);
}

/*
 * QLinearMatMul on oneDNN's int8 matmul (collagec_dnnl_qlmatmul): a 8-bit
 * of rank 2 or more (its batch dims folded into the rows), b int8,
 * constant, 2-D, of constant shape, its zero points 0 or absent; scales
 * float32 and constant, a's and y's one element, b's one or one per
 * column; a's and y's zero points constant, one element; the qdq pass's
 * int32 bias (a ninth input) constant, one per column; y 8-bit; on hosts
 * with VNNI (qconv_fits says why).
 */
static bool qlmatmul_fits(struct graph *g, const struct node *n)
{
	const struct value *a = node_in(g, n, 0), *b = node_in(g, n, 3), *y = node_out(g, n, 0);

	if (n->op != OP_QLINEARMATMUL || n->n_out != 1 || !is_8bit(a) || !a->has_shape ||
	    a->shape.rank < 2 || !b || b->dtype != DTYPE_I8 || !b->data || !b->has_shape ||
	    b->shape.rank != 2 || !shape_is_static(&b->shape) || !y || !is_8bit(y) ||
	    !dim_is_const(a->shape.d[a->shape.rank - 1]) ||
	    a->shape.d[a->shape.rank - 1].c != b->shape.d[0].c)
		return false;
	return q8_params_fit(g, n, b->shape.d[1].c);
}

/* The post-ops of a match: what relay_to_tir passes to the helper. */
struct epi_plan {
	int n_po;
	int po[MAX_PO];
	double alpha[MAX_PO], beta[MAX_PO];
	int n_bin;
	int bin[MAX_BIN];		/* value ids of the binary operands */
	int bc[MAX_BIN];		/* their enum bcast */
	int conv_bias;			/* value id of an Add made the conv's bias, or -1 */
};

static bool po_add(struct epi_plan *ep, int code, double alpha, double beta)
{
	if (ep->n_po == MAX_PO)
		return false;
	ep->po[ep->n_po] = code;
	ep->alpha[ep->n_po] = alpha;
	ep->beta[ep->n_po] = beta;
	ep->n_po++;
	return true;
}

/*
 * A per-channel constant bias of a Conv without one: x of shape [M, 1...]
 * or [1, M, 1...], of the output's rank without or with its batch dim.
 */
static bool is_conv_bias(struct graph *g, const struct node *conv, const struct value *x)
{
	const struct shape *s = &x->shape;
	const struct value *y = node_out(g, conv, 0);
	int64_t m = y->shape.d[1].c;
	int off = s->rank == y->shape.rank ? 1 : 0;

	if (node_in(g, conv, 2) || !x->data || !libcall_is_f32(x) || !shape_is_static(s))
		return false;
	if (s->rank != y->shape.rank && s->rank != y->shape.rank - 1)
		return false;
	for (int i = 0; i < s->rank; i++)
		if (s->d[i].c != (i == off ? m : 1))
			return false;
	return true;
}

/* How x broadcasts into out (enum bcast), BC_NONE when no class fits. */
static int bcast_of(const struct value *x, const struct value *out, bool conv, bool b_vec)
{
	const struct shape *s = &x->shape, *o = &out->shape;
	int r = o->rank, off = r - s->rank;
	bool full = true, one = true;
	unsigned runs = 0;

	if (off < 0)
		return BC_NONE;
	for (int i = 0; i < r; i++) {
		struct dim d = i >= off ? s->d[i - off] : dim_const(1);

		if (libcall_dim_is_one(d)) {
			full = full && libcall_dim_is_one(o->d[i]);
			continue;
		}
		if (!dim_eq(d, o->d[i]))
			return BC_NONE;
		one = false;
		if (i < 31)
			runs |= 1u << i;
		else
			return BC_NONE;
	}
	if (full)
		return BC_FULL;
	if (one)
		return BC_SCALAR;
	if (conv && runs == 1u << 1)
		return BC_CHANNEL;
	if (!conv && !b_vec && runs == 1u << (r - 1))
		return BC_LAST;
	return BC_NONE;
}

/* One epilogue op e reading chain value v: its post-ops, or false. */
static bool epi_op(struct graph *g, const int *nodes, int n_nodes, int idx, int v,
		   struct epi_plan *ep, bool b_vec)
{
	const struct node *a = &g->nodes.v[nodes[0]], *e = &g->nodes.v[nodes[idx]];
	const struct value *out = node_out(g, e, 0);
	double lo, hi;
	int other = -1;

	if (!libcall_epilogue_shaped(g, e, v))
		return false;
	if (e->op != OP_ADD && (e->n_in < 1 || e->in[0] != v))
		return false;
	switch (e->op) {
	case OP_RELU:
		return po_add(ep, PO_RELU, 0, 0);
	case OP_LEAKYRELU:
		return po_add(ep, PO_RELU, node_attr_float(e, "alpha", 0.01), 0);
	case OP_TANH:
		return po_add(ep, PO_TANH, 0, 0);
	case OP_SIGMOID:
		return po_add(ep, PO_LOGISTIC, 0, 0);
	case OP_ELU:
		return po_add(ep, PO_ELU, node_attr_float(e, "alpha", 1.0), 0);
	case OP_HARDSWISH:
		return po_add(ep, PO_HARDSWISH, 0, 0);
	case OP_NEG:
		return po_add(ep, PO_LINEAR, -1, 0);
	case OP_EXP:
		return po_add(ep, PO_EXP, 0, 0);
	case OP_ABS:
		return po_add(ep, PO_ABS, 0, 0);
	case OP_GELU:
		if (!strcmp(node_attr_str(e, "approximate", "none"), "none"))
			return po_add(ep, PO_GELU_ERF, 0, 0);
		if (!strcmp(node_attr_str(e, "approximate", "none"), "tanh"))
			return po_add(ep, PO_GELU_TANH, 0, 0);
		return false;
	case OP_HARDSIGMOID:
		return po_add(ep, PO_LINEAR, node_attr_float(e, "alpha", 0.2),
			      node_attr_float(e, "beta", 0.5)) && po_add(ep, PO_CLIP, 0, 1);
	case OP_CLIP:
		return lower_clip_bounds(g, e, &lo, &hi) && po_add(ep, PO_CLIP, lo, hi);
	case OP_ADD:
		break;
	default:
		return false;
	}
	/* Add: the chain on one side, a tensor that broadcasts into it on the other */
	if (e->n_in != 2 || (e->in[0] == v) == (e->in[1] == v))
		return false;
	other = e->in[0] == v ? e->in[1] : e->in[0];
	for (int i = 0; i < idx; i++)
		if (g->nodes.v[nodes[i]].out[0] == other)
			return false;
	if (!libcall_is_f32(&g->values.v[other]))
		return false;
	if (idx == 1 && a->op == OP_CONV && is_conv_bias(g, a, &g->values.v[other])) {
		ep->conv_bias = other;
		return true;
	}
	for (int i = 0; i < ep->n_bin; i++)
		if (ep->bin[i] == other)
			return po_add(ep, PO_ADD0 + i, 0, 0);
	if (ep->n_bin == MAX_BIN)
		return false;
	ep->bc[ep->n_bin] = bcast_of(&g->values.v[other], out, a->op == OP_CONV, b_vec);
	if (ep->bc[ep->n_bin] == BC_NONE)
		return false;
	ep->bin[ep->n_bin] = other;
	ep->n_bin++;
	return po_add(ep, PO_ADD0 + ep->n_bin - 1, 0, 0);
}

/*
 * The post-op of s and then m when they gate the chain value v by itself
 * as exporters write SiLU (Swish) and HardSwish: s = Sigmoid(v) (PO_SWISH)
 * or HardSigmoid(v) with alpha 1/6 and beta 0.5 (PO_HARDSWISH: ONNX's
 * HardSwish, as torch exports it before opset 14), m = Mul(v, s) or Mul(s,
 * v), both of v's shape; the pattern's match keeps s's output inside it.
 * PO_NONE otherwise.
 */
static int gate_po(struct graph *g, const struct node *s, const struct node *m, int v)
{
	int po = s->op == OP_SIGMOID ? PO_SWISH : PO_NONE;

	if (s->op == OP_HARDSIGMOID && (float)node_attr_float(s, "alpha", 0.2) == 1.0f / 6 &&
	    node_attr_float(s, "beta", 0.5) == 0.5)
		po = PO_HARDSWISH;
	if (po == PO_NONE || m->op != OP_MUL || s->n_in != 1 || s->in[0] != v || m->n_in != 2)
		return PO_NONE;
	if (!((m->in[0] == v && m->in[1] == s->out[0]) || (m->in[1] == v && m->in[0] == s->out[0])))
		return PO_NONE;
	return libcall_epilogue_shaped(g, s, v) && libcall_epilogue_shaped(g, m, v) ? po : PO_NONE;
}

/* The post-ops of the match nodes[0..n) (anchor first), or false. */
static bool epi_plan(struct graph *g, const int *nodes, int n_nodes, struct epi_plan *ep)
{
	const struct node *a = &g->nodes.v[nodes[0]];
	struct mm_plan mp = { 0 };
	int v = a->out[0];

	memset(ep, 0, sizeof(*ep));
	ep->conv_bias = -1;
	if (a->op != OP_CONV && !mm_plan(g, a, &mp))
		return false;
	/* Gemm's alpha without C: a linear post-op first */
	if (a->op == OP_GEMM && !node_in(g, a, 2) && node_attr_float(a, "alpha", 1.0) != 1.0 &&
	    !po_add(ep, PO_LINEAR, node_attr_float(a, "alpha", 1.0), 0))
		return false;
	for (int i = 1; i < n_nodes; i++) {
		int gp = i + 1 < n_nodes ? gate_po(g, &g->nodes.v[nodes[i]],
						       &g->nodes.v[nodes[i + 1]], v) : PO_NONE;

		if (gp != PO_NONE) {
			if (!po_add(ep, gp, gp == PO_SWISH ? 1.0 : 0, 0))
				return false;
			v = g->nodes.v[nodes[++i]].out[0];
			continue;
		}
		if (!epi_op(g, nodes, n_nodes, i, v, ep, mp.b_vec))
			return false;
		v = g->nodes.v[nodes[i]].out[0];
	}
	return true;
}

/* ---- the standalone ops ---- */

/* Eltwise algorithms and pooling kinds: as enum rt_dnnl_ew / rt_dnnl_pool. */
enum ew_code {
	EW_NONE, EW_RELU, EW_TANH, EW_ELU, EW_LINEAR, EW_LOGISTIC, EW_CLIP, EW_HARDSWISH,
	EW_EXP, EW_SQRT, EW_ABS, EW_ROUND, EW_GELU_ERF, EW_GELU_TANH, EW_COUNT
};

enum pool_kind {
	POOL_MAX, POOL_AVG_INCLUDE, POOL_AVG_EXCLUDE, POOL_COUNT
};

/* A standalone op as its helper sees it (relay_to_tir passes these). */
struct op_plan {
	const char *fn;			/* the helper: collagec_dnnl_<fn> */
	/* eltwise: one algorithm, then a second as a post-op or EW_NONE */
	int alg, alg2;
	double alpha, beta, a2, b2;
	/* pooling over nsp spatial dims (a global pool: the dims as one) */
	int nsp;
	int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
	int pool;			/* enum pool_kind */
	/* softmax, layer norm: x as [outer, len, inner]; the dims they span */
	int axis, axis_end;
	int log;			/* LogSoftmax */
	double eps;			/* BatchNormalization, LayerNormalization */
	int64_t group;			/* ConvTranspose (with the pooling geometry) */
	int xin;			/* scale: which input is x (the other is s) */
};

/* Whether every dim of x from `from` on is a constant. */
static bool dims_const_from(const struct value *x, int from)
{
	for (int i = from; i < x->shape.rank; i++)
		if (!dim_is_const(x->shape.d[i]))
			return false;
	return true;
}

/* Whether n has one output (optional ones absent), float32 and x's shape. */
static bool same_shape_out(struct graph *g, const struct node *n, const struct value *x)
{
	const struct value *y = node_out(g, n, 0);

	for (int i = 1; i < n->n_out; i++)
		if (n->out[i] >= 0)
			return false;
	if (!libcall_is_f32(x) || !libcall_is_f32(y) || y->shape.rank != x->shape.rank)
		return false;
	for (int i = 0; i < x->shape.rank; i++)
		if (!dim_eq(x->shape.d[i], y->shape.d[i]))
			return false;
	return true;
}

/* An elementwise op as one eltwise primitive (a second algorithm fused). */
static bool eltwise_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const char *approx;
	double lo, hi;

	if (n->n_in < 1 || !same_shape_out(g, n, node_in(g, n, 0)))
		return false;
	if (n->op != OP_CLIP && n->n_in != 1)
		return false;
	p->fn = "eltwise";
	switch (n->op) {
	case OP_RELU:
		p->alg = EW_RELU;
		return true;
	case OP_LEAKYRELU:
		p->alg = EW_RELU;
		p->alpha = node_attr_float(n, "alpha", 0.01);
		return true;
	case OP_TANH:
		p->alg = EW_TANH;
		return true;
	case OP_SIGMOID:
		p->alg = EW_LOGISTIC;
		return true;
	case OP_ELU:
		p->alg = EW_ELU;
		p->alpha = node_attr_float(n, "alpha", 1.0);
		return true;
	case OP_HARDSWISH:
		p->alg = EW_HARDSWISH;
		return true;
	case OP_HARDSIGMOID:
		/* oneDNN 2.6 has no hardsigmoid: linear, then clip to [0, 1] */
		p->alg = EW_LINEAR;
		p->alpha = node_attr_float(n, "alpha", 0.2);
		p->beta = node_attr_float(n, "beta", 0.5);
		p->alg2 = EW_CLIP;
		p->b2 = 1;
		return true;
	case OP_CLIP:
		if (!lower_clip_bounds(g, n, &lo, &hi))
			return false;
		p->alg = EW_CLIP;
		p->alpha = lo;
		p->beta = hi;
		return true;
	case OP_EXP:
		p->alg = EW_EXP;
		return true;
	case OP_SQRT:
		p->alg = EW_SQRT;
		return true;
	case OP_ABS:
		p->alg = EW_ABS;
		return true;
	case OP_ROUND:
		p->alg = EW_ROUND;
		return true;
	case OP_GELU:
		approx = node_attr_str(n, "approximate", "none");
		if (!strcmp(approx, "none"))
			p->alg = EW_GELU_ERF;
		else if (!strcmp(approx, "tanh"))
			p->alg = EW_GELU_TANH;
		else
			return false;
		return true;
	default:
		return false;
	}
}

/*
 * MaxPool, AveragePool: 1 to 3 spatial dims, constant. ceil_mode becomes
 * a larger end pad, exact for MaxPool and for AveragePool without
 * count_include_pad (the overhang counts in neither); with it, oneDNN would
 * count the overhang, so that is refused. Windows that lie wholly in the
 * pads are refused too (oneDNN rejects them, ONNX leaves them undefined).
 */
static bool pool_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
	const int64_t *ks;
	bool ceil = node_attr_int(n, "ceil_mode", 0) != 0;
	struct window w;
	int r;

	if (n->n_in != 1 || !libcall_is_f32(x) || !libcall_is_f32(y) || x->shape.rank < 3 ||
	    x->shape.rank > 5 || y->shape.rank != x->shape.rank || !dims_const_from(x, 2))
		return false;
	for (int i = 1; i < n->n_out; i++)
		if (n->out[i] >= 0)
			return false;	/* MaxPool's Indices */
	r = x->shape.rank - 2;
	if (node_attr_ints(n, "kernel_shape", &ks) != r)
		return false;
	if (window_plan(g, (struct node *)n, &x->shape, ks, ceil, &w) < 0)
		return false;
	p->fn = "pool";
	p->nsp = r;
	p->pool = POOL_MAX;
	if (n->op == OP_AVERAGEPOOL)
		p->pool = node_attr_int(n, "count_include_pad", 0) ? POOL_AVG_INCLUDE :
								      POOL_AVG_EXCLUDE;
	for (int i = 0; i < r; i++) {
		int64_t ek = (w.k[i] - 1) * w.d[i] + 1;
		int64_t pe = (w.out[i] - 1) * w.s[i] + ek - w.in[i] - w.pb[i];

		if (!dim_is_const(y->shape.d[i + 2]) || y->shape.d[i + 2].c != w.out[i])
			return false;
		if (pe < w.pe[i])
			pe = w.pe[i];
		if (pe > w.pe[i] && p->pool == POOL_AVG_INCLUDE)
			return false;
		if (p->pool != POOL_MAX && w.d[i] != 1)
			return false;
		if (w.pb[i] >= ek || pe >= ek)
			return false;
		p->in[i] = w.in[i];
		p->out[i] = w.out[i];
		p->k[i] = w.k[i];
		p->s[i] = w.s[i];
		p->d[i] = w.d[i];
		p->pb[i] = w.pb[i];
		p->pe[i] = pe;
	}
	for (int i = r; i < 3; i++)
		p->in[i] = p->out[i] = p->k[i] = p->s[i] = p->d[i] = 1;
	return true;
}

/* GlobalAveragePool, GlobalMaxPool: one window over the spatial dims as one. */
static bool gpool_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0), *y = node_out(g, n, 0);
	int64_t sp = 1;

	if (n->n_in != 1 || n->n_out != 1 || !libcall_is_f32(x) || !libcall_is_f32(y) ||
	    x->shape.rank < 3 || !dims_const_from(x, 2))
		return false;
	for (int i = 2; i < x->shape.rank; i++)
		sp *= x->shape.d[i].c;
	if (sp <= 0)
		return false;
	p->fn = "pool";
	p->nsp = 1;
	p->pool = n->op == OP_GLOBALMAXPOOL ? POOL_MAX : POOL_AVG_EXCLUDE;
	p->in[0] = p->k[0] = sp;
	p->out[0] = 1;
	for (int i = 0; i < 3; i++) {
		p->s[i] = p->d[i] = 1;
		if (i > 0)
			p->in[i] = p->out[i] = p->k[i] = 1;
	}
	return true;
}

/*
 * Mul(x, s) or Mul(s, x) with s one value per channel of x and image: x
 * float32 [n, c, d...] (rank 3 to 5, c constant), s [n or 1, c, 1...] of
 * x's rank, y of x's shape. A squeeze-and-excitation block ends so
 * (EfficientNet, MobileNetV3: x the depthwise conv's output, s the
 * sigmoid of its pooled excitation); on dnnl x and y may stay blocked
 * between the convolutions around it, which on c take them plain (a
 * reorder at each of its edges, and a projection conv run as a plain GEMM).
 */
static bool scale_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	for (int i = 0; i < 2 && n->n_in == 2; i++) {
		const struct value *x = node_in(g, n, i), *s = node_in(g, n, 1 - i);
		int r = x->shape.rank;
		bool ok;

		if (!same_shape_out(g, n, x) || !libcall_is_f32(s) || r < 3 || r > 5 ||
		    s->shape.rank != r || !dim_is_const(x->shape.d[1]) || x->shape.d[1].c <= 0 ||
		    !dim_eq(s->shape.d[1], x->shape.d[1]))
			continue;
		ok = dim_is_const(s->shape.d[0]) && s->shape.d[0].c == 1 ?
			true : dim_eq(s->shape.d[0], x->shape.d[0]);
		for (int d = 2; d < r && ok; d++)
			ok = dim_is_const(s->shape.d[d]) && s->shape.d[d].c == 1;
		if (!ok)
			continue;
		p->fn = "scale";
		p->xin = i;
		return true;
	}
	return false;
}

/* Softmax, LogSoftmax: opset 13's one axis, or older opsets' axis to the end. */
static bool softmax_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0);
	int r, axis;

	if (n->n_in != 1 || !same_shape_out(g, n, x) || x->shape.rank < 1)
		return false;
	r = x->shape.rank;
	axis = (int)node_attr_int(n, "axis", g->opset >= 13 ? -1 : 1);
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r)
		return false;
	p->fn = "softmax";
	p->axis = axis;
	p->axis_end = g->opset >= 13 ? axis + 1 : r;
	p->log = n->op == OP_LOGSOFTMAX;
	return true;
}

/* Inference BatchNormalization: float32 [c] parameters, rank 2 or more. */
static bool bnorm_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0);

	if (n->n_in != 5 || node_attr_int(n, "training_mode", 0) || !same_shape_out(g, n, x) ||
	    x->shape.rank < 2)
		return false;
	for (int i = 1; i < 5; i++) {
		const struct value *v = node_in(g, n, i);

		if (!libcall_is_f32(v) || v->shape.rank != 1 ||
		    !dim_eq(v->shape.d[0], x->shape.d[1]))
			return false;
	}
	p->fn = "bnorm";
	p->eps = node_attr_float(n, "epsilon", 1e-5);
	return true;
}

/*
 * LayerNormalization over the dims from axis on, as one: float32 statistics
 * (stash_type 1), no Mean / InvStdDev outputs, Scale and B shaped like those
 * dims (leading ones dropped), so that they are [len] vectors.
 */
static bool lnorm_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0);
	int r, axis;

	if (n->n_in < 2 || n->n_in > 3 || !same_shape_out(g, n, x) || x->shape.rank < 1 ||
	    node_attr_int(n, "stash_type", 1) != 1)
		return false;
	r = x->shape.rank;
	axis = (int)node_attr_int(n, "axis", -1);
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r || !dims_const_from(x, axis))
		return false;
	for (int i = 1; i < n->n_in; i++) {
		const struct value *v = node_in(g, n, i);

		if (!v)
			continue;
		if (!libcall_is_f32(v) || !shape_is_static(&v->shape) || v->shape.rank > r - axis)
			return false;
		for (int j = 0; j < v->shape.rank; j++)
			if (v->shape.d[j].c != x->shape.d[r - v->shape.rank + j].c)
				return false;
	}
	p->fn = "lnorm";
	p->axis = axis;
	p->axis_end = r;
	p->eps = node_attr_float(n, "epsilon", 1e-5);
	return true;
}

/*
 * LRN across channels, rank 3 or more (the spatial dims as one), an odd
 * size: with an even one oneDNN's window sits one channel off ONNX's.
 */
static bool lrn_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0);
	int64_t size = node_attr_int(n, "size", 0);

	if (n->n_in != 1 || !same_shape_out(g, n, x) || x->shape.rank < 3 || size < 1 ||
	    size % 2 == 0)
		return false;
	p->fn = "lrn";
	return true;
}

/* ints attribute `name` of n: r values, or absent (all `def`); false if neither. */
static bool ints_or(const struct node *n, const char *name, int r, int64_t *v, int64_t def)
{
	const int64_t *a;
	int na = node_attr_ints(n, name, &a);

	if (na >= 0 && na != r)
		return false;
	for (int i = 0; i < r; i++)
		v[i] = na > 0 ? a[i] : def;
	return true;
}

/*
 * ConvTranspose: 1 to 3 constant spatial dims, explicit pads (no auto_pad,
 * no output_shape), output_padding below the stride (oneDNN's output size
 * rounds down to it), a constant-shaped weight and bias.
 */
static bool deconv_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1), *bias = node_in(g, n, 2);
	const struct value *y = node_out(g, n, 0);
	int64_t op[3], pads[6], group = node_attr_int(n, "group", 1);
	int r;

	if (n->n_in < 2 || n->n_in > 3 || n->n_out != 1 || !libcall_is_f32(x) ||
	    !libcall_is_f32(w) || !libcall_is_f32(y) || (bias && !libcall_is_f32(bias)))
		return false;
	r = x->shape.rank - 2;
	if (r < 1 || r > 3 || w->shape.rank != r + 2 || y->shape.rank != r + 2 ||
	    !dims_const_from(x, 1) || !dims_const_from(y, 1) || !shape_is_static(&w->shape))
		return false;
	if (bias && (bias->shape.rank != 1 || !shape_is_static(&bias->shape) ||
		     bias->shape.d[0].c != y->shape.d[1].c))
		return false;
	if (strcmp(node_attr_str(n, "auto_pad", "NOTSET"), "NOTSET") ||
	    node_attr(n, "output_shape"))
		return false;
	if (group < 1 || x->shape.d[1].c % group || w->shape.d[0].c != x->shape.d[1].c ||
	    w->shape.d[1].c * group != y->shape.d[1].c)
		return false;
	if (!ints_or(n, "strides", r, p->s, 1) || !ints_or(n, "dilations", r, p->d, 1) ||
	    !ints_or(n, "output_padding", r, op, 0) || !ints_or(n, "pads", 2 * r, pads, 0) ||
	    !ints_or(n, "kernel_shape", r, p->k, 0))
		return false;
	for (int i = 0; i < r; i++) {
		int64_t k = w->shape.d[i + 2].c, ek;

		if ((p->k[i] && p->k[i] != k) || p->s[i] < 1 || p->d[i] < 1 || op[i] < 0 ||
		    op[i] >= p->s[i] || pads[i] < 0 || pads[i + r] < 0)
			return false;
		ek = (k - 1) * p->d[i] + 1;
		p->k[i] = k;
		p->in[i] = x->shape.d[i + 2].c;
		p->out[i] = y->shape.d[i + 2].c;
		p->pb[i] = pads[i];
		p->pe[i] = pads[i + r];
		if (p->out[i] != (p->in[i] - 1) * p->s[i] + ek - p->pb[i] - p->pe[i] + op[i] ||
		    p->out[i] < 1)
			return false;
	}
	for (int i = r; i < 3; i++)
		p->in[i] = p->out[i] = p->k[i] = p->s[i] = p->d[i] = 1;
	p->fn = "deconv";
	p->nsp = r;
	p->group = group;
	return true;
}

/* The plan of standalone op n, or false where oneDNN cannot run it. */
static bool op_plan(struct graph *g, const struct node *n, struct op_plan *p)
{
	memset(p, 0, sizeof(*p));
	switch (n->op) {
	case OP_MAXPOOL:
	case OP_AVERAGEPOOL:
		return pool_plan(g, n, p);
	case OP_GLOBALMAXPOOL:
	case OP_GLOBALAVERAGEPOOL:
		return gpool_plan(g, n, p);
	case OP_SOFTMAX:
	case OP_LOGSOFTMAX:
		return softmax_plan(g, n, p);
	case OP_BATCHNORMALIZATION:
		return bnorm_plan(g, n, p);
	case OP_LAYERNORMALIZATION:
		return lnorm_plan(g, n, p);
	case OP_LRN:
		return lrn_plan(g, n, p);
	case OP_CONVTRANSPOSE:
		return deconv_plan(g, n, p);
	case OP_MUL:
		return scale_plan(g, n, p);
	default:
		return eltwise_plan(g, n, p);
	}
}

/* ---- squeeze-and-excitation as one kernel ---- */

/* The activations of collagec_dnnl_se: as enum rt_dnnl_se_act of rt_dnnl.h. */
enum se_act {
	SE_RELU, SE_SILU, SE_HARDSWISH, SE_SIGMOID, SE_HARDSIGMOID
};

/*
 * A squeeze-and-excitation block (rule se) as collagec_dnnl_se runs it:
 * x [n, c, spatial...] pooled to [n, c], a 1x1 Conv to m channels (w1, b1),
 * an activation (Relu, SiLU as x * Sigmoid(x), HardSwish), a 1x1 Conv back
 * to c (w2, b2), a gate (Sigmoid, HardSigmoid), then a Mul of the gate by x
 * itself (scaled x of x's shape), or by constant weights [o, c, 1...] of
 * the next 1x1 Conv, where pass_fold_scale moved the scale of one image.
 */
struct se_plan {
	int gap, conv1, conv2, gate, mul;	/* node indices */
	int x, wsc;			/* x; the scaled weights (or -1: x is scaled) */
	int xin;			/* which input of the Mul x or wsc is */
	int act, gact;			/* enum se_act */
	double alpha, beta;		/* HardSigmoid's */
	int64_t c, m, o, hw;
};

/* The node of the set nodes[0..n) that makes value v, or NULL. */
static const struct node *se_maker(struct graph *g, const int *nodes, int n, int v)
{
	int p = v >= 0 ? g->values.v[v].producer : -1;

	for (int i = 0; i < n && p >= 0; i++)
		if (nodes[i] == p)
			return &g->nodes.v[p];
	return NULL;
}

/*
 * Whether Conv n is 1x1, ungrouped, unpadded, over [.., cin, 1...] to
 * [.., cout, 1...], with constant float32 weights and bias (or none).
 */
static bool se_conv(struct graph *g, const struct node *n, int r, int64_t cin, int64_t cout)
{
	const struct value *w = node_in(g, n, 1), *b = node_in(g, n, 2), *y = node_out(g, n, 0);
	const char *pad = node_attr_str(n, "auto_pad", "NOTSET");
	const int64_t *pads;
	int np = node_attr_ints(n, "pads", &pads);

	if (n->op != OP_CONV || node_attr_int(n, "group", 1) != 1 || !w || !w->data ||
	    !libcall_is_f32(w) || !shape_is_static(&w->shape) || w->shape.rank != r ||
	    w->shape.d[0].c != cout || w->shape.d[1].c != cin || !y || !libcall_is_f32(y) ||
	    y->shape.rank != r || !dim_is_const(y->shape.d[1]) || y->shape.d[1].c != cout ||
	    (strcmp(pad, "NOTSET") && strcmp(pad, "VALID")))
		return false;
	for (int i = 0; i < np; i++)
		if (pads[i])
			return false;
	for (int i = 2; i < r; i++)
		if (w->shape.d[i].c != 1 || !dim_is_const(y->shape.d[i]) || y->shape.d[i].c != 1)
			return false;
	return !b || (b->data && libcall_is_f32(b) && b->shape.rank == 1 &&
		      shape_is_static(&b->shape) && b->shape.d[0].c == cout);
}

/* se_plan for the set nodes[0..n) (the rule's match), or false. */
static bool se_plan(struct graph *g, const int *nodes, int n, struct se_plan *sp)
{
	const struct node *mul = NULL, *gate = NULL, *c2, *mid, *c1, *gap, *sig = NULL;
	const struct value *x, *xo;
	int r;

	memset(sp, 0, sizeof(*sp));
	if (n != 6 && n != 7)
		return false;
	/* the root: the Mul no node of the set reads */
	for (int i = 0; i < n && !gate; i++) {
		bool read = false;

		mul = &g->nodes.v[nodes[i]];
		for (int j = 0; j < n && !read; j++)
			for (int k = 0; k < g->nodes.v[nodes[j]].n_in; k++)
				read = read || g->nodes.v[nodes[j]].in[k] == mul->out[0];
		for (int k = 0; k < 2 && !read && !gate && mul->op == OP_MUL && mul->n_in == 2;
		     k++) {
			gate = se_maker(g, nodes, n, mul->in[k]);
			if (gate && gate->op != OP_SIGMOID && gate->op != OP_HARDSIGMOID)
				gate = NULL;
			sp->xin = 1 - k;
		}
	}
	if (!gate || gate->n_in != 1 || !(c2 = se_maker(g, nodes, n, gate->in[0])) ||
	    c2->op != OP_CONV || !(mid = se_maker(g, nodes, n, c2->in[0])))
		return false;
	if (mid->op == OP_RELU || mid->op == OP_HARDSWISH) {
		sp->act = mid->op == OP_RELU ? SE_RELU : SE_HARDSWISH;
		c1 = mid->n_in == 1 ? se_maker(g, nodes, n, mid->in[0]) : NULL;
	} else if (mid->op == OP_MUL && mid->n_in == 2) {
		/* SiLU: Mul(t, Sigmoid(t)) or Mul(Sigmoid(t), t) */
		sp->act = SE_SILU;
		for (int k = 0; k < 2 && !sig; k++)
			if ((sig = se_maker(g, nodes, n, mid->in[k])) &&
			    (sig->op != OP_SIGMOID || sig->n_in != 1 || sig->in[0] != mid->in[1 - k]))
				sig = NULL;
		c1 = sig ? se_maker(g, nodes, n, sig->in[0]) : NULL;
	} else {
		return false;
	}
	if (!c1 || c1->op != OP_CONV || !(gap = se_maker(g, nodes, n, c1->in[0])) ||
	    gap->op != OP_GLOBALAVERAGEPOOL || n != (sig ? 7 : 6))
		return false;
	x = node_in(g, gap, 0);
	r = x->shape.rank;
	if (!libcall_is_f32(x) || r < 3 || r > 5 || !dims_const_from(x, 1) || x->shape.d[1].c <= 0)
		return false;
	sp->c = x->shape.d[1].c;
	sp->hw = 1;
	for (int i = 2; i < r; i++)
		sp->hw *= x->shape.d[i].c;
	sp->m = node_in(g, c1, 1) && node_in(g, c1, 1)->has_shape ?
		node_in(g, c1, 1)->shape.d[0].c : 0;
	if (sp->hw <= 0 || sp->m <= 0 || !se_conv(g, c1, r, sp->c, sp->m) ||
	    !se_conv(g, c2, r, sp->m, sp->c))
		return false;
	sp->gact = gate->op == OP_SIGMOID ? SE_SIGMOID : SE_HARDSIGMOID;
	sp->alpha = node_attr_float(gate, "alpha", 0.2);
	sp->beta = node_attr_float(gate, "beta", 0.5);
	xo = node_in(g, mul, sp->xin);
	sp->x = gap->in[0];
	sp->wsc = -1;
	sp->o = 0;
	if (mul->in[sp->xin] == sp->x) {
		/* x * gate: y of x's shape */
		if (!same_shape_out(g, mul, x))
			return false;
	} else {
		/* weights [o, c, 1...] * gate [1, c, 1...], one image */
		if (!xo->data || !libcall_is_f32(xo) || !shape_is_static(&xo->shape) ||
		    xo->shape.rank != r || xo->shape.d[1].c != sp->c ||
		    !dim_is_const(x->shape.d[0]) || x->shape.d[0].c != 1 ||
		    !same_shape_out(g, mul, xo))
			return false;
		for (int i = 2; i < r; i++)
			if (xo->shape.d[i].c != 1)
				return false;
		sp->wsc = mul->in[sp->xin];
		sp->o = xo->shape.d[0].c;
	}
	sp->gap = (int)(gap - g->nodes.v);
	sp->conv1 = (int)(c1 - g->nodes.v);
	sp->conv2 = (int)(c2 - g->nodes.v);
	sp->gate = (int)(gate - g->nodes.v);
	sp->mul = (int)(mul - g->nodes.v);
	return true;
}

static bool is_anchor(const struct node *n)
{
	return n->op == OP_CONV || n->op == OP_MATMUL || n->op == OP_GEMM;
}

/*
 * A pattern match: an anchor that fits, then epilogue ops that are
 * post-ops; or one standalone op oneDNN runs.
 */
static bool dnnl_check(struct graph *g, const int *nodes, int n_nodes)
{
	const struct node *a = &g->nodes.v[nodes[0]];
	struct epi_plan ep;
	struct op_plan op;
	struct se_plan se;

	if (n_nodes >= 6 && se_plan(g, nodes, n_nodes, &se))
		return true;
	if (a->op == OP_QLINEARCONV)
		return n_nodes == 1 && qconv_fits(g, a);
	if (a->op == OP_MATMULINTEGER)
		return n_nodes == 1 && qmatmul_fits(g, a);
	if (a->op == OP_QLINEARMATMUL)
		return n_nodes == 1 && qlmatmul_fits(g, a);
	if (!is_anchor(a))
		return n_nodes == 1 && op_plan(g, a, &op);
	return anchor_fits(g, a) && epi_plan(g, nodes, n_nodes, &ep);
}

/* ---- layouts handed over between dnnl kernels ---- */

/*
 * value.layout as this target sets it: LAYOUT_BLOCKED, channels in blocks
 * (rt_dnnl.h's rt_dnnl_layout: nChw8c with AVX2, nChw16c with AVX-512).
 * Channels that are no multiple of the block are padded with zeros to the
 * next block, as oneDNN's blocked layouts do: the buffer is planned with
 * the channels rounded up to MAX_BLOCK (value.store_c), which covers the
 * block of any host that runs the model. MobileNetV2's 24-channel values
 * were reordered to plain and back at each of their five edges before.
 * An 8-bit value that one QLinearConv on dnnl writes and only others read
 * is LAYOUT_BLOCKED too (LAYOUT_Q8_CL, core/emit/q8layout.c, through this
 * kind's q8_cl_* hooks), which for it means channels-last (nhwc), the
 * layout oneDNN computes int8 in: no padding.
 */
enum dnnl_layout {
	LAYOUT_PLAIN, LAYOUT_BLOCKED, LAYOUT_COUNT
};

/* A kernel's layout bits: which of its buffers are blocked (RT_DNNL_LAY_*). */
enum lay_flags {
	LAY_SRC = 1 << 0, LAY_DST = 1 << 1, LAY_SUM = 1 << 2
};

/*
 * The operand of the add that the runtime turns into a sum post-op (the
 * first post-op, a tensor of dst's shape, used by no other post-op), or -1.
 */
static int sum_operand(const struct epi_plan *ep)
{
	int i;

	if (ep->n_po == 0 || ep->po[0] < PO_ADD0 || ep->po[0] > PO_ADD1)
		return -1;
	i = ep->po[0] - PO_ADD0;
	if (ep->bc[i] != BC_FULL)
		return -1;
	for (int j = 1; j < ep->n_po; j++)
		if (ep->po[j] == ep->po[0])
			return -1;
	return ep->bin[i];
}

/*
 * Which input of partition p's one op its helper takes blocked, when p is a
 * pooling op (its x) or a channel scale (scale_plan's x); else -1.
 */
static int blocked_op_slot(struct graph *g, const struct partition *p)
{
	const struct node *a = &g->nodes.v[p->nodes[0]];
	struct op_plan op;

	if (p->n_nodes != 1 || is_anchor(a) || !op_plan(g, a, &op))
		return -1;
	if (!strcmp(op.fn, "pool"))
		return 0;
	return !strcmp(op.fn, "scale") ? op.xin : -1;
}

/*
 * Whether dnnl partition q reads value v as input `slot` of its node n in a
 * blocked layout: a Conv's x, the summed operand of its residual add, a
 * pooling op's or channel scale's x.
 */
static bool reads_blocked(struct graph *g, const struct partition *q, const struct node *n,
			  int slot, int v)
{
	const struct node *a = &g->nodes.v[q->nodes[0]];
	struct epi_plan ep;
	struct se_plan se;

	if (q->n_nodes >= 6 && se_plan(g, q->nodes, q->n_nodes, &se))
		return (n == &g->nodes.v[se.gap] && slot == 0) ||
		       (se.wsc < 0 && n == &g->nodes.v[se.mul] && slot == se.xin);
	if (n == a && slot == 0 && (a->op == OP_CONV || a->op == OP_QLINEARCONV))
		return true;
	if (n == a && !is_anchor(a))
		return blocked_op_slot(g, q) == slot;
	if (n == a || a->op != OP_CONV || !epi_plan(g, q->nodes, q->n_nodes, &ep))
		return false;
	return sum_operand(&ep) == v;
}

/*
 * Whether Conv n takes padded channel blocks at no cost: ungrouped or
 * depthwise, as oneDNN's optimised convolutions run them padded.
 */
static bool pads_freely(struct graph *g, const struct node *n)
{
	int64_t group = node_attr_int(n, "group", 1);

	return group == 1 || (group == node_in(g, n, 0)->shape.d[1].c &&
			      group == node_in(g, n, 1)->shape.d[0].c);
}

/* The value a dnnl partition writes, when it may write it blocked; else -1. */
static int blocked_candidate(struct graph *g, const struct partition *p)
{
	const struct node *a = &g->nodes.v[p->nodes[0]];
	int v = g->nodes.v[p->nodes[p->n_nodes - 1]].out[0];
	const struct value *y;
	struct se_plan se;
	bool se_x = false;

	/* a squeeze-and-excitation's scaled x (not weights it scales) */
	if (p->n_nodes >= 6 && se_plan(g, p->nodes, p->n_nodes, &se)) {
		if (se.wsc >= 0)
			return -1;
		v = g->nodes.v[se.mul].out[0];
		se_x = true;
	}
	y = &g->values.v[v];
	if (a->op == OP_QLINEARCONV)
		return y->data || (y->flags & (VALUE_INPUT | VALUE_OUTPUT)) ? -1 : v;
	if (a->op != OP_CONV && !se_x && blocked_op_slot(g, p) < 0)
		return -1;
	if (!libcall_is_f32(y) || y->shape.rank < 3 || y->shape.rank > 5 ||
	    !dim_is_const(y->shape.d[1]) || y->data || (y->flags & (VALUE_INPUT | VALUE_OUTPUT)))
		return -1;
	return v;
}

/*
 * The 8-bit value dnnl partition p may hand on channels-last
 * (core/emit/q8layout.c): a QLinearConv's output, else -1.
 */
static int dnnl_q8_cl_writes(struct graph *g, const struct partition *p)
{
	return g->nodes.v[p->nodes[0]].op == OP_QLINEARCONV ? blocked_candidate(g, p) : -1;
}

/* Whether dnnl partition p reads v (input slot of n) channels-last: a QLinearConv's x. */
static bool dnnl_q8_cl_reads(struct graph *g, const struct partition *p, const struct node *n,
			     int slot, int v)
{
	return n->op == OP_QLINEARCONV && reads_blocked(g, p, n, slot, v);
}

/*
 * Marks blocked the values that one dnnl Conv, pooling or channel scale
 * partition writes and only dnnl partitions read, each as a Conv's x, a
 * residual add's summed operand, a pooling op's or channel scale's x: those
 * stay in oneDNN's blocked layout from kernel to kernel, reordered only
 * where c (or a graph output) takes over; the 8-bit values between
 * QLinearConvs stay channels-last (core/emit/q8layout.c, by the
 * q8_cl_* hooks).
 */
static int dnnl_plan_layouts(struct graph *g, const struct partition *parts, int np)
{
	int *part_of = xmalloc(sizeof(int) * (size_t)(g->nodes.n ? g->nodes.n : 1));

	for (int i = 0; i < g->nodes.n; i++)
		part_of[i] = -1;
	for (int i = 0; i < np; i++)
		for (int j = 0; j < parts[i].n_nodes; j++)
			if (parts[i].target->kind == &target_kind_dnnl)
				part_of[parts[i].nodes[j]] = i;
	for (int i = 0; i < np; i++) {
		const struct node *a = &g->nodes.v[parts[i].nodes[0]];
		int v = parts[i].target->kind == &target_kind_dnnl && a->op != OP_QLINEARCONV ?
			blocked_candidate(g, &parts[i]) : -1;
		int64_t c = v >= 0 ? g->values.v[v].shape.d[1].c : 0;
		bool ok = v >= 0, read = false, pad = c % MAX_BLOCK != 0;

		if (pad && a->op == OP_CONV && !pads_freely(g, a))
			ok = false;
		for (int j = 0; j < g->nodes.n && ok; j++) {
			const struct node *n = &g->nodes.v[j];

			for (int s = 0; s < n->n_in && ok && !n->dead; s++) {
				if (n->in[s] != v)
					continue;
				read = true;
				ok = part_of[j] >= 0 && part_of[j] != i &&
				     reads_blocked(g, &parts[part_of[j]], n, s, v) &&
				     n->op != OP_QLINEARCONV &&
				     (!pad || n->op != OP_CONV || pads_freely(g, n));
			}
		}
		if (!ok || !read)
			continue;
		g->values.v[v].layout = LAYOUT_BLOCKED;
		if (pad)
			g->values.v[v].store_c = (c + MAX_BLOCK - 1) / MAX_BLOCK * MAX_BLOCK;
	}
	free(part_of);
	return 0;
}

/* ---- relay_to_tir ---- */

/* The post-op arguments: binary broadcasts, then (code, alpha, beta) per slot. */
static int po_args(struct tir_builder *b, const struct epi_plan *ep, struct tir **args)
{
	int na = 0;

	for (int i = 0; i < MAX_BIN; i++)
		args[na++] = tir_int(b, i < ep->n_bin ? ep->bc[i] : BC_NONE);
	for (int i = 0; i < MAX_PO; i++) {
		args[na++] = tir_int(b, i < ep->n_po ? ep->po[i] : PO_NONE);
		args[na++] = tir_flt(b, DTYPE_F32, i < ep->n_po ? ep->alpha[i] : 0);
		args[na++] = tir_flt(b, DTYPE_F32, i < ep->n_po ? ep->beta[i] : 0);
	}
	return na;
}

static struct tir *addr_or_null(struct tir_builder *b, struct tir_buf *buf)
{
	return buf ? tir_addr(b, buf, tir_int(b, 0)) : tir_int(b, 0);
}

/*
 * x, w, bias, e0, e1, y are set by the caller; then the shapes (w: input wi): nsp, n, c,
 * m, group, then per spatial dim (3, the unused ones 1, pads 0) in, out,
 * kernel, stride, dilation, pad begin, pad end; wconst.
 */
static int conv_args(struct tir_builder *b, struct graph *g, const struct node *n, int wi,
		     struct tir **args)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, wi);
	int r = x->shape.rank - 2, na = 0;
	int64_t kern[3];
	struct window win;

	for (int i = 0; i < r; i++)
		kern[i] = w->shape.d[i + 2].c;
	if (window_plan(g, (struct node *)n, &x->shape, kern, false, &win) < 0)
		return -1;
	args[na++] = tir_int(b, r);
	args[na++] = tir_dim(b, x->shape.d[0]);
	args[na++] = tir_int(b, x->shape.d[1].c);
	args[na++] = tir_int(b, w->shape.d[0].c);
	args[na++] = tir_int(b, node_attr_int(n, "group", 1));
	{
		const int64_t *v[] = { win.in, win.out, kern, win.s, win.d, win.pb, win.pe };

		for (size_t j = 0; j < ARRAY_SIZE(v); j++)
			for (int i = 0; i < 3; i++)
				args[na++] = tir_int(b, i < r ? v[j][i] : j < 5 ? 1 : 0);
	}
	args[na++] = tir_int(b, w->data != NULL);
	return na;
}

/* matmul's shapes: nb, d0..d3, bbatch, m, n, k, ta, tb, wconst, C's broadcast. */
/*
 * Whether this host multiplies bfloat16 in hardware (AVX512-BF16). For any
 * --cpu level too: collagec_dnnl_matmul multiplies in float32 on a host
 * without it (rt_dnnl_bf16_host), the same sums.
 */
static bool host_bf16(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512bf16");
#else
	return false;
#endif
}

/*
 * Whether every value of v is a bfloat16's: a Cast of a bfloat16 value to
 * float32, or a bfloat16 constant the compiled model widens when it opens
 * (pass_widen.c, pass_fold.c's "widen16").
 */
static bool bf16_valued(struct graph *g, const struct value *v)
{
	const struct node *p;
	bool bf;

	if (!v || v->dtype != DTYPE_F32)
		return false;
	if (v->data)
		return graph_widened16_of(g, v->data, &bf) && bf;
	if (v->producer < 0)
		return false;
	p = &g->nodes.v[v->producer];
	return p->op == OP_CAST && node_in(g, p, 0) && node_in(g, p, 0)->dtype == DTYPE_BF16;
}

/*
 * Whether MatMul or Gemm n multiplies bfloat16 values only (a bfloat16
 * model's, widened): a not transposed, b a constant matrix. oneDNN then
 * multiplies them as bfloat16 where the host has AVX512-BF16
 * (collagec_dnnl_matmul), exactly the same products summed in float32.
 */
static bool mm_bf16(struct graph *g, const struct node *n)
{
	const struct value *b = node_in(g, n, 1);

	return host_bf16() && (n->op == OP_MATMUL || n->op == OP_GEMM) &&
	       !node_attr_int(n, "transA", 0) &&
	       b && b->data && b->shape.rank == 2 && bf16_valued(g, node_in(g, n, 0)) &&
	       bf16_valued(g, b);
}

static int matmul_args(struct tir_builder *b, struct graph *g, const struct node *n,
		       struct tir **args)
{
	const struct value *c = n->op == OP_GEMM ? node_in(g, n, 2) : NULL;
	struct mm_plan p;
	struct tir *m;
	int na = 0, cm = 0;

	if (!mm_plan(g, n, &p))
		BUG("matmul plan changed after the rule took the node");
	m = tir_dim(b, p.m);
	if (p.fold)
		for (int i = 0; i < p.sa.rank - 2; i++)
			m = tir_mul(b, tir_dim(b, p.sa.d[i]), m);
	args[na++] = tir_int(b, p.nb);
	for (int i = 0; i < MAX_MM_BATCH; i++)
		args[na++] = i < p.nb ? tir_dim(b, p.batch[i]) : tir_int(b, 1);
	args[na++] = tir_int(b, p.nb > 0);
	args[na++] = m;
	args[na++] = tir_dim(b, p.n);
	args[na++] = tir_dim(b, p.k);
	args[na++] = tir_int(b, p.ta);
	args[na++] = tir_int(b, p.tb);
	args[na++] = tir_int(b, node_in(g, n, 1)->data != NULL);
	if (c) {
		/* C padded to [c0, c1] on the left: bit 0, n runs; bit 1, m runs */
		if (c->shape.rank >= 1 && !libcall_dim_is_one(c->shape.d[c->shape.rank - 1]))
			cm |= 1;
		if (c->shape.rank == 2 && !libcall_dim_is_one(c->shape.d[0]))
			cm |= 2;
	}
	args[na++] = tir_int(b, cm);
	args[na++] = tir_int(b, mm_bf16(g, n));
	return na;
}

/* The product of x's dims [from, to) as a loop-IR expression. */
static struct tir *dims_prod(struct tir_builder *b, const struct value *x, int from, int to)
{
	struct tir *e = NULL;

	for (int i = from; i < to; i++) {
		struct tir *d = tir_dim(b, x->shape.d[i]);

		e = e ? tir_mul(b, e, d) : d;
	}
	return e ? e : tir_int(b, 1);
}

/* flag when value v is blocked (value.layout), else 0. */
static int value_lay(struct graph *g, int v, int flag)
{
	return g->values.v[v].layout == LAYOUT_BLOCKED ? flag : 0;
}

/* A pool's or ConvTranspose's window: in, out, kernel, stride, dilation, pads (3 each). */
static int window_args(struct tir_builder *b, const struct op_plan *p, struct tir **args)
{
	const int64_t *v[] = { p->in, p->out, p->k, p->s, p->d, p->pb, p->pe };
	int na = 0;

	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		for (int j = 0; j < 3; j++)
			args[na++] = tir_int(b, v[i][j]);
	return na;
}

/* The shape arguments of standalone op n's helper (after its buffers). */
static int op_args(struct tir_builder *b, struct graph *g, const struct node *n,
		   const struct op_plan *p, struct tir **args)
{
	const struct value *x = node_in(g, n, 0);
	int r = x->shape.rank, na = 0;

	if (!strcmp(p->fn, "eltwise")) {
		args[na++] = dims_prod(b, x, 0, r);
		args[na++] = tir_int(b, p->alg);
		args[na++] = tir_flt(b, DTYPE_F32, p->alpha);
		args[na++] = tir_flt(b, DTYPE_F32, p->beta);
		args[na++] = tir_int(b, p->alg2);
		args[na++] = tir_flt(b, DTYPE_F32, p->a2);
		args[na++] = tir_flt(b, DTYPE_F32, p->b2);
	} else if (!strcmp(p->fn, "pool")) {
		args[na++] = tir_int(b, p->nsp);
		args[na++] = tir_dim(b, x->shape.d[0]);
		args[na++] = tir_dim(b, x->shape.d[1]);
		na += window_args(b, p, args + na);
		args[na++] = tir_int(b, p->pool);
		args[na++] = tir_int(b, value_lay(g, n->in[0], LAY_SRC) |
				     value_lay(g, n->out[0], LAY_DST));
	} else if (!strcmp(p->fn, "softmax")) {
		args[na++] = dims_prod(b, x, 0, p->axis);
		args[na++] = dims_prod(b, x, p->axis, p->axis_end);
		args[na++] = dims_prod(b, x, p->axis_end, r);
		args[na++] = tir_int(b, p->log);
	} else if (!strcmp(p->fn, "bnorm")) {
		args[na++] = tir_dim(b, x->shape.d[0]);
		args[na++] = tir_dim(b, x->shape.d[1]);
		args[na++] = dims_prod(b, x, 2, r);
		args[na++] = tir_flt(b, DTYPE_F32, p->eps);
	} else if (!strcmp(p->fn, "lnorm")) {
		args[na++] = dims_prod(b, x, 0, p->axis);
		args[na++] = dims_prod(b, x, p->axis, r);
		args[na++] = tir_flt(b, DTYPE_F32, p->eps);
	} else if (!strcmp(p->fn, "deconv")) {
		args[na++] = tir_int(b, p->nsp);
		args[na++] = tir_dim(b, x->shape.d[0]);
		args[na++] = tir_int(b, x->shape.d[1].c);
		args[na++] = tir_int(b, node_out(g, n, 0)->shape.d[1].c);
		args[na++] = tir_int(b, p->group);
		na += window_args(b, p, args + na);
		args[na++] = tir_int(b, node_in(g, n, 1)->data != NULL);
	} else if (!strcmp(p->fn, "scale")) {
		const struct value *sv = node_in(g, n, 1 - p->xin);

		x = node_in(g, n, p->xin);
		r = x->shape.rank;
		args[na++] = tir_dim(b, x->shape.d[0]);
		args[na++] = tir_dim(b, x->shape.d[1]);
		args[na++] = dims_prod(b, x, 2, r);
		args[na++] = tir_int(b, !(dim_is_const(sv->shape.d[0]) && sv->shape.d[0].c == 1));
		args[na++] = tir_int(b, value_lay(g, n->in[p->xin], LAY_SRC) |
				     value_lay(g, n->out[0], LAY_DST));
	} else if (!strcmp(p->fn, "lrn")) {
		args[na++] = tir_dim(b, x->shape.d[0]);
		args[na++] = tir_dim(b, x->shape.d[1]);
		args[na++] = dims_prod(b, x, 2, r);
		args[na++] = tir_int(b, node_attr_int(n, "size", 0));
		args[na++] = tir_flt(b, DTYPE_F32, node_attr_float(n, "alpha", 1e-4));
		args[na++] = tir_flt(b, DTYPE_F32, node_attr_float(n, "beta", 0.75));
		args[na++] = tir_flt(b, DTYPE_F32, node_attr_float(n, "bias", 1.0));
	} else {
		BUG("dnnl standalone op plan '%s' has no arguments", p->fn);
	}
	return na;
}

/* Ends kernel k of partition p: one call of helper fn with args[0..na), b released. */
static int kernel_done(struct partition *p, struct tir_builder *b, struct kernel *k,
		       const char *fn, struct tir **args, int na)
{
	tir_extern(b, fn, args, na);
	libcall_kernel_done(b, k, p);
	return 0;
}

/*
 * A partition of one standalone op: one kernel, one call of its helper
 * with the op's inputs (absent optional ones as NULL), its output, shapes.
 */
static int op_relay(struct graph *g, struct partition *p)
{
	struct node *n = &g->nodes.v[p->nodes[0]];
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir *args[48];
	struct op_plan op;
	int na = 0, n_in = 1, swap = 0;

	if (p->n_nodes != 1 || !op_plan(g, n, &op))
		BUG("dnnl op plan changed after the rule took the node");
	if (!strcmp(op.fn, "bnorm"))
		n_in = 5;
	else if (!strcmp(op.fn, "lnorm") || !strcmp(op.fn, "deconv"))
		n_in = 3;
	else if (!strcmp(op.fn, "scale"))
		n_in = 2, swap = op.xin;	/* x first, then s */
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_%s", p->id, op.fn));
	k.args = arena_alloc(g->arena, sizeof(int) * (size_t)(n_in + 1));
	for (int j = 0; j < n_in; j++) {
		int i = swap ? 1 - j : j;

		if (i < n->n_in && n->in[i] >= 0)
			args[na++] = addr_or_null(&b, libcall_param(&b, &k, "in", DTYPE_F32,
								    n->in[i]));
		else
			args[na++] = tir_int(&b, 0);
	}
	k.n_inputs = k.n_args;
	args[na++] = addr_or_null(&b, libcall_param(&b, &k, "out", DTYPE_F32, n->out[0]));
	na += op_args(&b, g, n, &op, args + na);
	return kernel_done(p, &b, &k, arena_printf(g->arena, "collagec_dnnl_%s", op.fn), args, na);
}

/*
 * A squeeze-and-excitation block: one call of collagec_dnnl_se with x, w1,
 * b1, w2, b2 (absent biases as null pointers), the weights it scales (or a
 * null pointer: it scales x) and y, then n, c, x's spatial size, m, the
 * scaled weights' rows o, the activation, the gate with its alpha and
 * beta, and the layout bits of x and of a scaled x.
 */
static int se_relay(struct graph *g, struct partition *p, const struct se_plan *se)
{
	const struct node *c1 = &g->nodes.v[se->conv1], *c2 = &g->nodes.v[se->conv2];
	const int ins[] = {
		se->x, c1->in[1], c1->n_in > 2 ? c1->in[2] : -1, c2->in[1],
		c2->n_in > 2 ? c2->in[2] : -1, se->wsc,
	};
	int y = g->nodes.v[se->mul].out[0], na = 0;
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir *args[32];

	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_se", p->id));
	k.args = arena_alloc(g->arena, sizeof(int) * (ARRAY_SIZE(ins) + 1));
	for (size_t i = 0; i < ARRAY_SIZE(ins); i++)
		args[na++] = ins[i] >= 0 ?
			addr_or_null(&b, libcall_param(&b, &k, "in", DTYPE_F32, ins[i])) :
			tir_int(&b, 0);
	k.n_inputs = k.n_args;
	args[na++] = addr_or_null(&b, libcall_param(&b, &k, "out", DTYPE_F32, y));
	args[na++] = tir_dim(&b, g->values.v[se->x].shape.d[0]);
	args[na++] = tir_int(&b, se->c);
	args[na++] = tir_int(&b, se->hw);
	args[na++] = tir_int(&b, se->m);
	args[na++] = tir_int(&b, se->o);
	args[na++] = tir_int(&b, se->act);
	args[na++] = tir_int(&b, se->gact);
	args[na++] = tir_flt(&b, DTYPE_F32, se->alpha);
	args[na++] = tir_flt(&b, DTYPE_F32, se->beta);
	args[na++] = tir_int(&b, value_lay(g, se->x, LAY_SRC) |
			     (se->wsc < 0 ? value_lay(g, y, LAY_DST) : 0));
	return kernel_done(p, &b, &k, "collagec_dnnl_se", args, na);
}

/*
 * Whether Conv n is one oneDNN may run by Winograd: 2-D, 3x3, stride and
 * dilation 1, not grouped (rt_dnnl_conv_alg asks oneDNN at run time).
 */
static bool wino_fits(struct graph *g, const struct node *n)
{
	const struct value *w = node_in(g, n, 1);
	static const char *const ones[] = { "strides", "dilations" };

	if (w->shape.rank != 4 || w->shape.d[2].c != 3 || w->shape.d[3].c != 3 ||
	    node_attr_int(n, "group", 1) != 1)
		return false;
	for (size_t a = 0; a < ARRAY_SIZE(ones); a++) {
		const int64_t *v;
		int nv = node_attr_ints(n, ones[a], &v);

		for (int i = 0; i < nv; i++)
			if (v[i] != 1)
				return false;
	}
	return true;
}

/*
 * The operands of a QLinearConv or QLinearMatMul partition's call, in the
 * order collagec_dnnl_qconv and _qlmatmul take them: x, its scale, w, its
 * scales, the bias (or a null pointer), y's scale and y, as k's buffers,
 * into args (7); x's and y's zero points (constant scalars, 0 when absent)
 * into *xz and *yz.
 */
static void q8_operands(struct graph *g, const struct node *a, struct tir_builder *b,
			struct kernel *k, struct tir **args, double *xz, double *yz)
{
	const struct value *bias = node_in(g, a, 8);
	struct tir_buf *buf[7];

	*xz = *yz = 0;
	if ((node_in(g, a, 2) && !value_const_scalar(g, node_in(g, a, 2), xz)) ||
	    (node_in(g, a, 7) && !value_const_scalar(g, node_in(g, a, 7), yz)))
		BUG("%s zero points not constant scalars", a->op_type);
	k->args = arena_alloc(g->arena, sizeof(int) * 7);
	buf[0] = libcall_param(b, k, "in", node_in(g, a, 0)->dtype, a->in[0]);
	buf[1] = libcall_param(b, k, "in", DTYPE_F32, a->in[1]);
	buf[2] = libcall_param(b, k, "in", DTYPE_I8, a->in[3]);
	buf[3] = libcall_param(b, k, "in", DTYPE_F32, a->in[4]);
	buf[4] = bias ? libcall_param(b, k, "bias", DTYPE_I32, a->in[8]) : NULL;
	buf[5] = libcall_param(b, k, "in", DTYPE_F32, a->in[6]);
	k->n_inputs = k->n_args;
	buf[6] = libcall_param(b, k, "out", node_out(g, a, 0)->dtype, a->out[0]);
	for (int i = 0; i < 7; i++)
		args[i] = addr_or_null(b, buf[i]);
}

/*
 * A QLinearConv alone: one call of collagec_dnnl_qconv with x, its scale,
 * w, its scales, the bias, y's scale and y, the geometry, then the number
 * of weight scales, x's and y's types (0 uint8, 1 int8) and zero points,
 * and which of x and y are channels-last (lay).
 */
static int qconv_relay(struct graph *g, struct partition *p)
{
	struct node *a = &g->nodes.v[p->nodes[0]];
	const struct value *xv = node_in(g, a, 0), *yv = node_out(g, a, 0);
	const struct value *ws = node_in(g, a, 4);
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir *args[64];
	double xz, yz;
	int na = 7, n;

	if (!qconv_fits(g, a) || p->n_nodes != 1)
		BUG("dnnl int8 convolution no longer fits");
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_qconv", p->id));
	q8_operands(g, a, &b, &k, args, &xz, &yz);
	if ((n = conv_args(&b, g, a, 3, args + na)) < 0) {
		tir_builder_release(&b);
		return -1;
	}
	na += n;
	args[na++] = tir_int(&b, shape_numel_static(&ws->shape));
	args[na++] = tir_int(&b, xv->dtype == DTYPE_I8);
	args[na++] = tir_int(&b, yv->dtype == DTYPE_I8);
	args[na++] = tir_int(&b, (int64_t)xz);
	args[na++] = tir_int(&b, (int64_t)yz);
	args[na++] = tir_int(&b, value_lay(g, a->in[0], LAY_SRC) | value_lay(g, a->out[0], LAY_DST));
	return kernel_done(p, &b, &k, "collagec_dnnl_qconv", args, na);
}

/*
 * A MatMulInteger alone: one call of collagec_dnnl_qmatmul with a, b, a's
 * zero point (or 0) and y, then m (a's leading dims), n, k and a's type.
 */
static int qmatmul_relay(struct graph *g, struct partition *p)
{
	struct node *a = &g->nodes.v[p->nodes[0]];
	const struct value *av = node_in(g, a, 0), *bv = node_in(g, a, 1);
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir_buf *buf[4];
	struct tir *args[16];
	int na = 0;

	if (!qmatmul_fits(g, a) || p->n_nodes != 1)
		BUG("dnnl int8 matmul no longer fits");
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_qmatmul", p->id));
	k.args = arena_alloc(g->arena, sizeof(int) * 4);
	buf[0] = libcall_param(&b, &k, "in", av->dtype, a->in[0]);
	buf[1] = libcall_param(&b, &k, "in", DTYPE_I8, a->in[1]);
	buf[2] = node_in(g, a, 2) ? libcall_param(&b, &k, "in", av->dtype, a->in[2]) : NULL;
	k.n_inputs = k.n_args;
	buf[3] = libcall_param(&b, &k, "out", DTYPE_I32, a->out[0]);
	for (int i = 0; i < 4; i++)
		args[na++] = addr_or_null(&b, buf[i]);
	args[na++] = dims_prod(&b, av, 0, av->shape.rank - 1);
	args[na++] = tir_int(&b, bv->shape.d[1].c);
	args[na++] = tir_int(&b, bv->shape.d[0].c);
	args[na++] = tir_int(&b, av->dtype == DTYPE_I8);
	return kernel_done(p, &b, &k, "collagec_dnnl_qmatmul", args, na);
}

/*
 * A QLinearMatMul alone: one call of collagec_dnnl_qlmatmul with a, its
 * scale, b, its scales, the bias, y's scale and y, then m (a's leading
 * dims), n, k, the number of b's scales, a's and y's types (0 uint8, 1
 * int8) and zero points.
 */
static int qlmatmul_relay(struct graph *g, struct partition *p)
{
	struct node *a = &g->nodes.v[p->nodes[0]];
	const struct value *av = node_in(g, a, 0), *bv = node_in(g, a, 3), *yv = node_out(g, a, 0);
	const struct value *bs = node_in(g, a, 4);
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir *args[20];
	double az, yz;
	int na = 7;

	if (!qlmatmul_fits(g, a) || p->n_nodes != 1)
		BUG("dnnl int8 matmul no longer fits");
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_qlmatmul", p->id));
	q8_operands(g, a, &b, &k, args, &az, &yz);
	args[na++] = dims_prod(&b, av, 0, av->shape.rank - 1);
	args[na++] = tir_int(&b, bv->shape.d[1].c);
	args[na++] = tir_int(&b, bv->shape.d[0].c);
	args[na++] = tir_int(&b, shape_numel_static(&bs->shape));
	args[na++] = tir_int(&b, av->dtype == DTYPE_I8);
	args[na++] = tir_int(&b, yv->dtype == DTYPE_I8);
	args[na++] = tir_int(&b, (int64_t)az);
	args[na++] = tir_int(&b, (int64_t)yz);
	return kernel_done(p, &b, &k, "collagec_dnnl_qlmatmul", args, na);
}

static int dnnl_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	struct node *a = &g->nodes.v[p->nodes[0]];
	bool conv = a->op == OP_CONV;
	const char *op = conv ? "conv" : "matmul";
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir_buf *x, *w, *bias = NULL, *e[MAX_BIN] = { NULL, NULL }, *out;
	struct tir *args[64];
	struct epi_plan ep;
	struct se_plan se;
	int na = 0, n, bias_v = -1;

	if (a->op == OP_QLINEARCONV)
		return qconv_relay(g, p);
	if (a->op == OP_MATMULINTEGER)
		return qmatmul_relay(g, p);
	if (a->op == OP_QLINEARMATMUL)
		return qlmatmul_relay(g, p);
	if (p->n_nodes >= 6 && se_plan(g, p->nodes, p->n_nodes, &se))
		return se_relay(g, p, &se);
	if (!is_anchor(a))
		return op_relay(g, p);
	if (!epi_plan(g, p->nodes, p->n_nodes, &ep))
		BUG("dnnl epilogue plan changed after the rule took the nodes");
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_%s%s%s", p->id, op,
						    !conv && mm_bf16(g, a) ? "_bf16" : "",
						    p->n_nodes > 1 ? "_post" : ""));
	k.args = arena_alloc(g->arena, sizeof(int) * (3 + MAX_BIN + 2));
	x = libcall_param(&b, &k, "in", DTYPE_F32, a->in[0]);
	w = libcall_param(&b, &k, "in", DTYPE_F32, a->in[1]);
	bias_v = a->n_in > 2 && a->in[2] >= 0 ? a->in[2] : ep.conv_bias;
	if (bias_v >= 0)
		bias = libcall_param(&b, &k, "bias", DTYPE_F32, bias_v);
	for (int i = 0; i < ep.n_bin; i++)
		e[i] = libcall_param(&b, &k, "epi", DTYPE_F32, ep.bin[i]);
	k.n_inputs = k.n_args;
	out = libcall_param(&b, &k, "out", DTYPE_F32,
			    g->nodes.v[p->nodes[p->n_nodes - 1]].out[0]);
	args[na++] = addr_or_null(&b, x);
	args[na++] = addr_or_null(&b, w);
	args[na++] = addr_or_null(&b, bias);
	args[na++] = addr_or_null(&b, e[0]);
	args[na++] = addr_or_null(&b, e[1]);
	args[na++] = addr_or_null(&b, out);
	n = conv ? conv_args(&b, g, a, 1, args + na) : matmul_args(&b, g, a, args + na);
	if (n < 0) {
		tir_builder_release(&b);
		return -1;
	}
	na += n;
	if (conv) {
		int sv = sum_operand(&ep);

		args[na++] = tir_int(&b, value_lay(g, a->in[0], LAY_SRC) |
				     value_lay(g, k.args[k.n_args - 1], LAY_DST) |
				     (sv >= 0 ? value_lay(g, sv, LAY_SUM) : 0));
		args[na++] = tir_int(&b, target_opt_or(t, "winograd", 1) && wino_fits(g, a));
	}
	na += po_args(&b, &ep, args + na);
	return kernel_done(p, &b, &k, arena_printf(g->arena, "collagec_dnnl_%s", op), args, na);
}

/* ---- tir_to_runtime ---- */

static int dnnl_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			       struct runtime_module *m)
{
	const struct embedded_file *rt = embedded_find("rt_dnnl.h");
	/* a static primitive cache per kernel, passed with the kernel's name */
	const struct libcall_style style = {
		.state = "static struct rt_dnnl_cache cache;", .pass_state = true,
	};

	(void)g;
	(void)t;
	if (!rt)
		BUG("rt_dnnl.h is not embedded");
	m->prelude = rt->data;
	for (int i = 0; i < p->kernels.n; i++)
		libcall_print_kernel(&p->kernels.v[i], &tir_dialect_c, &style, &m->source);
	vec_push(&m->ldlibs, "-ldnnl");
	return 0;
}

static const struct target_option dnnl_options[] = {
	{ "winograd", "1: 3x3 stride-1 Convs run by Winograd: oneDNN's where it has one for "
	  "them (AVX-512 hosts), else collagec's transforms around a oneDNN matmul where "
	  "they fit, else direct; 0: always direct", 0, 1, 1, NULL },
	{ NULL, NULL, 0, 0, 0, NULL },
};

const struct target_kind target_kind_dnnl = {
	.api_version = TARGET_API_VERSION,
	.name = "dnnl",
	.device = "cpu",
	.description = "oneDNN primitives; runs float32 Conv (1-D to 3-D), MatMul and Gemm "
		       "with their bias, residual add and activations fused as post-ops, and pooling, "
		       "BatchNormalization, LayerNormalization, Softmax, LRN, eltwise ops and "
		       "ConvTranspose alone, squeeze-and-excitation blocks as one kernel; "
		       "QLinearConv, MatMulInteger and QLinearMatMul on its int8 convolution and "
		       "matmul (hosts with VNNI); a bfloat16 model's MatMul and Gemm on its bfloat16 "
		       "matmul (hosts with AVX512-BF16)",
	.options = dnnl_options,
	.unavailable = dnnl_unavailable,
	.supports = NULL,
	.patterns = "dnnl.pat",
	.pattern_check = dnnl_check,
	.plan_layouts = dnnl_plan_layouts,
	.q8_cl_writes = dnnl_q8_cl_writes,
	.q8_cl_reads = dnnl_q8_cl_reads,
	.relay_to_tir = dnnl_relay_to_tir,
	.tir_to_runtime = dnnl_tir_to_runtime,
	.relay_to_runtime = NULL,
};
