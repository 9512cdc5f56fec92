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
 * sources of every registered kernel on their device (the Nth over all
 * platforms in enumeration order); later opens only count a reference,
 * collagec_ocl_fini (every collagec_close) drops it and releases everything
 * with the last one. PoCL caches the compiled program on disk, so later
 * processes skip the OpenCL compiler.
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
#include <pthread.h>

/* One OpenCL kernel of the model (several per executor kernel with stages). */
struct rt_ocl_kernel {
	const char *name;		/* __kernel function name */
	int device;			/* the target's -device */
	const char *source;		/* its OpenCL C text */
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

static struct {
	pthread_mutex_t lock;
	int refs;			/* open handles */
	struct rt_ocl_kernel *kernels;	/* registered at load time */
	cl_context ctx;
	cl_command_queue queue;
	cl_program prog;
	cl_mem dummy;			/* stands in for empty buffers */
	char error[256];		/* the first run-time failure */
} rt_ocl = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL, NULL, NULL, NULL, { 0 } };

static void rt_ocl_release(void)
{
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

/* The Nth device over every platform, in enumeration order. */
static cl_int rt_ocl_device(cl_uint want, cl_device_id *dev, cl_uint *count)
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
		if (want < seen + nd) {
			*dev = devs[want - seen];
			return CL_SUCCESS;
		}
		seen += nd;
	}
	*count = seen;
	return CL_DEVICE_NOT_FOUND;
}

/* Builds the program; on failure a message (with the build log's start) in err. */
static int rt_ocl_setup(char *err, size_t errlen)
{
	cl_device_id dev;
	cl_uint ndev = 0, n = 1;
	const char **src;
	int want = rt_ocl.kernels ? rt_ocl.kernels->device : 0;
	cl_int e;

	for (struct rt_ocl_kernel *k = rt_ocl.kernels; k; k = k->next)
		if (k->device != want) {
			snprintf(err, errlen, "opencl: kernels for devices %d and %d in one model",
				 want, k->device);
			return -1;
		}
	e = rt_ocl_device((cl_uint)want, &dev, &ndev);
	if (e == CL_DEVICE_NOT_FOUND) {
		snprintf(err, errlen, "opencl: device %d not found (%u devices)", want, ndev);
		return -1;
	}
	if (e != CL_SUCCESS) {
		snprintf(err, errlen, "opencl: no OpenCL platform (error %d)", (int)e);
		return -1;
	}
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

int collagec_ocl_init(char *err, size_t errlen)
{
	int rc = 0;

	pthread_mutex_lock(&rt_ocl.lock);
	if (rt_ocl.refs == 0) {
		rt_ocl.error[0] = 0;
		rc = rt_ocl_setup(err, errlen);
		if (rc < 0)
			rt_ocl_release();
	}
	if (rc == 0)
		rt_ocl.refs++;
	pthread_mutex_unlock(&rt_ocl.lock);
	return rc;
}

/* Harmless without a matching init: nothing is held then. */
void collagec_ocl_fini(void)
{
	pthread_mutex_lock(&rt_ocl.lock);
	if (rt_ocl.refs > 0 && --rt_ocl.refs == 0)
		rt_ocl_release();
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
 * Runs the stages of one executor kernel in order on the in-order queue:
 * arguments bufs[i] of bytes[i] (inputs first, n_in of them), then the
 * scalars. The outputs are mapped (and unmapped) behind the stages and one
 * clFinish waits for all of it, so they are in host memory on return. A
 * stage with an empty range is skipped.
 */
static void rt_ocl_launch(const char *name, void *const *bufs, const int64_t *bytes, int n_bufs,
			  int n_in, const cl_long *scalars, int n_scalars,
			  const struct rt_ocl_stage *stages, int n_stages)
{
	cl_mem mem[64];
	cl_int e = CL_SUCCESS;
	int made = 0, s;

	pthread_mutex_lock(&rt_ocl.lock);
	if (rt_ocl.error[0] || !rt_ocl.queue) {
		rt_ocl_fail(name, "not initialised", CL_INVALID_COMMAND_QUEUE);
		return;
	}
	for (; made < n_bufs; made++) {
		cl_mem_flags fl = made < n_in ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE;

		if (bytes[made] <= 0) {
			mem[made] = rt_ocl.dummy;
			clRetainMemObject(rt_ocl.dummy);
			continue;
		}
		mem[made] = clCreateBuffer(rt_ocl.ctx, fl | CL_MEM_USE_HOST_PTR, (size_t)bytes[made],
					   bufs[made], &e);
		if (!mem[made])
			goto fail;
	}
	for (s = 0; s < n_stages; s++) {
		const struct rt_ocl_stage *st = &stages[s];
		cl_kernel k = st->kernel->k;
		cl_uint a = 0;
		int empty = 0;

		for (cl_uint d = 0; d < st->work_dim; d++)
			empty |= st->gws[d] == 0;
		if (empty)
			continue;
		for (int i = 0; i < n_bufs && e == CL_SUCCESS; i++)
			e = clSetKernelArg(k, a++, sizeof(cl_mem), &mem[i]);
		for (int i = 0; i < n_scalars && e == CL_SUCCESS; i++)
			e = clSetKernelArg(k, a++, sizeof(cl_long), &scalars[i]);
		if (e != CL_SUCCESS)
			goto fail;
		if (st->work_dim)
			e = clEnqueueNDRangeKernel(rt_ocl.queue, k, st->work_dim, NULL, st->gws, NULL,
						   0, NULL, NULL);
		else
			e = clEnqueueTask(rt_ocl.queue, k, 0, NULL, NULL);
		if (e != CL_SUCCESS)
			goto fail;
	}
	for (int i = n_in; i < n_bufs; i++) {
		void *p;

		if (mem[i] == rt_ocl.dummy)
			continue;
		p = clEnqueueMapBuffer(rt_ocl.queue, mem[i], CL_FALSE, CL_MAP_READ, 0,
				       (size_t)bytes[i], 0, NULL, NULL, &e);
		if (!p)
			goto fail;
		e = clEnqueueUnmapMemObject(rt_ocl.queue, mem[i], p, 0, NULL, NULL);
		if (e != CL_SUCCESS)
			goto fail;
	}
	e = clFinish(rt_ocl.queue);
	if (e != CL_SUCCESS)
		goto fail;
	for (int i = 0; i < made; i++)
		clReleaseMemObject(mem[i]);
	pthread_mutex_unlock(&rt_ocl.lock);
	return;
fail:
	clFinish(rt_ocl.queue);
	for (int i = 0; i < made; i++)
		clReleaseMemObject(mem[i]);
	rt_ocl_fail(name, "launch", e);
}

#endif
