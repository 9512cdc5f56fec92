/*
 * loader.h - loads a compiled model (.so) with dlopen and resolves its API,
 * for collagec's run, bench and conformance commands. A program of your own
 * can simply link the .so and call collagec.h directly. A model compiled
 * with --prefix NAME exports NAME_open...; the loader finds NAME itself.
 *
 *	struct model_lib lib;
 *	if (model_lib_load(&lib, "m.so", &err) < 0) ...
 *	lib.open(&m); ...; model_lib_unload(&lib);
 */
#ifndef COLLAGEC_LOADER_H
#define COLLAGEC_LOADER_H

#include "collagec.h"

struct model_lib {
	void *handle;
	char prefix[72];	/* "collagec", or the model's --prefix */
	collagec_status (*open)(collagec_model **);
	void (*close)(collagec_model *);
	int (*num_inputs)(const collagec_model *);
	int (*num_outputs)(const collagec_model *);
	collagec_status (*input_info)(const collagec_model *, int, collagec_tensor_info *);
	collagec_status (*output_info)(const collagec_model *, int, collagec_tensor_info *);
	collagec_status (*set_input)(collagec_model *, int, const void *, const int64_t *, int);
	collagec_status (*set_input_typed)(collagec_model *, int, int, const void *,
					   const int64_t *, int);
	collagec_status (*run)(collagec_model *);
	collagec_status (*get_output)(collagec_model *, int, const void **, const int64_t **,
				      int *);
	collagec_status (*bind_output)(collagec_model *, int, void *, int64_t);
	collagec_status (*bind_cache)(collagec_model *, int, int, void *, int64_t, int64_t);
	int (*output_sequence)(const collagec_model *, int);
	collagec_status (*get_sequence_length)(collagec_model *, int, int64_t *);
	collagec_status (*get_sequence_element)(collagec_model *, int, int64_t, const void **,
						const int64_t **, int *);
	collagec_status (*set_threads)(collagec_model *, int);
	int (*get_threads)(const collagec_model *);
	const char *(*status_string)(collagec_status);
	const char *(*last_error)(const collagec_model *);
	const char *(*metadata)(void);
	int (*abi_version)(void);
	int (*num_kernels)(const collagec_model *);
	collagec_status (*get_kernel_info)(const collagec_model *, int, collagec_kernel_info *);
	collagec_status (*set_profiling)(collagec_model *, int);
};

/* 0, or -1 with *err (owned). */
int model_lib_load(struct model_lib *lib, const char *path, char **err);
void model_lib_unload(struct model_lib *lib);

#endif
