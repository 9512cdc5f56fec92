/*
 * tir_print.h - prints loop IR as C-family source. One printer serves the C
 * backend, the IR dumps and OpenCL C: a dialect says how intrinsics and types
 * are spelled; the kernel signature is the backend's business.
 *
 *	tir_print_stmt(f->body, &tir_dialect_c, sb, 1);
 */
#ifndef COLLAGEC_TIR_PRINT_H
#define COLLAGEC_TIR_PRINT_H

#include "tir.h"

struct tir_dialect {
	const char *name;
	/* C function for an intrinsic at float type t (float or double) */
	const char *(*intrin)(enum tir_intrin f, enum dtype t);
	/* how buffer parameter i is named in the body ("b%d") */
	const char *buf_fmt;
	/* how symbol i is read ("syms[%d]") */
	const char *sym_fmt;
	/*
	 * (optional) line printed before the outermost parallel loop nest;
	 * %d is how many perfectly nested parallel loops it covers (<= 3) and
	 * %s an estimate of its work (iterations, times those of the inner
	 * loops of one iteration)
	 */
	const char *parallel_fmt;
	/*
	 * (optional) a C condition, %s the work estimate: with it, a parallel
	 * nest is printed twice, "if (COND) { pragma + nest } else { nest }"
	 */
	const char *parallel_if_fmt;
	/*
	 * (optional) spelling of a dtype in casts, typed constants, locals and
	 * loop variables; NULL = tir_ctype() (OpenCL C: "long", "uchar", ...)
	 */
	const char *(*ctype)(enum dtype t);
	/*
	 * (optional) text after the last argument of every call_extern: the
	 * c target passes its helpers the kernel's thread count (", threads")
	 */
	const char *extern_tail;
	/*
	 * (optional) parallel regions as functions run by the model's thread
	 * pool (rt_par_for, runtime/rt_par.c) instead of parallel_fmt's
	 * pragma; see struct tir_outline
	 */
	struct tir_outline *outline;
};

/*
 * How a printer outlines parallel regions. The caller names the function
 * it prints, prints the function's text into a buffer of its own, then puts
 * pre (the regions' context structs and functions, NAME_p0, NAME_p1...) before
 * it and resets pre: the regions must precede their caller.
 *
 *	o->name = f->name; o->n = 0;
 *	tir_print_stmt(f->body, d, &body, 1);	// d->outline == o
 *	sb_puts(out, sb_str(&o->pre)); sb_release(&o->pre); sb_puts(out, header + body);
 */
struct tir_outline {
	const char *name;		/* the function being printed */
	const char *threads;		/* C expression of its thread count */
	bool restrict_bufs;		/* its buffers are restrict pointers */
	int n;				/* regions outlined so far */
	struct strbuf pre;		/* their text */
};

extern const struct tir_dialect tir_dialect_c;		/* for IR dumps: no pragmas */

/* C's math library name of f for t ("expf"; tir_dialect_c's exp is rt_expf). */
const char *tir_libm_name(enum tir_intrin f, enum dtype t);

void tir_print_expr(const struct tir *e, const struct tir_dialect *d, struct strbuf *sb);
void tir_print_stmt(const struct tir *s, const struct tir_dialect *d, struct strbuf *sb,
		    int indent);
/* C spelling of a dtype ("float", "int64_t", "uint8_t" for bool). */
const char *tir_ctype(enum dtype t);

#endif
