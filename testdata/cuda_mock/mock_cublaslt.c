/*
 * mock_cublaslt.c - a stand-in for cuBLASLt (libcublasLt.so.13) on the CPU,
 * beside mock_cuda.c: cublasLtMatmul as the plain triple loop over
 * column-major matrices with their layouts' leading dimensions, transposes,
 * strided batches and the bias and Relu epilogues, in double precision.
 * So rt_cublas.h's mapping of row-major MatMul and Gemm onto cuBLASLt's
 * column-major call (which operand is which, which transpose, the batch
 * strides, the bias over which dimension) is checked against the c target.
 */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

struct mock_desc {
	int32_t transa, transb, epilogue;
	const float *bias;
};

struct mock_layout {
	uint64_t rows, cols;
	int64_t ld;
	int32_t batch;
	int64_t stride;
};

static int handle_token;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
	*h = (cublasLtHandle_t)&handle_token;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
	(void)h;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
					cudaDataType_t s)
{
	(void)c;
	(void)s;
	*d = calloc(1, sizeof(struct mock_desc));
	return *d ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
	free(d);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
					      cublasLtMatmulDescAttributes_t a, const void *buf,
					      size_t n)
{
	struct mock_desc *m = (struct mock_desc *)d;

	switch (a) {
	case CUBLASLT_MATMUL_DESC_TRANSA: memcpy(&m->transa, buf, n); break;
	case CUBLASLT_MATMUL_DESC_TRANSB: memcpy(&m->transb, buf, n); break;
	case CUBLASLT_MATMUL_DESC_EPILOGUE: memcpy(&m->epilogue, buf, n); break;
	case CUBLASLT_MATMUL_DESC_BIAS_POINTER: memcpy(&m->bias, buf, n); break;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t,
					  uint64_t rows, uint64_t cols, int64_t ld)
{
	struct mock_layout *m = calloc(1, sizeof(*m));

	if (!m || t != CUDA_R_32F)
		return CUBLAS_STATUS_INVALID_VALUE;
	m->rows = rows;
	m->cols = cols;
	m->ld = ld;
	m->batch = 1;
	*l = (cublasLtMatrixLayout_t)m;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(const cublasLtMatrixLayout_t l)
{
	free(l);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
						cublasLtMatrixLayoutAttribute_t a, const void *buf,
						size_t n)
{
	struct mock_layout *m = (struct mock_layout *)l;

	if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
		memcpy(&m->batch, buf, n);
	else if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
		memcpy(&m->stride, buf, n);
	else
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
	*p = (cublasLtMatmulPreference_t)&handle_token;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
	(void)p;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
						    cublasLtMatmulPreferenceAttributes_t a,
						    const void *buf, size_t n)
{
	(void)p;
	(void)a;
	(void)buf;
	(void)n;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
					      cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
					      cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd,
					      cublasLtMatmulPreference_t p, int req,
					      cublasLtMatmulHeuristicResult_t *r, int *n)
{
	(void)h;
	(void)d;
	(void)a;
	(void)b;
	(void)c;
	(void)dd;
	(void)p;
	if (req < 1)
		return CUBLAS_STATUS_INVALID_VALUE;
	memset(r, 0, sizeof(*r));
	*n = 1;
	return CUBLAS_STATUS_SUCCESS;
}

/* Element (i, j) of op(x) (x column-major with leading dimension ld). */
static double at(const float *x, int64_t ld, int trans, int64_t i, int64_t j)
{
	return trans ? x[j + i * ld] : x[i + j * ld];
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
			      const void *A, cublasLtMatrixLayout_t Ad, const void *B,
			      cublasLtMatrixLayout_t Bd, const void *beta, const void *C,
			      cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd,
			      const cublasLtMatmulAlgo_t *algo, void *ws, size_t wss,
			      cudaStream_t s)
{
	const struct mock_desc *m = (const struct mock_desc *)desc;
	const struct mock_layout *la = (const void *)Ad, *lb = (const void *)Bd;
	const struct mock_layout *lc = (const void *)Cd, *ld = (const void *)Dd;
	int ta = m->transa == CUBLAS_OP_T, tb = m->transb == CUBLAS_OP_T;
	int64_t rows = (int64_t)ld->rows, cols = (int64_t)ld->cols;
	int64_t k = ta ? (int64_t)la->rows : (int64_t)la->cols;
	int bias = m->epilogue == CUBLASLT_EPILOGUE_BIAS || m->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
	int relu = m->epilogue == CUBLASLT_EPILOGUE_RELU || m->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
	float al = *(const float *)alpha, be = *(const float *)beta;

	(void)h;
	(void)algo;
	(void)ws;
	(void)wss;
	(void)s;
	if ((ta ? la->cols : la->rows) != ld->rows || (tb ? lb->rows : lb->cols) != ld->cols ||
	    (int64_t)(tb ? lb->cols : lb->rows) != k || lc->rows != ld->rows ||
	    lc->cols != ld->cols || la->batch != ld->batch || lb->batch != ld->batch ||
	    (bias && !m->bias))
		return CUBLAS_STATUS_INVALID_VALUE;
	for (int32_t q = 0; q < ld->batch; q++) {
		const float *a = (const float *)A + q * la->stride, *b = (const float *)B + q * lb->stride;
		const float *c = (const float *)C + q * lc->stride;
		float *d = (float *)D + q * ld->stride;

		for (int64_t j = 0; j < cols; j++)
			for (int64_t i = 0; i < rows; i++) {
				double acc = 0;

				for (int64_t p = 0; p < k; p++)
					acc += at(a, la->ld, ta, i, p) * at(b, lb->ld, tb, p, j);
				acc = al * acc + (be != 0 ? be * c[i + j * lc->ld] : 0);
				if (bias)
					acc += m->bias[i];
				if (relu && acc < 0)
					acc = 0;
				d[i + j * ld->ld] = (float)acc;
			}
	}
	return CUBLAS_STATUS_SUCCESS;
}
