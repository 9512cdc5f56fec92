/*
 * tir.c - building loop IR: expression constructors with light integer
 * simplification (so index arithmetic stays readable) and the block stack
 * for statements.
 */
#include "tir.h"
#include "../../runtime/rt_half.h"

#include <string.h>

void tir_builder_init(struct tir_builder *b, struct arena *a, const char *name)
{
	struct tir *root;

	memset(b, 0, sizeof(*b));
	b->arena = a;
	b->name = arena_strdup(a, name);
	root = arena_alloc(a, sizeof(*root));
	root->kind = TIR_SEQ;
	vec_push(&b->stack, root);
	vec_push(&b->owners, (struct tir *)NULL);
}

void tir_builder_release(struct tir_builder *b)
{
	vec_free(&b->bufs);
	vec_free(&b->stack);
	vec_free(&b->owners);
}

struct tir_buf *tir_param(struct tir_builder *b, const char *name, enum dtype t)
{
	struct tir_buf *buf = arena_alloc(b->arena, sizeof(*buf));

	buf->name = arena_strdup(b->arena, name);
	buf->dtype = t;
	buf->index = b->bufs.n;
	vec_push(&b->bufs, buf);
	return buf;
}

struct tir_func *tir_finish(struct tir_builder *b)
{
	struct tir_func *f = arena_alloc(b->arena, sizeof(*f));

	if (b->stack.n != 1)
		BUG("tir_finish with %d open blocks", b->stack.n - 1);
	f->name = b->name;
	f->n_bufs = b->bufs.n;
	f->bufs = arena_alloc(b->arena, sizeof(*f->bufs) * (size_t)(b->bufs.n + 1));
	if (b->bufs.n)
		memcpy(f->bufs, b->bufs.v, sizeof(*f->bufs) * (size_t)b->bufs.n);
	f->n_vars = b->n_vars;
	f->body = b->stack.v[0];
	tir_builder_release(b);
	return f;
}

static struct tir *node(struct tir_builder *b, enum tir_kind k, enum dtype t)
{
	struct tir *e = arena_alloc(b->arena, sizeof(*e));

	e->kind = k;
	e->dtype = t;
	return e;
}

struct tir *tir_int(struct tir_builder *b, int64_t v)
{
	struct tir *e = node(b, TIR_INT, DTYPE_I64);

	e->i = v;
	return e;
}

struct tir *tir_typed_int(struct tir_builder *b, enum dtype t, int64_t v)
{
	struct tir *e;

	if (dtype_is_half(t))
		return tir_flt(b, t, (double)v);
	e = node(b, TIR_INT, t);

	e->i = v;
	return e;
}

/* A constant of a 16-bit float type is a float: expressions never have those types. */
struct tir *tir_flt(struct tir_builder *b, enum dtype t, double v)
{
	struct tir *e = node(b, TIR_FLT, dtype_compute(t));

	e->f = v;
	return e;
}

struct tir *tir_const(struct tir_builder *b, enum dtype t, double v)
{
	if (dtype_is_float(t))
		return tir_flt(b, t, v);
	/* saturate: (int64_t) of 2^63 or more is undefined */
	if (t == DTYPE_U64 && v >= 9223372036854775808.0)
		return tir_typed_int(b, t, v >= 18446744073709551615.0 ? -1
				     : (int64_t)(uint64_t)v);
	if (v >= 9223372036854775807.0)
		return tir_typed_int(b, t, INT64_MAX);
	if (v <= -9223372036854775808.0)
		return tir_typed_int(b, t, INT64_MIN);
	return tir_typed_int(b, t, (int64_t)v);
}

struct tir *tir_sym(struct tir_builder *b, int sym)
{
	struct tir *e = node(b, TIR_SYM, DTYPE_I64);

	e->i = sym;
	return e;
}

struct tir *tir_dim(struct tir_builder *b, struct dim d)
{
	struct tir *e = tir_int(b, d.c);

	for (int i = 0; i < d.n; i++)
		e = tir_mul(b, e, tir_sym(b, d.sym[i]));
	return e;
}

struct tir *tir_load(struct tir_builder *b, struct tir_buf *buf, struct tir *idx)
{
	struct tir *e = node(b, TIR_LOAD, dtype_compute(buf->dtype));

	e->buf = buf;
	e->a = idx;
	return e;
}

static bool is_int(const struct tir *e, int64_t v)
{
	return e->kind == TIR_INT && e->i == v;
}

static bool is_cmp(enum tir_binop op)
{
	return op >= BIN_LT && op <= BIN_NE;
}

struct tir *tir_bin(struct tir_builder *b, enum tir_binop op, struct tir *x, struct tir *y)
{
	enum dtype t = x->dtype;
	struct tir *e;

