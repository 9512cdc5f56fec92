/*
 * opencl_target.c - the OpenCL target: the generic lowering's loop IR (the
 * same kernels the c target prints as C) printed as OpenCL C through the
 * shared printer, run through the OpenCL runtime (PoCL on the CPU here).
 *
 * Per executor kernel, the parallel step (plan_parallel) splits the body
 * into stages and tir_to_runtime prints them: a
 * top-level loop nest whose outer loops are parallel becomes an NDRange of up
 * to three dims (get_global_id, innermost loop on dim 0; loops of extent 1
 * do not use a dim), anything else runs as a single work-item. A loop is
 * parallel when the lowering marked it so (TIR_FOR .parallel) or when
 * devloop.c proves that the iterations touch disjoint parts of every
 * buffer they write (affine indices with constant coefficients). Each stage
 * is one __kernel; the executor's kernel is host C that hands its argument
 * pointers, their sizes and what its neighbours are (devloop_arg_flags: is an input
 * on the device already, does host code read an output) to rt_ocl_launch,
 * which passes each as a device buffer and a byte offset, the symbol values
 * it needs (cl_long) after them, and enqueues the stages in order. Values
 * stay on the device between opencl kernels (a device arena mirrors the
 * host arena); copies and waits happen only at boundaries with host code.
 * The host half shared by all kernels (one program built at collagec_open,
 * released at the last collagec_close, errors through collagec_rt_abort) is
 * rt_opencl.h, embedded into collagec and given as the runtime modules'
 * prelude (pasted once into model.c).
 *
 * MatMul, Gemm and Conv go through the target's op strategies
 * (opencl_strategies.c): register-tiled kernels, the generic lowering as the
 * fallback.
 *
 * The collagec binary never links or loads OpenCL itself: unavailable()
 * probes libOpenCL.so.1 through dlopen in a child process, so no OpenCL
 * driver state (PoCL's worker threads) survives into processes that fork
 * later (conformance forks one child per test).
 */
#include "../devloop.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "../../core/emit/emit.h"
#include "../../core/ops/ops.h"
#include "../../core/tir/tir_print.h"


static const struct target_option ocl_options[] = {
	{ "device", "OpenCL device: its index over all platforms in enumeration order, a kind "
	  "(gpu, cpu, accelerator) or part of its name ('_' for a blank); the first that "
	  "matches, when the model opens", 0, 0, 0, "0" },
	{ NULL, NULL, 0, 0, 0, NULL },
};

/* ---- availability ---- */

#define MAX_DEVICES 16		/* those `targets` lists and -device can name */

struct probe {
	int n_devices;			/* over all platforms */
	struct {
		cl_device_type type;
		char name[96];
		char platform[64];
	} dev[MAX_DEVICES];		/* the first MAX_DEVICES of them */
	char why[160];			/* set when unusable */
};

typedef cl_int (*get_platforms_fn)(cl_uint, cl_platform_id *, cl_uint *);
typedef cl_int (*get_devices_fn)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
				 cl_uint *);
typedef cl_int (*get_device_info_fn)(cl_device_id, cl_device_info, size_t, void *, size_t *);
typedef cl_int (*get_platform_info_fn)(cl_platform_id, cl_platform_info, size_t, void *,
				       size_t *);

