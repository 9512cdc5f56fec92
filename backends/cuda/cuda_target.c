/*
 * cuda_target.c - the cuda target: the generic lowering's loop IR (with
 * the register-tiled MatMul, Gemm and Conv strategies opencl uses) printed
 * as CUDA C, compiled by nvcc at compile time into one fatbin per model
 * (emit_link: sm_80 and sm_90 code, compute_90 PTX), run through the CUDA
 * driver that rt_cuda.h loads when the model opens.
 *
 * The parallel step and the stages are devloop.c's, as for opencl: a
 * top-level loop nest whose loops are parallel (marked, or proved) runs as
 * one kernel over the product of their extents, a grid-stride loop in
 * which each thread splits its index into the loops' variables (innermost
 * fastest, so neighbouring threads touch neighbouring elements); anything
 * else runs as one thread. Each stage is one extern "C" __global__
 * function taking its buffers as device pointers and the symbols it reads;
 * the executor's kernel is host C that hands rt_cu_launch its argument
 * pointers, sizes and flags (devloop_arg_flags: values stay on the device
 * between cuda kernels).
 *
 * Availability: compiling needs nvcc and CUDA's headers (unavailable());
 * running needs a GPU and its driver (cannot_run(), probed in a child
 * process). Without a GPU the target still compiles, and the search takes
 * its costs from the analytic estimator.
 */
#include "../devloop.h"
#include "../libcall.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/emit/emit.h"
#include "../../core/tir/tir_print.h"

/* What a kernel may take: buffers and symbols, at most (rt_cu_launch's params). */
#define MAX_PARAMS 176

static const struct target_option cu_options[] = {
	{ "device", "CUDA device index (cuDeviceGet order, as CUDA_VISIBLE_DEVICES leaves "
	  "them), when the model opens", 0, 63, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL },
};

/* ---- availability ---- */

/* The directory holding cuda.h for nvcc (nvcc's ../include), or NULL (static). */
const char *cuda_include_dir(void)
{
	static char dir[PATH_MAX];
	static bool done;
	const char *nvcc = emit_nvcc();
	char path[4200];
	const char *slash;

	if (done)
		return dir[0] ? dir : NULL;
	done = true;
	if (nvcc && (slash = strrchr(nvcc, '/')) && slash - nvcc < 4000) {
		snprintf(path, sizeof(path), "%.*s/../include/cuda.h", (int)(slash - nvcc), nvcc);
		if (access(path, R_OK) == 0 && realpath(path, dir) && strrchr(dir, '/')) {
			*strrchr(dir, '/') = 0;
			return dir;
		}
	}
	snprintf(dir, sizeof(dir), "/usr/local/cuda/include");
	if (access("/usr/local/cuda/include/cuda.h", R_OK) == 0)
		return dir;
	dir[0] = 0;
	return NULL;
}

const char *cuda_unavailable(void)
{
	if (!emit_nvcc())
		return "no nvcc (install the CUDA toolkit, put its bin on PATH or set "
		       "COLLAGEC_NVCC)";
	if (!cuda_include_dir())
		return "no cuda.h beside nvcc (../include) or in /usr/local/cuda/include";
	return NULL;
}

#define MAX_DEVICES 16

struct probe {
	int n_devices;
	char name[MAX_DEVICES][96];
	int cc[MAX_DEVICES];		/* compute capability, major * 10 + minor */
	char why[160];			/* set when no kernel can run */
};

/*
 * The driver's few entry points the probe calls, declared here so that
 * collagec builds without CUDA's headers (cuda.h: CUresult, CUdevice and
 * CUdevice_attribute are ints; CU_OK is 0; the compute capability's
 * attributes are 75 and 76).
 */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
#define CU_OK 0
#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

