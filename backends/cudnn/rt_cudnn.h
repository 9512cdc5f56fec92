/*
 * rt_cudnn.h - the host half of the cudnn target, pasted into model.c
 * after rt_cuda.h (the target's prelude is both): its values live in the
 * cuda target's device memory (one arena per handle, the same flags).
 *
 * rt_cudnn_conv runs one 2-D Conv (NCHW, float32) on the cuda stream:
 * with a bias, residual or Relu after it as cudnnConvolutionBiasActivation-
 * Forward (y = act(conv(x, w) + z + bias); a zero bias of its own when the
 * model has none), else as cudnnConvolutionForward. The library
 * (libcudnn.so.9, whose shim exports the whole API) is loaded through
 * dlopen at the first call, with one handle on the cuda stream and one
 * workspace that grows to what the chosen algorithms ask (at most
 * RT_CUDNN_MAX_WS), let go with the cuda target's state (rt_cu_on_release).
 * Each call site keeps its descriptors and algorithm (cuDNN's heuristic,
 * cudnnGetConvolutionForwardAlgorithm_v7, in FMA math: float32, no TF32)
 * in a static cache, made again when the batch changes.
 */
#ifndef COLLAGEC_RT_CUDNN_H
#define COLLAGEC_RT_CUDNN_H

#include <cudnn.h>

#define RT_CUDNN_MAX_WS ((size_t)256 << 20)

#define RT_CUDNN_FUNCS(X)                                                      \
	X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)                       \
	X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor)         \
	X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor)           \
	X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor)          \
	X(cudnnCreateConvolutionDescriptor)                                    \
	X(cudnnDestroyConvolutionDescriptor)                                   \
	X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount)    \
	X(cudnnSetConvolutionMathType)                                         \
	X(cudnnGetConvolutionForwardAlgorithm_v7)                              \
	X(cudnnCreateActivationDescriptor) X(cudnnDestroyActivationDescriptor) \
	X(cudnnSetActivationDescriptor) X(cudnnConvolutionForward)             \
	X(cudnnConvolutionBiasActivationForward) X(cudnnGetErrorString)

/* One call site's descriptors, for the batch in n. */
struct rt_cudnn_cache {
	int64_t n;
	int gen;			/* rt_cudnn.gen it was made in; 0: none */
	cudnnTensorDescriptor_t x, y, b;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
	cudnnActivationDescriptor_t act;
	cudnnConvolutionFwdAlgo_t algo;
	size_t ws;			/* workspace bytes the algorithm takes */
	CUdeviceptr zero;		/* a zero bias, when the model has none */
	struct rt_cudnn_cache *next;	/* made ones, let go at release */
};

static struct {
	void *lib;
#define RT_CUDNN_PTR(f) __typeof__(&f) f;
	struct {
		RT_CUDNN_FUNCS(RT_CUDNN_PTR)
	} api;
#undef RT_CUDNN_PTR
	cudnnHandle_t h;
	CUdeviceptr ws;
	size_t ws_bytes;
	int gen;
	struct rt_cudnn_cache *caches;
} rt_cudnn;

#define RT_DNN(f) (rt_cudnn.api.f)

static void rt_cudnn_forget(struct rt_cudnn_cache *c)
{
	RT_DNN(cudnnDestroyTensorDescriptor)(c->x);
	RT_DNN(cudnnDestroyTensorDescriptor)(c->y);
	RT_DNN(cudnnDestroyTensorDescriptor)(c->b);
	RT_DNN(cudnnDestroyFilterDescriptor)(c->w);
	RT_DNN(cudnnDestroyConvolutionDescriptor)(c->conv);
	RT_DNN(cudnnDestroyActivationDescriptor)(c->act);
	if (c->zero)
		RT_CU(cuMemFree)(c->zero);
	c->zero = 0;
	c->gen = 0;
}

