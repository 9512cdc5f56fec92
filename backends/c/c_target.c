/*
 * c_target.c - the native C target: every op, lowered through the generic
 * op lowering (relay_to_tir default) and printed as C by tir_to_runtime.
 * It is the universal fallback that makes every graph compilable.
 */
#include "../backends.h"

#include "../../core/emit/emit.h"
#include "../../core/tir/tir_print.h"

#include <string.h>

/* Least work estimate (see tir_dialect.parallel_fmt) worth a parallel region. */
#define PARALLEL_MIN_WORK 16384

static const struct target_option c_options[] = {
	{ "threads", "threads of parallel loop nests (0: collagec_set_threads decides)", 0, 256, 0, NULL },
	{ "fuse", "1: a partition's nodes fuse into shared loop nests (epilogues); 0: one kernel "
	  "per node", 0, 1, 1, NULL },
	{ "share", "kernels differing only in index constants share a function (0: never)",
	  0, 1, 1, NULL },
	{ "dwvec", "1: depthwise Convs may take conv.depthwise_vec (channels a vector); 0: never",
	  0, 1, 1, NULL },
	{ "winograd", "1: 3x3 stride-1 Convs may take conv.winograd (F(4x4, 3x3)); 0: never",
	  0, 1, 1, NULL },
	{ "chan", "1: 1x1 Convs over small images (7x7, 14x14) may take conv.1x1_chan (channels "
	  "a vector); 0: never", 0, 1, 1, NULL },
	{ NULL, NULL, 0, 0, 0, NULL },
};

/* An embedded runtime header's text. */
static const char *embedded_text(const char *name)
{
	const struct embedded_file *ef = embedded_find(name);

	if (!ef)
		BUG("%s is not embedded", name);
	return ef->data;
}

/*
 * The prelude of a module, from what its source calls: rt_cgemm.h (the
 * micro-kernel GEMM of the *.micro strategies) for rt_cgemm or rt_cconv2d,
 * rt_cconv.h (which needs rt_cgemm.h first) for rt_cconv2d, rt_crows.h for
 * rt_softmax_rows, rt_lnorm_rows, rt_rmsnorm_rows, rt_attn_rows and rt_mean_rows,
 * rt_cpool.h for rt_pool2d, rt_cdw.h for rt_cdw2d, rt_cpw.h for rt_cpw and
 * rt_cpwc_image (both after rt_cvec.h), rt_cvec.h for rt_cv_trans2d and rt_im2col2d,
 * rt_cquant.h (after rt_cipack.h, which packs their weights when the
 * model opens) for rt_cigemm, rt_ciconv2d, rt_dynquant, rt_quantize_u8 and
 * rt_qadd, rt_cnbits.h (after rt_cgemm.h) for rt_nbits, rt_cqpool.h for
 * rt_qmaxpool2d, rt_qavgpool2d, rt_qgap and rt_qconcat; NULL for none. Modules of one
 * model may get different preludes, each pasted once: the headers' include
 * guards make a second copy of one of them empty.
 */