static void probe_here(void *out)
{
	struct probe *r = out;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	cu_init_fn init;
	cu_count_fn count;
	cu_get_fn get;
	cu_name_fn name;
	cu_attr_fn attr;
	int n = 0;

	memset(r, 0, sizeof(*r));
	if (!h) {
		snprintf(r->why, sizeof(r->why), "no CUDA driver (libcuda.so.1) here");
		return;
	}
	init = (cu_init_fn)(uintptr_t)dlsym(h, "cuInit");
	count = (cu_count_fn)(uintptr_t)dlsym(h, "cuDeviceGetCount");
	get = (cu_get_fn)(uintptr_t)dlsym(h, "cuDeviceGet");
	name = (cu_name_fn)(uintptr_t)dlsym(h, "cuDeviceGetName");
	attr = (cu_attr_fn)(uintptr_t)dlsym(h, "cuDeviceGetAttribute");
	if (!init || !count || !get || !name || !attr) {
		snprintf(r->why, sizeof(r->why), "libcuda.so.1 lacks cuInit");
		return;
	}
	if (init(0) != CU_OK || count(&n) != CU_OK || n <= 0) {
		snprintf(r->why, sizeof(r->why), "no CUDA device found");
		return;
	}
	r->n_devices = n;
	for (int i = 0; i < n && i < MAX_DEVICES; i++) {
		int d;
		int ma = 0, mi = 0;

		if (get(&d, i) != CU_OK)
			continue;
		name(r->name[i], (int)sizeof(r->name[i]) - 1, d);
		attr(&ma, CU_ATTR_CC_MAJOR, d);
		attr(&mi, CU_ATTR_CC_MINOR, d);
		r->cc[i] = 10 * ma + mi;
	}
}

static const struct probe *probe(void)
{
	static struct probe r;
	static bool done;
	int st;

	if (done)
		return &r;
	done = true;
	if ((st = devloop_probe(probe_here, &r, sizeof(r))) != 0) {
		memset(&r, 0, sizeof(r));
		snprintf(r.why, sizeof(r.why), "the CUDA probe failed (%s)",
			 st > 0 ? strsignal(st) : "no answer");
	}
	r.why[sizeof(r.why) - 1] = 0;
	return &r;
}

const char *cuda_cannot_run(void)
{
	const struct probe *r = probe();

	return r->why[0] ? r->why : NULL;
}

/* `collagec targets`: "INDEX: NAME (sm_XY)" per device. */
static const char *cu_devices(void)
{
	static char text[MAX_DEVICES * 128 + 64];
	const struct probe *r = probe();
	size_t len = 0;

	text[0] = 0;
	for (int i = 0; i < r->n_devices && i < MAX_DEVICES; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%d: %s (sm_%d)\n", i,
					r->name[i], r->cc[i]);
	return text;
}

/* ---- the CUDA C dialect ---- */

/* CUDA's math library has C's names: expf for float, exp for double. */
static const char *cu_intrin(enum tir_intrin f, enum dtype t)
{
	return tir_libm_name(f, t);
}

static const struct tir_dialect cu_dialect = {
	.name = "cuda",
	.intrin = cu_intrin,
	.buf_fmt = "b%d",
	.sym_fmt = "sym_%d",
	.parallel_fmt = NULL,
};

/* Before the kernels of every model's kernels.cu. */
static const char cu_prelude[] =
	"/* generated by collagec - do not edit */\n"
	"#include <math.h>\n#include <stdint.h>\n\n";

/* ---- printing ---- */

static void print_var(const struct tir_var *v, struct strbuf *sb)
{
	struct tir e = { 0 };

	e.kind = TIR_VAR;
	e.dtype = v->dtype;
	e.var = (struct tir_var *)v;
	tir_print_expr(&e, &cu_dialect, sb);
}

/* The product of a stage's extents in dialect d ("1" for a unit range). */
static void print_count(const struct devloop_stage *s, const struct tir_dialect *d,
			struct strbuf *sb)
{
	int n = 0;

	for (int i = 0; i < s->n_nest; i++) {
		if (devloop_unit_loop(s->nest[i]))
			continue;
		sb_puts(sb, n++ ? " * rt_cu_extent(" : "rt_cu_extent(");
		tir_print_expr(s->nest[i]->a, d, sb);
		sb_putc(sb, ')');
	}
	if (!n)
		sb_puts(sb, "1");
}

/* Counts the reads of each variable in s (an ASSIGN's target counts too). */
static void count_uses(const struct tir *s, int *uses)
{
	if (!s)
		return;
	if (s->kind == TIR_VAR || s->kind == TIR_ASSIGN)
		uses[s->var->id]++;
	if (s->kind == TIR_SEQ || s->kind == TIR_CALL || s->kind == TIR_EXTERN)
		for (int i = 0; i < s->n; i++)
			count_uses(s->list[i], uses);
	count_uses(s->a, uses);
	count_uses(s->b, uses);
	count_uses(s->c, uses);
}

