/*
 * ops_random.c - the random ops: RandomUniform, RandomNormal, their Like
 * variants, Bernoulli and Multinomial. Each lowers to one call of a helper
 * of runtime/rt_random.h over its whole output; training-mode Dropout
 * (ops_elemwise.c) calls one too.
 *
 * An op's values are a pure function of (key, element index). With a seed
 * attribute the key is fixed here, at compile time, from the seed alone
 * (rt_rand_seed_key): the op gives the same values on every run. Without
 * one the helper draws a fresh key per execution. op_is_random() keeps the
 * constant folder away from all of them, seeded or not.
 */
#include "ops.h"

#define RT_RANDOM_KEYS_ONLY
#include "../../runtime/rt_random.h"

bool op_is_random(struct graph *g, const struct node *n)
{
	switch (n->op) {
	case OP_RANDOMUNIFORM:
	case OP_RANDOMUNIFORMLIKE:
	case OP_RANDOMNORMAL:
	case OP_RANDOMNORMALLIKE:
	case OP_BERNOULLI:
	case OP_MULTINOMIAL:
		return true;
	case OP_DROPOUT:
		return dropout_is_training(g, n);
	default:
		return false;
	}
}

/*
 * The two extern arguments that give an op its key: has_seed and the seed's
 * key (0 when unseeded). seed is a float attribute, Dropout's an int.
 */
void lower_rand_key(struct lower *L, struct tir **args)
{
	const struct attr *a = node_attr(L->n, "seed");
	double seed = 0;

	if (a)
		seed = L->n->op == OP_DROPOUT ? (double)node_attr_int(L->n, "seed", 0)
					      : node_attr_float(L->n, "seed", 0);
	args[0] = tir_int(L->b, a != NULL);
	args[1] = tir_int(L->b, a ? (int64_t)rt_rand_seed_key(seed) : 0);
}

/*
 * The dtype attribute (an ONNX number) or def when absent; -1 after a
 * diagnostic when it is not one of the types the op may give (float: the
 * four float types; else every numeric type and bool).
 */
static enum dtype rand_dtype(struct graph *g, struct node *n, enum dtype def, bool float_only)
{
	int64_t to = node_attr_int(n, "dtype", def == DTYPE_UNDEF ? 0 : dtype_to_onnx(def));
	enum dtype t = node_attr(n, "dtype") ? dtype_from_onnx((int)to) : def;

	if (t == DTYPE_UNDEF || dtype_is_string(t) || (float_only && !dtype_is_float(t))) {
		diag_error(g->ctx, "%s: output type %lld is not one the op gives (%s)",
			   node_loc(g, n), (long long)to,
			   float_only ? "float16, bfloat16, float or double"
				      : "a numeric type or bool");
		return DTYPE_UNDEF;
	}
	return t;
}

/* Requires float input i (the probabilities or logits of Bernoulli, Multinomial). */
static struct value *float_input(struct graph *g, struct node *n, int i)
{
	struct value *x = infer_input(g, n, i);

	if (x && !dtype_is_float(x->dtype)) {
		diag_error(g->ctx, "%s: input must be float16, bfloat16, float or double, not %s",
			   node_loc(g, n), dtype_name(x->dtype));
		return NULL;
	}
	return x;
}

/* ---- RandomUniform, RandomNormal and their Like variants ---- */

/* The shape attribute: non-negative dims, at most MAX_RANK of them. */
static int shape_attr(struct graph *g, struct node *n, struct shape *s)
{
	const int64_t *d;
	int rank = node_attr_ints(n, "shape", &d);

	if (!node_attr(n, "shape") || rank > MAX_RANK) {
		diag_error(g->ctx, "%s: needs the attribute 'shape', of rank at most %d",
			   node_loc(g, n), MAX_RANK);
		return -1;
	}
	s->rank = rank;
	for (int k = 0; k < rank; k++) {
		if (d[k] < 0) {
			diag_error(g->ctx, "%s: attr 'shape': dim %d is negative (%lld)",
				   node_loc(g, n), k, (long long)d[k]);
			return -1;
		}
		s->d[k] = dim_const(d[k]);
	}
	return 0;
}