static const char *c_prelude(struct graph *g, const char *source)
{
	bool wino = strstr(source, "rt_cwino2d"), conv = strstr(source, "rt_cconv2d");
	bool gemm = conv || wino || strstr(source, "rt_cgemm") || strstr(source, "rt_nbits");
	bool rows = strstr(source, "rt_softmax_rows") || strstr(source, "rt_lnorm_rows") ||
		    strstr(source, "rt_rmsnorm_rows") || strstr(source, "rt_attn_rows") ||
		    strstr(source, "rt_mean_rows");
	bool pool = strstr(source, "rt_pool2d"), dw = strstr(source, "rt_cdw2d");
	bool pw = strstr(source, "rt_cpw(") || strstr(source, "rt_cpwc_image(");
	bool tr = strstr(source, "rt_cv_trans2d") || strstr(source, "rt_im2col2d");
	bool quant = strstr(source, "rt_cigemm") || strstr(source, "rt_ciconv2d") ||
		     strstr(source, "rt_dynquant") || strstr(source, "rt_quantize_u8") ||
		     strstr(source, "rt_qadd");
	bool nbits = strstr(source, "rt_nbits");
	bool qpool = strstr(source, "rt_qmaxpool2d") || strstr(source, "rt_qavgpool2d") ||
		     strstr(source, "rt_qgap") || strstr(source, "rt_qconcat");
	struct strbuf sb = STRBUF_INIT;
	const char *r;

	if (!gemm && !rows && !pool && !quant && !dw && !pw && !qpool && !tr)
		return NULL;
	if (gemm && !conv && !wino && !rows && !pool && !quant && !nbits && !dw && !pw && !qpool &&
	    !tr)
		return embedded_text("rt_cgemm.h");
	if (gemm)
		sb_puts(&sb, embedded_text("rt_cgemm.h"));
	if (conv)
		sb_puts(&sb, embedded_text("rt_cconv.h"));
	if (wino)
		sb_puts(&sb, embedded_text("rt_cwino.h"));
	if (rows)
		sb_puts(&sb, embedded_text("rt_crows.h"));
	if (pool)
		sb_puts(&sb, embedded_text("rt_cpool.h"));
	if (dw || pw || tr)
		sb_puts(&sb, embedded_text("rt_cvec.h"));
	if (dw)
		sb_puts(&sb, embedded_text("rt_cdw.h"));
	if (pw)
		sb_puts(&sb, embedded_text("rt_cpw.h"));
	if (quant) {
		sb_puts(&sb, embedded_text("rt_cipack.h"));
		sb_puts(&sb, embedded_text("rt_cquant.h"));
	}
	if (nbits)
		sb_puts(&sb, embedded_text("rt_cnbits.h"));
	if (qpool)
		sb_puts(&sb, embedded_text("rt_cqpool.h"));
	r = arena_strdup(g->arena, sb_str(&sb));
	sb_release(&sb);
	return r;
}

/* Prints f as a C function with the executor's kernel ABI, after its outlined regions. */
static void print_func(const struct tir_func *f, const struct tir_dialect *d, struct strbuf *sb)
{
	struct strbuf fn = STRBUF_INIT;

	if (d->outline) {
		d->outline->name = f->name;
		d->outline->n = 0;
	}
	sb_printf(&fn, "RT_KERNEL void %s(void *const *bufs, const int64_t *syms, int threads)\n{\n",
		  f->name);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(&fn, "\t%s *restrict b%d = bufs[%d];\n", tir_ctype(f->bufs[i]->dtype), i, i);
	sb_puts(&fn, "\t(void)syms;\n\t(void)threads;\n");
	tir_print_stmt(f->body, d, &fn, 1);
	sb_puts(&fn, "}\n");
	if (d->outline) {
		sb_puts(sb, sb_str(&d->outline->pre));
		sb_release(&d->outline->pre);
	}
	sb_puts(sb, sb_str(&fn));
	sb_release(&fn);
}

/*
 * Prints a kernel: its function, or with run-time specializations one
 * function per variant and a dispatcher that tests their conditions in order.
 */
void c_print_kernel(const struct kernel *k, const struct tir_dialect *d, struct strbuf *sb)
{
	kernel_comment(k, sb);
	if (k->n_variants <= 1) {
		print_func(k->func, d, sb);
		return;
	}
	for (int i = 0; i < k->n_variants; i++)
		print_func(k->variants[i].func, d, sb);
	kernel_dispatcher(k, d, sb);
}

void c_parallel_dialect(struct arena *a, int64_t nt, struct tir_dialect *d)
{
	struct tir_outline *o = arena_alloc(a, sizeof(*o));

	/*
	 * Parallel nests become functions the model's thread pool runs
	 * (rt_par_for, runtime/rt_par.c: it spins briefly, then sleeps,
	 * where OpenMP's idle threads spin for milliseconds).
	 * Small nests run serially: a parallel region costs microseconds, and
	 * far more when another process holds a core and the team waits on it.
	 * The serial version is the plain nest, inline, fully optimised.
	 * c_plan_parallel already made nests of static work serial; the
	 * condition decides for the others at run time.
	 */
	*o = (struct tir_outline){ .restrict_bufs = true };
	d->parallel_fmt = NULL;
	d->outline = o;
	if (nt > 0) {
		o->threads = arena_printf(a, "%lld", (long long)nt);
		d->parallel_if_fmt = arena_printf(a, "%%s >= %d", PARALLEL_MIN_WORK);
		d->extern_tail = arena_printf(a, ", %lld", (long long)nt);
	} else {
		o->threads = "threads";
		d->parallel_if_fmt = arena_printf(a, "threads > 1 && %%s >= %d", PARALLEL_MIN_WORK);
		d->extern_tail = ", threads";
	}
}

