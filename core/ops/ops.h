/*
 * ops.h - the op table. One line per op in ops.def (and the group files it
 * includes) gives the ONNX name, the pattern kind used by fusion and
 * partitioning, the shape/dtype inference function and the lowering to loop
 * IR. Adding an op touches one .def line plus its infer and lower functions.
 *
 * Every op lowers to loop IR through op_lower_node(); the same lowering is
 * interpreted by the constant folder and printed by the C backend.
 *
 *	const struct op_info *oi = op_info(OP_ADD);
 *	if (oi->infer(g, n) < 0) ...
 *	struct tir_func *k = op_lower_node(g, n, "k3_add");
 */
#ifndef COLLAGEC_OPS_H
#define COLLAGEC_OPS_H

#include "../ir/ir.h"
#include "../tir/tir.h"

enum op_kind {
	OPK_ELEMWISE,	/* out[i] = f(in[i]) on one shape */
	OPK_BROADCAST,	/* elementwise with numpy broadcasting */
	OPK_INJECTIVE,	/* each output element reads a computable input element */
	OPK_REDUCE,	/* reduction over axes */
	OPK_ANCHOR,	/* out-elementwise-fusable: conv, matmul, pool */
	OPK_OPAQUE,	/* anything else */
	OPK_COUNT
};

/*
 * The scratch buffers a kernel asks for (lower_scratch): slot i is parameter
 * (present inputs + outputs + i) of every function of the kernel, its
 * variants included, so they share one argument list. The owner of the
 * kernel turns the slots into graph values that the memory planner places
 * like any intermediate, live during the kernel's step only.
 */
struct target;

struct lower_scratch_slot {
	enum dtype dtype;
	struct dim numel;	/* elements: the most any function asked for */
	void *data;		/* (optional) constant contents (arena): weights in the blob */
};

struct lower_scratch {
	VEC(struct lower_scratch_slot) slots;
};

struct lower {
	struct graph *g;
	struct tir_builder *b;
	const struct node *n;
	struct tir_buf **in;	/* per node input; NULL when absent */
	struct tir_buf **out;	/* per node output */
	struct lower_scratch *scratch;	/* (optional) the kernel's slots; NULL: none allowed */
	int n_scratch;		/* slots declared as parameters of this function */
	/*
	 * (optional) the epilogue that follows the anchor's nest, and its
	 * buffers per value id (lower_params); a strategy that applies it in
	 * its own write-back sets epi_done, and no epilogue loop follows
	 */
	const struct lower_epilogue *epi;
	struct tir_buf **ebuf;
	bool epi_done;
	/* (optional) the target a strategy lowers for (its options); NULL: none */
	const struct target *target;
};

typedef int (*op_infer_fn)(struct graph *g, struct node *n);
typedef int (*op_lower_fn)(struct lower *L);

struct op_info {
	const char *name;	/* ONNX op type */
	enum op_kind kind;
	op_infer_fn infer;	/* sets the outputs' dtype and shape; -1 after a diagnostic */
	op_lower_fn lower;	/* appends the loop IR; -1 after a diagnostic */
};

const struct op_info *op_info(enum op op);
const char *op_kind_name(enum op_kind k);
/* OP_COUNT when the ONNX op type is unknown. */
enum op op_from_onnx(const char *op_type);
/* The domain an op belongs to: "" (ai.onnx), "ai.onnx.preview.training", "ai.onnx.ml", ... */
const char *op_domain(enum op op);

/*
 * Elementwise fusion: can n join a fused elementwise kernel (an op lowered
 * by lower_map, one output of known shape)? op_lower_fused() makes one
 * kernel of nodes[0..n) (graph order, all with the same output shape, each
 * reading the one before it or outside values): one loop over the output,
 * each node's result a local the later ones read, stored only where a value
 * leaves the group (read by another node or a graph output). *args (arena)
 * gets the value ids of its parameters, the first *n_inputs read.
 */
bool op_fusable_elementwise(struct graph *g, const struct node *n);
struct tir_func *op_lower_fused(struct graph *g, const int *nodes, int n, const char *name,
				int **args, int *n_args, int *n_inputs);

