/*
 * blas_target.c - the BLAS target: float32 MatMul, Gemm and 2-D Conv through
 * OpenBLAS's cblas_sgemm. Its partition rule is patterns/blas.pat: an anchor
 * (MatMul, Gemm or Conv) alone or followed by a chain of elementwise ops (a
 * bias, an activation, a residual add) that become its epilogue;
 * pattern_check takes a match when the anchor's shapes fit and each epilogue
 * op can run in place on the anchor's output (everything else stays on the
 * next target, normally c). relay_to_tir makes one kernel per partition: a
 * call_extern of a helper that writes the partition's output, then each
 * epilogue op's own loop-IR lowering, reading and writing that output in
 * place (a per-channel constant bias of a Conv instead becomes the helper's
 * bias). An epilogue of a residual Add, then a Relu or a constant Clip
 * (lower_res_act), is the helper's instead: it finishes each block of the
 * output right after computing it, while the block is in cache, where the
 * loops would make one more pass over the whole output (collagec_blas_sgemm
 * splits the output into such blocks). tir_to_runtime prints the kernels
 * and hands the helpers over as the runtime module's prelude (emitted once
 * per model however many partitions ask; an #ifndef guard keeps them single
 * even where a prelude were repeated), linking -lopenblas.
 *
 * The helpers, all row-major:
 *   collagec_blas_matmul  one sgemm per element of the broadcast batch; the
 *                         batch is described by up to 6 groups (extent, stride
 *                         in a, stride in b) that relay_to_tir computes by
 *                         dropping unit dims and merging neighbours that
 *                         broadcast alike. A batch that only a broadcasts over
 *                         (b a plain matrix) folds into M: one sgemm.
 *   collagec_blas_gemm    Y = alpha op(A) op(B) + beta C, C broadcast into Y
 *                         first through (row, column) strides (0 = broadcast).
 *   collagec_blas_conv2d  per image and group: im2col of the group's input
 *                         channels into its part of the kernel's scratch
 *                         (C*kh*kw*OH*OW floats, planned in the workspace
 *                         like any value, never allocated by a run), then
 *                         W_g [Mg, Cg*kh*kw] x col [Cg*kh*kw, OH*OW]; a 1x1,
 *                         stride-1, unpadded conv multiplies the input
 *                         directly. Bias (or 0) initialises Y.
 * All three multiply through collagec_blas_sgemm: sgemm, or sgemv for a
 * one-row or one-column result (OpenBLAS's sgemm packs and does not thread
 * those: the MLP at batch 1 runs 5x faster this way).
 *
 * Every kernel passes its `threads` argument on as the helper's last
 * argument (the printer appends it to the call_extern). OpenBLAS itself is
 * kept at one thread (set only when it is not already); the helpers split
 * the work over an OpenMP team of `threads` instead - across the products
 * of a batch or the groups of a conv's image (its (image, group) pairs when
 * it needs no im2col) when there are enough, else over column (or row)
 * blocks of each product and rows of the im2col.
 * That is the team the c target's kernels use: OpenBLAS's own pthreads
 * would spin against OpenMP's between kernels (ResNet-18 on 2 threads took
 * twice as long as on 1). Arguments that depend on symbolic dims are
 * loop-IR expressions over syms[].
 */
#include "../backends.h"

#include <glob.h>
#include <string.h>

#include "../libcall.h"

#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"

#define OPENBLAS_SONAME "libopenblas.so.0"
#define MM_GROUPS 6		/* batch groups the matmul helper takes */

/* ---- availability: the library and <cblas.h> ---- */

/*
 * Where <cblas.h> is: "" when the compiler finds it by itself, "-IDIR" (in
 * arena a) when it sits in an OpenBLAS-private directory, NULL when it is
 * missing. Without an arena only NULL or not matters.
 */
