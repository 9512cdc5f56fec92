/*
 * opencl_test.c - the printer's type hook (a dialect's own spelling of
 * dtypes; C's unchanged) and the opencl target's tir_to_runtime on hand-made
 * kernels: which loop nests become NDRanges (marked parallel, or proven to
 * touch disjoint elements of what they write) and which stay a single
 * work-item because iterations share an element. The target tests pass
 * trivially where `collagec targets` reports opencl unavailable.
 */
#include "test.h"

#include <stdlib.h>

#include "../../backends/backends.h"
#include "../../core/tir/tir_print.h"

struct fixture {
	struct collagec_ctx ctx;
	struct strbuf cap;
	struct graph *g;
	struct arena a;
};

static void fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	ctx_init(&f->ctx);
	f->ctx.diag_out = NULL;
	f->ctx.capture = &f->cap;
	f->g = graph_new(&f->ctx);
}

static void fx_release(struct fixture *f)
{
	graph_free(f->g);
	sb_release(&f->cap);
	ctx_release(&f->ctx);
	arena_release(&f->a);
}

static const char *cl_type(enum dtype t)
{
	return t == DTYPE_I64 ? "long" : t == DTYPE_BOOL ? "uchar" : t == DTYPE_I32 ? "int"
		: tir_ctype(t);
}

/* Casts, typed constants, locals and loop variables take the dialect's names. */
static void test_dialect_types(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *x, *y, *z;
	struct tir *i, *t;
	struct tir_func *f;
	struct tir_dialect d = tir_dialect_c;
	struct strbuf sb = STRBUF_INIT;

	tir_builder_init(&b, &a, "types");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_BOOL);
	z = tir_param(&b, "z", DTYPE_I32);
	i = tir_loop(&b, tir_int(&b, 4));
	t = tir_let(&b, "t", tir_cast(&b, DTYPE_I32, i));
	tir_store(&b, y, i, tir_cast(&b, DTYPE_BOOL, tir_load(&b, x, i)));
	tir_store(&b, z, i, tir_bin(&b, BIN_ADD, t, tir_typed_int(&b, DTYPE_I32, 3)));
	tir_end(&b);
	f = tir_finish(&b);
	tir_print_stmt(f->body, &tir_dialect_c, &sb, 0);
	ASSERT_STR("for (int64_t i0 = 0; i0 < 4; i0++) {\n"
		   "\tint32_t t1 = ((int32_t)i0);\n"
		   "\tb1[i0] = ((uint8_t)((b0[i0]) != 0));\n"
		   "\tb2[i0] = (t1 + ((int32_t)3));\n"
		   "}\n", sb_str(&sb));
	sb_reset(&sb);
	d.ctype = cl_type;
	tir_print_stmt(f->body, &d, &sb, 0);
	ASSERT_STR("for (long i0 = 0; i0 < 4; i0++) {\n"
		   "\tint t1 = ((int)i0);\n"
		   "\tb1[i0] = ((uchar)((b0[i0]) != 0));\n"
		   "\tb2[i0] = (t1 + ((int)3));\n"
		   "}\n", sb_str(&sb));
	sb_release(&sb);
	arena_release(&a);
}

/* ---- tir_to_runtime on one kernel over float buffers x (in) and y (out) ---- */

#define NX 12
#define NY 12

/* The model source tir_to_runtime prints for f (x, y of 12 floats); NULL if unavailable. */
static char *ocl_source(struct fixture *fx, struct tir_func *f)
{
	const struct target_kind *kinds[] = { &target_kind_opencl };
	struct partition p = { 0 };
	struct kernel k = { 0 };
	struct runtime_module m;
	struct target *t;
	char *src;
	int rc;

	if (target_kind_opencl.unavailable())
		return NULL;
	memset(&m, 0, sizeof(m));
	for (int i = 0; i < 2; i++) {
		int v = graph_add_value(fx->g, i ? "y" : "x");

		fx->g->values.v[v].dtype = DTYPE_F32;
		fx->g->values.v[v].has_shape = true;
		fx->g->values.v[v].shape.rank = 1;
		fx->g->values.v[v].shape.d[0] = dim_const(i ? NY : NX);
	}
	t = target_parse(&fx->ctx, kinds, 1, "opencl");
	ASSERT_TRUE(t != NULL);
	k.name = f->name;
	k.func = f;
	k.n_args = 2;
	k.n_inputs = 1;
	k.args = arena_alloc(fx->g->arena, 2 * sizeof(int));
	k.args[0] = fx->g->values.n - 2;
	k.args[1] = fx->g->values.n - 1;
	p.target = t;
	vec_push(&p.kernels, k);
	/* the parallel step decides the NDRanges, the printer prints them */
	rc = target_kind_opencl.plan_parallel(fx->g, t, &p);
	if (rc == 0)
		rc = target_kind_opencl.tir_to_runtime(fx->g, t, &p, &m);
	vec_free(&p.kernels);
	vec_free(&m.ldlibs);
	ASSERT(0, rc);
	src = sb_detach(&m.source);
	return src;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void check(struct fixture *fx, struct tir_builder *b, int kernels, int dims)
{
	struct tir_func *f = tir_finish(b);
	char *src = ocl_source(fx, f);

	if (!src)
		return;
	if (count(src, "__kernel void") != kernels || count(src, "get_global_id(") != dims)
		fprintf(stderr, "%s\n", src);
	ASSERT(kernels, count(src, "__kernel void"));
	ASSERT(dims, count(src, "get_global_id("));
	free(src);
}

/* y[j * 3 + i] = x[i * 4 + j], i < 3, j < 4, not marked: proven, 2 dims */
static void test_transpose_proven(void)
{
	struct fixture fx;
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i, *j;

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "tr");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 3));
	j = tir_loop(&b, tir_int(&b, 4));
	tir_store(&b, y, tir_add(&b, tir_mul(&b, j, tir_int(&b, 3)), i),
		  tir_load(&b, x, tir_add(&b, tir_mul(&b, i, tir_int(&b, 4)), j)));
	tir_end(&b);
	tir_end(&b);
	check(&fx, &b, 1, 2);
	fx_release(&fx);
}

