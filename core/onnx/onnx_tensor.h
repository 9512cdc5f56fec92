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
 * relative to; g, when given (the importer), records the external files
 * read (for --depfile), and raw_data is not copied: ht->data is then
 * t->raw_data.data itself (borrowed: the caller frees only what differs
 * from it). 0, or -1 with *err (owned message).
 */
int onnx_tensor_decode(const Onnx__TensorProto *t, const char *dir, struct host_tensor *ht,
		       char **err, struct graph *g);

#endif