int c_plan_parallel(struct graph *g, const struct target *t, struct partition *p)
{
	(void)g;
	(void)t;
	for (int i = 0; i < p->kernels.n; i++) {
		struct kernel *k = &p->kernels.v[i];

		for (int v = 0; v < k->n_variants; v++)
			tir_plan_parallel(k->variants[v].func, PARALLEL_MIN_WORK);
		if (k->func)
			tir_plan_parallel(k->func, PARALLEL_MIN_WORK);
	}
	return 0;
}

/* k's printed code without its comment, every k->name in it replaced by '@' (arena). */
static const char *normalised(struct arena *a, const struct kernel *k, const char *text)
{
	const char *end = strstr(text, "*/\n"), *p;
	struct strbuf sb = STRBUF_INIT;
	size_t n = strlen(k->name);
	const char *r;

	p = end ? end + 3 : text;
	for (const char *q; (q = strstr(p, k->name)); p = q + n) {
		sb_printf(&sb, "%.*s@", (int)(q - p), p);
	}
	sb_puts(&sb, p);
	r = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return r;
}

/*
 * Prints each kernel once per model: a kernel whose code is an earlier
 * one's (the same op, shapes and schedule; its buffers come from the step's
 * arguments) calls that one's function instead (k->symbol).
 */
static void print_kernel_once(struct graph *g, struct kernel *k, const struct tir_dialect *d,
			      struct strbuf *out)
{
	struct strbuf t = STRBUF_INIT;
	const char *code;
	int j;

	c_print_kernel(k, d, &t);
	code = normalised(g->arena, k, sb_str(&t));
	if ((j = strmap_get(&g->kernel_texts, code)) >= 0) {
		k->symbol = g->kernel_syms.v[j];
	} else {
		strmap_put(&g->kernel_texts, code, g->kernel_syms.n);
		vec_push(&g->kernel_syms, k->name);
		sb_puts(out, sb_str(&t));
	}
	sb_release(&t);
}

static int c_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			    struct runtime_module *m)
{
	/* parallel loop nests run on the model's pool: -threads=N, or the run-time count */
	struct tir_dialect d = tir_dialect_c;

	c_parallel_dialect(g->arena, target_opt(t, "threads"), &d);
	for (int i = 0; i < p->kernels.n; i++)
		print_kernel_once(g, &p->kernels.v[i], &d, &m->source);
	m->standalone = true;
	m->prelude = c_prelude(g, sb_str(&m->source));
	/* ImageDecoder: the decoders and their libraries, in this model only */
	if (strstr(sb_str(&m->source), "rt_image_decode")) {
		m->prelude = m->prelude ? arena_printf(g->arena, "%s%s", m->prelude,
						       embedded_text("rt_image.h"))
			: embedded_text("rt_image.h");
		vec_push(&m->ldlibs, "-ljpeg -lpng -ltiff -lwebp -lopenjp2");
	}
	return 0;
}

const struct target_kind target_kind_c = {
	.api_version = TARGET_API_VERSION,
	.name = "c",
	.device = "cpu",
	.description = "portable C from loop IR; runs every op",
	.options = c_options,
	.unavailable = NULL,
	.supports = NULL,
	.relay_to_tir = NULL,
	.plan_parallel = c_plan_parallel,
	.tir_to_runtime = c_tir_to_runtime,
	.relay_to_runtime = NULL,
	.strategies = c_strategies,
	.share_constants = true,
	.q8_cl_writes = c_q8_cl_writes,
	.q8_cl_reads = c_q8_cl_reads,
	.q8_cl_elementwise = true,
};
