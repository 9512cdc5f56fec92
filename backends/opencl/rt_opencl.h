/*
 * rt_opencl.h - the host half of the opencl target. collagec embeds this
 * file and the target hands it over as its runtime modules' prelude, so it
 * is pasted once into every model.c with partitions on opencl, before the
 * kernels. Per kernel the generated code defines a struct rt_ocl_kernel
 * (its OpenCL C source and device), registers it with RT_OCL_REGISTER (a
 * constructor, so the list is complete before collagec_open) and calls
 * rt_ocl_launch() from the executor's kernel function.
 *
 * collagec_ocl_init (run by every collagec_open) builds ONE program from the
 * sources of every registered kernel on their device (the first over all
 * platforms, in enumeration order, that the target's -device names: its
 * index, kind or name); later opens only count a reference,
 * collagec_ocl_fini (every collagec_close) drops it and releases everything
 * with the last one. PoCL caches the compiled program on disk, so later
 * processes skip the OpenCL compiler.
 *
 * Values stay on the device. Each open handle has a device arena, a mirror
 * of its host arena (the memory plan's offsets): a value an opencl kernel
 * writes for another opencl kernel stays there, and is never copied to the
 * host unless host code reads it too. The compiler says per argument
 * (RT_OCL_* flags) what each kernel's neighbours are: constants are uploaded
 * once per handle, as it opens (those made at open at the first run that
 * reads them); values made by host
 * code are copied in when a kernel reads them; outputs host code reads next
 * are copied back and waited for (the one wait at a boundary with the CPU),
 * outputs only the caller reads are copied back without a wait, and
 * collagec_ocl_sync, at the end of every run, waits once for everything (and
 * after every step of a timed run, so that a step's time is its own). One
 * in-order queue holds all of it. COLLAGEC_OPENCL_TRACE=1 in the environment
 * at the first open prints every copy and wait on stderr.
 *
 * Kernels have no error return: the first run-time failure is kept in
 * rt_ocl.error and reported through collagec_rt_abort() (prints and aborts
 * unless the program defines its own; if that returns, the kernel returns
 * without computing its outputs, and so does every later one). One mutex
 * serialises launches, since all handles of a process share the kernels.
 */
#ifndef COLLAGEC_RT_OPENCL_H
#define COLLAGEC_RT_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <pthread.h>
#include <strings.h>

/* One OpenCL kernel of the model (several per executor kernel with stages). */
struct rt_ocl_kernel {
	const char *name;		/* __kernel function name */
	const char *device;		/* the target's -device */
	const char *source;		/* its OpenCL C text */
	const char *const *consts;	/* the constants it reads, by name, NULL-ended */
	cl_kernel k;			/* made by collagec_ocl_init */
	struct rt_ocl_kernel *next;
};

#define RT_OCL_REGISTER(var)                                                   \
	static void var##_register(void) __attribute__((constructor));         \
	static void var##_register(void)                                       \
	{                                                                      \
		var.next = rt_ocl.kernels;                                     \
		rt_ocl.kernels = &var;                                         \
	}

/* Prepended to the kernels: what the shared printer's C spellings need. */
static const char rt_ocl_prelude[] =
	"#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
	"#define INT64_MIN LONG_MIN\n#define INT64_C(x) (x##L)\n#define UINT64_C(x) (x##UL)\n";

/* What the compiler knows of a kernel's argument (rt_ocl_launch's flags). */
enum {
	RT_OCL_DEV = 1,		/* input: an opencl kernel of this run left it on the device */
	RT_OCL_CONST = 2,	/* input: a constant, uploaded once per handle */
	RT_OCL_KEEP = 4,	/* output: an opencl kernel reads it: it stays on the device */
	RT_OCL_SYNC = 8,	/* output: host code reads it: copied back, waited for */
	RT_OCL_LATE = 16,	/* output: only the caller reads it: copied back by the run's end */
};

/* A host buffer's copy on the device: a constant's, or a value's outside the arena. */
struct rt_ocl_copy {
	const void *host;
	int64_t bytes;
	cl_mem mem;
};

