/*
 * rt_cuda.h - the host half of the cuda target. collagec embeds this file
 * and the target hands it over as its runtime modules' prelude, so it is
 * pasted once into every model.c with partitions on cuda, before the
 * kernels. The kernels themselves are CUDA C that collagec compiled with
 * nvcc into one fatbin per model (sm_80 and sm_90 code, compute_90 PTX for
 * newer GPUs), linked into OUT.so as rt_cuda_fatbin. Per device kernel the
 * generated code defines a struct rt_cu_kernel (its name), registers it
 * with RT_CU_REGISTER (a constructor) and calls rt_cu_launch() from the
 * executor's kernel function.
 *
 * The model never links CUDA: collagec_cu_init (run by every collagec_open)
 * loads the driver (libcuda.so.1) through dlopen, so OUT.so loads on any
 * machine and only opening it needs a GPU; the first open retains the
 * device's primary context, loads the fatbin as one module and makes one
 * stream; later opens count a reference, collagec_cu_fini (every
 * collagec_close) drops it and the last one releases everything.
 *
 * Values stay on the device, as with opencl (rt_opencl.h): each open handle
 * has a device arena that mirrors its host arena offset for offset, the
 * compiler says per argument what its neighbours are (RT_CU_* flags), so
 * constants are uploaded once per handle as it opens, values made by host
 * code are copied in, outputs host code reads next are copied back and
 * waited for, outputs only the caller reads are copied back by the run's
 * end, and collagec_cu_sync waits once at the end of every run (and after
 * every step of a timed run). One stream holds it all, in order.
 * COLLAGEC_CUDA_TRACE=1 in the environment at the first open prints every
 * copy and wait on stderr.
 *
 * Kernels have no error return: the first run-time failure is kept and
 * reported through collagec_rt_abort() (prints and aborts unless the
 * program defines its own; if that returns, the kernel returns without
 * computing its outputs, and so does every later one). One mutex
 * serialises launches, since all handles of a process share the module.
 */
#ifndef COLLAGEC_RT_CUDA_H
#define COLLAGEC_RT_CUDA_H

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>

/* The model's kernels, compiled by nvcc (fatbin.o, linked beside model.c). */
extern const unsigned char rt_cuda_fatbin[] __attribute__((weak, visibility("hidden")));

/* One CUDA kernel of the model (several per executor kernel with stages). */
struct rt_cu_kernel {
	const char *name;		/* its extern "C" __global__ name */
	int device;			/* the target's -device */
	const char *const *consts;	/* the constants it reads, by name, NULL-ended */
	CUfunction f;			/* found by collagec_cu_init */
	struct rt_cu_kernel *next;
};

#define RT_CU_REGISTER(var)                                                    \
	static void var##_register(void) __attribute__((constructor));         \
	static void var##_register(void)                                       \
	{                                                                      \
		var.next = rt_cu.kernels;                                      \
		rt_cu.kernels = &var;                                          \
	}

/* What the compiler knows of a kernel's argument (devloop.h's DEVLOOP_*). */
enum {
	RT_CU_DEV = 1,		/* input: a kernel of this device made it this run */
	RT_CU_CONST = 2,	/* input: a constant, uploaded once per handle */
	RT_CU_KEEP = 4,		/* output: a kernel of this device reads it */
	RT_CU_SYNC = 8,		/* output: host code reads it: copied back, waited for */
	RT_CU_LATE = 16,	/* output: only the caller reads it: back by the run's end */
};

/* A loop's extent as a count (0 when not positive). */
static inline int64_t rt_cu_extent(int64_t n)
{
	return n > 0 ? n : 0;
}

/* Threads per block of a range; blocks stride over what one grid does not cover. */
#define RT_CU_BLOCK 256
#define RT_CU_MAX_BLOCKS 65535

