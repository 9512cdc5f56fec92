/*
 * ops_control.c - If, Loop and Scan (and the sequence ops of sequence.def,
 * which onnx_sequence.c resolves) in the op table. pass_infer expands them
 * into the nodes of their sub-graphs before it would infer them
 * (core/onnx/onnx_control.c), so reaching these functions is a bug.
 */
#include "ops.h"

int infer_control(struct graph *g, struct node *n)
{
	BUG("%s reached shape inference unexpanded", node_loc(g, n));
}

int lower_control(struct lower *L)
{
	BUG("%s reached lowering unexpanded", node_loc(L->g, L->n));
}
