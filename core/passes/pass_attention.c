/*
 * pass_attention.c - merges attention written out as MatMul, Softmax and
 * MatMul, the way PyTorch's exporter decomposes scaled_dot_product_attention
 * (torch.onnx.export, opsets 18 to 20), into one Attention node:
 *
 *   s  = MatMul(Mul(q, c1), Mul(kt, c2))   each Mul optional, c1 c2 scalars;
 *                                          or Mul/Div(MatMul(q, kt), c) after
 *   s  = Add(s, mask)                      optional, a float32 mask
 *   p  = Softmax(s, axis=-1)
 *   p  = Where(IsNaN(p), 0, p)             optional: the exporter's guard
 *   y  = MatMul(p, v)
 *
 * into y = Attention(q, k, v, mask, scale = c1 * c2), q [B, H, S, D], k and
 * v [B, Hkv, T, D], where kt is k's last two axes swapped: Transpose(k,
 * [0, 1, 3, 2]), or the exporter's Reshape(k, [B * H, T, D]), Transpose
 * [0, 2, 1], Reshape to [B, H, D, T]. A k or v that repeats each head
 * (repeat_interleave: Reshape(Expand(Unsqueeze(x, 2), [B, Hkv, n, T, D]))
 * is read as x, Hkv heads, which the Attention groups natively. The guard
 * stays, on y (a fully masked row: 0 either way). The c target then runs
 * the whole block as attention.rows: each score once, no transposed or
 * repeated copy of the cache, no scores in memory.
 *
 * The results differ from the written-out form by rounding (the scale
 * applied once, another summation order). Every intermediate must have no
 * other reader and not be a graph output; the merged node stands where the
 * last MatMul stood, with its output and the spans of the nodes it takes
 * in. The layernorm pass runs this after its own merge (one pass, so that
 * the pass numbers of --dump-ir stay).
 *
 * A merged Attention whose k and v are Concat(past, new) along the
 * sequence (the exporter's KV cache) then takes past as its past_key and
 * past_value and makes the Concats' outputs as present (take_cache).
 */
#include "passes.h"
#include "../ops/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How many live nodes read each value (+1 for a graph output). */
static int *reader_counts(struct graph *g)
{
	int *count = xcalloc((size_t)g->values.n + 1, sizeof(int));

	for (int v = 0; v < g->values.n; v++)
		count[v] = (g->values.v[v].flags & VALUE_OUTPUT) ? 1 : 0;
	for (int i = 0; i < g->nodes.n; i++)
		for (int j = 0; j < g->nodes.v[i].n_in && !g->nodes.v[i].dead; j++)
			if (g->nodes.v[i].in[j] >= 0)
				count[g->nodes.v[i].in[j]]++;
	return count;
}

/* The live node that makes v with op op and one output, or NULL. */
static struct node *made_by(struct graph *g, int v, enum op op)
{
	struct node *n;

	if (v < 0 || g->values.v[v].producer < 0)
		return NULL;
	n = &g->nodes.v[g->values.v[v].producer];
	return !n->dead && n->op == op && n->n_out == 1 ? n : NULL;
}

/* The match: the nodes taken in, and what the Attention reads. */
struct sdpa {
	struct node *nodes[16];
	int n;
	int q, k, v, mask;
	double scale;
};

/* Takes node n into the match when its output has no other reader. */
static bool take(struct sdpa *m, const int *count, struct node *n)
{
	if (!n || count[n->out[0]] != 1 || m->n == (int)ARRAY_SIZE(m->nodes))
		return false;
	m->nodes[m->n++] = n;
	return true;
}

/* v = Mul(x, c) or Mul(c, x) with c a scalar constant: x, and c in *c; else v, *c = 1. */
static int unscaled(struct graph *g, struct sdpa *m, const int *count, int v, double *c)
{
	struct node *n = made_by(g, v, OP_MUL);

	*c = 1.0;
	for (int side = 0; n && side < 2; side++)
		if (value_const_scalar(g, node_in(g, n, side), c) && take(m, count, n))
			return n->in[!side];
	*c = 1.0;
	return v;
}

/* Whether value id v is 4-D float32 of known shape. */
static bool four_d(struct graph *g, int v)
{
	return v >= 0 && g->values.v[v].has_shape && g->values.v[v].dtype == DTYPE_F32 &&
	       g->values.v[v].shape.rank == 4;
}

/*
 * k when kt is k with its last two axes swapped (a Transpose, or the
 * exporter's Reshape/Transpose/Reshape through [B * H, T, D]); -1 when not.
 */
