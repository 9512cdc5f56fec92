/*
 * ir.h - the graph IR: values (tensors), nodes (ops), attributes, spans and
 * symbolic shapes. Everything lives in the context's arena.
 *
 * Invariants (checked by graph_verify):
 *  - g->nodes is in topological order once import finished; passes that add
 *    nodes call graph_toposort() before returning.
 *  - every live node's inputs are values that are graph inputs, constants or
 *    outputs of an earlier live node; optional inputs that are absent are -1.
 *  - a value has at most one producer (value.producer, -1 for inputs and
 *    constants).
 *  - a dimension is c * s1 * s2 ... (c > 0, symbols sorted); a constant
 *    dimension has no symbols.
 *  - a value with a symbolic payload (value.sym) is an int64/int32/bool
 *    tensor of static shape and at most SYMVAL_MAX elements, computed by a
 *    live node from shapes; its elements are c * s1 * ... with any sign of c
 *    and never all constant (those become constants: value.data).
 *
 *	struct graph *g = onnx_import(ctx, "model.onnx");
 *	shape_infer(g);
 *	for (int i = 0; i < g->nodes.n; i++)
 *		if (!g->nodes.v[i].dead) graph_print_node(g, &g->nodes.v[i], stdout);
 */
#ifndef COLLAGEC_IR_H
#define COLLAGEC_IR_H

#include "../ctx.h"
#include "../base/types.h"

/* ---- attributes ---- */

enum attr_kind {
	ATTR_INT,
	ATTR_FLOAT,
	ATTR_STRING,
	ATTR_INTS,
	ATTR_FLOATS,
	ATTR_STRINGS,
	ATTR_TENSOR,
	ATTR_GRAPH,
	ATTR_TYPE,
	ATTR_KIND_COUNT
};

struct attr {
	const char *name;
	enum attr_kind kind;
	int64_t i;		/* ATTR_INT */
	double f;		/* ATTR_FLOAT */
	const char *s;		/* ATTR_STRING */
	int n;			/* count for the list kinds */
	int64_t *ints;		/* ATTR_INTS */
	double *floats;		/* ATTR_FLOATS */
	const char **strs;	/* ATTR_STRINGS */
	int tensor;		/* ATTR_TENSOR: constant value id */
	const void *graph;	/* ATTR_GRAPH: its Onnx__GraphProto (arena), which
				   onnx_expand_control imports;
				   ATTR_TYPE: its Onnx__TypeProto (arena) */
};

/* ---- ops ---- */

enum op {
#define OP(id, name, kind, infer, lower) OP_##id,
#include "../ops/ops.def"
#undef OP
	OP_COUNT
};

/* ---- values and nodes ---- */

enum value_flags {
	VALUE_INPUT = 1 << 0,	/* a graph input fed by the user */
	VALUE_OUTPUT = 1 << 1,	/* a graph output */
	VALUE_MIXED = 1 << 2,	/* the dims of a run-time sequence whose elements
				   may have fewer dims than it has columns */
	VALUE_SEQ = 1 << 3,	/* a graph output: the data of a run-time sequence,
				   whose dims are the next output */
	VALUE_SEQ_OPT = 1 << 4,	/* ... of an optional, whose presence follows */
};

/*
 * A sequence or optional whose element count is known when compiling: its
 * elements are plain values. Only pass_infer sees one: the sequence ops
 * resolve into their elements' nodes (onnx_sequence.c), graph inputs and
 * outputs into one tensor per element. Immutable once made (arena).
 *
 * A sequence that a Loop or If decided at run time carries or gives has
 * its run-time form instead (rt, onnx_seqrt.c): two tensors, its elements'
 * data flattened one after the other and their dims, one row each; an
 * optional of a sequence adds a bool presence scalar. A row of an element
 * with fewer dims than the sequence has columns begins with -1s (mixed).
 */
struct seq {
	int n;			/* elements; an optional's is 0 (none) or 1 */
	int *elems;		/* their value ids (arena) */
	bool optional;		/* an optional (its element may be a sequence) */
	enum dtype elem;	/* the element type (an empty one's too) */
	/* ---- the run-time form: n and elems unused ---- */
	bool rt;
	int data;		/* 1-D, dtype elem: every element's data */
	int dims;		/* int64 [len, rank]: every element's dims */
	int present;		/* an optional's bool scalar, else -1 */
	int rank;		/* dims's columns */
	bool any_rank;		/* no element has been seen (an empty sequence
				   widened): a wider element mixes nothing */
	bool mixed;		/* rows may begin with -1s */
};

