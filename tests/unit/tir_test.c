/*
 * tir_test.c - the loop IR: builder simplifications, the interpreter on
 * small kernels (exact values), and the C printer (text, and printed code
 * compiled and run against the interpreter).
 */
#include "../../core/tir/tir.h"
#include "../../core/tir/tir_print.h"
#include "test.h"

#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *expr_str(struct arena *a, const struct tir *e)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s;

	tir_print_expr(e, &tir_dialect_c, &sb);
	s = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return s;
}

static const char *func_str(struct arena *a, const struct tir_func *f)
{
	struct strbuf sb = STRBUF_INIT;
	const char *s;

	tir_print(f, NULL, 0, &sb);
	s = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return s;
}

/* y[3,2] = transpose(x[2,3]) */
static struct tir_func *build_transpose(struct arena *a)
{
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir *i, *j;

	tir_builder_init(&b, a, "transpose");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 3));
	j = tir_loop(&b, tir_int(&b, 2));
	tir_store(&b, y, tir_add(&b, tir_mul(&b, i, tir_int(&b, 2)), j),
		  tir_load(&b, x, tir_add(&b, tir_mul(&b, j, tir_int(&b, 3)), i)));
	tir_end(&b);
	tir_end(&b);
	return tir_finish(&b);
}

/* ---- builder ---- */

static void test_builder_simplifies_indices(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir *v, *e;

	tir_builder_init(&b, &a, "k");
	tir_param(&b, "y", DTYPE_F32);
	v = tir_loop(&b, tir_int(&b, 4));
	e = tir_add(&b, tir_int(&b, 2), tir_int(&b, 3));
	ASSERT(TIR_INT, e->kind);
	ASSERT(5, e->i);
	e = tir_mul(&b, tir_int(&b, 6), tir_int(&b, 7));
	ASSERT(42, e->i);
	ASSERT(TIR_INT, tir_bin(&b, BIN_DIV, tir_int(&b, 7), tir_int(&b, 2))->kind);
	ASSERT(3, tir_bin(&b, BIN_DIV, tir_int(&b, 7), tir_int(&b, 2))->i);
	ASSERT(1, tir_bin(&b, BIN_MOD, tir_int(&b, 7), tir_int(&b, 3))->i);
	/* negative division is not folded (C and floor semantics differ) */
	ASSERT(TIR_BIN, tir_bin(&b, BIN_DIV, tir_int(&b, -7), tir_int(&b, 2))->kind);
	ASSERT_TRUE(tir_add(&b, tir_int(&b, 0), v) == v);
	ASSERT_TRUE(tir_add(&b, v, tir_int(&b, 0)) == v);
	ASSERT_TRUE(tir_mul(&b, tir_int(&b, 1), v) == v);
	ASSERT_TRUE(tir_mul(&b, v, tir_int(&b, 1)) == v);
	ASSERT_TRUE(tir_bin(&b, BIN_DIV, v, tir_int(&b, 1)) == v);
	e = tir_mul(&b, v, tir_int(&b, 0));
	ASSERT(TIR_INT, e->kind);
	ASSERT(0, e->i);
	ASSERT(0, tir_bin(&b, BIN_MOD, v, tir_int(&b, 1))->i);
	/* comparisons are bool, float wins over int */
	ASSERT(DTYPE_BOOL, tir_bin(&b, BIN_LT, v, tir_int(&b, 2))->dtype);
	ASSERT(DTYPE_F32, tir_bin(&b, BIN_ADD, v, tir_flt(&b, DTYPE_F32, 1))->dtype);
	/* typed ints are not folded as indices */
	ASSERT(TIR_BIN, tir_add(&b, tir_typed_int(&b, DTYPE_I32, 1),
				tir_typed_int(&b, DTYPE_I32, 2))->kind);
	/* tir_dim: 6*N*M */
	{
		struct dim d = { 6, 2, { 0, 1 } };

		ASSERT_STR("((6 * syms[0]) * syms[1])", expr_str(&a, tir_dim(&b, d)));
		ASSERT_STR("7", expr_str(&a, tir_dim(&b, dim_const(7))));
	}
	/* casts of constants fold, same-type casts vanish */
	ASSERT(TIR_INT, tir_cast(&b, DTYPE_I32, tir_int(&b, 9))->kind);
	ASSERT(DTYPE_I32, tir_cast(&b, DTYPE_I32, tir_int(&b, 9))->dtype);
	ASSERT(TIR_FLT, tir_cast(&b, DTYPE_F64, tir_flt(&b, DTYPE_F32, 0.5))->kind);
	ASSERT_TRUE(tir_cast(&b, DTYPE_I64, v) == v);
	ASSERT(TIR_CAST, tir_cast(&b, DTYPE_BOOL, tir_int(&b, 3))->kind);
	ASSERT(TIR_FLT, tir_const(&b, DTYPE_F32, 2)->kind);
	ASSERT(TIR_INT, tir_const(&b, DTYPE_U8, 2.9)->kind);
	ASSERT(2, tir_const(&b, DTYPE_U8, 2.9)->i);
	tir_end(&b);
	tir_finish(&b);
	arena_release(&a);
}

static void test_builder_structure(void)
{
	struct arena a = { 0 };
	struct tir_func *f = build_transpose(&a);

	ASSERT_STR("transpose", f->name);
	ASSERT(2, f->n_bufs);
	ASSERT_STR("x", f->bufs[0]->name);
	ASSERT(1, f->bufs[1]->index);
	ASSERT(2, f->n_vars);
	ASSERT(TIR_SEQ, f->body->kind);
	ASSERT(1, f->body->n);
	ASSERT(TIR_FOR, f->body->list[0]->kind);
	ASSERT(3, f->body->list[0]->a->i);
	ASSERT(TIR_FOR, f->body->list[0]->b->list[0]->kind);
	ASSERT(TIR_STORE, f->body->list[0]->b->list[0]->b->list[0]->kind);
	arena_release(&a);
}