static int untransposed(struct graph *g, struct sdpa *m, const int *count, int kt)
{
	struct node *t = made_by(g, kt, OP_TRANSPOSE), *r2, *r1;
	const int64_t *perm;
	const struct shape *ks, *s1;
	struct dim bh;

	if (t && node_attr_ints(t, "perm", &perm) == 4 && perm[0] == 0 && perm[1] == 1 &&
	    perm[2] == 3 && perm[3] == 2 && four_d(g, t->in[0]) && take(m, count, t))
		return t->in[0];
	if (!(r2 = made_by(g, kt, OP_RESHAPE)) || !(t = made_by(g, r2->in[0], OP_TRANSPOSE)) ||
	    !(r1 = made_by(g, t->in[0], OP_RESHAPE)) || !four_d(g, r1->in[0]) ||
	    node_attr_ints(t, "perm", &perm) != 3 || perm[0] != 0 || perm[1] != 2 || perm[2] != 1)
		return -1;
	ks = &g->values.v[r1->in[0]].shape;
	s1 = &node_out(g, r1, 0)->shape;
	if (s1->rank != 3 || !dim_mul(ks->d[0], ks->d[1], &bh) || !dim_eq(s1->d[0], bh) ||
	    !dim_eq(s1->d[1], ks->d[2]) || !dim_eq(s1->d[2], ks->d[3]))
		return -1;
	if (!take(m, count, r2) || !take(m, count, t) || !take(m, count, r1))
		return -1;
	return r1->in[0];
}

/*
 * x when v repeats each of x's heads n times (Reshape of Expand of
 * Unsqueeze(x, 2)), so that the Attention reads x and groups its query
 * heads; v itself otherwise. The repeat stays: the exporter's Shape of it
 * reads it too, and the dce pass drops what nothing reads any more.
 */
static int unrepeated(struct graph *g, int v)
{
	struct node *r = made_by(g, v, OP_RESHAPE), *e, *u;
	const struct shape *xs, *es, *vs = &g->values.v[v].shape;
	int64_t *axes, na;
	int x;

	if (!r || !(e = made_by(g, r->in[0], OP_EXPAND)) || !(u = made_by(g, e->in[0], OP_UNSQUEEZE)))
		return v;
	x = u->in[0];
	if (!four_d(g, x) || u->n_in < 2 || value_const_ints(g, node_in(g, u, 1), &axes, &na) < 0 ||
	    na != 1 || axes[0] != 2)
		return v;
	xs = &g->values.v[x].shape;
	es = &node_out(g, e, 0)->shape;
	if (es->rank != 5 || !dim_eq(es->d[0], xs->d[0]) || !dim_eq(es->d[1], xs->d[1]) ||
	    !dim_is_const(es->d[2]) || !dim_eq(es->d[3], xs->d[2]) || !dim_eq(es->d[4], xs->d[3]) ||
	    !dim_is_const(xs->d[1]) || !dim_is_const(vs->d[1]) ||
	    vs->d[1].c != xs->d[1].c * es->d[2].c || !dim_eq(vs->d[0], xs->d[0]) ||
	    !dim_eq(vs->d[2], xs->d[2]) || !dim_eq(vs->d[3], xs->d[3]))
		return v;
	return x;
}

/* Whether mask (float32) broadcasts to [B, H, S, T] and no further. */
static bool fits_mask(const struct value *mask, const struct shape *scores)
{
	struct shape r;

	return mask->has_shape && mask->dtype == DTYPE_F32 && mask->shape.rank >= 1 &&
	       mask->shape.rank <= 4 && shape_broadcast(&mask->shape, scores, &r) &&
	       shape_eq(&r, scores);
}

/* The match ending at MatMul y, the guard's nodes in *guard (NULL without one). */
static bool match(struct graph *g, const int *count, struct node *y, struct sdpa *m,
		  struct node **isnan, struct node **where)
{
	struct node *sm, *add, *mm, *sc;
	int p = y->in[0], s, qt, kt;
	double c1, c2, c = 1.0, zero;
	const struct shape *ss;

