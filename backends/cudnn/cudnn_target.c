/*
 * cudnn_target.c - the cudnn target: a 2-D Conv with the bias per channel,
 * residual Add and Relu after it (patterns/cudnn.pat) as one cuDNN call
 * (rt_cudnn.h: cudnnConvolutionBiasActivationForward, or
 * cudnnConvolutionForward alone). Its values live in the cuda target's
 * device memory, as cublas's do: the prelude is rt_cuda.h and
 * rt_cudnn.h, the init, fini and sync are cuda's, the argument flags treat
 * the CUDA kinds as one device (cuda_shares_memory).
 *
 * Availability and running are cuda's; running also needs libcudnn.so.9
 * (loaded when the first Conv runs).
 */
#include "../devloop.h"
#include "../libcall.h"

#include <string.h>
#include <unistd.h>

#include "../../core/emit/emit.h"
#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"

/* ---- the rule ---- */

/* The Conv's window: 2-D, static, symmetric pads; false when cuDNN's 2-D call cannot take it. */
static bool conv_window(struct graph *g, const struct node *n, struct window *win)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1);
	int64_t kern[2];
	int group = (int)node_attr_int(n, "group", 1);

	if (!libcall_conv_fits(g, n, 4, 4) || group < 1 || x->shape.d[1].c % group ||
	    w->shape.d[0].c % group)
		return false;
	kern[0] = w->shape.d[2].c;
	kern[1] = w->shape.d[3].c;
	if (window_plan(g, (struct node *)n, &x->shape, kern, false, win) < 0 || win->sym)
		return false;
	return win->pb[0] == win->pe[0] && win->pb[1] == win->pe[1];
}

/* Whether v is a per-channel constant of M channels: [M,1,1] or [1,M,1,1]. */
static bool channel_bias(const struct value *v, int64_t m)
{
	const struct shape *s = &v->shape;
	int64_t per = 1;

	if (!v->data || !libcall_is_f32(v) || !shape_is_static(s))
		return false;
	for (int j = 0; j < s->rank; j++)
		per *= s->d[j].c;
	return per == m && ((s->rank == 3 && s->d[0].c == m) || (s->rank == 4 && s->d[1].c == m));
}

/* What a match fuses after its Conv. */
struct fused {
	int bias;			/* value id of the bias, or -1 */
	int z;				/* of the residual, or -1 */
	bool relu;			/* a Relu, or a Clip to [0, clip] */
	double clip;			/* the Clip's ceiling; 0: a Relu */
};

/* Classifies the epilogue nodes[1..n); false when cuDNN's fused call cannot take them. */
static bool epilogue(struct graph *g, const int *nodes, int n_nodes, struct fused *f)
{
	const struct node *a = &g->nodes.v[nodes[0]];
	int64_t m = node_out(g, a, 0)->shape.d[1].c;
	int v = a->out[0];

	f->bias = node_in(g, a, 2) ? a->in[2] : -1;
	f->z = -1;
	f->relu = false;
	f->clip = 0;
	for (int i = 1; i < n_nodes; i++) {
		const struct node *e = &g->nodes.v[nodes[i]];

		if (f->relu || !libcall_epilogue_shaped(g, e, v))
			return false;
		if (e->op == OP_ADD) {
			int other = e->in[0] == v ? e->in[1] : e->in[0];
			const struct value *x = &g->values.v[other];

			if ((e->in[0] == v) == (e->in[1] == v))
				return false;
			if (f->bias < 0 && channel_bias(x, m))
				f->bias = other;
			else if (f->z < 0 && libcall_epilogue_shaped(g, e, other))
				f->z = other;	/* same shape as the output: no broadcast */
			else
				return false;
		} else if (e->op == OP_RELU) {
			f->relu = true;
		} else if (e->op == OP_CLIP) {
			struct lower_res_act ra;

			/* constant bounds 0 and c > 0: cuDNN's clipped Relu */
			if (!lower_res_act(g, &nodes[i], 1, v, &ra) || ra.act != 2 || ra.lo != 0 ||
			    !(ra.hi > 0))
				return false;
			f->relu = true;
			f->clip = ra.hi;
		} else {
			return false;
		}
		v = e->out[0];
	}
	return true;
}

static bool cudnn_check(struct graph *g, const int *nodes, int n_nodes)
{
	const struct node *a = &g->nodes.v[nodes[0]];
	struct window win;
	struct fused f;

	return a->op == OP_CONV && conv_window(g, a, &win) &&
	       epilogue(g, nodes, n_nodes, &f);
}

/* ---- relay_to_tir ---- */

/*
 * One kernel: the parameters x, w, (bias), (z), y and one call of
 * rt_cudnn_conv with the sizes, the window, the group, the Relu and each
 * argument's flags.
 */
