/*
 * fuzz_compile.c - the whole compile of an ONNX model from bytes: import,
 * passes, partitioning on c, lowering, memory plan and model.c, stopping
 * before the C compiler (compile_options.emit_only). Any input must end in
 * success or diagnostics, never a crash, a sanitizer report or a leak.
 */
#include "../../core/compile.h"
#include "../../backends/backends.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct collagec_ctx ctx;
	struct compile_options o = { 0 };
	char path[32];
	int fd = fuzz_file(data, size, path);

	if (fd < 0)
		return 0;
	ctx_init(&ctx);
	ctx.diag_out = fuzz_null();
	ctx.quiet = true;
	o.model = path;
	o.out = "/nonexistent/fuzz.so";
	o.targets = "c";
	o.search = "none";
	o.cpu = "x86-64-v3";		/* no C compiler run to resolve native */
	o.no_cache = true;
	o.emit_only = true;
	o.kinds = backend_registry;
	o.n_kinds = backend_registry_count;
	collagec_compile(&ctx, &o, NULL);
	ctx_release(&ctx);
	close(fd);
	return 0;
}