/* y[0] += x[i]: every iteration writes y[0], a single work-item */
static void test_reduction_serial(void)
{
	struct fixture fx;
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i, *zero;

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "red");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 12));
	zero = tir_int(&b, 0);
	tir_store(&b, y, zero, tir_bin(&b, BIN_ADD, tir_load(&b, y, zero), tir_load(&b, x, i)));
	tir_end(&b);
	check(&fx, &b, 1, 0);
	fx_release(&fx);
}

/* y[i] = y[i + 1] + x[i]: reads what the next iteration writes */
static void test_shift_serial(void)
{
	struct fixture fx;
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i;

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "shift");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 11));
	tir_store(&b, y, i, tir_bin(&b, BIN_ADD, tir_load(&b, y, tir_add(&b, i, tir_int(&b, 1))),
				    tir_load(&b, x, i)));
	tir_end(&b);
	check(&fx, &b, 1, 0);
	fx_release(&fx);
}

/*
 * for i < 3 { t = x[i]; for j < 4: y[i + S * j] = t }: stride S = 3
 * interleaves the rows (proven: the whole index is injective), S = 2 makes
 * rows overlap (i = 2, j = 0 and i = 0, j = 1): serial.
 */
static void strided(int stride, int dims)
{
	struct fixture fx;
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i, *j, *t;

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "strided");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 3));
	t = tir_let(&b, "t", tir_load(&b, x, i));
	j = tir_loop(&b, tir_int(&b, 4));
	tir_store(&b, y, tir_add(&b, i, tir_mul(&b, tir_int(&b, stride), j)), t);
	tir_end(&b);
	tir_end(&b);
	check(&fx, &b, 1, dims);
	fx_release(&fx);
}

static void test_strided_interleaved(void)
{
	strided(3, 1);
}

static void test_strided_overlapping(void)
{
	strided(2, 0);
}

/* y[2 * i] = y[2 * i + 1] = x[i], i < 6: proven; y[i], y[i + 1]: serial */
static void pairs(int step, int dims)
{
	struct fixture fx;
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i, *base;

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "pairs");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 6));
	base = tir_let(&b, "base", tir_mul(&b, i, tir_int(&b, step)));
	tir_store(&b, y, base, tir_load(&b, x, i));
	tir_store(&b, y, tir_add(&b, base, tir_int(&b, 1)), tir_load(&b, x, i));
	tir_end(&b);
	check(&fx, &b, 1, dims);
	fx_release(&fx);
}

static void test_pairs_disjoint(void)
{
	pairs(2, 1);
}

static void test_pairs_overlapping(void)
{
	pairs(1, 0);
}

/*
 * Two top-level nests are two stages (kernels); a marked loop is trusted; a
 * top-level local makes the whole body one work-item.
 */
static void test_stages(void)
{
	struct fixture fx;
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i;

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "st");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 6));
	tir_mark_parallel(&b);
	tir_store(&b, y, tir_mul(&b, i, tir_int(&b, 2)), tir_load(&b, x, i));
	tir_end(&b);
	i = tir_loop(&b, tir_int(&b, 6));
	tir_store(&b, y, tir_add(&b, tir_mul(&b, i, tir_int(&b, 2)), tir_int(&b, 1)),
		  tir_load(&b, x, i));
	tir_end(&b);
	check(&fx, &b, 2, 2);
	fx_release(&fx);

	fx_init(&fx);
	tir_builder_init(&b, &fx.a, "local");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	(void)tir_let(&b, "s", tir_load(&b, x, tir_int(&b, 0)));
	i = tir_loop(&b, tir_int(&b, 12));
	tir_mark_parallel(&b);
	tir_store(&b, y, i, tir_load(&b, x, i));
	tir_end(&b);
	check(&fx, &b, 1, 0);
	fx_release(&fx);
}

TESTS({ "dialect_types", test_dialect_types },
      { "transpose_proven", test_transpose_proven },
      { "reduction_serial", test_reduction_serial },
      { "shift_serial", test_shift_serial },
      { "strided_interleaved", test_strided_interleaved },
      { "strided_overlapping", test_strided_overlapping },
      { "pairs_disjoint", test_pairs_disjoint },
      { "pairs_overlapping", test_pairs_overlapping },
      { "stages", test_stages })
