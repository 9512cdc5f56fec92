/*
 * diag.c - diagnostics accumulated in the context.
 */
#include "../ctx.h"

#include <string.h>

void ctx_init(struct collagec_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->diag_out = stderr;
}

void ctx_release(struct collagec_ctx *ctx)
{
	arena_release(&ctx->arena);
}

static void emit(struct collagec_ctx *ctx, const char *kind, const char *fmt, va_list ap)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "collagec: %s: ", kind);
	sb_vprintf(&sb, fmt, ap);
	sb_putc(&sb, '\n');
	if (ctx->diag_out) {
		fputs(sb_str(&sb), ctx->diag_out);
		fflush(ctx->diag_out);
	}
	if (ctx->capture)
		sb_puts(ctx->capture, sb_str(&sb));
	sb_release(&sb);
}

void diag_error_status(struct collagec_ctx *ctx, enum ctx_status st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctx, "error", fmt, ap);
	va_end(ap);
	ctx->n_errors++;
	if (ctx->status == STATUS_OK || st > ctx->status)
		ctx->status = st;
}

void diag_error(struct collagec_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(ctx, "error", fmt, ap);
	va_end(ap);
	ctx->n_errors++;
	if (ctx->status == STATUS_OK)
		ctx->status = STATUS_MODEL;
}

void diag_source(struct collagec_ctx *ctx, const char *text)
{
	if (ctx->diag_out) {
		fputs(text, ctx->diag_out);
		fflush(ctx->diag_out);
	}
	if (ctx->capture)
		sb_puts(ctx->capture, text);
}

void diag_warn(struct collagec_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (ctx->quiet)
		return;
	va_start(ap, fmt);
	emit(ctx, "warning", fmt, ap);
	va_end(ap);
}

void diag_note(struct collagec_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!ctx->verbose)
		return;
	va_start(ap, fmt);
	emit(ctx, "note", fmt, ap);
	va_end(ap);
}

void diag_hush_begin(struct collagec_ctx *ctx, struct diag_hush *h)
{
	h->out = ctx->diag_out;
	h->capture = ctx->capture;
	h->n_errors = ctx->n_errors;
	h->status = ctx->status;
	h->sink = (struct strbuf)STRBUF_INIT;
	ctx->diag_out = NULL;
	ctx->capture = &h->sink;
}

void diag_hush_end(struct collagec_ctx *ctx, struct diag_hush *h)
{
	ctx->diag_out = h->out;
	ctx->capture = h->capture;
	ctx->n_errors = h->n_errors;
	ctx->status = h->status;
	sb_release(&h->sink);
}

void diag_hush_keep(struct collagec_ctx *ctx, struct diag_hush *h)
{
	ctx->diag_out = h->out;
	ctx->capture = h->capture;
	if (h->sink.len)
		diag_source(ctx, sb_str(&h->sink));
	sb_release(&h->sink);
}