/*
 * Anchor epilogues: an elementwise chain that runs in its anchor's kernel
 * (conv, matmul, gemm, pooling, reductions, softmax), after the anchor's
 * nest, over its output in place, so the chain's intermediates need no
 * buffer. nodes[0..n) are op_fusable_elementwise nodes in graph order with
 * the anchor's output shape and dtype, each reading anchor_out or an
 * earlier one of them, none reading another output of the anchor.
 *
 * Parameters of such a kernel, in order: the anchor's present inputs, the
 * chain's inputs from outside (extra), the anchor's outputs (output 0 bound
 * to final unless keep_anchor), the chain outputs read outside (stored),
 * then scratch. epilogue_plan fills the value lists (arena).
 */
struct lower_epilogue {
	const int *nodes;	/* the chain, graph order */
	int n;
	int anchor_out;		/* the anchor's output 0 (value id) */
	int final;		/* the chain's last output: the kernel's result */
	bool keep_anchor;	/* anchor_out is read outside the group: it keeps its buffer */
	int n_extra;		/* values the chain reads from outside, each once */
	int *extra;
	int n_stored;		/* chain outputs with a buffer besides output 0's */
	int *stored;
	/*
	 * (optional) the prologue: elementwise nodes of one shape whose last
	 * one makes the anchor's input 0, read by nothing else; the anchor's
	 * loads of input 0 become their expression (recomputed per load), and
	 * their inputs (pro_extra: of that shape or one element) come first
	 * among the parameters, input 0 not being one.
	 */
	const int *pro;
	int n_pro;
	int n_pro_extra;
	int *pro_extra;
};

/* Whether op n can take an epilogue (its kernel writes output 0 whole). */
bool op_is_epilogue_anchor(struct graph *g, const struct node *n);
/*
 * Whether node c can join the epilogue of anchor a whose chain so far is
 * nodes[0..n): elementwise, of the anchor output's shape and dtype (or,
 * the anchor's being float32, float16 or bfloat16, another of these: the
 * Casts the fold pass put around a widened node, and the 16-bit ops
 * between them), reading the anchor's output or a chain value and no
 * other output of the anchor.
 */
bool op_epilogue_accepts(struct graph *g, const struct node *a, const int *nodes, int n,
			 const struct node *c);
/*
 * How many of the chain nodes[0..n) that op_epilogue_accepts took an
 * epilogue of a keeps: up to the last node whose output has a's output
 * dtype (the chain's result goes where the anchor writes its own).
 */
int op_epilogue_trim(struct graph *g, const struct node *a, const int *nodes, int n);
/* Fills e for anchor node a and chain nodes[0..n) (borrowed; n may be 0). */
void epilogue_plan(struct graph *g, const struct node *a, const int *nodes, int n,
		   struct lower_epilogue *e);
/* Whether op n takes a prologue (it only loads input 0: reductions, softmax). */
bool op_is_prologue_anchor(struct graph *g, const struct node *n);
/*
 * Whether nodes[0..n) (a fused elementwise run) can be the prologue of a:
 * the last makes a's input 0, no other input of a, and none of their
 * values is read outside nodes and a; their outside inputs have the run's
 * shape or one element. If so, fills e's prologue fields.
 */
bool prologue_plan(struct graph *g, const struct node *a, const int *nodes, int n,
		   struct lower_epilogue *e);
/*
 * Declares the parameters of L->n (inputs, e's extras, outputs, e's stored
 * values, as above; e may be NULL) in L->in, L->out and ebuf (per value id,
 * arena, NULL when e is).
 */
void lower_params(struct lower *L, const struct lower_epilogue *e, struct tir_buf ***ebuf);
/*
 * Appends e's loop after the anchor's nest (L->out[0] holds the anchor's
 * result) and inlines its prologue into the loads of input 0.
 */
void lower_epilogue(struct lower *L, const struct lower_epilogue *e, struct tir_buf **ebuf);
/*
 * e's chain over flat indices [start, start + count) of the anchor's output
 * only (a loop at the builder's position), for kernels that finish their
 * output a part at a time and apply it while that part is in cache. True
 * when done (or nothing to do); false, appending nothing, with a prologue
 * or a value from outside of another shape than the output's or one
 * element (their flat index would not be the output's).
 */
bool lower_epilogue_span(struct lower *L, const struct lower_epilogue *e, struct tir_buf **ebuf,
			 struct tir *start, int64_t count);
