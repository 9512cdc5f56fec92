/*
 * tir_print.c - loop IR to C-family source text.
 */
#include "tir_print.h"

#include <math.h>
#include <string.h>

/* C names of the intrinsics: [0] double, [1] float */
static const char *const intrin_names[INTRIN_COUNT][2] = {
	[INTRIN_EXP] = { "exp", "expf" },
	[INTRIN_LOG] = { "log", "logf" },
	[INTRIN_SQRT] = { "sqrt", "sqrtf" },
	[INTRIN_SIN] = { "sin", "sinf" },
	[INTRIN_COS] = { "cos", "cosf" },
	[INTRIN_TAN] = { "tan", "tanf" },
	[INTRIN_ASIN] = { "asin", "asinf" },
	[INTRIN_ACOS] = { "acos", "acosf" },
	[INTRIN_ATAN] = { "atan", "atanf" },
	[INTRIN_SINH] = { "sinh", "sinhf" },
	[INTRIN_COSH] = { "cosh", "coshf" },
	[INTRIN_TANH] = { "tanh", "tanhf" },
	[INTRIN_ASINH] = { "asinh", "asinhf" },
	[INTRIN_ACOSH] = { "acosh", "acoshf" },
	[INTRIN_ATANH] = { "atanh", "atanhf" },
	[INTRIN_ERF] = { "erf", "erff" },
	[INTRIN_FLOOR] = { "floor", "floorf" },
	[INTRIN_CEIL] = { "ceil", "ceilf" },
	[INTRIN_RINT] = { "rint", "rintf" },
	[INTRIN_FABS] = { "fabs", "fabsf" },
	[INTRIN_POW] = { "pow", "powf" },
	[INTRIN_FMOD] = { "fmod", "fmodf" },
	[INTRIN_ISNAN] = { "!!isnan", "!!isnan" },
	[INTRIN_ISINF] = { "!!isinf", "!!isinf" },	/* glibc: -1 for -inf */
	[INTRIN_LOG1P] = { "log1p", "log1pf" },
	[INTRIN_EXPM1] = { "expm1", "expm1f" },
};
_Static_assert(ARRAY_SIZE(intrin_names) == INTRIN_COUNT, "intrinsic names");

const char *tir_libm_name(enum tir_intrin f, enum dtype t)
{
	return intrin_names[f][t == DTYPE_F64 ? 0 : 1];
}

/* C's names, but float exp is the runtime's inline rt_expf (rt_model.h) */
static const char *c_intrin(enum tir_intrin f, enum dtype t)
{
	return f == INTRIN_EXP && t != DTYPE_F64 ? "rt_expf" : tir_libm_name(f, t);
}

const struct tir_dialect tir_dialect_c = {
	.name = "c",
	.intrin = c_intrin,
	.buf_fmt = "b%d",
	.sym_fmt = "syms[%d]",
};

const char *tir_ctype(enum dtype t)
{
	return t == DTYPE_BOOL ? "uint8_t" : dtype_ctype(t);
}

/* The dialect's spelling of t. */
static const char *ty(const struct tir_dialect *d, enum dtype t)
{
	return d->ctype ? d->ctype(t) : tir_ctype(t);
}

static const char *bin_ops[BIN_COUNT] = {
	[BIN_ADD] = "+", [BIN_SUB] = "-", [BIN_MUL] = "*", [BIN_DIV] = "/", [BIN_MOD] = "%",
	[BIN_LT] = "<", [BIN_LE] = "<=", [BIN_GT] = ">", [BIN_GE] = ">=", [BIN_EQ] = "==",
	[BIN_NE] = "!=", [BIN_AND] = "&", [BIN_OR] = "|", [BIN_XOR] = "^", [BIN_SHL] = "<<",
	[BIN_SHR] = ">>", [BIN_LAND] = "&&", [BIN_LOR] = "||",
};

static void print_float(double v, enum dtype t, struct strbuf *sb)
{
	char tmp[64];

	if (isnan(v)) {
		sb_puts(sb, t == DTYPE_F64 ? "((double)NAN)" : "NAN");
		return;
	}
	if (isinf(v)) {
		sb_puts(sb, v < 0 ? "(-INFINITY)" : "INFINITY");
		return;
	}
	snprintf(tmp, sizeof(tmp), t == DTYPE_F64 ? "%.17g" : "%.9g", v);
	if (!strpbrk(tmp, ".e"))
		strcat(tmp, ".0");
	sb_printf(sb, "%s%s%s%s", v < 0 ? "(" : "", tmp, t == DTYPE_F64 ? "" : "f",
		  v < 0 ? ")" : "");
}