/* Runs fn in a child process; true when it exited with status 0. */
static bool runs_cleanly(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		fn();
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void finish_no_params(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_func *f;

	tir_builder_init(&b, &a, "noparams");
	tir_let(&b, "x", tir_int(&b, 1));
	f = tir_finish(&b);
	if (f->n_bufs != 0 || f->body->n != 1)
		_exit(1);
	arena_release(&a);
}

/* A kernel may have no buffers (tir_finish must not read a NULL vector). */
static void test_finish_no_params(void)
{
	ASSERT_TRUE(runs_cleanly(finish_no_params));
}

static void finish_eight_params(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *p[8];
	struct tir_func *f;

	tir_builder_init(&b, &a, "eight");
	for (int i = 0; i < 8; i++)
		p[i] = tir_param(&b, "p", DTYPE_F32);
	f = tir_finish(&b);
	if (f->n_bufs != 8)
		_exit(1);
	for (int i = 0; i < 8; i++)
		if (f->bufs[i] != p[i] || f->bufs[i]->index != i)
			_exit(2);
	arena_release(&a);
}

/*
 * Exactly as many parameters as the vector's capacity (8): tir_finish must
 * copy only what the vector holds (run under ASan to see an over-read).
 */
static void test_finish_eight_params(void)
{
	ASSERT_TRUE(runs_cleanly(finish_eight_params));
}

/* ---- interpreter ---- */

static void test_interp_transpose(void)
{
	struct arena a = { 0 };
	struct tir_func *f = build_transpose(&a);
	float x[6] = { 1, 2, 3, 4, 5, 6 }, y[6] = { 0 };
	float want[6] = { 1, 4, 2, 5, 3, 6 };
	void *bufs[2] = { x, y };

	ASSERT(0, tir_interpret(f, bufs, NULL));
	for (int i = 0; i < 6; i++)
		ASSERT_TRUE(y[i] == want[i]);
	arena_release(&a);
}

/* y[r] = sum_c x[r, c] and m[r] = max_c x[r, c], over [2, syms[0]] */
static void test_interp_reduction(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *x, *y, *m;
	struct tir *r, *c, *acc, *mx, *v;
	struct tir_func *f;
	float xs[2 * 4] = { 1, 2, 3, 4.5f, -1, NAN, 8, 9 }, ys[2] = { 0 }, ms[2] = { 0 };
	void *bufs[3] = { xs, ys, ms };
	int64_t syms[1] = { 4 };

	tir_builder_init(&b, &a, "reduce");
	x = tir_param(&b, "x", DTYPE_F32);
	y = tir_param(&b, "y", DTYPE_F32);
	m = tir_param(&b, "m", DTYPE_F32);
	r = tir_loop(&b, tir_int(&b, 2));
	acc = tir_let(&b, "acc", tir_flt(&b, DTYPE_F32, 0));
	mx = tir_let(&b, "mx", tir_flt(&b, DTYPE_F32, -INFINITY));
	c = tir_loop(&b, tir_sym(&b, 0));
	v = tir_load(&b, x, tir_add(&b, tir_mul(&b, r, tir_sym(&b, 0)), c));
	tir_assign(&b, acc, tir_add(&b, acc, v));
	tir_assign(&b, mx, tir_bin(&b, BIN_MAX, mx, v));
	tir_end(&b);
	tir_store(&b, y, r, acc);
	tir_store(&b, m, r, mx);
	tir_end(&b);
	f = tir_finish(&b);
	ASSERT(0, tir_interpret(f, bufs, syms));
	ASSERT_TRUE(ys[0] == 10.5f);
	ASSERT_TRUE(ms[0] == 4.5f);
	ASSERT_TRUE(isnan(ys[1]));
	ASSERT_TRUE(isnan(ms[1]));	/* max propagates NaN */
	/* with syms[0] = 3 the rows are 3 wide */
	syms[0] = 3;
	xs[5] = 0;	/* rows [1,2,3] and [4.5,-1,0] */
	ASSERT(0, tir_interpret(f, bufs, syms));
	ASSERT_TRUE(ys[0] == 6.0f);
	ASSERT_TRUE(ms[0] == 3.0f);
	ASSERT_TRUE(ys[1] == 3.5f);
	ASSERT_TRUE(ms[1] == 4.5f);
	arena_release(&a);
}

/* if/else, select, integer division and modulo, bool and int32 stores */
static void test_interp_control_and_ints(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *q, *r, *s, *w, *bl;
	struct tir *i, *k;
	struct tir_func *f;
	int64_t qs[6], rs[6], ss[6];
	int32_t ws[6];
	uint8_t bs[6];
	void *bufs[5] = { qs, rs, ss, ws, bs };

	tir_builder_init(&b, &a, "ints");
	q = tir_param(&b, "q", DTYPE_I64);
	r = tir_param(&b, "r", DTYPE_I64);
	s = tir_param(&b, "s", DTYPE_I64);
	w = tir_param(&b, "w", DTYPE_I32);
	bl = tir_param(&b, "bl", DTYPE_BOOL);
	i = tir_loop(&b, tir_int(&b, 6));
	k = tir_let(&b, "k", tir_bin(&b, BIN_SUB, tir_mul(&b, i, tir_int(&b, 3)), tir_int(&b, 8)));
	tir_store(&b, q, i, tir_bin(&b, BIN_DIV, k, tir_int(&b, 4)));	/* truncating */
	tir_store(&b, r, i, tir_bin(&b, BIN_MOD, k, tir_int(&b, 4)));
	tir_if(&b, tir_bin(&b, BIN_EQ, tir_bin(&b, BIN_MOD, i, tir_int(&b, 2)), tir_int(&b, 0)));
	tir_store(&b, s, i, tir_int(&b, 100));
	tir_else(&b);
	tir_store(&b, s, i, tir_select(&b, tir_bin(&b, BIN_GT, i, tir_int(&b, 2)), i,
				       tir_un(&b, UN_NEG, i)));
	tir_end(&b);
	tir_store(&b, w, i, tir_mul(&b, tir_add(&b, i, tir_int(&b, 1)), tir_int(&b, 1000000000)));
	tir_store(&b, bl, i, tir_bin(&b, BIN_AND, i, tir_int(&b, 2)));
	tir_end(&b);
	f = tir_finish(&b);
	ASSERT(0, tir_interpret(f, bufs, NULL));
	/* k = -8, -5, -2, 1, 4, 7 */
	ASSERT(-2, qs[0]);
	ASSERT(-1, qs[1]);
	ASSERT(0, qs[2]);
	ASSERT(0, qs[3]);
	ASSERT(1, qs[4]);
	ASSERT(1, qs[5]);
	ASSERT(0, rs[0]);
	ASSERT(-1, rs[1]);
	ASSERT(-2, rs[2]);
	ASSERT(1, rs[3]);
	ASSERT(0, rs[4]);
	ASSERT(3, rs[5]);
	ASSERT(100, ss[0]);
	ASSERT(-1, ss[1]);
	ASSERT(100, ss[2]);
	ASSERT(3, ss[3]);
	ASSERT(100, ss[4]);
	ASSERT(5, ss[5]);
	/* int32 stores wrap: 3e9 -> -1294967296 */
	ASSERT(1000000000, ws[0]);
	ASSERT(2000000000, ws[1]);
	ASSERT(-1294967296, ws[2]);
	ASSERT(-294967296, ws[3]);
	/* bool stores are 0/1: i & 2 for i = 0..5 */
	ASSERT(0, bs[0]);
	ASSERT(0, bs[1]);
	ASSERT(1, bs[2]);
	ASSERT(1, bs[3]);
	ASSERT(0, bs[4]);
	ASSERT(0, bs[5]);
	arena_release(&a);
}

/* float32 rounding, casts, unsigned compares, intrinsics */
static void test_interp_types(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *x, *u, *fy, *iy, *by;
	struct tir_func *f;
	float xs[3] = { 0.1f, -2.7f, NAN }, fys[4] = { 0 };
	uint64_t us[1] = { UINT64_MAX };
	int32_t iys[3] = { 0 };
	uint8_t bys[4] = { 9, 9, 9, 9 };
	void *bufs[5] = { xs, us, fys, iys, bys };
	struct tir *i, *xv;

	tir_builder_init(&b, &a, "types");
	x = tir_param(&b, "x", DTYPE_F32);
	u = tir_param(&b, "u", DTYPE_U64);
	fy = tir_param(&b, "fy", DTYPE_F32);
	iy = tir_param(&b, "iy", DTYPE_I32);
	by = tir_param(&b, "by", DTYPE_BOOL);
	/* fy[0] = 0.1f + 0.2f computed in float32 */
	tir_store(&b, fy, tir_int(&b, 0), tir_add(&b, tir_load(&b, x, tir_int(&b, 0)),
						  tir_flt(&b, DTYPE_F32, 0.2)));
	/* fy[1] = sqrt(16) ; fy[2] = floor(-2.7) ; fy[3] = min(NaN, 1) */
	tir_store(&b, fy, tir_int(&b, 1), tir_call1(&b, INTRIN_SQRT, tir_flt(&b, DTYPE_F32, 16)));
	tir_store(&b, fy, tir_int(&b, 2), tir_call1(&b, INTRIN_FLOOR, tir_load(&b, x, tir_int(&b, 1))));
	tir_store(&b, fy, tir_int(&b, 3), tir_bin(&b, BIN_MIN, tir_load(&b, x, tir_int(&b, 2)),
						  tir_flt(&b, DTYPE_F32, 1)));
	/* float -> int32 truncates toward zero */
	i = tir_loop(&b, tir_int(&b, 2));
	xv = tir_load(&b, x, i);
	tir_store(&b, iy, i, tir_cast(&b, DTYPE_I32, tir_mul(&b, xv, tir_flt(&b, DTYPE_F32, 10))));
	tir_end(&b);
	/* UINT64_MAX < 1 is false unsigned (true if compared signed) */
	tir_store(&b, by, tir_int(&b, 0), tir_bin(&b, BIN_LT, tir_load(&b, u, tir_int(&b, 0)),
						  tir_typed_int(&b, DTYPE_U64, 1)));
	/* isnan(NaN), !0.0, 0.5 != 0 through a bool cast */
	tir_store(&b, by, tir_int(&b, 1), tir_call1(&b, INTRIN_ISNAN, tir_load(&b, x, tir_int(&b, 2))));
	tir_store(&b, by, tir_int(&b, 2), tir_un(&b, UN_LNOT, tir_flt(&b, DTYPE_F32, 0)));
	tir_store(&b, by, tir_int(&b, 3), tir_cast(&b, DTYPE_BOOL, tir_flt(&b, DTYPE_F32, 0.5)));
	f = tir_finish(&b);
	ASSERT(0, tir_interpret(f, bufs, NULL));
	ASSERT_TRUE(fys[0] == 0.1f + 0.2f);
	ASSERT_TRUE(fys[1] == 4.0f);
	ASSERT_TRUE(fys[2] == -3.0f);
	ASSERT_TRUE(isnan(fys[3]));
	ASSERT(1, iys[0]);
	ASSERT(-27, iys[1]);
	ASSERT(0, bys[0]);
	ASSERT(1, bys[1]);
	ASSERT(1, bys[2]);
	ASSERT(1, bys[3]);
	arena_release(&a);
}

/*
 * Min/max of uint64 values compare unsigned, as the printed C does: for
 * values at or above 2^63 a signed compare picks the wrong operand.
 */
static void test_interp_u64_min_max(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *x, *y;
	struct tir_func *f;
	uint64_t xs[2] = { UINT64_MAX, 1 }, ys[2] = { 0, 0 };
	void *bufs[2] = { xs, ys };
	struct tir *p, *q;

	tir_builder_init(&b, &a, "u64");
	x = tir_param(&b, "x", DTYPE_U64);
	y = tir_param(&b, "y", DTYPE_U64);
	p = tir_load(&b, x, tir_int(&b, 0));
	q = tir_load(&b, x, tir_int(&b, 1));
	tir_store(&b, y, tir_int(&b, 0), tir_bin(&b, BIN_MIN, p, q));
	tir_store(&b, y, tir_int(&b, 1), tir_bin(&b, BIN_MAX, p, q));
	f = tir_finish(&b);
	ASSERT(0, tir_interpret(f, bufs, NULL));
	arena_release(&a);
	ASSERT_TRUE(ys[0] == 1);		/* min(UINT64_MAX, 1) */
	ASSERT_TRUE(ys[1] == UINT64_MAX);	/* max(UINT64_MAX, 1) */
}

/* tir_const of the int64/uint64 extremes used as reduction identities. */
static void test_const_int_extremes(void)
{
	struct arena a = { 0 };
	struct tir_builder b;

	tir_builder_init(&b, &a, "k");
	ASSERT(INT64_MIN, tir_const(&b, DTYPE_I64, (double)INT64_MIN)->i);
	ASSERT(INT32_MAX, tir_const(&b, DTYPE_I32, (double)INT32_MAX)->i);
	ASSERT(4294967295LL, tir_const(&b, DTYPE_U32, 4294967295.0)->i);
	/* (double)INT64_MAX rounds to 2^63, which does not fit: it must clamp */
	ASSERT(INT64_MAX, tir_const(&b, DTYPE_I64, (double)INT64_MAX)->i);
	ASSERT_TRUE((uint64_t)tir_const(&b, DTYPE_U64, 18446744073709551615.0)->i == UINT64_MAX);
	tir_builder_release(&b);
	arena_release(&a);
}

static void test_interp_failures(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *y;
	struct tir_func *f;
	int64_t ys[4] = { -1, -1, -1, -1 };
	void *bufs[1] = { ys };
	struct tir *i, *dummy[1];

	/* integer division by zero stops the kernel with -1 */
	tir_builder_init(&b, &a, "div0");
	y = tir_param(&b, "y", DTYPE_I64);
	i = tir_loop(&b, tir_int(&b, 4));
	tir_store(&b, y, i, tir_bin(&b, BIN_DIV, tir_int(&b, 12), tir_bin(&b, BIN_SUB,
						 tir_int(&b, 2), i)));
	tir_end(&b);
	f = tir_finish(&b);
	ASSERT(-1, tir_interpret(f, bufs, NULL));
	ASSERT(6, ys[0]);
	ASSERT(12, ys[1]);
	ASSERT(-1, ys[3]);	/* not reached: stopped at i == 2 */
	/* call_extern cannot be interpreted */
	tir_builder_init(&b, &a, "ext");
	y = tir_param(&b, "y", DTYPE_I64);
	dummy[0] = tir_int(&b, 0);
	tir_extern(&b, "cblas_sgemm", dummy, 0);
	f = tir_finish(&b);
	ASSERT(-1, tir_interpret(f, bufs, NULL));
	/* an empty loop runs nothing */
	tir_builder_init(&b, &a, "empty");
	y = tir_param(&b, "y", DTYPE_I64);
	i = tir_loop(&b, tir_int(&b, 0));
	tir_store(&b, y, i, tir_int(&b, 77));
	tir_end(&b);
	f = tir_finish(&b);
	ys[0] = 5;
	ASSERT(0, tir_interpret(f, bufs, NULL));
	ASSERT(5, ys[0]);
	arena_release(&a);
}

/* ---- printer ---- */

static void test_print_float_constants(void)
{
	struct arena a = { 0 };
	struct tir_builder b;

	tir_builder_init(&b, &a, "k");
	ASSERT_STR("NAN", expr_str(&a, tir_flt(&b, DTYPE_F32, NAN)));
	ASSERT_STR("((double)NAN)", expr_str(&a, tir_flt(&b, DTYPE_F64, NAN)));
	ASSERT_STR("INFINITY", expr_str(&a, tir_flt(&b, DTYPE_F32, INFINITY)));
	ASSERT_STR("(-INFINITY)", expr_str(&a, tir_flt(&b, DTYPE_F32, -INFINITY)));
	ASSERT_STR("(-INFINITY)", expr_str(&a, tir_flt(&b, DTYPE_F64, -INFINITY)));
	ASSERT_STR("(-1.5f)", expr_str(&a, tir_flt(&b, DTYPE_F32, -1.5)));
	ASSERT_STR("(-1.5)", expr_str(&a, tir_flt(&b, DTYPE_F64, -1.5)));
	ASSERT_STR("2.0f", expr_str(&a, tir_flt(&b, DTYPE_F32, 2)));
	ASSERT_STR("3.0", expr_str(&a, tir_flt(&b, DTYPE_F64, 3)));
	ASSERT_STR("0.0f", expr_str(&a, tir_flt(&b, DTYPE_F32, 0)));
	ASSERT_STR("1e+20f", expr_str(&a, tir_flt(&b, DTYPE_F32, 1e20)));
	ASSERT_STR("0.100000001f", expr_str(&a, tir_flt(&b, DTYPE_F32, 0.1f)));
	ASSERT_STR("0.10000000000000001", expr_str(&a, tir_flt(&b, DTYPE_F64, 0.1)));
	ASSERT_STR("(-2.5e-10f)", expr_str(&a, tir_flt(&b, DTYPE_F32, -2.5e-10)));
	tir_builder_release(&b);
	arena_release(&a);
}

static void test_print_int_constants(void)
{
	struct arena a = { 0 };
	struct tir_builder b;

	tir_builder_init(&b, &a, "k");
	ASSERT_STR("7", expr_str(&a, tir_int(&b, 7)));
	ASSERT_STR("(-5)", expr_str(&a, tir_int(&b, -5)));
	ASSERT_STR("INT64_C(5000000000)", expr_str(&a, tir_int(&b, 5000000000LL)));
	ASSERT_STR("INT64_C(-5000000000)", expr_str(&a, tir_int(&b, -5000000000LL)));
	ASSERT_STR("2147483647", expr_str(&a, tir_int(&b, INT32_MAX)));
	ASSERT_STR("((int32_t)-3)", expr_str(&a, tir_typed_int(&b, DTYPE_I32, -3)));
	ASSERT_STR("((uint8_t)1)", expr_str(&a, tir_typed_int(&b, DTYPE_BOOL, 1)));
	ASSERT_STR("UINT64_C(18446744073709551615)",
		   expr_str(&a, tir_typed_int(&b, DTYPE_U64, -1)));
	tir_builder_release(&b);
	arena_release(&a);
}

static void test_print_exprs(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *x;
	struct tir *i, *xv;

	tir_builder_init(&b, &a, "k");
	x = tir_param(&b, "x", DTYPE_F32);
	i = tir_loop(&b, tir_sym(&b, 2));
	xv = tir_load(&b, x, i);
	ASSERT_STR("b0[i0]", expr_str(&a, xv));
	ASSERT_STR("syms[2]", expr_str(&a, tir_sym(&b, 2)));
	ASSERT_STR("(((b0[i0] > 0.0f) | (b0[i0] != b0[i0])) ? b0[i0] : 0.0f)",
		   expr_str(&a, tir_bin(&b, BIN_MAX, xv, tir_flt(&b, DTYPE_F32, 0))));
	ASSERT_STR("((i0 < 3) ? i0 : 3)", expr_str(&a, tir_bin(&b, BIN_MIN, i, tir_int(&b, 3))));
	ASSERT_STR("rt_expf(b0[i0])", expr_str(&a, tir_call1(&b, INTRIN_EXP, xv)));
	ASSERT_STR("exp(((double)b0[i0]))",
		   expr_str(&a, tir_call1(&b, INTRIN_EXP, tir_cast(&b, DTYPE_F64, xv))));
	ASSERT_STR("powf(b0[i0], 2.0f)",
		   expr_str(&a, tir_call2(&b, INTRIN_POW, xv, tir_flt(&b, DTYPE_F32, 2))));
	ASSERT_STR("((uint8_t)((b0[i0]) != 0))", expr_str(&a, tir_cast(&b, DTYPE_BOOL, xv)));
	ASSERT_STR("(-b0[i0])", expr_str(&a, tir_un(&b, UN_NEG, xv)));
	ASSERT_STR("(!i0)", expr_str(&a, tir_un(&b, UN_LNOT, i)));
	ASSERT_STR("(~i0)", expr_str(&a, tir_un(&b, UN_NOT, i)));
	ASSERT_STR("((i0 % 2) == 0)", expr_str(&a, tir_bin(&b, BIN_EQ, tir_bin(&b, BIN_MOD, i,
					tir_int(&b, 2)), tir_int(&b, 0))));
	ASSERT_STR("((i0 >= 1) ? b0[i0] : (-1.0f))", expr_str(&a, tir_select(&b,
		   tir_bin(&b, BIN_GE, i, tir_int(&b, 1)), xv, tir_flt(&b, DTYPE_F32, -1))));
	ASSERT_STR("(i0 << 3)", expr_str(&a, tir_bin(&b, BIN_SHL, i, tir_int(&b, 3))));
	tir_end(&b);
	tir_finish(&b);
	arena_release(&a);
}

static void test_print_kernel(void)
{
	struct arena a = { 0 };
	struct tir_func *f = build_transpose(&a);

	ASSERT_STR("kernel transpose(float *b0 /* x */, float *b1 /* y */) {\n"
		   "\tfor (int64_t i0 = 0; i0 < 3; i0++) {\n"
		   "\t\tfor (int64_t i1 = 0; i1 < 2; i1++) {\n"
		   "\t\t\tb1[((i0 * 2) + i1)] = b0[((i1 * 3) + i0)];\n"
		   "\t\t}\n"
		   "\t}\n"
		   "}\n", func_str(&a, f));
	arena_release(&a);
}

static void test_print_statements(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *y;
	struct tir *i, *acc, *args[2];
	struct tir_func *f;

	tir_builder_init(&b, &a, "stmts");
	y = tir_param(&b, "y", DTYPE_F64);
	i = tir_loop(&b, tir_int(&b, 4));
	tir_mark_parallel(&b);
	acc = tir_let(&b, "acc", tir_flt(&b, DTYPE_F64, 0));
	tir_if(&b, tir_bin(&b, BIN_LT, i, tir_int(&b, 2)));
	tir_assign(&b, acc, tir_int(&b, 1));	/* converted to the local's type */
	tir_else(&b);
	tir_assign(&b, acc, tir_flt(&b, DTYPE_F64, -0.5));
	tir_end(&b);
	tir_store(&b, y, i, acc);
	tir_end(&b);
	args[0] = tir_int(&b, 1);
	args[1] = tir_sym(&b, 0);
	tir_extern(&b, "helper", args, 2);
	f = tir_finish(&b);
	ASSERT_STR("kernel stmts(double *b0 /* y */) {\n"
		   "\tfor (int64_t i0 = 0; i0 < 4; i0++) { /* parallel */\n"
		   "\t\tdouble acc1 = 0.0;\n"
		   "\t\tif ((i0 < 2)) {\n"
		   "\t\t\tacc1 = ((double)1);\n"
		   "\t\t} else {\n"
		   "\t\t\tacc1 = (-0.5);\n"
		   "\t\t}\n"
		   "\t\tb0[i0] = acc1;\n"
		   "\t}\n"
		   "\thelper(1, syms[0]);\n"
		   "}\n", func_str(&a, f));
	ASSERT_TRUE(f->body->list[0]->parallel);
	arena_release(&a);
}

/*
 * A dialect with a parallel line: printed once, before the outermost of the
 * perfectly nested parallel loops, with their count (at most 3).
 */
static void test_print_parallel_pragma(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *y;
	struct tir *i[4];
	struct tir_func *f;
	struct tir_dialect d = tir_dialect_c;
	struct strbuf sb = STRBUF_INIT;

	d.parallel_fmt = "#pragma omp parallel for collapse(%d)";
	tir_builder_init(&b, &a, "par");
	y = tir_param(&b, "y", DTYPE_F32);
	/* 4 nested parallel loops: the pragma covers 3 */
	for (int k = 0; k < 4; k++) {
		i[k] = tir_loop(&b, tir_int(&b, 2));
		tir_mark_parallel(&b);
	}
	tir_store(&b, y, i[3], tir_flt(&b, DTYPE_F32, 1));
	for (int k = 0; k < 4; k++)
		tir_end(&b);
	/* 2 parallel loops, then a serial one inside */
	i[0] = tir_loop(&b, tir_int(&b, 3));
	tir_mark_parallel(&b);
	i[1] = tir_loop(&b, tir_int(&b, 4));
	tir_mark_parallel(&b);
	i[2] = tir_loop(&b, tir_int(&b, 5));
	tir_store(&b, y, i[2], tir_flt(&b, DTYPE_F32, 2));
	tir_end(&b);
	tir_end(&b);
	tir_end(&b);
	/* a parallel loop whose body has two statements: collapse(1) */
	i[0] = tir_loop(&b, tir_int(&b, 6));
	tir_mark_parallel(&b);
	tir_store(&b, y, i[0], tir_flt(&b, DTYPE_F32, 3));
	i[1] = tir_loop(&b, tir_int(&b, 7));
	tir_mark_parallel(&b);	/* nested inside an open parallel region: no pragma */
	tir_store(&b, y, i[1], tir_flt(&b, DTYPE_F32, 4));
	tir_end(&b);
	tir_end(&b);
	f = tir_finish(&b);
	tir_plan_parallel(f, 0);
	tir_print_stmt(f->body, &d, &sb, 0);
	ASSERT_STR("#pragma omp parallel for collapse(3)\n"
		   "for (int64_t i0 = 0; i0 < 2; i0++) {\n"
		   "\tfor (int64_t i1 = 0; i1 < 2; i1++) {\n"
		   "\t\tfor (int64_t i2 = 0; i2 < 2; i2++) {\n"
		   "\t\t\tfor (int64_t i3 = 0; i3 < 2; i3++) {\n"
		   "\t\t\t\tb0[i3] = 1.0f;\n"
		   "\t\t\t}\n"
		   "\t\t}\n"
		   "\t}\n"
		   "}\n"
		   "#pragma omp parallel for collapse(2)\n"
		   "for (int64_t i4 = 0; i4 < 3; i4++) {\n"
		   "\tfor (int64_t i5 = 0; i5 < 4; i5++) {\n"
		   "\t\tfor (int64_t i6 = 0; i6 < 5; i6++) {\n"
		   "\t\t\tb0[i6] = 2.0f;\n"
		   "\t\t}\n"
		   "\t}\n"
		   "}\n"
		   "#pragma omp parallel for collapse(1)\n"
		   "for (int64_t i7 = 0; i7 < 6; i7++) {\n"
		   "\tb0[i7] = 3.0f;\n"
		   "\tfor (int64_t i8 = 0; i8 < 7; i8++) {\n"
		   "\t\tb0[i8] = 4.0f;\n"
		   "\t}\n"
		   "}\n", sb_str(&sb));
	sb_release(&sb);
	arena_release(&a);
}

/*
 * With a condition the nest is printed twice: the parallel version when it
 * holds, with the work estimate (iterations times the inner loop's), and a
 * plain one else.
 */
static void test_print_parallel_if(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *y;
	struct tir *i, *j;
	struct tir_func *f;
	struct tir_dialect d = tir_dialect_c;
	struct strbuf sb = STRBUF_INIT;

	d.parallel_fmt = "#pragma omp parallel for collapse(%d)";
	d.parallel_if_fmt = "threads > 1 && %s >= 100";
	tir_builder_init(&b, &a, "par");
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 3));
	tir_mark_parallel(&b);
	j = tir_loop(&b, tir_int(&b, 50));
	tir_store(&b, y, tir_add(&b, i, j), tir_flt(&b, DTYPE_F32, 1));
	tir_end(&b);
	tir_end(&b);
	f = tir_finish(&b);
	tir_plan_parallel(f, 100);
	tir_print_stmt(f->body, &d, &sb, 0);
	ASSERT_STR("if (threads > 1 && (3 * 50) >= 100) {\n"
		   "\t#pragma omp parallel for collapse(1)\n"
		   "\tfor (int64_t i0 = 0; i0 < 3; i0++) {\n"
		   "\t\tfor (int64_t i1 = 0; i1 < 50; i1++) {\n"
		   "\t\t\tb0[(i0 + i1)] = 1.0f;\n"
		   "\t\t}\n"
		   "\t}\n"
		   "} else {\n"
		   "\tfor (int64_t i0 = 0; i0 < 3; i0++) {\n"
		   "\t\tfor (int64_t i1 = 0; i1 < 50; i1++) {\n"
		   "\t\t\tb0[(i0 + i1)] = 1.0f;\n"
		   "\t\t}\n"
		   "\t}\n"
		   "}\n", sb_str(&sb));
	sb_release(&sb);
	arena_release(&a);
}

