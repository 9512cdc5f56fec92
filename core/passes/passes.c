/*
 * passes.c - the pass table and its runner.
 */
#include "passes.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

const struct pass passes[PASS_COUNT] = {
#define PASS(id, nm, fn, h) [PASS_##id] = { nm, fn, h },
#include "passes.def"
#undef PASS
};

int passes_dump(struct graph *g, const char *dir, int seq, const char *name)
{
	char *path = arena_printf(g->arena, "%s/%02d-%s.ir", dir, seq, name);
	FILE *f;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		diag_error_status(g->ctx, STATUS_ENV, "cannot create '%s': %s", dir, strerror(errno));
		return -1;
	}
	f = fopen(path, "w");
	if (!f) {
		diag_error_status(g->ctx, STATUS_ENV, "cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	graph_print(g, f);
	if (fclose(f) != 0) {
		diag_error_status(g->ctx, STATUS_ENV, "cannot write '%s'", path);
		return -1;
	}
	return 0;
}

int passes_run(struct graph *g, const char *dump_dir)
{
	if (dump_dir && passes_dump(g, dump_dir, 0, "import") < 0)
		return -1;
	for (int i = 0; i < PASS_COUNT; i++) {
		int errs = g->ctx->n_errors;

		g->pass = passes[i].name;
		if (passes[i].run(g) < 0 || g->ctx->n_errors > errs)
			return -1;
		/* records the fates of the nodes the pass left dead */
		graph_compact(g);
		graph_verify(g);
		if (dump_dir && passes_dump(g, dump_dir, i + 1, passes[i].name) < 0)
			return -1;
	}
	g->pass = NULL;
	return 0;
}
