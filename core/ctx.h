/*
 * ctx.h - one compilation's context: its arena, its diagnostics and the
 * options every stage reads. Everything of one compilation hangs off a
 * struct collagec_ctx, passed as the first argument; there is no other
 * mutable global state.
 *
 * Diagnostics accumulate (SQLite's nErr): diag_error() prints one line
 * "collagec: error: LOCATION: MESSAGE" and counts it; a stage keeps going to
 * report every problem and the driver stops at the next stage boundary.
 *
 *	struct collagec_ctx ctx;
 *	ctx_init(&ctx);
 *	diag_error(&ctx, "%s: unsupported op", loc);
 *	if (ctx.n_errors) ...
 *	ctx_release(&ctx);
 */
#ifndef COLLAGEC_CTX_H
#define COLLAGEC_CTX_H

#include "base/base.h"

enum ctx_status {
	STATUS_OK = 0,
	STATUS_MODEL = 1,	/* bad or unsupported model or input */
	STATUS_USAGE = 2,	/* bad command line */
	STATUS_REGRESSION = 3,	/* bench: slower than the baseline */
	STATUS_ENV = 4,		/* toolchain or environment failure */
	STATUS_COUNT
};

struct collagec_ctx {
	struct arena arena;		/* every object of this compilation */
	int n_errors;			/* diagnostics reported so far */
	enum ctx_status status;		/* worst status of the errors reported */
	FILE *diag_out;			/* where diagnostics go (stderr) */
	bool quiet;			/* -q: no warnings/notes */
	int verbose;			/* -v: notes on stderr */
	const char *model_path;		/* for locations; borrowed */
	struct strbuf *capture;		/* when set, diagnostics are appended here too */
};

void ctx_init(struct collagec_ctx *ctx);
void ctx_release(struct collagec_ctx *ctx);

/* Reports a user-facing error (status: model error unless diag_env/usage). */
PRINTF_LIKE(2, 3) void diag_error(struct collagec_ctx *ctx, const char *fmt, ...);
/* Same with an explicit exit status category. */
PRINTF_LIKE(3, 4) void diag_error_status(struct collagec_ctx *ctx, enum ctx_status st,
					 const char *fmt, ...);
/* Source lines quoted under the last diagnostic (a caret line), as is. */
void diag_source(struct collagec_ctx *ctx, const char *text);
PRINTF_LIKE(2, 3) void diag_warn(struct collagec_ctx *ctx, const char *fmt, ...);
PRINTF_LIKE(2, 3) void diag_note(struct collagec_ctx *ctx, const char *fmt, ...);

/*
 * Diagnostics of a trial that may fail without it being the user's error
 * (a candidate that cannot be built, a baseline placement that cannot
 * place every node) go nowhere: between diag_hush_begin() and
 * diag_hush_end() nothing is printed or captured, and the error count and
 * status come back as they were.
 */
struct diag_hush {
	FILE *out;
	struct strbuf *capture;
	int n_errors;
	enum ctx_status status;
	struct strbuf sink;
};
void diag_hush_begin(struct collagec_ctx *ctx, struct diag_hush *h);
void diag_hush_end(struct collagec_ctx *ctx, struct diag_hush *h);
/*
 * Ends a hush keeping what was said, as if it had not been hushed: the
 * diagnostics are printed and captured now, and their errors count.
 */
void diag_hush_keep(struct collagec_ctx *ctx, struct diag_hush *h);

#endif
