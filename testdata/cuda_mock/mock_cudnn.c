/*
 * mock_cudnn.c - a stand-in for cuDNN 9 (libcudnn.so.9) on the CPU, beside
 * mock_cuda.c: the legacy convolution calls rt_cudnn.h makes, the
 * convolution as the plain loop over NCHW tensors with pads, strides,
 * dilations and groups from the descriptors, in double precision, then
 * alpha2 * z, the bias and the activation (identity, Relu, clipped Relu).
 * So the descriptors rt_cudnn.h fills (which dims go where, the filter's
 * C / group, the clip's ceiling) are checked against the c target.
 */
#include <cudnn.h>
#include <stdlib.h>
#include <string.h>

struct mock_t4 { int n, c, h, w; };
struct mock_conv { int ph, pw, sh, sw, dh, dw, groups; };
struct mock_act { cudnnActivationMode_t mode; double coef; };

static int handle_token;

cudnnStatus_t cudnnCreate(cudnnHandle_t *h) { *h = (cudnnHandle_t)&handle_token; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) { (void)h; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) { (void)h; (void)s; return CUDNN_STATUS_SUCCESS; }
const char *cudnnGetErrorString(cudnnStatus_t s) { return s ? "mock cudnn error" : "ok"; }

#define MAKE(type, fn, st)                                                     \
	cudnnStatus_t fn(type *d)                                              \
	{                                                                      \
		*d = calloc(1, sizeof(struct st));                             \
		return *d ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;  \
	}