/* ---- printed C compiled and run ---- */

static const char *cc_cmd(void)
{
	const char *cc = getenv("CC");

	return cc && *cc ? cc : "cc";
}

/*
 * Writes prog (a whole C program) to a temp dir, compiles it with the
 * generated code's flags and runs it; its stdout goes to *out (owned).
 * Returns the exit status of the compile (nonzero) or of the run.
 */
static int compile_and_run(const char *prog, char **out)
{
	char *dir = dir_make_temp("unit-tir");
	char cmd[8192], path[4096];
	int rc;
	size_t len;

	*out = NULL;
	if (!dir)
		return -1;
	snprintf(path, sizeof(path), "%s/t.c", dir);
	if (file_write_atomic(path, prog, strlen(prog)) < 0) {
		dir_remove_tree(dir);
		free(dir);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "cd '%s' && %s -std=gnu11 -O1 -Werror -o t t.c -lm >cc.log 2>&1 "
		 "|| { cat cc.log >&2; exit 99; }; ./t >out.txt", dir, cc_cmd());
	rc = system(cmd);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	*out = file_read(path, &len);
	dir_remove_tree(dir);
	free(dir);
	return rc;
}

static void test_print_constants_compile(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct strbuf prog = STRBUF_INIT;
	char *out = NULL;
	int rc;

	tir_builder_init(&b, &a, "k");
	sb_puts(&prog, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n"
		"int main(void)\n{\n\tvolatile int64_t v = 5;\n\tvolatile float f = 2;\n");
#define P(fmt, e)                                                        \
	do {                                                             \
		sb_printf(&prog, "\tprintf(\"%s\\n\", %s(", fmt,           \
			  strstr(fmt, "ll") ? "(long long)" : "");       \
		tir_print_expr((e), &tir_dialect_c, &prog);              \
		sb_puts(&prog, "));\n");                                 \
	} while (0)
	P("%d", tir_call1(&b, INTRIN_ISNAN, tir_flt(&b, DTYPE_F32, NAN)));
	P("%d", tir_call1(&b, INTRIN_ISNAN, tir_flt(&b, DTYPE_F64, NAN)));
	P("%.1f", tir_flt(&b, DTYPE_F32, INFINITY));
	P("%.1f", tir_flt(&b, DTYPE_F64, -INFINITY));
	/* f - -1.5 must not print as f--1.5 */
	P("%.2f", tir_bin(&b, BIN_SUB, tir_flt(&b, DTYPE_F32, 2), tir_flt(&b, DTYPE_F32, -1.5)));
	P("%.9g", tir_flt(&b, DTYPE_F32, 0.1f));
	P("%.17g", tir_flt(&b, DTYPE_F64, 0.1));
	P("%lld", tir_bin(&b, BIN_SUB, tir_int(&b, 3), tir_int(&b, -5)) /* folded to 8 */);
	P("%lld", tir_bin(&b, BIN_SUB, tir_typed_int(&b, DTYPE_I64, 3),
					 tir_typed_int(&b, DTYPE_I32, -5)));
	P("%lld", tir_int(&b, -5000000000LL));
	P("%d", tir_bin(&b, BIN_GT, tir_int(&b, 5), tir_int(&b, -5000000000LL)));
#undef P
	sb_puts(&prog, "\treturn 0;\n}\n");
	rc = compile_and_run(sb_str(&prog), &out);
	if (rc != 0)
		fprintf(stderr, "%s", sb_str(&prog));
	ASSERT(0, rc);
	ASSERT_STR("1\n1\ninf\n-inf\n3.50\n0.100000001\n0.10000000000000001\n8\n8\n"
		   "-5000000000\n1\n", out);
	free(out);
	sb_release(&prog);
	tir_builder_release(&b);
	arena_release(&a);
}

