/*
 * backends.h - the target kinds collagec ships, registered in
 * backends/registry.c. Only cli/ and backends/ include this header.
 */
#ifndef COLLAGEC_BACKENDS_H
#define COLLAGEC_BACKENDS_H

#include "../core/target/target.h"

extern const struct target_kind target_kind_c;
/*
 * Prints kernel k (its variants and dispatcher, if any) as C functions with
 * the executor's kernel ABI, in dialect d: for targets whose kernels are
 * plain C around library calls.
 */
struct tir_dialect;
void c_print_kernel(const struct kernel *k, const struct tir_dialect *d, struct strbuf *sb);
/*
 * Sets d's OpenMP pragma and condition (tir_dialect.parallel_fmt,
 * parallel_if_fmt) for parallel loop nests: on nt threads, or with nt 0 on
 * the kernel's run-time `threads`; small nests run serially.
 */
void c_parallel_dialect(struct arena *a, int64_t nt, struct tir_dialect *d);
/*
 * The parallel step of the kinds printed as C with OpenMP (c, blas): regions
 * for the parallel loop nests of p's kernels, a nest whose work is known at
 * compile time to be too small running serially (tir_plan_parallel). 0.
 */
int c_plan_parallel(struct graph *g, const struct target *t, struct partition *p);
/* The c target's op strategies (c_strategies.c). */
extern const struct op_strategy *const c_strategies[];
/* The c target's QLinearConvs that take 8-bit values channels-last (target_kind.q8_cl_*). */
int c_q8_cl_writes(struct graph *g, const struct partition *p);
bool c_q8_cl_reads(struct graph *g, const struct partition *p, const struct node *n, int slot,
		   int v);
extern const struct target_kind target_kind_lapack;
extern const struct target_kind target_kind_blas;
extern const struct target_kind target_kind_dnnl;
extern const struct target_kind target_kind_opencl;
/* The opencl target's op strategies: register-tiled MatMul, Gemm, Conv. */
extern const struct op_strategy *const opencl_strategies[];
extern const struct target_kind target_kind_cuda;
extern const struct target_kind target_kind_cublas;
extern const struct target_kind target_kind_cudnn;
/*
 * What the CUDA kinds share (cuda_target.c): why they cannot compile here
 * (no nvcc or cuda.h) and why they cannot run (no GPU), or NULL; CUDA's
 * include directory; whether kind k's values live in the cuda device
 * memory (cuda, cublas), so that they cross no host between them.
 */
const char *cuda_unavailable(void);
const char *cuda_cannot_run(void);
const char *cuda_include_dir(void);
bool cuda_shares_memory(const struct target_kind *k);
/*
 * tir_to_runtime of a library target on cuda's device memory (cublas,
 * cudnn): p's kernels printed as calls of rt_file's helpers, each kernel
 * with a static cache of type state_type, after the prelude rt_cuda.h and
 * rt_file, with cuda's init, fini and sync. 0 or -1.
 */
/*
 * The flags of a library call's arguments vals[0..n) (value ids, -1 for
 * none: 0), the first n_in inputs, as loop-IR constants appended to args
 * (devloop_arg_flags over the CUDA kinds), for cublas and cudnn (whose
 * kernels libcall_kernel_done finishes).
 */
struct tir_builder;
int cuda_flag_args(struct tir_builder *b, struct graph *g, const int *vals, int n, int n_in,
		   struct tir **args);
int cuda_library_module(struct graph *g, const struct target *t, struct partition *p,
			struct runtime_module *m, const char *rt_file, const char *state_type);

/* All shipped kinds, in default preference order. */
extern const struct target_kind *const backend_registry[];
extern const int backend_registry_count;

#endif