/* Drops the locals nothing reads from s's blocks; whether it dropped any. */
static bool drop_lets(struct tir *s, const int *uses)
{
	bool any = false;
	int k = 0;

	if (!s)
		return false;
	if (s->kind == TIR_FOR || s->kind == TIR_IF)
		return drop_lets(s->b, uses) | drop_lets(s->c, uses);
	if (s->kind != TIR_SEQ)
		return false;
	for (int i = 0; i < s->n; i++) {
		if (s->list[i]->kind == TIR_LET && !uses[s->list[i]->var->id]) {
			any = true;
			continue;
		}
		any |= drop_lets(s->list[i], uses);
		s->list[k++] = s->list[i];
	}
	s->n = k;
	return any;
}

/*
 * The reads of f's variables, after dropping the locals nothing reads (loop
 * IR expressions have no side effects; the strategies bind values that some
 * of their variants never read, and nvcc warns of each): nvcc compiles
 * the result without a warning (arena).
 */
static int *live_vars(struct graph *g, struct tir_func *f)
{
	int *uses = arena_alloc(g->arena, sizeof(int) * (size_t)(f->n_vars + 1));

	do {
		memset(uses, 0, sizeof(int) * (size_t)(f->n_vars + 1));
		count_uses(f->body, uses);
	} while (drop_lets(f->body, uses));
	return uses;
}

/* The CUDA C text of one stage; uses: the reads of each variable. */
static void print_stage(const struct tir_func *f, int n_in, const struct devloop_stage *s,
			const int *syms, int n_syms, const int *uses, struct strbuf *sb)
{
	int last = -1;

	sb_printf(sb, "extern \"C\" __global__ void %s(", s->name);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, "%s%s%s *__restrict__ b%d", i ? ", " : "", i < n_in ? "const " : "",
			  tir_ctype(f->bufs[i]->dtype), i);
	for (int i = 0; i < n_syms; i++)
		sb_printf(sb, ", const int64_t sym_%d", syms[i]);
	sb_puts(sb, ")\n{\n");
	if (!s->n_nest) {
		for (int i = 0; i < s->n_stmts; i++)
			tir_print_stmt(s->stmts[i], &cu_dialect, sb, 1);
		sb_puts(sb, "}\n");
		return;
	}
	sb_puts(sb, "\tconst int64_t rt_n = ");
	print_count(s, &cu_dialect, sb);
	sb_puts(sb, ";\n\n\tfor (int64_t rt_t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; "
		"rt_t < rt_n;\n\t     rt_t += (int64_t)gridDim.x * blockDim.x) {\n"
		"\t\tint64_t rt_q = rt_t;\n\n\t\t(void)rt_q;\n");
	(void)f;
	for (int i = 0; i < s->n_nest; i++)
		if (!devloop_unit_loop(s->nest[i]))
			last = last < 0 ? i : last;
	/* innermost first: the fastest-varying index; a variable nothing reads is not declared */
	for (int i = s->n_nest - 1; i >= 0; i--) {
		bool used = uses[s->nest[i]->var->id] > 0;

		if (devloop_unit_loop(s->nest[i]) || (!used && i == last)) {
			if (used) {
				sb_puts(sb, "\t\tconst int64_t ");
				print_var(s->nest[i]->var, sb);
				sb_puts(sb, " = 0;\n");
			}
			continue;
		}
		if (used) {
			sb_puts(sb, "\t\tconst int64_t ");
			print_var(s->nest[i]->var, sb);
		}
		if (i == last) {
			sb_puts(sb, " = rt_q;\n");
			continue;
		}
		if (used) {
			sb_puts(sb, " = rt_q % (");
			tir_print_expr(s->nest[i]->a, &cu_dialect, sb);
			sb_puts(sb, ");\n");
		}
		sb_puts(sb, "\t\trt_q /= (");
		tir_print_expr(s->nest[i]->a, &cu_dialect, sb);
		sb_puts(sb, ");\n");
	}
	tir_print_stmt(s->nest[s->n_nest - 1]->b, &cu_dialect, sb, 2);
	sb_puts(sb, "\t}\n}\n");
}

bool cuda_shares_memory(const struct target_kind *k)
{
	return k == &target_kind_cuda || k == &target_kind_cublas || k == &target_kind_cudnn;
}

