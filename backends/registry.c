/*
 * registry.c - the one static table of shipped target kinds.
 */
#include "backends.h"

const struct target_kind *const backend_registry[] = {
	&target_kind_c,
	&target_kind_lapack,
	&target_kind_blas,
	&target_kind_dnnl,
	&target_kind_opencl,
	&target_kind_cuda,
	&target_kind_cublas,
	&target_kind_cudnn,
};

const int backend_registry_count = (int)ARRAY_SIZE(backend_registry);
