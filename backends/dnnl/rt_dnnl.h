/*
 * rt_dnnl.h - the run-time half of the dnnl target. collagec embeds this file
 * and the target hands it over as its runtime modules' prelude, so it is
 * pasted once into every model.c with partitions on dnnl, before the kernels.
 *
 * Each dnnl kernel owns a static struct rt_dnnl_cache and calls
 * collagec_dnnl_conv or collagec_dnnl_matmul with it, its buffers, its
 * shapes (symbolic dims evaluated at run time), the fused epilogue as up to
 * RT_DNNL_MAX_PO post-ops and its `threads`. The first call with a set of
 * arguments (a value of the symbolic dims, a thread count, weights at an
 * address) creates the oneDNN primitive for it and keeps it in the cache,
 * next to those of other argument sets (RT_DNNL_MAX_SHAPES of them, the
 * oldest replaced after): a model run at two batch sizes in turn creates
 * each primitive once per batch size, not once per run. Constant weights
 * reordered for one entry serve every entry of the kernel whose primitive
 * chose the same layout for them (struct rt_dnnl_wei, reference-counted):
 * they are reordered, and held, once per layout oneDNN picks, however many
 * batch sizes share it. The executor's buffers are plain
 * (nchw, row-major), except those the compiler marked blocked (the `lay`
 * bits of conv and pool): values that dnnl Convs and pools hand to each
 * other, in rt_dnnl_layout's channel blocks, so that a chain of them runs
 * without reorders. A MatMul reads and writes plain buffers directly. A Conv
 * declares its src and dst with format `any`: where oneDNN's fastest
 * implementation wants other layouts than the buffers' (nChw8c with AVX2
 * for a plain buffer), the kernel reorders x into a buffer of its own and
 * the result back into y at its edges (far faster than the plain-layout gemm
 * convolution, reorders included; README.md, "Measurements behind the code"),
 * and values between Convs stay blocked. Constant weights are declared with
 * format `any` too and reordered into the chosen layout ONCE, when the first
 * primitive choosing that layout is made; weights computed at run time are
 * read in place in their plain layout. An add of a tensor shaped like the
 * output as the first post-op becomes a sum post-op (the tensor copied or
 * reordered into dst first), which oneDNN fuses better than a binary add (and
 * which its blocked convolutions take where they refuse a plain full-size
 * binary). A 3x3 stride-1 Conv for which oneDNN has no Winograd (hosts
 * without AVX-512) may run by collagec's instead, its transforms around a
 * oneDNN matmul (rt_dnnl_wino, below).
 *
 * The process has one CPU engine and one stream, made by the first call.
 * One mutex serialises every call (primitive creation, the reorder, and the
 * execution), so handles of a model used from several threads stay correct,
 * and so one scratchpad serves every primitive: they are made in oneDNN's
 * user scratchpad mode, each creation grows the shared buffer to what the
 * primitive asks for (dnnl_query_scratchpad_md), and each execution passes
 * it as DNNL_ARG_SCRATCHPAD. It cannot live in the model's planned arena:
 * its size is known only once oneDNN has chosen an implementation, at run
 * time on the machine that runs the model (collagec never loads oneDNN).
 *
 * Threads: Debian's oneDNN is built on OpenMP and uses omp_get_max_threads()
 * threads, fixed when a primitive is created. OUT.so defines the OpenMP
 * entry points oneDNN calls, so its parallel regions run on the model's own
 * pool (below, and rt_par.c). The helpers set the count to the kernel's
 * `threads` around creation and execution (in libgomp's per-thread state,
 * which every model in the process reads) and restore it after; the thread
 * count is part of the cache key. Their own loops (the Winograd transforms,
 * the blocked pools, the channel scale) run on the pool with rt_par_for.
 *
 * The standalone ops (collagec_dnnl_pool, _eltwise, _softmax, _bnorm, _lnorm,
 * _lrn) make one primitive each (HardSigmoid two eltwise ones) over the
 * plain buffers, with no reorders, except pooling. A pool of 1 or 2
 * spatial dims whose x comes blocked runs no oneDNN at all but our own
 * vectorised kernel on that layout, writing y blocked or plain as the
 * caller expects (rt_dnnl_bpool_run: oneDNN 2.6's pooling is slow on every
 * layout). Other pools stay oneDNN's: on nchw it runs its reference
 * pooling, so the pool reorders x to channels-last for its jit one; a
 * blocked x is read as it is. collagec_dnnl_scale (a Mul by one value per
 * channel) is ours too, on either layout, and so is collagec_dnnl_se, a
 * whole squeeze-and-excitation block in one call.
 * collagec_dnnl_deconv (ConvTranspose) is made and run like a Conv.
 *
 * A failing oneDNN call reports through collagec_rt_abort() (prints and
 * aborts unless the program defines its own; if that returns, the kernel
 * returns without computing its output).
 */
#ifndef COLLAGEC_RT_DNNL_H
#define COLLAGEC_RT_DNNL_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "rt_wino.h"

#define RT_DNNL_MAX_PO 6		/* post-ops per kernel */
#define RT_DNNL_MAX_KEY 64		/* int64 words of a cache key */
#define RT_DNNL_MAX_SHAPES 8		/* cached argument sets per kernel */
#define RT_DNNL_MAX_ARGS (5 + RT_DNNL_MAX_PO)	/* execution arguments of a primitive */

/* Post-op codes of the call (an epilogue op each, HardSigmoid two). */
enum rt_dnnl_po {
	RT_DNNL_PO_NONE,
	RT_DNNL_PO_RELU,		/* alpha: negative slope (LeakyRelu) */
	RT_DNNL_PO_TANH,
	RT_DNNL_PO_ELU,			/* alpha */
	RT_DNNL_PO_LINEAR,		/* alpha * x + beta */
	RT_DNNL_PO_LOGISTIC,
	RT_DNNL_PO_CLIP,		/* [alpha, beta] */
	RT_DNNL_PO_HARDSWISH,
	RT_DNNL_PO_EXP,
	RT_DNNL_PO_ABS,
	RT_DNNL_PO_GELU_ERF,
	RT_DNNL_PO_GELU_TANH,
	RT_DNNL_PO_ADD0,		/* + binary operand e0 */
	RT_DNNL_PO_ADD1,		/* + binary operand e1 */
	RT_DNNL_PO_SWISH,		/* x * sigmoid(alpha * x): SiLU at alpha 1 */
	RT_DNNL_PO_COUNT
};

/* How a binary operand broadcasts over the kernel's dst. */
enum rt_dnnl_bcast {
	RT_DNNL_BC_NONE,		/* no operand */
	RT_DNNL_BC_FULL,		/* dst's shape */
	RT_DNNL_BC_SCALAR,
	RT_DNNL_BC_CHANNEL,		/* dim 1 only (conv: channels) */
	RT_DNNL_BC_LAST,		/* the last dim only */
	RT_DNNL_BC_COUNT
};

struct rt_dnnl_wino;

/* A kernel's cached primitive. Zero-initialised (static) = not made yet. */
struct rt_dnnl_kernel {
	int made;
	int64_t key[RT_DNNL_MAX_KEY];	/* the arguments it was made for */
	int nkey;
	dnnl_primitive_t prim;
	dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md, bin_md[2];	/* the primitive's */
	dnnl_memory_desc_t user_src, user_dst;	/* the layouts of the buffers x, y */
	dnnl_memory_desc_t user_sum;	/* the summed operand's */
	int has_bias;
	int sum;			/* post-op sum - 1 is a sum of its operand; 0: none */
	struct rt_dnnl_wei *wei;	/* reordered weights it holds a reference to, or NULL */
	dnnl_memory_t wei_mem;		/* wei->mem, or NULL */
	/* weights computed at run time, reordered each run to wei_md, or NULL */
	dnnl_primitive_t wei_in;
	dnnl_memory_desc_t user_wei;	/* their layout */
	void *wei_buf;			/* where wei_in puts them */
	dnnl_primitive_t src_in;	/* user src -> src_md, or NULL: same layout */
	dnnl_primitive_t dst_in;	/* user dst -> dst_md (the summed operand), or NULL */
	dnnl_primitive_t dst_out;	/* dst_md -> user dst, or NULL */
	void *src_buf, *dst_buf;	/* x and y in the primitive's layouts */
	dnnl_memory_desc_t aux_md[4];	/* the other operands of the standalone ops */
	dnnl_primitive_t prim2;		/* an eltwise's second algorithm, or NULL */
	dnnl_memory_desc_t pad_md, pad2_md;	/* prim's, prim2's scratchpads (size 0: none) */
	dnnl_exec_arg_t args[RT_DNNL_MAX_ARGS];	/* rt_dnnl_exec's, made by its first run */
	int nargs;
	struct rt_dnnl_wino *wino;	/* collagec's Winograd around prim (a matmul), or NULL */
	int swish;			/* dst = swish(dst) after prim (rt_dnnl_own_swish) */
	float swish_alpha;		/* its alpha: x sigmoid(alpha x) */
	int swish_nt;			/* the threads it runs on */
};

/*
 * Constant weights reordered into a layout a primitive chose, shared by the
 * entries of one cache whose primitives chose the same layout for the same
 * user weights: a model run at several batch sizes keeps one copy of each
 * weight per layout, not one per size, and reorders it once. refs counts
 * the entries holding it; the last to be released frees it.
 */
struct rt_dnnl_wei {
	int refs;			/* entries using it; 0: a free slot */
	const void *w;			/* the user's weights it was reordered from */
	dnnl_memory_desc_t user, md;	/* their layout, and the one reordered into */
	void *buf;			/* the reordered weights, in layout md */
	dnnl_memory_t mem;		/* over buf */
};

/*
 * A kernel's primitives, one entry per set of arguments (a shape of its
 * symbolic dims, a thread count): up to RT_DNNL_MAX_SHAPES of them, the
 * oldest replaced after. Zero-initialised (static) = empty.
 *
 * The shared reordered weights live here, next to the entries, rather than
 * in one registry of the process: weights are a kernel's own constants (no
 * other kernel passes the same pointer), so a kernel's entries are all that
 * could share them, and the slots need no lookup beyond these few. Each
 * entry holds at most one reference and rt_dnnl_cached releases an entry
 * before it is made again, so RT_DNNL_MAX_SHAPES slots never run out.
 */
struct rt_dnnl_cache {
	struct rt_dnnl_kernel e[RT_DNNL_MAX_SHAPES];
	struct rt_dnnl_wei wei[RT_DNNL_MAX_SHAPES];	/* reordered weights, shared */
	int last;			/* the entry used last */
	int next;			/* the entry a new key takes */
	int listed;			/* in rt_dnnl.caches */
	struct rt_dnnl_cache *more;	/* the next in rt_dnnl.caches */
};

static struct {
	pthread_mutex_t lock;
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	void *pad;			/* the scratchpad every primitive shares */
	size_t pad_size;
	float *ws;			/* the Winograd convolutions' V and O, shared */
	size_t ws_size;			/* its floats */
	struct rt_dnnl_cache *caches;	/* those with entries: released at the last close */
} rt_dnnl = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, 0, NULL, 0, NULL };

/*
 * Creates primitive descriptor *pd of op desc with attr (NULL: none), its
 * scratchpad managed here (oneDNN's user mode): its layout goes to *pad,
 * and the shared scratchpad grows to hold it. Every call runs under
 * rt_dnnl.lock, so one scratchpad serves every primitive of the process.
 */
static dnnl_status_t rt_dnnl_pd(dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
				const_dnnl_primitive_attr_t attr, dnnl_memory_desc_t *pad)
{
	dnnl_primitive_attr_t a = NULL;
	dnnl_status_t st;
	size_t size;

	*pd = NULL;
	st = attr ? dnnl_primitive_attr_clone(&a, attr) : dnnl_primitive_attr_create(&a);
	if (st == dnnl_success)
		st = dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
	if (st == dnnl_success)
		st = dnnl_primitive_desc_create(pd, desc, a, rt_dnnl.engine, NULL);
	if (a)
		dnnl_primitive_attr_destroy(a);
	if (st != dnnl_success)
		return st;
	*pad = *dnnl_primitive_desc_query_md(*pd, dnnl_query_scratchpad_md, 0);
	size = dnnl_memory_desc_get_size(pad);
	if (size > rt_dnnl.pad_size) {
		void *p = aligned_alloc(64, (size + 63) / 64 * 64);

		if (!p)
			return dnnl_out_of_memory;
		free(rt_dnnl.pad);
		rt_dnnl.pad = p;
		rt_dnnl.pad_size = size;
	}
	return dnnl_success;
}

/* Reports a failed oneDNN call of kernel `name`; nonzero when it failed. */
static int rt_dnnl_fail(dnnl_status_t st, const char *name, const char *what)
{
	char msg[256];

	if (st == dnnl_success)
		return 0;
	snprintf(msg, sizeof(msg), "dnnl kernel %s: %s: %s", name, what, dnnl_status2str(st));
	collagec_rt_abort(msg);
	return 1;
}

static int rt_dnnl_engine(const char *name)
{
	if (rt_dnnl.stream)
		return 0;
	if (rt_dnnl_fail(dnnl_engine_create(&rt_dnnl.engine, dnnl_cpu, 0), name, "cpu engine") ||
	    rt_dnnl_fail(dnnl_stream_create(&rt_dnnl.stream, rt_dnnl.engine,
					    dnnl_stream_default_flags), name, "stream"))
		return -1;
	return 0;
}

/* A dense row-major descriptor of dims d and element type dt. */
static dnnl_status_t rt_dnnl_dense(dnnl_memory_desc_t *md, int nd, const int64_t *d,
				   dnnl_data_type_t dt)
{
	dnnl_dims_t dims, strides;
	int64_t s = 1;

	for (int i = nd - 1; i >= 0; i--) {
		dims[i] = d[i];
		strides[i] = s;
		s *= d[i] > 0 ? d[i] : 1;
	}
	return dnnl_memory_desc_init_by_strides(md, nd, dims, dt, strides);
}

/* A dense row-major float32 descriptor of dims d (strides from the dims). */
static dnnl_status_t rt_dnnl_plain(dnnl_memory_desc_t *md, int nd, const int64_t *d)
{
	return rt_dnnl_dense(md, nd, d, dnnl_f32);
}

/* Layout bits of a call: which buffers the compiler marked blocked. */
enum rt_dnnl_lay {
	RT_DNNL_LAY_SRC = 1 << 0,	/* x */
	RT_DNNL_LAY_DST = 1 << 1,	/* y */
	RT_DNNL_LAY_SUM = 1 << 2,	/* the residual add's summed operand */
};

/* The channel block of blocked buffers: what oneDNN's f32 kernels use here. */
static int64_t rt_dnnl_block(void)
{
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();

	return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
}

/*
 * Whether a buffer of nd dims (3 to 5 of them) marked `blocked` is: its
 * channels (dim 1) in blocks of rt_dnnl_block(), the last one padded with
 * zeros where they are no multiple of it (the compiler planned the buffer
 * with room for RT_DNNL_MAX_BLOCK-padded channels; oneDNN zeroes the
 * padding of the memories it is given and keeps it zero in what it writes).
 */
static int rt_dnnl_blocks(int nd, int blocked)
{
	return blocked && nd >= 3 && nd <= 5;
}

/* The layout of a buffer of dims d: blocked as rt_dnnl_blocks says, or plain. */
static dnnl_status_t rt_dnnl_layout(dnnl_memory_desc_t *md, int nd, const int64_t *d,
				    int blocked)
{
	static const dnnl_format_tag_t b8[6] = { [3] = dnnl_aBc8b, [4] = dnnl_aBcd8b,
						  [5] = dnnl_aBcde8b };
	static const dnnl_format_tag_t b16[6] = { [3] = dnnl_aBc16b, [4] = dnnl_aBcd16b,
						   [5] = dnnl_aBcde16b };
	int64_t blk = rt_dnnl_block();
	dnnl_dims_t dims;

	if (!rt_dnnl_blocks(nd, blocked))
		return rt_dnnl_plain(md, nd, d);
	for (int i = 0; i < nd; i++)
		dims[i] = d[i];
	return dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, blk == 16 ? b16[nd] : b8[nd]);
}

/* The descriptor of a binary operand broadcasting as bc over dst dims d. */
static dnnl_status_t rt_dnnl_bin_md(dnnl_memory_desc_t *md, int nd, const int64_t *d, int bc)
{
	int64_t e[DNNL_MAX_NDIMS];

	for (int i = 0; i < nd; i++)
		e[i] = bc == RT_DNNL_BC_FULL || (bc == RT_DNNL_BC_CHANNEL && i == 1) ||
		       (bc == RT_DNNL_BC_LAST && i == nd - 1) ? d[i] : 1;
	return rt_dnnl_plain(md, nd, e);
}

/*
 * 1 when the first post-op adds a tensor shaped like dst (k->sum), else 0.
 * Only there: oneDNN 2.6's optimised convolutions take a sum after other
 * post-ops from none of them (a binary add, then a sum fell to its
 * reference convolution).
 */
static int rt_dnnl_sum_at(const int *po, int bc0, int bc1)
{
	return (po[0] == RT_DNNL_PO_ADD0 && bc0 == RT_DNNL_BC_FULL) ||
	       (po[0] == RT_DNNL_PO_ADD1 && bc1 == RT_DNNL_BC_FULL);
}

/* Drops a reference to reordered weights ws, freeing them with the last. */
static void rt_dnnl_wei_put(struct rt_dnnl_wei *ws)
{
	if (--ws->refs > 0)
		return;
	if (ws->mem)
		dnnl_memory_destroy(ws->mem);
	free(ws->buf);
	memset(ws, 0, sizeof(*ws));
}

static void rt_dnnl_release(struct rt_dnnl_kernel *k)
{
	if (k->prim)
		dnnl_primitive_destroy(k->prim);
	if (k->src_in)
		dnnl_primitive_destroy(k->src_in);
	if (k->dst_in)
		dnnl_primitive_destroy(k->dst_in);
	if (k->dst_out)
		dnnl_primitive_destroy(k->dst_out);
	if (k->prim2)
		dnnl_primitive_destroy(k->prim2);
	if (k->wei_in)
		dnnl_primitive_destroy(k->wei_in);
	free(k->wei_buf);
	for (int i = 0; i < k->nargs; i++)
		if (k->args[i].memory != k->wei_mem)
			dnnl_memory_destroy(k->args[i].memory);
	if (k->wei)
		rt_dnnl_wei_put(k->wei);
	free(k->wino);
	free(k->src_buf);
	free(k->dst_buf);
	memset(k, 0, sizeof(*k));
}

/*
 * Post-op attributes for the codes po[] (with alpha a[], beta b[]) over dst
 * dims d; binary operands broadcast as bc0, bc1. Fills k->bin_md. With
 * k->sum, post-op k->sum - 1 (an add of a tensor shaped like dst) is a sum
 * post-op instead: the tensor is put in dst before the primitive runs.
 */
