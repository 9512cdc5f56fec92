/*
 * pass_infer.c - dtype and shape inference, node by node in topological
 * order through each op's infer function, folding each node whose inputs are
 * constants right away (but DequantizeLinear, which the qdq pass reads
 * first), so computed shapes are known downstream, and giving
 * integer tensors computed from symbolic shapes their symbolic payloads
 * (ops_symval.c), so shapes computed from a symbolic batch stay symbolic
 * dims instead of unknowns. If, Loop and Scan are expanded here into their
 * sub-graphs' nodes, once their inputs are known (onnx_expand_control), and
 * sequence and optional nodes into nodes on their elements
 * (onnx_expand_sequence). A
 * node whose inputs are unknown because an earlier node failed is skipped,
 * so one mistake gives one error.
 */
#include "passes.h"
#include "../ops/ops.h"
#include "../onnx/onnx.h"

#include <string.h>

static bool inputs_known(struct graph *g, const struct node *n)
{
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = node_in(g, n, i);

		if (v && (!v->has_shape || v->dtype == DTYPE_UNDEF))
			return false;
	}
	return true;
}

static int check_size(struct graph *g, struct node *n)
{
	for (int i = 0; i < n->n_out; i++) {
		struct value *v = node_out(g, n, i);
		struct dim d;

		if (!v->has_shape)
			continue;
		/* data-dependent dims: the compiled model checks the size when it knows it */
		if (graph_shape_late(g, &v->shape) && !shape_numel(&v->shape, &d))
			continue;
		if (!shape_numel(&v->shape, &d) || d.c > DIM_LIMIT) {
			diag_error(g->ctx, "%s: output %d '%s' has more than %lld elements",
				   node_loc(g, n), i, v->name, (long long)DIM_LIMIT);
			return -1;
		}
	}
	return 0;
}

/*
 * The Where an If with a run-time condition became (or a Loop's guard of a
 * carried value) must not broadcast: the branches must agree in shape.
 */
static int check_select(struct graph *g, struct node *n)
{
	const struct value *a = node_in(g, n, 1), *b = node_in(g, n, 2);
	struct strbuf sa = STRBUF_INIT, sb = STRBUF_INIT;
	bool loop = !strcmp(n->op_type, "Loop");

	if (n->op != OP_WHERE || (strcmp(n->op_type, "If") && !loop) ||
	    (shape_eq(&a->shape, &b->shape) && shape_eq(&a->shape, &node_out(g, n, 0)->shape)))
		return 0;
	shape_print(g, &a->shape, &sa);
	shape_print(g, &b->shape, &sb);
	diag_error(g->ctx, loop ? "%s: loop-carried value '%s' changes shape from %s to %s while "
		   "the condition is computed at run time (not supported)"
		   : "%s: the branches give output '%s' the shapes %s and %s; with a condition "
		   "computed at run time both must be the same", node_loc(g, n),
		   node_out(g, n, 0)->name, loop ? sb_str(&sb) : sb_str(&sa),
		   loop ? sb_str(&sa) : sb_str(&sb));
	sb_release(&sa);
	sb_release(&sb);
	return -1;
}

/*
 * The ops that take 8-bit float and sub-byte tensors (dtype.def): the
 * casts and QuantizeLinear and DequantizeLinear, which convert them, and
 * ops that move elements unchanged (BitCast: bytes, of 8-bit floats only),
 * which copy their bytes.
 */
static bool takes_small(enum op op, enum dtype t)
{
	switch (op) {
	case OP_CAST: case OP_CASTLIKE: case OP_QUANTIZELINEAR: case OP_DEQUANTIZELINEAR:
	case OP_IDENTITY: case OP_RESHAPE: case OP_FLATTEN: case OP_SQUEEZE: case OP_UNSQUEEZE:
	case OP_TRANSPOSE: case OP_SHAPE: case OP_SIZE:
		return true;
	case OP_BITCAST:
		return !dtype_is_subbyte(t);
	default:
		return false;
	}
}

/* A node that is not one of those with an 8-bit float or sub-byte input or output: -1. */
static int check_small(struct graph *g, const struct node *n, bool outputs)
{
	int k = outputs ? n->n_out : n->n_in;

	for (int i = 0; i < k; i++) {
		int v = outputs ? n->out[i] : n->in[i];
		enum dtype t = v >= 0 ? g->values.v[v].dtype : DTYPE_UNDEF;

		if (v < 0 || !(dtype_is_float8(t) || dtype_is_subbyte(t)) || takes_small(n->op, t))
			continue;
		diag_error(g->ctx, "%s: %s '%s' is a%s %s tensor, which %s does not %s (only casts, "
			   "QuantizeLinear, DequantizeLinear and ops that move elements take %s)",
			   node_loc(g, n), outputs ? "output" : "input", g->values.v[v].name,
			   dtype_name(t)[0] == 'i' ? "n" : "",
			   dtype_name(t), n->op_type, outputs ? "make" : "take",
			   dtype_is_subbyte(t) ? "sub-byte types" : "8-bit floats");
		return -1;
	}
	return 0;
}