/* What one open handle holds on the device. */
struct rt_ocl_model {
	const void *model;		/* the handle (a key) */
	cl_mem arena;			/* mirrors the host arena, offset for offset */
	int64_t arena_bytes;
	struct rt_ocl_copy *consts, *others;	/* constants; values outside the arena */
	int n_consts, n_others, cap_consts, cap_others;
	int queued;			/* work queued since the last sync */
	struct rt_ocl_model *next;
};

static struct {
	pthread_mutex_t lock;
	int refs;			/* open handles */
	struct rt_ocl_kernel *kernels;	/* registered at load time */
	cl_context ctx;
	cl_command_queue queue;
	cl_program prog;
	cl_mem dummy;			/* stands in for empty buffers */
	struct rt_ocl_model *models;	/* one per open handle */
	int trace;			/* COLLAGEC_OPENCL_TRACE */
	size_t group;			/* work-items per work-group; 0: the driver's choice */
	size_t max_items[3];		/* the device's most per dim of a group */
	int host_mem;			/* the device works in host memory (a CPU, PoCL) */
	char error[256];		/* the first run-time failure */
} rt_ocl = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void rt_ocl_copies_free(struct rt_ocl_copy *c, int n)
{
	for (int i = 0; i < n; i++)
		clReleaseMemObject(c[i].mem);
	free(c);
}

static void rt_ocl_model_free(struct rt_ocl_model *mm)
{
	if (mm->arena)
		clReleaseMemObject(mm->arena);
	rt_ocl_copies_free(mm->consts, mm->n_consts);
	rt_ocl_copies_free(mm->others, mm->n_others);
	free(mm);
}

static void rt_ocl_release(void)
{
	while (rt_ocl.models) {
		struct rt_ocl_model *mm = rt_ocl.models;

		rt_ocl.models = mm->next;
		rt_ocl_model_free(mm);
	}
	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next)
		if (k->k) {
			clReleaseKernel(k->k);
			k->k = NULL;
		}
	if (rt_ocl.dummy)
		clReleaseMemObject(rt_ocl.dummy);
	if (rt_ocl.prog)
		clReleaseProgram(rt_ocl.prog);
	if (rt_ocl.queue)
		clReleaseCommandQueue(rt_ocl.queue);
	if (rt_ocl.ctx)
		clReleaseContext(rt_ocl.ctx);
	rt_ocl.dummy = NULL;
	rt_ocl.prog = NULL;
	rt_ocl.queue = NULL;
	rt_ocl.ctx = NULL;
}

/*
 * Whether device d (index i over all platforms, of type type, named name)
 * is what the target's -device says: its index, a kind (gpu, cpu,
 * accelerator) or a part of its name, case aside, '_' for a blank. The
 * compiler checks -device by the same rule (opencl_target.c's
 * device_matches).
 */
static int rt_ocl_matches(const char *sel, unsigned i, cl_device_type type, const char *name)
{
	const char *d = sel;

	while (*d >= '0' && *d <= '9')
		d++;
	if (d != sel && !*d)
		return strtoul(sel, NULL, 10) == i;
	if (!strcasecmp(sel, "gpu"))
		return (type & CL_DEVICE_TYPE_GPU) != 0;
	if (!strcasecmp(sel, "cpu"))
		return (type & CL_DEVICE_TYPE_CPU) != 0;
	if (!strcasecmp(sel, "accelerator"))
		return (type & CL_DEVICE_TYPE_ACCELERATOR) != 0;
	for (const char *n = name; *n; n++) {
		size_t k = 0;

		while (sel[k] && n[k] &&
		       (tolower((unsigned char)sel[k]) == tolower((unsigned char)n[k]) ||
			(sel[k] == '_' && n[k] == ' ')))
			k++;
		if (!sel[k])
			return 1;
	}
	return 0;
}