/*
 * INT64_MIN as a constant: "INT64_C(-9223372036854775808)" is the negation
 * of a literal too large for int64_t, so the C compiler gives it an unsigned
 * type (with a warning) and comparisons against it go wrong.
 */
static void test_print_int64_min_compiles(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct strbuf prog = STRBUF_INIT;
	char *out = NULL;
	int rc;
	bool ok;

	tir_builder_init(&b, &a, "k");
	sb_puts(&prog, "#include <stdint.h>\n#include <stdio.h>\n"
		"int main(void)\n{\n\tvolatile int64_t v = 5;\n\tprintf(\"%d %lld\\n\", v > ");
	tir_print_expr(tir_int(&b, INT64_MIN), &tir_dialect_c, &prog);
	sb_puts(&prog, ", (long long)");
	tir_print_expr(tir_int(&b, INT64_MIN), &tir_dialect_c, &prog);
	sb_puts(&prog, ");\n\treturn 0;\n}\n");
	rc = compile_and_run(sb_str(&prog), &out);
	if (rc != 0)
		fprintf(stderr, "%s", sb_str(&prog));
	ok = out && !strcmp(out, "1 -9223372036854775808\n");
	if (out && !ok)
		fprintf(stderr, "  output: %s", out);
	free(out);
	sb_release(&prog);
	tir_builder_release(&b);
	arena_release(&a);
	ASSERT(0, rc);	/* compiles without warnings */
	ASSERT_TRUE(ok);	/* 5 > INT64_MIN, and the value itself */
}