static void probe_here(struct probe *r)
{
	void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
	get_platforms_fn plats_fn;
	get_devices_fn devs_fn;
	get_device_info_fn dinfo_fn;
	get_platform_info_fn pinfo_fn;
	cl_platform_id plats[16];
	cl_uint np = 0;

	r->n_devices = 0;
	r->why[0] = 0;
	if (!h) {
		snprintf(r->why, sizeof(r->why), "cannot load libOpenCL.so.1 (apt-get install "
			 "ocl-icd-libopencl1 pocl-opencl-icd)");
		return;
	}
	plats_fn = (get_platforms_fn)(uintptr_t)dlsym(h, "clGetPlatformIDs");
	devs_fn = (get_devices_fn)(uintptr_t)dlsym(h, "clGetDeviceIDs");
	dinfo_fn = (get_device_info_fn)(uintptr_t)dlsym(h, "clGetDeviceInfo");
	pinfo_fn = (get_platform_info_fn)(uintptr_t)dlsym(h, "clGetPlatformInfo");
	if (!plats_fn || !devs_fn || !dinfo_fn || !pinfo_fn) {
		snprintf(r->why, sizeof(r->why), "libOpenCL.so.1 lacks clGetPlatformIDs");
		return;
	}
	if (plats_fn(16, plats, &np) != CL_SUCCESS || np == 0) {
		snprintf(r->why, sizeof(r->why), "no OpenCL platform found");
		return;
	}
	for (cl_uint i = 0; i < np && i < 16; i++) {
		cl_device_id devs[MAX_DEVICES];
		cl_uint nd = 0;
		char plat[64] = "";

		if (devs_fn(plats[i], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS)
			continue;
		pinfo_fn(plats[i], CL_PLATFORM_NAME, sizeof(plat) - 1, plat, NULL);
		for (cl_uint d = 0; d < nd && d < MAX_DEVICES; d++) {
			int k = r->n_devices + (int)d;

			if (k >= MAX_DEVICES)
				break;
			dinfo_fn(devs[d], CL_DEVICE_TYPE, sizeof(r->dev[k].type), &r->dev[k].type,
				 NULL);
			dinfo_fn(devs[d], CL_DEVICE_NAME, sizeof(r->dev[k].name) - 1, r->dev[k].name,
				 NULL);
			memcpy(r->dev[k].platform, plat, sizeof(plat));
		}
		r->n_devices += (int)nd;
	}
	if (r->n_devices == 0)
		snprintf(r->why, sizeof(r->why), "no OpenCL device found");
}

static void probe_fill(void *r)
{
	probe_here(r);
}

/* Probes in a child (devloop_probe); cached. */
static const struct probe *probe(void)
{
	static struct probe r;
	static bool done;
	int st;

	if (done)
		return &r;
	done = true;
	if ((st = devloop_probe(probe_fill, &r, sizeof(r))) != 0) {
		r.n_devices = 0;
		snprintf(r.why, sizeof(r.why), "the OpenCL probe failed (%s)",
			 st > 0 ? strsignal(st) : "no answer");
	}
	r.why[sizeof(r.why) - 1] = 0;
	return &r;
}

static const char *ocl_unavailable(void)
{
	const struct probe *r = probe();

	return r->why[0] ? r->why : NULL;
}

static const char *kind_name(cl_device_type t)
{
	return t & CL_DEVICE_TYPE_GPU ? "gpu" : t & CL_DEVICE_TYPE_CPU ? "cpu"
	       : t & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator" : "other";
}

/* `collagec targets`: "INDEX: NAME (KIND, PLATFORM)" per device. */
static const char *ocl_devices(void)
{
	static char text[MAX_DEVICES * 180 + 64];
	const struct probe *r = probe();
	size_t len = 0;

	text[0] = 0;
	for (int i = 0; i < r->n_devices && i < MAX_DEVICES; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%d: %s (%s, %s)\n", i,
					r->dev[i].name, kind_name(r->dev[i].type),
					r->dev[i].platform);
	if (r->n_devices > MAX_DEVICES)
		snprintf(text + len, sizeof(text) - len, "(and %d more)\n",
			 r->n_devices - MAX_DEVICES);
	return text;
}

/*
 * Whether device i is what -device=sel says (rt_opencl.h's rt_ocl_matches,
 * which decides when the model opens: the same rule).
 */
static bool device_matches(const char *sel, const struct probe *r, int i)
{
	const char *d = sel;
	const char *name = r->dev[i].name;

	while (*d >= '0' && *d <= '9')
		d++;
	if (d != sel && !*d)
		return strtol(sel, NULL, 10) == i;
	if (!strcasecmp(sel, "gpu") || !strcasecmp(sel, "cpu") || !strcasecmp(sel, "accelerator"))
		return !strcasecmp(sel, kind_name(r->dev[i].type));
	for (const char *n = name; *n; n++) {
		size_t k = 0;

		while (sel[k] && n[k] &&
		       (tolower((unsigned char)sel[k]) == tolower((unsigned char)n[k]) ||
			(sel[k] == '_' && n[k] == ' ')))
			k++;
		if (!sel[k])
			return true;
	}
	return false;
}

/* ---- the OpenCL C dialect ---- */

/* OpenCL C's math functions are overloaded: the double names serve both. */
static const char *ocl_intrin(enum tir_intrin f, enum dtype t)
{
	(void)t;
	return tir_libm_name(f, DTYPE_F64);
}

static const char *ocl_ctype(enum dtype t)
{
	switch (t) {
	case DTYPE_F32: return "float";
	case DTYPE_F64: return "double";
	case DTYPE_I64: return "long";
	case DTYPE_U64: return "ulong";
	case DTYPE_I32: return "int";
	case DTYPE_U32: return "uint";
	case DTYPE_I16: return "short";
	case DTYPE_U16: return "ushort";
	case DTYPE_I8: return "char";
	case DTYPE_U8: return "uchar";
	case DTYPE_BOOL: return "uchar";
	default: BUG("opencl: no OpenCL C type for dtype %d", (int)t);
	}
}

static const struct tir_dialect ocl_dialect = {
	.name = "opencl",
	.intrin = ocl_intrin,
	.buf_fmt = "b%d",
	.sym_fmt = "sym_%d",
	.parallel_fmt = NULL,
	.ctype = ocl_ctype,
};

/* ---- printing ---- */

/* Appends text as C string literals, one per line. */
static void c_lines(struct strbuf *sb, const char *text)
{
	sb_puts(sb, "\t\"");
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '\n') {
			sb_puts(sb, p[1] ? "\\n\"\n\t\"" : "\\n");
		} else if (*p == '"' || *p == '\\' || (*p == '?' && p[1] == '?') || *p < 32 ||
			   *p > 126) {
			if (*p == '\t')
				sb_puts(sb, "\\t");
			else
				sb_printf(sb, "\\%03o", *p);
		} else {
			sb_putc(sb, (char)*p);
		}
	}
	sb_puts(sb, "\"");
}

