/*
 * backends.h - the target kinds collagec ships, registered in
 * backends/registry.c. Only cli/ and backends/ include this header.
 */
#ifndef COLLAGEC_BACKENDS_H
#define COLLAGEC_BACKENDS_H

#include "../core/target/target.h"

extern const struct target_kind target_kind_c;
/* The c target's op strategies (c_strategies.c). */
extern const struct op_strategy *const c_strategies[];
extern const struct target_kind target_kind_lapack;
extern const struct target_kind target_kind_blas;
extern const struct target_kind target_kind_opencl;

/* All shipped kinds, in default preference order. */
extern const struct target_kind *const backend_registry[];
extern const int backend_registry_count;

#endif
