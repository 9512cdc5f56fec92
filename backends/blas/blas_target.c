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
 * and hands the helpers, rt_blas.h, over as the runtime module's prelude
 * (emitted once per model however many partitions ask; its include guard
 * keeps them single even where a prelude were repeated), linking
 * -lopenblas.
 *
 * The helpers (collagec_blas_matmul, collagec_blas_gemm,
 * collagec_blas_conv2d) are C in backends/blas/rt_blas.h, whose comment says
 * what each does.
 *
 * Every kernel passes its `threads` argument on as the helper's last
 * argument (the printer appends it to the call_extern). OpenBLAS itself is
 * kept at one thread (set only when it is not already); the helpers split
 * the work over an OpenMP team of `threads` instead - across the products
 * of a batch or the groups of a conv's image (its (image, group) pairs when
 * it needs no im2col) when there are enough, else over column (or row)
 * blocks of each product and rows of the im2col.
 * That is the team the c target's kernels use: OpenBLAS's own pthreads would
 * spin against OpenMP's between kernels. Arguments that depend on symbolic
 * dims are loop-IR expressions over syms[].
 */
#include "../backends.h"

#include <glob.h>
#include <string.h>

#include "../libcall.h"

#include "../../core/emit/emit.h"
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

static int blas_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			       struct runtime_module *m)
{
	const char *inc = cblas_include(g->arena);
	const struct embedded_file *rt = embedded_find("rt_blas.h");
	struct tir_dialect d = tir_dialect_c;
	/* one buffer per value, only the output written: restrict holds */
	const struct libcall_style style = { .restrict_bufs = true, .loops = true };

	(void)t;
	if (!inc) {
		diag_error_status(g->ctx, STATUS_ENV, "target 'blas': <cblas.h> disappeared");
		return -1;
	}
	if (!rt)
		BUG("rt_blas.h is not embedded");
	/* the helpers: a prelude, emitted once per model however many partitions */
	m->prelude = rt->data;
	c_parallel_dialect(g->arena, 0, &d);
	for (int i = 0; i < p->kernels.n; i++)
		libcall_print_kernel(&p->kernels.v[i], &d, &style, &m->source);
	if (*inc)
		vec_push(&m->ldlibs, inc);
	vec_push(&m->ldlibs, "-lopenblas");
	return 0;
}

/*
 * The sgemm calls of a node: a Conv one per image and group (a depthwise
 * Conv of 1152 channels is 1152 GEMMs of one row, 2.5 us each: 2.9 ms
 * where oneDNN's depthwise kernel takes 0.2), a MatMul one per element of
 * its batch unless the batch folds into M (b a plain matrix).
 */
static double blas_node_calls(struct graph *g, const struct node *n,
			      int64_t (*dim_at)(const struct graph *g, struct dim d))
{
	const struct value *x = node_in(g, n, 0), *b = node_in(g, n, 1), *y = node_out(g, n, 0);
	double calls = 1;

	switch (n->op) {
	case OP_CONV:
		calls = (double)node_attr_int(n, "group", 1);
		if (x->shape.rank > 0)
			calls *= (double)dim_at(g, x->shape.d[0]);
		break;
	case OP_MATMUL:
		if (b->shape.rank <= 2)
			break;
		for (int i = 0; i + 2 < y->shape.rank; i++)
			calls *= (double)dim_at(g, y->shape.d[i]);
		break;
	default:
		break;
	}
	return calls > 1 ? calls : 1;
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
	.node_calls = blas_node_calls,
	.relay_to_tir = blas_relay_to_tir,
	.plan_parallel = c_plan_parallel,
	.tir_to_runtime = blas_tir_to_runtime,
	.relay_to_runtime = NULL,
};