/*
 * Prints one loop-IR function f (kernel k's, or one of its variants') as
 * CUDA stages (into cu) plus the host function NAME with the executor's
 * ABI (into sb).
 */
static int print_func(struct graph *g, const struct kernel *k, const struct tir_func *f,
		      int device, const struct target_kind **where, struct strbuf *sb,
		      struct strbuf *cu)
{
	bool *used = arena_alloc(g->arena, sizeof(bool) * (size_t)(g->syms.n + 1));
	bool *assigned = arena_alloc(g->arena, sizeof(bool) * (size_t)(f->n_vars + 1));
	int *syms = arena_alloc(g->arena, sizeof(int) * (size_t)(g->syms.n + 1));
	struct devloop_stage st[DEVLOOP_MAX_STAGES];
	int n_syms = 0, ns;
	int *uses;

	if (f->n_bufs != k->n_args || f->n_bufs > DEVLOOP_MAX_BUFS ||
	    !devloop_scan(f->body, used, g->syms.n, assigned)) {
		diag_error(g->ctx, "cuda: kernel %s cannot be printed as CUDA C", f->name);
		return -1;
	}
	for (int i = 0; i < g->syms.n; i++)
		if (used[i])
			syms[n_syms++] = i;
	if (f->n_bufs + n_syms > MAX_PARAMS) {
		diag_error(g->ctx, "cuda: kernel %s has %d parameters, more than %d", f->name,
			   f->n_bufs + n_syms, MAX_PARAMS);
		return -1;
	}
	uses = live_vars(g, (struct tir_func *)f);
	ns = devloop_stages(f, st);
	if (ns == 0) {
		sb_printf(sb, "static void %s(void *const *bufs, const int64_t *syms, int threads)\n"
			  "{\n\t(void)bufs;\n\t(void)syms;\n\t(void)threads;\n}\n", f->name);
		return 0;
	}
	for (int s = 0; s < ns; s++) {
		st[s].name = ns == 1 ? f->name : arena_printf(g->arena, "%s_s%d", f->name, s);
		print_stage(f, k->n_inputs, &st[s], syms, n_syms, uses, cu);
		sb_putc(cu, '\n');
		/* the constants it reads, uploaded when the model opens */
		sb_printf(sb, "static const char *const rt_cu_%s_consts[] = {", st[s].name);
		for (int i = 0; i < k->n_inputs; i++)
			if (devloop_arg_flags(g, where, k->args[i], true, cuda_shares_memory) == DEVLOOP_CONST) {
				sb_putc(sb, ' ');
				emit_c_string(sb, g->values.v[k->args[i]].name);
				sb_putc(sb, ',');
			}
		sb_puts(sb, " NULL };\n");
		sb_printf(sb, "static struct rt_cu_kernel rt_cu_%s = { \"%s\", %d, rt_cu_%s_consts, "
			  "NULL, NULL };\nRT_CU_REGISTER(rt_cu_%s)\n", st[s].name, st[s].name, device,
			  st[s].name, st[s].name);
	}
	devloop_print_host_args(g, k, f, where, cuda_shares_memory, "int64_t", syms, n_syms, sb);
	sb_printf(sb, "\tconst struct rt_cu_stage stages[%d] = {\n", ns);
	for (int s = 0; s < ns; s++) {
		sb_printf(sb, "\t\t{ &rt_cu_%s, ", st[s].name);
		if (st[s].n_nest)
			print_count(&st[s], &tir_dialect_c, sb);
		else
			sb_puts(sb, "-1");
		sb_puts(sb, " },\n");
	}
	sb_printf(sb, "\t};\n\n\t(void)syms;\n\t(void)threads;\n"
		  "\trt_cu_launch(\"%s\", bufs, bytes, flags, %d, %d, scalars, %d, stages, %d);\n}\n",
		  f->name, f->n_bufs, k->n_inputs, n_syms, ns);
	return 0;
}

/* A kernel: its function, or its variants and a host dispatcher. */
static int print_kernel(struct graph *g, const struct kernel *k, int device,
			const struct target_kind **where, struct strbuf *sb, struct strbuf *cu)
{
	kernel_comment(k, sb);
	if (k->n_variants <= 1)
		return print_func(g, k, k->func, device, where, sb, cu);
	for (int i = 0; i < k->n_variants; i++)
		if (print_func(g, k, k->variants[i].func, device, where, sb, cu) < 0)
			return -1;
	kernel_dispatcher(k, &tir_dialect_c, sb);
	return 0;
}