static const char *cblas_include(struct arena *a)
{
	static const char *const plain[] = {
		"/usr/include/cblas.h", "/usr/local/include/cblas.h",
		"/usr/include/*-linux-gnu*/cblas.h",
	};
	static const char *const private[] = {
		"/usr/include/*-linux-gnu*/openblas-pthread/cblas.h",
		"/usr/include/*-linux-gnu*/openblas-openmp/cblas.h",
		"/usr/include/*-linux-gnu*/openblas-serial/cblas.h",
		"/usr/include/openblas/cblas.h", "/usr/local/include/openblas/cblas.h",
	};
	const char *res = NULL;
	glob_t gl;

	for (size_t i = 0; i < ARRAY_SIZE(plain); i++) {
		if (glob(plain[i], 0, NULL, &gl) == 0) {
			globfree(&gl);
			return "";
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(private) && !res; i++) {
		if (glob(private[i], 0, NULL, &gl) != 0)
			continue;
		if (a) {
			const char *path = gl.gl_pathv[0], *slash = strrchr(path, '/');

			res = arena_printf(a, "-I%.*s", (int)(slash - path), path);
		} else {
			res = "-I";
		}
		globfree(&gl);
	}
	return res;
}

static const char *blas_unavailable(void)
{
	static const char *const soname[] = { OPENBLAS_SONAME };

	if (!cblas_include(NULL))
		return "OpenBLAS is not installed (no <cblas.h>; apt-get install libopenblas-dev)";
	if (!libcall_lib_loads(soname, 1))
		return "OpenBLAS is not installed (cannot load " OPENBLAS_SONAME
		       "; apt-get install libopenblas-dev)";
	return NULL;
}

/* ---- the rule ---- */

/*
 * MatMul as [batch..., M, K] x [batch..., K, N]: the inputs' shapes with
 * vectors promoted to matrices, and for every dim of the broadcast batch
 * whether a and b run over it (true) or broadcast (false).
 */
struct mm_plan {
	struct shape sa, sb;		/* promoted input shapes */
	int nb;				/* batch dims kept (unit dims dropped) */
	struct dim ext[MAX_RANK];	/* their extents */
	bool fa[MAX_RANK], fb[MAX_RANK];
	int ia[MAX_RANK], ib[MAX_RANK];	/* their dim index in sa / sb, -1 if absent */
};

static bool mm_plan(struct graph *g, const struct node *n, struct mm_plan *p)
{
	const struct value *a = node_in(g, n, 0), *b = node_in(g, n, 1);
	struct shape ba, bb, batch;

	p->sa = a->shape;
	p->sb = b->shape;
	if (p->sa.rank < 1 || p->sb.rank < 1)
		return false;
	if (p->sa.rank == 1) {
		p->sa.rank = 2;
		p->sa.d[1] = p->sa.d[0];
		p->sa.d[0] = dim_const(1);
	}
	if (p->sb.rank == 1) {
		p->sb.rank = 2;
		p->sb.d[1] = dim_const(1);
	}
	if (!dim_eq(p->sa.d[p->sa.rank - 1], p->sb.d[p->sb.rank - 2]))
		return false;
	ba = p->sa;
	ba.rank -= 2;
	bb = p->sb;
	bb.rank -= 2;
	if (!shape_broadcast(&ba, &bb, &batch))
		return false;
	p->nb = 0;
	for (int i = 0; i < batch.rank; i++) {
		int ia = i - (batch.rank - ba.rank), ib = i - (batch.rank - bb.rank);
		struct dim da = ia >= 0 ? ba.d[ia] : dim_const(1);
		struct dim db = ib >= 0 ? bb.d[ib] : dim_const(1);
		struct dim o = batch.d[i];

		if (libcall_dim_is_one(o))
			continue;
		/* each input either runs over the dim or has extent 1 there */
		if (!dim_eq(da, o) && !libcall_dim_is_one(da))
			return false;
		if (!dim_eq(db, o) && !libcall_dim_is_one(db))
			return false;
		p->ext[p->nb] = o;
		p->fa[p->nb] = dim_eq(da, o);
		p->fb[p->nb] = dim_eq(db, o);
		p->ia[p->nb] = ia;
		p->ib[p->nb] = ib;
		p->nb++;
	}
	return true;
}

static bool supports_matmul(struct graph *g, const struct node *n)
{
	struct mm_plan p;

	if (n->n_in != 2 || n->n_out != 1 || !libcall_is_f32(node_in(g, n, 0)) ||
	    !libcall_is_f32(node_in(g, n, 1)) || !libcall_is_f32(node_out(g, n, 0)))
		return false;
	return mm_plan(g, n, &p);
}

static bool supports_gemm(struct graph *g, const struct node *n)
{
	const struct value *c = node_in(g, n, 2);

	if (n->n_out != 1 || !libcall_is_f32(node_in(g, n, 0)) ||
	    !libcall_is_f32(node_in(g, n, 1)) || !libcall_is_f32(node_out(g, n, 0)) ||
	    (c && !libcall_is_f32(c)))
		return false;
	if (node_in(g, n, 0)->shape.rank != 2 || node_in(g, n, 1)->shape.rank != 2 ||
	    node_out(g, n, 0)->shape.rank != 2 || (c && c->shape.rank > 2))
		return false;
	return true;
}

static bool supports_conv(struct graph *g, const struct node *n)
{
	return libcall_conv_fits(g, n, 4, 4) && node_attr_int(n, "group", 1) >= 1;
}

static bool anchor_fits(struct graph *g, const struct node *n)
{
	switch (n->op) {
	case OP_MATMUL:
		return supports_matmul(g, n);
	case OP_GEMM:
		return supports_gemm(g, n);
	case OP_CONV:
		return supports_conv(g, n);
	default:
		return false;
	}
}

/*
 * Epilogue node e reads the chain value v (the anchor's output so far) and
 * can overwrite it in place: an elementwise or broadcast op whose output has
 * v's shape, whose other inputs broadcast to it and are not v.
 */
static bool epilogue_fits(struct graph *g, const struct node *e, int v)
{
	const struct value *out = node_out(g, e, 0);
	enum op_kind k = op_info(e->op)->kind;
	int reads = 0;

	if ((k != OPK_ELEMWISE && k != OPK_BROADCAST) || !libcall_epilogue_shaped(g, e, v))
		return false;
	for (int i = 0; i < e->n_in; i++) {
		const struct value *x = node_in(g, e, i);
		struct shape b;

		if (!x)
			continue;
		if (e->in[i] == v) {
			reads++;
			continue;
		}
		if (!x->has_shape || !shape_broadcast(&x->shape, &out->shape, &b) ||
		    b.rank != out->shape.rank)
			return false;
		for (int j = 0; j < b.rank; j++)
			if (!dim_eq(b.d[j], out->shape.d[j]))
				return false;
	}
	return reads == 1;
}

/* A pattern match: an anchor that fits, then a chain of epilogue ops. */
static bool blas_check(struct graph *g, const int *nodes, int n_nodes)
{
	const struct node *a = &g->nodes.v[nodes[0]];
	int v = a->out[0];

	if (!anchor_fits(g, a))
		return false;
	for (int i = 1; i < n_nodes; i++) {
		const struct node *e = &g->nodes.v[nodes[i]];

		if (!epilogue_fits(g, e, v))
			return false;
		v = e->out[0];
	}
	return true;
}

/* ---- relay_to_tir ---- */

/* Row-major element count of s's dims [from, to) as an expression. */
static struct tir *dims_numel(struct tir_builder *b, const struct shape *s, int from, int to)
{
	struct tir *e = tir_int(b, 1);

	for (int i = from; i < to; i++)
		e = tir_mul(b, e, tir_dim(b, s->d[i]));
	return e;
}

/*
 * The matmul call: a, b, y, M, N, K, then MM_GROUPS (extent, a stride, b
 * stride) triples. Batch dims are merged into groups where a and b both
 * broadcast alike; strides are in elements.
 */
static int matmul_args(struct tir_builder *b, struct graph *g, const struct node *n,
		       struct tir_buf *bufs[3], struct tir **args)
{
	struct mm_plan p;
	struct tir *M, *N, *K, *ext[MAX_RANK], *stra[MAX_RANK], *strb[MAX_RANK];
	bool fa[MAX_RANK], fb[MAX_RANK];
	int ng = 0, na = 0;

	if (!mm_plan(g, n, &p))
		BUG("matmul plan changed after the rule took the node");
	M = tir_dim(b, p.sa.d[p.sa.rank - 2]);
	K = tir_dim(b, p.sa.d[p.sa.rank - 1]);
	N = tir_dim(b, p.sb.d[p.sb.rank - 1]);
	/* groups: neighbours with the same (fa, fb) merge */
	for (int i = 0; i < p.nb; i++) {
		if (ng && fa[ng - 1] == p.fa[i] && fb[ng - 1] == p.fb[i]) {
			ext[ng - 1] = tir_mul(b, ext[ng - 1], tir_dim(b, p.ext[i]));
		} else {
			ext[ng] = tir_dim(b, p.ext[i]);
			fa[ng] = p.fa[i];
			fb[ng] = p.fb[i];
			ng++;
		}
		/*
		 * a group's stride is its innermost dim's: the input's extents after
		 * it (broadcast and dropped dims have extent 1 there)
		 */
		stra[ng - 1] = p.fa[i] ? dims_numel(b, &p.sa, p.ia[i] + 1, p.sa.rank) : tir_int(b, 0);
		strb[ng - 1] = p.fb[i] ? dims_numel(b, &p.sb, p.ib[i] + 1, p.sb.rank) : tir_int(b, 0);
	}
	if (ng > MM_GROUPS)
		BUG("more than %d matmul batch groups", MM_GROUPS);
	/* a batch only a runs over, with b a plain matrix: one sgemm with M rows */
	if (ng == 1 && fa[0] && !fb[0]) {
		M = tir_mul(b, ext[0], M);
		ng = 0;
	}
	for (int i = 0; i < 3; i++)
		args[na++] = tir_addr(b, bufs[i], tir_int(b, 0));
	args[na++] = M;
	args[na++] = N;
	args[na++] = K;
	for (int i = 0; i < MM_GROUPS; i++) {
		args[na++] = i < ng ? ext[i] : tir_int(b, 1);
		args[na++] = i < ng ? stra[i] : tir_int(b, 0);
		args[na++] = i < ng ? strb[i] : tir_int(b, 0);
	}
	return na;
}

/* The gemm call: a, b, c (0 = none), y, M, N, K, transA, transB, alpha, beta, C strides. */
static int gemm_args(struct tir_builder *b, struct graph *g, const struct node *n,
		     struct tir_buf **bufs, struct tir **args)
{
	const struct value *a = node_in(g, n, 0), *c = node_in(g, n, 2);
	const struct value *y = node_out(g, n, 0);
	bool ta = node_attr_int(n, "transA", 0), tb = node_attr_int(n, "transB", 0);
	int na = 0;

	args[na++] = tir_addr(b, bufs[0], tir_int(b, 0));
	args[na++] = tir_addr(b, bufs[1], tir_int(b, 0));
	args[na++] = c ? tir_addr(b, bufs[2], tir_int(b, 0)) : tir_int(b, 0);
	args[na++] = tir_addr(b, bufs[c ? 3 : 2], tir_int(b, 0));
	args[na++] = tir_dim(b, y->shape.d[0]);
	args[na++] = tir_dim(b, y->shape.d[1]);
	args[na++] = tir_dim(b, a->shape.d[ta ? 0 : 1]);
	args[na++] = tir_int(b, ta);
	args[na++] = tir_int(b, tb);
	args[na++] = tir_flt(b, DTYPE_F32, node_attr_float(n, "alpha", 1.0));
	args[na++] = tir_flt(b, DTYPE_F32, node_attr_float(n, "beta", 1.0));
	if (c) {
		/* C padded to [c0, c1] on the left; a unit dim broadcasts (stride 0) */
		struct dim c0 = c->shape.rank == 2 ? c->shape.d[0] : dim_const(1);
		struct dim c1 = c->shape.rank >= 1 ? c->shape.d[c->shape.rank - 1] : dim_const(1);

		args[na++] = libcall_dim_is_one(c0) ? tir_int(b, 0) : tir_dim(b, c1);
		args[na++] = libcall_dim_is_one(c1) ? tir_int(b, 0) : tir_int(b, 1);
	} else {
		args[na++] = tir_int(b, 0);
		args[na++] = tir_int(b, 0);
	}
	return na;
}

/*
 * Whether Conv n needs the im2col scratch (all but a 1x1, stride-1,
 * unpadded conv), and its size in floats: C * kh * kw * OH * OW, every
 * group of one image.
 */
static bool conv_col(struct graph *g, const struct node *n, int64_t *numel)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
	int64_t kern[2] = { w->shape.d[2].c, w->shape.d[3].c };
	struct window win;

	if (window_plan(g, (struct node *)n, &x->shape, kern, false, &win) < 0)
		return false;
	*numel = x->shape.d[1].c * kern[0] * kern[1] * win.out[0] * win.out[1];
	return !(kern[0] == 1 && kern[1] == 1 && win.s[0] == 1 && win.s[1] == 1 &&
		 win.pb[0] == 0 && win.pb[1] == 0 && win.out[0] == win.in[0] &&
		 win.out[1] == win.in[1]);
}

