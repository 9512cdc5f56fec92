/*
 * libcall.h - what the library-call targets (blas, dnnl) share: the probe of
 * their library, the checks their pattern rules make of an anchor and its
 * epilogue ops, the kernel parameters bound to values, and the printer of
 * their kernels, whose bodies are calls of helpers of the target's runtime
 * prelude (plus, for blas, the epilogue's loops).
 *
 *	if (!libcall_lib_loads(sonames, 2)) return "... not installed";
 *	if (!libcall_conv_fits(g, n, 4, 4)) return false;
 *	x = libcall_param(&b, &k, "in", DTYPE_F32, n->in[0]);
 *	libcall_print_kernel(k, &tir_dialect_c, &style, sb);
 */
#ifndef COLLAGEC_LIBCALL_H
#define COLLAGEC_LIBCALL_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/target/target.h"

struct tir_dialect;

/* Whether v is present, float32 and has a shape. */
bool libcall_is_f32(const struct value *v);

/* Whether d is the constant 1. */
bool libcall_dim_is_one(struct dim d);

/*
 * Whether one of the shared objects sonames[0..n) loads, tried with dlopen
 * in a child process (so that the threads a library starts when loaded,
 * OpenBLAS's pool or oneDNN's OpenMP, never live in collagec, which forks
 * compilers and measurements later); cached per first soname.
 */
bool libcall_lib_loads(const char *const *sonames, size_t n);

/*
 * Whether Conv n has the shapes a library conv takes: x, w, y (and a bias)
 * float32 of rank min_rank to max_rank (x, w and y alike); the batch may be
 * symbolic, the channels, spatial dims, weight and bias ([M]) may not.
 * The group is the caller's to check.
 */
bool libcall_conv_fits(struct graph *g, const struct node *n, int min_rank, int max_rank);

/*
 * Whether epilogue node e, reading the chain value v (the anchor's output
 * so far), has one float32 output of v's shape: the first thing both
 * targets ask of an op they fuse after an anchor.
 */
bool libcall_epilogue_shaped(struct graph *g, const struct node *e, int v);

/*
 * Declares a kernel parameter (name, dtype) in b bound to value v: appends
 * v to k->args (sized by the caller). Returns the parameter's buffer.
 */
struct tir_buf *libcall_param(struct tir_builder *b, struct kernel *k, const char *name,
			      enum dtype dtype, int v);

/*
 * Finishes the kernel being built in b into k (its name and function, the
 * partition's span on both), releases b and appends k to p's kernels.
 */
void libcall_kernel_done(struct tir_builder *b, struct kernel *k, struct partition *p);

/* How libcall_print_kernel prints a target's kernels. */
struct libcall_style {
	const char *state;		/* (optional) the kernel's first line: a static cache */
	bool pass_state;		/* each call starts with &cache and the kernel's name */
	bool restrict_bufs;		/* buffers declared restrict (only the output written) */
	bool loops;			/* statements other than calls allowed (printed as C) */
};

/*
 * Prints kernel k with the executor's ABI (bufs, syms, threads) in dialect
 * d: its buffers, then its statements, each call_extern as a call of the
 * helper with the loop-IR arguments and `threads` last.
 */
void libcall_print_kernel(const struct kernel *k, const struct tir_dialect *d,
			  const struct libcall_style *st, struct strbuf *sb);

#endif