/*
 * One kernel with many exact operations, printed as C with the c target's
 * ABI, compiled, run, and compared element by element with the interpreter.
 */
static void test_printed_kernel_matches_interpreter(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *x, *n, *fy, *iy;
	struct tir *i, *xv, *nv, *acc;
	struct tir_func *f;
	struct strbuf prog = STRBUF_INIT;
	float xs[8] = { -3.5f, -0.0f, 0.25f, 1, 2.5f, NAN, -INFINITY, 100 };
	int64_t ns[8] = { -9, -4, -1, 0, 1, 3, 7, 1000000007 };
	enum { NF = 5, NI = 6 };
	float fys[8 * NF];
	int64_t iys[8 * NI];
	void *bufs[4] = { xs, ns, fys, iys };
	int64_t syms[1] = { 8 };
	char *out = NULL, *p;
	int rc;

	tir_builder_init(&b, &a, "mix");
	x = tir_param(&b, "x", DTYPE_F32);
	n = tir_param(&b, "n", DTYPE_I64);
	fy = tir_param(&b, "fy", DTYPE_F32);
	iy = tir_param(&b, "iy", DTYPE_I64);
	i = tir_loop(&b, tir_sym(&b, 0));
	xv = tir_load(&b, x, i);
	nv = tir_load(&b, n, i);
#define FOUT(k, e) tir_store(&b, fy, tir_add(&b, tir_mul(&b, i, tir_int(&b, NF)), tir_int(&b, k)), e)
#define IOUT(k, e) tir_store(&b, iy, tir_add(&b, tir_mul(&b, i, tir_int(&b, NI)), tir_int(&b, k)), e)
	FOUT(0, tir_bin(&b, BIN_MAX, xv, tir_flt(&b, DTYPE_F32, 0)));
	FOUT(1, tir_bin(&b, BIN_MIN, tir_flt(&b, DTYPE_F32, 1), xv));
	FOUT(2, tir_select(&b, tir_bin(&b, BIN_LT, xv, tir_flt(&b, DTYPE_F32, 0)),
			   tir_un(&b, UN_NEG, xv), tir_mul(&b, xv, tir_flt(&b, DTYPE_F32, -2))));
	FOUT(3, tir_add(&b, tir_cast(&b, DTYPE_F32, nv), tir_flt(&b, DTYPE_F32, 0.5)));
	FOUT(4, tir_call1(&b, INTRIN_FABS, tir_bin(&b, BIN_SUB, xv, tir_flt(&b, DTYPE_F32, 1e-3))));
	IOUT(0, tir_bin(&b, BIN_DIV, nv, tir_int(&b, 4)));
	IOUT(1, tir_bin(&b, BIN_MOD, nv, tir_int(&b, 3)));
	IOUT(2, tir_bin(&b, BIN_XOR, tir_bin(&b, BIN_SHL, tir_bin(&b, BIN_AND, nv, tir_int(&b, 0xffff)),
					     tir_int(&b, 2)), tir_int(&b, 0x55)));
	IOUT(3, tir_cast(&b, DTYPE_I64, tir_cast(&b, DTYPE_I8, nv)));
	IOUT(4, tir_bin(&b, BIN_LAND, tir_bin(&b, BIN_GE, nv, tir_int(&b, 0)),
			tir_call1(&b, INTRIN_ISNAN, xv)));
	acc = tir_let(&b, "acc", tir_int(&b, 0));
	{
		struct tir *j = tir_loop(&b, tir_add(&b, i, tir_int(&b, 1)));

		tir_if(&b, tir_bin(&b, BIN_NE, tir_bin(&b, BIN_AND, j, tir_int(&b, 1)), tir_int(&b, 0)));
		tir_assign(&b, acc, tir_add(&b, acc, tir_mul(&b, j, j)));
		tir_else(&b);
		tir_assign(&b, acc, tir_bin(&b, BIN_SUB, acc, j));
		tir_end(&b);
		tir_end(&b);
	}
	IOUT(5, acc);
#undef FOUT
#undef IOUT
	tir_end(&b);
	f = tir_finish(&b);
	ASSERT(0, tir_interpret(f, bufs, syms));

	sb_puts(&prog, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n");
	sb_printf(&prog, "static void %s(void *const *bufs, const int64_t *syms)\n{\n", f->name);
	for (int k = 0; k < f->n_bufs; k++)
		sb_printf(&prog, "\t%s *restrict b%d = bufs[%d];\n", tir_ctype(f->bufs[k]->dtype), k, k);
	tir_print_stmt(f->body, &tir_dialect_c, &prog, 1);
	sb_puts(&prog, "}\n\nint main(void)\n{\n\tfloat x[8] = { -3.5f, -0.0f, 0.25f, 1, 2.5f, NAN, "
		"-INFINITY, 100 };\n\tint64_t n[8] = { -9, -4, -1, 0, 1, 3, 7, 1000000007 };\n");
	sb_printf(&prog, "\tfloat fy[%d];\n\tint64_t iy[%d];\n\tint64_t syms[1] = { 8 };\n"
		  "\tvoid *bufs[4] = { x, n, fy, iy };\n\tmix(bufs, syms);\n", 8 * NF, 8 * NI);
	sb_printf(&prog, "\tfor (int i = 0; i < %d; i++) {\n\t\tuint32_t u;\n"
		  "\t\tmemcpy(&u, &fy[i], 4);\n\t\tprintf(\"%%08x\\n\", u);\n\t}\n", 8 * NF);
	sb_printf(&prog, "\tfor (int i = 0; i < %d; i++)\n\t\tprintf(\"%%lld\\n\", (long long)iy[i]);\n",
		  8 * NI);
	sb_puts(&prog, "\treturn 0;\n}\n");
	rc = compile_and_run(sb_str(&prog), &out);
	if (rc != 0)
		fprintf(stderr, "%s", sb_str(&prog));
	ASSERT(0, rc);
	ASSERT_TRUE(out != NULL);
	p = out;
	for (int k = 0; k < 8 * NF; k++) {
		uint32_t want, got;
		char *e;

		memcpy(&want, &fys[k], 4);
		got = (uint32_t)strtoul(p, &e, 16);
		ASSERT_TRUE(e != p);
		if (isnan(fys[k]))	/* any NaN payload */
			ASSERT(0x7f800000, got & 0x7f800000);
		else
			ASSERT(want, got);
		p = e;
	}
	for (int k = 0; k < 8 * NI; k++) {
		char *e;
		long long got = strtoll(p, &e, 10);

		ASSERT_TRUE(e != p);
		ASSERT(iys[k], got);
		p = e;
	}
	/* spot-check the interpreter itself */
	ASSERT_TRUE(fys[0 * NF + 0] == 0.0f);	/* max(-3.5, 0) */
	ASSERT_TRUE(isnan(fys[5 * NF + 0]));	/* max(NaN, 0) */
	ASSERT_TRUE(isnan(fys[5 * NF + 1]));	/* min(1, NaN) */
	ASSERT_TRUE(fys[0 * NF + 2] == 3.5f);
	ASSERT_TRUE(fys[3 * NF + 2] == -2.0f);
	ASSERT(-2, iys[0 * NI + 0]);	/* -9 / 4 */
	ASSERT(0, iys[0 * NI + 1]);	/* -9 % 3 */
	ASSERT(-1, iys[1 * NI + 1]);	/* -4 % 3 */
	ASSERT(7, iys[7 * NI + 3]);	/* (int8)1000000007 = 7 */
	ASSERT(1, iys[5 * NI + 4]);	/* 3 >= 0 && isnan */
	ASSERT(0 + 1 - 2 + 9, iys[3 * NI + 5]);	/* j = 0..3 */
	free(out);
	sb_release(&prog);
	arena_release(&a);
}

/*
 * The parallel step decides where regions open: a nest whose work is a
 * constant below the threshold runs serially, a symbolic one gets a region
 * (its printed condition decides at run time) whose innermost loop stays out
 * of the collapse; the dump form names the
 * decision, and the printer opens regions only where it was made.
 */
static void test_plan_parallel(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *y;
	struct tir *i, *j, *k;
	struct tir_func *f;
	struct tir_dialect d = tir_dialect_c;
	struct strbuf sb = STRBUF_INIT;

	tir_builder_init(&b, &a, "plan");
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_int(&b, 3));		/* 3 * 50 < 1000: serial */
	tir_mark_parallel(&b);
	j = tir_loop(&b, tir_int(&b, 50));
	tir_store(&b, y, tir_add(&b, i, j), tir_flt(&b, DTYPE_F32, 1));
	tir_end(&b);
	tir_end(&b);
	i = tir_loop(&b, tir_sym(&b, 0));		/* symbolic: a region */
	tir_mark_parallel(&b);
	j = tir_loop(&b, tir_int(&b, 4));
	tir_mark_parallel(&b);
	k = tir_loop(&b, tir_int(&b, 8));		/* innermost: not collapsed */
	tir_mark_parallel(&b);
	tir_store(&b, y, tir_add(&b, tir_add(&b, i, j), k), tir_flt(&b, DTYPE_F32, 2));
	tir_end(&b);
	tir_end(&b);
	tir_end(&b);
	f = tir_finish(&b);
	tir_print_stmt(f->body, &d, &sb, 0);	/* before the step: no regions */
	ASSERT_TRUE(strstr(sb_str(&sb), "region") == NULL);
	ASSERT(0, f->body->list[0]->region);
	tir_plan_parallel(f, 1000);
	tir_plan_parallel(f, 1000);		/* idempotent */
	ASSERT(-1, f->body->list[0]->region);
	ASSERT(2, f->body->list[1]->region);
	ASSERT(0, f->body->list[1]->b->list[0]->region);
	ASSERT(0, f->body->list[1]->b->list[0]->b->list[0]->region);
	sb.len = 0;
	tir_print_stmt(f->body, &d, &sb, 0);
	ASSERT_STR("for (int64_t i0 = 0; i0 < 3; i0++) { /* parallel, run serially: too little "
		   "work */\n"
		   "\tfor (int64_t i1 = 0; i1 < 50; i1++) {\n"
		   "\t\tb0[(i0 + i1)] = 1.0f;\n"
		   "\t}\n"
		   "}\n"
		   "for (int64_t i2 = 0; i2 < syms[0]; i2++) { /* parallel region: 2 loops */\n"
		   "\tfor (int64_t i3 = 0; i3 < 4; i3++) { /* parallel */\n"
		   "\t\tfor (int64_t i4 = 0; i4 < 8; i4++) { /* parallel */\n"
		   "\t\t\tb0[((i2 + i3) + i4)] = 2.0f;\n"
		   "\t\t}\n"
		   "\t}\n"
		   "}\n", sb_str(&sb));
	d.parallel_fmt = "#pragma omp parallel for collapse(%d)";
	sb.len = 0;
	tir_print_stmt(f->body, &d, &sb, 0);
	ASSERT_STR("for (int64_t i0 = 0; i0 < 3; i0++) {\n"
		   "\tfor (int64_t i1 = 0; i1 < 50; i1++) {\n"
		   "\t\tb0[(i0 + i1)] = 1.0f;\n"
		   "\t}\n"
		   "}\n"
		   "#pragma omp parallel for collapse(2)\n"
		   "for (int64_t i2 = 0; i2 < syms[0]; i2++) {\n"
		   "\tfor (int64_t i3 = 0; i3 < 4; i3++) {\n"
		   "\t\tfor (int64_t i4 = 0; i4 < 8; i4++) {\n"
		   "\t\t\tb0[((i2 + i3) + i4)] = 2.0f;\n"
		   "\t\t}\n"
		   "\t}\n"
		   "}\n", sb_str(&sb));
	sb_release(&sb);
	arena_release(&a);
}