static dnnl_status_t rt_dnnl_attr(struct rt_dnnl_kernel *k, dnnl_primitive_attr_t *attr,
				  int nd, const int64_t *d, int bc0, int bc1, const int *po,
				  const float *a, const float *b)
{
	static const dnnl_alg_kind_t alg[RT_DNNL_PO_COUNT] = {
		[RT_DNNL_PO_RELU] = dnnl_eltwise_relu,
		[RT_DNNL_PO_TANH] = dnnl_eltwise_tanh,
		[RT_DNNL_PO_ELU] = dnnl_eltwise_elu,
		[RT_DNNL_PO_LINEAR] = dnnl_eltwise_linear,
		[RT_DNNL_PO_LOGISTIC] = dnnl_eltwise_logistic,
		[RT_DNNL_PO_CLIP] = dnnl_eltwise_clip,
		[RT_DNNL_PO_HARDSWISH] = dnnl_eltwise_hardswish,
		[RT_DNNL_PO_EXP] = dnnl_eltwise_exp,
		[RT_DNNL_PO_ABS] = dnnl_eltwise_abs,
		[RT_DNNL_PO_GELU_ERF] = dnnl_eltwise_gelu_erf,
		[RT_DNNL_PO_GELU_TANH] = dnnl_eltwise_gelu_tanh,
		[RT_DNNL_PO_SWISH] = dnnl_eltwise_swish,
	};
	dnnl_post_ops_t ops = NULL;
	dnnl_status_t st;

	if ((st = dnnl_primitive_attr_create(attr)) != dnnl_success)
		return st;
	if ((st = dnnl_post_ops_create(&ops)) != dnnl_success)
		return st;
	if (bc0 && (st = rt_dnnl_bin_md(&k->bin_md[0], nd, d, bc0)) != dnnl_success)
		goto out;
	if (bc1 && (st = rt_dnnl_bin_md(&k->bin_md[1], nd, d, bc1)) != dnnl_success)
		goto out;
	for (int i = 0; i < RT_DNNL_MAX_PO && st == dnnl_success; i++) {
		if (po[i] == RT_DNNL_PO_NONE || po[i] >= RT_DNNL_PO_COUNT)
			continue;
		if (i == k->sum - 1)
			st = dnnl_post_ops_append_sum(ops, 1.0f);
		else if (po[i] == RT_DNNL_PO_ADD0 || po[i] == RT_DNNL_PO_ADD1)
			st = dnnl_post_ops_append_binary(ops, dnnl_binary_add,
							 &k->bin_md[po[i] - RT_DNNL_PO_ADD0]);
		else
			st = dnnl_post_ops_append_eltwise(ops, 1.0f, alg[po[i]], a[i], b[i]);
	}
	if (st == dnnl_success)
		st = dnnl_primitive_attr_set_post_ops(*attr, ops);
out:
	dnnl_post_ops_destroy(ops);
	return st;
}

/* A reorder primitive from layout a to layout b. */
static int rt_dnnl_reorder(dnnl_primitive_t *r, const dnnl_memory_desc_t *a,
			   const dnnl_memory_desc_t *b, const char *name)
{
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_engine_t e = rt_dnnl.engine;
	int rc = 0;

	if (rt_dnnl_fail(dnnl_reorder_primitive_desc_create(&rpd, a, e, b, e, NULL), name,
			 "reorder") ||
	    rt_dnnl_fail(dnnl_primitive_create(r, rpd), name, "reorder"))
		rc = -1;
	if (rpd)
		dnnl_primitive_desc_destroy(rpd);
	return rc;
}

/* Runs reorder r from buffer a (layout ma) to buffer b (layout mb). */
static int rt_dnnl_move(dnnl_primitive_t r, const dnnl_memory_desc_t *ma, const void *a,
			const dnnl_memory_desc_t *mb, void *b, const char *name)
{
	dnnl_memory_t from = NULL, to = NULL;
	dnnl_exec_arg_t args[2];
	int rc = -1;

	if (!rt_dnnl_fail(dnnl_memory_create(&from, ma, rt_dnnl.engine, (void *)a), name,
			  "memory") &&
	    !rt_dnnl_fail(dnnl_memory_create(&to, mb, rt_dnnl.engine, b), name, "memory")) {
		args[0].arg = DNNL_ARG_FROM;
		args[0].memory = from;
		args[1].arg = DNNL_ARG_TO;
		args[1].memory = to;
		if (!rt_dnnl_fail(dnnl_primitive_execute(r, rt_dnnl.stream, 2, args), name,
				  "reorder"))
			rc = 0;
	}
	if (from)
		dnnl_memory_destroy(from);
	if (to)
		dnnl_memory_destroy(to);
	return rc;
}

/* A buffer for layout md (one spare byte: never malloc(0)); NULL on failure. */
static void *rt_dnnl_buf(const dnnl_memory_desc_t *md)
{
	void *p = malloc(dnnl_memory_desc_get_size(md) + 1);

	if (!p)
		collagec_rt_abort("dnnl: out of memory for a layout buffer");
	return p;
}

/*
 * Where k->src_md and k->dst_md, the layouts k computes in, are not the
 * buffers' (k->user_src, k->user_dst, k->user_sum), reorders at the
 * kernel's edges and buffers.
 */
static int rt_dnnl_edges_to(struct rt_dnnl_kernel *k, const char *name)
{
	if (!dnnl_memory_desc_equal(&k->src_md, &k->user_src) &&
	    (!(k->src_buf = rt_dnnl_buf(&k->src_md)) ||
	     rt_dnnl_reorder(&k->src_in, &k->user_src, &k->src_md, name) < 0))
		return -1;
	if (!dnnl_memory_desc_equal(&k->dst_md, &k->user_dst) &&
	    (!(k->dst_buf = rt_dnnl_buf(&k->dst_md)) ||
	     rt_dnnl_reorder(&k->dst_out, &k->dst_md, &k->user_dst, name) < 0))
		return -1;
	if (k->sum && !dnnl_memory_desc_equal(&k->dst_md, &k->user_sum) &&
	    rt_dnnl_reorder(&k->dst_in, &k->user_sum, &k->dst_md, name) < 0)
		return -1;
	return 0;
}

/*
 * What k computes from, into dst (y or k->dst_buf): x, or x reordered
 * into k->src_buf where k's layout is another; with k->sum, the summed
 * operand se put into dst first. NULL when a reorder failed.
 */
static const void *rt_dnnl_edges_in(struct rt_dnnl_kernel *k, const char *name, const float *x,
				    const float *se, void *dst)
{
	const void *src = x;

	if (k->src_in) {
		if (rt_dnnl_move(k->src_in, &k->user_src, x, &k->src_md, k->src_buf, name) < 0)
			return NULL;
		src = k->src_buf;
	}
	if (k->sum && k->dst_in) {
		if (rt_dnnl_move(k->dst_in, &k->user_sum, se, &k->dst_md, dst, name) < 0)
			return NULL;
	} else if (k->sum && (const void *)se != dst) {
		memcpy(dst, se, dnnl_memory_desc_get_size(&k->dst_md));
	}
	return src;
}

/* The layouts the primitive pd chose for src and dst, with rt_dnnl_edges_to. */
static int rt_dnnl_edges(struct rt_dnnl_kernel *k, const char *name,
			 const_dnnl_primitive_desc_t pd)
{
	k->src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
	k->dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	return rt_dnnl_edges_to(k, name);
}

/*
 * Points entry k at the user's weights w (layout user) reordered into
 * layout want: those of another entry of cache c where one reordered the
 * same w from the same layout into the same one, else a free slot of c's
 * reordered now, from src (w itself, or what the kernel computed from w
 * in layout user: a Winograd convolution's transformed weights). The
 * entry holds a reference (rt_dnnl_release drops it). On failure no slot
 * is taken: none holds half-reordered weights.
 */
static int rt_dnnl_wei_get(struct rt_dnnl_cache *c, struct rt_dnnl_kernel *k,
			   const char *name, const dnnl_memory_desc_t *user,
			   const dnnl_memory_desc_t *want, const float *w, const float *src)
{
	struct rt_dnnl_wei *ws = NULL;
	dnnl_primitive_t reorder = NULL;
	int rc = -1;

	for (int i = 0; i < RT_DNNL_MAX_SHAPES; i++) {
		ws = &c->wei[i];
		if (ws->refs && ws->w == (const void *)w &&
		    dnnl_memory_desc_equal(&ws->user, user) &&
		    dnnl_memory_desc_equal(&ws->md, want))
			goto found;
	}
	for (ws = c->wei; ws < c->wei + RT_DNNL_MAX_SHAPES && ws->refs; ws++)
		;
	if (ws == c->wei + RT_DNNL_MAX_SHAPES) {
		collagec_rt_abort("dnnl: no free slot for reordered weights");
		return -1;
	}
	ws->w = w;
	ws->user = *user;
	ws->md = *want;
	if ((ws->buf = rt_dnnl_buf(want)) &&
	    !rt_dnnl_fail(dnnl_memory_create(&ws->mem, want, rt_dnnl.engine, ws->buf), name,
			  "weights memory") &&
	    rt_dnnl_reorder(&reorder, user, want, name) == 0 &&
	    rt_dnnl_move(reorder, user, src, want, ws->buf, name) == 0 &&
	    !rt_dnnl_fail(dnnl_stream_wait(rt_dnnl.stream), name, "weights reorder"))
		rc = 0;
	if (reorder)
		dnnl_primitive_destroy(reorder);
	if (rc < 0) {
		ws->refs = 1;
		rt_dnnl_wei_put(ws);
		return -1;
	}
found:
	ws->refs++;
	k->wei = ws;
	k->wei_mem = ws->mem;
	return 0;
}

/*
 * Makes k->prim from op descriptor desc (src and dst layouts possibly
 * `any`: rt_dnnl_edges); with wconst, the user's weights w (layout
 * user_wei) in the layout the primitive chose: reordered once per layout,
 * shared by the entries of cache c that chose the same (rt_dnnl_wei_get).
 * Weights a run computes (!wconst) that the primitive wants in another
 * layout are reordered by each run (k->wei_in): a 1x1 convolution's
 * M x C of them cost less than the image's reorders around a convolution
 * that took them as they are.
 */
static int rt_dnnl_make(struct rt_dnnl_cache *c, struct rt_dnnl_kernel *k, const char *name,
			const_dnnl_op_desc_t desc, dnnl_primitive_attr_t attr,
			const dnnl_memory_desc_t *user_wei, const float *w, int wconst)
{
	dnnl_primitive_desc_t pd = NULL;
	const dnnl_memory_desc_t *want;
	int rc = -1;

	if (rt_dnnl_fail(rt_dnnl_pd(&pd, desc, attr, &k->pad_md), name, "no implementation"))
		return -1;
	want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	k->wei_md = *want;
	if (rt_dnnl_fail(dnnl_primitive_create(&k->prim, pd), name, "primitive") ||
	    rt_dnnl_edges(k, name, pd) < 0)
		goto out;
	if (wconst && !dnnl_memory_desc_equal(want, user_wei) &&
	    rt_dnnl_wei_get(c, k, name, user_wei, want, w, w) < 0)
		goto out;
	if (!wconst && !dnnl_memory_desc_equal(want, user_wei)) {
		k->user_wei = *user_wei;
		if (!(k->wei_buf = rt_dnnl_buf(want)) ||
		    rt_dnnl_reorder(&k->wei_in, user_wei, want, name) < 0)
			goto out;
	}
	rc = 0;
out:
	dnnl_primitive_desc_destroy(pd);
	return rc;
}

/*
 * ---- swish (SiLU) after a primitive: x sigmoid(alpha x) ----
 *
 * oneDNN 2.6's swish post-op took about 0.5 ns an element on an AVX-512
 * EPYC (EfficientNet-B0's 1x1 16 -> 96 Conv at 112x112: 1.5 ms with it, 0.9
 * without, one thread), a third of the network's run; the same swish as a
 * pass over dst after the primitive, rt_model.h's inline rt_expf vectorised
 * in place, reads dst back from the cache and costs a fraction of that
 * (EfficientNet-B0 at one thread 15.0 -> 12.6-13.9 ms, interleaved). So a
 * swish that ends a Conv's or MatMul's post-op chain is left out of the
 * primitive's attributes and run here (on AVX-512 by rt_dnnl_vswish); one
 * thread computes each element whatever the count, so the result does not
 * depend on it.
 */
struct rt_dnnl_swish_job {
	float *y;
	int64_t n;
	float alpha;
};

#ifdef __AVX512F__
#include <immintrin.h>

/*
 * x / (1 + rt_expf_poly(na x)) on 16 lanes, by rt_expf_poly's steps: its
 * clamps as max and min (a NaN passes through), rint by the same fused
 * add of 1.5 * 2^23, its 2^n as vscalefps (one rounding, as its two
 * products round once): the same results as the scalar loop, which GCC
 * vectorised with the clamps as compares and blends and the division
 * twice, 0.42 ns an element against 0.27 here (AMD EPYC with AVX-512).
 */
