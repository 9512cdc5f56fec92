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
 * nest_parallel() proves that the iterations touch disjoint parts of every
 * buffer they write (affine indices with constant coefficients). Each stage
 * is one __kernel; the executor's kernel is host C that hands its argument
 * pointers, their sizes and what its neighbours are (arg_flags: is an input
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
#include "../backends.h"

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

#define MAX_BUFS 48		/* 2 kernel arguments each, symbols after: at most 120 */
#define MAX_STAGES 16

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

/* Probes in a child (falls back to this process when fork fails); cached. */
static const struct probe *probe(void)
{
	static struct probe r;
	static bool done;
	int fds[2];
	pid_t pid;

	if (done)
		return &r;
	done = true;
	if (pipe(fds) < 0) {
		probe_here(&r);
		return &r;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		probe_here(&r);
		return &r;
	}
	if (pid == 0) {
		struct probe c;

		close(fds[0]);
		probe_here(&c);
		_exit(write(fds[1], &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : 1);
	}
	close(fds[1]);
	{
		size_t got = 0;
		ssize_t n;
		int st = 0;

		while (got < sizeof(r) &&
		       ((n = read(fds[0], (char *)&r + got, sizeof(r) - got)) > 0 ||
			(n < 0 && errno == EINTR)))
			got += n > 0 ? (size_t)n : 0;
		close(fds[0]);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (got != sizeof(r)) {
			r.n_devices = 0;
			snprintf(r.why, sizeof(r.why), "the OpenCL probe failed (%s)",
				 WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no answer");
		}
		r.why[sizeof(r.why) - 1] = 0;
	}
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

/* ---- partition rule ---- */

/* Opaque ops whose generic lowering is plain loops over float32 data. */
static bool opaque_ok(enum op op)
{
	switch (op) {
	case OP_SOFTMAX:
	case OP_LOGSOFTMAX:
	case OP_HARDMAX:
	case OP_LAYERNORMALIZATION:
	case OP_GROUPNORMALIZATION:
	case OP_RMSNORMALIZATION:
	case OP_INSTANCENORMALIZATION:
	case OP_MEANVARIANCENORMALIZATION:
	case OP_LPNORMALIZATION:
	case OP_LRN:
		return true;
	default:
		return false;
	}
}

static bool dtype_ok(enum dtype t)
{
	return t == DTYPE_F32 || t == DTYPE_I64 || t == DTYPE_BOOL;
}

/*
 * Elementwise, broadcast, injective, reduction and anchor ops (conv, pooling,
 * MatMul, Gemm) plus the normalisations above, on float32 data: every input
 * and output is float32, int64 (indices, axes, shapes) or bool (masks,
 * comparisons) and at least one is float32, not random (training-mode
 * Dropout). Anything else stays on c.
 */
static bool ocl_supports(struct graph *g, const struct node *n)
{
	enum op_kind kind = op_info(n->op)->kind;
	bool f32 = false;

	if (kind == OPK_OPAQUE && !opaque_ok(n->op))
		return false;
	/* random ops call runtime/rt_random.h, which OpenCL kernels cannot */
	if (op_is_random(g, n))
		return false;
	if (n->n_in + n->n_out > MAX_BUFS)
		return false;
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		const struct value *v = i < n->n_in ? node_in(g, n, i) : node_out(g, n, i - n->n_in);

		if (!v)
			continue;
		if (!dtype_ok(v->dtype) || !v->has_shape)
			return false;
		f32 |= v->dtype == DTYPE_F32;
	}
	return f32;
}

/* ---- the OpenCL C dialect ---- */

/* OpenCL C's math functions are overloaded: the double names serve both. */
static const char *ocl_intrin(enum tir_intrin f, enum dtype t)
{
	(void)t;
	return tir_dialect_c.intrin(f, DTYPE_F64);
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

/* ---- loop IR queries ---- */

/* True when e is computable on the host from constants and symbols. */
static bool host_expr(const struct tir *e)
{
	switch (e->kind) {
	case TIR_INT:
	case TIR_SYM:
		return true;
	case TIR_BIN:
		return host_expr(e->a) && host_expr(e->b);
	case TIR_UN:
	case TIR_CAST:
		return host_expr(e->a);
	case TIR_SELECT:
		return host_expr(e->a) && host_expr(e->b) && host_expr(e->c);
	default:
		return false;
	}
}

/*
 * Marks in used[] the symbols s reads and in assigned[] the locals it
 * assigns; false when s holds what an OpenCL kernel cannot (C calls).
 */
static bool scan(const struct tir *s, bool *used, int n_syms, bool *assigned)
{
	if (!s)
		return true;
	switch (s->kind) {
	case TIR_EXTERN:
	case TIR_ADDR:
		return false;
	case TIR_SYM:
		if (s->i < 0 || s->i >= n_syms)
			return false;
		used[s->i] = true;
		return true;
	case TIR_ASSIGN:
		assigned[s->var->id] = true;
		break;
	default:
		break;
	}
	if (s->kind == TIR_SEQ || s->kind == TIR_CALL)
		for (int i = 0; i < s->n; i++)
			if (!scan(s->list[i], used, n_syms, assigned))
				return false;
	return scan(s->a, used, n_syms, assigned) && scan(s->b, used, n_syms, assigned) &&
	       scan(s->c, used, n_syms, assigned);
}

/* ---- proving loops parallel ---- */

#define MAX_TERMS 16
#define MAX_NEST 8

/* c + sum coef[i] * var[i] over loop variables (ids) */
struct affine {
	int n;
	int var[MAX_TERMS];
	int64_t coef[MAX_TERMS];
	int64_t c;
};

/* The inner-loop part of an access: its terms (coefficient, extent), sorted. */
struct sig {
	int n;
	int64_t t[MAX_TERMS][2];
	int64_t c;
};

/* Per written buffer: the accesses seen so far. */
struct bufacc {
	bool written, seen;
	bool same;			/* every access has the first one's sig */
	int64_t a[MAX_NEST];		/* coefficients of the nest's variables */
	int64_t lo, hi;			/* range of the rest of the index */
	struct sig sig;			/* the first access's inner part */
};

struct prover {
	const struct tir_func *f;
	int n_nest;
	const struct tir *const *nest;	/* the candidate parallel loops */
	struct affine **let;		/* per var id: affine value of a local */
	int64_t *ext;			/* per var id: constant extent of an inner loop, -1 */
	bool *inner;			/* per var id: bound by a loop inside the nest */
	bool *assigned;			/* per var id: target of an ASSIGN */
	struct bufacc *bufs;
	struct arena *arena;
	bool ok;
};

static bool aff_add_term(struct affine *r, int var, int64_t coef)
{
	for (int i = 0; i < r->n; i++)
		if (r->var[i] == var)
			return !__builtin_add_overflow(r->coef[i], coef, &r->coef[i]);
	if (r->n == MAX_TERMS)
		return false;
	r->var[r->n] = var;
	r->coef[r->n++] = coef;
	return true;
}

/* r = x + k * y */
static bool aff_axpy(struct affine *r, const struct affine *x, int64_t k, const struct affine *y)
{
	int64_t t;

	*r = *x;
	if (__builtin_mul_overflow(k, y->c, &t) || __builtin_add_overflow(r->c, t, &r->c))
		return false;
	for (int i = 0; i < y->n; i++)
		if (__builtin_mul_overflow(k, y->coef[i], &t) || !aff_add_term(r, y->var[i], t))
			return false;
	return true;
}

static bool nest_var(const struct prover *P, int id)
{
	for (int i = 0; i < P->n_nest; i++)
		if (P->nest[i]->var->id == id)
			return true;
	return false;
}

/* e as an affine form of loop variables with constant coefficients. */
static bool affine_of(const struct prover *P, const struct tir *e, struct affine *r)
{
	struct affine x, y, zero = { 0 };

	switch (e->kind) {
	case TIR_INT:
		*r = zero;
		r->c = e->i;
		return true;
	case TIR_VAR:
		if (nest_var(P, e->var->id) || P->inner[e->var->id]) {
			*r = zero;
			r->n = 1;
			r->var[0] = e->var->id;
			r->coef[0] = 1;
			return true;
		}
		if (P->let[e->var->id] && !P->assigned[e->var->id]) {
			*r = *P->let[e->var->id];
			return true;
		}
		return false;
	case TIR_BIN:
		if (e->op != BIN_ADD && e->op != BIN_SUB && e->op != BIN_MUL)
			return false;
		if (!affine_of(P, e->a, &x) || !affine_of(P, e->b, &y))
			return false;
		if (e->op != BIN_MUL)
			return aff_axpy(r, &x, e->op == BIN_ADD ? 1 : -1, &y);
		if (x.n && y.n)
			return false;
		if (x.n)
			return aff_axpy(r, &zero, y.c, &x);
		return aff_axpy(r, &zero, x.c, &y);
	default:
		return false;
	}
}

static int cmp_term(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;

	return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

/* Records an access of buffer b at idx (only written buffers matter). */
static void record(struct prover *P, int b, const struct tir *idx)
{
	struct bufacc *ba = &P->bufs[b];
	struct affine r;
	struct sig sig;
	int64_t a[MAX_NEST], lo, hi;

	if (!ba->written || !P->ok)
		return;
	if (!affine_of(P, idx, &r)) {
		P->ok = false;
		return;
	}
	memset(a, 0, sizeof(a));
	memset(&sig, 0, sizeof(sig));
	sig.c = lo = hi = r.c;
	for (int i = 0; i < r.n; i++) {
		int k = -1;
		int64_t ext = P->ext[r.var[i]], span;

		for (int j = 0; j < P->n_nest; j++)
			if (P->nest[j]->var->id == r.var[i])
				k = j;
		if (k >= 0) {
			a[k] = r.coef[i];
			continue;
		}
		if (ext < 0 || __builtin_mul_overflow(r.coef[i], ext > 0 ? ext - 1 : 0, &span) ||
		    __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) {
			P->ok = false;
			return;
		}
		if (r.coef[i] != 0 && ext > 1) {
			sig.t[sig.n][0] = r.coef[i];
			sig.t[sig.n++][1] = ext;
		}
	}
	qsort(sig.t, (size_t)sig.n, sizeof(sig.t[0]), cmp_term);
	if (!ba->seen) {
		memcpy(ba->a, a, sizeof(a));
		ba->lo = lo;
		ba->hi = hi;
		ba->sig = sig;
		ba->same = true;
		ba->seen = true;
		return;
	}
	if (memcmp(ba->a, a, sizeof(a)) != 0) {
		P->ok = false;
		return;
	}
	ba->same &= memcmp(&ba->sig, &sig, sizeof(sig)) == 0;
	ba->lo = lo < ba->lo ? lo : ba->lo;
	ba->hi = hi > ba->hi ? hi : ba->hi;
}

static void walk_expr(struct prover *P, const struct tir *e)
{
	if (!e || !P->ok)
		return;
	if (e->kind == TIR_LOAD)
		record(P, e->buf->index, e->a);
	if (e->kind == TIR_CALL)
		for (int i = 0; i < e->n; i++)
			walk_expr(P, e->list[i]);
	walk_expr(P, e->a);
	walk_expr(P, e->b);
	walk_expr(P, e->c);
}

/* pass 0 marks written buffers and inner loops, pass 1 records accesses */
static void walk(struct prover *P, const struct tir *s, int pass)
{
	if (!P->ok)
		return;
	switch (s->kind) {
	case TIR_SEQ:
		for (int i = 0; i < s->n; i++)
			walk(P, s->list[i], pass);
		break;
	case TIR_FOR:
		if (pass == 0) {
			P->inner[s->var->id] = true;
			P->ext[s->var->id] = s->a->kind == TIR_INT ? s->a->i : -1;
		} else {
			walk_expr(P, s->a);
		}
		walk(P, s->b, pass);
		break;
	case TIR_STORE:
		if (pass == 0) {
			P->bufs[s->buf->index].written = true;
		} else {
			record(P, s->buf->index, s->a);
			walk_expr(P, s->a);
			walk_expr(P, s->b);
		}
		break;
	case TIR_IF:
		if (pass == 1)
			walk_expr(P, s->a);
		walk(P, s->b, pass);
		if (s->c)
			walk(P, s->c, pass);
		break;
	case TIR_LET:
		if (pass == 1) {
			struct affine r;

			walk_expr(P, s->a);
			if (affine_of(P, s->a, &r)) {
				P->let[s->var->id] = arena_memdup(P->arena, &r, sizeof(r));
			}
		}
		break;
	case TIR_ASSIGN:
		if (pass == 1)
			walk_expr(P, s->a);
		break;
	default:
		P->ok = false;	/* extern calls */
		break;
	}
}

static int cmp_abs(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;
	int64_t u = a[0] < 0 ? -a[0] : a[0], v = b[0] < 0 ? -b[0] : b[0];

	return u < v ? -1 : u > v;
}

/*
 * Mixed radix: with the terms (coefficient, extent; -1 = not constant)
 * sorted by |coefficient|, is each |coefficient| at least need plus the
 * reach of the smaller terms, sum |c_j| * (extent_j - 1)? Then the values of
 * sum c_k * x_k, x_k in [0, extent_k), lie at least need apart. Only the
 * largest term may have an unknown extent.
 */
static bool mixed_radix(int64_t (*t)[2], int n, int64_t need)
{
	qsort(t, (size_t)n, sizeof(t[0]), cmp_abs);
	for (int k = 0; k < n; k++) {
		int64_t a = t[k][0] < 0 ? -t[k][0] : t[k][0], span;

		if (a < need)
			return false;
		if (k + 1 < n && (t[k][1] < 0 || __builtin_mul_overflow(a, t[k][1] - 1, &span) ||
				  __builtin_add_overflow(need, span, &need)))
			return false;
	}
	return true;
}

/*
 * Are the loops nest[0..n) (perfectly nested, outermost first) jointly
 * parallel? Every buffer written inside must be accessed (read or written)
 * only at affine indices c + a . nest_vars + b . inner_vars with constant
 * coefficients, the same a on every access, and inner loops of constant
 * extent. Then either
 *  - the nest terms alone form a mixed radix whose steps exceed the range
 *    [lo, hi] of the rest over all accesses, or
 *  - every access has the same inner terms and constant, and nest and inner
 *    terms together form a mixed radix (the whole index is injective),
 * so distinct iterations of the nest never touch the same element of a
 * buffer that one of them writes.
 */
static bool nest_parallel(struct graph *g, const struct tir_func *f, const struct tir *const *nest,
			  int n, const bool *assigned)
{
	struct prover P = { 0 };

	if (n > MAX_NEST)
		return false;
	P.f = f;
	P.n_nest = n;
	P.nest = nest;
	P.arena = g->arena;
	P.let = arena_alloc(g->arena, sizeof(*P.let) * (size_t)(f->n_vars + 1));
	P.ext = arena_alloc(g->arena, sizeof(*P.ext) * (size_t)(f->n_vars + 1));
	P.inner = arena_alloc(g->arena, sizeof(*P.inner) * (size_t)(f->n_vars + 1));
	P.assigned = (bool *)assigned;
	P.bufs = arena_alloc(g->arena, sizeof(*P.bufs) * (size_t)(f->n_bufs + 1));
	P.ok = true;
	walk(&P, nest[n - 1]->b, 0);
	walk(&P, nest[n - 1]->b, 1);
	if (!P.ok)
		return false;
	for (int b = 0; b < f->n_bufs; b++) {
		const struct bufacc *ba = &P.bufs[b];
		int64_t t[MAX_NEST + MAX_TERMS][2], need;
		int nt = 0;

		if (!ba->written || !ba->seen)
			continue;
		for (int k = 0; k < n; k++) {
			const struct tir *e = nest[k]->a;

			if (e->kind == TIR_INT && e->i <= 1)
				continue;	/* one iteration (or none) */
			if (ba->a[k] == 0)
				return false;	/* iterations touch the same place */
			t[nt][0] = ba->a[k];
			t[nt++][1] = e->kind == TIR_INT ? e->i : -1;
		}
		if (!__builtin_sub_overflow(ba->hi, ba->lo, &need) &&
		    !__builtin_add_overflow(need, 1, &need) && mixed_radix(t, nt, need))
			continue;
		if (!ba->same)
			return false;
		memcpy(&t[nt], ba->sig.t, sizeof(ba->sig.t[0]) * (size_t)ba->sig.n);
		if (!mixed_radix(t, nt + ba->sig.n, 1))
			return false;
	}
	return true;
}

/* ---- stages ---- */

/*
 * One __kernel of an executor kernel: an NDRange over the first n_nest loops
 * of a top-level loop nest (those of extent 1 are bound to 0, the others
 * take a dim each, innermost on dim 0), or the statements stmts[0..n_stmts)
 * as a single work-item.
 */
struct stage {
	const char *name;
	int n_nest;
	const struct tir *nest[MAX_NEST];
	int n_stmts;
	const struct tir *const *stmts;
};

static bool unit_loop(const struct tir *s)
{
	return s->a->kind == TIR_INT && s->a->i == 1;
}

/* How many loops of the nest at s run as an NDRange (0: none). */
static int plan_nest(struct graph *g, const struct tir_func *f, const struct tir *s,
		     const bool *assigned, const struct tir **nest)
{
	int n = 0, dims = 0;

	while (s->kind == TIR_FOR && n < MAX_NEST && host_expr(s->a)) {
		if (!unit_loop(s)) {
			if (dims == 3)
				break;
			dims++;
		}
		nest[n++] = s;
		if (s->b->kind != TIR_SEQ || s->b->n != 1)
			break;
		s = s->b->list[0];
	}
	for (; n > 0; n--) {
		bool marked = true;

		for (int i = 0; i < n; i++)
			marked &= nest[i]->parallel || unit_loop(nest[i]);
		if (marked || nest_parallel(g, f, nest, n, assigned))
			break;
	}
	return n;
}

/*
 * The parallel step for one function: which top-level loop nests of f run
 * as NDRanges, recorded as TIR_FOR .region on their head (how many loops,
 * those of extent 1 included). None when a top-level local makes the body
 * one single work-item, when the nests would make more than MAX_STAGES
 * stages, or when f cannot be printed (print_func reports that).
 */
static void plan_ndranges(struct graph *g, struct tir_func *f)
{
	bool *used = arena_alloc(g->arena, sizeof(bool) * (size_t)(g->syms.n + 1));
	bool *assigned = arena_alloc(g->arena, sizeof(bool) * (size_t)(f->n_vars + 1));
	int *n = arena_alloc(g->arena, sizeof(int) * (size_t)(f->body->n + 1));
	struct tir *body = f->body;
	int ns = 0;
	bool last_nd = false;

	for (int i = 0; i < body->n; i++) {
		if (body->list[i]->kind == TIR_FOR)
			body->list[i]->region = 0;
		if (body->list[i]->kind == TIR_LET || body->list[i]->kind == TIR_ASSIGN)
			return;
	}
	if (!scan(body, used, g->syms.n, assigned))
		return;
	for (int i = 0; i < body->n; i++) {
		const struct tir *nest[MAX_NEST];
		const struct tir *st = body->list[i];

		n[i] = st->kind == TIR_FOR ? plan_nest(g, f, st, assigned, nest) : 0;
		if (n[i] > 0 || ns == 0 || last_nd)
			ns++;
		last_nd = n[i] > 0;
	}
	if (ns > MAX_STAGES)
		return;
	for (int i = 0; i < body->n; i++)
		if (n[i] > 0)
			body->list[i]->region = n[i];
}

/* The opencl target's parallel step: plan_ndranges for every function. */
static int ocl_plan_parallel(struct graph *g, const struct target *t, struct partition *p)
{
	(void)t;
	for (int i = 0; i < p->kernels.n; i++) {
		struct kernel *k = &p->kernels.v[i];

		for (int v = 0; v < k->n_variants; v++)
			if (k->variants[v].func != k->func)
				plan_ndranges(g, k->variants[v].func);
		if (k->func)
			plan_ndranges(g, k->func);
	}
	return 0;
}

/*
 * Splits f's body into stages as the parallel step decided: each top-level
 * loop nest whose head has a region is an NDRange stage over that many
 * loops, runs of other statements are single work-item stages. A body with
 * top-level locals is one single work-item stage.
 */
static int plan_stages(const struct tir_func *f, struct stage *st)
{
	const struct tir *body = f->body;
	int ns = 0;

	for (int i = 0; i < body->n; i++)
		if (body->list[i]->kind == TIR_LET || body->list[i]->kind == TIR_ASSIGN) {
			st[0].n_nest = 0;
			st[0].n_stmts = body->n;
			st[0].stmts = (const struct tir *const *)body->list;
			return 1;
		}
	for (int i = 0; i < body->n; i++) {
		const struct tir *s = body->list[i];
		const struct tir *nest[MAX_NEST];
		int n = s->kind == TIR_FOR && s->region > 0 ? s->region : 0;

		for (int k = 0; k < n; k++) {
			nest[k] = s;
			if (k + 1 < n)
				s = s->b->list[0];
		}
		if (n > 0 || ns == 0 || st[ns - 1].n_nest > 0) {
			if (ns == MAX_STAGES) {
				/* too many: everything as one work-item */
				st[0].n_nest = 0;
				st[0].n_stmts = body->n;
				st[0].stmts = (const struct tir *const *)body->list;
				return 1;
			}
			st[ns].n_nest = n;
			memcpy(st[ns].nest, nest, sizeof(nest[0]) * (size_t)n);
			st[ns].n_stmts = 1;
			st[ns].stmts = (const struct tir *const *)&body->list[i];
			ns++;
		} else {
			st[ns - 1].n_stmts++;
		}
	}
	return ns;
}

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

/* Number of dims of a stage's NDRange. */
static int stage_dims(const struct stage *s)
{
	int d = 0;

	for (int i = 0; i < s->n_nest; i++)
		d += !unit_loop(s->nest[i]);
	return d;
}

/* The OpenCL C text of one stage. */
static void print_stage(const struct tir_func *f, int n_in, const struct stage *s,
			const int *syms, int n_syms, struct strbuf *sb)
{
	int dim = stage_dims(s);

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
		if (unit_loop(s->nest[i])) {
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

/* Bytes of kernel argument value v, as a C expression over syms[]. */
static void print_bytes(const struct value *v, struct strbuf *sb)
{
	int64_t c = (int64_t)dtype_size(v->dtype);

	for (int k = 0; k < v->shape.rank; k++)
		if (__builtin_mul_overflow(c, v->shape.d[k].c, &c))
			c = INT64_MAX;		/* cannot be allocated anyway */
	sb_printf(sb, "INT64_C(%lld)", (long long)c);
	for (int k = 0; k < v->shape.rank; k++)
		for (int j = 0; j < v->shape.d[k].n; j++)
			sb_printf(sb, " * syms[%d]", v->shape.d[k].sym[j]);
}

/*
 * Where each node runs: its partition's target kind (g->lowering), NULL
 * for a node of no partition.
 */
static const struct target_kind **node_kinds(struct graph *g)
{
	const struct target_kind **w = arena_alloc(g->arena, sizeof(*w) * (size_t)(g->nodes.n + 1));

	for (int i = 0; i < g->n_lowering; i++)
		for (int j = 0; j < g->lowering[i].n_nodes; j++)
			w[g->lowering[i].nodes[j]] = g->lowering[i].target->kind;
	return w;
}

/*
 * What rt_opencl.h must do with value v, an input or an output of an
 * opencl kernel (RT_OCL_* flags, as numbers: rt_opencl.h is not included
 * here). An input is a constant, or on the device when an opencl node made
 * it; an output stays on the device when an opencl node reads it, and goes
 * back to the host when anything else does (waited for), or when it is a
 * model output (by the run's end). A node with a run-time shape function
 * counts as host code.
 */
enum { OCL_DEV = 1, OCL_CONST = 2, OCL_KEEP = 4, OCL_SYNC = 8, OCL_LATE = 16 };

static int arg_flags(struct graph *g, const struct target_kind **where, int v, bool input)
{
	const struct value *val = &g->values.v[v];
	bool host = false, dev = false, out = false;

	if (input) {
		if (val->data)
			return OCL_CONST;
		if (val->producer >= 0 && where[val->producer] == &target_kind_opencl)
			return OCL_DEV;
		return 0;
	}
	for (int i = 0; i < g->nodes.n && !host; i++) {
		const struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_in; j++) {
			if (n->in[j] != v)
				continue;
			if (where[i] == &target_kind_opencl && !node_is_dynamic(g, n))
				dev = true;
			else
				host = true;
		}
	}
	for (int i = 0; i < g->outputs.n; i++)
		out |= g->outputs.v[i] == v;
	return (dev ? OCL_KEEP : 0) | (host ? OCL_SYNC : out ? OCL_LATE : 0);
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
	struct stage st[MAX_STAGES];
	int n_syms = 0, ns;

	if (f->n_bufs != k->n_args || f->n_bufs > MAX_BUFS ||
	    !scan(f->body, used, g->syms.n, assigned)) {
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
	ns = plan_stages(f, st);
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
			if (arg_flags(g, where, k->args[i], true) == OCL_CONST) {
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
	sb_printf(sb, "static void %s(void *const *bufs, const int64_t *syms, int threads)\n{\n",
		  f->name);
	sb_printf(sb, "\tconst int64_t bytes[%d] = {\n", f->n_bufs ? f->n_bufs : 1);
	for (int i = 0; i < f->n_bufs; i++) {
		sb_puts(sb, "\t\t");
		print_bytes(&g->values.v[k->args[i]], sb);
		sb_puts(sb, ",\n");
	}
	sb_printf(sb, "\t};\n\tstatic const unsigned char flags[%d] = {",
		  f->n_bufs ? f->n_bufs : 1);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, " %d,", arg_flags(g, where, k->args[i], i < k->n_inputs));
	sb_printf(sb, "%s };\n\tconst cl_long scalars[%d] = {", f->n_bufs ? "" : " 0",
		  n_syms ? n_syms : 1);
	for (int i = 0; i < n_syms; i++)
		sb_printf(sb, " syms[%d],", syms[i]);
	sb_printf(sb, "%s };\n\tconst struct rt_ocl_stage stages[%d] = {\n", n_syms ? "" : " 0",
		  ns);
	for (int s = 0; s < ns; s++) {
		int dim = stage_dims(&st[s]);

		sb_printf(sb, "\t\t{ &rt_ocl_%s, %d, {", st[s].name, dim);
		for (int i = st[s].n_nest - 1; i >= 0; i--) {
			if (unit_loop(st[s].nest[i]))
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
	where = node_kinds(g);
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
	.supports = ocl_supports,
	.relay_to_tir = NULL,
	.plan_parallel = ocl_plan_parallel,
	.tir_to_runtime = ocl_tir_to_runtime,
	.relay_to_runtime = NULL,
	.strategies = opencl_strategies,
};
