/*
 * link.c - writes model.c, weights.bin and the runtime files into a private
 * build directory, runs the C compiler there (relative names only, so no
 * path leaks into the object and the output is reproducible), and moves the
 * shared object into place atomically.
 */

#include "emit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * --cpu levels and their -march flags. "generic" is the compiler's baseline
 * x86-64 (SSE2) tuned for no particular CPU; the x86-64-vN levels are the
 * psABI's (v2: SSE4.2, v3: AVX2+FMA, v4: AVX-512); "native" is this host.
 */
static const struct {
	const char *level, *flags;
} cpu_levels[] = {
	{ "native", "-march=native" },
	{ "x86-64-v2", "-march=x86-64-v2 -mtune=generic" },
	{ "x86-64-v3", "-march=x86-64-v3 -mtune=generic" },
	{ "x86-64-v4", "-march=x86-64-v4 -mtune=generic" },
	{ "generic", "-march=x86-64 -mtune=generic" },
};

const char emit_cpu_levels[] = "native, x86-64-v2, x86-64-v3, x86-64-v4 or generic";

const char *emit_cpu_flags(const char *cpu)
{
	for (size_t i = 0; i < ARRAY_SIZE(cpu_levels); i++)
		if (!strcmp(cpu, cpu_levels[i].level))
			return cpu_levels[i].flags;
	return NULL;
}

/* The value of GCC's "  -NAME=   VALUE" line in help (arena), or NULL. */
static const char *help_value(struct arena *a, const char *help, const char *name)
{
	for (const char *p = help; (p = strstr(p, name)); p++) {
		const char *v = p + strlen(name), *end;

		if (p > help && p[-1] != ' ' && p[-1] != '\t')
			continue;
		while (*v == ' ' || *v == '\t')
			v++;
		end = v;
		while (*end && *end != '\n' && *end != ' ' && *end != '\t')
			end++;
		if (end > v && *v != '[' && *v != '<')
			return arena_strndup(a, v, (size_t)(end - v));
	}
	return NULL;
}

const char *emit_cpu_resolve(struct collagec_ctx *ctx, const char *cc, const char *cpu)
{
	/* one probe per compiler and process, as objcache_compiler_id */
	static char *last_cc, *last_flags;
	const char *march, *mtune, *r = NULL;
	char *cmd;
	const char *flags = emit_cpu_flags(cpu);
	char keep[4096], line[1024];
	size_t kn = 0;
	FILE *p;

	if (!flags)
		BUG("unchecked --cpu '%s'", cpu);
	if (strcmp(cpu, "native"))
		return flags;
	if (last_cc && !strcmp(last_cc, cc))
		return last_flags ? arena_strdup(&ctx->arena, last_flags) : NULL;
	cmd = arena_printf(&ctx->arena, "%s -march=native -Q --help=target 2>/dev/null", cc);
	fflush(NULL);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	/*
	 * Only the lines that name -march= or -mtune= are kept, in a buffer
	 * of the stack: nothing is allocated while the compiler runs. It
	 * assembles a file of its own in TMPDIR; had collagec died of an
	 * allocation here (exit status 4), the compiler would have outlived
	 * it and its temporary with it (tests/oom.sh saw ccXXXXXX.o left).
	 */
	keep[0] = '\0';
	while (fgets(line, sizeof(line), p)) {
		size_t ln = strlen(line);

		if ((strstr(line, "-march=") || strstr(line, "-mtune=")) && kn + ln < sizeof(keep)) {
			memcpy(keep + kn, line, ln + 1);
			kn += ln;
		}
	}
	pclose(p);
	march = help_value(&ctx->arena, keep, "-march=");
	mtune = help_value(&ctx->arena, keep, "-mtune=");
	if (march)
		r = mtune ? arena_printf(&ctx->arena, "-march=%s -mtune=%s", march, mtune)
			  : arena_printf(&ctx->arena, "-march=%s", march);
	free(last_cc);
	free(last_flags);
	last_cc = xstrdup(cc);
	last_flags = r ? xstrdup(r) : NULL;
	return r;
}

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