/*
 * The conv2d call: x, w, bias (0 = none; else bufs[2]), y, col (0 = none),
 * N, C, H, W, M, kh, kw, strides, begin pads, dilations, group, OH, OW. The
 * end pads only show in OH/OW.
 */
static int conv_args(struct tir_builder *b, struct graph *g, const struct node *n, bool bias,
		     struct tir_buf **bufs, struct tir_buf *col, struct tir **args)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
	int64_t kern[2] = { w->shape.d[2].c, w->shape.d[3].c };
	struct window win;
	int na = 0;

	if (window_plan(g, (struct node *)n, &x->shape, kern, false, &win) < 0)
		return -1;
	args[na++] = tir_addr(b, bufs[0], tir_int(b, 0));
	args[na++] = tir_addr(b, bufs[1], tir_int(b, 0));
	args[na++] = bias ? tir_addr(b, bufs[2], tir_int(b, 0)) : tir_int(b, 0);
	args[na++] = tir_addr(b, bufs[bias ? 3 : 2], tir_int(b, 0));
	args[na++] = col ? tir_addr(b, col, tir_int(b, 0)) : tir_int(b, 0);
	args[na++] = tir_dim(b, x->shape.d[0]);
	args[na++] = tir_int(b, x->shape.d[1].c);
	args[na++] = tir_int(b, win.in[0]);
	args[na++] = tir_int(b, win.in[1]);
	args[na++] = tir_int(b, w->shape.d[0].c);
	args[na++] = tir_int(b, win.k[0]);
	args[na++] = tir_int(b, win.k[1]);
	args[na++] = tir_int(b, win.s[0]);
	args[na++] = tir_int(b, win.s[1]);
	args[na++] = tir_int(b, win.pb[0]);
	args[na++] = tir_int(b, win.pb[1]);
	args[na++] = tir_int(b, win.d[0]);
	args[na++] = tir_int(b, win.d[1]);
	args[na++] = tir_int(b, node_attr_int(n, "group", 1));
	args[na++] = tir_int(b, win.out[0]);
	args[na++] = tir_int(b, win.out[1]);
	return na;
}

/*
 * A per-channel constant bias of a Conv without one: Add's other input of
 * shape [M, 1, 1] or [1, M, 1, 1] (or [M] broadcasting as [.., M] only when
 * the spatial dims are 1). Its value id, or -1.
 */
static int conv_bias_of(struct graph *g, const struct node *conv, const struct node *e)
{
	const struct value *y = node_out(g, conv, 0);
	int64_t m = y->shape.d[1].c;

	if (e->op != OP_ADD || node_in(g, conv, 2))
		return -1;
	for (int i = 0; i < 2; i++) {
		const struct value *x = node_in(g, e, i);
		const struct shape *s;
		int64_t per = 1;

		if (!x || e->in[i] == conv->out[0] || !x->data)
			continue;
		s = &x->shape;
		if (!shape_is_static(s))
			return -1;
		for (int j = 0; j < s->rank; j++)
			per *= s->d[j].c;
		if (per != m)
			return -1;
		/* aligned with the channel axis: [M,1,1] or [1,M,1,1] */
		if ((s->rank == 3 && s->d[0].c == m) || (s->rank == 4 && s->d[1].c == m))
			return e->in[i];
		return -1;
	}
	return -1;
}

