/*
 * fuzz_pattern.c - the pattern-file parser (--patterns FILE) from bytes,
 * against the real target registry.
 */
#include "../../core/collage/pattern.h"
#include "../../backends/backends.h"
#include "fuzz.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct collagec_ctx ctx;
	struct pattern_set set = { { 0 } };
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	ctx_init(&ctx);
	ctx.diag_out = fuzz_null();
	pattern_parse(&ctx, "fuzz.pat", text, backend_registry, backend_registry_count, &set);
	pattern_set_release(&set);
	ctx_release(&ctx);
	free(text);
	return 0;
}