/*
 * A nest over [M, C, 1, 1] (fold-scale's scaled weights): the loops of
 * extent 1 are not the innermost loop, C's is; the region collapses M's
 * alone, not M's and C's with an element an iteration.
 */
static void test_plan_parallel_unit_loops(void)
{
	struct arena a = { 0 };
	struct tir_builder b;
	struct tir_buf *y;
	struct tir *i, *j, *k, *l;
	struct tir_func *f;

	tir_builder_init(&b, &a, "unit");
	y = tir_param(&b, "y", DTYPE_F32);
	i = tir_loop(&b, tir_sym(&b, 0));
	tir_mark_parallel(&b);
	j = tir_loop(&b, tir_sym(&b, 1));
	tir_mark_parallel(&b);
	k = tir_loop(&b, tir_int(&b, 1));
	tir_mark_parallel(&b);
	l = tir_loop(&b, tir_int(&b, 1));
	tir_mark_parallel(&b);
	tir_store(&b, y, tir_add(&b, tir_add(&b, tir_add(&b, i, j), k), l),
		  tir_flt(&b, DTYPE_F32, 3));
	tir_end(&b);
	tir_end(&b);
	tir_end(&b);
	tir_end(&b);
	f = tir_finish(&b);
	tir_plan_parallel(f, 1000);
	ASSERT(1, f->body->list[0]->region);
	ASSERT(0, f->body->list[0]->b->list[0]->region);
	arena_release(&a);
}