/*
 * The im2col scratch of kernel k: a float32 value of numel elements that
 * the memory plan places for the kernel's step alone (kernel.scratch), and
 * its parameter, after the kernel's arguments.
 */
static struct tir_buf *col_param(struct graph *g, struct tir_builder *b, struct kernel *k,
				 int64_t numel)
{
	int id = graph_add_value(g, arena_printf(g->arena, "%s.scratch0", b->name));
	struct value *v = &g->values.v[id];

	v->dtype = DTYPE_F32;
	v->shape.rank = 1;
	v->shape.d[0] = dim_const(numel);
	v->has_shape = true;
	k->n_scratch = 1;
	k->scratch = arena_alloc(g->arena, sizeof(int));
	k->scratch[0] = id;
	return tir_param(b, "scratch0", DTYPE_F32);
}

static int blas_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	struct node *a = &g->nodes.v[p->nodes[0]];
	const char *op = a->op == OP_MATMUL ? "matmul" : a->op == OP_GEMM ? "gemm" : "conv2d";
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir_buf *bufs[4], **side, *out, *col = NULL;
	int64_t col_numel = 0;
	struct tir *args[3 + 3 + 3 * MM_GROUPS + 28];
	int nbuf = 0, na, first_epi = 1, bias = -1, out_v = g->nodes.v[p->nodes[p->n_nodes - 1]].out[0];
	int max_args = a->n_in + 2, last_side;
	struct lower_res_act epi;
	bool blocks;

	(void)t;
	for (int i = 1; i < p->n_nodes; i++)
		max_args += g->nodes.v[p->nodes[i]].n_in;
	if (a->op == OP_CONV && p->n_nodes > 1 &&
	    (bias = conv_bias_of(g, a, &g->nodes.v[p->nodes[1]])) >= 0)
		first_epi = 2;
	/*
	 * [residual Add] [Relu | Clip] is the helper's (collagec_blas_epi): it
	 * finishes each block of the output while the block is in cache, where
	 * the ops' loops would make one more pass over the whole output. It
	 * needs parameters for the residual alone.
	 */
	blocks = lower_res_act(g, p->nodes + first_epi, p->n_nodes - first_epi,
			       g->nodes.v[p->nodes[first_epi - 1]].out[0], &epi);
	last_side = !blocks ? p->n_nodes : epi.res >= 0 ? first_epi + 1 : first_epi;
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_blas_%s%s", p->id, op,
						    p->n_nodes > 1 ? "_epilogue" : ""));
	k.args = arena_alloc(g->arena, sizeof(int) * (size_t)max_args);
	for (int j = 0; j < a->n_in; j++)
		if (a->in[j] >= 0)
			bufs[nbuf++] = libcall_param(&b, &k, "in", DTYPE_F32, a->in[j]);
	if (bias >= 0)
		bufs[nbuf++] = libcall_param(&b, &k, "bias", DTYPE_F32, bias);
	/* the epilogue's other inputs: one parameter each, in node order */
	side = arena_alloc(g->arena, sizeof(*side) * (size_t)max_args);
	for (int i = first_epi; i < last_side; i++) {
		const struct node *e = &g->nodes.v[p->nodes[i]];
		int chain = g->nodes.v[p->nodes[i - 1]].out[0];

		for (int j = 0; j < e->n_in; j++) {
			const struct value *x = node_in(g, e, j);
			int have = -1;

			if (!x || e->in[j] == chain)
				continue;
			for (int q = 0; q < k.n_args; q++)
				if (k.args[q] == e->in[j])
					have = q;
			if (have < 0) {
				int q = k.n_args;

				side[q] = libcall_param(&b, &k, "epi", x->dtype, e->in[j]);
			}
		}
	}
	k.n_inputs = k.n_args;
	out = libcall_param(&b, &k, "out", DTYPE_F32, out_v);
	bufs[nbuf] = out;
	if (a->op == OP_CONV && conv_col(g, a, &col_numel))
		col = col_param(g, &b, &k, col_numel);
	na = a->op == OP_MATMUL ? matmul_args(&b, g, a, bufs, args)
	   : a->op == OP_GEMM ? gemm_args(&b, g, a, bufs, args)
	   : conv_args(&b, g, a, node_in(g, a, 2) || bias >= 0, bufs, col, args);
	if (na < 0) {
		tir_builder_release(&b);
		return -1;
	}
	/* the residual (0: none), the activation and its bounds */
	args[na] = tir_int(&b, 0);
	for (int q = 0; q < k.n_inputs && epi.res >= 0; q++)
		if (k.args[q] == epi.res)
			args[na] = tir_addr(&b, q < nbuf ? bufs[q] : side[q], tir_int(&b, 0));
	na++;
	args[na++] = tir_int(&b, epi.act);
	args[na++] = tir_flt(&b, DTYPE_F32, epi.lo);
	args[na++] = tir_flt(&b, DTYPE_F32, epi.hi);
	tir_extern(&b, arena_printf(g->arena, "collagec_blas_%s", op), args, na);
	/* else the epilogue: each op's own lowering, in place on out */
	for (int i = first_epi; i < p->n_nodes && !blocks; i++) {
		struct node *e = &g->nodes.v[p->nodes[i]];
		int chain = g->nodes.v[p->nodes[i - 1]].out[0];
		struct lower L = { .g = g, .b = &b, .n = e };

		L.in = arena_alloc(g->arena, sizeof(*L.in) * (size_t)(e->n_in + 1));
		L.out = &out;
		for (int j = 0; j < e->n_in; j++) {
			if (e->in[j] < 0)
				continue;
			if (e->in[j] == chain) {
				L.in[j] = out;
				continue;
			}
			for (int q = 0; q < k.n_inputs; q++)
				if (k.args[q] == e->in[j])
					L.in[j] = q < nbuf ? bufs[q] : side[q];
		}
		if (op_info(e->op)->lower(&L) < 0) {
			tir_builder_release(&b);
			return -1;
		}
	}
	k.name = b.name;
	k.func = tir_finish(&b);
	tir_builder_release(&b);
	/*
	 * Each epilogue nest writes every output element from the same element
	 * (and broadcast side inputs): its perfectly nested loops are parallel.
	 */
	for (int i = 0; i < k.func->body->n; i++)
		for (struct tir *s = k.func->body->list[i]; s && s->kind == TIR_FOR;
		     s = s->b && s->b->kind == TIR_SEQ && s->b->n == 1 ? s->b->list[0] : NULL)
			s->parallel = true;
	k.span = p->span;
	k.func->span = p->span;
	vec_push(&p->kernels, k);
	return 0;
}

/* ---- tir_to_runtime ---- */