	m->n = 0;
	m->mask = -1;
	*isnan = *where = NULL;
	if (y->n_in != 2 || !four_d(g, y->in[1]) || !four_d(g, y->out[0]))
		return false;
	/* the guard: Where(IsNaN(p), 0, p) */
	if ((*where = made_by(g, p, OP_WHERE)) && count[p] == 1 &&
	    (*isnan = made_by(g, (*where)->in[0], OP_ISNAN)) && (*where)->in[2] == (*isnan)->in[0] &&
	    count[(*isnan)->out[0]] == 1 && value_const_scalar(g, node_in(g, *where, 1), &zero) &&
	    zero == 0.0)
		p = (*isnan)->in[0];
	else
		*isnan = *where = NULL;
	sm = made_by(g, p, OP_SOFTMAX);
	if (!sm || count[p] != (*isnan ? 2 : 1) || !four_d(g, sm->in[0]) ||
	    (node_attr_int(sm, "axis", -1) != -1 && node_attr_int(sm, "axis", -1) != 3))
		return false;
	m->nodes[m->n++] = sm;
	s = sm->in[0];
	ss = &g->values.v[s].shape;
	if ((add = made_by(g, s, OP_ADD)) && count[s] == 1) {
		for (int side = 0; side < 2 && m->mask < 0; side++)
			if (made_by(g, add->in[side], OP_MATMUL) ||
			    made_by(g, add->in[side], OP_MUL) || made_by(g, add->in[side], OP_DIV))
				if (fits_mask(&g->values.v[add->in[!side]], ss)) {
					m->mask = add->in[!side];
					s = add->in[side];
				}
		if (m->mask < 0)
			return false;
		m->nodes[m->n++] = add;
	}
	/* a scale after the MatMul */
	if ((sc = made_by(g, s, OP_MUL)) || (sc = made_by(g, s, OP_DIV))) {
		int side = sc->op == OP_DIV ? 1 : value_const_scalar(g, node_in(g, sc, 0), &c) ? 0 : 1;

		if (!value_const_scalar(g, node_in(g, sc, side), &c) || c == 0.0 || !take(m, count, sc))
			return false;
		if (sc->op == OP_DIV)
			c = 1.0 / c;
		s = sc->in[!side];
	}
	if (!(mm = made_by(g, s, OP_MATMUL)) || !take(m, count, mm))
		return false;
	qt = unscaled(g, m, count, mm->in[0], &c1);
	kt = unscaled(g, m, count, mm->in[1], &c2);
	m->q = qt;
	if (!four_d(g, qt) || !four_d(g, kt) || (m->k = untransposed(g, m, count, kt)) < 0)
		return false;
	m->k = unrepeated(g, m->k);
	m->v = unrepeated(g, y->in[1]);
	m->scale = c * c1 * c2;
	{
		const struct shape *q = &g->values.v[m->q].shape, *k = &g->values.v[m->k].shape;
		const struct shape *v = &g->values.v[m->v].shape;

		/* Attention-23's 4-D form: [B, H, S, D] and [B, Hkv, T, D], heads static */
		return isfinite(m->scale) && m->scale > 0 && dim_is_const(q->d[1]) &&
		       dim_is_const(k->d[1]) && k->d[1].c > 0 && q->d[1].c % k->d[1].c == 0 &&
		       dim_eq(k->d[1], v->d[1]) && dim_eq(q->d[0], k->d[0]) &&
		       dim_eq(q->d[0], v->d[0]) && dim_eq(q->d[3], k->d[3]) &&
		       dim_eq(k->d[2], v->d[2]) && dim_is_const(q->d[3]) && dim_is_const(v->d[3]);
	}
}

/* y becomes the Attention; the nodes taken in die; the guard moves after it. */
static void merge(struct graph *g, struct node *y, struct sdpa *m, struct node *isnan,
		  struct node *where)
{
	int *in = arena_alloc(g->arena, sizeof(int) * 4), out = y->out[0], mid;
	struct span sp = { 0 };

	in[0] = m->q;
	in[1] = m->k;
	in[2] = m->v;
	in[3] = m->mask;
	for (int i = m->n - 1; i >= 0; i--) {
		span_add(g, &sp, &m->nodes[i]->span);
		m->nodes[i]->dead = true;
	}
	span_add(g, &sp, &y->span);
	y->op = OP_ATTENTION;
	y->op_type = "Attention";
	y->in = in;
	y->n_in = m->mask >= 0 ? 4 : 3;
	y->n_attrs = 0;
	y->attrs = NULL;
	node_set_attr_float(g, y, "scale", m->scale);
	y->span = sp;
	if (op_info(OP_ATTENTION)->infer(g, y) < 0)
		BUG("%s: the merged Attention does not infer", y->name);
	if (!isnan)
		return;
	/*
	 * the guard after it: y's Attention writes a new value, IsNaN and
	 * Where read it and the Where writes y's old output; they move to
	 * after y, whose value the Where now makes
	 */
	mid = graph_add_value(g, arena_printf(g->arena, "%s.attention", y->name));
	g->values.v[mid].dtype = g->values.v[out].dtype;
	g->values.v[mid].shape = g->values.v[out].shape;
	g->values.v[mid].has_shape = true;
	y->out[0] = mid;
	g->values.v[mid].producer = (int)(y - g->nodes.v);
	isnan->in[0] = mid;
	where->in[2] = mid;
	g->values.v[where->out[0]].producer = -1;	/* read by nothing now */
	where->out[0] = out;
	g->values.v[out].producer = (int)(where - g->nodes.v);
	if (op_info(OP_ISNAN)->infer(g, isnan) < 0 || op_info(OP_WHERE)->infer(g, where) < 0)
		BUG("%s: the guard after the merged Attention does not infer", y->name);
}

