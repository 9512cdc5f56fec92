/*
 * onnx.h - reading ONNX: models into the graph IR (protobuf-c, onnx.proto
 * from Debian's libonnx-dev), opset normalisation, and single tensors
 * (TensorProto .pb and NumPy .npy files) for run/check/conformance.
 *
 * Import reports every problem it finds (unknown ops, undefined inputs, bad
 * tensors) before giving up, each naming the ONNX node or tensor.
 *
 *	struct graph *g = onnx_import(ctx, "m.onnx");
 *	if (!g) return ctx->status;
 */
#ifndef COLLAGEC_ONNX_H
#define COLLAGEC_ONNX_H

#include "../ir/ir.h"

/* The newest default-domain opset the importer accepts. */
#define ONNX_OPSET_MAX 28
#define ONNX_ML_OPSET_MAX 5	/* ai.onnx.ml */

/* The graph (owned: graph_free) or NULL after diagnostics. */
struct graph *onnx_import(struct collagec_ctx *ctx, const char *path);
/*
 * onnx_import, with the element counts of sequence and optional graph
 * inputs (elements: "NAME=N" or "NAME=none") and the --shape bindings that
 * give the ranks of elements whose type has no shape. Such an input becomes
 * one tensor input per element, "NAME[i]" (an optional tensor's is "NAME").
 * body: the model is a run-time loop's body that onnx_loop_call.c wrote,
 * whose metadata "collagec.sequence" names the sequences it takes and gives
 * at run time (struct seq_port); in any other model that key means nothing.
 */
struct graph *onnx_import_bound(struct collagec_ctx *ctx, const char *path,
				const char *const *elements, int n_elements,
				const char *const *shapes, int n_shapes, bool body);
/* Resolves sequence/optional node ni into nodes on the elements (pass_infer). */
int onnx_expand_sequence(struct graph *g, int ni);
/* Replaces sequence and optional graph outputs by one output per element. */
int onnx_sequence_outputs(struct graph *g);

/* Name of an ONNX TensorProto.DataType code ("string", "float16"), "unknown" if none. */
const char *onnx_type_name(int onnx_type);

/*
 * Expands the If, Loop or Scan node g->nodes.v[ni], whose inputs are
 * inferred, into the nodes of its sub-graphs (onnx_control.c), put right
 * after it; the node itself dies. 0, or -1 after diagnostics naming the node
 * (and the sub-graph node at fault).
 */
int onnx_expand_control(struct graph *g, int ni);

/* Rewrites attribute forms of older opsets into the newest input form. */
int onnx_normalize(struct graph *g);

/* A dense host tensor, used by run/bench/conformance. */
struct host_tensor {
	char *name;		/* owned; may be NULL */
	enum dtype dtype;
	int rank;
	int64_t dims[MAX_RANK];
	void *data;		/* owned, numel * dtype_size bytes; a string tensor's
				   block holds its numel pointers, then the strings
				   they point to (one allocation: host_tensor_free) */
	size_t bytes;		/* numel * dtype_size (a string tensor: the pointers) */
	bool mapped;		/* data points into external data mapped for the
				   graph decoded with (graph_add_map), not owned */
};

/* Reads a TensorProto .pb or a .npy file (by contents). 0, or -1 with *err (owned). */
int host_tensor_read(const char *path, struct host_tensor *t, char **err);
/* Writes t as .npy when path ends in ".npy", else as a TensorProto .pb. */
int host_tensor_write(const char *path, const struct host_tensor *t, char **err);
void host_tensor_free(struct host_tensor *t);
int64_t host_tensor_numel(const struct host_tensor *t);
/*
 * Reads a SequenceProto or OptionalProto file: its tensors in order, nested
 * sequences flattened, into *t (owned: host_tensor_free each, then free).
 * *present: an element is there (an empty optional has none; a sequence's
 * element of any kind counts). -1 with *err (owned) on failure.
 */
int host_elements_read(const char *path, struct host_tensor **t, int *n, bool *present,
		       char **err);

#endif