/* With the last handle, the library's state (context current; rt_cu_on_release). */
static void rt_cudnn_release(void)
{
	while (rt_cudnn.caches) {
		struct rt_cudnn_cache *c = rt_cudnn.caches;

		rt_cudnn.caches = c->next;
		rt_cudnn_forget(c);
	}
	if (rt_cudnn.h)
		RT_DNN(cudnnDestroy)(rt_cudnn.h);
	if (rt_cudnn.ws)
		RT_CU(cuMemFree)(rt_cudnn.ws);
	rt_cudnn.h = NULL;
	rt_cudnn.ws = 0;
	rt_cudnn.ws_bytes = 0;
}

/* Loads cuDNN and makes its handle on the cuda stream (lock held, context current). */
static int rt_cudnn_setup(char *err, size_t errlen)
{
	cudnnStatus_t st;

	if (!rt_cudnn.lib && !(rt_cudnn.lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL)))
		return snprintf(err, errlen, "cannot load libcudnn.so.9"), -1;
#define RT_CUDNN_LOAD(f)                                                       \
	if (!(*(void **)&rt_cudnn.api.f = dlsym(rt_cudnn.lib, #f)))            \
		return snprintf(err, errlen, "libcudnn.so.9 lacks %s", #f), -1;
	RT_CUDNN_FUNCS(RT_CUDNN_LOAD)
#undef RT_CUDNN_LOAD
	if ((st = RT_DNN(cudnnCreate)(&rt_cudnn.h)) != CUDNN_STATUS_SUCCESS) {
		rt_cudnn.h = NULL;
		return snprintf(err, errlen, "cudnnCreate: %s", RT_DNN(cudnnGetErrorString)(st)), -1;
	}
	if ((st = RT_DNN(cudnnSetStream)(rt_cudnn.h, (cudaStream_t)rt_cu.stream)) !=
	    CUDNN_STATUS_SUCCESS)
		return snprintf(err, errlen, "cudnnSetStream: %s", RT_DNN(cudnnGetErrorString)(st)),
		       -1;
	rt_cudnn.gen++;
	rt_cu_on_release(rt_cudnn_release);
	return 0;
}

/* The sizes of a call: N C H W M KH KW OH OW PH PW SH SW DH DW group. */
enum { RT_DNN_N, RT_DNN_C, RT_DNN_H, RT_DNN_W, RT_DNN_M, RT_DNN_KH, RT_DNN_KW, RT_DNN_OH,
       RT_DNN_OW, RT_DNN_PH, RT_DNN_PW, RT_DNN_SH, RT_DNN_SW, RT_DNN_DH, RT_DNN_DW, RT_DNN_G };

/* The descriptors and algorithm of a call site for its batch; a message in err. */
static int rt_cudnn_plan(struct rt_cudnn_cache *c, const int64_t *s, int fused, int relu,
			 double clip, char *err, size_t errlen)
{
	cudnnConvolutionFwdAlgoPerf_t perf[8];
	int n = 0, pick = -1;

	if (c->gen == rt_cudnn.gen)
		rt_cudnn_forget(c);	/* made for another batch */
	c->gen = 0;
	if (RT_DNN(cudnnCreateTensorDescriptor)(&c->x) || RT_DNN(cudnnCreateTensorDescriptor)(&c->y) ||
	    RT_DNN(cudnnCreateTensorDescriptor)(&c->b) || RT_DNN(cudnnCreateFilterDescriptor)(&c->w) ||
	    RT_DNN(cudnnCreateConvolutionDescriptor)(&c->conv) ||
	    RT_DNN(cudnnCreateActivationDescriptor)(&c->act))
		return snprintf(err, errlen, "cuDNN descriptors"), -1;
	if (RT_DNN(cudnnSetTensor4dDescriptor)(c->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
					       (int)s[RT_DNN_N], (int)s[RT_DNN_C], (int)s[RT_DNN_H],
					       (int)s[RT_DNN_W]) ||
	    RT_DNN(cudnnSetTensor4dDescriptor)(c->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
					       (int)s[RT_DNN_N], (int)s[RT_DNN_M], (int)s[RT_DNN_OH],
					       (int)s[RT_DNN_OW]) ||
	    RT_DNN(cudnnSetTensor4dDescriptor)(c->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
					       (int)s[RT_DNN_M], 1, 1) ||
	    RT_DNN(cudnnSetFilter4dDescriptor)(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
					       (int)s[RT_DNN_M], (int)(s[RT_DNN_C] / s[RT_DNN_G]),
					       (int)s[RT_DNN_KH], (int)s[RT_DNN_KW]) ||
	    RT_DNN(cudnnSetConvolution2dDescriptor)(c->conv, (int)s[RT_DNN_PH], (int)s[RT_DNN_PW],
						    (int)s[RT_DNN_SH], (int)s[RT_DNN_SW],
						    (int)s[RT_DNN_DH], (int)s[RT_DNN_DW],
						    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ||
	    RT_DNN(cudnnSetConvolutionGroupCount)(c->conv, (int)s[RT_DNN_G]) ||
	    RT_DNN(cudnnSetConvolutionMathType)(c->conv, CUDNN_FMA_MATH) ||
	    RT_DNN(cudnnSetActivationDescriptor)(c->act, clip > 0 ? CUDNN_ACTIVATION_CLIPPED_RELU
						 : relu ? CUDNN_ACTIVATION_RELU
						 : CUDNN_ACTIVATION_IDENTITY,
						 CUDNN_NOT_PROPAGATE_NAN, clip))
		return snprintf(err, errlen, "cuDNN descriptors for the sizes"), -1;
	if (RT_DNN(cudnnGetConvolutionForwardAlgorithm_v7)(rt_cudnn.h, c->x, c->w, c->conv, c->y, 8,
							   &n, perf))
		return snprintf(err, errlen, "no cuDNN algorithm"), -1;
	/* the fused call with no activation takes implicit precomputed GEMM only */
	for (int i = 0; i < n && pick < 0; i++)
		if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= RT_CUDNN_MAX_WS &&
		    (!fused || relu || perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
			pick = i;
	if (pick < 0 && fused && !relu) {
		pick = 0;
		perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
		perf[0].memory = 0;
	}
	if (pick < 0)
		return snprintf(err, errlen, "no cuDNN algorithm within %zu MiB of workspace",
				RT_CUDNN_MAX_WS >> 20), -1;
	c->algo = perf[pick].algo;
	c->ws = perf[pick].memory;
	c->n = s[RT_DNN_N];
	c->gen = rt_cudnn.gen;
	c->next = rt_cudnn.caches;
	rt_cudnn.caches = c;
	return 0;
}

/*
 * y = relu?(conv(x, w) + z + bias) of the sizes s[] (RT_DNN_*), clipped to
 * [0, clip] when clip > 0, x NCHW,
 * w [M, C / group, KH, KW], bias [M] (or none), z y's shape (or none);
 * fx, fw, fbias, fz, fy: each argument's RT_CU_* flags.
 */
static void rt_cudnn_conv(struct rt_cudnn_cache *cache, const char *name, const float *x,
			  const float *w, const float *bias, const float *z, float *y, int64_t n,
			  int64_t C, int64_t H, int64_t W, int64_t M, int64_t KH, int64_t KW,
			  int64_t OH, int64_t OW, int64_t ph, int64_t pw, int64_t sh, int64_t sw,
			  int64_t dh, int64_t dw, int64_t group, int64_t relu, double clip, int64_t fx,
			  int64_t fw,
			  int64_t fbias, int64_t fz, int64_t fy, int threads)
{
	const int64_t s[16] = { n, C, H, W, M, KH, KW, OH, OW, ph, pw, sh, sw, dh, dw, group };
	int64_t ybytes = n * M * OH * OW * 4;
	int fused = bias || z || relu;
	CUdeviceptr dx, dw_ = 0, db = 0, dz = 0, dy = 0;
	const float one = 1, zero = 0;
	struct rt_cu_call c;
	cudnnStatus_t st;
	char err[160];
	CUresult r;

	(void)threads;
	if (n <= 0)
		return;
	if (rt_cu_begin(&c, name) < 0)
		return;
	dx = rt_cu_map(&c, 0, x, n * C * H * W * 4, (int)fx, 1, &r);
	if (r == CUDA_SUCCESS)
		dw_ = rt_cu_map(&c, 1, w, M * (C / group) * KH * KW * 4, (int)fw, 1, &r);
	if (r == CUDA_SUCCESS && bias)
		db = rt_cu_map(&c, 2, bias, M * 4, (int)fbias, 1, &r);
	if (r == CUDA_SUCCESS && z)
		dz = rt_cu_map(&c, 3, z, ybytes, (int)fz, 1, &r);
	if (r == CUDA_SUCCESS)
		dy = rt_cu_map(&c, 4, y, ybytes, (int)fy, 0, &r);
	if (r != CUDA_SUCCESS) {
		rt_cu_fail(name, "cudnn arguments", r);
		return;
	}
	if ((!rt_cudnn.h && rt_cudnn_setup(err, sizeof(err)) < 0) ||
	    ((cache->gen != rt_cudnn.gen || cache->n != n) &&
	     rt_cudnn_plan(cache, s, fused, (int)relu, clip, err, sizeof(err)) < 0)) {
		rt_cu_fail(name, err, CUDA_ERROR_NOT_SUPPORTED);
		return;
	}
	if (cache->ws > rt_cudnn.ws_bytes) {
		RT_CU(cuStreamSynchronize)(rt_cu.stream);
		if (rt_cudnn.ws)
			RT_CU(cuMemFree)(rt_cudnn.ws);
		rt_cudnn.ws = 0;
		rt_cudnn.ws_bytes = 0;
		if ((r = RT_CU(cuMemAlloc)(&rt_cudnn.ws, cache->ws)) != CUDA_SUCCESS) {
			rt_cu_fail(name, "cudnn workspace", r);
			return;
		}
		rt_cudnn.ws_bytes = cache->ws;
	}
	if (fused && !bias && !cache->zero) {
		if ((r = RT_CU(cuMemAlloc)(&cache->zero, (size_t)M * 4)) != CUDA_SUCCESS ||
		    (r = RT_CU(cuMemsetD32Async)(cache->zero, 0, (size_t)M, rt_cu.stream)) !=
		    CUDA_SUCCESS) {
			rt_cu_fail(name, "cudnn zero bias", r);
			return;
		}
	}
	if (fused)
		st = RT_DNN(cudnnConvolutionBiasActivationForward)(
			rt_cudnn.h, &one, cache->x, (const void *)dx, cache->w, (const void *)dw_,
			cache->conv, cache->algo, (void *)rt_cudnn.ws, cache->ws, z ? &one : &zero,
			cache->y, (const void *)(z ? dz : dy), cache->b,
			(const void *)(bias ? db : cache->zero), cache->act, cache->y, (void *)dy);
	else
		st = RT_DNN(cudnnConvolutionForward)(rt_cudnn.h, &one, cache->x, (const void *)dx,
						     cache->w, (const void *)dw_, cache->conv,
						     cache->algo, (void *)rt_cudnn.ws, cache->ws,
						     &zero, cache->y, (void *)dy);
	if (st != CUDNN_STATUS_SUCCESS) {
		rt_cu_fail(name, RT_DNN(cudnnGetErrorString)(st), CUDA_ERROR_LAUNCH_FAILED);
		return;
	}
	if ((r = rt_cu_back(&c, 4, y, dy, ybytes, (int)fy)) != CUDA_SUCCESS) {
		rt_cu_fail(name, "cudnn output", r);
		return;
	}
	rt_cu_end(&c);
}

#endif