/*
 * How many nodes that something needs read each value (+1 for a graph
 * output): a node is needed when a graph output or a needed node reads
 * what it makes. The repeat of k that a merged Attention no longer reads
 * (unrepeated) counts no more, before the dce pass drops it. Nodes are in
 * topological order, so one sweep from the end finds them.
 */
static int *needed_reader_counts(struct graph *g)
{
	int *count = xcalloc((size_t)g->values.n + 1, sizeof(int));
	bool *needed = xcalloc((size_t)g->values.n + 1, sizeof(bool));

	for (int v = 0; v < g->values.n; v++)
		if (g->values.v[v].flags & VALUE_OUTPUT) {
			count[v] = 1;
			needed[v] = true;
		}
	for (int i = g->nodes.n - 1; i >= 0; i--) {
		const struct node *n = &g->nodes.v[i];
		bool need = false;

		for (int o = 0; o < n->n_out && !n->dead; o++)
			need |= n->out[o] >= 0 && needed[n->out[o]];
		for (int j = 0; j < n->n_in && need; j++)
			if (n->in[j] >= 0) {
				count[n->in[j]]++;
				needed[n->in[j]] = true;
			}
	}
	free(needed);
	return count;
}

/* The Concat of two 4-D values along axis 2 that makes v, read by one needed node; or NULL. */
static struct node *cache_concat(struct graph *g, const int *count, int v)
{
	struct node *c = made_by(g, v, OP_CONCAT);
	int64_t axis;

	if (!c || c->n_in != 2 || !four_d(g, c->in[0]) || !four_d(g, c->in[1]) || !four_d(g, v))
		return NULL;
	axis = node_attr_int(c, "axis", 0);
	if (axis != 2 && axis != -2)
		return NULL;
	return count[v] == ((g->values.v[v].flags & VALUE_OUTPUT) ? 2 : 1) ? c : NULL;
}

/*
 * A merged Attention whose k and v are Concat(past, new) along the
 * sequence, as PyTorch's exporter writes a KV cache (torch.cat of
 * past_key_values and the step's keys, the result a present output):
 * the Attention takes past as past_key/past_value and new as K/V, and
 * makes the Concats' outputs as present_key/present_value. The scores
 * are the same (the keys past then new, the mask over both); the cache
 * is then read in place, and a program may keep it in place
 * (collagec_bind_cache). Both or neither.
 */
static bool take_cache(struct graph *g, const int *count, struct node *y)
{
	struct node *kc = cache_concat(g, count, y->in[1]), *vc = cache_concat(g, count, y->in[2]);
	int *in, *out;

	if (!kc || !vc || kc == vc || y->n_out != 1)
		return false;
	in = arena_alloc(g->arena, sizeof(int) * 6);
	out = arena_alloc(g->arena, sizeof(int) * 3);
	in[0] = y->in[0];
	in[1] = kc->in[1];
	in[2] = vc->in[1];
	in[3] = y->n_in > 3 ? y->in[3] : -1;
	in[4] = kc->in[0];
	in[5] = vc->in[0];
	out[0] = y->out[0];
	out[1] = kc->out[0];
	out[2] = vc->out[0];
	y->in = in;
	y->n_in = 6;
	y->out = out;
	y->n_out = 3;
	for (int c = 0; c < 2; c++) {
		struct node *cat = c ? vc : kc;

		span_add(g, &y->span, &cat->span);
		cat->dead = true;
		g->values.v[out[1 + c]].producer = (int)(y - g->nodes.v);
	}
	if (op_info(OP_ATTENTION)->infer(g, y) < 0)
		BUG("%s: the Attention with its cache taken in does not infer", y->name);
	return true;
}

int merge_attention(struct graph *g)
{
	int *count = reader_counts(g);
	VEC(int) merged = { 0 };

	for (int i = 0; i < g->nodes.n; i++) {
		struct node *y = &g->nodes.v[i], *isnan, *where;
		struct sdpa m;

		if (y->dead || y->op != OP_MATMUL || !match(g, count, y, &m, &isnan, &where))
			continue;
		merge(g, y, &m, isnan, where);
		vec_push(&merged, i);
	}
	free(count);
	if (merged.n && graph_toposort(g) < 0)
		BUG("merging attention made a cycle");
	if (merged.n) {
		bool took = false;

		count = needed_reader_counts(g);
		for (int i = 0; i < g->nodes.n; i++) {
			struct node *y = &g->nodes.v[i];

			/* the merged ones: y's scale alone, no is_causal */
			if (!y->dead && y->op == OP_ATTENTION && y->n_attrs == 1 &&
			    node_attr_int(y, "is_causal", 0) == 0)
				took |= take_cache(g, count, y);
		}
		free(count);
		if (took && graph_toposort(g) < 0)
			BUG("taking caches into attention made a cycle");
	}
	vec_free(&merged);
	return 0;
}