/* The first device over every platform, in enumeration order, that sel names. */
static cl_int rt_ocl_device(const char *sel, cl_device_id *dev, cl_uint *count)
{
	cl_platform_id plats[16];
	cl_uint np = 0, seen = 0;
	cl_int e = clGetPlatformIDs(16, plats, &np);

	if (e != CL_SUCCESS)
		return e;
	for (cl_uint p = 0; p < np && p < 16; p++) {
		cl_device_id devs[64];
		cl_uint nd = 0;

		if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS)
			continue;
		if (nd > 64)
			nd = 64;
		for (cl_uint i = 0; i < nd; i++) {
			cl_device_type type = 0;
			char name[256] = "";

			clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof(type), &type, NULL);
			clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
			if (rt_ocl_matches(sel, seen + i, type, name)) {
				*dev = devs[i];
				return CL_SUCCESS;
			}
		}
		seen += nd;
	}
	*count = seen;
	return CL_DEVICE_NOT_FOUND;
}

/*
 * Work-group sizes, chosen for the device when the model opens: on GPUs and
 * accelerators RT_OCL_GPU_GROUP work-items (or the device's most), whose
 * NDRanges are rounded up to whole groups (each kernel returns past its
 * loop's end); on CPUs the driver's choice (PoCL's), as before. The
 * environment's COLLAGEC_OPENCL_WORKGROUP=N overrides (0: the driver's).
 */
#define RT_OCL_GPU_GROUP 256

static void rt_ocl_group_size(cl_device_id dev)
{
	cl_device_type type = 0;
	size_t most = 0, items[3] = { 1, 1, 1 };
	const char *env = getenv("COLLAGEC_OPENCL_WORKGROUP");

	clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(most), &most, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(items), items, NULL);
	rt_ocl.group = type & CL_DEVICE_TYPE_CPU ? 0 : RT_OCL_GPU_GROUP;
	{
		cl_bool unified = CL_FALSE;

		clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified, NULL);
		rt_ocl.host_mem = (type & CL_DEVICE_TYPE_CPU) || unified;
	}
	if (env && *env)
		rt_ocl.group = strtoul(env, NULL, 10);
	if (most && rt_ocl.group > most)
		rt_ocl.group = most;
	for (int d = 0; d < 3; d++)
		rt_ocl.max_items[d] = items[d] ? items[d] : 1;
	if (rt_ocl.trace) {
		char name[256] = "";

		clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
		if (rt_ocl.group)
			fprintf(stderr, "collagec opencl: device %s, work-groups of up to %zu\n",
				name, rt_ocl.group);
		else
			fprintf(stderr, "collagec opencl: device %s, work-groups as the driver "
				"chooses\n", name);
	}
}

/*
 * The work-group of an NDRange of gws (dims): rt_ocl.group work-items,
 * powers of two, dim 0 (the innermost loop) first, none wider than its
 * range needs; gws rounded up to whole groups into padded. False: the
 * driver's choice (no local size).
 */
static int rt_ocl_group(cl_uint dims, const size_t *gws, size_t *lws, size_t *padded)
{
	size_t left = rt_ocl.group;

	if (!left)
		return 0;
	for (cl_uint d = 0; d < dims; d++) {
		size_t l = 1;

		while (2 * l <= left && l < gws[d] && 2 * l <= rt_ocl.max_items[d])
			l *= 2;
		lws[d] = l;
		left /= l;
		padded[d] = (gws[d] + l - 1) / l * l;
	}
	return 1;
}