static int cudnn_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	const struct node *a = &g->nodes.v[p->nodes[0]];
	const struct value *x = node_in(g, a, 0), *w = node_in(g, a, 1);
	int out_v = g->nodes.v[p->nodes[p->n_nodes - 1]].out[0];
	struct tir_buf *bx, *bw, *bb = NULL, *bz = NULL, *by;
	struct tir *args[40];
	struct tir_builder b;
	struct kernel k = { 0 };
	struct window win;
	struct fused f;
	int na = 0, vals[5];

	(void)t;
	if (!conv_window(g, a, &win) || !epilogue(g, p->nodes, p->n_nodes, &f))
		BUG("cudnn: a partition its check would not take");
	tir_builder_init(&b, g->arena, arena_printf(g->arena, "k%d_cudnn_conv%s%s%s", p->id,
						    f.bias >= 0 ? "_bias" : "",
						    f.z >= 0 ? "_add" : "",
						    f.clip > 0 ? "_clip" : f.relu ? "_relu" : ""));
	k.args = arena_alloc(g->arena, sizeof(int) * 5);
	bx = libcall_param(&b, &k, "x", DTYPE_F32, a->in[0]);
	bw = libcall_param(&b, &k, "w", DTYPE_F32, a->in[1]);
	if (f.bias >= 0)
		bb = libcall_param(&b, &k, "bias", DTYPE_F32, f.bias);
	if (f.z >= 0)
		bz = libcall_param(&b, &k, "z", DTYPE_F32, f.z);
	k.n_inputs = k.n_args;
	by = libcall_param(&b, &k, "y", DTYPE_F32, out_v);
	args[na++] = tir_addr(&b, bx, tir_int(&b, 0));
	args[na++] = tir_addr(&b, bw, tir_int(&b, 0));
	args[na++] = bb ? tir_addr(&b, bb, tir_int(&b, 0)) : tir_int(&b, 0);
	args[na++] = bz ? tir_addr(&b, bz, tir_int(&b, 0)) : tir_int(&b, 0);
	args[na++] = tir_addr(&b, by, tir_int(&b, 0));
	args[na++] = tir_dim(&b, x->shape.d[0]);
	args[na++] = tir_int(&b, x->shape.d[1].c);
	args[na++] = tir_int(&b, win.in[0]);
	args[na++] = tir_int(&b, win.in[1]);
	args[na++] = tir_int(&b, w->shape.d[0].c);
	args[na++] = tir_int(&b, win.k[0]);
	args[na++] = tir_int(&b, win.k[1]);
	args[na++] = tir_int(&b, win.out[0]);
	args[na++] = tir_int(&b, win.out[1]);
	args[na++] = tir_int(&b, win.pb[0]);
	args[na++] = tir_int(&b, win.pb[1]);
	args[na++] = tir_int(&b, win.s[0]);
	args[na++] = tir_int(&b, win.s[1]);
	args[na++] = tir_int(&b, win.d[0]);
	args[na++] = tir_int(&b, win.d[1]);
	args[na++] = tir_int(&b, node_attr_int(a, "group", 1));
	args[na++] = tir_int(&b, f.relu);
	args[na++] = tir_flt(&b, DTYPE_F64, f.clip);
	vals[0] = a->in[0];
	vals[1] = a->in[1];
	vals[2] = f.bias;
	vals[3] = f.z;
	vals[4] = out_v;
	na += cuda_flag_args(&b, g, vals, 5, 4, args + na);
	tir_extern(&b, "rt_cudnn_conv", args, na);
	libcall_kernel_done(&b, &k, p);
	return 0;
}

/* ---- tir_to_runtime ---- */

static int cudnn_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
				struct runtime_module *m)
{
	return cuda_library_module(g, t, p, m, "rt_cudnn.h", "struct rt_cudnn_cache");
}

/* Compiling also needs cudnn.h beside CUDA's headers. */
static const char *cudnn_unavailable(void)
{
	const char *why = cuda_unavailable();
	static char path[4200];

	if (why)
		return why;
	snprintf(path, sizeof(path), "%s/cudnn.h", cuda_include_dir());
	return access(path, R_OK) == 0 ? NULL : "no cudnn.h beside CUDA's headers (cuDNN 9)";
}

const struct target_kind target_kind_cudnn = {
	.api_version = TARGET_API_VERSION,
	.name = "cudnn",
	.device = "gpu",
	.description = "cuDNN convolutions on the cuda target's device memory: float32 2-D Conv "
		       "with a bias, residual Add and Relu fused",
	.options = NULL,
	.unavailable = cudnn_unavailable,
	.cannot_run = cuda_cannot_run,
	/* cuDNN's float32 convolutions (no TF32) on an H100/H200 class GPU */
	.nominal_flops = 2.5e13,
	.nominal_bytes = 2.5e12,
	.nominal_overhead = 8e-6,
	.nominal_transfer = 2e-5,
	.memory = "cuda",
	.patterns = "cudnn.pat",
	.pattern_check = cudnn_check,
	.relay_to_tir = cudnn_relay_to_tir,
	.tir_to_runtime = cudnn_tir_to_runtime,
};
