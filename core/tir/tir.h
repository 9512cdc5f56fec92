/*
 * tir.h - the loop IR ("TIR"): kernels as loops, loads, stores and scalar
 * expressions over flat buffers, with symbolic extents. Op lowerings build it
 * (relay_to_tir), target printers turn it into source (tir_to_runtime), and
 * the constant folder interprets it, so there is one implementation of every
 * op.
 *
 * Invariants: a kernel's buffers are its parameters, in order; every loop
 * variable and local is bound by exactly one enclosing FOR or LET; index
 * expressions are int64; symbolic dims are TIR_SYM leaves read from the
 * kernel's syms[] argument. Expressions have no 16-bit float types: a
 * float16/bfloat16 buffer loads as float and stores round (dtype_compute).
 *
 *	struct tir_builder b; tir_builder_init(&b, arena, "add");
 *	struct tir_buf *x = tir_param(&b, "x", DTYPE_F32), *y = tir_param(&b, "y", DTYPE_F32);
 *	struct tir *i = tir_loop(&b, tir_int(&b, 16));
 *	tir_store(&b, y, i, tir_bin(&b, BIN_ADD, tir_load(&b, x, i), tir_flt(&b, DTYPE_F32, 1)));
 *	tir_end(&b);
 *	struct tir_func *f = tir_finish(&b);
 */
#ifndef COLLAGEC_TIR_H
#define COLLAGEC_TIR_H

#include "../base/types.h"

enum tir_kind {
	/* expressions */
	TIR_INT,	/* i, int64 (or dtype) constant */
	TIR_FLT,	/* f, float constant of dtype */
	TIR_VAR,	/* loop variable or local (var) */
	TIR_SYM,	/* symbolic dim i (a symbol: types.h), int64 */
	TIR_LOAD,	/* buf[a] */
	TIR_BIN,	/* a op b */
	TIR_UN,		/* op a */
	TIR_CALL,	/* intrinsic(args) */
	TIR_CAST,	/* (dtype)a; i: a 16-bit float type a is rounded through */
	TIR_SELECT,	/* a ? b : c */
	TIR_ADDR,	/* &buf[a]: a pointer, only as a call_extern argument */
	/* statements */
	TIR_FOR,	/* for var in [0, a): b */
	TIR_STORE,	/* buf[a] = b */
	TIR_SEQ,	/* list */
	TIR_IF,		/* if a: b else c */
	TIR_LET,	/* declare local var = a */
	TIR_ASSIGN,	/* var = a */
	TIR_EXTERN,	/* call_extern name(args): buffers and scalars */
	TIR_KIND_COUNT
};

enum tir_binop {
	BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MOD, BIN_MIN, BIN_MAX,
	BIN_LT, BIN_LE, BIN_GT, BIN_GE, BIN_EQ, BIN_NE,
	BIN_AND, BIN_OR, BIN_XOR, BIN_SHL, BIN_SHR, BIN_LAND, BIN_LOR,
	BIN_COUNT
};

enum tir_unop { UN_NEG, UN_NOT, UN_LNOT, UN_COUNT };

/* Math intrinsics; the printer picks the float/double C function. */
enum tir_intrin {
	INTRIN_EXP, INTRIN_LOG, INTRIN_SQRT, INTRIN_SIN, INTRIN_COS, INTRIN_TAN,
	INTRIN_ASIN, INTRIN_ACOS, INTRIN_ATAN, INTRIN_SINH, INTRIN_COSH, INTRIN_TANH,
	INTRIN_ASINH, INTRIN_ACOSH, INTRIN_ATANH, INTRIN_ERF, INTRIN_FLOOR, INTRIN_CEIL,
	INTRIN_RINT, INTRIN_FABS, INTRIN_POW, INTRIN_FMOD, INTRIN_ISNAN, INTRIN_ISINF,
	INTRIN_LOG1P, INTRIN_EXPM1,
	INTRIN_COUNT
};

struct tir_var {
	const char *name;	/* hint for printers */
	enum dtype dtype;
	int id;			/* unique in its function */
};

struct tir_buf {
	const char *name;	/* hint for printers */
	enum dtype dtype;
	int index;		/* parameter position */
};

struct tir {
	enum tir_kind kind;
	enum dtype dtype;	/* of an expression; DTYPE_UNDEF for statements */
	int op;			/* tir_binop / tir_unop / tir_intrin */
	int64_t i;		/* TIR_INT value, TIR_SYM index, TIR_EXTERN work */
	double f;		/* TIR_FLT value */
	struct tir_var *var;	/* TIR_VAR, FOR, LET, ASSIGN */
	struct tir_buf *buf;	/* LOAD, STORE */
	struct tir *a, *b, *c;	/* operands, see enum tir_kind */
	int n;			/* SEQ, CALL, EXTERN: count of list */
	struct tir **list;
	const char *name;	/* EXTERN function */
	bool parallel;		/* FOR: iterations are independent */
	/*
	 * FOR, set by tir_plan_parallel: k > 0 heads a parallel region over k
	 * perfectly nested parallel loops; -1 a parallel nest too small to be
	 * worth one (it runs serially); 0 neither
	 */
	int region;
};

struct tir_func {
	const char *name;		/* C identifier */
	int n_bufs;
	struct tir_buf **bufs;		/* parameters, in order */
	int n_vars;
	struct tir *body;		/* a TIR_SEQ */
	struct span span;		/* where it came from */
};

