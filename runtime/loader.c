/*
 * loader.c - dlopen + dlsym of the collagec.h API.
 */

#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dupf(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 8;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s", a, b);
	return s;
}

int model_lib_load(struct model_lib *lib, const char *path, char **err)
{
	char *p = strchr(path, '/') ? strdup(path) : dupf("./", path);

	memset(lib, 0, sizeof(*lib));
	/*
	 * RTLD_NODELETE: a model pulls in libgomp, whose globals own heap
	 * memory; unloading it at exit only makes that memory look leaked.
	 */
	lib->handle = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) : NULL;
	free(p);
	if (!lib->handle) {
		*err = dupf("cannot load the model: ", dlerror());
		return -1;
	}
#define SYM(field, name)                                                          \
	do {                                                                      \
		*(void **)&lib->field = dlsym(lib->handle, "collagec_" name);     \
		if (!lib->field) {                                                \
			*err = dupf("not a collagec model: missing collagec_", name); \
			dlclose(lib->handle);                                     \
			lib->handle = NULL;                                       \
			return -1;                                                \
		}                                                                 \
	} while (0)
	/* the version first: a model of another ABI may lack functions of this one */
	SYM(abi_version, "abi_version");
	if (lib->abi_version() != COLLAGEC_ABI_VERSION) {
		char buf[80];

		snprintf(buf, sizeof(buf), "%d, expected %d (compile it again)",
			 lib->abi_version(), COLLAGEC_ABI_VERSION);
		*err = dupf("model ABI version is ", buf);
		dlclose(lib->handle);
		lib->handle = NULL;
		return -1;
	}
	SYM(open, "open");
	SYM(close, "close");
	SYM(num_inputs, "num_inputs");
	SYM(num_outputs, "num_outputs");
	SYM(input_info, "input_info");
	SYM(output_info, "output_info");
	SYM(set_input, "set_input");
	SYM(run, "run");
	SYM(get_output, "get_output");
	SYM(set_threads, "set_threads");
	SYM(status_string, "status_string");
	SYM(last_error, "last_error");
	SYM(metadata, "metadata");
	SYM(num_kernels, "num_kernels");
	SYM(get_kernel_info, "get_kernel_info");
	SYM(set_profiling, "set_profiling");
#undef SYM
	return 0;
}

void model_lib_unload(struct model_lib *lib)
{
	if (lib->handle)
		dlclose(lib->handle);
	memset(lib, 0, sizeof(*lib));
}
