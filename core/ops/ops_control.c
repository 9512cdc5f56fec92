/*
 * ops_control.c - If, Loop and Scan (and the sequence ops of sequence.def,
 * which onnx_sequence.c resolves) in the op table. pass_infer expands them
 * into the nodes of their sub-graphs before it would infer them
 * (core/onnx/onnx_control.c), so reaching these functions is a bug, but
 * for a Loop or an If made a call of its compiled body or branches
 * (attribute "call", onnx_loop_call.c), whose outputs the call set and
 * whose kernel is the runtime's (rt_loop_kernel, runtime/rt_model.c).
 */
#include "ops.h"

int infer_control(struct graph *g, struct node *n)
{
	if ((n->op != OP_LOOP && n->op != OP_IF) || !node_attr(n, "call"))
		BUG("%s reached shape inference unexpanded", node_loc(g, n));
	for (int o = 0; o < n->n_out; o++)
		if (!node_out(g, n, o)->has_shape)
			BUG("%s: the loop call left output %d without a shape", node_loc(g, n), o);
	return 0;
}

int lower_control(struct lower *L)
{
	struct tir *loop;

	if ((L->n->op != OP_LOOP && L->n->op != OP_IF) || !node_attr(L->n, "call"))
		BUG("%s reached lowering unexpanded", node_loc(L->g, L->n));
	loop = tir_int(L->b, node_attr_int(L->n, "call", 0));
	tir_extern(L->b, "rt_loop_kernel", &loop, 1);
	return 0;
}
