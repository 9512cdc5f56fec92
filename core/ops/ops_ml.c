/*
 * ops_ml.c - the ops of domain ai.onnx.ml (opsets 1 to 5) that models
 * converted from scikit-learn and the like carry: ArrayFeatureExtractor,
 * Binarizer, LabelEncoder (1, 2 and 4), TreeEnsemble (5) and
 * TreeEnsembleRegressor (1 and 3).
 *
 * ArrayFeatureExtractor and Binarizer are loop nests. LabelEncoder and the
 * tree ensembles call runtime/rt_ml.h's kernels on tables that infer lays
 * out once from the node's attributes and appends to its inputs as
 * constants (so the first infer of a node with one input builds them):
 *
 *   LabelEncoder    x, keys (sorted, each once), values, default
 *   TreeEnsemble*   x, nodes [B, 7], splits [B], members, leaves [L, 2],
 *                   weights [P], targets [P], roots [T], base [targets]
 *
 * rt_ml.h says what the tables hold. Every table is checked here, so a
 * malformed model is refused naming the node, and the run-time walk never
 * leaves its tables or loops.
 */
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/rt_ml.h"

/* rt_ml.h's code of dtype t; -1 when its kernels do not take t. */
static int ml_code(enum dtype t)
{
	switch (t) {
	case DTYPE_STR: return RT_ML_STR;
	case DTYPE_I64: return RT_ML_I64;
	case DTYPE_I32: return RT_ML_I32;
	case DTYPE_I16: return RT_ML_I16;
	case DTYPE_F32: return RT_ML_F32;
	case DTYPE_F64: return RT_ML_F64;
	case DTYPE_F16: return RT_ML_F16;
	default: return -1;
	}
}

/* Appends value id as n's next input. */
static void add_input(struct graph *g, struct node *n, int id)
{
	int *in = arena_alloc(g->arena, sizeof(int) * (size_t)(n->n_in + 1));

	memcpy(in, n->in, sizeof(int) * (size_t)n->n_in);
	in[n->n_in++] = id;
	n->in = in;
}

/* Appends a new constant of dtype t and shape [d0] or [d0, d1] (d1 > 0). */
static void add_table(struct graph *g, struct node *n, const char *what, enum dtype t,
		      int64_t d0, int64_t d1, const void *data)
{
	struct shape s = { d1 > 0 ? 2 : 1, { { d0, 0, { 0 } }, { d1, 0, { 0 } } } };

	add_input(g, n, graph_add_const(g, arena_printf(g->arena, "%s.%s", n->name, what), t,
					&s, data));
}

/* ---- ArrayFeatureExtractor ---- */

/*
 * Z: X's shape with its last axis replaced by Y's element count (a vector
 * X gives [1, count], as ONNX Runtime's kernel does); Y's elements index
 * X's last axis, clamped into it.
 */
int infer_arrayfeatureextractor(struct graph *g, struct node *n)
{
	struct value *x, *y;
	struct shape s;
	struct dim k;

	if (infer_arity(g, n, 2, 2, 1) < 0 || !(x = infer_input(g, n, 0)) ||
	    !(y = infer_input(g, n, 1)))
		return -1;
	if (y->dtype != DTYPE_I64 || x->shape.rank < 1 || ml_code(x->dtype) < 0 ||
	    x->dtype == DTYPE_F16 || x->dtype == DTYPE_I16) {
		diag_error(g->ctx, "%s: X must be a float, double, int64, int32 or string tensor "
			   "of rank 1 or more and Y int64", node_loc(g, n));
		return -1;
	}
	if (y->shape.rank == 1)
		k = y->shape.d[0];
	else if (shape_is_static(&y->shape))
		k = dim_const(shape_numel_static(&y->shape));
	else {
		diag_error(g->ctx, "%s: Y of rank %d needs a static shape", node_loc(g, n),
			   y->shape.rank);
		return -1;
	}
	s = x->shape;
	if (s.rank == 1) {
		s.rank = 2;
		s.d[0] = dim_const(1);
	}
	s.d[s.rank - 1] = k;
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

int lower_arrayfeatureextractor(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *z = lower_out(L, 0);
	struct tir *idx[MAX_RANK], *xi[MAX_RANK], *dim, *k;
	int r = x->shape.rank;

	dim = tir_dim(L->b, x->shape.d[r - 1]);
	lower_loops(L, &z->shape, idx);
	k = lower_clamp_index(L, tir_load(L->b, L->in[1], idx[z->shape.rank - 1]), dim);
	if (r == 1)
		xi[0] = k;
	else {
		memcpy(xi, idx, sizeof(idx));
		xi[r - 1] = k;
	}
	tir_store(L->b, L->out[0], lower_offset(L, &z->shape, idx),
		  tir_load(L->b, L->in[0], lower_offset(L, &x->shape, xi)));
	lower_end_loops(L, z->shape.rank);
	return 0;
}

/* ---- Binarizer ---- */

int infer_binarizer(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->dtype != DTYPE_F32 && x->dtype != DTYPE_F64 && x->dtype != DTYPE_I64 &&
	    x->dtype != DTYPE_I32) {
		diag_error(g->ctx, "%s: X must be float, double, int64 or int32, not %s",
			   node_loc(g, n), dtype_name(x->dtype));
		return -1;
	}
	infer_set(g, n, 0, x->dtype, &x->shape);
	return 0;
}

