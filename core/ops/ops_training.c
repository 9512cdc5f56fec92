/*
 * ops_training.c - the optimizers of domain ai.onnx.preview.training:
 * Adagrad, Adam and Momentum. Each node updates n tensors at once: inputs
 * R (the learning rate, a scalar), T (the step count, an int64 scalar),
 * then n X, n G and n state tensors per state (Adagrad's H, Momentum's V,
 * Adam's V and H); outputs the n new X, then the n new values of each
 * state. Every element is independent, computed in double.
 */
#include "ops.h"

#include <math.h>
#include <string.h>

/* The state tensors per updated tensor: Adam keeps two, the others one. */
static int opt_states(enum op op)
{
	return op == OP_ADAM ? 2 : 1;
}

/* Number of tensors the node updates; -1 after a diagnostic. */
static int opt_count(struct graph *g, const struct node *n)
{
	int per = 2 + opt_states(n->op), k = (n->n_in - 2) / per;

	if (n->n_in < 2 + per || (n->n_in - 2) % per || n->n_out != k * (1 + opt_states(n->op))) {
		diag_error(g->ctx, "%s: expected R, T, then X, G%s for n tensors (2 + %d n inputs, "
			   "%d n outputs)", node_loc(g, n), n->op == OP_ADAM ? ", V, H" :
			   n->op == OP_ADAGRAD ? ", H" : ", V", per, 1 + opt_states(n->op));
		return -1;
	}
	return k;
}

/* Momentum's attributes are all required, and its mode is standard or nesterov. */
static int opt_attrs(struct graph *g, const struct node *n)
{
	static const char *const req[] = { "alpha", "beta", "mode", "norm_coefficient" };
	const char *m;

	if (n->op != OP_MOMENTUM)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(req); i++)
		if (!node_attr(n, req[i])) {
			diag_error(g->ctx, "%s: attribute '%s' is required", node_loc(g, n), req[i]);
			return -1;
		}
	m = node_attr_str(n, "mode", "");
	if (strcmp(m, "standard") && strcmp(m, "nesterov")) {
		diag_error(g->ctx, "%s: mode '%s' is not one of standard, nesterov",
			   node_loc(g, n), m);
		return -1;
	}
	return 0;
}

/*
 * R is a float scalar, T an int64 scalar; each X, its G and its states
 * share a float type and a shape, which the outputs take.
 */
int infer_optimizer(struct graph *g, struct node *n)
{
	int k = opt_count(g, n), s = opt_states(n->op);
	struct value *r, *t;
	struct dim nr, nt;

	if (k < 0 || opt_attrs(g, n) < 0 || !(r = infer_input(g, n, 0)) ||
	    !(t = infer_input(g, n, 1)))
		return -1;
	if (!dtype_is_float(r->dtype) || t->dtype != DTYPE_I64 || r->shape.rank > 1 ||
	    t->shape.rank > 1 || !shape_numel(&r->shape, &nr) || !dim_eq(nr, dim_const(1)) ||
	    !shape_numel(&t->shape, &nt) || !dim_eq(nt, dim_const(1))) {
		diag_error(g->ctx, "%s: R must be a float scalar and T an int64 scalar",
			   node_loc(g, n));
		return -1;
	}
	for (int i = 0; i < k; i++) {
		struct value *x = infer_input(g, n, 2 + i);

		if (!x)
			return -1;
		for (int j = 1; j < 2 + s; j++) {
			struct value *o = infer_input(g, n, 2 + j * k + i);

			if (!o)
				return -1;
			if (!dtype_is_float(x->dtype) || o->dtype != x->dtype ||
			    !shape_eq(&o->shape, &x->shape)) {
				diag_error(g->ctx, "%s: input %d must have the float type and "
					   "shape of X%d", node_loc(g, n), 2 + j * k + i, i + 1);
				return -1;
			}
		}
		for (int j = 0; j < 1 + s; j++)
			infer_set(g, n, j * k + i, x->dtype, &x->shape);
	}
	return 0;
}

/* Scalar inputs of one update, all double. */
struct opt_scalars {
	struct tir *r;		/* learning rate, adjusted for T where the op does */
	struct tir *t;		/* step count */
};

/*
 * Element of tensor i at offset e: g_reg = norm_coefficient * x + g, then
 *   Adagrad:  h' = h + g_reg^2;  x' = x - r / (1 + t decay) * g_reg / (sqrt(h') + eps)
 *   Momentum: v' = alpha v + (t > 0 ? beta : 1) g_reg;  x' = x - r v' (standard)
 *             or x - r (g_reg + alpha v') (nesterov)
 *   Adam:     v' = alpha v + (1 - alpha) g_reg;  h' = beta h + (1 - beta) g_reg^2;
 *             x' = (1 - norm_coefficient_post) (x - r_t v' / (sqrt(h') + eps)),
 *             r_t = r sqrt(1 - beta^t) / (1 - alpha^t) when t > 0
 */