/* Whether lower_epilogue_span can apply e (no prologue, extras flat like the output). */
bool epilogue_by_span(struct graph *g, const struct lower_epilogue *e);
/* op_lower_node with an epilogue (NULL: none). */
struct tir_func *op_lower_node_epi(struct graph *g, struct node *n, const char *name,
				   const struct lower_epilogue *e);

/* An attribute of an op as its ONNX schema defines it (attrs.def). */
struct op_attr {
	enum op op;
	const char *name;
	enum attr_kind kind;
	const char *def;	/* the default as pattern-literal text, or NULL */
};

/* The schema attribute name of op, or NULL. */
const struct op_attr *op_attr_find(enum op op, const char *name);
/* The attributes of op in schema order: *out points into the table. */
int op_attrs(enum op op, const struct op_attr **out);

/*
 * Strict checking against the op's version that the model's default-domain
 * opset selects (the newest since_version <= opset; versions.def): every
 * attribute the node has must be defined by that version with that kind,
 * no name may repeat, and every required one must be there. Reports each
 * problem (naming the node and "Op-version") and returns -1; 0 when the
 * node is fine or the op is not an ONNX op.
 */
int op_check_version(struct graph *g, const struct node *n, int64_t opset);

/*
 * Lowers one node into a kernel named name: parameters are the present inputs
 * then the outputs, in node order. Arena result; NULL after a diagnostic.
 */
struct tir_func *op_lower_node(struct graph *g, struct node *n, const char *name);

/* ---- random ops (ops_random.c) ---- */

/*
 * Whether n gives random values: RandomUniform, RandomNormal, their Like
 * variants, Bernoulli, Multinomial, and a Dropout that may be in training
 * mode. Such a node is never folded at compile time, seeded or not.
 */
bool op_is_random(struct graph *g, const struct node *n);
/*
 * Whether Dropout n may train at run time: its training_mode input is
 * present and not a constant false, and its ratio is not a constant 0
 * (which makes training the identity). Otherwise it is the identity.
 */
bool dropout_is_training(struct graph *g, const struct node *n);
/*
 * args[0..2) of the rt_rand_* call of L's node: has_seed and the key of its
 * seed attribute (runtime/rt_random.h), fixed at compile time.
 */
void lower_rand_key(struct lower *L, struct tir **args);

/* ---- symbolic payloads (ops_symval.c) ---- */

/*
 * Gives node n's outputs their symbolic payloads (value.sym) when n computes
 * small integer tensors from symbolic shapes, or folds n into constants when
 * those come out constant. Called by the infer pass after n's infer function.
 * 0; not knowing the values is not an error.
 */
int symval_try(struct graph *g, struct node *n);
/*
 * Why integer tensor v is not known at compile time although it is computed
 * from shapes: a phrase naming the node that made it inexpressible (arena),
 * or NULL when v is known or depends on run-time data.
 */
const char *symval_explain(struct graph *g, const struct value *v);
/*
 * Whether input i of op only decides the output's shape, so the lowering
 * never reads it (Reshape's shape, Expand's shape, Tile's repeats,
 * ConstantOfShape's shape, Range's limit): once inferred from a payload it can go.
 */
bool symval_compile_time_input(enum op op, int i);

/* ---- helpers for infer functions (ops_util.c) ---- */

/* Sets output i's dtype and shape. */
void infer_set(struct graph *g, struct node *n, int i, enum dtype t, const struct shape *s);
/* Numpy broadcasting of a and b; false (no diagnostic) when incompatible. */
bool shape_broadcast(const struct shape *a, const struct shape *b, struct shape *out);
/* Normalises a possibly negative axis for rank r; -1 + diagnostic when out of range. */
int infer_axis(struct graph *g, struct node *n, int64_t axis, int rank);
/*
 * The scales (inputs 1, 3) and zero points (2, 4) of a QLinear pool: one
 * element each, float32 scales, zero points of 8-bit type t (x's); 0, or
 * -1 after a diagnostic.
 */
int infer_qparams_one(struct graph *g, struct node *n, enum dtype t);
/*
 * A QLinear average pool's output from acc, the int32 sum of n taps of x,
 * divided by div (the pool's count): saturate(rint((double)(acc - n * zx) *
 * ((double)sx / ((double)sy * div))) + zy) as y's type (rt_cqpool.h's formula).
 */
