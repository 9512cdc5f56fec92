/*
 * ops_linalg.c - Einsum and Det: direct loop nests, written to be
 * obviously right rather than fast.
 */
#include "ops.h"

#include <string.h>

/* ---- Einsum ---- */

/*
 * Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (numpy's order for the
 * implicit output), the broadcast dims of '...' are EIN_ELL + 0.. from the
 * left.
 */
#define EIN_ELL 52
#define EIN_LABELS (EIN_ELL + MAX_RANK)
#define EIN_MAX_IN 16

struct einsum {
	int n_in;
	int8_t lab[EIN_MAX_IN][MAX_RANK];	/* label of each input dim */
	int out_rank;
	int8_t out[MAX_RANK];			/* label of each output dim */
	bool used[EIN_LABELS];			/* appears in some input */
	struct dim size[EIN_LABELS];
};

static int ein_letter(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return 26 + c - 'a';
	return -1;
}

static char ein_char(int l)
{
	return (char)(l < 26 ? 'A' + l : 'a' + l - 26);
}

/*
 * Parses one term from *p up to ',', '-' or the end (spaces skipped): its
 * letters go to let[], the number of letters before '...' to *ell (-1 when
 * there is none). Returns the letter count, or -1 on a syntax error.
 */
static int ein_term(const char **p, int8_t *let, int *ell)
{
	const char *s = *p;
	int k = 0;

	*ell = -1;
	for (; *s && *s != ',' && *s != '-'; s++) {
		if (*s == ' ')
			continue;
		if (*s == '.') {
			if (*ell >= 0 || strncmp(s, "...", 3))
				return -1;
			*ell = k;
			s += 2;
			continue;
		}
		if (ein_letter(*s) < 0 || k >= MAX_RANK)
			return -1;
		let[k++] = (int8_t)ein_letter(*s);
	}
	*p = s;
	return k;
}

/* Merges dimension d of a use of label l; broadcast only for '...' dims. */
static int ein_size(struct graph *g, struct node *n, struct einsum *e, int l, struct dim d)
{
	bool one = dim_is_const(d) && d.c == 1;

	if (!e->used[l]) {
		e->used[l] = true;
		e->size[l] = d;
		return 0;
	}
	if (dim_eq(e->size[l], d) || (l >= EIN_ELL && one))
		return 0;
	if (l >= EIN_ELL && dim_is_const(e->size[l]) && e->size[l].c == 1) {
		e->size[l] = d;
		return 0;
	}
	if (l >= EIN_ELL)
		diag_error(g->ctx, "%s: the '...' dimensions cannot be broadcast", node_loc(g, n));
	else
		diag_error(g->ctx, "%s: subscript '%c' has different sizes", node_loc(g, n),
			   ein_char(l));
	return -1;
}

