/*
 * cublas_target.c - the cublas target: a MatMul or Gemm, with a bias over
 * its output's columns and a Relu after it (patterns/cublas.pat), as one
 * cuBLASLt matmul whose epilogue does the rest (rt_cublas.h). Its values
 * live in the cuda target's device memory: the prelude is rt_cuda.h and
 * rt_cublas.h, the init, fini and sync are cuda's, and the argument flags
 * treat cuda and cublas as one device (cuda_shares_memory).
 *
 * Availability and running are cuda's: compiling needs nvcc's CUDA (for
 * cublasLt.h), running a GPU and libcublasLt.so.13 or .12 (loaded when the
 * first matmul runs).
 */
#include "../devloop.h"
#include "../libcall.h"

#include <string.h>

#include "../../core/emit/emit.h"
#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"

/* ---- the rule ---- */

/* The product of s's dims [from, to), as a dim list for tir_dim (NULL when symbolic mixes). */
static struct tir *dims_numel(struct tir_builder *b, const struct shape *s, int from, int to)
{
	struct tir *e = tir_int(b, 1);

	for (int i = from; i < to; i++)
		e = tir_mul(b, e, tir_dim(b, s->d[i]));
	return e;
}

/*
 * MatMul a[..., M, K] x b[K, N] (a's batch folded into M), or
 * a[B..., M, K] x b[B..., K, N] with the same batch dims (one strided
 * batch): what one cuBLASLt matmul computes.
 */
static bool matmul_fits(struct graph *g, const struct node *n)
{
	const struct value *a = node_in(g, n, 0), *b = node_in(g, n, 1), *y = node_out(g, n, 0);

	if (n->n_in != 2 || n->n_out != 1 || !libcall_is_f32(a) || !libcall_is_f32(b) ||
	    !libcall_is_f32(y) || a->shape.rank < 2 || b->shape.rank < 2)
		return false;
	if (!dim_eq(a->shape.d[a->shape.rank - 1], b->shape.d[b->shape.rank - 2]))
		return false;
	if (b->shape.rank == 2)
		return true;
	if (a->shape.rank != b->shape.rank)
		return false;
	for (int i = 0; i < a->shape.rank - 2; i++)
		if (!dim_eq(a->shape.d[i], b->shape.d[i]))
			return false;
	return true;
}

/* Whether v is a bias over n's output columns: float32 [N] or [1, N]. */
static bool is_bias(struct graph *g, const struct value *v, struct dim N)
{
	if (!libcall_is_f32(v) || v->shape.rank < 1 || v->shape.rank > 2)
		return false;
	if (v->shape.rank == 2 && !libcall_dim_is_one(v->shape.d[0]))
		return false;
	(void)g;
	return dim_eq(v->shape.d[v->shape.rank - 1], N);
}

/* Gemm of 2-D a and b, its C absent or a bias (beta 1). */
static bool gemm_fits(struct graph *g, const struct node *n)
{
	const struct value *a = node_in(g, n, 0), *b = node_in(g, n, 1), *c = node_in(g, n, 2);
	const struct value *y = node_out(g, n, 0);

	if (n->n_out != 1 || !libcall_is_f32(a) || !libcall_is_f32(b) || !libcall_is_f32(y) ||
	    a->shape.rank != 2 || b->shape.rank != 2 || y->shape.rank != 2)
		return false;
	return !c || (node_attr_float(n, "beta", 1.0) == 1.0 && is_bias(g, c, y->shape.d[1]));
}

/* The bias of a match: the Add's constant, or a Gemm's C; -1 when none. */
static int bias_of(struct graph *g, const int *nodes, int n_nodes)
{
	const struct node *a = &g->nodes.v[nodes[0]];

	if (a->op == OP_GEMM && node_in(g, a, 2))
		return a->in[2];
	for (int i = 1; i < n_nodes; i++) {
		const struct node *e = &g->nodes.v[nodes[i]];

		if (e->op == OP_ADD)
			return e->in[0] == g->nodes.v[nodes[i - 1]].out[0] ? e->in[1] : e->in[0];
	}
	return -1;
}

/*
 * A pattern match: an anchor that fits, then at most a bias Add (with no
 * bias before it) and a Relu, each of the anchor's output shape.
 */
static bool cublas_check(struct graph *g, const int *nodes, int n_nodes)
{
	const struct node *a = &g->nodes.v[nodes[0]];
	const struct value *y = node_out(g, a, 0);
	bool bias = a->op == OP_GEMM && node_in(g, a, 2);
	int v = a->out[0];

	if (a->op == OP_MATMUL ? !matmul_fits(g, a) : a->op == OP_GEMM ? !gemm_fits(g, a) : true)
		return false;
	for (int i = 1; i < n_nodes; i++) {
		const struct node *e = &g->nodes.v[nodes[i]];

		if (!libcall_epilogue_shaped(g, e, v))
			return false;
		if (e->op == OP_ADD) {
			const struct value *x = node_in(g, e, e->in[0] == v ? 1 : 0);

			if (bias || (e->in[0] == v) == (e->in[1] == v) ||
			    !is_bias(g, x, y->shape.d[y->shape.rank - 1]))
				return false;
			bias = true;
		} else if (e->op != OP_RELU) {
			return false;
		}
		v = e->out[0];
	}
	return true;
}