struct value {
	const char *name;	/* ONNX tensor name (arena) */
	enum dtype dtype;	/* DTYPE_UNDEF until inferred */
	struct shape shape;
	bool has_shape;		/* shape known */
	void *data;		/* constant payload (arena) or NULL */
	struct dim *sym;	/* symbolic payload (arena) or NULL: the elements as
				   c * product of symbols (shape arithmetic) */
	int producer;		/* node index or -1 */
	unsigned flags;		/* enum value_flags */
	struct seq *seq;	/* a sequence or optional (arena), or NULL: a tensor */
	int layout;		/* 0: plain (what every target reads); else a
				   layout of the target that set it in its
				   plan_layouts (layout_kind), between its own
				   kernels, or to kernels that do not depend
				   on the elements' order (c's elementwise
				   maps over one shape); LAYOUT_Q8_CL on an
				   8-bit value: channels-last */
	const struct target_kind *layout_kind;	/* whose layout: set by lower_plan_layouts */
	int64_t store_c;	/* 0; else the channels (dim 1, constant) its
				   storage holds, more than the shape's where
				   the layout pads them (plan_layouts) */
};

/*
 * value.layout of an 8-bit value handed over channels-last ([N, H, W, C]),
 * layout_kind its writer's kind (core/emit/q8layout.c).
 */
#define LAYOUT_Q8_CL 1

struct node {
	enum op op;
	const char *name;	/* ONNX node name, or "<OpType>_<index>" when empty */
	const char *op_type;	/* ONNX op type as written */
	int onnx_index;		/* position in the ONNX graph, for messages */
	int n_in, n_out;
	int *in, *out;		/* value ids; -1 for an absent optional input */
	int n_attrs;
	struct attr *attrs;
	struct span span;
	bool dead;		/* removed by a pass */
};

/*
 * A condition on symbols that compiling assumed and the compiled model
 * checks once the symbols are bound: a <= b (a Slice end computed from
 * seq on a constant axis of 32 assumes seq <= 32), or a == b (a Reshape of
 * [seq, batch, 128] to [16, 4*batch, 32] assumes 128*seq*batch ==
 * 2048*batch).
 */
struct sym_check {
	struct dim a, b;
	const char *node;	/* the ONNX node that assumes it (arena) */
	bool eq;		/* a == b rather than a <= b */
};

/*
 * A derived symbol: a value that shape arithmetic computes from symbols
 * but that is not a constant times a product of them (seq - 1, N / 2) gets
 * a symbol of its own, which the compiled model computes from the symbols
 * its inputs bind, in graph.sym_defs order, as op(a, b). It must not be
 * negative at run time.
 */
enum sym_op {
	SYM_ADD,	/* a + b */
	SYM_DIV,	/* a / b (b > 0; floor, as a and b are not negative) */
	SYM_MOD,	/* a % b */
	SYM_MIN,	/* min(a, b) */
	SYM_MAX,	/* max(a, b) */
	SYM_OP_COUNT
};

struct sym_def {
	int sym;		/* its graph.syms index */
	enum sym_op op;
	struct dim a, b;	/* over earlier symbols */
};

/*
 * Where the size that the search measures a symbol at came from
 * (cost_tune_shapes, core/cost/tune.c): the symbols graph inputs bind take
 * a size --tune-shape names or a default one; the rest follow from them.
 */
enum tune_from {
	TUNE_FROM_OTHERS,	/* derived from the others (data symbols and
				   symbols no input binds: 1) */
	TUNE_FROM_DEFAULT,	/* the default size */
	TUNE_FROM_OPTION,	/* named by --tune-shape */
	TUNE_FROM_COUNT
};

struct sym_tune {
	int64_t size;		/* >= 0 */
	int64_t wide;		/* the size at the second measurement
				   (graph.tune_wide), else size */
	enum tune_from from;
};

/*
 * What a pass did to an ONNX node that no live node's span names any more
 * (into == NULL: removed, as constant or dead code or a no-op) or whose span
 * another node took over (into: that node's name). graph_compact records
 * them as passes drop dead nodes, import its Constant nodes; OUT.json lists
 * them ("passes"), explain shows them.
 */