/* The driver's entry points (by their exported, versioned names). */
#define RT_CU_STR(x) #x
#define RT_CU_NAME(x) RT_CU_STR(x)
#define RT_CU_FUNCS(X)                                                         \
	X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)        \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)               \
	X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuModuleLoadData)             \
	X(cuModuleUnload) X(cuModuleGetFunction) X(cuStreamCreate)             \
	X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree)   \
	X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuLaunchKernel)            \
	X(cuMemsetD32Async)                                                    \
	X(cuGetErrorString)

/* A host buffer's copy on the device: a constant's, or a value's outside the arena. */
struct rt_cu_copy {
	const void *host;
	int64_t bytes;
	CUdeviceptr mem;
};

/* What one open handle holds on the device. */
struct rt_cu_model {
	const void *model;		/* the handle (a key) */
	CUdeviceptr arena;		/* mirrors the host arena, offset for offset */
	int64_t arena_bytes;
	struct rt_cu_copy *consts, *others;	/* constants; values outside the arena */
	int n_consts, n_others, cap_consts, cap_others;
	int queued;			/* work queued since the last sync */
	struct rt_cu_model *next;
};

static struct {
	pthread_mutex_t lock;
	int refs;			/* open handles */
	struct rt_cu_kernel *kernels;	/* registered at load time */
	void *lib;			/* libcuda.so.1 */
#define RT_CU_PTR(f) __typeof__(&f) f;
	struct {
		RT_CU_FUNCS(RT_CU_PTR)
	} api;
#undef RT_CU_PTR
	CUdevice dev;
	CUcontext ctx;			/* the device's primary context */
	CUmodule mod;
	CUstream stream;
	void (*release[4])(void);	/* libraries' state, let go with the rest */
	int n_release;
	struct rt_cu_model *models;	/* one per open handle */
	int trace;			/* COLLAGEC_CUDA_TRACE */
	char error[256];		/* the first run-time failure */
} rt_cu = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define RT_CU(f) (rt_cu.api.f)

static const char *rt_cu_errstr(CUresult r)
{
	const char *s = NULL;

	if (RT_CU(cuGetErrorString))
		RT_CU(cuGetErrorString)(r, &s);
	return s ? s : "unknown error";
}

static void rt_cu_copies_free(struct rt_cu_copy *c, int n)
{
	for (int i = 0; i < n; i++)
		RT_CU(cuMemFree)(c[i].mem);
	free(c);
}

static void rt_cu_model_free(struct rt_cu_model *mm)
{
	if (mm->arena)
		RT_CU(cuMemFree)(mm->arena);
	rt_cu_copies_free(mm->consts, mm->n_consts);
	rt_cu_copies_free(mm->others, mm->n_others);
	free(mm);
}

/* Has fn let a library's state go with the rest (lock held); once each. */
static void rt_cu_on_release(void (*fn)(void))
{
	for (int i = 0; i < rt_cu.n_release; i++)
		if (rt_cu.release[i] == fn)
			return;
	if (rt_cu.n_release < (int)(sizeof(rt_cu.release) / sizeof(rt_cu.release[0])))
		rt_cu.release[rt_cu.n_release++] = fn;
}

/* Releases everything (lock held; the context current or none made). */
static void rt_cu_release(void)
{
	while (rt_cu.models) {
		struct rt_cu_model *mm = rt_cu.models;

		rt_cu.models = mm->next;
		rt_cu_model_free(mm);
	}
	for (struct rt_cu_kernel *k = rt_cu.kernels; k; k = k->next)
		k->f = NULL;
	for (int i = 0; i < rt_cu.n_release; i++)
		rt_cu.release[i]();
	rt_cu.n_release = 0;
	if (rt_cu.stream)
		RT_CU(cuStreamDestroy)(rt_cu.stream);
	if (rt_cu.mod)
		RT_CU(cuModuleUnload)(rt_cu.mod);
	rt_cu.stream = NULL;
	rt_cu.mod = NULL;
	if (rt_cu.ctx) {
		CUcontext old;

		RT_CU(cuCtxPopCurrent)(&old);
		RT_CU(cuDevicePrimaryCtxRelease)(rt_cu.dev);
		rt_cu.ctx = NULL;
	}
}