static void print_var(const struct tir_var *v, struct strbuf *sb)
{
	struct tir e = { 0 };

	e.kind = TIR_VAR;
	e.dtype = v->dtype;
	e.var = (struct tir_var *)v;
	tir_print_expr(&e, &ocl_dialect, sb);
}

/* The OpenCL C text of one stage. */
static void print_stage(const struct tir_func *f, int n_in, const struct devloop_stage *s,
			const int *syms, int n_syms, struct strbuf *sb)
{
	int dim = devloop_stage_dims(s);

	sb_printf(sb, "__kernel void %s(", s->name);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, "%s__global %s%s *a%d, const ulong o%d", i ? ", " : "",
			  i < n_in ? "const " : "", ocl_ctype(f->bufs[i]->dtype), i, i);
	for (int i = 0; i < n_syms; i++)
		sb_printf(sb, ", const long sym_%d", syms[i]);
	sb_puts(sb, ")\n{\n");
	/* the buffer at its byte offset (in the device arena, or 0) */
	for (int i = 0; i < f->n_bufs; i++) {
		const char *q = i < n_in ? "const " : "";
		const char *t = ocl_ctype(f->bufs[i]->dtype);

		sb_printf(sb, "\t__global %s%s *restrict b%d = (__global %s%s *)"
			  "((__global %suchar *)a%d + o%d);\n", q, t, i, q, t, q, i, i);
	}
	for (int i = 0; i < s->n_nest; i++) {
		sb_puts(sb, "\tconst long ");
		print_var(s->nest[i]->var, sb);
		if (devloop_unit_loop(s->nest[i])) {
			sb_puts(sb, " = 0;\n");
			continue;
		}
		sb_printf(sb, " = (long)get_global_id(%d);\n", --dim);
		/* the range is rounded up to whole work-groups (rt_ocl_launch) */
		sb_puts(sb, "\tif (");
		print_var(s->nest[i]->var, sb);
		sb_puts(sb, " >= ");
		tir_print_expr(s->nest[i]->a, &ocl_dialect, sb);
		sb_puts(sb, ")\n\t\treturn;\n");
	}
	if (s->n_nest)
		tir_print_stmt(s->nest[s->n_nest - 1]->b, &ocl_dialect, sb, 1);
	else
		for (int i = 0; i < s->n_stmts; i++)
			tir_print_stmt(s->stmts[i], &ocl_dialect, sb, 1);
	sb_puts(sb, "}\n");
}

