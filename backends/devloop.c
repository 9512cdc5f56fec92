/*
 * devloop.c - loop IR run on a device: the node rule, the parallel step
 * (which loop nests run as ranges: marked parallel by the lowering, or
 * proved so from their accesses), stages and argument flags, shared by the
 * opencl and cuda targets (devloop.h).
 */
#include "devloop.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/ops/ops.h"

/* ---- partition rule ---- */

/* Opaque ops whose generic lowering is plain loops over float32 data. */
static bool opaque_ok(enum op op)
{
	switch (op) {
	case OP_SOFTMAX:
	case OP_LOGSOFTMAX:
	case OP_HARDMAX:
	case OP_LAYERNORMALIZATION:
	case OP_GROUPNORMALIZATION:
	case OP_RMSNORMALIZATION:
	case OP_INSTANCENORMALIZATION:
	case OP_MEANVARIANCENORMALIZATION:
	case OP_LPNORMALIZATION:
	case OP_LRN:
		return true;
	default:
		return false;
	}
}

static bool dtype_ok(enum dtype t)
{
	return t == DTYPE_F32 || t == DTYPE_I64 || t == DTYPE_BOOL;
}

/*
 * Elementwise, broadcast, injective, reduction and anchor ops (conv, pooling,
 * MatMul, Gemm) plus the normalisations above, on float32 data: every input
 * and output is float32, int64 (indices, axes, shapes) or bool (masks,
 * comparisons) and at least one is float32, not random (training-mode
 * Dropout). Anything else stays on c.
 */
bool devloop_supports(struct graph *g, const struct node *n)
{
	enum op_kind kind = op_info(n->op)->kind;
	bool f32 = false;

	if (kind == OPK_OPAQUE && !opaque_ok(n->op))
		return false;
	/* random ops call runtime/rt_random.h, which device kernels cannot */
	if (op_is_random(g, n))
		return false;
	if (n->n_in + n->n_out > DEVLOOP_MAX_BUFS)
		return false;
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		const struct value *v = i < n->n_in ? node_in(g, n, i) : node_out(g, n, i - n->n_in);

		if (!v)
			continue;
		if (!dtype_ok(v->dtype) || !v->has_shape)
			return false;
		f32 |= v->dtype == DTYPE_F32;
	}
	return f32;
}


/* ---- loop IR queries ---- */

/* True when e is computable on the host from constants and symbols. */
bool devloop_host_expr(const struct tir *e)
{
	switch (e->kind) {
	case TIR_INT:
	case TIR_SYM:
		return true;
	case TIR_BIN:
		return devloop_host_expr(e->a) && devloop_host_expr(e->b);
	case TIR_UN:
	case TIR_CAST:
		return devloop_host_expr(e->a);
	case TIR_SELECT:
		return devloop_host_expr(e->a) && devloop_host_expr(e->b) && devloop_host_expr(e->c);
	default:
		return false;
	}
}

/*
 * Marks in used[] the symbols s reads and in assigned[] the locals it
 * assigns; false when s holds what a device kernel cannot (C calls).
 */
bool devloop_scan(const struct tir *s, bool *used, int n_syms, bool *assigned)
{
	if (!s)
		return true;
	switch (s->kind) {
	case TIR_EXTERN:
	case TIR_ADDR:
		return false;
	case TIR_SYM:
		if (s->i < 0 || s->i >= n_syms)
			return false;
		used[s->i] = true;
		return true;
	case TIR_ASSIGN:
		assigned[s->var->id] = true;
		break;
	default:
		break;
	}
	if (s->kind == TIR_SEQ || s->kind == TIR_CALL)
		for (int i = 0; i < s->n; i++)
			if (!devloop_scan(s->list[i], used, n_syms, assigned))
				return false;
	return devloop_scan(s->a, used, n_syms, assigned) && devloop_scan(s->b, used, n_syms, assigned) &&
	       devloop_scan(s->c, used, n_syms, assigned);
}

/* ---- proving loops parallel ---- */

#define MAX_TERMS 16

/* c + sum coef[i] * var[i] over loop variables (ids) */
struct affine {
	int n;
	int var[MAX_TERMS];
	int64_t coef[MAX_TERMS];
	int64_t c;
};