/* Device code reads rt_cu_extent (a loop's extent, 0 when not positive). */
static const char cu_extent[] =
	"static __device__ __forceinline__ int64_t rt_cu_extent(int64_t n)\n"
	"{\n\treturn n > 0 ? n : 0;\n}\n\n";

static int cu_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			     struct runtime_module *m)
{
	const struct embedded_file *host = embedded_find("rt_cuda.h");
	const char *inc = cuda_include_dir();
	const struct target_kind **where;

	if (!host)
		BUG("rt_cuda.h is not embedded");
	if (!inc) {
		diag_error_status(g->ctx, STATUS_ENV, "target '%s': %s", t->str, cuda_unavailable());
		return -1;
	}
	vec_push(&m->ldlibs, arena_printf(g->arena, "-I%s", inc));
	m->prelude = host->data;
	m->cuda_prelude = arena_printf(g->arena, "%s%s", cu_prelude, cu_extent);
	m->init = "collagec_cu_init";
	m->fini = "collagec_cu_fini";
	m->sync = "collagec_cu_sync";
	where = devloop_node_kinds(g);
	for (int i = 0; i < p->kernels.n; i++)
		if (print_kernel(g, &p->kernels.v[i], (int)target_opt(t, "device"), where,
				 &m->source, &m->cuda) < 0)
			return -1;
	return 0;
}

int cuda_flag_args(struct tir_builder *b, struct graph *g, const int *vals, int n, int n_in,
		   struct tir **args)
{
	const struct target_kind **where = devloop_node_kinds(g);

	for (int i = 0; i < n; i++)
		args[i] = tir_int(b, vals[i] < 0 ? 0 : devloop_arg_flags(g, where, vals[i], i < n_in,
									   cuda_shares_memory));
	return n;
}


int cuda_library_module(struct graph *g, const struct target *t, struct partition *p,
			struct runtime_module *m, const char *rt_file, const char *state_type)
{
	const struct embedded_file *cu = embedded_find("rt_cuda.h");
	const struct embedded_file *lib = embedded_find(rt_file);
	const char *inc = cuda_include_dir();
	const struct libcall_style style = {
		.state = arena_printf(g->arena, "static %s cache;", state_type), .pass_state = true
	};

	if (!cu || !lib)
		BUG("rt_cuda.h or %s is not embedded", rt_file);
	if (!inc) {
		diag_error_status(g->ctx, STATUS_ENV, "target '%s': no CUDA headers", t->str);
		return -1;
	}
	vec_push(&m->ldlibs, arena_printf(g->arena, "-I%s", inc));
	m->prelude = arena_printf(g->arena, "%s\n%s", cu->data, lib->data);
	m->init = "collagec_cu_init";
	m->fini = "collagec_cu_fini";
	m->sync = "collagec_cu_sync";
	for (int i = 0; i < p->kernels.n; i++)
		libcall_print_kernel(&p->kernels.v[i], &tir_dialect_c, &style, &m->source);
	return 0;
}

const struct target_kind target_kind_cuda = {
	.api_version = TARGET_API_VERSION,
	.name = "cuda",
	.device = "gpu",
	.description = "CUDA C from loop IR, compiled by nvcc into the model (sm_80, sm_90, "
		       "PTX), run through the CUDA driver; the ops opencl takes, on float32",
	.options = cu_options,
	.unavailable = cuda_unavailable,
	.cannot_run = cuda_cannot_run,
	/*
	 * Without a GPU to measure: plain loop kernels on a data-centre GPU
	 * (an H100/H200: ~60 TFLOP/s float32, 3.3 TB/s) reach about a tenth of
	 * its arithmetic and half its bandwidth; a launch costs ~5 us, and a
	 * value crossing PCIe with its synchronisation ~20 us.
	 */
	.nominal_flops = 6e12,
	.nominal_bytes = 1.6e12,
	.nominal_overhead = 5e-6,
	.nominal_transfer = 2e-5,
	.memory = "cuda",
	.devices = cu_devices,
	.supports = devloop_supports,
	.plan_parallel = devloop_plan_parallel,
	.tir_to_runtime = cu_tir_to_runtime,
	.strategies = opencl_strategies,
};