struct node_fate {
	const char *name, *op_type;	/* the ONNX node */
	const char *pass;		/* the pass's name */
	const char *into;		/* the node that took its span, or NULL */
};

/*
 * A data symbol: dimension `dim` of value `value`, which depends on tensor
 * values (Reshape to a computed shape, NonZero's count) and so is known only
 * when the value's producer runs. The compiled model binds it then, by the
 * producer's run-time shape function (runtime/rt_shape.c); values whose dims
 * mention it are allocated at that point rather than planned.
 */
struct sym_data {
	int sym;		/* its graph.syms index */
	int value;		/* the value whose dim it is */
	int dim;		/* -1: a parameter of its producer's kernel instead
				   (graph_data_param), not a dim */
};

/*
 * A Loop whose trip count or condition is only known at run time, compiled
 * as a model of its own (onnx_loop_call.c): its body, written out as an ONNX
 * model, becomes an archive with API prefix `prefix`, linked into the
 * outer model, whose runtime calls it once per iteration (rt_model.c). The
 * Loop node stays in the graph with attribute "call" = its index in
 * graph.loops. An If decided at run time whose branches give different
 * shapes is called the same way: two entries, the branch the condition
 * takes run once.
 */
struct loop_out {
	enum dtype dtype;
	int rank;
	int64_t c[MAX_RANK];		/* static dims (-1: symbolic, -2: data-dependent) */
	const char *sym[MAX_RANK];	/* a symbol the body's inputs bind, by name;
					   NULL where static or data-dependent */
	bool mixed;			/* a run-time sequence's dims (VALUE_MIXED) */
};

/*
 * A sequence that a body compiled on its own takes or gives in its
 * run-time form (struct seq): the body model's metadata_props
 * "collagec.sequence" name it, "in|out NAME DTYPE RANK FLAGS" (flags: o
 * optional, a any_rank, m mixed, - none), and the importer and
 * onnx_sequence_outputs turn it into its tensors "NAME.data", "NAME.dims"
 * and "NAME.present" (an optional's), in that order.
 */
struct seq_port {
	const char *name;
	bool output;
	bool optional;
	enum dtype elem;
	int rank;
	bool any_rank, mixed;
};

struct loop_body {
	int kind;			/* 0 a Loop's body, 1 an If's then branch (2 its
					   else branch follows in graph.loops) */
	const char *dir;		/* temp directory of both files (arena) */
	const char *model;		/* the body as an ONNX model */
	const char *prefix;		/* its API names' prefix */
	const char *archive;		/* its compiled archive (NULL: emit only) */
	const char *ldlibs;		/* the link flags it needs (arena) */
	int n_carried, n_scan;		/* loop-carried values and scan outputs */
	int n_caps;			/* captured values it takes as inputs */
	int *caps;			/* their indices among the node's captures */
	unsigned *grow;			/* per carried value: the dims (bits) the body
					   changes, symbolic in its input; NULL: none */
	int64_t iter0;			/* iterations unrolled before it */
	int n_out;			/* the body's outputs: cond, carried, scans */
	struct loop_out *outs;
};

/* A constant lowering made from another (graph_derived_const). */
struct derived_const {
	const void *src;		/* the constant it is made from (borrowed) */
	const char *kind;		/* how: "winograd", "cgemm.pack" (static text) */
	int64_t params[6];		/* and with what */
	size_t bytes;
	void *data;			/* owned by the graph */
	const char *rt_fn;		/* (optional) the compiled model's function
					   that makes it at open from src (static
					   text; graph_derived_open) */
	/* (optional) what fills data once the blob needs it (graph_derived_lazy) */
	void (*fill)(void *data, const void *src, const int64_t *params);
};

/* A mapping of a file that constants point into (graph_add_map). */
struct graph_map {
	void *base;
	size_t len;
};