/* The inner-loop part of an access: its terms (coefficient, extent), sorted. */
struct sig {
	int n;
	int64_t t[MAX_TERMS][2];
	int64_t c;
};

/* Per written buffer: the accesses seen so far. */
struct bufacc {
	bool written, seen;
	bool same;			/* every access has the first one's sig */
	int64_t a[DEVLOOP_MAX_NEST];		/* coefficients of the nest's variables */
	int64_t lo, hi;			/* range of the rest of the index */
	struct sig sig;			/* the first access's inner part */
};

struct prover {
	const struct tir_func *f;
	int n_nest;
	const struct tir *const *nest;	/* the candidate parallel loops */
	struct affine **let;		/* per var id: affine value of a local */
	int64_t *ext;			/* per var id: constant extent of an inner loop, -1 */
	bool *inner;			/* per var id: bound by a loop inside the nest */
	bool *assigned;			/* per var id: target of an ASSIGN */
	struct bufacc *bufs;
	struct arena *arena;
	bool ok;
};

static bool aff_add_term(struct affine *r, int var, int64_t coef)
{
	for (int i = 0; i < r->n; i++)
		if (r->var[i] == var)
			return !__builtin_add_overflow(r->coef[i], coef, &r->coef[i]);
	if (r->n == MAX_TERMS)
		return false;
	r->var[r->n] = var;
	r->coef[r->n++] = coef;
	return true;
}

/* r = x + k * y */
static bool aff_axpy(struct affine *r, const struct affine *x, int64_t k, const struct affine *y)
{
	int64_t t;

	*r = *x;
	if (__builtin_mul_overflow(k, y->c, &t) || __builtin_add_overflow(r->c, t, &r->c))
		return false;
	for (int i = 0; i < y->n; i++)
		if (__builtin_mul_overflow(k, y->coef[i], &t) || !aff_add_term(r, y->var[i], t))
			return false;
	return true;
}

static bool nest_var(const struct prover *P, int id)
{
	for (int i = 0; i < P->n_nest; i++)
		if (P->nest[i]->var->id == id)
			return true;
	return false;
}

/* e as an affine form of loop variables with constant coefficients. */
static bool affine_of(const struct prover *P, const struct tir *e, struct affine *r)
{
	struct affine x, y, zero = { 0 };

	switch (e->kind) {
	case TIR_INT:
		*r = zero;
		r->c = e->i;
		return true;
	case TIR_VAR:
		if (nest_var(P, e->var->id) || P->inner[e->var->id]) {
			*r = zero;
			r->n = 1;
			r->var[0] = e->var->id;
			r->coef[0] = 1;
			return true;
		}
		if (P->let[e->var->id] && !P->assigned[e->var->id]) {
			*r = *P->let[e->var->id];
			return true;
		}
		return false;
	case TIR_BIN:
		if (e->op != BIN_ADD && e->op != BIN_SUB && e->op != BIN_MUL)
			return false;
		if (!affine_of(P, e->a, &x) || !affine_of(P, e->b, &y))
			return false;
		if (e->op != BIN_MUL)
			return aff_axpy(r, &x, e->op == BIN_ADD ? 1 : -1, &y);
		if (x.n && y.n)
			return false;
		if (x.n)
			return aff_axpy(r, &zero, y.c, &x);
		return aff_axpy(r, &zero, x.c, &y);
	default:
		return false;
	}
}

