/*
 * lapack_target.c - the LAPACK target: Det through LAPACKE's LU
 * factorisation (sgetrf/dgetrf). Its rule takes Det nodes with a float32 or
 * float64 input of static shape; relay_to_tir makes one kernel per node whose
 * body is a single call_extern of a helper, and tir_to_runtime prints the
 * helpers (once per model) and the kernels, linking -llapacke.
 *
 * The helper, per matrix of the batch: copy into scratch (getrf overwrites
 * it), factor in row-major order, multiply the diagonal of U and flip the
 * sign once per row interchange (ipiv is 1-based: row i was swapped with
 * ipiv[i] - 1). A singular matrix (info > 0) has determinant 0.
 *
 * Several partitions of this target each get a tir_to_runtime call and all
 * sources end up in one model.c, so the helpers sit behind an #ifndef guard.
 */
#include "../backends.h"

#include <dlfcn.h>
#include <unistd.h>

#include "../../core/tir/tir_print.h"

#define LAPACKE_HEADER "/usr/include/lapacke.h"
#define LAPACKE_SONAME "liblapacke.so.3"

static const char *lapack_unavailable(void)
{
	void *h;

	if (access(LAPACKE_HEADER, R_OK) != 0)
		return "LAPACKE is not installed (no readable " LAPACKE_HEADER
		       "; apt-get install liblapacke-dev)";
	h = dlopen(LAPACKE_SONAME, RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return "LAPACKE is not installed (cannot load " LAPACKE_SONAME
		       "; apt-get install liblapacke-dev)";
	dlclose(h);
	return NULL;
}

static bool lapack_supports(struct graph *g, const struct node *n)
{
	const struct value *x, *y;

	if (n->op != OP_DET || n->n_in != 1 || n->n_out != 1)
		return false;
	x = node_in(g, n, 0);
	y = node_out(g, n, 0);
	if (!x || !x->has_shape || !y->has_shape || x->shape.rank < 2)
		return false;
	if (x->dtype != DTYPE_F32 && x->dtype != DTYPE_F64)
		return false;
	return shape_is_static(&x->shape) && shape_is_static(&y->shape);
}

/* relay_to_tir: per Det node, helper(&x[0], &y[0], batch, n). */
static int lapack_relay_to_tir(struct graph *g, const struct target *t, struct partition *p)
{
	(void)t;
	for (int i = 0; i < p->n_nodes; i++) {
		struct node *n = &g->nodes.v[p->nodes[i]];
		const struct value *x = node_in(g, n, 0);
		int r = x->shape.rank;
		int64_t m = x->shape.d[r - 1].c, batch = 1;
		struct tir_builder b;
		struct kernel k = { 0 };
		struct tir_buf *in, *out;
		struct tir *args[4];

		for (int d = 0; d < r - 2; d++)
			batch *= x->shape.d[d].c;
		tir_builder_init(&b, g->arena,
				 arena_printf(g->arena, "k%d_%d_lapack_det", p->id, i));
		in = tir_param(&b, "x", x->dtype);
		out = tir_param(&b, "y", x->dtype);
		args[0] = tir_addr(&b, in, tir_int(&b, 0));
		args[1] = tir_addr(&b, out, tir_int(&b, 0));
		args[2] = tir_int(&b, batch);
		args[3] = tir_int(&b, m);
		tir_extern(&b, x->dtype == DTYPE_F64 ? "collagec_lapack_det_f64"
			   : "collagec_lapack_det_f32", args, 4);
		k.name = b.name;
		k.func = tir_finish(&b);
		tir_builder_release(&b);
		k.n_args = 2;
		k.n_inputs = 1;
		k.args = arena_alloc(g->arena, 2 * sizeof(int));
		k.args[0] = n->in[0];
		k.args[1] = n->out[0];
		k.span = n->span;
		vec_push(&p->kernels, k);
	}
	return 0;
}

/*
 * The helpers, one per precision, each behind its own guard and emitted only
 * by a partition that calls it (no unused static function). Scratch is
 * allocated once per call; if that fails the kernel (which cannot report
 * errors) writes NaN. The pivots' product is taken in double.
 */
#define LAPACK_HELPER(SUF, T, GETRF)							\
	"#ifndef COLLAGEC_LAPACK_DET_" SUF "\n"						\
	"#define COLLAGEC_LAPACK_DET_" SUF "\n"						\
	"static void collagec_lapack_det_" SUF "(const " T " *a, " T " *out, "		\
	"int64_t batch, int64_t n)\n"							\
	"{\n"										\
	"\t" T " *lu = malloc((size_t)(n * n) * sizeof(" T "));\n"			\
	"\tlapack_int *ipiv = malloc((size_t)n * sizeof(lapack_int));\n"		\
	"\n"										\
	"\tpthread_once(&collagec_lapack_once, collagec_lapack_quiet);\n"		\
	"\tfor (int64_t b = 0; b < batch; b++) {\n"					\
	"\t\tdouble det = 1;\n"								\
	"\t\tlapack_int info;\n"							\
	"\n"										\
	"\t\tif (!lu || !ipiv) {\n"							\
	"\t\t\tout[b] = (" T ")NAN;\n"							\
	"\t\t\tcontinue;\n"								\
	"\t\t}\n"									\
	"\t\tmemcpy(lu, a + b * n * n, (size_t)(n * n) * sizeof(" T "));\n"		\
	"\t\tinfo = " GETRF "(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, lu, "	\
	"(lapack_int)n, ipiv);\n"							\
	"\t\tif (info != 0) {\n"							\
	"\t\t\t/* > 0: U(info, info) is exactly zero, a singular matrix */\n"	\
	"\t\t\tout[b] = info > 0 ? 0 : (" T ")NAN;\n"					\
	"\t\t\tcontinue;\n"								\
	"\t\t}\n"									\
	"\t\tfor (int64_t i = 0; i < n; i++) {\n"					\
	"\t\t\tdet *= lu[i * n + i];\n"							\
	"\t\t\tif (ipiv[i] != (lapack_int)(i + 1))\n"					\
	"\t\t\t\tdet = -det;\n"								\
	"\t\t}\n"									\
	"\t\tout[b] = (" T ")det;\n"							\
	"\t}\n"										\
	"\tfree(ipiv);\n"								\
	"\tfree(lu);\n"									\
	"}\n"										\
	"#endif\n"

static const char lapack_prelude[] =
	"\n/* lapack target: Det through LAPACKE getrf */\n"
	"#ifndef COLLAGEC_LAPACK_PRELUDE\n"
	"#define COLLAGEC_LAPACK_PRELUDE\n"
	"#include <math.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	/* the complex types without <complex.h>, whose I and complex macros
	   would leak into the rest of model.c */
	"#ifndef LAPACK_COMPLEX_CUSTOM\n"
	"#define LAPACK_COMPLEX_CUSTOM\n"
	"#define lapack_complex_float float _Complex\n"
	"#define lapack_complex_double double _Complex\n"
	"#endif\n"
	"#include <lapacke.h>\n"
	"#include <pthread.h>\n"
	/*
	 * LAPACK is OpenBLAS's where Debian's OpenBLAS is installed: its
	 * threaded build starts its threads when it loads, and they spin for
	 * a tenth of a second or more against the model's own pool (what
	 * rt_blas.h stops for blas). Stopped once here too; weak, as a
	 * reference LAPACK and BLAS have neither function.
	 */
	"void openblas_set_num_threads(int num_threads) __attribute__((weak));\n"
	"int blas_thread_shutdown_(void) __attribute__((weak));\n"
	"static void collagec_lapack_quiet(void)\n"
	"{\n"
	"\tif (openblas_set_num_threads)\n"
	"\t\topenblas_set_num_threads(1);\n"
	"\tif (blas_thread_shutdown_)\n"
	"\t\tblas_thread_shutdown_();\n"
	"}\n"
	"static pthread_once_t collagec_lapack_once = PTHREAD_ONCE_INIT;\n"
	"#endif\n";

static const char lapack_det_f32[] = LAPACK_HELPER("f32", "float", "LAPACKE_sgetrf");
static const char lapack_det_f64[] = LAPACK_HELPER("f64", "double", "LAPACKE_dgetrf");

static int lapack_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
				 struct runtime_module *m)
{
	bool f32 = false, f64 = false;

	(void)g;
	(void)t;
	for (int i = 0; i < p->kernels.n; i++) {
		if (p->kernels.v[i].func->bufs[0]->dtype == DTYPE_F64)
			f64 = true;
		else
			f32 = true;
	}
	sb_puts(&m->source, lapack_prelude);
	if (f32)
		sb_puts(&m->source, lapack_det_f32);
	if (f64)
		sb_puts(&m->source, lapack_det_f64);
	for (int i = 0; i < p->kernels.n; i++)
		c_print_kernel(&p->kernels.v[i], &tir_dialect_c, &m->source);
	vec_push(&m->ldlibs, "-llapacke");
	return 0;
}

const struct target_kind target_kind_lapack = {
	.api_version = TARGET_API_VERSION,
	.name = "lapack",
	.device = "cpu",
	.description = "LAPACKE (sgetrf/dgetrf); runs Det on float32/float64 of static shape",
	.options = NULL,
	.unavailable = lapack_unavailable,
	.supports = lapack_supports,
	.relay_to_tir = lapack_relay_to_tir,
	.tir_to_runtime = lapack_tir_to_runtime,
	.relay_to_runtime = NULL,
};