/* ---- relay_to_tir ---- */

/*
 * One kernel: the parameters a, b, (bias), y and one call of rt_cublas_mm
 * with the sizes, the batch, the transposes, alpha, whether a Relu ends it
 * and each argument's flags.
 */
static int cublas_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	const struct node *a = &g->nodes.v[p->nodes[0]];
	const struct value *va = node_in(g, a, 0), *vb = node_in(g, a, 1);
	int out_v = g->nodes.v[p->nodes[p->n_nodes - 1]].out[0];
	int bias = bias_of(g, p->nodes, p->n_nodes);
	bool relu = g->nodes.v[p->nodes[p->n_nodes - 1]].op == OP_RELU;
	bool gemm = a->op == OP_GEMM;
	int ta = gemm && node_attr_int(a, "transA", 0), tb = gemm && node_attr_int(a, "transB", 0);
	int ra = va->shape.rank, rb = vb->shape.rank;
	struct tir *args[20], *M, *N, *K, *batch, *sa, *sb;
	struct tir_buf *ba, *bb, *bbias = NULL, *by;
	struct tir_builder b;
	struct kernel k = { 0 };
	int na = 0, vals[4];

	(void)t;
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_cublas_%s%s%s", p->id,
						    gemm ? "gemm" : "matmul",
						    bias >= 0 ? "_bias" : "", relu ? "_relu" : ""));
	k.args = arena_alloc(g->arena, sizeof(int) * 4);
	ba = libcall_param(&b, &k, "a", DTYPE_F32, a->in[0]);
	bb = libcall_param(&b, &k, "b", DTYPE_F32, a->in[1]);
	if (bias >= 0)
		bbias = libcall_param(&b, &k, "bias", DTYPE_F32, bias);
	k.n_inputs = k.n_args;
	by = libcall_param(&b, &k, "y", DTYPE_F32, out_v);
	if (gemm) {
		M = tir_dim(&b, va->shape.d[ta ? 1 : 0]);
		K = tir_dim(&b, va->shape.d[ta ? 0 : 1]);
		N = tir_dim(&b, vb->shape.d[tb ? 0 : 1]);
		batch = tir_int(&b, 1);
		sa = tir_int(&b, 0);
		sb = tir_int(&b, 0);
	} else if (rb == 2) {
		/* a's batch folded into its rows */
		M = dims_numel(&b, &va->shape, 0, ra - 1);
		K = tir_dim(&b, va->shape.d[ra - 1]);
		N = tir_dim(&b, vb->shape.d[1]);
		batch = tir_int(&b, 1);
		sa = tir_int(&b, 0);
		sb = tir_int(&b, 0);
	} else {
		M = tir_dim(&b, va->shape.d[ra - 2]);
		K = tir_dim(&b, va->shape.d[ra - 1]);
		N = tir_dim(&b, vb->shape.d[rb - 1]);
		batch = dims_numel(&b, &va->shape, 0, ra - 2);
		sa = tir_mul(&b, M, K);
		sb = tir_mul(&b, K, N);
	}
	args[na++] = tir_addr(&b, ba, tir_int(&b, 0));
	args[na++] = tir_addr(&b, bb, tir_int(&b, 0));
	args[na++] = bbias ? tir_addr(&b, bbias, tir_int(&b, 0)) : tir_int(&b, 0);
	args[na++] = tir_addr(&b, by, tir_int(&b, 0));
	args[na++] = M;
	args[na++] = N;
	args[na++] = K;
	args[na++] = batch;
	args[na++] = sa;
	args[na++] = sb;
	args[na++] = tir_int(&b, ta);
	args[na++] = tir_int(&b, tb);
	args[na++] = tir_flt(&b, DTYPE_F32, gemm ? node_attr_float(a, "alpha", 1.0) : 1.0);
	args[na++] = tir_int(&b, relu);
	vals[0] = a->in[0];
	vals[1] = a->in[1];
	vals[2] = bias;
	vals[3] = out_v;
	na += cuda_flag_args(&b, g, vals, 4, 3, args + na);
	tir_extern(&b, "rt_cublas_mm", args, na);
	libcall_kernel_done(&b, &k, p);
	return 0;
}

/* ---- tir_to_runtime ---- */

static int cublas_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
				 struct runtime_module *m)
{
	return cuda_library_module(g, t, p, m, "rt_cublas.h", "struct rt_cublas_cache");
}

const struct target_kind target_kind_cublas = {
	.api_version = TARGET_API_VERSION,
	.name = "cublas",
	.device = "gpu",
	.description = "cuBLASLt matmuls on the cuda target's device memory: float32 MatMul "
		       "and Gemm with a bias and Relu fused as the epilogue",
	.options = NULL,
	.unavailable = cuda_unavailable,
	.cannot_run = cuda_cannot_run,
	/* cuBLASLt's float32 GEMM on an H100/H200 class GPU, without a GPU to measure */
	.nominal_flops = 4e13,
	.nominal_bytes = 2.5e12,
	.nominal_overhead = 8e-6,
	.nominal_transfer = 2e-5,
	.memory = "cuda",
	.patterns = "cublas.pat",
	.pattern_check = cublas_check,
	.relay_to_tir = cublas_relay_to_tir,
	.tir_to_runtime = cublas_tir_to_runtime,
};