int infer_random(struct graph *g, struct node *n)
{
	struct shape s;
	enum dtype t;

	if (infer_arity(g, n, 0, 0, 1) < 0 || shape_attr(g, n, &s) < 0)
		return -1;
	if ((t = rand_dtype(g, n, DTYPE_F32, true)) == DTYPE_UNDEF)
		return -1;
	infer_set(g, n, 0, t, &s);
	return 0;
}

int infer_random_like(struct graph *g, struct node *n)
{
	struct value *x;
	enum dtype t;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if ((t = rand_dtype(g, n, x->dtype, true)) == DTYPE_UNDEF)
		return -1;
	infer_set(g, n, 0, t, &x->shape);
	return 0;
}

/* One rt_rand_uniform or rt_rand_normal call over the output. */
int lower_random(struct lower *L)
{
	const struct value *y = lower_out(L, 0);
	bool normal = L->n->op == OP_RANDOMNORMAL || L->n->op == OP_RANDOMNORMALLIKE;
	struct tir *args[7];

	args[0] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, dtype_to_onnx(y->dtype));
	args[2] = lower_numel(L, &y->shape);
	args[3] = tir_flt(L->b, DTYPE_F64, normal ? node_attr_float(L->n, "mean", 0)
						   : node_attr_float(L->n, "low", 0));
	args[4] = tir_flt(L->b, DTYPE_F64, normal ? node_attr_float(L->n, "scale", 1)
						   : node_attr_float(L->n, "high", 1));
	lower_rand_key(L, args + 5);
	tir_extern(L->b, normal ? "rt_rand_normal" : "rt_rand_uniform", args, 7);
	return 0;
}

/* ---- Bernoulli ---- */

int infer_bernoulli(struct graph *g, struct node *n)
{
	struct value *p;
	enum dtype t;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(p = float_input(g, n, 0)))
		return -1;
	if ((t = rand_dtype(g, n, p->dtype, false)) == DTYPE_UNDEF)
		return -1;
	infer_set(g, n, 0, t, &p->shape);
	return 0;
}

/* One rt_rand_bernoulli call: y = u < p, element by element. */
int lower_bernoulli(struct lower *L)
{
	struct tir *args[7];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, dtype_to_onnx(lower_in(L, 0)->dtype));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = tir_int(L->b, dtype_to_onnx(lower_out(L, 0)->dtype));
	args[4] = lower_numel(L, &lower_out(L, 0)->shape);
	lower_rand_key(L, args + 5);
	tir_extern(L->b, "rt_rand_bernoulli", args, 7);
	return 0;
}

/* ---- Multinomial ---- */

/* input [batch, class] of unnormalised log-probabilities; output [batch, sample_size]. */
int infer_multinomial(struct graph *g, struct node *n)
{
	int64_t samples = node_attr_int(n, "sample_size", 1);
	struct value *x;
	struct shape s;
	enum dtype t;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = float_input(g, n, 0)))
		return -1;
	if (x->shape.rank != 2 || samples < 0) {
		diag_error(g->ctx, "%s: needs an input of rank 2 ([batch, class], not rank %d) "
			   "and a sample_size of 0 or more", node_loc(g, n), x->shape.rank);
		return -1;
	}
	t = rand_dtype(g, n, DTYPE_I32, false);
	if (t != DTYPE_I32 && t != DTYPE_I64) {
		if (t != DTYPE_UNDEF)
			diag_error(g->ctx, "%s: attr 'dtype': output must be int32 or int64, not %s",
				   node_loc(g, n), dtype_name(t));
		return -1;
	}
	s.rank = 2;
	s.d[0] = x->shape.d[0];
	s.d[1] = dim_const(samples);
	infer_set(g, n, 0, t, &s);
	return 0;
}

/* One rt_rand_multinomial call over every row. */
int lower_multinomial(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	struct tir *args[9];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, dtype_to_onnx(x->dtype));
	args[2] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[3] = tir_int(L->b, dtype_to_onnx(lower_out(L, 0)->dtype));
	args[4] = tir_dim(L->b, x->shape.d[0]);
	args[5] = tir_dim(L->b, x->shape.d[1]);
	args[6] = tir_int(L->b, node_attr_int(L->n, "sample_size", 1));
	lower_rand_key(L, args + 7);
	tir_extern(L->b, "rt_rand_multinomial", args, 9);
	return 0;
}