static void opt_element(struct lower *L, int k, int i, const struct opt_scalars *sc,
			struct tir *e)
{
	struct tir_builder *b = L->b;
	const struct node *n = L->n;
	enum dtype d = DTYPE_F64, t = lower_out(L, i)->dtype;
	double nc = node_attr_float(n, "norm_coefficient", 0);
	struct tir *x, *g, *gr, *xn, *one = tir_const(b, d, 1);

#define IN(j) tir_let(b, "in", tir_cast(b, d, tir_load(b, L->in[2 + (j) * k + i], e)))
#define OUT(j, v) tir_store(b, L->out[(j) * k + i], e, tir_cast(b, t, v))
	x = IN(0);
	g = IN(1);
	gr = tir_let(b, "gr", tir_add(b, tir_mul(b, tir_const(b, d, nc), x), g));
	if (n->op == OP_ADAGRAD) {
		struct tir *h = tir_let(b, "h", tir_add(b, IN(2), tir_mul(b, gr, gr)));
		struct tir *den = tir_add(b, tir_call1(b, INTRIN_SQRT, h),
					  tir_const(b, d, node_attr_float(n, "epsilon", 1e-6)));

		xn = tir_bin(b, BIN_SUB, x, tir_bin(b, BIN_DIV, tir_mul(b, sc->r, gr), den));
		OUT(1, h);
	} else if (n->op == OP_MOMENTUM) {
		double alpha = node_attr_float(n, "alpha", 0), beta = node_attr_float(n, "beta", 0);
		struct tir *bt = tir_select(b, tir_bin(b, BIN_GT, sc->t, tir_const(b, d, 0)),
					    tir_const(b, d, beta), one);
		struct tir *v = tir_let(b, "v", tir_add(b, tir_mul(b, tir_const(b, d, alpha), IN(2)),
							tir_mul(b, bt, gr)));
		struct tir *step = v;

		if (!strcmp(node_attr_str(n, "mode", ""), "nesterov"))
			step = tir_add(b, gr, tir_mul(b, tir_const(b, d, alpha), v));
		xn = tir_bin(b, BIN_SUB, x, tir_mul(b, sc->r, step));
		OUT(1, v);
	} else {
		double alpha = node_attr_float(n, "alpha", 0.9), beta = node_attr_float(n, "beta", 0.999);
		double post = node_attr_float(n, "norm_coefficient_post", 0);
		struct tir *v = tir_let(b, "v", tir_add(b, tir_mul(b, tir_const(b, d, alpha), IN(2)),
							tir_mul(b, tir_const(b, d, 1 - alpha), gr)));
		struct tir *h = tir_let(b, "h", tir_add(b, tir_mul(b, tir_const(b, d, beta), IN(3)),
							tir_mul(b, tir_const(b, d, 1 - beta),
								tir_mul(b, gr, gr))));
		struct tir *den = tir_add(b, tir_call1(b, INTRIN_SQRT, h),
					  tir_const(b, d, node_attr_float(n, "epsilon", 1e-6)));

		xn = tir_bin(b, BIN_SUB, x, tir_mul(b, sc->r, tir_bin(b, BIN_DIV, v, den)));
		xn = tir_mul(b, tir_const(b, d, 1 - post), xn);
		OUT(1, v);
		OUT(2, h);
	}
	OUT(0, xn);
#undef IN
#undef OUT
}

/* The learning rate of this step: Adagrad decays it, Adam corrects its bias. */
static struct tir *opt_rate(struct lower *L, struct tir *r, struct tir *t)
{
	struct tir_builder *b = L->b;
	const struct node *n = L->n;
	enum dtype d = DTYPE_F64;
	struct tir *one = tir_const(b, d, 1);

	if (n->op == OP_ADAGRAD)
		return tir_bin(b, BIN_DIV, r, tir_add(b, one, tir_mul(b, t, tir_const(b, d,
					node_attr_float(n, "decay_factor", 0)))));
	if (n->op == OP_ADAM) {
		struct tir *a = tir_const(b, d, node_attr_float(n, "alpha", 0.9));
		struct tir *be = tir_const(b, d, node_attr_float(n, "beta", 0.999));
		struct tir *adj = tir_bin(b, BIN_DIV, tir_mul(b, r, tir_call1(b, INTRIN_SQRT,
				tir_bin(b, BIN_SUB, one, tir_call2(b, INTRIN_POW, be, t)))),
				tir_bin(b, BIN_SUB, one, tir_call2(b, INTRIN_POW, a, t)));

		return tir_select(b, tir_bin(b, BIN_GT, t, tir_const(b, d, 0)), adj, r);
	}
	return r;
}

/* One loop per updated tensor over its elements. */
int lower_optimizer(struct lower *L)
{
	struct tir_builder *b = L->b;
	int k = opt_count(L->g, L->n);
	struct opt_scalars sc;
	struct tir *r;

	if (k < 0)
		return -1;
	r = tir_let(L->b, "r", tir_cast(b, DTYPE_F64, tir_load(b, L->in[0], tir_int(b, 0))));
	sc.t = tir_let(L->b, "t", tir_cast(b, DTYPE_F64, tir_load(b, L->in[1], tir_int(b, 0))));
	sc.r = tir_let(L->b, "rate", opt_rate(L, r, sc.t));
	for (int i = 0; i < k; i++) {
		struct tir *e = tir_loop(b, lower_numel(L, &lower_in(L, 2 + i)->shape));

		tir_mark_parallel(b);
		opt_element(L, k, i, &sc, e);
		tir_end(b);
	}
	return 0;
}
