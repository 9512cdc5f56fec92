/*
 * mock_cuda.c - a stand-in for NVIDIA's driver (libcuda.so.1) that runs a
 * model's cuda kernels on the CPU, so that tests/cuda.sh can run the cuda
 * target's host half (rt_cuda.h: the device arena, the argument flags,
 * uploads and downloads, stages, launches) end to end on a machine without
 * a GPU. Device memory is host memory; a launch calls the kernel's host
 * build (kernels.cu compiled by g++ with host_cuda.h, MOCK_CUDA_KERNELS
 * names the shared object) once per block and thread, serially: the
 * generated kernels share nothing between threads, so that is exact.
 * cuModuleLoadData accepts anything (the fatbin is not looked at).
 * Each entry point the runtime loads is here, with the driver's signature
 * (cuda.h), and counts what it did: MOCK_CUDA_STATS=FILE writes the
 * counts when the process exits.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the launcher of kernel NAME in the host build: NAME__launch(params, grid, block) */
typedef void (*launch_fn)(void **params, unsigned grid, unsigned block);

static void *kernels;
static long n_launch, n_htod, n_dtoh, n_alloc, n_sync;

static void report(void)
{
	const char *f = getenv("MOCK_CUDA_STATS");
	FILE *o = f ? fopen(f, "a") : NULL;

	if (!o)
		return;
	fprintf(o, "launches %ld htod %ld dtoh %ld allocs %ld syncs %ld\n", n_launch, n_htod,
		n_dtoh, n_alloc, n_sync);
	fclose(o);
}

CUresult cuInit(unsigned flags)
{
	(void)flags;
	atexit(report);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
	*n = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int i)
{
	*d = i;
	return i == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	(void)d;
	snprintf(name, (size_t)len, "mock CUDA device (the CPU)");
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)a;
	(void)d;
	*v = 9;
	return CUDA_SUCCESS;
}

static int ctx_token;

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	(void)d;
	*c = (CUcontext)&ctx_token;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	(void)d;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	if (c)
		*c = (CUcontext)&ctx_token;
	return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
	const char *path = getenv("MOCK_CUDA_KERNELS");

	(void)image;
	if (!path || !(kernels = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		return CUDA_ERROR_INVALID_IMAGE;
	*m = (CUmodule)kernels;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m)
{
	(void)m;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	char sym[512];

	snprintf(sym, sizeof(sym), "%s__launch", name);
	*f = (CUfunction)dlsym((void *)m, sym);
	return *f ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static int stream_token;

CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	(void)flags;
	*s = (CUstream)&stream_token;
	return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	n_sync++;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	/* poisoned: a kernel that reads what nobody wrote shows */
	void *m = malloc(n ? n : 1);

	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(m, 0xff, n);
	n_alloc++;
	*p = (CUdeviceptr)m;
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	free((void *)p);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
	(void)s;
	n_htod++;
	memcpy((void *)d, h, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s)
{
	(void)s;
	n_dtoh++;
	memcpy(h, (const void *)d, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
	(void)s;
	for (size_t i = 0; i < n; i++)
		((unsigned *)d)[i] = v;
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
			void **extra)
{
	(void)shared;
	(void)s;
	(void)extra;
	if (gy != 1 || gz != 1 || by != 1 || bz != 1)
		return CUDA_ERROR_INVALID_VALUE;
	n_launch++;
	((launch_fn)(void *)f)(params, gx, bx);
	return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	*s = r == CUDA_SUCCESS ? "no error" : "mock error";
	return CUDA_SUCCESS;
}
