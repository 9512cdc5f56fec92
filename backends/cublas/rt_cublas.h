/*
 * rt_cublas.h - the host half of the cublas target, pasted into model.c
 * after rt_cuda.h (the target's prelude is both): its values live in the
 * cuda target's device memory (one arena per handle, the same flags), so
 * nothing goes through the host between cuda and cublas partitions.
 *
 * rt_cublas_mm runs one MatMul or Gemm as one cuBLASLt matmul on the cuda
 * stream, with the bias and Relu after it as cuBLASLt's epilogue. The
 * library (libcublasLt.so.13, else .12) is loaded through dlopen at the
 * first call, with one handle and a 32 MiB workspace, let go with the cuda
 * target's state (rt_cu_on_release). Row-major y[M][N] = op(a) op(b) is
 * column-major y^T = op(b)^T op(a)^T: cuBLASLt's A is our b, its B our a.
 * Each call site keeps its descriptors and the algorithm cuBLASLt's
 * heuristic chose in a static cache, made again when the sizes change
 * (symbolic dims). Float32 in and out, float32 compute (no TF32).
 */
#ifndef COLLAGEC_RT_CUBLAS_H
#define COLLAGEC_RT_CUBLAS_H

#include <cublasLt.h>

#define RT_CUBLAS_WORKSPACE ((size_t)32 << 20)

#define RT_CUBLAS_FUNCS(X)                                                     \
	X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate)       \
	X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)         \
	X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)           \
	X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)  \
	X(cublasLtMatmulPreferenceDestroy)                                     \
	X(cublasLtMatmulPreferenceSetAttribute)                                \
	X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

/* One call site's descriptors, for the sizes in key. */
struct rt_cublas_cache {
	int64_t key[10];
	int gen;			/* rt_cublas.gen it was made in; 0: none */
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	struct rt_cublas_cache *next;	/* made ones, let go at release */
};

static struct {
	void *lib;
#define RT_CUBLAS_PTR(f) __typeof__(&f) f;
	struct {
		RT_CUBLAS_FUNCS(RT_CUBLAS_PTR)
	} api;
#undef RT_CUBLAS_PTR
	cublasLtHandle_t h;
	CUdeviceptr ws;
	int gen;			/* counts setups */
	struct rt_cublas_cache *caches;
} rt_cublas;

#define RT_LT(f) (rt_cublas.api.f)

static void rt_cublas_forget(struct rt_cublas_cache *c)
{
	RT_LT(cublasLtMatrixLayoutDestroy)(c->la);
	RT_LT(cublasLtMatrixLayoutDestroy)(c->lb);
	RT_LT(cublasLtMatrixLayoutDestroy)(c->lc);
	RT_LT(cublasLtMatmulDescDestroy)(c->op);
	c->gen = 0;
}

/* With the last handle, the library's state (context current; rt_cu_on_release). */
static void rt_cublas_release(void)
{
	while (rt_cublas.caches) {
		struct rt_cublas_cache *c = rt_cublas.caches;

		rt_cublas.caches = c->next;
		rt_cublas_forget(c);
	}
	if (rt_cublas.h)
		RT_LT(cublasLtDestroy)(rt_cublas.h);
	if (rt_cublas.ws)
		RT_CU(cuMemFree)(rt_cublas.ws);
	rt_cublas.h = NULL;
	rt_cublas.ws = 0;
}

/* Loads cuBLASLt and makes its handle (lock held, context current); a message in err. */
static int rt_cublas_setup(char *err, size_t errlen)
{
	static const char *const names[] = { "libcublasLt.so.13", "libcublasLt.so.12" };
	cublasStatus_t st;
	CUresult r;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !rt_cublas.lib; i++)
		rt_cublas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!rt_cublas.lib)
		return snprintf(err, errlen, "cannot load libcublasLt.so.13 or .12"), -1;
