/*
 * dnnl_target.c - the dnnl target: float32 2-D Conv, MatMul and Gemm as
 * oneDNN primitives (Debian's libdnnl, the C API), with the elementwise ops
 * after them fused as oneDNN post-ops. It has the blas target's shape: its
 * partition rule is patterns/dnnl.pat, an anchor alone or followed by a
 * chain of epilogue ops; pattern_check takes a match when the anchor's
 * shapes fit and every epilogue op maps onto a post-op (everything else
 * stays on the next target, normally c):
 *   Relu, LeakyRelu          eltwise relu (alpha = the negative slope)
 *   Tanh, Sigmoid, Elu       eltwise tanh, logistic, elu
 *   HardSwish                eltwise hardswish
 *   HardSigmoid              eltwise linear then clip to [0, 1]
 *   Clip                     eltwise clip (constant bounds)
 *   Neg                      eltwise linear -1 (only through --patterns)
 *   Add                      a constant per-channel bias straight after a
 *                            Conv without one becomes its bias; else a
 *                            binary add post-op of a tensor of the output's
 *                            shape, a scalar, a per-channel (dim 1, Conv) or
 *                            last-dim (MatMul, Gemm) vector; two at most.
 * relay_to_tir makes one kernel per partition whose body is one call_extern
 * of collagec_dnnl_conv2d or collagec_dnnl_matmul, helpers of the runtime
 * prelude rt_dnnl.h (embedded into collagec, pasted once per model; it
 * explains the primitive cache, layouts, the once-only weights reorder and
 * threads). print_kernel gives each kernel a static cache of its primitive
 * and passes it, the kernel's name and `threads` around the loop-IR
 * arguments. Arguments that depend on symbolic dims are loop-IR expressions
 * over syms[].
 *
 * The collagec binary never links oneDNN: unavailable() checks for
 * <oneapi/dnnl/dnnl.h> and dlopens libdnnl in a child process, so that
 * nothing oneDNN or OpenMP starts survives into processes that fork later.
 */
#include "../backends.h"

#include <errno.h>
#include <dlfcn.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/emit/emit.h"
#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"

#define MAX_PO 6		/* post-ops the helpers take (rt_dnnl.h RT_DNNL_MAX_PO) */
#define MAX_BIN 2		/* binary operands */
#define MAX_MM_BATCH 4		/* batch dims of a batched matmul */

/* Post-op codes and broadcasts: as enum rt_dnnl_po / rt_dnnl_bcast of rt_dnnl.h. */
enum po_code {
	PO_NONE, PO_RELU, PO_TANH, PO_ELU, PO_LINEAR, PO_LOGISTIC, PO_CLIP, PO_HARDSWISH,
	PO_ADD0, PO_ADD1, PO_COUNT
};

enum bcast {
	BC_NONE, BC_FULL, BC_SCALAR, BC_CHANNEL, BC_LAST, BC_COUNT
};

/* ---- availability ---- */

static const char *const dnnl_sonames[] = { "libdnnl.so.3", "libdnnl.so.2" };

/* Whether one of the sonames loads, tried in a child; cached. */
static bool lib_loads(void)
{
	static int done, ok;
	pid_t pid;
	int st = 0;

	if (done)
		return ok;
	done = 1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		for (size_t i = 0; i < ARRAY_SIZE(dnnl_sonames); i++)
			if (dlopen(dnnl_sonames[i], RTLD_LAZY | RTLD_LOCAL))
				_exit(0);
		_exit(1);
	}
	if (pid < 0) {
		/* no child: load it here (it starts no threads by itself) */
		for (size_t i = 0; i < ARRAY_SIZE(dnnl_sonames) && !ok; i++) {
			void *h = dlopen(dnnl_sonames[i], RTLD_LAZY | RTLD_LOCAL);

			ok = h != NULL;
			if (h)
				dlclose(h);
		}
		return ok;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	return ok;
}