static void print_var(const struct tir_var *v, struct strbuf *sb)
{
	sb_printf(sb, "%s%d", v->name ? v->name : "v", v->id);
}

/*
 * x rounded to the 16-bit float type t (rt_half.h): from float directly,
 * from anything wider through double, which rounds once.
 */
static void print_to_half(const struct tir *x, enum dtype t, const struct tir_dialect *d,
			  struct strbuf *sb)
{
	bool narrow = x->dtype == DTYPE_F32 || dtype_size(x->dtype) < 4 || x->dtype == DTYPE_BOOL;

	if (x->kind == TIR_LOAD && x->buf->dtype == t) {
		/* a copy (Gather, Transpose, Concat): the bits, converted neither way */
		sb_printf(sb, d->buf_fmt, x->buf->index);
		sb_putc(sb, '[');
		tir_print_expr(x->a, d, sb);
		sb_putc(sb, ']');
		return;
	}

	if (narrow)
		sb_puts(sb, t == DTYPE_F16 ? "rt_f2h((float)" : "rt_f2bf((float)");
	else
		sb_puts(sb, t == DTYPE_F16 ? "rt_d2h((double)" : "rt_d2bf((double)");
	tir_print_expr(x, d, sb);
	sb_putc(sb, ')');
}

void tir_print_expr(const struct tir *e, const struct tir_dialect *d, struct strbuf *sb)
{
	switch (e->kind) {
	case TIR_INT:
		if (e->dtype == DTYPE_I64) {
			if (e->i == INT64_MIN)
				sb_puts(sb, "INT64_MIN");
			else if (e->i > INT32_MAX || e->i < INT32_MIN)
				sb_printf(sb, "INT64_C(%lld)", (long long)e->i);
			else if (e->i < 0)
				sb_printf(sb, "(%lld)", (long long)e->i);
			else
				sb_printf(sb, "%lld", (long long)e->i);
		} else if (e->dtype == DTYPE_U64) {
			sb_printf(sb, "UINT64_C(%llu)", (unsigned long long)e->i);
		} else if (e->i == INT64_MIN) {
			sb_printf(sb, "((%s)INT64_MIN)", ty(d, e->dtype));
		} else {
			sb_printf(sb, "((%s)%lld)", ty(d, e->dtype), (long long)e->i);
		}
		break;
	case TIR_FLT:
		print_float(e->f, e->dtype, sb);
		break;
	case TIR_VAR:
		print_var(e->var, sb);
		break;
	case TIR_SYM:
		sb_printf(sb, d->sym_fmt, (int)e->i);
		break;
	case TIR_LOAD:
		if (dtype_is_half(e->buf->dtype))
			sb_puts(sb, e->buf->dtype == DTYPE_F16 ? "rt_h2f(" : "rt_bf2f(");
		sb_printf(sb, d->buf_fmt, e->buf->index);
		sb_putc(sb, '[');
		tir_print_expr(e->a, d, sb);
		sb_putc(sb, ']');
		if (dtype_is_half(e->buf->dtype))
			sb_putc(sb, ')');
		break;
	case TIR_BIN:
		if (e->op == BIN_MIN || e->op == BIN_MAX) {
			/*
			 * NaN-propagating for floats: a NaN operand wins (a != a;
			 * no || either: branch-free, so C compilers vectorise it)
			 */
			const char *cmp = e->op == BIN_MIN ? "<" : ">";

			sb_puts(sb, dtype_is_float(e->dtype) ? "(((" : "((");
			tir_print_expr(e->a, d, sb);
			sb_printf(sb, " %s ", cmp);
			tir_print_expr(e->b, d, sb);
			if (dtype_is_float(e->dtype)) {
				/* the | in its own parentheses: clang warns otherwise */
				sb_puts(sb, ") | (");
				tir_print_expr(e->a, d, sb);
				sb_puts(sb, " != ");
				tir_print_expr(e->a, d, sb);
				sb_puts(sb, ")");
			}
			sb_puts(sb, ") ? ");
			tir_print_expr(e->a, d, sb);
			sb_puts(sb, " : ");
			tir_print_expr(e->b, d, sb);
			sb_puts(sb, ")");
			break;
		}
		sb_putc(sb, '(');
		tir_print_expr(e->a, d, sb);
		sb_printf(sb, " %s ", bin_ops[e->op]);
		tir_print_expr(e->b, d, sb);
		sb_putc(sb, ')');
		break;
	case TIR_UN:
		sb_puts(sb, e->op == UN_NEG ? "(-" : e->op == UN_NOT ? "(~" : "(!");
		tir_print_expr(e->a, d, sb);
		sb_putc(sb, ')');
		break;
	case TIR_CALL: {
		enum dtype t = e->list[0]->dtype == DTYPE_F64 ? DTYPE_F64 : DTYPE_F32;

		sb_printf(sb, "%s(", d->intrin((enum tir_intrin)e->op, t));
		for (int i = 0; i < e->n; i++) {
			if (i)
				sb_puts(sb, ", ");
			tir_print_expr(e->list[i], d, sb);
		}
		sb_putc(sb, ')');
		break;
	}
	case TIR_CAST:
		if (e->i && (e->a->dtype == DTYPE_F32 || dtype_size(e->a->dtype) < 4 ||
			     e->a->dtype == DTYPE_BOOL)) {
			/* from float (or what float holds exactly): one branch-free round trip */
			sb_puts(sb, e->i == DTYPE_F16 ? "rt_round16((float)" : "rt_roundbf((float)");
			tir_print_expr(e->a, d, sb);
			sb_putc(sb, ')');
		} else if (e->i) {
			sb_puts(sb, e->i == DTYPE_F16 ? "rt_h2f(" : "rt_bf2f(");
			print_to_half(e->a, (enum dtype)e->i, d, sb);
			sb_putc(sb, ')');
		} else if (e->dtype == DTYPE_BOOL) {
			sb_printf(sb, "((%s)((", ty(d, DTYPE_BOOL));
			tir_print_expr(e->a, d, sb);
			sb_puts(sb, ") != 0))");
		} else {
			sb_printf(sb, "((%s)", ty(d, e->dtype));
			tir_print_expr(e->a, d, sb);
			sb_putc(sb, ')');
		}
		break;
	case TIR_ADDR:
		sb_puts(sb, "(");
		sb_printf(sb, d->buf_fmt, e->buf->index);
		sb_puts(sb, " + ");
		tir_print_expr(e->a, d, sb);
		sb_puts(sb, ")");
		break;
	case TIR_SELECT:
		sb_puts(sb, "(");
		tir_print_expr(e->a, d, sb);
		sb_puts(sb, " ? ");
		tir_print_expr(e->b, d, sb);
		sb_puts(sb, " : ");
		tir_print_expr(e->c, d, sb);
		sb_puts(sb, ")");
		break;
	default:
		BUG("tir_print_expr on statement kind %d", e->kind);
	}
}