static int cmp_term(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;

	return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

/* Records an access of buffer b at idx (only written buffers matter). */
static void record(struct prover *P, int b, const struct tir *idx)
{
	struct bufacc *ba = &P->bufs[b];
	struct affine r;
	struct sig sig;
	int64_t a[DEVLOOP_MAX_NEST], lo, hi;

	if (!ba->written || !P->ok)
		return;
	if (!affine_of(P, idx, &r)) {
		P->ok = false;
		return;
	}
	memset(a, 0, sizeof(a));
	memset(&sig, 0, sizeof(sig));
	sig.c = lo = hi = r.c;
	for (int i = 0; i < r.n; i++) {
		int k = -1;
		int64_t ext = P->ext[r.var[i]], span;

		for (int j = 0; j < P->n_nest; j++)
			if (P->nest[j]->var->id == r.var[i])
				k = j;
		if (k >= 0) {
			a[k] = r.coef[i];
			continue;
		}
		if (ext < 0 || __builtin_mul_overflow(r.coef[i], ext > 0 ? ext - 1 : 0, &span) ||
		    __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) {
			P->ok = false;
			return;
		}
		if (r.coef[i] != 0 && ext > 1) {
			sig.t[sig.n][0] = r.coef[i];
			sig.t[sig.n++][1] = ext;
		}
	}
	qsort(sig.t, (size_t)sig.n, sizeof(sig.t[0]), cmp_term);
	if (!ba->seen) {
		memcpy(ba->a, a, sizeof(a));
		ba->lo = lo;
		ba->hi = hi;
		ba->sig = sig;
		ba->same = true;
		ba->seen = true;
		return;
	}
	if (memcmp(ba->a, a, sizeof(a)) != 0) {
		P->ok = false;
		return;
	}
	ba->same &= memcmp(&ba->sig, &sig, sizeof(sig)) == 0;
	ba->lo = lo < ba->lo ? lo : ba->lo;
	ba->hi = hi > ba->hi ? hi : ba->hi;
}

static void walk_expr(struct prover *P, const struct tir *e)
{
	if (!e || !P->ok)
		return;
	if (e->kind == TIR_LOAD)
		record(P, e->buf->index, e->a);
	if (e->kind == TIR_CALL)
		for (int i = 0; i < e->n; i++)
			walk_expr(P, e->list[i]);
	walk_expr(P, e->a);
	walk_expr(P, e->b);
	walk_expr(P, e->c);
}

/* pass 0 marks written buffers and inner loops, pass 1 records accesses */
static void walk(struct prover *P, const struct tir *s, int pass)
{
	if (!P->ok)
		return;
	switch (s->kind) {
	case TIR_SEQ:
		for (int i = 0; i < s->n; i++)
			walk(P, s->list[i], pass);
		break;
	case TIR_FOR:
		if (pass == 0) {
			P->inner[s->var->id] = true;
			P->ext[s->var->id] = s->a->kind == TIR_INT ? s->a->i : -1;
		} else {
			walk_expr(P, s->a);
		}
		walk(P, s->b, pass);
		break;
	case TIR_STORE:
		if (pass == 0) {
			P->bufs[s->buf->index].written = true;
		} else {
			record(P, s->buf->index, s->a);
			walk_expr(P, s->a);
			walk_expr(P, s->b);
		}
		break;
	case TIR_IF:
		if (pass == 1)
			walk_expr(P, s->a);
		walk(P, s->b, pass);
		if (s->c)
			walk(P, s->c, pass);
		break;
	case TIR_LET:
		if (pass == 1) {
			struct affine r;

			walk_expr(P, s->a);
			if (affine_of(P, s->a, &r)) {
				P->let[s->var->id] = arena_memdup(P->arena, &r, sizeof(r));
			}
		}
		break;
	case TIR_ASSIGN:
		if (pass == 1)
			walk_expr(P, s->a);
		break;
	default:
		P->ok = false;	/* extern calls */
		break;
	}
}

static int cmp_abs(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;
	int64_t u = a[0] < 0 ? -a[0] : a[0], v = b[0] < 0 ? -b[0] : b[0];

	return u < v ? -1 : u > v;
}

/*
 * Mixed radix: with the terms (coefficient, extent; -1 = not constant)
 * sorted by |coefficient|, is each |coefficient| at least need plus the
 * reach of the smaller terms, sum |c_j| * (extent_j - 1)? Then the values of
 * sum c_k * x_k, x_k in [0, extent_k), lie at least need apart. Only the
 * largest term may have an unknown extent.
 */
static bool mixed_radix(int64_t (*t)[2], int n, int64_t need)
{
	qsort(t, (size_t)n, sizeof(t[0]), cmp_abs);
	for (int k = 0; k < n; k++) {
		int64_t a = t[k][0] < 0 ? -t[k][0] : t[k][0], span;

		if (a < need)
			return false;
		if (k + 1 < n && (t[k][1] < 0 || __builtin_mul_overflow(a, t[k][1] - 1, &span) ||
				  __builtin_add_overflow(need, span, &need)))
			return false;
	}
	return true;
}

/*
 * Are the loops nest[0..n) (perfectly nested, outermost first) jointly
 * parallel? Every buffer written inside must be accessed (read or written)
 * only at affine indices c + a . nest_vars + b . inner_vars with constant
 * coefficients, the same a on every access, and inner loops of constant
 * extent. Then either
 *  - the nest terms alone form a mixed radix whose steps exceed the range
 *    [lo, hi] of the rest over all accesses, or
 *  - every access has the same inner terms and constant, and nest and inner
 *    terms together form a mixed radix (the whole index is injective),
 * so distinct iterations of the nest never touch the same element of a
 * buffer that one of them writes.
 */
static bool nest_parallel(struct graph *g, const struct tir_func *f, const struct tir *const *nest,
			  int n, const bool *assigned)
{
	struct prover P = { 0 };

	if (n > DEVLOOP_MAX_NEST)
		return false;
	P.f = f;
	P.n_nest = n;
	P.nest = nest;
	P.arena = g->arena;
	P.let = arena_alloc(g->arena, sizeof(*P.let) * (size_t)(f->n_vars + 1));
	P.ext = arena_alloc(g->arena, sizeof(*P.ext) * (size_t)(f->n_vars + 1));
	P.inner = arena_alloc(g->arena, sizeof(*P.inner) * (size_t)(f->n_vars + 1));
	P.assigned = (bool *)assigned;
	P.bufs = arena_alloc(g->arena, sizeof(*P.bufs) * (size_t)(f->n_bufs + 1));
	P.ok = true;
	walk(&P, nest[n - 1]->b, 0);
	walk(&P, nest[n - 1]->b, 1);
	if (!P.ok)
		return false;
	for (int b = 0; b < f->n_bufs; b++) {
		const struct bufacc *ba = &P.bufs[b];
		int64_t t[DEVLOOP_MAX_NEST + MAX_TERMS][2], need;
		int nt = 0;

		if (!ba->written || !ba->seen)
			continue;
		for (int k = 0; k < n; k++) {
			const struct tir *e = nest[k]->a;

			if (e->kind == TIR_INT && e->i <= 1)
				continue;	/* one iteration (or none) */
			if (ba->a[k] == 0)
				return false;	/* iterations touch the same place */
			t[nt][0] = ba->a[k];
			t[nt++][1] = e->kind == TIR_INT ? e->i : -1;
		}
		if (!__builtin_sub_overflow(ba->hi, ba->lo, &need) &&
		    !__builtin_add_overflow(need, 1, &need) && mixed_radix(t, nt, need))
			continue;
		if (!ba->same)
			return false;
		memcpy(&t[nt], ba->sig.t, sizeof(ba->sig.t[0]) * (size_t)ba->sig.n);
		if (!mixed_radix(t, nt + ba->sig.n, 1))
			return false;
	}
	return true;
}

/* ---- stages ---- */

bool devloop_unit_loop(const struct tir *s)
{
	return s->a->kind == TIR_INT && s->a->i == 1;
}

/* How many loops of the nest at s run as an range (0: none). */
static int plan_nest(struct graph *g, const struct tir_func *f, const struct tir *s,
		     const bool *assigned, const struct tir **nest)
{
	int n = 0, dims = 0;

	while (s->kind == TIR_FOR && n < DEVLOOP_MAX_NEST && devloop_host_expr(s->a)) {
		if (!devloop_unit_loop(s)) {
			if (dims == 3)
				break;
			dims++;
		}
		nest[n++] = s;
		if (s->b->kind != TIR_SEQ || s->b->n != 1)
			break;
		s = s->b->list[0];
	}
	for (; n > 0; n--) {
		bool marked = true;

		for (int i = 0; i < n; i++)
			marked &= nest[i]->parallel || devloop_unit_loop(nest[i]);
		if (marked || nest_parallel(g, f, nest, n, assigned))
			break;
	}
	return n;
}

/*
 * The parallel step for one function: which top-level loop nests of f run
 * as ranges, recorded as TIR_FOR .region on their head (how many loops,
 * those of extent 1 included). None when a top-level local makes the body
 * one single work-item, when the nests would make more than DEVLOOP_MAX_STAGES
 * stages, or when f cannot be printed (print_func reports that).
 */
static void plan_ndranges(struct graph *g, struct tir_func *f)
{
	bool *used = arena_alloc(g->arena, sizeof(bool) * (size_t)(g->syms.n + 1));
	bool *assigned = arena_alloc(g->arena, sizeof(bool) * (size_t)(f->n_vars + 1));
	int *n = arena_alloc(g->arena, sizeof(int) * (size_t)(f->body->n + 1));
	struct tir *body = f->body;
	int ns = 0;
	bool last_nd = false;

	for (int i = 0; i < body->n; i++) {
		if (body->list[i]->kind == TIR_FOR)
			body->list[i]->region = 0;
		if (body->list[i]->kind == TIR_LET || body->list[i]->kind == TIR_ASSIGN)
			return;
	}
	if (!devloop_scan(body, used, g->syms.n, assigned))
		return;
	for (int i = 0; i < body->n; i++) {
		const struct tir *nest[DEVLOOP_MAX_NEST];
		const struct tir *st = body->list[i];

		n[i] = st->kind == TIR_FOR ? plan_nest(g, f, st, assigned, nest) : 0;
		if (n[i] > 0 || ns == 0 || last_nd)
			ns++;
		last_nd = n[i] > 0;
	}
	if (ns > DEVLOOP_MAX_STAGES)
		return;
	for (int i = 0; i < body->n; i++)
		if (n[i] > 0)
			body->list[i]->region = n[i];
}

/* plan_ndranges for every function of p's kernels. */
int devloop_plan_parallel(struct graph *g, const struct target *t, struct partition *p)
{
	(void)t;
	for (int i = 0; i < p->kernels.n; i++) {
		struct kernel *k = &p->kernels.v[i];

		for (int v = 0; v < k->n_variants; v++)
			if (k->variants[v].func != k->func)
				plan_ndranges(g, k->variants[v].func);
		if (k->func)
			plan_ndranges(g, k->func);
	}
	return 0;
}

/*
 * Splits f's body into stages as the parallel step decided: each top-level
 * loop nest whose head has a region is an range stage over that many
 * loops, runs of other statements are single work-item stages. A body with
 * top-level locals is one single work-item stage.
 */
int devloop_stages(const struct tir_func *f, struct devloop_stage *st)
{
	const struct tir *body = f->body;
	int ns = 0;

	for (int i = 0; i < body->n; i++)
		if (body->list[i]->kind == TIR_LET || body->list[i]->kind == TIR_ASSIGN) {
			st[0].n_nest = 0;
			st[0].n_stmts = body->n;
			st[0].stmts = (const struct tir *const *)body->list;
			return 1;
		}
	for (int i = 0; i < body->n; i++) {
		const struct tir *s = body->list[i];
		const struct tir *nest[DEVLOOP_MAX_NEST];
		int n = s->kind == TIR_FOR && s->region > 0 ? s->region : 0;

		for (int k = 0; k < n; k++) {
			nest[k] = s;
			if (k + 1 < n)
				s = s->b->list[0];
		}
		if (n > 0 || ns == 0 || st[ns - 1].n_nest > 0) {
			if (ns == DEVLOOP_MAX_STAGES) {
				/* too many: everything as one work-item */
				st[0].n_nest = 0;
				st[0].n_stmts = body->n;
				st[0].stmts = (const struct tir *const *)body->list;
				return 1;
			}
			st[ns].n_nest = n;
			memcpy(st[ns].nest, nest, sizeof(nest[0]) * (size_t)n);
			st[ns].n_stmts = 1;
			st[ns].stmts = (const struct tir *const *)&body->list[i];
			ns++;
		} else {
			st[ns - 1].n_stmts++;
		}
	}
	return ns;
}


/* Number of dims of a stage's range. */
int devloop_stage_dims(const struct devloop_stage *s)
{
	int d = 0;

	for (int i = 0; i < s->n_nest; i++)
		d += !devloop_unit_loop(s->nest[i]);
	return d;
}

/* Bytes of kernel argument value v, as a C expression over syms[]. */
void devloop_print_bytes(const struct value *v, struct strbuf *sb)
{
	int64_t c = (int64_t)dtype_size(v->dtype);

	for (int k = 0; k < v->shape.rank; k++)
		if (__builtin_mul_overflow(c, v->shape.d[k].c, &c))
			c = INT64_MAX;		/* cannot be allocated anyway */
	sb_printf(sb, "INT64_C(%lld)", (long long)c);
	for (int k = 0; k < v->shape.rank; k++)
		for (int j = 0; j < v->shape.d[k].n; j++)
			sb_printf(sb, " * syms[%d]", v->shape.d[k].sym[j]);
}

void devloop_print_host_args(struct graph *g, const struct kernel *k, const struct tir_func *f,
			     const struct target_kind **where,
			     bool (*same)(const struct target_kind *k), const char *scalar,
			     const int *syms, int n_syms, struct strbuf *sb)
{
	sb_printf(sb, "static void %s(void *const *bufs, const int64_t *syms, int threads)\n{\n",
		  f->name);
	sb_printf(sb, "\tconst int64_t bytes[%d] = {\n", f->n_bufs ? f->n_bufs : 1);
	for (int i = 0; i < f->n_bufs; i++) {
		sb_puts(sb, "\t\t");
		devloop_print_bytes(&g->values.v[k->args[i]], sb);
		sb_puts(sb, ",\n");
	}
	sb_printf(sb, "\t};\n\tstatic const unsigned char flags[%d] = {",
		  f->n_bufs ? f->n_bufs : 1);
	for (int i = 0; i < f->n_bufs; i++)
		sb_printf(sb, " %d,", devloop_arg_flags(g, where, k->args[i], i < k->n_inputs, same));
	sb_printf(sb, "%s };\n\tconst %s scalars[%d] = {", f->n_bufs ? "" : " 0", scalar,
		  n_syms ? n_syms : 1);
	for (int i = 0; i < n_syms; i++)
		sb_printf(sb, " syms[%d],", syms[i]);
	sb_printf(sb, "%s };\n", n_syms ? "" : " 0");
}

/*
 * Where each node runs: its partition's target kind (g->lowering), NULL
 * for a node of no partition.
 */
const struct target_kind **devloop_node_kinds(struct graph *g)
{
	const struct target_kind **w = arena_alloc(g->arena, sizeof(*w) * (size_t)(g->nodes.n + 1));

	for (int i = 0; i < g->n_lowering; i++)
		for (int j = 0; j < g->lowering[i].n_nodes; j++)
			w[g->lowering[i].nodes[j]] = g->lowering[i].target->kind;
	return w;
}

int devloop_arg_flags(struct graph *g, const struct target_kind **where, int v, bool input,
		      bool (*same)(const struct target_kind *k))
{
	const struct value *val = &g->values.v[v];
	bool host = false, dev = false, out = false;

	if (input) {
		if (val->data)
			return DEVLOOP_CONST;
		if (val->producer >= 0 && where[val->producer] && same(where[val->producer]))
			return DEVLOOP_DEV;
		return 0;
	}
	for (int i = 0; i < g->nodes.n && !host; i++) {
		const struct node *n = &g->nodes.v[i];

		if (n->dead)
			continue;
		for (int j = 0; j < n->n_in; j++) {
			if (n->in[j] != v)
				continue;
			if (where[i] && same(where[i]) && !node_is_dynamic(g, n))
				dev = true;
			else
				host = true;
		}
	}
	for (int i = 0; i < g->outputs.n; i++)
		out |= g->outputs.v[i] == v;
	return (dev ? DEVLOOP_KEEP : 0) | (host ? DEVLOOP_SYNC : out ? DEVLOOP_LATE : 0);
}

int devloop_probe(void (*fill)(void *out), void *out, size_t size)
{
	size_t got = 0;
	ssize_t n;
	int fds[2], st = 0;
	pid_t pid;

	if (pipe(fds) < 0) {
		fill(out);
		return 0;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		fill(out);
		return 0;
	}
	if (pid == 0) {
		close(fds[0]);
		fill(out);
		_exit(write(fds[1], out, size) == (ssize_t)size ? 0 : 1);
	}
	close(fds[1]);
	while (got < size && ((n = read(fds[0], (char *)out + got, size - got)) > 0 ||
			      (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (got == size)
		return 0;
	return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}
