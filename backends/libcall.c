/*
 * libcall.c - what the library-call targets (blas, dnnl) share; see
 * libcall.h.
 */
#include "libcall.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/tir/tir_print.h"
#include "backends.h"

bool libcall_is_f32(const struct value *v)
{
	return v && v->dtype == DTYPE_F32 && v->has_shape;
}

bool libcall_dim_is_one(struct dim d)
{
	return dim_is_const(d) && d.c == 1;
}

/* Whether one of sonames[0..n) loads here. */
static bool loads_here(const char *const *sonames, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_LOCAL);

		if (h) {
			dlclose(h);
			return true;
		}
	}
	return false;
}

bool libcall_lib_loads(const char *const *sonames, size_t n)
{
	static struct {
		const char *first;
		bool ok;
	} done[8];
	static size_t n_done;
	bool ok;
	pid_t pid;
	int st = 0;

	for (size_t i = 0; i < n_done; i++)
		if (done[i].first == sonames[0])
			return done[i].ok;
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(loads_here(sonames, n) ? 0 : 1);
	if (pid < 0) {
		/* no child: load it here */
		ok = loads_here(sonames, n);
	} else {
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	if (n_done < ARRAY_SIZE(done)) {
		done[n_done].first = sonames[0];
		done[n_done++].ok = ok;
	}
	return ok;
}

bool libcall_conv_fits(struct graph *g, const struct node *n, int min_rank, int max_rank)
{
	const struct value *x = node_in(g, n, 0), *w = node_in(g, n, 1), *bias = node_in(g, n, 2);
	const struct value *y = node_out(g, n, 0);

	if (n->n_out != 1 || !libcall_is_f32(x) || !libcall_is_f32(w) || !libcall_is_f32(y) ||
	    (bias && !libcall_is_f32(bias)))
		return false;
	if (x->shape.rank < min_rank || x->shape.rank > max_rank ||
	    w->shape.rank != x->shape.rank || y->shape.rank != x->shape.rank)
		return false;
	/* the batch may be symbolic; channels, spatial dims and the weight may not */
	for (int i = 1; i < x->shape.rank; i++)
		if (!dim_is_const(x->shape.d[i]) || !dim_is_const(y->shape.d[i]))
			return false;
	return shape_is_static(&w->shape) &&
	       (!bias || (bias->shape.rank == 1 && shape_is_static(&bias->shape)));
}

bool libcall_epilogue_shaped(struct graph *g, const struct node *e, int v)
{
	const struct value *out = node_out(g, e, 0), *cv = &g->values.v[v];

	if (e->n_out != 1 || !libcall_is_f32(out) || out->shape.rank != cv->shape.rank)
		return false;
	for (int i = 0; i < out->shape.rank; i++)
		if (!dim_eq(out->shape.d[i], cv->shape.d[i]))
			return false;
	return true;
}

struct tir_buf *libcall_param(struct tir_builder *b, struct kernel *k, const char *name,
			      enum dtype dtype, int v)
{
	k->args[k->n_args++] = v;
	return tir_param(b, name, dtype);
}

void libcall_kernel_done(struct tir_builder *b, struct kernel *k, struct partition *p)
{
	k->name = b->name;
	k->func = tir_finish(b);
	tir_builder_release(b);
	k->span = p->span;
	k->func->span = p->span;
	vec_push(&p->kernels, *k);
}

void libcall_print_kernel(const struct kernel *k, const struct tir_dialect *d,
			  const struct libcall_style *st, struct strbuf *sb)
{
	const struct tir_func *f = k->func;
	struct strbuf fn = STRBUF_INIT, *out = sb;

	kernel_comment(k, out);
	/* the function goes to fn, after the regions outlined from it (tir_print.h) */
	sb = &fn;
	if (d->outline) {
		d->outline->name = f->name;
		d->outline->n = 0;
		d->outline->restrict_bufs = st->restrict_bufs;
	}
	sb_printf(sb, "static void %s(void *const *bufs, const int64_t *syms, int threads)\n{\n",
		  f->name);
	if (st->state)
		sb_printf(sb, "\t%s\n", st->state);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, "\t%s *%sb%d = bufs[%d];\n", tir_ctype(f->bufs[i]->dtype),
			  st->restrict_bufs ? "restrict " : "", i, i);
	sb_puts(sb, "\t(void)syms;\n");
	for (int i = 0; i < f->body->n; i++) {
		const struct tir *s = f->body->list[i];

		if (s->kind != TIR_EXTERN) {
			if (!st->loops)
				BUG("kernel '%s' has a statement that is no library call", f->name);
			tir_print_stmt(s, d, sb, 1);
			continue;
		}
		sb_printf(sb, "\t%s(", s->name);
		if (st->pass_state)
			sb_printf(sb, "&cache, \"%s\", ", f->name);
		for (int j = 0; j < s->n; j++) {
			tir_print_expr(s->list[j], d, sb);
			sb_puts(sb, ", ");
		}
		sb_puts(sb, "threads);\n");
	}
	sb_puts(sb, "}\n");
	if (d->outline) {
		sb_puts(out, sb_str(&d->outline->pre));
		sb_release(&d->outline->pre);
	}
	sb_puts(out, sb_str(&fn));
	sb_release(&fn);
}