MAKE(cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, mock_t4)
MAKE(cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, mock_t4)
MAKE(cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, mock_conv)
MAKE(cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, mock_act)
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { free(d); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { free(d); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { free(d); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) { free(d); return CUDNN_STATUS_SUCCESS; }

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f,
					 cudnnDataType_t t, int n, int c, int h, int w)
{
	if (f != CUDNN_TENSOR_NCHW || t != CUDNN_DATA_FLOAT)
		return CUDNN_STATUS_BAD_PARAM;
	*(struct mock_t4 *)d = (struct mock_t4){ n, c, h, w };
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t t,
					 cudnnTensorFormat_t f, int k, int c, int h, int w)
{
	if (f != CUDNN_TENSOR_NCHW || t != CUDNN_DATA_FLOAT)
		return CUDNN_STATUS_BAD_PARAM;
	*(struct mock_t4 *)d = (struct mock_t4){ k, c, h, w };
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw,
					      int u, int v, int dh, int dw,
					      cudnnConvolutionMode_t mode, cudnnDataType_t t)
{
	struct mock_conv *c = (struct mock_conv *)d;

	if (mode != CUDNN_CROSS_CORRELATION || t != CUDNN_DATA_FLOAT)
		return CUDNN_STATUS_BAD_PARAM;
	*c = (struct mock_conv){ ph, pw, u, v, dh, dw, c->groups ? c->groups : 1 };
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int g)
{
	((struct mock_conv *)d)->groups = g;
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m)
{
	(void)d;
	return m == CUDNN_FMA_MATH ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
					   cudnnActivationMode_t mode, cudnnNanPropagation_t nan,
					   double coef)
{
	(void)nan;
	*(struct mock_act *)d = (struct mock_act){ mode, coef };
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
						     const cudnnFilterDescriptor_t w,
						     const cudnnConvolutionDescriptor_t c,
						     const cudnnTensorDescriptor_t y, int req, int *n,
						     cudnnConvolutionFwdAlgoPerf_t *perf)
{
	(void)h;
	(void)x;
	(void)w;
	(void)c;
	(void)y;
	if (req < 1)
		return CUDNN_STATUS_BAD_PARAM;
	memset(perf, 0, sizeof(*perf));
	perf[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
	perf[0].status = CUDNN_STATUS_SUCCESS;
	perf[0].memory = 1024;
	*n = 1;
	return CUDNN_STATUS_SUCCESS;
}

/* y = act(alpha1 conv(x, w) + alpha2 z + bias); bias NULL: none */
static cudnnStatus_t conv(const struct mock_t4 *xd, const float *x, const struct mock_t4 *wd,
			  const float *w, const struct mock_conv *c, double a1, double a2,
			  const float *z, const float *bias, const struct mock_act *act,
			  const struct mock_t4 *yd, float *y)
{
	int cg = xd->c / c->groups, mg = wd->n / c->groups;

	if (wd->c != cg || yd->c != wd->n || yd->n != xd->n || xd->c % c->groups)
		return CUDNN_STATUS_BAD_PARAM;
	for (int n = 0; n < yd->n; n++)
		for (int m = 0; m < yd->c; m++)
			for (int oh = 0; oh < yd->h; oh++)
				for (int ow = 0; ow < yd->w; ow++) {
					long o = ((long)(n * yd->c + m) * yd->h + oh) * yd->w + ow;
					int g = m / mg;
					double acc = 0;

					for (int ci = 0; ci < cg; ci++)
						for (int kh = 0; kh < wd->h; kh++)
							for (int kw = 0; kw < wd->w; kw++) {
								int ih = oh * c->sh - c->ph + kh * c->dh;
								int iw = ow * c->sw - c->pw + kw * c->dw;

								if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w)
									continue;
								acc += (double)x[((long)(n * xd->c + g * cg + ci) * xd->h + ih) * xd->w + iw] *
								       w[((long)(m * cg + ci) * wd->h + kh) * wd->w + kw];
							}
					acc *= a1;
					if (a2 != 0)
						acc += a2 * z[o];
					if (bias)
						acc += bias[m];
					if (act && act->mode == CUDNN_ACTIVATION_RELU && acc < 0)
						acc = 0;
					if (act && act->mode == CUDNN_ACTIVATION_CLIPPED_RELU)
						acc = acc < 0 ? 0 : acc > act->coef ? act->coef : acc;
					y[o] = (float)acc;
				}
	return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
				      const cudnnTensorDescriptor_t xd, const void *x,
				      const cudnnFilterDescriptor_t wd, const void *w,
				      const cudnnConvolutionDescriptor_t cd,
				      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wss,
				      const void *beta, const cudnnTensorDescriptor_t yd, void *y)
{
	(void)h;
	(void)algo;
	(void)ws;
	(void)wss;
	if (*(const float *)beta != 0)
		return CUDNN_STATUS_NOT_SUPPORTED;
	return conv((const void *)xd, x, (const void *)wd, w, (const void *)cd,
		    *(const float *)alpha, 0, NULL, NULL, NULL, (const void *)yd, y);
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
	cudnnHandle_t h, const void *alpha1, const cudnnTensorDescriptor_t xd, const void *x,
	const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cd,
	cudnnConvolutionFwdAlgo_t algo, void *ws, size_t wss, const void *alpha2,
	const cudnnTensorDescriptor_t zd, const void *z, const cudnnTensorDescriptor_t bd,
	const void *bias, const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd,
	void *y)
{
	const struct mock_act *act = (const void *)ad;
	const struct mock_t4 *b = (const void *)bd;

	(void)h;
	(void)ws;
	(void)wss;
	(void)zd;
	/* cuDNN's rule: no activation only with the implicit precomputed GEMM */
	if (act->mode == CUDNN_ACTIVATION_IDENTITY &&
	    algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
		return CUDNN_STATUS_NOT_SUPPORTED;
	if (!bias || b->n != 1 || b->c != ((const struct mock_t4 *)(const void *)yd)->c ||
	    b->h != 1 || b->w != 1)
		return CUDNN_STATUS_BAD_PARAM;
	return conv((const void *)xd, x, (const void *)wd, w, (const void *)cd,
		    *(const float *)alpha1, *(const float *)alpha2, z, bias, act,
		    (const void *)yd, y);
}