static inline __m512 rt_dnnl_vswish(__m512 x, __m512 na)
{
	const __m512 magic = _mm512_set1_ps(12582912.0f);
	__m512 c = _mm512_mul_ps(x, na), n, r, p;

	c = _mm512_max_ps(_mm512_set1_ps(-104.0f), c);
	c = _mm512_min_ps(_mm512_set1_ps(89.0f), c);
	n = _mm512_sub_ps(_mm512_fmadd_ps(c, _mm512_set1_ps(1.44269504f), magic), magic);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), c);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
	p = _mm512_set1_ps(8.2903146330e-03f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1897929337e-02f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6667636196e-01f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999149530e-01f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(9.9999970719e-01f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_scalef_ps(p, n);
	return _mm512_div_ps(x, _mm512_add_ps(p, _mm512_set1_ps(1.0f)));
}
#endif

#define RT_DNNL_SWISH_CHUNK 4096	/* floats a job step takes */

/* Steps [lo, hi) of a rt_dnnl_swish_job. */
static void rt_dnnl_swish_rows(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_swish_job *j = v;
	int64_t e = hi * RT_DNNL_SWISH_CHUNK < j->n ? hi * RT_DNNL_SWISH_CHUNK : j->n;
	float *restrict y = j->y, a = j->alpha;
	int64_t i = lo * RT_DNNL_SWISH_CHUNK;

#ifdef __AVX512F__
	for (; i + 16 <= e; i += 16)
		_mm512_storeu_ps(y + i, rt_dnnl_vswish(_mm512_loadu_ps(y + i), _mm512_set1_ps(-a)));
#endif
	for (; i < e; i++)
		y[i] = y[i] / (1.0f + rt_expf(-a * y[i]));
}

/* y[0..n) = swish(y) on nt threads (one when n is small). */
static void rt_dnnl_swish(float *y, int64_t n, float alpha, int nt)
{
	struct rt_dnnl_swish_job j = { y, n, alpha };
	int64_t chunks = (n + RT_DNNL_SWISH_CHUNK - 1) / RT_DNNL_SWISH_CHUNK;

	if (nt > 1 && n >= 65536)
		rt_par_for(nt, chunks, 1, rt_dnnl_swish_rows, &j);
	else
		rt_dnnl_swish_rows(&j, 0, chunks);
}

/*
 * The post-ops po[] for the primitive of k, in out[]: a swish at the end of
 * the chain is dropped there and left to rt_dnnl_exec (k->swish).
 */
static void rt_dnnl_own_swish(struct rt_dnnl_kernel *k, const int *po, const float *pa,
			      int *out, int nt)
{
	int last = -1;

	for (int i = 0; i < RT_DNNL_MAX_PO; i++) {
		out[i] = po[i];
		if (po[i] != RT_DNNL_PO_NONE)
			last = i;
	}
	if (last < 0 || po[last] != RT_DNNL_PO_SWISH)
		return;
	out[last] = RT_DNNL_PO_NONE;
	k->swish = 1;
	k->swish_alpha = pa[last];
	k->swish_nt = nt;
}

/* One execution argument: oneDNN's DNNL_ARG_*, its layout and its buffer. */
struct rt_dnnl_arg {
	int arg;
	const dnnl_memory_desc_t *md;
	const void *p;
};

/*
 * Runs k->prim on the user's buffers (bias, e0, e1 may be NULL): x and y
 * through the reorders at the edges where the primitive wants other layouts,
 * the summed operand first into dst. The memory objects of the arguments
 * are made by the first run and pointed at each run's buffers after: making
 * them anew cost a few microseconds per kernel and run.
 */
static void rt_dnnl_exec(struct rt_dnnl_kernel *k, const char *name, const float *x,
			 const float *w, const float *bias, const float *e0, const float *e1,
			 const int *po, float *y)
{
	struct rt_dnnl_arg a[RT_DNNL_MAX_ARGS];
	int n = 0, ok = 1;
	const void *src;
	void *dst = k->dst_buf ? k->dst_buf : (void *)y;
	const float *se = k->sum && po[k->sum - 1] == RT_DNNL_PO_ADD1 ? e1 : e0;	/* summed */

	if (!(src = rt_dnnl_edges_in(k, name, x, se, dst)))
		return;
	if (k->wei_in) {
		if (rt_dnnl_move(k->wei_in, &k->user_wei, w, &k->wei_md, k->wei_buf, name) < 0)
			return;
		w = k->wei_buf;
	}
	/* the arguments, in the same order every run; weights reordered once: md NULL */
	a[n++] = (struct rt_dnnl_arg){ DNNL_ARG_SRC, &k->src_md, src };
	a[n++] = (struct rt_dnnl_arg){ DNNL_ARG_WEIGHTS, k->wei_mem ? NULL : &k->wei_md, w };
	if (k->has_bias)
		a[n++] = (struct rt_dnnl_arg){ DNNL_ARG_BIAS, &k->bias_md, bias };
	a[n++] = (struct rt_dnnl_arg){ DNNL_ARG_DST, &k->dst_md, dst };
	if (dnnl_memory_desc_get_size(&k->pad_md))
		a[n++] = (struct rt_dnnl_arg){ DNNL_ARG_SCRATCHPAD, &k->pad_md, rt_dnnl.pad };
	for (int i = 0; i < RT_DNNL_MAX_PO; i++)
		if (i != k->sum - 1 && (po[i] == RT_DNNL_PO_ADD0 || po[i] == RT_DNNL_PO_ADD1))
			a[n++] = (struct rt_dnnl_arg){
				DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1,
				&k->bin_md[po[i] - RT_DNNL_PO_ADD0], po[i] == RT_DNNL_PO_ADD0 ? e0 : e1
			};
	for (int i = 0; i < n && ok; i++) {
		dnnl_status_t st = dnnl_success;

		if (a[i].md && i < k->nargs)
			st = dnnl_memory_set_data_handle(k->args[i].memory, (void *)a[i].p);
		else if (a[i].md)
			st = dnnl_memory_create(&k->args[i].memory, a[i].md, rt_dnnl.engine,
						(void *)a[i].p);
		else
			k->args[i].memory = k->wei_mem;
		if (i >= k->nargs && st == dnnl_success) {
			k->args[i].arg = a[i].arg;
			k->nargs = i + 1;
		}
		ok = !rt_dnnl_fail(st, name, "memory");
	}
	if (!ok || rt_dnnl_fail(dnnl_primitive_execute(k->prim, rt_dnnl.stream, n, k->args), name,
				"execute") ||
	    rt_dnnl_fail(dnnl_stream_wait(rt_dnnl.stream), name, "execute"))
		return;
	if (k->swish)
		rt_dnnl_swish(dst, (int64_t)(dnnl_memory_desc_get_size(&k->dst_md) / sizeof(float)),
			      k->swish_alpha, k->swish_nt);
	if (k->dst_out)
		rt_dnnl_move(k->dst_out, &k->dst_md, dst, &k->user_dst, y, name);
}

/*
 * The entry of cache c made for key[0..n) in *k: 1. Else 0, and *k is the
 * entry to make it in: a free one, or the oldest (released), with the new
 * key recorded. The last entry used is tried first.
 */
static int rt_dnnl_cached(struct rt_dnnl_cache *c, const int64_t *key, int n,
			  struct rt_dnnl_kernel **k)
{
	struct rt_dnnl_kernel *e = &c->e[c->last];

	if (e->made && e->nkey == n && !memcmp(e->key, key, sizeof(*key) * (size_t)n)) {
		*k = e;
		return 1;
	}
	for (int i = 0; i < RT_DNNL_MAX_SHAPES; i++) {
		e = &c->e[i];
		if (e->made && e->nkey == n && !memcmp(e->key, key, sizeof(*key) * (size_t)n)) {
			c->last = i;
			*k = e;
			return 1;
		}
	}
	if (!c->listed) {
		c->listed = 1;
		c->more = rt_dnnl.caches;
		rt_dnnl.caches = c;
	}
	c->last = c->next;
	c->next = (c->next + 1) % RT_DNNL_MAX_SHAPES;
	e = &c->e[c->last];
	rt_dnnl_release(e);
	memcpy(e->key, key, sizeof(*key) * (size_t)n);
	e->nkey = n;
	*k = e;
	return 0;
}

/*
 * When the model's last handle closes (rt_on_last_close): every cache's
 * primitives and reordered weights, and the shared scratch buffers, go. A
 * model opened again makes them anew; a BERT-Base keeps about its weights'
 * bytes here, which a closed model held until the process ended. Each
 * file of kernels has its own caches and registers its own hook.
 */
static void rt_dnnl_release_all(void)
{
	pthread_mutex_lock(&rt_dnnl.lock);
	for (struct rt_dnnl_cache *c = rt_dnnl.caches, *more; c; c = more) {
		more = c->more;
		for (int i = 0; i < RT_DNNL_MAX_SHAPES; i++)
			rt_dnnl_release(&c->e[i]);
		memset(c, 0, sizeof(*c));
	}
	rt_dnnl.caches = NULL;
	free(rt_dnnl.pad);
	rt_dnnl.pad = NULL;
	rt_dnnl.pad_size = 0;
	free(rt_dnnl.ws);
	rt_dnnl.ws = NULL;
	rt_dnnl.ws_size = 0;
	pthread_mutex_unlock(&rt_dnnl.lock);
}

static struct rt_close_hook rt_dnnl_close_hook = { rt_dnnl_release_all, NULL };

__attribute__((constructor)) static void rt_dnnl_hook(void)
{
	rt_on_last_close(&rt_dnnl_close_hook);
}

#if defined RT_MODEL_C && !defined RT_ARCHIVE
/*
 * OpenMP's entry points as libdnnl calls them (Debian's oneDNN is built on
 * libgomp and needs these six), defined by OUT.so itself (model.c; not in a
 * static archive): the dynamic linker looks in the model that loaded
 * libdnnl before libgomp, so oneDNN's parallel regions run as a team on
 * the model's own pool (rt_par.c), whose waiting threads spin for 50 us
 * and then sleep, and whose members are taken by whichever threads are
 * free. On libgomp's, idle threads spin for milliseconds whatever the model
 * wants, and beside one busy process 2-thread runs took 3-13x as long
 * (README, "Measuring"). The dynamic linker keeps the model loaded while
 * libdnnl is bound to it. Where libgomp comes first (a program linked with
 * -fopenmp before the model), libdnnl binds to libgomp's; where the model
 * comes first and the program needs libgomp too, these forward to libgomp
 * (rt_par.c, rt_omp_delegated), so that the program's own OpenMP sees one
 * runtime.
 */
#define RT_DNNL_OMP_API __attribute__((visibility("default"), noinline))

RT_DNNL_OMP_API void GOMP_parallel(void (*fn)(void *), void *data, unsigned nthr,
				   unsigned flags)
{
	(void)flags;
	rt_omp_parallel(fn, data, nthr);
}

RT_DNNL_OMP_API void GOMP_barrier(void)
{
	rt_omp_barrier();
}

RT_DNNL_OMP_API int omp_get_max_threads(void)
{
	return rt_omp_max_threads();
}

RT_DNNL_OMP_API int omp_get_num_threads(void)
{
	return rt_omp_num_threads();
}

RT_DNNL_OMP_API int omp_get_thread_num(void)
{
	return rt_omp_thread_num();
}

RT_DNNL_OMP_API int omp_in_parallel(void)
{
	return rt_omp_in_parallel();
}
#endif

/* Locks, sets OpenMP's thread count to nt; returns the one to restore. */
static int rt_dnnl_enter(int nt)
{
	int prev;

	pthread_mutex_lock(&rt_dnnl.lock);
	prev = rt_omp_max_threads();
	if (prev != nt)
		rt_omp_set_threads(nt);
	return prev;
}

static void rt_dnnl_leave(int prev, int nt)
{
	if (prev != nt)
		rt_omp_set_threads(prev);
	pthread_mutex_unlock(&rt_dnnl.lock);
}

/*
 * The geometry of a windowed op (conv, pool, deconv) over nsp spatial dims
 * (1 to 3): x [n, c, in...] and y [n, m, out...] as int64 (x, y) and as
 * oneDNN's dims (xd, yd); its kernel, strides, dilations (oneDNN's: ONNX's
 * minus 1) and pads. win: the call's in, out, kernel, stride, dilation, pad
 * begin and pad end, 3 each.
 */
struct rt_dnnl_geom {
	int64_t x[5], y[5];
	dnnl_dims_t xd, yd, kern, str, dil, padl, padr;
};

static void rt_dnnl_geom(struct rt_dnnl_geom *g, int64_t nsp, int64_t n, int64_t c,
			 int64_t m, const int64_t win[7][3])
{
	g->x[0] = g->xd[0] = g->y[0] = g->yd[0] = n;
	g->x[1] = g->xd[1] = c;
	g->y[1] = g->yd[1] = m;
	for (int i = 0; i < nsp; i++) {
		g->x[2 + i] = g->xd[2 + i] = win[0][i];
		g->y[2 + i] = g->yd[2 + i] = win[1][i];
		g->kern[i] = win[2][i];
		g->str[i] = win[3][i];
		g->dil[i] = win[4][i] - 1;
		g->padl[i] = win[5][i];
		g->padr[i] = win[6][i];
	}
}

/*
 * Winograd for the convolution desc (direct so far) when oneDNN has an
 * implementation of it with these post-ops and weights: oneDNN 2.6 has
 * F(2x2, 3x3) and F(4x4, 3x3) for AVX-512 only, faster there than direct
 * on every ResNet-18 layer at batch 1 (its own convolution_auto keeps
 * direct below batch 4). Else, and on
 * other hosts, direct. The choice depends on the host and the convolution
 * alone, so every run on one host computes the same bits.
 */
static void rt_dnnl_conv_alg(dnnl_convolution_desc_t *desc, const_dnnl_primitive_attr_t attr)
{
	dnnl_primitive_desc_t pd;
	dnnl_memory_desc_t pad;
	dnnl_status_t st;

	desc->alg_kind = dnnl_convolution_winograd;
	st = rt_dnnl_pd(&pd, desc, attr, &pad);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (st != dnnl_success)
		desc->alg_kind = dnnl_convolution_direct;
}

/*
 * Runs primitive prim with the n arguments a[] (6 at most) and the shared
 * scratchpad of layout pad.
 */
static void rt_dnnl_run(dnnl_primitive_t prim, const char *name, int n,
			const struct rt_dnnl_arg *a, const dnnl_memory_desc_t *pad)
{
	dnnl_exec_arg_t args[7];
	int nm = 0, ok = 1;

	for (int i = 0; i <= n && ok; i++) {
		const struct rt_dnnl_arg sp = { DNNL_ARG_SCRATCHPAD, pad, rt_dnnl.pad };
		const struct rt_dnnl_arg *ai = i < n ? &a[i] : &sp;

		if (i == n && !dnnl_memory_desc_get_size(pad))
			break;
		if (rt_dnnl_fail(dnnl_memory_create(&args[nm].memory, ai->md, rt_dnnl.engine,
						    (void *)ai->p), name, "memory")) {
			ok = 0;
			break;
		}
		args[nm++].arg = ai->arg;
	}
	if (ok)
		rt_dnnl_fail(dnnl_primitive_execute(prim, rt_dnnl.stream, nm, args), name,
			     "execute");
	rt_dnnl_fail(dnnl_stream_wait(rt_dnnl.stream), name, "execute");
	for (int i = 0; i < nm; i++)
		dnnl_memory_destroy(args[i].memory);
}

/*
 * ---- vectors: GCC's vector extensions, RT_DNNL_VL floats ----
 *
 * Used by collagec's own kernels on blocked buffers (the Winograd
 * convolution's transforms, the blocked pool), whose channel blocks of
 * rt_dnnl_block() floats are one or more such vectors.
 */
#if defined(__AVX__)
#define RT_DNNL_VL 8			/* floats per vector: a ymm */
#else
#define RT_DNNL_VL 4			/* an xmm (a ymm type would change the ABI) */
#endif
#define RT_DNNL_MAX_BLOCK 16		/* the largest channel block (AVX-512) */

typedef float rt_dnnl_vec __attribute__((vector_size(4 * RT_DNNL_VL)));
typedef int32_t rt_dnnl_ivec __attribute__((vector_size(4 * RT_DNNL_VL)));
/* the same vector read from or written to memory of any alignment, in place */
typedef float rt_dnnl_uvec __attribute__((vector_size(4 * RT_DNNL_VL), aligned(4), may_alias));

/* The lanes of v summed pairwise: halves, then quarters, ... */
static float rt_dnnl_hsum(rt_dnnl_vec v)
{
	float t[RT_DNNL_VL];

	memcpy(t, &v, sizeof(t));
	for (int w = RT_DNNL_VL / 2; w > 0; w /= 2)
		for (int u = 0; u < w; u++)
			t[u] += t[u + w];
	return t[0];
}

/* Lane by lane, m ? a : b (m's lanes all ones or zeros). */
static inline rt_dnnl_vec rt_dnnl_select(rt_dnnl_ivec m, rt_dnnl_vec a, rt_dnnl_vec b)
{
	return (rt_dnnl_vec)((m & (rt_dnnl_ivec)a) | (~m & (rt_dnnl_ivec)b));
}

/*
 * ---- Winograd F(4x4, 3x3) around oneDNN's matmul ----
 *
 * oneDNN 2.6 has Winograd convolutions for AVX-512 only; on AVX2 it runs a
 * 3x3 stride-1 Conv direct, at the core's peak, which Winograd beats. Where
 * oneDNN has none, such a Conv runs here by F(4x4, 3x3) (Lavin and Gray,
 * CVPR 2016), as oneDNN's own Winograd does on AVX-512: each 4x4 output
 * tile is A^T [ U (.) V ] A summed over the input channels, with V = B^T d B
 * the transform of its 6x6 input patch d and U = G g G^T that of the 3x3
 * kernel g (the matrices are rt_wino.h's). Summed over channels first,
 * the 36 element positions xi become 36 independent GEMMs, one batched
 * oneDNN matmul:
 *
 *	O [36, tiles, Mp] = V [36, tiles, Cp] x U [36, Cp, Mp]
 *
 * 36 products a tile and channel instead of 144. U is computed from the
 * constant weights (in double, rounded once) when the primitive is made and
 * reordered into the layout the matmul chose, once, like other weights.
 * The transforms are collagec's: x and y in the blocked layout (a Conv of
 * plain buffers reorders at its edges, as a direct one does), one vector
 * lane a channel, so a patch row of a block is a few vector loads; the
 * output transform adds the bias and applies the post-ops (Relu, LeakyRelu,
 * Clip, linear, the residual sum, an add by channel) as it writes y. Cp and
 * Mp are the channels rounded up to the block: the padding of x and U is
 * zero, that of y written zero. V and O live in one buffer every Winograd
 * convolution of the process shares (rt_dnnl.ws, under the lock), of 8 MiB
 * at most: a large batch's tiles are taken a chunk at a time.
 *
 * Below RT_DNNL_WINO_MIN_TILES tiles (ResNet-18's 7x7 layers: 4 tiles of
 * 16 outputs for 49) direct stays: U is 36 / 9 times the weights, read for
 * too few tiles. Accuracy: the transforms' coefficients make
 * the rounding error larger than the direct sum's, about 1e-5 of the
 * largest output over 256 channels (5e-6 over 64).
 */
#define RT_DNNL_WINO_MIN_CHANNELS 16	/* as the c target's conv.winograd */
#define RT_DNNL_WINO_MIN_TILES 16	/* per image */
#define RT_DNNL_WINO_WS (8 << 20)	/* bytes of V and O, at most (rt_dnnl_wino_chunk) */

/* A Winograd convolution's geometry; y's spatial dims are x's plus pads - 2. */
struct rt_dnnl_wino {
	int64_t n, c, m;		/* batch, channels in and out */
	int64_t h, w, oh, ow;		/* x's and y's rows and columns */
	int64_t pt, pl;			/* pads before: top, left */
	int64_t th, tw, tiles;		/* tiles per column and row; of the batch */
	int64_t chunk;			/* tiles a matmul takes (V's and O's rows) */
	int64_t blk, cp, mp;		/* the channel block; c and m rounded up to it */
	dnnl_memory_desc_t v_md, u_md, o_md;	/* the matmul's src, weights (plain), dst */
};

/* The 1-D transforms B^T and A^T (rt_wino.h) on a vector of channels. */
RT_WINO_TRANSFORMS(rt_dnnl_vec, rt_dnnl_wino)

/*
 * Whether a Conv (nsp spatial dims, c channels in, m out, y of oh x ow;
 * kernel, strides, dilations and group as collagec_dnnl_conv takes them)
 * with post-ops po[] (k->sum, bc0, bc1 as there) runs by rt_dnnl_wino:
 * 2-D, 3x3, stride and dilation 1, not grouped, constant weights, enough
 * channels and tiles, and post-ops its output transform applies.
 */
static int rt_dnnl_wino_fits(int64_t nsp, int64_t c, int64_t m, int64_t group, int64_t oh,
			     int64_t ow, int64_t k0, int64_t k1, int64_t s0, int64_t s1,
			     int64_t d0, int64_t d1, int wconst, int sum, const int *po,
			     int bc0, int bc1)
{
	if (nsp != 2 || k0 != 3 || k1 != 3 || s0 != 1 || s1 != 1 || d0 != 1 || d1 != 1 ||
	    group != 1 || !wconst || c < RT_DNNL_WINO_MIN_CHANNELS ||
	    m < RT_DNNL_WINO_MIN_CHANNELS ||
	    (oh + 3) / 4 * ((ow + 3) / 4) < RT_DNNL_WINO_MIN_TILES)
		return 0;
	for (int i = 0; i < RT_DNNL_MAX_PO; i++) {
		int bc = po[i] == RT_DNNL_PO_ADD0 ? bc0 : bc1;

		switch (po[i]) {
		case RT_DNNL_PO_NONE:
		case RT_DNNL_PO_RELU:
		case RT_DNNL_PO_CLIP:
		case RT_DNNL_PO_LINEAR:
			break;
		case RT_DNNL_PO_ADD0:
		case RT_DNNL_PO_ADD1:
			if (i == sum - 1 || bc == RT_DNNL_BC_CHANNEL || bc == RT_DNNL_BC_SCALAR)
				break;
			return 0;
		default:
			return 0;
		}
	}
	return 1;
}

/*
 * U [36, cp, mp] = G g G^T of the weights w [m, c, 3, 3], zero where c or
 * m is padding; malloc'd (NULL when out of memory).
 */
static float *rt_dnnl_wino_u(const struct rt_dnnl_wino *g, const float *w)
{
	float *u = calloc((size_t)(36 * g->cp * g->mp), sizeof(float));

	if (!u)
		return NULL;
	for (int64_t m = 0; m < g->m; m++)
		for (int64_t c = 0; c < g->c; c++)
			rt_wino_kernel(w + (m * g->c + c) * 9, u + c * g->mp + m, g->cp * g->mp);
	return u;
}

/*
 * Splits g's tiles into chunks of equal size whose V and O take at most
 * RT_DNNL_WINO_WS bytes (but RT_DNNL_WINO_MIN_TILES tiles at least): at
 * batch 1 every layer of ResNet-18 is one chunk; at batch 64 its 56x56
 * ones would have taken 231 MB in one.
 */
static void rt_dnnl_wino_chunk(struct rt_dnnl_wino *g)
{
	int64_t most = RT_DNNL_WINO_WS / (36 * 4 * (g->cp + g->mp)), chunks;

	if (most < RT_DNNL_WINO_MIN_TILES)
		most = RT_DNNL_WINO_MIN_TILES;
	chunks = (g->tiles + most - 1) / most;
	g->chunk = (g->tiles + chunks - 1) / chunks;
}

/*
 * Makes entry k a Winograd convolution of geometry *g (x, y, the summed
 * operand in the layouts k->user_*): the batched matmul, its weights U from
 * w, the reorders at its edges to and from the blocked layout.
 */
static int rt_dnnl_wino_make(struct rt_dnnl_cache *kc, struct rt_dnnl_kernel *k,
			     const char *name, const struct rt_dnnl_wino *g, const float *w)
{
	const int64_t vd[3] = { 36, g->chunk, g->cp }, ud[3] = { 36, g->cp, g->mp };
	const int64_t od[3] = { 36, g->chunk, g->mp };
	const int64_t xd[4] = { g->n, g->c, g->h, g->w }, yd[4] = { g->n, g->m, g->oh, g->ow };
	dnnl_dims_t udd = { 36, g->cp, g->mp };
	dnnl_memory_desc_t any_u;
	dnnl_matmul_desc_t desc;
	dnnl_primitive_desc_t pd = NULL;
	size_t ws = (size_t)(36 * g->chunk * (g->cp + g->mp));
	float *u = NULL;
	int rc = -1;

	if (!(k->wino = malloc(sizeof(*k->wino)))) {
		collagec_rt_abort("dnnl: out of memory for a Winograd convolution");
		return -1;
	}
	*k->wino = *g;
	if (rt_dnnl_fail(rt_dnnl_plain(&k->wino->v_md, 3, vd), name, "winograd V") ||
	    rt_dnnl_fail(rt_dnnl_plain(&k->wino->u_md, 3, ud), name, "winograd U") ||
	    rt_dnnl_fail(rt_dnnl_plain(&k->wino->o_md, 3, od), name, "winograd O") ||
	    rt_dnnl_fail(rt_dnnl_layout(&k->src_md, 4, xd, 1), name, "src") ||
	    rt_dnnl_fail(rt_dnnl_layout(&k->dst_md, 4, yd, 1), name, "dst") ||
	    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_u, 3, udd, dnnl_f32,
						      dnnl_format_tag_any), name, "winograd U") ||
	    rt_dnnl_fail(dnnl_matmul_desc_init(&desc, &k->wino->v_md, &any_u, NULL,
					       &k->wino->o_md), name, "winograd matmul") ||
	    rt_dnnl_fail(rt_dnnl_pd(&pd, &desc, NULL, &k->pad_md), name, "no implementation"))
		goto out;
	k->wei_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	if (ws > rt_dnnl.ws_size) {
		float *p = aligned_alloc(64, (ws * sizeof(float) + 63) / 64 * 64);

		if (!p) {
			collagec_rt_abort("dnnl: out of memory for a Winograd workspace");
			goto out;
		}
		free(rt_dnnl.ws);
		rt_dnnl.ws = p;
		rt_dnnl.ws_size = ws;
	}
	if (!(u = rt_dnnl_wino_u(g, w))) {
		collagec_rt_abort("dnnl: out of memory for Winograd weights");
		goto out;
	}
	if (!rt_dnnl_fail(dnnl_primitive_create(&k->prim, pd), name, "primitive") &&
	    rt_dnnl_edges_to(k, name) == 0 &&
	    rt_dnnl_wei_get(kc, k, name, &k->wino->u_md, &k->wei_md, w, u) == 0)
		rc = 0;
