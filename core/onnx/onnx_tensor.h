/*
 * onnx_tensor.h - TensorProto decoding, shared by the importer and the
 * tensor file reader. Internal to core/onnx.
 */
#ifndef COLLAGEC_ONNX_TENSOR_H
#define COLLAGEC_ONNX_TENSOR_H

#include "onnx.h"
#include "onnx.pb-c.h"

/*
 * Decodes t into ht (owned data). dir is where external-data paths are
 * relative to; g, when given, records the external files read (for
 * --depfile). 0, or -1 with *err (owned message).
 */
int onnx_tensor_decode(const Onnx__TensorProto *t, const char *dir, struct host_tensor *ht,
		       char **err, struct graph *g);

#endif