static const char *dnnl_unavailable(void)
{
	if (access("/usr/include/oneapi/dnnl/dnnl.h", R_OK) != 0 &&
	    access("/usr/local/include/oneapi/dnnl/dnnl.h", R_OK) != 0)
		return "oneDNN is not installed (no <oneapi/dnnl/dnnl.h>; apt-get install "
		       "libdnnl-dev)";
	if (!lib_loads())
		return "oneDNN is not installed (cannot load libdnnl.so.3 or libdnnl.so.2; "
		       "apt-get install libdnnl-dev)";
	return NULL;
}

/* ---- the rule ---- */

static bool is_f32(const struct value *v)
{
	return v && v->dtype == DTYPE_F32 && v->has_shape;
}

static bool dim_is_one(struct dim d)
{
	return dim_is_const(d) && d.c == 1;
}

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
	if (!is_f32(a) || !is_f32(b) || n->n_out != 1 || !is_f32(node_out(g, n, 0)))
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
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1), *bias = node_in(g, n, 2);
	const struct value *y = node_out(g, n, 0);
	int64_t group = node_attr_int(n, "group", 1);

	if (n->n_out != 1 || !is_f32(x) || !is_f32(w) || !is_f32(y) || (bias && !is_f32(bias)))
		return false;
	if (x->shape.rank != 4 || w->shape.rank != 4 || y->shape.rank != 4)
		return false;
	/* the batch may be symbolic; channels, spatial dims and the weight may not */
	for (int i = 1; i < 4; i++)
		if (!dim_is_const(x->shape.d[i]) || !dim_is_const(y->shape.d[i]))
			return false;
	if (!shape_is_static(&w->shape) || (bias && (bias->shape.rank != 1 ||
						      !shape_is_static(&bias->shape))))
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
	if (!is_f32(c) || c->shape.rank > 2 || node_attr_float(n, "alpha", 1.0) != 1.0 ||
	    node_attr_float(n, "beta", 1.0) != 1.0)
		return false;
	for (int i = 0; i < c->shape.rank; i++) {
		struct dim o = y->shape.d[2 - c->shape.rank + i];

		if (!dim_is_one(c->shape.d[i]) && !dim_eq(c->shape.d[i], o))
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
 * A per-channel constant bias of a Conv without one: x of shape [M, 1, 1]
 * or [1, M, 1, 1].
 */
static bool is_conv_bias(struct graph *g, const struct node *conv, const struct value *x)
{
	const struct shape *s = &x->shape;
	int64_t m = node_out(g, conv, 0)->shape.d[1].c;

	if (node_in(g, conv, 2) || !x->data || !is_f32(x) || !shape_is_static(s))
		return false;
	if (s->rank == 3)
		return s->d[0].c == m && s->d[1].c == 1 && s->d[2].c == 1;
	if (s->rank == 4)
		return s->d[0].c == 1 && s->d[1].c == m && s->d[2].c == 1 && s->d[3].c == 1;
	return false;
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

		if (dim_is_one(d)) {
			full = full && dim_is_one(o->d[i]);
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
	const struct value *out = node_out(g, e, 0), *cv = &g->values.v[v];
	double lo = -INFINITY, hi = INFINITY;
	int other = -1;

	if (e->n_out != 1 || !is_f32(out) || out->shape.rank != cv->shape.rank)
		return false;
	for (int i = 0; i < out->shape.rank; i++)
		if (!dim_eq(out->shape.d[i], cv->shape.d[i]))
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
	case OP_HARDSIGMOID:
		return po_add(ep, PO_LINEAR, node_attr_float(e, "alpha", 0.2),
			      node_attr_float(e, "beta", 0.5)) && po_add(ep, PO_CLIP, 0, 1);
	case OP_CLIP:
		/* bounds: absent, or constant scalars */
		for (int i = 1; i < e->n_in && i < 3; i++) {
			const struct value *bv = node_in(g, e, i);
			double x;

			if (!bv)
				continue;
			if (!bv->data || !value_const_scalar(g, bv, &x) || isnan(x))
				return false;
			if (i == 1)
				lo = x;
			else
				hi = x;
		}
		return e->n_in <= 3 && lo <= hi && po_add(ep, PO_CLIP, lo, hi);
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
	if (!is_f32(&g->values.v[other]))
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
		if (!epi_op(g, nodes, n_nodes, i, v, ep, mp.b_vec))
			return false;
		v = g->nodes.v[nodes[i]].out[0];
	}
	return true;
}

/* A pattern match: an anchor that fits, then epilogue ops that are post-ops. */
static bool dnnl_check(struct graph *g, const int *nodes, int n_nodes)
{
	struct epi_plan ep;

	return anchor_fits(g, &g->nodes.v[nodes[0]]) && epi_plan(g, nodes, n_nodes, &ep);
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

/* x, w, bias, e0, e1, y are set by the caller; then the shapes: conv2d's. */
static int conv_args(struct tir_builder *b, struct graph *g, const struct node *n,
		     struct tir **args)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
	int64_t kern[2] = { w->shape.d[2].c, w->shape.d[3].c };
	struct window win;
	int na = 0;

	if (window_plan(g, (struct node *)n, &x->shape, kern, false, &win) < 0)
		return -1;
	args[na++] = tir_dim(b, x->shape.d[0]);
	for (int i = 1; i < 4; i++)
		args[na++] = tir_int(b, x->shape.d[i].c);
	args[na++] = tir_int(b, w->shape.d[0].c);
	args[na++] = tir_int(b, kern[0]);
	args[na++] = tir_int(b, kern[1]);
	args[na++] = tir_int(b, win.s[0]);
	args[na++] = tir_int(b, win.s[1]);
	args[na++] = tir_int(b, win.pb[0]);
	args[na++] = tir_int(b, win.pb[1]);
	args[na++] = tir_int(b, win.pe[0]);
	args[na++] = tir_int(b, win.pe[1]);
	args[na++] = tir_int(b, win.d[0]);
	args[na++] = tir_int(b, win.d[1]);
	args[na++] = tir_int(b, node_attr_int(n, "group", 1));
	args[na++] = tir_int(b, win.out[0]);
	args[na++] = tir_int(b, win.out[1]);
	args[na++] = tir_int(b, w->data != NULL);
	return na;
}

/* matmul's shapes: nb, d0..d3, bbatch, m, n, k, ta, tb, wconst, C's broadcast. */
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
		if (c->shape.rank >= 1 && !dim_is_one(c->shape.d[c->shape.rank - 1]))
			cm |= 1;
		if (c->shape.rank == 2 && !dim_is_one(c->shape.d[0]))
			cm |= 2;
	}
	args[na++] = tir_int(b, cm);
	return na;
}