/* Builds the program; on failure a message (with the build log's start) in err. */
static int rt_ocl_setup(char *err, size_t errlen)
{
	cl_device_id dev;
	cl_uint ndev = 0, n = 1;
	const char **src;
	const char *want = rt_ocl.kernels ? rt_ocl.kernels->device : "0";
	cl_int e;

	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next)
		if (strcmp(k->device, want) != 0) {
			snprintf(err, errlen, "opencl: kernels for devices '%s' and '%s' in one model",
				 want, k->device);
			return -1;
		}
	e = rt_ocl_device(want, &dev, &ndev);
	if (e == CL_DEVICE_NOT_FOUND) {
		snprintf(err, errlen, "opencl: no device '%s' (%u devices)", want, ndev);
		return -1;
	}
	if (e != CL_SUCCESS) {
		snprintf(err, errlen, "opencl: no OpenCL platform (error %d)", (int)e);
		return -1;
	}
	rt_ocl_group_size(dev);
	rt_ocl.ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
	if (!rt_ocl.ctx)
		return snprintf(err, errlen, "opencl: clCreateContext: error %d", (int)e), -1;
	rt_ocl.queue = clCreateCommandQueue(rt_ocl.ctx, dev, 0, &e);
	if (!rt_ocl.queue)
		return snprintf(err, errlen, "opencl: clCreateCommandQueue: error %d", (int)e), -1;
	rt_ocl.dummy = clCreateBuffer(rt_ocl.ctx, CL_MEM_READ_WRITE, 64, NULL, &e);
	if (!rt_ocl.dummy)
		return snprintf(err, errlen, "opencl: clCreateBuffer: error %d", (int)e), -1;
	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next)
		n++;
	src = malloc(sizeof(*src) * n);
	if (!src)
		return snprintf(err, errlen, "opencl: out of memory"), -1;
	n = 0;
	src[n++] = rt_ocl_prelude;
	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next)
		src[n++] = k->source;
	rt_ocl.prog = clCreateProgramWithSource(rt_ocl.ctx, n, src, NULL, &e);
	free(src);
	if (!rt_ocl.prog)
		return snprintf(err, errlen, "opencl: clCreateProgramWithSource: error %d",
				(int)e), -1;
	e = clBuildProgram(rt_ocl.prog, 1, &dev, "", NULL, NULL);
	if (e != CL_SUCCESS) {
		char log[512] = "";
		char *nl;

		clGetProgramBuildInfo(rt_ocl.prog, dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1,
				      log, NULL);
		log[sizeof(log) - 1] = 0;
		for (nl = log; *nl == '\n'; nl++)
			;
		memmove(log, nl, strlen(nl) + 1);
		if ((nl = strchr(log, '\n')))
			*nl = 0;
		snprintf(err, errlen, "opencl: clBuildProgram: error %d: %s", (int)e, log);
		return -1;
	}
	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next) {
		k->k = clCreateKernel(rt_ocl.prog, k->name, &e);
		if (!k->k)
			return snprintf(err, errlen, "opencl: clCreateKernel %s: error %d", k->name,
					(int)e), -1;
	}
	return 0;
}

static cl_mem rt_ocl_copy_of(struct rt_ocl_copy **v, int *n, int *cap, const void *host,
			     int64_t bytes, int upload, cl_int *e);

/*
 * The weights every kernel reads, uploaded for the handle as it opens (the
 * lock held). Constants made at open, after the inits, are not there yet:
 * their first run uploads them.
 */
static int rt_ocl_upload_consts(struct rt_ocl_model *mm, char *err, size_t errlen)
{
	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next)
		for (const char *const *c = k->consts; c && *c; c++) {
			const void *data;
			int64_t bytes;
			int had = mm->n_consts;
			cl_int e = CL_SUCCESS;

			if (rt_model_const(*c, &data, &bytes) < 0 || bytes <= 0)
				continue;
			if (!rt_ocl_copy_of(&mm->consts, &mm->n_consts, &mm->cap_consts, data, bytes,
					    1, &e))
				return snprintf(err, errlen, "opencl: uploading '%s' (%lld bytes): "
						"error %d", *c, (long long)bytes, (int)e), -1;
			if (rt_ocl.trace && mm->n_consts != had)
				fprintf(stderr, "collagec opencl: open: upload constant %s, %lld "
					"bytes\n", *c, (long long)bytes);
		}
	return 0;
}