/* The kinds whose kernels share the opencl device's memory: opencl alone. */
static bool on_opencl(const struct target_kind *k)
{
	return k == &target_kind_opencl;
}

/*
 * Prints one loop-IR function f (kernel k's, or one of its variants') as
 * OpenCL stages plus the host function NAME with the executor's ABI.
 */
static int print_func(struct graph *g, const struct kernel *k, const struct tir_func *f,
		      const char *device, const struct target_kind **where, struct strbuf *sb)
{
	bool *used = arena_alloc(g->arena, sizeof(bool) * (size_t)(g->syms.n + 1));
	bool *assigned = arena_alloc(g->arena, sizeof(bool) * (size_t)(f->n_vars + 1));
	int *syms = arena_alloc(g->arena, sizeof(int) * (size_t)(g->syms.n + 1));
	struct devloop_stage st[DEVLOOP_MAX_STAGES];
	int n_syms = 0, ns;

	if (f->n_bufs != k->n_args || f->n_bufs > DEVLOOP_MAX_BUFS ||
	    !devloop_scan(f->body, used, g->syms.n, assigned)) {
		diag_error(g->ctx, "opencl: kernel %s cannot be printed as OpenCL C", f->name);
		return -1;
	}
	for (int i = 0; i < g->syms.n; i++)
		if (used[i])
			syms[n_syms++] = i;
	if (2 * f->n_bufs + n_syms > 120) {
		/* OpenCL guarantees 1024 bytes of kernel arguments */
		diag_error(g->ctx, "opencl: kernel %s has %d arguments, more than 120", f->name,
			   2 * f->n_bufs + n_syms);
		return -1;
	}
	ns = devloop_stages(f, st);
	if (ns == 0) {
		sb_printf(sb, "static void %s(void *const *bufs, const int64_t *syms, int threads)\n"
			  "{\n\t(void)bufs;\n\t(void)syms;\n\t(void)threads;\n}\n", f->name);
		return 0;
	}
	for (int s = 0; s < ns; s++) {
		struct strbuf text = STRBUF_INIT;

		st[s].name = ns == 1 ? f->name : arena_printf(g->arena, "%s_s%d", f->name, s);
		print_stage(f, k->n_inputs, &st[s], syms, n_syms, &text);
		/* the constants it reads, uploaded when the model opens */
		sb_printf(sb, "static const char *const rt_ocl_%s_consts[] = {", st[s].name);
		for (int i = 0; i < k->n_inputs; i++)
			if (devloop_arg_flags(g, where, k->args[i], true, on_opencl) == DEVLOOP_CONST) {
				sb_putc(sb, ' ');
				emit_c_string(sb, g->values.v[k->args[i]].name);
				sb_putc(sb, ',');
			}
		sb_puts(sb, " NULL };\n");
		sb_printf(sb, "static struct rt_ocl_kernel rt_ocl_%s = { \"%s\", \"%s\",\n",
			  st[s].name, st[s].name, device);
		c_lines(sb, sb_str(&text));
		sb_printf(sb, ",\n\trt_ocl_%s_consts, NULL, NULL };\nRT_OCL_REGISTER(rt_ocl_%s)\n",
			  st[s].name, st[s].name);
		sb_release(&text);
	}
	devloop_print_host_args(g, k, f, where, on_opencl, "cl_long", syms, n_syms, sb);
	sb_printf(sb, "\tconst struct rt_ocl_stage stages[%d] = {\n", ns);
	for (int s = 0; s < ns; s++) {
		int dim = devloop_stage_dims(&st[s]);

		sb_printf(sb, "\t\t{ &rt_ocl_%s, %d, {", st[s].name, dim);
		for (int i = st[s].n_nest - 1; i >= 0; i--) {
			if (devloop_unit_loop(st[s].nest[i]))
				continue;
			sb_puts(sb, " rt_ocl_extent(");
			tir_print_expr(st[s].nest[i]->a, &tir_dialect_c, sb);
			sb_puts(sb, "),");
		}
		for (int i = dim; i < 3; i++)
			sb_puts(sb, " 1,");
		sb_puts(sb, " } },\n");
	}
	sb_printf(sb, "\t};\n\n\t(void)syms;\n\t(void)threads;\n"
		  "\trt_ocl_launch(\"%s\", bufs, bytes, flags, %d, %d, scalars, %d, stages, %d);\n}\n",
		  f->name, f->n_bufs, k->n_inputs, n_syms, ns);
	return 0;
}