static int dnnl_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	struct node *a = &g->nodes.v[p->nodes[0]];
	bool conv = a->op == OP_CONV;
	const char *op = conv ? "conv2d" : "matmul";
	struct tir_builder b;
	struct kernel k = { 0 };
	struct tir_buf *x, *w, *bias = NULL, *e[MAX_BIN] = { NULL, NULL }, *out;
	struct tir *args[64];
	struct epi_plan ep;
	int na = 0, n, bias_v = -1;

	(void)t;
	if (!epi_plan(g, p->nodes, p->n_nodes, &ep))
		BUG("dnnl epilogue plan changed after the rule took the nodes");
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_dnnl_%s%s", p->id, op,
						    p->n_nodes > 1 ? "_post" : ""));
	k.args = arena_alloc(g->arena, sizeof(int) * (3 + MAX_BIN + 2));
	x = tir_param(&b, "in", DTYPE_F32);
	k.args[k.n_args++] = a->in[0];
	w = tir_param(&b, "in", DTYPE_F32);
	k.args[k.n_args++] = a->in[1];
	bias_v = a->n_in > 2 && a->in[2] >= 0 ? a->in[2] : ep.conv_bias;
	if (bias_v >= 0) {
		bias = tir_param(&b, "bias", DTYPE_F32);
		k.args[k.n_args++] = bias_v;
	}
	for (int i = 0; i < ep.n_bin; i++) {
		e[i] = tir_param(&b, "epi", DTYPE_F32);
		k.args[k.n_args++] = ep.bin[i];
	}
	k.n_inputs = k.n_args;
	out = tir_param(&b, "out", DTYPE_F32);
	k.args[k.n_args++] = g->nodes.v[p->nodes[p->n_nodes - 1]].out[0];
	args[na++] = addr_or_null(&b, x);
	args[na++] = addr_or_null(&b, w);
	args[na++] = addr_or_null(&b, bias);
	args[na++] = addr_or_null(&b, e[0]);
	args[na++] = addr_or_null(&b, e[1]);
	args[na++] = addr_or_null(&b, out);
	n = conv ? conv_args(&b, g, a, args + na) : matmul_args(&b, g, a, args + na);
	if (n < 0) {
		tir_builder_release(&b);
		return -1;
	}
	na += n;
	na += po_args(&b, &ep, args + na);
	tir_extern(&b, arena_printf(g->arena, "collagec_dnnl_%s", op), args, na);
	k.name = b.name;
	k.func = tir_finish(&b);
	tir_builder_release(&b);
	k.span = p->span;
	k.func->span = p->span;
	vec_push(&p->kernels, k);
	return 0;
}