static void indent_to(struct strbuf *sb, int n)
{
	while (n-- > 0)
		sb_putc(sb, '\t');
}

static void print_stmt(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
		       int indent, bool in_parallel);

static void print_for(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
		      int indent, bool in_parallel)
{
	indent_to(sb, indent);
	sb_printf(sb, "for (%s ", ty(d, DTYPE_I64));
	print_var(s->var, sb);
	sb_puts(sb, " = 0; ");
	print_var(s->var, sb);
	sb_puts(sb, " < ");
	tir_print_expr(s->a, d, sb);
	sb_puts(sb, "; ");
	print_var(s->var, sb);
	if (d->parallel_fmt || d->outline || (!s->parallel && !s->region))
		sb_puts(sb, "++) {\n");
	else if (s->region > 0)
		sb_printf(sb, "++) { /* parallel region: %d loop%s */\n", s->region,
			  s->region > 1 ? "s" : "");
	else if (s->region < 0)
		sb_puts(sb, "++) { /* parallel, run serially: too little work */\n");
	else
		sb_puts(sb, "++) { /* parallel */\n");
	print_stmt(s->b, d, sb, indent + 1, in_parallel);
	indent_to(sb, indent);
	sb_puts(sb, "}\n");
}

/*
 * The head of a parallel region over its s->region loops: the dialect's pragma
 * before it, or with parallel_if_fmt two versions, the parallel one when
 * the condition holds and a plain one (fully optimised, no outlined
 * region) else.
 */