/* Parses the equation attribute against the inputs' ranks and shapes. */
static int ein_parse(struct graph *g, struct node *n, struct einsum *e)
{
	const char *eq = node_attr_str(n, "equation", NULL), *p;
	int8_t let[EIN_MAX_IN][MAX_RANK], olet[MAX_RANK];
	int nlet[EIN_MAX_IN], ell[EIN_MAX_IN], cnt[EIN_LABELS] = { 0 }, n_ell = 0, no, oell;

	memset(e, 0, sizeof(*e));
	if (!eq) {
		diag_error(g->ctx, "%s: missing the equation attribute", node_loc(g, n));
		return -1;
	}
	if (n->n_in > EIN_MAX_IN) {
		diag_error(g->ctx, "%s: more than %d operands", node_loc(g, n), EIN_MAX_IN);
		return -1;
	}
	e->n_in = n->n_in;
	p = eq;
	for (int i = 0; i < n->n_in; i++) {
		struct value *v = infer_input(g, n, i);

		if (!v)
			return -1;
		nlet[i] = ein_term(&p, let[i], &ell[i]);
		if (nlet[i] < 0 || (*p == ',') != (i + 1 < n->n_in))
			goto bad;
		if (*p == ',')
			p++;
		if (ell[i] < 0 ? v->shape.rank != nlet[i] : v->shape.rank < nlet[i]) {
			diag_error(g->ctx, "%s: term %d of equation '%s' does not match rank %d",
				   node_loc(g, n), i, eq, v->shape.rank);
			return -1;
		}
		if (ell[i] >= 0)
			n_ell = MAX(n_ell, v->shape.rank - nlet[i]);
	}
	for (int i = 0; i < n->n_in; i++) {
		const struct shape *s = &node_in(g, n, i)->shape;
		int ne = ell[i] < 0 ? 0 : s->rank - nlet[i];

		for (int j = 0, k = 0; j < s->rank; j++) {
			int l;

			if (ell[i] >= 0 && j >= ell[i] && j < ell[i] + ne)
				l = EIN_ELL + n_ell - ne + j - ell[i];
			else
				l = let[i][k++];
			e->lab[i][j] = (int8_t)l;
			cnt[l]++;
			if (ein_size(g, n, e, l, s->d[j]) < 0)
				return -1;
		}
	}
	while (*p == ' ')
		p++;
	if (!*p) {
		/* implicit output: '...' dims, then the letters used once, sorted */
		for (int l = EIN_ELL; l < EIN_ELL + n_ell; l++)
			e->out[e->out_rank++] = (int8_t)l;
		for (int l = 0; l < EIN_ELL; l++)
			if (cnt[l] == 1) {
				if (e->out_rank >= MAX_RANK)
					goto rank;
				e->out[e->out_rank++] = (int8_t)l;
			}
		return 0;
	}
	if (strncmp(p, "->", 2))
		goto bad;
	p += 2;
	no = ein_term(&p, olet, &oell);
	if (no < 0 || *p)
		goto bad;
	if (n_ell && oell < 0) {
		/* as numpy: '...' dims are never summed implicitly */
		diag_error(g->ctx, "%s: equation '%s' has '...' dims in the inputs but not in the "
			   "output", node_loc(g, n), eq);
		return -1;
	}
	if (no + (oell >= 0 ? n_ell : 0) > MAX_RANK)
		goto rank;
	for (int k = 0; k <= no; k++) {
		if (k == oell)
			for (int l = EIN_ELL; l < EIN_ELL + n_ell; l++)
				e->out[e->out_rank++] = (int8_t)l;
		if (k == no)
			break;
		if (!e->used[olet[k]]) {
			diag_error(g->ctx, "%s: output subscript '%c' is not in any input",
				   node_loc(g, n), ein_char(olet[k]));
			return -1;
		}
		for (int j = 0; j < k; j++)
			if (olet[j] == olet[k]) {
				diag_error(g->ctx, "%s: output subscript '%c' is repeated",
					   node_loc(g, n), ein_char(olet[k]));
				return -1;
			}
		e->out[e->out_rank++] = olet[k];
	}
	return 0;
bad:
	diag_error(g->ctx, "%s: cannot parse equation '%s' (expected %d comma-separated terms, "
		   "then optionally '->' and the output term)", node_loc(g, n), eq, n->n_in);
	return -1;
rank:
	diag_error(g->ctx, "%s: the output of '%s' has more than %d dimensions", node_loc(g, n),
		   eq, MAX_RANK);
	return -1;
}