struct graph {
	struct collagec_ctx *ctx;
	struct arena *arena;		/* &ctx->arena, or a scratch graph's &own */
	struct arena own;		/* a scratch graph's arena (graph_new_scratch) */
	VEC(struct value) values;
	VEC(struct node) nodes;
	VEC(int) inputs;		/* value ids, ONNX order */
	VEC(int) outputs;		/* value ids, ONNX order */
	VEC(const char *) syms;		/* symbolic dim names */
	VEC(struct sym_check) checks;	/* checked at run time, in order */
	VEC(struct sym_def) sym_defs;	/* derived symbols, computed in order */
	VEC(struct sym_data) sym_data;	/* data symbols, bound by run-time shape functions */
	struct sym_tune *tune;		/* per symbol: the size candidates are measured
					   at (arena); NULL: every symbol at 1 */
	int64_t tune_wide;		/* > 1: candidates are measured again with
					   each defaulted batch at this size
					   (tune.wide), a cost being the time at
					   tune.size plus 1/tune_wide of the time
					   there; 0: once */
	bool at_wide;			/* cost_dim_at reads tune.wide, not size */
	/*
	 * The --cpu level the code is for (compile.c): NULL or "native", this
	 * host; any other level, any host of it, so that a library which
	 * picks its instructions when it runs (oneDNN) may meet less than
	 * this host has (graph_host_cpu).
	 */
	const char *cpu;
	int64_t opset;			/* default-domain opset of the model; 0: none */
	int64_t training_opset;		/* ai.onnx.preview.training opset; 0: none */
	int64_t ml_opset;		/* ai.onnx.ml opset; 0: none */
	const char *producer;		/* producer_name + version */
	const char *name;		/* graph name */
	const char *path;		/* model path */
	VEC(const char *) files;	/* files read: model and external data */
	VEC(struct graph_map) maps;	/* external data mapped for constants,
					   unmapped with the graph */
	/* the model's local functions (Onnx__FunctionProto, arena), inlined at
	   each call by the importer, in sub-graphs too (onnx_function.c) */
	const void *const *functions;
	int n_functions;
	/* c kernels printed so far: code (names replaced) -> kernel_syms index */
	struct strmap kernel_texts;
	VEC(const char *) kernel_syms;
	VEC(struct node_fate) fates;	/* in pass order */
	const char *pass;		/* the pass running (passes_run), or NULL */
	VEC(struct loop_body) loops;	/* run-time loops (onnx_loop_call.c) */
	bool call_loops;		/* run-time loops become calls (the compile
					   driver compiles g->loops after passes);
					   false: they are refused */
	/*
	 * Probes: shape inference needs a run-time loop's outputs (what its
	 * body, imported and inferred on its own, gives) before it can go on.
	 * It takes them from probes, which the driver made in the order
	 * inference asked for them (n_probes_asked so far); the first one it
	 * asks for beyond those becomes probe_wanted and stops inference. The
	 * driver then probes that body and imports the model again.
	 */
	const struct loop_body *probes;	/* (arena, borrowed) the driver's probes */
	int n_probes;
	int n_probes_asked;
	struct loop_body *probe_wanted;	/* (arena) or NULL; its dir is the driver's */
	const char *loop_prefix;	/* before "_loopN" in the bodies' API prefixes */
	VEC(struct seq_port) ports;	/* run-time sequences the body takes and gives */
	VEC(struct derived_const) derived;	/* what lowering made from constants */
	/*
	 * While lower_partitions runs: every partition of the model (borrowed),
	 * so that a target's tir_to_runtime can see where the nodes around its
	 * own run (opencl keeps values on its device between its partitions).
	 */
	const struct partition *lowering;
	int n_lowering;
};

struct graph *graph_new(struct collagec_ctx *ctx);
/*
 * Whether g's compiled model runs on this host's CPU (--cpu native), so
 * that what this host's CPU has (VNNI) may decide placement.
 */
bool graph_host_cpu(const struct graph *g);
/*
 * A graph with an arena of its own, which graph_free releases: for a graph
 * made, lowered and dropped many times in one compile (a bench model per
 * batch of candidates), so that what its lowering allocates does not pile
 * up in the compile's arena. What it allocates is gone with it.
 */
struct graph *graph_new_scratch(struct collagec_ctx *ctx);
/* The heap vectors, derived constants and a scratch graph's arena; ctx's arena stays. */
void graph_free(struct graph *g);
int graph_add_value(struct graph *g, const char *name);
/* Adds a constant value owning a copy of data (arena; a string tensor's strings too). */
int graph_add_const(struct graph *g, const char *name, enum dtype t, const struct shape *s,
		    const void *data);
/*
 * Adds a constant value whose data is data itself, not a copy: a buffer of
 * numel * dtype_size bytes, at least 16-byte aligned, that lives as long as
 * the graph (the arena's) and that no one writes once it is a constant. Big
 * weights go this way, so that each is held once. Not for string tensors.
 */