/* ---- tir_to_runtime ---- */

/*
 * Prints a kernel with the executor's ABI: a static primitive cache, then
 * the helper call with the cache, the kernel's name, the loop-IR arguments
 * and `threads`.
 */
static void print_kernel(const struct kernel *k, const struct tir_dialect *d, struct strbuf *sb)
{
	const struct tir_func *f = k->func;

	kernel_comment(k, sb);
	sb_printf(sb, "static void %s(void *const *bufs, const int64_t *syms, int threads)\n{\n",
		  f->name);
	sb_puts(sb, "\tstatic struct rt_dnnl_kernel cache;\n");
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, "\t%s *b%d = bufs[%d];\n", tir_ctype(f->bufs[i]->dtype), i, i);
	sb_puts(sb, "\t(void)syms;\n");
	for (int i = 0; i < f->body->n; i++) {
		const struct tir *s = f->body->list[i];

		if (s->kind != TIR_EXTERN)
			BUG("dnnl kernel '%s' has a statement that is no library call", f->name);
		sb_printf(sb, "\t%s(&cache, \"%s\", ", s->name, f->name);
		for (int j = 0; j < s->n; j++) {
			tir_print_expr(s->list[j], d, sb);
			sb_puts(sb, ", ");
		}
		sb_puts(sb, "threads);\n");
	}
	sb_puts(sb, "}\n");
}

static int dnnl_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			       struct runtime_module *m)
{
	const struct embedded_file *rt = embedded_find("rt_dnnl.h");

	(void)g;
	(void)t;
	if (!rt)
		BUG("rt_dnnl.h is not embedded");
	m->prelude = rt->data;
	for (int i = 0; i < p->kernels.n; i++)
		print_kernel(&p->kernels.v[i], &tir_dialect_c, &m->source);
	vec_push(&m->ldlibs, "-fopenmp");
	vec_push(&m->ldlibs, "-ldnnl");
	return 0;
}

const struct target_kind target_kind_dnnl = {
	.api_version = TARGET_API_VERSION,
	.name = "dnnl",
	.device = "cpu",
	.description = "oneDNN primitives; runs float32 2-D Conv, MatMul and Gemm with their "
		       "bias, residual add and activations fused as post-ops",
	.options = NULL,
	.unavailable = dnnl_unavailable,
	.supports = NULL,
	.patterns = "dnnl.pat",
	.pattern_check = dnnl_check,
	.relay_to_tir = dnnl_relay_to_tir,
	.tir_to_runtime = dnnl_tir_to_runtime,
	.relay_to_runtime = NULL,
};