int collagec_ocl_init(void *model, char *err, size_t errlen)
{
	struct rt_ocl_model *mm = calloc(1, sizeof(*mm));
	int rc = 0;

	if (!mm)
		return snprintf(err, errlen, "opencl: out of memory"), -1;
	mm->model = model;
	pthread_mutex_lock(&rt_ocl.lock);
	if (rt_ocl.refs == 0) {
		const char *t = getenv("COLLAGEC_OPENCL_TRACE");

		rt_ocl.trace = t && *t && strcmp(t, "0") != 0;
		rt_ocl.error[0] = 0;
		rc = rt_ocl_setup(err, errlen);
		if (rc < 0)
			rt_ocl_release();
	}
	if (rc == 0) {
		rt_ocl.refs++;
		mm->next = rt_ocl.models;
		rt_ocl.models = mm;
		rc = rt_ocl_upload_consts(mm, err, errlen);
		if (rc < 0) {
			/* as collagec_ocl_fini, the lock held */
			rt_ocl.models = mm->next;
			rt_ocl_model_free(mm);
			if (--rt_ocl.refs == 0)
				rt_ocl_release();
		}
	} else {
		free(mm);
	}
	pthread_mutex_unlock(&rt_ocl.lock);
	return rc;
}

/* model's state (lock held), or NULL. */
static struct rt_ocl_model *rt_ocl_model_of(const void *model)
{
	struct rt_ocl_model *mm = rt_ocl.models;

	while (mm && mm->model != model)
		mm = mm->next;
	return mm;
}

/* Harmless without a matching init: nothing is held then. */
void collagec_ocl_fini(void *model)
{
	pthread_mutex_lock(&rt_ocl.lock);
	for (struct rt_ocl_model **p = &rt_ocl.models; *p; p = &(*p)->next)
		if ((*p)->model == model) {
			struct rt_ocl_model *mm = *p;

			*p = mm->next;
			if (rt_ocl.queue)
				clFinish(rt_ocl.queue);
			rt_ocl_model_free(mm);
			if (rt_ocl.refs > 0 && --rt_ocl.refs == 0)
				rt_ocl_release();
			break;
		}
	pthread_mutex_unlock(&rt_ocl.lock);
}

/* Records the first failure (lock held), releases the lock and aborts. */
static void rt_ocl_fail(const char *kernel, const char *what, cl_int e)
{
	char msg[256];

	if (!rt_ocl.error[0])
		snprintf(rt_ocl.error, sizeof(rt_ocl.error), "opencl: kernel %s: %s: error %d",
			 kernel, what, (int)e);
	memcpy(msg, rt_ocl.error, sizeof(msg));
	pthread_mutex_unlock(&rt_ocl.lock);
	collagec_rt_abort(msg);
}

/*
 * One wait for everything the kernels queued (outputs on their way back):
 * at the end of a run (end), where values outside the arena are let go
 * when many piled up (a run's dynamic buffers come at new addresses), or
 * after each step when the run is timed.
 */
void collagec_ocl_sync(void *model, int end)
{
	struct rt_ocl_model *mm;
	cl_int e;

	pthread_mutex_lock(&rt_ocl.lock);
	mm = rt_ocl_model_of(model);
	if (!mm || !mm->queued || rt_ocl.error[0]) {
		pthread_mutex_unlock(&rt_ocl.lock);
		return;
	}
	mm->queued = 0;
	if (rt_ocl.trace)
		fprintf(stderr, "collagec opencl: %s\n", end ? "wait at the run's end"
							 : "wait after a timed step");
	e = clFinish(rt_ocl.queue);
	if (e != CL_SUCCESS) {
		rt_ocl_fail(end ? "(the run's end)" : "(a timed step)", "clFinish", e);
		return;
	}
	if (end && mm->n_others > 16) {
		rt_ocl_copies_free(mm->others, mm->n_others);
		mm->others = NULL;
		mm->n_others = mm->cap_others = 0;
	}
	pthread_mutex_unlock(&rt_ocl.lock);
}

/* A loop extent as an NDRange size (none when not positive). */
static inline size_t rt_ocl_extent(int64_t n)
{
	return n > 0 ? (size_t)n : 0;
}

/* One NDRange (work_dim 0: a single work-item); gws innermost dim first. */
struct rt_ocl_stage {
	struct rt_ocl_kernel *kernel;
	cl_uint work_dim;
	size_t gws[3];
};

/*
 * The copy of host in *v (n, cap) of at least bytes, made (uploaded when
 * upload) if it is not there or too small; NULL with *e set on failure.
 */
