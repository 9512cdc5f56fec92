/*
 * host_cuda.h - what a model's kernels.cu needs to compile as host C++
 * (g++ -include host_cuda.h) for mock_cuda.c: CUDA's qualifiers made
 * empty, and the built-in thread indices as variables the launchers set.
 */
#include <math.h>
#include <stdint.h>

#define __global__
#define __device__
#define __forceinline__ inline

struct mock_dim3 {
	unsigned x, y, z;
};
static mock_dim3 blockIdx, blockDim, threadIdx, gridDim;