out:
	free(u);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	return rc;
}

/*
 * The input transform of tiles [t0, t1): V's rows t - base of them from x,
 * blocked [n, cp / blk, h, w, blk], the pads read as zeros.
 */
static void rt_dnnl_wino_in(const struct rt_dnnl_wino *g, const float *x, float *v,
			    int64_t base, int64_t t0, int64_t t1)
{
	int64_t nb = g->cp / g->blk, plane = g->h * g->w * g->blk;

	for (int64_t t = t0; t < t1; t++) {
		int64_t img = t / (g->th * g->tw), ty = t / g->tw % g->th, tx = t % g->tw;
		int64_t r0 = ty * 4 - g->pt, c0 = tx * 4 - g->pl;
		int inside = r0 >= 0 && c0 >= 0 && r0 + 6 <= g->h && c0 + 6 <= g->w;

		for (int64_t cb = 0; cb < nb; cb++) {
			const float *xb = x + (img * nb + cb) * plane;

			for (int64_t l = 0; l < g->blk; l += RT_DNNL_VL) {
				rt_dnnl_vec d[36], e[36];

				for (int i = 0; i < 6; i++)
					for (int j = 0; j < 6; j++) {
						int64_t r = r0 + i, c = c0 + j;

						if (inside || (r >= 0 && r < g->h && c >= 0 && c < g->w))
							d[i * 6 + j] = *(const rt_dnnl_uvec *)
								(xb + (r * g->w + c) * g->blk + l);
						else
							d[i * 6 + j] = (rt_dnnl_vec){ 0 };
					}
				for (int j = 0; j < 6; j++)
					rt_dnnl_wino_bt(d + j, 6, e + j, 6);
				for (int i = 0; i < 6; i++)
					rt_dnnl_wino_bt(e + i * 6, 1, d + i * 6, 1);
				for (int xi = 0; xi < 36; xi++)
					*(rt_dnnl_uvec *)(v + (xi * g->chunk + t - base) *
							  g->cp + cb * g->blk + l) = d[xi];
			}
		}
	}
}

/* e[c0 ..] as a vector, lanes at m or past zero; e NULL: zeros. */
static inline rt_dnnl_vec rt_dnnl_wino_chan(const float *e, int64_t c0, int64_t m)
{
	rt_dnnl_vec r = { 0 };

	if (!e)
		return r;
	if (c0 + RT_DNNL_VL <= m)
		return *(const rt_dnnl_uvec *)(e + c0);
	for (int i = 0; i < RT_DNNL_VL && c0 + i < m; i++)
		r[i] = e[c0 + i];
	return r;
}

/* What the output transform adds after the sums: bias and post-ops. */
struct rt_dnnl_wino_epi {
	const float *bias, *e[2];	/* [m] each, or NULL */
	int bc[2];			/* how e[0], e[1] broadcast */
	int sum;			/* k->sum */
	const int *po;
	const float *a, *b;		/* the post-ops' alpha and beta */
};

/* The post-ops on r, the conv's result for channels [c0, c0 + VL) at y (blocked). */
static inline rt_dnnl_vec rt_dnnl_wino_post(const struct rt_dnnl_wino_epi *ep, rt_dnnl_vec r,
					    const float *y, int64_t c0, int64_t m)
{
	for (int i = 0; i < RT_DNNL_MAX_PO; i++) {
		int p = ep->po[i];

		if (p == RT_DNNL_PO_NONE)
			continue;
		if (i == ep->sum - 1) {
			r += *(const rt_dnnl_uvec *)y;
		} else if (p == RT_DNNL_PO_ADD0 || p == RT_DNNL_PO_ADD1) {
			int o = p - RT_DNNL_PO_ADD0;

			r += ep->bc[o] == RT_DNNL_BC_SCALAR ? ep->e[o][0] + (rt_dnnl_vec){ 0 }
							    : rt_dnnl_wino_chan(ep->e[o], c0, m);
		} else if (p == RT_DNNL_PO_RELU) {
			r = rt_dnnl_select(r > 0, r, ep->a[i] * r);
		} else if (p == RT_DNNL_PO_CLIP) {
			/* a NaN stays NaN: it compares false both ways */
			r = rt_dnnl_select(r < ep->a[i], ep->a[i] + (rt_dnnl_vec){ 0 }, r);
			r = rt_dnnl_select(r > ep->b[i], ep->b[i] + (rt_dnnl_vec){ 0 }, r);
		} else if (p == RT_DNNL_PO_LINEAR) {
			r = ep->a[i] * r + ep->b[i];
		}
	}
	return r;
}

/*
 * The output transform of tiles [t0, t1): y's pixels of them, blocked [n,
 * mp / blk, oh, ow, blk], from O's rows t - base, with the bias and the
 * post-ops (a summed operand already in y). Padding channels are written
 * zero.
 */
static void rt_dnnl_wino_out(const struct rt_dnnl_wino *g, const struct rt_dnnl_wino_epi *ep,
			     const float *o, float *y, int64_t base, int64_t t0, int64_t t1)
{
	int64_t nb = g->mp / g->blk, plane = g->oh * g->ow * g->blk;

	for (int64_t t = t0; t < t1; t++) {
		int64_t img = t / (g->th * g->tw), ty = t / g->tw % g->th, tx = t % g->tw;
		int64_t nr = g->oh - ty * 4 < 4 ? g->oh - ty * 4 : 4;
		int64_t nc = g->ow - tx * 4 < 4 ? g->ow - tx * 4 : 4;

		for (int64_t mb = 0; mb < nb; mb++) {
			float *yb = y + (img * nb + mb) * plane + (ty * 4 * g->ow + tx * 4) * g->blk;

			for (int64_t l = 0; l < g->blk; l += RT_DNNL_VL) {
				int64_t c0 = mb * g->blk + l;
				rt_dnnl_vec s[36], e[24], r[16], bias;
				rt_dnnl_ivec keep = { 0 };

				for (int xi = 0; xi < 36; xi++)
					s[xi] = *(const rt_dnnl_uvec *)(o + (xi * g->chunk + t -
									     base) * g->mp + c0);
				for (int j = 0; j < 6; j++)
					rt_dnnl_wino_at(s + j, 6, e + j, 6);
				for (int i = 0; i < 4; i++)
					rt_dnnl_wino_at(e + i * 6, 1, r + i * 4, 1);
				bias = rt_dnnl_wino_chan(ep->bias, c0, g->m);
				for (int i = 0; i < RT_DNNL_VL; i++)
					keep[i] = c0 + i < g->m ? -1 : 0;
				for (int64_t i = 0; i < nr; i++)
					for (int64_t j = 0; j < nc; j++) {
						float *p = yb + (i * g->ow + j) * g->blk + l;
						rt_dnnl_vec q = rt_dnnl_wino_post(ep, r[i * 4 + j] + bias,
										  p, c0, g->m);

						*(rt_dnnl_uvec *)p = (rt_dnnl_vec)(keep & (rt_dnnl_ivec)q);
					}
			}
		}
	}
}

/* A chunk of tiles [base + lo, base + hi) of rt_dnnl_wino_exec's transforms, on the pool. */
struct rt_dnnl_wino_job {
	const struct rt_dnnl_wino *g;
	const struct rt_dnnl_wino_epi *ep;
	const void *src;
	float *v, *o, *dst;
	int64_t base;
};

static void rt_dnnl_wino_in_job(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_wino_job *j = v;

	rt_dnnl_wino_in(j->g, j->src, j->v, j->base, j->base + lo, j->base + hi);
}

static void rt_dnnl_wino_out_job(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_wino_job *j = v;

	rt_dnnl_wino_out(j->g, j->ep, j->o, j->dst, j->base, j->base + lo, j->base + hi);
}

/*
 * Runs Winograd entry k: x (and the summed operand into y) reordered to the
 * blocked layout where they are not; for each chunk of tiles the input
 * transform, the matmul and the output transform; y reordered back. The
 * transforms split a chunk's tiles between the threads in equal runs; each
 * output is computed by one thread in one order. The last chunk may be
 * short: the matmul then also multiplies rows of V left from the chunk
 * before, whose results are not read.
 */
static void rt_dnnl_wino_exec(struct rt_dnnl_kernel *k, const char *name, const float *x,
			      const struct rt_dnnl_wino_epi *ep, const float *se, float *y,
			      int threads)
{
	const struct rt_dnnl_wino *g = k->wino;
	const void *src;
	float *dst = k->dst_buf ? k->dst_buf : y;
	float *v = rt_dnnl.ws, *o = v + 36 * g->chunk * g->cp;
	const struct rt_dnnl_arg a[] = {
		{ DNNL_ARG_SRC, &g->v_md, v },
		{ DNNL_ARG_WEIGHTS, &k->wei_md, k->wei->buf },
		{ DNNL_ARG_DST, &g->o_md, o },
	};

	if (!(src = rt_dnnl_edges_in(k, name, x, se, dst)))
		return;
	rt_dnnl_fail(dnnl_stream_wait(rt_dnnl.stream), name, "reorder");
	for (int64_t base = 0; base < g->tiles; base += g->chunk) {
		int64_t n = g->tiles - base < g->chunk ? g->tiles - base : g->chunk;

		struct rt_dnnl_wino_job j = { g, ep, src, v, o, dst, base };

		rt_par_for(threads, n, 1, rt_dnnl_wino_in_job, &j);
		rt_dnnl_run(k->prim, name, 3, a, &k->pad_md);
		rt_par_for(threads, n, 1, rt_dnnl_wino_out_job, &j);
	}
	if (k->dst_out)
		rt_dnnl_move(k->dst_out, &k->dst_md, dst, &k->user_dst, y, name);
	rt_dnnl_fail(dnnl_stream_wait(rt_dnnl.stream), name, "reorder");
}

/*
 * y = conv(x, w) + bias, then the post-ops: x [n, c, i0 (, i1 (, i2))],
 * w [m, c/group, k0 ...], bias [m] or NULL, y [n, m, o0 ...] over nsp
 * spatial dims (1 to 3; the unused ones 1, their pads 0); strides s*,
 * dilations d* as in ONNX (1 = none), pads begin pb* and end pe*. lay: which
 * of x, y and the summed operand are blocked (enum rt_dnnl_lay). wino: a
 * 3x3 stride-1 Conv runs by Winograd: oneDNN's where it has one for it
 * (rt_dnnl_conv_alg), else collagec's around a oneDNN matmul where
 * rt_dnnl_wino_fits, else direct.
 */
static void collagec_dnnl_conv(struct rt_dnnl_cache *kc, const char *name, const float *x,
			       const float *w, const float *bias, const float *e0,
			       const float *e1, float *y, int64_t nsp, int64_t n, int64_t c,
			       int64_t m, int64_t group, int64_t i0, int64_t i1, int64_t i2,
			       int64_t o0, int64_t o1, int64_t o2, int64_t k0, int64_t k1,
			       int64_t k2, int64_t s0, int64_t s1, int64_t s2, int64_t d0,
			       int64_t d1, int64_t d2, int64_t pb0, int64_t pb1, int64_t pb2,
			       int64_t pe0, int64_t pe1, int64_t pe2, int wconst, int lay, int wino,
			       int bc0, int bc1, int p0, float a0, float b0, int p1, float a1, float b1,
			       int p2, float a2, float b2, int p3, float a3, float b3, int p4,
			       float a4, float b4, int p5, float a5, float b5, int threads)
{
	const int po[RT_DNNL_MAX_PO] = { p0, p1, p2, p3, p4, p5 };
	const float pa[RT_DNNL_MAX_PO] = { a0, a1, a2, a3, a4, a5 };
	const float pbt[RT_DNNL_MAX_PO] = { b0, b1, b2, b3, b4, b5 };
	const int64_t key[] = {
		nsp, n, c, m, group, i0, i1, i2, o0, o1, o2, k0, k1, k2, s0, s1, s2, d0, d1, d2,
		pb0, pb1, pb2, pe0, pe1, pe2, wconst, lay, bias != NULL, bc0, bc1, p0, p1, p2,
		p3, p4, p5, threads, (int64_t)(intptr_t)w,
	};
	int nt = threads > 1 ? threads : 1, prev, nd = (int)nsp + 2;
	struct rt_dnnl_kernel *k;

	if (n <= 0 || m <= 0 || o0 * o1 * o2 <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t win[7][3] = {
			{ i0, i1, i2 }, { o0, o1, o2 }, { k0, k1, k2 }, { s0, s1, s2 },
			{ d0, d1, d2 }, { pb0, pb1, pb2 }, { pe0, pe1, pe2 },
		};
		struct rt_dnnl_geom gm;
		int64_t wd[6] = { group, m / group, c / group };
		dnnl_dims_t wdd;
		dnnl_memory_desc_t user_wei, any_wei, any_src, any_dst;
		dnnl_convolution_desc_t desc;
		dnnl_primitive_attr_t attr = NULL;
		int po_dnnl[RT_DNNL_MAX_PO];
		/* weights [(group,) m/group, c/group, k...]: the group dim only when grouped */
		int g = group > 1, wnd = nd + g;
		const int64_t *wdims = wd + 1 - g;

		rt_dnnl_geom(&gm, nsp, n, c, m, win);
		for (int i = 0; i < nsp; i++)
			wd[3 + i] = win[2][i];
		for (int i = 0; i < wnd; i++)
			wdd[i] = wdims[i];
		k->has_bias = bias != NULL;
		k->sum = rt_dnnl_sum_at(po, bc0, bc1);
		rt_dnnl_own_swish(k, po, pa, po_dnnl, nt);
		/*
		 * src and dst: a blocked buffer's layout, else the one the
		 * convolution prefers, reordered at the edges. Blocked buffers
		 * are declared as they are: with format any, oneDNN 2.6 on
		 * AVX-512 picks its channels-last brgconv, and every Conv of a
		 * chain reordered its x and y. A depthwise Conv with one side
		 * blocked asks for the blocked layout on the other too: given
		 * any there and a blocked y, oneDNN 2.6 on AVX-512 chose
		 * channels-last for x and so its reference convolution.
		 */
		int dw_b = group > 1 && group == c && m == c &&
			   (rt_dnnl_blocks(nd, lay & RT_DNNL_LAY_SRC) ||
			    rt_dnnl_blocks(nd, lay & RT_DNNL_LAY_DST));

		if (rt_dnnl_fail(rt_dnnl_layout(&k->user_src, nd, gm.x,
						lay & RT_DNNL_LAY_SRC), name, "src") ||
		    rt_dnnl_fail(rt_dnnl_layout(&k->user_dst, nd, gm.y,
						lay & RT_DNNL_LAY_DST), name, "dst") ||
		    rt_dnnl_fail(rt_dnnl_layout(&k->user_sum, nd, gm.y,
						lay & RT_DNNL_LAY_SUM), name, "sum") ||
		    rt_dnnl_fail(dw_b ? rt_dnnl_layout(&any_src, nd, gm.x, 1) :
				 dnnl_memory_desc_init_by_tag(&any_src, nd, gm.xd, dnnl_f32,
							      dnnl_format_tag_any), name, "src") ||
		    rt_dnnl_fail(dw_b ? rt_dnnl_layout(&any_dst, nd, gm.y, 1) :
				 dnnl_memory_desc_init_by_tag(&any_dst, nd, gm.yd, dnnl_f32,
							      dnnl_format_tag_any), name, "dst") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->bias_md, 1, &m), name, "bias") ||
		    rt_dnnl_fail(rt_dnnl_plain(&user_wei, wnd, wdims), name, "weights") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_wei, wnd, wdd, dnnl_f32,
							      dnnl_format_tag_any), name,
				 "weights") ||
		    rt_dnnl_fail(dnnl_dilated_convolution_forward_desc_init(
				    &desc, dnnl_forward_inference, dnnl_convolution_direct,
				    rt_dnnl_blocks(nd, lay & RT_DNNL_LAY_SRC) ? &k->user_src :
				    &any_src,
				    wconst || (lay & (RT_DNNL_LAY_SRC | RT_DNNL_LAY_DST)) ?
				    &any_wei : &user_wei,
				    k->has_bias ? &k->bias_md : NULL,
				    rt_dnnl_blocks(nd, lay & RT_DNNL_LAY_DST) ? &k->user_dst :
				    &any_dst, gm.str, gm.dil, gm.padl, gm.padr), name,
				 "convolution") ||
		    rt_dnnl_fail(rt_dnnl_attr(k, &attr, nd, gm.y, bc0, bc1, po_dnnl, pa, pbt), name,
				 "post-ops")) {
			if (attr)
				dnnl_primitive_attr_destroy(attr);
			goto out;
		}
		if (wino)
			rt_dnnl_conv_alg(&desc, attr);
		if (wino && desc.alg_kind != dnnl_convolution_winograd &&
		    rt_dnnl_wino_fits(nsp, c, m, group, o0, o1, k0, k1, s0, s1, d0, d1, wconst,
				      k->sum, po, bc0, bc1)) {
			int64_t blk = rt_dnnl_block(), th = (o0 + 3) / 4, tw = (o1 + 3) / 4;
			struct rt_dnnl_wino wg = {
				.n = n, .c = c, .m = m, .h = i0, .w = i1, .oh = o0, .ow = o1,
				.pt = pb0, .pl = pb1, .th = th, .tw = tw, .tiles = n * th * tw,
				.blk = blk, .cp = (c + blk - 1) / blk * blk,
				.mp = (m + blk - 1) / blk * blk,
			};

			rt_dnnl_wino_chunk(&wg);

			if (rt_dnnl_wino_make(kc, k, name, &wg, w) == 0)
				k->made = 1;
		} else if (rt_dnnl_make(kc, k, name, &desc, attr, &user_wei, w, wconst) == 0) {
			k->made = 1;
		}
		dnnl_primitive_attr_destroy(attr);
		if (!k->made)
			goto out;
	}
	if (k->wino) {
		const struct rt_dnnl_wino_epi ep = {
			bias, { e0, e1 }, { bc0, bc1 }, k->sum, po, pa, pbt,
		};

		rt_dnnl_wino_exec(k, name, x, &ep,
				  k->sum && po[k->sum - 1] == RT_DNNL_PO_ADD1 ? e1 : e0, y, nt);
	} else {
		rt_dnnl_exec(k, name, x, w, bias, e0, e1, po, y);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/* An 8-bit buffer of dims d: channels-last when cl, else plain. */
static dnnl_status_t rt_dnnl_q8_layout(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t d,
				       dnnl_data_type_t dt, int cl)
{
	static const dnnl_format_tag_t plain[6] = { [3] = dnnl_abc, [4] = dnnl_abcd,
						     [5] = dnnl_abcde };
	static const dnnl_format_tag_t last[6] = { [3] = dnnl_acb, [4] = dnnl_acdb,
						    [5] = dnnl_acdeb };

	return dnnl_memory_desc_init_by_tag(md, nd, d, dt, cl ? last[nd] : plain[nd]);
}

/*
 * *attr created with an int8 primitive's requantization as output scales:
 * xs[0] * ws[i] / ys[0] (float32) over the nws (1, or one per output
 * channel or column, dim 1 of y) scales of the weights.
 */
static dnnl_status_t rt_dnnl_q8_scales(dnnl_primitive_attr_t *attr, const float *xs,
				       const float *ws, const float *ys, int64_t nws)
{
	float *sc = malloc(sizeof(float) * (size_t)(nws > 0 ? nws : 1));
	dnnl_status_t st;

	if (!sc)
		return dnnl_out_of_memory;
	for (int64_t i = 0; i < nws; i++)
		sc[i] = xs[0] * ws[i] / ys[0];
	st = dnnl_primitive_attr_create(attr);
	if (st == dnnl_success)
		st = dnnl_primitive_attr_set_output_scales(*attr, nws, nws > 1 ? 2 : 0, sc);
	free(sc);
	return st;
}

/*
 * QLinearConv on oneDNN's int8 convolution: y = saturate(round(scale[o] *
 * (conv(x - xz, w) + bias[o])) + yz), x and y 8-bit (xt, yt: 0 uint8, 1
 * int8), w int8 with zero point 0, bias int32 [m] or NULL, scale[o] =
 * xs * ws[o or 0] / ys over the nws (1 or m) weight scales. The geometry
 * is collagec_dnnl_conv's. x and y are plain buffers, or channels-last
 * where lay says (values one int8 convolution hands to others only): the
 * primitive computes in the layout it prefers (channels-last) and the
 * kernel reorders at its edges where a buffer's is another. The constant
 * weights are reordered once, with the compensation oneDNN keeps beside
 * them for x's zero point.
 * oneDNN computes the sum exactly on hosts with VNNI; the compiler places
 * the node here only when the host has it (dnnl_target.c).
 */
static void collagec_dnnl_qconv(struct rt_dnnl_cache *kc, const char *name, const void *x,
				const float *xs, const int8_t *w, const float *ws,
				const int32_t *bias, const float *ys, void *y, int64_t nsp,
				int64_t n, int64_t c, int64_t m, int64_t group, int64_t i0,
				int64_t i1, int64_t i2, int64_t o0, int64_t o1, int64_t o2,
				int64_t k0, int64_t k1, int64_t k2, int64_t s0, int64_t s1,
				int64_t s2, int64_t d0, int64_t d1, int64_t d2, int64_t pb0,
				int64_t pb1, int64_t pb2, int64_t pe0, int64_t pe1, int64_t pe2,
				int wconst, int64_t nws, int xt, int yt, int64_t xz, int64_t yz,
				int lay, int threads)
{
	static const int po[RT_DNNL_MAX_PO];	/* no post-ops */
	const int64_t key[] = {
		nsp, n, c, m, group, i0, i1, i2, o0, o1, o2, k0, k1, k2, s0, s1, s2, d0, d1, d2,
		pb0, pb1, pb2, pe0, pe1, pe2, wconst, nws, xt, yt, xz, yz, lay, bias != NULL,
		threads, (int64_t)(intptr_t)w,
	};
	int nt = threads > 1 ? threads : 1, prev, nd = (int)nsp + 2;
	struct rt_dnnl_kernel *k;

	if (n <= 0 || m <= 0 || o0 * o1 * o2 <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t win[7][3] = {
			{ i0, i1, i2 }, { o0, o1, o2 }, { k0, k1, k2 }, { s0, s1, s2 },
			{ d0, d1, d2 }, { pb0, pb1, pb2 }, { pe0, pe1, pe2 },
		};
		const dnnl_data_type_t xd = xt ? dnnl_s8 : dnnl_u8, yd = yt ? dnnl_s8 : dnnl_u8;
		struct rt_dnnl_geom gm;
		int64_t wd[6] = { group, m / group, c / group };
		int g = group > 1, wnd = nd + g;
		const int64_t *wdims = wd + 1 - g;
		dnnl_dims_t wdd;
		dnnl_memory_desc_t user_wei, any_wei, any_src, any_dst;
		dnnl_convolution_desc_t desc;
		dnnl_primitive_attr_t attr = NULL;
		int32_t xz32 = (int32_t)xz, yz32 = (int32_t)yz;
		dnnl_status_t st;

		rt_dnnl_geom(&gm, nsp, n, c, m, win);
		for (int i = 0; i < nsp; i++)
			wd[3 + i] = win[2][i];
		for (int i = 0; i < wnd; i++)
			wdd[i] = wdims[i];
		k->has_bias = bias != NULL;
		st = rt_dnnl_q8_layout(&k->user_src, nd, gm.xd, xd, lay & RT_DNNL_LAY_SRC);
		if (st == dnnl_success)
			st = rt_dnnl_q8_layout(&k->user_dst, nd, gm.yd, yd, lay & RT_DNNL_LAY_DST);
		if (st == dnnl_success)
			st = rt_dnnl_dense(&k->bias_md, 1, &m, dnnl_s32);
		if (st == dnnl_success)
			st = rt_dnnl_dense(&user_wei, wnd, wdims, dnnl_s8);
		if (st == dnnl_success)
			st = dnnl_memory_desc_init_by_tag(&any_src, nd, gm.xd, xd,
							  dnnl_format_tag_any);
		if (st == dnnl_success)
			st = dnnl_memory_desc_init_by_tag(&any_dst, nd, gm.yd, yd,
							  dnnl_format_tag_any);
		if (st == dnnl_success)
			st = dnnl_memory_desc_init_by_tag(&any_wei, wnd, wdd, dnnl_s8,
							  dnnl_format_tag_any);
		if (st == dnnl_success)
			st = dnnl_dilated_convolution_forward_desc_init(
				&desc, dnnl_forward_inference, dnnl_convolution_direct, &any_src,
				wconst ? &any_wei : &user_wei, k->has_bias ? &k->bias_md : NULL,
				&any_dst, gm.str, gm.dil, gm.padl, gm.padr);
		if (st == dnnl_success)
			st = rt_dnnl_q8_scales(&attr, xs, ws, ys, nws);
		if (st == dnnl_success && xz)
			st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &xz32);
		if (st == dnnl_success && yz)
			st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &yz32);
		if (!rt_dnnl_fail(st, name, "int8 convolution") &&
		    rt_dnnl_make(kc, k, name, &desc, attr, &user_wei, (const float *)w,
				 wconst) == 0)
			k->made = 1;
		if (attr)
			dnnl_primitive_attr_destroy(attr);
		if (!k->made)
			goto out;
	}
	rt_dnnl_exec(k, name, x, (const float *)w, (const float *)bias, NULL, NULL, po, y);
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * k's int8 matmul primitive, y [m, n] (type yt) = a [m, kk] (uint8 or int8,
 * at) x b [kk, n] (int8, constant: reordered once) + an int32 bias [1, n]
 * where bias, with attr's output scales if it has them and run-time zero
 * points of a (az) and y (yz) added to it; attr is destroyed. The kernel's
 * aux_md[0] is the one-int32 layout a zero point is passed in. 0 when made.
 */