static cl_mem rt_ocl_copy_of(struct rt_ocl_copy **v, int *n, int *cap, const void *host,
			     int64_t bytes, int upload, cl_int *e)
{
	struct rt_ocl_copy *c = NULL;
	cl_mem mem;

	for (int i = 0; i < *n && !c; i++)
		if ((*v)[i].host == host)
			c = &(*v)[i];
	if (c && c->bytes >= bytes)
		return c->mem;
	/*
	 * a constant (upload) on a device that works in host memory is used
	 * where it lies, in the weights: no second copy of every weight
	 */
	mem = clCreateBuffer(rt_ocl.ctx, upload && rt_ocl.host_mem
			     ? CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR
			     : CL_MEM_READ_WRITE | (upload ? CL_MEM_COPY_HOST_PTR : 0),
			     (size_t)bytes, upload ? (void *)host : NULL, e);
	if (!mem)
		return NULL;
	if (!c) {
		if (*n == *cap) {
			int nc = *cap ? 2 * *cap : 16;
			struct rt_ocl_copy *nv = realloc(*v, sizeof(*nv) * (size_t)nc);

			if (!nv) {
				clReleaseMemObject(mem);
				*e = CL_OUT_OF_HOST_MEMORY;
				return NULL;
			}
			*v = nv;
			*cap = nc;
		}
		c = &(*v)[(*n)++];
	} else {
		clReleaseMemObject(c->mem);
	}
	c->host = host;
	c->bytes = bytes;
	c->mem = mem;
	return mem;
}

/*
 * Runs the stages of one executor kernel in order on the in-order queue:
 * buffer arguments bufs[i] of bytes[i] (inputs first, n_in of them) with
 * flags[i] (RT_OCL_*), each passed as its device buffer and a byte offset,
 * then the scalars. A stage with an empty range is skipped.
 */