/* several literals: ISO C only promises 4095 characters in one */
static const char *const blas_helpers[] = {
	"\n"
	"/* blas target: MatMul, Gemm and Conv through OpenBLAS (cblas_sgemm, cblas_sgemv) */\n"
	"#ifndef COLLAGEC_BLAS_HELPERS\n"
	"#define COLLAGEC_BLAS_HELPERS\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#include <cblas.h>\n"
	"void openblas_set_num_threads(int num_threads);\n"
	"int openblas_get_num_threads(void);\n"
	"\n"
	"/* multiply-adds below which a product runs on one thread */\n"
	"#define COLLAGEC_BLAS_PAR_MIN 65536\n"
	"/*\n"
	" * Floats of y in one block that an epilogue or a C finishes while it is in\n"
	" * cache (256 KB, half of a 512 KB L2), and the fewest rows or columns of a\n"
	" * block (narrower GEMMs would lose more in OpenBLAS's packing than the\n"
	" * cache saves).\n"
	" */\n"
	"#define COLLAGEC_BLAS_TILE 65536\n"
	"#define COLLAGEC_BLAS_MIN_BLK 256\n"
	"\n"
	"/*\n"
	" * OpenBLAS runs single-threaded; the helpers split the work over the OpenMP\n"
	" * team the c target's kernels use, so that two thread pools never spin\n"
	" * against each other.\n"
	" */\n"
	"static void collagec_blas_single(void)\n"
	"{\n"
	"\tif (openblas_get_num_threads() != 1)\n"
	"\t\topenblas_set_num_threads(1);\n"
	"}\n"
	"\n"
	"/* y = alpha op(a) op(b) + beta y on one thread, minding the sizes BLAS rejects */\n"
	"static void collagec_blas_sgemm1(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,\n"
	"\t\t\t\t const float *a, int64_t lda, const float *b, int64_t ldb,\n"
	"\t\t\t\t float beta, float *y, int64_t ldy)\n"
	"{\n"
	"\tif (m <= 0 || n <= 0)\n"
	"\t\treturn;\n"
	"\tif (k <= 0) {\n"
	"\t\tfor (int64_t i = 0; i < m; i++)\n"
	"\t\t\tfor (int64_t j = 0; j < n; j++)\n"
	"\t\t\t\ty[i * ldy + j] = beta == 0.0f ? 0.0f : beta * y[i * ldy + j];\n"
	"\t\treturn;\n"
	"\t}\n"
	"\t/* a one-row or one-column result: gemv (sgemm would pack all of b) */\n"
	"\tif (m == 1) {\n"
	"\t\tint incx = ta ? (int)lda : 1;\n"
	"\n"
	"\t\tif (tb)\n"
	"\t\t\tcblas_sgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)k, alpha, b,\n"
	"\t\t\t\t    (int)ldb, a, incx, beta, y, 1);\n"
	"\t\telse\n"
	"\t\t\tcblas_sgemv(CblasRowMajor, CblasTrans, (int)k, (int)n, alpha, b,\n"
	"\t\t\t\t    (int)ldb, a, incx, beta, y, 1);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tif (n == 1) {\n"
	"\t\tint incx = tb ? 1 : (int)ldb;\n"
	"\n"
	"\t\tif (ta)\n"
	"\t\t\tcblas_sgemv(CblasRowMajor, CblasTrans, (int)k, (int)m, alpha, a,\n"
	"\t\t\t\t    (int)lda, b, incx, beta, y, (int)ldy);\n"
	"\t\telse\n"
	"\t\t\tcblas_sgemv(CblasRowMajor, CblasNoTrans, (int)m, (int)k, alpha, a,\n"
	"\t\t\t\t    (int)lda, b, incx, beta, y, (int)ldy);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tcblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,\n"
	"\t\t    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a,\n"
	"\t\t    (int)lda, b, (int)ldb, beta, y, (int)ldy);\n"
	"}\n"
	"\n"
	"/*\n"
	" * What a helper does to each block of its output right after computing it,\n"
	" * while the block is in cache: adds res (the output's layout, row stride\n"
	" * ldr; NULL: none), then act: 0 none, 1 Relu, 2 Clip to [lo, hi] (NaN\n"
	" * kept, as the ops' own loops keep it). A loop per step, with no branch\n"
	" * inside and restrict rows, in forms -O2 vectorises (Clip's as x < lo ?\n"
	" * lo : x, which keeps NaN; with an explicit NaN test it stayed scalar).\n"
	" */\n"
	"static void collagec_blas_epi_row(float *restrict y, const float *restrict res, int64_t n,\n"
	"\t\t\t\t  int act, float lo, float hi)\n"
	"{\n"
	"\tif (res)\n"
	"\t\tfor (int64_t j = 0; j < n; j++)\n"
	"\t\t\ty[j] += res[j];\n"
	"\tif (act == 1) {\n"
	"\t\tfor (int64_t j = 0; j < n; j++) {\n"
	"\t\t\tfloat v = y[j];\n"
	"\n"
	"\t\t\ty[j] = (v > 0.0f) | (v != v) ? v : 0.0f;\n"
	"\t\t}\n"
	"\t} else if (act == 2) {\n"
	"\t\tfor (int64_t j = 0; j < n; j++) {\n"
	"\t\t\tfloat v = y[j];\n"
	"\n"
	"\t\t\tv = v < lo ? lo : v;\n"
	"\t\t\ty[j] = v > hi ? hi : v;\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"\n"
	"static void collagec_blas_epi(float *y, int64_t ldy, const float *res, int64_t ldr, int64_t m,\n"
	"\t\t\t      int64_t n, int act, float lo, float hi)\n"
	"{\n"
	"\tif (!res && !act)\n"
	"\t\treturn;\n"
	"\tfor (int64_t i = 0; i < m; i++)\n"
	"\t\tcollagec_blas_epi_row(y + i * ldy, res ? res + i * ldr : NULL, n, act, lo, hi);\n"
	"}\n",
	"\n"
	"/* Rows [r0, r1), columns [c0, c1) of y = c broadcast through its strides (crs, ccs). */\n"
	"static void collagec_blas_init(float *y, int64_t ldy, const float *c, int64_t crs, int64_t ccs,\n"
	"\t\t\t       int64_t r0, int64_t r1, int64_t c0, int64_t c1)\n"
	"{\n"
	"\tfor (int64_t i = r0; i < r1; i++) {\n"
	"\t\tfloat *restrict yr = y + i * ldy;\n"
	"\t\tconst float *cr = c + i * crs;\n"
	"\n"
	"\t\tif (ccs == 0) {\n"
	"\t\t\tfloat v = cr[0];\n"
	"\n"
	"\t\t\tfor (int64_t j = c0; j < c1; j++)\n"
	"\t\t\t\tyr[j] = v;\n"
	"\t\t} else if (ccs == 1) {\n"
	"\t\t\tmemcpy(yr + c0, cr + c0, (size_t)(c1 - c0) * sizeof(float));\n"
	"\t\t} else {\n"
	"\t\t\tfor (int64_t j = c0; j < c1; j++)\n"
	"\t\t\t\tyr[j] = cr[j * ccs];\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"\n"
	"/*\n"
	" * Block [s, e) of the rows (cols 0) or columns (cols 1) of y = alpha op(a)\n"
	" * op(b) + beta c, then the epilogue: c (NULL: none) is broadcast through\n"
	" * its strides (crs, ccs); it initialises the block when beta is not 0, and\n"
	" * when it is, 0 * c is added after (NaN and infinity still propagate).\n"
	" */\n"
	"static void collagec_blas_block(int cols, int64_t s, int64_t e, int ta, int tb, int64_t m,\n"
	"\t\t\t\tint64_t n, int64_t k, float alpha, const float *a, int64_t lda,\n"
	"\t\t\t\tconst float *b, int64_t ldb, float beta, float *y, int64_t ldy,\n"
	"\t\t\t\tconst float *c, int64_t crs, int64_t ccs, const float *res,\n"
	"\t\t\t\tint64_t ldr, int act, float lo, float hi)\n"
	"{\n"
	"\tint64_t r0 = cols ? 0 : s, r1 = cols ? m : e, c0 = cols ? s : 0, c1 = cols ? e : n;\n"
	"\tfloat *yb = y + r0 * ldy + c0;\n"
	"\n"
	"\tif (c && beta != 0.0f)\n"
	"\t\tcollagec_blas_init(y, ldy, c, crs, ccs, r0, r1, c0, c1);\n"
	"\tcollagec_blas_sgemm1(ta, tb, r1 - r0, c1 - c0, k, alpha,\n"
	"\t\t\t     cols ? a : ta ? a + r0 : a + r0 * lda, lda,\n"
	"\t\t\t     !cols ? b : tb ? b + c0 * ldb : b + c0, ldb,\n"
	"\t\t\t     c && beta != 0.0f ? beta : 0.0f, yb, ldy);\n"
	"\tif (c && beta == 0.0f)\n"
	"\t\tfor (int64_t i = r0; i < r1; i++)\n"
	"\t\t\tfor (int64_t j = c0; j < c1; j++)\n"
	"\t\t\t\ty[i * ldy + j] += 0.0f * c[i * crs + j * ccs];\n"
	"\tcollagec_blas_epi(yb, ldy, res ? res + r0 * ldr + c0 : NULL, ldr, r1 - r0, c1 - c0, act,\n"
	"\t\t\t  lo, hi);\n"
	"}\n"
	"\n"
	"/*\n"
	" * The same on nt threads, in blocks of columns (or rows, when there are\n"
	" * more), each finished by the epilogue while it is in cache: blocks of\n"
	" * at most COLLAGEC_BLAS_TILE floats of y where there is an epilogue to\n"
	" * run, one per thread otherwise.\n"
	" */\n"
	"static void collagec_blas_sgemm(int nt, int ta, int tb, int64_t m, int64_t n, int64_t k,\n"
	"\t\t\t\tfloat alpha, const float *a, int64_t lda, const float *b,\n"
	"\t\t\t\tint64_t ldb, float beta, float *y, int64_t ldy, const float *c,\n"
	"\t\t\t\tint64_t crs, int64_t ccs, const float *res, int64_t ldr, int act,\n"
	"\t\t\t\tfloat lo, float hi)\n"
	"{\n"
	"\tint cols = n >= m;\n"
	"\tint64_t ext = cols ? n : m, other = cols ? m : n, blk, nb;\n"
	"\n"
	"\tif (m <= 0 || n <= 0)\n"
	"\t\treturn;\n"
	"\tif (nt <= 1 || m * n * k < COLLAGEC_BLAS_PAR_MIN || ext < 2)\n"
	"\t\tnt = 1;\n"
	"\tif (nt > ext)\n"
	"\t\tnt = (int)ext;\n"
	"\tnb = nt;\n"
	"\t/*\n"
	"\t * with an epilogue or a c, blocks y's cache can hold, of 256 or more,\n"
	"\t * as many for each thread (uneven shares made 2-thread runs slower)\n"
	"\t */\n"
	"\tif ((c || res || act) && (ext + nt - 1) / nt * other > COLLAGEC_BLAS_TILE) {\n"
	"\t\tint64_t want = COLLAGEC_BLAS_TILE / other;\n"
	"\n"
	"\t\twant = want < COLLAGEC_BLAS_MIN_BLK ? COLLAGEC_BLAS_MIN_BLK : want;\n"
	"\t\tnb = (ext + want - 1) / want;\n"
	"\t\tnb = (nb + nt - 1) / nt * nt;\n"
	"\t}\n"
	"\tblk = (ext + nb - 1) / nb;\n"
	"\t/* blocks of whole SIMD widths where there is room */\n"
	"\tif (blk < ext && ext >= 16 * nb)\n"
	"\t\tblk = (blk + 15) / 16 * 16;\n"
	"\tif (blk > ext)\n"
	"\t\tblk = ext;\n"
	"\tnb = (ext + blk - 1) / blk;\n"
	"\tif (nt <= 1 || nb < 2) {\n"
	"\t\tfor (int64_t q = 0; q < nb; q++)\n"
	"\t\t\tcollagec_blas_block(cols, q * blk, q * blk + blk > ext ? ext : q * blk + blk,\n"
	"\t\t\t\t\t    ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, y, ldy,\n"
	"\t\t\t\t\t    c, crs, ccs, res, ldr, act, lo, hi);\n"
	"\t\treturn;\n"
	"\t}\n"
	"#pragma omp parallel for num_threads(nt) schedule(static)\n"
	"\tfor (int64_t q = 0; q < nb; q++)\n"
	"\t\tcollagec_blas_block(cols, q * blk, q * blk + blk > ext ? ext : q * blk + blk, ta,\n"
	"\t\t\t\t    tb, m, n, k, alpha, a, lda, b, ldb, beta, y, ldy, c, crs, ccs,\n"
	"\t\t\t\t    res, ldr, act, lo, hi);\n"
	"}\n",
	"\n"
	"/* Product i of the batch: its offsets in a and b from the six (extent, strides) groups. */\n"
	"static void collagec_blas_matmul1(const float *a, const float *b, float *y, int64_t m, int64_t n,\n"
	"\t\t\t\t  int64_t k, const int64_t *d, const int64_t *sa, const int64_t *sb,\n"
	"\t\t\t\t  int64_t i, const float *res, int act, float lo, float hi, int nt)\n"
	"{\n"
	"\tint64_t r = i, oa = 0, ob = 0;\n"
	"\n"
	"\tfor (int g = 5; g >= 0; g--) {\n"
	"\t\toa += r % d[g] * sa[g];\n"
	"\t\tob += r % d[g] * sb[g];\n"
	"\t\tr /= d[g];\n"
	"\t}\n"
	"\tcollagec_blas_sgemm(nt, 0, 0, m, n, k, 1.0f, a + oa, k, b + ob, n, 0.0f, y + i * m * n, n,\n"
	"\t\t\t    NULL, 0, 0, res ? res + i * m * n : NULL, n, act, lo, hi);\n"
	"}\n"
	"\n"
	"static void collagec_blas_matmul(const float *a, const float *b, float *y, int64_t m,\n"
	"\t\t\t\t int64_t n, int64_t k,\n"
	"\t\t\t\t int64_t d0, int64_t sa0, int64_t sb0, int64_t d1, int64_t sa1,\n"
	"\t\t\t\t int64_t sb1, int64_t d2, int64_t sa2, int64_t sb2, int64_t d3,\n"
	"\t\t\t\t int64_t sa3, int64_t sb3, int64_t d4, int64_t sa4, int64_t sb4,\n"
	"\t\t\t\t int64_t d5, int64_t sa5, int64_t sb5, const float *res, int act,\n"
	"\t\t\t\t float lo, float hi, int threads)\n"
	"{\n"
	"\tconst int64_t d[6] = { d0, d1, d2, d3, d4, d5 };\n"
	"\tconst int64_t sa[6] = { sa0, sa1, sa2, sa3, sa4, sa5 };\n"
	"\tconst int64_t sb[6] = { sb0, sb1, sb2, sb3, sb4, sb5 };\n"
	"\tint64_t batch = d0 * d1 * d2 * d3 * d4 * d5;\n"
	"\tint nt = threads > 1 ? threads : 1;\n"
	"\n"
	"\tcollagec_blas_single();\n"
	"\t/* at least one product per thread: products in parallel, else each split */\n"
	"\tif (nt > 1 && batch >= nt && batch * m * n * k >= COLLAGEC_BLAS_PAR_MIN) {\n"
	"#pragma omp parallel for num_threads(nt) schedule(static)\n"
	"\t\tfor (int64_t i = 0; i < batch; i++)\n"
	"\t\t\tcollagec_blas_matmul1(a, b, y, m, n, k, d, sa, sb, i, res, act, lo, hi, 1);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tfor (int64_t i = 0; i < batch; i++)\n"
	"\t\tcollagec_blas_matmul1(a, b, y, m, n, k, d, sa, sb, i, res, act, lo, hi, nt);\n"
	"}\n"
	"\n"
	"/* Y = alpha op(A) op(B) + beta C, C broadcast through (row, column) strides (0 = broadcast). */\n"
	"static void collagec_blas_gemm(const float *a, const float *b, const float *c, float *y,\n"
	"\t\t\t       int64_t m, int64_t n, int64_t k, int ta, int tb, float alpha,\n"
	"\t\t\t       float beta, int64_t csr, int64_t csc, const float *res, int act,\n"
	"\t\t\t       float lo, float hi, int threads)\n"
	"{\n"
	"\tcollagec_blas_single();\n"
	"\tcollagec_blas_sgemm(threads, ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, y,\n"
	"\t\t\t    n, c, csr, csc, res, n, act, lo, hi);\n"
	"}\n"
	"\n"
	"/*\n"
	" * Rows [r0, r1) of col, row (c, i, j) = the input pixels kernel tap (i, j)\n"
	" * of channel c sees, 0 in the padding.\n"
	" */\n"
	"static void collagec_blas_im2col(const float *x, float *col, int64_t r0, int64_t r1, int64_t h,\n"
	"\t\t\t\t int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,\n"
	"\t\t\t\t int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t oh,\n"
	"\t\t\t\t int64_t ow)\n"
	"{\n"
	"\tfor (int64_t rr = r0; rr < r1; rr++) {\n"
	"\t\tint64_t c = rr / (kh * kw), i = rr / kw % kh, j = rr % kw;\n"
	"\t\tfloat *row = col + rr * oh * ow;\n"
	"\t\tint64_t off = j * dw - pw, lo = 0, hi;\n"
	"\n"
	"\t\t/* ow in [lo, hi) reads inside the row: 0 <= ow * sw + off < w */\n"
	"\t\tif (off < 0)\n"
	"\t\t\tlo = (-off + sw - 1) / sw;\n"
	"\t\thi = w - off <= 0 ? 0 : (w - off + sw - 1) / sw;\n"
	"\t\tlo = lo > ow ? ow : lo;\n"
	"\t\thi = hi > ow ? ow : hi < lo ? lo : hi;\n"
	"\t\tfor (int64_t r = 0; r < oh; r++) {\n"
	"\t\t\tint64_t ih = r * sh - ph + i * dh;\n"
	"\t\t\tfloat *out = row + r * ow;\n"
	"\t\t\tconst float *in;\n"
	"\n"
	"\t\t\tif (ih < 0 || ih >= h) {\n"
	"\t\t\t\tmemset(out, 0, (size_t)ow * sizeof(float));\n"
	"\t\t\t\tcontinue;\n"
	"\t\t\t}\n"
	"\t\t\tin = x + (c * h + ih) * w;\n"
	"\t\t\tfor (int64_t o = 0; o < lo; o++)\n"
	"\t\t\t\tout[o] = 0.0f;\n"
	"\t\t\tif (sw == 1 && hi > lo)\n"
	"\t\t\t\tmemcpy(out + lo, in + lo + off, (size_t)(hi - lo) * sizeof(float));\n"
	"\t\t\telse if (sw != 1)\n"
	"\t\t\t\tfor (int64_t o = lo; o < hi; o++)\n"
	"\t\t\t\t\tout[o] = in[o * sw + off];\n"
	"\t\t\tfor (int64_t o = hi; o < ow; o++)\n"
	"\t\t\t\tout[o] = 0.0f;\n"
	"\t\t}\n"
	"\t}\n"
	"}\n",
	"\n"
	"/*\n"
	" * Image jg / group, group jg % group on nt threads; col: kc * oh * ow\n"
	" * scratch or NULL. The bias initialises each block of y that the GEMM\n"
	" * then adds to, and the epilogue (res, act) finishes it.\n"
	" */\n"
	"static void collagec_blas_conv1(const float *x, const float *w, const float *bias, float *y,\n"
	"\t\t\t\tfloat *col, int64_t jg, int64_t c, int64_t cg, int64_t m,\n"
	"\t\t\t\tint64_t mg, int64_t kc, int64_t h, int64_t wd, int64_t kh,\n"
	"\t\t\t\tint64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,\n"
	"\t\t\t\tint64_t dh, int64_t dw, int64_t oh, int64_t ow, const float *res, int act,\n"
	"\t\t\t\tfloat lo, float hi, int nt, int64_t group)\n"
	"{\n"
	"\tint64_t i = jg / group, g = jg % group, p = oh * ow;\n"
	"\tconst float *xg = x + (i * c + g * cg) * h * wd;\n"
	"\tfloat *yg = y + (i * m + g * mg) * p;\n"
	"\n"
	"\tif (col) {\n"
	"\t\tif (nt > 1 && kc >= nt && kc * p >= COLLAGEC_BLAS_PAR_MIN) {\n"
	"#pragma omp parallel for num_threads(nt) schedule(static)\n"
	"\t\t\tfor (int t = 0; t < nt; t++)\n"
	"\t\t\t\tcollagec_blas_im2col(xg, col, kc * t / nt, kc * (t + 1) / nt, h, wd,\n"
	"\t\t\t\t\t\t     kh, kw, sh, sw, ph, pw, dh, dw, oh, ow);\n"
	"\t\t} else {\n"
	"\t\t\tcollagec_blas_im2col(xg, col, 0, kc, h, wd, kh, kw, sh, sw, ph, pw, dh, dw,\n"
	"\t\t\t\t\t     oh, ow);\n"
	"\t\t}\n"
	"\t}\n"
	"\tcollagec_blas_sgemm(nt, 0, 0, mg, p, kc, 1.0f, w + g * mg * kc, kc, col ? col : xg, p,\n"
	"\t\t\t    bias ? 1.0f : 0.0f, yg, p, bias ? bias + g * mg : NULL, 1, 0,\n"
	"\t\t\t    res ? res + (i * m + g * mg) * p : NULL, p, act, lo, hi);\n"
	"}\n"
	"\n"
	"/*\n"
	" * col: the im2col scratch, c * kh * kw * oh * ow floats (one image, every\n"
	" * group in its own part) planned in the model's workspace, or NULL for a\n"
	" * 1x1, stride-1, unpadded conv, which multiplies the input itself.\n"
	" */\n"
	"static void collagec_blas_conv2d(const float *x, const float *w, const float *bias,\n"
	"\t\t\t\t float *y, float *col, int64_t n, int64_t c, int64_t h,\n"
	"\t\t\t\t int64_t wd, int64_t m, int64_t kh, int64_t kw, int64_t sh,\n"
	"\t\t\t\t int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,\n"
	"\t\t\t\t int64_t group, int64_t oh, int64_t ow, const float *res, int act,\n"
	"\t\t\t\t float lo, float hi, int threads)\n"
	"{\n"
	"\tint64_t cg = c / group, mg = m / group, kc = cg * kh * kw, p = oh * ow, jobs = n * group;\n"
	"\tint nt = threads > 1 ? threads : 1;\n"
	"\n"
	"\tcollagec_blas_single();\n"
	"\tif (jobs <= 0 || p <= 0 || mg <= 0)\n"
	"\t\treturn;\n"
	"\t/*\n"
	"\t * at least one (image, group) per thread: those in parallel, one thread\n"
	"\t * each - without col, every one of them; with it, the groups of one\n"
	"\t * image at a time, each on its part of col\n"
	"\t */\n"
	"\tif (nt > 1 && !col && jobs >= nt && jobs * mg * p * kc >= COLLAGEC_BLAS_PAR_MIN) {\n"
	"#pragma omp parallel for num_threads(nt) schedule(static)\n"
	"\t\tfor (int64_t jg = 0; jg < jobs; jg++)\n"
	"\t\t\tcollagec_blas_conv1(x, w, bias, y, NULL, jg, c, cg, m, mg, kc, h, wd, kh, kw,\n"
	"\t\t\t\t\t    sh, sw, ph, pw, dh, dw, oh, ow, res, act, lo, hi, 1, group);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tif (nt > 1 && col && group >= nt && group * mg * p * kc >= COLLAGEC_BLAS_PAR_MIN) {\n"
	"\t\tfor (int64_t i = 0; i < n; i++) {\n"
	"#pragma omp parallel for num_threads(nt) schedule(static)\n"
	"\t\t\tfor (int64_t g = 0; g < group; g++)\n"
	"\t\t\t\tcollagec_blas_conv1(x, w, bias, y, col + g * kc * p, i * group + g, c,\n"
	"\t\t\t\t\t\t    cg, m, mg, kc, h, wd, kh, kw, sh, sw, ph, pw, dh,\n"
	"\t\t\t\t\t\t    dw, oh, ow, res, act, lo, hi, 1, group);\n"
	"\t\t}\n"
	"\t\treturn;\n"
	"\t}\n"
	"\t/* else one (image, group) after the other, each on nt threads */\n"
	"\tfor (int64_t jg = 0; jg < jobs; jg++)\n"
	"\t\tcollagec_blas_conv1(x, w, bias, y, col, jg, c, cg, m, mg, kc, h, wd, kh, kw, sh, sw,\n"
	"\t\t\t\t    ph, pw, dh, dw, oh, ow, res, act, lo, hi, nt, group);\n"
	"}\n"
	"#endif\n",
};