/* All operands of one numeric type; the output shape from the equation. */
int infer_einsum(struct graph *g, struct node *n)
{
	struct einsum e;
	struct shape s = { 0 };
	struct value *x;

	if (infer_arity(g, n, 1, -1, 1) < 0 || !(x = infer_input(g, n, 0)))
		return -1;
	for (int i = 1; i < n->n_in; i++) {
		struct value *v = infer_input(g, n, i);

		if (!v)
			return -1;
		if (v->dtype != x->dtype) {
			diag_error(g->ctx, "%s: input %d has type %s, expected %s", node_loc(g, n),
				   i, dtype_name(v->dtype), dtype_name(x->dtype));
			return -1;
		}
	}
	if (x->dtype == DTYPE_BOOL) {
		diag_error(g->ctx, "%s: bool operands are not supported", node_loc(g, n));
		return -1;
	}
	if (ein_parse(g, n, &e) < 0)
		return -1;
	s.rank = e.out_rank;
	for (int k = 0; k < e.out_rank; k++)
		s.d[k] = e.size[e.out[k]];
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * One loop per label: the output's outside, the summed ones inside, and
 * acc += product of the operands at those indices.
 */
int lower_einsum(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *y = lower_out(L, 0);
	struct tir *var[EIN_LABELS], *oi[MAX_RANK], *acc, *prod = NULL;
	bool is_out[EIN_LABELS] = { false };
	struct einsum e;
	int ns = 0;

	if (ein_parse(L->g, (struct node *)L->n, &e) < 0)
		return -1;
	for (int k = 0; k < e.out_rank; k++) {
		oi[k] = var[e.out[k]] = tir_loop(b, tir_dim(b, e.size[e.out[k]]));
		is_out[e.out[k]] = true;
		tir_mark_parallel(b);
	}
	acc = tir_let(b, "acc", tir_const(b, y->dtype, 0));
	for (int l = 0; l < EIN_LABELS; l++)
		if (e.used[l] && !is_out[l]) {
			var[l] = tir_loop(b, tir_dim(b, e.size[l]));
			ns++;
		}
	for (int i = 0; i < e.n_in; i++) {
		const struct shape *s = &lower_in(L, i)->shape;
		struct tir *idx[MAX_RANK], *v;

		for (int j = 0; j < s->rank; j++)
			idx[j] = dim_is_const(s->d[j]) && s->d[j].c == 1 ? tir_int(b, 0)
				: var[e.lab[i][j]];
		v = tir_load(b, L->in[i], lower_offset(L, s, idx));
		prod = prod ? tir_mul(b, prod, v) : v;
	}
	tir_assign(b, acc, tir_add(b, acc, prod));
	lower_end_loops(L, ns);
	tir_store(b, L->out[0], lower_offset(L, &y->shape, oi), acc);
	lower_end_loops(L, e.out_rank);
	return 0;
}

/* ---- Det ---- */

/* Largest matrix the unrolled LU handles (M * M locals, O(M^3) statements). */
#define DET_MAX 16

/* X is [*, M, M] with a static M; Y is [*]. */
int infer_det(struct graph *g, struct node *n)
{
	struct value *x;
	struct shape s;
	struct dim m;

	if (infer_arity(g, n, 1, 1, 1) < 0 || !(x = infer_float_input(g, n, 0)))
		return -1;
	s = x->shape;
	if (s.rank < 2 || !dim_eq(s.d[s.rank - 1], s.d[s.rank - 2])) {
		diag_error(g->ctx, "%s: input must be a square matrix or a batch of them",
			   node_loc(g, n));
		return -1;
	}
	m = s.d[s.rank - 1];
	if (!dim_is_const(m) || m.c < 1 || m.c > DET_MAX) {
		diag_error(g->ctx, "%s: matrices must have a static size from 1 to %d",
			   node_loc(g, n), DET_MAX);
		return -1;
	}
	s.rank -= 2;
	infer_set(g, n, 0, x->dtype, &s);
	return 0;
}

/*
 * Per matrix: LU with partial pivoting, fully unrolled over M * M locals in
 * double precision. Bringing the largest |a[r][k]| to row k by successive
 * swaps flips the sign once per swap; det is the signed product of pivots.
 */
int lower_det(struct lower *L)
{
	struct tir_builder *b = L->b;
	const struct value *x = lower_in(L, 0);
	int r = x->shape.rank, m = (int)x->shape.d[r - 1].c;
	enum dtype ct = DTYPE_F64;
	struct tir *a[DET_MAX][DET_MAX], *nb = tir_int(b, 1), *bi, *base, *det, *tmp;

	for (int k = 0; k < r - 2; k++)
		nb = tir_mul(b, nb, tir_dim(b, x->shape.d[k]));
	bi = tir_loop(b, nb);
	tir_mark_parallel(b);
	base = tir_let(b, "base", tir_mul(b, bi, tir_int(b, (int64_t)m * m)));
	for (int i = 0; i < m; i++)
		for (int j = 0; j < m; j++)
			a[i][j] = tir_let(b, "a", tir_cast(b, ct, tir_load(b, L->in[0],
						tir_add(b, base, tir_int(b, i * m + j)))));
	det = tir_let(b, "det", tir_flt(b, ct, 1));
	tmp = tir_let(b, "tmp", tir_flt(b, ct, 0));
	for (int k = 0; k < m; k++) {
		for (int i = k + 1; i < m; i++) {
			tir_if(b, tir_bin(b, BIN_GT, tir_call1(b, INTRIN_FABS, a[i][k]),
					  tir_call1(b, INTRIN_FABS, a[k][k])));
			for (int j = k; j < m; j++) {
				tir_assign(b, tmp, a[k][j]);
				tir_assign(b, a[k][j], a[i][j]);
				tir_assign(b, a[i][j], tmp);
			}
			tir_assign(b, det, tir_un(b, UN_NEG, det));
			tir_end(b);
		}
		tir_assign(b, det, tir_mul(b, det, a[k][k]));
		if (k == m - 1)
			break;
		tir_if(b, tir_bin(b, BIN_NE, a[k][k], tir_flt(b, ct, 0)));
		for (int i = k + 1; i < m; i++) {
			tir_assign(b, tmp, tir_bin(b, BIN_DIV, a[i][k], a[k][k]));
			for (int j = k + 1; j < m; j++)
				tir_assign(b, a[i][j], tir_bin(b, BIN_SUB, a[i][j],
							       tir_mul(b, tmp, a[k][j])));
		}
		tir_end(b);
	}
	tir_store(b, L->out[0], bi, det);
	tir_end(b);
	return 0;
}