/* y = x > threshold ? 1 : 0, compared in float64 (NaN gives 0). */
int lower_binarizer(struct lower *L)
{
	const struct value *x = lower_in(L, 0);
	enum dtype t = x->dtype;
	struct tir *i = tir_loop(L->b, lower_numel(L, &x->shape)), *c;

	tir_mark_parallel(L->b);
	c = tir_bin(L->b, BIN_GT, tir_cast(L->b, DTYPE_F64, tir_load(L->b, L->in[0], i)),
		    tir_flt(L->b, DTYPE_F64, node_attr_float(L->n, "threshold", 0.0)));
	tir_store(L->b, L->out[0], i, tir_select(L->b, c, tir_const(L->b, t, 1),
						 tir_const(L->b, t, 0)));
	tir_end(L->b);
	return 0;
}

/* ---- LabelEncoder ---- */

/* The list attribute of n among names[] that is present, or NULL; diagnostic if two are. */
static const struct attr *one_of(struct graph *g, struct node *n, const char *const *names,
				 int count, const char *what, bool *bad)
{
	const struct attr *found = NULL;

	for (int i = 0; i < count; i++) {
		const struct attr *a = node_attr(n, names[i]);

		if (!a)
			continue;
		if (found) {
			diag_error(g->ctx, "%s: both '%s' and '%s' give the %s", node_loc(g, n),
				   found->name, a->name, what);
			*bad = true;
		}
		found = a;
	}
	return found;
}

/* An attribute's elements: a list (ints, floats, strings) or a tensor's constant. */
struct ml_list {
	enum dtype t;
	int64_t n;
	const void *data;
};

static struct ml_list list_of(struct graph *g, const struct attr *a, enum dtype floats_as)
{
	struct ml_list l = { DTYPE_UNDEF, 0, NULL };

	if (!a)
		return l;
	switch (a->kind) {
	case ATTR_INTS: l.t = DTYPE_I64; l.n = a->n; l.data = a->ints; break;
	case ATTR_STRINGS: l.t = DTYPE_STR; l.n = a->n; l.data = a->strs; break;
	case ATTR_FLOATS: {
		float *f = arena_alloc(g->arena, sizeof(float) * (size_t)(a->n + 1));

		/* the attribute's FLOATS were float32 in the model */
		for (int i = 0; i < a->n; i++)
			f[i] = (float)a->floats[i];
		l.t = floats_as;
		l.n = a->n;
		l.data = f;
		break;
	}
	case ATTR_TENSOR: {
		const struct value *v = &g->values.v[a->tensor];

		l.t = v->dtype;
		l.n = shape_numel_static(&v->shape);
		l.data = v->data;
		break;
	}
	default:
		break;
	}
	return l;
}

/* qsort's context for the key order of rt_ml_cmp */
static const void *sort_keys;
static int sort_code;

static int cmp_key_index(const void *a, const void *b)
{
	int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
	int c = rt_ml_cmp(sort_keys, i, sort_keys, j, sort_code);

	return c ? c : (i > j) - (i < j);	/* equal keys: in model order */
}

/*
 * LabelEncoder's tables. Opset 1: classes_strings maps a string to its
 * index, or an int64 index to its string (X's type decides), defaults
 * default_int64 (-1) and default_string ("_Unused"). Opsets 2 and 4: keys_*
 * to values_* (or keys_tensor, values_tensor), each default_* of the
 * values' type (-1, -0.0, "_Unused"; default_tensor a one-element tensor).
 * Where a key repeats, its first value counts, as in ONNX Runtime (onnx's
 * reference, a dict of the pairs, keeps the last).
 */