static int rt_dnnl_q8_mm_make(struct rt_dnnl_cache *kc, struct rt_dnnl_kernel *k,
			      const char *name, int64_t m, int64_t n, int64_t kk, int at,
			      dnnl_data_type_t yt, int bias, int az, int yz, dnnl_primitive_attr_t attr,
			      dnnl_status_t st, const int8_t *b)
{
	const int64_t ad[2] = { m, kk }, bd[2] = { kk, n }, yd[2] = { m, n }, cd[2] = { 1, n };
	dnnl_dims_t bdd = { kk, n };
	dnnl_memory_desc_t user_wei, any_wei;
	dnnl_matmul_desc_t desc;
	int32_t rz = DNNL_RUNTIME_S32_VAL;
	int rc = -1;

	k->has_bias = bias;
	if (st == dnnl_success)
		st = rt_dnnl_dense(&k->user_src, 2, ad, at ? dnnl_s8 : dnnl_u8);
	if (st == dnnl_success)
		st = rt_dnnl_dense(&k->user_dst, 2, yd, yt);
	if (st == dnnl_success)
		st = rt_dnnl_dense(&k->bias_md, 2, cd, dnnl_s32);
	if (st == dnnl_success)
		st = rt_dnnl_dense(&user_wei, 2, bd, dnnl_s8);
	if (st == dnnl_success)
		st = dnnl_memory_desc_init_by_tag(&any_wei, 2, bdd, dnnl_s8, dnnl_format_tag_any);
	if (st == dnnl_success)
		st = dnnl_matmul_desc_init(&desc, &k->user_src, &any_wei, bias ? &k->bias_md : NULL,
					   &k->user_dst);
	if (st == dnnl_success && az)
		st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &rz);
	if (st == dnnl_success && yz)
		st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &rz);
	if (st == dnnl_success)
		st = rt_dnnl_dense(&k->aux_md[0], 1, (const int64_t[]){ 1 }, dnnl_s32);
	if (!rt_dnnl_fail(st, name, "int8 matmul") &&
	    rt_dnnl_make(kc, k, name, &desc, attr, &user_wei, (const float *)b, 1) == 0)
		rc = 0;
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return rc;
}

/*
 * MatMulInteger on oneDNN's int8 matmul: y [m, n] int32 = (a - az) [m, k]
 * x b [k, n], a uint8 (at 0) or int8 (at 1), b int8 constant (its zero
 * point 0), az a pointer to a's one zero point of a's type, read every run
 * (DynamicQuantizeLinear computes it), or NULL. The batch dims of a are
 * folded into m by the caller. The weights are reordered once, into the
 * layout the primitive chose.
 */
static void collagec_dnnl_qmatmul(struct rt_dnnl_cache *kc, const char *name, const void *a,
				  const int8_t *b, const void *az, int32_t *y, int64_t m,
				  int64_t n, int64_t kk, int at, int threads)
{
	const int64_t key[] = { m, n, kk, at, az != NULL, threads, (int64_t)(intptr_t)b };
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (m <= 0 || n <= 0)
		return;
	if (kk <= 0) {
		memset(y, 0, sizeof(*y) * (size_t)(m * n));
		return;
	}
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		dnnl_primitive_attr_t attr = NULL;
		dnnl_status_t st = dnnl_primitive_attr_create(&attr);

		k->made = rt_dnnl_q8_mm_make(kc, k, name, m, n, kk, at, dnnl_s32, 0, az != NULL, 0,
					     attr, st, b) == 0;
		if (!k->made)
			goto out;
	}
	{
		/* a's zero point as the int32 oneDNN reads */
		int32_t z = !az ? 0 : at ? *(const int8_t *)az : *(const uint8_t *)az;
		const struct rt_dnnl_arg args[] = {
			{ DNNL_ARG_SRC, &k->src_md, a },
			{ DNNL_ARG_WEIGHTS, &k->wei_md, k->wei ? k->wei->buf : (const void *)b },
			{ DNNL_ARG_DST, &k->dst_md, y },
			{ DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, &k->aux_md[0], &z },
		};

		rt_dnnl_run(k->prim, name, az ? 4 : 3, args, &k->pad_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * QLinearMatMul on oneDNN's int8 matmul: y [m, n] = saturate(round(scale[j]
 * * ((a - az) x b + bias[j])) + yz), a and y 8-bit (at, yt: 0 uint8, 1
 * int8), b int8 constant with zero point 0, bias int32 [n] or NULL,
 * scale[j] = as * bs[j or 0] / ys over the nbs (1 or n) scales of b. The
 * zero points are constants of the model, passed at run time; a's batch
 * dims are folded into m by the caller. The weights are reordered once,
 * with the compensation oneDNN keeps beside them for a's zero point.
 */
static void collagec_dnnl_qlmatmul(struct rt_dnnl_cache *kc, const char *name, const void *a,
				   const float *as, const int8_t *b, const float *bs,
				   const int32_t *bias, const float *ys, void *y, int64_t m,
				   int64_t n, int64_t kk, int64_t nbs, int at, int yt, int64_t az,
				   int64_t yz, int threads)
{
	const int64_t key[] = {
		m, n, kk, nbs, at, yt, az != 0, yz != 0, bias != NULL, threads,
		(int64_t)(intptr_t)b,
	};
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (m <= 0 || n <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		dnnl_primitive_attr_t attr = NULL;
		dnnl_status_t st = rt_dnnl_q8_scales(&attr, as, bs, ys, nbs);

		k->made = rt_dnnl_q8_mm_make(kc, k, name, m, n, kk, at, yt ? dnnl_s8 : dnnl_u8,
					     bias != NULL, az != 0, yz != 0, attr, st, b) == 0;
		if (!k->made)
			goto out;
	}
	{
		int32_t z[2] = { (int32_t)az, (int32_t)yz };
		struct rt_dnnl_arg args[6] = {
			{ DNNL_ARG_SRC, &k->src_md, a },
			{ DNNL_ARG_WEIGHTS, &k->wei_md, k->wei ? k->wei->buf : (const void *)b },
			{ DNNL_ARG_DST, &k->dst_md, y },
		};
		int na = 3;

		if (bias)
			args[na++] = (struct rt_dnnl_arg){ DNNL_ARG_BIAS, &k->bias_md, bias };
		if (az)
			args[na++] = (struct rt_dnnl_arg){ DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
							   &k->aux_md[0], &z[0] };
		if (yz)
			args[na++] = (struct rt_dnnl_arg){ DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST,
							   &k->aux_md[0], &z[1] };
		rt_dnnl_run(k->prim, name, na, args, &k->pad_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * Whether oneDNN multiplies bfloat16 in hardware here (AVX512-BF16:
 * vdpbf16ps, two products a lane per instruction, summed in float32): 527
 * GFLOP/s on one Zen 4 core for a 64x784x1024 matmul, its float32 kernel
 * 265.
 */
static int rt_dnnl_bf16_host(void)
{
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();

	return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

/*
 * y [batch..., m, n] = a [batch..., m, k] x b [(batch...,) k, n] + bias, then
 * the post-ops. nb batch dims d0..d3 (a's; b has them when bbatch, else is
 * one matrix); ta, tb: a, b stored transposed (2-D only). bias: NULL or
 * [m or 1, n or 1] with cm (bit 0: n runs, bit 1: m runs). With bf16 (b
 * constant, a not transposed) every value of a and b is a bfloat16's,
 * widened (a bfloat16 model's, core/passes/pass_widen.c): on a host with
 * AVX512-BF16 oneDNN multiplies them as bfloat16, a narrowed per run
 * and b once, both exactly, into float32 sums and y; elsewhere in float32.
 */
static void collagec_dnnl_matmul(struct rt_dnnl_cache *kc, const char *name, const float *a,
				 const float *b, const float *bias, const float *e0,
				 const float *e1, float *y, int64_t nb, int64_t d0, int64_t d1,
				 int64_t d2, int64_t d3, int64_t bbatch, int64_t m, int64_t n,
				 int64_t kk, int64_t ta, int64_t tb, int wconst, int64_t cm,
				 int64_t bf16, int bc0, int bc1, int p0, float a0, float b0, int p1,
				 float a1,
				 float b1, int p2, float a2, float b2, int p3, float a3, float b3,
				 int p4, float a4, float b4, int p5, float a5, float b5,
				 int threads)
{
	const int po[RT_DNNL_MAX_PO] = { p0, p1, p2, p3, p4, p5 };
	const float pa[RT_DNNL_MAX_PO] = { a0, a1, a2, a3, a4, a5 };
	const float pbt[RT_DNNL_MAX_PO] = { b0, b1, b2, b3, b4, b5 };
	const int64_t key[] = {
		nb, d0, d1, d2, d3, bbatch, m, n, kk, ta, tb, wconst, bias != NULL ? cm : -1,
		bf16, bc0, bc1, p0, p1, p2, p3, p4, p5, threads, (int64_t)(intptr_t)b,
	};
	int nt = threads > 1 ? threads : 1, prev, nd = (int)nb + 2;
	struct rt_dnnl_kernel *k;
	dnnl_data_type_t lt = bf16 && wconst && !ta && rt_dnnl_bf16_host() ? dnnl_bf16 : dnnl_f32;

	if (m <= 0 || n <= 0 || d0 * d1 * d2 * d3 <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t bd4[4] = { d0, d1, d2, d3 };
		int64_t ad[6], wdm[6], yd[6], cd[6];
		dnnl_dims_t adims, astr, wdims, wstr;
		dnnl_memory_desc_t user_wei, any_wei, low_src;
		dnnl_matmul_desc_t desc;
		dnnl_primitive_attr_t attr = NULL;
		int po_dnnl[RT_DNNL_MAX_PO];

		for (int i = 0; i < nb; i++) {
			ad[i] = yd[i] = bd4[i];
			wdm[i] = bbatch ? bd4[i] : 1;
			cd[i] = 1;
		}
		ad[nb] = yd[nb] = m;
		ad[nb + 1] = kk;
		wdm[nb] = kk;
		wdm[nb + 1] = yd[nb + 1] = n;
		cd[nb] = cm & 2 ? m : 1;
		cd[nb + 1] = cm & 1 ? n : 1;
		/* a and b may be stored transposed: dims stay [m, k], [k, n] */
		for (int i = 0; i < nd; i++) {
			adims[i] = ad[i];
			wdims[i] = wdm[i];
		}
		rt_dnnl_plain(&k->src_md, nd, ad);
		rt_dnnl_plain(&user_wei, nd, wdm);
		if (ta) {
			astr[0] = 1;
			astr[1] = m;
			rt_dnnl_fail(dnnl_memory_desc_init_by_strides(&k->src_md, 2, adims,
								      dnnl_f32, astr), name, "src");
		}
		if (tb) {
			wstr[0] = 1;
			wstr[1] = kk;
			rt_dnnl_fail(dnnl_memory_desc_init_by_strides(&user_wei, 2, wdims,
								      dnnl_f32, wstr), name,
				     "weights");
		}
		k->has_bias = bias != NULL;
		k->sum = rt_dnnl_sum_at(po, bc0, bc1);
		rt_dnnl_own_swish(k, po, pa, po_dnnl, nt);
		k->user_src = k->src_md;
		if (rt_dnnl_fail(rt_dnnl_plain(&k->user_dst, nd, yd), name, "dst") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->user_sum, nd, yd), name, "sum") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->bias_md, nd, cd), name, "bias") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_wei, nd, wdims, lt,
							      dnnl_format_tag_any), name,
				 "weights") ||
		    rt_dnnl_fail(rt_dnnl_dense(&low_src, nd, ad, lt), name, "src") ||
		    rt_dnnl_fail(dnnl_matmul_desc_init(&desc,
						       lt == dnnl_bf16 ? &low_src : &k->src_md,
						       wconst ? &any_wei : &user_wei,
						       k->has_bias ? &k->bias_md : NULL,
						       &k->user_dst), name, "matmul") ||
		    rt_dnnl_fail(rt_dnnl_attr(k, &attr, nd, yd, bc0, bc1, po_dnnl, pa, pbt), name,
				 "post-ops")) {
			if (attr)
				dnnl_primitive_attr_destroy(attr);
			goto out;
		}
		if (rt_dnnl_make(kc, k, name, &desc, attr, &user_wei, b, wconst) == 0)
			k->made = 1;
		dnnl_primitive_attr_destroy(attr);
		if (!k->made)
			goto out;
	}
	rt_dnnl_exec(k, name, a, b, bias, e0, e1, po, y);
out:
	rt_dnnl_leave(prev, nt);
}

/* ---- the standalone ops: plain layouts, no weights ---- */