/* Loads the driver, makes the context, module and stream; a message in err on failure. */
static int rt_cu_setup(int device, char *err, size_t errlen)
{
	CUcontext cur;
	CUresult r;
	int n = 0;

	if (!rt_cu.lib) {
		rt_cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!rt_cu.lib)
			return snprintf(err, errlen, "cuda: cannot load libcuda.so.1 (no NVIDIA "
					"driver)"), -1;
#define RT_CU_LOAD(f)                                                          \
	if (!(*(void **)&rt_cu.api.f = dlsym(rt_cu.lib, RT_CU_NAME(f))))       \
		return snprintf(err, errlen, "cuda: libcuda.so.1 lacks %s",     \
				RT_CU_NAME(f)), -1;
		RT_CU_FUNCS(RT_CU_LOAD)
#undef RT_CU_LOAD
	}
	if ((r = RT_CU(cuInit)(0)) != CUDA_SUCCESS)
		return snprintf(err, errlen, "cuda: cuInit: %s", rt_cu_errstr(r)), -1;
	if ((r = RT_CU(cuDeviceGetCount)(&n)) != CUDA_SUCCESS || device >= n)
		return snprintf(err, errlen, "cuda: no device %d (%d found)", device, n), -1;
	if ((r = RT_CU(cuDeviceGet)(&rt_cu.dev, device)) != CUDA_SUCCESS ||
	    (r = RT_CU(cuDevicePrimaryCtxRetain)(&rt_cu.ctx, rt_cu.dev)) != CUDA_SUCCESS) {
		rt_cu.ctx = NULL;
		return snprintf(err, errlen, "cuda: device %d: %s", device, rt_cu_errstr(r)), -1;
	}
	if ((r = RT_CU(cuCtxPushCurrent)(rt_cu.ctx)) != CUDA_SUCCESS)
		return snprintf(err, errlen, "cuda: cuCtxPushCurrent: %s", rt_cu_errstr(r)), -1;
	/* a model with only library calls (cublas) has no kernels of its own */
	if (rt_cuda_fatbin &&
	    (r = RT_CU(cuModuleLoadData)(&rt_cu.mod, rt_cuda_fatbin)) != CUDA_SUCCESS) {
		rt_cu.mod = NULL;
		return snprintf(err, errlen, "cuda: loading the kernels (sm_80, sm_90 or PTX "
				"for compute_90 and later): %s", rt_cu_errstr(r)), -1;
	}
	if ((r = RT_CU(cuStreamCreate)(&rt_cu.stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
		rt_cu.stream = NULL;
		return snprintf(err, errlen, "cuda: cuStreamCreate: %s", rt_cu_errstr(r)), -1;
	}
	for (struct rt_cu_kernel *k = rt_cu.kernels; k; k = k->next)
		if ((r = RT_CU(cuModuleGetFunction)(&k->f, rt_cu.mod, k->name)) != CUDA_SUCCESS)
			return snprintf(err, errlen, "cuda: kernel %s: %s", k->name,
					rt_cu_errstr(r)), -1;
	RT_CU(cuCtxPopCurrent)(&cur);
	if (rt_cu.trace) {
		char name[256] = "";

		RT_CU(cuDeviceGetName)(name, sizeof(name) - 1, rt_cu.dev);
		fprintf(stderr, "collagec cuda: device %d, %s\n", device, name);
	}
	return 0;
}

/*
 * The copy of host in *v (n, cap) of at least bytes, made if it is not
 * there or too small (uploaded when upload); 0 with *r set on failure.
 */
static CUdeviceptr rt_cu_copy_of(struct rt_cu_copy **v, int *n, int *cap, const void *host,
				 int64_t bytes, int upload, CUresult *r)
{
	struct rt_cu_copy *c = NULL;
	CUdeviceptr mem = 0;

	for (int i = 0; i < *n && !c; i++)
		if ((*v)[i].host == host)
			c = &(*v)[i];
	if (c && c->bytes >= bytes)
		return c->mem;
	if ((*r = RT_CU(cuMemAlloc)(&mem, (size_t)bytes)) != CUDA_SUCCESS)
		return 0;
	if (upload && (*r = RT_CU(cuMemcpyHtoDAsync)(mem, host, (size_t)bytes, rt_cu.stream)) !=
	    CUDA_SUCCESS) {
		RT_CU(cuMemFree)(mem);
		return 0;
	}
	if (!c) {
		if (*n == *cap) {
			int nc = *cap ? 2 * *cap : 16;
			struct rt_cu_copy *nv = realloc(*v, sizeof(*nv) * (size_t)nc);

			if (!nv) {
				RT_CU(cuMemFree)(mem);
				*r = CUDA_ERROR_OUT_OF_MEMORY;
				return 0;
			}
			*v = nv;
			*cap = nc;
		}
		c = &(*v)[(*n)++];
	} else {
		RT_CU(cuMemFree)(c->mem);
	}
	c->host = host;
	c->bytes = bytes;
	c->mem = mem;
	return mem;
}

/*
 * The constants every kernel reads, uploaded for the handle as it opens
 * (lock held, context pushed). Constants made at open, after the inits, are
 * not there yet: their first run uploads them.
 */
static int rt_cu_upload_consts(struct rt_cu_model *mm, char *err, size_t errlen)
{
	CUresult r = CUDA_SUCCESS;

	for (struct rt_cu_kernel *k = rt_cu.kernels; k; k = k->next)
		for (const char *const *c = k->consts; c && *c; c++) {
			const void *data;
			int64_t bytes;
			int had = mm->n_consts;

			if (rt_model_const(*c, &data, &bytes) < 0 || bytes <= 0)
				continue;
			if (!rt_cu_copy_of(&mm->consts, &mm->n_consts, &mm->cap_consts, data, bytes,
					   1, &r))
				return snprintf(err, errlen, "cuda: uploading '%s' (%lld bytes): %s",
						*c, (long long)bytes, rt_cu_errstr(r)), -1;
			if (rt_cu.trace && mm->n_consts != had)
				fprintf(stderr, "collagec cuda: open: upload constant %s, %lld "
					"bytes\n", *c, (long long)bytes);
		}
	return 0;
}

int collagec_cu_init(void *model, char *err, size_t errlen)
{
	struct rt_cu_model *mm = calloc(1, sizeof(*mm));
	CUcontext cur;
	int rc = 0;

	if (!mm)
		return snprintf(err, errlen, "cuda: out of memory"), -1;
	mm->model = model;
	pthread_mutex_lock(&rt_cu.lock);
	if (rt_cu.refs == 0) {
		const char *t = getenv("COLLAGEC_CUDA_TRACE");

		rt_cu.trace = t && *t && strcmp(t, "0") != 0;
		rt_cu.error[0] = 0;
		rc = rt_cu_setup(rt_cu.kernels ? rt_cu.kernels->device : 0, err, errlen);
		if (rc < 0)
			rt_cu_release();
	}
	if (rc == 0) {
		rt_cu.refs++;
		mm->next = rt_cu.models;
		rt_cu.models = mm;
		RT_CU(cuCtxPushCurrent)(rt_cu.ctx);
		rc = rt_cu_upload_consts(mm, err, errlen);
		if (rc == 0 && RT_CU(cuStreamSynchronize)(rt_cu.stream) != CUDA_SUCCESS) {
			snprintf(err, errlen, "cuda: uploading the constants failed");
			rc = -1;
		}
		if (rc < 0) {
			rt_cu.models = mm->next;
			rt_cu_model_free(mm);
			if (--rt_cu.refs == 0)
				rt_cu_release();
			else
				RT_CU(cuCtxPopCurrent)(&cur);
		} else {
			RT_CU(cuCtxPopCurrent)(&cur);
		}
	} else {
		free(mm);
	}
	pthread_mutex_unlock(&rt_cu.lock);
	return rc;
}

static struct rt_cu_model *rt_cu_model_of(const void *model)
{
	struct rt_cu_model *mm = rt_cu.models;

	while (mm && mm->model != model)
		mm = mm->next;
	return mm;
}

/* Harmless without a matching init: nothing is held then. */
void collagec_cu_fini(void *model)
{
	pthread_mutex_lock(&rt_cu.lock);
	for (struct rt_cu_model **p = &rt_cu.models; *p; p = &(*p)->next)
		if ((*p)->model == model) {
			struct rt_cu_model *mm = *p;
			CUcontext cur;

			*p = mm->next;
			RT_CU(cuCtxPushCurrent)(rt_cu.ctx);
			RT_CU(cuStreamSynchronize)(rt_cu.stream);
			rt_cu_model_free(mm);
			if (rt_cu.refs > 0 && --rt_cu.refs == 0)
				rt_cu_release();
			else
				RT_CU(cuCtxPopCurrent)(&cur);
			break;
		}
	pthread_mutex_unlock(&rt_cu.lock);
}

/* Records the first failure (lock held, context pushed), unlocks and aborts. */
static void rt_cu_fail(const char *kernel, const char *what, CUresult r)
{
	char msg[256];
	CUcontext cur;

	if (!rt_cu.error[0])
		snprintf(rt_cu.error, sizeof(rt_cu.error), "cuda: kernel %s: %s: %s", kernel, what,
			 rt_cu_errstr(r));
	memcpy(msg, rt_cu.error, sizeof(msg));
	if (rt_cu.ctx)
		RT_CU(cuCtxPopCurrent)(&cur);
	pthread_mutex_unlock(&rt_cu.lock);
	collagec_rt_abort(msg);
}

/* One wait for everything queued: at a run's end (end), or after a timed step. */
void collagec_cu_sync(void *model, int end)
{
	struct rt_cu_model *mm;
	CUcontext cur;
	CUresult r;

	pthread_mutex_lock(&rt_cu.lock);
	mm = rt_cu_model_of(model);
	if (!mm || !mm->queued || rt_cu.error[0]) {
		pthread_mutex_unlock(&rt_cu.lock);
		return;
	}
	mm->queued = 0;
	if (rt_cu.trace)
		fprintf(stderr, "collagec cuda: %s\n", end ? "wait at the run's end"
						       : "wait after a timed step");
	RT_CU(cuCtxPushCurrent)(rt_cu.ctx);
	if ((r = RT_CU(cuStreamSynchronize)(rt_cu.stream)) != CUDA_SUCCESS) {
		rt_cu_fail(end ? "(the run's end)" : "(a timed step)", "cuStreamSynchronize", r);
		return;
	}
	if (end && mm->n_others > 16) {
		rt_cu_copies_free(mm->others, mm->n_others);
		mm->others = NULL;
		mm->n_others = mm->cap_others = 0;
	}
	RT_CU(cuCtxPopCurrent)(&cur);
	pthread_mutex_unlock(&rt_cu.lock);
}

/* One launch: a range of n threads (a grid-stride loop), or one thread (n -1). */
struct rt_cu_stage {
	struct rt_cu_kernel *kernel;
	int64_t n;
};

/*
 * One call of the device from an executor kernel: rt_cu_begin takes the
 * lock and makes the context current (or aborts), rt_cu_map gives each
 * argument's device pointer (uploading what must be), rt_cu_back copies an
 * output back where its flags say, rt_cu_end lets go. A failure in between
 * goes to rt_cu_fail, which lets go too.
 */
struct rt_cu_call {
	const char *name;		/* the executor kernel's, for messages */
	struct rt_cu_model *mm;
	unsigned char *base;		/* the host arena of this run */
	int64_t arena_bytes;
};

static int rt_cu_begin(struct rt_cu_call *c, const char *name)
{
	const void *model;
	CUresult r;

	c->name = name;
	pthread_mutex_lock(&rt_cu.lock);
	if (rt_cu.error[0] || !rt_cu.ctx) {
		char msg[256];

		/* nothing pushed: no rt_cu_fail */
		if (!rt_cu.error[0])
			snprintf(rt_cu.error, sizeof(rt_cu.error), "cuda: kernel %s: not "
				 "initialised", name);
		memcpy(msg, rt_cu.error, sizeof(msg));
		pthread_mutex_unlock(&rt_cu.lock);
		collagec_rt_abort(msg);
		return -1;
	}
	RT_CU(cuCtxPushCurrent)(rt_cu.ctx);
	model = rt_run_model(&c->base, &c->arena_bytes);
	if (!(c->mm = rt_cu_model_of(model))) {
		rt_cu_fail(name, "run outside an open model", CUDA_ERROR_INVALID_CONTEXT);
		return -1;
	}
	if (c->arena_bytes > c->mm->arena_bytes) {
		/* a new plan: nothing on the device is valid across runs */
		RT_CU(cuStreamSynchronize)(rt_cu.stream);
		if (c->mm->arena)
			RT_CU(cuMemFree)(c->mm->arena);
		c->mm->arena = 0;
		c->mm->arena_bytes = 0;
		if ((r = RT_CU(cuMemAlloc)(&c->mm->arena, (size_t)c->arena_bytes)) != CUDA_SUCCESS) {
			rt_cu_fail(name, "device arena", r);
			return -1;
		}
		c->mm->arena_bytes = c->arena_bytes;
	}
	c->mm->queued = 1;
	return 0;
}

/*
 * Where argument i (host p, bytes, flags f, an input when in) lives on the
 * device: a constant's copy, its place in the device arena (uploaded when
 * host code made it), or a copy of its own outside the arena. 0 (and *r)
 * on failure; 0 with CUDA_SUCCESS for an empty one.
 */
static CUdeviceptr rt_cu_map(struct rt_cu_call *c, int i, const void *p, int64_t bytes, int f,
			     int in, CUresult *r)
{
	struct rt_cu_model *mm = c->mm;
	const unsigned char *q = p;
	CUdeviceptr mem = 0;

	*r = CUDA_SUCCESS;
	if (bytes <= 0)
		return 0;
	if (in && (f & RT_CU_CONST))
		return rt_cu_copy_of(&mm->consts, &mm->n_consts, &mm->cap_consts, p, bytes, 1, r);
	if (c->base && q >= c->base && q + bytes <= c->base + c->arena_bytes) {
		mem = mm->arena + (CUdeviceptr)(q - c->base);
		if (in && !(f & RT_CU_DEV)) {
			if (rt_cu.trace)
				fprintf(stderr, "collagec cuda: %s: upload b%d, %lld bytes\n", c->name, i,
					(long long)bytes);
			*r = RT_CU(cuMemcpyHtoDAsync)(mem, p, (size_t)bytes, rt_cu.stream);
		}
		return *r == CUDA_SUCCESS ? mem : 0;
	}
	if (in && (f & RT_CU_DEV)) {
		/* outside the arena: its producer made the copy */
		for (int j = 0; j < mm->n_others; j++)
			if (mm->others[j].host == p && mm->others[j].bytes >= bytes)
				return mm->others[j].mem;
		*r = CUDA_ERROR_INVALID_VALUE;
		return 0;
	}
	/*
	 * an input from host code (a model input, in the caller's memory),
	 * uploaded every run into its copy, or an output outside the arena
	 */
	mem = rt_cu_copy_of(&mm->others, &mm->n_others, &mm->cap_others, p, bytes, 0, r);
	if (!mem || !in)
		return mem;
	if (rt_cu.trace)
		fprintf(stderr, "collagec cuda: %s: upload b%d, %lld bytes\n", c->name, i,
			(long long)bytes);
	*r = RT_CU(cuMemcpyHtoDAsync)(mem, p, (size_t)bytes, rt_cu.stream);
	return *r == CUDA_SUCCESS ? mem : 0;
}

/* Copies output i back when host code (waited for) or only the caller reads it. */
static CUresult rt_cu_back(struct rt_cu_call *c, int i, void *p, CUdeviceptr mem, int64_t bytes,
			   int f)
{
	int wait = (f & RT_CU_SYNC) != 0;
	CUresult r;

	if (!mem || bytes <= 0 || !(f & (RT_CU_SYNC | RT_CU_LATE)))
		return CUDA_SUCCESS;
	if (rt_cu.trace)
		fprintf(stderr, "collagec cuda: %s: download b%d, %lld bytes%s\n", c->name, i,
			(long long)bytes, wait ? ", wait" : "");
	r = RT_CU(cuMemcpyDtoHAsync)(p, mem, (size_t)bytes, rt_cu.stream);
	if (r == CUDA_SUCCESS && wait)
		r = RT_CU(cuStreamSynchronize)(rt_cu.stream);
	return r;
}

static void rt_cu_end(struct rt_cu_call *c)
{
	CUcontext cur;

	(void)c;
	RT_CU(cuCtxPopCurrent)(&cur);
	pthread_mutex_unlock(&rt_cu.lock);
}

/*
 * Runs the stages of one executor kernel in order on the stream: buffer
 * arguments bufs[i] of bytes[i] (inputs first, n_in of them) with flags[i]
 * (RT_CU_*), each passed as a device pointer, then the scalars. A stage
 * with an empty range is skipped.
 */
static void rt_cu_launch(const char *name, void *const *bufs, const int64_t *bytes,
			 const unsigned char *flags, int n_bufs, int n_in, const int64_t *scalars,
			 int n_scalars, const struct rt_cu_stage *stages, int n_stages)
{
	CUdeviceptr mem[64];
	void *params[64 + 128];
	struct rt_cu_call c;
	CUresult r = CUDA_SUCCESS;

	if (rt_cu_begin(&c, name) < 0)
		return;
	for (int i = 0; i < n_bufs; i++) {
		mem[i] = rt_cu_map(&c, i, bufs[i], bytes[i], flags[i], i < n_in, &r);
		if (r != CUDA_SUCCESS)
			goto fail;
	}
	for (int i = 0; i < n_bufs; i++)
		params[i] = &mem[i];
	for (int i = 0; i < n_scalars; i++)
		params[n_bufs + i] = (void *)&scalars[i];
	for (int s = 0; s < n_stages; s++) {
		int64_t n = stages[s].n;
		unsigned blocks = 1, threads = 1;

		if (n == 0)
			continue;
		if (n > 0) {
			int64_t b = (n + RT_CU_BLOCK - 1) / RT_CU_BLOCK;

			threads = n < RT_CU_BLOCK ? (unsigned)n : RT_CU_BLOCK;
			blocks = b < RT_CU_MAX_BLOCKS ? (unsigned)b : RT_CU_MAX_BLOCKS;
		}
		r = RT_CU(cuLaunchKernel)(stages[s].kernel->f, blocks, 1, 1, threads, 1, 1, 0,
					  rt_cu.stream, params, NULL);
		if (r != CUDA_SUCCESS)
			goto fail;
	}
	for (int i = n_in; i < n_bufs; i++)
		if ((r = rt_cu_back(&c, i, bufs[i], mem[i], bytes[i], flags[i])) != CUDA_SUCCESS)
			goto fail;
	rt_cu_end(&c);
	return;
fail:
	RT_CU(cuStreamSynchronize)(rt_cu.stream);
	rt_cu_fail(name, "launch", r);
}

#endif
