/*
 * link.c - writes model.c, weights.bin and the runtime files into a private
 * build directory, runs the C compiler there (relative names only, so no
 * path leaks into the object and the output is reproducible), and moves the
 * shared object into place atomically.
 */

#include "emit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_file(struct collagec_ctx *ctx, const char *dir, const char *name,
		      const void *data, size_t len)
{
	char *path = arena_printf(&ctx->arena, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");

	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Runs "sh -c cmd" in dir with output to dir/cc.log; the exit status, or -1. */
static int run_in(const char *dir, const char *cmd)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		FILE *log;

		if (chdir(dir) < 0)
			_exit(126);
		log = freopen("cc.log", "w", stdout);
		if (!log || dup2(fileno(stdout), 2) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void report_log(struct collagec_ctx *ctx, const char *dir, int status, const char *cmd)
{
	char *log = file_read(arena_printf(&ctx->arena, "%s/cc.log", dir), NULL);
	char *nl;

	if (log && (nl = strchr(log, '\n')))
		*nl = 0;
	if (status == 127)
		diag_error_status(ctx, STATUS_ENV, "cannot run the C compiler '%s' (set CC)", cmd);
	else
		diag_error_status(ctx, STATUS_ENV, "the C compiler failed (exit %d): %s", status,
				  log && *log ? log : "no output");
	free(log);
}

bool emit_out_is_archive(const char *out)
{
	size_t n = strlen(out);

	return n > 2 && !strcmp(out + n - 2, ".a");
}

int emit_link(struct collagec_ctx *ctx, const struct link_options *lo, const char *model_c,
	      const struct exec_plan *ep, const char *out_so)
{
	char *dir = dir_make_temp("build");
	const char *const files[] = { "collagec.h", "rt_plan.h", "rt_model.h", "rt_model.c" };
	char *cmd, *so;
	size_t len;
	int status, rc = -1;

	if (!dir) {
		diag_error_status(ctx, STATUS_ENV, "cannot create a build directory: %s",
				  strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		const struct embedded_file *ef = embedded_find(files[i]);

		if (!ef)
			BUG("runtime file '%s' is not embedded", files[i]);
		if (write_file(ctx, dir, ef->name, ef->data, ef->size) < 0)
			goto out;
	}
	if (write_file(ctx, dir, "model.c", model_c, strlen(model_c)) < 0 ||
	    write_file(ctx, dir, "weights.bin", ep->weights.buf ? ep->weights.buf : "",
		       ep->weights.len) < 0)
		goto out;
	if (emit_out_is_archive(out_so))
		/*
		 * A static archive of one object whose hidden symbols (kernels,
		 * tables, weights) objcopy makes local, so that only the API is
		 * global and two models' objects link side by side; ar D writes
		 * no dates or owners.
		 */
		cmd = arena_printf(&ctx->arena, "%s -std=gnu11 %s -fPIC -fvisibility=hidden -c "
				   "-o model.o model.c && objcopy --localize-hidden model.o && "
				   "ar rcsD model.out model.o", lo->cc, lo->cflags);
	else
		/*
		 * No soname: a program linked with ./OUT.so records that path, as
		 * "cc app.c ./model.so" has always worked; -L. -l:OUT.so with an
		 * rpath records the bare name instead.
		 */
		cmd = arena_printf(&ctx->arena, "%s -std=gnu11 %s -fPIC -shared -fvisibility=hidden "
				   "-Wl,--build-id=none -o model.out model.c %s -lm", lo->cc,
				   lo->cflags, lo->ldlibs ? lo->ldlibs : "");
	status = run_in(dir, cmd);
	if (status != 0) {
		report_log(ctx, dir, status, lo->cc);
		goto out;
	}
	so = file_read(arena_printf(&ctx->arena, "%s/model.out", dir), &len);
	if (!so) {
		diag_error_status(ctx, STATUS_ENV, "the C compiler produced no %s",
				  emit_out_is_archive(out_so) ? "archive" : "shared object");
		goto out;
	}
	if (file_write_atomic(out_so, so, len) < 0)
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", out_so, strerror(errno));
	else
		rc = 0;
	free(so);
out:
	if (lo->keep)
		diag_warn(ctx, "build directory kept: %s", dir);
	else
		dir_remove_tree(dir);
	free(dir);
	return rc;
}