/* Unmaps [base, base + len) when g is freed: constants point into it. */
void graph_add_map(struct graph *g, void *base, size_t len);

int graph_adopt_const(struct graph *g, const char *name, enum dtype t, const struct shape *s,
		      void *data);
/*
 * The buffer (bytes, 16-byte aligned) of a constant that lowering derives
 * from constant data src by kind with params (Winograd-transformed or
 * packed weights): one buffer per (src, kind, params) and graph, so that a
 * weight lowered again (by lower's steps, by each candidate of a bench
 * model) is transformed once. Owned by the graph, not the arena: it goes
 * with graph_free, so a bench model's derived weights do not outlive it.
 * *fresh is true when the buffer is new (zeroed) and the caller fills it.
 */
void *graph_derived_const(struct graph *g, const void *src, const char *kind,
			  const int64_t *params, int n_params, size_t bytes, bool *fresh);
/*
 * Says that the compiled model can make the derived constant data
 * (graph_derived_const's buffer) itself when it opens, by rt_fn, a
 * function of its C prelude: void rt_fn(const void *src, void *dst,
 * const int64_t *params) that writes every byte of dst (the constant's
 * elements), params the derived constant's. The plan then stores the
 * source alone where storing both would hold those weights twice
 * (core/emit/plan.c). BUG if data is not a derived constant of g.
 */
void graph_derived_open(struct graph *g, const void *data, const char *rt_fn);
/*
 * graph_derived_const whose buffer fill(data, src, params) fills only when
 * graph_derived_fill is called on it: where the plan stores the constant
 * in the blob (core/emit/plan.c), not where the model makes it at open,
 * which then never touches the buffer's pages (calloc's zero pages: a
 * 2 GiB model's packed copy held the compile at twice its weights).
 */
void *graph_derived_lazy(struct graph *g, const void *src, const char *kind,
			 const int64_t *params, int n_params, size_t bytes,
			 void (*fill)(void *data, const void *src, const int64_t *params));
/* Fills the derived constant whose buffer is data if it is still empty (its source first). */
void graph_derived_fill(struct graph *g, const void *data);
/*
 * The derived constant whose buffer is data, or NULL. Its buffer is the
 * graph's, shared by every value made the same way: never write it.
 */
const struct derived_const *graph_derived_of(const struct graph *g, const void *data);
/*
 * The float16 or bfloat16 source (*bf says which) of data when data is a
 * 16-bit constant widened to float32 (pass_fold.c's "widen16"), else NULL.
 */
const void *graph_widened16_of(const struct graph *g, const void *data, bool *bf);
/*
 * In a forked child that has its own copy of the weights (a measuring
 * worker, which maps a bench model's): gives back the child's pages of g's
 * constants (the whole pages inside each buffer), so that the child does
 * not hold the parent's weights beside its own. The parent's stay as they
 * are; in the child they read as zeros from then on, so it must not read
 * them, nor use g for anything else that does.
 */
void graph_drop_constant_pages(struct graph *g);
/* Adds a node; in/out arrays are copied. Returns the node index. */
int graph_add_node(struct graph *g, enum op op, const char *name, const int *in, int n_in,
		   const int *out, int n_out);
int graph_intern_sym(struct graph *g, const char *name);
/*
 * The symbol for op(a, b), made (and named, "(seq-1)") the first time it is
 * asked for; false when the symbol table is full. a + b simplifies first:
 * ((seq-1)+1) is seq.
 */
bool graph_derive_sym(struct graph *g, enum sym_op op, struct dim a, struct dim b,
		      struct dim *out);
/*
 * a + b as symbolic integers: symint_add, or a derived symbol (seq - 1)
 * when a or b has symbols (the symbolic one first, with c > 0).
 */
bool graph_sym_add(struct graph *g, struct dim a, struct dim b, struct dim *out);
/*
 * The data symbol for dim k of value v ("y[0]"), made the first time it is
 * asked for (so inferring a node twice gives the same one).
 */
struct dim graph_data_sym(struct graph *g, int v, int k);
/*
 * A data symbol that is no dim but a parameter the shape function of v's
 * producer computes for its kernel ("y.start[0]" for a Slice whose starts are
 * data); it may be negative. Made the first time it is asked for.
 */