static void print_parallel(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
			   int indent)
{
	struct strbuf trip = STRBUF_INIT;
	const struct tir *l = s;
	int depth = s->region;

	/*
	 * A work estimate: the collapsed iteration count times the estimated
	 * work of one iteration (its inner loops' iterations) when it runs
	 * loops or extern calls.
	 */
	for (int k = 0; k < depth; k++) {
		sb_puts(&trip, k ? " * " : "(");
		tir_print_expr(l->a, d, &trip);
		if (k + 1 < depth)
			l = l->b->list[0];
	}
	if (tir_has_loop(l->b) || tir_has_extern(l->b))
		sb_printf(&trip, " * %lld)", (long long)tir_work(l->b));
	else
		sb_puts(&trip, ")");
	if (d->parallel_if_fmt) {
		indent_to(sb, indent);
		sb_puts(sb, "if (");
		sb_printf(sb, d->parallel_if_fmt, sb_str(&trip));
		sb_puts(sb, ") {\n");
		indent++;
	}
	indent_to(sb, indent);
	sb_printf(sb, d->parallel_fmt, depth, sb_str(&trip));
	sb_putc(sb, '\n');
	print_for(s, d, sb, indent, true);
	if (d->parallel_if_fmt) {
		indent_to(sb, indent - 1);
		sb_puts(sb, "} else {\n");
		print_for(s, d, sb, indent, true);
		indent_to(sb, indent - 1);
		sb_puts(sb, "}\n");
	}
	sb_release(&trip);
}

/* What a parallel region reads from its function: its free variables and buffers. */
struct region_uses {
	VEC(const struct tir_var *) bound, free;
	VEC(const struct tir_buf *) bufs;
	bool assigns_free;		/* it assigns a variable declared outside */
};