/* A kernel: its function, or its variants and a dispatcher (as c does). */
static int print_kernel(struct graph *g, const struct kernel *k, const char *device,
			const struct target_kind **where, struct strbuf *sb)
{
	kernel_comment(k, sb);
	if (k->n_variants <= 1)
		return print_func(g, k, k->func, device, where, sb);
	for (int i = 0; i < k->n_variants; i++)
		if (print_func(g, k, k->variants[i].func, device, where, sb) < 0)
			return -1;
	kernel_dispatcher(k, &tir_dialect_c, sb);	/* host C */
	return 0;
}

static int ocl_tir_to_runtime(struct graph *g, const struct target *t, struct partition *p,
			      struct runtime_module *m)
{
	const char *dev = target_opt_text(t, "device");
	const struct probe *r = probe();
	const struct embedded_file *host = embedded_find("rt_opencl.h");
	const struct target_kind **where;
	int found = -1;

	if (strspn(dev, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
	    strlen(dev)) {
		diag_error_status(g->ctx, STATUS_USAGE, "target '%s': -device takes an index, a "
				  "kind or a name of letters, digits, '_', '.' and '-'", t->str);
		return -1;
	}
	for (int i = 0; i < r->n_devices && i < MAX_DEVICES && found < 0; i++)
		if (device_matches(dev, r, i))
			found = i;
	if (found < 0) {
		diag_error_status(g->ctx, STATUS_ENV, "target '%s': no OpenCL device '%s' "
				  "(%d found; collagec targets lists them)", t->str, dev,
				  r->n_devices);
		return -1;
	}
	if (!host)
		BUG("rt_opencl.h is not embedded");
	vec_push(&m->ldlibs, "-lOpenCL");
	m->prelude = host->data;
	m->init = "collagec_ocl_init";
	m->fini = "collagec_ocl_fini";
	m->sync = "collagec_ocl_sync";
	where = devloop_node_kinds(g);
	for (int i = 0; i < p->kernels.n; i++)
		if (print_kernel(g, &p->kernels.v[i], dev, where, &m->source) < 0)
			return -1;
	return 0;
}

const struct target_kind target_kind_opencl = {
	.api_version = TARGET_API_VERSION,
	.name = "opencl",
	.device = "cpu",
	.description = "OpenCL C from loop IR, run through the OpenCL runtime (PoCL); "
		       "elementwise, broadcast, injective, reduction, pooling, conv and "
		       "matmul ops on float32",
	.options = ocl_options,
	.unavailable = ocl_unavailable,
	.devices = ocl_devices,
	.supports = devloop_supports,
	.relay_to_tir = NULL,
	.plan_parallel = devloop_plan_parallel,
	.tir_to_runtime = ocl_tir_to_runtime,
	.relay_to_runtime = NULL,
	.strategies = opencl_strategies,
};