/* The ops that read or write string tensors (the others would compute on pointers). */
static bool takes_strings(enum op op)
{
	return op == OP_CAST || op == OP_CASTLIKE || op == OP_STRINGNORMALIZER ||
	       op == OP_STRINGCONCAT || op == OP_REGEXFULLMATCH || op == OP_STRINGSPLIT ||
	       op == OP_TFIDFVECTORIZER || op == OP_EQUAL || op == OP_LABELENCODER ||
	       op == OP_ARRAYFEATUREEXTRACTOR;
}

/*
 * A node that is not one of those with a string input (before inferring
 * it) or output (after): -1 and a diagnostic naming it.
 */
static int check_strings(struct graph *g, const struct node *n, bool outputs)
{
	int k = outputs ? n->n_out : n->n_in;

	if (takes_strings(n->op))
		return 0;
	for (int i = 0; i < k; i++) {
		int v = outputs ? n->out[i] : n->in[i];

		if (v >= 0 && dtype_is_string(g->values.v[v].dtype)) {
			diag_error(g->ctx, "%s: %s '%s' is a string tensor, which %s does not "
				   "%s", node_loc(g, n), outputs ? "output" : "input",
				   g->values.v[v].name, n->op_type, outputs ? "make" : "take");
			return -1;
		}
	}
	return 0;
}

static bool is_sequence_op(enum op op)
{
	switch (op) {
	case OP_SEQUENCECONSTRUCT: case OP_SEQUENCEEMPTY: case OP_SEQUENCEAT:
	case OP_SEQUENCEINSERT: case OP_SEQUENCEERASE: case OP_SEQUENCELENGTH:
	case OP_SPLITTOSEQUENCE: case OP_CONCATFROMSEQUENCE: case OP_OPTIONAL:
	case OP_OPTIONALHASELEMENT: case OP_OPTIONALGETELEMENT:
		return true;
	default:
		return false;
	}
}

/* The first input that is a sequence or optional, or -1. */
static int seq_input(struct graph *g, const struct node *n)
{
	for (int i = 0; i < n->n_in; i++)
		if (n->in[i] >= 0 && g->values.v[n->in[i]].seq)
			return i;
	return -1;
}

/* Node ni of a sequence (or optional): resolved into nodes on the elements. */
static int infer_sequence(struct graph *g, int ni)
{
	struct node *n = &g->nodes.v[ni];
	int k = seq_input(g, n);

	if (is_sequence_op(n->op) || (k >= 0 && (n->op == OP_IDENTITY || n->op == OP_WHERE)))
		return onnx_expand_sequence(g, ni);
	diag_error(g->ctx, "%s: input %d '%s' is a %s; only the sequence and optional ops take "
		   "one", node_loc(g, n), k, g->values.v[n->in[k]].name,
		   g->values.v[n->in[k]].seq->optional ? "optional" : "sequence");
	return -1;
}

static int infer_from(struct graph *g, int from)
{
	int rc = 0;

	for (int i = from; i < g->nodes.n; i++) {
		struct node *n = &g->nodes.v[i];

		if (n->dead || !inputs_known(g, n))
			continue;
		if ((n->op == OP_IF || n->op == OP_LOOP || n->op == OP_SCAN ||
		     n->op == OP_SEQUENCEMAP) && !node_attr(n, "call")) {
			/* the expansion follows it; the loop goes on with its first node */
			if (onnx_expand_control(g, i) < 0)
				rc = -1;
			continue;
		}
		if (is_sequence_op(n->op) || seq_input(g, n) >= 0) {
			if (infer_sequence(g, i) < 0)
				rc = -1;
			continue;
		}
		if (check_strings(g, n, false) < 0 || check_small(g, n, false) < 0 ||
		    op_info(n->op)->infer(g, n) < 0 || check_strings(g, n, true) < 0 ||
		    check_small(g, n, true) < 0 || check_size(g, n) < 0 ||
		    check_select(g, n) < 0)
			rc = -1;
		else if (symval_try(g, n) < 0)
			rc = -1;
		/*
		 * DequantizeLinear waits for the fold pass: the qdq pass needs
		 * the quantized weights (shapes never come from it)
		 */
		else if (n->op != OP_DEQUANTIZELINEAR && fold_try(g, n) < 0)
			rc = -1;
	}
	return rc;
}

int pass_infer(struct graph *g)
{
	int rc = infer_from(g, 0), tail = g->nodes.n;

	/* sequence outputs: one output per element, each an Identity to infer */
	if (rc == 0 && onnx_sequence_outputs(g) < 0)
		rc = -1;
	if (rc == 0 && infer_from(g, tail) < 0)
		rc = -1;
	graph_compact(g);
	return rc;
}