static bool var_in(const struct tir_var *const *v, int n, const struct tir_var *x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/*
 * Collects what s uses from outside. Variables are bound before they are
 * used (loop variables and lets), so a walk in order sees each binding
 * first.
 */
static void region_walk(const struct tir *s, struct region_uses *u)
{
	if (!s)
		return;
	switch (s->kind) {
	case TIR_FOR:
		region_walk(s->a, u);
		vec_push(&u->bound, s->var);
		region_walk(s->b, u);
		return;
	case TIR_LET:
		region_walk(s->a, u);
		vec_push(&u->bound, s->var);
		return;
	case TIR_ASSIGN:
		if (!var_in(u->bound.v, u->bound.n, s->var))
			u->assigns_free = true;
		region_walk(s->a, u);
		return;
	case TIR_VAR:
		if (!var_in(u->bound.v, u->bound.n, s->var) &&
		    !var_in(u->free.v, u->free.n, s->var))
			vec_push(&u->free, s->var);
		return;
	case TIR_LOAD:
	case TIR_STORE:
	case TIR_ADDR: {
		bool seen = false;

		for (int i = 0; i < u->bufs.n; i++)
			seen |= u->bufs.v[i]->index == s->buf->index;
		if (!seen)
			vec_push(&u->bufs, s->buf);
		break;
	}
	default:
		break;
	}
	region_walk(s->a, u);
	region_walk(s->b, u);
	region_walk(s->c, u);
	if (s->kind == TIR_SEQ || s->kind == TIR_CALL || s->kind == TIR_EXTERN)
		for (int i = 0; i < s->n; i++)
			region_walk(s->list[i], u);
}

/*
 * The outlined function of region s, NAME_pK, and its context struct: it
 * runs the iterations [rt_lo, rt_hi) of the region's collapsed loops. The
 * innermost collapsed loop stays a plain loop over a run of its range (the
 * C compiler vectorises it as before); the outer ones are recovered from
 * the flat index once per run.
 */
static void print_region_func(const struct tir *s, const struct tir_dialect *d,
			      const struct region_uses *u, const char *fn, struct strbuf *sb)
{
	struct tir_outline *o = d->outline;
	const struct tir *l[8];
	int depth = s->region;

	l[0] = s;
	for (int k = 1; k < depth; k++)
		l[k] = l[k - 1]->b->list[0];
	sb_printf(sb, "\nstruct %s_ctx {\n\tconst int64_t *syms;\n", fn);
	for (int i = 0; i < u->bufs.n; i++)
		sb_printf(sb, "\t%s *b%d;\n", tir_ctype(u->bufs.v[i]->dtype), u->bufs.v[i]->index);
	for (int i = 0; i < u->free.n; i++) {
		sb_printf(sb, "\t%s ", ty(d, u->free.v[i]->dtype));
		print_var(u->free.v[i], sb);
		sb_puts(sb, ";\n");
	}
	sb_printf(sb, "};\n\nstatic void %s(void *rt_v, int64_t rt_lo, int64_t rt_hi)\n{\n"
		  "\tconst struct %s_ctx *rt_c = rt_v;\n\tconst int64_t *syms = rt_c->syms;\n"
		  "\tint threads = 1;	/* nothing runs in parallel inside a region */\n", fn, fn);
	for (int i = 0; i < u->bufs.n; i++)
		sb_printf(sb, "\t%s *%sb%d = rt_c->b%d;\n", tir_ctype(u->bufs.v[i]->dtype),
			  o->restrict_bufs ? "restrict " : "", u->bufs.v[i]->index,
			  u->bufs.v[i]->index);
	for (int i = 0; i < u->free.n; i++) {
		sb_printf(sb, "\t%s ", ty(d, u->free.v[i]->dtype));
		print_var(u->free.v[i], sb);
		sb_puts(sb, " = rt_c->");
		print_var(u->free.v[i], sb);
		sb_puts(sb, ";\n");
	}
	sb_puts(sb, "\t(void)syms;\n\t(void)threads;\n");
	if (depth == 1) {
		sb_printf(sb, "\tfor (%s ", ty(d, DTYPE_I64));
		print_var(s->var, sb);
		sb_puts(sb, " = rt_lo; ");
		print_var(s->var, sb);
		sb_puts(sb, " < rt_hi; ");
		print_var(s->var, sb);
		sb_puts(sb, "++) {\n");
		print_stmt(s->b, d, sb, 2, true);
		sb_puts(sb, "\t}\n}\n");
		return;
	}
	sb_puts(sb, "\tfor (int64_t rt_i = rt_lo; rt_i < rt_hi;) {\n\t\tint64_t rt_n = ");
	tir_print_expr(l[depth - 1]->a, d, sb);
	sb_puts(sb, ";\n\t\tint64_t rt_q = rt_i / rt_n, rt_s = rt_i % rt_n;\n"
		"\t\tint64_t rt_e = rt_s + (rt_hi - rt_i) < rt_n ? rt_s + (rt_hi - rt_i) : rt_n;\n");
	for (int k = depth - 2; k >= 0; k--) {
		sb_printf(sb, "\t\t%s ", ty(d, DTYPE_I64));
		print_var(l[k]->var, sb);
		if (k == 0) {
			sb_puts(sb, " = rt_q;\n");
			break;
		}
		sb_puts(sb, " = rt_q % (");
		tir_print_expr(l[k]->a, d, sb);
		sb_puts(sb, ");\n\t\trt_q /= (");
		tir_print_expr(l[k]->a, d, sb);
		sb_puts(sb, ");\n");
	}
	sb_printf(sb, "\t\tfor (%s ", ty(d, DTYPE_I64));
	print_var(l[depth - 1]->var, sb);
	sb_puts(sb, " = rt_s; ");
	print_var(l[depth - 1]->var, sb);
	sb_puts(sb, " < rt_e; ");
	print_var(l[depth - 1]->var, sb);
	sb_puts(sb, "++) {\n");
	print_stmt(l[depth - 1]->b, d, sb, 3, true);
	sb_puts(sb, "\t\t}\n\t\trt_i += rt_e - rt_s;\n\t}\n}\n");
}

/*
 * A parallel region through the dialect's outline: its function goes to
 * outline->pre, and here a call of rt_par_for over the collapsed
 * iterations when the work is worth it, else the plain nest. Returns false
 * (printing nothing) for a region that assigns a variable of its function,
 * which only a serial nest keeps right.
 */
static bool print_outlined(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
			   int indent)
{
	struct tir_outline *o = d->outline;
	struct region_uses u = { 0 };
	struct strbuf trip = STRBUF_INIT, total = STRBUF_INIT;
	const struct tir *l = s;
	char fn[160];
	int depth = s->region;

	if (depth > 8)
		BUG("a parallel region of %d loops", depth);
	region_walk(s, &u);
	if (u.assigns_free) {
		vec_free(&u.bound);
		vec_free(&u.free);
		vec_free(&u.bufs);
		return false;
	}
	snprintf(fn, sizeof(fn), "%s_p%d", o->name, o->n++);
	for (int k = 0; k < depth; k++) {
		sb_puts(&total, k ? " * " : "(");
		tir_print_expr(l->a, d, &total);
		if (k + 1 < depth)
			l = l->b->list[0];
	}
	sb_puts(&total, ")");
	sb_puts(&trip, sb_str(&total));
	if (tir_has_loop(l->b) || tir_has_extern(l->b))
		sb_printf(&trip, " * %lld", (long long)tir_work(l->b));
	print_region_func(s, d, &u, fn, &o->pre);
	indent_to(sb, indent);
	sb_puts(sb, "if (");
	sb_printf(sb, d->parallel_if_fmt ? d->parallel_if_fmt : "%s > 0", sb_str(&trip));
	sb_puts(sb, ") {\n");
	indent_to(sb, indent + 1);
	sb_printf(sb, "struct %s_ctx rt_c = { syms", fn);
	for (int i = 0; i < u.bufs.n; i++)
		sb_printf(sb, ", b%d", u.bufs.v[i]->index);
	for (int i = 0; i < u.free.n; i++) {
		sb_puts(sb, ", ");
		print_var(u.free.v[i], sb);
	}
	sb_puts(sb, " };\n\n");
	indent_to(sb, indent + 1);
	sb_printf(sb, "rt_par_for(%s, %s, 1, %s, &rt_c);\n", o->threads, sb_str(&total), fn);
	indent_to(sb, indent);
	sb_puts(sb, "} else {\n");
	print_for(s, d, sb, indent + 1, true);
	indent_to(sb, indent);
	sb_puts(sb, "}\n");
	sb_release(&trip);
	sb_release(&total);
	vec_free(&u.bound);
	vec_free(&u.free);
	vec_free(&u.bufs);
	return true;
}

static void print_stmt(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
		       int indent, bool in_parallel)
{
	switch (s->kind) {
	case TIR_SEQ:
		for (int i = 0; i < s->n; i++)
			print_stmt(s->list[i], d, sb, indent, in_parallel);
		break;
	case TIR_FOR:
		if (s->region > 0 && !in_parallel && d->outline && print_outlined(s, d, sb, indent))
			break;
		if (s->region > 0 && !in_parallel && d->parallel_fmt) {
			print_parallel(s, d, sb, indent);
			break;
		}
		print_for(s, d, sb, indent, in_parallel);
		break;
	case TIR_STORE:
		indent_to(sb, indent);
		sb_printf(sb, d->buf_fmt, s->buf->index);
		sb_putc(sb, '[');
		tir_print_expr(s->a, d, sb);
		sb_puts(sb, "] = ");
		if (dtype_is_half(s->buf->dtype))
			print_to_half(s->b, s->buf->dtype, d, sb);
		else
			tir_print_expr(s->b, d, sb);
		sb_puts(sb, ";\n");
		break;
	case TIR_IF:
		indent_to(sb, indent);
		sb_puts(sb, "if (");
		tir_print_expr(s->a, d, sb);
		sb_puts(sb, ") {\n");
		print_stmt(s->b, d, sb, indent + 1, in_parallel);
		if (s->c) {
			indent_to(sb, indent);
			sb_puts(sb, "} else {\n");
			print_stmt(s->c, d, sb, indent + 1, in_parallel);
		}
		indent_to(sb, indent);
		sb_puts(sb, "}\n");
		break;
	case TIR_LET:
		indent_to(sb, indent);
		sb_printf(sb, "%s ", ty(d, s->var->dtype));
		print_var(s->var, sb);
		sb_puts(sb, " = ");
		tir_print_expr(s->a, d, sb);
		sb_puts(sb, ";\n");
		break;
	case TIR_ASSIGN:
		indent_to(sb, indent);
		print_var(s->var, sb);
		sb_puts(sb, " = ");
		tir_print_expr(s->a, d, sb);
		sb_puts(sb, ";\n");
		break;
	case TIR_EXTERN:
		indent_to(sb, indent);
		sb_printf(sb, "%s(", s->name);
		for (int i = 0; i < s->n; i++) {
			if (i)
				sb_puts(sb, ", ");
			tir_print_expr(s->list[i], d, sb);
		}
		if (d->extern_tail)
			sb_puts(sb, d->extern_tail);
		sb_puts(sb, ");\n");
		break;
	default:
		BUG("tir_print_stmt on expression kind %d", s->kind);
	}
}

void tir_print_stmt(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
		    int indent)
{
	print_stmt(s, d, sb, indent, false);
}

void tir_print(const struct tir_func *f, const char *const *syms, int n_syms,
	       struct strbuf *sb)
{
	(void)syms;
	(void)n_syms;
	sb_printf(sb, "kernel %s(", f->name);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, "%s%s *b%d /* %s */", i ? ", " : "", tir_ctype(f->bufs[i]->dtype), i,
			  f->bufs[i]->name);
	sb_puts(sb, ") {\n");
	tir_print_stmt(f->body, &tir_dialect_c, sb, 1);
	sb_puts(sb, "}\n");
}