#define RT_CUBLAS_LOAD(f)                                                      \
	if (!(*(void **)&rt_cublas.api.f = dlsym(rt_cublas.lib, #f)))          \
		return snprintf(err, errlen, "libcublasLt lacks %s", #f), -1;
	RT_CUBLAS_FUNCS(RT_CUBLAS_LOAD)
#undef RT_CUBLAS_LOAD
	if ((st = RT_LT(cublasLtCreate)(&rt_cublas.h)) != CUBLAS_STATUS_SUCCESS) {
		rt_cublas.h = NULL;
		return snprintf(err, errlen, "cublasLtCreate: status %d", (int)st), -1;
	}
	if ((r = RT_CU(cuMemAlloc)(&rt_cublas.ws, RT_CUBLAS_WORKSPACE)) != CUDA_SUCCESS) {
		rt_cublas.ws = 0;
		return snprintf(err, errlen, "workspace: %s", rt_cu_errstr(r)), -1;
	}
	rt_cublas.gen++;
	rt_cu_on_release(rt_cublas_release);
	return 0;
}

/*
 * The descriptors and algorithm of a matmul (see the file's comment for
 * which operand is which); a message in err when cuBLASLt has none.
 */
static int rt_cublas_plan(struct rt_cublas_cache *c, const int64_t *key, int has_bias,
			  int relu, CUdeviceptr bias, char *err, size_t errlen)
{
	int64_t M = key[0], N = key[1], K = key[2], batch = key[3], sa = key[4], sb = key[5];
	int ta = (int)key[6], tb = (int)key[7];
	cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasLtEpilogue_t epi = has_bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
				 : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t res;
	size_t ws = RT_CUBLAS_WORKSPACE;
	int32_t nb = (int32_t)batch;
	int64_t stride_c = M * N;
	int found = 0;

	if (c->gen == rt_cublas.gen)
		rt_cublas_forget(c);	/* made for other sizes */
	c->gen = 0;
	if (RT_LT(cublasLtMatmulDescCreate)(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
	    RT_LT(cublasLtMatmulDescSetAttribute)(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa,
						  sizeof(opa)) ||
	    RT_LT(cublasLtMatmulDescSetAttribute)(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb,
						  sizeof(opb)) ||
	    RT_LT(cublasLtMatmulDescSetAttribute)(c->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
						  sizeof(epi)))
		return snprintf(err, errlen, "matmul descriptor"), -1;
	if (has_bias && RT_LT(cublasLtMatmulDescSetAttribute)(c->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
							      &bias, sizeof(bias)))
		return snprintf(err, errlen, "bias pointer"), -1;
	/* cuBLASLt's A: our b, column-major N x K (tb: K x N); its B: our a, K x M (ta: M x K) */
	if (RT_LT(cublasLtMatrixLayoutCreate)(&c->la, CUDA_R_32F, (uint64_t)(tb ? K : N),
					      (uint64_t)(tb ? N : K), tb ? K : N) ||
	    RT_LT(cublasLtMatrixLayoutCreate)(&c->lb, CUDA_R_32F, (uint64_t)(ta ? M : K),
					      (uint64_t)(ta ? K : M), ta ? M : K) ||
	    RT_LT(cublasLtMatrixLayoutCreate)(&c->lc, CUDA_R_32F, (uint64_t)N, (uint64_t)M, N))
		return snprintf(err, errlen, "matrix layouts"), -1;
	if (batch > 1 &&
	    (RT_LT(cublasLtMatrixLayoutSetAttribute)(c->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb,
						     sizeof(nb)) ||
	     RT_LT(cublasLtMatrixLayoutSetAttribute)(c->la,
						     CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
						     &sb, sizeof(sb)) ||
	     RT_LT(cublasLtMatrixLayoutSetAttribute)(c->lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb,
						     sizeof(nb)) ||
	     RT_LT(cublasLtMatrixLayoutSetAttribute)(c->lb,
						     CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
						     &sa, sizeof(sa)) ||
	     RT_LT(cublasLtMatrixLayoutSetAttribute)(c->lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb,
						     sizeof(nb)) ||
	     RT_LT(cublasLtMatrixLayoutSetAttribute)(c->lc,
						     CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
						     &stride_c, sizeof(stride_c))))
		return snprintf(err, errlen, "batch layouts"), -1;
	if (RT_LT(cublasLtMatmulPreferenceCreate)(&pref) ||
	    RT_LT(cublasLtMatmulPreferenceSetAttribute)(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
							&ws, sizeof(ws)) ||
	    RT_LT(cublasLtMatmulAlgoGetHeuristic)(rt_cublas.h, c->op, c->la, c->lb, c->lc, c->lc,
						  pref, 1, &res, &found) ||
	    found < 1) {
		if (pref)
			RT_LT(cublasLtMatmulPreferenceDestroy)(pref);
		return snprintf(err, errlen, "no cuBLASLt algorithm for %lldx%lldx%lld",
				(long long)M, (long long)N, (long long)K), -1;
	}
	RT_LT(cublasLtMatmulPreferenceDestroy)(pref);
	c->algo = res.algo;
	memcpy(c->key, key, sizeof(c->key));
	c->gen = rt_cublas.gen;
	c->next = rt_cublas.caches;
	rt_cublas.caches = c;
	return 0;
}

/*
 * y = alpha op(a) op(b) (+ bias over y's columns) (Relu when relu), batch
 * matrices sa and sb elements apart in a and b (0: the one matrix for all),
 * y's M * N apart. fa, fb, fbias, fy: each argument's RT_CU_* flags.
 */
static void rt_cublas_mm(struct rt_cublas_cache *cache, const char *name, const float *a,
			 const float *b, const float *bias, float *y, int64_t M, int64_t N,
			 int64_t K, int64_t batch, int64_t sa, int64_t sb, int64_t ta, int64_t tb,
			 float alpha, int64_t relu, int64_t fa, int64_t fb, int64_t fbias,
			 int64_t fy, int threads)
{
	int64_t key[10] = { M, N, K, batch, sa, sb, ta, tb, relu, bias != NULL };
	int64_t abytes = (batch > 1 && sa ? batch * sa : M * K) * 4;
	int64_t bbytes = (batch > 1 && sb ? batch * sb : K * N) * 4;
	int64_t ybytes = batch * M * N * 4;
	CUdeviceptr da, db, dbias = 0, dy;
	struct rt_cu_call c;
	char err[160];
	float beta = 0;
	CUresult r;

	(void)threads;
	if (M <= 0 || N <= 0 || batch <= 0)
		return;
	if (rt_cu_begin(&c, name) < 0)
		return;
	da = rt_cu_map(&c, 0, a, abytes, (int)fa, 1, &r);
	if (r == CUDA_SUCCESS)
		db = rt_cu_map(&c, 1, b, bbytes, (int)fb, 1, &r);
	if (r == CUDA_SUCCESS && bias)
		dbias = rt_cu_map(&c, 2, bias, N * 4, (int)fbias, 1, &r);
	if (r == CUDA_SUCCESS)
		dy = rt_cu_map(&c, 3, y, ybytes, (int)fy, 0, &r);
	if (r != CUDA_SUCCESS) {
		rt_cu_fail(name, "cublas arguments", r);
		return;
	}
	if ((!rt_cublas.h && rt_cublas_setup(err, sizeof(err)) < 0) ||
	    ((cache->gen != rt_cublas.gen || memcmp(cache->key, key, sizeof(key))) &&
	     rt_cublas_plan(cache, key, bias != NULL, (int)relu, dbias, err, sizeof(err)) < 0)) {
		rt_cu_fail(name, err, CUDA_ERROR_NOT_SUPPORTED);
		return;
	}
	/* the bias pointer is the call's (one plan for every run of these sizes) */
	if (bias)
		RT_LT(cublasLtMatmulDescSetAttribute)(cache->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
						      &dbias, sizeof(dbias));
	if (RT_LT(cublasLtMatmul)(rt_cublas.h, cache->op, &alpha, (const void *)db, cache->la,
				  (const void *)da, cache->lb, &beta, (void *)dy, cache->lc,
				  (void *)dy, cache->lc, &cache->algo, (void *)rt_cublas.ws,
				  RT_CUBLAS_WORKSPACE, (cudaStream_t)rt_cu.stream) !=
	    CUBLAS_STATUS_SUCCESS) {
		rt_cu_fail(name, "cublasLtMatmul", CUDA_ERROR_LAUNCH_FAILED);
		return;
	}
	if ((r = rt_cu_back(&c, 3, y, dy, ybytes, (int)fy)) != CUDA_SUCCESS) {
		rt_cu_fail(name, "cublas output", r);
		return;
	}
	rt_cu_end(&c);
}

#endif