/* Makes k->prim from op descriptor desc (attr may be NULL). */
static int rt_dnnl_make_op(struct rt_dnnl_kernel *k, const char *name, const_dnnl_op_desc_t desc,
			   const_dnnl_primitive_attr_t attr)
{
	dnnl_primitive_desc_t pd = NULL;
	int rc = 0;

	if (rt_dnnl_fail(rt_dnnl_pd(&pd, desc, attr, &k->pad_md), name, "no implementation"))
		return -1;
	if (rt_dnnl_fail(dnnl_primitive_create(&k->prim, pd), name, "primitive"))
		rc = -1;
	dnnl_primitive_desc_destroy(pd);
	if (rc == 0)
		k->made = 1;
	return rc;
}

/*
 * Makes k->prim from op descriptor desc whose src and dst may be in other
 * layouts than the plain k->user_src, k->user_dst: reorders at the edges.
 */
static int rt_dnnl_make_edges(struct rt_dnnl_kernel *k, const char *name,
			      const_dnnl_op_desc_t desc)
{
	dnnl_primitive_desc_t pd = NULL;
	int rc = 0;

	if (rt_dnnl_fail(rt_dnnl_pd(&pd, desc, NULL, &k->pad_md), name, "no implementation"))
		return -1;
	if (rt_dnnl_fail(dnnl_primitive_create(&k->prim, pd), name, "primitive") ||
	    rt_dnnl_edges(k, name, pd) < 0)
		rc = -1;
	dnnl_primitive_desc_destroy(pd);
	if (rc == 0)
		k->made = 1;
	return rc;
}

/* Runs k->prim (src, dst only) on x and y through the reorders at its edges. */
static void rt_dnnl_run_edges(struct rt_dnnl_kernel *k, const char *name, const float *x,
			      float *y)
{
	void *dst = k->dst_buf ? k->dst_buf : (void *)y;
	const void *src = rt_dnnl_edges_in(k, name, x, NULL, dst);

	if (!src)
		return;
	{
		const struct rt_dnnl_arg a[] = {
			{ DNNL_ARG_SRC, &k->src_md, src }, { DNNL_ARG_DST, &k->dst_md, dst },
		};

		rt_dnnl_run(k->prim, name, 2, a, &k->pad_md);
	}
	if (k->dst_out)
		rt_dnnl_move(k->dst_out, &k->dst_md, dst, &k->user_dst, y, name);
	rt_dnnl_fail(dnnl_stream_wait(rt_dnnl.stream), name, "reorder");
}

/* Pooling algorithms of collagec_dnnl_pool. */
enum rt_dnnl_pool {
	RT_DNNL_POOL_MAX,
	RT_DNNL_POOL_AVG_INCLUDE,	/* the pads count in the divisor */
	RT_DNNL_POOL_AVG_EXCLUDE,
	RT_DNNL_POOL_COUNT
};

/*
 * ---- pooling on the blocked layout: collagec's own kernel ----
 *
 * oneDNN 2.6's pooling is several times slower than ONNX Runtime's on every
 * layout, its blocked one included. So a pool whose x comes blocked (a
 * Conv's or pool's output: rt_dnnl_layout's channel blocks of B =
 * rt_dnnl_block()) runs here instead, over 1 or 2 spatial dims: an output
 * pixel of a block is B contiguous floats, the max or sum of the window's
 * taps, each B contiguous floats too, taken RT_DNNL_VL at a time in GCC
 * vectors. The window is clipped to the image once per output row and
 * column, so the taps' loops test nothing; only the clipping divides, and
 * only at the image's edges. Windows wholly inside run four at a time.
 *
 * Results are the c target's (backends/c/rt_cpool.h): a max is
 * NaN-propagating ((a > b) | (a != a) ? a : b: any NaN in the window gives
 * NaN), the pads never count in it, and a window wholly outside the image
 * gives -inf; an average divides the sum by the taps inside the image, or
 * with count_include_pad by those before the end pads (the caller's end
 * pads grow for ceil_mode only where that changes no count:
 * dnnl_target.c's pool_plan). That max as a blend made a chain of four
 * dependent instructions per tap; here a tap costs one maxps (which loses
 * a NaN tap) and a NaN test ORed aside, and the rare output row whose
 * tests found a NaN is taken again with c's max, so that its NaNs come
 * out as c's. The sum adds the taps row by row (c's each column first),
 * another rounding. Output rows are split over the model's threads; each
 * output is computed by one thread in a fixed order, the same at every
 * thread count.
 *
 * y is written in the layout the caller expects: blocked, or plain nchw,
 * a chunk of an output row at a time transposed from a buffer on the
 * stack (ResNet-18's global average pool hands c its plain [1, 512, 1]).
 */
#define RT_DNNL_POOL_CHUNK 32		/* output pixels per transposed chunk */

/* The geometry of a blocked pool; per dim 0 (rows) and 1 (columns). */
struct rt_dnnl_bpool {
	int64_t in[2], out[2], k[2], s[2], d[2], pb[2], pe[2];
	int64_t planes;			/* n * cb: channel blocks of every image */
	int64_t c, cb;			/* channels; blocks per image, the last padded */
	int64_t blk;			/* B */
	int alg;			/* enum rt_dnnl_pool */
	int dst_blocked;		/* y blocked too; else plain nchw */
};

/* a NaN-propagating max, as the c target's: a NaN a wins; else b when not a > b */
static inline rt_dnnl_vec rt_dnnl_vmax(rt_dnnl_vec a, rt_dnnl_vec b)
{
	rt_dnnl_ivec m = (a > b) | (a != a);

	return (rt_dnnl_vec)((m & (rt_dnnl_ivec)a) | (~m & (rt_dnnl_ivec)b));
}

/*
 * Taps [*k0, *k1) of dim i's window at output o inside the image (none:
 * *k0 == *k1); the division only where the window crosses an edge.
 */
static inline void rt_dnnl_bpool_clip(const struct rt_dnnl_bpool *g, int i, int64_t o,
				      int64_t *k0, int64_t *k1)
{
	int64_t st = o * g->s[i] - g->pb[i], d = g->d[i], last = g->in[i] - 1 - st;

	*k0 = st < 0 ? (-st + d - 1) / d : 0;
	*k1 = g->k[i];
	if (last < (g->k[i] - 1) * d)
		*k1 = last < 0 ? 0 : last / d + 1;
	if (*k1 < *k0)
		*k1 = *k0;
}

/* The taps of dim i's window at output o an average divides by (see the top). */
static inline int64_t rt_dnnl_bpool_count(const struct rt_dnnl_bpool *g, int i, int64_t o,
					  int64_t k0, int64_t k1)
{
	int64_t st = o * g->s[i] - g->pb[i], n = 0;

	if (g->alg != RT_DNNL_POOL_AVG_INCLUDE)
		return k1 - k0;
	for (int64_t k = 0; k < g->k[i]; k++)
		n += st + k * g->d[i] < g->in[i] + g->pe[i];
	return n;
}

/* max(a, b) as x86's maxps takes it: b when b > a, else a (so a NaN b is lost) */
static inline rt_dnnl_vec rt_dnnl_vmaxps(rt_dnnl_vec a, rt_dnnl_vec b)
{
	rt_dnnl_vec r;

	/* this form, lane by lane, GCC makes one maxps; the mask form a blend */
	for (int i = 0; i < RT_DNNL_VL; i++)
		r[i] = b[i] > a[i] ? b[i] : a[i];
	return r;
}

/* Whether any lane of m is set. */
static inline int rt_dnnl_any(rt_dnnl_ivec m)
{
	int r = 0;

	for (int i = 0; i < RT_DNNL_VL; i++)
		r |= m[i];
	return r != 0;
}

/*
 * The max of nr x nc taps from p, rs floats from row to row and cs from
 * column to column (-inf for none). Fast: one maxps a tap (x86's max: a
 * NaN tap is lost, a NaN max kept), its NaN test ORed into *nan apart from
 * the chain of maxima; exact: the c target's max, for the rows whose NaN
 * tests found one, so that each NaN comes out as c's does.
 */
static inline rt_dnnl_vec rt_dnnl_bpool_max(const float *p, int64_t nr, int64_t nc, int64_t rs,
					    int64_t cs, int exact, rt_dnnl_ivec *nan)
{
	rt_dnnl_vec acc = { 0 }, v;
	rt_dnnl_ivec m = *nan;

	acc -= INFINITY;
	if (exact) {
		for (int64_t r = 0; r < nr; r++, p += rs)
			for (int64_t c = 0; c < nc; c++)
				acc = rt_dnnl_vmax(acc, *(const rt_dnnl_uvec *)(p + c * cs));
		return acc;
	}
	for (int64_t r = 0; r < nr; r++, p += rs)
		for (int64_t c = 0; c < nc; c++) {
			v = *(const rt_dnnl_uvec *)(p + c * cs);
			acc = rt_dnnl_vmaxps(acc, v);
			m |= v != v;
		}
	*nan = m;
	return acc;
}

/* Lanes where a or b is NaN: all ones (one compare for two vectors' NaN tests) */
static inline rt_dnnl_ivec rt_dnnl_unord(rt_dnnl_vec a, rt_dnnl_vec b)
{
	rt_dnnl_ivec r;

	for (int i = 0; i < RT_DNNL_VL; i++)
		r[i] = __builtin_isunordered(a[i], b[i]) ? -1 : 0;
	return r;
}

/*
 * rt_dnnl_bpool_max's fast form for four neighbouring windows wholly
 * inside, the first at p, the next ps floats apart, to out, out + os, ...:
 * four chains of maxima in flight and the taps' loop paid once for four
 * pixels, faster than one window at a time.
 */
static inline void rt_dnnl_bpool_max4(const float *p, int64_t ps, int64_t nr, int64_t nc,
				      int64_t rs, int64_t cs, float *out, int64_t os,
				      rt_dnnl_ivec *nan)
{
	rt_dnnl_vec a0 = { 0 }, a1, a2, a3, v0, v1, v2, v3;
	rt_dnnl_ivec m = *nan;

	a0 -= INFINITY;
	a1 = a2 = a3 = a0;
	for (int64_t r = 0; r < nr; r++, p += rs)
		for (int64_t c = 0; c < nc; c++) {
			const float *q = p + c * cs;

			v0 = *(const rt_dnnl_uvec *)q;
			v1 = *(const rt_dnnl_uvec *)(q + ps);
			v2 = *(const rt_dnnl_uvec *)(q + 2 * ps);
			v3 = *(const rt_dnnl_uvec *)(q + 3 * ps);
			a0 = rt_dnnl_vmaxps(a0, v0);
			a1 = rt_dnnl_vmaxps(a1, v1);
			a2 = rt_dnnl_vmaxps(a2, v2);
			a3 = rt_dnnl_vmaxps(a3, v3);
			m |= rt_dnnl_unord(v0, v1) | rt_dnnl_unord(v2, v3);
		}
	*(rt_dnnl_uvec *)out = a0;
	*(rt_dnnl_uvec *)(out + os) = a1;
	*(rt_dnnl_uvec *)(out + 2 * os) = a2;
	*(rt_dnnl_uvec *)(out + 3 * os) = a3;
	*nan = m;
}

/*
 * rt_dnnl_bpool_sum for four neighbouring windows wholly inside, as
 * rt_dnnl_bpool_max4's, each divided by div.
 */
static inline void rt_dnnl_bpool_sum4(const float *p, int64_t ps, int64_t nr, int64_t nc,
				      int64_t rs, int64_t cs, float div, float *out, int64_t os)
{
	rt_dnnl_vec a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 };

	for (int64_t r = 0; r < nr; r++, p += rs)
		for (int64_t c = 0; c < nc; c++) {
			const float *q = p + c * cs;

			a0 += *(const rt_dnnl_uvec *)q;
			a1 += *(const rt_dnnl_uvec *)(q + ps);
			a2 += *(const rt_dnnl_uvec *)(q + 2 * ps);
			a3 += *(const rt_dnnl_uvec *)(q + 3 * ps);
		}
	*(rt_dnnl_uvec *)out = a0 / div;
	*(rt_dnnl_uvec *)(out + os) = a1 / div;
	*(rt_dnnl_uvec *)(out + 2 * os) = a2 / div;
	*(rt_dnnl_uvec *)(out + 3 * os) = a3 / div;
}

/* The sum of nr x nc taps from p (as rt_dnnl_bpool_max's); 0 for none. */
static inline rt_dnnl_vec rt_dnnl_bpool_sum(const float *p, int64_t nr, int64_t nc, int64_t rs,
					    int64_t cs)
{
	rt_dnnl_vec acc = { 0 };

	for (int64_t r = 0; r < nr; r++, p += rs)
		for (int64_t c = 0; c < nc; c++)
			acc += *(const rt_dnnl_uvec *)(p + c * cs);
	return acc;
}

/*
 * Pixels [ow0, ow1) of one output row, to out (pixel ow at out + (ow - ow0)
 * * B), from nr rows of input from xr, rs floats apart; the columns of each
 * window clipped to [0, W). Averages divide by rows times the columns'
 * count; maxima are rt_dnnl_bpool_max's, exact or fast (their NaN tests
 * ORed into *nan).
 */
static void rt_dnnl_bpool_cols(const struct rt_dnnl_bpool *g, const float *xr, int64_t nr,
			       int64_t rs, int64_t rows, int64_t ow0, int64_t ow1, float *out,
			       int exact, rt_dnnl_ivec *nan)
{
	const int64_t B = g->blk, W = g->in[1], kw = g->k[1], sw = g->s[1], dw = g->d[1];
	const int64_t pl = g->pb[1], cs = dw * B, last = W - 1 - (kw - 1) * dw + pl;
	const int max = g->alg == RT_DNNL_POOL_MAX;
	/* [lo, hi): the windows wholly inside, taken without clipping */
	int64_t lo = (pl + sw - 1) / sw, hi = last >= 0 ? last / sw + 1 : 0;

	lo = lo > ow0 ? lo : ow0;
	hi = hi < ow1 ? hi : ow1;
	for (int64_t ow = ow0; ow < ow1; ow++, out += B) {
		int64_t c0 = 0, c1 = kw, st = ow * sw - pl;
		const float *p = xr;
		float div = (float)(rows * kw);

		if (!exact && ow >= lo && ow + 4 <= hi) {
			for (int64_t j = 0; j < B; j += RT_DNNL_VL)
				if (max)
					rt_dnnl_bpool_max4(xr + st * B + j, sw * B, nr, kw, rs, cs,
							   out + j, B, nan);
				else
					rt_dnnl_bpool_sum4(xr + st * B + j, sw * B, nr, kw, rs, cs,
							   div, out + j, B);
			ow += 3;
			out += 3 * B;
			continue;
		}
		if (ow < lo || ow >= hi) {
			rt_dnnl_bpool_clip(g, 1, ow, &c0, &c1);
			div = (float)(rows * rt_dnnl_bpool_count(g, 1, ow, c0, c1));
		}
		/* an empty window reads nothing: p stays inside */
		if (c1 > c0)
			p += (st + c0 * dw) * B;
		for (int64_t j = 0; j < B; j += RT_DNNL_VL) {
			rt_dnnl_vec v;

			if (max)
				v = rt_dnnl_bpool_max(p + j, nr, c1 - c0, rs, cs, exact, nan);
			else
				v = rt_dnnl_bpool_sum(p + j, nr, c1 - c0, rs, cs) / div;
			*(rt_dnnl_uvec *)(out + j) = v;
		}
	}
}

/*
 * Pixels [ow0, ow1) of output row oh of one channel block, xb its input
 * (H x W pixels of B floats), to out (pixel ow at out + (ow - ow0) * B).
 */
static void rt_dnnl_bpool_row(const struct rt_dnnl_bpool *g, const float *xb, int64_t oh,
			      int64_t ow0, int64_t ow1, float *out)
{
	int64_t B = g->blk, W = g->in[1], r0, r1, rows = 0;
	rt_dnnl_ivec nan = { 0 };

	rt_dnnl_bpool_clip(g, 0, oh, &r0, &r1);
	if (g->alg != RT_DNNL_POOL_MAX)
		rows = rt_dnnl_bpool_count(g, 0, oh, r0, r1);
	if (r1 > r0)
		xb += (oh * g->s[0] - g->pb[0] + r0 * g->d[0]) * W * B;
	rt_dnnl_bpool_cols(g, xb, r1 - r0, g->d[0] * W * B, rows, ow0, ow1, out, 0, &nan);
	if (rt_dnnl_any(nan))
		rt_dnnl_bpool_cols(g, xb, r1 - r0, g->d[0] * W * B, rows, ow0, ow1, out, 1,
				   &nan);
}

/* Output rows [r0, r1) of planes * OH, each in its plane's channel block. */
static void rt_dnnl_bpool_rows(const struct rt_dnnl_bpool *g, const float *x, float *y,
			       int64_t r0, int64_t r1)
{
	float t[RT_DNNL_POOL_CHUNK * RT_DNNL_MAX_BLOCK];
	int64_t B = g->blk, OH = g->out[0], OW = g->out[1], plane = g->in[0] * g->in[1] * B;

	for (int64_t r = r0; r < r1; r++) {
		int64_t pi = r / OH, oh = r % OH;
		const float *xb = x + pi * plane;

		if (g->dst_blocked) {
			rt_dnnl_bpool_row(g, xb, oh, 0, OW, y + r * OW * B);
			continue;
		}
		/*
		 * plain: lane ch of block b of image img is channel b * B + ch
		 * of y, the padding's lanes none
		 */
		int64_t img = pi / g->cb, c0 = pi % g->cb * B;
		int64_t lanes = g->c - c0 < B ? g->c - c0 : B;

		for (int64_t o = 0; o < OW; o += RT_DNNL_POOL_CHUNK) {
			int64_t n = OW - o < RT_DNNL_POOL_CHUNK ? OW - o : RT_DNNL_POOL_CHUNK;

			rt_dnnl_bpool_row(g, xb, oh, o, o + n, t);
			for (int64_t ch = 0; ch < lanes; ch++) {
				float *yc = y + ((img * g->c + c0 + ch) * OH + oh) * OW + o;

				for (int64_t i = 0; i < n; i++)
					yc[i] = t[i * B + ch];
			}
		}
	}
}

/* Rows [lo, hi) of rt_dnnl_bpool_run on the pool. */
struct rt_dnnl_bpool_job {
	const struct rt_dnnl_bpool *g;
	const float *x;
	float *y;
};

static void rt_dnnl_bpool_job(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_bpool_job *j = v;

	rt_dnnl_bpool_rows(j->g, j->x, j->y, lo, hi);
}

/*
 * y = pool(x) for x blocked (B = rt_dnnl_block() <= RT_DNNL_MAX_BLOCK; the
 * padding lanes of a last block pooled like the others, and read by
 * nothing but another blocked op, whose oneDNN memory zeroes them), over 1
 * or 2 spatial dims: the geometry g, the output rows split over threads
 * (serial below what a team is worth, as rt_cpool.h's).
 */
static void rt_dnnl_bpool_run(const struct rt_dnnl_bpool *g, const float *x, float *y,
			      int threads)
{
	int64_t rows = g->planes * g->out[0];

	if (threads <= 1 || rows < 2 ||
	    rows * g->out[1] * g->k[0] * g->k[1] * g->blk < 65536) {
		rt_dnnl_bpool_rows(g, x, y, 0, rows);
		return;
	}
	rt_par_for(threads, rows, 1, rt_dnnl_bpool_job, &(struct rt_dnnl_bpool_job){ g, x, y });
}