static int label_tables(struct graph *g, struct node *n, const struct value *x)
{
	static const char *const keyn[] = { "keys_strings", "keys_int64s", "keys_floats",
					    "keys_tensor" };
	static const char *const valn[] = { "values_strings", "values_int64s", "values_floats",
					    "values_tensor" };
	const struct attr *classes = node_attr(n, "classes_strings");
	struct ml_list keys, vals;
	bool bad = false;
	const void *dflt;
	int64_t *order, *iota, m = 0, di = -1;
	double df = -0.0;
	const char *ds = node_attr_str(n, "default_string", "_Unused");
	size_t ks, vs;
	char *kb, *vb;

	if (classes) {
		struct ml_list names = list_of(g, classes, DTYPE_F32);

		iota = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(names.n + 1));
		for (int64_t i = 0; i < names.n; i++)
			iota[i] = i;
		keys = names;
		vals = (struct ml_list){ DTYPE_I64, names.n, iota };
		if (x->dtype != DTYPE_STR)
			keys = vals, vals = names;
	} else {
		keys = list_of(g, one_of(g, n, keyn, 4, "keys", &bad), DTYPE_F32);
		vals = list_of(g, one_of(g, n, valn, 4, "values", &bad), DTYPE_F32);
		if (bad)
			return -1;
	}
	if (!keys.data || !vals.data || keys.n != vals.n) {
		diag_error(g->ctx, "%s: needs as many keys as values (%lld and %lld)",
			   node_loc(g, n), (long long)keys.n, (long long)vals.n);
		return -1;
	}
	if (keys.t != x->dtype || ml_code(keys.t) < 0 || ml_code(vals.t) < 0 ||
	    keys.t == DTYPE_F16 || vals.t == DTYPE_F16) {
		diag_error(g->ctx, "%s: the keys are %s, input X %s (string, int64, int32, int16, "
			   "float or double keys of X's type; values of those types)",
			   node_loc(g, n), dtype_name(keys.t), dtype_name(x->dtype));
		return -1;
	}
	/* the default, of the values' type */
	if (node_attr(n, "default_tensor")) {
		struct ml_list d = list_of(g, node_attr(n, "default_tensor"), DTYPE_F32);

		if (d.t != vals.t || d.n != 1) {
			diag_error(g->ctx, "%s: default_tensor must be one %s", node_loc(g, n),
				   dtype_name(vals.t));
			return -1;
		}
		dflt = d.data;
	} else if (vals.t == DTYPE_STR)
		dflt = &ds;
	else if (vals.t == DTYPE_F32) {
		float *f = arena_alloc(g->arena, sizeof(float));

		*f = (float)node_attr_float(n, "default_float", df);
		dflt = f;
	} else {
		int64_t *i = arena_alloc(g->arena, sizeof(int64_t));

		*i = node_attr_int(n, "default_int64", di);
		dflt = i;
		if (vals.t != DTYPE_I64) {
			diag_error(g->ctx, "%s: values of %s need default_tensor", node_loc(g, n),
				   dtype_name(vals.t));
			return -1;
		}
	}
	/* keys sorted, the first of equal ones kept */
	order = arena_alloc(g->arena, sizeof(int64_t) * (size_t)(keys.n + 1));
	for (int64_t i = 0; i < keys.n; i++)
		order[i] = i;
	sort_keys = keys.data;
	sort_code = ml_code(keys.t);
	qsort(order, (size_t)keys.n, sizeof(int64_t), cmp_key_index);
	ks = dtype_size(keys.t);
	vs = dtype_size(vals.t);
	kb = arena_alloc(g->arena, ks * (size_t)(keys.n + 1));
	vb = arena_alloc(g->arena, vs * (size_t)(keys.n + 1));
	for (int64_t i = 0; i < keys.n; i++) {
		if (i > 0 && !rt_ml_cmp(keys.data, order[i - 1], keys.data, order[i], sort_code))
			continue;
		memcpy(kb + ks * (size_t)m, (const char *)keys.data + ks * (size_t)order[i], ks);
		memcpy(vb + vs * (size_t)m, (const char *)vals.data + vs * (size_t)order[i], vs);
		m++;
	}
	add_table(g, n, "keys", keys.t, m, 0, kb);
	add_table(g, n, "values", vals.t, m, 0, vb);
	add_table(g, n, "default", vals.t, 1, 0, dflt);
	return 0;
}

