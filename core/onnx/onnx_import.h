/*
 * onnx_import.h - the importer's state, shared by onnx_import.c (the model's
 * graph), onnx_function.c and onnx_node.c (its nodes) and onnx_control.c
 * (sub-graphs of If, Loop and Scan, imported when shape inference expands
 * them). Not used outside core/onnx/.
 *
 * Layers, each file calling only those before it, so that the calls
 * between the files of core/onnx/ make no circle: onnx_glue.c (glue nodes
 * and run-time sequence values); the importer: onnx_read.c, onnx_tensor.c,
 * onnx_captures.c and onnx_normalize.c, then onnx_node.c (one node), then
 * onnx_contrib.c (an ONNX Runtime contrib op decomposed into graph ops),
 * then onnx_function.c (a call of a model-local function inlined, its
 * body's nodes handed to onnx_contrib.c or onnx_node.c, and any other node
 * too), then onnx_import.c
 * (the model, and sub-graph bodies: each node through onnx_function.c);
 * then the stages pass_infer runs after import: run-time sequences
 * (onnx_seqrt.c), sequence lowering (onnx_sequence.c), and If/Loop/Scan
 * expansion (onnx_loop_call.c, onnx_control.c).
 *
 * A sub-graph is imported like the main graph into the same IR, with its own
 * scope: names resolve to the sub-graph's definitions first, then to the
 * outer values the control node captured; its values and nodes are named
 * PREFIX + ONNX name ("loop[2]/add"), so every copy of a body is distinct.
 */
#ifndef COLLAGEC_ONNX_IMPORT_H
#define COLLAGEC_ONNX_IMPORT_H

#include "onnx.h"
#include "onnx.pb-c.h"

struct importer {
	struct collagec_ctx *ctx;
	struct graph *g;
	struct strmap names;		/* ONNX tensor name in scope -> value id */
	const char *dir;		/* model directory, for external data */
	const char *base;		/* model file name, for messages */
	VEC(const Onnx__NodeProto *) protos;	/* the NodeProto of each node from node0 on */
	int node0;			/* the first node this import made */
	const char *prefix;		/* (optional) before names made in a sub-graph */
	const struct node *outer;	/* (optional) the control node being expanded */
	const char *const *elements;	/* --elements NAME=N|none: sequence and
					   optional graph inputs' element counts */
	int n_elements;
	const char *const *shapes;	/* --shape NAME=DIMS: the ranks of elements
					   whose type has no shape */
	int n_shapes;
	const char *sym_scope;		/* (optional) before the names of the dims
					   of a sequence input's element */
	const struct call *call;	/* (optional) the innermost function call being
					   inlined (onnx_function.c) */
};

/* ---- one node (onnx_node.c) ---- */

/*
 * The pieces of onnx_node.c that the rest of the importer uses: a name in
 * the importer's scope, a node's span (the control node's or the function
 * call's before its own), one node, a tensor as a constant, and the second
 * chance for inputs named before their producer (nodes without a proto in
 * im->protos, the inlined ones, are skipped).
 */
const char *import_scoped(struct importer *im, const char *name);
void import_span(struct importer *im, struct node *n, const char *raw);
int import_node(struct importer *im, const Onnx__NodeProto *np, int index);
int import_tensor(struct importer *im, const Onnx__TensorProto *t, const char *name,
		  const char *where);
int import_resolve_forward(struct importer *im);
/* Registers value v under the name key; a later definition wins. */
void import_bind(struct importer *im, const char *key, int v);

/* ---- ONNX Runtime's contrib ops (onnx_contrib.c) ---- */

/*
 * Whether node np is one onnx_contrib_import takes: any node of domain
 * com.microsoft, and the contrib ops ORT registers in the default domain
 * (SimplifiedLayerNormalization; LayerNormalization below opset 17).
 */
bool onnx_contrib_is(const struct graph *g, const Onnx__NodeProto *np);
/*
 * Imports contrib node np (index: its place in its graph) as graph ops,
 * named NAME/what with its span; its outputs take its output names. An
 * unknown op, or a form or attribute value not covered, is a diagnostic
 * naming the node. 0, or -1 after diagnostics.
 */
int onnx_contrib_import(struct importer *im, const Onnx__NodeProto *np, int index);

/* ---- model-local functions (onnx_function.c) ---- */

/*
 * Imports node np (index: its place in its graph or function): when it
 * calls a function of the model, that function's nodes inlined, named
 * CALL/inner with the call's span before their own, the function's outputs
 * taking the names of the call's; any other node by import_node. The
 * importer's walk over a graph calls it for each node, and it calls itself
 * for the nodes of a function's body. 0, or -1 after diagnostics.
 */
int onnx_function_import_node(struct importer *im, const Onnx__NodeProto *np, int index);

/* ---- the model (onnx_import.c) ---- */

/*
 * Imports a sub-graph's initializers and nodes (not its inputs and outputs,
 * which the caller binds and reads). 0, or -1 after diagnostics.
 */
int import_body(struct importer *im, const Onnx__GraphProto *gp);

