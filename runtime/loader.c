/*
 * loader.c - dlopen + dlsym of the collagec.h API.
 */

#include "loader.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
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

/*
 * The prefix of a model compiled with --prefix: the NAME of the one exported
 * NAME_abi_version that comes with a NAME_run, found by reading the names in
 * the loaded object's dynamic string table. Writes it to lib->prefix; 0, or
 * -1 when there is none.
 */
static int find_prefix(struct model_lib *lib)
{
	struct link_map *lm;
	const char *str = NULL;
	size_t strsz = 0;
	static const char tail[] = "_abi_version";
	const size_t nt = sizeof(tail) - 1;

	if (dlinfo(lib->handle, RTLD_DI_LINKMAP, &lm) != 0)
		return -1;
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			str = (const char *)d->d_un.d_ptr;
		else if (d->d_tag == DT_STRSZ)
			strsz = d->d_un.d_val;
	}
	if (!str || !strsz)
		return -1;
	/* glibc relocates these entries on load; an address below the base was not */
	if ((uintptr_t)str < lm->l_addr)
		str += lm->l_addr;
	for (size_t off = 0, n; off < strsz; off += n + 1) {
		const char *s = str + off;
		char run[sizeof(lib->prefix) + 8];

		n = strnlen(s, strsz - off);
		if (n == strsz - off)
			break;	/* not terminated: not a string table after all */
		if (n <= nt || n - nt >= sizeof(lib->prefix) || strcmp(s + n - nt, tail))
			continue;
		snprintf(run, sizeof(run), "%.*s_run", (int)(n - nt), s);
		if (!dlsym(lib->handle, s) || !dlsym(lib->handle, run))
			continue;
		snprintf(lib->prefix, sizeof(lib->prefix), "%.*s", (int)(n - nt), s);
		return 0;
	}
	return -1;
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
		char sym_[sizeof(lib->prefix) + 24];                              \
		snprintf(sym_, sizeof(sym_), "%s_%s", lib->prefix, name);         \
		*(void **)&lib->field = dlsym(lib->handle, sym_);                 \
		if (!lib->field) {                                                \
			*err = dupf("not a collagec model: missing ", sym_);      \
			dlclose(lib->handle);                                     \
			lib->handle = NULL;                                       \
			return -1;                                                \
		}                                                                 \
	} while (0)
	/* compiled with --prefix: the API is PREFIX_open... */
	strcpy(lib->prefix, "collagec");
	if (!dlsym(lib->handle, "collagec_abi_version") && find_prefix(lib) < 0) {
		*err = dupf("not a collagec model: it exports no collagec_abi_version ",
			    "(nor PREFIX_abi_version with a PREFIX_run)");
		dlclose(lib->handle);
		lib->handle = NULL;
		return -1;
	}
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
	SYM(set_input_typed, "set_input_typed");
	SYM(run, "run");
	SYM(get_output, "get_output");
	SYM(bind_output, "bind_output");
	SYM(bind_cache, "bind_cache");
	SYM(output_sequence, "output_sequence");
	SYM(get_sequence_length, "get_sequence_length");
	SYM(get_sequence_element, "get_sequence_element");
	SYM(set_threads, "set_threads");
	SYM(get_threads, "get_threads");
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
