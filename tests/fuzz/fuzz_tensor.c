/*
 * fuzz_tensor.c - the tensor readers `collagec run --input` and conformance
 * use: a TensorProto (.pb, with raw_data, typed fields, external data) or a
 * .npy file, from bytes.
 */
#include "../../core/onnx/onnx.h"
#include "fuzz.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host_tensor t;
	char path[32], *err = NULL;
	int fd = fuzz_file(data, size, path);

	if (fd < 0)
		return 0;
	if (host_tensor_read(path, &t, &err) == 0)
		host_tensor_free(&t);
	free(err);
	close(fd);
	return 0;
}