struct dim graph_data_param(struct graph *g, int v, const char *what, int k);
/*
 * Whether symbol s is known only at run time: a data symbol, or a derived
 * symbol computed from one.
 */
bool graph_sym_late(struct graph *g, int s);
/* Whether dim d involves a data-dependent symbol. */
bool graph_dim_late(struct graph *g, struct dim d);

/*
 * Per value id (g->values.n + 1 entries), how many inputs of live nodes and
 * graph outputs read it (owned: free()).
 */
int *graph_count_readers(const struct graph *g);

/*
 * Inputs of live nodes that read value v, and one more when it is a graph
 * output (VALUE_OUTPUT); *last, when last is not NULL, gets the index of
 * the last such node (unchanged when there is none).
 */
int graph_value_readers(const struct graph *g, int v, int *last);
/* Whether a dim of s mentions a late symbol (its value needs run-time allocation). */
bool graph_shape_late(struct graph *g, const struct shape *s);
/* Whether v has a known static shape of one element (a per-tensor scale, a scalar). */
bool value_one_element(const struct value *v);
/* Records that node n assumes a <= b of the symbols' run-time values. */
void graph_add_check(struct graph *g, const struct node *n, struct dim a, struct dim b);
/* Records that node n assumes a == b. */
void graph_add_check_eq(struct graph *g, const struct node *n, struct dim a, struct dim b);
/* Re-sorts g->nodes topologically (stable); -1 and a diagnostic on a cycle. */
int graph_toposort(struct graph *g);
/* Drops dead nodes, recording the fate of each ONNX node in their spans. */
void graph_compact(struct graph *g);
/* Records that import made ONNX node name (a Constant) no node: into NULL. */
void graph_record_fate(struct graph *g, const char *name, const char *op_type);
/*
 * Moves the nodes [from, g->nodes.n) to position to (<= from), shifting the
 * ones between after them, and renumbers producers: how an expansion
 * appended at the end is put where the node it replaces stood.
 */
void graph_move_tail(struct graph *g, int from, int to);

/* "model.onnx: node 12 'conv1' (Conv)" (arena) */
const char *node_loc(struct graph *g, const struct node *n);

const struct attr *node_attr(const struct node *n, const char *name);
int64_t node_attr_int(const struct node *n, const char *name, int64_t def);
double node_attr_float(const struct node *n, const char *name, double def);
const char *node_attr_str(const struct node *n, const char *name, const char *def);
/* Integer list attribute: count or -1 when absent. */
int node_attr_ints(const struct node *n, const char *name, const int64_t **out);
void node_set_attr_int(struct graph *g, struct node *n, const char *name, int64_t v);
/* An int attribute name = v, for the attribute list of a node being made. */
struct attr attr_int(const char *name, int64_t v);
void node_set_attr_float(struct graph *g, struct node *n, const char *name, double v);
void node_set_attr_ints(struct graph *g, struct node *n, const char *name, const int64_t *v,
			int count);

static inline struct value *node_in(struct graph *g, const struct node *n, int i)
{
	return i < n->n_in && n->in[i] >= 0 ? &g->values.v[n->in[i]] : NULL;
}

static inline struct value *node_out(struct graph *g, const struct node *n, int i)
{
	return &g->values.v[n->out[i]];
}

/* Reads a constant integer tensor (any int dtype) as int64 (arena copy). -1 if not constant. */
int value_const_ints(struct graph *g, const struct value *v, int64_t **out, int64_t *count);
/*
 * Reads an integer tensor that is constant or carries a symbolic payload
 * (value.sym) as symbolic integers (arena copy). -1 if it is neither.
 */
int value_sym_ints(struct graph *g, const struct value *v, struct dim **out, int64_t *count);
/* A constant scalar of a float/int tensor as double; false if not constant. */
bool value_const_scalar(struct graph *g, const struct value *v, double *out);

void span_add(struct graph *g, struct span *dst, const struct span *src);
/* Gives n the one-entry span of itself (its name and op type), as import does. */
void node_span_self(struct graph *g, struct node *n);

/* Text form (for --dump-ir): one line per node, span comments. */
void graph_print(struct graph *g, FILE *f);
void shape_print(struct graph *g, const struct shape *s, struct strbuf *sb);
void dim_print(struct graph *g, struct dim d, struct strbuf *sb);

/* Checks the invariants above; BUG() on a violation. */
void graph_verify(struct graph *g);

#endif