/* Y: X's shape, of the values' type. */
int infer_labelencoder(struct graph *g, struct node *n)
{
	struct value *x;

	if (infer_arity(g, n, 1, n->n_in > 1 ? 4 : 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (n->n_in == 1 && label_tables(g, n, x) < 0)
		return -1;
	infer_set(g, n, 0, node_in(g, n, 2)->dtype, &node_in(g, n, 0)->shape);
	return 0;
}

/* One rt_ml_label call over the whole input (not parallel: it is a lookup). */
int lower_labelencoder(struct lower *L)
{
	struct tir *args[9];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, ml_code(lower_in(L, 1)->dtype));
	args[2] = lower_numel(L, &lower_in(L, 0)->shape);
	args[3] = tir_addr(L->b, L->in[1], tir_int(L->b, 0));
	args[4] = tir_int(L->b, lower_in(L, 1)->shape.d[0].c);
	args[5] = tir_addr(L->b, L->in[2], tir_int(L->b, 0));
	args[6] = tir_addr(L->b, L->in[3], tir_int(L->b, 0));
	args[7] = tir_int(L->b, ml_code(lower_in(L, 2)->dtype));
	args[8] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	tir_extern(L->b, "rt_ml_label", args, 9);
	return 0;
}

/* ---- TreeEnsemble and TreeEnsembleRegressor ---- */

/* A tree ensemble's tables as rt_ml.h lays them out, while they are built. */
struct forest {
	VEC(int64_t) nodes, leaves, targets, roots;
	VEC(double) splits, members, weights, base;
	int64_t n_targets, agg, post, features;	/* features: the largest index + 1 */
};

static void forest_free(struct forest *f)
{
	vec_free(&f->nodes);
	vec_free(&f->leaves);
	vec_free(&f->targets);
	vec_free(&f->roots);
	vec_free(&f->splits);
	vec_free(&f->members);
	vec_free(&f->weights);
	vec_free(&f->base);
}

/* An int attribute list of n, NULL and count 0 when absent. */
static const int64_t *ints_of(const struct node *n, const char *name, int64_t *count)
{
	const struct attr *a = node_attr(n, name);

	*count = a && a->kind == ATTR_INTS ? a->n : 0;
	return *count ? a->ints : NULL;
}

/* Element i of a list (or tensor) of numbers, as a double. */
static double list_get(const struct ml_list *l, int64_t i)
{
	switch (l->t) {
	case DTYPE_F32: return ((const float *)l->data)[i];
	case DTYPE_F64: return ((const double *)l->data)[i];
	case DTYPE_F16: return rt_h2f(((const uint16_t *)l->data)[i]);
	case DTYPE_I64: return (double)((const int64_t *)l->data)[i];
	case DTYPE_U8: return ((const uint8_t *)l->data)[i];
	default: return NAN;
	}
}

/*
 * Whether a walk from ref (a node index or -1 - leaf) may not end: a
 * branch reached again on its own path. state: 0 unseen, 1 on the path,
 * 2 done; depth-first with an explicit stack.
 */
static bool cycles(const struct forest *f, int64_t ref, char *state)
{
	VEC(int64_t) stack = { 0 };
	bool loop = false;

	if (ref >= 0)
		vec_push(&stack, ref);
	while (stack.n && !loop) {
		int64_t k = stack.v[stack.n - 1], next = -1;

		if (state[k] == 0)
			state[k] = 1;
		for (int side = 2; side <= 3 && next < 0; side++) {
			int64_t c = f->nodes.v[7 * k + side];

			if (c >= 0 && state[c] == 1)
				loop = true;
			else if (c >= 0 && state[c] == 0)
				next = c;
		}
		if (next >= 0)
			vec_push(&stack, next);
		else {
			state[k] = 2;
			stack.n--;
		}
	}
	vec_free(&stack);
	return loop;
}

/* Checks the built tables (refs, targets, features, cycles); -1 after a diagnostic. */
static int forest_check(struct graph *g, struct node *n, struct forest *f)
{
	int64_t nb = f->splits.n, nl = f->leaves.n / 2;
	char *state;
	bool loop = false;

	if (f->n_targets < 1 || f->n_targets > RT_ML_TARGETS_MAX) {
		diag_error(g->ctx, "%s: n_targets %lld is outside 1..%d", node_loc(g, n),
			   (long long)f->n_targets, RT_ML_TARGETS_MAX);
		return -1;
	}
	if (!f->roots.n) {
		diag_error(g->ctx, "%s: the ensemble has no tree", node_loc(g, n));
		return -1;
	}
	for (int64_t k = 0; k < nb; k++)
		for (int side = 2; side <= 3; side++) {
			int64_t c = f->nodes.v[7 * k + side];

			if (c >= nb || -1 - c >= nl) {
				diag_error(g->ctx, "%s: a branch leads to node %lld, past the "
					   "tree's nodes", node_loc(g, n), (long long)c);
				return -1;
			}
		}
	for (int64_t j = 0; j < f->targets.n; j++)
		if (f->targets.v[j] < 0 || f->targets.v[j] >= f->n_targets) {
			diag_error(g->ctx, "%s: a leaf's target %lld is outside 0..%lld",
				   node_loc(g, n), (long long)f->targets.v[j],
				   (long long)f->n_targets - 1);
			return -1;
		}
	state = xcalloc((size_t)nb + 1, 1);
	for (int64_t t = 0; t < f->roots.n && !loop; t++)
		loop = cycles(f, f->roots.v[t], state);
	free(state);
	if (loop) {
		diag_error(g->ctx, "%s: a tree's branches form a cycle", node_loc(g, n));
		return -1;
	}
	return 0;
}

/*
 * TreeEnsemble (ai.onnx.ml 5): branch k of nodes_* is table node k; leaf k
 * of leaf_* is table leaf k with one (weight, target); membership_values
 * lists each BRANCH_MEMBER node's set in node order, NaN after each.
 */
static int forest_v5(struct graph *g, struct node *n, struct forest *f)
{
	int64_t nb, c1, c2, c3, c4, nmiss, nr, nl, nlt;
	const int64_t *feat = ints_of(n, "nodes_featureids", &nb);
	const int64_t *tid = ints_of(n, "nodes_truenodeids", &c1);
	const int64_t *fid = ints_of(n, "nodes_falsenodeids", &c2);
	const int64_t *tleaf = ints_of(n, "nodes_trueleafs", &c3);
	const int64_t *fleaf = ints_of(n, "nodes_falseleafs", &c4);
	const int64_t *miss = ints_of(n, "nodes_missing_value_tracks_true", &nmiss);
	const int64_t *roots = ints_of(n, "tree_roots", &nr);
	const int64_t *ltarget = ints_of(n, "leaf_targetids", &nlt);
	struct ml_list modes = list_of(g, node_attr(n, "nodes_modes"), DTYPE_F32);
	struct ml_list splits = list_of(g, node_attr(n, "nodes_splits"), DTYPE_F32);
	struct ml_list lw = list_of(g, node_attr(n, "leaf_weights"), DTYPE_F32);
	struct ml_list mv = list_of(g, node_attr(n, "membership_values"), DTYPE_F32);
	int64_t at = 0;

	nl = lw.n;
	if (c1 != nb || c2 != nb || c3 != nb || c4 != nb || modes.n != nb || splits.n != nb ||
	    (nmiss && nmiss != nb) || nlt != nl || modes.t != DTYPE_U8) {
		diag_error(g->ctx, "%s: the nodes_* attributes must have one element per node "
			   "(%lld), nodes_modes of uint8, and leaf_targetids one per leaf weight",
			   node_loc(g, n), (long long)nb);
		return -1;
	}
	f->n_targets = node_attr_int(n, "n_targets", 0);
	f->agg = node_attr_int(n, "aggregate_function", RT_ML_SUM);
	f->post = node_attr_int(n, "post_transform", RT_ML_NONE);
	for (int64_t k = 0; k < nb; k++) {
		int64_t mode = (int64_t)list_get(&modes, k), count = 0, start = f->members.n;

		if (mode < RT_ML_LEQ || mode > RT_ML_MEMBER || feat[k] < 0 || tid[k] < 0 ||
		    fid[k] < 0) {
			diag_error(g->ctx, "%s: node %lld has mode %lld (0 to 6), feature %lld and "
				   "branches %lld and %lld (none negative)", node_loc(g, n),
				   (long long)k, (long long)mode, (long long)feat[k],
				   (long long)tid[k], (long long)fid[k]);
			return -1;
		}
		if (mode == RT_ML_MEMBER) {
			while (at < mv.n && !isnan(list_get(&mv, at))) {
				vec_push(&f->members, list_get(&mv, at++));
				count++;
			}
			if (at++ >= mv.n) {
				diag_error(g->ctx, "%s: membership_values has no NaN-ended set "
					   "for node %lld", node_loc(g, n), (long long)k);
				return -1;
			}
		}
		{
			int64_t row[7] = { feat[k], mode, tleaf[k] ? -1 - tid[k] : tid[k],
					   fleaf[k] ? -1 - fid[k] : fid[k],
					   nmiss && miss[k] ? RT_ML_NAN_TRUE : RT_ML_NAN_CMP,
					   start, count };

			for (int i = 0; i < 7; i++)
				vec_push(&f->nodes, row[i]);
		}
		vec_push(&f->splits, list_get(&splits, k));
		if (feat[k] + 1 > f->features)
			f->features = feat[k] + 1;
	}
	for (int64_t k = 0; k < nl; k++) {
		vec_push(&f->leaves, k);
		vec_push(&f->leaves, 1);
		vec_push(&f->weights, list_get(&lw, k));
		vec_push(&f->targets, ltarget[k]);
	}
	for (int64_t t = 0; t < nr; t++) {
		int64_t r = roots[t];

		if (r < 0 || r >= nb) {
			diag_error(g->ctx, "%s: tree root %lld is not a node", node_loc(g, n),
				   (long long)r);
			return -1;
		}
		/* a tree that is one leaf: both sides the same leaf */
		if (tleaf[r] && fleaf[r] && tid[r] == fid[r])
			r = -1 - tid[r];
		vec_push(&f->roots, r);
	}
	return 0;
}

/* The index of name in names[], or -1. */
static int64_t name_index(const char *name, const char *const *names, int count)
{
	for (int i = 0; i < count; i++)
		if (name && !strcmp(name, names[i]))
			return i;
	return -1;
}

/* The key of a (tree, node) pair, for sorting and search. */
struct tree_node {
	int64_t tree, node, index;
};

static int cmp_tree_node(const void *a, const void *b)
{
	const struct tree_node *p = a, *q = b;

	if (p->tree != q->tree)
		return (p->tree > q->tree) - (p->tree < q->tree);
	if (p->node != q->node)
		return (p->node > q->node) - (p->node < q->node);
	return (p->index > q->index) - (p->index < q->index);
}

/* The entry of (tree, node) in sorted keys, or NULL. */
static const struct tree_node *find_node(const struct tree_node *keys, int64_t n, int64_t tree,
					 int64_t node)
{
	struct tree_node k = { tree, node, -1 };
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		int c = cmp_tree_node(&keys[mid], &k);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && keys[lo].tree == tree && keys[lo].node == node ? &keys[lo] : NULL;
}

/*
 * TreeEnsembleRegressor (ai.onnx.ml 1 and 3): nodes named by (tree, node)
 * ids, string modes with LEAF for leaves, a leaf's (weight, target) pairs
 * in target_* order; a tree's root is its first node in the attributes,
 * the trees in order of their ids; a NaN feature goes the true side when
 * nodes_missing_value_tracks_true says so, else the false side.
 */
static int forest_v1(struct graph *g, struct node *n, struct forest *f)
{
	static const char *const modes[] = { "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
					     "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF" };
	static const char *const aggs[] = { "AVERAGE", "SUM", "MIN", "MAX" };
	static const char *const posts[] = { "NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO",
					     "PROBIT" };
	int64_t nn, c1, c2, c3, c4, nmiss, nt1, nt2, nt3;
	const int64_t *trees = ints_of(n, "nodes_treeids", &nn);
	const int64_t *ids = ints_of(n, "nodes_nodeids", &c1);
	const int64_t *feat = ints_of(n, "nodes_featureids", &c2);
	const int64_t *tid = ints_of(n, "nodes_truenodeids", &c3);
	const int64_t *fid = ints_of(n, "nodes_falsenodeids", &c4);
	const int64_t *miss = ints_of(n, "nodes_missing_value_tracks_true", &nmiss);
	const int64_t *ttree = ints_of(n, "target_treeids", &nt1);
	const int64_t *tnode = ints_of(n, "target_nodeids", &nt2);
	const int64_t *tid2 = ints_of(n, "target_ids", &nt3);
	const struct attr *ma = node_attr(n, "nodes_modes");
	struct ml_list vals = list_of(g, node_attr(n, node_attr(n, "nodes_values_as_tensor")
						      ? "nodes_values_as_tensor" : "nodes_values"),
				      DTYPE_F32);
	struct ml_list tw = list_of(g, node_attr(n, node_attr(n, "target_weights_as_tensor")
						    ? "target_weights_as_tensor" : "target_weights"),
				    DTYPE_F32);
	struct ml_list base = list_of(g, node_attr(n, node_attr(n, "base_values_as_tensor")
						      ? "base_values_as_tensor" : "base_values"),
				      DTYPE_F32);
	struct tree_node *keys, *pairs;
	int64_t *slot, nb = 0, nl = 0, last_tree;
	int rc = 0;

	if (c1 != nn || c2 != nn || c3 != nn || c4 != nn || (nmiss && nmiss != nn) || !ma ||
	    ma->kind != ATTR_STRINGS || ma->n != nn || vals.n != nn || nt2 != nt1 ||
	    nt3 != nt1 || tw.n != nt1) {
		diag_error(g->ctx, "%s: the nodes_* attributes must have one element per node "
			   "(%lld) and the target_* ones one per target weight", node_loc(g, n),
			   (long long)nn);
		return -1;
	}
	f->n_targets = node_attr_int(n, "n_targets", 0);
	f->agg = name_index(node_attr_str(n, "aggregate_function", "SUM"), aggs, 4);
	f->post = name_index(node_attr_str(n, "post_transform", "NONE"), posts, 5);
	if (f->agg < 0 || f->post < 0) {
		diag_error(g->ctx, "%s: aggregate_function '%s' or post_transform '%s' is not "
			   "one of ONNX's", node_loc(g, n),
			   node_attr_str(n, "aggregate_function", "SUM"),
			   node_attr_str(n, "post_transform", "NONE"));
		return -1;
	}
	if (base.n && base.n != f->n_targets) {
		diag_error(g->ctx, "%s: base_values has %lld values for %lld targets",
			   node_loc(g, n), (long long)base.n, (long long)f->n_targets);
		return -1;
	}
	keys = xmalloc(sizeof(*keys) * (size_t)(nn + 1));
	slot = xmalloc(sizeof(*slot) * (size_t)(nn + 1));
	for (int64_t i = 0; i < nn; i++) {
		int64_t mode = name_index(ma->strs[i], modes, 7);

		if (mode < 0 || feat[i] < 0) {
			diag_error(g->ctx, "%s: node %lld of tree %lld has mode '%s' and feature "
				   "%lld", node_loc(g, n), (long long)ids[i], (long long)trees[i],
				   ma->strs[i], (long long)feat[i]);
			rc = -1;
			goto out;
		}
		keys[i] = (struct tree_node){ trees[i], ids[i], i };
		slot[i] = mode == 6 ? -1 - nl++ : nb++;
	}
	qsort(keys, (size_t)nn, sizeof(*keys), cmp_tree_node);
	for (int64_t i = 0; i + 1 < nn; i++)
		if (keys[i].tree == keys[i + 1].tree && keys[i].node == keys[i + 1].node) {
			diag_error(g->ctx, "%s: node %lld of tree %lld is given twice",
				   node_loc(g, n), (long long)keys[i].node, (long long)keys[i].tree);
			rc = -1;
			goto out;
		}
	for (int64_t i = 0; i < nn; i++) {
		const struct tree_node *t, *e;
		int64_t mode = name_index(ma->strs[i], modes, 7);

		if (mode == 6)
			continue;
		t = find_node(keys, nn, trees[i], tid[i]);
		e = find_node(keys, nn, trees[i], fid[i]);
		if (!t || !e) {
			diag_error(g->ctx, "%s: node %lld of tree %lld leads to node %lld, which the "
				   "tree lacks", node_loc(g, n), (long long)ids[i],
				   (long long)trees[i], (long long)(t ? fid[i] : tid[i]));
			rc = -1;
			goto out;
		}
		{
			int64_t row[7] = { feat[i], mode, slot[t->index], slot[e->index],
					   nmiss && miss[i] ? RT_ML_NAN_TRUE : RT_ML_NAN_CMP, 0,
					   0 };

			for (int k = 0; k < 7; k++)
				vec_push(&f->nodes, row[k]);
		}
		vec_push(&f->splits, list_get(&vals, i));
		if (feat[i] + 1 > f->features)
			f->features = feat[i] + 1;
	}
	/* each leaf's pairs, in target_* order */
	pairs = xmalloc(sizeof(*pairs) * (size_t)(nt1 + 1));
	for (int64_t j = 0; j < nt1; j++)
		pairs[j] = (struct tree_node){ ttree[j], tnode[j], j };
	qsort(pairs, (size_t)nt1, sizeof(*pairs), cmp_tree_node);
	vec_grow(&f->leaves, 2 * nl);
	f->leaves.n = 2 * nl;
	memset(f->leaves.v, 0, sizeof(int64_t) * (size_t)(2 * nl));
	for (int64_t j = 0; j < nt1; j++) {
		const struct tree_node *leaf = find_node(keys, nn, pairs[j].tree, pairs[j].node);
		int64_t k = leaf ? -1 - slot[leaf->index] : -1;

		if (k < 0) {
			diag_error(g->ctx, "%s: target weight %lld names node %lld of tree %lld, "
				   "which is no leaf", node_loc(g, n), (long long)pairs[j].index,
				   (long long)pairs[j].node, (long long)pairs[j].tree);
			rc = -1;
			break;
		}
		if (!f->leaves.v[2 * k + 1])
			f->leaves.v[2 * k] = j;
		f->leaves.v[2 * k + 1]++;
		vec_push(&f->weights, list_get(&tw, pairs[j].index));
		vec_push(&f->targets, tid2[pairs[j].index]);
	}
	free(pairs);
	/* roots: each tree's first node in the attributes, trees by id */
	last_tree = INT64_MIN;
	for (int64_t i = 0; i < nn && !rc; i++) {
		int64_t first = nn;

		if (keys[i].tree == last_tree)
			continue;
		last_tree = keys[i].tree;
		for (int64_t j = i; j < nn && keys[j].tree == last_tree; j++)
			first = keys[j].index < first ? keys[j].index : first;
		vec_push(&f->roots, slot[first]);
	}
	for (int64_t j = 0; j < base.n; j++)
		vec_push(&f->base, list_get(&base, j));
out:
	free(keys);
	free(slot);
	return rc;
}

/*
 * Y [N, n_targets]: of X's type for TreeEnsemble (float, double, float16),
 * float for TreeEnsembleRegressor (X float, double, int64 or int32); X is
 * [N, F] with F static and above every feature index.
 */
int infer_treeensemble(struct graph *g, struct node *n)
{
	bool v5 = n->op == OP_TREEENSEMBLE;
	struct value *x;
	struct shape s;
	int64_t features = 0, nb;

	if (infer_arity(g, n, 1, n->n_in > 1 ? 9 : 1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	if (x->shape.rank != 2 || !(v5 ? x->dtype == DTYPE_F32 || x->dtype == DTYPE_F64 ||
				    x->dtype == DTYPE_F16
				  : x->dtype == DTYPE_F32 || x->dtype == DTYPE_F64 ||
				    x->dtype == DTYPE_I64 || x->dtype == DTYPE_I32)) {
		diag_error(g->ctx, "%s: X must be a matrix [N, F] of %s", node_loc(g, n),
			   v5 ? "float, double or float16" : "float, double, int64 or int32");
		return -1;
	}
	if (n->n_in == 1) {
		struct forest f = { 0 };
		int rc = v5 ? forest_v5(g, n, &f) : forest_v1(g, n, &f);

		if (rc == 0)
			rc = forest_check(g, n, &f);
		if (rc == 0) {
			add_table(g, n, "nodes", DTYPE_I64, f.splits.n, 7, f.nodes.v);
			add_table(g, n, "splits", DTYPE_F64, f.splits.n, 0, f.splits.v);
			add_table(g, n, "members", DTYPE_F64, f.members.n, 0, f.members.v);
			add_table(g, n, "leaves", DTYPE_I64, f.leaves.n / 2, 2, f.leaves.v);
			add_table(g, n, "weights", DTYPE_F64, f.weights.n, 0, f.weights.v);
			add_table(g, n, "targets", DTYPE_I64, f.targets.n, 0, f.targets.v);
			add_table(g, n, "roots", DTYPE_I64, f.roots.n, 0, f.roots.v);
			add_table(g, n, "base", DTYPE_F64, f.base.n, 0, f.base.v);
			/* the kernel's scalars, beside the tables */
			node_set_attr_int(g, n, "collagec.targets", f.n_targets);
			node_set_attr_int(g, n, "collagec.aggregate", f.agg);
			node_set_attr_int(g, n, "collagec.post", f.post);
		}
		forest_free(&f);
		if (rc < 0)
			return -1;
		x = node_in(g, n, 0);	/* the tables' constants may have moved the values */
	}
	nb = node_in(g, n, 1)->shape.d[0].c;
	for (int64_t k = 0; k < nb; k++) {
		int64_t ft = ((const int64_t *)node_in(g, n, 1)->data)[7 * k];

		features = ft + 1 > features ? ft + 1 : features;
	}
	if (features && (!dim_is_const(x->shape.d[1]) || x->shape.d[1].c < features)) {
		diag_error(g->ctx, "%s: X needs a static second dim of at least %lld (the "
			   "largest feature index + 1)", node_loc(g, n), (long long)features);
		return -1;
	}
	s = x->shape;
	s.d[1] = dim_const(node_attr_int(n, "collagec.targets", 1));
	infer_set(g, n, 0, v5 ? x->dtype : DTYPE_F32, &s);
	return 0;
}

/* One rt_ml_trees call over the rows (serial: a tree walk per row and tree). */
int lower_treeensemble(struct lower *L)
{
	const struct value *x = lower_in(L, 0), *y = lower_out(L, 0);
	struct tir *args[19];

	args[0] = tir_addr(L->b, L->in[0], tir_int(L->b, 0));
	args[1] = tir_int(L->b, ml_code(x->dtype));
	args[2] = tir_dim(L->b, x->shape.d[0]);
	args[3] = tir_dim(L->b, x->shape.d[1]);
	for (int i = 1; i <= 6; i++)
		args[3 + i] = tir_addr(L->b, L->in[i], tir_int(L->b, 0));
	args[10] = tir_addr(L->b, L->in[7], tir_int(L->b, 0));
	args[11] = tir_int(L->b, lower_in(L, 7)->shape.d[0].c);
	args[12] = tir_int(L->b, y->shape.d[1].c);
	args[13] = tir_addr(L->b, L->in[8], tir_int(L->b, 0));
	args[14] = tir_int(L->b, lower_in(L, 8)->shape.d[0].c > 0);
	args[15] = tir_int(L->b, node_attr_int(L->n, "collagec.aggregate", RT_ML_SUM));
	args[16] = tir_int(L->b, node_attr_int(L->n, "collagec.post", RT_ML_NONE));
	args[17] = tir_addr(L->b, L->out[0], tir_int(L->b, 0));
	args[18] = tir_int(L->b, ml_code(y->dtype));
	tir_extern(L->b, "rt_ml_trees", args, 19);
	return 0;
}