struct tir *lower_qpool_out(struct lower *L, struct tir *acc, struct tir *n, struct tir *div);
/* Requires input i to be present with a known dtype; diagnostic otherwise. */
struct value *infer_input(struct graph *g, struct node *n, int i);
/* Requires input i to be a constant integer tensor; diagnostic otherwise. */
int infer_const_ints(struct graph *g, struct node *n, int i, int64_t **vals, int64_t *count);
/* Requires input i to be a float32 or float64 tensor; diagnostic (and NULL) otherwise. */
struct value *infer_float_input(struct graph *g, struct node *n, int i);
/*
 * Requires input i to be a vector of dtype t and length d (a channel
 * count); diagnostic otherwise.
 */
int infer_check_vec(struct graph *g, struct node *n, int i, enum dtype t, struct dim d);
/* Requires input i to be a constant holding one number; diagnostic otherwise. */
int infer_const_scalar(struct graph *g, struct node *n, int i, double *out);
/*
 * Requires input i to be a constant tensor of any numeric type; its
 * elements as doubles (arena); diagnostic otherwise.
 */
int infer_const_doubles(struct graph *g, struct node *n, int i, double **vals,
			int64_t *count);
/* Requires indices v to be int32 or int64; diagnostic otherwise. */
int infer_check_index_type(struct graph *g, struct node *n, const struct value *v);
/* Requires a result rank of at most MAX_RANK; diagnostic otherwise. */
int infer_check_rank(struct graph *g, struct node *n, int rank);
/* Reports "what: a and b" for two shapes that do not fit together; returns -1. */
int infer_bad_shapes(struct graph *g, struct node *n, const char *what, const struct shape *a,
		     const struct shape *b);
/*
 * Requires input i to be an integer tensor known at compile time: a constant
 * or a symbolic payload computed from shapes. Elements as symbolic integers
 * (arena); diagnostic otherwise.
 */
int infer_sym_ints(struct graph *g, struct node *n, int i, struct dim **vals, int64_t *count);
/* The same for one element (a scalar or a one-element tensor). */
int infer_sym_scalar(struct graph *g, struct node *n, int i, struct dim *val);
/*
 * Whether input i of n is an integer tensor known only at run time (neither
 * a constant nor shape arithmetic): the output shape it decides is then made
 * of data symbols, bound by the node's run-time shape function.
 */
bool infer_is_data(struct graph *g, struct node *n, int i);
/*
 * The element count of data input i, which fixes the rank of what it
 * shapes; -1 with a diagnostic when that count is itself not static.
 */
int infer_data_count(struct graph *g, struct node *n, int i, int64_t *count);
/* Gives output o dtype t and rank data-symbol dims (graph_data_sym); -1 past MAX_RANK. */
int infer_set_data(struct graph *g, struct node *n, int o, enum dtype t, int64_t rank);
/*
 * Whether n has an output with dims that are its own data symbols, or is a
 * DFT whose kernel reads parameters only the run knows, so that it needs a
 * run-time shape function before its kernel.
 */
bool node_is_dynamic(struct graph *g, const struct node *n);
/*
 * Whether n is a DFT whose axis or dft_length is known only at run time
 * (ops_signal.c): its shape function binds the kernel's parameters even
 * when no output dim changes.
 */
bool dft_is_runtime(struct graph *g, const struct node *n);
/*
 * The attr of the run-time shape function of a Resize or Upsample whose
 * scales or sizes are known only at run time (ops_resize.c).
 */
int64_t resize_shape_attr(struct graph *g, const struct node *n);
/*
 * The integer attributes the run-time shape function of a CenterCropPad,
 * Col2Im or DFT reads (runtime/rt_model.h's rt_shape.ints, ops_image.c):
 * arena, their *count; NULL and 0 for other ops.
 */
int64_t *shape_fn_ints(struct graph *g, const struct node *n, int *count);
/*
 * StringNormalizer's case change and stopword comparison as the flags of
 * runtime/rt_string.h's rt_str_normalize (also its shape function's attr).
 */