static int blas_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			       struct runtime_module *m)
{
	const char *inc = cblas_include(g->arena);
	struct strbuf pre = STRBUF_INIT;
	struct tir_dialect d = tir_dialect_c;
	/* one buffer per value, only the output written: restrict holds */
	const struct libcall_style style = { .restrict_bufs = true, .loops = true };

	(void)t;
	if (!inc) {
		diag_error_status(g->ctx, STATUS_ENV, "target 'blas': <cblas.h> disappeared");
		return -1;
	}
	/* the helpers: a prelude, emitted once per model however many partitions */
	for (size_t i = 0; i < ARRAY_SIZE(blas_helpers); i++)
		sb_puts(&pre, blas_helpers[i]);
	m->prelude = arena_strdup(g->arena, sb_str(&pre));
	sb_release(&pre);
	c_parallel_dialect(g->arena, 0, &d);
	for (int i = 0; i < p->kernels.n; i++)
		libcall_print_kernel(&p->kernels.v[i], &d, &style, &m->source);
	if (*inc)
		vec_push(&m->ldlibs, inc);
	vec_push(&m->ldlibs, "-fopenmp");
	vec_push(&m->ldlibs, "-lopenblas");
	return 0;
}

const struct target_kind target_kind_blas = {
	.api_version = TARGET_API_VERSION,
	.name = "blas",
	.device = "cpu",
	.description = "OpenBLAS cblas_sgemm; runs float32 MatMul, Gemm and 2-D Conv (im2col) "
		       "with their elementwise epilogues fused",
	.options = NULL,
	.unavailable = blas_unavailable,
	.supports = NULL,
	.patterns = "blas.pat",
	.pattern_check = blas_check,
	.relay_to_tir = blas_relay_to_tir,
	.plan_parallel = c_plan_parallel,
	.tir_to_runtime = blas_tir_to_runtime,
	.relay_to_runtime = NULL,
};