static void rt_ocl_launch(const char *name, void *const *bufs, const int64_t *bytes,
			  const unsigned char *flags, int n_bufs, int n_in, const cl_long *scalars,
			  int n_scalars, const struct rt_ocl_stage *stages, int n_stages)
{
	cl_mem mem[64];
	cl_ulong off[64];
	unsigned char own[64];		/* mem[i] is this launch's own buffer */
	struct rt_ocl_model *mm;
	unsigned char *base;
	int64_t arena_bytes;
	const void *model;
	cl_int e = CL_SUCCESS;
	int made = 0, s;

	pthread_mutex_lock(&rt_ocl.lock);
	if (rt_ocl.error[0] || !rt_ocl.queue) {
		rt_ocl_fail(name, "not initialised", CL_INVALID_COMMAND_QUEUE);
		return;
	}
	model = rt_run_model(&base, &arena_bytes);
	if (!(mm = rt_ocl_model_of(model))) {
		rt_ocl_fail(name, "run outside an open model", CL_INVALID_CONTEXT);
		return;
	}
	if (arena_bytes > mm->arena_bytes) {
		/* a new plan: nothing on the device is valid across runs */
		if (mm->arena)
			clReleaseMemObject(mm->arena);
		mm->arena_bytes = 0;
		mm->arena = clCreateBuffer(rt_ocl.ctx, CL_MEM_READ_WRITE, (size_t)arena_bytes,
					   NULL, &e);
		if (!mm->arena)
			goto fail;
		mm->arena_bytes = arena_bytes;
	}
	mm->queued = 1;
	for (; made < n_bufs; made++) {
		const unsigned char *p = bufs[made];
		int in = made < n_in, f = flags[made];

		own[made] = 0;
		off[made] = 0;
		if (bytes[made] <= 0) {
			mem[made] = rt_ocl.dummy;
		} else if (in && (f & RT_OCL_CONST)) {
			int had = mm->n_consts;

			mem[made] = rt_ocl_copy_of(&mm->consts, &mm->n_consts, &mm->cap_consts, p,
						   bytes[made], 1, &e);
			if (rt_ocl.trace && mm->n_consts != had)
				fprintf(stderr, "collagec opencl: %s: upload constant b%d, %lld bytes\n",
					name, made, (long long)bytes[made]);
		} else if (in && !(f & RT_OCL_DEV)) {
			/* made by host code: copied in as the buffer is made, no wait */
			mem[made] = clCreateBuffer(rt_ocl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
						   (size_t)bytes[made], (void *)p, &e);
			own[made] = 1;
			if (rt_ocl.trace)
				fprintf(stderr, "collagec opencl: %s: upload b%d, %lld bytes\n", name,
					made, (long long)bytes[made]);
		} else if (base && p >= base && p + bytes[made] <= base + arena_bytes) {
			mem[made] = mm->arena;
			off[made] = (cl_ulong)(p - base);
		} else if (in) {
			/* RT_OCL_DEV outside the arena: its producer made the copy */
			mem[made] = NULL;
			for (int i = 0; i < mm->n_others && !mem[made]; i++)
				if (mm->others[i].host == p && mm->others[i].bytes >= bytes[made])
					mem[made] = mm->others[i].mem;
			if (!mem[made]) {
				e = CL_INVALID_MEM_OBJECT;
				goto fail;
			}
		} else if (f & RT_OCL_KEEP) {
			mem[made] = rt_ocl_copy_of(&mm->others, &mm->n_others, &mm->cap_others, p,
						   bytes[made], 0, &e);
		} else {
			mem[made] = clCreateBuffer(rt_ocl.ctx, CL_MEM_READ_WRITE, (size_t)bytes[made],
						   NULL, &e);
			own[made] = 1;
		}
		if (!mem[made])
			goto fail;
	}
	for (s = 0; s < n_stages; s++) {
		const struct rt_ocl_stage *st = &stages[s];
		cl_kernel k = st->kernel->k;
		size_t lws[3], padded[3];
		cl_uint a = 0;
		int empty = 0;

		for (cl_uint d = 0; d < st->work_dim; d++)
			empty |= st->gws[d] == 0;
		if (empty)
			continue;
		for (int i = 0; i < n_bufs && e == CL_SUCCESS; i++) {
			e = clSetKernelArg(k, a++, sizeof(cl_mem), &mem[i]);
			if (e == CL_SUCCESS)
				e = clSetKernelArg(k, a++, sizeof(cl_ulong), &off[i]);
		}
		for (int i = 0; i < n_scalars && e == CL_SUCCESS; i++)
			e = clSetKernelArg(k, a++, sizeof(cl_long), &scalars[i]);
		if (e != CL_SUCCESS)
			goto fail;
		if (st->work_dim && rt_ocl_group(st->work_dim, st->gws, lws, padded))
			e = clEnqueueNDRangeKernel(rt_ocl.queue, k, st->work_dim, NULL, padded, lws,
						   0, NULL, NULL);
		else if (st->work_dim)
			e = clEnqueueNDRangeKernel(rt_ocl.queue, k, st->work_dim, NULL, st->gws, NULL,
						   0, NULL, NULL);
		else
			e = clEnqueueTask(rt_ocl.queue, k, 0, NULL, NULL);
		if (e != CL_SUCCESS)
			goto fail;
	}
	for (int i = n_in; i < n_bufs; i++) {
		cl_bool wait = (flags[i] & RT_OCL_SYNC) != 0;

		if (mem[i] == rt_ocl.dummy || !(flags[i] & (RT_OCL_SYNC | RT_OCL_LATE)))
			continue;
		if (rt_ocl.trace)
			fprintf(stderr, "collagec opencl: %s: download b%d, %lld bytes%s\n", name, i,
				(long long)bytes[i], wait ? ", wait" : "");
		e = clEnqueueReadBuffer(rt_ocl.queue, mem[i], wait, (size_t)off[i],
					(size_t)bytes[i], bufs[i], 0, NULL, NULL);
		if (e != CL_SUCCESS)
			goto fail;
	}
	/* released when the queue is done with them */
	for (int i = 0; i < made; i++)
		if (own[i])
			clReleaseMemObject(mem[i]);
	pthread_mutex_unlock(&rt_ocl.lock);
	return;
fail:
	clFinish(rt_ocl.queue);
	for (int i = 0; i < made; i++)
		if (own[i])
			clReleaseMemObject(mem[i]);
	rt_ocl_fail(name, "launch", e);
}

#endif