int64_t stringnorm_flags(const struct node *n);
/* Checks n_in/n_out ranges; diagnostic otherwise. */
int infer_arity(struct graph *g, struct node *n, int min_in, int max_in, int n_out);
/* Shape infer: all inputs broadcast, output 0 gets dtype t (or input 0's when UNDEF). */
int infer_broadcast_to(struct graph *g, struct node *n, enum dtype t);

/* ---- helpers for lower functions (ops_util.c) ---- */

static inline const struct value *lower_in(struct lower *L, int i)
{
	return node_in(L->g, L->n, i);
}

static inline const struct value *lower_out(struct lower *L, int i)
{
	return node_out(L->g, L->n, i);
}

/* Opens one loop per dim of s; idx[k] receives loop variable k. */
void lower_loops(struct lower *L, const struct shape *s, struct tir **idx);
/* The same, marking the loops parallel: each iteration writes its own outputs. */
void lower_loops_parallel(struct lower *L, const struct shape *s, struct tir **idx);
void lower_end_loops(struct lower *L, int n);
/* Row-major offset of idx in s. */
struct tir *lower_offset(struct lower *L, const struct shape *s, struct tir **idx);
/* Offset in 'in' of output index idx (of 'out') under numpy broadcasting. */
struct tir *lower_bcast_offset(struct lower *L, const struct shape *in, const struct shape *out,
			       struct tir **idx);
/* Element count of a shape as an expression. */
struct tir *lower_numel(struct lower *L, const struct shape *s);
/* x < 0 ? x + dim : x, for an index loaded from the kernel's data (as int64). */
struct tir *lower_wrap_index(struct lower *L, struct tir *x, struct tir *dim);
/*
 * min(max(x, 0), dim - 1): keeps reads of bad indices (ONNX makes them
 * errors; a compiled model reads the nearest element) inside the tensor.
 */
struct tir *lower_clamp_index(struct lower *L, struct tir *x, struct tir *dim);
/* lower_loops() over the output, every loop parallel. */
void lower_out_loops(struct lower *L, const struct shape *s, struct tir **idx);
/* 0 <= x && x < dim, for an index loaded from the kernel's data. */
struct tir *lower_in_range(struct lower *L, struct tir *x, struct tir *dim);
/* Clip e's bounds: absent (infinite), or constant scalars, not NaN, with lo <= hi. */
bool lower_clip_bounds(struct graph *g, const struct node *e, double *lo, double *hi);
/*
 * The epilogue a GEMM's own write-back applies (rt_cgemm.h's, the blas
 * target's helpers): [Add(chain, a float32 residual shaped like the
 * chain)] [Relu | Clip with constant bounds].
 */
struct lower_res_act {
	int res;		/* the residual's value id, or -1 */
	int act;		/* 0 none, 1 Relu, 2 Clip (rt_cgemm.h's enum rt_cg_act) */
	double lo, hi;		/* Clip's bounds (0 for the others) */
};
/*
 * Whether nodes[0..n) (n may be 0), a chain starting at value chain, are
 * such an epilogue, as a whole; *e says what (all none when not).
 */
bool lower_res_act(struct graph *g, const int *nodes, int n, int chain, struct lower_res_act *e);
/* Flat copy of input 0 into output 0 (reshape-like ops). */
int lower_copy(struct lower *L);
/* Row-major stride of axis k of s. */
struct tir *lower_stride(struct lower *L, const struct shape *s, int k);
/* Transpose n's perm for a rank-rank input (its attribute, or reversed). */
void transpose_perm(const struct node *n, int rank, int *perm);
/*
 * A scratch buffer of numel elements of dtype t for this kernel alone (an
 * im2col matrix, a packed operand): it takes the first slot that this
 * function has not used yet and that can hold it (same dtype, same symbolic
 * size or both constant: the slot grows), else a new slot. Its contents are
 * undefined on entry. Only strategy implementations may ask (BUG otherwise:
 * the constant folder has no buffer to give).
 */
struct tir_buf *lower_scratch(struct lower *L, enum dtype t, struct dim numel);
/*
 * A buffer like lower_scratch's, but constant: numel elements of data
 * (arena, read only) that go into the weights blob, e.g. a weight matrix
 * packed into a kernel's layout at compile time. Never shared with a
 * scratch slot; the variants of a kernel that ask for the same data share
 * one constant slot.
 */
struct tir_buf *lower_const(struct lower *L, enum dtype t, int64_t numel, void *data);