	if (dtype_is_float(y->dtype) && !dtype_is_float(x->dtype))
		t = y->dtype;
	/* integer index simplification */
	if (x->kind == TIR_INT && y->kind == TIR_INT && x->dtype == DTYPE_I64 &&
	    y->dtype == DTYPE_I64) {
		switch (op) {
		case BIN_ADD: return tir_int(b, x->i + y->i);
		case BIN_SUB: return tir_int(b, x->i - y->i);
		case BIN_MUL: return tir_int(b, x->i * y->i);
		case BIN_DIV: if (y->i > 0 && x->i >= 0) return tir_int(b, x->i / y->i); break;
		case BIN_MOD: if (y->i > 0 && x->i >= 0) return tir_int(b, x->i % y->i); break;
		case BIN_LT: return tir_typed_int(b, DTYPE_BOOL, x->i < y->i);
		case BIN_LE: return tir_typed_int(b, DTYPE_BOOL, x->i <= y->i);
		case BIN_GT: return tir_typed_int(b, DTYPE_BOOL, x->i > y->i);
		case BIN_GE: return tir_typed_int(b, DTYPE_BOOL, x->i >= y->i);
		case BIN_EQ: return tir_typed_int(b, DTYPE_BOOL, x->i == y->i);
		case BIN_NE: return tir_typed_int(b, DTYPE_BOOL, x->i != y->i);
		default: break;
		}
	}
	if (t == DTYPE_I64) {
		if (op == BIN_ADD && is_int(x, 0)) return y;
		if ((op == BIN_ADD || op == BIN_SUB) && is_int(y, 0)) return x;
		if (op == BIN_MUL && (is_int(x, 0) || is_int(y, 0))) return tir_int(b, 0);
		if (op == BIN_MUL && is_int(x, 1)) return y;
		if ((op == BIN_MUL || op == BIN_DIV) && is_int(y, 1)) return x;
		if (op == BIN_MOD && is_int(y, 1)) return tir_int(b, 0);
	}
	if (is_cmp(op) || op == BIN_LAND || op == BIN_LOR)
		t = DTYPE_BOOL;
	e = node(b, TIR_BIN, t);
	e->op = op;
	e->a = x;
	e->b = y;
	return e;
}

struct tir *tir_un(struct tir_builder *b, enum tir_unop op, struct tir *x)
{
	struct tir *e = node(b, TIR_UN, op == UN_LNOT ? DTYPE_BOOL : x->dtype);

	e->op = op;
	e->a = x;
	return e;
}

struct tir *tir_call1(struct tir_builder *b, enum tir_intrin f, struct tir *x)
{
	struct tir *e = node(b, TIR_CALL, x->dtype);

	if (f == INTRIN_ISNAN || f == INTRIN_ISINF)
		e->dtype = DTYPE_BOOL;
	e->op = f;
	e->n = 1;
	e->list = arena_alloc(b->arena, sizeof(struct tir *));
	e->list[0] = x;
	return e;
}

struct tir *tir_call2(struct tir_builder *b, enum tir_intrin f, struct tir *x, struct tir *y)
{
	struct tir *e = node(b, TIR_CALL, x->dtype);

	e->op = f;
	e->n = 2;
	e->list = arena_alloc(b->arena, 2 * sizeof(struct tir *));
	e->list[0] = x;
	e->list[1] = y;
	return e;
}

/*
 * A cast to float16/bfloat16 is a float rounded through that type (TIR_CAST
 * of dtype float with i = the 16-bit type), so that a later op of a fused
 * kernel sees the rounded value; a load of that type needs no rounding.
 */
static struct tir *cast_half(struct tir_builder *b, enum dtype t, struct tir *x)
{
	struct tir *e;

	if (x->kind == TIR_LOAD && x->buf->dtype == t)
		return x;
	if (x->kind == TIR_FLT) {
		uint16_t h = t == DTYPE_F16 ? rt_d2h(x->f) : rt_d2bf(x->f);

		return tir_flt(b, DTYPE_F32, t == DTYPE_F16 ? rt_h2f(h) : rt_bf2f(h));
	}
	e = node(b, TIR_CAST, DTYPE_F32);
	e->i = t;
	e->a = x;
	return e;
}

struct tir *tir_cast(struct tir_builder *b, enum dtype t, struct tir *x)
{
	struct tir *e;

	if (dtype_is_half(t))
		return cast_half(b, t, x);
	if (x->dtype == t)
		return x;
	if (x->kind == TIR_INT && !dtype_is_float(t) && t != DTYPE_BOOL)
		return tir_typed_int(b, t, x->i);
	if (x->kind == TIR_FLT && dtype_is_float(t))
		return tir_flt(b, t, x->f);
	e = node(b, TIR_CAST, t);
	e->a = x;
	return e;
}

struct tir *tir_select(struct tir_builder *b, struct tir *c, struct tir *x, struct tir *y)
{
	struct tir *e = node(b, TIR_SELECT, x->dtype);

	e->a = c;
	e->b = x;
	e->c = y;
	return e;
}

struct tir *tir_addr(struct tir_builder *b, struct tir_buf *buf, struct tir *offset)
{
	struct tir *e = node(b, TIR_ADDR, DTYPE_UNDEF);

	e->buf = buf;
	e->a = offset;
	return e;
}

/* ---- statements ---- */