/* fn over [0, n) on nt threads when work (elements) is worth a team, else here */
static void rt_dnnl_par(int nt, int64_t n, int64_t work, void (*fn)(void *, int64_t, int64_t),
			void *job)
{
	if (nt > 1 && work >= 65536)
		rt_par_for(nt, n, 1, fn, job);
	else
		fn(job, 0, n);
}

/* Planes [lo, hi) of rt_dnnl_gap_plain, channel blocks of rt_dnnl_gap_blocked. */
struct rt_dnnl_gap_job {
	const float *x;
	float *y;
	int64_t c, hw, cb, blk;
	int dst_blocked;
};

static void rt_dnnl_gap_rows(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_gap_job *j = v;
	int64_t c = j->c, hw = j->hw, cb = j->cb, blk = j->blk;

	for (int64_t p = lo; p < hi; p++) {
		const float *xp = j->x + p * hw;
		float sum;
		rt_dnnl_vec a = { 0 }, v;
		int64_t k = 0;

		for (; k + RT_DNNL_VL <= hw; k += RT_DNNL_VL) {
			memcpy(&v, xp + k, sizeof(v));
			a += v;
		}
		sum = rt_dnnl_hsum(a);
		for (; k < hw; k++)
			sum += xp[k];
		if (j->dst_blocked)
			j->y[(p / c * cb + p % c / blk) * blk + p % c % blk] = sum / (float)hw;
		else
			j->y[p] = sum / (float)hw;
	}
}

/*
 * A global average pool of a plain nchw x (GlobalAveragePool): a plane a
 * row of hw contiguous floats, summed in RT_DNNL_VL lanes combined
 * pairwise, then the rest in order; y plain [n * c] or blocked [n, cb,
 * blk] with the padding lanes 0. oneDNN reorders such an x to channels-last
 * for its jit pooling: 144 planes of 56x56 took 1 ms, this 0.06. Planes are
 * split over the model's threads, each summed by one thread in a fixed order.
 */
static void rt_dnnl_gap_plain(const float *x, float *y, int64_t n, int64_t c, int64_t hw,
			      int dst_blocked, int64_t blk, int threads)
{
	int64_t planes = n * c, cb = (c + blk - 1) / blk;
	struct rt_dnnl_gap_job jb = { x, y, c, hw, cb, blk, dst_blocked };

	if (dst_blocked)
		memset(y, 0, sizeof(float) * (size_t)(n * cb * blk));
	rt_dnnl_par(threads, planes, planes * hw, rt_dnnl_gap_rows, &jb);
}

/* Channel blocks [lo, hi) of rt_dnnl_gap_blocked. */
static void rt_dnnl_gap_blocks(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_gap_job *j = v;
	int64_t c = j->c, hw = j->hw, cb = j->cb, blk = j->blk;

	for (int64_t q = lo; q < hi; q++) {
		int64_t i = q / cb, c0 = q % cb * blk, live = c - c0 < blk ? c - c0 : blk;
		const float *xb = j->x + q * hw * blk;
		rt_dnnl_vec a[RT_DNNL_MAX_BLOCK / RT_DNNL_VL] = { { 0 } };
		float t[RT_DNNL_MAX_BLOCK];

		for (int64_t k = 0; k < hw * blk; k += blk)
			for (int64_t u = 0; u < blk / RT_DNNL_VL; u++)
				a[u] += *(const rt_dnnl_uvec *)(xb + k + u * RT_DNNL_VL);
		memcpy(t, a, sizeof(float) * (size_t)blk);
		for (int64_t l = 0; l < blk; l++)
			if (j->dst_blocked)
				j->y[q * blk + l] = t[l] / (float)hw;	/* padding lanes: 0 */
			else if (l < live)
				j->y[i * c + c0 + l] = t[l] / (float)hw;
	}
}

/*
 * A global average pool of a blocked x [n, cb, hw, blk] into y plain [n *
 * c] or blocked [n, cb, blk]: each block's lanes summed over hw in order
 * (the sums rt_dnnl_bpool_run makes, without its windows: EfficientNet-B0's
 * squeeze-and-excitation kernels took 0.69-0.70 ms at one thread with their
 * pools through it, 0.62-0.66 with this), blocks split over the model's
 * threads.
 */
static void rt_dnnl_gap_blocked(const float *x, float *y, int64_t n, int64_t c, int64_t hw,
				int dst_blocked, int64_t blk, int threads)
{
	int64_t cb = (c + blk - 1) / blk;
	struct rt_dnnl_gap_job jb = { x, y, c, hw, cb, blk, dst_blocked };

	rt_dnnl_par(threads, n * cb, n * cb * hw * blk, rt_dnnl_gap_blocks, &jb);
}

/*
 * y = pool(x): x [n, c, i0 (, i1 (, i2))], y [n, c, o0 ...] with nsp spatial
 * dims (1 to 3); kernel k*, strides s*, dilations d* as in ONNX (1 = none),
 * pads begin pb* and end pe* (the caller grows pe* for ceil_mode). lay:
 * which of x and y are blocked (enum rt_dnnl_lay). An average over the
 * whole of x runs rt_dnnl_gap_plain or _blocked, another pool of a blocked
 * x over 1 or 2 dims rt_dnnl_bpool_run, the rest oneDNN's pooling.
 */
static void collagec_dnnl_pool(struct rt_dnnl_cache *kc, const char *name, const float *x,
			       float *y, int64_t nsp, int64_t n, int64_t c, int64_t i0,
			       int64_t i1, int64_t i2, int64_t o0, int64_t o1, int64_t o2,
			       int64_t k0, int64_t k1, int64_t k2, int64_t s0, int64_t s1,
			       int64_t s2, int64_t d0, int64_t d1, int64_t d2, int64_t pb0,
			       int64_t pb1, int64_t pb2, int64_t pe0, int64_t pe1, int64_t pe2,
			       int64_t alg, int lay, int threads)
{
	static const dnnl_alg_kind_t algs[RT_DNNL_POOL_COUNT] = {
		[RT_DNNL_POOL_MAX] = dnnl_pooling_max,
		[RT_DNNL_POOL_AVG_INCLUDE] = dnnl_pooling_avg_include_padding,
		[RT_DNNL_POOL_AVG_EXCLUDE] = dnnl_pooling_avg_exclude_padding,
	};
	const int64_t key[] = {
		nsp, n, c, i0, i1, i2, o0, o1, o2, k0, k1, k2, s0, s1, s2, d0, d1, d2,
		pb0, pb1, pb2, pe0, pe1, pe2, alg, lay, threads,
	};
	int nt = threads > 1 ? threads : 1, prev, nd = (int)nsp + 2;
	int64_t blk = rt_dnnl_block();
	struct rt_dnnl_kernel *k;

	if (n <= 0 || c <= 0 || o0 * o1 * o2 <= 0)
		return;
	if (o0 * o1 * o2 == 1 && k0 == i0 && (nsp < 2 || k1 == i1) && (nsp < 3 || k2 == i2) &&
	    pb0 == 0 && pb1 == 0 && pb2 == 0 && pe0 == 0 && pe1 == 0 && pe2 == 0 &&
	    (alg == RT_DNNL_POOL_AVG_INCLUDE || alg == RT_DNNL_POOL_AVG_EXCLUDE) &&
	    (!(lay & RT_DNNL_LAY_SRC) || (blk <= RT_DNNL_MAX_BLOCK && blk % RT_DNNL_VL == 0))) {
		int64_t hw = i0 * (nsp >= 2 ? i1 : 1) * (nsp >= 3 ? i2 : 1);

		if (lay & RT_DNNL_LAY_SRC)
			rt_dnnl_gap_blocked(x, y, n, c, hw, (lay & RT_DNNL_LAY_DST) != 0, blk, nt);
		else
			rt_dnnl_gap_plain(x, y, n, c, hw, (lay & RT_DNNL_LAY_DST) != 0, blk, nt);
		return;
	}
	if (nsp <= 2 && (lay & RT_DNNL_LAY_SRC) && blk <= RT_DNNL_MAX_BLOCK &&
	    blk % RT_DNNL_VL == 0 && alg >= 0 && alg < RT_DNNL_POOL_COUNT) {
		/* 1-D as one row: H = OH = kernel = 1 */
		const struct rt_dnnl_bpool g = {
			.in = { nsp == 2 ? i0 : 1, nsp == 2 ? i1 : i0 },
			.out = { nsp == 2 ? o0 : 1, nsp == 2 ? o1 : o0 },
			.k = { nsp == 2 ? k0 : 1, nsp == 2 ? k1 : k0 },
			.s = { nsp == 2 ? s0 : 1, nsp == 2 ? s1 : s0 },
			.d = { nsp == 2 ? d0 : 1, nsp == 2 ? d1 : d0 },
			.pb = { nsp == 2 ? pb0 : 0, nsp == 2 ? pb1 : pb0 },
			.pe = { nsp == 2 ? pe0 : 0, nsp == 2 ? pe1 : pe0 },
			.planes = n * ((c + blk - 1) / blk),
			.c = c,
			.cb = (c + blk - 1) / blk,
			.blk = blk,
			.alg = (int)alg,
			.dst_blocked = (lay & RT_DNNL_LAY_DST) != 0,
		};

		rt_dnnl_bpool_run(&g, x, y, nt);
		return;
	}
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t win[7][3] = {
			{ i0, i1, i2 }, { o0, o1, o2 }, { k0, k1, k2 }, { s0, s1, s2 },
			{ d0, d1, d2 }, { pb0, pb1, pb2 }, { pe0, pe1, pe2 },
		};
		struct rt_dnnl_geom gm;
		dnnl_memory_desc_t src, any_dst;
		dnnl_pooling_v2_desc_t desc;
		/*
		 * channels last or blocked: oneDNN's jit pooling; on nchw it falls
		 * to its reference. A blocked x is read as it is.
		 */
		const dnnl_format_tag_t tag = nsp == 1 ? dnnl_nwc :
					      nsp == 2 ? dnnl_nhwc : dnnl_ndhwc;
		int blk = rt_dnnl_blocks(nd, lay & RT_DNNL_LAY_SRC);

		rt_dnnl_geom(&gm, nsp, n, c, c, win);
		if (alg < 0 || alg >= RT_DNNL_POOL_COUNT ||
		    rt_dnnl_fail(rt_dnnl_layout(&k->user_src, nd, gm.x,
						lay & RT_DNNL_LAY_SRC), name, "src") ||
		    rt_dnnl_fail(rt_dnnl_layout(&k->user_dst, nd, gm.y,
						lay & RT_DNNL_LAY_DST), name, "dst") ||
		    rt_dnnl_fail(blk ? rt_dnnl_layout(&src, nd, gm.x, 1) :
				 dnnl_memory_desc_init_by_tag(&src, nd, gm.xd, dnnl_f32, tag), name,
				 "src") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_dst, nd, gm.yd, dnnl_f32,
							      dnnl_format_tag_any), name, "dst") ||
		    rt_dnnl_fail(dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference,
								   algs[alg], &src, &any_dst,
								   gm.str, gm.kern, gm.dil,
								   gm.padl, gm.padr), name,
				 "pooling") ||
		    rt_dnnl_make_edges(k, name, &desc) < 0)
			goto out;
	}
	rt_dnnl_run_edges(k, name, x, y);
out:
	rt_dnnl_leave(prev, nt);
}

/* Rows, planes or channel blocks [lo, hi) of collagec_dnnl_scale. */
struct rt_dnnl_scale_job {
	const float *x, *s;
	float *y;
	int64_t c, hw, s_img, blk, cb;
	int src_b, dst_b;
};

/* [n, c] rows [lo, hi): pass_fold_scale's weights [m, c, 1, 1] times s */
static void rt_dnnl_scale_rows(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_scale_job *j = v;
	int64_t c = j->c;

	for (int64_t i = lo; i < hi; i++) {
		const float *xr = j->x + i * c, *sr = j->s + (j->s_img ? i * c : 0);
		float *yr = j->y + i * c;

		for (int64_t ch = 0; ch < c; ch++)
			yr[ch] = xr[ch] * sr[ch];
	}
}

/* plain planes [lo, hi) */
static void rt_dnnl_scale_planes(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_scale_job *j = v;
	int64_t hw = j->hw;

	for (int64_t p = lo; p < hi; p++) {
		const float *xp = j->x + p * hw;
		float *yp = j->y + p * hw, sv = j->s[j->s_img ? p : p % j->c];

		for (int64_t k = 0; k < hw; k++)
			yp[k] = xp[k] * sv;
	}
}

/* channel blocks [lo, hi), x or y or both blocked */
static void rt_dnnl_scale_blocks(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_scale_job *j = v;
	const float *x = j->x, *s = j->s;
	float *y = j->y;
	int64_t c = j->c, hw = j->hw, blk = j->blk, cb = j->cb, s_img = j->s_img;

	for (int64_t p = lo; p < hi; p++) {
		int64_t i = p / cb, c0 = p % cb * blk, live = c - c0 < blk ? c - c0 : blk;
		float sl[RT_DNNL_MAX_BLOCK] = { 0 };
		rt_dnnl_vec sv[RT_DNNL_MAX_BLOCK / RT_DNNL_VL];
		const float *xb = x + p * hw * blk, *xc = x + (i * c + c0) * hw;
		float *yb = y + p * hw * blk, *yc = y + (i * c + c0) * hw;

		for (int64_t l = 0; l < live; l++)
			sl[l] = s[(s_img ? i * c : 0) + c0 + l];
		memcpy(sv, sl, sizeof(float) * (size_t)blk);
		if (j->src_b && j->dst_b) {
			for (int64_t k = 0; k < hw * blk; k += blk)
				for (int64_t u = 0; u < blk / RT_DNNL_VL; u++)
					*(rt_dnnl_uvec *)(yb + k + u * RT_DNNL_VL) =
						*(const rt_dnnl_uvec *)(xb + k + u * RT_DNNL_VL) *
						sv[u];
		} else if (j->src_b) {
			/* to plain: channel by channel, each a strided walk of the block */
			for (int64_t l = 0; l < live; l++)
				for (int64_t k = 0; k < hw; k++)
					yc[l * hw + k] = xb[k * blk + l] * sl[l];
		} else {
			for (int64_t k = 0; k < hw; k++)
				for (int64_t l = 0; l < blk; l++)
					yb[k * blk + l] = l < live ? xc[l * hw + k] * sl[l] : 0.0f;
		}
	}
}

/*
 * y = x * s with s one value per channel (dnnl_target.c's scale_plan: a
 * squeeze-and-excitation block's Mul): x [n, c, hw], plain nchw or blocked
 * [n, cb, hw, B], y of x's shape in the layout lay says (enum rt_dnnl_lay),
 * s plain [n, c] (s_img) or [c]. Each element is one product, as c's Mul
 * computes it, in any layout and at any thread count. A blocked y's
 * padding lanes are written 0 (a blocked x's are 0 and meet a 0 scale).
 * Channel blocks (or planes, plain) are split over the model's threads.
 */
static void collagec_dnnl_scale(struct rt_dnnl_cache *kc, const char *name, const float *x,
				const float *s, float *y, int64_t n, int64_t c, int64_t hw,
				int64_t s_img, int lay, int threads)
{
	int64_t blk = rt_dnnl_block(), cb = (c + blk - 1) / blk;
	int nt = threads > 1 ? threads : 1;
	int src_b = (lay & RT_DNNL_LAY_SRC) != 0, dst_b = (lay & RT_DNNL_LAY_DST) != 0;
	struct rt_dnnl_scale_job j = { x, s, y, c, hw, s_img, blk, cb, src_b, dst_b };

	(void)kc;
	(void)name;
	if (n <= 0 || c <= 0 || hw <= 0)
		return;
	if (!src_b && !dst_b && hw == 1) {
		rt_dnnl_par(nt, n, n * c, rt_dnnl_scale_rows, &j);
		return;
	}
	if (!src_b && !dst_b) {
		rt_dnnl_par(nt, n * c, n * c * hw, rt_dnnl_scale_planes, &j);
		return;
	}
	if (blk > RT_DNNL_MAX_BLOCK || blk % RT_DNNL_VL != 0) {
		collagec_rt_abort("dnnl: no channel scale for this host's channel block");
		return;
	}
	rt_dnnl_par(nt, n * cb, n * cb * hw * blk, rt_dnnl_scale_blocks, &j);
}

/* The activations of collagec_dnnl_se (dnnl_target.c's enum se_act). */
enum rt_dnnl_se_act {
	RT_DNNL_SE_RELU,
	RT_DNNL_SE_SILU,
	RT_DNNL_SE_HARDSWISH,
	RT_DNNL_SE_SIGMOID,
	RT_DNNL_SE_HARDSIGMOID,		/* max(0, min(1, alpha * v + beta)) */
};

static float rt_dnnl_se_apply(int64_t act, float v, float alpha, float beta)
{
	switch (act) {
	case RT_DNNL_SE_RELU:
		return v > 0 ? v : 0.0f;
	case RT_DNNL_SE_SILU:
		return v / (1.0f + expf(-v));
	case RT_DNNL_SE_HARDSWISH:
		return v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f));
	case RT_DNNL_SE_SIGMOID:
		return 1.0f / (1.0f + expf(-v));
	default:
		return fmaxf(0.0f, fminf(1.0f, alpha * v + beta));
	}
}

/* y = f(w x + b) over the rows of w [rows, cols] (b or null). */
struct rt_dnnl_gemv_job {
	const float *w, *x, *b;
	float *y;
	int64_t rows, cols, act;
	float alpha, beta;
};

/*
 * Rows 4 lo to 4 hi of a rt_dnnl_gemv_job: four rows at a time, each
 * summed in two vectors of lanes over 2 RT_DNNL_VL columns at a time, then
 * the rest in order, so that a row's sum is the same whichever thread
 * computes it. Named accumulators, not arrays: GCC keeps these in
 * registers at -O2 (an array of them went through memory: 47 us against
 * 33 for MobileNetV3's 960 x 240 weights both ways, oneDNN's sgemm 30).
 */
static void rt_dnnl_gemv_rows(void *v, int64_t lo, int64_t hi)
{
	const struct rt_dnnl_gemv_job *j = v;
	const float *x = j->x;
	int64_t cols = j->cols, r_end = hi * 4 < j->rows ? hi * 4 : j->rows;

	for (int64_t r = lo * 4; r < r_end; r += 4) {
		const float *w[4];
		rt_dnnl_vec a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 };
		rt_dnnl_vec b0 = { 0 }, b1 = { 0 }, b2 = { 0 }, b3 = { 0 };
		float t[4];
		int64_t k = 0, nr = r_end - r < 4 ? r_end - r : 4;

		/* a last group of fewer rows repeats its last one */
		for (int l = 0; l < 4; l++)
			w[l] = j->w + (r + (l < nr ? l : nr - 1)) * cols;
		for (; k + 2 * RT_DNNL_VL <= cols; k += 2 * RT_DNNL_VL) {
			rt_dnnl_vec x0 = *(const rt_dnnl_uvec *)(x + k);
			rt_dnnl_vec x1 = *(const rt_dnnl_uvec *)(x + k + RT_DNNL_VL);

			a0 += *(const rt_dnnl_uvec *)(w[0] + k) * x0;
			b0 += *(const rt_dnnl_uvec *)(w[0] + k + RT_DNNL_VL) * x1;
			a1 += *(const rt_dnnl_uvec *)(w[1] + k) * x0;
			b1 += *(const rt_dnnl_uvec *)(w[1] + k + RT_DNNL_VL) * x1;
			a2 += *(const rt_dnnl_uvec *)(w[2] + k) * x0;
			b2 += *(const rt_dnnl_uvec *)(w[2] + k + RT_DNNL_VL) * x1;
			a3 += *(const rt_dnnl_uvec *)(w[3] + k) * x0;
			b3 += *(const rt_dnnl_uvec *)(w[3] + k + RT_DNNL_VL) * x1;
		}
		t[0] = rt_dnnl_hsum(a0 + b0);
		t[1] = rt_dnnl_hsum(a1 + b1);
		t[2] = rt_dnnl_hsum(a2 + b2);
		t[3] = rt_dnnl_hsum(a3 + b3);
		for (; k < cols; k++)
			for (int l = 0; l < 4; l++)
				t[l] += w[l][k] * x[k];
		for (int64_t l = 0; l < nr; l++)
			j->y[r + l] = rt_dnnl_se_apply(j->act, t[l] + (j->b ? j->b[r + l] : 0.0f),
						       j->alpha, j->beta);
	}
}