/* The [start, end) range of a Shape node's dims for an input of rank rank. */
void shape_op_range(const struct node *n, int rank, int *b, int *e);

/* ---- MatMul geometry (ops_nn.c), shared by implementations of MatMul ---- */

struct matmul_geom {
	struct shape a, b;		/* inputs with 1-D ones promoted to matrices */
	struct shape batch_a, batch_b;	/* their batch prefixes */
	struct shape batch;		/* the broadcast batch */
	struct shape y;			/* [batch..., M, N] */
	struct dim M, K, N;
};

void matmul_geometry(const struct value *a, const struct value *b, struct matmul_geom *mg);
/* Offsets of the A and B matrices of batch index bidx (batch.rank entries). */
void matmul_bases(struct lower *L, const struct matmul_geom *mg, struct tir **bidx,
		  struct tir **base_a, struct tir **base_b);
/* The generic lowerings, for strategies that fall back to them. */
int lower_matmul(struct lower *L);
int lower_conv(struct lower *L);
int lower_gemm(struct lower *L);
/* BatchNormalization's training mode (ops_norm.c, beside the other normalisations). */
int lower_batchnorm_training(struct lower *L);
/*
 * The c target's attention.rows (ops_attention.c, where Attention's plan
 * lives): whether it fits node L->n, and its lowering, a call of
 * rt_attn_rows (backends/c/rt_crows.h).
 */
bool attention_rows_fits(struct lower *L);
int lower_attention_rows(struct lower *L);

/*
 * Conv's geometry (window and output shape [N, M, spatial...]) for the
 * input at index xi and the weight at wi (0 and 1 for Conv; QLinearConv's
 * are 0 and 3): diagnostics as for Conv, 0 or -1.
 */
struct window;
int conv_plan_at(struct graph *g, struct node *n, int xi, int wi, struct window *w,
		 struct shape *out);

/* ---- windows of convolution and pooling (ops_util.c) ---- */

/* Geometry of a conv or pool window over the spatial dims (rank - 2 of them). */
struct window {
	int r;					/* spatial rank */
	int64_t k[MAX_RANK];			/* kernel extent */
	int64_t s[MAX_RANK];			/* stride */
	int64_t d[MAX_RANK];			/* dilation */
	int64_t pb[MAX_RANK], pe[MAX_RANK];	/* pads begin / end */
	int64_t in[MAX_RANK], out[MAX_RANK];	/* spatial extents (-1: symbolic) */
	struct dim din[MAX_RANK], dout[MAX_RANK];	/* the same as dims, any kind */
	bool sym;				/* some extent is symbolic */
};

/*
 * Fills w from the strides, dilations, pads and auto_pad attributes of n for
 * input shape x and the given kernel; ceil_mode as in MaxPool. 0 or -1.
 */
/* Strides all 1, no pads and auto_pad NOTSET (conv/pool attributes). */
bool window_unit_stride_no_pad(const struct node *n);
int window_plan(struct graph *g, struct node *n, const struct shape *x, const int64_t *kernel,
		bool ceil_mode, struct window *w);
/*
 * window_plan, but a spatial dim may be symbolic (explicit pads or VALID,
 * no ceil_mode): its output extent is a derived symbol, floor((in + pads -
 * (k - 1) * d - 1) / s) + 1, and the run checks that the padded input
 * holds the kernel. Only the generic loop nests take such a window.
 */
int window_plan_sym(struct graph *g, struct node *n, const struct shape *x,
		    const int64_t *kernel, struct window *w);
/*
 * Whether node n is a Conv, MaxPool or AveragePool over an input with a
 * symbolic spatial dim.
 */
bool window_symbolic(struct graph *g, const struct node *n);
/* cond && 0 <= pos < ext (cond may be NULL). */
struct tir *lower_inside(struct tir_builder *b, struct tir *cond, struct tir *pos, int64_t ext);
/*
 * The input position of spatial dim i for output index o and window index
 * k (o * stride + k * dilation - pad begin) as a local; *cond (NULL: none
 * yet) gains its bounds check unless no window of the dim leaves the input.
 */
struct tir *lower_window_pos(struct lower *L, const struct window *w, int i, struct tir *o,
			     struct tir *k, struct tir **cond);

#endif