static void append(struct tir_builder *b, struct tir *s)
{
	struct tir *blk = b->stack.v[b->stack.n - 1];
	struct tir **l = arena_alloc(b->arena, sizeof(*l) * (size_t)(blk->n + 1));

	/* blocks are short; copying keeps the IR a plain array (O(n^2) is fine) */
	if (blk->n)
		memcpy(l, blk->list, sizeof(*l) * (size_t)blk->n);
	l[blk->n++] = s;
	blk->list = l;
}

static struct tir *new_var(struct tir_builder *b, const char *hint, enum dtype t)
{
	struct tir *e = node(b, TIR_VAR, t);

	e->var = arena_alloc(b->arena, sizeof(*e->var));
	e->var->name = hint;
	e->var->dtype = t;
	e->var->id = b->n_vars++;
	return e;
}

static void open_block(struct tir_builder *b, struct tir *owner, struct tir **slot)
{
	struct tir *blk = node(b, TIR_SEQ, DTYPE_UNDEF);

	*slot = blk;
	vec_push(&b->stack, blk);
	vec_push(&b->owners, owner);
}

struct tir *tir_loop(struct tir_builder *b, struct tir *extent)
{
	struct tir *s = node(b, TIR_FOR, DTYPE_UNDEF);
	struct tir *v = new_var(b, "i", DTYPE_I64);

	s->var = v->var;
	s->a = extent;
	append(b, s);
	open_block(b, s, &s->b);
	return v;
}

void tir_if(struct tir_builder *b, struct tir *cond)
{
	struct tir *s = node(b, TIR_IF, DTYPE_UNDEF);

	s->a = cond;
	append(b, s);
	open_block(b, s, &s->b);
}

void tir_else(struct tir_builder *b)
{
	struct tir *owner = b->owners.v[b->owners.n - 1];

	if (!owner || owner->kind != TIR_IF || owner->c)
		BUG("tir_else outside an if");
	b->stack.n--;
	b->owners.n--;
	open_block(b, owner, &owner->c);
}

void tir_end(struct tir_builder *b)
{
	if (b->stack.n <= 1)
		BUG("tir_end without an open block");
	b->stack.n--;
	b->owners.n--;
}

void tir_store(struct tir_builder *b, struct tir_buf *buf, struct tir *idx, struct tir *val)
{
	struct tir *s = node(b, TIR_STORE, DTYPE_UNDEF);

	s->buf = buf;
	s->a = idx;
	s->b = tir_cast(b, buf->dtype, val);
	append(b, s);
}

struct tir *tir_let(struct tir_builder *b, const char *hint, struct tir *init)
{
	struct tir *v = new_var(b, hint, init->dtype);
	struct tir *s = node(b, TIR_LET, DTYPE_UNDEF);

	s->var = v->var;
	s->a = init;
	append(b, s);
	return v;
}

void tir_assign(struct tir_builder *b, struct tir *var, struct tir *val)
{
	struct tir *s = node(b, TIR_ASSIGN, DTYPE_UNDEF);

	if (var->kind != TIR_VAR)
		BUG("tir_assign to a non-variable");
	s->var = var->var;
	s->a = tir_cast(b, var->dtype, val);
	append(b, s);
}

void tir_extern(struct tir_builder *b, const char *fn, struct tir **args, int n)
{
	tir_extern_work(b, fn, args, n, 1);
}

void tir_extern_work(struct tir_builder *b, const char *fn, struct tir **args, int n,
		     int64_t work)
{
	struct tir *s = node(b, TIR_EXTERN, DTYPE_UNDEF);

	s->name = arena_strdup(b->arena, fn);
	s->i = work > 1 ? work : 1;
	s->n = n;
	s->list = arena_alloc(b->arena, sizeof(*args) * (size_t)(n + 1));
	if (n)
		memcpy(s->list, args, sizeof(*args) * (size_t)n);
	append(b, s);
}

void tir_mark_parallel(struct tir_builder *b)
{
	for (int i = b->owners.n - 1; i > 0; i--)
		if (b->owners.v[i] && b->owners.v[i]->kind == TIR_FOR) {
			b->owners.v[i]->parallel = true;
			return;
		}
	BUG("tir_mark_parallel outside a loop");
}

void tir_replace_loads(struct tir **s, const struct tir_buf *buf,
		       struct tir *(*fn)(void *ctx, struct tir *idx), void *ctx)
{
	struct tir *t = *s;

	if (!t)
		return;
	if ((t->kind == TIR_STORE || t->kind == TIR_ADDR) && t->buf == buf)
		BUG("tir_replace_loads: buffer '%s' is not only loaded", buf->name);
	tir_replace_loads(&t->a, buf, fn, ctx);
	tir_replace_loads(&t->b, buf, fn, ctx);
	tir_replace_loads(&t->c, buf, fn, ctx);
	for (int i = 0; t->list && i < t->n; i++)
		tir_replace_loads(&t->list[i], buf, fn, ctx);
	if (t->kind == TIR_LOAD && t->buf == buf)
		*s = fn(ctx, t->a);
}