/*
 * For the control node g->nodes.v[ni] just imported: the outer values its
 * sub-graphs read (free names, nested sub-graphs included) become extra
 * inputs after the ONNX ones, their names an attribute "captures", so the
 * node sorts after their producers (onnx_captures.c). 0, or -1 after a
 * diagnostic.
 */
int import_captures(struct importer *im, int ni);
/*
 * Makes Loop node ni (inputs M, cond, carried, captured: n_onnx ONNX
 * inputs, then caps) a call of its body compiled on its own, from
 * iteration iter0 on; outs[] are its outputs (carried, then scan), whose
 * dtypes and shapes it sets. carried[] are the ONNX carried values; with
 * ports (onnx_loop_ports), a carried sequence j is in ni's inputs and in
 * outs[] as the 2 or 3 tensors of its run-time form. 0, or -1 after
 * diagnostics.
 */
int onnx_loop_call(struct graph *g, int ni, const Onnx__GraphProto *body, int n_onnx,
		   const struct attr *caps, const int *carried, const struct seq_port *ports,
		   int64_t iter0, int *outs);
/*
 * The ports of the carried sequences of Loop node n (a copy; inputs M,
 * cond, carried, caps; n_onnx ONNX inputs) that onnx_loop_call will make a
 * call, ports[j].name NULL for a tensor: the body is probed until each
 * port has the columns and dtype its elements need. *ports NULL when no
 * carried value is a sequence. 0, or -1 after diagnostics.
 */
int onnx_loop_ports(struct graph *g, const struct node *n, const Onnx__GraphProto *body,
		    int n_onnx, const struct attr *caps, const int *carried,
		    struct seq_port **ports);
/*
 * An If decided at run time (node n, being expanded; inputs cond, then
 * caps): 1 when its branches agree on every output's shape (select between
 * both), else its branches compiled on their own as graph.loops *call and
 * *call + 1 and n's outputs' shapes set (0), or -1 after diagnostics.
 */
int onnx_if_call(struct graph *g, const struct node *n, const Onnx__GraphProto *tb,
		 const Onnx__GraphProto *eb, const struct attr *caps, int *call);

/* ---- sequences of run-time length (onnx_seqrt.c) ---- */

/* The run-time sequence port of g named name, or NULL (onnx_import.c). */
const struct seq_port *onnx_port(const struct graph *g, const char *name, bool output);
/*
 * Whether sequence node n needs the run-time form: an input has it, or an
 * If's select chooses between sequences of different lengths.
 */
bool seqrt_wanted(struct graph *g, const struct node *n);
/* Resolves sequence node n (a copy) on run-time sequences. 0, or -1 after a diagnostic. */
int seqrt_resolve(struct graph *g, const struct node *n);
/*
 * Sequence value v in its run-time form, with at least rank columns (and
 * mixed when asked), into *out; nodes it needs are parent's. An empty one
 * takes dtype elem (DTYPE_UNDEF: its own). 0, or -1
 * after a diagnostic.
 */
int seqrt_pack(struct graph *g, const struct node *parent, int v, int rank, bool mixed,
	       enum dtype elem, const char *what, struct seq *out);
/* ---- glue (onnx_glue.c): made alike by the importer and the stages after it ---- */

/*
 * Makes value v a sequence (or optional) like `like` (copied, arena):
 * its dtype that of the elements (float32 for an empty one), rank 0.
 */
struct seq *onnx_seq_new(struct graph *g, int v, const struct seq *like);
/* Makes value v the run-time sequence like `like` with these tensors. */
void seqrt_set(struct graph *g, int v, const struct seq *like, int present, int data, int dims);
/* Graph input port p: its tensor inputs, and the sequence value they make (returned). */
int seqrt_input(struct graph *g, const struct seq_port *p);
/*
 * Graph output v (a sequence) named name in its run-time form: its tensors
 * become outputs NAME.data, NAME.dims, NAME.present, at least p's rank when
 * p is given. 0, or -1 after a diagnostic.
 */
int seqrt_output(struct graph *g, int v, const char *name, const struct seq_port *p);

/*
 * (onnx_glue.c) Adds a node that expanding parent (an If/Loop/Scan or a sequence op)
 * needs, named "PARENT/what", with parent's span, writing out (a new value
 * of that name when out < 0). Returns its output.
 */
int onnx_glue(struct graph *g, const struct node *parent, enum op op, const char *type,
	      const char *what, const int *in, int n_in, int out);

/* Rewrites one node's older-opset attribute forms (see onnx_normalize). */
void onnx_normalize_node(struct graph *g, struct node *n);

/*
 * Reads the model file at path and unpacks it with alloc (onnx_read.c): the
 * weights of the main graph's initializers (raw_data) read into arena
 * buffers of their own, the file never held in memory beside them. 0 with
 * *mp the model, or NULL when the file is no ModelProto; -1 with errno set
 * when the file cannot be read.
 */
int onnx_read_model(struct collagec_ctx *ctx, ProtobufCAllocator *alloc, const char *path,
		    Onnx__ModelProto **mp);

#endif