/* dir/weights.bin, streamed from the graph's constants (emit_weights_write). */
static int write_weights(struct collagec_ctx *ctx, const char *dir, const struct exec_plan *ep)
{
	char *path = arena_printf(&ctx->arena, "%s/weights.bin", dir);
	FILE *f = fopen(path, "wb");

	if (!f || emit_weights_write(ep, f) < 0 || fclose(f) != 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

struct weights_out {
	const struct exec_plan *ep;
	const struct weights_file *wf;
};

static int fill_weights(int fd, const void *arg)
{
	const struct weights_out *w = arg;
	int dfd = dup(fd), e;
	FILE *f = dfd >= 0 ? fdopen(dfd, "wb") : NULL;

	if (!f) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		errno = e;
		return -1;
	}
	if (emit_weights_file_write(w->ep, w->wf, f) < 0) {
		e = errno;
		fclose(f);
		errno = e ? e : EIO;
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

/*
 * lo->weights' file, beside its place: staged (lo->weights_staged) or put
 * there. 0 or -1.
 */
static int weights_beside(struct collagec_ctx *ctx, struct link_options *lo,
			  const struct exec_plan *ep)
{
	struct weights_out w = { ep, lo->weights };
	char *tmp = file_fill_temp(lo->weights->path, fill_weights, &w);

	if (tmp && lo->stage)
		lo->weights_staged = tmp;
	else if (!tmp || file_commit(tmp, lo->weights->path) < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", lo->weights->path,
				  strerror(errno));
		return -1;
	}
	return 0;
}

/* Starts "sh -c cmd" in dir with its output to dir/log; the child's pid, or -1. */
static pid_t start_in(const char *dir, const char *cmd, const char *log)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		FILE *f;

		if (chdir(dir) < 0)
			_exit(126);
		f = freopen(log, "w", stdout);
		if (!f || dup2(fileno(stdout), 2) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		temp_track_child(pid);
	return pid;
}

/* The exit status of pid (128 + signal when killed), or -1. */
static int wait_for(pid_t pid)
{
	int st;

	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			temp_untrack_child(pid);
			return -1;
		}
	temp_untrack_child(pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs "sh -c cmd" in dir with output to dir/cc.log; the exit status, or -1. */
static int run_in(const char *dir, const char *cmd)
{
	return wait_for(start_in(dir, cmd, "cc.log"));
}

/*
 * The flags among the link flags that compiling needs (-fopenmp, -I for a
 * library's headers, -D): a kernel file or model.c is compiled on its own.
 */
static const char *compile_flags(struct arena *a, const char *ldlibs)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = ldlibs ? ldlibs : "";
	char *r;

	while (*p) {
		size_t n = strcspn(p, " ");

		if (n > 2 && (!strncmp(p, "-f", 2) || !strncmp(p, "-I", 2) || !strncmp(p, "-D", 2)))
			sb_printf(&sb, " %.*s", (int)n, p);
		p += n;
		p += strspn(p, " ");
	}
	r = arena_strdup(a, sb_str(&sb));
	sb_release(&sb);
	return r;
}

/* One C file of a build, compiled to its object on its own. */
struct cc_unit {
	const char *src;		/* "kernels_0.c" */
	const char *obj;		/* "kernels_0.o" */
	const char *flags;
	const char *key_text;		/* what its object-cache key hashes (NULL: not cached) */
	const char *lock;		/* (optional) looked up once this lock file is free */
	bool hit;			/* out: its object came from the cache */
	/* (optional) another compiler: its command line and identity (for the key) */
	const char *cmd;
	const char *compiler;
};

const char emit_nvcc_flags[] = "-fatbin -O3 -std=c++17 "
			       "-gencode arch=compute_80,code=sm_80 "
			       "-gencode arch=compute_90,code=[sm_90,compute_90]";

const char *emit_nvcc(void)
{
	static char found[4096];
	static bool done;
	const char *env = getenv("COLLAGEC_NVCC");
	const char *path = getenv("PATH");

	if (env && *env)
		return env;
	if (done)
		return found[0] ? found : NULL;
	done = true;
	while (path && *path) {
		size_t n = strcspn(path, ":");

		if (n && n + 6 < sizeof(found)) {
			snprintf(found, sizeof(found), "%.*s/nvcc", (int)n, path);
			if (access(found, X_OK) == 0)
				return found;
		}
		path += n + (path[n] == ':');
	}
	snprintf(found, sizeof(found), "/usr/local/cuda/bin/nvcc");
	if (access(found, X_OK) == 0)
		return found;
	found[0] = 0;
	return NULL;
}

/* What identifies nvcc: "nvcc --version" (arena), or NULL if it fails; once per process. */
static const char *nvcc_id(struct arena *a, const char *nvcc)
{
	static char *last_nvcc, *last_id;
	struct strbuf sb = STRBUF_INIT;
	char buf[512];
	FILE *p;

	if (last_nvcc && !strcmp(last_nvcc, nvcc))
		return last_id ? arena_strdup(a, last_id) : NULL;
	fflush(NULL);
	p = popen(arena_printf(a, "'%s' --version 2>/dev/null", nvcc), "r");
	if (!p)
		return NULL;
	while (fgets(buf, sizeof(buf), p))
		sb_puts(&sb, buf);
	free(last_nvcc);
	free(last_id);
	last_nvcc = xstrdup(nvcc);
	last_id = pclose(p) == 0 && sb.len ? xstrdup(sb_str(&sb)) : NULL;
	sb_release(&sb);
	return last_id ? arena_strdup(a, last_id) : NULL;
}

/*
 * fatbin.c: the fatbin nvcc made, as the hidden rt_cuda_fatbin of
 * rt_cuda.h (the assembler reads the file: no copy of it as C text).
 */
static const char fatbin_c[] =
	"/* generated by collagec - do not edit */\n"
	"__asm__(\".section .rodata\\n\\t.balign 64\\n\\t.globl rt_cuda_fatbin\\n\"\n"
	"\t\"\\t.hidden rt_cuda_fatbin\\n\\t.type rt_cuda_fatbin, @object\\n\"\n"
	"\t\"rt_cuda_fatbin:\\n\\t.incbin \\\"kernels.fatbin\\\"\\n\\t.byte 0\\n\"\n"
	"\t\"\\t.previous\\n\");\n";

/* Waits until no process holds path's lock (a missing file: none does). */
static void lock_wait(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
		;
	close(fd);
}

/*
 * Compiles the units, jobs at a time, each object taken from the object
 * cache when it has one and put there when it was compiled; on a failure,
 * the log of the first failing unit becomes cc.log. The first failing
 * status, or 0.
 */
static int compile_units(struct collagec_ctx *ctx, struct link_options *lo, const char *dir,
			 struct cc_unit *u, int n)
{
	struct arena *a = &ctx->arena;
	const char *compiler = lo->objects ? objcache_compiler_id(a, lo->cc) : NULL;
	const char **keys = arena_alloc(a, sizeof(*keys) * ((size_t)n + 1));
	pid_t *pids = xmalloc(sizeof(pid_t) * ((size_t)n + 1));
	int jobs = lo->jobs > 1 ? lo->jobs : 1, next = 0, done = 0, bad = 0;

	/* without a compiler identity, a cached object could come from another compiler */
	for (int i = 0; i < n; i++) {
		/* -march=native means this machine: the key holds what it resolved to */
		keys[i] = compiler && u[i].key_text && (!u[i].cmd || u[i].compiler)
			? objcache_key(a, u[i].key_text, u[i].cmd ? u[i].compiler : compiler,
				       arena_printf(a, "%s|%s", u[i].flags,
						    lo->march_resolved ? lo->march_resolved : ""))
			: NULL;
		pids[i] = -3;	/* to look up when its turn comes */
		if (keys[i] && u[i].lock)
			continue;
		u[i].hit = keys[i] && objcache_get(a, lo->objects, keys[i],
						  arena_printf(a, "%s/%s", dir, u[i].obj));
		pids[i] = u[i].hit ? 0 : -2;	/* -2: to compile */
	}
	while (done < n) {
		while (next < n && (pids[next] == 0 || next - done < jobs)) {
			/* the units before it compile meanwhile */
			if (pids[next] == -3) {
				lock_wait(u[next].lock);
				u[next].hit = objcache_get(a, lo->objects, keys[next],
							   arena_printf(a, "%s/%s", dir,
									u[next].obj));
				pids[next] = u[next].hit ? 0 : -2;
			}
			if (pids[next] == -2) {
				const char *cmd = u[next].cmd ? u[next].cmd
					: arena_printf(a, "%s %s -c -o %s %s", lo->cc, u[next].flags,
						       u[next].obj, u[next].src);

				pids[next] = start_in(dir, cmd, arena_printf(a, "cc_%d.log", next));
			}
			next++;
		}
		/* in order: the first failure in the units' order is the one reported */
		if (pids[done] != 0) {
			int st = wait_for(pids[done]);

			if (st != 0 && !bad) {
				bad = st;
				rename(arena_printf(a, "%s/cc_%d.log", dir, done),
				       arena_printf(a, "%s/cc.log", dir));
			} else if (st == 0 && keys[done]) {
				objcache_put(a, lo->objects, keys[done],
					     arena_printf(a, "%s/%s", dir, u[done].obj));
			}
		}
		done++;
	}
	free(pids);
	return bad;
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

const char *emit_math_flags(struct arena *a, const char *cc)
{
	const char *id = objcache_compiler_id(a, cc);

	return id && strstr(id, "clang") ? "-fno-math-errno"
	       : "-fno-math-errno -fno-trapping-math -fvect-cost-model=cheap";
}

bool emit_out_is_archive(const char *out)
{
	size_t n = strlen(out);

	return n > 2 && !strcmp(out + n - 2, ".a");
}

/* The runtime's translation unit: the same text for every model. */
static const char rt_c[] = "/* generated by collagec - do not edit */\n"
			   "#define _GNU_SOURCE	/* dladdr: where a weights file lies */\n"
			   "#include \"rt_model.h\"\n#include \"rt_model.c\"\n";

/*
 * Writes rt.c and the runtime files it includes into dir, and into key the
 * text rt.o's object-cache key hashes (rt.c and every file it includes, by
 * name and text). 0, or -1 after a diagnostic.
 */
static int runtime_files(struct collagec_ctx *ctx, const char *dir, struct strbuf *key)
{
	static const char *const files[] = { "collagec.h", "rt_plan.h", "rt_half.h",
					     "rt_float8.h", "rt_string.h", "rt_ml.h", "rt_random.h",
					     "rt_model.h", "rt_wino.h", "rt_model.c",
					     "rt_shape.c", "rt_imgprobe.c", "rt_par.h", "rt_par.c",
					     "rt_cores.h" };

	sb_puts(key, rt_c);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		const struct embedded_file *ef = embedded_find(files[i]);

		if (!ef)
			BUG("runtime file '%s' is not embedded", files[i]);
		if (write_file(ctx, dir, ef->name, ef->data, ef->size) < 0)
			return -1;
		sb_printf(key, "/* %s */\n", ef->name);
		sb_add(key, ef->data, ef->size);
	}
	return write_file(ctx, dir, "rt.c", rt_c, strlen(rt_c));
}

/*
 * The flags every unit of a build compiles with (the math flags come
 * before --opt, so that it can override them: -fno-math-errno lets calls to
 * the vector math of rt_model.h vectorise (the generated code never reads
 * errno), -fno-trapping-math lets GCC if-convert and so vectorise the
 * float comparisons of rt_expf's clamps (nothing reads the floating-point
 * exception flags; values are unchanged), and the cheap cost model lets -O2
 * vectorise loops whose trip count is symbolic or not a multiple of the
 * vector length (-O2's "very cheap" model does neither).
 */
static const char *base_flags(struct arena *a, struct link_options *lo)
{
	if (!lo->march)
		BUG("link options without CPU flags");
	lo->math_flags = emit_math_flags(a, lo->cc);
	return arena_printf(a, "-std=gnu11 %s %s %s -fPIC -fvisibility=hidden", lo->math_flags,
			    lo->cflags, lo->march);
}

pid_t emit_runtime_start(struct collagec_ctx *ctx, struct link_options *lo, const char *lock)
{
	struct arena *a = &ctx->arena;
	struct strbuf key = STRBUF_INIT;
	const char *base, *k, *compiler;
	char *dir;
	pid_t pid = -1;
	int fd = -1;

	if (!lo->objects || !(compiler = objcache_compiler_id(a, lo->cc)))
		return -1;
	if (!(dir = dir_make_temp("build")))
		return -1;
	base = base_flags(a, lo);
	if (runtime_files(ctx, dir, &key) < 0)
		goto out;
	k = objcache_key(a, sb_str(&key), compiler, arena_printf(a, "%s|%s", base,
				  lo->march_resolved ? lo->march_resolved : ""));
	if (objcache_get(a, lo->objects, k, arena_printf(a, "%s/rt.o", dir))) {
		pid = 0;
		goto out;
	}
	/* held by the child from before the fork until it exits */
	fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		goto out;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct cc_unit u = { "rt.c", "rt.o", base, sb_str(&key), NULL, false, NULL, NULL };
		struct link_options o = *lo;
		int st;

		o.jobs = 1;
		st = compile_units(ctx, &o, dir, &u, 1);
		dir_remove_tree(dir);
		_exit(st ? 1 : 0);
	}
	if (pid > 0)
		temp_track_child(pid);
out:
	if (fd >= 0)
		close(fd);
	if (pid <= 0)
		dir_remove_tree(dir);
	free(dir);
	sb_release(&key);
	return pid;
}

int emit_link(struct collagec_ctx *ctx, struct link_options *lo, const char *model_c,
	      char *const *kfiles, int n_kfiles, const struct exec_plan *ep, const char *out_so)
{
	struct arena *a = &ctx->arena;
	struct strbuf objs = STRBUF_INIT, rt_text = STRBUF_INIT;
	char *dir = dir_make_temp("build");
	const char *base, *fl;
	struct cc_unit *units = arena_alloc(a, sizeof(*units) * ((size_t)n_kfiles + 3));
	const char *nvcc = lo->cuda ? emit_nvcc() : NULL;
	char *cmd, *so;
	int status, rc = -1, n_units;

	if (!dir) {
		diag_error_status(ctx, STATUS_ENV, "cannot create a build directory: %s",
				  strerror(errno));
		return -1;
	}
	if (runtime_files(ctx, dir, &rt_text) < 0 ||
	    write_file(ctx, dir, "model.c", model_c, strlen(model_c)) < 0 ||
	    (!lo->weights && write_weights(ctx, dir, ep) < 0))
		goto out;
	base = base_flags(a, lo);
	fl = compile_flags(a, lo->ldlibs);
	/*
	 * model.c, the runtime and the kernel files compile at once. An
	 * archive's model.c compiles without the libraries' flags, as it always
	 * has (so a small model's OUT.a links without -fopenmp: tests/fuzz.sh).
	 * The runtime needs none of them (no OpenMP, no headers of theirs): one
	 * rt.o serves every model of a compiler and --opt.
	 */
	/*
	 * RT_MODEL_C: model.c, where a prelude defines what must be defined
	 * once (rt_dnnl.h's OpenMP entry points); RT_ARCHIVE: an archive's,
	 * which defines no such global symbol of its own.
	 */
	units[0] = (struct cc_unit){ "model.c", "model0.o",
				     emit_out_is_archive(out_so)
				     ? arena_printf(a, "%s -DRT_MODEL_C -DRT_ARCHIVE", base)
				     : arena_printf(a, "%s%s -DRT_MODEL_C", base, fl),
				     NULL, NULL, false, NULL, NULL };
	units[1] = (struct cc_unit){ "rt.c", "rt.o", base, sb_str(&rt_text), lo->runtime_lock,
				     false, NULL, NULL };
	for (int i = 0; i < n_kfiles; i++) {
		const char *src = arena_printf(a, "kernels_%d.c", i);

		if (write_file(ctx, dir, src, kfiles[i], strlen(kfiles[i])) < 0)
			goto out;
		units[2 + i] = (struct cc_unit){ src, arena_printf(a, "kernels_%d.o", i),
						 arena_printf(a, "%s%s%s", base, fl,
							      emit_out_is_archive(out_so) ?
							      " -DRT_ARCHIVE" : ""), kfiles[i],
						 NULL, false, NULL, NULL };
		sb_printf(&objs, " kernels_%d.o", i);
	}
	n_units = n_kfiles + 2;
	if (lo->cuda) {
		if (!nvcc) {
			diag_error_status(ctx, STATUS_ENV, "the model has cuda kernels and there is "
					  "no nvcc (set COLLAGEC_NVCC, or put CUDA's bin on PATH)");
			goto out;
		}
		if (write_file(ctx, dir, "kernels.cu", lo->cuda, strlen(lo->cuda)) < 0 ||
		    write_file(ctx, dir, "fatbin.c", fatbin_c, strlen(fatbin_c)) < 0)
			goto out;
		units[n_units++] = (struct cc_unit){
			"kernels.cu", "kernels.fatbin", emit_nvcc_flags, lo->cuda, NULL, false,
			arena_printf(a, "'%s' %s -o kernels.fatbin kernels.cu", nvcc,
				     emit_nvcc_flags),
			nvcc_id(a, nvcc) };
	}
	status = compile_units(ctx, lo, dir, units, n_units);
	lo->runtime_hit = units[1].hit;
	for (int i = 0; i < n_kfiles; i++)
		lo->objects_hit += units[2 + i].hit;
	if (status != 0) {
		report_log(ctx, dir, status, lo->cc);
		goto out;
	}
	sb_puts(&objs, " rt.o");
	if (lo->cuda) {
		/* fatbin.o (its .incbin needs kernels.fatbin) is made as the link starts */
		status = run_in(dir, arena_printf(a, "%s -c -o fatbin.o fatbin.c", lo->cc));
		if (status != 0) {
			report_log(ctx, dir, status, lo->cc);
			goto out;
		}
		sb_puts(&objs, " fatbin.o");
	}
	if (emit_out_is_archive(out_so))
		/*
		 * A static archive of one object (model.c, the kernel files and
		 * the runtime joined by ld -r) whose hidden symbols (kernels,
		 * tables, weights, the runtime's state) objcopy makes local, so
		 * that only the API is global and two models' objects, or a
		 * loop body's and its caller's, link side by side with a runtime
		 * each; ar D writes no dates or owners.
		 */
		cmd = arena_printf(a, "%s -r -nostdlib -o model.o model0.o%s%s && "
				   "objcopy --localize-hidden%s%s%s model.o && "
				   "ar rcsD model.out model.o",
				   lo->cc, sb_str(&objs), lo->archives ? lo->archives : "",
				   lo->archive_api ? " -w --localize-symbol='" : "",
				   lo->archive_api ? lo->archive_api : "",
				   lo->archive_api ? "'" : "");
	else
		/*
		 * No soname: a program linked with ./OUT.so records that path, as
		 * "cc app.c ./model.so" has always worked; -L. -l:OUT.so with an
		 * rpath records the bare name instead. -z defs: a symbol that no
		 * object or named library defines fails the link here, not the
		 * model's load later (a target's prelude left out of model.c
		 * once passed the link and failed only in dlopen).
		 */
		cmd = arena_printf(a, "%s %s -shared -Wl,--build-id=none -Wl,-z,defs "
				   "-o model.out model0.o%s%s%s %s -lm", lo->cc, base,
				   sb_str(&objs),
				   lo->archives ? " -Wl,--exclude-libs,ALL" : "",
				   lo->archives ? lo->archives : "", lo->ldlibs ? lo->ldlibs : "");
	status = run_in(dir, cmd);
	if (status != 0) {
		report_log(ctx, dir, status, lo->cc);
		goto out;
	}
	/* copied, not read in: a shared object is about as big as its weights */
	so = arena_printf(&ctx->arena, "%s/model.out", dir);
	if (access(so, R_OK) < 0) {
		diag_error_status(ctx, STATUS_ENV, "the C compiler produced no %s",
				  emit_out_is_archive(out_so) ? "archive" : "shared object");
		goto out;
	}
	if (lo->weights && weights_beside(ctx, lo, ep) < 0)
		goto out;
	if (lo->stage) {
		lo->staged = file_copy_temp(out_so, so);
		rc = lo->staged ? 0 : -1;
	} else {
		rc = file_copy_atomic(out_so, so);
	}
	if (rc < 0) {
		diag_error_status(ctx, STATUS_ENV, "cannot write '%s': %s", out_so, strerror(errno));
		file_discard(lo->weights_staged);
		lo->weights_staged = NULL;
	}
out:
	if (lo->keep)
		diag_warn(ctx, "build directory kept: %s", dir);
	else
		dir_remove_tree(dir);
	free(dir);
	sb_release(&objs);
	sb_release(&rt_text);
	return rc;
}