struct tir_builder {
	struct arena *arena;
	const char *name;
	VEC(struct tir_buf *) bufs;
	VEC(struct tir *) stack;	/* open blocks: SEQ nodes; FOR/IF parents below */
	VEC(struct tir *) owners;	/* the FOR/IF that each open block belongs to */
	int n_vars;
};

void tir_builder_init(struct tir_builder *b, struct arena *a, const char *name);
struct tir_buf *tir_param(struct tir_builder *b, const char *name, enum dtype t);
/* Closes the kernel; BUG() if a block is still open. Arena result. */
struct tir_func *tir_finish(struct tir_builder *b);
/* Frees the builder's heap vectors after tir_finish (or on error). */
void tir_builder_release(struct tir_builder *b);

/* expressions */
struct tir *tir_int(struct tir_builder *b, int64_t v);
struct tir *tir_typed_int(struct tir_builder *b, enum dtype t, int64_t v);
struct tir *tir_flt(struct tir_builder *b, enum dtype t, double v);
/* A constant of dtype t: float for float types, integer otherwise. */
struct tir *tir_const(struct tir_builder *b, enum dtype t, double v);
struct tir *tir_sym(struct tir_builder *b, int sym);
struct tir *tir_dim(struct tir_builder *b, struct dim d);
struct tir *tir_load(struct tir_builder *b, struct tir_buf *buf, struct tir *idx);
struct tir *tir_bin(struct tir_builder *b, enum tir_binop op, struct tir *x, struct tir *y);
struct tir *tir_un(struct tir_builder *b, enum tir_unop op, struct tir *x);
struct tir *tir_call1(struct tir_builder *b, enum tir_intrin f, struct tir *x);
struct tir *tir_call2(struct tir_builder *b, enum tir_intrin f, struct tir *x, struct tir *y);
struct tir *tir_cast(struct tir_builder *b, enum dtype t, struct tir *x);
struct tir *tir_select(struct tir_builder *b, struct tir *c, struct tir *x, struct tir *y);
/* &buf[offset], for call_extern arguments (library calls take pointers). */
struct tir *tir_addr(struct tir_builder *b, struct tir_buf *buf, struct tir *offset);
#define tir_add(b, x, y) tir_bin(b, BIN_ADD, x, y)
#define tir_mul(b, x, y) tir_bin(b, BIN_MUL, x, y)

/* statements (appended to the innermost open block) */
/* Opens "for v in [0, extent)" and returns v as an expression. */
struct tir *tir_loop(struct tir_builder *b, struct tir *extent);
/* Opens "if cond"; tir_else() switches to the else block; tir_end() closes. */
void tir_if(struct tir_builder *b, struct tir *cond);
void tir_else(struct tir_builder *b);
void tir_end(struct tir_builder *b);
void tir_store(struct tir_builder *b, struct tir_buf *buf, struct tir *idx, struct tir *val);
/* Declares a local initialised to init; returns it as an expression. */
struct tir *tir_let(struct tir_builder *b, const char *hint, struct tir *init);
void tir_assign(struct tir_builder *b, struct tir *var, struct tir *val);
void tir_extern(struct tir_builder *b, const char *fn, struct tir **args, int n);
/*
 * tir_extern with an estimate of the call's work, in the units of
 * tir_work (about one per element operation), for the parallel step to
 * weigh the loops around it; tir_extern's is 1.
 */
void tir_extern_work(struct tir_builder *b, const char *fn, struct tir **args, int n,
		     int64_t work);
/* Marks the innermost open loop as parallel (its iterations are independent). */
void tir_mark_parallel(struct tir_builder *b);

/*
 * The parallel step (tir_parallel.c): marks the outermost loop of each nest
 * of perfectly nested parallel loops (up to 3, none inside another) as the
 * head of a parallel region (.region = depth), or as serial (.region = -1)
 * when its work estimate is a compile-time constant below min_work. Printers
 * open parallel regions exactly there. Idempotent.
 */
void tir_plan_parallel(struct tir_func *f, int64_t min_work);
/*
 * Estimated innermost iterations of s: loop extents multiplied (256 for an
 * extent that is not a constant), sequences added, the larger branch of an
 * if, an extern call its own estimate (tir_extern_work); saturates at 2^40.
 */
int64_t tir_work(const struct tir *s);
/* Whether statement s contains a loop. */
bool tir_has_loop(const struct tir *s);
/* Whether statement s calls an extern function (tir_extern: its work is the call's estimate). */
bool tir_has_extern(const struct tir *s);
/*
 * Replaces, in the tree under *s, every load of buf by fn(ctx, index) (the
 * index already rewritten). BUG() when buf is stored to or its address
 * taken: only a buffer that is read element by element can be inlined.
 */
void tir_replace_loads(struct tir **s, const struct tir_buf *buf,
		       struct tir *(*fn)(void *ctx, struct tir *idx), void *ctx);

/*
 * Text form for --dump-ir (appended to sb). syms: the names of the symbols
 * (n_syms of them, graph.syms where the kernel came from a graph) that its
 * TIR_SYM leaves index, or NULL; the text reads them as syms[i] either way.
 */
void tir_print(const struct tir_func *f, const char *const *syms, int n_syms,
	       struct strbuf *sb);

/*
 * Interprets a kernel: bufs[i] points at parameter i's data, syms at the
 * symbol values. Used to fold constants at compile time. Returns 0, or -1 if
 * the kernel contains something the interpreter cannot run (call_extern).
 */
int tir_interpret(const struct tir_func *f, void **bufs, const int64_t *syms);

#endif