/*
 * A squeeze-and-excitation block (dnnl_target.c's se_plan) in one call:
 * x [n, c, hw] (plain, or blocked where lay says), p = its mean over hw,
 * s = gact(w2 act(w1 p + b1) + b2) with w1 [m, c], w2 [c, m] (b1, b2 or
 * null), then y = x * s (y of x's shape, blocked where lay says) or, where
 * wsc is given (one image), y = wsc * s with wsc [o, c]: the weights of
 * the next 1x1 Conv, where pass_fold_scale moved the scale. The pool is
 * collagec_dnnl_pool's (a global one, into plain p) and the scale
 * collagec_dnnl_scale's, split over the model's threads as theirs are; the
 * GEMVs' rows are too where they are large. It was four
 * kernels, each a oneDNN call or a pass over x: EfficientNet-B0's and
 * MobileNetV3's small ones took 4 to 30 us apiece.
 */
static void collagec_dnnl_se(struct rt_dnnl_cache *kc, const char *name, const float *x,
			     const float *w1, const float *b1, const float *w2, const float *b2,
			     const float *wsc, float *y, int64_t n, int64_t c, int64_t hw,
			     int64_t m, int64_t o, int64_t act, int64_t gact, float alpha,
			     float beta, int lay, int threads)
{
	int64_t need = n * (2 * c + m);
	int nt = threads > 1 ? threads : 1;
	float stack[4096], *p, *h, *s;

	if (n <= 0 || c <= 0 || hw <= 0 || m <= 0)
		return;
	p = need <= (int64_t)(sizeof(stack) / sizeof(stack[0])) ? stack :
	    malloc(sizeof(float) * (size_t)need);
	if (!p) {
		collagec_rt_abort("dnnl: out of memory for a squeeze-and-excitation block");
		return;
	}
	h = p + n * c;
	s = h + n * m;
	/* p = the global average pool of x, plain [n, c] */
	collagec_dnnl_pool(kc, name, x, p, 1, n, c, hw, 1, 1, 1, 1, 1, hw, 1, 1, 1, 1, 1, 1, 1,
			   1, 0, 0, 0, 0, 0, 0, RT_DNNL_POOL_AVG_EXCLUDE, lay & RT_DNNL_LAY_SRC,
			   threads);
	for (int64_t i = 0; i < n; i++) {
		struct rt_dnnl_gemv_job j1 = { w1, p + i * c, b1, h + i * m, m, c, act, 0, 0 };
		struct rt_dnnl_gemv_job j2 = { w2, h + i * m, b2, s + i * c, c, m, gact, alpha, beta };

		rt_dnnl_par(nt, (m + 3) / 4, m * c, rt_dnnl_gemv_rows, &j1);
		rt_dnnl_par(nt, (c + 3) / 4, m * c, rt_dnnl_gemv_rows, &j2);
	}
	if (wsc)
		collagec_dnnl_scale(kc, name, wsc, s, y, o, c, 1, 0, 0, threads);
	else
		collagec_dnnl_scale(kc, name, x, s, y, n, c, hw, 1, lay, threads);
	if (p != stack)
		free(p);
}

/* Algorithms of collagec_dnnl_eltwise (RT_DNNL_EW_NONE: no second one). */
enum rt_dnnl_ew {
	RT_DNNL_EW_NONE,
	RT_DNNL_EW_RELU,		/* alpha: negative slope */
	RT_DNNL_EW_TANH,
	RT_DNNL_EW_ELU,			/* alpha */
	RT_DNNL_EW_LINEAR,		/* alpha * x + beta */
	RT_DNNL_EW_LOGISTIC,
	RT_DNNL_EW_CLIP,		/* [alpha, beta] */
	RT_DNNL_EW_HARDSWISH,
	RT_DNNL_EW_EXP,
	RT_DNNL_EW_SQRT,
	RT_DNNL_EW_ABS,
	RT_DNNL_EW_ROUND,		/* half to even */
	RT_DNNL_EW_GELU_ERF,
	RT_DNNL_EW_GELU_TANH,
	RT_DNNL_EW_COUNT
};

/*
 * y = f2(f(x)) elementwise over ne elements: f is algorithm alg with alpha,
 * beta; f2 (alg2, a2, b2) RT_DNNL_EW_NONE or a second primitive run in
 * place on y (oneDNN 2.6's eltwise computed garbage with an eltwise
 * post-op).
 */
static void collagec_dnnl_eltwise(struct rt_dnnl_cache *kc, const char *name, const float *x,
				  float *y, int64_t ne, int64_t alg, float alpha, float beta,
				  int64_t alg2, float a2, float b2, int threads)
{
	static const dnnl_alg_kind_t algs[RT_DNNL_EW_COUNT] = {
		[RT_DNNL_EW_RELU] = dnnl_eltwise_relu,
		[RT_DNNL_EW_TANH] = dnnl_eltwise_tanh,
		[RT_DNNL_EW_ELU] = dnnl_eltwise_elu,
		[RT_DNNL_EW_LINEAR] = dnnl_eltwise_linear,
		[RT_DNNL_EW_LOGISTIC] = dnnl_eltwise_logistic,
		[RT_DNNL_EW_CLIP] = dnnl_eltwise_clip,
		[RT_DNNL_EW_HARDSWISH] = dnnl_eltwise_hardswish,
		[RT_DNNL_EW_EXP] = dnnl_eltwise_exp,
		[RT_DNNL_EW_SQRT] = dnnl_eltwise_sqrt,
		[RT_DNNL_EW_ABS] = dnnl_eltwise_abs,
		[RT_DNNL_EW_ROUND] = dnnl_eltwise_round,
		[RT_DNNL_EW_GELU_ERF] = dnnl_eltwise_gelu_erf,
		[RT_DNNL_EW_GELU_TANH] = dnnl_eltwise_gelu_tanh,
	};
	const int64_t key[] = { ne, alg, alg2, threads };
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (ne <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	/* alpha and beta are compile-time constants of the kernel: not in the key */
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		dnnl_eltwise_desc_t desc, desc2;

		if (alg <= RT_DNNL_EW_NONE || alg >= RT_DNNL_EW_COUNT || alg2 < 0 ||
		    alg2 >= RT_DNNL_EW_COUNT ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->src_md, 1, &ne), name, "src") ||
		    rt_dnnl_fail(dnnl_eltwise_forward_desc_init(&desc2, dnnl_forward_inference,
								algs[alg2 ? alg2 : alg],
								&k->src_md, a2, b2), name,
				 "eltwise") ||
		    (alg2 && rt_dnnl_make_op(k, name, &desc2, NULL) < 0))
			goto out;
		/* the second primitive first, moved aside */
		k->prim2 = k->prim;
		k->pad2_md = k->pad_md;
		k->prim = NULL;
		k->made = 0;
		if (rt_dnnl_fail(dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference,
								algs[alg], &k->src_md, alpha,
								beta), name, "eltwise") ||
		    rt_dnnl_make_op(k, name, &desc, NULL) < 0)
			goto out;
	}
	{
		const struct rt_dnnl_arg a[] = {
			{ DNNL_ARG_SRC, &k->src_md, x }, { DNNL_ARG_DST, &k->src_md, y },
			{ DNNL_ARG_SRC, &k->src_md, y },
		};

		rt_dnnl_run(k->prim, name, 2, a, &k->pad_md);
		if (k->prim2)
			rt_dnnl_run(k->prim2, name, 2, a + 1, &k->pad2_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * y = softmax(x) (log: log-softmax) along the middle dim of x viewed as
 * [outer, len, inner].
 */
static void collagec_dnnl_softmax(struct rt_dnnl_cache *kc, const char *name, const float *x,
				  float *y, int64_t outer, int64_t len, int64_t inner,
				  int64_t log, int threads)
{
	const int64_t key[] = { outer, len, inner, log, threads };
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (outer * len * inner <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t d[3] = { outer, len, inner };
		dnnl_softmax_v2_desc_t desc;

		if (rt_dnnl_fail(rt_dnnl_plain(&k->src_md, 3, d), name, "src") ||
		    rt_dnnl_fail(dnnl_softmax_v2_forward_desc_init(
				    &desc, dnnl_forward_inference,
				    log ? dnnl_softmax_log : dnnl_softmax_accurate, &k->src_md,
				    &k->src_md, 1), name, "softmax") ||
		    rt_dnnl_make_op(k, name, &desc, NULL) < 0)
			goto out;
	}
	{
		const struct rt_dnnl_arg a[] = {
			{ DNNL_ARG_SRC, &k->src_md, x }, { DNNL_ARG_DST, &k->src_md, y },
		};

		rt_dnnl_run(k->prim, name, 2, a, &k->pad_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * Inference BatchNormalization: y = scale * (x - mean) / sqrt(var + eps) +
 * shift over x viewed as [n, c, sp]; scale, shift, mean, var [c].
 */
static void collagec_dnnl_bnorm(struct rt_dnnl_cache *kc, const char *name, const float *x,
				const float *scale, const float *shift, const float *mean,
				const float *var, float *y, int64_t n, int64_t c, int64_t sp,
				float eps, int threads)
{
	const int64_t key[] = { n, c, sp, threads };
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (n * c * sp <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t d[3] = { n, c, sp };
		dnnl_batch_normalization_desc_t desc;

		if (rt_dnnl_fail(rt_dnnl_plain(&k->src_md, 3, d), name, "src") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->aux_md[0], 1, &c), name, "scale") ||
		    rt_dnnl_fail(dnnl_batch_normalization_forward_desc_init(
				    &desc, dnnl_forward_inference, &k->src_md, eps,
				    dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift), name,
				 "batch normalization") ||
		    rt_dnnl_make_op(k, name, &desc, NULL) < 0)
			goto out;
	}
	{
		const struct rt_dnnl_arg a[] = {
			{ DNNL_ARG_SRC, &k->src_md, x }, { DNNL_ARG_DST, &k->src_md, y },
			{ DNNL_ARG_SCALE, &k->aux_md[0], scale },
			{ DNNL_ARG_SHIFT, &k->aux_md[0], shift },
			{ DNNL_ARG_MEAN, &k->aux_md[0], mean },
			{ DNNL_ARG_VARIANCE, &k->aux_md[0], var },
		};

		rt_dnnl_run(k->prim, name, 6, a, &k->pad_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * LayerNormalization over the last dim of x viewed as [outer, len]:
 * y = (x - mean) / sqrt(var + eps) * scale + shift; scale, shift [len] or
 * NULL.
 */
static void collagec_dnnl_lnorm(struct rt_dnnl_cache *kc, const char *name, const float *x,
				const float *scale, const float *shift, float *y, int64_t outer,
				int64_t len, float eps, int threads)
{
	const int64_t key[] = { outer, len, scale != NULL, shift != NULL, threads };
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (outer * len <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t d[2] = { outer, len };
		dnnl_layer_normalization_desc_t desc;
		unsigned flags = (scale ? dnnl_use_scale : 0) | (shift ? dnnl_use_shift : 0);

		if (rt_dnnl_fail(rt_dnnl_plain(&k->src_md, 2, d), name, "src") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->aux_md[0], 1, &len), name, "scale") ||
		    rt_dnnl_fail(dnnl_layer_normalization_forward_desc_init(
				    &desc, dnnl_forward_inference, &k->src_md, NULL, eps, flags),
				 name, "layer normalization") ||
		    rt_dnnl_make_op(k, name, &desc, NULL) < 0)
			goto out;
	}
	{
		struct rt_dnnl_arg a[4] = {
			{ DNNL_ARG_SRC, &k->src_md, x }, { DNNL_ARG_DST, &k->src_md, y },
		};
		int na = 2;

		if (scale)
			a[na++] = (struct rt_dnnl_arg){ DNNL_ARG_SCALE, &k->aux_md[0], scale };
		if (shift)
			a[na++] = (struct rt_dnnl_arg){ DNNL_ARG_SHIFT, &k->aux_md[0], shift };
		rt_dnnl_run(k->prim, name, na, a, &k->pad_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * LRN across channels: y = x / (bias + alpha / size * sum of x^2 over the
 * size channels around)^beta, x viewed as [n, c, sp, 1].
 */
static void collagec_dnnl_lrn(struct rt_dnnl_cache *kc, const char *name, const float *x,
			      float *y, int64_t n, int64_t c, int64_t sp, int64_t size,
			      float alpha, float beta, float bias, int threads)
{
	const int64_t key[] = { n, c, sp, size, threads };
	int nt = threads > 1 ? threads : 1, prev;
	struct rt_dnnl_kernel *k;

	if (n * c * sp <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t d[4] = { n, c, sp, 1 };
		dnnl_lrn_desc_t desc;

		if (rt_dnnl_fail(rt_dnnl_plain(&k->src_md, 4, d), name, "src") ||
		    rt_dnnl_fail(dnnl_lrn_forward_desc_init(&desc, dnnl_forward_inference,
							    dnnl_lrn_across_channels, &k->src_md,
							    size, alpha, beta, bias), name,
				 "lrn") ||
		    rt_dnnl_make_op(k, name, &desc, NULL) < 0)
			goto out;
	}
	{
		const struct rt_dnnl_arg a[] = {
			{ DNNL_ARG_SRC, &k->src_md, x }, { DNNL_ARG_DST, &k->src_md, y },
		};

		rt_dnnl_run(k->prim, name, 2, a, &k->pad_md);
	}
out:
	rt_dnnl_leave(prev, nt);
}

/*
 * y = conv_transpose(x, w) + bias: x [n, c, i0 ...], w as ONNX stores it
 * [c, m / group, k0 ...], bias [m] or NULL, y [n, m, o0 ...] over nsp
 * spatial dims (1 to 3); strides s*, dilations d* as in ONNX (1 = none),
 * pads pb*, pe* (ONNX's output_padding left out of them: oneDNN's output
 * size rounds down to it). Like a Conv, src and dst in the layouts oneDNN
 * prefers (reordered at the edges) and constant weights reordered once.
 */
static void collagec_dnnl_deconv(struct rt_dnnl_cache *kc, const char *name, const float *x,
				 const float *w, const float *bias, float *y, int64_t nsp,
				 int64_t n, int64_t c, int64_t m, int64_t group, int64_t i0,
				 int64_t i1, int64_t i2, int64_t o0, int64_t o1, int64_t o2,
				 int64_t k0, int64_t k1, int64_t k2, int64_t s0, int64_t s1,
				 int64_t s2, int64_t d0, int64_t d1, int64_t d2, int64_t pb0,
				 int64_t pb1, int64_t pb2, int64_t pe0, int64_t pe1, int64_t pe2,
				 int wconst, int threads)
{
	static const int po[RT_DNNL_MAX_PO];
	const int64_t key[] = {
		nsp, n, c, m, group, i0, i1, i2, o0, o1, o2, k0, k1, k2, s0, s1, s2, d0, d1, d2,
		pb0, pb1, pb2, pe0, pe1, pe2, wconst, bias != NULL, threads, (int64_t)(intptr_t)w,
	};
	int nt = threads > 1 ? threads : 1, prev, nd = (int)nsp + 2;
	struct rt_dnnl_kernel *k;

	if (n <= 0 || m <= 0 || o0 * o1 * o2 <= 0)
		return;
	prev = rt_dnnl_enter(nt);
	if (rt_dnnl_engine(name) < 0)
		goto out;
	if (!rt_dnnl_cached(kc, key, (int)(sizeof(key) / sizeof(key[0])), &k)) {
		const int64_t win[7][3] = {
			{ i0, i1, i2 }, { o0, o1, o2 }, { k0, k1, k2 }, { s0, s1, s2 },
			{ d0, d1, d2 }, { pb0, pb1, pb2 }, { pe0, pe1, pe2 },
		};
		struct rt_dnnl_geom gm;
		int64_t ksz = 1;
		dnnl_dims_t wdd, wst;
		dnnl_memory_desc_t user_wei, any_wei, any_src, any_dst;
		dnnl_deconvolution_desc_t desc;
		int g = group > 1, wnd = nd + g;
		const int64_t bd[1] = { m };

		rt_dnnl_geom(&gm, nsp, n, c, m, win);
		for (int i = 0; i < nsp; i++)
			ksz *= win[2][i];
		/* logical [(g,) m/g, c/g, k...] over ONNX's [c, m/g, k...] */
		if (g) {
			wdd[0] = group;
			wst[0] = (c / group) * (m / group) * ksz;
		}
		wdd[g] = m / group;
		wst[g] = ksz;
		wdd[g + 1] = c / group;
		wst[g + 1] = (m / group) * ksz;
		for (int i = nsp - 1, st = 1; i >= 0; i--) {
			wdd[g + 2 + i] = win[2][i];
			wst[g + 2 + i] = st;
			st *= (int)win[2][i];
		}
		k->has_bias = bias != NULL;
		k->sum = 0;
		if (rt_dnnl_fail(rt_dnnl_plain(&k->user_src, nd, gm.x), name, "src") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->user_dst, nd, gm.y), name, "dst") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_src, nd, gm.xd, dnnl_f32,
							      dnnl_format_tag_any), name, "src") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_dst, nd, gm.yd, dnnl_f32,
							      dnnl_format_tag_any), name, "dst") ||
		    rt_dnnl_fail(rt_dnnl_plain(&k->bias_md, 1, bd), name, "bias") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_strides(&user_wei, wnd, wdd, dnnl_f32,
								  wst), name, "weights") ||
		    rt_dnnl_fail(dnnl_memory_desc_init_by_tag(&any_wei, wnd, wdd, dnnl_f32,
							      dnnl_format_tag_any), name,
				 "weights") ||
		    rt_dnnl_fail(dnnl_dilated_deconvolution_forward_desc_init(
				    &desc, dnnl_forward_inference, dnnl_deconvolution_direct,
				    &any_src, wconst ? &any_wei : &user_wei,
				    k->has_bias ? &k->bias_md : NULL, &any_dst, gm.str, gm.dil,
				    gm.padl, gm.padr), name, "deconvolution"))
			goto out;
		if (rt_dnnl_make(kc, k, name, &desc, NULL, &user_wei, w, wconst) == 0)
			k->made = 1;
		if (!k->made)
			goto out;
	}
	rt_dnnl_exec(k, name, x, w, bias, NULL, NULL, po, y);
out:
	rt_dnnl_leave(prev, nt);
}

#endif