TESTS({ "plan_parallel", test_plan_parallel },
      { "plan_parallel_unit_loops", test_plan_parallel_unit_loops },
      { "builder_simplifies_indices", test_builder_simplifies_indices },
      { "builder_structure", test_builder_structure },
      { "finish_no_params", test_finish_no_params },
      { "finish_eight_params", test_finish_eight_params },
      { "interp_transpose", test_interp_transpose },
      { "interp_reduction", test_interp_reduction },
      { "interp_control_and_ints", test_interp_control_and_ints },
      { "interp_types", test_interp_types },
      { "interp_u64_min_max", test_interp_u64_min_max },
      { "const_int_extremes", test_const_int_extremes },
      { "interp_failures", test_interp_failures },
      { "print_float_constants", test_print_float_constants },
      { "print_int_constants", test_print_int_constants },
      { "print_exprs", test_print_exprs },
      { "print_kernel", test_print_kernel },
      { "print_statements", test_print_statements },
      { "print_parallel_pragma", test_print_parallel_pragma },
      { "print_parallel_if", test_print_parallel_if },
      { "print_constants_compile", test_print_constants_compile },
      { "print_int64_min_compiles", test_print_int64_min_compiles },
      { "printed_kernel_matches_interpreter", test_printed_kernel_matches_interpreter })
